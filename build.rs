//! Link settings for the shared library.

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
}
