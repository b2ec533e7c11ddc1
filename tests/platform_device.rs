//! Platform and device queries, through the ICD loader and directly.

mod common;

use std::ffi::{CString, c_void};

use common::*;
use opencl_sys::*;

both_ways!(
    platform_ids_protocol,
    platform_info_answers,
    device_ids_by_type,
    every_device_query,
    vendor_identity_is_vkcl,
    device_handles_are_checked,
    sub_devices_and_device_refcounts,
    extension_functions,
    unsupported_features_say_so,
);

fn platform_ids_protocol(cl: &Cl) {
    let f = cl.clGetPlatformIDs.unwrap();
    let mut n = 0;
    let mut p: cl_platform_id = std::ptr::null_mut();
    unsafe {
        assert_eq!(
            f(0, std::ptr::null_mut(), std::ptr::null_mut()),
            CL_INVALID_VALUE
        );
        assert_eq!(f(0, &mut p, &mut n), CL_INVALID_VALUE);
        assert_eq!(f(0, std::ptr::null_mut(), &mut n), CL_SUCCESS);
    }
    assert!(n >= 1);
    assert!(!cl.platform().is_null());
}

fn platform_info_answers(cl: &Cl) {
    let p = cl.platform();
    assert_eq!(cl.platform_string(p, CL_PLATFORM_PROFILE), "FULL_PROFILE");
    assert!(
        cl.platform_string(p, CL_PLATFORM_VERSION)
            .starts_with("OpenCL 3.0 ")
    );
    assert_eq!(cl.platform_string(p, CL_PLATFORM_VENDOR), "vkcl");
    assert_eq!(cl.platform_string(p, CL_PLATFORM_ICD_SUFFIX_KHR), "VKCL");
    let version = u32_of(&cl.platform_bytes(p, CL_PLATFORM_NUMERIC_VERSION).unwrap());
    assert_eq!(version >> 22, 3);
    let ext = cl.platform_string(p, CL_PLATFORM_EXTENSIONS);
    assert!(ext.split(' ').any(|e| e == "cl_khr_icd"), "{ext}");
    let with_version = names_of(
        &cl.platform_bytes(p, CL_PLATFORM_EXTENSIONS_WITH_VERSION)
            .unwrap(),
    );
    assert_eq!(
        with_version,
        ext.split(' ').map(String::from).collect::<Vec<_>>()
    );
    assert_eq!(
        u64_of(
            &cl.platform_bytes(p, CL_PLATFORM_HOST_TIMER_RESOLUTION)
                .unwrap()
        ),
        1
    );
    assert_eq!(cl.platform_bytes(p, 0xFFFF), Err(CL_INVALID_VALUE));
    // A device handle is not a platform.
    let d = cl.device();
    assert_eq!(
        cl.platform_bytes(d.cast(), CL_PLATFORM_NAME),
        Err(CL_INVALID_PLATFORM)
    );
}

/// The names of a `cl_name_version` array answer.
fn names_of(bytes: &[u8]) -> Vec<String> {
    let size = std::mem::size_of::<cl_name_version>();
    assert_eq!(bytes.len() % size, 0);
    bytes
        .chunks(size)
        .map(|c| {
            let name = &c[4..];
            let end = name.iter().position(|&b| b == 0).expect("terminated name");
            String::from_utf8(name[..end].to_vec()).unwrap()
        })
        .collect()
}

