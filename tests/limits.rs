//! vkcl driven to its limits: memory used up by buffers and by images,
//! printf output beyond its buffer, argument blocks at and past the
//! parameter size, ten thousand commands queued without a flush, and a
//! million events alive at once. Each limit gives the specification's
//! error (or works), and the context is still usable afterwards.

mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    buffers_beyond_the_device_memory,
    images_beyond_the_device_memory,
    argument_blocks_at_and_past_the_limit,
    argument_blocks_of_queued_launches,
    ten_thousand_commands_without_a_flush,
    local_memory_beyond_the_device,
    collectives_beyond_the_local_memory,
    private_memory_beyond_the_limit,
);

/// One way of reaching vkcl is enough for these.
#[test]
fn printf_beyond_its_buffer() {
    printf_overflow(direct());
}

#[test]
fn a_million_events_alive() {
    million_events(direct());
}

/// The tests of this file one at a time: the memory ones take all the
/// device has, which the others would then not get.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

const ADD: &str = "kernel void add(global uint *p, uint v) { p[get_global_id(0)] += v; }";

/// The context still builds and runs a kernel with a right result.
fn still_usable(s: &mut Setup) {
    let k = s.kernel(ADD, "add", "");
    let b = s.zeroed(64 * 4);
    s.arg(k, 0, &b);
    s.arg(k, 1, &3u32);
    s.run(k, &[64], None, None);
    assert!(
        s.words(b, 64).iter().all(|&w| w == 3),
        "{}: the context works on",
        s.cl.how
    );
}

fn device_u64(cl: &Cl, param: cl_device_info) -> u64 {
    u64_of(&cl.device_bytes(cl.device(), param).unwrap())
}

