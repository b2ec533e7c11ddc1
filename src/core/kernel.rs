//! Kernel objects: one kernel of a built program, with its argument values.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use opencl_sys::*;

use crate::compiler::spirv::Form;
use crate::compiler::spirv::input::reflect::{ArgKind, KernelInfo};
use crate::compiler::spirv::p3_interface::interface::PushLayout;
use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;
use crate::compiler::spirv::p5_vulkan::images::{Binding, ImageClass, ImageInterface};
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::core::image::Image;
use crate::core::memory::Buffer;
use crate::core::object::{ClObject, Handle};
use crate::core::program::{Origin, Program, new_segment};
use crate::core::sampler::{Sampler, SamplerPair, SamplerState};
use crate::vk::device::LogicalDevice;
use crate::vk::memory::DeviceBuffer;
use crate::vk::pipeline::{ComputePipeline, KernelModule};

/// The value set for one argument.
#[derive(Clone)]
pub enum ArgValue {
    /// A buffer, or null. Setting an argument does not keep the buffer
    /// alive: the application may release it, as the CTS checks.
    Buffer(Option<Weak<Handle<Buffer>>>),
    /// The size of a `__local` allocation.
    Local(usize),
    /// Plain bytes (scalars, vectors, structs).
    Bytes(Vec<u8>),
    /// A device address given as is: an SVM pointer
    /// (clSetKernelArgSVMPointer) or a buffer's device address
    /// (clSetKernelArgDevicePointerEXT).
    Address(u64),
    /// An image; like buffers, not kept alive by the argument.
    Image(Weak<Handle<Image>>),
    Sampler(Weak<Handle<Sampler>>),
}

pub struct Kernel {
    pub program: Arc<Handle<Program>>,
    pub info: KernelInfo,
    /// The kernel's name, shared with the events of its launches.
    pub label: Arc<str>,
    /// Built with -cl-kernel-arg-info.
    pub arg_info: bool,
    /// May run with a global size that is not a multiple of the local
    /// size: OpenCL C 2.0+ or SPIR-V, without -cl-uniform-work-group-size.
    pub non_uniform_groups: bool,
    args: Mutex<Vec<Option<ArgValue>>>,
    /// The Vulkan form of the kernel per device and classes of the image
    /// arguments (or why there is none), shared with the kernel's clones
    /// and the program's other kernel objects of the same name.
    compiled: Arc<Mutex<CompiledForms>>,
}

/// A Vulkan device (by address), the classes of the image arguments, and
/// the form of the launch (one work-item, work-groups run flat).
type CompiledKey = (usize, Vec<ImageClass>, Form);

pub type CompiledForms = HashMap<CompiledKey, Result<Arc<Compiled>, String>>;

/// A work-group size and the `__local` argument sizes (SpecId, length).
type PipelineKey = ([u32; 3], Vec<(u32, u32)>);

/// A kernel rewritten for one Vulkan device, with its pipelines by
/// work-group size.
pub struct Compiled {
    pub module: KernelModule,
    pub push: PushLayout,
    /// The kernel's printf call sites.
    pub printf: Vec<crate::compiler::spirv::p1_kernel::printf::PrintfCall>,
    /// The program's block kernels, where this kernel enqueues on the
    /// device (by record kind; see the enqueue pass).
    pub enqueues: Option<Vec<String>>,
    /// Device memory for private and local data the rewrite relocated.
    pub scratch: crate::compiler::spirv::p3_interface::relocate::Scratch,
    /// The kernel's module data segment and the program's it refers to,
    /// kept alive by every command that uses them.
    pub data: Option<Arc<Segments>>,
    /// The descriptors of its images and samplers.
    pub images: ImageInterface,
    /// The samplers declared in the source, by binding.
    pub literal_samplers: Vec<(u32, SamplerPair)>,
    /// The image classes it was rewritten for, in image argument order.
    pub classes: Vec<ImageClass>,
    /// The work-group size the kernel requires, if it does.
    reqd_work_group_size: Option<[u32; 3]>,
    /// Its work-groups run as 1-D Vulkan work-groups: any shape within the
    /// device's largest work-group fits.
    flat: bool,
    /// The device's largest work-group, per dimension and in all
    /// (CL_DEVICE_MAX_WORK_ITEM_SIZES, CL_DEVICE_MAX_WORK_GROUP_SIZE).
    max_work_item_sizes: [usize; 3],
    max_work_group_size: usize,
    pipelines: Mutex<HashMap<PipelineKey, Arc<ComputePipeline>>>,
}

