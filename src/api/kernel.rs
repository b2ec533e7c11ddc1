//! Kernel entry points. Kernels need programs; until both land each entry point reports
//! CL_INVALID_OPERATION and logs why. Native kernels are never offered
//! (CL_EXEC_NATIVE_KERNEL is not reported).

use std::ffi::{c_char, c_void};

use opencl_sys::*;

use crate::api::util::*;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateKernel(
    _program: cl_program,
    _kernel_name: *const c_char,
    _errcode_ret: *mut cl_int,
) -> cl_kernel {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateKernel", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainKernel(_kernel: cl_kernel) -> cl_int {
    unsupported("clRetainKernel")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseKernel(_kernel: cl_kernel) -> cl_int {
    unsupported("clReleaseKernel")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetKernelArg(
    _kernel: cl_kernel,
    _arg_index: cl_uint,
    _arg_size: usize,
    _arg_value: *const c_void,
) -> cl_int {
    unsupported("clSetKernelArg")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelInfo(
    _kernel: cl_kernel,
    _param_name: cl_kernel_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetKernelInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelWorkGroupInfo(
    _kernel: cl_kernel,
    _device: cl_device_id,
    _param_name: cl_kernel_work_group_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetKernelWorkGroupInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueNDRangeKernel(
    _command_queue: cl_command_queue,
    _kernel: cl_kernel,
    _work_dim: cl_uint,
    _global_work_offset: *const usize,
    _global_work_size: *const usize,
    _local_work_size: *const usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueNDRangeKernel")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueTask(
    _command_queue: cl_command_queue,
    _kernel: cl_kernel,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueTask")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueNativeKernel(
    _command_queue: cl_command_queue,
    _user_func: Option<unsafe extern "C" fn(arg1: *mut c_void)>,
    _args: *mut c_void,
    _cb_args: usize,
    _num_mem_objects: cl_uint,
    _mem_list: *const cl_mem,
    _args_mem_loc: *mut *const c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueNativeKernel")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelArgInfo(
    _kernel: cl_kernel,
    _arg_index: cl_uint,
    _param_name: cl_kernel_arg_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetKernelArgInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetKernelExecInfo(
    _kernel: cl_kernel,
    _param_name: cl_kernel_exec_info,
    _param_value_size: usize,
    _param_value: *const c_void,
) -> cl_int {
    unsupported("clSetKernelExecInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCloneKernel(
    _source_kernel: cl_kernel,
    _errcode_ret: *mut cl_int,
) -> cl_kernel {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCloneKernel", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelSubGroupInfo(
    _kernel: cl_kernel,
    _device: cl_device_id,
    _param_name: cl_kernel_sub_group_info,
    _input_value_size: usize,
    _input_value: *const c_void,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetKernelSubGroupInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelSuggestedLocalWorkSize(
    _command_queue: cl_command_queue,
    _kernel: cl_kernel,
    _work_dim: cl_uint,
    _global_work_offset: *const usize,
    _global_work_size: *const usize,
    _suggested_local_work_size: *mut usize,
) -> cl_int {
    unsupported("clGetKernelSuggestedLocalWorkSize")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateKernelsInProgram(
    _program: cl_program,
    _num_kernels: cl_uint,
    _kernels: *mut cl_kernel,
    _num_kernels_ret: *mut cl_uint,
) -> cl_int {
    unsupported("clCreateKernelsInProgram")
}
