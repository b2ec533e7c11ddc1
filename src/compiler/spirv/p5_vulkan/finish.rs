//! Pass 19 (phase 5): the module becomes a Vulkan compute module.
//! Kernel-only capabilities, decorations and execution modes go; the
//! capabilities the remaining code needs come in; the memory model is
//! `PhysicalStorageBuffer64` with `GLSL450`, or `Vulkan` for kernels the
//! sync pass moved to it; the kernel is the `GLCompute` entry point `main`
//! listing every global variable it uses; SPIR-V 1.5.
//!
//! Takes the kernel after `sync`, its function id and the device's
//! `DeviceCaps`. Guarantees a SPIR-V 1.5 module that validates for Vulkan
//! 1.2: one `GLCompute` entry point `main` listing every global variable it
//! uses, the capabilities and extensions its code needs, each one the
//! device has (else it fails with "the device lacks ..."), float controls,
//! and the `PhysicalStorageBuffer64` addressing model with the `GLSL450` or
//! `Vulkan` memory model. It also runs `signed::run`, and
//! `components::run` where the device needs it.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{
    AddressingModel, Capability, Decoration, ExecutionMode, ExecutionModel, GroupOperation,
    MemoryModel, Op, StorageClass, Word,
};

use crate::compiler::spirv::common::ctx::{Ctx, id_at, ids_used};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::p3_interface::builtins::workgroup_size;

/// What the Vulkan device can take, for the capabilities the module needs.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceCaps {
    /// The integer dot products (cl_khr_integer_dot_product) the built-ins
    /// pass leaves to the device's own packed 4x8-bit instructions, by
    /// `exact::dot_form` bit; the others become multiplies and adds.
    pub native_dot: u8,
    /// VK_KHR_shader_clock's shaderDeviceClock and shaderSubgroupClock.
    pub device_clock: bool,
    pub subgroup_clock: bool,
    pub int8: bool,
    pub int16: bool,
    pub float16: bool,
    pub float64: bool,
    pub storage8: bool,
    pub storage16: bool,
    pub int64_atomics: bool,
    /// Atomic exchange, load and store of 32- and 64-bit floats in local
    /// memory (shaderSharedFloat32Atomics, shaderSharedFloat64Atomics).
    pub shared_float_atomics: [bool; 2],
    /// VkPhysicalDeviceSubgroupProperties::supportedOperations, when the
    /// compute stage has sub-group operations (else 0).
    pub subgroup_ops: u32,
    /// shaderSubgroupExtendedTypes: sub-group arithmetic on 64-bit and
    /// 16-bit types.
    pub subgroup_extended_types: bool,
    /// The sub-group width (VkPhysicalDeviceSubgroupProperties::subgroupSize).
    pub subgroup_size: u32,
    /// The largest work-group the device runs.
    pub max_work_group_size: u32,
    /// VkPhysicalDeviceLimits::maxPushConstantsSize; 0 means Vulkan's
    /// guaranteed minimum (128).
    pub max_push_constants: u32,
    /// shaderDenormPreserveFloat32: kernels declare that single-precision
    /// denormals are kept (the DenormPreserve execution mode).
    pub denorm_preserve_f32: bool,
    /// Half arithmetic runs on the hardware's 16-bit floats (see the
    /// `fp16` pass): shaderFloat16 with 16-bit storage, rounding to
    /// nearest even declared (shaderRoundingModeRTEFloat16), and half
    /// denormals kept, declared or not.
    pub native_f16: bool,
    /// shaderDenormPreserveFloat16: kernels with half arithmetic declare
    /// that its denormals are kept.
    pub denorm_preserve_f16: bool,
    /// shaderSignedZeroInfNanPreserveFloat16/32/64: kernels may declare
    /// that zero signs, infinities and NaNs are kept through float
    /// operations of that width (otherwise Vulkan lets drivers assume
    /// there are none).
    pub signed_zero_inf_nan: [bool; 3],
    /// The driver's double `Fma` rounds the product before adding
    /// (lavapipe): double fma is then worked out on the bits.
    pub double_fma_rounds_twice: bool,
    /// The driver ends a work-item's loops after a fixed number of
    /// back-edges (Mesa's llvmpipe: 65535 over all loops): innermost loops
    /// are unrolled (see the unroll pass).
    pub bounded_loops: bool,
    /// Kernels keep single-precision denormals (CL_FP_DENORM in
    /// CL_DEVICE_SINGLE_FP_CONFIG), declared or not; libclc's functions
    /// are then told so.
    pub keeps_denormals_f32: bool,
    /// The driver makes a memory barrier (`OpMemoryBarrier`, or the one it
    /// puts around an ordered atomic) a control barrier: Mesa 22.3's
    /// llvmpipe, whose work-items of a work-group are coroutines that then
    /// stop where the others never arrive (a fence in divergent code loses
    /// work). Its atomics are sequentially consistent and its memory the
    /// host's, so kernels there need no fences at all: the sync pass drops
    /// them, and the ordering of atomics.
    pub fences_halt: bool,
    /// The driver may give a load of one component of a vector in
    /// work-group memory another component's value, where the same
    /// vector was loaded whole before (Mesa 22.3's llvmpipe): such loads
    /// load the whole vector (see the components pass).
    pub local_components_whole: bool,
    /// vulkanMemoryModel with vulkanMemoryModelDeviceScope: kernels that
    /// order memory are built on the Vulkan memory model (see the sync
    /// pass).
    pub vulkan_memory_model: bool,
    /// The sub-group-scope matrix multiply-adds of VK_KHR_cooperative_matrix
    /// (cl_vkcl_cooperative_matrix; empty without it).
    pub matrices: &'static [crate::compiler::spirv::p1_kernel::matrix::MatrixVariant],
}

