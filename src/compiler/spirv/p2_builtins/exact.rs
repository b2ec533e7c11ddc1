//! The built-ins that are exact by definition. The
//! OpenCL C integer built-ins; `copysign`, `fdim`, `fmax`-like `maxmag`
//! and `minmag`, `nan`, `nextafter` and `round` on floats; `select` and
//! `bitselect`, `OpBitCount` of 8/16/64-bit values, and the relational
//! tests that SPIR-V only offers to kernels (`isfinite`, `isnormal`, `signbit`, `isordered`, ...). All are
//! exact, so each becomes a short sequence of core instructions that
//! works on scalars and on vectors of any width (8/16-component vectors
//! are split afterwards like any other operation).
//!
//! Vulkan restricts `OpBitCount` and `GLSL.std.450` `FindUMsb`/`FindILsb`
//! to 32-bit values, so other widths are widened or split in halves; the
//! high half of 64-bit products is computed from 32-bit halves rather than
//! with `OpUMulExtended`, which drivers need not offer for 64-bit values.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{GlslStd450Op as G, Op, OpenclStd100Op as C, Word};

use crate::compiler::spirv::common::emit::{Emit, shape, shaped_like, width};

impl Emit<'_> {
    /// Whether float `x` of type `ty` is a denormal, read on the bits:
    /// NVIDIA's float comparisons may take denormals for zeros.
    pub(crate) fn is_denormal(&mut self, x: Word, ty: Word) -> Word {
        let (sign, it) = self.sign_bit(ty);
        let bt = self.bool_like(ty);
        let w = width(self.ctx, ty).unwrap_or(32);
        let (bits, _) = self.as_int(x, ty);
        let mask = self.op(Op::Not, it, &[sign]);
        let magnitude = self.op(Op::BitwiseAnd, it, &[bits, mask]);
        let smallest = match w {
            64 => f64::MIN_POSITIVE.to_bits(),
            _ => u64::from(f32::MIN_POSITIVE.to_bits()),
        };
        let (smallest, zero) = (self.konst(it, smallest), self.konst(it, 0));
        let below = self.op(Op::ULessThan, bt, &[magnitude, smallest]);
        let nonzero = self.op(Op::INotEqual, bt, &[magnitude, zero]);
        self.op(Op::LogicalAnd, bt, &[below, nonzero])
    }

    /// `x` converted to an integer of `bits` (same shape), sign- or
    /// zero-extended, or truncated.
    fn resize(&mut self, x: Word, ty: Word, bits: u32, signed: bool) -> Word {
        if width(self.ctx, ty) == Some(bits) {
            return x;
        }
        let to = self.int_like(ty, bits);
        let wider = width(self.ctx, ty).is_some_and(|w| w < bits);
        let op = if signed && wider {
            Op::SConvert
        } else {
            Op::UConvert
        };
        self.op(op, to, &[x])
    }

    /// Leading zeros of a 32-bit value (32 for zero).
    fn clz32(&mut self, x: Word, ty: Word) -> Word {
        let msb = self.glsl(G::FindUMsb, ty, &[x]);
        let k31 = self.konst(ty, 31);
        // FindUMsb gives -1 for zero, and 31 - (-1) is 32.
        self.op(Op::ISub, ty, &[k31, msb])
    }

    /// Trailing zeros of a 32-bit value (32 for zero).
    fn ctz32(&mut self, x: Word, ty: Word) -> Word {
        let lsb = self.glsl(G::FindILsb, ty, &[x]);
        let (zero, k32) = (self.konst(ty, 0), self.konst(ty, 32));
        let bt = self.bool_like(ty);
        let is_zero = self.op(Op::IEqual, bt, &[x, zero]);
        self.select(ty, is_zero, k32, lsb)
    }

    /// The two 32-bit halves of a 64-bit value: (low, high).
    fn halves(&mut self, x: Word, ty: Word) -> (Word, Word, Word) {
        let t32 = self.int_like(ty, 32);
        let k32 = self.konst(ty, 32);
        let lo = self.op(Op::UConvert, t32, &[x]);
        let shifted = self.op(Op::ShiftRightLogical, ty, &[x, k32]);
        let hi = self.op(Op::UConvert, t32, &[shifted]);
        (lo, hi, t32)
    }

    pub(crate) fn clz(&mut self, x: Word, ty: Word) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        match w {
            32 => self.clz32(x, ty),
            64 => {
                let (lo, hi, t32) = self.halves(x, ty);
                let (ch, cl) = (self.clz32(hi, t32), self.clz32(lo, t32));
                let (zero, k32) = (self.konst(t32, 0), self.konst(t32, 32));
                let bt = self.bool_like(t32);
                let hi_zero = self.op(Op::IEqual, bt, &[hi, zero]);
                let low_part = self.op(Op::IAdd, t32, &[k32, cl]);
                let r = self.select(t32, hi_zero, low_part, ch);
                self.op(Op::UConvert, ty, &[r])
            }
            _ => {
                let wide = self.resize(x, ty, 32, false);
                let t32 = self.int_like(ty, 32);
                let c = self.clz32(wide, t32);
                let extra = self.konst(t32, u64::from(32 - w));
                let r = self.op(Op::ISub, t32, &[c, extra]);
                self.op(Op::UConvert, ty, &[r])
            }
        }
    }

    fn ctz(&mut self, x: Word, ty: Word) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        match w {
            32 => self.ctz32(x, ty),
            64 => {
                let (lo, hi, t32) = self.halves(x, ty);
                let (cl, ch) = (self.ctz32(lo, t32), self.ctz32(hi, t32));
                let (zero, k32) = (self.konst(t32, 0), self.konst(t32, 32));
                let bt = self.bool_like(t32);
                let lo_zero = self.op(Op::IEqual, bt, &[lo, zero]);
                let high_part = self.op(Op::IAdd, t32, &[k32, ch]);
                let r = self.select(t32, lo_zero, high_part, cl);
                self.op(Op::UConvert, ty, &[r])
            }
            _ => {
                // A bit just above the value makes zero count as `w`.
                let wide = self.resize(x, ty, 32, false);
                let t32 = self.int_like(ty, 32);
                let sentinel = self.konst(t32, 1u64 << w);
                let marked = self.op(Op::BitwiseOr, t32, &[wide, sentinel]);
                let r = self.glsl(G::FindILsb, t32, &[marked]);
                self.op(Op::UConvert, ty, &[r])
            }
        }
    }

    fn popcount(&mut self, x: Word, ty: Word) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        match w {
            32 => self.op(Op::BitCount, ty, &[x]),
            64 => {
                let (lo, hi, t32) = self.halves(x, ty);
                let (a, b) = (
                    self.op(Op::BitCount, t32, &[lo]),
                    self.op(Op::BitCount, t32, &[hi]),
                );
                let sum = self.op(Op::IAdd, t32, &[a, b]);
                self.op(Op::UConvert, ty, &[sum])
            }
            _ => {
                let wide = self.resize(x, ty, 32, false);
                let t32 = self.int_like(ty, 32);
                let n = self.op(Op::BitCount, t32, &[wide]);
                self.op(Op::UConvert, ty, &[n])
            }
        }
    }

    /// Scalar integer `n` (a bit offset or count) as the components of
    /// integer type `ty`: resized to their width, repeated over vectors.
    fn bit_amount(&mut self, n: Word, n_ty: Word, ty: Word) -> Word {
        let (_, lanes) = shape(self.ctx, ty).expect("a value type");
        let w = width(self.ctx, ty).unwrap_or(32);
        let scalar = self.resize(n, n_ty, w, false);
        match lanes {
            Some(lanes) => self.op(Op::CompositeConstruct, ty, &vec![scalar; lanes as usize]),
            None => scalar,
        }
    }

    /// The field's mask, offset and shape: the low `count` bits set (none
    /// for a count of zero); `offset` kept below the width so that no
    /// shift is by the whole width (the specification allows `offset +
    /// count` up to the width, where an offset of the width comes with a
    /// count of zero); the width less `count` (zero for a count of zero),
    /// the shift that leaves `count` bits; and whether `count` is zero.
    fn bit_field(&mut self, offset: Word, count: Word, ty: Word) -> (Word, Word, Word, Word) {
        let w = width(self.ctx, ty).unwrap_or(32);
        let bt = self.bool_like(ty);
        let (zero, kw) = (self.konst(ty, 0), self.konst(ty, u64::from(w)));
        let ones = self.konst(ty, u64::MAX);
        let empty = self.op(Op::IEqual, bt, &[count, zero]);
        let rest = self.op(Op::ISub, ty, &[kw, count]);
        let rest = self.select(ty, empty, zero, rest);
        let low = self.op(Op::ShiftRightLogical, ty, &[ones, rest]);
        let low = self.select(ty, empty, zero, low);
        let past = self.op(Op::UGreaterThanEqual, bt, &[offset, kw]);
        let offset = self.select(ty, past, zero, offset);
        (low, offset, rest, empty)
    }

    /// `OpBitFieldInsert`, `OpBitFieldSExtract` and `OpBitFieldUExtract`
    /// of 8, 16 and 64-bit integers, which Vulkan does not take, with
    /// shifts and masks (`base`, `insert` of type `ty`; `offset`, `count`
    /// scalars of `n_ty`).
    fn bit_field_op(
        &mut self,
        op: Op,
        ty: Word,
        base: Word,
        insert: Option<Word>,
        (offset, count): (Word, Word),
        n_ty: (Word, Word),
    ) -> Word {
        let offset = self.bit_amount(offset, n_ty.0, ty);
        let count = self.bit_amount(count, n_ty.1, ty);
        let (low, offset, rest, empty) = self.bit_field(offset, count, ty);
        match (op, insert) {
            (Op::BitFieldInsert, Some(insert)) => {
                let mask = self.op(Op::ShiftLeftLogical, ty, &[low, offset]);
                let keep = self.op(Op::Not, ty, &[mask]);
                let kept = self.op(Op::BitwiseAnd, ty, &[base, keep]);
                let moved = self.op(Op::ShiftLeftLogical, ty, &[insert, offset]);
                let moved = self.op(Op::BitwiseAnd, ty, &[moved, mask]);
                self.op(Op::BitwiseOr, ty, &[kept, moved])
            }
            (Op::BitFieldSExtract, _) => {
                // The field's top bit moved to the top, then shifted back
                // down arithmetically.
                let w = width(self.ctx, ty).unwrap_or(32);
                let (zero, kw) = (self.konst(ty, 0), self.konst(ty, u64::from(w)));
                let end = self.op(Op::IAdd, ty, &[offset, count]);
                let up = self.op(Op::ISub, ty, &[kw, end]);
                let up = self.select(ty, empty, zero, up);
                let top = self.op(Op::ShiftLeftLogical, ty, &[base, up]);
                let field = self.op(Op::ShiftRightArithmetic, ty, &[top, rest]);
                self.select(ty, empty, zero, field)
            }
            _ => {
                let down = self.op(Op::ShiftRightLogical, ty, &[base, offset]);
                self.op(Op::BitwiseAnd, ty, &[down, low])
            }
        }
    }

    /// `OpBitReverse` of 8, 16 and 64-bit integers: reversed as 32-bit
    /// values (64-bit ones in halves, which trade places).
    fn bit_reverse(&mut self, x: Word, ty: Word) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        if w == 64 {
            let (lo, hi, t32) = self.halves(x, ty);
            let (rlo, rhi) = (
                self.op(Op::BitReverse, t32, &[lo]),
                self.op(Op::BitReverse, t32, &[hi]),
            );
            let (top, bottom) = (
                self.op(Op::UConvert, ty, &[rlo]),
                self.op(Op::UConvert, ty, &[rhi]),
            );
            let k32 = self.konst(ty, 32);
            let top = self.op(Op::ShiftLeftLogical, ty, &[top, k32]);
            return self.op(Op::BitwiseOr, ty, &[top, bottom]);
        }
        let wide = self.resize(x, ty, 32, false);
        let t32 = self.int_like(ty, 32);
        let r = self.op(Op::BitReverse, t32, &[wide]);
        let extra = self.konst(t32, u64::from(32 - w));
        let r = self.op(Op::ShiftRightLogical, t32, &[r, extra]);
        self.op(Op::UConvert, ty, &[r])
    }

    /// The integer dot products of SPV_KHR_integer_dot_product
    /// (cl_khr_integer_dot_product): the four 8-bit lanes of `a` and `b`
    /// (vectors, or packed in 32-bit integers) widened by their
    /// signedness, multiplied and added, then for the accumulating forms
    /// added to `acc` with saturation to the result type `rty`.
    fn dot_product(
        &mut self,
        op: Op,
        rty: Word,
        (a, a_ty): (Word, Word),
        (b, b_ty): (Word, Word),
        acc: Option<Word>,
    ) -> Word {
        let (a_signed, b_signed) = match op {
            Op::SDot | Op::SDotAccSat => (true, true),
            Op::SUDot | Op::SUDotAccSat => (true, false),
            _ => (false, false),
        };
        let t32 = self.ctx.uint(32);
        let t64 = self.ctx.uint(64);
        let lanes = |e: &mut Self, v: Word, ty: Word, signed: bool| -> Vec<Word> {
            let packed = shape(e.ctx, ty).is_some_and(|(_, n)| n.is_none());
            (0..4u32)
                .map(|k| {
                    if packed {
                        // Byte k moved to the top, then back down with its sign.
                        let v = e.resize(v, ty, 32, false);
                        let up = e.konst(t32, u64::from(24 - 8 * k));
                        let top = e.op(Op::ShiftLeftLogical, t32, &[v, up]);
                        let k24 = e.konst(t32, 24);
                        let down = if signed {
                            Op::ShiftRightArithmetic
                        } else {
                            Op::ShiftRightLogical
                        };
                        e.op(down, t32, &[top, k24])
                    } else {
                        let (c, _) = shape(e.ctx, ty).expect("a vector");
                        let lane = super::vectors::extract(e.ctx, e.out, c, v, k);
                        e.resize(lane, c, 32, signed)
                    }
                })
                .collect()
        };
        let xs = lanes(self, a, a_ty, a_signed);
        let ys = lanes(self, b, b_ty, b_signed);
        // At most 4 * 2^16 in magnitude: no 32-bit sum overflows.
        let mut sum = None;
        for (x, y) in xs.into_iter().zip(ys) {
            let p = self.op(Op::IMul, t32, &[x, y]);
            sum = Some(match sum {
                Some(s) => self.op(Op::IAdd, t32, &[s, p]),
                None => p,
            });
        }
        let sum = sum.expect("four lanes");
        let w = width(self.ctx, rty).unwrap_or(32);
        let Some(acc) = acc else {
            return self.resize(sum, t32, w, a_signed || b_signed);
        };
        // Saturating: the sum and the accumulator added in 64 bits (the
        // result type is at most 32 bits wide), clamped to the result's range.
        let signed = a_signed || b_signed;
        let wide_sum = self.resize(sum, t32, 64, signed);
        let wide_acc = self.resize(acc, rty, 64, signed);
        let total = self.op(Op::IAdd, t64, &[wide_sum, wide_acc]);
        let (min, max) = self.min_max(rty, signed);
        let bt = self.bool_like(t64);
        let clamped = if signed {
            debug_assert_eq!(min, 1u64 << (w - 1));
            let kmin = self.konst(t64, (-(1i128 << (w - 1))) as u64);
            let kmax = self.konst(t64, max);
            let low = self.op(Op::SLessThan, bt, &[total, kmin]);
            let total = self.select(t64, low, kmin, total);
            let high = self.op(Op::SGreaterThan, bt, &[total, kmax]);
            self.select(t64, high, kmax, total)
        } else {
            let kmax = self.konst(t64, max);
            let high = self.op(Op::UGreaterThan, bt, &[total, kmax]);
            self.select(t64, high, kmax, total)
        };
        self.resize(clamped, t64, w, signed)
    }

    pub(crate) fn min_max(&self, ty: Word, signed: bool) -> (u64, u64) {
        let w = width(self.ctx, ty).unwrap_or(32);
        let all = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
        if signed {
            (1u64 << (w - 1), all >> 1)
        } else {
            (0, all)
        }
    }

    pub(crate) fn is_negative(&mut self, x: Word, ty: Word) -> Word {
        let zero = self.konst(ty, 0);
        let bt = self.bool_like(ty);
        self.op(Op::SLessThan, bt, &[x, zero])
    }

    /// The saturated value for a signed overflow: MIN when `toward_min`.
    fn signed_limit(&mut self, ty: Word, toward_min: Word) -> Word {
        let (min, max) = self.min_max(ty, true);
        let (kmin, kmax) = (self.konst(ty, min), self.konst(ty, max));
        self.select(ty, toward_min, kmin, kmax)
    }

    fn add_sat(&mut self, x: Word, y: Word, ty: Word, signed: bool) -> Word {
        if signed {
            let s = self.op(Op::IAdd, ty, &[x, y]);
            // Overflow when the sum's sign differs from both operands'.
            let (a, b) = (
                self.op(Op::BitwiseXor, ty, &[s, x]),
                self.op(Op::BitwiseXor, ty, &[s, y]),
            );
            let both = self.op(Op::BitwiseAnd, ty, &[a, b]);
            let overflow = self.is_negative(both, ty);
            let x_neg = self.is_negative(x, ty);
            let limit = self.signed_limit(ty, x_neg);
            self.select(ty, overflow, limit, s)
        } else {
            // sum | -carry, with the carry out of the top bit computed
            // from the operands' and the sum's top bits. (NVIDIA's driver
            // miscompiles both the compare-and-select form, which it turns
            // into a 32-bit saturating add even for 64-bit values, and
            // 64-bit OpIAddCarry.)
            let sum = self.op(Op::IAdd, ty, &[x, y]);
            let both = self.op(Op::BitwiseAnd, ty, &[x, y]);
            let either = self.op(Op::BitwiseOr, ty, &[x, y]);
            let not_sum = self.op(Op::Not, ty, &[sum]);
            let lost = self.op(Op::BitwiseAnd, ty, &[either, not_sum]);
            let carries = self.op(Op::BitwiseOr, ty, &[both, lost]);
            let carry = self.top_bit(carries, ty);
            let zero = self.konst(ty, 0);
            let mask = self.op(Op::ISub, ty, &[zero, carry]);
            self.op(Op::BitwiseOr, ty, &[sum, mask])
        }
    }

    /// The top bit of each lane of `x`, as 0 or 1.
    fn top_bit(&mut self, x: Word, ty: Word) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        let shift = self.konst(ty, u64::from(w - 1));
        self.op(Op::ShiftRightLogical, ty, &[x, shift])
    }

    fn sub_sat(&mut self, x: Word, y: Word, ty: Word, signed: bool) -> Word {
        if signed {
            let d = self.op(Op::ISub, ty, &[x, y]);
            // Overflow when the operands' signs differ and the result's
            // sign differs from x's.
            let (a, b) = (
                self.op(Op::BitwiseXor, ty, &[x, y]),
                self.op(Op::BitwiseXor, ty, &[x, d]),
            );
            let both = self.op(Op::BitwiseAnd, ty, &[a, b]);
            let overflow = self.is_negative(both, ty);
            let x_neg = self.is_negative(x, ty);
            let limit = self.signed_limit(ty, x_neg);
            self.select(ty, overflow, limit, d)
        } else {
            // difference & (borrow - 1), the borrow out of the top bit
            // from the operands' and the difference's top bits (see
            // add_sat for why not a compare and select).
            let d = self.op(Op::ISub, ty, &[x, y]);
            let not_x = self.op(Op::Not, ty, &[x]);
            let below = self.op(Op::BitwiseAnd, ty, &[not_x, y]);
            let differ = self.op(Op::BitwiseXor, ty, &[x, y]);
            let same = self.op(Op::Not, ty, &[differ]);
            let through = self.op(Op::BitwiseAnd, ty, &[same, d]);
            let borrows = self.op(Op::BitwiseOr, ty, &[below, through]);
            let borrow = self.top_bit(borrows, ty);
            let one = self.konst(ty, 1);
            let mask = self.op(Op::ISub, ty, &[borrow, one]);
            self.op(Op::BitwiseAnd, ty, &[d, mask])
        }
    }

    /// (x >> 1) + (y >> 1) + ((x op y) & 1), without overflow.
    fn halving_add(&mut self, x: Word, y: Word, ty: Word, signed: bool, round: bool) -> Word {
        let one = self.konst(ty, 1);
        let shift = if signed {
            Op::ShiftRightArithmetic
        } else {
            Op::ShiftRightLogical
        };
        let (hx, hy) = (self.op(shift, ty, &[x, one]), self.op(shift, ty, &[y, one]));
        let sum = self.op(Op::IAdd, ty, &[hx, hy]);
        let both = self.op(
            if round { Op::BitwiseOr } else { Op::BitwiseAnd },
            ty,
            &[x, y],
        );
        let carry = self.op(Op::BitwiseAnd, ty, &[both, one]);
        self.op(Op::IAdd, ty, &[sum, carry])
    }

    fn abs_diff(&mut self, x: Word, y: Word, ty: Word, signed: bool) -> Word {
        let bt = self.bool_like(ty);
        let gt = self.op(
            if signed {
                Op::SGreaterThan
            } else {
                Op::UGreaterThan
            },
            bt,
            &[x, y],
        );
        let (a, b) = (
            self.op(Op::ISub, ty, &[x, y]),
            self.op(Op::ISub, ty, &[y, x]),
        );
        self.select(ty, gt, a, b)
    }

    /// The high half of the full product of two 64-bit values.
    pub(crate) fn mul_hi64(&mut self, x: Word, y: Word, ty: Word, signed: bool) -> Word {
        let (xl, xh, t32) = self.halves(x, ty);
        let (yl, yh, _) = self.halves(y, ty);
        let wide = |e: &mut Self, v: Word| e.op(Op::UConvert, ty, &[v]);
        let (xl, xh, yl, yh) = (
            wide(self, xl),
            wide(self, xh),
            wide(self, yl),
            wide(self, yh),
        );
        let _ = t32;
        let (k32, mask) = (self.konst(ty, 32), self.konst(ty, 0xFFFF_FFFF));
        let p0 = self.op(Op::IMul, ty, &[xl, yl]);
        let p1 = self.op(Op::IMul, ty, &[xl, yh]);
        let p2 = self.op(Op::IMul, ty, &[xh, yl]);
        let p3 = self.op(Op::IMul, ty, &[xh, yh]);
        let p0h = self.op(Op::ShiftRightLogical, ty, &[p0, k32]);
        let p1l = self.op(Op::BitwiseAnd, ty, &[p1, mask]);
        let p2l = self.op(Op::BitwiseAnd, ty, &[p2, mask]);
        let mid = self.op(Op::IAdd, ty, &[p0h, p1l]);
        let mid = self.op(Op::IAdd, ty, &[mid, p2l]);
        let midh = self.op(Op::ShiftRightLogical, ty, &[mid, k32]);
        let p1h = self.op(Op::ShiftRightLogical, ty, &[p1, k32]);
        let p2h = self.op(Op::ShiftRightLogical, ty, &[p2, k32]);
        let hi = self.op(Op::IAdd, ty, &[p3, p1h]);
        let hi = self.op(Op::IAdd, ty, &[hi, p2h]);
        let hi = self.op(Op::IAdd, ty, &[hi, midh]);
        if !signed {
            return hi;
        }
        // Signed: subtract y when x < 0 and x when y < 0.
        let zero = self.konst(ty, 0);
        let (xn, yn) = (self.is_negative(x, ty), self.is_negative(y, ty));
        let (fix_x, fix_y) = (self.select(ty, xn, y, zero), self.select(ty, yn, x, zero));
        let hi = self.op(Op::ISub, ty, &[hi, fix_x]);
        self.op(Op::ISub, ty, &[hi, fix_y])
    }

    fn mul_hi(&mut self, x: Word, y: Word, ty: Word, signed: bool) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        if w == 64 {
            return self.mul_hi64(x, y, ty, signed);
        }
        let wide_bits = if w == 32 { 64 } else { 32 };
        let (a, b) = (
            self.resize(x, ty, wide_bits, signed),
            self.resize(y, ty, wide_bits, signed),
        );
        let wt = self.int_like(ty, wide_bits);
        let p = self.op(Op::IMul, wt, &[a, b]);
        let kw = self.konst(wt, u64::from(w));
        let hi = self.op(Op::ShiftRightLogical, wt, &[p, kw]);
        self.op(Op::UConvert, ty, &[hi])
    }

    fn mad_sat(&mut self, a: Word, b: Word, c: Word, ty: Word, signed: bool) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        let bt = self.bool_like(ty);
        let (min, max) = self.min_max(ty, signed);
        if w == 64 {
            // 128-bit sum from the product's halves.
            let hi = self.mul_hi64(a, b, ty, signed);
            let lo = self.op(Op::IMul, ty, &[a, b]);
            let lo2 = self.op(Op::IAdd, ty, &[lo, c]);
            let carried = self.op(Op::ULessThan, bt, &[lo2, lo]);
            let (zero, one) = (self.konst(ty, 0), self.konst(ty, 1));
            let carry = self.select(ty, carried, one, zero);
            let hi2 = self.op(Op::IAdd, ty, &[hi, carry]);
            let kmax = self.konst(ty, max);
            if !signed {
                let over = self.op(Op::INotEqual, bt, &[hi2, zero]);
                return self.select(ty, over, kmax, lo2);
            }
            let k63 = self.konst(ty, 63);
            let c_sign = self.op(Op::ShiftRightArithmetic, ty, &[c, k63]);
            let hi2 = self.op(Op::IAdd, ty, &[hi2, c_sign]);
            let lo_sign = self.op(Op::ShiftRightArithmetic, ty, &[lo2, k63]);
            let fits = self.op(Op::IEqual, bt, &[hi2, lo_sign]);
            let neg = self.is_negative(hi2, ty);
            let limit = self.signed_limit(ty, neg);
            return self.select(ty, fits, lo2, limit);
        }
        // Exact in twice the width (or 32 bits for 8/16-bit values).
        let wide_bits = if w == 32 { 64 } else { 32 };
        let wt = self.int_like(ty, wide_bits);
        let (x, y, z) = (
            self.resize(a, ty, wide_bits, signed),
            self.resize(b, ty, wide_bits, signed),
            self.resize(c, ty, wide_bits, signed),
        );
        let p = self.op(Op::IMul, wt, &[x, y]);
        let s = self.op(Op::IAdd, wt, &[p, z]);
        let wbt = self.bool_like(wt);
        let sext = |v: u64| -> u64 {
            if signed && v >> (w - 1) & 1 == 1 {
                v | !((1u64 << w) - 1)
            } else {
                v
            }
        };
        let (kmin, kmax) = (self.konst(wt, sext(min)), self.konst(wt, max));
        let (lt, gt) = if signed {
            (Op::SLessThan, Op::SGreaterThan)
        } else {
            (Op::ULessThan, Op::UGreaterThan)
        };
        let below = self.op(lt, wbt, &[s, kmin]);
        let s = self.select(wt, below, kmin, s);
        let above = self.op(gt, wbt, &[s, kmax]);
        let s = self.select(wt, above, kmax, s);
        self.op(Op::UConvert, ty, &[s])
    }

    fn rotate(&mut self, v: Word, i: Word, ty: Word) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        let (mask, kw) = (
            self.konst(ty, u64::from(w - 1)),
            self.konst(ty, u64::from(w)),
        );
        let n = self.op(Op::BitwiseAnd, ty, &[i, mask]);
        let left = self.op(Op::ShiftLeftLogical, ty, &[v, n]);
        let back = self.op(Op::ISub, ty, &[kw, n]);
        let back = self.op(Op::BitwiseAnd, ty, &[back, mask]);
        let right = self.op(Op::ShiftRightLogical, ty, &[v, back]);
        self.op(Op::BitwiseOr, ty, &[left, right])
    }

    fn upsample(&mut self, hi: Word, lo: Word, ty: Word, rty: Word, signed: bool) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        let h = self.op(if signed { Op::SConvert } else { Op::UConvert }, rty, &[hi]);
        let l = self.op(Op::UConvert, rty, &[lo]);
        let kw = self.konst(rty, u64::from(w));
        let h = self.op(Op::ShiftLeftLogical, rty, &[h, kw]);
        self.op(Op::BitwiseOr, rty, &[h, l])
    }

    /// An integer view of a (possibly float) value, for bit operations.
    fn as_int(&mut self, x: Word, ty: Word) -> (Word, Word) {
        let (c, _) = shape(self.ctx, ty).expect("a value type");
        if self.ctx.global(c).map(|t| t.class.opcode) == Some(Op::TypeInt) {
            return (x, ty);
        }
        let w = width(self.ctx, ty).unwrap_or(32);
        let it = self.int_like(ty, w);
        (self.op(Op::Bitcast, it, &[x]), it)
    }

    fn bitselect(&mut self, a: Word, b: Word, c: Word, ty: Word) -> Word {
        let (a, it) = self.as_int(a, ty);
        let (b, _) = self.as_int(b, ty);
        let (c, _) = self.as_int(c, ty);
        let not_c = self.op(Op::Not, it, &[c]);
        let keep = self.op(Op::BitwiseAnd, it, &[a, not_c]);
        let take = self.op(Op::BitwiseAnd, it, &[b, c]);
        let r = self.op(Op::BitwiseOr, it, &[keep, take]);
        if it == ty {
            r
        } else {
            self.op(Op::Bitcast, ty, &[r])
        }
    }

    /// A float type's sign bit, and its integer view type.
    fn sign_bit(&mut self, ty: Word) -> (Word, Word) {
        let w = width(self.ctx, ty).unwrap_or(32);
        let it = self.int_like(ty, w);
        (self.konst(it, 1u64 << (w - 1)), it)
    }

    fn copysign(&mut self, x: Word, y: Word, ty: Word) -> Word {
        let (sign, it) = self.sign_bit(ty);
        let (bx, _) = self.as_int(x, ty);
        let (by, _) = self.as_int(y, ty);
        let magnitude_mask = self.op(Op::Not, it, &[sign]);
        let magnitude = self.op(Op::BitwiseAnd, it, &[bx, magnitude_mask]);
        let s = self.op(Op::BitwiseAnd, it, &[by, sign]);
        let r = self.op(Op::BitwiseOr, it, &[magnitude, s]);
        self.op(Op::Bitcast, ty, &[r])
    }

    /// ldexp(x, n): x times 2^n rounded once, to nearest even where it
    /// lands among the denormals (libclc's float ldexp truncates there),
    /// worked on the bits: the mantissa with its leading one in place, the
    /// exponent moved by n, and a rounded shift below the normal range.
    fn ldexp(&mut self, x: Word, n: Word, ty: Word, nty: Word) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        let m: u64 = if w == 64 { 52 } else { 23 };
        let top: u64 = (1 << (w - 1 - m as u32)) - 1;
        let (sign_mask, it) = self.sign_bit(ty);
        let bt = self.bool_like(ty);
        let k = |e: &mut Self, v: u64| e.konst(it, v);
        let (bits, _) = self.as_int(x, ty);
        let sign = self.op(Op::BitwiseAnd, it, &[bits, sign_mask]);
        let magnitude_mask = self.op(Op::Not, it, &[sign_mask]);
        let abs = self.op(Op::BitwiseAnd, it, &[bits, magnitude_mask]);
        // Zeros, infinities and NaNs are their own ldexp.
        let (zero, inf) = (k(self, 0), k(self, top << m));
        let is_zero = self.op(Op::IEqual, bt, &[abs, zero]);
        let special = self.op(Op::UGreaterThanEqual, bt, &[abs, inf]);
        let keep = self.op(Op::LogicalOr, bt, &[is_zero, special]);
        // The mantissa with its leading one at bit m, and the biased
        // exponent that goes with it (below 1 for denormals).
        let (one, implicit) = (k(self, 1), k(self, 1 << m));
        let fraction_mask = k(self, (1 << m) - 1);
        let denormal = self.op(Op::ULessThan, bt, &[abs, implicit]);
        let lz = self.clz(abs, it);
        let field = k(self, u64::from(w) - 1 - m);
        let shift = self.op(Op::ISub, it, &[lz, field]);
        let shifted = self.op(Op::ShiftLeftLogical, it, &[abs, shift]);
        let denormal_exponent = self.op(Op::ISub, it, &[one, shift]);
        let fraction = self.op(Op::BitwiseAnd, it, &[abs, fraction_mask]);
        let normal_mantissa = self.op(Op::BitwiseOr, it, &[fraction, implicit]);
        let mk = k(self, m);
        let normal_exponent = self.op(Op::ShiftRightLogical, it, &[abs, mk]);
        let mantissa = self.select(it, denormal, shifted, normal_mantissa);
        let exponent = self.select(it, denormal, denormal_exponent, normal_exponent);
        // n, kept within what can still matter, in the bits' width.
        let n = match (shape(self.ctx, ty).and_then(|s| s.1), shape(self.ctx, nty)) {
            (Some(lanes), Some((_, None))) => {
                let vt = shaped_like(self.ctx, nty, ty);
                let parts = vec![n; lanes as usize];
                self.op(Op::CompositeConstruct, vt, &parts)
            }
            _ => n,
        };
        let nt = shaped_like(self.ctx, shape(self.ctx, nty).map_or(nty, |s| s.0), ty);
        let (lo, hi) = (self.konst(nt, (-4096i64) as u64), self.konst(nt, 4096));
        let n = self.glsl(G::SClamp, nt, &[n, lo, hi]);
        let n = self.resize(n, nt, w, true);
        let e = self.op(Op::IAdd, it, &[exponent, n]);
        let emax = k(self, top);
        let overflow = self.op(Op::SGreaterThanEqual, bt, &[e, emax]);
        let normal = self.op(Op::SGreaterThanEqual, bt, &[e, one]);
        let mantissa_fraction = self.op(Op::BitwiseAnd, it, &[mantissa, fraction_mask]);
        let placed = self.op(Op::ShiftLeftLogical, it, &[e, mk]);
        let normal_bits = self.op(Op::BitwiseOr, it, &[placed, mantissa_fraction]);
        // Below the normal range: shift right by 1 - e (at most m + 2,
        // which already leaves less than half the smallest denormal) and
        // round to nearest even; a carry into the exponent field is right.
        let s = self.op(Op::ISub, it, &[one, e]);
        let most = k(self, m + 2);
        let s = self.glsl(G::UMin, it, &[s, most]);
        let q = self.op(Op::ShiftRightLogical, it, &[mantissa, s]);
        let below = self.op(Op::ShiftLeftLogical, it, &[one, s]);
        let below = self.op(Op::ISub, it, &[below, one]);
        let rest = self.op(Op::BitwiseAnd, it, &[mantissa, below]);
        let s1 = self.op(Op::ISub, it, &[s, one]);
        let half = self.op(Op::ShiftLeftLogical, it, &[one, s1]);
        let above_half = self.op(Op::UGreaterThan, bt, &[rest, half]);
        let at_half = self.op(Op::IEqual, bt, &[rest, half]);
        let odd = self.op(Op::BitwiseAnd, it, &[q, one]);
        let odd = self.op(Op::IEqual, bt, &[odd, one]);
        let tie_up = self.op(Op::LogicalAnd, bt, &[at_half, odd]);
        let up = self.op(Op::LogicalOr, bt, &[above_half, tie_up]);
        let q1 = self.op(Op::IAdd, it, &[q, one]);
        let denormal_bits = self.select(it, up, q1, q);
        let r = self.select(it, normal, normal_bits, denormal_bits);
        let r = self.select(it, overflow, inf, r);
        let r = self.op(Op::BitwiseOr, it, &[sign, r]);
        let r = self.select(it, keep, bits, r);
        self.op(Op::Bitcast, ty, &[r])
    }

    fn float_zero(&mut self, ty: Word) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        let it = self.int_like(ty, w);
        let z = self.konst(it, 0);
        self.op(Op::Bitcast, ty, &[z])
    }

    /// fdim(x, y): x - y when x > y, +0 otherwise, NaN when either is.
    fn fdim(&mut self, x: Word, y: Word, ty: Word) -> Word {
        let bt = self.bool_like(ty);
        let d = self.op(Op::FSub, ty, &[x, y]);
        let zero = self.float_zero(ty);
        let gt = self.op(Op::FOrdGreaterThan, bt, &[x, y]);
        let r = self.select(ty, gt, d, zero);
        // x - y is NaN when either operand is.
        let unordered = self.op(Op::FUnordNotEqual, bt, &[x, x]);
        let unordered_y = self.op(Op::FUnordNotEqual, bt, &[y, y]);
        let either = self.op(Op::LogicalOr, bt, &[unordered, unordered_y]);
        self.select(ty, either, d, r)
    }

    /// maxmag/minmag: the operand of greater (smaller) magnitude, else
    /// fmax (fmin) of the two.
    fn magnitude_pick(&mut self, x: Word, y: Word, ty: Word, greater: bool) -> Word {
        // Compared on the bits: NVIDIA's float comparisons and min/max
        // take denormals for zeros even where kernels keep them.
        let (sign, it) = self.sign_bit(ty);
        let bt = self.bool_like(ty);
        let (bx, _) = self.as_int(x, ty);
        let (by, _) = self.as_int(y, ty);
        let mask = self.op(Op::Not, it, &[sign]);
        let (mx, my) = (
            self.op(Op::BitwiseAnd, it, &[bx, mask]),
            self.op(Op::BitwiseAnd, it, &[by, mask]),
        );
        let (first, second) = if greater { (mx, my) } else { (my, mx) };
        let x_wins = self.op(Op::UGreaterThan, bt, &[first, second]);
        let y_wins = self.op(Op::UGreaterThan, bt, &[second, first]);
        // Equal magnitudes: fmax takes the positive one, fmin the negative.
        let x_sign = self.op(Op::BitwiseAnd, it, &[bx, sign]);
        let zero = self.konst(it, 0);
        let x_positive = self.op(Op::IEqual, bt, &[x_sign, zero]);
        let tie = if greater {
            self.select(ty, x_positive, x, y)
        } else {
            self.select(ty, x_positive, y, x)
        };
        let r = self.select(ty, y_wins, y, tie);
        let r = self.select(ty, x_wins, x, r);
        // A NaN operand gives the other operand (fmax and fmin).
        let nan_x = self.op(Op::FUnordNotEqual, bt, &[x, x]);
        let nan_y = self.op(Op::FUnordNotEqual, bt, &[y, y]);
        let r = self.select(ty, nan_x, y, r);
        self.select(ty, nan_y, x, r)
    }

    /// nan(code): a quiet NaN carrying `code` in its mantissa.
    fn nan(&mut self, code: Word, cty: Word, rty: Word) -> Word {
        let w = width(self.ctx, rty).unwrap_or(32);
        let quiet = match w {
            16 => 0x7E00u64,
            64 => 0x7FF8_0000_0000_0000,
            _ => 0x7FC0_0000,
        };
        let payload_mask = (1u64
            << (if w == 16 {
                9
            } else if w == 64 {
                51
            } else {
                22
            }))
            - 1;
        let code = self.resize(code, cty, w, false);
        let it = self.int_like(rty, w);
        let (q, m) = (self.konst(it, quiet), self.konst(it, payload_mask));
        let payload = self.op(Op::BitwiseAnd, it, &[code, m]);
        let bits = self.op(Op::BitwiseOr, it, &[q, payload]);
        self.op(Op::Bitcast, rty, &[bits])
    }

    /// nextafter(x, y): the next representable value after x toward y.
    fn nextafter(&mut self, x: Word, y: Word, ty: Word) -> Word {
        // On the bits, like maxmag: float comparisons may see denormals
        // as zeros.
        let (sign, it) = self.sign_bit(ty);
        let bt = self.bool_like(ty);
        let (bx, _) = self.as_int(x, ty);
        let (by, _) = self.as_int(y, ty);
        let one = self.konst(it, 1);
        let zero = self.konst(it, 0);
        let mask = self.op(Op::Not, it, &[sign]);
        // Sign and magnitude as one ordered signed integer.
        let ordered = |e: &mut Self, b: Word| {
            let m = e.op(Op::BitwiseAnd, it, &[b, mask]);
            let negative = e.is_negative(b, it);
            let minus = e.op(Op::SNegate, it, &[m]);
            (e.select(it, negative, minus, m), m)
        };
        let (ox, mx) = ordered(self, bx);
        let (oy, _) = ordered(self, by);
        // Moving away from zero adds one to the bits, toward zero takes
        // one away; from ±0 the step is to the smallest denormal of y's sign.
        let away = {
            let x_pos = self.op(Op::SLessThan, bt, &[ox, oy]);
            let x_neg_bits = self.is_negative(bx, it);
            self.op(Op::LogicalNotEqual, bt, &[x_pos, x_neg_bits])
        };
        let up = self.op(Op::IAdd, it, &[bx, one]);
        let down = self.op(Op::ISub, it, &[bx, one]);
        let stepped = self.select(it, away, up, down);
        let ysign = self.op(Op::BitwiseAnd, it, &[by, sign]);
        let from_zero = self.op(Op::BitwiseOr, it, &[ysign, one]);
        let x_zero = self.op(Op::IEqual, bt, &[mx, zero]);
        let r = self.select(it, x_zero, from_zero, stepped);
        let r = self.op(Op::Bitcast, ty, &[r]);
        // Equal operands (±0 included) give y; NaN operands give NaN.
        let same = self.op(Op::IEqual, bt, &[ox, oy]);
        let r = self.select(ty, same, y, r);
        let nan_x = self.op(Op::FUnordNotEqual, bt, &[x, x]);
        let r = self.select(ty, nan_x, x, r);
        let nan_y = self.op(Op::FUnordNotEqual, bt, &[y, y]);
        self.select(ty, nan_y, y, r)
    }

    /// round(x): to the nearest integer, halfway cases away from zero.
    fn round(&mut self, x: Word, ty: Word) -> Word {
        let bt = self.bool_like(ty);
        let t = self.glsl(G::Trunc, ty, &[x]);
        // x - trunc(x) is exact.
        let frac = self.op(Op::FSub, ty, &[x, t]);
        let af = self.glsl(G::FAbs, ty, &[frac]);
        let w = width(self.ctx, ty).unwrap_or(32);
        let it = self.int_like(ty, w);
        let (half_bits, one_bits) = match w {
            16 => (0x3800u64, 0x3C00u64),
            64 => (0x3FE0_0000_0000_0000, 0x3FF0_0000_0000_0000),
            _ => (0x3F00_0000, 0x3F80_0000),
        };
        let (hb, ob) = (self.konst(it, half_bits), self.konst(it, one_bits));
        let (half, one) = (
            self.op(Op::Bitcast, ty, &[hb]),
            self.op(Op::Bitcast, ty, &[ob]),
        );
        let signed_one = self.copysign(one, x, ty);
        let bumped = self.op(Op::FAdd, ty, &[t, signed_one]);
        let up = self.op(Op::FOrdGreaterThanEqual, bt, &[af, half]);
        self.select(ty, up, bumped, t)
    }

    /// select(a, b, c): b where c is non-zero (scalars) or where c's most
    /// significant bit is set (vectors), else a.
    fn select_builtin(&mut self, a: Word, b: Word, c: Word, ty: Word, cty: Word) -> Word {
        let bt = self.bool_like(cty);
        let zero = self.konst(cty, 0);
        let take = if shape(self.ctx, cty).and_then(|s| s.1).is_some() {
            self.op(Op::SLessThan, bt, &[c, zero])
        } else {
            self.op(Op::INotEqual, bt, &[c, zero])
        };
        self.select(ty, take, b, a)
    }
}

