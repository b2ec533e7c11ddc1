//! The image kernel tests again in contexts that also hold a device the
//! tests never use, ahead of theirs (`VKCL_DEVICE_REPEAT=2` and
//! `VKCL_CONTEXT_OTHER_DEVICES=1`, set for crates named `*_other_devices`):
//! each image's first copy is on that device, so every command moves
//! texels between two devices.

mod common;

include!("image_kernels/cases.rs");
