//! Images: a `VkImage` (see `vk::image`) with the OpenCL description it was
//! made from, and the transfers between images, buffers and the host.
//!
//! Every transfer to or from the host goes through a staging buffer that
//! holds the region tightly packed, in OpenCL's element order (x, then y or
//! the 1D array index, then z or the 2D array index), which is also the
//! order Vulkan's buffer-image copies use. Image-to-image copies go through
//! a device buffer the same way, which works for every pair of image types.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use ash::vk;
use opencl_sys::*;

use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::core::format::FormatEntry;
use crate::core::memory::{
    Access, Buffer, HostPtr, MemDestructor, MemDestructors, Staging, Use, Used, used,
};
use crate::core::object::{Callback, ClObject, Handle};
use crate::core::queue::{Queue, RecordFn, Recorder, Work};
use crate::vk::device::LogicalDevice;
use crate::vk::image::{DeviceImage, ImageShape, TexelViews, Views};
use crate::vk::memory::{BufferUse, DeviceBuffer};

/// An image's shape as OpenCL describes it. Sizes that do not apply to the
/// image type are zero, as clGetImageInfo reports them.
#[derive(Clone, Copy, Debug)]
pub struct ImageDesc {
    pub image_type: cl_mem_object_type,
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub array_size: usize,
    /// The pitches clGetImageInfo reports: those of the application's
    /// memory when it passed a host pointer, else the packed ones.
    pub row_pitch: usize,
    pub slice_pitch: usize,
}

impl ImageDesc {
    /// The size in elements along OpenCL's three region coordinates.
    pub fn dims(&self) -> [usize; 3] {
        match self.image_type {
            CL_MEM_OBJECT_IMAGE1D | CL_MEM_OBJECT_IMAGE1D_BUFFER => [self.width, 1, 1],
            CL_MEM_OBJECT_IMAGE1D_ARRAY => [self.width, self.array_size, 1],
            CL_MEM_OBJECT_IMAGE2D => [self.width, self.height, 1],
            CL_MEM_OBJECT_IMAGE2D_ARRAY => [self.width, self.height, self.array_size],
            _ => [self.width, self.height, self.depth],
        }
    }

    /// The Vulkan image for this description.
    pub fn shape(&self) -> ImageShape {
        let [w, h, d] = self.dims().map(|v| v as u32);
        let (image_type, extent, layers) = match self.image_type {
            CL_MEM_OBJECT_IMAGE1D_ARRAY => (vk::ImageType::TYPE_1D, [w, 1, 1], h),
            CL_MEM_OBJECT_IMAGE2D_ARRAY => (vk::ImageType::TYPE_2D, [w, h, 1], d),
            CL_MEM_OBJECT_IMAGE3D => (vk::ImageType::TYPE_3D, [w, h, d], 1),
            CL_MEM_OBJECT_IMAGE2D => (vk::ImageType::TYPE_2D, [w, h, 1], 1),
            _ => (vk::ImageType::TYPE_1D, [w, 1, 1], 1),
        };
        ImageShape {
            image_type,
            extent: vk::Extent3D {
                width: extent[0],
                height: extent[1],
                depth: extent[2],
            },
            layers,
            arrayed: matches!(
                self.image_type,
                CL_MEM_OBJECT_IMAGE1D_ARRAY | CL_MEM_OBJECT_IMAGE2D_ARRAY
            ),
        }
    }

    /// Whether OpenCL's second coordinate is an array index (1D arrays),
    /// whose host layout steps by the slice pitch.
    pub fn rows_are_slices(&self) -> bool {
        self.image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY
    }
}

/// The layout of image data in host memory: the byte strides of OpenCL's
/// second and third region coordinates.
#[derive(Clone, Copy, Debug)]
pub struct HostLayout {
    pub y_stride: usize,
    pub z_stride: usize,
}

impl HostLayout {
    /// Host strides from an application's pitches for `region` (zero: packed),
    /// checked as clEnqueueRead/WriteImage and image creation check them.
    pub fn new(
        desc: &ImageDesc,
        elem: usize,
        region: [usize; 3],
        row_pitch: usize,
        slice_pitch: usize,
    ) -> ClResult<HostLayout> {
        let row = region[0] * elem;
        let row_pitch = if row_pitch == 0 { row } else { row_pitch };
        if row_pitch < row {
            return err(CL_INVALID_VALUE);
        }
        if desc.rows_are_slices() {
            let slice_pitch = if slice_pitch == 0 {
                row_pitch
            } else {
                slice_pitch
            };
            if slice_pitch < row_pitch {
                return err(CL_INVALID_VALUE);
            }
            return Ok(HostLayout {
                y_stride: slice_pitch,
                z_stride: slice_pitch * region[1],
            });
        }
        let slice = row_pitch * region[1];
        let slice_pitch = if slice_pitch == 0 { slice } else { slice_pitch };
        let has_slices = matches!(
            desc.image_type,
            CL_MEM_OBJECT_IMAGE3D | CL_MEM_OBJECT_IMAGE2D_ARRAY
        );
        if has_slices && slice_pitch < slice {
            return err(CL_INVALID_VALUE);
        }
        Ok(HostLayout {
            y_stride: row_pitch,
            z_stride: slice_pitch,
        })
    }

    /// Byte offset of element row (y, z) relative to the region's origin.
    fn row(&self, y: usize, z: usize) -> usize {
        y * self.y_stride + z * self.z_stride
    }

    /// Bytes the application's memory must hold for `region`.
    pub fn span(&self, region: [usize; 3], elem: usize) -> usize {
        self.row(region[1] - 1, region[2] - 1) + region[0] * elem
    }
}

/// One outstanding clEnqueueMapImage.
pub struct ImageMapping {
    pub ptr: HostPtr,
    pub origin: [usize; 3],
    pub region: [usize; 3],
    pub flags: cl_map_flags,
    pub staging: Arc<Staging>,
    /// Where the mapping lies in the application's memory
    /// (CL_MEM_USE_HOST_PTR), else the staging buffer's packed layout.
    pub layout: HostLayout,
}

