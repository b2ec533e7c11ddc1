//! Counts of what vkcl holds, by kind: OpenCL objects still alive (the
//! application's or kept by commands in flight), the Vulkan objects behind
//! them, and device memory. Tests and tools read them through the exported
//! `vkcl_census` function to find leaks: after every object is released
//! and every command has completed, each count is back where it started.
//! (The Vulkan device, its pipeline cache, its one-shot command pool and
//! the staging buffers kept for reuse stay until `vkcl_release_devices`
//! lets them go: then the validation layer, where it is on, reports any
//! Vulkan object left when the device is destroyed.)

use std::sync::atomic::{AtomicI64, Ordering};

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Contexts,
    Queues,
    Buffers,
    Images,
    Samplers,
    Programs,
    Kernels,
    Events,
    /// cl_khr_semaphore objects.
    SemaphoreObjects,
    /// cl_khr_command_buffer objects.
    CommandBufferObjects,
    SvmAllocations,
    Pipes,
    /// Vulkan buffers with memory of their own (buffers, staging,
    /// scratch, module data).
    DeviceBuffers,
    /// Bytes of device memory those and Vulkan images hold.
    DeviceBytes,
    /// Application memory imported for transfers.
    ImportedRanges,
    VulkanImages,
    TexelViews,
    VulkanSamplers,
    ShaderModules,
    Pipelines,
    DescriptorPools,
    CommandPools,
    QueryPools,
    Semaphores,
    /// Vulkan devices (one per OpenCL device in use).
    VulkanDevices,
}

const KINDS: [(Kind, &str); 25] = [
    (Kind::Contexts, "contexts"),
    (Kind::Queues, "queues"),
    (Kind::Buffers, "buffers"),
    (Kind::Images, "images"),
    (Kind::Samplers, "samplers"),
    (Kind::Programs, "programs"),
    (Kind::Kernels, "kernels"),
    (Kind::Events, "events"),
    (Kind::SemaphoreObjects, "semaphores"),
    (Kind::CommandBufferObjects, "command_buffers"),
    (Kind::SvmAllocations, "svm_allocations"),
    (Kind::Pipes, "pipes"),
    (Kind::DeviceBuffers, "vk_buffers"),
    (Kind::DeviceBytes, "device_bytes"),
    (Kind::ImportedRanges, "imported_host_ranges"),
    (Kind::VulkanImages, "vk_images"),
    (Kind::TexelViews, "vk_texel_views"),
    (Kind::VulkanSamplers, "vk_samplers"),
    (Kind::ShaderModules, "vk_shader_modules"),
    (Kind::Pipelines, "vk_pipelines"),
    (Kind::DescriptorPools, "vk_descriptor_pools"),
    (Kind::CommandPools, "vk_command_pools"),
    (Kind::QueryPools, "vk_query_pools"),
    (Kind::Semaphores, "vk_semaphores"),
    (Kind::VulkanDevices, "vk_devices"),
];

static COUNTS: [AtomicI64; KINDS.len()] = [const { AtomicI64::new(0) }; KINDS.len()];

fn slot(kind: Kind) -> &'static AtomicI64 {
    &COUNTS[kind as usize]
}

/// One more of `kind` (or `n` more bytes).
pub fn add(kind: Kind, n: i64) {
    slot(kind).fetch_add(n, Ordering::Relaxed);
}

/// One fewer of `kind` (or `n` fewer bytes).
pub fn remove(kind: Kind, n: i64) {
    slot(kind).fetch_sub(n, Ordering::Relaxed);
}

/// Every count as `name=value` lines.
pub fn report() -> String {
    KINDS
        .iter()
        .map(|&(k, name)| format!("{name}={}\n", slot(k).load(Ordering::Relaxed)))
        .collect()
}

/// Writes the counts as text (`name=value` lines, NUL-terminated) into
/// `buffer` of `size` bytes when it is large enough, and returns the size
/// the text needs, NUL included.
///
/// # Safety
/// `buffer` is null or writable for `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vkcl_census(buffer: *mut u8, size: usize) -> usize {
    let text = report();
    let needed = text.len() + 1;
    if !buffer.is_null() && size >= needed {
        // SAFETY: the caller gives `size` writable bytes, and `needed` fit.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buffer, text.len());
            *buffer.add(text.len()) = 0;
        }
    }
    needed
}

/// Destroys the Vulkan devices nothing uses any more (see
/// [`crate::core::device::Device::release_logical`]), so that a leak
/// check can see the device's own objects go too, and the validation
/// layer (`VKCL_VALIDATION`) report any object of the device still alive.
/// OpenCL objects made later make the devices again. Returns how many
/// devices still hold a Vulkan device because something uses it.
#[unsafe(no_mangle)]
pub extern "C" fn vkcl_release_devices() -> u32 {
    crate::core::platform::platform()
        .devices
        .iter()
        .filter(|d| !d.release_logical())
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_in_order() {
        for (i, (k, _)) in KINDS.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }
}
