//! Programs and kernel objects: creation from source, SPIR-V and binaries;
//! build, compile and link with their options, logs and queries; the
//! preprocessor's view of the device; kernel objects, their arguments and
//! queries, through the ICD loader and directly.
//!
//! Expected codes are those of the OpenCL 3.0 API specification. SPIR-V for
//! clCreateProgramWithIL is assembled here with `spirv-as` (SPIRV-Tools).

mod common;

use std::ffi::{CString, c_char, c_void};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use common::*;
use opencl_sys::*;

both_ways!(
    objects_released_as_the_process_exits,
    binaries_of_llvm_spirv_quirks_load,
    // clCreateProgramWithSource, clBuildProgram and program queries
    source_strings_and_lengths,
    source_arguments_are_checked,
    build_and_query,
    syntax_error_fails_with_log,
    unknown_options_are_rejected,
    defines_and_include_directories,
    include_directories_are_read_at_each_build,
    language_version_macros,
    device_feature_macros,
    asynchronous_build,
    // clCompileProgram and clLinkProgram
    compile_with_embedded_headers_and_link,
    link_a_library,
    link_objects_of_different_spirv_versions,
    unresolved_link_fails_with_log,
    kernels_and_variables_defined_twice_fail_to_link,
    inline_functions_clang_does_not_inline,
    unrunnable_kernels_fail_the_build,
    inline_assembly_fails_the_build,
    compile_needs_source_or_il,
    // Program binaries
    binaries_round_trip,
    optimised_code_round_trips,
    executables_keep_what_kernels_call,
    damaged_binaries_are_rejected,
    same_source_same_binary,
    // clCreateProgramWithIL
    program_from_il,
    malformed_il_is_rejected,
    specialization_constants,
    il_from_older_translators,
    // Kernel objects
    create_kernel_errors,
    kernels_in_program,
    kernel_info,
    kernel_arg_info,
    kernel_arg_info_needs_option,
    set_kernel_arg_checks,
    work_group_info,
    local_mem_size_counts_local_variables,
    clone_kernel,
    rebuild_with_kernels_attached,
    enqueue_errors,
);

// ---------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------

/// A kernel that stores `value` at `out[0]`.
const STORE: &str = "kernel void store(global int* out, int value) { out[0] = value; }\n";

/// clBuildProgram for all devices, synchronously.
fn build(cl: &Cl, p: cl_program, options: &str) -> cl_int {
    let opts = CString::new(options).unwrap();
    unsafe { cl.clBuildProgram.unwrap()(p, 0, null(), opts.as_ptr(), None, null_mut()) }
}

/// A program built from `src`, which must succeed.
fn built(cl: &Cl, c: cl_context, src: &str, options: &str) -> cl_program {
    let p = with_source(cl, c, src);
    let r = build(cl, p, options);
    assert_eq!(r, CL_SUCCESS, "{}: build log: {}", cl.how, build_log(cl, p));
    p
}

fn program_info(cl: &Cl, p: cl_program, param: cl_program_info) -> Result<Vec<u8>, cl_int> {
    query(|size, value, size_ret| unsafe {
        cl.clGetProgramInfo.unwrap()(p, param, size, value, size_ret)
    })
}

fn build_info(cl: &Cl, p: cl_program, param: cl_program_build_info) -> Result<Vec<u8>, cl_int> {
    let d = cl.device();
    query(|size, value, size_ret| unsafe {
        cl.clGetProgramBuildInfo.unwrap()(p, d, param, size, value, size_ret)
    })
}

fn build_status(cl: &Cl, p: cl_program) -> cl_build_status {
    u32_of(&build_info(cl, p, CL_PROGRAM_BUILD_STATUS).unwrap()) as cl_build_status
}

fn build_log(cl: &Cl, p: cl_program) -> String {
    c_string(&build_info(cl, p, CL_PROGRAM_BUILD_LOG).unwrap())
}

fn binary_type(cl: &Cl, p: cl_program) -> cl_program_binary_type {
    u32_of(&build_info(cl, p, CL_PROGRAM_BINARY_TYPE).unwrap())
}

/// CL_PROGRAM_KERNEL_NAMES, sorted (the order is unspecified).
fn kernel_names(cl: &Cl, p: cl_program) -> Result<Vec<String>, cl_int> {
    let s = c_string(&program_info(cl, p, CL_PROGRAM_KERNEL_NAMES)?);
    let mut v: Vec<String> = s
        .split(';')
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    v.sort();
    Ok(v)
}

fn num_kernels(cl: &Cl, p: cl_program) -> Result<usize, cl_int> {
    program_info(cl, p, CL_PROGRAM_NUM_KERNELS).map(|b| usize_of(&b))
}

