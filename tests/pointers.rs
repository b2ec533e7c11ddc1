//! Pointer casts and arithmetic on private and local data (relocated into
//! device memory where Vulkan's logical pointers cannot express them), and
//! OpenCL C 3.0 generic pointers: chosen at run time, carried through
//! loops, and queried with to_global/to_local/to_private and get_fence.
//! Each checked against the host.

mod common;

use common::*;

both_ways!(
    float_reinterpreted_as_bytes,
    private_vector_read_with_vload,
    pointer_walks_a_private_array,
    local_array_through_vector_casts,
    struct_passed_by_pointer_and_cast,
    alignment_of_private_and_local_data,
    generic_pointer_chosen_at_run_time,
    generic_pointers_through_loops,
    address_space_queries,
    address_space_queries_known_at_build_time,
    struct_member_in_private_data_is_aligned,
    local_argument_through_vector_casts,
    addresses_truncated_to_32_bits,
    vstore_into_a_private_vector_array,
    vload_from_a_local_argument,
    copied_private_array_walked,
    vstore_at_an_offset_into_private_data,
    generic_helper_called_with_each_address_space,
    atomics_on_relocated_local_data,
    unoptimised_kernels_with_pointers,
    generic_pointers_in_an_array,
    generic_pointer_in_a_struct,
    packed_struct_layout,
    built_ins_with_out_parameters,
    out_parameter_of_either_address_space,
    half_conversions_through_generic_pointers,
    private_copy_of_a_constant_string,
    private_and_local_pointers_held_in_memory,
    null_pointers_of_every_address_space,
    fence_of_an_unset_generic_pointer,
    pointer_set_through_an_out_parameter,
    vector_in_a_packed_struct_unoptimised,
    global_pointers_moved_back_at_run_time,
    rows_of_arrays,
    private_struct_as_words,
    local_fields,
    vec3_arrays,
    local_components_after_whole_vector,
);

const SOURCE: &str = include_str!("kernels/pointers.cl");
const OPTIONS: &str = "-cl-std=CL3.0";

fn float_reinterpreted_as_bytes(cl: &Cl) {
    let n = 64usize;
    let input: Vec<f32> = (0..n).map(|k| k as f32 * 1.375 - 20.5).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "float_bytes", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    // An offset NDRange: private data is placed by global id.
    s.run(k, &[n / 2], Some(&[8]), Some(&[n / 2]));
    s.run(k, &[n / 2], Some(&[8]), None);
    let got = cl.read(s.q, bo, 0, 4 * n);
    // The float moved to device memory counts as the kernel's private memory.
    let private = query(|size, value, size_ret| unsafe {
        cl.clGetKernelWorkGroupInfo.unwrap()(
            k,
            cl.device(),
            opencl_sys::CL_KERNEL_PRIVATE_MEM_SIZE,
            size,
            value,
            size_ret,
        )
    })
    .unwrap();
    assert!(u64_of(&private) >= 4, "{}", u64_of(&private));
    for i in 0..n {
        let b = input[i].to_le_bytes();
        for j in 0..4 {
            assert_eq!(got[4 * i + j], b[(j + (i & 3)) & 3], "item {i} byte {j}");
        }
    }
}

fn private_vector_read_with_vload(cl: &Cl) {
    let n = 32usize;
    let input: Vec<f32> = (0..4 * n).map(|k| k as f32 * 0.5 - 3.0).collect();
    let shift: Vec<i32> = (0..n as i32).map(|k| k % 5).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "private_vload", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bs = s.buffer_from(&bytes_of(&shift));
    let bo = s.zeroed(16 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.arg(k, 2, &bs);
    s.run(k, &[n], Some(&[16]), None);
    let got = f32s(&cl.read(s.q, bo, 0, 16 * n));
    for i in 0..n {
        let v: Vec<f32> = input[4 * i..4 * i + 4]
            .iter()
            .map(|x| x * 2.0)
            .chain(input[4 * i..4 * i + 4].iter().map(|x| x + 1.0))
            .collect();
        let sh = shift[i] as usize;
        assert_eq!(&got[4 * i..4 * i + 4], &v[sh..sh + 4], "item {i}");
    }
}

fn pointer_walks_a_private_array(cl: &Cl) {
    let n = 48usize;
    let input: Vec<i32> = (0..8 * n as i32).map(|k| (k * 7) % 23 - 11).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "walk_private", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], None, None);
    let got = i32s(&cl.read(s.q, bo, 0, 4 * n));
    for i in 0..n {
        let want = input[8 * i..8 * i + 8]
            .iter()
            .enumerate()
            .fold(0i32, |s, (k, &x)| {
                s.wrapping_mul(3).wrapping_add(x * 2 + k as i32)
            });
        assert_eq!(got[i], want, "item {i}");
    }
}

