//! Pass 18 (phase 5): Barriers, fences and atomics. OpenCL scopes and
//! memory semantics become ones Vulkan accepts: `CrossDevice` scope is
//! `Device`; sequentially consistent ordering is acquire-release (the
//! strongest Vulkan ordering); `CrossWorkgroupMemory` is `UniformMemory`,
//! which covers device-address memory. The weak compare-exchange is the
//! strong one (Vulkan has no weak form) and `atomic_flag` operations become
//! an exchange or a store of a 32-bit word.
//!
//! Takes the structured kernel after `images` and the device's
//! `DeviceCaps`. Guarantees every scope and memory-semantics operand is one
//! Vulkan accepts; a kernel that orders memory uses the Vulkan memory model
//! where the device has it (its accesses made non-private, available and
//! visible as the operations say); where `fences_halt`, no fence is left
//! and atomics carry no ordering.
//!
//! Under Vulkan's GLSL450 memory model nothing makes a plain store in one
//! work-group reach a plain load in another, fences or not: GPUs keep
//! non-coherent caches per compute unit. So a kernel that orders memory
//! (any barrier, fence or atomic with an acquire or release) is built on
//! the Vulkan memory model where the device has it: its loads and stores
//! of buffers and local memory, and its storage image reads and writes,
//! are non-private; releases make them available and acquires visible, at
//! the scope of the operation.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{ImageOperands, MemoryAccess, Op, StorageClass, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, add_memory_access};
use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

const ACQUIRE: u32 = 0x2;
const RELEASE: u32 = 0x4;
const ACQ_REL: u32 = 0x8;
const SEQ_CST: u32 = 0x10;
const UNIFORM: u32 = 0x40;
const SUBGROUP_MEM: u32 = 0x80;
const WORKGROUP_MEM: u32 = 0x100;
const CROSS_WORKGROUP_MEM: u32 = 0x200;
const IMAGE_MEM: u32 = 0x800;
const MAKE_AVAILABLE: u32 = 0x2000;
const MAKE_VISIBLE: u32 = 0x4000;

/// OpenCL semantics bits as Vulkan semantics bits.
pub fn semantics(cl: u32) -> u32 {
    let mut storage = cl & (UNIFORM | SUBGROUP_MEM | WORKGROUP_MEM | IMAGE_MEM);
    if cl & CROSS_WORKGROUP_MEM != 0 {
        storage |= UNIFORM;
    }
    let order = cl & (ACQUIRE | RELEASE | ACQ_REL | SEQ_CST);
    let order = if order & SEQ_CST != 0 { ACQ_REL } else { order };
    // Ordering needs storage classes to apply to, and storage classes
    // without ordering mean nothing.
    if order == 0 || storage == 0 {
        0
    } else {
        order | storage
    }
}

/// The Vulkan semantics of the `n`th semantics operand of `op`, given as
/// OpenCL's `cl`. An atomic's ordering with no storage class named (how
/// OpenCL C atomics come) applies to global and local memory, as OpenCL's
/// memory model has it. Loads (the failure case of a compare-exchange
/// too) only acquire, stores only release. When `relocated_local`,
/// `__local` data lives in device memory, so what orders local memory
/// orders that too.
fn operation_semantics(op: Op, n: usize, cl: u32, relocated_local: bool) -> u32 {
    let atomic = is_atomic(op);
    let named = CROSS_WORKGROUP_MEM | UNIFORM | SUBGROUP_MEM | WORKGROUP_MEM | IMAGE_MEM;
    let cl = if atomic && cl & named == 0 {
        cl | CROSS_WORKGROUP_MEM | WORKGROUP_MEM
    } else {
        cl
    };
    let mut v = semantics(cl);
    let order = v & (ACQUIRE | RELEASE | ACQ_REL);
    let load = op == Op::AtomicLoad || (op == Op::AtomicCompareExchange && n == 1);
    let narrowed = match op {
        _ if load && order & (ACQUIRE | ACQ_REL) != 0 => ACQUIRE,
        _ if load => 0,
        Op::AtomicStore if order & (RELEASE | ACQ_REL) != 0 => RELEASE,
        Op::AtomicStore => 0,
        _ => order,
    };
    v = if narrowed == 0 {
        0
    } else {
        v & !order | narrowed
    };
    if relocated_local && v & WORKGROUP_MEM != 0 {
        v |= UNIFORM;
    }
    v
}