impl ImageMapping {
    pub fn writes(&self) -> bool {
        self.flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0
    }
}

/// Where an image's texels live on one device.
#[derive(Clone)]
pub enum Backing {
    /// A Vulkan image of its own.
    Image(Arc<DeviceImage>),
    /// The bytes of a buffer, packed (1D image buffers): the image and the
    /// buffer share them, as OpenCL requires.
    Texels {
        buffer: Arc<Handle<Buffer>>,
        views: Arc<TexelViews>,
    },
    /// The rows of a buffer, `pitch` bytes apart, in slices
    /// `slice_pitch` bytes apart (0: one slice) (2D images from buffers,
    /// images on imported memory; the rows of a 1D image array are its
    /// layers). Kernels reach them through `shadow`, a Vulkan image that
    /// each kernel using the image fills from the buffer first and, when
    /// it may write the image, copies back after: Vulkan cannot view a
    /// buffer as a tiled image. Transfers use the buffer directly.
    Rows {
        buffer: Arc<Handle<Buffer>>,
        shadow: Arc<DeviceImage>,
        pitch: usize,
        slice_pitch: usize,
    },
}

impl Backing {
    /// The device these texels are on.
    fn device(&self) -> &Arc<LogicalDevice> {
        match self {
            Backing::Image(i) | Backing::Rows { shadow: i, .. } => i.device(),
            Backing::Texels { views, .. } => views.device(),
        }
    }

    /// What kernels reach the texels through, to read them (`sampled`)
    /// or to write them; None where the format does not allow that.
    pub fn kernel_view(&self, sampled: bool) -> Option<KernelView> {
        let v = match (self, sampled) {
            (Backing::Image(i) | Backing::Rows { shadow: i, .. }, true) => {
                KernelView::Image(i.sampled_view)
            }
            (Backing::Image(i) | Backing::Rows { shadow: i, .. }, false) => {
                KernelView::Image(i.storage_view)
            }
            (Backing::Texels { views, .. }, true) => KernelView::Texels(views.sampled),
            (Backing::Texels { views, .. }, false) => KernelView::Texels(views.storage),
        };
        let null = match v {
            KernelView::Image(v) => v == vk::ImageView::null(),
            KernelView::Texels(v) => v == vk::BufferView::null(),
        };
        (!null).then_some(v)
    }

    /// Whether the view kernels write through has red and blue exchanged.
    pub fn storage_swaps_red_blue(&self) -> bool {
        match self {
            Backing::Image(i) | Backing::Rows { shadow: i, .. } => i.storage_swaps_red_blue,
            Backing::Texels { views, .. } => views.storage_swaps_red_blue,
        }
    }
}

/// The use of an image by a command (see [`Work::uses`]): of the buffer
/// it was made from, if any, else of its texels; none in a context of one
/// device.
pub fn backing_used(image: &Arc<Handle<Image>>, access: Access) -> Vec<Use> {
    match image.buffer() {
        Some(b) => used(b, access),
        None if image.context.devices.len() > 1 => vec![Use {
            object: Used::Image(image.clone()),
            access,
        }],
        None => Vec::new(),
    }
}

/// Makes the texels of `image` (one with a Vulkan image of its own)
/// current on `queue`'s device before a command that uses them is
/// recorded through `rec`, as [`crate::core::memory::make_current`] does
/// for buffers but for the whole image: where another device's copy holds
/// them, they are read back from it now and copied in through staging,
/// which is given back to be kept until the command completes. A command
/// that may write them leaves its device's copy the only current one.
pub fn make_current(
    image: &Image,
    access: Access,
    queue: &Queue,
    rec: &Recorder<'_>,
) -> ClResult<Option<Arc<Staging>>> {
    let root = image.root();
    let Some(current) = &root.current else {
        return Ok(None);
    };
    let Backing::Image(here) = root.backing_on(queue)? else {
        return Ok(None);
    };
    let mut current = current.lock().unwrap_or_else(|e| e.into_inner());
    let holds = |list: &[Arc<LogicalDevice>]| list.iter().any(|d| Arc::ptr_eq(d, &queue.vk));
    let mut kept = None;
    if access != Access::Undefined
        && !holds(&current)
        && let Some(from) = current.first().and_then(|d| root.image_on(d))
    {
        kept = Some(root.bring_over(&from, &here, rec)?);
    }
    if access != Access::Read {
        current.clear();
    }
    // Texels current nowhere were never defined: they are as good here.
    if !holds(&current) {
        current.push(queue.vk.clone());
    }
    Ok(kept)
}

/// A view a kernel's image descriptor points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelView {
    Image(vk::ImageView),
    Texels(vk::BufferView),
}

/// One end of a copy between an image region and packed bytes of a
/// buffer: the Vulkan image and its buffer-image copy, or the bytes of the
/// buffer that holds the texels.
#[derive(Clone, Copy)]
pub enum Place {
    Image(vk::Image, vk::BufferImageCopy),
    /// `slices` slices `slice_pitch` bytes apart of `rows` rows of `row`
    /// bytes in a buffer, from byte `at`, `pitch` bytes apart.
    Bytes {
        buffer: vk::Buffer,
        at: u64,
        row: u64,
        pitch: u64,
        rows: u64,
        slice_pitch: u64,
        slices: u64,
    },
}

impl Place {
    /// Records a copy from `buf` at `offset` (packed) into this place.
    pub fn fill_from(self, r: &Recorder<'_>, buf: vk::Buffer, offset: u64) {
        match self {
            Place::Image(img, mut copy) => {
                copy.buffer_offset += offset;
                r.copy_buffer_to_image(buf, img, copy);
            }
            Place::Bytes { buffer, .. } => {
                r.copy_buffer(buf, buffer, &self.row_copies(offset, true))
            }
        }
    }

    /// Records a copy of this place into `buf` at `offset` (packed).
    pub fn copy_into(self, r: &Recorder<'_>, buf: vk::Buffer, offset: u64) {
        match self {
            Place::Image(img, mut copy) => {
                copy.buffer_offset += offset;
                r.copy_image_to_buffer(img, buf, copy);
            }
            Place::Bytes { buffer, .. } => {
                r.copy_buffer(buffer, buf, &self.row_copies(offset, false))
            }
        }
    }

