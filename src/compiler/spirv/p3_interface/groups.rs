//! Pass 12 (phase 3): Sub-groups. OpenCL's sub-group built-in variables
//! become Vulkan's (SubgroupId and SubgroupLocalInvocationId are the same
//! variables; the maximum size is Vulkan's SubgroupSize, or the enqueued
//! work-group's size when that is smaller), with the ones Vulkan lacks
//! computed: the size of this sub-group (the last one of a work-group may
//! be smaller), the number of sub-groups (computed too, as some drivers
//! round it down when the last sub-group is partial) and the number of
//! sub-groups of an enqueued (uniform) work-group. Sub-groups are taken to
//! be filled in local-index order, SubgroupSize invocations each (kernels
//! with sub-groups run as 1-D Vulkan work-groups, so drivers that lay
//! sub-groups out along x give exactly that). Collective operations with
//! Subgroup scope (OpGroupAll, OpGroupAny, OpGroupBroadcast, OpGroupIAdd,
//! ...) become their `OpGroupNonUniform*` forms. With Workgroup scope (the
//! work-group collectives) they become sub-group steps over a Workgroup
//! array: level k treats the reductions of level k-1's sub-groups as its
//! items, for as many levels as the device's largest work-group needs, and
//! the scans bring the prefixes back down the same levels; barriers
//! separate the levels and the calls, and no branch is added (collectives
//! are met in uniform control flow). Other scopes are refused by name.
//!
//! Takes the kernel after `relocate`, the `Block`, and the device's
//! sub-group levels, shuffles and clustered operations. Guarantees no
//! OpenCL sub-group built-in variable or `OpGroup*` collective is left:
//! sub-group ones are `OpGroupNonUniform*`, work-group ones levels of
//! sub-group steps; another scope, or a work-group collective on a device
//! without sub-group arithmetic, fails by name; returns whether the kernel
//! must run as 1-D work-groups.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{BuiltIn, Capability, Decoration, GroupOperation, Op, StorageClass, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::p3_interface::builtins::{flatten_workgroup, workgroup_size};
use crate::compiler::spirv::p3_interface::interface::Block;

/// Vulkan's SubgroupScope and WorkgroupScope.
const SUBGROUP: u32 = 3;
const WORKGROUP: u32 = 2;

/// What the work-group collectives are built from: the device's sub-group
/// width and largest work-group.
#[derive(Clone, Copy, Debug)]
pub struct Levels {
    pub subgroup_size: u32,
    pub max_work_group_size: u32,
}

impl Levels {
    /// How many sub-group steps cover the largest work-group.
    fn count(self) -> u32 {
        let s = self.subgroup_size.max(2) as u64;
        let mut k = 1;
        let mut span = s;
        while span < self.max_work_group_size as u64 {
            span *= s;
            k += 1;
        }
        k
    }
}

/// The identity of a reduction, as a constant of `ty`.
fn identity(ctx: &mut Ctx, nu: Op, ty: Word) -> Result<Word, String> {
    let t = ctx.global(ty).ok_or("untyped group operand")?.clone();
    let width = match t.operands.first() {
        Some(Operand::LiteralBit32(w)) => *w,
        _ => return Err("group operation on a vector".into()),
    };
    if t.class.opcode == Op::TypeFloat {
        // Zero, +infinity and -infinity.
        let (zero, inf) = match width {
            32 => (0u64, 0x7f80_0000u64),
            64 => (0, 0x7ff0_0000_0000_0000),
            _ => {
                return Err(format!(
                    "work-group collectives on {width}-bit floats are not supported yet"
                ));
            }
        };
        let bits = match nu {
            Op::GroupNonUniformFAdd => zero,
            Op::GroupNonUniformFMin => inf,
            Op::GroupNonUniformFMax => inf | 1 << (width - 1),
            _ => return Err(format!("{nu:?} on floats")),
        };
        return Ok(ctx.const_int(ty, bits));
    }
    let ones = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let sign = 1u64 << (width - 1);
    let v = match nu {
        Op::GroupNonUniformIAdd | Op::GroupNonUniformUMax => 0,
        Op::GroupNonUniformUMin => ones,
        Op::GroupNonUniformSMin => ones >> 1,
        Op::GroupNonUniformSMax => sign,
        _ => return Err(format!("{nu:?} on integers")),
    };
    Ok(ctx.const_int(ty, v))
}