fn is_atomic(op: Op) -> bool {
    !matches!(op, Op::ControlBarrier | Op::MemoryBarrier)
}

/// OpenCL scope as a Vulkan scope (0 CrossDevice -> 1 Device).
pub fn scope(cl: u32) -> u32 {
    if cl == 0 { 1 } else { cl }
}

/// The positions of (scope, semantics...) operands of an instruction.
fn sync_operands(op: Op) -> Option<(&'static [usize], &'static [usize])> {
    Some(match op {
        Op::ControlBarrier => (&[0, 1], &[2]),
        Op::MemoryBarrier => (&[0], &[1]),
        Op::AtomicCompareExchange | Op::AtomicCompareExchangeWeak => (&[1], &[2, 3]),
        Op::AtomicLoad
        | Op::AtomicStore
        | Op::AtomicExchange
        | Op::AtomicIIncrement
        | Op::AtomicIDecrement
        | Op::AtomicIAdd
        | Op::AtomicISub
        | Op::AtomicSMin
        | Op::AtomicUMin
        | Op::AtomicSMax
        | Op::AtomicUMax
        | Op::AtomicAnd
        | Op::AtomicOr
        | Op::AtomicXor
        | Op::AtomicFAddEXT
        | Op::AtomicFMinEXT
        | Op::AtomicFMaxEXT
        | Op::AtomicFlagTestAndSet
        | Op::AtomicFlagClear => (&[1], &[2]),
        _ => return None,
    })
}

/// `semantics` with the availability and visibility operations of the
/// Vulkan memory model that its ordering implies.
fn with_visibility(semantics: u32) -> u32 {
    let mut v = semantics;
    if semantics & (RELEASE | ACQ_REL) != 0 {
        v |= MAKE_AVAILABLE;
    }
    if semantics & (ACQUIRE | ACQ_REL) != 0 {
        v |= MAKE_VISIBLE;
    }
    v
}

fn u32_constants(ctx: &Ctx) -> HashMap<Word, u32> {
    ctx.module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Constant)
        .filter_map(|i| match i.operands.first() {
            Some(Operand::LiteralBit32(v)) => Some((i.result_id?, *v)),
            _ => None,
        })
        .collect()
}

/// The scope or semantics operand at `at` of a synchronisation instruction.
fn operand_id(i: &Instruction, at: usize) -> Result<Word, String> {
    match i.operands.get(at) {
        Some(Operand::IdRef(id) | Operand::IdScope(id) | Operand::IdMemorySemantics(id)) => Ok(*id),
        _ => Err("malformed synchronisation instruction".into()),
    }
}

/// Maps scopes and semantics to Vulkan's, then moves a kernel that orders
/// memory to the Vulkan memory model where the device has it: see the
/// module's documentation.
///
/// On a device whose fences halt (`DeviceCaps::fences_halt`) nothing may
/// turn into a fence: standalone fences go, and atomics lose their
/// ordering (drivers fence around ordered atomics). Such a device's
/// atomics are sequentially consistent anyway.
pub fn run(ctx: &mut Ctx, caps: &DeviceCaps) -> Result<(), String> {
    float_atomics_as_integers(ctx, caps)?;
    map_to_vulkan(ctx, caps.fences_halt)?;
    if caps.fences_halt {
        for b in ctx
            .module
            .functions
            .iter_mut()
            .flat_map(|f| f.blocks.iter_mut())
        {
            b.instructions
                .retain(|i| i.class.opcode != Op::MemoryBarrier);
        }
    }
    // Cooperative matrices exist only in modules on the Vulkan memory
    // model (SPV_KHR_cooperative_matrix).
    let matrices = crate::compiler::spirv::p1_kernel::matrix::uses_matrices(ctx);
    if caps.vulkan_memory_model && (matrices || orders_memory(ctx)?) {
        add_visibility(ctx)?;
        mark_non_private(ctx);
        ctx.vulkan_memory_model = true;
    }
    Ok(())
}

