//! Pass 15 (phase 4): Structured control flow. Vulkan requires every
//! conditional branch and loop to declare its merge (OpSelectionMerge,
//! OpLoopMerge) and constructs to nest. OpenCL SPIR-V has no merges and
//! whatever CFG clang produces: early returns, break/continue from nested
//! ifs, breaks out of several loops, switch fallthrough, returns in loops,
//! gotos.
//!
//! Takes in: functions (after inlining, the kernel) with any CFG whose
//! loops exit somewhere. Guarantees: every function is structured for
//! Vulkan (each loop has one back edge, one merge, a header that branches
//! only into the loop or to its merge; each selection has a merge its
//! header dominates, which no other construct uses), its blocks are in
//! dominance order, and SSA still holds. A loop that never exits gets an
//! exit that is never taken, since Vulkan needs a merge for it.
//!
//! The algorithm (after Bahmann et al., "Perfect Reconstructability of
//! Control Flow from Demand Dependence Graphs", adapted to natural loops):
//! 1. Normalise: merges the input declares are dropped (SPIR-V IL may
//!    have some; they are found again), every OpSwitch becomes a chain of
//!    two-way branches (so fallthrough is just a shared target), a loop
//!    with no way out gets one on a constant false condition,
//!    OpUnreachable becomes a return, and all returns go to one return
//!    block.
//! 2. A cycle entered at several blocks (a goto into a loop) gets one
//!    new entry block that takes every edge into those blocks and
//!    dispatches on a selector, which makes it an ordinary loop.
//!    Then loops, innermost first: all exit edges are funnelled into one new
//!    merge block that remembers, in a selector phi, which edge was taken
//!    and then dispatches to the original targets with a branch chain
//!    (those branches become exits of the enclosing loop, handled next);
//!    several back edges are funnelled into one latch; a header whose
//!    branch is not "into the loop or out to its merge" is split.
//! 3. Selections, walking the CFG from the entry in nesting order: for a
//!    two-way header H, each successor reached only from H owns a branch
//!    region (the blocks it dominates, within the innermost loop). The
//!    blocks those regions and H lead to (not counting breaks to the loop
//!    merge) are H's continuation. If that is not exactly one block which
//!    H dominates and nothing else merges at, the edges into it are
//!    funnelled through a new block (with a selector when several blocks),
//!    which becomes H's merge. Regions are then walked with the merge as
//!    their end; a region that continues at its parent's merge gets its
//!    own merge the same way, so no two constructs share one.
//! 4. SSA repair: a value whose definition no longer dominates a use is
//!    read through phis placed on demand (Braun et al.), with OpUndef on
//!    paths the original program never took.

use rspirv::dr::{Block, Instruction, Operand};
use rspirv::spirv::{LoopControl, Op, SelectionControl, Word};

use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::{HashMap, HashSet};