fn local_array_through_vector_casts(cl: &Cl) {
    let n = 64usize;
    let input: Vec<f32> = (0..n).map(|k| ((k * 13) % 17) as f32 - 8.0).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "local_cast", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[16]), None);
    let got = f32s(&cl.read(s.q, bo, 0, 4 * n));
    for (g, &value) in got.iter().enumerate() {
        let (group, l) = (g / 16 * 16, g % 16);
        let tile = &input[group..group + 16];
        let a = &tile[4 * ((l / 4 + 1) % 4)..][..4];
        let b = &tile[(l + 4) & 12..][..4];
        let want = a[0] + a[1] * 2.0 + a[2] * 3.0 + a[3] * 4.0 + b[0] * 5.0 + b[3] * 6.0;
        assert_eq!(value, want, "item {g}");
    }
}

fn struct_passed_by_pointer_and_cast(cl: &Cl) {
    let n = 40usize;
    let input: Vec<i32> = (0..n as i32).map(|k| k * 5 - 60).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "struct_helper", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], None, None);
    let got = i32s(&cl.read(s.q, bo, 0, 4 * n));
    for i in 0..n {
        let x = input[i];
        let want = x + (x as f32 * 0.5) as i32 + (x + 7) as i16 as i32;
        assert_eq!(got[i], want, "item {i}");
    }
}

fn alignment_of_private_and_local_data(cl: &Cl) {
    let n = 32usize;
    let idx: Vec<i32> = (0..n as i32).map(|k| (k * 3) % 4).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "alignment", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&idx));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[8]), None);
    let got = s.words(bo, n);
    for (i, &w) in got.iter().enumerate() {
        assert_eq!(w, 5 << 16, "item {i}: {w:#x}");
    }
}

fn generic_pointer_chosen_at_run_time(cl: &Cl) {
    let n = 64usize;
    let buf: Vec<f32> = (0..n).map(|k| k as f32 - 7.0).collect();
    let cond: Vec<i32> = (0..n as i32).map(|k| (k * 5 % 7 < 3) as i32).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "generic_select", OPTIONS);
    let bb = s.buffer_from(&bytes_of(&buf));
    let bc = s.buffer_from(&bytes_of(&cond));
    s.arg(k, 0, &bb);
    s.arg(k, 1, &bc);
    s.run(k, &[n], Some(&[16]), None);
    let got = f32s(&cl.read(s.q, bb, 0, 4 * n));
    for i in 0..n {
        let want = if cond[i] != 0 {
            buf[i] + 30.0
        } else {
            buf[i] * 3.0 + 10.0
        };
        assert_eq!(got[i], want, "item {i}");
    }
}

fn generic_pointers_through_loops(cl: &Cl) {
    let n = 32usize;
    let buf: Vec<i32> = (0..4 * n as i32).map(|k| (k * 11) % 9 - 4).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "generic_loop", OPTIONS);
    let bb = s.buffer_from(&bytes_of(&buf));
    s.arg(k, 0, &bb);
    s.run(k, &[n], Some(&[8]), None);
    let got = i32s(&cl.read(s.q, bb, 0, 16 * n));
    for i in 0..n {
        let mut g = buf[4 * i..4 * i + 4].to_vec();
        let mut p = [1, 2, 3, 4];
        let l = [10, 20, 30, 40];
        let mut sum = 0i32;
        for k in 0..8 {
            match k % 3 {
                0 => {
                    sum += p[k & 3];
                    p[k & 3] += 1;
                }
                1 => sum += l[k & 3],
                _ => {
                    sum += g[k & 3];
                    g[k & 3] += 1;
                }
            }
        }
        // q: 0 private, 1 global.
        let mut q = (0, 0usize);
        for k in 0..6 {
            let v = if q.0 == 0 { p[q.1] } else { g[q.1] };
            sum = sum * 2 + v;
            q = if k & 1 == 1 { (1, k % 4) } else { (0, k % 4) };
        }
        g[0] = sum;
        assert_eq!(&got[4 * i..4 * i + 4], &g[..], "item {i}");
    }
}

fn address_space_queries(cl: &Cl) {
    let n = 30usize;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "class_queries", OPTIONS);
    let bb = s.zeroed(4 * n);
    let br = s.zeroed(4 * n);
    s.arg(k, 0, &bb);
    s.arg(k, 1, &br);
    s.run(k, &[n], Some(&[10]), None);
    let got = i32s(&cl.read(s.q, br, 0, 4 * n));
    for (i, &r) in got.iter().enumerate() {
        // to_global 1, to_local 2, to_private 4; get_fence: local 1, global 2.
        let want = [4, 2 | 1 << 4, 1 | 2 << 4][i % 3];
        assert_eq!(r, want, "item {i}");
    }
}

fn address_space_queries_known_at_build_time(cl: &Cl) {
    let n = 16usize;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "class_queries_static", OPTIONS);
    let bb = s.zeroed(4 * n);
    let br = s.zeroed(12 * n);
    s.arg(k, 0, &bb);
    s.arg(k, 1, &br);
    s.run(k, &[n], Some(&[8]), None);
    let got = i32s(&cl.read(s.q, br, 0, 12 * n));
    for i in 0..n {
        assert_eq!(
            &got[3 * i..3 * i + 3],
            &[1 | 2 << 4, 2 | 1 << 4, 4],
            "item {i}"
        );
    }
}

