//! Buffers: a `VkBuffer` with a device address in device memory (host
//! visible where the device's memory is), sub-buffers as offsets into their
//! parent, and the transfers between them and the host.
//!
//! Transfers to and from host memory go through pooled staging buffers: a
//! write copies the application's data into staging when it is enqueued and
//! the device copies it in order; a read has the device copy into staging
//! and the completion worker copies it out to the application.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use ash::vk;
use opencl_sys::*;

use crate::core::context::Context;
use crate::core::error::{ClError, ClResult, err};
use crate::core::object::{Callback, ClObject, Handle};
use crate::core::queue::{Queue, RecordFn, Recorder, Work};
use crate::core::ranges::Ranges;
use crate::vk::device::LogicalDevice;
use crate::vk::image::DeviceImage;
use crate::vk::memory::{BufferUse, DeviceBuffer, HostBuffer};

pub type MemDestructor = unsafe extern "C" fn(cl_mem, *mut c_void);

/// The destructor callbacks of a memory object (buffer or image).
#[derive(Default)]
pub struct MemDestructors(Mutex<Vec<Callback<MemDestructor>>>);

impl MemDestructors {
    pub fn add(&self, cb: Callback<MemDestructor>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(cb);
    }

    /// Calls each once, most recently registered first, as the
    /// specification requires.
    pub fn run(&self, handle: *mut c_void) {
        let callbacks = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        for cb in callbacks.into_iter().rev() {
            // SAFETY: the application registered this callback for this
            // object's destruction; the handle is only passed back.
            unsafe { (cb.func)(handle as cl_mem, cb.user_data) };
        }
    }
}

/// An address in application memory, carried across threads. The
/// application guarantees it stays valid until the command using it
/// completes, as the specification requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPtr(pub usize);

impl HostPtr {
    pub fn get(self) -> *mut u8 {
        self.0 as *mut u8
    }
}

/// Transfers up to this size copy the application's data when they are
/// enqueued; larger ones use it in place while the command runs.
const SMALL_TRANSFER: usize = 1 << 20;

/// The largest piece of a read in parts (see [`work::read_parts`]).
const READ_PART: usize = 8 << 20;

/// Writes larger than this import the application's memory where the
/// device can (VK_EXT_external_memory_host); smaller ones are faster
/// through staging memory, whose copy costs less than pinning the pages
/// (on an H100, 16 MiB: 16.5 GB/s through staging, 10.5 imported).
const IMPORTED_WRITE: usize = 32 << 20;

/// Copies `len` bytes from `src` to `dst` (which do not overlap), on
/// several threads when there are many: one thread copies only about as
/// fast as the device fills staging memory.
///
/// # Safety
/// `src` is readable and `dst` writable for `len` bytes.
unsafe fn copy_in_parallel(src: *const u8, dst: *mut u8, len: usize) {
    const PER_THREAD: usize = 2 << 20;
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let most =
        *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)));
    let threads = (len / PER_THREAD).clamp(1, most);
    if threads == 1 {
        // SAFETY: as the caller promises.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        return;
    }
    let step = len.div_ceil(threads);
    let (src, dst) = (HostPtr(src as usize), HostPtr(dst as usize));
    std::thread::scope(|s| {
        for t in 1..threads {
            let at = t * step;
            let n = step.min(len - at);
            // SAFETY: a disjoint part of both ranges.
            s.spawn(move || unsafe {
                std::ptr::copy_nonoverlapping(src.get().add(at), dst.get().add(at), n)
            });
        }
        // SAFETY: the first part, on this thread.
        unsafe { std::ptr::copy_nonoverlapping(src.get(), dst.get(), step) };
    });
}

/// Argument blocks of kernel launches, as pieces of upload staging handed
/// out one after another from a shared staging buffer: a launch whose
/// arguments do not fit the push constants (OpenMM's nonbonded kernel,
/// with its many vectors by value, on lavapipe's 128 bytes) then writes
/// a few hundred bytes instead of taking a staging buffer of its own,
/// which on a queue of thousands of launches made the pool hold
/// thousands of buffers. Each launch holds the buffer its piece is in, which goes back
/// to the pool once every such launch is done.
#[derive(Default)]
pub struct ArgBlocks {
    current: Mutex<Option<(Arc<Staging>, usize)>>,
}

/// Pieces start at multiples of this: the largest alignment of an OpenCL
/// argument (a `double16` or `long16`).
const ARG_BLOCK_ALIGN: usize = 128;
/// The staging buffer pieces are cut from; larger blocks take a staging
/// buffer of their own.
const ARG_BLOCK_CHUNK: usize = 64 * 1024;

impl ArgBlocks {
    /// `bytes` in upload staging of `device`: the buffer that holds them,
    /// to keep until the device has read them, and their device address.
    pub fn put(&self, device: &Arc<LogicalDevice>, bytes: &[u8]) -> ClResult<(Arc<Staging>, u64)> {
        let size = bytes.len().max(1).next_multiple_of(ARG_BLOCK_ALIGN);
        if size > ARG_BLOCK_CHUNK / 4 {
            let own = Staging::new(device, bytes.len(), BufferUse::Upload)?;
            own.buffer().write(0, bytes);
            let address = own.buffer().address;
            return Ok((own, address));
        }
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let (staging, at) = match current.take() {
            Some((s, at)) if Arc::ptr_eq(&s.device, device) && at + size <= ARG_BLOCK_CHUNK => {
                (s, at)
            }
            _ => (Staging::new(device, ARG_BLOCK_CHUNK, BufferUse::Upload)?, 0),
        };
        staging.buffer().write(at, bytes);
        let address = staging.buffer().address + at as u64;
        *current = Some((staging.clone(), at + size));
        Ok((staging, address))
    }
}

/// A staging buffer that goes back to the device's pool when dropped.
pub struct Staging {
    buffer: Option<DeviceBuffer>,
    device: Arc<LogicalDevice>,
}

impl Staging {
    pub fn new(
        device: &Arc<LogicalDevice>,
        size: usize,
        usage: BufferUse,
    ) -> ClResult<Arc<Staging>> {
        let buffer = device.staging.take(device, size.max(1) as u64, usage)?;
        Ok(Arc::new(Staging {
            buffer: Some(buffer),
            device: device.clone(),
        }))
    }

    pub fn buffer(&self) -> &DeviceBuffer {
        self.buffer.as_ref().expect("present until drop")
    }

    pub fn ptr(&self) -> *mut u8 {
        self.buffer()
            .mapped()
            .expect("staging memory is host-visible")
            .as_ptr()
    }

    /// This staging's first `size` bytes in upload staging of `device`:
    /// itself where it is that device's, else a copy (a mapping unmapped
    /// on a queue of another device than it was mapped on).
    pub fn on_device(
        self: &Arc<Self>,
        device: &Arc<LogicalDevice>,
        size: usize,
    ) -> ClResult<Arc<Staging>> {
        if Arc::ptr_eq(&self.device, device) {
            return Ok(self.clone());
        }
        let here = Staging::new(device, size, BufferUse::Upload)?;
        // SAFETY: both are mapped and hold at least `size` bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr(), here.ptr(), size) };
        Ok(here)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            self.device.staging.give_back(b);
        }
    }
}

