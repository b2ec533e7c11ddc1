//! Pass 2 (phase 1): Inlining. Every call in the kernel is replaced by a
//! copy of the callee (llvm-spirv always emits at least one: the entry
//! point is a wrapper that calls the kernel's body), so the kernel becomes
//! one function, as Vulkan entry points with pointer arguments require.
//! OpenCL C has no recursion (a call graph with a cycle fails the rewrite
//! by name), so this terminates; a kernel that would pass
//! `MAX_INLINED` instructions fails too. Lifetime markers, which
//! only Kernel modules may carry and which mean nothing to Vulkan, are
//! dropped here too.
//!
//! Takes `select`'s module and the kernel's function id. Guarantees the
//! kernel is one function without `OpFunctionCall`s and the module has no
//! other function; no lifetime markers are left.

use rspirv::dr::{Block, Function, Instruction, Operand};
use rspirv::spirv::{Op, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, Prologue, id_at, insert_at_kernel_start};

fn fid_of(f: &Function) -> Option<Word> {
    f.def.as_ref().and_then(|d| d.result_id)
}

/// Decorations of the callee's values (rounding modes, saturation, ...)
/// apply to their copies too (those of its parameters do not apply to
/// the arguments).
fn copy_decorations(ctx: &mut Ctx, map: &HashMap<Word, Word>) {
    let copies: Vec<Instruction> = ctx
        .module
        .annotations
        .iter()
        .filter(|a| a.class.opcode == Op::Decorate)
        .filter_map(|a| {
            let to = map.get(&id_at(a, 0)?)?;
            let mut c = a.clone();
            c.operands[0] = Operand::IdRef(*to);
            Some(c)
        })
        .collect();
    ctx.module.annotations.extend(copies);
}

fn remap(i: &mut Instruction, map: &HashMap<Word, Word>) {
    if let Some(r) = i.result_id.as_mut() {
        if let Some(n) = map.get(r) {
            *r = *n;
        }
    }
    for o in &mut i.operands {
        if let Operand::IdRef(id) | Operand::IdScope(id) | Operand::IdMemorySemantics(id) = o {
            if let Some(n) = map.get(id) {
                *id = *n;
            }
        }
    }
}

/// The most instructions a kernel may have once every call is inlined:
/// far beyond any real kernel's, and a bound on what a program of many
/// nested calls can make the rewriter spend.
const MAX_INLINED: usize = 1_000_000;

/// A function that calls itself, directly or through others, reached
/// from `fid`: OpenCL C has no recursion, and inlining it would not end.
fn recursive(ctx: &Ctx, fid: Word) -> Option<Word> {
    let callees: HashMap<Word, Vec<Word>> = ctx
        .module
        .functions
        .iter()
        .filter_map(|f| {
            let calls = f
                .blocks
                .iter()
                .flat_map(|b| &b.instructions)
                .filter(|i| i.class.opcode == Op::FunctionCall)
                .filter_map(|i| id_at(i, 0))
                .collect();
            Some((fid_of(f)?, calls))
        })
        .collect();
    // Depth-first, with the functions on the current path.
    let mut on_path: Vec<Word> = vec![fid];
    let mut stack: Vec<(Word, usize)> = vec![(fid, 0)];
    let mut done: crate::compiler::spirv::common::HashSet<Word> = Default::default();
    while let Some((f, n)) = stack.pop() {
        match callees.get(&f).and_then(|c| c.get(n)) {
            Some(&g) => {
                stack.push((f, n + 1));
                if on_path.contains(&g) {
                    return Some(g);
                }
                if done.insert(g) {
                    on_path.push(g);
                    stack.push((g, 0));
                }
            }
            None => {
                on_path.pop();
            }
        }
    }
    None
}

