//! Buffer SVM. An allocation is a device buffer whose device address is
//! also the host address of its mapping, so one pointer value works on
//! both sides: pointers stored inside SVM memory (linked lists, trees)
//! stay valid for the host and for kernels.
//!
//! The memory is always host-coherent (lavapipe's memory is the host's;
//! placed mappings take a host-visible, host-coherent type), host writes
//! made before a submission reach the device, and every batch ends with a
//! barrier that makes the device's writes visible to the host. So the
//! host may read and write an allocation between commands without
//! mapping it: allocations are fine-grained buffers
//! (`CL_DEVICE_SVM_FINE_GRAIN_BUFFER`), whatever flags they were made
//! with. SVM atomics (the host and kernels updating one location at the
//! same time) are not offered.
//!
//! That identity holds on devices whose memory is the host's and whose
//! driver hands out the mapping's address as the device address (Mesa's
//! lavapipe does). Elsewhere each allocation is memory of its own, mapped
//! on the host at its device address (VK_EXT_map_memory_placed, over a
//! range reserved there first). [`Device::coarse_svm`] checks once per
//! device that one of the two works.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use opencl_sys::*;

use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::vk::device::LogicalDevice;
use crate::vk::memory::{BufferUse, DeviceBuffer};

/// The largest alignment clSVMAlloc honours.
pub const MAX_ALIGNMENT: usize = 4096;

/// One clSVMAlloc allocation.
pub struct SvmAlloc {
    pub storage: Arc<DeviceBuffer>,
    /// The pointer the application was given (host and device address).
    pub ptr: usize,
    pub size: usize,
    pub flags: cl_svm_mem_flags,
}

impl Drop for SvmAlloc {
    fn drop(&mut self) {
        crate::core::census::remove(crate::core::census::Kind::SvmAllocations, 1);
    }
}

/// A context's SVM allocations, by start address.
#[derive(Default)]
pub struct SvmAllocations {
    map: Mutex<BTreeMap<usize, Arc<SvmAlloc>>>,
}

impl SvmAllocations {
    /// The allocation holding `ptr` (its first byte to its last).
    pub fn find(&self, ptr: usize) -> Option<Arc<SvmAlloc>> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.range(..=ptr)
            .next_back()
            .map(|(_, a)| a)
            .filter(|a| ptr < a.ptr + a.size.max(1))
            .cloned()
    }

    /// Forgets the allocation starting at `ptr`; its memory goes once no
    /// command holds it.
    pub fn remove(&self, ptr: usize) -> Option<Arc<SvmAlloc>> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ptr)
    }

    fn insert(&self, a: Arc<SvmAlloc>) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(a.ptr, a);
    }
}

impl Device {
    /// Whether this device offers coarse-grained buffer SVM: its buffers'
    /// device addresses are the host addresses of their mappings.
    pub fn coarse_svm(&self) -> bool {
        *self.svm_identity.get_or_init(|| {
            let Ok(vk) = self.logical() else {
                return false;
            };
            same_address_buffer(&vk, 64).is_some()
        })
    }
}

/// A buffer whose host mapping is at its device address.
fn same_address_buffer(vk: &Arc<LogicalDevice>, size: u64) -> Option<DeviceBuffer> {
    if vk.unified_memory {
        let b = DeviceBuffer::new(vk, size, BufferUse::Device).ok()?;
        let host = b.mapped()?.as_ptr() as u64;
        return (host == b.address).then_some(b);
    }
    #[cfg(unix)]
    return DeviceBuffer::new_placed(vk, size);
    #[cfg(not(unix))]
    None
}

impl Context {
    /// clSVMAlloc, after its flags are checked: `size` bytes aligned to
    /// `alignment` (a power of two, 0 for the default).
    pub fn svm_alloc(
        &self,
        flags: cl_svm_mem_flags,
        size: usize,
        alignment: usize,
    ) -> ClResult<usize> {
        let [device] = self.devices.as_slice() else {
            // Its pointer would have to be the device address of memory on
            // several Vulkan devices at once.
            log::warn!(
                target: "vkcl::memory",
                "clSVMAlloc: SVM allocations are offered in contexts of one device only; this context has {}",
                self.devices.len()
            );
            return err(CL_INVALID_OPERATION);
        };
        if !device.coarse_svm() {
            return err(CL_INVALID_OPERATION);
        }
        if size == 0 || size as u64 > device.max_mem_alloc_size() {
            return err(CL_INVALID_VALUE);
        }
        let alignment = alignment.max(1);
        if !alignment.is_power_of_two() || alignment > MAX_ALIGNMENT {
            return err(CL_INVALID_VALUE);
        }
        let vk = device.logical()?;
        let extra = alignment.saturating_sub(crate::vk::memory::MIN_ALIGNMENT as usize);
        let storage = same_address_buffer(&vk, (size + extra) as u64)
            .ok_or(ClError(CL_MEM_OBJECT_ALLOCATION_FAILURE))?;
        let ptr = (storage.address as usize).next_multiple_of(alignment);
        crate::core::census::add(crate::core::census::Kind::SvmAllocations, 1);
        self.svm.insert(Arc::new(SvmAlloc {
            storage: Arc::new(storage),
            ptr,
            size,
            flags,
        }));
        Ok(ptr)
    }
}
