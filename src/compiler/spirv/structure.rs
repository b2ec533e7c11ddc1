//! Pass 3b: structured control flow. Vulkan requires every conditional
//! branch and loop to declare its merge (OpSelectionMerge, OpLoopMerge);
//! OpenCL SPIR-V has none (merges already present in IL are recomputed).
//! The pass first brings the control flow into a shape that has merges,
//! then declares them:
//! 1. every return goes through one return block, so early returns become
//!    ordinary exits;
//! 2. a loop with several back edges gets one latch block that they all
//!    branch to (the continue target);
//! 3. a loop with several exit targets (break, return or goto out of it)
//!    gets one exit block: each exiting block records which target it
//!    meant in a selector (a phi), and the exit block branches on it;
//! 4. every loop's exit becomes a block of its own (its merge block);
//! 5. a conditional branch inside a loop that breaks or continues needs no
//!    merge; any other one merges at its immediate post-dominator within
//!    its innermost loop (edges leaving the loop count as leaving the
//!    region); selections that would share a merge block get one each,
//!    after copying for them the small blocks that short-circuit
//!    conditions share.
//!
//! Blocks are finally laid out in reverse post-order. Irreducible control
//! flow (which OpenCL C cannot produce without goto into loops) and other
//! shapes these steps do not cover are reported by name.

use std::collections::{HashMap, HashSet};

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{LoopControl, Op, SelectionControl, Word};

use crate::compiler::spirv::ctx::{Ctx, id_at};

fn successors(term: &Instruction) -> Vec<Word> {
    match term.class.opcode {
        Op::Branch => id_at(term, 0).into_iter().collect(),
        Op::BranchConditional => [id_at(term, 1), id_at(term, 2)]
            .into_iter()
            .flatten()
            .collect(),
        Op::Switch => {
            let mut s: Vec<Word> = id_at(term, 1).into_iter().collect();
            s.extend(
                term.operands
                    .iter()
                    .skip(2)
                    .skip(1)
                    .step_by(2)
                    .filter_map(|o| match o {
                        Operand::IdRef(id) => Some(*id),
                        _ => None,
                    }),
            );
            s
        }
        _ => Vec::new(),
    }
}

/// Immediate dominators over `n` nodes in reverse post-order `order`.
fn idoms(n: usize, preds: &[Vec<usize>], order: &[usize]) -> Vec<Option<usize>> {
    let mut rpo_index = vec![usize::MAX; n];
    for (i, &b) in order.iter().enumerate() {
        rpo_index[b] = i;
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    let start = order[0];
    idom[start] = Some(start);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &order[1..] {
            let mut new: Option<usize> = None;
            for &p in &preds[b] {
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while rpo_index[a] > rpo_index[c] {
                                a = idom[a].expect("processed");
                            }
                            while rpo_index[c] > rpo_index[a] {
                                c = idom[c].expect("processed");
                            }
                        }
                        a
                    }
                });
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

fn rpo(n: usize, succ: &[Vec<usize>], start: usize) -> Vec<usize> {
    let mut seen = vec![false; n];
    let mut post = Vec::new();
    let mut stack = vec![(start, 0usize)];
    seen[start] = true;
    while let Some((b, i)) = stack.pop() {
        if i < succ[b].len() {
            stack.push((b, i + 1));
            let s = succ[b][i];
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
        }
    }
    post.reverse();
    post
}

fn dominates(idom: &[Option<usize>], a: usize, mut b: usize) -> bool {
    loop {
        if a == b {
            return true;
        }
        match idom[b] {
            Some(p) if p != b => b = p,
            _ => return false,
        }
    }
}

struct Cfg {
    succ: Vec<Vec<usize>>,
    preds: Vec<Vec<usize>>,
    order: Vec<usize>,
    idom: Vec<Option<usize>>,
}