/// Whether a barrier, fence or atomic of the kernel orders memory.
fn orders_memory(ctx: &Ctx) -> Result<bool, String> {
    let constants = u32_constants(ctx);
    for i in ctx.module.functions.iter().flat_map(|f| f.all_inst_iter()) {
        let Some((_, sems)) = sync_operands(i.class.opcode) else {
            continue;
        };
        for &at in sems {
            let id = operand_id(i, at)?;
            if constants.get(&id).is_some_and(|&v| v != 0) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Releases make prior writes available, acquires make writes visible.
fn add_visibility(ctx: &mut Ctx) -> Result<(), String> {
    let constants = u32_constants(ctx);
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for i in functions
        .iter_mut()
        .flat_map(|f| f.blocks.iter_mut())
        .flat_map(|b| b.instructions.iter_mut())
    {
        let Some((_, sems)) = sync_operands(i.class.opcode) else {
            continue;
        };
        for &at in sems {
            let id = operand_id(i, at)?;
            let v = *constants
                .get(&id)
                .ok_or("scopes and semantics must be constants")?;
            let new = ctx.const_u32(with_visibility(v));
            i.operands[at] = Operand::IdMemorySemantics(new);
        }
    }
    ctx.module.functions = functions;
    Ok(())
}

/// Loads and stores of buffers and local memory, and storage image reads
/// and writes, take part in availability and visibility.
fn mark_non_private(ctx: &mut Ctx) {
    let shared: crate::compiler::spirv::common::HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| {
            t.class.opcode == Op::TypePointer
                && matches!(
                    t.operands.first(),
                    Some(Operand::StorageClass(
                        StorageClass::StorageBuffer
                            | StorageClass::PhysicalStorageBuffer
                            | StorageClass::Workgroup
                    ))
                )
        })
        .filter_map(|t| t.result_id)
        .collect();
    let types = ctx.value_types();
    let through_shared = |id: &Operand| match id {
        Operand::IdRef(p) => types.get(p).is_some_and(|t| shared.contains(t)),
        _ => false,
    };
    for i in ctx
        .module
        .functions
        .iter_mut()
        .flat_map(|f| f.blocks.iter_mut())
        .flat_map(|b| b.instructions.iter_mut())
    {
        match i.class.opcode {
            Op::Load | Op::Store | Op::CooperativeMatrixLoadKHR | Op::CooperativeMatrixStoreKHR
                if through_shared(&i.operands[0]) =>
            {
                add_memory_access(i, MemoryAccess::NON_PRIVATE_POINTER);
            }
            Op::ImageRead | Op::ImageWrite => {
                let at = if i.class.opcode == Op::ImageRead {
                    2
                } else {
                    3
                };
                match i.operands.get_mut(at) {
                    Some(Operand::ImageOperands(m)) => *m |= ImageOperands::NON_PRIVATE_TEXEL,
                    _ => i
                        .operands
                        .push(Operand::ImageOperands(ImageOperands::NON_PRIVATE_TEXEL)),
                }
            }
            _ => {}
        }
    }
}

/// OpenCL scopes and semantics as Vulkan's; weak compare-exchanges and
/// flags as the operations Vulkan has.
fn map_to_vulkan(ctx: &mut Ctx, unordered_atomics: bool) -> Result<(), String> {
    let constants = u32_constants(ctx);
    let types = ctx.value_types();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            lower_flags(ctx, &mut b.instructions);
            for i in &mut b.instructions {
                if i.class.opcode == Op::AtomicCompareExchangeWeak {
                    *i = Instruction::new(
                        Op::AtomicCompareExchange,
                        i.result_type,
                        i.result_id,
                        std::mem::take(&mut i.operands),
                    );
                }
                let Some((scopes, sems)) = sync_operands(i.class.opcode) else {
                    continue;
                };
                let op = i.class.opcode;
                let relocated = ctx.relocated_local;
                let widen = is_atomic(op) && relaxed_in_device_memory(ctx, &constants, &types, i);
                let scope_ats = scopes.iter().map(|&at| (at, None));
                for (at, which) in
                    scope_ats.chain(sems.iter().enumerate().map(|(n, &at)| (at, Some(n))))
                {
                    let id = operand_id(i, at)?;
                    let v = *constants
                        .get(&id)
                        .ok_or("scopes and semantics must be constants")?;
                    let new = ctx.const_u32(match which {
                        None if widen && v >= 2 => 1,
                        None => scope(v),
                        Some(_) if unordered_atomics && is_atomic(op) => 0,
                        Some(n) => operation_semantics(op, n, v, relocated),
                    });
                    i.operands[at] = match i.operands[at] {
                        Operand::IdScope(_) => Operand::IdScope(new),
                        Operand::IdMemorySemantics(_) => Operand::IdMemorySemantics(new),
                        _ => Operand::IdRef(new),
                    };
                }
            }
        }
    }
    ctx.module.functions = functions;
    Ok(())
}

