//! Pass 10: sub-groups. OpenCL's sub-group built-in variables become
//! Vulkan's (SubgroupId and SubgroupLocalInvocationId are the same variables; the maximum size is Vulkan's SubgroupSize, or the enqueued work-group's size when that is smaller), with the
//! ones Vulkan lacks computed: the size of this sub-group (the last one of
//! a work-group may be smaller), the number of sub-groups (computed too, as
//! some drivers round it down when the last sub-group is partial) and the
//! number of sub-groups of an enqueued (uniform) work-group. Sub-groups are taken to be filled in
//! local-index order, SubgroupSize invocations each
//! (kernels with sub-groups run as 1-D Vulkan work-groups, so drivers
//! that lay sub-groups out along x give exactly that). Collective operations with Subgroup scope
//! (OpGroupAll, OpGroupAny, OpGroupBroadcast, OpGroupIAdd, ...) become
//! their `OpGroupNonUniform*` forms; those with any other scope are
//! refused by name.

use std::collections::HashMap;

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{BuiltIn, Capability, Decoration, Op, StorageClass, Word};

use crate::compiler::spirv::builtins::{flatten_workgroup, workgroup_size};
use crate::compiler::spirv::ctx::{Ctx, id_at};
use crate::compiler::spirv::interface::Block;

/// Vulkan's SubgroupScope.
const SUBGROUP: u32 = 3;

fn builtin_of(ctx: &Ctx, var: Word) -> Option<BuiltIn> {
    ctx.module.annotations.iter().find_map(|a| {
        if a.class.opcode != Op::Decorate || id_at(a, 0) != Some(var) {
            return None;
        }
        match a.operands.get(1..3) {
            Some(
                [
                    Operand::Decoration(Decoration::BuiltIn),
                    Operand::BuiltIn(b),
                ],
            ) => Some(*b),
            _ => None,
        }
    })
}

/// The input variable decorated with `b`, made if there is none.
fn input(ctx: &mut Ctx, b: BuiltIn) -> Word {
    let found = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable
                && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Input))
        })
        .filter_map(|i| i.result_id)
        .collect::<Vec<_>>()
        .into_iter()
        .find(|&v| builtin_of(ctx, v) == Some(b));
    if let Some(v) = found {
        return v;
    }
    let u32t = ctx.uint(32);
    let p = ctx.pointer(StorageClass::Input, u32t);
    let v = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(p),
        Some(v),
        vec![Operand::StorageClass(StorageClass::Input)],
    ));
    ctx.decorate(v, Decoration::BuiltIn, vec![Operand::BuiltIn(b)]);
    for ep in &mut ctx.module.entry_points {
        ep.operands.push(Operand::IdRef(v));
    }
    v
}

fn op(ctx: &mut Ctx, code: &mut Vec<Instruction>, o: Op, ty: Word, args: &[Word]) -> Word {
    let r = ctx.fresh();
    code.push(Instruction::new(
        o,
        Some(ty),
        Some(r),
        args.iter().map(|&a| Operand::IdRef(a)).collect(),
    ));
    r
}

fn extract(ctx: &mut Ctx, code: &mut Vec<Instruction>, ty: Word, v: Word, k: u32) -> Word {
    let r = ctx.fresh();
    code.push(Instruction::new(
        Op::CompositeExtract,
        Some(ty),
        Some(r),
        vec![Operand::IdRef(v), Operand::LiteralBit32(k)],
    ));
    r
}

/// The product of the three components of a size vector.
fn linear(ctx: &mut Ctx, code: &mut Vec<Instruction>, v: Word) -> Word {
    let u32t = ctx.uint(32);
    let x = extract(ctx, code, u32t, v, 0);
    let y = extract(ctx, code, u32t, v, 1);
    let z = extract(ctx, code, u32t, v, 2);
    let t = op(ctx, code, Op::IMul, u32t, &[x, y]);
    op(ctx, code, Op::IMul, u32t, &[t, z])
}