fn device_ids_by_type(cl: &Cl) {
    let all = cl.devices(CL_DEVICE_TYPE_ALL).unwrap();
    assert!(!all.is_empty());
    let default = cl.devices(CL_DEVICE_TYPE_DEFAULT).unwrap();
    assert_eq!(default.len(), 1);
    assert_eq!(default[0], all[0], "the default device is listed first");
    let mut by_type = 0;
    for ty in [
        CL_DEVICE_TYPE_CPU,
        CL_DEVICE_TYPE_GPU,
        CL_DEVICE_TYPE_ACCELERATOR,
        CL_DEVICE_TYPE_CUSTOM,
    ] {
        match cl.devices(ty) {
            Ok(list) => {
                for d in &list {
                    let t = u64_of(&cl.device_bytes(*d, CL_DEVICE_TYPE).unwrap());
                    assert_eq!(t & ty, ty);
                }
                by_type += list.len();
            }
            Err(e) => assert_eq!(e, CL_DEVICE_NOT_FOUND),
        }
    }
    assert_eq!(by_type, all.len(), "every device has exactly one type");
    assert_eq!(cl.devices(1 << 40), Err(CL_INVALID_DEVICE_TYPE));
    assert_eq!(cl.devices(0), Err(CL_INVALID_DEVICE_TYPE));
    let f = cl.clGetDeviceIDs.unwrap();
    let p = cl.platform();
    let mut d = std::ptr::null_mut();
    unsafe {
        assert_eq!(
            f(p, CL_DEVICE_TYPE_ALL, 0, &mut d, std::ptr::null_mut()),
            CL_INVALID_VALUE
        );
        assert_eq!(
            f(
                p,
                CL_DEVICE_TYPE_ALL,
                1,
                std::ptr::null_mut(),
                std::ptr::null_mut()
            ),
            CL_INVALID_VALUE
        );
        // Fewer entries than devices: the first ones are written.
        let mut n = 0;
        assert_eq!(f(p, CL_DEVICE_TYPE_ALL, 1, &mut d, &mut n), CL_SUCCESS);
        assert_eq!(d, all[0]);
        assert_eq!(n as usize, all.len());
    }
    // On the machines CI runs on, lavapipe is a CPU device.
    let names: Vec<String> = all
        .iter()
        .map(|&d| c_string(&cl.device_bytes(d, CL_DEVICE_NAME).unwrap()))
        .collect();
    if let Some(i) = names.iter().position(|n| n.starts_with("llvmpipe")) {
        let t = u64_of(&cl.device_bytes(all[i], CL_DEVICE_TYPE).unwrap());
        assert_eq!(t, CL_DEVICE_TYPE_CPU);
    }
}

/// How a query's answer is shaped, by the OpenCL 3.0 specification.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Uint,
    Ulong,
    Size,
    Bool,
    Str,
    Bitfield,
    Handle,
    /// An array of `size_t`/`cl_*` of this element size, possibly empty.
    Array(usize),
    NameVersions,
    Bytes(usize),
}