/// One outstanding clEnqueueMap*.
pub struct Mapping {
    pub ptr: HostPtr,
    pub offset: usize,
    pub size: usize,
    pub flags: cl_map_flags,
    pub staging: Option<Arc<Staging>>,
}

impl Mapping {
    pub fn writes(&self) -> bool {
        self.flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0
    }
}

pub struct Buffer {
    pub context: Arc<Handle<Context>>,
    pub flags: cl_mem_flags,
    pub size: usize,
    /// The application's pointer for CL_MEM_USE_HOST_PTR (and what was
    /// passed with COPY_HOST_PTR, for CL_MEM_HOST_PTR queries: null then).
    pub host_ptr: Option<HostPtr>,
    pub parent: Option<Arc<Handle<Buffer>>>,
    /// Offset inside `storage` (non-zero for sub-buffers).
    pub offset: usize,
    /// Its memory on the context's first device.
    pub storage: Arc<DeviceBuffer>,
    /// In a context of several devices, its copies on each (shared with
    /// its sub-buffers): `None` in a context of one.
    copies: Option<Arc<Copies>>,
    pub properties: Vec<cl_mem_properties>,
    maps: Mutex<Vec<Mapping>>,
    destructors: MemDestructors,
}

/// Whether a memory object's properties name a descriptor of memory
/// another API exported (cl_khr_external_memory).
pub fn names_imported_memory(properties: &[cl_mem_properties]) -> bool {
    let fd = CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties;
    mem_property(properties, fd).is_some()
}

/// The value of `name` in a memory object's property list, which may hold
/// a device list (CL_MEM_DEVICE_HANDLE_LIST_KHR) ended by a zero.
pub fn mem_property(
    props: &[cl_mem_properties],
    name: cl_mem_properties,
) -> Option<cl_mem_properties> {
    let mut at = 0;
    while let Some(&n) = props.get(at) {
        if n == 0 {
            break;
        }
        if n == CL_MEM_DEVICE_HANDLE_LIST_KHR {
            at += 1;
            while props
                .get(at)
                .is_some_and(|&d| d != CL_MEM_DEVICE_HANDLE_LIST_END_KHR)
            {
                at += 1;
            }
            at += 1;
            continue;
        }
        if n == name {
            return props.get(at + 1).copied();
        }
        at += 2;
    }
    None
}

/// A pipe (clCreatePipe): a buffer holding the header and the ring of
/// packets that kernels read and write (see the rewriter's pipes pass for
/// the layout). The host cannot reach its contents.
pub struct Pipe {
    pub flags: cl_mem_flags,
    pub packet_size: u32,
    pub max_packets: u32,
    /// The properties as given (none yet exist).
    pub properties: Vec<cl_pipe_properties>,
    /// The pipe's memory, as a buffer of no application's.
    pub buffer: Arc<Handle<Buffer>>,
    destructors: MemDestructors,
}

impl ClObject for Pipe {
    const INVALID: i32 = CL_INVALID_MEM_OBJECT;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Pipes);

    fn on_destroy(&self, handle: *mut c_void) {
        self.destructors.run(handle);
    }
}

impl Pipe {
    /// clCreatePipe, after argument checks: an empty pipe.
    pub fn new(
        context: Arc<Handle<Context>>,
        flags: cl_mem_flags,
        packet_size: u32,
        max_packets: u32,
        properties: Vec<cl_pipe_properties>,
    ) -> ClResult<Arc<Handle<Pipe>>> {
        use crate::compiler::spirv::p1_kernel::pipes::PACKETS_AT;
        let size = u64::from(packet_size)
            .checked_mul(u64::from(max_packets))
            .and_then(|b| b.checked_add(PACKETS_AT))
            .and_then(|b| usize::try_from(b).ok())
            .ok_or(ClError(CL_INVALID_PIPE_SIZE))?;
        // Nothing reserved or read yet; the capacity and packet size.
        let mut header = vec![0u8; size];
        header[8..12].copy_from_slice(&max_packets.to_ne_bytes());
        header[12..16].copy_from_slice(&packet_size.to_ne_bytes());
        let buffer = Buffer::new(
            context,
            CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR,
            size,
            Some(HostPtr(header.as_ptr() as usize)),
            Vec::new(),
        )?;
        Ok(Handle::new(Pipe {
            flags,
            packet_size,
            max_packets,
            properties,
            buffer,
            destructors: MemDestructors::default(),
        }))
    }

    pub fn context(&self) -> &Arc<Handle<Context>> {
        &self.buffer.context
    }

    pub fn add_destructor(&self, cb: Callback<MemDestructor>) {
        self.destructors.add(cb);
    }
}

impl ClObject for Buffer {
    const INVALID: i32 = CL_INVALID_MEM_OBJECT;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Buffers);

    fn on_destroy(&self, handle: *mut c_void) {
        self.destructors.run(handle);
    }
}

impl Buffer {
    /// A new buffer; `init` is copied in when given (COPY/USE_HOST_PTR).
    pub fn new(
        context: Arc<Handle<Context>>,
        flags: cl_mem_flags,
        size: usize,
        host_ptr: Option<HostPtr>,
        properties: Vec<cl_mem_properties>,
    ) -> ClResult<Arc<Handle<Buffer>>> {
        // CL_MEM_USE_HOST_PTR inside an SVM allocation: the buffer is that
        // memory (CL_MEM_USES_SVM_POINTER).
        let svm = match host_ptr
            .filter(|_| flags & CL_MEM_USE_HOST_PTR != 0)
            .and_then(|h| Some((h, context.svm.find(h.0)?)))
        {
            // The buffer must fit in the allocation.
            Some((h, a)) if h.0 + size > a.ptr + a.size => return err(CL_INVALID_BUFFER_SIZE),
            Some((h, a)) => a
                .storage
                .mapped()
                .map(|base| (a.storage.clone(), h.0 - base.as_ptr() as usize)),
            None => None,
        };
        let (storage, offset) = match svm {
            Some(aliased) => aliased,
            None => (
                Arc::new(Self::new_storage(&context, flags, size, host_ptr)?),
                0,
            ),
        };
        let initialised =
            host_ptr.is_some() && flags & (CL_MEM_COPY_HOST_PTR | CL_MEM_USE_HOST_PTR) != 0;
        let copies = (context.devices.len() > 1)
            .then(|| Arc::new(Copies::new(storage.clone(), initialised)));
        Ok(Handle::new(Buffer {
            context,
            flags,
            size,
            host_ptr: host_ptr.filter(|_| flags & CL_MEM_USE_HOST_PTR != 0),
            parent: None,
            offset,
            storage,
            copies,
            properties,
            maps: Mutex::new(Vec::new()),
            destructors: MemDestructors::default(),
        }))
    }

