//! The cl_khr_subgroup_* extensions the device offers: ballots and masks,
//! non-uniform votes, arithmetic and broadcasts in divergent code (the
//! even and the odd lanes of each sub-group in different arms of a
//! branch), shuffles and rotations, 8- and 16-bit and 8-component types,
//! clustered reductions. Each result is checked per work-item against its
//! sub-group, with partial work-groups. Extensions the device lacks are
//! skipped.

mod common;

use common::*;
use opencl_sys::*;

both_ways!(
    ballot,
    divergent,
    shuffle,
    extended_types,
    clustered,
    rotate,
    required_sub_group_size
);

const SOURCE: &str = include_str!("kernels/subgroup_ext.cl");

/// (global, local) sizes: the last work-group is partial.
const SHAPES: &[(usize, usize)] = &[(100, 24), (70, 40)];

fn has(cl: &Cl, ext: &str) -> bool {
    let e = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    e.split_whitespace().any(|x| x == ext)
}

/// Sub-group width: CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE of a large
/// work-group.
fn width(cl: &Cl, k: cl_kernel) -> usize {
    let d = cl.device();
    let local = [256usize];
    let b = query(|size, value, size_ret| unsafe {
        cl.clGetKernelSubGroupInfo.unwrap()(
            k,
            d,
            CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
            std::mem::size_of_val(&local),
            local.as_ptr().cast(),
            size,
            value,
            size_ret,
        )
    })
    .unwrap();
    usize_of(&b)
}

/// Each work-item's sub-group, as the global ids of its lanes in order,
/// and its lane.
fn sub_groups(global: usize, local: usize, w: usize) -> Vec<(Vec<usize>, usize)> {
    (0..global)
        .map(|i| {
            let group = i / local;
            let size = local.min(global - group * local);
            let lid = i % local;
            let first = group * local + lid / w * w;
            let n = w.min(size - lid / w * w);
            ((first..first + n).collect(), lid % w)
        })
        .collect()
}

fn inputs(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) ^ seed) >> 7)
        .collect()
}

fn run_rows(
    cl: &Cl,
    name: &str,
    input: &[u8],
    global: usize,
    local: usize,
    row: usize,
) -> (Vec<u32>, usize) {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, name, "-cl-std=CL3.0");
    let w = width(cl, k);
    let inb = s.buffer_from(input);
    let out = s.zeroed(global * row * 4);
    s.arg(k, 0, &inb);
    s.arg(k, 1, &out);
    s.run(k, &[global], Some(&[local]), None);
    (s.words(out, global * row), w)
}

fn ballot(cl: &Cl) {
    if !has(cl, "cl_khr_subgroup_ballot") {
        return;
    }
    for &(global, local) in SHAPES {
        let x = inputs(global, 0x5a5a);
        let (got, w) = run_rows(cl, "sg_ballot", &bytes_of(&x), global, local, 8);
        for (i, (lanes, lane)) in sub_groups(global, local, w).into_iter().enumerate() {
            let bits: Vec<bool> = lanes.iter().map(|&g| x[g] & 1 != 0).collect();
            let count = bits.iter().filter(|&&b| b).count() as u32;
            let upto = |n: usize| bits[..n].iter().filter(|&&b| b).count() as u32;
            let lsb = bits.iter().position(|&b| b).map_or(99, |p| p as u32);
            let msb = bits.iter().rposition(|&b| b).map_or(99, |p| p as u32);
            let lt: u32 = if lane >= 32 {
                u32::MAX
            } else {
                (1u32 << lane) - 1
            };
            let eq: u32 = if lane >= 32 { 0 } else { 1u32 << lane };
            let want = [
                count,
                upto(lane + 1),
                upto(lane),
                lsb,
                msb,
                bits[lane] as u32,
                lt | (eq << 1),
                bits[0] as u32,
            ];
            assert_eq!(
                &got[i * 8..i * 8 + 8],
                &want,
                "{global}/{local} work-item {i}"
            );
        }
    }
}