/// Lowers OpenCL.std instruction `op` when it is one of this pass's;
/// returns whether it was. `arg_types` are the operands' types.
pub fn lower(
    e: &mut Emit,
    op: C,
    result: (Word, Word),
    args: &[Word],
    arg_types: &[Word],
) -> Result<bool, String> {
    let (rty, rid) = result;
    let ty = *arg_types.first().ok_or("built-in without operands")?;
    let arg = |n: usize| -> Result<Word, String> {
        args.get(n)
            .copied()
            .ok_or_else(|| format!("{op:?} needs more operands"))
    };
    let value = match op {
        C::clz => e.clz(arg(0)?, ty),
        C::ctz => e.ctz(arg(0)?, ty),
        C::popcount => e.popcount(arg(0)?, ty),
        C::rotate => e.rotate(arg(0)?, arg(1)?, ty),
        C::s_add_sat | C::u_add_sat => e.add_sat(arg(0)?, arg(1)?, ty, op == C::s_add_sat),
        C::s_sub_sat | C::u_sub_sat => e.sub_sat(arg(0)?, arg(1)?, ty, op == C::s_sub_sat),
        C::s_hadd | C::u_hadd => e.halving_add(arg(0)?, arg(1)?, ty, op == C::s_hadd, false),
        C::s_rhadd | C::u_rhadd => e.halving_add(arg(0)?, arg(1)?, ty, op == C::s_rhadd, true),
        C::s_abs_diff | C::u_abs_diff => e.abs_diff(arg(0)?, arg(1)?, ty, op == C::s_abs_diff),
        C::s_mul_hi | C::u_mul_hi => e.mul_hi(arg(0)?, arg(1)?, ty, op == C::s_mul_hi),
        C::s_mad_hi | C::u_mad_hi => {
            let hi = e.mul_hi(arg(0)?, arg(1)?, ty, op == C::s_mad_hi);
            e.op(Op::IAdd, ty, &[hi, arg(2)?])
        }
        C::s_mad_sat | C::u_mad_sat => e.mad_sat(arg(0)?, arg(1)?, arg(2)?, ty, op == C::s_mad_sat),
        C::s_mul24 | C::u_mul24 => e.op(Op::IMul, ty, &[arg(0)?, arg(1)?]),
        C::s_mad24 | C::u_mad24 => {
            let p = e.op(Op::IMul, ty, &[arg(0)?, arg(1)?]);
            e.op(Op::IAdd, ty, &[p, arg(2)?])
        }
        C::s_upsample | C::u_upsample => e.upsample(arg(0)?, arg(1)?, ty, rty, op == C::s_upsample),
        C::bitselect => e.bitselect(arg(0)?, arg(1)?, arg(2)?, ty),
        C::copysign => e.copysign(arg(0)?, arg(1)?, ty),
        C::fdim => e.fdim(arg(0)?, arg(1)?, ty),
        C::ldexp => {
            let nty = *arg_types.get(1).ok_or("ldexp needs two operands")?;
            e.ldexp(arg(0)?, arg(1)?, ty, nty)
        }
        // 1 / x: Vulkan's division (2.5 ULP) is well within both.
        C::half_recip | C::native_recip => {
            let w = width(e.ctx, ty).unwrap_or(32);
            let one_bits = match w {
                16 => 0x3C00,
                64 => 0x3FF0_0000_0000_0000,
                _ => 0x3F80_0000,
            };
            let it = e.int_like(ty, w);
            let bits = e.konst(it, one_bits);
            let one = e.op(Op::Bitcast, ty, &[bits]);
            e.op(Op::FDiv, ty, &[one, arg(0)?])
        }
        C::maxmag => e.magnitude_pick(arg(0)?, arg(1)?, ty, true),
        C::minmag => e.magnitude_pick(arg(0)?, arg(1)?, ty, false),
        C::nan => e.nan(arg(0)?, ty, rty),
        C::nextafter => e.nextafter(arg(0)?, arg(1)?, ty),
        C::round => e.round(arg(0)?, ty),
        C::select => {
            let cty = *arg_types.get(2).ok_or("select needs three operands")?;
            e.select_builtin(arg(0)?, arg(1)?, arg(2)?, ty, cty)
        }
        _ => return Ok(false),
    };
    e.assign(rty, rid, value);
    Ok(true)
}

