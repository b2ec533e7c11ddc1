//! `cl_khr_fp16` arithmetic, computed in
//! single precision.
//!
//! vkcl keeps `half` values as their 16 bits (see [`half::retype_half`]):
//! Vulkan then needs 16-bit storage and integers only, never 16-bit
//! arithmetic. This pass runs first, on the module's own `half` type:
//!
//! * every operation on `half` values (arithmetic, comparisons, built-ins,
//!   group operations, image reads and writes) takes its `half` operands
//!   converted to float and gives a float that is converted back
//!   (`OpFConvert`); a built-in's `half` out-parameter (`modf`, `fract`,
//!   `sincos`) becomes a private float that is converted and stored after
//!   the call;
//! * conversions between `half` and integers go through float.
//!
//! Single precision has more than twice the bits of half plus two, so one
//! addition, subtraction, multiplication, division or square root computed
//! in float and rounded to half is the correctly rounded half result.
//!
//! [`lower_conversions`] runs after the retyping: the conversions between
//! float and the 16-bit bits become exact integer arithmetic (half to
//! float), or rounding with the conversion's rounding mode (float to half,
//! nearest even by default).
//!
//! On a device with hardware half arithmetic (`DeviceCaps::native_f16`:
//! shaderFloat16, rounding to nearest even declared and half denormals
//! kept) the operations Vulkan computes correctly rounded in half (add,
//! subtract, multiply, negate, comparisons) and the kernel's own `mad`
//! (any precision) stay in half: [`native_arithmetic`] gives them 16-bit
//! float operands again, bitcast from the bits. Conversions between half
//! and float, and to half from double, rounded to nearest even, are then
//! the hardware's `OpFConvert`s; the other rounding modes stay integer
//! work.
//!
//! [`half::retype_half`]: crate::compiler::spirv::p2_builtins::half::retype_half

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{
    Decoration, FPRoundingMode, GlslStd450Op, Op, OpenclStd100Op as C, StorageClass, Word,
};

use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::emit::{self, Emit};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::p2_builtins::{extinst, half};

/// (component type, lanes) of a scalar or vector type.
fn shape(ctx: &Ctx, ty: Word) -> (Word, Option<u32>) {
    emit::shape(ctx, ty).unwrap_or((ty, None))
}

/// Built-ins that only move `half` bits (or take no `half` arithmetic):
/// left alone.
fn moves_bits(op: C) -> bool {
    matches!(
        op,
        C::vloadn
            | C::vstoren
            | C::vload_half
            | C::vload_halfn
            | C::vloada_halfn
            | C::vstore_half
            | C::vstore_half_r
            | C::vstore_halfn
            | C::vstore_halfn_r
            | C::vstorea_halfn
            | C::vstorea_halfn_r
            | C::shuffle
            | C::shuffle2
            | C::printf
            | C::prefetch
            | C::bitselect
            | C::select
    )
}

/// Operations computed in float when they take or give `half` values.
fn computes(op: Op) -> bool {
    matches!(
        op,
        Op::FAdd
            | Op::FSub
            | Op::FMul
            | Op::FDiv
            | Op::FRem
            | Op::FMod
            | Op::FNegate
            | Op::VectorTimesScalar
            | Op::Dot
            | Op::FOrdEqual
            | Op::FUnordEqual
            | Op::FOrdNotEqual
            | Op::FUnordNotEqual
            | Op::FOrdLessThan
            | Op::FUnordLessThan
            | Op::FOrdGreaterThan
            | Op::FUnordGreaterThan
            | Op::FOrdLessThanEqual
            | Op::FUnordLessThanEqual
            | Op::FOrdGreaterThanEqual
            | Op::FUnordGreaterThanEqual
            | Op::IsNan
            | Op::IsInf
            | Op::IsFinite
            | Op::IsNormal
            | Op::SignBitSet
            | Op::Ordered
            | Op::Unordered
            | Op::LessOrGreater
            | Op::ConvertFToS
            | Op::ConvertFToU
            | Op::ConvertSToF
            | Op::ConvertUToF
            | Op::GroupFAdd
            | Op::GroupFMin
            | Op::GroupFMax
            | Op::GroupNonUniformFAdd
            | Op::GroupNonUniformFMul
            | Op::GroupNonUniformFMin
            | Op::GroupNonUniformFMax
            | Op::ImageSampleExplicitLod
            | Op::ImageRead
            | Op::ImageFetch
            | Op::ImageWrite
    )
}