/// The blocks a terminator may go to.
pub fn successors(term: &Instruction) -> Vec<Word> {
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
                    .skip(3)
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

/// A function's control-flow graph with its dominator tree.
pub(crate) struct Cfg {
    succ: Vec<Vec<usize>>,
    preds: Vec<Vec<usize>>,
    order: Vec<usize>,
    idom: Vec<Option<usize>>,
    /// Children in the dominator tree.
    dominated: Vec<Vec<usize>>,
    /// Entry and exit times of a walk of the dominator tree: `a`
    /// dominates `b` when b's interval lies within a's.
    enter: Vec<usize>,
    exit: Vec<usize>,
}

impl Cfg {
    pub(crate) fn new(f: &rspirv::dr::Function) -> Cfg {
        let n = f.blocks.len();
        // Block index by label id (a table: this runs after every edit).
        let labels: Vec<Option<Word>> = f.blocks.iter().map(|b| b.label_id()).collect();
        let bound = labels.iter().flatten().max().map_or(0, |&m| m as usize + 1);
        let mut index = vec![usize::MAX; bound];
        for (i, l) in labels.iter().enumerate() {
            if let Some(l) = l {
                index[*l as usize] = i;
            }
        }
        let succ: Vec<Vec<usize>> = f
            .blocks
            .iter()
            .map(|b| {
                let mut s: Vec<usize> = Vec::new();
                for t in b.instructions.last().map(successors).unwrap_or_default() {
                    if let Some(&i) = index.get(t as usize)
                        && i != usize::MAX
                        && !s.contains(&i)
                    {
                        s.push(i);
                    }
                }
                s
            })
            .collect();
        let mut preds = vec![Vec::new(); n];
        for (b, ss) in succ.iter().enumerate() {
            for &s in ss {
                preds[s].push(b);
            }
        }
        let order = rpo(n, &succ, 0);
        // Edges from blocks no path reaches do not count.
        let mut reached = vec![false; n];
        for &b in &order {
            reached[b] = true;
        }
        for p in &mut preds {
            p.retain(|&b| reached[b]);
        }
        let idom = idoms(n, &preds, &order);
        let mut dominated = vec![Vec::new(); n];
        for &b in &order[1..] {
            dominated[idom[b].expect("reachable")].push(b);
        }
        let (mut enter, mut exit) = (vec![usize::MAX; n], vec![0; n]);
        let mut clock = 0;
        let mut stack = vec![(order[0], 0usize)];
        while let Some((b, i)) = stack.pop() {
            if i == 0 {
                enter[b] = clock;
                clock += 1;
            }
            if let Some(&c) = dominated[b].get(i) {
                stack.push((b, i + 1));
                stack.push((c, 0));
            } else {
                exit[b] = clock;
                clock += 1;
            }
        }
        Cfg {
            succ,
            preds,
            order,
            idom,
            dominated,
            enter,
            exit,
        }
    }

    fn reachable(&self, b: usize) -> bool {
        self.idom[b].is_some()
    }

    /// Where a reachable block comes before its immediate dominator, an
    /// order SPIR-V allows: the reverse post-order, then the blocks no
    /// path reaches as they were. `None` where the order is fine already.
    pub(crate) fn dominance_order(&self) -> Option<Vec<usize>> {
        let misplaced = self
            .idom
            .iter()
            .enumerate()
            .any(|(b, d)| d.is_some_and(|d| d > b));
        misplaced.then(|| {
            let mut order = self.order.clone();
            order.extend((0..self.idom.len()).filter(|&b| !self.reachable(b)));
            order
        })
    }

    /// Whether block `a` dominates block `b` (indexes into the blocks).
    pub(crate) fn dominates(&self, a: usize, b: usize) -> bool {
        a == b
            || (self.reachable(a)
                && self.reachable(b)
                && self.enter[a] <= self.enter[b]
                && self.exit[b] <= self.exit[a])
    }
}

/// A natural loop: its header, the blocks with a back edge, its body.
struct Loop {
    header: usize,
    latches: Vec<usize>,
    body: Blocks,
}

/// A set of blocks, by index.
#[derive(Clone)]
struct Blocks(Vec<bool>);

impl Blocks {
    fn contains(&self, b: &usize) -> bool {
        self.0.get(*b).copied().unwrap_or(false)
    }

    /// Adds `b`; false if it was there.
    fn insert(&mut self, b: usize) -> bool {
        !std::mem::replace(&mut self.0[b], true)
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().filter(|x| *x.1).map(|x| x.0)
    }
}

/// The natural loops, innermost first. A back edge to a block that does
/// not dominate its source means the CFG is irreducible.
fn loops(cfg: &Cfg) -> Result<Vec<Loop>, String> {
    let mut rpo_index = vec![usize::MAX; cfg.succ.len()];
    for (i, &b) in cfg.order.iter().enumerate() {
        rpo_index[b] = i;
    }
    let mut out = Vec::new();
    for &h in &cfg.order {
        let mut latches = Vec::new();
        for &p in &cfg.preds[h] {
            if !cfg.reachable(p) {
                continue;
            }
            if cfg.dominates(h, p) {
                latches.push(p);
            } else if rpo_index[p] >= rpo_index[h] {
                return Err("irreducible control flow (a loop with two entries)".into());
            }
        }
        if latches.is_empty() {
            continue;
        }
        let mut body = Blocks(vec![false; cfg.succ.len()]);
        body.insert(h);
        let mut size = 1;
        let mut todo = latches.clone();
        while let Some(b) = todo.pop() {
            if body.insert(b) {
                size += 1;
                todo.extend(cfg.preds[b].iter().copied().filter(|&p| cfg.reachable(p)));
            }
        }
        out.push((
            size,
            Loop {
                header: h,
                latches,
                body,
            },
        ));
    }
    // Inner loops are smaller than the loops around them.
    out.sort_by_key(|l| l.0);
    Ok(out.into_iter().map(|l| l.1).collect())
}

/// The entries of a cycle that has more than one (a loop that code jumps
/// into), if the CFG has such a cycle.
fn irreducible_entries(cfg: &Cfg) -> Option<Vec<usize>> {
    let mut rpo_index = vec![usize::MAX; cfg.succ.len()];
    for (i, &b) in cfg.order.iter().enumerate() {
        rpo_index[b] = i;
    }
    let (p, h) = cfg.order.iter().find_map(|&p| {
        cfg.succ[p]
            .iter()
            .find(|&&h| rpo_index[h] <= rpo_index[p] && !cfg.dominates(h, p))
            .map(|&h| (p, h))
    })?;
    // The blocks on a cycle through the retreating edge p -> h.
    let walk = |from: usize, next: &dyn Fn(usize) -> Vec<usize>| {
        let mut seen = HashSet::from_iter([from]);
        let mut todo = vec![from];
        while let Some(b) = todo.pop() {
            for n in next(b) {
                if seen.insert(n) {
                    todo.push(n);
                }
            }
        }
        seen
    };
    let forward = walk(h, &|b| cfg.succ[b].clone());
    let backward = walk(p, &|b| cfg.preds[b].clone());
    let cycle: HashSet<usize> = forward.intersection(&backward).copied().collect();
    let mut entries: Vec<usize> = cycle
        .iter()
        .copied()
        .filter(|&b| cfg.preds[b].iter().any(|q| !cycle.contains(q)))
        .collect();
    entries.sort_unstable();
    (entries.len() > 1).then_some(entries)
}

fn label(f: &rspirv::dr::Function, b: usize) -> Word {
    f.blocks[b].label_id().expect("blocks have labels")
}

fn new_block(label: Word) -> Block {
    let mut b = Block::new();
    b.label = Some(Instruction::new(Op::Label, None, Some(label), vec![]));
    b
}

fn branch(to: Word) -> Instruction {
    Instruction::new(Op::Branch, None, None, vec![Operand::IdRef(to)])
}

fn branch_if(cond: Word, t: Word, f: Word) -> Instruction {
    Instruction::new(
        Op::BranchConditional,
        None,
        None,
        vec![Operand::IdRef(cond), Operand::IdRef(t), Operand::IdRef(f)],
    )
}

fn phis(b: &Block) -> impl Iterator<Item = &Instruction> {
    b.instructions
        .iter()
        .take_while(|i| i.class.opcode == Op::Phi)
}

fn phis_mut(b: &mut Block) -> impl Iterator<Item = &mut Instruction> {
    b.instructions
        .iter_mut()
        .take_while(|i| i.class.opcode == Op::Phi)
}

/// The value a phi takes from predecessor `pred`.
fn phi_value(phi: &Instruction, pred: Word) -> Option<Word> {
    phi.operands
        .chunks(2)
        .find(|p| p[1] == Operand::IdRef(pred))
        .and_then(|p| match p[0] {
            Operand::IdRef(v) => Some(v),
            _ => None,
        })
}

fn remove_phi_entry(phi: &mut Instruction, pred: Word) {
    let ops = std::mem::take(&mut phi.operands);
    phi.operands = ops
        .chunks(2)
        .filter(|p| p[1] != Operand::IdRef(pred))
        .flatten()
        .cloned()
        .collect();
}

fn bool_type(ctx: &mut Ctx) -> Word {
    ctx.ty(Op::TypeBool, vec![])
}

/// The value of type `ty` on paths the original program never took: a
/// null constant rather than an undefined value, so that every device
/// computes the same thing should such a path run after all.
fn undef(ctx: &mut Ctx, ty: Word) -> Word {
    ctx.const_null(ty)
}

/// A constant of integer type `ty` holding the literal `value`.
fn int_constant(ctx: &mut Ctx, ty: Word, value: &Operand) -> Word {
    if let Some(id) = ctx.module.types_global_values.iter().find_map(|i| {
        (i.class.opcode == Op::Constant
            && i.result_type == Some(ty)
            && i.operands.first() == Some(value))
        .then_some(i.result_id)
        .flatten()
    }) {
        return id;
    }
    let id = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Constant,
        Some(ty),
        Some(id),
        vec![value.clone()],
    ));
    id
}

