//! Sub-groups: the work-item functions of sub-groups and the sub-group
//! collectives (reduce, scans, broadcast, all, any) on int, uint, long,
//! ulong and float, checked per sub-group against a host reference on
//! 1-, 2- and 3-D NDRanges, with work-group sizes that are not powers of
//! two or multiples of the sub-group size, and with partial work-groups.

mod common;

use common::*;
use opencl_sys::*;

both_ways!(
    sub_group_builtins,
    sub_group_collectives,
    sub_group_queries,
    work_group_collectives
);

const SOURCE: &str = include_str!("kernels/groups.cl");

/// NDRanges to try: (global, local).
const SHAPES: &[(&[usize], &[usize])] = &[
    (&[64], &[16]),
    (&[50], &[12]),
    (&[37], &[10]),
    (&[13, 7], &[5, 3]),
    (&[9, 6, 5], &[3, 2, 4]),
    (&[4, 4, 4], &[4, 4, 4]),
    (&[10, 3], &[3, 1]),
];

/// One work-item's place: (work-group number, local linear id, local
/// linear size of its group, enqueued local linear size).
fn places(global: &[usize], local: &[usize]) -> Vec<(usize, usize, usize, usize)> {
    let dim = |v: &[usize], k: usize| v.get(k).copied().unwrap_or(1);
    let (g, l) = (
        [dim(global, 0), dim(global, 1), dim(global, 2)],
        [dim(local, 0), dim(local, 1), dim(local, 2)],
    );
    let groups = [0, 1, 2].map(|k| g[k].div_ceil(l[k]));
    let mut out = Vec::new();
    for z in 0..g[2] {
        for y in 0..g[1] {
            for x in 0..g[0] {
                let p = [x, y, z];
                let grp = [0, 1, 2].map(|k| p[k] / l[k]);
                let size = [0, 1, 2].map(|k| l[k].min(g[k] - grp[k] * l[k]));
                let lid = [0, 1, 2].map(|k| p[k] % l[k]);
                let linear = lid[0] + size[0] * (lid[1] + size[1] * lid[2]);
                let group = grp[0] + groups[0] * (grp[1] + groups[1] * grp[2]);
                out.push((group, linear, size.iter().product(), l.iter().product()));
            }
        }
    }
    out
}

/// clGetKernelSubGroupInfo with a size_t array input, as bytes.
fn sub_group_query(
    cl: &Cl,
    k: cl_kernel,
    param: cl_kernel_sub_group_info,
    input: &[usize],
) -> Result<Vec<u8>, cl_int> {
    let d = cl.device();
    query(|size, value, size_ret| unsafe {
        cl.clGetKernelSubGroupInfo.unwrap()(
            k,
            d,
            param,
            std::mem::size_of_val(input),
            input.as_ptr().cast(),
            size,
            value,
            size_ret,
        )
    })
}

/// The device's sub-group width, as the kernel query gives it for a large
/// work-group.
fn sub_group_width(cl: &Cl) -> usize {
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "sg_info", "-cl-std=CL3.0");
    let b = sub_group_query(cl, k, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, &[256]).unwrap();
    usize_of(&b)
}

