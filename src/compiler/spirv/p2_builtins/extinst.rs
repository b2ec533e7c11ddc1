//! Pass 6 (phase 2): every `OpenCL.std` instruction. Those with an exact
//! Vulkan equivalent in core SPIR-V or `GLSL.std.450`, and the `native_*`
//! functions whose precision OpenCL leaves to the implementation, become
//! that equivalent; the others become calls to libclc's functions (or
//! vkcl's own lowerings), inlined. One the library lacks is reported by
//! name.
//! `shuffle`/`shuffle2` become per-component selections, since their masks
//! are run-time values and 8/16-component vectors have no dynamic extract
//! once split.
//!
//! Takes the kernel after phase 1, the build's `Options` and the device's
//! `DeviceCaps`. Guarantees no `OpenCL.std` instruction is left, and the
//! kernel is still one function: each became core code, a `GLSL.std.450`
//! instruction or an inlined copy of a libclc function; `half` values are
//! their 16 bits, with arithmetic in float; without `Options::contract`,
//! float operations carry `NoContraction`. A built-in it has no form for
//! fails by name.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Decoration, GlslStd450Op as G, Op, OpenclStd100Op as C, StorageClass, Word};

use crate::compiler::spirv::Options;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::emit;
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::p1_kernel::{inline, memcopy};
use crate::compiler::spirv::p2_builtins::{exact, fma64, fp16, half, libclc};
use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

enum Lowering {
    Glsl(G),
    /// `a * b + c` as a multiply and an add that drivers may fuse (mad
    /// allows any precision).
    MulAdd,
    Div,
    Copy,
}

fn lowering(op: C) -> Option<Lowering> {
    use Lowering::*;
    Some(match op {
        C::fabs => Glsl(G::FAbs),
        C::floor => Glsl(G::Floor),
        C::ceil => Glsl(G::Ceil),
        C::trunc => Glsl(G::Trunc),
        C::rint => Glsl(G::RoundEven),
        C::fmin => Glsl(G::NMin),
        C::fmax => Glsl(G::NMax),
        C::fmin_common => Glsl(G::FMin),
        C::fmax_common => Glsl(G::FMax),
        C::fclamp => Glsl(G::NClamp),
        C::mix => Glsl(G::FMix),
        C::s_abs => Glsl(G::SAbs),
        C::u_abs => Copy,
        C::s_min => Glsl(G::SMin),
        C::u_min => Glsl(G::UMin),
        C::s_max => Glsl(G::SMax),
        C::u_max => Glsl(G::UMax),
        C::s_clamp => Glsl(G::SClamp),
        C::u_clamp => Glsl(G::UClamp),
        C::mad => MulAdd,
        C::native_sqrt => Glsl(G::Sqrt),
        C::native_rsqrt => Glsl(G::InverseSqrt),
        C::native_exp => Glsl(G::Exp),
        C::native_exp2 => Glsl(G::Exp2),
        C::native_log => Glsl(G::Log),
        C::native_log2 => Glsl(G::Log2),
        C::native_sin => Glsl(G::Sin),
        C::native_cos => Glsl(G::Cos),
        C::native_tan => Glsl(G::Tan),
        C::native_powr => Glsl(G::Pow),
        C::native_divide => Div,
        // fma is not here: Vulkan's Fma may round twice (lavapipe's does),
        // so the kernel's fma comes from libclc, correctly rounded.
        // Vulkan's sqrt (inherited from inversesqrt) and inversesqrt (2
        // ULP) are within OpenCL's 3 and 2 ULP for single precision.
        C::sqrt => Glsl(G::Sqrt),
        C::rsqrt => Glsl(G::InverseSqrt),
        // half_* functions allow 8192 ULP. Vulkan's transcendental forms
        // only bound the absolute error near 0 (sin) or 1 (log), far
        // beyond 8192 ULP of tiny results, so those take the full-precision
        // functions (see `precise_twin`); sqrt and rsqrt are fine.
        C::half_sqrt => Glsl(G::Sqrt),
        C::half_rsqrt => Glsl(G::InverseSqrt),
        C::half_divide => Div,
        _ => return None,
    })
}

/// The full-precision function that stands in for a reduced-precision
/// one whose Vulkan form is not precise enough.
fn precise_twin(op: C) -> Option<C> {
    Some(match op {
        C::half_cos => C::cos,
        C::half_sin => C::sin,
        C::half_tan => C::tan,
        C::half_exp => C::exp,
        C::half_exp2 => C::exp2,
        C::half_exp10 => C::exp10,
        C::half_log => C::log,
        C::half_log2 => C::log2,
        C::half_log10 => C::log10,
        C::half_powr => C::powr,
        _ => return None,
    })
}

/// Lowers the kernel's built-ins; those taken from libclc are copied in,
/// inlined into kernel `fid`, and their own built-ins lowered in turn.
/// Native forms the relaxed-precision build options allow for single
/// precision (the specification's table for -cl-unsafe-math-optimizations:
/// absolute error bounds near the origin, derived implementations).
fn relaxed(op: C) -> Option<Lowering> {
    use Lowering::*;
    Some(match op {
        C::sin => Glsl(G::Sin),
        C::cos => Glsl(G::Cos),
        C::tan => Glsl(G::Tan),
        // exp, exp2, log and log2 stay libclc's: lavapipe's Vulkan forms
        // miss even the relaxed limits (3 ULP near 0 for exp; log of a
        // denormal is far off).
        C::powr => Glsl(G::Pow),
        C::fma => Glsl(G::Fma),
        _ => return None,
    })
}

