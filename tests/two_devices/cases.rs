// The cases of `context_two_devices` and `context_two_devices_device_local`.
use std::ffi::{CString, c_void};
use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    each_device_is_offered_twice,
    kernels_take_turns_on_a_buffer,
    a_read_only_buffer_serves_both_devices,
    transfers_from_either_queue,
    maps_on_one_device_unmapped_on_the_other,
    migration_moves_or_discards_contents,
    a_wait_on_another_device_waits_for_its_work,
    disjoint_sub_buffers_written_at_once,
    an_image_moves_between_devices,
    images_from_buffers_follow_their_buffer,
    programs_compiled_and_linked_for_one_device_of_two,
);

const N: usize = 4096;

/// A context of the first two devices, with an in-order queue on each.
struct Two<'a> {
    cl: &'a Cl,
    c: cl_context,
    d: [cl_device_id; 2],
    q: [cl_command_queue; 2],
    program: cl_program,
    mems: Vec<cl_mem>,
}

const SOURCE: &str = r#"
kernel void add(global uint *b, uint v) { b[get_global_id(0)] += v; }
kernel void scaled(const global uint *in, global uint *out, uint k) {
    out[get_global_id(0)] = in[get_global_id(0)] * k;
}
kernel void set(global uint *b, uint v) { b[get_global_id(0)] = v; }
"#;