/// Step 1: switches become branch chains, unreachable becomes return,
/// and every function returns from one block.
fn normalise(ctx: &mut Ctx, fi: usize) -> Result<(), String> {
    // Merges an IL program may already declare are found again below.
    for b in &mut ctx.module.functions[fi].blocks {
        b.instructions
            .retain(|i| !matches!(i.class.opcode, Op::LoopMerge | Op::SelectionMerge));
    }
    let bool_ty = bool_type(ctx);
    let mut b = 0;
    while b < ctx.module.functions[fi].blocks.len() {
        let term = ctx.module.functions[fi].blocks[b]
            .instructions
            .last()
            .cloned()
            .ok_or("a block without terminator")?;
        if term.class.opcode == Op::BranchConditional && id_at(&term, 1) == id_at(&term, 2) {
            let to = id_at(&term, 1).ok_or("malformed OpBranchConditional")?;
            *ctx.module.functions[fi].blocks[b]
                .instructions
                .last_mut()
                .expect("terminator") = branch(to);
        }
        if term.class.opcode == Op::Switch {
            lower_switch(ctx, fi, b, &term, bool_ty)?;
        }
        b += 1;
    }
    exit_endless_loops(ctx, fi);
    let ret_ty = ctx.module.functions[fi]
        .def
        .as_ref()
        .and_then(|d| d.result_type)
        .ok_or("a function without type")?;
    let void = ctx.void();
    let mut returns = Vec::new();
    for b in 0..ctx.module.functions[fi].blocks.len() {
        let f = &ctx.module.functions[fi];
        let term = f.blocks[b].instructions.last().expect("terminator");
        let value = match term.class.opcode {
            Op::Return => None,
            Op::ReturnValue => id_at(term, 0),
            Op::Unreachable if ret_ty == void => None,
            Op::Unreachable => Some(undef(ctx, ret_ty)),
            _ => continue,
        };
        returns.push((b, value));
    }
    if returns.len() < 2 {
        for &(b, value) in &returns {
            let last = ctx.module.functions[fi].blocks[b]
                .instructions
                .last_mut()
                .expect("terminator");
            *last = match value {
                None => Instruction::new(Op::Return, None, None, vec![]),
                Some(v) => Instruction::new(Op::ReturnValue, None, None, vec![Operand::IdRef(v)]),
            };
        }
        return Ok(());
    }
    let ret_label = ctx.fresh();
    let mut block = new_block(ret_label);
    let mut entries = Vec::new();
    for &(b, value) in &returns {
        let f = &mut ctx.module.functions[fi];
        let l = label(f, b);
        *f.blocks[b].instructions.last_mut().expect("terminator") = branch(ret_label);
        if let Some(v) = value {
            entries.extend([Operand::IdRef(v), Operand::IdRef(l)]);
        }
    }
    if ret_ty == void {
        block
            .instructions
            .push(Instruction::new(Op::Return, None, None, vec![]));
    } else {
        let v = ctx.fresh();
        block
            .instructions
            .push(Instruction::new(Op::Phi, Some(ret_ty), Some(v), entries));
        block.instructions.push(Instruction::new(
            Op::ReturnValue,
            None,
            None,
            vec![Operand::IdRef(v)],
        ));
    }
    ctx.module.functions[fi].blocks.push(block);
    Ok(())
}

/// Gives every loop that never exits an exit that is never taken: a
/// branch on a constant false to a new block that ends the function
/// (`OpUnreachable`, made a return below). Vulkan needs a merge for each
/// loop, and the steps below find it among the loop's exits. Such loops
/// are real: clang turns `for (;;) { if (x >= n) break; ... }` with an
/// invariant `x` into "exit or spin for ever", and applications build
/// kernels for sizes (n = 0) they never launch them with.
fn exit_endless_loops(ctx: &mut Ctx, fi: usize) {
    loop {
        let f = &ctx.module.functions[fi];
        let cfg = Cfg::new(f);
        let n = f.blocks.len();
        // The blocks from which the function can end.
        let mut ends = vec![false; n];
        let mut todo: Vec<usize> = (0..n).filter(|&b| cfg.succ[b].is_empty()).collect();
        for &b in &todo {
            ends[b] = true;
        }
        while let Some(b) = todo.pop() {
            for &p in &cfg.preds[b] {
                if !ends[p] {
                    ends[p] = true;
                    todo.push(p);
                }
            }
        }
        // A reachable block that cannot end leads only to such blocks, so
        // following successors from it comes round to a block on a cycle.
        let Some(start) = cfg.order.iter().copied().find(|&b| !ends[b]) else {
            return;
        };
        let mut seen = vec![false; n];
        let mut b = start;
        while !seen[b] {
            seen[b] = true;
            b = cfg.succ[b][0];
        }
        // A conditional branch first moves into a block of its own, which
        // `b` then branches to.
        let last = |ctx: &Ctx| {
            ctx.module.functions[fi].blocks[b]
                .instructions
                .last()
                .cloned()
        };
        if last(ctx).is_some_and(|t| t.class.opcode != Op::Branch) {
            split_header(ctx, fi, b);
        }
        let to = last(ctx)
            .and_then(|t| id_at(&t, 0))
            .expect("an unconditional branch");
        let bool_ty = bool_type(ctx);
        let never = ctx.const_null(bool_ty);
        let exit = ctx.fresh();
        let mut blk = new_block(exit);
        blk.instructions
            .push(Instruction::new(Op::Unreachable, None, None, vec![]));
        let f = &mut ctx.module.functions[fi];
        *f.blocks[b].instructions.last_mut().expect("terminator") = branch_if(never, exit, to);
        f.blocks.push(blk);
    }
}

