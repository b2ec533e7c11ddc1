//! OpenCL object handles.
//!
//! Every `cl_*` handle handed to an application points at a [`Handle<T>`]: a
//! `#[repr(C)]` block whose first field is the ICD dispatch table pointer, as
//! `cl_khr_icd` requires, followed by the API reference count and the object.
//! The block lives inside an `Arc`, so objects that refer to each other (a
//! queue to its context) keep each other alive with ordinary `Arc` clones.
//!
//! The API reference count (clRetain*/clRelease*) owns exactly one of those
//! `Arc`s while it is above zero. When it drops to zero the application may no
//! longer retain or release the object, but the object itself lives on until
//! the last internal reference goes, as the specification describes for a
//! context that still has command queues.
//!
//! Handles coming from an application are never dereferenced blindly: a
//! process-wide registry maps each live handle address to a weak reference, so
//! a null, stale or foreign pointer, or a handle of the wrong type, is
//! recognised and turned into the matching `CL_INVALID_*` error.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, RwLock, Weak};

use opencl_sys::cl_icd::cl_icd_dispatch;

use crate::core::error::{ClError, ClResult};

/// The object block behind every OpenCL handle.
#[repr(C)]
pub struct Handle<T: ClObject> {
    /// Must stay the first field: ICD loaders read it through the handle.
    dispatch: &'static cl_icd_dispatch,
    api_refs: AtomicU32,
    value: T,
}

type Registry = RwLock<HashMap<usize, Weak<dyn Any + Send + Sync>, AddressHash>>;

/// Hashes the registry's keys, addresses of vkcl's own allocations, with
/// one multiplication: every OpenCL call looks its handles up, and the
/// standard library's keyed hash (built against inputs chosen to collide)
/// costs more than the rest of a lookup.
#[derive(Default, Clone, Copy)]
struct AddressHash;

impl std::hash::BuildHasher for AddressHash {
    type Hasher = AddressHasher;
    fn build_hasher(&self) -> AddressHasher {
        AddressHasher(0)
    }
}

struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the product's high bits mix all of the
        // address's bits (its low ones, its alignment, carry nothing).
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        // The table picks buckets by the low bits: bring the mixed high
        // ones down.
        self.0.rotate_left(26)
    }
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// The kind of object a handle refers to, with the error code the
/// specification gives for a bad handle of that kind.
pub trait ClObject: Send + Sync + Sized + 'static {
    const INVALID: i32;
    /// What the census counts this kind under (platforms and devices,
    /// which live as long as the process, are not counted).
    const KIND: Option<crate::core::census::Kind> = None;

    /// Runs while the object is being destroyed, with the handle the
    /// application knew it by (for destructor callbacks).
    fn on_destroy(&self, _handle: *mut c_void) {}
}

impl<T: ClObject> Handle<T> {
    /// Wraps a new object with an API reference count of one and registers it.
    /// The returned `Arc` is an internal reference; the API reference is taken
    /// by [`Handle::into_api`].
    pub fn new(value: T) -> Arc<Self> {
        if let Some(k) = T::KIND {
            crate::core::census::add(k, 1);
        }
        let arc = Arc::new(Handle {
            dispatch: crate::api::icd::dispatch(),
            api_refs: AtomicU32::new(0),
            value,
        });
        let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(&arc) as _;
        registry()
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(Arc::as_ptr(&arc) as usize, weak);
        arc
    }

    /// Hands one API reference to the application and returns the raw handle.
    pub fn into_api<H>(this: Arc<Self>) -> *mut H {
        this.api_refs.fetch_add(1, Ordering::AcqRel);
        Arc::into_raw(this) as *mut H
    }

    /// The raw handle of an object, without touching any reference count.
    pub fn as_raw<H>(this: &Arc<Self>) -> *mut H {
        Arc::as_ptr(this) as *mut H
    }

    /// Looks up a handle passed by the application.
    pub fn from_raw<H>(raw: *const H) -> ClResult<Arc<Self>> {
        if raw.is_null() {
            return Err(ClError(T::INVALID));
        }
        let map = registry().read().unwrap_or_else(|e| e.into_inner());
        map.get(&(raw as usize))
            .and_then(Weak::upgrade)
            .and_then(|any| any.downcast::<Self>().ok())
            .ok_or(ClError(T::INVALID))
    }

