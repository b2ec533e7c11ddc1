//! Reading OpenCL SPIR-V, outside the rewrite: kernel metadata
//! (`reflect`: names, arguments, qualifiers, attributes) and the
//! specialization constants of IL programs (`specialize`, applied before a
//! build) and the repair of what the OpenCL C front end's translator writes
//! that SPIR-V forbids (`normalise`). None is a pass of the rewrite;
//! `reflect`'s layout queries are shared by several passes.

pub mod normalise;
pub mod reflect;
pub mod specialize;