    /// A buffer on memory another API exported as an opaque file
    /// descriptor (cl_khr_external_memory), in a context of one device.
    /// The buffer owns `fd` once this succeeds.
    pub fn import(
        context: Arc<Handle<Context>>,
        flags: cl_mem_flags,
        size: usize,
        fd: i32,
        properties: Vec<cl_mem_properties>,
    ) -> ClResult<Arc<Handle<Buffer>>> {
        let [device] = &context.devices[..] else {
            log::warn!(target: "vkcl::memory", "external memory is imported only into contexts of one device");
            return Err(ClError(CL_INVALID_OPERATION));
        };
        if !device.info.external.memory_import {
            return Err(ClError(CL_INVALID_PROPERTY));
        }
        // Vulkan takes a descriptor on trust: a closed one is refused here.
        if !crate::vk::external::is_open_fd(fd) {
            return Err(ClError(CL_INVALID_VALUE));
        }
        let storage = DeviceBuffer::import_fd(&device.logical()?, fd, size as u64).map_err(|e| {
            log::warn!(target: "vkcl::memory", "cannot import {size} bytes from file descriptor {fd}: {e}");
            if e == vk::Result::ERROR_OUT_OF_DEVICE_MEMORY {
                ClError(CL_MEM_OBJECT_ALLOCATION_FAILURE)
            } else {
                ClError(CL_INVALID_VALUE)
            }
        })?;
        Ok(Handle::new(Buffer {
            context,
            flags,
            size,
            host_ptr: None,
            parent: None,
            offset: 0,
            storage: Arc::new(storage),
            copies: None,
            properties,
            maps: Mutex::new(Vec::new()),
            destructors: MemDestructors::default(),
        }))
    }

    /// Whether the buffer, or the buffer it is part of, was imported
    /// (its properties name the descriptor).
    pub fn is_imported(&self) -> bool {
        let root = self.parent.as_ref().map_or(self, |p| &**p);
        names_imported_memory(&root.properties)
    }

    /// Device memory for a new buffer, with `host_ptr`'s data copied in
    /// for COPY/USE_HOST_PTR.
    fn new_storage(
        context: &Context,
        flags: cl_mem_flags,
        size: usize,
        host_ptr: Option<HostPtr>,
    ) -> ClResult<DeviceBuffer> {
        let device = context.devices[0].logical()?;
        let storage = device_memory(&device, size as u64)?;
        if let Some(src) =
            host_ptr.filter(|_| flags & (CL_MEM_COPY_HOST_PTR | CL_MEM_USE_HOST_PTR) != 0)
        {
            // SAFETY: the application passes `size` readable bytes.
            let data = unsafe { std::slice::from_raw_parts(src.get(), size) };
            upload(&device, &storage, 0, data)?;
        }
        Ok(storage)
    }

    /// Whether the application asked for the buffer's device address
    /// (CL_MEM_DEVICE_PRIVATE_ADDRESS_EXT), here or on its parent.
    pub fn has_device_address(&self) -> bool {
        let root = self.parent.as_ref().map_or(self, |p| &**p);
        mem_property(&root.properties, CL_MEM_DEVICE_PRIVATE_ADDRESS_EXT)
            == Some(CL_TRUE as cl_mem_properties)
    }

    /// Whether the buffer is memory of an SVM allocation.
    pub fn uses_svm(&self) -> bool {
        let root = self.parent.as_ref().map_or(self, |p| &**p);
        root.host_ptr
            .and_then(|h| self.context.svm.find(h.0))
            .is_some_and(|a| Arc::ptr_eq(&a.storage, &self.storage))
    }

    /// clCreateSubBuffer, after argument checks.
    pub fn sub_buffer(
        parent: &Arc<Handle<Buffer>>,
        flags: cl_mem_flags,
        origin: usize,
        size: usize,
    ) -> Arc<Handle<Buffer>> {
        Handle::new(Buffer {
            context: parent.context.clone(),
            flags,
            size,
            host_ptr: parent.host_ptr.map(|p| HostPtr(p.0 + origin)),
            parent: Some(parent.clone()),
            offset: parent.offset + origin,
            storage: parent.storage.clone(),
            copies: parent.copies.clone(),
            properties: Vec::new(),
            maps: Mutex::new(Vec::new()),
            destructors: MemDestructors::default(),
        })
    }

    /// The sub-buffer origin, or zero.
    pub fn origin(&self) -> usize {
        match &self.parent {
            Some(p) => self.offset - p.offset,
            None => 0,
        }
    }

    pub fn add_destructor(&self, cb: Callback<MemDestructor>) {
        self.destructors.add(cb);
    }

    pub fn maps(&self) -> MutexGuard<'_, Vec<Mapping>> {
        self.maps.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The buffer's memory as the host sees it, where the device's memory
    /// is the host's (so transfers need no staging). Never in a context of
    /// several devices: there transfers go through the queue's device's
    /// copy, made current first.
    pub fn host_memory(&self) -> Option<std::ptr::NonNull<u8>> {
        if self.copies.is_some() {
            return None;
        }
        self.storage
            .device()
            .unified_memory
            .then(|| self.storage.mapped())
            .flatten()
    }

    /// The buffer's memory (the whole of its root's, so add `offset`) on
    /// the device of `queue`, made there at its first use. Its contents
    /// are made current by the command that uses it (see [`Use`]).
    pub fn storage_for(&self, queue: &Queue) -> ClResult<Arc<DeviceBuffer>> {
        if Arc::ptr_eq(self.storage.device(), &queue.vk) {
            return Ok(self.storage.clone());
        }
        match &self.copies {
            Some(c) => {
                let mut list = c.lock();
                let i = list.on(&queue.vk)?;
                Ok(list.0[i].storage.clone())
            }
            // SVM memory lives on one device; contexts of one device have
            // no other.
            None => err(CL_INVALID_OPERATION),
        }
    }
}

/// The use of `buffer` by a command (see [`Work::uses`]); none in a
/// context of one device.
pub fn used(buffer: &Arc<Handle<Buffer>>, access: Access) -> Vec<Use> {
    match buffer.copies {
        Some(_) => vec![Use {
            object: Used::Buffer(buffer.clone()),
            access,
        }],
        None => Vec::new(),
    }
}

/// A memory object a command reads or writes (see [`Work::uses`]).
#[derive(Clone)]
pub struct Use {
    pub object: Used,
    pub access: Access,
}

/// The memory object of a [`Use`].
#[derive(Clone)]
pub enum Used {
    Buffer(Arc<Handle<Buffer>>),
    /// An image whose texels live in a Vulkan image of its own (the
    /// others are used through their buffer).
    Image(Arc<Handle<crate::core::image::Image>>),
}