pub fn run(ctx: &mut Ctx, fid: Word, options: Options, caps: &DeviceCaps) -> Result<(), String> {
    // Half values live as their bits; cl_khr_fp16 arithmetic is done in
    // float, but for what the device's half arithmetic does exactly.
    fp16::widen(ctx, caps.native_f16)?;
    half::retype_half(ctx);
    fp16::lower_conversions(ctx, caps.native_f16)?;
    pi_zero_signs(ctx);
    sign_of_argument(ctx, &[C::atanpi]);
    gamma_of_doubles(ctx);
    nan_passes_through(ctx);
    if !options.relaxed_math {
        divisors_in_range(ctx);
    }
    if caps.float64 {
        in_double(ctx, &[C::tgamma, C::erfc]);
        if !options.relaxed_math {
            in_double(ctx, &[C::fma]);
        }
    }
    if caps.keeps_denormals_f32 && !options.denorms_are_zero {
        denormal_ranges(ctx);
    }
    let subnormals = libclc::Subnormals {
        float: caps.keeps_denormals_f32 && !options.denorms_are_zero,
        // OpenCL requires double denormals, and Vulkan drivers keep them.
        double: true,
    };
    let mut linker: Option<libclc::Linker> = None;
    let mut fusable: HashSet<Word> = HashSet::default();
    let mut rounds = 0;
    while lower(
        ctx,
        &mut linker,
        subnormals,
        rounds == 0,
        options.relaxed_math,
        caps,
        &mut fusable,
    )? {
        rounds += 1;
        if rounds > 16 {
            return Err("built-in functions call each other without end".into());
        }
        inline::run(ctx, fid)?;
        memcopy::run(ctx)?;
    }
    // Every OpenCL.std instruction is lowered but the fmas left for
    // fma64::outline; the import goes once nothing uses it.
    if let Some(ocl) = ctx.ext_import("OpenCL.std") {
        if caps.double_fma_rounds_twice {
            let mut glsl = ctx.ext_import("GLSL.std.450");
            fma64::outline(ctx, ocl, &mut glsl);
        }
        let used = ctx
            .module
            .functions
            .iter()
            .flat_map(|f| f.all_inst_iter())
            .any(|i| i.class.opcode == Op::ExtInst && id_at(i, 0) == Some(ocl));
        if !used {
            ctx.module
                .ext_inst_imports
                .retain(|i| i.result_id != Some(ocl));
        }
    }
    if !options.contract {
        no_contraction(ctx, &fusable);
    }
    if caps.native_f16 {
        fp16::native_arithmetic(ctx, &fusable);
    }
    Ok(())
}

/// The `OpenCL.std` instruction `i` is, where it is one (`ocl` being the
/// set's import).
pub(crate) fn opencl_op(i: &Instruction, ocl: Word) -> Option<C> {
    match (i.class.opcode, id_at(i, 0), i.operands.get(1)) {
        (Op::ExtInst, Some(set), Some(Operand::LiteralExtInstInteger(n))) if set == ocl => {
            C::from_u32(*n)
        }
        _ => None,
    }
}

/// Rewrites each `OpenCL.std` instruction of the module's functions
/// through `each`, which appends what replaces it to the block's code, or
/// gives the instruction back to be kept as it is.
fn rewrite_builtins(
    ctx: &mut Ctx,
    mut each: impl FnMut(&mut Ctx, &mut Vec<Instruction>, C, Instruction) -> Option<Instruction>,
) {
    let Some(ocl) = ctx.ext_import("OpenCL.std") else {
        return;
    };
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let kept = match opencl_op(&i, ocl) {
                    Some(op) => each(ctx, &mut out, op, i),
                    None => Some(i),
                };
                out.extend(kept);
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
}

/// The results of the built-ins `wanted` picks (by op and result type)
/// fixed up: each built-in keeps computing under a fresh id, and `fix`
/// makes, from its op, type, first argument and that result, the value
/// the original id then holds.
fn fix_up_results(
    ctx: &mut Ctx,
    wanted: impl Fn(&Ctx, C, Word) -> bool,
    mut fix: impl FnMut(&mut emit::Emit, C, Word, Word, Word) -> Word,
) {
    let mut glsl = ctx.ext_import("GLSL.std.450");
    rewrite_builtins(ctx, |ctx, out, op, mut i| {
        let (Some(ty), Some(rid), Some(x)) = (i.result_type, i.result_id, id_at(&i, 2)) else {
            return Some(i);
        };
        if !wanted(ctx, op, ty) {
            return Some(i);
        }
        let r = ctx.fresh();
        i.result_id = Some(r);
        out.push(i);
        let mut e = emit::Emit {
            ctx,
            out,
            glsl: &mut glsl,
        };
        let v = fix(&mut e, op, ty, x, r);
        e.assign(ty, rid, v);
        None
    });
}

/// OpenCL.std instruction `i` again, as `op` on `operands`; its result.
fn call_again(e: &mut emit::Emit, i: &Instruction, op: C, operands: &[Word]) -> Word {
    let mut again = i.clone();
    again.operands.truncate(1);
    again
        .operands
        .push(Operand::LiteralExtInstInteger(op as u32));
    again
        .operands
        .extend(operands.iter().map(|&o| Operand::IdRef(o)));
    let r = e.ctx.fresh();
    again.result_id = Some(r);
    e.out.push(again);
    r
}

/// Single-precision `ops` computed in double and rounded once, on devices
/// with doubles: libclc's float `tgamma` and `erfc` miss OpenCL's 16 ULP
/// (CTS bruteforce: 17 ULP near -8 and infinities for tiny results of
/// tgamma, 48 ULP for erfc near 8), its double ones are far within. `fma`
/// in double is the exact product, the sum rounded to odd there and then
/// once to float: the correctly rounded fma for every input, denormals
/// included (libclc's integer fma flushes denormal operands and mistakes
/// their exponent; Vulkan's own Fma may round twice).
fn in_double(ctx: &mut Ctx, ops: &[C]) {
    rewrite_builtins(ctx, |ctx, out, op, mut i| {
        let (Some(ty), Some(rid)) = (i.result_type, i.result_id) else {
            return Some(i);
        };
        if !ops.contains(&op) || emit::width(ctx, ty) != Some(32) {
            return Some(i);
        }
        let double = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(64)]);
        let wide = emit::shaped_like(ctx, double, ty);
        for o in i.operands.iter_mut().skip(2) {
            if let Operand::IdRef(x) = o {
                let w = ctx.fresh();
                out.push(Instruction::new(
                    Op::FConvert,
                    Some(wide),
                    Some(w),
                    vec![Operand::IdRef(*x)],
                ));
                *x = w;
            }
        }
        let r = ctx.fresh();
        match (op, &i.operands[2..]) {
            (C::fma, &[Operand::IdRef(a), Operand::IdRef(b), Operand::IdRef(c)]) => {
                fp16::fma_to_odd(ctx, out, wide, r, [a, b, c]);
            }
            _ => {
                i.result_type = Some(wide);
                i.result_id = Some(r);
                out.push(i);
            }
        }
        out.push(Instruction::new(
            Op::FConvert,
            Some(ty),
            Some(rid),
            vec![Operand::IdRef(r)],
        ));
        None
    });
}

