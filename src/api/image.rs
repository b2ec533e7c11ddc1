//! Image entry points: creation, format and image queries, and every image
//! transfer. Images work as host-side objects and in transfers; whether
//! kernels can use them is what CL_DEVICE_IMAGE_SUPPORT says.

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::memory::{ACCESS_FLAGS, HOST_PTR_FLAGS, Plan, Target, check_mem_flags};
use crate::api::util::*;
use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::core::event::Event;
use crate::core::format;
use crate::core::image::{HostLayout, Image, ImageDesc, work};
use crate::core::memory::{Buffer, HostPtr};
use crate::core::object::Handle;
use crate::core::queue::Queue;

const IMAGE_TYPES: [cl_mem_object_type; 6] = [
    CL_MEM_OBJECT_IMAGE1D,
    CL_MEM_OBJECT_IMAGE1D_ARRAY,
    CL_MEM_OBJECT_IMAGE1D_BUFFER,
    CL_MEM_OBJECT_IMAGE2D,
    CL_MEM_OBJECT_IMAGE2D_ARRAY,
    CL_MEM_OBJECT_IMAGE3D,
];

/// Checks image flags: those of buffers, and CL_MEM_KERNEL_READ_AND_WRITE.
/// Returns them with CL_MEM_READ_WRITE filled in when no access is given.
fn image_flags(flags: cl_mem_flags) -> ClResult<cl_mem_flags> {
    check_mem_flags(flags & !CL_MEM_KERNEL_READ_AND_WRITE)?;
    if flags & ACCESS_FLAGS == 0 {
        Ok(flags | CL_MEM_READ_WRITE)
    } else {
        Ok(flags)
    }
}

