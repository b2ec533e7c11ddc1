//! Device memory through gpu-allocator: buffers with device addresses, and a
//! pool of host-visible staging buffers for transfers.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use ash::vk;
use gpu_allocator::MemoryLocation;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};

use crate::core::census::{self, Kind};
use crate::vk::device::LogicalDevice;

/// Every allocation starts at least this aligned: the size of OpenCL's
/// largest type (long16), which is also the sub-buffer origin alignment.
pub const MIN_ALIGNMENT: u64 = 256;

/// What a buffer is for, which decides where its memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferUse {
    /// OpenCL buffer contents: device-local.
    Device,
    /// Host-written data on its way to the device.
    Upload,
    /// Device data on its way to the host.
    Readback,
}

/// The usage that lets texel buffer views read and write a buffer.
const TEXELS: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::UNIFORM_TEXEL_BUFFER.as_raw()
        | vk::BufferUsageFlags::STORAGE_TEXEL_BUFFER.as_raw(),
);

/// A `VkBuffer` with its memory and device address. Destroyed on drop.
pub struct DeviceBuffer {
    device: Arc<LogicalDevice>,
    pub raw: vk::Buffer,
    allocation: Option<Allocation>,
    /// Memory of its own, mapped on the host at the buffer's device
    /// address ([`DeviceBuffer::new_placed`]).
    placed: Option<Placed>,
    pub size: u64,
    pub address: vk::DeviceAddress,
    pub usage: BufferUse,
}

/// Memory of the buffer's own, outside the allocator: a dedicated
/// allocation mapped at a chosen host address (`len` bytes mapped), or
/// memory imported from another API (`len` 0: not mapped).
struct Placed {
    memory: vk::DeviceMemory,
    len: usize,
}

// SAFETY: the mapped pointer inside the allocation refers to memory that
// stays mapped for the buffer's life; access to the bytes is ordered by the
// command model (a command owns a staging buffer while it runs).
unsafe impl Send for DeviceBuffer {}
// SAFETY: as above; shared references only hand out the pointer.
unsafe impl Sync for DeviceBuffer {}

