//! The main job: a tiled matrix multiply (16x16 tiles staged in `__local`
//! memory, two barriers per step) on the default OpenCL device, checked
//! against a CPU reference and timed with event profiling.
//!
//! It uses whatever OpenCL the system's ICD loader (libOpenCL.so.1, or
//! OpenCL.dll on Windows) offers;
//! `scripts/main.sh` points the loader at the freshly built vkcl.
//!
//! Usage: cargo run --release --example matmul [N]   (N a multiple of 16)

use std::ffi::{CString, c_void};
use std::ptr::{null, null_mut};

use opencl_sys::cl_function_types::*;
use opencl_sys::*;

const SOURCE: &str = include_str!("../tests/kernels/matmul.cl");

// The entry points used, resolved from the ICD loader at run time.
#[allow(non_snake_case)]
struct Cl {
    _lib: libloading::Library,
    clGetPlatformIDs: clGetPlatformIDs_t,
    clGetPlatformInfo: clGetPlatformInfo_t,
    clGetDeviceIDs: clGetDeviceIDs_t,
    clGetDeviceInfo: clGetDeviceInfo_t,
    clCreateContext: clCreateContext_t,
    clCreateCommandQueueWithProperties: clCreateCommandQueueWithProperties_t,
    clCreateProgramWithSource: clCreateProgramWithSource_t,
    clBuildProgram: clBuildProgram_t,
    clGetProgramBuildInfo: clGetProgramBuildInfo_t,
    clCreateKernel: clCreateKernel_t,
    clCreateBuffer: clCreateBuffer_t,
    clSetKernelArg: clSetKernelArg_t,
    clEnqueueNDRangeKernel: clEnqueueNDRangeKernel_t,
    clEnqueueReadBuffer: clEnqueueReadBuffer_t,
    clWaitForEvents: clWaitForEvents_t,
    clGetEventProfilingInfo: clGetEventProfilingInfo_t,
}

