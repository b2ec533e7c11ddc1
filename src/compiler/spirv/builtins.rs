//! Pass 6: work-item functions. OpenCL's 64-bit built-in variables become
//! Vulkan's 32-bit ones (widened where they are read), plus the
//! push-constant members for what Vulkan lacks: the global id includes the
//! global offset; global size, global offset and the work dimension come
//! from the host; the work-group size is a specialization-constant vector
//! (SpecIds 0, 1, 2) so one module serves every local size.

use std::collections::HashMap;

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{BuiltIn, Decoration, Op, StorageClass, Word};

use crate::compiler::spirv::ctx::{Ctx, id_at};
use crate::compiler::spirv::interface::Block;

/// The three specialization constants that size the work-group.
pub const LOCAL_SIZE_SPEC_IDS: [u32; 3] = [0, 1, 2];

fn builtin_of(ctx: &Ctx, var: Word) -> Option<BuiltIn> {
    ctx.module.annotations.iter().find_map(|a| {
        (a.class.opcode == Op::Decorate && id_at(a, 0) == Some(var)).then(|| {
            match a.operands.get(1..3) {
                Some(
                    [
                        Operand::Decoration(Decoration::BuiltIn),
                        Operand::BuiltIn(b),
                    ],
                ) => Some(*b),
                _ => None,
            }
        })?
    })
}

/// The work-group size vector (creating it on first use).
pub fn workgroup_size(ctx: &mut Ctx) -> Word {
    let u32t = ctx.uint(32);
    let v3 = ctx.vector(u32t, 3);
    // The vector made here, not OpenCL's variable of the same built-in.
    let ours = ctx.module.annotations.iter().find_map(|a| {
        (a.operands.get(1..3)
            == Some(&[
                Operand::Decoration(Decoration::BuiltIn),
                Operand::BuiltIn(BuiltIn::WorkgroupSize),
            ]))
        .then(|| id_at(a, 0))
        .flatten()
        .filter(|&t| {
            ctx.global(t)
                .is_some_and(|g| g.class.opcode == Op::SpecConstantComposite)
        })
    });
    if let Some(id) = ours {
        return id;
    }
    let mut comps = Vec::new();
    for spec_id in LOCAL_SIZE_SPEC_IDS {
        let c = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::SpecConstant,
            Some(u32t),
            Some(c),
            vec![Operand::LiteralBit32(1)],
        ));
        ctx.decorate(c, Decoration::SpecId, vec![Operand::LiteralBit32(spec_id)]);
        comps.push(Operand::IdRef(c));
    }
    let id = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::SpecConstantComposite,
        Some(v3),
        Some(id),
        comps,
    ));
    ctx.decorate(
        id,
        Decoration::BuiltIn,
        vec![Operand::BuiltIn(BuiltIn::WorkgroupSize)],
    );
    id
}

/// A new 32-bit Vulkan built-in input variable.
fn vulkan_input(ctx: &mut Ctx, b: BuiltIn, vector: bool) -> Word {
    let u32t = ctx.uint(32);
    let t = if vector { ctx.vector(u32t, 3) } else { u32t };
    let p = ctx.pointer(StorageClass::Input, t);
    let v = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(p),
        Some(v),
        vec![Operand::StorageClass(StorageClass::Input)],
    ));
    ctx.decorate(v, Decoration::BuiltIn, vec![Operand::BuiltIn(b)]);
    v
}

