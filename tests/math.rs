//! Math built-ins (OpenCL.std instructions with Vulkan instructions where
//! those are precise enough, exact bit operations, and libclc's
//! implementations otherwise) against a double-precision host reference,
//! within the ULP limits of the OpenCL C specification for single
//! precision, on edge and pseudo-random inputs.

mod common;

use common::*;

both_ways!(
    unary_math,
    binary_math,
    math_on_wide_vectors,
    relaxed_math,
    native_functions,
    library_functions_with_loops,
    denormals_kept_where_claimed,
    pi_functions_give_signed_zeros,
    gamma_and_erfc_within_limits
);

unsafe extern "C" {
    /// The host's C library (libm), the reference for these two.
    fn tgamma(x: f64) -> f64;
    fn erfc(x: f64) -> f64;
}

const SOURCE: &str = include_str!("kernels/math.cl");

/// The spacing of f32 values at the magnitude of `r`.
fn ulp(r: f64) -> f64 {
    let a = r.abs();
    if a < f32::MIN_POSITIVE as f64 {
        return 2f64.powi(-149);
    }
    2f64.powi(a.log2().floor() as i32 - 23)
}

/// Whether `got` is within `limit` ULP of the exact `want` (NaN for NaN,
/// infinities exactly; denormal results may flush to zero).
fn close(got: f32, want: f64, limit: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    let rounded = want as f32;
    if rounded.is_infinite() {
        // Overflowing results may be the largest finite value within the limit.
        return got == rounded
            || (got.is_finite() && ((got as f64) - want).abs() <= limit * ulp(f32::MAX as f64));
    }
    if got.is_nan() {
        return false;
    }
    if (rounded.abs() as f64) < f32::MIN_POSITIVE as f64 && got.abs() <= f32::MIN_POSITIVE {
        return true;
    }
    // A limit of 0 ULP means correctly rounded: half an ULP from exact.
    ((got as f64) - want).abs() <= limit.max(0.5) * ulp(want)
}

/// Inputs: edge values, then values spread over several magnitudes.
fn inputs(n: usize, salt: u64) -> Vec<f32> {
    let edges = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0e-30,
        -3.0e30,
        0.999,
        100.0,
        -88.5,
        1.0e-7,
    ];
    let mut seed = 0x2545_F491_4F6C_DD1Du64 ^ salt;
    (0..n)
        .map(|i| {
            if i < edges.len() {
                return edges[(i + salt as usize) % edges.len()];
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let unit = (seed >> 11) as f64 / (1u64 << 53) as f64;
            let scale = [1.0, 4.0, 30.0, 1000.0][i % 4];
            ((unit * 2.0 - 1.0) * scale) as f32
        })
        .collect()
}

fn run(cl: &Cl, kernel: &str, args: &[&[f32]], results: usize) -> Vec<f32> {
    run_with(cl, kernel, "", args, results)
}

fn run_with(cl: &Cl, kernel: &str, options: &str, args: &[&[f32]], results: usize) -> Vec<f32> {
    let n = args[0].len();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, kernel, options);
    for (a, data) in args.iter().enumerate() {
        let b = s.buffer_from(&bytes_of(data));
        s.arg(k, a as u32, &b);
    }
    let out = s.buffer(results * n * 4);
    s.arg(k, args.len() as u32, &out);
    s.run(k, &[n], Some(&[64]), None);
    f32s(&cl.read(s.q, out, 0, results * n * 4))
}

