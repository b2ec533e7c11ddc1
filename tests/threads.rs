//! Many threads at once, through the ICD loader and directly: 16 threads
//! each with a context of its own, and 16 threads sharing one context.
//! They build programs, set arguments on shared and private kernels,
//! enqueue on shared and private in-order and out-of-order queues with
//! events crossing queues, use user events and callbacks, read blocking
//! and non-blocking, and release buffers and kernels while commands that
//! use them are in flight. Every result is checked.
//!
//! `VKCL_TEST_THREAD_COMMANDS` sets how many commands each of the two runs
//! enqueues in all (default 50,000: 100,000 per way of reaching vkcl).

mod common;

use std::ffi::{CString, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use opencl_sys::*;

both_ways!(threads_with_own_contexts, threads_sharing_a_context);

const THREADS: usize = 16;

/// `SALT` differs per program, so that programs built at once differ.
const SRC: &str = "kernel void axpb(global const uint* in, global uint* out, uint a, uint b) {\n\
         size_t i = get_global_id(0);\n\
         out[i] = in[i] * a + b + SALT;\n\
     }\n\
     kernel void bytes4(global const uchar* in, global uchar4* out) {\n\
         size_t i = get_global_id(0);\n\
         out[i] = vload4(i, in) + (uchar4)(SALT, SALT + 1, SALT + 2, SALT + 3);\n\
     }\n";

fn commands_per_run() -> usize {
    std::env::var("VKCL_TEST_THREAD_COMMANDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000)
}

fn next(seed: &mut u64) -> u32 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 16) as u32
}

/// A handle crossing threads: OpenCL objects may be used from any thread.
#[derive(Clone, Copy)]
struct H(usize);

impl H {
    fn of<T>(p: *mut T) -> H {
        H(p as usize)
    }
    fn get<T>(self) -> *mut T {
        self.0 as *mut T
    }
}

