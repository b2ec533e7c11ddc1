//! cl_khr_command_buffer: commands recorded once and enqueued many times,
//! with the kernel arguments of the moment they were recorded, sync points
//! and barriers ordering a buffer recorded for an out-of-order queue, a
//! buffer run on another queue of the device, and the errors the extension
//! names; through the ICD loader and directly.

mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    offered_and_queried,
    replays_run_with_the_arguments_recorded,
    sync_points_and_barriers_order_an_out_of_order_buffer,
    another_queue_keeps_the_recorded_order,
    errors,
);

const SRC: &str = "kernel void add(global uint *p, uint v) { p[get_global_id(0)] += v; }\n\
                   kernel void twice(global uint *p) { p[get_global_id(0)] *= 2u; }";

const N: usize = 64;

type CommandNdRange = unsafe extern "C" fn(
    cl_command_buffer_khr,
    cl_command_queue,
    *const cl_command_properties_khr,
    cl_kernel,
    cl_uint,
    *const usize,
    *const usize,
    *const usize,
    cl_uint,
    *const cl_sync_point_khr,
    *mut cl_sync_point_khr,
    *mut cl_mutable_command_khr,
) -> cl_int;

/// The extension's entry points used here.
struct Cb {
    create: unsafe extern "C" fn(
        cl_uint,
        *const cl_command_queue,
        *const cl_command_buffer_properties_khr,
        *mut cl_int,
    ) -> cl_command_buffer_khr,
    finalize: unsafe extern "C" fn(cl_command_buffer_khr) -> cl_int,
    release: unsafe extern "C" fn(cl_command_buffer_khr) -> cl_int,
    enqueue: unsafe extern "C" fn(
        cl_uint,
        *mut cl_command_queue,
        cl_command_buffer_khr,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
    ndrange: CommandNdRange,
    fill: unsafe extern "C" fn(
        cl_command_buffer_khr,
        cl_command_queue,
        *const cl_command_properties_khr,
        cl_mem,
        *const c_void,
        usize,
        usize,
        usize,
        cl_uint,
        *const cl_sync_point_khr,
        *mut cl_sync_point_khr,
        *mut cl_mutable_command_khr,
    ) -> cl_int,
    copy: unsafe extern "C" fn(
        cl_command_buffer_khr,
        cl_command_queue,
        *const cl_command_properties_khr,
        cl_mem,
        cl_mem,
        usize,
        usize,
        usize,
        cl_uint,
        *const cl_sync_point_khr,
        *mut cl_sync_point_khr,
        *mut cl_mutable_command_khr,
    ) -> cl_int,
    barrier: unsafe extern "C" fn(
        cl_command_buffer_khr,
        cl_command_queue,
        *const cl_command_properties_khr,
        cl_uint,
        *const cl_sync_point_khr,
        *mut cl_sync_point_khr,
        *mut cl_mutable_command_khr,
    ) -> cl_int,
    info: unsafe extern "C" fn(
        cl_command_buffer_khr,
        cl_command_buffer_info_khr,
        usize,
        *mut c_void,
        *mut usize,
    ) -> cl_int,
}

impl Cb {
    fn new(cl: &Cl) -> Cb {
        // SAFETY (each): the extension's entry point has this signature.
        unsafe {
            Cb {
                create: extension_fn(cl, "clCreateCommandBufferKHR"),
                finalize: extension_fn(cl, "clFinalizeCommandBufferKHR"),
                release: extension_fn(cl, "clReleaseCommandBufferKHR"),
                enqueue: extension_fn(cl, "clEnqueueCommandBufferKHR"),
                ndrange: extension_fn(cl, "clCommandNDRangeKernelKHR"),
                fill: extension_fn(cl, "clCommandFillBufferKHR"),
                copy: extension_fn(cl, "clCommandCopyBufferKHR"),
                barrier: extension_fn(cl, "clCommandBarrierWithWaitListKHR"),
                info: extension_fn(cl, "clGetCommandBufferInfoKHR"),
            }
        }
    }

