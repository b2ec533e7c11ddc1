//! Bad input to the buffer, command-queue and event API, through the ICD
//! loader and directly.
//!
//! Every call here breaks one rule of the OpenCL 3.0 specification and must
//! fail with the error code the specification gives for that rule, creating
//! and enqueuing nothing: afterwards the buffers it touched still hold what
//! they held, and a valid write and read of them still round-trip.
//!
//! Covered: clCreateBuffer and clCreateBufferWithProperties (flags, host
//! pointer, size, properties, context), clCreateSubBuffer (region, alignment,
//! nesting, flags against the parent's), clEnqueueRead/Write/Copy/FillBuffer
//! and their Rect forms (bounds, pointers, pitches, patterns, overlap, host
//! access flags, queue, buffer and context checks, event wait lists),
//! clEnqueueMapBuffer and clEnqueueUnmapMemObject,
//! clCreateCommandQueue(WithProperties), clGetCommandQueueInfo,
//! clWaitForEvents, clSetUserEventStatus, clSetEventCallback,
//! clGetEventProfilingInfo, and blocking commands whose wait list holds a
//! failed event.
//!
//! Commands that must be rejected are enqueued non-blocking behind a user
//! event that stays unset while they could run (the fixture's gate): should
//! one be accepted by mistake, its test fails on the returned code and the
//! bad command never reaches the device, so one bug cannot bring down the
//! whole test process.

mod common;

use std::ffi::c_void;
use std::fmt::Display;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use opencl_sys::*;

both_ways!(
    // clCreateBuffer, clCreateBufferWithProperties
    create_buffer_rejects_conflicting_flags,
    create_buffer_checks_host_ptr_against_flags,
    create_buffer_checks_size,
    create_buffer_checks_properties_and_context,
    // clCreateSubBuffer
    sub_buffer_region_must_fit,
    sub_buffer_origin_alignment_and_nesting,
    sub_buffer_flags_must_agree_with_parent,
    // clEnqueueReadBuffer, clEnqueueWriteBuffer, and what all commands share
    read_write_bounds_and_pointers,
    zero_sized_transfers_are_not_errors,
    host_access_flags_are_enforced,
    bad_queue_buffer_or_context,
    event_wait_lists_are_checked,
    // clEnqueueCopyBuffer, clEnqueueFillBuffer
    copy_bounds_and_overlap,
    copy_overlap_between_sub_buffers,
    fill_pattern_checks,
    // clEnqueueRead/Write/CopyBufferRect
    rect_region_and_pitch_checks,
    rect_bounds,
    rect_bounds_that_overflow,
    copy_rect_overlap,
    // clEnqueueMapBuffer, clEnqueueUnmapMemObject
    map_checks,
    overlapping_write_maps,
    unmap_checks,
    // command queues
    queue_properties_with_properties,
    queue_properties_legacy,
    queue_device_and_context,
    queue_info_checks,
    // events
    wait_for_events_checks,
    user_event_status_checks,
    event_callback_checks,
    profiling_info_not_available,
    blocking_commands_with_failed_wait_list,
    blocking_read_fails_when_its_wait_list_fails_later,
);

// ---------------------------------------------------------------------------
// Support
// ---------------------------------------------------------------------------

/// Asserts that every call of a group returned `want`.
#[track_caller]
fn expect(cl: &Cl, want: cl_int, got: &[cl_int], what: impl Display) {
    let how = cl.how;
    let all = got.iter().all(|&g| g == want);
    assert!(all, "{how}: {what}: want {want}, got {got:?}");
}

#[track_caller]
fn ok(cl: &Cl, got: cl_int, what: impl Display) {
    expect(cl, CL_SUCCESS, &[got], what);
}

/// Asserts that no case of a table went wrong; `wrong` lists those that did.
#[track_caller]
fn none_wrong(cl: &Cl, wrong: Vec<String>) {
    let (how, wrong) = (cl.how, wrong.join("\n"));
    assert!(wrong.is_empty(), "{how}:\n{wrong}");
}

/// Asserts that a call that creates something returned it exactly when it
/// reported success.
#[track_caller]
fn agree<T>(cl: &Cl, made: *mut T, err: cl_int) {
    let how = cl.how;
    let agree = made.is_null() == (err != CL_SUCCESS);
    assert!(agree, "{how}: got {made:?} and {err}");
}

/// Bytes `i * 7 + 3`: every fixture buffer starts out holding these, so a
/// command that should have been rejected but ran shows up.
fn pattern(size: usize) -> Vec<u8> {
    (0..size).map(|i| (i * 7 + 3) as u8).collect()
}

#[track_caller]
fn untouched(cl: &Cl, host: &[u8]) {
    let how = cl.how;
    assert!(host.iter().all(|&x| x == 0), "{how}: host memory written");
}

fn release_mem(cl: &Cl, m: cl_mem) {
    ok(cl, unsafe { cl.clReleaseMemObject.unwrap()(m) }, "release");
}

fn release_event(cl: &Cl, e: cl_event) {
    ok(cl, unsafe { cl.clReleaseEvent.unwrap()(e) }, "release");
}

fn release_queue(cl: &Cl, q: cl_command_queue) {
    let r = unsafe { cl.clReleaseCommandQueue.unwrap()(q) };
    ok(cl, r, "release");
}

fn release_context(cl: &Cl, c: cl_context) {
    ok(cl, unsafe { cl.clReleaseContext.unwrap()(c) }, "release");
}

fn set_status(cl: &Cl, e: cl_event, status: cl_int) -> cl_int {
    unsafe { cl.clSetUserEventStatus.unwrap()(e, status) }
}

fn wait_for(cl: &Cl, events: &[cl_event]) -> cl_int {
    let n = events.len() as cl_uint;
    unsafe { cl.clWaitForEvents.unwrap()(n, events.as_ptr()) }
}

fn finish(cl: &Cl, q: cl_command_queue) {
    ok(cl, unsafe { cl.clFinish.unwrap()(q) }, "clFinish");
}

fn mem_info(cl: &Cl, m: cl_mem, param: cl_mem_info) -> Vec<u8> {
    query(|size, value, size_ret| unsafe {
        cl.clGetMemObjectInfo.unwrap()(m, param, size, value, size_ret)
    })
    .expect("clGetMemObjectInfo")
}

fn mem_size(cl: &Cl, m: cl_mem) -> usize {
    usize_of(&mem_info(cl, m, CL_MEM_SIZE))
}

fn mem_flags(cl: &Cl, m: cl_mem) -> cl_mem_flags {
    u64_of(&mem_info(cl, m, CL_MEM_FLAGS))
}

fn map_count(cl: &Cl, m: cl_mem) -> u32 {
    u32_of(&mem_info(cl, m, CL_MEM_MAP_COUNT))
}

/// CL_DEVICE_MEM_BASE_ADDR_ALIGN of the default device, in bytes.
fn base_align(cl: &Cl) -> usize {
    let bits = cl.device_bytes(cl.device(), CL_DEVICE_MEM_BASE_ADDR_ALIGN);
    u32_of(&bits.unwrap()) as usize / 8
}

/// One side of a rectangular transfer: its origin and its row and slice
/// pitches (0 asks for the defaults).
#[derive(Clone, Copy, Debug, Default)]
struct Side {
    origin: [usize; 3],
    row: usize,
    slice: usize,
}

fn at(origin: [usize; 3], row: usize, slice: usize) -> Side {
    Side { origin, row, slice }
}

/// The default side: origin 0, default pitches.
const O: Side = Side {
    origin: [0; 3],
    row: 0,
    slice: 0,
};

/// How commands are enqueued: the queue, blocking or not, the wait list and
/// where the event goes, all passed to OpenCL as they are.
#[derive(Clone, Copy)]
struct Enq<'a> {
    cl: &'a Cl,
    q: cl_command_queue,
    blocking: cl_bool,
    n: cl_uint,
    list: *const cl_event,
    event: *mut cl_event,
}

impl<'a> Enq<'a> {
    /// Non-blocking, no wait list, no event.
    fn new(cl: &'a Cl, q: cl_command_queue) -> Self {
        let (list, event) = (null(), null_mut());
        let (blocking, n) = (CL_FALSE, 0);
        Enq {
            cl,
            q,
            blocking,
            n,
            list,
            event,
        }
    }

    fn blocking(mut self) -> Self {
        self.blocking = CL_TRUE;
        self
    }

    /// The wait list, as raw as the application passes it.
    fn waits(mut self, n: cl_uint, list: *const cl_event) -> Self {
        (self.n, self.list) = (n, list);
        self
    }

    fn after(self, list: &[cl_event]) -> Self {
        self.waits(list.len() as cl_uint, list.as_ptr())
    }

    fn event_to(mut self, event: &mut cl_event) -> Self {
        self.event = event;
        self
    }

    fn read(&self, b: cl_mem, at: usize, size: usize, ptr: *mut c_void) -> cl_int {
        let (q, bl, n, l, e) = (self.q, self.blocking, self.n, self.list, self.event);
        let f = self.cl.clEnqueueReadBuffer.unwrap();
        unsafe { f(q, b, bl, at, size, ptr, n, l, e) }
    }

    fn write(&self, b: cl_mem, at: usize, size: usize, ptr: *const c_void) -> cl_int {
        let (q, bl, n, l, e) = (self.q, self.blocking, self.n, self.list, self.event);
        let f = self.cl.clEnqueueWriteBuffer.unwrap();
        unsafe { f(q, b, bl, at, size, ptr, n, l, e) }
    }

    /// Copies `size` bytes from `src` at `from` to `dst` at `to`.
    fn copy(&self, src: cl_mem, dst: cl_mem, from: usize, to: usize, size: usize) -> cl_int {
        let (q, n, l, e) = (self.q, self.n, self.list, self.event);
        let f = self.cl.clEnqueueCopyBuffer.unwrap();
        unsafe { f(q, src, dst, from, to, size, n, l, e) }
    }

    /// Fills `size` bytes at `at` with the `len` bytes at `pat`.
    fn fill(&self, b: cl_mem, pat: *const c_void, len: usize, at: usize, size: usize) -> cl_int {
        let (q, n, l, e) = (self.q, self.n, self.list, self.event);
        let f = self.cl.clEnqueueFillBuffer.unwrap();
        unsafe { f(q, b, pat, len, at, size, n, l, e) }
    }

