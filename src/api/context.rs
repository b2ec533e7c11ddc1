//! Context entry points.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use opencl_sys::*;

use crate::api::device::devices_of_type;
use crate::api::util::*;
use crate::core::context::{Context, ContextNotify, ContextProperties};
use crate::core::device::Device;
use crate::core::error::{ClResult, err};
use crate::core::object::{Callback, Handle};
use crate::core::platform::platform;

type NotifyArg = Option<unsafe extern "C" fn(*const c_char, *const c_void, usize, *mut c_void)>;

fn notify_callback(
    pfn_notify: NotifyArg,
    user_data: *mut c_void,
) -> ClResult<Option<Callback<ContextNotify>>> {
    match pfn_notify {
        None if !user_data.is_null() => err(CL_INVALID_VALUE),
        None => Ok(None),
        Some(func) => Ok(Some(Callback { func, user_data })),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateContext(
    properties: *const cl_context_properties,
    num_devices: cl_uint,
    devices: *const cl_device_id,
    pfn_notify: NotifyArg,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_context {
    let create = || {
        // SAFETY: the application passes a zero-terminated list or null.
        let props = unsafe { ContextProperties::parse(properties)? };
        if devices.is_null() || num_devices == 0 {
            return err(CL_INVALID_VALUE);
        }
        let notify = notify_callback(pfn_notify, user_data)?;
        // SAFETY: checked non-null; the application states the length.
        let ids = unsafe { slice_in(devices, num_devices as usize)? };
        let mut list: Vec<Arc<Handle<Device>>> = Vec::with_capacity(ids.len());
        for &id in ids {
            let d = Handle::<Device>::from_raw(id)?;
            // Duplicates in the list are ignored.
            if !list.iter().any(|x| Arc::ptr_eq(x, &d)) {
                list.push(d);
            }
        }
        Ok(Handle::into_api(Context::new(
            widened(list),
            props,
            notify,
        )?))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateContext", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateContextFromType(
    properties: *const cl_context_properties,
    device_type: cl_device_type,
    pfn_notify: NotifyArg,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_context {
    let create = || {
        // SAFETY: the application passes a zero-terminated list or null.
        let props = unsafe { ContextProperties::parse(properties)? };
        let notify = notify_callback(pfn_notify, user_data)?;
        let list = devices_of_type(platform(), device_type)?;
        Ok(Handle::into_api(Context::new(
            widened(list),
            props,
            notify,
        )?))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateContextFromType", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainContext(context: cl_context) -> cl_int {
    api_call("clRetainContext", || {
        Handle::<Context>::from_raw(context)?.retain()
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseContext(context: cl_context) -> cl_int {
    api_call("clReleaseContext", || {
        Handle::release(Handle::<Context>::from_raw(context)?)
    })
}

fn context_info(c: &Handle<Context>, param: cl_context_info) -> Info {
    match param {
        CL_CONTEXT_REFERENCE_COUNT => info(c.api_ref_count()),
        CL_CONTEXT_NUM_DEVICES => info(c.devices.len() as cl_uint),
        CL_CONTEXT_DEVICES => info(
            c.devices
                .iter()
                .map(Handle::as_raw::<c_void>)
                .collect::<Vec<_>>(),
        ),
        CL_CONTEXT_PROPERTIES => info(c.properties.clone()),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetContextInfo(
    context: cl_context,
    param_name: cl_context_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetContextInfo", || {
        let c = Handle::<Context>::from_raw(context)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                context_info(&c, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetContextDestructorCallback(
    context: cl_context,
    pfn_notify: Option<unsafe extern "C" fn(context: cl_context, user_data: *mut c_void)>,
    user_data: *mut c_void,
) -> cl_int {
    api_call("clSetContextDestructorCallback", || {
        let c = Handle::<Context>::from_raw(context)?;
        let func = pfn_notify.ok_or(crate::core::error::ClError(CL_INVALID_VALUE))?;
        c.add_destructor(Callback { func, user_data });
        Ok(())
    })
}

/// The devices of a new context: those asked for, or, with
/// `VKCL_CONTEXT_OTHER_DEVICES=1`, every other device of the platform
/// ahead of them. Memory objects then have their first copy on a device
/// the application never uses, so every command it makes moves their
/// contents between devices: programs written for one device test
/// multi-device contexts that way.
fn widened(asked: Vec<Arc<Handle<Device>>>) -> Vec<Arc<Handle<Device>>> {
    if std::env::var("VKCL_CONTEXT_OTHER_DEVICES").map_or(true, |v| v != "1") {
        return asked;
    }
    let mut all: Vec<Arc<Handle<Device>>> = platform()
        .devices
        .iter()
        .filter(|d| !asked.iter().any(|a| Arc::ptr_eq(a, d)))
        .cloned()
        .collect();
    all.extend(asked);
    all
}