fn struct_member_in_private_data_is_aligned(cl: &Cl) {
    let n = 64usize;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "struct_member_alignment", OPTIONS);
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bo);
    s.run(k, &[n], None, None);
    let got = s.words(bo, n);
    for (i, &a) in got.iter().enumerate() {
        assert_eq!(a % 8, 0, "item {i}: {a:#x}");
    }
}

fn local_argument_through_vector_casts(cl: &Cl) {
    let n = 96usize;
    let input: Vec<f32> = (0..n).map(|k| ((k * 7) % 19) as f32 - 9.0).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "local_argument_cast", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    for local in [16usize, 32] {
        for (i, size) in [(2, 4 * local), (3, 4)] {
            let r = unsafe { cl.clSetKernelArg.unwrap()(k, i, size, std::ptr::null()) };
            assert_eq!(r, opencl_sys::CL_SUCCESS);
        }
        s.run(k, &[n], Some(&[local]), None);
        let got = f32s(&cl.read(s.q, bo, 0, 4 * n));
        for (g, &value) in got.iter().enumerate() {
            let (group, l) = (g / local * local, g % local);
            let tile = &input[group..group + local];
            let a = &tile[4 * ((l / 4 + 1) % (local / 4))..][..4];
            let b = &tile[((l + 4) % local) & !3..][..4];
            let want = a[0]
                + a[1] * 2.0
                + a[2] * 3.0
                + a[3] * 4.0
                + b[0] * 5.0
                + b[3] * 6.0
                + local as f32 * 100.0;
            assert_eq!(value, want, "local size {local}, item {g}");
        }
    }
}

fn addresses_truncated_to_32_bits(cl: &Cl) {
    let n = 32usize;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "truncated_addresses", OPTIONS);
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bo);
    s.run(k, &[n], Some(&[8]), None);
    let got = s.words(bo, n);
    for (i, &w) in got.iter().enumerate() {
        assert_eq!(w, (i as u32) << 8, "item {i}: {w:#x}");
    }
}

fn vstore_into_a_private_vector_array(cl: &Cl) {
    let n = 24usize;
    let src: Vec<i64> = (0..2 * n as i64)
        .map(|k| k * 0x0001_2345_6789 - 77)
        .collect();
    let offsets: Vec<u32> = (0..n as u32).map(|k| k % 7).collect();
    let shift = 1u32;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "vstore_private_array", OPTIONS);
    let bs = s.buffer_from(&bytes_of(&src));
    let bo = s.buffer_from(&bytes_of(&offsets));
    let bd = s.zeroed(18 * 8 * n);
    s.arg(k, 0, &bs);
    s.arg(k, 1, &bo);
    s.arg(k, 2, &bd);
    s.arg(k, 3, &shift);
    s.run(k, &[n], Some(&[8]), None);
    let got: Vec<i64> = cl
        .read(s.q, bd, 0, 18 * 8 * n)
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for i in 0..n {
        let mut want = [0i64; 18];
        let at = 2 * offsets[i] as usize + shift as usize;
        want[at] = src[2 * i];
        want[at + 1] = src[2 * i + 1];
        want[16] = src[2 * i];
        want[17] = src[2 * i + 1];
        assert_eq!(&got[18 * i..18 * i + 18], &want[..], "item {i}");
    }
}

fn vload_from_a_local_argument(cl: &Cl) {
    let n = 64usize;
    let len = 40usize;
    let src: Vec<u8> = (0..len as u8).map(|k| k.wrapping_mul(29) ^ 0x5a).collect();
    let offsets: Vec<u32> = (0..n as u32).map(|k| k % 8).collect();
    let shifts: Vec<u32> = (0..n as u32).map(|k| (k * 5) % 4).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "vload_local_argument", OPTIONS);
    let bs = s.buffer_from(&src);
    let bo = s.buffer_from(&bytes_of(&offsets));
    let bsh = s.buffer_from(&bytes_of(&shifts));
    let br = s.zeroed(4 * n);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 0, len, std::ptr::null()) };
    assert_eq!(r, opencl_sys::CL_SUCCESS);
    s.arg(k, 1, &bs);
    s.arg(k, 2, &bo);
    s.arg(k, 3, &bsh);
    s.arg(k, 4, &br);
    s.arg(k, 5, &(len as i32));
    s.run(k, &[n], Some(&[16]), None);
    let got = cl.read(s.q, br, 0, 4 * n);
    for i in 0..n {
        let at = 4 * offsets[i] as usize + shifts[i] as usize;
        assert_eq!(&got[4 * i..4 * i + 4], &src[at..at + 4], "item {i}");
    }
}

fn copied_private_array_walked(cl: &Cl) {
    let n = 40usize;
    let input: Vec<i32> = (0..8 * n as i32).map(|k| (k * 13) % 29 - 14).collect();
    let mut s = Setup::new(cl);
    // clang turns the copy loop into a memcpy between unrelated types.
    let k = s.kernel(SOURCE, "copy_then_walk", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], None, None);
    let got = i32s(&cl.read(s.q, bo, 0, 4 * n));
    for i in 0..n {
        let want = input[8 * i..8 * i + 8]
            .iter()
            .fold(0i32, |s, &x| s.wrapping_mul(3).wrapping_add(x));
        assert_eq!(got[i], want, "item {i}");
    }
}

