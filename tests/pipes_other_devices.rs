//! The pipe tests again in contexts that also hold a device the tests
//! never use, ahead of theirs (`VKCL_DEVICE_REPEAT=2` and
//! `VKCL_CONTEXT_OTHER_DEVICES=1`, set for crates named `*_other_devices`):
//! each pipe's buffer starts on that device, so its header and packets
//! move between two devices as the commands use them.

mod common;

include!("pipes/cases.rs");
