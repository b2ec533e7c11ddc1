//! Pass 4 (phase 1): `async_work_group_copy`,
//! `async_work_group_strided_copy`, `wait_group_events` and `prefetch`.
//! Vulkan has no asynchronous copies or events, so each copy becomes a loop
//! in which the work-items of the group copy every local-size-th element,
//! starting at their local linear id (the stride applies to the global
//! side); waiting becomes a work-group barrier, which also makes the copied
//! data visible to the whole group, as the specification requires of the
//! wait. Event values, variables and casts disappear, and `prefetch` (a
//! hint) is dropped.
//!
//! Takes the one-function kernel. Guarantees no async copy,
//! `wait_group_events`, `prefetch` or value of event type is left; the copy
//! loops are unstructured, for the structure pass.

use rspirv::dr::{Block, Instruction, Operand};
use rspirv::spirv::{BuiltIn, Op, OpenclStd100Op as C, StorageClass, Word};

use crate::compiler::spirv::common::HashSet;
use crate::compiler::spirv::common::ctx::{Ctx, id_at, ids_used};

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    drop_prefetches(ctx);
    let copies = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .any(|i| matches!(i.class.opcode, Op::GroupAsyncCopy | Op::GroupWaitEvents));
    if !copies {
        return Ok(());
    }
    let ulong = ctx.uint(64);
    let index = ctx.builtin_input(BuiltIn::LocalInvocationIndex, ulong);
    let v3 = ctx.vector(ulong, 3);
    let size = ctx.builtin_input(BuiltIn::WorkgroupSize, v3);
    let bool_ty = ctx.ty(Op::TypeBool, vec![]);
    // OpenCL semantics (the sync pass maps them): acquire-release on
    // work-group and global memory.
    let (workgroup, acq_rel_memory) = (ctx.const_u32(2), ctx.const_u32(0x8 | 0x100 | 0x200));
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        let mut b = 0;
        while b < f.blocks.len() {
            let Some(at) = f.blocks[b]
                .instructions
                .iter()
                .position(|i| i.class.opcode == Op::GroupAsyncCopy)
            else {
                b += 1;
                continue;
            };
            let copy = f.blocks[b].instructions[at].clone();
            let ops: Vec<Word> = (0..copy.operands.len())
                .filter_map(|n| id_at(&copy, n))
                .collect();
            let [dst, src, count, stride, ..] = ops[..] else {
                return Err("malformed OpGroupAsyncCopy".into());
            };
            let ptr_type = |ctx: &Ctx, p: Word| -> Result<(Word, StorageClass, Word), String> {
                let t = value_type(&*f, ctx, p).ok_or("async copy through an unknown pointer")?;
                let (sc, elem) = ctx.pointer_parts(t).ok_or("async copy without a pointer")?;
                Ok((t, sc, elem))
            };
            let (dst_ty, dst_sc, elem) = ptr_type(ctx, dst)?;
            let (src_ty, _, _) = ptr_type(ctx, src)?;
            let stride_on_source = dst_sc == StorageClass::Workgroup;
            // Split the block: [before] -> header -> body -> header | rest.
            let rest_instructions = f.blocks[b].instructions.split_off(at + 1);
            f.blocks[b].instructions.pop();
            let old_label = f.blocks[b].label_id().ok_or("block without label")?;
            let (header, body, rest) = (ctx.fresh(), ctx.fresh(), ctx.fresh());
            let mut code = std::mem::take(&mut f.blocks[b].instructions);
            let first = emit(ctx, &mut code, Op::Load, ulong, &[index]);
            let sizes = emit(ctx, &mut code, Op::Load, v3, &[size]);
            let mut total = None;
            for k in 0..3 {
                let c = ctx.fresh();
                code.push(Instruction::new(
                    Op::CompositeExtract,
                    Some(ulong),
                    Some(c),
                    vec![Operand::IdRef(sizes), Operand::LiteralBit32(k)],
                ));
                total = Some(match total {
                    None => c,
                    Some(t) => emit(ctx, &mut code, Op::IMul, ulong, &[t, c]),
                });
            }
            let total = total.expect("three dimensions");
            code.push(branch(header));
            f.blocks[b].instructions = code;
            // Header: i = phi(first, next); i < count ?
            let (i, next) = (ctx.fresh(), ctx.fresh());
            let mut h = Vec::new();
            h.push(Instruction::new(
                Op::Phi,
                Some(ulong),
                Some(i),
                vec![
                    Operand::IdRef(first),
                    Operand::IdRef(old_label),
                    Operand::IdRef(next),
                    Operand::IdRef(body),
                ],
            ));
            let more = emit(ctx, &mut h, Op::ULessThan, bool_ty, &[i, count]);
            h.push(Instruction::new(
                Op::BranchConditional,
                None,
                None,
                vec![
                    Operand::IdRef(more),
                    Operand::IdRef(body),
                    Operand::IdRef(rest),
                ],
            ));
            // Body: dst[i or i*stride] = src[i*stride or i].
            let mut bd = Vec::new();
            let far = emit(ctx, &mut bd, Op::IMul, ulong, &[i, stride]);
            let (si, di) = if stride_on_source { (far, i) } else { (i, far) };
            let from = emit(ctx, &mut bd, Op::InBoundsPtrAccessChain, src_ty, &[src, si]);
            let to = emit(ctx, &mut bd, Op::InBoundsPtrAccessChain, dst_ty, &[dst, di]);
            let v = emit(ctx, &mut bd, Op::Load, elem, &[from]);
            bd.push(Instruction::new(
                Op::Store,
                None,
                None,
                vec![Operand::IdRef(to), Operand::IdRef(v)],
            ));
            bd.push(Instruction::new(
                Op::IAdd,
                Some(ulong),
                Some(next),
                vec![Operand::IdRef(i), Operand::IdRef(total)],
            ));
            bd.push(branch(header));
            let block = |label: Word, instructions: Vec<Instruction>| Block {
                label: Some(Instruction::new(Op::Label, None, Some(label), vec![])),
                instructions,
            };
            // Successors' phis now come from `rest`, which ends as b did.
            for other in f.blocks.iter_mut() {
                for p in other
                    .instructions
                    .iter_mut()
                    .filter(|p| p.class.opcode == Op::Phi)
                {
                    for o in p.operands.iter_mut().skip(1).step_by(2) {
                        if *o == Operand::IdRef(old_label) {
                            *o = Operand::IdRef(rest);
                        }
                    }
                }
            }
            f.blocks.insert(b + 1, block(header, h));
            f.blocks.insert(b + 2, block(body, bd));
            f.blocks.insert(b + 3, block(rest, rest_instructions));
            b += 3;
        }
        // Waiting is a work-group barrier.
        for blk in &mut f.blocks {
            for i in &mut blk.instructions {
                if i.class.opcode == Op::GroupWaitEvents {
                    *i = Instruction::new(
                        Op::ControlBarrier,
                        None,
                        None,
                        vec![
                            Operand::IdScope(workgroup),
                            Operand::IdScope(workgroup),
                            Operand::IdMemorySemantics(acq_rel_memory),
                        ],
                    );
                }
            }
        }
    }
    ctx.module.functions = functions;
    drop_events(ctx);
    Ok(())
}

