//! The dot product tests again with `VKCL_NATIVE_DOT=1`: every product
//! left to the device's own packed 4x8-bit instructions where it has
//! them (shaderIntegerDotProduct), accelerated or not.

mod common;

include!("dot_products/cases.rs");
