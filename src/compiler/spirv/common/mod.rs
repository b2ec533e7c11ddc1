//! Helpers every pass shares: editing a module (`ctx`) and emitting
//! instructions (`emit`). No pass lives here.

pub mod builder;
pub mod ctx;
pub mod emit;

use std::hash::{BuildHasherDefault, DefaultHasher};

/// The hash maps and sets of the rewrite. Their hasher is fixed, so that
/// iterating one goes in the same order in every process: the rewrite of
/// a kernel is then the same module every time, which drivers' pipeline
/// caches (and vkcl's own) find again.
pub type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<DefaultHasher>>;
/// A set with the fixed hasher of [`HashMap`].
pub type HashSet<T> = std::collections::HashSet<T, BuildHasherDefault<DefaultHasher>>;
