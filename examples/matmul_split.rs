//! The tiled matrix multiply of `matmul`, split by rows over every GPU of
//! one context: A and B are buffers of the context, each device computes
//! its rows of C through sub-buffers of A and C, and the devices run at
//! once. Timed against the first device alone (the best of three runs,
//! after a warm-up run that also brings the inputs to each device), and
//! checked against a CPU reference on sampled entries.
//!
//! It uses whatever OpenCL the system's ICD loader offers, like `matmul`.
//!
//! Usage: cargo run --release --example matmul_split [N] [DEVICES]
//! (N a multiple of 16; DEVICES: how many to use, default all GPUs, or all
//! devices where there is no GPU)

use std::ffi::{CString, c_void};
use std::ptr::{null, null_mut};
use std::time::Instant;

use opencl_sys::cl_function_types::*;
use opencl_sys::*;

const SOURCE: &str = include_str!("../tests/kernels/matmul.cl");

// The entry points used, resolved from the ICD loader at run time.
#[allow(non_snake_case)]
struct Cl {
    _lib: libloading::Library,
    clGetPlatformIDs: clGetPlatformIDs_t,
    clGetDeviceIDs: clGetDeviceIDs_t,
    clGetDeviceInfo: clGetDeviceInfo_t,
    clCreateContext: clCreateContext_t,
    clCreateCommandQueueWithProperties: clCreateCommandQueueWithProperties_t,
    clCreateProgramWithSource: clCreateProgramWithSource_t,
    clBuildProgram: clBuildProgram_t,
    clCreateKernel: clCreateKernel_t,
    clCreateBuffer: clCreateBuffer_t,
    clCreateSubBuffer: clCreateSubBuffer_t,
    clSetKernelArg: clSetKernelArg_t,
    clEnqueueNDRangeKernel: clEnqueueNDRangeKernel_t,
    clEnqueueReadBuffer: clEnqueueReadBuffer_t,
    clFlush: clFlush_t,
    clWaitForEvents: clWaitForEvents_t,
    clGetEventProfilingInfo: clGetEventProfilingInfo_t,
    clReleaseEvent: clReleaseEvent_t,
}

fn load() -> Result<Cl, String> {
    let name = if cfg!(windows) {
        "OpenCL.dll"
    } else {
        "libOpenCL.so.1"
    };
    // SAFETY: opening the system's OpenCL loader, as any OpenCL program does.
    let lib = unsafe { libloading::Library::new(name) }
        .map_err(|e| format!("cannot open {name}: {e}"))?;
    macro_rules! sym {
        ($name:ident: $ty:ty) => {{
            // SAFETY: the symbol has the signature the OpenCL headers give it.
            let s: libloading::Symbol<*mut c_void> =
                unsafe { lib.get(concat!(stringify!($name), "\0").as_bytes()) }
                    .map_err(|e| format!("{}: {e}", stringify!($name)))?;
            // SAFETY: as above; Option<fn> has the layout of a nullable pointer.
            let f = unsafe { std::mem::transmute::<*mut c_void, $ty>(*s) };
            f.ok_or(concat!(stringify!($name), " is null"))?;
            f
        }};
    }
    Ok(Cl {
        clGetPlatformIDs: sym!(clGetPlatformIDs: clGetPlatformIDs_t),
        clGetDeviceIDs: sym!(clGetDeviceIDs: clGetDeviceIDs_t),
        clGetDeviceInfo: sym!(clGetDeviceInfo: clGetDeviceInfo_t),
        clCreateContext: sym!(clCreateContext: clCreateContext_t),
        clCreateCommandQueueWithProperties: sym!(clCreateCommandQueueWithProperties: clCreateCommandQueueWithProperties_t),
        clCreateProgramWithSource: sym!(clCreateProgramWithSource: clCreateProgramWithSource_t),
        clBuildProgram: sym!(clBuildProgram: clBuildProgram_t),
        clCreateKernel: sym!(clCreateKernel: clCreateKernel_t),
        clCreateBuffer: sym!(clCreateBuffer: clCreateBuffer_t),
        clCreateSubBuffer: sym!(clCreateSubBuffer: clCreateSubBuffer_t),
        clSetKernelArg: sym!(clSetKernelArg: clSetKernelArg_t),
        clEnqueueNDRangeKernel: sym!(clEnqueueNDRangeKernel: clEnqueueNDRangeKernel_t),
        clEnqueueReadBuffer: sym!(clEnqueueReadBuffer: clEnqueueReadBuffer_t),
        clFlush: sym!(clFlush: clFlush_t),
        clWaitForEvents: sym!(clWaitForEvents: clWaitForEvents_t),
        clGetEventProfilingInfo: sym!(clGetEventProfilingInfo: clGetEventProfilingInfo_t),
        clReleaseEvent: sym!(clReleaseEvent: clReleaseEvent_t),
        _lib: lib,
    })
}