fn analyze(f: &rspirv::dr::Function) -> Cfg {
    let n = f.blocks.len();
    let index: HashMap<Word, usize> = f
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((b.label_id()?, i)))
        .collect();
    let succ: Vec<Vec<usize>> = f
        .blocks
        .iter()
        .map(|b| {
            b.instructions
                .last()
                .map(successors)
                .unwrap_or_default()
                .iter()
                .filter_map(|s| index.get(s).copied())
                .collect()
        })
        .collect();
    let mut preds = vec![Vec::new(); n];
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss {
            if !preds[s].contains(&b) {
                preds[s].push(b);
            }
        }
    }
    let order = rpo(n, &succ, 0);
    let idom = idoms(n, &preds, &order);
    Cfg {
        succ,
        preds,
        order,
        idom,
    }
}

/// A natural loop: header, the blocks with back edges to it, and its body.
struct Loop {
    header: usize,
    latches: Vec<usize>,
    body: HashSet<usize>,
}

fn loops(cfg: &Cfg) -> Vec<Loop> {
    let mut out = Vec::new();
    for &h in &cfg.order {
        let latches: Vec<usize> = cfg.preds[h]
            .iter()
            .copied()
            .filter(|&p| dominates(&cfg.idom, h, p))
            .collect();
        if latches.is_empty() {
            continue;
        }
        let mut body: HashSet<usize> = HashSet::from([h]);
        let mut todo = latches.clone();
        while let Some(b) = todo.pop() {
            if body.insert(b) {
                todo.extend(cfg.preds[b].iter().copied());
            }
        }
        out.push(Loop {
            header: h,
            latches,
            body,
        });
    }
    out
}

/// The edges leaving a loop: (from, to).
fn exit_edges(cfg: &Cfg, l: &Loop) -> Vec<(usize, usize)> {
    let mut edges = Vec::new();
    for &b in &l.body {
        for &s in &cfg.succ[b] {
            if !l.body.contains(&s) && !edges.contains(&(b, s)) {
                edges.push((b, s));
            }
        }
    }
    edges.sort_unstable();
    edges
}

/// Whether a loop's exit is already a block of its own: only the loop
/// reaches it, and it holds nothing but phis and a branch.
fn has_dedicated_exit(f: &rspirv::dr::Function, cfg: &Cfg, l: &Loop, m: usize) -> bool {
    cfg.preds[m].iter().all(|p| l.body.contains(p))
        && f.blocks[m]
            .instructions
            .iter()
            .all(|i| matches!(i.class.opcode, Op::Phi | Op::Branch))
        && f.blocks[m]
            .instructions
            .last()
            .is_some_and(|i| i.class.opcode == Op::Branch)
}

/// Sends every edge from `body` to `target` through a new empty block,
/// which takes over the phi entries of those edges.
fn dedicate(
    ctx: &mut Ctx,
    fi: usize,
    cfg: &Cfg,
    body: &HashSet<usize>,
    target: usize,
) -> Result<(), String> {
    let new_label = ctx.fresh();
    let f = &mut ctx.module.functions[fi];
    let target_label = f.blocks[target].label_id().ok_or("labels")?;
    let exiting: Vec<Word> = body
        .iter()
        .filter(|&&b| cfg.succ[b].contains(&target))
        .map(|&b| f.blocks[b].label_id().expect("labels"))
        .collect();
    // Redirect the exit edges.
    for &b in body {
        if let Some(t) = f.blocks[b].instructions.last_mut() {
            for o in &mut t.operands {
                if *o == Operand::IdRef(target_label) {
                    *o = Operand::IdRef(new_label);
                }
            }
        }
    }
    // Move the phi entries of the exiting edges into the new block.
    let mut new_block = rspirv::dr::Block::new();
    new_block.label = Some(Instruction::new(Op::Label, None, Some(new_label), vec![]));
    let mut forwarded = Vec::new();
    for phi in f.blocks[target]
        .instructions
        .iter_mut()
        .filter(|i| i.class.opcode == Op::Phi)
    {
        let mut keep = Vec::new();
        let mut moved = Vec::new();
        for pair in phi.operands.chunks(2) {
            match pair[1] {
                Operand::IdRef(p) if exiting.contains(&p) => moved.extend_from_slice(pair),
                _ => keep.extend_from_slice(pair),
            }
        }
        if moved.is_empty() {
            continue;
        }
        forwarded.push((phi.result_type, moved));
        phi.operands = keep;
        phi.operands.push(Operand::IdRef(0));
        phi.operands.push(Operand::IdRef(new_label));
    }
    let mut ids = Vec::new();
    for (ty, moved) in forwarded {
        let id = ctx.fresh();
        new_block
            .instructions
            .push(Instruction::new(Op::Phi, ty, Some(id), moved));
        ids.push(id);
    }
    let f = &mut ctx.module.functions[fi];
    let mut k = 0;
    for phi in f.blocks[target]
        .instructions
        .iter_mut()
        .filter(|i| i.class.opcode == Op::Phi)
    {
        let n = phi.operands.len();
        if n >= 2
            && phi.operands[n - 1] == Operand::IdRef(new_label)
            && phi.operands[n - 2] == Operand::IdRef(0)
        {
            phi.operands[n - 2] = Operand::IdRef(ids[k]);
            k += 1;
        }
    }
    new_block.instructions.push(Instruction::new(
        Op::Branch,
        None,
        None,
        vec![Operand::IdRef(target_label)],
    ));
    f.blocks.push(new_block);
    Ok(())
}