type Unary = (&'static str, fn(f64) -> f64, f64);

fn unary_math(cl: &Cl) {
    let n = 512;
    let x = inputs(n, 0);
    let round = |v: f64| {
        if v.is_finite() {
            v.abs().add_half_floor().copysign(v)
        } else {
            v
        }
    };
    let fract = |v: f64| {
        if v.is_nan() {
            v
        } else if v.is_infinite() {
            0f64.copysign(v)
        } else {
            (v - v.floor()).min(f32::from_bits(0x3f7f_ffff) as f64)
        }
    };
    let whole = |v: f64| v.floor();
    let logb = |v: f64| {
        if v == 0.0 {
            f64::NEG_INFINITY
        } else if v.is_infinite() {
            f64::INFINITY
        } else if v.is_nan() {
            v
        } else {
            frexp(v).1 as f64 - 1.0
        }
    };
    let table: [Unary; 38] = [
        ("sin", f64::sin, 4.0),
        ("cos", f64::cos, 4.0),
        ("tan", f64::tan, 5.0),
        ("asin", f64::asin, 4.0),
        ("acos", f64::acos, 4.0),
        ("atan", f64::atan, 5.0),
        ("sinh", f64::sinh, 4.0),
        ("cosh", f64::cosh, 4.0),
        ("tanh", f64::tanh, 5.0),
        ("asinh", f64::asinh, 4.0),
        ("acosh", f64::acosh, 4.0),
        ("atanh", f64::atanh, 5.0),
        ("exp", f64::exp, 3.0),
        ("exp2", f64::exp2, 3.0),
        ("exp10", |v| 10f64.powf(v), 3.0),
        ("expm1", f64::exp_m1, 3.0),
        ("log", f64::ln, 3.0),
        ("log2", f64::log2, 3.0),
        ("log10", f64::log10, 3.0),
        ("log1p", f64::ln_1p, 2.0),
        ("sqrt", f64::sqrt, 3.0),
        ("rsqrt", |v| 1.0 / v.sqrt(), 2.0),
        ("cbrt", f64::cbrt, 2.0),
        ("round", round, 0.0),
        ("fract", fract, 0.0),
        ("fract's whole part", whole, 0.0),
        ("logb", logb, 0.0),
        (
            "frexp",
            |v| {
                if v.is_finite() && v != 0.0 {
                    frexp(v).0
                } else {
                    v
                }
            },
            0.0,
        ),
        (
            "frexp's exponent",
            |v| {
                if v.is_finite() && v != 0.0 {
                    frexp(v).1 as f64
                } else {
                    0.0
                }
            },
            0.0,
        ),
        ("half_sin", f64::sin, 8192.0),
        ("half_cos", f64::cos, 8192.0),
        ("half_exp", f64::exp, 8192.0),
        ("half_exp2", f64::exp2, 8192.0),
        ("half_log", f64::ln, 8192.0),
        ("half_log2", f64::log2, 8192.0),
        ("half_log10", f64::log10, 8192.0),
        ("half_exp10", |v| 10f64.powf(v), 8192.0),
        ("half_recip", |v| 1.0 / v, 8192.0),
    ];
    let got = run(cl, "unary", &[&x], table.len());
    for (k, (name, f, limit)) in table.iter().enumerate() {
        for i in 0..n {
            let v = x[i] as f64;
            let (mut want, g) = (f(v), got[k * n + i]);
            if *name == "acosh" && v < 1.0 || *name == "atanh" && v.abs() > 1.0 {
                want = f64::NAN;
            }
            assert!(
                close(g, want, *limit),
                "{}: {name}({:e}) = {:e}, want {:e} within {limit} ULP",
                cl.how,
                x[i],
                g,
                want
            );
        }
    }
}

/// Mantissa in [0.5, 1) and exponent of a finite non-zero value.
fn frexp(v: f64) -> (f64, i32) {
    let e = v.abs().log2().floor() as i32 + 1;
    let m = v / 2f64.powi(e);
    if m.abs() >= 1.0 {
        (m / 2.0, e + 1)
    } else if m.abs() < 0.5 {
        (m * 2.0, e - 1)
    } else {
        (m, e)
    }
}

trait HalfFloor {
    fn add_half_floor(self) -> f64;
}

impl HalfFloor for f64 {
    fn add_half_floor(self) -> f64 {
        (self + 0.5).floor()
    }
}

fn binary_math(cl: &Cl) {
    let n = 512;
    let (x, y) = (inputs(n, 0), inputs(n, 5));
    let got = run(cl, "binary", &[&x, &y], 16);
    type Binary = (&'static str, fn(f32, f32) -> f64, f64);
    let table: [Binary; 16] = [
        ("pow", |a, b| pow(a as f64, b as f64), 16.0),
        ("atan2", |a, b| (a as f64).atan2(b as f64), 6.0),
        ("hypot", |a, b| (a as f64).hypot(b as f64), 4.0),
        ("multiply", |a, b| a as f64 * b as f64, 0.0),
        ("subtract", |a, b| a as f64 - b as f64, 0.0),
        ("copysign", |a, b| a.copysign(b) as f64, 0.0),
        (
            "fdim",
            |a, b| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else if a > b {
                    (a - b) as f64
                } else {
                    0.0
                }
            },
            0.0,
        ),
        (
            "maxmag",
            |a, b| {
                if a.abs() > b.abs() {
                    a as f64
                } else if b.abs() > a.abs() {
                    b as f64
                } else {
                    a.max(b) as f64
                }
            },
            0.0,
        ),
        (
            "minmag",
            |a, b| {
                if a.abs() < b.abs() {
                    a as f64
                } else if b.abs() < a.abs() {
                    b as f64
                } else {
                    a.min(b) as f64
                }
            },
            0.0,
        ),
        ("nextafter", |a, b| nextafter(a, b) as f64, 0.0),
        ("divide", |a, b| a as f64 / b as f64, 2.5),
        (
            "ldexp",
            |a, b| (a as f64) * 2f64.powi((b as i32).clamp(-400, 400)),
            0.0,
        ),
        ("pown", |a, b| (a as f64).powi(b as i32), 16.0),
        ("fmax", |a, b| a.max(b) as f64, 0.0),
        ("fmin", |a, b| a.min(b) as f64, 0.0),
        ("fabs", |a, _| a.abs() as f64, 0.0),
    ];
    for (k, (name, f, limit)) in table.iter().enumerate() {
        for i in 0..n {
            let (a, b) = (x[i], y[i]);
            if *name == "divide" && (b.abs() < 1.0e-37 || b.abs() > 1.0e37) {
                continue; // Vulkan's precision for division covers this range
            }
            if matches!(*name, "ldexp" | "pown") && (b.is_nan() || b.abs() >= 2_147_483_648.0) {
                continue; // (int)b is undefined in OpenCL C
            }
            let (want, g) = (f(a, b), got[k * n + i]);
            assert!(
                close(g, want, *limit),
                "{}: {name}({a:e}, {b:e}) = {g:e}, want {want:e} within {limit} ULP",
                cl.how
            );
        }
    }
}

/// pow with C99's special cases, which f64::powf follows except for NaN.
fn pow(a: f64, b: f64) -> f64 {
    if a == 1.0 || b == 0.0 { 1.0 } else { a.powf(b) }
}

/// IEEE remainder from exact fmod: the result of rounding the quotient to
/// nearest even, without computing the (possibly huge) quotient.
fn remainder(a: f64, b: f64) -> f64 {
    if b == 0.0 || a.is_infinite() || a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if b.is_infinite() {
        return a;
    }
    let r = a % b;
    let (ar, ab) = (r.abs(), b.abs());
    // The truncated quotient is odd when fmod by 2b leaves at least b.
    let odd = (a % (2.0 * ab)).abs() >= ab;
    let r = if 2.0 * ar > ab || (2.0 * ar == ab && odd) {
        r - ab.copysign(r)
    } else {
        r
    };
    if r == 0.0 { 0f64.copysign(a) } else { r }
}

fn nextafter(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        return f32::NAN;
    }
    if a == b {
        return b;
    }
    if a == 0.0 {
        return f32::from_bits(1).copysign(b);
    }
    let bits = a.to_bits();
    let away = (b > a) == (a > 0.0);
    f32::from_bits(if away { bits + 1 } else { bits - 1 })
}

