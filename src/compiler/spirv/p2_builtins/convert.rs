//! Pass 7 (phase 2): Conversions with OpenCL C's saturation and rounding
//! modes (`convert_int_sat_rtp`, `convert_float_rtz`, ...). llvm-spirv
//! marks them with `SaturatedConversion` and `FPRoundingMode` decorations,
//! and uses `OpSatConvertSToU`/`OpSatConvertUToS`; Vulkan has none of
//! these, so each becomes plain instructions: * float to integer: the
//! rounding mode first (`RoundEven`, `Ceil`, `Floor`; conversions
//! truncate), then, when saturating, NaN gives 0 and values beyond the
//! target's range give its limits; * integer to integer with saturation: a
//! clamp to the target's range in the source's signedness, then the
//! conversion; * integer to float with a rounding mode: the correctly
//! rounded conversion, moved one step toward the mode's direction where the
//! exact value, compared in 64-bit integers, lies on the other side.
//! Sources of up to 32 bits only; 64-bit ones fail by name.
//!
//! Takes the kernel after `extinst`. Guarantees no `SaturatedConversion` or
//! `FPRoundingMode` decoration and no `OpSatConvertSToU`/`OpSatConvertUToS`
//! is left; a 64-bit integer converted to float with a rounding mode fails
//! by name.
//!
//! * float to a narrower float with a rounding mode (`convert_float_rtz`
//!   of a double): the same step, compared exactly in the wider type.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Decoration, FPRoundingMode, GlslStd450Op as G, Op, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::emit::{Emit, float_bits, width};

#[derive(Default, Clone, Copy)]
struct Marks {
    saturate: bool,
    rounding: Option<FPRoundingMode>,
}

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    let mut marks: HashMap<Word, Marks> = HashMap::default();
    for a in &ctx.module.annotations {
        if a.class.opcode != Op::Decorate {
            continue;
        }
        let Some(t) = id_at(a, 0) else { continue };
        match (a.operands.get(1), a.operands.get(2)) {
            (Some(Operand::Decoration(Decoration::SaturatedConversion)), _) => {
                marks.entry(t).or_default().saturate = true;
            }
            (
                Some(Operand::Decoration(Decoration::FPRoundingMode)),
                Some(Operand::FPRoundingMode(m)),
            ) => marks.entry(t).or_default().rounding = Some(*m),
            _ => {}
        }
    }
    let has_sat_ops = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .any(|i| matches!(i.class.opcode, Op::SatConvertSToU | Op::SatConvertUToS));
    if marks.is_empty() && !has_sat_ops {
        return Ok(());
    }
    let value_types: HashMap<Word, Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .chain(ctx.module.functions.iter().flat_map(|f| &f.parameters))
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    let mut glsl = ctx.ext_import("GLSL.std.450");
    let mut functions = std::mem::take(&mut ctx.module.functions);
    let result = (|| {
        for b in functions.iter_mut().flat_map(|f| &mut f.blocks) {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let m = i.result_id.and_then(|r| marks.get(&r)).copied();
                let sat_op = matches!(i.class.opcode, Op::SatConvertSToU | Op::SatConvertUToS);
                if m.is_none() && !sat_op {
                    out.push(i);
                    continue;
                }
                let m = m.unwrap_or_default();
                let (Some(rty), Some(rid), Some(src)) = (i.result_type, i.result_id, id_at(&i, 0))
                else {
                    out.push(i);
                    continue;
                };
                let sty = *value_types
                    .get(&src)
                    .ok_or("conversion of a value of unknown type")?;
                let mut e = Emit {
                    ctx,
                    out: &mut out,
                    glsl: &mut glsl,
                };
                let value = lower(&mut e, i.class.opcode, m, src, sty, rty)?;
                out.push(Instruction::new(
                    Op::CopyObject,
                    Some(rty),
                    Some(rid),
                    vec![Operand::IdRef(value)],
                ));
            }
            b.instructions = out;
        }
        Ok::<(), String>(())
    })();
    ctx.module.functions = functions;
    result?;
    ctx.module.annotations.retain(|a| {
        !(a.class.opcode == Op::Decorate
            && matches!(
                a.operands.get(1),
                Some(Operand::Decoration(
                    Decoration::SaturatedConversion | Decoration::FPRoundingMode
                ))
            ))
    });
    Ok(())
}

