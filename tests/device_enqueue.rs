//! Device-side enqueue (`__opencl_c_device_enqueue`): kernels that
//! enqueue blocks on the default device queue and on queues given as
//! arguments, nested enqueues, `__local` block arguments, NDRanges of
//! several dimensions, device events (wait lists, user events, markers),
//! and the host side: on-device queues, their queries and defaults, and
//! block kernels hidden from the program's kernels. Through the ICD
//! loader and directly.

mod common;

use common::*;
use opencl_sys::*;

both_ways!(
    blocks_run_after_their_parent,
    nested_enqueues_run_level_by_level,
    local_arguments_and_ranges,
    work_groups_long_in_any_dimension,
    events_order_enqueued_kernels,
    queues_given_as_arguments,
    profiling_captures,
    on_device_queues,
);

const OPTIONS: &str = "-cl-std=CL3.0";

/// An on-device queue of the setup's context, the default one where
/// `default` is set.
fn device_queue(s: &Setup, default: bool, size: Option<u32>) -> Result<cl_command_queue, cl_int> {
    let mut bits = CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_ON_DEVICE;
    if default {
        bits |= CL_QUEUE_ON_DEVICE_DEFAULT;
    }
    let mut props = vec![CL_QUEUE_PROPERTIES as cl_queue_properties, bits];
    if let Some(size) = size {
        props.extend([
            CL_QUEUE_SIZE as cl_queue_properties,
            size as cl_queue_properties,
        ]);
    }
    props.push(0);
    let mut err = 1;
    let q = unsafe {
        s.cl.clCreateCommandQueueWithProperties.unwrap()(
            s.c,
            s.cl.device(),
            props.as_ptr(),
            &mut err,
        )
    };
    if err == CL_SUCCESS { Ok(q) } else { Err(err) }
}

fn release_queue(s: &Setup, q: cl_command_queue) {
    assert_eq!(
        unsafe { s.cl.clReleaseCommandQueue.unwrap()(q) },
        CL_SUCCESS
    );
}

