//! Unrolling innermost loops for drivers that end loops after a fixed
//! number of iterations: Mesa's llvmpipe (lavapipe) gives each invocation
//! 65535 loop back-edges, over all its loops together, then leaves every
//! loop at its next back-edge. A kernel whose work-items loop longer would
//! silently compute the wrong thing there. With each innermost loop's body
//! repeated `factor` times between two back-edges, a work-item may loop
//! `factor` times longer.
//!
//! The rewritten module is structured: a loop is its header (with
//! `OpLoopMerge merge continue`), the blocks reachable from it without
//! passing its merge, and one back-edge from the continue target. A loop
//! is repeated when it contains no other loop, nothing but the body's end
//! reaches its continue target (no `continue` from within the body) and
//! the body is small enough; copy k+1 starts where copy k's back-edge
//! went, with the header's phis replaced by copy k's values, and every
//! exit of every copy goes to the loop's merge, whose phis gain the
//! copies' values. Values of the loop used after it reach their users
//! through a new phi in the merge block.

use std::collections::{HashMap, HashSet};

use rspirv::dr::{Block, Function, Instruction, Operand};
use rspirv::spirv::{Op, Word};

use crate::compiler::spirv::ctx::{Ctx, id_at};
use crate::compiler::spirv::reflect::id;
use crate::compiler::spirv::structure;

/// Copies per back-edge at most.
const MAX_FACTOR: usize = 16;
/// Instructions one loop may grow to: llvmpipe compiles large shaders
/// slowly.
const BUDGET: usize = 2000;
/// Barriers one loop may hold once repeated: llvmpipe runs a work-group
/// with barriers as coroutines, and compiling them grows much faster than
/// the code (each barrier is a suspension point).
const BARRIER_BUDGET: usize = 16;

/// Repeats the body of every innermost loop that qualifies.
pub fn run(ctx: &mut Ctx) {
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        let headers: Vec<Word> = f
            .blocks
            .iter()
            .filter(|b| merge_of(b).is_some())
            .filter_map(label)
            .collect();
        for h in headers {
            unroll_loop(ctx, f, h);
        }
    }
    ctx.module.functions = functions;
}

fn label(b: &Block) -> Option<Word> {
    b.label.as_ref().and_then(|l| l.result_id)
}

/// The (merge, continue) of a loop header.
fn merge_of(b: &Block) -> Option<(Word, Word)> {
    let n = b.instructions.len();
    let m = b.instructions.get(n.checked_sub(2)?)?;
    (m.class.opcode == Op::LoopMerge).then(|| Some((id_at(m, 0)?, id_at(m, 1)?)))?
}

/// The blocks a block's terminator may go to.
fn successors(b: &Block) -> Vec<Word> {
    b.instructions
        .last()
        .map_or_else(Vec::new, structure::successors)
}