fn divergent(cl: &Cl) {
    if !has(cl, "cl_khr_subgroup_non_uniform_arithmetic")
        || !has(cl, "cl_khr_subgroup_non_uniform_vote")
        || !has(cl, "cl_khr_subgroup_ballot")
    {
        return;
    }
    for &(global, local) in SHAPES {
        let x: Vec<i32> = inputs(global, 0x1234)
            .iter()
            .map(|&v| (v % 2001) as i32 - 300)
            .collect();
        let (got, w) = run_rows(cl, "sg_divergent", &bytes_of(&x), global, local, 6);
        let got: Vec<i32> = got.iter().map(|&v| v as i32).collect();
        for (i, (lanes, lane)) in sub_groups(global, local, w).into_iter().enumerate() {
            // The lanes of this work-item's arm.
            let arm: Vec<usize> = (0..lanes.len()).filter(|l| l % 2 == lane % 2).collect();
            let vals: Vec<i32> = arm.iter().map(|&l| x[lanes[l]]).collect();
            let me = arm.iter().position(|&l| l == lane).unwrap();
            let want = [
                vals.iter().fold(0i32, |a, &v| a.wrapping_add(v)),
                *vals[..=me].iter().max().unwrap(),
                (me == 0) as i32,
                x[lanes[lane % 2]],
                vals[0],
                vals.iter().all(|&v| v > 0) as i32,
            ];
            assert_eq!(
                &got[i * 6..i * 6 + 6],
                &want,
                "{global}/{local} work-item {i}"
            );
        }
    }
}

fn shuffle(cl: &Cl) {
    if !has(cl, "cl_khr_subgroup_shuffle") || !has(cl, "cl_khr_subgroup_shuffle_relative") {
        return;
    }
    for &(global, local) in SHAPES {
        let x = inputs(global, 0x777);
        let (got, w) = run_rows(cl, "sg_shuffle", &bytes_of(&x), global, local, 4);
        for (i, (lanes, lane)) in sub_groups(global, local, w).into_iter().enumerate() {
            let n = lanes.len();
            let row = &got[i * 4..i * 4 + 4];
            assert_eq!(row[0], x[lanes[(lane + 1) % n]], "shuffle, work-item {i}");
            // Lanes outside the sub-group give undefined values.
            if lane ^ 1 < n {
                assert_eq!(row[1], x[lanes[lane ^ 1]], "shuffle_xor, work-item {i}");
            }
            if lane >= 1 {
                assert_eq!(row[2], x[lanes[lane - 1]], "shuffle_up, work-item {i}");
            }
            if lane + 1 < n {
                assert_eq!(row[3], x[lanes[lane + 1]], "shuffle_down, work-item {i}");
            }
        }
    }
}

fn extended_types(cl: &Cl) {
    if !has(cl, "cl_khr_subgroup_extended_types") {
        return;
    }
    for &(global, local) in SHAPES {
        let x: Vec<i16> = inputs(global, 0x4321).iter().map(|&v| v as i16).collect();
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "sg_extended", "-cl-std=CL3.0");
        let w = width(cl, k);
        let inb = s.buffer_from(&bytes_of(&x));
        let (os, oc, ov) = (
            s.zeroed(global * 2),
            s.zeroed(global),
            s.zeroed(global * 16),
        );
        for (n, b) in [inb, os, oc, ov].iter().enumerate() {
            s.arg(k, n as u32, b);
        }
        s.run(k, &[global], Some(&[local]), None);
        let read = |b: cl_mem, len: usize| cl.read(s.q, b, 0, len);
        let (gs, gc, gv) = (
            read(os, global * 2),
            read(oc, global),
            read(ov, global * 16),
        );
        for (i, (lanes, lane)) in sub_groups(global, local, w).into_iter().enumerate() {
            let vals: Vec<i16> = lanes.iter().map(|&g| x[g]).collect();
            let scan = *vals[..=lane].iter().max().unwrap();
            assert_eq!(
                i16::from_le_bytes([gs[2 * i], gs[2 * i + 1]]),
                scan,
                "scan, work-item {i}"
            );
            let sum = vals.iter().fold(0i8, |a, &v| a.wrapping_add(v as i8));
            assert_eq!(gc[i] as i8, sum, "reduce, work-item {i}");
            let v: Vec<u16> = gv[i * 16..i * 16 + 16]
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            let want: Vec<u16> = (0..8).map(|k| (vals[0] as u16).wrapping_add(k)).collect();
            assert_eq!(v, want, "broadcast of ushort8, work-item {i}");
        }
    }
}