fn check(code: cl_int, what: &str) -> Result<(), String> {
    if code == CL_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed with OpenCL error {code}"))
    }
}

/// One device's share: its queue, kernel, and sub-buffers of A and C.
struct Share {
    queue: cl_command_queue,
    kernel: cl_kernel,
    rows: usize,
}

struct Setup {
    cl: Cl,
    devices: Vec<cl_device_id>,
    context: cl_context,
    program: cl_program,
    a: cl_mem,
    b: cl_mem,
    c: cl_mem,
    queues: Vec<cl_command_queue>,
}

impl Setup {
    /// The devices to use and a context, queues and program for them.
    fn new(wanted: Option<usize>) -> Result<Setup, String> {
        let cl = load()?;
        // SAFETY (whole block): the OpenCL calls get the arguments their
        // specification asks for; every handle comes from the calls before.
        unsafe {
            let mut platform = null_mut();
            let mut count = 0;
            check(
                cl.clGetPlatformIDs.unwrap()(1, &mut platform, &mut count),
                "clGetPlatformIDs",
            )?;
            if count == 0 {
                return Err("no OpenCL platform".into());
            }
            let ids = |ty| {
                let mut n = 0;
                cl.clGetDeviceIDs.unwrap()(platform, ty, 0, null_mut(), &mut n);
                let mut v = vec![null_mut(); n as usize];
                cl.clGetDeviceIDs.unwrap()(platform, ty, n, v.as_mut_ptr(), null_mut());
                v
            };
            let mut devices = ids(CL_DEVICE_TYPE_GPU);
            if devices.is_empty() {
                devices = ids(CL_DEVICE_TYPE_ALL);
            }
            if let Some(n) = wanted {
                devices.truncate(n);
            }
            if devices.is_empty() {
                return Err("no OpenCL device".into());
            }
            let mut err = 0;
            let context = cl.clCreateContext.unwrap()(
                null(),
                devices.len() as cl_uint,
                devices.as_ptr(),
                None,
                null_mut(),
                &mut err,
            );
            check(err, "clCreateContext")?;
            let mut queues = Vec::new();
            let props = [
                CL_QUEUE_PROPERTIES as cl_queue_properties,
                CL_QUEUE_PROFILING_ENABLE,
                0,
            ];
            for &d in &devices {
                let q = cl.clCreateCommandQueueWithProperties.unwrap()(
                    context,
                    d,
                    props.as_ptr(),
                    &mut err,
                );
                check(err, "clCreateCommandQueueWithProperties")?;
                queues.push(q);
            }
            let src = CString::new(SOURCE).expect("no NUL in the source");
            let mut ptr = src.as_ptr();
            let program =
                cl.clCreateProgramWithSource.unwrap()(context, 1, &mut ptr, null(), &mut err);
            check(err, "clCreateProgramWithSource")?;
            // Built for every device of the context.
            check(
                cl.clBuildProgram.unwrap()(program, 0, null(), null(), None, null_mut()),
                "clBuildProgram",
            )?;
            Ok(Setup {
                cl,
                devices,
                context,
                program,
                a: null_mut(),
                b: null_mut(),
                c: null_mut(),
                queues,
            })
        }
    }

