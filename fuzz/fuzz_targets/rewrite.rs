//! SPIR-V modules through the rewriter alone, for several devices and build options.
#![no_main]

use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};

fuzz_target!(|data: &[u8]| vkcl_fuzz::targets::rewrite(data));

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    vkcl_fuzz::custom_mutate(
        data,
        size,
        max_size,
        seed,
        vkcl_fuzz::mutate_spirv,
        |d, s, m| fuzzer_mutate(d, s, m),
    )
});
