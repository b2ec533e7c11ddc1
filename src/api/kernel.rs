//! Kernel entry points: kernel objects, arguments, queries and dispatch.
//! A kernel the SPIR-V rewriter cannot handle yet is reported by name in
//! the log when it is first enqueued, and the enqueue fails with
//! CL_INVALID_OPERATION. Native kernels are never offered
//! (CL_EXEC_NATIVE_KERNEL is not reported).

use std::ffi::{CStr, c_char, c_void};
use std::sync::Arc;

use opencl_sys::*;

use crate::api::memory::Target;
use crate::api::util::*;
use crate::compiler::spirv::input::reflect::{ArgKind, KernelArg};
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::core::image::Image;
use crate::core::kernel::{ArgValue, Kernel};
use crate::core::launch::{Launch, NdRange};
use crate::core::memory::{Buffer, Pipe};
use crate::core::object::Handle;
use crate::core::program::Program;
use crate::core::queue::Queue;
use crate::core::sampler::Sampler;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateKernel(
    program: cl_program,
    kernel_name: *const c_char,
    errcode_ret: *mut cl_int,
) -> cl_kernel {
    let create = || {
        let p = Handle::<Program>::from_raw(program)?;
        if kernel_name.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated string, per the specification.
        let name = unsafe { CStr::from_ptr(kernel_name) }.to_string_lossy();
        Ok(Handle::into_api(Kernel::new(&p, &name)?))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateKernel", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateKernelsInProgram(
    program: cl_program,
    num_kernels: cl_uint,
    kernels: *mut cl_kernel,
    num_kernels_ret: *mut cl_uint,
) -> cl_int {
    api_call("clCreateKernelsInProgram", || {
        let p = Handle::<Program>::from_raw(program)?;
        let infos = p
            .application_kernels()
            .ok_or(ClError(CL_INVALID_PROGRAM_EXECUTABLE))?;
        if !kernels.is_null() && (num_kernels as usize) < infos.len() {
            return err(CL_INVALID_VALUE);
        }
        if !kernels.is_null() {
            for (i, k) in infos.iter().enumerate() {
                let kernel = Kernel::new(&p, &k.name)?;
                // SAFETY: room for `num_kernels` handles, checked above.
                unsafe { kernels.add(i).write(Handle::into_api(kernel)) };
            }
        }
        // SAFETY: null or writable, per the specification.
        unsafe { write_out(num_kernels_ret, infos.len() as cl_uint) };
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainKernel(kernel: cl_kernel) -> cl_int {
    api_call("clRetainKernel", || {
        Handle::<Kernel>::from_raw(kernel)?.retain()
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseKernel(kernel: cl_kernel) -> cl_int {
    api_call("clReleaseKernel", || {
        Handle::release(Handle::<Kernel>::from_raw(kernel)?)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCloneKernel(
    source_kernel: cl_kernel,
    errcode_ret: *mut cl_int,
) -> cl_kernel {
    let create = || {
        Ok(Handle::into_api(
            Handle::<Kernel>::from_raw(source_kernel)?.clone_kernel(),
        ))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCloneKernel", errcode_ret, create) }
}

/// Decodes a clSetKernelArg value for an argument of kind `kind`.
fn decode_arg(k: &Kernel, kind: &ArgKind, size: usize, value: *const c_void) -> ClResult<ArgValue> {
    match kind {
        ArgKind::Buffer => {
            if size != std::mem::size_of::<cl_mem>() {
                return err(CL_INVALID_ARG_SIZE);
            }
            // SAFETY: a cl_mem, per the size check.
            let mem = if value.is_null() {
                std::ptr::null_mut()
            } else {
                unsafe { *(value as *const cl_mem) }
            };
            if mem.is_null() {
                return Ok(ArgValue::Buffer(None));
            }
            let b = Handle::<Buffer>::from_raw(mem)?;
            if !Arc::ptr_eq(&b.context, &k.program.context) {
                return err(CL_INVALID_MEM_OBJECT);
            }
            Ok(ArgValue::Buffer(Some(Arc::downgrade(&b))))
        }
        ArgKind::Local => {
            if !value.is_null() {
                return err(CL_INVALID_ARG_VALUE);
            }
            if size == 0 {
                return err(CL_INVALID_ARG_SIZE);
            }
            Ok(ArgValue::Local(size))
        }
        ArgKind::Value(n) => {
            if size != *n as usize {
                return err(CL_INVALID_ARG_SIZE);
            }
            if value.is_null() {
                return err(CL_INVALID_ARG_VALUE);
            }
            // SAFETY: `size` readable bytes, per the specification.
            Ok(ArgValue::Bytes(
                unsafe { std::slice::from_raw_parts(value.cast::<u8>(), size) }.to_vec(),
            ))
        }
        ArgKind::Sampler => {
            if size != std::mem::size_of::<cl_sampler>() {
                return err(CL_INVALID_ARG_SIZE);
            }
            if value.is_null() {
                return err(CL_INVALID_SAMPLER);
            }
            // SAFETY: a cl_sampler, per the size check.
            let raw = unsafe { *(value as *const cl_sampler) };
            let s = Handle::<Sampler>::from_raw(raw)?;
            if !Arc::ptr_eq(&s.context, &k.program.context) {
                return err(CL_INVALID_SAMPLER);
            }
            Ok(ArgValue::Sampler(Arc::downgrade(&s)))
        }
        ArgKind::Pipe => {
            if size != std::mem::size_of::<cl_mem>() {
                return err(CL_INVALID_ARG_SIZE);
            }
            if value.is_null() {
                return err(CL_INVALID_ARG_VALUE);
            }
            // SAFETY: a cl_mem, per the size check.
            let raw = unsafe { *(value as *const cl_mem) };
            let p = Handle::<Pipe>::from_raw(raw)?;
            if !Arc::ptr_eq(p.context(), &k.program.context) {
                return err(CL_INVALID_MEM_OBJECT);
            }
            Ok(ArgValue::Buffer(Some(Arc::downgrade(&p.buffer))))
        }
        ArgKind::Queue => {
            if size != std::mem::size_of::<cl_command_queue>() {
                return err(CL_INVALID_ARG_SIZE);
            }
            if value.is_null() {
                return err(CL_INVALID_ARG_VALUE);
            }
            // SAFETY: a cl_command_queue, per the size check.
            let raw = unsafe { *(value as *const cl_command_queue) };
            // Not a queue at all (null included) is not a device queue.
            let q = Handle::<crate::core::queue::Queue>::from_raw(raw)
                .map_err(|_| ClError(CL_INVALID_DEVICE_QUEUE))?;
            if q.on_device.is_none() || !Arc::ptr_eq(&q.context, &k.program.context) {
                return err(CL_INVALID_DEVICE_QUEUE);
            }
            // Kernels only tell a queue from no queue (see the rewriter's
            // enqueue pass): the handle's address will do.
            Ok(ArgValue::Address(Handle::as_raw::<u8>(&q) as u64))
        }
        ArgKind::Image => {
            if size != std::mem::size_of::<cl_mem>() {
                return err(CL_INVALID_ARG_SIZE);
            }
            if value.is_null() {
                return err(CL_INVALID_ARG_VALUE);
            }
            // SAFETY: a cl_mem, per the size check.
            let raw = unsafe { *(value as *const cl_mem) };
            let i = Handle::<Image>::from_raw(raw)?;
            if !Arc::ptr_eq(&i.context, &k.program.context) {
                return err(CL_INVALID_MEM_OBJECT);
            }
            Ok(ArgValue::Image(Arc::downgrade(&i)))
        }
    }
}

/// An image argument must be of the parameter's image type, and have the
/// view the parameter's access needs (formats kernels cannot write have no
/// storage view).
fn check_image_arg(arg: &KernelArg, image: &Image) -> ClResult<()> {
    let depth = image.format.image_channel_order == CL_DEPTH;
    let name = match image.desc.image_type {
        CL_MEM_OBJECT_IMAGE1D => "image1d_t",
        CL_MEM_OBJECT_IMAGE1D_ARRAY => "image1d_array_t",
        CL_MEM_OBJECT_IMAGE1D_BUFFER => "image1d_buffer_t",
        CL_MEM_OBJECT_IMAGE2D if depth => "image2d_depth_t",
        CL_MEM_OBJECT_IMAGE2D => "image2d_t",
        CL_MEM_OBJECT_IMAGE2D_ARRAY if depth => "image2d_array_depth_t",
        CL_MEM_OBJECT_IMAGE2D_ARRAY => "image2d_array_t",
        _ => "image3d_t",
    };
    if !arg.type_name.is_empty() && !arg.type_name.ends_with(name) {
        return err(CL_INVALID_ARG_VALUE);
    }
    // An image kernels may only write cannot be a read_only argument, nor
    // one they may only read a write_only argument.
    let forbidden = match arg.access {
        CL_KERNEL_ARG_ACCESS_READ_ONLY => CL_MEM_WRITE_ONLY,
        CL_KERNEL_ARG_ACCESS_WRITE_ONLY => CL_MEM_READ_ONLY,
        _ => 0,
    };
    if image.flags & forbidden != 0 {
        return err(CL_INVALID_ARG_VALUE);
    }
    if image
        .kernel_view(arg.access == CL_KERNEL_ARG_ACCESS_READ_ONLY)
        .is_none()
    {
        log::debug!(target: "vkcl::kernel", "argument {}: the image's format cannot be {} by kernels on this device", arg.name, if arg.access == CL_KERNEL_ARG_ACCESS_READ_ONLY { "read" } else { "written" });
        return err(CL_INVALID_ARG_VALUE);
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetKernelArg(
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_size: usize,
    arg_value: *const c_void,
) -> cl_int {
    api_call("clSetKernelArg", || {
        let k = Handle::<Kernel>::from_raw(kernel)?;
        let v = arg_value_of(&k, arg_index, arg_size, arg_value)?;
        k.set_arg(arg_index as usize, v)
    })
}

/// clSetKernelArg's checks: the value `arg_value` (`arg_size` bytes) gives
/// argument `arg_index` of `k`. Also a mutable dispatch's argument update.
pub(crate) fn arg_value_of(
    k: &Kernel,
    arg_index: cl_uint,
    arg_size: usize,
    arg_value: *const c_void,
) -> ClResult<ArgValue> {
    let kind = k.arg_kind(arg_index as usize)?.clone();
    let v = decode_arg(k, &kind, arg_size, arg_value)?;
    if let ArgValue::Image(w) = &v {
        let arg = &k.info.args[arg_index as usize];
        let image = w.upgrade().ok_or(ClError(CL_INVALID_MEM_OBJECT))?;
        check_image_arg(arg, &image)?;
    }
    Ok(v)
}

fn kernel_info(k: &Arc<Handle<Kernel>>, param: cl_kernel_info) -> Info {
    match param {
        CL_KERNEL_FUNCTION_NAME => info(k.info.name.clone()),
        CL_KERNEL_NUM_ARGS => info(k.info.args.len() as cl_uint),
        CL_KERNEL_REFERENCE_COUNT => info(k.api_ref_count()),
        CL_KERNEL_CONTEXT => info(Handle::as_raw::<c_void>(&k.program.context)),
        CL_KERNEL_PROGRAM => info(Handle::as_raw::<c_void>(&k.program)),
        CL_KERNEL_ATTRIBUTES => info(k.info.attributes()),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelInfo(
    kernel: cl_kernel,
    param_name: cl_kernel_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetKernelInfo", || {
        let k = Handle::<Kernel>::from_raw(kernel)?;
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                kernel_info(&k, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}

fn arg_info(k: &Kernel, index: usize, param: cl_kernel_arg_info) -> Info {
    let a = k
        .info
        .args
        .get(index)
        .ok_or(ClError(CL_INVALID_ARG_INDEX))?;
    if !k.arg_info {
        return err(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
    }
    match param {
        CL_KERNEL_ARG_ADDRESS_QUALIFIER => info(a.address),
        CL_KERNEL_ARG_ACCESS_QUALIFIER => info(a.access),
        CL_KERNEL_ARG_TYPE_NAME => info(a.type_name.clone()),
        CL_KERNEL_ARG_TYPE_QUALIFIER => info(a.type_qual),
        CL_KERNEL_ARG_NAME => info(a.name.clone()),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelArgInfo(
    kernel: cl_kernel,
    arg_index: cl_uint,
    param_name: cl_kernel_arg_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetKernelArgInfo", || {
        let k = Handle::<Kernel>::from_raw(kernel)?;
        let answer = arg_info(&k, arg_index as usize, param_name);
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe { write_info(answer, param_value_size, param_value, param_value_size_ret) }
    })
}

/// The device a kernel query is about: the given one (of the program), or
/// the program's only device.
fn kernel_device(k: &Kernel, device: cl_device_id) -> ClResult<Arc<Handle<Device>>> {
    let devices = &k.program.devices;
    if device.is_null() {
        if devices.len() == 1 {
            return Ok(devices[0].clone());
        }
        return err(CL_INVALID_DEVICE);
    }
    let d = Handle::<Device>::from_raw(device)?;
    if !devices.iter().any(|x| Arc::ptr_eq(x, &d)) {
        return err(CL_INVALID_DEVICE);
    }
    Ok(d)
}

/// The width of the kernel's sub-groups on `d`.
fn sub_group_width(k: &Kernel, d: &Device) -> usize {
    k.info.reqd_sub_group_size.unwrap_or(d.subgroup_size()) as usize
}

fn work_group_info(k: &Kernel, d: &Device, param: cl_kernel_work_group_info) -> Info {
    let reqd = k.info.reqd_work_group_size;
    match param {
        CL_KERNEL_WORK_GROUP_SIZE => info(k.max_group_size(d)),
        // Kernels keep no private data in memory that the driver spills
        // on vkcl's behalf that vkcl can know of.
        CL_KERNEL_SPILL_MEM_SIZE_INTEL if !d.required_subgroup_sizes().is_empty() => {
            info(0 as cl_ulong)
        }
        CL_KERNEL_COMPILE_WORK_GROUP_SIZE => info(reqd.unwrap_or([0; 3]).map(|v| v as usize)),
        CL_KERNEL_LOCAL_MEM_SIZE => info(k.local_arg_bytes().saturating_add(k.info.local_bytes)),
        CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE => info(sub_group_width(k, d)),
        // Private data lives in registers, except what the rewrite moved
        // to device memory (casts and pointer arithmetic on it).
        CL_KERNEL_PRIVATE_MEM_SIZE => info(
            d.logical()
                .ok()
                .and_then(|vk| k.compiled(d, &vk, false, false).ok())
                .map_or(0u64, |c| u64::from(c.scratch.private_bytes)),
        ),
        // Only for custom devices and built-in kernels.
        CL_KERNEL_GLOBAL_WORK_SIZE => err(CL_INVALID_VALUE),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelWorkGroupInfo(
    kernel: cl_kernel,
    device: cl_device_id,
    param_name: cl_kernel_work_group_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetKernelWorkGroupInfo", || {
        let k = Handle::<Kernel>::from_raw(kernel)?;
        let d = kernel_device(&k, device)?;
        let answer = work_group_info(&k, &d, param_name);
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe { write_info(answer, param_value_size, param_value, param_value_size_ret) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetKernelExecInfo(
    kernel: cl_kernel,
    param_name: cl_kernel_exec_info,
    param_value_size: usize,
    param_value: *const c_void,
) -> cl_int {
    api_call("clSetKernelExecInfo", || {
        let k = Handle::<Kernel>::from_raw(kernel)?;
        check_exec_info(&k, param_name, param_value_size, param_value)
    })
}

/// clSetKernelExecInfo's checks; vkcl keeps nothing it is told (see each
/// case). Also a mutable dispatch's execution info update.
pub(crate) fn check_exec_info(
    k: &Kernel,
    param_name: cl_kernel_exec_info,
    param_value_size: usize,
    param_value: *const c_void,
) -> ClResult<()> {
    let svm = k.program.context.devices.iter().any(|d| d.coarse_svm());
    match param_name {
        // An empty list forgets the pointers set before.
        CL_KERNEL_EXEC_INFO_SVM_PTRS if svm && param_value_size == 0 => Ok(()),
        CL_KERNEL_EXEC_INFO_DEVICE_PTRS_EXT if param_value_size == 0 => Ok(()),
        _ if param_value.is_null() => err(CL_INVALID_VALUE),
        // Coarse-grained SVM: kernels may reach any allocation through
        // pointers, and every allocation is device memory already.
        CL_KERNEL_EXEC_INFO_SVM_PTRS if svm => {
            if param_value_size % std::mem::size_of::<*const c_void>() != 0 {
                return err(CL_INVALID_VALUE);
            }
            Ok(())
        }
        CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM if svm => {
            if param_value_size != std::mem::size_of::<cl_bool>() {
                return err(CL_INVALID_VALUE);
            }
            // SAFETY: checked to be a cl_bool above.
            match unsafe { *param_value.cast::<cl_bool>() } {
                CL_FALSE => Ok(()),
                _ => err(CL_INVALID_OPERATION),
            }
        }
        CL_KERNEL_EXEC_INFO_SVM_PTRS | CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM => {
            err(CL_INVALID_OPERATION)
        }
        // cl_ext_buffer_device_address: buffers the kernel reaches
        // through addresses; every buffer is device memory already.
        CL_KERNEL_EXEC_INFO_DEVICE_PTRS_EXT => {
            if param_value_size % std::mem::size_of::<cl_mem_device_address_ext>() != 0 {
                return err(CL_INVALID_VALUE);
            }
            Ok(())
        }
        // Nothing else is defined yet.
        _ => err(CL_INVALID_VALUE),
    }
}

/// clEnqueueNDRangeKernel: checks in the specification's order, then
/// builds the launch (`core::launch`) and enqueues it.
#[allow(clippy::too_many_arguments)]
fn enqueue_ndrange(
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const usize,
    global_work_size: *const usize,
    local_work_size: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    command_type: cl_command_type,
) -> ClResult<()> {
    let c = ndrange_checks(
        command_queue,
        kernel,
        work_dim,
        global_work_offset,
        global_work_size,
        local_work_size,
        num_events_in_wait_list,
        event_wait_list,
        false,
    )?;
    let launch = crate::core::trace::span("build the launch", || {
        Launch::new(&c.target.queue, &c.kernel, c.range)
    })?;
    let ev = launch.enqueue(&c.target.queue, command_type, c.target.waits)?;
    // SAFETY: null or writable, per the specification.
    unsafe { out_event(event, ev) };
    Ok(())
}

/// An NDRange command that passed clEnqueueNDRangeKernel's checks, with
/// its sizes as the application gave them (offset and local size empty
/// where not given) and the range they make.
pub(crate) struct CheckedNdRange {
    pub target: Target,
    pub kernel: Arc<Handle<Kernel>>,
    pub offset: Vec<usize>,
    pub global: Vec<usize>,
    pub local: Vec<usize>,
    pub range: NdRange,
}

/// clEnqueueNDRangeKernel's checks, in the specification's order; also
/// clCommandNDRangeKernelKHR's, which passes `args_later` for a command
/// whose arguments may be set by a later update.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ndrange_checks(
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const usize,
    global_work_size: *const usize,
    local_work_size: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    args_later: bool,
) -> ClResult<CheckedNdRange> {
    let q = Handle::<Queue>::from_raw(command_queue)?;
    let k = Handle::<Kernel>::from_raw(kernel)?;
    if !Arc::ptr_eq(&q.context, &k.program.context) {
        return err(CL_INVALID_CONTEXT);
    }
    if k.program.device_index(&q.device).is_none() {
        return err(CL_INVALID_PROGRAM_EXECUTABLE);
    }
    if !args_later {
        k.check_args_set()?;
    }
    if !(1..=3).contains(&work_dim) {
        return err(CL_INVALID_WORK_DIMENSION);
    }
    let dims = work_dim as usize;
    // A null global size, like a zero one, makes a command with no work
    // (OpenCL 2.1 and later).
    let zeros = [0usize; 3];
    let global = if global_work_size.is_null() {
        &zeros[..dims]
    } else {
        // SAFETY: `work_dim` values, per the specification.
        unsafe { slice_in(global_work_size, dims) }.map_err(|_| ClError(CL_INVALID_VALUE))?
    };
    // SAFETY: as above.
    let offset = unsafe {
        slice_in(
            global_work_offset,
            if global_work_offset.is_null() {
                0
            } else {
                dims
            },
        )?
    };
    // SAFETY: as above.
    let local = unsafe {
        slice_in(
            local_work_size,
            if local_work_size.is_null() { 0 } else { dims },
        )?
    };
    check_sizes(&q.device, &k, offset, global, local)?;
    // SAFETY: the application passes `num_events_in_wait_list` handles.
    let waits = unsafe { wait_list(&q.context, num_events_in_wait_list, event_wait_list)? };
    let range = NdRange::new(&k, &q.device, offset, global, local)?;
    Ok(CheckedNdRange {
        target: Target { queue: q, waits },
        kernel: k,
        offset: offset.to_vec(),
        global: global.to_vec(),
        local: local.to_vec(),
        range,
    })
}

/// clEnqueueNDRangeKernel's checks of an NDRange's sizes for `k` on `d`:
/// `global` has one entry per dimension, `offset` and `local` as many or
/// none.
pub(crate) fn check_sizes(
    d: &Device,
    k: &Kernel,
    offset: &[usize],
    global: &[usize],
    local: &[usize],
) -> ClResult<()> {
    for (i, &g) in global.iter().enumerate() {
        if offset.get(i).is_some_and(|&o| g.checked_add(o).is_none()) {
            return err(CL_INVALID_GLOBAL_OFFSET);
        }
    }
    let dims = global.len();
    let reqd = k.info.reqd_work_group_size;
    if !local.is_empty() {
        let sizes = d.max_work_item_sizes();
        if local.iter().zip(sizes).any(|(&l, m)| l == 0 || l > m) {
            return err(CL_INVALID_WORK_ITEM_SIZE);
        }
        let total: usize = local.iter().product();
        if total > d.max_work_group_size().min(k.max_group_size(d)) {
            return err(CL_INVALID_WORK_GROUP_SIZE);
        }
        if let Some(r) = reqd {
            let want: Vec<usize> = r.iter().take(dims).map(|&v| v as usize).collect();
            if local != want.as_slice() {
                return err(CL_INVALID_WORK_GROUP_SIZE);
            }
        }
    } else if reqd.is_some_and(|r| !d.fits_work_group(r)) {
        // The required size is the local size: within the device's limits.
        return err(CL_INVALID_WORK_GROUP_SIZE);
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueNDRangeKernel(
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const usize,
    global_work_size: *const usize,
    local_work_size: *const usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueNDRangeKernel", || {
        enqueue_ndrange(
            command_queue,
            kernel,
            work_dim,
            global_work_offset,
            global_work_size,
            local_work_size,
            num_events_in_wait_list,
            event_wait_list,
            event,
            CL_COMMAND_NDRANGE_KERNEL,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueTask(
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let one = [1usize];
    api_call("clEnqueueTask", || {
        enqueue_ndrange(
            command_queue,
            kernel,
            1,
            std::ptr::null(),
            one.as_ptr(),
            one.as_ptr(),
            num_events_in_wait_list,
            event_wait_list,
            event,
            CL_COMMAND_TASK,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueNativeKernel(
    _command_queue: cl_command_queue,
    _user_func: Option<unsafe extern "C" fn(arg1: *mut c_void)>,
    _args: *mut c_void,
    _cb_args: usize,
    _num_mem_objects: cl_uint,
    _mem_list: *const cl_mem,
    _args_mem_loc: *mut *const c_void,
    _num_events_in_wait_list: cl_uint,
    _event_wait_list: *const cl_event,
    _event: *mut cl_event,
) -> cl_int {
    unsupported("clEnqueueNativeKernel")
}

/// The answer to a clGetKernelSubGroupInfo query. Sub-groups are laid out
/// along the local linear id, `subgroup_size` work-items each (the kernel
/// runs as a 1-D Vulkan work-group), so the answers follow from the local
/// size alone.
fn sub_group_info(
    k: &Kernel,
    d: &Device,
    param: cl_kernel_sub_group_info,
    input: &[u8],
    output_size: usize,
) -> Info {
    if !d.has_subgroups() {
        return err(CL_INVALID_OPERATION);
    }
    let width = sub_group_width(k, d);
    let word = std::mem::size_of::<usize>();
    let max_wg = k.max_group_size(d);
    // A local size of 1 to 3 dimensions, as an array of size_t.
    let local = || -> ClResult<usize> {
        if input.is_empty() || input.len() % word != 0 || input.len() / word > 3 {
            return err(CL_INVALID_VALUE);
        }
        Ok(input
            .chunks_exact(word)
            .map(|c| usize::from_ne_bytes(c.try_into().unwrap_or_default()))
            .product())
    };
    match param {
        CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE => info(width.min(local()?)),
        CL_KERNEL_SUB_GROUP_COUNT_FOR_NDRANGE => info(local()?.div_ceil(width)),
        CL_KERNEL_LOCAL_SIZE_FOR_SUB_GROUP_COUNT => {
            if input.len() != word {
                return err(CL_INVALID_VALUE);
            }
            let count = usize::from_ne_bytes(input.try_into().unwrap_or_default());
            let dims = output_size / word;
            if !(1..=3).contains(&dims) && output_size != 0 {
                return err(CL_INVALID_VALUE);
            }
            let mut size = vec![0usize; dims.clamp(1, 3)];
            let x = count.saturating_mul(width);
            if count > 0 && x <= max_wg && x <= d.max_work_item_sizes()[0] {
                size[0] = x;
                for s in size.iter_mut().skip(1) {
                    *s = 1;
                }
            }
            Ok(size.iter().flat_map(|v| v.to_ne_bytes()).collect())
        }
        CL_KERNEL_MAX_NUM_SUB_GROUPS => info(max_wg.div_ceil(width)),
        // vkcl has no attribute that fixes the number of sub-groups.
        CL_KERNEL_COMPILE_NUM_SUB_GROUPS => info(0usize),
        CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL if !d.required_subgroup_sizes().is_empty() => {
            info(k.info.reqd_sub_group_size.unwrap_or(0) as usize)
        }
        _ => invalid_param(param),
    }
}

/// clGetKernelSubGroupInfo and its cl_khr_subgroups form.
// The C entry point's parameters, passed through.
#[allow(clippy::too_many_arguments)]
pub(crate) fn get_kernel_sub_group_info(
    name: &'static str,
    kernel: cl_kernel,
    device: cl_device_id,
    param_name: cl_kernel_sub_group_info,
    input_value_size: usize,
    input_value: *const c_void,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call(name, || {
        let k = Handle::<Kernel>::from_raw(kernel)?;
        let d = kernel_device(&k, device)?;
        let input: &[u8] = if input_value.is_null() || input_value_size == 0 {
            if input_value_size != 0 {
                return err(CL_INVALID_VALUE);
            }
            &[]
        } else {
            // SAFETY: the application passes an input of the size it states.
            unsafe { std::slice::from_raw_parts(input_value.cast::<u8>(), input_value_size) }
        };
        let answer = sub_group_info(&k, &d, param_name, input, param_value_size);
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe { write_info(answer, param_value_size, param_value, param_value_size_ret) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelSubGroupInfo(
    kernel: cl_kernel,
    device: cl_device_id,
    param_name: cl_kernel_sub_group_info,
    input_value_size: usize,
    input_value: *const c_void,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    get_kernel_sub_group_info(
        "clGetKernelSubGroupInfo",
        kernel,
        device,
        param_name,
        input_value_size,
        input_value,
        param_value_size,
        param_value,
        param_value_size_ret,
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetKernelSuggestedLocalWorkSize(
    _command_queue: cl_command_queue,
    _kernel: cl_kernel,
    _work_dim: cl_uint,
    _global_work_offset: *const usize,
    _global_work_size: *const usize,
    _suggested_local_work_size: *mut usize,
) -> cl_int {
    unsupported("clGetKernelSuggestedLocalWorkSize")
}

/// cl_ext_buffer_device_address: a pointer argument given as a device
/// address (of a buffer made with CL_MEM_DEVICE_PRIVATE_ADDRESS_EXT).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetKernelArgDevicePointerEXT(
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_value: cl_mem_device_address_ext,
) -> cl_int {
    api_call("clSetKernelArgDevicePointerEXT", || {
        let k = Handle::<Kernel>::from_raw(kernel)?;
        match k.arg_kind(arg_index as usize)? {
            ArgKind::Buffer => k.set_arg(arg_index as usize, ArgValue::Address(arg_value)),
            // The extension names this error for arguments that are not
            // pointers to global memory.
            _ => err(CL_INVALID_ARG_INDEX),
        }
    })
}