    /// The copies between packed bytes at `offset` and the rows of a
    /// `Bytes` place (into the place if `inward`): one where the rows (and
    /// slices) are packed too, else one per row (or slice).
    fn row_copies(self, offset: u64, inward: bool) -> Vec<vk::BufferCopy> {
        let Place::Bytes {
            at,
            row,
            pitch,
            rows,
            slice_pitch,
            slices,
            ..
        } = self
        else {
            return Vec::new();
        };
        let slice = row * rows;
        let runs = if pitch == row && (slices == 1 || slice_pitch == slice) {
            vec![(offset, at, slice * slices)]
        } else if pitch == row {
            (0..slices)
                .map(|z| (offset + z * slice, at + z * slice_pitch, slice))
                .collect()
        } else {
            (0..slices)
                .flat_map(|z| {
                    (0..rows).map(move |y| {
                        let packed = offset + z * slice + y * row;
                        (packed, at + z * slice_pitch + y * pitch, row)
                    })
                })
                .collect()
        };
        runs.into_iter()
            .map(|(packed, placed, size)| {
                let (src_offset, dst_offset) = if inward {
                    (packed, placed)
                } else {
                    (placed, packed)
                };
                vk::BufferCopy {
                    src_offset,
                    dst_offset,
                    size,
                }
            })
            .collect()
    }
}

pub struct Image {
    pub context: Arc<Handle<Context>>,
    pub flags: cl_mem_flags,
    pub format: cl_image_format,
    pub entry: FormatEntry,
    pub element_size: usize,
    pub desc: ImageDesc,
    /// The application's memory for CL_MEM_USE_HOST_PTR.
    pub host_ptr: Option<HostPtr>,
    /// Its texels on the context's first device.
    pub backing: Backing,
    /// In a context of several devices: its texels on the others, each
    /// made at the image's first use there.
    elsewhere: Mutex<Vec<Backing>>,
    /// For an image with a Vulkan image of its own (and no source) in a
    /// context of several devices: the devices whose copy of the texels is
    /// current (see [`make_current`]). The images made from it share them.
    current: Option<Mutex<Vec<Arc<LogicalDevice>>>>,
    /// The 2D image this one was made from, whose texels it shares.
    pub source: Option<Arc<Handle<Image>>>,
    pub properties: Vec<cl_mem_properties>,
    maps: Mutex<Vec<ImageMapping>>,
    destructors: MemDestructors,
}

impl ClObject for Image {
    const INVALID: i32 = CL_INVALID_MEM_OBJECT;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Images);

    fn on_destroy(&self, handle: *mut c_void) {
        self.destructors.run(handle);
    }
}

impl Image {
    /// An image of `desc` whose texels live in `backing`, with no host
    /// memory and no source image.
    fn with(
        context: Arc<Handle<Context>>,
        flags: cl_mem_flags,
        format: cl_image_format,
        entry: FormatEntry,
        desc: ImageDesc,
        backing: Backing,
        properties: Vec<cl_mem_properties>,
    ) -> Image {
        let element_size =
            crate::core::format::element_size(&format).expect("checked by the caller");
        Image {
            context,
            flags,
            format,
            entry,
            element_size,
            desc,
            host_ptr: None,
            backing,
            elsewhere: Mutex::new(Vec::new()),
            current: None,
            source: None,
            properties,
            maps: Mutex::new(Vec::new()),
            destructors: MemDestructors::default(),
        }
    }

    /// A new image; with COPY/USE_HOST_PTR, `host` holds its initial data
    /// and says how it is laid out.
    pub fn new(
        context: Arc<Handle<Context>>,
        flags: cl_mem_flags,
        format: cl_image_format,
        entry: FormatEntry,
        desc: ImageDesc,
        host: Option<(HostPtr, HostLayout)>,
        properties: Vec<cl_mem_properties>,
    ) -> ClResult<Arc<Handle<Image>>> {
        let vk_dev = context.devices[0].logical()?;
        let storage = device_image(&context.devices[0], &entry, &desc)?;
        let several = context.devices.len() > 1;
        let mut image = Image::with(
            context,
            flags,
            format,
            entry,
            desc,
            Backing::Image(Arc::new(storage)),
            properties,
        );
        image.host_ptr = host
            .map(|h| h.0)
            .filter(|_| flags & CL_MEM_USE_HOST_PTR != 0);
        let initialised = match host {
            Some(_) => vec![vk_dev.clone()],
            None => Vec::new(),
        };
        image.current = several.then(|| Mutex::new(initialised));
        if let Some((src, layout)) = host {
            let region = desc.dims();
            let staging = Staging::new(&vk_dev, image.packed_size(region), BufferUse::Upload)?;
            pack(src, layout, staging.ptr(), region, image.element_size);
            let place = image.place_in(&image.backing, vk::Buffer::null(), [0; 3], region);
            let buf = staging.buffer().raw;
            vk_dev.one_shot(|cb| {
                let r = Recorder {
                    device: &vk_dev.raw,
                    cb,
                };
                place.fill_from(&r, buf, 0);
            })?;
        }
        Ok(Handle::new(image))
    }

    /// An image whose rows are `desc.row_pitch` bytes apart in `buffer`,
    /// in slices (the layers of arrays, the slices of a 3D image)
    /// `desc.slice_pitch` bytes apart, which the caller checked holds
    /// them; the layers of a 1D image array are rows `desc.slice_pitch`
    /// bytes apart.
    pub fn new_rows(
        buffer: Arc<Handle<Buffer>>,
        flags: cl_mem_flags,
        format: cl_image_format,
        entry: FormatEntry,
        desc: ImageDesc,
        properties: Vec<cl_mem_properties>,
    ) -> ClResult<Arc<Handle<Image>>> {
        let context = buffer.context.clone();
        let shadow = device_image(&context.devices[0], &entry, &desc)?;
        let image = Image::with(
            context,
            flags,
            format,
            entry,
            desc,
            Backing::Rows {
                buffer,
                shadow: Arc::new(shadow),
                pitch: if desc.rows_are_slices() {
                    desc.slice_pitch
                } else {
                    desc.row_pitch
                },
                slice_pitch: match desc.image_type {
                    CL_MEM_OBJECT_IMAGE2D_ARRAY | CL_MEM_OBJECT_IMAGE3D => desc.slice_pitch,
                    _ => 0,
                },
            },
            properties,
        );
        Ok(Handle::new(image))
    }

