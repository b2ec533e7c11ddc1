//! SPIR-V handling: reading OpenCL modules (and, as it lands, the rewrite
//! into Vulkan compute modules).

pub mod reflect;
