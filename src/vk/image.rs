//! Images in device memory: a `VkImage` with optimal tiling (or linear, on
//! memory imported from another API), kept in the `GENERAL` layout for its
//! whole life so that transfers and kernels can use it without per-command
//! layout transitions (global memory barriers then order every access, as
//! they do for buffers).

use std::sync::Arc;

use ash::vk;
use gpu_allocator::MemoryLocation;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};

use crate::core::census::{self, Kind};
use crate::vk::device::LogicalDevice;

/// The shape of an image in Vulkan terms.
#[derive(Clone, Copy, Debug)]
pub struct ImageShape {
    pub image_type: vk::ImageType,
    pub extent: vk::Extent3D,
    pub layers: u32,
    /// An OpenCL image array (even of one layer): its views are arrays.
    pub arrayed: bool,
}

/// A `VkImage` with its memory, or new views of another one's (an alias).
/// Destroyed on drop.
pub struct DeviceImage {
    device: Arc<LogicalDevice>,
    pub raw: vk::Image,
    allocation: Option<Allocation>,
    /// Memory imported from another API (null where there is none).
    imported: vk::DeviceMemory,
    /// For an imported image: whether an ownership transfer has put it in
    /// the `GENERAL` layout yet (see [`DeviceImage::transfer_layout`]).
    in_general: std::sync::atomic::AtomicBool,
    /// Bytes of the device's budget its memory takes (0 for an alias).
    reserved: u64,
    /// The image an alias views: it owns `raw` and its memory.
    aliased: Option<Arc<DeviceImage>>,
    pub format: vk::Format,
    pub shape: ImageShape,
    pub usage: vk::ImageUsageFlags,
    /// The view kernels sample through (with the swizzle of the format's
    /// channel order), where the image has SAMPLED usage.
    pub sampled_view: vk::ImageView,
    /// The view kernels read and write through, where the image has
    /// STORAGE usage and a format kernels can write.
    pub storage_view: vk::ImageView,
    /// The storage view's format has red and blue exchanged (a stand-in
    /// for a format kernels cannot write): kernels exchange them too.
    pub storage_swaps_red_blue: bool,
}

// SAFETY: plain Vulkan handles and an allocation that is never mapped;
// commands own the image while they use it.
unsafe impl Send for DeviceImage {}
// SAFETY: as above.
unsafe impl Sync for DeviceImage {}

/// The views kernels reach an image through: the sampled view's format and
/// swizzle, and the storage view's format with whether it exchanges red and
/// blue (None: kernels cannot write the image).
#[derive(Clone, Copy)]
pub struct Views {
    pub format: vk::Format,
    pub swizzle: vk::ComponentMapping,
    pub storage: Option<(vk::Format, bool)>,
}

impl DeviceImage {
    /// A new image in the `GENERAL` layout, its contents undefined.
    /// `view_formats` lists every format a view of it may ever take (its
    /// aliases' too); more than its own makes its format mutable.
    pub fn new(
        device: &Arc<LogicalDevice>,
        shape: ImageShape,
        usage: vk::ImageUsageFlags,
        views: Views,
        view_formats: &[vk::Format],
    ) -> Result<Self, vk::Result> {
        let raw = create(device, shape, usage, views.format, view_formats, false)?;
        let d = &device.raw;
        // SAFETY: `raw` was just created on this device.
        let req = unsafe { d.get_image_memory_requirements(raw) };
        let reserved = device.reserve(req.size).inspect_err(|_| {
            // SAFETY: the image is unused.
            unsafe { d.destroy_image(raw, None) };
        })?;
        let location = if device.unified_memory {
            MemoryLocation::CpuToGpu
        } else {
            MemoryLocation::GpuOnly
        };
        let allocation = device
            .allocator()
            .allocate(&AllocationCreateDesc {
                name: "vkcl image",
                requirements: req,
                location,
                linear: false,
                allocation_scheme: AllocationScheme::GpuAllocatorManaged,
            })
            .map_err(|e| {
                log::debug!(target: "vkcl::memory", "allocation of an image of {} bytes failed: {e}", req.size);
                // SAFETY: the image is unused.
                unsafe { d.destroy_image(raw, None) };
                vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
            })?;
        let mut this = DeviceImage::unbound(device, raw, shape, usage, views.format);
        this.reserved = req.size;
        reserved.keep();
        let a = allocation;
        // SAFETY: memory from this device, offset aligned as required.
        let bound = unsafe { d.bind_image_memory(raw, a.memory(), a.offset()) };
        this.allocation = Some(a);
        bound?;
        this.make_views(views)?;
        this.enter_general()?;
        Ok(this)
    }

