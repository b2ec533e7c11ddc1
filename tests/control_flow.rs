//! Control flow the structurizer must turn into Vulkan's structured form:
//! early returns, break/continue from ifs inside loops, breaks out of
//! nested loops, switch fallthrough, returns in loops, do-while, && and ||
//! loop conditions, inlined helpers with several returns, a kernel
//! calling another kernel, and a loop that may never end. Each kernel is built at -O0 and at the default
//! level and checked against a CPU reference.

mod common;

use std::ffi::{CString, c_void};

use common::*;
use opencl_sys::*;

both_ways!(
    early_return,
    helper_early_return,
    break_continue,
    nested_break,
    nested_break_flag,
    switch_fallthrough,
    return_in_loop,
    do_while,
    and_or_condition,
    helper_twice_in_loop,
    kernel_call_kernel_function,
    switch_in_loop,
    return_from_three_loops,
    uniform_barrier_loop,
    infinite_loop_with_exits,
    leaves_at_once_or_never,
    backward_gotos,
    jump_into_loop,
    switch_shared_targets,
    many_early_returns,
    long_loops,
);

const N: usize = 96;

/// The inputs every kernel reads: small numbers of both signs, repeats.
fn inputs() -> Vec<i32> {
    (0..N as i32).map(|i| (i * 7) % 23 - 5).collect()
}

