//! The buffer and transfer tests again with `VKCL_DEVICE_LOCAL=1`: device
//! memory treated as the host cannot map it, as on discrete GPUs, so that
//! transfers go through staging buffers and imported host memory.

mod common;

include!("buffers/cases.rs");
