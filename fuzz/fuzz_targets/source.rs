//! An options line and an OpenCL C source through clCreateProgramWithSource,
//! clBuildProgram and each kernel's pipeline.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| vkcl_fuzz::targets::source(data));
