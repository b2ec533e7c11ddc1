//! Shared test support: loads vkcl the two ways applications do — through
//! the system's OpenCL ICD loader with `OCL_ICD_VENDORS` naming only the
//! freshly built library, and by opening the library directly as a drop-in
//! `libOpenCL` — with the Khronos validation layer on and fatal.

#![allow(dead_code, non_snake_case)]

use std::ffi::{CString, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use opencl_sys::cl_function_types::*;
use opencl_sys::*;

macro_rules! cl_api {
    ($($name:ident: $ty:ty),* $(,)?) => {
        /// The OpenCL entry points the tests call, resolved from one library.
        pub struct Cl {
            pub how: &'static str,
            _lib: libloading::Library,
            $(pub $name: $ty,)*
        }

        impl Cl {
            fn load(how: &'static str, path: &str) -> Cl {
                // SAFETY: opening an OpenCL library runs its initialisers,
                // which is what any OpenCL application does.
                let lib = unsafe { libloading::Library::new(path) }
                    .unwrap_or_else(|e| panic!("cannot open {path}: {e}"));
                $(
                    // SAFETY: the symbol has the signature the OpenCL headers
                    // give it, which is what `$ty` spells.
                    let $name: $ty = unsafe {
                        let sym: libloading::Symbol<*mut c_void> =
                            lib.get(concat!(stringify!($name), "\0").as_bytes())
                                .unwrap_or_else(|e| panic!("{path} lacks {}: {e}", stringify!($name)));
                        std::mem::transmute::<*mut c_void, $ty>(*sym)
                    };
                    assert!($name.is_some(), "{} is null in {path}", stringify!($name));
                )*
                Cl { how, _lib: lib, $($name,)* }
            }
        }

        /// Every name in the table, for export checks.
        pub const CL_API_NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

cl_api! {
    clGetPlatformIDs: clGetPlatformIDs_t,
    clGetPlatformInfo: clGetPlatformInfo_t,
    clGetDeviceIDs: clGetDeviceIDs_t,
    clGetDeviceInfo: clGetDeviceInfo_t,
    clCreateSubDevices: clCreateSubDevices_t,
    clRetainDevice: clRetainDevice_t,
    clReleaseDevice: clReleaseDevice_t,
    clCreateContext: clCreateContext_t,
    clCreateContextFromType: clCreateContextFromType_t,
    clRetainContext: clRetainContext_t,
    clReleaseContext: clReleaseContext_t,
    clGetContextInfo: clGetContextInfo_t,
    clSetContextDestructorCallback: clSetContextDestructorCallback_t,
    clGetExtensionFunctionAddressForPlatform: clGetExtensionFunctionAddressForPlatform_t,
    clUnloadPlatformCompiler: clUnloadPlatformCompiler_t,
    clCreateCommandQueue: clCreateCommandQueue_t,
    clCreateCommandQueueWithProperties: clCreateCommandQueueWithProperties_t,
    clRetainCommandQueue: clRetainCommandQueue_t,
    clReleaseCommandQueue: clReleaseCommandQueue_t,
    clGetCommandQueueInfo: clGetCommandQueueInfo_t,
    clFlush: clFlush_t,
    clFinish: clFinish_t,
    clCreateBuffer: clCreateBuffer_t,
    clCreateBufferWithProperties: clCreateBufferWithProperties_t,
    clCreateSubBuffer: clCreateSubBuffer_t,
    clRetainMemObject: clRetainMemObject_t,
    clReleaseMemObject: clReleaseMemObject_t,
    clGetMemObjectInfo: clGetMemObjectInfo_t,
    clSetMemObjectDestructorCallback: clSetMemObjectDestructorCallback_t,
    clEnqueueReadBuffer: clEnqueueReadBuffer_t,
    clEnqueueWriteBuffer: clEnqueueWriteBuffer_t,
    clEnqueueCopyBuffer: clEnqueueCopyBuffer_t,
    clEnqueueFillBuffer: clEnqueueFillBuffer_t,
    clEnqueueReadBufferRect: clEnqueueReadBufferRect_t,
    clEnqueueWriteBufferRect: clEnqueueWriteBufferRect_t,
    clEnqueueCopyBufferRect: clEnqueueCopyBufferRect_t,
    clEnqueueMapBuffer: clEnqueueMapBuffer_t,
    clCreateImage: clCreateImage_t,
    clCreateImageWithProperties: clCreateImageWithProperties_t,
    clCreateImage2D: clCreateImage2D_t,
    clCreateImage3D: clCreateImage3D_t,
    clGetSupportedImageFormats: clGetSupportedImageFormats_t,
    clGetImageInfo: clGetImageInfo_t,
    clEnqueueReadImage: clEnqueueReadImage_t,
    clEnqueueWriteImage: clEnqueueWriteImage_t,
    clEnqueueCopyImage: clEnqueueCopyImage_t,
    clEnqueueCopyImageToBuffer: clEnqueueCopyImageToBuffer_t,
    clEnqueueCopyBufferToImage: clEnqueueCopyBufferToImage_t,
    clEnqueueFillImage: clEnqueueFillImage_t,
    clEnqueueMapImage: clEnqueueMapImage_t,
    clCreateSampler: clCreateSampler_t,
    clCreateSamplerWithProperties: clCreateSamplerWithProperties_t,
    clRetainSampler: clRetainSampler_t,
    clReleaseSampler: clReleaseSampler_t,
    clGetSamplerInfo: clGetSamplerInfo_t,
    clEnqueueUnmapMemObject: clEnqueueUnmapMemObject_t,
    clEnqueueMigrateMemObjects: clEnqueueMigrateMemObjects_t,
    clEnqueueMarkerWithWaitList: clEnqueueMarkerWithWaitList_t,
    clEnqueueBarrierWithWaitList: clEnqueueBarrierWithWaitList_t,
    clEnqueueMarker: clEnqueueMarker_t,
    clEnqueueBarrier: clEnqueueBarrier_t,
    clEnqueueWaitForEvents: clEnqueueWaitForEvents_t,
    clWaitForEvents: clWaitForEvents_t,
    clGetEventInfo: clGetEventInfo_t,
    clRetainEvent: clRetainEvent_t,
    clReleaseEvent: clReleaseEvent_t,
    clGetEventProfilingInfo: clGetEventProfilingInfo_t,
    clSetEventCallback: clSetEventCallback_t,
    clCreateUserEvent: clCreateUserEvent_t,
    clSetUserEventStatus: clSetUserEventStatus_t,
    clGetDeviceAndHostTimer: clGetDeviceAndHostTimer_t,
    clCreateProgramWithIL: clCreateProgramWithIL_t,
    clSetProgramSpecializationConstant: clSetProgramSpecializationConstant_t,
    clCreateProgramWithBinary: clCreateProgramWithBinary_t,
    clCreateProgramWithBuiltInKernels: clCreateProgramWithBuiltInKernels_t,
    clRetainProgram: clRetainProgram_t,
    clReleaseProgram: clReleaseProgram_t,
    clBuildProgram: clBuildProgram_t,
    clCompileProgram: clCompileProgram_t,
    clLinkProgram: clLinkProgram_t,
    clGetProgramInfo: clGetProgramInfo_t,
    clGetProgramBuildInfo: clGetProgramBuildInfo_t,
    clCreateKernel: clCreateKernel_t,
    clCreateKernelsInProgram: clCreateKernelsInProgram_t,
    clRetainKernel: clRetainKernel_t,
    clReleaseKernel: clReleaseKernel_t,
    clCloneKernel: clCloneKernel_t,
    clSetKernelArg: clSetKernelArg_t,
    clGetKernelInfo: clGetKernelInfo_t,
    clGetKernelArgInfo: clGetKernelArgInfo_t,
    clGetKernelWorkGroupInfo: clGetKernelWorkGroupInfo_t,
    clGetKernelSubGroupInfo: clGetKernelSubGroupInfo_t,
    clEnqueueNDRangeKernel: clEnqueueNDRangeKernel_t,
    clGetHostTimer: clGetHostTimer_t,
    clCreatePipe: clCreatePipe_t,
    clSetDefaultDeviceCommandQueue: clSetDefaultDeviceCommandQueue_t,
    clGetPipeInfo: clGetPipeInfo_t,
    clSVMAlloc: clSVMAlloc_t,
    clSVMFree: clSVMFree_t,
    clEnqueueSVMFree: clEnqueueSVMFree_t,
    clEnqueueSVMMemcpy: clEnqueueSVMMemcpy_t,
    clEnqueueSVMMemFill: clEnqueueSVMMemFill_t,
    clEnqueueSVMMap: clEnqueueSVMMap_t,
    clEnqueueSVMUnmap: clEnqueueSVMUnmap_t,
    clEnqueueSVMMigrateMem: clEnqueueSVMMigrateMem_t,
    clSetKernelArgSVMPointer: clSetKernelArgSVMPointer_t,
    clSetKernelExecInfo: clSetKernelExecInfo_t,
    clEnqueueNativeKernel: clEnqueueNativeKernel_t,
    clCreateProgramWithSource: clCreateProgramWithSource_t,
}

/// The directory holding the test binary's sibling build outputs
/// (`target/<profile>`).
pub fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent() // deps
        .and_then(|p| p.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

/// The freshly built library (`libvkcl.so`, or `vkcl.dll` on Windows),
/// checked once per test process.
pub fn library_path() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(checked_library).clone()
}

fn checked_library() -> PathBuf {
    let name = format!(
        "{}vkcl{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let lib = build_dir().join(name);
    assert!(
        lib.exists(),
        "{} is missing: build the library first",
        lib.display()
    );
    // `cargo test` builds the library only as the Rust crate the tests
    // link, not the shared library they open: one older than the sources
    // would test old code.
    let sources = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let built = std::fs::metadata(&lib).and_then(|m| m.modified());
    if let (Some(newest), Ok(built)) = (newest_file(&sources), built) {
        assert!(
            built >= newest,
            "{} is older than the sources: run `cargo build --lib` first",
            lib.display()
        );
    }
    lib
}

/// The latest modification time of the files under `dir` (none where it
/// cannot be read, as from an emulated Windows).
fn newest_file(dir: &std::path::Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            newest_file(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).ok()
        };
        newest = newest.max(time);
    }
    newest
}

/// Prepares the process environment once, before any OpenCL library is
/// opened: an ICD directory that names only this build, and fatal
/// validation.
pub fn environment() -> &'static PathBuf {
    static ICD_DIR: OnceLock<PathBuf> = OnceLock::new();
    ICD_DIR.get_or_init(|| {
        let dir = build_dir().join("test-icd");
        std::fs::create_dir_all(&dir).unwrap();
        // Written aside and renamed, so that a test process starting at
        // the same moment never reads a half-written file.
        let aside = dir.join(format!("vkcl.icd.{}", std::process::id()));
        std::fs::write(&aside, format!("{}\n", library_path().display())).unwrap();
        std::fs::rename(&aside, dir.join("vkcl.icd")).unwrap();
        // SAFETY: this runs once, inside a OnceLock that every test passes
        // through before it touches OpenCL, and no test reads or writes the
        // environment on another thread while it runs.
        unsafe {
            // ocl-icd reads the folder; the Khronos loader on Windows takes
            // the library itself (it has no folder of .icd files).
            if cfg!(windows) {
                std::env::set_var("OCL_ICD_FILENAMES", library_path());
            } else {
                std::env::set_var("OCL_ICD_VENDORS", &dir);
            }
            // Validation is fatal, unless the run asks otherwise (a GPU
            // machine whose validation layer predates an extension that
            // is under test).
            if std::env::var_os("VKCL_VALIDATION").is_none() {
                std::env::set_var("VKCL_VALIDATION", "abort");
            }
            // The test crates named *_device_local treat device memory as
            // discrete GPUs have it, whatever the device.
            if env!("CARGO_CRATE_NAME").ends_with("_device_local") {
                std::env::set_var("VKCL_DEVICE_LOCAL", "1");
            }
            // Those named *_staging do so too, and never import the
            // application's memory: every transfer goes through staging.
            if env!("CARGO_CRATE_NAME").ends_with("_staging") {
                std::env::set_var("VKCL_DEVICE_LOCAL", "1");
                std::env::set_var("VKCL_HOST_IMPORT", "0");
            }
            // Those named *_linear_images import images on external
            // memory as linear Vulkan images first.
            if env!("CARGO_CRATE_NAME").ends_with("_linear_images") {
                std::env::set_var("VKCL_LINEAR_IMPORT", "1");
            }
            // Those whose name has _two_devices see every Vulkan device
            // twice, as two devices that share nothing.
            if env!("CARGO_CRATE_NAME").contains("_two_devices") {
                std::env::set_var("VKCL_DEVICE_REPEAT", "2");
            }
            // Those named *_other_devices make every context hold, ahead
            // of the device asked for, another that the tests never use.
            if env!("CARGO_CRATE_NAME").ends_with("_other_devices") {
                std::env::set_var("VKCL_DEVICE_REPEAT", "2");
                std::env::set_var("VKCL_CONTEXT_OTHER_DEVICES", "1");
            }
            // Those named *_native_dot leave every integer dot product to
            // the device's own instructions where it has them.
            if env!("CARGO_CRATE_NAME").ends_with("_native_dot") {
                std::env::set_var("VKCL_NATIVE_DOT", "1");
            }
            // Those named *_without_compiler hide every program vkcl could
            // run (clang, llvm-spirv, spirv-link), as on a device that
            // ships none; the test itself finds clang first (`TEST_CLANG`).
            if env!("CARGO_CRATE_NAME").ends_with("_without_compiler") {
                if let Some(dir) = front_end_dir() {
                    std::env::set_var("VKCL_TEST_FRONT_END_DIR", dir);
                }
                std::env::set_var("VKCL_CLANG", "/nonexistent/clang");
                std::env::set_var("VKCL_LLVM_SPIRV", "/nonexistent/llvm-spirv");
                // Windows finds libraries through PATH: it stays there.
                if !cfg!(windows) {
                    std::env::set_var("PATH", "/nonexistent");
                }
            }
        }
        dir
    })
}

/// The folder of the newest `clang-N` that has an `llvm-spirv-N` beside
/// it on the `PATH`, as (folder, N).
fn front_end_dir() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    (15..=19).rev().find_map(|n| {
        std::env::split_paths(&path).find_map(|dir| {
            (dir.join(format!("clang-{n}")).is_file()
                && dir.join(format!("llvm-spirv-{n}")).is_file())
            .then(|| format!("{}:{n}", dir.display()))
        })
    })
}

