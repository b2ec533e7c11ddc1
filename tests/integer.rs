//! The OpenCL C integer built-ins (clz, ctz, popcount, rotate, the
//! saturating, halving and high-half operations, mad_sat, abs, abs_diff,
//! bitselect, select, upsample, and / and % of both signs, and
//! cl_khr_extended_bit_ops) for every integer width, signed and
//! unsigned, scalar and vector, against a host reference on edge and
//! pseudo-random inputs.

mod common;

use common::*;
use opencl_sys::CL_DEVICE_EXTENSIONS;

both_ways!(
    integer_builtins_every_width,
    upsample_every_width,
    extended_bit_ops_every_width,
    funnel_shifts_of_optimised_code
);

/// Results per lane of the `ops` kernel.
const OPS: usize = 18;

const SOURCE: &str = include_str!("kernels/integer.cl");

/// One lane value of `bits` bits, held sign- or zero-extended.
#[derive(Clone, Copy)]
struct Ty {
    bits: u32,
    signed: bool,
}

impl Ty {
    fn mask(self) -> u128 {
        (1u128 << self.bits) - 1
    }
    /// The value of raw bits as a number of this type.
    fn value(self, raw: u64) -> i128 {
        let v = raw as u128 & self.mask();
        if self.signed && v >> (self.bits - 1) == 1 {
            v as i128 - (1i128 << self.bits)
        } else {
            v as i128
        }
    }
    fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }
    fn max(self) -> i128 {
        if self.signed {
            (1i128 << (self.bits - 1)) - 1
        } else {
            (1i128 << self.bits) - 1
        }
    }
    fn wrap(self, v: i128) -> u64 {
        (v as u128 & self.mask()) as u64
    }
    fn sat(self, v: i128) -> u64 {
        self.wrap(v.clamp(self.min(), self.max()))
    }
}

/// The reference for result `k` of the `ops` kernel on one lane.
fn reference(t: Ty, k: usize, x: u64, y: u64, z: u64, vector: bool) -> u64 {
    let (a, b, c) = (t.value(x), t.value(y), t.value(z));
    let ux = x as u128 & t.mask();
    let w = t.bits;
    match k {
        0 => (w - (128 - ux.leading_zeros())) as u64,
        1 => {
            if ux == 0 {
                w as u64
            } else {
                ux.trailing_zeros() as u64
            }
        }
        2 => ux.count_ones() as u64,
        3 => {
            let n = (y as u32) & (w - 1);
            t.wrap(((ux << n) | (ux >> ((w - n) % w))) as i128)
        }
        4 => t.sat(a + b),
        5 => t.sat(a - b),
        6 => t.wrap((a + b) >> 1),
        7 => t.wrap((a + b + 1) >> 1),
        8 => t.wrap((a - b).abs()),
        9 => t.wrap(if t.signed {
            (a * b) >> w
        } else {
            ((a as u128 * b as u128) >> w) as i128
        }),
        10 => {
            let hi = if t.signed {
                (a * b) >> w
            } else {
                ((a as u128 * b as u128) >> w) as i128
            };
            t.wrap(hi + c)
        }
        11 => {
            if t.signed {
                t.sat(a * b + c)
            } else {
                let p = a as u128 * b as u128 + c as u128;
                t.wrap(p.min(t.max() as u128) as i128)
            }
        }
        12 => ((x & !z) | (y & z)) & t.mask() as u64,
        13 => {
            let take = if vector {
                c < 0 || (!t.signed && c >> (w - 1) == 1)
            } else {
                c != 0
            };
            if take {
                y & t.mask() as u64
            } else {
                x & t.mask() as u64
            }
        }
        14 => t.wrap(a.abs()),
        15 => t.wrap(a.wrapping_mul(b) + c),
        16 | 17 => {
            let d = ((b >> 2) & !1) | 2;
            t.wrap(if k == 16 { a / d } else { a % d })
        }
        _ => unreachable!(),
    }
}

/// Lane inputs: edge values first, then pseudo-random ones.
fn inputs(t: Ty, count: usize, salt: u64) -> Vec<u64> {
    let edges = [
        0,
        1,
        t.wrap(-1),
        t.wrap(t.max()),
        t.wrap(t.min()),
        2,
        t.wrap(t.max() - 1),
        t.wrap(t.min() + 1),
    ];
    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ salt;
    (0..count)
        .map(|i| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = seed >> 11 ^ seed << 7;
            // Mix edges into every operand position, shifted by salt.
            let e = (i + salt as usize) % 13;
            if e < edges.len() {
                edges[e]
            } else {
                t.wrap(r as i128)
            }
        })
        .collect()
}

fn pack(t: Ty, lanes: &[u64]) -> Vec<u8> {
    let size = (t.bits / 8) as usize;
    lanes
        .iter()
        .flat_map(|v| v.to_le_bytes()[..size].to_vec())
        .collect()
}

fn unpack(t: Ty, bytes: &[u8]) -> Vec<u64> {
    let size = (t.bits / 8) as usize;
    bytes
        .chunks_exact(size)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..size].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect()
}