/// Operations that keep `half` operands on a device with hardware half
/// arithmetic: Vulkan computes them correctly rounded (or exactly) in
/// 16-bit floats.
fn exact_in_half(op: Op) -> bool {
    matches!(
        op,
        Op::FAdd
            | Op::FSub
            | Op::FMul
            | Op::FNegate
            | Op::VectorTimesScalar
            | Op::FOrdEqual
            | Op::FUnordEqual
            | Op::FOrdNotEqual
            | Op::FUnordNotEqual
            | Op::FOrdLessThan
            | Op::FUnordLessThan
            | Op::FOrdGreaterThan
            | Op::FUnordGreaterThan
            | Op::FOrdLessThanEqual
            | Op::FUnordLessThanEqual
            | Op::FOrdGreaterThanEqual
            | Op::FUnordGreaterThanEqual
    )
}

/// Widens the module's `half` arithmetic to float (see the module
/// documentation), but for what stays in half where `native`. Runs
/// before [`half::retype_half`].
pub fn widen(ctx: &mut Ctx, native: bool) -> Result<(), String> {
    let Some(half_t) = ctx.find_type(Op::TypeFloat, &[Operand::LiteralBit32(16)]) else {
        return Ok(());
    };
    let float = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let ocl = ctx.ext_import("OpenCL.std");
    let types = ctx.value_types();
    let is_half = |ctx: &Ctx, ty: Word| shape(ctx, ty).0 == half_t;
    // Pointers to `half` values, by pointer type: (storage class, pointee).
    let half_pointee = |ctx: &Ctx, ty: Word| {
        ctx.pointer_parts(ty)
            .filter(|(_, p)| is_half(ctx, *p))
            .map(|(_, p)| p)
    };
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        // Private floats for half out-parameters, declared at the top.
        let mut locals: Vec<Instruction> = Vec::new();
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let ext = ocl.and_then(|set| extinst::opencl_op(&i, set));
                let candidate = match ext {
                    Some(op) => !moves_bits(op),
                    None => computes(i.class.opcode),
                };
                let result_half = i.result_type.is_some_and(|t| is_half(ctx, t));
                let operand_half = i.operands.iter().any(|o| match o {
                    Operand::IdRef(x) => types
                        .get(x)
                        .is_some_and(|t| is_half(ctx, *t) || half_pointee(ctx, *t).is_some()),
                    _ => false,
                });
                if !candidate || !(result_half || operand_half) {
                    out.push(i);
                    continue;
                }
                // Every value operand a half: the operation can stay.
                let all_half = |from: usize| {
                    i.operands[from.min(i.operands.len())..]
                        .iter()
                        .all(|o| match o {
                            Operand::IdRef(x) => types.get(x).is_some_and(|t| is_half(ctx, *t)),
                            _ => false,
                        })
                };
                let stays = match ext {
                    Some(C::mad) => result_half && all_half(2),
                    Some(_) => false,
                    None => exact_in_half(i.class.opcode) && all_half(0),
                };
                if native && stays {
                    out.push(i);
                    continue;
                }
                if ext == Some(C::nan) {
                    // The quiet NaN with the code in its low bits.
                    let (rty, rid) = (i.result_type.unwrap_or(half_t), i.result_id);
                    let code = id_at(&i, 2).ok_or("nan without a code")?;
                    let cty = *types.get(&code).ok_or("nan code of unknown type")?;
                    let mut e = Emit {
                        ctx,
                        out: &mut out,
                        glsl: &mut None,
                    };
                    let mask = e.konst(cty, 0x3FF);
                    let quiet = e.konst(cty, 0x7E00);
                    let code = e.op(Op::BitwiseAnd, cty, &[code, mask]);
                    let bits = e.op(Op::BitwiseOr, cty, &[code, quiet]);
                    out.push(Instruction::new(
                        Op::Bitcast,
                        Some(rty),
                        rid,
                        vec![Operand::IdRef(bits)],
                    ));
                    continue;
                }
                if i.class.opcode == Op::IsNormal {
                    is_normal(ctx, &mut out, &i)?;
                    continue;
                }
                if ext == Some(C::nextafter) && result_half {
                    next_after(ctx, &mut out, &i, float)?;
                    continue;
                }
                let mut ops = i.operands.clone();
                // Out-parameters: (the private float, the original pointer).
                let mut stores: Vec<(Word, Word, Word)> = Vec::new();
                for o in ops.iter_mut() {
                    let Operand::IdRef(x) = o else { continue };
                    let Some(t) = types.get(x).copied() else {
                        continue;
                    };
                    if is_half(ctx, t) {
                        let wide = emit::shaped_like(ctx, float, t);
                        let id = ctx.fresh();
                        out.push(Instruction::new(
                            Op::FConvert,
                            Some(wide),
                            Some(id),
                            vec![Operand::IdRef(*x)],
                        ));
                        *o = Operand::IdRef(id);
                    } else if let Some(pointee) = half_pointee(ctx, t) {
                        let wide = emit::shaped_like(ctx, float, pointee);
                        let ptr = ctx.pointer(StorageClass::Function, wide);
                        let var = ctx.fresh();
                        locals.push(Instruction::new(
                            Op::Variable,
                            Some(ptr),
                            Some(var),
                            vec![Operand::StorageClass(StorageClass::Function)],
                        ));
                        stores.push((var, *x, wide));
                        *o = Operand::IdRef(var);
                    }
                }
                let (result_type, result_id) = if result_half {
                    let t = i.result_type.unwrap_or(half_t);
                    (Some(emit::shaped_like(ctx, float, t)), Some(ctx.fresh()))
                } else {
                    (i.result_type, i.result_id)
                };
                if ext == Some(C::fma) && result_half {
                    let (
                        Some(ty),
                        Some(r),
                        [
                            _,
                            _,
                            Operand::IdRef(a),
                            Operand::IdRef(b),
                            Operand::IdRef(c),
                        ],
                    ) = (result_type, result_id, &ops[..])
                    else {
                        return Err("malformed fma".into());
                    };
                    let [a, b, c] = [*a, *b, *c];
                    fma_to_odd(ctx, &mut out, ty, r, [a, b, c]);
                } else {
                    out.push(Instruction::new(
                        i.class.opcode,
                        result_type,
                        result_id,
                        ops,
                    ));
                }
                let mut result_id = result_id;
                if let (Some(C::fract), Some(ty), Some(r)) = (ext, result_type, result_id) {
                    // The fraction stays below 1 in half too: at most
                    // 0x1.ffcp-1, the half below 1.
                    let mut e = Emit {
                        ctx,
                        out: &mut out,
                        glsl: &mut None,
                    };
                    let cap = e.konst(ty, u64::from((1.0f32 - 2f32.powi(-11)).to_bits()));
                    let bt = e.bool_like(ty);
                    let over = e.op(Op::FOrdGreaterThan, bt, &[r, cap]);
                    result_id = Some(e.select(ty, over, cap, r));
                }
                if let (true, Some(wide)) = (result_half, result_id) {
                    // The original id, and its decorations (a conversion's
                    // rounding mode), now name the narrowing.
                    out.push(Instruction::new(
                        Op::FConvert,
                        i.result_type,
                        i.result_id,
                        vec![Operand::IdRef(wide)],
                    ));
                }
                for (var, ptr, wide) in stores {
                    let pointee = types
                        .get(&ptr)
                        .and_then(|t| half_pointee(ctx, *t))
                        .ok_or("an out-parameter of unknown type")?;
                    let v = ctx.fresh();
                    out.push(Instruction::new(
                        Op::Load,
                        Some(wide),
                        Some(v),
                        vec![Operand::IdRef(var)],
                    ));
                    let h = ctx.fresh();
                    out.push(Instruction::new(
                        Op::FConvert,
                        Some(pointee),
                        Some(h),
                        vec![Operand::IdRef(v)],
                    ));
                    out.push(Instruction::new(
                        Op::Store,
                        None,
                        None,
                        vec![Operand::IdRef(ptr), Operand::IdRef(h)],
                    ));
                }
            }
            b.instructions = out;
        }
        if !locals.is_empty() {
            let first = f.blocks.first_mut().ok_or("a function without blocks")?;
            let at = first
                .instructions
                .iter()
                .take_while(|i| i.class.opcode == Op::Variable)
                .count();
            first.instructions.splice(at..at, locals);
        }
    }
    ctx.module.functions = functions;
    Ok(())
}