fn vstore_at_an_offset_into_private_data(cl: &Cl) {
    let n = 10usize;
    let src: Vec<f32> = (0..4 * n).map(|k| k as f32 + 0.5).collect();
    let offsets: Vec<u32> = vec![3, 0, 7, 1, 9, 5, 12, 2, 14, 10];
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "vstore_private_cts", OPTIONS);
    let bs = s.buffer_from(&bytes_of(&src));
    let bo = s.buffer_from(&bytes_of(&offsets));
    let bd = s.zeroed(16 * 16);
    s.arg(k, 0, &bs);
    s.arg(k, 1, &bo);
    s.arg(k, 2, &bd);
    s.arg(k, 3, &1u32);
    s.run(k, &[n], None, None);
    let got = f32s(&cl.read(s.q, bd, 0, 16 * 16));
    for i in 0..n {
        let at = 4 * offsets[i] as usize + 1;
        assert_eq!(&got[at..at + 4], &src[4 * i..4 * i + 4], "item {i}");
    }
}

fn generic_helper_called_with_each_address_space(cl: &Cl) {
    let n = 32usize;
    let g: Vec<i32> = (0..4 * n as i32).map(|k| k * 3 - 50).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "generic_helper", OPTIONS);
    let bg = s.buffer_from(&bytes_of(&g));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bg);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[8]), None);
    let got = i32s(&cl.read(s.q, bo, 0, 4 * n));
    for i in 0..n {
        let global: i32 = g[4 * i..4 * i + 4].iter().sum();
        let private: i32 = (0..4).map(|k| i as i32 * k).sum();
        assert_eq!(got[i], global + 10 * 100 + private * 10000, "item {i}");
    }
}

fn atomics_on_relocated_local_data(cl: &Cl) {
    let local = 16usize;
    // 60 items: the last work-group is partial (a dispatch of its own).
    for n in [64usize, 60] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "atomics_on_relocated_local", OPTIONS);
        let bo = s.zeroed(4 * n);
        s.arg(k, 0, &bo);
        s.run(k, &[n], Some(&[local]), None);
        let got = i32s(&cl.read(s.q, bo, 0, 4 * n));
        for (i, &v) in got.iter().enumerate() {
            let (group, lid) = (i / local * local, i % local);
            let size = local.min(n - group);
            let sum = |bit: usize| -> i32 {
                (0..size)
                    .filter(|l| l % 4 == lid % 4 && l & 4 == bit)
                    .map(|l| l as i32)
                    .sum()
            };
            let want = sum(0) + sum(4) * 1000;
            assert_eq!(v, want, "{n} items: item {i}");
        }
    }
}

fn unoptimised_kernels_with_pointers(cl: &Cl) {
    // Unoptimised code keeps every pointer in a variable of its own.
    let n = 30usize;
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "class_queries", "-cl-std=CL3.0 -cl-opt-disable");
    let bb = s.zeroed(4 * n);
    let br = s.zeroed(4 * n);
    s.arg(k, 0, &bb);
    s.arg(k, 1, &br);
    s.run(k, &[n], Some(&[10]), None);
    let got = i32s(&cl.read(s.q, br, 0, 4 * n));
    for (i, &r) in got.iter().enumerate() {
        let want = [4, 2 | 1 << 4, 1 | 2 << 4][i % 3];
        assert_eq!(r, want, "item {i}");
    }
    let input: Vec<i32> = (0..8 * n as i32).map(|k| (k * 7) % 23 - 11).collect();
    let k = s.kernel(SOURCE, "walk_private", "-cl-std=CL3.0 -cl-opt-disable");
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], None, None);
    let got = i32s(&cl.read(s.q, bo, 0, 4 * n));
    for i in 0..n {
        let want = input[8 * i..8 * i + 8]
            .iter()
            .enumerate()
            .fold(0i32, |s, (k, &x)| {
                s.wrapping_mul(3).wrapping_add(x * 2 + k as i32)
            });
        assert_eq!(got[i], want, "item {i}");
    }
}

fn generic_pointers_in_an_array(cl: &Cl) {
    let n = 24usize;
    let buf: Vec<i32> = (0..n as i32).map(|k| k * 7 + 1).collect();
    for options in [OPTIONS, "-cl-std=CL3.0 -cl-opt-disable"] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "pointers_in_memory", options);
        let bb = s.buffer_from(&bytes_of(&buf));
        let br = s.zeroed(4 * n);
        s.arg(k, 0, &bb);
        s.arg(k, 1, &br);
        s.run(k, &[n], Some(&[8]), None);
        let got = i32s(&cl.read(s.q, br, 0, 4 * n));
        for (i, &r) in got.iter().enumerate() {
            let want = match i % 3 {
                0 => [10, 20][i & 1] + 1000,
                1 => [100, 200][(i >> 1) & 1] + 2000,
                _ => buf[i] + 4000,
            };
            assert_eq!(r, want, "{options}: item {i}");
        }
    }
}