fn math_on_wide_vectors(cl: &Cl) {
    let n = 64;
    let x = inputs(n * 16, 3);
    let got = run_wide(cl, &x);
    for i in 0..n * 16 {
        let v = x[i] as f64;
        let want = (v.sin() as f32 as f64) + ((v * 0.125).exp() as f32 as f64);
        // Two results each within their limits, then one rounding.
        let tolerance = 4.0 * ulp(v.sin()) + 3.0 * ulp((v * 0.125).exp()) + ulp(want);
        let g = got[i] as f64;
        assert!(
            want.is_nan() && g.is_nan() || (g - want).abs() <= tolerance || g == want,
            "{}: sin+exp lane {i} of {:e}: {g:e}, want {want:e}",
            cl.how,
            x[i]
        );
    }
}

fn run_wide(cl: &Cl, x: &[f32]) -> Vec<f32> {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "wide", "");
    let (bi, bo) = (s.buffer_from(&bytes_of(x)), s.buffer(x.len() * 4));
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[x.len() / 16], Some(&[16]), None);
    f32s(&cl.read(s.q, bo, 0, x.len() * 4))
}

/// -cl-fast-relaxed-math: the specification's relaxed limits (absolute
/// error 2^-11 for sin and cos on [-pi, pi], 3 + 2|x| ULP for exp, ...).
fn relaxed_math(cl: &Cl) {
    let n = 256;
    let x: Vec<f32> = (0..n)
        .map(|i| (i as f32 / n as f32 * 2.0 - 1.0) * std::f32::consts::PI)
        .collect();
    let got = run_with(cl, "relaxed", "-cl-fast-relaxed-math", &[&x], 5);
    for (i, &v) in x.iter().enumerate() {
        let v = v as f64;
        let at = |k: usize| got[k * n + i] as f64;
        assert!(
            (at(0) - v.sin()).abs() <= 2f64.powi(-11),
            "{}: sin({v})",
            cl.how
        );
        assert!(
            (at(1) - v.cos()).abs() <= 2f64.powi(-11),
            "{}: cos({v})",
            cl.how
        );
        let e = v.exp();
        assert!(
            (at(2) - e).abs() <= (3.0 + 2.0 * v.abs()) * ulp(e),
            "{}: exp({v})",
            cl.how
        );
        let l = (v.abs() + 0.25).ln();
        assert!(
            (at(3) - l).abs() <= 3.0 * ulp(l).max(2f64.powi(-21)),
            "{}: log",
            cl.how
        );
        let p = (v.abs() + 0.25).powf(1.5);
        assert!((at(4) - p).abs() <= 8192.0 * ulp(p), "{}: powr", cl.how);
    }
}

