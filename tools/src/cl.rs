//! OpenCL through the system's ICD loader (`libOpenCL.so.1`), loaded at run
//! time, so `vkcl run` and `vkcl bench` measure whichever platform is
//! selected: vkcl or any other OpenCL.

#![allow(non_snake_case)]

use std::ffi::{CString, c_void};

use opencl_sys::cl_function_types::*;
use opencl_sys::*;

macro_rules! api {
    ($($name:ident: $ty:ident),* $(,)?) => {
        /// The entry points the tool calls.
        pub struct Api {
            _lib: libloading::Library,
            $(pub $name: opencl_sys::cl_function_types::$ty,)*
        }

        impl Api {
            pub fn load() -> Result<Api, String> {
                let name = if cfg!(windows) { "OpenCL.dll" } else { "libOpenCL.so.1" };
                // SAFETY: loading an OpenCL loader runs its initialisers,
                // as linking it would.
                let lib = unsafe { libloading::Library::new(name) }
                    .map_err(|e| format!("cannot load the OpenCL ICD loader {name}: {e}"))?;
                $(
                    // SAFETY: the symbol has the type the OpenCL headers
                    // give it.
                    let $name: $ty = unsafe {
                        let sym: libloading::Symbol<*mut c_void> = lib
                            .get(concat!(stringify!($name), "\0").as_bytes())
                            .map_err(|e| format!("{name} lacks {}: {e}", stringify!($name)))?;
                        std::mem::transmute::<*mut c_void, $ty>(*sym)
                    };
                )*
                Ok(Api { _lib: lib, $($name,)* })
            }
        }
    };
}

api! {
    clGetPlatformIDs: clGetPlatformIDs_t,
    clGetPlatformInfo: clGetPlatformInfo_t,
    clGetDeviceIDs: clGetDeviceIDs_t,
    clGetDeviceInfo: clGetDeviceInfo_t,
    clCreateContext: clCreateContext_t,
    clReleaseContext: clReleaseContext_t,
    clCreateCommandQueueWithProperties: clCreateCommandQueueWithProperties_t,
    clReleaseCommandQueue: clReleaseCommandQueue_t,
    clFinish: clFinish_t,
    clFlush: clFlush_t,
    clCreateBuffer: clCreateBuffer_t,
    clReleaseMemObject: clReleaseMemObject_t,
    clEnqueueReadBuffer: clEnqueueReadBuffer_t,
    clEnqueueWriteBuffer: clEnqueueWriteBuffer_t,
    clEnqueueMapBuffer: clEnqueueMapBuffer_t,
    clEnqueueUnmapMemObject: clEnqueueUnmapMemObject_t,
    clWaitForEvents: clWaitForEvents_t,
    clCreateProgramWithIL: clCreateProgramWithIL_t,
    clGetExtensionFunctionAddressForPlatform: clGetExtensionFunctionAddressForPlatform_t,
    clCreateProgramWithBinary: clCreateProgramWithBinary_t,
    clReleaseEvent: clReleaseEvent_t,
    clGetEventProfilingInfo: clGetEventProfilingInfo_t,
    clCreateProgramWithSource: clCreateProgramWithSource_t,
    clReleaseProgram: clReleaseProgram_t,
    clBuildProgram: clBuildProgram_t,
    clGetProgramBuildInfo: clGetProgramBuildInfo_t,
    clCreateKernel: clCreateKernel_t,
    clReleaseKernel: clReleaseKernel_t,
    clSetKernelArg: clSetKernelArg_t,
    clGetKernelInfo: clGetKernelInfo_t,
    clGetKernelWorkGroupInfo: clGetKernelWorkGroupInfo_t,
    clEnqueueNDRangeKernel: clEnqueueNDRangeKernel_t,
}

/// `Err` with the call's name for a non-success code.
pub fn check(what: &str, code: cl_int) -> Result<(), String> {
    if code == CL_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed with error {code}"))
    }
}