/// ceil(n / d) for d > 0, without overflow.
fn ceil_div(ctx: &mut Ctx, code: &mut Vec<Instruction>, n: Word, d: Word) -> Word {
    let u32t = ctx.uint(32);
    let one = ctx.const_u32(1);
    let t = op(ctx, code, Op::ISub, u32t, &[n, one]);
    let t = op(ctx, code, Op::UDiv, u32t, &[t, d]);
    op(ctx, code, Op::IAdd, u32t, &[t, one])
}

/// The non-uniform form of a group operation, if it has one.
fn non_uniform(o: Op) -> Option<Op> {
    Some(match o {
        Op::GroupAll => Op::GroupNonUniformAll,
        Op::GroupAny => Op::GroupNonUniformAny,
        Op::GroupBroadcast => Op::GroupNonUniformBroadcast,
        Op::GroupIAdd => Op::GroupNonUniformIAdd,
        Op::GroupFAdd => Op::GroupNonUniformFAdd,
        Op::GroupSMin => Op::GroupNonUniformSMin,
        Op::GroupUMin => Op::GroupNonUniformUMin,
        Op::GroupFMin => Op::GroupNonUniformFMin,
        Op::GroupSMax => Op::GroupNonUniformSMax,
        Op::GroupUMax => Op::GroupNonUniformUMax,
        Op::GroupFMax => Op::GroupNonUniformFMax,
        _ => return None,
    })
}

/// The capability a non-uniform group operation needs.
pub fn capability_of(o: Op) -> Option<Capability> {
    Some(match o {
        Op::GroupNonUniformElect => Capability::GroupNonUniform,
        Op::GroupNonUniformAll | Op::GroupNonUniformAny | Op::GroupNonUniformAllEqual => {
            Capability::GroupNonUniformVote
        }
        Op::GroupNonUniformBroadcast
        | Op::GroupNonUniformBroadcastFirst
        | Op::GroupNonUniformBallot
        | Op::GroupNonUniformInverseBallot
        | Op::GroupNonUniformBallotBitExtract
        | Op::GroupNonUniformBallotBitCount
        | Op::GroupNonUniformBallotFindLSB
        | Op::GroupNonUniformBallotFindMSB => Capability::GroupNonUniformBallot,
        Op::GroupNonUniformShuffle | Op::GroupNonUniformShuffleXor => {
            Capability::GroupNonUniformShuffle
        }
        Op::GroupNonUniformShuffleUp | Op::GroupNonUniformShuffleDown => {
            Capability::GroupNonUniformShuffleRelative
        }
        Op::GroupNonUniformIAdd
        | Op::GroupNonUniformFAdd
        | Op::GroupNonUniformIMul
        | Op::GroupNonUniformFMul
        | Op::GroupNonUniformSMin
        | Op::GroupNonUniformUMin
        | Op::GroupNonUniformFMin
        | Op::GroupNonUniformSMax
        | Op::GroupNonUniformUMax
        | Op::GroupNonUniformFMax
        | Op::GroupNonUniformBitwiseAnd
        | Op::GroupNonUniformBitwiseOr
        | Op::GroupNonUniformBitwiseXor
        | Op::GroupNonUniformLogicalAnd
        | Op::GroupNonUniformLogicalOr
        | Op::GroupNonUniformLogicalXor => Capability::GroupNonUniformArithmetic,
        _ => return None,
    })
}

/// The VkSubgroupFeatureFlags bit a capability needs.
pub fn feature_bit(c: Capability) -> u32 {
    match c {
        Capability::GroupNonUniform => 0x1,
        Capability::GroupNonUniformVote => 0x2,
        Capability::GroupNonUniformArithmetic => 0x4,
        Capability::GroupNonUniformBallot => 0x8,
        Capability::GroupNonUniformShuffle => 0x10,
        Capability::GroupNonUniformShuffleRelative => 0x20,
        Capability::GroupNonUniformClustered => 0x40,
        _ => 0,
    }
}