    /// A linear 2D (or 1D) image on memory another API exported as an
    /// opaque file descriptor, its rows `pitch` bytes apart from the
    /// memory's first byte, as that API's linear image of the same shape
    /// and format lays them out; in the `GENERAL` layout, its texels kept,
    /// and still the other API's (kernels use it after an acquire).
    /// The caller checked that the device makes such images with `usage`
    /// (and views of `view_formats`). `fd` is the image's once this
    /// succeeds and still the caller's after an error;
    /// FORMAT_NOT_SUPPORTED: the device lays the rows out otherwise.
    pub fn import_linear(
        device: &Arc<LogicalDevice>,
        shape: ImageShape,
        usage: vk::ImageUsageFlags,
        views: Views,
        view_formats: &[vk::Format],
        fd: i32,
        pitch: u64,
    ) -> Result<Self, vk::Result> {
        if !device.memory_fd {
            return Err(vk::Result::ERROR_FEATURE_NOT_PRESENT);
        }
        let raw = create(device, shape, usage, views.format, view_formats, true)?;
        let d = &device.raw;
        // Until the memory is bound, dropping `this` destroys `raw` alone.
        let mut this = DeviceImage::unbound(device, raw, shape, usage, views.format);
        let subresource = vk::ImageSubresource {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            array_layer: 0,
        };
        // SAFETY: a linear image of this device, its one subresource.
        let layout = unsafe { d.get_image_subresource_layout(raw, subresource) };
        if layout.offset != 0 || (shape.extent.height > 1 && layout.row_pitch != pitch) {
            log::debug!(target: "vkcl::memory", "a linear image here has rows {} bytes apart from byte {}, not {pitch} from 0", layout.row_pitch, layout.offset);
            return Err(vk::Result::ERROR_FORMAT_NOT_SUPPORTED);
        }
        let mut needs = vk::MemoryDedicatedRequirements::default();
        let mut req2 = vk::MemoryRequirements2::default().push_next(&mut needs);
        let info = vk::ImageMemoryRequirementsInfo2::default().image(raw);
        // SAFETY: `raw` was just created on this device (Vulkan 1.1 or
        // later); valid chain.
        unsafe { d.get_image_memory_requirements2(&info, &mut req2) };
        let req = req2.memory_requirements;
        // The exporter's memory is a dedicated allocation where such an
        // image requires one, and an import must be one too.
        let dedicated = needs.requires_dedicated_allocation != 0;
        log::debug!(target: "vkcl::memory", "a linear {:?} image of {:?} needs {} bytes of memory types {:#x} (dedicated: {dedicated}), rows {pitch} bytes apart", views.format, shape.extent, req.size, req.memory_type_bits);
        let reserved = device.reserve(req.size)?;
        let memory =
            crate::vk::external::import_memory(device, fd, req, req.size, Some((raw, dedicated)))?;
        this.imported = memory;
        this.reserved = req.size;
        reserved.keep();
        // SAFETY: memory of this device, of the size the image needs.
        unsafe { d.bind_image_memory(raw, memory, 0)? };
        crate::vk::external::close(fd);
        this.make_views(views)?;
        // The image is the other API's until an acquire hands it to vkcl.
        *this.in_general.get_mut() = false;
        Ok(this)
    }