    fn buffer_for(&self, q: cl_command_queue) -> cl_command_buffer_khr {
        let mut err = 1;
        let b = unsafe { (self.create)(1, &q, null(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        b
    }

    /// Records `k` over N items after `waits`; gives its sync point.
    fn kernel(
        &self,
        b: cl_command_buffer_khr,
        k: cl_kernel,
        waits: &[cl_sync_point_khr],
    ) -> cl_sync_point_khr {
        let mut point = 0;
        let r = unsafe {
            (self.ndrange)(
                b,
                null_mut(),
                null(),
                k,
                1,
                null(),
                &N,
                null(),
                waits.len() as cl_uint,
                if waits.is_empty() {
                    null()
                } else {
                    waits.as_ptr()
                },
                &mut point,
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "clCommandNDRangeKernelKHR");
        point
    }

    fn fill(&self, b: cl_command_buffer_khr, m: cl_mem, value: u32) -> cl_sync_point_khr {
        let mut point = 0;
        let r = unsafe {
            (self.fill)(
                b,
                null_mut(),
                null(),
                m,
                (&value as *const u32).cast(),
                4,
                0,
                N * 4,
                0,
                null(),
                &mut point,
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "clCommandFillBufferKHR");
        point
    }

    fn copy(
        &self,
        b: cl_command_buffer_khr,
        src: cl_mem,
        dst: cl_mem,
        waits: &[cl_sync_point_khr],
    ) {
        let r = unsafe {
            (self.copy)(
                b,
                null_mut(),
                null(),
                src,
                dst,
                0,
                0,
                N * 4,
                waits.len() as cl_uint,
                if waits.is_empty() {
                    null()
                } else {
                    waits.as_ptr()
                },
                null_mut(),
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "clCommandCopyBufferKHR");
    }

    fn run(&self, b: cl_command_buffer_khr, event: *mut cl_event) {
        let r = unsafe { (self.enqueue)(0, null_mut(), b, 0, null(), event) };
        assert_eq!(r, CL_SUCCESS, "clEnqueueCommandBufferKHR");
    }

    fn info_u32(&self, b: cl_command_buffer_khr, param: cl_command_buffer_info_khr) -> u32 {
        let mut v = 0u32;
        let r = unsafe { (self.info)(b, param, 4, (&mut v as *mut u32).cast(), null_mut()) };
        assert_eq!(r, CL_SUCCESS);
        v
    }
}

fn offered_and_queried(cl: &Cl) {
    let d = cl.device();
    let ext = c_string(&cl.device_bytes(d, CL_DEVICE_EXTENSIONS).unwrap());
    assert!(ext.contains("cl_khr_command_buffer"), "{}: {ext}", cl.how);
    let caps = cl
        .device_bytes(d, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR)
        .unwrap();
    assert_eq!(
        u64::from_ne_bytes(caps.try_into().unwrap()),
        CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR
    );
    let required = cl
        .device_bytes(d, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR)
        .unwrap();
    assert_eq!(u64::from_ne_bytes(required.try_into().unwrap()), 0);
    let cb = Cb::new(cl);
    let s = Setup::new(cl);
    let b = cb.buffer_for(s.q);
    assert_eq!(
        cb.info_u32(b, CL_COMMAND_BUFFER_STATE_KHR),
        CL_COMMAND_BUFFER_STATE_RECORDING_KHR
    );
    assert_eq!(cb.info_u32(b, CL_COMMAND_BUFFER_NUM_QUEUES_KHR), 1);
    assert_eq!(cb.info_u32(b, CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR), 1);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    assert_eq!(
        cb.info_u32(b, CL_COMMAND_BUFFER_STATE_KHR),
        CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR
    );
    unsafe { (cb.release)(b) };
}

/// Each enqueue runs every command again, with the kernel argument set
/// when the command was recorded, not the one set since.
fn replays_run_with_the_arguments_recorded(cl: &Cl) {
    let cb = Cb::new(cl);
    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "add", "");
    let (p, out) = (s.zeroed(N * 4), s.zeroed(N * 4));
    s.arg(k, 0, &p);
    s.arg(k, 1, &5u32);
    let b = cb.buffer_for(s.q);
    cb.kernel(b, k, &[]);
    cb.copy(b, p, out, &[]);
    s.arg(k, 1, &1000u32);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    let mut events = [null_mut(); 3];
    for e in &mut events {
        cb.run(b, e);
    }
    assert_eq!(s.words(out, N), vec![15; N], "{}", cl.how);
    for e in events {
        let ty = query(|n, v, r| unsafe {
            cl.clGetEventInfo.unwrap()(e, CL_EVENT_COMMAND_TYPE, n, v, r)
        })
        .unwrap();
        assert_eq!(u32_of(&ty), CL_COMMAND_COMMAND_BUFFER_KHR);
        assert_eq!(cl.event_status(e), CL_COMPLETE);
        unsafe { cl.clReleaseEvent.unwrap()(e) };
    }
    unsafe { (cb.release)(b) };
}

/// On an out-of-order queue the commands of a buffer run in the order
/// their sync points and barriers give.
fn sync_points_and_barriers_order_an_out_of_order_buffer(cl: &Cl) {
    let cb = Cb::new(cl);
    let mut s = Setup::new(cl);
    let q = cl.queue(s.c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    let add = s.kernel(SRC, "add", "");
    let twice = s.kernel(SRC, "twice", "");
    let (p, out) = (s.zeroed(N * 4), s.zeroed(N * 4));
    s.arg(add, 0, &p);
    s.arg(add, 1, &3u32);
    s.arg(twice, 0, &p);
    let b = cb.buffer_for(q);
    // ((7 + 3) * 2), then copied: each step waits for the one before.
    let filled = cb.fill(b, p, 7);
    let added = cb.kernel(b, add, &[filled]);
    cb.kernel(b, twice, &[added]);
    let r = unsafe { (cb.barrier)(b, null_mut(), null(), 0, null(), null_mut(), null_mut()) };
    assert_eq!(r, CL_SUCCESS);
    cb.copy(b, p, out, &[]);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    let mut e = null_mut();
    let r = unsafe { (cb.enqueue)(0, null_mut(), b, 0, null(), &mut e) };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(unsafe { cl.clWaitForEvents.unwrap()(1, &e) }, CL_SUCCESS);
    assert_eq!(s.words(out, N), vec![20; N], "{}", cl.how);
    unsafe {
        cl.clReleaseEvent.unwrap()(e);
        (cb.release)(b);
        cl.clReleaseCommandQueue.unwrap()(q);
    }
}

/// A buffer recorded for an in-order queue, enqueued on an out-of-order
/// queue of the same device, still runs its commands one after another.
fn another_queue_keeps_the_recorded_order(cl: &Cl) {
    let cb = Cb::new(cl);
    let mut s = Setup::new(cl);
    let ooo = cl.queue(s.c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    let add = s.kernel(SRC, "add", "");
    let twice = s.kernel(SRC, "twice", "");
    let (p, out) = (s.zeroed(N * 4), s.zeroed(N * 4));
    s.arg(add, 0, &p);
    s.arg(add, 1, &1u32);
    s.arg(twice, 0, &p);
    let b = cb.buffer_for(s.q);
    cb.fill(b, p, 4);
    cb.kernel(b, twice, &[]);
    cb.kernel(b, add, &[]);
    cb.copy(b, p, out, &[]);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    let mut queues = [ooo];
    let r = unsafe { (cb.enqueue)(1, queues.as_mut_ptr(), b, 0, null(), null_mut()) };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(unsafe { cl.clFinish.unwrap()(ooo) }, CL_SUCCESS);
    assert_eq!(s.words(out, N), vec![9; N], "{}", cl.how);
    unsafe {
        (cb.release)(b);
        cl.clReleaseCommandQueue.unwrap()(ooo);
    }
}

fn errors(cl: &Cl) {
    let cb = Cb::new(cl);
    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "twice", "");
    let p = s.zeroed(N * 4);
    s.arg(k, 0, &p);
    let mut err = 1;
    // One queue, named.
    assert!(unsafe { (cb.create)(0, null(), null(), &mut err) }.is_null());
    assert_eq!(err, CL_INVALID_VALUE);
    let two = [s.q, s.q];
    assert!(unsafe { (cb.create)(2, two.as_ptr(), null(), &mut err) }.is_null());
    assert_eq!(err, CL_INVALID_VALUE);
    let bad_props = [CL_COMMAND_BUFFER_FLAGS_KHR, 1, 0];
    assert!(unsafe { (cb.create)(1, &s.q, bad_props.as_ptr(), &mut err) }.is_null());
    assert_eq!(err, CL_INVALID_VALUE);
    let b = cb.buffer_for(s.q);
    // Not executable yet.
    assert_eq!(
        unsafe { (cb.enqueue)(0, null_mut(), b, 0, null(), null_mut()) },
        CL_INVALID_OPERATION
    );
    // A queue of its own, an unknown sync point, a list without entries.
    let r = unsafe {
        (cb.ndrange)(
            b,
            s.q,
            null(),
            k,
            1,
            null(),
            &N,
            null(),
            0,
            null(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_COMMAND_QUEUE);
    let later = [7u32];
    let r = unsafe {
        (cb.ndrange)(
            b,
            null_mut(),
            null(),
            k,
            1,
            null(),
            &N,
            null(),
            1,
            later.as_ptr(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_SYNC_POINT_WAIT_LIST_KHR);
    let r = unsafe {
        (cb.ndrange)(
            b,
            null_mut(),
            null(),
            k,
            1,
            null(),
            &N,
            null(),
            1,
            null(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_SYNC_POINT_WAIT_LIST_KHR);
    // The enqueue's own checks apply.
    let r = unsafe {
        (cb.ndrange)(
            b,
            null_mut(),
            null(),
            k,
            4,
            null(),
            &N,
            null(),
            0,
            null(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_WORK_DIMENSION);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    // Nothing more once finalized, and finalized once.
    let r = unsafe {
        (cb.ndrange)(
            b,
            null_mut(),
            null(),
            k,
            1,
            null(),
            &N,
            null(),
            0,
            null(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_OPERATION);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_INVALID_OPERATION);
    assert_eq!(
        unsafe { (cb.finalize)(null_mut()) },
        CL_INVALID_COMMAND_BUFFER_KHR
    );
    unsafe { (cb.release)(b) };
}