/// Builds `name` from control_flow.cl with `options`, runs it over the
/// inputs with `out` preset to `initial`, and returns `out`.
fn run(cl: &Cl, name: &str, options: &str, initial: i32) -> Vec<i32> {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let src = CString::new(include_str!("kernels/control_flow.cl")).unwrap();
    let mut ptr = src.as_ptr();
    let mut err = 1;
    let p = unsafe {
        cl.clCreateProgramWithSource.unwrap()(c, 1, &mut ptr, std::ptr::null(), &mut err)
    };
    assert_eq!(err, CL_SUCCESS);
    let opts = CString::new(options).unwrap();
    let d = cl.device();
    let r =
        unsafe { cl.clBuildProgram.unwrap()(p, 1, &d, opts.as_ptr(), None, std::ptr::null_mut()) };
    if r != CL_SUCCESS {
        let log = query(|size, value, size_ret| unsafe {
            cl.clGetProgramBuildInfo.unwrap()(p, d, CL_PROGRAM_BUILD_LOG, size, value, size_ret)
        })
        .unwrap_or_default();
        panic!("{}: build with '{options}': {}", cl.how, c_string(&log));
    }
    let kname = CString::new(name).unwrap();
    let k = unsafe { cl.clCreateKernel.unwrap()(p, kname.as_ptr(), &mut err) };
    assert_eq!(
        err, CL_SUCCESS,
        "{}: kernel {name} with '{options}'",
        cl.how
    );
    let input: Vec<u8> = inputs().iter().flat_map(|v| v.to_ne_bytes()).collect();
    let preset: Vec<u8> = (0..N).flat_map(|_| initial.to_ne_bytes()).collect();
    let flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    let a = cl.buffer(c, flags, input.len(), input.as_ptr() as *mut c_void);
    let b = cl.buffer(c, flags, preset.len(), preset.as_ptr() as *mut c_void);
    let n = N as i32;
    let enqueued = unsafe {
        let set = cl.clSetKernelArg.unwrap();
        assert_eq!(
            set(k, 0, size_of::<cl_mem>(), (&a as *const cl_mem).cast()),
            CL_SUCCESS
        );
        assert_eq!(
            set(k, 1, size_of::<cl_mem>(), (&b as *const cl_mem).cast()),
            CL_SUCCESS
        );
        assert_eq!(
            set(k, 2, size_of::<i32>(), (&n as *const i32).cast()),
            CL_SUCCESS
        );
        let (global, local) = ([N], [32usize]);
        cl.clEnqueueNDRangeKernel.unwrap()(
            q,
            k,
            1,
            std::ptr::null(),
            global.as_ptr(),
            local.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(
        enqueued, CL_SUCCESS,
        "{}: enqueue {name} with '{options}'",
        cl.how
    );
    let out = cl.read(q, b, 0, preset.len());
    unsafe {
        cl.clReleaseMemObject.unwrap()(a);
        cl.clReleaseMemObject.unwrap()(b);
        cl.clReleaseKernel.unwrap()(k);
        cl.clReleaseProgram.unwrap()(p);
        cl.clReleaseCommandQueue.unwrap()(q);
        cl.clReleaseContext.unwrap()(c);
    }
    out.chunks(4)
        .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
        .collect()
}

/// Checks kernel `name` at -O0 and at the default level against `want`,
/// which maps (all inputs, index) to the expected output.
fn check(cl: &Cl, name: &str, initial: i32, want: impl Fn(&[i32], usize) -> i32) {
    let input = inputs();
    let expected: Vec<i32> = (0..N).map(|i| want(&input, i)).collect();
    for options in ["", "-cl-opt-disable"] {
        let got = run(cl, name, options, initial);
        assert_eq!(got, expected, "{}: {name} with '{options}'", cl.how);
    }
}

fn early_return(cl: &Cl) {
    check(cl, "early_return", 0, |input, i| {
        let x = input[i];
        if x < 0 {
            -1
        } else if x % 3 == 0 {
            3
        } else {
            x * 2
        }
    });
}

fn classify(x: i32) -> i32 {
    if x < 0 {
        -x
    } else if x > 10 {
        10
    } else if x == 5 {
        50
    } else {
        x + 1
    }
}

fn helper_early_return(cl: &Cl) {
    check(cl, "helper_early_return", 0, |input, i| {
        classify(input[i]) + 3 * classify(input[i] - 5)
    });
}

fn break_continue(cl: &Cl) {
    check(cl, "break_continue", 0, |input, i| {
        let x = input[i];
        let mut s = 0;
        for j in 0..(x & 15) + 4 {
            if j % 3 == 0 {
                continue;
            }
            if j * x > 50 {
                break;
            }
            s += j;
            if s == 7 {
                s += 100;
                continue;
            }
            s += 1;
        }
        s
    });
}

fn nested_break(cl: &Cl) {
    check(cl, "nested_break", 0, |input, i| {
        let x = input[i];
        for a in 0..8 {
            for b in 0..8 {
                if a * b + a == x {
                    return a * 8 + b;
                }
                if b > a + 3 {
                    break;
                }
            }
        }
        -1
    });
}

fn nested_break_flag(cl: &Cl) {
    check(cl, "nested_break_flag", 0, |input, i| {
        let x = input[i];
        let mut s = 0;
        let mut stop = false;
        let mut a = 0;
        while a < 6 && !stop {
            for b in 0..6 {
                s += a ^ b;
                if s > x {
                    stop = true;
                    break;
                }
                if (a + b) % 4 == 3 {
                    continue;
                }
                s += 1;
            }
            a += 1;
        }
        s
    });
}

fn switch_fallthrough(cl: &Cl) {
    check(cl, "switch_fallthrough", 0, |input, i| match input[i] % 7 {
        0 => 3,
        1 => 2,
        2 | 3 => 10,
        5 => 1100,
        _ => 1000,
    });
}

fn return_in_loop(cl: &Cl) {
    check(cl, "return_in_loop", 7, |input, i| {
        let x = input[i];
        for j in 1..20 {
            let y = input[(i + j) % N];
            if y == x + 1 {
                return j as i32;
            }
            if y == x - 1 {
                return 7;
            }
        }
        -1
    });
}

fn do_while(cl: &Cl) {
    check(cl, "do_while", 0, |input, i| {
        let mut x = input[i] + 100;
        let mut c = 0;
        loop {
            x = x / 2 + (x & 1);
            c += 1;
            if !(x > 1 && c < 50) {
                break;
            }
        }
        c * 1000 + x
    });
}

fn and_or_condition(cl: &Cl) {
    check(cl, "and_or_condition", 0, |input, i| {
        let x = input[i];
        let (mut s, mut j) = (0, 0);
        while (j < 10 && s < 100) || j < 3 {
            s += x + j;
            j += 1;
        }
        s * 100 + j
    });
}

fn step(v: i32) -> i32 {
    if v & 1 != 0 { 3 * v + 1 } else { v / 2 }
}

fn helper_twice_in_loop(cl: &Cl) {
    check(cl, "helper_twice_in_loop", 0, |input, i| {
        let mut v = input[i] + 50;
        for k in 0..12 {
            v = if k & 1 != 0 { step(v) } else { step(v + k) };
        }
        v
    });
}

fn kernel_call_kernel_function(cl: &Cl) {
    check(cl, "kernel_call_kernel_function", 0, |input, i| {
        let mut out = input[i].wrapping_mul(input[i]).wrapping_mul(input[i]);
        let w = i % 8;
        for _ in 0..2 {
            if w == 0 {
                out = 0;
            }
            out += input.iter().take(w).sum::<i32>();
        }
        out
    });
}

fn switch_in_loop(cl: &Cl) {
    check(cl, "switch_in_loop", 0, |input, i| {
        let x = input[i];
        let mut s = 0;
        for j in 0..16 {
            match (x + j) % 5 {
                0 => {
                    s += 1;
                    continue;
                }
                1 => s = s * 2 + 3,
                2 => s += 3,
                -3 => {
                    if s > 40 {
                        return s;
                    }
                    s -= 1;
                }
                _ => s ^= j,
            }
            s += 1;
        }
        s
    });
}

fn return_from_three_loops(cl: &Cl) {
    check(cl, "return_from_three_loops", 0, |input, i| {
        let x = input[i];
        'a: for a in 0..4 {
            for b in 0..4 {
                for c in 0..4 {
                    if a * 16 + b * 4 + c == x + 20 {
                        return a * 100 + b * 10 + c;
                    }
                    if c > b {
                        break;
                    }
                    if b > a + 1 {
                        break 'a;
                    }
                }
            }
        }
        -x
    });
}

fn uniform_barrier_loop(cl: &Cl) {
    // One work-group of N items reading its neighbours through __local.
    check(cl, "uniform_barrier_loop", 0, |input, i| {
        let (g, l) = (i / 32 * 32, i % 32);
        let mut s = 0;
        for k in 0..4 {
            if k == 2 {
                continue;
            }
            s += input[(g + (l + 1) % 32 + k) % N];
        }
        s
    });
}

fn infinite_loop_with_exits(cl: &Cl) {
    check(cl, "infinite_loop_with_exits", 0, |input, i| {
        let x = input[i];
        let mut j = 0;
        loop {
            j += 1;
            if j * j > x + 30 {
                return j;
            }
            if j == 3 && x > 10 {
                return 1000 + x;
            }
        }
    });
}

fn leaves_at_once_or_never(cl: &Cl) {
    check(cl, "leaves_at_once_or_never", 0, |input, i| input[i] * 2);
}

fn backward_gotos(cl: &Cl) {
    check(cl, "backward_gotos", 0, |input, i| {
        let (mut x, mut s) = (input[i], 0);
        loop {
            s += x;
            if s < 0 {
                x += 3;
                continue;
            }
            if s > 100 {
                return s;
            }
            if s & 3 == 1 {
                s += 7;
            } else {
                s *= 2;
            }
            if s < 50 {
                s += 11;
                continue;
            }
            return s;
        }
    });
}

fn jump_into_loop(cl: &Cl) {
    check(cl, "jump_into_loop", 0, |input, i| {
        let (x, mut s) = (input[i] & 7, 0);
        let mut inside = input[i] & 8 != 0;
        while inside || s < 100 {
            if !inside {
                s += 3;
            }
            inside = false;
            s += x;
            if s == 42 {
                break;
            }
        }
        s
    });
}

fn switch_shared_targets(cl: &Cl) {
    check(cl, "switch_shared_targets", 0, |input, i| {
        let x = input[i];
        let y = match x {
            1 | 2 | 9 => 5,
            3 => x * 7,
            -4 => -1,
            _ => 0,
        };
        y + x
    });
}

fn many_early_returns(cl: &Cl) {
    check(cl, "many_early_returns", 0, |input, i| {
        let (x, mut s) = (input[i], 0);
        for k in 0..=12 {
            if (x + k) % 7 == 3 {
                s += k;
                if s > k * 4 + 5 {
                    return s;
                }
            } else if (x ^ k) & 4 != 0 {
                s -= 1;
            }
            if [1, 4, 7, 10].contains(&k) {
                for j in 0..(x & 3) {
                    if j == k % 3 {
                        continue;
                    }
                    s += j;
                    if s == k {
                        break;
                    }
                }
            }
        }
        s
    });
}

/// Loops that run far more than 65535 times in one work-item (Mesa's
/// llvmpipe ends them there; vkcl unrolls them): one with a trip count
/// known at run time, optimised and not, nested ones with constant inner
/// counts around a barrier (the shape of a work-group scan), and a loop
/// around barriers.
fn long_loops(cl: &Cl) {
    const SRC: &str = "kernel void runtime_count(global uint* out, uint n) {\n\
             uint acc = 0, g = get_global_id(0);\n\
             for (uint i = 0; i < n; i++) acc = acc * 3u + (i ^ g);\n\
             out[get_global_id(0)] = acc;\n\
         }\n\
         kernel void scan_shape(global uint* out, uint units) {\n\
             local uint t[4][64];\n\
             uint lid = get_local_id(0), acc = 0;\n\
             for (uint u = 0; u < units; u++) {\n\
                 for (int k = 0; k < 64; k++) t[lid][k] = u + k + lid;\n\
                 barrier(CLK_LOCAL_MEM_FENCE);\n\
                 for (int k = 0; k < 64; k++) acc += t[3 - lid][k];\n\
                 barrier(CLK_LOCAL_MEM_FENCE);\n\
             }\n\
             out[lid] = acc;\n\
         }\n\
         kernel void barrier_loop(global uint* out, uint n) {\n\
             local uint t[4];\n\
             uint lid = get_local_id(0), acc = 0;\n\
             for (uint i = 0; i < n; i++) {\n\
                 t[lid] = i + lid;\n\
                 barrier(CLK_LOCAL_MEM_FENCE);\n\
                 acc += t[3 - lid];\n\
                 barrier(CLK_LOCAL_MEM_FENCE);\n\
             }\n\
             out[lid] = acc;\n\
         }\n\
         kernel void sequential_scan(global uint* out, uint n) {\n\
             uint acc = 0;\n\
             for (uint i = 0; i < n; i++) { acc += i; out[i] = acc; }\n\
             uint total = out[n - 1];\n\
             for (uint i = 0; i < n; i++) out[i] = total - out[i];\n\
         }\n";
    let mut s = Setup::new(cl);
    // Runs `name` with argument `n` over `items` work-items in one group and
    // reads back a word each.
    let mut run = |name: &str, options: &str, n: u32, items: usize| -> Vec<u32> {
        let k = s.kernel(SRC, name, options);
        let out = s.zeroed(items * 4);
        s.arg(k, 0, &out);
        s.arg(k, 1, &n);
        s.run(k, &[items], Some(&[items]), None);
        s.words(out, items)
    };
    let runtime_count = |n: u32| -> Vec<u32> {
        (0..2u32)
            .map(|g| (0..n).fold(0u32, |acc, i| acc.wrapping_mul(3).wrapping_add(i ^ g)))
            .collect()
    };
    for (options, n) in [("", 300_000), ("-cl-opt-disable", 200_000)] {
        assert_eq!(
            run("runtime_count", options, n, 2),
            runtime_count(n),
            "{}: runtime_count {options:?}",
            cl.how
        );
    }
    let units: u32 = 2_000;
    let want: Vec<u32> = (0..4u32)
        .map(|lid| {
            let other = 3 - lid;
            (0..units)
                .flat_map(|u| (0..64).map(move |k| u + k + other))
                .fold(0u32, u32::wrapping_add)
        })
        .collect();
    assert_eq!(
        run("scan_shape", "", units, 4),
        want,
        "{}: scan_shape",
        cl.how
    );
    let n: u32 = 150_000;
    let want: Vec<u32> = (0..4u32)
        .map(|lid| (0..n).fold(0u32, |acc, i| acc.wrapping_add(i + 3 - lid)))
        .collect();
    assert_eq!(
        run("barrier_loop", "", n, 4),
        want,
        "{}: barrier_loop",
        cl.how
    );
    // One work-item walks a buffer of 4M words twice, as a sequential
    // scan does: 8M iterations in one invocation.
    let n: u32 = 1 << 22;
    let k = s.kernel(SRC, "sequential_scan", "");
    let out = s.zeroed(n as usize * 4);
    s.arg(k, 0, &out);
    s.arg(k, 1, &n);
    s.run(k, &[1], Some(&[1]), None);
    let got = s.words(out, n as usize);
    let prefix: Vec<u32> = (0..n)
        .scan(0u32, |acc, i| {
            *acc = acc.wrapping_add(i);
            Some(*acc)
        })
        .collect();
    let total = prefix[prefix.len() - 1];
    let first_wrong = (0..n as usize).find(|&i| got[i] != total.wrapping_sub(prefix[i]));
    assert_eq!(first_wrong, None, "{}: sequential_scan", cl.how);
}