    /// The layout an ownership transfer of an imported image (between the
    /// external queue family and vkcl's) leaves, as Vulkan knows it: the
    /// first one comes from `UNDEFINED` (an external image made on imported
    /// memory starts there, and keeps the texels the memory holds; no
    /// transition happens until then), every later one from the `GENERAL`
    /// layout vkcl keeps images in. The transfer moves it to `GENERAL`.
    pub fn transfer_layout(&self) -> vk::ImageLayout {
        if self
            .in_general
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            vk::ImageLayout::GENERAL
        } else {
            vk::ImageLayout::UNDEFINED
        }
    }

    /// `raw`, with no memory and no views yet; counted as alive.
    fn unbound(
        device: &Arc<LogicalDevice>,
        raw: vk::Image,
        shape: ImageShape,
        usage: vk::ImageUsageFlags,
        format: vk::Format,
    ) -> Self {
        census::add(Kind::VulkanImages, 1);
        DeviceImage {
            device: device.clone(),
            raw,
            allocation: None,
            imported: vk::DeviceMemory::null(),
            in_general: std::sync::atomic::AtomicBool::new(true),
            reserved: 0,
            aliased: None,
            format,
            shape,
            usage,
            sampled_view: vk::ImageView::null(),
            storage_view: vk::ImageView::null(),
            storage_swaps_red_blue: false,
        }
    }

    /// Moves the whole image from `UNDEFINED` to `GENERAL`, before any
    /// later work, and waits for that.
    fn enter_general(&self) -> Result<(), vk::Result> {
        let (d, raw, range) = (&self.device.raw, self.raw, self.range());
        self.device.one_shot(|cb| {
            let barrier = vk::ImageMemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::empty())
                .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
                .old_layout(vk::ImageLayout::UNDEFINED)
                .new_layout(vk::ImageLayout::GENERAL)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .image(raw)
                .subresource_range(range);
            // SAFETY: recording state; the image lives through the wait.
            unsafe {
                d.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &[barrier],
                )
            };
        })
    }

    /// New views of `image`'s texels in other formats, each among those
    /// `image` was made to allow; `sampled` says whether the sampled view's
    /// format can be sampled. Its texels live as long as the alias.
    pub fn alias(
        image: &Arc<DeviceImage>,
        views: Views,
        sampled: bool,
    ) -> Result<Self, vk::Result> {
        let mut usage = image.usage;
        if !sampled {
            usage &= !vk::ImageUsageFlags::SAMPLED;
        }
        let mut this = DeviceImage {
            device: image.device.clone(),
            raw: image.raw,
            allocation: None,
            imported: vk::DeviceMemory::null(),
            in_general: std::sync::atomic::AtomicBool::new(true),
            reserved: 0,
            aliased: Some(image.clone()),
            format: views.format,
            shape: image.shape,
            usage,
            sampled_view: vk::ImageView::null(),
            storage_view: vk::ImageView::null(),
            storage_swaps_red_blue: false,
        };
        census::add(Kind::VulkanImages, 1);
        this.make_views(views)?;
        Ok(this)
    }

    /// The views kernels use, each where the image's usage allows it.
    fn make_views(&mut self, views: Views) -> Result<(), vk::Result> {
        let view_type = match (self.shape.image_type, self.shape.arrayed) {
            (vk::ImageType::TYPE_1D, true) => vk::ImageViewType::TYPE_1D_ARRAY,
            (vk::ImageType::TYPE_1D, false) => vk::ImageViewType::TYPE_1D,
            (vk::ImageType::TYPE_2D, true) => vk::ImageViewType::TYPE_2D_ARRAY,
            (vk::ImageType::TYPE_2D, false) => vk::ImageViewType::TYPE_2D,
            _ => vk::ImageViewType::TYPE_3D,
        };
        let range = self.range();
        let d = &self.device.raw;
        let raw = self.raw;
        let view = |format: vk::Format, components: vk::ComponentMapping, usage| {
            // Each view only for what it is used for: the image's usage
            // may include storage its own format lacks.
            let mut view_usage = vk::ImageViewUsageCreateInfo::default().usage(usage);
            let info = vk::ImageViewCreateInfo::default()
                .push_next(&mut view_usage)
                .image(raw)
                .view_type(view_type)
                .format(format)
                .components(components)
                .subresource_range(range);
            // SAFETY: a view of this live image, within its subresources.
            unsafe { d.create_image_view(&info, None) }
        };
        if self.usage.contains(vk::ImageUsageFlags::SAMPLED) {
            self.sampled_view = view(views.format, views.swizzle, vk::ImageUsageFlags::SAMPLED)?;
        }
        if let Some((format, swaps)) = views.storage
            && self.usage.contains(vk::ImageUsageFlags::STORAGE)
        {
            self.storage_view = view(
                format,
                vk::ComponentMapping::default(),
                vk::ImageUsageFlags::STORAGE,
            )?;
            self.storage_swaps_red_blue = swaps;
        }
        Ok(())
    }

    /// Every layer of the one mip level.
    pub fn range(&self) -> vk::ImageSubresourceRange {
        vk::ImageSubresourceRange {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            base_mip_level: 0,
            level_count: 1,
            base_array_layer: 0,
            layer_count: self.shape.layers,
        }
    }

    pub fn device(&self) -> &Arc<LogicalDevice> {
        &self.device
    }
}