fn integer_builtins_every_width(cl: &Cl) {
    let types = [
        ("uchar", 8, false, 1),
        ("char", 8, true, 1),
        ("ushort", 16, false, 1),
        ("short", 16, true, 1),
        ("uint", 32, false, 1),
        ("int", 32, true, 1),
        ("ulong", 64, false, 1),
        ("long", 64, true, 1),
        ("int4", 32, true, 4),
        ("uchar16", 8, false, 16),
        ("short8", 16, true, 8),
        ("ulong2", 64, false, 2),
    ];
    let items = 64usize;
    for (name, bits, signed, lanes) in types {
        let t = Ty { bits, signed };
        let count = items * lanes;
        let (x, y, z) = (
            inputs(t, count, 0),
            inputs(t, count, 5),
            inputs(t, count, 9),
        );
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "ops", &format!("-cl-std=CL3.0 -DT={name}"));
        let (ba, bb, bc) = (
            s.buffer_from(&pack(t, &x)),
            s.buffer_from(&pack(t, &y)),
            s.buffer_from(&pack(t, &z)),
        );
        let out_len = OPS * count * (bits / 8) as usize;
        let br = s.buffer(out_len);
        s.arg(k, 0, &ba);
        s.arg(k, 1, &bb);
        s.arg(k, 2, &bc);
        s.arg(k, 3, &br);
        s.run(k, &[items], Some(&[16]), None);
        let got = unpack(t, &cl.read(s.q, br, 0, out_len));
        for op in 0..OPS {
            for lane in 0..count {
                let want = reference(t, op, x[lane], y[lane], z[lane], lanes > 1);
                assert_eq!(
                    got[op * count + lane],
                    want,
                    "{}: {name} result {op} lane {lane}: x={:#x} y={:#x} z={:#x}",
                    cl.how,
                    x[lane],
                    y[lane],
                    z[lane]
                );
            }
        }
    }
}

fn upsample_every_width(cl: &Cl) {
    for (h, l, r, bits, signed) in [
        ("uchar", "uchar", "ushort", 8, false),
        ("char", "uchar", "short", 8, true),
        ("ushort4", "ushort4", "uint4", 16, false),
        ("short", "ushort", "int", 16, true),
        ("uint", "uint", "ulong", 32, false),
        ("int2", "uint2", "long2", 32, true),
    ] {
        let t = Ty { bits, signed };
        let u = Ty {
            bits,
            signed: false,
        };
        let wide = Ty {
            bits: 2 * bits,
            signed,
        };
        let lanes = h
            .trim_start_matches(char::is_alphabetic)
            .parse()
            .unwrap_or(1usize);
        let count = 64 * lanes;
        let (hi, lo) = (inputs(t, count, 3), inputs(u, count, 7));
        let mut s = Setup::new(cl);
        let k = s.kernel(
            SOURCE,
            "up",
            &format!("-DH={h} -DL={l} -DR={r} -cl-std=CL3.0"),
        );
        let (bh, bl) = (s.buffer_from(&pack(t, &hi)), s.buffer_from(&pack(u, &lo)));
        let out_len = count * (2 * bits / 8) as usize;
        let br = s.buffer(out_len);
        s.arg(k, 0, &bh);
        s.arg(k, 1, &bl);
        s.arg(k, 2, &br);
        s.run(k, &[64], Some(&[16]), None);
        let got = unpack(wide, &cl.read(s.q, br, 0, out_len));
        for i in 0..count {
            let want = wide.wrap((t.value(hi[i]) << bits) | u.value(lo[i]));
            assert_eq!(got[i], want, "{}: upsample({h}, {l}) lane {i}", cl.how);
        }
    }
}

/// Rotates and byte alignment written with shifts, which optimised code
/// turns into LLVM funnel shifts (amounts of 0 and of the full width
/// included), against the host.
fn funnel_shifts_of_optimised_code(cl: &Cl) {
    let n = 128usize;
    let input: Vec<u32> = (0..2 * n as u32)
        .map(|k| k.wrapping_mul(2_654_435_761) ^ 0x8000_0001)
        .collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(
        include_str!("kernels/funnel_shifts.cl"),
        "funnel_shifts",
        "",
    );
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(48 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[32]), None);
    let got = s.words(bo, 12 * n);
    let align = |a: u32, b: u32, c: usize| match c & 3 {
        0 => b,
        1 => (a << 24) | (b >> 8),
        2 => (a << 16) | (b >> 16),
        _ => (a << 8) | (b >> 24),
    };
    for g in 0..n {
        let (x, y) = (input[2 * g], input[2 * g + 1]);
        let s = (g & 31) as u32;
        let wide = (u64::from(x) << 32) | u64::from(y);
        let r = wide.rotate_left((g & 63) as u32);
        let other = (u64::from(y) << 32) | u64::from(x ^ 0x5a5a_5a5a);
        let rot = wide.rotate_right(14) ^ wide.rotate_right(41);
        let mixed = wide
            .rotate_left(32)
            .wrapping_add((wide << 40) | (other >> 24));
        let low = (wide >> 7) | (other << 57);
        let want = [
            x.rotate_left(s),
            x.rotate_right(s),
            r as u32,
            (r >> 32) as u32,
            align(x, y, g) ^ align(y, x, g >> 2),
            x.rotate_left(7).wrapping_add(y.rotate_right(13)),
            rot as u32,
            (rot >> 32) as u32,
            mixed as u32,
            (mixed >> 32) as u32,
            low as u32,
            (low >> 32) as u32,
        ];
        assert_eq!(
            &got[12 * g..12 * g + 12],
            &want,
            "{}: work-item {g}",
            cl.how
        );
    }
}

