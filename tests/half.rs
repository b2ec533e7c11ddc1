//! vload_half/vstore_half: every half value read back exactly; floats
//! (edges, denormals, overflow, random) stored with each rounding mode,
//! checked against the neighbouring halves found on the host.

mod common;

use common::*;
use opencl_sys::CL_DEVICE_EXTENSIONS;

both_ways!(
    every_half_loads_exactly,
    stores_round_in_each_mode,
    stores_into_local_and_private_arrays_through_cast_pointers
);

const SOURCE: &str = include_str!("kernels/half.cl");

fn every_half_loads_exactly(cl: &Cl) {
    let n = 65536usize;
    let halves: Vec<u16> = (0..=u16::MAX).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "load_half", "");
    let h = s.buffer_from(&bytes_of(&halves));
    let (f, f4, f3) = (s.buffer(n * 4), s.buffer(n * 4), s.buffer(n / 4 * 12));
    for (a, b) in [h, f, f4, f3].iter().enumerate() {
        s.arg(k, a as u32, b);
    }
    s.run(k, &[n], Some(&[64]), None);
    let (got, got4, got3) = (
        f32s(&cl.read(s.q, f, 0, n * 4)),
        f32s(&cl.read(s.q, f4, 0, n * 4)),
        f32s(&cl.read(s.q, f3, 0, n / 4 * 12)),
    );
    for (i, &h) in halves.iter().enumerate() {
        let want = half_value(h);
        let same = |g: f32| (want.is_nan() && g.is_nan()) || g as f64 == want;
        assert!(
            same(got[i]),
            "{}: vload_half({h:#06x}) = {}",
            cl.how,
            got[i]
        );
        assert!(same(got4[i]), "{}: vload_half4 lane {i}", cl.how);
        // vloada_half3 reads three of every four halves.
        if i % 4 != 3 {
            assert!(
                same(got3[i / 4 * 3 + i % 4]),
                "{}: vloada_half3 lane {i}",
                cl.how
            );
        }
    }
}

/// The half bits of `v` rounded in `mode` ("rte", "rtz", "rtp", "rtn").
fn reference(v: f32, mode: &str) -> u16 {
    if v.is_nan() {
        return 0x7E00;
    }
    if v.is_infinite() {
        // Infinities convert exactly, whatever the mode.
        return if v > 0.0 { 0x7C00 } else { 0xFC00 };
    }
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = (v as f64).abs();
    // The largest finite half not above a, by binary search over the bits.
    let (mut lo, mut hi) = (0u16, 0x7BFFu16);
    if a >= half_value(0x7BFF) {
        lo = 0x7BFF;
    } else {
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if half_value(mid) <= a {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
    }
    let below = half_value(lo);
    if below == a {
        return sign | lo;
    }
    // The next half up; above the largest finite one it is infinity,
    // which nearest rounding reaches from 65520.
    let above = if lo == 0x7BFF {
        65536.0
    } else {
        half_value(lo + 1)
    };
    let up = lo + 1;
    let away = match mode {
        "rtz" => false,
        "rtp" => sign == 0,
        "rtn" => sign != 0,
        _ => a - below > above - a || (a - below == above - a && lo % 2 == 1),
    };
    sign | if away { up } else { lo }
}

fn stores_round_in_each_mode(cl: &Cl) {
    let mut x: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        65519.0,
        65520.0,
        -65520.0,
        65536.0,
        1.0e9,
        -1.0e9,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        6.0e-8,
        5.960_464_5e-8,
        2.98e-8,
        2.980_232_2e-8,
        -2.980_233e-8,
        1.0e-10,
        -1.0e-30,
        6.103_515_6e-5,
        6.1e-5,
        0.333_333_34,
        1.000_976_6,
        1.000_488_3,
        1.001_464_8,
        2049.0,
        2051.0,
        -2051.0,
        f32::MIN_POSITIVE,
        1.0e-45,
    ];
    let mut seed = 0x9E37_79B9u32;
    while x.len() < 4096 {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        // Random bit patterns over the half range and beyond.
        let bits = (seed & 0x807F_FFFF) | ((100 + (seed >> 23) % 50) << 23);
        x.push(f32::from_bits(bits));
    }
    let n = x.len();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "store_half", "");
    let f = s.buffer_from(&bytes_of(&x));
    s.arg(k, 0, &f);
    let outs: Vec<_> = (0..5).map(|_| s.buffer(n * 2)).collect();
    for (a, b) in outs.iter().enumerate() {
        s.arg(k, a as u32 + 1, b);
    }
    s.run(k, &[n], Some(&[64]), None);
    let got: Vec<Vec<u16>> = outs
        .iter()
        .map(|&b| u16s(&cl.read(s.q, b, 0, n * 2)))
        .collect();
    for (i, &v) in x.iter().enumerate() {
        for (m, mode) in ["rte", "rtz", "rtp", "rtn"].iter().enumerate() {
            let want = reference(v, mode);
            let g = got[m][i];
            let both_nan = v.is_nan() && (g & 0x7C00) == 0x7C00 && (g & 0x3FF) != 0;
            assert!(
                g == want || both_nan,
                "{}: vstore_half_{mode}({v:e}) = {g:#06x}, want {want:#06x}",
                cl.how
            );
        }
        let want = reference(v, "rte");
        assert!(
            got[4][i] == want || v.is_nan(),
            "{}: vstore_half2 lane {i}",
            cl.how
        );
    }
}

/// vstore_half and vstore2 of half values into `volatile` (so kept in
/// memory) `local` and `private` arrays of `short`, through the array's
/// pointer cast to `half *` and moved one element on (the built-ins step
/// from there): the stores land at those elements and nowhere else.
fn stores_into_local_and_private_arrays_through_cast_pointers(cl: &Cl) {
    const SRC: &str = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable
        kernel void k(global short *out, global const float *in) {
            volatile local short l[6];
            volatile private short p[6];
            for (int i = 0; i < 6; ++i) { l[i] = -1; p[i] = -1; }
            vstore_half(in[0], 1, (local half *)l + 1);
            vstore2(vload2(0, (global half *)(in + 1)), 1, (private half *)p + 1);
            for (int i = 0; i < 6; ++i) { out[i] = l[i]; out[6 + i] = p[i]; }
        }";
    let mut s = Setup::new(cl);
    let ext = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    if !ext.contains("cl_khr_fp16") {
        eprintln!("skipped: no cl_khr_fp16");
        return;
    }
    let k = s.kernel(SRC, "k", "");
    let out = s.zeroed(12 * 2);
    // 1.5, then the halves 2.0 and -3.0 packed into the next float.
    let packed = f32::from_bits(0x4000 | (0xC200 << 16));
    let input = s.buffer_from(&bytes_of(&[1.5f32, packed]));
    s.arg(k, 0, &out);
    s.arg(k, 1, &input);
    s.run(k, &[1], Some(&[1]), None);
    let got: Vec<u16> = cl
        .read(s.q, out, 0, 24)
        .chunks(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect();
    let none = 0xFFFF;
    assert_eq!(
        &got[..6],
        &[none, none, 0x3E00, none, none, none],
        "{}: local",
        cl.how
    );
    assert_eq!(
        &got[6..],
        &[none, none, none, 0x4000, 0xC200, none],
        "{}: private",
        cl.how
    );
}
