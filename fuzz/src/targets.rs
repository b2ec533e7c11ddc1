//! The fuzz targets: one function of bytes per kind of input.

use std::ffi::{CString, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering};

use opencl_sys::*;
use vkcl::api::{kernel, program};
use vkcl::compiler::frontend::{Options, Purpose};
use vkcl::compiler::spirv as rewriter;
use vkcl::compiler::spirv::input::reflect;
use vkcl::core::device::Device;
use vkcl::core::kernel::Kernel;
use vkcl::core::object::Handle;

use crate::session::session;

/// What the cases of a run came to, for the report at the end of a run.
#[derive(Debug, Default)]
pub struct Tally {
    /// Inputs vkcl refused with an error code.
    pub rejected: AtomicU64,
    /// Programs that built (and kernels that became pipelines).
    pub built: AtomicU64,
    pub pipelines: AtomicU64,
    /// Valid modules whose rewrite failed (a construct vkcl does not
    /// handle, or a rewrite the validator refused).
    pub rewrite_refused: AtomicU64,
    pub rewrite_invalid: AtomicU64,
}

pub static TALLY: Tally = Tally {
    rejected: AtomicU64::new(0),
    built: AtomicU64::new(0),
    pipelines: AtomicU64::new(0),
    rewrite_refused: AtomicU64::new(0),
    rewrite_invalid: AtomicU64::new(0),
};

fn count(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Whether a rewritten module that fails validation stops the run
/// (`VKCL_FUZZ_STRICT=1`): such a module never reaches the driver, but it
/// shows a case the rewriter does not handle yet.
fn strict() -> bool {
    static STRICT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *STRICT.get_or_init(|| std::env::var("VKCL_FUZZ_STRICT").is_ok_and(|v| v == "1"))
}

/// Whether cases go as far as Vulkan pipelines (`VKCL_FUZZ_PIPELINES=0`
/// stops at shader modules, which is several times faster on lavapipe,
/// whose process grows by about 85 KB with every pipeline it compiles,
/// destroyed or not).
fn pipelines() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("VKCL_FUZZ_PIPELINES").map_or(true, |v| v != "0"))
}

/// Error codes a failed build may give (the specification's, for each
/// entry point's failures on bad programs).
const BUILD_ERRORS: &[cl_int] = &[
    CL_BUILD_PROGRAM_FAILURE,
    CL_COMPILE_PROGRAM_FAILURE,
    CL_LINK_PROGRAM_FAILURE,
    CL_INVALID_BUILD_OPTIONS,
    CL_INVALID_COMPILER_OPTIONS,
    CL_INVALID_LINKER_OPTIONS,
    CL_INVALID_OPERATION,
    CL_INVALID_BINARY,
];