const DEVICE_QUERIES: &[(cl_device_info, Kind)] = {
    use Kind::*;
    &[
        (CL_DEVICE_TYPE, Bitfield),
        (CL_DEVICE_VENDOR_ID, Uint),
        (CL_DEVICE_MAX_COMPUTE_UNITS, Uint),
        (CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, Uint),
        (CL_DEVICE_MAX_WORK_ITEM_SIZES, Array(8)),
        (CL_DEVICE_MAX_WORK_GROUP_SIZE, Size),
        (CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR, Uint),
        (CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT, Uint),
        (CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT, Uint),
        (CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG, Uint),
        (CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, Uint),
        (CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, Uint),
        (CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF, Uint),
        (CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR, Uint),
        (CL_DEVICE_NATIVE_VECTOR_WIDTH_SHORT, Uint),
        (CL_DEVICE_NATIVE_VECTOR_WIDTH_INT, Uint),
        (CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG, Uint),
        (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, Uint),
        (CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE, Uint),
        (CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF, Uint),
        (CL_DEVICE_MAX_CLOCK_FREQUENCY, Uint),
        (CL_DEVICE_ADDRESS_BITS, Uint),
        (CL_DEVICE_MAX_MEM_ALLOC_SIZE, Ulong),
        (CL_DEVICE_IMAGE_SUPPORT, Bool),
        (CL_DEVICE_MAX_READ_IMAGE_ARGS, Uint),
        (CL_DEVICE_MAX_WRITE_IMAGE_ARGS, Uint),
        (CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS, Uint),
        (CL_DEVICE_IL_VERSION, Str),
        (CL_DEVICE_ILS_WITH_VERSION, NameVersions),
        (CL_DEVICE_IMAGE2D_MAX_WIDTH, Size),
        (CL_DEVICE_IMAGE2D_MAX_HEIGHT, Size),
        (CL_DEVICE_IMAGE3D_MAX_WIDTH, Size),
        (CL_DEVICE_IMAGE3D_MAX_HEIGHT, Size),
        (CL_DEVICE_IMAGE3D_MAX_DEPTH, Size),
        (CL_DEVICE_IMAGE_MAX_BUFFER_SIZE, Size),
        (CL_DEVICE_IMAGE_MAX_ARRAY_SIZE, Size),
        (CL_DEVICE_MAX_SAMPLERS, Uint),
        (CL_DEVICE_IMAGE_PITCH_ALIGNMENT, Uint),
        (CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT, Uint),
        (CL_DEVICE_MAX_PIPE_ARGS, Uint),
        (CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS, Uint),
        (CL_DEVICE_PIPE_MAX_PACKET_SIZE, Uint),
        (CL_DEVICE_MAX_PARAMETER_SIZE, Size),
        (CL_DEVICE_MEM_BASE_ADDR_ALIGN, Uint),
        (CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE, Uint),
        (CL_DEVICE_SINGLE_FP_CONFIG, Bitfield),
        (CL_DEVICE_DOUBLE_FP_CONFIG, Bitfield),
        (CL_DEVICE_HALF_FP_CONFIG, Bitfield),
        (CL_DEVICE_GLOBAL_MEM_CACHE_TYPE, Uint),
        (CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, Uint),
        (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, Ulong),
        (CL_DEVICE_GLOBAL_MEM_SIZE, Ulong),
        (CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, Ulong),
        (CL_DEVICE_MAX_CONSTANT_ARGS, Uint),
        (CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE, Size),
        (CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE, Size),
        (CL_DEVICE_LOCAL_MEM_TYPE, Uint),
        (CL_DEVICE_LOCAL_MEM_SIZE, Ulong),
        (CL_DEVICE_ERROR_CORRECTION_SUPPORT, Bool),
        (CL_DEVICE_HOST_UNIFIED_MEMORY, Bool),
        (CL_DEVICE_PROFILING_TIMER_RESOLUTION, Size),
        (CL_DEVICE_ENDIAN_LITTLE, Bool),
        (CL_DEVICE_AVAILABLE, Bool),
        (CL_DEVICE_COMPILER_AVAILABLE, Bool),
        (CL_DEVICE_LINKER_AVAILABLE, Bool),
        (CL_DEVICE_EXECUTION_CAPABILITIES, Bitfield),
        (CL_DEVICE_QUEUE_PROPERTIES, Bitfield),
        (CL_DEVICE_QUEUE_ON_HOST_PROPERTIES, Bitfield),
        (CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES, Bitfield),
        (CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE, Uint),
        (CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE, Uint),
        (CL_DEVICE_MAX_ON_DEVICE_QUEUES, Uint),
        (CL_DEVICE_MAX_ON_DEVICE_EVENTS, Uint),
        (CL_DEVICE_BUILT_IN_KERNELS, Str),
        (CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION, NameVersions),
        (CL_DEVICE_PLATFORM, Handle),
        (CL_DEVICE_NAME, Str),
        (CL_DEVICE_VENDOR, Str),
        (CL_DRIVER_VERSION, Str),
        (CL_DEVICE_PROFILE, Str),
        (CL_DEVICE_VERSION, Str),
        (CL_DEVICE_NUMERIC_VERSION, Uint),
        (CL_DEVICE_OPENCL_C_VERSION, Str),
        (CL_DEVICE_OPENCL_C_ALL_VERSIONS, NameVersions),
        (CL_DEVICE_OPENCL_C_FEATURES, NameVersions),
        (CL_DEVICE_EXTENSIONS, Str),
        (CL_DEVICE_EXTENSIONS_WITH_VERSION, NameVersions),
        (CL_DEVICE_PRINTF_BUFFER_SIZE, Size),
        (CL_DEVICE_PREFERRED_INTEROP_USER_SYNC, Bool),
        (CL_DEVICE_PARENT_DEVICE, Handle),
        (CL_DEVICE_PARTITION_MAX_SUB_DEVICES, Uint),
        (CL_DEVICE_PARTITION_PROPERTIES, Array(8)),
        (CL_DEVICE_PARTITION_AFFINITY_DOMAIN, Bitfield),
        (CL_DEVICE_PARTITION_TYPE, Array(8)),
        (CL_DEVICE_REFERENCE_COUNT, Uint),
        (CL_DEVICE_SVM_CAPABILITIES, Bitfield),
        (CL_DEVICE_PREFERRED_PLATFORM_ATOMIC_ALIGNMENT, Uint),
        (CL_DEVICE_PREFERRED_GLOBAL_ATOMIC_ALIGNMENT, Uint),
        (CL_DEVICE_PREFERRED_LOCAL_ATOMIC_ALIGNMENT, Uint),
        (CL_DEVICE_MAX_NUM_SUB_GROUPS, Uint),
        (CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS, Bool),
        (CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES, Bitfield),
        (CL_DEVICE_ATOMIC_FENCE_CAPABILITIES, Bitfield),
        (CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT, Bool),
        (CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT, Bool),
        (CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT, Bool),
        (CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES, Bitfield),
        (CL_DEVICE_PIPE_SUPPORT, Bool),
        (CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, Size),
        (CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED, Str),
        // cl_khr_device_uuid
        (CL_DEVICE_UUID_KHR, Bytes(16)),
        (CL_DRIVER_UUID_KHR, Bytes(16)),
        (CL_DEVICE_LUID_VALID_KHR, Bool),
        (CL_DEVICE_LUID_KHR, Bytes(8)),
        (CL_DEVICE_NODE_MASK_KHR, Uint),
        // cl_khr_extended_versioning
        (CL_DEVICE_OPENCL_C_NUMERIC_VERSION_KHR, Uint),
    ]
};