/// The native_ functions, exp10 and log10 among them (Vulkan has no
/// base-10 forms): their precision is the implementation's, so the check
/// is loose (a relative 1e-4, or 1e-5 absolute near a zero of log).
fn native_functions(cl: &Cl) {
    let n = 256;
    let x: Vec<f32> = (0..n)
        .map(|i| (i as f32 / n as f32 * 2.0 - 1.0) * 4.0)
        .collect();
    let got = run(cl, "natives", &[&x], 8);
    for (i, &v) in x.iter().enumerate() {
        let v = v as f64;
        let a = v.abs() + 0.25;
        let want = [
            10f64.powf(v),
            a.log10(),
            v.exp2(),
            a.log2(),
            10f64.powf(v * 0.125),
            (v.abs() * 0.5 + 0.25).log10(),
            1.0 / a,
            a.powf(1.5),
        ];
        for (k, w) in want.iter().enumerate() {
            let g = got[k * n + i] as f64;
            assert!(
                (g - w).abs() <= (w.abs() * 1e-4).max(1e-5),
                "{}: native function {k} of {v}: {g} against {w}",
                cl.how
            );
        }
    }
}

/// fmod, remainder, remquo and the correctly rounded fma come from libclc
/// with loops and many branches.
fn library_functions_with_loops(cl: &Cl) {
    let n = 512;
    let (x, y) = (inputs(n, 0), inputs(n, 5));
    let got = run(cl, "remainders", &[&x, &y], 5);
    for i in 0..n {
        let (a, b) = (x[i] as f64, y[i] as f64);
        let checks = [
            ("fmod", a % b),
            ("remainder", remainder(a, b)),
            ("remquo", remainder(a, b)),
        ];
        for (k, (name, want)) in checks.iter().enumerate() {
            assert!(
                close(got[k * n + i], *want, 0.0),
                "{}: {name}({a:e}, {b:e}) = {:e}, want {want:e}",
                cl.how,
                got[k * n + i]
            );
        }
        // remquo's quotient bits: the sign and low bits of a/b rounded.
        let r = remainder(a, b);
        if r.is_finite() && b != 0.0 && (a / b).abs() < 1.0e6 {
            let q = ((a - r) / b).round() as i64;
            assert_eq!(
                got[3 * n + i] as i64,
                q & 7,
                "{}: remquo quotient of {a:e}/{b:e}",
                cl.how
            );
        }
        let fma = a.mul_add(b, a);
        assert!(
            close(got[4 * n + i], fma, 0.0),
            "{}: fma({a:e}, {b:e}, {a:e}) = {:e}, want {fma:e}",
            cl.how,
            got[4 * n + i]
        );
    }
}