fn lower(e: &mut Emit, op: Op, m: Marks, x: Word, sty: Word, rty: Word) -> Result<Word, String> {
    match op {
        Op::ConvertFToS | Op::ConvertFToU => {
            let signed = op == Op::ConvertFToS;
            let rounded = match m.rounding {
                None | Some(FPRoundingMode::RTZ) => x,
                Some(FPRoundingMode::RTE) => e.glsl(G::RoundEven, sty, &[x]),
                Some(FPRoundingMode::RTP) => e.glsl(G::Ceil, sty, &[x]),
                Some(FPRoundingMode::RTN) => e.glsl(G::Floor, sty, &[x]),
            };
            if !m.saturate {
                return Ok(e.op(op, rty, &[rounded]));
            }
            Ok(saturate_float(e, rounded, sty, rty, signed))
        }
        Op::SConvert | Op::UConvert | Op::SatConvertSToU | Op::SatConvertUToS => {
            if m.rounding.is_some() && !m.saturate {
                return Ok(e.op(op, rty, &[x]));
            }
            // Source signedness and target signedness.
            let (from_signed, to_signed) = match op {
                Op::SConvert => (true, true),
                Op::UConvert => (false, false),
                Op::SatConvertSToU => (true, false),
                _ => (false, true),
            };
            Ok(saturate_int(e, x, sty, rty, from_signed, to_signed))
        }
        Op::ConvertSToF | Op::ConvertUToF => {
            let r = e.op(op, rty, &[x]);
            match m.rounding {
                None | Some(FPRoundingMode::RTE) => Ok(r),
                Some(mode) => round_int_to_float(e, r, x, sty, rty, op == Op::ConvertSToF, mode),
            }
        }
        Op::FConvert => {
            let narrowing = width(e.ctx, rty).unwrap_or(32) < width(e.ctx, sty).unwrap_or(32);
            match m.rounding {
                Some(mode) if narrowing && mode != FPRoundingMode::RTE => {
                    Ok(round_narrowed_float(e, x, sty, rty, mode))
                }
                // Widening is exact; RTE is the conversion's own rounding.
                _ => Ok(e.op(op, rty, &[x])),
            }
        }
        other => Err(format!(
            "saturation or rounding on {other:?} is not supported yet"
        )),
    }
}

/// Float `x` (already rounded to an integral value) to integer type `rty`
/// with saturation: NaN gives 0, out-of-range values the nearest limit.
fn saturate_float(e: &mut Emit, x: Word, sty: Word, rty: Word, signed: bool) -> Word {
    let w = width(e.ctx, rty).unwrap_or(32);
    let fw = width(e.ctx, sty).unwrap_or(32);
    // 2^(w-1) or 2^w: the first value above the range, exact in floats.
    let above = if signed {
        2f64.powi(w as i32 - 1)
    } else {
        2f64.powi(w as i32)
    };
    let below = if signed { -above } else { 0.0 };
    let (k_above, k_below) = (
        e.konst(sty, float_bits(fw, above)),
        e.konst(sty, float_bits(fw, below)),
    );
    let (min, max) = e.min_max(rty, signed);
    let (kmin, kmax, zero) = (e.konst(rty, min), e.konst(rty, max), e.konst(rty, 0));
    let bt = e.bool_like(sty);
    let too_big = e.op(Op::FOrdGreaterThanEqual, bt, &[x, k_above]);
    let too_small = e.op(Op::FOrdLessThan, bt, &[x, k_below]);
    let nan = e.op(Op::IsNan, bt, &[x]);
    // Convert a value known to be in range, so the conversion is defined.
    let safe = e.select(sty, too_big, k_below, x);
    let safe = e.select(sty, too_small, k_below, safe);
    let safe = e.select(sty, nan, k_below, safe);
    let op = if signed {
        Op::ConvertFToS
    } else {
        Op::ConvertFToU
    };
    let r = e.op(op, rty, &[safe]);
    let r = e.select(rty, too_big, kmax, r);
    let r = e.select(rty, too_small, kmin, r);
    e.select(rty, nan, zero, r)
}

