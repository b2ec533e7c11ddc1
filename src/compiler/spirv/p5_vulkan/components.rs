//! Run by `finish` (phase 5) where `DeviceCaps::local_components_whole`:
//! loads of one component of a vector in work-group memory load the whole
//! vector and take the component from it.
//!
//! Takes any module. Guarantees that no `OpLoad` reads through an access
//! chain whose last index picks a component of a vector in `Workgroup`
//! storage. Stores and atomics through such chains are left as they are.
//! Cannot fail.
//!
//! Mesa 22.3's llvmpipe gives a load of `s[j].y` (a `__local float2 s[]`)
//! the value of `s[j].x` where the same element was loaded whole before
//! through an index its compiler then finds equal to `j` (pyvkfft's
//! complex-to-real transforms of odd lengths, whose indexes come from the
//! local id of a one-item work-group, came out wrong). Loading the vector
//! and extracting the component reads the same bytes and more: the other
//! components are read and dropped.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Op, StorageClass, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};

/// A component access chain: the base, the indexes up to the vector, the
/// vector type and the component index.
struct Component {
    base: Word,
    to_vector: Vec<Word>,
    vector: Word,
    component: Word,
}

pub fn run(ctx: &mut Ctx) {
    let globals: HashMap<Word, Instruction> = ctx
        .module
        .types_global_values
        .iter()
        .filter_map(|i| Some((i.result_id?, i.clone())))
        .collect();
    let types = ctx.value_types();
    let constant = |id: Word| match globals
        .get(&id)
        .map(|c| (c.class.opcode, c.operands.first()))
    {
        Some((Op::Constant, Some(Operand::LiteralBit32(v)))) => Some(u64::from(*v)),
        Some((Op::Constant, Some(Operand::LiteralBit64(v)))) => Some(*v),
        _ => None,
    };
    // The type an index of a composite of type `ty` leads to.
    let step = |ty: Word, index: Word| -> Option<Word> {
        let t = globals.get(&ty)?;
        match t.class.opcode {
            Op::TypeArray | Op::TypeRuntimeArray | Op::TypeVector | Op::TypeMatrix => id_at(t, 0),
            Op::TypeStruct => id_at(t, usize::try_from(constant(index)?).ok()?),
            _ => None,
        }
    };
    let mut components: HashMap<Word, Component> = HashMap::default();
    for i in ctx.module.functions.iter().flat_map(|f| f.all_inst_iter()) {
        if !matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain)
            || i.operands.len() < 2
        {
            continue;
        }
        let (Some(id), Some(base)) = (i.result_id, id_at(i, 0)) else {
            continue;
        };
        let Some(pointer) = types.get(&base).and_then(|t| globals.get(t)) else {
            continue;
        };
        if pointer.class.opcode != Op::TypePointer
            || pointer.operands.first() != Some(&Operand::StorageClass(StorageClass::Workgroup))
        {
            continue;
        }
        let indexes: Vec<Word> = (1..i.operands.len()).filter_map(|n| id_at(i, n)).collect();
        let (&component, to_vector) = indexes.split_last().expect("at least one index");
        let Some(mut ty) = id_at(pointer, 1) else {
            continue;
        };
        let mut known = true;
        for &x in to_vector {
            match step(ty, x) {
                Some(t) => ty = t,
                None => {
                    known = false;
                    break;
                }
            }
        }
        if known
            && globals
                .get(&ty)
                .is_some_and(|t| t.class.opcode == Op::TypeVector)
        {
            components.insert(
                id,
                Component {
                    base,
                    to_vector: to_vector.to_vec(),
                    vector: ty,
                    component,
                },
            );
        }
    }
    if components.is_empty() {
        return;
    }
    let loads = |i: &Instruction| {
        i.class.opcode == Op::Load && id_at(i, 0).is_some_and(|p| components.contains_key(&p))
    };
    for f in 0..ctx.module.functions.len() {
        for b in 0..ctx.module.functions[f].blocks.len() {
            if !ctx.module.functions[f].blocks[b]
                .instructions
                .iter()
                .any(loads)
            {
                continue;
            }
            let old = std::mem::take(&mut ctx.module.functions[f].blocks[b].instructions);
            let mut out = Vec::with_capacity(old.len() + 4);
            for i in old {
                let Some(c) = loads(&i)
                    .then(|| id_at(&i, 0))
                    .flatten()
                    .and_then(|p| components.get(&p))
                else {
                    out.push(i);
                    continue;
                };
                let pointer = ctx.pointer(StorageClass::Workgroup, c.vector);
                let (at, whole) = (ctx.fresh(), ctx.fresh());
                let mut chain = vec![Operand::IdRef(c.base)];
                chain.extend(c.to_vector.iter().map(|&x| Operand::IdRef(x)));
                out.push(Instruction::new(
                    Op::AccessChain,
                    Some(pointer),
                    Some(at),
                    chain,
                ));
                let mut operands = i.operands.clone();
                operands[0] = Operand::IdRef(at);
                out.push(Instruction::new(
                    Op::Load,
                    Some(c.vector),
                    Some(whole),
                    operands,
                ));
                out.push(match constant(c.component) {
                    Some(k) => Instruction::new(
                        Op::CompositeExtract,
                        i.result_type,
                        i.result_id,
                        vec![Operand::IdRef(whole), Operand::LiteralBit32(k as u32)],
                    ),
                    None => Instruction::new(
                        Op::VectorExtractDynamic,
                        i.result_type,
                        i.result_id,
                        vec![Operand::IdRef(whole), Operand::IdRef(c.component)],
                    ),
                });
            }
            ctx.module.functions[f].blocks[b].instructions = out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble_for;

    /// A load of `s[i].y` from a work-group array of float2 becomes a load
    /// of `s[i]` and an extract of component 1; the store through the same
    /// chain stays.
    #[test]
    fn component_loads_read_the_whole_vector() {
        let mut ctx = assemble_for(
            "OpCapability Shader
             OpCapability Int64
             OpMemoryModel Logical GLSL450
             OpEntryPoint GLCompute %main \"main\" %s
             OpExecutionMode %main LocalSize 1 1 1
             %void = OpTypeVoid
             %fn = OpTypeFunction %void
             %f32 = OpTypeFloat 32
             %u64 = OpTypeInt 64 0
             %v2 = OpTypeVector %f32 2
             %c4 = OpConstant %u64 4
             %c1 = OpConstant %u64 1
             %arr = OpTypeArray %v2 %c4
             %pa = OpTypePointer Workgroup %arr
             %pw = OpTypePointer Workgroup %f32
             %s = OpVariable %pa Workgroup
             %main = OpFunction %void None %fn
             %entry = OpLabel
             %i = OpIAdd %u64 %c1 %c1
             %p = OpAccessChain %pw %s %i %c1
             %x = OpLoad %f32 %p Aligned 4
             %y = OpFNegate %f32 %x
             OpStore %p %y
             OpReturn
             OpFunctionEnd",
            "spv1.5",
        );
        run(&mut ctx);
        let code: Vec<&Instruction> = ctx.module.functions[0].all_inst_iter().collect();
        let load = code
            .iter()
            .find(|i| i.class.opcode == Op::Load)
            .expect("a load");
        let v2 = ctx
            .module
            .types_global_values
            .iter()
            .find(|t| t.class.opcode == Op::TypeVector)
            .and_then(|t| t.result_id);
        assert_eq!(load.result_type, v2, "the whole vector is loaded");
        let extract = code
            .iter()
            .find(|i| i.class.opcode == Op::CompositeExtract)
            .expect("the component is extracted");
        assert_eq!(extract.operands[1], Operand::LiteralBit32(1));
        assert!(code.iter().any(|i| i.class.opcode == Op::Store));
        ctx.sort_globals();
        let words = rspirv::binary::Assemble::assemble(&ctx.module);
        crate::compiler::link::validate_vulkan(&words).unwrap();
    }
}
