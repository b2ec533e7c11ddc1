//! NDRanges that do not fit one Vulkan dispatch: more work-groups than
//! the device's dispatch limit, and global sizes that are not a multiple
//! of the local size (OpenCL 2.0+ non-uniform work-groups). Each is
//! checked against the work-item functions computed on the CPU.

mod common;

use common::*;
use opencl_sys::*;

both_ways!(
    non_uniform_three_d_with_offsets,
    more_groups_than_one_dispatch,
    partial_group_after_split_dispatches,
    uniform_programs_reject_partial_groups,
    default_local_size_stays_uniform,
    device_reports_non_uniform_groups,
    arguments_beyond_push_constants,
    struct_by_value,
    wide_and_narrow_vectors_by_value,
    pipeline_cache_is_saved,
    partial_group_with_local_memory,
    column_groups,
    required_size_with_partial_group,
    required_size_beyond_the_device,
);

const SOURCE: &str = include_str!("kernels/dispatch.cl");
const ARGS: &str = include_str!("kernels/args.cl");

/// Runs `items` and checks every work-item function of every item
/// against the OpenCL 3.0 definitions, computed here.
fn check_items(
    s: &mut Setup,
    options: &str,
    global: [usize; 3],
    local: [usize; 3],
    offset: [usize; 3],
) {
    let k = s.kernel(SOURCE, "items", options);
    let count: usize = global.iter().product();
    let out = s.zeroed(count * 19 * 4);
    s.arg(k, 0, &out);
    assert_eq!(
        s.enqueue(k, &global, Some(&local), Some(&offset)),
        CL_SUCCESS
    );
    let got = s.words(out, count * 19);
    for z in 0..global[2] {
        for y in 0..global[1] {
            for x in 0..global[0] {
                let i = (z * global[1] + y) * global[0] + x;
                let at = [x, y, z];
                let o = &got[19 * i..19 * i + 19];
                for d in 0..3 {
                    let group = at[d] / local[d];
                    let full = global[d] / local[d];
                    // The last group of a dimension holds the remainder.
                    let size = if group < full {
                        local[d]
                    } else {
                        global[d] % local[d]
                    };
                    let want = [
                        at[d] + offset[d],
                        at[d] % local[d],
                        group,
                        size,
                        local[d],
                        global[d].div_ceil(local[d]),
                    ];
                    let have: Vec<usize> =
                        o[6 * d..6 * d + 6].iter().map(|&v| v as usize).collect();
                    assert_eq!(
                        have, want,
                        "item {at:?}, dimension {d} (global id, local id, group id, local size, enqueued local size, groups)"
                    );
                }
                assert_eq!(o[18] as usize, i, "global linear id of {at:?}");
            }
        }
    }
}

fn non_uniform_three_d_with_offsets(cl: &Cl) {
    let mut s = Setup::new(cl);
    check_items(&mut s, "-cl-std=CL3.0", [7, 5, 3], [3, 2, 2], [2, 4, 1]);
    // Uniform in two dimensions, partial in one.
    check_items(&mut s, "-cl-std=CL3.0", [8, 5, 4], [4, 4, 2], [0, 0, 0]);
    // A single partial group per dimension.
    check_items(&mut s, "-cl-std=CL3.0", [3, 2, 1], [4, 4, 2], [1, 1, 1]);
}

/// Runs `once` over `global` items and checks that each ran exactly once
/// with the expected group id (and partial-group flag).
fn check_once(s: &mut Setup, options: &str, global: usize, local: usize, offset: usize) {
    let k = s.kernel(SOURCE, "once", options);
    let hits = s.zeroed(global * 4);
    let groups = s.zeroed(global * 4);
    s.arg(k, 0, &hits);
    s.arg(k, 1, &groups);
    s.arg(k, 2, &(global.div_ceil(local) as u32));
    assert_eq!(
        s.enqueue(k, &[global], Some(&[local]), Some(&[offset])),
        CL_SUCCESS,
        "{}: {global} items in groups of {local}",
        s.cl.how
    );
    let hits = s.words(hits, global);
    let groups = s.words(groups, global);
    let full = global / local;
    for i in 0..global {
        assert_eq!(hits[i], 1, "item {i} of {global}");
        let partial = if i / local >= full { 0x4000_0000 } else { 0 };
        assert_eq!(
            groups[i] as usize,
            (i / local) | partial,
            "group of item {i}"
        );
    }
}

