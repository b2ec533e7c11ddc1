//! An OpenCL device: one Vulkan physical device, with the OpenCL-facing
//! figures derived from what Vulkan reports.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use ash::vk;
use opencl_sys::*;

use crate::compiler::spirv::p1_kernel::matrix::{Component, MatrixVariant};
use crate::core::error::{ClError, ClResult};
use crate::core::format::{self, FormatEntry};
use crate::core::object::{ClObject, Handle};
use crate::core::queue::Queue;
use crate::core::semaphore;
use crate::core::worker::Worker;
use crate::vk::device::LogicalDevice;
use crate::vk::instance::Instance;
use crate::vk::physical::PhysicalInfo;

/// CL_DEVICE_IMAGE_PITCH_ALIGNMENT, in texels: the row pitch of a 2D image
/// made from a buffer may be any whole number of texels, since its rows
/// reach the image kernels use through buffer-image copies, which take
/// any row length.
pub const IMAGE_PITCH_ALIGNMENT: u32 = 1;

/// CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT, in texels: those copies need
/// offsets that are whole texels.
pub const IMAGE_BASE_ADDRESS_ALIGNMENT: u32 = 1;

/// CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE: the specification's minimum.
pub const MAX_GLOBAL_VARIABLE_SIZE: usize = 64 * 1024;

/// The largest pipe packet (CL_DEVICE_PIPE_MAX_PACKET_SIZE): the
/// specification's minimum, a `long16` eight times over. Kernels copy
/// packets unit by unit, unrolled.
pub const PIPE_MAX_PACKET_SIZE: u32 = 1024;

/// Pipe arguments a kernel may take (CL_DEVICE_MAX_PIPE_ARGS), each one
/// device address among the arguments.
pub const MAX_PIPE_ARGS: u32 = 16;

/// Reservations a work-item may hold at once on a pipe
/// (CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS). A reservation is only two
/// words in the kernel, so vkcl sets no limit of its own; this bounds
/// what the CTS checks in one kernel's loop.
pub const PIPE_MAX_ACTIVE_RESERVATIONS: u32 = 4096;

pub struct Device {
    pub instance: Arc<Instance>,
    pub info: PhysicalInfo,
    /// The index Vulkan enumerated this device at (what `VKCL_DEVICE` takes).
    pub vulkan_index: usize,
    logical: Mutex<Option<Arc<LogicalDevice>>>,
    queues: Mutex<Vec<Weak<Handle<Queue>>>>,
    worker: OnceLock<Arc<Worker>>,
    repumping: Mutex<()>,
    repump_again: AtomicBool,
    /// Whether buffer device addresses are the host addresses of their
    /// mappings (see `Device::coarse_svm`), found on first need.
    pub(crate) svm_identity: OnceLock<bool>,
    /// The cooperative matrix multiply-adds kernels may use
    /// (cl_vkcl_cooperative_matrix), kept for the life of the process.
    matrices: &'static [MatrixVariant],
}

/// The largest images a device takes.
#[derive(Clone, Copy, Debug)]
pub struct ImageLimits {
    pub width_1d: usize,
    pub side_2d: usize,
    pub side_3d: usize,
    pub layers: usize,
}

impl ClObject for Device {
    const INVALID: i32 = CL_INVALID_DEVICE;
}

/// Extensions vkcl offers, with their versions; a device lists those whose
/// Vulkan requirements it meets (see [`Device::extensions`]).
pub const PLATFORM_EXTENSIONS: &[(&str, cl_version)] = &[
    ("cl_khr_icd", make_version(1, 0, 0)),
    ("cl_khr_extended_versioning", make_version(1, 0, 0)),
    ("cl_khr_device_uuid", make_version(1, 0, 0)),
    ("cl_khr_semaphore", make_version(1, 0, 0)),
    ("cl_khr_command_buffer", make_version(0, 9, 8)),
    (
        "cl_khr_command_buffer_mutable_dispatch",
        make_version(0, 9, 5),
    ),
];

/// OpenCL C extensions every device's kernels support (what OpenCL C 1.1
/// and later make core, reported for the applications that check).
pub const KERNEL_EXTENSIONS: &[(&str, cl_version)] = &[
    ("cl_khr_byte_addressable_store", make_version(1, 0, 0)),
    ("cl_khr_global_int32_base_atomics", make_version(1, 0, 0)),
    (
        "cl_khr_global_int32_extended_atomics",
        make_version(1, 0, 0),
    ),
    ("cl_khr_local_int32_base_atomics", make_version(1, 0, 0)),
    ("cl_khr_local_int32_extended_atomics", make_version(1, 0, 0)),
    ("cl_ext_buffer_device_address", make_version(1, 0, 2)),
    ("cl_khr_extended_bit_ops", make_version(1, 0, 0)),
];

/// `CL_MAKE_VERSION`.
pub const fn make_version(major: u32, minor: u32, patch: u32) -> cl_version {
    (major << 22) | (minor << 12) | patch
}

impl Device {
    pub fn new(instance: Arc<Instance>, info: PhysicalInfo, vulkan_index: usize) -> Device {
        let matrices = Box::leak(cooperative_matrices(&info).into_boxed_slice());
        Device {
            matrices,
            instance,
            info,
            vulkan_index,
            logical: Mutex::new(None),
            queues: Mutex::new(Vec::new()),
            worker: OnceLock::new(),
            repumping: Mutex::new(()),
            repump_again: AtomicBool::new(false),
            svm_identity: OnceLock::new(),
        }
    }

    pub fn worker(&self) -> &Arc<Worker> {
        self.worker.get_or_init(Default::default)
    }

    pub fn register_queue(&self, q: &Arc<Handle<Queue>>) {
        let mut qs = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        qs.retain(|w| w.strong_count() > 0);
        qs.push(Arc::downgrade(q));
    }

