//! Pass 1: keep one kernel. Drops the other entry points, every function
//! the kernel does not reach, and the module-scope variables (constant
//! data of other kernels) that no remaining function uses.

use std::collections::HashSet;

use rspirv::dr::Operand;
use rspirv::spirv::{ExecutionModel, Op, Word};

use crate::compiler::spirv::ctx::{Ctx, id_at, ids_used};

/// Returns the kernel function's id.
pub fn run(ctx: &mut Ctx, kernel: &str) -> Result<Word, String> {
    let m = &mut ctx.module;
    let ep = m
        .entry_points
        .iter()
        .find(|e| {
            e.operands.first() == Some(&Operand::ExecutionModel(ExecutionModel::Kernel))
                && e.operands.get(2) == Some(&Operand::LiteralString(kernel.to_string()))
        })
        .ok_or_else(|| format!("no kernel named {kernel}"))?
        .clone();
    let fid = id_at(&ep, 1).ok_or("malformed OpEntryPoint")?;
    m.entry_points.retain(|e| id_at(e, 1) == Some(fid));
    m.execution_modes.retain(|e| id_at(e, 0) == Some(fid));
    // Functions reachable from the kernel.
    let mut reach: HashSet<Word> = HashSet::from([fid]);
    let mut todo = vec![fid];
    while let Some(f) = todo.pop() {
        let Some(func) = m
            .functions
            .iter()
            .find(|x| x.def.as_ref().and_then(|d| d.result_id) == Some(f))
        else {
            return Err(format!("function %{f} has no body (an unresolved import?)"));
        };
        for i in func.blocks.iter().flat_map(|b| &b.instructions) {
            if i.class.opcode == Op::FunctionCall {
                let callee = id_at(i, 0).ok_or("malformed OpFunctionCall")?;
                if reach.insert(callee) {
                    todo.push(callee);
                }
            }
        }
    }
    m.functions.retain(|f| {
        f.def
            .as_ref()
            .and_then(|d| d.result_id)
            .is_some_and(|id| reach.contains(&id))
    });
    drop_unused_variables(ctx);
    Ok(fid)
}

/// Removes module-scope variables no function refers to, with their
/// names and decorations.
fn drop_unused_variables(ctx: &mut Ctx) {
    let m = &mut ctx.module;
    let used: HashSet<Word> = m
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .flat_map(ids_used)
        .chain(m.types_global_values.iter().flat_map(ids_used))
        .collect();
    let unused: HashSet<Word> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable)
        .filter_map(|i| i.result_id)
        .filter(|id| !used.contains(id))
        .collect();
    if unused.is_empty() {
        return;
    }
    let names = |i: &rspirv::dr::Instruction| id_at(i, 0).is_some_and(|t| unused.contains(&t));
    m.types_global_values
        .retain(|i| !i.result_id.is_some_and(|id| unused.contains(&id)));
    m.annotations.retain(|i| !names(i));
    m.debug_names.retain(|i| !names(i));
    for e in &mut m.entry_points {
        e.operands
            .retain(|o| !matches!(o, Operand::IdRef(id) if unused.contains(id)));
    }
}
