//! What a Vulkan physical device offers, read once, and the one table that
//! says which Vulkan features vkcl needs and what each optional one turns on
//! in OpenCL terms.

use std::ffi::CStr;

use ash::{ext, vk};

/// Everything vkcl reads from a physical device.
pub struct PhysicalInfo {
    pub handle: vk::PhysicalDevice,
    pub props: vk::PhysicalDeviceProperties,
    pub props11: vk::PhysicalDeviceVulkan11Properties<'static>,
    pub props12: vk::PhysicalDeviceVulkan12Properties<'static>,
    /// Vulkan 1.3 properties (zeroed on 1.2 devices).
    pub props13: vk::PhysicalDeviceVulkan13Properties<'static>,
    pub pci: Option<vk::PhysicalDevicePCIBusInfoPropertiesEXT<'static>>,
    pub sm_count: Option<u32>,
    pub features: vk::PhysicalDeviceFeatures,
    pub features11: vk::PhysicalDeviceVulkan11Features<'static>,
    pub features12: vk::PhysicalDeviceVulkan12Features<'static>,
    /// Vulkan 1.3 features (all false on 1.2 devices).
    pub features13: vk::PhysicalDeviceVulkan13Features<'static>,
    /// VK_EXT_shader_atomic_float's features (all false without it).
    pub atomic_float: vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT<'static>,
    /// VK_KHR_shader_clock's features (all false without it).
    pub shader_clock: vk::PhysicalDeviceShaderClockFeaturesKHR<'static>,
    /// VK_KHR_cooperative_matrix's sub-group-scope matrix multiplies, where
    /// the device has the extension and its cooperativeMatrix feature
    /// (empty otherwise).
    pub cooperative_matrices: Vec<vk::CooperativeMatrixPropertiesKHR<'static>>,
    pub memory: vk::PhysicalDeviceMemoryProperties,
    /// What it can share with other APIs through file descriptors.
    pub external: crate::vk::external::ExternalCaps,
    pub queue_families: Vec<vk::QueueFamilyProperties>,
    pub extensions: Vec<String>,
}

impl PhysicalInfo {
    /// The sub-group operations (VkSubgroupFeatureFlags) compute shaders
    /// have, 0 when the compute stage has none.
    pub fn compute_subgroup_operations(&self) -> u32 {
        let p = &self.props11;
        if p.subgroup_supported_stages
            .contains(vk::ShaderStageFlags::COMPUTE)
        {
            p.subgroup_supported_operations.as_raw()
        } else {
            0
        }
    }