/// Replaces the OpSwitch ending block `b` with a chain of comparisons.
fn lower_switch(
    ctx: &mut Ctx,
    fi: usize,
    b: usize,
    term: &Instruction,
    bool_ty: Word,
) -> Result<(), String> {
    let selector = id_at(term, 0).ok_or("malformed OpSwitch")?;
    let default = id_at(term, 1).ok_or("malformed OpSwitch")?;
    let sel_ty = ctx.module.functions[fi]
        .blocks
        .iter()
        .flat_map(|b| &b.instructions)
        .chain(&ctx.module.types_global_values)
        .chain(ctx.module.functions[fi].parameters.iter())
        .find(|i| i.result_id == Some(selector))
        .and_then(|i| i.result_type)
        .ok_or("an OpSwitch selector of unknown type")?;
    let cases: Vec<(Operand, Word)> = term.operands[2..]
        .chunks(2)
        .map(|c| match c {
            [lit, Operand::IdRef(t)] => Ok((lit.clone(), *t)),
            _ => Err("malformed OpSwitch".to_string()),
        })
        .collect::<Result<_, _>>()?;
    let b_label = label(&ctx.module.functions[fi], b);
    // The values each target's phis take from the switch block.
    let targets: HashSet<Word> = cases.iter().map(|c| c.1).chain([default]).collect();
    // (chain block label, its terminator's targets)
    let mut chain: Vec<(Word, Vec<Instruction>)> = Vec::new();
    let mut current = b_label;
    let mut current_ins = Vec::new();
    for (i, (lit, target)) in cases.iter().enumerate() {
        let c = int_constant(ctx, sel_ty, lit);
        let cmp = ctx.fresh();
        current_ins.push(Instruction::new(
            Op::IEqual,
            Some(bool_ty),
            Some(cmp),
            vec![Operand::IdRef(selector), Operand::IdRef(c)],
        ));
        let next = if i + 1 == cases.len() {
            default
        } else {
            ctx.fresh()
        };
        current_ins.push(branch_if(cmp, *target, next));
        chain.push((current, std::mem::take(&mut current_ins)));
        current = next;
    }
    if cases.is_empty() {
        chain.push((b_label, vec![branch(default)]));
    }
    let f = &mut ctx.module.functions[fi];
    let mut from_switch: HashMap<Word, Vec<Option<Word>>> = HashMap::default();
    for blk in f
        .blocks
        .iter()
        .filter(|x| x.label_id().is_some_and(|l| targets.contains(&l)))
    {
        from_switch.insert(
            blk.label_id().expect("label"),
            phis(blk).map(|p| phi_value(p, b_label)).collect(),
        );
    }
    let mut preds_of: HashMap<Word, Vec<Word>> = HashMap::default();
    for (l, ins) in &chain {
        for t in successors(ins.last().expect("terminator")) {
            let v = preds_of.entry(t).or_default();
            if !v.contains(l) {
                v.push(*l);
            }
        }
    }
    for (k, (l, ins)) in chain.into_iter().enumerate() {
        if k == 0 {
            let blk = &mut f.blocks[b];
            blk.instructions.pop();
            blk.instructions.extend(ins);
        } else {
            let mut blk = new_block(l);
            blk.instructions.extend(ins);
            f.blocks.push(blk);
        }
    }
    for blk in &mut f.blocks {
        let Some(l) = blk.label_id() else { continue };
        let Some(values) = from_switch.get(&l) else {
            continue;
        };
        for (phi, v) in phis_mut(blk).zip(values) {
            let Some(v) = v else { continue };
            remove_phi_entry(phi, b_label);
            for &p in preds_of.get(&l).into_iter().flatten() {
                phi.operands.extend([Operand::IdRef(*v), Operand::IdRef(p)]);
            }
        }
    }
    Ok(())
}

/// Sends the CFG edges `edges` (from, to) through one new block and
/// returns it. With several targets the new block records in a selector
/// phi which edge was taken and dispatches on it with a branch chain.
/// Phi entries of the redirected edges move into the new block.
fn funnel(ctx: &mut Ctx, fi: usize, edges: &[(usize, usize)]) -> Result<usize, String> {
    let f = &ctx.module.functions[fi];
    let mut targets: Vec<usize> = Vec::new();
    let mut sources: Vec<usize> = Vec::new();
    for &(s, t) in edges {
        if !targets.contains(&t) {
            targets.push(t);
        }
        if !sources.contains(&s) {
            sources.push(s);
        }
    }
    let target_labels: Vec<Word> = targets.iter().map(|&t| label(f, t)).collect();
    let u32_ty = ctx.uint(32);
    let bool_ty = bool_type(ctx);
    let n_label = ctx.fresh();
    // The dispatch chain: block k tests for target k; the last block
    // branches to the last two targets.
    let chain: Vec<Word> = (0..targets.len().saturating_sub(1))
        .map(|k| if k == 0 { n_label } else { ctx.fresh() })
        .collect();
    let dispatcher = |k: usize| chain.get(k).or(chain.last()).copied().unwrap_or(n_label);
    let mut selector_entries = Vec::new();
    for &s in &sources {
        let f = &ctx.module.functions[fi];
        let s_label = label(f, s);
        let mine: Vec<usize> = edges
            .iter()
            .filter(|e| e.0 == s)
            .map(|e| targets.iter().position(|&t| t == e.1).expect("listed"))
            .collect();
        let term = f.blocks[s]
            .instructions
            .last()
            .cloned()
            .expect("terminator");
        let value = match (mine.as_slice(), term.class.opcode) {
            ([k], _) => ctx.const_u32(*k as u32),
            ([a, b], Op::BranchConditional) => {
                // Both arms leave through the funnel: pick by the condition.
                let (ka, kb) = if id_at(&term, 1) == Some(target_labels[*a]) {
                    (*a, *b)
                } else {
                    (*b, *a)
                };
                let (ca, cb) = (ctx.const_u32(ka as u32), ctx.const_u32(kb as u32));
                let v = ctx.fresh();
                let cond = id_at(&term, 0).ok_or("malformed OpBranchConditional")?;
                let ins = &mut ctx.module.functions[fi].blocks[s].instructions;
                let at = ins.len() - 1;
                ins.insert(
                    at,
                    Instruction::new(
                        Op::Select,
                        Some(u32_ty),
                        Some(v),
                        vec![Operand::IdRef(cond), Operand::IdRef(ca), Operand::IdRef(cb)],
                    ),
                );
                v
            }
            _ => return Err("a block leaving a region by more than two edges".into()),
        };
        selector_entries.extend([Operand::IdRef(value), Operand::IdRef(s_label)]);
        // Redirect the edges.
        let f = &mut ctx.module.functions[fi];
        let last = f.blocks[s].instructions.last_mut().expect("terminator");
        for &k in &mine {
            for o in last.operands.iter_mut() {
                if *o == Operand::IdRef(target_labels[k]) {
                    *o = Operand::IdRef(n_label);
                }
            }
        }
        if last.class.opcode == Op::BranchConditional && id_at(last, 1) == id_at(last, 2) {
            *last = branch(n_label);
        }
    }
    // Phis of the targets: entries of redirected edges move to new phis.
    let mut block = new_block(n_label);
    for (k, &t) in targets.iter().enumerate() {
        let f = &ctx.module.functions[fi];
        let src_labels: Vec<(Word, bool)> = sources
            .iter()
            .map(|&s| (label(f, s), edges.contains(&(s, t))))
            .collect();
        let tphis: Vec<(Option<Word>, Vec<Option<Word>>)> = phis(&f.blocks[t])
            .map(|p| {
                (
                    p.result_type,
                    src_labels
                        .iter()
                        .map(|&(l, e)| if e { phi_value(p, l) } else { None })
                        .collect(),
                )
            })
            .collect();
        let mut new_ids = Vec::new();
        for (ty, values) in tphis {
            let ty = ty.ok_or("a phi without type")?;
            let mut ops = Vec::new();
            for (v, &(l, _)) in values.iter().zip(&src_labels) {
                let v = match v {
                    Some(v) => *v,
                    None => undef(ctx, ty),
                };
                ops.extend([Operand::IdRef(v), Operand::IdRef(l)]);
            }
            let id = ctx.fresh();
            block
                .instructions
                .push(Instruction::new(Op::Phi, Some(ty), Some(id), ops));
            new_ids.push(id);
        }
        let from = dispatcher(k);
        let f = &mut ctx.module.functions[fi];
        for (phi, id) in phis_mut(&mut f.blocks[t]).zip(new_ids) {
            for &(l, e) in &src_labels {
                if e {
                    remove_phi_entry(phi, l);
                }
            }
            phi.operands
                .extend([Operand::IdRef(id), Operand::IdRef(from)]);
        }
    }
    if targets.len() == 1 {
        block.instructions.push(branch(target_labels[0]));
        ctx.module.functions[fi].blocks.push(block);
        return Ok(ctx.module.functions[fi].blocks.len() - 1);
    }
    let selector = ctx.fresh();
    block.instructions.push(Instruction::new(
        Op::Phi,
        Some(u32_ty),
        Some(selector),
        selector_entries,
    ));
    let mut blocks = vec![block];
    for (k, &l) in chain.iter().enumerate() {
        if k > 0 {
            blocks.push(new_block(l));
        }
        let c = ctx.const_u32(k as u32);
        let cmp = ctx.fresh();
        let last = k + 1 == chain.len();
        let otherwise = if last {
            target_labels[k + 1]
        } else {
            chain[k + 1]
        };
        let blk = blocks.last_mut().expect("a block");
        blk.instructions.push(Instruction::new(
            Op::IEqual,
            Some(bool_ty),
            Some(cmp),
            vec![Operand::IdRef(selector), Operand::IdRef(c)],
        ));
        blk.instructions
            .push(branch_if(cmp, target_labels[k], otherwise));
    }
    let f = &mut ctx.module.functions[fi];
    let n = f.blocks.len();
    f.blocks.extend(blocks);
    Ok(n)
}

