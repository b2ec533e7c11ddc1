//! Half precision (`cl_khr_fp16`, computed in float or, where the device
//! has it, in 16-bit float arithmetic): arithmetic correctly rounded, fma exactly, conversions with every rounding mode, math
//! built-ins within the OpenCL C specification's limits for half, vectors,
//! out-parameters, the edges where half differs from float, and
//! `read_imageh`/`write_imageh`.

mod common;

use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    half_is_advertised_with_its_config,
    arithmetic_is_correctly_rounded,
    fma_is_correctly_rounded,
    nextafter_and_fract_of_halves,
    conversions_round_in_each_mode,
    math_within_limits,
    vectors_and_out_parameters,
    wide_vectors_and_comparisons,
    signs_of_nans_are_kept,
    image_reads_and_writes_of_halves,
);

const SOURCE: &str = include_str!("kernels/fp16.cl");

/// Fails with the count and the first ten of `wrong`, if there are any.
fn assert_none_wrong(cl: &Cl, wrong: &[String]) {
    assert!(
        wrong.is_empty(),
        "{}: {} wrong: {:?}",
        cl.how,
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
}

/// Every finite non-negative half, as (value, bits), ascending.
fn finite_halves() -> Vec<(f64, u16)> {
    (0u16..0x7C00).map(|h| (half_value(h), h)).collect()
}

/// `x` rounded to half bits: nearest (ties to even), toward zero, toward
/// +infinity or toward -infinity (`mode` 0 to 3, OpenCL's order).
fn round(x: f64, mode: u32, table: &[(f64, u16)]) -> u16 {
    if x.is_nan() {
        return 0x7E00;
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_infinite() {
        return sign | 0x7C00;
    }
    let a = x.abs();
    // Away from zero for the sign's direction, toward zero otherwise.
    let up = match mode {
        2 => sign == 0,
        3 => sign != 0,
        _ => false,
    };
    let max = 65504.0;
    if a > max {
        let to_inf = match mode {
            0 => a >= 65520.0,
            1 => false,
            _ => up,
        };
        return sign | if to_inf { 0x7C00 } else { 0x7BFF };
    }
    let i = table.partition_point(|(v, _)| *v <= a) - 1;
    let (lo, lo_bits) = table[i];
    if lo == a {
        return sign | lo_bits;
    }
    let (hi, hi_bits) = table.get(i + 1).copied().unwrap_or((65536.0, 0x7C00));
    let pick_hi = match mode {
        0 => a - lo > hi - a || (a - lo == hi - a && lo_bits & 1 == 1),
        1 => false,
        _ => up,
    };
    sign | if pick_hi { hi_bits } else { lo_bits }
}

fn has_fp16(cl: &Cl) -> bool {
    let ext = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    ext.split(' ').any(|e| e == "cl_khr_fp16")
}

/// Half bits spread over the finite range, with the special values.
fn sample_halves(n: usize, seed: u32) -> Vec<u16> {
    let special = [
        0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
        0x7E00, 0x3555, 0x4248,
    ];
    let mut v: Vec<u16> = special.to_vec();
    let mut s = seed;
    while v.len() < n {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        v.push((s >> 16) as u16);
    }
    v
}

fn half_is_advertised_with_its_config(cl: &Cl) {
    assert!(has_fp16(cl), "{}: cl_khr_fp16 missing", cl.how);
    let d = cl.device();
    let config = u64_of(&cl.device_bytes(d, CL_DEVICE_HALF_FP_CONFIG).unwrap());
    assert_eq!(
        config,
        CL_FP_ROUND_TO_NEAREST | CL_FP_INF_NAN | CL_FP_DENORM,
        "{}",
        cl.how
    );
    for q in [
        CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF,
        CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF,
    ] {
        assert_eq!(u32_of(&cl.device_bytes(d, q).unwrap()), 1, "{}", cl.how);
    }
}

/// Runs `name` over `inputs` (each a buffer's bytes) with `out` bytes of
/// results per work-item.
fn run(cl: &Cl, name: &str, inputs: &[Vec<u8>], outputs: &[usize], n: usize) -> Vec<Vec<u8>> {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, name, "");
    let mut i = 0;
    for b in inputs {
        let m = s.buffer_from(b);
        s.arg(k, i, &m);
        i += 1;
    }
    let outs: Vec<cl_mem> = outputs.iter().map(|&o| s.zeroed(o * n)).collect();
    for m in &outs {
        s.arg(k, i, m);
        i += 1;
    }
    s.run(k, &[n], None, None);
    outs.iter()
        .zip(outputs)
        .map(|(&m, &o)| s.cl.read(s.q, m, 0, o * n))
        .collect()
}

fn same(got: u16, want: u16) -> bool {
    got == want || (half_value(got).is_nan() && half_value(want).is_nan())
}

fn arithmetic_is_correctly_rounded(cl: &Cl) {
    let n = 4096;
    let table = finite_halves();
    let a = sample_halves(n, 1);
    let b = sample_halves(n, 2);
    let out = run(cl, "arithmetic", &[bytes_of(&a), bytes_of(&b)], &[10], n);
    let got = u16s(&out[0]);
    let mut wrong = Vec::new();
    for i in 0..n {
        let (x, y) = (half_value(a[i]), half_value(b[i]));
        // f64 holds every sum, difference and product of halves exactly;
        // a quotient or root rounded to f64 and then to half is the
        // correctly rounded half.
        let want = [x + y, x - y, x * y, x / y, x.sqrt()].map(|v| round(v, 0, &table));
        for (j, w) in want.iter().enumerate() {
            if !same(got[5 * i + j], *w) {
                wrong.push(format!(
                    "op {j} of {:#06x}, {:#06x}: {:#06x} vs {w:#06x}",
                    a[i],
                    b[i],
                    got[5 * i + j]
                ));
            }
        }
    }
    assert_none_wrong(cl, &wrong);
}

/// fma's exact result, `a * b + c` in units of 2^-48 (every half is a
/// whole number of 2^-24), rounded to the nearest half, ties to even.
fn exact_fma(a: u16, b: u16, c: u16, table: &[(f64, u16)]) -> u16 {
    let units = |h: u16| (half_value(h) * 2f64.powi(24)) as i128;
    let n = units(a) * units(b) + units(c) * (1 << 24);
    if n == 0 {
        // The sign of an exact zero: tested loosely (see the caller).
        return 0;
    }
    let sign = if n < 0 { 0x8000 } else { 0 };
    let m = n.abs();
    let at = |i: usize| (table[i].0 * 2f64.powi(48)) as i128;
    if m >= 65520i128 << 48 {
        return sign | 0x7C00;
    }
    let i = (0..table.len()).rev().find(|&i| at(i) <= m).unwrap_or(0);
    if at(i) == m || i + 1 == table.len() {
        return sign | table[i].1;
    }
    let (lo, hi) = (m - at(i), at(i + 1) - m);
    let up = hi < lo || (hi == lo && table[i].1 & 1 == 1);
    sign | if up { table[i + 1].1 } else { table[i].1 }
}

fn fma_is_correctly_rounded(cl: &Cl) {
    let n = 4096;
    let table = finite_halves();
    // Finite operands whose products and sums stay in range, often
    // cancelling.
    let finite = |v: Vec<u16>| -> Vec<u16> { v.into_iter().map(|h| h & 0xD7FF).collect() };
    let a = finite(sample_halves(n, 41));
    let b = finite(sample_halves(n, 42));
    let c: Vec<u16> = (0..n)
        .map(|i| {
            let p = half_value(a[i]) * half_value(b[i]);
            if i % 3 == 0 {
                round(-p, 1, &table)
            } else {
                finite(sample_halves(n, 43))[i]
            }
        })
        .collect();
    let out = run(
        cl,
        "fused",
        &[bytes_of(&a), bytes_of(&b), bytes_of(&c)],
        &[2],
        n,
    );
    let got = u16s(&out[0]);
    let mut wrong = Vec::new();
    for i in 0..n {
        let want = exact_fma(a[i], b[i], c[i], &table);
        let zero = want == 0 && got[i] & 0x7FFF == 0;
        if got[i] != want && !zero {
            wrong.push(format!(
                "fma({:#06x}, {:#06x}, {:#06x}): {:#06x} vs {want:#06x}",
                a[i], b[i], c[i], got[i]
            ));
        }
    }
    assert_none_wrong(cl, &wrong);
}

fn conversions_round_in_each_mode(cl: &Cl) {
    let n = 4096;
    let table = finite_halves();
    let mut floats: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        65504.0,
        65519.99,
        65520.0,
        1e9,
        -1e9,
        5.96e-8,
        2.9e-8,
        3.0e-8,
        1e-10,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.1,
        -0.1,
        1.0 + 2f32.powi(-11),
    ];
    let mut s = 7u32;
    while floats.len() < n {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let f = f32::from_bits(s);
        // Mostly values in or near the half range.
        floats.push(if s & 3 == 0 {
            f
        } else {
            f.clamp(-7e4, 7e4) % 7e4 * 1e-3f32.powi((s >> 5 & 3) as i32)
        });
    }
    let ints: Vec<i32> = (0..n as i32)
        .map(|i| match i % 4 {
            0 => i * 37 - 70000,
            1 => i.wrapping_mul(2_654_435_761u32 as i32),
            2 => 2049 + 2 * i,
            _ => -i,
        })
        .collect();
    let halves = sample_halves(n, 3);
    let out = run(
        cl,
        "conversions",
        &[bytes_of(&floats), bytes_of(&ints), bytes_of(&halves)],
        &[12, 8, 4],
        n,
    );
    let (rounded, got_ints, widened) = (u16s(&out[0]), i32s(&out[1]), f32s(&out[2]));
    let mut wrong = Vec::new();
    for i in 0..n {
        let x = floats[i] as f64;
        for mode in 0..4 {
            let want = round(x, mode, &table);
            if !same(rounded[6 * i + mode as usize], want) {
                wrong.push(format!(
                    "float {x:e} mode {mode}: {:#06x} vs {want:#06x}",
                    rounded[6 * i + mode as usize]
                ));
            }
        }
        for (j, mode) in [(4, 0), (5, 1)] {
            let want = round(ints[i] as f64, mode, &table);
            if rounded[6 * i + j] != want {
                wrong.push(format!(
                    "int {} mode {mode}: {:#06x} vs {want:#06x}",
                    ints[i],
                    rounded[6 * i + j]
                ));
            }
        }
        let h = half_value(halves[i]);
        let sat = |v: f64| {
            if v.is_nan() {
                0
            } else {
                v.clamp(i32::MIN as f64, i32::MAX as f64) as i32
            }
        };
        let want = [sat(h.trunc()), sat(h.ceil())];
        if got_ints[2 * i..2 * i + 2] != want {
            wrong.push(format!(
                "half {h}: {:?} vs {want:?}",
                &got_ints[2 * i..2 * i + 2]
            ));
        }
        if !(widened[i] as f64 == h || (h.is_nan() && widened[i].is_nan())) {
            wrong.push(format!("half {:#06x} widened to {}", halves[i], widened[i]));
        }
    }
    assert_none_wrong(cl, &wrong);
}