/// The GroupNonUniform* capabilities of the sub-group built-ins and
/// operations in use, refused when the device lacks them.
fn subgroup_capabilities(
    ctx: &Ctx,
    caps: &DeviceCaps,
    need: &mut Vec<Capability>,
) -> Result<(), String> {
    use crate::compiler::spirv::p3_interface::groups::{capability_of, feature_bit};
    use rspirv::spirv::BuiltIn;
    let mut wanted: Vec<Capability> = Vec::new();
    let mut extended = false;
    if ctx.module.annotations.iter().any(|a| {
        matches!(
            a.operands.get(2),
            Some(Operand::BuiltIn(
                BuiltIn::SubgroupSize
                    | BuiltIn::SubgroupId
                    | BuiltIn::SubgroupLocalInvocationId
                    | BuiltIn::NumSubgroups
            ))
        )
    }) {
        wanted.push(Capability::GroupNonUniform);
    }
    if ctx.module.annotations.iter().any(|a| {
        matches!(
            a.operands.get(2),
            Some(Operand::BuiltIn(
                BuiltIn::SubgroupEqMask
                    | BuiltIn::SubgroupGeMask
                    | BuiltIn::SubgroupGtMask
                    | BuiltIn::SubgroupLeMask
                    | BuiltIn::SubgroupLtMask
            ))
        )
    }) {
        wanted.extend([
            Capability::GroupNonUniform,
            Capability::GroupNonUniformBallot,
        ]);
    }
    // Scalar types (and vectors, by their components) outside what every
    // device's sub-group operations take: integers other than 32-bit ones,
    // and half.
    let mut extended_types: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| match (t.class.opcode, t.operands.first()) {
            (Op::TypeInt, Some(Operand::LiteralBit32(w))) => *w != 32,
            (Op::TypeFloat, Some(Operand::LiteralBit32(w))) => *w == 16,
            _ => false,
        })
        .filter_map(|t| t.result_id)
        .collect();
    let vectors: Vec<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| t.class.opcode == Op::TypeVector)
        .filter(|t| id_at(t, 0).is_some_and(|c| extended_types.contains(&c)))
        .filter_map(|t| t.result_id)
        .collect();
    extended_types.extend(vectors);
    for i in ctx
        .module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
    {
        if let Some(c) = capability_of(i.class.opcode) {
            if !wanted.contains(&Capability::GroupNonUniform) {
                wanted.push(Capability::GroupNonUniform);
            }
            if !wanted.contains(&c) {
                wanted.push(c);
            }
            if i.result_type.is_some_and(|t| extended_types.contains(&t)) {
                extended = true;
            }
            if i.operands.get(1) == Some(&Operand::GroupOperation(GroupOperation::ClusteredReduce))
                && !wanted.contains(&Capability::GroupNonUniformClustered)
            {
                wanted.push(Capability::GroupNonUniformClustered);
            }
        }
    }
    let mut seen = HashSet::default();
    wanted.retain(|c| seen.insert(*c));
    for c in wanted {
        if caps.subgroup_ops & feature_bit(c) == 0 {
            return Err(format!(
                "the device lacks sub-group operations ({c:?}) in compute shaders"
            ));
        }
        need.push(c);
    }
    if extended && !caps.subgroup_extended_types {
        return Err(
            "the device lacks sub-group operations on 8-, 16- and 64-bit integers and half (shaderSubgroupExtendedTypes)"
                .into(),
        );
    }
    Ok(())
}

