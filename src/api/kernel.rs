//! Kernel entry points: kernel objects, arguments, queries and dispatch.
//! A kernel the SPIR-V rewriter cannot handle yet is reported by name in
//! the log when it is first enqueued, and the enqueue fails with
//! CL_INVALID_OPERATION. Native kernels are never offered
//! (CL_EXEC_NATIVE_KERNEL is not reported).

use std::ffi::{CStr, c_char, c_void};
use std::sync::Arc;

use opencl_sys::*;

use crate::api::util::*;
use crate::compiler::spirv::reflect::{ArgKind, KernelArg};
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::core::image::{Image, KernelView};
use crate::core::kernel::{ArgValue, Kernel};
use crate::core::memory::{Buffer, Staging};
use crate::core::object::Handle;
use crate::core::program::Program;
use crate::core::queue::{Ordering, Queue, Work};
use crate::core::sampler::Sampler;
use crate::vk::memory::BufferUse;

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
            .executable_kernels()
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
        let kind = k.arg_kind(arg_index as usize)?.clone();
        let v = decode_arg(&k, &kind, arg_size, arg_value)?;
        if let ArgValue::Image(w) = &v {
            let arg = &k.info.args[arg_index as usize];
            let image = w.upgrade().ok_or(ClError(CL_INVALID_MEM_OBJECT))?;
            check_image_arg(arg, &image)?;
        }
        k.set_arg(arg_index as usize, v)
    })
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

/// The largest work-group the kernel can run in on `d`: its required
/// size, else the device's, less where it requires a sub-group size.
fn max_group_size(k: &Kernel, d: &Device) -> usize {
    match (k.info.reqd_work_group_size, k.info.reqd_sub_group_size) {
        // Valid modules may require sizes no device runs (their product
        // past 32 bits): such kernels never fit.
        (Some([x, y, z]), _) => usize::try_from(
            u64::from(x)
                .saturating_mul(u64::from(y))
                .saturating_mul(u64::from(z)),
        )
        .unwrap_or(usize::MAX),
        (None, Some(s)) => d.max_work_group_size_for_subgroups(s),
        (None, None) => d.max_work_group_size(),
    }
}

/// The width of the kernel's sub-groups on `d`.
fn sub_group_width(k: &Kernel, d: &Device) -> usize {
    k.info.reqd_sub_group_size.unwrap_or(d.subgroup_size()) as usize
}

fn work_group_info(k: &Kernel, d: &Device, param: cl_kernel_work_group_info) -> Info {
    let reqd = k.info.reqd_work_group_size;
    match param {
        CL_KERNEL_WORK_GROUP_SIZE => info(max_group_size(k, d)),
        // Kernels keep no private data in memory that the driver spills
        // on vkcl's behalf that vkcl can know of.
        CL_KERNEL_SPILL_MEM_SIZE_INTEL if !d.required_subgroup_sizes().is_empty() => {
            info(0 as cl_ulong)
        }
        CL_KERNEL_COMPILE_WORK_GROUP_SIZE => info(reqd.unwrap_or([0; 3]).map(|v| v as usize)),
        CL_KERNEL_LOCAL_MEM_SIZE => info(k.local_arg_bytes() + k.info.local_bytes),
        CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE => info(sub_group_width(k, d)),
        // Private data lives in registers, except what the rewrite moved
        // to device memory (casts and pointer arithmetic on it).
        CL_KERNEL_PRIVATE_MEM_SIZE => info(
            d.logical()
                .ok()
                .and_then(|vk| k.compiled(d, &vk, false).ok())
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
    })
}

/// A local size for an NDRange the application left to vkcl: per
/// dimension the largest divisor of the global size that keeps the
/// work-group within the device's limits (and 256 items, a size that
/// suits most GPUs and lavapipe alike).
fn choose_local(global: [usize; 3], d: &Device, reqd: Option<[u32; 3]>, most: usize) -> [usize; 3] {
    if let Some(r) = reqd {
        return r.map(|v| v as usize);
    }
    let max = d.max_work_item_sizes();
    let mut budget = most.min(256);
    let mut local = [1usize; 3];
    for dim in 0..3 {
        let cap = budget.min(max[dim]).max(1);
        let l = (1..=cap.min(global[dim]))
            .rev()
            .find(|l| global[dim] % l == 0)
            .unwrap_or(1);
        local[dim] = l;
        budget /= l;
    }
    local
}