fn load() -> Result<Cl, String> {
    // SAFETY: opening the system's OpenCL loader, as any OpenCL program does.
    let name = if cfg!(windows) {
        "OpenCL.dll"
    } else {
        "libOpenCL.so.1"
    };
    let lib = unsafe { libloading::Library::new(name) }
        .map_err(|e| format!("cannot open {name}: {e}"))?;
    macro_rules! sym {
        ($name:ident: $ty:ty) => {{
            // SAFETY: the symbol has the signature the OpenCL headers give it.
            let s: libloading::Symbol<*mut c_void> =
                unsafe { lib.get(concat!(stringify!($name), "\0").as_bytes()) }
                    .map_err(|e| format!("{}: {e}", stringify!($name)))?;
            // SAFETY: as above; Option<fn> has the layout of a nullable pointer.
            unsafe { std::mem::transmute::<*mut c_void, $ty>(*s) }
        }};
    }
    Ok(Cl {
        clGetPlatformIDs: sym!(clGetPlatformIDs: clGetPlatformIDs_t),
        clGetPlatformInfo: sym!(clGetPlatformInfo: clGetPlatformInfo_t),
        clGetDeviceIDs: sym!(clGetDeviceIDs: clGetDeviceIDs_t),
        clGetDeviceInfo: sym!(clGetDeviceInfo: clGetDeviceInfo_t),
        clCreateContext: sym!(clCreateContext: clCreateContext_t),
        clCreateCommandQueueWithProperties: sym!(clCreateCommandQueueWithProperties: clCreateCommandQueueWithProperties_t),
        clCreateProgramWithSource: sym!(clCreateProgramWithSource: clCreateProgramWithSource_t),
        clBuildProgram: sym!(clBuildProgram: clBuildProgram_t),
        clGetProgramBuildInfo: sym!(clGetProgramBuildInfo: clGetProgramBuildInfo_t),
        clCreateKernel: sym!(clCreateKernel: clCreateKernel_t),
        clCreateBuffer: sym!(clCreateBuffer: clCreateBuffer_t),
        clSetKernelArg: sym!(clSetKernelArg: clSetKernelArg_t),
        clEnqueueNDRangeKernel: sym!(clEnqueueNDRangeKernel: clEnqueueNDRangeKernel_t),
        clEnqueueReadBuffer: sym!(clEnqueueReadBuffer: clEnqueueReadBuffer_t),
        clWaitForEvents: sym!(clWaitForEvents: clWaitForEvents_t),
        clGetEventProfilingInfo: sym!(clGetEventProfilingInfo: clGetEventProfilingInfo_t),
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

fn string_info(f: impl Fn(usize, *mut c_void, *mut usize) -> cl_int) -> String {
    let mut size = 0;
    f(0, null_mut(), &mut size);
    let mut buf = vec![0u8; size];
    f(size, buf.as_mut_ptr().cast(), null_mut());
    String::from_utf8_lossy(&buf)
        .trim_end_matches('\0')
        .to_string()
}

fn run(n: usize) -> Result<(), String> {
    let cl = load()?;
    let f = |o: Option<_>, name: &str| o.ok_or_else(|| format!("{name} missing"));
    unsafe {
        let mut platforms = [null_mut(); 16];
        let mut count = 0;
        check(
            f(cl.clGetPlatformIDs, "clGetPlatformIDs")?(16, platforms.as_mut_ptr(), &mut count),
            "clGetPlatformIDs",
        )?;
        if count == 0 {
            return Err("no OpenCL platform".into());
        }
        let platform = platforms[0];
        let pname = string_info(|s, v, r| {
            cl.clGetPlatformInfo.unwrap()(platform, CL_PLATFORM_NAME, s, v, r)
        });
        let mut device = null_mut();
        check(
            cl.clGetDeviceIDs.unwrap()(
                platform,
                CL_DEVICE_TYPE_DEFAULT,
                1,
                &mut device,
                null_mut(),
            ),
            "clGetDeviceIDs",
        )?;
        let dname =
            string_info(|s, v, r| cl.clGetDeviceInfo.unwrap()(device, CL_DEVICE_NAME, s, v, r));
        println!(
            "platform: {pname}\ndevice:   {dname}\nmatmul:   {n} x {n}, 16 x 16 tiles in __local memory"
        );
        let mut err = 0;
        let ctx = cl.clCreateContext.unwrap()(null(), 1, &device, None, null_mut(), &mut err);
        check(err, "clCreateContext")?;
        let props = [
            CL_QUEUE_PROPERTIES as cl_queue_properties,
            CL_QUEUE_PROFILING_ENABLE,
            0,
        ];
        let queue =
            cl.clCreateCommandQueueWithProperties.unwrap()(ctx, device, props.as_ptr(), &mut err);
        check(err, "clCreateCommandQueueWithProperties")?;
        let src = CString::new(SOURCE).expect("no NUL in the source");
        let mut ptr = src.as_ptr();
        let program = cl.clCreateProgramWithSource.unwrap()(ctx, 1, &mut ptr, null(), &mut err);
        check(err, "clCreateProgramWithSource")?;
        if cl.clBuildProgram.unwrap()(program, 1, &device, null(), None, null_mut()) != CL_SUCCESS {
            let log = string_info(|s, v, r| {
                cl.clGetProgramBuildInfo.unwrap()(program, device, CL_PROGRAM_BUILD_LOG, s, v, r)
            });
            return Err(format!("build failed:\n{log}"));
        }
        let name = CString::new("matmul").expect("kernel name");
        let kernel = cl.clCreateKernel.unwrap()(program, name.as_ptr(), &mut err);
        check(err, "clCreateKernel")?;
        let a: Vec<f32> = (0..n * n)
            .map(|i| ((i * 7) % 13) as f32 * 0.25 - 1.0)
            .collect();
        let b: Vec<f32> = (0..n * n)
            .map(|i| ((i * 5) % 11) as f32 * 0.5 - 2.0)
            .collect();
        let bytes = n * n * 4;
        let mk = |data: *const f32| {
            let mut e = 0;
            let flags = if data.is_null() {
                CL_MEM_WRITE_ONLY
            } else {
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
            };
            let m = cl.clCreateBuffer.unwrap()(ctx, flags, bytes, data as *mut c_void, &mut e);
            check(e, "clCreateBuffer").map(|_| m)
        };
        let (ba, bb, bc) = (mk(a.as_ptr())?, mk(b.as_ptr())?, mk(null())?);
        let ni = n as cl_int;
        let set = cl.clSetKernelArg.unwrap();
        check(
            set(kernel, 0, 8, (&ba as *const cl_mem).cast()),
            "clSetKernelArg",
        )?;
        check(
            set(kernel, 1, 8, (&bb as *const cl_mem).cast()),
            "clSetKernelArg",
        )?;
        check(
            set(kernel, 2, 8, (&bc as *const cl_mem).cast()),
            "clSetKernelArg",
        )?;
        check(
            set(kernel, 3, 4, (&ni as *const cl_int).cast()),
            "clSetKernelArg",
        )?;
        let global = [n, n];
        let local = [16usize, 16];
        let mut event = null_mut();
        check(
            cl.clEnqueueNDRangeKernel.unwrap()(
                queue,
                kernel,
                2,
                null(),
                global.as_ptr(),
                local.as_ptr(),
                0,
                null(),
                &mut event,
            ),
            "clEnqueueNDRangeKernel",
        )?;
        let mut c = vec![0f32; n * n];
        check(
            cl.clEnqueueReadBuffer.unwrap()(
                queue,
                bc,
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
        check(cl.clWaitForEvents.unwrap()(1, &event), "clWaitForEvents")?;
        let time = |p| {
            let mut t: cl_ulong = 0;
            cl.clGetEventProfilingInfo.unwrap()(
                event,
                p,
                8,
                (&mut t as *mut cl_ulong).cast(),
                null_mut(),
            );
            t
        };
        let ns = time(CL_PROFILING_COMMAND_END).saturating_sub(time(CL_PROFILING_COMMAND_START));
        // CPU reference.
        let mut worst = 0f32;
        for i in 0..n {
            for j in 0..n {
                let want: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
                worst = worst.max((want - c[i * n + j]).abs() / want.abs().max(1.0));
            }
        }
        let gflops = 2.0 * (n as f64).powi(3) / ns.max(1) as f64;
        println!(
            "kernel:   {:.3} ms ({gflops:.2} GFLOP/s, from event profiling)",
            ns as f64 / 1e6
        );
        if worst > 1e-4 {
            return Err(format!(
                "result differs from the CPU reference (relative error {worst})"
            ));
        }
        println!("result:   matches the CPU reference (max relative error {worst:.2e})");
    }
    Ok(())
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(512);
    if n == 0 || n % 16 != 0 {
        eprintln!("N must be a positive multiple of 16");
        std::process::exit(2);
    }
    if let Err(e) = run(n) {
        eprintln!("matmul: {e}");
        std::process::exit(1);
    }
}
