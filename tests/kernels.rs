//! Kernels compiled from OpenCL C and run on the device, each checked
//! against a CPU reference, through the ICD loader and directly.

mod common;

use common::*;
use opencl_sys::*;

both_ways!(
    vector_add_every_type,
    tiled_matmul,
    local_memory_reduction,
    three_d_ndrange_with_offsets,
    default_local_size,
    narrow_vector_arguments,
    vload_and_vstore,
    reinterpreting_wide_vectors,
    contended_atomics,
    linear_ids,
    kernel_clock,
);

fn vector_add_every_type(cl: &Cl) {
    // (OpenCL type, element size in bytes, is float)
    let types = [
        ("uint", 4, false),
        ("int", 4, false),
        ("ulong", 8, false),
        ("long", 8, false),
        ("float", 4, true),
        ("uchar", 1, false),
        ("char", 1, false),
        ("ushort", 2, false),
        ("short", 2, false),
        ("int2", 4, false),
        ("uint4", 4, false),
        ("float2", 4, true),
        ("float3", 4, true),
        ("float4", 4, true),
        ("long2", 8, false),
        ("ulong4", 8, false),
        ("uchar4", 1, false),
        ("short2", 2, false),
        ("ushort4", 2, false),
        ("int8", 4, false),
        ("float8", 4, true),
        ("uchar16", 1, false),
        ("float16", 4, true),
        ("long8", 8, false),
        ("short16", 2, false),
    ];
    for (ty, elem, float) in types {
        let mut s = Setup::new(cl);
        let lanes = match ty.trim_start_matches(char::is_alphabetic) {
            "" => 1,
            "3" => 4, // vec3 takes the room of vec4
            n => n.parse::<usize>().unwrap(),
        };
        let n = 256usize;
        let count = n * lanes;
        let a: Vec<u8>;
        let b: Vec<u8>;
        let want: Vec<u8>;
        if float {
            let x: Vec<f32> = (0..count).map(|i| i as f32 * 0.5).collect();
            let y: Vec<f32> = (0..count).map(|i| 3.0 - i as f32).collect();
            a = bytes_of(&x);
            b = bytes_of(&y);
            want = bytes_of(&x.iter().zip(&y).map(|(p, q)| p + q).collect::<Vec<f32>>());
        } else {
            let x: Vec<u64> = (0..count)
                .map(|i| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect();
            let y: Vec<u64> = (0..count)
                .map(|i| (i as u64).wrapping_mul(31).wrapping_add(7))
                .collect();
            let trunc = |v: &[u64]| -> Vec<u8> {
                v.iter()
                    .flat_map(|w| w.to_le_bytes()[..elem].to_vec())
                    .collect()
            };
            a = trunc(&x);
            b = trunc(&y);
            let sum: Vec<u64> = x.iter().zip(&y).map(|(p, q)| p.wrapping_add(*q)).collect();
            want = trunc(&sum);
        }
        let k = s.kernel(
            include_str!("kernels/types.cl"),
            "add",
            &format!("-DT={ty}"),
        );
        let (ba, bb, bc) = (s.buffer_from(&a), s.buffer_from(&b), s.buffer(a.len()));
        s.arg(k, 0, &ba);
        s.arg(k, 1, &bb);
        s.arg(k, 2, &bc);
        s.run(k, &[n], Some(&[64]), None);
        let got = cl.read(s.q, bc, 0, a.len());
        if ty == "float3" {
            // The fourth lane of a float3 is padding.
            for i in 0..n {
                assert_eq!(
                    got[i * 16..i * 16 + 12],
                    want[i * 16..i * 16 + 12],
                    "{ty} item {i}"
                );
            }
        } else {
            assert!(got == want, "{}: vector add of {ty}", cl.how);
        }
    }
}

fn tiled_matmul(cl: &Cl) {
    let mut s = Setup::new(cl);
    let n = 64usize;
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7) % 13) as f32 * 0.25 - 1.0)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i * 5) % 11) as f32 * 0.5 - 2.0)
        .collect();
    let k = s.kernel(include_str!("kernels/matmul.cl"), "matmul", "");
    let (ba, bb, bc) = (
        s.buffer_from(&bytes_of(&a)),
        s.buffer_from(&bytes_of(&b)),
        s.buffer(n * n * 4),
    );
    s.arg(k, 0, &ba);
    s.arg(k, 1, &bb);
    s.arg(k, 2, &bc);
    s.arg(k, 3, &(n as i32));
    s.run(k, &[n, n], Some(&[16, 16]), None);
    let got = cl.read(s.q, bc, 0, n * n * 4);
    for i in 0..n {
        for j in 0..n {
            let want: f32 = (0..n).map(|t| a[i * n + t] * b[t * n + j]).sum();
            let g = f32::from_ne_bytes(
                got[(i * n + j) * 4..(i * n + j) * 4 + 4]
                    .try_into()
                    .unwrap(),
            );
            assert!(
                (g - want).abs() <= 1e-4 * want.abs().max(1.0),
                "C[{i}][{j}] = {g}, want {want}"
            );
        }
    }
}