/// Device memory of a kernel's module data (see the module_data pass).
pub struct Segments {
    pub kernel: Arc<DeviceBuffer>,
    _program: Option<Arc<DeviceBuffer>>,
}

impl Compiled {
    /// The pipeline for a work-group size and `__local` argument sizes.
    /// A size beyond the device's limits, asked for or required by the
    /// kernel, is CL_INVALID_WORK_GROUP_SIZE before Vulkan is called:
    /// Vulkan forbids such pipelines (what a driver makes of one is
    /// undefined).
    pub fn pipeline(
        &self,
        local: [u32; 3],
        locals: Vec<(u32, u32)>,
    ) -> ClResult<Arc<ComputePipeline>> {
        if !self.fits_device(local)
            || self
                .reqd_work_group_size
                .is_some_and(|r| !self.fits_device(r))
        {
            return err(CL_INVALID_WORK_GROUP_SIZE);
        }
        let mut p = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        let key = (local, locals);
        if let Some(x) = p.get(&key) {
            return Ok(x.clone());
        }
        let made = Arc::new(self.module.pipeline(key.0, &key.1)?);
        p.insert(key, made.clone());
        Ok(made)
    }

    /// Whether work-groups of `size` items are within the device's limits.
    fn fits_device(&self, size: [u32; 3]) -> bool {
        let items = if self.flat {
            [self.max_work_group_size; 3]
        } else {
            self.max_work_item_sizes
        };
        crate::core::device::work_group_fits(size, items, self.max_work_group_size)
    }
}

/// The numeric class an image of `format` reads as in kernels on `device`.
pub fn image_class(device: &Device, format: &cl_image_format) -> ImageClass {
    match format.image_channel_data_type {
        CL_SIGNED_INT8 | CL_SIGNED_INT16 | CL_SIGNED_INT32 => ImageClass::Int,
        CL_UNSIGNED_INT8 | CL_UNSIGNED_INT16 | CL_UNSIGNED_INT32 => ImageClass::Uint,
        CL_UNORM_INT8 if device.filters_8_bit_coarsely() => ImageClass::FloatFilteredInKernel,
        CL_UNORM_SHORT_565 => ImageClass::Unorm565,
        CL_UNORM_SHORT_555 => ImageClass::Unorm555,
        _ => ImageClass::Float,
    }
}

pub fn device_caps(d: &Device) -> DeviceCaps {
    let i = &d.info;
    let clock = d.kernel_clock_capabilities();
    DeviceCaps {
        native_dot: d.native_dot_products(),
        matrices: d.cooperative_matrices(),
        device_clock: clock & CL_DEVICE_KERNEL_CLOCK_SCOPE_DEVICE_KHR != 0,
        subgroup_clock: clock & CL_DEVICE_KERNEL_CLOCK_SCOPE_SUB_GROUP_KHR != 0,
        int8: i.features12.shader_int8 != 0,
        int16: i.features.shader_int16 != 0,
        float16: i.features12.shader_float16 != 0,
        float64: i.features.shader_float64 != 0,
        storage8: i.features12.storage_buffer8_bit_access != 0,
        storage16: i.features11.storage_buffer16_bit_access != 0,
        int64_atomics: i.features12.shader_buffer_int64_atomics != 0,
        shared_float_atomics: [
            i.atomic_float.shader_shared_float32_atomics != 0,
            i.atomic_float.shader_shared_float64_atomics != 0,
        ],
        subgroup_ops: d.subgroup_operations(),
        subgroup_extended_types: i.features12.shader_subgroup_extended_types != 0,
        subgroup_size: d.subgroup_size(),
        max_work_group_size: d.max_work_group_size() as u32,
        max_push_constants: i.props.limits.max_push_constants_size,
        denorm_preserve_f32: d.asks_denorm_preserve(),
        native_f16: d.native_f16(),
        denorm_preserve_f16: i.props12.shader_denorm_preserve_float16 != 0,
        keeps_denormals_f32: d.preserves_denormals(),
        // Mesa 22.3's llvmpipe computes a double fma as a multiply and an
        // add (tests/fp64.rs checks fma against the host either way).
        double_fma_rounds_twice: d.is_llvmpipe(),
        bounded_loops: d.is_llvmpipe(),
        signed_zero_inf_nan: {
            let p = &i.props12;
            [
                p.shader_signed_zero_inf_nan_preserve_float16 != 0,
                p.shader_signed_zero_inf_nan_preserve_float32 != 0,
                p.shader_signed_zero_inf_nan_preserve_float64 != 0,
            ]
        },
        fences_halt: d.is_llvmpipe(),
        local_components_whole: d.is_llvmpipe(),
        vulkan_memory_model: i.features12.vulkan_memory_model != 0
            && i.features12.vulkan_memory_model_device_scope != 0,
    }
}