    /// A rectangular read of `b` (side `bs`) to `ptr` (side `hs`).
    fn read_rect(&self, b: cl_mem, r: [usize; 3], bs: Side, hs: Side, ptr: *mut c_void) -> cl_int {
        let (bo, ho) = (bs.origin.as_ptr(), hs.origin.as_ptr());
        let (q, bl, n, l, e) = (self.q, self.blocking, self.n, self.list, self.event);
        let (br, bsl, hr, hsl) = (bs.row, bs.slice, hs.row, hs.slice);
        let f = self.cl.clEnqueueReadBufferRect.unwrap();
        unsafe { f(q, b, bl, bo, ho, r.as_ptr(), br, bsl, hr, hsl, ptr, n, l, e) }
    }

    /// A rectangular write of `b` (side `bs`) from `ptr` (side `hs`).
    fn write_rect(&self, b: cl_mem, r: [usize; 3], bs: Side, hs: Side, ptr: *mut c_void) -> cl_int {
        let (bo, ho) = (bs.origin.as_ptr(), hs.origin.as_ptr());
        let (q, bl, n, l, e) = (self.q, self.blocking, self.n, self.list, self.event);
        let (br, bsl, hr, hsl) = (bs.row, bs.slice, hs.row, hs.slice);
        let f = self.cl.clEnqueueWriteBufferRect.unwrap();
        unsafe { f(q, b, bl, bo, ho, r.as_ptr(), br, bsl, hr, hsl, ptr, n, l, e) }
    }

    /// A rectangular copy from `src` (side `s`) to `dst` (side `d`).
    fn copy_rect(&self, src: cl_mem, dst: cl_mem, r: [usize; 3], s: Side, d: Side) -> cl_int {
        let (so, dof) = (s.origin.as_ptr(), d.origin.as_ptr());
        let (q, n, l, e) = (self.q, self.n, self.list, self.event);
        let (sr, ss, dr, ds) = (s.row, s.slice, d.row, d.slice);
        let f = self.cl.clEnqueueCopyBufferRect.unwrap();
        unsafe { f(q, src, dst, so, dof, r.as_ptr(), sr, ss, dr, ds, n, l, e) }
    }

    /// clEnqueueMapBuffer: the pointer and the code, checked to agree.
    fn map_ptr(
        &self,
        b: cl_mem,
        flags: cl_map_flags,
        at: usize,
        size: usize,
    ) -> (*mut c_void, cl_int) {
        let (q, bl, n, l, e) = (self.q, self.blocking, self.n, self.list, self.event);
        let mut err = 1;
        let f = self.cl.clEnqueueMapBuffer.unwrap();
        let p = unsafe { f(q, b, bl, flags, at, size, n, l, e, &mut err) };
        agree(self.cl, p, err);
        (p, err)
    }

    fn map(&self, b: cl_mem, flags: cl_map_flags, at: usize, size: usize) -> cl_int {
        self.map_ptr(b, flags, at, size).1
    }

    fn unmap(&self, b: cl_mem, ptr: *mut c_void) -> cl_int {
        let (q, n, l, e) = (self.q, self.n, self.list, self.event);
        unsafe { self.cl.clEnqueueUnmapMemObject.unwrap()(q, b, ptr, n, l, e) }
    }

    fn marker(&self) -> cl_int {
        let (q, n, l, e) = (self.q, self.n, self.list, self.event);
        unsafe { self.cl.clEnqueueMarkerWithWaitList.unwrap()(q, n, l, e) }
    }

    fn barrier(&self) -> cl_int {
        let (q, n, l, e) = (self.q, self.n, self.list, self.event);
        unsafe { self.cl.clEnqueueBarrierWithWaitList.unwrap()(q, n, l, e) }
    }
}

/// A context with an in-order queue, the gate, and the buffers a test made.
struct Fx<'a> {
    cl: &'a Cl,
    c: cl_context,
    q: cl_command_queue,
    /// A user event left unset until [`Fx::done`]: the wait list of every
    /// command that must be rejected.
    gate: cl_event,
    mems: Vec<cl_mem>,
}

impl<'a> Fx<'a> {
    fn new(cl: &'a Cl) -> Self {
        let c = cl.context();
        let (q, gate) = (cl.queue(c, 0), cl.user_event(c));
        let mems = Vec::new();
        Fx {
            cl,
            c,
            q,
            gate,
            mems,
        }
    }

    /// Commands on `q` that must be rejected: non-blocking, behind the gate.
    fn on(&self, q: cl_command_queue) -> Enq<'a> {
        Enq::new(self.cl, q).waits(1, &self.gate)
    }

    /// Commands on the fixture's queue that must be rejected.
    fn bad(&self) -> Enq<'a> {
        self.on(self.q)
    }

    /// Valid commands on the fixture's queue, right away.
    fn now(&self) -> Enq<'a> {
        Enq::new(self.cl, self.q)
    }

    /// A buffer of `size` bytes holding `pattern(size)`.
    fn buffer(&mut self, flags: cl_mem_flags, size: usize) -> cl_mem {
        let init = pattern(size);
        let (host, flags) = (init.as_ptr() as *mut c_void, flags | CL_MEM_COPY_HOST_PTR);
        let b = self.cl.buffer(self.c, flags, size, host);
        self.mems.push(b);
        b
    }

    /// A sub-buffer that must be created.
    fn sub(&mut self, parent: cl_mem, flags: cl_mem_flags, at: usize, size: usize) -> cl_mem {
        let (s, err) = sub_buffer(self.cl, parent, flags, at, size);
        ok(self.cl, err, "clCreateSubBuffer");
        self.mems.push(s);
        s
    }

    fn copy_now(&self, src: cl_mem, dst: cl_mem, from: usize, to: usize, size: usize) {
        ok(self.cl, self.now().copy(src, dst, from, to, size), "copy");
    }

    fn fill_now(&self, b: cl_mem, pat: &[u8], at: usize, size: usize) {
        let (p, len) = (pat.as_ptr().cast(), pat.len());
        ok(self.cl, self.now().fill(b, p, len, at, size), "fill");
    }

    fn map_now(&self, b: cl_mem, flags: cl_map_flags, at: usize, size: usize) -> *mut c_void {
        let (p, err) = self.now().blocking().map_ptr(b, flags, at, size);
        ok(self.cl, err, "map");
        p
    }

    fn unmap_now(&self, b: cl_mem, ptr: *mut c_void) {
        ok(self.cl, self.now().unmap(b, ptr), "unmap");
        finish(self.cl, self.q);
    }

    /// The bytes of `b`, copied out through a scratch buffer so that buffers
    /// the host may not read can be looked at too.
    fn contents(&self, b: cl_mem) -> Vec<u8> {
        let (cl, size) = (self.cl, mem_size(self.cl, b));
        let scratch = cl.buffer(self.c, CL_MEM_READ_WRITE, size, null_mut());
        self.copy_now(b, scratch, 0, 0, size);
        let out = cl.read(self.q, scratch, 0, size);
        release_mem(cl, scratch);
        out
    }

    /// After rejected calls on `b`, a buffer from [`Fx::buffer`]: it still
    /// holds what it was created with, and new data goes in and comes back
    /// out (by write and read where the host may, by copy where it may not).
    fn check(&self, b: cl_mem) {
        let (cl, how) = (self.cl, self.cl.how);
        let (size, flags) = (mem_size(cl, b), mem_flags(cl, b));
        let was = self.contents(b);
        assert!(
            was == pattern(size),
            "{how}: a rejected command changed the buffer"
        );
        let data: Vec<u8> = was.iter().map(|x| !x).collect();
        if flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS) == 0 {
            cl.write(self.q, b, 0, &data);
        } else {
            let src = data.as_ptr() as *mut c_void;
            let src = cl.buffer(self.c, CL_MEM_COPY_HOST_PTR, size, src);
            self.copy_now(src, b, 0, 0, size);
            release_mem(cl, src);
        }
        let back = if flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS) == 0 {
            cl.read(self.q, b, 0, size)
        } else {
            self.contents(b)
        };
        assert!(
            back == data,
            "{how}: a valid write and read no longer round-trip"
        );
    }

    /// Opens the gate (if the test has not) and releases everything.
    fn done(self) {
        let cl = self.cl;
        if cl.event_status(self.gate) == CL_SUBMITTED {
            ok(cl, set_status(cl, self.gate, CL_COMPLETE), "open the gate");
        }
        finish(cl, self.q);
        for &m in self.mems.iter().rev() {
            release_mem(cl, m);
        }
        release_event(cl, self.gate);
        release_queue(cl, self.q);
        release_context(cl, self.c);
    }
}

// ---------------------------------------------------------------------------
// clCreateBuffer, clCreateBufferWithProperties
// ---------------------------------------------------------------------------

/// The code clCreateBuffer gives (a buffer it makes is released), checked to
/// be the same through clCreateBufferWithProperties without properties and
/// with an empty list.
fn create(cl: &Cl, c: cl_context, flags: cl_mem_flags, size: usize, host: *mut c_void) -> cl_int {
    let empty: [cl_mem_properties; 1] = [0];
    let mut codes = Vec::new();
    for props in [None, Some(null()), Some(empty.as_ptr())] {
        let mut err = 1;
        let with = cl.clCreateBufferWithProperties.unwrap();
        let b = match props {
            None => unsafe { cl.clCreateBuffer.unwrap()(c, flags, size, host, &mut err) },
            Some(p) => unsafe { with(c, p, flags, size, host, &mut err) },
        };
        agree(cl, b, err);
        if !b.is_null() {
            release_mem(cl, b);
        }
        codes.push(err);
    }
    let how = cl.how;
    let same = codes.iter().all(|&x| x == codes[0]);
    assert!(same, "{how}: the entry points disagree: {codes:?}");
    codes[0]
}

fn create_buffer_rejects_conflicting_flags(cl: &Cl) {
    let c = cl.context();
    let mut host = [0u8; 64];
    let (h, n): (*mut c_void, _) = (host.as_mut_ptr().cast(), null_mut());
    let (rw, ro, wo) = (CL_MEM_READ_WRITE, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY);
    let (use_, alloc, copy) = (
        CL_MEM_USE_HOST_PTR,
        CL_MEM_ALLOC_HOST_PTR,
        CL_MEM_COPY_HOST_PTR,
    );
    let (hro, hwo, hna) = (
        CL_MEM_HOST_READ_ONLY,
        CL_MEM_HOST_WRITE_ONLY,
        CL_MEM_HOST_NO_ACCESS,
    );
    for (flags, ptr) in [
        (ro | wo, n),
        (rw | ro, n),
        (rw | wo, n),
        (use_ | copy, h),
        (use_ | alloc, h),
        (hro | hna, n),
        (hwo | hna, n),
        (hwo | hro, n),
        (1 << 40, n),
        (rw | (1 << 63), n),
    ] {
        let got = create(cl, c, flags, 64, ptr);
        let what = format_args!("flags {flags:#x}");
        expect(cl, CL_INVALID_VALUE, &[got], what);
    }
    // Combinations the specification allows.
    for (flags, ptr) in [
        (0, n),
        (alloc | copy, h),
        (ro | hna, n),
        (wo | hro | use_, h),
    ] {
        let got = create(cl, c, flags, 64, ptr);
        expect(cl, CL_SUCCESS, &[got], format_args!("flags {flags:#x}"));
    }
    // errcode_ret may be null: the failure shows as a null buffer only.
    let b = unsafe { cl.clCreateBuffer.unwrap()(c, ro | wo, 64, n, null_mut()) };
    assert!(b.is_null());
    release_context(cl, c);
}

