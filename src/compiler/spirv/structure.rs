//! Pass 3b: structured control flow. Vulkan requires every conditional
//! branch and loop to declare its merge (OpSelectionMerge, OpLoopMerge);
//! OpenCL SPIR-V has none. This pass adds them where the control flow
//! already has the structured shape clang's optimised output usually has:
//! loops with one back edge and one exit, selections that rejoin at their
//! immediate post-dominator. Other shapes are reported (restructuring
//! them is still to come).

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

/// A loop: header, its one latch, and its body.
struct Loop {
    header: usize,
    latch: usize,
    body: HashSet<usize>,
}

fn loops(cfg: &Cfg) -> Result<Vec<Loop>, String> {
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
        if latches.len() > 1 {
            return Err("a loop with several back edges is not supported yet".into());
        }
        let mut body: HashSet<usize> = HashSet::from([h]);
        let mut todo = vec![latches[0]];
        while let Some(b) = todo.pop() {
            if body.insert(b) {
                todo.extend(cfg.preds[b].iter().copied());
            }
        }
        out.push(Loop {
            header: h,
            latch: latches[0],
            body,
        });
    }
    Ok(out)
}

/// The one block a loop exits to.
fn exit_of(cfg: &Cfg, l: &Loop) -> Result<usize, String> {
    let exits: HashSet<usize> = l
        .body
        .iter()
        .flat_map(|&b| cfg.succ[b].iter().copied())
        .filter(|s| !l.body.contains(s))
        .collect();
    if exits.len() != 1 {
        return Err(format!(
            "a loop with {} exits is not supported yet",
            exits.len()
        ));
    }
    Ok(*exits.iter().next().expect("one exit"))
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

/// Gives every loop a merge block of its own: an empty block between the
/// loop and where it exits to, so no loop shares its merge with another
/// construct. Phis at the exit target move to the new block.
fn dedicated_loop_exits(ctx: &mut Ctx, fi: usize) -> Result<(), String> {
    loop {
        let cfg = analyze(&ctx.module.functions[fi]);
        let mut next = None;
        for l in loops(&cfg)? {
            let m = exit_of(&cfg, &l)?;
            if !has_dedicated_exit(&ctx.module.functions[fi], &cfg, &l, m) {
                next = Some((l, m));
                break;
            }
        }
        let Some((l, target)) = next else {
            return Ok(());
        };
        dedicate(ctx, fi, &cfg, &l.body, target)?;
    }
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

/// Post-dominator tree of a CFG (index `n` is the virtual exit).
fn post_dominators(cfg: &Cfg) -> Vec<Option<usize>> {
    let n = cfg.succ.len();
    let exit = n;
    let mut rsucc = vec![Vec::new(); n + 1];
    let mut rpreds = vec![Vec::new(); n + 1];
    for (b, succ) in cfg.succ.iter().enumerate() {
        if succ.is_empty() {
            rsucc[exit].push(b);
            rpreds[b].push(exit);
        }
        for &s in succ {
            rsucc[s].push(b);
            rpreds[b].push(s);
        }
    }
    let rorder = rpo(n + 1, &rsucc, exit);
    idoms(n + 1, &rpreds, &rorder)
}

/// Selections that would share a merge block with an enclosing one get a
/// merge block of their own (the innermost first).
fn dedicated_selection_merges(ctx: &mut Ctx, fi: usize) -> Result<(), String> {
    let limit = ctx.module.functions[fi].blocks.len();
    let mut last: Option<(usize, usize, usize)> = None;
    for _ in 0..=limit {
        let f = &ctx.module.functions[fi];
        let cfg = analyze(f);
        let ipdom = post_dominators(&cfg);
        let loop_blocks: HashSet<usize> = loops(&cfg)?
            .iter()
            .flat_map(|l| [l.header, l.latch])
            .collect();
        let mut by_merge: HashMap<usize, Vec<usize>> = HashMap::new();
        for (b, blk) in f.blocks.iter().enumerate() {
            let Some(term) = blk.instructions.last() else {
                continue;
            };
            let two_way = match term.class.opcode {
                Op::BranchConditional => id_at(term, 1) != id_at(term, 2),
                Op::Switch => true,
                _ => false,
            };
            if !two_way || loop_blocks.contains(&b) || cfg.idom[b].is_none() {
                continue;
            }
            if let Some(m) = ipdom[b].filter(|&m| m < f.blocks.len()) {
                by_merge.entry(m).or_default().push(b);
            }
        }
        let shared = by_merge.into_iter().find(|(_, hs)| hs.len() > 1);
        let Some((target, headers)) = shared else {
            return Ok(());
        };
        // The innermost: a header no other one of the group sits below.
        let inner = *headers
            .iter()
            .find(|&&h| {
                !headers
                    .iter()
                    .any(|&o| o != h && dominates(&cfg.idom, h, o))
            })
            .ok_or("selections sharing a merge block in an unexpected shape")?;
        let body: HashSet<usize> = (0..f.blocks.len())
            .filter(|&b| dominates(&cfg.idom, inner, b) && b != target)
            .collect();
        // The same sharing again after a fix means the fix did not apply.
        let key = (inner, target, headers.len());
        if last == Some(key) {
            return Err(
                "selections sharing a merge block in this shape are not supported yet".into(),
            );
        }
        last = Some(key);
        dedicate(ctx, fi, &cfg, &body, target)?;
    }
    Err("control flow too complex to structure".into())
}

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    for fi in 0..ctx.module.functions.len() {
        dedicated_loop_exits(ctx, fi)?;
        dedicated_selection_merges(ctx, fi)?;
    }
    for f in &mut ctx.module.functions {
        let n = f.blocks.len();
        let cfg = analyze(f);
        let (succ, order) = (&cfg.succ, &cfg.order);
        let exit = n;
        let ipdom = post_dominators(&cfg);
        let label = |i: usize| f.blocks[i].label_id().expect("labels");
        let mut merges: HashMap<usize, Instruction> = HashMap::new();
        let mut latches: HashSet<usize> = HashSet::new();
        let mut used_merges: HashSet<usize> = HashSet::new();
        for l in loops(&cfg)? {
            let exits: HashSet<usize> = l
                .body
                .iter()
                .flat_map(|&b| succ[b].iter().copied())
                .filter(|s| !l.body.contains(s))
                .collect();
            let merge = *exits
                .iter()
                .next()
                .ok_or("a loop without exit is not supported")?;
            if !used_merges.insert(merge) {
                return Err("two constructs sharing a merge block are not supported yet".into());
            }
            merges.insert(
                l.header,
                Instruction::new(
                    Op::LoopMerge,
                    None,
                    None,
                    vec![
                        Operand::IdRef(label(merge)),
                        Operand::IdRef(label(l.latch)),
                        Operand::LoopControl(LoopControl::NONE),
                    ],
                ),
            );
            latches.insert(l.latch);
        }
        for (b, &pdom) in ipdom.iter().enumerate().take(n) {
            if merges.contains_key(&b) || latches.contains(&b) {
                continue;
            }
            let Some(term) = f.blocks[b].instructions.last() else {
                continue;
            };
            if !matches!(term.class.opcode, Op::BranchConditional | Op::Switch) {
                continue;
            }
            if term.class.opcode == Op::BranchConditional && id_at(term, 1) == id_at(term, 2) {
                continue;
            }
            let m = pdom.ok_or("unreachable block")?;
            if m == exit {
                return Err(
                    "a branch whose paths never rejoin (an early return) is not supported yet"
                        .into(),
                );
            }
            if !used_merges.insert(m) {
                return Err("two selections sharing a merge block are not supported yet".into());
            }
            merges.insert(
                b,
                Instruction::new(
                    Op::SelectionMerge,
                    None,
                    None,
                    vec![
                        Operand::IdRef(label(m)),
                        Operand::SelectionControl(SelectionControl::NONE),
                    ],
                ),
            );
        }
        for (b, m) in merges {
            let ins = &mut f.blocks[b].instructions;
            let at = ins.len() - 1;
            ins.insert(at, m);
        }
        // Blocks in reverse post-order: dominators before what they dominate.
        let mut blocks: Vec<Option<rspirv::dr::Block>> = std::mem::take(&mut f.blocks)
            .into_iter()
            .map(Some)
            .collect();
        f.blocks = order
            .iter()
            .map(|&b| blocks[b].take().expect("each once"))
            .collect();
    }
    Ok(())
}
