//! Control flow the structurizer must handle: early returns, break and
//! continue, breaks out of nested loops, switch with fallthrough, returns
//! inside loops, do-while, short-circuit conditions and a helper with
//! several returns inlined twice; each built optimised and at -O0 and
//! checked against the host.

mod common;

use common::*;

both_ways!(every_shape_optimised, every_shape_unoptimised);

const SOURCE: &str = include_str!("kernels/control_flow_shapes.cl");
const N: usize = 64;

fn input() -> Vec<i32> {
    (0..N as i32).map(|i| (i * 7919) % 1000).collect()
}

fn helper(x: i32) -> i32 {
    if x < 0 {
        -x
    } else if x > 100 {
        100
    } else {
        x * 2
    }
}

/// The host's result of each kernel for work-item g.
fn reference(kernel: &str, a: &[i32], g: usize) -> Option<i32> {
    let at = |i: usize| a[i % N];
    Some(match kernel {
        "early_return" => {
            if g >= 60 {
                return None;
            }
            a[g] + 1
        }
        "break_continue" => {
            let mut s = 0;
            for i in 0..32 {
                let v = at(g + i);
                if v % 7 == 0 {
                    continue;
                }
                if v > 900 {
                    break;
                }
                s += v;
            }
            s
        }
        "nested_break" => {
            let mut s = 0;
            'done: for i in 0..8 {
                for j in 0..8 {
                    let v = at(g + i * 8 + j);
                    if v > 950 {
                        break 'done;
                    }
                    if v % 5 == 0 {
                        break;
                    }
                    s += v ^ j as i32;
                }
            }
            s
        }
        "switch_fallthrough" => match a[g] % 6 {
            0 => 11,
            1 => 10,
            2 | 3 => 100,
            _ => -1,
        },
        "return_in_loop" => (0..64)
            .find(|&i| at(g + i) == g as i32 % 17)
            .map_or(-1, |i| i as i32),
        "do_while_and_or" => {
            let (mut i, mut s) = (0, 0);
            loop {
                s += at(g + i);
                i += 1;
                if !((i < 10 && s < 2000) || i < 3) {
                    break;
                }
            }
            while s > 100 && (s & 1) != 0 || s > 5000 {
                s /= 2;
            }
            s + i as i32
        }
        "helper_twice" => (0..4)
            .map(|i| helper(at(g + i) - 50) + helper(at(g * 3 + i) + 20))
            .sum(),
        "while_and_or" => {
            let mut s = a[g];
            while s > 100 && (s & 1) != 0 || s > 5000 {
                s /= 2;
            }
            s
        }
        other => panic!("no reference for {other}"),
    })
}

fn every_shape(cl: &Cl, options: &str) {
    let a = input();
    for kernel in [
        "early_return",
        "break_continue",
        "nested_break",
        "switch_fallthrough",
        "return_in_loop",
        "do_while_and_or",
        "helper_twice",
        "while_and_or",
    ] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, kernel, options);
        let sentinel = vec![0x5555_5555u32; N];
        let (bi, bo) = (
            s.buffer_from(&bytes_of(&a)),
            s.buffer_from(&bytes_of(&sentinel)),
        );
        s.arg(k, 0, &bi);
        s.arg(k, 1, &bo);
        if kernel == "early_return" {
            s.arg(k, 2, &60i32);
        }
        s.run(k, &[N], Some(&[16]), None);
        let got = cl.read(s.q, bo, 0, N * 4);
        for g in 0..N {
            let v = u32_of(&got[4 * g..4 * g + 4]);
            let want = reference(kernel, &a, g).map_or(0x5555_5555, |w| w as u32);
            assert_eq!(v, want, "{}: {kernel} ({options:?}) item {g}", cl.how);
        }
    }
}

fn every_shape_optimised(cl: &Cl) {
    every_shape(cl, "");
}

fn every_shape_unoptimised(cl: &Cl) {
    every_shape(cl, "-cl-opt-disable");
}