/// Single-precision built-ins that libclc's SPIR-V library computes as if
/// denormals were flushed, on devices that keep them: `exp` and `exp2`
/// give 0 for results below FLT_MIN, and `fmod`, `remainder` and `remquo`
/// go wrong for a denormal divisor. Each gets arguments where libclc is
/// right and its result is scaled back by a power of two:
///
/// * exp2(x) = exp2(x + 24) * 2^-24 (x + 24 is exact there), and
///   exp(x) = exp(x + c) * (1 + d) * 2^-24 where c + d = 24 ln 2 and c is
///   a multiple of x's spacing, so that x + c is exact. The error a
///   normal result had shrinks by the scaling to well under a denormal's
///   unit in the last place.
/// * For a denormal divisor y, with Y = y * 2^24 (a multiple of y):
///   r = fmod(x, Y) leaves the quotient's low 24 bits and x's sign, and
///   op(r * 2^24, Y) * 2^-24 is op(x, y), remquo's quotient bits included.
fn denormal_ranges(ctx: &mut Ctx) {
    let mut glsl = ctx.ext_import("GLSL.std.450");
    rewrite_builtins(ctx, |ctx, out, op, i| {
        let (Some(ty), Some(rid), Some(x)) = (i.result_type, i.result_id, id_at(&i, 2)) else {
            return Some(i);
        };
        let exponential = matches!(op, C::exp | C::exp2);
        if emit::width(ctx, ty) != Some(32)
            || !(exponential || matches!(op, C::fmod | C::remainder | C::remquo))
        {
            return Some(i);
        }
        let mut e = emit::Emit {
            ctx,
            out,
            glsl: &mut glsl,
        };
        let bt = e.bool_like(ty);
        let (up, down) = (e.float(ty, 2f64.powi(24)), e.float(ty, 2f64.powi(-24)));
        let value = if exponential {
            let (limit, shift) = if op == C::exp2 {
                (-126.0, 24.0)
            } else {
                (-87.0, 24.0 * std::f64::consts::LN_2)
            };
            // Arguments here are multiples of 2^-17.
            let near = (shift * 131072.0).round() / 131072.0;
            let (limit, near, rest) = (
                e.float(ty, limit),
                e.float(ty, near),
                e.float(ty, shift - near),
            );
            let low = e.op(Op::FOrdLessThan, bt, &[x, limit]);
            let moved = e.op(Op::FAdd, ty, &[x, near]);
            let arg = e.select(ty, low, moved, x);
            let r = call_again(&mut e, &i, op, &[arg]);
            let part = e.op(Op::FMul, ty, &[r, rest]);
            let r2 = e.op(Op::FAdd, ty, &[r, part]);
            let scaled = e.op(Op::FMul, ty, &[r2, down]);
            e.select(ty, low, scaled, r)
        } else {
            let Some(y) = id_at(&i, 3) else {
                return Some(i);
            };
            let rest: Vec<Word> = (4..i.operands.len()).filter_map(|n| id_at(&i, n)).collect();
            let small = e.is_denormal(y, ty);
            let big_y = e.op(Op::FMul, ty, &[y, up]);
            let r1 = call_again(&mut e, &i, C::fmod, &[x, big_y]);
            let big_r1 = e.op(Op::FMul, ty, &[r1, up]);
            let xs = e.select(ty, small, big_r1, x);
            let ys = e.select(ty, small, big_y, y);
            let mut operands = vec![xs, ys];
            operands.extend(rest);
            let r = call_again(&mut e, &i, op, &operands);
            let scaled = e.op(Op::FMul, ty, &[r, down]);
            e.select(ty, small, scaled, r)
        };
        e.assign(ty, rid, value);
        None
    });
}

/// Single-precision division of the kernel's own code (`/` and
/// `half_divide`) with its divisor moved into the range where Vulkan
/// bounds the error of OpFDiv, 2^-126 to 2^126: both operands are scaled
/// by 1/4 above it and by 2^24 for denormal divisors, which changes no
/// quotient that is not zero or infinite anyway. NVIDIA divides through
/// a reciprocal that is flushed to zero for divisors above 2^126 (CTS
/// bruteforce `divide`: 2^60 / 2^126 gave 0).
fn divisors_in_range(ctx: &mut Ctx) {
    let ocl = ctx.ext_import("OpenCL.std");
    let mut glsl = ctx.ext_import("GLSL.std.450");
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let (x, y) = match (i.class.opcode, ocl.and_then(|set| opencl_op(&i, set))) {
                    (Op::FDiv, _) => (id_at(&i, 0), id_at(&i, 1)),
                    (_, Some(C::half_divide)) => (id_at(&i, 2), id_at(&i, 3)),
                    _ => (None, None),
                };
                let (Some(x), Some(y), Some(ty), Some(rid)) = (x, y, i.result_type, i.result_id)
                else {
                    out.push(i);
                    continue;
                };
                if emit::width(ctx, ty) != Some(32) {
                    out.push(i);
                    continue;
                }
                let mut e = emit::Emit {
                    ctx,
                    out: &mut out,
                    glsl: &mut glsl,
                };
                let (it, bt) = (e.int_like(ty, 32), e.bool_like(ty));
                let yb = e.op(Op::Bitcast, it, &[y]);
                let mask = e.konst(it, 0x7fff_ffff);
                let magnitude = e.op(Op::BitwiseAnd, it, &[yb, mask]);
                let top = e.konst(it, u64::from(2f32.powi(126).to_bits()));
                let big = e.op(Op::UGreaterThan, bt, &[magnitude, top]);
                let tiny = e.is_denormal(y, ty);
                let (quarter, up, one) = (
                    e.float(ty, 0.25),
                    e.float(ty, 2f64.powi(24)),
                    e.float(ty, 1.0),
                );
                let scale = e.select(ty, tiny, up, one);
                let scale = e.select(ty, big, quarter, scale);
                let xs = e.op(Op::FMul, ty, &[x, scale]);
                let ys = e.op(Op::FMul, ty, &[y, scale]);
                e.out.push(Instruction::new(
                    Op::FDiv,
                    Some(ty),
                    Some(rid),
                    vec![Operand::IdRef(xs), Operand::IdRef(ys)],
                ));
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
}