    /// Lets every queue of the device try again to record commands that
    /// were held back: called whenever an event moves on. Never recurses:
    /// a call while another is running makes that one go round again.
    pub fn repump(&self) {
        loop {
            self.repump_again.store(true, Ordering::SeqCst);
            let Ok(_guard) = self.repumping.try_lock() else {
                return;
            };
            while self.repump_again.swap(false, Ordering::SeqCst) {
                let queues: Vec<_> = self
                    .queues
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .filter_map(Weak::upgrade)
                    .collect();
                for q in queues {
                    q.repump();
                }
            }
            drop(_guard);
            if !self.repump_again.load(Ordering::SeqCst) {
                return;
            }
        }
    }

    /// The Vulkan device, created on first use.
    pub fn logical(&self) -> ClResult<Arc<LogicalDevice>> {
        let mut slot = self.logical.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = slot.as_ref() {
            return Ok(d.clone());
        }
        let dev = LogicalDevice::new(&self.instance.raw, &self.info).map_err(|e| {
            log::error!(target: "vkcl::device", "cannot create the Vulkan device for {}: {e}", self.name());
            ClError::from(e)
        })?;
        let dev = Arc::new(dev);
        *slot = Some(dev.clone());
        Ok(dev)
    }

    /// Destroys the device's Vulkan device if nothing uses it any more
    /// (every OpenCL object on it released and every command completed),
    /// with the staging buffers kept for reuse; the next use makes a new
    /// one. Gives whether the device holds no Vulkan device now.
    pub fn release_logical(&self) -> bool {
        let mut slot = self.logical.lock().unwrap_or_else(|e| e.into_inner());
        let Some(d) = slot.take() else {
            return true;
        };
        d.staging.clear();
        match Arc::try_unwrap(d) {
            Ok(d) => {
                drop(d);
                log::info!(target: "vkcl::device", "released the Vulkan device of {}", self.name());
                true
            }
            Err(d) => {
                *slot = Some(d);
                false
            }
        }
    }

    pub fn name(&self) -> String {
        self.info.name()
    }

    pub fn device_type(&self) -> cl_device_type {
        match self.info.props.device_type {
            vk::PhysicalDeviceType::CPU => CL_DEVICE_TYPE_CPU,
            vk::PhysicalDeviceType::DISCRETE_GPU
            | vk::PhysicalDeviceType::INTEGRATED_GPU
            | vk::PhysicalDeviceType::VIRTUAL_GPU => CL_DEVICE_TYPE_GPU,
            _ => CL_DEVICE_TYPE_ACCELERATOR,
        }
    }