/// vkcl reached through the system's ICD loader (ocl-icd).
pub fn loader() -> &'static Cl {
    static CL: OnceLock<Cl> = OnceLock::new();
    CL.get_or_init(|| {
        environment();
        Cl::load(
            "ICD loader",
            if cfg!(windows) {
                "OpenCL.dll"
            } else {
                "libOpenCL.so.1"
            },
        )
    })
}

/// vkcl opened directly, as a drop-in libOpenCL.
pub fn direct() -> &'static Cl {
    static CL: OnceLock<Cl> = OnceLock::new();
    CL.get_or_init(|| {
        environment();
        Cl::load("direct", library_path().to_str().unwrap())
    })
}

/// Defines one `#[test]` per way of loading vkcl for each listed function.
#[macro_export]
macro_rules! both_ways {
    ($($test:ident),* $(,)?) => {
        mod through_icd_loader {
            $(#[test] fn $test() { super::$test($crate::common::loader()) })*
        }
        mod directly_linked {
            $(#[test] fn $test() { super::$test($crate::common::direct()) })*
        }
    };
}

impl Cl {
    /// The vkcl platform as this library presents it.
    pub fn platform(&self) -> cl_platform_id {
        let mut n = 0;
        assert_eq!(
            unsafe { self.clGetPlatformIDs.unwrap()(0, std::ptr::null_mut(), &mut n) },
            CL_SUCCESS
        );
        let mut ids = vec![std::ptr::null_mut(); n as usize];
        assert_eq!(
            unsafe { self.clGetPlatformIDs.unwrap()(n, ids.as_mut_ptr(), std::ptr::null_mut()) },
            CL_SUCCESS
        );
        *ids.iter()
            .find(|&&p| self.platform_string(p, CL_PLATFORM_NAME) == "vkcl")
            .unwrap_or_else(|| panic!("{}: no vkcl platform among {n}", self.how))
    }

    pub fn platform_string(&self, p: cl_platform_id, param: cl_platform_info) -> String {
        let bytes = self.platform_bytes(p, param).expect("platform query");
        c_string(&bytes)
    }

    pub fn platform_bytes(
        &self,
        p: cl_platform_id,
        param: cl_platform_info,
    ) -> Result<Vec<u8>, cl_int> {
        query(|size, value, size_ret| unsafe {
            self.clGetPlatformInfo.unwrap()(p, param, size, value, size_ret)
        })
    }

    pub fn devices(&self, ty: cl_device_type) -> Result<Vec<cl_device_id>, cl_int> {
        let p = self.platform();
        let mut n = 0;
        let r = unsafe { self.clGetDeviceIDs.unwrap()(p, ty, 0, std::ptr::null_mut(), &mut n) };
        if r != CL_SUCCESS {
            return Err(r);
        }
        let mut ids = vec![std::ptr::null_mut(); n as usize];
        let r = unsafe {
            self.clGetDeviceIDs.unwrap()(p, ty, n, ids.as_mut_ptr(), std::ptr::null_mut())
        };
        if r != CL_SUCCESS {
            return Err(r);
        }
        Ok(ids)
    }

    pub fn device(&self) -> cl_device_id {
        self.devices(CL_DEVICE_TYPE_DEFAULT)
            .expect("a default device")[0]
    }

    pub fn device_bytes(&self, d: cl_device_id, param: cl_device_info) -> Result<Vec<u8>, cl_int> {
        query(|size, value, size_ret| unsafe {
            self.clGetDeviceInfo.unwrap()(d, param, size, value, size_ret)
        })
    }

    pub fn context_bytes(&self, c: cl_context, param: cl_context_info) -> Result<Vec<u8>, cl_int> {
        query(|size, value, size_ret| unsafe {
            self.clGetContextInfo.unwrap()(c, param, size, value, size_ret)
        })
    }

    /// An in-order queue (with `props` bits) on the default device.
    pub fn queue(&self, c: cl_context, props: cl_command_queue_properties) -> cl_command_queue {
        let d = self.device();
        let mut err = 1;
        let q = unsafe { self.clCreateCommandQueue.unwrap()(c, d, props, &mut err) };
        assert_eq!(err, CL_SUCCESS, "{}: clCreateCommandQueue", self.how);
        q
    }

    /// A buffer of `size` bytes.
    pub fn buffer(
        &self,
        c: cl_context,
        flags: cl_mem_flags,
        size: usize,
        host: *mut c_void,
    ) -> cl_mem {
        let mut err = 1;
        let b = unsafe { self.clCreateBuffer.unwrap()(c, flags, size, host, &mut err) };
        assert_eq!(err, CL_SUCCESS, "{}: clCreateBuffer", self.how);
        b
    }

    pub fn write(&self, q: cl_command_queue, b: cl_mem, offset: usize, data: &[u8]) {
        let r = unsafe {
            self.clEnqueueWriteBuffer.unwrap()(
                q,
                b,
                CL_TRUE,
                offset,
                data.len(),
                data.as_ptr().cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: write", self.how);
    }

    pub fn read(&self, q: cl_command_queue, b: cl_mem, offset: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        let r = unsafe {
            self.clEnqueueReadBuffer.unwrap()(
                q,
                b,
                CL_TRUE,
                offset,
                len,
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: read", self.how);
        out
    }

    /// A new user event of `c`, in CL_SUBMITTED.
    pub fn user_event(&self, c: cl_context) -> cl_event {
        let mut err = 1;
        let u = unsafe { self.clCreateUserEvent.unwrap()(c, &mut err) };
        assert_eq!(err, CL_SUCCESS, "{}: clCreateUserEvent", self.how);
        assert_eq!(self.event_status(u), CL_SUBMITTED as cl_int);
        u
    }

    /// An event's profiling times: queued, submit, start, end, complete.
    pub fn profile(&self, e: cl_event) -> [u64; 5] {
        [
            CL_PROFILING_COMMAND_QUEUED,
            CL_PROFILING_COMMAND_SUBMIT,
            CL_PROFILING_COMMAND_START,
            CL_PROFILING_COMMAND_END,
            CL_PROFILING_COMMAND_COMPLETE,
        ]
        .map(|p| {
            let b = query(|size, value, size_ret| unsafe {
                self.clGetEventProfilingInfo.unwrap()(e, p, size, value, size_ret)
            })
            .unwrap();
            u64_of(&b)
        })
    }

    pub fn event_status(&self, e: cl_event) -> cl_int {
        let b = query(|size, value, size_ret| unsafe {
            self.clGetEventInfo.unwrap()(
                e,
                CL_EVENT_COMMAND_EXECUTION_STATUS,
                size,
                value,
                size_ret,
            )
        })
        .unwrap();
        i32::from_ne_bytes(b.try_into().unwrap())
    }

    /// A context on the default device.
    pub fn context(&self) -> cl_context {
        let d = self.device();
        let mut err = 1;
        let c = unsafe {
            self.clCreateContext.unwrap()(
                std::ptr::null(),
                1,
                &d,
                None,
                std::ptr::null_mut(),
                &mut err,
            )
        };
        assert_eq!(err, CL_SUCCESS);
        assert!(!c.is_null());
        c
    }
}

/// A program from one NUL-terminated source string.
pub fn with_source(cl: &Cl, c: cl_context, src: &str) -> cl_program {
    let text = CString::new(src).unwrap();
    let mut ptr = text.as_ptr();
    let mut err = 1;
    let p = unsafe {
        cl.clCreateProgramWithSource.unwrap()(c, 1, &mut ptr, std::ptr::null(), &mut err)
    };
    assert_eq!(err, CL_SUCCESS, "{}: clCreateProgramWithSource", cl.how);
    assert!(!p.is_null());
    p
}

/// clCreateKernel; on failure the handle must be null.
pub fn kernel(cl: &Cl, p: cl_program, name: &str) -> Result<cl_kernel, cl_int> {
    let n = CString::new(name).unwrap();
    let mut err = 1;
    let k = unsafe { cl.clCreateKernel.unwrap()(p, n.as_ptr(), &mut err) };
    if err == CL_SUCCESS {
        assert!(!k.is_null());
        Ok(k)
    } else {
        assert!(k.is_null(), "a failed clCreateKernel returns null");
        Err(err)
    }
}

/// Runs the two-call query protocol and checks it on the way: the size
/// query, the value query with exactly that size, and (for non-empty
/// answers) a one-byte-too-small buffer rejected with CL_INVALID_VALUE.
pub fn query(f: impl Fn(usize, *mut c_void, *mut usize) -> cl_int) -> Result<Vec<u8>, cl_int> {
    let mut size = usize::MAX;
    let r = f(0, std::ptr::null_mut(), &mut size);
    if r != CL_SUCCESS {
        return Err(r);
    }
    assert_ne!(size, usize::MAX, "size not written");
    let mut buf = vec![0xAAu8; size + 8];
    let mut size2 = usize::MAX;
    assert_eq!(f(size, buf.as_mut_ptr().cast(), &mut size2), CL_SUCCESS);
    assert_eq!(size, size2, "size changed between calls");
    assert!(
        buf[size..].iter().all(|&b| b == 0xAA),
        "wrote past the reported size"
    );
    if size > 0 {
        let mut small = vec![0u8; size - 1];
        assert_eq!(
            f(size - 1, small.as_mut_ptr().cast(), std::ptr::null_mut()),
            CL_INVALID_VALUE,
            "a too-small buffer must be rejected"
        );
    }
    // A value query without size_ret is also fine.
    assert_eq!(
        f(size, buf.as_mut_ptr().cast(), std::ptr::null_mut()),
        CL_SUCCESS
    );
    buf.truncate(size);
    Ok(buf)
}

/// A NUL-terminated string answer, checked for its terminator.
pub fn c_string(bytes: &[u8]) -> String {
    assert_eq!(bytes.last(), Some(&0), "string answers end in NUL");
    assert!(!bytes[..bytes.len() - 1].contains(&0), "one NUL only");
    String::from_utf8(bytes[..bytes.len() - 1].to_vec()).expect("UTF-8")
}

pub fn u32_of(b: &[u8]) -> u32 {
    u32::from_ne_bytes(b.try_into().expect("4 bytes"))
}

pub fn u64_of(b: &[u8]) -> u64 {
    u64::from_ne_bytes(b.try_into().expect("8 bytes"))
}

pub fn usize_of(b: &[u8]) -> usize {
    usize::from_ne_bytes(b.try_into().expect("pointer-sized"))
}

/// A pointer that is not a vkcl handle: it points at readable memory with
/// junk in it, so dereferencing it as a handle would go badly.
pub fn junk_handle<T>() -> *mut T {
    static JUNK: [u64; 16] = [0xDEAD_BEEF_DEAD_BEEF; 16];
    JUNK.as_ptr() as *mut T
}

/// One context and in-order queue on the default device, with the
/// programs, kernels and buffers a test makes, released on drop.
pub struct Setup<'a> {
    pub cl: &'a Cl,
    pub c: cl_context,
    pub q: cl_command_queue,
    mems: Vec<cl_mem>,
    objects: Vec<(cl_program, cl_kernel)>,
}

impl<'a> Setup<'a> {
    pub fn new(cl: &'a Cl) -> Self {
        Self::on(cl, cl.context())
    }

    /// A setup on context `c`, which it releases when dropped.
    pub fn on(cl: &'a Cl, c: cl_context) -> Self {
        let q = cl.queue(c, 0);
        Setup {
            cl,
            c,
            q,
            mems: Vec::new(),
            objects: Vec::new(),
        }
    }

    /// Builds OpenCL C `source` with `options` and makes kernel `name`.
    pub fn kernel(&mut self, source: &str, name: &str, options: &str) -> cl_kernel {
        let cl = self.cl;
        let p = with_source(cl, self.c, source);
        let opts = CString::new(options).unwrap();
        let d = cl.device();
        let r = unsafe {
            cl.clBuildProgram.unwrap()(p, 1, &d, opts.as_ptr(), None, std::ptr::null_mut())
        };
        let log = || {
            let bytes = query(|size, value, size_ret| unsafe {
                cl.clGetProgramBuildInfo.unwrap()(p, d, CL_PROGRAM_BUILD_LOG, size, value, size_ret)
            });
            c_string(&bytes.unwrap_or_default())
        };
        assert_eq!(r, CL_SUCCESS, "build with {options:?}: {}", log());
        let k = kernel(cl, p, name).unwrap_or_else(|e| panic!("kernel {name}: error {e}"));
        self.objects.push((p, k));
        k
    }

    pub fn buffer_from(&mut self, bytes: &[u8]) -> cl_mem {
        let b = self.cl.buffer(
            self.c,
            CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
            bytes.len(),
            bytes.as_ptr() as *mut c_void,
        );
        self.mems.push(b);
        b
    }

    pub fn buffer(&mut self, size: usize) -> cl_mem {
        let b = self
            .cl
            .buffer(self.c, CL_MEM_READ_WRITE, size, std::ptr::null_mut());
        self.mems.push(b);
        b
    }

    /// A buffer of `size` zero bytes.
    pub fn zeroed(&mut self, size: usize) -> cl_mem {
        self.buffer_from(&vec![0u8; size])
    }

    pub fn arg_bytes(&self, k: cl_kernel, i: u32, v: &[u8]) {
        let r = unsafe { self.cl.clSetKernelArg.unwrap()(k, i, v.len(), v.as_ptr().cast()) };
        assert_eq!(r, CL_SUCCESS, "arg {i}");
    }

    /// clEnqueueNDRangeKernel, returning its result.
    pub fn enqueue(
        &self,
        k: cl_kernel,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
    ) -> cl_int {
        unsafe {
            self.cl.clEnqueueNDRangeKernel.unwrap()(
                self.q,
                k,
                global.len() as u32,
                offset.map_or(std::ptr::null(), |o| o.as_ptr()),
                global.as_ptr(),
                local.map_or(std::ptr::null(), |l| l.as_ptr()),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        }
    }

    /// `count` 32-bit words of a buffer.
    pub fn words(&self, b: cl_mem, count: usize) -> Vec<u32> {
        let got = self.cl.read(self.q, b, 0, count * 4);
        got.chunks_exact(4).map(u32_of).collect()
    }

    pub fn arg<T>(&self, k: cl_kernel, i: u32, v: &T) {
        let r = unsafe {
            self.cl.clSetKernelArg.unwrap()(k, i, std::mem::size_of::<T>(), (v as *const T).cast())
        };
        assert_eq!(r, CL_SUCCESS, "arg {i}");
    }

    /// clEnqueueNDRangeKernel over `global` (one dimension or more),
    /// which must succeed, returning the command's event.
    pub fn launch(&self, k: cl_kernel, global: &[usize]) -> cl_event {
        let mut event = std::ptr::null_mut();
        let r = unsafe {
            self.cl.clEnqueueNDRangeKernel.unwrap()(
                self.q,
                k,
                global.len() as u32,
                std::ptr::null(),
                global.as_ptr(),
                std::ptr::null(),
                0,
                std::ptr::null(),
                &mut event,
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: clEnqueueNDRangeKernel", self.cl.how);
        event
    }

    /// clFinish on the queue, from another thread: what it returned, or
    /// `None` when it did not return within `limit`.
    pub fn finish_within(&self, limit: std::time::Duration) -> Option<cl_int> {
        let (tx, rx) = std::sync::mpsc::channel();
        let q = self.q as usize;
        let finish = self.cl.clFinish.unwrap();
        std::thread::spawn(move || {
            // SAFETY: a valid queue; a queue that never finishes keeps
            // this thread waiting, which ends with the process.
            let _ = tx.send(unsafe { finish(q as cl_command_queue) });
        });
        rx.recv_timeout(limit).ok()
    }

    pub fn run(
        &self,
        k: cl_kernel,
        global: &[usize],
        local: Option<&[usize]>,
        offset: Option<&[usize]>,
    ) {
        let r = self.enqueue(k, global, local, offset);
        assert_eq!(r, CL_SUCCESS, "{}: clEnqueueNDRangeKernel", self.cl.how);
    }
}

impl Drop for Setup<'_> {
    fn drop(&mut self) {
        let cl = self.cl;
        unsafe {
            for &m in &self.mems {
                cl.clReleaseMemObject.unwrap()(m);
            }
            for &(p, k) in &self.objects {
                cl.clReleaseKernel.unwrap()(k);
                cl.clReleaseProgram.unwrap()(p);
            }
            cl.clReleaseCommandQueue.unwrap()(self.q);
            cl.clReleaseContext.unwrap()(self.c);
        }
    }
}

/// An image description with the given type and sizes, everything else
/// zero (no pitches, mip levels, samples or buffer).
pub fn image_desc(
    ty: cl_mem_object_type,
    width: usize,
    height: usize,
    depth: usize,
    array_size: usize,
) -> cl_image_desc {
    // SAFETY: cl_image_desc is plain data (sizes, a union of a pointer),
    // for which all zeroes is valid.
    let mut desc: cl_image_desc = unsafe { std::mem::zeroed() };
    desc.image_type = ty;
    desc.image_width = width;
    desc.image_height = height;
    desc.image_depth = depth;
    desc.image_array_size = array_size;
    desc
}

/// The value of half-precision bits, by arithmetic on their fields.
pub fn half_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (h >> 10) & 0x1F;
    let mant = (h & 0x3FF) as f64;
    sign * match exp {
        0 => mant * 2f64.powi(-24),
        31 if mant == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1024.0 + mant) * 2f64.powi(e as i32 - 25),
    }
}

/// Little-endian 16-bit values read back from a buffer's bytes.
pub fn u16s(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2)
        .map(|c| u16::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Little-endian values read back from a buffer's bytes.
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

pub fn bytes_of<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain numbers viewed as bytes.
    unsafe {
        std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)).to_vec()
    }
}

/// An extension's entry point, from clGetExtensionFunctionAddressForPlatform,
/// as the function type `F` it has.
///
/// # Safety
/// `F` is the function pointer type of the entry point `name`.
pub unsafe fn extension_fn<F: Copy>(cl: &Cl, name: &str) -> F {
    let n = CString::new(name).unwrap();
    let f =
        unsafe { cl.clGetExtensionFunctionAddressForPlatform.unwrap()(cl.platform(), n.as_ptr()) };
    assert!(!f.is_null(), "{}: {name}", cl.how);
    // SAFETY: a function pointer, of the type the caller names.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&f) }
}

pub type CommandNdRange = unsafe extern "C" fn(
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

/// cl_khr_command_buffer's and its mutable dispatch's entry points.
pub struct CommandBufferApi {
    pub create: unsafe extern "C" fn(
        cl_uint,
        *const cl_command_queue,
        *const cl_command_buffer_properties_khr,
        *mut cl_int,
    ) -> cl_command_buffer_khr,
    pub finalize: unsafe extern "C" fn(cl_command_buffer_khr) -> cl_int,
    pub release: unsafe extern "C" fn(cl_command_buffer_khr) -> cl_int,
    pub enqueue: unsafe extern "C" fn(
        cl_uint,
        *mut cl_command_queue,
        cl_command_buffer_khr,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
    pub ndrange: CommandNdRange,
    pub fill: unsafe extern "C" fn(
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
    pub copy: unsafe extern "C" fn(
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
    pub barrier: unsafe extern "C" fn(
        cl_command_buffer_khr,
        cl_command_queue,
        *const cl_command_properties_khr,
        cl_uint,
        *const cl_sync_point_khr,
        *mut cl_sync_point_khr,
        *mut cl_mutable_command_khr,
    ) -> cl_int,
    pub info: unsafe extern "C" fn(
        cl_command_buffer_khr,
        cl_command_buffer_info_khr,
        usize,
        *mut c_void,
        *mut usize,
    ) -> cl_int,
    pub update: unsafe extern "C" fn(
        cl_command_buffer_khr,
        cl_uint,
        *const cl_command_buffer_update_type_khr,
        *mut *const c_void,
    ) -> cl_int,
    pub command_info: unsafe extern "C" fn(
        cl_mutable_command_khr,
        cl_mutable_command_info_khr,
        usize,
        *mut c_void,
        *mut usize,
    ) -> cl_int,
}

impl CommandBufferApi {
    pub fn new(cl: &Cl) -> CommandBufferApi {
        // SAFETY (each): the extension's entry point has this signature.
        unsafe {
            CommandBufferApi {
                create: extension_fn(cl, "clCreateCommandBufferKHR"),
                finalize: extension_fn(cl, "clFinalizeCommandBufferKHR"),
                release: extension_fn(cl, "clReleaseCommandBufferKHR"),
                enqueue: extension_fn(cl, "clEnqueueCommandBufferKHR"),
                ndrange: extension_fn(cl, "clCommandNDRangeKernelKHR"),
                fill: extension_fn(cl, "clCommandFillBufferKHR"),
                copy: extension_fn(cl, "clCommandCopyBufferKHR"),
                barrier: extension_fn(cl, "clCommandBarrierWithWaitListKHR"),
                info: extension_fn(cl, "clGetCommandBufferInfoKHR"),
                update: extension_fn(cl, "clUpdateMutableCommandsKHR"),
                command_info: extension_fn(cl, "clGetMutableCommandInfoKHR"),
            }
        }
    }
}

/// clEnqueueSignalSemaphoresKHR and clEnqueueWaitSemaphoresKHR.
pub type SemaphoreOp = unsafe extern "C" fn(
    cl_command_queue,
    cl_uint,
    *const cl_semaphore_khr,
    *const cl_semaphore_payload_khr,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;

/// cl_khr_semaphore's entry points.
pub struct SemaphoreApi {
    pub create: unsafe extern "C" fn(
        cl_context,
        *const cl_semaphore_properties_khr,
        *mut cl_int,
    ) -> cl_semaphore_khr,
    pub signal: SemaphoreOp,
    pub wait: SemaphoreOp,
    pub info:
        unsafe extern "C" fn(cl_semaphore_khr, cl_uint, usize, *mut c_void, *mut usize) -> cl_int,
    pub release: unsafe extern "C" fn(cl_semaphore_khr) -> cl_int,
    pub retain: unsafe extern "C" fn(cl_semaphore_khr) -> cl_int,
}

impl SemaphoreApi {
    pub fn new(cl: &Cl) -> SemaphoreApi {
        // SAFETY (each): the extension's entry point has this signature.
        unsafe {
            SemaphoreApi {
                create: extension_fn(cl, "clCreateSemaphoreWithPropertiesKHR"),
                signal: extension_fn(cl, "clEnqueueSignalSemaphoresKHR"),
                wait: extension_fn(cl, "clEnqueueWaitSemaphoresKHR"),
                info: extension_fn(cl, "clGetSemaphoreInfoKHR"),
                release: extension_fn(cl, "clReleaseSemaphoreKHR"),
                retain: extension_fn(cl, "clRetainSemaphoreKHR"),
            }
        }
    }
}
