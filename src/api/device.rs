//! Device entry points: enumeration and every OpenCL 3.0 device query.

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::platform::{extension_string, extension_versions};
use crate::api::util::*;
use crate::core::device::{Device, make_version};
use crate::core::device::{
    MAX_GLOBAL_VARIABLE_SIZE, MAX_PIPE_ARGS, PIPE_MAX_ACTIVE_RESERVATIONS, PIPE_MAX_PACKET_SIZE,
};
use crate::core::error::{ClResult, err};
use crate::core::event::host_time_ns;
use crate::core::object::Handle;
use crate::core::platform::{Platform, platform};
use crate::core::program;

/// CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_4x8BIT_PACKED_KHR,
/// under a name a pattern may take.
const DOT_PRODUCT_ACCELERATION_PACKED: cl_device_info =
    CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_4x8BIT_PACKED;

/// cl_vkcl_cooperative_matrix's device query: the multiply-adds kernels
/// may use, each as eight `cl_uint`s (M, N, K, the element types of A, B,
/// C and the result, and whether it saturates), laid out as the draft
/// cl_khr_cooperative_matrix's `cl_device_cooperative_matrix_variant_khr`
/// with its element type numbers. From Khronos's range for experiments,
/// until a registered extension takes its place.
pub const CL_DEVICE_COOPERATIVE_MATRIX_VARIANTS_VKCL: cl_device_info = 0x10F00;

const VALID_DEVICE_TYPES: cl_device_type = CL_DEVICE_TYPE_DEFAULT
    | CL_DEVICE_TYPE_CPU
    | CL_DEVICE_TYPE_GPU
    | CL_DEVICE_TYPE_ACCELERATOR
    | CL_DEVICE_TYPE_CUSTOM;

