//! Phase 5: a Vulkan compute module. Passes 17 to 19, in this order:
//! `images` (images and samplers become descriptors), `sync` (scopes,
//! semantics and the memory model) and `finish` (capabilities, execution
//! modes, entry point; it runs `signed` for signed division and, where the
//! driver needs it, `components` for loads of vector components in local
//! memory). After
//! assembly, `unroll` repeats innermost loops on devices whose loops are
//! bounded.
//!
//! After this phase the module validates for Vulkan 1.2 and needs only
//! what `DeviceCaps` says the device has.

/// Pass 17.
pub mod images;

/// Pass 18.
pub mod sync;

/// Pass 19.
pub mod finish;

/// Run by `finish`.
pub mod signed;

/// Run by `finish` on devices that need it.
pub mod components;

/// After assembly, where loops are bounded.
pub mod unroll;
