//! Pass 8 (phase 2): Vectors Vulkan lacks. OpenCL's 8- and 16-component
//! vectors become arrays of their components, and every operation on them
//! works component by component. Arrays keep the OpenCL C memory layout
//! (the components are contiguous), so loads and stores through pointers
//! need no change; composite instructions work on arrays as they did on
//! vectors.
//!
//! Takes the kernel after `convert`. Guarantees no vector type of 8 or 16
//! components is left; values of those types are arrays with the same
//! memory layout, operated on component by component.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Decoration, Op, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};

/// Opcodes that apply to each component: a result component is the
/// operation on the operands' same components (scalars stay whole).
fn componentwise(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        SNegate
            | FNegate
            | IAdd
            | FAdd
            | ISub
            | FSub
            | IMul
            | FMul
            | UDiv
            | SDiv
            | FDiv
            | UMod
            | SRem
            | SMod
            | FRem
            | FMod
            | ShiftRightLogical
            | ShiftRightArithmetic
            | ShiftLeftLogical
            | BitwiseOr
            | BitwiseXor
            | BitwiseAnd
            | Not
            | ConvertFToU
            | ConvertFToS
            | ConvertSToF
            | ConvertUToF
            | UConvert
            | SConvert
            | FConvert
            | IEqual
            | INotEqual
            | UGreaterThan
            | SGreaterThan
            | UGreaterThanEqual
            | SGreaterThanEqual
            | ULessThan
            | SLessThan
            | ULessThanEqual
            | SLessThanEqual
            | FOrdEqual
            | FUnordEqual
            | FOrdNotEqual
            | FUnordNotEqual
            | FOrdLessThan
            | FUnordLessThan
            | FOrdGreaterThan
            | FUnordGreaterThan
            | FOrdLessThanEqual
            | FUnordLessThanEqual
            | FOrdGreaterThanEqual
            | FUnordGreaterThanEqual
            | LogicalEqual
            | LogicalNotEqual
            | LogicalOr
            | LogicalAnd
            | LogicalNot
            | IsNan
            | IsInf
            | IsFinite
            | IsNormal
            | SignBitSet
            | Ordered
            | Unordered
            | Select
            | ExtInst
            | VectorTimesScalar
            | BitCount
            | BitReverse
            | BitFieldInsert
            | BitFieldSExtract
            | BitFieldUExtract
            | GroupBroadcast
            | GroupNonUniformBroadcast
            | GroupNonUniformBroadcastFirst
            | GroupNonUniformShuffle
            | GroupNonUniformShuffleXor
            | GroupNonUniformShuffleUp
            | GroupNonUniformShuffleDown
            | GroupNonUniformRotateKHR
    )
}

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    // Wide vector types and the arrays replacing them: (component, count).
    let mut wide: HashMap<Word, (Word, u32)> = HashMap::default();
    for t in &ctx.module.types_global_values {
        if t.class.opcode == Op::TypeVector {
            if let (Some(c), Some(Operand::LiteralBit32(n))) = (id_at(t, 0), t.operands.get(1)) {
                if *n > 4 {
                    wide.insert(t.result_id.expect("types have ids"), (c, *n));
                }
            }
        }
    }
    if wide.is_empty() {
        return Ok(());
    }
    // The vector type becomes an array type with the same id; its length
    // constant may come later in the module, so the section is re-sorted.
    let lengths: Vec<(Word, u32)> = wide.iter().map(|(&id, &(_, n))| (id, n)).collect();
    for (id, n) in lengths {
        let len = ctx.const_u32(n);
        let (comp, _) = wide[&id];
        if let Some(t) = ctx
            .module
            .types_global_values
            .iter_mut()
            .find(|t| t.result_id == Some(id))
        {
            *t = Instruction::new(
                Op::TypeArray,
                None,
                Some(id),
                vec![Operand::IdRef(comp), Operand::IdRef(len)],
            );
        }
    }
    ctx.sort_globals();
    // Value types, to know which operands are wide.
    let mut types = ctx.value_types();
    // Operations that must round on their own; so must their components.
    let exact: crate::compiler::spirv::common::HashSet<Word> = ctx
        .module
        .annotations
        .iter()
        .filter(|a| a.operands.get(1) == Some(&Operand::Decoration(Decoration::NoContraction)))
        .filter_map(|a| id_at(a, 0))
        .collect();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let rt = i.result_type.filter(|t| wide.contains_key(t));
                let touches_wide = rt.is_some()
                    || i.operands.iter().any(|o| matches!(o, Operand::IdRef(x) if types.get(x).is_some_and(|t| wide.contains_key(t))));
                if !touches_wide {
                    out.push(i);
                    continue;
                }
                match i.class.opcode {
                    // Work on arrays as they did on vectors.
                    Op::Load
                    | Op::Store
                    | Op::Phi
                    | Op::CompositeExtract
                    | Op::CompositeInsert
                    | Op::CopyObject
                    | Op::Undef => out.push(i),
                    Op::Select
                        if id_at(&i, 0)
                            .and_then(|c| types.get(&c))
                            .is_some_and(|t| !wide.contains_key(t)) =>
                    {
                        out.push(i)
                    }
                    Op::CompositeConstruct => {
                        // Vector constituents are spread into components.
                        let (comp, _) = wide[&rt.ok_or("construct of a wide vector")?];
                        let mut parts = Vec::new();
                        for o in &i.operands {
                            let Operand::IdRef(x) = o else { continue };
                            let xt = types.get(x).copied();
                            let lanes = xt.and_then(|t| vector_lanes(ctx, &wide, t));
                            match lanes {
                                Some(n) => {
                                    for k in 0..n {
                                        let e = extract(ctx, &mut out, comp, *x, k);
                                        parts.push(Operand::IdRef(e));
                                    }
                                }
                                None => parts.push(Operand::IdRef(*x)),
                            }
                        }
                        out.push(Instruction::new(
                            Op::CompositeConstruct,
                            i.result_type,
                            i.result_id,
                            parts,
                        ));
                    }
                    Op::VectorExtractDynamic | Op::VectorInsertDynamic => {
                        // Arrays have no dynamic component access as values:
                        // compare the index with each position.
                        let v = id_at(&i, 0).ok_or("bad dynamic component access")?;
                        let vt = *types.get(&v).ok_or("dynamic access of unknown type")?;
                        let (comp, n) = wide[&vt];
                        let inserting = i.class.opcode == Op::VectorInsertDynamic;
                        let idx = id_at(&i, if inserting { 2 } else { 1 }).ok_or("bad index")?;
                        let it = *types.get(&idx).ok_or("index of unknown type")?;
                        let bool_ty = ctx.ty(Op::TypeBool, vec![]);
                        let mut chosen: Option<Word> = None;
                        let mut parts = Vec::new();
                        for k in 0..n {
                            let e = extract(ctx, &mut out, comp, v, k);
                            let kc = ctx.const_int(it, u64::from(k));
                            let hit = ctx.fresh();
                            out.push(Instruction::new(
                                Op::IEqual,
                                Some(bool_ty),
                                Some(hit),
                                vec![Operand::IdRef(idx), Operand::IdRef(kc)],
                            ));
                            let (yes, no) = if inserting {
                                (id_at(&i, 1).ok_or("bad insert")?, e)
                            } else {
                                (e, chosen.unwrap_or(e))
                            };
                            let s = ctx.fresh();
                            out.push(Instruction::new(
                                Op::Select,
                                Some(comp),
                                Some(s),
                                vec![Operand::IdRef(hit), Operand::IdRef(yes), Operand::IdRef(no)],
                            ));
                            types.insert(s, comp);
                            chosen = Some(s);
                            parts.push(Operand::IdRef(s));
                        }
                        if inserting {
                            out.push(Instruction::new(
                                Op::CompositeConstruct,
                                i.result_type,
                                i.result_id,
                                parts,
                            ));
                        } else {
                            out.push(Instruction::new(
                                Op::CopyObject,
                                i.result_type,
                                i.result_id,
                                vec![Operand::IdRef(chosen.ok_or("empty vector")?)],
                            ));
                        }
                    }
                    Op::VectorShuffle => {
                        let rty = i.result_type.ok_or("shuffle without type")?;
                        let (a, bb) = (
                            id_at(&i, 0).ok_or("bad shuffle")?,
                            id_at(&i, 1).ok_or("bad shuffle")?,
                        );
                        let na = types
                            .get(&a)
                            .and_then(|t| vector_lanes(ctx, &wide, *t))
                            .ok_or("bad shuffle")?;
                        let comp = component_of(ctx, &wide, types[&a]).ok_or("bad shuffle")?;
                        let mut parts = Vec::new();
                        for o in &i.operands[2..] {
                            let Operand::LiteralBit32(k) = o else {
                                continue;
                            };
                            let (src, idx) = if *k == u32::MAX {
                                (a, 0)
                            } else if *k < na {
                                (a, *k)
                            } else {
                                (bb, *k - na)
                            };
                            let e = extract(ctx, &mut out, comp, src, idx);
                            parts.push(Operand::IdRef(e));
                        }
                        out.push(Instruction::new(
                            Op::CompositeConstruct,
                            Some(rty),
                            i.result_id,
                            parts,
                        ));
                    }
                    op if componentwise(op) => {
                        let rty = i.result_type.ok_or("operation without type")?;
                        let n = vector_lanes(ctx, &wide, rty)
                            .or_else(|| {
                                i.operands.iter().find_map(|o| match o {
                                    Operand::IdRef(x) => {
                                        types.get(x).and_then(|t| wide.get(t)).map(|w| w.1)
                                    }
                                    _ => None,
                                })
                            })
                            .ok_or("bad component-wise operation")?;
                        let rcomp = component_of(ctx, &wide, rty).ok_or_else(|| {
                            format!(
                                "{op:?} on a wide vector with a scalar result is not supported yet"
                            )
                        })?;
                        let mut parts = Vec::new();
                        for k in 0..n {
                            let ops: Vec<Operand> = i
                                .operands
                                .iter()
                                .map(|o| match o {
                                    Operand::IdRef(x)
                                        if types.get(x).is_some_and(|t| wide.contains_key(t)) =>
                                    {
                                        let c = component_of(ctx, &wide, types[x]).expect("wide");
                                        let e = extract(ctx, &mut out, c, *x, k);
                                        Operand::IdRef(e)
                                    }
                                    other => other.clone(),
                                })
                                .collect();
                            let e = ctx.fresh();
                            let opk = if op == Op::VectorTimesScalar {
                                Op::FMul
                            } else {
                                op
                            };
                            out.push(Instruction::new(opk, Some(rcomp), Some(e), ops));
                            if i.result_id.is_some_and(|r| exact.contains(&r)) {
                                ctx.decorate(e, Decoration::NoContraction, vec![]);
                            }
                            types.insert(e, rcomp);
                            parts.push(Operand::IdRef(e));
                        }
                        out.push(Instruction::new(
                            Op::CompositeConstruct,
                            Some(rty),
                            i.result_id,
                            parts,
                        ));
                    }
                    Op::Bitcast => {
                        let rty = i.result_type.ok_or("bitcast without type")?;
                        let src = id_at(&i, 0).ok_or("bad bitcast")?;
                        let sty = *types.get(&src).ok_or("bitcast of unknown type")?;
                        let parts = reinterpret(ctx, &mut out, &wide, src, sty, rty)?;
                        if parts.len() == 1 {
                            out.push(Instruction::new(
                                Op::CopyObject,
                                Some(rty),
                                i.result_id,
                                vec![Operand::IdRef(parts[0])],
                            ));
                        } else {
                            out.push(Instruction::new(
                                Op::CompositeConstruct,
                                Some(rty),
                                i.result_id,
                                parts.into_iter().map(Operand::IdRef).collect(),
                            ));
                        }
                    }
                    Op::Any | Op::All | Op::Dot => {
                        // Reductions: combine the components pairwise.
                        let rty = i.result_type.ok_or("reduction without type")?;
                        let srcs: Vec<Word> =
                            (0..i.operands.len()).filter_map(|n| id_at(&i, n)).collect();
                        let src_ty = *types.get(&srcs[0]).ok_or("reduction of unknown type")?;
                        let n = vector_lanes(ctx, &wide, src_ty).ok_or("bad reduction")?;
                        let comp = component_of(ctx, &wide, src_ty).expect("wide");
                        let (combine, opk) = match i.class.opcode {
                            Op::Any => (Op::LogicalOr, None),
                            Op::All => (Op::LogicalAnd, None),
                            _ => (Op::FAdd, Some(Op::FMul)),
                        };
                        let mut acc: Option<Word> = None;
                        for k in 0..n {
                            let mut v = extract(ctx, &mut out, comp, srcs[0], k);
                            if let Some(mul) = opk {
                                let w = extract(ctx, &mut out, comp, srcs[1], k);
                                let p = ctx.fresh();
                                out.push(Instruction::new(
                                    mul,
                                    Some(rty),
                                    Some(p),
                                    vec![Operand::IdRef(v), Operand::IdRef(w)],
                                ));
                                v = p;
                            }
                            acc = Some(match acc {
                                None => v,
                                Some(a) => {
                                    let c = ctx.fresh();
                                    out.push(Instruction::new(
                                        combine,
                                        Some(rty),
                                        Some(c),
                                        vec![Operand::IdRef(a), Operand::IdRef(v)],
                                    ));
                                    c
                                }
                            });
                        }
                        out.push(Instruction::new(
                            Op::CopyObject,
                            Some(rty),
                            i.result_id,
                            vec![Operand::IdRef(acc.ok_or("empty reduction")?)],
                        ));
                    }
                    other => {
                        return Err(format!(
                            "{other:?} on 8/16-component vectors is not supported yet"
                        ));
                    }
                }
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    Ok(())
}