/// Buffers of an eighth of the device's memory each, every one touched
/// by a fill, until the device says no: allocation failure or out of
/// resources, never a crash or the host running out.
fn buffers_beyond_the_device_memory(cl: &Cl) {
    let _one = one_at_a_time();
    let mut s = Setup::new(cl);
    let global = device_u64(cl, CL_DEVICE_GLOBAL_MEM_SIZE);
    let chunk = (global / 8).min(device_u64(cl, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
    let mut held = Vec::new();
    let mut refused = None;
    // Twice the device's memory is more than any device gives.
    while (held.len() as u64) * chunk <= 2 * global {
        let mut r = 0;
        // SAFETY: a valid context; no host pointer.
        let b = unsafe {
            cl.clCreateBuffer.unwrap()(s.c, CL_MEM_READ_WRITE, chunk as usize, null_mut(), &mut r)
        };
        if r != CL_SUCCESS {
            refused = Some(r);
            break;
        }
        held.push(b);
        let pattern = 0x5Au8;
        // Memory is taken at first use on some devices: use it.
        // SAFETY: a valid queue and buffer; the pattern outlives the call
        // (the fill is waited for below).
        let r = unsafe {
            cl.clEnqueueFillBuffer.unwrap()(
                s.q,
                b,
                (&pattern as *const u8).cast::<c_void>(),
                1,
                0,
                4096,
                0,
                null(),
                null_mut(),
            )
        };
        // SAFETY: a valid queue.
        let f = unsafe { cl.clFinish.unwrap()(s.q) };
        if r != CL_SUCCESS || f != CL_SUCCESS {
            refused = Some(if r != CL_SUCCESS { r } else { f });
            break;
        }
    }
    let code = refused.unwrap_or_else(|| {
        panic!(
            "{}: {} buffers of {chunk} bytes on a device of {global}",
            cl.how,
            held.len()
        )
    });
    assert!(
        code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES,
        "{}: after {} buffers: {code}",
        cl.how,
        held.len()
    );
    assert!(
        held.len() >= 4,
        "{}: only {} buffers fitted",
        cl.how,
        held.len()
    );
    for b in held {
        // SAFETY: created above, released once.
        unsafe { cl.clReleaseMemObject.unwrap()(b) };
    }
    still_usable(&mut s);
}

/// 2-D RGBA8 images as large as the device takes, until it says no.
fn images_beyond_the_device_memory(cl: &Cl) {
    let _one = one_at_a_time();
    let mut s = Setup::new(cl);
    let global = device_u64(cl, CL_DEVICE_GLOBAL_MEM_SIZE);
    let side = (device_u64(cl, CL_DEVICE_IMAGE2D_MAX_WIDTH) as usize).min(8192);
    let bytes = (side * side * 4) as u64;
    let format = cl_image_format {
        image_channel_order: CL_RGBA,
        image_channel_data_type: CL_UNORM_INT8,
    };
    let desc = image_desc(CL_MEM_OBJECT_IMAGE2D, side, side, 1, 1);
    let mut held = Vec::new();
    let mut refused = None;
    while (held.len() as u64) * bytes <= 2 * global {
        let mut r = 0;
        // SAFETY: valid format and description; no host pointer.
        let im = unsafe {
            cl.clCreateImage.unwrap()(s.c, CL_MEM_READ_WRITE, &format, &desc, null_mut(), &mut r)
        };
        if r != CL_SUCCESS {
            refused = Some(r);
            break;
        }
        held.push(im);
        let color = [0.5f32; 4];
        let origin = [0usize; 3];
        let region = [16usize, 16, 1];
        // SAFETY: a valid image and a region inside it.
        let r = unsafe {
            cl.clEnqueueFillImage.unwrap()(
                s.q,
                im,
                color.as_ptr().cast(),
                origin.as_ptr(),
                region.as_ptr(),
                0,
                null(),
                null_mut(),
            )
        };
        // SAFETY: a valid queue.
        let f = unsafe { cl.clFinish.unwrap()(s.q) };
        if r != CL_SUCCESS || f != CL_SUCCESS {
            refused = Some(if r != CL_SUCCESS { r } else { f });
            break;
        }
    }
    let code = refused.unwrap_or_else(|| panic!("{}: {} images fitted", cl.how, held.len()));
    assert!(
        code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES,
        "{}: after {} images: {code}",
        cl.how,
        held.len()
    );
    for im in held {
        // SAFETY: created above, released once.
        unsafe { cl.clReleaseMemObject.unwrap()(im) };
    }
    still_usable(&mut s);
}

const ARGS: &str = "
typedef struct { uint w[254]; } Exact;      /* 1016 bytes + a pointer = 1024 */
typedef struct { uint w[600]; } Beyond;     /* 2400 bytes */
kernel void exact(global uint *out, Exact e) {
    size_t i = get_global_id(0);
    out[i] = e.w[i] * 3u + 1u;
}
kernel void beyond(global uint *out, Beyond b) {
    size_t i = get_global_id(0);
    out[i] = b.w[i] + b.w[599 - i];
}";

/// An argument block of exactly CL_DEVICE_MAX_PARAMETER_SIZE bytes runs
/// right; one more than twice as large runs right or is refused with an
/// error, never read wrong.
fn argument_blocks_at_and_past_the_limit(cl: &Cl) {
    let _one = one_at_a_time();
    let mut s = Setup::new(cl);
    let limit = usize_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_MAX_PARAMETER_SIZE)
            .unwrap(),
    );
    assert_eq!(
        limit, 1024,
        "{}: the test's structs are sized for 1024 bytes",
        cl.how
    );
    let exact = s.kernel(ARGS, "exact", "");
    let out = s.zeroed(254 * 4);
    let e: Vec<u32> = (0..254u32).map(|i| (i * 1_000_003) ^ 0xA5A5).collect();
    s.arg(exact, 0, &out);
    s.arg_bytes(exact, 1, &bytes_of(&e));
    s.run(exact, &[254], None, None);
    let got = s.words(out, 254);
    for i in 0..254 {
        assert_eq!(
            got[i],
            e[i].wrapping_mul(3).wrapping_add(1),
            "{}: exact.w[{i}]",
            cl.how
        );
    }
    let beyond = s.kernel(ARGS, "beyond", "");
    let out = s.zeroed(600 * 4);
    let b: Vec<u32> = (0..600u32).map(|i| i * 7 + 11).collect();
    s.arg(beyond, 0, &out);
    // SAFETY: a valid kernel; the bytes are valid for their length.
    let r =
        unsafe { cl.clSetKernelArg.unwrap()(beyond, 1, b.len() * 4, b.as_ptr().cast::<c_void>()) };
    if r == CL_SUCCESS {
        let r = s.enqueue(beyond, &[600], None, None);
        if r == CL_SUCCESS {
            let got = s.words(out, 600);
            for i in 0..600 {
                assert_eq!(got[i], b[i] + b[599 - i], "{}: beyond.w[{i}]", cl.how);
            }
        } else {
            assert!(
                r == CL_OUT_OF_RESOURCES || r == CL_INVALID_KERNEL_ARGS,
                "{}: enqueue of a 2400-byte argument: {r}",
                cl.how
            );
        }
    } else {
        assert_eq!(r, CL_INVALID_ARG_SIZE, "{}: a 2400-byte argument", cl.how);
    }
    still_usable(&mut s);
}

