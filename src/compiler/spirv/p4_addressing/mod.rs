//! Phase 4: Vulkan's addressing and control flow. Passes 14 to 16, in
//! this order: `addressing` (physical pointers become device addresses
//! with explicit layout, logical pointer arithmetic becomes access
//! chains), `structure` (structured control flow) and `slots` (pointers
//! kept in variables become SSA values).
//!
//! After this phase every pointer is a `PhysicalStorageBuffer` pointer or
//! a logical one Vulkan accepts, and the control flow is structured.

/// Pass 14.
pub mod addressing;

/// Pass 15.
pub mod structure;

/// Pass 16.
pub mod slots;