/// Whether `i` is a relaxed atomic on device memory. The front end gives
/// OpenCL 1.x atomics (`atomic_add`, `atom_inc`...) work-group scope, yet
/// on `__global` data they must be atomic across the whole NDRange: such
/// atomics get device scope (for a relaxed atomic only the scope of
/// atomicity changes, which costs nothing where atomics on device memory
/// are done in one place for the whole device).
fn relaxed_in_device_memory(
    ctx: &Ctx,
    constants: &HashMap<Word, u32>,
    types: &HashMap<Word, Word>,
    i: &Instruction,
) -> bool {
    let order = ACQUIRE | RELEASE | ACQ_REL | SEQ_CST;
    let relaxed = sync_operands(i.class.opcode).is_some_and(|(_, sems)| {
        sems.iter().all(|&at| {
            operand_id(i, at)
                .ok()
                .and_then(|id| constants.get(&id))
                .is_some_and(|v| v & order == 0)
        })
    });
    let pointer_class = match i.operands.first() {
        Some(Operand::IdRef(p)) => types
            .get(p)
            .and_then(|t| ctx.pointer_parts(*t))
            .map(|(class, _)| class),
        _ => None,
    };
    relaxed
        && matches!(
            pointer_class,
            Some(StorageClass::PhysicalStorageBuffer | StorageClass::StorageBuffer)
        )
}

/// `atomic_flag_test_and_set` is an exchange of 1 compared with 0, and
/// `atomic_flag_clear` a store of 0; the flag is a 32-bit word.
/// Atomic exchange, load and store of floats. Vulkan allows them only
/// with VK_EXT_shader_atomic_float's features; on device memory they are
/// the same operations on the bits, through an integer pointer, which
/// every device has. In local memory, whose logical pointers cannot be
/// cast, they stay float and need the device's shared float atomics.
fn float_atomics_as_integers(ctx: &mut Ctx, caps: &DeviceCaps) -> Result<(), String> {
    let types = ctx.value_types();
    let float_width = |ctx: &Ctx, ty: Word| {
        let t = ctx.global(ty)?;
        match (t.class.opcode, t.operands.first()) {
            (Op::TypeFloat, Some(Operand::LiteralBit32(w))) => Some(*w),
            _ => None,
        }
    };
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for b in functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
        let mut out = Vec::with_capacity(b.instructions.len());
        for mut i in std::mem::take(&mut b.instructions) {
            let op = i.class.opcode;
            if !matches!(op, Op::AtomicLoad | Op::AtomicStore | Op::AtomicExchange) {
                out.push(i);
                continue;
            }
            let pointer = match i.operands.first() {
                Some(Operand::IdRef(p)) => *p,
                _ => return Err("malformed atomic instruction".into()),
            };
            let Some((class, pointee)) = types.get(&pointer).and_then(|&t| ctx.pointer_parts(t))
            else {
                return Err("an atomic operand that is not a pointer".into());
            };
            let Some(width) = float_width(ctx, pointee) else {
                out.push(i);
                continue;
            };
            if class != StorageClass::PhysicalStorageBuffer {
                let has = match width {
                    32 => caps.shared_float_atomics[0],
                    64 => caps.shared_float_atomics[1],
                    _ => false,
                };
                if !has {
                    return Err(format!(
                        "the device lacks atomics on {width}-bit floats in local memory (shaderSharedFloat{width}Atomics)"
                    ));
                }
                out.push(i);
                continue;
            }
            let int = ctx.uint(width);
            let int_pointer = ctx.pointer(class, int);
            let cast = ctx.fresh();
            out.push(Instruction::new(
                Op::Bitcast,
                Some(int_pointer),
                Some(cast),
                vec![Operand::IdRef(pointer)],
            ));
            i.operands[0] = Operand::IdRef(cast);
            // The value stored or exchanged: the last operand.
            if op != Op::AtomicLoad {
                let Some(Operand::IdRef(value)) = i.operands.last().cloned() else {
                    return Err("malformed atomic instruction".into());
                };
                let bits = ctx.fresh();
                out.push(Instruction::new(
                    Op::Bitcast,
                    Some(int),
                    Some(bits),
                    vec![Operand::IdRef(value)],
                ));
                *i.operands.last_mut().expect("an operand") = Operand::IdRef(bits);
            }
            match (i.result_type, i.result_id) {
                (Some(float), Some(result)) => {
                    let old = ctx.fresh();
                    i.result_type = Some(int);
                    i.result_id = Some(old);
                    out.push(i);
                    out.push(Instruction::new(
                        Op::Bitcast,
                        Some(float),
                        Some(result),
                        vec![Operand::IdRef(old)],
                    ));
                }
                _ => out.push(i),
            }
        }
        b.instructions = out;
    }
    ctx.module.functions = functions;
    Ok(())
}