/// The checks and pitches of clCreateImage*, then the image.
fn create_image(
    context: cl_context,
    properties: Option<*const cl_mem_properties>,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
) -> ClResult<cl_mem> {
    let c = Handle::<Context>::from_raw(context)?;
    // The only image properties: memory to import (and its devices).
    let (props, import) = crate::api::memory::mem_properties(&c, properties, false)?;
    let given_flags = flags;
    let flags = image_flags(flags)?;
    if image_format.is_null() {
        return err(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    }
    // SAFETY: non-null, and the application passes a cl_image_format.
    let format = unsafe { *image_format };
    let elem = format::element_size(&format).ok_or(ClError(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR))?;
    if image_desc.is_null() {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    // SAFETY: non-null, and the application passes a cl_image_desc.
    let d = unsafe { &*image_desc };
    let ty = d.image_type;
    if !IMAGE_TYPES.contains(&ty) || d.num_mip_levels != 0 || d.num_samples != 0 {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let buffer = d.buffer;
    if let Some(fd) = import {
        return imported_image(&c, props, flags, format, elem, d, host_ptr, fd);
    }
    if ty == CL_MEM_OBJECT_IMAGE1D_BUFFER {
        return image_buffer(&c, props, given_flags, format, elem, d, host_ptr);
    }
    if !buffer.is_null() {
        // Only 1D image buffers and 2D images may be made from another
        // memory object.
        return match crate::api::memory::Mem::from_raw(buffer) {
            _ if ty != CL_MEM_OBJECT_IMAGE2D => err(CL_INVALID_IMAGE_DESCRIPTOR),
            Ok(crate::api::memory::Mem::Image(i)) => {
                image_from_image(&c, i, props, given_flags, format, d, host_ptr)
            }
            _ => image_buffer(&c, props, given_flags, format, elem, d, host_ptr),
        };
    }
    let mut desc = sized(&c, d, elem)?;
    let wants_ptr = flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0;
    if wants_ptr == host_ptr.is_null() {
        return err(CL_INVALID_HOST_PTR);
    }
    // Pitches: given only with a host pointer, at least the packed size
    // and in whole elements (rows for the slice pitch).
    let row = desc.width * elem;
    if host_ptr.is_null() && (d.image_row_pitch != 0 || d.image_slice_pitch != 0) {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let (row_pitch, slice_pitch) = pitches(&desc, d, elem)?;
    let packed_slice = match ty {
        CL_MEM_OBJECT_IMAGE1D_ARRAY => row,
        CL_MEM_OBJECT_IMAGE2D_ARRAY | CL_MEM_OBJECT_IMAGE3D => row * desc.height,
        _ => 0,
    };
    let uses_host = flags & CL_MEM_USE_HOST_PTR != 0;
    (desc.row_pitch, desc.slice_pitch) = if uses_host {
        (row_pitch, slice_pitch)
    } else {
        (row, packed_slice)
    };
    let entry = offered(&c.devices, &format, |d| d.image_formats(flags))
        .filter(|e| format::order_allowed(e.order, ty))
        .ok_or(ClError(CL_IMAGE_FORMAT_NOT_SUPPORTED))?;
    let host = (!host_ptr.is_null()).then(|| {
        let layout = if desc.rows_are_slices() {
            HostLayout {
                y_stride: slice_pitch,
                z_stride: 0,
            }
        } else {
            HostLayout {
                y_stride: row_pitch,
                z_stride: slice_pitch,
            }
        };
        (HostPtr(host_ptr as usize), layout)
    });
    Ok(Handle::into_api(Image::new(
        c, flags, format, entry, desc, host, props,
    )?))
}

/// The size of an image of type `d.image_type` (not made from another
/// memory object) that `d` describes, its pitches left 0: every size it
/// has is non-zero (CL_INVALID_IMAGE_DESCRIPTOR) and within every device's
/// limits (CL_INVALID_IMAGE_SIZE).
fn sized(c: &Context, d: &cl_image_desc, elem: usize) -> ClResult<ImageDesc> {
    let ty = d.image_type;
    let arrayed = matches!(
        ty,
        CL_MEM_OBJECT_IMAGE1D_ARRAY | CL_MEM_OBJECT_IMAGE2D_ARRAY
    );
    let has_height = matches!(
        ty,
        CL_MEM_OBJECT_IMAGE2D | CL_MEM_OBJECT_IMAGE2D_ARRAY | CL_MEM_OBJECT_IMAGE3D
    );
    let has_depth = ty == CL_MEM_OBJECT_IMAGE3D;
    if d.image_width == 0
        || (has_height && d.image_height == 0)
        || (has_depth && d.image_depth == 0)
        || (arrayed && d.image_array_size == 0)
    {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let desc = ImageDesc {
        image_type: ty,
        width: d.image_width,
        height: if has_height { d.image_height } else { 0 },
        depth: if has_depth { d.image_depth } else { 0 },
        array_size: if arrayed { d.image_array_size } else { 0 },
        row_pitch: 0,
        slice_pitch: 0,
    };
    for dev in &c.devices {
        let l = dev.image_limits();
        let [w, h, z] = desc.dims();
        let fits = match ty {
            CL_MEM_OBJECT_IMAGE1D => w <= l.width_1d,
            CL_MEM_OBJECT_IMAGE1D_ARRAY => w <= l.width_1d && h <= l.layers,
            CL_MEM_OBJECT_IMAGE2D => w <= l.side_2d && h <= l.side_2d,
            CL_MEM_OBJECT_IMAGE2D_ARRAY => w <= l.side_2d && h <= l.side_2d && z <= l.layers,
            _ => w <= l.side_3d && h <= l.side_3d && z <= l.side_3d,
        };
        let bytes = (w as u64)
            .saturating_mul(h as u64)
            .saturating_mul(z as u64)
            .saturating_mul(elem as u64);
        if !fits || bytes > dev.max_mem_alloc_size() {
            return err(CL_INVALID_IMAGE_SIZE);
        }
    }
    Ok(desc)
}

/// The row and slice pitches `d` gives an image of `desc`'s type and size
/// (the packed ones where 0; no slice pitch for images of one slice): rows
/// at least a row of elements and whole elements apart, slices (layers) at
/// least a slice of rows and whole rows apart; CL_INVALID_IMAGE_DESCRIPTOR
/// otherwise.
fn pitches(desc: &ImageDesc, d: &cl_image_desc, elem: usize) -> ClResult<(usize, usize)> {
    let row = desc.width * elem;
    let row_pitch = if d.image_row_pitch == 0 {
        row
    } else {
        d.image_row_pitch
    };
    if row_pitch < row || row_pitch % elem != 0 {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let slice_min = match desc.image_type {
        CL_MEM_OBJECT_IMAGE1D_ARRAY => row_pitch,
        CL_MEM_OBJECT_IMAGE2D_ARRAY | CL_MEM_OBJECT_IMAGE3D => {
            row_pitch.saturating_mul(desc.height)
        }
        _ => 0,
    };
    let slice_pitch = if slice_min == 0 {
        0
    } else if d.image_slice_pitch == 0 {
        slice_min
    } else {
        d.image_slice_pitch
    };
    if slice_pitch < slice_min || (slice_min != 0 && slice_pitch % row_pitch != 0) {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    Ok((row_pitch, slice_pitch))
}

/// The table entry of `format` where every device offers it among
/// `formats` (the formats it offers for the image's flags).
fn offered(
    devices: &[Arc<Handle<Device>>],
    format: &cl_image_format,
    formats: impl Fn(&Device) -> Vec<format::FormatEntry>,
) -> Option<format::FormatEntry> {
    format::lookup(format).filter(|e| {
        devices.iter().all(|dev| {
            formats(dev)
                .iter()
                .any(|s| s.order == e.order && s.data_type == e.data_type)
        })
    })
}

/// The flags of an image made from another memory object whose flags are
/// `parent`: those given, which may not ask for host memory nor for access
/// the parent does not allow, and the parent's where none is given.
fn inherit_flags(parent: cl_mem_flags, flags: cl_mem_flags) -> ClResult<cl_mem_flags> {
    check_mem_flags(flags & !CL_MEM_KERNEL_READ_AND_WRITE)?;
    let host_memory = CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR;
    if flags & host_memory != 0 {
        return err(CL_INVALID_VALUE);
    }
    // Access the parent does not allow cannot be given to the image.
    let access = flags & ACCESS_FLAGS;
    let refused = match parent & ACCESS_FLAGS {
        CL_MEM_WRITE_ONLY => CL_MEM_READ_WRITE | CL_MEM_READ_ONLY,
        CL_MEM_READ_ONLY => CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY,
        _ => 0,
    };
    let host = CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS;
    let host_access = flags & host;
    let host_refused = match parent & host {
        CL_MEM_HOST_WRITE_ONLY => CL_MEM_HOST_READ_ONLY,
        CL_MEM_HOST_READ_ONLY => CL_MEM_HOST_WRITE_ONLY,
        CL_MEM_HOST_NO_ACCESS => CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY,
        _ => 0,
    };
    if access & refused != 0 || host_access & host_refused != 0 {
        return err(CL_INVALID_VALUE);
    }
    let mut flags = flags;
    if access == 0 {
        flags |= parent & ACCESS_FLAGS;
    }
    if host_access == 0 {
        flags |= parent & host;
    }
    flags |= parent & host_memory;
    if flags & ACCESS_FLAGS == 0 {
        flags |= CL_MEM_READ_WRITE;
    }
    Ok(flags)
}

/// clCreateImage of a 2D image from another 2D image: the same texels,
/// of the same size, in a format that differs at most in its channel
/// order, as the specification's table of compatible orders allows.
fn image_from_image(
    c: &Arc<Handle<Context>>,
    source: Arc<Handle<Image>>,
    props: Vec<cl_mem_properties>,
    flags: cl_mem_flags,
    format: cl_image_format,
    d: &cl_image_desc,
    host_ptr: *mut c_void,
) -> ClResult<cl_mem> {
    let s = &source.desc;
    if !Arc::ptr_eq(&source.context, c) || s.image_type != CL_MEM_OBJECT_IMAGE2D {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    // Every size must be the source's (a row pitch may be left out).
    if d.image_width != s.width
        || d.image_height != s.height
        || (d.image_row_pitch != 0 && d.image_row_pitch != s.row_pitch)
        || d.image_depth > 1
        || d.image_array_size > 1
        || d.image_slice_pitch != 0
    {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    if !format::may_view_as(&source.format, &format) {
        return err(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    }
    let flags = inherit_flags(source.flags, flags)?;
    if !host_ptr.is_null() {
        return err(CL_INVALID_HOST_PTR);
    }
    let entry = offered(&c.devices, &format, |d| d.image_formats(flags))
        .ok_or(ClError(CL_IMAGE_FORMAT_NOT_SUPPORTED))?;
    Ok(Handle::into_api(Image::new_view(
        source, flags, format, entry, props,
    )?))
}

/// clCreateImage of a 1D image buffer (its texels the start of the
/// buffer's bytes) or of a 2D image from a buffer (its rows `row_pitch`
/// bytes apart in the buffer). Flags not given are the buffer's.
fn image_buffer(
    c: &Arc<Handle<Context>>,
    props: Vec<cl_mem_properties>,
    flags: cl_mem_flags,
    format: cl_image_format,
    elem: usize,
    d: &cl_image_desc,
    host_ptr: *mut c_void,
) -> ClResult<cl_mem> {
    let b = match crate::api::memory::Mem::from_raw(d.buffer) {
        Ok(crate::api::memory::Mem::Buffer(b)) => b,
        _ => return err(CL_INVALID_IMAGE_DESCRIPTOR),
    };
    if !Arc::ptr_eq(&b.context, c) {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let flags = inherit_flags(b.flags, flags)?;
    if !host_ptr.is_null() {
        return err(CL_INVALID_HOST_PTR);
    }
    if d.image_type == CL_MEM_OBJECT_IMAGE2D {
        return image_2d_from_buffer(b, props, flags, format, elem, d);
    }
    // The texels are packed; a row pitch, if given, must cover them (it
    // means nothing more for a single row).
    let bytes = d.image_width.checked_mul(elem);
    let pitch = d.image_row_pitch;
    if d.image_width == 0
        || (pitch != 0 && (bytes.is_none_or(|b| pitch < b) || pitch % elem != 0))
        || d.image_slice_pitch != 0
    {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    if bytes.is_none_or(|n| n > b.size)
        || c.devices
            .iter()
            .any(|dev| d.image_width > dev.max_texel_elements())
    {
        return err(CL_INVALID_IMAGE_SIZE);
    }
    let entry = offered(&c.devices, &format, |d| d.texel_formats(flags))
        .ok_or(ClError(CL_IMAGE_FORMAT_NOT_SUPPORTED))?;
    // Texel views start at aligned offsets; sub-buffers start at multiples
    // of CL_DEVICE_MEM_BASE_ADDR_ALIGN, which is at least that alignment.
    if c.devices
        .iter()
        .any(|dev| b.offset as u64 % dev.texel_offset_alignment() != 0)
    {
        log::warn!(target: "vkcl::api", "a 1D image buffer over memory not aligned for texel views");
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let desc = ImageDesc {
        image_type: CL_MEM_OBJECT_IMAGE1D_BUFFER,
        width: d.image_width,
        height: 0,
        depth: 0,
        array_size: 0,
        row_pitch: if pitch == 0 {
            d.image_width * elem
        } else {
            pitch
        },
        slice_pitch: 0,
    };
    Ok(Handle::into_api(Image::new_texels(
        b, flags, format, entry, desc, props,
    )?))
}

/// A 1D or 2D image on memory another API exported (cl_khr_external_memory): a
/// linear image (CL_DEVICE_EXTERNAL_MEMORY_IMPORT_ASSUME_LINEAR_IMAGES_HANDLE_TYPES_KHR),
/// its rows `image_row_pitch` bytes apart from the memory's first byte, as
/// Vulkan lays out a linear image's one subresource. The memory is
/// imported as a buffer no application sees, and the image is made from
/// it as images from buffers are; where no memory type a buffer may use
/// takes the descriptor, the image is a linear Vulkan image of its own on
/// that memory, where the device makes one for the format
/// (`linear_import`).
#[allow(clippy::too_many_arguments)]
fn imported_image(
    c: &Arc<Handle<Context>>,
    props: Vec<cl_mem_properties>,
    flags: cl_mem_flags,
    format: cl_image_format,
    elem: usize,
    d: &cl_image_desc,
    host_ptr: *mut c_void,
    fd: i32,
) -> ClResult<cl_mem> {
    // The memory is the other API's: nothing of the host's goes in.
    if !host_ptr.is_null() || flags & HOST_PTR_FLAGS != 0 {
        return err(CL_INVALID_VALUE);
    }
    if !d.buffer.is_null() {
        log::warn!(target: "vkcl::api", "an image on imported memory is made from no memory object");
        return err(CL_INVALID_OPERATION);
    }
    if matches!(
        d.image_type,
        CL_MEM_OBJECT_IMAGE1D_ARRAY | CL_MEM_OBJECT_IMAGE2D_ARRAY | CL_MEM_OBJECT_IMAGE3D
    ) {
        return imported_slices(c, props, flags, format, elem, d, fd);
    }
    let one_row = d.image_type == CL_MEM_OBJECT_IMAGE1D;
    if !(one_row || d.image_type == CL_MEM_OBJECT_IMAGE2D) {
        log::warn!(target: "vkcl::api", "1D image buffers are not imported from external memory");
        return err(CL_INVALID_OPERATION);
    }
    let row = d.image_width.saturating_mul(elem);
    let pitch = if d.image_row_pitch == 0 {
        row
    } else {
        d.image_row_pitch
    };
    let rows = if one_row { 1 } else { d.image_height };
    let texels = pitch
        .checked_mul(rows)
        .filter(|&n| n > 0)
        .ok_or(ClError(CL_INVALID_IMAGE_DESCRIPTOR))?;
    // A slice pitch, which Vulkan reports for any linear image, may only
    // say how much memory the image takes.
    if d.image_slice_pitch != 0 && d.image_slice_pitch < texels {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let size = texels.max(d.image_slice_pitch);
    // The memory as a buffer, or, where no memory type a buffer may use
    // takes it, as a linear Vulkan image of its own (first, with
    // VKCL_LINEAR_IMPORT=1).
    if std::env::var("VKCL_LINEAR_IMPORT").as_deref() == Ok("1")
        && let Some(image) = linear_import(c, &props, flags, format, d, pitch, fd)?
    {
        return Ok(image);
    }
    // Ok: the buffer (or why there is none); Err: the image made instead
    // (or why there is none). A refused descriptor is CL_INVALID_VALUE, or
    // CL_MEM_OBJECT_ALLOCATION_FAILURE where the driver calls it an
    // allocation failure (NVIDIA).
    let import = || match Buffer::import(c.clone(), flags, size, fd, props.clone()) {
        Err(ClError(e @ (CL_INVALID_VALUE | CL_MEM_OBJECT_ALLOCATION_FAILURE))) => {
            Err(linear_import(c, &props, flags, format, d, pitch, fd)
                .and_then(|image| image.ok_or(ClError(e))))
        }
        r => Ok(r),
    };
    if !one_row {
        let memory = match import() {
            Ok(r) => r?,
            Err(image) => return image,
        };
        let rows_only = cl_image_desc {
            image_slice_pitch: 0,
            ..*d
        };
        return image_2d_from_buffer(memory, props, flags, format, elem, &rows_only);
    }
    // A 1D image: one row, kept like a 2D image's rows.
    if pitch < row {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    if c.devices
        .iter()
        .any(|dev| !dev.image_support() || d.image_width > dev.image_limits().width_1d)
    {
        return err(CL_INVALID_IMAGE_SIZE);
    }
    let entry = offered(&c.devices, &format, |d| d.image_formats(flags))
        .ok_or(ClError(CL_IMAGE_FORMAT_NOT_SUPPORTED))?;
    let memory = match import() {
        Ok(r) => r?,
        Err(image) => return image,
    };
    let shape = (CL_MEM_OBJECT_IMAGE1D, d.image_width, 0, pitch);
    rows_image(memory, props, flags, format, entry, shape)
}

/// For [`imported_image`]: a 1D or 2D image array or a 3D image on
/// imported memory, as Vulkan lays out a linear image of that shape: rows
/// `image_row_pitch` bytes apart from the first byte, in slices (layers)
/// `image_slice_pitch` bytes apart, a whole number of rows (each pitch
/// the packed one where 0). The memory is imported as a buffer no
/// application sees, which the image's rows are in.
fn imported_slices(
    c: &Arc<Handle<Context>>,
    props: Vec<cl_mem_properties>,
    flags: cl_mem_flags,
    format: cl_image_format,
    elem: usize,
    d: &cl_image_desc,
    fd: i32,
) -> ClResult<cl_mem> {
    let mut desc = sized(c, d, elem)?;
    let [_, h, z] = desc.dims();
    let (row_pitch, slice_pitch) = pitches(&desc, d, elem)?;
    // How many slices (layers).
    let slices = if desc.rows_are_slices() { h } else { z };
    let size = slice_pitch
        .checked_mul(slices)
        .ok_or(ClError(CL_INVALID_IMAGE_SIZE))?;
    let entry = offered(&c.devices, &format, |d| d.image_formats(flags))
        .filter(|e| format::order_allowed(e.order, desc.image_type))
        .ok_or(ClError(CL_IMAGE_FORMAT_NOT_SUPPORTED))?;
    (desc.row_pitch, desc.slice_pitch) = (row_pitch, slice_pitch);
    let memory = Buffer::import(c.clone(), flags, size, fd, props.clone())?;
    Ok(Handle::into_api(Image::new_rows(
        memory, flags, format, entry, desc, props,
    )?))
}

/// For [`imported_image`], when no memory type a buffer may use took the
/// descriptor: the image as a linear Vulkan image of its own on the
/// imported memory, where everything about it is valid and the device
/// makes such images. None otherwise (`fd` still open).
fn linear_import(
    c: &Arc<Handle<Context>>,
    props: &[cl_mem_properties],
    flags: cl_mem_flags,
    format: cl_image_format,
    d: &cl_image_desc,
    pitch: usize,
    fd: i32,
) -> ClResult<Option<cl_mem>> {
    let [device] = &c.devices[..] else {
        return Ok(None);
    };
    let one_row = d.image_type == CL_MEM_OBJECT_IMAGE1D;
    let elem = format::element_size(&format).unwrap_or(0);
    let (w, h) = (d.image_width, if one_row { 1 } else { d.image_height });
    let limits = device.image_limits();
    let fits = if one_row {
        w <= limits.width_1d
    } else {
        w <= limits.side_2d && h <= limits.side_2d
    };
    let usable = device.info.external.memory_import
        && device.image_support()
        && crate::vk::external::is_open_fd(fd)
        && w > 0
        && h > 0
        && fits
        && elem > 0
        && pitch >= w * elem
        && pitch % elem == 0;
    if !usable {
        return Ok(None);
    }
    let Some(entry) = offered(&c.devices, &format, |d| d.image_formats(flags)) else {
        return Ok(None);
    };
    let desc = ImageDesc {
        image_type: d.image_type,
        width: w,
        height: if one_row { 0 } else { h },
        depth: 0,
        array_size: 0,
        row_pitch: pitch,
        slice_pitch: 0,
    };
    let image = Image::import_linear(c.clone(), flags, format, entry, desc, fd, props.to_vec())?;
    Ok(image.map(Handle::into_api))
}

/// An image whose texels are rows of `b`, `pitch` bytes apart from its
/// first byte, the sizes, layout and format checked: `(type, width,
/// height, pitch)` (height 0 for 1D images).
fn rows_image(
    b: Arc<Handle<Buffer>>,
    props: Vec<cl_mem_properties>,
    flags: cl_mem_flags,
    format: cl_image_format,
    entry: format::FormatEntry,
    (image_type, width, height, pitch): (cl_mem_object_type, usize, usize, usize),
) -> ClResult<cl_mem> {
    let desc = ImageDesc {
        image_type,
        width,
        height,
        depth: 0,
        array_size: 0,
        row_pitch: pitch,
        slice_pitch: 0,
    };
    Ok(Handle::into_api(Image::new_rows(
        b, flags, format, entry, desc, props,
    )?))
}

/// The rest of clCreateImage for a 2D image from a buffer, the flags
/// settled: its rows, `row_pitch` bytes apart (a multiple of
/// CL_DEVICE_IMAGE_PITCH_ALIGNMENT texels), must lie in the buffer.
fn image_2d_from_buffer(
    b: Arc<Handle<Buffer>>,
    props: Vec<cl_mem_properties>,
    flags: cl_mem_flags,
    format: cl_image_format,
    elem: usize,
    d: &cl_image_desc,
) -> ClResult<cl_mem> {
    let (w, h) = (d.image_width, d.image_height);
    if w == 0 || h == 0 || d.image_slice_pitch != 0 {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let devices = &b.context.devices;
    if devices.iter().any(|dev| {
        let side = dev.image_limits().side_2d;
        !dev.image_support() || w > side || h > side
    }) {
        return err(CL_INVALID_IMAGE_SIZE);
    }
    let row = w * elem;
    let pitch = if d.image_row_pitch == 0 {
        row
    } else {
        d.image_row_pitch
    };
    let align = elem * crate::core::device::IMAGE_PITCH_ALIGNMENT as usize;
    if pitch < row || pitch % align != 0 {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    if pitch.checked_mul(h).is_none_or(|n| n > b.size) {
        return err(CL_INVALID_IMAGE_SIZE);
    }
    // The rows start at the buffer's first byte: an address that must be
    // a multiple of CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT texels.
    let base = crate::core::device::IMAGE_BASE_ADDRESS_ALIGNMENT as usize * elem;
    let host_misaligned = b
        .host_ptr
        .is_some_and(|p| b.flags & CL_MEM_USE_HOST_PTR != 0 && p.0 % base != 0);
    if b.offset % base != 0 || host_misaligned {
        return err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let entry = offered(devices, &format, |d| d.image_formats(flags))
        .ok_or(ClError(CL_IMAGE_FORMAT_NOT_SUPPORTED))?;
    let shape = (CL_MEM_OBJECT_IMAGE2D, w, h, pitch);
    rows_image(b, props, flags, format, entry, shape)
}

/// A cl_image_desc for the OpenCL 1.1 entry points.
fn legacy_desc(
    image_type: cl_mem_object_type,
    size: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
) -> cl_image_desc {
    // SAFETY: cl_image_desc is plain data; all zeroes is a valid value.
    let mut d: cl_image_desc = unsafe { std::mem::zeroed() };
    d.image_type = image_type;
    d.image_width = size[0];
    d.image_height = size[1];
    d.image_depth = size[2];
    d.image_row_pitch = row_pitch;
    d.image_slice_pitch = slice_pitch;
    d
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateImage2D(
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_width: usize,
    image_height: usize,
    image_row_pitch: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let create = || {
        Handle::<Context>::from_raw(context)?;
        if image_width == 0 || image_height == 0 {
            return err(CL_INVALID_IMAGE_SIZE);
        }
        let size = [image_width, image_height, 0];
        let d = legacy_desc(CL_MEM_OBJECT_IMAGE2D, size, image_row_pitch, 0);
        create_image(context, None, flags, image_format, &d, host_ptr)
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateImage2D", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateImage3D(
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_width: usize,
    image_height: usize,
    image_depth: usize,
    image_row_pitch: usize,
    image_slice_pitch: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let create = || {
        Handle::<Context>::from_raw(context)?;
        if image_width == 0 || image_height == 0 || image_depth <= 1 {
            return err(CL_INVALID_IMAGE_SIZE);
        }
        let size = [image_width, image_height, image_depth];
        let d = legacy_desc(
            CL_MEM_OBJECT_IMAGE3D,
            size,
            image_row_pitch,
            image_slice_pitch,
        );
        create_image(context, None, flags, image_format, &d, host_ptr)
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateImage3D", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateImage(
    context: cl_context,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let create = || create_image(context, None, flags, image_format, image_desc, host_ptr);
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateImage", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateImageWithProperties(
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    image_format: *const cl_image_format,
    image_desc: *const cl_image_desc,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let create = || {
        create_image(
            context,
            Some(properties),
            flags,
            image_format,
            image_desc,
            host_ptr,
        )
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateImageWithProperties", errcode_ret, create) }
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
        let c = Handle::<Context>::from_raw(context)?;
        let flags = image_flags(flags)?;
        if !IMAGE_TYPES.contains(&image_type) {
            return err(CL_INVALID_VALUE);
        }
        if num_entries == 0 && !image_formats.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // Formats every device of the context supports: texel buffer
        // formats for 1D image buffers.
        let mut list: Vec<cl_image_format> = Vec::new();
        let per_device: Vec<_> = c
            .devices
            .iter()
            .map(|d| {
                if image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER {
                    d.texel_formats(flags)
                } else {
                    d.image_formats(flags)
                }
            })
            .collect();
        for e in per_device.first().into_iter().flatten() {
            if !format::order_allowed(e.order, image_type) {
                continue;
            }
            if per_device.iter().all(|l| {
                l.iter()
                    .any(|x| x.order == e.order && x.data_type == e.data_type)
            }) {
                list.push(cl_image_format {
                    image_channel_order: e.order,
                    image_channel_data_type: e.data_type,
                });
            }
        }
        // SAFETY: null or valid for num_entries writes, per the specification.
        unsafe { write_list(&list, num_entries, image_formats, num_image_formats) };
        Ok(())
    })
}

fn image_info(i: &Image, param: cl_image_info) -> Info {
    let d = &i.desc;
    match param {
        CL_IMAGE_FORMAT => info([
            i.format.image_channel_order,
            i.format.image_channel_data_type,
        ]),
        CL_IMAGE_ELEMENT_SIZE => info(i.element_size),
        CL_IMAGE_ROW_PITCH => info(d.row_pitch),
        CL_IMAGE_SLICE_PITCH => info(d.slice_pitch),
        CL_IMAGE_WIDTH => info(d.width),
        CL_IMAGE_HEIGHT => info(d.height),
        CL_IMAGE_DEPTH => info(d.depth),
        CL_IMAGE_ARRAY_SIZE => info(d.array_size),
        CL_IMAGE_BUFFER => info(
            i.buffer()
                .map_or(std::ptr::null_mut(), Handle::as_raw::<c_void>),
        ),
        CL_IMAGE_NUM_MIP_LEVELS | CL_IMAGE_NUM_SAMPLES => info(0 as cl_uint),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetImageInfo(
    image: cl_mem,
    param_name: cl_image_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetImageInfo", || {
        let i = Handle::<Image>::from_raw(image)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                image_info(&i, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

/// The queue, the images (of the queue's context and device) and the
/// wait list of an image command.
pub(crate) fn image_target(
    command_queue: cl_command_queue,
    images: &[cl_mem],
    num_events: cl_uint,
    events: *const cl_event,
) -> ClResult<(Target, Vec<Arc<Handle<Image>>>)> {
    let queue = Handle::<Queue>::from_raw(command_queue)?;
    let mut list = Vec::with_capacity(images.len());
    for &m in images {
        let i = Handle::<Image>::from_raw(m)?;
        if !Arc::ptr_eq(&i.context, &queue.context) {
            return err(CL_INVALID_CONTEXT);
        }
        // Its texels on the queue's device, made now where they were not.
        i.backing_on(&queue)?;
        list.push(i);
    }
    // SAFETY: the application passes `num_events` handles.
    let waits: Vec<Arc<Handle<Event>>> = unsafe { wait_list(&queue.context, num_events, events)? };
    Ok((Target { queue, waits }, list))
}

/// A buffer of the queue's context, for the buffer-image copies.
fn buffer_of(t: &Target, mem: cl_mem) -> ClResult<Arc<Handle<Buffer>>> {
    let b = Handle::<Buffer>::from_raw(mem)?;
    if !Arc::ptr_eq(&b.context, &t.queue.context) {
        return err(CL_INVALID_CONTEXT);
    }
    b.storage_for(&t.queue)?;
    let align = t.queue.device.mem_base_addr_align_bits() as usize / 8;
    if b.origin() % align != 0 {
        return err(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    }
    Ok(b)
}

/// Reads an origin or region triple.
fn triple(p: *const usize) -> ClResult<[usize; 3]> {
    if p.is_null() {
        return err(CL_INVALID_VALUE);
    }
    // SAFETY: non-null; the specification makes it three size_t values.
    Ok(unsafe { [*p, *p.add(1), *p.add(2)] })
}

fn host_can_read(i: &Image) -> ClResult<()> {
    if i.flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS) != 0 {
        return err(CL_INVALID_OPERATION);
    }
    Ok(())
}

fn host_can_write(i: &Image) -> ClResult<()> {
    if i.flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS) != 0 {
        return err(CL_INVALID_OPERATION);
    }
    Ok(())
}

/// The host layout of a read or write: slice pitches only for images
/// that have slices.
fn transfer_layout(
    i: &Image,
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
) -> ClResult<HostLayout> {
    let flat = matches!(
        i.desc.image_type,
        CL_MEM_OBJECT_IMAGE1D | CL_MEM_OBJECT_IMAGE2D | CL_MEM_OBJECT_IMAGE1D_BUFFER
    );
    if flat && slice_pitch != 0 {
        return err(CL_INVALID_VALUE);
    }
    HostLayout::new(&i.desc, i.element_size, region, row_pitch, slice_pitch)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueReadImage(
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_read: cl_bool,
    origin: *const usize,
    region: *const usize,
    row_pitch: usize,
    slice_pitch: usize,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueReadImage", || {
        let (t, i) = image_target(
            command_queue,
            &[image],
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let i = &i[0];
        let (origin, region) = (triple(origin)?, triple(region)?);
        i.check_region(origin, region)?;
        let layout = transfer_layout(i, region, row_pitch, slice_pitch)?;
        if ptr.is_null() {
            return err(CL_INVALID_VALUE);
        }
        host_can_read(i)?;
        let w = work::read(&t.queue, i, origin, region, layout, HostPtr(ptr as usize))?;
        t.run(CL_COMMAND_READ_IMAGE, blocking_read != 0, event, w)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueWriteImage(
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_write: cl_bool,
    origin: *const usize,
    region: *const usize,
    input_row_pitch: usize,
    input_slice_pitch: usize,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueWriteImage", || {
        let (t, i) = image_target(
            command_queue,
            &[image],
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let i = &i[0];
        let (origin, region) = (triple(origin)?, triple(region)?);
        i.check_region(origin, region)?;
        let layout = transfer_layout(i, region, input_row_pitch, input_slice_pitch)?;
        if ptr.is_null() {
            return err(CL_INVALID_VALUE);
        }
        host_can_write(i)?;
        let w = work::write(&t.queue, i, origin, region, layout, HostPtr(ptr as usize))?;
        t.run(CL_COMMAND_WRITE_IMAGE, blocking_write != 0, event, w)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyImage(
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_image: cl_mem,
    src_origin: *const usize,
    dst_origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueCopyImage", || {
        // SAFETY: three values in each array, per the specification.
        let (t, plan) = unsafe {
            copy_image_plan(
                command_queue,
                src_image,
                dst_image,
                src_origin,
                dst_origin,
                region,
                num_events_in_wait_list,
                event_wait_list,
            )?
        };
        let w = plan(&t.queue)?;
        t.run(CL_COMMAND_COPY_IMAGE, false, event, w)
    })
}

/// clEnqueueCopyImage's checks and work (also clCommandCopyImageKHR's).
///
/// # Safety
/// The origins and region are null or point to three values each.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn copy_image_plan(
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_image: cl_mem,
    src_origin: *const usize,
    dst_origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let (t, i) = image_target(
        command_queue,
        &[src_image, dst_image],
        num_events_in_wait_list,
        event_wait_list,
    )?;
    let (src, dst) = (i[0].clone(), i[1].clone());
    let f = |i: &Image| {
        (
            i.format.image_channel_order,
            i.format.image_channel_data_type,
        )
    };
    if f(&src) != f(&dst) {
        return err(CL_IMAGE_FORMAT_MISMATCH);
    }
    let (so, d_o, region) = (triple(src_origin)?, triple(dst_origin)?, triple(region)?);
    src.check_region(so, region)?;
    dst.check_region(d_o, region)?;
    if Arc::ptr_eq(&src, &dst)
        && (0..3).all(|k| so[k] < d_o[k] + region[k] && d_o[k] < so[k] + region[k])
    {
        return err(CL_MEM_COPY_OVERLAP);
    }
    let plan: Plan = Arc::new(move |q| work::copy(q, &src, &dst, so, d_o, region));
    Ok((t, plan))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyImageToBuffer(
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const usize,
    region: *const usize,
    dst_offset: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueCopyImageToBuffer", || {
        // SAFETY: three values in each array, per the specification.
        let (t, plan) = unsafe {
            copy_image_to_buffer_plan(
                command_queue,
                src_image,
                dst_buffer,
                src_origin,
                region,
                dst_offset,
                num_events_in_wait_list,
                event_wait_list,
            )?
        };
        let w = plan(&t.queue)?;
        t.run(CL_COMMAND_COPY_IMAGE_TO_BUFFER, false, event, w)
    })
}

/// clEnqueueCopyImageToBuffer's checks and work (also
/// clCommandCopyImageToBufferKHR's).
///
/// # Safety
/// The origin and region are null or point to three values each.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn copy_image_to_buffer_plan(
    command_queue: cl_command_queue,
    src_image: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const usize,
    region: *const usize,
    dst_offset: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let (t, i) = image_target(
        command_queue,
        &[src_image],
        num_events_in_wait_list,
        event_wait_list,
    )?;
    let b = buffer_of(&t, dst_buffer)?;
    let i = i[0].clone();
    let (origin, region) = (triple(src_origin)?, triple(region)?);
    i.check_region(origin, region)?;
    if dst_offset
        .checked_add(i.packed_size(region))
        .is_none_or(|end| end > b.size)
    {
        return err(CL_INVALID_VALUE);
    }
    let plan: Plan = Arc::new(move |q| work::to_buffer(q, &i, origin, region, &b, dst_offset));
    Ok((t, plan))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyBufferToImage(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_image: cl_mem,
    src_offset: usize,
    dst_origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueCopyBufferToImage", || {
        // SAFETY: three values in each array, per the specification.
        let (t, plan) = unsafe {
            copy_buffer_to_image_plan(
                command_queue,
                src_buffer,
                dst_image,
                src_offset,
                dst_origin,
                region,
                num_events_in_wait_list,
                event_wait_list,
            )?
        };
        let w = plan(&t.queue)?;
        t.run(CL_COMMAND_COPY_BUFFER_TO_IMAGE, false, event, w)
    })
}

/// clEnqueueCopyBufferToImage's checks and work (also
/// clCommandCopyBufferToImageKHR's).
///
/// # Safety
/// The origin and region are null or point to three values each.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn copy_buffer_to_image_plan(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_image: cl_mem,
    src_offset: usize,
    dst_origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let (t, i) = image_target(
        command_queue,
        &[dst_image],
        num_events_in_wait_list,
        event_wait_list,
    )?;
    let b = buffer_of(&t, src_buffer)?;
    let i = i[0].clone();
    let (origin, region) = (triple(dst_origin)?, triple(region)?);
    i.check_region(origin, region)?;
    if src_offset
        .checked_add(i.packed_size(region))
        .is_none_or(|end| end > b.size)
    {
        return err(CL_INVALID_VALUE);
    }
    let plan: Plan = Arc::new(move |q| work::from_buffer(q, &b, src_offset, &i, origin, region));
    Ok((t, plan))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueFillImage(
    command_queue: cl_command_queue,
    image: cl_mem,
    fill_color: *const c_void,
    origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueFillImage", || {
        // SAFETY: the colour and the arrays are as the specification says.
        let (t, plan) = unsafe {
            fill_image_plan(
                command_queue,
                image,
                fill_color,
                origin,
                region,
                num_events_in_wait_list,
                event_wait_list,
            )?
        };
        let w = plan(&t.queue)?;
        t.run(CL_COMMAND_FILL_IMAGE, false, event, w)
    })
}

/// clEnqueueFillImage's checks and work (also clCommandFillImageKHR's).
///
/// # Safety
/// `fill_color` is null or points to four 32-bit values (one float for a
/// depth image); the origin and region are null or three values each.
pub(crate) unsafe fn fill_image_plan(
    command_queue: cl_command_queue,
    image: cl_mem,
    fill_color: *const c_void,
    origin: *const usize,
    region: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let (t, i) = image_target(
        command_queue,
        &[image],
        num_events_in_wait_list,
        event_wait_list,
    )?;
    let i = i[0].clone();
    if fill_color.is_null() {
        return err(CL_INVALID_VALUE);
    }
    let (origin, region) = (triple(origin)?, triple(region)?);
    i.check_region(origin, region)?;
    // SAFETY: non-null; the colour is four 32-bit values, or one float
    // for a depth image.
    let color = unsafe {
        if i.format.image_channel_order == CL_DEPTH {
            let mut c = [0u8; 16];
            c[..4].copy_from_slice(&*(fill_color as *const [u8; 4]));
            c
        } else {
            *(fill_color as *const [u8; 16])
        }
    };
    let plan: Plan = Arc::new(move |q| work::fill(q, &i, &color, origin, region));
    Ok((t, plan))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMapImage(
    command_queue: cl_command_queue,
    image: cl_mem,
    blocking_map: cl_bool,
    map_flags: cl_map_flags,
    origin: *const usize,
    region: *const usize,
    image_row_pitch: *mut usize,
    image_slice_pitch: *mut usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    let map = || {
        let (t, i) = image_target(
            command_queue,
            &[image],
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let i = &i[0];
        let (origin, region) = (triple(origin)?, triple(region)?);
        i.check_region(origin, region)?;
        let known = CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION;
        if map_flags & !known != 0
            || (map_flags & CL_MAP_WRITE_INVALIDATE_REGION != 0
                && map_flags & (CL_MAP_READ | CL_MAP_WRITE) != 0)
        {
            return err(CL_INVALID_VALUE);
        }
        let has_slices = matches!(
            i.desc.image_type,
            CL_MEM_OBJECT_IMAGE3D | CL_MEM_OBJECT_IMAGE1D_ARRAY | CL_MEM_OBJECT_IMAGE2D_ARRAY
        );
        if image_row_pitch.is_null() || (has_slices && image_slice_pitch.is_null()) {
            return err(CL_INVALID_VALUE);
        }
        if map_flags & CL_MAP_READ != 0 {
            host_can_read(i)?;
        }
        if map_flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0 {
            host_can_write(i)?;
        }
        if blocking_map != 0 {
            check_wait_list_ok(&t.waits)?;
        }
        let (ptr, pitches, w) = work::map(&t.queue, i, map_flags, origin, region)?;
        let image = i.clone();
        let result = t.run(CL_COMMAND_MAP_IMAGE, blocking_map != 0, event, w);
        if let Err(e) = result {
            // Forget the mapping the failed command registered.
            image.maps().retain(|m| m.ptr != ptr);
            return Err(e);
        }
        // SAFETY: checked non-null above (the slice pitch where needed),
        // writable per the specification.
        unsafe {
            image_row_pitch.write(pitches[0]);
            write_out(image_slice_pitch, if has_slices { pitches[1] } else { 0 });
        }
        Ok(ptr.get().cast::<c_void>())
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clEnqueueMapImage", errcode_ret, map) }
}
