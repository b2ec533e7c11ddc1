//! Buffer entry points: creation, sub-buffers, queries and every buffer
//! transfer. Pipes are not offered (CL_DEVICE_PIPE_SUPPORT is false), for
//! which the specification gives CL_INVALID_OPERATION.

use std::ffi::c_void;
use std::sync::Arc;

use opencl_sys::*;

use crate::api::image::image_target;
use crate::api::util::*;
use crate::core::context::Context;
use crate::core::error::{ClError, ClResult, err};
use crate::core::image::{Image, work as image_work};
use crate::core::memory::{Access, Buffer, HostPtr, MemDestructor, Pipe, Rect, work};
use crate::core::object::{Callback, Handle};
use crate::core::queue::{Ordering, Queue, Work};

pub(crate) const ACCESS_FLAGS: cl_mem_flags =
    CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
pub(crate) const HOST_ACCESS_FLAGS: cl_mem_flags =
    CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS;
pub(crate) const HOST_PTR_FLAGS: cl_mem_flags =
    CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR;

/// Checks a flag set for a new memory object.
pub(crate) fn check_mem_flags(flags: cl_mem_flags) -> ClResult<()> {
    let known = ACCESS_FLAGS | HOST_ACCESS_FLAGS | HOST_PTR_FLAGS;
    let at_most_one = |group: cl_mem_flags| (flags & group).count_ones() <= 1;
    if flags & !known != 0
        || !at_most_one(ACCESS_FLAGS)
        || !at_most_one(HOST_ACCESS_FLAGS)
        || (flags & CL_MEM_USE_HOST_PTR != 0
            && flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0)
    {
        return err(CL_INVALID_VALUE);
    }
    Ok(())
}

/// A memory object's property list (clCreateBufferWithProperties,
/// clCreateImageWithProperties), checked: the list as given, and the file
/// descriptor to import (cl_khr_external_memory). `buffer`: the object is
/// a buffer, which may also ask for a device address.
pub(crate) fn mem_properties(
    c: &Arc<Handle<Context>>,
    properties: Option<*const cl_mem_properties>,
    buffer: bool,
) -> ClResult<(Vec<cl_mem_properties>, Option<i32>)> {
    let mut props = Vec::new();
    let mut seen = Vec::new();
    // cl_khr_external_memory: the descriptor to import.
    let mut import = None;
    if let Some(p) = properties.filter(|p| !p.is_null()) {
        let mut at = 0;
        // SAFETY (reads below): a zero-terminated list of names, each
        // followed by its value (or, for a device list, by devices and a
        // zero), per the specification.
        let read = |i: usize| unsafe { *p.add(i) };
        loop {
            let name = read(at);
            props.push(name);
            at += 1;
            if name == 0 {
                break;
            }
            if seen.contains(&name) {
                return err(CL_INVALID_PROPERTY);
            }
            seen.push(name);
            if name == CL_MEM_DEVICE_HANDLE_LIST_KHR {
                let mut devices = Vec::new();
                loop {
                    let d = read(at);
                    props.push(d);
                    at += 1;
                    if d == CL_MEM_DEVICE_HANDLE_LIST_END_KHR {
                        break;
                    }
                    devices.push(d as cl_device_id);
                }
                // The memory lives on one device of the context.
                c.one_device(&devices)?;
                continue;
            }
            let value = read(at);
            props.push(value);
            at += 1;
            match name {
                // cl_ext_buffer_device_address: a fixed device address the
                // application may use; every vkcl buffer has one.
                CL_MEM_DEVICE_PRIVATE_ADDRESS_EXT
                    if buffer
                        && (value == CL_TRUE as cl_mem_properties
                            || value == CL_FALSE as cl_mem_properties) => {}
                n if n == CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties => {
                    if c.devices.iter().all(|d| d.memory_import_types().is_empty()) {
                        return err(CL_INVALID_PROPERTY);
                    }
                    import = Some(value as i32);
                }
                _ => return err(CL_INVALID_PROPERTY),
            }
        }
    }
    Ok((props, import))
}

