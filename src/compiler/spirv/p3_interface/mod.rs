//! Phase 3: the kernel's interface and memory. Passes 9 to 13, in this
//! order: `interface` (parameters become push constants or an argument
//! block), `module_data` (program-scope data moves to device segments),
//! `relocate` (generic pointers resolved; escaping private and `__local`
//! objects move to scratch memory), `groups` (sub-group and work-group
//! collectives) and `builtins` (work-item variables).
//!
//! After this phase the kernel has no parameters, no `Generic` pointers,
//! no module-scope `CrossWorkgroup` or `UniformConstant` data and no
//! OpenCL built-in variables; images and samplers are `OpUndef`s of their
//! OpenCL types until phase 5.

/// Pass 9.
pub mod interface;

/// Pass 10.
pub mod module_data;

/// Pass 11.
pub mod relocate;

/// Pass 11's first resort: private objects as words.
mod words;

/// Pass 12.
pub mod groups;

/// Pass 13.
pub mod builtins;
