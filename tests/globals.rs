//! Program-scope variables (`__opencl_c_program_scope_global_variables`)
//! and module-scope constant data: initialisers of every kind, values kept
//! from one enqueue and one kernel to the next, one set of variables per
//! program, function-scope `static` variables, variables shared between
//! linked programs, and the queries that describe them.

mod common;

use std::ffi::CString;
use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    variables_start_initialised,
    variables_start_initialised_unoptimised,
    constant_tables_indexed_at_run_time,
    variables_keep_values_between_enqueues_and_kernels,
    pointer_variable_moved_by_one_kernel,
    static_variable_in_a_function,
    variables_shared_by_linked_programs,
    global_variable_queries,
);

const SOURCE: &str = include_str!("kernels/globals.cl");
const OPTIONS: &str = "-cl-std=CL3.0";

/// Another kernel of the program `k` belongs to (released by the caller).
fn sibling(cl: &Cl, k: cl_kernel, name: &str) -> cl_kernel {
    let mut p: cl_program = null_mut();
    let r = unsafe {
        cl.clGetKernelInfo.unwrap()(
            k,
            CL_KERNEL_PROGRAM,
            std::mem::size_of::<cl_program>(),
            (&mut p as *mut cl_program).cast(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    let n = CString::new(name).unwrap();
    let mut err = 1;
    let k = unsafe { cl.clCreateKernel.unwrap()(p, n.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS, "kernel {name}");
    k
}

fn release_kernel(cl: &Cl, k: cl_kernel) {
    assert_eq!(unsafe { cl.clReleaseKernel.unwrap()(k) }, CL_SUCCESS);
}

fn read_all(cl: &Cl, options: &str) {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "read_all", options);
    let out = s.zeroed(8 * 25);
    s.arg(k, 0, &out);
    s.run(k, &[1], None, None);
    let got = i64s(&cl.read(s.q, out, 0, 8 * 25));
    let want: Vec<i64> = vec![
        10,
        20,
        30,
        40,
        50,
        'v' as i64,
        'k' as i64,
        'c' as i64,
        'l' as i64,
        '!' as i64,
        0,
        -1234567890123,
        10,
        321,
        17,
        'm' as i64,
        1 << 40,
        120,
        987,
        40,
        30,
        1,
        40,
        9,
        0,
    ];
    assert_eq!(got, want, "{}: {options}", cl.how);
}

fn variables_start_initialised(cl: &Cl) {
    read_all(cl, OPTIONS);
}

fn variables_start_initialised_unoptimised(cl: &Cl) {
    read_all(cl, "-cl-std=CL3.0 -cl-opt-disable");
}

fn constant_tables_indexed_at_run_time(cl: &Cl) {
    let n = 256usize;
    let index: Vec<i32> = (0..n as i32).map(|i| (i * 7 + 3) % 61).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "lookup", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&index));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[32]), None);
    let got = i32s(&cl.read(s.q, bo, 0, 4 * n));
    let table = [10, 20, 30, 40, 50];
    let want: Vec<i32> = index
        .iter()
        .map(|&i| (i & 7) * (i & 7) + table[(i % 5) as usize])
        .collect();
    assert_eq!(got, want, "{}", cl.how);
}

fn variables_keep_values_between_enqueues_and_kernels(cl: &Cl) {
    let mut s = Setup::new(cl);
    let bump = s.kernel(SOURCE, "bump", OPTIONS);
    let read = sibling(cl, bump, "read_counter");
    let out = s.zeroed(8);
    s.arg(bump, 0, &2i32);
    s.arg(read, 0, &out);
    for _ in 0..3 {
        s.run(bump, &[64], Some(&[16]), None);
    }
    s.run(read, &[1], None, None);
    assert_eq!(
        i32s(&cl.read(s.q, out, 0, 8)),
        [3 * 64 * 2, 13],
        "{}",
        cl.how
    );
    // A second program from the same source has variables of its own.
    let other = s.kernel(SOURCE, "read_counter", OPTIONS);
    s.arg(other, 0, &out);
    s.run(other, &[1], None, None);
    assert_eq!(i32s(&cl.read(s.q, out, 0, 8)), [0, 10], "{}", cl.how);
    // And the first program's are still there.
    s.run(read, &[1], None, None);
    assert_eq!(i32s(&cl.read(s.q, out, 0, 8)), [384, 13], "{}", cl.how);
    release_kernel(cl, read);
}

fn pointer_variable_moved_by_one_kernel(cl: &Cl) {
    let mut s = Setup::new(cl);
    let advance = s.kernel(SOURCE, "advance", OPTIONS);
    let follow = sibling(cl, advance, "follow");
    let out = s.zeroed(8);
    s.arg(follow, 0, &out);
    s.run(advance, &[1], None, None);
    s.run(advance, &[1], None, None);
    s.run(follow, &[1], None, None);
    assert_eq!(i32s(&cl.read(s.q, out, 0, 8)), [50, 4], "{}", cl.how);
    release_kernel(cl, follow);
}

