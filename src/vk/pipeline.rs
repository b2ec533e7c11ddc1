//! Compute pipelines for rewritten kernels: one shader module per kernel
//! and device, one pipeline per work-group size (the size is given by
//! specialization constants 0, 1, 2). Arguments travel in push constants;
//! only images and samplers are descriptors, of set 0, pushed into the
//! command buffer where the device can (VK_KHR_push_descriptor), else in a
//! set of the command's own. Every pipeline is made through the device's
//! persistent `VkPipelineCache`, kept on disk beside the program cache.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ash::vk;

use crate::compiler::cache;
use crate::core::census::{self, Kind};
use crate::vk::device::LogicalDevice;
use crate::vk::physical::PhysicalInfo;

/// File names of saved pipeline caches start with this.
const CACHE_PREFIX: &str = "vk-pipelines";

/// One device's `VkPipelineCache`, loaded from disk when the device is
/// created and saved as pipelines are added: after the 1st, 2nd, 4th, 8th
/// ... new pipeline, or a new one at least `SAVE_INTERVAL` after the last
/// save (each save writes the whole cache, so saving after every pipeline
/// would cost time growing with the square of their number), and when the
/// device destroys it (`destroy`) before itself.
pub struct PipelineCache {
    pub raw: vk::PipelineCache,
    key: cache::Key,
    saves: Mutex<Saves>,
}

/// The longest a new pipeline waits for a save, once another comes.
const SAVE_INTERVAL: Duration = Duration::from_secs(10);

struct Saves {
    /// Size of the data last saved.
    size: usize,
    /// Pipelines made through the cache in this process.
    made: usize,
    /// The count of pipelines at which the next save happens.
    next: usize,
    last: Instant,
}

impl PipelineCache {
    /// The device's cache; without one (creation failed) pipelines are
    /// made uncached.
    pub fn new(device: &ash::Device, info: &PhysicalInfo) -> Self {
        // Vulkan checks the data's header too; the key keeps one file per
        // device and driver build, so devices do not overwrite each other's.
        let p = &info.props;
        let mut key = cache::Key::new("vk-pipeline-cache");
        key.add(&p.vendor_id.to_le_bytes());
        key.add(&p.device_id.to_le_bytes());
        key.add(&p.driver_version.to_le_bytes());
        key.add(&p.pipeline_cache_uuid);
        let data = cache::load_blob(CACHE_PREFIX, &key).unwrap_or_default();
        let create = |initial: &[u8]| {
            let ci = vk::PipelineCacheCreateInfo::default().initial_data(initial);
            // SAFETY: valid device; the data is what this driver saved (or
            // nothing), and Vulkan ignores data from another driver.
            unsafe { device.create_pipeline_cache(&ci, None) }
        };
        let raw = create(&data)
            .or_else(|e| {
                log::info!(target: "vkcl::vk", "ignoring the saved pipeline cache: {e}");
                create(&[])
            })
            .unwrap_or_else(|e| {
                log::warn!(target: "vkcl::vk", "no pipeline cache: {e}");
                vk::PipelineCache::null()
            });
        PipelineCache {
            raw,
            key,
            saves: Mutex::new(Saves {
                size: data.len(),
                made: 0,
                next: 1,
                last: Instant::now(),
            }),
        }
    }

    /// Counts a new pipeline, saving the cache when the count reaches the
    /// next power of two.
    fn pipeline_made(&self, device: &ash::Device) {
        let due = {
            let mut s = self.saves.lock().unwrap_or_else(|e| e.into_inner());
            s.made += 1;
            let due = s.made >= s.next || s.last.elapsed() >= SAVE_INTERVAL;
            if due {
                s.next = s.next.max(s.made * 2);
                s.last = Instant::now();
            }
            due
        };
        if due {
            self.save(device);
        }
    }

