//! The Vulkan logical device behind an OpenCL device, created when the first
//! context uses it and shared by every context after that.

use std::ffi::c_char;
use std::mem::ManuallyDrop;
use std::sync::{Mutex, MutexGuard};

use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};

use crate::vk::memory::StagingPool;
use crate::vk::physical::PhysicalInfo;
use crate::vk::pipeline::PipelineCache;

/// Whether the process is exiting, set by a handler that runs ahead of the
/// driver's own exit handlers (see [`watch_exit`]). Objects released as the
/// process exits (an application's static destructors releasing its
/// programs, as CLBlast's cache does; a queue dropped on the completion
/// worker as the application returns from `main`) must then leave the
/// driver alone: its exit handlers tear down what the calls that destroy
/// Vulkan objects use (lavapipe's and NVIDIA's alike).
static EXITING: std::sync::RwLock<bool> = std::sync::RwLock::new(false);

extern "C" fn on_exit() {
    // Waits for the destruction of objects in progress on other threads.
    *EXITING.write().unwrap_or_else(|e| e.into_inner()) = true;
}

/// Registers [`on_exit`] once, after the driver is loaded: exit handlers
/// run in the reverse order of their registration, so it runs before those
/// the driver registered when it was loaded and set up.
fn watch_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a plain function with no captured state.
    ONCE.call_once(|| unsafe {
        libc::atexit(on_exit);
    });
}

