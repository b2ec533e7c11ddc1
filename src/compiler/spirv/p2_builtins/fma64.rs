//! Double-precision `fma` worked out on the bits, for drivers whose
//! Vulkan `Fma` on doubles rounds the product before adding (lavapipe):
//! libclc's double algorithms take the low half of a product from
//! `fma(a, b, -a * b)`, which is then 0.
//!
//! The operands' 53-bit mantissas give the exact 106-bit product; it and
//! the addend, both placed with their top bit at bit 125 of a 128-bit
//! pair, are aligned (the smaller shifted right, what falls off kept as a
//! sticky bit: only past 20 places, where no cancellation can bring the
//! result down to it), added or subtracted, and the result rounded once
//! to nearest even at the position its exponent gives, denormals
//! included.
//! Infinities, NaNs and zero operands take the plain `a * b + c`, which is
//! exact for them.
//!
//! That is about 200 instructions, and libclc's double algorithms call
//! fma often (its double `tgamma`, which float `tgamma` is computed with,
//! over a hundred times), so the built-ins' lowering keeps these fmas as
//! they are and [`outline`] then makes them calls of one function of
//! doubles: inlined at each use, a kernel of `tgamma` on a `float16` came
//! to 4.5 million words, and its rewrite took seconds.

use rspirv::dr::{Function, Instruction, Operand};
use rspirv::spirv::{Decoration, Op, OpenclStd100Op as C, Word};

use crate::compiler::spirv::common::builder::Builder;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::emit::{self, Emit};

/// A 128-bit value as (high, low) 64-bit halves.
type Wide = (Word, Word);

struct Fma<'e, 'a> {
    e: &'e mut Emit<'a>,
    /// 64-bit unsigned integers and booleans shaped like the operands.
    it: Word,
    bt: Word,
}

impl Fma<'_, '_> {
    fn k(&mut self, v: u64) -> Word {
        self.e.konst(self.it, v)
    }

    fn op(&mut self, op: Op, args: &[Word]) -> Word {
        let t = match op {
            Op::IEqual
            | Op::INotEqual
            | Op::ULessThan
            | Op::UGreaterThan
            | Op::ULessThanEqual
            | Op::UGreaterThanEqual
            | Op::SLessThan
            | Op::SGreaterThanEqual
            | Op::LogicalAnd
            | Op::LogicalOr
            | Op::LogicalNot => self.bt,
            _ => self.it,
        };
        self.e.op(op, t, args)
    }

    fn pick(&mut self, cond: Word, yes: Word, no: Word) -> Word {
        self.e.select(self.it, cond, yes, no)
    }

    fn min_u(&mut self, x: Word, limit: u64) -> Word {
        let l = self.k(limit);
        let over = self.op(Op::UGreaterThan, &[x, l]);
        self.pick(over, l, x)
    }

    /// Sign bit, mantissa with its leading one at bit 52, and biased
    /// exponent (below 1 for denormals, as a signed 64-bit value).
    fn parts(&mut self, bits: Word) -> (Word, Word, Word) {
        let sign_mask = self.k(1 << 63);
        let sign = self.op(Op::BitwiseAnd, &[bits, sign_mask]);
        let (k52, frac_mask, exp_mask) = (self.k(52), self.k((1 << 52) - 1), self.k(0x7FF));
        let field = self.op(Op::ShiftRightLogical, &[bits, k52]);
        let ex = self.op(Op::BitwiseAnd, &[field, exp_mask]);
        let frac = self.op(Op::BitwiseAnd, &[bits, frac_mask]);
        let zero = self.k(0);
        let denormal = self.op(Op::IEqual, &[ex, zero]);
        let lz = self.e.clz(frac, self.it);
        let k11 = self.k(11);
        let shift = self.op(Op::ISub, &[lz, k11]);
        let shift = self.min_u(shift, 63);
        let m_denormal = self.op(Op::ShiftLeftLogical, &[frac, shift]);
        let one = self.k(1);
        let e_denormal = self.op(Op::ISub, &[one, shift]);
        let implicit = self.k(1 << 52);
        let m_normal = self.op(Op::BitwiseOr, &[frac, implicit]);
        let m = self.pick(denormal, m_denormal, m_normal);
        let e = self.pick(denormal, e_denormal, ex);
        (sign, m, e)
    }

