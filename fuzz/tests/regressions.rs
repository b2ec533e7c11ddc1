//! What fuzzing found, kept as tests: each input once broke vkcl.

use opencl_sys::*;
use vkcl::api::program;
use vkcl_fuzz::session::session;

/// A program binary whose checksum is right but whose SPIR-V is not a
/// valid module (here: an id used and never defined) was accepted by
/// clCreateProgramWithBinary and handed to the rewriter, which assumes
/// valid modules. It is CL_INVALID_BINARY now.
#[test]
fn binary_with_an_invalid_module_is_refused() {
    let words = vkcl_fuzz::seeds::assemble(
        "OpCapability Addresses\nOpCapability Kernel\nOpCapability Int64\n\
         OpMemoryModel Physical64 OpenCL\nOpEntryPoint Kernel %f \"k\"\n\
         %void = OpTypeVoid\n%uint = OpTypeInt 32 0\n\
         %ptr = OpTypePointer CrossWorkgroup %uint\n%fn = OpTypeFunction %void %ptr\n\
         %f = OpFunction %void None %fn\n%p = OpFunctionParameter %ptr\n%l = OpLabel\n\
         %v = OpLoad %uint %p\n%w = OpIAdd %uint %v %undefined\nOpStore %p %w\nOpReturn\n\
         OpFunctionEnd\n",
        spirv_tools::TargetEnv::Universal_1_0,
    )
    .expect("spirv-as takes undefined ids (the validator does not)");
    let build = vkcl::core::program::Build {
        binary_type: CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
        spirv: Some(std::sync::Arc::new(words)),
        ..Default::default()
    };
    let binary = vkcl::core::program::encode_binary(&build);
    let s = session();
    let (mut status, mut r) = (0, 0);
    let len = binary.len();
    let mut ptr = binary.as_ptr();
    // SAFETY: one device, one binary valid for `len` bytes.
    let p = unsafe {
        program::clCreateProgramWithBinary(
            s.context,
            1,
            &s.device,
            &len,
            &mut ptr,
            &mut status,
            &mut r,
        )
    };
    assert!(p.is_null());
    assert_eq!((r, status), (CL_INVALID_BINARY, CL_INVALID_BINARY));
    // And through the fuzz target, which checks the whole path.
    vkcl_fuzz::targets::binary(&binary);
}