    /// Whether its memory was imported from another API (its properties
    /// name the descriptor).
    pub fn is_imported(&self) -> bool {
        crate::core::memory::names_imported_memory(&self.properties)
    }

    /// A 1D or 2D image on memory another API exported as the opaque file
    /// descriptor `fd`: a linear Vulkan image of its own on that memory,
    /// rows `desc.row_pitch` bytes apart, used like any image of vkcl's
    /// (no copies between it and a buffer). None where the device cannot
    /// make such an image for the format's kernel views or lays its rows
    /// out otherwise (the caller then imports the memory as a buffer);
    /// `fd` is then still the caller's, and the image's once this
    /// returns one.
    pub fn import_linear(
        context: Arc<Handle<Context>>,
        flags: cl_mem_flags,
        format: cl_image_format,
        entry: FormatEntry,
        desc: ImageDesc,
        fd: i32,
        properties: Vec<cl_mem_properties>,
    ) -> ClResult<Option<Arc<Handle<Image>>>> {
        let device = &context.devices[0];
        let (views, usage, view_formats) = image_usage(device, &entry, &desc);
        let shape = desc.shape();
        if !device.imports_linear_images(
            entry.vk,
            shape.image_type,
            shape.extent,
            usage,
            &view_formats,
        ) {
            log::debug!(target: "vkcl::memory", "no linear {:?} image of {:?} here: importing its memory as a buffer", entry.vk, shape.extent);
            return Ok(None);
        }
        let vk_dev = device.logical()?;
        let pitch = desc.row_pitch as u64;
        match DeviceImage::import_linear(&vk_dev, shape, usage, views, &view_formats, fd, pitch) {
            Ok(storage) => {
                log::debug!(target: "vkcl::memory", "the imported memory is a linear {:?} image of {:?}", entry.vk, shape.extent);
                let backing = Backing::Image(Arc::new(storage));
                let image = Image::with(context, flags, format, entry, desc, backing, properties);
                Ok(Some(Handle::new(image)))
            }
            Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY) => {
                Err(ClError(CL_MEM_OBJECT_ALLOCATION_FAILURE))
            }
            Err(e) => {
                log::debug!(target: "vkcl::memory", "importing a linear image failed ({e}): importing its memory as a buffer");
                Ok(None)
            }
        }
    }

    /// A 2D image of `source`'s size and texels in another format (the
    /// caller checked that the two may view each other): new views of its
    /// Vulkan image, or, where its texels live in a buffer, the same rows.
    pub fn new_view(
        source: Arc<Handle<Image>>,
        flags: cl_mem_flags,
        format: cl_image_format,
        entry: FormatEntry,
        properties: Vec<cl_mem_properties>,
    ) -> ClResult<Arc<Handle<Image>>> {
        let context = source.context.clone();
        let device = &context.devices[0];
        let desc = source.desc;
        let backing = match &source.backing {
            Backing::Image(image) => {
                let (views, sampled) = kernel_views(device, &entry);
                let alias = DeviceImage::alias(image, views, sampled).map_err(ClError::from)?;
                Backing::Image(Arc::new(alias))
            }
            Backing::Rows {
                buffer,
                pitch,
                slice_pitch,
                ..
            } => Backing::Rows {
                buffer: buffer.clone(),
                shadow: Arc::new(device_image(device, &entry, &desc)?),
                pitch: *pitch,
                slice_pitch: *slice_pitch,
            },
            Backing::Texels { .. } => return err(CL_INVALID_IMAGE_DESCRIPTOR),
        };
        let mut image = Image::with(context, flags, format, entry, desc, backing, properties);
        image.host_ptr = source.host_ptr;
        image.source = Some(source);
        Ok(Handle::new(image))
    }

    /// For an image whose texels live in a buffer but whom kernels reach
    /// through an image of its own (2D images from buffers): the buffer
    /// and the image on `queue`'s device, and the copy between them.
    pub fn shadow(
        &self,
        queue: &Queue,
    ) -> ClResult<Option<(vk::Buffer, vk::Image, vk::BufferImageCopy)>> {
        let Backing::Rows {
            buffer,
            shadow,
            pitch,
            slice_pitch,
        } = self.backing_on(queue)?
        else {
            return Ok(None);
        };
        let mut copy = self.buffer_copy(buffer.offset as u64, [0; 3], self.desc.dims());
        copy.buffer_row_length = (pitch / self.element_size) as u32;
        // Slices and layers a whole number of rows apart (checked at
        // creation).
        copy.buffer_image_height = (slice_pitch / pitch) as u32;
        Ok(Some((buffer.storage_for(queue)?.raw, shadow.raw, copy)))
    }

    /// A 1D image buffer: `desc.width` texels at the start of `buffer`,
    /// which the caller checked fit it and are aligned for texel views.
    pub fn new_texels(
        buffer: Arc<Handle<Buffer>>,
        flags: cl_mem_flags,
        format: cl_image_format,
        entry: FormatEntry,
        desc: ImageDesc,
        properties: Vec<cl_mem_properties>,
    ) -> ClResult<Arc<Handle<Image>>> {
        let context = buffer.context.clone();
        let views = texel_views(
            &context.devices[0],
            &buffer.storage,
            buffer.offset,
            &entry,
            &format,
            &desc,
        )?;
        let image = Image::with(
            context,
            flags,
            format,
            entry,
            desc,
            Backing::Texels {
                buffer,
                views: Arc::new(views),
            },
            properties,
        );
        Ok(Handle::new(image))
    }

    /// The buffer an image made from a buffer was made from.
    pub fn buffer(&self) -> Option<&Arc<Handle<Buffer>>> {
        match &self.backing {
            Backing::Texels { buffer, .. } | Backing::Rows { buffer, .. } => Some(buffer),
            Backing::Image(_) => None,
        }
    }

    /// What kernels reach the image through on the context's first
    /// device (see [`Backing::kernel_view`]).
    pub fn kernel_view(&self, sampled: bool) -> Option<KernelView> {
        self.backing.kernel_view(sampled)
    }

    /// The image this one shares its texels with that has a Vulkan image
    /// (or buffer) of its own: itself, or what it was made from.
    fn root(&self) -> &Image {
        match &self.source {
            Some(s) => s.root(),
            None => self,
        }
    }

    /// The image's texels on `queue`'s device, made there at its first
    /// use. Their contents are made current by the command that uses them
    /// (see [`backing_used`]).
    pub fn backing_on(&self, queue: &Queue) -> ClResult<Backing> {
        if Arc::ptr_eq(self.backing.device(), &queue.vk) {
            return Ok(self.backing.clone());
        }
        let mut elsewhere = self.elsewhere.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = elsewhere
            .iter()
            .find(|b| Arc::ptr_eq(b.device(), &queue.vk))
        {
            return Ok(b.clone());
        }
        let device = &queue.device;
        let made = match (&self.backing, &self.source) {
            (Backing::Image(_), Some(source)) => {
                let Backing::Image(texels) = source.backing_on(queue)? else {
                    return err(CL_INVALID_MEM_OBJECT);
                };
                let (views, sampled) = kernel_views(device, &self.entry);
                let alias = DeviceImage::alias(&texels, views, sampled).map_err(ClError::from)?;
                Backing::Image(Arc::new(alias))
            }
            (Backing::Image(_), None) => {
                Backing::Image(Arc::new(device_image(device, &self.entry, &self.desc)?))
            }
            (Backing::Texels { buffer, .. }, _) => {
                let storage = buffer.storage_for(queue)?;
                let views = texel_views(
                    device,
                    &storage,
                    buffer.offset,
                    &self.entry,
                    &self.format,
                    &self.desc,
                )?;
                Backing::Texels {
                    buffer: buffer.clone(),
                    views: Arc::new(views),
                }
            }
            (
                Backing::Rows {
                    buffer,
                    pitch,
                    slice_pitch,
                    ..
                },
                _,
            ) => Backing::Rows {
                buffer: buffer.clone(),
                shadow: Arc::new(device_image(device, &self.entry, &self.desc)?),
                pitch: *pitch,
                slice_pitch: *slice_pitch,
            },
        };
        elsewhere.push(made.clone());
        Ok(made)
    }

    /// The Vulkan image holding the texels on `device`, if one was made.
    fn image_on(&self, device: &Arc<LogicalDevice>) -> Option<Arc<DeviceImage>> {
        let elsewhere = self.elsewhere.lock().unwrap_or_else(|e| e.into_inner());
        std::iter::once(&self.backing)
            .chain(elsewhere.iter())
            .find_map(|b| match b {
                Backing::Image(i) if Arc::ptr_eq(i.device(), device) => Some(i.clone()),
                _ => None,
            })
    }

    /// Copies all the texels of `src` (on another device, done with them)
    /// into `dst` through the host: read back now, and the copy in from
    /// staging recorded through `rec`; the staging is given back to be
    /// kept until that copy completes.
    fn bring_over(
        &self,
        src: &DeviceImage,
        dst: &DeviceImage,
        rec: &Recorder<'_>,
    ) -> ClResult<Arc<Staging>> {
        let dims = self.desc.dims();
        let size = self.packed_size(dims);
        log::debug!(target: "vkcl::memory", "an image's {size} bytes of texels move to another device");
        let copy = self.buffer_copy(0, [0; 3], dims);
        let device = src.device();
        let readback = Staging::new(device, size, BufferUse::Readback)?;
        device.one_shot(|cb| {
            let r = Recorder {
                device: &device.raw,
                cb,
            };
            r.copy_image_to_buffer(src.raw, readback.buffer().raw, copy);
        })?;
        let upload = Staging::new(dst.device(), size, BufferUse::Upload)?;
        // SAFETY: both staging buffers are mapped and hold `size` bytes;
        // the readback is complete.
        unsafe { std::ptr::copy_nonoverlapping(readback.ptr(), upload.ptr(), size) };
        rec.copy_buffer_to_image(upload.buffer().raw, dst.raw, copy);
        Ok(upload)
    }

    /// Where `region` at `origin` lies on `queue`'s device, as one end of
    /// a copy.
    pub fn place(&self, queue: &Queue, origin: [usize; 3], region: [usize; 3]) -> ClResult<Place> {
        let backing = self.backing_on(queue)?;
        let bytes = match &backing {
            Backing::Texels { buffer, .. } | Backing::Rows { buffer, .. } => {
                buffer.storage_for(queue)?.raw
            }
            Backing::Image(_) => vk::Buffer::null(),
        };
        Ok(self.place_in(&backing, bytes, origin, region))
    }

    /// Where `region` at `origin` lies in `backing`, as one end of a copy;
    /// `bytes` is the memory of the buffer behind it on that device, if
    /// any.
    fn place_in(
        &self,
        backing: &Backing,
        bytes: vk::Buffer,
        origin: [usize; 3],
        region: [usize; 3],
    ) -> Place {
        match backing {
            Backing::Image(i) => Place::Image(i.raw, self.buffer_copy(0, origin, region)),
            Backing::Texels { buffer, .. } => Place::Bytes {
                buffer: bytes,
                at: (buffer.offset + origin[0] * self.element_size) as u64,
                row: self.packed_size(region) as u64,
                pitch: 0,
                rows: 1,
                slice_pitch: 0,
                slices: 1,
            },
            Backing::Rows {
                buffer,
                pitch,
                slice_pitch,
                ..
            } => Place::Bytes {
                buffer: bytes,
                at: (buffer.offset
                    + origin[2] * slice_pitch
                    + origin[1] * pitch
                    + origin[0] * self.element_size) as u64,
                row: (region[0] * self.element_size) as u64,
                pitch: *pitch as u64,
                rows: region[1] as u64,
                slice_pitch: *slice_pitch as u64,
                slices: region[2] as u64,
            },
        }
    }

    /// The layout of the image's data as clGetImageInfo reports it: the
    /// application's memory for CL_MEM_USE_HOST_PTR.
    pub fn own_layout(&self) -> HostLayout {
        let d = &self.desc;
        if d.rows_are_slices() {
            HostLayout {
                y_stride: d.slice_pitch,
                z_stride: 0,
            }
        } else {
            HostLayout {
                y_stride: d.row_pitch,
                z_stride: d.slice_pitch,
            }
        }
    }

    /// Bytes of `region` packed.
    pub fn packed_size(&self, region: [usize; 3]) -> usize {
        region.iter().product::<usize>() * self.element_size
    }

    /// The whole image's size in bytes, for CL_MEM_SIZE.
    pub fn size(&self) -> usize {
        self.packed_size(self.desc.dims())
    }

    /// Checks a region of this image: non-zero, inside the image, and
    /// with the coordinates the image type does not have at 0 (origin) and
    /// 1 (region).
    pub fn check_region(&self, origin: [usize; 3], region: [usize; 3]) -> ClResult<()> {
        let dims = self.desc.dims();
        for i in 0..3 {
            let end = origin[i].checked_add(region[i]);
            if region[i] == 0 || end.is_none_or(|e| e > dims[i]) {
                return err(CL_INVALID_VALUE);
            }
        }
        Ok(())
    }

    /// The Vulkan copy between a packed buffer region at `offset` and the
    /// image region at `origin`.
    pub fn buffer_copy(
        &self,
        offset: u64,
        origin: [usize; 3],
        region: [usize; 3],
    ) -> vk::BufferImageCopy {
        let (o, r) = (origin.map(|v| v as u32), region.map(|v| v as u32));
        let ((off, ext), (layer, layers)) = match self.desc.image_type {
            CL_MEM_OBJECT_IMAGE1D_ARRAY => (([o[0], 0, 0], [r[0], 1, 1]), (o[1], r[1])),
            CL_MEM_OBJECT_IMAGE2D_ARRAY => (([o[0], o[1], 0], [r[0], r[1], 1]), (o[2], r[2])),
            _ => ((o, r), (0, 1)),
        };
        vk::BufferImageCopy {
            buffer_offset: offset,
            buffer_row_length: 0,
            buffer_image_height: 0,
            image_subresource: vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                mip_level: 0,
                base_array_layer: layer,
                layer_count: layers,
            },
            image_offset: vk::Offset3D {
                x: off[0] as i32,
                y: off[1] as i32,
                z: off[2] as i32,
            },
            image_extent: vk::Extent3D {
                width: ext[0],
                height: ext[1],
                depth: ext[2],
            },
        }
    }

    pub fn add_destructor(&self, cb: Callback<MemDestructor>) {
        self.destructors.add(cb);
    }

    pub fn maps(&self) -> MutexGuard<'_, Vec<ImageMapping>> {
        self.maps.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The views kernels reach an image of `entry`'s format through on