/// Two thousand launches of a kernel whose 260 bytes of arguments take
/// an argument block on every device, each with other values, queued
/// before any is waited for: every launch reads its own arguments (the
/// blocks share staging buffers, several hundred launches to one).
fn argument_blocks_of_queued_launches(cl: &Cl) {
    let _one = one_at_a_time();
    let mut s = Setup::new(cl);
    let k = s.kernel(
        "kernel void sum(global ulong *out, uint at, ulong4 a, ulong4 b, ulong4 c, ulong4 d,
                         ulong4 e, ulong4 f, ulong4 g, ulong4 h) {
            ulong4 t = a + b + c + d + e + f + g + h;
            out[at] = t.x + t.y * 3 + t.z * 5 + t.w * 7;
        }",
        "sum",
        "",
    );
    const N: u32 = 2000;
    let out = s.zeroed(N as usize * 8);
    s.arg(k, 0, &out);
    let mut want = Vec::new();
    for at in 0..N {
        s.arg(k, 1, &at);
        let mut t = [0u64; 4];
        for v in 0..8u32 {
            let value: [u64; 4] =
                std::array::from_fn(|c| u64::from(at) * 1_000_003 + u64::from(v * 4 + c as u32));
            for c in 0..4 {
                t[c] += value[c];
            }
            s.arg(k, 2 + v, &value);
        }
        want.push(t[0] + t[1] * 3 + t[2] * 5 + t[3] * 7);
        assert_eq!(
            s.enqueue(k, &[1], None, None),
            CL_SUCCESS,
            "{}: launch {at}",
            cl.how
        );
    }
    let got = i64s(&cl.read(s.q, out, 0, N as usize * 8));
    for at in 0..N as usize {
        assert_eq!(got[at] as u64, want[at], "{}: launch {at}", cl.how);
    }
}

/// Ten thousand kernels on an in-order queue, nothing flushed until the
/// end: every one of them runs, in order.
fn ten_thousand_commands_without_a_flush(cl: &Cl) {
    let _one = one_at_a_time();
    let mut s = Setup::new(cl);
    let k = s.kernel(
        "kernel void step(global uint *p, uint n) { p[0] = p[0] * 3u + n; }",
        "step",
        "",
    );
    let b = s.zeroed(4);
    s.arg(k, 0, &b);
    let mut want = 0u32;
    for n in 0..10_000u32 {
        s.arg(k, 1, &n);
        assert_eq!(
            s.enqueue(k, &[1], None, None),
            CL_SUCCESS,
            "{}: command {n}",
            cl.how
        );
        want = want.wrapping_mul(3).wrapping_add(n);
    }
    // SAFETY: a valid queue.
    assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
    assert_eq!(
        s.words(b, 1)[0],
        want,
        "{}: ten thousand commands in order",
        cl.how
    );
}

/// printf output of about 1.6 MB from one kernel, beyond the device's
/// printf buffer: the kernel completes, what fits is printed, and the
/// next kernel prints again. The output goes to /dev/null.
fn printf_overflow(cl: &Cl) {
    let _one = one_at_a_time();
    let mut s = Setup::new(cl);
    let size = usize_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_PRINTF_BUFFER_SIZE)
            .unwrap(),
    );
    let k = s.kernel(
        "kernel void chatty(global uint *done) {
             uint i = get_global_id(0);
             printf(\"work-item %u of a kernel that prints too much\\n\", i);
             done[i] = i + 1u;
         }",
        "chatty",
        "",
    );
    let n = (size / 16).max(65536);
    let done = s.zeroed(n * 4);
    s.arg(k, 0, &done);
    let quiet = Quiet::new();
    s.run(k, &[n], None, None);
    // SAFETY: a valid queue.
    let f = unsafe { cl.clFinish.unwrap()(s.q) };
    drop(quiet);
    assert_eq!(f, CL_SUCCESS);
    let got = s.words(done, n);
    assert!(
        got.iter().enumerate().all(|(i, &w)| w == i as u32 + 1),
        "every work-item ran"
    );
    still_usable(&mut s);
}