fn generic_pointer_in_a_struct(cl: &Cl) {
    let n = 16usize;
    let buf: Vec<i32> = (0..n as i32).map(|k| k - 3).collect();
    for options in [OPTIONS, "-cl-std=CL3.0 -cl-opt-disable"] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "pointer_in_struct", options);
        let bb = s.buffer_from(&bytes_of(&buf));
        let br = s.zeroed(4 * n);
        s.arg(k, 0, &bb);
        s.arg(k, 1, &br);
        s.run(k, &[n], Some(&[8]), None);
        let got = i32s(&cl.read(s.q, br, 0, 4 * n));
        for (i, &r) in got.iter().enumerate() {
            let want = if i & 1 == 0 {
                5 * 10 + 1 + 100
            } else {
                buf[i] * 10 + 2
            };
            assert_eq!(r, want, "{options}: item {i}");
        }
    }
}

fn packed_struct_layout(cl: &Cl) {
    let n = 20usize;
    // char c; int4 v; short s: 19 bytes, no padding.
    let mut bytes = Vec::new();
    for i in 0..n as i32 {
        bytes.push(i as u8);
        for k in 0..4 {
            bytes.extend_from_slice(&(i * 10 + k).to_le_bytes());
        }
        bytes.extend_from_slice(&(-(i as i16)).to_le_bytes());
    }
    assert_eq!(bytes.len(), 19 * n);
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "packed_structs", OPTIONS);
    let bs = s.buffer_from(&bytes);
    let bo = s.zeroed(8 * n);
    s.arg(k, 0, &bs);
    s.arg(k, 1, &bo);
    s.run(k, &[n], None, None);
    let got = i32s(&cl.read(s.q, bo, 0, 8 * n));
    for i in 0..n {
        let want = [(i as i32 * 10 + 1) - i as i32 + i as i32, 19 * i as i32 + 1];
        assert_eq!(&got[2 * i..2 * i + 2], &want[..], "item {i}");
    }
}

fn built_ins_with_out_parameters(cl: &Cl) {
    // OpenCL C 3.0 declares these with generic pointers.
    let n = 32usize;
    let input: Vec<f32> = (0..n).map(|k| k as f32 * 0.75 - 9.5).collect();
    for options in [OPTIONS, "-cl-std=CL3.0 -cl-opt-disable"] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "out_parameters", options);
        let bi = s.buffer_from(&bytes_of(&input));
        let bo = s.zeroed(20 * n);
        let bq = s.zeroed(8 * n);
        s.arg(k, 0, &bi);
        s.arg(k, 1, &bo);
        s.arg(k, 2, &bq);
        s.run(k, &[n], Some(&[16]), None);
        let got = f32s(&cl.read(s.q, bo, 0, 20 * n));
        let ints = i32s(&cl.read(s.q, bq, 0, 8 * n));
        for (i, &x) in input.iter().enumerate() {
            let o = &got[5 * i..5 * i + 5];
            assert_eq!(o[1], x.floor(), "item {i}: floor");
            assert_eq!(o[0], x - x.floor(), "item {i}: fract");
            let e = ints[2 * i];
            assert_eq!(o[2] * 2f32.powi(e), x, "item {i}: frexp");
            assert!((o[3] - x.sin()).abs() < 1e-5, "item {i}: sin");
            assert!((o[4] - x.cos()).abs() < 1e-5, "item {i}: cos");
            let q = (x / 1.5).round() as i32;
            let got_q = ints[2 * i + 1];
            assert_eq!(got_q.abs() & 0x7f, q.abs() & 0x7f, "item {i}: quotient");
            assert!(
                q == 0 || got_q.signum() == q.signum(),
                "item {i}: quotient sign"
            );
        }
    }
}

fn out_parameter_of_either_address_space(cl: &Cl) {
    let n = 32usize;
    let input: Vec<f32> = (0..n).map(|k| k as f32 * 1.25 - 17.0).collect();
    for options in [OPTIONS, "-cl-std=CL3.0 -cl-opt-disable"] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "out_parameter_chosen_at_run_time", options);
        let bi = s.buffer_from(&bytes_of(&input));
        let bo = s.zeroed(8 * n);
        s.arg(k, 0, &bi);
        s.arg(k, 1, &bo);
        s.run(k, &[n], Some(&[16]), None);
        let got = f32s(&cl.read(s.q, bo, 0, 8 * n));
        for (i, &x) in input.iter().enumerate() {
            let want = [x - x.floor(), x.floor()];
            assert_eq!(&got[2 * i..2 * i + 2], &want[..], "{options}: item {i}");
        }
    }
}

fn half_conversions_through_generic_pointers(cl: &Cl) {
    let n = 32usize;
    // Values exact in half precision.
    let input: Vec<f32> = (0..n).map(|k| k as f32 * 0.25 - 3.0).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "half_through_private", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(12 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[16]), None);
    let got = f32s(&cl.read(s.q, bo, 0, 12 * n));
    for (i, &x) in input.iter().enumerate() {
        assert_eq!(&got[3 * i..3 * i + 3], &[x, 2.0 * x, 4.0 * x], "item {i}");
    }
}

