//! cl_khr_command_buffer entry points, reached through
//! clGetExtensionFunctionAddressForPlatform. Each clCommand* function runs
//! the checks of the matching enqueue on the command buffer's queue and
//! records the plan they give (see `core::command_buffer`).

#![allow(non_snake_case, clippy::too_many_arguments)]

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::memory::Plan;
use crate::api::util::*;
use crate::core::command_buffer::{self, CommandBuffer};
use crate::core::error::{ClResult, err};
use crate::core::object::Handle;
use crate::core::queue::Queue;

pub(crate) unsafe extern "C" fn clCreateCommandBufferKHR(
    num_queues: cl_uint,
    queues: *const cl_command_queue,
    properties: *const cl_command_buffer_properties_khr,
    errcode_ret: *mut cl_int,
) -> cl_command_buffer_khr {
    let create = || {
        if num_queues != 1 || queues.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: one queue handle, checked above.
        let q = Handle::<Queue>::from_raw(unsafe { *queues })?;
        // SAFETY: null or a zero-terminated list, per the extension.
        let properties = unsafe { command_buffer::read_properties(properties)? };
        let b = CommandBuffer::new(q, properties);
        Ok(Handle::into_api(b))
    };
    // SAFETY: errcode_ret is null or writable, per the extension.
    unsafe { api_create("clCreateCommandBufferKHR", errcode_ret, create) }
}

pub(crate) unsafe extern "C" fn clFinalizeCommandBufferKHR(
    command_buffer: cl_command_buffer_khr,
) -> cl_int {
    api_call("clFinalizeCommandBufferKHR", || {
        Handle::<CommandBuffer>::from_raw(command_buffer)?.finalize()
    })
}

pub(crate) unsafe extern "C" fn clRetainCommandBufferKHR(
    command_buffer: cl_command_buffer_khr,
) -> cl_int {
    api_call("clRetainCommandBufferKHR", || {
        Handle::<CommandBuffer>::from_raw(command_buffer)?.retain()
    })
}

pub(crate) unsafe extern "C" fn clReleaseCommandBufferKHR(
    command_buffer: cl_command_buffer_khr,
) -> cl_int {
    api_call("clReleaseCommandBufferKHR", || {
        Handle::release(Handle::<CommandBuffer>::from_raw(command_buffer)?)
    })
}

pub(crate) unsafe extern "C" fn clEnqueueCommandBufferKHR(
    num_queues: cl_uint,
    queues: *mut cl_command_queue,
    command_buffer: cl_command_buffer_khr,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueCommandBufferKHR", || {
        let b = Handle::<CommandBuffer>::from_raw(command_buffer)?;
        if (num_queues == 0) != queues.is_null() || num_queues > 1 {
            return err(CL_INVALID_VALUE);
        }
        // Another queue of the same device may stand in for the buffer's
        // own, whatever its properties (every one is supported); the
        // commands keep the order they were recorded with.
        let q = if num_queues == 1 {
            // SAFETY: one handle, checked above.
            let q = Handle::<Queue>::from_raw(unsafe { *queues })?;
            if !Arc::ptr_eq(&q.context, &b.context) {
                return err(CL_INVALID_CONTEXT);
            }
            if !Arc::ptr_eq(&q.device, &b.queue.device) {
                return err(CL_INCOMPATIBLE_COMMAND_QUEUE_KHR);
            }
            q
        } else {
            b.queue.clone()
        };
        // SAFETY: the application passes `num_events_in_wait_list` handles.
        let waits = unsafe { wait_list(&b.context, num_events_in_wait_list, event_wait_list)? };
        if !b.is_finalized() {
            return err(CL_INVALID_OPERATION);
        }
        let ev = b.enqueue(&q, waits)?;
        // SAFETY: null or writable, per the extension.
        unsafe { out_event(event, ev) };
        Ok(())
    })
}

/// The checks every clCommand* function shares: a command buffer still
/// recording, no queue (the buffer's own is used), no command properties
/// and no mutable handle (vkcl offers neither extension that defines
/// them), and a well-formed sync-point list. Gives the buffer, the raw
/// handle of its queue (for the enqueue checks) and the sync points.
///
/// # Safety
/// The list pointers are null or valid for the counts given.
unsafe fn recording(
    command_buffer: cl_command_buffer_khr,
    command_queue: cl_command_queue,
    properties: *const cl_command_properties_khr,
    num_sync_points: cl_uint,
    sync_point_wait_list: *const cl_sync_point_khr,
    mutable_handle: *mut cl_mutable_command_khr,
) -> ClResult<(
    Arc<Handle<CommandBuffer>>,
    cl_command_queue,
    Vec<cl_sync_point_khr>,
)> {
    let b = Handle::<CommandBuffer>::from_raw(command_buffer)?;
    if !command_queue.is_null() {
        return err(CL_INVALID_COMMAND_QUEUE);
    }
    // SAFETY: a non-null list has at least its terminator.
    if !mutable_handle.is_null() || (!properties.is_null() && unsafe { *properties } != 0) {
        return err(CL_INVALID_VALUE);
    }
    if b.is_finalized() {
        return err(CL_INVALID_OPERATION);
    }
    if (num_sync_points == 0) != sync_point_wait_list.is_null() {
        return err(CL_INVALID_SYNC_POINT_WAIT_LIST_KHR);
    }
    // SAFETY: `num_sync_points` entries, per the extension.
    let syncs = unsafe { slice_in(sync_point_wait_list, num_sync_points as usize)? }.to_vec();
    let raw = Handle::as_raw::<c_void>(&b.queue) as cl_command_queue;
    Ok((b, raw, syncs))
}

