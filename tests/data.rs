//! Data shapes in kernels: vec3/vec8/vec16 loads, stores, swizzles and
//! shuffles; a struct with padding; private arrays indexed at run time;
//! contended 64-bit, C11 and float atomics. Each checked against the host.

mod common;

use common::*;
use opencl_sys::*;

both_ways!(
    vector_swizzles_and_shuffles,
    relational_tests,
    struct_with_padding,
    packed_longs_off_their_alignment,
    struct_copied_from_global_into_local,
    private_array_dynamic_index,
    contended_64bit_atomics,
    c11_atomics_with_order_and_scope,
    flags_guard_critical_sections,
    global_flags_guard_sections_across_groups,
    last_group_sees_every_partial_sum,
    async_work_group_copies,
    dimensions_out_of_range,
    local_struct_through_a_helper,
    packed_struct_members_in_place,
    float_atomic_exchange,
);

const SOURCE: &str = include_str!("kernels/data.cl");

fn u64s(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn vector_swizzles_and_shuffles(cl: &Cl) {
    let n = 64usize;
    // Quarter steps keep every sum and product exact.
    let input: Vec<f32> = (0..2048)
        .map(|k| ((k * 37) % 101) as f32 * 0.25 - 10.0)
        .collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "swizzles", "");
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.buffer_from(&vec![0u8; n * 48 * 4]);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[16]), None);
    let got = f32s(&cl.read(s.q, bo, 0, n * 48 * 4));
    for i in 0..n {
        let a = &input[4 * i..4 * i + 3];
        let b = &input[256 + 3 * i..256 + 3 * i + 3];
        let c = &input[512 + 8 * i..512 + 8 * i + 8];
        let d = &input[1024 + 16 * i..1024 + 16 * i + 16];
        let mut want = [f32::NAN; 48];
        want[0..3].copy_from_slice(&[a[2] + b[1], a[0] + b[1], a[1] + b[2]]);
        want[3] = a[2] - b[0];
        for j in 0..8 {
            want[4 + j] = c[7 - j] * 2.0 + d[8 + j];
        }
        for j in 0..4 {
            want[12 + j] = d[2 * j] + d[9 + 2 * j] + c[2 * j];
        }
        for (j, m) in [7, 0, 6, 1, 5, 2, 4, 3].into_iter().enumerate() {
            want[16 + j] = c[m];
        }
        let both: Vec<f32> = c.iter().chain(&d[..8]).copied().collect();
        let mask = [15, 0, 14, 1, 13, 2, 12, 3, 11, 4, 10, 5, 9, 6, 8, 7];
        for (j, m) in mask.into_iter().enumerate() {
            want[24 + j] = both[m];
        }
        want[40..43].copy_from_slice(&[d[15], d[8], a[1]]);
        want[44] = -1.0 + c[1] + c[2] + c[3];
        want[45] = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        want[46] = if want[12] > want[15] { 1.0 } else { 0.0 };
        let any = (0..3).any(|j| a[j] > b[j]) as u32;
        let all = c.iter().all(|&x| x > 0.0) as u32;
        want[47] = (any + 2 * all) as f32;
        let o = &got[48 * i..48 * i + 48];
        for j in (0..48).filter(|&j| j != 43) {
            assert_eq!(o[j], want[j], "{}: item {i} output {j}", cl.how);
        }
    }
}