fn private_copy_of_a_constant_string(cl: &Cl) {
    let text = b"a private copy of a constant string, 59 bytes long.......\0";
    let n = 64usize;
    let idx: Vec<i32> = (0..n as i32).map(|k| (k * 7) % text.len() as i32).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "constant_string_copy", OPTIONS);
    let bo = s.zeroed(n);
    let bi = s.buffer_from(&bytes_of(&idx));
    s.arg(k, 0, &bo);
    s.arg(k, 1, &bi);
    s.run(k, &[n], None, None);
    let got = cl.read(s.q, bo, 0, n);
    for i in 0..n {
        assert_eq!(got[i], text[idx[i] as usize], "item {i}");
    }
}

fn private_and_local_pointers_held_in_memory(cl: &Cl) {
    let n = 32usize;
    let data: Vec<i32> = (0..n as i32).map(|k| 7 - k).collect();
    for options in [OPTIONS, "-cl-std=CL3.0 -cl-opt-disable"] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "logical_pointers_in_memory", options);
        let bd = s.buffer_from(&bytes_of(&data));
        let out = s.zeroed(8 * n);
        s.arg(k, 0, &bd);
        s.arg(k, 1, &out);
        s.run(k, &[n], Some(&[16]), None);
        let got = i32s(&cl.read(s.q, out, 0, 8 * n));
        for i in 0..n {
            let x = i as i32;
            let want = data[i] + 50 * x + 300 * x + 5000 * x + (3 << 20) + 3 * x;
            assert_eq!(got[2 * i], want, "{options}: item {i}");
            assert_eq!(
                got[2 * i + 1],
                if i == 0 { 5 } else { -1 },
                "{options}: item {i}"
            );
        }
    }
}

fn null_pointers_of_every_address_space(cl: &Cl) {
    for options in [OPTIONS, "-cl-std=CL3.0 -cl-opt-disable"] {
        let mut s = Setup::new(cl);
        let k = s.kernel(SOURCE, "null_comparisons", options);
        let out = s.zeroed(4 * 4);
        s.arg(k, 0, &out);
        s.run(k, &[4], None, None);
        assert_eq!(s.words(out, 4), vec![0x1f; 4], "{options}");
    }
}

/// get_fence of a pointer never set (the CTS's generic address space
/// stress test passes them to a helper of many generic parameters) gives
/// a valid fence and builds.
fn fence_of_an_unset_generic_pointer(cl: &Cl) {
    let src = "
        bool valid(cl_mem_fence_flags f) {
            return f == 0 || f == CLK_GLOBAL_MEM_FENCE || f == CLK_LOCAL_MEM_FENCE
                || f == (CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        }
        bool helper(int *a, int *b, int *c) { return valid(get_fence(a)); }
        kernel void unset(global uint *out) {
            global int *g;
            local int *l;
            private int *p;
            uint failures = 0;
            if (!helper(g, l, p)) failures++;
            if (!helper(g, p, l)) failures++;
            out[get_global_id(0)] = failures == 0;
        }";
    let mut s = Setup::new(cl);
    let k = s.kernel(src, "unset", OPTIONS);
    let out = s.zeroed(64 * 4);
    s.arg(k, 0, &out);
    s.run(k, &[64], None, None);
    assert_eq!(s.words(out, 64), vec![1u32; 64], "{}", cl.how);
}

/// A packed struct's int4 read whole by unoptimised code: at byte 1, not
/// at the vector's own alignment.
fn vector_in_a_packed_struct_unoptimised(cl: &Cl) {
    let src = "
        typedef struct __attribute__((packed)) { char c; int4 v; } P;
        kernel void packed_vector(global const P *src, global int4 *out) {
            size_t i = get_global_id(0);
            out[i] = src[i].v;
        }";
    let n = 8usize;
    let mut bytes = Vec::new();
    for i in 0..n as i32 {
        bytes.push(0xaa);
        for k in 0..4 {
            bytes.extend_from_slice(&(i * 100 + k).to_le_bytes());
        }
    }
    let mut s = Setup::new(cl);
    let k = s.kernel(src, "packed_vector", "-cl-std=CL3.0 -cl-opt-disable");
    let input = s.buffer_from(&bytes);
    let out = s.zeroed(16 * n);
    s.arg(k, 0, &input);
    s.arg(k, 1, &out);
    s.run(k, &[n], None, None);
    let got = i32s(&cl.read(s.q, out, 0, 16 * n));
    let want: Vec<i32> = (0..n as i32)
        .flat_map(|i| (0..4).map(move |k| i * 100 + k))
        .collect();
    assert_eq!(got, want, "{}", cl.how);
}

fn global_pointers_moved_back_at_run_time(cl: &Cl) {
    let (n, back) = (8usize, 2usize);
    // Three elements for each work-item but the last, which has 3 - back.
    let len = 3 * (n - 1) + 3 - back;
    let input: Vec<f32> = (0..len).map(|k| k as f32 + 0.5).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "moved_back", OPTIONS);
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * len);
    let bh = s.zeroed(2 * len);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.arg(k, 2, &bh);
    s.arg(k, 3, &(back as u32));
    s.run(k, &[n], Some(&[n]), None);
    let got = f32s(&cl.read(s.q, bo, 0, 4 * len));
    let halves = u16s(&cl.read(s.q, bh, 0, 2 * len));
    for (at, x) in input.iter().enumerate() {
        assert_eq!(got[at], x * 2.0, "{}: element {at}", cl.how);
        assert_eq!(
            half_value(halves[at]),
            f64::from(x * 2.0),
            "{}: half {at}",
            cl.how
        );
    }
}