    /// Saves the cache when it has grown since the last save.
    fn save(&self, device: &ash::Device) {
        if self.raw == vk::PipelineCache::null() {
            return;
        }
        // SAFETY: a live cache of this device.
        let data = match unsafe { device.get_pipeline_cache_data(self.raw) } {
            Ok(d) => d,
            Err(e) => {
                log::debug!(target: "vkcl::vk", "cannot read the pipeline cache: {e}");
                return;
            }
        };
        let mut s = self.saves.lock().unwrap_or_else(|e| e.into_inner());
        if data.len() > s.size {
            cache::store_blob(CACHE_PREFIX, &self.key, &data);
            s.size = data.len();
        }
    }

    /// Destroys the cache; the device calls this before destroying itself.
    ///
    /// # Safety
    /// No pipeline creation uses the cache any more.
    pub unsafe fn destroy(&self, device: &ash::Device) {
        self.save(device);
        // SAFETY: as the caller promises.
        unsafe { device.destroy_pipeline_cache(self.raw, None) };
    }
}

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
    /// Set 0: the kernel's images and samplers (null when it has none).
    pub set_layout: vk::DescriptorSetLayout,
    /// The descriptor type of each binding of set 0.
    pub bindings: Vec<vk::DescriptorType>,
    /// The sub-group size the kernel requires, which its pipelines ask
    /// Vulkan for (subgroup size control).
    pub subgroup_size: Option<u32>,
    /// The kernel's name, for messages.
    name: String,
}

