//! Helpers every pass shares: editing a module (`ctx`) and emitting
//! instructions (`emit`). No pass lives here.

pub mod ctx;
pub mod emit;