fn rows_of_arrays(cl: &Cl) {
    let n = 64usize;
    let input: Vec<u32> = (0..n as u32)
        .map(|k| k.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(
        include_str!("kernels/rows_of_arrays.cl"),
        "rows_of_arrays",
        OPTIONS,
    );
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[8]), None);
    let got = s.words(bo, n);
    for (g, &x) in input.iter().enumerate() {
        let group_first = input[g / 8 * 8];
        let row = |v: u32, i: u32| v.wrapping_mul(3).wrapping_add(i);
        let private = |r: u32, c: u32| x + r * 10 + c;
        let want = row(x, x & 63)
            .wrapping_add(row(x, (x >> 6) & 63))
            .wrapping_add(row(x, 7))
            .wrapping_add(row(group_first, 63))
            .wrapping_add(private(0, 3) + private(2, 2) + private(1, x & 3));
        assert_eq!(got[g], want, "{}: work-item {g}", cl.how);
    }
}

/// A local array of structs whose fields two arms of a branch fill
/// differently (tests/kernels/local_fields.cl), over several tiles.
fn local_fields(cl: &Cl) {
    let (n, group, tiles) = (64usize, 16usize, 3usize);
    let pos: Vec<f32> = (0..4 * n).map(|k| (k % 13) as f32 - 4.0).collect();
    let params: Vec<f32> = (0..4 * n).map(|k| (k % 7) as f32 * 0.5).collect();
    // Work-item `lid` of a group reads index[t * group + lid] in tile t;
    // negative entries (after the first tile) take the other arm.
    let index: Vec<i32> = (0..tiles * group)
        .map(|k| {
            if k >= group && k % 3 == 1 {
                -1
            } else {
                ((k * 5) % n) as i32
            }
        })
        .collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(
        include_str!("kernels/local_fields.cl"),
        "local_fields",
        OPTIONS,
    );
    let bp = s.buffer_from(&bytes_of(&pos));
    let bm = s.buffer_from(&bytes_of(&params));
    let bi = s.buffer_from(&bytes_of(&index));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bp);
    s.arg(k, 1, &bm);
    s.arg(k, 2, &bi);
    s.arg(k, 3, &(tiles as i32));
    s.arg(k, 4, &bo);
    s.run(k, &[n], Some(&[group]), None);
    let got = s.words(bo, n);
    // Each slot's fields (x, y, z, q, fx, fy, fz, charge, sx, sy) after
    // each tile: the other arm clears x, y, z, charge, sx and sy, and
    // leaves the rest as the previous tile wrote them.
    let mut slots = vec![[[0f32; 10]; 16]; tiles];
    for t in 0..tiles {
        for lid in 0..group {
            let j = index[t * group + lid];
            slots[t][lid] = if j >= 0 {
                let (p, m) = (&pos[4 * j as usize..], &params[4 * j as usize..]);
                [p[0], p[1], p[2], p[3], 0.0, 0.0, 0.0, m[0], m[1], m[2]]
            } else {
                let prev = slots[t - 1][lid];
                [
                    0.0, 0.0, 0.0, prev[3], prev[4], prev[5], prev[6], 0.0, 0.0, 0.0,
                ]
            };
        }
    }
    let weights = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];
    for (g, &word) in got.iter().enumerate() {
        let lid = g % group;
        let want: f32 = (0..tiles)
            .map(|t| {
                let f = slots[t][(lid + t + 1) % group];
                f.iter().zip(weights).map(|(f, w)| f * w).sum::<f32>()
            })
            .sum();
        assert_eq!(f32::from_bits(word), want, "{}: work-item {g}", cl.how);
    }
}

/// A local tile and a private array of float3 (tests/kernels/vec3_arrays.cl).
fn vec3_arrays(cl: &Cl) {
    let (n, group, steps) = (32usize, 16usize, 11i32);
    let input: Vec<f32> = (0..3 * n).map(|k| ((k * 7) % 11) as f32 - 5.0).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(
        include_str!("kernels/vec3_arrays.cl"),
        "vec3_arrays",
        OPTIONS,
    );
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * 3 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.arg(k, 2, &steps);
    s.run(k, &[n], Some(&[group]), None);
    let got = s.words(bo, 3 * n);
    let at = |i: usize, c: usize| input[3 * i + c];
    for g in 0..n {
        let (base, lid) = (g - g % group, g % group);
        for c in 0..3 {
            let mut want = at(base + (lid + 1) % group, c);
            for i in 0..steps as usize {
                let p = at((g + (i & 7)) % n, c);
                want += p * at(base + (lid + i) % group, c);
            }
            let got = f32::from_bits(got[3 * g + c]);
            assert_eq!(got, want, "{}: work-item {g} component {c}", cl.how);
        }
    }
}

