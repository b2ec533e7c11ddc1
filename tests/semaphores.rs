//! cl_khr_semaphore: binary semaphores ordering work within and across
//! queues, waits enqueued before their signal, failures passed on, and
//! the errors the extension names, through the ICD loader and directly.

mod common;

use common::*;
use opencl_sys::*;

both_ways!(
    offered_and_queried,
    signal_orders_work_across_queues,
    wait_enqueued_before_its_signal,
    failed_signal_fails_the_wait,
    errors,
);

type Sem = SemaphoreApi;

impl SemaphoreApi {
    /// `f` (signal or wait) on the semaphores `list` (its pointer passed
    /// even when empty) after `waits`, without payloads.
    fn call(
        f: SemaphoreOp,
        q: cl_command_queue,
        list: &[cl_semaphore_khr],
        waits: &[cl_event],
        event: *mut cl_event,
    ) -> cl_int {
        let waits_ptr = if waits.is_empty() {
            std::ptr::null()
        } else {
            waits.as_ptr()
        };
        unsafe {
            f(
                q,
                list.len() as cl_uint,
                list.as_ptr(),
                std::ptr::null(),
                waits.len() as cl_uint,
                waits_ptr,
                event,
            )
        }
    }

    fn binary(&self, c: cl_context) -> cl_semaphore_khr {
        let props = [
            CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
            CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
            0,
        ];
        let mut err = 1;
        let s = unsafe { (self.create)(c, props.as_ptr(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        s
    }

    /// Signals (or waits for) `s` on `q` after `waits`; returns the event.
    fn op(
        &self,
        f: SemaphoreOp,
        q: cl_command_queue,
        s: cl_semaphore_khr,
        waits: &[cl_event],
    ) -> cl_event {
        let mut ev = std::ptr::null_mut();
        assert_eq!(Self::call(f, q, &[s], waits, &mut ev), CL_SUCCESS);
        ev
    }

    fn payload(&self, s: cl_semaphore_khr) -> u64 {
        let mut v = 7u64;
        let r = unsafe {
            (self.info)(
                s,
                CL_SEMAPHORE_PAYLOAD_KHR,
                8,
                (&mut v as *mut u64).cast(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS);
        v
    }
}

const SOURCE: &str = r#"
    // Slow enough that a consumer not ordered after it would see old data.
    kernel void produce(global uint *out, uint rounds) {
        uint i = get_global_id(0);
        uint v = i;
        for (uint r = 0; r < rounds; r++) v = v * 1664525u + 1013904223u;
        out[i] = v;
    }
    kernel void consume(global const uint *in, global uint *out) {
        uint i = get_global_id(0);
        out[i] = in[i] ^ 0x5a5a5a5au;
    }
"#;

fn expected(n: usize, rounds: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| {
            let mut v = i;
            for _ in 0..rounds {
                v = v.wrapping_mul(1664525).wrapping_add(1013904223);
            }
            v ^ 0x5a5a5a5a
        })
        .collect()
}

fn offered_and_queried(cl: &Cl) {
    let ext = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    assert!(ext.split(' ').any(|e| e == "cl_khr_semaphore"), "{ext}");
    let types = cl
        .device_bytes(cl.device(), CL_DEVICE_SEMAPHORE_TYPES_KHR)
        .unwrap();
    assert_eq!(types, CL_SEMAPHORE_TYPE_BINARY_KHR.to_ne_bytes());
    let sem = Sem::new(cl);
    let s = Setup::new(cl);
    let d = cl.device();
    let props = [
        CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
        CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
        CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR as cl_semaphore_properties_khr,
        d as cl_semaphore_properties_khr,
        CL_SEMAPHORE_DEVICE_HANDLE_LIST_END_KHR as cl_semaphore_properties_khr,
        0,
    ];
    let mut err = 1;
    let h = unsafe { (sem.create)(s.c, props.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let got = query(|size, value, ret| unsafe {
        (sem.info)(h, CL_SEMAPHORE_PROPERTIES_KHR, size, value, ret)
    })
    .unwrap();
    assert_eq!(got, bytes_of(&props));
    let got = query(|size, value, ret| unsafe {
        (sem.info)(h, CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR, size, value, ret)
    })
    .unwrap();
    assert_eq!(got, bytes_of(&[d as usize]));
    let count = |h| {
        u32_of(
            &query(|size, value, ret| unsafe {
                (sem.info)(h, CL_SEMAPHORE_REFERENCE_COUNT_KHR, size, value, ret)
            })
            .unwrap(),
        )
    };
    assert_eq!(count(h), 1);
    assert_eq!(unsafe { (sem.retain)(h) }, CL_SUCCESS);
    assert_eq!(count(h), 2);
    assert_eq!(unsafe { (sem.release)(h) }, CL_SUCCESS);
    assert_eq!(sem.payload(h), 0);
    assert_eq!(unsafe { (sem.release)(h) }, CL_SUCCESS);
}

fn signal_orders_work_across_queues(cl: &Cl) {
    let sem = Sem::new(cl);
    let mut s = Setup::new(cl);
    let producer_q = cl.queue(s.c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    let produce = s.kernel(SOURCE, "produce", "");
    let consume = s.kernel(SOURCE, "consume", "");
    let n = 1 << 14;
    let rounds = 2000u32;
    let mid = s.zeroed(4 * n);
    let out = s.zeroed(4 * n);
    s.arg(produce, 0, &mid);
    s.arg(produce, 1, &rounds);
    s.arg(consume, 0, &mid);
    s.arg(consume, 1, &out);
    let h = sem.binary(s.c);
    for _ in 0..3 {
        let global = [n];
        let mut produced = std::ptr::null_mut();
        let r = unsafe {
            cl.clEnqueueNDRangeKernel.unwrap()(
                producer_q,
                produce,
                1,
                std::ptr::null(),
                global.as_ptr(),
                std::ptr::null(),
                0,
                std::ptr::null(),
                &mut produced,
            )
        };
        assert_eq!(r, CL_SUCCESS);
        let signal = sem.op(sem.signal, producer_q, h, &[produced]);
        let wait = sem.op(sem.wait, s.q, h, &[]);
        s.run(consume, &[n], None, None);
        assert_eq!(s.words(out, n), expected(n, rounds), "{}", cl.how);
        for e in [produced, signal, wait] {
            assert_eq!(cl.event_status(e), CL_COMPLETE);
            unsafe { cl.clReleaseEvent.unwrap()(e) };
        }
        // The wait took the signal: nothing is left signalled.
        assert_eq!(sem.payload(h), 0);
    }
    unsafe {
        (sem.release)(h);
        cl.clReleaseCommandQueue.unwrap()(producer_q);
    }
}

fn wait_enqueued_before_its_signal(cl: &Cl) {
    let sem = Sem::new(cl);
    let mut s = Setup::new(cl);
    let producer_q = cl.queue(s.c, 0);
    let produce = s.kernel(SOURCE, "produce", "");
    let consume = s.kernel(SOURCE, "consume", "");
    let n = 4096;
    let rounds = 100u32;
    let mid = s.zeroed(4 * n);
    let out = s.zeroed(4 * n);
    s.arg(produce, 0, &mid);
    s.arg(produce, 1, &rounds);
    s.arg(consume, 0, &mid);
    s.arg(consume, 1, &out);
    let h = sem.binary(s.c);
    // The consumer's queue waits first; nothing has signalled yet.
    let wait = sem.op(sem.wait, s.q, h, &[]);
    s.run(consume, &[n], None, None);
    assert_eq!(unsafe { cl.clFlush.unwrap()(s.q) }, CL_SUCCESS);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(
        cl.event_status(wait) > CL_COMPLETE,
        "a wait ended before any signal"
    );
    let global = [n];
    let r = unsafe {
        cl.clEnqueueNDRangeKernel.unwrap()(
            producer_q,
            produce,
            1,
            std::ptr::null(),
            global.as_ptr(),
            std::ptr::null(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    let signal = sem.op(sem.signal, producer_q, h, &[]);
    assert_eq!(s.words(out, n), expected(n, rounds), "{}", cl.how);
    assert_eq!(cl.event_status(wait), CL_COMPLETE);
    // A signal nobody waits for stays: the payload says so once it ran.
    assert_eq!(unsafe { cl.clFinish.unwrap()(producer_q) }, CL_SUCCESS);
    let again = sem.op(sem.signal, producer_q, h, &[]);
    assert_eq!(unsafe { cl.clFinish.unwrap()(producer_q) }, CL_SUCCESS);
    assert_eq!(sem.payload(h), 1);
    let last = sem.op(sem.wait, s.q, h, &[]);
    assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
    assert_eq!(sem.payload(h), 0);
    unsafe {
        for e in [wait, signal, again, last] {
            cl.clReleaseEvent.unwrap()(e);
        }
        (sem.release)(h);
        cl.clReleaseCommandQueue.unwrap()(producer_q);
    }
}

fn failed_signal_fails_the_wait(cl: &Cl) {
    let sem = Sem::new(cl);
    let s = Setup::new(cl);
    let other = cl.queue(s.c, 0);
    let h = sem.binary(s.c);
    let mut err = 1;
    let gate = unsafe { cl.clCreateUserEvent.unwrap()(s.c, &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let signal = sem.op(sem.signal, other, h, &[gate]);
    let wait = sem.op(sem.wait, s.q, h, &[]);
    assert_eq!(
        unsafe { cl.clSetUserEventStatus.unwrap()(gate, -5) },
        CL_SUCCESS
    );
    unsafe {
        cl.clFinish.unwrap()(other);
        cl.clFinish.unwrap()(s.q);
    }
    assert!(cl.event_status(signal) < 0);
    assert!(
        cl.event_status(wait) < 0,
        "the wait ran although its signal failed"
    );
    unsafe {
        for e in [gate, signal, wait] {
            cl.clReleaseEvent.unwrap()(e);
        }
        (sem.release)(h);
        cl.clReleaseCommandQueue.unwrap()(other);
    }
}

fn errors(cl: &Cl) {
    let sem = Sem::new(cl);
    let s = Setup::new(cl);
    let create = |props: Option<&[cl_semaphore_properties_khr]>| {
        let mut err = 1;
        let h = unsafe {
            (sem.create)(
                s.c,
                props.map_or(std::ptr::null(), |p| p.as_ptr()),
                &mut err,
            )
        };
        if !h.is_null() {
            unsafe { (sem.release)(h) };
        }
        err
    };
    let ty = CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr;
    let binary = CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr;
    assert_eq!(create(None), CL_INVALID_VALUE);
    assert_eq!(create(Some(&[0])), CL_INVALID_VALUE);
    assert_eq!(create(Some(&[ty, 2, 0])), CL_INVALID_VALUE);
    assert_eq!(
        create(Some(&[ty, binary, ty, binary, 0])),
        CL_INVALID_PROPERTY
    );
    assert_eq!(create(Some(&[0x7777, 1, 0])), CL_INVALID_PROPERTY);
    let list = CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR as cl_semaphore_properties_khr;
    assert_eq!(create(Some(&[ty, binary, list, 0, 0])), CL_INVALID_DEVICE);
    let mut err = 1;
    let null_context =
        unsafe { (sem.create)(std::ptr::null_mut(), [ty, binary, 0].as_ptr(), &mut err) };
    assert!(null_context.is_null());
    assert_eq!(err, CL_INVALID_CONTEXT);

    let h = sem.binary(s.c);
    let none = Sem::call(sem.signal, s.q, &[h][..0], &[], std::ptr::null_mut());
    assert_eq!(none, CL_INVALID_VALUE);
    let junk: cl_semaphore_khr = junk_handle();
    let bad = Sem::call(sem.wait, s.q, &[junk], &[], std::ptr::null_mut());
    assert_eq!(bad, CL_INVALID_SEMAPHORE_KHR);
    let mut info = 0u64;
    let small = unsafe {
        (sem.info)(
            h,
            CL_SEMAPHORE_TYPE_KHR,
            0,
            (&mut info as *mut u64).cast(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(small, CL_INVALID_VALUE);
    assert_eq!(unsafe { (sem.release)(h) }, CL_SUCCESS);
    assert_eq!(unsafe { (sem.release)(h) }, CL_INVALID_SEMAPHORE_KHR);
}