fn relational_tests(cl: &Cl) {
    let input: Vec<f32> = vec![
        0.0,
        -0.0,
        1.5,
        -2.25,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MIN_POSITIVE,
        f32::MIN_POSITIVE / 4.0,
        -f32::MIN_POSITIVE / 2.0,
        f32::MAX,
        -f32::MAX,
        1.0e-40,
        3.0,
        3.0,
    ];
    let n = input.len();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "relational", "");
    let (bi, bo) = (s.buffer_from(&bytes_of(&input)), s.buffer(n * 12 * 4));
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[n]), None);
    let got = cl.read(s.q, bo, 0, n * 12 * 4);
    let got: Vec<i32> = got
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for i in 0..n {
        let (x, y) = (input[i], input[(i + 1) % n]);
        let unordered = x.is_nan() || y.is_nan();
        let scalar = [
            x.is_finite(),
            x.is_normal(),
            x.is_sign_negative(),
            !unordered,
            unordered,
            !unordered && x != y,
        ];
        // Vector results are -1 for true: isnormal + 2 signbit + 4 isfinite.
        let vector = |v: f32| {
            -(v.is_normal() as i32 + 2 * v.is_sign_negative() as i32 + 4 * v.is_finite() as i32)
        };
        let want: Vec<i32> = scalar
            .iter()
            .map(|&b| b as i32)
            .chain([x, y, -x, -y, x, -y].into_iter().map(vector))
            .collect();
        // Devices without denormals (no CL_FP_DENORM) may compare them as
        // zero: islessgreater of two denormals may then be false.
        let denormal = |v: f32| v != 0.0 && v.abs() < f32::MIN_POSITIVE;
        let mut got_i = got[12 * i..12 * i + 12].to_vec();
        if denormal(x) || denormal(y) {
            got_i[5] = want[5];
        }
        // Vulkan need not keep the sign of a negated NaN: for NaN lanes
        // only the other two tests count.
        let lanes = [x, y, -x, -y, x, -y];
        let want_i = want.clone();
        for (k, v) in lanes.iter().enumerate() {
            if v.is_nan() && matches!(got_i[6 + k], 0 | -2) {
                got_i[6 + k] = want_i[6 + k];
            }
        }
        assert_eq!(got_i, want_i, "{}: input {i} ({x}, {y})", cl.how);
    }
}

/// The fields of the kernel's `Padded`, laid out by hand below.
struct Padded {
    c: i8,
    i: i32,
    s: i16,
    l: i64,
    v: [f32; 4],
    u: [u8; 3],
}

fn struct_with_padding(cl: &Cl) {
    let n = 48usize;
    let items: Vec<Padded> = (0..n)
        .map(|k| Padded {
            c: (k as i8).wrapping_mul(5).wrapping_sub(100),
            i: k as i32 * 1000 - 7,
            s: (k as i16) * -300,
            l: (k as i64) << 35,
            v: [k as f32, 0.5, -(k as f32), 0.0],
            u: [k as u8, 200, 3 * k as u8],
        })
        .collect();
    // Padding bytes start as 0xAA so a layout mismatch shows.
    let mut bytes = vec![0xAAu8; n * 64];
    for (k, p) in items.iter().enumerate() {
        let b = &mut bytes[64 * k..64 * k + 64];
        b[0] = p.c as u8;
        b[4..8].copy_from_slice(&p.i.to_le_bytes());
        b[8..10].copy_from_slice(&p.s.to_le_bytes());
        b[16..24].copy_from_slice(&p.l.to_le_bytes());
        for j in 0..3 {
            b[32 + 4 * j..36 + 4 * j].copy_from_slice(&p.v[j].to_le_bytes());
        }
        b[48..51].copy_from_slice(&p.u);
    }
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "structs", "");
    let buf = s.buffer_from(&bytes);
    s.arg(k, 0, &buf);
    s.run(k, &[n], Some(&[16]), None);
    let got = cl.read(s.q, buf, 0, n * 64);
    for (k, p) in items.iter().enumerate() {
        let b = &got[64 * k..64 * k + 64];
        let c = p.c.wrapping_add(1);
        let i = p.i.wrapping_mul(3);
        let mut u = p.u;
        u[k % 3] = p.u[0].wrapping_add(p.u[1]).wrapping_add(p.u[2]);
        assert_eq!(b[0] as i8, c, "{}: item {k} char", cl.how);
        assert_eq!(
            i32::from_le_bytes(b[4..8].try_into().unwrap()),
            i,
            "item {k} int"
        );
        assert_eq!(
            i16::from_le_bytes(b[8..10].try_into().unwrap()),
            p.s.wrapping_sub(c as i16),
            "item {k} short"
        );
        assert_eq!(
            i64::from_le_bytes(b[16..24].try_into().unwrap()),
            p.l + i as i64,
            "item {k} long"
        );
        let v = f32s(&b[32..44]);
        assert_eq!(
            v,
            [p.v[2] * 2.0, p.v[1] * 2.0, p.v[0] * 2.0],
            "item {k} float3"
        );
        assert_eq!(b[48..51], u, "item {k} uchar[3]");
    }
}

