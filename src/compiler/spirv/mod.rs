//! SPIR-V handling: reading OpenCL modules, and the rewrite of one kernel
//! of an OpenCL (Kernel, Physical64) module into a Vulkan compute module.
//!
//! The rewrite is a sequence of passes, one file each (see DESIGN.md, "The
//! rewriter"). What a pass cannot handle yet fails the rewrite with a
//! message naming the construct; the caller reports it, never a panic.

pub mod addressing;
pub mod builtins;
pub mod ctx;
pub mod extinst;
pub mod finish;
pub mod inline;
pub mod interface;
pub mod reflect;
pub mod select;
pub mod structure;
pub mod sync;
pub mod vectors;

use rspirv::binary::Assemble;

use crate::compiler::spirv::ctx::Ctx;
use crate::compiler::spirv::finish::DeviceCaps;
use crate::compiler::spirv::interface::PushLayout;
use crate::compiler::spirv::reflect::KernelInfo;

/// A kernel ready for Vulkan.
pub struct Rewritten {
    pub words: Vec<u32>,
    pub push: PushLayout,
}

/// Rewrites `kernel` of an OpenCL SPIR-V module for a Vulkan device.
pub fn rewrite(words: &[u32], kernel: &KernelInfo, caps: &DeviceCaps) -> Result<Rewritten, String> {
    let module = reflect::load(words)?;
    let mut ctx = Ctx::new(module);
    let fid = select::run(&mut ctx, &kernel.name)?;
    inline::run(&mut ctx, fid)?;
    // Built-ins first: vloadn/vstoren become pointer arithmetic (lowered
    // by the addressing pass), and math on 8/16-component vectors is then
    // split by the vectors pass like any other operation.
    extinst::run(&mut ctx)?;
    vectors::run(&mut ctx)?;
    let (push, block) = interface::run(&mut ctx, fid, &kernel.args, caps.max_push_constants)?;
    builtins::run(&mut ctx, &block)?;
    addressing::run(&mut ctx)?;
    structure::run(&mut ctx)?;
    sync::run(&mut ctx)?;
    finish::run(&mut ctx, fid, caps)?;
    let words = ctx.module.assemble();
    crate::compiler::link::validate_vulkan(&words)?;
    Ok(Rewritten { words, push })
}
