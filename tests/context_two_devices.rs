//! Contexts of two devices: buffers used on both, their contents moving
//! to whichever device uses them next as the commands' events order them,
//! through the ICD loader and directly. Every Vulkan device is offered
//! twice here (`VKCL_DEVICE_REPEAT=2`, set for crates named
//! `*_two_devices`), each time as a Vulkan device of its own, so that one
//! GPU (or lavapipe) stands for two.

mod common;

include!("two_devices/cases.rs");
