//! Sharing with other APIs through file descriptors: binary semaphores
//! (VK_KHR_external_semaphore_fd) and device memory
//! (VK_KHR_external_memory_fd), for cl_khr_external_semaphore and
//! cl_khr_external_memory.

use std::sync::Arc;

use ash::vk;

use crate::core::census::{self, Kind};
use crate::vk::device::LogicalDevice;

/// The semaphore handle kinds vkcl knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SemaphoreHandle {
    /// A driver's own file descriptor for the semaphore: exported and
    /// imported permanently, the payload shared.
    OpaqueFd,
    /// A Linux sync file: a snapshot of one signal, imported temporarily.
    SyncFd,
}

impl SemaphoreHandle {
    pub const ALL: [SemaphoreHandle; 2] = [SemaphoreHandle::OpaqueFd, SemaphoreHandle::SyncFd];

    pub fn flags(self) -> vk::ExternalSemaphoreHandleTypeFlags {
        match self {
            SemaphoreHandle::OpaqueFd => vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD,
            SemaphoreHandle::SyncFd => vk::ExternalSemaphoreHandleTypeFlags::SYNC_FD,
        }
    }
}

/// What a physical device can share through file descriptors.
#[derive(Clone, Debug, Default)]
pub struct ExternalCaps {
    /// Binary semaphore handles it can import.
    pub semaphore_import: Vec<SemaphoreHandle>,
    /// Binary semaphore handles it can export.
    pub semaphore_export: Vec<SemaphoreHandle>,
    /// It can import opaque file descriptors of memory as storage buffers.
    pub memory_import: bool,
}

/// The usage of buffers made on imported memory: what every vkcl buffer
/// has, less texel views (1D image buffers are not made on it).
pub const IMPORTED_BUFFER_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw()
        | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS.as_raw(),
);

impl ExternalCaps {
    /// Asks the driver, where the device has the extensions.
    ///
    /// # Safety
    /// `pd` comes from `instance`, a Vulkan 1.1 or later instance.
    pub unsafe fn query(
        instance: &ash::Instance,
        pd: vk::PhysicalDevice,
        has_semaphore_fd: bool,
        has_memory_fd: bool,
    ) -> ExternalCaps {
        let mut caps = ExternalCaps::default();
        if has_semaphore_fd {
            for kind in SemaphoreHandle::ALL {
                let info =
                    vk::PhysicalDeviceExternalSemaphoreInfo::default().handle_type(kind.flags());
                let mut props = vk::ExternalSemaphoreProperties::default();
                // SAFETY: a plain query on a valid physical device.
                unsafe {
                    instance
                        .get_physical_device_external_semaphore_properties(pd, &info, &mut props)
                };
                let features = props.external_semaphore_features;
                if features.contains(vk::ExternalSemaphoreFeatureFlags::IMPORTABLE) {
                    caps.semaphore_import.push(kind);
                }
                if features.contains(vk::ExternalSemaphoreFeatureFlags::EXPORTABLE) {
                    caps.semaphore_export.push(kind);
                }
            }
        }
        if has_memory_fd {
            let info = vk::PhysicalDeviceExternalBufferInfo::default()
                .usage(IMPORTED_BUFFER_USAGE)
                .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
            let mut props = vk::ExternalBufferProperties::default();
            // SAFETY: a plain query on a valid physical device.
            unsafe {
                instance.get_physical_device_external_buffer_properties(pd, &info, &mut props)
            };
            caps.memory_import = props
                .external_memory_properties
                .external_memory_features
                .contains(vk::ExternalMemoryFeatureFlags::IMPORTABLE);
        }
        caps
    }
}

/// A binary Vulkan semaphore that can travel to or come from another API.
/// Commands that signal or wait for it keep it alive until they complete.
pub struct BinarySemaphore {
    device: Arc<LogicalDevice>,
    pub raw: vk::Semaphore,
}

impl BinarySemaphore {
    /// A new semaphore, exportable as `export` (which may be empty).
    pub fn new(
        device: &Arc<LogicalDevice>,
        export: vk::ExternalSemaphoreHandleTypeFlags,
    ) -> Result<BinarySemaphore, vk::Result> {
        let mut exportable = vk::ExportSemaphoreCreateInfo::default().handle_types(export);
        let mut info = vk::SemaphoreCreateInfo::default();
        if !export.is_empty() {
            info = info.push_next(&mut exportable);
        }
        // SAFETY: valid device; the export types were reported exportable.
        let raw = unsafe { device.raw.create_semaphore(&info, None)? };
        census::add(Kind::Semaphores, 1);
        Ok(BinarySemaphore {
            device: device.clone(),
            raw,
        })
    }

