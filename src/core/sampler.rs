//! Samplers: OpenCL's (normalized coordinates, addressing mode, filter
//! mode) with the `VkSampler` that implements them on each device of the
//! context.

use std::sync::Arc;

use ash::vk;
use opencl_sys::*;

use crate::core::context::Context;
use crate::core::error::{ClError, ClResult, err};
use crate::core::object::{ClObject, Handle};
use crate::vk::device::LogicalDevice;

/// What an OpenCL sampler is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplerState {
    pub normalized: bool,
    pub addressing: cl_addressing_mode,
    pub filter: cl_filter_mode,
}

impl SamplerState {
    /// Checks the modes; REPEAT and MIRRORED_REPEAT need normalized
    /// coordinates.
    pub fn new(
        normalized: bool,
        addressing: cl_addressing_mode,
        filter: cl_filter_mode,
    ) -> ClResult<SamplerState> {
        let known_addressing = matches!(
            addressing,
            CL_ADDRESS_NONE
                | CL_ADDRESS_CLAMP_TO_EDGE
                | CL_ADDRESS_CLAMP
                | CL_ADDRESS_REPEAT
                | CL_ADDRESS_MIRRORED_REPEAT
        );
        if !known_addressing || !matches!(filter, CL_FILTER_NEAREST | CL_FILTER_LINEAR) {
            return err(CL_INVALID_VALUE);
        }
        if !normalized && matches!(addressing, CL_ADDRESS_REPEAT | CL_ADDRESS_MIRRORED_REPEAT) {
            return err(CL_INVALID_VALUE);
        }
        Ok(SamplerState {
            normalized,
            addressing,
            filter,
        })
    }

    /// The Vulkan sampler settings. OpenCL's CLAMP reads the border colour
    /// (transparent black, or zero alpha for orders without alpha, which
    /// kernels get right by the format); NONE leaves out-of-range reads
    /// undefined, which clamping to the edge satisfies.
    /// The Vulkan settings of the sampler's twin for 1D and 2D images:
    /// unnormalized coordinates where OpenCL's are (Vulkan allows them
    /// only for those images, with clamping and without mipmaps).
    pub fn direct_create_info(&self) -> vk::SamplerCreateInfo<'static> {
        self.create_info()
            .unnormalized_coordinates(!self.normalized)
            .min_lod(0.0)
            .max_lod(0.0)
    }

    pub fn create_info(&self) -> vk::SamplerCreateInfo<'static> {
        let mode = match self.addressing {
            CL_ADDRESS_CLAMP => vk::SamplerAddressMode::CLAMP_TO_BORDER,
            CL_ADDRESS_REPEAT => vk::SamplerAddressMode::REPEAT,
            CL_ADDRESS_MIRRORED_REPEAT => vk::SamplerAddressMode::MIRRORED_REPEAT,
            _ => vk::SamplerAddressMode::CLAMP_TO_EDGE,
        };
        let filter = if self.filter == CL_FILTER_LINEAR {
            vk::Filter::LINEAR
        } else {
            vk::Filter::NEAREST
        };
        vk::SamplerCreateInfo::default()
            .mag_filter(filter)
            .min_filter(filter)
            .mipmap_mode(vk::SamplerMipmapMode::NEAREST)
            .address_mode_u(mode)
            .address_mode_v(mode)
            .address_mode_w(mode)
            .max_lod(0.0)
            .border_color(vk::BorderColor::FLOAT_TRANSPARENT_BLACK)
            .unnormalized_coordinates(false)
    }
}

/// A `VkSampler`, destroyed on drop.
pub struct DeviceSampler {
    device: Arc<LogicalDevice>,
    pub raw: vk::Sampler,
}

impl DeviceSampler {
    pub fn new(device: &Arc<LogicalDevice>, state: &SamplerState) -> ClResult<DeviceSampler> {
        Self::with_info(device, &state.create_info())
    }

    /// The twin for 1D and 2D images (see [`SamplerState::direct_create_info`]).
    pub fn direct(device: &Arc<LogicalDevice>, state: &SamplerState) -> ClResult<DeviceSampler> {
        Self::with_info(device, &state.direct_create_info())
    }

    fn with_info(
        device: &Arc<LogicalDevice>,
        info: &vk::SamplerCreateInfo<'_>,
    ) -> ClResult<DeviceSampler> {
        // SAFETY: valid device and create info.
        let raw = unsafe { device.raw.create_sampler(info, None) }.map_err(ClError::from)?;
        crate::core::census::add(crate::core::census::Kind::VulkanSamplers, 1);
        Ok(DeviceSampler {
            device: device.clone(),
            raw,
        })
    }
}

/// A sampler on one device: for every image, and its twin for 1D and 2D
/// images.
pub struct SamplerPair {
    pub normal: DeviceSampler,
    pub direct: DeviceSampler,
}

impl SamplerPair {
    pub fn new(device: &Arc<LogicalDevice>, state: &SamplerState) -> ClResult<SamplerPair> {
        Ok(SamplerPair {
            normal: DeviceSampler::new(device, state)?,
            direct: DeviceSampler::direct(device, state)?,
        })
    }
}

impl Drop for DeviceSampler {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        crate::core::census::remove(crate::core::census::Kind::VulkanSamplers, 1);
        // SAFETY: commands keep their samplers alive until they complete.
        unsafe { self.device.raw.destroy_sampler(self.raw, None) };
    }
}

pub struct Sampler {
    pub context: Arc<Handle<Context>>,
    pub state: SamplerState,
    /// The property list as passed to clCreateSamplerWithProperties.
    pub properties: Vec<cl_sampler_properties>,
    /// One per device of the context, in the context's order.
    pub device_samplers: Vec<SamplerPair>,
}

impl ClObject for Sampler {
    const INVALID: i32 = CL_INVALID_SAMPLER;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Samplers);
}

impl Sampler {
    pub fn new(
        context: Arc<Handle<Context>>,
        state: SamplerState,
        properties: Vec<cl_sampler_properties>,
    ) -> ClResult<Arc<Handle<Sampler>>> {
        let mut device_samplers = Vec::with_capacity(context.devices.len());
        for d in &context.devices {
            device_samplers.push(SamplerPair::new(&d.logical()?, &state)?);
        }
        Ok(Handle::new(Sampler {
            context,
            state,
            properties,
            device_samplers,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert!(SamplerState::new(true, CL_ADDRESS_REPEAT, CL_FILTER_LINEAR).is_ok());
        assert_eq!(
            SamplerState::new(false, CL_ADDRESS_REPEAT, CL_FILTER_NEAREST),
            Err(ClError(CL_INVALID_VALUE))
        );
        assert_eq!(
            SamplerState::new(true, 0x1234, CL_FILTER_NEAREST),
            Err(ClError(CL_INVALID_VALUE))
        );
        assert_eq!(
            SamplerState::new(true, CL_ADDRESS_CLAMP, 0x1234),
            Err(ClError(CL_INVALID_VALUE))
        );
        let info = SamplerState::new(true, CL_ADDRESS_CLAMP, CL_FILTER_LINEAR)
            .unwrap()
            .create_info();
        assert_eq!(info.address_mode_u, vk::SamplerAddressMode::CLAMP_TO_BORDER);
        assert_eq!(info.mag_filter, vk::Filter::LINEAR);
    }
}
