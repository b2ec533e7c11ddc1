//! The main job: a tiled matrix multiply (16x16 tiles staged in `__local`
//! memory, two barriers per step) on the default OpenCL device, checked
//! against a CPU reference and timed with event profiling.
//!
//! It uses whatever OpenCL the system's ICD loader (libOpenCL.so.1, or
//! OpenCL.dll on Windows) offers;
//! `scripts/main.sh` points the loader at the freshly built vkcl.
//!
//! With `--half`, on a device with cl_vkcl_cooperative_matrix, it runs
//! `coop_matmul.cl` instead: half inputs with float accumulation on the
//! tensor cores (cooperative matrices), 128 x 128 blocks of C per
//! work-group; it checks every entry up to N = 1024 and 4096 sampled ones
//! beyond, each against the bound of float accumulation (the inputs are
//! exact halves).
//!
//! Usage: cargo run --release --example matmul [N] [--half [-DSG_ROWS=..]
//! [-DSG_COLS=..] [-DBK=..]]   (N a multiple of 16, or of 128 with --half;
//! the -D options choose the cooperative kernel's shape, see its source)

use std::ffi::{CString, c_void};
use std::ptr::{null, null_mut};

use opencl_sys::cl_function_types::*;
use opencl_sys::*;

const SOURCE: &str = include_str!("../tests/kernels/matmul.cl");
const COOP_SOURCE: &str = include_str!("coop_matmul.cl");

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
    clGetKernelWorkGroupInfo: clGetKernelWorkGroupInfo_t,
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
        clGetKernelWorkGroupInfo: sym!(clGetKernelWorkGroupInfo: clGetKernelWorkGroupInfo_t),
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

/// The half bits of a multiple of 0.25 in [-4, 4] (exact in half).
fn half_bits(x: f32) -> u16 {
    if x == 0.0 {
        return 0;
    }
    let b = x.to_bits();
    let exp = ((b >> 23) & 0xff) as u16 + 15 - 127;
    ((b >> 16) & 0x8000) as u16 | (exp << 10) | ((b >> 13) & 0x3ff) as u16
}