/// Returns whether the kernel uses sub-groups: then it runs as 1-D Vulkan
/// work-groups (see [`flatten_workgroup`]), so that its sub-groups follow
/// the local linear id.
pub fn run(ctx: &mut Ctx, block: &Block) -> Result<bool, String> {
    let uses_subgroups = ctx.module.annotations.iter().any(|a| {
        matches!(
            a.operands.get(2),
            Some(Operand::BuiltIn(
                BuiltIn::SubgroupSize
                    | BuiltIn::SubgroupMaxSize
                    | BuiltIn::NumSubgroups
                    | BuiltIn::NumEnqueuedSubgroups
                    | BuiltIn::SubgroupId
                    | BuiltIn::SubgroupLocalInvocationId
            ))
        )
    }) || ctx
        .module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
        .any(|i| non_uniform(i.class.opcode).is_some() || capability_of(i.class.opcode).is_some());
    let vars: Vec<(Word, BuiltIn)> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable
                && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Input))
        })
        .filter_map(|i| i.result_id)
        .collect::<Vec<_>>()
        .into_iter()
        .filter_map(|v| builtin_of(ctx, v).map(|b| (v, b)))
        .filter(|(_, b)| {
            matches!(
                b,
                BuiltIn::SubgroupSize
                    | BuiltIn::SubgroupMaxSize
                    | BuiltIn::NumSubgroups
                    | BuiltIn::NumEnqueuedSubgroups
            )
        })
        .collect();
    let u32t = ctx.uint(32);
    let replaced: HashMap<Word, BuiltIn> = vars.iter().copied().collect();
    // Vulkan's SubgroupSize is the sub-group's width: OpenCL's maximum.
    // A variable of OpenCL's SubgroupSize keeps its decoration and is read
    // as that width; the others go.
    let width = if replaced.is_empty() {
        None
    } else {
        Some(input(ctx, BuiltIn::SubgroupSize))
    };
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
    let pc_u32 = ctx.pointer(StorageClass::PushConstant, u32t);
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let o = i.class.opcode;
                if let Some(nu) = non_uniform(o) {
                    let scope = match i.operands.first() {
                        Some(Operand::IdScope(s) | Operand::IdRef(s)) => constants.get(s).copied(),
                        _ => None,
                    };
                    if scope != Some(SUBGROUP) {
                        return Err(format!(
                            "{o:?} with scope {scope:?} is not supported yet (only sub-group collectives are)"
                        ));
                    }
                    out.push(Instruction::new(
                        nu,
                        i.result_type,
                        i.result_id,
                        i.operands.clone(),
                    ));
                    continue;
                }
                let src = (o == Op::Load).then(|| id_at(&i, 0)).flatten();
                let Some(kind) = src.and_then(|s| replaced.get(&s).copied()) else {
                    out.push(i);
                    continue;
                };
                let rty = i.result_type.ok_or("load without type")?;
                let rid = i.result_id.ok_or("load without id")?;
                let width = width.ok_or("no sub-group width")?;
                let mut code = Vec::new();
                let w = op(ctx, &mut code, Op::Load, u32t, &[width]);
                let value = match kind {
                    BuiltIn::NumSubgroups => {
                        // Computed, not read: some drivers round Vulkan's
                        // NumSubgroups down when the last one is partial.
                        let size = workgroup_size(ctx);
                        let l = linear(ctx, &mut code, size);
                        ceil_div(ctx, &mut code, l, w)
                    }
                    BuiltIn::SubgroupSize => {
                        // min(width, local linear size - id * width)
                        let size = workgroup_size(ctx);
                        let l = linear(ctx, &mut code, size);
                        let idv = input(ctx, BuiltIn::SubgroupId);
                        let id = op(ctx, &mut code, Op::Load, u32t, &[idv]);
                        let start = op(ctx, &mut code, Op::IMul, u32t, &[id, w]);
                        let left = op(ctx, &mut code, Op::ISub, u32t, &[l, start]);
                        let bool_t = ctx.ty(Op::TypeBool, vec![]);
                        let less = op(ctx, &mut code, Op::ULessThan, bool_t, &[left, w]);
                        op(ctx, &mut code, Op::Select, u32t, &[less, left, w])
                    }
                    _ => {
                        // The enqueued work-group's sub-groups.
                        let c: Vec<Word> = (0..3)
                            .map(|k| {
                                let idx = ctx.const_u32(block.enqueued_local_size + k);
                                let ptr =
                                    op(ctx, &mut code, Op::AccessChain, pc_u32, &[block.var, idx]);
                                op(ctx, &mut code, Op::Load, u32t, &[ptr])
                            })
                            .collect();
                        let t = op(ctx, &mut code, Op::IMul, u32t, &[c[0], c[1]]);
                        let l = op(ctx, &mut code, Op::IMul, u32t, &[t, c[2]]);
                        if kind == BuiltIn::SubgroupMaxSize {
                            // No larger than the enqueued work-group.
                            let bool_t = ctx.ty(Op::TypeBool, vec![]);
                            let less = op(ctx, &mut code, Op::ULessThan, bool_t, &[l, w]);
                            op(ctx, &mut code, Op::Select, u32t, &[less, l, w])
                        } else {
                            ceil_div(ctx, &mut code, l, w)
                        }
                    }
                };
                code.push(Instruction::new(
                    if rty == u32t {
                        Op::CopyObject
                    } else {
                        Op::UConvert
                    },
                    Some(rty),
                    Some(rid),
                    vec![Operand::IdRef(value)],
                ));
                out.extend(code);
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    // The variables replaced by computations are gone, except the one that
    // now holds Vulkan's width.
    let gone: Vec<Word> = replaced
        .keys()
        .copied()
        .filter(|&v| Some(v) != width)
        .collect();
    ctx.module
        .types_global_values
        .retain(|i| !i.result_id.is_some_and(|r| gone.contains(&r)));
    ctx.module
        .annotations
        .retain(|a| !id_at(a, 0).is_some_and(|t| gone.contains(&t)));
    ctx.module
        .debug_names
        .retain(|a| !id_at(a, 0).is_some_and(|t| gone.contains(&t)));
    for ep in &mut ctx.module.entry_points {
        ep.operands
            .retain(|o| !matches!(o, Operand::IdRef(t) if gone.contains(t)));
    }
    if uses_subgroups {
        flatten_workgroup(ctx);
    }
    Ok(uses_subgroups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::ctx::assemble;

    #[test]
    fn subgroup_reductions_become_non_uniform() {
        let mut ctx = assemble(
            r#"
            OpCapability Kernel
            OpCapability Groups
            OpCapability Addresses
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %f "k"
            %uint = OpTypeInt 32 0
            %void = OpTypeVoid
            %fn = OpTypeFunction %void
            %sg = OpConstant %uint 3
            %one = OpConstant %uint 1
            %f = OpFunction %void None %fn
            %e = OpLabel
            %r = OpGroupIAdd %uint %sg Reduce %one
            %s = OpGroupUMax %uint %sg ExclusiveScan %one
            OpReturn
            OpFunctionEnd
            "#,
        );
        let block = Block {
            var: 0,
            global_offset: 0,
            global_size: 3,
            work_dim: 6,
            group_offset: 7,
            enqueued_local_size: 10,
        };
        run(&mut ctx, &block).unwrap();
        let ops: Vec<Op> = ctx.module.functions[0].blocks[0]
            .instructions
            .iter()
            .map(|i| i.class.opcode)
            .collect();
        assert!(ops.contains(&Op::GroupNonUniformIAdd));
        assert!(ops.contains(&Op::GroupNonUniformUMax));
        assert!(!ops.contains(&Op::GroupIAdd));
    }

    #[test]
    fn workgroup_scope_is_refused_by_name() {
        let mut ctx = assemble(
            r#"
            OpCapability Kernel
            OpCapability Groups
            OpCapability Addresses
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %f "k"
            %uint = OpTypeInt 32 0
            %void = OpTypeVoid
            %fn = OpTypeFunction %void
            %wg = OpConstant %uint 2
            %one = OpConstant %uint 1
            %f = OpFunction %void None %fn
            %e = OpLabel
            %r = OpGroupIAdd %uint %wg Reduce %one
            OpReturn
            OpFunctionEnd
            "#,
        );
        let block = Block {
            var: 0,
            global_offset: 0,
            global_size: 3,
            work_dim: 6,
            group_offset: 7,
            enqueued_local_size: 10,
        };
        let e = run(&mut ctx, &block).unwrap_err();
        assert!(e.contains("GroupIAdd"), "{e}");
    }
}
