//! Compute pipelines for rewritten kernels: one shader module per kernel
//! and device, one pipeline per work-group size (the size is given by
//! specialization constants 0, 1, 2), no descriptor sets: arguments travel
//! in push constants.

use std::sync::Arc;

use ash::vk;

use crate::vk::device::LogicalDevice;

pub struct ComputePipeline {
    device: Arc<LogicalDevice>,
    layout: vk::PipelineLayout,
    pub raw: vk::Pipeline,
}

/// A shader module with the layout every pipeline of it shares.
pub struct KernelModule {
    device: Arc<LogicalDevice>,
    module: vk::ShaderModule,
    pub push_size: u32,
}

impl KernelModule {
    pub fn new(
        device: &Arc<LogicalDevice>,
        words: &[u32],
        push_size: u32,
    ) -> Result<Self, vk::Result> {
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        // SAFETY: the words are a validated SPIR-V module.
        let module = unsafe { device.raw.create_shader_module(&info, None)? };
        Ok(KernelModule {
            device: device.clone(),
            module,
            push_size,
        })
    }

    /// A pipeline for work-groups of `local` items, with further
    /// specialization constants as (SpecId, value).
    pub fn pipeline(
        &self,
        local: [u32; 3],
        extra: &[(u32, u32)],
    ) -> Result<ComputePipeline, vk::Result> {
        let d = &self.device.raw;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .offset(0)
            .size(self.push_size)];
        let layout_info = vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&ranges);
        // SAFETY: valid device and create info.
        let layout = unsafe { d.create_pipeline_layout(&layout_info, None)? };
        let values: Vec<(u32, u32)> = (0..3)
            .map(|i| (i, local[i as usize]))
            .chain(extra.iter().copied())
            .collect();
        let entries: Vec<vk::SpecializationMapEntry> = values
            .iter()
            .enumerate()
            .map(|(n, &(id, _))| vk::SpecializationMapEntry {
                constant_id: id,
                offset: n as u32 * 4,
                size: 4,
            })
            .collect();
        let data: Vec<u8> = values.iter().flat_map(|(_, v)| v.to_ne_bytes()).collect();
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(self.module)
            .name(c"main")
            .specialization_info(&spec);
        let info = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout)];
        // SAFETY: every handle in `info` is valid and outlives the call.
        let raw =
            match unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &info, None) } {
                Ok(p) => p[0],
                Err((_, e)) => {
                    // SAFETY: the layout is unused.
                    unsafe { d.destroy_pipeline_layout(layout, None) };
                    return Err(e);
                }
            };
        Ok(ComputePipeline {
            device: self.device.clone(),
            layout,
            raw,
        })
    }
}

impl Drop for KernelModule {
    fn drop(&mut self) {
        // SAFETY: pipelines made from the module do not need it any more.
        unsafe { self.device.raw.destroy_shader_module(self.module, None) };
    }
}

impl ComputePipeline {
    pub fn layout(&self) -> vk::PipelineLayout {
        self.layout
    }
}

impl Drop for ComputePipeline {
    fn drop(&mut self) {
        // SAFETY: commands using the pipeline hold a reference until they
        // complete, so none is in flight.
        unsafe {
            self.device.raw.destroy_pipeline(self.raw, None);
            self.device.raw.destroy_pipeline_layout(self.layout, None);
        }
    }
}
