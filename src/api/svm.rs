//! Shared virtual memory entry points: coarse- and fine-grained buffer SVM
//! where the device offers it (see core::svm), for which every command
//! runs its host step on memory the host and the device share. Elsewhere
//! CL_DEVICE_SVM_CAPABILITIES is zero, clSVMAlloc returns null and the
//! commands report CL_INVALID_OPERATION, as the specification says.

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::memory::{Plan, Target, target};
use crate::api::util::*;
use crate::compiler::spirv::input::reflect::ArgKind;
use crate::core::context::Context;
use crate::core::error::{ClError, ClResult, err};
use crate::core::kernel::{ArgValue, Kernel};
use crate::core::memory::HostPtr;
use crate::core::object::Handle;
use crate::core::queue::Work;

const ACCESS: cl_svm_mem_flags = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSVMAlloc(
    context: cl_context,
    flags: cl_svm_mem_flags,
    size: usize,
    alignment: cl_uint,
) -> *mut c_void {
    let mut ptr = 0usize;
    let r = api_call("clSVMAlloc", || {
        let c = Handle::<Context>::from_raw(context)?;
        let known = ACCESS | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS;
        if flags & !known != 0 || (flags & ACCESS).count_ones() > 1 {
            return err(CL_INVALID_VALUE);
        }
        // Every allocation is fine-grained (see core::svm); SVM atomics
        // are not offered.
        if flags & CL_MEM_SVM_ATOMICS != 0 {
            return err(CL_INVALID_VALUE);
        }
        ptr = c.svm_alloc(flags, size, alignment as usize)?;
        Ok(())
    });
    if r == CL_SUCCESS {
        ptr as *mut c_void
    } else {
        std::ptr::null_mut()
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSVMFree(context: cl_context, svm_pointer: *mut c_void) {
    api_call("clSVMFree", || {
        let c = Handle::<Context>::from_raw(context)?;
        if !svm_pointer.is_null() {
            c.svm.remove(svm_pointer as usize);
        }
        Ok(())
    });
}

/// The queue and wait list of an SVM command, on a device that offers SVM.
fn svm_target(
    command_queue: cl_command_queue,
    num_events: cl_uint,
    events: *const cl_event,
) -> ClResult<Target> {
    let (t, _) = target(command_queue, &[], num_events, events)?;
    if !t.queue.device.coarse_svm() {
        return err(CL_INVALID_OPERATION);
    }
    Ok(t)
}

/// A command whose host step runs `f` once earlier commands are done.
fn host_step(
    f: impl FnOnce() + Send + 'static,
    keep: Vec<Box<dyn std::any::Any + Send + Sync>>,
) -> Work {
    Work {
        record: None,
        complete: Some(Box::new(move || {
            f();
            Ok(())
        })),
        keep,
        host_access: true,
        uses: Vec::new(),
    }
}

/// The allocations behind `ptrs`, kept alive by the command using them.
fn held(c: &Context, ptrs: &[usize]) -> Vec<Box<dyn std::any::Any + Send + Sync>> {
    ptrs.iter()
        .filter_map(|&p| c.svm.find(p))
        .map(|a| Box::new(a) as Box<dyn std::any::Any + Send + Sync>)
        .collect()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMFree(
    command_queue: cl_command_queue,
    num_svm_pointers: cl_uint,
    svm_pointers: *mut *mut c_void,
    pfn_free_func: Option<
        unsafe extern "C" fn(
            queue: cl_command_queue,
            num_svm_pointers: cl_uint,
            svm_pointers: *mut *mut c_void,
            user_data: *mut c_void,
        ),
    >,
    user_data: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueSVMFree", || {
        let t = svm_target(command_queue, num_events_in_wait_list, event_wait_list)?;
        if num_svm_pointers == 0 || svm_pointers.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes `num_svm_pointers` pointers.
        let list: Vec<usize> = unsafe { slice_in(svm_pointers, num_svm_pointers as usize)? }
            .iter()
            .map(|&p| p as usize)
            .collect();
        let context = t.queue.context.clone();
        let queue = command_queue as usize;
        let user = user_data as usize;
        let work = host_step(
            move || match pfn_free_func {
                Some(f) => {
                    let mut ptrs: Vec<*mut c_void> =
                        list.iter().map(|&p| p as *mut c_void).collect();
                    // SAFETY: the application's callback, called once with
                    // the pointers it gave, as the specification says.
                    unsafe {
                        f(
                            queue as cl_command_queue,
                            ptrs.len() as cl_uint,
                            ptrs.as_mut_ptr(),
                            user as *mut c_void,
                        )
                    }
                }
                None => {
                    for p in list {
                        context.svm.remove(p);
                    }
                }
            },
            Vec::new(),
        );
        t.run(CL_COMMAND_SVM_FREE, false, event, work)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMMemcpy(
    command_queue: cl_command_queue,
    blocking_copy: cl_bool,
    dst_ptr: *mut c_void,
    src_ptr: *const c_void,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueSVMMemcpy", || {
        let (t, plan) = svm_memcpy_plan(
            command_queue,
            dst_ptr,
            src_ptr,
            size,
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let work = plan(&t.queue)?;
        t.run(CL_COMMAND_SVM_MEMCPY, blocking_copy != 0, event, work)
    })
}

/// clEnqueueSVMMemcpy's checks and work (also clCommandSVMMemcpyKHR's).
pub(crate) fn svm_memcpy_plan(
    command_queue: cl_command_queue,
    dst_ptr: *mut c_void,
    src_ptr: *const c_void,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let t = svm_target(command_queue, num_events_in_wait_list, event_wait_list)?;
    if dst_ptr.is_null() || src_ptr.is_null() {
        return err(CL_INVALID_VALUE);
    }
    let (dst, src) = (dst_ptr as usize, src_ptr as usize);
    if dst < src.saturating_add(size) && src < dst.saturating_add(size) {
        return err(CL_MEM_COPY_OVERLAP);
    }
    let plan: Plan = Arc::new(move |q| {
        let keep = held(&q.context, &[dst, src]);
        let (dst, src) = (HostPtr(dst), HostPtr(src));
        Ok(host_step(
            // SAFETY: the application keeps both ranges valid until the
            // command completes, as the specification requires.
            move || unsafe { std::ptr::copy_nonoverlapping(src.get(), dst.get(), size) },
            keep,
        ))
    });
    Ok((t, plan))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMMemFill(
    command_queue: cl_command_queue,
    svm_ptr: *mut c_void,
    pattern: *const c_void,
    pattern_size: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueSVMMemFill", || {
        // SAFETY: the application passes `pattern_size` pattern bytes.
        let (t, plan) = unsafe {
            svm_mem_fill_plan(
                command_queue,
                svm_ptr,
                pattern,
                pattern_size,
                size,
                num_events_in_wait_list,
                event_wait_list,
            )?
        };
        let work = plan(&t.queue)?;
        t.run(CL_COMMAND_SVM_MEMFILL, false, event, work)
    })
}

/// clEnqueueSVMMemFill's checks and work (also clCommandSVMMemFillKHR's).
///
/// # Safety
/// `pattern` is null or points to `pattern_size` bytes.
pub(crate) unsafe fn svm_mem_fill_plan(
    command_queue: cl_command_queue,
    svm_ptr: *mut c_void,
    pattern: *const c_void,
    pattern_size: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let t = svm_target(command_queue, num_events_in_wait_list, event_wait_list)?;
    let ptr = svm_ptr as usize;
    if svm_ptr.is_null()
        || pattern.is_null()
        || !pattern_size.is_power_of_two()
        || pattern_size > 128
        || ptr % pattern_size != 0
        || size % pattern_size != 0
    {
        return err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller promises `pattern_size` bytes; copied now, as the
    // application may reuse them once the call returns.
    let pattern: Arc<[u8]> = unsafe { slice_in(pattern.cast::<u8>(), pattern_size)? }.into();
    let plan: Plan = Arc::new(move |q| {
        let keep = held(&q.context, &[ptr]);
        let (dst, pattern) = (HostPtr(ptr), pattern.clone());
        Ok(host_step(
            move || {
                for k in (0..size).step_by(pattern.len()) {
                    // SAFETY: inside the range the application gave, which
                    // it keeps valid until the command completes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            pattern.as_ptr(),
                            dst.get().add(k),
                            pattern.len(),
                        )
                    }
                }
            },
            keep,
        ))
    });
    Ok((t, plan))
}

/// Map flags the specification defines.
fn check_map_flags(flags: cl_map_flags) -> ClResult<()> {
    let known = CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION;
    if flags & !known != 0
        || (flags & CL_MAP_WRITE_INVALIDATE_REGION != 0
            && flags & (CL_MAP_READ | CL_MAP_WRITE) != 0)
    {
        return err(CL_INVALID_VALUE);
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMMap(
    command_queue: cl_command_queue,
    blocking_map: cl_bool,
    flags: cl_map_flags,
    svm_ptr: *mut c_void,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueSVMMap", || {
        let t = svm_target(command_queue, num_events_in_wait_list, event_wait_list)?;
        if svm_ptr.is_null() || size == 0 {
            return err(CL_INVALID_VALUE);
        }
        check_map_flags(flags)?;
        // The host already sees the memory: mapping only orders the host's
        // access after the commands before it.
        let keep = held(&t.queue.context, &[svm_ptr as usize]);
        let work = host_step(|| {}, keep);
        t.run(CL_COMMAND_SVM_MAP, blocking_map != 0, event, work)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMUnmap(
    command_queue: cl_command_queue,
    svm_ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueSVMUnmap", || {
        let t = svm_target(command_queue, num_events_in_wait_list, event_wait_list)?;
        if svm_ptr.is_null() {
            return err(CL_INVALID_VALUE);
        }
        let keep = held(&t.queue.context, &[svm_ptr as usize]);
        t.run(CL_COMMAND_SVM_UNMAP, false, event, host_step(|| {}, keep))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetKernelArgSVMPointer(
    kernel: cl_kernel,
    arg_index: cl_uint,
    arg_value: *const c_void,
) -> cl_int {
    api_call("clSetKernelArgSVMPointer", || {
        let k = Handle::<Kernel>::from_raw(kernel)?;
        let v = svm_arg_value_of(&k, arg_index, arg_value)?;
        k.set_arg(arg_index as usize, v)
    })
}

/// clSetKernelArgSVMPointer's checks: the value `arg_value` gives argument
/// `arg_index` of `k`. Also a mutable dispatch's SVM argument update.
pub(crate) fn svm_arg_value_of(
    k: &Kernel,
    arg_index: cl_uint,
    arg_value: *const c_void,
) -> ClResult<ArgValue> {
    if !k.program.context.devices.iter().any(|d| d.coarse_svm()) {
        return err(CL_INVALID_OPERATION);
    }
    match k.arg_kind(arg_index as usize)? {
        ArgKind::Buffer => Ok(ArgValue::Address(arg_value as u64)),
        _ => err(CL_INVALID_ARG_VALUE),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueSVMMigrateMem(
    command_queue: cl_command_queue,
    num_svm_pointers: cl_uint,
    svm_pointers: *mut *const c_void,
    sizes: *const usize,
    flags: cl_mem_migration_flags,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueSVMMigrateMem", || {
        let t = svm_target(command_queue, num_events_in_wait_list, event_wait_list)?;
        if num_svm_pointers == 0 || svm_pointers.is_null() {
            return err(CL_INVALID_VALUE);
        }
        if flags & !(CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) != 0 {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes `num_svm_pointers` pointers (and
        // as many sizes, when it passes sizes).
        let ptrs = unsafe { slice_in(svm_pointers, num_svm_pointers as usize)? };
        let sizes = if sizes.is_null() {
            None
        } else {
            Some(unsafe { slice_in(sizes, num_svm_pointers as usize)? })
        };
        let context = &t.queue.context;
        for (i, &p) in ptrs.iter().enumerate() {
            let a = context
                .svm
                .find(p as usize)
                .ok_or(ClError(CL_INVALID_VALUE))?;
            let size = sizes.map_or(0, |s| s[i]);
            if (p as usize) + size > a.ptr + a.size {
                return err(CL_INVALID_VALUE);
            }
        }
        // Host and device share the memory: there is nothing to move.
        let keep = held(
            context,
            &ptrs.iter().map(|&p| p as usize).collect::<Vec<_>>(),
        );
        t.run(
            CL_COMMAND_SVM_MIGRATE_MEM,
            false,
            event,
            host_step(|| {}, keep),
        )
    })
}