/// Half ULP at the magnitude of `v`.
fn ulp(v: f64) -> f64 {
    let a = v.abs();
    if a < 2f64.powi(-14) {
        return 2f64.powi(-24);
    }
    2f64.powi(a.log2().floor() as i32 - 10)
}

fn math_within_limits(cl: &Cl) {
    let n = 2048;
    let a = sample_halves(n, 11);
    let b: Vec<u16> = sample_halves(n, 12).iter().map(|h| h & 0x4FFF).collect();
    let out = run(cl, "math", &[bytes_of(&a), bytes_of(&b)], &[16], n);
    let got = u16s(&out[0]);
    let names = ["sin", "exp", "log", "pow", "atan2", "fmax", "rsqrt", "mad"];
    // The specification's limits for half (ULP); mad may be computed with
    // any precision but is here a float multiply-add rounded once more.
    let limits = [2.0, 3.0, 3.0, 4.0, 6.0, 0.0, 1.0, 1.0];
    let mut wrong = Vec::new();
    for i in 0..n {
        let (x, y) = (half_value(a[i]), half_value(b[i]));
        let fmax = if x.is_nan() {
            y
        } else if y.is_nan() {
            x
        } else {
            x.max(y)
        };
        let want = [
            x.sin(),
            x.exp(),
            x.ln(),
            x.powf(y),
            x.atan2(y),
            fmax,
            1.0 / x.sqrt(),
            x * y + x,
        ];
        for j in 0..8 {
            let (g, w) = (half_value(got[8 * i + j]), want[j]);
            let ok = if w.is_nan() {
                g.is_nan()
            } else if w.abs() > 65504.0 || g.is_infinite() {
                // Beyond the half range, or overflowing at its edge.
                g.is_infinite() && g.signum() == w.signum()
                    || (g.abs() - w.abs()).abs() <= (limits[j] + 0.5) * ulp(65504.0)
            } else {
                (g - w).abs() <= (limits[j] + 0.5) * ulp(w)
            };
            if !ok {
                wrong.push(format!("{}({x}, {y}) = {g} vs {w}", names[j]));
            }
        }
    }
    assert_none_wrong(cl, &wrong);
}