/// Double-precision `tgamma` for -185 < x < 171.625, where libclc's exp(lgamma(|x|))
/// loses the absolute error of lgamma (CTS bruteforce: 31 ULP at -2^-63,
/// 19 ULP near -8): libclc's tgamma is taken only between 1 and 2, where
/// lgamma is near zero, and moved to x by exact factors,
/// Γ(a) = Γ(a - n) (a - 1) ... (a - n + 1), or Γ(a) = Γ(1 + a) / a below 1
/// (where rounding 1 + a matters little: Γ is flat near 1); negative x
/// by reflection, Γ(x) = -π / (x sinpi(x) Γ(-x)); and |x| < 2^-14 by the
/// series 1/x - γ + c1 x + c2 x².
fn gamma_of_doubles(ctx: &mut Ctx) {
    const EULER: f64 = 0.577_215_664_901_532_9;
    const C1: f64 = 0.989_055_995_327_972_5;
    const C2: f64 = -0.907_479_076_080_886_3;
    let mut glsl = ctx.ext_import("GLSL.std.450");
    rewrite_builtins(ctx, |ctx, out, op, i| {
        let (Some(ty), Some(rid), Some(x)) = (i.result_type, i.result_id, id_at(&i, 2)) else {
            return Some(i);
        };
        if op != C::tgamma || emit::width(ctx, ty) != Some(64) {
            return Some(i);
        }
        let mut e = emit::Emit {
            ctx,
            out,
            glsl: &mut glsl,
        };
        let bt = e.bool_like(ty);
        let one = e.float(ty, 1.0);
        let ax = e.glsl(G::FAbs, ty, &[x]);
        // Γ(|x|) overflows from 171.62 on; negative x reach down to -185
        // (where Γ(x) has underflowed), with Γ(|x|) scaled by 2^-512.
        let (finite, reach, zero) = (e.float(ty, 171.625), e.float(ty, 185.0), e.float(ty, 0.0));
        let negative = e.op(Op::FOrdLessThan, bt, &[x, zero]);
        let below_finite = e.op(Op::FOrdLessThan, bt, &[ax, finite]);
        let below_reach = e.op(Op::FOrdLessThan, bt, &[ax, reach]);
        let far_negative = e.op(Op::LogicalAnd, bt, &[negative, below_reach]);
        let in_range = e.op(Op::LogicalOr, bt, &[below_finite, far_negative]);
        let small_scale = e.float(ty, 2f64.powi(-512));
        // Where x Γ(|x|) sinpi(x) could overflow on the way to a tiny Γ(x).
        let big = e.float(ty, 160.0);
        let large = e.op(Op::FOrdGreaterThanEqual, bt, &[ax, big]);
        let scaled = e.op(Op::LogicalAnd, bt, &[negative, large]);
        let below_one = e.op(Op::FOrdLessThan, bt, &[ax, one]);
        let whole = e.glsl(G::Floor, ty, &[ax]);
        // Γ's argument between 1 and 2.
        let lifted = e.op(Op::FAdd, ty, &[ax, one]);
        let fraction = e.op(Op::FSub, ty, &[ax, whole]);
        let shifted = e.op(Op::FAdd, ty, &[fraction, one]);
        let y = e.select(ty, below_one, lifted, shifted);
        let arg = e.select(ty, in_range, y, x);
        let g = call_again(&mut e, &i, C::tgamma, &[arg]);
        // (a - 1) (a - 2) ... down to the argument's whole part: up to 183
        // roundings of half an ULP at worst, which mostly cancel (CTS
        // bruteforce measures a few ULP).
        let mut product = e.select(ty, scaled, small_scale, one);
        for k in 1..185 {
            let kf = e.float(ty, f64::from(k));
            let used = e.op(Op::FOrdGreaterThan, bt, &[whole, kf]);
            let factor = e.op(Op::FSub, ty, &[ax, kf]);
            let factor = e.select(ty, used, factor, one);
            product = e.op(Op::FMul, ty, &[product, factor]);
        }
        let up = e.op(Op::FMul, ty, &[g, product]);
        let down = e.op(Op::FDiv, ty, &[g, ax]);
        let positive = e.select(ty, below_one, down, up);
        // Reflection for negative x; NaN at the poles.
        let s = call_again(&mut e, &i, C::sinpi, &[x]);
        let xs = e.op(Op::FMul, ty, &[x, s]);
        let d = e.op(Op::FMul, ty, &[xs, positive]);
        let minus_pi = e.float(ty, -std::f64::consts::PI);
        let reflected = e.op(Op::FDiv, ty, &[minus_pi, d]);
        let unscale = e.op(Op::FMul, ty, &[reflected, small_scale]);
        let reflected = e.select(ty, scaled, unscale, reflected);
        let floor_x = e.glsl(G::Floor, ty, &[x]);
        let pole = e.op(Op::FOrdEqual, bt, &[floor_x, x]);
        let nan = e.float(ty, f64::NAN);
        let reflected = e.select(ty, pole, nan, reflected);
        let moderate = e.select(ty, negative, reflected, positive);
        // Near zero.
        let (c1, c2, euler) = (e.float(ty, C1), e.float(ty, C2), e.float(ty, EULER));
        let t = e.op(Op::FMul, ty, &[c2, x]);
        let t = e.op(Op::FAdd, ty, &[t, c1]);
        let t = e.op(Op::FMul, ty, &[t, x]);
        let t = e.op(Op::FSub, ty, &[t, euler]);
        let inverse = e.op(Op::FDiv, ty, &[one, x]);
        let series = e.op(Op::FAdd, ty, &[inverse, t]);
        let limit = e.float(ty, 2f64.powi(-14));
        let tiny = e.op(Op::FOrdLessThan, bt, &[ax, limit]);
        let near = e.select(ty, tiny, series, moderate);
        let v = e.select(ty, in_range, near, g);
        e.assign(ty, rid, v);
        None
    });
}

