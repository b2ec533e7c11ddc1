//! Build, compile and link options: parsed, and given to clBuildProgram
//! for a small IL program.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vkcl_fuzz::targets::options(data));