fn create_buffer_checks_host_ptr_against_flags(cl: &Cl) {
    let c = cl.context();
    let mut host = [0u8; 64];
    let (h, n): (*mut c_void, _) = (host.as_mut_ptr().cast(), null_mut());
    let (use_, alloc, copy) = (
        CL_MEM_USE_HOST_PTR,
        CL_MEM_ALLOC_HOST_PTR,
        CL_MEM_COPY_HOST_PTR,
    );
    let bad = CL_INVALID_HOST_PTR;
    for (flags, ptr, want) in [
        (use_, n, bad),
        (copy, n, bad),
        (alloc | copy, n, bad),
        (0, h, bad),
        (CL_MEM_READ_ONLY, h, bad),
        (alloc, h, bad),
        (CL_MEM_HOST_NO_ACCESS, h, bad),
        (use_, h, CL_SUCCESS),
        (copy, h, CL_SUCCESS),
        (alloc, n, CL_SUCCESS),
    ] {
        let got = create(cl, c, flags, 64, ptr);
        let what = format_args!("flags {flags:#x}, host_ptr {ptr:?}");
        expect(cl, want, &[got], what);
    }
    release_context(cl, c);
}

fn create_buffer_checks_size(cl: &Cl) {
    let c = cl.context();
    let max = cl.device_bytes(cl.device(), CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    let max = u64_of(&max.unwrap());
    let mut host = [0u8; 64];
    let (h, n): (*mut c_void, _) = (host.as_mut_ptr().cast(), null_mut());
    let bad = CL_INVALID_BUFFER_SIZE;
    let got = [
        create(cl, c, 0, 0, n),
        create(cl, c, CL_MEM_COPY_HOST_PTR, 0, h),
    ];
    expect(cl, bad, &got, "size 0, without and with data");
    if let Some(above) = max.checked_add(1).and_then(|x| usize::try_from(x).ok()) {
        let what = format_args!("CL_DEVICE_MAX_MEM_ALLOC_SIZE ({max}) + 1");
        expect(cl, bad, &[create(cl, c, 0, above, n)], what);
    }
    expect(cl, bad, &[create(cl, c, 0, usize::MAX, n)], "SIZE_MAX");
    expect(cl, CL_SUCCESS, &[create(cl, c, 0, 1, n)], "size 1");
    release_context(cl, c);
}

fn create_buffer_checks_properties_and_context(cl: &Cl) {
    let c = cl.context();
    let with = |ctx: cl_context, props: &[cl_mem_properties]| -> cl_int {
        let mut err = 1;
        let f = cl.clCreateBufferWithProperties.unwrap();
        let b = unsafe { f(ctx, props.as_ptr(), 0, 64, null_mut(), &mut err) };
        agree(cl, b, err);
        if !b.is_null() {
            release_mem(cl, b);
        }
        err
    };
    let got = [with(c, &[0x7777, 1, 0]), with(c, &[u64::MAX, 0, 0])];
    expect(cl, CL_INVALID_PROPERTY, &got, "properties 0x7777 and -1");
    expect(cl, CL_SUCCESS, &[with(c, &[0])], "no properties");
    // Not a context: null, a command-queue (a valid handle of another kind,
    // which the loader hands to vkcl) and, directly, a junk pointer.
    let q = cl.queue(c, 0);
    let mut bad: Vec<cl_context> = vec![null_mut(), q.cast()];
    if cl.how == "direct" {
        bad.push(junk_handle());
    }
    for ctx in bad {
        let got = [create(cl, ctx, 0, 64, null_mut()), with(ctx, &[0])];
        let what = format_args!("context {ctx:?}");
        expect(cl, CL_INVALID_CONTEXT, &got, what);
    }
    release_queue(cl, q);
    release_context(cl, c);
}

// ---------------------------------------------------------------------------
// clCreateSubBuffer
// ---------------------------------------------------------------------------

/// clCreateSubBuffer of a region: the sub-buffer and the code, checked to
/// agree.
fn sub_buffer(
    cl: &Cl,
    parent: cl_mem,
    flags: cl_mem_flags,
    at: usize,
    size: usize,
) -> (cl_mem, cl_int) {
    let region = cl_buffer_region { origin: at, size };
    let info = std::ptr::from_ref(&region).cast();
    sub_buffer_of(cl, parent, flags, CL_BUFFER_CREATE_TYPE_REGION, info)
}

fn sub_buffer_of(
    cl: &Cl,
    parent: cl_mem,
    flags: cl_mem_flags,
    ty: cl_buffer_create_type,
    info: *const c_void,
) -> (cl_mem, cl_int) {
    let mut err = 1;
    let f = cl.clCreateSubBuffer.unwrap();
    let s = unsafe { f(parent, flags, ty, info, &mut err) };
    agree(cl, s, err);
    (s, err)
}

/// The code clCreateSubBuffer gives for a region (a sub-buffer it makes is
/// released).
fn region(cl: &Cl, parent: cl_mem, flags: cl_mem_flags, at: usize, size: usize) -> cl_int {
    let (s, err) = sub_buffer(cl, parent, flags, at, size);
    if !s.is_null() {
        release_mem(cl, s);
    }
    err
}

fn sub_buffer_region_must_fit(cl: &Cl) {
    let a = base_align(cl);
    let size = 4 * a;
    let mut fx = Fx::new(cl);
    let p = fx.buffer(CL_MEM_READ_WRITE, size);
    // Aligned origins, regions past the end.
    let far = usize::MAX / a * a;
    for (at, len) in [
        (0, size + 1),
        (a, 3 * a + 1),
        (size, 1),
        (2 * size, a),
        (far, a),
    ] {
        let what = format_args!("{len} bytes at {at} of {size}");
        expect(cl, CL_INVALID_VALUE, &[region(cl, p, 0, at, len)], what);
    }
    let got = [region(cl, p, 0, 0, 0), region(cl, p, 0, a, 0)];
    let what = "0 bytes at 0 and at an aligned offset";
    expect(cl, CL_INVALID_BUFFER_SIZE, &got, what);
    let r = cl_buffer_region { origin: 0, size: a };
    let info: *const c_void = std::ptr::from_ref(&r).cast();
    for ty in [0, CL_BUFFER_CREATE_TYPE_REGION + 1, 0x7777] {
        let got = sub_buffer_of(cl, p, 0, ty, info).1;
        let what = format_args!("create type {ty:#x}");
        expect(cl, CL_INVALID_VALUE, &[got], what);
    }
    let got = sub_buffer_of(cl, p, 0, CL_BUFFER_CREATE_TYPE_REGION, null()).1;
    expect(cl, CL_INVALID_VALUE, &[got], "no region");
    // What fits is fine: the whole buffer, and its last aligned piece.
    let got = [region(cl, p, 0, 0, size), region(cl, p, 0, 3 * a, a)];
    expect(cl, CL_SUCCESS, &got, "the whole buffer, the last piece");
    fx.check(p);
    fx.done();
}

fn sub_buffer_origin_alignment_and_nesting(cl: &Cl) {
    let a = base_align(cl);
    let mut fx = Fx::new(cl);
    let p = fx.buffer(CL_MEM_READ_WRITE, 4 * a);
    for at in [1, 4, a / 2, a + a / 2, 3 * a - 4] {
        let what = format_args!("origin {at}, CL_DEVICE_MEM_BASE_ADDR_ALIGN {a} bytes");
        let got = region(cl, p, 0, at, 16);
        expect(cl, CL_MISALIGNED_SUB_BUFFER_OFFSET, &[got], what);
    }
    let s = fx.sub(p, 0, a, 2 * a);
    let got = region(cl, s, 0, 0, 16);
    let what = "a sub-buffer of a sub-buffer";
    expect(cl, CL_INVALID_MEM_OBJECT, &[got], what);
    let got = [
        region(cl, null_mut(), 0, 0, 16),
        region(cl, fx.q.cast(), 0, 0, 16),
    ];
    expect(cl, CL_INVALID_MEM_OBJECT, &got, "no buffer, a queue");
    // errcode_ret may be null.
    let r = cl_buffer_region {
        origin: 1,
        size: 16,
    };
    let (info, ty) = (std::ptr::from_ref(&r).cast(), CL_BUFFER_CREATE_TYPE_REGION);
    let f = cl.clCreateSubBuffer.unwrap();
    assert!(unsafe { f(p, 0, ty, info, null_mut()) }.is_null());
    // The sub-buffer that was made sees its part of the parent.
    let seen = cl.read(fx.q, s, 0, 2 * a);
    assert!(seen == pattern(4 * a)[a..3 * a], "{}", cl.how);
    fx.check(p);
    fx.done();
}

fn sub_buffer_flags_must_agree_with_parent(cl: &Cl) {
    let a = base_align(cl);
    let mut fx = Fx::new(cl);
    let (rw, ro, wo) = (CL_MEM_READ_WRITE, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY);
    let (use_, alloc, copy) = (
        CL_MEM_USE_HOST_PTR,
        CL_MEM_ALLOC_HOST_PTR,
        CL_MEM_COPY_HOST_PTR,
    );
    let (hro, hwo, hna) = (
        CL_MEM_HOST_READ_ONLY,
        CL_MEM_HOST_WRITE_ONLY,
        CL_MEM_HOST_NO_ACCESS,
    );
    let rw_buffer = fx.buffer(rw, 2 * a);
    for flags in [use_, alloc, copy, ro | wo, hro | hna, 1 << 40] {
        let got = region(cl, rw_buffer, flags, 0, a);
        let what = format_args!("sub-buffer flags {flags:#x}");
        expect(cl, CL_INVALID_VALUE, &[got], what);
    }
    let parents = [wo, ro, hwo, hro, hna].map(|flags| fx.buffer(flags, 2 * a));
    let [wo_buffer, ro_buffer, hwo_buffer, hro_buffer, hna_buffer] = parents;
    let (bad, fine) = (CL_INVALID_VALUE, CL_SUCCESS);
    for (parent, flags, want) in [
        (wo_buffer, rw, bad),
        (wo_buffer, ro, bad),
        (wo_buffer, wo, fine),
        (ro_buffer, rw, bad),
        (ro_buffer, wo, bad),
        (ro_buffer, ro, fine),
        (hwo_buffer, hro, bad),
        (hwo_buffer, hwo, fine),
        (hro_buffer, hwo, bad),
        (hro_buffer, hro, fine),
        (hna_buffer, hro, bad),
        (hna_buffer, hwo, bad),
        (hna_buffer, hna, fine),
        (rw_buffer, ro, fine),
        (rw_buffer, hna, fine),
    ] {
        let got = region(cl, parent, flags, 0, a);
        let parent = mem_flags(cl, parent);
        let what = format_args!("flags {flags:#x} under a parent with {parent:#x}");
        expect(cl, want, &[got], what);
    }
    // Flags left out are inherited: a sub-buffer of a host-read-only buffer
    // cannot be written by the host either.
    let s = fx.sub(hro_buffer, 0, a, a);
    assert_ne!(mem_flags(cl, s) & hro, 0, "{}", cl.how);
    let mut data = [1u8; 16];
    let got = fx.bad().write(s, 0, 16, data.as_mut_ptr().cast());
    let what = "write to a sub-buffer of a host-read-only buffer";
    expect(cl, CL_INVALID_OPERATION, &[got], what);
    let s = fx.sub(ro_buffer, 0, 0, a);
    assert_ne!(mem_flags(cl, s) & ro, 0, "{}", cl.how);
    for b in [
        rw_buffer, wo_buffer, ro_buffer, hwo_buffer, hro_buffer, hna_buffer,
    ] {
        fx.check(b);
    }
    fx.done();
}

// ---------------------------------------------------------------------------
// clEnqueueReadBuffer, clEnqueueWriteBuffer, and what every command shares
// ---------------------------------------------------------------------------

fn read_write_bounds_and_pointers(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut host = vec![0u8; 512];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let (e, max) = (fx.bad(), usize::MAX);
    for (at, size) in [(0, 257), (256, 1), (200, 57), (1, max), (max, 1), (max, 2)] {
        let got = [e.read(b, at, size, h), e.write(b, at, size, h)];
        let what = format_args!("read, write {size} bytes at {at} of 256");
        expect(cl, CL_INVALID_VALUE, &got, what);
    }
    for size in [16, 0] {
        let got = [e.read(b, 0, size, null_mut()), e.write(b, 0, size, null())];
        let what = format_args!("read, write {size} bytes at null");
        expect(cl, CL_INVALID_VALUE, &got, what);
    }
    let not_buffers: [cl_mem; 3] = [null_mut(), fx.q.cast(), fx.gate.cast()];
    for m in not_buffers {
        let got = [e.read(m, 0, 16, h), e.write(m, 0, 16, h)];
        let what = format_args!("buffer {m:?}");
        expect(cl, CL_INVALID_MEM_OBJECT, &got, what);
    }
    untouched(cl, &host);
    // The last byte is in bounds.
    let last = cl.read(fx.q, b, 255, 1);
    assert_eq!(last, [pattern(256)[255]], "{}", cl.how);
    fx.check(b);
    fx.done();
}

/// OpenCL 3.0 lists no error for a zero-sized read, write, copy or fill (the
/// "or if size is 0" that OpenCL 1.x gave reads and writes is gone), while
/// clEnqueueMapBuffer keeps "if size is zero" (see `map_checks`): such a
/// command is valid, and changes nothing.
fn zero_sized_transfers_are_not_errors(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let a = fx.buffer(CL_MEM_READ_WRITE, 64);
    let b = fx.buffer(CL_MEM_READ_WRITE, 64);
    let mut host = [0u8; 16];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let pat = [0xFFu8; 4];
    let e = fx.now().blocking();
    let (read, write) = (e.read(a, 0, 0, h), e.write(a, 0, 0, h));
    let (copy, fill) = (
        e.copy(a, b, 0, 0, 0),
        e.fill(a, pat.as_ptr().cast(), 4, 0, 0),
    );
    finish(cl, fx.q);
    let got = [read, write, copy, fill];
    let what = "zero-sized read, write, copy, fill";
    expect(cl, CL_SUCCESS, &got, what);
    untouched(cl, &host);
    fx.check(a);
    fx.check(b);
    fx.done();
}

fn host_access_flags_are_enforced(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let wo = fx.buffer(CL_MEM_HOST_WRITE_ONLY, 256);
    let ro = fx.buffer(CL_MEM_HOST_READ_ONLY, 256);
    let na = fx.buffer(CL_MEM_HOST_NO_ACCESS, 256);
    let mut host = vec![0u8; 256];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let (e, r) = (fx.bad(), [16, 4, 1]);
    for (b, name) in [(wo, "host-write-only"), (na, "host-no-access")] {
        let got = [e.read(b, 0, 16, h), e.read_rect(b, r, O, O, h)];
        let what = format_args!("read, rect read of a {name} buffer");
        expect(cl, CL_INVALID_OPERATION, &got, what);
    }
    for (b, name) in [(ro, "host-read-only"), (na, "host-no-access")] {
        let got = [e.write(b, 0, 16, h), e.write_rect(b, r, O, O, h)];
        let what = format_args!("write, rect write of a {name} buffer");
        expect(cl, CL_INVALID_OPERATION, &got, what);
    }
    untouched(cl, &host);
    // What each one still allows.
    let p = pattern(256);
    cl.write(fx.q, wo, 0, &p[..16]);
    assert!(cl.read(fx.q, ro, 0, 16) == p[..16], "{}", cl.how);
    // Copy and fill ignore the host access flags.
    let na2 = fx.buffer(CL_MEM_HOST_NO_ACCESS, 256);
    fx.fill_now(na2, &[0x5A], 0, 256);
    assert!(fx.contents(na2) == [0x5A; 256], "{}", cl.how);
    fx.copy_now(na, na2, 0, 0, 256);
    assert!(fx.contents(na2) == p, "{}", cl.how);
    for b in [wo, ro, na] {
        fx.check(b);
    }
    fx.done();
}

/// Every buffer command once, on `e`, with `b` as its buffer (and, for
/// copies, as the source and `b2` as the destination); then, given a
/// pointer `b` has mapped, an unmap of it, a marker and a barrier.
fn every_command(
    e: Enq<'_>,
    b: cl_mem,
    b2: cl_mem,
    h: *mut c_void,
    mapped: Option<*mut c_void>,
) -> Vec<cl_int> {
    let (pat, r) = ([0u8; 4], [16, 1, 1]);
    let below = at([0, 8, 0], 0, 0);
    let mut got = vec![
        e.read(b, 0, 16, h),
        e.write(b, 0, 16, h),
        e.copy(b, b2, 0, 128, 16),
        e.fill(b, pat.as_ptr().cast(), 4, 0, 16),
        e.read_rect(b, r, O, O, h),
        e.write_rect(b, r, O, O, h),
        e.copy_rect(b, b2, r, O, below),
        e.map(b, CL_MAP_READ, 0, 16),
    ];
    if let Some(p) = mapped {
        got.extend([e.unmap(b, p), e.marker(), e.barrier()]);
    }
    got
}

/// What [`every_command`] enqueues, in order.
const EVERY: &str = "read, write, copy, fill, read rect, write rect, copy rect, map, \
                     (unmap, marker, barrier)";

fn bad_queue_buffer_or_context(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut host = vec![0u8; 256];
    let h: *mut c_void = host.as_mut_ptr().cast();
    // Not a queue: null, a context (a valid handle of another kind, which
    // the loader hands to vkcl) and, directly, a junk pointer.
    let mut queues: Vec<cl_command_queue> = vec![null_mut(), fx.c.cast()];
    if cl.how == "direct" {
        queues.push(junk_handle());
    }
    let mapped = fx.map_now(b, CL_MAP_READ, 0, 16);
    for q in queues {
        let got = every_command(fx.on(q), b, b, h, Some(mapped));
        let what = format_args!("queue {q:?}: {EVERY}");
        expect(cl, CL_INVALID_COMMAND_QUEUE, &got, what);
    }
    // A buffer of another context, as the only buffer, the source or the
    // destination.
    let c2 = cl.context();
    let q2 = cl.queue(c2, 0);
    let init = pattern(256);
    let other = cl.buffer(c2, CL_MEM_COPY_HOST_PTR, 256, init.as_ptr() as *mut c_void);
    let (e, r) = (fx.bad(), [16, 1, 1]);
    let got = every_command(e, other, other, h, None);
    let what = format_args!("a buffer of another context: {EVERY}");
    expect(cl, CL_INVALID_CONTEXT, &got, what);
    let (to, from) = (e.copy(b, other, 0, 0, 16), e.copy(other, b, 0, 0, 16));
    let got = [
        to,
        from,
        e.copy_rect(b, other, r, O, O),
        e.copy_rect(other, b, r, O, O),
    ];
    let what = "copies to and from another context";
    expect(cl, CL_INVALID_CONTEXT, &got, what);
    // Unmapping through a queue of another context.
    let got = Enq::new(cl, q2).unmap(b, mapped);
    let what = "unmap through another context";
    expect(cl, CL_INVALID_CONTEXT, &[got], what);
    assert_eq!(map_count(cl, b), 1, "{}", cl.how);
    fx.unmap_now(b, mapped);
    untouched(cl, &host);
    fx.check(b);
    assert!(cl.read(q2, other, 0, 256) == init, "{}", cl.how);
    release_mem(cl, other);
    release_queue(cl, q2);
    release_context(cl, c2);
    fx.done();
}

fn event_wait_lists_are_checked(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut host = vec![0u8; 256];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let c2 = cl.context();
    let foreign = cl.user_event(c2);
    let (e, g, bad) = (fx.bad(), fx.gate, CL_INVALID_EVENT_WAIT_LIST);
    let mapped = fx.map_now(b, CL_MAP_READ, 0, 16);
    // Every list but the second holds the gate, in case one is accepted.
    let lists = [
        (e.waits(1, null()), bad, "a count and no list"),
        (e.waits(0, &g), bad, "a list and no count"),
    ];
    for (e, want, what) in lists {
        let got = every_command(e, b, b, h, Some(mapped));
        expect(cl, want, &got, format_args!("{what}: {EVERY}"));
    }
    for (list, want, what) in [
        ([g, null_mut()], bad, "a null event"),
        ([g, junk_handle()], bad, "a junk event"),
        ([g, b.cast()], bad, "a buffer for an event"),
        (
            [g, foreign],
            CL_INVALID_CONTEXT,
            "an event of another context",
        ),
    ] {
        let got = every_command(e.after(&list), b, b, h, Some(mapped));
        expect(cl, want, &got, format_args!("{what}: {EVERY}"));
    }
    untouched(cl, &host);
    assert_eq!(map_count(cl, b), 1, "{}", cl.how);
    fx.unmap_now(b, mapped);
    fx.check(b);
    release_event(cl, foreign);
    release_context(cl, c2);
    fx.done();
}

// ---------------------------------------------------------------------------
// clEnqueueCopyBuffer, clEnqueueFillBuffer
// ---------------------------------------------------------------------------

fn copy_bounds_and_overlap(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let a = fx.buffer(CL_MEM_READ_WRITE, 256);
    let b = fx.buffer(CL_MEM_READ_WRITE, 128);
    let (e, max) = (fx.bad(), usize::MAX);
    for (from, to, size) in [
        (200, 0, 57),
        (0, 64, 65),
        (256, 0, 1),
        (0, 128, 1),
        (0, 0, 257),
        (max, 0, 2),
        (0, max, 2),
    ] {
        let what = format_args!("copy {size} from {from} of 256 to {to} of 128");
        expect(cl, CL_INVALID_VALUE, &[e.copy(a, b, from, to, size)], what);
    }
    let got = [
        e.copy(null_mut(), b, 0, 0, 16),
        e.copy(a, null_mut(), 0, 0, 16),
    ];
    expect(cl, CL_INVALID_MEM_OBJECT, &got, "no source, no destination");
    for (from, to, size) in [
        (0, 4, 8),
        (4, 0, 8),
        (16, 16, 8),
        (0, 7, 8),
        (7, 0, 8),
        (0, 0, 256),
    ] {
        let what = format_args!("copy {size} from {from} to {to} in one buffer");
        let got = [e.copy(a, a, from, to, size)];
        expect(cl, CL_MEM_COPY_OVERLAP, &got, what);
    }
    fx.check(a);
    fx.check(b);
    // Touching is not overlapping.
    let t = fx.buffer(CL_MEM_READ_WRITE, 64);
    fx.copy_now(t, t, 0, 8, 8);
    let mut want = pattern(64);
    want.copy_within(0..8, 8);
    assert!(fx.contents(t) == want, "{}", cl.how);
    fx.done();
}

fn copy_overlap_between_sub_buffers(cl: &Cl) {
    let al = base_align(cl);
    let mut fx = Fx::new(cl);
    let p = fx.buffer(CL_MEM_READ_WRITE, 4 * al);
    // s1[al..] and s2[..al] are the same bytes of p.
    let s1 = fx.sub(p, 0, 0, 2 * al);
    let s2 = fx.sub(p, 0, al, 2 * al);
    let e = fx.bad();
    let got = [
        e.copy(s1, s2, al, 0, 16),
        e.copy(s2, s1, 0, al + 8, 16),
        e.copy(s2, s2, 0, 8, 16),
        e.copy_rect(s1, s2, [16, 1, 1], at([al, 0, 0], 0, 0), O),
    ];
    let what = "s1 to s2, s2 to s1 (shared bytes), s2 to s2, rect s1 to s2 (shared)";
    expect(cl, CL_MEM_COPY_OVERLAP, &got, what);
    fx.check(p);
    // Sub-buffers that share nothing copy fine.
    let mut want = fx.contents(p);
    let s3 = fx.sub(p, 0, 2 * al, al);
    let s4 = fx.sub(p, 0, 3 * al, al);
    fx.copy_now(s3, s4, 0, 0, al);
    want.copy_within(2 * al..3 * al, 3 * al);
    assert!(fx.contents(p) == want, "{}", cl.how);
    fx.done();
}

fn fill_pattern_checks(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let pat = [0xEEu8; 256];
    let (e, p) = (fx.bad(), pat.as_ptr().cast());
    for len in [0, 3, 5, 6, 12, 24, 127, 129, 256] {
        // A size the pattern divides (where one exists), so that only the
        // pattern size is wrong.
        let size = match len {
            0 => 16,
            1..=128 => 2 * len,
            _ => len,
        };
        let what = format_args!("pattern size {len}");
        expect(cl, CL_INVALID_VALUE, &[e.fill(b, p, len, 0, size)], what);
    }
    let got = e.fill(b, null(), 4, 0, 16);
    expect(cl, CL_INVALID_VALUE, &[got], "no pattern");
    for (len, at, size) in [
        (4, 2, 8),
        (8, 4, 16),
        (128, 64, 128),
        (4, 0, 6),
        (2, 0, 7),
        (16, 16, 24),
    ] {
        let what = format_args!("pattern size {len}, {size} bytes at {at}");
        expect(cl, CL_INVALID_VALUE, &[e.fill(b, p, len, at, size)], what);
    }
    for (at, size) in [(0, 260), (256, 4), (252, 8), (usize::MAX - 3, 4)] {
        let what = format_args!("fill {size} bytes at {at} of 256");
        expect(cl, CL_INVALID_VALUE, &[e.fill(b, p, 4, at, size)], what);
    }
    let got = e.fill(null_mut(), p, 4, 0, 16);
    expect(cl, CL_INVALID_MEM_OBJECT, &[got], "no buffer");
    fx.check(b);
    // Every allowed pattern size works at an offset it divides.
    let t = fx.buffer(CL_MEM_READ_WRITE, 512);
    let src: Vec<u8> = (0..128u8).map(|i| i ^ 0xA5).collect();
    let mut want = pattern(512);
    for len in [1, 2, 4, 8, 16, 32, 64, 128] {
        let (at, size) = (len, 3 * len);
        fx.fill_now(t, &src[..len], at, size);
        for i in 0..size {
            want[at + i] = src[i % len];
        }
    }
    assert!(fx.contents(t) == want, "{}", cl.how);
    fx.done();
}

// ---------------------------------------------------------------------------
// clEnqueueReadBufferRect, clEnqueueWriteBufferRect, clEnqueueCopyBufferRect
// ---------------------------------------------------------------------------

/// A rectangle of `b`: the codes of a read (buffer side `bs`, host side
/// `hs`), a write (the same) and a copy to `b2` (source side `bs`,
/// destination side `hs`).
fn rect_codes(
    e: Enq<'_>,
    b: cl_mem,
    b2: cl_mem,
    r: [usize; 3],
    bs: Side,
    hs: Side,
    h: *mut c_void,
) -> [cl_int; 3] {
    let (read, write) = (e.read_rect(b, r, bs, hs, h), e.write_rect(b, r, bs, hs, h));
    [read, write, e.copy_rect(b, b2, r, bs, hs)]
}

fn rect_region_and_pitch_checks(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let b2 = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut host = vec![0u8; 1024];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let (e, o) = (fx.bad(), [0; 3]);
    for r in [[0, 2, 1], [8, 0, 1], [8, 2, 0]] {
        let got = rect_codes(e, b, b2, r, O, O, h);
        expect(cl, CL_INVALID_VALUE, &got, format_args!("region {r:?}"));
    }
    // Pitches too small for the region, or slices not whole rows.
    for (bs, hs, what) in [
        (at(o, 4, 0), O, "buffer row pitch < region[0]"),
        (O, at(o, 4, 0), "host row pitch < region[0]"),
        (
            at(o, 16, 16),
            O,
            "buffer slice pitch < region[1] * row pitch",
        ),
        (O, at(o, 16, 16), "host slice pitch < region[1] * row pitch"),
        (at(o, 0, 8), O, "buffer slice pitch < region[1] * region[0]"),
        (
            at(o, 16, 40),
            O,
            "buffer slice pitch not a multiple of its row pitch",
        ),
        (
            O,
            at(o, 16, 40),
            "host slice pitch not a multiple of its row pitch",
        ),
    ] {
        let got = rect_codes(e, b, b2, [8, 2, 2], bs, hs, h);
        let what = format_args!("{what} (read, write, copy)");
        expect(cl, CL_INVALID_VALUE, &got, what);
    }
    // Null arrays and pointers.
    let r = [8usize, 2, 1];
    let (op, rp, g, n) = (o.as_ptr(), r.as_ptr(), &fx.gate, null_mut());
    let read = cl.clEnqueueReadBufferRect.unwrap();
    let write = cl.clEnqueueWriteBufferRect.unwrap();
    let copy = cl.clEnqueueCopyBufferRect.unwrap();
    for (bo, ho, rg, ptr) in [
        (null(), op, rp, h),
        (op, null(), rp, h),
        (op, op, null(), h),
        (op, op, rp, n),
    ] {
        let q = fx.q;
        let mut got = unsafe {
            vec![
                read(q, b, 0, bo, ho, rg, 0, 0, 0, 0, ptr, 1, g, n.cast()),
                write(q, b, 0, bo, ho, rg, 0, 0, 0, 0, ptr, 1, g, n.cast()),
            ]
        };
        if !ptr.is_null() {
            // (A copy has no host pointer.)
            got.push(unsafe { copy(q, b, b2, bo, ho, rg, 0, 0, 0, 0, 1, g, n.cast()) });
        }
        let what = format_args!("origins {bo:?} and {ho:?}, region {rg:?}, ptr {ptr:?}");
        expect(cl, CL_INVALID_VALUE, &got, what);
    }
    // Within one buffer, both sides must use the same pitches (the boxes
    // here do not overlap).
    let rows = e.copy_rect(b, b, [8, 2, 1], at(o, 16, 0), at([8, 0, 0], 32, 0));
    let slices = e.copy_rect(b, b, [8, 2, 2], at(o, 16, 32), at([8, 0, 0], 16, 64));
    let what = "one buffer, two row pitches; one buffer, two slice pitches";
    expect(cl, CL_INVALID_VALUE, &[rows, slices], what);
    untouched(cl, &host);
    fx.check(b);
    fx.check(b2);
    fx.done();
}

/// A rectangle at `side` of `b`: the codes of a read, a write, a copy from
/// `b` to `b2` and a copy from `b2` to `b`.
fn bounds_codes(
    fx: &Fx,
    b: cl_mem,
    b2: cl_mem,
    r: [usize; 3],
    side: Side,
    h: *mut c_void,
) -> Vec<cl_int> {
    let e = fx.bad();
    let mut got = rect_codes(e, b, b2, r, side, O, h).to_vec();
    got.push(e.copy_rect(b2, b, r, O, side));
    got
}

fn rect_bounds(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let b2 = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut host = vec![0u8; 1024];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let (half, huge) = (usize::MAX / 2, usize::MAX / 16 * 8);
    for (r, side) in [
        ([16, 1, 1], at([0, 16, 0], 16, 0)),
        ([8, 16, 1], at([9, 0, 0], 16, 0)),
        ([256, 1, 1], at([1, 0, 0], 0, 0)),
        ([4, 4, 2], at([0, 0, 1], 16, 128)),
        ([8, 2, 1], at([0, 0, 0], half, 0)),
        ([8, 1, 2], at([0, 0, 0], 8, huge)),
    ] {
        let got = bounds_codes(&fx, b, b2, r, side, h);
        let what = format_args!("region {r:?} at {side:?} of 256 bytes");
        expect(cl, CL_INVALID_VALUE, &got, what);
    }
    untouched(cl, &host);
    // Ending exactly at the end is in bounds.
    let side = at([8, 0, 0], 16, 0);
    let got = fx.now().blocking().read_rect(b, [8, 16, 1], side, O, h);
    ok(cl, got, "a rect read that ends at the end of the buffer");
    let p = pattern(256);
    for row in 0..16 {
        let (seen, want) = (&host[row * 8..][..8], &p[row * 16 + 8..][..8]);
        assert_eq!(seen, want, "{}: row {row}", cl.how);
    }
    fx.check(b);
    fx.check(b2);
    fx.done();
}

/// Origins and regions so large that computing where the box ends overflows
/// a size_t: still out of bounds, so still CL_INVALID_VALUE.
fn rect_bounds_that_overflow(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let b2 = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut host = vec![0u8; 1024];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let (max, half) = (usize::MAX, usize::MAX / 2);
    let mut wrong = Vec::new();
    for (r, side) in [
        ([8, 1, 1], at([max - 4, 0, 0], 0, 0)),
        ([8, 1, 1], at([0, half, 0], 16, 0)),
        ([8, 1, 1], at([0, 0, half], 16, 64)),
        ([8, 1 << 62, 1], at([0, 0, 0], 16, 0)),
    ] {
        let got = bounds_codes(&fx, b, b2, r, side, h);
        if got.iter().any(|&g| g != CL_INVALID_VALUE) {
            wrong.push(format!("region {r:?} at {side:?}: {got:?}"));
        }
    }
    if !wrong.is_empty() {
        wrong.insert(0, "want -30 from read, write, copy from, copy to".into());
    }
    none_wrong(cl, wrong);
    untouched(cl, &host);
    fx.check(b);
    fx.check(b2);
    fx.done();
}

fn copy_rect_overlap(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let row = |x, y| at([x, y, 0], 16, 0);
    let slice = |z| at([0, 0, z], 16, 64);
    let mut wrong = Vec::new();
    for (src, dst, r, what) in [
        (row(0, 0), row(4, 0), [8, 2, 1], "shifted along a row"),
        (row(0, 0), row(0, 1), [8, 2, 1], "shifted by a row"),
        (row(2, 3), row(2, 3), [8, 2, 1], "the same box"),
        (slice(0), slice(1), [8, 2, 2], "shifted by a slice"),
    ] {
        let got = fx.bad().copy_rect(b, b, r, src, dst);
        if got != CL_MEM_COPY_OVERLAP {
            let case = format!("{src:?} to {dst:?}, region {r:?}");
            wrong.push(format!("{what}: {case}: want -8, got {got}"));
        }
    }
    // Checked before anything blocks on the queue: a copy accepted by
    // mistake waits behind the gate.
    none_wrong(cl, wrong);
    fx.check(b);
    // Interleaved rows that do not overlap are fine.
    let t = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut want = pattern(256);
    for ((sx, sy), (dx, dy)) in [((0, 0), (8, 0)), ((0, 4), (0, 6))] {
        let got = fx
            .now()
            .copy_rect(t, t, [8, 2, 1], row(sx, sy), row(dx, dy));
        ok(cl, got, "a copy between boxes that do not overlap");
        for y in 0..2 {
            let (s, d) = (sx + (sy + y) * 16, dx + (dy + y) * 16);
            want.copy_within(s..s + 8, d);
        }
    }
    assert!(fx.contents(t) == want, "{}", cl.how);
    // Two-row slices: a box from row 1 of slice 0 runs into slice 1, where
    // the destination box starts. The boxes do not overlap by the
    // specification's rule (they are in different slices), yet the second
    // source row is the first destination row: the copy reads every
    // source byte before it writes.
    let u = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut want = pattern(256);
    let (from, to) = (at([0, 1, 0], 16, 32), at([0, 0, 1], 16, 32));
    let got = fx.now().copy_rect(u, u, [8, 2, 1], from, to);
    ok(cl, got, "a copy between slices whose rows interleave");
    let before = want.clone();
    want[32..40].copy_from_slice(&before[16..24]);
    want[48..56].copy_from_slice(&before[32..40]);
    assert!(fx.contents(u) == want, "{}", cl.how);
    // Source rows [12, 20) and [28, 36), destination rows [16, 24) and
    // [32, 40): the source rows run past the row pitch into the next row,
    // where the destination is. The boxes themselves do not overlap, so the
    // copy goes ahead, reading every source byte before it writes.
    let r = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut want = pattern(256);
    let got = fx.now().copy_rect(r, r, [8, 2, 1], row(12, 0), row(0, 1));
    ok(cl, got, "a copy whose rows run past the row pitch");
    let before = want.clone();
    want[16..24].copy_from_slice(&before[12..20]);
    want[32..40].copy_from_slice(&before[28..36]);
    assert!(fx.contents(r) == want, "{}", cl.how);
    // Rows that run past the slice height into the span of the other box
    // (the specification's check flags this) without a byte in common: the
    // copy goes ahead. Source rows start at 48, 64, 80 and 96, destination
    // rows at 72, 88, 104 and 120, four bytes each.
    let v = fx.buffer(CL_MEM_READ_WRITE, 256);
    let mut want = pattern(256);
    let (from, to) = (at([0, 3, 0], 16, 32), at([8, 0, 2], 16, 32));
    let got = fx.now().copy_rect(v, v, [4, 2, 2], from, to);
    ok(
        cl,
        got,
        "a copy whose rows run past the slice without meeting",
    );
    let before = want.clone();
    for (s, d) in [(48, 72), (64, 88), (80, 104), (96, 120)] {
        want[d..d + 4].copy_from_slice(&before[s..s + 4]);
    }
    assert!(fx.contents(v) == want, "{}", cl.how);
    fx.done();
}

// ---------------------------------------------------------------------------
// clEnqueueMapBuffer, clEnqueueUnmapMemObject
// ---------------------------------------------------------------------------

fn map_checks(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let wo = fx.buffer(CL_MEM_HOST_WRITE_ONLY, 256);
    let ro = fx.buffer(CL_MEM_HOST_READ_ONLY, 256);
    let na = fx.buffer(CL_MEM_HOST_NO_ACCESS, 256);
    let (read, write, invalidate) = (CL_MAP_READ, CL_MAP_WRITE, CL_MAP_WRITE_INVALIDATE_REGION);
    let (value, operation) = (CL_INVALID_VALUE, CL_INVALID_OPERATION);
    let mut wrong = Vec::new();
    for (what, m, flags, at, size, want) in [
        ("past the end", b, read, 200, 57, value),
        ("at the end", b, read, 256, 1, value),
        ("offset + size overflows", b, read, usize::MAX, 2, value),
        ("size 0", b, read, 0, 0, value),
        ("invalidate and read", b, invalidate | read, 0, 16, value),
        ("invalidate and write", b, invalidate | write, 0, 16, value),
        ("an unknown flag", b, 1 << 7, 0, 16, value),
        ("read, host-write-only", wo, read, 0, 16, operation),
        ("read, host-no-access", na, read, 0, 16, operation),
        ("write, host-read-only", ro, write, 0, 16, operation),
        (
            "invalidate, host-read-only",
            ro,
            invalidate,
            0,
            16,
            operation,
        ),
        ("write, host-no-access", na, write, 0, 16, operation),
        ("no buffer", null_mut(), read, 0, 16, CL_INVALID_MEM_OBJECT),
    ] {
        let got = fx.bad().map(m, flags, at, size);
        if got != want {
            wrong.push(format!("{what}: want {want}, got {got}"));
        }
    }
    none_wrong(cl, wrong);
    for m in [b, wo, ro, na] {
        assert_eq!(
            map_count(cl, m),
            0,
            "{}: a failed map left a mapping",
            cl.how
        );
    }
    // errcode_ret may be null.
    let (f, g, n) = (cl.clEnqueueMapBuffer.unwrap(), &fx.gate, null_mut());
    assert!(unsafe { f(fx.q, b, 0, read, 0, 0, 1, g, n, n.cast()) }.is_null());
    // What the host access flags allow.
    let p = fx.map_now(wo, write, 0, 16);
    fx.unmap_now(wo, p);
    let p = fx.map_now(ro, read, 0, 16);
    let seen = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), 16) };
    assert!(*seen == pattern(256)[..16], "{}", cl.how);
    fx.unmap_now(ro, p);
    for m in [b, wo, ro, na] {
        fx.check(m);
    }
    fx.done();
}

