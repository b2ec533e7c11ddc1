//! Emitting instructions: the `Emit` helper that built-in lowerings and
//! other passes use to append typed instructions, constants and
//! `GLSL.std.450` calls to a block, and the shape queries they share.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{GlslStd450Op as G, Op, Word};

use crate::compiler::spirv::common::ctx::Ctx;

/// Emits instructions for one built-in call.
pub struct Emit<'a> {
    pub ctx: &'a mut Ctx,
    pub out: &'a mut Vec<Instruction>,
    /// The `GLSL.std.450` import, made on first use.
    pub glsl: &'a mut Option<Word>,
}

/// Scalar or vector shape of a value type: (component type, lanes).
pub(crate) fn shape(ctx: &Ctx, ty: Word) -> Option<(Word, Option<u32>)> {
    let t = ctx.global(ty)?;
    match (t.class.opcode, t.operands.first(), t.operands.get(1)) {
        (Op::TypeVector, Some(Operand::IdRef(c)), Some(Operand::LiteralBit32(n))) => {
            Some((*c, Some(*n)))
        }
        _ => Some((ty, None)),
    }
}

/// `component`, or a vector of it with as many lanes as `like` has.
pub(crate) fn shaped_like(ctx: &mut Ctx, component: Word, like: Word) -> Word {
    match shape(ctx, like).and_then(|s| s.1) {
        Some(n) => ctx.vector(component, n),
        None => component,
    }
}

/// The bits of `v` as a float of `width` bits (32 or 64), for a constant.
pub(crate) fn float_bits(width: u32, v: f64) -> u64 {
    if width == 64 {
        v.to_bits()
    } else {
        u64::from((v as f32).to_bits())
    }
}

pub(crate) fn width(ctx: &Ctx, ty: Word) -> Option<u32> {
    let (c, _) = shape(ctx, ty)?;
    match ctx.global(c)?.operands.first() {
        Some(Operand::LiteralBit32(w)) => Some(*w),
        _ => None,
    }
}

impl Emit<'_> {
    pub(crate) fn op(&mut self, op: Op, ty: Word, args: &[Word]) -> Word {
        let id = self.ctx.fresh();
        self.out.push(Instruction::new(
            op,
            Some(ty),
            Some(id),
            args.iter().map(|&a| Operand::IdRef(a)).collect(),
        ));
        id
    }

    pub(crate) fn glsl(&mut self, g: G, ty: Word, args: &[Word]) -> Word {
        let set = *self
            .glsl
            .get_or_insert_with(|| self.ctx.ext_import_or_add("GLSL.std.450"));
        let id = self.ctx.fresh();
        let mut ops = vec![
            Operand::IdRef(set),
            Operand::LiteralExtInstInteger(g as u32),
        ];
        ops.extend(args.iter().map(|&a| Operand::IdRef(a)));
        self.out
            .push(Instruction::new(Op::ExtInst, Some(ty), Some(id), ops));
        id
    }

    /// An integer type of `bits` with the shape of `like`.
    pub(crate) fn int_like(&mut self, like: Word, bits: u32) -> Word {
        let c = self.ctx.uint(bits);
        shaped_like(self.ctx, c, like)
    }

    /// A boolean type with the shape of `like`.
    pub(crate) fn bool_like(&mut self, like: Word) -> Word {
        let b = self.ctx.ty(Op::TypeBool, vec![]);
        shaped_like(self.ctx, b, like)
    }

    /// Gives result id `id` (of type `ty`) the computed `value`.
    pub(crate) fn assign(&mut self, ty: Word, id: Word, value: Word) {
        self.out.push(Instruction::new(
            Op::CopyObject,
            Some(ty),
            Some(id),
            vec![Operand::IdRef(value)],
        ));
    }

    /// Constant `v` of float type `ty` (splat over vectors).
    pub(crate) fn float(&mut self, ty: Word, v: f64) -> Word {
        let w = width(self.ctx, ty).unwrap_or(32);
        self.konst(ty, float_bits(w, v))
    }

    /// Constant `v` of integer type `ty` (splat over vectors).
    pub(crate) fn konst(&mut self, ty: Word, v: u64) -> Word {
        let (c, lanes) = shape(self.ctx, ty).expect("a value type");
        let w = width(self.ctx, ty).unwrap_or(32);
        let v = if w < 64 { v & ((1u64 << w) - 1) } else { v };
        let scalar = self.ctx.const_int(c, v);
        let Some(n) = lanes else { return scalar };
        let parts = vec![Operand::IdRef(scalar); n as usize];
        if let Some(id) = self.ctx.module.types_global_values.iter().find_map(|i| {
            (i.class.opcode == Op::ConstantComposite
                && i.result_type == Some(ty)
                && i.operands == parts)
                .then_some(i.result_id)
                .flatten()
        }) {
            return id;
        }
        let id = self.ctx.fresh();
        self.ctx.module.types_global_values.push(Instruction::new(
            Op::ConstantComposite,
            Some(ty),
            Some(id),
            parts,
        ));
        id
    }

    pub(crate) fn select(&mut self, ty: Word, cond: Word, yes: Word, no: Word) -> Word {
        self.op(Op::Select, ty, &[cond, yes, no])
    }
}
