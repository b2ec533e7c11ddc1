//! What fuzzing found, kept as tests: each input once broke vkcl.

use opencl_sys::*;
use vkcl::api::{kernel, program};
use vkcl::core::device::Device;
use vkcl::core::kernel::Kernel;
use vkcl::core::object::Handle;
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

/// Builds IL made from `text`; the build's result and log.
fn build_il(text: &str) -> (cl_int, String) {
    let words = vkcl_fuzz::seeds::assemble(text, spirv_tools::TargetEnv::Universal_1_0)
        .expect("the module assembles");
    let bytes = vkcl_fuzz::mutate::to_bytes(&words);
    let s = session();
    let mut r = 0;
    // SAFETY: the bytes are valid for their length.
    let p = unsafe {
        program::clCreateProgramWithIL(s.context, bytes.as_ptr().cast(), bytes.len(), &mut r)
    };
    assert_eq!(r, CL_SUCCESS, "a valid module");
    // SAFETY: a valid program and device; empty options.
    let r = unsafe {
        program::clBuildProgram(p, 1, &s.device, c"".as_ptr(), None, std::ptr::null_mut())
    };
    let mut size = 0;
    let mut log = vec![0u8; 4096];
    // SAFETY: `log` holds 4096 bytes.
    unsafe {
        program::clGetProgramBuildInfo(
            p,
            s.device,
            CL_PROGRAM_BUILD_LOG,
            log.len(),
            log.as_mut_ptr().cast(),
            &mut size,
        );
        program::clReleaseProgram(p);
    }
    (
        r,
        String::from_utf8_lossy(&log[..size.saturating_sub(1)]).into_owned(),
    )
}

const WITH_INPUT: &str = "OpCapability Addresses\nOpCapability Linkage\nOpCapability Kernel\n\
     OpCapability Int64\nOpMemoryModel Physical64 OpenCL\nOpEntryPoint Kernel %f \"k\" %gid\n\
     DECORATIONS\
     %ulong = OpTypeInt 64 0\n%v3 = OpTypeVector %ulong 3\n%pv3 = OpTypePointer Input %v3\n\
     %void = OpTypeVoid\n%ptr = OpTypePointer CrossWorkgroup %ulong\n\
     %fn = OpTypeFunction %void %ptr\n%gid = OpVariable %pv3 Input\n\
     %f = OpFunction %void None %fn\n%p = OpFunctionParameter %ptr\n%l = OpLabel\n\
     %g = OpLoad %v3 %gid\n%i = OpCompositeExtract %ulong %g 0\nOpStore %p %i\nOpReturn\n\
     OpFunctionEnd\n";

/// An `Input` variable that is imported and not a built-in (the
/// GlobalInvocationId import with its BuiltIn decoration gone) passed the
/// rewrite and the validator, and NVIDIA's driver crashed the process
/// making its pipeline. It is an unresolved symbol: the build fails.
#[test]
fn imported_variable_that_is_no_built_in_fails_the_build() {
    let (r, log) = build_il(&WITH_INPUT.replace(
        "DECORATIONS",
        "OpDecorate %gid LinkageAttributes \"__spirv_GlobalInvocationId\" Import\n",
    ));
    assert_eq!(r, CL_BUILD_PROGRAM_FAILURE);
    assert!(log.contains("imported"), "{log}");
    // Without the linkage it is an input Vulkan cannot give.
    let (r, log) = build_il(&WITH_INPUT.replace("DECORATIONS", ""));
    assert_eq!(r, CL_BUILD_PROGRAM_FAILURE);
    assert!(log.contains("not a built-in"), "{log}");
    // With its BuiltIn decoration it is the work-item's global id.
    let (r, log) = build_il(&WITH_INPUT.replace(
        "DECORATIONS",
        "OpDecorate %gid BuiltIn GlobalInvocationId\n\
         OpDecorate %gid LinkageAttributes \"__spirv_GlobalInvocationId\" Import\n",
    ));
    assert_eq!(r, CL_SUCCESS, "{log}");
}