impl Drop for DeviceImage {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        census::remove(Kind::VulkanImages, 1);
        self.device.release(self.reserved);
        // SAFETY: commands keep their images alive until they complete;
        // null views are ignored.
        unsafe {
            self.device.raw.destroy_image_view(self.sampled_view, None);
            self.device.raw.destroy_image_view(self.storage_view, None);
            if self.aliased.is_none() {
                self.device.raw.destroy_image(self.raw, None);
            }
            self.device.raw.free_memory(self.imported, None);
        }
        if let Some(a) = self.allocation.take() {
            if let Err(e) = self.device.allocator().free(a) {
                log::warn!(target: "vkcl::memory", "freeing image memory failed: {e}");
            }
        }
    }
}

/// The flags of an image of `format` viewed in `view_formats`: views of
/// other formats make it mutable, and its own format need not support
/// every usage the image has (storage, through another format).
pub fn create_flags(format: vk::Format, view_formats: &[vk::Format]) -> vk::ImageCreateFlags {
    if view_formats.iter().any(|&f| f != format) {
        vk::ImageCreateFlags::MUTABLE_FORMAT | vk::ImageCreateFlags::EXTENDED_USAGE
    } else {
        vk::ImageCreateFlags::empty()
    }
}

/// A new image of `shape` and `format`, no memory bound: optimal tiling,
/// or, for memory imported from another API (`linear_import`), linear and
/// external.
fn create(
    device: &LogicalDevice,
    shape: ImageShape,
    usage: vk::ImageUsageFlags,
    format: vk::Format,
    view_formats: &[vk::Format],
    linear_import: bool,
) -> Result<vk::Image, vk::Result> {
    let flags = create_flags(format, view_formats);
    let mutable = !flags.is_empty();
    let mut list = vk::ImageFormatListCreateInfo::default().view_formats(view_formats);
    let mut external = vk::ExternalMemoryImageCreateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let tiling = if linear_import {
        vk::ImageTiling::LINEAR
    } else {
        vk::ImageTiling::OPTIMAL
    };
    let mut info = vk::ImageCreateInfo::default()
        .flags(flags)
        .image_type(shape.image_type)
        .format(format)
        .extent(shape.extent)
        .mip_levels(1)
        .array_layers(shape.layers)
        .samples(vk::SampleCountFlags::TYPE_1)
        .tiling(tiling)
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .initial_layout(vk::ImageLayout::UNDEFINED);
    if mutable {
        info = info.push_next(&mut list);
    }
    if linear_import {
        info = info.push_next(&mut external);
    }
    // SAFETY: valid device and create info (the caller checked the
    // format's features and the limits).
    unsafe { device.raw.create_image(&info, None) }
}

/// A layout change of the layers a copy touches, ordered after all earlier
/// work and before all later work.
fn transition(
    device: &ash::Device,
    cb: vk::CommandBuffer,
    image: vk::Image,
    layers: vk::ImageSubresourceLayers,
    from: vk::ImageLayout,
    to: vk::ImageLayout,
) {
    let range = vk::ImageSubresourceRange {
        aspect_mask: layers.aspect_mask,
        base_mip_level: layers.mip_level,
        level_count: 1,
        base_array_layer: layers.base_array_layer,
        layer_count: layers.layer_count,
    };
    let barrier = vk::ImageMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
        .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
        .old_layout(from)
        .new_layout(to)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(range);
    // SAFETY: recording state; the caller keeps the image alive.
    unsafe {
        device.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &[barrier],
        )
    };
}