/// Calls `f` twice, the OpenCL way: first for the size, then the bytes.
pub fn query(f: impl Fn(usize, *mut c_void, *mut usize) -> cl_int) -> Result<Vec<u8>, cl_int> {
    let mut size = 0;
    let r = f(0, std::ptr::null_mut(), &mut size);
    if r != CL_SUCCESS {
        return Err(r);
    }
    let mut bytes = vec![0u8; size];
    let r = f(size, bytes.as_mut_ptr().cast(), std::ptr::null_mut());
    if r != CL_SUCCESS {
        return Err(r);
    }
    Ok(bytes)
}

pub fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// A device with a context and a profiling queue on it.
pub struct Session {
    pub api: Api,
    pub platform: cl_platform_id,
    pub platform_name: String,
    pub device: cl_device_id,
    pub device_name: String,
    pub context: cl_context,
    pub queue: cl_command_queue,
}

impl Session {
    /// The `device`-th device of the first platform whose name contains
    /// `platform` (case-insensitively), or of the first platform.
    pub fn open(platform: Option<&str>, device: usize) -> Result<Session, String> {
        let api = Api::load()?;
        let platforms = unsafe {
            let mut n = 0;
            check(
                "clGetPlatformIDs",
                (api.clGetPlatformIDs.unwrap())(0, std::ptr::null_mut(), &mut n),
            )?;
            let mut p = vec![std::ptr::null_mut(); n as usize];
            check(
                "clGetPlatformIDs",
                (api.clGetPlatformIDs.unwrap())(n, p.as_mut_ptr(), std::ptr::null_mut()),
            )?;
            p
        };
        let name_of = |p: cl_platform_id| {
            query(|s, v, r| unsafe {
                (api.clGetPlatformInfo.unwrap())(p, CL_PLATFORM_NAME, s, v, r)
            })
            .map(|b| text(&b))
            .unwrap_or_default()
        };
        let chosen = platforms
            .iter()
            .copied()
            .find(|&p| {
                platform.is_none_or(|want| name_of(p).to_lowercase().contains(&want.to_lowercase()))
            })
            .ok_or_else(|| match platform {
                Some(want) => format!(
                    "no OpenCL platform named like {want:?} (found: {})",
                    platforms
                        .iter()
                        .map(|&p| name_of(p))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => "no OpenCL platform found".to_string(),
            })?;
        let devices = unsafe {
            let mut n = 0;
            check(
                "clGetDeviceIDs",
                (api.clGetDeviceIDs.unwrap())(
                    chosen,
                    CL_DEVICE_TYPE_ALL,
                    0,
                    std::ptr::null_mut(),
                    &mut n,
                ),
            )?;
            let mut d = vec![std::ptr::null_mut(); n as usize];
            check(
                "clGetDeviceIDs",
                (api.clGetDeviceIDs.unwrap())(
                    chosen,
                    CL_DEVICE_TYPE_ALL,
                    n,
                    d.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            )?;
            d
        };
        let dev = *devices.get(device).ok_or_else(|| {
            format!(
                "the platform has {} device(s); --device {device} is not one",
                devices.len()
            )
        })?;
        let device_name = query(|s, v, r| unsafe {
            (api.clGetDeviceInfo.unwrap())(dev, CL_DEVICE_NAME, s, v, r)
        })
        .map(|b| text(&b))
        .unwrap_or_default();
        let mut err = 0;
        let context = unsafe {
            (api.clCreateContext.unwrap())(
                std::ptr::null(),
                1,
                &dev,
                None,
                std::ptr::null_mut(),
                &mut err,
            )
        };
        check("clCreateContext", err)?;
        let props = [
            CL_QUEUE_PROPERTIES as cl_queue_properties,
            CL_QUEUE_PROFILING_ENABLE as cl_queue_properties,
            0,
        ];
        let queue = unsafe {
            (api.clCreateCommandQueueWithProperties.unwrap())(
                context,
                dev,
                props.as_ptr(),
                &mut err,
            )
        };
        check("clCreateCommandQueueWithProperties", err)?;
        Ok(Session {
            platform: chosen,
            platform_name: name_of(chosen),
            api,
            device: dev,
            device_name,
            context,
            queue,
        })
    }

    /// Another in-order queue on the session's device, without profiling.
    pub fn new_queue(&self) -> Result<cl_command_queue, String> {
        let mut err = 0;
        let props = [0 as cl_queue_properties];
        let queue = unsafe {
            (self.api.clCreateCommandQueueWithProperties.unwrap())(
                self.context,
                self.device,
                props.as_ptr(),
                &mut err,
            )
        };
        check("clCreateCommandQueueWithProperties", err)?;
        Ok(queue)
    }

    pub fn device_info(&self, param: cl_device_info) -> Vec<u8> {
        query(|s, v, r| unsafe { (self.api.clGetDeviceInfo.unwrap())(self.device, param, s, v, r) })
            .unwrap_or_default()
    }

    pub fn device_u64(&self, param: cl_device_info) -> u64 {
        let b = self.device_info(param);
        let mut w = [0u8; 8];
        w[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
        u64::from_ne_bytes(w)
    }

    /// Builds `source`; the build log is the error.
    /// A program built from `file`'s contents: a SPIR-V module (IL), a
    /// vkcl program binary, or OpenCL C source.
    pub fn program(&self, file: &[u8], options: &str) -> Result<cl_program, String> {
        let mut err = 0;
        let p = if file.starts_with(&0x0723_0203u32.to_le_bytes()) {
            let p = unsafe {
                (self.api.clCreateProgramWithIL.unwrap())(
                    self.context,
                    file.as_ptr().cast(),
                    file.len(),
                    &mut err,
                )
            };
            check("clCreateProgramWithIL", err)?;
            p
        } else if file.starts_with(b"VKCLBIN\0") {
            let mut status = 0;
            let mut ptr = file.as_ptr();
            let p = unsafe {
                (self.api.clCreateProgramWithBinary.unwrap())(
                    self.context,
                    1,
                    &self.device,
                    &file.len(),
                    &mut ptr,
                    &mut status,
                    &mut err,
                )
            };
            check("clCreateProgramWithBinary", err)?;
            p
        } else {
            let source = std::str::from_utf8(file)
                .map_err(|_| "the file is neither SPIR-V, a program binary nor UTF-8 text")?;
            let src =
                CString::new(source).map_err(|_| "the source holds a NUL byte".to_string())?;
            let mut ptr = src.as_ptr();
            let p = unsafe {
                (self.api.clCreateProgramWithSource.unwrap())(
                    self.context,
                    1,
                    &mut ptr,
                    std::ptr::null(),
                    &mut err,
                )
            };
            check("clCreateProgramWithSource", err)?;
            p
        };
        let opts = CString::new(options).map_err(|_| "the options hold a NUL byte".to_string())?;
        let r = unsafe {
            (self.api.clBuildProgram.unwrap())(
                p,
                1,
                &self.device,
                opts.as_ptr(),
                None,
                std::ptr::null_mut(),
            )
        };
        if r != CL_SUCCESS {
            let log = self.build_log(p);
            unsafe { (self.api.clReleaseProgram.unwrap())(p) };
            return Err(format!("the build failed (error {r}):\n{log}"));
        }
        Ok(p)
    }

    /// The build log of `program` on the session's device.
    pub fn build_log(&self, program: cl_program) -> String {
        query(|s, v, rr| unsafe {
            (self.api.clGetProgramBuildInfo.unwrap())(
                program,
                self.device,
                CL_PROGRAM_BUILD_LOG,
                s,
                v,
                rr,
            )
        })
        .map(|b| text(&b))
        .unwrap_or_default()
    }

    pub fn kernel(&self, program: cl_program, name: &str) -> Result<cl_kernel, String> {
        let n = CString::new(name).map_err(|_| "bad kernel name".to_string())?;
        let mut err = 0;
        let k = unsafe { (self.api.clCreateKernel.unwrap())(program, n.as_ptr(), &mut err) };
        if err == CL_INVALID_KERNEL_NAME {
            return Err(format!("the program has no kernel named {name:?}"));
        }
        check("clCreateKernel", err)?;
        Ok(k)
    }

    pub fn buffer(&self, size: usize, data: Option<&[u8]>) -> Result<cl_mem, String> {
        let mut err = 0;
        let flags = CL_MEM_READ_WRITE
            | if data.is_some() {
                CL_MEM_COPY_HOST_PTR
            } else {
                0
            };
        let host = data.map_or(std::ptr::null_mut(), |d| d.as_ptr() as *mut c_void);
        let b = unsafe {
            (self.api.clCreateBuffer.unwrap())(self.context, flags, size.max(1), host, &mut err)
        };
        check("clCreateBuffer", err)?;
        Ok(b)
    }

    pub fn set_arg(
        &self,
        k: cl_kernel,
        i: u32,
        size: usize,
        value: *const c_void,
    ) -> Result<(), String> {
        check(&format!("clSetKernelArg({i})"), unsafe {
            (self.api.clSetKernelArg.unwrap())(k, i, size, value)
        })
    }

    /// Runs `k` and returns its time from event profiling, in seconds.
    pub fn launch(
        &self,
        k: cl_kernel,
        global: &[usize],
        local: Option<&[usize]>,
    ) -> Result<f64, String> {
        // The host's time from enqueue to completion stands in where the
        // platform's profiling reports nothing real (rusticl 22.3 gives
        // every command a length of a nanosecond or so).
        let started = std::time::Instant::now();
        let mut ev = std::ptr::null_mut();
        let r = unsafe {
            (self.api.clEnqueueNDRangeKernel.unwrap())(
                self.queue,
                k,
                global.len() as u32,
                std::ptr::null(),
                global.as_ptr(),
                local.map_or(std::ptr::null(), |l| l.as_ptr()),
                0,
                std::ptr::null(),
                &mut ev,
            )
        };
        check("clEnqueueNDRangeKernel", r)?;
        let profiled = self.event_seconds(ev)?;
        let host = started.elapsed().as_secs_f64();
        // A command cannot take under 1% of its round trip unless the
        // profiling times are not real.
        Ok(if profiled * 100.0 >= host {
            profiled
        } else {
            host
        })
    }

    /// Waits for `ev`, releases it and returns its start-to-end time.
    pub fn event_seconds(&self, ev: cl_event) -> Result<f64, String> {
        unsafe {
            check(
                "clWaitForEvents",
                (self.api.clWaitForEvents.unwrap())(1, &ev),
            )?;
            let (mut start, mut end) = (0u64, 0u64);
            let get = self.api.clGetEventProfilingInfo.unwrap();
            check(
                "clGetEventProfilingInfo",
                get(
                    ev,
                    CL_PROFILING_COMMAND_START,
                    8,
                    (&mut start as *mut u64).cast(),
                    std::ptr::null_mut(),
                ),
            )?;
            check(
                "clGetEventProfilingInfo",
                get(
                    ev,
                    CL_PROFILING_COMMAND_END,
                    8,
                    (&mut end as *mut u64).cast(),
                    std::ptr::null_mut(),
                ),
            )?;
            (self.api.clReleaseEvent.unwrap())(ev);
            Ok(end.saturating_sub(start) as f64 * 1e-9)
        }
    }

    pub fn read(&self, b: cl_mem, len: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0u8; len];
        check("clEnqueueReadBuffer", unsafe {
            (self.api.clEnqueueReadBuffer.unwrap())(
                self.queue,
                b,
                CL_TRUE,
                0,
                len,
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        })?;
        Ok(out)
    }

    pub fn finish(&self) -> Result<(), String> {
        check("clFinish", unsafe {
            (self.api.clFinish.unwrap())(self.queue)
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        unsafe {
            (self.api.clReleaseCommandQueue.unwrap())(self.queue);
            (self.api.clReleaseContext.unwrap())(self.context);
        }
    }
}
