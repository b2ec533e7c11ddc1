//! cl_khr_integer_dot_product against a host reference, through the ICD
//! loader and directly, with the products made of multiplies and adds
//! where the device does not accelerate them.

mod common;

include!("dot_products/cases.rs");