/// `isnormal` of halves: by the exponent bits (half denormals are normal
/// floats).
fn is_normal(ctx: &mut Ctx, out: &mut Vec<Instruction>, i: &Instruction) -> Result<(), String> {
    let (Some(ty), Some(rid), Some(x)) = (i.result_type, i.result_id, id_at(i, 0)) else {
        return Err("malformed isnormal".into());
    };
    let mut e = Emit {
        ctx,
        out,
        glsl: &mut None,
    };
    let ut = e.int_like(ty, 16);
    let bits = e.op(Op::Bitcast, ut, &[x]);
    let mask = e.konst(ut, 0x7C00);
    let exponent = e.op(Op::BitwiseAnd, ut, &[bits, mask]);
    let zero = e.konst(ut, 0);
    let not_small = e.op(Op::INotEqual, ty, &[exponent, zero]);
    let not_special = e.op(Op::INotEqual, ty, &[exponent, mask]);
    out.push(Instruction::new(
        Op::LogicalAnd,
        Some(ty),
        Some(rid),
        vec![Operand::IdRef(not_small), Operand::IdRef(not_special)],
    ));
    Ok(())
}

/// `nextafter` of halves: the neighbouring half, on the bits (in float
/// the neighbour would be a float's).
fn next_after(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    i: &Instruction,
    float: Word,
) -> Result<(), String> {
    let (Some(ty), Some(rid), Some(x), Some(y)) =
        (i.result_type, i.result_id, id_at(i, 2), id_at(i, 3))
    else {
        return Err("malformed nextafter".into());
    };
    let ft = emit::shaped_like(ctx, float, ty);
    let mut e = Emit {
        ctx,
        out,
        glsl: &mut None,
    };
    let (ut, bt) = (e.int_like(ty, 16), e.bool_like(ty));
    let xf = e.op(Op::FConvert, ft, &[x]);
    let yf = e.op(Op::FConvert, ft, &[y]);
    let xb = e.op(Op::Bitcast, ut, &[x]);
    let yb = e.op(Op::Bitcast, ut, &[y]);
    let fzero = e.konst(ft, 0);
    let one = e.konst(ut, 1);
    let nan_x = e.op(Op::IsNan, bt, &[xf]);
    let nan_y = e.op(Op::IsNan, bt, &[yf]);
    let nan = e.op(Op::LogicalOr, bt, &[nan_x, nan_y]);
    let equal = e.op(Op::FOrdEqual, bt, &[xf, yf]);
    let x_zero = e.op(Op::FOrdEqual, bt, &[xf, fzero]);
    // The magnitude grows when y lies beyond x, away from zero.
    let toward_y = e.op(Op::FOrdLessThan, bt, &[xf, yf]);
    let positive = e.op(Op::FOrdGreaterThan, bt, &[xf, fzero]);
    let grows = e.op(Op::LogicalEqual, bt, &[toward_y, positive]);
    let bigger = e.op(Op::IAdd, ut, &[xb, one]);
    let smaller = e.op(Op::ISub, ut, &[xb, one]);
    let stepped = e.select(ut, grows, bigger, smaller);
    // From a zero: the smallest denormal of y's sign.
    let sign = e.konst(ut, 0x8000);
    let y_sign = e.op(Op::BitwiseAnd, ut, &[yb, sign]);
    let tiny = e.op(Op::BitwiseOr, ut, &[y_sign, one]);
    let r = e.select(ut, x_zero, tiny, stepped);
    let r = e.select(ut, equal, yb, r);
    let quiet = e.konst(ut, 0x7E00);
    let r = e.select(ut, nan, quiet, r);
    out.push(Instruction::new(
        Op::Bitcast,
        Some(ty),
        Some(rid),
        vec![Operand::IdRef(r)],
    ));
    Ok(())
}