/// The host's model of `private_words`: the struct as its bytes.
fn private_words_model(x: u32) -> u32 {
    let mut m = [0u8; 56];
    let put = |m: &mut [u8], at: usize, v: &[u8]| m[at..at + v.len()].copy_from_slice(v);
    put(&mut m, 0, &(x & 31).to_le_bytes());
    for i in 0..8u32 {
        let w = x
            .wrapping_mul(i + 1)
            .wrapping_add(0x0102_0304u32.wrapping_mul(i));
        put(&mut m, 4 + 4 * i as usize, &w.to_le_bytes());
    }
    put(&mut m, 36, &(x as u16).to_le_bytes());
    put(&mut m, 38, &((x >> 3) as u16).to_le_bytes());
    put(&mut m, 40, &7u16.to_le_bytes());
    put(&mut m, 48, &(((x as u64) << 33) | 5).to_le_bytes());
    m[4..36].reverse();
    m[4 + (x & 31) as usize] ^= 0x5a;
    put(
        &mut m,
        16,
        &(((x & 0xffff) as f32) * 0.5).to_bits().to_le_bytes(),
    );
    let u32_at = |m: &[u8], at: usize| u32::from_le_bytes(m[at..at + 4].try_into().unwrap());
    let u16_at = |m: &[u8], at: usize| u32::from(u16::from_le_bytes([m[at], m[at + 1]]));
    let mut acc = 0u32;
    for p in 0..8 {
        acc = acc.wrapping_mul(31).wrapping_add(u32_at(&m, 4 + 4 * p));
    }
    acc = acc.wrapping_add(u32_at(&m, if x & 2 != 0 { 8 } else { 28 }));
    acc = acc.wrapping_add(u16_at(&m, 36) + u16_at(&m, 38) + u16_at(&m, 40));
    acc = acc
        .wrapping_add(u32_at(&m, 52))
        .wrapping_add(u32_at(&m, 48));
    let mut s = (x & 7) as usize;
    while s != 32 && m[4 + s] != 0x33 {
        s += 1;
    }
    acc = acc.wrapping_add(s as u32);
    acc = acc.wrapping_add(u32_at(&m, 8) ^ u32_at(&m, 12));
    acc.wrapping_add(x & 31)
}

/// A private struct seen through byte, float and vector views, walked by
/// pointer loops and chosen between: it stays private (as words) and
/// reads back as the host's model of its bytes.
fn private_struct_as_words(cl: &Cl) {
    let n = 256usize;
    // Some inputs put 0x33 bytes where the byte search finds them.
    let input: Vec<u32> = (0..n as u32)
        .map(|k| match k % 4 {
            0 => k.wrapping_mul(0x0133_0133),
            1 => 0x3333_3333 ^ k,
            _ => k.wrapping_mul(2_654_435_761),
        })
        .collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(
        include_str!("kernels/private_words.cl"),
        "private_words",
        OPTIONS,
    );
    let bi = s.buffer_from(&bytes_of(&input));
    let bo = s.zeroed(4 * n);
    s.arg(k, 0, &bi);
    s.arg(k, 1, &bo);
    s.run(k, &[n], Some(&[32]), None);
    let got = s.words(bo, n);
    for (g, &x) in input.iter().enumerate() {
        assert_eq!(
            got[g],
            private_words_model(x),
            "{}: work-item {g}, input {x:#x}",
            cl.how
        );
    }
}

/// A pointer variable written through a generic pointer to it (kept in
/// memory by unoptimised code), then read and used: it holds what was
/// written, not null.
fn pointer_set_through_an_out_parameter(cl: &Cl) {
    let n = 16usize;
    let mut s = Setup::new(cl);
    let k = s.kernel(
        SOURCE,
        "pointer_set_through_out_parameter",
        "-cl-std=CL3.0 -cl-opt-disable",
    );
    let out = s.zeroed(4 * n);
    s.arg(k, 0, &out);
    s.run(k, &[n], None, None);
    let got = i32s(&cl.read(s.q, out, 0, 4 * n));
    assert_eq!(got, (1..=n as i32).collect::<Vec<_>>());
}

/// Each component of a local vector, read after the whole vector was read
/// from the same element, all stored as constants: in work-groups of one
/// item, `1 - lid` is the element loaded whole, which the driver's
/// compiler may find out. Mesa 22.3's llvmpipe gave `.y` the value of `.x`
/// there (pyvkfft's odd-length complex-to-real transforms). OpenCL C 1.2,
/// as those are built.
fn local_components_after_whole_vector(cl: &Cl) {
    let mut s = Setup::new(cl);
    let k = s.kernel(
        "__kernel void components(__global float *out) {
            __local float2 s[4];
            for (int i = 0; i < 4; i++) s[i] = (float2)(7.0f + i, 9.0f + i);
            barrier(CLK_LOCAL_MEM_FENCE);
            float2 whole = s[1];
            uint j = 1 - get_local_id(0);
            float x = s[j].x, y = s[j].y;
            out[0] = whole.x;
            out[1] = whole.y;
            out[2] = x;
            out[3] = y;
        }",
        "components",
        "",
    );
    let bo = s.zeroed(16);
    s.arg(k, 0, &bo);
    s.run(k, &[1], Some(&[1]), None);
    let got = f32s(&cl.read(s.q, bo, 0, 16));
    assert_eq!(got, [8.0, 10.0, 8.0, 10.0], "{}", cl.how);
}
