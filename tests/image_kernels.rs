//! Images and samplers in kernels (tests/kernels/images.cl): every image
//! type read and written, sampler addressing and filter modes, integer and
//! float formats, and the image queries, checked against host references.

mod common;

include!("image_kernels/cases.rs");
