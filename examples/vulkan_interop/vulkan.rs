//! The Vulkan program's side of the interop example: its own instance and
//! device on the GPU the OpenCL device runs on (matched by UUID), a buffer
//! whose memory it exports as an opaque file descriptor, and binary
//! semaphores it shares in both directions. The tests use it too, and its
//! shared linear images.

use std::ffi::CStr;

use ash::vk;

pub struct VulkanSide {
    _entry: ash::Entry,
    instance: ash::Instance,
    pub device: ash::Device,
    queue: vk::Queue,
    family: u32,
    pool: vk::CommandPool,
    memory_types: vk::PhysicalDeviceMemoryProperties,
    memory_fd: ash::khr::external_memory_fd::Device,
    /// Where the device shares semaphores through file descriptors.
    semaphore_fd: Option<ash::khr::external_semaphore_fd::Device>,
    /// Everything made, destroyed with the device.
    buffers: Vec<(vk::Buffer, vk::DeviceMemory)>,
    images: Vec<(vk::Image, vk::DeviceMemory)>,
    semaphores: Vec<vk::Semaphore>,
}

/// A linear 2D image of 32-bit unsigned texels whose memory was exported:
/// OpenCL imports the descriptor as an image of the same size, its rows
/// `row_pitch` bytes apart.
#[allow(dead_code)]
pub struct SharedImage {
    pub image: vk::Image,
    pub width: u32,
    pub height: u32,
    pub row_pitch: u64,
    /// Bytes from one layer to the next, as Vulkan reports them.
    pub depth_pitch: u64,
    pub fd: i32,
}

/// A buffer whose memory was exported: the descriptor goes to OpenCL.
pub struct SharedBuffer {
    pub buffer: vk::Buffer,
    pub size: u64,
    pub fd: i32,
}

