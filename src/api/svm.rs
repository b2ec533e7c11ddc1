//! Shared virtual memory entry points. SVM is not offered yet
//! (CL_DEVICE_SVM_CAPABILITIES is zero), for which the specification gives
//! CL_INVALID_OPERATION (and a null pointer from clSVMAlloc).

use std::ffi::c_void;

use opencl_sys::*;

use crate::api::util::*;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSVMAlloc(
    _context: cl_context,
    _flags: cl_svm_mem_flags,
    _size: usize,
    _alignment: cl_uint,
) -> *mut c_void {
    unsupported_ptr("clSVMAlloc")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSVMFree(_context: cl_context, _svm_pointer: *mut c_void) {
    unsupported_void("clSVMFree")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMFree(
    _command_queue: cl_command_queue,
    _num_svm_pointers: cl_uint,
    _svm_pointers: *mut *mut c_void,
    _pfn_free_func: Option<
        unsafe extern "C" fn(
            queue: cl_command_queue,
            num_svm_pointers: cl_uint,
            svm_pointers: *mut *mut c_void,
            user_data: *mut c_void,
        ),
    >,
    _user_data: *mut c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueSVMFree")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMMemcpy(
    _command_queue: cl_command_queue,
    _blocking_copy: cl_bool,
    _dst_ptr: *mut c_void,
    _src_ptr: *const c_void,
    _size: usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueSVMMemcpy")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMMemFill(
    _command_queue: cl_command_queue,
    _svm_ptr: *mut c_void,
    _pattern: *const c_void,
    _pattern_size: usize,
    _size: usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueSVMMemFill")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMMap(
    _command_queue: cl_command_queue,
    _blocking_map: cl_bool,
    _flags: cl_map_flags,
    _svm_ptr: *mut c_void,
    _size: usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueSVMMap")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMUnmap(
    _command_queue: cl_command_queue,
    _svm_ptr: *mut c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueSVMUnmap")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetKernelArgSVMPointer(
    _kernel: cl_kernel,
    _arg_index: cl_uint,
    _arg_value: *const c_void,
) -> cl_int {
    unsupported("clSetKernelArgSVMPointer")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMMigrateMem(
    _command_queue: cl_command_queue,
    _num_svm_pointers: cl_uint,
    _svm_pointers: *mut *const c_void,
    _sizes: *const usize,
    _flags: cl_mem_migration_flags,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueSVMMigrateMem")
}