/// The build log of `p` on the session's device.
fn build_log(p: cl_program) -> String {
    let s = session();
    let mut size = 0usize;
    // SAFETY: a valid program and device; the size out-pointer is valid.
    let r = unsafe {
        program::clGetProgramBuildInfo(p, s.device, CL_PROGRAM_BUILD_LOG, 0, null_mut(), &mut size)
    };
    assert_eq!(
        r, CL_SUCCESS,
        "clGetProgramBuildInfo(CL_PROGRAM_BUILD_LOG) size"
    );
    let mut buf = vec![0u8; size];
    // SAFETY: `buf` holds `size` bytes.
    let r = unsafe {
        program::clGetProgramBuildInfo(
            p,
            s.device,
            CL_PROGRAM_BUILD_LOG,
            size,
            buf.as_mut_ptr().cast(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS, "clGetProgramBuildInfo(CL_PROGRAM_BUILD_LOG)");
    assert_eq!(buf.last(), Some(&0), "the build log ends in a NUL");
    String::from_utf8_lossy(&buf[..size - 1]).into_owned()
}

/// Builds `p` with `options`; a failure must be a build error with a log
/// that says something. Whether it built.
fn build(p: cl_program, options: &[u8]) -> bool {
    let s = session();
    let options = CString::new(
        options
            .iter()
            .copied()
            .filter(|&b| b != 0)
            .collect::<Vec<u8>>(),
    )
    .expect("no NULs left");
    // SAFETY: a valid program, one valid device, a NUL-terminated string.
    let r = unsafe { program::clBuildProgram(p, 1, &s.device, options.as_ptr(), None, null_mut()) };
    if r == CL_SUCCESS {
        count(&TALLY.built);
        return true;
    }
    assert!(BUILD_ERRORS.contains(&r), "clBuildProgram gave {r}");
    count(&TALLY.rejected);
    if r == CL_BUILD_PROGRAM_FAILURE {
        let log = build_log(p);
        assert!(!log.trim().is_empty(), "a failed build without a log");
    }
    false
}

/// The kernels of a built program, each queried and compiled for the
/// device (a shader module, and with `pipeline` and unless turned off a
/// pipeline).
fn exercise_kernels(p: cl_program, pipeline: bool) {
    let s = session();
    let mut n = 0u32;
    // SAFETY: a valid program; the count out-pointer is valid.
    let r = unsafe { kernel::clCreateKernelsInProgram(p, 0, null_mut(), &mut n) };
    if r != CL_SUCCESS {
        // A library or object has no kernels to create.
        assert!(
            r == CL_INVALID_PROGRAM_EXECUTABLE,
            "clCreateKernelsInProgram gave {r}"
        );
        return;
    }
    let mut kernels = vec![null_mut(); n as usize];
    // SAFETY: room for `n` kernels.
    let r = unsafe { kernel::clCreateKernelsInProgram(p, n, kernels.as_mut_ptr(), null_mut()) };
    assert_eq!(r, CL_SUCCESS, "clCreateKernelsInProgram");
    let dev = Handle::<Device>::from_raw(s.device).expect("the session's device");
    for &k in &kernels {
        let mut args = 0u32;
        // SAFETY: a valid kernel; a cl_uint out-value.
        let r = unsafe {
            kernel::clGetKernelInfo(
                k,
                CL_KERNEL_NUM_ARGS,
                4,
                (&mut args as *mut u32).cast::<c_void>(),
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "clGetKernelInfo(CL_KERNEL_NUM_ARGS)");
        for a in 0..args {
            let mut q = 0u32;
            // SAFETY: as above; the answer is a 4-byte enum.
            let r = unsafe {
                kernel::clGetKernelArgInfo(
                    k,
                    a,
                    CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                    4,
                    (&mut q as *mut u32).cast::<c_void>(),
                    null_mut(),
                )
            };
            assert!(
                r == CL_SUCCESS || r == CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
                "clGetKernelArgInfo gave {r}"
            );
        }
        let mut wg = 0usize;
        // SAFETY: a valid kernel and device; a size_t out-value.
        let r = unsafe {
            kernel::clGetKernelWorkGroupInfo(
                k,
                s.device,
                CL_KERNEL_WORK_GROUP_SIZE,
                std::mem::size_of::<usize>(),
                (&mut wg as *mut usize).cast::<c_void>(),
                null_mut(),
            )
        };
        assert_eq!(
            r, CL_SUCCESS,
            "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)"
        );
        let core = Handle::<Kernel>::from_raw(k).expect("a kernel just made");
        let vk = dev.logical().expect("the device opens");
        // A built kernel is rewritten; the shader module (and pipeline)
        // may still fail where the device lacks a feature the kernel
        // needs, which enqueues report as CL_INVALID_OPERATION. The
        // pipeline's size is the kernel's required size where it has one,
        // as in an enqueue (beyond the device's limits, the pipeline is
        // CL_INVALID_WORK_GROUP_SIZE).
        let local = core.info.reqd_work_group_size.unwrap_or([1, 1, 1]);
        if let Ok(c) = core.compiled(&dev, &vk, false, false)
            && pipeline
            && pipelines()
            && c.pipeline(local, Vec::new()).is_ok()
        {
            count(&TALLY.pipelines);
        }
        // SAFETY: the kernel was created above and is released once.
        unsafe { kernel::clReleaseKernel(k) };
    }
}

/// SPIR-V IL (`clCreateProgramWithIL`), built and compiled.
pub fn il(data: &[u8]) {
    let s = session();
    let mut r = 0;
    // SAFETY: `data` is valid for its length.
    let p = unsafe {
        program::clCreateProgramWithIL(s.context, data.as_ptr().cast(), data.len(), &mut r)
    };
    if p.is_null() {
        assert_eq!(r, CL_INVALID_VALUE, "clCreateProgramWithIL gave {r}");
        count(&TALLY.rejected);
        return;
    }
    assert_eq!(r, CL_SUCCESS);
    if build(p, b"") {
        exercise_kernels(p, true);
    }
    // SAFETY: released once.
    unsafe { program::clReleaseProgram(p) };
}

/// A program binary (`clCreateProgramWithBinary`): its container read,
/// then built and compiled as a program from it.
pub fn binary(data: &[u8]) {
    let s = session();
    let mut status = 0;
    let mut r = 0;
    let len = data.len();
    let mut ptr = data.as_ptr();
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
    if p.is_null() {
        assert!(
            r == CL_INVALID_BINARY || r == CL_INVALID_VALUE,
            "clCreateProgramWithBinary gave {r}"
        );
        count(&TALLY.rejected);
        return;
    }
    assert_eq!(r, CL_SUCCESS);
    if build(p, b"") {
        exercise_kernels(p, true);
    }
    // SAFETY: released once.
    unsafe { program::clReleaseProgram(p) };
}

/// Build options, then an OpenCL C source: the first line of the input
/// is the options, the rest the source (`clCreateProgramWithSource`,
/// `clBuildProgram`).
pub fn source(data: &[u8]) {
    let s = session();
    let (options, text) = match data.iter().position(|&b| b == b'\n') {
        Some(k) => (&data[..k], &data[k + 1..]),
        None => (&[][..], data),
    };
    let len = text.len();
    let mut ptr = text.as_ptr().cast::<std::ffi::c_char>();
    let mut r = 0;
    // SAFETY: one string of `len` bytes (the length is given, so no NUL is
    // needed).
    let p = unsafe { program::clCreateProgramWithSource(s.context, 1, &mut ptr, &len, &mut r) };
    if p.is_null() {
        assert_eq!(r, CL_INVALID_VALUE, "clCreateProgramWithSource gave {r}");
        count(&TALLY.rejected);
        return;
    }
    if build(p, options) {
        exercise_kernels(p, true);
    }
    // SAFETY: released once.
    unsafe { program::clReleaseProgram(p) };
}

/// Build, compile and link options: parsed for each purpose, and given to
/// `clBuildProgram` for a small IL program (no compiler runs, and the
/// kernel stops at its shader module, so cases are fast).
pub fn options(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for purpose in [Purpose::Build, Purpose::Compile, Purpose::Link] {
        match Options::parse(&text, purpose) {
            Ok(o) => assert!(!o.cl_std.is_empty()),
            Err(e) => assert!(
                [
                    CL_INVALID_BUILD_OPTIONS,
                    CL_INVALID_COMPILER_OPTIONS,
                    CL_INVALID_LINKER_OPTIONS
                ]
                .contains(&e.0),
                "Options::parse gave {e:?}"
            ),
        }
    }
    let _ = rewriter::Options::from_build_options(&text);
    let s = session();
    let module = crate::seeds::small_module();
    let mut r = 0;
    // SAFETY: the module's bytes are valid for their length.
    let p = unsafe {
        program::clCreateProgramWithIL(s.context, module.as_ptr().cast(), module.len(), &mut r)
    };
    assert_eq!(r, CL_SUCCESS, "the small IL program");
    if build(p, data) {
        exercise_kernels(p, false);
    }
    // SAFETY: released once.
    unsafe { program::clReleaseProgram(p) };
}

/// The rewriter itself, without the driver: every kernel of a valid
/// OpenCL SPIR-V module rewritten for several devices and build options.
/// It must give a module the validator accepts or an error, never panic;
/// refused rewrites are counted (and stop the run under
/// `VKCL_FUZZ_STRICT=1` when the validator refused the rewrite).
pub fn rewrite(data: &[u8]) {
    let Some(words) = crate::mutate::to_words(data) else {
        return;
    };
    // vkcl rewrites only modules that validate (IL is checked on entry,
    // binaries as they are read, the front end's output is valid).
    if vkcl::compiler::link::validate(&words).is_err() {
        count(&TALLY.rejected);
        return;
    }
    let Ok(module) = reflect::load(&words) else {
        count(&TALLY.rejected);
        return;
    };
    let Ok(kernels) = reflect::kernels(&module) else {
        count(&TALLY.rejected);
        return;
    };
    let s = session();
    let plain = rewriter::Options::default();
    let relaxed = rewriter::Options::from_build_options("-cl-fast-relaxed-math");
    let single = rewriter::Options {
        single_work_item: true,
        ..plain
    };
    for k in kernels.iter().take(4) {
        for (caps, options) in [
            (&s.caps[0], plain),
            (&s.caps[0], single),
            (&s.caps[1], relaxed),
            (&s.caps[2], plain),
        ] {
            match rewriter::rewrite_with(&words, k, caps, options) {
                Ok(_) => count(&TALLY.built),
                Err(e) if e.starts_with("the rewritten module does not validate") => {
                    count(&TALLY.rewrite_invalid);
                    assert!(!strict(), "kernel {}: {e}", k.name);
                }
                Err(_) => count(&TALLY.rewrite_refused),
            }
        }
    }
}

/// Zeroes the counts.
pub fn reset() {
    for c in [
        &TALLY.rejected,
        &TALLY.built,
        &TALLY.pipelines,
        &TALLY.rewrite_refused,
        &TALLY.rewrite_invalid,
    ] {
        c.store(0, Ordering::Relaxed);
    }
}

/// A line for the end of a run.
pub fn summary() -> String {
    let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
    format!(
        "rejected {}, built {}, pipelines {}, rewrites refused {}, rewrites failing validation {}",
        g(&TALLY.rejected),
        g(&TALLY.built),
        g(&TALLY.pipelines),
        g(&TALLY.rewrite_refused),
        g(&TALLY.rewrite_invalid)
    )
}