impl KernelModule {
    pub fn new(
        device: &Arc<LogicalDevice>,
        name: &str,
        words: &[u32],
        push_size: u32,
        bindings: Vec<vk::DescriptorType>,
        subgroup_size: Option<u32>,
    ) -> Result<Self, vk::Result> {
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        // SAFETY: the words are a validated SPIR-V module.
        let module = unsafe { device.raw.create_shader_module(&info, None)? };
        let mut this = KernelModule {
            device: device.clone(),
            module,
            push_size,
            set_layout: vk::DescriptorSetLayout::null(),
            bindings,
            subgroup_size,
            name: name.to_string(),
        };
        census::add(Kind::ShaderModules, 1);
        if !this.bindings.is_empty() {
            let b: Vec<vk::DescriptorSetLayoutBinding> = this
                .bindings
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(i as u32)
                        .descriptor_type(t)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let mut info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&b);
            if this.pushes_descriptors() {
                info = info.flags(vk::DescriptorSetLayoutCreateFlags::PUSH_DESCRIPTOR_KHR);
            }
            // SAFETY: valid device and create info.
            this.set_layout = unsafe { device.raw.create_descriptor_set_layout(&info, None)? };
        }
        Ok(this)
    }

    /// Whether dispatches push their descriptors (VK_KHR_push_descriptor,
    /// within Vulkan's guaranteed 32 per set) rather than allocate a set.
    pub fn pushes_descriptors(&self) -> bool {
        self.device.push_descriptor.is_some() && self.bindings.len() <= 32
    }

    /// Records this module's descriptors into `cb` (push descriptors):
    /// each binding's image view, texel buffer view or sampler, in
    /// binding order.
    pub fn push_descriptors(
        &self,
        cb: vk::CommandBuffer,
        layout: vk::PipelineLayout,
        views: &[vk::ImageView],
        texels: &[vk::BufferView],
        samplers: &[vk::Sampler],
    ) {
        let Some(push) = self.device.push_descriptor.as_ref() else {
            return;
        };
        let infos = image_infos(views, samplers);
        let writes = writes(vk::DescriptorSet::null(), &self.bindings, &infos, texels);
        // SAFETY: recording state; the layout's set 0 was made for push
        // descriptors; the views and samplers outlive the command.
        unsafe {
            push.cmd_push_descriptor_set(cb, vk::PipelineBindPoint::COMPUTE, layout, 0, &writes)
        };
    }

    /// A descriptor set of this module's layout, in a pool of its own.
    pub fn descriptor_set(&self) -> Result<DescriptorSet, vk::Result> {
        let mut sizes: Vec<vk::DescriptorPoolSize> = Vec::new();
        for &t in &self.bindings {
            match sizes.iter_mut().find(|s| s.ty == t) {
                Some(s) => s.descriptor_count += 1,
                None => sizes.push(vk::DescriptorPoolSize {
                    ty: t,
                    descriptor_count: 1,
                }),
            }
        }
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(1)
            .pool_sizes(&sizes);
        let d = &self.device.raw;
        // SAFETY: valid device and create info.
        let pool = unsafe { d.create_descriptor_pool(&info, None)? };
        let layouts = [self.set_layout];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool)
            .set_layouts(&layouts);
        // SAFETY: the pool has room for exactly this set.
        match unsafe { d.allocate_descriptor_sets(&alloc) } {
            Ok(sets) => {
                census::add(Kind::DescriptorPools, 1);
                Ok(DescriptorSet {
                    device: self.device.clone(),
                    pool,
                    raw: sets[0],
                })
            }
            Err(e) => {
                // SAFETY: the pool is unused.
                unsafe { d.destroy_descriptor_pool(pool, None) };
                Err(e)
            }
        }
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
        let set_layouts = [self.set_layout];
        let used_sets = if self.bindings.is_empty() {
            &set_layouts[..0]
        } else {
            &set_layouts[..]
        };
        let layout_info = vk::PipelineLayoutCreateInfo::default()
            .push_constant_ranges(&ranges)
            .set_layouts(used_sets);
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
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(self.subgroup_size.unwrap_or(0));
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(self.module)
            .name(c"main")
            .specialization_info(&spec);
        if self.subgroup_size.is_some() {
            stage = stage.push_next(&mut required);
        }
        let stats = self.device.pipeline_stats.as_ref();
        let flags = if stats.is_some() {
            vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
        } else {
            vk::PipelineCreateFlags::empty()
        };
        let info = [vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(layout)];
        let cache = &self.device.pipeline_cache;
        let started = Instant::now();
        // SAFETY: every handle in `info` is valid and outlives the call.
        let made = unsafe { d.create_compute_pipelines(cache.raw, &info, None) };
        log::debug!(target: "vkcl::compiler", "pipeline made by the driver in {:?}", started.elapsed());
        let raw = match made {
            Ok(p) => p[0],
            Err((_, e)) => {
                // SAFETY: the layout is unused.
                unsafe { d.destroy_pipeline_layout(layout, None) };
                return Err(e);
            }
        };
        cache.pipeline_made(d);
        census::add(Kind::Pipelines, 1);
        if let Some(ext) = stats {
            log_statistics(ext, raw, &self.name, local);
        }
        Ok(ComputePipeline {
            device: self.device.clone(),
            layout,
            raw,
        })
    }
}

/// Logs what the driver reports of each executable of `pipeline`
/// (VK_KHR_pipeline_executable_properties, `VKCL_PIPELINE_STATS=1`):
/// registers, shared and spilled memory and the like, in the driver's
/// own words.
fn log_statistics(
    ext: &ash::khr::pipeline_executable_properties::Device,
    pipeline: vk::Pipeline,
    kernel: &str,
    local: [u32; 3],
) {
    let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    // SAFETY: a pipeline of this device, made with CAPTURE_STATISTICS.
    let Ok(executables) = (unsafe { ext.get_pipeline_executable_properties(&info) }) else {
        return;
    };
    for (index, e) in executables.iter().enumerate() {
        let what = vk::PipelineExecutableInfoKHR::default()
            .pipeline(pipeline)
            .executable_index(index as u32);
        // SAFETY: as above; `index` is one of the pipeline's executables.
        let Ok(stats) = (unsafe { ext.get_pipeline_executable_statistics(&what) }) else {
            continue;
        };
        let text: Vec<String> = stats
            .iter()
            .map(|s| {
                let name = s
                    .name_as_c_str()
                    .map_or("?".into(), |n| n.to_string_lossy());
                // SAFETY: the format says which member of the union is set.
                let value = unsafe {
                    match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => {
                            s.value.f64.to_string()
                        }
                        _ => "?".into(),
                    }
                };
                format!("{name} {value}")
            })
            .collect();
        let executable = e
            .name_as_c_str()
            .map_or("?".into(), |n| n.to_string_lossy());
        log::info!(target: "vkcl::compiler", "pipeline of {kernel} {local:?}, {executable}: {}", text.join(", "));
    }
}

