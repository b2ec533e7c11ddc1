//! cl_vkcl_cooperative_matrix: where the device offers it (a Vulkan driver
//! with VK_KHR_cooperative_matrix), every multiply-add it lists gives the
//! exact product of small integers, the element-wise built-ins and
//! conversions give what a CPU gives, and a tiled GEMM through local
//! memory matches a CPU reference; where it does not, nothing of it is
//! visible.

mod common;

use common::*;
use opencl_sys::*;

both_ways!(
    offered_only_with_its_variants,
    every_variant_multiplies_exactly,
    element_wise_work_and_conversions,
    tiled_gemm_matches_the_cpu,
    il_programs_multiply,
);

const CL_DEVICE_COOPERATIVE_MATRIX_VARIANTS_VKCL: cl_device_info = 0x10F00;
const EXTENSION: &str = "cl_vkcl_cooperative_matrix";

/// A multiply-add the device lists: sizes and element type numbers.
#[derive(Clone, Copy, Debug)]
struct Variant {
    m: usize,
    n: usize,
    k: usize,
    types: [u32; 4],
    saturating: bool,
}

fn has_extension(cl: &Cl) -> bool {
    let bytes = cl
        .device_bytes(cl.device(), CL_DEVICE_EXTENSIONS)
        .expect("extensions");
    c_string(&bytes).split(' ').any(|e| e == EXTENSION)
}

fn variants(cl: &Cl) -> Vec<Variant> {
    let Ok(bytes) = cl.device_bytes(cl.device(), CL_DEVICE_COOPERATIVE_MATRIX_VARIANTS_VKCL) else {
        return Vec::new();
    };
    bytes
        .chunks_exact(32)
        .map(|c| {
            let w: Vec<u32> = c.chunks_exact(4).map(u32_of).collect();
            Variant {
                m: w[0] as usize,
                n: w[1] as usize,
                k: w[2] as usize,
                types: [w[3], w[4], w[5], w[6]],
                saturating: w[7] != 0,
            }
        })
        .collect()
}

/// OpenCL C name and size of an element type number.
fn element(t: u32) -> (&'static str, usize) {
    match t {
        0 => ("half", 2),
        1 => ("float", 4),
        3 => ("char", 1),
        4 => ("short", 2),
        5 => ("int", 4),
        6 => ("long", 8),
        7 => ("uchar", 1),
        8 => ("ushort", 2),
        9 => ("uint", 4),
        10 => ("ulong", 8),
        _ => panic!("element type {t}"),
    }
}

/// The bytes of integer `v` as element type `t`.
fn bytes_of(t: u32, v: i64) -> Vec<u8> {
    match t {
        0 => half_bits(v as f32).to_le_bytes().to_vec(),
        1 => (v as f32).to_le_bytes().to_vec(),
        3 | 7 => vec![v as u8],
        4 | 8 => (v as u16).to_le_bytes().to_vec(),
        5 | 9 => (v as u32).to_le_bytes().to_vec(),
        _ => (v as u64).to_le_bytes().to_vec(),
    }
}

/// The value of element type `t` in `b`, as a float.
fn value_of(t: u32, b: &[u8]) -> f64 {
    match t {
        0 => half_value(u16::from_le_bytes([b[0], b[1]])),
        1 => f32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        3 => b[0] as i8 as f64,
        7 => b[0] as f64,
        4 => i16::from_le_bytes([b[0], b[1]]) as f64,
        8 => u16::from_le_bytes([b[0], b[1]]) as f64,
        5 => i32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        9 => u32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
        6 => i64::from_le_bytes(b[..8].try_into().unwrap()) as f64,
        _ => u64::from_le_bytes(b[..8].try_into().unwrap()) as f64,
    }
}

/// The half bits of a float that half holds exactly (small integers and
/// their halves here).
fn half_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if x == 0.0 {
        return sign;
    }
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    assert!((1..31).contains(&exp), "{x} is no normal half");
    sign | ((exp as u16) << 10) | ((b >> 13) & 0x3ff) as u16
}