impl DeviceBuffer {
    pub fn new(
        device: &Arc<LogicalDevice>,
        size: u64,
        usage: BufferUse,
    ) -> Result<Self, vk::Result> {
        let mut flags = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
        if usage == BufferUse::Device {
            // OpenCL buffers can hold the texels of 1D image buffers.
            flags |= TEXELS;
        }
        let info = vk::BufferCreateInfo::default()
            .size(size.max(1))
            .usage(flags)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let d = &device.raw;
        // Staging memory is short-lived and not the application's: only
        // buffers for kernels count against the device's budget.
        let reserved = device.reserve(if usage == BufferUse::Device { size } else { 0 })?;
        // SAFETY: valid device and create info.
        let raw = unsafe { d.create_buffer(&info, None)? };
        // SAFETY: `raw` was just created on this device.
        let mut req = unsafe { d.get_buffer_memory_requirements(raw) };
        req.alignment = req.alignment.max(MIN_ALIGNMENT);
        let location = match usage {
            BufferUse::Device if device.unified_memory => MemoryLocation::CpuToGpu,
            BufferUse::Device => MemoryLocation::GpuOnly,
            BufferUse::Upload => MemoryLocation::CpuToGpu,
            BufferUse::Readback => MemoryLocation::GpuToCpu,
        };
        let allocation = device
            .allocator()
            .allocate(&AllocationCreateDesc {
                name: "vkcl buffer",
                requirements: req,
                location,
                linear: true,
                allocation_scheme: AllocationScheme::GpuAllocatorManaged,
            })
            .map_err(|e| {
                // The application learns of it from the error code (hashcat,
                // for one, allocates until this fails to size the device).
                log::debug!(target: "vkcl::memory", "allocation of {size} bytes failed: {e}");
                // SAFETY: the buffer is unused.
                unsafe { d.destroy_buffer(raw, None) };
                vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
            })?;
        // SAFETY: memory from this device, offset aligned as required.
        let bound = unsafe { d.bind_buffer_memory(raw, allocation.memory(), allocation.offset()) };
        let mut this = DeviceBuffer {
            device: device.clone(),
            raw,
            allocation: Some(allocation),
            placed: None,
            size,
            address: 0,
            usage,
        };
        reserved.keep();
        census::add(Kind::DeviceBuffers, 1);
        census::add(Kind::DeviceBytes, size as i64);
        bound?;
        // SAFETY: the buffer has SHADER_DEVICE_ADDRESS usage and bound memory.
        this.address = unsafe {
            d.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(raw))
        };
        Ok(this)
    }

    /// The host address of the buffer's memory, for host-visible buffers.
    pub fn mapped(&self) -> Option<NonNull<u8>> {
        if let Some(p) = &self.placed {
            // Imported memory is not mapped.
            return (p.len > 0)
                .then(|| NonNull::new(self.address as *mut u8))
                .flatten();
        }
        self.allocation
            .as_ref()
            .and_then(|a| a.mapped_ptr())
            .map(NonNull::cast)
    }

    /// A buffer whose memory the host sees at the buffer's own device
    /// address (VK_EXT_map_memory_placed): host-visible memory of its
    /// own, device-local where the device offers that, mapped over a range
    /// reserved at that address. `None` where the device cannot place
    /// maps or the address range is taken on the host.
    #[cfg(unix)]
    pub fn new_placed(device: &Arc<LogicalDevice>, size: u64) -> Option<DeviceBuffer> {
        let placed = device.placed.as_ref()?;
        let len = size.max(1).next_multiple_of(placed.alignment);
        let d = &device.raw;
        let flags = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS
            | TEXELS;
        let info = vk::BufferCreateInfo::default()
            .size(len)
            .usage(flags)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid device and create info.
        let raw = unsafe { d.create_buffer(&info, None) }
            .inspect_err(|e| log::debug!(target: "vkcl::memory", "no buffer to place: {e}"))
            .ok()?;
        // SAFETY: `raw` was just created on this device.
        let req = unsafe { d.get_buffer_memory_requirements(raw) };
        let props = &device.memory_props;
        let pick = |want: vk::MemoryPropertyFlags| {
            (0..props.memory_type_count).find(|&t| {
                req.memory_type_bits & (1 << t) != 0
                    && props.memory_types[t as usize].property_flags.contains(want)
            })
        };
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let Ok(reserved) = device.reserve(size) else {
            // SAFETY: the buffer is unused.
            unsafe { d.destroy_buffer(raw, None) };
            return None;
        };
        reserved.keep();
        let mut this = DeviceBuffer {
            device: device.clone(),
            raw,
            allocation: None,
            placed: None,
            size,
            address: 0,
            usage: BufferUse::Device,
        };
        census::add(Kind::DeviceBuffers, 1);
        census::add(Kind::DeviceBytes, size as i64);
        let Some(memory_type) =
            pick(host | vk::MemoryPropertyFlags::DEVICE_LOCAL).or_else(|| pick(host))
        else {
            log::debug!(target: "vkcl::memory", "no host-visible memory type for a placed map");
            return None;
        };
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(raw);
        let mut address_flags =
            vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size.max(len))
            .memory_type_index(memory_type)
            .push_next(&mut dedicated)
            .push_next(&mut address_flags);
        // SAFETY: a memory type the buffer allows.
        let memory = match unsafe { d.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(e) => {
                log::debug!(target: "vkcl::memory", "cannot allocate {len} bytes to place: {e}");
                return None;
            }
        };
        this.placed = Some(Placed { memory, len: 0 });
        // SAFETY: dedicated memory for this buffer.
        unsafe { d.bind_buffer_memory(raw, memory, 0) }
            .inspect_err(
                |e| log::debug!(target: "vkcl::memory", "cannot bind memory to place: {e}"),
            )
            .ok()?;
        // SAFETY: the buffer has SHADER_DEVICE_ADDRESS usage and bound memory.
        let address = unsafe {
            d.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(raw))
        };
        if address % placed.alignment != 0 {
            log::debug!(target: "vkcl::memory", "device address {address:#x} is not aligned for a placed map");
            return None;
        }
        // Reserve the range first, so that the map never replaces pages of
        // the process (MAP_FIXED_NOREPLACE fails, or older kernels return
        // another address, where something lives already).
        let want = address as *mut c_void;
        // SAFETY: an anonymous, inaccessible reservation; nothing is
        // replaced.
        let got = unsafe {
            libc::mmap(
                want,
                len as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if got != want {
            if got != libc::MAP_FAILED {
                // SAFETY: the reservation just made, elsewhere.
                unsafe { libc::munmap(got, len as usize) };
            }
            log::debug!(target: "vkcl::memory", "host range at {address:#x} is taken: no placed map");
            return None;
        }
        this.address = address;
        this.placed = Some(Placed {
            memory,
            len: len as usize,
        });
        let mut at = vk::MemoryMapPlacedInfoEXT::default().placed_address(want);
        let map = vk::MemoryMapInfoKHR::default()
            .flags(vk::MemoryMapFlags::PLACED_EXT)
            .memory(memory)
            .offset(0)
            .size(vk::WHOLE_SIZE)
            .push_next(&mut at);
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: host-visible memory, mapped over the range reserved
        // above at the alignment the device asks for.
        let r = unsafe { (placed.ext.fp().map_memory2_khr)(d.handle(), &map, &mut ptr) };
        if r != vk::Result::SUCCESS || ptr != want {
            log::debug!(target: "vkcl::memory", "placed map at {address:#x} failed: {r}");
            // The reservation is released by drop; nothing is mapped.
            this.placed = Some(Placed { memory, len: 0 });
            // SAFETY: the reservation made above.
            unsafe { libc::munmap(want, len as usize) };
            return None;
        }
        log::trace!(target: "vkcl::memory", "{len} bytes placed at {address:#x}");
        Some(this)
    }

    /// A buffer on memory another API exported as an opaque file
    /// descriptor (see [`crate::vk::external::import_buffer_memory`]).
    /// The buffer owns `fd` once this succeeds.
    pub fn import_fd(device: &Arc<LogicalDevice>, fd: i32, size: u64) -> Result<Self, vk::Result> {
        let reserved = device.reserve(size)?;
        let (raw, memory) = crate::vk::external::import_buffer_memory(device, fd, size)?;
        reserved.keep();
        census::add(Kind::DeviceBuffers, 1);
        census::add(Kind::DeviceBytes, size as i64);
        // SAFETY: the buffer has SHADER_DEVICE_ADDRESS usage and bound memory.
        let address = unsafe {
            device
                .raw
                .get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(raw))
        };
        Ok(DeviceBuffer {
            device: device.clone(),
            raw,
            allocation: None,
            placed: Some(Placed { memory, len: 0 }),
            size,
            address,
            usage: BufferUse::Device,
        })
    }

    /// Copies `data` into a host-visible buffer at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) {
        let dst = self.mapped().expect("write to a host-visible buffer");
        assert!(offset + data.len() <= self.size as usize);
        // SAFETY: in bounds of the mapping (checked above); the caller owns
        // this range while no device command touches it.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), dst.as_ptr().add(offset), data.len())
        };
    }

    /// Copies `len` bytes at `offset` of a host-visible buffer to `dst`.
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes of writes.
    pub unsafe fn read_to(&self, offset: usize, dst: *mut c_void, len: usize) {
        let src = self.mapped().expect("read from a host-visible buffer");
        assert!(offset + len <= self.size as usize);
        // SAFETY: in bounds of the mapping; `dst` as the caller promises.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().add(offset), dst.cast::<u8>(), len) };
    }

    pub fn device(&self) -> &Arc<LogicalDevice> {
        &self.device
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        census::remove(Kind::DeviceBuffers, 1);
        census::remove(Kind::DeviceBytes, self.size as i64);
        if self.usage == BufferUse::Device {
            self.device.release(self.size);
        }
        // SAFETY: no command still uses the buffer: commands keep their
        // buffers alive until they complete.
        unsafe { self.device.raw.destroy_buffer(self.raw, None) };
        if let Some(p) = self.placed.take() {
            self.drop_placed(p);
        }
        if let Some(a) = self.allocation.take() {
            if let Err(e) = self.device.allocator().free(a) {
                log::warn!(target: "vkcl::memory", "freeing device memory failed: {e}");
            }
        }
    }
}