fn private_array_dynamic_index(cl: &Cl) {
    let n = 256usize;
    let input: Vec<u32> = (0..n as u32)
        .map(|g| g.wrapping_mul(2_654_435_761) % 1000)
        .collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "private_array", "");
    let (bi, bo) = (s.buffer_from(&bytes_of(&input)), s.buffer(n * 4));
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[32]), None);
    let got = cl.read(s.q, bo, 0, n * 4);
    for (g, &x) in input.iter().enumerate() {
        let mut a: Vec<u32> = (0..19u32).map(|k| x.wrapping_mul(k + 1)).collect();
        let acc = (0..19u32).fold(0u32, |acc, k| {
            acc.wrapping_add(a[((x + 7 * k) % 19) as usize] ^ k)
        });
        a[(x % 19) as usize] = acc;
        let want = a[((x + 1) % 19) as usize].wrapping_add(a[(x % 19) as usize]);
        assert_eq!(u32_of(&got[4 * g..4 * g + 4]), want, "{}: item {g}", cl.how);
    }
}

/// Whether the device has 64-bit atomics; the tests that need them say
/// so and pass without them.
fn has_int64_atomics(cl: &Cl) -> bool {
    let ext = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    let has = ext.contains("cl_khr_int64_base_atomics");
    if !has {
        eprintln!("{}: the device has no 64-bit atomics", cl.how);
    }
    has
}

fn contended_64bit_atomics(cl: &Cl) {
    if !has_int64_atomics(cl) {
        return;
    }
    let (n, local) = (1024u64, 64u64);
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "count64", "");
    let init: [u64; 7] = [0, 0, 0, u64::MAX, 0, 0, 0];
    let g = s.buffer_from(&bytes_of(&init));
    s.arg(k, 0, &g);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 1, 16, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[n as usize], Some(&[local as usize]), None);
    let got = u64s(&cl.read(s.q, g, 0, 56));
    let big = 0x1_0000_0001u64;
    assert_eq!(
        got,
        [n * big, n, (n - 1) << 40, 0, 0, n * big, (n - 1) << 33,],
        "{}",
        cl.how
    );
}

fn c11_atomics_with_order_and_scope(cl: &Cl) {
    if !has_int64_atomics(cl) {
        return;
    }
    let (n, local) = (1024u32, 64u32);
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "c11", "-cl-std=CL3.0");
    let g = s.buffer_from(&[0u8; 20]);
    let w = s.buffer_from(&[0u8; 8]);
    s.arg(k, 0, &g);
    s.arg(k, 1, &w);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 2, 4, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[n as usize], Some(&[local as usize]), None);
    let got = cl.read(s.q, g, 0, 20);
    let words: Vec<u32> = (0..5).map(|i| u32_of(&got[4 * i..4 * i + 4])).collect();
    assert_eq!(words, [n, n - 1, 2 * n, n, 42], "{}", cl.how);
    let sum = u64s(&cl.read(s.q, w, 0, 8))[0];
    assert_eq!(sum, u64::from(n) * u64::from(n - 1) / 2, "{}", cl.how);
}

fn flags_guard_critical_sections(cl: &Cl) {
    let (groups, local) = (4usize, 64usize);
    let n = groups * local;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "flag_sections", "-cl-std=CL3.0");
    let owner = s.zeroed(n * 4);
    let left = s.zeroed(n * 4);
    s.arg(k, 0, &owner);
    s.arg(k, 1, &left);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 2, local * 4, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[n], Some(&[local]), None);
    let owners = s.words(owner, n);
    let left_set = s.words(left, n);
    // Each work-item owns exactly one section of its group.
    let mut seen = vec![false; n];
    for (at, &o) in owners.iter().enumerate() {
        assert!(
            o >= 1 && (o as usize - 1) / local == at / local,
            "{}: section {at} owner {o}",
            cl.how
        );
        assert!(
            !std::mem::replace(&mut seen[o as usize - 1], true),
            "{}: {o} owns two",
            cl.how
        );
    }
    assert!(
        left_set.iter().all(|&f| f == 0),
        "{}: flags left set: {left_set:?}",
        cl.how
    );
}

fn global_flags_guard_sections_across_groups(cl: &Cl) {
    let (groups, local) = (64usize, 16usize);
    let n = groups * local;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "global_flag_sections", "-cl-std=CL3.0");
    let owner = s.zeroed(n * 4);
    let flags = s.zeroed(n * 4);
    s.arg(k, 0, &owner);
    s.arg(k, 1, &flags);
    s.run(k, &[n], Some(&[local]), None);
    // Every section has one owner and nobody owns two: an owner that did
    // not see the previous owner's store would take its section again.
    let mut seen = vec![false; n];
    for (at, &o) in s.words(owner, n).iter().enumerate() {
        assert!(
            o >= 1 && o as usize <= n,
            "{}: section {at} owner {o}",
            cl.how
        );
        assert!(
            !std::mem::replace(&mut seen[o as usize - 1], true),
            "{}: {o} owns two sections",
            cl.how
        );
    }
    assert!(s.words(flags, n).iter().all(|&f| f == 0), "{}", cl.how);
}

