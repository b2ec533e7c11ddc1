//! Sampler entry points. Samplers come with images; until then each entry point reports
//! CL_INVALID_OPERATION and logs why.

use std::ffi::c_void;

use opencl_sys::*;

use crate::api::util::*;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateSampler(
    _context: cl_context,
    _normalized_coords: cl_bool,
    _addressing_mode: cl_addressing_mode,
    _filter_mode: cl_filter_mode,
    _errcode_ret: *mut cl_int,
) -> cl_sampler {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateSampler", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainSampler(_sampler: cl_sampler) -> cl_int {
    unsupported("clRetainSampler")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseSampler(_sampler: cl_sampler) -> cl_int {
    unsupported("clReleaseSampler")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetSamplerInfo(
    _sampler: cl_sampler,
    _param_name: cl_sampler_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetSamplerInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateSamplerWithProperties(
    _context: cl_context,
    _sampler_properties: *const cl_sampler_properties,
    _errcode_ret: *mut cl_int,
) -> cl_sampler {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateSamplerWithProperties", _errcode_ret) }
}