/// Integer `x` to integer type `rty` with saturation.
fn saturate_int(
    e: &mut Emit,
    x: Word,
    sty: Word,
    rty: Word,
    from_signed: bool,
    to_signed: bool,
) -> Word {
    let (sw, rw) = (
        width(e.ctx, sty).unwrap_or(32),
        width(e.ctx, rty).unwrap_or(32),
    );
    let bt = e.bool_like(sty);
    let (tmin, tmax) = e.min_max(rty, to_signed);
    let (smin, smax) = e.min_max(sty, from_signed);
    let as_i128 = |v: u64, bits: u32, signed: bool| -> i128 {
        if signed && bits < 128 && (v >> (bits - 1)) & 1 == 1 {
            v as i128 - (1i128 << bits)
        } else {
            v as i128
        }
    };
    let (tmin, tmax) = (as_i128(tmin, rw, to_signed), as_i128(tmax, rw, to_signed));
    let (smin, smax) = (
        as_i128(smin, sw, from_signed),
        as_i128(smax, sw, from_signed),
    );
    let mut v = x;
    // Clamp in the source type where the target's range is narrower.
    let (less, greater) = if from_signed {
        (Op::SLessThan, Op::SGreaterThan)
    } else {
        (Op::ULessThan, Op::UGreaterThan)
    };
    if tmax < smax {
        let k = e.konst(sty, tmax as u64);
        let over = e.op(greater, bt, &[v, k]);
        v = e.select(sty, over, k, v);
    }
    if tmin > smin {
        let k = e.konst(sty, tmin as u64);
        let under = e.op(less, bt, &[v, k]);
        v = e.select(sty, under, k, v);
    }
    if sw == rw {
        return if sty == rty {
            v
        } else {
            e.op(Op::Bitcast, rty, &[v])
        };
    }
    let op = if sw < rw && from_signed {
        Op::SConvert
    } else {
        Op::UConvert
    };
    e.op(op, rty, &[v])
}

/// Float `x` to the narrower float type `rty` in rounding mode `mode`:
/// the correctly rounded conversion, moved one step toward the mode's
/// direction where, compared exactly in the source type, it lies on the
/// other side of `x` (an overflow to infinity steps back to the largest
/// finite value for RTZ; NaNs and exact results stay).
fn round_narrowed_float(e: &mut Emit, x: Word, sty: Word, rty: Word, mode: FPRoundingMode) -> Word {
    let fw = width(e.ctx, rty).unwrap_or(32);
    let it = e.int_like(rty, fw);
    let bt = e.bool_like(sty);
    let r = e.op(Op::FConvert, rty, &[x]);
    let bits = e.op(Op::Bitcast, it, &[r]);
    let back = widen_exactly(e, r, bits, rty, sty);
    let above = e.op(Op::FOrdGreaterThan, bt, &[back, x]);
    let below = e.op(Op::FOrdLessThan, bt, &[back, x]);
    let chosen = step_for_mode(e, bits, it, bt, mode, above, below);
    e.op(Op::Bitcast, rty, &[chosen])
}

/// Float `r` (with bits `bits`) in the wider float type `sty`. A float
/// denormal is rebuilt from its bits as an integer times 2^-149, exact in
/// double: devices that flush float denormals (NVIDIA, where CL_FP_DENORM
/// is not claimed) may read one as zero in the widening conversion, and
/// the rounding step would then go the wrong way.
fn widen_exactly(e: &mut Emit, r: Word, bits: Word, rty: Word, sty: Word) -> Word {
    let widened = e.op(Op::FConvert, sty, &[r]);
    if width(e.ctx, rty) != Some(32) || width(e.ctx, sty) != Some(64) {
        return widened;
    }
    let it = e.int_like(rty, 32);
    let denormal = e.is_denormal(r, rty);
    let magnitude_mask = e.konst(it, 0x7fff_ffff);
    let magnitude = e.op(Op::BitwiseAnd, it, &[bits, magnitude_mask]);
    let units = e.op(Op::ConvertUToF, sty, &[magnitude]);
    let unit = e.float(sty, 2f64.powi(-149));
    let value = e.op(Op::FMul, sty, &[units, unit]);
    let negated = e.op(Op::FNegate, sty, &[value]);
    let negative = e.is_negative(bits, it);
    let rebuilt = e.select(sty, negative, negated, value);
    e.select(sty, denormal, rebuilt, widened)
}

