//! cl_khr_command_buffer entry points, reached through
//! clGetExtensionFunctionAddressForPlatform. Each clCommand* function runs
//! the checks of the matching enqueue on the command buffer's queue and
//! records the plan they give (see `core::command_buffer`). Kernel
//! commands may also be recorded as mutable dispatches and updated
//! between enqueues (cl_khr_command_buffer_mutable_dispatch).

#![allow(non_snake_case, clippy::too_many_arguments)]

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::memory::Plan;
use crate::api::util::*;
use crate::api::{kernel, svm};
use crate::core::command_buffer::{
    self, BufferState, CommandBuffer, DispatchState, MutableDispatch, Sizes,
};
use crate::core::error::{ClResult, err};
use crate::core::launch::{Launch, NdRange};
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
/// and no mutable handle (only kernel commands have them; their function
/// passes none here), and a well-formed sync-point list. Gives the buffer, the raw
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
    // SAFETY: passed on from the caller.
    unsafe { hand_out(point, sync_point) };
    Ok(())
}

/// Writes a recorded command's sync point where the application asked.
///
/// # Safety
/// `sync_point` is null or writable.
unsafe fn hand_out(point: cl_sync_point_khr, sync_point: *mut cl_sync_point_khr) {
    if !sync_point.is_null() {
        // SAFETY: non-null and writable, per the extension.
        unsafe { sync_point.write(point) };
    }
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

/// The properties of a kernel command
/// (`cl_khr_command_buffer_mutable_dispatch`).
struct DispatchProperties {
    /// As the application passed them, terminator included (empty for
    /// none).
    list: Vec<cl_command_properties_khr>,
    /// `CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR`, where given.
    fields: Option<cl_mutable_dispatch_fields_khr>,
    /// `CL_MUTABLE_DISPATCH_ASSERT_NO_ADDITIONAL_WORK_GROUPS_KHR`.
    no_additional_groups: bool,
}

/// Reads a kernel command's property list (null: none); a name or value
/// vkcl does not know is CL_INVALID_VALUE.
///
/// # Safety
/// `props` is null or a zero-terminated list of name and value pairs.
unsafe fn read_dispatch_properties(
    props: *const cl_command_properties_khr,
) -> ClResult<DispatchProperties> {
    let (mut fields, mut no_additional_groups) = (None, false);
    // SAFETY: passed on from the caller.
    let list = unsafe {
        command_buffer::read_pairs(props, |name, value| {
            match name {
                CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR
                    if fields.is_none() && value & !command_buffer::MUTABLE_FIELDS == 0 =>
                {
                    fields = Some(value);
                }
                CL_MUTABLE_DISPATCH_ASSERTS_KHR
                    if value & !CL_MUTABLE_DISPATCH_ASSERT_NO_ADDITIONAL_WORK_GROUPS_KHR == 0 =>
                {
                    no_additional_groups = value != 0;
                }
                _ => return err(CL_INVALID_VALUE),
            }
            Ok(())
        })?
    };
    Ok(DispatchProperties {
        list,
        fields,
        no_additional_groups,
    })
}

pub(crate) unsafe extern "C" fn clCommandNDRangeKernelKHR(
    command_buffer: cl_command_buffer_khr,
    command_queue: cl_command_queue,
    properties: *const cl_command_properties_khr,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const usize,
    global_work_size: *const usize,
    local_work_size: *const usize,
    num_sync_points_in_wait_list: cl_uint,
    sync_point_wait_list: *const cl_sync_point_khr,
    sync_point: *mut cl_sync_point_khr,
    mutable_handle: *mut cl_mutable_command_khr,
) -> cl_int {
    api_call("clCommandNDRangeKernelKHR", || {
        // SAFETY: the application passes lists and arrays of the sizes the
        // extension gives them.
        unsafe {
            let (b, q, syncs) = recording(
                command_buffer,
                command_queue,
                std::ptr::null(),
                num_sync_points_in_wait_list,
                sync_point_wait_list,
                std::ptr::null_mut(),
            )?;
            let props = read_dispatch_properties(properties)?;
            // Arguments may be left for an update only where the command
            // says it will update them.
            let args_later = props
                .fields
                .is_some_and(|f| f & CL_MUTABLE_DISPATCH_ARGUMENTS_KHR != 0);
            let c = kernel::ndrange_checks(
                q,
                kernel,
                work_dim,
                global_work_offset,
                global_work_size,
                local_work_size,
                0,
                std::ptr::null(),
                args_later,
            )?;
            if (b.properties.no_additional_groups || props.no_additional_groups)
                && local_work_size.is_null()
            {
                return err(CL_INVALID_VALUE);
            }
            let args_set = c.kernel.check_args_set().is_ok();
            if mutable_handle.is_null() && args_set {
                let launch = Arc::new(Launch::new(&c.target.queue, &c.kernel, c.range)?);
                let plan: Plan = Arc::new(move |_| Ok(launch.work()));
                return record(
                    &b,
                    CL_COMMAND_NDRANGE_KERNEL,
                    &syncs,
                    Some(plan),
                    sync_point,
                );
            }
            // A command the application may update: it runs its own copy
            // of the kernel, so later clSetKernelArg calls on `kernel` do
            // not reach it.
            let own = c.kernel.clone_kernel();
            let launch = if args_set {
                Some(Arc::new(Launch::new(&c.target.queue, &own, c.range)?))
            } else {
                None
            };
            let d = MutableDispatch::new(
                &b,
                c.kernel,
                work_dim,
                props.list,
                props.fields.unwrap_or(command_buffer::MUTABLE_FIELDS),
                c.range.uniform(),
                DispatchState {
                    kernel: own,
                    sizes: Sizes {
                        offset: c.offset,
                        global: c.global,
                        local: c.local,
                    },
                    launch,
                },
            );
            hand_out(b.record_dispatch(&syncs, d.clone())?, sync_point);
            if !mutable_handle.is_null() {
                // SAFETY: non-null and writable, per the extension. The
                // handle lives as long as the command buffer.
                mutable_handle.write(Handle::as_raw(&d));
            }
            Ok(())
        }
    })
}

/// One update of a mutable dispatch: its state after `config`, made from
/// `base` (its state before, or as an earlier configuration of the same
/// call left it). Checks as the matching clSetKernelArg,
/// clSetKernelArgSVMPointer, clSetKernelExecInfo and
/// clEnqueueNDRangeKernel calls would.
///
/// # Safety
/// The lists and arrays of `config` are null or as long as it says.
unsafe fn updated(
    d: &MutableDispatch,
    base: DispatchState,
    config: &cl_mutable_dispatch_config_khr,
) -> ClResult<DispatchState> {
    let fields = d.fields;
    let may = |field: cl_mutable_dispatch_fields_khr, given: bool| {
        if given && fields & field == 0 {
            err(CL_INVALID_OPERATION)
        } else {
            Ok(())
        }
    };
    may(
        CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR,
        !config.global_work_offset.is_null(),
    )?;
    may(
        CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR,
        !config.global_work_size.is_null(),
    )?;
    may(
        CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR,
        !config.local_work_size.is_null(),
    )?;
    may(
        CL_MUTABLE_DISPATCH_ARGUMENTS_KHR,
        config.num_args != 0 || config.num_svm_args != 0,
    )?;
    may(
        CL_MUTABLE_DISPATCH_EXEC_INFO_KHR,
        config.num_exec_infos != 0,
    )?;
    if config.work_dim != 0 && config.work_dim != d.work_dim {
        return err(CL_INVALID_OPERATION);
    }
    let list = |ptr: bool, n: cl_uint| {
        if ptr != (n != 0) {
            err(CL_INVALID_VALUE)
        } else {
            Ok(n as usize)
        }
    };
    let n_args = list(!config.arg_list.is_null(), config.num_args)?;
    let n_svm = list(!config.arg_svm_list.is_null(), config.num_svm_args)?;
    let n_exec = list(!config.exec_info_list.is_null(), config.num_exec_infos)?;
    // SAFETY: lists of the lengths the configuration gives.
    let (args, svm_args, exec_infos) = unsafe {
        (
            slice_in(config.arg_list, n_args)?,
            slice_in(config.arg_svm_list, n_svm)?,
            slice_in(config.exec_info_list, n_exec)?,
        )
    };
    let mut state = base;
    if !args.is_empty() || !svm_args.is_empty() {
        // A copy of the kernel for the new values, so that a failed update
        // leaves the dispatch as it was.
        let k = state.kernel.clone_kernel();
        for a in args {
            let v = kernel::arg_value_of(&k, a.arg_index, a.arg_size, a.arg_value)?;
            k.set_arg(a.arg_index as usize, v)?;
        }
        for a in svm_args {
            let v = svm::svm_arg_value_of(&k, a.arg_index, a.arg_value)?;
            k.set_arg(a.arg_index as usize, v)?;
        }
        state.kernel = k;
    }
    for e in exec_infos {
        kernel::check_exec_info(
            &state.kernel,
            e.param_name,
            e.param_value_size,
            e.param_value,
        )?;
    }
    let dims = d.work_dim as usize;
    // SAFETY: `work_dim` values each, per the extension.
    unsafe {
        if !config.global_work_offset.is_null() {
            state.sizes.offset = slice_in(config.global_work_offset, dims)?.to_vec();
        }
        if !config.global_work_size.is_null() {
            state.sizes.global = slice_in(config.global_work_size, dims)?.to_vec();
        }
        if !config.local_work_size.is_null() {
            state.sizes.local = slice_in(config.local_work_size, dims)?.to_vec();
        }
    }
    let device = &d.queue.device;
    let s = &state.sizes;
    kernel::check_sizes(device, &state.kernel, &s.offset, &s.global, &s.local)?;
    let range = NdRange::new(&state.kernel, device, &s.offset, &s.global, &s.local)?;
    if range.uniform() != d.uniform {
        return err(CL_INVALID_OPERATION);
    }
    state.launch = match state.kernel.check_args_set() {
        Ok(()) => Some(Arc::new(Launch::new(&d.queue, &state.kernel, range)?)),
        Err(_) => None,
    };
    Ok(state)
}

pub(crate) unsafe extern "C" fn clUpdateMutableCommandsKHR(
    command_buffer: cl_command_buffer_khr,
    num_configs: cl_uint,
    config_types: *const cl_command_buffer_update_type_khr,
    configs: *mut *const c_void,
) -> cl_int {
    api_call("clUpdateMutableCommandsKHR", || {
        let b = Handle::<CommandBuffer>::from_raw(command_buffer)?;
        if !b.is_finalized() || !b.properties.mutable {
            return err(CL_INVALID_OPERATION);
        }
        let n = num_configs as usize;
        if config_types.is_null() != (n == 0) || configs.is_null() != (n == 0) {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: `num_configs` entries each, per the extension.
        let (types, configs) = unsafe { (slice_in(config_types, n)?, slice_in(configs, n)?) };
        b.update(|owns| {
            let mut staged: Vec<(Arc<Handle<MutableDispatch>>, DispatchState)> = Vec::new();
            for (&t, &c) in types.iter().zip(configs) {
                if t != CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR || c.is_null() {
                    return err(CL_INVALID_VALUE);
                }
                // SAFETY: a configuration of the type given, per the extension.
                let config = unsafe { &*c.cast::<cl_mutable_dispatch_config_khr>() };
                let d = Handle::<MutableDispatch>::from_raw(config.command)?;
                if !owns(&d) {
                    return err(CL_INVALID_MUTABLE_COMMAND_KHR);
                }
                let base = match staged.iter().rposition(|(o, _)| Arc::ptr_eq(o, &d)) {
                    Some(i) => staged.remove(i).1,
                    None => d.state(),
                };
                // SAFETY: the configuration's lists are as long as it says.
                let next = unsafe { updated(&d, base, config)? };
                staged.push((d, next));
            }
            Ok(staged)
        })
    })
}

fn mutable_command_info(d: &MutableDispatch, param: cl_mutable_command_info_khr) -> Info {
    let sizes = || d.state().sizes;
    // Unset offsets and local sizes read as zeros.
    let or_zeros = |v: Vec<usize>| {
        if v.is_empty() {
            info(vec![0usize; d.work_dim as usize])
        } else {
            info(v)
        }
    };
    match param {
        CL_MUTABLE_COMMAND_COMMAND_QUEUE_KHR => info(Handle::as_raw::<c_void>(&d.queue)),
        CL_MUTABLE_COMMAND_COMMAND_BUFFER_KHR => info(d.buffer as *mut c_void),
        CL_MUTABLE_COMMAND_COMMAND_TYPE_KHR => info(CL_COMMAND_NDRANGE_KERNEL),
        CL_MUTABLE_COMMAND_PROPERTIES_ARRAY_KHR => info(d.properties.clone()),
        CL_MUTABLE_DISPATCH_KERNEL_KHR => info(Handle::as_raw::<c_void>(&d.recorded_kernel)),
        CL_MUTABLE_DISPATCH_DIMENSIONS_KHR => info(d.work_dim),
        CL_MUTABLE_DISPATCH_GLOBAL_WORK_OFFSET_KHR => or_zeros(sizes().offset),
        CL_MUTABLE_DISPATCH_GLOBAL_WORK_SIZE_KHR => info(sizes().global),
        CL_MUTABLE_DISPATCH_LOCAL_WORK_SIZE_KHR => or_zeros(sizes().local),
        _ => invalid_param(param),
    }
}

pub(crate) unsafe extern "C" fn clGetMutableCommandInfoKHR(
    command: cl_mutable_command_khr,
    param_name: cl_mutable_command_info_khr,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetMutableCommandInfoKHR", || {
        let d = Handle::<MutableDispatch>::from_raw(command)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                mutable_command_info(&d, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

fn command_buffer_info(b: &Arc<Handle<CommandBuffer>>, param: cl_command_buffer_info_khr) -> Info {
    match param {
        CL_COMMAND_BUFFER_QUEUES_KHR => info(vec![Handle::as_raw::<c_void>(&b.queue)]),
        CL_COMMAND_BUFFER_NUM_QUEUES_KHR => info(1 as cl_uint),
        CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR => info(b.api_ref_count()),
        CL_COMMAND_BUFFER_STATE_KHR => info(match b.state() {
            BufferState::Recording => CL_COMMAND_BUFFER_STATE_RECORDING_KHR,
            BufferState::Finalized => CL_COMMAND_BUFFER_STATE_FINALIZED_KHR,
            BufferState::Executable => CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR,
        }),
        CL_COMMAND_BUFFER_PROPERTIES_ARRAY_KHR => info(b.properties.list.clone()),
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