/// Step 2: one exit, one back edge and a plain header for every loop.
fn canonical_loops(ctx: &mut Ctx, fi: usize) -> Result<(), String> {
    let limit = 4 * ctx.module.functions[fi].blocks.len() + 16;
    for _ in 0..limit {
        let f = &ctx.module.functions[fi];
        let cfg = Cfg::new(f);
        if let Some(entries) = irreducible_entries(&cfg) {
            // One new block takes every edge into the cycle and dispatches
            // to the entry it was meant for: that block is then the only
            // entry, the header of an ordinary loop.
            let mut edges: Vec<(usize, usize)> = entries
                .iter()
                .flat_map(|&e| cfg.preds[e].iter().map(move |&p| (p, e)))
                .collect();
            edges.sort_unstable();
            funnel(ctx, fi, &edges)?;
            continue;
        }
        let all = loops(&cfg)?;
        let headers: HashSet<usize> = all.iter().map(|l| l.header).collect();
        let latches: HashSet<usize> = all.iter().flat_map(|l| l.latches.clone()).collect();
        let mut fixed = false;
        for l in &all {
            let mut exits: Vec<(usize, usize)> = l
                .body
                .iter()
                .flat_map(|b| cfg.succ[b].iter().map(move |&s| (b, s)))
                .filter(|(_, s)| !l.body.contains(s))
                .collect();
            exits.sort_unstable();
            let mut targets: Vec<usize> = exits.iter().map(|e| e.1).collect();
            targets.sort();
            targets.dedup();
            if targets.is_empty() {
                return Err("a loop that never exits".into());
            }
            let m = targets[0];
            if targets.len() > 1
                || cfg.preds[m].iter().any(|p| !l.body.contains(p))
                || headers.contains(&m)
                || latches.contains(&m)
            {
                funnel(ctx, fi, &exits)?;
                fixed = true;
                break;
            }
            let plain_latch = |p: usize| {
                let term = f.blocks[p].instructions.last().expect("terminator");
                term.class.opcode == Op::Branch
                    || (p != l.header
                        && cfg.succ[p].len() == 2
                        && cfg.succ[p].contains(&m)
                        && !headers.contains(&p))
                    || (p == l.header && cfg.succ[p].contains(&m))
            };
            if l.latches.len() > 1 || !plain_latch(l.latches[0]) {
                let back: Vec<(usize, usize)> = l.latches.iter().map(|&p| (p, l.header)).collect();
                funnel(ctx, fi, &back)?;
                fixed = true;
                break;
            }
            let h = l.header;
            let term = f.blocks[h].instructions.last().expect("terminator");
            if term.class.opcode != Op::Branch && !cfg.succ[h].contains(&m) {
                split_header(ctx, fi, h);
                fixed = true;
                break;
            }
        }
        if !fixed {
            return Ok(());
        }
    }
    Err("loops too complex to structure".into())
}

/// Moves the terminator of block `h` into a new block that `h` branches to.
fn split_header(ctx: &mut Ctx, fi: usize, h: usize) {
    let l = ctx.fresh();
    let f = &mut ctx.module.functions[fi];
    let h_label = label(f, h);
    let term = f.blocks[h].instructions.pop().expect("terminator");
    let succ = successors(&term);
    f.blocks[h].instructions.push(branch(l));
    let mut blk = new_block(l);
    blk.instructions.push(term);
    f.blocks.push(blk);
    for b in &mut f.blocks {
        if b.label_id().is_some_and(|x| succ.contains(&x)) {
            for phi in phis_mut(b) {
                for o in phi.operands.iter_mut().skip(1).step_by(2) {
                    if *o == Operand::IdRef(h_label) {
                        *o = Operand::IdRef(l);
                    }
                }
            }
        }
    }
}

/// The merge each header declares.
enum Merge {
    Loop { merge: usize, latch: usize },
    Selection(usize),
}

/// The innermost loop around the blocks being walked.
#[derive(Clone, Copy)]
struct LoopCtx {
    header: usize,
    latch: usize,
    merge: usize,
}

