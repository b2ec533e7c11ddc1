//! Pass 16 (phase 4): Pointer slots become SSA values. Unoptimised code and
//! libclc's functions keep pointer parameters in `Function` variables (an
//! out-parameter of `sincos` stored on entry, loaded where it is written).
//! Vulkan's logical pointers held in variables need the VariablePointers
//! capabilities, and NVIDIA's compiler crashes on them without; the
//! relocate pass already followed what such a variable holds, so here each
//! one written once, before every read, is replaced by the value written.
//!
//! Takes in: structured functions. Guarantees: no `Function` variable
//! holding a logical pointer is left that has one store dominating all its
//! loads; others stay as they were.

use rspirv::spirv::{Op, StorageClass, Word};

use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::p4_addressing::structure::Cfg;

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    // Variables whose type is a Function pointer to a logical pointer.
    let slot_types: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter_map(|t| {
            let (sc, pointee) = ctx.pointer_parts(t.result_id?)?;
            let (inner, _) = ctx.pointer_parts(pointee)?;
            (sc == StorageClass::Function && inner != StorageClass::PhysicalStorageBuffer)
                .then_some(t.result_id?)
        })
        .collect();
    if slot_types.is_empty() {
        return Ok(());
    }
    for f in &mut ctx.module.functions {
        if f.blocks.is_empty() {
            continue;
        }
        let slots: HashSet<Word> = f
            .all_inst_iter()
            .filter(|i| {
                i.class.opcode == Op::Variable
                    && i.result_type.is_some_and(|t| slot_types.contains(&t))
            })
            .filter_map(|i| i.result_id)
            .collect();
        if slots.is_empty() {
            continue;
        }
        // Per slot: its stores (block, position, value) and loads (block,
        // position, result); any other use keeps the slot.
        let mut stores: HashMap<Word, Vec<(usize, usize, Word)>> = HashMap::default();
        let mut loads: HashMap<Word, Vec<(usize, usize, Word)>> = HashMap::default();
        let mut kept: HashSet<Word> = HashSet::default();
        for (b, block) in f.blocks.iter().enumerate() {
            for (k, i) in block.instructions.iter().enumerate() {
                match i.class.opcode {
                    Op::Store if id_at(i, 0).is_some_and(|p| slots.contains(&p)) => {
                        let (p, v) = (id_at(i, 0).unwrap_or(0), id_at(i, 1).unwrap_or(0));
                        if slots.contains(&v) {
                            kept.insert(v);
                        }
                        stores.entry(p).or_default().push((b, k, v));
                    }
                    Op::Load if id_at(i, 0).is_some_and(|p| slots.contains(&p)) => {
                        let p = id_at(i, 0).unwrap_or(0);
                        loads.entry(p).or_default().push((
                            b,
                            k,
                            i.result_id.ok_or("load without id")?,
                        ));
                    }
                    Op::Variable => {}
                    _ => {
                        for o in &i.operands {
                            if let rspirv::dr::Operand::IdRef(x) = o
                                && slots.contains(x)
                            {
                                kept.insert(*x);
                            }
                        }
                    }
                }
            }
        }
        let cfg = Cfg::new(f);
        let mut value_of: HashMap<Word, Word> = HashMap::default();
        let mut gone: HashSet<Word> = HashSet::default();
        let mut gone_slots: HashSet<Word> = HashSet::default();
        for &slot in &slots {
            if kept.contains(&slot) {
                continue;
            }
            let [(sb, sk, v)] = stores.get(&slot).map_or(&[][..], Vec::as_slice) else {
                continue;
            };
            let reads = loads.get(&slot).map_or(&[][..], Vec::as_slice);
            let before_all = reads.iter().all(|&(lb, lk, _)| {
                if lb == *sb {
                    *sk < lk
                } else {
                    cfg.dominates(*sb, lb)
                }
            });
            if !before_all {
                continue;
            }
            for &(_, _, r) in reads {
                value_of.insert(r, *v);
                gone.insert(r);
            }
            gone.insert(slot);
            gone_slots.insert(slot);
        }
        if gone.is_empty() {
            continue;
        }
        // Loads forwarded may have fed other loads' stores: resolve chains.
        let resolve = |mut x: Word| {
            while let Some(&y) = value_of.get(&x) {
                x = y;
            }
            x
        };
        for block in &mut f.blocks {
            block.instructions.retain(|i| {
                let removed_store = i.class.opcode == Op::Store
                    && id_at(i, 0).is_some_and(|p| gone_slots.contains(&p));
                let removed_def = i.result_id.is_some_and(|r| gone.contains(&r));
                !(removed_store || removed_def)
            });
            for i in &mut block.instructions {
                for o in &mut i.operands {
                    if let rspirv::dr::Operand::IdRef(x) = o {
                        *x = resolve(*x);
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    #[test]
    fn pointer_kept_in_a_variable_becomes_the_value() {
        let mut ctx = assemble(
            r#"
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
     %uint_4 = OpConstant %uint 4
     %uint_1 = OpConstant %uint 1
    %float_2 = OpConstant %float 2
        %arr = OpTypeArray %float %uint_4
     %wg_arr = OpTypePointer Workgroup %arr
   %wg_float = OpTypePointer Workgroup %float
       %slot = OpTypePointer Function %wg_float
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
         %lf = OpVariable %wg_arr Workgroup
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %s = OpVariable %slot Function
         %at = OpAccessChain %wg_float %lf %uint_1
               OpStore %s %at
               OpBranch %next
       %next = OpLabel
          %p = OpLoad %wg_float %s
               OpStore %p %float_2
               OpReturn
               OpFunctionEnd
"#,
        );
        run(&mut ctx).unwrap();
        let ops: Vec<Op> = ctx.module.functions[0]
            .all_inst_iter()
            .map(|i| i.class.opcode)
            .collect();
        assert!(!ops.contains(&Op::Variable) && !ops.contains(&Op::Load));
        let last_store = ctx.module.functions[0]
            .all_inst_iter()
            .filter(|i| i.class.opcode == Op::Store)
            .last()
            .cloned()
            .unwrap();
        let at = ctx.module.functions[0]
            .all_inst_iter()
            .find(|i| i.class.opcode == Op::AccessChain)
            .and_then(|i| i.result_id)
            .unwrap();
        assert_eq!(id_at(&last_store, 0), Some(at));
        use rspirv::binary::Assemble;
        crate::compiler::link::validate_vulkan(&ctx.module.assemble()).unwrap();
    }
}
