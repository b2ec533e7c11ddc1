//! Sampler entry points.

use std::ffi::c_void;

use opencl_sys::*;

use crate::api::util::*;
use crate::core::context::Context;
use crate::core::error::{ClResult, err};
use crate::core::object::Handle;
use crate::core::sampler::{Sampler, SamplerState};

fn create_sampler(
    context: cl_context,
    normalized: cl_bool,
    addressing: cl_addressing_mode,
    filter: cl_filter_mode,
    properties: Vec<cl_sampler_properties>,
) -> ClResult<cl_sampler> {
    let c = Handle::<Context>::from_raw(context)?;
    if normalized != CL_TRUE && normalized != CL_FALSE {
        return err(CL_INVALID_VALUE);
    }
    let state = SamplerState::new(normalized == CL_TRUE, addressing, filter)?;
    Ok(Handle::into_api(Sampler::new(c, state, properties)?))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateSampler(
    context: cl_context,
    normalized_coords: cl_bool,
    addressing_mode: cl_addressing_mode,
    filter_mode: cl_filter_mode,
    errcode_ret: *mut cl_int,
) -> cl_sampler {
    let create = || {
        create_sampler(
            context,
            normalized_coords,
            addressing_mode,
            filter_mode,
            Vec::new(),
        )
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateSampler", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateSamplerWithProperties(
    context: cl_context,
    sampler_properties: *const cl_sampler_properties,
    errcode_ret: *mut cl_int,
) -> cl_sampler {
    let create = || {
        Handle::<Context>::from_raw(context)?;
        // Defaults: normalized coordinates, clamp to edge, nearest.
        let mut normalized = CL_TRUE as cl_sampler_properties;
        let mut addressing = CL_ADDRESS_CLAMP as cl_sampler_properties;
        let mut filter = CL_FILTER_NEAREST as cl_sampler_properties;
        let mut raw = Vec::new();
        if !sampler_properties.is_null() {
            let mut seen = Vec::new();
            let mut p = sampler_properties;
            loop {
                // SAFETY: a zero-terminated list of pairs, per the specification.
                let name = unsafe { *p };
                raw.push(name);
                if name == 0 {
                    break;
                }
                // SAFETY: a name is followed by its value.
                let value = unsafe { *p.add(1) };
                raw.push(value);
                if seen.contains(&name) {
                    return err(CL_INVALID_VALUE);
                }
                seen.push(name);
                match name as cl_uint {
                    CL_SAMPLER_NORMALIZED_COORDS => normalized = value,
                    CL_SAMPLER_ADDRESSING_MODE => addressing = value,
                    CL_SAMPLER_FILTER_MODE => filter = value,
                    _ => return err(CL_INVALID_VALUE),
                }
                // SAFETY: moving to the next pair, inside the list.
                p = unsafe { p.add(2) };
            }
        }
        let narrow = |v: cl_sampler_properties| cl_uint::try_from(v).unwrap_or(cl_uint::MAX);
        create_sampler(
            context,
            narrow(normalized),
            narrow(addressing),
            narrow(filter),
            raw,
        )
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateSamplerWithProperties", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainSampler(sampler: cl_sampler) -> cl_int {
    api_call("clRetainSampler", || {
        Handle::<Sampler>::from_raw(sampler)?.retain()
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseSampler(sampler: cl_sampler) -> cl_int {
    api_call("clReleaseSampler", || {
        Handle::release(Handle::<Sampler>::from_raw(sampler)?)
    })
}

fn sampler_info(s: &Handle<Sampler>, param: cl_sampler_info) -> Info {
    match param {
        CL_SAMPLER_REFERENCE_COUNT => info(s.api_ref_count()),
        CL_SAMPLER_CONTEXT => info(Handle::as_raw::<c_void>(&s.context)),
        CL_SAMPLER_NORMALIZED_COORDS => info(s.state.normalized),
        CL_SAMPLER_ADDRESSING_MODE => info(s.state.addressing),
        CL_SAMPLER_FILTER_MODE => info(s.state.filter),
        CL_SAMPLER_PROPERTIES => info(s.properties.clone()),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetSamplerInfo(
    sampler: cl_sampler,
    param_name: cl_sampler_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetSamplerInfo", || {
        let s = Handle::<Sampler>::from_raw(sampler)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                sampler_info(&s, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}
