//! The two-device cases again with `VKCL_DEVICE_LOCAL=1`: device memory
//! treated as the host cannot map it, as on discrete GPUs, so that a
//! buffer's contents move between devices through staging buffers.

mod common;

include!("two_devices/cases.rs");