    fn device_name(&self, d: cl_device_id) -> String {
        let mut buf = [0u8; 256];
        // SAFETY: a device of the platform and a buffer of that size.
        unsafe {
            (self.cl.clGetDeviceInfo.unwrap())(
                d,
                CL_DEVICE_NAME,
                buf.len(),
                buf.as_mut_ptr().cast(),
                null_mut(),
            )
        };
        let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    }

    /// A buffer of the context: `data` copied in, or written by kernels.
    fn buffer(&self, bytes: usize, data: Option<&[f32]>) -> Result<cl_mem, String> {
        let (flags, ptr) = match data {
            Some(d) => (
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                d.as_ptr() as *mut c_void,
            ),
            None => (CL_MEM_WRITE_ONLY, null_mut()),
        };
        let mut err = 0;
        // SAFETY: `data`, when given, holds `bytes` bytes.
        let m =
            unsafe { self.cl.clCreateBuffer.unwrap()(self.context, flags, bytes, ptr, &mut err) };
        check(err, "clCreateBuffer").map(|_| m)
    }

    /// Rows `[from, from + rows)` of an N-column matrix buffer.
    fn rows_of(&self, m: cl_mem, n: usize, from: usize, rows: usize) -> Result<cl_mem, String> {
        let region = cl_buffer_region {
            origin: from * n * 4,
            size: rows * n * 4,
        };
        let mut err = 0;
        // SAFETY: a region inside the buffer.
        let s = unsafe {
            self.cl.clCreateSubBuffer.unwrap()(
                m,
                0,
                CL_BUFFER_CREATE_TYPE_REGION,
                (&region as *const cl_buffer_region).cast(),
                &mut err,
            )
        };
        check(err, "clCreateSubBuffer").map(|_| s)
    }

    /// The first `count` devices' shares of the N rows (multiples of 16).
    fn shares(&self, n: usize, count: usize) -> Result<Vec<Share>, String> {
        let tiles = n / 16;
        let mut shares = Vec::new();
        let mut row = 0;
        for i in 0..count {
            let rows = (tiles * (i + 1) / count - tiles * i / count) * 16;
            let name = CString::new("matmul").expect("kernel name");
            let mut err = 0;
            // SAFETY: the program was built for every device.
            let kernel =
                unsafe { self.cl.clCreateKernel.unwrap()(self.program, name.as_ptr(), &mut err) };
            check(err, "clCreateKernel")?;
            let (a, c) = (
                self.rows_of(self.a, n, row, rows)?,
                self.rows_of(self.c, n, row, rows)?,
            );
            let ni = n as cl_int;
            let set = self.cl.clSetKernelArg.unwrap();
            // SAFETY: arguments of the types the kernel declares.
            unsafe {
                check(
                    set(kernel, 0, 8, (&a as *const cl_mem).cast()),
                    "clSetKernelArg",
                )?;
                check(
                    set(kernel, 1, 8, (&self.b as *const cl_mem).cast()),
                    "clSetKernelArg",
                )?;
                check(
                    set(kernel, 2, 8, (&c as *const cl_mem).cast()),
                    "clSetKernelArg",
                )?;
                check(
                    set(kernel, 3, 4, (&ni as *const cl_int).cast()),
                    "clSetKernelArg",
                )?;
            }
            shares.push(Share {
                queue: self.queues[i],
                kernel,
                rows,
            });
            row += rows;
        }
        Ok(shares)
    }

