//! Signed division and remainder on signed types.
//!
//! OpenCL SPIR-V declares every integer type without signedness, and
//! SPIR-V says `OpSDiv`, `OpSRem` and `OpSMod` treat their operands as
//! signed whatever the type. Some Vulkan drivers (NVIDIA's, at least up to
//! the 580 series) take the signedness from the type instead and divide
//! as unsigned, so `-2 % 7` gives 2. This pass gives those instructions
//! signed operand and result types, with bitcasts around them, which
//! every driver reads the same way; bitcasts between integer types of one
//! width cost nothing.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Op, Word};

use crate::compiler::spirv::ctx::Ctx;

/// The instructions whose meaning drivers may take from the type.
fn is_signed_division(op: Op) -> bool {
    matches!(op, Op::SDiv | Op::SRem | Op::SMod)
}

pub fn run(ctx: &mut Ctx) {
    let mut signed_of = std::collections::HashMap::new();
    for f in 0..ctx.module.functions.len() {
        for b in 0..ctx.module.functions[f].blocks.len() {
            let old = std::mem::take(&mut ctx.module.functions[f].blocks[b].instructions);
            let mut out = Vec::with_capacity(old.len());
            for i in old {
                if !is_signed_division(i.class.opcode) {
                    out.push(i);
                    continue;
                }
                let (Some(ty), Some(result)) = (i.result_type, i.result_id) else {
                    out.push(i);
                    continue;
                };
                let signed = match signed_of.get(&ty) {
                    Some(&s) => s,
                    None => {
                        let Some(s) = signed_type(ctx, ty) else {
                            out.push(i);
                            continue;
                        };
                        signed_of.insert(ty, s);
                        s
                    }
                };
                let mut operands = Vec::with_capacity(2);
                for o in &i.operands {
                    let Operand::IdRef(v) = o else {
                        unreachable!("division operands are ids")
                    };
                    let cast = ctx.fresh();
                    out.push(Instruction::new(
                        Op::Bitcast,
                        Some(signed),
                        Some(cast),
                        vec![Operand::IdRef(*v)],
                    ));
                    operands.push(Operand::IdRef(cast));
                }
                let value = ctx.fresh();
                out.push(Instruction::new(
                    i.class.opcode,
                    Some(signed),
                    Some(value),
                    operands,
                ));
                out.push(Instruction::new(
                    Op::Bitcast,
                    Some(ty),
                    Some(result),
                    vec![Operand::IdRef(value)],
                ));
            }
            ctx.module.functions[f].blocks[b].instructions = out;
        }
    }
}

/// The signed integer type (scalar or vector) of the width and shape of
/// integer type `ty`.
fn signed_type(ctx: &mut Ctx, ty: Word) -> Option<Word> {
    let t = ctx.global(ty)?.clone();
    match (t.class.opcode, t.operands.as_slice()) {
        (Op::TypeInt, [Operand::LiteralBit32(w), _]) => Some(ctx.ty(
            Op::TypeInt,
            vec![Operand::LiteralBit32(*w), Operand::LiteralBit32(1)],
        )),
        (Op::TypeVector, [Operand::IdRef(c), Operand::LiteralBit32(n)]) => {
            let s = signed_type(ctx, *c)?;
            Some(ctx.vector(s, *n))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::ctx::assemble;

    #[test]
    fn remainders_get_signed_types() {
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
            %u = OpUMod %uint %m2 %c7
            OpReturn
            OpFunctionEnd
            "#,
        );
        run(&mut ctx);
        let int = ctx
            .module
            .types_global_values
            .iter()
            .find(|t| t.class.opcode == Op::TypeInt && t.operands[1] == Operand::LiteralBit32(1))
            .and_then(|t| t.result_id)
            .expect("a signed int type");
        let body = &ctx.module.functions[0].blocks[0].instructions;
        let rem = body.iter().find(|i| i.class.opcode == Op::SRem).unwrap();
        assert_eq!(rem.result_type, Some(int));
        // The old result id is now a bitcast back to the unsigned type.
        let back = body
            .iter()
            .find(|i| {
                i.class.opcode == Op::Bitcast
                    && i.operands[0] == Operand::IdRef(rem.result_id.unwrap())
            })
            .unwrap();
        assert_ne!(back.result_type, Some(int));
        let div = body.iter().find(|i| i.class.opcode == Op::SDiv).unwrap();
        assert_ne!(
            div.result_type,
            body.iter()
                .find(|i| i.class.opcode == Op::UMod)
                .unwrap()
                .result_type
        );
        ctx.sort_globals();
        use rspirv::binary::Assemble;
        crate::compiler::link::validate_vulkan(&ctx.module.assemble()).unwrap();
    }
}