fn local_memory_reduction(cl: &Cl) {
    let mut s = Setup::new(cl);
    let (groups, local) = (32usize, 128usize);
    let input: Vec<u32> = (0..groups * local)
        .map(|i| (i as u32).wrapping_mul(2654435761) >> 8)
        .collect();
    let k = s.kernel(include_str!("kernels/reduce.cl"), "reduce", "");
    let (bi, bo) = (s.buffer_from(&bytes_of(&input)), s.buffer(groups * 4));
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 2, local * 4, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[groups * local], Some(&[local]), None);
    let got = cl.read(s.q, bo, 0, groups * 4);
    for g in 0..groups {
        let want = input[g * local..(g + 1) * local]
            .iter()
            .fold(0u32, |a, b| a.wrapping_add(*b));
        assert_eq!(u32_of(&got[g * 4..g * 4 + 4]), want, "group {g}");
    }
}

fn three_d_ndrange_with_offsets(cl: &Cl) {
    let mut s = Setup::new(cl);
    let global = [8usize, 6, 4];
    let local = [4usize, 3, 2];
    let offset = [3usize, 5, 7];
    let items = global.iter().product::<usize>();
    let k = s.kernel(include_str!("kernels/offsets.cl"), "ids", "");
    let out = s.buffer(items * 16);
    s.arg(k, 0, &out);
    s.run(k, &global, Some(&local), Some(&offset));
    let got = cl.read(s.q, out, 0, items * 16);
    let word = |i: usize| u32_of(&got[i * 4..i * 4 + 4]);
    for z in 0..global[2] {
        for y in 0..global[1] {
            for x in 0..global[0] {
                let i = (z * global[1] + y) * global[0] + x;
                let (gx, gy, gz) = (x + offset[0], y + offset[1], z + offset[2]);
                assert_eq!(
                    word(4 * i) as usize,
                    gx + 1000 * gy + 1_000_000 * gz,
                    "global id of {x},{y},{z}"
                );
                assert_eq!(
                    word(4 * i + 1) as usize,
                    x % 4 + 100 * (y % 3) + 10000 * (z % 2),
                    "local id"
                );
                assert_eq!(
                    word(4 * i + 2) as usize,
                    x / 4 + 100 * (y / 3) + 10000 * (z / 2),
                    "group id"
                );
                assert_eq!(
                    word(4 * i + 3) as usize,
                    3 + 10 * 2 + 1000 * 3,
                    "work dim, groups, local size"
                );
            }
        }
    }
}

fn default_local_size(cl: &Cl) {
    let mut s = Setup::new(cl);
    let n = 1000usize;
    let x: Vec<u32> = (0..n as u32).collect();
    let k = s.kernel(include_str!("kernels/types.cl"), "add", "-DT=uint");
    let (ba, bc) = (s.buffer_from(&bytes_of(&x)), s.buffer(n * 4));
    s.arg(k, 0, &ba);
    s.arg(k, 1, &ba);
    s.arg(k, 2, &bc);
    s.run(k, &[n], None, None);
    let got = cl.read(s.q, bc, 0, n * 4);
    for i in 0..n {
        assert_eq!(u32_of(&got[i * 4..i * 4 + 4]), 2 * i as u32);
    }
}

