//! Platform entry points, the ICD loader's entry and extension lookup.

use std::ffi::{CStr, c_char, c_void};

use opencl_sys::*;

use crate::api::semaphore;
use crate::api::util::*;
use crate::core::device::make_version;
use crate::core::error::{ClResult, err};
use crate::core::object::Handle;
use crate::core::platform::{self, Platform, platform};

/// Looks up a platform handle; null means vkcl's own platform, the one
/// platform this library has.
fn platform_arg(p: cl_platform_id) -> ClResult<std::sync::Arc<Handle<Platform>>> {
    if p.is_null() {
        return Ok(platform().clone());
    }
    Handle::from_raw(p)
}

fn platform_ids(
    num_entries: cl_uint,
    platforms: *mut cl_platform_id,
    num_platforms: *mut cl_uint,
) -> ClResult<()> {
    if (num_entries == 0 && !platforms.is_null())
        || (platforms.is_null() && num_platforms.is_null())
    {
        return err(CL_INVALID_VALUE);
    }
    let ids = [Handle::as_raw(platform())];
    // SAFETY: the application passes buffers of the sizes it states.
    unsafe { write_list(&ids, num_entries, platforms, num_platforms) };
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetPlatformIDs(
    num_entries: cl_uint,
    platforms: *mut cl_platform_id,
    num_platforms: *mut cl_uint,
) -> cl_int {
    api_call("clGetPlatformIDs", || {
        platform_ids(num_entries, platforms, num_platforms)
    })
}

/// The entry point ICD loaders use instead of clGetPlatformIDs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clIcdGetPlatformIDsKHR(
    num_entries: cl_uint,
    platforms: *mut cl_platform_id,
    num_platforms: *mut cl_uint,
) -> cl_int {
    api_call("clIcdGetPlatformIDsKHR", || {
        platform_ids(num_entries, platforms, num_platforms)
    })
}

fn platform_info(p: &Platform, param: cl_platform_info) -> Info {
    let extensions = p.extensions();
    match param {
        CL_PLATFORM_PROFILE => info("FULL_PROFILE"),
        CL_PLATFORM_VERSION => info(format!("OpenCL 3.0 vkcl {}", env!("CARGO_PKG_VERSION"))),
        CL_PLATFORM_NUMERIC_VERSION => info(make_version(3, 0, 0)),
        CL_PLATFORM_NAME => info(platform::NAME),
        CL_PLATFORM_VENDOR => info(platform::VENDOR),
        CL_PLATFORM_EXTENSIONS => info(extension_string(&extensions)),
        CL_PLATFORM_EXTENSIONS_WITH_VERSION => info(extension_versions(&extensions)),
        // clGetHostTimer reads a nanosecond clock.
        CL_PLATFORM_HOST_TIMER_RESOLUTION => info(1u64),
        CL_PLATFORM_ICD_SUFFIX_KHR => info(platform::ICD_SUFFIX),
        CL_PLATFORM_SEMAPHORE_TYPES_KHR => info(vec![CL_SEMAPHORE_TYPE_BINARY_KHR]),
        // What every device of the platform offers.
        CL_PLATFORM_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR => {
            info(common(p, |d| d.semaphore_import_types()))
        }
        CL_PLATFORM_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR => {
            info(common(p, |d| d.semaphore_export_types()))
        }
        CL_PLATFORM_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR => {
            info(common(p, |d| d.memory_import_types()))
        }
        _ => invalid_param(param),
    }
}

/// The values `of` gives for every device of the platform.
fn common(p: &Platform, of: impl Fn(&crate::core::device::Device) -> Vec<cl_uint>) -> Vec<cl_uint> {
    let mut devices = p.devices.iter();
    let mut all = devices.next().map(|d| of(d)).unwrap_or_default();
    for d in devices {
        let here = of(d);
        all.retain(|t| here.contains(t));
    }
    all
}

/// The space-separated form of an extension list.
pub fn extension_string(ext: &[(&str, cl_version)]) -> String {
    ext.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(" ")
}

