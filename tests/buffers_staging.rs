//! The buffer and transfer tests again with `VKCL_DEVICE_LOCAL=1` and
//! `VKCL_HOST_IMPORT=0`: device memory the host cannot map and no imports
//! of the application's memory, as on discrete GPUs without
//! VK_EXT_external_memory_host, so that every transfer goes through
//! staging buffers (large reads in pieces).

mod common;

include!("buffers/cases.rs");