fn narrow_vector_arguments(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(include_str!("kernels/vectors.cl"), "narrow", "");
    let out = s.buffer(16);
    s.arg(k, 0, &out);
    s.arg(k, 1, &[1u8, 2, 3, 4]);
    s.arg(k, 2, &[5u8, 6, 7, 0]); // uchar3 has the size of uchar4
    s.arg(k, 3, &[0x0B0Au16, 0x0D0C]);
    s.arg(k, 4, &[0x0Ei8, 0x0F]);
    s.run(k, &[1], Some(&[1]), None);
    assert_eq!(
        cl.read(s.q, out, 0, 16),
        [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 1, 2]
    );
}

/// as_typen between 8/16-component vectors and vectors or scalars of other
/// component sizes, against the bytes on the host.
fn reinterpreting_wide_vectors(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(include_str!("kernels/vectors.cl"), "reinterpret_wide", "");
    let w = [0x0403_0201u32, 0x0807_0605, 0xfffe_fdfc, 0x1234_5678];
    let l = 0x0102_0304_a0b0_c0d0u64;
    let b: Vec<u8> = (0..16).map(|i| (i * 37 + 5) as u8).collect();
    let inputs = [bytes_of(&w), l.to_le_bytes().to_vec(), b.clone()];
    let ins: Vec<cl_mem> = inputs.iter().map(|x| s.buffer_from(x)).collect();
    let sizes = [16, 16, 8, 8, 32, 32];
    let outs: Vec<cl_mem> = sizes.iter().map(|&n| s.buffer(n)).collect();
    for (i, m) in ins.iter().chain(outs.iter()).enumerate() {
        s.arg(k, i as u32, m);
    }
    s.run(k, &[1], Some(&[1]), None);
    let got: Vec<Vec<u8>> = outs
        .iter()
        .zip(sizes)
        .map(|(&m, n)| cl.read(s.q, m, 0, n))
        .collect();
    let v: Vec<u32> = w.iter().zip(1..).map(|(x, a)| x.wrapping_add(a)).collect();
    let want0: Vec<u8> = bytes_of(&v).iter().map(|x| x.wrapping_add(1)).collect();
    assert_eq!(got[0], want0, "{}: as_uchar16(uint4)", cl.how);
    let c: Vec<u8> = b.iter().map(|x| x ^ 0x5a).collect();
    assert_eq!(got[1], c, "{}: as_uint4(uchar16)", cl.how);
    let lo = u64::from_le_bytes(c[..8].try_into().unwrap()) + 1;
    assert_eq!(got[2], lo.to_le_bytes(), "{}: as_ulong(uchar8)", cl.how);
    let want3: Vec<u8> = (l + 3)
        .to_le_bytes()
        .iter()
        .map(|x| x.wrapping_add(2))
        .collect();
    assert_eq!(got[3], want3, "{}: as_uchar8(ulong)", cl.how);
    let big = [l, l.wrapping_mul(3), l.wrapping_neg(), 7];
    assert_eq!(got[4], bytes_of(&big), "{}: as_short16(long4)", cl.how);
    let shorts: Vec<u16> = bytes_of(&big)
        .chunks_exact(2)
        .map(|h| u16::from_le_bytes([h[0], h[1]]).wrapping_add(1))
        .collect();
    assert_eq!(got[5], bytes_of(&shorts), "{}: as_float8(short16)", cl.how);
}

fn vload_and_vstore(cl: &Cl) {
    let mut s = Setup::new(cl);
    let (n, local) = (64usize, 16usize);
    let input: Vec<f32> = (0..n * 4).map(|i| i as f32).collect();
    let k = s.kernel(include_str!("kernels/vectors.cl"), "vl", "");
    let (bi, bo) = (s.buffer_from(&bytes_of(&input)), s.buffer(n * 3 * 4));
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 2, local * 16, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[n], Some(&[local]), None);
    let got = cl.read(s.q, bo, 0, n * 12);
    for i in 0..n {
        let (g, l) = (i / local, i % local);
        for c in 0..3 {
            let m = 3 * l + c; // index into the group's tmp
            let want = 2.0 * input[4 * (g * local + m / 4) + m % 4] + 1.0;
            let at = (3 * i + c) * 4;
            assert_eq!(
                f32::from_ne_bytes(got[at..at + 4].try_into().unwrap()),
                want,
                "item {i} lane {c}"
            );
        }
    }
}

