//! Pass 8: barriers, fences and atomics. OpenCL scopes and memory
//! semantics become ones Vulkan accepts: `CrossDevice` scope is `Device`;
//! sequentially consistent ordering is acquire-release (the strongest
//! Vulkan ordering); `CrossWorkgroupMemory` is `UniformMemory`, which
//! covers device-address memory. The weak compare-exchange is the strong
//! one (Vulkan has no weak form) and `atomic_flag` operations become an
//! exchange or a store of a 32-bit word.

use std::collections::HashMap;

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Op, Word};

use crate::compiler::spirv::ctx::Ctx;

const ACQUIRE: u32 = 0x2;
const RELEASE: u32 = 0x4;
const ACQ_REL: u32 = 0x8;
const SEQ_CST: u32 = 0x10;
const UNIFORM: u32 = 0x40;
const SUBGROUP_MEM: u32 = 0x80;
const WORKGROUP_MEM: u32 = 0x100;
const CROSS_WORKGROUP_MEM: u32 = 0x200;
const IMAGE_MEM: u32 = 0x800;

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

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    let constants: HashMap<Word, u32> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Constant)
        .filter_map(|i| match i.operands.first() {
            Some(Operand::LiteralBit32(v)) => Some((i.result_id?, *v)),
            _ => None,
        })
        .collect();
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
                // Relocated __local data lives in device memory: what
                // orders local memory orders that too.
                let sem: fn(u32) -> u32 = if ctx.relocated_local {
                    |cl| {
                        let v = semantics(cl);
                        if v & WORKGROUP_MEM != 0 {
                            v | UNIFORM
                        } else {
                            v
                        }
                    }
                } else {
                    semantics
                };
                for (&at, map) in scopes
                    .iter()
                    .map(|a| (a, scope as fn(u32) -> u32))
                    .chain(sems.iter().map(|a| (a, sem)))
                {
                    let id = match i.operands.get(at) {
                        Some(
                            Operand::IdRef(id)
                            | Operand::IdScope(id)
                            | Operand::IdMemorySemantics(id),
                        ) => *id,
                        _ => return Err("malformed synchronisation instruction".into()),
                    };
                    let v = *constants
                        .get(&id)
                        .ok_or("scopes and semantics must be constants")?;
                    let new = ctx.const_u32(map(v));
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

/// `atomic_flag_test_and_set` is an exchange of 1 compared with 0, and
/// `atomic_flag_clear` a store of 0; the flag is a 32-bit word.
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
        let mut ctx = crate::compiler::spirv::ctx::assemble(
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
        run(&mut ctx).unwrap();
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
}
