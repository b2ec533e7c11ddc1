//! Event entry points: waits, queries, profiling, callbacks, user events.

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::util::*;
use crate::core::context::Context;
use crate::core::error::{ClError, ClResult, err};
use crate::core::event::{Event, EventCallback};
use crate::core::object::{Callback, Handle};

fn wait_for(events: &[Arc<Handle<Event>>]) -> ClResult<()> {
    for e in events {
        if let Some(q) = &e.queue {
            q.flush()?;
        }
    }
    let mut failed = false;
    for e in events {
        failed |= e.wait() < 0;
    }
    if failed {
        return err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clWaitForEvents(
    num_events: cl_uint,
    event_list: *const cl_event,
) -> cl_int {
    api_call("clWaitForEvents", || {
        if num_events == 0 || event_list.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes `num_events` handles.
        let raw = unsafe { slice_in(event_list, num_events as usize)? };
        let events = raw
            .iter()
            .map(|&e| Handle::<Event>::from_raw(e))
            .collect::<ClResult<Vec<_>>>()?;
        if events
            .iter()
            .any(|e| !Arc::ptr_eq(&e.context, &events[0].context))
        {
            return err(CL_INVALID_CONTEXT);
        }
        wait_for(&events)
    })
}

fn event_info(e: &Arc<Handle<Event>>, param: cl_event_info) -> Info {
    match param {
        CL_EVENT_COMMAND_QUEUE => info(match &e.queue {
            Some(q) => Handle::as_raw::<c_void>(q),
            None => std::ptr::null_mut(),
        }),
        CL_EVENT_CONTEXT => info(Handle::as_raw::<c_void>(&e.context)),
        CL_EVENT_COMMAND_TYPE => info(e.command_type),
        CL_EVENT_COMMAND_EXECUTION_STATUS => info(e.status()),
        CL_EVENT_REFERENCE_COUNT => info(e.api_ref_count()),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetEventInfo(
    event: cl_event,
    param_name: cl_event_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetEventInfo", || {
        let e = Handle::<Event>::from_raw(event)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                event_info(&e, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainEvent(event: cl_event) -> cl_int {
    api_call("clRetainEvent", || {
        Handle::<Event>::from_raw(event)?.retain()
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseEvent(event: cl_event) -> cl_int {
    api_call("clReleaseEvent", || {
        Handle::release(Handle::<Event>::from_raw(event)?)
    })
}

fn profiling_info(e: &Event, param: cl_profiling_info) -> Info {
    if !e.profiling || e.status() != CL_COMPLETE as cl_int {
        return err(CL_PROFILING_INFO_NOT_AVAILABLE);
    }
    let p = e.profile();
    match param {
        CL_PROFILING_COMMAND_QUEUED => info(p.queued),
        CL_PROFILING_COMMAND_SUBMIT => info(p.submit),
        CL_PROFILING_COMMAND_START => info(p.start),
        CL_PROFILING_COMMAND_END => info(p.end),
        CL_PROFILING_COMMAND_COMPLETE => info(p.complete),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetEventProfilingInfo(
    event: cl_event,
    param_name: cl_profiling_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetEventProfilingInfo", || {
        let e = Handle::<Event>::from_raw(event)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                profiling_info(&e, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetEventCallback(
    event: cl_event,
    command_exec_callback_type: cl_int,
    pfn_notify: Option<EventCallback>,
    user_data: *mut c_void,
) -> cl_int {
    api_call("clSetEventCallback", || {
        let e = Handle::<Event>::from_raw(event)?;
        let func = pfn_notify.ok_or(ClError(CL_INVALID_VALUE))?;
        let when = command_exec_callback_type;
        if ![CL_SUBMITTED, CL_RUNNING, CL_COMPLETE]
            .iter()
            .any(|&s| s as cl_int == when)
        {
            return err(CL_INVALID_VALUE);
        }
        e.add_callback(when, Callback { func, user_data });
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateUserEvent(
    context: cl_context,
    errcode_ret: *mut cl_int,
) -> cl_event {
    let create = || {
        Ok(Handle::into_api(Event::user(Handle::<Context>::from_raw(
            context,
        )?)))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateUserEvent", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetUserEventStatus(event: cl_event, execution_status: cl_int) -> cl_int {
    api_call("clSetUserEventStatus", || {
        Handle::<Event>::from_raw(event)?.set_user_status(execution_status)
    })
}