fn unroll_loop(ctx: &mut Ctx, f: &mut Function, h: Word) {
    let index: HashMap<Word, usize> = f
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(n, b)| Some((label(b)?, n)))
        .collect();
    let Some(&hi) = index.get(&h) else { return };
    let Some((merge, cont)) = merge_of(&f.blocks[hi]) else {
        return;
    };
    // The loop's blocks: reachable from the header without its merge.
    let mut in_loop: HashSet<Word> = HashSet::from([h]);
    let mut stack = vec![h];
    while let Some(b) = stack.pop() {
        let Some(&bi) = index.get(&b) else { return };
        for s in successors(&f.blocks[bi]) {
            if s != merge && in_loop.insert(s) {
                stack.push(s);
            }
        }
    }
    let Some(&ci) = index.get(&cont) else { return };
    let blocks: Vec<usize> = {
        let mut v: Vec<usize> = in_loop
            .iter()
            .filter_map(|b| index.get(b).copied())
            .collect();
        v.sort_unstable();
        v
    };
    // Innermost, and small enough to repeat.
    if blocks
        .iter()
        .any(|&b| b != hi && merge_of(&f.blocks[b]).is_some())
    {
        return;
    }
    let size: usize = blocks.iter().map(|&b| f.blocks[b].instructions.len()).sum();
    let barriers = blocks
        .iter()
        .flat_map(|&b| &f.blocks[b].instructions)
        .filter(|i| i.class.opcode == Op::ControlBarrier)
        .count();
    let barrier_cap = BARRIER_BUDGET.checked_div(barriers).unwrap_or(MAX_FACTOR);
    let factor = (BUDGET / size.max(1)).min(MAX_FACTOR).min(barrier_cap);
    if factor < 2 {
        log::trace!(target: "vkcl::compiler", "loop {h} not unrolled: {size} instructions, {barriers} barriers");
        return;
    }
    // One back-edge, from the continue target, which only the body's end
    // (or, for a one-block loop, the header itself) reaches.
    let preds = |target: Word| -> Vec<Word> {
        blocks
            .iter()
            .filter(|&&b| successors(&f.blocks[b]).contains(&target))
            .filter_map(|&b| label(&f.blocks[b]))
            .collect()
    };
    if preds(h) != [cont] {
        log::trace!(target: "vkcl::compiler", "loop {h} not unrolled: more than one back-edge");
        return;
    }
    let cont_succ = successors(&f.blocks[ci]);
    if !cont_succ.iter().all(|&s| s == h || s == merge) {
        log::trace!(target: "vkcl::compiler", "loop {h} not unrolled: its continue target branches elsewhere");
        return;
    }
    if cont != h && preds(cont).len() != 1 {
        log::trace!(target: "vkcl::compiler", "loop {h} not unrolled: `continue` from within the body");
        return;
    }
    // The merge block is reached from the loop only.
    let Some(&mi) = index.get(&merge) else { return };
    let outside_preds = f
        .blocks
        .iter()
        .filter(|b| label(b).is_some_and(|l| !in_loop.contains(&l)))
        .any(|b| successors(b).contains(&merge));
    if outside_preds {
        log::trace!(target: "vkcl::compiler", "loop {h} not unrolled: its merge is reached from outside");
        return;
    }
    let defined: HashSet<Word> = blocks
        .iter()
        .flat_map(|&b| &f.blocks[b].instructions)
        .filter_map(|i| i.result_id)
        .collect();
    // The header's phis: result -> value from the back-edge.
    let header_phis: Vec<(Word, Word)> = f.blocks[hi]
        .instructions
        .iter()
        .filter(|i| i.class.opcode == Op::Phi)
        .filter_map(|i| {
            let back = i
                .operands
                .chunks_exact(2)
                .find(|p| id(&p[1]) == Some(cont))
                .and_then(|p| id(&p[0]))?;
            Some((i.result_id?, back))
        })
        .collect();
    // Loop values used after the loop, other than by the merge's phis.
    let mut escaping: Vec<Word> = Vec::new();
    for (n, b) in f.blocks.iter().enumerate() {
        if label(b).is_some_and(|l| in_loop.contains(&l)) {
            continue;
        }
        for i in &b.instructions {
            if n == mi && i.class.opcode == Op::Phi {
                continue;
            }
            for o in &i.operands {
                if let Operand::IdRef(id) = o
                    && defined.contains(id)
                    && !escaping.contains(id)
                {
                    escaping.push(*id);
                }
            }
        }
    }
    let types: HashMap<Word, Word> = blocks
        .iter()
        .flat_map(|&b| &f.blocks[b].instructions)
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    if escaping.iter().any(|v| !types.contains_key(v)) {
        log::trace!(target: "vkcl::compiler", "loop {h} not unrolled: an untyped value escapes");
        return;
    }
    log::trace!(target: "vkcl::compiler", "loop {h}: {factor} copies of {size} instructions");

    // Copies 2..=factor: an id map each (copy 1 is the original).
    let mut maps: Vec<HashMap<Word, Word>> = vec![HashMap::new()];
    let mut copies: Vec<Vec<Block>> = Vec::new();
    for k in 1..factor {
        let mut map: HashMap<Word, Word> = HashMap::new();
        for &id in defined.iter().chain(in_loop.iter()) {
            map.insert(id, ctx.fresh());
        }
        // The header's phis take the previous copy's back-edge values.
        let prev = &maps[k - 1];
        for &(phi, back) in &header_phis {
            let v = prev.get(&back).copied().unwrap_or(back);
            map.insert(phi, v);
        }
        let mut out = Vec::new();
        for &b in &blocks {
            let src = &f.blocks[b];
            let mut block = Block::new();
            block.label = src.label.as_ref().map(|l| {
                let mut l = l.clone();
                l.result_id = l.result_id.map(|r| map[&r]);
                l
            });
            for i in &src.instructions {
                let is_header = b == hi;
                if is_header && matches!(i.class.opcode, Op::Phi | Op::LoopMerge) {
                    continue;
                }
                block.instructions.push(remap(i, &map));
            }
            out.push(block);
        }
        maps.push(map);
        copies.push(out);
    }
    // Back-edges: copy k's continue target goes on to copy k+1's header;
    // the last one goes back to the loop's header.
    let last = factor - 1;
    let header_of = |k: usize| if k == 0 { h } else { maps[k][&h] };
    let retarget = |t: &mut Instruction, to: Word| {
        for o in t.operands.iter_mut() {
            if *o == Operand::IdRef(h) {
                *o = Operand::IdRef(to);
            }
        }
    };
    if let Some(t) = f.blocks[ci].instructions.last_mut() {
        retarget(t, header_of(1));
    }
    for (k, copy) in copies.iter_mut().enumerate() {
        let k = k + 1;
        let c = maps[k][&cont];
        let next = if k == last { h } else { header_of(k + 1) };
        if let Some(b) = copy.iter_mut().find(|b| label(b) == Some(c))
            && let Some(t) = b.instructions.last_mut()
        {
            // The remap pointed the back-edge at this copy's own header.
            for o in t.operands.iter_mut() {
                if *o == Operand::IdRef(maps[k][&h]) {
                    *o = Operand::IdRef(next);
                }
            }
        }
    }
    // The header: its back-edge now comes from the last copy.
    let last_cont = maps[last][&cont];
    for i in f.blocks[hi].instructions.iter_mut() {
        match i.class.opcode {
            Op::Phi => {
                for p in i.operands.chunks_exact_mut(2) {
                    if id(&p[1]) == Some(cont) {
                        let v = id(&p[0]).unwrap_or_default();
                        p[0] = Operand::IdRef(maps[last].get(&v).copied().unwrap_or(v));
                        p[1] = Operand::IdRef(last_cont);
                    }
                }
            }
            Op::LoopMerge => i.operands[1] = Operand::IdRef(last_cont),
            _ => {}
        }
    }
    // The merge's phis gain the copies' incoming values.
    for i in f.blocks[mi].instructions.iter_mut() {
        if i.class.opcode != Op::Phi {
            continue;
        }
        let pairs: Vec<(Word, Word)> = i
            .operands
            .chunks_exact(2)
            .filter_map(|p| Some((id(&p[0])?, id(&p[1])?)))
            .filter(|(_, parent)| in_loop.contains(parent))
            .collect();
        for map in &maps[1..] {
            for &(v, parent) in &pairs {
                i.operands
                    .push(Operand::IdRef(map.get(&v).copied().unwrap_or(v)));
                i.operands.push(Operand::IdRef(map[&parent]));
            }
        }
    }
    // Values used after the loop: a phi in the merge block over every exit.
    let exits: Vec<Word> = blocks
        .iter()
        .filter(|&&b| successors(&f.blocks[b]).contains(&merge))
        .filter_map(|&b| label(&f.blocks[b]))
        .collect();
    let mut replaced: HashMap<Word, Word> = HashMap::new();
    let mut new_phis = Vec::new();
    for &v in &escaping {
        let phi = ctx.fresh();
        let mut ops = Vec::new();
        for map in &maps {
            for &e in &exits {
                ops.push(Operand::IdRef(map.get(&v).copied().unwrap_or(v)));
                ops.push(Operand::IdRef(map.get(&e).copied().unwrap_or(e)));
            }
        }
        new_phis.push(Instruction::new(Op::Phi, Some(types[&v]), Some(phi), ops));
        replaced.insert(v, phi);
    }
    if !replaced.is_empty() {
        for (n, b) in f.blocks.iter_mut().enumerate() {
            if label(b).is_some_and(|l| in_loop.contains(&l)) {
                continue;
            }
            for i in b.instructions.iter_mut() {
                if n == mi && i.class.opcode == Op::Phi {
                    continue;
                }
                for o in i.operands.iter_mut() {
                    if let Operand::IdRef(id) = o
                        && let Some(&r) = replaced.get(id)
                    {
                        *id = r;
                    }
                }
            }
        }
        f.blocks[mi].instructions.splice(0..0, new_phis);
    }
    // Decorations of the copied results.
    let mut decorations = Vec::new();
    for a in &ctx.module.annotations {
        if !matches!(a.class.opcode, Op::Decorate | Op::DecorateId) {
            continue;
        }
        let Some(t) = id_at(a, 0) else { continue };
        if !defined.contains(&t) {
            continue;
        }
        for map in &maps[1..] {
            let mut d = a.clone();
            d.operands[0] = Operand::IdRef(map[&t]);
            decorations.push(d);
        }
    }
    ctx.module.annotations.extend(decorations);
    // The copies follow the loop's last block.
    let at = blocks.iter().max().copied().unwrap_or(hi) + 1;
    let added: Vec<Block> = copies.into_iter().flatten().collect();
    f.blocks.splice(at..at, added);
}

/// `i` with its result and the ids it uses renamed by `map`.
fn remap(i: &Instruction, map: &HashMap<Word, Word>) -> Instruction {
    let mut i = i.clone();
    i.result_id = i.result_id.map(|r| map.get(&r).copied().unwrap_or(r));
    for o in i.operands.iter_mut() {
        if let Operand::IdRef(id) = o
            && let Some(&m) = map.get(id)
        {
            *id = m;
        }
    }
    i
}
