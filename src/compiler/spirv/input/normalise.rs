//! What llvm-spirv copies over from LLVM IR that SPIR-V forbids, made
//! valid before a module is kept as a program's SPIR-V (which program
//! binaries carry, and which the validator checks when a binary is
//! loaded):
//! * LLVM lists a phi's incoming value once per edge, so a switch with
//!   several cases going to one block names the switch's block in that
//!   block's phis once per case; SPIR-V wants each parent once.
//! * LLVM lays blocks out in any order; SPIR-V wants each block after the
//!   blocks that dominate it.
//!
//! * LLVM's fast-math flags can give one instruction the same
//!   FPFastMathMode decoration twice; SPIR-V allows each decoration once.
//! * `c ? v : w` with a scalar `c` and vectors `v` and `w` is an OpSelect
//!   with a scalar condition, which only SPIR-V 1.4 allows; llvm-spirv
//!   writes it into modules of earlier versions.
//!
//! The first two come from optimised code (merged switch cases, rotated
//! loops). The rewriter itself copes with all four; the validator does
//! not.

use rspirv::binary::Assemble;
use rspirv::dr::{Function, Operand};
use rspirv::spirv::Op;

use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::p4_addressing::structure::Cfg;

/// `words` made valid in the two ways above; `None` where nothing needed
/// changing (or the module does not parse, which the validator reports).
pub fn normalise(words: &[u32]) -> Option<Vec<u32>> {
    let mut module = rspirv::dr::load_words(words).ok()?;
    let mut changed = drop_repeated_decorations(&mut module);
    for f in &mut module.functions {
        changed |= merge_repeated_phi_parents(f);
        changed |= order_by_dominance(f);
    }
    let version = module.header.as_ref().map_or((1, 0), |h| h.version());
    if version < (1, 4) {
        changed |= vector_select_conditions(&mut module);
    }
    changed.then(|| module.assemble())
}

/// Drops decorations a target already has (the same decoration, whatever
/// its operands: the first stays); true if any.
fn drop_repeated_decorations(module: &mut rspirv::dr::Module) -> bool {
    let before = module.annotations.len();
    let mut seen = HashSet::default();
    module.annotations.retain(|i| {
        if i.class.opcode != Op::Decorate {
            return true;
        }
        match (i.operands.first(), i.operands.get(1)) {
            (Some(Operand::IdRef(target)), Some(Operand::Decoration(d)))
                if !matches!(
                    d,
                    rspirv::spirv::Decoration::UserSemantic
                        | rspirv::spirv::Decoration::FuncParamAttr
                ) =>
            {
                seen.insert((*target, *d))
            }
            _ => true,
        }
    });
    module.annotations.len() != before
}

/// Gives each OpSelect of vectors on a scalar condition a vector of that
/// condition (an OpCompositeConstruct before it); true if any.
fn vector_select_conditions(module: &mut rspirv::dr::Module) -> bool {
    use rspirv::dr::Instruction;
    // The lanes of each vector type, and each boolean vector type by lanes.
    let mut lanes = HashMap::default();
    let mut bool_vectors = HashMap::default();
    let mut bool_type = None;
    for i in &module.types_global_values {
        match (i.class.opcode, i.result_id) {
            (Op::TypeBool, Some(id)) => bool_type = Some(id),
            (Op::TypeVector, Some(id)) => {
                if let (Some(Operand::IdRef(c)), Some(Operand::LiteralBit32(n))) =
                    (i.operands.first(), i.operands.get(1))
                {
                    lanes.insert(id, *n);
                    if Some(*c) == bool_type {
                        bool_vectors.insert(*n, id);
                    }
                }
            }
            _ => {}
        }
    }
    let Some(bool_type) = bool_type else {
        return false;
    };
    let mut next = module.header.as_ref().map_or(0, |h| h.bound);
    let mut changed = false;
    // The scalar boolean constants, then per function its conditions and
    // boolean parameters.
    let constants: HashSet<u32> = module
        .types_global_values
        .iter()
        .filter(|i| i.result_type == Some(bool_type))
        .filter_map(|i| i.result_id)
        .collect();
    let mut functions = std::mem::take(&mut module.functions);
    for f in &mut functions {
        let mut scalar_bools = constants.clone();
        scalar_bools.extend(
            f.parameters
                .iter()
                .chain(f.blocks.iter().flat_map(|b| &b.instructions))
                .filter(|i| i.result_type == Some(bool_type))
                .filter_map(|i| i.result_id),
        );
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for mut i in std::mem::take(&mut b.instructions) {
                let n = i.result_type.and_then(|t| lanes.get(&t).copied());
                match (i.class.opcode, n, i.operands.first()) {
                    (Op::Select, Some(n), Some(&Operand::IdRef(c)))
                        if scalar_bools.contains(&c) =>
                    {
                        let ty = *bool_vectors.entry(n).or_insert_with(|| {
                            let id = next;
                            next += 1;
                            module.types_global_values.push(Instruction::new(
                                Op::TypeVector,
                                None,
                                Some(id),
                                vec![Operand::IdRef(bool_type), Operand::LiteralBit32(n)],
                            ));
                            id
                        });
                        let splat = next;
                        next += 1;
                        out.push(Instruction::new(
                            Op::CompositeConstruct,
                            Some(ty),
                            Some(splat),
                            vec![Operand::IdRef(c); n as usize],
                        ));
                        i.operands[0] = Operand::IdRef(splat);
                        changed = true;
                    }
                    _ => {}
                }
                out.push(i);
            }
            b.instructions = out;
        }
    }
    module.functions = functions;
    if let Some(h) = module.header.as_mut() {
        h.bound = next;
    }
    changed
}