/// `a * b + c` of operands whose product is exact in type `ty` (halves
/// widened to float, floats widened to double), as `r` of type `ty`
/// rounded to odd: the sum and its error are exact by Knuth's two-sum,
/// and a result with an error moves to its odd neighbour, so that rounding
/// it once more to a type with fewer than half the bits, less two, gives
/// the correctly rounded fma.
pub(crate) fn fma_to_odd(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    ty: Word,
    r: Word,
    [a, b, c]: [Word; 3],
) {
    let bits_of = emit::width(ctx, ty).unwrap_or(32);
    let mut e = Emit {
        ctx,
        out,
        glsl: &mut None,
    };
    let (ut, bt) = (e.int_like(ty, bits_of), e.bool_like(ty));
    let exact = |e: &mut Emit, op: Op, x: Word, y: Word| {
        let id = e.op(op, ty, &[x, y]);
        e.ctx.decorate(id, Decoration::NoContraction, vec![]);
        id
    };
    let p = exact(&mut e, Op::FMul, a, b);
    let s = exact(&mut e, Op::FAdd, p, c);
    let bp = exact(&mut e, Op::FSub, s, c);
    let bc = exact(&mut e, Op::FSub, s, bp);
    let dp = exact(&mut e, Op::FSub, p, bp);
    let dc = exact(&mut e, Op::FSub, c, bc);
    let err = exact(&mut e, Op::FAdd, dp, dc);
    let (fzero, uzero, uone) = (e.konst(ty, 0), e.konst(ut, 0), e.konst(ut, 1));
    let inexact = e.op(Op::FOrdNotEqual, bt, &[err, fzero]);
    let bits = e.op(Op::Bitcast, ut, &[s]);
    let low = e.op(Op::BitwiseAnd, ut, &[bits, uone]);
    let even = e.op(Op::IEqual, bt, &[low, uzero]);
    let adjust = e.op(Op::LogicalAnd, bt, &[inexact, even]);
    // Away from zero where the error has the sum's sign.
    let err_up = e.op(Op::FOrdGreaterThan, bt, &[err, fzero]);
    let sum_up = e.op(Op::FOrdGreaterThan, bt, &[s, fzero]);
    let away = e.op(Op::LogicalEqual, bt, &[err_up, sum_up]);
    let bigger = e.op(Op::IAdd, ut, &[bits, uone]);
    let smaller = e.op(Op::ISub, ut, &[bits, uone]);
    let moved = e.select(ut, away, bigger, smaller);
    let odd = e.select(ut, adjust, moved, bits);
    e.out.push(Instruction::new(
        Op::Bitcast,
        Some(ty),
        Some(r),
        vec![Operand::IdRef(odd)],
    ));
}

