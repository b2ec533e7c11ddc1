//! `vload_half`, `vstore_half` and their vector,
//! aligned and rounding-mode forms, which read and write 16-bit floats in
//! memory while computing in 32-bit floats.
//!
//! Without `cl_khr_fp16` a kernel can only point at `half` values, never
//! compute with them, so the module's `half` type becomes a 16-bit integer
//! (Vulkan then needs only 16-bit storage, not 16-bit arithmetic) and the
//! conversions are integer arithmetic on the bits: half to float is exact;
//! float to half rounds to nearest even, toward zero, or toward either
//! infinity exactly as the OpenCL C specification asks, denormals included.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{FPRoundingMode, GlslStd450Op as G, Op, OpenclStd100Op as C, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::emit::{self, Emit};

/// Replaces the module's 16-bit float type by the 16-bit integer type.
pub fn retype_half(ctx: &mut Ctx) {
    let Some(half) = ctx.module.types_global_values.iter().find_map(|t| {
        (t.class.opcode == Op::TypeFloat && t.operands.first() == Some(&Operand::LiteralBit32(16)))
            .then_some(t.result_id)
            .flatten()
    }) else {
        return;
    };
    let short = ctx.uint(16);
    // Cooperative matrices of half keep the 16-bit float type (see the
    // matrix pass): bitcasts join them to the bits below.
    let matrices: crate::compiler::spirv::common::HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| t.class.opcode == Op::TypeCooperativeMatrixKHR && id_at(t, 0) == Some(half))
        .filter_map(|t| t.result_id)
        .collect();
    if matrices.is_empty() {
        ctx.module
            .types_global_values
            .retain(|t| t.result_id != Some(half));
    }
    let swap = |i: &mut Instruction| {
        if i.class.opcode == Op::TypeCooperativeMatrixKHR || i.result_id == Some(half) {
            return;
        }
        if i.result_type == Some(half) {
            i.result_type = Some(short);
        }
        for o in &mut i.operands {
            if let Operand::IdRef(x) = o {
                if *x == half {
                    *x = short;
                }
            }
        }
    };
    ctx.module.types_global_values.iter_mut().for_each(swap);
    ctx.module.annotations.iter_mut().for_each(swap);
    for f in &mut ctx.module.functions {
        f.def.iter_mut().for_each(swap);
        f.parameters.iter_mut().for_each(swap);
        for b in &mut f.blocks {
            b.instructions.iter_mut().for_each(swap);
        }
    }
    // The 16-bit integer type may come after types that now use it.
    ctx.sort_globals();
    merge_duplicate_types(ctx);
    if !matrices.is_empty() {
        crate::compiler::spirv::p1_kernel::matrix::reconcile_halves(ctx, half, short, &matrices);
    }
}

/// Vectors and pointers of `half` may now repeat those of `ushort`, which
/// SPIR-V does not allow: each repeat gives way to the first declaration
/// (until none is left, as merged vectors may make pointers repeat).
fn merge_duplicate_types(ctx: &mut Ctx) {
    loop {
        let mut first: HashMap<(Op, Vec<Operand>), Word> = HashMap::default();
        let mut merged: HashMap<Word, Word> = HashMap::default();
        for t in &ctx.module.types_global_values {
            if !matches!(
                t.class.opcode,
                Op::TypeVector | Op::TypePointer | Op::TypeFunction
            ) {
                continue;
            }
            let Some(id) = t.result_id else { continue };
            match first.entry((t.class.opcode, t.operands.clone())) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    merged.insert(id, *e.get());
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(id);
                }
            }
        }
        if merged.is_empty() {
            return;
        }
        ctx.module
            .types_global_values
            .retain(|t| !t.result_id.is_some_and(|r| merged.contains_key(&r)));
        ctx.module.debug_names.retain(
            |i| !matches!(i.operands.first(), Some(Operand::IdRef(t)) if merged.contains_key(t)),
        );
        ctx.module.annotations.retain(
            |i| !matches!(i.operands.first(), Some(Operand::IdRef(t)) if merged.contains_key(t)),
        );
        let rename = |i: &mut Instruction| {
            if let Some(t) = i.result_type.and_then(|t| merged.get(&t)) {
                i.result_type = Some(*t);
            }
            for o in &mut i.operands {
                if let Operand::IdRef(x) = o {
                    if let Some(y) = merged.get(x) {
                        *x = *y;
                    }
                }
            }
        };
        ctx.module.types_global_values.iter_mut().for_each(rename);
        ctx.module.annotations.iter_mut().for_each(rename);
        for f in &mut ctx.module.functions {
            f.def.iter_mut().for_each(rename);
            f.parameters.iter_mut().for_each(rename);
            for b in &mut f.blocks {
                b.instructions.iter_mut().for_each(rename);
            }
        }
    }
}

