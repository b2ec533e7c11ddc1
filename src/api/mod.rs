//! The C ABI: one file per object family. Entry points validate every
//! argument, turn handles into core objects and results into `cl_int` codes.
//! The work itself belongs to `core`: nothing here calls Vulkan or names
//! a Vulkan type.
//!
//! Every `unsafe extern "C"` entry point has the same safety contract: the
//! one the OpenCL specification states for it (pointers are null or valid
//! for the sizes the caller gives), so none repeats it in a `# Safety` section.

#![allow(clippy::missing_safety_doc)]

pub mod command_buffer;
pub mod context;
pub mod device;
pub mod event;
pub mod ext;
pub mod icd;
pub mod image;
pub mod kernel;
pub mod memory;
pub mod platform;
pub mod program;
pub mod queue;
pub mod sampler;
pub mod semaphore;
pub mod svm;
pub mod util;
