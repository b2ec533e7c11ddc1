//! A Vulkan program and OpenCL sharing one buffer and two semaphores
//! (cl_khr_external_memory and cl_khr_external_semaphore, opaque file
//! descriptors).
//!
//! Vulkan fills a buffer with 7s and signals a semaphore; OpenCL, which
//! imported the buffer's memory and the semaphore, waits for it, acquires
//! the buffer, runs `x[i] = 3 * x[i] + i`, releases the buffer and
//! signals a semaphore of its own that Vulkan imported; Vulkan waits for
//! that one and copies the buffer out. No host wait sits between the two
//! APIs. Where the device shares no semaphores (lavapipe), each side
//! waits for the other on the host instead.
//!
//! It uses the first OpenCL device with cl_khr_external_memory_opaque_fd,
//! through the system's ICD loader, and the Vulkan device whose UUID is
//! the OpenCL device's. Exits with 0 when every word is right, 1 when one
//! is not, 2 when no device can run it.
//!
//! Usage: cargo run --example vulkan_interop [WORDS]

mod vulkan;

use std::ffi::{CString, c_void};
use std::ptr::{null, null_mut};

use opencl_sys::cl_function_types::*;
use opencl_sys::*;

const SOURCE: &str = "kernel void triple(global uint *x) {
    uint i = get_global_id(0);
    x[i] = 3u * x[i] + i;
}";

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
    clCreateBufferWithProperties: clCreateBufferWithProperties_t,
    clSetKernelArg: clSetKernelArg_t,
    clEnqueueNDRangeKernel: clEnqueueNDRangeKernel_t,
    clFinish: clFinish_t,
    clGetExtensionFunctionAddressForPlatform: clGetExtensionFunctionAddressForPlatform_t,
}

fn load() -> Result<Cl, String> {
    // SAFETY: opening the system's OpenCL loader, as any OpenCL program does.
    let lib = unsafe { libloading::Library::new("libOpenCL.so.1") }
        .map_err(|e| format!("cannot open libOpenCL.so.1: {e}"))?;
    macro_rules! get {
        ($name:ident) => {
            // SAFETY: the symbol is the OpenCL entry point of that name.
            unsafe {
                *lib.get(concat!(stringify!($name), "\0").as_bytes())
                    .map_err(|e| format!("{}: {e}", stringify!($name)))?
            }
        };
    }
    Ok(Cl {
        clGetPlatformIDs: get!(clGetPlatformIDs),
        clGetDeviceIDs: get!(clGetDeviceIDs),
        clGetDeviceInfo: get!(clGetDeviceInfo),
        clCreateContext: get!(clCreateContext),
        clCreateCommandQueueWithProperties: get!(clCreateCommandQueueWithProperties),
        clCreateProgramWithSource: get!(clCreateProgramWithSource),
        clBuildProgram: get!(clBuildProgram),
        clCreateKernel: get!(clCreateKernel),
        clCreateBufferWithProperties: get!(clCreateBufferWithProperties),
        clSetKernelArg: get!(clSetKernelArg),
        clEnqueueNDRangeKernel: get!(clEnqueueNDRangeKernel),
        clFinish: get!(clFinish),
        clGetExtensionFunctionAddressForPlatform: get!(clGetExtensionFunctionAddressForPlatform),
        _lib: lib,
    })
}

/// cl_khr_semaphore and cl_khr_external_semaphore entry points.
struct Semaphores {
    create: unsafe extern "C" fn(
        cl_context,
        *const cl_semaphore_properties_khr,
        *mut cl_int,
    ) -> cl_semaphore_khr,
    signal: SemaphoreOp,
    wait: SemaphoreOp,
    handle: unsafe extern "C" fn(
        cl_semaphore_khr,
        cl_device_id,
        cl_external_semaphore_handle_type_khr,
        usize,
        *mut c_void,
        *mut usize,
    ) -> cl_int,
}