/// A sub-group-sized launch: 128 work-items, a multiple of every sub-group
/// width; each sub-group does the same work.
const GROUP: usize = 128;

fn offered_only_with_its_variants(cl: &Cl) {
    let listed = variants(cl);
    if !has_extension(cl) {
        assert!(
            listed.is_empty(),
            "{}: variants without the extension",
            cl.how
        );
        let r = cl.device_bytes(cl.device(), CL_DEVICE_COOPERATIVE_MATRIX_VARIANTS_VKCL);
        assert_eq!(r.err(), Some(CL_INVALID_VALUE), "{}", cl.how);
        // The built-ins are not declared: a kernel naming them fails to
        // build, as on any other OpenCL.
        let mut s = Setup::new(cl);
        let src = std::ffi::CString::new(
            "kernel void k(global float *p) { coop_mat_acc_float_16x16 m; }",
        )
        .unwrap();
        let mut ptr = src.as_ptr();
        let mut err = 0;
        let p = unsafe {
            cl.clCreateProgramWithSource.unwrap()(s.c, 1, &mut ptr, std::ptr::null(), &mut err)
        };
        assert_eq!(err, CL_SUCCESS);
        let d = cl.device();
        let r = unsafe {
            cl.clBuildProgram.unwrap()(p, 1, &d, std::ptr::null(), None, std::ptr::null_mut())
        };
        assert_eq!(r, CL_BUILD_PROGRAM_FAILURE, "{}", cl.how);
        unsafe { cl.clReleaseProgram.unwrap()(p) };
        s.zeroed(4);
        return;
    }
    assert!(
        !listed.is_empty(),
        "{}: the extension without variants",
        cl.how
    );
    eprintln!("{}: {} variants: {listed:?}", cl.how, listed.len());
    for v in &listed {
        assert!(v.m > 0 && v.n > 0 && v.k > 0, "{v:?}");
    }
}

/// `r = a × b + c` for each listed variant, `b` read column-major, with
/// small integers whose products and sums every element type holds.
fn every_variant_multiplies_exactly(cl: &Cl) {
    if !has_extension(cl) {
        return;
    }
    for v in variants(cl) {
        if v.saturating || v.types[2] != v.types[3] {
            continue;
        }
        let [ta, tb, tc, _] = v.types;
        let name =
            |usage: &str, t: u32, r: usize, c: usize| format!("{usage}_{}_{r}x{c}", element(t).0);
        let (sa, sb, sc) = (
            name("a", ta, v.m, v.k),
            name("b", tb, v.k, v.n),
            name("acc", tc, v.m, v.n),
        );
        let (ea, eb, ec) = (element(ta).0, element(tb).0, element(tc).0);
        let source = format!(
            "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n\
             kernel void k(global const {ea} *a, global const {eb} *b, global const {ec} *c, global {ec} *r) {{\n\
               coop_mat_{sa} ma = coop_mat_load_{sa}(a, CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, {k});\n\
               coop_mat_{sb} mb = coop_mat_load_{sb}(b, CLK_COOPERATIVE_MATRIX_LAYOUT_COLUMN_MAJOR, {k});\n\
               coop_mat_{sc} mc = coop_mat_load_{sc}(c, CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, {n});\n\
               coop_mat_store(r, coop_mat_muladd(ma, mb, mc), CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, {n});\n\
             }}\n",
            k = v.k,
            n = v.n
        );
        let signed = |t: u32| matches!(t, 0 | 1 | 3 | 4 | 5 | 6);
        let small = |i: usize, j: usize, t: u32| -> i64 {
            let x = ((i * 7 + j * 3) % 5) as i64;
            if signed(t) { x - 2 } else { x }
        };
        let a: Vec<i64> = (0..v.m * v.k)
            .map(|x| small(x / v.k, x % v.k, ta))
            .collect();
        // b[kk][j] at j * K + kk (column-major).
        let b: Vec<i64> = (0..v.k * v.n)
            .map(|x| small(x % v.k, x / v.k + 1, tb))
            .collect();
        let c: Vec<i64> = (0..v.m * v.n)
            .map(|x| small(x / v.n + 2, x % v.n, tc))
            .collect();
        let mut s = Setup::new(cl);
        let kernel = s.kernel(&source, "k", "");
        let bytes =
            |t: u32, xs: &[i64]| xs.iter().flat_map(|&x| bytes_of(t, x)).collect::<Vec<u8>>();
        let (ba, bb, bc) = (
            s.buffer_from(&bytes(ta, &a)),
            s.buffer_from(&bytes(tb, &b)),
            s.buffer_from(&bytes(tc, &c)),
        );
        let size = element(tc).1;
        let br = s.zeroed(v.m * v.n * size);
        for (i, m) in [ba, bb, bc, br].iter().enumerate() {
            s.arg(kernel, i as u32, m);
        }
        s.run(kernel, &[GROUP], Some(&[GROUP]), None);
        let got = cl.read(s.q, br, 0, v.m * v.n * size);
        for i in 0..v.m {
            for j in 0..v.n {
                let want = c[i * v.n + j]
                    + (0..v.k)
                        .map(|kk| a[i * v.k + kk] * b[j * v.k + kk])
                        .sum::<i64>();
                let at = (i * v.n + j) * size;
                let have = value_of(tc, &got[at..at + size]);
                assert_eq!(have, want as f64, "{}: {v:?} at ({i}, {j})", cl.how);
            }
        }
    }
}