    /// `x >> s` for s from 0 up (128 and more give 0), and whether bits
    /// fell off.
    fn shift_right(&mut self, (h, l): Wide, s: Word) -> (Wide, Word) {
        let zero = self.k(0);
        let (k64, k128) = (self.k(64), self.k(128));
        // 1 to 63.
        let s1 = self.min_u(s, 63);
        let inv = self.op(Op::ISub, &[k64, s1]);
        let inv = self.min_u(inv, 63);
        let l_part = self.op(Op::ShiftRightLogical, &[l, s1]);
        let h_in = self.op(Op::ShiftLeftLogical, &[h, inv]);
        let a_lo = self.op(Op::BitwiseOr, &[l_part, h_in]);
        let a_hi = self.op(Op::ShiftRightLogical, &[h, s1]);
        let a_gone = self.op(Op::ShiftLeftLogical, &[l, inv]);
        let a_lost = self.op(Op::INotEqual, &[a_gone, zero]);
        // 64 to 127.
        let over = self.op(Op::UGreaterThan, &[s, k64]);
        let t = self.op(Op::ISub, &[s, k64]);
        let t = self.pick(over, t, zero);
        let t = self.min_u(t, 63);
        let b_lo = self.op(Op::ShiftRightLogical, &[h, t]);
        let t_inv = self.op(Op::ISub, &[k64, t]);
        let t_inv = self.min_u(t_inv, 63);
        let h_gone = self.op(Op::ShiftLeftLogical, &[h, t_inv]);
        let t_positive = self.op(Op::INotEqual, &[t, zero]);
        let h_lost = self.op(Op::INotEqual, &[h_gone, zero]);
        let h_lost = self.op(Op::LogicalAnd, &[t_positive, h_lost]);
        let l_lost = self.op(Op::INotEqual, &[l, zero]);
        let b_lost = self.op(Op::LogicalOr, &[l_lost, h_lost]);
        // 128 and more.
        let any = self.op(Op::BitwiseOr, &[h, l]);
        let c_lost = self.op(Op::INotEqual, &[any, zero]);
        let (is_zero, small, medium) = (
            self.op(Op::IEqual, &[s, zero]),
            self.op(Op::ULessThan, &[s, k64]),
            self.op(Op::ULessThan, &[s, k128]),
        );
        let lo = self.pick(medium, b_lo, zero);
        let lo = self.pick(small, a_lo, lo);
        let lo = self.pick(is_zero, l, lo);
        let hi = self.pick(small, a_hi, zero);
        let hi = self.pick(is_zero, h, hi);
        let bt = self.bt;
        let lost = self.e.select(bt, medium, b_lost, c_lost);
        let lost = self.e.select(bt, small, a_lost, lost);
        let f = self.e.op(Op::LogicalNot, bt, &[is_zero]);
        let lost = self.op(Op::LogicalAnd, &[f, lost]);
        ((hi, lo), lost)
    }

    fn clz128(&mut self, (h, l): Wide) -> Word {
        let zero = self.k(0);
        let high_zero = self.op(Op::IEqual, &[h, zero]);
        let ch = self.e.clz(h, self.it);
        let cl = self.e.clz(l, self.it);
        let k64 = self.k(64);
        let low = self.op(Op::IAdd, &[cl, k64]);
        self.pick(high_zero, low, ch)
    }
}