    /// Runs every share at once: the wall time from the first enqueue to
    /// the last completion, and each device's kernel time (from event
    /// profiling), in seconds.
    fn run(&self, n: usize, shares: &[Share]) -> Result<(f64, Vec<f64>), String> {
        let start = Instant::now();
        let mut events = Vec::new();
        for s in shares {
            let global = [n, s.rows];
            let local = [16usize, 16];
            let mut ev = null_mut();
            // SAFETY: a kernel with its arguments set, on its device's queue.
            unsafe {
                check(
                    self.cl.clEnqueueNDRangeKernel.unwrap()(
                        s.queue,
                        s.kernel,
                        2,
                        null(),
                        global.as_ptr(),
                        local.as_ptr(),
                        0,
                        null(),
                        &mut ev,
                    ),
                    "clEnqueueNDRangeKernel",
                )?;
                self.cl.clFlush.unwrap()(s.queue);
            }
            events.push(ev);
        }
        let mut kernels = Vec::new();
        // SAFETY: events just returned, of queues with profiling.
        unsafe {
            check(
                self.cl.clWaitForEvents.unwrap()(events.len() as cl_uint, events.as_ptr()),
                "clWaitForEvents",
            )?;
            let wall = start.elapsed().as_secs_f64();
            for e in events {
                let time = |p| {
                    let mut t: cl_ulong = 0;
                    self.cl.clGetEventProfilingInfo.unwrap()(
                        e,
                        p,
                        8,
                        (&mut t as *mut cl_ulong).cast(),
                        null_mut(),
                    );
                    t
                };
                let ns =
                    time(CL_PROFILING_COMMAND_END).saturating_sub(time(CL_PROFILING_COMMAND_START));
                kernels.push(ns as f64 * 1e-9);
                self.cl.clReleaseEvent.unwrap()(e);
            }
            Ok((wall, kernels))
        }
    }
}

fn run(n: usize, wanted: Option<usize>) -> Result<(), String> {
    let mut setup = Setup::new(wanted)?;
    let count = setup.devices.len();
    for (i, &d) in setup.devices.iter().enumerate() {
        println!("device {i}: {}", setup.device_name(d));
    }
    println!("matmul:   {n} x {n}, split by rows over {count} device(s)");
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7) % 13) as f32 * 0.25 - 1.0)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i * 5) % 11) as f32 * 0.5 - 2.0)
        .collect();
    let bytes = n * n * 4;
    setup.a = setup.buffer(bytes, Some(&a))?;
    setup.b = setup.buffer(bytes, Some(&b))?;
    setup.c = setup.buffer(bytes, None)?;
    let flops = 2.0 * (n as f64).powi(3);
    let mut seconds = Vec::new();
    for used in [1, count] {
        let shares = setup.shares(n, used)?;
        // The first run brings A and B to each device.
        setup.run(n, &shares)?;
        // The best of three runs.
        let (s, kernels) = (0..3)
            .map(|_| setup.run(n, &shares))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .min_by(|x, y| x.0.total_cmp(&y.0))
            .expect("three runs");
        let each: Vec<String> = kernels.iter().map(|k| format!("{:.1}", k * 1e3)).collect();
        println!(
            "{used} device(s): {:.1} ms, {:.1} GFLOP/s (kernel ms per device: {})",
            s * 1e3,
            flops / s / 1e9,
            each.join(", ")
        );
        seconds.push(s);
        if count == 1 {
            break;
        }
    }
    if let [one, all] = seconds[..] {
        println!("speed-up over one device: {:.2}x", one / all);
    }
    // Sampled entries of C, read on the first device's queue, against a
    // CPU reference.
    let mut c = vec![0f32; n * n];
    // SAFETY: `c` holds the whole buffer.
    unsafe {
        check(
            setup.cl.clEnqueueReadBuffer.unwrap()(
                setup.queues[0],
                setup.c,
                CL_TRUE,
                0,
                bytes,
                c.as_mut_ptr().cast(),
                0,
                null(),
                null_mut(),
            ),
            "clEnqueueReadBuffer",
        )?;
    }
    let mut worst = 0f32;
    for s in 0..4096usize {
        let (i, j) = ((s * 7919) % n, (s * 104_729 + s / 7) % n);
        let want: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
        worst = worst.max((want - c[i * n + j]).abs() / want.abs().max(1.0));
    }
    if worst > 1e-3 {
        return Err(format!(
            "result differs from the CPU reference (relative error {worst})"
        ));
    }
    println!(
        "result:   4096 sampled entries match the CPU reference (max relative error {worst:.2e})"
    );
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let wanted: Option<usize> = args.next().and_then(|s| s.parse().ok());
    if n == 0 || n % 16 != 0 {
        eprintln!("N must be a positive multiple of 16");
        std::process::exit(2);
    }
    if let Err(e) = run(n, wanted) {
        eprintln!("matmul_split: {e}");
        std::process::exit(1);
    }
}