pub fn run(ctx: &mut Ctx, block: &Block) -> Result<(), String> {
    // OpenCL built-in variables and what they are.
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
        .collect();
    let u32t = ctx.uint(32);
    let v3 = ctx.vector(u32t, 3);
    let mut replacement: HashMap<Word, BuiltIn> = HashMap::new();
    let mut vk_vars: HashMap<BuiltIn, Word> = HashMap::new();
    for &(v, b) in &vars {
        match b {
            BuiltIn::GlobalInvocationId
            | BuiltIn::LocalInvocationId
            | BuiltIn::WorkgroupId
            | BuiltIn::NumWorkgroups => {
                vk_vars
                    .entry(b)
                    .or_insert_with(|| vulkan_input(ctx, b, true));
            }
            BuiltIn::LocalInvocationIndex => {
                let nv = vulkan_input(ctx, b, false);
                vk_vars.insert(b, nv);
            }
            BuiltIn::GlobalLinearId => {
                // Computed from the id without offset and the global size.
                vk_vars
                    .entry(BuiltIn::GlobalInvocationId)
                    .or_insert_with(|| vulkan_input(ctx, BuiltIn::GlobalInvocationId, true));
            }
            BuiltIn::WorkgroupSize
            | BuiltIn::EnqueuedWorkgroupSize
            | BuiltIn::GlobalSize
            | BuiltIn::GlobalOffset
            | BuiltIn::WorkDim => {}
            other => {
                return Err(format!(
                    "the work-item built-in {other:?} is not supported yet"
                ));
            }
        }
        replacement.insert(v, b);
    }
    let pc_u32 = ctx.pointer(StorageClass::PushConstant, u32t);
    let member = |ctx: &mut Ctx, code: &mut Vec<Instruction>, m: u32| -> Word {
        let idx = ctx.const_u32(m);
        let ptr = ctx.fresh();
        code.push(Instruction::new(
            Op::AccessChain,
            Some(pc_u32),
            Some(ptr),
            vec![Operand::IdRef(block.var), Operand::IdRef(idx)],
        ));
        let v = ctx.fresh();
        code.push(Instruction::new(
            Op::Load,
            Some(u32t),
            Some(v),
            vec![Operand::IdRef(ptr)],
        ));
        v
    };
    let vec3_from_push = |ctx: &mut Ctx, code: &mut Vec<Instruction>, first: u32| -> Word {
        let c: Vec<Word> = (0..3).map(|i| member(ctx, code, first + i)).collect();
        let v = ctx.fresh();
        code.push(Instruction::new(
            Op::CompositeConstruct,
            Some(v3),
            Some(v),
            c.into_iter().map(Operand::IdRef).collect(),
        ));
        v
    };
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let src = (i.class.opcode == Op::Load).then(|| id_at(&i, 0)).flatten();
                let Some(kind) = src.and_then(|s| replacement.get(&s).copied()) else {
                    out.push(i);
                    continue;
                };
                let rty = i.result_type.ok_or("load without type")?;
                let rid = i.result_id.ok_or("load without id")?;
                let mut code = Vec::new();
                let value32 = match kind {
                    BuiltIn::WorkDim => member(ctx, &mut code, block.work_dim),
                    BuiltIn::GlobalSize => vec3_from_push(ctx, &mut code, block.global_size),
                    BuiltIn::GlobalOffset => vec3_from_push(ctx, &mut code, block.global_offset),
                    BuiltIn::WorkgroupSize | BuiltIn::EnqueuedWorkgroupSize => workgroup_size(ctx),
                    BuiltIn::GlobalLinearId => {
                        let id = ctx.fresh();
                        code.push(Instruction::new(
                            Op::Load,
                            Some(v3),
                            Some(id),
                            vec![Operand::IdRef(vk_vars[&BuiltIn::GlobalInvocationId])],
                        ));
                        let size = vec3_from_push(ctx, &mut code, block.global_size);
                        let c = |ctx: &mut Ctx, code: &mut Vec<Instruction>, v: Word, k: u32| {
                            let r = ctx.fresh();
                            code.push(Instruction::new(
                                Op::CompositeExtract,
                                Some(u32t),
                                Some(r),
                                vec![Operand::IdRef(v), Operand::LiteralBit32(k)],
                            ));
                            r
                        };
                        let (x, y, z) = (
                            c(ctx, &mut code, id, 0),
                            c(ctx, &mut code, id, 1),
                            c(ctx, &mut code, id, 2),
                        );
                        let (sx, sy) = (c(ctx, &mut code, size, 0), c(ctx, &mut code, size, 1));
                        let mut op = |ctx: &mut Ctx, o: Op, a: Word, b: Word| {
                            let r = ctx.fresh();
                            code.push(Instruction::new(
                                o,
                                Some(u32t),
                                Some(r),
                                vec![Operand::IdRef(a), Operand::IdRef(b)],
                            ));
                            r
                        };
                        let t = op(ctx, Op::IMul, z, sy);
                        let t = op(ctx, Op::IAdd, t, y);
                        let t = op(ctx, Op::IMul, t, sx);
                        op(ctx, Op::IAdd, t, x)
                    }
                    BuiltIn::LocalInvocationIndex => {
                        let v = ctx.fresh();
                        code.push(Instruction::new(
                            Op::Load,
                            Some(u32t),
                            Some(v),
                            vec![Operand::IdRef(vk_vars[&kind])],
                        ));
                        v
                    }
                    _ => {
                        let v = ctx.fresh();
                        code.push(Instruction::new(
                            Op::Load,
                            Some(v3),
                            Some(v),
                            vec![Operand::IdRef(vk_vars[&kind])],
                        ));
                        if kind == BuiltIn::GlobalInvocationId {
                            let off = vec3_from_push(ctx, &mut code, block.global_offset);
                            let sum = ctx.fresh();
                            code.push(Instruction::new(
                                Op::IAdd,
                                Some(v3),
                                Some(sum),
                                vec![Operand::IdRef(v), Operand::IdRef(off)],
                            ));
                            sum
                        } else {
                            v
                        }
                    }
                };
                // Widen to the OpenCL type (size_t vectors, or uint).
                let from = if matches!(
                    kind,
                    BuiltIn::WorkDim | BuiltIn::LocalInvocationIndex | BuiltIn::GlobalLinearId
                ) {
                    u32t
                } else {
                    v3
                };
                if rty == from {
                    code.push(Instruction::new(
                        Op::CopyObject,
                        Some(rty),
                        Some(rid),
                        vec![Operand::IdRef(value32)],
                    ));
                } else {
                    code.push(Instruction::new(
                        Op::UConvert,
                        Some(rty),
                        Some(rid),
                        vec![Operand::IdRef(value32)],
                    ));
                }
                out.extend(code);
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    // The OpenCL variables are gone.
    let gone: Vec<Word> = replacement.keys().copied().collect();
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
    Ok(())
}