fn vectors_and_out_parameters(cl: &Cl) {
    let n = 1024;
    let table = finite_halves();
    let a = sample_halves(n * 4, 21);
    let out = run(
        cl,
        "vectors_and_out_parameters",
        &[bytes_of(&a)],
        &[32, 32],
        n,
    );
    let (got, ints) = (u16s(&out[0]), i32s(&out[1]));
    let mut wrong = Vec::new();
    for i in 0..n {
        for c in 0..4 {
            let h = a[4 * i + c];
            let x = half_value(h);
            let at = |row: usize| got[16 * i + 4 * row + c];
            // modf: the fraction and the whole part, exactly.
            let (whole, frac) = if x.is_infinite() {
                (x, 0.0f64.copysign(x))
            } else {
                // A whole number's fraction is a zero of its sign.
                (x.trunc(), (x - x.trunc()).abs().copysign(x))
            };
            if !same(at(0), round(frac, 0, &table)) || !same(at(1), round(whole, 0, &table)) {
                wrong.push(format!("modf({x}): {:#06x} {:#06x}", at(0), at(1)));
            }
            // frexp: a mantissa in [0.5, 1) and the exponent.
            let e = ints[8 * i + c];
            if x.is_finite() && x != 0.0 {
                let m = half_value(at(2));
                if !((0.5..1.0).contains(&m.abs()) && m * 2f64.powi(e) == x) {
                    wrong.push(format!("frexp({x}) = {m}, {e}"));
                }
            }
            let offset = [0.5, -1.0, 2.0, 0.25][c];
            // Rounded after the multiply, or once (contracted into mad).
            let stepwise = round(half_value(round(x * 2.0, 0, &table)) + offset, 0, &table);
            let want = round(x * 2.0 + offset, 0, &table);
            if !same(at(3), want) && !same(at(3), stepwise) {
                wrong.push(format!("{x} * 2 + {offset}: {:#06x} vs {want:#06x}", at(3)));
            }
            let flags = ints[8 * i + 4 + c];
            // isnormal by the half's own exponent (0x0400 to 0x7BFF).
            let normal = (0x0400..0x7C00).contains(&(h & 0x7FFF));
            let want_flags = -(x.is_nan() as i32) + 2 * -((x > 1.0) as i32) + 4 * (h & 1) as i32
                - 8 * normal as i32;
            if flags != want_flags {
                wrong.push(format!("flags of {x}: {flags} vs {want_flags}"));
            }
        }
    }
    assert_none_wrong(cl, &wrong);
}