/// Where CL_DEVICE_SINGLE_FP_CONFIG has CL_FP_DENORM, single-precision
/// denormals survive arithmetic as inputs and as results (the kernels ask
/// Vulkan to keep them where it can promise that; lavapipe keeps them
/// without a promise, which this checks).
fn denormals_kept_where_claimed(cl: &Cl) {
    let config = cl
        .device_bytes(cl.device(), opencl_sys::CL_DEVICE_SINGLE_FP_CONFIG)
        .unwrap();
    let config = u64::from_ne_bytes(config[..8].try_into().unwrap());
    if config & opencl_sys::CL_FP_DENORM == 0 {
        return;
    }
    let src = "kernel void dops(global const float *a, global float *out) {
        size_t i = get_global_id(0);
        float x = a[i], y = a[i + 4], z = a[i + 8];
        global float *o = out + 10 * i;
        o[0] = x * y;
        o[1] = z + z;
        o[2] = z - x * y;
        o[3] = fma(x, y, z);
        o[4] = z / 4.0f;
        o[5] = fabs(-z);
        o[6] = z > 0.0f ? 1.0f : 0.0f;
        o[7] = (float)(int)(z * 0x1p100f * 0x1p49f);
        o[8] = ldexp(z, -3);
        o[9] = ldexp(y, -80);
    }";
    let p = |e: i32| 2f32.powi(e);
    // x * y lands below FLT_MIN; z is a denormal itself.
    let inputs: Vec<f32> = vec![
        p(-70),
        -p(-75),
        1.5 * p(-64),
        f32::MIN_POSITIVE,
        p(-70),
        p(-70),
        p(-70),
        0.25,
        f32::from_bits(0x0000_0300),
        f32::from_bits(0x0040_0000),
        -f32::from_bits(0x0000_0004),
        f32::from_bits(0x007f_fffc),
    ];
    let mut s = Setup::new(cl);
    let k = s.kernel(src, "dops", "");
    let a = s.buffer_from(&bytes_of(&inputs));
    let out = s.zeroed(4 * 10 * 4);
    s.arg(k, 0, &a);
    s.arg(k, 1, &out);
    s.run(k, &[4], None, None);
    let got = f32s(&cl.read(s.q, out, 0, 4 * 10 * 4));
    // ldexp rounds once, to nearest even (f64 holds these exactly).
    let ldexp = |v: f32, n: i32| (v as f64 * 2f64.powi(n)) as f32;
    for i in 0..4 {
        let (x, y, z) = (inputs[i], inputs[i + 4], inputs[i + 8]);
        assert!((x * y).is_subnormal() && z.is_subnormal());
        let want = [
            x * y,
            z + z,
            z - x * y,
            x.mul_add(y, z),
            z / 4.0,
            z.abs(),
            (z > 0.0) as i32 as f32,
            (z * p(100) * p(49)) as i32 as f32,
            ldexp(z, -3),
            ldexp(y, -80),
        ];
        for (j, w) in want.iter().enumerate() {
            assert_eq!(
                got[10 * i + j].to_bits(),
                w.to_bits(),
                "{}: operation {j} on x={x:e} y={y:e} z={z:e}",
                cl.how
            );
        }
    }
}