pub fn run(ctx: &mut Ctx, fid: Word, caps: &DeviceCaps) -> Result<(), String> {
    // The work-group size vector exists even when no code reads it: it
    // carries the size the pipeline specializes.
    workgroup_size(ctx);
    strip_decorations(ctx)?;
    // Capabilities from the types in use.
    let mut need: Vec<Capability> = vec![
        Capability::Shader,
        Capability::Int64,
        Capability::PhysicalStorageBufferAddresses,
    ];
    let mut widths = HashSet::default();
    for t in &ctx.module.types_global_values {
        match (t.class.opcode, t.operands.first()) {
            (Op::TypeInt, Some(Operand::LiteralBit32(w))) => {
                widths.insert(("int", *w));
            }
            (Op::TypeFloat, Some(Operand::LiteralBit32(w))) => {
                widths.insert(("float", *w));
            }
            (Op::TypeVector, _) => {
                if matches!(t.operands.get(1), Some(Operand::LiteralBit32(n)) if *n > 4) {
                    return Err("vectors of 8 or 16 components are not supported yet".into());
                }
            }
            (
                Op::TypeEvent
                | Op::TypeDeviceEvent
                | Op::TypeReserveId
                | Op::TypeQueue
                | Op::TypePipe
                | Op::TypeOpaque,
                _,
            ) => {
                return Err(format!("{:?} is not supported yet", t.class.opcode));
            }
            // Left by the images pass in their Vulkan form only.
            (Op::TypeImage, _) if t.operands.len() > 7 => {
                return Err("an OpenCL image type is left after the images pass".into());
            }
            _ => {}
        }
    }
    let mut require = |has: bool, cap: Capability, what: &str| -> Result<(), String> {
        if !has {
            return Err(format!("the device lacks {what}"));
        }
        need.push(cap);
        Ok(())
    };
    if widths.contains(&("int", 8)) {
        require(caps.int8, Capability::Int8, "8-bit integers (shaderInt8)")?;
        require(
            caps.storage8,
            Capability::StorageBuffer8BitAccess,
            "8-bit storage (storageBuffer8BitAccess)",
        )?;
    }
    if widths.contains(&("int", 16)) {
        require(
            caps.int16,
            Capability::Int16,
            "16-bit integers (shaderInt16)",
        )?;
        require(
            caps.storage16,
            Capability::StorageBuffer16BitAccess,
            "16-bit storage (storageBuffer16BitAccess)",
        )?;
    }
    if widths.contains(&("float", 16)) {
        require(
            caps.float16,
            Capability::Float16,
            "half precision (shaderFloat16)",
        )?;
        require(
            caps.storage16,
            Capability::StorageBuffer16BitAccess,
            "16-bit storage (storageBuffer16BitAccess)",
        )?;
    }
    if widths.contains(&("float", 64)) {
        require(
            caps.float64,
            Capability::Float64,
            "double precision (shaderFloat64)",
        )?;
    }
    if uses_64bit_atomics(ctx) {
        require(
            caps.int64_atomics,
            Capability::Int64Atomics,
            "64-bit atomics (shaderBufferInt64Atomics)",
        )?;
    }
    for c in &ctx.image_caps {
        if !need.contains(c) {
            need.push(*c);
        }
    }
    subgroup_capabilities(ctx, caps, &mut need)?;
    // Hardware half arithmetic rounds to nearest even and keeps half
    // denormals because the kernel says so.
    let half_modes: Vec<(ExecutionMode, u32)> =
        if caps.native_f16 && widths.contains(&("float", 16)) {
            [(ExecutionMode::RoundingModeRTE, 16)]
                .into_iter()
                .chain(
                    caps.denorm_preserve_f16
                        .then_some((ExecutionMode::DenormPreserve, 16)),
                )
                .collect()
        } else {
            Vec::new()
        };
    if caps.denorm_preserve_f32
        || half_modes
            .iter()
            .any(|m| m.0 == ExecutionMode::DenormPreserve)
    {
        need.push(Capability::DenormPreserve);
    }
    if !half_modes.is_empty() {
        need.push(Capability::RoundingModeRTE);
    }
    // OpenCL's float arithmetic is IEEE 754's: zero signs, infinities and
    // NaNs are results like any other (NVIDIA's compiler otherwise folds
    // NaN tests and zero signs away).
    let preserved: Vec<u32> = [
        (16, Capability::Float16),
        (32, Capability::Shader),
        (64, Capability::Float64),
    ]
    .into_iter()
    .zip(caps.signed_zero_inf_nan)
    .filter(|((_, c), yes)| *yes && need.contains(c))
    .map(|((width, _), _)| width)
    .collect();
    if !preserved.is_empty() {
        need.push(Capability::SignedZeroInfNanPreserve);
    }
    if ctx.vulkan_memory_model {
        need.push(Capability::VulkanMemoryModel);
        need.push(Capability::VulkanMemoryModelDeviceScope);
    }
    // What the module still uses that needs a capability and a SPIR-V
    // extension: integer dot products left to the device (see
    // `native_dot`), and the kernel clock (the clock pass).
    let uses = |wanted: &dyn Fn(Op) -> bool| {
        ctx.module
            .functions
            .iter()
            .flat_map(|f| f.all_inst_iter())
            .any(|i| wanted(i.class.opcode))
    };
    let mut extensions = Vec::new();
    if uses(&|op| crate::compiler::spirv::p2_builtins::exact::dot_form(op).is_some()) {
        need.extend([
            Capability::DotProduct,
            Capability::DotProductInput4x8BitPacked,
        ]);
        extensions.push("SPV_KHR_integer_dot_product");
    }
    if crate::compiler::spirv::p1_kernel::matrix::uses_matrices(ctx) {
        if !ctx.vulkan_memory_model {
            return Err(
                "cooperative matrices need the Vulkan memory model (vulkanMemoryModel)".into(),
            );
        }
        need.push(Capability::CooperativeMatrixKHR);
        extensions.push("SPV_KHR_cooperative_matrix");
    }
    if uses(&|op| op == Op::ReadClockKHR) {
        need.push(Capability::ShaderClockKHR);
        extensions.push("SPV_KHR_shader_clock");
    }
    ctx.module.capabilities = need
        .into_iter()
        .map(|c| Instruction::new(Op::Capability, None, None, vec![Operand::Capability(c)]))
        .collect();
    for e in &ctx.module.extensions {
        match e.operands.first() {
            // The bit instructions are core in Vulkan shaders, for 32-bit
            // values (the built-ins pass lowered other widths); integer
            // dot products were lowered or are declared again below.
            Some(Operand::LiteralString(s))
                if s == "SPV_KHR_no_integer_wrap_decoration"
                    || s == "SPV_KHR_bit_instructions"
                    || s == "SPV_KHR_integer_dot_product"
                    || s == "SPV_KHR_cooperative_matrix" => {}
            Some(Operand::LiteralString(s)) => {
                return Err(format!("the SPIR-V extension {s} is not supported yet"));
            }
            _ => {}
        }
    }
    ctx.module.extensions = extensions
        .into_iter()
        .map(|e| {
            Instruction::new(
                Op::Extension,
                None,
                None,
                vec![Operand::LiteralString(e.into())],
            )
        })
        .collect();
    ctx.module.memory_model = Some(Instruction::new(
        Op::MemoryModel,
        None,
        None,
        vec![
            Operand::AddressingModel(AddressingModel::PhysicalStorageBuffer64),
            Operand::MemoryModel(if ctx.vulkan_memory_model {
                MemoryModel::Vulkan
            } else {
                MemoryModel::GLSL450
            }),
        ],
    ));
    // Every global variable the kernel uses is on the interface.
    let used: HashSet<Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.blocks.iter().flat_map(|b| b.instructions.iter()))
        .flat_map(|i| ids_used(i).collect::<Vec<_>>())
        .collect();
    let interface: Vec<Operand> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable)
        .filter_map(|i| i.result_id)
        .filter(|v| used.contains(v))
        .map(Operand::IdRef)
        .collect();
    let mut ep = vec![
        Operand::ExecutionModel(ExecutionModel::GLCompute),
        Operand::IdRef(fid),
        Operand::LiteralString("main".into()),
    ];
    ep.extend(interface);
    ctx.module.entry_points = vec![Instruction::new(Op::EntryPoint, None, None, ep)];
    ctx.module.execution_modes = vec![Instruction::new(
        Op::ExecutionMode,
        None,
        None,
        vec![
            Operand::IdRef(fid),
            Operand::ExecutionMode(ExecutionMode::LocalSize),
            Operand::LiteralBit32(1),
            Operand::LiteralBit32(1),
            Operand::LiteralBit32(1),
        ],
    )];
    // SPIR-V 1.4's float controls (the module is 1.5), each for a width.
    let float_controls = caps
        .denorm_preserve_f32
        .then_some((ExecutionMode::DenormPreserve, 32))
        .into_iter()
        .chain(half_modes)
        .chain(
            preserved
                .into_iter()
                .map(|width| (ExecutionMode::SignedZeroInfNanPreserve, width)),
        );
    for (mode, width) in float_controls {
        ctx.module.execution_modes.push(Instruction::new(
            Op::ExecutionMode,
            None,
            None,
            vec![
                Operand::IdRef(fid),
                Operand::ExecutionMode(mode),
                Operand::LiteralBit32(width),
            ],
        ));
    }
    // Private variables of constant data keep their initialisers; nothing
    // else of the Kernel model may remain.
    // Image and sampler descriptors are UniformConstant variables.
    let descriptor = |ptr: Option<Word>| {
        ptr.and_then(|p| ctx.pointer_parts(p))
            .and_then(|(_, t)| ctx.global(t))
            .is_some_and(|t| matches!(t.class.opcode, Op::TypeImage | Op::TypeSampler))
    };
    for v in &ctx.module.types_global_values {
        if v.class.opcode == Op::Variable {
            match v.operands.first() {
                Some(Operand::StorageClass(
                    StorageClass::Input
                    | StorageClass::PushConstant
                    | StorageClass::Workgroup
                    | StorageClass::Private,
                )) => {}
                Some(Operand::StorageClass(StorageClass::UniformConstant))
                    if descriptor(v.result_type) => {}
                other => {
                    return Err(format!(
                        "a module variable in storage class {other:?} is not supported yet"
                    ));
                }
            }
        }
    }
    if let Some(h) = ctx.module.header.as_mut() {
        h.version = (1 << 16) | (5 << 8);
    }
    pointer_variables_alias(ctx);
    wide_memory_access(ctx);
    local_variables_uninitialised(ctx);
    null_device_pointers(ctx);
    crate::compiler::spirv::p5_vulkan::signed::run(ctx);
    if caps.local_components_whole {
        crate::compiler::spirv::p5_vulkan::components::run(ctx);
    }
    // Passes add types where convenient; SPIR-V wants each global after
    // the ids it refers to.
    ctx.sort_globals();
    Ok(())
}