fn more_groups_than_one_dispatch(cl: &Cl) {
    let mut s = Setup::new(cl);
    let limit = 65535usize;
    // Beyond the limit of lavapipe and most GPUs: three dispatches.
    check_once(&mut s, "", 2 * limit + 1234, 1, 3);
}

fn partial_group_after_split_dispatches(cl: &Cl) {
    let mut s = Setup::new(cl);
    // 70000 full groups of 2 (two dispatches) and one of 1.
    check_once(&mut s, "-cl-std=CL3.0", 140_001, 2, 0);
}

fn uniform_programs_reject_partial_groups(cl: &Cl) {
    let mut s = Setup::new(cl);
    for options in [
        "",
        "-cl-std=CL1.2",
        "-cl-std=CL3.0 -cl-uniform-work-group-size",
    ] {
        let k = s.kernel(SOURCE, "once", options);
        let b = s.zeroed(64);
        s.arg(k, 0, &b);
        s.arg(k, 1, &b);
        s.arg(k, 2, &3u32);
        assert_eq!(
            s.enqueue(k, &[7], Some(&[3]), None),
            CL_INVALID_WORK_GROUP_SIZE,
            "options {options:?}"
        );
        assert_eq!(s.enqueue(k, &[6], Some(&[3]), None), CL_SUCCESS);
    }
}

fn default_local_size_stays_uniform(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "items", "-cl-std=CL3.0");
    let global = [1000usize, 6, 1];
    let count = 6000;
    let out = s.zeroed(count * 19 * 4);
    s.arg(k, 0, &out);
    assert_eq!(s.enqueue(k, &global[..2], None, None), CL_SUCCESS);
    let got = s.words(out, count * 19);
    for i in 0..count {
        let o = &got[19 * i..19 * i + 19];
        for d in 0..2 {
            assert_eq!(o[6 * d + 3], o[6 * d + 4], "item {i}: a partial group");
            assert_eq!(global[d] % o[6 * d + 3] as usize, 0, "item {i}");
        }
    }
}

fn device_reports_non_uniform_groups(cl: &Cl) {
    let b = cl
        .device_bytes(cl.device(), CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT)
        .unwrap();
    assert_eq!(u32_of(&b), CL_TRUE);
}

