//! Event entry points. Events arrive with the execution model; until then each entry
//! point reports CL_INVALID_OPERATION and logs why.

use std::ffi::c_void;

use opencl_sys::*;

use crate::api::util::*;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clWaitForEvents(
    _num_events: cl_uint,
    _event_list: *const cl_event,
) -> cl_int {
    unsupported("clWaitForEvents")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetEventInfo(
    _event: cl_event,
    _param_name: cl_event_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetEventInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainEvent(_event: cl_event) -> cl_int {
    unsupported("clRetainEvent")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseEvent(_event: cl_event) -> cl_int {
    unsupported("clReleaseEvent")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetEventProfilingInfo(
    _event: cl_event,
    _param_name: cl_profiling_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetEventProfilingInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetEventCallback(
    _event: cl_event,
    _command_exec_callback_type: cl_int,
    _pfn_notify: Option<
        unsafe extern "C" fn(event: cl_event, event_command_status: cl_int, user_data: *mut c_void),
    >,
    _user_data: *mut c_void,
) -> cl_int {
    unsupported("clSetEventCallback")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateUserEvent(
    _context: cl_context,
    _errcode_ret: *mut cl_int,
) -> cl_event {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateUserEvent", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetUserEventStatus(
    _event: cl_event,
    _execution_status: cl_int,
) -> cl_int {
    unsupported("clSetUserEventStatus")
}