/// Double-precision functions of one argument give a NaN for a NaN,
/// found on the bits: NVIDIA's double `rsqrt` of a signalling NaN is 0
/// (its reciprocal square root looks at the upper half of the bits, an
/// infinity there) and libclc's `acospi` of a NaN came out as 0.5 (CTS
/// bruteforce).
fn nan_passes_through(ctx: &mut Ctx) {
    const UNARY: &[C] = &[
        C::acos,
        C::acosh,
        C::acospi,
        C::asin,
        C::asinh,
        C::asinpi,
        C::atan,
        C::atanh,
        C::atanpi,
        C::cbrt,
        C::cos,
        C::cosh,
        C::cospi,
        C::erf,
        C::erfc,
        C::exp,
        C::exp2,
        C::exp10,
        C::expm1,
        C::log,
        C::log2,
        C::log10,
        C::log1p,
        C::rsqrt,
        C::sin,
        C::sinh,
        C::sinpi,
        C::sqrt,
        C::tan,
        C::tanh,
        C::tanpi,
        C::tgamma,
    ];
    fix_up_results(
        ctx,
        |ctx, op, ty| UNARY.contains(&op) && emit::width(ctx, ty) == Some(64),
        |e, _, ty, x, r| {
            let (it, bt) = (e.int_like(ty, 64), e.bool_like(ty));
            let xb = e.op(Op::Bitcast, it, &[x]);
            let mask = e.konst(it, (1 << 63) - 1);
            let magnitude = e.op(Op::BitwiseAnd, it, &[xb, mask]);
            let inf = e.konst(it, 0x7ff0_0000_0000_0000);
            let nan = e.op(Op::UGreaterThan, bt, &[magnitude, inf]);
            e.select(ty, nan, x, r)
        },
    );
}

/// Odd functions whose result takes the argument's sign, zeros included:
/// libclc's double `atanpi(-0)` is +0 (CTS math_edge_cases).
fn sign_of_argument(ctx: &mut Ctx, ops: &[C]) {
    fix_up_results(
        ctx,
        |_, op, _| ops.contains(&op),
        |e, _, ty, x, r| {
            let bits = emit::width(e.ctx, ty).unwrap_or(32);
            let it = e.int_like(ty, bits);
            let sign = e.konst(it, 1 << (bits - 1));
            let magnitude = e.konst(it, (1 << (bits - 1)) - 1);
            let (xb, rb) = (e.op(Op::Bitcast, it, &[x]), e.op(Op::Bitcast, it, &[r]));
            let xs = e.op(Op::BitwiseAnd, it, &[xb, sign]);
            let rm = e.op(Op::BitwiseAnd, it, &[rb, magnitude]);
            let v = e.op(Op::BitwiseOr, it, &[rm, xs]);
            e.op(Op::Bitcast, ty, &[v])
        },
    );
}

/// The signs of the zeros `sinpi`, `cospi` and `tanpi` give at whole and
/// half numbers, and of `tgamma`'s infinities at zeros, which libclc gets
/// wrong: `cospi(n + 0.5)` is +0, `sinpi(n)` has the sign of `n`, and
/// `tanpi(n)` that of `n` for even `n` and of `-n` for odd `n` (zeros give
/// themselves); `tgamma(±0)` is ±infinity, and far below zero (under
/// -64, between poles) a zero of the sign tgamma has there. The built-in's
/// result is fixed up there.
fn pi_zero_signs(ctx: &mut Ctx) {
    let wanted = |_: &Ctx, op, _| matches!(op, C::sinpi | C::cospi | C::tanpi | C::tgamma);
    fix_up_results(ctx, wanted, |e, op, ty, x, r| {
        // On the bits: drivers need not keep the sign of a float zero
        // through float selects and compares.
        let bt = e.bool_like(ty);
        let bits = emit::width(e.ctx, ty).unwrap_or(32);
        let it = e.int_like(ty, bits);
        let sign = e.konst(it, 1 << (bits - 1));
        let magnitude = e.konst(it, (1u64 << (bits - 1)) - 1);
        let izero = e.konst(it, 0);
        // Whether whole number `v` is odd.
        let odd = |e: &mut emit::Emit, v: Word| {
            let half = e.konst(ty, emit::float_bits(bits, 0.5));
            let halved = e.op(Op::FMul, ty, &[v, half]);
            let floor = e.glsl(G::Floor, ty, &[halved]);
            e.op(Op::FOrdNotEqual, bt, &[halved, floor])
        };
        let xb = e.op(Op::Bitcast, it, &[x]);
        let x_sign = e.op(Op::BitwiseAnd, it, &[xb, sign]);
        let (zero_in, fixed) = if op == C::tgamma {
            // tgamma(±0) is ±infinity.
            let inf = e.konst(it, emit::float_bits(bits, f64::INFINITY));
            (xb, e.op(Op::BitwiseOr, it, &[inf, x_sign]))
        } else {
            let fixed = match op {
                C::cospi => izero,
                C::sinpi => x_sign,
                _ => {
                    // tanpi: the other sign for odd whole numbers.
                    let odd = odd(e, x);
                    let flipped = e.op(Op::BitwiseXor, it, &[x_sign, sign]);
                    e.select(it, odd, flipped, x_sign)
                }
            };
            (e.op(Op::Bitcast, it, &[r]), fixed)
        };
        // Where the argument (tgamma) or the result (the others) is a zero.
        let abs = e.op(Op::BitwiseAnd, it, &[zero_in, magnitude]);
        let is_zero = e.op(Op::IEqual, bt, &[abs, izero]);
        let rb = e.op(Op::Bitcast, it, &[r]);
        let mut chosen = e.select(it, is_zero, fixed, rb);
        if op == C::tgamma {
            // Far below zero, between the poles, the result is a zero of
            // the sign tgamma has there (negative after odd floors), where
            // libclc can give infinities: from -64 for floats, -185 for
            // doubles.
            let far = if bits <= 32 { -64.0 } else { -185.0 };
            let limit = e.konst(ty, emit::float_bits(bits, far));
            let far = e.op(Op::FOrdLessThan, bt, &[x, limit]);
            let floor = e.glsl(G::Floor, ty, &[x]);
            let between = e.op(Op::FOrdNotEqual, bt, &[floor, x]);
            let far = e.op(Op::LogicalAnd, bt, &[far, between]);
            let odd = odd(e, floor);
            let tiny = e.select(it, odd, sign, izero);
            chosen = e.select(it, far, tiny, chosen);
        }
        e.op(Op::Bitcast, ty, &[chosen])
    });
}