/// Emits the extraction of component `k` of `src` (of component type
/// `comp`) and returns its id.
pub(crate) fn extract(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    comp: Word,
    src: Word,
    k: u32,
) -> Word {
    let e = ctx.fresh();
    out.push(Instruction::new(
        Op::CompositeExtract,
        Some(comp),
        Some(e),
        vec![Operand::IdRef(src), Operand::LiteralBit32(k)],
    ));
    e
}

/// The bit width of a scalar type.
fn bits(ctx: &Ctx, t: Word) -> Option<u32> {
    let g = ctx.global(t)?;
    match (g.class.opcode, g.operands.first()) {
        (Op::TypeInt | Op::TypeFloat, Some(Operand::LiteralBit32(w))) => Some(*w),
        _ => None,
    }
}

/// The components of `value` (of type `ty`: a scalar, or a vector wide
/// or not), each extracted, with their type.
fn components(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    wide: &HashMap<Word, (Word, u32)>,
    value: Word,
    ty: Word,
) -> (Vec<Word>, Word) {
    match (vector_lanes(ctx, wide, ty), component_of(ctx, wide, ty)) {
        (Some(n), Some(c)) => ((0..n).map(|k| extract(ctx, out, c, value, k)).collect(), c),
        _ => (vec![value], ty),
    }
}