impl VulkanSide {
    /// Opens the Vulkan device whose deviceUUID is `uuid`, with opaque
    /// file descriptor export of memory, and of semaphores where the
    /// device has it and `semaphores` asks for them.
    pub fn new(uuid: [u8; 16], semaphores: bool) -> Result<VulkanSide, String> {
        // SAFETY: loading the system's Vulkan loader.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("no Vulkan: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: valid create info.
        let instance = unsafe { entry.create_instance(&info, None) }
            .map_err(|e| format!("no Vulkan instance: {e}"))?;
        let found = (|| {
            // SAFETY: plain queries on this instance's devices.
            for pd in unsafe { instance.enumerate_physical_devices() }.ok()? {
                let mut id = vk::PhysicalDeviceIDProperties::default();
                let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
                unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
                if id.device_uuid == uuid {
                    return Some(pd);
                }
            }
            None
        })();
        let Some(pd) = found else {
            // SAFETY: nothing was made from it.
            unsafe { instance.destroy_instance(None) };
            return Err("no Vulkan device has the OpenCL device's UUID".into());
        };
        // SAFETY: plain queries on a device of this instance.
        let (families, extensions, memory_types) = unsafe {
            (
                instance.get_physical_device_queue_family_properties(pd),
                instance
                    .enumerate_device_extension_properties(pd)
                    .unwrap_or_default(),
                instance.get_physical_device_memory_properties(pd),
            )
        };
        let has = |name: &CStr| {
            extensions
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(name))
        };
        let family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .unwrap_or(0) as u32;
        let with_semaphores = semaphores && has(ash::khr::external_semaphore_fd::NAME);
        let mut names = vec![ash::khr::external_memory_fd::NAME.as_ptr()];
        if with_semaphores {
            names.push(ash::khr::external_semaphore_fd::NAME.as_ptr());
        }
        let priorities = [1.0];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&priorities)];
        let create = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&names);
        // SAFETY: a device of this instance; the extensions are present
        // (external memory: the OpenCL device offers it on this device).
        let device = match unsafe { instance.create_device(pd, &create, None) } {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: nothing was made from it.
                unsafe { instance.destroy_instance(None) };
                return Err(format!("no Vulkan device: {e}"));
            }
        };
        // SAFETY: one queue of this family was asked for.
        let queue = unsafe { device.get_device_queue(family, 0) };
        let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(family);
        // SAFETY: valid device and family.
        let pool =
            unsafe { device.create_command_pool(&pool_info, None) }.map_err(|e| e.to_string())?;
        Ok(VulkanSide {
            memory_fd: ash::khr::external_memory_fd::Device::new(&instance, &device),
            semaphore_fd: with_semaphores
                .then(|| ash::khr::external_semaphore_fd::Device::new(&instance, &device)),
            _entry: entry,
            instance,
            device,
            queue,
            family,
            pool,
            memory_types,
            buffers: Vec::new(),
            images: Vec::new(),
            semaphores: Vec::new(),
        })
    }

    pub fn has_semaphores(&self) -> bool {
        self.semaphore_fd.is_some()
    }

    /// A storage buffer of `size` bytes on exportable memory (the first
    /// device-local type it may use, as most programs pick), exported.
    pub fn shared_buffer(&mut self, size: u64) -> Result<SharedBuffer, String> {
        let (buffer, memory) = self.buffer(size, true)?;
        let get = vk::MemoryGetFdInfoKHR::default()
            .memory(memory)
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        // SAFETY: memory made exportable as an opaque descriptor.
        let fd = unsafe { self.memory_fd.get_memory_fd(&get) }.map_err(|e| e.to_string())?;
        Ok(SharedBuffer { buffer, size, fd })
    }

    fn buffer(
        &mut self,
        size: u64,
        exported: bool,
    ) -> Result<(vk::Buffer, vk::DeviceMemory), String> {
        let d = &self.device;
        let handle = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
        let mut info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(
                vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_SRC
                    | vk::BufferUsageFlags::TRANSFER_DST,
            )
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        if exported {
            info = info.push_next(&mut external);
        }
        // SAFETY: valid device and create info.
        let buffer = unsafe { d.create_buffer(&info, None) }.map_err(|e| e.to_string())?;
        // SAFETY: a buffer of this device.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let wanted = if exported {
            vk::MemoryPropertyFlags::DEVICE_LOCAL
        } else {
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT
        };
        let types = &self.memory_types;
        let pick = |want: vk::MemoryPropertyFlags| {
            (0..types.memory_type_count).find(|&t| {
                req.memory_type_bits & (1 << t) != 0
                    && types.memory_types[t as usize].property_flags.contains(want)
            })
        };
        let memory_type = pick(wanted)
            .or_else(|| pick(vk::MemoryPropertyFlags::empty()))
            .ok_or("no memory type")?;
        let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(handle);
        let mut alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(memory_type);
        if exported {
            alloc = alloc.push_next(&mut export);
        }
        // SAFETY: a memory type the buffer may use.
        let memory = unsafe { d.allocate_memory(&alloc, None) }.map_err(|e| e.to_string())?;
        // SAFETY: fresh memory, large enough.
        unsafe { d.bind_buffer_memory(buffer, memory, 0) }.map_err(|e| e.to_string())?;
        self.buffers.push((buffer, memory));
        Ok((buffer, memory))
    }

    /// A binary semaphore exportable as an opaque descriptor.
    pub fn semaphore(&mut self) -> Result<vk::Semaphore, String> {
        let mut export = vk::ExportSemaphoreCreateInfo::default()
            .handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut export);
        // SAFETY: valid device; the extension is enabled.
        let s = unsafe { self.device.create_semaphore(&info, None) }.map_err(|e| e.to_string())?;
        self.semaphores.push(s);
        Ok(s)
    }

    /// A new opaque descriptor for `s`, for OpenCL to import.
    pub fn export_semaphore(&self, s: vk::Semaphore) -> Result<i32, String> {
        let ext = self.semaphore_fd.as_ref().ok_or("no semaphore export")?;
        let info = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(s)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        // SAFETY: a semaphore made exportable as an opaque descriptor.
        unsafe { ext.get_semaphore_fd(&info) }.map_err(|e| e.to_string())
    }

    /// A semaphore whose payload is the one OpenCL exported as `fd`.
    pub fn import_semaphore(&mut self, fd: i32) -> Result<vk::Semaphore, String> {
        let ext = self.semaphore_fd.as_ref().ok_or("no semaphore import")?;
        // SAFETY: valid device.
        let s = unsafe {
            self.device
                .create_semaphore(&vk::SemaphoreCreateInfo::default(), None)
        }
        .map_err(|e| e.to_string())?;
        self.semaphores.push(s);
        let info = vk::ImportSemaphoreFdInfoKHR::default()
            .semaphore(s)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD)
            .fd(fd);
        // SAFETY: a fresh semaphore and a descriptor OpenCL exported.
        unsafe { ext.import_semaphore_fd(&info) }.map_err(|e| e.to_string())?;
        Ok(s)
    }

    /// Records `record` into a command buffer and submits it, waiting
    /// for `wait` and signalling `signal`; returns once the device is
    /// done with it when `signal` is `None`, else at once.
    fn submit(
        &self,
        wait: Option<vk::Semaphore>,
        signal: Option<vk::Semaphore>,
        record: impl FnOnce(vk::CommandBuffer),
    ) -> Result<(), String> {
        let d = &self.device;
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is this device's, used by one thread.
        let cb = unsafe { d.allocate_command_buffers(&info) }.map_err(|e| e.to_string())?[0];
        // SAFETY: a fresh command buffer.
        unsafe { d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()) }
            .map_err(|e| e.to_string())?;
        record(cb);
        // SAFETY: recording.
        unsafe { d.end_command_buffer(cb) }.map_err(|e| e.to_string())?;
        let waits: Vec<vk::Semaphore> = wait.into_iter().collect();
        let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; waits.len()];
        let signals: Vec<vk::Semaphore> = signal.into_iter().collect();
        let cbs = [cb];
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&waits)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&cbs)
            .signal_semaphores(&signals);
        // SAFETY: a recorded command buffer; the semaphores are alive.
        unsafe { d.queue_submit(self.queue, &[submit], vk::Fence::null()) }
            .map_err(|e| e.to_string())?;
        if signal.is_none() {
            // SAFETY: the queue is this device's.
            unsafe { d.queue_wait_idle(self.queue) }.map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Fills the shared buffer with `value`, then signals `signal` (or,
    /// without one, waits until the fill is done). The buffer's memory
    /// then goes to OpenCL (a release to the external queue family).
    pub fn fill(
        &self,
        shared: &SharedBuffer,
        value: u32,
        signal: Option<vk::Semaphore>,
    ) -> Result<(), String> {
        let d = &self.device;
        let family = self.family;
        self.submit(None, signal, |cb| {
            // SAFETY (both): recording; the buffer is alive.
            unsafe { d.cmd_fill_buffer(cb, shared.buffer, 0, shared.size, value) };
            let release = vk::BufferMemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .src_queue_family_index(family)
                .dst_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
                .buffer(shared.buffer)
                .size(vk::WHOLE_SIZE);
            unsafe {
                d.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[release],
                    &[],
                )
            };
        })
    }

    /// The shared buffer's words, copied out once `wait` is signalled (or
    /// at once, without one).
    pub fn read(
        &mut self,
        shared: &SharedBuffer,
        wait: Option<vk::Semaphore>,
    ) -> Result<Vec<u32>, String> {
        let (readback, memory) = self.buffer(shared.size, false)?;
        let d = &self.device;
        let family = self.family;
        self.submit(wait, None, |cb| {
            // The memory comes back from OpenCL (an acquire from the
            // external queue family).
            let acquire = vk::BufferMemoryBarrier::default()
                .dst_access_mask(vk::AccessFlags::TRANSFER_READ)
                .src_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
                .dst_queue_family_index(family)
                .buffer(shared.buffer)
                .size(vk::WHOLE_SIZE);
            // SAFETY: recording; the buffer is alive.
            unsafe {
                d.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[acquire],
                    &[],
                )
            };
            let region = vk::BufferCopy::default().size(shared.size);
            // SAFETY (both): recording; both buffers are alive.
            unsafe { d.cmd_copy_buffer(cb, shared.buffer, readback, &[region]) };
            to_host(d, cb);
        })?;
        words_of(d, memory, shared.size)
    }
}