fn finish(s: &Setup) {
    assert_eq!(unsafe { s.cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
}

const SIMPLE: &str = r#"
void fill(__global int *out, size_t i, int k) { out[i] = k * 10 + (int)get_global_id(0); }
__kernel void parent(__global int *out, __global int *status) {
    size_t i = get_global_id(0);
    int k = (int)i + 1;
    out[i] = -1;
    status[i] = enqueue_kernel(get_default_queue(), CLK_ENQUEUE_FLAGS_WAIT_KERNEL,
                               ndrange_1D(1), ^{ fill(out, i, k); });
}
"#;

/// Every work-item enqueues a block that captures its values; the
/// blocks run once the parent is done, and the parent's event completes
/// after them.
fn blocks_run_after_their_parent(cl: &Cl) {
    let mut s = Setup::new(cl);
    let dq = device_queue(&s, true, None).expect("default device queue");
    let k = s.kernel(SIMPLE, "parent", OPTIONS);
    let n = 64;
    let out = s.zeroed(4 * n);
    let status = s.zeroed(4 * n);
    s.arg(k, 0, &out);
    s.arg(k, 1, &status);
    s.run(k, &[n], None, None);
    finish(&s);
    assert_eq!(s.words(status, n), vec![0; n], "enqueue_kernel results");
    let got = s.words(out, n);
    let want: Vec<u32> = (0..n as u32).map(|i| (i + 1) * 10).collect();
    assert_eq!(got, want);
    release_queue(&s, dq);
}

const NESTED: &str = r#"
void level(__global int *out, int depth, int max) {
    atomic_inc(&out[depth]);
    if (depth + 1 < max) {
        enqueue_kernel(get_default_queue(), CLK_ENQUEUE_FLAGS_NO_WAIT, ndrange_1D(2),
                       ^{ level(out, depth + 1, max); });
    }
}
__kernel void root(__global int *out, int max) {
    level(out, 0, max);
}
"#;

/// A binary tree of enqueues, eight levels deep, started by one
/// work-item: level d runs 2^d work-items.
fn nested_enqueues_run_level_by_level(cl: &Cl) {
    let mut s = Setup::new(cl);
    let levels = 8usize;
    let dq = device_queue(&s, true, None).expect("default device queue");
    let k = s.kernel(NESTED, "root", OPTIONS);
    let out = s.zeroed(4 * levels);
    s.arg(k, 0, &out);
    s.arg(k, 1, &(levels as i32));
    s.run(k, &[1], None, None);
    finish(&s);
    let want: Vec<u32> = (0..levels as u32).map(|d| 1 << d).collect();
    assert_eq!(s.words(out, levels), want);
    release_queue(&s, dq);
}

const LOCALS: &str = r#"
__kernel void parent(__global int *out) {
    size_t g[2] = {8, 4};
    size_t l[2] = {4, 2};
    enqueue_kernel(get_default_queue(), CLK_ENQUEUE_FLAGS_WAIT_KERNEL, ndrange_2D(g, l),
        ^(__local void *a, __local void *b) {
            __local int *x = (__local int *)a;
            __local long *y = (__local long *)b;
            size_t lid = get_local_linear_id();
            x[lid] = (int)lid;
            y[lid] = 100;
            work_group_barrier(CLK_LOCAL_MEM_FENCE);
            size_t n = get_local_size(0) * get_local_size(1);
            int v = x[(lid + 1) % n] + (int)y[lid];
            out[get_global_id(1) * get_global_size(0) + get_global_id(0)] = v;
        }, (uint)(8 * sizeof(int)), (uint)(8 * sizeof(long)));
}
"#;

/// A 2D NDRange with a local size, and a block with two `__local`
/// buffers that its work-groups share through a barrier.
fn local_arguments_and_ranges(cl: &Cl) {
    let mut s = Setup::new(cl);
    let dq = device_queue(&s, true, None).expect("default device queue");
    let k = s.kernel(LOCALS, "parent", OPTIONS);
    let out = s.zeroed(4 * 32);
    s.arg(k, 0, &out);
    s.run(k, &[1], None, None);
    finish(&s);
    let got = s.words(out, 32);
    let want: Vec<u32> = (0..32u32)
        .map(|i| {
            let (x, y) = (i % 8, i / 8);
            let lid = (y % 2) * 4 + x % 4;
            100 + (lid + 1) % 8
        })
        .collect();
    assert_eq!(got, want);
    release_queue(&s, dq);
}

const TALL: &str = r#"
__kernel void parent(__global uint *out, uint l) {
    size_t g[3] = {2, 2, 2 * l};
    size_t loc[3] = {1, 1, l};
    out[0] = enqueue_kernel(get_default_queue(), CLK_ENQUEUE_FLAGS_WAIT_KERNEL,
        ndrange_3D(g, loc), ^(__local void *scratch) {
            __local uint *s = (__local uint *)scratch;
            size_t z = get_local_id(2);
            s[z] = (uint)z;
            work_group_barrier(CLK_LOCAL_MEM_FENCE);
            uint other = s[(z + 1) % get_local_size(2)];
            size_t i = 1 + (get_global_id(2) * 2 + get_global_id(1)) * 2 + get_global_id(0);
            out[i] = other + 1000 * (uint)get_local_size(2) + 100000 * (uint)get_group_id(2);
        }, (uint)(l * sizeof(uint)));
}
"#;

/// Work-groups as long in z as the device's largest work-group (256 at
/// most), past Vulkan's limit for z where the device has one that low
/// (64 on NVIDIA's GPUs): such blocks run as 1-D Vulkan work-groups.
fn work_groups_long_in_any_dimension(cl: &Cl) {
    let mut s = Setup::new(cl);
    let dq = device_queue(&s, true, None).expect("default device queue");
    let max = {
        let b = cl
            .device_bytes(cl.device(), CL_DEVICE_MAX_WORK_GROUP_SIZE)
            .unwrap();
        usize::from_ne_bytes(b[..8].try_into().unwrap())
    };
    let l = max.min(256) as u32;
    let k = s.kernel(TALL, "parent", OPTIONS);
    let n = 1 + 8 * l as usize;
    let out = s.zeroed(4 * n);
    s.arg(k, 0, &out);
    s.arg(k, 1, &l);
    s.run(k, &[1], None, None);
    finish(&s);
    let got = s.words(out, n);
    assert_eq!(got[0], 0, "enqueue_kernel");
    for z in 0..2 * l {
        for y in 0..2u32 {
            for x in 0..2u32 {
                let i = (1 + (z * 2 + y) * 2 + x) as usize;
                let want = ((z % l) + 1) % l + 1000 * l + 100000 * (z / l);
                assert_eq!(got[i], want, "item ({x}, {y}, {z})");
            }
        }
    }
    release_queue(&s, dq);
}

const EVENTS: &str = r#"
__kernel void parent(__global int *log, __global int *count, __global int *results) {
    queue_t q = get_default_queue();
    clk_event_t user = create_user_event();
    clk_event_t first, second, marker;
    // `second` waits for `first`, which waits for the user event.
    results[0] = enqueue_kernel(q, CLK_ENQUEUE_FLAGS_NO_WAIT, ndrange_1D(1), 1, &user, &first,
        ^{ log[atomic_inc(count)] = 1; });
    results[1] = enqueue_kernel(q, CLK_ENQUEUE_FLAGS_NO_WAIT, ndrange_1D(1), 1, &first, &second,
        ^{ log[atomic_inc(count)] = 2; });
    results[2] = enqueue_marker(q, 1, &second, &marker);
    results[3] = enqueue_kernel(q, CLK_ENQUEUE_FLAGS_NO_WAIT, ndrange_1D(1), 1, &marker, NULL,
        ^{ log[atomic_inc(count)] = 3; });
    results[4] = is_valid_event(first);
    results[5] = is_valid_event(CLK_NULL_EVENT);
    set_user_event_status(user, CL_COMPLETE);
    release_event(first);
    release_event(second);
    release_event(marker);
    release_event(user);
}
"#;

/// Wait lists, a user event set by the parent, and a marker order the
/// enqueued kernels.
fn events_order_enqueued_kernels(cl: &Cl) {
    let mut s = Setup::new(cl);
    let dq = device_queue(&s, true, None).expect("default device queue");
    let k = s.kernel(EVENTS, "parent", OPTIONS);
    let log = s.zeroed(16);
    let count = s.zeroed(4);
    let results = s.zeroed(24);
    s.arg(k, 0, &log);
    s.arg(k, 1, &count);
    s.arg(k, 2, &results);
    s.run(k, &[1], None, None);
    finish(&s);
    let got = (s.words(results, 6), s.words(count, 1), s.words(log, 3));
    assert_eq!(got, (vec![0, 0, 0, 0, 1, 0], vec![3], vec![1, 2, 3]));
    release_queue(&s, dq);
}

const QUEUE_ARG: &str = r#"
__kernel void parent(queue_t q, __global int *out) {
    out[1] = enqueue_kernel(q, CLK_ENQUEUE_FLAGS_WAIT_KERNEL, ndrange_1D(4),
                            ^{ atomic_add(&out[0], (int)get_global_id(0) + 1); });
    out[2] = enqueue_kernel(get_default_queue(), CLK_ENQUEUE_FLAGS_WAIT_KERNEL, ndrange_1D(1),
                            ^{ out[0] = -1; });
}
"#;

/// A queue passed as a kernel argument, with no default device queue:
/// enqueues to it run, and enqueues to `get_default_queue()` fail.
fn queues_given_as_arguments(cl: &Cl) {
    let mut s = Setup::new(cl);
    let dq = device_queue(&s, false, None).expect("device queue");
    let k = s.kernel(QUEUE_ARG, "parent", OPTIONS);
    let out = s.zeroed(12);
    s.arg(k, 0, &dq);
    s.arg(k, 1, &out);
    s.run(k, &[1], None, None);
    finish(&s);
    // CLK_INVALID_QUEUE for the default queue, which is not there.
    assert_eq!(s.words(out, 3), vec![10, 0, -102i32 as u32]);
    // A host queue is not a device queue.
    let r = unsafe {
        s.cl.clSetKernelArg.unwrap()(
            k,
            0,
            std::mem::size_of::<cl_command_queue>(),
            (&s.q as *const cl_command_queue).cast(),
        )
    };
    assert_eq!(r, CL_INVALID_DEVICE_QUEUE);
    // Nor is no queue.
    let none: cl_command_queue = std::ptr::null_mut();
    let r = unsafe {
        s.cl.clSetKernelArg.unwrap()(
            k,
            0,
            std::mem::size_of::<cl_command_queue>(),
            (&none as *const cl_command_queue).cast(),
        )
    };
    assert_eq!(r, CL_INVALID_DEVICE_QUEUE);
    release_queue(&s, dq);
}

const CAPTURES: &str = r#"
__kernel void parent(__global ulong *early, __global ulong *late, __global int *seen) {
    queue_t q = get_default_queue();
    clk_event_t user = create_user_event();
    clk_event_t work;
    enqueue_kernel(q, CLK_ENQUEUE_FLAGS_NO_WAIT, ndrange_1D(64), 1, &user, &work,
                   ^{ atomic_inc(seen); });
    // Before the event ends: the values arrive before what waits for it.
    capture_event_profiling_info(work, CLK_PROFILING_COMMAND_EXEC_TIME, early);
    set_user_event_status(user, CL_COMPLETE);
    enqueue_kernel(q, CLK_ENQUEUE_FLAGS_NO_WAIT, ndrange_1D(1), 1, &work, NULL, ^{
        // After it ended: the values are there at once.
        capture_event_profiling_info(work, CLK_PROFILING_COMMAND_EXEC_TIME, late);
        seen[1] = early[0] > 0 && early[1] >= early[0] && late[0] == early[0]
                  && late[1] == early[1];
    });
    release_event(work);
    release_event(user);
}
"#;

/// `capture_event_profiling_info` before and after its event ends: both
/// give the execution time and the time with children, non-zero, the same.
fn profiling_captures(cl: &Cl) {
    let mut s = Setup::new(cl);
    let dq = device_queue(&s, true, None).expect("default device queue");
    let k = s.kernel(CAPTURES, "parent", OPTIONS);
    let early = s.zeroed(16);
    let late = s.zeroed(16);
    let seen = s.zeroed(8);
    s.arg(k, 0, &early);
    s.arg(k, 1, &late);
    s.arg(k, 2, &seen);
    s.run(k, &[1], None, None);
    finish(&s);
    assert_eq!(s.words(seen, 2), vec![64, 1]);
    let e = s.words(early, 4);
    assert!(e[0] != 0 || e[1] != 0, "execution time {e:?}");
    release_queue(&s, dq);
}

/// On-device queues: the device's limits, the default queue (one per
/// device, replaceable), sizes, the errors of creation and of host
/// enqueues, and block kernels hidden from the program.
fn on_device_queues(cl: &Cl) {
    let mut s = Setup::new(cl);
    let d = cl.device();
    let word = |p| u32_of(&cl.device_bytes(d, p).unwrap()[..4]);
    let caps = cl
        .device_bytes(d, CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES)
        .unwrap();
    assert_eq!(
        u64::from_ne_bytes(caps[..8].try_into().unwrap()),
        CL_DEVICE_QUEUE_SUPPORTED | CL_DEVICE_QUEUE_REPLACEABLE_DEFAULT
    );
    let preferred = word(CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE);
    let max = word(CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE);
    assert!(preferred > 0 && preferred <= max);
    assert!(word(CL_DEVICE_MAX_ON_DEVICE_QUEUES) >= 1);
    assert!(word(CL_DEVICE_MAX_ON_DEVICE_EVENTS) >= 1024);
    let queue_info = |q: cl_command_queue, p: cl_command_queue_info| -> Result<Vec<u8>, cl_int> {
        query(|size, value, size_ret| unsafe {
            cl.clGetCommandQueueInfo.unwrap()(q, p, size, value, size_ret)
        })
    };
    let pointer = |b: Vec<u8>| usize::from_ne_bytes(b[..8].try_into().unwrap());
    // No default yet.
    assert_eq!(
        pointer(queue_info(s.q, CL_QUEUE_DEVICE_DEFAULT).unwrap()),
        0
    );
    assert_eq!(
        queue_info(s.q, CL_QUEUE_SIZE),
        Err(CL_INVALID_COMMAND_QUEUE)
    );
    let a = device_queue(&s, true, Some(4096)).expect("default device queue");
    assert_eq!(u32_of(&queue_info(a, CL_QUEUE_SIZE).unwrap()), 4096);
    assert_eq!(
        pointer(queue_info(s.q, CL_QUEUE_DEVICE_DEFAULT).unwrap()),
        a as usize
    );
    // Asking for a default again gives the same queue.
    let again = device_queue(&s, true, None).expect("default again");
    assert_eq!(again, a);
    release_queue(&s, again);
    let b = device_queue(&s, false, None).expect("device queue");
    assert_eq!(u32_of(&queue_info(b, CL_QUEUE_SIZE).unwrap()), preferred);
    assert_eq!(
        unsafe { cl.clSetDefaultDeviceCommandQueue.unwrap()(s.c, d, b) },
        CL_SUCCESS
    );
    assert_eq!(
        pointer(queue_info(a, CL_QUEUE_DEVICE_DEFAULT).unwrap()),
        b as usize
    );
    assert_eq!(
        unsafe { cl.clSetDefaultDeviceCommandQueue.unwrap()(s.c, d, s.q) },
        CL_INVALID_COMMAND_QUEUE
    );
    // Too large, or in order.
    assert_eq!(
        device_queue(&s, false, Some(max + 1)),
        Err(CL_INVALID_QUEUE_PROPERTIES)
    );
    let mut err = 1;
    let props = [
        CL_QUEUE_PROPERTIES as cl_queue_properties,
        CL_QUEUE_ON_DEVICE,
        0,
    ];
    let q =
        unsafe { cl.clCreateCommandQueueWithProperties.unwrap()(s.c, d, props.as_ptr(), &mut err) };
    assert!(q.is_null());
    assert_eq!(err, CL_INVALID_VALUE);
    // The host does not enqueue to device queues.
    let buf = s.zeroed(4);
    let r = unsafe {
        cl.clEnqueueWriteBuffer.unwrap()(
            b,
            buf,
            CL_TRUE,
            0,
            4,
            [0u8; 4].as_ptr().cast(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_COMMAND_QUEUE);
    // The program shows its kernel, not the block kernel.
    let k = s.kernel(SIMPLE, "parent", OPTIONS);
    let mut program: cl_program = std::ptr::null_mut();
    unsafe {
        cl.clGetKernelInfo.unwrap()(
            k,
            CL_KERNEL_PROGRAM,
            std::mem::size_of::<cl_program>(),
            (&mut program as *mut cl_program).cast(),
            std::ptr::null_mut(),
        )
    };
    let names = query(|size, value, size_ret| unsafe {
        cl.clGetProgramInfo.unwrap()(program, CL_PROGRAM_KERNEL_NAMES, size, value, size_ret)
    })
    .unwrap();
    assert_eq!(c_string(&names), "parent");
    release_queue(&s, b);
    release_queue(&s, a);
}
