//! The vkcl platform: one per process, owning the Vulkan instance and the
//! OpenCL devices found on it.

use std::sync::{Arc, OnceLock};

use ash::vk;
use opencl_sys::*;

use crate::core::device::Device;
use crate::core::object::{ClObject, Handle};
use crate::vk::instance::{Instance, Validation};
use crate::vk::physical::PhysicalInfo;

pub struct Platform {
    /// `None` when no usable Vulkan loader exists: the platform is still
    /// listed (so `clinfo` can say why), with no devices.
    pub instance: Option<Arc<Instance>>,
    /// Best device first: this one answers `CL_DEVICE_TYPE_DEFAULT`.
    pub devices: Vec<Arc<Handle<Device>>>,
    /// Vulkan devices that are not OpenCL devices: (Vulkan index, name,
    /// why), for `vkcl info`.
    pub skipped: Vec<(usize, String, String)>,
}

impl ClObject for Platform {
    const INVALID: i32 = CL_INVALID_PLATFORM;
}

/// The platform's name, vendor and ICD suffix.
pub const NAME: &str = "vkcl";
pub const VENDOR: &str = "vkcl";
pub const ICD_SUFFIX: &str = "VKCL";

/// The process-wide platform, created on first use.
pub fn platform() -> &'static Arc<Handle<Platform>> {
    static PLATFORM: OnceLock<Arc<Handle<Platform>>> = OnceLock::new();
    PLATFORM.get_or_init(|| {
        crate::core::init_logging();
        Handle::new(Platform::discover())
    })
}

impl Platform {
    fn discover() -> Platform {
        let instance = match Instance::new(Validation::from_env()) {
            Ok(i) => Arc::new(i),
            Err(why) => {
                log::warn!(target: "vkcl::platform", "no Vulkan devices: {why}");
                return Platform {
                    instance: None,
                    devices: Vec::new(),
                    skipped: Vec::new(),
                };
            }
        };
        // SAFETY: valid instance.
        let physical = unsafe { instance.raw.enumerate_physical_devices() }.unwrap_or_else(|e| {
            log::warn!(target: "vkcl::platform", "vkEnumeratePhysicalDevices failed: {e}");
            Vec::new()
        });
        let selector = std::env::var("VKCL_DEVICE").ok().filter(|s| !s.is_empty());
        let repeat = device_repeat();
        let mut found = Vec::new();
        let mut skipped = Vec::new();
        for (index, pd) in physical.into_iter().enumerate() {
            // SAFETY: `pd` was just enumerated from this instance.
            let info = unsafe { PhysicalInfo::query(&instance.entry, &instance.raw, pd) };
            let name = info.name();
            if let Some(sel) = &selector {
                if !device_matches(sel, index, &name) {
                    log::info!(target: "vkcl::platform", "Vulkan device {index} ({name}) not selected by VKCL_DEVICE={sel}");
                    skipped.push((index, name, format!("not selected by VKCL_DEVICE={sel}")));
                    continue;
                }
            }
            if let Some(why) = info.unsuitable_reason() {
                log::warn!(target: "vkcl::platform", "Vulkan device {index} ({name}) skipped: {why}");
                skipped.push((index, name, why));
                continue;
            }
            log::info!(target: "vkcl::platform", "Vulkan device {index} ({name}) is an OpenCL device");
            found.push(Device::new(instance.clone(), info, index));
            for _ in 1..repeat {
                // SAFETY: as above.
                let info = unsafe { PhysicalInfo::query(&instance.entry, &instance.raw, pd) };
                found.push(Device::new(instance.clone(), info, index));
            }
        }
        // Stable sort: among equals, Vulkan's order is kept.
        found.sort_by_key(|d| std::cmp::Reverse(type_preference(d.info.props.device_type)));
        Platform {
            instance: Some(instance),
            devices: found.into_iter().map(Handle::new).collect(),
            skipped,
        }
    }

    /// Extensions every device of the platform supports: vkcl's own, and
    /// the device extensions that have platform queries
    /// ([`WITH_PLATFORM_QUERIES`]) where every device has them.
    pub fn extensions(&self) -> Vec<(&'static str, cl_version)> {
        let mut common = crate::core::device::PLATFORM_EXTENSIONS.to_vec();
        if let Some(first) = self.devices.first() {
            common.extend(
                first
                    .extensions()
                    .into_iter()
                    .filter(|(name, _)| WITH_PLATFORM_QUERIES.contains(name)),
            );
        }
        for d in &self.devices {
            let ext = d.extensions();
            common.retain(|e| ext.contains(e));
        }
        common
    }
}

/// Device extensions that also answer platform queries (the handle types
/// every device imports or exports), so that applications find them in
/// the platform's extension string, where they look first.
const WITH_PLATFORM_QUERIES: &[&str] = &[
    "cl_khr_external_memory",
    "cl_khr_external_memory_opaque_fd",
    "cl_khr_external_semaphore",
    "cl_khr_external_semaphore_opaque_fd",
    "cl_khr_external_semaphore_sync_fd",
];

/// How many OpenCL devices each Vulkan device is offered as
/// (`VKCL_DEVICE_REPEAT`, default 1, at most 8). Each is a Vulkan device
/// of its own, sharing nothing with the others, as separate GPUs would:
/// this lets multi-device contexts be tested on a machine with one GPU.
fn device_repeat() -> usize {
    std::env::var("VKCL_DEVICE_REPEAT")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(1, |n| n.clamp(1, 8))
}

/// `VKCL_DEVICE` is either the Vulkan device index or a case-insensitive
/// part of its name.
fn device_matches(selector: &str, index: usize, name: &str) -> bool {
    match selector.trim().parse::<usize>() {
        Ok(i) => i == index,
        Err(_) => name
            .to_lowercase()
            .contains(&selector.trim().to_lowercase()),
    }
}

/// Which Vulkan device types make the best default OpenCL device.
fn type_preference(t: vk::PhysicalDeviceType) -> u32 {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => 4,
        vk::PhysicalDeviceType::INTEGRATED_GPU => 3,
        vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
        vk::PhysicalDeviceType::CPU => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_selection() {
        assert!(device_matches("1", 1, "llvmpipe"));
        assert!(!device_matches("0", 1, "llvmpipe"));
        assert!(device_matches("LLVMpipe", 0, "llvmpipe (LLVM 15)"));
        assert!(!device_matches("nvidia", 0, "llvmpipe (LLVM 15)"));
        assert!(
            type_preference(vk::PhysicalDeviceType::DISCRETE_GPU)
                > type_preference(vk::PhysicalDeviceType::CPU)
        );
    }
}