fn overlapping_write_maps(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let (read, write, invalidate) = (CL_MAP_READ, CL_MAP_WRITE, CL_MAP_WRITE_INVALIDATE_REGION);
    let p1 = fx.map_now(b, write, 0, 64);
    let e = fx.bad();
    let got = [
        e.map(b, write, 0, 64),
        e.map(b, write, 16, 16),
        e.map(b, write, 32, 64),
        e.map(b, invalidate, 63, 1),
    ];
    let what = "mapping for writing, over [0, 64) mapped for writing: \
                all of it, inside it, across its end, its last byte";
    expect(cl, CL_INVALID_OPERATION, &got, what);
    assert_eq!(map_count(cl, b), 1, "{}", cl.how);
    // Right next to it is fine, and so is reading one region twice.
    let p2 = fx.map_now(b, write, 64, 64);
    let r1 = fx.map_now(b, read, 128, 64);
    let r2 = fx.map_now(b, read, 160, 64);
    assert_eq!(map_count(cl, b), 4, "{}", cl.how);
    for p in [p1, p2, r1, r2] {
        fx.unmap_now(b, p);
    }
    // Once unmapped, the region may be mapped for writing again.
    let p3 = fx.map_now(b, write, 32, 64);
    fx.unmap_now(b, p3);
    fx.check(b);
    fx.done();
}