fn lanes(ctx: &Ctx, ty: Word) -> u32 {
    match ctx.global(ty) {
        Some(t) if t.class.opcode == Op::TypeVector => match t.operands.get(1) {
            Some(Operand::LiteralBit32(n)) => *n,
            _ => 1,
        },
        _ => 1,
    }
}

/// Lowers a half load or store; returns whether `op` was one.
pub fn lower(
    e: &mut Emit,
    op: C,
    i: &Instruction,
    types: &HashMap<Word, Word>,
) -> Result<bool, String> {
    let ids: Vec<Word> = (2..i.operands.len()).filter_map(|n| id_at(i, n)).collect();
    // The rounding mode of the _r forms is their last operand, a literal
    // that readers without the extended grammar see as a number.
    let mode = match op {
        C::vstore_half_r | C::vstore_halfn_r | C::vstorea_halfn_r => {
            let m = match i.operands.last() {
                Some(Operand::FPRoundingMode(m)) => *m as u32,
                Some(Operand::IdRef(n) | Operand::LiteralBit32(n)) => *n,
                _ => return Err("vstore_half_r without a rounding mode".into()),
            };
            Some(match m {
                0 => FPRoundingMode::RTE,
                1 => FPRoundingMode::RTZ,
                2 => FPRoundingMode::RTP,
                3 => FPRoundingMode::RTN,
                other => return Err(format!("unknown rounding mode {other}")),
            })
        }
        _ => None,
    };
    let (load, aligned) = match op {
        C::vload_half | C::vload_halfn => (true, false),
        C::vloada_halfn => (true, true),
        C::vstore_half | C::vstore_half_r | C::vstore_halfn | C::vstore_halfn_r => (false, false),
        C::vstorea_halfn | C::vstorea_halfn_r => (false, true),
        _ => return Ok(false),
    };
    let (offset, ptr, data) = if load {
        (ids[0], ids[1], None)
    } else {
        (ids[1], ids[2], Some(ids[0]))
    };
    let ptr_ty = *types
        .get(&ptr)
        .ok_or("vload_half through an unknown pointer")?;
    let (_, short) = e
        .ctx
        .pointer_parts(ptr_ty)
        .ok_or("vload_half without a pointer")?;
    let off_ty = *types
        .get(&offset)
        .ok_or("vload_half offset of unknown type")?;
    let value_ty = match data {
        None => i.result_type.ok_or("vload_half without a type")?,
        Some(d) => *types.get(&d).ok_or("vstore_half of unknown type")?,
    };
    let n = lanes(e.ctx, value_ty);
    // vloada/vstorea of 3 components step by 4, like vec3 in memory.
    let stride = if aligned && n == 3 { 4 } else { n };
    let kstride = e.konst(off_ty, u64::from(stride));
    let base = e.op(Op::IMul, off_ty, &[offset, kstride]);
    let float = e.ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let mut parts = Vec::new();
    for k in 0..n {
        let kc = e.konst(off_ty, u64::from(k));
        let index = e.op(Op::IAdd, off_ty, &[base, kc]);
        let p = e.op(Op::InBoundsPtrAccessChain, ptr_ty, &[ptr, index]);
        match data {
            None => {
                let bits = e.op(Op::Load, short, &[p]);
                parts.push(half_to_float(e, bits, float));
            }
            Some(d) => {
                // vstore_half of doubles: through float rounded to odd.
                let double = emit::width(e.ctx, value_ty) == Some(64);
                let component = if double {
                    e.ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(64)])
                } else {
                    float
                };
                let x = if n == 1 {
                    d
                } else {
                    let id = e.ctx.fresh();
                    e.out.push(Instruction::new(
                        Op::CompositeExtract,
                        Some(component),
                        Some(id),
                        vec![Operand::IdRef(d), Operand::LiteralBit32(k)],
                    ));
                    id
                };
                let x = if double {
                    double_to_float_odd(e, x, float)
                } else {
                    x
                };
                let bits = float_to_half(e, x, short, mode.unwrap_or(FPRoundingMode::RTE));
                e.out.push(Instruction::new(
                    Op::Store,
                    None,
                    None,
                    vec![Operand::IdRef(p), Operand::IdRef(bits)],
                ));
            }
        }
    }
    if load {
        let rty = i.result_type.ok_or("vload_half without a type")?;
        let rid = i.result_id.ok_or("vload_half without a result")?;
        let op = if n == 1 {
            Op::CopyObject
        } else {
            Op::CompositeConstruct
        };
        e.out.push(Instruction::new(
            op,
            Some(rty),
            Some(rid),
            parts.into_iter().map(Operand::IdRef).collect(),
        ));
    }
    Ok(true)
}

