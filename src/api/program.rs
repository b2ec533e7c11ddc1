//! Program entry points. The OpenCL C and SPIR-V front end is not wired in yet
//! (CL_DEVICE_COMPILER_AVAILABLE is false): each entry point reports CL_INVALID_OPERATION
//! and logs why.

use std::ffi::{c_char, c_void};

use opencl_sys::*;

use crate::api::util::*;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateProgramWithSource(
    _context: cl_context,
    _count: cl_uint,
    _strings: *mut *const c_char,
    _lengths: *const usize,
    _errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateProgramWithSource", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateProgramWithBinary(
    _context: cl_context,
    _num_devices: cl_uint,
    _device_list: *const cl_device_id,
    _lengths: *const usize,
    _binaries: *mut *const ::core::ffi::c_uchar,
    _binary_status: *mut cl_int,
    _errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateProgramWithBinary", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainProgram(_program: cl_program) -> cl_int {
    unsupported("clRetainProgram")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseProgram(_program: cl_program) -> cl_int {
    unsupported("clReleaseProgram")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clBuildProgram(
    _program: cl_program,
    _num_devices: cl_uint,
    _device_list: *const cl_device_id,
    _options: *const c_char,
    _pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>,
    _user_data: *mut c_void,
) -> cl_int {
    unsupported("clBuildProgram")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetProgramInfo(
    _program: cl_program,
    _param_name: cl_program_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetProgramInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetProgramBuildInfo(
    _program: cl_program,
    _device: cl_device_id,
    _param_name: cl_program_build_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetProgramBuildInfo")
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

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateProgramWithBuiltInKernels(
    _context: cl_context,
    _num_devices: cl_uint,
    _device_list: *const cl_device_id,
    _kernel_names: *const c_char,
    _errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateProgramWithBuiltInKernels", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCompileProgram(
    _program: cl_program,
    _num_devices: cl_uint,
    _device_list: *const cl_device_id,
    _options: *const c_char,
    _num_input_headers: cl_uint,
    _input_headers: *const cl_program,
    _header_include_names: *mut *const c_char,
    _pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>,
    _user_data: *mut c_void,
) -> cl_int {
    unsupported("clCompileProgram")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clLinkProgram(
    _context: cl_context,
    _num_devices: cl_uint,
    _device_list: *const cl_device_id,
    _options: *const c_char,
    _num_input_programs: cl_uint,
    _input_programs: *const cl_program,
    _pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>,
    _user_data: *mut c_void,
    _errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clLinkProgram", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateProgramWithIL(
    _context: cl_context,
    _il: *const c_void,
    _length: usize,
    _errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateProgramWithIL", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetProgramReleaseCallback(
    _program: cl_program,
    _pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>,
    _user_data: *mut c_void,
) -> cl_int {
    unsupported("clSetProgramReleaseCallback")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetProgramSpecializationConstant(
    _program: cl_program,
    _spec_id: cl_uint,
    _spec_size: usize,
    _spec_value: *const c_void,
) -> cl_int {
    unsupported("clSetProgramSpecializationConstant")
}
