//! Entry points of extensions vkcl does not offer (OpenGL, Direct3D, DX9 media and EGL
//! sharing, device fission, sub-group queries of cl_khr_subgroups). They fill the ICD
//! dispatch table so that no slot is null; each reports CL_INVALID_OPERATION and logs why.
//! They are not exported: applications reach extension functions through
//! clGetExtensionFunctionAddress, which does not return these.

#![allow(non_snake_case)]

use std::ffi::c_void;

use opencl_sys::cl_d3d10::*;
use opencl_sys::cl_d3d11::*;
use opencl_sys::cl_dx9_media_sharing::*;
use opencl_sys::cl_egl::*;
use opencl_sys::*;

use crate::api::util::*;

pub(crate) unsafe extern "C" fn clCreateFromGLBuffer(
    _context: cl_context,
    _flags: cl_mem_flags,
    _bufobj: cl_GLuint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromGLBuffer", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromGLTexture2D(
    _context: cl_context,
    _flags: cl_mem_flags,
    _target: cl_GLenum,
    _miplevel: cl_GLint,
    _texture: cl_GLuint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromGLTexture2D", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromGLTexture3D(
    _context: cl_context,
    _flags: cl_mem_flags,
    _target: cl_GLenum,
    _miplevel: cl_GLint,
    _texture: cl_GLuint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromGLTexture3D", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromGLRenderbuffer(
    _context: cl_context,
    _flags: cl_mem_flags,
    _renderbuffer: cl_GLuint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromGLRenderbuffer", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clGetGLObjectInfo(
    _memobj: cl_mem,
    _gl_object_type: *mut cl_gl_object_type,
    _gl_object_name: *mut cl_GLuint,
) -> cl_int {
    unsupported("clGetGLObjectInfo")
}

pub(crate) unsafe extern "C" fn clGetGLTextureInfo(
    _memobj: cl_mem,
    _param_name: cl_gl_texture_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetGLTextureInfo")
}

pub(crate) unsafe extern "C" fn clEnqueueAcquireGLObjects(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueAcquireGLObjects")
}

pub(crate) unsafe extern "C" fn clEnqueueReleaseGLObjects(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueReleaseGLObjects")
}

pub(crate) unsafe extern "C" fn clGetGLContextInfoKHR(
    _properties: *const cl_context_properties,
    _param_name: cl_gl_context_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetGLContextInfoKHR")
}

pub(crate) unsafe extern "C" fn clGetDeviceIDsFromD3D10KHR(
    _platform: cl_platform_id,
    _d3d_device_source: cl_d3d10_device_source_khr,
    _d3d_object: *mut c_void,
    _d3d_device_set: cl_d3d10_device_set_khr,
    _num_entries: cl_uint,
    _devices: *mut cl_device_id,
    _num_devices: *mut cl_uint,
) -> cl_int {
    unsupported("clGetDeviceIDsFromD3D10KHR")
}