fn create_buffer(
    context: cl_context,
    properties: Option<*const cl_mem_properties>,
    flags: cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
) -> ClResult<cl_mem> {
    let c = Handle::<Context>::from_raw(context)?;
    let (props, import) = mem_properties(&c, properties, true)?;
    check_mem_flags(flags)?;
    let flags = if flags & ACCESS_FLAGS == 0 {
        flags | CL_MEM_READ_WRITE
    } else {
        flags
    };
    let wants_ptr = flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0;
    if wants_ptr == host_ptr.is_null() {
        return err(CL_INVALID_HOST_PTR);
    }
    let max = c
        .devices
        .iter()
        .map(|d| d.max_mem_alloc_size())
        .min()
        .unwrap_or(0);
    if size == 0 || size as u64 > max {
        return err(CL_INVALID_BUFFER_SIZE);
    }
    if let Some(fd) = import {
        // The memory is the other API's: nothing of the host's goes in.
        if flags & HOST_PTR_FLAGS != 0 {
            return err(CL_INVALID_VALUE);
        }
        return Ok(Handle::into_api(Buffer::import(c, flags, size, fd, props)?));
    }
    let host = (!host_ptr.is_null()).then_some(HostPtr(host_ptr as usize));
    Ok(Handle::into_api(Buffer::new(c, flags, size, host, props)?))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateBuffer(
    context: cl_context,
    flags: cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let create = || create_buffer(context, None, flags, size, host_ptr);
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateBuffer", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateBufferWithProperties(
    context: cl_context,
    properties: *const cl_mem_properties,
    flags: cl_mem_flags,
    size: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let create = || create_buffer(context, Some(properties), flags, size, host_ptr);
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateBufferWithProperties", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateSubBuffer(
    buffer: cl_mem,
    flags: cl_mem_flags,
    buffer_create_type: cl_buffer_create_type,
    buffer_create_info: *const c_void,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let create = || {
        let parent = Handle::<Buffer>::from_raw(buffer)?;
        if parent.parent.is_some() {
            return err(CL_INVALID_MEM_OBJECT);
        }
        if flags & HOST_PTR_FLAGS != 0 {
            return err(CL_INVALID_VALUE);
        }
        check_mem_flags(flags)?;
        // Access flags the parent forbids cannot be asked for.
        let pf = parent.flags;
        if (pf & CL_MEM_WRITE_ONLY != 0 && flags & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY) != 0)
            || (pf & CL_MEM_READ_ONLY != 0 && flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY) != 0)
            || (pf & CL_MEM_HOST_WRITE_ONLY != 0 && flags & CL_MEM_HOST_READ_ONLY != 0)
            || (pf & CL_MEM_HOST_READ_ONLY != 0 && flags & CL_MEM_HOST_WRITE_ONLY != 0)
            || (pf & CL_MEM_HOST_NO_ACCESS != 0
                && flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY) != 0)
        {
            return err(CL_INVALID_VALUE);
        }
        // Unspecified access and host-access flags, and the host pointer
        // flags, come from the parent.
        let mut sub_flags = flags | (pf & HOST_PTR_FLAGS);
        if flags & ACCESS_FLAGS == 0 {
            sub_flags |= pf & ACCESS_FLAGS;
        }
        if flags & HOST_ACCESS_FLAGS == 0 {
            sub_flags |= pf & HOST_ACCESS_FLAGS;
        }
        if buffer_create_type != CL_BUFFER_CREATE_TYPE_REGION || buffer_create_info.is_null() {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: a cl_buffer_region for CL_BUFFER_CREATE_TYPE_REGION.
        let region = unsafe { &*(buffer_create_info as *const cl_buffer_region) };
        if region.size == 0 {
            return err(CL_INVALID_BUFFER_SIZE);
        }
        if region
            .origin
            .checked_add(region.size)
            .is_none_or(|end| end > parent.size)
        {
            return err(CL_INVALID_VALUE);
        }
        let aligned = parent
            .context
            .devices
            .iter()
            .any(|d| region.origin % (d.mem_base_addr_align_bits() as usize / 8) == 0);
        if !aligned {
            return err(CL_MISALIGNED_SUB_BUFFER_OFFSET);
        }
        Ok(Handle::into_api(Buffer::sub_buffer(
            &parent,
            sub_flags,
            region.origin,
            region.size,
        )))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateSubBuffer", errcode_ret, create) }
}

/// A `cl_mem` of either kind.
pub(crate) enum Mem {
    Buffer(Arc<Handle<Buffer>>),
    Image(Arc<Handle<Image>>),
    Pipe(Arc<Handle<Pipe>>),
}

impl Mem {
    pub(crate) fn from_raw(raw: cl_mem) -> ClResult<Mem> {
        if let Ok(b) = Handle::<Buffer>::from_raw(raw) {
            return Ok(Mem::Buffer(b));
        }
        match Handle::<Image>::from_raw(raw) {
            Ok(i) => Ok(Mem::Image(i)),
            Err(_) => Handle::<Pipe>::from_raw(raw).map(Mem::Pipe),
        }
    }