fn branch(to: Word) -> Instruction {
    Instruction::new(Op::Branch, None, None, vec![Operand::IdRef(to)])
}

fn emit(ctx: &mut Ctx, code: &mut Vec<Instruction>, op: Op, ty: Word, args: &[Word]) -> Word {
    let id = ctx.fresh();
    code.push(Instruction::new(
        op,
        Some(ty),
        Some(id),
        args.iter().map(|&a| Operand::IdRef(a)).collect(),
    ));
    id
}

fn value_type(f: &rspirv::dr::Function, ctx: &Ctx, v: Word) -> Option<Word> {
    f.parameters
        .iter()
        .chain(f.blocks.iter().flat_map(|b| &b.instructions))
        .find(|i| i.result_id == Some(v))
        .and_then(|i| i.result_type)
        .or_else(|| ctx.type_of(v))
}

fn drop_prefetches(ctx: &mut Ctx) {
    let Some(ocl) = ctx.ext_import("OpenCL.std") else {
        return;
    };
    for b in ctx.module.functions.iter_mut().flat_map(|f| &mut f.blocks) {
        b.instructions.retain(|i| {
            !(i.class.opcode == Op::ExtInst
                && id_at(i, 0) == Some(ocl)
                && i.operands.get(1) == Some(&Operand::LiteralExtInstInteger(C::prefetch as u32)))
        });
    }
}

/// Removes event types and every value, variable and instruction that
/// holds or passes on an event.
fn drop_events(ctx: &mut Ctx) {
    let mut event_types: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| t.class.opcode == Op::TypeEvent)
        .filter_map(|t| t.result_id)
        .collect();
    // Types built on events (pointers, arrays) are events too.
    loop {
        let more: Vec<Word> = ctx
            .module
            .types_global_values
            .iter()
            .filter(|t| t.result_type.is_none())
            .filter(|t| {
                t.operands
                    .iter()
                    .any(|o| matches!(o, Operand::IdRef(x) if event_types.contains(x)))
            })
            .filter_map(|t| t.result_id)
            .filter(|t| !event_types.contains(t))
            .collect();
        if more.is_empty() {
            break;
        }
        event_types.extend(more);
    }
    let mut tainted: HashSet<Word> = event_types.clone();
    for g in &ctx.module.types_global_values {
        if g.result_type.is_some_and(|t| tainted.contains(&t)) {
            tainted.insert(g.result_id.unwrap_or_default());
        }
    }
    // Values of event types and everything computed from them.
    loop {
        let mut grew = false;
        for i in ctx.module.functions.iter().flat_map(|f| f.all_inst_iter()) {
            let Some(r) = i.result_id else { continue };
            if !tainted.contains(&r)
                && (i.result_type.is_some_and(|t| tainted.contains(&t))
                    || ids_used(i).any(|x| tainted.contains(&x)))
            {
                tainted.insert(r);
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    for b in ctx.module.functions.iter_mut().flat_map(|f| &mut f.blocks) {
        b.instructions.retain(|i| {
            !(i.result_id.is_some_and(|r| tainted.contains(&r))
                || ids_used(i).any(|x| tainted.contains(&x)))
        });
    }
    ctx.module
        .types_global_values
        .retain(|g| !g.result_id.is_some_and(|r| tainted.contains(&r)));
    ctx.module
        .annotations
        .retain(|a| !id_at(a, 0).is_some_and(|t| tainted.contains(&t)));
    ctx.module
        .debug_names
        .retain(|a| !id_at(a, 0).is_some_and(|t| tainted.contains(&t)));
}