/// Makes the device's transfer writes so far visible to host reads.
fn to_host(d: &ash::Device, cb: vk::CommandBuffer) {
    let barrier = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::HOST_READ);
    // SAFETY: `cb` is recording.
    unsafe {
        d.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[barrier],
            &[],
            &[],
        )
    };
}

/// The first `size` bytes of host-visible, coherent `memory` the device is
/// done with, as words.
fn words_of(d: &ash::Device, memory: vk::DeviceMemory, size: u64) -> Result<Vec<u32>, String> {
    // SAFETY: as the caller promises; the mapping is read, then unmapped.
    unsafe {
        let p = d
            .map_memory(memory, 0, size, vk::MemoryMapFlags::empty())
            .map_err(|e| e.to_string())?;
        let words = std::slice::from_raw_parts(p as *const u32, size as usize / 4).to_vec();
        d.unmap_memory(memory);
        Ok(words)
    }
}

/// Linear images shared with OpenCL (the tests use them; the example
/// shares a buffer only).
#[allow(dead_code)]
impl VulkanSide {
    fn linear_image_info<'a>(
        width: u32,
        height: u32,
        external: &'a mut vk::ExternalMemoryImageCreateInfo<'a>,
    ) -> vk::ImageCreateInfo<'a> {
        vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(vk::Format::R32_UINT)
            .extent(vk::Extent3D {
                width,
                height,
                depth: 1,
            })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::LINEAR)
            .usage(
                vk::ImageUsageFlags::STORAGE
                    | vk::ImageUsageFlags::TRANSFER_SRC
                    | vk::ImageUsageFlags::TRANSFER_DST,
            )
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .push_next(external)
    }

    /// The memory types a shared linear image of `width` x `height` may
    /// take.
    pub fn image_memory_types(&self, width: u32, height: u32) -> Result<Vec<u32>, String> {
        let d = &self.device;
        let mut external = vk::ExternalMemoryImageCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = Self::linear_image_info(width, height, &mut external);
        // SAFETY: valid device and create info; the image is destroyed here.
        let bits = unsafe {
            let image = d.create_image(&info, None).map_err(|e| e.to_string())?;
            let req = d.get_image_memory_requirements(image);
            d.destroy_image(image, None);
            req.memory_type_bits
        };
        Ok((0..self.memory_types.memory_type_count)
            .filter(|t| bits & (1 << t) != 0)
            .collect())
    }

    /// A linear image of 32-bit unsigned texels on exportable memory of
    /// `memory_type`, its memory exported, in the `GENERAL` layout.
    pub fn shared_image(
        &mut self,
        width: u32,
        height: u32,
        memory_type: u32,
    ) -> Result<SharedImage, String> {
        let d = &self.device;
        let handle = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;
        let mut external = vk::ExternalMemoryImageCreateInfo::default().handle_types(handle);
        let info = Self::linear_image_info(width, height, &mut external);
        // SAFETY: valid device and create info.
        let image = unsafe { d.create_image(&info, None) }.map_err(|e| e.to_string())?;
        // SAFETY: an image of this device.
        let req = unsafe { d.get_image_memory_requirements(image) };
        let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(handle);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(memory_type)
            .push_next(&mut export);
        // SAFETY: a memory type the image may use (the caller asked).
        let memory = unsafe { d.allocate_memory(&alloc, None) }.map_err(|e| e.to_string())?;
        self.images.push((image, memory));
        // SAFETY: fresh memory, large enough.
        unsafe { d.bind_image_memory(image, memory, 0) }.map_err(|e| e.to_string())?;
        let subresource = vk::ImageSubresource {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            array_layer: 0,
        };
        // SAFETY: a linear image of this device.
        let layout = unsafe { d.get_image_subresource_layout(image, subresource) };
        let get = vk::MemoryGetFdInfoKHR::default()
            .memory(memory)
            .handle_type(handle);
        // SAFETY: memory made exportable as an opaque descriptor.
        let fd = unsafe { self.memory_fd.get_memory_fd(&get) }.map_err(|e| e.to_string())?;
        self.submit(None, None, |cb| {
            let barrier = image_barrier(image, vk::ImageLayout::UNDEFINED)
                .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
            image_barrier_cmd(
                d,
                cb,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                vk::PipelineStageFlags::TRANSFER,
                barrier,
            );
        })?;
        Ok(SharedImage {
            image,
            width,
            height,
            row_pitch: layout.row_pitch,
            depth_pitch: layout.depth_pitch,
            fd,
        })
    }

    /// Sets every texel of the shared image to `value` and waits for that;
    /// the image's memory then goes to OpenCL (a release to the external
    /// queue family).
    pub fn fill_image(&self, shared: &SharedImage, value: u32) -> Result<(), String> {
        let d = &self.device;
        let family = self.family;
        self.submit(None, None, |cb| {
            let color = vk::ClearColorValue {
                uint32: [value, 0, 0, 0],
            };
            let range = image_barrier(shared.image, vk::ImageLayout::GENERAL).subresource_range;
            let release = image_barrier(shared.image, vk::ImageLayout::GENERAL)
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .src_queue_family_index(family)
                .dst_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL);
            // SAFETY: recording; the image is alive, in GENERAL.
            unsafe {
                d.cmd_clear_color_image(
                    cb,
                    shared.image,
                    vk::ImageLayout::GENERAL,
                    &color,
                    &[range],
                )
            };
            image_barrier_cmd(
                d,
                cb,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                release,
            );
        })
    }

    /// The shared image's texels, row by row (`width` a row), once the
    /// memory came back from OpenCL (an acquire from the external queue
    /// family).
    pub fn read_image(&mut self, shared: &SharedImage) -> Result<Vec<u32>, String> {
        let size = 4 * u64::from(shared.width) * u64::from(shared.height);
        let (readback, memory) = self.buffer(size, false)?;
        let d = &self.device;
        let family = self.family;
        self.submit(None, None, |cb| {
            let acquire = image_barrier(shared.image, vk::ImageLayout::GENERAL)
                .dst_access_mask(vk::AccessFlags::TRANSFER_READ)
                .src_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
                .dst_queue_family_index(family);
            let region = vk::BufferImageCopy::default()
                .image_subresource(vk::ImageSubresourceLayers {
                    aspect_mask: vk::ImageAspectFlags::COLOR,
                    mip_level: 0,
                    base_array_layer: 0,
                    layer_count: 1,
                })
                .image_extent(vk::Extent3D {
                    width: shared.width,
                    height: shared.height,
                    depth: 1,
                });
            image_barrier_cmd(
                d,
                cb,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                vk::PipelineStageFlags::TRANSFER,
                acquire,
            );
            // SAFETY: recording; the image and the buffer are alive.
            unsafe {
                d.cmd_copy_image_to_buffer(
                    cb,
                    shared.image,
                    vk::ImageLayout::GENERAL,
                    readback,
                    &[region],
                )
            };
            to_host(d, cb);
        })?;
        words_of(d, memory, size)
    }
}