/// For an integer dot product instruction, its bit of
/// `DeviceCaps::native_dot`: unsigned, signed, mixed, then the same
/// accumulating with saturation (from 3 on); `None` for other opcodes.
pub fn dot_form(op: Op) -> Option<u32> {
    Some(match op {
        Op::UDot => 0,
        Op::SDot => 1,
        Op::SUDot => 2,
        Op::UDotAccSat => 3,
        Op::SDotAccSat => 4,
        Op::SUDotAccSat => 5,
        _ => return None,
    })
}

/// Lowers the relational instructions SPIR-V reserves for kernels
/// (`OpIsFinite`, `OpIsNormal`, `OpSignBitSet`, `OpLessOrGreater`,
/// `OpOrdered`, `OpUnordered`), and `OpBitCount`, `OpBitReverse` and the
/// bit-field instructions of other widths than 32 bits; returns whether
/// `i` was one.
pub fn lower_relational(
    e: &mut Emit,
    i: &Instruction,
    arg_types: &[Word],
    native_dot: u8,
) -> Result<bool, String> {
    let (Some(rty), Some(rid)) = (i.result_type, i.result_id) else {
        return Ok(false);
    };
    let ids: Vec<Word> = i
        .operands
        .iter()
        .filter_map(|o| match o {
            Operand::IdRef(x) => Some(*x),
            _ => None,
        })
        .collect();
    let x = match ids.first() {
        Some(&x) => x,
        None => return Ok(false),
    };
    let ty = match arg_types.first() {
        Some(&t) => t,
        None => return Ok(false),
    };
    let value = match i.class.opcode {
        // popcount of other widths than 32 bits arrives as OpBitCount.
        Op::BitCount if width(e.ctx, ty) != Some(32) => e.popcount(x, ty),
        // cl_khr_integer_dot_product (SPV_KHR_integer_dot_product).
        op if dot_form(op).is_some() => {
            let form = dot_form(op).expect("a dot product");
            let (Some(&b), Some(&b_ty)) = (ids.get(1), arg_types.get(1)) else {
                return Err(format!("{:?} needs two vectors", i.class.opcode));
            };
            let acc = if form >= 3 {
                Some(
                    *ids.get(2)
                        .ok_or("an accumulating dot product needs an accumulator")?,
                )
            } else {
                None
            };
            if native_dot & (1 << form) != 0 {
                // The device's own instruction, on the lanes packed in
                // 32-bit words (the form Vulkan drivers accelerate).
                let packed = |e: &mut Emit, v: Word, t: Word| {
                    if shape(e.ctx, t).is_some_and(|(_, n)| n.is_some()) {
                        let u32t = e.ctx.uint(32);
                        e.op(Op::Bitcast, u32t, &[v])
                    } else {
                        v
                    }
                };
                let (pa, pb) = (packed(e, x, ty), packed(e, b, b_ty));
                let mut operands = vec![Operand::IdRef(pa), Operand::IdRef(pb)];
                operands.extend(acc.map(Operand::IdRef));
                operands.push(Operand::PackedVectorFormat(
                    rspirv::spirv::PackedVectorFormat::PackedVectorFormat4x8Bit,
                ));
                e.out.push(Instruction::new(
                    i.class.opcode,
                    Some(rty),
                    Some(rid),
                    operands,
                ));
                return Ok(true);
            }
            e.dot_product(i.class.opcode, rty, (x, ty), (b, b_ty), acc)
        }
        // cl_khr_extended_bit_ops (SPV_KHR_bit_instructions).
        Op::BitReverse if width(e.ctx, ty) != Some(32) => e.bit_reverse(x, ty),
        Op::BitFieldInsert | Op::BitFieldSExtract | Op::BitFieldUExtract
            if width(e.ctx, ty) != Some(32) =>
        {
            let insert = (i.class.opcode == Op::BitFieldInsert).then(|| ids.get(1).copied());
            let insert = insert.map(|x| x.ok_or("OpBitFieldInsert needs an insert operand"));
            let insert = insert.transpose()?;
            let at = if insert.is_some() { 2 } else { 1 };
            let (Some(&offset), Some(&count), Some(&offset_ty), Some(&count_ty)) = (
                ids.get(at),
                ids.get(at + 1),
                arg_types.get(at),
                arg_types.get(at + 1),
            ) else {
                return Err(format!("{:?} needs an offset and a count", i.class.opcode));
            };
            e.bit_field_op(
                i.class.opcode,
                ty,
                x,
                insert,
                (offset, count),
                (offset_ty, count_ty),
            )
        }
        Op::IsFinite => {
            let nan = e.op(Op::IsNan, rty, &[x]);
            let inf = e.op(Op::IsInf, rty, &[x]);
            let either = e.op(Op::LogicalOr, rty, &[nan, inf]);
            e.op(Op::LogicalNot, rty, &[either])
        }
        Op::IsNormal => {
            let w = width(e.ctx, ty).unwrap_or(32);
            let (mant, exp_mask) = match w {
                16 => (10, 0x1F),
                64 => (52, 0x7FF),
                _ => (23, 0xFF),
            };
            let (bits, it) = e.as_int(x, ty);
            let (km, ke, zero) = (e.konst(it, mant), e.konst(it, exp_mask), e.konst(it, 0));
            let shifted = e.op(Op::ShiftRightLogical, it, &[bits, km]);
            let exp = e.op(Op::BitwiseAnd, it, &[shifted, ke]);
            let not_zero = e.op(Op::INotEqual, rty, &[exp, zero]);
            let not_max = e.op(Op::INotEqual, rty, &[exp, ke]);
            e.op(Op::LogicalAnd, rty, &[not_zero, not_max])
        }
        Op::SignBitSet => {
            let (bits, it) = e.as_int(x, ty);
            e.is_negative(bits, it)
        }
        Op::LessOrGreater => {
            let y = *ids.get(1).ok_or("LessOrGreater needs two operands")?;
            e.op(Op::FOrdNotEqual, rty, &[x, y])
        }
        Op::Ordered | Op::Unordered => {
            let y = *ids.get(1).ok_or("Ordered needs two operands")?;
            let (nx, ny) = (e.op(Op::IsNan, rty, &[x]), e.op(Op::IsNan, rty, &[y]));
            let any = e.op(Op::LogicalOr, rty, &[nx, ny]);
            if i.class.opcode == Op::Unordered {
                any
            } else {
                e.op(Op::LogicalNot, rty, &[any])
            }
        }
        _ => return Ok(false),
    };
    e.assign(rty, rid, value);
    Ok(true)
}