/// The accumulator type of the first variant with float elements, if any.
fn float_accumulator(cl: &Cl) -> Option<(usize, usize)> {
    variants(cl)
        .into_iter()
        .find(|v| !v.saturating && v.types == [0, 0, 1, 1])
        .map(|v| (v.m, v.n))
}

/// Scale, negate, a ReLU through the elements, a conversion to half and
/// back, element-wise add and multiply: the matrix as the CPU has it.
fn element_wise_work_and_conversions(cl: &Cl) {
    if !has_extension(cl) {
        return;
    }
    let Some((m, n)) = float_accumulator(cl) else {
        return;
    };
    let half_acc = variants(cl)
        .iter()
        .any(|v| v.types[2] == 0 && v.m == m && v.n == n);
    let t = format!("acc_float_{m}x{n}");
    let h = format!("acc_half_{m}x{n}");
    let mut source = format!(
        "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n\
         kernel void k(global const float *in, global float *out, float s) {{\n\
           coop_mat_{t} x = coop_mat_load_{t}(in, CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, {n});\n\
           x = coop_mat_negate(coop_mat_scale(x, s));\n\
           for (uint i = 0; i < coop_mat_length(x); i++)\n\
             x = coop_mat_insert(x, i, fmax(coop_mat_extract(x, i), 0.0f));\n\
           x = coop_mat_add(x, coop_mat_init_{t}(0.5f));\n\
           x = coop_mat_mul(x, x);\n"
    );
    if half_acc {
        source += &format!(
            "  coop_mat_{h} y = coop_mat_convert_{h}(x);\n\
               y = coop_mat_sub(y, coop_mat_init_{h}((half)0.25f));\n\
               x = coop_mat_convert_{t}(y);\n"
        );
    }
    source += &format!(
        "  coop_mat_store(out, x, CLK_COOPERATIVE_MATRIX_LAYOUT_COLUMN_MAJOR, {m});\n}}\n"
    );
    let input: Vec<f32> = (0..m * n).map(|i| (i % 9) as f32 - 4.0).collect();
    let mut s = Setup::new(cl);
    let kernel = s.kernel(&source, "k", "");
    let bytes: Vec<u8> = input.iter().flat_map(|x| x.to_le_bytes()).collect();
    let bin = s.buffer_from(&bytes);
    let bout = s.zeroed(m * n * 4);
    s.arg(kernel, 0, &bin);
    s.arg(kernel, 1, &bout);
    s.arg(kernel, 2, &-0.5f32);
    s.run(kernel, &[GROUP], Some(&[GROUP]), None);
    let got = f32s(&cl.read(s.q, bout, 0, m * n * 4));
    for i in 0..m {
        for j in 0..n {
            let x = input[i * n + j];
            let mut want = (-(x * -0.5)).max(0.0) + 0.5;
            want *= want;
            if half_acc {
                want -= 0.25;
            }
            // Column-major out: (i, j) at j * m + i.
            let have = got[j * m + i];
            assert_eq!(have, want, "{}: ({i}, {j}) of {x}", cl.how);
        }
    }
}

