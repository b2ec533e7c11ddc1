//! The execution model: queues, events, user events, callbacks, profiling
//! and ordering across queues, through the ICD loader and directly.

mod common;

use std::ffi::c_void;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use opencl_sys::*;

both_ways!(
    chain_across_three_queues_released_by_one_user_event,
    failed_user_event_propagates_to_dependents,
    callbacks_fire_once_per_status,
    a_command_behind_a_running_one_is_not_running,
    a_profiled_command_completes_while_later_work_runs,
    profiling_times_are_ordered_and_in_the_host_window,
    out_of_order_queue_with_barrier,
    markers_and_wait_for_events,
    queue_queries_and_release,
    threads_hammer_shared_queues,
);

const NULL_EV: *mut cl_event = std::ptr::null_mut();

fn release_all(cl: &Cl, events: &[cl_event]) {
    for &e in events {
        assert_eq!(unsafe { cl.clReleaseEvent.unwrap()(e) }, CL_SUCCESS);
    }
}

/// The slot-by-slot copy chain: slot 0 is written once the user event is
/// set, and command i copies slot i-1 to slot i on queue i % 3, waiting
/// for command i-1. Any ordering mistake leaves a zero somewhere.
fn build_chain(
    cl: &Cl,
    c: cl_context,
    queues: &[cl_command_queue],
    buf: cl_mem,
    gate: cl_event,
    n: usize,
) -> Vec<cl_event> {
    let value = 0xC0FF_EE00u32.to_ne_bytes();
    let mut events = Vec::with_capacity(n);
    let mut ev: cl_event = std::ptr::null_mut();
    let r = unsafe {
        cl.clEnqueueWriteBuffer.unwrap()(
            queues[0],
            buf,
            CL_FALSE,
            0,
            4,
            value.as_ptr().cast(),
            1,
            &gate,
            &mut ev,
        )
    };
    assert_eq!(r, CL_SUCCESS);
    events.push(ev);
    let _ = c;
    for i in 1..n {
        let prev = events[i - 1];
        let mut ev: cl_event = std::ptr::null_mut();
        let r = unsafe {
            cl.clEnqueueCopyBuffer.unwrap()(
                queues[i % 3],
                buf,
                buf,
                (i - 1) * 4,
                i * 4,
                4,
                1,
                &prev,
                &mut ev,
            )
        };
        assert_eq!(r, CL_SUCCESS, "copy {i}");
        events.push(ev);
    }
    events
}

