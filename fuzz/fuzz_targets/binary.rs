//! Program binaries through clCreateProgramWithBinary, clBuildProgram and
//! each kernel's pipeline; mutants keep a right checksum.
#![no_main]

use libfuzzer_sys::{fuzz_mutator, fuzz_target, fuzzer_mutate};

fuzz_target!(|data: &[u8]| vkcl_fuzz::targets::binary(data));

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    vkcl_fuzz::custom_mutate(
        data,
        size,
        max_size,
        seed,
        vkcl_fuzz::mutate::mutate_binary,
        |d, s, m| fuzzer_mutate(d, s, m),
    )
});