fn unmap_checks(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let b2 = fx.buffer(CL_MEM_READ_WRITE, 256);
    let p = fx.map_now(b, CL_MAP_READ, 0, 64);
    let mut local = [0u8; 64];
    let inside = p.cast::<u8>().wrapping_add(1).cast::<c_void>();
    let e = fx.bad();
    let got = [
        e.unmap(b, null_mut()),
        e.unmap(b, local.as_mut_ptr().cast()),
        e.unmap(b, inside),
        e.unmap(b2, p),
    ];
    let what = "unmapping null, a pointer never mapped, one inside the mapping, \
                another buffer's mapping";
    expect(cl, CL_INVALID_VALUE, &got, what);
    let got = fx.on(null_mut()).unmap(b, p);
    expect(cl, CL_INVALID_COMMAND_QUEUE, &[got], "no queue");
    let got = e.unmap(null_mut(), p);
    expect(cl, CL_INVALID_MEM_OBJECT, &[got], "no buffer");
    assert_eq!(map_count(cl, b), 1, "{}", cl.how);
    fx.unmap_now(b, p);
    assert_eq!(map_count(cl, b), 0, "{}", cl.how);
    expect(cl, CL_INVALID_VALUE, &[e.unmap(b, p)], "unmapping twice");
    assert_eq!(local, [0; 64], "{}", cl.how);
    fx.check(b);
    fx.check(b2);
    fx.done();
}

