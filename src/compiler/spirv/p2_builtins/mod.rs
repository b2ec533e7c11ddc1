//! Phase 2: built-in functions and types Vulkan lacks. Passes 6 to 8, in
//! this order: `extinst` (every `OpenCL.std` instruction), `convert`
//! (saturating and rounding-mode conversions) and `vectors` (8- and
//! 16-component vectors become arrays).
//!
//! The other files are `extinst`'s helpers, not passes: `exact` (built-ins
//! exact by definition, as core instructions), `libclc` (copying libclc's
//! functions in), `half` and `fp16` (`half` values and arithmetic), and
//! `fma64` (a bitwise double `fma`).
//!
//! After this phase no `OpenCL.std` instruction, rounding-mode or
//! saturation decoration, or vector of more than 4 components is left.

/// Pass 6.
pub mod extinst;

/// Pass 7.
pub mod convert;

/// Pass 8.
pub mod vectors;

/// `extinst`'s helpers.
pub mod exact;
pub mod fma64;
pub mod fp16;
pub mod half;
pub mod libclc;
