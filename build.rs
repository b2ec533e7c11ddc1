//! Link settings for the shared library, and the digest of the compiler's
//! sources that keys rewritten kernels in the disk cache.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "android" {
        // Calls inside the library, including those through the ICD dispatch
        // table, must reach vkcl's own entry points even when an ICD loader
        // exporting the same `cl*` names is loaded first.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic");
        // The name an application linked against -lOpenCL looks for when
        // vkcl is installed as a drop-in libOpenCL.so.1.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libOpenCL.so.1");
    }
    println!("cargo:rerun-if-changed=build.rs");
    // Rewrites kept on disk are only as good as the code that made them:
    // any change to the compiler (or to the locked dependencies, among
    // them the SPIR-V validator) gives them a new key.
    let mut files = Vec::new();
    collect(std::path::Path::new("src/compiler"), &mut files);
    files.push("Cargo.lock".into());
    files.sort();
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    for f in &files {
        let data = std::fs::read(f).unwrap_or_default();
        for b in f.to_string_lossy().bytes().chain(data) {
            digest = (digest ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
    println!("cargo:rustc-env=VKCL_COMPILER_DIGEST={digest:016x}");
    println!("cargo:rerun-if-changed=src/compiler");
    println!("cargo:rerun-if-changed=Cargo.lock");
}

fn collect(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}