const BIT_OPS: &str = "kernel void bits(global T *base, global T *insert, global uint *offsets,\n\
        global uint *counts, global T *inserted, global U *unsigned_field,\n\
        global S *signed_field, global T *reversed) {\n\
    size_t i = get_global_id(0);\n\
    uint o = offsets[i], c = counts[i];\n\
    inserted[i] = bitfield_insert(base[i], insert[i], o, c);\n\
    unsigned_field[i] = bitfield_extract_unsigned(base[i], o, c);\n\
    signed_field[i] = bitfield_extract_signed(base[i], o, c);\n\
    reversed[i] = bit_reverse(base[i]);\n\
}\n";

/// cl_khr_extended_bit_ops: `bitfield_insert`, both `bitfield_extract`s
/// and `bit_reverse` of every width (Vulkan has them for 32-bit values
/// only), scalar and vector, fields of every offset and count that fit,
/// empty ones at the top included.
fn extended_bit_ops_every_width(cl: &Cl) {
    let extensions = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    assert!(
        extensions
            .split(' ')
            .any(|e| e == "cl_khr_extended_bit_ops"),
        "{}: offered everywhere",
        cl.how
    );
    let types = [
        ("uchar", 8, 1),
        ("char", 8, 1),
        ("ushort4", 16, 4),
        ("uint", 32, 1),
        ("int16", 32, 16),
        ("ulong", 64, 1),
        ("long2", 64, 2),
        ("uchar16", 8, 16),
    ];
    for (name, bits, lanes) in types {
        let t = Ty {
            bits,
            signed: false,
        };
        let base_name = name.trim_end_matches(char::is_numeric);
        let width = &name[base_name.len()..];
        let unsigned = base_name.strip_prefix('u').unwrap_or(base_name);
        let options =
            format!("-cl-std=CL3.0 -DT={name} -DU=u{unsigned}{width} -DS={unsigned}{width}");
        // Every (offset, count) with offset + count <= bits, in turn.
        let fields: Vec<(u32, u32)> = (0..=bits)
            .flat_map(|c| (0..=bits - c).map(move |o| (o, c)))
            .collect();
        let items = fields.len();
        let base = inputs(t, items * lanes, 3);
        let insert = inputs(t, items * lanes, 7);
        let mut s = Setup::new(cl);
        let k = s.kernel(BIT_OPS, "bits", &options);
        let offsets: Vec<u32> = fields.iter().map(|f| f.0).collect();
        let counts: Vec<u32> = fields.iter().map(|f| f.1).collect();
        let bytes = items * lanes * (bits / 8) as usize;
        let args = [
            s.buffer_from(&pack(t, &base)),
            s.buffer_from(&pack(t, &insert)),
            s.buffer_from(&bytes_of(&offsets)),
            s.buffer_from(&bytes_of(&counts)),
            s.buffer(bytes),
            s.buffer(bytes),
            s.buffer(bytes),
            s.buffer(bytes),
        ];
        for (i, b) in args.iter().enumerate() {
            s.arg(k, i as u32, b);
        }
        s.run(k, &[items], None, None);
        let got: Vec<Vec<u64>> = args[4..]
            .iter()
            .map(|&b| unpack(t, &cl.read(s.q, b, 0, bytes)))
            .collect();
        for lane in 0..items * lanes {
            let (o, c) = fields[lane / lanes];
            let (b, ins) = (
                u128::from(base[lane]) & t.mask(),
                u128::from(insert[lane]) & t.mask(),
            );
            let low = (1u128 << c) - 1;
            let field = (b >> o) & low;
            let sign = c > 0 && field >> (c - 1) == 1;
            let want = [
                (b & !(low << o) | (ins << o) & (low << o)) & t.mask(),
                field,
                if sign {
                    (field | !low) & t.mask()
                } else {
                    field
                },
                (b.reverse_bits() >> (128 - bits)) & t.mask(),
            ];
            for (r, what) in [
                "bitfield_insert",
                "bitfield_extract_unsigned",
                "bitfield_extract_signed",
                "bit_reverse",
            ]
            .iter()
            .enumerate()
            {
                assert_eq!(
                    u128::from(got[r][lane]) & t.mask(),
                    want[r],
                    "{}: {what} of {name} {:#x} (insert {:#x}) at offset {o}, count {c}",
                    cl.how,
                    b,
                    ins
                );
            }
        }
    }
}