/// Variables that hold device addresses (pointers kept in private
/// variables, as unoptimised code does) must say whether what they point
/// at may alias; OpenCL C pointers may.
fn pointer_variables_alias(ctx: &mut Ctx) {
    let psb_pointers: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| {
            t.class.opcode == Op::TypePointer
                && t.operands.first()
                    == Some(&Operand::StorageClass(StorageClass::PhysicalStorageBuffer))
        })
        .filter_map(|t| t.result_id)
        .collect();
    // Device addresses, and arrays of them (generic pointers kept in
    // private arrays).
    let mut held = psb_pointers.clone();
    loop {
        let more: Vec<Word> = ctx
            .module
            .types_global_values
            .iter()
            .filter(|t| {
                t.class.opcode == Op::TypeArray && id_at(t, 0).is_some_and(|e| held.contains(&e))
            })
            .filter_map(|t| t.result_id)
            .filter(|r| !held.contains(r))
            .collect();
        if more.is_empty() {
            break;
        }
        held.extend(more);
    }
    let holders: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| {
            t.class.opcode == Op::TypePointer && id_at(t, 1).is_some_and(|p| held.contains(&p))
        })
        .filter_map(|t| t.result_id)
        .collect();
    let vars: Vec<Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .chain(&ctx.module.types_global_values)
        .filter(|i| {
            i.class.opcode == Op::Variable && i.result_type.is_some_and(|t| holders.contains(&t))
        })
        .filter_map(|i| i.result_id)
        .collect();
    for v in vars {
        ctx.decorate(v, Decoration::AliasedPointer, vec![]);
    }
}