/// A sorted list of names, to compare with [`kernel_names`].
fn names(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

fn release_program(cl: &Cl, p: cl_program) {
    assert_eq!(unsafe { cl.clReleaseProgram.unwrap()(p) }, CL_SUCCESS);
}

fn release_kernel(cl: &Cl, k: cl_kernel) {
    assert_eq!(unsafe { cl.clReleaseKernel.unwrap()(k) }, CL_SUCCESS);
}

fn release_mem(cl: &Cl, m: cl_mem) {
    assert_eq!(unsafe { cl.clReleaseMemObject.unwrap()(m) }, CL_SUCCESS);
}

fn release_context(cl: &Cl, c: cl_context) {
    assert_eq!(unsafe { cl.clReleaseContext.unwrap()(c) }, CL_SUCCESS);
}

fn kernel_info_bytes(cl: &Cl, k: cl_kernel, param: cl_kernel_info) -> Result<Vec<u8>, cl_int> {
    query(|size, value, size_ret| unsafe {
        cl.clGetKernelInfo.unwrap()(k, param, size, value, size_ret)
    })
}

fn arg_info(
    cl: &Cl,
    k: cl_kernel,
    index: u32,
    param: cl_kernel_arg_info,
) -> Result<Vec<u8>, cl_int> {
    query(|size, value, size_ret| unsafe {
        cl.clGetKernelArgInfo.unwrap()(k, index, param, size, value, size_ret)
    })
}

fn work_group_bytes(
    cl: &Cl,
    k: cl_kernel,
    d: cl_device_id,
    param: cl_kernel_work_group_info,
) -> Result<Vec<u8>, cl_int> {
    query(|size, value, size_ret| unsafe {
        cl.clGetKernelWorkGroupInfo.unwrap()(k, d, param, size, value, size_ret)
    })
}

/// clSetKernelArg with a value of type `T`.
fn set_arg<T>(cl: &Cl, k: cl_kernel, index: u32, value: &T) -> cl_int {
    unsafe {
        cl.clSetKernelArg.unwrap()(
            k,
            index,
            std::mem::size_of::<T>(),
            (value as *const T).cast(),
        )
    }
}

/// clSetKernelArg with an explicit size and pointer.
fn set_arg_raw(cl: &Cl, k: cl_kernel, index: u32, size: usize, value: *const c_void) -> cl_int {
    unsafe { cl.clSetKernelArg.unwrap()(k, index, size, value) }
}

/// Runs `k` (whose arguments other than 0 are set) as a single work-item
/// with a fresh 4-byte buffer as argument 0, and returns what it stored.
fn run_single(cl: &Cl, c: cl_context, k: cl_kernel) -> i32 {
    let q = cl.queue(c, 0);
    let mut init = [0u8; 4];
    let b = cl.buffer(
        c,
        CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
        4,
        init.as_mut_ptr().cast(),
    );
    assert_eq!(set_arg(cl, k, 0, &b), CL_SUCCESS);
    let one = [1usize];
    let r = unsafe {
        cl.clEnqueueNDRangeKernel.unwrap()(
            q,
            k,
            1,
            null(),
            one.as_ptr(),
            one.as_ptr(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS, "{}: clEnqueueNDRangeKernel", cl.how);
    let out = cl.read(q, b, 0, 4);
    release_mem(cl, b);
    assert_eq!(unsafe { cl.clReleaseCommandQueue.unwrap()(q) }, CL_SUCCESS);
    i32::from_ne_bytes(out.try_into().unwrap())
}

/// CL_PROGRAM_BINARIES, one per device, read the two-call way.
fn binaries(cl: &Cl, p: cl_program) -> Vec<Vec<u8>> {
    let sizes: Vec<usize> = program_info(cl, p, CL_PROGRAM_BINARY_SIZES)
        .unwrap()
        .chunks_exact(std::mem::size_of::<usize>())
        .map(usize_of)
        .collect();
    let get = cl.clGetProgramInfo.unwrap();
    let ptr_bytes = sizes.len() * std::mem::size_of::<*mut u8>();
    let mut size_ret = 0;
    let r = unsafe { get(p, CL_PROGRAM_BINARIES, 0, null_mut(), &mut size_ret) };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(size_ret, ptr_bytes, "one pointer per device");
    let mut bins: Vec<Vec<u8>> = sizes.iter().map(|&s| vec![0u8; s]).collect();
    let mut ptrs: Vec<*mut u8> = bins.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let r = unsafe {
        get(
            p,
            CL_PROGRAM_BINARIES,
            ptr_bytes,
            ptrs.as_mut_ptr().cast(),
            &mut size_ret,
        )
    };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(size_ret, ptr_bytes);
    bins
}

/// clCreateProgramWithBinary for the default device: the program or the
/// error, and the binary status.
fn with_binary(cl: &Cl, c: cl_context, bin: &[u8]) -> (Result<cl_program, cl_int>, cl_int) {
    let d = cl.device();
    let len = bin.len();
    let mut ptr = bin.as_ptr();
    let mut status = 1;
    let mut err = 1;
    let p = unsafe {
        cl.clCreateProgramWithBinary.unwrap()(c, 1, &d, &len, &mut ptr, &mut status, &mut err)
    };
    if err == CL_SUCCESS {
        assert!(!p.is_null());
        (Ok(p), status)
    } else {
        assert!(
            p.is_null(),
            "a failed clCreateProgramWithBinary returns null"
        );
        (Err(err), status)
    }
}

/// clCompileProgram for all devices with embedded headers (program,
/// include name), synchronously.
fn compile(cl: &Cl, p: cl_program, options: &str, headers: &[(cl_program, &str)]) -> cl_int {
    let opts = CString::new(options).unwrap();
    let programs: Vec<cl_program> = headers.iter().map(|h| h.0).collect();
    let include_names: Vec<CString> = headers.iter().map(|h| CString::new(h.1).unwrap()).collect();
    let mut name_ptrs: Vec<*const c_char> = include_names.iter().map(|n| n.as_ptr()).collect();
    let (hp, np) = if headers.is_empty() {
        (null(), null_mut())
    } else {
        (programs.as_ptr(), name_ptrs.as_mut_ptr())
    };
    unsafe {
        cl.clCompileProgram.unwrap()(
            p,
            0,
            null(),
            opts.as_ptr(),
            headers.len() as cl_uint,
            hp,
            np,
            None,
            null_mut(),
        )
    }
}

/// A program compiled (not linked) from `src`, which must succeed.
fn compiled(cl: &Cl, c: cl_context, src: &str) -> cl_program {
    let p = with_source(cl, c, src);
    let r = compile(cl, p, "", &[]);
    assert_eq!(
        r,
        CL_SUCCESS,
        "{}: compile log: {}",
        cl.how,
        build_log(cl, p)
    );
    p
}

/// clLinkProgram for all devices, synchronously: the program (possibly
/// null) and the error code.
fn link(cl: &Cl, c: cl_context, options: &str, inputs: &[cl_program]) -> (cl_program, cl_int) {
    let opts = CString::new(options).unwrap();
    let mut err = 1;
    let p = unsafe {
        cl.clLinkProgram.unwrap()(
            c,
            0,
            null(),
            opts.as_ptr(),
            inputs.len() as cl_uint,
            inputs.as_ptr(),
            None,
            null_mut(),
            &mut err,
        )
    };
    (p, err)
}

/// Which of the preprocessor conditions hold when building with
/// `options`: each selects the name of one kernel.
fn conditions(cl: &Cl, c: cl_context, options: &str, conds: &[&str]) -> Vec<bool> {
    let mut src = String::new();
    for (i, cond) in conds.iter().enumerate() {
        src.push_str(&format!(
            "#if {cond}\nkernel void cond{i}_yes(global int* o) {{ o[0] = 1; }}\n\
             #else\nkernel void cond{i}_no(global int* o) {{ o[0] = 0; }}\n#endif\n"
        ));
    }
    let p = built(cl, c, &src, options);
    let got = kernel_names(cl, p).unwrap();
    release_program(cl, p);
    (0..conds.len())
        .map(|i| {
            let yes = got.contains(&format!("cond{i}_yes"));
            let no = got.contains(&format!("cond{i}_no"));
            assert!(yes != no, "exactly one of cond{i}_yes/no in {got:?}");
            yes
        })
        .collect()
}

/// A fresh directory under the system's temporary directory, removed
/// when dropped (also when a test fails).
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(tag: &str) -> ScratchDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "vkcl-programs-test-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// SPIR-V 1.0 for an OpenCL kernel `il_store(global uint* out, uint
/// value)` that stores `value` at `out[0]`.
const IL_STORE: &str = r#"
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %fn "il_store"
               OpName %out "out"
               OpName %value "value"
       %void = OpTypeVoid
       %uint = OpTypeInt 32 0
        %ptr = OpTypePointer CrossWorkgroup %uint
        %fty = OpTypeFunction %void %ptr %uint
         %fn = OpFunction %void None %fty
        %out = OpFunctionParameter %ptr
      %value = OpFunctionParameter %uint
      %entry = OpLabel
               OpStore %out %value Aligned 4
               OpReturn
               OpFunctionEnd
"#;

/// out[i] = flag ? value + 100 : value, with `value` (SpecId 7, default 5)
/// and `flag` (SpecId 8, default false) specialization constants.
const SPECIALIZED: &str = r#"
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k" %gid
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %gid Constant
               OpDecorate %value SpecId 7
               OpDecorate %flag SpecId 8
       %void = OpTypeVoid
       %uint = OpTypeInt 32 0
      %ulong = OpTypeInt 64 0
       %bool = OpTypeBool
    %v3ulong = OpTypeVector %ulong 3
        %pin = OpTypePointer Input %v3ulong
        %pgl = OpTypePointer CrossWorkgroup %uint
         %fn = OpTypeFunction %void %pgl
      %value = OpSpecConstant %uint 5
       %flag = OpSpecConstantFalse %bool
   %uint_100 = OpConstant %uint 100
        %gid = OpVariable %pin Input
          %k = OpFunction %void None %fn
        %out = OpFunctionParameter %pgl
      %entry = OpLabel
        %ids = OpLoad %v3ulong %gid Aligned 32
          %i = OpCompositeExtract %ulong %ids 0
          %p = OpInBoundsPtrAccessChain %pgl %out %i
       %more = OpIAdd %uint %value %uint_100
     %result = OpSelect %uint %flag %more %value
               OpStore %p %result Aligned 4
               OpReturn
               OpFunctionEnd
"#;

fn specialization_constants(cl: &Cl) {
    let mut s = Setup::new(cl);
    let il = assemble(SPECIALIZED);
    let run = |s: &mut Setup, values: &[(u32, &[u8])]| -> Result<u32, cl_int> {
        let p = with_il(cl, s.c, &il).unwrap();
        for &(id, v) in values {
            let r = unsafe {
                cl.clSetProgramSpecializationConstant.unwrap()(p, id, v.len(), v.as_ptr().cast())
            };
            if r != CL_SUCCESS {
                unsafe { cl.clReleaseProgram.unwrap()(p) };
                return Err(r);
            }
        }
        let d = cl.device();
        let r = unsafe {
            cl.clBuildProgram.unwrap()(p, 1, &d, c"".as_ptr(), None, std::ptr::null_mut())
        };
        assert_eq!(r, CL_SUCCESS);
        let mut e = 0;
        let k = unsafe { cl.clCreateKernel.unwrap()(p, c"k".as_ptr(), &mut e) };
        assert_eq!(e, CL_SUCCESS);
        let out = s.buffer(16);
        s.arg(k, 0, &out);
        s.run(k, &[4], None, None);
        let got = u32_of(&cl.read(s.q, out, 12, 4));
        unsafe {
            cl.clReleaseKernel.unwrap()(k);
            cl.clReleaseProgram.unwrap()(p);
        }
        Ok(got)
    };
    assert_eq!(run(&mut s, &[]), Ok(5), "{}: defaults", cl.how);
    assert_eq!(run(&mut s, &[(7, &42u32.to_le_bytes())]), Ok(42));
    assert_eq!(
        run(&mut s, &[(7, &42u32.to_le_bytes()), (8, &[1])]),
        Ok(142)
    );
    assert_eq!(run(&mut s, &[(9, &[1])]), Err(CL_INVALID_SPEC_ID));
    assert_eq!(run(&mut s, &[(7, &[1, 2])]), Err(CL_INVALID_VALUE));
    // Only IL programs have specialization constants.
    let src = c"__kernel void k(__global int *p) { p[0] = 1; }";
    let (mut e, mut text) = (0, src.as_ptr());
    let p = unsafe {
        cl.clCreateProgramWithSource.unwrap()(s.c, 1, &mut text, std::ptr::null(), &mut e)
    };
    let r = unsafe {
        cl.clSetProgramSpecializationConstant.unwrap()(p, 7, 4, [0u8; 4].as_ptr().cast())
    };
    assert_eq!(r, CL_INVALID_PROGRAM);
    unsafe { cl.clReleaseProgram.unwrap()(p) };
}

/// The shape older SPIR-V translators give kernels: built-in variables in
/// UniformConstant (one loaded whole, one through an access chain), imported
/// by linkage, and a decoration group. out[gid] = gid * 10 + lid.
const OLDER_TRANSLATOR: &str = r#"
               OpCapability Addresses
               OpCapability Linkage
               OpCapability Kernel
               OpCapability Int64
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "older"
               OpDecorate %group FuncParamAttr NoCapture
      %group = OpDecorationGroup
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %gid Constant
               OpDecorate %gid LinkageAttributes "__spirv_BuiltInGlobalInvocationId" Import
               OpDecorate %lid BuiltIn LocalInvocationId
               OpDecorate %lid Constant
               OpDecorate %lid LinkageAttributes "__spirv_BuiltInLocalInvocationId" Import
               OpGroupDecorate %group %out
      %ulong = OpTypeInt 64 0
       %uint = OpTypeInt 32 0
    %uint_0 = OpConstant %uint 0
   %ulong_10 = OpConstant %ulong 10
    %v3ulong = OpTypeVector %ulong 3
        %puc = OpTypePointer UniformConstant %v3ulong
       %pucl = OpTypePointer UniformConstant %ulong
       %void = OpTypeVoid
        %pgl = OpTypePointer CrossWorkgroup %ulong
         %fn = OpTypeFunction %void %pgl
        %gid = OpVariable %puc UniformConstant
        %lid = OpVariable %puc UniformConstant
          %k = OpFunction %void None %fn
        %out = OpFunctionParameter %pgl
      %entry = OpLabel
        %ids = OpLoad %v3ulong %gid
          %i = OpCompositeExtract %ulong %ids 0
         %lp = OpInBoundsAccessChain %pucl %lid %uint_0
          %l = OpLoad %ulong %lp
        %i10 = OpIMul %ulong %i %ulong_10
          %v = OpIAdd %ulong %i10 %l
          %p = OpInBoundsPtrAccessChain %pgl %out %i
               OpStore %p %v Aligned 8
               OpReturn
               OpFunctionEnd
"#;

fn il_from_older_translators(cl: &Cl) {
    let mut s = Setup::new(cl);
    let p = with_il(cl, s.c, &assemble(OLDER_TRANSLATOR)).unwrap();
    assert_eq!(
        build(cl, p, ""),
        CL_SUCCESS,
        "{}: {}",
        cl.how,
        build_log(cl, p)
    );
    let mut e = 0;
    let k = unsafe { cl.clCreateKernel.unwrap()(p, c"older".as_ptr(), &mut e) };
    assert_eq!(e, CL_SUCCESS);
    let out = s.zeroed(8 * 8);
    s.arg(k, 0, &out);
    s.run(k, &[8], Some(&[4]), None);
    let got: Vec<u64> = cl
        .read(s.q, out, 0, 64)
        .chunks_exact(8)
        .map(u64_of)
        .collect();
    let want: Vec<u64> = (0..8).map(|i| i * 10 + i % 4).collect();
    assert_eq!(got, want, "{}", cl.how);
    unsafe {
        cl.clReleaseKernel.unwrap()(k);
        cl.clReleaseProgram.unwrap()(p);
    }
}

/// Assembles SPIR-V text with spirv-as for SPIR-V 1.0.
fn assemble(text: &str) -> Vec<u8> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("spirv-as")
        .args(["--target-env", "spv1.0", "-o", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spirv-as (package spirv-tools)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "spirv-as: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(&out.stdout[..4], &0x0723_0203u32.to_le_bytes());
    out.stdout
}

/// clCreateProgramWithIL; on failure the handle must be null.
fn with_il(cl: &Cl, c: cl_context, il: &[u8]) -> Result<cl_program, cl_int> {
    let mut err = 1;
    let p = unsafe { cl.clCreateProgramWithIL.unwrap()(c, il.as_ptr().cast(), il.len(), &mut err) };
    if err == CL_SUCCESS {
        assert!(!p.is_null());
        Ok(p)
    } else {
        assert!(p.is_null(), "a failed clCreateProgramWithIL returns null");
        Err(err)
    }
}

// ---------------------------------------------------------------------
// clCreateProgramWithSource, clBuildProgram and program queries
// ---------------------------------------------------------------------

fn source_strings_and_lengths(cl: &Cl) {
    let c = cl.context();
    // The first string has an explicit length and trailing junk that is not
    // part of the source; the second is NUL-terminated (length 0); the
    // third's lengths entry is its exact length.
    let first = "kernel void first(global int* o) { o[0] = 1; }\n#error junk";
    let first_len = first.find('#').unwrap();
    let second = CString::new("kernel void second(global int* o) { o[0] = 2; }\n").unwrap();
    let third = "kernel void third(global int* o) { o[0] = 3; }\n";
    let mut strings: [*const c_char; 3] = [
        first.as_ptr().cast(),
        second.as_ptr(),
        third.as_ptr().cast(),
    ];
    let lengths = [first_len, 0, third.len()];
    let mut err = 1;
    let p = unsafe {
        cl.clCreateProgramWithSource.unwrap()(
            c,
            3,
            strings.as_mut_ptr(),
            lengths.as_ptr(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS);
    let want = format!("{}{}{third}", &first[..first_len], second.to_str().unwrap());
    assert_eq!(
        c_string(&program_info(cl, p, CL_PROGRAM_SOURCE).unwrap()),
        want,
        "CL_PROGRAM_SOURCE is the concatenation"
    );
    assert_eq!(
        usize_of(&program_info(cl, p, CL_PROGRAM_CONTEXT).unwrap()),
        c as usize
    );
    assert_eq!(
        u32_of(&program_info(cl, p, CL_PROGRAM_NUM_DEVICES).unwrap()),
        1
    );
    assert_eq!(
        usize_of(&program_info(cl, p, CL_PROGRAM_DEVICES).unwrap()),
        cl.device() as usize
    );
    assert_eq!(
        u32_of(&program_info(cl, p, CL_PROGRAM_REFERENCE_COUNT).unwrap()),
        1
    );
    assert_eq!(
        program_info(cl, p, CL_PROGRAM_IL).unwrap(),
        Vec::<u8>::new(),
        "no IL for a source program"
    );
    assert_eq!(build(cl, p, ""), CL_SUCCESS, "{}", build_log(cl, p));
    assert_eq!(
        kernel_names(cl, p).unwrap(),
        names(&["first", "second", "third"])
    );
    release_program(cl, p);

    // Every length NULL: all strings NUL-terminated.
    let a = CString::new("kernel void a(global int* o) { o[0] = 1; }\n").unwrap();
    let b = CString::new("kernel void b(global int* o) { o[0] = 2; }\n").unwrap();
    let mut strings = [a.as_ptr(), b.as_ptr()];
    let p = unsafe {
        cl.clCreateProgramWithSource.unwrap()(c, 2, strings.as_mut_ptr(), null(), &mut err)
    };
    assert_eq!(err, CL_SUCCESS);
    assert_eq!(
        c_string(&program_info(cl, p, CL_PROGRAM_SOURCE).unwrap()),
        format!("{}{}", a.to_str().unwrap(), b.to_str().unwrap())
    );
    assert_eq!(build(cl, p, ""), CL_SUCCESS);
    assert_eq!(kernel_names(cl, p).unwrap(), names(&["a", "b"]));
    release_program(cl, p);
    release_context(cl, c);
}

fn source_arguments_are_checked(cl: &Cl) {
    let c = cl.context();
    let create = cl.clCreateProgramWithSource.unwrap();
    let s = CString::new(STORE).unwrap();
    let mut err = 1;
    unsafe {
        let mut one = [s.as_ptr()];
        assert!(create(c, 0, one.as_mut_ptr(), null(), &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE, "count 0");
        assert!(create(c, 1, null_mut(), null(), &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE, "strings NULL");
        let mut with_null = [s.as_ptr(), null()];
        assert!(create(c, 2, with_null.as_mut_ptr(), null(), &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE, "a NULL string");
        // errcode_ret may be NULL.
        let p = create(c, 1, one.as_mut_ptr(), null(), null_mut());
        assert!(!p.is_null());
        release_program(cl, p);
    }
    release_context(cl, c);
}

fn build_and_query(cl: &Cl) {
    let c = cl.context();
    let src = format!("{STORE}kernel void twice(global int* o) {{ o[0] *= 2; }}\n");
    let p = with_source(cl, c, &src);
    // Before any build: no executable, nothing built.
    assert_eq!(
        program_info(cl, p, CL_PROGRAM_KERNEL_NAMES),
        Err(CL_INVALID_PROGRAM_EXECUTABLE)
    );
    assert_eq!(
        program_info(cl, p, CL_PROGRAM_NUM_KERNELS),
        Err(CL_INVALID_PROGRAM_EXECUTABLE)
    );
    assert_eq!(build_status(cl, p), CL_BUILD_NONE);
    assert_eq!(binary_type(cl, p), CL_PROGRAM_BINARY_TYPE_NONE);

    let options = "-DUNUSED=1 -cl-mad-enable";
    assert_eq!(build(cl, p, options), CL_SUCCESS, "{}", build_log(cl, p));
    assert_eq!(kernel_names(cl, p).unwrap(), names(&["store", "twice"]));
    assert_eq!(num_kernels(cl, p), Ok(2));
    assert_eq!(build_status(cl, p), CL_BUILD_SUCCESS);
    assert_eq!(
        c_string(&build_info(cl, p, CL_PROGRAM_BUILD_OPTIONS).unwrap()),
        options
    );
    build_log(cl, p); // a string, possibly empty
    assert_eq!(binary_type(cl, p), CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    assert_eq!(
        c_string(&program_info(cl, p, CL_PROGRAM_SOURCE).unwrap()),
        src
    );
    // A device the program does not have.
    let junk = junk_handle::<c_void>();
    if cl.how == "direct" {
        let r = unsafe {
            cl.clGetProgramBuildInfo.unwrap()(
                p,
                junk,
                CL_PROGRAM_BUILD_STATUS,
                0,
                null_mut(),
                null_mut(),
            )
        };
        assert_eq!(r, CL_INVALID_DEVICE);
    }
    assert_eq!(program_info(cl, p, 0xFFFF), Err(CL_INVALID_VALUE));
    assert_eq!(build_info(cl, p, 0xFFFF), Err(CL_INVALID_VALUE));
    // user_data without a callback.
    let mut x = 0u8;
    let r = unsafe {
        cl.clBuildProgram.unwrap()(p, 0, null(), null(), None, (&mut x as *mut u8).cast())
    };
    assert_eq!(r, CL_INVALID_VALUE);
    // A device list and its count must agree.
    let d = cl.device();
    let r = unsafe { cl.clBuildProgram.unwrap()(p, 1, null(), null(), None, null_mut()) };
    assert_eq!(r, CL_INVALID_VALUE);
    let r = unsafe { cl.clBuildProgram.unwrap()(p, 0, &d, null(), None, null_mut()) };
    assert_eq!(r, CL_INVALID_VALUE);
    // Rebuilding with an explicit device and NULL options works.
    let r = unsafe { cl.clBuildProgram.unwrap()(p, 1, &d, null(), None, null_mut()) };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(num_kernels(cl, p), Ok(2));
    release_program(cl, p);
    release_context(cl, c);
}

fn syntax_error_fails_with_log(cl: &Cl) {
    let c = cl.context();
    let p = with_source(
        cl,
        c,
        "kernel void broken(global int* o) { o[0] = undeclared_thing; }\n",
    );
    assert_eq!(build(cl, p, ""), CL_BUILD_PROGRAM_FAILURE);
    assert_eq!(build_status(cl, p), CL_BUILD_ERROR);
    let log = build_log(cl, p);
    assert!(
        log.contains("undeclared_thing"),
        "the log names the error: {log:?}"
    );
    assert_eq!(
        program_info(cl, p, CL_PROGRAM_KERNEL_NAMES),
        Err(CL_INVALID_PROGRAM_EXECUTABLE)
    );
    assert_eq!(kernel(cl, p, "broken"), Err(CL_INVALID_PROGRAM_EXECUTABLE));
    release_program(cl, p);
    release_context(cl, c);
}

fn unknown_options_are_rejected(cl: &Cl) {
    let c = cl.context();
    let p = with_source(cl, c, STORE);
    for bad in [
        "-fbogus-option",
        "-cl-std=CL9.9",
        "-D",
        "--no-such-thing -DX",
    ] {
        assert_eq!(build(cl, p, bad), CL_INVALID_BUILD_OPTIONS, "{bad:?}");
    }
    // The program still builds with good options afterwards, every option
    // the specification defines included.
    assert_eq!(build(cl, p, "-w -cl-fast-relaxed-math"), CL_SUCCESS);
    assert_eq!(
        build(
            cl,
            p,
            "-cl-std=CL3.0 -cl-no-subgroup-ifp -cl-uniform-work-group-size"
        ),
        CL_SUCCESS
    );
    assert_eq!(kernel_names(cl, p).unwrap(), names(&["store"]));
    release_program(cl, p);
    release_context(cl, c);
}

fn defines_and_include_directories(cl: &Cl) {
    let c = cl.context();
    let src = "#ifdef USE_B\nkernel void b_kernel(global int* o) { o[0] = VALUE; }\n\
               #else\nkernel void a_kernel(global int* o) { o[0] = 1; }\n#endif\n";
    for (options, want) in [
        ("", "a_kernel"),
        ("-D USE_B -D VALUE=2", "b_kernel"),
        ("-DUSE_B -DVALUE=3", "b_kernel"),
    ] {
        let p = built(cl, c, src, options);
        assert_eq!(kernel_names(cl, p).unwrap(), names(&[want]), "{options:?}");
        release_program(cl, p);
    }

    let scratch = ScratchDir::new("include");
    let dir = &scratch.0;
    std::fs::write(
        dir.join("probe_header.h"),
        "#define HEADER_KERNEL from_header\n",
    )
    .unwrap();
    let src =
        "#include \"probe_header.h\"\nkernel void HEADER_KERNEL(global int* o) { o[0] = 1; }\n";
    for options in [
        format!("-I {}", dir.display()),
        format!("-I{}", dir.display()),
    ] {
        let p = built(cl, c, src, &options);
        assert_eq!(kernel_names(cl, p).unwrap(), names(&["from_header"]));
        release_program(cl, p);
    }
    // Without the directory the header is not found.
    let p = with_source(cl, c, src);
    assert_eq!(build(cl, p, ""), CL_BUILD_PROGRAM_FAILURE);
    assert!(build_log(cl, p).contains("probe_header.h"));
    release_program(cl, p);
    drop(scratch); // removes the directory
    release_context(cl, c);
}

fn include_directories_are_read_at_each_build(cl: &Cl) {
    // A header found through -I is read when the program is built: the
    // same source and options give a different program once it changes.
    let c = cl.context();
    let scratch = ScratchDir::new("changing-include");
    let dir = &scratch.0;
    let header = dir.join("changing.h");
    let src = "#include \"changing.h\"\nkernel void HEADER_KERNEL(global int* o) { o[0] = 1; }\n";
    let options = format!("-I {}", dir.display());
    for name in ["before_edit", "after_edit"] {
        std::fs::write(&header, format!("#define HEADER_KERNEL {name}\n")).unwrap();
        let p = built(cl, c, src, &options);
        let got = kernel_names(cl, p).unwrap();
        release_program(cl, p);
        assert_eq!(got, names(&[name]), "the header as it is now");
    }
    drop(scratch); // removes the directory
    release_context(cl, c);
}

fn language_version_macros(cl: &Cl) {
    let c = cl.context();
    let conds = [
        "__OPENCL_VERSION__ == 300",
        "__OPENCL_C_VERSION__ == 110",
        "__OPENCL_C_VERSION__ == 120",
        "__OPENCL_C_VERSION__ == 300",
    ];
    // Without -cl-std, the highest OpenCL C 1.x the device supports (1.2).
    assert_eq!(conditions(cl, c, "", &conds), [true, false, true, false]);
    assert_eq!(
        conditions(cl, c, "-cl-std=CL1.1", &conds),
        [true, true, false, false]
    );
    assert_eq!(
        conditions(cl, c, "-cl-std=CL1.2", &conds),
        [true, false, true, false]
    );
    assert_eq!(
        conditions(cl, c, "-cl-std=CL3.0", &conds),
        [true, false, false, true]
    );
    release_context(cl, c);
}

fn device_feature_macros(cl: &Cl) {
    let c = cl.context();
    let d = cl.device();
    let image_support = u32_of(&cl.device_bytes(d, CL_DEVICE_IMAGE_SUPPORT).unwrap()) == CL_TRUE;
    let extensions = c_string(&cl.device_bytes(d, CL_DEVICE_EXTENSIONS).unwrap());
    let reported: Vec<&str> = extensions.split_whitespace().collect();

    // Extensions the device does not report are not defined, whatever
    // clang would define for its target.
    let absent: Vec<&str> = [
        "cl_khr_fp64",
        "cl_khr_fp16",
        "cl_khr_subgroups",
        "cl_khr_subgroup_ballot",
        "cl_khr_int64_base_atomics",
        "cl_khr_3d_image_writes",
    ]
    .into_iter()
    .filter(|e| !reported.contains(e))
    .collect();
    // OpenCL C extensions the device reports are defined.
    let present: Vec<&str> = [
        "cl_khr_fp16",
        "cl_khr_fp64",
        "cl_khr_byte_addressable_store",
        "cl_khr_global_int32_base_atomics",
        "cl_khr_global_int32_extended_atomics",
        "cl_khr_local_int32_base_atomics",
        "cl_khr_local_int32_extended_atomics",
        "cl_khr_3d_image_writes",
    ]
    .into_iter()
    .filter(|e| reported.contains(e))
    .collect();
    let mut conds = vec!["defined(__IMAGE_SUPPORT__)".to_string()];
    conds.extend(absent.iter().map(|e| format!("defined({e})")));
    conds.extend(present.iter().map(|e| format!("defined({e})")));
    // __IMAGE_SUPPORT__ follows CL_DEVICE_IMAGE_SUPPORT.
    let mut want = vec![image_support];
    want.extend(absent.iter().map(|_| false));
    want.extend(present.iter().map(|_| true));
    let cond_refs: Vec<&str> = conds.iter().map(String::as_str).collect();
    for options in ["", "-cl-std=CL3.0"] {
        assert_eq!(
            conditions(cl, c, options, &cond_refs),
            want,
            "{options:?}: {conds:?}"
        );
    }

    // OpenCL C 3.0 feature macros follow CL_DEVICE_OPENCL_C_FEATURES.
    let raw = cl.device_bytes(d, CL_DEVICE_OPENCL_C_FEATURES).unwrap();
    let item = std::mem::size_of::<cl_name_version>();
    let features: Vec<String> = raw
        .chunks_exact(item)
        .map(|f| {
            let name = &f[std::mem::size_of::<cl_version>()..];
            let end = name.iter().position(|&b| b == 0).unwrap();
            String::from_utf8(name[..end].to_vec()).unwrap()
        })
        .collect();
    let mut conds: Vec<String> = features.iter().map(|f| format!("defined({f})")).collect();
    let mut want = vec![true; features.len()];
    for f in [
        "__opencl_c_images",
        "__opencl_c_fp64",
        "__opencl_c_3d_image_writes",
    ] {
        if !features.iter().any(|x| x == f) {
            conds.push(format!("defined({f})"));
            want.push(false);
        }
    }
    let cond_refs: Vec<&str> = conds.iter().map(String::as_str).collect();
    assert_eq!(
        conditions(cl, c, "-cl-std=CL3.0", &cond_refs),
        want,
        "{conds:?}"
    );
    release_context(cl, c);
}

/// What a build callback saw: the program it was called for.
struct Notified {
    program: Mutex<Option<usize>>,
    done: Condvar,
}

unsafe extern "C" fn build_done(p: cl_program, user_data: *mut c_void) {
    // SAFETY: user_data is the `Notified` of the test, which waits for this.
    let n = unsafe { &*(user_data as *const Notified) };
    *n.program.lock().unwrap() = Some(p as usize);
    n.done.notify_all();
}

fn asynchronous_build(cl: &Cl) {
    let c = cl.context();
    let p = with_source(cl, c, STORE);
    let n = Notified {
        program: Mutex::new(None),
        done: Condvar::new(),
    };
    let r = unsafe {
        cl.clBuildProgram.unwrap()(
            p,
            0,
            null(),
            null(),
            Some(build_done),
            (&n as *const Notified).cast_mut().cast(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = n.program.lock().unwrap();
    while seen.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the build callback did not run");
        seen = n.done.wait_timeout(seen, left).unwrap().0;
    }
    assert_eq!(*seen, Some(p as usize), "called for this program");
    drop(seen);
    assert_eq!(build_status(cl, p), CL_BUILD_SUCCESS);
    assert_eq!(kernel_names(cl, p).unwrap(), names(&["store"]));
    release_program(cl, p);
    release_context(cl, c);
}

// ---------------------------------------------------------------------
// clCompileProgram and clLinkProgram
// ---------------------------------------------------------------------

/// A kernel that calls a function defined elsewhere, through headers.
const USES_TWICE: &str = "#include \"inc/defs.h\"\n#include \"inc/util/twice.h\"\n\
                          kernel void first(global int* o) { o[0] = twice(SCALE); }\n";
const DEFS_H: &str = "#define SCALE 3\n";
const TWICE_H: &str = "int twice(int x);\n";
/// The function, and a kernel of its own. (Unsigned arithmetic keeps
/// llvm-spirv at SPIR-V 1.0, the version of the other object: see
/// `link_objects_of_different_spirv_versions` for the mixed case.)
const TWICE_FN: &str = "int twice(int x) { return (int)(2u * (uint)x); }\n";
const DEFINES_TWICE: &str = "int twice(int x) { return (int)(2u * (uint)x); }\n\
                             kernel void second(global int* o) { o[0] = twice(5); }\n";

/// USES_TWICE compiled with its two embedded headers.
fn compiled_with_headers(cl: &Cl, c: cl_context) -> cl_program {
    let defs = with_source(cl, c, DEFS_H);
    let twice = with_source(cl, c, TWICE_H);
    let p = with_source(cl, c, USES_TWICE);
    let r = compile(
        cl,
        p,
        "",
        &[(defs, "inc/defs.h"), (twice, "inc/util/twice.h")],
    );
    assert_eq!(r, CL_SUCCESS, "{}: {}", cl.how, build_log(cl, p));
    release_program(cl, defs);
    release_program(cl, twice);
    p
}

fn compile_with_embedded_headers_and_link(cl: &Cl) {
    let c = cl.context();
    // Without its headers the first object does not compile.
    let p = with_source(cl, c, USES_TWICE);
    assert_eq!(compile(cl, p, "", &[]), CL_COMPILE_PROGRAM_FAILURE);
    assert_eq!(build_status(cl, p), CL_BUILD_ERROR);
    assert!(build_log(cl, p).contains("inc/defs.h"));
    assert_eq!(compile(cl, p, "-fbogus", &[]), CL_INVALID_COMPILER_OPTIONS);
    release_program(cl, p);

    let a = compiled_with_headers(cl, c);
    let b = compiled(cl, c, DEFINES_TWICE);
    for obj in [a, b] {
        assert_eq!(build_status(cl, obj), CL_BUILD_SUCCESS);
        assert_eq!(binary_type(cl, obj), CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
        assert_eq!(
            program_info(cl, obj, CL_PROGRAM_KERNEL_NAMES),
            Err(CL_INVALID_PROGRAM_EXECUTABLE),
            "a compiled object is no executable"
        );
        assert_eq!(kernel(cl, obj, "first"), Err(CL_INVALID_PROGRAM_EXECUTABLE));
    }

    let (bad, err) = link(cl, c, "-DX", &[a, b]);
    assert!(bad.is_null());
    assert_eq!(err, CL_INVALID_LINKER_OPTIONS);

    let (exe, err) = link(cl, c, "", &[a, b]);
    assert_eq!(err, CL_SUCCESS);
    assert!(!exe.is_null());
    assert_eq!(build_status(cl, exe), CL_BUILD_SUCCESS);
    assert_eq!(binary_type(cl, exe), CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    assert_eq!(kernel_names(cl, exe).unwrap(), names(&["first", "second"]));
    assert_eq!(num_kernels(cl, exe), Ok(2));
    assert_eq!(
        usize_of(&program_info(cl, exe, CL_PROGRAM_CONTEXT).unwrap()),
        c as usize
    );
    for (name, want) in [("first", 6), ("second", 10)] {
        let k = kernel(cl, exe, name).unwrap();
        assert_eq!(run_single(cl, c, k), want, "{name}");
        release_kernel(cl, k);
    }
    release_program(cl, exe);

    // A program that was never compiled cannot be linked.
    let raw = with_source(cl, c, STORE);
    let (none, err) = link(cl, c, "", &[a, raw]);
    assert!(none.is_null());
    assert_eq!(err, CL_INVALID_OPERATION);
    // No inputs.
    let (none, err) = link(cl, c, "", &[]);
    assert!(none.is_null());
    assert_eq!(err, CL_INVALID_VALUE);
    release_program(cl, raw);
    release_program(cl, a);
    release_program(cl, b);
    release_context(cl, c);
}

fn link_a_library(cl: &Cl) {
    let c = cl.context();
    let helper = compiled(cl, c, TWICE_FN);
    let (lib, err) = link(cl, c, "-create-library", &[helper]);
    assert_eq!(err, CL_SUCCESS, "{}", build_log(cl, lib));
    assert_eq!(build_status(cl, lib), CL_BUILD_SUCCESS);
    assert_eq!(binary_type(cl, lib), CL_PROGRAM_BINARY_TYPE_LIBRARY);
    assert_eq!(
        program_info(cl, lib, CL_PROGRAM_KERNEL_NAMES),
        Err(CL_INVALID_PROGRAM_EXECUTABLE),
        "a library is no executable"
    );

    let user = compiled_with_headers(cl, c);
    let (exe, err) = link(cl, c, "", &[user, lib]);
    assert_eq!(err, CL_SUCCESS, "{}", build_log(cl, exe));
    assert_eq!(binary_type(cl, exe), CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    assert_eq!(kernel_names(cl, exe).unwrap(), names(&["first"]));
    let k = kernel(cl, exe, "first").unwrap();
    assert_eq!(run_single(cl, c, k), 6);
    release_kernel(cl, k);
    for p in [exe, user, lib, helper] {
        release_program(cl, p);
    }
    release_context(cl, c);
}

fn link_objects_of_different_spirv_versions(cl: &Cl) {
    // llvm-spirv gives each module the lowest SPIR-V version it needs:
    // signed arithmetic (NoSignedWrap decorations) needs 1.4, the kernel
    // that only calls `twice` 1.0. Linking them is still one program.
    let c = cl.context();
    let user = compiled_with_headers(cl, c);
    let helper = compiled(cl, c, "int twice(int x) { return 2 * x; }\n");
    let (exe, err) = link(cl, c, "", &[user, helper]);
    assert_eq!(err, CL_SUCCESS, "{}", build_log(cl, exe));
    assert_eq!(kernel_names(cl, exe).unwrap(), names(&["first"]));
    let k = kernel(cl, exe, "first").unwrap();
    assert_eq!(run_single(cl, c, k), 6);
    release_kernel(cl, k);
    for p in [exe, user, helper] {
        release_program(cl, p);
    }
    release_context(cl, c);
}

fn unresolved_link_fails_with_log(cl: &Cl) {
    let c = cl.context();
    let obj = compiled(
        cl,
        c,
        "int helper_missing(int x);\n\
         kernel void calls(global int* o) { o[0] = helper_missing(o[0]); }\n",
    );
    let (p, err) = link(cl, c, "", &[obj]);
    assert_eq!(err, CL_LINK_PROGRAM_FAILURE);
    assert!(!p.is_null(), "a failed link still returns its program");
    assert_eq!(build_status(cl, p), CL_BUILD_ERROR);
    let log = build_log(cl, p);
    assert!(!log.is_empty(), "the log says why");
    assert_eq!(
        program_info(cl, p, CL_PROGRAM_KERNEL_NAMES),
        Err(CL_INVALID_PROGRAM_EXECUTABLE)
    );
    release_program(cl, p);
    release_program(cl, obj);
    release_context(cl, c);
}

/// A kernel, or a program-scope variable, that two inputs of a link both
/// define fails the link (CL_LINK_PROGRAM_FAILURE, the log naming it), as
/// a symbol defined twice does in C; a variable defined in one input and
/// declared `extern` in the other links.
fn kernels_and_variables_defined_twice_fail_to_link(cl: &Cl) {
    let c = cl.context();
    let object = |src: &str, options: &str| {
        let p = with_source(cl, c, src);
        assert_eq!(
            compile(cl, p, options, &[]),
            CL_SUCCESS,
            "{}: {}",
            cl.how,
            build_log(cl, p)
        );
        p
    };
    let one = object("kernel void k(global int* o) { o[0] = 1; }\n", "");
    let two = object("kernel void k(global int* o) { o[0] = 2; }\n", "");
    let (p, err) = link(cl, c, "", &[one, two]);
    assert_eq!(
        err, CL_LINK_PROGRAM_FAILURE,
        "{}: a kernel defined twice",
        cl.how
    );
    assert!(
        build_log(cl, p).contains("`k`"),
        "{}: {}",
        cl.how,
        build_log(cl, p)
    );
    release_program(cl, p);
    let cl3 = "-cl-std=CL3.0";
    let g1 = object(
        "global int g = 1;\nkernel void a(global int* o) { o[0] = g; }\n",
        cl3,
    );
    let g2 = object(
        "global int g = 2;\nkernel void b(global int* o) { o[0] = g; }\n",
        cl3,
    );
    let (p, err) = link(cl, c, "", &[g1, g2]);
    assert_eq!(
        err, CL_LINK_PROGRAM_FAILURE,
        "{}: a variable defined twice",
        cl.how
    );
    assert!(
        build_log(cl, p).contains("`g`"),
        "{}: {}",
        cl.how,
        build_log(cl, p)
    );
    release_program(cl, p);
    let user = object(
        "extern global int g;\nkernel void b(global int* o) { o[0] = g + 10; }\n",
        cl3,
    );
    let (p, err) = link(cl, c, "", &[g1, user]);
    assert_eq!(err, CL_SUCCESS, "{}: {}", cl.how, build_log(cl, p));
    release_program(cl, p);
    for p in [one, two, g1, g2, user] {
        release_program(cl, p);
    }
    release_context(cl, c);
}

/// C99 `inline` functions that clang leaves as calls (too large, `noinline`,
/// an unoptimised build) still have a body to call.
fn inline_functions_clang_does_not_inline(cl: &Cl) {
    const SRC: &str = "inline int helper(int x) { return x * 3 + 1; }\n\
         __attribute__((noinline)) inline int big(int x) { return x * 5 + 2; }\n\
         kernel void k(global int* o) { int i = get_global_id(0); o[i] = helper(i) + big(i); }\n";
    for options in ["", "-cl-opt-disable"] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SRC, "k", options);
        let out = s.zeroed(16 * 4);
        s.arg(k, 0, &out);
        s.run(k, &[16], None, None);
        let want: Vec<u32> = (0..16).map(|i| 8 * i + 3).collect();
        assert_eq!(s.words(out, 16), want, "{}: options {options:?}", cl.how);
    }
    // The same through clCompileProgram and clLinkProgram, with a second
    // object that defines the same inline function (a shared header).
    let c = cl.context();
    let obj = compiled(cl, c, SRC);
    let other = compiled(
        cl,
        c,
        "inline int helper(int x) { return x * 3 + 1; }\n\
         kernel void k2(global int* o) { o[0] = helper(o[0]); }\n",
    );
    let (p, err) = link(cl, c, "", &[obj, other]);
    assert_eq!(
        err,
        CL_SUCCESS,
        "{}: link log: {}",
        cl.how,
        build_log(cl, p)
    );
    release_program(cl, p);
    release_program(cl, other);
    release_program(cl, obj);
    release_context(cl, c);
}

/// A kernel the rewriter cannot turn into a Vulkan shader fails the build
/// or the link, with a log naming the kernel and the construct, rather
/// than its first enqueue. (A generic pointer made from an arbitrary
/// integer is such a construct today.)
fn unrunnable_kernels_fail_the_build(cl: &Cl) {
    const SRC: &str = "kernel void from_int(global int* o, ulong a) {\n\
             generic int* p = (generic int*)a;\n\
             if (a) *p = 1;\n\
             o[get_global_id(0)] = 5;\n\
         }\n\
         kernel void fine(global int* o) { o[0] = 1; }\n";
    let c = cl.context();
    let p = with_source(cl, c, SRC);
    assert_eq!(build(cl, p, "-cl-std=CL3.0"), CL_BUILD_PROGRAM_FAILURE);
    assert_eq!(build_status(cl, p), CL_BUILD_ERROR);
    let log = build_log(cl, p);
    assert!(
        log.contains("from_int") && log.contains("generic pointers made from integers"),
        "{}: the log names the kernel and the construct: {log:?}",
        cl.how
    );
    assert_eq!(
        program_info(cl, p, CL_PROGRAM_KERNEL_NAMES),
        Err(CL_INVALID_PROGRAM_EXECUTABLE)
    );
    release_program(cl, p);

    let obj = with_source(cl, c, SRC);
    assert_eq!(compile(cl, obj, "-cl-std=CL3.0", &[]), CL_SUCCESS);
    let (linked, err) = link(cl, c, "", &[obj]);
    assert_eq!(err, CL_LINK_PROGRAM_FAILURE);
    assert!(!linked.is_null(), "a failed link still returns its program");
    let log = build_log(cl, linked);
    assert!(log.contains("from_int"), "{}: link log {log:?}", cl.how);
    release_program(cl, linked);
    release_program(cl, obj);
    release_context(cl, c);
}

/// Inline assembly (written for a vendor's own compiler) fails the build
/// with a log that says so and where.
fn inline_assembly_fails_the_build(cl: &Cl) {
    let c = cl.context();
    for asm in ["asm volatile", "__asm__ volatile", "__asm__"] {
        let src = format!(
            "kernel void k(global uint* o) {{\n\
                 uint r;\n\
                 {asm} (\"lop3.b32 %0, %1, %2, %3, 0x96;\" : \"=r\"(r) : \"r\"(o[0]), \"r\"(o[1]), \"r\"(o[2]));\n\
                 o[1] = r;\n\
             }}\n"
        );
        let p = with_source(cl, c, &src);
        assert_eq!(
            build(cl, p, ""),
            CL_BUILD_PROGRAM_FAILURE,
            "{}: {asm}",
            cl.how
        );
        let log = build_log(cl, p);
        assert!(
            log.contains("program.cl:3") && log.contains("inline assembly is not supported"),
            "{}: {asm}: {log:?}",
            cl.how
        );
        release_program(cl, p);
    }
    release_context(cl, c);
}

fn compile_needs_source_or_il(cl: &Cl) {
    let c = cl.context();
    // From a binary: no source or IL to compile.
    let exe = built(cl, c, STORE, "");
    let bin = binaries(cl, exe).remove(0);
    let (from_bin, status) = with_binary(cl, c, &bin);
    assert_eq!(status, CL_SUCCESS);
    let from_bin = from_bin.unwrap();
    assert_eq!(compile(cl, from_bin, "", &[]), CL_INVALID_OPERATION);
    release_program(cl, from_bin);
    release_program(cl, exe);

    // A linked program has no source or IL either.
    let obj = compiled(cl, c, STORE);
    let (linked, err) = link(cl, c, "", &[obj]);
    assert_eq!(err, CL_SUCCESS);
    assert_eq!(compile(cl, linked, "", &[]), CL_INVALID_OPERATION);
    release_program(cl, linked);
    release_program(cl, obj);

    // From IL: compiling is allowed ("CL_INVALID_OPERATION if program has no
    // source or IL available"), and gives a compiled object.
    let il = with_il(cl, c, &assemble(IL_STORE)).unwrap();
    assert_eq!(compile(cl, il, "", &[]), CL_SUCCESS);
    assert_eq!(binary_type(cl, il), CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
    release_program(cl, il);
    release_context(cl, c);
}

// ---------------------------------------------------------------------
// Program binaries
// ---------------------------------------------------------------------

fn binaries_round_trip(cl: &Cl) {
    let c = cl.context();
    let src = format!("{STORE}kernel void other(global int* o) {{ o[0] = 5; }}\n");
    // Before a build there is no binary.
    let p = with_source(cl, c, &src);
    assert_eq!(binaries(cl, p), vec![Vec::<u8>::new()]);
    assert_eq!(build(cl, p, ""), CL_SUCCESS);
    let bins = binaries(cl, p);
    assert_eq!(bins.len(), 1);
    assert!(!bins[0].is_empty());
    // A NULL entry in the pointer array is skipped.
    let mut skip: [*mut u8; 1] = [null_mut()];
    let r = unsafe {
        cl.clGetProgramInfo.unwrap()(
            p,
            CL_PROGRAM_BINARIES,
            std::mem::size_of_val(&skip),
            skip.as_mut_ptr().cast(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);

    let (q, status) = with_binary(cl, c, &bins[0]);
    assert_eq!(status, CL_SUCCESS);
    let q = q.unwrap();
    assert_eq!(
        program_info(cl, q, CL_PROGRAM_SOURCE).unwrap(),
        vec![0],
        "no source for a binary program"
    );
    assert_eq!(build(cl, q, ""), CL_SUCCESS, "{}", build_log(cl, q));
    assert_eq!(build_status(cl, q), CL_BUILD_SUCCESS);
    assert_eq!(binary_type(cl, q), CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    assert_eq!(kernel_names(cl, q), kernel_names(cl, p));
    assert_eq!(binaries(cl, q), bins, "the binary survives the trip");
    let k = kernel(cl, q, "store").unwrap();
    assert_eq!(set_arg(cl, k, 1, &41i32), CL_SUCCESS);
    assert_eq!(run_single(cl, c, k), 41);
    release_kernel(cl, k);
    release_program(cl, q);
    release_program(cl, p);

    // A compiled object's binary links like the object itself.
    let obj = compiled(cl, c, STORE);
    assert_eq!(binary_type(cl, obj), CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
    let obj_bin = binaries(cl, obj).remove(0);
    let (again, status) = with_binary(cl, c, &obj_bin);
    assert_eq!(status, CL_SUCCESS);
    let again = again.unwrap();
    assert_eq!(
        binary_type(cl, again),
        CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT
    );
    let (exe, err) = link(cl, c, "", &[again]);
    assert_eq!(err, CL_SUCCESS);
    assert_eq!(kernel_names(cl, exe).unwrap(), names(&["store"]));
    for p in [exe, again, obj] {
        release_program(cl, p);
    }
    release_context(cl, c);
}

/// Optimised code with merged switch cases, a copy loop of run-time
/// length and (with NARROW_SWITCH) a switch LLVM narrows to two bits runs,
/// and its binary loads again (the validator checks a binary's SPIR-V).
fn optimised_code_round_trips(cl: &Cl) {
    let c = cl.context();
    for (options, expected) in [("", 487), ("-D NARROW_SWITCH", 531)] {
        let p = built(cl, c, include_str!("kernels/optimiser_shapes.cl"), options);
        let bins = binaries(cl, p);
        let (q, status) = with_binary(cl, c, &bins[0]);
        assert_eq!(status, CL_SUCCESS, "the binary loads ({options})");
        let q = q.unwrap();
        assert_eq!(build(cl, q, ""), CL_SUCCESS, "{}", build_log(cl, q));
        for program in [p, q] {
            let k = kernel(cl, program, "shapes").unwrap();
            assert_eq!(set_arg(cl, k, 1, &41i32), CL_SUCCESS);
            assert_eq!(run_single(cl, c, k), expected, "{options}");
            release_kernel(cl, k);
            release_program(cl, program);
        }
    }
    release_context(cl, c);
}

/// An executable holds the kernels and what they call, not every helper
/// its source defines, whether built or linked from one compiled object;
/// the compiled object keeps them all for links with others.
fn executables_keep_what_kernels_call(cl: &Cl) {
    const SRC: &str = "int helper_nobody_calls(int x) { return x * 3 + 1; }\n\
        int helper_the_kernel_calls(int x) { return x * 5 + 2; }\n\
        kernel void k(global int *out) { out[0] = helper_the_kernel_calls(out[0]); }\n";
    let has = |bin: &[u8], name: &str| bin.windows(name.len()).any(|w| w == name.as_bytes());
    let c = cl.context();
    let p = built(cl, c, SRC, "");
    let bin = binaries(cl, p).remove(0);
    assert!(
        !has(&bin, "helper_nobody_calls"),
        "the executable drops an unused helper"
    );
    let k = kernel(cl, p, "k").unwrap();
    assert_eq!(run_single(cl, c, k), 2);
    release_kernel(cl, k);
    release_program(cl, p);
    let o = compiled(cl, c, SRC);
    let (e, status) = link(cl, c, "", &[o]);
    assert_eq!(status, CL_SUCCESS);
    assert!(
        !has(&binaries(cl, e).remove(0), "helper_nobody_calls"),
        "an executable linked from one object drops an unused helper"
    );
    let k = kernel(cl, e, "k").unwrap();
    assert_eq!(run_single(cl, c, k), 2);
    release_kernel(cl, k);
    let bin = binaries(cl, o).remove(0);
    assert!(
        has(&bin, "helper_nobody_calls"),
        "the compiled object keeps it for the link"
    );
    let (l, status) = link(cl, c, "-create-library", &[o]);
    assert_eq!(status, CL_SUCCESS);
    assert!(
        has(&binaries(cl, l).remove(0), "helper_nobody_calls"),
        "so does a library"
    );
    for p in [l, e, o] {
        release_program(cl, p);
    }
    release_context(cl, c);
}

/// Binaries of code for which llvm-spirv writes what the validator
/// refuses (a select of vectors on a scalar condition in SPIR-V 1.0; an
/// add decorated FPFastMathMode twice under the relaxed-math options)
/// load again: vkcl keeps the module made valid (darktable caches every
/// kernel this way).
fn binaries_of_llvm_spirv_quirks_load(cl: &Cl) {
    let c = cl.context();
    let src = "float4 weight(float4 a, float4 b, float s) {
            float w = native_exp(-((a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z)) * s);
            return (float4)(w, w, w, 1.0f);
        }
        kernel void k(global const float4 *a, global float4 *o, int unbound, float s) {
            int i = get_global_id(0);
            float4 lo = unbound ? (float4)(-INFINITY) : (float4)(0.0f, -128.0f, -128.0f, 0.0f);
            float4 sum = 0, wgt = 0;
            for (int j = 0; j < 5; j++) {
                float4 w = weight(a[i], a[i + j], s);
                sum += w * a[i + j];
                wgt += w;
            }
            o[i] = fmax(sum / wgt, lo);
        }";
    for options in ["", "-cl-fast-relaxed-math", "-cl-finite-math-only"] {
        let p = built(cl, c, src, options);
        let bins = binaries(cl, p);
        let (q, status) = with_binary(cl, c, &bins[0]);
        assert_eq!(status, CL_SUCCESS, "{}: {options:?}", cl.how);
        let q = q.unwrap();
        assert_eq!(build(cl, q, options), CL_SUCCESS, "{}", build_log(cl, q));
        release_program(cl, q);
        release_program(cl, p);
    }
}

fn damaged_binaries_are_rejected(cl: &Cl) {
    let c = cl.context();
    let p = built(cl, c, STORE, "");
    let good = binaries(cl, p).remove(0);
    release_program(cl, p);

    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    let truncated = good[..good.len() / 2].to_vec();
    let garbage: Vec<u8> = (0..good.len()).map(|i| (i * 37 + 11) as u8).collect();
    for (what, bin) in [
        ("a flipped byte", &flipped),
        ("truncated", &truncated),
        ("garbage", &garbage),
    ] {
        let (r, status) = with_binary(cl, c, bin);
        assert_eq!(r, Err(CL_INVALID_BINARY), "{what}");
        assert_eq!(status, CL_INVALID_BINARY, "{what}: binary_status");
    }

    // Argument checks: lengths and binaries must be given and non-empty.
    let d = cl.device();
    let create = cl.clCreateProgramWithBinary.unwrap();
    let mut err = 1;
    let mut status = 1;
    let zero = 0usize;
    let mut ptr = good.as_ptr();
    unsafe {
        assert!(create(c, 1, &d, &zero, &mut ptr, &mut status, &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE, "length 0");
        assert_eq!(status, CL_INVALID_VALUE);
        let len = good.len();
        let mut none: *const u8 = null();
        assert!(create(c, 1, &d, &len, &mut none, &mut status, &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE, "a NULL binary");
        assert!(create(c, 0, &d, &len, &mut ptr, &mut status, &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE, "no devices");
        // binary_status may be NULL.
        let p = create(c, 1, &d, &len, &mut ptr, null_mut(), &mut err);
        assert_eq!(err, CL_SUCCESS);
        release_program(cl, p);
    }
    release_context(cl, c);
}

fn same_source_same_binary(cl: &Cl) {
    // The second build may come from the compiler cache; either way the
    // result is the same.
    let c = cl.context();
    let src = format!("{STORE}// same_source_same_binary\n");
    let p1 = built(cl, c, &src, "-DSAME=1");
    let p2 = built(cl, c, &src, "-DSAME=1");
    assert_eq!(binaries(cl, p1), binaries(cl, p2));
    assert_eq!(build_log(cl, p1), build_log(cl, p2));
    release_program(cl, p1);
    release_program(cl, p2);
    release_context(cl, c);
}

// ---------------------------------------------------------------------
// clCreateProgramWithIL
// ---------------------------------------------------------------------

fn program_from_il(cl: &Cl) {
    let c = cl.context();
    let spirv = assemble(IL_STORE);
    let p = with_il(cl, c, &spirv).unwrap();
    assert_eq!(program_info(cl, p, CL_PROGRAM_IL).unwrap(), spirv);
    assert_eq!(
        program_info(cl, p, CL_PROGRAM_SOURCE).unwrap(),
        vec![0],
        "no source for an IL program"
    );
    assert_eq!(
        program_info(cl, p, CL_PROGRAM_KERNEL_NAMES),
        Err(CL_INVALID_PROGRAM_EXECUTABLE)
    );
    assert_eq!(build(cl, p, ""), CL_SUCCESS, "{}", build_log(cl, p));
    assert_eq!(binary_type(cl, p), CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    assert_eq!(kernel_names(cl, p).unwrap(), names(&["il_store"]));
    let k = kernel(cl, p, "il_store").unwrap();
    assert_eq!(
        u32_of(&kernel_info_bytes(cl, k, CL_KERNEL_NUM_ARGS).unwrap()),
        2
    );
    assert_eq!(set_arg(cl, k, 1, &0x1234u32), CL_SUCCESS);
    assert_eq!(run_single(cl, c, k), 0x1234);
    release_kernel(cl, k);
    release_program(cl, p);
    release_context(cl, c);
}

fn malformed_il_is_rejected(cl: &Cl) {
    let c = cl.context();
    let spirv = assemble(IL_STORE);
    let garbage: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(29) ^ 0x5A).collect();
    let cases: [(&str, &[u8]); 4] = [
        ("garbage", &garbage),
        ("truncated to the header", &spirv[..20]),
        ("missing its last word", &spirv[..spirv.len() - 4]),
        (
            "a length that is no multiple of 4",
            &spirv[..spirv.len() - 1],
        ),
    ];
    for (what, il) in cases {
        assert_eq!(with_il(cl, c, il), Err(CL_INVALID_VALUE), "{what}");
    }
    let mut err = 1;
    let create = cl.clCreateProgramWithIL.unwrap();
    unsafe {
        assert!(create(c, null(), 16, &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE, "IL NULL");
        assert!(create(c, spirv.as_ptr().cast(), 0, &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE, "length 0");
    }
    release_context(cl, c);
}

// ---------------------------------------------------------------------
// Kernel objects
// ---------------------------------------------------------------------

/// Kernels for the kernel-object tests: a fixed work-group size, a plain
/// one, and a helper that is no kernel.
const KERNELS: &str = "int helper(int x) { return x + 1; }\n\
    __attribute__((reqd_work_group_size(4,2,1)))\n\
    kernel void fixed(global int* out) { out[get_global_id(0)] = helper(1); }\n\
    kernel void store(global int* out, int value) { out[0] = value; }\n";

fn create_kernel_errors(cl: &Cl) {
    let c = cl.context();
    let p = with_source(cl, c, KERNELS);
    assert_eq!(kernel(cl, p, "store"), Err(CL_INVALID_PROGRAM_EXECUTABLE));
    assert_eq!(build(cl, p, ""), CL_SUCCESS);
    assert_eq!(kernel(cl, p, "no_such_kernel"), Err(CL_INVALID_KERNEL_NAME));
    assert_eq!(
        kernel(cl, p, "helper"),
        Err(CL_INVALID_KERNEL_NAME),
        "not a kernel"
    );
    assert_eq!(kernel(cl, p, "stor"), Err(CL_INVALID_KERNEL_NAME));
    let mut err = 1;
    let k = unsafe { cl.clCreateKernel.unwrap()(p, null(), &mut err) };
    assert!(k.is_null());
    assert_eq!(err, CL_INVALID_VALUE, "a NULL name");
    // errcode_ret may be NULL.
    let name = CString::new("store").unwrap();
    let k = unsafe { cl.clCreateKernel.unwrap()(p, name.as_ptr(), null_mut()) };
    assert!(!k.is_null());
    release_kernel(cl, k);
    release_program(cl, p);
    release_context(cl, c);
}

fn kernels_in_program(cl: &Cl) {
    let c = cl.context();
    let p = with_source(cl, c, KERNELS);
    let create = cl.clCreateKernelsInProgram.unwrap();
    let mut n = 0;
    assert_eq!(
        unsafe { create(p, 0, null_mut(), &mut n) },
        CL_INVALID_PROGRAM_EXECUTABLE
    );
    assert_eq!(build(cl, p, ""), CL_SUCCESS);
    assert_eq!(unsafe { create(p, 0, null_mut(), &mut n) }, CL_SUCCESS);
    assert_eq!(n, 2);
    let mut one = [null_mut(); 1];
    assert_eq!(
        unsafe { create(p, 1, one.as_mut_ptr(), null_mut()) },
        CL_INVALID_VALUE,
        "too small an array"
    );
    let mut ks = [null_mut(); 3];
    let mut got = 0;
    assert_eq!(
        unsafe { create(p, 3, ks.as_mut_ptr(), &mut got) },
        CL_SUCCESS
    );
    assert_eq!(got, 2);
    let mut fnames: Vec<String> = ks[..2]
        .iter()
        .map(|&k| c_string(&kernel_info_bytes(cl, k, CL_KERNEL_FUNCTION_NAME).unwrap()))
        .collect();
    fnames.sort();
    assert_eq!(fnames, names(&["fixed", "store"]));
    for &k in &ks[..2] {
        release_kernel(cl, k);
    }
    release_program(cl, p);
    release_context(cl, c);
}

fn kernel_info(cl: &Cl) {
    let c = cl.context();
    let p = built(cl, c, KERNELS, "");
    let fixed = kernel(cl, p, "fixed").unwrap();
    let store = kernel(cl, p, "store").unwrap();
    let s = |k, param| c_string(&kernel_info_bytes(cl, k, param).unwrap());
    let u = |k, param| u32_of(&kernel_info_bytes(cl, k, param).unwrap());
    let h = |k, param| usize_of(&kernel_info_bytes(cl, k, param).unwrap());
    assert_eq!(s(fixed, CL_KERNEL_FUNCTION_NAME), "fixed");
    assert_eq!(s(store, CL_KERNEL_FUNCTION_NAME), "store");
    assert_eq!(u(fixed, CL_KERNEL_NUM_ARGS), 1);
    assert_eq!(u(store, CL_KERNEL_NUM_ARGS), 2);
    assert_eq!(
        s(fixed, CL_KERNEL_ATTRIBUTES),
        "reqd_work_group_size(4,2,1)"
    );
    assert_eq!(s(store, CL_KERNEL_ATTRIBUTES), "");
    assert_eq!(h(store, CL_KERNEL_CONTEXT), c as usize);
    assert_eq!(h(store, CL_KERNEL_PROGRAM), p as usize);
    assert_eq!(u(store, CL_KERNEL_REFERENCE_COUNT), 1);
    unsafe {
        assert_eq!(cl.clRetainKernel.unwrap()(store), CL_SUCCESS);
        assert_eq!(u(store, CL_KERNEL_REFERENCE_COUNT), 2);
        assert_eq!(cl.clReleaseKernel.unwrap()(store), CL_SUCCESS);
    }
    assert_eq!(u(store, CL_KERNEL_REFERENCE_COUNT), 1);
    assert_eq!(kernel_info_bytes(cl, store, 0xFFFF), Err(CL_INVALID_VALUE));
    release_kernel(cl, fixed);
    release_kernel(cl, store);
    release_program(cl, p);
    release_context(cl, c);
}

/// A kernel with one argument of each interesting kind.
const DESCRIBED: &str = "typedef struct { int a; float b; } pair_t;\n\
    kernel void described(global const float* restrict src,\n\
                          constant int* table,\n\
                          local float* scratch,\n\
                          int n,\n\
                          float4 scale,\n\
                          pair_t pair,\n\
                          global volatile int* flags,\n\
                          unsigned int u)\n\
    {\n\
        size_t i = get_global_id(0);\n\
        scratch[get_local_id(0)] = src[i] * scale.x + table[0] + n + pair.b + u;\n\
        barrier(CLK_LOCAL_MEM_FENCE);\n\
        flags[i] = (int)scratch[0] + pair.a;\n\
    }\n";

fn kernel_arg_info(cl: &Cl) {
    let c = cl.context();
    let p = built(cl, c, DESCRIBED, "-cl-kernel-arg-info");
    let k = kernel(cl, p, "described").unwrap();
    let want: [(&str, &str, cl_uint, cl_uint); 8] = [
        (
            "src",
            "float*",
            CL_KERNEL_ARG_ADDRESS_GLOBAL,
            CL_KERNEL_ARG_TYPE_CONST | CL_KERNEL_ARG_TYPE_RESTRICT,
        ),
        (
            "table",
            "int*",
            CL_KERNEL_ARG_ADDRESS_CONSTANT,
            CL_KERNEL_ARG_TYPE_CONST,
        ),
        (
            "scratch",
            "float*",
            CL_KERNEL_ARG_ADDRESS_LOCAL,
            CL_KERNEL_ARG_TYPE_NONE,
        ),
        (
            "n",
            "int",
            CL_KERNEL_ARG_ADDRESS_PRIVATE,
            CL_KERNEL_ARG_TYPE_NONE,
        ),
        (
            "scale",
            "float4",
            CL_KERNEL_ARG_ADDRESS_PRIVATE,
            CL_KERNEL_ARG_TYPE_NONE,
        ),
        (
            "pair",
            "pair_t",
            CL_KERNEL_ARG_ADDRESS_PRIVATE,
            CL_KERNEL_ARG_TYPE_NONE,
        ),
        (
            "flags",
            "int*",
            CL_KERNEL_ARG_ADDRESS_GLOBAL,
            CL_KERNEL_ARG_TYPE_VOLATILE,
        ),
        (
            "u",
            "uint",
            CL_KERNEL_ARG_ADDRESS_PRIVATE,
            CL_KERNEL_ARG_TYPE_NONE,
        ),
    ];
    let mut quals = Vec::new();
    for (i, (name, type_name, address, type_qual)) in want.into_iter().enumerate() {
        let i = i as u32;
        let s = |param| c_string(&arg_info(cl, k, i, param).unwrap());
        let n = |param| arg_info(cl, k, i, param).unwrap();
        assert_eq!(s(CL_KERNEL_ARG_NAME), name, "arg {i}");
        assert_eq!(s(CL_KERNEL_ARG_TYPE_NAME), type_name, "arg {i}");
        assert_eq!(
            u32_of(&n(CL_KERNEL_ARG_ADDRESS_QUALIFIER)),
            address,
            "arg {i}"
        );
        assert_eq!(
            u32_of(&n(CL_KERNEL_ARG_ACCESS_QUALIFIER)),
            CL_KERNEL_ARG_ACCESS_NONE,
            "arg {i}"
        );
        quals.push((n(CL_KERNEL_ARG_TYPE_QUALIFIER), u64::from(type_qual)));
    }
    // cl_kernel_arg_type_qualifier is a cl_bitfield (a cl_ulong) in cl.h.
    for (i, (got, want)) in quals.iter().enumerate() {
        assert_eq!(got.len(), 8, "arg {i}: the type qualifier's size");
        assert_eq!(u64_of(got), *want, "arg {i}: the type qualifier");
    }
    assert_eq!(
        arg_info(cl, k, 8, CL_KERNEL_ARG_NAME),
        Err(CL_INVALID_ARG_INDEX)
    );
    assert_eq!(arg_info(cl, k, 0, 0xFFFF), Err(CL_INVALID_VALUE));
    release_kernel(cl, k);
    release_program(cl, p);
    release_context(cl, c);
}

fn kernel_arg_info_needs_option(cl: &Cl) {
    let c = cl.context();
    let p = built(cl, c, DESCRIBED, "");
    let k = kernel(cl, p, "described").unwrap();
    for param in [
        CL_KERNEL_ARG_NAME,
        CL_KERNEL_ARG_TYPE_NAME,
        CL_KERNEL_ARG_ADDRESS_QUALIFIER,
        CL_KERNEL_ARG_ACCESS_QUALIFIER,
        CL_KERNEL_ARG_TYPE_QUALIFIER,
    ] {
        assert_eq!(
            arg_info(cl, k, 0, param),
            Err(CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
            "{param:#x}"
        );
    }
    release_kernel(cl, k);
    release_program(cl, p);
    release_context(cl, c);
}

fn set_kernel_arg_checks(cl: &Cl) {
    let c = cl.context();
    let p = built(cl, c, DESCRIBED, "");
    let k = kernel(cl, p, "described").unwrap();
    let b = cl.buffer(c, CL_MEM_READ_WRITE, 64, null_mut());
    let no_mem: cl_mem = null_mut();
    let mem = std::mem::size_of::<cl_mem>();

    // Index out of range.
    assert_eq!(set_arg(cl, k, 8, &0i32), CL_INVALID_ARG_INDEX);
    // Buffers: sizeof(cl_mem), a valid buffer or NULL.
    assert_eq!(set_arg(cl, k, 0, &b), CL_SUCCESS);
    assert_eq!(
        set_arg_raw(cl, k, 0, 4, (&b as *const cl_mem).cast()),
        CL_INVALID_ARG_SIZE
    );
    assert_eq!(set_arg(cl, k, 0, &no_mem), CL_SUCCESS, "a NULL buffer");
    assert_eq!(
        set_arg_raw(cl, k, 0, mem, null()),
        CL_SUCCESS,
        "a NULL value"
    );
    assert_eq!(set_arg(cl, k, 1, &b), CL_SUCCESS, "a __constant buffer");
    assert_eq!(set_arg(cl, k, 6, &b), CL_SUCCESS);
    let junk = junk_handle::<c_void>();
    assert_eq!(set_arg(cl, k, 0, &junk), CL_INVALID_MEM_OBJECT);
    // __local: a size and no value.
    assert_eq!(set_arg_raw(cl, k, 2, 64, null()), CL_SUCCESS);
    assert_eq!(
        set_arg_raw(cl, k, 2, 64, (&b as *const cl_mem).cast()),
        CL_INVALID_ARG_VALUE
    );
    assert_eq!(set_arg_raw(cl, k, 2, 0, null()), CL_INVALID_ARG_SIZE);
    // By value: exactly the size of the type, and a value.
    assert_eq!(set_arg(cl, k, 3, &7i32), CL_SUCCESS);
    assert_eq!(set_arg(cl, k, 3, &7i64), CL_INVALID_ARG_SIZE);
    assert_eq!(set_arg(cl, k, 3, &7i16), CL_INVALID_ARG_SIZE);
    assert_eq!(set_arg_raw(cl, k, 3, 4, null()), CL_INVALID_ARG_VALUE);
    assert_eq!(set_arg(cl, k, 4, &[1.0f32; 4]), CL_SUCCESS);
    assert_eq!(set_arg(cl, k, 4, &[1.0f32; 3]), CL_INVALID_ARG_SIZE);
    #[repr(C)]
    struct Pair {
        a: i32,
        b: f32,
    }
    assert_eq!(
        set_arg(cl, k, 5, &Pair { a: 3, b: 0.5 }),
        CL_SUCCESS,
        "a struct"
    );
    assert_eq!(set_arg(cl, k, 5, &3i32), CL_INVALID_ARG_SIZE);
    assert_eq!(set_arg(cl, k, 7, &1u32), CL_SUCCESS);
    release_mem(cl, b);
    release_kernel(cl, k);
    release_program(cl, p);
    release_context(cl, c);
}

fn work_group_info(cl: &Cl) {
    let c = cl.context();
    let d = cl.device();
    let p = built(cl, c, KERNELS, "");
    let fixed = kernel(cl, p, "fixed").unwrap();
    let store = kernel(cl, p, "store").unwrap();
    let max = usize_of(&cl.device_bytes(d, CL_DEVICE_MAX_WORK_GROUP_SIZE).unwrap());
    let size = |k, dev, param| work_group_bytes(cl, k, dev, param).unwrap();
    let triple = |b: Vec<u8>| -> Vec<usize> {
        b.chunks_exact(std::mem::size_of::<usize>())
            .map(usize_of)
            .collect()
    };

    let wg = usize_of(&size(store, d, CL_KERNEL_WORK_GROUP_SIZE));
    assert!((1..=max).contains(&wg), "{wg} within 1..={max}");
    let fixed_wg = usize_of(&size(fixed, d, CL_KERNEL_WORK_GROUP_SIZE));
    assert!((8..=max).contains(&fixed_wg), "room for 4x2x1: {fixed_wg}");
    assert_eq!(
        triple(size(store, d, CL_KERNEL_COMPILE_WORK_GROUP_SIZE)),
        [0, 0, 0]
    );
    assert_eq!(
        triple(size(fixed, d, CL_KERNEL_COMPILE_WORK_GROUP_SIZE)),
        [4, 2, 1]
    );
    let multiple = usize_of(&size(
        store,
        d,
        CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
    ));
    assert!(multiple >= 1 && multiple <= wg, "{multiple}");
    assert_eq!(size(store, d, CL_KERNEL_PRIVATE_MEM_SIZE).len(), 8);
    // With one device, the device may be NULL.
    assert_eq!(
        usize_of(&size(store, null_mut(), CL_KERNEL_WORK_GROUP_SIZE)),
        wg
    );
    // Only for custom devices and built-in kernels.
    assert_eq!(
        work_group_bytes(cl, store, d, CL_KERNEL_GLOBAL_WORK_SIZE),
        Err(CL_INVALID_VALUE)
    );
    assert_eq!(
        work_group_bytes(cl, store, d, 0xFFFF),
        Err(CL_INVALID_VALUE)
    );
    release_kernel(cl, fixed);
    release_kernel(cl, store);
    release_program(cl, p);
    release_context(cl, c);
}

fn local_mem_size_counts_local_variables(cl: &Cl) {
    // CL_KERNEL_LOCAL_MEM_SIZE includes __local variables declared in the
    // kernel as well as __local arguments.
    let c = cl.context();
    let d = cl.device();
    let p = built(
        cl,
        c,
        "kernel void tiles(global float* out, local float* extra) {\n\
             local float tile[64];\n\
             tile[get_local_id(0)] = get_local_id(0);\n\
             extra[get_local_id(0)] = 1.0f;\n\
             barrier(CLK_LOCAL_MEM_FENCE);\n\
             out[get_global_id(0)] = tile[63 - get_local_id(0)] + extra[0];\n\
         }\n",
        "",
    );
    let k = kernel(cl, p, "tiles").unwrap();
    let local = |k| u64_of(&work_group_bytes(cl, k, d, CL_KERNEL_LOCAL_MEM_SIZE).unwrap());
    assert!(local(k) >= 256, "the 64-float tile: {}", local(k));
    assert_eq!(set_arg_raw(cl, k, 1, 128, null()), CL_SUCCESS);
    assert!(local(k) >= 256 + 128, "tile and argument: {}", local(k));
    release_kernel(cl, k);
    release_program(cl, p);
    release_context(cl, c);
}

fn clone_kernel(cl: &Cl) {
    let c = cl.context();
    let p = built(cl, c, STORE, "");
    let k = kernel(cl, p, "store").unwrap();
    assert_eq!(set_arg(cl, k, 1, &7i32), CL_SUCCESS);
    let mut err = 1;
    let copy = unsafe { cl.clCloneKernel.unwrap()(k, &mut err) };
    assert_eq!(err, CL_SUCCESS);
    assert!(!copy.is_null() && copy != k);
    let s = |k, param| c_string(&kernel_info_bytes(cl, k, param).unwrap());
    let h = |k, param| usize_of(&kernel_info_bytes(cl, k, param).unwrap());
    assert_eq!(s(copy, CL_KERNEL_FUNCTION_NAME), "store");
    assert_eq!(h(copy, CL_KERNEL_PROGRAM), p as usize);
    assert_eq!(h(copy, CL_KERNEL_CONTEXT), c as usize);
    assert_eq!(
        u32_of(&kernel_info_bytes(cl, copy, CL_KERNEL_REFERENCE_COUNT).unwrap()),
        1
    );
    // The clone has the values set so far; later changes stay apart.
    assert_eq!(set_arg(cl, k, 1, &9i32), CL_SUCCESS);
    assert_eq!(run_single(cl, c, copy), 7);
    assert_eq!(run_single(cl, c, k), 9);
    assert_eq!(set_arg(cl, copy, 1, &11i32), CL_SUCCESS);
    assert_eq!(run_single(cl, c, k), 9);
    release_kernel(cl, k);
    // The clone outlives the original.
    assert_eq!(run_single(cl, c, copy), 11);
    release_kernel(cl, copy);
    release_program(cl, p);
    release_context(cl, c);
}

fn rebuild_with_kernels_attached(cl: &Cl) {
    let c = cl.context();
    let p = built(cl, c, STORE, "");
    let k = kernel(cl, p, "store").unwrap();
    assert_eq!(build(cl, p, ""), CL_INVALID_OPERATION);
    assert_eq!(compile(cl, p, "", &[]), CL_INVALID_OPERATION);
    let mut err = 1;
    let copy = unsafe { cl.clCloneKernel.unwrap()(k, &mut err) };
    assert_eq!(err, CL_SUCCESS);
    release_kernel(cl, k);
    assert_eq!(
        build(cl, p, ""),
        CL_INVALID_OPERATION,
        "a clone still counts"
    );
    release_kernel(cl, copy);
    // With every kernel released the program can be built again.
    assert_eq!(build(cl, p, "-DAGAIN"), CL_SUCCESS);
    assert_eq!(kernel_names(cl, p).unwrap(), names(&["store"]));
    release_program(cl, p);
    release_context(cl, c);
}

fn enqueue_errors(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let p = built(cl, c, KERNELS, "");
    let store = kernel(cl, p, "store").unwrap();
    let fixed = kernel(cl, p, "fixed").unwrap();
    let b = cl.buffer(c, CL_MEM_READ_WRITE, 64 * 4, null_mut());
    let enqueue = |k, dims: u32, global: &[usize], local: Option<&[usize]>| unsafe {
        cl.clEnqueueNDRangeKernel.unwrap()(
            q,
            k,
            dims,
            null(),
            global.as_ptr(),
            local.map_or(null(), |l| l.as_ptr()),
            0,
            null(),
            null_mut(),
        )
    };
    // Argument 1 is not set yet.
    assert_eq!(set_arg(cl, store, 0, &b), CL_SUCCESS);
    assert_eq!(enqueue(store, 1, &[1], None), CL_INVALID_KERNEL_ARGS);
    assert_eq!(set_arg(cl, store, 1, &5i32), CL_SUCCESS);
    assert_eq!(
        enqueue(store, 0, &[1, 1, 1, 1], None),
        CL_INVALID_WORK_DIMENSION
    );
    assert_eq!(
        enqueue(store, 4, &[1, 1, 1, 1], None),
        CL_INVALID_WORK_DIMENSION
    );
    assert_eq!(enqueue(store, 1, &[1], None), CL_SUCCESS);
    // reqd_work_group_size(4,2,1) must be matched.
    assert_eq!(set_arg(cl, fixed, 0, &b), CL_SUCCESS);
    assert_eq!(
        enqueue(fixed, 3, &[8, 2, 1], Some(&[2, 2, 1])),
        CL_INVALID_WORK_GROUP_SIZE
    );
    assert_eq!(enqueue(fixed, 3, &[8, 2, 1], Some(&[4, 2, 1])), CL_SUCCESS);
    assert_eq!(unsafe { cl.clFinish.unwrap()(q) }, CL_SUCCESS);
    release_mem(cl, b);
    release_kernel(cl, store);
    release_kernel(cl, fixed);
    release_program(cl, p);
    assert_eq!(unsafe { cl.clReleaseCommandQueue.unwrap()(q) }, CL_SUCCESS);
    release_context(cl, c);
}

/// Handles the child of [`objects_released_as_the_process_exits`]
/// releases in its exit handler, and how it reached vkcl.
static LEFT: Mutex<(Vec<usize>, bool)> = Mutex::new((Vec::new(), false));

extern "C" fn release_left() {
    let (left, through_loader) = std::mem::take(&mut *LEFT.lock().unwrap());
    let cl = if through_loader { loader() } else { direct() };
    let [k, p, b, q, c] = left[..] else { return };
    unsafe {
        cl.clReleaseKernel.unwrap()(k as cl_kernel);
        cl.clReleaseProgram.unwrap()(p as cl_program);
        cl.clReleaseMemObject.unwrap()(b as cl_mem);
        cl.clReleaseCommandQueue.unwrap()(q as cl_command_queue);
        cl.clReleaseContext.unwrap()(c as cl_context);
    }
}

/// Applications release objects in their own exit handlers and static
/// destructors (CLBlast's program cache does), which run after the
/// driver's: vkcl must then leave the driver alone. A child process
/// registers its exit handler before it first calls OpenCL (so that it
/// runs after the driver's), runs a kernel and keeps every object for the
/// handler to release; it must exit cleanly.
fn objects_released_as_the_process_exits(cl: &Cl) {
    let through_loader = cl.how == "ICD loader";
    if std::env::var_os("VKCL_TEST_EXIT_CHILD").is_some() {
        // SAFETY: registers a plain function.
        assert_eq!(unsafe { libc::atexit(release_left) }, 0);
        let mut s = Setup::new(cl);
        let src = "constant uint table[4] = {3, 5, 7, 11};\n\
                   kernel void look(global uint* b) { b[get_global_id(0)] = table[get_global_id(0) & 3]; }";
        let k = s.kernel(src, "look", "");
        let b = cl.buffer(s.c, CL_MEM_READ_WRITE, 64 * 4, null_mut());
        s.arg(k, 0, &b);
        assert_eq!(s.enqueue(k, &[64], None, None), CL_SUCCESS);
        assert_eq!(s.words(b, 4), [3, 5, 7, 11]);
        // The handler releases them; the setup, forgotten, does not.
        let p = query(|size, value, ret| unsafe {
            cl.clGetKernelInfo.unwrap()(k, CL_KERNEL_PROGRAM, size, value, ret)
        })
        .map(|v| usize_of(&v))
        .unwrap();
        *LEFT.lock().unwrap() = (
            vec![k as usize, p, b as usize, s.q as usize, s.c as usize],
            through_loader,
        );
        std::mem::forget(s);
        return;
    }
    let test = format!(
        "{}::objects_released_as_the_process_exits",
        if through_loader {
            "through_icd_loader"
        } else {
            "directly_linked"
        }
    );
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--test-threads=1"])
        .env("VKCL_TEST_EXIT_CHILD", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{}: the child ended with {}: {}{}",
        cl.how,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