/// The float value of half bits (exact).
pub(crate) fn half_to_float(e: &mut Emit, bits: Word, float: Word) -> Word {
    let u = e.ctx.uint(32);
    let bt = e.ctx.ty(Op::TypeBool, vec![]);
    let h = e.op(Op::UConvert, u, &[bits]);
    let k = |e: &mut Emit, v: u64| e.konst(u, v);
    let (k8000, k10, k1f, k3ff, k13, k16, k23) = (
        k(e, 0x8000),
        k(e, 10),
        k(e, 0x1F),
        k(e, 0x3FF),
        k(e, 13),
        k(e, 16),
        k(e, 23),
    );
    let sign = e.op(Op::BitwiseAnd, u, &[h, k8000]);
    let sign = e.op(Op::ShiftLeftLogical, u, &[sign, k16]);
    let exp = e.op(Op::ShiftRightLogical, u, &[h, k10]);
    let exp = e.op(Op::BitwiseAnd, u, &[exp, k1f]);
    let mant = e.op(Op::BitwiseAnd, u, &[h, k3ff]);
    let mant13 = e.op(Op::ShiftLeftLogical, u, &[mant, k13]);
    // Normal numbers: rebias the exponent by 127 - 15.
    let rebias = k(e, 112);
    let e32 = e.op(Op::IAdd, u, &[exp, rebias]);
    let e32 = e.op(Op::ShiftLeftLogical, u, &[e32, k23]);
    let normal = e.op(Op::BitwiseOr, u, &[e32, mant13]);
    // Infinities and NaNs keep their payload.
    let inf = k(e, 0x7F80_0000);
    let special = e.op(Op::BitwiseOr, u, &[inf, mant13]);
    let all_ones = e.op(Op::IEqual, bt, &[exp, k1f]);
    let magnitude = e.select(u, all_ones, special, normal);
    // Zeros and denormals: mantissa * 2^-24, exact in float.
    let m_float = e.op(Op::ConvertUToF, float, &[mant]);
    let scale = e.konst(float, u64::from(2f32.powi(-24).to_bits()));
    let tiny = e.op(Op::FMul, float, &[m_float, scale]);
    let tiny = e.op(Op::Bitcast, u, &[tiny]);
    let zero = k(e, 0);
    let is_tiny = e.op(Op::IEqual, bt, &[exp, zero]);
    let magnitude = e.select(u, is_tiny, tiny, magnitude);
    let r = e.op(Op::BitwiseOr, u, &[magnitude, sign]);
    e.op(Op::Bitcast, float, &[r])
}