    /// # Safety
    /// `pd` must come from `instance`.
    pub unsafe fn query(
        entry: &ash::Entry,
        instance: &ash::Instance,
        pd: vk::PhysicalDevice,
    ) -> Self {
        // SAFETY (whole block): plain queries on a valid physical device with
        // output structures that live until the calls return.
        unsafe {
            let base = instance.get_physical_device_properties(pd);
            let extensions: Vec<String> = instance
                .enumerate_device_extension_properties(pd)
                .unwrap_or_default()
                .iter()
                .filter_map(|e| e.extension_name_as_c_str().ok())
                .map(|n| n.to_string_lossy().into_owned())
                .collect();
            let has = |name: &CStr| extensions.iter().any(|e| e.as_bytes() == name.to_bytes());
            let is13 = base.api_version >= vk::API_VERSION_1_3;

            let mut props11 = vk::PhysicalDeviceVulkan11Properties::default();
            let mut props12 = vk::PhysicalDeviceVulkan12Properties::default();
            let mut props13 = vk::PhysicalDeviceVulkan13Properties::default();
            let mut pci = vk::PhysicalDevicePCIBusInfoPropertiesEXT::default();
            let mut sm = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
            let has_pci = has(ext::pci_bus_info::NAME);
            let has_sm = has(ash::nv::shader_sm_builtins::NAME);
            let props = {
                let mut p2 = vk::PhysicalDeviceProperties2::default()
                    .push_next(&mut props11)
                    .push_next(&mut props12);
                if is13 {
                    p2 = p2.push_next(&mut props13);
                }
                if has_pci {
                    p2 = p2.push_next(&mut pci);
                }
                if has_sm {
                    p2 = p2.push_next(&mut sm);
                }
                instance.get_physical_device_properties2(pd, &mut p2);
                p2.properties
            };

            let mut features11 = vk::PhysicalDeviceVulkan11Features::default();
            let mut features12 = vk::PhysicalDeviceVulkan12Features::default();
            let mut features13 = vk::PhysicalDeviceVulkan13Features::default();
            let mut atomic_float = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
            let has_atomic_float = has(ext::shader_atomic_float::NAME);
            let mut shader_clock = vk::PhysicalDeviceShaderClockFeaturesKHR::default();
            let has_shader_clock = has(ash::khr::shader_clock::NAME);
            let mut coop = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
            // VK_KHR_cooperative_matrix appeared with Vulkan 1.3.255: an
            // older validation layer rejects its structures.
            let has_coop = has(ash::khr::cooperative_matrix::NAME)
                && crate::vk::instance::validation_knows(vk::make_api_version(0, 1, 3, 255));
            let features = {
                let mut f2 = vk::PhysicalDeviceFeatures2::default()
                    .push_next(&mut features11)
                    .push_next(&mut features12);
                if is13 {
                    f2 = f2.push_next(&mut features13);
                }
                if has_atomic_float {
                    f2 = f2.push_next(&mut atomic_float);
                }
                if has_shader_clock {
                    f2 = f2.push_next(&mut shader_clock);
                }
                if has_coop {
                    f2 = f2.push_next(&mut coop);
                }
                instance.get_physical_device_features2(pd, &mut f2);
                f2.features
            };
            // The chains are gone: clear the links so no dangling pointer is kept.
            props11.p_next = std::ptr::null_mut();
            props12.p_next = std::ptr::null_mut();
            props13.p_next = std::ptr::null_mut();
            pci.p_next = std::ptr::null_mut();
            features11.p_next = std::ptr::null_mut();
            features12.p_next = std::ptr::null_mut();
            features13.p_next = std::ptr::null_mut();
            atomic_float.p_next = std::ptr::null_mut();
            shader_clock.p_next = std::ptr::null_mut();
            let cooperative_matrices = if has_coop && coop.cooperative_matrix != 0 {
                ash::khr::cooperative_matrix::Instance::new(entry, instance)
                    .get_physical_device_cooperative_matrix_properties(pd)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|p| p.scope == vk::ScopeKHR::SUBGROUP)
                    .map(|p| vk::CooperativeMatrixPropertiesKHR {
                        p_next: std::ptr::null_mut(),
                        _marker: std::marker::PhantomData,
                        ..p
                    })
                    .collect()
            } else {
                Vec::new()
            };

            PhysicalInfo {
                handle: pd,
                props,
                props11,
                props12,
                props13,
                pci: has_pci.then_some(pci),
                sm_count: has_sm.then_some(sm.shader_sm_count),
                features,
                features11,
                features12,
                features13,
                atomic_float,
                shader_clock,
                cooperative_matrices,
                memory: instance.get_physical_device_memory_properties(pd),
                external: crate::vk::external::ExternalCaps::query(
                    instance,
                    pd,
                    has(ash::khr::external_semaphore_fd::NAME),
                    has(ash::khr::external_memory_fd::NAME),
                ),
                queue_families: instance.get_physical_device_queue_family_properties(pd),
                extensions,
            }
        }
    }

    pub fn name(&self) -> String {
        self.props
            .device_name_as_c_str()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    pub fn has_extension(&self, name: &CStr) -> bool {
        self.extensions
            .iter()
            .any(|e| e.as_bytes() == name.to_bytes())
    }

    /// The queue family vkcl submits to: compute-capable, preferring one
    /// without graphics (a dedicated compute engine) that has timestamps;
    /// `VKCL_QUEUE_FAMILY` names another compute-capable family instead.
    pub fn compute_queue_family(&self) -> Option<u32> {
        let compute = |q: &vk::QueueFamilyProperties| {
            q.queue_flags.contains(vk::QueueFlags::COMPUTE) && q.queue_count > 0
        };
        if let Some(i) = std::env::var("VKCL_QUEUE_FAMILY")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
        {
            match self.queue_families.get(i) {
                Some(q) if compute(q) => return Some(i as u32),
                _ => {
                    log::warn!(target: "vkcl::vk", "VKCL_QUEUE_FAMILY={i} is no compute queue family of this device; ignored")
                }
            }
        }
        let score = |q: &vk::QueueFamilyProperties| {
            let mut s = 0;
            if !q.queue_flags.contains(vk::QueueFlags::GRAPHICS) {
                s += 2;
            }
            if q.timestamp_valid_bits > 0 {
                s += 1;
            }
            s
        };
        self.queue_families
            .iter()
            .enumerate()
            .filter(|(_, q)| compute(q))
            .max_by_key(|(i, q)| (score(q), std::cmp::Reverse(*i)))
            .map(|(i, _)| i as u32)
    }

    /// Why this device cannot carry OpenCL, or `None` when it can.
    pub fn unsuitable_reason(&self) -> Option<String> {
        if self.props.api_version < vk::API_VERSION_1_2 {
            return Some(format!(
                "Vulkan {}.{} < 1.2",
                vk::api_version_major(self.props.api_version),
                vk::api_version_minor(self.props.api_version)
            ));
        }
        if self.compute_queue_family().is_none() {
            return Some("no compute queue".into());
        }
        let missing: Vec<&str> = FEATURES
            .iter()
            .filter(|f| f.required && !(f.present)(self))
            .map(|f| f.vulkan)
            .collect();
        (!missing.is_empty()).then(|| format!("missing {}", missing.join(", ")))
    }

    /// The total size of the device-local heaps' largest member, which is the
    /// memory OpenCL global memory lives in.
    pub fn device_local_heap_size(&self) -> u64 {
        let heaps = &self.memory.memory_heaps[..self.memory.memory_heap_count as usize];
        heaps
            .iter()
            .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
            .map(|h| h.size)
            .max()
            .or_else(|| heaps.iter().map(|h| h.size).max())
            .unwrap_or(0)
    }

    /// True when every device-local memory type is also host-visible (CPUs,
    /// most integrated GPUs): the host and device share one memory.
    pub fn is_unified_memory(&self) -> bool {
        let types = &self.memory.memory_types[..self.memory.memory_type_count as usize];
        let mut local = types
            .iter()
            .filter(|t| {
                t.property_flags
                    .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
            })
            .peekable();
        local.peek().is_some()
            && local.all(|t| {
                t.property_flags
                    .contains(vk::MemoryPropertyFlags::HOST_VISIBLE)
            })
    }
}