fn sub_group_queries(cl: &Cl) {
    let w = sub_group_width(cl);
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "sg_info", "-cl-std=CL3.0");
    let get = |param, input: &[usize]| usize_of(&sub_group_query(cl, k, param, input).unwrap());
    assert_eq!(
        get(CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, &[3]),
        w.min(3)
    );
    assert_eq!(
        get(CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, &[5, 3]),
        w.min(15)
    );
    assert_eq!(
        get(CL_KERNEL_SUB_GROUP_COUNT_FOR_NDRANGE, &[5, 3, 2]),
        30usize.div_ceil(w)
    );
    assert_eq!(
        get(CL_KERNEL_SUB_GROUP_COUNT_FOR_NDRANGE, &[64]),
        64usize.div_ceil(w)
    );
    assert_eq!(get(CL_KERNEL_COMPILE_NUM_SUB_GROUPS, &[]), 0);
    let max_wg = usize_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_MAX_WORK_GROUP_SIZE)
            .unwrap(),
    );
    assert_eq!(get(CL_KERNEL_MAX_NUM_SUB_GROUPS, &[]), max_wg.div_ceil(w));
    let dev_max = u32_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_MAX_NUM_SUB_GROUPS)
            .unwrap(),
    );
    assert_eq!(dev_max as usize, max_wg.div_ceil(w));
    // A local size for 2 sub-groups, in 3 dimensions.
    let d = cl.device();
    let mut local = [7usize; 3];
    let count = 2usize;
    let r = unsafe {
        cl.clGetKernelSubGroupInfo.unwrap()(
            k,
            d,
            CL_KERNEL_LOCAL_SIZE_FOR_SUB_GROUP_COUNT,
            std::mem::size_of::<usize>(),
            (&count as *const usize).cast(),
            std::mem::size_of_val(&local),
            local.as_mut_ptr().cast(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(local, [2 * w, 1, 1]);
    // Bad input: no local size, four dimensions, an unknown query.
    assert_eq!(
        sub_group_query(cl, k, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, &[]),
        Err(CL_INVALID_VALUE)
    );
    assert_eq!(
        sub_group_query(cl, k, CL_KERNEL_SUB_GROUP_COUNT_FOR_NDRANGE, &[1, 1, 1, 1]),
        Err(CL_INVALID_VALUE)
    );
    assert_eq!(sub_group_query(cl, k, 0x1234, &[1]), Err(CL_INVALID_VALUE));
    // The extension's entry point answers the same.
    let name = std::ffi::CString::new("clGetKernelSubGroupInfoKHR").unwrap();
    let f = unsafe {
        cl.clGetExtensionFunctionAddressForPlatform.unwrap()(cl.platform(), name.as_ptr())
    };
    assert!(!f.is_null());
}

fn sub_group_builtins(cl: &Cl) {
    let w = sub_group_width(cl);
    assert!(w >= 1);
    for &(global, local) in SHAPES {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "sg_info", "-cl-std=CL3.0");
        let n: usize = global.iter().product();
        let out = s.zeroed(n * 6 * 4);
        s.arg(k, 0, &out);
        s.run(k, global, Some(local), None);
        let got = s.words(out, n * 6);
        for (i, &(_, lid, size, enq)) in places(global, local).iter().enumerate() {
            let sg = lid / w;
            let want = [
                w.min(size - sg * w),
                w.min(enq),
                size.div_ceil(w),
                enq.div_ceil(w),
                sg,
                lid % w,
            ];
            let have: Vec<usize> = got[i * 6..i * 6 + 6].iter().map(|&v| v as usize).collect();
            assert_eq!(have, want, "{global:?}/{local:?} work-item {i}");
        }
    }
}

/// An element type: its name, size, whether signed, whether float.
#[derive(Clone, Copy)]
struct Ty {
    name: &'static str,
    bytes: usize,
    signed: bool,
    float: bool,
}

impl Ty {
    fn decode(self, b: &[u8]) -> f64 {
        match (self.float, self.bytes, self.signed) {
            (true, 8, _) => f64::from_le_bytes(b.try_into().unwrap()),
            (true, _, _) => f32::from_le_bytes(b.try_into().unwrap()) as f64,
            (false, 4, true) => i32::from_le_bytes(b.try_into().unwrap()) as f64,
            (false, 4, false) => u32::from_le_bytes(b.try_into().unwrap()) as f64,
            (false, 8, true) => i64::from_le_bytes(b.try_into().unwrap()) as f64,
            _ => u64::from_le_bytes(b.try_into().unwrap()) as f64,
        }
    }
    fn encode(self, v: f64) -> Vec<u8> {
        match (self.float, self.bytes, self.signed) {
            (true, 8, _) => v.to_le_bytes().to_vec(),
            (true, _, _) => (v as f32).to_le_bytes().to_vec(),
            (false, 4, true) => (v as i32).to_le_bytes().to_vec(),
            (false, 4, false) => (v as u32).to_le_bytes().to_vec(),
            (false, 8, true) => (v as i64).to_le_bytes().to_vec(),
            _ => (v as u64).to_le_bytes().to_vec(),
        }
    }
    /// The identities of min and max, as the exclusive scans give them.
    fn min_identity(self) -> f64 {
        match (self.float, self.bytes, self.signed) {
            (true, _, _) => f64::INFINITY,
            (false, 4, true) => i32::MAX as f64,
            (false, 4, false) => u32::MAX as f64,
            (false, 8, true) => i64::MAX as f64,
            _ => u64::MAX as f64,
        }
    }
    fn max_identity(self) -> f64 {
        match (self.float, self.bytes, self.signed) {
            (true, _, _) => f64::NEG_INFINITY,
            (false, 4, true) => i32::MIN as f64,
            (false, 8, true) => i64::MIN as f64,
            _ => 0.0,
        }
    }
}

const TYPES: &[Ty] = &[
    Ty {
        name: "int",
        bytes: 4,
        signed: true,
        float: false,
    },
    Ty {
        name: "uint",
        bytes: 4,
        signed: false,
        float: false,
    },
    Ty {
        name: "long",
        bytes: 8,
        signed: true,
        float: false,
    },
    Ty {
        name: "ulong",
        bytes: 8,
        signed: false,
        float: false,
    },
    Ty {
        name: "float",
        bytes: 4,
        signed: true,
        float: true,
    },
];

fn sub_group_collectives(cl: &Cl) {
    let w = sub_group_width(cl);
    for &t in TYPES {
        let options = format!("-cl-std=CL3.0 -DT={}", t.name);
        for &(global, local) in SHAPES {
            let mut s = Setup::new(cl);
            let k = s.kernel(SOURCE, "sg_ops", &options);
            let n: usize = global.iter().product();
            // Small values, exact in every type; negative ones for the
            // signed types, and some work-items above the vote thresholds.
            let input: Vec<f64> = (0..n)
                .map(|i| {
                    let v = ((i * 7 + 3) % 11) as f64;
                    if t.signed { v - 4.0 } else { v }
                })
                .collect();
            let bytes: Vec<u8> = input.iter().flat_map(|&v| t.encode(v)).collect();
            let inb = s.buffer_from(&bytes);
            let out = s.zeroed(n * 11 * t.bytes);
            let votes = s.zeroed(n * 2 * 4);
            s.arg(k, 0, &inb);
            s.arg(k, 1, &out);
            s.arg(k, 2, &votes);
            s.run(k, global, Some(local), None);
            let got = s.cl.read(s.q, out, 0, n * 11 * t.bytes);
            let got_votes = s.words(votes, n * 2);
            let place = places(global, local);
            // Members of each sub-group in lane order.
            let mut members: std::collections::BTreeMap<(usize, usize), Vec<(usize, usize)>> =
                Default::default();
            for (i, &(grp, lid, _, _)) in place.iter().enumerate() {
                members
                    .entry((grp, lid / w))
                    .or_default()
                    .push((lid % w, i));
            }
            for m in members.values_mut() {
                m.sort();
                let xs: Vec<f64> = m.iter().map(|&(_, i)| input[i]).collect();
                for (lane, &(_, i)) in m.iter().enumerate() {
                    let before = &xs[..lane];
                    let upto = &xs[..=lane];
                    let sum = |v: &[f64]| v.iter().sum::<f64>();
                    let min = |v: &[f64]| v.iter().copied().fold(t.min_identity(), f64::min);
                    let max = |v: &[f64]| v.iter().copied().fold(t.max_identity(), f64::max);
                    let want = [
                        sum(&xs),
                        min(&xs),
                        max(&xs),
                        sum(upto),
                        min(upto),
                        max(upto),
                        sum(before),
                        min(before),
                        max(before),
                        xs[0],
                        xs[xs.len() - 1],
                    ];
                    for (r, &wv) in want.iter().enumerate() {
                        let at = (i * 11 + r) * t.bytes;
                        let have = t.decode(&got[at..at + t.bytes]);
                        // Compare through the type's encoding (wrapping
                        // sums of unsigned values, the identities).
                        let wv = t.decode(&t.encode(wv));
                        assert_eq!(
                            have, wv,
                            "{} {global:?}/{local:?} work-item {i} result {r}",
                            t.name
                        );
                    }
                    let all = xs.iter().all(|&v| v > 0.0) as u32;
                    let any = xs.iter().any(|&v| v > 2.0) as u32;
                    assert_eq!((got_votes[i * 2] != 0) as u32, all, "{} all at {i}", t.name);
                    assert_eq!(
                        (got_votes[i * 2 + 1] != 0) as u32,
                        any,
                        "{} any at {i}",
                        t.name
                    );
                }
            }
        }
    }
}

/// The work-group collectives, per work-group against a host reference.
/// Doubles, on devices that have them.
const DOUBLE: Ty = Ty {
    name: "double",
    bytes: 8,
    signed: true,
    float: true,
};

fn work_group_collectives(cl: &Cl) {
    let extensions = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    let doubles = extensions.split(' ').any(|e| e == "cl_khr_fp64");
    for &t in TYPES.iter().chain(doubles.then_some(&DOUBLE)) {
        let options = format!("-cl-std=CL3.0 -DT={}", t.name);
        let shapes: &[(&[usize], &[usize])] = &[
            (&[64], &[16]),
            (&[50], &[12]),
            (&[300], &[100]),
            (&[13, 7], &[5, 3]),
            (&[9, 6, 5], &[3, 2, 4]),
            (&[16, 8, 8], &[16, 8, 8]),
            (&[10, 3], &[3, 1]),
        ];
        for &(global, local) in shapes {
            let mut s = Setup::new(cl);
            let k = s.kernel(SOURCE, "wg_ops", &options);
            let n: usize = global.iter().product();
            let input: Vec<f64> = (0..n)
                .map(|i| {
                    let v = ((i * 7 + 3) % 11) as f64;
                    if t.signed { v - 4.0 } else { v }
                })
                .collect();
            let bytes: Vec<u8> = input.iter().flat_map(|&v| t.encode(v)).collect();
            let inb = s.buffer_from(&bytes);
            let out = s.zeroed(n * 12 * t.bytes);
            let votes = s.zeroed(n * 2 * 4);
            s.arg(k, 0, &inb);
            s.arg(k, 1, &out);
            s.arg(k, 2, &votes);
            s.run(k, global, Some(local), None);
            let got = s.cl.read(s.q, out, 0, n * 12 * t.bytes);
            let got_votes = s.words(votes, n * 2);
            // Members of each work-group by local linear id.
            let mut members: std::collections::BTreeMap<usize, Vec<(usize, usize)>> =
                Default::default();
            for (i, &(grp, lid, _, _)) in places(global, local).iter().enumerate() {
                members.entry(grp).or_default().push((lid, i));
            }
            let dim = |v: &[usize], k: usize| v.get(k).copied().unwrap_or(1);
            for m in members.values_mut() {
                m.sort();
                let xs: Vec<f64> = m.iter().map(|&(_, i)| input[i]).collect();
                // This group's size, from its first and last work-items.
                let size = m.len();
                // The broadcast sources: the last along each dimension of
                // this (possibly partial) group.
                let first = m[0].1;
                let gpos = |i: usize| {
                    let gx = dim(global, 0);
                    let gy = dim(global, 1);
                    [i % gx, (i / gx) % gy, i / (gx * gy)]
                };
                let p0 = gpos(first);
                let sizes = [0, 1, 2].map(|k| dim(local, k).min(dim(global, k) - p0[k]));
                let src = |x: usize, y: usize, z: usize| xs[x + sizes[0] * (y + sizes[1] * z)];
                let b = [
                    src(sizes[0] - 1, 0, 0),
                    src(0, sizes[1] - 1, 0),
                    src(0, 0, sizes[2] - 1),
                ];
                for (lane, &(_, i)) in m.iter().enumerate() {
                    let before = &xs[..lane];
                    let upto = &xs[..=lane];
                    let sum = |v: &[f64]| v.iter().sum::<f64>();
                    let min = |v: &[f64]| v.iter().copied().fold(t.min_identity(), f64::min);
                    let max = |v: &[f64]| v.iter().copied().fold(t.max_identity(), f64::max);
                    let want = [
                        sum(&xs),
                        min(&xs),
                        max(&xs),
                        sum(upto),
                        min(upto),
                        max(upto),
                        sum(before),
                        min(before),
                        max(before),
                        b[0],
                        b[1],
                        b[2],
                    ];
                    for (r, &wv) in want.iter().enumerate() {
                        let at = (i * 12 + r) * t.bytes;
                        let have = t.decode(&got[at..at + t.bytes]);
                        let wv = t.decode(&t.encode(wv));
                        assert_eq!(
                            have, wv,
                            "{} {global:?}/{local:?} work-item {i} (local {lane} of {size}) result {r}",
                            t.name
                        );
                    }
                    let all = xs.iter().all(|&v| v > 0.0) as u32;
                    let any = xs.iter().any(|&v| v > 5.0) as u32;
                    assert_eq!((got_votes[i * 2] != 0) as u32, all, "{} all at {i}", t.name);
                    assert_eq!(
                        (got_votes[i * 2 + 1] != 0) as u32,
                        any,
                        "{} any at {i}",
                        t.name
                    );
                }
            }
        }
    }
}