    /// Gives the semaphore the payload behind `fd`: for good for an opaque
    /// descriptor, until the next wait for a sync file. The semaphore owns
    /// `fd` once this succeeds; the caller still owns it after an error.
    pub fn import(&self, kind: SemaphoreHandle, fd: i32) -> Result<(), vk::Result> {
        let ext = self
            .device
            .semaphore_fd
            .as_ref()
            .ok_or(vk::Result::ERROR_FEATURE_NOT_PRESENT)?;
        let flags = match kind {
            SemaphoreHandle::OpaqueFd => vk::SemaphoreImportFlags::empty(),
            SemaphoreHandle::SyncFd => vk::SemaphoreImportFlags::TEMPORARY,
        };
        let info = vk::ImportSemaphoreFdInfoKHR::default()
            .semaphore(self.raw)
            .flags(flags)
            .handle_type(kind.flags())
            .fd(fd);
        // SAFETY: a semaphore of this device that no pending operation
        // uses (the caller's contract for re-imports), and a descriptor of
        // the kind named.
        unsafe { ext.import_semaphore_fd(&info) }
    }

    /// A new file descriptor for the semaphore, which the caller owns. A
    /// sync file takes the semaphore's pending signal, as a wait would.
    pub fn export(&self, kind: SemaphoreHandle) -> Result<i32, vk::Result> {
        let ext = self
            .device
            .semaphore_fd
            .as_ref()
            .ok_or(vk::Result::ERROR_FEATURE_NOT_PRESENT)?;
        let info = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(self.raw)
            .handle_type(kind.flags());
        // SAFETY: a semaphore of this device made exportable as `kind`.
        unsafe { ext.get_semaphore_fd(&info) }
    }
}

impl Drop for BinarySemaphore {
    fn drop(&mut self) {
        let Some(_driver) = self.device.destroyable() else {
            return; // work the watchdog gave up on may still use it, or the process is exiting
        };
        // SAFETY: commands that signal or wait for it hold a reference
        // until they complete, so nothing pending uses it.
        unsafe { self.device.raw.destroy_semaphore(self.raw, None) };
        census::remove(Kind::Semaphores, 1);
    }
}

/// Whether `fd` is an open file descriptor of this process. Drivers take
/// the descriptors they import on trust (an import of a closed one may
/// even succeed), so callers check first.
#[cfg(unix)]
pub fn is_open_fd(fd: i32) -> bool {
    // SAFETY: F_GETFD reads the descriptor's flags and changes nothing.
    fd >= 0 && unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1
}

/// Elsewhere no driver shares through file descriptors.
#[cfg(not(unix))]
pub fn is_open_fd(_fd: i32) -> bool {
    false
}

/// A new descriptor for what `fd` refers to.
#[cfg(unix)]
fn duplicate(fd: i32) -> Option<i32> {
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor and changes nothing.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    (copy >= 0).then_some(copy)
}

#[cfg(not(unix))]
fn duplicate(_fd: i32) -> Option<i32> {
    None
}

/// Whether descriptors `a` and `b` are one open file of this process (a
/// descriptor and its duplicate are; two opens of one file, such as a
/// driver's device file, are not, though they name the same inode). Some
/// false also where `a` is closed; None where the kernel cannot tell
/// (kcmp(2) missing or forbidden).
#[cfg(target_os = "linux")]
fn same_open_file(a: i32, b: i32) -> Option<bool> {
    const KCMP_FILE: libc::c_long = 0;
    // SAFETY: getpid has no preconditions; kcmp only compares two
    // descriptors of this process and changes nothing.
    let r = unsafe {
        let pid = libc::c_long::from(libc::getpid());
        libc::syscall(
            libc::SYS_kcmp,
            pid,
            pid,
            KCMP_FILE,
            libc::c_long::from(a),
            libc::c_long::from(b),
        )
    };
    match r {
        0 => Some(true),
        r if r > 0 => Some(false),
        _ => match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EBADF) => Some(false),
            _ => None,
        },
    }
}

#[cfg(not(target_os = "linux"))]
fn same_open_file(_a: i32, _b: i32) -> Option<bool> {
    None
}

/// Closes a descriptor of the caller's (one whose import is bound).
#[cfg(unix)]
pub fn close(fd: i32) {
    // SAFETY: a descriptor this function owns.
    unsafe { libc::close(fd) };
}

#[cfg(not(unix))]
pub fn close(_fd: i32) {}

/// Memory imported from an opaque file descriptor (see [`import_memory`]),
/// bound to a new buffer of `size` bytes: `(buffer, memory)`. The memory
/// owns `fd` once this succeeds; the caller still owns it after an error.
pub fn import_buffer_memory(
    device: &LogicalDevice,
    fd: i32,
    size: u64,
) -> Result<(vk::Buffer, vk::DeviceMemory), vk::Result> {
    if !device.memory_fd {
        return Err(vk::Result::ERROR_FEATURE_NOT_PRESENT);
    }
    let d = &device.raw;
    let mut external = vk::ExternalMemoryBufferCreateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let info = vk::BufferCreateInfo::default()
        .size(size.max(1))
        .usage(IMPORTED_BUFFER_USAGE)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .push_next(&mut external);
    // SAFETY: valid device and create info.
    let raw = unsafe { d.create_buffer(&info, None)? };
    // SAFETY: `raw` was just created on this device.
    let req = unsafe { d.get_buffer_memory_requirements(raw) };
    let bound = import_memory(device, fd, req, size, None).and_then(|memory| {
        // SAFETY: memory of this device, large enough for the buffer.
        match unsafe { d.bind_buffer_memory(raw, memory, 0) } {
            Ok(()) => Ok(memory),
            Err(e) => {
                // SAFETY: unused; the descriptor went with the memory.
                unsafe { d.free_memory(memory, None) };
                Err(e)
            }
        }
    });
    match bound {
        Ok(memory) => {
            close(fd);
            Ok((raw, memory))
        }
        Err(e) => {
            // SAFETY: the buffer is unused.
            unsafe { d.destroy_buffer(raw, None) };
            Err(e)
        }
    }
}