/// Merges written in the input (IL programs may have them) are dropped:
/// the pass decides them anew.
fn strip_merges(f: &mut rspirv::dr::Function) {
    for b in &mut f.blocks {
        b.instructions
            .retain(|i| !matches!(i.class.opcode, Op::LoopMerge | Op::SelectionMerge));
    }
}

/// Step 1: one return block for the function.
fn unify_returns(ctx: &mut Ctx, fi: usize) -> Result<(), String> {
    let f = &ctx.module.functions[fi];
    if f.blocks.iter().any(|b| {
        b.instructions
            .last()
            .is_some_and(|t| t.class.opcode == Op::ReturnValue)
    }) {
        return Err("a function returning a value at the top level is not supported".into());
    }
    let returning: Vec<usize> = (0..f.blocks.len())
        .filter(|&b| {
            f.blocks[b]
                .instructions
                .last()
                .is_some_and(|t| t.class.opcode == Op::Return)
        })
        .collect();
    if returning.len() < 2 {
        return Ok(());
    }
    let label = ctx.fresh();
    let f = &mut ctx.module.functions[fi];
    for b in returning {
        let last = f.blocks[b].instructions.len() - 1;
        f.blocks[b].instructions[last] =
            Instruction::new(Op::Branch, None, None, vec![Operand::IdRef(label)]);
    }
    let mut ret = rspirv::dr::Block::new();
    ret.label = Some(Instruction::new(Op::Label, None, Some(label), vec![]));
    ret.instructions
        .push(Instruction::new(Op::Return, None, None, vec![]));
    f.blocks.push(ret);
    Ok(())
}

/// Steps 2 to 4, one change at a time until every loop has one latch and
/// one dedicated exit block.
fn normalize_loops(ctx: &mut Ctx, fi: usize) -> Result<(), String> {
    let limit = 4 * ctx.module.functions[fi].blocks.len() + 16;
    for _ in 0..limit {
        let cfg = analyze(&ctx.module.functions[fi]);
        let mut changed = false;
        for l in loops(&cfg) {
            if l.latches.len() > 1 {
                let latches: HashSet<usize> = l.latches.iter().copied().collect();
                dedicate(ctx, fi, &cfg, &latches, l.header)?;
                changed = true;
                break;
            }
            let exits = exit_edges(&cfg, &l);
            let mut targets: Vec<usize> = exits.iter().map(|&(_, t)| t).collect();
            targets.sort_unstable();
            targets.dedup();
            // A header that branches two ways inside the loop cannot also
            // be that selection's header: its work moves to a block of its own.
            if cfg.succ[l.header].len() > 1 && cfg.succ[l.header].iter().all(|s| l.body.contains(s))
            {
                split_header(ctx, fi, l.header);
                changed = true;
                break;
            }
            match targets.len() {
                0 => return Err("a loop without exit is not supported".into()),
                1 => {
                    if !has_dedicated_exit(&ctx.module.functions[fi], &cfg, &l, targets[0]) {
                        dedicate(ctx, fi, &cfg, &l.body, targets[0])?;
                        changed = true;
                        break;
                    }
                }
                _ => {
                    dispatch_exits(ctx, fi, &cfg, &l, &exits, &targets)?;
                    changed = true;
                    break;
                }
            }
        }
        if !changed {
            return Ok(());
        }
    }
    Err("loops too complex to structure".into())
}