/// Scalars of `to` bits holding the bits of `parts` (of type `from`, in
/// order, lowest first as OpenCL lays out memory): groups of up to four
/// narrower scalars become one wider through a native vector, a wider
/// one splits into up to four narrower; 8 to 64 bits and back go through
/// 32.
fn rebits(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    parts: Vec<Word>,
    from: Word,
    to: Word,
) -> Result<Vec<Word>, String> {
    let (fb, tb) = (
        bits(ctx, from).ok_or("bitcast of a non-scalar component")?,
        bits(ctx, to).ok_or("bitcast to a non-scalar component")?,
    );
    let cast = |ctx: &mut Ctx, out: &mut Vec<Instruction>, ty: Word, v: Word| {
        let r = ctx.fresh();
        out.push(Instruction::new(
            Op::Bitcast,
            Some(ty),
            Some(r),
            vec![Operand::IdRef(v)],
        ));
        r
    };
    if fb == tb {
        return Ok(parts.into_iter().map(|p| cast(ctx, out, to, p)).collect());
    }
    if fb.max(tb) / fb.min(tb) > 4 {
        let mid = ctx.uint(32);
        let halfway = rebits(ctx, out, parts, from, mid)?;
        return rebits(ctx, out, halfway, mid, to);
    }
    if fb < tb {
        let r = (tb / fb) as usize;
        if parts.len() % r != 0 {
            return Err("a bitcast between different sizes".into());
        }
        let group = ctx.vector(from, r as u32);
        Ok(parts
            .chunks(r)
            .map(|c| {
                let v = ctx.fresh();
                out.push(Instruction::new(
                    Op::CompositeConstruct,
                    Some(group),
                    Some(v),
                    c.iter().map(|&p| Operand::IdRef(p)).collect(),
                ));
                cast(ctx, out, to, v)
            })
            .collect())
    } else {
        let r = fb / tb;
        let group = ctx.vector(to, r);
        let mut res = Vec::new();
        for p in parts {
            let v = cast(ctx, out, group, p);
            res.extend((0..r).map(|k| extract(ctx, out, to, v, k)));
        }
        Ok(res)
    }
}