impl DeviceBuffer {
    /// Unmaps (keeping the range reserved, then releasing it) and frees
    /// placed memory.
    fn drop_placed(&self, p: Placed) {
        let d = &self.device.raw;
        if p.len > 0
            && let Some(placed) = self.device.placed.as_ref()
        {
            let unmap = vk::MemoryUnmapInfoKHR::default()
                .flags(vk::MemoryUnmapFlagsKHR::RESERVE_EXT)
                .memory(p.memory);
            // SAFETY: the memory is mapped, and no command uses it any more.
            let r = unsafe { (placed.ext.fp().unmap_memory2_khr)(d.handle(), &unmap) };
            if r != vk::Result::SUCCESS {
                log::warn!(target: "vkcl::memory", "unmapping placed memory failed: {r}");
            }
            #[cfg(unix)]
            // SAFETY: the reservation the map was placed in.
            unsafe {
                libc::munmap(self.address as *mut c_void, p.len)
            };
        }
        // SAFETY: unmapped and unused.
        unsafe { d.free_memory(p.memory, None) };
    }
}

/// Application memory imported as a transfer buffer
/// (VK_EXT_external_memory_host), so that the device copies straight to or
/// from it. Released on drop.
pub struct HostBuffer {
    device: Arc<LogicalDevice>,
    pub raw: vk::Buffer,
    memory: vk::DeviceMemory,
}