/// What a command does with a memory object it uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    /// Reads it only.
    Read,
    /// May write it (all or part): once the command is recorded, only the
    /// copy on its device is current.
    Write,
    /// Leaves its contents undefined (CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED):
    /// nothing is copied, and only the copy on the command's device is
    /// current afterwards.
    Undefined,
}

/// The copies of a buffer on the devices of a context of several devices,
/// and which bytes of each are current.
///
/// OpenCL requires commands on different devices that use the same bytes
/// of a buffer to be ordered by events (or by waiting on the host) where
/// one of them writes them; commands on disjoint sub-buffers may run at
/// once. So when a command is recorded, every command it must follow has
/// completed on other devices, and the bytes it uses that its device's copy
/// does not hold current may be brought over from a copy that does. vkcl
/// copies them through the host, on the recording thread; a command that
/// may write them then leaves its device's copy the only one holding them
/// current. Bytes never defined are current nowhere and move nothing.
pub struct Copies(Mutex<CopyList>);

pub struct CopyList(Vec<DeviceCopy>);

struct DeviceCopy {
    storage: Arc<DeviceBuffer>,
    current: Ranges,
}

impl Copies {
    fn new(home: Arc<DeviceBuffer>, initialised: bool) -> Copies {
        let current = match initialised {
            true => Ranges::of(0, home.size),
            false => Ranges::default(),
        };
        Copies(Mutex::new(CopyList(vec![DeviceCopy {
            storage: home,
            current,
        }])))
    }

    fn lock(&self) -> MutexGuard<'_, CopyList> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl CopyList {
    /// The index of the copy on `device`, made now if there is none.
    fn on(&mut self, device: &Arc<LogicalDevice>) -> ClResult<usize> {
        if let Some(i) = self
            .0
            .iter()
            .position(|c| Arc::ptr_eq(c.storage.device(), device))
        {
            return Ok(i);
        }
        let storage = device_memory(device, self.0[0].storage.size)?;
        self.0.push(DeviceCopy {
            storage: Arc::new(storage),
            current: Ranges::default(),
        });
        Ok(self.0.len() - 1)
    }
}

/// Makes the memory objects a command uses current on `queue`'s device
/// before the command is recorded through `rec` (see [`Copies`] and
/// [`crate::core::image::make_current`]), and gives what the recorded
/// copies need kept until the command completes (empty: nothing was
/// recorded).
pub fn make_current(
    queue: &Queue,
    rec: &crate::core::queue::Recorder<'_>,
    uses: &[Use],
) -> ClResult<Vec<Box<dyn std::any::Any + Send + Sync>>> {
    let mut kept: Vec<Box<dyn std::any::Any + Send + Sync>> = Vec::new();
    for u in uses {
        match &u.object {
            Used::Buffer(b) => {
                let staging = buffer_current(b, u.access, &queue.vk, rec)?;
                kept.extend(staging.into_iter().map(|s| Box::new(s) as _));
            }
            Used::Image(i) => {
                if let Some(staging) = crate::core::image::make_current(i, u.access, queue, rec)? {
                    kept.push(Box::new(staging));
                }
            }
        }
    }
    Ok(kept)
}

/// [`make_current`] for one buffer: the staging buffers of the copies
/// recorded.
fn buffer_current(
    buffer: &Buffer,
    access: Access,
    device: &Arc<LogicalDevice>,
    rec: &crate::core::queue::Recorder<'_>,
) -> ClResult<Vec<Arc<Staging>>> {
    let Some(copies) = &buffer.copies else {
        return Ok(Vec::new());
    };
    let mut kept = Vec::new();
    let (start, end) = (buffer.offset as u64, (buffer.offset + buffer.size) as u64);
    let mut list = copies.lock();
    let here = list.on(device)?;
    for from in (0..list.0.len()).filter(|&i| i != here) {
        if access == Access::Undefined {
            break;
        }
        let pieces: Vec<(u64, u64)> = list.0[here]
            .current
            .missing(start, end)
            .into_iter()
            .flat_map(|(a, b)| list.0[from].current.within(a, b))
            .collect();
        if pieces.is_empty() {
            continue;
        }
        let (src, dst) = (&list.0[from].storage, &list.0[here].storage);
        if let Some(staging) = bring_over(src, dst, &pieces, rec)? {
            kept.push(staging);
        }
        for &(a, b) in &pieces {
            list.0[here].current.insert(a, b);
        }
    }
    if access != Access::Read {
        for c in &mut list.0 {
            c.current.remove(start, end);
        }
    }
    // Bytes current nowhere were never defined: they are as good here.
    list.0[here].current.insert(start, end);
    Ok(kept)
}

/// Copies the byte ranges `pieces` of `src` (on another device, done with
/// them) into `dst`, through the host: read back now, then written
/// directly where `dst` is the host's memory, else recorded as a copy
/// from staging, which is given back to be kept.
fn bring_over(
    src: &DeviceBuffer,
    dst: &DeviceBuffer,
    pieces: &[(u64, u64)],
    rec: &crate::core::queue::Recorder<'_>,
) -> ClResult<Option<Arc<Staging>>> {
    let total: u64 = pieces.iter().map(|(a, b)| b - a).sum();
    // Where each piece lies in a packed staging buffer.
    let packed: Vec<(u64, u64, u64)> = pieces
        .iter()
        .scan(0u64, |at, &(a, b)| {
            let place = (a, *at, b - a);
            *at += b - a;
            Some(place)
        })
        .collect();
    let host_side = |b: &DeviceBuffer| b.device().unified_memory.then(|| b.mapped()).flatten();
    // The source bytes as (host address, length) per piece.
    let readback;
    let from: Vec<(*const u8, usize)> = match host_side(src) {
        Some(p) => pieces
            .iter()
            // SAFETY: each piece lies inside the source's mapping.
            .map(|&(a, b)| {
                (
                    unsafe { p.as_ptr().add(a as usize) } as *const u8,
                    (b - a) as usize,
                )
            })
            .collect(),
        None => {
            readback = Staging::new(src.device(), total as usize, BufferUse::Readback)?;
            let regions: Vec<vk::BufferCopy> = packed
                .iter()
                .map(|&(at, to, len)| vk::BufferCopy {
                    src_offset: at,
                    dst_offset: to,
                    size: len,
                })
                .collect();
            let device = src.device();
            device.one_shot(|cb| {
                // SAFETY: recording state; both buffers live through the
                // wait.
                unsafe {
                    device
                        .raw
                        .cmd_copy_buffer(cb, src.raw, readback.buffer().raw, &regions)
                }
            })?;
            let base = readback.ptr();
            packed
                .iter()
                // SAFETY: each piece lies inside the readback buffer.
                .map(|&(_, to, len)| (unsafe { base.add(to as usize) } as *const u8, len as usize))
                .collect()
        }
    };
    // SAFETY (both writes): each source is mapped memory holding `len`
    // bytes that no device writes now (commands that wrote them have
    // completed).
    let bytes = |p: *const u8, len: usize| unsafe { std::slice::from_raw_parts(p, len) };
    if host_side(dst).is_some() {
        for (&(at, _), &(p, len)) in pieces.iter().zip(&from) {
            dst.write(at as usize, bytes(p, len));
        }
        return Ok(None);
    }
    let upload = Staging::new(dst.device(), total as usize, BufferUse::Upload)?;
    for (&(_, to, _), &(p, len)) in packed.iter().zip(&from) {
        upload.buffer().write(to as usize, bytes(p, len));
    }
    let regions: Vec<vk::BufferCopy> = packed
        .iter()
        .map(|&(at, to, len)| vk::BufferCopy {
            src_offset: to,
            dst_offset: at,
            size: len,
        })
        .collect();
    rec.copy_buffer(upload.buffer().raw, dst.raw, &regions);
    Ok(Some(upload))
}