/// The Workgroup array of `ty` the collectives share, one element per
/// work-item of the largest work-group (made on first use).
fn scratch(ctx: &mut Ctx, ty: Word, len: u32) -> Word {
    let n = ctx.const_u32(len);
    let arr = ctx.ty(Op::TypeArray, vec![Operand::IdRef(ty), Operand::IdRef(n)]);
    let ptr = ctx.pointer(StorageClass::Workgroup, arr);
    if let Some(v) = ctx.module.types_global_values.iter().find_map(|i| {
        (i.class.opcode == Op::Variable
            && i.result_type == Some(ptr)
            && ctx.decoration_literal(i.result_id.unwrap_or(0), Decoration::Alignment)
                == Some(0xC011))
        .then_some(i.result_id)
        .flatten()
    }) {
        return v;
    }
    let v = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(ptr),
        Some(v),
        vec![Operand::StorageClass(StorageClass::Workgroup)],
    ));
    // A marker to find it again; finish strips Alignment decorations.
    ctx.decorate(
        v,
        Decoration::Alignment,
        vec![Operand::LiteralBit32(0xC011)],
    );
    for ep in &mut ctx.module.entry_points {
        ep.operands.push(Operand::IdRef(v));
    }
    v
}

/// A barrier over the work-group's local memory (OpenCL semantics: the
/// sync pass makes them Vulkan's).
fn barrier(ctx: &mut Ctx, code: &mut Vec<Instruction>) {
    let wg = ctx.const_u32(WORKGROUP);
    let sem = ctx.const_u32(0x108);
    code.push(Instruction::new(
        Op::ControlBarrier,
        None,
        None,
        vec![
            Operand::IdScope(wg),
            Operand::IdScope(wg),
            Operand::IdMemorySemantics(sem),
        ],
    ));
}

fn element(ctx: &mut Ctx, code: &mut Vec<Instruction>, arr: Word, ty: Word, i: Word) -> Word {
    let p = ctx.pointer(StorageClass::Workgroup, ty);
    op(ctx, code, Op::AccessChain, p, &[arr, i])
}

fn store(code: &mut Vec<Instruction>, p: Word, v: Word) {
    code.push(Instruction::new(
        Op::Store,
        None,
        None,
        vec![Operand::IdRef(p), Operand::IdRef(v)],
    ));
}

/// A sub-group step: `nu` with `group_op` over the sub-group.
fn sg_step(
    ctx: &mut Ctx,
    code: &mut Vec<Instruction>,
    nu: Op,
    ty: Word,
    group_op: rspirv::spirv::GroupOperation,
    v: Word,
) -> Word {
    let sg = ctx.const_u32(SUBGROUP);
    let r = ctx.fresh();
    code.push(Instruction::new(
        nu,
        Some(ty),
        Some(r),
        vec![
            Operand::IdScope(sg),
            Operand::GroupOperation(group_op),
            Operand::IdRef(v),
        ],
    ));
    r
}