fn last_group_sees_every_partial_sum(cl: &Cl) {
    let (groups, local) = (256usize, 32usize);
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "last_group_sums", "-cl-std=CL3.0");
    let partial = s.zeroed(groups * 4);
    let before = s.zeroed(groups * 4);
    let arrived = s.zeroed(4);
    let total = s.zeroed(4);
    for (i, b) in [&partial, &before, &arrived, &total]
        .into_iter()
        .enumerate()
    {
        s.arg(k, i as u32, b);
    }
    s.run(k, &[groups * local], Some(&[local]), None);
    let want: u32 = (1..=groups as u32).map(|g| g * 1000 + local as u32).sum();
    assert_eq!(s.words(arrived, 1), [groups as u32], "{}", cl.how);
    assert_eq!(s.words(total, 1), [want], "{}", cl.how);
}

fn async_work_group_copies(cl: &Cl) {
    let (groups, local) = (8usize, 32usize);
    let n = groups * local;
    let src: Vec<f32> = (0..n * 4).map(|i| i as f32 * 0.5).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "async_copies", "");
    let (bs, bd) = (s.buffer_from(&bytes_of(&src)), s.buffer(n * 16));
    s.arg(k, 0, &bs);
    s.arg(k, 1, &bd);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 2, local * 16, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[n], Some(&[local]), None);
    let got = f32s(&cl.read(s.q, bd, 0, n * 16));
    for g in 0..groups {
        for l in 0..local {
            for c in 0..4 {
                let want = src[(g * local + l) * 4 + c] * 2.0 + l as f32;
                let at = (l * groups + g) * 4 + c;
                assert_eq!(got[at], want, "{}: group {g} item {l} lane {c}", cl.how);
            }
        }
    }
}

fn dimensions_out_of_range(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "out_of_range", "");
    let out = s.zeroed(32);
    s.arg(k, 0, &out);
    s.arg(k, 1, &5u32);
    s.run(k, &[8, 2], Some(&[4, 1]), None);
    assert_eq!(s.words(out, 8), [1, 1, 0, 1, 0, 1, 0, 0], "{}", cl.how);
}

fn local_struct_through_a_helper(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "local_struct", "");
    let out = s.zeroed(64 * 4);
    s.arg(k, 0, &out);
    s.run(k, &[64], Some(&[16]), None);
    assert!(s.words(out, 64).iter().all(|&w| w == 641), "{}", cl.how);
}

/// Members of a packed struct in a buffer sit at the offsets the packing
/// gives (a float8 right after a char), for addresses, loads and stores.
fn packed_struct_members_in_place(cl: &Cl) {
    let src = "typedef struct __attribute__((packed)) { char c; float8 v; short s; } P;
        kernel void packed(global P *p, global uint *out) {
            int i = get_global_id(0);
            out[2 * i] = (uint)((global uchar *)&p[i].v - (global uchar *)&p[0]);
            out[2 * i + 1] = as_uint(p[i].v.s3);
            p[i].s = (short)(p[i].c * 3);
        }";
    const SIZE: usize = 1 + 32 + 2;
    let n = 8usize;
    let mut bytes = vec![0u8; SIZE * n];
    for i in 0..n {
        let at = SIZE * i;
        bytes[at] = i as u8 + 1;
        for k in 0..8 {
            let v = (i * 10 + k) as f32;
            bytes[at + 1 + 4 * k..at + 5 + 4 * k].copy_from_slice(&v.to_le_bytes());
        }
    }
    let mut s = Setup::new(cl);
    let k = s.kernel(src, "packed", "");
    let p = s.buffer_from(&bytes);
    let out = s.zeroed(8 * n);
    s.arg(k, 0, &p);
    s.arg(k, 1, &out);
    s.run(k, &[n], None, None);
    let got = s.words(out, 2 * n);
    let after = cl.read(s.q, p, 0, SIZE * n);
    for i in 0..n {
        assert_eq!(
            got[2 * i] as usize,
            SIZE * i + 1,
            "{}: offset of p[{i}].v",
            cl.how
        );
        assert_eq!(
            f32::from_bits(got[2 * i + 1]),
            (i * 10 + 3) as f32,
            "{}: p[{i}].v.s3",
            cl.how
        );
        let at = SIZE * i + 33;
        let stored = i16::from_le_bytes([after[at], after[at + 1]]);
        assert_eq!(stored, 3 * (i as i16 + 1), "{}: p[{i}].s", cl.how);
        assert_eq!(after[SIZE * i], i as u8 + 1, "{}: p[{i}].c", cl.how);
    }
}