    /// CL_DEVICE_VENDOR: vkcl itself, never the hardware maker's string.
    /// Libraries compare this string with the vendors' own OpenCL
    /// ("NVIDIA Corporation", "Advanced Micro Devices, Inc.", ...) and then
    /// take paths that only that vendor's compiler runs: inline PTX or GCN
    /// assembly, `cl_nv_*`/`cl_amd_*` queries. The hardware stays visible
    /// through CL_DEVICE_NAME (the Vulkan device name) and
    /// CL_DEVICE_VENDOR_ID (its PCI vendor id), which portable code uses
    /// for tuning.
    pub fn vendor_name(&self) -> &'static str {
        crate::core::platform::VENDOR
    }

    /// The Vulkan driver behind the device, for humans.
    pub fn vulkan_driver(&self) -> String {
        let p = &self.info.props12;
        let name = p
            .driver_name_as_c_str()
            .map(|s| s.to_string_lossy().into_owned());
        let info = p
            .driver_info_as_c_str()
            .map(|s| s.to_string_lossy().into_owned());
        format!("{} {}", name.unwrap_or_default(), info.unwrap_or_default())
            .trim()
            .to_string()
    }

    /// Extensions this device offers, with their versions.
    pub fn extensions(&self) -> Vec<(&'static str, cl_version)> {
        let mut ext = PLATFORM_EXTENSIONS.to_vec();
        ext.extend_from_slice(KERNEL_EXTENSIONS);
        if self.has_int64_atomics() {
            ext.push(("cl_khr_int64_base_atomics", make_version(1, 0, 0)));
            ext.push(("cl_khr_int64_extended_atomics", make_version(1, 0, 0)));
        }
        // Sub-groups are offered as the OpenCL 3.0 feature: the
        // cl_khr_subgroups extension requires independent forward progress,
        // which Vulkan does not promise. The cl_khr_subgroup_* extensions
        // follow the device's sub-group operations.
        ext.extend(
            self.subgroup_extensions()
                .iter()
                .map(|&n| (n, make_version(1, 0, 0))),
        );
        if self.info.pci.is_some() {
            ext.push(("cl_khr_pci_bus_info", make_version(1, 0, 0)));
        }
        if !self.required_subgroup_sizes().is_empty() {
            ext.push(("cl_intel_required_subgroup_size", make_version(1, 0, 0)));
        }
        if self.has_integer_dot_product() {
            ext.push(("cl_khr_integer_dot_product", make_version(2, 0, 0)));
        }
        if self.kernel_clock_capabilities() != 0 {
            ext.push(("cl_khr_kernel_clock", make_version(1, 0, 0)));
        }
        if !self.matrices.is_empty() {
            ext.push(("cl_vkcl_cooperative_matrix", make_version(1, 0, 0)));
        }
        let import = self.semaphore_import_types();
        let export = self.semaphore_export_types();
        if !import.is_empty() || !export.is_empty() {
            ext.push(("cl_khr_external_semaphore", make_version(1, 0, 1)));
            let either = |t| import.contains(&t) || export.contains(&t);
            if either(CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR) {
                ext.push(("cl_khr_external_semaphore_opaque_fd", make_version(1, 0, 0)));
            }
            if either(CL_SEMAPHORE_HANDLE_SYNC_FD_KHR) {
                ext.push(("cl_khr_external_semaphore_sync_fd", make_version(1, 0, 0)));
            }
        }
        if !self.memory_import_types().is_empty() {
            ext.push(("cl_khr_external_memory", make_version(1, 0, 1)));
            ext.push(("cl_khr_external_memory_opaque_fd", make_version(1, 0, 0)));
        }
        if self.has_fp64() {
            ext.push(("cl_khr_fp64", make_version(1, 0, 0)));
        }
        if self.has_fp16() {
            ext.push(("cl_khr_fp16", make_version(1, 0, 0)));
        }
        if self.image_support() {
            ext.push(("cl_khr_3d_image_writes", make_version(1, 0, 0)));
            ext.push(("cl_khr_image2d_from_buffer", make_version(1, 0, 0)));
            ext.push(("cl_khr_depth_images", make_version(1, 0, 0)));
        }
        ext
    }

    /// The semaphore handle types clCreateSemaphoreWithPropertiesKHR
    /// imports on this device (cl_khr_external_semaphore).
    pub fn semaphore_import_types(&self) -> Vec<cl_external_semaphore_handle_type_khr> {
        let caps = &self.info.external.semaphore_import;
        caps.iter().map(|&k| semaphore::handle_type(k)).collect()
    }

    /// The semaphore handle types this device's semaphores can export.
    pub fn semaphore_export_types(&self) -> Vec<cl_external_semaphore_handle_type_khr> {
        let caps = &self.info.external.semaphore_export;
        caps.iter().map(|&k| semaphore::handle_type(k)).collect()
    }

    /// The memory handle types buffers can be imported from
    /// (cl_khr_external_memory).
    pub fn memory_import_types(&self) -> Vec<cl_external_memory_handle_type_khr> {
        if self.info.external.memory_import {
            vec![CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR]
        } else {
            Vec::new()
        }
    }

    /// Half precision (`cl_khr_fp16`): values kept as their 16 bits
    /// (16-bit storage and integers), arithmetic computed in float by the
    /// rewriter, so Vulkan's shaderFloat16 is not needed.
    pub fn has_fp16(&self) -> bool {
        self.info.features.shader_int16 != 0
            && self.info.features11.storage_buffer16_bit_access != 0
    }

    /// Double precision (`cl_khr_fp64`, `__opencl_c_fp64`): Vulkan's
    /// shaderFloat64, with the built-ins from libclc and vkcl's own where
    /// libclc or the device falls short. `VKCL_FP64=0` hides it (for
    /// applications that pick slower double paths when they see it).
    pub fn has_fp64(&self) -> bool {
        self.info.features.shader_float64 != 0
            && std::env::var("VKCL_FP64").map_or(true, |v| v != "0")
    }

    /// 64-bit atomics on both global and local memory, as the
    /// cl_khr_int64_*_atomics extensions require.
    pub fn has_int64_atomics(&self) -> bool {
        let f = &self.info.features12;
        f.shader_buffer_int64_atomics != 0 && f.shader_shared_int64_atomics != 0
    }

    /// The optional OpenCL C 3.0 features kernels on this device may use
    /// (`CL_DEVICE_OPENCL_C_FEATURES` and the `__opencl_c_*` macros).
    pub fn opencl_c_features(&self) -> Vec<&'static str> {
        // 64-bit integers are required of every full-profile device, and
        // vkcl only offers devices with shaderInt64. Acquire-release order
        // and device scope are what Vulkan's memory model gives atomics;
        // sequential consistency is not offered, as Vulkan has no total
        // order over all sequentially consistent operations. Generic
        // pointers are typed by the rewrite, or relocated into device memory.
        // Program-scope variables live in a device buffer per program.
        let mut features = vec![
            "__opencl_c_int64",
            "__opencl_c_generic_address_space",
            "__opencl_c_program_scope_global_variables",
            "__opencl_c_atomic_order_acq_rel",
            "__opencl_c_atomic_scope_device",
        ];
        if self.image_support() {
            features.extend(["__opencl_c_images", "__opencl_c_3d_image_writes"]);
        }
        if self.read_write_images() {
            features.push("__opencl_c_read_write_images");
        }
        if self.has_fp64() {
            features.push("__opencl_c_fp64");
        }
        if self.has_integer_dot_product() {
            features.extend([
                "__opencl_c_integer_dot_product_input_4x8bit",
                "__opencl_c_integer_dot_product_input_4x8bit_packed",
            ]);
        }
        let clock = self.kernel_clock_capabilities();
        for (bit, name) in [
            (
                CL_DEVICE_KERNEL_CLOCK_SCOPE_DEVICE_KHR,
                "__opencl_c_kernel_clock_scope_device",
            ),
            (
                CL_DEVICE_KERNEL_CLOCK_SCOPE_WORK_GROUP_KHR,
                "__opencl_c_kernel_clock_scope_work_group",
            ),
            (
                CL_DEVICE_KERNEL_CLOCK_SCOPE_SUB_GROUP_KHR,
                "__opencl_c_kernel_clock_scope_sub_group",
            ),
        ] {
            if clock & bit != 0 {
                features.push(name);
            }
        }
        if self.pipe_support() {
            features.push("__opencl_c_pipes");
        }
        if self.device_enqueue() {
            features.push("__opencl_c_device_enqueue");
        }
        if self.has_subgroups() {
            features.push("__opencl_c_subgroups");
            // Lowered to sub-group steps (see the rewriter's groups pass).
            features.push("__opencl_c_work_group_collective_functions");
        }
        features
    }

    /// What a SPIR-V module (an IL program, or the module inside a program
    /// binary) needs that this device lacks, one phrase each: the optional
    /// features its capabilities name, and an addressing model other than
    /// the device's 64-bit one. Empty when the device can run it. The
    /// rewrite checks the finer points (which sub-group operations, image
    /// formats) when it builds each kernel.
    pub fn unmet_needs(&self, words: &[u32]) -> Vec<String> {
        use rspirv::spirv::Capability as C;
        let (caps, addressing) = crate::compiler::spirv::input::reflect::preamble(words);
        let mut unmet = Vec::new();
        if addressing == Some(rspirv::spirv::AddressingModel::Physical32 as u32) {
            unmet.push("32-bit addresses (the device's are 64-bit)".to_string());
        }
        for c in caps {
            let (what, has) = match c {
                C::Float64 => ("double precision (cl_khr_fp64)", self.has_fp64()),
                // Float16Buffer alone (vload_half and friends) is core.
                C::Float16 => ("half precision (cl_khr_fp16)", self.has_fp16()),
                C::Int64Atomics => (
                    "64-bit atomics (cl_khr_int64_base_atomics)",
                    self.has_int64_atomics(),
                ),
                C::ImageBasic
                | C::LiteralSampler
                | C::Sampled1D
                | C::Image1D
                | C::SampledBuffer
                | C::ImageBuffer => ("images", self.image_support()),
                C::ImageReadWrite => ("read-write images", self.read_write_images()),
                C::ImageMipmap => ("mipmapped images", false),
                C::Groups
                | C::GroupNonUniform
                | C::GroupNonUniformVote
                | C::GroupNonUniformArithmetic
                | C::GroupNonUniformBallot
                | C::GroupNonUniformShuffle
                | C::GroupNonUniformShuffleRelative
                | C::GroupNonUniformClustered => ("sub-groups", self.has_subgroups()),
                C::DotProduct
                | C::DotProductInputAll
                | C::DotProductInput4x8Bit
                | C::DotProductInput4x8BitPacked => (
                    "integer dot products (cl_khr_integer_dot_product)",
                    self.has_integer_dot_product(),
                ),
                C::ShaderClockKHR => (
                    "kernel clocks (cl_khr_kernel_clock)",
                    self.kernel_clock_capabilities() != 0,
                ),
                C::CooperativeMatrixKHR => (
                    "cooperative matrices (cl_vkcl_cooperative_matrix)",
                    !self.matrices.is_empty(),
                ),
                C::Pipes => ("pipes", self.pipe_support()),
                C::PipeStorage => ("program-scope pipes", false),
                C::DeviceEnqueue => ("device-side enqueue", self.device_enqueue()),
                C::SubgroupDispatch => ("sub-group dispatch", false),
                _ => continue,
            };
            if !has && !unmet.iter().any(|u| u == what) {
                unmet.push(what.to_string());
            }
        }
        unmet
    }

    /// Pipes (`__opencl_c_pipes`): a buffer with a ring of packets and
    /// two counters that kernels reserve packets on with atomics (see the
    /// rewriter's pipes pass), which every device vkcl offers can do.
    pub fn pipe_support(&self) -> bool {
        true
    }

    /// Device-side enqueue (`__opencl_c_device_enqueue`, on-device
    /// queues): kernels write launch records that the host runs once the
    /// command's device work is done, level by level (see
    /// `core::enqueue`), which every device vkcl offers can do.
    /// `VKCL_DEVICE_ENQUEUE=0` turns it off.
    pub fn device_enqueue(&self) -> bool {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *ON.get_or_init(|| std::env::var("VKCL_DEVICE_ENQUEUE").map_or(true, |v| v != "0"))
    }

    /// cl_khr_integer_dot_product, unpacked and packed: the rewriter makes
    /// the dot products 8-bit lanes widened, multiplied and added, which
    /// needs 8-bit integers (shaderInt8).
    pub fn has_integer_dot_product(&self) -> bool {
        self.info.features12.shader_int8 != 0
    }

    /// The integer dot products kernels leave to the device's own packed
    /// 4x8-bit instructions (`DeviceCaps::native_dot`): those Vulkan says
    /// are accelerated (shaderIntegerDotProduct, Vulkan 1.3), as unsigned,
    /// signed and mixed, then the same accumulating with saturation.
    /// `VKCL_NATIVE_DOT=0` makes every one multiplies and adds,
    /// `VKCL_NATIVE_DOT=1` leaves every one to the device where it has
    /// the instructions at all (for testing them).
    pub fn native_dot_products(&self) -> u8 {
        let i = &self.info;
        if !self.has_integer_dot_product()
            || i.props.api_version < ash::vk::API_VERSION_1_3
            || i.features13.shader_integer_dot_product == 0
        {
            return 0;
        }
        match std::env::var("VKCL_NATIVE_DOT").as_deref() {
            Ok("0") => return 0,
            Ok("1") => return 0x3F,
            _ => {}
        }
        let p = &i.props13;
        [
            p.integer_dot_product4x8_bit_packed_unsigned_accelerated,
            p.integer_dot_product4x8_bit_packed_signed_accelerated,
            p.integer_dot_product4x8_bit_packed_mixed_signedness_accelerated,
            p.integer_dot_product_accumulating_saturating4x8_bit_packed_unsigned_accelerated,
            p.integer_dot_product_accumulating_saturating4x8_bit_packed_signed_accelerated,
            p.integer_dot_product_accumulating_saturating4x8_bit_packed_mixed_signedness_accelerated,
        ]
        .iter()
        .enumerate()
        .fold(0, |bits, (k, &on)| if on != 0 { bits | 1 << k } else { bits })
    }

    /// CL_DEVICE_KERNEL_CLOCK_CAPABILITIES_KHR, from VK_KHR_shader_clock:
    /// the device and work-group scopes read the device clock (Vulkan has
    /// no work-group clock; the device's is coherent over a work-group
    /// too), the sub-group scope the sub-group clock.
    pub fn kernel_clock_capabilities(&self) -> cl_bitfield {
        let clock = &self.info.shader_clock;
        let mut caps = 0;
        if clock.shader_device_clock != 0 {
            caps |= CL_DEVICE_KERNEL_CLOCK_SCOPE_DEVICE_KHR
                | CL_DEVICE_KERNEL_CLOCK_SCOPE_WORK_GROUP_KHR;
        }
        if clock.shader_subgroup_clock != 0 && self.has_subgroups() {
            caps |= CL_DEVICE_KERNEL_CLOCK_SCOPE_SUB_GROUP_KHR;
        }
        caps
    }

    /// The most sub-groups a work-group may have (0 without sub-groups).
    pub fn max_num_sub_groups(&self) -> u32 {
        if !self.has_subgroups() {
            return 0;
        }
        let s = self.subgroup_size() as usize;
        self.max_work_group_size().div_ceil(s) as u32
    }

    /// `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES`, matching the features above.
    pub fn atomic_capabilities(&self) -> cl_device_atomic_capabilities {
        CL_DEVICE_ATOMIC_ORDER_RELAXED
            | CL_DEVICE_ATOMIC_ORDER_ACQ_REL
            | CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP
            | CL_DEVICE_ATOMIC_SCOPE_DEVICE
    }

    /// Compute units: Vulkan has no core query, so use what extensions tell
    /// (NVIDIA's SM count), the host's CPU count for CPU devices, else 1.
    pub fn compute_units(&self) -> u32 {
        if let Some(sm) = self.info.sm_count {
            return sm.max(1);
        }
        if self.device_type() == CL_DEVICE_TYPE_CPU {
            // Asked once: the standard library reads the process's CPU
            // set and cgroup quota at every call, and applications query
            // the compute units at every step (OpenMM).
            static THREADS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
            return *THREADS.get_or_init(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get() as u32)
                    .unwrap_or(1)
            });
        }
        1
    }

    pub fn global_mem_size(&self) -> u64 {
        self.info.device_local_heap_size()
    }

    /// The largest single buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE).
    ///
    /// OpenCL requires at least a quarter of global memory (and 128 MiB
    /// where there is that much); applications and the CTS size their
    /// largest buffers and images from it. Vulkan's
    /// `maxMemoryAllocationSize` is only the size above which an allocation
    /// *may* fail (NVIDIA reports 4 GiB on 80 GiB cards), so it counts only
    /// where it is larger than OpenCL's minimum; an allocation the driver
    /// then refuses is CL_MEM_OBJECT_ALLOCATION_FAILURE. A buffer cannot
    /// outgrow `maxBufferSize`.
    pub fn max_mem_alloc_size(&self) -> u64 {
        max_alloc(
            self.global_mem_size(),
            self.info.props11.max_memory_allocation_size,
            self.info.props13.max_buffer_size,
        )
    }

    pub fn max_work_group_size(&self) -> usize {
        let l = &self.info.props.limits;
        let mut max = l.max_compute_work_group_invocations as usize;
        // Kernels with sub-groups run as 1-D Vulkan work-groups.
        if self.has_subgroups() {
            max = max.min(l.max_compute_work_group_size[0] as usize);
        }
        max
    }

    /// Whether work-groups of `local` items run better as 1-D Vulkan
    /// work-groups (the flat form, see `Options::flat_work_groups`): a CPU
    /// device (lavapipe) fills its vectors along a work-group's first
    /// dimension only, so a group narrower there than a vector (a column
    /// of work-items, (1, 256)) runs with most lanes idle.
    pub fn narrow_groups_run_flat(&self, local: [u32; 3]) -> bool {
        self.info.props.device_type == vk::PhysicalDeviceType::CPU
            && local[0] < self.subgroup_size()
            && local[1].saturating_mul(local[2]) > 1
    }

    /// Whether work-groups of `size` items are within this device's
    /// limits (see [`work_group_fits`]).
    pub fn fits_work_group(&self, size: [u32; 3]) -> bool {
        work_group_fits(size, self.max_work_item_sizes(), self.max_work_group_size())
    }

    pub fn max_work_item_sizes(&self) -> [usize; 3] {
        self.info
            .props
            .limits
            .max_compute_work_group_size
            .map(|s| s as usize)
    }

    pub fn local_mem_size(&self) -> u64 {
        self.info.props.limits.max_compute_shared_memory_size as u64
    }

    /// Sub-buffer origins and the alignment of every allocation, in bits:
    /// at least the size of the largest OpenCL type (long16).
    pub fn mem_base_addr_align_bits(&self) -> u32 {
        let storage = self.info.props.limits.min_storage_buffer_offset_alignment as u32 * 8;
        storage.max(128 * 8)
    }

    /// Whether kernels keep single-precision denormals (CL_FP_DENORM).
    /// Vulkan promises it (shaderDenormPreserveFloat32) once a shader asks
    /// for it, which vkcl's kernels then do. Mesa's lavapipe promises
    /// nothing, but runs compute shaders as native code on worker threads
    /// that keep the CPU's default floating-point state (denormals neither
    /// flushed nor read as zero; Mesa sets flush-to-zero only for its
    /// rasterizer threads), so its kernels keep them too; the test suite
    /// checks it there. Elsewhere it is the driver's choice and not claimed.
    pub fn preserves_denormals(&self) -> bool {
        self.asks_denorm_preserve() || self.is_llvmpipe()
    }

    /// Whether kernels declare that they keep single-precision denormals
    /// (the DenormPreserve execution mode, which Vulkan then honours).
    pub fn asks_denorm_preserve(&self) -> bool {
        self.info.props12.shader_denorm_preserve_float32 != 0
    }

    /// Whether half arithmetic runs on the hardware's 16-bit floats (see
    /// `DeviceCaps::native_f16`): shaderFloat16 with 16-bit storage and
    /// integers, kernels that can declare rounding to nearest even, and
    /// half denormals kept (declared, shaderDenormPreserveFloat16, or
    /// lavapipe's, which computes half in float on the CPU). Float
    /// controls must be settable for 16 bits alone. `VKCL_NATIVE_HALF=0`
    /// keeps half arithmetic in float.
    /// The matrix multiply-adds of sub-group scope (VK_KHR_cooperative_matrix)
    /// that kernels may use through cl_vkcl_cooperative_matrix.
    pub fn cooperative_matrices(&self) -> &'static [MatrixVariant] {
        self.matrices
    }

    pub fn native_f16(&self) -> bool {
        let i = &self.info;
        let p = &i.props12;
        let all = ash::vk::ShaderFloatControlsIndependence::ALL;
        i.features12.shader_float16 != 0
            && i.features11.storage_buffer16_bit_access != 0
            && i.features.shader_int16 != 0
            && p.shader_rounding_mode_rte_float16 != 0
            && (p.shader_denorm_preserve_float16 != 0 || self.is_llvmpipe())
            && p.rounding_mode_independence == all
            && p.denorm_behavior_independence == all
            && std::env::var("VKCL_NATIVE_HALF").map_or(true, |v| v != "0")
    }

    /// Whether the device filters 8-bit normalized formats at 8-bit
    /// precision: Mesa's lavapipe interpolates those texels as bytes, an
    /// error of up to 1/255 where OpenCL allows far less, so kernels
    /// filter such images themselves.
    pub fn filters_8_bit_coarsely(&self) -> bool {
        self.is_llvmpipe()
    }

    /// Mesa's lavapipe (llvmpipe), which runs kernels on the host's CPU.
    pub fn is_llvmpipe(&self) -> bool {
        self.info.props12.driver_id == ash::vk::DriverId::MESA_LLVMPIPE
    }

    pub fn subgroup_size(&self) -> u32 {
        self.info.props11.subgroup_size.max(1)
    }

    /// The sub-group sizes a kernel may require
    /// (`intel_reqd_sub_group_size`, `CL_DEVICE_SUB_GROUP_SIZES_INTEL`):
    /// every power of two Vulkan's subgroup size control offers compute
    /// shaders; none without it.
    pub fn required_subgroup_sizes(&self) -> Vec<u32> {
        let p = &self.info.props13;
        let control = self.info.features13.subgroup_size_control != 0
            && p.required_subgroup_size_stages
                .contains(vk::ShaderStageFlags::COMPUTE);
        if !self.has_subgroups() || !control || p.min_subgroup_size == 0 {
            return Vec::new();
        }
        (0..32)
            .map(|i| 1u32 << i)
            .filter(|s| (p.min_subgroup_size..=p.max_subgroup_size).contains(s))
            .collect()
    }

    /// The largest work-group of a kernel that requires sub-groups of
    /// `size`: Vulkan bounds the number of sub-groups of such work-groups.
    pub fn max_work_group_size_for_subgroups(&self, size: u32) -> usize {
        let groups = self.info.props13.max_compute_workgroup_subgroups as usize;
        self.max_work_group_size().min(groups * size as usize)
    }

    /// The sub-group operations (VkSubgroupFeatureFlags) compute shaders
    /// have, 0 when the compute stage has none.
    pub fn subgroup_operations(&self) -> u32 {
        self.info.compute_subgroup_operations()
    }

    /// Whether kernels may use sub-groups: the built-ins, votes, broadcast
    /// and arithmetic (what `__opencl_c_subgroups` needs).
    pub fn has_subgroups(&self) -> bool {
        let need = 0x1 | 0x2 | 0x4 | 0x8;
        self.subgroup_operations() & need == need
    }

    /// The cl_khr_subgroup_* extensions: each one is the Vulkan sub-group
    /// operations of the same name in compute shaders; extended types need
    /// shaderSubgroupExtendedTypes and 8- and 16-bit integers.
    pub fn subgroup_extensions(&self) -> Vec<&'static str> {
        if !self.has_subgroups() {
            return Vec::new();
        }
        let ops = self.subgroup_operations();
        let mut ext = Vec::new();
        let f = &self.info;
        if f.features12.shader_subgroup_extended_types != 0
            && f.features12.shader_int8 != 0
            && f.features.shader_int16 != 0
        {
            ext.push("cl_khr_subgroup_extended_types");
        }
        for (bit, name) in [
            (0x02, "cl_khr_subgroup_non_uniform_vote"),
            (0x08, "cl_khr_subgroup_ballot"),
            (0x04, "cl_khr_subgroup_non_uniform_arithmetic"),
            (0x10, "cl_khr_subgroup_shuffle"),
            // Rotations are shuffles from a computed lane.
            (0x10, "cl_khr_subgroup_rotate"),
            (0x20, "cl_khr_subgroup_shuffle_relative"),
        ] {
            if ops & bit == bit {
                ext.push(name);
            }
        }
        // Clustered reductions: Vulkan's, or shuffles from the cluster's
        // lanes that a ballot says are active.
        if ops & 0x44 == 0x44 || ops & 0x1c == 0x1c {
            ext.push("cl_khr_subgroup_clustered_reduce");
        }
        ext
    }

    /// Nanoseconds per timestamp tick, rounded up as `size_t` needs.
    pub fn timer_resolution_ns(&self) -> usize {
        self.info.props.limits.timestamp_period.ceil().max(1.0) as usize
    }

    /// What the device can do with a Vulkan format.
    fn format_properties(&self, format: vk::Format) -> vk::FormatProperties {
        // SAFETY: a physical device of this instance.
        unsafe {
            self.instance
                .raw
                .get_physical_device_format_properties(self.info.handle, format)
        }
    }

    /// What the device can do with a Vulkan format in optimal tiling.
    pub fn format_features(&self, format: vk::Format) -> vk::FormatFeatureFlags {
        self.format_properties(format).optimal_tiling_features
    }

    /// What the device can do with a Vulkan format in linear tiling.
    pub fn linear_features(&self, format: vk::Format) -> vk::FormatFeatureFlags {
        self.format_properties(format).linear_tiling_features
    }

    /// Whether the device makes linear images of `format`, `extent` and
    /// `usage` on memory imported from an opaque file descriptor, with
    /// views of `view_formats` that can do what they can in optimal tiling
    /// (be sampled, be written by kernels).
    pub fn imports_linear_images(
        &self,
        format: vk::Format,
        image_type: vk::ImageType,
        extent: vk::Extent3D,
        usage: vk::ImageUsageFlags,
        view_formats: &[vk::Format],
    ) -> bool {
        let kernel = vk::FormatFeatureFlags::SAMPLED_IMAGE | vk::FormatFeatureFlags::STORAGE_IMAGE;
        if view_formats.iter().any(|&f| {
            let needed = self.format_features(f) & kernel;
            !self.linear_features(f).contains(needed)
        }) {
            return false;
        }
        let flags = crate::vk::image::create_flags(format, view_formats);
        let mut external = vk::PhysicalDeviceExternalImageFormatInfo::default()
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = vk::PhysicalDeviceImageFormatInfo2::default()
            .format(format)
            .ty(image_type)
            .tiling(vk::ImageTiling::LINEAR)
            .usage(usage)
            .flags(flags)
            .push_next(&mut external);
        let mut external_props = vk::ExternalImageFormatProperties::default();
        let mut props = vk::ImageFormatProperties2::default().push_next(&mut external_props);
        // SAFETY: a physical device of this instance (Vulkan 1.1 or later);
        // valid chains.
        let r = unsafe {
            self.instance
                .raw
                .get_physical_device_image_format_properties2(self.info.handle, &info, &mut props)
        };
        let max = props.image_format_properties.max_extent;
        let importable = external_props
            .external_memory_properties
            .external_memory_features
            .contains(vk::ExternalMemoryFeatureFlags::IMPORTABLE);
        r.is_ok()
            && importable
            && extent.width <= max.width
            && extent.height <= max.height
            && extent.depth <= max.depth
    }

    /// The features of `format` in texel buffers.
    pub fn buffer_features(&self, format: vk::Format) -> vk::FormatFeatureFlags {
        self.format_properties(format).buffer_features
    }

    /// The formats offered for 1D image buffers of `flags`: texel buffer
    /// views of the format kernels read (uniform texel buffers) or write
    /// (storage texel buffers, or those of a stand-in format). Channel
    /// orders that need a swizzle are left out: buffer views have none.
    pub fn texel_formats(&self, flags: cl_mem_flags) -> Vec<FormatEntry> {
        if !self.image_support()
            || (flags & CL_MEM_KERNEL_READ_AND_WRITE != 0 && !self.read_write_images())
        {
            return Vec::new();
        }
        let reads = flags & (CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY) != CL_MEM_WRITE_ONLY
            || flags & CL_MEM_KERNEL_READ_AND_WRITE != 0;
        let writes = flags & CL_MEM_READ_ONLY == 0 || flags & CL_MEM_KERNEL_READ_AND_WRITE != 0;
        format::table()
            .into_iter()
            .filter(|e| {
                !e.swizzled
                    && format::order_allowed(e.order, CL_MEM_OBJECT_IMAGE1D_BUFFER)
                    && (!reads
                        || self
                            .buffer_features(e.vk)
                            .contains(vk::FormatFeatureFlags::UNIFORM_TEXEL_BUFFER))
                    && (!writes || self.texel_storage_format(e.vk).is_some())
            })
            .collect()
    }

    /// The format kernels write a 1D image buffer of format `vk` through,
    /// and whether it has red and blue exchanged; None where they cannot.
    pub fn texel_storage_format(&self, vk: vk::Format) -> Option<(vk::Format, bool)> {
        let storage = |f| {
            self.buffer_features(f)
                .contains(vk::FormatFeatureFlags::STORAGE_TEXEL_BUFFER)
        };
        if storage(vk) {
            return Some((vk, false));
        }
        format::storage_stand_in(vk)
            .filter(|&f| storage(f))
            .map(|f| (f, true))
    }

    /// CL_DEVICE_IMAGE_MAX_BUFFER_SIZE: the texels a buffer view may hold.
    pub fn max_texel_elements(&self) -> usize {
        if self.image_support() {
            self.info.props.limits.max_texel_buffer_elements as usize
        } else {
            0
        }
    }

    /// The alignment of a texel buffer view's offset in its buffer.
    pub fn texel_offset_alignment(&self) -> u64 {
        self.info.props.limits.min_texel_buffer_offset_alignment
    }

    /// The image formats offered for images of `flags`: those whose
    /// Vulkan format allows transfers and the kernel access the flags ask
    /// for (sampling to read, storage to write).
    pub fn image_formats(&self, flags: cl_mem_flags) -> Vec<FormatEntry> {
        // No kernel both reads and writes an image without read-write
        // image support.
        if flags & CL_MEM_KERNEL_READ_AND_WRITE != 0 && !self.read_write_images() {
            return Vec::new();
        }
        let reads = flags & (CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY) != CL_MEM_WRITE_ONLY
            || flags & CL_MEM_KERNEL_READ_AND_WRITE != 0;
        let writes = flags & CL_MEM_READ_ONLY == 0 || flags & CL_MEM_KERNEL_READ_AND_WRITE != 0;
        format::table()
            .into_iter()
            .filter(|e| {
                let have = self.format_features(e.vk);
                let mut need =
                    vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST;
                if reads {
                    need |= vk::FormatFeatureFlags::SAMPLED_IMAGE;
                }
                have.contains(need)
                    && !(writes && (e.swizzled || self.storage_format(e.vk).is_none()))
            })
            .collect()
    }

    /// The format kernels write an image of format `vk` through, and
    /// whether that one has red and blue exchanged
    /// ([`format::storage_stand_in`]); None where kernels cannot write it.
    pub fn storage_format(&self, vk: vk::Format) -> Option<(vk::Format, bool)> {
        let storage = |f| {
            self.format_features(f)
                .contains(vk::FormatFeatureFlags::STORAGE_IMAGE)
        };
        if storage(vk) {
            return Some((vk, false));
        }
        format::storage_stand_in(vk)
            .filter(|&f| storage(f))
            .map(|f| (f, true))
    }

    /// Whether kernels can use images: read-only images are sampled
    /// images, written ones storage images written without a declared
    /// format (OpenCL kernels never say which format an image has).
    pub fn image_support(&self) -> bool {
        self.info.features.shader_storage_image_write_without_format != 0
    }

    /// Whether kernels can also read the images they write
    /// (`read_write` images): storage reads without a declared format.
    pub fn read_write_images(&self) -> bool {
        self.image_support() && self.info.features.shader_storage_image_read_without_format != 0
    }

    /// How many (read, write or read-write, sampler) arguments a kernel may
    /// take: each needs a descriptor (two per sampler: a twin for 1D and
    /// 2D images), within what one shader stage may use; their info words
    /// are specialization constants. The OpenCL C limits (128 read images,
    /// 64 written, 16 samplers) cap what is offered.
    pub fn image_arg_limits(&self) -> (u32, u32, u32) {
        if !self.image_support() {
            return (0, 0, 0);
        }
        let l = &self.info.props.limits;
        // Images of both kinds share the stage's resources (buffers are
        // device addresses, not descriptors): a kernel that takes more
        // than that altogether cannot run.
        let resources = l.max_per_stage_resources;
        (
            l.max_per_stage_descriptor_sampled_images
                .min(resources)
                .min(128),
            l.max_per_stage_descriptor_storage_images
                .min(resources)
                .min(64),
            (l.max_per_stage_descriptor_samplers / 2).min(16),
        )
    }

    /// CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS.
    pub fn read_write_image_args(&self) -> u32 {
        if self.read_write_images() {
            self.image_arg_limits().1
        } else {
            0
        }
    }

    /// The largest image of each shape: (1D width, 2D side, 3D side,
    /// array layers), from Vulkan's limits.
    pub fn image_limits(&self) -> ImageLimits {
        let l = &self.info.props.limits;
        ImageLimits {
            width_1d: l.max_image_dimension1_d as usize,
            side_2d: l.max_image_dimension2_d as usize,
            side_3d: l.max_image_dimension3_d as usize,
            layers: l.max_image_array_layers as usize,
        }
    }

    pub fn host_unified_memory(&self) -> bool {
        self.device_type() == CL_DEVICE_TYPE_CPU || self.info.is_unified_memory()
    }
}