/// A module requiring work-groups of 8x128x128 items (beyond every
/// device's limits) gave its harness a Vulkan pipeline of whatever size
/// it asked for; Vulkan forbids one beyond the device's limits. Pipelines
/// beyond them, asked for or required, are CL_INVALID_WORK_GROUP_SIZE
/// now, before Vulkan is called.
#[test]
fn pipelines_beyond_the_device_are_refused() {
    let s = session();
    let dev = Handle::<Device>::from_raw(s.device).expect("the session's device");
    let vk = dev.logical().expect("the device opens");
    let limits = dev.max_work_item_sizes();
    let most = dev.max_work_group_size() as u32;
    // Builds a kernel with the execution mode `mode`, asks for pipelines
    // beyond the device's limits (each refused) and of 1x1x1 (the result).
    let one_by_one = |mode: &str| -> Result<(), cl_int> {
        let text = WITH_INPUT
            .replace(
                "DECORATIONS",
                "OpDecorate %gid BuiltIn GlobalInvocationId\n",
            )
            .replace("\"k\" %gid\n", &format!("\"k\" %gid\n{mode}"));
        let words = vkcl_fuzz::seeds::assemble(&text, spirv_tools::TargetEnv::Universal_1_0)
            .expect("the module assembles");
        let bytes = vkcl_fuzz::mutate::to_bytes(&words);
        let mut r = 0;
        // SAFETY: the bytes are valid for their length.
        let p = unsafe {
            program::clCreateProgramWithIL(s.context, bytes.as_ptr().cast(), bytes.len(), &mut r)
        };
        assert_eq!(r, CL_SUCCESS);
        // SAFETY: a valid program and device; empty options.
        let built = unsafe {
            program::clBuildProgram(p, 1, &s.device, c"".as_ptr(), None, std::ptr::null_mut())
        };
        assert_eq!(
            built, CL_SUCCESS,
            "a kernel a device cannot run still builds"
        );
        // SAFETY: a built program and a NUL-terminated name.
        let k = unsafe { kernel::clCreateKernel(p, c"k".as_ptr(), &mut r) };
        assert_eq!(r, CL_SUCCESS);
        let core = Handle::<Kernel>::from_raw(k).expect("a kernel just made");
        let compiled = core
            .compiled(&dev, &vk, false, false)
            .expect("a shader module");
        let mut result = Ok(());
        for local in [[1, 1, 1], [8, 128, 128], [most + 1, 1, 1], [0, 1, 1]]
            .into_iter()
            .chain((0..3).map(|d| {
                let mut l = [1; 3];
                l[d] = limits[d] as u32 + 1;
                l
            }))
        {
            let made = compiled
                .pipeline(local, Vec::new())
                .map(|_| ())
                .map_err(|e| e.0);
            if local == [1, 1, 1] {
                result = made;
            } else {
                assert_eq!(made, Err(CL_INVALID_WORK_GROUP_SIZE), "{local:?}");
            }
        }
        // SAFETY: each released once.
        unsafe {
            kernel::clReleaseKernel(k);
            program::clReleaseProgram(p);
        }
        result
    };
    assert_eq!(one_by_one(""), Ok(()));
    assert_eq!(one_by_one("OpExecutionMode %f LocalSize 1 1 1\n"), Ok(()));
    // A required size beyond the device: not even the size asked for.
    assert_eq!(
        one_by_one("OpExecutionMode %f LocalSize 8 128 128\n"),
        Err(CL_INVALID_WORK_GROUP_SIZE)
    );
}

/// The inputs in `tests/inputs/`, each given to the target its name
/// starts with: every one of them once panicked or crashed vkcl (the
/// file names say how).
///
/// * `rewrite-array-size-overflow.spv`: an array of 2^31 `uint`s
///   overflowed the size computation of OpenCL C's layout.
/// * `binary-string-operand-crashes-validator.bin`: a binary whose module
///   gives an `OpString` as an `OpenCL.std` operand, on which SPIRV-Tools'
///   validator asserts (and `spirv-val` crashes); vkcl now refuses such
///   modules before validating them.
/// * `binary-initialiser-past-its-variable.bin`: a 64-bit constant
///   initialising a 32-bit program-scope variable was written past the
///   data segment.
/// * `il-required-group-size-overflow.spv`: a required work-group size
///   whose product passes 32 bits overflowed CL_KERNEL_WORK_GROUP_SIZE.
/// * `il-rspirv-panics-before-validation.spv`: a module rspirv's reader
///   panics on, which vkcl read before validating it (the check before the
///   validator now reads words only).
/// * `rewrite-vstore-half-of-a-pointer-crashes-validator.spv`,
///   `rewrite-vstore-half-of-a-label-crashes-validator.spv`: modules whose
///   `vstore_half_r`/`vstore_halfn` store a pointer or a label, on which
///   SPIRV-Tools' validator asserts; refused before validating now.
/// * `il-huge-alignment-and-group-size.spv`: an `Alignment` of 2^32 - 1 on
///   a `__constant` string made a module data segment of 4 GB (the process
///   grew by that much on NVIDIA's driver); its required work-group size of
///   8x128x128, which the target now asks a pipeline for, is refused.
/// * `binary-local-array-past-the-device.bin`,
///   `binary-local-array-of-4-gib.bin`: kernels whose `__local` arrays
///   (300 MB; 2^32 - 1 `uint`s, whose size the reflection dropped as
///   unknown) reached the driver as pipelines with more workgroup memory
///   than the device has (a validation error on NVIDIA's driver).
/// * `binary-private-array-of-2-64-rows.bin`: a private array of 2^64 - 1
///   rows, kept in place, crashed lavapipe's and NVIDIA's pipeline
///   compilers; private variables past 512 KiB per work-item fail the
///   build now.
/// * `source-clang-loops-in-error-recovery.bin`: a garbled source on which
///   clang 15's error recovery never ends (it prints one note again and
///   again); clBuildProgram waited for it for ever. Each compiler tool
///   now runs within a time limit (`VKCL_COMPILER_TIMEOUT`, 10 s in the
///   fuzz session) and the build fails with a log that says so.
#[test]
fn inputs_that_broke_vkcl() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inputs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&path).unwrap();
        match name.split('-').next().unwrap() {
            "il" => vkcl_fuzz::targets::il(&data),
            "binary" => vkcl_fuzz::targets::binary(&data),
            "rewrite" => vkcl_fuzz::targets::rewrite(&data),
            "options" => vkcl_fuzz::targets::options(&data),
            "source" => vkcl_fuzz::targets::source(&data),
            other => panic!("{name}: no target {other}"),
        }
    }
}