/// Standard output sent to /dev/null while it lives (kernels' printf
/// writes there, not to the test's captured output).
struct Quiet(i32);

impl Quiet {
    fn new() -> Quiet {
        // SAFETY: plain descriptor calls; stdout is flushed by the drop.
        unsafe {
            let saved = libc::dup(1);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            libc::dup2(null, 1);
            libc::close(null);
            Quiet(saved)
        }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        // SAFETY: restores the descriptor saved above.
        unsafe {
            libc::fflush(null_mut());
            libc::dup2(self.0, 1);
            libc::close(self.0);
        }
    }
}

/// A million user events alive at once, completed and released; then a
/// hundred thousand commands' events alive until their queue finishes.
fn million_events(cl: &Cl) {
    let _one = one_at_a_time();
    let s = Setup::new(cl);
    let mut events = Vec::with_capacity(1_000_000);
    for _ in 0..1_000_000 {
        let mut r = 0;
        // SAFETY: a valid context.
        let e = unsafe { cl.clCreateUserEvent.unwrap()(s.c, &mut r) };
        assert_eq!(r, CL_SUCCESS, "user event {}", events.len());
        events.push(e);
    }
    for &e in &events {
        // SAFETY: valid user events, each completed and released once.
        unsafe {
            assert_eq!(cl.clSetUserEventStatus.unwrap()(e, CL_COMPLETE), CL_SUCCESS);
            cl.clReleaseEvent.unwrap()(e);
        }
    }
    events.clear();
    for n in 0..100_000 {
        let mut e = null_mut();
        // SAFETY: a valid queue; the event is kept and released below.
        let r = unsafe { cl.clEnqueueMarkerWithWaitList.unwrap()(s.q, 0, null(), &mut e) };
        assert_eq!(r, CL_SUCCESS, "marker {n}");
        events.push(e);
    }
    // SAFETY: a valid queue.
    assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
    for &e in &events {
        assert_eq!(cl.event_status(e), CL_COMPLETE as cl_int);
        // SAFETY: released once.
        unsafe { cl.clReleaseEvent.unwrap()(e) };
    }
}

const LOCAL: &str = "kernel void fill(global uint *out, local uint *arg) {\n\
    local uint own[OWN];\n\
    uint i = get_local_id(0);\n\
    own[i] = i * 3u;\n\
    arg[i] = i + 1u;\n\
    barrier(CLK_LOCAL_MEM_FENCE);\n\
    out[i] = own[get_local_size(0) - 1u - i] + arg[i];\n\
}\n";

/// `__local` variables larger than the device's local memory fail the
/// build with a log; variables and `__local` arguments that fit only
/// apart fail the enqueue with CL_OUT_OF_RESOURCES; both fitting run.
fn local_memory_beyond_the_device(cl: &Cl) {
    let _one = one_at_a_time();
    let mut s = Setup::new(cl);
    let limit = device_u64(cl, CL_DEVICE_LOCAL_MEM_SIZE) as usize;
    // A build past the limit.
    let (r, log) = try_build(cl, s.c, LOCAL, &format!("-D OWN={}u", limit / 4 + 1));
    assert_eq!(
        r, CL_BUILD_PROGRAM_FAILURE,
        "{}: a kernel past the limit",
        cl.how
    );
    assert!(
        log.contains("__local"),
        "{}: the log says why: {log}",
        cl.how
    );
    // Three quarters of the limit in variables: an argument of half fails
    // the enqueue, one of an eighth runs.
    let own = limit / 4 * 3 / 4;
    let k = s.kernel(LOCAL, "fill", &format!("-D OWN={own}u"));
    let out = s.zeroed(64 * 4);
    s.arg(k, 0, &out);
    // SAFETY: a valid kernel; a `__local` argument takes a size and NULL.
    let set_local = |bytes: usize| unsafe { cl.clSetKernelArg.unwrap()(k, 1, bytes, null()) };
    assert_eq!(set_local(limit / 2), CL_SUCCESS);
    assert_eq!(
        s.enqueue(k, &[64], Some(&[64]), None),
        CL_OUT_OF_RESOURCES,
        "{}: variables and argument past the limit together",
        cl.how
    );
    assert_eq!(set_local(limit / 8), CL_SUCCESS);
    s.run(k, &[64], Some(&[64]), None);
    let got = s.words(out, 64);
    for (i, &g) in got.iter().enumerate() {
        let i = i as u32;
        assert_eq!(g, (63 - i) * 3 + i + 1, "{}: out[{i}]", cl.how);
    }
    still_usable(&mut s);
}