/// OpenCL C rounds each float operation on its own unless the program
/// allows contraction (clang has already fused where `FP_CONTRACT` let it,
/// into `mad`/`fma`), while Vulkan lets drivers fuse a multiply and an add
/// unless told not to: every float operation but those of the kernel's
/// own `mad` (any precision) gets `NoContraction`. That includes libclc's
/// internal `mad` and `fma`: its algorithms, measured on lavapipe (which
/// does not fuse) and NVIDIA (which fuses whatever it may), only stay
/// within OpenCL's limits everywhere when every step rounds (fused,
/// NVIDIA's pow was 27 ULP off).
fn no_contraction(ctx: &mut Ctx, fusable: &HashSet<Word>) {
    let targets: Vec<Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .filter(|i| {
            matches!(
                i.class.opcode,
                Op::FAdd
                    | Op::FSub
                    | Op::FMul
                    | Op::FDiv
                    | Op::FRem
                    | Op::FMod
                    | Op::FNegate
                    | Op::VectorTimesScalar
            )
        })
        .filter_map(|i| i.result_id)
        .filter(|r| !fusable.contains(r))
        .collect();
    for t in targets {
        ctx.decorate(t, Decoration::NoContraction, vec![]);
    }
}

/// One round: returns whether calls to libclc functions were added.
/// In the first round the built-ins are the kernel's own; later rounds
/// lower those of the libclc functions copied in.
fn lower(
    ctx: &mut Ctx,
    linker: &mut Option<libclc::Linker>,
    subnormals: libclc::Subnormals,
    kernel_code: bool,
    relaxed_math: bool,
    caps: &DeviceCaps,
    fusable: &mut HashSet<Word>,
) -> Result<bool, String> {
    let soft_double_fma = caps.double_fma_rounds_twice;
    // A module without OpenCL.std (IL) still has its core instructions
    // lowered; id 0 names no import.
    let ocl = ctx.ext_import("OpenCL.std").unwrap_or(0);
    if let Some(l) = linker.as_mut() {
        l.begin(ctx);
    }
    let mut called = false;
    let mut glsl: Option<Word> = ctx.ext_import("GLSL.std.450");
    // Types of the values in the functions, for vloadn/vstoren.
    let value_types: HashMap<Word, Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| {
            f.parameters
                .iter()
                .chain(f.blocks.iter().flat_map(|b| &b.instructions))
        })
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .chain(
            ctx.module
                .types_global_values
                .iter()
                .filter_map(|i| Some((i.result_id?, i.result_type?))),
        )
        .collect();
    // Generic pointers and the pointers they were cast from: libclc has
    // each built-in with an out-parameter for each address space.
    let generic_sources: HashMap<Word, Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .filter(|i| i.class.opcode == Op::PtrCastToGeneric)
        .filter_map(|i| Some((i.result_id?, id_at(i, 0)?)))
        .collect();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                if i.class.opcode != Op::ExtInst || id_at(&i, 0) != Some(ocl) {
                    let arg_types: Vec<Word> = i
                        .operands
                        .iter()
                        .filter_map(|o| match o {
                            Operand::IdRef(x) => value_types.get(x).copied(),
                            _ => None,
                        })
                        .collect();
                    let mut e = emit::Emit {
                        ctx,
                        out: &mut out,
                        glsl: &mut glsl,
                    };
                    if !exact::lower_relational(&mut e, &i, &arg_types, caps.native_dot)? {
                        out.push(i);
                    }
                    continue;
                }
                let n = match i.operands.get(1) {
                    Some(Operand::LiteralExtInstInteger(n)) => *n,
                    _ => return Err("malformed OpExtInst".into()),
                };
                let op =
                    C::from_u32(n).ok_or_else(|| format!("unknown OpenCL.std instruction {n}"))?;
                let op = precise_twin(op).unwrap_or(op);
                let args: Vec<Operand> = i.operands[2..].to_vec();
                if matches!(op, C::vloadn | C::vstoren) {
                    vector_memory(ctx, &value_types, op, &i, &mut out)?;
                    continue;
                }
                {
                    let mut e = emit::Emit {
                        ctx,
                        out: &mut out,
                        glsl: &mut glsl,
                    };
                    if half::lower(&mut e, op, &i, &value_types)? {
                        continue;
                    }
                }
                if matches!(op, C::shuffle | C::shuffle2) {
                    shuffle(ctx, &value_types, &i, &mut out)?;
                    continue;
                }
                let ids: Vec<Word> = (2..i.operands.len()).filter_map(|n| id_at(&i, n)).collect();
                let arg_types: Vec<Word> = ids
                    .iter()
                    .filter_map(|x| value_types.get(x).copied())
                    .collect();
                if let (Some(rty), Some(rid)) = (i.result_type, i.result_id) {
                    let mut e = emit::Emit {
                        ctx,
                        out: &mut out,
                        glsl: &mut glsl,
                    };
                    if exact::lower(&mut e, op, (rty, rid), &ids, &arg_types)? {
                        continue;
                    }
                    // Vulkan has no base-10 exp and log; the native forms
                    // (whose precision is the implementation's to choose)
                    // go through base 2.
                    if emit::width(e.ctx, rty) == Some(32)
                        && matches!(op, C::native_exp10 | C::native_log10)
                        && let Some(&x) = ids.first()
                    {
                        let v = if op == C::native_exp10 {
                            let c = e.float(rty, std::f64::consts::LOG2_10);
                            let t = e.op(Op::FMul, rty, &[x, c]);
                            e.glsl(G::Exp2, rty, &[t])
                        } else {
                            let c = e.float(rty, std::f64::consts::LOG10_2);
                            let t = e.glsl(G::Log2, rty, &[x]);
                            e.op(Op::FMul, rty, &[t, c])
                        };
                        e.assign(rty, rid, v);
                        continue;
                    }
                    // Worked out on the bits later, in one function
                    // (fma64::outline).
                    if (op, soft_double_fma, emit::width(e.ctx, rty)) == (C::fma, true, Some(64)) {
                        out.push(i);
                        continue;
                    }
                }
                // libclc's own single-precision fma calls become a multiply
                // and an add, each rounded (see `no_contraction`); its
                // double algorithms (argument reduction for sin and cos,
                // fmod's steps) need the exact product fma keeps.
                let single = i
                    .result_type
                    .is_some_and(|t| emit::width(ctx, t) == Some(32));
                let double = i
                    .result_type
                    .is_some_and(|t| emit::width(ctx, t) == Some(64));
                let lowered = match op {
                    C::fma if !kernel_code && !double => Some(Lowering::MulAdd),
                    // libclc has no double fma of its own; Vulkan's is the
                    // hardware's (the tests check it rounds once).
                    C::fma if double => Some(Lowering::Glsl(G::Fma)),
                    _ if relaxed_math && kernel_code && single => {
                        relaxed(op).or_else(|| lowering(op))
                    }
                    _ => lowering(op),
                };
                match lowered {
                    Some(Lowering::Glsl(g)) => {
                        let set =
                            *glsl.get_or_insert_with(|| ctx.ext_import_or_add("GLSL.std.450"));
                        let mut ops = vec![
                            Operand::IdRef(set),
                            Operand::LiteralExtInstInteger(g as u32),
                        ];
                        ops.extend(args);
                        out.push(Instruction::new(
                            Op::ExtInst,
                            i.result_type,
                            i.result_id,
                            ops,
                        ));
                    }
                    Some(Lowering::MulAdd) => {
                        let tmp = ctx.fresh();
                        out.push(Instruction::new(
                            Op::FMul,
                            i.result_type,
                            Some(tmp),
                            args[..2].to_vec(),
                        ));
                        out.push(Instruction::new(
                            Op::FAdd,
                            i.result_type,
                            i.result_id,
                            vec![Operand::IdRef(tmp), args[2].clone()],
                        ));
                        // The kernel's own mad may be fused; libclc's
                        // mad and fma round each step, so its results do
                        // not depend on whether a driver fuses.
                        if kernel_code {
                            fusable.insert(tmp);
                            fusable.extend(i.result_id);
                        }
                    }
                    Some(Lowering::Div) => {
                        out.push(Instruction::new(Op::FDiv, i.result_type, i.result_id, args))
                    }
                    Some(Lowering::Copy) => out.push(Instruction::new(
                        Op::CopyObject,
                        i.result_type,
                        i.result_id,
                        args,
                    )),
                    None => {
                        // A generic pointer argument is passed as the
                        // pointer it was cast from; one of unknown class
                        // goes to the private form, and the relocation
                        // pass gives the inlined body the pointer's class.
                        let ids: Vec<Word> = (2..i.operands.len())
                            .filter_map(|n| id_at(&i, n))
                            .map(|x| generic_sources.get(&x).copied().unwrap_or(x))
                            .collect();
                        let types: Vec<Word> = ids
                            .iter()
                            .filter_map(|x| value_types.get(x).copied())
                            .map(|t| match ctx.pointer_parts(t) {
                                Some((StorageClass::Generic, pointee)) => {
                                    ctx.pointer(StorageClass::Function, pointee)
                                }
                                _ => t,
                            })
                            .collect();
                        let name = format!("{op:?}");
                        let mangled = libclc::mangle(ctx, &name, &types)
                            .filter(|m| libclc::library().is_ok_and(|l| l.has(m)))
                            .ok_or_else(|| {
                                let why = libclc::library().err().unwrap_or_default();
                                format!("the built-in function {name} is not supported yet {why}")
                                    .trim()
                                    .to_string()
                            })?;
                        let lk = match linker {
                            Some(l) => l,
                            None => {
                                let l = linker
                                    .insert(libclc::Linker::new(libclc::library()?, subnormals));
                                l.begin(ctx);
                                l
                            }
                        };
                        let f = lk.function(ctx, &mangled)?;
                        let mut ops = vec![Operand::IdRef(f)];
                        ops.extend(ids.iter().map(|&x| Operand::IdRef(x)));
                        out.push(Instruction::new(
                            Op::FunctionCall,
                            i.result_type,
                            i.result_id,
                            ops,
                        ));
                        called = true;
                    }
                }
            }
            b.instructions = out;
        }
    }
    // Functions copied from libclc come after the kernel's own.
    let copied = std::mem::replace(&mut ctx.module.functions, functions);
    ctx.module.functions.extend(copied);
    Ok(called)
}