// ---------------------------------------------------------------------------
// Command queues
// ---------------------------------------------------------------------------

/// The code clCreateCommandQueueWithProperties gives (a queue it makes is
/// released).
fn queue_with(
    cl: &Cl,
    c: cl_context,
    d: cl_device_id,
    props: *const cl_queue_properties,
) -> cl_int {
    let mut err = 1;
    let f = cl.clCreateCommandQueueWithProperties.unwrap();
    let q = unsafe { f(c, d, props, &mut err) };
    agree(cl, q, err);
    if !q.is_null() {
        release_queue(cl, q);
    }
    err
}

/// The code clCreateCommandQueue gives (a queue it makes is released).
fn queue_legacy(
    cl: &Cl,
    c: cl_context,
    d: cl_device_id,
    props: cl_command_queue_properties,
) -> cl_int {
    let mut err = 1;
    let q = unsafe { cl.clCreateCommandQueue.unwrap()(c, d, props, &mut err) };
    agree(cl, q, err);
    if !q.is_null() {
        release_queue(cl, q);
    }
    err
}

fn queue_properties_with_properties(cl: &Cl) {
    let (c, d) = (cl.context(), cl.device());
    let props = cl_queue_properties::from(CL_QUEUE_PROPERTIES);
    let size = cl_queue_properties::from(CL_QUEUE_SIZE);
    let (ooo, profiling) = (
        CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
        CL_QUEUE_PROFILING_ENABLE,
    );
    let (on_device, default) = (CL_QUEUE_ON_DEVICE | ooo, CL_QUEUE_ON_DEVICE_DEFAULT);
    let (value, unsupported) = (CL_INVALID_VALUE, CL_INVALID_QUEUE_PROPERTIES);
    // On-device queues, where the device has them (device-side enqueue).
    let device_queues = cl
        .device_bytes(d, CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES)
        .is_ok_and(|b| b.iter().any(|&x| x != 0));
    let on_device_result = if device_queues {
        CL_SUCCESS
    } else {
        unsupported
    };
    let mut wrong = Vec::new();
    for (what, list, want) in [
        (
            "an on-device queue",
            vec![props, on_device, 0],
            on_device_result,
        ),
        (
            "the default on-device queue",
            vec![props, on_device | default, 0],
            on_device_result,
        ),
        (
            "an on-device queue of 4 KiB",
            vec![props, on_device, size, 4096, 0],
            on_device_result,
        ),
        (
            "on-device default alone",
            vec![props, default | ooo, 0],
            value,
        ),
        (
            "an unknown queue property bit",
            vec![props, 1 << 20, 0],
            value,
        ),
        ("an unknown property name", vec![0x7777, 1, 0], value),
        ("property name -1", vec![u64::MAX, 0, 0], value),
        (
            "CL_QUEUE_PROPERTIES + 2^32",
            vec![(1 << 32) | props, 0, 0],
            value,
        ),
        ("a size for a host queue", vec![size, 1024, 0], value),
        (
            "a size after host properties",
            vec![props, 0, size, 1024, 0],
            value,
        ),
        ("an empty list", vec![0], CL_SUCCESS),
        (
            "out of order, profiling",
            vec![props, ooo | profiling, 0],
            CL_SUCCESS,
        ),
    ] {
        let got = queue_with(cl, c, d, list.as_ptr());
        if got != want {
            wrong.push(format!("{what} (hex {list:x?}): want {want}, got {got}"));
        }
    }
    none_wrong(cl, wrong);
    expect(cl, CL_SUCCESS, &[queue_with(cl, c, d, null())], "no list");
    // CL_QUEUE_ON_DEVICE without CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
    // which it requires, is both invalid and unsupported: either code.
    let got = queue_with(cl, c, d, [props, CL_QUEUE_ON_DEVICE, 0].as_ptr());
    let how = cl.how;
    let either = got == value || got == unsupported;
    assert!(either, "{how}: CL_QUEUE_ON_DEVICE alone: {got}");
    release_context(cl, c);
}

