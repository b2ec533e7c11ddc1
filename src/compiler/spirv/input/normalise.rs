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
//! Both come from optimised code (merged switch cases, rotated loops).
//! The rewriter itself copes with either; the validator does not.

use rspirv::binary::Assemble;
use rspirv::dr::{Function, Operand};
use rspirv::spirv::Op;

use crate::compiler::spirv::p4_addressing::structure::Cfg;

/// `words` made valid in the two ways above; `None` where nothing needed
/// changing (or the module does not parse, which the validator reports).
pub fn normalise(words: &[u32]) -> Option<Vec<u32>> {
    let mut module = rspirv::dr::load_words(words).ok()?;
    let mut changed = false;
    for f in &mut module.functions {
        changed |= merge_repeated_phi_parents(f);
        changed |= order_by_dominance(f);
    }
    changed.then(|| module.assemble())
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
}