/// `long` and `double` members of packed structs at addresses that are
/// not multiples of 8, in `__local` and `__global` memory: PyOpenCL's
/// scans keep `struct __attribute__((packed)) { long value; int dummy; }`
/// arrays in local memory (NVIDIA's driver loaded such members from the
/// address rounded down to 8).
fn packed_longs_off_their_alignment(cl: &Cl) {
    const SRC: &str = "struct __attribute__((packed)) w { long v; int d; };\n\
         struct __attribute__((packed)) f { int d; double x; };\n\
         kernel void k(global long* out, global struct w* g, global struct f* h) {\n\
             local struct w t[3][17];\n\
             int l = get_local_id(0);\n\
             t[l / 17][l % 17].v = ((long)l << 32) | (l + 1);\n\
             t[l / 17][l % 17].d = l;\n\
             barrier(CLK_LOCAL_MEM_FENCE);\n\
             int o = 50 - l;\n\
             out[l] = t[o / 17][o % 17].v + t[o / 17][o % 17].d;\n\
             g[l].v = g[l].v * 3;\n\
             h[l].x = h[l].x * 2.0 + (double)h[l].d;\n\
         }\n";
    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "k", "");
    let n = 51usize;
    let out = s.zeroed(n * 8);
    let mut g = Vec::new();
    for l in 0..n as i64 {
        g.extend_from_slice(&((l << 33) + 5).to_le_bytes());
        g.extend_from_slice(&(l as i32).to_le_bytes());
    }
    let gb = s.buffer_from(&g);
    let mut h = Vec::new();
    for l in 0..n {
        h.extend_from_slice(&(l as i32).to_le_bytes());
        h.extend_from_slice(&(l as f64 * 0.25).to_le_bytes());
    }
    let hb = s.buffer_from(&h);
    s.arg(k, 0, &out);
    s.arg(k, 1, &gb);
    s.arg(k, 2, &hb);
    s.run(k, &[n], Some(&[n]), None);
    let got = i64s(&cl.read(s.q, out, 0, n * 8));
    let want: Vec<i64> = (0..n as i64)
        .map(|l| (((50 - l) << 32) | (51 - l)) + (50 - l))
        .collect();
    assert_eq!(got, want, "{}: local", cl.how);
    let got = cl.read(s.q, gb, 0, n * 12);
    for l in 0..n {
        let v = i64::from_le_bytes(got[l * 12..l * 12 + 8].try_into().unwrap());
        assert_eq!(
            v,
            ((l as i64) << 33) * 3 + 15,
            "{}: global long {l}",
            cl.how
        );
    }
    let got = cl.read(s.q, hb, 0, n * 12);
    for l in 0..n {
        let x = f64::from_le_bytes(got[l * 12 + 4..l * 12 + 12].try_into().unwrap());
        assert_eq!(
            x,
            l as f64 * 0.5 + l as f64,
            "{}: global double {l}",
            cl.how
        );
    }
}

/// A struct copied from `__global` into a `__local` array element: clang
/// makes it a `memmove`, which llvm-spirv copies through a private byte
/// array, word by word through cast pointers (lavapipe moved steps on
/// such casts by nothing, and every word landed in the first).
fn struct_copied_from_global_into_local(cl: &Cl) {
    const SRC: &str = "typedef struct { int a, b, c, d; } S;\n\
         struct W { S v; };\n\
         kernel void k(global S* in, global S* out, int n) {\n\
             local struct W t[64];\n\
             int l = get_local_id(0);\n\
             if (l < n) { S x = in[l]; t[l].v = x; }\n\
             barrier(CLK_LOCAL_MEM_FENCE);\n\
             if (l < n) out[l] = t[n - 1 - l].v;\n\
         }\n";
    for options in ["", "-cl-opt-disable"] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SRC, "k", options);
        let n = 5usize;
        let input: Vec<i32> = (1..=4 * n as i32).collect();
        let inb = s.buffer_from(&bytes_of(&input));
        let out = s.zeroed(16 * n);
        s.arg(k, 0, &inb);
        s.arg(k, 1, &out);
        s.arg(k, 2, &(n as i32));
        s.run(k, &[8], Some(&[8]), None);
        let got = i32s(&cl.read(s.q, out, 0, 16 * n));
        let want: Vec<i32> = (0..n)
            .flat_map(|l| input[(n - 1 - l) * 4..(n - l) * 4].to_vec())
            .collect();
        assert_eq!(got, want, "{}: options {options:?}", cl.how);
    }
}