/// clCreateCommandQueue takes only the properties of its own table
/// (out-of-order and profiling); "otherwise the value specified in
/// properties is considered to be not valid": CL_INVALID_VALUE.
fn queue_properties_legacy(cl: &Cl) {
    let (c, d) = (cl.context(), cl.device());
    let (ooo, profiling) = (
        CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
        CL_QUEUE_PROFILING_ENABLE,
    );
    let (on_device, default) = (CL_QUEUE_ON_DEVICE | ooo, CL_QUEUE_ON_DEVICE_DEFAULT);
    let mut wrong = Vec::new();
    for (what, props, want) in [
        ("on-device", on_device, CL_INVALID_VALUE),
        ("default on-device", on_device | default, CL_INVALID_VALUE),
        ("an unknown bit", 1 << 20, CL_INVALID_VALUE),
        ("none", 0, CL_SUCCESS),
        ("out of order, profiling", ooo | profiling, CL_SUCCESS),
    ] {
        let got = queue_legacy(cl, c, d, props);
        if got != want {
            wrong.push(format!("{what} ({props:#x}): want {want}, got {got}"));
        }
    }
    none_wrong(cl, wrong);
    release_context(cl, c);
}

fn queue_device_and_context(cl: &Cl) {
    let (c, d) = (cl.context(), cl.device());
    // Not a device: null, a context (a valid handle of another kind) and,
    // directly, a junk pointer. (The loader dispatches on the context.)
    let mut devices: Vec<cl_device_id> = vec![null_mut(), c.cast()];
    if cl.how == "direct" {
        devices.push(junk_handle());
    }
    for dev in devices {
        let got = [queue_with(cl, c, dev, null()), queue_legacy(cl, c, dev, 0)];
        expect(cl, CL_INVALID_DEVICE, &got, format_args!("device {dev:?}"));
    }
    // A device outside the context, where the platform has a second one.
    let all = cl.devices(CL_DEVICE_TYPE_ALL).unwrap();
    if let Some(&other) = all.iter().find(|&&x| x != d) {
        let got = queue_with(cl, c, other, null());
        let what = "a device outside the context";
        expect(cl, CL_INVALID_DEVICE, &[got], what);
    }
    let not_contexts: [cl_context; 2] = [null_mut(), d.cast()];
    for ctx in not_contexts {
        let got = [queue_with(cl, ctx, d, null()), queue_legacy(cl, ctx, d, 0)];
        let what = format_args!("context {ctx:?}");
        expect(cl, CL_INVALID_CONTEXT, &got, what);
    }
    let got = queue_with(cl, c, d, null());
    expect(cl, CL_SUCCESS, &[got], "a valid queue");
    release_context(cl, c);
}

fn queue_info_checks(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let mut value = [0u8; 16];
    let v: *mut c_void = value.as_mut_ptr().cast();
    let get = |q, param, size, value| {
        let mut n = usize::MAX;
        let f = cl.clGetCommandQueueInfo.unwrap();
        let r = unsafe { f(q, param, size, value, &mut n) };
        let how = cl.how;
        assert!(
            r == CL_SUCCESS || n == usize::MAX,
            "{how}: size written on failure"
        );
        r
    };
    let (bad, size) = (CL_INVALID_COMMAND_QUEUE, CL_QUEUE_SIZE);
    let got = [get(q, size, 16, v), get(q, size, 0, null_mut())];
    let what = "CL_QUEUE_SIZE of a host queue, value and size only";
    expect(cl, bad, &got, what);
    let got = [get(q, 0x7777, 16, v), get(q, CL_QUEUE_CONTEXT, 4, v)];
    let what = "query 0x7777, 4 bytes for a context";
    expect(cl, CL_INVALID_VALUE, &got, what);
    let not_queues: [cl_command_queue; 2] = [null_mut(), c.cast()];
    for not in not_queues {
        let got = get(not, CL_QUEUE_CONTEXT, 16, v);
        expect(cl, bad, &[got], format_args!("queue {not:?}"));
    }
    // The queue still answers.
    let got = query(|size, value, size_ret| unsafe {
        cl.clGetCommandQueueInfo.unwrap()(q, CL_QUEUE_CONTEXT, size, value, size_ret)
    });
    assert_eq!(usize_of(&got.unwrap()), c as usize, "{}", cl.how);
    release_queue(cl, q);
    release_context(cl, c);
}

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

fn wait_for_events_checks(cl: &Cl) {
    let (c, c2) = (cl.context(), cl.context());
    let [done, done2, failed] = [(); 3].map(|_| cl.user_event(c));
    let other = cl.user_event(c2);
    for e in [done, done2, other] {
        ok(cl, set_status(cl, e, CL_COMPLETE), "complete a user event");
    }
    ok(cl, set_status(cl, failed, -11), "fail a user event");
    let raw = |n, list| unsafe { cl.clWaitForEvents.unwrap()(n, list) };
    let got = [raw(0, &done), raw(1, null()), raw(0, null())];
    expect(cl, CL_INVALID_VALUE, &got, "no count, no list, neither");
    let got = wait_for(cl, &[done, other]);
    expect(cl, CL_INVALID_CONTEXT, &[got], "events of two contexts");
    let not_events: [cl_event; 3] = [null_mut(), junk_handle(), c.cast()];
    for not in not_events {
        let got = wait_for(cl, &[done, not]);
        expect(cl, CL_INVALID_EVENT, &[got], format_args!("event {not:?}"));
    }
    if cl.how == "direct" {
        // (The loader would dispatch through the first handle.)
        let got = wait_for(cl, &[junk_handle()]);
        expect(cl, CL_INVALID_EVENT, &[got], "a junk event first");
    }
    let failing = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    let got = wait_for(cl, &[done, failed]);
    expect(cl, failing, &[got], "a failed event");
    let got = wait_for(cl, &[done, done2]);
    expect(cl, CL_SUCCESS, &[got], "complete events");
    for e in [done, done2, other, failed] {
        release_event(cl, e);
    }
    release_context(cl, c2);
    release_context(cl, c);
}