/// Whether the device lists a 16×16×`k` multiply-add of these element
/// types (A, B, C, result), not saturating.
fn lists_16x16(cl: &Cl, k: usize, types: [u32; 4]) -> bool {
    variants(cl)
        .iter()
        .any(|v| (v.m, v.n, v.k) == (16, 16, k) && v.types == types && !v.saturating)
}

/// The example's kernel (128×128 blocks of C per work-group of four
/// sub-groups, through local memory), half into float and, where the
/// device has 16×16×32 byte multiplies, signed bytes into ints (`-DINT8`),
/// on a 256×384×192 product of small integers, which every element type
/// holds exactly.
fn tiled_gemm_matches_the_cpu(cl: &Cl) {
    let has = |k: usize, types: [u32; 4]| lists_16x16(cl, k, types);
    for (options, int8) in [("-cl-std=CL3.0", false), ("-cl-std=CL3.0 -DINT8", true)] {
        if !has_extension(cl)
            || !(if int8 {
                has(32, [3, 3, 5, 5])
            } else {
                has(16, [0, 0, 1, 1])
            })
        {
            continue;
        }
        let (m, n, k) = (256usize, 384usize, 192usize);
        let a: Vec<i64> = (0..m * k).map(|i| ((i * 7) % 5) as i64 - 2).collect();
        let b: Vec<i64> = (0..k * n).map(|i| ((i * 3) % 7) as i64 - 3).collect();
        let (ta, tc) = if int8 { (3, 5) } else { (0, 1) };
        let bytes = |xs: &[i64]| {
            xs.iter()
                .flat_map(|&x| bytes_of(ta, x))
                .collect::<Vec<u8>>()
        };
        let mut s = Setup::new(cl);
        let kernel = s.kernel(
            include_str!("../examples/coop_matmul.cl"),
            "coop_matmul",
            options,
        );
        // Four sub-groups: the preferred multiple is the sub-group width.
        let mut width = 0usize;
        let r = unsafe {
            cl.clGetKernelWorkGroupInfo.unwrap()(
                kernel,
                cl.device(),
                CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                std::mem::size_of::<usize>(),
                (&mut width as *mut usize).cast(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS);
        let local = 4 * width;
        let (ba, bb) = (s.buffer_from(&bytes(&a)), s.buffer_from(&bytes(&b)));
        let bc = s.zeroed(m * n * 4);
        s.arg(kernel, 0, &ba);
        s.arg(kernel, 1, &bb);
        s.arg(kernel, 2, &bc);
        s.arg(kernel, 3, &(n as u32));
        s.arg(kernel, 4, &(k as u32));
        s.run(kernel, &[n / 128 * local, m / 128], Some(&[local, 1]), None);
        let got = cl.read(s.q, bc, 0, m * n * 4);
        for i in 0..m {
            for j in 0..n {
                let want: i64 = (0..k).map(|kk| a[i * k + kk] * b[kk * n + j]).sum();
                let at = (i * n + j) * 4;
                let have = value_of(tc, &got[at..at + 4]);
                assert_eq!(have, want as f64, "{} {options}: C({i}, {j})", cl.how);
            }
        }
    }
}

/// SPIR-V IL with matrices of its own (`tests/kernels/cooperative_matrix_il.spvasm`):
/// half A × B into floats, with an element of B read and written back,
/// and signed bytes A × B + C into ints.
fn il_programs_multiply(cl: &Cl) {
    let has = |k: usize, types: [u32; 4]| lists_16x16(cl, k, types);
    if !has_extension(cl) || !has(16, [0, 0, 1, 1]) || !has(32, [3, 3, 5, 5]) {
        return;
    }
    use spirv_tools::assembler::Assembler;
    let il = spirv_tools::assembler::create(Some(spirv_tools::TargetEnv::Universal_1_3))
        .assemble(
            include_str!("kernels/cooperative_matrix_il.spvasm"),
            Default::default(),
        )
        .expect("the module assembles");
    let il: Vec<u8> = il.as_words().iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut s = Setup::new(cl);
    let mut err = 0;
    let p =
        unsafe { cl.clCreateProgramWithIL.unwrap()(s.c, il.as_ptr().cast(), il.len(), &mut err) };
    assert_eq!(err, CL_SUCCESS, "{}", cl.how);
    let d = cl.device();
    let r = unsafe {
        cl.clBuildProgram.unwrap()(p, 1, &d, std::ptr::null(), None, std::ptr::null_mut())
    };
    assert_eq!(r, CL_SUCCESS, "{}: build", cl.how);
    let kernel = |name: &std::ffi::CStr| {
        let mut err = 0;
        let k = unsafe { cl.clCreateKernel.unwrap()(p, name.as_ptr(), &mut err) };
        assert_eq!(err, CL_SUCCESS, "{name:?}");
        k
    };
    let small = |i: usize, m: i64| ((i * 7 + 3) % 5) as i64 - m;
    // Half: A row-major, B column-major (b[j][kk] at j * 16 + kk).
    let a: Vec<i64> = (0..256).map(|i| small(i, 2)).collect();
    let b: Vec<i64> = (0..256).map(|i| small(i + 11, 2)).collect();
    let halves = |xs: &[i64]| xs.iter().flat_map(|&x| bytes_of(0, x)).collect::<Vec<u8>>();
    let kh = kernel(c"halves");
    let k = kh;
    let (ba, bb, bc) = (
        s.buffer_from(&halves(&a)),
        s.buffer_from(&halves(&b)),
        s.zeroed(1024),
    );
    for (i, m) in [ba, bb, bc].iter().enumerate() {
        s.arg(k, i as u32, m);
    }
    s.run(k, &[GROUP], Some(&[GROUP]), None);
    let got = f32s(&cl.read(s.q, bc, 0, 1024));
    for i in 0..16 {
        for j in 0..16 {
            let want: i64 = (0..16).map(|kk| a[i * 16 + kk] * b[j * 16 + kk]).sum();
            assert_eq!(
                got[i * 16 + j],
                want as f32,
                "{}: halves ({i}, {j})",
                cl.how
            );
        }
    }
    // Bytes: A 16 × 32, B 32 × 16, C 16 × 16, all row-major.
    let a: Vec<i64> = (0..512).map(|i| small(i, 2)).collect();
    let b: Vec<i64> = (0..512).map(|i| small(i + 5, 2)).collect();
    let c: Vec<i64> = (0..256).map(|i| small(i, 4) * 100).collect();
    let k = kernel(c"bytes");
    let bytes = |t: u32, xs: &[i64]| xs.iter().flat_map(|&x| bytes_of(t, x)).collect::<Vec<u8>>();
    let (ba, bb, bc) = (
        s.buffer_from(&bytes(3, &a)),
        s.buffer_from(&bytes(3, &b)),
        s.buffer_from(&bytes(5, &c)),
    );
    for (i, m) in [ba, bb, bc].iter().enumerate() {
        s.arg(k, i as u32, m);
    }
    s.run(k, &[GROUP], Some(&[GROUP]), None);
    let got = cl.read(s.q, bc, 0, 1024);
    for i in 0..16 {
        for j in 0..16 {
            let want = c[i * 16 + j]
                + (0..32)
                    .map(|kk| a[i * 32 + kk] * b[kk * 16 + j])
                    .sum::<i64>();
            let at = (i * 16 + j) * 4;
            assert_eq!(
                value_of(5, &got[at..at + 4]),
                want as f64,
                "{}: bytes ({i}, {j})",
                cl.how
            );
        }
    }
    unsafe {
        cl.clReleaseKernel.unwrap()(kh);
        cl.clReleaseKernel.unwrap()(k);
        cl.clReleaseProgram.unwrap()(p);
    }
}