/// Whether work-groups of `size` items fit limits per dimension
/// (CL_DEVICE_MAX_WORK_ITEM_SIZES) and in all (CL_DEVICE_MAX_WORK_GROUP_SIZE),
/// the product taken in 64 bits (required sizes may pass 32).
pub fn work_group_fits(size: [u32; 3], max_items: [usize; 3], max_total: usize) -> bool {
    let items = size.iter().map(|&s| u64::from(s)).product::<u64>();
    size.iter()
        .zip(max_items)
        .all(|(&s, max)| s >= 1 && s as usize <= max)
        && items <= max_total as u64
}

/// CL_DEVICE_MAX_MEM_ALLOC_SIZE from global memory and Vulkan's
/// `maxMemoryAllocationSize` and `maxBufferSize` (0: not reported); see
/// [`Device::max_mem_alloc_size`].
fn max_alloc(global: u64, vk_max_allocation: u64, vk_max_buffer: u64) -> u64 {
    let required = (global / 4).max((128 << 20).min(global));
    let max = vk_max_allocation.min(global).max(required);
    if vk_max_buffer > 0 {
        max.min(vk_max_buffer)
    } else {
        max
    }
}

/// The device's sub-group-scope cooperative matrix multiply-adds whose
/// types vkcl can express, where kernels on the device can use them: the
/// Vulkan memory model (which SPV_KHR_cooperative_matrix requires), 16-bit
/// floats for half elements, 8-bit integers for char elements.
/// `VKCL_COOPERATIVE_MATRIX=0` offers none.
fn cooperative_matrices(info: &PhysicalInfo) -> Vec<MatrixVariant> {
    use ash::vk::ComponentTypeKHR as T;
    if std::env::var("VKCL_COOPERATIVE_MATRIX").is_ok_and(|v| v == "0")
        || info.features12.vulkan_memory_model == 0
    {
        return Vec::new();
    }
    let half = info.features12.shader_float16 != 0
        && info.features11.storage_buffer16_bit_access != 0
        && info.features.shader_int16 != 0;
    let bytes = info.features12.shader_int8 != 0 && info.features12.storage_buffer8_bit_access != 0;
    let component = |t: T| -> Option<Component> {
        let c = match t {
            T::FLOAT16 => Component::Half,
            T::FLOAT32 => Component::Float,
            T::SINT8 => Component::Char,
            T::SINT16 => Component::Short,
            T::SINT32 => Component::Int,
            T::SINT64 => Component::Long,
            T::UINT8 => Component::Uchar,
            T::UINT16 => Component::Ushort,
            T::UINT32 => Component::Uint,
            T::UINT64 => Component::Ulong,
            _ => return None,
        };
        let usable = match c.bits() {
            8 => bytes,
            16 => half,
            _ => true,
        };
        usable.then_some(c)
    };
    let mut out: Vec<MatrixVariant> = info
        .cooperative_matrices
        .iter()
        .filter_map(|p| {
            Some(MatrixVariant {
                m: p.m_size,
                n: p.n_size,
                k: p.k_size,
                a: component(p.a_type)?,
                b: component(p.b_type)?,
                c: component(p.c_type)?,
                result: component(p.result_type)?,
                saturating: p.saturating_accumulation != 0,
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::max_alloc;

    #[test]
    fn max_alloc_is_at_least_a_quarter_of_global_memory() {
        // An 80 GiB NVIDIA card: Vulkan says 4 GiB, OpenCL wants 20 GiB.
        assert_eq!(
            max_alloc(85_520_809_984, 4_292_870_144, 1 << 40),
            85_520_809_984 / 4
        );
        // Lavapipe: the Vulkan limit is all of global memory.
        assert_eq!(max_alloc(2 << 30, 2 << 30, u32::MAX as u64), 2 << 30);
        // Small devices get 128 MiB, or all there is.
        assert_eq!(max_alloc(256 << 20, 16 << 20, 0), 128 << 20);
        assert_eq!(max_alloc(64 << 20, 16 << 20, 0), 64 << 20);
        // No buffer can outgrow maxBufferSize.
        assert_eq!(max_alloc(64 << 30, 4 << 30, 8 << 30), 8 << 30);
    }
}