fn contended_atomics(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(include_str!("kernels/atomics.cl"), "count32", "");
    let init: [u32; 5] = [0, 0, u32::MAX, 0, 0];
    let g = s.buffer_from(&bytes_of(&init));
    s.arg(k, 0, &g);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 1, 4, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    let n = 4096usize;
    s.run(k, &[n], Some(&[64]), None);
    let got = cl.read(s.q, g, 0, 20);
    let w: Vec<u32> = (0..5).map(|i| u32_of(&got[i * 4..i * 4 + 4])).collect();
    assert_eq!(w, [n as u32, n as u32 - 1, 0, 7, n as u32]);
}

fn linear_ids(cl: &Cl) {
    let mut s = Setup::new(cl);
    let (global, local, offset) = ([6usize, 4, 2], [3usize, 2, 1], [5usize, 1, 9]);
    let items: usize = global.iter().product();
    let k = s.kernel(include_str!("kernels/linear.cl"), "linear", "-cl-std=CL3.0");
    let out = s.buffer(items * 8);
    s.arg(k, 0, &out);
    s.run(k, &global, Some(&local), Some(&offset));
    let got = cl.read(s.q, out, 0, items * 8);
    for z in 0..global[2] {
        for y in 0..global[1] {
            for x in 0..global[0] {
                let g = (z * global[1] + y) * global[0] + x;
                let l = ((z % local[2]) * local[1] + y % local[1]) * local[0] + x % local[0];
                assert_eq!(u32_of(&got[8 * g..8 * g + 4]) as usize, g);
                assert_eq!(u32_of(&got[8 * g + 4..8 * g + 8]) as usize, l);
            }
        }
    }
}

const CLOCK: &str = "kernel void clocks(global ulong *out, global uint *order) {\n\
    size_t i = get_global_id(0);\n\
    ulong t0 = clock_read_device();\n\
    uint2 h0 = clock_read_hilo_device();\n\
    ulong w = clock_read_work_group();\n\
    uint2 hw = clock_read_hilo_work_group();\n\
    ulong s = 0;\n\
#ifdef __opencl_c_kernel_clock_scope_sub_group\n\
    s = clock_read_sub_group();\n\
    uint2 hs = clock_read_hilo_sub_group();\n\
    s = max(s, upsample(hs.hi, hs.lo)) - s;\n\
#endif\n\
    ulong t1 = clock_read_device();\n\
    // Each later reading of one clock is no earlier than the one before.\n\
    order[i] = (upsample(h0.hi, h0.lo) >= t0) + 2 * (t1 >= upsample(h0.hi, h0.lo))\n\
        + 4 * (upsample(hw.hi, hw.lo) >= w);\n\
    out[i] = t1 - t0 + s;\n\
}\n";

/// cl_khr_kernel_clock, where the device has a clock (lavapipe and the
/// GPUs vkcl is tested on have both): every scope's built-ins read a clock
/// that does not run backwards.
fn kernel_clock(cl: &Cl) {
    let extensions = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    assert!(
        extensions.split(' ').any(|e| e == "cl_khr_kernel_clock"),
        "{}: cl_khr_kernel_clock offered",
        cl.how
    );
    let caps = cl
        .device_bytes(cl.device(), CL_DEVICE_KERNEL_CLOCK_CAPABILITIES_KHR)
        .unwrap();
    let caps = u64::from_ne_bytes(caps.try_into().unwrap());
    assert_ne!(
        caps & (CL_DEVICE_KERNEL_CLOCK_SCOPE_DEVICE_KHR
            | CL_DEVICE_KERNEL_CLOCK_SCOPE_WORK_GROUP_KHR),
        0,
        "{}: scopes {caps:#x}",
        cl.how
    );
    let mut s = Setup::new(cl);
    let k = s.kernel(CLOCK, "clocks", "-cl-std=CL3.0");
    let n = 256;
    let out = s.zeroed(8 * n);
    let order = s.zeroed(4 * n);
    s.arg(k, 0, &out);
    s.arg(k, 1, &order);
    s.run(k, &[n], Some(&[64]), None);
    assert_eq!(
        s.words(order, n),
        vec![7; n],
        "{}: readings in order",
        cl.how
    );
}
