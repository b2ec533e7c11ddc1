//! Pass 7 (first part): `OpenCL.std` instructions that have an exact
//! Vulkan equivalent in core SPIR-V or `GLSL.std.450`, and the `native_*`
//! functions whose precision OpenCL leaves to the implementation. Every
//! other `OpenCL.std` instruction is reported by name: those need the
//! built-in library (libclc or vkcl's own) that is still to come.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{GlslStd450Op as G, Op, OpenclStd100Op as C, Word};

use crate::compiler::spirv::ctx::{Ctx, id_at};

enum Lowering {
    Glsl(G),
    /// `a * b + c` as two instructions (mad allows any precision).
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
        C::fma => Glsl(G::Fma),
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
        _ => return None,
    })
}

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    let Some(ocl) = ctx.module.ext_inst_imports.iter().find_map(|i| {
        (i.operands.first() == Some(&Operand::LiteralString("OpenCL.std".into())))
            .then_some(i.result_id)
            .flatten()
    }) else {
        return Ok(());
    };
    let mut glsl: Option<Word> = None;
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                if i.class.opcode != Op::ExtInst || id_at(&i, 0) != Some(ocl) {
                    out.push(i);
                    continue;
                }
                let n = match i.operands.get(1) {
                    Some(Operand::LiteralExtInstInteger(n)) => *n,
                    _ => return Err("malformed OpExtInst".into()),
                };
                let op =
                    C::from_u32(n).ok_or_else(|| format!("unknown OpenCL.std instruction {n}"))?;
                let args: Vec<Operand> = i.operands[2..].to_vec();
                match lowering(op) {
                    Some(Lowering::Glsl(g)) => {
                        let set = *glsl.get_or_insert_with(|| {
                            let id = ctx.fresh();
                            ctx.module.ext_inst_imports.push(Instruction::new(
                                Op::ExtInstImport,
                                None,
                                Some(id),
                                vec![Operand::LiteralString("GLSL.std.450".into())],
                            ));
                            id
                        });
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
                        return Err(format!("the built-in function {op:?} is not supported yet"));
                    }
                }
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    ctx.module
        .ext_inst_imports
        .retain(|i| i.result_id != Some(ocl));
    Ok(())
}