/// One row of the capability table.
pub struct Feature {
    /// The Vulkan feature or extension, as `vkcl info` prints it.
    pub vulkan: &'static str,
    /// What it gives OpenCL users.
    pub opencl: &'static str,
    /// Without it the device is not offered at all.
    pub required: bool,
    pub present: fn(&PhysicalInfo) -> bool,
}

/// The Vulkan capabilities vkcl looks at, required ones first.
pub const FEATURES: &[Feature] = &[
    Feature {
        vulkan: "bufferDeviceAddress",
        opencl: "global and constant memory as 64-bit pointers",
        required: true,
        present: |d| d.features12.buffer_device_address != 0,
    },
    Feature {
        vulkan: "timelineSemaphore",
        opencl: "events and command ordering",
        required: true,
        present: |d| d.features12.timeline_semaphore != 0,
    },
    Feature {
        vulkan: "shaderInt64",
        opencl: "long/ulong, size_t and pointers in kernels",
        required: true,
        present: |d| d.features.shader_int64 != 0,
    },
    Feature {
        vulkan: "storageBuffer8BitAccess + shaderInt8",
        opencl: "char/uchar in global memory",
        required: false,
        present: |d| d.features12.storage_buffer8_bit_access != 0 && d.features12.shader_int8 != 0,
    },
    Feature {
        vulkan: "storageBuffer16BitAccess + shaderInt16",
        opencl: "short/ushort in global memory",
        required: false,
        present: |d| d.features11.storage_buffer16_bit_access != 0 && d.features.shader_int16 != 0,
    },
    Feature {
        vulkan: "shaderInt16 + storageBuffer16BitAccess (half computed in float)",
        opencl: "cl_khr_fp16",
        required: false,
        present: |d| d.features.shader_int16 != 0 && d.features11.storage_buffer16_bit_access != 0,
    },
    Feature {
        vulkan: "shaderFloat64",
        opencl: "cl_khr_fp64",
        required: false,
        present: |d| d.features.shader_float64 != 0,
    },
    Feature {
        vulkan: "shaderBufferInt64Atomics",
        opencl: "64-bit atomics on global memory",
        required: false,
        present: |d| d.features12.shader_buffer_int64_atomics != 0,
    },
    Feature {
        vulkan: "shaderSharedInt64Atomics",
        opencl: "64-bit atomics on local memory",
        required: false,
        present: |d| d.features12.shader_shared_int64_atomics != 0,
    },
    Feature {
        vulkan: "shaderSharedFloat32Atomics (VK_EXT_shader_atomic_float)",
        opencl: "atomic exchange, load and store of floats in local memory",
        required: false,
        present: |d| d.atomic_float.shader_shared_float32_atomics != 0,
    },
    Feature {
        vulkan: "shaderSharedFloat64Atomics (VK_EXT_shader_atomic_float)",
        opencl: "atomic exchange, load and store of doubles in local memory",
        required: false,
        present: |d| d.atomic_float.shader_shared_float64_atomics != 0,
    },
    Feature {
        vulkan: "shaderStorageImageWriteWithoutFormat",
        opencl: "images in kernels (CL_DEVICE_IMAGE_SUPPORT)",
        required: false,
        present: |d| d.features.shader_storage_image_write_without_format != 0,
    },
    Feature {
        vulkan: "shaderStorageImageReadWithoutFormat",
        opencl: "read_write images (__opencl_c_read_write_images)",
        required: false,
        present: |d| d.features.shader_storage_image_read_without_format != 0,
    },
    Feature {
        vulkan: "vulkanMemoryModel",
        opencl: "OpenCL memory orders and scopes",
        required: false,
        present: |d| d.features12.vulkan_memory_model != 0,
    },
    Feature {
        vulkan: "subgroup basic + vote + arithmetic + ballot (compute)",
        opencl: "sub-groups and work-group collective functions",
        required: false,
        present: |d| d.compute_subgroup_operations() & 0xF == 0xF,
    },
    Feature {
        vulkan: "subgroup shuffle, shuffle relative (compute)",
        opencl: "cl_khr_subgroup_shuffle, cl_khr_subgroup_shuffle_relative",
        required: false,
        present: |d| d.compute_subgroup_operations() & 0x30 == 0x30,
    },
    Feature {
        vulkan: "subgroup clustered (compute)",
        opencl: "cl_khr_subgroup_clustered_reduce (else made of shuffles and ballots)",
        required: false,
        present: |d| d.compute_subgroup_operations() & 0x40 != 0,
    },
    Feature {
        vulkan: "shaderSubgroupExtendedTypes",
        opencl: "cl_khr_subgroup_extended_types",
        required: false,
        present: |d| d.features12.shader_subgroup_extended_types != 0,
    },
    Feature {
        vulkan: "shaderDenormPreserveFloat32",
        opencl: "CL_FP_DENORM (single precision)",
        required: false,
        present: |d| d.props12.shader_denorm_preserve_float32 != 0,
    },
    Feature {
        vulkan: "subgroupSizeControl",
        opencl: "cl_intel_required_subgroup_size",
        required: false,
        present: |d| d.features13.subgroup_size_control != 0,
    },
    Feature {
        vulkan: "VK_EXT_pci_bus_info",
        opencl: "cl_khr_pci_bus_info",
        required: false,
        present: |d| d.pci.is_some(),
    },
    Feature {
        vulkan: "VK_EXT_external_memory_host",
        opencl: "zero-copy CL_MEM_USE_HOST_PTR",
        required: false,
        present: |d| d.has_extension(ext::external_memory_host::NAME),
    },
    Feature {
        vulkan: "VK_EXT_map_memory_placed",
        opencl: "coarse-grained SVM with identical host and device pointers",
        required: false,
        present: |d| d.extensions.iter().any(|e| e == "VK_EXT_map_memory_placed"),
    },
    Feature {
        vulkan: "VK_KHR_workgroup_memory_explicit_layout",
        opencl: "fast casts of __local pointers",
        required: false,
        present: |d| d.has_extension(ash::khr::workgroup_memory_explicit_layout::NAME),
    },
];
