//! Run by `finish` (phase 5): Signed division and remainder through
//! unsigned ones.
//!
//! Takes any function body. Guarantees no `OpSDiv`, `OpSRem` or `OpSMod` is
//! left; each is computed from magnitudes with unsigned operations and
//! gives the same result as SPIR-V defines. Cannot fail.
//!
//! OpenCL C defines `/` and `%` on negative integers (they truncate toward
//! zero), and so does SPIR-V's `OpSDiv`/`OpSRem`. GLSL leaves `%` on
//! negative operands undefined, and NVIDIA's Vulkan driver (at least up
//! to the 580 series) compiles `OpSRem` accordingly: `-2 % 7` gives 2 there,
//! whatever the operand types. This pass computes signed division,
//! remainder and modulo from the magnitudes with `OpUDiv`/`OpUMod`, then
//! applies the sign, which every driver reads the same way.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::Op;

use crate::compiler::spirv::common::ctx::Ctx;
use crate::compiler::spirv::common::emit::Emit;

pub fn run(ctx: &mut Ctx) {
    for f in 0..ctx.module.functions.len() {
        for b in 0..ctx.module.functions[f].blocks.len() {
            let old = std::mem::take(&mut ctx.module.functions[f].blocks[b].instructions);
            if !old
                .iter()
                .any(|i| matches!(i.class.opcode, Op::SDiv | Op::SRem | Op::SMod))
            {
                ctx.module.functions[f].blocks[b].instructions = old;
                continue;
            }
            let mut out = Vec::with_capacity(old.len());
            let mut e = Emit {
                ctx,
                out: &mut out,
                glsl: &mut None,
            };
            for i in old {
                let op = i.class.opcode;
                let lowered = match (op, i.result_type, i.result_id, i.operands.as_slice()) {
                    (
                        Op::SDiv | Op::SRem | Op::SMod,
                        Some(ty),
                        Some(result),
                        [Operand::IdRef(a), Operand::IdRef(b)],
                    ) => Some((ty, result, *a, *b)),
                    _ => None,
                };
                let Some((ty, result, a, b)) = lowered else {
                    e.out.push(i);
                    continue;
                };
                let bt = e.bool_like(ty);
                let zero = e.konst(ty, 0);
                let a_neg = e.op(Op::SLessThan, bt, &[a, zero]);
                let b_neg = e.op(Op::SLessThan, bt, &[b, zero]);
                let minus_a = e.op(Op::ISub, ty, &[zero, a]);
                let minus_b = e.op(Op::ISub, ty, &[zero, b]);
                let ua = e.op(Op::Select, ty, &[a_neg, minus_a, a]);
                let ub = e.op(Op::Select, ty, &[b_neg, minus_b, b]);
                let value = if op == Op::SDiv {
                    let q = e.op(Op::UDiv, ty, &[ua, ub]);
                    let minus_q = e.op(Op::ISub, ty, &[zero, q]);
                    let negative = e.op(Op::LogicalNotEqual, bt, &[a_neg, b_neg]);
                    (negative, minus_q, q)
                } else {
                    let r = e.op(Op::UMod, ty, &[ua, ub]);
                    let minus_r = e.op(Op::ISub, ty, &[zero, r]);
                    if op == Op::SRem {
                        (a_neg, minus_r, r)
                    } else {
                        // Modulo takes the divisor's sign: a non-zero
                        // remainder of the other sign moves by b.
                        let rem = e.op(Op::Select, ty, &[a_neg, minus_r, r]);
                        let nonzero = e.op(Op::INotEqual, bt, &[r, zero]);
                        let differ = e.op(Op::LogicalNotEqual, bt, &[a_neg, b_neg]);
                        let fix = e.op(Op::LogicalAnd, bt, &[nonzero, differ]);
                        let moved = e.op(Op::IAdd, ty, &[rem, b]);
                        (fix, moved, rem)
                    }
                };
                e.out.push(Instruction::new(
                    Op::Select,
                    Some(ty),
                    Some(result),
                    vec![
                        Operand::IdRef(value.0),
                        Operand::IdRef(value.1),
                        Operand::IdRef(value.2),
                    ],
                ));
            }
            ctx.module.functions[f].blocks[b].instructions = out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    #[test]
    fn signed_division_becomes_unsigned() {
        let mut ctx = assemble(
            r#"
            OpCapability Shader
            OpMemoryModel Logical GLSL450
            OpEntryPoint GLCompute %main "main"
            OpExecutionMode %main LocalSize 1 1 1
            %void = OpTypeVoid
            %uint = OpTypeInt 32 0
            %v2uint = OpTypeVector %uint 2
            %fn = OpTypeFunction %void
            %m2 = OpConstant %uint 4294967294
            %c7 = OpConstant %uint 7
            %v = OpConstantComposite %v2uint %m2 %c7
            %main = OpFunction %void None %fn
            %entry = OpLabel
            %r = OpSRem %uint %m2 %c7
            %q = OpSDiv %v2uint %v %v
            %m = OpSMod %uint %m2 %c7
            OpReturn
            OpFunctionEnd
            "#,
        );
        run(&mut ctx);
        let body = &ctx.module.functions[0].blocks[0].instructions;
        assert!(
            !body
                .iter()
                .any(|i| matches!(i.class.opcode, Op::SDiv | Op::SRem | Op::SMod))
        );
        assert_eq!(
            body.iter().filter(|i| i.class.opcode == Op::UMod).count(),
            2
        );
        assert_eq!(
            body.iter().filter(|i| i.class.opcode == Op::UDiv).count(),
            1
        );
        ctx.sort_globals();
        use rspirv::binary::Assemble;
        crate::compiler::link::validate_vulkan(&ctx.module.assemble()).unwrap();
    }
}
