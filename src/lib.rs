//! vkcl: OpenCL 3.0 on any Vulkan 1.2+ device.
//!
//! The crate builds `libvkcl.so` (`vkcl.dll` on Windows), which is both an
//! OpenCL ICD (`cl_khr_icd`) for ICD loaders and a drop-in `libOpenCL` that
//! exports every OpenCL 3.0 entry point. See docs/ARCHITECTURE.md for
//! the architecture.

pub mod api;
pub mod compiler;
pub mod core;
pub mod vk;