/// A block of an NDRange's work-groups that share one size: the uniform
/// groups, or in a dimension where the global size is not a multiple of
/// the local size, the one partial group at its end (up to 8 blocks in
/// 3-D). Group ids are in units of the enqueued work-group size.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Region {
    first: [u32; 3],
    groups: [u32; 3],
    local: [u32; 3],
}

impl Region {
    fn split(global: [usize; 3], local: [usize; 3]) -> Vec<Region> {
        // Per dimension: (first group, groups, local size).
        let parts: Vec<Vec<(u32, u32, u32)>> = (0..3)
            .map(|i| {
                let (full, rest) = (global[i] / local[i], global[i] % local[i]);
                let mut v = Vec::new();
                if full > 0 {
                    v.push((0, full as u32, local[i] as u32));
                }
                if rest > 0 {
                    v.push((full as u32, 1, rest as u32));
                }
                v
            })
            .collect();
        let mut out = Vec::new();
        for x in &parts[0] {
            for y in &parts[1] {
                for z in &parts[2] {
                    out.push(Region {
                        first: [x.0, y.0, z.0],
                        groups: [x.1, y.1, z.1],
                        local: [x.2, y.2, z.2],
                    });
                }
            }
        }
        out
    }

    /// The region as dispatches of at most `max` groups per dimension:
    /// (first group id, group counts) of each.
    fn chunks(&self, max: [u32; 3]) -> Vec<([u32; 3], [u32; 3])> {
        let per_dim: Vec<Vec<(u32, u32)>> = (0..3)
            .map(|i| {
                let step = max[i].max(1);
                (0..self.groups[i])
                    .step_by(step as usize)
                    .map(|s| (self.first[i] + s, step.min(self.groups[i] - s)))
                    .collect()
            })
            .collect();
        let mut out = Vec::new();
        for x in &per_dim[0] {
            for y in &per_dim[1] {
                for z in &per_dim[2] {
                    out.push(([x.0, y.0, z.0], [x.1, y.1, z.1]));
                }
            }
        }
        out
    }
}