fn wide_vectors_and_comparisons(cl: &Cl) {
    let n = 1024;
    let table = finite_halves();
    let a = sample_halves(n * 8, 31);
    let mut b = sample_halves(n * 8, 32);
    // Some equal pairs, for the comparisons.
    for k in (0..b.len()).step_by(7) {
        b[k] = a[k];
    }
    let out = run(
        cl,
        "wide_vectors_and_comparisons",
        &[bytes_of(&a), bytes_of(&b)],
        &[48, 48],
        n,
    );
    let (got, flags) = (u16s(&out[0]), u16s(&out[1]));
    let mut wrong = Vec::new();
    for i in 0..n {
        for c in 0..8 {
            let (x, y) = (half_value(a[8 * i + c]), half_value(b[8 * i + c]));
            let at = |row: usize| got[24 * i + 8 * row + c];
            let flag = |row: usize| flags[24 * i + 8 * row + c] as i16;
            let product = half_value(round(x * y, 0, &table));
            let want = [
                round(product - x, 0, &table),
                round(y - x, 0, &table),
                round(x * 3.0, 0, &table),
            ];
            for (row, w) in want.iter().enumerate() {
                if !same(at(row), *w) {
                    wrong.push(format!(
                        "row {row} of {x}, {y}: {:#06x} vs {w:#06x}",
                        at(row)
                    ));
                }
            }
            let want_flags = [x < y, x >= y, x != y].map(|t| -(t as i16));
            for (row, w) in want_flags.iter().enumerate() {
                if flag(row) != *w {
                    wrong.push(format!(
                        "comparison {row} of {x}, {y}: {} vs {w}",
                        flag(row)
                    ));
                }
            }
        }
    }
    assert_none_wrong(cl, &wrong);
}

