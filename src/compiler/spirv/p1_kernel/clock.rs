//! Pass 1b (phase 1): The kernel clock. cl_khr_kernel_clock's built-ins
//! (`clock_read_{device,work_group,sub_group}` and their `_hilo` forms),
//! which the front end declares and leaves as calls to imports, become
//! `OpReadClockKHR` (SPV_KHR_shader_clock): the device and work-group
//! scopes read the device clock (Vulkan has no work-group clock, and the
//! device's is coherent over a work-group too), the sub-group scope the
//! sub-group clock.
//!
//! Takes `select`'s module. Guarantees no call to those built-ins is
//! left, and fails the kernel where the device lacks the clock it reads.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Op, Scope, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

/// The clock a built-in of this (import) name reads, if it is one.
fn clock_of(name: &str) -> Option<Scope> {
    let scope = name
        .strip_prefix("clock_read_hilo_")
        .or_else(|| name.strip_prefix("clock_read_"))?;
    match scope {
        "device" | "work_group" => Some(Scope::Device),
        "sub_group" => Some(Scope::Subgroup),
        _ => None,
    }
}

pub fn run(ctx: &mut Ctx, caps: &DeviceCaps) -> Result<(), String> {
    // Imported functions named as the built-ins, with their clocks.
    let clocks: HashMap<Word, (Scope, String)> = ctx
        .imports()
        .into_iter()
        .filter_map(|(f, name)| Some((f, (clock_of(&name)?, name))))
        .collect();
    let declared = |f: &rspirv::dr::Function| {
        f.blocks.is_empty()
            && f.def
                .as_ref()
                .and_then(|d| d.result_id)
                .is_some_and(|id| clocks.contains_key(&id))
    };
    if clocks.is_empty() || !ctx.module.functions.iter().any(declared) {
        return Ok(());
    }
    for (scope, name) in clocks.values() {
        let has = match scope {
            Scope::Subgroup => caps.subgroup_clock,
            _ => caps.device_clock,
        };
        if !has {
            return Err(format!(
                "{name} reads a clock the device lacks (VK_KHR_shader_clock)"
            ));
        }
    }
    let device = ctx.const_u32(Scope::Device as u32);
    let subgroup = ctx.const_u32(Scope::Subgroup as u32);
    for f in &mut ctx.module.functions {
        for b in &mut f.blocks {
            for i in &mut b.instructions {
                if i.class.opcode != Op::FunctionCall {
                    continue;
                }
                let Some((scope, _)) = id_at(i, 0).and_then(|callee| clocks.get(&callee)) else {
                    continue;
                };
                let scope = if *scope == Scope::Subgroup {
                    subgroup
                } else {
                    device
                };
                *i = Instruction::new(
                    Op::ReadClockKHR,
                    i.result_type,
                    i.result_id,
                    vec![Operand::IdRef(scope)],
                );
            }
        }
    }
    // The declarations go, with their names and linkage.
    ctx.module.functions.retain(|f| !declared(f));
    ctx.forget_globals(&clocks.keys().copied().collect());
    Ok(())
}