type SemaphoreOp = unsafe extern "C" fn(
    cl_command_queue,
    cl_uint,
    *const cl_semaphore_khr,
    *const cl_semaphore_payload_khr,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;

/// clEnqueueAcquireExternalMemObjectsKHR and the release.
type MemObjectsOp = unsafe extern "C" fn(
    cl_command_queue,
    cl_uint,
    *const cl_mem,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;

/// An extension entry point as its function type `F`.
///
/// # Safety
/// `F` is the function pointer type of the entry point `f` points to.
unsafe fn as_fn<F: Copy>(f: *mut c_void) -> F {
    // SAFETY: as the caller promises.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&f) }
}

fn check(what: &str, r: cl_int) -> Result<(), String> {
    if r == CL_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {r}"))
    }
}

fn device_bytes(cl: &Cl, d: cl_device_id, param: cl_device_info) -> Vec<u8> {
    let mut size = 0;
    // SAFETY (both): a size query, then a buffer of that size.
    unsafe { (cl.clGetDeviceInfo.unwrap())(d, param, 0, null_mut(), &mut size) };
    let mut bytes = vec![0u8; size];
    unsafe { (cl.clGetDeviceInfo.unwrap())(d, param, size, bytes.as_mut_ptr().cast(), null_mut()) };
    bytes
}

/// The first device with opaque file descriptor memory import, its
/// platform, and whether it also shares semaphores that way.
fn pick_device(cl: &Cl) -> Option<(cl_platform_id, cl_device_id, bool)> {
    let mut platforms = [null_mut(); 16];
    let mut n = 0;
    // SAFETY: room for 16 platforms.
    unsafe { (cl.clGetPlatformIDs.unwrap())(16, platforms.as_mut_ptr(), &mut n) };
    for &p in &platforms[..n as usize] {
        let mut devices = [null_mut(); 16];
        let mut m = 0;
        // SAFETY: room for 16 devices.
        unsafe {
            (cl.clGetDeviceIDs.unwrap())(p, CL_DEVICE_TYPE_ALL, 16, devices.as_mut_ptr(), &mut m)
        };
        for &d in &devices[..m as usize] {
            let ext =
                String::from_utf8_lossy(&device_bytes(cl, d, CL_DEVICE_EXTENSIONS)).into_owned();
            let has = |e: &str| ext.split_whitespace().any(|x| x == e);
            if has("cl_khr_external_memory_opaque_fd") {
                return Some((p, d, has("cl_khr_external_semaphore_opaque_fd")));
            }
        }
    }
    None
}

fn main() {
    let words: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1 << 20);
    match run(words) {
        Ok(true) => println!("vulkan_interop: all {words} words right"),
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("vulkan_interop: {e}");
            std::process::exit(2);
        }
    }
}