/// A private array of a million words per work-item (4 MiB, more than
/// GPUs give a work-item) fails the build with a log.
fn private_memory_beyond_the_limit(cl: &Cl) {
    const BIG: &str = "kernel void big(global uint *out, uint n) {\n\
        uint own[1 << 20];\n\
        for (uint i = 0; i < n; i++) own[(i * 7919u) & ((1u << 20) - 1u)] = i;\n\
        out[0] = own[n & ((1u << 20) - 1u)];\n\
    }\n";
    let s = Setup::new(cl);
    let (r, log) = try_build(cl, s.c, BIG, "");
    assert_eq!(r, CL_BUILD_PROGRAM_FAILURE, "{}: {log}", cl.how);
    assert!(
        log.contains("private variables"),
        "{}: the log says why: {log}",
        cl.how
    );
}

/// clBuildProgram of `source` with `options` on context `c`: its result
/// and build log (the program is released).
const COLLECTIVE: &str = "kernel void reduce(global uint *out) {\n\
    local uint own[OWN];\n\
    uint i = get_local_id(0);\n\
    own[i] = i;\n\
    barrier(CLK_LOCAL_MEM_FENCE);\n\
    out[get_global_id(0)] = work_group_reduce_add(own[get_local_size(0) - 1u - i]);\n\
}\n";

/// The work-group memory a work-group collective needs counts with the
/// kernel's `__local` variables: a kernel whose variables alone take the
/// whole local memory fails the build with a log, rather than handing
/// the driver a pipeline past its shared memory; with room left it runs.
fn collectives_beyond_the_local_memory(cl: &Cl) {
    let _one = one_at_a_time();
    let mut s = Setup::new(cl);
    let limit = device_u64(cl, CL_DEVICE_LOCAL_MEM_SIZE) as usize;
    let (r, log) = try_build(
        cl,
        s.c,
        COLLECTIVE,
        &format!("-cl-std=CL3.0 -D OWN={}u", limit / 4),
    );
    assert_eq!(
        r, CL_BUILD_PROGRAM_FAILURE,
        "{}: variables of the whole local memory and a collective",
        cl.how
    );
    assert!(
        log.contains("work-group functions"),
        "{}: the log says why: {log}",
        cl.how
    );
    let k = s.kernel(
        COLLECTIVE,
        "reduce",
        &format!("-cl-std=CL3.0 -D OWN={}u", limit / 4 - 1024),
    );
    let out = s.zeroed(128 * 4);
    s.arg(k, 0, &out);
    s.run(k, &[128], Some(&[64]), None);
    assert_eq!(s.words(out, 128), vec![63 * 64 / 2; 128], "{}", cl.how);
    still_usable(&mut s);
}

fn try_build(cl: &Cl, c: cl_context, source: &str, options: &str) -> (cl_int, String) {
    let src = std::ffi::CString::new(source).unwrap();
    let mut ptr = src.as_ptr();
    let mut r = 1;
    // SAFETY: one valid source string.
    let p = unsafe { cl.clCreateProgramWithSource.unwrap()(c, 1, &mut ptr, null(), &mut r) };
    assert_eq!(r, CL_SUCCESS);
    let opts = std::ffi::CString::new(options).unwrap();
    let d = cl.device();
    // SAFETY: a valid program and device.
    let r = unsafe { cl.clBuildProgram.unwrap()(p, 1, &d, opts.as_ptr(), None, null_mut()) };
    let log = query(|size, value, size_ret| unsafe {
        cl.clGetProgramBuildInfo.unwrap()(p, d, CL_PROGRAM_BUILD_LOG, size, value, size_ret)
    })
    .unwrap();
    // SAFETY: the program is released once.
    unsafe { cl.clReleaseProgram.unwrap()(p) };
    (r, c_string(&log))
}