/// Records `plan` (a barrier when `None`) and hands out its sync point.
///
/// # Safety
/// `sync_point` is null or writable.
unsafe fn record(
    b: &CommandBuffer,
    command_type: cl_command_type,
    syncs: &[cl_sync_point_khr],
    plan: Option<Plan>,
    sync_point: *mut cl_sync_point_khr,
) -> ClResult<()> {
    let point = b.record(command_type, syncs, plan)?;
    if !sync_point.is_null() {
        // SAFETY: non-null and writable, per the extension.
        unsafe { sync_point.write(point) };
    }
    Ok(())
}

pub(crate) unsafe extern "C" fn clCommandBarrierWithWaitListKHR(
    command_buffer: cl_command_buffer_khr,
    command_queue: cl_command_queue,
    properties: *const cl_command_properties_khr,
    num_sync_points_in_wait_list: cl_uint,
    sync_point_wait_list: *const cl_sync_point_khr,
    sync_point: *mut cl_sync_point_khr,
    mutable_handle: *mut cl_mutable_command_khr,
) -> cl_int {
    api_call("clCommandBarrierWithWaitListKHR", || {
        // SAFETY: the application passes lists of the sizes it states.
        unsafe {
            let (b, _, syncs) = recording(
                command_buffer,
                command_queue,
                properties,
                num_sync_points_in_wait_list,
                sync_point_wait_list,
                mutable_handle,
            )?;
            record(&b, CL_COMMAND_BARRIER, &syncs, None, sync_point)
        }
    })
}

/// Defines a clCommand* entry point: `$check` makes the plan from the
/// buffer's raw queue with the enqueue's checks; the rest is shared.
macro_rules! command {
    ($name:ident, $ty:expr, ($($arg:ident: $t:ty),*), |$q:ident| $check:expr) => {
        pub(crate) unsafe extern "C" fn $name(
            command_buffer: cl_command_buffer_khr,
            command_queue: cl_command_queue,
            properties: *const cl_command_properties_khr,
            $($arg: $t,)*
            num_sync_points_in_wait_list: cl_uint,
            sync_point_wait_list: *const cl_sync_point_khr,
            sync_point: *mut cl_sync_point_khr,
            mutable_handle: *mut cl_mutable_command_khr,
        ) -> cl_int {
            api_call(stringify!($name), || {
                // SAFETY: the application passes lists and arrays of the
                // sizes the extension gives them.
                unsafe {
                    let (b, $q, syncs) = recording(
                        command_buffer,
                        command_queue,
                        properties,
                        num_sync_points_in_wait_list,
                        sync_point_wait_list,
                        mutable_handle,
                    )?;
                    let plan: Plan = $check;
                    record(&b, $ty, &syncs, Some(plan), sync_point)
                }
            })
        }
    };
}

command!(
    clCommandCopyBufferKHR,
    CL_COMMAND_COPY_BUFFER,
    (src_buffer: cl_mem, dst_buffer: cl_mem, src_offset: usize, dst_offset: usize, size: usize),
    |q| crate::api::memory::copy_buffer_plan(
        q, src_buffer, dst_buffer, src_offset, dst_offset, size, 0, std::ptr::null()
    )?
    .1
);

command!(
    clCommandCopyBufferRectKHR,
    CL_COMMAND_COPY_BUFFER_RECT,
    (
        src_buffer: cl_mem,
        dst_buffer: cl_mem,
        src_origin: *const usize,
        dst_origin: *const usize,
        region: *const usize,
        src_row_pitch: usize,
        src_slice_pitch: usize,
        dst_row_pitch: usize,
        dst_slice_pitch: usize
    ),
    |q| crate::api::memory::copy_buffer_rect_plan(
        q,
        src_buffer,
        dst_buffer,
        src_origin,
        dst_origin,
        region,
        [src_row_pitch, src_slice_pitch, dst_row_pitch, dst_slice_pitch],
        0,
        std::ptr::null()
    )?
    .1
);