// SAFETY: plain Vulkan handles, used only by commands that own the value.
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// Imports the `len` bytes at `ptr`, whole pages (both multiples of
    /// the device's import alignment) that the caller owns for as long as
    /// the import lives, or `None` where they are not aligned or the device
    /// cannot import them (no extension, memory it refuses such as
    /// read-only or file-backed pages).
    pub fn import(device: &Arc<LogicalDevice>, ptr: *const u8, len: usize) -> Option<HostBuffer> {
        let import = device.host_import.as_ref()?;
        let align = import.alignment;
        if (ptr as u64) % align != 0 || len as u64 % align != 0 || len == 0 {
            return None;
        }
        let (start, size) = (ptr as u64, len as u64);
        let handle = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
        let d = &device.raw;
        let mut host_props = vk::MemoryHostPointerPropertiesEXT::default();
        // SAFETY: `start` starts pages the caller owns.
        let found = unsafe {
            (import.ext.fp().get_memory_host_pointer_properties_ext)(
                d.handle(),
                handle,
                start as *const c_void,
                &mut host_props,
            )
        };
        if found != vk::Result::SUCCESS {
            return None;
        }
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: valid device and create info.
        let raw = unsafe { d.create_buffer(&info, None) }.ok()?;
        // SAFETY: `raw` was just created on this device.
        let req = unsafe { d.get_buffer_memory_requirements(raw) };
        // Only a host-coherent type: the application reads and writes the
        // pages directly, where nothing flushes or invalidates them.
        let coherent =
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let allowed = req.memory_type_bits & host_props.memory_type_bits;
        let props = &device.memory_props;
        let memory_type = (0..props.memory_type_count).find(|&t| {
            allowed & (1 << t) != 0
                && props.memory_types[t as usize]
                    .property_flags
                    .contains(coherent)
        });
        log::trace!(target: "vkcl::memory", "host memory types {allowed:#x} allowed, {memory_type:?} chosen");
        let Some(memory_type) = memory_type.filter(|_| req.size <= size) else {
            // SAFETY: the buffer is unused.
            unsafe { d.destroy_buffer(raw, None) };
            return None;
        };
        let mut host = vk::ImportMemoryHostPointerInfoEXT::default()
            .handle_type(handle)
            .host_pointer(start as *mut c_void);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(size)
            .memory_type_index(memory_type)
            .push_next(&mut host);
        // SAFETY: an aligned range of application pages, a memory type the
        // driver allows for it.
        let memory = match unsafe { d.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(e) => {
                log::debug!(target: "vkcl::memory", "cannot import {size} bytes of host memory: {e}");
                // SAFETY: the buffer is unused.
                unsafe { d.destroy_buffer(raw, None) };
                return None;
            }
        };
        // SAFETY: memory of a type the buffer allows, large enough.
        if unsafe { d.bind_buffer_memory(raw, memory, 0) }.is_err() {
            // SAFETY: both unused.
            unsafe {
                d.destroy_buffer(raw, None);
                d.free_memory(memory, None);
            }
            return None;
        }
        log::trace!(target: "vkcl::memory", "imported {size} bytes of host memory");
        census::add(Kind::ImportedRanges, 1);
        Some(HostBuffer {
            device: device.clone(),
            raw,
            memory,
        })
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        census::remove(Kind::ImportedRanges, 1);
        // SAFETY: commands keep the import alive until they complete.
        unsafe {
            self.device.raw.destroy_buffer(self.raw, None);
            self.device.raw.free_memory(self.memory, None);
        }
    }
}

