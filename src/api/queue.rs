//! Command-queue entry points. Command queues arrive with the execution model; until
//! then each entry point reports CL_INVALID_OPERATION and logs why.

use std::ffi::c_void;

use opencl_sys::*;

use crate::api::util::*;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateCommandQueue(
    _context: cl_context,
    _device: cl_device_id,
    _properties: cl_command_queue_properties,
    _errcode_ret: *mut cl_int,
) -> cl_command_queue {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateCommandQueue", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainCommandQueue(_command_queue: cl_command_queue) -> cl_int {
    unsupported("clRetainCommandQueue")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseCommandQueue(_command_queue: cl_command_queue) -> cl_int {
    unsupported("clReleaseCommandQueue")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetCommandQueueInfo(
    _command_queue: cl_command_queue,
    _param_name: cl_command_queue_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetCommandQueueInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetCommandQueueProperty(
    _command_queue: cl_command_queue,
    _properties: cl_command_queue_properties,
    _enable: cl_bool,
    _old_properties: *mut cl_command_queue_properties,
) -> cl_int {
    unsupported("clSetCommandQueueProperty")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clFlush(_command_queue: cl_command_queue) -> cl_int {
    unsupported("clFlush")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clFinish(_command_queue: cl_command_queue) -> cl_int {
    unsupported("clFinish")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMarker(
    _command_queue: cl_command_queue,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueMarker")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueWaitForEvents(
    _command_queue: cl_command_queue,
    _num_events: cl_uint,
    _event_list: *const cl_event,
) -> cl_int {
    unsupported("clEnqueueWaitForEvents")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueBarrier(_command_queue: cl_command_queue) -> cl_int {
    unsupported("clEnqueueBarrier")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMarkerWithWaitList(
    _command_queue: cl_command_queue,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueMarkerWithWaitList")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueBarrierWithWaitList(
    _command_queue: cl_command_queue,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueBarrierWithWaitList")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateCommandQueueWithProperties(
    _context: cl_context,
    _device: cl_device_id,
    _properties: *const cl_queue_properties,
    _errcode_ret: *mut cl_int,
) -> cl_command_queue {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateCommandQueueWithProperties", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetDefaultDeviceCommandQueue(
    _context: cl_context,
    _device: cl_device_id,
    _command_queue: cl_command_queue,
) -> cl_int {
    unsupported("clSetDefaultDeviceCommandQueue")
}