/// `fma(a, b, c)` of doubles (scalars or vectors of type `ty`), rounded
/// once.
pub(crate) fn fma(e: &mut Emit, a: Word, b: Word, c: Word, ty: Word) -> Word {
    let it = e.int_like(ty, 64);
    let bt = e.bool_like(ty);
    let mut f = Fma { e, it, bt };
    let ba = f.e.op(Op::Bitcast, it, &[a]);
    let bb = f.e.op(Op::Bitcast, it, &[b]);
    let bc = f.e.op(Op::Bitcast, it, &[c]);
    // Special operands: the plain forms are exact for them.
    let product = f.e.op(Op::FMul, ty, &[a, b]);
    f.e.ctx.decorate(product, Decoration::NoContraction, vec![]);
    let plain = f.e.op(Op::FAdd, ty, &[product, c]);
    f.e.ctx.decorate(plain, Decoration::NoContraction, vec![]);
    let (mag_mask, inf) = (f.k((1 << 63) - 1), f.k(0x7FF0 << 48));
    let zero = f.k(0);
    let mut specials = Vec::new();
    let (mut c_zero, mut c_special) = (zero, zero);
    for (n, x) in [ba, bb, bc].into_iter().enumerate() {
        let m = f.op(Op::BitwiseAnd, &[x, mag_mask]);
        let non_finite = f.op(Op::UGreaterThanEqual, &[m, inf]);
        let z = f.op(Op::IEqual, &[m, zero]);
        if n < 2 {
            specials.push(non_finite);
            specials.push(z);
        } else {
            c_zero = z;
            c_special = non_finite;
        }
    }
    // An infinite or NaN addend with a finite product is the result (the
    // plain product could overflow to an infinity of the other sign).
    let ab_special = specials
        .iter()
        .step_by(2)
        .copied()
        .reduce(|x, y| f.op(Op::LogicalOr, &[x, y]))
        .expect("operands");
    let ab_finite = f.op(Op::LogicalNot, &[ab_special]);
    let take_c = f.op(Op::LogicalAnd, &[ab_finite, c_special]);
    specials.push(c_special);
    let special = specials
        .into_iter()
        .reduce(|x, y| f.op(Op::LogicalOr, &[x, y]))
        .expect("operands");

    let (sa, ma, ea) = f.parts(ba);
    let (sb, mb, eb) = f.parts(bb);
    let (sc, mc, ec) = f.parts(bc);
    // The product, its top bit moved to bit 105.
    let ph = f.e.mul_hi64(ma, mb, it, false);
    let pl = f.op(Op::IMul, &[ma, mb]);
    let (k1, k63) = (f.k(1), f.k(63));
    // Bit 105 of the product is bit 41 of its high half.
    let bit105 = f.k(1 << 41);
    let low_top = f.op(Op::ULessThan, &[ph, bit105]);
    let ph2 = f.op(Op::ShiftLeftLogical, &[ph, k1]);
    let carry = f.op(Op::ShiftRightLogical, &[pl, k63]);
    let ph2 = f.op(Op::BitwiseOr, &[ph2, carry]);
    let pl2 = f.op(Op::ShiftLeftLogical, &[pl, k1]);
    let ph = f.pick(low_top, ph2, ph);
    let pl = f.pick(low_top, pl2, pl);
    // Then to bit 125.
    let (k20, k44, k9) = (f.k(20), f.k(44), f.k(9));
    let ph = f.op(Op::ShiftLeftLogical, &[ph, k20]);
    let spill = f.op(Op::ShiftRightLogical, &[pl, k44]);
    let ph = f.op(Op::BitwiseOr, &[ph, spill]);
    let pl = f.op(Op::ShiftLeftLogical, &[pl, k20]);
    // Exponents of the pairs' bit 0 (signed): product 2^(ea+eb-2170),
    // addend (mantissa << 73) 2^(ec-1148).
    let k2170 = f.k(2170);
    let ep = f.op(Op::IAdd, &[ea, eb]);
    let ep = f.op(Op::ISub, &[ep, k2170]);
    let one_less = f.op(Op::ISub, &[ep, k1]);
    let ep = f.pick(low_top, one_less, ep);
    let k1148 = f.k(1148);
    let ecw = f.op(Op::ISub, &[ec, k1148]);
    let ch = f.op(Op::ShiftLeftLogical, &[mc, k9]);
    let cl = zero;
    let sp = f.op(Op::BitwiseXor, &[sa, sb]);
    // The one with the larger exponent leads; the other is shifted.
    let product_leads = f.op(Op::SGreaterThanEqual, &[ep, ecw]);
    let (bh, bl) = (f.pick(product_leads, ph, ch), f.pick(product_leads, pl, cl));
    let (xh, xl) = (f.pick(product_leads, ch, ph), f.pick(product_leads, cl, pl));
    let e_big = f.pick(product_leads, ep, ecw);
    let e_small = f.pick(product_leads, ecw, ep);
    let s_big = f.pick(product_leads, sp, sc);
    let s_small = f.pick(product_leads, sc, sp);
    let distance = f.op(Op::ISub, &[e_big, e_small]);
    let ((xh, xl), lost) = f.shift_right((xh, xl), distance);
    let sticky = f.pick(lost, k1, zero);
    let xl = f.op(Op::BitwiseOr, &[xl, sticky]);
    // Add, or subtract the smaller magnitude from the larger.
    let same = f.op(Op::IEqual, &[s_big, s_small]);
    let sum_l = f.op(Op::IAdd, &[bl, xl]);
    let sum_c = f.op(Op::ULessThan, &[sum_l, bl]);
    let sum_c = f.pick(sum_c, k1, zero);
    let sum_h = f.op(Op::IAdd, &[bh, xh]);
    let sum_h = f.op(Op::IAdd, &[sum_h, sum_c]);
    let h_less = f.op(Op::ULessThan, &[bh, xh]);
    let h_equal = f.op(Op::IEqual, &[bh, xh]);
    let l_less = f.op(Op::ULessThan, &[bl, xl]);
    let equal_less = f.op(Op::LogicalAnd, &[h_equal, l_less]);
    let swap = f.op(Op::LogicalOr, &[h_less, equal_less]);
    let (uh, ul) = (f.pick(swap, xh, bh), f.pick(swap, xl, bl));
    let (vh, vl) = (f.pick(swap, bh, xh), f.pick(swap, bl, xl));
    let dif_l = f.op(Op::ISub, &[ul, vl]);
    let borrow = f.op(Op::ULessThan, &[ul, vl]);
    let borrow = f.pick(borrow, k1, zero);
    let dif_h = f.op(Op::ISub, &[uh, vh]);
    let dif_h = f.op(Op::ISub, &[dif_h, borrow]);
    let dif_sign = f.pick(swap, s_small, s_big);
    let rh = f.pick(same, sum_h, dif_h);
    let rl = f.pick(same, sum_l, dif_l);
    let sign = f.pick(same, s_big, dif_sign);
    let any = f.op(Op::BitwiseOr, &[rh, rl]);
    let exact_zero = f.op(Op::IEqual, &[any, zero]);
    // The result's exponent and the bit of the pair its last place is.
    let lz = f.clz128((rh, rl));
    let k127 = f.k(127);
    let top = f.op(Op::ISub, &[k127, lz]);
    let k1023 = f.k(1023);
    let biased = f.op(Op::IAdd, &[top, e_big]);
    let biased = f.op(Op::IAdd, &[biased, k1023]);
    let below = f.op(Op::SLessThan, &[biased, k1]);
    let e_eff = f.pick(below, k1, biased);
    let k1075 = f.k(1075);
    let lsb = f.op(Op::ISub, &[e_eff, k1075]);
    let lsb = f.op(Op::ISub, &[lsb, e_big]);
    // A last place at bit 0 or below: the pair (then under 2^53) moved up.
    let up_shift = f.op(Op::ISub, &[zero, lsb]);
    let up_shift = f.min_u(up_shift, 63);
    let raised = f.op(Op::ShiftLeftLogical, &[rl, up_shift]);
    // Above: shift by lsb - 1, keep the guard bit and what fell off.
    let lsb_positive = f.op(Op::SGreaterThanEqual, &[lsb, k1]);
    let by = f.op(Op::ISub, &[lsb, k1]);
    let by = f.pick(lsb_positive, by, zero);
    let ((gh, gl), fell) = f.shift_right((rh, rl), by);
    let guard = f.op(Op::BitwiseAnd, &[gl, k1]);
    let guard = f.op(Op::INotEqual, &[guard, zero]);
    let q_low = f.op(Op::ShiftRightLogical, &[gl, k1]);
    let q_high = f.op(Op::ShiftLeftLogical, &[gh, k63]);
    let q = f.op(Op::BitwiseOr, &[q_low, q_high]);
    let odd = f.op(Op::BitwiseAnd, &[q, k1]);
    let odd = f.op(Op::INotEqual, &[odd, zero]);
    let tie_break = f.op(Op::LogicalOr, &[fell, odd]);
    let round_up = f.op(Op::LogicalAnd, &[guard, tie_break]);
    let round_up = f.op(Op::LogicalAnd, &[round_up, lsb_positive]);
    let q = f.pick(lsb_positive, q, raised);
    let inc = f.pick(round_up, k1, zero);
    let q = f.op(Op::IAdd, &[q, inc]);
    // (e - 1) << 52 plus the mantissa with its leading one: a carry out of
    // the mantissa, or out of the denormals, moves the exponent.
    let e_field = f.op(Op::ISub, &[e_eff, k1]);
    let k52 = f.k(52);
    let e_field = f.op(Op::ShiftLeftLogical, &[e_field, k52]);
    let bits = f.op(Op::IAdd, &[e_field, q]);
    let k2047 = f.k(2047);
    let overflow = f.op(Op::SGreaterThanEqual, &[biased, k2047]);
    let bits = f.pick(overflow, inf, bits);
    let bits = f.op(Op::BitwiseOr, &[bits, sign]);
    let bits = f.pick(exact_zero, zero, bits);
    let value = f.e.op(Op::Bitcast, ty, &[bits]);
    // c = 0 (a, b finite and not zero): the rounded product, whose sign a
    // zero sum would lose.
    let value = f.e.select(ty, c_zero, product, value);
    let value = f.e.select(ty, special, plain, value);
    f.e.select(ty, take_c, c, value)
}