/// Whether a program built from `origin` with `options` allows partial
/// work-groups. A linked program's compile options are not kept, so it
/// counts as OpenCL C 1.2.
fn allows_non_uniform(origin: &Origin, options: &str) -> bool {
    let words: Vec<&str> = options.split_whitespace().collect();
    if words.contains(&"-cl-uniform-work-group-size") || matches!(origin, Origin::Linked) {
        return false;
    }
    matches!(origin, Origin::Il(_))
        || words
            .iter()
            .any(|w| matches!(*w, "-cl-std=CL2.0" | "-cl-std=CL3.0"))
}

impl ClObject for Kernel {
    const INVALID: i32 = CL_INVALID_KERNEL;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Kernels);
}

impl Drop for Kernel {
    fn drop(&mut self) {
        self.program
            .kernels_attached
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Kernel {
    /// clCreateKernel: `name` must be a kernel of the program's executable.
    pub fn new(program: &Arc<Handle<Program>>, name: &str) -> ClResult<Arc<Handle<Kernel>>> {
        let kernels = program
            .executable_kernels()
            .ok_or(ClError(CL_INVALID_PROGRAM_EXECUTABLE))?;
        let info = kernels
            .into_iter()
            .find(|k| k.name == name)
            .ok_or(ClError(CL_INVALID_KERNEL_NAME))?;
        let compiled = program.compiled_forms(name);
        Ok(Self::with_args(program, info, None, compiled))
    }

    fn with_args(
        program: &Arc<Handle<Program>>,
        info: KernelInfo,
        args: Option<Vec<Option<ArgValue>>>,
        compiled: Arc<Mutex<CompiledForms>>,
    ) -> Arc<Handle<Kernel>> {
        program
            .kernels_attached
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let arg_info = program
            .builds()
            .iter()
            .any(|b| b.arg_info && b.kernels.iter().any(|k| k.name == info.name));
        let non_uniform_groups = program
            .builds()
            .iter()
            .filter(|b| b.kernels.iter().any(|k| k.name == info.name))
            .any(|b| allows_non_uniform(&program.origin, &b.options));
        let n = info.args.len();
        Handle::new(Kernel {
            program: program.clone(),
            label: info.name.as_str().into(),
            info,
            arg_info,
            non_uniform_groups,
            args: Mutex::new(args.unwrap_or_else(|| vec![None; n])),
            compiled,
        })
    }

    /// clCloneKernel: the same kernel with the same argument values. The
    /// clone shares the kernel's compiled forms (they do not depend on the
    /// argument values, only on the classes of image formats).
    pub fn clone_kernel(&self) -> Arc<Handle<Kernel>> {
        Self::with_args(
            &self.program,
            self.info.clone(),
            Some(self.args().clone()),
            self.compiled.clone(),
        )
    }

    pub fn args(&self) -> MutexGuard<'_, Vec<Option<ArgValue>>> {
        self.args.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// clSetKernelArg, once the argument value is decoded.
    pub fn set_arg(&self, index: usize, value: ArgValue) -> ClResult<()> {
        let mut args = self.args();
        let slot = args.get_mut(index).ok_or(ClError(CL_INVALID_ARG_INDEX))?;
        *slot = Some(value);
        Ok(())
    }

    pub fn arg_kind(&self, index: usize) -> ClResult<&ArgKind> {
        self.info
            .args
            .get(index)
            .map(|a| &a.kind)
            .ok_or(ClError(CL_INVALID_ARG_INDEX))
    }

    /// Checks that every argument has a value (CL_INVALID_KERNEL_ARGS).
    pub fn check_args_set(&self) -> ClResult<()> {
        if self.args().iter().any(Option::is_none) {
            return err(CL_INVALID_KERNEL_ARGS);
        }
        Ok(())
    }

    /// The numeric class of each image argument's format (floats where
    /// none is set yet).
    pub fn image_classes(&self, device: &Device) -> Vec<ImageClass> {
        let args = self.args();
        self.info
            .args
            .iter()
            .zip(args.iter())
            .filter(|(a, _)| a.kind == ArgKind::Image)
            .map(|(_, v)| match v {
                Some(ArgValue::Image(w)) => w
                    .upgrade()
                    .map_or(ImageClass::Float, |i| image_class(device, &i.format)),
                _ => ImageClass::Float,
            })
            .collect()
    }

    /// The kernel rewritten for `device` and the image formats of the
    /// arguments set now, compiled once per device and classes. An
    /// NDRange of one work-item (`single_work_item`) has a form of its own
    /// where the device bounds loops (see the unroll pass), and so do
    /// work-groups that run as 1-D Vulkan work-groups (`flat`: longer in
    /// a dimension than Vulkan allows, or narrow ones on CPU devices; see
    /// `Options::flat_work_groups`).
    pub fn compiled(
        &self,
        device: &Device,
        vk: &Arc<LogicalDevice>,
        single_work_item: bool,
        flat: bool,
    ) -> Result<Arc<Compiled>, String> {
        let classes = self.image_classes(device);
        let plain = || {
            self.program.device_index(device).and_then(|i| {
                self.program
                    .rewritten(i, &self.info, &classes, Form::default())
                    .ok()
            })
        };
        // Only devices that bound loops make the form (see unroll::run),
        // and kernels with sub-groups run flat anyway.
        let form = Form {
            single_work_item: single_work_item && plain().is_some_and(|r| r.single_work_item_form),
            flat: flat && plain().is_some_and(|r| !r.flat),
        };
        let key = (Arc::as_ptr(vk) as usize, classes.clone(), form);
        let mut c = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = c.get(&key) {
            return r.clone();
        }
        let r = self.compile(device, vk, classes, form);
        if let Err(e) = &r {
            log::warn!(target: "vkcl::kernel", "kernel {} cannot run on {}: {e}", self.info.name, device.name());
        }
        c.insert(key, r.clone());
        r
    }

    fn compile(
        &self,
        device: &Device,
        vk: &Arc<LogicalDevice>,
        classes: Vec<ImageClass>,
        form: Form,
    ) -> Result<Arc<Compiled>, String> {
        let i = self
            .program
            .device_index(device)
            .ok_or("the program is not built for this device")?;
        let rewritten = self.program.rewritten(i, &self.info, &classes, form)?;
        let spirv = self
            .program
            .build_of(i)
            .spirv
            .ok_or("the program has no executable for this device")?;
        // For debugging the rewriter: the Vulkan module of each kernel.
        crate::compiler::dump(&format!("{}.spv", self.info.name), || {
            crate::compiler::link::to_bytes(&rewritten.words)
        });
        let limit = device.info.props.limits.max_push_constants_size;
        if rewritten.push.size > limit {
            return Err(format!(
                "the arguments need {} bytes of push constants, the device has {limit}; vkcl needs at least 64",
                rewritten.push.size
            ));
        }
        let data = match &rewritten.data {
            None => None,
            Some(d) => {
                let program = d
                    .needs_program()
                    .then(|| self.program.data_segment(i, vk, &spirv))
                    .transpose()?;
                let kernel = new_segment(vk, d, program.as_ref().map(|p| p.address))?;
                Some(Arc::new(Segments {
                    kernel,
                    _program: program,
                }))
            }
        };
        let f = &device.info.features;
        for c in &rewritten.images.caps {
            use rspirv::spirv::Capability;
            let (has, what) = match c {
                Capability::StorageImageReadWithoutFormat => (
                    f.shader_storage_image_read_without_format != 0,
                    "reads of write-only or read-write images (shaderStorageImageReadWithoutFormat)",
                ),
                Capability::StorageImageWriteWithoutFormat => (
                    f.shader_storage_image_write_without_format != 0,
                    "image writes (shaderStorageImageWriteWithoutFormat)",
                ),
                _ => (true, ""),
            };
            if !has {
                return Err(format!("the device lacks {what}"));
            }
        }
        let types: Vec<ash::vk::DescriptorType> = rewritten
            .images
            .bindings
            .iter()
            .map(|b| match b {
                Binding::SampledImage => ash::vk::DescriptorType::SAMPLED_IMAGE,
                Binding::StorageImage => ash::vk::DescriptorType::STORAGE_IMAGE,
                Binding::Sampler => ash::vk::DescriptorType::SAMPLER,
                Binding::UniformTexels => ash::vk::DescriptorType::UNIFORM_TEXEL_BUFFER,
                Binding::StorageTexels => ash::vk::DescriptorType::STORAGE_TEXEL_BUFFER,
            })
            .collect();
        descriptors_within_limits(&types, &device.info.props.limits)?;
        let module = KernelModule::new(
            vk,
            &self.info.name,
            &rewritten.words,
            rewritten.push.size,
            types,
            self.info.reqd_sub_group_size,
        )
        .map_err(|e| format!("vkCreateShaderModule failed: {e}"))?;
        let mut literal_samplers = Vec::new();
        for l in &rewritten.images.literal_samplers {
            let state = SamplerState::new(l.normalized, l.addressing, l.filter).map_err(|_| {
                "a literal sampler with an invalid combination of modes".to_string()
            })?;
            let s =
                SamplerPair::new(vk, &state).map_err(|e| format!("vkCreateSampler failed: {e}"))?;
            literal_samplers.push((l.binding, s));
        }
        Ok(Arc::new(Compiled {
            module,
            push: rewritten.push.clone(),
            printf: rewritten.printf.clone(),
            enqueues: rewritten.enqueues.clone(),
            scratch: rewritten.scratch.clone(),
            data,
            images: rewritten.images.clone(),
            literal_samplers,
            classes,
            reqd_work_group_size: self.info.reqd_work_group_size,
            flat: rewritten.flat,
            max_work_item_sizes: device.max_work_item_sizes(),
            max_work_group_size: device.max_work_group_size(),
            pipelines: Mutex::new(HashMap::new()),
        }))
    }

    /// The largest work-group the kernel can run in on `d`: its required
    /// size, else the device's, less where it requires a sub-group size.
    pub fn max_group_size(&self, d: &Device) -> usize {
        match (
            self.info.reqd_work_group_size,
            self.info.reqd_sub_group_size,
        ) {
            // Valid modules may require sizes no device runs (their product
            // past 32 bits): such kernels never fit.
            (Some([x, y, z]), _) => usize::try_from(
                u64::from(x)
                    .saturating_mul(u64::from(y))
                    .saturating_mul(u64::from(z)),
            )
            .unwrap_or(usize::MAX),
            (None, Some(s)) => d.max_work_group_size_for_subgroups(s),
            (None, None) => d.max_work_group_size(),
        }
    }

    /// Bytes of `__local` memory the set arguments ask for.
    pub fn local_arg_bytes(&self) -> u64 {
        self.args()
            .iter()
            .map(|a| match a {
                Some(ArgValue::Local(n)) => *n as u64,
                _ => 0,
            })
            .sum()
    }
}

/// Whether a kernel's descriptors (`types`) fit what one shader stage may
/// use on the device; a pipeline past the limits is invalid, and drivers
/// hang or crash on it rather than fail.
fn descriptors_within_limits(
    types: &[ash::vk::DescriptorType],
    l: &ash::vk::PhysicalDeviceLimits,
) -> Result<(), String> {
    use ash::vk::DescriptorType as T;
    let count = |kinds: &[T]| types.iter().filter(|t| kinds.contains(t)).count() as u64;
    let checks = [
        (
            count(&[T::SAMPLER]),
            l.max_per_stage_descriptor_samplers,
            "samplers",
        ),
        (
            count(&[T::SAMPLED_IMAGE, T::UNIFORM_TEXEL_BUFFER]),
            l.max_per_stage_descriptor_sampled_images,
            "read-only images",
        ),
        (
            count(&[T::STORAGE_IMAGE, T::STORAGE_TEXEL_BUFFER]),
            l.max_per_stage_descriptor_storage_images,
            "written images",
        ),
        // Samplers are not among the stage's resources.
        (
            count(&[
                T::SAMPLED_IMAGE,
                T::UNIFORM_TEXEL_BUFFER,
                T::STORAGE_IMAGE,
                T::STORAGE_TEXEL_BUFFER,
            ]),
            l.max_per_stage_resources,
            "images",
        ),
    ];
    for (needed, limit, what) in checks {
        if needed > u64::from(limit) {
            return Err(format!(
                "the kernel needs {needed} {what} and the device allows {limit} in a kernel"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_uniform_groups_follow_the_build_options() {
        let src = Origin::Source(String::new());
        assert!(!allows_non_uniform(&src, ""));
        assert!(!allows_non_uniform(&src, "-cl-std=CL1.2"));
        assert!(allows_non_uniform(&src, "-cl-std=CL3.0 -DX=1"));
        assert!(!allows_non_uniform(
            &src,
            "-cl-std=CL3.0 -cl-uniform-work-group-size"
        ));
        assert!(allows_non_uniform(&Origin::Il(Vec::new()), ""));
        assert!(!allows_non_uniform(&Origin::Linked, "-cl-std=CL3.0"));
    }
}