fn run(n: usize, half: bool, defines: &[String]) -> Result<(), String> {
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
        let extensions = string_info(|s, v, r| {
            cl.clGetDeviceInfo.unwrap()(device, CL_DEVICE_EXTENSIONS, s, v, r)
        });
        if half
            && !extensions
                .split(' ')
                .any(|e| e == "cl_vkcl_cooperative_matrix")
        {
            return Err(format!(
                "{dname} does not offer cl_vkcl_cooperative_matrix (cooperative matrices)"
            ));
        }
        println!(
            "platform: {pname}\ndevice:   {dname}\nmatmul:   {n} x {n}, {}",
            if half {
                "half in, float accumulated, on cooperative matrices (128 x 128 blocks)"
            } else {
                "16 x 16 tiles in __local memory"
            }
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
        let src = CString::new(if half { COOP_SOURCE } else { SOURCE }).expect("no NUL");
        let mut ptr = src.as_ptr();
        let program = cl.clCreateProgramWithSource.unwrap()(ctx, 1, &mut ptr, null(), &mut err);
        check(err, "clCreateProgramWithSource")?;
        let options = if half {
            format!("-cl-std=CL3.0 {}", defines.join(" "))
        } else {
            String::new()
        };
        let options = CString::new(options).expect("options");
        if cl.clBuildProgram.unwrap()(program, 1, &device, options.as_ptr(), None, null_mut())
            != CL_SUCCESS
        {
            let log = string_info(|s, v, r| {
                cl.clGetProgramBuildInfo.unwrap()(program, device, CL_PROGRAM_BUILD_LOG, s, v, r)
            });
            return Err(format!("build failed:\n{log}"));
        }
        let name = CString::new(if half { "coop_matmul" } else { "matmul" }).expect("name");
        let kernel = cl.clCreateKernel.unwrap()(program, name.as_ptr(), &mut err);
        check(err, "clCreateKernel")?;
        let a: Vec<f32> = (0..n * n)
            .map(|i| ((i * 7) % 13) as f32 * 0.25 - 1.0)
            .collect();
        let b: Vec<f32> = (0..n * n)
            .map(|i| ((i * 5) % 11) as f32 * 0.5 - 2.0)
            .collect();
        let bytes = n * n * 4;
        let (ha, hb): (Vec<u16>, Vec<u16>) = if half {
            (
                a.iter().map(|&x| half_bits(x)).collect(),
                b.iter().map(|&x| half_bits(x)).collect(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let input_bytes = if half { n * n * 2 } else { bytes };
        let mk = |data: *const c_void| {
            let mut e = 0;
            let flags = if data.is_null() {
                CL_MEM_WRITE_ONLY
            } else {
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
            };
            let size = if data.is_null() { bytes } else { input_bytes };
            let m = cl.clCreateBuffer.unwrap()(ctx, flags, size, data as *mut c_void, &mut e);
            check(e, "clCreateBuffer").map(|_| m)
        };
        let (ba, bb, bc) = if half {
            (
                mk(ha.as_ptr().cast())?,
                mk(hb.as_ptr().cast())?,
                mk(null())?,
            )
        } else {
            (mk(a.as_ptr().cast())?, mk(b.as_ptr().cast())?, mk(null())?)
        };
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
        if half {
            // The kernel takes K after N.
            check(
                set(kernel, 4, 4, (&ni as *const cl_int).cast()),
                "clSetKernelArg",
            )?;
        }
        // The cooperative kernel's work-groups are counted in sub-groups:
        // its preferred multiple is the sub-group width.
        let mut width = 0usize;
        check(
            cl.clGetKernelWorkGroupInfo.unwrap()(
                kernel,
                device,
                CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                std::mem::size_of::<usize>(),
                (&mut width as *mut usize).cast(),
                null_mut(),
            ),
            "clGetKernelWorkGroupInfo",
        )?;
        // The kernel's sub-groups: 128 / SG_ROWS by 128 / SG_COLS.
        let define = |name: &str, default: usize| {
            defines
                .iter()
                .find_map(|d| d.strip_prefix(&format!("-D{name}="))?.parse().ok())
                .unwrap_or(default)
        };
        let groups = (128 / define("SG_ROWS", 64)) * (128 / define("SG_COLS", 64));
        let (global, local) = if half {
            ([n / 128 * groups * width, n / 128], [groups * width, 1])
        } else {
            ([n, n], [16usize, 16])
        };
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
        // CPU reference: every entry, or 4096 sampled ones for large N.
        // Each error is measured against the bound of float accumulation,
        // n units in the last place of the sum of the terms' magnitudes.
        let mut worst = 0f32;
        let entries: Vec<(usize, usize)> = if n <= 1024 {
            (0..n * n).map(|x| (x / n, x % n)).collect()
        } else {
            (0..4096)
                .map(|x| ((x * 7919) % n, (x * 104_729) % n))
                .collect()
        };
        for (i, j) in entries {
            let want: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
            let scale: f32 = (0..n).map(|k| (a[i * n + k] * b[k * n + j]).abs()).sum();
            let bound = n as f32 * f32::EPSILON * scale.max(1.0);
            worst = worst.max((want - c[i * n + j]).abs() / bound);
        }
        let gflops = 2.0 * (n as f64).powi(3) / ns.max(1) as f64;
        println!(
            "kernel:   {:.3} ms ({gflops:.2} GFLOP/s, from event profiling)",
            ns as f64 / 1e6
        );
        if worst > 1.0 {
            return Err(format!(
                "result differs from the CPU reference ({worst:.2} times the error bound)"
            ));
        }
        println!("result:   matches the CPU reference (largest error {worst:.2e} of the bound)");
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let half = args.iter().any(|a| a == "--half");
    let n: usize =
        args.iter()
            .find_map(|a| a.parse().ok())
            .unwrap_or(if half { 1024 } else { 512 });
    let step = if half { 128 } else { 16 };
    if n == 0 || n % step != 0 {
        eprintln!("N must be a positive multiple of {step}");
        std::process::exit(2);
    }
    let defines: Vec<String> = args
        .iter()
        .filter(|a| a.starts_with("-D"))
        .cloned()
        .collect();
    if let Err(e) = run(n, half, &defines) {
        eprintln!("matmul: {e}");
        std::process::exit(1);
    }
}