fn arguments_beyond_push_constants(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(ARGS, "many", "");
    let n = 64usize;
    let out = s.zeroed(n * 8);
    s.arg(k, 0, &out);
    let a: Vec<i64> = (0..19)
        .map(|i| (i * i) as i64 - 7 + (i as i64) * 1_000_000_007)
        .collect();
    let mut index = 1;
    for (j, v) in a.iter().enumerate() {
        if j == 10 {
            s.arg(k, index, &-5i32);
            index += 1;
        }
        s.arg(k, index, v);
        index += 1;
    }
    s.arg(k, index, &42.75f32);
    assert_eq!(s.enqueue(k, &[n], Some(&[16]), None), CL_SUCCESS);
    let got = s.cl.read(s.q, out, 0, n * 8);
    let sum: i64 = a.iter().enumerate().map(|(j, v)| (j as i64 + 1) * v).sum();
    for i in 0..n {
        let v = i64::from_ne_bytes(got[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(v, sum * i as i64 - 5 + 42, "item {i}");
    }
}

/// Writes `v` at `at` of `buf`.
fn put(buf: &mut [u8], at: usize, v: &[u8]) {
    buf[at..at + v.len()].copy_from_slice(v);
}

fn struct_by_value(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(ARGS, "structs", "");
    let out = s.zeroed(12 * 4);
    // Outer in the OpenCL C layout: tag@0, in@16 (c@16, i@20, v@32,
    // s@48), l@64, c3@72 (4 bytes), 80 bytes in all.
    let mut o = vec![0xAAu8; 80];
    put(&mut o, 0, &[200]);
    put(&mut o, 16, &[(-3i8) as u8]);
    put(&mut o, 20, &123_456i32.to_ne_bytes());
    for (j, f) in [1.0f32, 2.0, 3.0, -9.0].iter().enumerate() {
        put(&mut o, 32 + 4 * j, &f.to_ne_bytes());
    }
    for (j, v) in [-300i16, 7, 31_000].iter().enumerate() {
        put(&mut o, 48 + 2 * j, &v.to_ne_bytes());
    }
    put(&mut o, 64, &0x1234_5678_9abc_def0u64.to_ne_bytes());
    put(&mut o, 72, &[5, (-6i8) as u8, 7, 0]);
    s.arg(k, 0, &out);
    s.arg_bytes(k, 1, &o);
    s.arg(k, 2, &77i32);
    assert_eq!(s.enqueue(k, &[1], Some(&[1]), None), CL_SUCCESS);
    let got = s.words(out, 12);
    let big = s.kernel(ARGS, "big", "");
    let big_out = s.zeroed(240 * 4);
    let mut b: Vec<u8> = (0..240i32)
        .flat_map(|i| (i * 7 - 500).to_ne_bytes())
        .collect();
    b.extend_from_slice(&(-11i16).to_ne_bytes());
    b.resize(964, 0);
    s.arg(big, 0, &big_out);
    s.arg_bytes(big, 1, &b);
    assert_eq!(s.enqueue(big, &[240], Some(&[16]), None), CL_SUCCESS);
    let big_got = s.words(big_out, 240);
    for (i, v) in big_got.iter().enumerate() {
        assert_eq!(*v as i32, (i as i32 * 7 - 500) * 2 - 11, "big.v[{i}]");
    }
    let want: Vec<i32> = vec![
        200,
        -3,
        123_456,
        1,
        -9,
        -300,
        31_000,
        0x1234_5678,
        0x9abc_def0u32 as i32,
        5,
        7,
        77,
    ];
    assert_eq!(got.iter().map(|&v| v as i32).collect::<Vec<_>>(), want);
}

fn wide_and_narrow_vectors_by_value(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(ARGS, "vectors", "");
    let out = s.zeroed(62 * 8);
    let f: Vec<f32> = (0..8).map(|i| i as f32 * 3.0 - 10.0).collect();
    let c: Vec<i8> = (0..16).map(|i| (i * 17 - 100) as i8).collect();
    let sh: Vec<i16> = (0..8).map(|i| (i * 4000 - 15_000) as i16).collect();
    let c3: [i8; 4] = [-1, 2, -3, 99];
    let u8s: Vec<u8> = (0..8).map(|i| 250 - i * 30).collect();
    let l: Vec<i64> = (0..16).map(|i| (i - 8) * 1_000_000_000_007).collect();
    let u2: [u16; 2] = [65_000, 3];
    s.arg(k, 0, &out);
    s.arg_bytes(
        k,
        1,
        &f.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>(),
    );
    s.arg_bytes(k, 2, &c.iter().map(|&v| v as u8).collect::<Vec<_>>());
    s.arg_bytes(
        k,
        3,
        &sh.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>(),
    );
    s.arg_bytes(k, 4, &c3.iter().map(|&v| v as u8).collect::<Vec<_>>());
    s.arg_bytes(k, 5, &u8s);
    s.arg_bytes(
        k,
        6,
        &l.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>(),
    );
    s.arg_bytes(
        k,
        7,
        &u2.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>(),
    );
    s.arg(k, 8, &-4i32);
    assert_eq!(s.enqueue(k, &[1], Some(&[1]), None), CL_SUCCESS);
    let got = s.cl.read(s.q, out, 0, 62 * 8);
    let got: Vec<i64> = got
        .chunks_exact(8)
        .map(|b| i64::from_ne_bytes(b.try_into().unwrap()))
        .collect();
    let mut want: Vec<i64> = Vec::new();
    want.extend(f.iter().map(|&v| v as i64));
    want.extend(c.iter().map(|&v| v as i64));
    want.extend(sh.iter().map(|&v| v as i64));
    want.extend(c3[..3].iter().map(|&v| v as i64));
    want.extend(u8s.iter().map(|&v| v as i64));
    want.extend(l.iter().copied());
    want.extend(u2.iter().map(|&v| v as i64));
    want.push(-4);
    assert_eq!(got, want);
}

/// vkcl's cache directory, as the README documents it.
fn cache_dir() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    if std::env::var("VKCL_CACHE").is_ok_and(|v| v == "0") {
        return None;
    }
    if let Some(d) = std::env::var_os("VKCL_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("vkcl"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("vkcl"))
}

fn pipeline_cache_is_saved(cl: &Cl) {
    let Some(dir) = cache_dir() else { return };
    let mut s = Setup::new(cl);
    // A work-group size no other test uses makes a new pipeline.
    let k = s.kernel(SOURCE, "once", "");
    let hits = s.zeroed(13 * 4);
    s.arg(k, 0, &hits);
    s.arg(k, 1, &hits);
    s.arg(k, 2, &1u32);
    assert_eq!(s.enqueue(k, &[13], Some(&[13]), None), CL_SUCCESS);
    unsafe { cl.clFinish.unwrap()(s.q) };
    let saved = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            e.file_name().to_string_lossy().starts_with("vk-pipelines-")
                && e.metadata().is_ok_and(|m| m.len() > 0)
        });
    assert!(saved, "no pipeline cache in {}", dir.display());
}

