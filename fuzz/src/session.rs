//! One OpenCL context on the first device, shared by every case.

use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use opencl_sys::*;
use vkcl::api::{context, device, platform};
use vkcl::compiler::spirv::p1_kernel::matrix::SAMPLE;
use vkcl::compiler::spirv::p5_vulkan::finish::DeviceCaps;
use vkcl::core::device::Device;
use vkcl::core::object::Handle;

pub struct Session {
    pub device: cl_device_id,
    pub context: cl_context,
    /// The device's own capabilities, then others the rewriter must also
    /// handle (a GPU without 8/16-bit types or sub-groups, one with every
    /// feature and unbounded loops), so that one machine fuzzes the
    /// choices of many.
    pub caps: Vec<DeviceCaps>,
}

// SAFETY: OpenCL handles may be used from any thread.
unsafe impl Send for Session {}
unsafe impl Sync for Session {}

/// The session, made on first use. Before it opens vkcl it turns the
/// program cache off (fuzzed programs would fill it), shows only errors
/// in vkcl's log, makes validation messages fatal and bounds each
/// compiler tool to 10 s, unless the environment says otherwise.
pub fn session() -> &'static Session {
    static SESSION: OnceLock<Session> = OnceLock::new();
    SESSION.get_or_init(|| {
        // SAFETY: this runs once, before vkcl starts threads of its own
        // that read the environment.
        unsafe {
            if std::env::var_os("VKCL_CACHE").is_none() {
                std::env::set_var("VKCL_CACHE", "0");
            }
            // Rejected inputs are the common case: their warnings would
            // drown the run's own output.
            if std::env::var_os("VKCL_LOG").is_none() {
                std::env::set_var("VKCL_LOG", "error");
            }
            if std::env::var_os("VKCL_VALIDATION").is_none() {
                std::env::set_var("VKCL_VALIDATION", "abort");
            }
            // A compiler tool that does not end fails the build well
            // within libFuzzer's time limit, as a case of its own.
            if std::env::var_os("VKCL_COMPILER_TIMEOUT").is_none() {
                std::env::set_var("VKCL_COMPILER_TIMEOUT", "10");
            }
        }
        open().unwrap_or_else(|e| panic!("no OpenCL device to fuzz with: {e}"))
    })
}

fn open() -> Result<Session, String> {
    let mut platform_id: cl_platform_id = null_mut();
    let mut n = 0;
    // SAFETY: the out-pointers are valid for one entry.
    let r = unsafe { platform::clGetPlatformIDs(1, &mut platform_id, &mut n) };
    if r != CL_SUCCESS || n == 0 {
        return Err(format!("clGetPlatformIDs: {r}"));
    }
    let mut device_id: cl_device_id = null_mut();
    // SAFETY: as above.
    let r = unsafe {
        device::clGetDeviceIDs(platform_id, CL_DEVICE_TYPE_ALL, 1, &mut device_id, &mut n)
    };
    if r != CL_SUCCESS || n == 0 {
        return Err(format!("clGetDeviceIDs: {r}"));
    }
    let mut r = 0;
    // SAFETY: one valid device handle.
    let ctx = unsafe { context::clCreateContext(null(), 1, &device_id, None, null_mut(), &mut r) };
    if r != CL_SUCCESS {
        return Err(format!("clCreateContext: {r}"));
    }
    let dev = Handle::<Device>::from_raw(device_id).map_err(|e| format!("{e:?}"))?;
    let own = vkcl::core::kernel::device_caps(&dev);
    let small = DeviceCaps {
        native_dot: 0,
        device_clock: false,
        subgroup_clock: false,
        int8: false,
        int16: false,
        float16: false,
        float64: false,
        storage8: false,
        storage16: false,
        int64_atomics: false,
        subgroup_ops: 0,
        subgroup_extended_types: false,
        subgroup_size: 0,
        max_push_constants: 0,
        vulkan_memory_model: false,
        shared_float_atomics: [false; 2],
        native_f16: false,
        matrices: &[],
        // The components pass runs on every device's fuzzing, not only
        // where the driver needs it.
        local_components_whole: true,
        ..own
    };
    let large = DeviceCaps {
        native_dot: 0x3F,
        device_clock: true,
        subgroup_clock: true,
        int8: true,
        int16: true,
        float16: true,
        float64: true,
        storage8: true,
        storage16: true,
        int64_atomics: true,
        shared_float_atomics: [true; 2],
        subgroup_ops: 0xFF,
        subgroup_extended_types: true,
        subgroup_size: 32,
        max_work_group_size: 1024,
        max_push_constants: 256,
        denorm_preserve_f32: true,
        native_f16: true,
        denorm_preserve_f16: true,
        signed_zero_inf_nan: [true; 3],
        double_fma_rounds_twice: false,
        bounded_loops: false,
        keeps_denormals_f32: true,
        fences_halt: false,
        local_components_whole: false,
        vulkan_memory_model: true,
        // NVIDIA's half and byte multiply-adds.
        matrices: SAMPLE,
    };
    Ok(Session {
        device: device_id,
        context: ctx,
        caps: vec![own, small, large],
    })
}
