//! cl_khr_external_memory and cl_khr_external_semaphore: buffers and
//! images on memory a Vulkan program exported, semaphores shared with it
//! both ways and between OpenCL contexts, the queries and the errors the
//! extensions name, through the ICD loader and directly; and the interop
//! example. The semaphore tests need a device that shares semaphores
//! through file descriptors (not lavapipe); they say so and return
//! elsewhere.

mod common;

include!("external/cases.rs");