impl Drop for KernelModule {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        census::remove(Kind::ShaderModules, 1);
        // SAFETY: pipelines made from the module do not need it or its
        // set layout any more; a null layout is ignored.
        unsafe {
            self.device.raw.destroy_shader_module(self.module, None);
            self.device
                .raw
                .destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

/// One descriptor set in a pool of its own, for one command: destroyed
/// (with its pool) when the command that keeps it completes.
pub struct DescriptorSet {
    device: Arc<LogicalDevice>,
    pool: vk::DescriptorPool,
    pub raw: vk::DescriptorSet,
}

impl DescriptorSet {
    /// Points every binding at its image view, texel buffer view or
    /// sampler (in binding order), images in the GENERAL layout.
    pub fn write(
        &self,
        types: &[vk::DescriptorType],
        views: &[vk::ImageView],
        texels: &[vk::BufferView],
        samplers: &[vk::Sampler],
    ) {
        let infos = image_infos(views, samplers);
        let writes = writes(self.raw, types, &infos, texels);
        // SAFETY: the set is not in use yet; views and samplers are live.
        unsafe { self.device.raw.update_descriptor_sets(&writes, &[]) };
    }
}

/// One image descriptor per binding, images in the GENERAL layout.
fn image_infos(
    views: &[vk::ImageView],
    samplers: &[vk::Sampler],
) -> Vec<[vk::DescriptorImageInfo; 1]> {
    views
        .iter()
        .zip(samplers)
        .map(|(&image_view, &sampler)| {
            [vk::DescriptorImageInfo {
                sampler,
                image_view,
                image_layout: vk::ImageLayout::GENERAL,
            }]
        })
        .collect()
}

/// The writes of every binding of set `set` (null for push descriptors).
fn writes<'a>(
    set: vk::DescriptorSet,
    types: &[vk::DescriptorType],
    infos: &'a [[vk::DescriptorImageInfo; 1]],
    texels: &'a [vk::BufferView],
) -> Vec<vk::WriteDescriptorSet<'a>> {
    types
        .iter()
        .zip(infos)
        .enumerate()
        .map(|(i, (&t, info))| {
            let w = vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(i as u32)
                .descriptor_type(t);
            match t {
                vk::DescriptorType::UNIFORM_TEXEL_BUFFER
                | vk::DescriptorType::STORAGE_TEXEL_BUFFER => {
                    w.texel_buffer_view(&texels[i..i + 1])
                }
                _ => w.image_info(info),
            }
        })
        .collect()
}

impl Drop for DescriptorSet {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        census::remove(Kind::DescriptorPools, 1);
        // SAFETY: the command using the set has completed.
        unsafe { self.device.raw.destroy_descriptor_pool(self.pool, None) };
    }
}

// SAFETY: plain Vulkan handles; the set is written once before use.
unsafe impl Send for DescriptorSet {}
// SAFETY: as above.
unsafe impl Sync for DescriptorSet {}

impl ComputePipeline {
    pub fn layout(&self) -> vk::PipelineLayout {
        self.layout
    }
}

impl Drop for ComputePipeline {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        census::remove(Kind::Pipelines, 1);
        // SAFETY: commands using the pipeline hold a reference until they
        // complete, so none is in flight.
        unsafe {
            self.device.raw.destroy_pipeline(self.raw, None);
            self.device.raw.destroy_pipeline_layout(self.layout, None);
        }
    }
}