fn uses_64bit_atomics(ctx: &Ctx) -> bool {
    let is64 = |t: Option<Word>| {
        t.and_then(|t| ctx.global(t)).is_some_and(|i| {
            i.class.opcode == Op::TypeInt && i.operands.first() == Some(&Operand::LiteralBit32(64))
        })
    };
    ctx.module
        .functions
        .iter()
        .flat_map(|f| f.blocks.iter().flat_map(|b| &b.instructions))
        .any(|i| {
            let name = format!("{:?}", i.class.opcode);
            name.starts_with("Atomic")
                && (is64(i.result_type)
                    || (i.class.opcode == Op::AtomicStore
                        && id_at(i, 3).is_some_and(|v| is64(ctx.type_of(v)))))
        })
}

/// Every id the module still defines.
fn defined_ids(ctx: &Ctx) -> HashSet<Word> {
    let m = &ctx.module;
    m.ext_inst_imports
        .iter()
        .chain(&m.types_global_values)
        .filter_map(|i| i.result_id)
        .chain(m.functions.iter().flat_map(|f| {
            f.def
                .iter()
                .chain(&f.parameters)
                .chain(
                    f.blocks
                        .iter()
                        .flat_map(|b| b.label.iter().chain(&b.instructions)),
                )
                .filter_map(|i| i.result_id)
                .collect::<Vec<_>>()
        }))
        .collect()
}