    fn context(&self) -> &Arc<Handle<Context>> {
        match self {
            Mem::Buffer(b) => &b.context,
            Mem::Image(i) => &i.context,
            Mem::Pipe(p) => p.context(),
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainMemObject(memobj: cl_mem) -> cl_int {
    api_call("clRetainMemObject", || match Mem::from_raw(memobj)? {
        Mem::Buffer(b) => b.retain(),
        Mem::Image(i) => i.retain(),
        Mem::Pipe(p) => p.retain(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseMemObject(memobj: cl_mem) -> cl_int {
    api_call("clReleaseMemObject", || match Mem::from_raw(memobj)? {
        Mem::Buffer(b) => Handle::release(b),
        Mem::Image(i) => Handle::release(i),
        Mem::Pipe(p) => Handle::release(p),
    })
}

fn mem_info(b: &Arc<Handle<Buffer>>, param: cl_mem_info) -> Info {
    match param {
        CL_MEM_TYPE => info(CL_MEM_OBJECT_BUFFER),
        CL_MEM_FLAGS => info(b.flags),
        CL_MEM_SIZE => info(b.size),
        CL_MEM_HOST_PTR => info(b.host_ptr.map_or(std::ptr::null_mut(), |p| p.get())),
        CL_MEM_MAP_COUNT => info(b.maps().len() as cl_uint),
        CL_MEM_REFERENCE_COUNT => info(b.api_ref_count()),
        CL_MEM_CONTEXT => info(Handle::as_raw::<c_void>(&b.context)),
        CL_MEM_ASSOCIATED_MEMOBJECT => info(match &b.parent {
            Some(p) => Handle::as_raw::<c_void>(p),
            None => std::ptr::null_mut(),
        }),
        CL_MEM_OFFSET => info(b.origin()),
        CL_MEM_USES_SVM_POINTER => info(b.uses_svm()),
        CL_MEM_DEVICE_ADDRESS_EXT if b.has_device_address() => {
            info(b.storage.address + b.offset as u64)
        }
        CL_MEM_DEVICE_ADDRESS_EXT => err(CL_INVALID_OPERATION),
        CL_MEM_PROPERTIES => info(b.properties.clone()),
        _ => invalid_param(param),
    }
}

fn pipe_mem_info(p: &Arc<Handle<Pipe>>, param: cl_mem_info) -> Info {
    match param {
        CL_MEM_TYPE => info(CL_MEM_OBJECT_PIPE),
        CL_MEM_FLAGS => info(p.flags),
        CL_MEM_SIZE => info(p.buffer.size),
        CL_MEM_HOST_PTR => info(std::ptr::null_mut::<c_void>()),
        CL_MEM_MAP_COUNT => info(0 as cl_uint),
        CL_MEM_REFERENCE_COUNT => info(p.api_ref_count()),
        CL_MEM_CONTEXT => info(Handle::as_raw::<c_void>(p.context())),
        CL_MEM_ASSOCIATED_MEMOBJECT => info(std::ptr::null_mut::<c_void>()),
        CL_MEM_OFFSET => info(0usize),
        CL_MEM_USES_SVM_POINTER => info(CL_FALSE),
        CL_MEM_PROPERTIES => info(Vec::<cl_mem_properties>::new()),
        _ => invalid_param(param),
    }
}

fn image_mem_info(i: &Arc<Handle<Image>>, param: cl_mem_info) -> Info {
    match param {
        CL_MEM_TYPE => info(i.desc.image_type),
        CL_MEM_FLAGS => info(i.flags),
        CL_MEM_SIZE => info(i.size()),
        CL_MEM_HOST_PTR => info(i.host_ptr.map_or(std::ptr::null_mut(), |p| p.get())),
        CL_MEM_MAP_COUNT => info(i.maps().len() as cl_uint),
        CL_MEM_REFERENCE_COUNT => info(i.api_ref_count()),
        CL_MEM_CONTEXT => info(Handle::as_raw::<c_void>(&i.context)),
        CL_MEM_ASSOCIATED_MEMOBJECT => info(match (&i.source, i.buffer()) {
            (Some(source), _) => Handle::as_raw::<c_void>(source),
            // An imported image's buffer is vkcl's own.
            (None, Some(b)) if !b.is_imported() => Handle::as_raw::<c_void>(b),
            _ => std::ptr::null_mut(),
        }),
        CL_MEM_OFFSET => info(0usize),
        CL_MEM_USES_SVM_POINTER => info(i.buffer().is_some_and(|b| b.uses_svm())),
        CL_MEM_PROPERTIES => info(i.properties.clone()),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetMemObjectInfo(
    memobj: cl_mem,
    param_name: cl_mem_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetMemObjectInfo", || {
        let answer = match Mem::from_raw(memobj)? {
            Mem::Buffer(b) => mem_info(&b, param_name),
            Mem::Image(i) => image_mem_info(&i, param_name),
            Mem::Pipe(p) => pipe_mem_info(&p, param_name),
        };
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe { write_info(answer, param_value_size, param_value, param_value_size_ret) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetMemObjectDestructorCallback(
    memobj: cl_mem,
    pfn_notify: Option<MemDestructor>,
    user_data: *mut c_void,
) -> cl_int {
    api_call("clSetMemObjectDestructorCallback", || {
        let m = Mem::from_raw(memobj)?;
        let func = pfn_notify.ok_or(ClError(CL_INVALID_VALUE))?;
        let cb = Callback { func, user_data };
        match m {
            Mem::Buffer(b) => b.add_destructor(cb),
            Mem::Image(i) => i.add_destructor(cb),
            Mem::Pipe(p) => p.add_destructor(cb),
        }
        Ok(())
    })
}

/// The common part of every buffer command: the queue, the buffer (same
/// context, on the queue's device, sub-buffer aligned for it) and the wait
/// list.
pub(crate) struct Target {
    pub queue: Arc<Handle<Queue>>,
    pub waits: Vec<Arc<Handle<crate::core::event::Event>>>,
}

/// A checked command's device work, made afresh each time the command
/// runs: once for an enqueue, at every enqueue of the command buffer a
/// command was recorded into. The values it captures (buffers, sizes,
/// patterns) are those of the call that checked them.
pub(crate) use crate::core::command_buffer::Plan;

pub(crate) fn target(
    command_queue: cl_command_queue,
    buffers: &[cl_mem],
    num_events: cl_uint,
    events: *const cl_event,
) -> ClResult<(Target, Vec<Arc<Handle<Buffer>>>)> {
    let queue = Handle::<Queue>::from_raw(command_queue)?;
    let mut list = Vec::with_capacity(buffers.len());
    for &m in buffers {
        let b = Handle::<Buffer>::from_raw(m)?;
        if !Arc::ptr_eq(&b.context, &queue.context) {
            return err(CL_INVALID_CONTEXT);
        }
        b.storage_for(&queue)?;
        if b.origin() % (queue.device.mem_base_addr_align_bits() as usize / 8) != 0 {
            return err(CL_MISALIGNED_SUB_BUFFER_OFFSET);
        }
        list.push(b);
    }
    // SAFETY: the application passes `num_events` handles.
    let waits = unsafe { wait_list(&queue.context, num_events, events)? };
    Ok((Target { queue, waits }, list))
}

impl Target {
    /// Enqueues, hands out the event, and waits when blocking.
    pub fn run(
        self,
        command_type: cl_command_type,
        blocking: bool,
        event: *mut cl_event,
        work: Work,
    ) -> ClResult<()> {
        self.run_parts(command_type, blocking, event, (vec![work], 1))
    }

    /// [`Target::run`] for a command done in parts, of which `ring` at a
    /// time reach the device (see `Queue::enqueue_parts`).
    pub fn run_parts(
        self,
        command_type: cl_command_type,
        blocking: bool,
        event: *mut cl_event,
        (parts, ring): (Vec<Work>, usize),
    ) -> ClResult<()> {
        if blocking {
            check_wait_list_ok(&self.waits)?;
        }
        let ev = self
            .queue
            .enqueue_parts(command_type, self.waits, parts, ring)?;
        if blocking {
            block_on(&self.queue, &ev)?;
        }
        // SAFETY: null or writable, per the specification.
        unsafe { out_event(event, ev) };
        Ok(())
    }
}

fn in_bounds(b: &Buffer, offset: usize, size: usize) -> ClResult<()> {
    match offset.checked_add(size) {
        Some(end) if end <= b.size => Ok(()),
        _ => err(CL_INVALID_VALUE),
    }
}

fn host_can_read(b: &Buffer) -> ClResult<()> {
    if b.flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS) != 0 {
        return err(CL_INVALID_OPERATION);
    }
    Ok(())
}

fn host_can_write(b: &Buffer) -> ClResult<()> {
    if b.flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS) != 0 {
        return err(CL_INVALID_OPERATION);
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueReadBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_read: cl_bool,
    offset: usize,
    size: usize,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueReadBuffer", || {
        let (t, b) = target(
            command_queue,
            &[buffer],
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let b = &b[0];
        in_bounds(b, offset, size)?;
        if ptr.is_null() {
            return err(CL_INVALID_VALUE);
        }
        host_can_read(b)?;
        // A zero-sized read is allowed and moves nothing.
        let parts = if size == 0 {
            (vec![Work::none()], 1)
        } else {
            work::read_parts(&t.queue, b, offset, size, HostPtr(ptr as usize))?
        };
        t.run_parts(CL_COMMAND_READ_BUFFER, blocking_read != 0, event, parts)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueWriteBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_write: cl_bool,
    offset: usize,
    size: usize,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueWriteBuffer", || {
        let (t, b) = target(
            command_queue,
            &[buffer],
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let b = &b[0];
        in_bounds(b, offset, size)?;
        if ptr.is_null() {
            return err(CL_INVALID_VALUE);
        }
        host_can_write(b)?;
        let w = if size == 0 {
            Work::none()
        } else {
            // SAFETY: the application passes `size` readable bytes.
            let data = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), size) };
            work::write(&t.queue, b, offset, data)?
        };
        t.run(CL_COMMAND_WRITE_BUFFER, blocking_write != 0, event, w)
    })
}

/// Two byte ranges of buffers that share storage overlap.
fn ranges_overlap(a: &Buffer, a_off: usize, b: &Buffer, b_off: usize, size: usize) -> bool {
    Arc::ptr_eq(&a.storage, &b.storage) && {
        let (x, y) = (a.offset + a_off, b.offset + b_off);
        x < y + size && y < x + size
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyBuffer(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueCopyBuffer", || {
        let (t, plan) = copy_buffer_plan(
            command_queue,
            src_buffer,
            dst_buffer,
            src_offset,
            dst_offset,
            size,
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let w = plan(&t.queue)?;
        t.run(CL_COMMAND_COPY_BUFFER, false, event, w)
    })
}

/// clEnqueueCopyBuffer's checks and work (also clCommandCopyBufferKHR's).
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_buffer_plan(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let (t, b) = target(
        command_queue,
        &[src_buffer, dst_buffer],
        num_events_in_wait_list,
        event_wait_list,
    )?;
    let (src, dst) = (b[0].clone(), b[1].clone());
    in_bounds(&src, src_offset, size)?;
    in_bounds(&dst, dst_offset, size)?;
    if ranges_overlap(&src, src_offset, &dst, dst_offset, size) {
        return err(CL_MEM_COPY_OVERLAP);
    }
    // A zero-sized copy is allowed and moves nothing.
    let region = [(src_offset, dst_offset, size)];
    Ok((t, Arc::new(move |q| work::copy(q, &src, &dst, &region))))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueFillBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    pattern: *const c_void,
    pattern_size: usize,
    offset: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueFillBuffer", || {
        // SAFETY: the application passes `pattern_size` readable bytes.
        let (t, plan) = unsafe {
            fill_buffer_plan(
                command_queue,
                buffer,
                pattern,
                pattern_size,
                offset,
                size,
                num_events_in_wait_list,
                event_wait_list,
            )?
        };
        let w = plan(&t.queue)?;
        t.run(CL_COMMAND_FILL_BUFFER, false, event, w)
    })
}

/// clEnqueueFillBuffer's checks and work (also clCommandFillBufferKHR's).
///
/// # Safety
/// `pattern` is null or points to `pattern_size` bytes.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn fill_buffer_plan(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    pattern: *const c_void,
    pattern_size: usize,
    offset: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let (t, b) = target(
        command_queue,
        &[buffer],
        num_events_in_wait_list,
        event_wait_list,
    )?;
    let b = b[0].clone();
    if pattern.is_null()
        || !pattern_size.is_power_of_two()
        || pattern_size > 128
        || offset % pattern_size != 0
        || size % pattern_size != 0
    {
        return err(CL_INVALID_VALUE);
    }
    in_bounds(&b, offset, size)?;
    // SAFETY: the caller promises `pattern_size` readable bytes.
    let pat = unsafe { std::slice::from_raw_parts(pattern.cast::<u8>(), pattern_size) }.to_vec();
    let plan: Plan = Arc::new(move |q| {
        if size == 0 {
            Ok(Work::none())
        } else {
            work::fill(q, &b, &pat, offset, size)
        }
    });
    Ok((t, plan))
}

/// Reads a 3-component size_t array argument.
///
/// # Safety
/// `p` is null or points to three values.
unsafe fn triple(p: *const usize) -> ClResult<[usize; 3]> {
    if p.is_null() {
        return err(CL_INVALID_VALUE);
    }
    // SAFETY: non-null, three values per the specification.
    Ok(unsafe { [*p, *p.add(1), *p.add(2)] })
}

/// Resolves the pitches of one side of a rectangular transfer, as the
/// specification defines the defaults and limits.
fn rect(
    origin: [usize; 3],
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
) -> ClResult<Rect> {
    let row_pitch = if row_pitch == 0 { region[0] } else { row_pitch };
    if row_pitch < region[0] {
        return err(CL_INVALID_VALUE);
    }
    let plane = region[1]
        .checked_mul(row_pitch)
        .ok_or(ClError(CL_INVALID_VALUE))?;
    let slice_pitch = if slice_pitch == 0 { plane } else { slice_pitch };
    if slice_pitch < plane || slice_pitch % row_pitch != 0 {
        return err(CL_INVALID_VALUE);
    }
    let r = Rect {
        origin,
        row_pitch,
        slice_pitch,
    };
    // Every offset inside the rectangle must be representable.
    r.checked_end(region).ok_or(ClError(CL_INVALID_VALUE))?;
    Ok(r)
}

fn check_region(region: [usize; 3]) -> ClResult<()> {
    if region.contains(&0) {
        return err(CL_INVALID_VALUE);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn rect_transfer(
    name: cl_command_type,
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking: cl_bool,
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> ClResult<()> {
    let (t, b) = target(
        command_queue,
        &[buffer],
        num_events_in_wait_list,
        event_wait_list,
    )?;
    let b = &b[0];
    // SAFETY: three values each, per the specification.
    let (bo, ho, region) = unsafe {
        (
            triple(buffer_origin)?,
            triple(host_origin)?,
            triple(region)?,
        )
    };
    check_region(region)?;
    if ptr.is_null() {
        return err(CL_INVALID_VALUE);
    }
    let br = rect(bo, region, buffer_row_pitch, buffer_slice_pitch)?;
    let hr = rect(ho, region, host_row_pitch, host_slice_pitch)?;
    if br.end(region) > b.size {
        return err(CL_INVALID_VALUE);
    }
    let host = HostPtr(ptr as usize);
    let w = if name == CL_COMMAND_READ_BUFFER_RECT {
        host_can_read(b)?;
        work::read_rect(&t.queue, b, br, hr, region, host)?
    } else {
        host_can_write(b)?;
        work::write_rect(&t.queue, b, br, hr, region, host)?
    };
    t.run(name, blocking != 0, event, w)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueReadBufferRect(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_read: cl_bool,
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueReadBufferRect", || {
        // SAFETY: arguments as the specification defines them.
        unsafe {
            rect_transfer(
                CL_COMMAND_READ_BUFFER_RECT,
                command_queue,
                buffer,
                blocking_read,
                buffer_origin,
                host_origin,
                region,
                buffer_row_pitch,
                buffer_slice_pitch,
                host_row_pitch,
                host_slice_pitch,
                ptr,
                num_events_in_wait_list,
                event_wait_list,
                event,
            )
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueWriteBufferRect(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_write: cl_bool,
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    ptr: *const c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueWriteBufferRect", || {
        // SAFETY: arguments as the specification defines them.
        unsafe {
            rect_transfer(
                CL_COMMAND_WRITE_BUFFER_RECT,
                command_queue,
                buffer,
                blocking_write,
                buffer_origin,
                host_origin,
                region,
                buffer_row_pitch,
                buffer_slice_pitch,
                host_row_pitch,
                host_slice_pitch,
                ptr as *mut c_void,
                num_events_in_wait_list,
                event_wait_list,
                event,
            )
        }
    })
}

/// Whether two boxes of a rectangle copy within one buffer overlap as
/// regions: they share a point in (x in bytes, y in rows, z in slices).
/// This is the first test of the specification's overlap check. Its other
/// tests, for rows that run past the row pitch or slices past the slice
/// pitch into the other box, depend on pitches the OpenCL-CTS does not
/// apply the same way (it checks with the buffer's own dimensions and
/// copies with pitches of 0), so they are left out: where bytes of boxes
/// that do not overlap meet, the copy goes through a temporary buffer and
/// reads every source byte before it writes.
fn rect_boxes_overlap(a: [usize; 3], b: [usize; 3], region: [usize; 3]) -> bool {
    (0..3).all(|i| a[i] < b[i] + region[i] && b[i] < a[i] + region[i])
}

/// Whether two rectangles with the same pitches in one storage overlap:
/// some row of one shares a byte with some row of the other. Rows are
/// `region[0]` bytes at `base + y * row_pitch + z * slice_pitch`, so two
/// rows overlap when their starts differ by less than a row; for each
/// slice difference this is a range of row differences to test.
fn boxes_overlap(a: &Rect, a_base: usize, b: &Rect, b_base: usize, region: [usize; 3]) -> bool {
    let w = region[0] as i128;
    let (rp, sp) = (a.row_pitch as i128, a.slice_pitch as i128);
    let start = (a_base + a.offset(0, 0)) as i128 - (b_base + b.offset(0, 0)) as i128;
    let (h, d) = (region[1] as i128, region[2] as i128);
    for dz in -(d - 1)..=(d - 1) {
        // Need -w < start + dz*sp + dy*rp < w for an integer dy in (-h, h).
        let base = start + dz * sp;
        let lo = (-w - base).div_euclid(rp) + 1; // smallest dy with base + dy*rp > -w
        let hi = (w - base - 1).div_euclid(rp); // largest dy with base + dy*rp < w
        let (lo, hi) = (lo.max(-(h - 1)), hi.min(h - 1));
        if lo <= hi {
            return true;
        }
    }
    false
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueCopyBufferRect(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const usize,
    dst_origin: *const usize,
    region: *const usize,
    src_row_pitch: usize,
    src_slice_pitch: usize,
    dst_row_pitch: usize,
    dst_slice_pitch: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueCopyBufferRect", || {
        // SAFETY: three values in each array, per the specification.
        let (t, plan) = unsafe {
            copy_buffer_rect_plan(
                command_queue,
                src_buffer,
                dst_buffer,
                src_origin,
                dst_origin,
                region,
                [
                    src_row_pitch,
                    src_slice_pitch,
                    dst_row_pitch,
                    dst_slice_pitch,
                ],
                num_events_in_wait_list,
                event_wait_list,
            )?
        };
        let w = plan(&t.queue)?;
        t.run(CL_COMMAND_COPY_BUFFER_RECT, false, event, w)
    })
}

/// clEnqueueCopyBufferRect's checks and work (also
/// clCommandCopyBufferRectKHR's); `pitches` are the source row and slice
/// pitches, then the destination's.
///
/// # Safety
/// The origins and region are null or point to three values each.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn copy_buffer_rect_plan(
    command_queue: cl_command_queue,
    src_buffer: cl_mem,
    dst_buffer: cl_mem,
    src_origin: *const usize,
    dst_origin: *const usize,
    region: *const usize,
    pitches: [usize; 4],
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
) -> ClResult<(Target, Plan)> {
    let [
        src_row_pitch,
        src_slice_pitch,
        dst_row_pitch,
        dst_slice_pitch,
    ] = pitches;
    let (t, b) = target(
        command_queue,
        &[src_buffer, dst_buffer],
        num_events_in_wait_list,
        event_wait_list,
    )?;
    let (src, dst) = (&b[0], &b[1]);
    // SAFETY: three values each, per the specification.
    let (so, dof, region) = unsafe { (triple(src_origin)?, triple(dst_origin)?, triple(region)?) };
    check_region(region)?;
    let sr = rect(so, region, src_row_pitch, src_slice_pitch)?;
    let dr = rect(dof, region, dst_row_pitch, dst_slice_pitch)?;
    if sr.end(region) > src.size || dr.end(region) > dst.size {
        return err(CL_INVALID_VALUE);
    }
    let mut bytes_meet = false;
    if Arc::ptr_eq(&src.storage, &dst.storage) {
        if Arc::ptr_eq(src, dst)
            && (sr.row_pitch != dr.row_pitch || sr.slice_pitch != dr.slice_pitch)
        {
            return err(CL_INVALID_VALUE);
        }
        let same_pitch = sr.row_pitch == dr.row_pitch && sr.slice_pitch == dr.slice_pitch;
        let (a0, a1) = (src.offset + sr.offset(0, 0), src.offset + sr.end(region));
        let (b0, b1) = (dst.offset + dr.offset(0, 0), dst.offset + dr.end(region));
        let spans_meet = a0 < b1 && b0 < a1;
        bytes_meet =
            spans_meet && (!same_pitch || boxes_overlap(&sr, src.offset, &dr, dst.offset, region));
        // Within one buffer, boxes that share a point overlap; rows
        // that only interleave do not.
        if Arc::ptr_eq(src, dst) && rect_boxes_overlap(so, dof, region) {
            return err(CL_MEM_COPY_OVERLAP);
        }
        if bytes_meet && !Arc::ptr_eq(src, dst) {
            return err(CL_MEM_COPY_OVERLAP);
        }
    }
    let rows = work::rect_rows(&sr, &dr, region);
    let (src, dst) = (src.clone(), dst.clone());
    let plan: Plan = Arc::new(move |q| {
        if bytes_meet {
            work::copy_through_temporary(q, &src, &dst, &rows)
        } else {
            work::copy(q, &src, &dst, &rows)
        }
    });
    Ok((t, plan))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMapBuffer(
    command_queue: cl_command_queue,
    buffer: cl_mem,
    blocking_map: cl_bool,
    map_flags: cl_map_flags,
    offset: usize,
    size: usize,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    let map = || {
        let (t, b) = target(
            command_queue,
            &[buffer],
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let b = &b[0];
        in_bounds(b, offset, size)?;
        let known = CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION;
        if size == 0
            || map_flags & !known != 0
            || (map_flags & CL_MAP_WRITE_INVALIDATE_REGION != 0
                && map_flags & (CL_MAP_READ | CL_MAP_WRITE) != 0)
        {
            return err(CL_INVALID_VALUE);
        }
        if map_flags & CL_MAP_READ != 0 {
            host_can_read(b)?;
        }
        if map_flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0 {
            host_can_write(b)?;
        }
        if blocking_map != 0 {
            check_wait_list_ok(&t.waits)?;
        }
        let (ptr, w) = work::map(&t.queue, b, map_flags, offset, size)?;
        let result = t.run(CL_COMMAND_MAP_BUFFER, blocking_map != 0, event, w);
        if let Err(e) = result {
            // Forget the mapping the failed command registered.
            b.maps().retain(|m| m.ptr != ptr);
            return Err(e);
        }
        Ok(ptr.get().cast::<c_void>())
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clEnqueueMapBuffer", errcode_ret, map) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueUnmapMemObject(
    command_queue: cl_command_queue,
    memobj: cl_mem,
    mapped_ptr: *mut c_void,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueUnmapMemObject", || {
        let ptr = HostPtr(mapped_ptr as usize);
        if let Mem::Image(_) = Mem::from_raw(memobj)? {
            let (t, i) = image_target(
                command_queue,
                &[memobj],
                num_events_in_wait_list,
                event_wait_list,
            )?;
            let w = image_work::unmap(&t.queue, &i[0], ptr)?;
            return t.run(CL_COMMAND_UNMAP_MEM_OBJECT, false, event, w);
        }
        let (t, b) = target(
            command_queue,
            &[memobj],
            num_events_in_wait_list,
            event_wait_list,
        )?;
        let w = work::unmap(&t.queue, &b[0], ptr)?;
        t.run(CL_COMMAND_UNMAP_MEM_OBJECT, false, event, w)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clEnqueueMigrateMemObjects(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    flags: cl_mem_migration_flags,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueMigrateMemObjects", || {
        if num_mem_objects == 0 || mem_objects.is_null() {
            return err(CL_INVALID_VALUE);
        }
        if flags & !(CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) != 0 {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes `num_mem_objects` handles.
        let mems = unsafe { slice_in(mem_objects, num_mem_objects as usize)? };
        let queue = Handle::<Queue>::from_raw(command_queue)?;
        let mut keep: Vec<Box<dyn std::any::Any + Send + Sync>> = Vec::new();
        let mut uses = Vec::new();
        // To the host: every object's copies stay where they are (host
        // transfers reach any of them). To the queue's device: its copy is
        // made current, or, with undefined contents, simply declared so.
        let access = match flags {
            f if f & CL_MIGRATE_MEM_OBJECT_HOST != 0 => None,
            f if f & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED != 0 => Some(Access::Undefined),
            _ => Some(Access::Read),
        };
        for &m in mems {
            let m = Mem::from_raw(m)?;
            if !Arc::ptr_eq(m.context(), &queue.context) {
                return err(CL_INVALID_CONTEXT);
            }
            match m {
                Mem::Buffer(b) => {
                    if let Some(a) = access {
                        b.storage_for(&queue)?;
                        uses.extend(crate::core::memory::used(&b, a));
                    }
                    keep.push(Box::new(b))
                }
                Mem::Image(i) => {
                    if let Some(a) = access {
                        i.backing_on(&queue)?;
                        uses.extend(crate::core::image::backing_used(&i, a));
                    }
                    keep.push(Box::new(i))
                }
                // A pipe's header is its state: its contents always move.
                Mem::Pipe(p) => {
                    if access.is_some() {
                        p.buffer.storage_for(&queue)?;
                        uses.extend(crate::core::memory::used(&p.buffer, Access::Read));
                    }
                    keep.push(Box::new(p))
                }
            }
        }
        let (t, _) = target(command_queue, &[], num_events_in_wait_list, event_wait_list)?;
        let mut w = Work::none();
        w.keep = keep;
        w.uses = uses;
        t.run(CL_COMMAND_MIGRATE_MEM_OBJECTS, false, event, w)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreatePipe(
    context: cl_context,
    flags: cl_mem_flags,
    pipe_packet_size: cl_uint,
    pipe_max_packets: cl_uint,
    properties: *const cl_pipe_properties,
    errcode_ret: *mut cl_int,
) -> cl_mem {
    let create = || {
        let c = Handle::<Context>::from_raw(context)?;
        // Only these flags, and no properties: none are defined.
        if flags & !(CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS) != 0 {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: null or a zero-terminated list, per the specification.
        if !properties.is_null() && unsafe { *properties } != 0 {
            return err(CL_INVALID_VALUE);
        }
        let given = if properties.is_null() {
            Vec::new()
        } else {
            vec![0]
        };
        if !c.devices.iter().any(|d| d.pipe_support()) {
            return err(CL_INVALID_OPERATION);
        }
        if pipe_packet_size == 0
            || pipe_max_packets == 0
            || pipe_packet_size > crate::core::device::PIPE_MAX_PACKET_SIZE
        {
            return err(CL_INVALID_PIPE_SIZE);
        }
        let bytes = u64::from(pipe_packet_size) * u64::from(pipe_max_packets);
        if c.devices.iter().any(|d| bytes > d.max_mem_alloc_size()) {
            return err(CL_MEM_OBJECT_ALLOCATION_FAILURE);
        }
        let flags = if flags == 0 {
            CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS
        } else {
            flags
        };
        Ok(Handle::into_api(Pipe::new(
            c,
            flags,
            pipe_packet_size,
            pipe_max_packets,
            given,
        )?))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreatePipe", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetPipeInfo(
    pipe: cl_mem,
    param_name: cl_pipe_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetPipeInfo", || {
        let p = Handle::<Pipe>::from_raw(pipe)?;
        let answer = match param_name {
            CL_PIPE_PACKET_SIZE => info(p.packet_size),
            CL_PIPE_MAX_PACKETS => info(p.max_packets),
            CL_PIPE_PROPERTIES => info(p.properties.clone()),
            _ => invalid_param(param_name),
        };
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe { write_info(answer, param_value_size, param_value, param_value_size_ret) }
    })
}

/// clEnqueueAcquireExternalMemObjectsKHR and
/// clEnqueueReleaseExternalMemObjectsKHR, after the queue: checks the
/// memory objects (imported buffers of the queue's context) and the wait
/// list, and enqueues the ownership transfer.
///
/// # Safety
/// The pointers are null or valid for the counts given.
unsafe fn external_mem_objects(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
    acquire: bool,
) -> ClResult<()> {
    let q = Handle::<Queue>::from_raw(command_queue)?;
    if num_mem_objects == 0 || mem_objects.is_null() {
        return err(CL_INVALID_VALUE);
    }
    // SAFETY: non-null, with the count the application gives.
    let raw = unsafe { slice_in(mem_objects, num_mem_objects as usize)? };
    // Imported images are linear Vulkan images of their own, or their
    // imported buffers.
    let mut buffers = Vec::new();
    let mut images = Vec::new();
    for &m in raw {
        let (context, imported) = match Mem::from_raw(m)? {
            Mem::Buffer(b) => {
                let seen = (b.context.clone(), b.is_imported());
                buffers.push(b);
                seen
            }
            Mem::Image(i) => match (i.buffer(), &i.backing) {
                (Some(b), _) => {
                    let seen = (b.context.clone(), b.is_imported());
                    buffers.push(b.clone());
                    seen
                }
                (None, crate::core::image::Backing::Image(storage)) => {
                    images.push(storage.clone());
                    (i.context.clone(), i.is_imported())
                }
                (None, _) => return err(CL_INVALID_MEM_OBJECT),
            },
            Mem::Pipe(_) => return err(CL_INVALID_MEM_OBJECT),
        };
        if !Arc::ptr_eq(&context, &q.context) {
            return err(CL_INVALID_CONTEXT);
        }
        if !imported {
            return err(CL_INVALID_MEM_OBJECT);
        }
    }
    // SAFETY: the application passes `num_events_in_wait_list` handles.
    let waits = unsafe { wait_list(&q.context, num_events_in_wait_list, event_wait_list)? };
    let command = if acquire {
        CL_COMMAND_ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR
    } else {
        CL_COMMAND_RELEASE_EXTERNAL_MEM_OBJECTS_KHR
    };
    let work =
        crate::core::memory::external_ownership(&buffers, images, q.vk.queue_family, acquire);
    let ev = q.enqueue(command, waits, Ordering::Normal, work)?;
    // SAFETY: null or writable, per the specification.
    unsafe { out_event(event, ev) };
    Ok(())
}

#[allow(non_snake_case)]
pub(crate) unsafe extern "C" fn clEnqueueAcquireExternalMemObjectsKHR(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueAcquireExternalMemObjectsKHR", || {
        // SAFETY: the application passes lists of the sizes it states.
        unsafe {
            external_mem_objects(
                command_queue,
                num_mem_objects,
                mem_objects,
                num_events_in_wait_list,
                event_wait_list,
                event,
                true,
            )
        }
    })
}

#[allow(non_snake_case)]
pub(crate) unsafe extern "C" fn clEnqueueReleaseExternalMemObjectsKHR(
    command_queue: cl_command_queue,
    num_mem_objects: cl_uint,
    mem_objects: *const cl_mem,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    api_call("clEnqueueReleaseExternalMemObjectsKHR", || {
        // SAFETY: the application passes lists of the sizes it states.
        unsafe {
            external_mem_objects(
                command_queue,
                num_mem_objects,
                mem_objects,
                num_events_in_wait_list,
                event_wait_list,
                event,
                false,
            )
        }
    })
}