/// Drops the repeated (value, parent) pairs of each phi; true if any.
fn merge_repeated_phi_parents(f: &mut Function) -> bool {
    let mut changed = false;
    for i in f.blocks.iter_mut().flat_map(|b| &mut b.instructions) {
        if i.class.opcode != Op::Phi {
            continue;
        }
        let mut kept: Vec<Operand> = Vec::with_capacity(i.operands.len());
        for pair in i.operands.chunks(2) {
            let seen = kept.chunks(2).any(|k| k.get(1) == pair.get(1));
            if !seen {
                kept.extend_from_slice(pair);
            }
        }
        if kept.len() != i.operands.len() {
            i.operands = kept;
            changed = true;
        }
    }
    changed
}

/// Puts the blocks in an order where each follows its dominators; true
/// if the order changed.
fn order_by_dominance(f: &mut Function) -> bool {
    if f.blocks.len() < 2 {
        return false;
    }
    let Some(order) = Cfg::new(f).dominance_order() else {
        return false;
    };
    let mut blocks: Vec<Option<rspirv::dr::Block>> = f.blocks.drain(..).map(Some).collect();
    f.blocks = order
        .into_iter()
        .map(|b| blocks[b].take().expect("each block once"))
        .collect();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    const HEAD: &str = "
        OpCapability Addresses
        OpCapability Kernel
        OpMemoryModel Physical64 OpenCL
        OpEntryPoint Kernel %f \"f\"
        %void = OpTypeVoid
        %uint = OpTypeInt 32 0
        %fn = OpTypeFunction %void %uint
        %zero = OpConstant %uint 0
        %one = OpConstant %uint 1
    ";

    #[test]
    fn each_phi_parent_once_and_blocks_after_their_dominators() {
        // %merge comes before %entry's other successor %body, which it
        // follows in every path; %merge's phi names %entry once per case.
        let text = format!(
            "{HEAD}
        %f = OpFunction %void None %fn
        %x = OpFunctionParameter %uint
        %entry = OpLabel
        OpSwitch %x %body 0 %merge 1 %merge
        %merge = OpLabel
        %p = OpPhi %uint %zero %entry %zero %entry %one %body
        OpReturn
        %body = OpLabel
        OpBranch %merge
        OpFunctionEnd
        "
        );
        let words = assemble(&text).module.assemble();
        assert!(crate::compiler::link::validate(&words).is_err());
        let fixed = normalise(&words).expect("changed");
        crate::compiler::link::validate(&fixed).expect("valid now");
        assert!(normalise(&fixed).is_none(), "nothing left to change");
    }

    /// llvm-spirv's output for `c ? v : w` on float4 under
    /// -cl-fast-relaxed-math: a twice-decorated add and a select of
    /// vectors on a scalar condition, in a SPIR-V 1.0 module.
    #[test]
    fn one_decoration_each_and_vector_conditions_before_1_4() {
        let text = "
        OpCapability Addresses
        OpCapability Kernel
        OpMemoryModel Physical64 OpenCL
        OpEntryPoint Kernel %f \"f\"
        OpDecorate %sum FPFastMathMode NotNaN|NotInf
        OpDecorate %sum FPFastMathMode NotNaN|NotInf
        %void = OpTypeVoid
        %uint = OpTypeInt 32 0
        %float = OpTypeFloat 32
        %v4 = OpTypeVector %float 4
        %bool = OpTypeBool
        %fn = OpTypeFunction %void %uint %v4
        %zero = OpConstant %uint 0
        %f = OpFunction %void None %fn
        %x = OpFunctionParameter %uint
        %v = OpFunctionParameter %v4
        %entry = OpLabel
        %c = OpIEqual %bool %x %zero
        %sum = OpFAdd %v4 %v %v
        %r = OpSelect %v4 %c %sum %v
        OpReturn
        OpFunctionEnd
        ";
        let mut module = assemble(text).module;
        module.header.as_mut().unwrap().set_version(1, 0);
        let words = module.assemble();
        assert!(crate::compiler::link::validate(&words).is_err());
        let fixed = normalise(&words).expect("changed");
        crate::compiler::link::validate(&fixed).expect("valid now");
        assert!(normalise(&fixed).is_none(), "nothing left to change");
    }
}
