//! A device without a compiler, as phones and locked-down systems are:
//! vkcl finds no clang, llvm-spirv or spirv-link (the harness hides them,
//! see `environment`), says so in its device queries, refuses OpenCL C
//! with CL_COMPILER_NOT_AVAILABLE, and runs programs shipped as SPIR-V IL
//! or as vkcl program binaries.

mod common;

use std::ffi::{CString, c_void};
use std::path::PathBuf;

use common::*;
use opencl_sys::*;

both_ways!(
    il_and_binaries_run_without_a_compiler,
    modules_needing_more_than_the_device_has_are_refused
);

const SOURCE: &str =
    "kernel void triple(global uint *p) { size_t i = get_global_id(0); p[i] = p[i] * 3u + 1u; }";

/// SPIR-V IL for `SOURCE`, made as an application's build system would,
/// with the clang and llvm-spirv vkcl cannot see; `None` where the test
/// machine has none either. Made once for both ways of loading vkcl.
fn il() -> Option<&'static [u8]> {
    static IL: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    IL.get_or_init(|| make_il("spir64")).as_deref()
}

/// The same kernel as 32-bit SPIR-V, which no vkcl device runs (their
/// addresses are 64-bit).
fn il_32_bit() -> Option<&'static [u8]> {
    static IL: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    IL.get_or_init(|| make_il("spir")).as_deref()
}

/// `VKCL_TEST_IL_DIR`, when set, keeps the IL between runs: a file there is
/// used as it is, and IL made here is saved there. A run where the front end
/// cannot be started (the Windows build under Wine, which starts host
/// programs but cannot wait for them) takes the IL a host run saved.
fn make_il(target: &str) -> Option<Vec<u8>> {
    environment();
    let kept = std::env::var_os("VKCL_TEST_IL_DIR")
        .map(|d| PathBuf::from(d).join(format!("triple.{target}.spv")));
    if let Some(bytes) = kept.as_ref().and_then(|f| std::fs::read(f).ok()) {
        return Some(bytes);
    }
    let bytes = compile_il(target)?;
    if let Some(f) = kept {
        std::fs::create_dir_all(f.parent()?).ok()?;
        std::fs::write(f, &bytes).ok()?;
    }
    Some(bytes)
}

fn compile_il(target: &str) -> Option<Vec<u8>> {
    let found = std::env::var("VKCL_TEST_FRONT_END_DIR").ok()?;
    let (dir, n) = found.rsplit_once(':')?;
    let dir = PathBuf::from(dir);
    let work =
        std::env::temp_dir().join(format!("vkcl-no-compiler-{target}-{}", std::process::id()));
    std::fs::create_dir_all(&work).ok()?;
    std::fs::write(work.join("k.cl"), SOURCE).ok()?;
    // The files are named relative to the folder the tools run in: under
    // Wine they are host programs, which read host paths.
    let clang = std::process::Command::new(dir.join(format!("clang-{n}")))
        .current_dir(&work)
        .args([
            "-c",
            "-cl-std=CL1.2",
            "-target",
            &format!("{target}-unknown-unknown"),
            "-emit-llvm",
        ])
        .args(["-Xclang", "-finclude-default-header", "-O2"])
        .args(["-o", "k.bc", "k.cl"])
        .status()
        .ok()?;
    assert!(clang.success(), "clang-{n} failed");
    let spirv = std::process::Command::new(dir.join(format!("llvm-spirv-{n}")))
        .current_dir(&work)
        .args(["k.bc", "-o", "k.spv"])
        .status()
        .ok()?;
    assert!(spirv.success(), "llvm-spirv-{n} failed");
    let bytes = std::fs::read(work.join("k.spv")).ok();
    let _ = std::fs::remove_dir_all(&work);
    bytes
}