/// llvm-spirv's bodies for LLVM's funnel shifts: (function id, shift
/// left, bit width).
fn funnel_shift_helpers(ctx: &Ctx) -> HashMap<Word, (bool, u32)> {
    ctx.module
        .debug_names
        .iter()
        .filter(|n| n.class.opcode == Op::Name)
        .filter_map(|n| {
            let f = id_at(n, 0)?;
            let Some(Operand::LiteralString(name)) = n.operands.get(1) else {
                return None;
            };
            let rest = name.strip_prefix("spirv.llvm_fsh")?;
            let (left, width) = match rest.split_once("_i")? {
                ("l", w) => (true, w.parse::<u32>().ok()?),
                ("r", w) => (false, w.parse::<u32>().ok()?),
                _ => return None,
            };
            // Three parameters and a result of one integer type.
            let func = ctx.module.functions.iter().find(|g| fid_of(g) == Some(f))?;
            let ty = func.def.as_ref()?.result_type?;
            let int = ctx.global(ty).is_some_and(|t| {
                t.class.opcode == Op::TypeInt
                    && t.operands.first() == Some(&Operand::LiteralBit32(width))
            });
            (int && func.parameters.len() == 3
                && func.parameters.iter().all(|p| p.result_type == Some(ty)))
            .then_some((f, (left, width)))
        })
        .collect()
}

/// Calls of LLVM's funnel shifts (rotates, byte alignment) become the
/// shifts themselves: with a constant amount, two shifts and an or (or
/// nothing, for a multiple of the width), which the driver sees as the
/// rotate or byte permute it is; otherwise a form without llvm-spirv's
/// shift by the full width (whose result Vulkan leaves undefined) when
/// the amount is a multiple of it.
fn lower_funnel_shifts(ctx: &mut Ctx) {
    let helpers = funnel_shift_helpers(ctx);
    if helpers.is_empty() {
        return;
    }
    let constant = |ctx: &Ctx, v: Word| {
        ctx.global(v)
            .filter(|c| c.class.opcode == Op::Constant)
            .and_then(|c| match c.operands.first() {
                Some(Operand::LiteralBit32(x)) => Some(u64::from(*x)),
                Some(Operand::LiteralBit64(x)) => Some(*x),
                _ => None,
            })
    };
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for b in functions.iter_mut().flat_map(|f| &mut f.blocks) {
        if !b.instructions.iter().any(|i| {
            i.class.opcode == Op::FunctionCall
                && id_at(i, 0).is_some_and(|f| helpers.contains_key(&f))
        }) {
            continue;
        }
        let mut out = Vec::with_capacity(b.instructions.len());
        for i in std::mem::take(&mut b.instructions) {
            let helper = (i.class.opcode == Op::FunctionCall)
                .then(|| id_at(&i, 0).and_then(|f| helpers.get(&f)))
                .flatten();
            let (Some(&(left, n)), Some(ty), Some(r), Some(hi), Some(lo), Some(by)) = (
                helper,
                i.result_type,
                i.result_id,
                id_at(&i, 1),
                id_at(&i, 2),
                id_at(&i, 3),
            ) else {
                out.push(i);
                continue;
            };
            let mut op = |ctx: &mut Ctx, op: Op, args: &[Word], id: Option<Word>| {
                let id = id.unwrap_or_else(|| ctx.fresh());
                out.push(Instruction::new(
                    op,
                    Some(ty),
                    Some(id),
                    args.iter().map(|&a| Operand::IdRef(a)).collect(),
                ));
                id
            };
            // fshl(hi, lo, s) = (hi << s) | (lo >> (n - s)), hi when s is 0;
            // fshr(hi, lo, s) = (lo >> s) | (hi << (n - s)), lo when s is 0.
            let (first, second, toward, away) = if left {
                (hi, lo, Op::ShiftLeftLogical, Op::ShiftRightLogical)
            } else {
                (lo, hi, Op::ShiftRightLogical, Op::ShiftLeftLogical)
            };
            match constant(ctx, by).map(|s| s % u64::from(n)) {
                Some(s) if n == 64 && s != 0 => {
                    let s = if left { 64 - s } else { s };
                    out.extend(shift_right_in_words(ctx, ty, r, [hi, lo], s as u32));
                }
                Some(0) => {
                    op(ctx, Op::CopyObject, &[first], Some(r));
                }
                Some(s) => {
                    let (a, b) = (ctx.const_int(ty, s), ctx.const_int(ty, u64::from(n) - s));
                    let x = op(ctx, toward, &[first, a], None);
                    let y = op(ctx, away, &[second, b], None);
                    op(ctx, Op::BitwiseOr, &[x, y], Some(r));
                }
                None => {
                    // (second away-shifted by 1, then by n - 1 - s): zero
                    // when s is 0, with every shift below the width.
                    let (mask, one) = (ctx.const_int(ty, u64::from(n) - 1), ctx.const_int(ty, 1));
                    let s = op(ctx, Op::BitwiseAnd, &[by, mask], None);
                    let x = op(ctx, toward, &[first, s], None);
                    let rest = op(ctx, Op::BitwiseXor, &[s, mask], None);
                    let y = op(ctx, away, &[second, one], None);
                    let y = op(ctx, away, &[y, rest], None);
                    op(ctx, Op::BitwiseOr, &[x, y], Some(r));
                }
            }
        }
        b.instructions = out;
    }
    ctx.module.functions = functions;
}

