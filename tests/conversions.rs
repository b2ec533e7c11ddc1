//! Conversions with saturation and every rounding mode, float to integer,
//! integer to integer and integer to float, against the host on edge and
//! pseudo-random values.

mod common;

use common::*;

both_ways!(
    float_to_integer,
    integer_to_integer,
    integer_to_float,
    long_to_float_in_each_mode
);

const SOURCE: &str = include_str!("kernels/conversions.cl");

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn run(cl: &Cl, kernel: &str, input: &[u8], results: usize, n: usize) -> Vec<u32> {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, kernel, "");
    let (bi, bo) = (s.buffer_from(input), s.buffer(results * n * 4));
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[32]), None);
    words(&cl.read(s.q, bo, 0, results * n * 4))
}

fn pseudo_random(n: usize, salt: u32) -> impl Iterator<Item = u32> {
    let mut x = 0x1234_5678u32 ^ salt;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    })
}

fn float_to_integer(cl: &Cl) {
    let mut x: Vec<f32> = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        -1.5,
        127.5,
        128.0,
        255.5,
        256.0,
        -128.5,
        -129.0,
        32767.5,
        65535.4,
        65535.6,
        -32768.6,
        2_147_483_520.0,
        2_147_483_648.0,
        4_294_967_296.0,
        -2_147_483_648.0,
        -2_147_483_904.0,
        1.0e10,
        -1.0e10,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0e-30,
        -0.999_999,
    ];
    x.extend(
        pseudo_random(226, 1)
            .map(|r| (r as i32) as f32 / 65536.0 * [1.0, 256.0, 0.01][r as usize % 3]),
    );
    let n = x.len();
    let got = run(cl, "float_to_int", &bytes_of(&x), 11, n);
    for (i, &v) in x.iter().enumerate() {
        let rte = v.round_ties_even();
        let want: [i64; 11] = [
            v as i32 as i64,
            rte as i32 as i64,
            v.ceil() as i32 as i64,
            v.floor() as i32 as i64,
            v as u32 as i64,
            v as u8 as i64,
            rte as i8 as i64,
            v.floor() as i16 as i64,
            v.ceil() as u16 as i64,
            if v.abs() < 1.0e9 {
                rte as i32 as i64
            } else {
                0
            },
            if v.abs() < 1.0e9 {
                v.ceil() as i32 as i64
            } else {
                0
            },
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(got[k * n + i], *w as u32, "{}: result {k} of {v:e}", cl.how);
        }
    }
}

fn integer_to_integer(cl: &Cl) {
    let mut x: Vec<i32> = vec![
        0,
        1,
        -1,
        127,
        128,
        255,
        256,
        -128,
        -129,
        32767,
        32768,
        65535,
        65536,
        -32768,
        -32769,
        i32::MAX,
        i32::MIN,
        0x2AAA_AAAB,
        -0x2AAA_AAAB,
        715_827_883,
    ];
    x.extend(pseudo_random(236, 2).map(|r| r as i32 >> (r % 24)));
    let n = x.len();
    let got = run(cl, "int_to_int", &bytes_of(&x), 11, n);
    let clamp = |v: i64, lo: i64, hi: i64| v.clamp(lo, hi);
    for (i, &v) in x.iter().enumerate() {
        let (s, u, l) = (v as i64, v as u32 as i64, v as i64 * 3);
        let want: [i64; 11] = [
            clamp(s, 0, 255),
            clamp(s, -128, 127),
            clamp(s, 0, 65535),
            clamp(s, -32768, 32767),
            clamp(s, 0, u32::MAX as i64),
            clamp(u, 0, i32::MAX as i64),
            clamp(u, 0, 255),
            clamp(u, 0, 127),
            clamp(l, i32::MIN as i64, i32::MAX as i64),
            clamp(l, 0, u32::MAX as i64),
            clamp(l, -32768, 32767),
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(got[k * n + i], *w as u32, "{}: result {k} of {v}", cl.how);
        }
    }
}