impl<'a> Two<'a> {
    fn new(cl: &'a Cl) -> Two<'a> {
        let all = cl.devices(CL_DEVICE_TYPE_ALL).unwrap();
        assert!(all.len() >= 2, "{}: {} devices", cl.how, all.len());
        let d = [all[0], all[1]];
        let mut err = 1;
        let c = unsafe { cl.clCreateContext.unwrap()(null(), 2, d.as_ptr(), None, null_mut(), &mut err) };
        assert_eq!(err, CL_SUCCESS, "{}: context of two devices", cl.how);
        let q = d.map(|dev| {
            let q = unsafe { cl.clCreateCommandQueue.unwrap()(c, dev, 0, &mut err) };
            assert_eq!(err, CL_SUCCESS);
            q
        });
        let src = CString::new(SOURCE).unwrap();
        let mut ptr = src.as_ptr();
        let program =
            unsafe { cl.clCreateProgramWithSource.unwrap()(c, 1, &mut ptr, null(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        // Built for every device of the context.
        let r = unsafe { cl.clBuildProgram.unwrap()(program, 0, null(), null(), None, null_mut()) };
        assert_eq!(r, CL_SUCCESS, "{}: build for both devices", cl.how);
        Two {
            cl,
            c,
            d,
            q,
            program,
            mems: Vec::new(),
        }
    }

    fn buffer(&mut self, flags: cl_mem_flags, words: Option<&[u32]>) -> cl_mem {
        let (flags, host) = match words {
            Some(w) => (flags | CL_MEM_COPY_HOST_PTR, w.as_ptr() as *mut c_void),
            None => (flags, null_mut()),
        };
        let b = self.cl.buffer(self.c, flags, N * 4, host);
        self.mems.push(b);
        b
    }

    fn kernel(&self, name: &str) -> cl_kernel {
        let n = CString::new(name).unwrap();
        let mut err = 1;
        let k = unsafe { self.cl.clCreateKernel.unwrap()(self.program, n.as_ptr(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        k
    }

    /// Runs `k` over N items on device `on` after `waits`; its event.
    fn launch(&self, on: usize, k: cl_kernel, waits: &[cl_event]) -> cl_event {
        let mut ev = null_mut();
        let r = unsafe {
            self.cl.clEnqueueNDRangeKernel.unwrap()(
                self.q[on],
                k,
                1,
                null(),
                &N,
                null(),
                waits.len() as cl_uint,
                if waits.is_empty() { null() } else { waits.as_ptr() },
                &mut ev,
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: launch on device {on}", self.cl.how);
        ev
    }

    fn words(&self, on: usize, b: cl_mem) -> Vec<u32> {
        self.cl.read(self.q[on], b, 0, N * 4).chunks_exact(4).map(u32_of).collect()
    }

    fn wait(&self, events: &[cl_event]) {
        assert_eq!(
            unsafe { self.cl.clWaitForEvents.unwrap()(events.len() as cl_uint, events.as_ptr()) },
            CL_SUCCESS
        );
    }
}

impl Drop for Two<'_> {
    fn drop(&mut self) {
        let cl = self.cl;
        unsafe {
            for q in self.q {
                cl.clFinish.unwrap()(q);
                cl.clReleaseCommandQueue.unwrap()(q);
            }
            for &m in &self.mems {
                cl.clReleaseMemObject.unwrap()(m);
            }
            cl.clReleaseProgram.unwrap()(self.program);
            cl.clReleaseContext.unwrap()(self.c);
        }
    }
}

fn arg<T>(cl: &Cl, k: cl_kernel, i: u32, v: &T) {
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, i, size_of::<T>(), (v as *const T).cast()) };
    assert_eq!(r, CL_SUCCESS);
}

fn release_kernel(cl: &Cl, k: cl_kernel) {
    unsafe { cl.clReleaseKernel.unwrap()(k) };
}

fn release_events(cl: &Cl, events: &[cl_event]) {
    for &e in events {
        unsafe { cl.clReleaseEvent.unwrap()(e) };
    }
}

fn ramp() -> Vec<u32> {
    (0..N as u32).collect()
}

fn each_device_is_offered_twice(cl: &Cl) {
    let all = cl.devices(CL_DEVICE_TYPE_ALL).unwrap();
    assert!(all.len() >= 2 && all.len() % 2 == 0, "{}: {} devices", cl.how, all.len());
    assert_ne!(all[0], all[1]);
    let name = |d| c_string(&cl.device_bytes(d, CL_DEVICE_NAME).unwrap());
    assert_eq!(name(all[0]), name(all[1]));
    let two = Two::new(cl);
    let got = cl.context_bytes(two.c, CL_CONTEXT_NUM_DEVICES).unwrap();
    assert_eq!(u32_of(&got), 2);
    let _ = two.d;
}

/// Kernels on alternate devices, each waiting for the one before, add to
/// one buffer: every addition is seen by the next, and by reads on
/// either device.
fn kernels_take_turns_on_a_buffer(cl: &Cl) {
    let mut two = Two::new(cl);
    let b = two.buffer(CL_MEM_READ_WRITE, Some(&ramp()));
    let k = two.kernel("add");
    arg(cl, k, 0, &b);
    let mut events = Vec::new();
    for step in 0..6u32 {
        arg(cl, k, 1, &(step + 1));
        let waits: Vec<cl_event> = events.last().copied().into_iter().collect();
        events.push(two.launch(step as usize % 2, k, &waits));
    }
    two.wait(&events[5..]);
    let want: Vec<u32> = ramp().iter().map(|v| v + 21).collect();
    assert_eq!(two.words(0, b), want, "{}: read on the first device", cl.how);
    assert_eq!(two.words(1, b), want, "{}: read on the second device", cl.how);
    release_events(cl, &events);
    release_kernel(cl, k);
}

/// A buffer the kernels only read is copied to the second device once
/// and stays current on both; each device's output is its own.
fn a_read_only_buffer_serves_both_devices(cl: &Cl) {
    let mut two = Two::new(cl);
    let input = two.buffer(CL_MEM_READ_ONLY, Some(&ramp()));
    let outs = [two.buffer(CL_MEM_WRITE_ONLY, None), two.buffer(CL_MEM_WRITE_ONLY, None)];
    let ks = [two.kernel("scaled"), two.kernel("scaled")];
    for round in 0..3u32 {
        let mut events = Vec::new();
        for on in 0..2 {
            arg(cl, ks[on], 0, &input);
            arg(cl, ks[on], 1, &outs[on]);
            arg(cl, ks[on], 2, &(round * 2 + on as u32 + 1));
            events.push(two.launch(on, ks[on], &[]));
        }
        two.wait(&events);
        for (on, &out) in outs.iter().enumerate() {
            let k = round * 2 + on as u32 + 1;
            let want: Vec<u32> = ramp().iter().map(|v| v * k).collect();
            // Read on the other device: the output moves there.
            assert_eq!(two.words(1 - on, out), want, "{}: round {round}", cl.how);
        }
        release_events(cl, &events);
    }
    for k in ks {
        release_kernel(cl, k);
    }
}

/// Writes, fills and copies on one queue, sub-buffers included, read back
/// on the other.
fn transfers_from_either_queue(cl: &Cl) {
    let mut two = Two::new(cl);
    let a = two.buffer(CL_MEM_READ_WRITE, None);
    let b = two.buffer(CL_MEM_READ_WRITE, None);
    cl.write(two.q[1], a, 0, &bytes_of(&ramp()));
    // Copied on the first device, after the write on the second.
    unsafe {
        assert_eq!(
            cl.clEnqueueCopyBuffer.unwrap()(two.q[0], a, b, 0, 0, N * 4, 0, null(), null_mut()),
            CL_SUCCESS
        );
        assert_eq!(cl.clFinish.unwrap()(two.q[0]), CL_SUCCESS);
    }
    assert_eq!(two.words(1, b), ramp(), "{}: copy on the other device", cl.how);
    // A sub-buffer of the second half, filled on the second device.
    let region = cl_buffer_region {
        origin: N * 2,
        size: N * 2,
    };
    let mut err = 1;
    let half = unsafe {
        cl.clCreateSubBuffer.unwrap()(
            b,
            CL_MEM_READ_WRITE,
            CL_BUFFER_CREATE_TYPE_REGION,
            (&region as *const cl_buffer_region).cast(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS);
    let pattern = 0xabcd_1234u32;
    unsafe {
        assert_eq!(
            cl.clEnqueueFillBuffer.unwrap()(
                two.q[1],
                half,
                (&pattern as *const u32).cast(),
                4,
                0,
                N * 2,
                0,
                null(),
                null_mut(),
            ),
            CL_SUCCESS
        );
        assert_eq!(cl.clFinish.unwrap()(two.q[1]), CL_SUCCESS);
    }
    let mut want = ramp();
    want[N / 2..].fill(pattern);
    assert_eq!(two.words(0, b), want, "{}: fill of a sub-buffer", cl.how);
    assert_eq!(
        cl.read(two.q[0], half, 0, 8).chunks_exact(4).map(u32_of).collect::<Vec<_>>(),
        [pattern, pattern]
    );
    unsafe { cl.clReleaseMemObject.unwrap()(half) };
}

/// A mapping for writing made on one device and unmapped on the other
/// lands on the other; a kernel there sees it.
fn maps_on_one_device_unmapped_on_the_other(cl: &Cl) {
    let mut two = Two::new(cl);
    let b = two.buffer(CL_MEM_READ_WRITE, Some(&ramp()));
    let mut err = 1;
    let p = unsafe {
        cl.clEnqueueMapBuffer.unwrap()(
            two.q[0],
            b,
            CL_TRUE,
            CL_MAP_READ | CL_MAP_WRITE,
            0,
            N * 4,
            0,
            null(),
            null_mut(),
            &mut err,
        )
    } as *mut u32;
    assert_eq!(err, CL_SUCCESS);
    let mapped = unsafe { std::slice::from_raw_parts_mut(p, N) };
    assert_eq!(mapped, &ramp()[..], "{}: mapped contents", cl.how);
    mapped.iter_mut().for_each(|v| *v *= 3);
    unsafe {
        assert_eq!(
            cl.clEnqueueUnmapMemObject.unwrap()(two.q[1], b, p.cast(), 0, null(), null_mut()),
            CL_SUCCESS
        );
    }
    let k = two.kernel("add");
    arg(cl, k, 0, &b);
    arg(cl, k, 1, &1u32);
    let e = two.launch(1, k, &[]);
    two.wait(&[e]);
    let want: Vec<u32> = ramp().iter().map(|v| v * 3 + 1).collect();
    assert_eq!(two.words(0, b), want, "{}", cl.how);
    release_events(cl, &[e]);
    release_kernel(cl, k);
}

/// clEnqueueMigrateMemObjects moves a buffer's contents to the queue's
/// device, or with CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED only declares
/// them there, after which a kernel defines them again.
fn migration_moves_or_discards_contents(cl: &Cl) {
    let mut two = Two::new(cl);
    let b = two.buffer(CL_MEM_READ_WRITE, Some(&ramp()));
    let migrate = |on: usize, flags: cl_mem_migration_flags| unsafe {
        assert_eq!(
            cl.clEnqueueMigrateMemObjects.unwrap()(two.q[on], 1, &b, flags, 0, null(), null_mut()),
            CL_SUCCESS
        );
        assert_eq!(cl.clFinish.unwrap()(two.q[on]), CL_SUCCESS);
    };
    migrate(1, 0);
    assert_eq!(two.words(1, b), ramp(), "{}: migrated", cl.how);
    migrate(0, CL_MIGRATE_MEM_OBJECT_HOST);
    migrate(0, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED);
    let k = two.kernel("set");
    arg(cl, k, 0, &b);
    arg(cl, k, 1, &7u32);
    let e = two.launch(0, k, &[]);
    two.wait(&[e]);
    assert_eq!(two.words(1, b), vec![7; N], "{}: defined again", cl.how);
    release_events(cl, &[e]);
    release_kernel(cl, k);
}

/// A command waiting for an event of the other device's queue, held back
/// by a user event there, runs only after it, and sees its result.
fn a_wait_on_another_device_waits_for_its_work(cl: &Cl) {
    let mut two = Two::new(cl);
    let b = two.buffer(CL_MEM_READ_WRITE, Some(&ramp()));
    let mut err = 1;
    let gate = unsafe { cl.clCreateUserEvent.unwrap()(two.c, &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let (k0, k1) = (two.kernel("add"), two.kernel("set"));
    arg(cl, k1, 0, &b);
    arg(cl, k1, 1, &5u32);
    let first = two.launch(1, k1, &[gate]);
    arg(cl, k0, 0, &b);
    arg(cl, k0, 1, &1u32);
    let second = two.launch(0, k0, &[first]);
    unsafe { cl.clFlush.unwrap()(two.q[0]) };
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(cl.event_status(second), CL_QUEUED as cl_int, "{}", cl.how);
    unsafe { assert_eq!(cl.clSetUserEventStatus.unwrap()(gate, CL_COMPLETE as cl_int), CL_SUCCESS) };
    two.wait(&[second]);
    assert_eq!(cl.event_status(first), CL_COMPLETE as cl_int);
    assert_eq!(two.words(0, b), vec![6; N], "{}", cl.how);
    release_events(cl, &[gate, first, second]);
    release_kernel(cl, k0);
    release_kernel(cl, k1);
}

/// Each device writes its own half of one buffer through a sub-buffer, at
/// the same time (as the specification allows for sub-buffers that do not
/// overlap); the whole buffer then holds both halves on either device.
fn disjoint_sub_buffers_written_at_once(cl: &Cl) {
    let mut two = Two::new(cl);
    for initialised in [false, true] {
        let init = ramp();
        let b = two.buffer(CL_MEM_READ_WRITE, initialised.then_some(&init[..]));
        let halves: Vec<cl_mem> = (0..2)
            .map(|i| {
                let region = cl_buffer_region {
                    origin: i * N * 2,
                    size: N * 2,
                };
                let mut err = 1;
                let sub = unsafe {
                    cl.clCreateSubBuffer.unwrap()(
                        b,
                        CL_MEM_READ_WRITE,
                        CL_BUFFER_CREATE_TYPE_REGION,
                        (&region as *const cl_buffer_region).cast(),
                        &mut err,
                    )
                };
                assert_eq!(err, CL_SUCCESS);
                sub
            })
            .collect();
        // Added to where the buffer was defined, set where it was not.
        let name = if initialised { "add" } else { "set" };
        let ks = [two.kernel(name), two.kernel(name)];
        let mut events = Vec::new();
        for on in 0..2 {
            arg(cl, ks[on], 0, &halves[on]);
            arg(cl, ks[on], 1, &(100 * (on as u32 + 1)));
            let mut ev = null_mut();
            let half = N / 2;
            let r = unsafe {
                cl.clEnqueueNDRangeKernel.unwrap()(
                    two.q[on],
                    ks[on],
                    1,
                    null(),
                    &half,
                    null(),
                    0,
                    null(),
                    &mut ev,
                )
            };
            assert_eq!(r, CL_SUCCESS);
            unsafe { cl.clFlush.unwrap()(two.q[on]) };
            events.push(ev);
        }
        two.wait(&events);
        let base = |i: usize| if initialised { i as u32 } else { 0 };
        let want: Vec<u32> = (0..N)
            .map(|i| base(i) + if i < N / 2 { 100 } else { 200 })
            .collect();
        for on in [1, 0] {
            assert_eq!(two.words(on, b), want, "{}: read on device {on}", cl.how);
        }
        release_events(cl, &events);
        for (k, h) in ks.into_iter().zip(halves) {
            release_kernel(cl, k);
            unsafe { cl.clReleaseMemObject.unwrap()(h) };
        }
    }
}

const IMAGE_SOURCE: &str = r#"
kernel void bump(read_only image2d_t src, write_only image2d_t dst, uint v) {
    int2 at = (int2)(get_global_id(0), get_global_id(1));
    write_imageui(dst, at, read_imageui(src, at) + v);
}
kernel void texels_in(read_only image1d_buffer_t src, global uint *out) {
    int i = get_global_id(0);
    out[i] = read_imageui(src, i).x;
}
kernel void texels_out(write_only image1d_buffer_t dst, uint v) {
    int i = get_global_id(0);
    write_imageui(dst, i, (uint4)(i + v, 0, 0, 0));
}
"#;

const W: usize = 32;
const H: usize = 16;

impl Two<'_> {
    /// A kernel of [`IMAGE_SOURCE`], built for both devices.
    fn image_kernel(&self, name: &str) -> cl_kernel {
        let cl = self.cl;
        let src = CString::new(IMAGE_SOURCE).unwrap();
        let mut ptr = src.as_ptr();
        let mut err = 1;
        let p = unsafe { cl.clCreateProgramWithSource.unwrap()(self.c, 1, &mut ptr, null(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        let r = unsafe { cl.clBuildProgram.unwrap()(p, 0, null(), null(), None, null_mut()) };
        assert_eq!(r, CL_SUCCESS, "{}: image kernels", cl.how);
        let n = CString::new(name).unwrap();
        let k = unsafe { cl.clCreateKernel.unwrap()(p, n.as_ptr(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        unsafe { cl.clReleaseProgram.unwrap()(p) };
        k
    }

    /// A W × H image of four 8-bit unsigned channels, with `texels`.
    fn image(&mut self, texels: Option<&[u8]>) -> cl_mem {
        let format = cl_image_format {
            image_channel_order: CL_RGBA,
            image_channel_data_type: CL_UNSIGNED_INT8,
        };
        let desc = image_desc(CL_MEM_OBJECT_IMAGE2D, W, H, 0, 0);
        let (flags, host) = match texels {
            Some(t) => (CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, t.as_ptr() as *mut c_void),
            None => (CL_MEM_READ_WRITE, null_mut()),
        };
        let mut err = 1;
        let i = unsafe { self.cl.clCreateImage.unwrap()(self.c, flags, &format, &desc, host, &mut err) };
        assert_eq!(err, CL_SUCCESS, "{}: image", self.cl.how);
        self.mems.push(i);
        i
    }

    /// The texels of a W × H image, read on device `on`.
    fn texels(&self, on: usize, image: cl_mem) -> Vec<u8> {
        let mut out = vec![0u8; W * H * 4];
        let (origin, region) = ([0usize; 3], [W, H, 1]);
        let r = unsafe {
            self.cl.clEnqueueReadImage.unwrap()(
                self.q[on],
                image,
                CL_TRUE,
                origin.as_ptr(),
                region.as_ptr(),
                0,
                0,
                out.as_mut_ptr().cast(),
                0,
                null(),
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: read image on device {on}", self.cl.how);
        out
    }

    /// Runs the 2D kernel `k` over the image on device `on`, to completion.
    fn launch_2d(&self, on: usize, k: cl_kernel) {
        let global = [W, H];
        let mut ev = null_mut();
        let r = unsafe {
            self.cl.clEnqueueNDRangeKernel.unwrap()(
                self.q[on],
                k,
                2,
                null(),
                global.as_ptr(),
                null(),
                0,
                null(),
                &mut ev,
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: 2D launch on device {on}", self.cl.how);
        self.wait(&[ev]);
        release_events(self.cl, &[ev]);
    }
}

fn pattern(shift: u8) -> Vec<u8> {
    (0..W * H * 4).map(|i| (i % 199) as u8 + shift).collect()
}

/// Kernels on either device read and write images whose texels were
/// last written on the other; writes, copies, maps and unmaps on either
/// queue see them.
fn an_image_moves_between_devices(cl: &Cl) {
    let mut two = Two::new(cl);
    let a = two.image(Some(&pattern(0)));
    let b = two.image(None);
    let k = two.image_kernel("bump");
    arg(cl, k, 0, &a);
    arg(cl, k, 1, &b);
    arg(cl, k, 2, &1u32);
    two.launch_2d(1, k);
    assert_eq!(two.texels(0, b), pattern(1), "{}: written on the second device", cl.how);
    arg(cl, k, 0, &b);
    arg(cl, k, 1, &a);
    arg(cl, k, 2, &2u32);
    two.launch_2d(0, k);
    assert_eq!(two.texels(1, a), pattern(3), "{}: written on the first device", cl.how);
    // A row written on the second device, the whole read on the first.
    let row = [0xeeu8; W * 4];
    let (origin, region) = ([0usize, 5, 0], [W, 1, 1]);
    unsafe {
        assert_eq!(
            cl.clEnqueueWriteImage.unwrap()(
                two.q[1],
                a,
                CL_TRUE,
                origin.as_ptr(),
                region.as_ptr(),
                0,
                0,
                row.as_ptr().cast(),
                0,
                null(),
                null_mut(),
            ),
            CL_SUCCESS
        );
    }
    let mut want = pattern(3);
    want[5 * W * 4..6 * W * 4].fill(0xee);
    assert_eq!(two.texels(0, a), want, "{}: a row written on the second device", cl.how);
    // Copied on the second device; mapped on the first and unmapped on
    // the second after a change.
    let (zero, whole) = ([0usize; 3], [W, H, 1]);
    let mut err = 1;
    let mut pitch = 0;
    let p = unsafe {
        assert_eq!(
            cl.clEnqueueCopyImage.unwrap()(
                two.q[1],
                a,
                b,
                zero.as_ptr(),
                zero.as_ptr(),
                whole.as_ptr(),
                0,
                null(),
                null_mut(),
            ),
            CL_SUCCESS
        );
        assert_eq!(cl.clFinish.unwrap()(two.q[1]), CL_SUCCESS);
        cl.clEnqueueMapImage.unwrap()(
            two.q[0],
            b,
            CL_TRUE,
            CL_MAP_READ | CL_MAP_WRITE,
            zero.as_ptr(),
            whole.as_ptr(),
            &mut pitch,
            null_mut(),
            0,
            null(),
            null_mut(),
            &mut err,
        )
    } as *mut u8;
    assert_eq!(err, CL_SUCCESS);
    let rows: Vec<&mut [u8]> = (0..H)
        .map(|y| unsafe { std::slice::from_raw_parts_mut(p.add(y * pitch), W * 4) })
        .collect();
    let mapped: Vec<u8> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    assert_eq!(mapped, want, "{}: mapped copy", cl.how);
    for r in rows {
        r.iter_mut().for_each(|v| *v = v.wrapping_add(10));
    }
    unsafe {
        assert_eq!(
            cl.clEnqueueUnmapMemObject.unwrap()(two.q[1], b, p.cast(), 0, null(), null_mut()),
            CL_SUCCESS
        );
        assert_eq!(cl.clFinish.unwrap()(two.q[1]), CL_SUCCESS);
    }
    let changed: Vec<u8> = want.iter().map(|v| v.wrapping_add(10)).collect();
    assert_eq!(two.texels(0, b), changed, "{}: unmapped on the second device", cl.how);
    release_kernel(cl, k);
}

/// A 1D image buffer shares its buffer's bytes on every device: written
/// through the buffer on one device and read through the image on the
/// other, and the other way round.
fn images_from_buffers_follow_their_buffer(cl: &Cl) {
    let mut two = Two::new(cl);
    let b = two.buffer(CL_MEM_READ_WRITE, Some(&ramp()));
    let out = two.buffer(CL_MEM_READ_WRITE, None);
    let format = cl_image_format {
        image_channel_order: CL_R,
        image_channel_data_type: CL_UNSIGNED_INT32,
    };
    let mut desc = image_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, N, 0, 0, 0);
    desc.buffer = b;
    let mut err = 1;
    let image =
        unsafe { cl.clCreateImage.unwrap()(two.c, CL_MEM_READ_WRITE, &format, &desc, null_mut(), &mut err) };
    assert_eq!(err, CL_SUCCESS, "{}: 1D image buffer", cl.how);
    two.mems.push(image);
    let k = two.image_kernel("texels_in");
    arg(cl, k, 0, &image);
    arg(cl, k, 1, &out);
    let e = two.launch(1, k, &[]);
    two.wait(&[e]);
    assert_eq!(two.words(0, out), ramp(), "{}: read through the image", cl.how);
    release_events(cl, &[e]);
    let w = two.image_kernel("texels_out");
    arg(cl, w, 0, &image);
    arg(cl, w, 1, &7u32);
    let e = two.launch(1, w, &[]);
    two.wait(&[e]);
    let want: Vec<u32> = ramp().iter().map(|v| v + 7).collect();
    assert_eq!(two.words(0, b), want, "{}: written through the image", cl.how);
    release_events(cl, &[e]);
    release_kernel(cl, k);
    release_kernel(cl, w);
}

/// Objects compiled for the second device only link for it (and a kernel
/// of the result runs there); objects compiled for different devices do
/// not link for both.
fn programs_compiled_and_linked_for_one_device_of_two(cl: &Cl) {
    let mut two = Two::new(cl);
    let b = two.buffer(CL_MEM_READ_WRITE, Some(&ramp()));
    let c = two.c;
    let compile = |src: &str, devices: &[cl_device_id]| {
        let src = CString::new(src).unwrap();
        let mut ptr = src.as_ptr();
        let mut err = 1;
        let p = unsafe { cl.clCreateProgramWithSource.unwrap()(c, 1, &mut ptr, null(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        let r = unsafe {
            cl.clCompileProgram.unwrap()(
                p,
                devices.len() as cl_uint,
                devices.as_ptr(),
                null(),
                0,
                null(),
                null_mut(),
                None,
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: compile", cl.how);
        p
    };
    let link = |devices: &[cl_device_id], inputs: &[cl_program]| {
        let mut err = 1;
        let p = unsafe {
            cl.clLinkProgram.unwrap()(
                c,
                devices.len() as cl_uint,
                devices.as_ptr(),
                null(),
                inputs.len() as cl_uint,
                inputs.as_ptr(),
                None,
                null_mut(),
                &mut err,
            )
        };
        (p, err)
    };
    const HELPER: &str = "uint triple(uint v) { return 3 * v; }";
    const USER: &str = "uint triple(uint v);\nkernel void tripled(global uint *b) { b[get_global_id(0)] = triple(b[get_global_id(0)]); }";
    let second = [two.d[1]];
    let inputs = [compile(HELPER, &second), compile(USER, &second)];
    let (program, err) = link(&second, &inputs);
    assert_eq!(err, CL_SUCCESS, "{}: link for the second device", cl.how);
    let mut err = 1;
    let name = CString::new("tripled").unwrap();
    let k = unsafe { cl.clCreateKernel.unwrap()(program, name.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    arg(cl, k, 0, &b);
    let e = two.launch(1, k, &[]);
    two.wait(&[e]);
    let want: Vec<u32> = ramp().iter().map(|v| v * 3).collect();
    assert_eq!(two.words(0, b), want, "{}", cl.how);
    release_events(cl, &[e]);
    release_kernel(cl, k);
    // Compiled for one device each: linking for both is invalid.
    let apart = [compile(HELPER, &[two.d[0]]), compile(USER, &second)];
    let (none, err) = link(&two.d, &apart);
    assert_eq!(err, CL_INVALID_OPERATION, "{}: inputs for different devices", cl.how);
    assert!(none.is_null());
    unsafe {
        for p in inputs.into_iter().chain(apart).chain([program]) {
            cl.clReleaseProgram.unwrap()(p);
        }
    }
}