fn run(words: usize) -> Result<bool, String> {
    let cl = load()?;
    let (platform, device, cl_semaphores) =
        pick_device(&cl).ok_or("no OpenCL device imports opaque file descriptors")?;
    let uuid: [u8; 16] = device_bytes(&cl, device, CL_DEVICE_UUID_KHR)
        .try_into()
        .map_err(|_| "no device UUID")?;
    let mut vk = vulkan::VulkanSide::new(uuid, cl_semaphores)?;
    let semaphores = cl_semaphores && vk.has_semaphores();
    println!(
        "vulkan_interop: {words} words, synchronised by {}",
        if semaphores {
            "shared semaphores"
        } else {
            "host waits (no shared semaphores here)"
        }
    );

    // Vulkan's side: the buffer, and a semaphore it signals.
    let shared = vk.shared_buffer(4 * words as u64)?;
    let vk_done = if semaphores {
        Some(vk.semaphore()?)
    } else {
        None
    };

    // OpenCL's side: the same memory, and the same semaphore.
    let mut err = 0;
    // SAFETY (the OpenCL calls below): arguments as the specification asks.
    let ctx =
        unsafe { (cl.clCreateContext.unwrap())(null(), 1, &device, None, null_mut(), &mut err) };
    check("clCreateContext", err)?;
    let q =
        unsafe { (cl.clCreateCommandQueueWithProperties.unwrap())(ctx, device, null(), &mut err) };
    check("clCreateCommandQueueWithProperties", err)?;
    let props = [
        CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties,
        shared.fd as cl_mem_properties,
        0,
    ];
    let buf = unsafe {
        (cl.clCreateBufferWithProperties.unwrap())(
            ctx,
            props.as_ptr(),
            CL_MEM_READ_WRITE,
            4 * words,
            null_mut(),
            &mut err,
        )
    };
    check("importing the buffer", err)?;
    let ext_fn = |name: &str| {
        let n = CString::new(name).unwrap();
        let f =
            unsafe { (cl.clGetExtensionFunctionAddressForPlatform.unwrap())(platform, n.as_ptr()) };
        if f.is_null() {
            Err(format!("no {name}"))
        } else {
            Ok(f)
        }
    };
    // SAFETY (transmutes): the entry points have these signatures.
    let acquire: MemObjectsOp = unsafe { as_fn(ext_fn("clEnqueueAcquireExternalMemObjectsKHR")?) };
    let release: MemObjectsOp = unsafe { as_fn(ext_fn("clEnqueueReleaseExternalMemObjectsKHR")?) };
    let sems = if semaphores {
        Some(unsafe {
            Semaphores {
                create: as_fn(ext_fn("clCreateSemaphoreWithPropertiesKHR")?),
                signal: as_fn(ext_fn("clEnqueueSignalSemaphoresKHR")?),
                wait: as_fn(ext_fn("clEnqueueWaitSemaphoresKHR")?),
                handle: as_fn(ext_fn("clGetSemaphoreHandleForTypeKHR")?),
            }
        })
    } else {
        None
    };
    // Vulkan's semaphore, imported; and OpenCL's, exported to Vulkan.
    let (cl_waits_for, cl_signals, vk_waits_for) = match (&sems, vk_done) {
        (Some(s), Some(vk_sem)) => {
            let fd = vk.export_semaphore(vk_sem)?;
            let import = [
                CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
                CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
                CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR as cl_semaphore_properties_khr,
                fd as cl_semaphore_properties_khr,
                0,
            ];
            let imported = unsafe { (s.create)(ctx, import.as_ptr(), &mut err) };
            check("importing Vulkan's semaphore", err)?;
            let export = [
                CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
                CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
                CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR,
                CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR as cl_semaphore_properties_khr,
                CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR,
                0,
            ];
            let exportable = unsafe { (s.create)(ctx, export.as_ptr(), &mut err) };
            check("an exportable semaphore", err)?;
            let mut fd: i32 = -1;
            check("exporting OpenCL's semaphore", unsafe {
                (s.handle)(
                    exportable,
                    device,
                    CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR,
                    std::mem::size_of::<i32>(),
                    (&mut fd as *mut i32).cast(),
                    null_mut(),
                )
            })?;
            (
                Some(imported),
                Some(exportable),
                Some(vk.import_semaphore(fd)?),
            )
        }
        _ => (None, None, None),
    };

    let src = CString::new(SOURCE).unwrap();
    let mut src_ptr = src.as_ptr();
    let program =
        unsafe { (cl.clCreateProgramWithSource.unwrap())(ctx, 1, &mut src_ptr, null(), &mut err) };
    check("clCreateProgramWithSource", err)?;
    check("clBuildProgram", unsafe {
        (cl.clBuildProgram.unwrap())(program, 1, &device, null(), None, null_mut())
    })?;
    let name = CString::new("triple").unwrap();
    let kernel = unsafe { (cl.clCreateKernel.unwrap())(program, name.as_ptr(), &mut err) };
    check("clCreateKernel", err)?;
    check("clSetKernelArg", unsafe {
        (cl.clSetKernelArg.unwrap())(
            kernel,
            0,
            std::mem::size_of::<cl_mem>(),
            (&buf as *const cl_mem).cast(),
        )
    })?;

    // Vulkan produces; OpenCL waits for it on the device.
    vk.fill(&shared, 7, vk_done)?;
    if let (Some(s), Some(h)) = (&sems, cl_waits_for) {
        check("waiting for Vulkan", unsafe {
            (s.wait)(q, 1, &h, null(), 0, null(), null_mut())
        })?;
    }
    check("acquiring the buffer", unsafe {
        acquire(q, 1, &buf, 0, null(), null_mut())
    })?;
    let global = [words];
    check("clEnqueueNDRangeKernel", unsafe {
        (cl.clEnqueueNDRangeKernel.unwrap())(
            q,
            kernel,
            1,
            null(),
            global.as_ptr(),
            null(),
            0,
            null(),
            null_mut(),
        )
    })?;
    check("releasing the buffer", unsafe {
        release(q, 1, &buf, 0, null(), null_mut())
    })?;
    match (&sems, cl_signals) {
        (Some(s), Some(h)) => check("signalling Vulkan", unsafe {
            (s.signal)(q, 1, &h, null(), 0, null(), null_mut())
        })?,
        _ => check("clFinish", unsafe { (cl.clFinish.unwrap())(q) })?,
    }

    // Vulkan consumes, once OpenCL's semaphore is signalled.
    let got = vk.read(&shared, vk_waits_for)?;
    check("clFinish", unsafe { (cl.clFinish.unwrap())(q) })?;
    let wrong = got
        .iter()
        .enumerate()
        .filter(|&(i, &v)| v != 21 + i as u32)
        .count();
    if wrong > 0 {
        eprintln!(
            "vulkan_interop: {wrong} of {words} words wrong (first: {:?})",
            &got[..4.min(words)]
        );
    }
    // The process ends here: the OpenCL objects go with it.
    Ok(wrong == 0)
}