fn strip_decorations(ctx: &mut Ctx) -> Result<(), String> {
    // Names and decorations of what earlier passes removed.
    let defined = defined_ids(ctx);
    ctx.module
        .annotations
        .retain(|a| id_at(a, 0).is_none_or(|t| defined.contains(&t)));
    ctx.module
        .debug_names
        .retain(|a| id_at(a, 0).is_none_or(|t| defined.contains(&t)));
    let variables: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable)
        .filter_map(|i| i.result_id)
        .collect();
    // A decoration given twice (passes that mark the same result, such as
    // NoContraction on an operation two lowerings share) is given once:
    // SPIR-V allows most decorations only once per target.
    let mut seen = HashSet::default();
    ctx.module
        .annotations
        .retain(|a| seen.insert((a.class.opcode, a.operands.clone())));
    let mut problem = None;
    ctx.module.annotations.retain(|a| {
        if matches!(
            a.class.opcode,
            Op::DecorationGroup | Op::GroupDecorate | Op::GroupMemberDecorate
        ) {
            problem = Some("decoration groups are not supported yet".to_string());
            return true;
        }
        let d = match a.class.opcode {
            Op::Decorate | Op::DecorateId => a.operands.get(1),
            Op::MemberDecorate => a.operands.get(2),
            _ => None,
        };
        match d {
            Some(Operand::Decoration(
                Decoration::LinkageAttributes
                | Decoration::FuncParamAttr
                | Decoration::Alignment
                | Decoration::AlignmentId
                | Decoration::MaxByteOffset
                | Decoration::MaxByteOffsetId
                | Decoration::Constant
                // Packed structs are laid out as such by the addressing pass.
                | Decoration::CPacked
                // Hints whose scopes Vulkan restricts; dropping them is safe.
                | Decoration::Uniform
                | Decoration::UniformId
                // Permissions to be less precise; honouring none is allowed.
                | Decoration::FPFastMathMode,
            )) => false,
            Some(Operand::Decoration(
                Decoration::Restrict | Decoration::Aliased | Decoration::Volatile,
            )) => id_at(a, 0).is_some_and(|t| variables.contains(&t)),
            Some(Operand::Decoration(
                d @ (Decoration::SaturatedConversion | Decoration::FPRoundingMode),
            )) => {
                problem = Some(format!("the {d:?} decoration is not supported yet"));
                true
            }
            _ => true,
        }
    });
    match problem {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

/// 8- and 16-component vectors live in arrays, whose loads and stores
/// drivers may split into scalar accesses; where the access is aligned to
/// 16 bytes it becomes 4-component accesses instead (one 128-bit access
/// each on GPUs), through a pointer to an array of 4-component vectors.
fn wide_memory_access(ctx: &mut Ctx) {
    use rspirv::spirv::MemoryAccess;
    // PSB pointer types to arrays of 8 or 16 32-bit scalars: (pointer,
    // array, scalar, length).
    let mut candidates: HashMap<Word, (Word, Word, u32)> = HashMap::default();
    for t in &ctx.module.types_global_values {
        if t.class.opcode != Op::TypePointer
            || t.operands.first()
                != Some(&Operand::StorageClass(StorageClass::PhysicalStorageBuffer))
        {
            continue;
        }
        let Some(arr) = id_at(t, 1).and_then(|a| ctx.global(a)) else {
            continue;
        };
        if arr.class.opcode != Op::TypeArray {
            continue;
        }
        let Some(elem) = id_at(arr, 0) else { continue };
        let len =
            id_at(arr, 1)
                .and_then(|l| ctx.global(l))
                .and_then(|c| match c.operands.first() {
                    Some(Operand::LiteralBit32(v)) => Some(*v),
                    _ => None,
                });
        let scalar32 = ctx.global(elem).is_some_and(|e| {
            matches!(e.class.opcode, Op::TypeFloat | Op::TypeInt)
                && e.operands.first() == Some(&Operand::LiteralBit32(32))
        });
        if let (Some(n @ (8 | 16)), true, Some(p), Some(a)) =
            (len, scalar32, t.result_id, arr.result_id)
        {
            candidates.insert(p, (a, elem, n));
        }
    }
    if candidates.is_empty() {
        return;
    }
    let types: HashMap<Word, Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    let aligned16 = |ops: &[Operand], at: usize| -> bool {
        matches!(
            (ops.get(at), ops.get(at + 1)),
            (Some(Operand::MemoryAccess(m)), Some(Operand::LiteralBit32(a)))
                if m.contains(MemoryAccess::ALIGNED) && *a >= 16 && *a % 16 == 0
        )
    };
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for b in functions.iter_mut().flat_map(|f| &mut f.blocks) {
        let mut out = Vec::with_capacity(b.instructions.len());
        for i in std::mem::take(&mut b.instructions) {
            let (ptr, load) = match i.class.opcode {
                Op::Load => (id_at(&i, 0), true),
                Op::Store => (id_at(&i, 0), false),
                _ => (None, false),
            };
            let Some(&(arr, elem, n)) = ptr
                .and_then(|p| types.get(&p))
                .and_then(|t| candidates.get(t))
            else {
                out.push(i);
                continue;
            };
            if !aligned16(&i.operands, if load { 1 } else { 2 }) {
                out.push(i);
                continue;
            }
            let ptr = ptr.expect("checked");
            let v4 = ctx.vector(elem, 4);
            let quads_len = ctx.const_u32(n / 4);
            let quads = ctx.ty(
                Op::TypeArray,
                vec![Operand::IdRef(v4), Operand::IdRef(quads_len)],
            );
            if !ctx.module.annotations.iter().any(|a| {
                id_at(a, 0) == Some(quads)
                    && a.operands.get(1) == Some(&Operand::Decoration(Decoration::ArrayStride))
            }) {
                ctx.decorate(
                    quads,
                    Decoration::ArrayStride,
                    vec![Operand::LiteralBit32(16)],
                );
            }
            let quads_ptr = ctx.pointer(StorageClass::PhysicalStorageBuffer, quads);
            let v4_ptr = ctx.pointer(StorageClass::PhysicalStorageBuffer, v4);
            let as_quads = ctx.fresh();
            out.push(Instruction::new(
                Op::Bitcast,
                Some(quads_ptr),
                Some(as_quads),
                vec![Operand::IdRef(ptr)],
            ));
            let access = [
                Operand::MemoryAccess(MemoryAccess::ALIGNED),
                Operand::LiteralBit32(16),
            ];
            let mut parts = Vec::new();
            for q in 0..n / 4 {
                let qi = ctx.const_u32(q);
                let qp = ctx.fresh();
                out.push(Instruction::new(
                    Op::AccessChain,
                    Some(v4_ptr),
                    Some(qp),
                    vec![Operand::IdRef(as_quads), Operand::IdRef(qi)],
                ));
                if load {
                    let v = ctx.fresh();
                    let mut ops = vec![Operand::IdRef(qp)];
                    ops.extend(access.iter().cloned());
                    out.push(Instruction::new(Op::Load, Some(v4), Some(v), ops));
                    for k in 0..4 {
                        let c = ctx.fresh();
                        out.push(Instruction::new(
                            Op::CompositeExtract,
                            Some(elem),
                            Some(c),
                            vec![Operand::IdRef(v), Operand::LiteralBit32(k)],
                        ));
                        parts.push(Operand::IdRef(c));
                    }
                } else {
                    let value = id_at(&i, 1).expect("a stored value");
                    let comps: Vec<Operand> = (0..4)
                        .map(|k| {
                            let c = ctx.fresh();
                            out.push(Instruction::new(
                                Op::CompositeExtract,
                                Some(elem),
                                Some(c),
                                vec![Operand::IdRef(value), Operand::LiteralBit32(q * 4 + k)],
                            ));
                            Operand::IdRef(c)
                        })
                        .collect();
                    let v = ctx.fresh();
                    out.push(Instruction::new(
                        Op::CompositeConstruct,
                        Some(v4),
                        Some(v),
                        comps,
                    ));
                    let mut ops = vec![Operand::IdRef(qp), Operand::IdRef(v)];
                    ops.extend(access.iter().cloned());
                    out.push(Instruction::new(Op::Store, None, None, ops));
                }
            }
            if load {
                out.push(Instruction::new(
                    Op::CompositeConstruct,
                    Some(arr),
                    i.result_id,
                    parts,
                ));
            }
        }
        b.instructions = out;
    }
    ctx.module.functions = functions;
}

/// `__local` variables have no initial value in OpenCL C; llvm-spirv gives
/// them an undefined initialiser (or a composite of undefined parts), which
/// Vulkan does not allow.
fn local_variables_uninitialised(ctx: &mut Ctx) {
    fn undefined(ctx: &Ctx, id: Word) -> bool {
        match ctx.global(id) {
            Some(i) if i.class.opcode == Op::Undef => true,
            Some(i) if i.class.opcode == Op::ConstantComposite => i
                .operands
                .iter()
                .all(|o| matches!(o, Operand::IdRef(x) if undefined(ctx, *x))),
            _ => false,
        }
    }
    let uninitialised: Vec<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|v| {
            v.class.opcode == Op::Variable
                && v.operands.first() == Some(&Operand::StorageClass(StorageClass::Workgroup))
                && id_at(v, 1).is_some_and(|init| undefined(ctx, init))
        })
        .filter_map(|v| v.result_id)
        .collect();
    for v in &mut ctx.module.types_global_values {
        if v.result_id.is_some_and(|r| uninitialised.contains(&r)) {
            v.operands.truncate(1);
        }
    }
}

