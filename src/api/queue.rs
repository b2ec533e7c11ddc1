//! Command-queue entry points: creation, queries, flush/finish, markers
//! and barriers.

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::util::*;
use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClResult, err};
use crate::core::object::Handle;
use crate::core::queue::{Ordering, Queue, Work};

const HOST_QUEUE_PROPERTIES: cl_command_queue_properties =
    CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE;
const KNOWN_QUEUE_PROPERTIES: cl_command_queue_properties =
    HOST_QUEUE_PROPERTIES | CL_QUEUE_ON_DEVICE | CL_QUEUE_ON_DEVICE_DEFAULT;

/// Creates a queue of `properties`; `size`: CL_QUEUE_SIZE where given.
fn create_queue(
    context: cl_context,
    device: cl_device_id,
    properties: cl_command_queue_properties,
    array: Vec<cl_queue_properties>,
    size: Option<u64>,
) -> ClResult<cl_command_queue> {
    let c = Handle::<Context>::from_raw(context)?;
    let d = Handle::<Device>::from_raw(device)?;
    if !c.has_device(&d) {
        return err(CL_INVALID_DEVICE);
    }
    if properties & !KNOWN_QUEUE_PROPERTIES != 0 {
        return err(CL_INVALID_VALUE);
    }
    if properties & CL_QUEUE_ON_DEVICE_DEFAULT != 0 && properties & CL_QUEUE_ON_DEVICE == 0 {
        return err(CL_INVALID_VALUE);
    }
    if properties & CL_QUEUE_ON_DEVICE == 0 {
        return Ok(Handle::into_api(Queue::new(c, d, properties, array, None)?));
    }
    if !d.device_enqueue() {
        return err(CL_INVALID_QUEUE_PROPERTIES);
    }
    // On-device queues are out-of-order.
    if properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE == 0 {
        return err(CL_INVALID_VALUE);
    }
    let size = match size {
        None => crate::core::enqueue::PREFERRED_QUEUE_SIZE,
        Some(s) if s > u64::from(crate::core::enqueue::MAX_QUEUE_SIZE) => {
            return err(CL_INVALID_QUEUE_PROPERTIES);
        }
        Some(s) => s as u32,
    };
    if properties & CL_QUEUE_ON_DEVICE_DEFAULT != 0 {
        // There is one default queue per device: asking again gives it.
        if let Some(q) = c.default_device_queue(&d) {
            q.retain()?;
            return Ok(Handle::as_raw(&q));
        }
    }
    let q = Queue::new(c.clone(), d, properties, array, Some(size))?;
    if properties & CL_QUEUE_ON_DEVICE_DEFAULT != 0 {
        c.set_default_device_queue(&q);
    }
    Ok(Handle::into_api(q))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateCommandQueue(
    context: cl_context,
    device: cl_device_id,
    properties: cl_command_queue_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_queue {
    let create = || {
        // This entry point knows only the host-queue properties.
        if properties & !HOST_QUEUE_PROPERTIES != 0 {
            return err(CL_INVALID_VALUE);
        }
        create_queue(context, device, properties, Vec::new(), None)
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateCommandQueue", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateCommandQueueWithProperties(
    context: cl_context,
    device: cl_device_id,
    properties: *const cl_queue_properties,
    errcode_ret: *mut cl_int,
) -> cl_command_queue {
    let create = || {
        let mut bits = 0;
        let mut size = None;
        let mut array = Vec::new();
        let mut seen = Vec::new();
        if !properties.is_null() {
            let mut i = 0;
            loop {
                // SAFETY: a zero-terminated list of pairs, per the specification.
                let name = unsafe { *properties.add(i) };
                array.push(name);
                if name == 0 {
                    break;
                }
                // SAFETY: as above.
                let value = unsafe { *properties.add(i + 1) };
                array.push(value);
                i += 2;
                if seen.contains(&name) {
                    return err(CL_INVALID_VALUE);
                }
                seen.push(name);
                match name {
                    n if n == CL_QUEUE_PROPERTIES as cl_queue_properties => bits = value,
                    // Only on-device queues have a size (checked below).
                    n if n == CL_QUEUE_SIZE as cl_queue_properties => size = Some(value),
                    _ => return err(CL_INVALID_VALUE),
                }
            }
        }
        if seen.contains(&(CL_QUEUE_SIZE as cl_queue_properties)) && bits & CL_QUEUE_ON_DEVICE == 0
        {
            return err(CL_INVALID_VALUE);
        }
        create_queue(context, device, bits, array, size)
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateCommandQueueWithProperties", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainCommandQueue(command_queue: cl_command_queue) -> cl_int {
    api_call("clRetainCommandQueue", || {
        Handle::<Queue>::from_raw(command_queue)?.retain()
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseCommandQueue(command_queue: cl_command_queue) -> cl_int {
    api_call("clReleaseCommandQueue", || {
        let q = Handle::<Queue>::from_raw(command_queue)?;
        if q.api_ref_count() == 0 {
            return err(CL_INVALID_COMMAND_QUEUE);
        }
        // Releasing a queue flushes it.
        q.flush()?;
        Handle::release(q)
    })
}

fn queue_info(q: &Arc<Handle<Queue>>, param: cl_command_queue_info) -> Info {
    match param {
        CL_QUEUE_CONTEXT => info(Handle::as_raw::<c_void>(&q.context)),
        CL_QUEUE_DEVICE => info(Handle::as_raw::<c_void>(&q.device)),
        CL_QUEUE_REFERENCE_COUNT => info(q.api_ref_count()),
        CL_QUEUE_PROPERTIES => info(q.properties),
        CL_QUEUE_PROPERTIES_ARRAY => info(q.properties_array.clone()),
        // Only on-device queues have a size.
        CL_QUEUE_SIZE => match q.on_device {
            Some(size) => info(size),
            None => err(CL_INVALID_COMMAND_QUEUE),
        },
        CL_QUEUE_DEVICE_DEFAULT => info(
            q.context
                .default_device_queue(&q.device)
                .map_or(std::ptr::null_mut::<c_void>(), |d| Handle::as_raw(&d)),
        ),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetCommandQueueInfo(
    command_queue: cl_command_queue,
    param_name: cl_command_queue_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetCommandQueueInfo", || {
        let q = Handle::<Queue>::from_raw(command_queue)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                queue_info(&q, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetCommandQueueProperty(
    _command_queue: cl_command_queue,
    _properties: cl_command_queue_properties,
    _enable: cl_bool,
    _old_properties: *mut cl_command_queue_properties,
) -> cl_int {
    // Removed after OpenCL 1.0; queue properties are fixed at creation.
    unsupported("clSetCommandQueueProperty")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clFlush(command_queue: cl_command_queue) -> cl_int {
    api_call("clFlush", || {
        Handle::<Queue>::from_raw(command_queue)?.flush()
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clFinish(command_queue: cl_command_queue) -> cl_int {
    api_call("clFinish", || {
        Handle::<Queue>::from_raw(command_queue)?.finish()
    })
}

/// Markers, barriers and clEnqueueWaitForEvents.
fn enqueue_sync(
    command_queue: cl_command_queue,
    num_events: cl_uint,
    events: *const cl_event,
    event: *mut cl_event,
    command_type: cl_command_type,
    ordering: Ordering,
) -> ClResult<()> {
    let q = Handle::<Queue>::from_raw(command_queue)?;
    // SAFETY: the application passes `num_events` handles.
    let waits = unsafe { wait_list(&q.context, num_events, events)? };
    let ev = q.enqueue(command_type, waits, ordering, Work::none())?;
    // SAFETY: null or writable, per the specification.
    unsafe { out_event(event, ev) };
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMarkerWithWaitList(
    command_queue: cl_command_queue,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueMarkerWithWaitList", || {
        enqueue_sync(
            command_queue,
            num_events_in_wait_list,
            event_wait_list,
            event,
            CL_COMMAND_MARKER,
            Ordering::Marker,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueBarrierWithWaitList(
    command_queue: cl_command_queue,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueBarrierWithWaitList", || {
        enqueue_sync(
            command_queue,
            num_events_in_wait_list,
            event_wait_list,
            event,
            CL_COMMAND_BARRIER,
            Ordering::Barrier,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMarker(
    command_queue: cl_command_queue,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueMarker", || {
        Handle::<Queue>::from_raw(command_queue)?;
        if event.is_null() {
            return err(CL_INVALID_VALUE);
        }
        enqueue_sync(
            command_queue,
            0,
            std::ptr::null(),
            event,
            CL_COMMAND_MARKER,
            Ordering::Marker,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueBarrier(command_queue: cl_command_queue) -> cl_int {
    api_call("clEnqueueBarrier", || {
        enqueue_sync(
            command_queue,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
            CL_COMMAND_BARRIER,
            Ordering::Barrier,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueWaitForEvents(
    command_queue: cl_command_queue,
    num_events: cl_uint,
    event_list: *const cl_event,
) -> cl_int {
    api_call("clEnqueueWaitForEvents", || {
        let q = Handle::<Queue>::from_raw(command_queue)?;
        if num_events == 0 || event_list.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes `num_events` handles.
        let events = unsafe { slice_in(event_list, num_events as usize)? };
        for &e in events {
            let ev = Handle::<crate::core::event::Event>::from_raw(e)?;
            if !Arc::ptr_eq(&ev.context, &q.context) {
                return err(CL_INVALID_CONTEXT);
            }
        }
        enqueue_sync(
            command_queue,
            num_events,
            event_list,
            std::ptr::null_mut(),
            CL_COMMAND_BARRIER,
            Ordering::Barrier,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetDefaultDeviceCommandQueue(
    context: cl_context,
    device: cl_device_id,
    command_queue: cl_command_queue,
) -> cl_int {
    api_call("clSetDefaultDeviceCommandQueue", || {
        let c = Handle::<Context>::from_raw(context)?;
        let d = Handle::<Device>::from_raw(device)?;
        if !c.has_device(&d) {
            return err(CL_INVALID_DEVICE);
        }
        if !d.device_enqueue() {
            return err(CL_INVALID_OPERATION);
        }
        let q = Handle::<Queue>::from_raw(command_queue)?;
        if q.on_device.is_none() || !Arc::ptr_eq(&q.context, &c) || !Arc::ptr_eq(&q.device, &d) {
            return err(CL_INVALID_COMMAND_QUEUE);
        }
        c.set_default_device_queue(&q);
        Ok(())
    })
}
