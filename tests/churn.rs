//! Creating and releasing every kind of object again and again leaves
//! nothing behind: vkcl's census of live OpenCL objects, Vulkan objects
//! and device memory (the exported `vkcl_census`) comes back to where it
//! stood, and the process's resident memory stays flat.
//!
//! `VKCL_TEST_CHURN_ROUNDS` sets the rounds per way of reaching vkcl
//! (default 1,000; `scripts/reliability.sh` runs 10,000).

mod common;

use std::collections::BTreeMap;
use std::ffi::{CString, c_void};
use std::time::{Duration, Instant};

use common::*;
use opencl_sys::*;

/// One test for both ways, one after the other: the census counts the
/// whole process.
#[test]
fn every_object_kind_created_and_released() {
    let _one = CENSUS.lock().unwrap_or_else(|e| e.into_inner());
    churn(loader());
    churn(direct());
}

/// The tests that read the census, which counts the whole process, one at
/// a time.
static CENSUS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Kernel objects made from one program share its kernels' Vulkan forms:
/// an application that makes a kernel object per call (CLBlast, PyOpenCL)
/// gets no new shader module or pipeline for each. A rebuild of the
/// program gives new kernel objects the new code.
#[test]
fn kernel_objects_share_their_pipelines() {
    let _one = CENSUS.lock().unwrap_or_else(|e| e.into_inner());
    for cl in [loader(), direct()] {
        let mut s = Setup::new(cl);
        let d = cl.device();
        let p = with_source(
            cl,
            s.c,
            "kernel void step(global uint* b) { b[get_global_id(0)] += STEP; }",
        );
        let build = |options: &std::ffi::CStr| {
            let r = unsafe {
                cl.clBuildProgram.unwrap()(p, 1, &d, options.as_ptr(), None, std::ptr::null_mut())
            };
            assert_eq!(r, CL_SUCCESS, "{}: build {options:?}", cl.how);
        };
        let b = s.zeroed(64 * 4);
        let run = |k: cl_kernel| {
            s.arg(k, 0, &b);
            assert_eq!(s.enqueue(k, &[64], Some(&[16]), None), CL_SUCCESS);
            assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
        };
        build(c"-DSTEP=1");
        let first = kernel(cl, p, "step").unwrap();
        run(first);
        let made = at_rest();
        let more: Vec<cl_kernel> = (0..3).map(|_| kernel(cl, p, "step").unwrap()).collect();
        for &k in &more {
            run(k);
        }
        let now = at_rest();
        for kind in ["vk_shader_modules", "vk_pipelines"] {
            assert_eq!(now.get(kind), made.get(kind), "{}: {kind}", cl.how);
        }
        assert_eq!(s.words(b, 64), vec![4; 64], "{}", cl.how);
        for k in more.into_iter().chain([first]) {
            unsafe { cl.clReleaseKernel.unwrap()(k) };
        }
        build(c"-DSTEP=10");
        let rebuilt = kernel(cl, p, "step").unwrap();
        run(rebuilt);
        assert_eq!(s.words(b, 64), vec![14; 64], "{}: the rebuilt code", cl.how);
        unsafe {
            cl.clReleaseKernel.unwrap()(rebuilt);
            cl.clReleaseProgram.unwrap()(p);
        }
    }
}

const SRC: &str = "kernel void touch(global uint* b, read_only image2d_t im, sampler_t s) {\n\
         size_t i = get_global_id(0);\n\
         b[i] += (uint)(read_imagef(im, s, (int2)(0, 0)).x * 255.0f) + 1u;\n\
     }\n";

