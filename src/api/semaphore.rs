//! cl_khr_semaphore entry points. They are reached through
//! clGetExtensionFunctionAddressForPlatform, as every extension function.

#![allow(non_snake_case)]

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::util::*;
use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClResult, err};
use crate::core::event::Event;
use crate::core::object::Handle;
use crate::core::queue::Queue;
use crate::core::semaphore::{self, Semaphore};

pub(crate) unsafe extern "C" fn clCreateSemaphoreWithPropertiesKHR(
    context: cl_context,
    sema_props: *const cl_semaphore_properties_khr,
    errcode_ret: *mut cl_int,
) -> cl_semaphore_khr {
    let create = || {
        let c = Handle::<Context>::from_raw(context)?;
        // SAFETY: null or a zero-terminated list, per the specification.
        let s = unsafe { Semaphore::create(c, sema_props)? };
        Ok(Handle::into_api(s))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateSemaphoreWithPropertiesKHR", errcode_ret, create) }
}

/// What a signal or a wait enqueues, given its checked arguments.
type Operation = fn(
    &Arc<Handle<Queue>>,
    &[Arc<Handle<Semaphore>>],
    Vec<Arc<Handle<Event>>>,
) -> ClResult<Arc<Handle<Event>>>;

/// clEnqueueSignalSemaphoresKHR and clEnqueueWaitSemaphoresKHR: checks the
/// queue, semaphores and wait list in the order the extension lists its
/// errors, enqueues `op` and hands out its event. Binary semaphores have
/// no payload: the payload list is ignored.
///
/// # Safety
/// The pointers are null or valid for the counts given.
unsafe fn enqueue_operation(
    command_queue: cl_command_queue,
    num_sema_objects: cl_uint,
    sema_objects: *const cl_semaphore_khr,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    op: Operation,
) -> ClResult<()> {
    let q = Handle::<Queue>::from_raw(command_queue)?;
    if num_sema_objects == 0 || sema_objects.is_null() {
        return err(CL_INVALID_VALUE);
    }
    // SAFETY: non-null, with the count the application gives.
    let raw = unsafe { slice_in(sema_objects, num_sema_objects as usize)? };
    let semaphores = raw
        .iter()
        .map(|&s| Handle::<Semaphore>::from_raw(s))
        .collect::<ClResult<Vec<_>>>()?;
    for s in &semaphores {
        if !Arc::ptr_eq(&s.context, &q.context) {
            return err(CL_INVALID_CONTEXT);
        }
        if !Arc::ptr_eq(&s.device, &q.device) {
            return err(CL_INVALID_COMMAND_QUEUE);
        }
    }
    // SAFETY: the application passes `num_events_in_wait_list` handles.
    let waits = unsafe { wait_list(&q.context, num_events_in_wait_list, event_wait_list)? };
    check_wait_list_ok(&waits)?;
    let ev = op(&q, &semaphores, waits)?;
    // SAFETY: null or writable, per the specification.
    unsafe { out_event(event, ev) };
    Ok(())
}

pub(crate) unsafe extern "C" fn clEnqueueSignalSemaphoresKHR(
    command_queue: cl_command_queue,
    num_sema_objects: cl_uint,
    sema_objects: *const cl_semaphore_khr,
    _sema_payload_list: *const cl_semaphore_payload_khr,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueSignalSemaphoresKHR", || {
        // SAFETY: the application passes lists of the sizes it states.
        unsafe {
            enqueue_operation(
                command_queue,
                num_sema_objects,
                sema_objects,
                num_events_in_wait_list,
                event_wait_list,
                event,
                semaphore::enqueue_signal,
            )
        }
    })
}

pub(crate) unsafe extern "C" fn clEnqueueWaitSemaphoresKHR(
    command_queue: cl_command_queue,
    num_sema_objects: cl_uint,
    sema_objects: *const cl_semaphore_khr,
    _sema_payload_list: *const cl_semaphore_payload_khr,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueWaitSemaphoresKHR", || {
        // SAFETY: the application passes lists of the sizes it states.
        unsafe {
            enqueue_operation(
                command_queue,
                num_sema_objects,
                sema_objects,
                num_events_in_wait_list,
                event_wait_list,
                event,
                semaphore::enqueue_wait,
            )
        }
    })
}