/// Gives the edges from `from` into block `b` (which only branches to `m`)
/// a copy of `b`; values `b` defines may only be used by phis of `m`,
/// which get entries for the copy.
fn duplicate_for(
    ctx: &mut Ctx,
    fi: usize,
    cfg: &Cfg,
    from: &HashSet<usize>,
    b: usize,
    m: usize,
) -> Result<(), String> {
    let f = &ctx.module.functions[fi];
    let original = f.blocks[b].clone();
    if original
        .instructions
        .iter()
        .any(|i| i.class.opcode == Op::Phi)
    {
        return Err("selections sharing a merge block in this shape are not supported yet".into());
    }
    let defined: HashSet<Word> = original
        .instructions
        .iter()
        .filter_map(|i| i.result_id)
        .collect();
    let used_elsewhere = f.blocks.iter().enumerate().any(|(n, blk)| {
        blk.instructions.iter().any(|i| {
            let in_m_phi = n == m && i.class.opcode == Op::Phi;
            n != b
                && !in_m_phi
                && crate::compiler::spirv::ctx::ids_used(i).any(|x| defined.contains(&x))
        })
    });
    if used_elsewhere {
        return Err("selections sharing a merge block in this shape are not supported yet".into());
    }
    let mut map: HashMap<Word, Word> = HashMap::new();
    for &d in &defined {
        map.insert(d, ctx.fresh());
    }
    let new_label = ctx.fresh();
    let old_label = original.label_id().ok_or("labels")?;
    let mut copy = original.clone();
    copy.label = Some(Instruction::new(Op::Label, None, Some(new_label), vec![]));
    for i in &mut copy.instructions {
        if let Some(r) = i.result_id.as_mut() {
            *r = map[r];
        }
        for o in &mut i.operands {
            if let Operand::IdRef(x) = o {
                if let Some(n) = map.get(x) {
                    *x = *n;
                }
            }
        }
    }
    let f = &mut ctx.module.functions[fi];
    for &p in from {
        if !cfg.succ[p].contains(&b) {
            continue;
        }
        if let Some(t) = f.blocks[p].instructions.last_mut() {
            for o in &mut t.operands {
                if *o == Operand::IdRef(old_label) {
                    *o = Operand::IdRef(new_label);
                }
            }
        }
    }
    for phi in f.blocks[m]
        .instructions
        .iter_mut()
        .filter(|i| i.class.opcode == Op::Phi)
    {
        let extra: Vec<Operand> = phi
            .operands
            .chunks(2)
            .filter(|pair| pair[1] == Operand::IdRef(old_label))
            .flat_map(|pair| {
                let v = match pair[0] {
                    Operand::IdRef(x) => Operand::IdRef(*map.get(&x).unwrap_or(&x)),
                    ref other => other.clone(),
                };
                [v, Operand::IdRef(new_label)]
            })
            .collect();
        phi.operands.extend(extra);
    }
    f.blocks.push(copy);
    Ok(())
}

/// Moves everything but the phis of block `b` into a new block that `b`
/// branches to; successors' phis then enter from the new block.
fn split_header(ctx: &mut Ctx, fi: usize, b: usize) {
    let label = ctx.fresh();
    let f = &mut ctx.module.functions[fi];
    let old_label = f.blocks[b].label_id().expect("labels");
    let phis = f.blocks[b]
        .instructions
        .iter()
        .take_while(|i| i.class.opcode == Op::Phi)
        .count();
    let moved = f.blocks[b].instructions.split_off(phis);
    f.blocks[b].instructions.push(Instruction::new(
        Op::Branch,
        None,
        None,
        vec![Operand::IdRef(label)],
    ));
    let successors: Vec<Word> = moved.last().map(successors).unwrap_or_default();
    for blk in &mut f.blocks {
        if !blk.label_id().is_some_and(|l| successors.contains(&l)) {
            continue;
        }
        for p in blk
            .instructions
            .iter_mut()
            .filter(|p| p.class.opcode == Op::Phi)
        {
            for o in p.operands.iter_mut().skip(1).step_by(2) {
                if *o == Operand::IdRef(old_label) {
                    *o = Operand::IdRef(label);
                }
            }
        }
    }
    let mut nb = rspirv::dr::Block::new();
    nb.label = Some(Instruction::new(Op::Label, None, Some(label), vec![]));
    nb.instructions = moved;
    f.blocks.push(nb);
}