/// Double `x` as a float rounded to odd: the nearest float, moved to its
/// odd neighbour on the side of `x` where it is not exact. Float keeps
/// more than half's bits plus two, so rounding this once more to half, in
/// any rounding mode, is rounding `x` itself.
pub(crate) fn double_to_float_odd(e: &mut Emit, x: Word, float: Word) -> Word {
    let double = e.ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(64)]);
    let (ut, bt) = (e.ctx.uint(32), e.ctx.ty(Op::TypeBool, vec![]));
    let f = e.op(Op::FConvert, float, &[x]);
    let back = e.op(Op::FConvert, double, &[f]);
    let inexact = e.op(Op::FOrdNotEqual, bt, &[back, x]);
    let bits = e.op(Op::Bitcast, ut, &[f]);
    let (one, zero) = (e.konst(ut, 1), e.konst(ut, 0));
    let low = e.op(Op::BitwiseAnd, ut, &[bits, one]);
    let even = e.op(Op::IEqual, bt, &[low, zero]);
    let adjust = e.op(Op::LogicalAnd, bt, &[inexact, even]);
    let ax = e.glsl(G::FAbs, double, &[x]);
    let aback = e.glsl(G::FAbs, double, &[back]);
    let away = e.op(Op::FOrdGreaterThan, bt, &[ax, aback]);
    let bigger = e.op(Op::IAdd, ut, &[bits, one]);
    let smaller = e.op(Op::ISub, ut, &[bits, one]);
    let moved = e.select(ut, away, bigger, smaller);
    let odd = e.select(ut, adjust, moved, bits);
    e.op(Op::Bitcast, float, &[odd])
}