/// One work-group collective, lowered to sub-group steps over a Workgroup
/// array, with no branches (collectives are met in uniform control flow).
/// Level k treats the reductions of level k-1's sub-groups as its items;
/// the prefixes come back down the same levels for the scans.
fn work_group_op(
    ctx: &mut Ctx,
    code: &mut Vec<Instruction>,
    i: &Instruction,
    nu: Op,
    lv: Levels,
    value_types: &HashMap<Word, Word>,
) -> Result<(), String> {
    use rspirv::spirv::GroupOperation as G;
    let rty = i.result_type.ok_or("group operation without type")?;
    let rid = i.result_id.ok_or("group operation without id")?;
    let u32t = ctx.uint(32);
    let bool_t = ctx.ty(Op::TypeBool, vec![]);
    let len = lv.max_work_group_size;
    let wv = input(ctx, BuiltIn::SubgroupSize);
    let w = op(ctx, code, Op::Load, u32t, &[wv]);
    let idx_var = input(ctx, BuiltIn::LocalInvocationIndex);
    let me = op(ctx, code, Op::Load, u32t, &[idx_var]);
    let size = workgroup_size(ctx);
    let l = linear(ctx, code, size);
    let zero = ctx.const_u32(0);
    barrier(ctx, code);
    if nu == Op::GroupNonUniformBroadcast {
        // Everyone writes its value; all read the one asked for.
        let x = id_at(i, 1).ok_or("broadcast without value")?;
        let arr = scratch(ctx, rty, len);
        let p = element(ctx, code, arr, rty, me);
        store(code, p, x);
        barrier(ctx, code);
        let lid = id_at(i, 2).ok_or("broadcast without id")?;
        let lid_ty = value_types
            .get(&lid)
            .copied()
            .or_else(|| ctx.type_of(lid))
            .ok_or("untyped id")?;
        // The id's components, as the local linear id (size_t or a vector).
        let comps: Vec<Word> = match ctx.global(lid_ty).map(|t| t.class.opcode) {
            Some(Op::TypeVector) => {
                let n = match ctx.global(lid_ty).and_then(|t| t.operands.get(1)) {
                    Some(Operand::LiteralBit32(n)) => *n,
                    _ => 1,
                };
                let ct = id_at(ctx.global(lid_ty).ok_or("vector")?, 0).ok_or("vector")?;
                (0..n)
                    .map(|k| {
                        let c = extract(ctx, code, ct, lid, k);
                        if ct == u32t {
                            c
                        } else {
                            op(ctx, code, Op::UConvert, u32t, &[c])
                        }
                    })
                    .collect()
            }
            _ => vec![if lid_ty == u32t {
                lid
            } else {
                op(ctx, code, Op::UConvert, u32t, &[lid])
            }],
        };
        let sx = extract(ctx, code, u32t, size, 0);
        let sy = extract(ctx, code, u32t, size, 1);
        let mut at = comps[0];
        if let Some(&y) = comps.get(1) {
            let t = op(ctx, code, Op::IMul, u32t, &[y, sx]);
            at = op(ctx, code, Op::IAdd, u32t, &[at, t]);
        }
        if let Some(&z) = comps.get(2) {
            let sxy = op(ctx, code, Op::IMul, u32t, &[sx, sy]);
            let t = op(ctx, code, Op::IMul, u32t, &[z, sxy]);
            at = op(ctx, code, Op::IAdd, u32t, &[at, t]);
        }
        let p = element(ctx, code, arr, rty, at);
        let v = op(ctx, code, Op::Load, rty, &[p]);
        barrier(ctx, code);
        code.push(Instruction::new(
            Op::CopyObject,
            Some(rty),
            Some(rid),
            vec![Operand::IdRef(v)],
        ));
        return Ok(());
    }
    // all/any: reductions of 0/1 by min/max.
    let (nu, ty, x, group_op) = match nu {
        Op::GroupNonUniformAll | Op::GroupNonUniformAny => {
            let pred = id_at(i, 1).ok_or("vote without predicate")?;
            let one = ctx.const_u32(1);
            let v = op(ctx, code, Op::Select, u32t, &[pred, one, zero]);
            let m = if nu == Op::GroupNonUniformAll {
                Op::GroupNonUniformUMin
            } else {
                Op::GroupNonUniformUMax
            };
            (m, u32t, v, G::Reduce)
        }
        _ => {
            let g = match i.operands.get(1) {
                Some(Operand::GroupOperation(g)) => *g,
                _ => return Err("group operation without its kind".into()),
            };
            (
                nu,
                rty,
                id_at(i, 2).ok_or("group operation without value")?,
                g,
            )
        }
    };
    let e = identity(ctx, nu, ty)?;
    let arr = scratch(ctx, ty, len);
    let combine = |ctx: &mut Ctx, code: &mut Vec<Instruction>, a: Word, b: Word| -> Word {
        let o = match nu {
            Op::GroupNonUniformIAdd => Op::IAdd,
            Op::GroupNonUniformFAdd => Op::FAdd,
            _ => Op::Nop,
        };
        if o != Op::Nop {
            return op(ctx, code, o, ty, &[a, b]);
        }
        let cmp = match nu {
            Op::GroupNonUniformSMin => Op::SLessThan,
            Op::GroupNonUniformUMin => Op::ULessThan,
            Op::GroupNonUniformFMin => Op::FOrdLessThan,
            Op::GroupNonUniformSMax => Op::SGreaterThan,
            Op::GroupNonUniformUMax => Op::UGreaterThan,
            _ => Op::FOrdGreaterThan,
        };
        let bool_t = ctx.ty(Op::TypeBool, vec![]);
        let c = op(ctx, code, cmp, bool_t, &[a, b]);
        op(ctx, code, Op::Select, ty, &[c, a, b])
    };
    let levels = lv.count();
    // Up: the items of each level, their exclusive prefixes in their
    // sub-group, and the level's reductions.
    let mut y = x;
    let mut ex = Vec::new();
    let mut total = None;
    for k in 0..levels {
        ex.push(sg_step(ctx, code, nu, ty, G::ExclusiveScan, y));
        let red = sg_step(ctx, code, nu, ty, G::Reduce, y);
        let p = element(ctx, code, arr, ty, me);
        store(code, p, red);
        barrier(ctx, code);
        if k + 1 == levels {
            let p = element(ctx, code, arr, ty, zero);
            total = Some(op(ctx, code, Op::Load, ty, &[p]));
            barrier(ctx, code);
            break;
        }
        // Item j of the next level is sub-group j of this one.
        let j = op(ctx, code, Op::IMul, u32t, &[me, w]);
        let inside = op(ctx, code, Op::ULessThan, bool_t, &[j, l]);
        let safe = op(ctx, code, Op::Select, u32t, &[inside, j, zero]);
        let p = element(ctx, code, arr, ty, safe);
        let v = op(ctx, code, Op::Load, ty, &[p]);
        y = op(ctx, code, Op::Select, ty, &[inside, v, e]);
        barrier(ctx, code);
    }
    let total = total.ok_or("no levels")?;
    let value = if group_op == G::Reduce {
        total
    } else {
        // Down: the prefix before each item of level k is the prefix
        // before its sub-group (an item of level k+1) and its own
        // exclusive prefix in the sub-group.
        let mut prefix = ex[levels as usize - 1];
        for k in (0..levels as usize - 1).rev() {
            let p = element(ctx, code, arr, ty, me);
            store(code, p, prefix);
            barrier(ctx, code);
            let up = op(ctx, code, Op::UDiv, u32t, &[me, w]);
            let p = element(ctx, code, arr, ty, up);
            let before = op(ctx, code, Op::Load, ty, &[p]);
            barrier(ctx, code);
            prefix = combine(ctx, code, before, ex[k]);
        }
        if group_op == G::InclusiveScan {
            combine(ctx, code, prefix, x)
        } else {
            prefix
        }
    };
    match i.class.opcode {
        Op::GroupAll | Op::GroupAny => {
            let r = op(ctx, code, Op::INotEqual, bool_t, &[value, zero]);
            code.push(Instruction::new(
                Op::CopyObject,
                Some(rty),
                Some(rid),
                vec![Operand::IdRef(r)],
            ));
        }
        _ => code.push(Instruction::new(
            Op::CopyObject,
            Some(rty),
            Some(rid),
            vec![Operand::IdRef(value)],
        )),
    }
    Ok(())
}

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