/// Builds `p` (made from IL or a binary), runs `triple` over 64 words and
/// checks them.
fn build_and_run(cl: &Cl, s: &Setup, p: cl_program) {
    let d = cl.device();
    let r =
        unsafe { cl.clBuildProgram.unwrap()(p, 1, &d, c"".as_ptr(), None, std::ptr::null_mut()) };
    assert_eq!(r, CL_SUCCESS, "{}: build", cl.how);
    let mut err = 1;
    let k = unsafe { cl.clCreateKernel.unwrap()(p, c"triple".as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let data: Vec<u32> = (0..64).collect();
    let b = cl.buffer(
        s.c,
        CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
        256,
        data.as_ptr() as *mut c_void,
    );
    s.arg(k, 0, &b);
    let global = 64usize;
    let r = unsafe {
        cl.clEnqueueNDRangeKernel.unwrap()(
            s.q,
            k,
            1,
            std::ptr::null(),
            &global,
            std::ptr::null(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    let got: Vec<u32> = cl.read(s.q, b, 0, 256).chunks(4).map(u32_of).collect();
    let want: Vec<u32> = data.iter().map(|v| v * 3 + 1).collect();
    assert_eq!(got, want, "{}", cl.how);
    unsafe {
        cl.clReleaseMemObject.unwrap()(b);
        cl.clReleaseKernel.unwrap()(k);
    }
}

fn il_and_binaries_run_without_a_compiler(cl: &Cl) {
    let d = cl.device();
    let flag = |param| u32_of(&cl.device_bytes(d, param).unwrap());
    assert_eq!(flag(CL_DEVICE_COMPILER_AVAILABLE), CL_FALSE, "{}", cl.how);
    assert_eq!(flag(CL_DEVICE_LINKER_AVAILABLE), CL_FALSE, "{}", cl.how);
    let s = Setup::new(cl);
    let mut err = 1;

    // OpenCL C cannot be built here.
    let src = CString::new(SOURCE).unwrap();
    let mut ptr = src.as_ptr();
    let from_source = unsafe {
        cl.clCreateProgramWithSource.unwrap()(s.c, 1, &mut ptr, std::ptr::null(), &mut err)
    };
    assert_eq!(err, CL_SUCCESS);
    let r = unsafe {
        cl.clBuildProgram.unwrap()(from_source, 1, &d, c"".as_ptr(), None, std::ptr::null_mut())
    };
    assert_eq!(r, CL_COMPILER_NOT_AVAILABLE, "{}", cl.how);
    unsafe { cl.clReleaseProgram.unwrap()(from_source) };

    let Some(il) = il() else {
        eprintln!("no clang-N with llvm-spirv-N on this machine: the IL part is skipped");
        return;
    };
    // SPIR-V IL runs.
    let from_il =
        unsafe { cl.clCreateProgramWithIL.unwrap()(s.c, il.as_ptr().cast(), il.len(), &mut err) };
    assert_eq!(err, CL_SUCCESS, "{}", cl.how);
    build_and_run(cl, &s, from_il);

    // Its program binary, loaded again, runs too.
    let size = usize_of(
        &query(|n, v, r| unsafe {
            cl.clGetProgramInfo.unwrap()(from_il, CL_PROGRAM_BINARY_SIZES, n, v, r)
        })
        .unwrap(),
    );
    assert!(size > 0);
    let mut binary = vec![0u8; size];
    let mut slot = binary.as_mut_ptr();
    let r = unsafe {
        cl.clGetProgramInfo.unwrap()(
            from_il,
            CL_PROGRAM_BINARIES,
            std::mem::size_of::<*mut u8>(),
            (&mut slot as *mut *mut u8).cast(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    let mut status = 1;
    let mut bin_ptr: *const u8 = binary.as_ptr();
    let from_binary = unsafe {
        cl.clCreateProgramWithBinary.unwrap()(
            s.c,
            1,
            &d,
            &size,
            &mut bin_ptr,
            &mut status,
            &mut err,
        )
    };
    assert_eq!((err, status), (CL_SUCCESS, CL_SUCCESS), "{}", cl.how);
    build_and_run(cl, &s, from_binary);
    unsafe {
        cl.clReleaseProgram.unwrap()(from_il);
        cl.clReleaseProgram.unwrap()(from_binary);
    }
}

/// A vkcl program binary holding `spirv` as an executable, written as
/// vkcl writes them (magic, format 1, type, argument names kept, options,
/// the words, an FNV-1a checksum): a binary made by some other build.
fn binary_around(spirv: &[u8]) -> Vec<u8> {
    let mut out = b"VKCLBIN\0".to_vec();
    for v in [
        1,
        CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
        0,
        0,
        spirv.len() as u32 / 4,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(spirv);
    let sum = out.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    });
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// A module asking for what the device lacks (here 32-bit addresses) fails
/// to build from IL with a log that says why, and as a program binary is
/// refused with CL_INVALID_BINARY for that device; the same container
/// around a module the device can run loads.
fn modules_needing_more_than_the_device_has_are_refused(cl: &Cl) {
    let (Some(il32), Some(il64)) = (il_32_bit(), il()) else {
        eprintln!("no clang-N with llvm-spirv-N on this machine: skipped");
        return;
    };
    let d = cl.device();
    let s = Setup::new(cl);
    let mut err = 1;
    let from_il = unsafe {
        cl.clCreateProgramWithIL.unwrap()(s.c, il32.as_ptr().cast(), il32.len(), &mut err)
    };
    assert_eq!(err, CL_SUCCESS, "{}", cl.how);
    let r = unsafe {
        cl.clBuildProgram.unwrap()(from_il, 1, &d, c"".as_ptr(), None, std::ptr::null_mut())
    };
    assert_eq!(r, CL_BUILD_PROGRAM_FAILURE, "{}", cl.how);
    let log = c_string(
        &query(|n, v, r| unsafe {
            cl.clGetProgramBuildInfo.unwrap()(from_il, d, CL_PROGRAM_BUILD_LOG, n, v, r)
        })
        .unwrap(),
    );
    assert!(log.contains("32-bit addresses"), "{}: log {log:?}", cl.how);
    unsafe { cl.clReleaseProgram.unwrap()(from_il) };

    for (module, want) in [(il32, CL_INVALID_BINARY), (il64, CL_SUCCESS)] {
        let binary = binary_around(module);
        let mut status = 1;
        let mut ptr: *const u8 = binary.as_ptr();
        let p = unsafe {
            cl.clCreateProgramWithBinary.unwrap()(
                s.c,
                1,
                &d,
                &binary.len(),
                &mut ptr,
                &mut status,
                &mut err,
            )
        };
        assert_eq!((err, status), (want, want), "{}", cl.how);
        if want == CL_SUCCESS {
            build_and_run(cl, &s, p);
            unsafe { cl.clReleaseProgram.unwrap()(p) };
        } else {
            assert!(p.is_null());
        }
    }
}
