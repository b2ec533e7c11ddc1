//! OpenCL contexts.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use opencl_sys::*;

use crate::core::device::Device;
use crate::core::error::{ClResult, err};
use crate::core::object::{Callback, ClObject, Handle};
use crate::core::platform::platform;

pub type ContextNotify = unsafe extern "C" fn(*const c_char, *const c_void, usize, *mut c_void);
pub type ContextDestructor = unsafe extern "C" fn(cl_context, *mut c_void);

pub struct Context {
    pub devices: Vec<Arc<Handle<Device>>>,
    /// The property list as the application passed it, terminator included;
    /// empty when it passed none.
    pub properties: Vec<cl_context_properties>,
    pub interop_user_sync: bool,
    notify: Option<Callback<ContextNotify>>,
    destructors: Mutex<Vec<Callback<ContextDestructor>>>,
    /// Shared virtual memory allocated in this context.
    pub svm: crate::core::svm::SvmAllocations,
    /// The default on-device queue of each device that has one
    /// (`CL_QUEUE_ON_DEVICE_DEFAULT`, clSetDefaultDeviceCommandQueue);
    /// the application's references keep it.
    pub default_device_queues: Mutex<Vec<std::sync::Weak<Handle<crate::core::queue::Queue>>>>,
}

impl ClObject for Context {
    const INVALID: i32 = CL_INVALID_CONTEXT;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Contexts);

    fn on_destroy(&self, handle: *mut c_void) {
        let callbacks =
            std::mem::take(&mut *self.destructors.lock().unwrap_or_else(|e| e.into_inner()));
        // Most recently registered first, as the specification requires.
        for cb in callbacks.into_iter().rev() {
            // SAFETY: the application registered this function for exactly
            // this call; the handle is only passed back, never used again.
            unsafe { (cb.func)(handle as cl_context, cb.user_data) };
        }
    }
}

/// Parsed `cl_context_properties`.
pub struct ContextProperties {
    pub raw: Vec<cl_context_properties>,
    pub interop_user_sync: bool,
}

impl ContextProperties {
    /// Reads a zero-terminated property list.
    ///
    /// # Safety
    /// `props` is null or points to a zero-terminated list of pairs.
    pub unsafe fn parse(props: *const cl_context_properties) -> ClResult<Self> {
        let mut out = ContextProperties {
            raw: Vec::new(),
            interop_user_sync: false,
        };
        if props.is_null() {
            return Ok(out);
        }
        let mut seen = Vec::new();
        let mut i = 0;
        loop {
            // SAFETY: the caller promises a zero-terminated list.
            let name = unsafe { *props.add(i) };
            out.raw.push(name);
            if name == 0 {
                break;
            }
            // SAFETY: a non-zero name is followed by its value.
            let value = unsafe { *props.add(i + 1) };
            out.raw.push(value);
            i += 2;
            if seen.contains(&name) {
                return err(CL_INVALID_PROPERTY);
            }
            seen.push(name);
            match name {
                CL_CONTEXT_PLATFORM => {
                    let p = platform();
                    if value != Handle::as_raw::<c_void>(p) as cl_context_properties {
                        return err(CL_INVALID_PLATFORM);
                    }
                }
                CL_CONTEXT_INTEROP_USER_SYNC => match value as cl_uint {
                    CL_TRUE => out.interop_user_sync = true,
                    CL_FALSE => out.interop_user_sync = false,
                    _ => return err(CL_INVALID_PROPERTY),
                },
                _ => return err(CL_INVALID_PROPERTY),
            }
        }
        Ok(out)
    }
}

impl Context {
    pub fn new(
        devices: Vec<Arc<Handle<Device>>>,
        properties: ContextProperties,
        notify: Option<Callback<ContextNotify>>,
    ) -> ClResult<Arc<Handle<Context>>> {
        // Each device gets its Vulkan device now, so that a device that
        // cannot be opened fails here rather than at the first command.
        for d in &devices {
            d.logical()?;
        }
        Ok(Handle::new(Context {
            devices,
            properties: properties.raw,
            interop_user_sync: properties.interop_user_sync,
            notify,
            destructors: Mutex::new(Vec::new()),
            svm: Default::default(),
            default_device_queues: Mutex::new(Vec::new()),
        }))
    }

    /// The default on-device queue of device `d`, while it lives.
    pub fn default_device_queue(
        &self,
        d: &Arc<Handle<Device>>,
    ) -> Option<Arc<Handle<crate::core::queue::Queue>>> {
        let queues = self
            .default_device_queues
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        queues
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .find(|q| Arc::ptr_eq(&q.device, d) && q.api_ref_count() > 0)
    }

    /// Makes on-device queue `q` its device's default.
    pub fn set_default_device_queue(&self, q: &Arc<Handle<crate::core::queue::Queue>>) {
        let mut queues = self
            .default_device_queues
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        queues.retain(|w| {
            w.upgrade()
                .is_some_and(|o| !Arc::ptr_eq(&o.device, &q.device))
        });
        queues.push(Arc::downgrade(q));
    }

    /// Whether `d` is one of the context's devices.
    pub fn has_device(&self, d: &Arc<Handle<Device>>) -> bool {
        self.devices.iter().any(|x| Arc::ptr_eq(x, d))
    }

    /// The one device a property's device list names, which must be a
    /// device of the context (CL_INVALID_DEVICE otherwise, or where the
    /// list names none or several).
    pub fn one_device(&self, list: &[cl_device_id]) -> ClResult<Arc<Handle<Device>>> {
        let [one] = list[..] else {
            return err(CL_INVALID_DEVICE);
        };
        let d = Handle::<Device>::from_raw(one)?;
        if !self.has_device(&d) {
            return err(CL_INVALID_DEVICE);
        }
        Ok(d)
    }

    pub fn add_destructor(&self, cb: Callback<ContextDestructor>) {
        self.destructors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(cb);
    }

    /// Lets every device of the context record commands held back for
    /// something that moved on: an event of one device may be waited for
    /// by queues of any other.
    pub fn repump(&self) {
        for d in &self.devices {
            d.repump();
        }
    }

    /// Reports an error to the application's notify callback, if any.
    pub fn notify_error(&self, message: &str) {
        log::error!(target: "vkcl::context", "{message}");
        if let Some(cb) = &self.notify {
            let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
            // SAFETY: the application registered this callback for context
            // errors; the string lives for the duration of the call.
            unsafe { (cb.func)(text.as_ptr(), std::ptr::null(), 0, cb.user_data) };
        }
    }
}
