//! Pass 1 (phase 1): Keep one kernel. Drops the other entry points, every
//! function the kernel does not reach, and the types, constants and
//! module-scope variables that nothing left uses.
//!
//! Takes an OpenCL SPIR-V module (Kernel, Physical64) as the front end or
//! an IL program gives it, and a kernel's name. Guarantees one entry point,
//! the named kernel, whose function id it returns; every function left is
//! reached from the kernel and has a body (a called import without one
//! fails by name); types, constants and module-scope variables nothing uses
//! are gone.

use rspirv::dr::Operand;
use rspirv::spirv::{Decoration, ExecutionModel, LinkageType, Op, StorageClass, Word};

use crate::compiler::spirv::common::HashSet;
use crate::compiler::spirv::common::ctx::{Ctx, id_at, ids_used};

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
    let mut reach: HashSet<Word> = HashSet::from_iter([fid]);
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
    drop_unused_globals(ctx);
    check_variables(ctx)?;
    Ok(fid)
}

/// The module-scope variables the kernel still uses are defined here: an
/// imported one (`LinkageAttributes ... Import`) is an unresolved symbol
/// of the executable, and an `Input` variable must be a built-in (Vulkan
/// has no other inputs to a compute shader; a driver given one may fail
/// in ways no validator reports).
fn check_variables(ctx: &Ctx) -> Result<(), String> {
    let decorated = |id: Word, d: Decoration| {
        ctx.module.annotations.iter().any(|a| {
            a.class.opcode == Op::Decorate
                && id_at(a, 0) == Some(id)
                && a.operands.get(1) == Some(&Operand::Decoration(d))
        })
    };
    let imported = |id: Word| {
        ctx.module.annotations.iter().any(|a| {
            a.class.opcode == Op::Decorate
                && id_at(a, 0) == Some(id)
                && a.operands.get(1) == Some(&Operand::Decoration(Decoration::LinkageAttributes))
                && a.operands.last() == Some(&Operand::LinkageType(LinkageType::Import))
        })
    };
    let name = |id: Word| {
        ctx.module
            .debug_names
            .iter()
            .find(|n| n.class.opcode == Op::Name && id_at(n, 0) == Some(id))
            .and_then(|n| match n.operands.get(1) {
                Some(Operand::LiteralString(s)) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or_else(|| format!("%{id}"))
    };
    for v in &ctx.module.types_global_values {
        let Some(id) = v.result_id.filter(|_| v.class.opcode == Op::Variable) else {
            continue;
        };
        if decorated(id, Decoration::BuiltIn) {
            continue;
        }
        if imported(id) {
            return Err(format!(
                "variable {} is imported and no module of the program defines it",
                name(id)
            ));
        }
        if v.operands.first() == Some(&Operand::StorageClass(StorageClass::Input)) {
            return Err(format!("input variable {} is not a built-in", name(id)));
        }
    }
    Ok(())
}

/// Removes the types, constants and module-scope variables that nothing
/// left refers to (another kernel's constant data, or types only other
/// kernels use, which Vulkan might reject), with their names and
/// decorations.
fn drop_unused_globals(ctx: &mut Ctx) {
    let m = &mut ctx.module;
    let defs: crate::compiler::spirv::common::HashMap<Word, usize> = m
        .types_global_values
        .iter()
        .enumerate()
        .filter_map(|(n, i)| Some((i.result_id?, n)))
        .collect();
    let mut kept: HashSet<Word> = HashSet::default();
    let mut todo: Vec<Word> = m
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .chain(&m.entry_points)
        .chain(&m.execution_modes)
        .flat_map(ids_used)
        .collect();
    while let Some(id) = todo.pop() {
        if !kept.insert(id) {
            continue;
        }
        if let Some(&n) = defs.get(&id) {
            todo.extend(ids_used(&m.types_global_values[n]));
        }
        // Ids a kept target's decorations name (AlignmentId, ...).
        for a in m.annotations.iter().filter(|a| id_at(a, 0) == Some(id)) {
            todo.extend(ids_used(a).skip(1));
        }
    }
    let gone = |id: Option<Word>| id.is_some_and(|i| defs.contains_key(&i) && !kept.contains(&i));
    m.types_global_values.retain(|i| {
        // A forward declaration goes with the pointer type it declares.
        let declares = (i.class.opcode == Op::TypeForwardPointer)
            .then(|| id_at(i, 0))
            .flatten();
        !gone(i.result_id) && !gone(declares)
    });
    m.annotations.retain(|a| !gone(id_at(a, 0)));
    m.debug_names.retain(|a| !gone(id_at(a, 0)));
    for e in &mut m.entry_points {
        e.operands
            .retain(|o| !matches!(o, Operand::IdRef(id) if gone(Some(*id))));
    }
}