/// vloadn(offset, p, n) reads p[offset*n .. offset*n+n); vstoren(data,
/// offset, p) writes them: element by element, through pointer arithmetic
/// that the addressing pass then lowers like any other.
fn vector_memory(
    ctx: &mut Ctx,
    types: &HashMap<Word, Word>,
    op: C,
    i: &Instruction,
    out: &mut Vec<Instruction>,
) -> Result<(), String> {
    let ids: Vec<Word> = (2..i.operands.len()).filter_map(|n| id_at(i, n)).collect();
    let (offset, ptr, data) = match op {
        C::vloadn => (ids[0], ids[1], None),
        _ => (ids[1], ids[2], Some(ids[0])),
    };
    let ptr_ty = *types
        .get(&ptr)
        .ok_or("vload/vstore through a pointer of unknown type")?;
    let (_, elem) = ctx
        .pointer_parts(ptr_ty)
        .ok_or("vload/vstore without a pointer")?;
    let vec_ty = match data {
        None => i.result_type.ok_or("vloadn without a type")?,
        Some(d) => *types.get(&d).ok_or("vstoren of unknown type")?,
    };
    let lanes = match ctx
        .global(vec_ty)
        .map(|t| (t.class.opcode, t.operands.get(1)))
    {
        Some((Op::TypeVector, Some(Operand::LiteralBit32(n)))) => *n,
        _ => return Err("vloadn/vstoren of a non-vector".into()),
    };
    let off_ty = *types.get(&offset).ok_or("offset of unknown type")?;
    let width = match ctx.global(off_ty).and_then(|t| t.operands.first()) {
        Some(Operand::LiteralBit32(w)) => *w,
        _ => return Err("bad offset type".into()),
    };
    let konst = |ctx: &mut Ctx, v: u32| -> Word {
        if width == 64 {
            let id = ctx.fresh();
            ctx.module.types_global_values.push(Instruction::new(
                Op::Constant,
                Some(off_ty),
                Some(id),
                vec![Operand::LiteralBit64(v as u64)],
            ));
            id
        } else {
            ctx.const_u32(v)
        }
    };
    let n = konst(ctx, lanes);
    let base = ctx.fresh();
    out.push(Instruction::new(
        Op::IMul,
        Some(off_ty),
        Some(base),
        vec![Operand::IdRef(offset), Operand::IdRef(n)],
    ));
    let mut values = Vec::new();
    for k in 0..lanes {
        let kc = konst(ctx, k);
        let idx = ctx.fresh();
        out.push(Instruction::new(
            Op::IAdd,
            Some(off_ty),
            Some(idx),
            vec![Operand::IdRef(base), Operand::IdRef(kc)],
        ));
        let p = ctx.fresh();
        out.push(Instruction::new(
            Op::InBoundsPtrAccessChain,
            Some(ptr_ty),
            Some(p),
            vec![Operand::IdRef(ptr), Operand::IdRef(idx)],
        ));
        match data {
            None => {
                let v = ctx.fresh();
                out.push(Instruction::new(
                    Op::Load,
                    Some(elem),
                    Some(v),
                    vec![Operand::IdRef(p)],
                ));
                values.push(Operand::IdRef(v));
            }
            Some(d) => {
                let v = ctx.fresh();
                out.push(Instruction::new(
                    Op::CompositeExtract,
                    Some(elem),
                    Some(v),
                    vec![Operand::IdRef(d), Operand::LiteralBit32(k)],
                ));
                out.push(Instruction::new(
                    Op::Store,
                    None,
                    None,
                    vec![Operand::IdRef(p), Operand::IdRef(v)],
                ));
            }
        }
    }
    if data.is_none() {
        out.push(Instruction::new(
            Op::CompositeConstruct,
            i.result_type,
            i.result_id,
            values,
        ));
    }
    Ok(())
}