/// After [`half::retype_half`]: `OpBitcast`s between `half` and 16-bit
/// integers became copies, and conversions between float (or double) and
/// the 16-bit bits become exact arithmetic on the bits; where `native`,
/// those the hardware does exactly (from half, and to half rounded to
/// nearest even) are 16-bit float conversions.
pub fn lower_conversions(ctx: &mut Ctx, native: bool) -> Result<(), String> {
    let Some(short) = ctx.find_type(
        Op::TypeInt,
        &[Operand::LiteralBit32(16), Operand::LiteralBit32(0)],
    ) else {
        return Ok(());
    };
    let float = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
    let types = ctx.value_types();
    // Rounding modes of conversions, by result id.
    let modes: HashMap<Word, FPRoundingMode> = ctx
        .module
        .annotations
        .iter()
        .filter(|a| {
            a.class.opcode == Op::Decorate
                && a.operands.get(1) == Some(&Operand::Decoration(Decoration::FPRoundingMode))
        })
        .filter_map(|a| match (a.operands.first(), a.operands.get(2)) {
            (Some(Operand::IdRef(t)), Some(Operand::FPRoundingMode(m))) => Some((*t, *m)),
            _ => None,
        })
        .collect();
    let mut narrowed = Vec::new();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let src = id_at(&i, 0);
                let src_ty = src.and_then(|s| types.get(&s).copied());
                if i.class.opcode == Op::Bitcast
                    && i.result_type.is_some()
                    && src_ty == i.result_type
                {
                    out.push(Instruction::new(
                        Op::CopyObject,
                        i.result_type,
                        i.result_id,
                        i.operands,
                    ));
                    continue;
                }
                let (Some(rty), Some(rid), Some(src), Some(sty), Op::FConvert) =
                    (i.result_type, i.result_id, src, src_ty, i.class.opcode)
                else {
                    out.push(i);
                    continue;
                };
                let (rc, n) = shape(ctx, rty);
                let (sc, _) = shape(ctx, sty);
                if rc != short && sc != short {
                    out.push(i);
                    continue;
                }
                let mode = modes.get(&rid).copied().unwrap_or(FPRoundingMode::RTE);
                if native && (sc == short || mode == FPRoundingMode::RTE) {
                    // The kernel's execution modes make the hardware's
                    // rounding nearest even, and keep half denormals.
                    let half_t = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(16)]);
                    let mut e = Emit {
                        ctx,
                        out: &mut out,
                        glsl: &mut None,
                    };
                    // Some hardware (NVIDIA's) converts every NaN to its
                    // one positive NaN: the sign, which `copysign` and
                    // `signbit` read, is carried over from the bits.
                    if sc == short {
                        let ht = emit::shaped_like(e.ctx, half_t, sty);
                        let h = e.op(Op::Bitcast, ht, &[src]);
                        let wide = e.op(Op::FConvert, rty, &[h]);
                        let w = emit::width(e.ctx, rty).unwrap_or(32);
                        let ut = e.int_like(rty, w);
                        let bits = e.op(Op::Bitcast, ut, &[wide]);
                        let src_wide = e.op(Op::UConvert, ut, &[src]);
                        let mask = e.konst(ut, 0x8000);
                        let sign = e.op(Op::BitwiseAnd, ut, &[src_wide, mask]);
                        let by = e.konst(ut, u64::from(w - 16));
                        let sign = e.op(Op::ShiftLeftLogical, ut, &[sign, by]);
                        let signed = e.op(Op::BitwiseOr, ut, &[bits, sign]);
                        e.out.push(Instruction::new(
                            Op::Bitcast,
                            Some(rty),
                            Some(rid),
                            vec![Operand::IdRef(signed)],
                        ));
                    } else {
                        let ht = emit::shaped_like(e.ctx, half_t, rty);
                        let h = e.op(Op::FConvert, ht, &[src]);
                        let h = e.op(Op::Bitcast, rty, &[h]);
                        let w = emit::width(e.ctx, sty).unwrap_or(32);
                        let ut = e.int_like(sty, w);
                        let bits = e.op(Op::Bitcast, ut, &[src]);
                        let by = e.konst(ut, u64::from(w - 16));
                        let top = e.op(Op::ShiftRightLogical, ut, &[bits, by]);
                        let top = e.op(Op::UConvert, rty, &[top]);
                        let mask = e.konst(rty, 0x8000);
                        let sign = e.op(Op::BitwiseAnd, rty, &[top, mask]);
                        e.out.push(Instruction::new(
                            Op::BitwiseOr,
                            Some(rty),
                            Some(rid),
                            vec![Operand::IdRef(h), Operand::IdRef(sign)],
                        ));
                    }
                    narrowed.push(rid);
                    continue;
                }
                let mut e = Emit {
                    ctx,
                    out: &mut out,
                    glsl: &mut None,
                };
                let lanes = n.unwrap_or(1);
                let mut parts = Vec::new();
                for k in 0..lanes {
                    let x = if n.is_some() {
                        let id = e.ctx.fresh();
                        e.out.push(Instruction::new(
                            Op::CompositeExtract,
                            Some(sc),
                            Some(id),
                            vec![Operand::IdRef(src), Operand::LiteralBit32(k)],
                        ));
                        id
                    } else {
                        src
                    };
                    let y = if sc == short {
                        // Half to float is exact; to double, through float.
                        let f = half::half_to_float(&mut e, x, float);
                        if emit::width(e.ctx, rc) == Some(64) {
                            e.op(Op::FConvert, rc, &[f])
                        } else {
                            f
                        }
                    } else {
                        // From double through float rounded to odd, which
                        // keeps what the rounding to half needs.
                        let x = match emit::width(e.ctx, sc) {
                            Some(32) => x,
                            Some(64) => half::double_to_float_odd(&mut e, x, float),
                            _ => return Err("unexpected conversion to half".into()),
                        };
                        half::float_to_half(&mut e, x, short, mode)
                    };
                    parts.push(y);
                }
                // Widening is exact: its rounding mode, if any, goes too.
                narrowed.push(rid);
                let op = if n.is_some() {
                    Op::CompositeConstruct
                } else {
                    Op::CopyObject
                };
                out.push(Instruction::new(
                    op,
                    Some(rty),
                    Some(rid),
                    parts.into_iter().map(Operand::IdRef).collect(),
                ));
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    // The rounding modes are applied (and saturation means nothing
    // between floating-point types).
    ctx.module.annotations.retain(|a| {
        !(matches!(
            a.operands.get(1),
            Some(Operand::Decoration(
                Decoration::FPRoundingMode | Decoration::SaturatedConversion
            ))
        ) && matches!(a.operands.first(), Some(Operand::IdRef(t)) if narrowed.contains(t)))
    });
    Ok(())
}