/// Step 3: the loop's exits all go to one new block, which branches to
/// the exit each exiting block meant, chosen by a selector phi. Phis of
/// the targets take their values through phis of the new block.
fn dispatch_exits(
    ctx: &mut Ctx,
    fi: usize,
    cfg: &Cfg,
    l: &Loop,
    exits: &[(usize, usize)],
    targets: &[usize],
) -> Result<(), String> {
    let u32t = ctx.uint(32);
    let bool_ty = ctx.ty(Op::TypeBool, vec![]);
    let selector_values: Vec<Word> = (0..targets.len())
        .map(|j| ctx.const_u32(j as u32))
        .collect();
    let exit_label = ctx.fresh();
    let labels: Vec<Word> = {
        let f = &ctx.module.functions[fi];
        (0..f.blocks.len())
            .map(|b| f.blocks[b].label_id().expect("labels"))
            .collect()
    };
    let target_index = |t: usize| targets.iter().position(|&x| x == t).expect("a target");
    let mut exiting: Vec<usize> = exits.iter().map(|&(x, _)| x).collect();
    exiting.dedup();
    // Selector entries and, per exiting block, its meaning of each target.
    let mut selector_entries: Vec<Operand> = Vec::new();
    for &x in &exiting {
        let outs: Vec<usize> = cfg.succ[x]
            .iter()
            .copied()
            .filter(|s| !l.body.contains(s))
            .collect();
        let term = ctx.module.functions[fi].blocks[x]
            .instructions
            .last()
            .cloned()
            .ok_or("block without terminator")?;
        let value = match (term.class.opcode, outs.as_slice()) {
            (_, [t]) => {
                // One exit target: those edges now go to the new block.
                let f = &mut ctx.module.functions[fi];
                let t_label = labels[*t];
                if let Some(last) = f.blocks[x].instructions.last_mut() {
                    for o in &mut last.operands {
                        if *o == Operand::IdRef(t_label) {
                            *o = Operand::IdRef(exit_label);
                        }
                    }
                }
                selector_values[target_index(*t)]
            }
            (Op::BranchConditional, [a, b]) => {
                // Both ways out: the condition picks the selector value.
                let cond = id_at(&term, 0).ok_or("malformed branch")?;
                let (ta, tb) = (
                    id_at(&term, 1).ok_or("malformed branch")?,
                    id_at(&term, 2).ok_or("malformed branch")?,
                );
                let (ja, jb) = if labels[*a] == ta && labels[*b] == tb {
                    (target_index(*a), target_index(*b))
                } else {
                    (target_index(*b), target_index(*a))
                };
                let sel = ctx.fresh();
                let f = &mut ctx.module.functions[fi];
                let ins = &mut f.blocks[x].instructions;
                let at = ins.len() - 1;
                ins.insert(
                    at,
                    Instruction::new(
                        Op::Select,
                        Some(u32t),
                        Some(sel),
                        vec![
                            Operand::IdRef(cond),
                            Operand::IdRef(selector_values[ja]),
                            Operand::IdRef(selector_values[jb]),
                        ],
                    ),
                );
                let last = ins.len() - 1;
                ins[last] =
                    Instruction::new(Op::Branch, None, None, vec![Operand::IdRef(exit_label)]);
                sel
            }
            _ => return Err("a block leaving a loop several ways is not supported yet".into()),
        };
        selector_entries.push(Operand::IdRef(value));
        selector_entries.push(Operand::IdRef(labels[x]));
    }
    // The chain of tests on the selector: block j branches to target j or
    // to the next test; the last test chooses between the last two.
    let k = targets.len();
    let chain: Vec<Word> = std::iter::once(exit_label)
        .chain((1..k - 1).map(|_| ctx.fresh()))
        .collect();
    let pred_of = |j: usize| chain[j.min(k - 2)];
    // Phis of the targets: their entries from the loop move to phis of the
    // new block, entering from the test that branches to them.
    let mut exit_block = rspirv::dr::Block::new();
    exit_block.label = Some(Instruction::new(Op::Label, None, Some(exit_label), vec![]));
    let selector = ctx.fresh();
    exit_block.instructions.push(Instruction::new(
        Op::Phi,
        Some(u32t),
        Some(selector),
        selector_entries,
    ));
    let exiting_labels: Vec<Word> = exiting.iter().map(|&x| labels[x]).collect();
    for (j, &t) in targets.iter().enumerate() {
        let phis: Vec<usize> = ctx.module.functions[fi].blocks[t]
            .instructions
            .iter()
            .enumerate()
            .filter(|(_, i)| i.class.opcode == Op::Phi)
            .map(|(n, _)| n)
            .collect();
        for n in phis {
            let phi = ctx.module.functions[fi].blocks[t].instructions[n].clone();
            let ty = phi.result_type.ok_or("phi without type")?;
            let mut from_loop: HashMap<Word, Operand> = HashMap::new();
            let mut keep = Vec::new();
            for pair in phi.operands.chunks(2) {
                match pair[1] {
                    Operand::IdRef(p) if exiting_labels.contains(&p) => {
                        from_loop.insert(p, pair[0].clone());
                    }
                    _ => keep.extend_from_slice(pair),
                }
            }
            if from_loop.is_empty() {
                continue;
            }
            let undef = undef_of(ctx, ty);
            let mut entries = Vec::new();
            for &x in &exiting_labels {
                entries.push(from_loop.get(&x).cloned().unwrap_or(Operand::IdRef(undef)));
                entries.push(Operand::IdRef(x));
            }
            let forwarded = ctx.fresh();
            exit_block.instructions.push(Instruction::new(
                Op::Phi,
                Some(ty),
                Some(forwarded),
                entries,
            ));
            keep.push(Operand::IdRef(forwarded));
            keep.push(Operand::IdRef(pred_of(j)));
            ctx.module.functions[fi].blocks[t].instructions[n].operands = keep;
        }
    }
    let mut tests = vec![exit_block];
    for &label in &chain[1..] {
        let mut b = rspirv::dr::Block::new();
        b.label = Some(Instruction::new(Op::Label, None, Some(label), vec![]));
        tests.push(b);
    }
    for (j, block) in tests.iter_mut().enumerate() {
        let hit = ctx.fresh();
        block.instructions.push(Instruction::new(
            Op::IEqual,
            Some(bool_ty),
            Some(hit),
            vec![Operand::IdRef(selector), Operand::IdRef(selector_values[j])],
        ));
        let otherwise = if j + 1 < chain.len() {
            chain[j + 1]
        } else {
            labels[targets[k - 1]]
        };
        block.instructions.push(Instruction::new(
            Op::BranchConditional,
            None,
            None,
            vec![
                Operand::IdRef(hit),
                Operand::IdRef(labels[targets[j]]),
                Operand::IdRef(otherwise),
            ],
        ));
    }
    ctx.module.functions[fi].blocks.extend(tests);
    Ok(())
}

