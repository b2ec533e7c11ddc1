//! Specialization constants of IL programs (`clSetProgramSpecializationConstant`):
//! before a build, each `OpSpecConstant*` with a `SpecId` becomes an
//! ordinary constant holding the application's value, or its default.

use std::collections::HashMap;

use rspirv::binary::Assemble;
use rspirv::dr::Operand;
use rspirv::spirv::{Decoration, Op, Word};

use crate::compiler::spirv::input::reflect;

/// The module's specialization constants: SpecId -> size in bytes.
pub fn spec_ids(words: &[u32]) -> Result<HashMap<u32, usize>, String> {
    let m = reflect::load(words)?;
    let ids = decorated(&m);
    let mut sizes = HashMap::new();
    for i in &m.types_global_values {
        let Some(&spec) = i.result_id.and_then(|r| ids.get(&r)) else {
            continue;
        };
        let size = match i.class.opcode {
            Op::SpecConstantTrue | Op::SpecConstantFalse => 1,
            Op::SpecConstant => {
                let ty = i.result_type.and_then(|t| {
                    m.types_global_values
                        .iter()
                        .find(|x| x.result_id == Some(t))
                });
                match ty.and_then(|t| t.operands.first()) {
                    Some(Operand::LiteralBit32(w)) => (*w as usize).div_ceil(8),
                    _ => return Err("specialization constant of unknown type".into()),
                }
            }
            _ => continue,
        };
        sizes.insert(spec, size);
    }
    Ok(sizes)
}

fn decorated(m: &rspirv::dr::Module) -> HashMap<Word, u32> {
    m.annotations
        .iter()
        .filter(|a| {
            a.class.opcode == Op::Decorate
                && a.operands.get(1) == Some(&Operand::Decoration(Decoration::SpecId))
        })
        .filter_map(|a| match (a.operands.first(), a.operands.get(2)) {
            (Some(Operand::IdRef(t)), Some(Operand::LiteralBit32(s))) => Some((*t, *s)),
            _ => None,
        })
        .collect()
}

/// The module with every specialization constant fixed: `values` maps
/// SpecId to the value's bytes (little-endian); others keep their default.
pub fn apply(words: &[u32], values: &HashMap<u32, Vec<u8>>) -> Result<Vec<u32>, String> {
    let mut m = reflect::load(words)?;
    let ids = decorated(&m);
    for i in &mut m.types_global_values {
        let spec = i.result_id.and_then(|r| ids.get(&r)).copied();
        let value = spec.and_then(|s| values.get(&s));
        match i.class.opcode {
            Op::SpecConstantTrue | Op::SpecConstantFalse => {
                let on = match value {
                    Some(v) => v.iter().any(|&b| b != 0),
                    None => i.class.opcode == Op::SpecConstantTrue,
                };
                let op = if on {
                    Op::ConstantTrue
                } else {
                    Op::ConstantFalse
                };
                *i = rspirv::dr::Instruction::new(op, i.result_type, i.result_id, vec![]);
            }
            Op::SpecConstant => {
                if let Some(v) = value {
                    let mut bytes = [0u8; 8];
                    let n = v.len().min(8);
                    bytes[..n].copy_from_slice(&v[..n]);
                    let wide = u64::from_le_bytes(bytes);
                    i.operands = if v.len() > 4 {
                        vec![Operand::LiteralBit64(wide)]
                    } else {
                        vec![Operand::LiteralBit32(wide as u32)]
                    };
                }
                let (ty, id, ops) = (i.result_type, i.result_id, std::mem::take(&mut i.operands));
                *i = rspirv::dr::Instruction::new(Op::Constant, ty, id, ops);
            }
            Op::SpecConstantComposite => {
                let (ty, id, ops) = (i.result_type, i.result_id, std::mem::take(&mut i.operands));
                *i = rspirv::dr::Instruction::new(Op::ConstantComposite, ty, id, ops);
            }
            _ => {}
        }
    }
    m.annotations.retain(|a| {
        !(a.class.opcode == Op::Decorate
            && a.operands.get(1) == Some(&Operand::Decoration(Decoration::SpecId)))
    });
    Ok(m.assemble())
}