fn partial_group_with_local_memory(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "group_sums", "-cl-std=CL3.0");
    let (n, local) = (1000usize, 64usize);
    let data: Vec<u8> = (0..n as u32)
        .flat_map(|v| (v * 3 + 1).to_ne_bytes())
        .collect();
    let input = s.zeroed(n * 4);
    s.cl.write(s.q, input, 0, &data);
    let groups = n.div_ceil(local);
    let sums = s.zeroed(groups * 4);
    s.arg(k, 0, &input);
    s.arg(k, 1, &sums);
    let r = unsafe { s.cl.clSetKernelArg.unwrap()(k, 2, local * 4, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(s.enqueue(k, &[n], Some(&[local]), None), CL_SUCCESS);
    let got = s.words(sums, groups);
    for (g, sum) in got.iter().enumerate() {
        let want: u32 = (g * local..((g + 1) * local).min(n))
            .map(|v| v as u32 * 3 + 1)
            .sum();
        assert_eq!(*sum, want, "group {g}");
    }
}

/// Work-groups narrower in their first dimension than the device's
/// vectors (columns: local size (1, n)), which CPU devices run as 1-D
/// Vulkan work-groups: every work-item function, and __local memory
/// shared along the column through a barrier, partial groups included.
fn column_groups(cl: &Cl) {
    let mut s = Setup::new(cl);
    check_items(&mut s, "-cl-std=CL3.0", [3, 37, 2], [1, 16, 2], [0, 1, 0]);
    check_items(&mut s, "-cl-std=CL3.0", [4, 6, 5], [2, 3, 5], [1, 0, 2]);
    let k = s.kernel(SOURCE, "column_sums", "-cl-std=CL3.0");
    let (w, h, local) = (5usize, 100usize, 32usize);
    let data: Vec<u32> = (0..(w * h) as u32).map(|v| v * 7 + 3).collect();
    let input = s.buffer_from(
        &data
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
    );
    let out = s.zeroed(w * h * 4);
    s.arg(k, 0, &input);
    s.arg(k, 1, &out);
    let r = unsafe { s.cl.clSetKernelArg.unwrap()(k, 2, local * 4, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(s.enqueue(k, &[w, h], Some(&[1, local]), None), CL_SUCCESS);
    let got = s.words(out, w * h);
    for y in 0..h {
        for x in 0..w {
            let group = y / local;
            let end = ((group + 1) * local).min(h);
            let below = if y + 1 < end {
                data[(y + 1) * w + x]
            } else {
                0
            };
            let want = data[y * w + x] + below + 1000 * group as u32;
            assert_eq!(got[y * w + x], want, "{}: ({x}, {y})", cl.how);
        }
    }
}

fn required_size_with_partial_group(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "sized", "-cl-std=CL3.0");
    let out = s.zeroed(10 * 4);
    s.arg(k, 0, &out);
    // No local size: the required one, with a partial last group.
    assert_eq!(s.enqueue(k, &[10], None, None), CL_SUCCESS);
    let want: Vec<u32> = (0..10u32)
        .map(|i| if i < 8 { 400 + i / 4 } else { 202 })
        .collect();
    assert_eq!(s.words(out, 10), want);
    let k = s.kernel(SOURCE, "sized", "-cl-std=CL1.2");
    s.arg(k, 0, &out);
    assert_eq!(s.enqueue(k, &[10], None, None), CL_INVALID_WORK_GROUP_SIZE);
}

/// Kernels whose required work-group size no device runs: 131072
/// work-items, and a size whose product passes 32 bits.
const TOO_LARGE: &str = "__attribute__((reqd_work_group_size(8, 128, 128)))\n\
     kernel void large(global uint *out) { out[get_global_id(0)] = 1; }\n\
     __attribute__((reqd_work_group_size(65536, 65536, 1)))\n\
     kernel void huge(global uint *out) { out[get_global_id(0)] = 1; }\n";

/// Such kernels build and report their size (the specification lets a
/// program hold kernels a device cannot run), and every enqueue fails
/// with CL_INVALID_WORK_GROUP_SIZE (CL_INVALID_WORK_ITEM_SIZE for a local
/// size beyond the device's per dimension) before a Vulkan pipeline is
/// made: Vulkan forbids one beyond the device's limits (the validation
/// layer aborts the test on one). The size whose product passes 32 bits
/// overflowed the enqueue's check.
fn required_size_beyond_the_device(cl: &Cl) {
    let mut s = Setup::new(cl);
    let d = cl.device();
    let items = cl
        .device_bytes(d, CL_DEVICE_MAX_WORK_ITEM_SIZES)
        .unwrap()
        .chunks_exact(std::mem::size_of::<usize>())
        .map(usize_of)
        .collect::<Vec<_>>();
    let out = s.zeroed(64);
    for (name, size) in [("large", [8usize, 128, 128]), ("huge", [65536, 65536, 1])] {
        let k = s.kernel(TOO_LARGE, name, "-cl-std=CL3.0");
        let compiled = query(|n, value, ret| unsafe {
            cl.clGetKernelWorkGroupInfo.unwrap()(
                k,
                d,
                CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
                n,
                value,
                ret,
            )
        })
        .unwrap();
        let compiled: Vec<usize> = compiled
            .chunks_exact(std::mem::size_of::<usize>())
            .map(usize_of)
            .collect();
        assert_eq!(compiled, size, "{name}");
        s.arg(k, 0, &out);
        assert_eq!(
            s.enqueue(k, &size, None, None),
            CL_INVALID_WORK_GROUP_SIZE,
            "{name} without a local size"
        );
        let beyond_a_dimension = size.iter().zip(&items).any(|(v, m)| v > m);
        assert_eq!(
            s.enqueue(k, &size, Some(&size), None),
            if beyond_a_dimension {
                CL_INVALID_WORK_ITEM_SIZE
            } else {
                CL_INVALID_WORK_GROUP_SIZE
            },
            "{name} with its local size"
        );
    }
    assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
}