fn check_shape(param: cl_device_info, kind: Kind, bytes: &[u8]) {
    let ctx = format!("query 0x{param:x} ({kind:?})");
    match kind {
        Kind::Uint => assert_eq!(bytes.len(), 4, "{ctx}"),
        Kind::Ulong | Kind::Bitfield => assert_eq!(bytes.len(), 8, "{ctx}"),
        Kind::Size | Kind::Handle => assert_eq!(bytes.len(), std::mem::size_of::<usize>(), "{ctx}"),
        Kind::Bool => {
            assert_eq!(bytes.len(), 4, "{ctx}");
            assert!(u32_of(bytes) <= 1, "{ctx}");
        }
        Kind::Str => {
            c_string(bytes);
        }
        Kind::Array(elem) => assert_eq!(bytes.len() % elem, 0, "{ctx}"),
        Kind::NameVersions => {
            names_of(bytes);
        }
        Kind::Bytes(n) => assert_eq!(bytes.len(), n, "{ctx}"),
    }
}

fn every_device_query(cl: &Cl) {
    for d in cl.devices(CL_DEVICE_TYPE_ALL).unwrap() {
        for &(param, kind) in DEVICE_QUERIES {
            let bytes = cl
                .device_bytes(d, param)
                .unwrap_or_else(|e| panic!("{}: query 0x{param:x} failed with {e}", cl.how));
            check_shape(param, kind, &bytes);
        }
        let q = |p| cl.device_bytes(d, p).unwrap();
        // Values the specification requires of a full-profile 3.0 device,
        // and values that must agree with each other.
        assert_eq!(c_string(&q(CL_DEVICE_PROFILE)), "FULL_PROFILE");
        assert!(c_string(&q(CL_DEVICE_VERSION)).starts_with("OpenCL 3.0 "));
        assert!(c_string(&q(CL_DEVICE_OPENCL_C_VERSION)).starts_with("OpenCL C 1.2"));
        assert_eq!(u32_of(&q(CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS)), 3);
        let sizes = q(CL_DEVICE_MAX_WORK_ITEM_SIZES);
        assert_eq!(sizes.len(), 3 * std::mem::size_of::<usize>());
        let wg = usize_of(&q(CL_DEVICE_MAX_WORK_GROUP_SIZE));
        assert!(wg >= 1);
        assert_eq!(u32_of(&q(CL_DEVICE_ADDRESS_BITS)), 64);
        let global = u64_of(&q(CL_DEVICE_GLOBAL_MEM_SIZE));
        let alloc = u64_of(&q(CL_DEVICE_MAX_MEM_ALLOC_SIZE));
        assert!(
            alloc <= global && alloc >= (128 << 20).min(global),
            "alloc {alloc} global {global}"
        );
        assert!(u64_of(&q(CL_DEVICE_LOCAL_MEM_SIZE)) >= 16 * 1024);
        assert!(u32_of(&q(CL_DEVICE_MEM_BASE_ADDR_ALIGN)) >= 1024);
        assert!(usize_of(&q(CL_DEVICE_MAX_PARAMETER_SIZE)) >= 1024);
        assert!(u64_of(&q(CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE)) >= 64 * 1024);
        let sp = u64_of(&q(CL_DEVICE_SINGLE_FP_CONFIG));
        assert_eq!(
            sp & (CL_FP_ROUND_TO_NEAREST | CL_FP_INF_NAN),
            CL_FP_ROUND_TO_NEAREST | CL_FP_INF_NAN
        );
        assert_eq!(usize_of(&q(CL_DEVICE_PLATFORM)), cl.platform() as usize);
        assert_eq!(usize_of(&q(CL_DEVICE_PARENT_DEVICE)), 0);
        assert_eq!(u32_of(&q(CL_DEVICE_REFERENCE_COUNT)), 1);
        assert_eq!(
            q(CL_DEVICE_QUEUE_PROPERTIES),
            q(CL_DEVICE_QUEUE_ON_HOST_PROPERTIES)
        );
        let ext = c_string(&q(CL_DEVICE_EXTENSIONS));
        let ext_list: Vec<String> = ext.split(' ').map(String::from).collect();
        assert_eq!(names_of(&q(CL_DEVICE_EXTENSIONS_WITH_VERSION)), ext_list);
        assert!(ext_list.iter().any(|e| e == "cl_khr_icd"));
        let versions = names_of(&q(CL_DEVICE_OPENCL_C_ALL_VERSIONS));
        assert!(versions.iter().all(|v| v == "OpenCL C"));
        assert_eq!(versions.len(), 4);
        // Unknown and unadvertised-extension queries are refused.
        assert_eq!(cl.device_bytes(d, 0xFFFF_FFFF), Err(CL_INVALID_VALUE));
        if !ext_list.iter().any(|e| e == "cl_khr_pci_bus_info") {
            assert_eq!(
                cl.device_bytes(d, CL_DEVICE_PCI_BUS_INFO_KHR),
                Err(CL_INVALID_VALUE)
            );
        }
    }
}