fn program(cl: &Cl, c: cl_context, salt: u32) -> cl_program {
    let src = CString::new(SRC).unwrap();
    let mut ptr = src.as_ptr();
    let mut err = 1;
    let p = unsafe {
        cl.clCreateProgramWithSource.unwrap()(c, 1, &mut ptr, std::ptr::null(), &mut err)
    };
    assert_eq!(err, CL_SUCCESS);
    let opts = CString::new(format!("-DSALT={salt}u")).unwrap();
    let r = unsafe {
        cl.clBuildProgram.unwrap()(
            p,
            0,
            std::ptr::null(),
            opts.as_ptr(),
            None,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS, "{}: build with SALT={salt}", cl.how);
    p
}

fn kernel(cl: &Cl, p: cl_program, name: &str) -> cl_kernel {
    let n = CString::new(name).unwrap();
    let mut err = 1;
    let k = unsafe { cl.clCreateKernel.unwrap()(p, n.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS, "{}: kernel {name}", cl.how);
    k
}

fn set_arg<T>(cl: &Cl, k: cl_kernel, i: u32, v: &T) {
    let r = unsafe {
        cl.clSetKernelArg.unwrap()(k, i, std::mem::size_of::<T>(), (v as *const T).cast())
    };
    assert_eq!(r, CL_SUCCESS, "{}: arg {i}", cl.how);
}

fn release_event(cl: &Cl, e: cl_event) {
    assert_eq!(unsafe { cl.clReleaseEvent.unwrap()(e) }, CL_SUCCESS);
}

extern "C" fn count_completion(_e: cl_event, status: cl_int, user: *mut c_void) {
    assert_eq!(status, CL_COMPLETE as cl_int);
    // SAFETY: the test passes a counter that outlives every callback.
    let n = unsafe { &*(user as *const AtomicUsize) };
    n.fetch_add(1, Ordering::SeqCst);
}

/// The queues and kernels one round uses.
struct Round {
    c: cl_context,
    /// Transfers go here (in-order) ...
    transfers: cl_command_queue,
    /// ... kernels here (out-of-order, or shared with other threads).
    kernels: cl_command_queue,
    axpb: cl_kernel,
    bytes4: cl_kernel,
    /// Held while setting arguments of and enqueueing a shared kernel:
    /// clSetKernelArg on one kernel is the application's to serialise.
    lock: Option<&'static Mutex<()>>,
    salt: u32,
}

/// One round: a non-blocking write on the transfer queue, a kernel on the
/// kernel queue waiting for it, a read back on the transfer queue waiting
/// for the kernel; returns the number of commands enqueued.
fn round(cl: &Cl, r: &Round, seed: &mut u64, n: usize, callbacks: &AtomicUsize) -> usize {
    let mut commands = 0;
    let vector = next(seed) % 2 == 0;
    let bytes = n * 4;
    let input: Vec<u8> = (0..bytes).map(|_| next(seed) as u8).collect();
    let flags = CL_MEM_READ_WRITE;
    let inb = cl.buffer(r.c, flags, bytes, std::ptr::null_mut());
    let outb = cl.buffer(r.c, flags, bytes, std::ptr::null_mut());
    let gate_with_user_event = next(seed) % 8 == 0;
    let gate = gate_with_user_event.then(|| {
        let mut err = 1;
        let u = unsafe { cl.clCreateUserEvent.unwrap()(r.c, &mut err) };
        assert_eq!(err, CL_SUCCESS);
        u
    });
    let mut write: cl_event = std::ptr::null_mut();
    let waits: Vec<cl_event> = gate.into_iter().collect();
    let e = unsafe {
        cl.clEnqueueWriteBuffer.unwrap()(
            r.transfers,
            inb,
            CL_FALSE,
            0,
            bytes,
            input.as_ptr().cast(),
            waits.len() as u32,
            if waits.is_empty() {
                std::ptr::null()
            } else {
                waits.as_ptr()
            },
            &mut write,
        )
    };
    assert_eq!(e, CL_SUCCESS, "{}: write", cl.how);
    commands += 1;
    if let Some(u) = gate {
        // The write waits for the host; let it go.
        assert_eq!(
            unsafe { cl.clSetUserEventStatus.unwrap()(u, CL_COMPLETE as cl_int) },
            CL_SUCCESS
        );
        release_event(cl, u);
    }
    let a = next(seed) | 1;
    let b = next(seed);
    let mut run: cl_event = std::ptr::null_mut();
    {
        let _held = r.lock.map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
        let (k, global) = if vector {
            set_arg(cl, r.bytes4, 0, &inb);
            set_arg(cl, r.bytes4, 1, &outb);
            (r.bytes4, n)
        } else {
            set_arg(cl, r.axpb, 0, &inb);
            set_arg(cl, r.axpb, 1, &outb);
            set_arg(cl, r.axpb, 2, &a);
            set_arg(cl, r.axpb, 3, &b);
            (r.axpb, n)
        };
        let e = unsafe {
            cl.clEnqueueNDRangeKernel.unwrap()(
                r.kernels,
                k,
                1,
                std::ptr::null(),
                &global,
                std::ptr::null(),
                1,
                &write,
                &mut run,
            )
        };
        assert_eq!(e, CL_SUCCESS, "{}: enqueue", cl.how);
        commands += 1;
    }
    // The input is released while the kernel may still read it.
    assert_eq!(unsafe { cl.clReleaseMemObject.unwrap()(inb) }, CL_SUCCESS);
    let e = unsafe {
        cl.clSetEventCallback.unwrap()(
            run,
            CL_COMPLETE as cl_int,
            Some(count_completion),
            callbacks as *const AtomicUsize as *mut c_void,
        )
    };
    assert_eq!(e, CL_SUCCESS);
    let mut got = vec![0u8; bytes];
    let blocking = next(seed) % 2 == 0;
    let mut read: cl_event = std::ptr::null_mut();
    let e = unsafe {
        cl.clEnqueueReadBuffer.unwrap()(
            r.transfers,
            outb,
            if blocking { CL_TRUE } else { CL_FALSE },
            0,
            bytes,
            got.as_mut_ptr().cast(),
            1,
            &run,
            &mut read,
        )
    };
    assert_eq!(e, CL_SUCCESS, "{}: read", cl.how);
    commands += 1;
    // The output is released before the read is waited for.
    assert_eq!(unsafe { cl.clReleaseMemObject.unwrap()(outb) }, CL_SUCCESS);
    if !blocking {
        assert_eq!(unsafe { cl.clWaitForEvents.unwrap()(1, &read) }, CL_SUCCESS);
    }
    for ev in [write, run, read] {
        release_event(cl, ev);
    }
    let want: Vec<u8> = if vector {
        input
            .iter()
            .enumerate()
            .map(|(i, &v)| v.wrapping_add((r.salt as u8).wrapping_add((i % 4) as u8)))
            .collect()
    } else {
        input
            .chunks_exact(4)
            .flat_map(|w| {
                u32_of(w)
                    .wrapping_mul(a)
                    .wrapping_add(b)
                    .wrapping_add(r.salt)
                    .to_ne_bytes()
            })
            .collect()
    };
    if got != want {
        let at = (0..bytes).find(|&i| got[i] != want[i]).unwrap_or(0);
        panic!(
            "{}: {} over {n} items (salt {}): byte {at} is {}, want {}",
            cl.how,
            if vector { "bytes4" } else { "axpb" },
            r.salt,
            got[at],
            want[at]
        );
    }
    commands
}

/// Waits until `n` callbacks have run (they run on vkcl's threads).
fn wait_callbacks(callbacks: &AtomicUsize, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while callbacks.load(Ordering::SeqCst) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {n} callbacks ran",
            callbacks.load(Ordering::SeqCst)
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

fn threads_with_own_contexts(cl: &Cl) {
    let per_thread = commands_per_run() / THREADS;
    let total = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let total = &total;
            s.spawn(move || {
                let c = cl.context();
                let salt = 1000 + t as u32;
                let p = program(cl, c, salt);
                let r = Round {
                    c,
                    transfers: cl.queue(c, 0),
                    kernels: cl.queue(c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE),
                    axpb: kernel(cl, p, "axpb"),
                    bytes4: kernel(cl, p, "bytes4"),
                    lock: None,
                    salt,
                };
                let callbacks = AtomicUsize::new(0);
                let mut seed = 0x9E37_79B9_7F4A_7C15 ^ t as u64;
                let (mut commands, mut rounds) = (0, 0);
                while commands < per_thread {
                    let n = 1 + (next(&mut seed) as usize % 2048);
                    commands += round(cl, &r, &mut seed, n, &callbacks);
                    rounds += 1;
                }
                wait_callbacks(&callbacks, rounds);
                unsafe {
                    cl.clReleaseKernel.unwrap()(r.axpb);
                    cl.clReleaseKernel.unwrap()(r.bytes4);
                    cl.clReleaseProgram.unwrap()(p);
                    cl.clReleaseCommandQueue.unwrap()(r.transfers);
                    cl.clReleaseCommandQueue.unwrap()(r.kernels);
                    cl.clReleaseContext.unwrap()(c);
                }
                total.fetch_add(commands, Ordering::SeqCst);
            });
        }
    });
    assert!(total.load(Ordering::SeqCst) >= commands_per_run() / THREADS * THREADS);
}