/// Device memory for a buffer's bytes; running out of it is
/// CL_MEM_OBJECT_ALLOCATION_FAILURE.
fn device_memory(device: &Arc<LogicalDevice>, size: u64) -> ClResult<DeviceBuffer> {
    DeviceBuffer::new(device, size, BufferUse::Device).map_err(|e| {
        if e == vk::Result::ERROR_OUT_OF_DEVICE_MEMORY {
            ClError(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        } else {
            ClError::from(e)
        }
    })
}

/// Writes `data` into `dst` at `offset` outside any queue (initial data).
/// Copies `data` into `dst` at `offset` now, waiting for the copy.
pub fn upload(
    device: &Arc<LogicalDevice>,
    dst: &DeviceBuffer,
    offset: usize,
    data: &[u8],
) -> ClResult<()> {
    if dst.mapped().is_some() {
        dst.write(offset, data);
        return Ok(());
    }
    let staging = Staging::new(device, data.len(), BufferUse::Upload)?;
    staging.buffer().write(0, data);
    let region = [vk::BufferCopy {
        src_offset: 0,
        dst_offset: offset as u64,
        size: data.len() as u64,
    }];
    device.one_shot(|cb| {
        // SAFETY: recording state; both buffers live through the wait.
        unsafe {
            device
                .raw
                .cmd_copy_buffer(cb, staging.buffer().raw, dst.raw, &region)
        }
    })?;
    Ok(())
}

/// A rectangle of bytes in a buffer or in host memory: an origin
/// (x in bytes, y in rows, z in slices) with its pitches.
#[derive(Clone, Copy, Debug)]
pub struct Rect {
    pub origin: [usize; 3],
    pub row_pitch: usize,
    pub slice_pitch: usize,
}

impl Rect {
    pub fn offset(&self, y: usize, z: usize) -> usize {
        self.origin[0]
            + (self.origin[1] + y) * self.row_pitch
            + (self.origin[2] + z) * self.slice_pitch
    }

    /// One past the last byte touched for `region`.
    pub fn end(&self, region: [usize; 3]) -> usize {
        self.offset(region[1] - 1, region[2] - 1) + region[0]
    }

    /// [`Rect::end`], or `None` where the arithmetic overflows.
    pub fn checked_end(&self, region: [usize; 3]) -> Option<usize> {
        let y = self.origin[1].checked_add(region[1].checked_sub(1)?)?;
        let z = self.origin[2].checked_add(region[2].checked_sub(1)?)?;
        self.origin[0]
            .checked_add(y.checked_mul(self.row_pitch)?)?
            .checked_add(z.checked_mul(self.slice_pitch)?)?
            .checked_add(region[0])
    }
}

/// Work builders for the buffer commands. Each returns the device work and
/// host completion of one command.
pub mod work {
    use super::*;

    fn keep<T: Send + Sync + 'static>(v: T) -> Box<dyn std::any::Any + Send + Sync> {
        Box::new(v)
    }

    /// Device work that copies `regions` from `src` to `dst`.
    fn copy_record(
        src: vk::Buffer,
        dst: vk::Buffer,
        regions: Vec<vk::BufferCopy>,
    ) -> Option<crate::core::queue::RecordFn> {
        Some(Box::new(move |r| {
            r.copy_buffer(src, dst, &regions);
            Ok(())
        }))
    }

    /// A copy of `size` bytes from the application's memory at `host` into
    /// the buffer at `offset`, or `None` where the write is small or the
    /// memory cannot be imported.
    ///
    /// The device imports only the whole pages inside the application's
    /// range: the pages at its ends also hold other memory, which another
    /// thread may free and the allocator unmap while the device still
    /// uses the import (the driver then faults, and NVIDIA's hangs). Those
    /// partial pages go through a small staging buffer.
    fn imported(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        offset: usize,
        host: HostPtr,
        size: usize,
    ) -> Option<Work> {
        if size <= IMPORTED_WRITE {
            return None;
        }
        let align = queue.vk.host_import.as_ref()?.alignment as usize;
        let (start, end) = (host.get() as usize, host.get() as usize + size);
        let (inner_start, inner_end) = (start.next_multiple_of(align), end / align * align);
        if inner_end < inner_start + IMPORTED_WRITE {
            return None;
        }
        let import =
            HostBuffer::import(&queue.vk, inner_start as *const u8, inner_end - inner_start)?;
        let (head, tail) = (inner_start - start, end - inner_end);
        let edges = if head + tail > 0 {
            Some(Staging::new(&queue.vk, head + tail, BufferUse::Upload).ok()?)
        } else {
            None
        };
        let at = (buf.offset + offset) as u64;
        let storage = buf.storage_for(queue).ok()?.raw;
        // The copies into the buffer, as (source, regions): the import's
        // whole pages, and the partial pages at the ends from staging.
        let inner = vk::BufferCopy {
            src_offset: 0,
            dst_offset: at + head as u64,
            size: (inner_end - inner_start) as u64,
        };
        let mut copies = vec![(import.raw, vec![inner])];
        if let Some(e) = &edges {
            let mut regions = Vec::new();
            // (offset in the application's range, offset in staging, length)
            for (from, to, len) in [(0, 0, head), (inner_end - start, head, tail)] {
                if len == 0 {
                    continue;
                }
                // SAFETY: the application's bytes, valid while the write
                // is enqueued.
                let bytes = unsafe { std::slice::from_raw_parts((start + from) as *const u8, len) };
                e.buffer().write(to, bytes);
                regions.push(vk::BufferCopy {
                    src_offset: to as u64,
                    dst_offset: at + from as u64,
                    size: len as u64,
                });
            }
            copies.push((e.buffer().raw, regions));
        }
        let record: crate::core::queue::RecordFn = Box::new(move |r| {
            for (src, regions) in &copies {
                r.copy_buffer(*src, storage, regions);
            }
            Ok(())
        });
        let mut kept = vec![keep(import), keep(buf.clone())];
        if let Some(e) = edges {
            kept.push(keep(e));
        }
        Some(Work {
            record: Some(record),
            complete: None,
            keep: kept,
            host_access: false,
            uses: used(buf, Access::Write),
        })
    }

    pub fn write(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        offset: usize,
        data: &[u8],
    ) -> ClResult<Work> {
        // Where the device's memory is the host's, the worker copies the
        // data in once earlier commands are done (the application keeps
        // it unchanged until the write completes).
        // Small writes take a copy now, which forgives applications that
        // reuse their memory early.
        if let Some(base) = buf.host_memory() {
            let dst = HostPtr(base.as_ptr() as usize + buf.offset + offset);
            let size = data.len();
            let copy = (size <= SMALL_TRANSFER).then(|| data.to_vec());
            let src = HostPtr(data.as_ptr() as usize);
            return Ok(Work {
                record: None,
                complete: Some(Box::new(move || {
                    let src = copy.as_ref().map_or(src.get() as *const u8, |c| c.as_ptr());
                    // SAFETY: the destination is inside the buffer's
                    // mapping; the application keeps `data` valid.
                    unsafe { std::ptr::copy_nonoverlapping(src, dst.get(), size) };
                    Ok(())
                })),
                keep: vec![keep(buf.clone())],
                host_access: true,
                uses: Vec::new(),
            });
        }
        // Large writes: the device copies straight from the application's
        // memory where it can import it.
        let host = HostPtr(data.as_ptr() as usize);
        if let Some(w) = imported(queue, buf, offset, host, data.len()) {
            return Ok(w);
        }
        let staging = Staging::new(&queue.vk, data.len(), BufferUse::Upload)?;
        staging.buffer().write(0, data);
        let (src, dst) = (staging.buffer().raw, buf.storage_for(queue)?.raw);
        let region = vk::BufferCopy {
            src_offset: 0,
            dst_offset: (buf.offset + offset) as u64,
            size: data.len() as u64,
        };
        Ok(Work {
            record: copy_record(src, dst, vec![region]),
            complete: None,
            keep: vec![keep(staging), keep(buf.clone())],
            host_access: false,
            uses: used(buf, Access::Write),
        })
    }

    /// A read of `size` bytes at `offset` into the application's memory at
    /// `ptr`, as the parts of one command and how many of them may be on
    /// the device at once (see `Queue::enqueue_parts`). One part where the
    /// device's memory is the host's or the read is small; else the device
    /// copies pieces of a quarter of the read (from 1 to 8 MiB,
    /// [`READ_PART`]) into staging memory, each submitted on its own, and
    /// the host copies each out while the device copies the next, through
    /// four staging buffers at most.
    pub fn read_parts(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        offset: usize,
        size: usize,
        ptr: HostPtr,
    ) -> ClResult<(Vec<Work>, usize)> {
        const RING: usize = 4;
        if size <= 2 * SMALL_TRANSFER || buf.host_memory().is_some() {
            return Ok((vec![read(queue, buf, offset, size, ptr)?], 1));
        }
        let part = (size / RING)
            .clamp(SMALL_TRANSFER, READ_PART)
            .next_multiple_of(64 << 10);
        let src = buf.storage_for(queue)?.raw;
        let mut ring = Vec::with_capacity(RING);
        let mut parts = Vec::with_capacity(size.div_ceil(part));
        for (j, at) in (0..size).step_by(part).enumerate() {
            let len = part.min(size - at);
            if j < RING {
                ring.push(Staging::new(&queue.vk, part, BufferUse::Readback)?);
            }
            let staging = ring[j % RING].clone();
            let region = vk::BufferCopy {
                src_offset: (buf.offset + offset + at) as u64,
                dst_offset: 0,
                size: len as u64,
            };
            let out = staging.clone();
            let into = HostPtr(ptr.0 + at);
            parts.push(Work {
                record: copy_record(src, staging.buffer().raw, vec![region]),
                complete: Some(Box::new(move || {
                    // SAFETY: the staging buffer holds `len` bytes; the
                    // application keeps `ptr` valid for `size` bytes.
                    unsafe { copy_in_parallel(out.ptr(), into.get(), len) };
                    Ok(())
                })),
                keep: vec![keep(staging), keep(buf.clone())],
                host_access: false,
                uses: used(buf, Access::Read),
            });
        }
        Ok((parts, RING))
    }

    pub fn read(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        offset: usize,
        size: usize,
        ptr: HostPtr,
    ) -> ClResult<Work> {
        // Where the device's memory is the host's, the worker reads it
        // directly once earlier commands are done.
        if let Some(base) = buf.host_memory() {
            let src = HostPtr(base.as_ptr() as usize + buf.offset + offset);
            return Ok(Work {
                record: None,
                complete: Some(Box::new(move || {
                    // SAFETY: the source is inside the buffer's mapping; the
                    // application keeps `ptr` valid for `size` bytes.
                    unsafe { std::ptr::copy_nonoverlapping(src.get(), ptr.get(), size) };
                    Ok(())
                })),
                keep: vec![keep(buf.clone())],
                host_access: true,
                uses: Vec::new(),
            });
        }
        let staging = Staging::new(&queue.vk, size, BufferUse::Readback)?;
        let (src, dst) = (buf.storage_for(queue)?.raw, staging.buffer().raw);
        let region = vk::BufferCopy {
            src_offset: (buf.offset + offset) as u64,
            dst_offset: 0,
            size: size as u64,
        };
        let out = staging.clone();
        Ok(Work {
            record: copy_record(src, dst, vec![region]),
            complete: Some(Box::new(move || {
                // SAFETY: the application keeps `ptr` valid for `size` bytes.
                unsafe { out.buffer().read_to(0, ptr.get().cast(), size) };
                Ok(())
            })),
            keep: vec![keep(staging), keep(buf.clone())],
            host_access: false,
            uses: used(buf, Access::Read),
        })
    }

    /// Copies `regions` of bytes from `src` to `dst`: (offset in `src`,
    /// offset in `dst`, length) each; empty ones move nothing.
    pub fn copy(
        queue: &Queue,
        src: &Arc<Handle<Buffer>>,
        dst: &Arc<Handle<Buffer>>,
        regions: &[(usize, usize, usize)],
    ) -> ClResult<Work> {
        let (s, d) = (src.storage_for(queue)?.raw, dst.storage_for(queue)?.raw);
        let (so, dof) = (src.offset, dst.offset);
        // Vulkan allows no empty regions.
        let regions: Vec<vk::BufferCopy> = regions
            .iter()
            .filter(|r| r.2 > 0)
            .map(|&(from, to, len)| vk::BufferCopy {
                src_offset: (from + so) as u64,
                dst_offset: (to + dof) as u64,
                size: len as u64,
            })
            .collect();
        Ok(Work {
            record: copy_record(s, d, regions),
            complete: None,
            keep: vec![keep(src.clone()), keep(dst.clone())],
            host_access: false,
            uses: [used(src, Access::Read), used(dst, Access::Write)].concat(),
        })
    }

    /// Like [`copy`], through a temporary buffer: for rectangles of one
    /// buffer whose rows interleave with the other's (the specification
    /// does not call that an overlap, Vulkan forbids the direct copy).
    pub fn copy_through_temporary(
        queue: &Queue,
        src: &Arc<Handle<Buffer>>,
        dst: &Arc<Handle<Buffer>>,
        regions: &[(usize, usize, usize)],
    ) -> ClResult<Work> {
        let total: usize = regions.iter().map(|r| r.2).sum();
        let temp = Staging::new(&queue.vk, total.max(1), BufferUse::Device)?;
        let (s, d, t) = (
            src.storage_for(queue)?.raw,
            dst.storage_for(queue)?.raw,
            temp.buffer().raw,
        );
        let (so, dof) = (src.offset, dst.offset);
        let mut at = 0u64;
        let (mut into, mut out) = (Vec::new(), Vec::new());
        for &(from, to, len) in regions.iter().filter(|r| r.2 > 0) {
            into.push(vk::BufferCopy {
                src_offset: (from + so) as u64,
                dst_offset: at,
                size: len as u64,
            });
            out.push(vk::BufferCopy {
                src_offset: at,
                dst_offset: (to + dof) as u64,
                size: len as u64,
            });
            at += len as u64;
        }
        Ok(Work {
            record: Some(Box::new(move |r| {
                r.copy_buffer(s, t, &into);
                r.full_barrier();
                r.copy_buffer(t, d, &out);
                Ok(())
            })),
            complete: None,
            keep: vec![keep(temp), keep(src.clone()), keep(dst.clone())],
            host_access: false,
            uses: [used(src, Access::Read), used(dst, Access::Write)].concat(),
        })
    }

    pub fn fill(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        pattern: &[u8],
        offset: usize,
        size: usize,
    ) -> ClResult<Work> {
        let dst = buf.storage_for(queue)?.raw;
        let start = buf.offset + offset;
        // vkCmdFillBuffer takes a 4-byte word at 4-byte granularity.
        if pattern.len() <= 4 && start % 4 == 0 && size % 4 == 0 {
            let mut word = [0u8; 4];
            for (i, b) in word.iter_mut().enumerate() {
                *b = pattern[i % pattern.len()];
            }
            let data = u32::from_ne_bytes(word);
            return Ok(Work {
                record: Some(Box::new(move |r| {
                    r.fill_buffer(dst, start as u64, size as u64, data);
                    Ok(())
                })),
                complete: None,
                keep: vec![keep(buf.clone())],
                host_access: false,
                uses: used(buf, Access::Write),
            });
        }
        // Otherwise: one staging chunk of repeated pattern, copied over the
        // region as many times as needed.
        let chunk = size.min((64 * 1024 / pattern.len()).max(1) * pattern.len());
        let staging = Staging::new(&queue.vk, chunk, BufferUse::Upload)?;
        let bytes: Vec<u8> = pattern.iter().copied().cycle().take(chunk).collect();
        staging.buffer().write(0, &bytes);
        let src = staging.buffer().raw;
        let regions: Vec<vk::BufferCopy> = (0..size)
            .step_by(chunk)
            .map(|at| vk::BufferCopy {
                src_offset: 0,
                dst_offset: (start + at) as u64,
                size: chunk.min(size - at) as u64,
            })
            .collect();
        Ok(Work {
            record: copy_record(src, dst, regions),
            complete: None,
            keep: vec![keep(staging), keep(buf.clone())],
            host_access: false,
            uses: used(buf, Access::Write),
        })
    }

    /// Rows of a rectangle: (offset in the first rect, offset in the
    /// second, length) for each row.
    pub fn rect_rows(a: &Rect, b: &Rect, region: [usize; 3]) -> Vec<(usize, usize, usize)> {
        let mut rows = Vec::with_capacity(region[1] * region[2]);
        for z in 0..region[2] {
            for y in 0..region[1] {
                rows.push((a.offset(y, z), b.offset(y, z), region[0]));
            }
        }
        rows
    }

    pub fn write_rect(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        buf_rect: Rect,
        host_rect: Rect,
        region: [usize; 3],
        ptr: HostPtr,
    ) -> ClResult<Work> {
        let packed = region[0] * region[1] * region[2];
        let staging = Staging::new(&queue.vk, packed, BufferUse::Upload)?;
        let mut regions = Vec::with_capacity(region[1] * region[2]);
        let base = staging.ptr();
        for (i, (host, dev, len)) in rect_rows(&host_rect, &buf_rect, region)
            .into_iter()
            .enumerate()
        {
            // SAFETY: the application passes host memory covering the host
            // rectangle; the staging buffer holds `packed` bytes.
            unsafe { std::ptr::copy_nonoverlapping(ptr.get().add(host), base.add(i * len), len) };
            regions.push(vk::BufferCopy {
                src_offset: (i * len) as u64,
                dst_offset: (buf.offset + dev) as u64,
                size: len as u64,
            });
        }
        let (src, dst) = (staging.buffer().raw, buf.storage_for(queue)?.raw);
        Ok(Work {
            record: copy_record(src, dst, regions),
            complete: None,
            keep: vec![keep(staging), keep(buf.clone())],
            host_access: false,
            uses: used(buf, Access::Write),
        })
    }

    pub fn read_rect(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        buf_rect: Rect,
        host_rect: Rect,
        region: [usize; 3],
        ptr: HostPtr,
    ) -> ClResult<Work> {
        let packed = region[0] * region[1] * region[2];
        let staging = Staging::new(&queue.vk, packed, BufferUse::Readback)?;
        let rows = rect_rows(&buf_rect, &host_rect, region);
        let regions: Vec<vk::BufferCopy> = rows
            .iter()
            .enumerate()
            .map(|(i, &(dev, _, len))| vk::BufferCopy {
                src_offset: (buf.offset + dev) as u64,
                dst_offset: (i * len) as u64,
                size: len as u64,
            })
            .collect();
        let (src, dst) = (buf.storage_for(queue)?.raw, staging.buffer().raw);
        let out = staging.clone();
        Ok(Work {
            record: copy_record(src, dst, regions),
            complete: Some(Box::new(move || {
                let base = out.ptr();
                for (i, (_, host, len)) in rows.into_iter().enumerate() {
                    // SAFETY: as in write_rect, the other way round.
                    unsafe {
                        std::ptr::copy_nonoverlapping(base.add(i * len), ptr.get().add(host), len)
                    };
                }
                Ok(())
            })),
            keep: vec![keep(staging), keep(buf.clone())],
            host_access: false,
            uses: used(buf, Access::Read),
        })
    }

    /// clEnqueueMapBuffer: registers the mapping and returns its pointer
    /// with the work that fills it.
    pub fn map(
        queue: &Queue,
        buf: &Arc<Handle<Buffer>>,
        flags: cl_map_flags,
        offset: usize,
        size: usize,
    ) -> ClResult<(HostPtr, Work)> {
        let mut maps = buf.maps();
        let overlaps = |m: &Mapping| offset < m.offset + m.size && m.offset < offset + size;
        let writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0;
        if maps.iter().any(|m| overlaps(m) && (writes || m.writes())) {
            return err(CL_INVALID_OPERATION);
        }
        // Where the device's memory is the host's, the mapping is the
        // buffer's memory itself: nothing to copy either way.
        if let (Some(base), None) = (buf.host_memory(), buf.host_ptr) {
            let ptr = HostPtr(base.as_ptr() as usize + buf.offset + offset);
            maps.push(Mapping {
                ptr,
                offset,
                size,
                flags,
                staging: None,
            });
            return Ok((
                ptr,
                Work {
                    keep: vec![keep(buf.clone())],
                    ..Work::none()
                },
            ));
        }
        let staging = Staging::new(&queue.vk, size.max(1), BufferUse::Readback)?;
        let ptr = match buf.host_ptr {
            Some(h) => HostPtr(h.0 + offset),
            None => HostPtr(staging.ptr() as usize),
        };
        maps.push(Mapping {
            ptr,
            offset,
            size,
            flags,
            staging: Some(staging.clone()),
        });
        drop(maps);
        if flags & CL_MAP_WRITE_INVALIDATE_REGION != 0 || size == 0 {
            return Ok((ptr, Work::none()));
        }
        let region = vk::BufferCopy {
            src_offset: (buf.offset + offset) as u64,
            dst_offset: 0,
            size: size as u64,
        };
        let (src, dst) = (buf.storage_for(queue)?.raw, staging.buffer().raw);
        let to_host = buf.host_ptr.is_some();
        let out = staging.clone();
        Ok((
            ptr,
            Work {
                record: copy_record(src, dst, vec![region]),
                complete: Some(Box::new(move || {
                    if to_host {
                        // SAFETY: CL_MEM_USE_HOST_PTR memory covers the
                        // buffer, so `ptr` has `size` bytes.
                        unsafe { out.buffer().read_to(0, ptr.get().cast(), size) };
                    }
                    Ok(())
                })),
                keep: vec![keep(staging), keep(buf.clone())],
                host_access: false,
                uses: used(buf, Access::Read),
            },
        ))
    }

    /// clEnqueueUnmapMemObject: writes mapped data back when the mapping
    /// was for writing.
    pub fn unmap(queue: &Queue, buf: &Arc<Handle<Buffer>>, ptr: HostPtr) -> ClResult<Work> {
        let mapping = {
            let mut maps = buf.maps();
            let i = maps
                .iter()
                .position(|m| m.ptr == ptr)
                .ok_or(ClError(CL_INVALID_VALUE))?;
            maps.remove(i)
        };
        let Some(staging) = mapping
            .staging
            .clone()
            .filter(|_| mapping.writes() && mapping.size > 0)
        else {
            return Ok(Work {
                record: None,
                complete: None,
                keep: vec![keep(buf.clone())],
                host_access: false,
                uses: Vec::new(),
            });
        };
        if buf.host_ptr.is_some() {
            staging.buffer().write(0, {
                // SAFETY: the mapped range of CL_MEM_USE_HOST_PTR memory.
                unsafe { std::slice::from_raw_parts(ptr.get(), mapping.size) }
            });
        }
        let staging = staging.on_device(&queue.vk, mapping.size)?;
        let region = vk::BufferCopy {
            src_offset: 0,
            dst_offset: (buf.offset + mapping.offset) as u64,
            size: mapping.size as u64,
        };
        let (src, dst) = (staging.buffer().raw, buf.storage_for(queue)?.raw);
        Ok(Work {
            record: copy_record(src, dst, vec![region]),
            complete: None,
            keep: vec![keep(staging), keep(buf.clone())],
            host_access: false,
            uses: used(buf, Access::Write),
        })
    }
}