/// `device`, and whether that format can be sampled: a storage view only
/// where kernels can write it (never for orders that need a swizzle).
fn kernel_views(device: &Device, entry: &FormatEntry) -> (Views, bool) {
    let sampled = device
        .format_features(entry.vk)
        .contains(vk::FormatFeatureFlags::SAMPLED_IMAGE);
    let views = Views {
        format: entry.vk,
        swizzle: crate::core::format::swizzle(entry.order),
        storage: device.storage_format(entry.vk).filter(|_| !entry.swizzled),
    };
    (views, sampled)
}

/// The Vulkan image for an image of `desc` on `device`: with sampled and
/// storage views where the format allows them. 2D images of the formats
/// with an sRGB sibling may later be viewed in it too (2D images made from
/// 2D images).
fn device_image(device: &Device, entry: &FormatEntry, desc: &ImageDesc) -> ClResult<DeviceImage> {
    let vk_dev = device.logical()?;
    let (views, usage, view_formats) = image_usage(device, entry, desc);
    DeviceImage::new(&vk_dev, desc.shape(), usage, views, &view_formats).map_err(|e| {
        if e == vk::Result::ERROR_OUT_OF_DEVICE_MEMORY {
            ClError(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        } else {
            ClError::from(e)
        }
    })
}

/// What a Vulkan image for an image of `desc` on `device` is made for: its
/// kernel views, its usage and every format it may be viewed in.
fn image_usage(
    device: &Device,
    entry: &FormatEntry,
    desc: &ImageDesc,
) -> (Views, vk::ImageUsageFlags, Vec<vk::Format>) {
    let (views, sampled) = kernel_views(device, entry);
    let mut usage = vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
    if sampled {
        usage |= vk::ImageUsageFlags::SAMPLED;
    }
    let mut view_formats = vec![entry.vk];
    view_formats.extend(views.storage.map(|s| s.0));
    let sibling = crate::core::format::srgb_sibling(entry.vk)
        .filter(|_| desc.image_type == CL_MEM_OBJECT_IMAGE2D);
    // Kernels write a view of the sibling only where they can write the
    // image itself: an image made from another cannot have access the
    // other lacks, and vkcl writes no sRGB images.
    view_formats.extend(sibling);
    if views.storage.is_some() {
        usage |= vk::ImageUsageFlags::STORAGE;
    }
    view_formats.sort_by_key(|f| f.as_raw());
    view_formats.dedup();
    (views, usage, view_formats)
}

/// The views of a 1D image buffer's texels, `desc.width` of `format` from
/// `offset` in `storage` (`device`'s memory of the buffer).
fn texel_views(
    device: &Device,
    storage: &DeviceBuffer,
    offset: usize,
    entry: &FormatEntry,
    format: &cl_image_format,
    desc: &ImageDesc,
) -> ClResult<TexelViews> {
    let element_size = crate::core::format::element_size(format).expect("checked by the caller");
    let sampled = device
        .buffer_features(entry.vk)
        .contains(vk::FormatFeatureFlags::UNIFORM_TEXEL_BUFFER);
    TexelViews::new(
        storage.device(),
        storage.raw,
        offset as u64,
        (desc.width * element_size) as u64,
        entry.vk,
        sampled,
        device.texel_storage_format(entry.vk),
    )
    .map_err(ClError::from)
}

/// Copies `region` from host memory laid out as `layout` into packed `dst`.
fn pack(src: HostPtr, layout: HostLayout, dst: *mut u8, region: [usize; 3], elem: usize) {
    let len = region[0] * elem;
    let mut at = 0;
    for z in 0..region[2] {
        for y in 0..region[1] {
            // SAFETY: the application's memory covers the region with its
            // pitches; `dst` holds the packed region.
            unsafe {
                std::ptr::copy_nonoverlapping(src.get().add(layout.row(y, z)), dst.add(at), len)
            };
            at += len;
        }
    }
}

/// Copies packed `src` out into host memory laid out as `layout`.
fn unpack(src: *const u8, layout: HostLayout, dst: HostPtr, region: [usize; 3], elem: usize) {
    let len = region[0] * elem;
    let mut at = 0;
    for z in 0..region[2] {
        for y in 0..region[1] {
            // SAFETY: as in `pack`, the other way round.
            unsafe {
                std::ptr::copy_nonoverlapping(src.add(at), dst.get().add(layout.row(y, z)), len)
            };
            at += len;
        }
    }
}

/// Work builders for the image commands.
pub mod work {
    use super::*;

    fn keep<T: Send + Sync + 'static>(v: T) -> Box<dyn std::any::Any + Send + Sync> {
        Box::new(v)
    }

    fn to_image(buf: vk::Buffer, offset: u64, place: Place) -> RecordFn {
        Box::new(move |r| {
            place.fill_from(r, buf, offset);
            Ok(())
        })
    }

    fn from_image(place: Place, buf: vk::Buffer, offset: u64) -> RecordFn {
        Box::new(move |r| {
            place.copy_into(r, buf, offset);
            Ok(())
        })
    }

    /// clEnqueueWriteImage: the data is packed into staging now.
    pub fn write(
        queue: &Queue,
        image: &Arc<Handle<Image>>,
        origin: [usize; 3],
        region: [usize; 3],
        layout: HostLayout,
        ptr: HostPtr,
    ) -> ClResult<Work> {
        let staging = Staging::new(&queue.vk, image.packed_size(region), BufferUse::Upload)?;
        pack(ptr, layout, staging.ptr(), region, image.element_size);
        let place = image.place(queue, origin, region)?;
        Ok(Work {
            record: Some(to_image(staging.buffer().raw, 0, place)),
            complete: None,
            keep: vec![keep(staging), keep(image.clone())],
            host_access: false,
            uses: backing_used(image, Access::Write),
        })
    }

    /// clEnqueueReadImage: the worker unpacks staging into the
    /// application's memory once the copy is done.
    pub fn read(
        queue: &Queue,
        image: &Arc<Handle<Image>>,
        origin: [usize; 3],
        region: [usize; 3],
        layout: HostLayout,
        ptr: HostPtr,
    ) -> ClResult<Work> {
        let staging = Staging::new(&queue.vk, image.packed_size(region), BufferUse::Readback)?;
        let place = image.place(queue, origin, region)?;
        let out = staging.clone();
        let elem = image.element_size;
        Ok(Work {
            record: Some(from_image(place, staging.buffer().raw, 0)),
            complete: Some(Box::new(move || {
                unpack(out.ptr(), layout, ptr, region, elem);
                Ok(())
            })),
            keep: vec![keep(staging), keep(image.clone())],
            host_access: false,
            uses: backing_used(image, Access::Read),
        })
    }

    /// clEnqueueCopyImage, through a device buffer.
    pub fn copy(
        queue: &Queue,
        src: &Arc<Handle<Image>>,
        dst: &Arc<Handle<Image>>,
        src_origin: [usize; 3],
        dst_origin: [usize; 3],
        region: [usize; 3],
    ) -> ClResult<Work> {
        let temp = Staging::new(&queue.vk, src.packed_size(region), BufferUse::Device)?;
        let (out, back) = (
            src.place(queue, src_origin, region)?,
            dst.place(queue, dst_origin, region)?,
        );
        let t = temp.buffer().raw;
        Ok(Work {
            record: Some(Box::new(move |r| {
                out.copy_into(r, t, 0);
                r.full_barrier();
                back.fill_from(r, t, 0);
                Ok(())
            })),
            complete: None,
            keep: vec![keep(temp), keep(src.clone()), keep(dst.clone())],
            host_access: false,
            uses: [
                backing_used(src, Access::Read),
                backing_used(dst, Access::Write),
            ]
            .concat(),
        })
    }

    /// clEnqueueCopyBufferToImage. Vulkan needs the buffer offset to be a
    /// multiple of the element size; other offsets go through a device
    /// buffer first.
    pub fn from_buffer(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        offset: usize,
        image: &Arc<Handle<Image>>,
        origin: [usize; 3],
        region: [usize; 3],
    ) -> ClResult<Work> {
        let at = buf.offset + offset;
        let size = image.packed_size(region);
        let b = buf.storage_for(queue)?.raw;
        let place = image.place(queue, origin, region)?;
        if at % image.element_size == 0 {
            return Ok(Work {
                record: Some(to_image(b, at as u64, place)),
                complete: None,
                keep: vec![keep(buf.clone()), keep(image.clone())],
                host_access: false,
                uses: [used(buf, Access::Read), backing_used(image, Access::Write)].concat(),
            });
        }
        let temp = Staging::new(&queue.vk, size, BufferUse::Device)?;
        let t = temp.buffer().raw;
        let bytes = vk::BufferCopy {
            src_offset: at as u64,
            dst_offset: 0,
            size: size as u64,
        };
        Ok(Work {
            record: Some(Box::new(move |r| {
                r.copy_buffer(b, t, &[bytes]);
                r.full_barrier();
                place.fill_from(r, t, 0);
                Ok(())
            })),
            complete: None,
            keep: vec![keep(temp), keep(buf.clone()), keep(image.clone())],
            host_access: false,
            uses: [used(buf, Access::Read), backing_used(image, Access::Write)].concat(),
        })
    }

    /// clEnqueueCopyImageToBuffer, with the same care for offsets.
    pub fn to_buffer(
        queue: &Queue,
        image: &Arc<Handle<Image>>,
        origin: [usize; 3],
        region: [usize; 3],
        buf: &Arc<Handle<Buffer>>,
        offset: usize,
    ) -> ClResult<Work> {
        let at = buf.offset + offset;
        let size = image.packed_size(region);
        let b = buf.storage_for(queue)?.raw;
        let place = image.place(queue, origin, region)?;
        if at % image.element_size == 0 {
            return Ok(Work {
                record: Some(from_image(place, b, at as u64)),
                complete: None,
                keep: vec![keep(buf.clone()), keep(image.clone())],
                host_access: false,
                uses: [used(buf, Access::Write), backing_used(image, Access::Read)].concat(),
            });
        }
        let temp = Staging::new(&queue.vk, size, BufferUse::Device)?;
        let t = temp.buffer().raw;
        let bytes = vk::BufferCopy {
            src_offset: 0,
            dst_offset: at as u64,
            size: size as u64,
        };
        Ok(Work {
            record: Some(Box::new(move |r| {
                place.copy_into(r, t, 0);
                r.full_barrier();
                r.copy_buffer(t, b, &[bytes]);
                Ok(())
            })),
            complete: None,
            keep: vec![keep(temp), keep(buf.clone()), keep(image.clone())],
            host_access: false,
            uses: [used(buf, Access::Write), backing_used(image, Access::Read)].concat(),
        })
    }

    /// clEnqueueFillImage: the colour, converted on the host, repeated
    /// over the region in staging and copied in.
    pub fn fill(
        queue: &Queue,
        image: &Arc<Handle<Image>>,
        color: &[u8; 16],
        origin: [usize; 3],
        region: [usize; 3],
    ) -> ClResult<Work> {
        let pattern = crate::core::format::fill_bytes(&image.entry, color);
        let size = image.packed_size(region);
        let staging = Staging::new(&queue.vk, size, BufferUse::Upload)?;
        let bytes: Vec<u8> = pattern.iter().copied().cycle().take(size).collect();
        staging.buffer().write(0, &bytes);
        let place = image.place(queue, origin, region)?;
        Ok(Work {
            record: Some(to_image(staging.buffer().raw, 0, place)),
            complete: None,
            keep: vec![keep(staging), keep(image.clone())],
            host_access: false,
            uses: backing_used(image, Access::Write),
        })
    }

    /// clEnqueueMapImage: registers the mapping and returns its pointer
    /// and pitches (row, slice) with the work that fills it.
    pub fn map(
        queue: &Queue,
        image: &Arc<Handle<Image>>,
        flags: cl_map_flags,
        origin: [usize; 3],
        region: [usize; 3],
    ) -> ClResult<(HostPtr, [usize; 2], Work)> {
        let mut maps = image.maps();
        let writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0;
        let overlaps = |m: &ImageMapping| {
            (0..3).all(|i| {
                origin[i] < m.origin[i] + m.region[i] && m.origin[i] < origin[i] + region[i]
            })
        };
        if maps.iter().any(|m| overlaps(m) && (writes || m.writes())) {
            return err(CL_INVALID_OPERATION);
        }
        let elem = image.element_size;
        let staging = Staging::new(&queue.vk, image.packed_size(region), BufferUse::Readback)?;
        let (ptr, layout) = match image.host_ptr {
            Some(h) => {
                let layout = image.own_layout();
                let at = origin[0] * elem + layout.row(origin[1], origin[2]);
                (HostPtr(h.0 + at), layout)
            }
            None => {
                let row = region[0] * elem;
                let layout = HostLayout {
                    y_stride: row,
                    z_stride: row * region[1],
                };
                (HostPtr(staging.ptr() as usize), layout)
            }
        };
        let pitches = if image.desc.rows_are_slices() {
            [layout.y_stride, layout.y_stride]
        } else {
            [layout.y_stride, layout.z_stride]
        };
        maps.push(ImageMapping {
            ptr,
            origin,
            region,
            flags,
            staging: staging.clone(),
            layout,
        });
        drop(maps);
        if flags & CL_MAP_WRITE_INVALIDATE_REGION != 0 {
            return Ok((ptr, pitches, Work::none()));
        }
        let place = image.place(queue, origin, region)?;
        let to_host = image.host_ptr.is_some();
        let out = staging.clone();
        Ok((
            ptr,
            pitches,
            Work {
                record: Some(from_image(place, staging.buffer().raw, 0)),
                complete: Some(Box::new(move || {
                    if to_host {
                        unpack(out.ptr(), layout, ptr, region, elem);
                    }
                    Ok(())
                })),
                keep: vec![keep(staging), keep(image.clone())],
                host_access: false,
                uses: backing_used(image, Access::Read),
            },
        ))
    }

    /// clEnqueueUnmapMemObject on an image: writes mapped data back when
    /// the mapping was for writing.
    pub fn unmap(queue: &Queue, image: &Arc<Handle<Image>>, ptr: HostPtr) -> ClResult<Work> {
        let mapping = {
            let mut maps = image.maps();
            let i = maps
                .iter()
                .position(|m| m.ptr == ptr)
                .ok_or(ClError(CL_INVALID_VALUE))?;
            maps.remove(i)
        };
        if !mapping.writes() {
            return Ok(Work {
                keep: vec![keep(image.clone())],
                ..Work::none()
            });
        }
        let staging = mapping.staging.clone();
        if image.host_ptr.is_some() {
            pack(
                ptr,
                mapping.layout,
                staging.ptr(),
                mapping.region,
                image.element_size,
            );
        }
        let staging = staging.on_device(&queue.vk, image.packed_size(mapping.region))?;
        let place = image.place(queue, mapping.origin, mapping.region)?;
        Ok(Work {
            record: Some(to_image(staging.buffer().raw, 0, place)),
            complete: None,
            keep: vec![keep(staging), keep(image.clone())],
            host_access: false,
            uses: backing_used(image, Access::Write),
        })
    }
}