fn threads_sharing_a_context(cl: &Cl) {
    static SHARED_KERNELS: Mutex<()> = Mutex::new(());
    let per_thread = commands_per_run() / THREADS;
    let c = cl.context();
    let shared_queue = H::of(cl.queue(c, 0));
    let shared_program = program(cl, c, 7);
    let shared = (
        H::of(kernel(cl, shared_program, "axpb")),
        H::of(kernel(cl, shared_program, "bytes4")),
    );
    let ctx = H::of(c);
    let total = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let total = &total;
            s.spawn(move || {
                let c: cl_context = ctx.get();
                // Every other thread builds a program of its own.
                let own = (t % 2 == 1).then(|| {
                    let salt = 2000 + t as u32;
                    let p = program(cl, c, salt);
                    (p, kernel(cl, p, "axpb"), kernel(cl, p, "bytes4"), salt)
                });
                let private_queue = cl.queue(c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
                let in_order = cl.queue(c, 0);
                let callbacks = AtomicUsize::new(0);
                let mut seed = 0xD1B5_4A32_D192_ED03 ^ (t as u64) << 8;
                let (mut commands, mut rounds) = (0, 0);
                while commands < per_thread {
                    let use_shared = own.is_none() || next(&mut seed) % 2 == 0;
                    let r = match (own, use_shared) {
                        (Some((_, axpb, bytes4, salt)), false) => Round {
                            c,
                            transfers: in_order,
                            kernels: private_queue,
                            axpb,
                            bytes4,
                            lock: None,
                            salt,
                        },
                        _ => Round {
                            c,
                            // Transfers on the thread's out-of-order queue,
                            // the kernel on the queue all threads share.
                            transfers: if next(&mut seed) % 2 == 0 {
                                private_queue
                            } else {
                                in_order
                            },
                            kernels: shared_queue.get(),
                            axpb: shared.0.get(),
                            bytes4: shared.1.get(),
                            lock: Some(&SHARED_KERNELS),
                            salt: 7,
                        },
                    };
                    let n = 1 + (next(&mut seed) as usize % 2048);
                    commands += round(cl, &r, &mut seed, n, &callbacks);
                    rounds += 1;
                }
                wait_callbacks(&callbacks, rounds);
                unsafe {
                    if let Some((p, a, b, _)) = own {
                        // Released while the shared queue may still hold
                        // other threads' work.
                        cl.clReleaseKernel.unwrap()(a);
                        cl.clReleaseKernel.unwrap()(b);
                        cl.clReleaseProgram.unwrap()(p);
                    }
                    cl.clReleaseCommandQueue.unwrap()(private_queue);
                    cl.clReleaseCommandQueue.unwrap()(in_order);
                }
                total.fetch_add(commands, Ordering::SeqCst);
            });
        }
    });
    assert!(total.load(Ordering::SeqCst) >= per_thread * THREADS);
    unsafe {
        assert_eq!(cl.clFinish.unwrap()(shared_queue.get()), CL_SUCCESS);
        cl.clReleaseKernel.unwrap()(shared.0.get());
        cl.clReleaseKernel.unwrap()(shared.1.get());
        cl.clReleaseProgram.unwrap()(shared_program);
        cl.clReleaseCommandQueue.unwrap()(shared_queue.get());
        cl.clReleaseContext.unwrap()(c);
    }
}