/// Records a buffer-to-image copy of one region, moving the layers it
/// touches to `TRANSFER_DST_OPTIMAL` for the copy and back to `GENERAL`.
pub fn record_copy_to_image(
    device: &ash::Device,
    cb: vk::CommandBuffer,
    src: vk::Buffer,
    dst: vk::Image,
    region: vk::BufferImageCopy,
) {
    let layers = region.image_subresource;
    let (general, optimal) = (
        vk::ImageLayout::GENERAL,
        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
    );
    transition(device, cb, dst, layers, general, optimal);
    // SAFETY: recording state; the region lies inside both objects, which
    // the caller keeps alive.
    unsafe { device.cmd_copy_buffer_to_image(cb, src, dst, optimal, &[region]) };
    transition(device, cb, dst, layers, optimal, general);
}

/// Records an image-to-buffer copy of one region, the layers it touches in
/// `TRANSFER_SRC_OPTIMAL` for the copy.
pub fn record_copy_from_image(
    device: &ash::Device,
    cb: vk::CommandBuffer,
    src: vk::Image,
    dst: vk::Buffer,
    region: vk::BufferImageCopy,
) {
    let layers = region.image_subresource;
    let (general, optimal) = (
        vk::ImageLayout::GENERAL,
        vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
    );
    transition(device, cb, src, layers, general, optimal);
    // SAFETY: as for record_copy_to_image.
    unsafe { device.cmd_copy_image_to_buffer(cb, src, optimal, dst, &[region]) };
    transition(device, cb, src, layers, optimal, general);
}

/// Views of a range of a buffer as texels of one format: how kernels
/// reach the texels of a 1D image buffer, which live in the buffer itself.
pub struct TexelViews {
    device: Arc<LogicalDevice>,
    /// The view kernels read through (a uniform texel buffer), where the
    /// format allows it.
    pub sampled: vk::BufferView,
    /// The view kernels write (and read) through (a storage texel
    /// buffer), where the format or its stand-in allows it.
    pub storage: vk::BufferView,
    /// The storage view's format has red and blue exchanged.
    pub storage_swaps_red_blue: bool,
}

// SAFETY: plain Vulkan handles; commands keep the views while they run.
unsafe impl Send for TexelViews {}
// SAFETY: as above.
unsafe impl Sync for TexelViews {}

impl TexelViews {
    pub fn device(&self) -> &Arc<LogicalDevice> {
        &self.device
    }

    /// Views of `range` bytes of `buffer` from `offset` (a multiple of the
    /// device's texel buffer offset alignment): one to read through as
    /// `format` if `sampled`, one to write through as `storage`'s format.
    pub fn new(
        device: &Arc<LogicalDevice>,
        buffer: vk::Buffer,
        offset: u64,
        range: u64,
        format: vk::Format,
        sampled: bool,
        storage: Option<(vk::Format, bool)>,
    ) -> Result<Self, vk::Result> {
        let mut this = TexelViews {
            device: device.clone(),
            sampled: vk::BufferView::null(),
            storage: vk::BufferView::null(),
            storage_swaps_red_blue: storage.is_some_and(|s| s.1),
        };
        census::add(Kind::TexelViews, 1);
        let view = |format| {
            let info = vk::BufferViewCreateInfo::default()
                .buffer(buffer)
                .format(format)
                .offset(offset)
                .range(range);
            // SAFETY: a live buffer with texel usage; the caller checked
            // the format's buffer features, the offset and the range.
            unsafe { device.raw.create_buffer_view(&info, None) }
        };
        if sampled {
            this.sampled = view(format)?;
        }
        if let Some((f, _)) = storage {
            this.storage = view(f)?;
        }
        Ok(this)
    }
}

impl Drop for TexelViews {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        census::remove(Kind::TexelViews, 1);
        // SAFETY: commands keep their images' views alive until they
        // complete; null views are ignored.
        unsafe {
            self.device.raw.destroy_buffer_view(self.sampled, None);
            self.device.raw.destroy_buffer_view(self.storage, None);
        }
    }
}