fn clustered(cl: &Cl) {
    if !has(cl, "cl_khr_subgroup_clustered_reduce") {
        return;
    }
    for &(global, local) in SHAPES {
        let x = inputs(global, 0x99);
        let (got, w) = run_rows(cl, "sg_clustered", &bytes_of(&x), global, local, 1);
        for (i, (lanes, lane)) in sub_groups(global, local, w).into_iter().enumerate() {
            let first = lane / 4 * 4;
            let cluster = &lanes[first..(first + 4).min(lanes.len())];
            let want = cluster.iter().fold(0u32, |a, &g| a.wrapping_add(x[g]));
            assert_eq!(got[i], want, "work-item {i}");
        }
        let (got, w) = run_rows(cl, "sg_clustered_more", &bytes_of(&x), global, local, 4);
        for (i, (lanes, lane)) in sub_groups(global, local, w).into_iter().enumerate() {
            let cluster = |n: usize| {
                let first = lane / n * n;
                lanes[first..(first + n).min(lanes.len())]
                    .iter()
                    .map(|&g| x[g] as i32)
                    .collect::<Vec<i32>>()
            };
            let max = cluster(8).into_iter().max().unwrap();
            let min = cluster(2)
                .into_iter()
                .map(|v| v as f32)
                .fold(f32::INFINITY, f32::min);
            let xor = cluster(4).into_iter().fold(0, |a, v| a ^ v);
            let odd = if x[i] & 1 == 1 {
                cluster(4)
                    .into_iter()
                    .filter(|v| v & 1 == 1)
                    .fold(0i32, |a, v| a.wrapping_add(v))
            } else {
                -1
            };
            let want = [max as u32, min.to_bits(), xor as u32, odd as u32];
            assert_eq!(got[4 * i..4 * i + 4], want, "work-item {i}");
        }
    }
}

fn rotate(cl: &Cl) {
    if !has(cl, "cl_khr_subgroup_rotate") {
        return;
    }
    for &(global, local) in SHAPES {
        let x = inputs(global, 0x31);
        let (got, w) = run_rows(cl, "sg_rotate", &bytes_of(&x), global, local, 2);
        // Rotations count lanes modulo the maximum sub-group size; lanes
        // beyond a partial sub-group give undefined values.
        let max = w.min(local);
        for (i, (lanes, lane)) in sub_groups(global, local, w).into_iter().enumerate() {
            let from = (lane + 3) % max;
            if from < lanes.len() {
                assert_eq!(got[2 * i], x[lanes[from]], "rotate, work-item {i}");
            }
            let from = (lane & !3) | ((lane + 1) & 3);
            if from < lanes.len() {
                assert_eq!(
                    got[2 * i + 1],
                    x[lanes[from]],
                    "clustered rotate, work-item {i}"
                );
            }
        }
    }
}

const REQUIRED: &str = "__attribute__((intel_reqd_sub_group_size(SIZE)))
kernel void required(global uint *out) {
    size_t i = get_global_id(0);
    out[2 * i] = get_max_sub_group_size();
    out[2 * i + 1] = get_sub_group_size();
}";