/// The devices of `platform` that match `device_type`, best first.
pub fn devices_of_type(
    platform: &Platform,
    device_type: cl_device_type,
) -> ClResult<Vec<Arc<Handle<Device>>>> {
    if device_type != CL_DEVICE_TYPE_ALL && device_type & !VALID_DEVICE_TYPES != 0
        || device_type == 0
    {
        return err(CL_INVALID_DEVICE_TYPE);
    }
    let found: Vec<_> = platform
        .devices
        .iter()
        .enumerate()
        .filter(|(i, d)| {
            device_type == CL_DEVICE_TYPE_ALL
                || d.device_type() & device_type != 0
                || (*i == 0 && device_type & CL_DEVICE_TYPE_DEFAULT != 0)
        })
        .map(|(_, d)| d.clone())
        .collect();
    if found.is_empty() {
        return err(CL_DEVICE_NOT_FOUND);
    }
    Ok(found)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetDeviceIDs(
    platform_id: cl_platform_id,
    device_type: cl_device_type,
    num_entries: cl_uint,
    devices: *mut cl_device_id,
    num_devices: *mut cl_uint,
) -> cl_int {
    api_call("clGetDeviceIDs", || {
        let p = if platform_id.is_null() {
            platform().clone()
        } else {
            Handle::<Platform>::from_raw(platform_id)?
        };
        if (num_entries == 0 && !devices.is_null()) || (devices.is_null() && num_devices.is_null())
        {
            return err(CL_INVALID_VALUE);
        }
        let found = devices_of_type(&p, device_type).inspect_err(|_| {
            // SAFETY: null or writable, per the specification.
            unsafe { write_out(num_devices, 0) };
        })?;
        let ids: Vec<cl_device_id> = found.iter().map(Handle::as_raw).collect();
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe { write_list(&ids, num_entries, devices, num_devices) };
        Ok(())
    })
}

/// `value` where the device offers the feature it describes, else the
/// type's zero (the limits of pipes and on-device queues).
fn offered<T: Default>(has: bool, value: T) -> T {
    if has { value } else { T::default() }
}

fn device_info(dev: &Arc<Handle<Device>>, param: cl_device_info) -> Info {
    let d: &Device = dev;
    let limits = &d.info.props.limits;
    let no_handle: *mut c_void = std::ptr::null_mut();
    match param {
        CL_DEVICE_TYPE => info(d.device_type()),
        CL_DEVICE_VENDOR_ID => info(d.info.props.vendor_id),
        CL_DEVICE_MAX_COMPUTE_UNITS => info(d.compute_units()),
        CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS => info(3u32),
        CL_DEVICE_MAX_WORK_ITEM_SIZES => info(d.max_work_item_sizes()),
        CL_DEVICE_MAX_WORK_GROUP_SIZE => info(d.max_work_group_size()),
        CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR
        | CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT
        | CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT
        | CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG
        | CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
        | CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR
        | CL_DEVICE_NATIVE_VECTOR_WIDTH_SHORT
        | CL_DEVICE_NATIVE_VECTOR_WIDTH_INT
        | CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG
        | CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT => info(1u32),
        CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE | CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE
            if d.has_fp64() =>
        {
            info(1u32)
        }
        CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF | CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF
            if d.has_fp16() =>
        {
            info(1u32)
        }
        CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE
        | CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF
        | CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE
        | CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF => info(0u32),
        // Vulkan does not report clock rates.
        CL_DEVICE_MAX_CLOCK_FREQUENCY => info(0u32),
        CL_DEVICE_ADDRESS_BITS => info(64u32),
        CL_DEVICE_MAX_MEM_ALLOC_SIZE => info(d.max_mem_alloc_size()),
        CL_DEVICE_IMAGE_SUPPORT => info(d.image_support()),
        CL_DEVICE_MAX_READ_IMAGE_ARGS => info(d.image_arg_limits().0),
        CL_DEVICE_MAX_WRITE_IMAGE_ARGS => info(d.image_arg_limits().1),
        CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS => info(d.read_write_image_args()),
        CL_DEVICE_MAX_SAMPLERS => info(d.image_arg_limits().2),
        // 2D images from buffers (cl_khr_image2d_from_buffer).
        CL_DEVICE_IMAGE_PITCH_ALIGNMENT => info(if d.image_support() {
            crate::core::device::IMAGE_PITCH_ALIGNMENT
        } else {
            0
        }),
        CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT => info(if d.image_support() {
            crate::core::device::IMAGE_BASE_ADDRESS_ALIGNMENT
        } else {
            0
        }),
        CL_DEVICE_IMAGE2D_MAX_WIDTH | CL_DEVICE_IMAGE2D_MAX_HEIGHT => info(if d.image_support() {
            d.image_limits().side_2d
        } else {
            0
        }),
        CL_DEVICE_IMAGE3D_MAX_WIDTH
        | CL_DEVICE_IMAGE3D_MAX_HEIGHT
        | CL_DEVICE_IMAGE3D_MAX_DEPTH => info(if d.image_support() {
            d.image_limits().side_3d
        } else {
            0
        }),
        CL_DEVICE_IMAGE_MAX_ARRAY_SIZE => info(if d.image_support() {
            d.image_limits().layers
        } else {
            0
        }),
        // 1D image buffers are texel buffer views.
        CL_DEVICE_IMAGE_MAX_BUFFER_SIZE => info(d.max_texel_elements()),
        // SPIR-V 1.0 to 1.6 for the Kernel execution model.
        CL_DEVICE_IL_VERSION => info(
            (0..=6)
                .map(|m| format!("SPIR-V_1.{m}"))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        CL_DEVICE_ILS_WITH_VERSION => info(
            (0..=6)
                .map(|m| name_version("SPIR-V", make_version(1, m, 0)))
                .collect::<Vec<_>>(),
        ),
        CL_DEVICE_MAX_PIPE_ARGS => info(offered(d.pipe_support(), MAX_PIPE_ARGS)),
        CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS => {
            info(offered(d.pipe_support(), PIPE_MAX_ACTIVE_RESERVATIONS))
        }
        CL_DEVICE_PIPE_MAX_PACKET_SIZE => info(offered(d.pipe_support(), PIPE_MAX_PACKET_SIZE)),
        CL_DEVICE_PIPE_SUPPORT => info(d.pipe_support()),
        CL_DEVICE_MAX_PARAMETER_SIZE => info(1024usize),
        CL_DEVICE_MEM_BASE_ADDR_ALIGN => info(d.mem_base_addr_align_bits()),
        CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE => info(128u32),
        CL_DEVICE_SINGLE_FP_CONFIG => info(
            CL_FP_ROUND_TO_NEAREST
                | CL_FP_INF_NAN
                | if d.preserves_denormals() {
                    CL_FP_DENORM
                } else {
                    0
                },
        ),
        CL_DEVICE_DOUBLE_FP_CONFIG if d.has_fp64() => info(
            CL_FP_FMA
                | CL_FP_ROUND_TO_NEAREST
                | CL_FP_ROUND_TO_ZERO
                | CL_FP_ROUND_TO_INF
                | CL_FP_INF_NAN
                | CL_FP_DENORM,
        ),
        // Half arithmetic is float arithmetic rounded to nearest even, with
        // denormals: conversions to half are exact integer work.
        CL_DEVICE_HALF_FP_CONFIG if d.has_fp16() => {
            info(CL_FP_ROUND_TO_NEAREST | CL_FP_INF_NAN | CL_FP_DENORM)
        }
        CL_DEVICE_DOUBLE_FP_CONFIG | CL_DEVICE_HALF_FP_CONFIG => info(0 as cl_device_fp_config),
        CL_DEVICE_GLOBAL_MEM_CACHE_TYPE => info(CL_READ_WRITE_CACHE),
        CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE => info(cacheline_size(d)),
        // Vulkan does not report cache sizes.
        CL_DEVICE_GLOBAL_MEM_CACHE_SIZE => info(0u64),
        CL_DEVICE_GLOBAL_MEM_SIZE => info(d.global_mem_size()),
        CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE => info(
            (limits.max_uniform_buffer_range as u64)
                .max(64 * 1024)
                .min(d.max_mem_alloc_size()),
        ),
        CL_DEVICE_MAX_CONSTANT_ARGS => info(8u32),
        // Program-scope variables live in one device buffer per program;
        // the limit is the specification's minimum, which keeps their
        // initialisation at build time cheap.
        CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE | CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE => {
            info(MAX_GLOBAL_VARIABLE_SIZE)
        }
        CL_DEVICE_LOCAL_MEM_TYPE => info(CL_LOCAL),
        CL_DEVICE_LOCAL_MEM_SIZE => info(d.local_mem_size()),
        CL_DEVICE_ERROR_CORRECTION_SUPPORT => info(false),
        CL_DEVICE_HOST_UNIFIED_MEMORY => info(d.host_unified_memory()),
        CL_DEVICE_PROFILING_TIMER_RESOLUTION => info(d.timer_resolution_ns()),
        CL_DEVICE_ENDIAN_LITTLE => info(cfg!(target_endian = "little")),
        CL_DEVICE_AVAILABLE => info(true),
        // The system's clang and llvm-spirv (and spirv-link for linking).
        CL_DEVICE_COMPILER_AVAILABLE => info(program::compiler_available()),
        CL_DEVICE_LINKER_AVAILABLE => info(program::linker_available()),
        CL_DEVICE_EXECUTION_CAPABILITIES => info(CL_EXEC_KERNEL),
        CL_DEVICE_QUEUE_ON_HOST_PROPERTIES => {
            info(CL_QUEUE_PROFILING_ENABLE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        }
        CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES => info(offered(
            d.device_enqueue(),
            (CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE)
                as cl_command_queue_properties,
        )),
        CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE => info(offered(
            d.device_enqueue(),
            crate::core::enqueue::PREFERRED_QUEUE_SIZE,
        )),
        CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE => info(offered(
            d.device_enqueue(),
            crate::core::enqueue::MAX_QUEUE_SIZE,
        )),
        CL_DEVICE_MAX_ON_DEVICE_QUEUES => info(offered(
            d.device_enqueue(),
            crate::core::enqueue::MAX_QUEUES,
        )),
        CL_DEVICE_MAX_ON_DEVICE_EVENTS => info(offered(
            d.device_enqueue(),
            crate::core::enqueue::MAX_EVENTS,
        )),
        CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES => info(offered(
            d.device_enqueue(),
            (CL_DEVICE_QUEUE_SUPPORTED | CL_DEVICE_QUEUE_REPLACEABLE_DEFAULT)
                as cl_device_device_enqueue_capabilities,
        )),
        CL_DEVICE_BUILT_IN_KERNELS => info(""),
        CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION => info(Vec::<cl_name_version>::new()),
        CL_DEVICE_PLATFORM => info(Handle::as_raw::<c_void>(platform())),
        CL_DEVICE_NAME => info(d.name()),
        CL_DEVICE_VENDOR => info(d.vendor_name()),
        CL_DRIVER_VERSION => info(env!("CARGO_PKG_VERSION")),
        CL_DEVICE_PROFILE => info("FULL_PROFILE"),
        CL_DEVICE_VERSION => info(format!("OpenCL 3.0 vkcl {}", env!("CARGO_PKG_VERSION"))),
        CL_DEVICE_NUMERIC_VERSION => info(make_version(3, 0, 0)),
        CL_DEVICE_OPENCL_C_VERSION => info("OpenCL C 1.2 vkcl"),
        // cl_khr_extended_versioning's form of CL_DEVICE_OPENCL_C_VERSION.
        CL_DEVICE_OPENCL_C_NUMERIC_VERSION_KHR => info(make_version(1, 2, 0)),
        CL_DEVICE_OPENCL_C_ALL_VERSIONS => info(
            [(1, 0), (1, 1), (1, 2), (3, 0)]
                .iter()
                .map(|&(maj, min)| name_version("OpenCL C", make_version(maj, min, 0)))
                .collect::<Vec<_>>(),
        ),
        CL_DEVICE_OPENCL_C_FEATURES => info(
            d.opencl_c_features()
                .iter()
                .map(|f| name_version(f, make_version(3, 0, 0)))
                .collect::<Vec<_>>(),
        ),
        CL_DEVICE_EXTENSIONS => info(extension_string(&d.extensions())),
        CL_DEVICE_EXTENSIONS_WITH_VERSION => info(extension_versions(&d.extensions())),
        CL_DEVICE_SEMAPHORE_TYPES_KHR => info(vec![CL_SEMAPHORE_TYPE_BINARY_KHR]),
        CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR => info(d.semaphore_import_types()),
        CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR => info(d.semaphore_export_types()),
        CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR => info(d.memory_import_types()),
        // Imported images are linear, as Vulkan lays out a linear image.
        CL_DEVICE_EXTERNAL_MEMORY_IMPORT_ASSUME_LINEAR_IMAGES_HANDLE_TYPES_KHR => {
            info(d.memory_import_types())
        }
        // Command buffers replay on any queue of the device, with printf;
        // enqueues of one buffer run one after another, so a buffer may
        // be enqueued again before its last enqueue completes.
        CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR => info(
            CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR
                | CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR
                // A recorded kernel's enqueues run in its host step, as
                // an enqueued one's do.
                | if d.device_enqueue() {
                    CL_COMMAND_BUFFER_CAPABILITY_DEVICE_SIDE_ENQUEUE_KHR
                } else {
                    0
                },
        ),
        CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR => {
            info(crate::core::command_buffer::MUTABLE_FIELDS)
        }
        CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR => info(
            CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE as cl_command_queue_properties
                | CL_QUEUE_PROFILING_ENABLE as cl_command_queue_properties,
        ),
        CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR => {
            info(0 as cl_command_queue_properties)
        }
        // printf is not offered yet.
        CL_DEVICE_PRINTF_BUFFER_SIZE => info(crate::core::printf::buffer_size()),
        CL_DEVICE_PREFERRED_INTEROP_USER_SYNC => info(true),
        CL_DEVICE_PARENT_DEVICE => info(no_handle),
        CL_DEVICE_PARTITION_MAX_SUB_DEVICES => info(0u32),
        CL_DEVICE_PARTITION_PROPERTIES => info(vec![0 as cl_device_partition_property]),
        CL_DEVICE_PARTITION_AFFINITY_DOMAIN => info(0 as cl_device_affinity_domain),
        CL_DEVICE_PARTITION_TYPE => info(Vec::<cl_device_partition_property>::new()),
        CL_DEVICE_REFERENCE_COUNT => info(1u32),
        CL_DEVICE_SVM_CAPABILITIES => info(if d.coarse_svm() {
            // Host-coherent memory at one address for both sides: fine
            // grained as well (see core::svm).
            CL_DEVICE_SVM_COARSE_GRAIN_BUFFER | CL_DEVICE_SVM_FINE_GRAIN_BUFFER
        } else {
            0
        } as cl_device_svm_capabilities),
        CL_DEVICE_PREFERRED_PLATFORM_ATOMIC_ALIGNMENT
        | CL_DEVICE_PREFERRED_GLOBAL_ATOMIC_ALIGNMENT
        | CL_DEVICE_PREFERRED_LOCAL_ATOMIC_ALIGNMENT => info(0u32),
        CL_DEVICE_MAX_NUM_SUB_GROUPS => info(d.max_num_sub_groups()),
        CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS => info(false),
        // cl_intel_required_subgroup_size.
        CL_DEVICE_SUB_GROUP_SIZES_INTEL if !d.required_subgroup_sizes().is_empty() => info(
            d.required_subgroup_sizes()
                .iter()
                .map(|&s| s as usize)
                .collect::<Vec<usize>>(),
        ),
        CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES => info(d.atomic_capabilities()),
        CL_DEVICE_ATOMIC_FENCE_CAPABILITIES => info(d.atomic_capabilities()),
        CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT => info(true),
        CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT => info(d.has_subgroups()),
        CL_DEVICE_COOPERATIVE_MATRIX_VARIANTS_VKCL if !d.cooperative_matrices().is_empty() => {
            info(cooperative_matrix_words(d.cooperative_matrices()))
        }
        CL_DEVICE_KERNEL_CLOCK_CAPABILITIES_KHR if d.kernel_clock_capabilities() != 0 => {
            info(d.kernel_clock_capabilities())
        }
        CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES if d.has_integer_dot_product() => info(
            CL_DEVICE_INTEGER_DOT_PRODUCT_INPUT_4x8BIT_PACKED
                | CL_DEVICE_INTEGER_DOT_PRODUCT_INPUT_4x8BIT,
        ),
        // Six cl_bools: signed, unsigned, mixed signedness, and the same
        // accumulating with saturation: those left to the device's own
        // (accelerated) instructions, for vectors and packed words alike.
        CL_DEVICE_INTEGER_DOT_PRODUCT_ACCELERATION_PROPERTIES_8BIT
        | DOT_PRODUCT_ACCELERATION_PACKED
            if d.has_integer_dot_product() =>
        {
            let native = d.native_dot_products();
            // vkcl's bits are unsigned, signed, mixed; OpenCL's order is
            // signed, unsigned, mixed.
            let bit = |k: u32| cl_bool::from(native & (1 << k) != 0);
            info(vec![bit(1), bit(0), bit(2), bit(4), bit(3), bit(5)])
        }
        CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT => info(true),
        CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE => info(d.subgroup_size() as usize),
        CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED => info("v0000-01-01-00"),
        // cl_khr_device_uuid
        CL_DEVICE_UUID_KHR => info(d.info.props11.device_uuid),
        CL_DRIVER_UUID_KHR => info(d.info.props11.driver_uuid),
        CL_DEVICE_LUID_VALID_KHR => info(d.info.props11.device_luid_valid != 0),
        CL_DEVICE_LUID_KHR => info(d.info.props11.device_luid),
        CL_DEVICE_NODE_MASK_KHR => info(d.info.props11.device_node_mask),
        // cl_khr_pci_bus_info, where Vulkan reports the bus.
        CL_DEVICE_PCI_BUS_INFO_KHR => match &d.info.pci {
            // The layout of cl_device_pci_bus_info_khr: four cl_uint.
            Some(pci) => info([
                pci.pci_domain,
                pci.pci_bus,
                pci.pci_device,
                pci.pci_function,
            ]),
            None => invalid_param(param),
        },
        _ => invalid_param(param),
    }
}

/// Vulkan has no cache query; these are the usual line sizes.
fn cacheline_size(d: &Device) -> u32 {
    if d.device_type() == CL_DEVICE_TYPE_CPU {
        64
    } else {
        128
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetDeviceInfo(
    device: cl_device_id,
    param_name: cl_device_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetDeviceInfo", || {
        let d = Handle::<Device>::from_raw(device)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                device_info(&d, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateSubDevices(
    in_device: cl_device_id,
    properties: *const cl_device_partition_property,
    _num_devices: cl_uint,
    _out_devices: *mut cl_device_id,
    _num_devices_ret: *mut cl_uint,
) -> cl_int {
    api_call("clCreateSubDevices", || {
        Handle::<Device>::from_raw(in_device)?;
        if properties.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // Vulkan gives no way to split a device: every partition scheme,
        // valid or not, is unsupported (CL_DEVICE_PARTITION_MAX_SUB_DEVICES
        // is zero), which the specification reports as CL_INVALID_VALUE.
        err(CL_INVALID_VALUE)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainDevice(device: cl_device_id) -> cl_int {
    // Root devices are not reference counted.
    api_call("clRetainDevice", || {
        Handle::<Device>::from_raw(device).map(|_| ())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseDevice(device: cl_device_id) -> cl_int {
    api_call("clReleaseDevice", || {
        Handle::<Device>::from_raw(device).map(|_| ())
    })
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetDeviceAndHostTimer(
    device: cl_device_id,
    device_timestamp: *mut cl_ulong,
    host_timestamp: *mut cl_ulong,
) -> cl_int {
    api_call("clGetDeviceAndHostTimer", || {
        Handle::<Device>::from_raw(device)?;
        if device_timestamp.is_null() || host_timestamp.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // Profiling times are device timestamps converted to the host
        // clock, so the device timer, in the same units, is the host clock.
        let now = host_time_ns();
        // SAFETY: both checked non-null; writable per the specification.
        unsafe {
            device_timestamp.write(now);
            host_timestamp.write(now);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetHostTimer(
    device: cl_device_id,
    host_timestamp: *mut cl_ulong,
) -> cl_int {
    api_call("clGetHostTimer", || {
        Handle::<Device>::from_raw(device)?;
        if host_timestamp.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: checked non-null; writable per the specification.
        unsafe { host_timestamp.write(host_time_ns()) };
        Ok(())
    })
}

/// The words of [`CL_DEVICE_COOPERATIVE_MATRIX_VARIANTS_VKCL`].
fn cooperative_matrix_words(
    variants: &[crate::compiler::spirv::p1_kernel::matrix::MatrixVariant],
) -> Vec<cl_uint> {
    use crate::compiler::spirv::p1_kernel::matrix::Component as C;
    let number = |c: C| -> cl_uint {
        match c {
            C::Half => 0,
            C::Float => 1,
            C::Char => 3,
            C::Short => 4,
            C::Int => 5,
            C::Long => 6,
            C::Uchar => 7,
            C::Ushort => 8,
            C::Uint => 9,
            C::Ulong => 10,
        }
    };
    variants
        .iter()
        .flat_map(|v| {
            [
                v.m,
                v.n,
                v.k,
                number(v.a),
                number(v.b),
                number(v.c),
                number(v.result),
                v.saturating as cl_uint,
            ]
        })
        .collect()
}