pub(crate) unsafe extern "C" fn clCreateFromD3D10BufferKHR(
    _context: cl_context,
    _flags: cl_mem_flags,
    _resource: ID3D10Buffer_ptr,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromD3D10BufferKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromD3D10Texture2DKHR(
    _context: cl_context,
    _flags: cl_mem_flags,
    _resource: ID3D10Texture2D_ptr,
    _subresource: cl_uint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromD3D10Texture2DKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromD3D10Texture3DKHR(
    _context: cl_context,
    _flags: cl_mem_flags,
    _resource: ID3D10Texture3D_ptr,
    _subresource: cl_uint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromD3D10Texture3DKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clEnqueueAcquireD3D10ObjectsKHR(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueAcquireD3D10ObjectsKHR")
}

pub(crate) unsafe extern "C" fn clEnqueueReleaseD3D10ObjectsKHR(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueReleaseD3D10ObjectsKHR")
}

pub(crate) unsafe extern "C" fn clCreateSubDevicesEXT(
    _in_device: cl_device_id,
    _properties: *const cl_device_partition_property_ext,
    _num_entries: cl_uint,
    _out_devices: *mut cl_device_id,
    _num_devices: *mut cl_uint,
) -> cl_int {
    unsupported("clCreateSubDevicesEXT")
}

pub(crate) unsafe extern "C" fn clRetainDeviceEXT(_device: cl_device_id) -> cl_int {
    unsupported("clRetainDeviceEXT")
}

pub(crate) unsafe extern "C" fn clReleaseDeviceEXT(_device: cl_device_id) -> cl_int {
    unsupported("clReleaseDeviceEXT")
}

pub(crate) unsafe extern "C" fn clCreateEventFromGLsyncKHR(
    _context: cl_context,
    _sync: cl_GLsync,
    _errcode_ret: *mut cl_int,
) -> cl_event {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateEventFromGLsyncKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromGLTexture(
    _context: cl_context,
    _flags: cl_mem_flags,
    _target: cl_GLenum,
    _miplevel: cl_GLint,
    _texture: cl_GLuint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromGLTexture", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clGetDeviceIDsFromD3D11KHR(
    _platform: cl_platform_id,
    _d3d_device_source: cl_d3d11_device_source_khr,
    _d3d_object: *mut c_void,
    _d3d_device_set: cl_d3d11_device_set_khr,
    _num_entries: cl_uint,
    _devices: *mut cl_device_id,
    _num_devices: *mut cl_uint,
) -> cl_int {
    unsupported("clGetDeviceIDsFromD3D11KHR")
}

pub(crate) unsafe extern "C" fn clCreateFromD3D11BufferKHR(
    _context: cl_context,
    _flags: cl_mem_flags,
    _resource: ID3D11Buffer_ptr,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromD3D11BufferKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromD3D11Texture2DKHR(
    _context: cl_context,
    _flags: cl_mem_flags,
    _resource: ID3D11Texture2D_ptr,
    _subresource: cl_uint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromD3D11Texture2DKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromD3D11Texture3DKHR(
    _context: cl_context,
    _flags: cl_mem_flags,
    _resource: ID3D11Texture3D_ptr,
    _subresource: cl_uint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromD3D11Texture3DKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clCreateFromDX9MediaSurfaceKHR(
    _context: cl_context,
    _flags: cl_mem_flags,
    _adapter_type: cl_dx9_media_adapter_type_khr,
    _surface_info: *mut c_void,
    _plane: cl_uint,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromDX9MediaSurfaceKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clEnqueueAcquireD3D11ObjectsKHR(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueAcquireD3D11ObjectsKHR")
}

pub(crate) unsafe extern "C" fn clEnqueueReleaseD3D11ObjectsKHR(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueReleaseD3D11ObjectsKHR")
}

pub(crate) unsafe extern "C" fn clGetDeviceIDsFromDX9MediaAdapterKHR(
    _platform: cl_platform_id,
    _num_media_adapters: cl_uint,
    _media_adapter_type: *mut cl_dx9_media_adapter_type_khr,
    _media_adapters: *mut c_void,
    _media_adapter_set: cl_dx9_media_adapter_set_khr,
    _num_entries: cl_uint,
    _devices: *mut cl_device_id,
    _num_devices: *mut cl_uint,
) -> cl_int {
    unsupported("clGetDeviceIDsFromDX9MediaAdapterKHR")
}

pub(crate) unsafe extern "C" fn clEnqueueAcquireDX9MediaSurfacesKHR(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueAcquireDX9MediaSurfacesKHR")
}

pub(crate) unsafe extern "C" fn clEnqueueReleaseDX9MediaSurfacesKHR(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueReleaseDX9MediaSurfacesKHR")
}

pub(crate) unsafe extern "C" fn clCreateFromEGLImageKHR(
    _context: cl_context,
    _egldisplay: CLeglDisplayKHR,
    _eglimage: CLeglImageKHR,
    _flags: cl_mem_flags,
    _properties: *const cl_egl_image_properties_khr,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateFromEGLImageKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clEnqueueAcquireEGLObjectsKHR(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueAcquireEGLObjectsKHR")
}

pub(crate) unsafe extern "C" fn clEnqueueReleaseEGLObjectsKHR(
    _command_queue: cl_command_queue,
    _num_objects: cl_uint,
    _mem_objects: *const cl_mem,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueReleaseEGLObjectsKHR")
}

pub(crate) unsafe extern "C" fn clCreateEventFromEGLSyncKHR(
    _context: cl_context,
    _sync: CLeglSyncKHR,
    _display: CLeglDisplayKHR,
    _errcode_ret: *mut cl_int,
) -> cl_event {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateEventFromEGLSyncKHR", _errcode_ret) }
}

pub(crate) unsafe extern "C" fn clGetKernelSubGroupInfoKHR(
    in_kernel: cl_kernel,
    in_device: cl_device_id,
    param_name: cl_kernel_sub_group_info,
    input_value_size: usize,
    input_value: *const c_void,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    crate::api::kernel::get_kernel_sub_group_info(
        "clGetKernelSubGroupInfoKHR",
        in_kernel,
        in_device,
        param_name,
        input_value_size,
        input_value,
        param_value_size,
        param_value,
        param_value_size_ret,
    )
}
