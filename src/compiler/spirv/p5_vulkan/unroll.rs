//! After assembly, on devices with bounded loops (phase 5): Unrolling
//! innermost loops for drivers that end loops after a fixed number of
//! iterations: Mesa's llvmpipe (lavapipe) gives each invocation 65535 loop
//! back-edges, over all its loops together, then leaves every loop at its
//! next back-edge. A kernel whose work-items loop longer would silently
//! compute the wrong thing there. With each innermost loop's body repeated
//! `factor` times between two back-edges, a work-item may loop `factor`
//! times longer. Kernels launched as a single work-item, which walk whole
//! buffers alone, are rewritten once more for such launches, with far more
//! copies (see [`run`]).
//!
//! Takes the finished module and whether the launch is one work-item.
//! Guarantees the same results, with qualifying innermost loops repeated;
//! returns whether a single-work-item launch would get more copies. The
//! caller validates the result and keeps the loops as they were if it does
//! not validate.
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
//!
//! [`run`]: crate::compiler::spirv::p5_vulkan::unroll::run

use rspirv::dr::{Block, Function, Instruction, Operand};
use rspirv::spirv::{Op, Word};

use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::input::reflect::id;
use crate::compiler::spirv::p4_addressing::structure;

/// Copies per back-edge at most, and instructions the copies may add in
/// all, in a kernel launched as one work-item: such a kernel (a task, a
/// sequential scan) walks whole buffers in its loops, millions of
/// iterations, and needs hundreds of copies of a small body.
const SINGLE_FACTOR: usize = 512;
const SINGLE_BUDGET: usize = 16384;
/// Copies per back-edge at most, and instructions one loop may grow to,
/// elsewhere: llvmpipe compiles large shaders slowly, and most kernels
/// are compiled for many work-items that loop less each.
const MAX_FACTOR: usize = 16;
const LOOP_BUDGET: usize = 2000;
/// Barriers one loop may hold once repeated: llvmpipe runs a work-group
/// with barriers as coroutines, and compiling them grows much faster than
/// the code (each barrier is a suspension point).
const BARRIER_BUDGET: usize = 16;