/// clEnqueueNDRangeKernel: checks in the specification's order, then
/// records the dispatches: one per block of equally sized work-groups
/// and per what one Vulkan dispatch can cover.
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
    let q = Handle::<Queue>::from_raw(command_queue)?;
    let k = Handle::<Kernel>::from_raw(kernel)?;
    if !Arc::ptr_eq(&q.context, &k.program.context) {
        return err(CL_INVALID_CONTEXT);
    }
    if k.program.device_index(&q.device).is_none() {
        return err(CL_INVALID_PROGRAM_EXECUTABLE);
    }
    k.check_args_set()?;
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
    for (i, &g) in global.iter().enumerate() {
        if offset.get(i).is_some_and(|&o| g.checked_add(o).is_none()) {
            return err(CL_INVALID_GLOBAL_OFFSET);
        }
    }
    let d = &q.device;
    let reqd = k.info.reqd_work_group_size;
    if !local.is_empty() {
        let sizes = d.max_work_item_sizes();
        if local.iter().zip(sizes).any(|(&l, m)| l == 0 || l > m) {
            return err(CL_INVALID_WORK_ITEM_SIZE);
        }
        let total: usize = local.iter().product();
        if total > d.max_work_group_size().min(max_group_size(&k, d)) {
            return err(CL_INVALID_WORK_GROUP_SIZE);
        }
        if let Some(r) = reqd {
            let want: Vec<usize> = r.iter().take(dims).map(|&v| v as usize).collect();
            if local != want.as_slice() {
                return err(CL_INVALID_WORK_GROUP_SIZE);
            }
        }
    } else if reqd.is_some_and(|r| r.iter().product::<u32>() as usize > d.max_work_group_size()) {
        return err(CL_INVALID_WORK_GROUP_SIZE);
    }
    // SAFETY: the application passes `num_events_in_wait_list` handles.
    let waits = unsafe { wait_list(&q.context, num_events_in_wait_list, event_wait_list)? };
    let mut g3 = [1usize; 3];
    let mut o3 = [0usize; 3];
    for i in 0..dims {
        g3[i] = global[i];
        o3[i] = offset.get(i).copied().unwrap_or(0);
    }
    let l3 = if local.is_empty() {
        choose_local(g3, d, reqd, max_group_size(&k, d))
    } else {
        let mut l = [1usize; 3];
        l[..dims].copy_from_slice(local);
        l
    };
    // Partial work-groups need OpenCL 2.0+ and no -cl-uniform-work-group-size.
    if !k.non_uniform_groups && (0..3).any(|i| g3[i] % l3[i] != 0) {
        return err(CL_INVALID_WORK_GROUP_SIZE);
    }
    let single_work_item = g3 == [1, 1, 1];
    let compiled = k
        .compiled(d, &q.vk, single_work_item)
        .map_err(|_| ClError(CL_INVALID_OPERATION))?;
    // Vulkan's global ids are 32-bit.
    if (0..3).any(|i| o3[i] as u64 + g3[i] as u64 > u32::MAX as u64) {
        log::warn!(target: "vkcl::kernel", "an NDRange of {g3:?} (offset {o3:?}) reaches past 32-bit global ids");
        return err(CL_OUT_OF_RESOURCES);
    }
    // The push constants: work-item data, then the arguments as set now.
    let mut push = vec![0u8; compiled.push.size as usize];
    let put = |push: &mut Vec<u8>, at: u32, bytes: &[u8]| {
        push[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    };
    use crate::compiler::spirv::interface::{
        ENQUEUED_LOCAL_SIZE, GLOBAL_OFFSET, GLOBAL_SIZE, GROUP_OFFSET, Slot, WORK_DIM,
    };
    for i in 0..3 {
        let at = 4 * i as u32;
        put(&mut push, GLOBAL_OFFSET + at, &(o3[i] as u32).to_ne_bytes());
        put(&mut push, GLOBAL_SIZE + at, &(g3[i] as u32).to_ne_bytes());
        put(
            &mut push,
            ENQUEUED_LOCAL_SIZE + at,
            &(l3[i] as u32).to_ne_bytes(),
        );
    }
    put(&mut push, WORK_DIM, &work_dim.to_ne_bytes());
    let mut keep: Vec<Box<dyn std::any::Any + Send + Sync>> = Vec::new();
    // Arguments go to the push constants, or all to an argument block.
    let mut block = vec![0u8; compiled.push.block.unwrap_or(0) as usize];
    let args_to = if compiled.push.block.is_some() {
        &mut block
    } else {
        &mut push
    };
    let mut locals = Vec::new();
    let mut local_bytes = 0u64;
    // Descriptor set 0: image views and samplers by binding.
    let types = compiled.module.bindings.clone();
    let mut views = vec![ash::vk::ImageView::null(); types.len()];
    let mut texels = vec![ash::vk::BufferView::null(); types.len()];
    // Images whose texels live in buffer rows: (buffer, image, copy,
    // whether the kernel may write them).
    let mut shadows = Vec::new();
    let mut samplers = vec![ash::vk::Sampler::null(); types.len()];
    // Each sampler's twin for 1D and 2D images, by the sampler's binding.
    let mut direct = vec![ash::vk::Sampler::null(); types.len()];
    for (binding, s) in &compiled.literal_samplers {
        samplers[*binding as usize] = s.normal.raw;
        direct[*binding as usize] = s.direct.raw;
    }
    let mut image_index = 0;
    for (slot, value) in compiled.push.args.iter().zip(k.args().iter()) {
        match (slot, value) {
            (Slot::Address { offset }, Some(ArgValue::Buffer(b))) => {
                let address = match b {
                    Some(weak) => {
                        // A buffer released since it was set is gone.
                        let b = weak.upgrade().ok_or(ClError(CL_INVALID_KERNEL_ARGS))?;
                        b.check_device(&q)?;
                        let address = b.storage.address + b.offset as u64;
                        keep.push(Box::new(b));
                        address
                    }
                    None => 0,
                };
                put(args_to, *offset, &address.to_ne_bytes());
            }
            (Slot::Address { offset }, Some(ArgValue::Address(address))) => {
                // The allocation stays while the command runs.
                if let Some(a) = k.program.context.svm.find(*address as usize) {
                    keep.push(Box::new(a));
                }
                put(args_to, *offset, &address.to_ne_bytes());
            }
            (Slot::Bytes { offset, .. }, Some(ArgValue::Bytes(bytes))) => {
                put(args_to, *offset, bytes)
            }
            (Slot::Local { spec_id, elem_size }, Some(ArgValue::Local(bytes))) => {
                local_bytes += *bytes as u64;
                locals.push((*spec_id, bytes.div_ceil(*elem_size as usize) as u32));
            }
            (Slot::Image { binding, info }, Some(ArgValue::Image(w))) => {
                // An image released since it was set is gone.
                let image = w.upgrade().ok_or(ClError(CL_INVALID_KERNEL_ARGS))?;
                image.check_device(&q)?;
                let class = crate::core::kernel::image_class(&q.device, &image.format);
                if compiled.classes.get(image_index) != Some(&class) {
                    // The argument changed while the kernel was compiled.
                    return err(CL_INVALID_KERNEL_ARGS);
                }
                image_index += 1;
                let f = image.format;
                let no_alpha = matches!(
                    f.image_channel_order,
                    CL_R | CL_RG | CL_RGB | CL_LUMINANCE | CL_DEPTH
                );
                use crate::compiler::spirv::images::{NO_ALPHA, SWAP_RED_BLUE};
                let b = *binding as usize;
                use ash::vk::DescriptorType as T;
                let sampled = matches!(types[b], T::SAMPLED_IMAGE | T::UNIFORM_TEXEL_BUFFER);
                let mut order = f.image_channel_order - CL_R;
                if no_alpha {
                    order |= NO_ALPHA;
                }
                if !sampled && image.storage_swaps_red_blue() {
                    order |= SWAP_RED_BLUE;
                }
                locals.push((*info, order));
                locals.push((*info + 1, f.image_channel_data_type - CL_SNORM_INT8));
                // The kernel's parameter type says which kind of
                // descriptor it takes; the image must be of that kind.
                let texel_binding =
                    matches!(types[b], T::UNIFORM_TEXEL_BUFFER | T::STORAGE_TEXEL_BUFFER);
                match image.kernel_view(sampled) {
                    Some(KernelView::Image(v)) if !texel_binding => views[b] = v,
                    Some(KernelView::Texels(v)) if texel_binding => texels[b] = v,
                    _ => return err(CL_INVALID_KERNEL_ARGS),
                }
                if let Some((buffer, shadow, copy)) = image.shadow() {
                    shadows.push((buffer, shadow, copy, !sampled));
                }
                keep.push(Box::new(image));
            }
            (Slot::Sampler { binding, info }, Some(ArgValue::Sampler(w))) => {
                let s = w.upgrade().ok_or(ClError(CL_INVALID_KERNEL_ARGS))?;
                let at = s
                    .context
                    .devices
                    .iter()
                    .position(|dev| Arc::ptr_eq(dev, &q.device))
                    .ok_or(ClError(CL_INVALID_KERNEL_ARGS))?;
                samplers[*binding as usize] = s.device_samplers[at].normal.raw;
                direct[*binding as usize] = s.device_samplers[at].direct.raw;
                use crate::compiler::spirv::images::{
                    SAMPLER_BORDER, SAMPLER_LINEAR, SAMPLER_MIRROR, SAMPLER_NORMALIZED,
                    SAMPLER_REPEAT,
                };
                let st = s.state;
                let mut flags = 0;
                if st.normalized {
                    flags |= SAMPLER_NORMALIZED;
                }
                if st.filter == CL_FILTER_LINEAR {
                    flags |= SAMPLER_LINEAR;
                }
                if st.addressing == CL_ADDRESS_REPEAT {
                    flags |= SAMPLER_REPEAT;
                }
                if st.addressing == CL_ADDRESS_CLAMP {
                    flags |= SAMPLER_BORDER;
                }
                if st.addressing == CL_ADDRESS_MIRRORED_REPEAT {
                    flags |= SAMPLER_MIRROR;
                }
                locals.push((*info, flags));
                keep.push(Box::new(s));
            }
            _ => return err(CL_INVALID_KERNEL_ARGS),
        }
    }
    if local_bytes > d.local_mem_size() {
        return err(CL_OUT_OF_RESOURCES);
    }
    if compiled.push.block.is_some() {
        // Written now, read by the device after submission.
        let staging = Staging::new(&q.vk, block.len(), BufferUse::Upload)?;
        staging.buffer().write(0, &block);
        put(
            &mut push,
            compiled.push.arg_block,
            &staging.buffer().address.to_ne_bytes(),
        );
        keep.push(Box::new(staging));
    }
    if let Some(data) = &compiled.data {
        put(
            &mut push,
            crate::compiler::spirv::interface::MODULE_DATA,
            &data.kernel.address.to_ne_bytes(),
        );
        keep.push(Box::new(data.clone()));
    }
    // printf: a buffer the dispatches append records to, formatted on the
    // host once the command completes.
    let printf = if compiled.printf.is_empty() {
        None
    } else {
        let size = crate::core::printf::buffer_size();
        let buffer = Staging::new(&q.vk, size, BufferUse::Readback)?;
        buffer.buffer().write(0, &crate::core::printf::header(size));
        put(
            &mut push,
            crate::compiler::spirv::interface::PRINTF_BUFFER,
            &buffer.buffer().address.to_ne_bytes(),
        );
        Some((buffer, size, compiled.clone()))
    };
    // Relocated private and local data: a region per work-item, then one
    // per work-group, for the whole NDRange.
    let scratch = &compiled.scratch;
    // __local arguments in the scratch memory follow the kernel's own
    // local data; their offsets and the per-group size are specialization
    // constants.
    let mut local_stride = u64::from(scratch.local_bytes);
    for arg in &scratch.local_args {
        use crate::compiler::spirv::relocate::LOCAL_STRIDE_SPEC_ID;
        let length = locals
            .iter()
            .find(|(id, _)| *id == arg.length_spec_id)
            .map_or(0, |&(_, n)| u64::from(n));
        let offset = local_stride.next_multiple_of(u64::from(arg.align.max(16)));
        local_stride = offset + length * u64::from(arg.elem_size);
        let offset = u32::try_from(offset).map_err(|_| ClError(CL_OUT_OF_RESOURCES))?;
        locals.push((arg.offset_spec_id, offset));
        if Some(arg) == scratch.local_args.last() {
            local_stride = local_stride.next_multiple_of(16);
            let stride = u32::try_from(local_stride).map_err(|_| ClError(CL_OUT_OF_RESOURCES))?;
            locals.push((LOCAL_STRIDE_SPEC_ID, stride));
        }
    }
    if *scratch != Default::default() && g3.iter().all(|&g| g > 0) {
        use crate::compiler::spirv::interface::{SCRATCH, SCRATCH_BYTES, SCRATCH_PRIVATE_BYTES};
        let items: u64 = g3.iter().map(|&g| g as u64).product();
        let groups: u64 = (0..3).map(|i| g3[i].div_ceil(l3[i]) as u64).product();
        let align = crate::vk::memory::MIN_ALIGNMENT;
        let private = (items * u64::from(scratch.private_bytes)).next_multiple_of(align);
        let total = private + groups * local_stride;
        if total > u64::from(u32::MAX) {
            log::warn!(target: "vkcl::kernel", "relocated private and local data need {total} bytes of scratch memory, more than vkcl supports");
            return err(CL_OUT_OF_RESOURCES);
        }
        let buffer = Staging::new(&q.vk, (total + align) as usize, BufferUse::Device)?;
        let address = buffer.buffer().address.next_multiple_of(align);
        put(&mut push, SCRATCH, &address.to_ne_bytes());
        put(
            &mut push,
            SCRATCH_PRIVATE_BYTES,
            &(private as u32).to_ne_bytes(),
        );
        put(&mut push, SCRATCH_BYTES, &(total as u32).to_ne_bytes());
        keep.push(Box::new(buffer));
    }
    for &(twin, of) in &compiled.images.direct_samplers {
        samplers[twin as usize] = direct[of as usize];
    }
    // Images and samplers: pushed into the command buffer where the device
    // can, else a descriptor set of the command's own.
    let pushed = (!types.is_empty() && compiled.module.pushes_descriptors()).then(|| {
        (
            compiled.clone(),
            views.clone(),
            texels.clone(),
            samplers.clone(),
        )
    });
    if pushed.is_some() {
        // Its literal samplers, until the command completes.
        keep.push(Box::new(compiled.clone()));
    }
    let set = if types.is_empty() || pushed.is_some() {
        None
    } else {
        let set = compiled.module.descriptor_set()?;
        set.write(&types, &views, &texels, &samplers);
        let raw = set.raw;
        keep.push(Box::new(set));
        // Its literal samplers.
        keep.push(Box::new(compiled.clone()));
        Some(raw)
    };
    let max_groups = d.info.props.limits.max_compute_work_group_count;
    let mut dispatches = Vec::new();
    for region in Region::split(g3, l3) {
        let pipeline = compiled.pipeline(region.local, locals.clone())?;
        keep.push(Box::new(pipeline.clone()));
        for (first, count) in region.chunks(max_groups) {
            let mut p = push.clone();
            for (i, f) in first.iter().enumerate() {
                put(&mut p, GROUP_OFFSET + 4 * i as u32, &f.to_ne_bytes());
            }
            dispatches.push((pipeline.clone(), p, count));
        }
    }
    let work = Work {
        record: Some(Box::new(move |r| {
            // Images from buffers: their texels in, before the kernel.
            for &(buffer, shadow, copy, _) in &shadows {
                r.copy_buffer_to_image(buffer, shadow, copy);
            }
            if !shadows.is_empty() {
                r.full_barrier();
            }
            for (pipeline, push, groups) in &dispatches {
                if let Some((compiled, views, texels, samplers)) = &pushed {
                    compiled.module.push_descriptors(
                        r.cb,
                        pipeline.layout(),
                        views,
                        texels,
                        samplers,
                    );
                }
                r.dispatch(pipeline, push, *groups, set);
            }
            // And back out, where the kernel may have written them.
            if shadows.iter().any(|s| s.3) {
                r.full_barrier();
            }
            for &(buffer, shadow, copy, _) in shadows.iter().filter(|s| s.3) {
                r.copy_image_to_buffer(shadow, buffer, copy);
            }
            Ok(())
        })),
        complete: printf.map(
            |(buffer, size, compiled)| -> crate::core::queue::CompleteFn {
                Box::new(move || {
                    let mut bytes = vec![0u8; size];
                    // SAFETY: `bytes` has room for the whole buffer.
                    unsafe { buffer.buffer().read_to(0, bytes.as_mut_ptr().cast(), size) };
                    crate::core::printf::print_records(&bytes, &compiled.printf);
                    Ok(())
                })
            },
        ),
        keep,
        host_access: false,
    };
    let ev = q.enqueue(command_type, waits, Ordering::Normal, work)?;
    // SAFETY: null or writable, per the specification.
    unsafe { out_event(event, ev) };
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
    let max_wg = max_group_size(k, d);
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

#[cfg(test)]
mod tests {
    use super::Region;

    #[test]
    fn partial_groups_make_up_to_eight_regions() {
        let r = Region::split([7, 5, 4], [3, 2, 2]);
        assert_eq!(r.len(), 4);
        assert_eq!(
            r[0],
            Region {
                first: [0, 0, 0],
                groups: [2, 2, 2],
                local: [3, 2, 2]
            }
        );
        assert_eq!(
            r[3],
            Region {
                first: [2, 2, 0],
                groups: [1, 1, 2],
                local: [1, 1, 2]
            }
        );
        assert_eq!(Region::split([7, 5, 3], [3, 2, 2]).len(), 8);
        assert_eq!(Region::split([6, 4, 2], [3, 2, 2]).len(), 1);
        assert!(Region::split([0, 1, 1], [1, 1, 1]).is_empty());
    }

    #[test]
    fn regions_split_at_the_dispatch_limit() {
        let r = Region {
            first: [0, 3, 0],
            groups: [10, 1, 1],
            local: [1, 1, 1],
        };
        assert_eq!(
            r.chunks([4, 4, 4]),
            vec![
                ([0, 3, 0], [4, 1, 1]),
                ([4, 3, 0], [4, 1, 1]),
                ([8, 3, 0], [2, 1, 1]),
            ]
        );
    }
}