/// sinpi(n) is a zero of n's sign, cospi(n + 0.5) is +0, tanpi(n) is a
/// zero of n's sign for even n and of the other sign for odd n, and
/// tgamma(±0) is ±infinity.
fn pi_functions_give_signed_zeros(cl: &Cl) {
    let xs: Vec<f32> = vec![
        0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, 2.5, -7.5, 1e8, -1e8,
    ];
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "pi_zeros", "");
    let inb = s.buffer_from(&bytes_of(&xs));
    let out = s.zeroed(xs.len() * 16);
    s.arg(k, 0, &inb);
    s.arg(k, 1, &out);
    s.run(k, &[xs.len()], None, None);
    let got = f32s(&s.cl.read(s.q, out, 0, xs.len() * 16));
    for (i, &x) in xs.iter().enumerate() {
        let whole = x == x.trunc();
        let odd = whole && (x / 2.0) != (x / 2.0).trunc();
        let zero = |negative: bool| if negative { -0.0f32 } else { 0.0 };
        if x == 0.0 {
            let want = f32::INFINITY.copysign(x);
            assert_eq!(got[4 * i + 3], want, "{}: tgamma({x})", cl.how);
        }
        if whole {
            let want = zero(x.is_sign_negative());
            assert_eq!(
                got[4 * i].to_bits(),
                want.to_bits(),
                "{}: sinpi({x})",
                cl.how
            );
            let want = zero(x.is_sign_negative() != odd);
            assert_eq!(
                got[4 * i + 2].to_bits(),
                want.to_bits(),
                "{}: tanpi({x})",
                cl.how
            );
        } else {
            assert_eq!(got[4 * i + 1].to_bits(), 0, "{}: cospi({x})", cl.how);
        }
    }
}

/// tgamma and erfc within OpenCL's 16 ULP, where libclc's single-precision
/// forms were not (near -8 and beyond -40 for tgamma, near 8 for erfc).
fn gamma_and_erfc_within_limits(cl: &Cl) {
    let mut xs: Vec<f32> = vec![
        -8.003_906,
        -512.007_8,
        -40.5,
        -3.5,
        -0.5,
        0.5,
        1.0,
        2.5,
        10.0,
        35.0,
        7.960_937_5,
        9.0,
        -2.0 + 1e-3,
        -99.5,
        -100.5,
        -1e6 - 0.5,
    ];
    xs.extend((0..200).map(|i| -12.0 + i as f32 * 0.1234));
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "gamma_erfc", "");
    let inb = s.buffer_from(&bytes_of(&xs));
    let out = s.zeroed(xs.len() * 8);
    s.arg(k, 0, &inb);
    s.arg(k, 1, &out);
    s.run(k, &[xs.len()], None, None);
    let got = f32s(&s.cl.read(s.q, out, 0, xs.len() * 8));
    let mut wrong = Vec::new();
    for (i, &x) in xs.iter().enumerate() {
        // SAFETY: plain libm functions of a double.
        let (g, e) = unsafe { (tgamma(x as f64), erfc(x as f64)) };
        if !close(got[2 * i], g, 16.0) {
            wrong.push(format!("tgamma({x}) = {} vs {g}", got[2 * i]));
        }
        if !close(got[2 * i + 1], e, 16.0) {
            wrong.push(format!("erfc({x}) = {} vs {e}", got[2 * i + 1]));
        }
    }
    assert!(wrong.is_empty(), "{}: {wrong:?}", cl.how);
}