fn static_variable_in_a_function(cl: &Cl) {
    let n = 16usize;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "tickets", OPTIONS);
    let out = s.zeroed(4 * n);
    s.arg(k, 0, &out);
    for round in 0..2 {
        s.run(k, &[n], None, None);
        let mut got = i32s(&cl.read(s.q, out, 0, 4 * n));
        got.sort_unstable();
        let first = 100 + (round * n) as i32;
        let want: Vec<i32> = (first..first + n as i32).collect();
        assert_eq!(got, want, "{}: round {round}", cl.how);
    }
}

/// A program compiled from `source` with `options` (not linked).
fn compiled(cl: &Cl, c: cl_context, source: &str, options: &str) -> cl_program {
    let src = CString::new(source).unwrap();
    let mut ptr = src.as_ptr();
    let mut err = 1;
    let p = unsafe { cl.clCreateProgramWithSource.unwrap()(c, 1, &mut ptr, null(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let opts = CString::new(options).unwrap();
    let r = unsafe {
        cl.clCompileProgram.unwrap()(
            p,
            0,
            null(),
            opts.as_ptr(),
            0,
            null(),
            null_mut(),
            None,
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS, "{}: compile", cl.how);
    p
}

fn variables_shared_by_linked_programs(cl: &Cl) {
    // Linking needs spirv-link; devices report whether they have it.
    let linker = cl
        .device_bytes(cl.device(), CL_DEVICE_LINKER_AVAILABLE)
        .unwrap();
    if u32_of(&linker) == 0 {
        return;
    }
    let s = Setup::new(cl);
    let a = compiled(
        cl,
        s.c,
        "global int shared_value = 7;\n\
         kernel void set_value(int v) { shared_value += v; }",
        OPTIONS,
    );
    let b = compiled(
        cl,
        s.c,
        "extern global int shared_value;\n\
         kernel void get_value(global int *o) { o[0] = shared_value; }",
        OPTIONS,
    );
    let inputs = [a, b];
    let mut err = 1;
    let linked = unsafe {
        cl.clLinkProgram.unwrap()(
            s.c,
            0,
            null(),
            null(),
            2,
            inputs.as_ptr(),
            None,
            null_mut(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS, "{}: link", cl.how);
    let name = |n: &str| {
        let n = CString::new(n).unwrap();
        let mut err = 1;
        let k = unsafe { cl.clCreateKernel.unwrap()(linked, n.as_ptr(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        k
    };
    let (set, get) = (name("set_value"), name("get_value"));
    let out = cl.buffer(s.c, CL_MEM_READ_WRITE, 4, null_mut());
    s.arg(set, 0, &35i32);
    s.arg(get, 0, &out);
    s.run(set, &[1], None, None);
    s.run(get, &[1], None, None);
    assert_eq!(i32s(&cl.read(s.q, out, 0, 4)), [42], "{}", cl.how);
    unsafe {
        cl.clReleaseMemObject.unwrap()(out);
        cl.clReleaseKernel.unwrap()(set);
        cl.clReleaseKernel.unwrap()(get);
        for p in [a, b, linked] {
            cl.clReleaseProgram.unwrap()(p);
        }
    }
}

fn global_variable_queries(cl: &Cl) {
    let d = cl.device();
    let max = usize_of(
        &cl.device_bytes(d, CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE)
            .unwrap(),
    );
    assert!(max >= 64 * 1024, "{}: {max}", cl.how);
    let preferred = usize_of(
        &cl.device_bytes(d, CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE)
            .unwrap(),
    );
    assert!(preferred > 0);
    let features = cl.device_bytes(d, CL_DEVICE_OPENCL_C_FEATURES).unwrap();
    let names: Vec<String> = features
        .chunks_exact(std::mem::size_of::<cl_name_version>())
        .map(|c| {
            let name = &c[4..];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            String::from_utf8_lossy(&name[..end]).into_owned()
        })
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n == "__opencl_c_program_scope_global_variables"),
        "{}: {names:?}",
        cl.how
    );
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "read_counter", OPTIONS);
    let read = sibling(cl, k, "read_counter");
    let mut p: cl_program = null_mut();
    unsafe {
        cl.clGetKernelInfo.unwrap()(
            read,
            CL_KERNEL_PROGRAM,
            std::mem::size_of::<cl_program>(),
            (&mut p as *mut cl_program).cast(),
            null_mut(),
        )
    };
    let total = usize_of(
        &query(|size, value, size_ret| unsafe {
            cl.clGetProgramBuildInfo.unwrap()(
                p,
                d,
                CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE,
                size,
                value,
                size_ret,
            )
        })
        .unwrap(),
    );
    // counter, table, letters, big, f, v3, bytes16, mixed, middle,
    // nowhere and the static ticket: at least their sizes.
    let sizes = 4 + 20 + 6 + 8 + 4 + 16 + 16 + 48 + 8 + 8 + 4;
    assert!(total >= sizes && total <= max, "{}: {total}", cl.how);
    release_kernel(cl, read);
}