struct Walk {
    fi: usize,
    cfg: Cfg,
    /// Per loop header: (merge, latch, body).
    loops: HashMap<usize, (usize, usize, Blocks)>,
    merges: HashMap<usize, Merge>,
    visited: HashSet<usize>,
    budget: usize,
}

impl Walk {
    fn refresh(&mut self, ctx: &Ctx) -> Result<(), String> {
        let f = &ctx.module.functions[self.fi];
        self.cfg = Cfg::new(f);
        self.loops.clear();
        for l in loops(&self.cfg)? {
            let latch = l.latches[0];
            let merge = self.cfg.succ[l.header]
                .iter()
                .chain(&self.cfg.succ[latch])
                .chain(l.body.iter().flat_map(|b| &self.cfg.succ[b]))
                .copied()
                .find(|s| !l.body.contains(s))
                .ok_or("a loop that never exits")?;
            self.loops.insert(l.header, (merge, latch, l.body));
        }
        Ok(())
    }

    fn tick(&mut self) -> Result<(), String> {
        self.budget = self
            .budget
            .checked_sub(1)
            .ok_or("control flow too complex to structure")?;
        Ok(())
    }

    /// Walks the blocks from `entry` until `end` (or a break, continue or
    /// return), giving every header its merge.
    fn region(
        &mut self,
        ctx: &mut Ctx,
        entry: usize,
        end: Option<usize>,
        lp: Option<LoopCtx>,
    ) -> Result<(), String> {
        let mut cur = entry;
        loop {
            self.tick()?;
            if Some(cur) == end {
                return Ok(());
            }
            if let Some(l) = lp
                && (cur == l.header || cur == l.latch || cur == l.merge)
            {
                return Ok(());
            }
            if let Some((merge, latch, _)) = self.loops.get(&cur).cloned() {
                if !self.visited.insert(cur) {
                    return Err("a loop reached twice while structuring".into());
                }
                self.merges.insert(cur, Merge::Loop { merge, latch });
                if latch != cur {
                    let inner = LoopCtx {
                        header: cur,
                        latch,
                        merge,
                    };
                    let into = self.cfg.succ[cur]
                        .iter()
                        .copied()
                        .find(|&s| s != merge)
                        .ok_or("a loop header without body")?;
                    self.region(ctx, into, None, Some(inner))?;
                    self.visited.insert(latch);
                }
                cur = merge;
                continue;
            }
            if self.cfg.succ[cur].len() < 2 {
                self.visited.insert(cur);
                match self.cfg.succ[cur].first() {
                    Some(&s) => cur = s,
                    None => return Ok(()),
                }
                continue;
            }
            // A selection header.
            let in_scope = |cfg: &Cfg, loops: &HashMap<usize, _>, b: usize| match lp {
                Some(l) => {
                    let body: &(usize, usize, Blocks) = &loops[&l.header];
                    body.2.contains(&b) && b != l.header && b != l.latch
                }
                None => cfg.reachable(b),
            };
            let mut owned: HashSet<usize> = HashSet::default();
            let mut roots = Vec::new();
            for &s in &self.cfg.succ[cur] {
                // Reached only from here (back edges aside).
                if self.cfg.preds[s]
                    .iter()
                    .all(|&p| p == cur || self.cfg.dominates(s, p))
                    && Some(s) != end
                    && in_scope(&self.cfg, &self.loops, s)
                {
                    roots.push(s);
                    // The dominator subtree of s, short of the end and of
                    // what lies outside the loop (and so below them too).
                    let mut todo = vec![s];
                    while let Some(b) = todo.pop() {
                        if Some(b) != end && in_scope(&self.cfg, &self.loops, b) {
                            owned.insert(b);
                            todo.extend(&self.cfg.dominated[b]);
                        }
                    }
                }
            }
            let mut cont: Vec<usize> = Vec::new();
            let mut edges = Vec::new();
            // In block order, so that the output does not vary from run to run.
            let mut sources: Vec<usize> = owned.iter().copied().chain([cur]).collect();
            sources.sort_unstable();
            for &x in &sources {
                for &y in &self.cfg.succ[x] {
                    if owned.contains(&y) || lp.is_some_and(|l| y == l.header || y == l.merge) {
                        continue;
                    }
                    if self.loops.get(&y).is_some_and(|l| l.2.contains(&x)) {
                        continue;
                    }
                    edges.push((x, y));
                    if !cont.contains(&y) {
                        cont.push(y);
                    }
                }
            }
            let merge = match cont.as_slice() {
                // Every block of a loop body leads to its latch, and every
                // block of a function to its return: never met with a
                // CFG that passed the loop checks.
                [] => return Err("a branch whose paths never meet again".into()),
                [c] if Some(*c) != end
                    && lp.is_none_or(|l| *c != l.latch)
                    && self.cfg.dominates(cur, *c)
                    && !self.loops.contains_key(c)
                    && !self
                        .merges
                        .values()
                        .any(|m| matches!(m, Merge::Selection(x) if x == c)) =>
                {
                    *c
                }
                _ => {
                    let n = funnel(ctx, self.fi, &edges)?;
                    self.refresh(ctx)?;
                    if self.cfg.succ[cur].len() < 2 {
                        // Both arms went into the funnel: now a plain branch.
                        continue;
                    }
                    n
                }
            };
            self.visited.insert(cur);
            self.merges.insert(cur, Merge::Selection(merge));
            for s in roots {
                self.region(ctx, s, Some(merge), lp)?;
            }
            cur = merge;
        }
    }
}

