//! Seeds: the test suite's kernels (as sources, as SPIR-V and as program
//! binaries), the CTS's SPIR-V assembly where a CTS checkout is given,
//! and option strings.

use std::ffi::c_void;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::OnceLock;

use opencl_sys::*;
use spirv_tools::assembler::{Assembler, AssemblerOptions, compiled::CompiledAssembler};
use vkcl::api::program;

use crate::session::session;

/// The seeds of every target.
#[derive(Default)]
pub struct Seeds {
    /// OpenCL SPIR-V modules, in bytes.
    pub spirv: Vec<Vec<u8>>,
    /// vkcl program binaries.
    pub binaries: Vec<Vec<u8>>,
    /// An options line, then an OpenCL C source.
    pub sources: Vec<Vec<u8>>,
    pub options: Vec<Vec<u8>>,
}

/// Assembles SPIR-V text for SPIR-V 1.0 (or the version `env` names).
pub fn assemble(text: &str, env: spirv_tools::TargetEnv) -> Result<Vec<u32>, String> {
    CompiledAssembler::with_env(env)
        .assemble(text, AssemblerOptions::default())
        .map(|b| b.as_words().to_vec())
        .map_err(|e| e.to_string())
}

/// A small kernel (`out[i] = in[i] + 1`) for the options target.
pub fn small_module() -> &'static [u8] {
    static MODULE: OnceLock<Vec<u8>> = OnceLock::new();
    MODULE.get_or_init(|| {
        let words = assemble(
            "OpCapability Addresses\nOpCapability Kernel\nOpCapability Int64\n\
             OpMemoryModel Physical64 OpenCL\nOpEntryPoint Kernel %f \"add_one\" %gid\n\
             OpDecorate %gid BuiltIn GlobalInvocationId\nOpDecorate %gid Constant\n\
             %void = OpTypeVoid\n%uint = OpTypeInt 32 0\n%ulong = OpTypeInt 64 0\n\
             %v3 = OpTypeVector %ulong 3\n%pv3 = OpTypePointer Input %v3\n\
             %ptr = OpTypePointer CrossWorkgroup %uint\n%fn = OpTypeFunction %void %ptr %ptr\n\
             %c1 = OpConstant %uint 1\n%gid = OpVariable %pv3 Input\n\
             %f = OpFunction %void None %fn\n%in = OpFunctionParameter %ptr\n\
             %out = OpFunctionParameter %ptr\n%l = OpLabel\n%g = OpLoad %v3 %gid\n\
             %i = OpCompositeExtract %ulong %g 0\n\
             %pi = OpInBoundsPtrAccessChain %ptr %in %i\n%po = OpInBoundsPtrAccessChain %ptr %out %i\n\
             %v = OpLoad %uint %pi\n%w = OpIAdd %uint %v %c1\nOpStore %po %w\nOpReturn\n\
             OpFunctionEnd\n",
            spirv_tools::TargetEnv::Universal_1_0,
        )
        .expect("the small kernel assembles");
        crate::mutate::to_bytes(&words)
    })
}

const OPTIONS: &[&str] = &[
    "",
    "-cl-std=CL3.0",
    "-cl-std=CL1.2 -cl-opt-disable",
    "-cl-fast-relaxed-math",
    "-cl-mad-enable -cl-denorms-are-zero",
    "-cl-kernel-arg-info -DN=4 -D M=2",
    "-I include -w -Werror",
    "-cl-uniform-work-group-size -cl-no-subgroup-ifp",
    "-create-library -enable-link-options",
    "-cl-std=CL2.0 -cl-finite-math-only -cl-no-signed-zeros",
    "-DVALUE=\"a b\" -cl-single-precision-constant",
];

/// The program binary of a built program.
fn binary_of(p: cl_program) -> Option<Vec<u8>> {
    let mut size = 0usize;
    // SAFETY: one device's size; valid out-pointer.
    let r = unsafe {
        program::clGetProgramInfo(
            p,
            CL_PROGRAM_BINARY_SIZES,
            std::mem::size_of::<usize>(),
            (&mut size as *mut usize).cast::<c_void>(),
            null_mut(),
        )
    };
    if r != CL_SUCCESS || size == 0 {
        return None;
    }
    let mut buf = vec![0u8; size];
    let mut ptr = buf.as_mut_ptr();
    // SAFETY: one pointer to `size` bytes.
    let r = unsafe {
        program::clGetProgramInfo(
            p,
            CL_PROGRAM_BINARIES,
            std::mem::size_of::<*mut u8>(),
            (&mut ptr as *mut *mut u8).cast::<c_void>(),
            null_mut(),
        )
    };
    (r == CL_SUCCESS).then_some(buf)
}

/// Builds an OpenCL C source; its binary and SPIR-V when it builds.
fn compile(source: &str, options: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    let s = session();
    let mut ptr = source.as_ptr().cast::<std::ffi::c_char>();
    let len = source.len();
    let mut r = 0;
    // SAFETY: one string of `len` bytes.
    let p = unsafe { program::clCreateProgramWithSource(s.context, 1, &mut ptr, &len, &mut r) };
    if p.is_null() {
        return None;
    }
    let opts = std::ffi::CString::new(options).ok()?;
    // SAFETY: a valid program and device.
    let r = unsafe { program::clBuildProgram(p, 1, &s.device, opts.as_ptr(), None, null_mut()) };
    let out = (r == CL_SUCCESS)
        .then(|| binary_of(p))
        .flatten()
        .and_then(|b| {
            let build = vkcl::core::program::decode_binary(&b)?;
            let spirv = crate::mutate::to_bytes(build.spirv.as_deref()?);
            Some((b, spirv))
        });
    // SAFETY: released once.
    unsafe { program::clReleaseProgram(p) };
    out
}

impl Seeds {
    /// Seeds from the OpenCL C files in `kernels` (the test suite's), and
    /// the CTS's SPIR-V assembly under `cts` when given.
    pub fn gather(kernels: &Path, cts: Option<&Path>) -> Seeds {
        let mut seeds = Seeds {
            options: OPTIONS.iter().map(|o| o.as_bytes().to_vec()).collect(),
            ..Seeds::default()
        };
        seeds.spirv.push(small_module().to_vec());
        let mut files: Vec<_> = std::fs::read_dir(kernels)
            .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
            .unwrap_or_default();
        files.sort();
        for path in files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "cl"))
        {
            let Ok(source) = std::fs::read_to_string(path) else {
                continue;
            };
            for options in ["", "-cl-std=CL3.0"] {
                if let Some((binary, spirv)) = compile(&source, options) {
                    seeds.binaries.push(binary);
                    seeds.spirv.push(spirv);
                    seeds
                        .sources
                        .push(format!("{options}\n{source}").into_bytes());
                    break;
                }
            }
        }
        if let Some(cts) = cts {
            seeds.spirv.extend(cts_modules(cts));
        }
        seeds
    }
}

/// The CTS's 64-bit SPIR-V assembly (`test_conformance/spirv_new/
/// spirv_asm/*.spvasm64`), assembled.
fn cts_modules(cts: &Path) -> Vec<Vec<u8>> {
    let dir = cts.join("test_conformance/spirv_new/spirv_asm");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.sort();
    let mut out = Vec::new();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "spvasm64"))
    {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for env in [
            spirv_tools::TargetEnv::Universal_1_0,
            spirv_tools::TargetEnv::Universal_1_4,
        ] {
            if let Ok(words) = assemble(&text, env) {
                out.push(crate::mutate::to_bytes(&words));
                break;
            }
        }
    }
    out
}
