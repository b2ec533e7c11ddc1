//! Buffers and transfers checked byte for byte against host references,
//! through the ICD loader and directly.

mod common;

include!("buffers/cases.rs");