fn lower_flags(ctx: &mut Ctx, instructions: &mut Vec<Instruction>) {
    if !instructions.iter().any(|i| {
        matches!(
            i.class.opcode,
            Op::AtomicFlagTestAndSet | Op::AtomicFlagClear
        )
    }) {
        return;
    }
    let u32t = ctx.uint(32);
    let (zero, one) = (ctx.const_u32(0), ctx.const_u32(1));
    let mut out = Vec::with_capacity(instructions.len() + 1);
    for i in std::mem::take(instructions) {
        match i.class.opcode {
            Op::AtomicFlagTestAndSet => {
                let old = ctx.fresh();
                let mut ops = i.operands.clone();
                ops.push(Operand::IdRef(one));
                out.push(Instruction::new(
                    Op::AtomicExchange,
                    Some(u32t),
                    Some(old),
                    ops,
                ));
                out.push(Instruction::new(
                    Op::INotEqual,
                    i.result_type,
                    i.result_id,
                    vec![Operand::IdRef(old), Operand::IdRef(zero)],
                ));
            }
            Op::AtomicFlagClear => {
                let mut ops = i.operands.clone();
                ops.push(Operand::IdRef(zero));
                out.push(Instruction::new(Op::AtomicStore, None, None, ops));
            }
            _ => out.push(i),
        }
    }
    *instructions = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_order_relocated_local_data() {
        let mut ctx = crate::compiler::spirv::common::ctx::assemble(
            "
            OpCapability Addresses
            OpCapability Kernel
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %k \"k\"
            %void = OpTypeVoid
            %uint = OpTypeInt 32 0
            %workgroup = OpConstant %uint 2
            %local_fence = OpConstant %uint 272
            %fn = OpTypeFunction %void
            %k = OpFunction %void None %fn
            %b = OpLabel
            OpControlBarrier %workgroup %workgroup %local_fence
            OpReturn
            OpFunctionEnd",
        );
        ctx.relocated_local = true;
        run(&mut ctx, &DeviceCaps::default()).unwrap();
        let barrier = ctx.module.functions[0]
            .all_inst_iter()
            .find(|i| i.class.opcode == Op::ControlBarrier)
            .unwrap();
        let Some(Operand::IdMemorySemantics(s) | Operand::IdRef(s)) = barrier.operands.get(2)
        else {
            panic!("no semantics");
        };
        let value = ctx.global(*s).unwrap().operands[0].clone();
        assert_eq!(
            value,
            Operand::LiteralBit32(ACQ_REL | WORKGROUP_MEM | UNIFORM)
        );
    }

    #[test]
    fn opencl_barriers_map_to_vulkan() {
        // barrier(CLK_LOCAL_MEM_FENCE): SequentiallyConsistent | WorkgroupMemory.
        assert_eq!(semantics(0x110), ACQ_REL | WORKGROUP_MEM);
        // barrier(CLK_GLOBAL_MEM_FENCE).
        assert_eq!(semantics(0x210), ACQ_REL | UNIFORM);
        // Relaxed atomics.
        assert_eq!(semantics(0), 0);
        assert_eq!(semantics(0x200), 0);
        assert_eq!(scope(0), 1);
        assert_eq!(scope(2), 2);
    }
    /// A kernel with a device-scope acquire-release add (as OpenCL C gives
    /// it: no storage class named) and a plain load and store of a buffer.
    const ORDERED_ADD: &str = "
            OpCapability Shader
            OpCapability Int64
            OpCapability PhysicalStorageBufferAddresses
            OpMemoryModel PhysicalStorageBuffer64 GLSL450
            OpEntryPoint GLCompute %k \"main\"
            %void = OpTypeVoid
            %uint = OpTypeInt 32 0
            %ulong = OpTypeInt 64 0
            %ptr = OpTypePointer PhysicalStorageBuffer %uint
            %device = OpConstant %uint 0
            %acq_rel = OpConstant %uint 8
            %one = OpConstant %uint 1
            %address = OpConstant %ulong 4096
            %fn = OpTypeFunction %void
            %k = OpFunction %void None %fn
            %b = OpLabel
            %p = OpConvertUToPtr %ptr %address
            %old = OpAtomicIAdd %uint %p %device %acq_rel %one
            %v = OpLoad %uint %p Aligned 4
            OpStore %p %v Aligned 4
            OpReturn
            OpFunctionEnd";

    const FLOAT_EXCHANGES: &str = "
            OpCapability Shader
            OpCapability Int64
            OpCapability PhysicalStorageBufferAddresses
            OpMemoryModel PhysicalStorageBuffer64 GLSL450
            OpEntryPoint GLCompute %k \"main\" %shared
            OpExecutionMode %k LocalSize 1 1 1
            %void = OpTypeVoid
            %uint = OpTypeInt 32 0
            %ulong = OpTypeInt 64 0
            %float = OpTypeFloat 32
            %ptr = OpTypePointer PhysicalStorageBuffer %float
            %wptr = OpTypePointer Workgroup %float
            %shared = OpVariable %wptr Workgroup
            %device = OpConstant %uint 1
            %relaxed = OpConstant %uint 0
            %half = OpConstant %float 0.5
            %address = OpConstant %ulong 4096
            %fn = OpTypeFunction %void
            %k = OpFunction %void None %fn
            %b = OpLabel
            %p = OpConvertUToPtr %ptr %address
            %old = OpAtomicExchange %float %p %device %relaxed %half
            %now = OpAtomicLoad %float %p %device %relaxed
            OpAtomicStore %p %device %relaxed %now
            %local = OpAtomicExchange %float %shared %device %relaxed %old
            OpReturn
            OpFunctionEnd";

    #[test]
    fn float_atomics_on_device_memory_work_on_the_bits() {
        let mut ctx = crate::compiler::spirv::common::ctx::assemble_for(FLOAT_EXCHANGES, "spv1.5");
        let caps = DeviceCaps {
            shared_float_atomics: [true, false],
            ..Default::default()
        };
        run(&mut ctx, &caps).unwrap();
        let types = ctx.value_types();
        let float = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
        let atomics: Vec<Option<Word>> = ctx.module.functions[0]
            .all_inst_iter()
            .filter(|i| {
                matches!(
                    i.class.opcode,
                    Op::AtomicExchange | Op::AtomicLoad | Op::AtomicStore
                )
            })
            .map(|i| match &i.operands[0] {
                Operand::IdRef(p) => ctx.pointer_parts(types[p]).map(|(_, t)| t),
                _ => None,
            })
            .collect();
        // Three on device memory through an integer pointer, the one on
        // local memory unchanged.
        let uint = ctx.uint(32);
        assert_eq!(atomics, [Some(uint), Some(uint), Some(uint), Some(float)]);
        let words = rspirv::binary::Assemble::assemble(&ctx.module);
        crate::compiler::link::validate_vulkan(&words).unwrap();
    }

    #[test]
    fn float_atomics_on_local_memory_need_the_device_feature() {
        let mut ctx = crate::compiler::spirv::common::ctx::assemble_for(FLOAT_EXCHANGES, "spv1.5");
        let e = run(&mut ctx, &DeviceCaps::default()).unwrap_err();
        assert!(e.contains("shaderSharedFloat32Atomics"), "{e}");
    }

    fn semantics_of(ctx: &Ctx, op: Op) -> u32 {
        let i = ctx.module.functions[0]
            .all_inst_iter()
            .find(|i| i.class.opcode == op)
            .unwrap();
        let id = operand_id(i, 2).unwrap();
        u32_constants(ctx)[&id]
    }

    #[test]
    fn ordered_kernels_move_to_the_vulkan_memory_model() {
        let mut ctx = crate::compiler::spirv::common::ctx::assemble_for(ORDERED_ADD, "spv1.5");
        let caps = DeviceCaps {
            vulkan_memory_model: true,
            ..Default::default()
        };
        run(&mut ctx, &caps).unwrap();
        assert!(ctx.vulkan_memory_model);
        assert_eq!(
            semantics_of(&ctx, Op::AtomicIAdd),
            ACQ_REL | UNIFORM | WORKGROUP_MEM | MAKE_AVAILABLE | MAKE_VISIBLE
        );
        let code: Vec<_> = ctx.module.functions[0].all_inst_iter().collect();
        let load = code.iter().find(|i| i.class.opcode == Op::Load).unwrap();
        let store = code.iter().find(|i| i.class.opcode == Op::Store).unwrap();
        let access =
            Operand::MemoryAccess(MemoryAccess::ALIGNED | MemoryAccess::NON_PRIVATE_POINTER);
        assert_eq!(load.operands[1], access);
        assert_eq!(store.operands[2], access);
    }

    #[test]
    fn atomics_lose_their_order_where_fences_halt() {
        let mut ctx = crate::compiler::spirv::common::ctx::assemble_for(ORDERED_ADD, "spv1.5");
        let caps = DeviceCaps {
            vulkan_memory_model: true,
            fences_halt: true,
            ..Default::default()
        };
        run(&mut ctx, &caps).unwrap();
        assert_eq!(semantics_of(&ctx, Op::AtomicIAdd), 0);
        // Nothing orders memory any more: the kernel keeps GLSL450.
        assert!(!ctx.vulkan_memory_model);
    }

    #[test]
    fn atomic_loads_acquire_and_stores_release() {
        let seq_cst = 0x10;
        assert_eq!(
            operation_semantics(Op::AtomicLoad, 0, seq_cst, false),
            ACQUIRE | UNIFORM | WORKGROUP_MEM
        );
        assert_eq!(
            operation_semantics(Op::AtomicStore, 0, seq_cst, false),
            RELEASE | UNIFORM | WORKGROUP_MEM
        );
        // The failure case of a compare-exchange is a load.
        assert_eq!(
            operation_semantics(Op::AtomicCompareExchange, 1, ACQ_REL, false),
            ACQUIRE | UNIFORM | WORKGROUP_MEM
        );
        assert_eq!(operation_semantics(Op::AtomicIAdd, 0, 0, false), 0);
        // A barrier with no memory named orders nothing.
        assert_eq!(
            operation_semantics(Op::ControlBarrier, 0, seq_cst, false),
            0
        );
    }
    #[test]
    fn relaxed_atomics_on_device_memory_get_device_scope() {
        // An OpenCL 1.x atomic_add: work-group scope, relaxed.
        let text = ORDERED_ADD
            .replace(
                "%device = OpConstant %uint 0",
                "%device = OpConstant %uint 2",
            )
            .replace(
                "%acq_rel = OpConstant %uint 8",
                "%acq_rel = OpConstant %uint 0",
            );
        let mut ctx = crate::compiler::spirv::common::ctx::assemble_for(&text, "spv1.5");
        run(&mut ctx, &DeviceCaps::default()).unwrap();
        let add = ctx.module.functions[0]
            .all_inst_iter()
            .find(|i| i.class.opcode == Op::AtomicIAdd)
            .unwrap();
        let scope = operand_id(add, 1).unwrap();
        assert_eq!(u32_constants(&ctx)[&scope], 1);
    }
}