/// A null device pointer (a comparison with NULL) cannot be a constant in
/// Vulkan: each function makes it from the address 0 in its entry block.
fn null_device_pointers(ctx: &mut Ctx) {
    let nulls: Vec<(Word, Word)> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|c| c.class.opcode == Op::ConstantNull)
        .filter_map(|c| {
            let ty = c.result_type?;
            let psb = ctx.pointer_parts(ty)?.0 == StorageClass::PhysicalStorageBuffer;
            psb.then_some((c.result_id?, ty))
        })
        .collect();
    if nulls.is_empty() {
        return;
    }
    let u64t = ctx.uint(64);
    let zero = ctx.const_int(u64t, 0);
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        let mut map: HashMap<Word, Word> = HashMap::default();
        let mut made = Vec::new();
        for &(c, ty) in &nulls {
            let id = ctx.fresh();
            map.insert(c, id);
            made.push(Instruction::new(
                Op::ConvertUToPtr,
                Some(ty),
                Some(id),
                vec![Operand::IdRef(zero)],
            ));
        }
        for b in &mut f.blocks {
            for i in &mut b.instructions {
                for o in &mut i.operands {
                    if let Operand::IdRef(x) = o {
                        if let Some(n) = map.get(x) {
                            *x = *n;
                        }
                    }
                }
            }
        }
        if let Some(entry) = f.blocks.first_mut() {
            let at = entry
                .instructions
                .iter()
                .take_while(|i| i.class.opcode == Op::Variable)
                .count();
            entry.instructions.splice(at..at, made);
        }
    }
    ctx.module.functions = functions;
    let gone: HashSet<Word> = nulls.iter().map(|&(c, _)| c).collect();
    ctx.module
        .types_global_values
        .retain(|c| !c.result_id.is_some_and(|r| gone.contains(&r)));
}