/// The value of a cluster size operand: a constant power of two.
fn cluster_size(ctx: &Ctx, cluster: Word) -> Result<u32, String> {
    ctx.global(cluster)
        .and_then(|c| match c.operands.first() {
            Some(Operand::LiteralBit32(v)) => Some(*v),
            _ => None,
        })
        .filter(|v| v.is_power_of_two())
        .ok_or_else(|| "a cluster size that is not a constant power of two".into())
}

/// `sub_group_rotate` and `sub_group_clustered_rotate`
/// (OpGroupNonUniformRotateKHR) become shuffles: from lane (id + delta)
/// modulo the maximum sub-group size, or within the cluster (whose size
/// is a power of two) of this lane. The OpenCL built-ins read here are
/// lowered below like the kernel's own.
fn lower_rotates(ctx: &mut Ctx, shuffles: bool) -> Result<(), String> {
    let any = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
        .any(|i| i.class.opcode == Op::GroupNonUniformRotateKHR);
    ctx.module.extensions.retain(|e| {
        e.operands.first() != Some(&Operand::LiteralString("SPV_KHR_subgroup_rotate".into()))
    });
    if !any {
        return Ok(());
    }
    if !shuffles {
        return Err("sub_group_rotate needs sub-group shuffles, which the device lacks".into());
    }
    let u32t = ctx.uint(32);
    let lane_var = input(ctx, BuiltIn::SubgroupLocalInvocationId);
    let max_var = input(ctx, BuiltIn::SubgroupMaxSize);
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                if i.class.opcode != Op::GroupNonUniformRotateKHR {
                    out.push(i);
                    continue;
                }
                let (scope, value, delta) = match (i.operands.first(), id_at(&i, 1), id_at(&i, 2)) {
                    (Some(s), Some(v), Some(d)) => (s.clone(), v, d),
                    _ => return Err("malformed sub-group rotate".into()),
                };
                let lane = op(ctx, &mut out, Op::Load, u32t, &[lane_var]);
                let to = op(ctx, &mut out, Op::IAdd, u32t, &[lane, delta]);
                let from = match id_at(&i, 3) {
                    None => {
                        let max = op(ctx, &mut out, Op::Load, u32t, &[max_var]);
                        op(ctx, &mut out, Op::UMod, u32t, &[to, max])
                    }
                    Some(cluster) => {
                        let size = cluster_size(ctx, cluster)?;
                        let low = ctx.const_u32(size - 1);
                        let high = ctx.const_u32(!(size - 1));
                        let base = op(ctx, &mut out, Op::BitwiseAnd, u32t, &[lane, high]);
                        let within = op(ctx, &mut out, Op::BitwiseAnd, u32t, &[to, low]);
                        op(ctx, &mut out, Op::BitwiseOr, u32t, &[base, within])
                    }
                };
                out.push(Instruction::new(
                    Op::GroupNonUniformShuffle,
                    i.result_type,
                    i.result_id,
                    vec![scope, Operand::IdRef(value), Operand::IdRef(from)],
                ));
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    Ok(())
}