/// Records `barrier` between the stages given.
#[allow(dead_code)]
fn image_barrier_cmd(
    d: &ash::Device,
    cb: vk::CommandBuffer,
    from: vk::PipelineStageFlags,
    to: vk::PipelineStageFlags,
    barrier: vk::ImageMemoryBarrier,
) {
    // SAFETY: `cb` is recording; the caller keeps the image alive.
    unsafe {
        d.cmd_pipeline_barrier(
            cb,
            from,
            to,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &[barrier],
        )
    };
}

#[allow(dead_code)]
/// A barrier on the whole of a one-level, one-layer colour image, from
/// `from` to `GENERAL`, in one queue family; callers add the access and the
/// queue families.
fn image_barrier(image: vk::Image, from: vk::ImageLayout) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .old_layout(from)
        .new_layout(vk::ImageLayout::GENERAL)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(vk::ImageSubresourceRange {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            base_mip_level: 0,
            level_count: 1,
            base_array_layer: 0,
            layer_count: 1,
        })
}

impl Drop for VulkanSide {
    fn drop(&mut self) {
        // SAFETY: everything was made here; the device is idle first.
        unsafe {
            let _ = self.device.device_wait_idle();
            for &s in &self.semaphores {
                self.device.destroy_semaphore(s, None);
            }
            for &(i, m) in &self.images {
                self.device.destroy_image(i, None);
                self.device.free_memory(m, None);
            }
            for &(b, m) in &self.buffers {
                self.device.destroy_buffer(b, None);
                self.device.free_memory(m, None);
            }
            self.device.destroy_command_pool(self.pool, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