/// The bits of a correctly rounded float, moved one step toward rounding
/// mode `mode`'s direction where it lies on the wrong side of the exact
/// value (`above` or `below` it). Away from zero adds one to the bits,
/// toward zero takes one away.
fn step_for_mode(
    e: &mut Emit,
    bits: Word,
    it: Word,
    bt: Word,
    mode: FPRoundingMode,
    above: Word,
    below: Word,
) -> Word {
    let one = e.konst(it, 1);
    let (up, down) = (
        e.op(Op::IAdd, it, &[bits, one]),
        e.op(Op::ISub, it, &[bits, one]),
    );
    let negative = e.is_negative(bits, it);
    let (step_needed, stepped) = match mode {
        // Rounded away from zero: above a positive value, below a negative.
        FPRoundingMode::RTZ => (e.select(bt, negative, below, above), down),
        // Upward: away from zero for positive values, toward for negative.
        FPRoundingMode::RTP => (below, e.select(it, negative, down, up)),
        _ => (above, e.select(it, negative, up, down)),
    };
    e.select(it, step_needed, stepped, bits)
}

/// Moves the correctly rounded conversion `r` of integer `x` one step
/// toward the rounding direction where needed.
fn round_int_to_float(
    e: &mut Emit,
    r: Word,
    x: Word,
    sty: Word,
    rty: Word,
    signed: bool,
    mode: FPRoundingMode,
) -> Result<Word, String> {
    let fw = width(e.ctx, rty).unwrap_or(32);
    if width(e.ctx, sty).unwrap_or(32) > 32 {
        // 64-bit integers: the rounded value back as a 64-bit integer of
        // the same signedness, unless it rounded up to the first value
        // beyond the type (2^63 or 2^64, exact in floats), which lies above.
        let it = e.int_like(rty, fw);
        let bt = e.bool_like(rty);
        let limit = if signed { 2f64.powi(63) } else { 2f64.powi(64) };
        let (limit, fzero) = (e.konst(rty, float_bits(fw, limit)), e.konst(rty, 0));
        let over = e.op(Op::FOrdGreaterThanEqual, bt, &[r, limit]);
        let safe = e.select(rty, over, fzero, r);
        let to_int = if signed {
            Op::ConvertFToS
        } else {
            Op::ConvertFToU
        };
        let back = e.op(to_int, sty, &[safe]);
        let (gt, lt) = if signed {
            (Op::SGreaterThan, Op::SLessThan)
        } else {
            (Op::UGreaterThan, Op::ULessThan)
        };
        let sbt = e.bool_like(sty);
        let above = e.op(gt, sbt, &[back, x]);
        let above = e.op(Op::LogicalOr, bt, &[over, above]);
        let below = e.op(lt, sbt, &[back, x]);
        let in_range = e.op(Op::LogicalNot, bt, &[over]);
        let below = e.op(Op::LogicalAnd, bt, &[in_range, below]);
        let bits = e.op(Op::Bitcast, it, &[r]);
        let chosen = step_for_mode(e, bits, it, bt, mode, above, below);
        return Ok(e.op(Op::Bitcast, rty, &[chosen]));
    }
    let i64t = e.int_like(sty, 64);
    let it = e.int_like(rty, fw);
    let bt = e.bool_like(rty);
    // Exact integer and the rounded value back as integers (both fit in
    // 64 bits for 32-bit sources).
    let exact = e.op(if signed { Op::SConvert } else { Op::UConvert }, i64t, &[x]);
    let back = e.op(Op::ConvertFToS, i64t, &[r]);
    let bits = e.op(Op::Bitcast, it, &[r]);
    let above = e.op(Op::SGreaterThan, bt, &[back, exact]);
    let below = e.op(Op::SLessThan, bt, &[back, exact]);
    let chosen = step_for_mode(e, bits, it, bt, mode, above, below);
    Ok(e.op(Op::Bitcast, rty, &[chosen]))
}