fn device_handles_are_checked(cl: &Cl) {
    let info = cl.clGetDeviceInfo.unwrap();
    let mut size = 0;
    unsafe {
        assert_eq!(
            info(
                std::ptr::null_mut(),
                CL_DEVICE_NAME,
                0,
                std::ptr::null_mut(),
                &mut size
            ),
            CL_INVALID_DEVICE
        );
    }
    // The wrong kind of handle: a context where a device belongs.
    let c = cl.context();
    unsafe {
        assert_eq!(
            info(c.cast(), CL_DEVICE_NAME, 0, std::ptr::null_mut(), &mut size),
            CL_INVALID_DEVICE
        );
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
    if cl.how == "direct" {
        // Without a loader in between, even a junk pointer is recognised.
        // (An ICD loader itself dereferences handles before vkcl sees them.)
        unsafe {
            assert_eq!(
                info(
                    junk_handle(),
                    CL_DEVICE_NAME,
                    0,
                    std::ptr::null_mut(),
                    &mut size
                ),
                CL_INVALID_DEVICE
            );
        }
    }
}

fn sub_devices_and_device_refcounts(cl: &Cl) {
    let d = cl.device();
    unsafe {
        assert_eq!(cl.clRetainDevice.unwrap()(d), CL_SUCCESS);
        assert_eq!(cl.clReleaseDevice.unwrap()(d), CL_SUCCESS);
        assert_eq!(
            cl.clRetainDevice.unwrap()(std::ptr::null_mut()),
            CL_INVALID_DEVICE
        );
        // Root devices are not reference counted.
        assert_eq!(
            u32_of(&cl.device_bytes(d, CL_DEVICE_REFERENCE_COUNT).unwrap()),
            1
        );
        let props = [CL_DEVICE_PARTITION_EQUALLY, 1, 0];
        let mut out = [std::ptr::null_mut(); 4];
        let mut n = 0;
        let create = cl.clCreateSubDevices.unwrap();
        assert_eq!(
            create(d, props.as_ptr(), 4, out.as_mut_ptr(), &mut n),
            CL_INVALID_VALUE
        );
        assert_eq!(
            create(
                std::ptr::null_mut(),
                props.as_ptr(),
                4,
                out.as_mut_ptr(),
                &mut n
            ),
            CL_INVALID_DEVICE
        );
    }
}

fn extension_functions(cl: &Cl) {
    let p = cl.platform();
    let get = cl.clGetExtensionFunctionAddressForPlatform.unwrap();
    let name = CString::new("clIcdGetPlatformIDsKHR").unwrap();
    let bogus = CString::new("clNoSuchFunctionVKCL").unwrap();
    unsafe {
        assert!(!get(p, name.as_ptr()).is_null());
        assert!(get(p, bogus.as_ptr()).is_null());
        assert_eq!(cl.clUnloadPlatformCompiler.unwrap()(p), CL_SUCCESS);
    }
}

fn unsupported_features_say_so(cl: &Cl) {
    let c = cl.context();
    unsafe {
        // SVM atomics are not offered: a null pointer.
        let flags = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS;
        assert!(cl.clSVMAlloc.unwrap()(c, flags, 1024, 0).is_null());
        // No native kernels (asked on a real queue: for a null one, the
        // Khronos loader answers CL_INVALID_COMMAND_QUEUE itself).
        let q = cl.queue(c, 0);
        assert_eq!(
            cl.clEnqueueNativeKernel.unwrap()(
                q,
                None,
                std::ptr::null_mut(),
                0,
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
                0,
                std::ptr::null(),
                std::ptr::null_mut()
            ),
            CL_INVALID_OPERATION
        );
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

/// The drop-in library exports every OpenCL 3.0 entry point by name.
#[test]
fn exports_every_opencl_3_0_function() {
    environment();
    let lib = unsafe { libloading::Library::new(library_path()) }.unwrap();
    let missing: Vec<&str> = OPENCL_3_0_FUNCTIONS
        .iter()
        .copied()
        .filter(|name| unsafe { lib.get::<*mut c_void>(format!("{name}\0").as_bytes()) }.is_err())
        .collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    for name in CL_API_NAMES {
        assert!(
            OPENCL_3_0_FUNCTIONS.contains(name) || name.ends_with("KHR"),
            "{name}"
        );
    }
}

/// Every function of the OpenCL 3.0 core API, deprecated ones included.
const OPENCL_3_0_FUNCTIONS: &[&str] = &[
    "clGetPlatformIDs",
    "clGetPlatformInfo",
    "clGetDeviceIDs",
    "clGetDeviceInfo",
    "clCreateSubDevices",
    "clRetainDevice",
    "clReleaseDevice",
    "clSetDefaultDeviceCommandQueue",
    "clGetDeviceAndHostTimer",
    "clGetHostTimer",
    "clCreateContext",
    "clCreateContextFromType",
    "clRetainContext",
    "clReleaseContext",
    "clGetContextInfo",
    "clSetContextDestructorCallback",
    "clCreateCommandQueueWithProperties",
    "clRetainCommandQueue",
    "clReleaseCommandQueue",
    "clGetCommandQueueInfo",
    "clCreateBuffer",
    "clCreateBufferWithProperties",
    "clCreateSubBuffer",
    "clCreateImage",
    "clCreateImageWithProperties",
    "clCreatePipe",
    "clRetainMemObject",
    "clReleaseMemObject",
    "clGetSupportedImageFormats",
    "clGetMemObjectInfo",
    "clGetImageInfo",
    "clGetPipeInfo",
    "clSetMemObjectDestructorCallback",
    "clSVMAlloc",
    "clSVMFree",
    "clCreateSamplerWithProperties",
    "clRetainSampler",
    "clReleaseSampler",
    "clGetSamplerInfo",
    "clCreateProgramWithSource",
    "clCreateProgramWithBinary",
    "clCreateProgramWithBuiltInKernels",
    "clCreateProgramWithIL",
    "clRetainProgram",
    "clReleaseProgram",
    "clSetProgramReleaseCallback",
    "clSetProgramSpecializationConstant",
    "clBuildProgram",
    "clCompileProgram",
    "clLinkProgram",
    "clUnloadPlatformCompiler",
    "clGetProgramInfo",
    "clGetProgramBuildInfo",
    "clCreateKernel",
    "clCreateKernelsInProgram",
    "clCloneKernel",
    "clRetainKernel",
    "clReleaseKernel",
    "clSetKernelArg",
    "clSetKernelArgSVMPointer",
    "clSetKernelExecInfo",
    "clGetKernelInfo",
    "clGetKernelArgInfo",
    "clGetKernelWorkGroupInfo",
    "clGetKernelSubGroupInfo",
    "clWaitForEvents",
    "clGetEventInfo",
    "clCreateUserEvent",
    "clRetainEvent",
    "clReleaseEvent",
    "clSetUserEventStatus",
    "clSetEventCallback",
    "clGetEventProfilingInfo",
    "clFlush",
    "clFinish",
    "clEnqueueReadBuffer",
    "clEnqueueReadBufferRect",
    "clEnqueueWriteBuffer",
    "clEnqueueWriteBufferRect",
    "clEnqueueFillBuffer",
    "clEnqueueCopyBuffer",
    "clEnqueueCopyBufferRect",
    "clEnqueueReadImage",
    "clEnqueueWriteImage",
    "clEnqueueFillImage",
    "clEnqueueCopyImage",
    "clEnqueueCopyImageToBuffer",
    "clEnqueueCopyBufferToImage",
    "clEnqueueMapBuffer",
    "clEnqueueMapImage",
    "clEnqueueUnmapMemObject",
    "clEnqueueMigrateMemObjects",
    "clEnqueueNDRangeKernel",
    "clEnqueueNativeKernel",
    "clEnqueueMarkerWithWaitList",
    "clEnqueueBarrierWithWaitList",
    "clEnqueueSVMFree",
    "clEnqueueSVMMemcpy",
    "clEnqueueSVMMemFill",
    "clEnqueueSVMMap",
    "clEnqueueSVMUnmap",
    "clEnqueueSVMMigrateMem",
    "clGetExtensionFunctionAddressForPlatform",
    // Deprecated, still part of the 3.0 API.
    "clCreateImage2D",
    "clCreateImage3D",
    "clEnqueueMarker",
    "clEnqueueWaitForEvents",
    "clEnqueueBarrier",
    "clUnloadCompiler",
    "clGetExtensionFunctionAddress",
    "clCreateCommandQueue",
    "clCreateSampler",
    "clEnqueueTask",
    "clSetCommandQueueProperty",
];

/// Libraries switch to a GPU vendor's own paths (inline assembly, vendor
/// queries) on that vendor's CL_DEVICE_VENDOR string: vkcl reports its
/// own, and shows the hardware by name and PCI vendor id.
fn vendor_identity_is_vkcl(cl: &Cl) {
    let d = cl.device();
    let string = |param| c_string(&cl.device_bytes(d, param).unwrap());
    assert_eq!(string(CL_DEVICE_VENDOR), "vkcl", "{}", cl.how);
    for maker in [
        "NVIDIA",
        "Advanced Micro Devices",
        "AMD",
        "Intel",
        "Apple",
        "ARM",
    ] {
        assert!(
            !string(CL_DEVICE_VENDOR).contains(maker) && !string(CL_DRIVER_VERSION).contains(maker),
            "{}: vendor and driver version name no hardware maker",
            cl.how
        );
    }
    assert!(!string(CL_DEVICE_NAME).is_empty());
    let id = u32_of(&cl.device_bytes(d, CL_DEVICE_VENDOR_ID).unwrap());
    assert_ne!(id, 0, "{}: the hardware's vendor id", cl.how);
}