/// Half bits of float `x`, rounded with `mode`.
pub(crate) fn float_to_half(e: &mut Emit, x: Word, short: Word, mode: FPRoundingMode) -> Word {
    let u = e.ctx.uint(32);
    let bt = e.ctx.ty(Op::TypeBool, vec![]);
    let k = |e: &mut Emit, v: u64| e.konst(u, v);
    let bits = e.op(Op::Bitcast, u, &[x]);
    let (k7fff, k8000_0000, k16, k23, k7fffff, k800000) = (
        k(e, 0x7FFF_FFFF),
        k(e, 0x8000_0000),
        k(e, 16),
        k(e, 23),
        k(e, 0x7F_FFFF),
        k(e, 0x80_0000),
    );
    let abs = e.op(Op::BitwiseAnd, u, &[bits, k7fff]);
    let sign_bit = e.op(Op::BitwiseAnd, u, &[bits, k8000_0000]);
    let zero = k(e, 0);
    let negative = e.op(Op::INotEqual, bt, &[sign_bit, zero]);
    let sign16 = e.op(Op::ShiftRightLogical, u, &[sign_bit, k16]);
    // Unbiased exponent E and the 24-bit significand m (x = m * 2^(E-23)).
    let biased = e.op(Op::ShiftRightLogical, u, &[abs, k23]);
    let mant = e.op(Op::BitwiseAnd, u, &[abs, k7fffff]);
    let m = e.op(Op::BitwiseOr, u, &[mant, k800000]);
    // The half result before rounding is m >> s, plus the exponent field
    // for normal halves: s = 13 for normal halves (biased >= 113), and
    // 126 - biased for denormal halves, at most 25 (beyond, all is dropped).
    let k113 = k(e, 113);
    let is_normal = e.op(Op::UGreaterThanEqual, bt, &[biased, k113]);
    let k126 = k(e, 126);
    let denormal_shift = e.op(Op::ISub, u, &[k126, biased]);
    let k25 = k(e, 25);
    let beyond = e.op(Op::UGreaterThan, bt, &[denormal_shift, k25]);
    let denormal = e.op(Op::LogicalNot, bt, &[is_normal]);
    let too_far = e.op(Op::LogicalAnd, bt, &[denormal, beyond]);
    let denormal_shift = e.select(u, too_far, k25, denormal_shift);
    // Far below the smallest half, only a sticky bit remains.
    let one = k(e, 1);
    let m = e.select(u, too_far, one, m);
    let k13 = k(e, 13);
    let s = e.select(u, is_normal, k13, denormal_shift);
    let q = e.op(Op::ShiftRightLogical, u, &[m, s]);
    let low_mask = e.op(Op::ShiftLeftLogical, u, &[one, s]);
    let low_mask = e.op(Op::ISub, u, &[low_mask, one]);
    let rest = e.op(Op::BitwiseAnd, u, &[m, low_mask]);
    let s1 = e.op(Op::ISub, u, &[s, one]);
    let half_way = e.op(Op::ShiftLeftLogical, u, &[one, s1]);
    // Normal halves: exponent field (biased - 112) above 10 mantissa bits;
    // q carries the implicit bit, so add (biased - 113) << 10.
    let k10 = k(e, 10);
    let exp_field = e.op(Op::ISub, u, &[biased, k113]);
    let exp_field = e.op(Op::ShiftLeftLogical, u, &[exp_field, k10]);
    let exp_field = e.select(u, is_normal, exp_field, zero);
    let h = e.op(Op::IAdd, u, &[q, exp_field]);
    let inexact = e.op(Op::INotEqual, bt, &[rest, zero]);
    let up = match mode {
        FPRoundingMode::RTE => {
            let above = e.op(Op::UGreaterThan, bt, &[rest, half_way]);
            let tie = e.op(Op::IEqual, bt, &[rest, half_way]);
            let odd = e.op(Op::BitwiseAnd, u, &[q, one]);
            let odd = e.op(Op::INotEqual, bt, &[odd, zero]);
            let tie_up = e.op(Op::LogicalAnd, bt, &[tie, odd]);
            e.op(Op::LogicalOr, bt, &[above, tie_up])
        }
        // Toward zero drops the rest.
        FPRoundingMode::RTZ => {
            let id = e.ctx.fresh();
            e.ctx.module.types_global_values.push(Instruction::new(
                Op::ConstantFalse,
                Some(bt),
                Some(id),
                vec![],
            ));
            id
        }
        FPRoundingMode::RTP => {
            let positive = e.op(Op::LogicalNot, bt, &[negative]);
            e.op(Op::LogicalAnd, bt, &[inexact, positive])
        }
        FPRoundingMode::RTN => e.op(Op::LogicalAnd, bt, &[inexact, negative]),
    };
    let h_up = e.op(Op::IAdd, u, &[h, one]);
    let h = e.select(u, up, h_up, h);
    // Zero stays zero (its m has the implicit bit set by construction).
    let is_zero = e.op(Op::IEqual, bt, &[abs, zero]);
    let h = e.select(u, is_zero, zero, h);
    // Too large for a half: infinity or the largest half, by direction.
    let max_finite = k(e, 0x7BFF);
    let inf = k(e, 0x7C00);
    let overflow_value = match mode {
        FPRoundingMode::RTE => inf,
        FPRoundingMode::RTZ => max_finite,
        FPRoundingMode::RTP => e.select(u, negative, max_finite, inf),
        FPRoundingMode::RTN => e.select(u, negative, inf, max_finite),
    };
    // 65520 and above round to infinity in nearest mode; exactly: a value
    // whose exponent exceeds the half range, or that rounded up into it.
    let k142 = k(e, 142);
    let huge = e.op(Op::UGreaterThan, bt, &[biased, k142]);
    let rounded_to_inf = e.op(Op::UGreaterThanEqual, bt, &[h, inf]);
    let over = e.op(Op::LogicalOr, bt, &[huge, rounded_to_inf]);
    let h = e.select(u, over, overflow_value, h);
    // Infinity and NaN.
    let k7f80 = k(e, 0x7F80_0000);
    let is_inf = e.op(Op::IEqual, bt, &[abs, k7f80]);
    let h = e.select(u, is_inf, inf, h);
    let is_nan = e.op(Op::UGreaterThan, bt, &[abs, k7f80]);
    let quiet_nan = k(e, 0x7E00);
    let h = e.select(u, is_nan, quiet_nan, h);
    let h = e.op(Op::BitwiseOr, u, &[h, sign16]);
    e.op(Op::UConvert, short, &[h])
}