/// Step 4: uses whose definition no longer dominates them read the value
/// through phis placed where paths meet.
fn repair_ssa(ctx: &mut Ctx, fi: usize) -> Result<(), String> {
    let f = &ctx.module.functions[fi];
    let cfg = Cfg::new(f);
    let mut def: HashMap<Word, (usize, Word)> = HashMap::default();
    for (b, blk) in f.blocks.iter().enumerate() {
        for i in &blk.instructions {
            if let (Some(id), Some(ty)) = (i.result_id, i.result_type) {
                def.insert(id, (b, ty));
            }
        }
    }
    let labels: Vec<Word> = (0..f.blocks.len()).map(|b| label(f, b)).collect();
    let index: HashMap<Word, usize> = labels.iter().enumerate().map(|(i, &l)| (l, i)).collect();
    // (block, instruction, operand, value, the block whose end it is read at
    // or, for ordinary uses, whose start)
    let mut fixes: Vec<(usize, usize, usize, Word, usize, bool)> = Vec::new();
    for (b, blk) in f.blocks.iter().enumerate() {
        if !cfg.reachable(b) {
            continue;
        }
        for (k, i) in blk.instructions.iter().enumerate() {
            for (o, op) in i.operands.iter().enumerate() {
                let Operand::IdRef(v) = op else { continue };
                let Some(&(d, _)) = def.get(v) else { continue };
                if i.class.opcode == Op::Phi {
                    if o % 2 == 1 {
                        continue;
                    }
                    let Some(Operand::IdRef(p)) = i.operands.get(o + 1) else {
                        continue;
                    };
                    let p = *index.get(p).ok_or("a phi from no block")?;
                    if cfg.reachable(p) && !cfg.dominates(d, p) {
                        fixes.push((b, k, o, *v, p, true));
                    }
                } else if !cfg.dominates(d, b) {
                    fixes.push((b, k, o, *v, b, false));
                }
            }
        }
    }
    if fixes.is_empty() {
        return Ok(());
    }
    let mut ssa = Ssa {
        cfg: &cfg,
        labels: &labels,
        memo: HashMap::default(),
        new_phis: Vec::new(),
    };
    let mut replacements = Vec::new();
    for &(b, k, o, v, at, at_end) in &fixes {
        let (d, ty) = def[&v];
        let r = if at_end {
            ssa.read_end(ctx, v, d, ty, at)
        } else {
            ssa.read_start(ctx, v, d, ty, at)
        };
        replacements.push((b, k, o, r));
    }
    let new_phis = ssa.new_phis;
    let f = &mut ctx.module.functions[fi];
    for (b, k, o, r) in replacements {
        f.blocks[b].instructions[k].operands[o] = Operand::IdRef(r);
    }
    for (b, phi) in new_phis.into_iter().rev() {
        f.blocks[b].instructions.insert(0, phi);
    }
    Ok(())
}

struct Ssa<'a> {
    cfg: &'a Cfg,
    labels: &'a [Word],
    memo: HashMap<(Word, usize), Word>,
    new_phis: Vec<(usize, Instruction)>,
}

impl Ssa<'_> {
    fn read_end(&mut self, ctx: &mut Ctx, v: Word, d: usize, ty: Word, b: usize) -> Word {
        if self.cfg.dominates(d, b) {
            v
        } else {
            self.read_start(ctx, v, d, ty, b)
        }
    }

    fn read_start(&mut self, ctx: &mut Ctx, v: Word, d: usize, ty: Word, b: usize) -> Word {
        if let Some(&r) = self.memo.get(&(v, b)) {
            return r;
        }
        let preds: Vec<usize> = self.cfg.preds[b]
            .iter()
            .copied()
            .filter(|&p| self.cfg.reachable(p))
            .collect();
        let r = match preds.as_slice() {
            [] => undef(ctx, ty),
            [p] => self.read_end(ctx, v, d, ty, *p),
            _ => {
                let id = ctx.fresh();
                self.memo.insert((v, b), id);
                let mut ops = Vec::new();
                for p in preds {
                    let x = self.read_end(ctx, v, d, ty, p);
                    ops.extend([Operand::IdRef(x), Operand::IdRef(self.labels[p])]);
                }
                self.new_phis
                    .push((b, Instruction::new(Op::Phi, Some(ty), Some(id), ops)));
                id
            }
        };
        self.memo.insert((v, b), r);
        r
    }
}