/// The operation that combines two values the way the non-uniform group
/// arithmetic `o` does, for [`lower_clustered`].
fn combine(ctx: &mut Ctx, code: &mut Vec<Instruction>, o: Op, ty: Word, a: Word, b: Word) -> Word {
    let boolt = ctx.ty(Op::TypeBool, vec![]);
    let glsl = |ctx: &mut Ctx, code: &mut Vec<Instruction>, n: u32| {
        let set = ctx.ext_import_or_add("GLSL.std.450");
        let r = ctx.fresh();
        code.push(Instruction::new(
            Op::ExtInst,
            Some(ty),
            Some(r),
            vec![
                Operand::IdRef(set),
                Operand::LiteralExtInstInteger(n),
                Operand::IdRef(a),
                Operand::IdRef(b),
            ],
        ));
        r
    };
    let pick = |ctx: &mut Ctx, code: &mut Vec<Instruction>, less: Op, min: bool| {
        let c = op(ctx, code, less, boolt, &[a, b]);
        let (x, y) = if min { (a, b) } else { (b, a) };
        op(ctx, code, Op::Select, ty, &[c, x, y])
    };
    match o {
        Op::GroupNonUniformIAdd => op(ctx, code, Op::IAdd, ty, &[a, b]),
        Op::GroupNonUniformFAdd => op(ctx, code, Op::FAdd, ty, &[a, b]),
        Op::GroupNonUniformIMul => op(ctx, code, Op::IMul, ty, &[a, b]),
        Op::GroupNonUniformFMul => op(ctx, code, Op::FMul, ty, &[a, b]),
        Op::GroupNonUniformSMin => pick(ctx, code, Op::SLessThan, true),
        Op::GroupNonUniformUMin => pick(ctx, code, Op::ULessThan, true),
        Op::GroupNonUniformSMax => pick(ctx, code, Op::SLessThan, false),
        Op::GroupNonUniformUMax => pick(ctx, code, Op::ULessThan, false),
        // NMin and NMax: a NaN loses to a number.
        Op::GroupNonUniformFMin => glsl(ctx, code, 79),
        Op::GroupNonUniformFMax => glsl(ctx, code, 80),
        Op::GroupNonUniformBitwiseAnd => op(ctx, code, Op::BitwiseAnd, ty, &[a, b]),
        Op::GroupNonUniformBitwiseOr => op(ctx, code, Op::BitwiseOr, ty, &[a, b]),
        Op::GroupNonUniformBitwiseXor => op(ctx, code, Op::BitwiseXor, ty, &[a, b]),
        Op::GroupNonUniformLogicalAnd => op(ctx, code, Op::LogicalAnd, ty, &[a, b]),
        Op::GroupNonUniformLogicalOr => op(ctx, code, Op::LogicalOr, ty, &[a, b]),
        _ => op(ctx, code, Op::LogicalNotEqual, ty, &[a, b]),
    }
}

