// The pipe tests, shared by `pipes.rs` and `pipes_other_devices.rs`.

use std::ffi::c_void;

use common::*;
use opencl_sys::*;

both_ways!(
    packets_pass_from_kernel_to_kernel,
    full_and_empty_pipes_refuse,
    reservations,
    group_reservations,
    packets_of_every_shape,
    packets_of_another_size,
    queries_and_errors,
);

const OPTIONS: &str = "-cl-std=CL3.0";

fn pipe(s: &Setup, packet: u32, packets: u32) -> cl_mem {
    let mut err = 1;
    let p =
        unsafe { s.cl.clCreatePipe.unwrap()(s.c, 0, packet, packets, std::ptr::null(), &mut err) };
    assert_eq!(err, CL_SUCCESS, "clCreatePipe");
    p
}

fn release(s: &Setup, m: cl_mem) {
    assert_eq!(unsafe { s.cl.clReleaseMemObject.unwrap()(m) }, CL_SUCCESS);
}

/// The device's OpenCL C features (CL_DEVICE_OPENCL_C_FEATURES).
fn c_features(cl: &Cl) -> Vec<String> {
    let features = cl
        .device_bytes(cl.device(), CL_DEVICE_OPENCL_C_FEATURES)
        .unwrap();
    // cl_name_version entries: a version, then a 64-byte name.
    features
        .chunks(68)
        .map(|e| {
            let name = &e[4..];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            String::from_utf8_lossy(&name[..end]).into_owned()
        })
        .collect()
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

const PLAIN: &str = r#"
__kernel void put(__global const uint *src, __write_only pipe uint out) {
    uint gid = get_global_id(0);
    write_pipe(out, &src[gid]);
}
__kernel void get(__read_only pipe uint in, __global uint *dst, __global uint *failed) {
    uint gid = get_global_id(0);
    uint v;
    if (read_pipe(in, &v) == 0) {
        dst[gid] = v;
    } else {
        dst[gid] = 0xffffffff;
        atomic_inc(failed);
    }
}
__kernel void count(__read_only pipe uint in, __global uint *out) {
    out[0] = get_pipe_num_packets(in);
    out[1] = get_pipe_max_packets(in);
}
"#;

/// Every packet one kernel writes, the next reads, once; the counts in
/// between are right.
fn packets_pass_from_kernel_to_kernel(cl: &Cl) {
    let mut s = Setup::new(cl);
    let n = 4096usize;
    let put = s.kernel(PLAIN, "put", OPTIONS);
    let get = s.kernel(PLAIN, "get", OPTIONS);
    let count = s.kernel(PLAIN, "count", OPTIONS);
    let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let src = s.buffer_from(&bytes_of(&values));
    let dst = s.zeroed(n * 4);
    let failed = s.zeroed(4);
    let counts = s.zeroed(8);
    let p = pipe(&s, 4, n as u32);
    s.arg(put, 0, &src);
    s.arg(put, 1, &p);
    s.run(put, &[n], None, None);
    s.arg(count, 0, &p);
    s.arg(count, 1, &counts);
    s.run(count, &[1], None, None);
    assert_eq!(s.words(counts, 2), vec![n as u32, n as u32]);
    s.arg(get, 0, &p);
    s.arg(get, 1, &dst);
    s.arg(get, 2, &failed);
    s.run(get, &[n], None, None);
    assert_eq!(s.words(failed, 1), vec![0]);
    assert!(
        sorted(s.words(dst, n)) == sorted(values.clone()),
        "packets differ"
    );
    s.run(count, &[1], None, None);
    assert_eq!(s.words(counts, 2), vec![0, n as u32]);
    // Round after round through the ring, past its end.
    for round in 0..3u32 {
        let half: Vec<u32> = (0..n as u32 / 2).map(|i| i + round * 100_000).collect();
        let src2 = s.buffer_from(&bytes_of(&half));
        s.arg(put, 0, &src2);
        s.run(put, &[n / 2], None, None);
        s.run(put, &[n / 2], None, None);
        s.run(get, &[n], None, None);
        let mut twice = half.clone();
        twice.extend(&half);
        assert!(
            sorted(s.words(dst, n)) == sorted(twice),
            "round {round}: packets differ"
        );
        assert_eq!(s.words(failed, 1), vec![0]);
    }
    release(&s, p);
}

/// A pipe takes as many packets as it holds and no more; reading an empty
/// pipe fails.
fn full_and_empty_pipes_refuse(cl: &Cl) {
    let mut s = Setup::new(cl);
    let (n, capacity) = (1000usize, 300u32);
    let put = s.kernel(PLAIN, "put", OPTIONS);
    let get = s.kernel(PLAIN, "get", OPTIONS);
    let values: Vec<u32> = (1..=n as u32).collect();
    let src = s.buffer_from(&bytes_of(&values));
    let dst = s.zeroed(n * 4);
    let failed = s.zeroed(4);
    let p = pipe(&s, 4, capacity);
    s.arg(get, 0, &p);
    s.arg(get, 1, &dst);
    s.arg(get, 2, &failed);
    s.run(get, &[n], None, None);
    assert_eq!(s.words(failed, 1), vec![n as u32], "reads of an empty pipe");
    s.arg(put, 0, &src);
    s.arg(put, 1, &p);
    s.run(put, &[n], None, None);
    let failed2 = s.zeroed(4);
    s.arg(get, 2, &failed2);
    s.run(get, &[n], None, None);
    assert_eq!(s.words(failed2, 1), vec![n as u32 - capacity]);
    let got: Vec<u32> = s
        .words(dst, n)
        .into_iter()
        .filter(|&v| v != 0xffff_ffff)
        .collect();
    assert_eq!(got.len(), capacity as usize);
    let mut unique = sorted(got);
    unique.dedup();
    assert_eq!(unique.len(), capacity as usize, "a packet read twice");
    assert!(unique.iter().all(|v| (1..=n as u32).contains(v)));
    release(&s, p);
}

const RESERVED: &str = r#"
__kernel void put(__global const float4 *src, __write_only pipe float4 out, __global int *bad) {
    int gid = get_global_id(0);
    reserve_id_t r = reserve_write_pipe(out, 2);
    if (is_valid_reserve_id(r)) {
        float4 a = src[2 * gid], b = src[2 * gid + 1];
        if (write_pipe(out, r, 1, &b) != 0) atomic_inc(bad);
        if (write_pipe(out, r, 0, &a) != 0) atomic_inc(bad);
        commit_write_pipe(out, r);
    } else {
        atomic_inc(bad);
    }
}
__kernel void get(__read_only pipe float4 in, __global float4 *dst, __global int *bad) {
    int gid = get_global_id(0);
    reserve_id_t r = reserve_read_pipe(in, 2);
    if (is_valid_reserve_id(r)) {
        if (read_pipe(in, r, 0, &dst[2 * gid]) != 0) atomic_inc(bad);
        if (read_pipe(in, r, 1, &dst[2 * gid + 1]) != 0) atomic_inc(bad);
        commit_read_pipe(in, r);
    } else {
        atomic_inc(bad);
    }
}
"#;

/// Reservations of two packets keep their packets together and in order.
fn reservations(cl: &Cl) {
    let mut s = Setup::new(cl);
    let pairs = 1024usize;
    let put = s.kernel(RESERVED, "put", OPTIONS);
    let get = s.kernel(RESERVED, "get", OPTIONS);
    let values: Vec<f32> = (0..pairs * 8).map(|i| i as f32).collect();
    let src = s.buffer_from(&bytes_of(&values));
    let dst = s.zeroed(pairs * 32);
    let bad = s.zeroed(4);
    let p = pipe(&s, 16, pairs as u32 * 2);
    s.arg(put, 0, &src);
    s.arg(put, 1, &p);
    s.arg(put, 2, &bad);
    s.run(put, &[pairs], None, None);
    s.arg(get, 0, &p);
    s.arg(get, 1, &dst);
    s.arg(get, 2, &bad);
    s.run(get, &[pairs], None, None);
    assert_eq!(s.words(bad, 1), vec![0]);
    let got = f32s(&s.cl.read(s.q, dst, 0, pairs * 32));
    // Each pair read is a pair written, in its order.
    let mut firsts: Vec<u32> = got
        .chunks(8)
        .map(|pair| {
            let first = pair[0] as u32;
            assert_eq!(first % 8, 0, "{pair:?}");
            for (k, &v) in pair.iter().enumerate() {
                assert_eq!(v as u32, first + k as u32, "{pair:?}");
            }
            first
        })
        .collect();
    firsts.sort_unstable();
    assert!(
        firsts == (0..pairs as u32).map(|i| i * 8).collect::<Vec<_>>(),
        "pairs differ"
    );
    release(&s, p);
}

const GROUPS: &str = r#"
__kernel void put(__global const long *src, __write_only pipe long out) {
    int gid = get_global_id(0), lid = get_local_id(0);
    reserve_id_t r = work_group_reserve_write_pipe(out, get_local_size(0));
    if (is_valid_reserve_id(r)) write_pipe(out, r, lid, &src[gid]);
    work_group_commit_write_pipe(out, r);
}
__kernel void get(__read_only pipe long in, __global long *dst) {
    int gid = get_global_id(0), lid = get_local_id(0);
    reserve_id_t r = work_group_reserve_read_pipe(in, get_local_size(0));
    if (is_valid_reserve_id(r)) read_pipe(in, r, lid, &dst[gid]);
    work_group_commit_read_pipe(in, r);
}
"#;

const SUB_GROUPS: &str = r#"
__kernel void put(__global const long *src, __write_only pipe long out) {
    int gid = get_global_id(0), lid = get_sub_group_local_id();
    reserve_id_t r = sub_group_reserve_write_pipe(out, get_sub_group_size());
    if (is_valid_reserve_id(r)) write_pipe(out, r, lid, &src[gid]);
    sub_group_commit_write_pipe(out, r);
}
__kernel void get(__read_only pipe long in, __global long *dst) {
    int gid = get_global_id(0), lid = get_sub_group_local_id();
    reserve_id_t r = sub_group_reserve_read_pipe(in, get_sub_group_size());
    if (is_valid_reserve_id(r)) read_pipe(in, r, lid, &dst[gid]);
    sub_group_commit_read_pipe(in, r);
}
"#;

/// Work-group and sub-group reservations: one per group, each work-item
/// its packet.
fn group_reservations(cl: &Cl) {
    let subgroups = c_features(cl).iter().any(|f| f == "__opencl_c_subgroups");
    let mut sources = vec![("work-group", GROUPS)];
    if subgroups {
        sources.push(("sub-group", SUB_GROUPS));
    }
    for (what, source) in sources {
        let mut s = Setup::new(cl);
        let n = 64 * 40usize;
        let put = s.kernel(source, "put", OPTIONS);
        let get = s.kernel(source, "get", OPTIONS);
        let values: Vec<u64> = (0..n as u64).map(|i| i * 3 + (1 << 40)).collect();
        let src = s.buffer_from(&bytes_of(&values));
        let dst = s.zeroed(n * 8);
        let p = pipe(&s, 8, n as u32);
        s.arg(put, 0, &src);
        s.arg(put, 1, &p);
        s.run(put, &[n], Some(&[64]), None);
        s.arg(get, 0, &p);
        s.arg(get, 1, &dst);
        s.run(get, &[n], Some(&[64]), None);
        let mut got: Vec<u64> =
            s.cl.read(s.q, dst, 0, n * 8)
                .chunks(8)
                .map(u64_of)
                .collect();
        got.sort_unstable();
        assert!(got == values, "{what}: packets differ");
        release(&s, p);
    }
}

/// Packets of every size and alignment: bytes, shorts, three-word
/// structs, `int3` (16 bytes) and `long16` (128 bytes).
fn packets_of_every_shape(cl: &Cl) {
    // (type, declarations, size, bytes a store of it writes)
    for (ty, decl, size, stored) in [
        ("uchar", "", 1usize, 1usize),
        ("short2", "", 4, 4),
        ("struct triple", "struct triple { int a, b, c; };", 12, 12),
        ("int3", "", 16, 12),
        ("long16", "", 128, 128),
    ] {
        let source = format!(
            r#"{decl}
__kernel void put(__global const {ty} *src, __write_only pipe {ty} out) {{
    write_pipe(out, &src[get_global_id(0)]);
}}
__kernel void get(__read_only pipe {ty} in, __global {ty} *dst) {{
    {ty} v;
    if (read_pipe(in, &v) == 0) dst[get_global_id(0)] = v;
}}
"#
        );
        let mut s = Setup::new(cl);
        let n = 256usize;
        let put = s.kernel(&source, "put", OPTIONS);
        let get = s.kernel(&source, "get", OPTIONS);
        // Each packet's bytes all hold its index (plus one).
        let mut bytes = Vec::new();
        for i in 0..n {
            bytes.extend(std::iter::repeat_n((i + 1) as u8, size));
        }
        let src = s.buffer_from(&bytes);
        let dst = s.zeroed(n * size);
        let p = pipe(&s, size as u32, n as u32);
        s.arg(put, 0, &src);
        s.arg(put, 1, &p);
        s.run(put, &[n], None, None);
        s.arg(get, 0, &p);
        s.arg(get, 1, &dst);
        s.run(get, &[n], None, None);
        let got = s.cl.read(s.q, dst, 0, n * size);
        let mut packets: Vec<&[u8]> = got.chunks(size).map(|p| &p[..stored]).collect();
        packets.sort_unstable();
        let mut want: Vec<&[u8]> = bytes.chunks(size).map(|p| &p[..stored]).collect();
        want.sort_unstable();
        assert!(packets == want, "{ty}: packets differ");
        release(&s, p);
    }
}

/// Packets larger than the pipe's (undefined behaviour) are refused, not
/// written past the pipe's memory; smaller ones pass.
fn packets_of_another_size(cl: &Cl) {
    let source = r#"
__kernel void put(__global const long *src, __write_only pipe long out, __global int *failed) {
    if (write_pipe(out, &src[get_global_id(0)]) != 0) atomic_inc(failed);
}
__kernel void get(__read_only pipe long in, __global long *dst, __global int *failed) {
    if (read_pipe(in, &dst[get_global_id(0)]) != 0) atomic_inc(failed);
}
"#;
    let mut s = Setup::new(cl);
    let n = 64usize;
    let put = s.kernel(source, "put", OPTIONS);
    let get = s.kernel(source, "get", OPTIONS);
    let values: Vec<u64> = (0..n as u64).map(|i| i << 33).collect();
    let src = s.buffer_from(&bytes_of(&values));
    for (packet, refused) in [(4u32, true), (16, false)] {
        let dst = s.zeroed(n * 8);
        let failed = s.zeroed(4);
        let p = pipe(&s, packet, n as u32);
        s.arg(put, 0, &src);
        s.arg(put, 1, &p);
        s.arg(put, 2, &failed);
        s.run(put, &[n], None, None);
        s.arg(get, 0, &p);
        s.arg(get, 1, &dst);
        s.arg(get, 2, &failed);
        s.run(get, &[n], None, None);
        let failures = s.words(failed, 1)[0] as usize;
        if refused {
            assert_eq!(failures, 2 * n, "{packet}-byte packets");
        } else {
            assert_eq!(failures, 0, "{packet}-byte packets");
            let mut got: Vec<u64> = s
                .cl
                .read(s.q, dst, 0, n * 8)
                .chunks(8)
                .map(u64_of)
                .collect();
            got.sort_unstable();
            assert!(got == values, "{packet}-byte packets: packets differ");
        }
        release(&s, p);
    }
}

fn queries_and_errors(cl: &Cl) {
    let mut s = Setup::new(cl);
    let support = cl
        .device_bytes(cl.device(), CL_DEVICE_PIPE_SUPPORT)
        .unwrap();
    assert_eq!(u32_of(&support), CL_TRUE);
    let max_packet = u32_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_PIPE_MAX_PACKET_SIZE)
            .unwrap(),
    );
    assert!(max_packet >= 1024);
    assert!(
        u32_of(
            &cl.device_bytes(cl.device(), CL_DEVICE_MAX_PIPE_ARGS)
                .unwrap()
        ) >= 16
    );
    let names = c_features(cl);
    assert!(names.iter().any(|n| n == "__opencl_c_pipes"), "{names:?}");

    let p = pipe(&s, 12, 100);
    let uint_info = |param| {
        let b = query(|size, value, size_ret| unsafe {
            s.cl.clGetPipeInfo.unwrap()(p, param, size, value, size_ret)
        })
        .unwrap();
        u32_of(&b)
    };
    assert_eq!(uint_info(CL_PIPE_PACKET_SIZE), 12);
    assert_eq!(uint_info(CL_PIPE_MAX_PACKETS), 100);
    let props = query(|size, value, size_ret| unsafe {
        s.cl.clGetPipeInfo.unwrap()(p, CL_PIPE_PROPERTIES, size, value, size_ret)
    })
    .unwrap();
    assert!(props.is_empty());
    let mem = |m: cl_mem, param| {
        query(|size, value, size_ret| unsafe {
            s.cl.clGetMemObjectInfo.unwrap()(m, param, size, value, size_ret)
        })
    };
    assert_eq!(u32_of(&mem(p, CL_MEM_TYPE).unwrap()), CL_MEM_OBJECT_PIPE);
    assert_eq!(
        u64_of(&mem(p, CL_MEM_FLAGS).unwrap()),
        CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS
    );
    let b = s.buffer(64);
    unsafe {
        // A pipe is no buffer, and a buffer no pipe.
        let mut v = [0u8; 4];
        let r = s.cl.clEnqueueReadBuffer.unwrap()(
            s.q,
            p,
            CL_TRUE,
            0,
            4,
            v.as_mut_ptr().cast(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        assert_eq!(r, CL_INVALID_MEM_OBJECT);
        let mut err = 1;
        let none = s.cl.clGetPipeInfo.unwrap()(
            b,
            CL_PIPE_PACKET_SIZE,
            4,
            v.as_mut_ptr().cast(),
            std::ptr::null_mut(),
        );
        assert_eq!(none, CL_INVALID_MEM_OBJECT);
        let put = s.kernel(PLAIN, "put", OPTIONS);
        let set = |i: u32, m: &cl_mem| {
            s.cl.clSetKernelArg.unwrap()(
                put,
                i,
                std::mem::size_of::<cl_mem>(),
                (m as *const cl_mem).cast::<c_void>(),
            )
        };
        assert_eq!(set(1, &b), CL_INVALID_MEM_OBJECT);
        assert_eq!(set(0, &p), CL_INVALID_MEM_OBJECT);
        assert_eq!(set(1, &p), CL_SUCCESS);
        // The argument's qualifiers.
        let mut q: cl_kernel_arg_type_qualifier = 0;
        let mut a: cl_kernel_arg_access_qualifier = 0;
        let kinfo = s.cl.clGetKernelArgInfo.unwrap();
        let put_info = |param, out: *mut c_void, size| {
            // Built without -cl-kernel-arg-info, the qualifiers are still
            // known to vkcl.
            kinfo(put, 1, param, size, out, std::ptr::null_mut())
        };
        if put_info(
            CL_KERNEL_ARG_TYPE_QUALIFIER,
            (&mut q as *mut cl_kernel_arg_type_qualifier).cast(),
            8,
        ) == CL_SUCCESS
        {
            assert_eq!(q, CL_KERNEL_ARG_TYPE_PIPE as cl_kernel_arg_type_qualifier);
        }
        if put_info(
            CL_KERNEL_ARG_ACCESS_QUALIFIER,
            (&mut a as *mut cl_kernel_arg_access_qualifier).cast(),
            4,
        ) == CL_SUCCESS
        {
            assert_eq!(a, CL_KERNEL_ARG_ACCESS_WRITE_ONLY);
        }
        // clCreatePipe's errors.
        let create = |flags, packet, packets, props: *const cl_pipe_properties, err: &mut i32| {
            s.cl.clCreatePipe.unwrap()(s.c, flags, packet, packets, props, err)
        };
        assert!(create(0, 0, 16, std::ptr::null(), &mut err).is_null());
        assert_eq!(err, CL_INVALID_PIPE_SIZE);
        assert!(create(0, 4, 0, std::ptr::null(), &mut err).is_null());
        assert_eq!(err, CL_INVALID_PIPE_SIZE);
        assert!(create(0, max_packet + 1, 16, std::ptr::null(), &mut err).is_null());
        assert_eq!(err, CL_INVALID_PIPE_SIZE);
        assert!(create(CL_MEM_READ_ONLY, 4, 16, std::ptr::null(), &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE);
        let props: [cl_pipe_properties; 3] = [1, 1, 0];
        assert!(create(0, 4, 16, props.as_ptr(), &mut err).is_null());
        assert_eq!(err, CL_INVALID_VALUE);
        let empty: [cl_pipe_properties; 1] = [0];
        let q2 = create(CL_MEM_HOST_NO_ACCESS, 4, 16, empty.as_ptr(), &mut err);
        assert_eq!(err, CL_SUCCESS);
        release(&s, q2);
    }
    release(&s, p);
}