/// A module-scope OpUndef of type `ty`.
fn undef_of(ctx: &mut Ctx, ty: Word) -> Word {
    if let Some(id) = ctx.module.types_global_values.iter().find_map(|i| {
        (i.class.opcode == Op::Undef && i.result_type == Some(ty))
            .then_some(i.result_id)
            .flatten()
    }) {
        return id;
    }
    let id = ctx.fresh();
    ctx.module
        .types_global_values
        .push(Instruction::new(Op::Undef, Some(ty), Some(id), vec![]));
    id
}

/// The innermost loop holding block `b` (a loop's header belongs to it).
fn innermost(ls: &[Loop], b: usize) -> Option<&Loop> {
    ls.iter()
        .filter(|l| l.body.contains(&b))
        .min_by_key(|l| l.body.len())
}

/// Immediate post-dominators within a loop's body (or the whole function
/// when `l` is None). Breaks (edges to the loop's merge) end their paths:
/// a selection merges where its paths that stay in the loop meet. Back
/// edges go to the virtual exit `n`.
fn region_post_dominators(
    cfg: &Cfg,
    region: &HashSet<usize>,
    l: Option<(usize, Option<usize>)>,
) -> Vec<Option<usize>> {
    let n = cfg.succ.len();
    let exit = n;
    let (header, merge) = match l {
        Some((h, m)) => (Some(h), m),
        None => (None, None),
    };
    let mut rsucc = vec![Vec::new(); n + 1];
    let mut rpreds = vec![Vec::new(); n + 1];
    for &b in region {
        let mut leaves = cfg.succ[b].is_empty();
        for &s in &cfg.succ[b] {
            if Some(s) == merge {
                continue;
            }
            if region.contains(&s) && Some(s) != header {
                rsucc[s].push(b);
                rpreds[b].push(s);
            } else {
                leaves = true;
            }
        }
        if leaves {
            rsucc[exit].push(b);
            rpreds[b].push(exit);
        }
    }
    let rorder = rpo(n + 1, &rsucc, exit);
    idoms(n + 1, &rpreds, &rorder)
}

