//! The compiler: OpenCL C to SPIR-V (front end), the cache of its results,
//! linking, SPIR-V reflection and rewriting, and the memo of rewrites.

pub mod cache;
pub mod frontend;
pub mod link;
pub mod memo;
pub mod process;
pub mod spirv;

/// A name part no other temporary file or folder of vkcl's shares: the
/// process and a count across every thread of it.
pub(crate) fn unique_tag() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// For debugging: writes `bytes()` to the file `name` in `VKCL_DUMP_DIR`
/// where that is set (a failure to write is logged, nothing more).
pub(crate) fn dump(name: &str, bytes: impl FnOnce() -> Vec<u8>) {
    let Some(dir) = std::env::var_os("VKCL_DUMP_DIR") else {
        return;
    };
    let path = std::path::Path::new(&dir).join(name);
    let written = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, bytes()));
    if let Err(e) = written {
        log::warn!(target: "vkcl::compiler", "cannot write {}: {e}", path.display());
    }
}