/// Structures one function (see the module documentation).
fn structure(ctx: &mut Ctx, fi: usize) -> Result<(), String> {
    normalise(ctx, fi)?;
    canonical_loops(ctx, fi)?;
    let n = ctx.module.functions[fi].blocks.len();
    let mut walk = Walk {
        fi,
        cfg: Cfg::new(&ctx.module.functions[fi]),
        loops: HashMap::default(),
        merges: HashMap::default(),
        visited: HashSet::default(),
        budget: 64 * n + 256,
    };
    walk.refresh(ctx)?;
    walk.region(ctx, 0, None, None)?;
    walk.refresh(ctx)?;
    if let Some(b) = walk
        .cfg
        .order
        .iter()
        .find(|b| !walk.visited.contains(b) && !walk.merges.contains_key(b))
        .filter(|&&b| walk.cfg.succ[b].len() > 1)
    {
        return Err(format!("a branch left unstructured (block {b})"));
    }
    repair_ssa(ctx, fi)?;
    let f = &mut ctx.module.functions[fi];
    for (b, m) in &walk.merges {
        let ins = match *m {
            Merge::Loop { merge, latch } => Instruction::new(
                Op::LoopMerge,
                None,
                None,
                vec![
                    Operand::IdRef(label(f, merge)),
                    Operand::IdRef(label(f, latch)),
                    Operand::LoopControl(LoopControl::NONE),
                ],
            ),
            Merge::Selection(merge) => Instruction::new(
                Op::SelectionMerge,
                None,
                None,
                vec![
                    Operand::IdRef(label(f, merge)),
                    Operand::SelectionControl(SelectionControl::NONE),
                ],
            ),
        };
        let block = &mut f.blocks[*b].instructions;
        let at = block.len() - 1;
        block.insert(at, ins);
    }
    // Blocks in reverse post-order (dominators first); blocks no path
    // reaches are dropped.
    let cfg = Cfg::new(f);
    let kept: HashSet<Word> = cfg.order.iter().map(|&b| label(f, b)).collect();
    let mut blocks: Vec<Option<Block>> = std::mem::take(&mut f.blocks)
        .into_iter()
        .map(Some)
        .collect();
    f.blocks = cfg
        .order
        .iter()
        .map(|&b| blocks[b].take().expect("each once"))
        .collect();
    for blk in &mut f.blocks {
        for phi in phis_mut(blk) {
            let ops = std::mem::take(&mut phi.operands);
            phi.operands = ops
                .chunks(2)
                .filter(|p| matches!(p[1], Operand::IdRef(l) if kept.contains(&l)))
                .flatten()
                .cloned()
                .collect();
        }
    }
    Ok(())
}

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    for fi in 0..ctx.module.functions.len() {
        if ctx.module.functions[fi].blocks.is_empty() {
            continue;
        }
        structure(ctx, fi)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rspirv::binary::Assemble;
    use rspirv::dr::Builder;
    use rspirv::spirv::{
        AddressingModel, Capability, ExecutionModel, FunctionControl, MemoryModel,
    };

    /// How a test block ends: indices are blocks of the same function.
    enum End {
        Br(usize),
        If(usize, usize),
        /// A branch that already declares its merge (as IL programs may).
        IfMerged(usize, usize, usize),
        Switch(Vec<(u32, usize)>, usize),
        Ret,
    }

    /// A compute shader whose one function has `blocks`, each computing
    /// a value and, where given, using the value of another block (the
    /// use must be valid SSA in the input).
    fn shader(blocks: &[(End, Option<usize>)]) -> rspirv::dr::Module {
        let mut b = Builder::new();
        b.set_version(1, 5);
        b.capability(Capability::Shader);
        b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
        let void = b.type_void();
        let boolean = b.type_bool();
        let uint = b.type_int(32, 0);
        let one = b.constant_bit32(uint, 1);
        let fn_ty = b.type_function(void, vec![]);
        let conds: Vec<Word> = blocks
            .iter()
            .map(|_| b.spec_constant_true(boolean))
            .collect();
        let selector = b.spec_constant_bit32(uint, 0);
        let labels: Vec<Word> = blocks.iter().map(|_| b.id()).collect();
        let values: Vec<Word> = blocks.iter().map(|_| b.id()).collect();
        let f = b
            .begin_function(void, None, FunctionControl::NONE, fn_ty)
            .unwrap();
        for (i, (end, uses)) in blocks.iter().enumerate() {
            b.begin_block(Some(labels[i])).unwrap();
            let operand = uses.map_or(one, |u| values[u]);
            b.i_add(uint, Some(values[i]), one, operand).unwrap();
            match end {
                End::Br(t) => b.branch(labels[*t]).unwrap(),
                End::If(t, e) => b
                    .branch_conditional(conds[i], labels[*t], labels[*e], [])
                    .unwrap(),
                End::IfMerged(t, e, m) => {
                    b.selection_merge(labels[*m], SelectionControl::NONE)
                        .unwrap();
                    b.branch_conditional(conds[i], labels[*t], labels[*e], [])
                        .unwrap()
                }
                End::Switch(cases, default) => b
                    .switch(
                        selector,
                        labels[*default],
                        cases
                            .iter()
                            .map(|&(v, t)| (Operand::LiteralBit32(v), labels[t])),
                    )
                    .unwrap(),
                End::Ret => b.ret().unwrap(),
            }
        }
        b.end_function().unwrap();
        b.entry_point(ExecutionModel::GLCompute, f, "main", []);
        b.execution_mode(f, rspirv::spirv::ExecutionMode::LocalSize, [1, 1, 1]);
        b.module()
    }

    /// Structures the shader and checks the result with spirv-val.
    fn structured(blocks: &[(End, Option<usize>)]) -> Result<rspirv::dr::Module, String> {
        let mut ctx = Ctx::new(shader(blocks));
        run(&mut ctx)?;
        crate::compiler::link::validate_vulkan(&ctx.module.assemble())?;
        Ok(ctx.module)
    }

    fn count(m: &rspirv::dr::Module, op: Op) -> usize {
        m.functions[0]
            .blocks
            .iter()
            .flat_map(|b| &b.instructions)
            .filter(|i| i.class.opcode == op)
            .count()
    }

    #[test]
    fn early_returns_meet_at_one_return() {
        use End::*;
        let m = structured(&[
            (If(1, 2), None),
            (Ret, None),
            (If(3, 4), None),
            (Ret, Some(2)),
            (Ret, Some(0)),
        ])
        .unwrap();
        assert_eq!(count(&m, Op::Return), 1);
        assert_eq!(count(&m, Op::SelectionMerge), 2);
    }

    #[test]
    fn loop_with_breaks_continues_and_a_return() {
        use End::*;
        // 1: header; 2 breaks to 5 or goes on; 3 continues or returns;
        // 4 continues; 5 uses a value from the body.
        let m = structured(&[
            (Br(1), None),
            (If(2, 6), None),
            (If(5, 3), None),
            (If(1, 7), Some(2)),
            (Br(1), None),
            (Ret, Some(2)),
            (Ret, None),
            (If(4, 6), Some(3)),
        ])
        .unwrap();
        assert_eq!(count(&m, Op::LoopMerge), 1);
        assert_eq!(count(&m, Op::Return), 1);
    }

    #[test]
    fn break_out_of_nested_loops() {
        use End::*;
        // Outer loop 1..4, inner loop 2..3; 3 leaves both loops to 5.
        let m = structured(&[
            (Br(1), None),
            (If(2, 5), None),
            (If(3, 4), None),
            (If(2, 5), Some(2)),
            (Br(1), None),
            (Ret, Some(1)),
        ])
        .unwrap();
        assert_eq!(count(&m, Op::LoopMerge), 2);
    }

    #[test]
    fn switch_with_fallthrough_and_shared_targets() {
        use End::*;
        let m = structured(&[
            (Switch(vec![(0, 1), (1, 2), (2, 3), (3, 3)], 4), None),
            (Br(2), None),
            (Br(5), None),
            (Br(5), None),
            (Br(5), None),
            (Ret, None),
        ])
        .unwrap();
        assert_eq!(count(&m, Op::Switch), 0);
    }

    #[test]
    fn merges_already_declared_are_kept_valid() {
        use End::*;
        let m = structured(&[(IfMerged(1, 2, 2), None), (Br(2), None), (Ret, None)]).unwrap();
        assert_eq!(count(&m, Op::SelectionMerge), 1);
    }

    #[test]
    fn jumps_into_a_loop_get_one_entry() {
        use End::*;
        // The cycle 1 <-> 2 is entered at both blocks.
        let m = structured(&[
            (If(1, 2), None),
            (If(2, 3), None),
            (Br(1), Some(0)),
            (Ret, None),
        ])
        .unwrap();
        assert_eq!(count(&m, Op::LoopMerge), 1);
    }

    #[test]
    fn loops_that_never_exit_get_an_exit_never_taken() {
        use End::*;
        // The loop 1 -> {2, 3} -> 1 has no way out; nor has block 5.
        let m = structured(&[
            (If(1, 4), None),
            (If(2, 3), None),
            (Br(1), Some(1)),
            (Br(1), None),
            (If(5, 6), None),
            (Br(5), None),
            (Ret, Some(4)),
        ])
        .unwrap();
        assert_eq!(count(&m, Op::LoopMerge), 2);
        // A function that never returns at all.
        let m = structured(&[(Br(1), None), (If(1, 2), None), (Br(1), Some(1))]).unwrap();
        assert_eq!(count(&m, Op::LoopMerge), 1);
    }
}