/// `atomic_xchg` of floats in global and local memory, and C11 exchange,
/// load and store of `atomic_float`. Vulkan allows float atomics only with
/// a device feature (VK_EXT_shader_atomic_float); the validation layer
/// reported them where it was not enabled.
fn float_atomic_exchange(cl: &Cl) {
    const SRC: &str = "kernel void k(global float *g, global float *seen, local float *l) {\n\
             size_t i = get_global_id(0), li = get_local_id(0);\n\
             if (li == 0) l[0] = -1.0f;\n\
             barrier(CLK_LOCAL_MEM_FENCE);\n\
             seen[2 * i] = atomic_xchg(&g[0], (float)i + 0.5f);\n\
             seen[2 * i + 1] = atomic_xchg(&l[0], (float)i + 0.25f);\n\
             barrier(CLK_LOCAL_MEM_FENCE);\n\
             if (li == 0) g[1 + get_group_id(0)] = atomic_xchg(&l[0], 0.0f);\n\
         }\n\
         #if __OPENCL_C_VERSION__ >= 300\n\
         kernel void c11(global atomic_float *g, global float *out) {\n\
             size_t i = get_global_id(0);\n\
             if (i == 0) atomic_store_explicit(&g[1], 3.5f, memory_order_relaxed, memory_scope_device);\n\
             out[i] = atomic_exchange_explicit(&g[0], (float)i, memory_order_relaxed, memory_scope_device);\n\
             out[64 + i] = atomic_load_explicit(&g[2], memory_order_relaxed, memory_scope_device);\n\
         }\n\
         #endif\n";
    let (groups, local) = (4usize, 32usize);
    let n = groups * local;
    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "k", "");
    let mut init = vec![0f32; 1 + groups];
    init[0] = -2.0;
    let g = s.buffer_from(&bytes_of(&init));
    let seen = s.zeroed(8 * n);
    s.arg(k, 0, &g);
    s.arg(k, 1, &seen);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 2, 4, std::ptr::null()) };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[n], Some(&[local]), None);
    let left = f32s(&cl.read(s.q, g, 0, 4 * (1 + groups)));
    let seen = f32s(&cl.read(s.q, seen, 0, 8 * n));
    // What the work-items took out and what is left is what went in.
    let sorted = |mut v: Vec<f32>| {
        v.sort_by(f32::total_cmp);
        v
    };
    let mut got: Vec<f32> = (0..n).map(|i| seen[2 * i]).collect();
    got.push(left[0]);
    let mut want: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
    want.push(-2.0);
    assert_eq!(sorted(got), sorted(want), "{}: global", cl.how);
    for group in 0..groups {
        let items = group * local..(group + 1) * local;
        let mut got: Vec<f32> = items.clone().map(|i| seen[2 * i + 1]).collect();
        got.push(left[1 + group]);
        let mut want: Vec<f32> = items.map(|i| i as f32 + 0.25).collect();
        want.push(-1.0);
        assert_eq!(
            sorted(got),
            sorted(want),
            "{}: local, group {group}",
            cl.how
        );
    }

    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "c11", "-cl-std=CL3.0");
    let g = s.buffer_from(&bytes_of(&[-1f32, 0.0, 1.25]));
    let out = s.zeroed(4 * 128);
    s.arg(k, 0, &g);
    s.arg(k, 1, &out);
    s.run(k, &[64], Some(&[64]), None);
    let left = f32s(&cl.read(s.q, g, 0, 12));
    let out = f32s(&cl.read(s.q, out, 0, 4 * 128));
    let mut got = out[..64].to_vec();
    got.push(left[0]);
    let mut want: Vec<f32> = (0..64).map(|i| i as f32).collect();
    want.push(-1.0);
    assert_eq!(sorted(got), sorted(want), "{}: C11 exchange", cl.how);
    assert_eq!(left[1], 3.5, "{}: C11 store", cl.how);
    assert!(out[64..].iter().all(|&v| v == 1.25), "{}: C11 load", cl.how);
}