/// Imports `fd`, an opaque descriptor of memory another API allocated, as
/// memory for a resource with the requirements `req` (at least `size`
/// bytes). The descriptor names neither the exporter's memory type nor
/// its size, so each memory type the resource allows is tried, device-local
/// first, with a copy of the descriptor (a driver may close what it
/// refused). `image`: the memory is for an image (a buffer's is reachable
/// through device addresses), and, with `true`, a dedicated allocation of
/// it, as the exporter's was for an image that requires one. `fd` itself
/// stays the caller's, to close (with [`close`]) once the memory is bound.
pub fn import_memory(
    device: &LogicalDevice,
    fd: i32,
    req: vk::MemoryRequirements,
    size: u64,
    image: Option<(vk::Image, bool)>,
) -> Result<vk::DeviceMemory, vk::Result> {
    let d = &device.raw;
    let props = &device.memory_props;
    let allowed = |t: u32| req.memory_type_bits & (1 << t) != 0;
    let local = |t: u32| {
        props.memory_types[t as usize]
            .property_flags
            .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
    };
    let order = (0..props.memory_type_count)
        .filter(|&t| allowed(t) && local(t))
        .chain((0..props.memory_type_count).filter(|&t| allowed(t) && !local(t)));
    let mut last = vk::Result::ERROR_INVALID_EXTERNAL_HANDLE;
    for memory_type in order {
        let Some(copy) = duplicate(fd) else {
            last = vk::Result::ERROR_INVALID_EXTERNAL_HANDLE;
            break;
        };
        let mut import = vk::ImportMemoryFdInfoKHR::default()
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD)
            .fd(copy);
        let mut address_flags =
            vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let mut only_for = vk::MemoryDedicatedAllocateInfo::default();
        let mut alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size.max(size))
            .memory_type_index(memory_type)
            .push_next(&mut import);
        match image {
            None => alloc = alloc.push_next(&mut address_flags),
            Some((raw, true)) => {
                only_for = only_for.image(raw);
                alloc = alloc.push_next(&mut only_for);
            }
            Some((_, false)) => {}
        }
        // SAFETY: an import of a descriptor the caller owns, into a memory
        // type the resource allows.
        match unsafe { d.allocate_memory(&alloc, None) } {
            Ok(memory) => {
                log::debug!(target: "vkcl::memory", "memory type {memory_type} took the imported descriptor ({} bytes)", req.size.max(size));
                return Ok(memory);
            }
            Err(e) => {
                // The copy is still the caller's (here: this function's)
                // after a refused import, but NVIDIA's driver closes it,
                // and its number may then be a file of the driver's own
                // already, perhaps of the same inode (files opened on one
                // device node share it): it is closed only while it is
                // still the open file `fd` is, and left open where that
                // cannot be told.
                match same_open_file(copy, fd) {
                    Some(true) => close(copy),
                    Some(false) => {
                        log::debug!(target: "vkcl::memory", "the driver closed the descriptor it refused")
                    }
                    None => {
                        log::debug!(target: "vkcl::memory", "descriptor {copy}, which the driver refused, is left open: whether it is still the imported file cannot be told here")
                    }
                }
                log::debug!(target: "vkcl::memory", "memory type {memory_type} refused the imported descriptor ({} bytes): {e}", req.size.max(size));
                last = e;
            }
        }
    }
    log::debug!(target: "vkcl::memory", "no memory type took the imported descriptor: {last}");
    Err(last)
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::fd::AsRawFd;

    use super::{duplicate, same_open_file};

    /// Two opens of one file name the same inode but are not one open
    /// file: a descriptor number a driver closed and reused for a file of
    /// its own on the same device node is told from the copy it was. The
    /// copy itself is.
    #[test]
    fn a_reused_descriptor_number_is_told_from_the_copy_it_was() {
        let first = std::fs::File::open("/dev/null").unwrap();
        let fd = first.as_raw_fd();
        let copy = duplicate(fd).unwrap();
        let Some(same) = same_open_file(copy, fd) else {
            eprintln!("skipped: the kernel cannot compare open files here");
            return;
        };
        assert!(same);
        // SAFETY: `copy` is this test's.
        unsafe { libc::close(copy) };
        assert_eq!(same_open_file(copy, fd), Some(false));
        let second = std::fs::File::open("/dev/null").unwrap();
        let reused = second.as_raw_fd();
        assert_eq!(same_open_file(reused, fd), Some(false));
    }
}
