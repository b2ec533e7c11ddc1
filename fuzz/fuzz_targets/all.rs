//! Every target in one binary, chosen by `VKCL_FUZZ_TARGET` (il, binary,
//! rewrite, options, source), for machines a single binary is easier to
//! bring to.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};
use vkcl_fuzz::targets;

fn target() -> &'static str {
    static TARGET: OnceLock<String> = OnceLock::new();
    TARGET.get_or_init(|| {
        std::env::var("VKCL_FUZZ_TARGET").expect("VKCL_FUZZ_TARGET names the target")
    })
}

fuzz_target!(|data: &[u8]| match target() {
    "il" => targets::il(data),
    "binary" => targets::binary(data),
    "rewrite" => targets::rewrite(data),
    "options" => targets::options(data),
    "source" => targets::source(data),
    other => panic!("no fuzz target {other}"),
});

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    let bytes = |d: &mut [u8], s: usize, m: usize| fuzzer_mutate(d, s, m);
    match target() {
        "il" | "rewrite" => {
            vkcl_fuzz::custom_mutate(data, size, max_size, seed, vkcl_fuzz::mutate_spirv, bytes)
        }
        "binary" => vkcl_fuzz::custom_mutate(
            data,
            size,
            max_size,
            seed,
            vkcl_fuzz::mutate::mutate_binary,
            bytes,
        ),
        _ => fuzzer_mutate(data, size, max_size),
    }
});