/// The component type and count of a vector type.
fn vector_parts(ctx: &Ctx, ty: Word) -> Option<(Word, u32)> {
    let t = ctx.global(ty)?;
    match (t.class.opcode, t.operands.first(), t.operands.get(1)) {
        (Op::TypeVector, Some(Operand::IdRef(c)), Some(Operand::LiteralBit32(n))) => Some((*c, *n)),
        _ => None,
    }
}

/// shuffle(x, mask) and shuffle2(x, y, mask): result component k is
/// component `mask[k] mod m` of x (or, for shuffle2, `mask[k] mod 2m` of
/// x followed by y), where m is x's width. Only the low bits of each mask
/// component count, as the OpenCL C specification says.
fn shuffle(
    ctx: &mut Ctx,
    types: &HashMap<Word, Word>,
    i: &Instruction,
    out: &mut Vec<Instruction>,
) -> Result<(), String> {
    let ids: Vec<Word> = (2..i.operands.len()).filter_map(|n| id_at(i, n)).collect();
    let (sources, mask) = match ids.as_slice() {
        [x, mask] => (vec![*x], *mask),
        [x, y, mask] => (vec![*x, *y], *mask),
        _ => return Err("malformed shuffle".into()),
    };
    let x_ty = *types.get(&sources[0]).ok_or("shuffle of unknown type")?;
    let (elem, m) = vector_parts(ctx, x_ty).ok_or("shuffle of a non-vector")?;
    let mask_ty = *types.get(&mask).ok_or("shuffle mask of unknown type")?;
    let (mask_elem, n) = vector_parts(ctx, mask_ty).ok_or("shuffle mask not a vector")?;
    let bool_ty = ctx.ty(Op::TypeBool, vec![]);
    let span = m * sources.len() as u32;
    let low_bits = ctx.const_int(mask_elem, u64::from(span - 1));
    let mut emit = |ctx: &mut Ctx, op: Op, ty: Word, operands: Vec<Operand>| -> Word {
        let id = ctx.fresh();
        out.push(Instruction::new(op, Some(ty), Some(id), operands));
        id
    };
    let mut parts = Vec::with_capacity(n as usize);
    for k in 0..n {
        let raw = emit(
            ctx,
            Op::CompositeExtract,
            mask_elem,
            vec![Operand::IdRef(mask), Operand::LiteralBit32(k)],
        );
        let index = emit(
            ctx,
            Op::BitwiseAnd,
            mask_elem,
            vec![Operand::IdRef(raw), Operand::IdRef(low_bits)],
        );
        // Start from the first component and replace it where the index
        // names another one.
        let mut value = emit(
            ctx,
            Op::CompositeExtract,
            elem,
            vec![Operand::IdRef(sources[0]), Operand::LiteralBit32(0)],
        );
        for j in 1..span {
            let src = sources[(j / m) as usize];
            let candidate = emit(
                ctx,
                Op::CompositeExtract,
                elem,
                vec![Operand::IdRef(src), Operand::LiteralBit32(j % m)],
            );
            let jc = ctx.const_int(mask_elem, u64::from(j));
            let hit = emit(
                ctx,
                Op::IEqual,
                bool_ty,
                vec![Operand::IdRef(index), Operand::IdRef(jc)],
            );
            value = emit(
                ctx,
                Op::Select,
                elem,
                vec![
                    Operand::IdRef(hit),
                    Operand::IdRef(candidate),
                    Operand::IdRef(value),
                ],
            );
        }
        parts.push(Operand::IdRef(value));
    }
    out.push(Instruction::new(
        Op::CompositeConstruct,
        i.result_type,
        i.result_id,
        parts,
    ));
    Ok(())
}