/// A command buffer's device work is recorded into Vulkan once, at its
/// first enqueue (one command pool more while the buffer lives), and later
/// enqueues run that recording: no new Vulkan objects, the buffers'
/// contents of the moment read, an update of a mutable dispatch recorded
/// anew, and nothing left once the buffer is released.
#[test]
fn command_buffer_replays_reuse_one_vulkan_recording() {
    use std::ptr::{null, null_mut};
    let _one = CENSUS.lock().unwrap_or_else(|e| e.into_inner());
    for cl in [loader(), direct()] {
        let api = CommandBufferApi::new(cl);
        const N: usize = 64;
        let mut s = Setup::new(cl);
        let k = s.kernel(
            "kernel void add(global uint *p, uint v) { p[get_global_id(0)] += v; }",
            "add",
            "",
        );
        let (p, out) = (s.zeroed(N * 4), s.zeroed(N * 4));
        s.arg(k, 0, &p);
        s.arg(k, 1, &5u32);
        let pools = |at: &BTreeMap<String, i64>| at.get("vk_command_pools").copied().unwrap_or(0);
        // The command pools once back at `want` (up to 10 s).
        let released = |want: i64| {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let now = pools(&census());
                if now == want || Instant::now() > deadline {
                    return now;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        let run = |b: cl_command_buffer_khr, times: usize| {
            for _ in 0..times {
                let r = unsafe { (api.enqueue)(0, null_mut(), b, 0, null(), null_mut()) };
                assert_eq!(r, CL_SUCCESS, "{}: enqueue", cl.how);
            }
            assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
        };
        let mut err = CL_SUCCESS;
        // A kernel, then a copy of what it wrote.
        let b = unsafe { (api.create)(1, &s.q, null(), &mut err) };
        assert_eq!(err, CL_SUCCESS, "{}: command buffer", cl.how);
        let global = N;
        let recorded = unsafe {
            [
                (api.ndrange)(
                    b,
                    null_mut(),
                    null(),
                    k,
                    1,
                    null(),
                    &global,
                    null(),
                    0,
                    null(),
                    null_mut(),
                    null_mut(),
                ),
                (api.copy)(
                    b,
                    null_mut(),
                    null(),
                    p,
                    out,
                    0,
                    0,
                    N * 4,
                    0,
                    null(),
                    null_mut(),
                    null_mut(),
                ),
                (api.finalize)(b),
            ]
        };
        assert_eq!(recorded, [CL_SUCCESS; 3], "{}", cl.how);
        let before = at_rest();
        run(b, 1);
        let first = at_rest();
        assert_eq!(
            pools(&first),
            pools(&before) + 1,
            "{}: one recording",
            cl.how
        );
        run(b, 10);
        assert_eq!(at_rest(), first, "{}: replays make nothing new", cl.how);
        assert_eq!(s.words(out, N), vec![55; N], "{}", cl.how);
        // The recording reads the buffers as they are when it runs.
        cl.write(s.q, p, 0, &bytes_of(&[100u32; N]));
        run(b, 1);
        assert_eq!(s.words(out, N), vec![105; N], "{}: after a write", cl.how);
        assert_eq!(unsafe { (api.release)(b) }, CL_SUCCESS);
        assert_eq!(
            released(pools(&before)),
            pools(&before),
            "{}: released",
            cl.how
        );

        // A mutable dispatch: an update makes the next enqueue record anew.
        let props = [
            CL_COMMAND_BUFFER_FLAGS_KHR,
            CL_COMMAND_BUFFER_MUTABLE_KHR,
            0,
        ];
        let b = unsafe { (api.create)(1, &s.q, props.as_ptr(), &mut err) };
        assert_eq!(err, CL_SUCCESS, "{}: mutable command buffer", cl.how);
        let mut dispatch = null_mut();
        let r = unsafe {
            (api.ndrange)(
                b,
                null_mut(),
                null(),
                k,
                1,
                null(),
                &global,
                null(),
                0,
                null(),
                null_mut(),
                &mut dispatch,
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: mutable dispatch", cl.how);
        assert_eq!(unsafe { (api.finalize)(b) }, CL_SUCCESS);
        cl.write(s.q, p, 0, &bytes_of(&[0u32; N]));
        run(b, 2);
        assert_eq!(s.words(p, N), vec![10; N], "{}: recorded argument", cl.how);
        let seven = 7u32;
        let arg = cl_mutable_dispatch_arg_khr {
            arg_index: 1,
            arg_size: 4,
            arg_value: (&seven as *const u32).cast(),
        };
        let config = cl_mutable_dispatch_config_khr {
            command: dispatch,
            num_args: 1,
            num_svm_args: 0,
            num_exec_infos: 0,
            work_dim: 0,
            arg_list: &arg,
            arg_svm_list: null(),
            exec_info_list: null(),
            global_work_offset: null(),
            global_work_size: null(),
            local_work_size: null(),
        };
        let kind = CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR;
        let mut configs = [(&config as *const cl_mutable_dispatch_config_khr).cast::<c_void>()];
        let r = unsafe { (api.update)(b, 1, &kind, configs.as_mut_ptr()) };
        assert_eq!(r, CL_SUCCESS, "{}: update", cl.how);
        run(b, 2);
        assert_eq!(s.words(p, N), vec![24; N], "{}: updated argument", cl.how);
        let updated = at_rest();
        assert_eq!(
            pools(&updated),
            pools(&before) + 1,
            "{}: one recording",
            cl.how
        );
        assert_eq!(unsafe { (api.release)(b) }, CL_SUCCESS);
        assert_eq!(
            released(pools(&before)),
            pools(&before),
            "{}: released",
            cl.how
        );
    }
}

/// The library the tests use, opened once for vkcl's own exports
/// (`vkcl_census`, `vkcl_release_devices`).
fn vkcl() -> &'static libloading::Library {
    static LIB: std::sync::OnceLock<libloading::Library> = std::sync::OnceLock::new();
    // SAFETY: vkcl's library; loading it runs no initialiser beyond the
    // ICD loader's own use of it.
    LIB.get_or_init(|| unsafe { libloading::Library::new(library_path()).expect("open vkcl") })
}

/// vkcl's counts, by name, read through the library itself.
fn census() -> BTreeMap<String, i64> {
    // SAFETY: `vkcl_census` has this signature.
    let text = unsafe {
        let f: libloading::Symbol<unsafe extern "C" fn(*mut u8, usize) -> usize> =
            vkcl().get(b"vkcl_census\0").expect("vkcl_census");
        let n = f(std::ptr::null_mut(), 0);
        let mut buf = vec![0u8; n];
        assert_eq!(f(buf.as_mut_ptr(), n), n);
        c_string(&buf)
    };
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// Destroys the Vulkan devices nothing uses (the exported
/// `vkcl_release_devices`) and gives how many are still in use.
fn release_devices() -> u32 {
    // SAFETY: `vkcl_release_devices` has this signature.
    unsafe {
        let f: libloading::Symbol<unsafe extern "C" fn() -> u32> = vkcl()
            .get(b"vkcl_release_devices\0")
            .expect("vkcl_release_devices");
        f()
    }
}

/// Resident memory of the process, in bytes.
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The counts once vkcl is at rest: the same over 100 ms (the completion
/// worker lets go of finished commands just after their events complete).
fn at_rest() -> BTreeMap<String, i64> {
    let mut last = census();
    let mut same = 0;
    while same < 10 {
        std::thread::sleep(Duration::from_millis(10));
        let now = census();
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    last
}

/// Waits (up to 10 s) for the counts to come back to `want`.
fn settle(want: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = census();
        if &now == want || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One round: every object kind made, used once, released.
fn round(cl: &Cl, svm: bool) {
    let d = cl.device();
    let mut err = 1;
    let c = cl.context();
    let q = cl.queue(c, 0);
    let oq = cl.queue(c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    let buf = cl.buffer(c, CL_MEM_READ_WRITE, 4096, std::ptr::null_mut());
    let region = cl_buffer_region {
        origin: 1024,
        size: 1024,
    };
    let sub = unsafe {
        cl.clCreateSubBuffer.unwrap()(
            buf,
            CL_MEM_READ_WRITE,
            CL_BUFFER_CREATE_TYPE_REGION,
            (&region as *const cl_buffer_region).cast(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS, "{}: sub-buffer", cl.how);
    let format = cl_image_format {
        image_channel_order: CL_RGBA,
        image_channel_data_type: CL_UNORM_INT8,
    };
    let desc = image_desc(CL_MEM_OBJECT_IMAGE2D, 8, 8, 0, 0);
    let texels = [51u8; 8 * 8 * 4];
    let image = unsafe {
        cl.clCreateImage.unwrap()(
            c,
            CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
            &format,
            &desc,
            texels.as_ptr() as *mut c_void,
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS, "{}: image", cl.how);
    let sampler = unsafe {
        cl.clCreateSampler.unwrap()(c, CL_FALSE, CL_ADDRESS_CLAMP, CL_FILTER_NEAREST, &mut err)
    };
    assert_eq!(err, CL_SUCCESS, "{}: sampler", cl.how);
    let pipe = unsafe { cl.clCreatePipe.unwrap()(c, 0, 16, 64, std::ptr::null(), &mut err) };
    assert_eq!(err, CL_SUCCESS, "{}: pipe", cl.how);
    let src = CString::new(SRC).unwrap();
    let mut ptr = src.as_ptr();
    let p = unsafe {
        cl.clCreateProgramWithSource.unwrap()(c, 1, &mut ptr, std::ptr::null(), &mut err)
    };
    assert_eq!(err, CL_SUCCESS);
    let r =
        unsafe { cl.clBuildProgram.unwrap()(p, 1, &d, c"".as_ptr(), None, std::ptr::null_mut()) };
    assert_eq!(r, CL_SUCCESS, "{}: build", cl.how);
    let k = unsafe { cl.clCreateKernel.unwrap()(p, c"touch".as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let set = |i: u32, size: usize, v: *const c_void| {
        assert_eq!(
            unsafe { cl.clSetKernelArg.unwrap()(k, i, size, v) },
            CL_SUCCESS
        );
    };
    set(0, size_of::<cl_mem>(), (&sub as *const cl_mem).cast());
    set(1, size_of::<cl_mem>(), (&image as *const cl_mem).cast());
    set(
        2,
        size_of::<cl_sampler>(),
        (&sampler as *const cl_sampler).cast(),
    );
    let gate = unsafe { cl.clCreateUserEvent.unwrap()(c, &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let mut run: cl_event = std::ptr::null_mut();
    let global = 256usize;
    let e = unsafe {
        cl.clEnqueueNDRangeKernel.unwrap()(
            oq,
            k,
            1,
            std::ptr::null(),
            &global,
            std::ptr::null(),
            1,
            &gate,
            &mut run,
        )
    };
    assert_eq!(e, CL_SUCCESS, "{}: enqueue", cl.how);
    // A semaphore: the in-order queue waits for it before the kernel's
    // signal is even enqueued, and it is released while both are pending.
    let sem = SemaphoreApi::new(cl);
    let props = [
        CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
        CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
        0,
    ];
    let semaphore = unsafe { (sem.create)(c, props.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS, "{}: semaphore", cl.how);
    unsafe {
        let none = std::ptr::null_mut();
        assert_eq!(
            (sem.wait)(
                q,
                1,
                &semaphore,
                std::ptr::null(),
                0,
                std::ptr::null(),
                none
            ),
            CL_SUCCESS
        );
        assert_eq!(
            (sem.signal)(oq, 1, &semaphore, std::ptr::null(), 1, &run, none),
            CL_SUCCESS
        );
        assert_eq!((sem.release)(semaphore), CL_SUCCESS);
    }
    // A command buffer: a fill and the kernel (a mutable dispatch, its
    // size updated after finalization) recorded, enqueued behind the
    // semaphore's wait and released while that enqueue is pending.
    unsafe {
        use std::ptr::{null, null_mut};
        let api = CommandBufferApi::new(cl);
        let (create, fill, finalize, enqueue, release, ndrange, update) = (
            api.create,
            api.fill,
            api.finalize,
            api.enqueue,
            api.release,
            api.ndrange,
            api.update,
        );
        let mutable = [
            CL_COMMAND_BUFFER_FLAGS_KHR,
            CL_COMMAND_BUFFER_MUTABLE_KHR,
            0,
        ];
        let b = create(1, &q, mutable.as_ptr(), &mut err);
        assert_eq!(err, CL_SUCCESS, "{}: command buffer", cl.how);
        let mut dispatch = null_mut();
        let r = ndrange(
            b,
            null_mut(),
            null(),
            k,
            1,
            null(),
            &global,
            null(),
            0,
            null(),
            null_mut(),
            &mut dispatch,
        );
        assert_eq!(r, CL_SUCCESS, "{}: mutable dispatch", cl.how);
        let word = 7u32;
        let pattern = (&word as *const u32).cast();
        let r = fill(
            b,
            null_mut(),
            null(),
            buf,
            pattern,
            4,
            0,
            64,
            0,
            null(),
            null_mut(),
            null_mut(),
        );
        assert_eq!(r, CL_SUCCESS);
        assert_eq!(finalize(b), CL_SUCCESS);
        let half = global / 2;
        let config = cl_mutable_dispatch_config_khr {
            command: dispatch,
            num_args: 0,
            num_svm_args: 0,
            num_exec_infos: 0,
            work_dim: 0,
            arg_list: null(),
            arg_svm_list: null(),
            exec_info_list: null(),
            global_work_offset: null(),
            global_work_size: &half,
            local_work_size: null(),
        };
        let kind = CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR;
        let mut configs = [(&config as *const cl_mutable_dispatch_config_khr).cast::<c_void>()];
        assert_eq!(update(b, 1, &kind, configs.as_mut_ptr()), CL_SUCCESS);
        assert_eq!(enqueue(0, null_mut(), b, 0, null(), null_mut()), CL_SUCCESS);
        assert_eq!(release(b), CL_SUCCESS);
    }
    let svm_ptr = if svm {
        let s = unsafe { cl.clSVMAlloc.unwrap()(c, CL_MEM_READ_WRITE, 4096, 0) };
        assert!(!s.is_null(), "{}: clSVMAlloc", cl.how);
        s
    } else {
        std::ptr::null_mut()
    };
    // Everything but the event is released while the kernel waits.
    unsafe {
        cl.clReleaseKernel.unwrap()(k);
        cl.clReleaseProgram.unwrap()(p);
        cl.clReleaseSampler.unwrap()(sampler);
        cl.clReleaseMemObject.unwrap()(image);
        cl.clReleaseMemObject.unwrap()(pipe);
        cl.clReleaseMemObject.unwrap()(sub);
        cl.clReleaseMemObject.unwrap()(buf);
        assert_eq!(
            cl.clSetUserEventStatus.unwrap()(gate, CL_COMPLETE as cl_int),
            CL_SUCCESS
        );
        assert_eq!(cl.clWaitForEvents.unwrap()(1, &run), CL_SUCCESS);
        assert_eq!(cl.event_status(run), CL_COMPLETE as cl_int);
        cl.clReleaseEvent.unwrap()(run);
        cl.clReleaseEvent.unwrap()(gate);
        if svm {
            cl.clSVMFree.unwrap()(c, svm_ptr);
        }
        assert_eq!(cl.clFinish.unwrap()(q), CL_SUCCESS);
        cl.clReleaseCommandQueue.unwrap()(q);
        cl.clReleaseCommandQueue.unwrap()(oq);
        cl.clReleaseContext.unwrap()(c);
    }
}

fn churn(cl: &Cl) {
    let rounds: usize = std::env::var("VKCL_TEST_CHURN_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000);
    let caps = cl
        .device_bytes(cl.device(), CL_DEVICE_SVM_CAPABILITIES)
        .map(|b| u64_of(&b))
        .unwrap_or(0);
    let svm = caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0;
    // A first round fills what vkcl keeps for reuse (staging buffers, the
    // pipeline cache, the compiler's caches).
    round(cl, svm);
    let before = at_rest();
    let rss_before = resident();
    for _ in 0..rounds {
        round(cl, svm);
    }
    let after = settle(&before);
    let rss_after = resident();
    eprintln!(
        "{}: {rounds} rounds; census {after:?}; resident {} -> {} MiB",
        cl.how,
        rss_before >> 20,
        rss_after >> 20
    );
    assert_eq!(
        after, before,
        "{}: objects left after {rounds} rounds",
        cl.how
    );
    assert!(
        rss_after < rss_before + (64 << 20),
        "{}: resident memory grew from {} to {} MiB over {rounds} rounds",
        cl.how,
        rss_before >> 20,
        rss_after >> 20
    );
    // With everything released, the Vulkan devices go too: the
    // validation layer (on in the test suite, where any message aborts)
    // reports each Vulkan object still alive when a device is destroyed,
    // and every count is zero.
    assert_eq!(
        release_devices(),
        0,
        "{}: a Vulkan device still in use",
        cl.how
    );
    let gone = census();
    assert!(
        gone.values().all(|&v| v == 0),
        "{}: left once the devices went: {gone:?}",
        cl.how
    );
    // The next objects make the device again.
    round(cl, svm);
    assert_eq!(
        settle(&before),
        before,
        "{}: a round on a new device",
        cl.how
    );
}