command!(
    clCommandFillBufferKHR,
    CL_COMMAND_FILL_BUFFER,
    (buffer: cl_mem, pattern: *const c_void, pattern_size: usize, offset: usize, size: usize),
    |q| crate::api::memory::fill_buffer_plan(
        q, buffer, pattern, pattern_size, offset, size, 0, std::ptr::null()
    )?
    .1
);

command!(
    clCommandCopyImageKHR,
    CL_COMMAND_COPY_IMAGE,
    (
        src_image: cl_mem,
        dst_image: cl_mem,
        src_origin: *const usize,
        dst_origin: *const usize,
        region: *const usize
    ),
    |q| crate::api::image::copy_image_plan(
        q, src_image, dst_image, src_origin, dst_origin, region, 0, std::ptr::null()
    )?
    .1
);

command!(
    clCommandCopyImageToBufferKHR,
    CL_COMMAND_COPY_IMAGE_TO_BUFFER,
    (
        src_image: cl_mem,
        dst_buffer: cl_mem,
        src_origin: *const usize,
        region: *const usize,
        dst_offset: usize
    ),
    |q| crate::api::image::copy_image_to_buffer_plan(
        q, src_image, dst_buffer, src_origin, region, dst_offset, 0, std::ptr::null()
    )?
    .1
);

command!(
    clCommandCopyBufferToImageKHR,
    CL_COMMAND_COPY_BUFFER_TO_IMAGE,
    (
        src_buffer: cl_mem,
        dst_image: cl_mem,
        src_offset: usize,
        dst_origin: *const usize,
        region: *const usize
    ),
    |q| crate::api::image::copy_buffer_to_image_plan(
        q, src_buffer, dst_image, src_offset, dst_origin, region, 0, std::ptr::null()
    )?
    .1
);

command!(
    clCommandFillImageKHR,
    CL_COMMAND_FILL_IMAGE,
    (image: cl_mem, fill_color: *const c_void, origin: *const usize, region: *const usize),
    |q| crate::api::image::fill_image_plan(
        q, image, fill_color, origin, region, 0, std::ptr::null()
    )?
    .1
);

command!(
    clCommandSVMMemcpyKHR,
    CL_COMMAND_SVM_MEMCPY,
    (dst_ptr: *mut c_void, src_ptr: *const c_void, size: usize),
    |q| crate::api::svm::svm_memcpy_plan(q, dst_ptr, src_ptr, size, 0, std::ptr::null())?.1
);

command!(
    clCommandSVMMemFillKHR,
    CL_COMMAND_SVM_MEMFILL,
    (svm_ptr: *mut c_void, pattern: *const c_void, pattern_size: usize, size: usize),
    |q| crate::api::svm::svm_mem_fill_plan(
        q, svm_ptr, pattern, pattern_size, size, 0, std::ptr::null()
    )?
    .1
);

command!(
    clCommandNDRangeKernelKHR,
    CL_COMMAND_NDRANGE_KERNEL,
    (
        kernel: cl_kernel,
        work_dim: cl_uint,
        global_work_offset: *const usize,
        global_work_size: *const usize,
        local_work_size: *const usize
    ),
    |q| {
        let (_, launch) = crate::api::kernel::ndrange_launch(
            q,
            kernel,
            work_dim,
            global_work_offset,
            global_work_size,
            local_work_size,
            0,
            std::ptr::null(),
        )?;
        let launch = Arc::new(launch);
        Arc::new(move |_| Ok(launch.work()))
    }
);

fn command_buffer_info(b: &Arc<Handle<CommandBuffer>>, param: cl_command_buffer_info_khr) -> Info {
    match param {
        CL_COMMAND_BUFFER_QUEUES_KHR => info(vec![Handle::as_raw::<c_void>(&b.queue)]),
        CL_COMMAND_BUFFER_NUM_QUEUES_KHR => info(1 as cl_uint),
        CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR => info(b.api_ref_count()),
        CL_COMMAND_BUFFER_STATE_KHR => info(if b.is_finalized() {
            CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR
        } else {
            CL_COMMAND_BUFFER_STATE_RECORDING_KHR
        }),
        CL_COMMAND_BUFFER_PROPERTIES_ARRAY_KHR => info(b.properties.clone()),
        CL_COMMAND_BUFFER_CONTEXT_KHR => info(Handle::as_raw::<c_void>(&b.context)),
        _ => invalid_param(param),
    }
}

pub(crate) unsafe extern "C" fn clGetCommandBufferInfoKHR(
    command_buffer: cl_command_buffer_khr,
    param_name: cl_command_buffer_info_khr,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetCommandBufferInfoKHR", || {
        let b = Handle::<CommandBuffer>::from_raw(command_buffer)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                command_buffer_info(&b, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}