/// Step 5: the merge block of each selection header (None: a conditional
/// break or continue, which needs none). Selections that would share a
/// merge block, or merge at a continue target, get a new one first.
fn selection_merges(ctx: &mut Ctx, fi: usize) -> Result<HashMap<usize, usize>, String> {
    let limit = 4 * ctx.module.functions[fi].blocks.len() + 16;
    // A fix that leaves the same selection wanting the same merge block
    // makes no progress.
    let mut repeats: Option<((usize, usize), usize)> = None;
    for _ in 0..limit {
        let f = &ctx.module.functions[fi];
        let cfg = analyze(f);
        let ls = loops(&cfg);
        let all: HashSet<usize> = cfg.order.iter().copied().collect();
        let headers: HashSet<usize> = ls.iter().map(|l| l.header).collect();
        let mut merges: HashMap<usize, usize> = HashMap::new();
        // Merge blocks of loops and their continue targets are taken.
        let mut taken: HashMap<usize, usize> = HashMap::new();
        let mut continues: HashSet<usize> = HashSet::new();
        for l in &ls {
            let exits = exit_edges(&cfg, l);
            if let Some(&(_, m)) = exits.first() {
                taken.insert(m, l.header);
            }
            continues.extend(l.latches.iter().copied());
        }
        let mut fix: Option<(usize, usize)> = None;
        for &x in &cfg.order {
            let Some(term) = f.blocks[x].instructions.last() else {
                continue;
            };
            let branching = match term.class.opcode {
                Op::BranchConditional => id_at(term, 1) != id_at(term, 2),
                Op::Switch => cfg.succ[x].len() > 1,
                _ => false,
            };
            if !branching || headers.contains(&x) {
                continue;
            }
            let inner = innermost(&ls, x);
            if let Some(l) = inner {
                let merge = exit_edges(&cfg, l).first().map(|&(_, m)| m);
                let breaks = cfg.succ[x]
                    .iter()
                    .any(|s| Some(*s) == merge || l.latches.contains(s) || *s == l.header);
                if term.class.opcode == Op::BranchConditional && (breaks || l.latches.contains(&x))
                {
                    continue;
                }
            }
            let (region, shape) = match inner {
                Some(l) => (
                    &l.body,
                    Some((l.header, exit_edges(&cfg, l).first().map(|&(_, m)| m))),
                ),
                None => (&all, None),
            };
            let ipdom = region_post_dominators(&cfg, region, shape);
            let m = match (ipdom[x], inner) {
                (Some(m), _) if m < f.blocks.len() => m,
                // The paths meet only at the back edge: at the latch.
                (Some(_), Some(l)) => l.latches[0],
                // Every path breaks: they meet at the loop's merge.
                (None, Some(l)) => exit_edges(&cfg, l)
                    .first()
                    .map(|&(_, m)| m)
                    .ok_or("a loop without exit")?,
                _ => return Err("a branch whose paths never meet is not supported yet".into()),
            };
            if continues.contains(&m) || taken.contains_key(&m) {
                fix = Some((x, m));
                break;
            }
            taken.insert(m, x);
            merges.insert(x, m);
        }
        let Some((x, m)) = fix else {
            return Ok(merges);
        };
        repeats = match repeats {
            Some((key, n)) if key == (x, m) => Some((key, n + 1)),
            _ => Some(((x, m), 1)),
        };
        if repeats.is_some_and(|(_, n)| n > 4) {
            return Err(
                "selections sharing a merge block in this shape are not supported yet".into(),
            );
        }
        log::trace!(target: "vkcl::compiler", "structure: selection at block {x} needs its own merge instead of {m} (succ {:?}, preds of m {:?})", cfg.succ[x], cfg.preds[m]);
        // A merge block of its own for the selection at x: the edges from
        // what x dominates into m go through a new block. Short-circuit
        // conditions (a && b || c) reach m through a block that another
        // selection shares; x gets its own copy of that block first.
        let body: HashSet<usize> = (0..f.blocks.len())
            .filter(|&b| b != m && dominates(&cfg.idom, x, b))
            .collect();
        let shared: Vec<usize> = body
            .iter()
            .flat_map(|&b| cfg.succ[b].iter().copied())
            .filter(|&s| s != m && !body.contains(&s) && cfg.succ[s] == [m])
            .collect();
        if let Some(&b) = shared.first() {
            duplicate_for(ctx, fi, &cfg, &body, b, m)?;
            continue;
        }
        if !body.iter().any(|&b| cfg.succ[b].contains(&m)) {
            return Err(
                "selections sharing a merge block in this shape are not supported yet".into(),
            );
        }
        dedicate(ctx, fi, &cfg, &body, m)?;
    }
    Err("selections too complex to structure".into())
}

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    for fi in 0..ctx.module.functions.len() {
        strip_merges(&mut ctx.module.functions[fi]);
        unify_returns(ctx, fi)?;
        normalize_loops(ctx, fi)?;
        let merges = selection_merges(ctx, fi)?;
        let f = &mut ctx.module.functions[fi];
        let cfg = analyze(f);
        let label = |f: &rspirv::dr::Function, i: usize| f.blocks[i].label_id().expect("labels");
        let mut inserts: Vec<(usize, Instruction)> = Vec::new();
        for l in loops(&cfg) {
            let merge = exit_edges(&cfg, &l)
                .first()
                .map(|&(_, m)| m)
                .ok_or("a loop without exit is not supported")?;
            let latch = *l.latches.first().ok_or("a loop without latch")?;
            inserts.push((
                l.header,
                Instruction::new(
                    Op::LoopMerge,
                    None,
                    None,
                    vec![
                        Operand::IdRef(label(f, merge)),
                        Operand::IdRef(label(f, latch)),
                        Operand::LoopControl(LoopControl::NONE),
                    ],
                ),
            ));
        }
        for (x, m) in merges {
            inserts.push((
                x,
                Instruction::new(
                    Op::SelectionMerge,
                    None,
                    None,
                    vec![
                        Operand::IdRef(label(f, m)),
                        Operand::SelectionControl(SelectionControl::NONE),
                    ],
                ),
            ));
        }
        for (b, m) in inserts {
            let ins = &mut f.blocks[b].instructions;
            let at = ins.len() - 1;
            ins.insert(at, m);
        }
        // Blocks in reverse post-order: dominators before what they dominate.
        let mut blocks: Vec<Option<rspirv::dr::Block>> = std::mem::take(&mut f.blocks)
            .into_iter()
            .map(Some)
            .collect();
        f.blocks = cfg
            .order
            .iter()
            .map(|&b| blocks[b].take().expect("each once"))
            .collect();
    }
    Ok(())
}