/// Clustered reductions (`sub_group_clustered_reduce_*`) on devices
/// without Vulkan's clustered operations but with shuffles and ballots:
/// each work-item reads its cluster's values by shuffles and combines those
/// of the active work-items (a ballot says which), in lane order, so that
/// every work-item of a cluster computes the same result.
fn lower_clustered(ctx: &mut Ctx) -> Result<(), String> {
    let clustered = |i: &Instruction| {
        i.operands.get(1) == Some(&Operand::GroupOperation(GroupOperation::ClusteredReduce))
            && capability_of(i.class.opcode) == Some(Capability::GroupNonUniformArithmetic)
    };
    let any = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
        .any(clustered);
    if !any {
        return Ok(());
    }
    let u32t = ctx.uint(32);
    let boolt = ctx.ty(Op::TypeBool, vec![]);
    let uvec4 = ctx.vector(u32t, 4);
    let yes = match ctx
        .module
        .types_global_values
        .iter()
        .find(|i| i.class.opcode == Op::ConstantTrue && i.result_type == Some(boolt))
        .and_then(|i| i.result_id)
    {
        Some(t) => t,
        None => {
            let t = ctx.fresh();
            ctx.module.types_global_values.push(Instruction::new(
                Op::ConstantTrue,
                Some(boolt),
                Some(t),
                vec![],
            ));
            t
        }
    };
    let lane_var = input(ctx, BuiltIn::SubgroupLocalInvocationId);
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                if !clustered(&i) {
                    out.push(i);
                    continue;
                }
                let (scope, value, cluster, ty) = match (
                    i.operands.first(),
                    id_at(&i, 2),
                    id_at(&i, 3),
                    i.result_type,
                ) {
                    (Some(s), Some(v), Some(c), Some(t)) => (s.clone(), v, c, t),
                    _ => return Err("malformed clustered reduction".into()),
                };
                let size = cluster_size(ctx, cluster)?;
                let group =
                    |ctx: &mut Ctx, out: &mut Vec<Instruction>, o: Op, ty, args: &[Word]| {
                        let r = ctx.fresh();
                        let mut ops = vec![scope.clone()];
                        ops.extend(args.iter().map(|&a| Operand::IdRef(a)));
                        out.push(Instruction::new(o, Some(ty), Some(r), ops));
                        r
                    };
                let active = group(ctx, &mut out, Op::GroupNonUniformBallot, uvec4, &[yes]);
                let lane = op(ctx, &mut out, Op::Load, u32t, &[lane_var]);
                let high = ctx.const_u32(!(size - 1));
                let base = op(ctx, &mut out, Op::BitwiseAnd, u32t, &[lane, high]);
                let (mut acc, mut have) = (value, yes);
                for j in 0..size {
                    let offset = ctx.const_u32(j);
                    let from = op(ctx, &mut out, Op::IAdd, u32t, &[base, offset]);
                    let v = group(
                        ctx,
                        &mut out,
                        Op::GroupNonUniformShuffle,
                        ty,
                        &[value, from],
                    );
                    let on = group(
                        ctx,
                        &mut out,
                        Op::GroupNonUniformBallotBitExtract,
                        boolt,
                        &[active, from],
                    );
                    if j == 0 {
                        (acc, have) = (v, on);
                        continue;
                    }
                    let both = combine(ctx, &mut out, i.class.opcode, ty, acc, v);
                    let next = op(ctx, &mut out, Op::Select, ty, &[have, both, v]);
                    acc = op(ctx, &mut out, Op::Select, ty, &[on, next, acc]);
                    if j + 1 < size {
                        have = op(ctx, &mut out, Op::LogicalOr, boolt, &[have, on]);
                    }
                }
                out.push(Instruction::new(
                    Op::CopyObject,
                    Some(ty),
                    i.result_id,
                    vec![Operand::IdRef(acc)],
                ));
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    Ok(())
}