fn semaphore_info(s: &Arc<Handle<Semaphore>>, param: cl_semaphore_info_khr) -> Info {
    match param {
        CL_SEMAPHORE_CONTEXT_KHR => info(Handle::as_raw::<c_void>(&s.context)),
        CL_SEMAPHORE_REFERENCE_COUNT_KHR => info(s.api_ref_count()),
        CL_SEMAPHORE_PROPERTIES_KHR => info(s.properties.clone()),
        CL_SEMAPHORE_PAYLOAD_KHR => info(s.payload()),
        CL_SEMAPHORE_TYPE_KHR => info(CL_SEMAPHORE_TYPE_BINARY_KHR),
        CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR => info(vec![Handle::as_raw::<c_void>(&s.device)]),
        CL_SEMAPHORE_EXPORTABLE_KHR => info(cl_bool::from(!s.export_types().is_empty())),
        n if n == CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR as cl_semaphore_info_khr => info(
            s.export_types()
                .into_iter()
                .map(semaphore::handle_type)
                .collect::<Vec<_>>(),
        ),
        _ => invalid_param(param),
    }
}

pub(crate) unsafe extern "C" fn clGetSemaphoreInfoKHR(
    sema_object: cl_semaphore_khr,
    param_name: cl_semaphore_info_khr,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetSemaphoreInfoKHR", || {
        let s = Handle::<Semaphore>::from_raw(sema_object)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                semaphore_info(&s, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

/// clGetSemaphoreHandleForTypeKHR: a file descriptor, for the handle
/// types the semaphore was made to export. With no room given, only the
/// size: no descriptor is made then.
pub(crate) unsafe extern "C" fn clGetSemaphoreHandleForTypeKHR(
    sema_object: cl_semaphore_khr,
    device: cl_device_id,
    handle_type: cl_external_semaphore_handle_type_khr,
    handle_size: usize,
    handle_ptr: *mut c_void,
    handle_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetSemaphoreHandleForTypeKHR", || {
        let s = Handle::<Semaphore>::from_raw(sema_object)?;
        let d = Handle::<Device>::from_raw(device)?;
        if !Arc::ptr_eq(&s.device, &d) {
            return err(CL_INVALID_DEVICE);
        }
        let Some(kind) =
            semaphore::handle_kind(handle_type).filter(|k| s.export_types().contains(k))
        else {
            return err(CL_INVALID_VALUE);
        };
        let size = std::mem::size_of::<std::ffi::c_int>();
        if !handle_ptr.is_null() {
            if handle_size < size {
                return err(CL_INVALID_VALUE);
            }
            let fd = s.export(kind)?;
            // SAFETY: the application gives room for `handle_size` bytes.
            unsafe { (handle_ptr as *mut std::ffi::c_int).write_unaligned(fd) };
        }
        if !handle_size_ret.is_null() {
            // SAFETY: null or writable, per the specification.
            unsafe { *handle_size_ret = size };
        }
        Ok(())
    })
}

/// clReImportSemaphoreSyncFdKHR (cl_khr_external_semaphore_sync_fd).
pub(crate) unsafe extern "C" fn clReImportSemaphoreSyncFdKHR(
    sema_object: cl_semaphore_khr,
    reimport_props: *mut cl_semaphore_reimport_properties_khr,
    fd: std::ffi::c_int,
) -> cl_int {
    api_call("clReImportSemaphoreSyncFdKHR", || {
        let s = Handle::<Semaphore>::from_raw(sema_object)?;
        // No re-import property is defined: the list must be empty.
        // SAFETY: null or a zero-terminated list, per the extension.
        if !reimport_props.is_null() && unsafe { *reimport_props } != 0 {
            return err(CL_INVALID_VALUE);
        }
        s.reimport_sync_fd(fd)
    })
}

pub(crate) unsafe extern "C" fn clRetainSemaphoreKHR(sema_object: cl_semaphore_khr) -> cl_int {
    api_call("clRetainSemaphoreKHR", || {
        Handle::<Semaphore>::from_raw(sema_object)?.retain()
    })
}

pub(crate) unsafe extern "C" fn clReleaseSemaphoreKHR(sema_object: cl_semaphore_khr) -> cl_int {
    api_call("clReleaseSemaphoreKHR", || {
        Handle::release(Handle::<Semaphore>::from_raw(sema_object)?)
    })
}