/// Where the device has hardware half arithmetic, after the built-ins
/// are lowered: the operations [`widen`] left on `half` (their operands
/// now the 16-bit bits) take 16-bit floats bitcast from the bits, and
/// give their result back as bits. Decorations of a result
/// (`NoContraction`) move to the float operation.
///
/// A `mad` (its add in `fusable`, taking a product also in `fusable`)
/// becomes one 16-bit `Fma`: `mad` allows any precision, and a driver may
/// not fuse half operations itself.
pub fn native_arithmetic(ctx: &mut Ctx, fusable: &HashSet<Word>) {
    let Some(short) = ctx.find_type(
        Op::TypeInt,
        &[Operand::LiteralBit32(16), Operand::LiteralBit32(0)],
    ) else {
        return;
    };
    let types = ctx.value_types();
    let bits = |ctx: &Ctx, x: &Word| types.get(x).is_some_and(|t| shape(ctx, *t).0 == short);
    let mut half_t = None;
    let mut moved: HashMap<Word, Word> = HashMap::default();
    // Fusable products computed in half here, by their id: their factors.
    let mut products: HashMap<Word, (Word, Word)> = HashMap::default();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            if !b.instructions.iter().any(|i| {
                exact_in_half(i.class.opcode) && id_at(i, 0).is_some_and(|x| bits(ctx, &x))
            }) {
                continue;
            }
            let mut out = Vec::with_capacity(b.instructions.len());
            // Bits already taken as floats in this block.
            let mut casts: HashMap<Word, Word> = HashMap::default();
            for mut i in std::mem::take(&mut b.instructions) {
                let (Some(rty), Some(rid)) = (i.result_type, i.result_id) else {
                    out.push(i);
                    continue;
                };
                if !exact_in_half(i.class.opcode) || !id_at(&i, 0).is_some_and(|x| bits(ctx, &x)) {
                    out.push(i);
                    continue;
                }
                let half_t = *half_t
                    .get_or_insert_with(|| ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(16)]));
                let mut e = Emit {
                    ctx,
                    out: &mut out,
                    glsl: &mut None,
                };
                for o in &mut i.operands {
                    if let Operand::IdRef(x) = o {
                        // The result of an operation rewritten here is
                        // taken as the float it was computed as (it is
                        // defined just before its bits, so it dominates
                        // every use of them).
                        if let Some(h) = moved.get(x) {
                            *o = Operand::IdRef(*h);
                            continue;
                        }
                        if let Some(h) = casts.get(x) {
                            *o = Operand::IdRef(*h);
                            continue;
                        }
                        let Some(&ty) = types.get(x) else { continue };
                        let ht = emit::shaped_like(e.ctx, half_t, ty);
                        let h = e.op(Op::Bitcast, ht, &[*x]);
                        casts.insert(*x, h);
                        *o = Operand::IdRef(h);
                    }
                }
                if shape(e.ctx, rty).0 == short {
                    let ht = emit::shaped_like(e.ctx, half_t, rty);
                    let op = i.class.opcode;
                    let args: Vec<Word> = i
                        .operands
                        .iter()
                        .filter_map(|o| match o {
                            Operand::IdRef(x) => Some(*x),
                            _ => None,
                        })
                        .collect();
                    let fused = match (op, &args[..]) {
                        (Op::FAdd, [p, c]) if fusable.contains(&rid) => {
                            products.get(p).map(|&(x, y)| (x, y, *c))
                        }
                        _ => None,
                    };
                    let h = match fused {
                        Some((x, y, c)) => e.glsl(GlslStd450Op::Fma, ht, &[x, y, c]),
                        None => {
                            let h = e.ctx.fresh();
                            e.out
                                .push(Instruction::new(op, Some(ht), Some(h), i.operands));
                            h
                        }
                    };
                    if let (Op::FMul, [x, y], true) = (op, &args[..], fusable.contains(&rid)) {
                        products.insert(h, (*x, *y));
                    }
                    e.out.push(Instruction::new(
                        Op::Bitcast,
                        Some(rty),
                        Some(rid),
                        vec![Operand::IdRef(h)],
                    ));
                    moved.insert(rid, h);
                } else {
                    // A comparison: its result is a boolean already.
                    e.out.push(i);
                }
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    for a in &mut ctx.module.annotations {
        if let Some(Operand::IdRef(t)) = a.operands.first_mut() {
            if let Some(h) = moved.get(t) {
                *t = *h;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    #[test]
    fn half_arithmetic_is_float_arithmetic_on_the_bits() {
        let mut ctx = assemble(
            r#"
            OpCapability Kernel
            OpCapability Addresses
            OpCapability Float16
            OpCapability Int16
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %f "k"
            %half = OpTypeFloat 16
            %ushort = OpTypeInt 16 0
            %v2half = OpTypeVector %half 2
            %v2ushort = OpTypeVector %ushort 2
            %void = OpTypeVoid
            %fn = OpTypeFunction %void
            %one = OpConstant %half 0x1p+0
            %two = OpConstantComposite %v2half %one %one
            %f = OpFunction %void None %fn
            %e = OpLabel
            %s = OpFAdd %half %one %one
            %v = OpFMul %v2half %two %two
            %bits = OpBitcast %v2ushort %v
            OpReturn
            OpFunctionEnd
            "#,
        );
        widen(&mut ctx, false).unwrap();
        half::retype_half(&mut ctx);
        lower_conversions(&mut ctx, false).unwrap();
        let ops: Vec<(Op, Option<Word>)> = ctx.module.functions[0].blocks[0]
            .instructions
            .iter()
            .map(|i| (i.class.opcode, i.result_type))
            .collect();
        let float = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
        let v2float = ctx.vector(float, 2);
        // The arithmetic is float's; no 16-bit float type is left, nor a
        // conversion to or from one, and the vector types of half and
        // ushort became one.
        assert!(ops.contains(&(Op::FAdd, Some(float))));
        assert!(ops.contains(&(Op::FMul, Some(v2float))));
        assert!(!ops.iter().any(|(o, _)| *o == Op::FConvert));
        let types = &ctx.module.types_global_values;
        assert!(
            !types
                .iter()
                .any(|t| t.class.opcode == Op::TypeFloat
                    && t.operands == [Operand::LiteralBit32(16)])
        );
        let vectors = types
            .iter()
            .filter(|t| {
                t.class.opcode == Op::TypeVector
                    && t.operands.get(1) == Some(&Operand::LiteralBit32(2))
            })
            .count();
        assert_eq!(vectors, 2, "ushort2 and float2");
    }

    #[test]
    fn native_half_arithmetic_stays_in_half() {
        let mut ctx = assemble(
            r#"
            OpCapability Kernel
            OpCapability Addresses
            OpCapability Float16
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %f "k"
            %half = OpTypeFloat 16
            %float = OpTypeFloat 32
            %bool = OpTypeBool
            %v2half = OpTypeVector %half 2
            %void = OpTypeVoid
            %fn = OpTypeFunction %void
            %one = OpConstant %half 0x1p+0
            %two = OpConstantComposite %v2half %one %one
            %f = OpFunction %void None %fn
            %e = OpLabel
            %s = OpFAdd %half %one %one
            %v = OpFMul %v2half %two %two
            %lt = OpFOrdLessThan %bool %s %one
            %q = OpFDiv %half %s %one
            %w = OpFConvert %float %q
            OpReturn
            OpFunctionEnd
            "#,
        );
        widen(&mut ctx, true).unwrap();
        half::retype_half(&mut ctx);
        lower_conversions(&mut ctx, true).unwrap();
        native_arithmetic(&mut ctx, &HashSet::default());
        let half = ctx
            .find_type(Op::TypeFloat, &[Operand::LiteralBit32(16)])
            .expect("a 16-bit float type again");
        let float = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(32)]);
        let v2half = ctx.vector(half, 2);
        let ops: Vec<(Op, Option<Word>)> = ctx.module.functions[0].blocks[0]
            .instructions
            .iter()
            .map(|i| (i.class.opcode, i.result_type))
            .collect();
        // Add, multiply and compare stay in half; the division is float's,
        // its operands widened and its result narrowed by the hardware.
        assert!(ops.contains(&(Op::FAdd, Some(half))));
        assert!(ops.contains(&(Op::FMul, Some(v2half))));
        assert!(ops.contains(&(Op::FDiv, Some(float))));
        assert!(ops.contains(&(Op::FConvert, Some(float))));
        assert!(ops.contains(&(Op::FConvert, Some(half))));
        assert!(!ops.contains(&(Op::FAdd, Some(float))));
        let compare = ctx.module.functions[0].blocks[0]
            .instructions
            .iter()
            .find(|i| i.class.opcode == Op::FOrdLessThan)
            .unwrap();
        let types = ctx.value_types();
        for o in &compare.operands {
            let Operand::IdRef(x) = o else { continue };
            assert_eq!(types.get(x), Some(&half), "compared as halves");
        }
    }

    #[test]
    fn a_native_mad_is_one_fma() {
        let mut ctx = assemble(
            r#"
            OpCapability Kernel
            OpCapability Addresses
            OpCapability Float16
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %f "k"
            %half = OpTypeFloat 16
            %void = OpTypeVoid
            %fn = OpTypeFunction %void
            %one = OpConstant %half 0x1p+0
            %f = OpFunction %void None %fn
            %e = OpLabel
            %p = OpFMul %half %one %one
            %r = OpFAdd %half %p %one
            %s = OpFAdd %half %r %one
            OpReturn
            OpFunctionEnd
            "#,
        );
        widen(&mut ctx, true).unwrap();
        half::retype_half(&mut ctx);
        lower_conversions(&mut ctx, true).unwrap();
        // The product and the sum of the mad: the block's first results.
        let fusable: HashSet<Word> = ctx.module.functions[0].blocks[0]
            .instructions
            .iter()
            .filter_map(|i| i.result_id)
            .take(2)
            .collect();
        native_arithmetic(&mut ctx, &fusable);
        let code = &ctx.module.functions[0].blocks[0].instructions;
        let fmas = code
            .iter()
            .filter(|i| {
                i.class.opcode == Op::ExtInst
                    && i.operands.get(1)
                        == Some(&Operand::LiteralExtInstInteger(GlslStd450Op::Fma as u32))
            })
            .count();
        let adds = code.iter().filter(|i| i.class.opcode == Op::FAdd).count();
        // The mad is one Fma; the plain add after it stays an add.
        assert_eq!((fmas, adds), (1, 1));
    }
}