thread_local! {
    /// How many [`DriverGuard`]s this thread holds.
    static GUARDS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Held while objects of a device are destroyed: the process's exit
/// handlers wait for it (see [`LogicalDevice::destroyable`]). A thread
/// takes the lock once, however deeply its guards nest.
pub struct DriverGuard {
    _exit: Option<std::sync::RwLockReadGuard<'static, bool>>,
}

impl Drop for DriverGuard {
    fn drop(&mut self) {
        GUARDS.with(|g| g.set(g.get() - 1));
    }
}

/// A [`DriverGuard`], unless the process is exiting.
fn driver_guard() -> Option<DriverGuard> {
    GUARDS.with(|g| {
        let exit = if g.get() == 0 {
            let exiting = EXITING.read().unwrap_or_else(|e| e.into_inner());
            if *exiting {
                return None;
            }
            Some(exiting)
        } else {
            // This thread holds the lock already, taken before the exit.
            None
        };
        g.set(g.get() + 1);
        Some(DriverGuard { _exit: exit })
    })
}

/// The most Vulkan queues vkcl takes from the compute family.
pub const MAX_QUEUES: usize = 8;

/// How many queues to take of a family that has `available`:
/// `VKCL_QUEUES` (1 to [`MAX_QUEUES`]) or up to [`MAX_QUEUES`].
fn queue_count(available: u32) -> usize {
    let wanted = std::env::var("VKCL_QUEUES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(MAX_QUEUES)
        .clamp(1, MAX_QUEUES);
    wanted.min(available.max(1) as usize)
}

pub struct LogicalDevice {
    pub raw: ash::Device,
    pub queue_family: u32,
    /// The Vulkan queues of the compute family (up to [`MAX_QUEUES`]):
    /// each OpenCL queue submits to one of them (see
    /// [`LogicalDevice::pick_queue`]), so that independent queues run
    /// side by side. Vulkan requires submissions to one queue to be
    /// serialised.
    queues: Vec<Mutex<vk::Queue>>,
    /// The queue the next OpenCL queue takes, round robin.
    next_queue: std::sync::atomic::AtomicUsize,
    allocator: ManuallyDrop<Mutex<Allocator>>,
    /// Device memory is host-visible (CPUs, most integrated GPUs).
    pub unified_memory: bool,
    pub staging: StagingPool,
    /// Every compute pipeline is made through this cache.
    pub pipeline_cache: PipelineCache,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period: f64,
    /// Valid bits of timestamps on the queue (0: no timestamps).
    pub timestamp_bits: u32,
    /// Pool for short internal submissions (initial uploads).
    one_shot_pool: Mutex<vk::CommandPool>,
    /// Host clock minus device clock, in ns, measured once.
    timestamp_offset: std::sync::OnceLock<i64>,
    /// Importing application memory (VK_EXT_external_memory_host), where
    /// the device can.
    pub host_import: Option<HostImport>,
    /// VK_KHR_push_descriptor, where the device has it: image and sampler
    /// descriptors are recorded into the command buffer, without a pool.
    pub push_descriptor: Option<ash::khr::push_descriptor::Device>,
    /// hostQueryReset: query pools are reset on the host, not by a
    /// command the device runs.
    pub host_query_reset: bool,
    /// The device was lost (VK_ERROR_DEVICE_LOST, as after a kernel's
    /// memory fault): nothing submitted to it finishes any more.
    lost: std::sync::atomic::AtomicBool,
    /// Bytes of buffers and images alive, and how many the device may
    /// hold: its memory heap on CPU devices, whose drivers take host
    /// memory without limit (beyond the heap, an application's buffers
    /// would end in the host running out, not in an allocation error);
    /// unlimited elsewhere, where the driver itself refuses.
    committed: std::sync::atomic::AtomicU64,
    budget: u64,
    /// How long a timeline wait polls before it blocks: never on CPU
    /// devices, whose own threads need the cores a poll would take.
    timeline_spin: std::time::Duration,
    /// How long the device may go without finishing submitted work before
    /// vkcl declares it hung (`VKCL_WATCHDOG`): some drivers neither end
    /// nor report a kernel that faulted (NVIDIA's, for stores through
    /// wild pointers), and their queue would otherwise wait for ever.
    pub watchdog: Option<std::time::Duration>,
    /// The watchdog declared the device hung: its work may still be
    /// running, so nothing it may use is freed any more.
    hung: std::sync::atomic::AtomicBool,
    /// Mapping memory at an address of vkcl's choice
    /// (VK_EXT_map_memory_placed), where the device can: SVM on devices
    /// whose memory is not the host's.
    pub placed: Option<PlacedMaps>,
    /// The device's memory types.
    pub memory_props: vk::PhysicalDeviceMemoryProperties,
    /// VK_KHR_external_semaphore_fd, where the device shares semaphores
    /// through file descriptors.
    pub semaphore_fd: Option<ash::khr::external_semaphore_fd::Device>,
    /// VK_KHR_external_memory_fd is enabled: memory is imported from file
    /// descriptors (through vkAllocateMemory, which needs no loader).
    pub memory_fd: bool,
    /// VK_KHR_pipeline_executable_properties, with `VKCL_PIPELINE_STATS=1`
    /// where the device has it: each new pipeline's statistics (registers,
    /// memory) are logged.
    pub pipeline_stats: Option<ash::khr::pipeline_executable_properties::Device>,
}

/// VK_EXT_map_memory_placed (with VK_KHR_map_memory2) on a device.
pub struct PlacedMaps {
    pub ext: ash::khr::map_memory2::Device,
    /// `minPlacedMemoryMapAlignment`.
    pub alignment: u64,
}

/// VK_EXT_external_memory_host on a device.
pub struct HostImport {
    pub ext: ash::ext::external_memory_host::Device,
    /// `minImportedHostPointerAlignment`: imported ranges start and end on
    /// multiples of it.
    pub alignment: u64,
}

impl LogicalDevice {
    /// Creates the device with one compute queue and every feature vkcl uses
    /// that the device has.
    pub fn new(instance: &ash::Instance, info: &PhysicalInfo) -> Result<Self, vk::Result> {
        let queue_family = info
            .compute_queue_family()
            .ok_or(vk::Result::ERROR_FEATURE_NOT_PRESENT)?;
        let count = queue_count(info.queue_families[queue_family as usize].queue_count);
        let priorities = vec![1.0f32; count];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];

        let have = &info.features;
        let features = vk::PhysicalDeviceFeatures::default()
            .shader_int64(true)
            .shader_int16(have.shader_int16 != 0)
            .shader_float64(have.shader_float64 != 0)
            .shader_storage_image_read_without_format(
                have.shader_storage_image_read_without_format != 0,
            )
            .shader_storage_image_write_without_format(
                have.shader_storage_image_write_without_format != 0,
            )
            .robust_buffer_access(false);
        let h11 = &info.features11;
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default()
            .storage_buffer16_bit_access(h11.storage_buffer16_bit_access != 0)
            .uniform_and_storage_buffer16_bit_access(
                h11.uniform_and_storage_buffer16_bit_access != 0,
            )
            .storage_push_constant16(h11.storage_push_constant16 != 0)
            .variable_pointers_storage_buffer(h11.variable_pointers_storage_buffer != 0)
            .variable_pointers(h11.variable_pointers != 0);
        let h12 = &info.features12;
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
            .buffer_device_address(true)
            .timeline_semaphore(true)
            .storage_buffer8_bit_access(h12.storage_buffer8_bit_access != 0)
            .uniform_and_storage_buffer8_bit_access(h12.uniform_and_storage_buffer8_bit_access != 0)
            .storage_push_constant8(h12.storage_push_constant8 != 0)
            .shader_int8(h12.shader_int8 != 0)
            .shader_float16(h12.shader_float16 != 0)
            .shader_subgroup_extended_types(h12.shader_subgroup_extended_types != 0)
            .shader_buffer_int64_atomics(h12.shader_buffer_int64_atomics != 0)
            .shader_shared_int64_atomics(h12.shader_shared_int64_atomics != 0)
            .vulkan_memory_model(h12.vulkan_memory_model != 0)
            .vulkan_memory_model_device_scope(h12.vulkan_memory_model_device_scope != 0)
            .host_query_reset(h12.host_query_reset != 0)
            .scalar_block_layout(h12.scalar_block_layout != 0)
            .uniform_buffer_standard_layout(h12.uniform_buffer_standard_layout != 0);
        let h13 = &info.features13;
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default()
            .subgroup_size_control(h13.subgroup_size_control != 0)
            .compute_full_subgroups(h13.compute_full_subgroups != 0)
            .synchronization2(h13.synchronization2 != 0)
            .shader_integer_dot_product(h13.shader_integer_dot_product != 0)
            .maintenance4(h13.maintenance4 != 0);

        let mut extensions: Vec<*const c_char> = Vec::new();
        let import_ext = ash::ext::external_memory_host::NAME;
        // VKCL_DEVICE_LOCAL=1 treats a device whose memory is the host's
        // like a discrete GPU: buffers the host does not map, transfers
        // through staging buffers or imported host memory. The test suite
        // uses it to run those paths on CPU devices.
        let unified_memory = info.is_unified_memory()
            && std::env::var("VKCL_DEVICE_LOCAL").map_or(true, |v| v != "1");
        // VKCL_HOST_IMPORT=0: transfers never import the application's
        // memory and go through staging buffers only.
        let can_import = info.has_extension(import_ext)
            && !unified_memory
            && std::env::var("VKCL_HOST_IMPORT").map_or(true, |v| v != "0");
        if can_import {
            extensions.push(import_ext.as_ptr());
        }
        // Placed maps, for SVM where the device's memory is not the host's.
        let placed_names = [
            ash::ext::map_memory_placed::NAME,
            ash::khr::map_memory2::NAME,
        ];
        let mut placed_features = vk::PhysicalDeviceMapMemoryPlacedFeaturesEXT::default();
        let mut placed_props = vk::PhysicalDeviceMapMemoryPlacedPropertiesEXT::default();
        // VK_EXT_map_memory_placed appeared with Vulkan 1.3.279.
        let can_place = !unified_memory
            && placed_names.iter().all(|n| info.has_extension(n))
            && crate::vk::instance::validation_knows(vk::make_api_version(0, 1, 3, 279))
            && {
                let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut placed_features);
                // SAFETY: a valid physical device; the extension is present.
                unsafe { instance.get_physical_device_features2(info.handle, &mut f2) };
                let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut placed_props);
                // SAFETY: as above.
                unsafe { instance.get_physical_device_properties2(info.handle, &mut p2) };
                placed_features.memory_map_placed != 0 && placed_features.memory_unmap_reserve != 0
            };
        log::debug!(target: "vkcl::vk", "placed maps for {}: {can_place} (extensions {}, memoryMapPlaced {}, memoryUnmapReserve {})",
            info.name(),
            placed_names.iter().all(|n| info.has_extension(n)),
            placed_features.memory_map_placed,
            placed_features.memory_unmap_reserve);
        let mut placed_enable = vk::PhysicalDeviceMapMemoryPlacedFeaturesEXT::default()
            .memory_map_placed(true)
            .memory_unmap_reserve(true);
        if can_place {
            extensions.extend(placed_names.iter().map(|n| n.as_ptr()));
        }
        // Float atomics on local memory: exchange, load and store (those
        // on device memory are rewritten to integer ones and need nothing).
        let af = &info.atomic_float;
        let shared_float_atomics =
            af.shader_shared_float32_atomics != 0 || af.shader_shared_float64_atomics != 0;
        let mut atomic_float = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
            .shader_shared_float32_atomics(af.shader_shared_float32_atomics != 0)
            .shader_shared_float64_atomics(af.shader_shared_float64_atomics != 0);
        if shared_float_atomics {
            extensions.push(ash::ext::shader_atomic_float::NAME.as_ptr());
        }
        // The kernel clock (cl_khr_kernel_clock).
        let clock = &info.shader_clock;
        let has_clock = clock.shader_subgroup_clock != 0 || clock.shader_device_clock != 0;
        let mut shader_clock = vk::PhysicalDeviceShaderClockFeaturesKHR::default()
            .shader_subgroup_clock(clock.shader_subgroup_clock != 0)
            .shader_device_clock(clock.shader_device_clock != 0);
        if has_clock {
            extensions.push(ash::khr::shader_clock::NAME.as_ptr());
        }
        // Cooperative matrices (cl_vkcl_cooperative_matrix), where the
        // device lists sub-group-scope multiplies.
        let has_coop = !info.cooperative_matrices.is_empty();
        let mut coop =
            vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(true);
        if has_coop {
            extensions.push(ash::khr::cooperative_matrix::NAME.as_ptr());
        }
        let push_ext = ash::khr::push_descriptor::NAME;
        let has_push = info.has_extension(push_ext);
        if has_push {
            extensions.push(push_ext.as_ptr());
        }
        // Sharing with other APIs (cl_khr_external_semaphore and
        // cl_khr_external_memory).
        let external = &info.external;
        let has_semaphore_fd =
            !external.semaphore_import.is_empty() || !external.semaphore_export.is_empty();
        if has_semaphore_fd {
            extensions.push(ash::khr::external_semaphore_fd::NAME.as_ptr());
        }
        let has_memory_fd = external.memory_import;
        if has_memory_fd {
            extensions.push(ash::khr::external_memory_fd::NAME.as_ptr());
        }
        // The driver's statistics of each pipeline, on request.
        let stats_ext = ash::khr::pipeline_executable_properties::NAME;
        let mut stats_features =
            vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let has_stats = std::env::var("VKCL_PIPELINE_STATS").is_ok_and(|v| v == "1")
            && info.has_extension(stats_ext)
            && {
                let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut stats_features);
                // SAFETY: a valid physical device; the extension is present.
                unsafe { instance.get_physical_device_features2(info.handle, &mut f2) };
                stats_features.pipeline_executable_info != 0
            };
        let mut stats_enable = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
            .pipeline_executable_info(true);
        if has_stats {
            extensions.push(stats_ext.as_ptr());
        }
        let mut create = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_features(&features)
            .enabled_extension_names(&extensions)
            .push_next(&mut f11)
            .push_next(&mut f12);
        if can_place {
            create = create.push_next(&mut placed_enable);
        }
        if shared_float_atomics {
            create = create.push_next(&mut atomic_float);
        }
        if has_clock {
            create = create.push_next(&mut shader_clock);
        }
        if has_coop {
            create = create.push_next(&mut coop);
        }
        if has_stats {
            create = create.push_next(&mut stats_enable);
        }
        if info.props.api_version >= vk::API_VERSION_1_3 {
            create = create.push_next(&mut f13);
        }
        // SAFETY: `info.handle` comes from `instance`; every feature enabled
        // above was reported present; all pointers outlive the call.
        let raw = unsafe { instance.create_device(info.handle, &create, None)? };
        // SAFETY: `count` queues of this family were requested above.
        let vk_queues: Vec<Mutex<vk::Queue>> = (0..count as u32)
            .map(|i| Mutex::new(unsafe { raw.get_device_queue(queue_family, i) }))
            .collect();
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: instance.clone(),
            device: raw.clone(),
            physical_device: info.handle,
            debug_settings: Default::default(),
            buffer_device_address: true,
            allocation_sizes: Default::default(),
        })
        .map_err(|e| {
            log::error!(target: "vkcl::vk", "cannot set up the memory allocator: {e}");
            // SAFETY: nothing was created from the device yet.
            unsafe { raw.destroy_device(None) };
            vk::Result::ERROR_INITIALIZATION_FAILED
        })?;
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(queue_family)
            .flags(vk::CommandPoolCreateFlags::TRANSIENT);
        // SAFETY: valid device and family.
        let one_shot_pool = unsafe { raw.create_command_pool(&pool_info, None)? };
        let pipeline_cache = PipelineCache::new(&raw, info);
        let host_import = can_import.then(|| {
            let mut props = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut props);
            // SAFETY: a valid physical device; the extension is present.
            unsafe { instance.get_physical_device_properties2(info.handle, &mut p2) };
            HostImport {
                ext: ash::ext::external_memory_host::Device::new(instance, &raw),
                alignment: props.min_imported_host_pointer_alignment.max(1),
            }
        });
        let placed = can_place.then(|| PlacedMaps {
            ext: ash::khr::map_memory2::Device::new(instance, &raw),
            alignment: placed_props.min_placed_memory_map_alignment.max(4096),
        });
        let push_descriptor =
            has_push.then(|| ash::khr::push_descriptor::Device::new(instance, &raw));
        let semaphore_fd =
            has_semaphore_fd.then(|| ash::khr::external_semaphore_fd::Device::new(instance, &raw));
        let pipeline_stats = has_stats
            .then(|| ash::khr::pipeline_executable_properties::Device::new(instance, &raw));
        log::info!(target: "vkcl::vk", "created Vulkan device for {}", info.name());
        crate::core::census::add(crate::core::census::Kind::VulkanDevices, 1);
        watch_exit();
        Ok(LogicalDevice {
            raw,
            queue_family,
            queues: vk_queues,
            next_queue: std::sync::atomic::AtomicUsize::new(0),
            allocator: ManuallyDrop::new(Mutex::new(allocator)),
            unified_memory,
            staging: StagingPool::default(),
            pipeline_cache,
            timestamp_period: info.props.limits.timestamp_period as f64,
            timestamp_bits: info.queue_families[queue_family as usize].timestamp_valid_bits,
            one_shot_pool: Mutex::new(one_shot_pool),
            timestamp_offset: std::sync::OnceLock::new(),
            host_import,
            push_descriptor,
            host_query_reset: info.features12.host_query_reset != 0,
            timeline_spin: if info.props.device_type == vk::PhysicalDeviceType::CPU {
                std::time::Duration::ZERO
            } else {
                std::time::Duration::from_micros(200)
            },
            placed,
            memory_props: info.memory,
            semaphore_fd,
            memory_fd: has_memory_fd,
            pipeline_stats,
            lost: std::sync::atomic::AtomicBool::new(false),
            watchdog: watchdog(info.props.device_type == vk::PhysicalDeviceType::CPU),
            hung: std::sync::atomic::AtomicBool::new(false),
            committed: std::sync::atomic::AtomicU64::new(0),
            budget: if info.props.device_type == vk::PhysicalDeviceType::CPU {
                info.device_local_heap_size()
            } else {
                u64::MAX
            },
        })
    }

    /// Counts `bytes` of a new buffer or image against the device's
    /// budget; an allocation error when they do not fit. The bytes count
    /// until the guard is dropped, or for good once it is kept (the
    /// object's own drop then calls [`LogicalDevice::release`]).
    pub fn reserve(&self, bytes: u64) -> Result<Reserved<'_>, vk::Result> {
        use std::sync::atomic::Ordering;
        let budget = self.budget;
        self.committed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                c.checked_add(bytes).filter(|&n| n <= budget)
            })
            .map_err(|c| {
                log::warn!(target: "vkcl::memory", "{bytes} bytes more do not fit the device's {budget} ({c} in use)");
                vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
            })?;
        Ok(Reserved {
            device: self,
            bytes,
        })
    }

    /// Returns the bytes of a buffer or image that is gone.
    pub fn release(&self, bytes: u64) {
        self.committed
            .fetch_sub(bytes, std::sync::atomic::Ordering::AcqRel);
    }

    /// Whether the device was lost: work for it then fails at once.
    pub fn is_lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Notes what a Vulkan call returned: a lost device stays lost.
    fn note<T>(&self, r: Result<T, vk::Result>) -> Result<T, vk::Result> {
        if matches!(r, Err(vk::Result::ERROR_DEVICE_LOST)) {
            self.mark_lost();
        }
        r
    }

    /// Marks the device lost (a wait or submission failed for good).
    pub fn mark_lost(&self) {
        if !self.lost.swap(true, std::sync::atomic::Ordering::AcqRel) {
            log::error!(target: "vkcl::vk", "the Vulkan device was lost: its commands fail from now on");
        }
    }

    /// Declares the device hung: submitted work went `waited` without
    /// finishing, past the watchdog. It counts as lost; the work may
    /// still run, so whatever it uses stays allocated.
    pub fn declare_hung(&self, waited: std::time::Duration) {
        if !self.hung.swap(true, std::sync::atomic::Ordering::AcqRel) {
            log::error!(
                target: "vkcl::vk",
                "no submitted work finished for {:.0} s (VKCL_WATCHDOG): the device is taken as hung",
                waited.as_secs_f64()
            );
        }
        self.mark_lost();
    }

    /// Gives up on the device after a wait failed with `error`, which is
    /// not VK_ERROR_DEVICE_LOST: submitted work may still run, so, as on
    /// a hung device, whatever it uses stays allocated.
    pub fn abandon(&self, error: vk::Result) {
        if !self.hung.swap(true, std::sync::atomic::Ordering::AcqRel) {
            log::error!(target: "vkcl::vk", "waiting for the device failed ({error}): it is given up, and what its work uses stays allocated");
        }
        self.mark_lost();
    }

    /// Whether the device was given up with work that may still run
    /// (the watchdog took it as hung, or a wait failed).
    pub fn is_hung(&self) -> bool {
        self.hung.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether this device's objects may be destroyed now, as a guard to
    /// hold through the driver calls that destroy them: not on a hung
    /// device (work the watchdog gave up on may still use them), nor while
    /// the process exits (the driver may be torn down already).
    pub fn destroyable(&self) -> Option<DriverGuard> {
        if self.is_hung() {
            return None;
        }
        driver_guard()
    }

    /// The host clock (`host_time_ns`) minus the device's timestamp clock,
    /// in ns: measured by writing a timestamp between two host readings,
    /// keeping the tightest of a few tries.
    pub fn timestamp_offset(&self) -> i64 {
        *self.timestamp_offset.get_or_init(|| {
            let measured = self.measure_timestamp_offset();
            match measured {
                Ok(o) => {
                    log::debug!(target: "vkcl::vk", "device timestamps are host time - {o} ns");
                    o
                }
                Err(e) => {
                    log::warn!(target: "vkcl::vk", "cannot calibrate device timestamps: {e}");
                    0
                }
            }
        })
    }

    fn measure_timestamp_offset(&self) -> Result<i64, vk::Result> {
        if self.timestamp_bits == 0 {
            return Ok(0);
        }
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(1);
        // SAFETY: valid device; the pool is destroyed below.
        let qp = unsafe { self.raw.create_query_pool(&info, None)? };
        let mut best: Option<(u64, i64)> = None;
        let mut result = Ok(());
        for _ in 0..5 {
            let t0 = crate::core::event::host_time_ns();
            let r = self.one_shot(|cb| {
                // SAFETY: recording state; the pool has one query.
                unsafe {
                    self.raw.cmd_reset_query_pool(cb, qp, 0, 1);
                    self.raw
                        .cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, qp, 0);
                }
            });
            let t1 = crate::core::event::host_time_ns();
            if let Err(e) = r {
                result = Err(e);
                break;
            }
            let mut ticks = [0u64; 1];
            // SAFETY: the submission finished; one 64-bit result.
            unsafe {
                self.raw
                    .get_query_pool_results(qp, 0, &mut ticks, vk::QueryResultFlags::TYPE_64)?
            };
            let device_ns = (ticks[0] as f64 * self.timestamp_period) as i64;
            let mid = (t0 / 2 + t1 / 2) as i64;
            let width = t1 - t0;
            if best.is_none_or(|(w, _)| width < w) {
                best = Some((width, mid - device_ns));
            }
        }
        // SAFETY: no submission uses the pool any more.
        unsafe { self.raw.destroy_query_pool(qp, None) };
        result?;
        Ok(best.map(|b| b.1).unwrap_or(0))
    }

    pub fn allocator(&self) -> MutexGuard<'_, Allocator> {
        self.allocator.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The Vulkan queue for a new OpenCL queue: the device's queues in
    /// turn.
    pub fn pick_queue(&self) -> usize {
        self.next_queue
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % self.queues.len()
    }

    /// How many Vulkan queues the OpenCL queues share.
    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }

    /// Submits to the device's queue number `index` (see
    /// [`LogicalDevice::pick_queue`]).
    pub fn submit(
        &self,
        index: usize,
        submits: &[vk::SubmitInfo<'_>],
        fence: vk::Fence,
    ) -> Result<(), vk::Result> {
        let queue = self.queues[index % self.queues.len()]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // SAFETY: the queue is externally synchronised by the lock; the
        // caller's submit infos reference live objects.
        self.note(unsafe { self.raw.queue_submit(*queue, submits, fence) })
    }

    /// A timeline semaphore starting at zero.
    pub fn create_timeline(&self) -> Result<vk::Semaphore, vk::Result> {
        let mut kind = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
        // SAFETY: valid device; timelineSemaphore is enabled.
        unsafe { self.raw.create_semaphore(&info, None) }
    }

    /// Waits until `semaphore` reaches `value`, for at most `timeout_ns`.
    /// How long a thread that waits for the device polls before it
    /// sleeps: zero on CPU devices, whose work needs the cores.
    pub fn spin(&self) -> std::time::Duration {
        self.timeline_spin
    }

    /// Waits until one of `waits` (timeline semaphores of this device
    /// and values) is reached, at most `timeout_ns` (after polling them
    /// for the device's `spin`); returns the index of one reached, or
    /// `None` on timeout.
    pub fn wait_any(
        &self,
        waits: &[(vk::Semaphore, u64)],
        timeout_ns: u64,
    ) -> Result<Option<usize>, vk::Result> {
        let reached = || -> Result<Option<usize>, vk::Result> {
            for (i, &(semaphore, value)) in waits.iter().enumerate() {
                // SAFETY: valid timeline semaphore of this device.
                if self.note(unsafe { self.raw.get_semaphore_counter_value(semaphore) })? >= value {
                    return Ok(Some(i));
                }
            }
            Ok(None)
        };
        let spin_until = std::time::Instant::now() + self.timeline_spin;
        loop {
            if let Some(i) = reached()? {
                return Ok(Some(i));
            }
            if std::time::Instant::now() >= spin_until {
                break;
            }
            std::hint::spin_loop();
        }
        let (sems, values): (Vec<vk::Semaphore>, Vec<u64>) = waits.iter().copied().unzip();
        let info = vk::SemaphoreWaitInfo::default()
            .flags(vk::SemaphoreWaitFlags::ANY)
            .semaphores(&sems)
            .values(&values);
        // SAFETY: valid semaphores of this device.
        match self.note(unsafe { self.raw.wait_semaphores(&info, timeout_ns) }) {
            Ok(()) => reached(),
            Err(vk::Result::TIMEOUT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn wait_timeline(
        &self,
        semaphore: vk::Semaphore,
        value: u64,
        timeout_ns: u64,
    ) -> Result<bool, vk::Result> {
        // Short commands finish within microseconds, far sooner than a
        // blocking wait wakes up on some drivers (NVIDIA's takes tens of
        // microseconds): poll the counter briefly first.
        let spin_until = std::time::Instant::now() + self.timeline_spin;
        loop {
            // SAFETY: valid timeline semaphore of this device.
            if self.note(unsafe { self.raw.get_semaphore_counter_value(semaphore) })? >= value {
                return Ok(true);
            }
            if std::time::Instant::now() >= spin_until {
                break;
            }
            std::hint::spin_loop();
        }
        let sems = [semaphore];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&sems)
            .values(&values);
        // SAFETY: valid semaphore of this device.
        match self.note(unsafe { self.raw.wait_semaphores(&info, timeout_ns) }) {
            Ok(()) => Ok(true),
            Err(vk::Result::TIMEOUT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Records commands with `record`, submits them and waits for them:
    /// for work outside any OpenCL queue, such as a buffer's initial data.
    /// On a lost or hung device it fails at once: the work would never
    /// finish, and every caller would wait for it in turn.
    pub fn one_shot(&self, record: impl FnOnce(vk::CommandBuffer)) -> Result<(), vk::Result> {
        if self.is_lost() {
            return Err(vk::Result::ERROR_DEVICE_LOST);
        }
        let pool = self.one_shot_pool.lock().unwrap_or_else(|e| e.into_inner());
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(*pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY (whole block): the pool is used under its lock only; the
        // command buffer and fence are freed before returning, after the
        // fence says the work is done.
        unsafe {
            let cb = self.raw.allocate_command_buffers(&alloc)?[0];
            let result = (|| {
                self.raw.begin_command_buffer(
                    cb,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )?;
                record(cb);
                self.raw.end_command_buffer(cb)?;
                let fence = self
                    .raw
                    .create_fence(&vk::FenceCreateInfo::default(), None)?;
                let cbs = [cb];
                let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
                let r = self
                    .submit(0, &submit, fence)
                    .and_then(|()| self.wait_fence(fence));
                if !self.is_hung() {
                    self.raw.destroy_fence(fence, None);
                }
                r
            })();
            // A hung device may still run the command buffer: it stays.
            if !self.is_hung() {
                self.raw.free_command_buffers(*pool, &[cb]);
            }
            result
        }
    }
}

/// Bytes counted against a device's budget (see [`LogicalDevice::reserve`]).
pub struct Reserved<'a> {
    device: &'a LogicalDevice,
    bytes: u64,
}

impl Reserved<'_> {
    /// The bytes stay counted: the object they were for now exists.
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.device.release(self.bytes);
    }
}

impl LogicalDevice {
    /// Waits for `fence`, in steps, until it is signalled, the device is
    /// lost, or the watchdog runs out.
    fn wait_fence(&self, fence: vk::Fence) -> Result<(), vk::Result> {
        let start = std::time::Instant::now();
        // As for timelines (see `wait_timeline`): short work is done
        // sooner than a blocking wait wakes up on some drivers.
        while start.elapsed() < self.timeline_spin {
            // SAFETY: a fence of this device, submitted with work.
            if self.note(unsafe { self.raw.get_fence_status(fence) })? {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        loop {
            // SAFETY: a fence of this device, submitted with work.
            match self.note(unsafe { self.raw.wait_for_fences(&[fence], true, 1_000_000_000) }) {
                Err(vk::Result::TIMEOUT) => {}
                r => return r,
            }
            if self.is_lost() {
                return Err(vk::Result::ERROR_DEVICE_LOST);
            }
            if self.watchdog.is_some_and(|limit| start.elapsed() >= limit) {
                self.declare_hung(start.elapsed());
                return Err(vk::Result::ERROR_DEVICE_LOST);
            }
        }
    }
}

/// `VKCL_WATCHDOG`: seconds, `0` for none. By default 60 s on GPUs, longer
/// than Linux's amdgpu now lets a Vulkan compute job run (10 s), and none
/// on CPU devices, whose kernels run on the application's own threads and
/// cannot hang a device, only take long.
fn watchdog(cpu: bool) -> Option<std::time::Duration> {
    let seconds = match std::env::var("VKCL_WATCHDOG") {
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => s,
            _ => {
                log::warn!(target: "vkcl::vk", "VKCL_WATCHDOG={v} is not a number of seconds: ignored");
                if cpu { 0.0 } else { 60.0 }
            }
        },
        Err(_) if cpu => 0.0,
        Err(_) => 60.0,
    };
    (seconds > 0.0).then(|| std::time::Duration::from_secs_f64(seconds))
}

impl Drop for LogicalDevice {
    fn drop(&mut self) {
        // On a hung device work may still run: destroying what it uses, or
        // the device, could crash the driver. It stays, as it does while
        // the process exits.
        let Some(_driver) = self.destroyable() else {
            return;
        };
        // SAFETY: the device is idle-waited and every child object was
        // destroyed by its owner before the last reference to it went away.
        unsafe {
            let _ = self.raw.device_wait_idle();
            let pool = *self
                .one_shot_pool
                .get_mut()
                .unwrap_or_else(|e| e.into_inner());
            self.raw.destroy_command_pool(pool, None);
            self.pipeline_cache.destroy(&self.raw);
            // The allocator frees its memory blocks, which needs the device.
            ManuallyDrop::drop(&mut self.allocator);
            self.raw.destroy_device(None);
        }
        crate::core::census::remove(crate::core::census::Kind::VulkanDevices, 1);
    }
}