/// Whether `i`, an operation `o`, is a broadcast from a lane that is not a
/// constant.
fn runtime_lane(ctx: &Ctx, o: Op, i: &Instruction) -> bool {
    o == Op::GroupNonUniformBroadcast && id_at(i, 2).is_some_and(|l| ctx.global(l).is_none())
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
///
/// `shuffles`: the device has sub-group shuffles, which carry broadcasts
/// whose lane is not a constant (see below).
pub fn run(
    ctx: &mut Ctx,
    block: &Block,
    caps: Option<Levels>,
    shuffles: bool,
    clustered: bool,
) -> Result<bool, String> {
    lower_rotates(ctx, shuffles)?;
    if !clustered && shuffles {
        lower_clustered(ctx)?;
    }
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
                    | BuiltIn::SubgroupEqMask
                    | BuiltIn::SubgroupGeMask
                    | BuiltIn::SubgroupGtMask
                    | BuiltIn::SubgroupLeMask
                    | BuiltIn::SubgroupLtMask
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
    // The types of the function's values (broadcast ids are computed).
    let value_types: HashMap<Word, Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| {
            f.blocks
                .iter()
                .flat_map(|b| &b.instructions)
                .chain(&f.parameters)
        })
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
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
                    if scope == Some(WORKGROUP) {
                        let Some(sg) = caps else {
                            return Err(format!(
                                "{o:?} with Workgroup scope is not supported on this device"
                            ));
                        };
                        let mut code = Vec::new();
                        work_group_op(ctx, &mut code, &i, nu, sg, &value_types)?;
                        out.extend(code);
                        continue;
                    }
                    if scope != Some(SUBGROUP) {
                        return Err(format!("{o:?} with scope {scope:?} is not supported yet"));
                    }
                    // A broadcast from a lane chosen at run time becomes a
                    // shuffle, which gives the same value when the lane is
                    // uniform, as OpenCL requires; and the front end's
                    // optimiser merges broadcasts from two branches into one
                    // call on a selected lane, which only a shuffle answers
                    // per invocation.
                    let nu = if shuffles && runtime_lane(ctx, nu, &i) {
                        Op::GroupNonUniformShuffle
                    } else {
                        nu
                    };
                    out.push(Instruction::new(
                        nu,
                        i.result_type,
                        i.result_id,
                        i.operands.clone(),
                    ));
                    continue;
                }
                if shuffles && runtime_lane(ctx, o, &i) {
                    out.push(Instruction::new(
                        Op::GroupNonUniformShuffle,
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
    ctx.forget_globals(&gone.into_iter().collect());
    if uses_subgroups {
        flatten_workgroup(ctx);
    }
    Ok(uses_subgroups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    /// An argument block of a kernel without images.
    fn block() -> Block {
        Block {
            var: 0,
            global_offset: 0,
            global_size: 3,
            work_dim: 6,
            group_offset: 7,
            enqueued_local_size: 10,
            images: Vec::new(),
        }
    }

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
        let block = block();
        run(&mut ctx, &block, None, false, true).unwrap();
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
    fn clustered_reductions_become_shuffles_without_clustered_operations() {
        let text = r#"
            OpCapability Kernel
            OpCapability Addresses
            OpCapability GroupNonUniformArithmetic
            OpCapability GroupNonUniformClustered
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %f "k"
            %uint = OpTypeInt 32 0
            %void = OpTypeVoid
            %fn = OpTypeFunction %void
            %sg = OpConstant %uint 3
            %four = OpConstant %uint 4
            %one = OpConstant %uint 1
            %f = OpFunction %void None %fn
            %e = OpLabel
            %r = OpGroupNonUniformIAdd %uint %sg ClusteredReduce %one %four
            OpReturn
            OpFunctionEnd
            "#;
        let block = block();
        let ops = |shuffles: bool, clustered: bool| {
            let mut ctx = assemble(text);
            run(&mut ctx, &block, None, shuffles, clustered).unwrap();
            ctx.module.functions[0].blocks[0]
                .instructions
                .iter()
                .map(|i| i.class.opcode)
                .collect::<Vec<Op>>()
        };
        // With Vulkan's clustered operations, or with nothing to build
        // them from, the reduction stays.
        assert!(ops(true, true).contains(&Op::GroupNonUniformIAdd));
        assert!(ops(false, false).contains(&Op::GroupNonUniformIAdd));
        // Otherwise: one shuffle and one ballot bit per lane of the cluster.
        let lowered = ops(true, false);
        assert!(!lowered.contains(&Op::GroupNonUniformIAdd));
        let count = |o: Op| lowered.iter().filter(|&&x| x == o).count();
        assert_eq!(count(Op::GroupNonUniformShuffle), 4);
        assert_eq!(count(Op::GroupNonUniformBallotBitExtract), 4);
        assert_eq!(count(Op::IAdd), 4 + 3);
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
        let block = block();
        let e = run(&mut ctx, &block, None, false, true).unwrap_err();
        assert!(e.contains("GroupIAdd"), "{e}");
    }

    #[test]
    fn workgroup_reduce_is_sub_group_steps_and_barriers() {
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
            %r = OpGroupIAdd %uint %wg InclusiveScan %one
            OpReturn
            OpFunctionEnd
            "#,
        );
        let block = block();
        let levels = Levels {
            subgroup_size: 8,
            max_work_group_size: 1024,
        };
        assert_eq!(levels.count(), 4);
        assert!(run(&mut ctx, &block, Some(levels), false, true).unwrap());
        let ops: Vec<Op> = ctx.module.functions[0].blocks[0]
            .instructions
            .iter()
            .map(|i| i.class.opcode)
            .collect();
        let count = |o: Op| ops.iter().filter(|&&x| x == o).count();
        // Four levels up (a scan and a reduction each), three down.
        assert_eq!(count(Op::GroupNonUniformIAdd), 8);
        assert!(count(Op::ControlBarrier) >= 8);
        assert_eq!(count(Op::GroupIAdd), 0);
        // No branches: collectives are met in uniform control flow.
        assert_eq!(ctx.module.functions[0].blocks.len(), 1);
    }
}
