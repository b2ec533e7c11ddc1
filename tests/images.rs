//! Images and samplers as host-side objects: creation and its errors,
//! queries, supported formats, and every image transfer checked byte for
//! byte against a host model of the image, through the ICD loader and
//! directly.

mod common;

include!("images/cases.rs");