/// `copysign` and `signbit` of NaNs of either sign (hardware conversions
/// to float may lose a NaN's sign).
fn signs_of_nans_are_kept(cl: &Cl) {
    let n = 1024;
    let a = sample_halves(n, 41);
    // NaNs of both signs with assorted payloads, and ordinary values.
    let b: Vec<u16> = sample_halves(n, 42)
        .iter()
        .enumerate()
        .map(|(i, &h)| if i % 2 == 0 { 0x7C01 | (h & 0x83FF) } else { h })
        .collect();
    let out = run(cl, "signs", &[bytes_of(&a), bytes_of(&b)], &[2, 4], n);
    let (got, flags) = (u16s(&out[0]), i32s(&out[1]));
    let mut wrong = Vec::new();
    for i in 0..n {
        let want = (a[i] & 0x7FFF) | (b[i] & 0x8000);
        let sign = b[i] >> 15 == 1;
        if !same(got[i], want) || (half_value(want).is_nan() && got[i] >> 15 != want >> 15) {
            wrong.push(format!(
                "copysign({:#06x}, {:#06x}) = {:#06x}, not {want:#06x}",
                a[i], b[i], got[i]
            ));
        }
        if (flags[i] != 0) != sign {
            wrong.push(format!("signbit({:#06x}) = {}", b[i], flags[i]));
        }
    }
    assert_none_wrong(cl, &wrong);
}

fn image_reads_and_writes_of_halves(cl: &Cl) {
    let (w, h) = (5usize, 3usize);
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "image_halves", "");
    let format = cl_image_format {
        image_channel_order: CL_RGBA,
        image_channel_data_type: CL_HALF_FLOAT,
    };
    let desc = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let texels: Vec<u16> = sample_halves(w * h * 4, 31)
        .into_iter()
        .map(|b| b & 0xBBFF)
        .collect();
    let mut data = bytes_of(&texels);
    let mut e = 1;
    let src = unsafe {
        cl.clCreateImage.unwrap()(
            s.c,
            CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
            &format,
            &desc,
            data.as_mut_ptr().cast(),
            &mut e,
        )
    };
    assert_eq!(e, CL_SUCCESS, "{}", cl.how);
    let dst = unsafe {
        cl.clCreateImage.unwrap()(s.c, CL_MEM_WRITE_ONLY, &format, &desc, null_mut(), &mut e)
    };
    assert_eq!(e, CL_SUCCESS, "{}", cl.how);
    s.arg(k, 0, &src);
    s.arg(k, 1, &dst);
    s.run(k, &[w, h], None, None);
    let mut back = vec![0u8; w * h * 8];
    let r = unsafe {
        cl.clEnqueueReadImage.unwrap()(
            s.q,
            dst,
            CL_TRUE,
            [0usize; 3].as_ptr(),
            [w, h, 1].as_ptr(),
            0,
            0,
            back.as_mut_ptr().cast(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS, "{}", cl.how);
    let table = finite_halves();
    let got = u16s(&back);
    for (i, &t) in texels.iter().enumerate() {
        let want = round(half_value(t) * 2.0, 0, &table);
        assert!(
            same(got[i], want),
            "{}: texel {i}: {:#06x} vs {want:#06x}",
            cl.how,
            got[i]
        );
    }
    unsafe {
        cl.clReleaseMemObject.unwrap()(src);
        cl.clReleaseMemObject.unwrap()(dst);
    }
}

fn nextafter_and_fract_of_halves(cl: &Cl) {
    let table = finite_halves();
    let pairs: Vec<(u16, u16)> = vec![
        (0x8000, 0x3C00),
        (0x0000, 0xBC00),
        (0x3C00, 0x4000),
        (0x3C00, 0x0000),
        (0xBC00, 0xC000),
        (0x7BFF, 0x7C00),
        (0x0001, 0x0000),
        (0x8001, 0x0000),
        (0x3C00, 0x3C00),
        (0x7E00, 0x3C00),
        (0x8001, 0x4000),
    ];
    let (a, b): (Vec<u16>, Vec<u16>) = pairs.iter().copied().unzip();
    let out = run(cl, "edges", &[bytes_of(&a), bytes_of(&b)], &[4], a.len());
    let got = u16s(&out[0]);
    for (i, &(x, y)) in pairs.iter().enumerate() {
        let (vx, vy) = (half_value(x), half_value(y));
        let want = if vx.is_nan() || vy.is_nan() {
            0x7E00
        } else if vx == vy {
            y
        } else if vx == 0.0 {
            (y & 0x8000) | 1
        } else if (vx < vy) == (vx > 0.0) {
            x + 1
        } else {
            x - 1
        };
        assert!(
            same(got[2 * i], want),
            "{}: nextafter({x:#06x}, {y:#06x}) = {:#06x}",
            cl.how,
            got[2 * i]
        );
        if vx.is_finite() {
            let f = (vx - vx.floor()).min(1.0 - 2f64.powi(-11));
            let want = round(f, 0, &table);
            assert!(
                same(got[2 * i + 1], want),
                "{}: fract({x:#06x}) = {:#06x}",
                cl.how,
                got[2 * i + 1]
            );
        }
    }
}