/// `v` rounded to f32 in the direction `dir` (-1 down, 0 toward zero, 1 up).
fn round_to_f32(v: f64, dir: i32) -> f32 {
    let r = v as f32; // nearest, ties to even
    let step = |r: f32, up: bool| -> f32 {
        let b = r.to_bits();
        f32::from_bits(if (r > 0.0) == up { b + 1 } else { b - 1 })
    };
    match dir {
        0 if (r as f64).abs() > v.abs() => step(r, r < 0.0),
        1 if (r as f64) < v => step(r, true),
        -1 if (r as f64) > v => step(r, false),
        _ => r,
    }
}

fn integer_to_float(cl: &Cl) {
    let mut x: Vec<i32> = vec![
        0,
        1,
        -1,
        16_777_216,
        16_777_217,
        16_777_218,
        16_777_219,
        -16_777_217,
        -16_777_219,
        i32::MAX,
        i32::MIN,
        i32::MAX - 64,
        i32::MIN + 64,
        33_554_435,
        -33_554_435,
    ];
    x.extend(pseudo_random(241, 3).map(|r| r as i32));
    let n = x.len();
    let got = run(cl, "int_to_float", &bytes_of(&x), 8, n);
    for (i, &v) in x.iter().enumerate() {
        let (s, u) = (v as f64, v as u32 as f64);
        let want = [
            round_to_f32(s, 0),
            round_to_f32(s, 1),
            round_to_f32(s, -1),
            round_to_f32(s, 2),
            round_to_f32(u, 0),
            round_to_f32(u, 1),
            round_to_f32(u, -1),
            round_to_f32(u, 2),
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                f32::from_bits(got[k * n + i]),
                *w,
                "{}: result {k} of {v}",
                cl.how
            );
        }
    }
}

/// 64-bit integers to float toward zero and either infinity: the nearest
/// float stepped toward the direction where it lies on the other side,
/// compared exactly.
fn long_to_float_in_each_mode(cl: &Cl) {
    let mut x: Vec<i64> = vec![
        0,
        1,
        -1,
        (1 << 24) + 1,
        -(1 << 24) - 1,
        i64::MAX,
        i64::MIN,
        i64::MAX - 1000,
        i64::MIN + 1000,
        -2,
        (1 << 40) + 3,
        -(1 << 53) - 7,
    ];
    x.extend(pseudo_random(120, 9).map(|r| ((r as i64) << 32) ^ (r as i64 * 7919)));
    let n = x.len();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "long_to_float", "");
    let a = s.buffer_from(&bytes_of(&x));
    let o = s.zeroed(n * 6 * 4);
    s.arg(k, 0, &a);
    s.arg(k, 1, &o);
    s.run(k, &[n], None, None);
    let got = s.words(o, n * 6);
    // dir: 0 toward zero, 1 up, -1 down.
    let round = |v: i128, nearest: f32, dir: i32| -> f32 {
        let exact = |f: f32| f as f64 as i128;
        let step = |r: f32, up: bool| {
            let b = r.to_bits();
            f32::from_bits(if (r > 0.0) == up || r == 0.0 && up {
                b + 1
            } else {
                b - 1
            })
        };
        let r = nearest;
        match dir {
            0 if exact(r).abs() > v.abs() => step(r, r < 0.0),
            1 if exact(r) < v => step(r, true),
            -1 if exact(r) > v => step(r, false),
            _ => r,
        }
    };
    for (i, &v) in x.iter().enumerate() {
        let u = v as u64;
        let want = [
            round(v as i128, v as f32, 0),
            round(v as i128, v as f32, 1),
            round(v as i128, v as f32, -1),
            round(u as i128, u as f32, 0),
            round(u as i128, u as f32, 1),
            round(u as i128, u as f32, -1),
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                f32::from_bits(got[k * n + i]),
                *w,
                "{}: result {k} of {v}",
                cl.how
            );
        }
    }
}
