//! The external memory and semaphore tests again with
//! `VKCL_LINEAR_IMPORT=1`: images on imported memory are linear Vulkan
//! images of their own wherever the device makes them, not only where no
//! memory type a buffer may use takes the memory, so that this path runs
//! on drivers whose buffers take every memory type (lavapipe).

mod common;

include!("external/cases.rs");
