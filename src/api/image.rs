//! Image entry points. Images are not offered yet (CL_DEVICE_IMAGE_SUPPORT is false):
//! each entry point reports CL_INVALID_OPERATION and logs why.

use std::ffi::c_void;

use opencl_sys::*;

use crate::api::util::*;
use crate::core::context::Context;
use crate::core::error::err;
use crate::core::object::Handle;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateImage2D(
    _context: cl_context,
    _flags: cl_mem_flags,
    _image_format: *const cl_image_format,
    _image_width: usize,
    _image_height: usize,
    _image_row_pitch: usize,
    _host_ptr: *mut c_void,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateImage2D", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateImage3D(
    _context: cl_context,
    _flags: cl_mem_flags,
    _image_format: *const cl_image_format,
    _image_width: usize,
    _image_height: usize,
    _image_depth: usize,
    _image_row_pitch: usize,
    _image_slice_pitch: usize,
    _host_ptr: *mut c_void,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateImage3D", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetSupportedImageFormats(
    context: cl_context,
    flags: cl_mem_flags,
    image_type: cl_mem_object_type,
    num_entries: cl_uint,
    image_formats: *mut cl_image_format,
    num_image_formats: *mut cl_uint,
) -> cl_int {
    api_call("clGetSupportedImageFormats", || {
        Handle::<Context>::from_raw(context)?;
        let known_flags = CL_MEM_READ_WRITE
            | CL_MEM_WRITE_ONLY
            | CL_MEM_READ_ONLY
            | CL_MEM_KERNEL_READ_AND_WRITE
            | CL_MEM_USE_HOST_PTR
            | CL_MEM_ALLOC_HOST_PTR
            | CL_MEM_COPY_HOST_PTR
            | CL_MEM_HOST_WRITE_ONLY
            | CL_MEM_HOST_READ_ONLY
            | CL_MEM_HOST_NO_ACCESS;
        let image_types = [
            CL_MEM_OBJECT_IMAGE1D,
            CL_MEM_OBJECT_IMAGE1D_ARRAY,
            CL_MEM_OBJECT_IMAGE1D_BUFFER,
            CL_MEM_OBJECT_IMAGE2D,
            CL_MEM_OBJECT_IMAGE2D_ARRAY,
            CL_MEM_OBJECT_IMAGE3D,
        ];
        if flags & !known_flags != 0 || !image_types.contains(&image_type) {
            return err(CL_INVALID_VALUE);
        }
        if num_entries == 0 && !image_formats.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // Images are not offered yet (CL_DEVICE_IMAGE_SUPPORT is false):
        // the list of supported formats is empty.
        // SAFETY: null or writable, per the specification.
        unsafe { write_out(num_image_formats, 0) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetImageInfo(
    _image: cl_mem,
    _param_name: cl_image_info,
    _param_value_size: usize,
    _param_value: *mut c_void,
    _param_value_size_ret: *mut usize,
) -> cl_int {
    unsupported("clGetImageInfo")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueReadImage(
    _command_queue: cl_command_queue,
    _image: cl_mem,
    _blocking_read: cl_bool,
    _origin: *const usize,
    _region: *const usize,
    _row_pitch: usize,
    _slice_pitch: usize,
    _ptr: *mut c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueReadImage")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueWriteImage(
    _command_queue: cl_command_queue,
    _image: cl_mem,
    _blocking_write: cl_bool,
    _origin: *const usize,
    _region: *const usize,
    _input_row_pitch: usize,
    _input_slice_pitch: usize,
    _ptr: *const c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueWriteImage")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyImage(
    _command_queue: cl_command_queue,
    _src_image: cl_mem,
    _dst_image: cl_mem,
    _src_origin: *const usize,
    _dst_origin: *const usize,
    _region: *const usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueCopyImage")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyImageToBuffer(
    _command_queue: cl_command_queue,
    _src_image: cl_mem,
    _dst_buffer: cl_mem,
    _src_origin: *const usize,
    _region: *const usize,
    _dst_offset: usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueCopyImageToBuffer")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyBufferToImage(
    _command_queue: cl_command_queue,
    _src_buffer: cl_mem,
    _dst_image: cl_mem,
    _src_offset: usize,
    _dst_origin: *const usize,
    _region: *const usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueCopyBufferToImage")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMapImage(
    _command_queue: cl_command_queue,
    _image: cl_mem,
    _blocking_map: cl_bool,
    _map_flags: cl_map_flags,
    _origin: *const usize,
    _region: *const usize,
    _image_row_pitch: *mut usize,
    _image_slice_pitch: *mut usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
    _errcode_ret: *mut cl_int,
) -> *mut c_void {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clEnqueueMapImage", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateImage(
    _context: cl_context,
    _flags: cl_mem_flags,
    _image_format: *const cl_image_format,
    _image_desc: *const cl_image_desc,
    _host_ptr: *mut c_void,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateImage", _errcode_ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueFillImage(
    _command_queue: cl_command_queue,
    _image: cl_mem,
    _fill_color: *const c_void,
    _origin: *const usize,
    _region: *const usize,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueFillImage")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateImageWithProperties(
    _context: cl_context,
    _properties: *const cl_mem_properties,
    _flags: cl_mem_flags,
    _image_format: *const cl_image_format,
    _image_desc: *const cl_image_desc,
    _host_ptr: *mut c_void,
    _errcode_ret: *mut cl_int,
) -> cl_mem {
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { unsupported_obj("clCreateImageWithProperties", _errcode_ret) }
}