    /// The reference count the application sees.
    pub fn api_ref_count(&self) -> u32 {
        self.api_refs.load(Ordering::Acquire)
    }

    /// clRetain*: fails for an object the application has released fully.
    pub fn retain(&self) -> ClResult<()> {
        self.api_refs
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > 0).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| ClError(T::INVALID))
    }

    /// clRelease*: drops the API's own `Arc` when the count reaches zero.
    pub fn release(this: Arc<Self>) -> ClResult<()> {
        let before = this
            .api_refs
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .map_err(|_| ClError(T::INVALID))?;
        if before == 1 {
            let raw = Arc::as_ptr(&this);
            drop(this);
            // SAFETY: while the API count was above zero it owned one strong
            // reference created by `into_api`; this gives exactly that one back.
            unsafe { Arc::decrement_strong_count(raw) };
        }
        Ok(())
    }
}

impl<T: ClObject> Deref for Handle<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: ClObject> Drop for Handle<T> {
    fn drop(&mut self) {
        if let Some(k) = T::KIND {
            crate::core::census::remove(k, 1);
        }
        let handle = self as *const Self as *mut c_void;
        self.value.on_destroy(handle);
        // The registry's weak reference keeps this block allocated, so no
        // other object can have taken the address: the entry is ours.
        let key = self as *const Self as usize;
        registry()
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
    }
}

/// An application callback and its `user_data`, which the specification
/// requires to be usable from any thread.
pub struct Callback<F> {
    pub func: F,
    pub user_data: *mut c_void,
}

// SAFETY: the OpenCL specification makes callbacks and their user_data the
// application's responsibility to be thread-safe; vkcl only passes them back.
unsafe impl<F: Send> Send for Callback<F> {}
// SAFETY: as above; vkcl never reads through user_data.
unsafe impl<F: Sync> Sync for Callback<F> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Aligned addresses, as handles are, spread over the buckets a table
    /// picks by the hash's low bits.
    #[test]
    fn aligned_addresses_hash_apart() {
        use std::hash::BuildHasher;
        let buckets: std::collections::HashSet<u64> = (0..1024u64)
            .map(|i| AddressHash.hash_one(0x5555_0000_1000 + 64 * i) & 1023)
            .collect();
        assert!(buckets.len() > 600, "{} of 1024 buckets", buckets.len());
    }

    struct Thing(u32);
    impl ClObject for Thing {
        const INVALID: i32 = -34;
    }
    struct Other;
    impl ClObject for Other {
        const INVALID: i32 = -36;
    }

    #[test]
    fn lookup_retain_release() {
        let raw: *mut c_void = Handle::into_api(Handle::new(Thing(7)));
        let obj = Handle::<Thing>::from_raw(raw).unwrap();
        assert_eq!(obj.0, 7);
        assert_eq!(obj.api_ref_count(), 1);
        obj.retain().unwrap();
        assert_eq!(obj.api_ref_count(), 2);
        // The wrong type is rejected with that type's error.
        assert_eq!(Handle::<Other>::from_raw(raw).err(), Some(ClError(-36)));
        Handle::release(obj).unwrap();
        let obj = Handle::<Thing>::from_raw(raw).unwrap();
        // An internal reference keeps the object alive past the last release.
        let internal = obj.clone();
        Handle::release(obj).unwrap();
        assert_eq!(internal.api_ref_count(), 0);
        assert!(Handle::<Thing>::from_raw(raw).is_ok());
        assert_eq!(internal.retain(), Err(ClError(-34)));
        assert_eq!(Handle::release(internal.clone()), Err(ClError(-34)));
        drop(internal);
        // Now the handle is stale.
        assert_eq!(Handle::<Thing>::from_raw(raw).err(), Some(ClError(-34)));
        assert_eq!(
            Handle::<Thing>::from_raw(std::ptr::null::<c_void>()).err(),
            Some(ClError(-34))
        );
    }
}
