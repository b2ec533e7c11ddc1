// The cases of dot_products.rs and dot_products_native_dot.rs.

use common::*;
use opencl_sys::CL_DEVICE_EXTENSIONS;

both_ways!(integer_dot_products);

/// Pseudo-random 32-bit words.
fn words(count: usize, salt: u64) -> Vec<u64> {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ salt;
    (0..count)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 11 ^ seed << 7) & 0xFFFF_FFFF
        })
        .collect()
}

const DOTS: &str = "kernel void dots(global uchar4 *ua, global uchar4 *ub, global int *acc,\n\
        global int *out) {\n\
    size_t i = get_global_id(0);\n\
    uchar4 a = ua[i], b = ub[i];\n\
    char4 sa = as_char4(a), sb = as_char4(b);\n\
    uint pa = as_uint(a), pb = as_uint(b);\n\
    int c = acc[i];\n\
    uint uc = as_uint(c);\n\
    global int *o = out + 16 * i;\n\
    o[0] = as_int(dot(a, b)); o[1] = dot(sa, sb); o[2] = dot(a, sb); o[3] = dot(sa, b);\n\
    o[4] = as_int(dot_acc_sat(a, b, uc)); o[5] = dot_acc_sat(sa, sb, c);\n\
    o[6] = dot_acc_sat(a, sb, c); o[7] = dot_acc_sat(sa, b, c);\n\
    o[8] = as_int(dot_4x8packed_uu_uint(pa, pb)); o[9] = dot_4x8packed_ss_int(pa, pb);\n\
    o[10] = dot_4x8packed_us_int(pa, pb); o[11] = dot_4x8packed_su_int(pa, pb);\n\
    o[12] = as_int(dot_acc_sat_4x8packed_uu_uint(pa, pb, uc));\n\
    o[13] = dot_acc_sat_4x8packed_ss_int(pa, pb, c);\n\
    o[14] = dot_acc_sat_4x8packed_us_int(pa, pb, c);\n\
    o[15] = dot_acc_sat_4x8packed_su_int(pa, pb, c);\n\
}\n";

/// cl_khr_integer_dot_product: every signedness of `dot` and
/// `dot_acc_sat`, on vectors and packed in 32-bit integers, against a host
/// reference, with sums that saturate both ways.
fn integer_dot_products(cl: &Cl) {
    let extensions = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    // Offered wherever Vulkan has 8-bit integers: lavapipe and the GPUs
    // vkcl is tested on.
    assert!(
        extensions
            .split(' ')
            .any(|e| e == "cl_khr_integer_dot_product"),
        "{}: cl_khr_integer_dot_product offered",
        cl.how
    );
    // Six cl_bools; all set where VKCL_NATIVE_DOT=1 leaves every product
    // to the device, which lavapipe and the tested GPUs can take.
    let accelerated = cl
        .device_bytes(
            cl.device(),
            opencl_sys::CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_8BIT,
        )
        .unwrap();
    assert_eq!(accelerated.len(), 24, "{}", cl.how);
    if env!("CARGO_CRATE_NAME").ends_with("_native_dot") {
        assert!(
            accelerated.chunks(4).all(|b| b != [0; 4]),
            "{}: every product left to the device",
            cl.how
        );
    }
    let n = 256;
    let mut a = words(n, 1);
    let mut b = words(n, 4);
    let mut acc = words(n, 6);
    for (i, (x, y, c)) in [
        (0x8080_8080, 0x8080_8080, 0x7FFF_FFF0), // (-128)^2 * 4 past INT_MAX
        (0x8080_8080, 0x7F7F_7F7F, 0x8000_0010), // -128 * 127 * 4 past INT_MIN
        (0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FF00), // 255^2 * 4 past UINT_MAX
        (0x7F80_FF01, 0x807F_01FF, 0),
    ]
    .into_iter()
    .enumerate()
    {
        (a[i], b[i], acc[i]) = (x, y, c);
    }
    let mut s = Setup::new(cl);
    let k = s.kernel(DOTS, "dots", "-cl-std=CL3.0");
    let as32 = |v: &[u64]| bytes_of(&v.iter().map(|&x| x as u32).collect::<Vec<_>>());
    let args = [
        s.buffer_from(&as32(&a)),
        s.buffer_from(&as32(&b)),
        s.buffer_from(&as32(&acc)),
        s.buffer(16 * 4 * n),
    ];
    for (i, x) in args.iter().enumerate() {
        s.arg(k, i as u32, x);
    }
    s.run(k, &[n], None, None);
    let got = s.words(args[3], 16 * n);
    for i in 0..n {
        let lanes = |v: u64, signed: bool| -> [i64; 4] {
            std::array::from_fn(|k| {
                let byte = (v >> (8 * k)) as u8;
                if signed {
                    i64::from(byte as i8)
                } else {
                    i64::from(byte)
                }
            })
        };
        let dot = |sa: bool, sb: bool| -> i64 {
            lanes(a[i], sa)
                .iter()
                .zip(lanes(b[i], sb))
                .map(|(x, y)| x * y)
                .sum()
        };
        let c = acc[i] as u32;
        let sat_u = |d: i64| (d + i64::from(c)).min(i64::from(u32::MAX)) as u32;
        let sat_s = |d: i64| {
            (d + i64::from(c as i32)).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
        };
        let forms = [
            dot(false, false) as u32,
            dot(true, true) as u32,
            dot(false, true) as u32,
            dot(true, false) as u32,
            sat_u(dot(false, false)),
            sat_s(dot(true, true)),
            sat_s(dot(false, true)),
            sat_s(dot(true, false)),
        ];
        for (f, &want) in forms.iter().chain(forms.iter()).enumerate() {
            assert_eq!(
                got[16 * i + f],
                want,
                "{}: form {f} ({} of {:#010x}, {:#010x}, acc {:#010x})",
                cl.how,
                if f < 8 { "vectors" } else { "packed" },
                a[i],
                b[i],
                c
            );
        }
    }
}