/// The low 64 bits of the 128-bit `hi:lo` shifted right by `s` (1 to 63),
/// as `r`, computed on 32-bit words: each word of the result is a 32-bit
/// funnel shift of two neighbouring words, which drivers make one
/// instruction (a 64-bit rotate, two), where the same on 64-bit values
/// costs two shifts of two words each and the ors.
fn shift_right_in_words(
    ctx: &mut Ctx,
    ty: Word,
    r: Word,
    [hi, lo]: [Word; 2],
    s: u32,
) -> Vec<Instruction> {
    let u32_ty = ctx.uint(32);
    let pair = ctx.vector(u32_ty, 2);
    let mut p = Prologue { code: Vec::new() };
    // The words from the lowest: lo's two, then hi's (the same when the
    // two are one value, as in a rotate).
    let mut words = Vec::with_capacity(4);
    for v in if hi == lo { vec![lo] } else { vec![lo, hi] } {
        let both = p.op(ctx, Op::Bitcast, pair, &[v]);
        for k in 0..2 {
            let w = ctx.fresh();
            let args = vec![Operand::IdRef(both), Operand::LiteralBit32(k)];
            p.code.push(Instruction::new(
                Op::CompositeExtract,
                Some(u32_ty),
                Some(w),
                args,
            ));
            words.push(w);
        }
    }
    if hi == lo {
        words.extend_from_within(..);
    }
    let (q, t) = ((s / 32) as usize, s % 32);
    let mut result = [0; 2];
    for (k, word) in result.iter_mut().enumerate() {
        let (low, high) = (words[k + q], words[k + q + 1]);
        *word = if t == 0 {
            low
        } else {
            let (a, b) = (ctx.const_u32(t), ctx.const_u32(32 - t));
            let x = p.op(ctx, Op::ShiftRightLogical, u32_ty, &[low, a]);
            let y = p.op(ctx, Op::ShiftLeftLogical, u32_ty, &[high, b]);
            p.op(ctx, Op::BitwiseOr, u32_ty, &[x, y])
        };
    }
    let joined = p.op(ctx, Op::CompositeConstruct, pair, &result);
    p.code.push(Instruction::new(
        Op::Bitcast,
        Some(ty),
        Some(r),
        vec![Operand::IdRef(joined)],
    ));
    p.code
}

