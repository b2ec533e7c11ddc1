//! Buffer and pipe entry points. Buffers arrive with the execution model; pipes are not
//! offered (CL_DEVICE_PIPE_SUPPORT is false), for which the specification gives
//! CL_INVALID_OPERATION.

use std::ffi::c_void;

use opencl_sys::*;

use crate::api::util::*;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateBuffer(
    _context: cl_context,
    _flags: cl_mem_flags,
    _size: usize,
    _host_ptr: *mut c_void,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateBuffer", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainMemObject(_memobj: cl_mem) -> cl_int {
    unsupported("clRetainMemObject")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseMemObject(_memobj: cl_mem) -> cl_int {
    unsupported("clReleaseMemObject")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetMemObjectInfo(
    _memobj: cl_mem,
    _param_name: cl_mem_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetMemObjectInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueReadBuffer(
    _command_queue: cl_command_queue,
    _buffer: cl_mem,
    _blocking_read: cl_bool,
    _offset: usize,
    _size: usize,
    _ptr: *mut c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueReadBuffer")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueWriteBuffer(
    _command_queue: cl_command_queue,
    _buffer: cl_mem,
    _blocking_write: cl_bool,
    _offset: usize,
    _size: usize,
    _ptr: *const c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueWriteBuffer")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyBuffer(
    _command_queue: cl_command_queue,
    _src_buffer: cl_mem,
    _dst_buffer: cl_mem,
    _src_offset: usize,
    _dst_offset: usize,
    _size: usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueCopyBuffer")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMapBuffer(
    _command_queue: cl_command_queue,
    _buffer: cl_mem,
    _blocking_map: cl_bool,
    _map_flags: cl_map_flags,
    _offset: usize,
    _size: usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
    _errcode_ret: *mut cl_int,
) -> *mut c_void {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clEnqueueMapBuffer", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueUnmapMemObject(
    _command_queue: cl_command_queue,
    _memobj: cl_mem,
    _mapped_ptr: *mut c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueUnmapMemObject")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateSubBuffer(
    _buffer: cl_mem,
    _flags: cl_mem_flags,
    _buffer_create_type: cl_buffer_create_type,
    _buffer_create_info: *const c_void,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateSubBuffer", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetMemObjectDestructorCallback(
    _memobj: cl_mem,
    _pfn_notify: Option<unsafe extern "C" fn(memobj: cl_mem, user_data: *mut c_void)>,
    _user_data: *mut c_void,
) -> cl_int {
    unsupported("clSetMemObjectDestructorCallback")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueReadBufferRect(
    _command_queue: cl_command_queue,
    _buffer: cl_mem,
    _blocking_read: cl_bool,
    _buffer_origin: *const usize,
    _host_origin: *const usize,
    _region: *const usize,
    _buffer_row_pitch: usize,
    _buffer_slice_pitch: usize,
    _host_row_pitch: usize,
    _host_slice_pitch: usize,
    _ptr: *mut c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueReadBufferRect")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueWriteBufferRect(
    _command_queue: cl_command_queue,
    _buffer: cl_mem,
    _blocking_write: cl_bool,
    _buffer_origin: *const usize,
    _host_origin: *const usize,
    _region: *const usize,
    _buffer_row_pitch: usize,
    _buffer_slice_pitch: usize,
    _host_row_pitch: usize,
    _host_slice_pitch: usize,
    _ptr: *const c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueWriteBufferRect")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyBufferRect(
    _command_queue: cl_command_queue,
    _src_buffer: cl_mem,
    _dst_buffer: cl_mem,
    _src_origin: *const usize,
    _dst_origin: *const usize,
    _region: *const usize,
    _src_row_pitch: usize,
    _src_slice_pitch: usize,
    _dst_row_pitch: usize,
    _dst_slice_pitch: usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueCopyBufferRect")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueFillBuffer(
    _command_queue: cl_command_queue,
    _buffer: cl_mem,
    _pattern: *const c_void,
    _pattern_size: usize,
    _offset: usize,
    _size: usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueFillBuffer")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMigrateMemObjects(
    _command_queue: cl_command_queue,
    _num_mem_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _flags: cl_mem_migration_flags,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueMigrateMemObjects")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreatePipe(
    _context: cl_context,
    _flags: cl_mem_flags,
    _pipe_packet_size: cl_uint,
    _pipe_max_packets: cl_uint,
    _properties: *const cl_pipe_properties,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreatePipe", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetPipeInfo(
    _pipe: cl_mem,
    _param_name: cl_pipe_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetPipeInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateBufferWithProperties(
    _context: cl_context,
    _properties: *const cl_mem_properties,
    _flags: cl_mem_flags,
    _size: usize,
    _host_ptr: *mut c_void,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateBufferWithProperties", _errcode_ret) }
}
