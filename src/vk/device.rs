//! The Vulkan logical device behind an OpenCL device, created when the first
//! context uses it and shared by every context after that.

use std::ffi::c_char;

use ash::vk;

use crate::vk::physical::PhysicalInfo;

pub struct LogicalDevice {
    pub raw: ash::Device,
    pub queue_family: u32,
    pub queue: vk::Queue,
}

impl LogicalDevice {
    /// Creates the device with one compute queue and every feature vkcl uses
    /// that the device has.
    pub fn new(instance: &ash::Instance, info: &PhysicalInfo) -> Result<Self, vk::Result> {
        let queue_family = info
            .compute_queue_family()
            .ok_or(vk::Result::ERROR_FEATURE_NOT_PRESENT)?;
        let priorities = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];

        let have = &info.features;
        let features = vk::PhysicalDeviceFeatures::default()
            .shader_int64(true)
            .shader_int16(have.shader_int16 != 0)
            .shader_float64(have.shader_float64 != 0)
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
            .maintenance4(h13.maintenance4 != 0);

        let extensions: Vec<*const c_char> = Vec::new();
        let mut create = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_features(&features)
            .enabled_extension_names(&extensions)
            .push_next(&mut f11)
            .push_next(&mut f12);
        if info.props.api_version >= vk::API_VERSION_1_3 {
            create = create.push_next(&mut f13);
        }
        // SAFETY: `info.handle` comes from `instance`; every feature enabled
        // above was reported present; all pointers outlive the call.
        let raw = unsafe { instance.create_device(info.handle, &create, None)? };
        // SAFETY: one queue of this family was requested above.
        let queue = unsafe { raw.get_device_queue(queue_family, 0) };
        log::info!(target: "vkcl::vk", "created Vulkan device for {}", info.name());
        Ok(LogicalDevice {
            raw,
            queue_family,
            queue,
        })
    }
}

impl Drop for LogicalDevice {
    fn drop(&mut self) {
        // SAFETY: the device is idle-waited and every child object was
        // destroyed by its owner before the last reference to it went away.
        unsafe {
            let _ = self.raw.device_wait_idle();
            self.raw.destroy_device(None);
        }
    }
}