/// Repeats the body of every innermost loop that qualifies: as far as
/// a kernel of one work-item needs (`single_work_item`, kernels without
/// barriers), else within a budget per loop. Returns whether a kernel of
/// one work-item would get more copies than this rewrite gave.
pub fn run(ctx: &mut Ctx, single_work_item: bool) -> bool {
    let mut functions = std::mem::take(&mut ctx.module.functions);
    let with_barriers = functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
        .any(|i| i.class.opcode == Op::ControlBarrier);
    let headers = |f: &Function| -> Vec<Word> {
        f.blocks
            .iter()
            .filter(|b| merge_of(b).is_some())
            .filter_map(label)
            .collect()
    };
    // One work-item: every repeated loop gets the same number of copies,
    // as many as the kernel's budget allows.
    let total: usize = functions
        .iter()
        .flat_map(|f| headers(f).into_iter().filter_map(|h| find_loop(f, h).ok()))
        .map(|l| l.size)
        .sum();
    let single_factor = (SINGLE_BUDGET / total.max(1)).min(SINGLE_FACTOR);
    let single = (single_work_item && !with_barriers).then_some(single_factor);
    let mut single_gets_more = false;
    for f in &mut functions {
        for h in headers(f) {
            let l = match find_loop(f, h) {
                Ok(l) => l,
                Err(why) => {
                    log::trace!(target: "vkcl::compiler", "loop {h} not unrolled: {why}");
                    continue;
                }
            };
            let factor = single.unwrap_or_else(|| {
                let cap = BARRIER_BUDGET.checked_div(l.barriers).unwrap_or(MAX_FACTOR);
                (LOOP_BUDGET / l.size.max(1)).min(MAX_FACTOR).min(cap)
            });
            single_gets_more |= !with_barriers && single_factor > factor;
            if factor < 2 {
                log::trace!(target: "vkcl::compiler", "loop {h} not unrolled: {} instructions, {} barriers", l.size, l.barriers);
                continue;
            }
            log::trace!(target: "vkcl::compiler", "loop {h}: {factor} copies of {} instructions", l.size);
            repeat(ctx, f, &l, factor);
        }
    }
    ctx.module.functions = functions;
    single_gets_more
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

/// An innermost loop that can be repeated, as `repeat` needs it.
struct Loop {
    header: Word,
    merge: Word,
    cont: Word,
    /// Indices of the header, the continue target and the merge block.
    hi: usize,
    ci: usize,
    mi: usize,
    /// The loop's blocks, by label and by index in order.
    in_loop: HashSet<Word>,
    blocks: Vec<usize>,
    /// Instructions and barriers of one copy.
    size: usize,
    barriers: usize,
    /// Results defined in the loop.
    defined: HashSet<Word>,
    /// The header's phis: result, value from the back-edge.
    header_phis: Vec<(Word, Word)>,
    /// Loop values used after the loop, other than by the merge's phis,
    /// and their types.
    escaping: Vec<Word>,
    types: HashMap<Word, Word>,
}

/// The loop headed by `h` if it can be repeated, else why not.
fn find_loop(f: &Function, h: Word) -> Result<Loop, &'static str> {
    let index: HashMap<Word, usize> = f
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(n, b)| Some((label(b)?, n)))
        .collect();
    let hi = *index.get(&h).ok_or("no header")?;
    let (merge, cont) = merge_of(&f.blocks[hi]).ok_or("not a loop")?;
    // The loop's blocks: reachable from the header without its merge.
    let mut in_loop: HashSet<Word> = HashSet::from_iter([h]);
    let mut stack = vec![h];
    while let Some(b) = stack.pop() {
        let bi = *index.get(&b).ok_or("a branch to nowhere")?;
        for s in successors(&f.blocks[bi]) {
            if s != merge && in_loop.insert(s) {
                stack.push(s);
            }
        }
    }
    let ci = *index.get(&cont).ok_or("no continue target")?;
    let blocks: Vec<usize> = {
        let mut v: Vec<usize> = in_loop
            .iter()
            .filter_map(|b| index.get(b).copied())
            .collect();
        v.sort_unstable();
        v
    };
    if blocks
        .iter()
        .any(|&b| b != hi && merge_of(&f.blocks[b]).is_some())
    {
        return Err("holds a loop");
    }
    let size: usize = blocks.iter().map(|&b| f.blocks[b].instructions.len()).sum();
    let barriers = blocks
        .iter()
        .flat_map(|&b| &f.blocks[b].instructions)
        .filter(|i| i.class.opcode == Op::ControlBarrier)
        .count();
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
        return Err("more than one back-edge");
    }
    let cont_succ = successors(&f.blocks[ci]);
    if !cont_succ.iter().all(|&s| s == h || s == merge) {
        return Err("its continue target branches elsewhere");
    }
    if cont != h && preds(cont).len() != 1 {
        return Err("`continue` from within the body");
    }
    // The merge block is reached from the loop only.
    let mi = *index.get(&merge).ok_or("no merge block")?;
    let outside_preds = f
        .blocks
        .iter()
        .filter(|b| label(b).is_some_and(|l| !in_loop.contains(&l)))
        .any(|b| successors(b).contains(&merge));
    if outside_preds {
        return Err("its merge is reached from outside");
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
        return Err("an untyped value escapes");
    }
    Ok(Loop {
        header: h,
        merge,
        cont,
        hi,
        ci,
        mi,
        in_loop,
        blocks,
        size,
        barriers,
        defined,
        header_phis,
        escaping,
        types,
    })
}

/// Repeats `l`'s body `factor` times between two back-edges.
fn repeat(ctx: &mut Ctx, f: &mut Function, l: &Loop, factor: usize) {
    let Loop {
        header: h,
        merge,
        cont,
        hi,
        ci,
        mi,
        ref in_loop,
        ref blocks,
        ref defined,
        ref header_phis,
        ref escaping,
        ref types,
        ..
    } = *l;
    // Copies 2..=factor: an id map each (copy 1 is the original).
    let mut maps: Vec<HashMap<Word, Word>> = vec![HashMap::default()];
    let mut copies: Vec<Vec<Block>> = Vec::new();
    for k in 1..factor {
        let mut map: HashMap<Word, Word> = HashMap::default();
        for &id in defined.iter().chain(in_loop.iter()) {
            map.insert(id, ctx.fresh());
        }
        // The header's phis take the previous copy's back-edge values.
        let prev = &maps[k - 1];
        for &(phi, back) in header_phis {
            let v = prev.get(&back).copied().unwrap_or(back);
            map.insert(phi, v);
        }
        let mut out = Vec::new();
        for &b in blocks {
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
    let mut replaced: HashMap<Word, Word> = HashMap::default();
    let mut new_phis = Vec::new();
    for &v in escaping {
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