/// cl_intel_required_subgroup_size: each size the device offers runs
/// kernels in sub-groups of that size; others fail to build.
fn required_sub_group_size(cl: &Cl) {
    let d = cl.device();
    let sizes = cl.device_bytes(d, CL_DEVICE_SUB_GROUP_SIZES_INTEL);
    if !has(cl, "cl_intel_required_subgroup_size") {
        assert_eq!(sizes.err(), Some(CL_INVALID_VALUE), "{}", cl.how);
        return;
    }
    let sizes: Vec<usize> = sizes.unwrap().chunks_exact(8).map(usize_of).collect();
    assert!(
        !sizes.is_empty() && sizes.iter().all(|s| s.is_power_of_two()),
        "{sizes:?}"
    );
    for &size in &sizes {
        let mut s = Setup::new(cl);
        let src = REQUIRED.replace("SIZE", &size.to_string());
        let k = s.kernel(&src, "required", "-cl-std=CL3.0");
        let compiled = query(|n, v, r| unsafe {
            cl.clGetKernelSubGroupInfo.unwrap()(
                k,
                d,
                CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL,
                0,
                std::ptr::null(),
                n,
                v,
                r,
            )
        })
        .unwrap();
        assert_eq!(usize_of(&compiled), size, "{}", cl.how);
        assert_eq!(width(cl, k), size, "{}", cl.how);
        let attrs = query(|n, v, r| unsafe {
            cl.clGetKernelInfo.unwrap()(k, CL_KERNEL_ATTRIBUTES, n, v, r)
        })
        .unwrap();
        assert!(
            c_string(&attrs).contains(&format!("intel_reqd_sub_group_size({size})")),
            "{}",
            c_string(&attrs)
        );
        let most = usize_of(
            &query(|n, v, r| unsafe {
                cl.clGetKernelWorkGroupInfo.unwrap()(k, d, CL_KERNEL_WORK_GROUP_SIZE, n, v, r)
            })
            .unwrap(),
        );
        let local = most.min(4 * size);
        let global = 3 * local;
        let out = s.zeroed(global * 8);
        s.arg(k, 0, &out);
        s.run(k, &[global], Some(&[local]), None);
        let got = s.words(out, global * 2);
        for (i, pair) in got.chunks_exact(2).enumerate() {
            assert_eq!(
                pair, [size as u32; 2],
                "{}: work-item {i} of a kernel that requires {size}",
                cl.how
            );
        }
        // Larger work-groups than the kernel allows are refused.
        if most < 1024 {
            let r = s.enqueue(k, &[2 * (most + size)], Some(&[most + size]), None);
            assert_eq!(r, CL_INVALID_WORK_GROUP_SIZE, "{}", cl.how);
        }
    }
    // A size the device does not offer fails the build.
    let bad = sizes.iter().max().unwrap() * 2;
    let src = std::ffi::CString::new(REQUIRED.replace("SIZE", &bad.to_string())).unwrap();
    let s = Setup::new(cl);
    let mut ptr = src.as_ptr();
    let mut e = 1;
    let p = unsafe {
        cl.clCreateProgramWithSource.unwrap()(s.c, 1, &mut ptr, std::ptr::null(), &mut e)
    };
    assert_eq!(e, CL_SUCCESS);
    let opts = std::ffi::CString::new("-cl-std=CL3.0").unwrap();
    let r =
        unsafe { cl.clBuildProgram.unwrap()(p, 1, &d, opts.as_ptr(), None, std::ptr::null_mut()) };
    assert_eq!(
        r, CL_BUILD_PROGRAM_FAILURE,
        "{}: a kernel that requires sub-groups of {bad}",
        cl.how
    );
    // So does a link of it compiled on its own.
    let r = unsafe {
        cl.clCompileProgram.unwrap()(
            p,
            1,
            &d,
            opts.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
            None,
            std::ptr::null_mut(),
        )
    };
    if r == CL_SUCCESS {
        let mut e = 1;
        let linked = unsafe {
            cl.clLinkProgram.unwrap()(
                s.c,
                1,
                &d,
                std::ptr::null(),
                1,
                &p,
                None,
                std::ptr::null_mut(),
                &mut e,
            )
        };
        assert_eq!(
            e, CL_LINK_PROGRAM_FAILURE,
            "{}: a link of a kernel that requires sub-groups of {bad}",
            cl.how
        );
        if !linked.is_null() {
            unsafe { cl.clReleaseProgram.unwrap()(linked) };
        }
    } else {
        assert_eq!(r, CL_COMPILE_PROGRAM_FAILURE, "{}", cl.how);
    }
    unsafe { cl.clReleaseProgram.unwrap()(p) };
}
