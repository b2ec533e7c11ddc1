//! The compiler: OpenCL C to SPIR-V (front end), the cache of its results,
//! linking, and SPIR-V reflection.

pub mod cache;
pub mod frontend;
pub mod link;
pub mod spirv;