/// Reuses staging buffers: a transfer takes one of at least the size it
/// needs and gives it back when the command completes.
pub struct StagingPool {
    /// Idle buffers, the most recently used first; up to thousands of
    /// them (one per command in flight), so both ends move in O(1).
    free: Mutex<std::collections::VecDeque<DeviceBuffer>>,
}

/// Staging buffers come in powers of two from this size.
const STAGING_MIN: u64 = 64 * 1024;
/// The pool keeps at most this many bytes of idle staging buffers: enough
/// that applications moving large buffers again and again (benchmarks,
/// streaming) reuse their staging memory instead of allocating and
/// faulting it in for every transfer.
const STAGING_KEEP: u64 = 512 * 1024 * 1024;

impl Default for StagingPool {
    fn default() -> Self {
        StagingPool {
            free: Mutex::new(std::collections::VecDeque::new()),
        }
    }
}

impl StagingPool {
    pub fn take(
        &self,
        device: &Arc<LogicalDevice>,
        size: u64,
        usage: BufferUse,
    ) -> Result<DeviceBuffer, vk::Result> {
        let class = size.max(STAGING_MIN).next_power_of_two();
        {
            let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = free
                .iter()
                .position(|b| b.size == class && b.usage == usage)
            {
                return Ok(free.remove(i).expect("index in range"));
            }
        }
        log::debug!(target: "vkcl::memory", "new {usage:?} staging buffer of {class} bytes");
        DeviceBuffer::new(device, class, usage)
    }

    /// Lets go of every idle buffer (before the device goes).
    pub fn clear(&self) {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Keeps `buffer` for reuse, the most recently used first: older idle
    /// buffers go where they would take the pool over `STAGING_KEEP`
    /// (or over `buffer`'s own size, when that alone is larger: the next
    /// transfer is likely the same again, such as maps of one large buffer).
    pub fn give_back(&self, buffer: DeviceBuffer) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let limit = STAGING_KEEP.max(buffer.size);
        let mut kept = buffer.size;
        free.push_front(buffer);
        let mut n = 1;
        while n < free.len() && kept + free[n].size <= limit {
            kept += free[n].size;
            n += 1;
        }
        free.truncate(n);
    }
}