/// The `cl_name_version` form of an extension list.
pub fn extension_versions(ext: &[(&str, cl_version)]) -> Vec<cl_name_version> {
    ext.iter().map(|(n, v)| name_version(n, *v)).collect()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetPlatformInfo(
    platform: cl_platform_id,
    param_name: cl_platform_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetPlatformInfo", || {
        let p = platform_arg(platform)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                platform_info(&p, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clUnloadCompiler() -> cl_int {
    CL_SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clUnloadPlatformCompiler(platform: cl_platform_id) -> cl_int {
    api_call("clUnloadPlatformCompiler", || {
        // A hint only; the front end holds nothing that needs unloading.
        Handle::<Platform>::from_raw(platform).map(|_| ())
    })
}

/// Extension functions offered through clGetExtensionFunctionAddress.
fn extension_function(name: &[u8]) -> *mut c_void {
    match name {
        b"clIcdGetPlatformIDsKHR" => clIcdGetPlatformIDsKHR as *mut c_void,
        b"clSetKernelArgDevicePointerEXT" => {
            crate::api::kernel::clSetKernelArgDevicePointerEXT as *mut c_void
        }
        b"clGetKernelSubGroupInfoKHR" => crate::api::ext::clGetKernelSubGroupInfoKHR as *mut c_void,
        b"clCreateSemaphoreWithPropertiesKHR" => {
            semaphore::clCreateSemaphoreWithPropertiesKHR as *mut c_void
        }
        b"clEnqueueSignalSemaphoresKHR" => semaphore::clEnqueueSignalSemaphoresKHR as *mut c_void,
        b"clEnqueueWaitSemaphoresKHR" => semaphore::clEnqueueWaitSemaphoresKHR as *mut c_void,
        b"clGetSemaphoreInfoKHR" => semaphore::clGetSemaphoreInfoKHR as *mut c_void,
        b"clGetSemaphoreHandleForTypeKHR" => {
            semaphore::clGetSemaphoreHandleForTypeKHR as *mut c_void
        }
        b"clRetainSemaphoreKHR" => semaphore::clRetainSemaphoreKHR as *mut c_void,
        b"clReleaseSemaphoreKHR" => semaphore::clReleaseSemaphoreKHR as *mut c_void,
        b"clReImportSemaphoreSyncFdKHR" => semaphore::clReImportSemaphoreSyncFdKHR as *mut c_void,
        b"clEnqueueAcquireExternalMemObjectsKHR" => {
            crate::api::memory::clEnqueueAcquireExternalMemObjectsKHR as *mut c_void
        }
        b"clEnqueueReleaseExternalMemObjectsKHR" => {
            crate::api::memory::clEnqueueReleaseExternalMemObjectsKHR as *mut c_void
        }
        _ => command_buffer_function(name),
    }
}

/// cl_khr_command_buffer's and cl_khr_command_buffer_mutable_dispatch's
/// entry points.
fn command_buffer_function(name: &[u8]) -> *mut c_void {
    use crate::api::command_buffer as cb;
    match name {
        b"clCreateCommandBufferKHR" => cb::clCreateCommandBufferKHR as *mut c_void,
        b"clFinalizeCommandBufferKHR" => cb::clFinalizeCommandBufferKHR as *mut c_void,
        b"clRetainCommandBufferKHR" => cb::clRetainCommandBufferKHR as *mut c_void,
        b"clReleaseCommandBufferKHR" => cb::clReleaseCommandBufferKHR as *mut c_void,
        b"clEnqueueCommandBufferKHR" => cb::clEnqueueCommandBufferKHR as *mut c_void,
        b"clCommandBarrierWithWaitListKHR" => cb::clCommandBarrierWithWaitListKHR as *mut c_void,
        b"clCommandCopyBufferKHR" => cb::clCommandCopyBufferKHR as *mut c_void,
        b"clCommandCopyBufferRectKHR" => cb::clCommandCopyBufferRectKHR as *mut c_void,
        b"clCommandCopyBufferToImageKHR" => cb::clCommandCopyBufferToImageKHR as *mut c_void,
        b"clCommandCopyImageKHR" => cb::clCommandCopyImageKHR as *mut c_void,
        b"clCommandCopyImageToBufferKHR" => cb::clCommandCopyImageToBufferKHR as *mut c_void,
        b"clCommandFillBufferKHR" => cb::clCommandFillBufferKHR as *mut c_void,
        b"clCommandFillImageKHR" => cb::clCommandFillImageKHR as *mut c_void,
        b"clCommandNDRangeKernelKHR" => cb::clCommandNDRangeKernelKHR as *mut c_void,
        b"clCommandSVMMemcpyKHR" => cb::clCommandSVMMemcpyKHR as *mut c_void,
        b"clCommandSVMMemFillKHR" => cb::clCommandSVMMemFillKHR as *mut c_void,
        b"clGetCommandBufferInfoKHR" => cb::clGetCommandBufferInfoKHR as *mut c_void,
        b"clUpdateMutableCommandsKHR" => cb::clUpdateMutableCommandsKHR as *mut c_void,
        b"clGetMutableCommandInfoKHR" => cb::clGetMutableCommandInfoKHR as *mut c_void,
        _ => std::ptr::null_mut(),
    }
}

fn lookup_extension_function(func_name: *const c_char) -> *mut c_void {
    if func_name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a non-null function name is a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(func_name) };
    extension_function(name.to_bytes())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetExtensionFunctionAddress(func_name: *const c_char) -> *mut c_void {
    let mut f = std::ptr::null_mut();
    api_call("clGetExtensionFunctionAddress", || {
        f = lookup_extension_function(func_name);
        Ok(())
    });
    f
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetExtensionFunctionAddressForPlatform(
    platform: cl_platform_id,
    func_name: *const c_char,
) -> *mut c_void {
    let mut f = std::ptr::null_mut();
    api_call("clGetExtensionFunctionAddressForPlatform", || {
        Handle::<Platform>::from_raw(platform)?;
        f = lookup_extension_function(func_name);
        Ok(())
    });
    f
}