fn user_event_status_checks(cl: &Cl) {
    let fx = Fx::new(cl);
    let how = cl.how;
    let u = cl.user_event(fx.c);
    for status in [CL_RUNNING, CL_SUBMITTED, CL_QUEUED, 7, cl_int::MAX] {
        let got = set_status(cl, u, status);
        let what = format_args!("status {status}");
        expect(cl, CL_INVALID_VALUE, &[got], what);
    }
    let status = cl.event_status(u);
    assert_eq!(
        status, CL_SUBMITTED,
        "{how}: a rejected status changed the event"
    );
    ok(cl, set_status(cl, u, CL_COMPLETE), "complete");
    let got = [set_status(cl, u, CL_COMPLETE), set_status(cl, u, -1)];
    let what = "CL_COMPLETE, -1 after CL_COMPLETE";
    expect(cl, CL_INVALID_OPERATION, &got, what);
    assert_eq!(cl.event_status(u), CL_COMPLETE, "{how}");
    let v = cl.user_event(fx.c);
    ok(cl, set_status(cl, v, -7), "fail");
    let got = [set_status(cl, v, CL_COMPLETE), set_status(cl, v, -8)];
    expect(cl, CL_INVALID_OPERATION, &got, "CL_COMPLETE, -8 after -7");
    assert_eq!(cl.event_status(v), -7, "{how}");
    // Not user events: a command's event, a context, nothing.
    let mut marker = null_mut();
    let got = fx.bad().event_to(&mut marker).marker();
    ok(cl, got, "a marker behind the gate");
    for e in [marker, fx.c.cast(), null_mut()] {
        let got = [set_status(cl, e, CL_COMPLETE), set_status(cl, e, -1)];
        let what = format_args!("CL_COMPLETE, -1 for {e:?} (marker {marker:?})");
        expect(cl, CL_INVALID_EVENT, &got, what);
    }
    // The marker still completes once its wait list does.
    ok(cl, set_status(cl, fx.gate, CL_COMPLETE), "open the gate");
    ok(cl, wait_for(cl, &[marker]), "wait for the marker");
    for e in [u, v, marker] {
        release_event(cl, e);
    }
    fx.done();
}

unsafe extern "C" fn count_call(_: cl_event, _: cl_int, user_data: *mut c_void) {
    // SAFETY: user_data is the AtomicUsize of the test that registered it,
    // alive until that test is done.
    let calls = unsafe { &*user_data.cast::<AtomicUsize>() };
    calls.fetch_add(1, Ordering::SeqCst);
}

fn event_callback_checks(cl: &Cl) {
    let c = cl.context();
    let u = cl.user_event(c);
    let calls = AtomicUsize::new(0);
    let data = std::ptr::from_ref(&calls).cast_mut().cast::<c_void>();
    type Notify = unsafe extern "C" fn(cl_event, cl_int, *mut c_void);
    let set =
        |e, when, f: Option<Notify>| unsafe { cl.clSetEventCallback.unwrap()(e, when, f, data) };
    let count = Some(count_call as Notify);
    for when in [CL_QUEUED, -1, 4, 0x1234] {
        let what = format_args!("callback type {when}");
        expect(cl, CL_INVALID_VALUE, &[set(u, when, count)], what);
    }
    let got = set(u, CL_COMPLETE, None);
    expect(cl, CL_INVALID_VALUE, &[got], "no callback");
    let got = set(null_mut(), CL_COMPLETE, count);
    expect(cl, CL_INVALID_EVENT, &[got], "no event");
    // The valid ones: CL_SUBMITTED is reached already, CL_COMPLETE once set.
    let got = [set(u, CL_SUBMITTED, count), set(u, CL_COMPLETE, count)];
    let what = "CL_SUBMITTED and CL_COMPLETE callbacks";
    expect(cl, CL_SUCCESS, &got, what);
    ok(cl, set_status(cl, u, CL_COMPLETE), "complete");
    let deadline = Instant::now() + Duration::from_secs(5);
    while calls.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(20));
    let (how, calls) = (cl.how, calls.load(Ordering::SeqCst));
    assert_eq!(calls, 2, "{how}: only the two accepted callbacks run");
    release_event(cl, u);
    release_context(cl, c);
}

fn profiling_info_not_available(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 64);
    let mut same = pattern(64);
    let prof = |e, param, with_value: bool| {
        let mut v = 0u64;
        let value = if with_value {
            std::ptr::from_mut(&mut v).cast()
        } else {
            null_mut()
        };
        let mut n = 0;
        unsafe { cl.clGetEventProfilingInfo.unwrap()(e, param, 8, value, &mut n) }
    };
    let params = [
        CL_PROFILING_COMMAND_QUEUED,
        CL_PROFILING_COMMAND_SUBMIT,
        CL_PROFILING_COMMAND_START,
        CL_PROFILING_COMMAND_END,
        CL_PROFILING_COMMAND_COMPLETE,
    ];
    let (none, end) = (CL_PROFILING_INFO_NOT_AVAILABLE, CL_PROFILING_COMMAND_END);
    // A complete command on a queue without CL_QUEUE_PROFILING_ENABLE.
    let mut ev = null_mut();
    let e = fx.now().blocking().event_to(&mut ev);
    ok(cl, e.write(b, 0, 16, same.as_mut_ptr().cast()), "write");
    assert_eq!(cl.event_status(ev), CL_COMPLETE, "{}", cl.how);
    for param in params {
        let got = [prof(ev, param, true), prof(ev, param, false)];
        expect(cl, none, &got, format_args!("{param:#x} without profiling"));
    }
    // A user event.
    let u = cl.user_event(fx.c);
    ok(cl, set_status(cl, u, CL_COMPLETE), "complete");
    expect(cl, none, &[prof(u, end, true)], "a user event");
    // On a profiling queue, not before the command is complete.
    let qp = cl.queue(fx.c, CL_QUEUE_PROFILING_ENABLE);
    let gate = [cl.user_event(fx.c)];
    let mut marker = null_mut();
    let e = Enq::new(cl, qp).after(&gate).event_to(&mut marker);
    ok(cl, e.marker(), "marker");
    let got = prof(marker, end, true);
    expect(cl, none, &[got], "a command not yet complete");
    ok(cl, set_status(cl, gate[0], CL_COMPLETE), "open the gate");
    ok(cl, wait_for(cl, &[marker]), "wait for the marker");
    let got = params.map(|param| prof(marker, param, true));
    let what = "a complete command on a profiling queue";
    expect(cl, CL_SUCCESS, &got, what);
    let got = [prof(marker, 0x7777, true)];
    expect(cl, CL_INVALID_VALUE, &got, "query 0x7777");
    let got = prof(null_mut(), end, true);
    expect(cl, CL_INVALID_EVENT, &[got], "no event");
    for e in [ev, u, gate[0], marker] {
        release_event(cl, e);
    }
    release_queue(cl, qp);
    fx.check(b);
    fx.done();
}

fn blocking_commands_with_failed_wait_list(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    let list = [cl.user_event(fx.c), cl.user_event(fx.c)];
    ok(cl, set_status(cl, list[0], CL_COMPLETE), "complete");
    ok(cl, set_status(cl, list[1], -3), "fail");
    let mut host = vec![0u8; 256];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let (e, r) = (fx.now().blocking().after(&list), [16, 2, 1]);
    let (mapped, map) = e.map_ptr(b, CL_MAP_READ, 0, 16);
    assert!(
        mapped.is_null(),
        "{}: a failed map returned a pointer",
        cl.how
    );
    let (read, write) = (e.read(b, 0, 16, h), e.write(b, 0, 16, h));
    let (read_rect, write_rect) = (e.read_rect(b, r, O, O, h), e.write_rect(b, r, O, O, h));
    let failing = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    let got = [read, write, read_rect, write_rect, map];
    let what = "blocking read, write, read rect, write rect, map";
    expect(cl, failing, &got, what);
    untouched(cl, &host);
    assert_eq!(map_count(cl, b), 0, "{}", cl.how);
    // Nothing was enqueued: the queue carries on.
    fx.check(b);
    // Non-blocking, the same read is accepted and fails later. (On a queue
    // of its own: the specification leaves a queue that holds a failed
    // command to the implementation.)
    let q2 = cl.queue(fx.c, 0);
    let mut ev = null_mut();
    let got = Enq::new(cl, q2)
        .after(&list)
        .event_to(&mut ev)
        .read(b, 0, 16, h);
    expect(cl, CL_SUCCESS, &[got], "a non-blocking read");
    expect(cl, failing, &[wait_for(cl, &[ev])], "wait for the read");
    assert!(cl.event_status(ev) < 0, "{}", cl.how);
    untouched(cl, &host);
    for e in [ev, list[0], list[1]] {
        release_event(cl, e);
    }
    release_queue(cl, q2);
    fx.done();
}

fn blocking_read_fails_when_its_wait_list_fails_later(cl: &Cl) {
    let mut fx = Fx::new(cl);
    let b = fx.buffer(CL_MEM_READ_WRITE, 256);
    // A queue of its own, as above.
    let q2 = cl.queue(fx.c, 0);
    let u = [cl.user_event(fx.c)];
    let u_addr = u[0] as usize;
    let mut host = vec![0u8; 256];
    let h: *mut c_void = host.as_mut_ptr().cast();
    let start = Instant::now();
    let got = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            ok(cl, set_status(cl, u_addr as cl_event, -9), "fail, later");
        });
        Enq::new(cl, q2).blocking().after(&u).read(b, 0, 256, h)
    });
    let failing = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    let what = "a blocking read whose wait list failed while it waited";
    expect(cl, failing, &[got], what);
    let (how, waited) = (cl.how, start.elapsed());
    assert!(
        waited >= Duration::from_millis(90),
        "{how}: returned before the failure"
    );
    untouched(cl, &host);
    release_event(cl, u[0]);
    release_queue(cl, q2);
    fx.check(b);
    fx.done();
}