/// OpBitcast where one side is an 8- or 16-component vector: the source's
/// components, regrouped into the result's. Gives the result's components.
fn reinterpret(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    wide: &HashMap<Word, (Word, u32)>,
    src: Word,
    sty: Word,
    rty: Word,
) -> Result<Vec<Word>, String> {
    let (parts, from) = components(ctx, out, wide, src, sty);
    let to = component_of(ctx, wide, rty).unwrap_or(rty);
    let res = rebits(ctx, out, parts, from, to)?;
    if res.len() as u32 != vector_lanes(ctx, wide, rty).unwrap_or(1) {
        return Err("a bitcast between different sizes".into());
    }
    Ok(res)
}

/// Components of a vector type (wide or not), or `None` for scalars.
fn vector_lanes(ctx: &Ctx, wide: &HashMap<Word, (Word, u32)>, t: Word) -> Option<u32> {
    if let Some(w) = wide.get(&t) {
        return Some(w.1);
    }
    let g = ctx.global(t)?;
    match (g.class.opcode, g.operands.get(1)) {
        (Op::TypeVector, Some(Operand::LiteralBit32(n))) => Some(*n),
        _ => None,
    }
}

/// The component type of a vector type (wide or not).
fn component_of(ctx: &Ctx, wide: &HashMap<Word, (Word, u32)>, t: Word) -> Option<Word> {
    if let Some(w) = wide.get(&t) {
        return Some(w.0);
    }
    let g = ctx.global(t)?;
    (g.class.opcode == Op::TypeVector)
        .then(|| id_at(g, 0))
        .flatten()
}