/// Whether `i` is an `OpenCL.std` (import `ocl`) fma of doubles, scalar or
/// vector.
fn double_fma(ctx: &Ctx, i: &Instruction, ocl: Word) -> bool {
    i.class.opcode == Op::ExtInst
        && id_at(i, 0) == Some(ocl)
        && i.operands.get(1) == Some(&Operand::LiteralExtInstInteger(C::fma as u32))
        && i.result_type
            .is_some_and(|t| emit::width(ctx, t) == Some(64))
}

/// The function `double f(double a, double b, double c)` computing
/// [`fma`], and its id.
fn function(ctx: &mut Ctx, double: Word, glsl: &mut Option<Word>) -> (Function, Word) {
    let (mut b, p) = Builder::new(ctx, double, &[double; 3]);
    let mut code = Vec::new();
    let mut e = Emit {
        ctx,
        out: &mut code,
        glsl,
    };
    let v = fma(&mut e, p[0], p[1], p[2], double);
    b.extend(code);
    let id = b.id;
    (b.finish(Some(v)), id)
}

/// Replaces the module's `OpenCL.std` fmas of doubles (import `ocl`) by
/// calls of one function that computes [`fma`] on scalars (a vector's
/// components one call each), added after the kernel. The inline pass
/// has run: the call stays, and the drivers that need this (lavapipe)
/// inline it themselves, from a module a small fraction of the size.
pub(crate) fn outline(ctx: &mut Ctx, ocl: Word, glsl: &mut Option<Word>) {
    let mut functions = std::mem::take(&mut ctx.module.functions);
    // The function, its id and the double type, made at the first fma.
    let mut helper: Option<(Function, Word, Word)> = None;
    for b in functions.iter_mut().flat_map(|f| &mut f.blocks) {
        if !b.instructions.iter().any(|i| double_fma(ctx, i, ocl)) {
            continue;
        }
        let mut out = Vec::with_capacity(b.instructions.len());
        for i in std::mem::take(&mut b.instructions) {
            let (true, Some(ty), Some(rid)) =
                (double_fma(ctx, &i, ocl), i.result_type, i.result_id)
            else {
                out.push(i);
                continue;
            };
            let args: Vec<Word> = (2..5).filter_map(|n| id_at(&i, n)).collect();
            let (f, double) = match &helper {
                Some((_, f, double)) => (*f, *double),
                None => {
                    let double = ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(64)]);
                    let (function, f) = function(ctx, double, glsl);
                    helper = Some((function, f, double));
                    (f, double)
                }
            };
            let call =
                |ctx: &mut Ctx, out: &mut Vec<Instruction>, rid: Option<Word>, args: &[Word]| {
                    let r = rid.unwrap_or_else(|| ctx.fresh());
                    let mut ops = vec![Operand::IdRef(f)];
                    ops.extend(args.iter().map(|&a| Operand::IdRef(a)));
                    out.push(Instruction::new(
                        Op::FunctionCall,
                        Some(double),
                        Some(r),
                        ops,
                    ));
                    r
                };
            match emit::shape(ctx, ty).and_then(|s| s.1) {
                None => {
                    call(ctx, &mut out, Some(rid), &args);
                }
                Some(lanes) => {
                    let mut parts = Vec::with_capacity(lanes as usize);
                    for k in 0..lanes {
                        let lane: Vec<Word> = args
                            .iter()
                            .map(|&a| {
                                let x = ctx.fresh();
                                out.push(Instruction::new(
                                    Op::CompositeExtract,
                                    Some(double),
                                    Some(x),
                                    vec![Operand::IdRef(a), Operand::LiteralBit32(k)],
                                ));
                                x
                            })
                            .collect();
                        parts.push(call(ctx, &mut out, None, &lane));
                    }
                    out.push(Instruction::new(
                        Op::CompositeConstruct,
                        Some(ty),
                        Some(rid),
                        parts.into_iter().map(Operand::IdRef).collect(),
                    ));
                }
            }
        }
        b.instructions = out;
    }
    functions.extend(helper.map(|(f, _, _)| f));
    ctx.module.functions = functions;
}