fn chain_across_three_queues_released_by_one_user_event(cl: &Cl) {
    let c = cl.context();
    let queues: Vec<_> = (0..3).map(|_| cl.queue(c, 0)).collect();
    const N: usize = 1000;
    let zero = vec![0u8; N * 4];
    let buf = cl.buffer(
        c,
        CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
        N * 4,
        zero.as_ptr() as *mut c_void,
    );
    let gate = cl.user_event(c);
    let events = build_chain(cl, c, &queues, buf, gate, N);
    for q in &queues {
        assert_eq!(unsafe { cl.clFlush.unwrap()(*q) }, CL_SUCCESS);
    }
    std::thread::sleep(Duration::from_millis(50));
    // Nothing can have run before the gate opens.
    for &e in &events {
        assert!(cl.event_status(e) > CL_COMPLETE as cl_int);
    }
    assert_eq!(
        unsafe { cl.clSetUserEventStatus.unwrap()(gate, CL_COMPLETE as cl_int) },
        CL_SUCCESS
    );
    let last = events[N - 1];
    assert_eq!(unsafe { cl.clWaitForEvents.unwrap()(1, &last) }, CL_SUCCESS);
    for &e in &events {
        assert_eq!(cl.event_status(e), CL_COMPLETE as cl_int);
    }
    let got = cl.read(queues[1], buf, 0, N * 4);
    for (i, w) in got.chunks(4).enumerate() {
        assert_eq!(
            u32::from_ne_bytes(w.try_into().unwrap()),
            0xC0FF_EE00,
            "slot {i}"
        );
    }
    release_all(cl, &events);
    release_all(cl, &[gate]);
    unsafe {
        assert_eq!(cl.clReleaseMemObject.unwrap()(buf), CL_SUCCESS);
        for q in queues {
            assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        }
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn failed_user_event_propagates_to_dependents(cl: &Cl) {
    let c = cl.context();
    let queues: Vec<_> = (0..3).map(|_| cl.queue(c, 0)).collect();
    const N: usize = 30;
    let zero = vec![0u8; N * 4];
    let buf = cl.buffer(
        c,
        CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
        N * 4,
        zero.as_ptr() as *mut c_void,
    );
    let gate = cl.user_event(c);
    let events = build_chain(cl, c, &queues, buf, gate, N);
    assert_eq!(
        unsafe { cl.clSetUserEventStatus.unwrap()(gate, -1234) },
        CL_SUCCESS
    );
    assert_eq!(cl.event_status(gate), -1234);
    let last = events[N - 1];
    assert_eq!(
        unsafe { cl.clWaitForEvents.unwrap()(1, &last) },
        CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
    );
    for &e in &events {
        assert!(cl.event_status(e) < 0, "every dependent fails");
    }
    // None of the failed commands touched the buffer.
    assert_eq!(cl.read(queues[0], buf, 0, N * 4), zero);
    release_all(cl, &events);
    release_all(cl, &[gate]);
    unsafe {
        assert_eq!(cl.clReleaseMemObject.unwrap()(buf), CL_SUCCESS);
        for q in queues {
            assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        }
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

static SEEN: Mutex<Vec<(usize, cl_int, usize)>> = Mutex::new(Vec::new());

unsafe extern "C" fn record_status(e: cl_event, status: cl_int, user_data: *mut c_void) {
    SEEN.lock()
        .unwrap()
        .push((e as usize, status, user_data as usize));
}

fn callbacks_fire_once_per_status(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let buf = cl.buffer(c, CL_MEM_READ_WRITE, 64, std::ptr::null_mut());
    let gate = cl.user_event(c);
    let data = [7u8; 64];
    let mut ev: cl_event = std::ptr::null_mut();
    let set = cl.clSetEventCallback.unwrap();
    unsafe {
        assert_eq!(
            cl.clEnqueueWriteBuffer.unwrap()(
                q,
                buf,
                CL_FALSE,
                0,
                64,
                data.as_ptr().cast(),
                1,
                &gate,
                &mut ev
            ),
            CL_SUCCESS
        );
        for (tag, when) in [(1usize, CL_SUBMITTED), (2, CL_RUNNING), (3, CL_COMPLETE)] {
            assert_eq!(
                set(ev, when as cl_int, Some(record_status), tag as *mut c_void),
                CL_SUCCESS
            );
        }
        assert_eq!(
            set(
                gate,
                CL_COMPLETE as cl_int,
                Some(record_status),
                4 as *mut c_void
            ),
            CL_SUCCESS
        );
        assert_eq!(
            cl.clSetUserEventStatus.unwrap()(gate, CL_COMPLETE as cl_int),
            CL_SUCCESS
        );
        assert_eq!(cl.clFinish.unwrap()(q), CL_SUCCESS);
    }
    // COMPLETE callbacks may run on the completion thread just after the
    // status is visible: give them a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mine = || -> Vec<(cl_int, usize)> {
        SEEN.lock()
            .unwrap()
            .iter()
            .filter(|(e, _, _)| *e == ev as usize || *e == gate as usize)
            .map(|&(_, s, t)| (s, t))
            .collect()
    };
    while mine().len() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut got = mine();
    got.sort_by_key(|&(_, t)| t);
    assert_eq!(
        got,
        vec![
            (CL_SUBMITTED as cl_int, 1),
            (CL_RUNNING as cl_int, 2),
            (CL_COMPLETE as cl_int, 3),
            (CL_COMPLETE as cl_int, 4)
        ]
    );
    // Registered after the fact: runs at once.
    unsafe {
        assert_eq!(
            set(
                ev,
                CL_COMPLETE as cl_int,
                Some(record_status),
                5 as *mut c_void
            ),
            CL_SUCCESS
        )
    };
    assert!(mine().contains(&(CL_COMPLETE as cl_int, 5)));
    release_all(cl, &[ev, gate]);
    unsafe {
        assert_eq!(cl.clReleaseMemObject.unwrap()(buf), CL_SUCCESS);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn host_timer(cl: &Cl) -> u64 {
    let mut t = 0;
    assert_eq!(
        unsafe { cl.clGetHostTimer.unwrap()(cl.device(), &mut t) },
        CL_SUCCESS
    );
    t
}

fn profiling_times_are_ordered_and_in_the_host_window(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, CL_QUEUE_PROFILING_ENABLE);
    const SIZE: usize = 1 << 20;
    let a = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    let b = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    let data = vec![3u8; SIZE];
    let mut out = vec![0u8; SIZE];
    let before = host_timer(cl);
    let mut events = [std::ptr::null_mut(); 5];
    let pattern = 0x1234_5678u32.to_ne_bytes();
    unsafe {
        assert_eq!(
            cl.clEnqueueWriteBuffer.unwrap()(
                q,
                a,
                CL_FALSE,
                0,
                SIZE,
                data.as_ptr().cast(),
                0,
                std::ptr::null(),
                &mut events[0]
            ),
            CL_SUCCESS
        );
        assert_eq!(
            cl.clEnqueueCopyBuffer.unwrap()(
                q,
                a,
                b,
                0,
                0,
                SIZE,
                0,
                std::ptr::null(),
                &mut events[1]
            ),
            CL_SUCCESS
        );
        assert_eq!(
            cl.clEnqueueFillBuffer.unwrap()(
                q,
                a,
                pattern.as_ptr().cast(),
                4,
                0,
                SIZE,
                0,
                std::ptr::null(),
                &mut events[2]
            ),
            CL_SUCCESS
        );
        assert_eq!(
            cl.clEnqueueMarkerWithWaitList.unwrap()(q, 0, std::ptr::null(), &mut events[3]),
            CL_SUCCESS
        );
        assert_eq!(
            cl.clEnqueueReadBuffer.unwrap()(
                q,
                b,
                CL_TRUE,
                0,
                SIZE,
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                &mut events[4]
            ),
            CL_SUCCESS
        );
    }
    let after = host_timer(cl);
    assert_eq!(out, data);
    let mut previous_end = 0;
    for &e in &events {
        let t = cl.profile(e);
        assert!(t.windows(2).all(|w| w[0] <= w[1]), "ordered: {t:?}");
        assert!(
            t[0] >= before && t[4] <= after,
            "inside [{before}, {after}]: {t:?}"
        );
        // In an in-order queue, a command starts after the previous ends.
        assert!(
            t[2] + 1_000_000 >= previous_end,
            "in order: {t:?} after {previous_end}"
        );
        previous_end = t[3];
    }
    let mut dev = 0;
    let mut host = 0;
    unsafe {
        assert_eq!(
            cl.clGetDeviceAndHostTimer.unwrap()(cl.device(), &mut dev, &mut host),
            CL_SUCCESS
        );
    }
    assert!(host >= after && dev >= after);
    release_all(cl, &events);
    unsafe {
        assert_eq!(cl.clReleaseMemObject.unwrap()(a), CL_SUCCESS);
        assert_eq!(cl.clReleaseMemObject.unwrap()(b), CL_SUCCESS);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn out_of_order_queue_with_barrier(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    let buf = cl.buffer(c, CL_MEM_READ_WRITE, 1024, std::ptr::null_mut());
    let gate = cl.user_event(c);
    let held = [1u8; 512];
    let free = [2u8; 512];
    let mut e_held: cl_event = std::ptr::null_mut();
    let mut e_free: cl_event = std::ptr::null_mut();
    unsafe {
        // Out of order: a command held by the gate does not block an
        // independent one behind it.
        assert_eq!(
            cl.clEnqueueWriteBuffer.unwrap()(
                q,
                buf,
                CL_FALSE,
                0,
                512,
                held.as_ptr().cast(),
                1,
                &gate,
                &mut e_held
            ),
            CL_SUCCESS
        );
        assert_eq!(
            cl.clEnqueueWriteBuffer.unwrap()(
                q,
                buf,
                CL_FALSE,
                512,
                512,
                free.as_ptr().cast(),
                0,
                std::ptr::null(),
                &mut e_free
            ),
            CL_SUCCESS
        );
        assert_eq!(cl.clWaitForEvents.unwrap()(1, &e_free), CL_SUCCESS);
        assert!(cl.event_status(e_held) > CL_COMPLETE as cl_int);
        // A barrier waits for both; what follows waits for the barrier.
        let mut barrier: cl_event = std::ptr::null_mut();
        assert_eq!(
            cl.clEnqueueBarrierWithWaitList.unwrap()(q, 0, std::ptr::null(), &mut barrier),
            CL_SUCCESS
        );
        let mut out = vec![0u8; 1024];
        let mut e_read: cl_event = std::ptr::null_mut();
        assert_eq!(
            cl.clEnqueueReadBuffer.unwrap()(
                q,
                buf,
                CL_FALSE,
                0,
                1024,
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                &mut e_read
            ),
            CL_SUCCESS
        );
        assert_eq!(cl.clFlush.unwrap()(q), CL_SUCCESS);
        std::thread::sleep(Duration::from_millis(20));
        assert!(cl.event_status(barrier) > CL_COMPLETE as cl_int);
        assert!(cl.event_status(e_read) > CL_COMPLETE as cl_int);
        assert_eq!(
            cl.clSetUserEventStatus.unwrap()(gate, CL_COMPLETE as cl_int),
            CL_SUCCESS
        );
        assert_eq!(cl.clFinish.unwrap()(q), CL_SUCCESS);
        assert_eq!(&out[..512], &held[..]);
        assert_eq!(&out[512..], &free[..]);
        release_all(cl, &[e_held, e_free, barrier, e_read, gate]);
        assert_eq!(cl.clReleaseMemObject.unwrap()(buf), CL_SUCCESS);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn markers_and_wait_for_events(cl: &Cl) {
    let c = cl.context();
    let q1 = cl.queue(c, 0);
    let q2 = cl.queue(c, 0);
    let buf = cl.buffer(c, CL_MEM_READ_WRITE, 256, std::ptr::null_mut());
    let gate = cl.user_event(c);
    let data = [9u8; 256];
    unsafe {
        let mut w: cl_event = std::ptr::null_mut();
        assert_eq!(
            cl.clEnqueueWriteBuffer.unwrap()(
                q1,
                buf,
                CL_FALSE,
                0,
                256,
                data.as_ptr().cast(),
                1,
                &gate,
                &mut w
            ),
            CL_SUCCESS
        );
        // q2 waits for q1's write through clEnqueueWaitForEvents.
        assert_eq!(cl.clEnqueueWaitForEvents.unwrap()(q2, 1, &w), CL_SUCCESS);
        let mut marker: cl_event = std::ptr::null_mut();
        assert_eq!(cl.clEnqueueMarker.unwrap()(q2, &mut marker), CL_SUCCESS);
        assert_eq!(cl.clEnqueueMarker.unwrap()(q2, NULL_EV), CL_INVALID_VALUE);
        assert_eq!(cl.clEnqueueBarrier.unwrap()(q2), CL_SUCCESS);
        let mut out = vec![0u8; 256];
        let mut r: cl_event = std::ptr::null_mut();
        assert_eq!(
            cl.clEnqueueReadBuffer.unwrap()(
                q2,
                buf,
                CL_FALSE,
                0,
                256,
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                &mut r
            ),
            CL_SUCCESS
        );
        assert_eq!(cl.clFlush.unwrap()(q2), CL_SUCCESS);
        assert!(cl.event_status(marker) > CL_COMPLETE as cl_int);
        assert_eq!(
            cl.clSetUserEventStatus.unwrap()(gate, CL_COMPLETE as cl_int),
            CL_SUCCESS
        );
        let both = [marker, r];
        assert_eq!(cl.clWaitForEvents.unwrap()(2, both.as_ptr()), CL_SUCCESS);
        assert_eq!(out, data);
        // Event queries.
        let qb = query(|s, v, sr| cl.clGetEventInfo.unwrap()(r, CL_EVENT_COMMAND_QUEUE, s, v, sr))
            .unwrap();
        assert_eq!(usize_of(&qb), q2 as usize);
        let tb = query(|s, v, sr| cl.clGetEventInfo.unwrap()(r, CL_EVENT_COMMAND_TYPE, s, v, sr))
            .unwrap();
        assert_eq!(u32_of(&tb), CL_COMMAND_READ_BUFFER);
        let ub =
            query(|s, v, sr| cl.clGetEventInfo.unwrap()(gate, CL_EVENT_COMMAND_QUEUE, s, v, sr))
                .unwrap();
        assert_eq!(usize_of(&ub), 0, "user events have no queue");
        let cb =
            query(|s, v, sr| cl.clGetEventInfo.unwrap()(gate, CL_EVENT_CONTEXT, s, v, sr)).unwrap();
        assert_eq!(usize_of(&cb), c as usize);
        assert_eq!(cl.clRetainEvent.unwrap()(r), CL_SUCCESS);
        let rc =
            query(|s, v, sr| cl.clGetEventInfo.unwrap()(r, CL_EVENT_REFERENCE_COUNT, s, v, sr))
                .unwrap();
        assert_eq!(u32_of(&rc), 2);
        release_all(cl, &[w, marker, r, r, gate]);
        assert_eq!(cl.clReleaseMemObject.unwrap()(buf), CL_SUCCESS);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q1), CL_SUCCESS);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q2), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn queue_queries_and_release(cl: &Cl) {
    let c = cl.context();
    let d = cl.device();
    let props = [
        CL_QUEUE_PROPERTIES as cl_queue_properties,
        CL_QUEUE_PROFILING_ENABLE,
        0,
    ];
    let mut err = 1;
    let q =
        unsafe { cl.clCreateCommandQueueWithProperties.unwrap()(c, d, props.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let info =
        |p| query(|s, v, sr| unsafe { cl.clGetCommandQueueInfo.unwrap()(q, p, s, v, sr) }).unwrap();
    assert_eq!(usize_of(&info(CL_QUEUE_CONTEXT)), c as usize);
    assert_eq!(usize_of(&info(CL_QUEUE_DEVICE)), d as usize);
    assert_eq!(
        u64_of(&info(CL_QUEUE_PROPERTIES)),
        CL_QUEUE_PROFILING_ENABLE
    );
    let array: Vec<u8> = props.iter().flat_map(|v| v.to_ne_bytes()).collect();
    assert_eq!(info(CL_QUEUE_PROPERTIES_ARRAY), array);
    assert_eq!(u32_of(&info(CL_QUEUE_REFERENCE_COUNT)), 1);
    assert_eq!(usize_of(&info(CL_QUEUE_DEVICE_DEFAULT)), 0);
    unsafe {
        assert_eq!(cl.clRetainCommandQueue.unwrap()(q), CL_SUCCESS);
        assert_eq!(u32_of(&info(CL_QUEUE_REFERENCE_COUNT)), 2);
        // Work left in a queue when it is released still happens.
        let buf = cl.buffer(c, CL_MEM_READ_WRITE, 16, std::ptr::null_mut());
        let data = [5u8; 16];
        let mut w: cl_event = std::ptr::null_mut();
        assert_eq!(
            cl.clEnqueueWriteBuffer.unwrap()(
                q,
                buf,
                CL_FALSE,
                0,
                16,
                data.as_ptr().cast(),
                0,
                std::ptr::null(),
                &mut w
            ),
            CL_SUCCESS
        );
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        assert_eq!(cl.clWaitForEvents.unwrap()(1, &w), CL_SUCCESS);
        let q2 = cl.queue(c, 0);
        assert_eq!(cl.read(q2, buf, 0, 16), data);
        release_all(cl, &[w]);
        assert_eq!(cl.clReleaseMemObject.unwrap()(buf), CL_SUCCESS);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q2), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

/// Eight threads enqueue writes, copies and reads on two shared queues for
/// a while, each on its own slice of one buffer, checking every byte.
fn threads_hammer_shared_queues(cl: &Cl) {
    let seconds: u64 = std::env::var("VKCL_TEST_STRESS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let c = cl.context();
    let queues = [
        cl.queue(c, 0),
        cl.queue(c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE),
    ];
    const SLICE: usize = 64 * 1024;
    const THREADS: usize = 8;
    let buf = cl.buffer(
        c,
        CL_MEM_READ_WRITE,
        SLICE * THREADS * 2,
        std::ptr::null_mut(),
    );
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let total = Mutex::new(0usize);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let total = &total;
            let queues = queues.map(|q| q as usize);
            let buf = buf as usize;
            s.spawn(move || {
                let buf = buf as cl_mem;
                let queues = queues.map(|q| q as cl_command_queue);
                let mut rounds = 0usize;
                let mut seed = t as u64 * 7919 + 1;
                while Instant::now() < deadline {
                    let q = queues[rounds % 2];
                    let len = 1 + (next(&mut seed) as usize % SLICE);
                    let data: Vec<u8> = (0..len).map(|_| next(&mut seed) as u8).collect();
                    let base = t * 2 * SLICE;
                    // Write into the first half of the slice, copy to the
                    // second half, read both back. On the out-of-order
                    // queue the steps are chained with events.
                    unsafe {
                        let mut e1: cl_event = std::ptr::null_mut();
                        let mut e2: cl_event = std::ptr::null_mut();
                        assert_eq!(
                            cl.clEnqueueWriteBuffer.unwrap()(
                                q,
                                buf,
                                CL_FALSE,
                                base,
                                len,
                                data.as_ptr().cast(),
                                0,
                                std::ptr::null(),
                                &mut e1
                            ),
                            CL_SUCCESS
                        );
                        assert_eq!(
                            cl.clEnqueueCopyBuffer.unwrap()(
                                q,
                                buf,
                                buf,
                                base,
                                base + SLICE,
                                len,
                                1,
                                &e1,
                                &mut e2
                            ),
                            CL_SUCCESS
                        );
                        let mut a = vec![0u8; len];
                        let mut b = vec![0u8; len];
                        assert_eq!(
                            cl.clEnqueueReadBuffer.unwrap()(
                                q,
                                buf,
                                CL_FALSE,
                                base,
                                len,
                                a.as_mut_ptr().cast(),
                                1,
                                &e2,
                                std::ptr::null_mut()
                            ),
                            CL_SUCCESS
                        );
                        assert_eq!(
                            cl.clEnqueueReadBuffer.unwrap()(
                                q,
                                buf,
                                CL_TRUE,
                                base + SLICE,
                                len,
                                b.as_mut_ptr().cast(),
                                1,
                                &e2,
                                std::ptr::null_mut()
                            ),
                            CL_SUCCESS
                        );
                        // The non-blocking read is done once the queue is.
                        assert_eq!(cl.clFinish.unwrap()(q), CL_SUCCESS);
                        assert!(
                            a == data && b == data,
                            "thread {t} round {rounds}: data mismatch"
                        );
                        cl.clReleaseEvent.unwrap()(e1);
                        cl.clReleaseEvent.unwrap()(e2);
                    }
                    rounds += 1;
                }
                *total.lock().unwrap() += rounds;
            });
        }
    });
    assert!(*total.lock().unwrap() >= THREADS);
    unsafe {
        assert_eq!(cl.clReleaseMemObject.unwrap()(buf), CL_SUCCESS);
        for q in queues {
            assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        }
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// A kernel that runs a single work-item through `n` steps of a random
/// number generator: as long a command as a test needs.
const SPIN: &str = "kernel void spin(global uint *b, uint n) {
    uint x = b[0];
    for (uint i = 0; i < n; i++) x = x * 1664525u + 1013904223u;
    b[0] = x;
}";

/// Whether the device compiles OpenCL C (a build may lack the compiler:
/// Windows under Wine).
fn has_compiler(cl: &Cl) -> bool {
    let compiler = cl
        .device_bytes(cl.device(), CL_DEVICE_COMPILER_AVAILABLE)
        .unwrap();
    u32_of(&compiler) != CL_FALSE
}

/// On a profiling queue a command's event completes once the command is
/// done, while work submitted after it still runs: its device times are
/// read without waiting for the device to go idle (lavapipe's query pool
/// reads do wait, so they are not used).
fn a_profiled_command_completes_while_later_work_runs(cl: &Cl) {
    if !has_compiler(cl) {
        return;
    }
    let mut s = Setup::new(cl);
    let k = s.kernel(SPIN, "spin", "");
    let b = s.zeroed(64);
    s.arg(k, 0, &b);
    let profiled = cl.queue(s.c, CL_QUEUE_PROFILING_ENABLE);
    let plain = std::mem::replace(&mut s.q, profiled);
    s.arg(k, 1, &1u32);
    let short = s.launch(k, &[1]);
    s.arg(k, 1, &50_000_000u32);
    // 4096 work-items: a CPU device, whose loops end after a fixed number
    // of steps, still runs the kernel for a good fraction of a second
    // (lavapipe: 0.4 s); a GPU runs them side by side.
    let mut long = std::ptr::null_mut();
    unsafe {
        assert_eq!(
            cl.clEnqueueNDRangeKernel.unwrap()(
                s.q,
                k,
                1,
                std::ptr::null(),
                [4096usize].as_ptr(),
                [64usize].as_ptr(),
                0,
                std::ptr::null(),
                &mut long,
            ),
            CL_SUCCESS
        );
    }
    unsafe {
        assert_eq!(cl.clFlush.unwrap()(s.q), CL_SUCCESS);
        assert_eq!(cl.clWaitForEvents.unwrap()(1, &short), CL_SUCCESS);
    }
    let seen = host_timer(cl);
    unsafe { assert_eq!(cl.clWaitForEvents.unwrap()(1, &long), CL_SUCCESS) };
    let [.., short_end, _] = cl.profile(short);
    let [_, _, start, end, _] = cl.profile(long);
    assert!(
        seen < end,
        "{}: the short kernel (ended at {short_end} ns) was seen complete at {seen} ns, \
         after the long one behind it ran ({start} to {end} ns)",
        cl.how
    );
    unsafe {
        cl.clReleaseEvent.unwrap()(short);
        cl.clReleaseEvent.unwrap()(long);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(s.q), CL_SUCCESS);
    }
    s.q = plain;
}

/// A command submitted while the one before it on its in-order queue
/// still runs is not reported as running (the CTS's `events/waitlists`):
/// it is `CL_SUBMITTED` or further along, never `CL_RUNNING` while the
/// first is unfinished.
fn a_command_behind_a_running_one_is_not_running(cl: &Cl) {
    // The command kept running is a kernel.
    if !has_compiler(cl) {
        return;
    }
    let mut s = Setup::new(cl);
    let k = s.kernel(SPIN, "spin", "");
    let b = s.zeroed(64);
    s.arg(k, 0, &b);
    s.arg(k, 1, &50_000_000u32);
    let first = s.launch(k, &[1]);
    let mut out = [0u8; 64];
    let mut second = std::ptr::null_mut();
    unsafe {
        assert_eq!(
            cl.clEnqueueReadBuffer.unwrap()(
                s.q,
                b,
                CL_FALSE,
                0,
                64,
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                &mut second,
            ),
            CL_SUCCESS
        );
        assert_eq!(cl.clFlush.unwrap()(s.q), CL_SUCCESS);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut checked = 0;
    while cl.event_status(first) != CL_COMPLETE as cl_int && Instant::now() < deadline {
        let status = cl.event_status(second);
        // Read before the first's status: the first was unfinished then.
        if cl.event_status(first) != CL_COMPLETE as cl_int {
            assert_ne!(status, CL_RUNNING as cl_int, "{}", cl.how);
            checked += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(checked > 0, "{}: the first command ended too soon", cl.how);
    unsafe {
        assert_eq!(cl.clWaitForEvents.unwrap()(1, &second), CL_SUCCESS);
        cl.clReleaseEvent.unwrap()(first);
        cl.clReleaseEvent.unwrap()(second);
    }
}