/// clEnqueueAcquireExternalMemObjectsKHR (`acquire`) and
/// clEnqueueReleaseExternalMemObjectsKHR: the memory of the buffers and of
/// the Vulkan images (imported linear images, left in the `GENERAL` layout)
/// passes from the other API to the queue's device, or back. In
/// Vulkan terms, an ownership transfer between the external queue family
/// and the queue's.
pub fn external_ownership(
    buffers: &[Arc<Handle<Buffer>>],
    images: Vec<Arc<DeviceImage>>,
    family: u32,
    acquire: bool,
) -> Work {
    let storages: Vec<Arc<DeviceBuffer>> = buffers.iter().map(|b| b.storage.clone()).collect();
    let raws: Vec<vk::Buffer> = storages.iter().map(|s| s.raw).collect();
    let image_raws: Vec<(vk::Image, vk::ImageSubresourceRange, vk::ImageLayout)> = images
        .iter()
        .map(|i| (i.raw, i.range(), i.transfer_layout()))
        .collect();
    let (src, dst) = if acquire {
        (vk::QUEUE_FAMILY_EXTERNAL, family)
    } else {
        (family, vk::QUEUE_FAMILY_EXTERNAL)
    };
    let access = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
    let (src_access, dst_access) = if acquire {
        (vk::AccessFlags::empty(), access)
    } else {
        (access, vk::AccessFlags::empty())
    };
    let record: RecordFn = Box::new(move |rec: &Recorder<'_>| {
        let barriers: Vec<vk::BufferMemoryBarrier> = raws
            .iter()
            .map(|&buffer| {
                vk::BufferMemoryBarrier::default()
                    .src_access_mask(src_access)
                    .dst_access_mask(dst_access)
                    .src_queue_family_index(src)
                    .dst_queue_family_index(dst)
                    .buffer(buffer)
                    .offset(0)
                    .size(vk::WHOLE_SIZE)
            })
            .collect();
        let image_barriers: Vec<vk::ImageMemoryBarrier> = image_raws
            .iter()
            .map(|&(image, range, from)| {
                vk::ImageMemoryBarrier::default()
                    .src_access_mask(src_access)
                    .dst_access_mask(dst_access)
                    .old_layout(from)
                    .new_layout(vk::ImageLayout::GENERAL)
                    .src_queue_family_index(src)
                    .dst_queue_family_index(dst)
                    .image(image)
                    .subresource_range(range)
            })
            .collect();
        // SAFETY: recording state; the buffers and images are kept alive
        // by the command until it completes.
        unsafe {
            rec.device.cmd_pipeline_barrier(
                rec.cb,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[],
                &barriers,
                &image_barriers,
            )
        };
        Ok(())
    });
    let mut keep: Vec<Box<dyn std::any::Any + Send + Sync>> = Vec::new();
    keep.extend(storages.into_iter().map(|s| Box::new(s) as _));
    keep.extend(images.into_iter().map(|i| Box::new(i) as _));
    Work {
        record: Some(record),
        keep,
        ..Work::none()
    }
}