pub fn run(ctx: &mut Ctx, fid: Word) -> Result<(), String> {
    lower_funnel_shifts(ctx);
    if let Some(f) = recursive(ctx, fid) {
        return Err(format!(
            "recursion is not allowed in OpenCL C (%{f} calls itself)"
        ));
    }
    let mut size: usize = ctx
        .module
        .functions
        .iter()
        .filter(|f| fid_of(f) == Some(fid))
        .flat_map(|f| &f.blocks)
        .map(|b| b.instructions.len())
        .sum();
    // Blocks before this one hold no calls any more.
    let mut from_block = 0;
    loop {
        let functions = &ctx.module.functions;
        let k = functions
            .iter()
            .position(|f| fid_of(f) == Some(fid))
            .ok_or("kernel missing")?;
        let found = functions[k]
            .blocks
            .iter()
            .enumerate()
            .skip(from_block)
            .find_map(|(bi, b)| {
                b.instructions
                    .iter()
                    .position(|i| i.class.opcode == Op::FunctionCall)
                    .map(|ci| (bi, ci))
            });
        let Some((bi, ci)) = found else { break };
        from_block = bi;
        let call = functions[k].blocks[bi].instructions[ci].clone();
        let callee_id = id_at(&call, 0).ok_or("malformed OpFunctionCall")?;
        let callee = functions
            .iter()
            .find(|f| fid_of(f) == Some(callee_id))
            .ok_or_else(|| {
                format!("call to %{callee_id}, which has no body (an unresolved import?)")
            })?
            .clone();
        size += callee
            .blocks
            .iter()
            .map(|b| b.instructions.len() + 2)
            .sum::<usize>();
        if size > MAX_INLINED {
            return Err(format!(
                "the kernel is too large once its calls are inlined (over {MAX_INLINED} instructions)"
            ));
        }
        // Fresh ids for everything the callee defines; arguments for its
        // parameters.
        let mut map: HashMap<Word, Word> = HashMap::default();
        for (p, a) in callee.parameters.iter().zip(call.operands[1..].iter()) {
            if let (Some(pid), Operand::IdRef(aid)) = (p.result_id, a) {
                map.insert(pid, *aid);
            }
        }
        // A callee of one block (funnel shifts, byte swaps, small helpers)
        // goes in place of the call: no blocks to split, no phi to merge
        // its result, whose id the returned value takes.
        let straight = match callee.blocks.as_slice() {
            [b] => b
                .instructions
                .last()
                .is_some_and(|i| matches!(i.class.opcode, Op::Return | Op::ReturnValue)),
            _ => false,
        };
        let returned = straight
            .then(|| callee.blocks[0].instructions.last())
            .flatten()
            .filter(|i| i.class.opcode == Op::ReturnValue)
            .and_then(|i| id_at(i, 0));
        let mut fresh_ids: HashMap<Word, Word> = HashMap::default();
        for b in &callee.blocks {
            for i in b.label.iter().chain(&b.instructions) {
                if let Some(r) = i.result_id {
                    let id = match call.result_id {
                        Some(rid) if straight && Some(r) == returned => rid,
                        _ => ctx.fresh(),
                    };
                    fresh_ids.insert(r, id);
                }
            }
        }
        copy_decorations(ctx, &fresh_ids);
        map.extend(fresh_ids);
        if straight {
            let kernel = &mut ctx.module.functions[k];
            let mut hoisted = Vec::new();
            let mut code = Vec::with_capacity(callee.blocks[0].instructions.len());
            for i in &callee.blocks[0].instructions {
                let mut i = i.clone();
                remap(&mut i, &map);
                match i.class.opcode {
                    Op::Variable => hoisted.push(i),
                    Op::Return => {}
                    Op::ReturnValue => {
                        // A parameter or a constant, returned as it is.
                        let v = id_at(&i, 0).ok_or("malformed OpReturnValue")?;
                        if let (Some(rid), Some(rty)) = (call.result_id, call.result_type)
                            && v != rid
                        {
                            code.push(Instruction::new(
                                Op::CopyObject,
                                Some(rty),
                                Some(rid),
                                vec![Operand::IdRef(v)],
                            ));
                        }
                    }
                    _ => code.push(i),
                }
            }
            kernel.blocks[bi].instructions.splice(ci..=ci, code);
            insert_at_kernel_start(&mut ctx.module.functions, fid, hoisted)?;
            continue;
        }
        let cont = ctx.fresh();
        let kernel = &mut ctx.module.functions[k];
        let caller_label = kernel.blocks[bi].label_id().ok_or("block without label")?;
        let mut returns: Vec<(Word, Word)> = Vec::new();
        let mut hoisted = Vec::new();
        let mut body: Vec<Block> = Vec::new();
        for (n, b) in callee.blocks.iter().enumerate() {
            let mut nb = Block::new();
            let mut label = b.label.clone().ok_or("block without label")?;
            remap(&mut label, &map);
            let this = label.result_id.ok_or("label without id")?;
            nb.label = Some(label);
            for i in &b.instructions {
                let mut i = i.clone();
                remap(&mut i, &map);
                match i.class.opcode {
                    Op::Variable if n == 0 => hoisted.push(i),
                    Op::Return => nb.instructions.push(Instruction::new(
                        Op::Branch,
                        None,
                        None,
                        vec![Operand::IdRef(cont)],
                    )),
                    Op::ReturnValue => {
                        let v = id_at(&i, 0).ok_or("malformed OpReturnValue")?;
                        returns.push((v, this));
                        nb.instructions.push(Instruction::new(
                            Op::Branch,
                            None,
                            None,
                            vec![Operand::IdRef(cont)],
                        ));
                    }
                    _ => nb.instructions.push(i),
                }
            }
            body.push(nb);
        }
        let entry = body
            .first()
            .and_then(|b| b.label_id())
            .ok_or("callee without body")?;
        // Split the calling block around the call.
        let mut after = kernel.blocks[bi].instructions.split_off(ci);
        after.remove(0);
        kernel.blocks[bi].instructions.push(Instruction::new(
            Op::Branch,
            None,
            None,
            vec![Operand::IdRef(entry)],
        ));
        let mut tail = Block::new();
        tail.label = Some(Instruction::new(Op::Label, None, Some(cont), vec![]));
        if let (Some(rid), Some(rty)) = (call.result_id, call.result_type) {
            if !returns.is_empty() {
                let ops = returns
                    .iter()
                    .flat_map(|&(v, p)| [Operand::IdRef(v), Operand::IdRef(p)])
                    .collect();
                tail.instructions
                    .push(Instruction::new(Op::Phi, Some(rty), Some(rid), ops));
            }
        }
        tail.instructions.extend(after);
        // Successors of the split block now see the tail as predecessor.
        for b in kernel.blocks.iter_mut() {
            for i in b
                .instructions
                .iter_mut()
                .filter(|i| i.class.opcode == Op::Phi)
            {
                for pair in i.operands.chunks_mut(2) {
                    if pair[1] == Operand::IdRef(caller_label) {
                        pair[1] = Operand::IdRef(cont);
                    }
                }
            }
        }
        // The call's own block keeps the branch into the copy.
        let insert_at = bi + 1;
        let n_body = body.len();
        kernel.blocks.splice(insert_at..insert_at, body);
        kernel.blocks.insert(insert_at + n_body, tail);
        // Locals of the callee live in the kernel's entry block.
        insert_at_kernel_start(&mut ctx.module.functions, fid, hoisted)?;
    }
    ctx.module.functions.retain(|f| fid_of(f) == Some(fid));
    for b in ctx.module.functions.iter_mut().flat_map(|f| &mut f.blocks) {
        b.instructions
            .retain(|i| !matches!(i.class.opcode, Op::LifetimeStart | Op::LifetimeStop));
    }
    // The types of the functions inlined away go too: later passes may
    // make one the same as the kernel's (a block kernel's literal
    // parameter, see the enqueue pass), which Vulkan forbids.
    let kernel_ty = ctx.module.functions[0]
        .def
        .as_ref()
        .and_then(|d| id_at(d, 1));
    ctx.module
        .types_global_values
        .retain(|t| t.class.opcode != Op::TypeFunction || t.result_id == kernel_ty);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    const HEAD: &str = "
        OpCapability Addresses
        OpCapability Kernel
        OpMemoryModel Physical64 OpenCL
        OpEntryPoint Kernel %k \"k\"
        %void = OpTypeVoid
        %fn = OpTypeFunction %void
    ";

    #[test]
    fn recursion_through_another_function_fails_by_name() {
        let mut ctx = assemble(&format!(
            "{HEAD}
        %k = OpFunction %void None %fn
        %k0 = OpLabel
        %c0 = OpFunctionCall %void %f
        OpReturn
        OpFunctionEnd
        %f = OpFunction %void None %fn
        %f0 = OpLabel
        %c1 = OpFunctionCall %void %g
        OpReturn
        OpFunctionEnd
        %g = OpFunction %void None %fn
        %g0 = OpLabel
        %c2 = OpFunctionCall %void %f
        OpReturn
        OpFunctionEnd
        "
        ));
        let k = fid_of(&ctx.module.functions[0]).unwrap();
        let e = run(&mut ctx, k).unwrap_err();
        assert!(e.contains("recursion"), "{e}");
    }

    #[test]
    fn a_function_called_twice_is_inlined_twice() {
        let mut ctx = assemble(&format!(
            "{HEAD}
        %k = OpFunction %void None %fn
        %k0 = OpLabel
        %c0 = OpFunctionCall %void %f
        %c1 = OpFunctionCall %void %f
        OpReturn
        OpFunctionEnd
        %f = OpFunction %void None %fn
        %f0 = OpLabel
        OpReturn
        OpFunctionEnd
        "
        ));
        let k = fid_of(&ctx.module.functions[0]).unwrap();
        run(&mut ctx, k).unwrap();
        assert_eq!(ctx.module.functions.len(), 1);
        let calls = ctx.module.functions[0]
            .all_inst_iter()
            .filter(|i| i.class.opcode == Op::FunctionCall)
            .count();
        assert_eq!(calls, 0);
    }

    #[test]
    fn wide_rotate_by_a_constant_is_shifted_in_words() {
        let mut ctx = assemble(&format!(
            "{HEAD}
        OpCapability Int64
        OpName %fshr \"spirv.llvm_fshr_i64\"
        %ulong = OpTypeInt 64 0
        %fn3 = OpTypeFunction %ulong %ulong %ulong %ulong
        %x = OpConstant %ulong 81985529216486895
        %s = OpConstant %ulong 14
        %k = OpFunction %void None %fn
        %k0 = OpLabel
        %r = OpFunctionCall %ulong %fshr %x %x %s
        OpReturn
        OpFunctionEnd
        %fshr = OpFunction %ulong None %fn3
        %a = OpFunctionParameter %ulong
        %b = OpFunctionParameter %ulong
        %c = OpFunctionParameter %ulong
        %f0 = OpLabel
        OpReturnValue %a
        OpFunctionEnd
        "
        ));
        let k = fid_of(&ctx.module.functions[0]).unwrap();
        run(&mut ctx, k).unwrap();
        let types = ctx.value_types();
        let shifts: Vec<u32> = ctx.module.functions[0]
            .all_inst_iter()
            .filter(|i| matches!(i.class.opcode, Op::ShiftLeftLogical | Op::ShiftRightLogical))
            .filter_map(|i| {
                let t = ctx.global(*types.get(&i.result_id?)?)?;
                match t.operands.first() {
                    Some(Operand::LiteralBit32(w)) => Some(*w),
                    _ => None,
                }
            })
            .collect();
        // Two 32-bit funnel shifts, of two shifts each; no 64-bit shift.
        assert_eq!(shifts, [32; 4]);
    }
}
