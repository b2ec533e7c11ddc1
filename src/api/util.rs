//! What every entry point shares: panic containment, error reporting, the
//! `clGet*Info` size/value protocol and careful reads of application memory.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use opencl_sys::*;

use std::sync::Arc;

use crate::core::context::Context;
use crate::core::error::{ClError, ClResult, err};
use crate::core::event::Event;
use crate::core::object::Handle;
use crate::core::queue::Queue;

/// Runs the body of an entry point that returns a `cl_int`. A panic never
/// crosses the C ABI: it is logged and reported as `CL_OUT_OF_RESOURCES`.
pub fn api_call(name: &str, body: impl FnOnce() -> ClResult<()>) -> cl_int {
    let Some(trace) = crate::core::trace::tracer() else {
        return run_call(name, body);
    };
    let start = crate::core::event::host_time_ns();
    let code = run_call(name, body);
    let args = if code == CL_SUCCESS {
        String::new()
    } else {
        format!(r#""error":{code}"#)
    };
    trace.host(
        "api",
        name,
        start,
        crate::core::event::host_time_ns(),
        &args,
    );
    code
}

fn run_call(name: &str, body: impl FnOnce() -> ClResult<()>) -> cl_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => CL_SUCCESS,
        Ok(Err(e)) => {
            log::debug!(target: "vkcl::api", "{name}: {e}");
            e.0
        }
        Err(_) => {
            log::error!(target: "vkcl::api", "{name}: internal error (panic), reporting CL_OUT_OF_RESOURCES");
            CL_OUT_OF_RESOURCES
        }
    }
}

/// Runs the body of an entry point that returns a pointer and reports its
/// status through `errcode_ret`; on error the pointer is null.
///
/// # Safety
/// `errcode_ret` is null or valid for a write.
pub unsafe fn api_create<T>(
    name: &str,
    errcode_ret: *mut cl_int,
    body: impl FnOnce() -> ClResult<*mut T>,
) -> *mut T {
    let mut result = std::ptr::null_mut();
    let code = api_call(name, || {
        result = body()?;
        Ok(())
    });
    // SAFETY: the caller passes null or a writable cl_int.
    unsafe { write_out(errcode_ret, code) };
    if code == CL_SUCCESS {
        result
    } else {
        std::ptr::null_mut()
    }
}

/// An entry point whose feature vkcl does not offer (or not yet): the error
/// the specification gives for an unsupported feature, and a log line.
pub fn unsupported(name: &str) -> cl_int {
    log::warn!(target: "vkcl::api", "{name}: not supported by vkcl, returning CL_INVALID_OPERATION");
    CL_INVALID_OPERATION
}

/// [`unsupported`] for entry points that return an object.
///
/// # Safety
/// `errcode_ret` is null or valid for a write.
pub unsafe fn unsupported_obj<T>(name: &str, errcode_ret: *mut cl_int) -> *mut T {
    let code = unsupported(name);
    // SAFETY: null or writable, per the caller.
    unsafe { write_out(errcode_ret, code) };
    std::ptr::null_mut()
}

/// [`unsupported`] for entry points that return a plain pointer.
pub fn unsupported_ptr(name: &str) -> *mut c_void {
    unsupported(name);
    std::ptr::null_mut()
}

/// [`unsupported`] for entry points that return nothing.
pub fn unsupported_void(name: &str) {
    unsupported(name);
}

/// Writes `value` through `ptr` when the application passed one.
///
/// # Safety
/// `ptr` is null or valid for a write of `T`.
pub unsafe fn write_out<T>(ptr: *mut T, value: T) {
    if !ptr.is_null() {
        // SAFETY: non-null, and the caller vouches for validity.
        unsafe { ptr.write_unaligned(value) };
    }
}

/// Views `count` elements at `ptr`; a null pointer with a non-zero count is
/// `CL_INVALID_VALUE`.
///
/// # Safety
/// When non-null, `ptr` points to `count` readable elements.
pub unsafe fn slice_in<'a, T>(ptr: *const T, count: usize) -> ClResult<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return err(CL_INVALID_VALUE);
    }
    // SAFETY: checked non-null; the caller vouches for the length.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) })
}

/// Writes a list the two-call way: `count_ret` gets the full length, `out`
/// (of capacity `capacity`) the first elements.
///
/// # Safety
/// `out` is null or valid for `capacity` writes; `count_ret` null or writable.
pub unsafe fn write_list<T: Copy>(
    items: &[T],
    capacity: u32,
    out: *mut T,
    count_ret: *mut cl_uint,
) {
    if !out.is_null() {
        for (i, item) in items.iter().take(capacity as usize).enumerate() {
            // SAFETY: i < capacity, which the caller vouches for.
            unsafe { out.add(i).write_unaligned(*item) };
        }
    }
    // SAFETY: null or writable, per the caller.
    unsafe { write_out(count_ret, items.len() as cl_uint) };
}

/// Reads an event wait list: both or neither of count and pointer, every
/// event valid and of `context`.
///
/// # Safety
/// `list` is null or points to `num` handles.
pub unsafe fn wait_list(
    context: &Arc<Handle<Context>>,
    num: cl_uint,
    list: *const cl_event,
) -> ClResult<Vec<Arc<Handle<Event>>>> {
    if (num == 0) != list.is_null() {
        return err(CL_INVALID_EVENT_WAIT_LIST);
    }
    // SAFETY: checked non-null when num > 0; the caller vouches for num.
    let raw = unsafe { slice_in(list, num as usize)? };
    let mut events = Vec::with_capacity(raw.len());
    for &e in raw {
        let ev = Handle::<Event>::from_raw(e).map_err(|_| ClError(CL_INVALID_EVENT_WAIT_LIST))?;
        if !Arc::ptr_eq(&ev.context, context) {
            return err(CL_INVALID_CONTEXT);
        }
        events.push(ev);
    }
    Ok(events)
}

/// For blocking commands: a failed event in the wait list is reported
/// before anything is enqueued.
pub fn check_wait_list_ok(events: &[Arc<Handle<Event>>]) -> ClResult<()> {
    if events.iter().any(|e| e.status() < 0) {
        return err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    }
    Ok(())
}

/// Hands an event to the application if it asked for one.
///
/// # Safety
/// `out` is null or writable.
pub unsafe fn out_event(out: *mut cl_event, event: Arc<Handle<Event>>) {
    if !out.is_null() {
        // SAFETY: non-null and writable, per the caller.
        unsafe { out.write(Handle::into_api(event)) };
    }
}

/// Waits for a command of `queue` (flushing it first); a failed command
/// is CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST.
pub fn block_on(queue: &Arc<Handle<Queue>>, event: &Arc<Handle<Event>>) -> ClResult<()> {
    queue.flush()?;
    if event.wait() < 0 {
        return err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    }
    Ok(())
}

/// Plain data that can be answered byte for byte by a `clGet*Info` query.
///
/// # Safety
/// Implementors have no padding and no invalid bit patterns.
pub unsafe trait Pod: Copy {}

macro_rules! pod {
    ($($t:ty),*) => { $(unsafe impl Pod for $t {})* };
}
pod!(u8, i8, u16, i16, u32, i32, u64, i64, usize, isize);
// SAFETY: a pointer is a plain address for the purposes of a query answer.
unsafe impl<T> Pod for *mut T {}
// SAFETY: repr(C) structs of u32 and c_char arrays, no padding.
unsafe impl Pod for cl_name_version {}
// SAFETY: arrays of plain data are plain data.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// A value in the form a `clGet*Info` query returns it.
pub trait InfoValue {
    fn info_bytes(&self) -> Vec<u8>;
}

fn pod_bytes<T: Pod>(items: &[T]) -> Vec<u8> {
    // SAFETY: `Pod` types are plain bytes without padding.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items)) }
        .to_vec()
}

impl<T: Pod> InfoValue for T {
    fn info_bytes(&self) -> Vec<u8> {
        pod_bytes(std::slice::from_ref(self))
    }
}

impl<T: Pod> InfoValue for Vec<T> {
    fn info_bytes(&self) -> Vec<u8> {
        pod_bytes(self)
    }
}

impl<T: Pod> InfoValue for &[T] {
    fn info_bytes(&self) -> Vec<u8> {
        pod_bytes(self)
    }
}

impl InfoValue for bool {
    fn info_bytes(&self) -> Vec<u8> {
        (if *self { CL_TRUE } else { CL_FALSE }).info_bytes()
    }
}

impl InfoValue for &str {
    fn info_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len() + 1);
        v.extend_from_slice(self.as_bytes());
        v.push(0);
        v
    }
}

impl InfoValue for String {
    fn info_bytes(&self) -> Vec<u8> {
        self.as_str().info_bytes()
    }
}

/// The answer to one query.
pub type Info = ClResult<Vec<u8>>;

/// Shorthand for a query arm: `CL_DEVICE_NAME => info(name)`.
pub fn info(value: impl InfoValue) -> Info {
    Ok(value.info_bytes())
}

/// The `clGet*Info` protocol, written once: `param_value` (if given) must be
/// large enough; `param_value_size_ret` (if given) gets the real size.
///
/// # Safety
/// `param_value` is null or valid for `param_value_size` bytes;
/// `param_value_size_ret` is null or writable.
pub unsafe fn write_info(
    answer: Info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> ClResult<()> {
    let bytes = answer?;
    if !param_value.is_null() {
        if param_value_size < bytes.len() {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: the caller vouches for param_value_size bytes, and the
        // answer is no longer than that.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), param_value.cast::<u8>(), bytes.len())
        };
    }
    // SAFETY: null or writable, per the caller.
    unsafe { write_out(param_value_size_ret, bytes.len()) };
    Ok(())
}

/// A `cl_name_version` entry.
pub fn name_version(name: &str, version: cl_version) -> cl_name_version {
    let mut nv = cl_name_version {
        version,
        name: [0; CL_NAME_VERSION_MAX_NAME_SIZE],
    };
    for (dst, src) in nv
        .name
        .iter_mut()
        .zip(name.bytes().take(CL_NAME_VERSION_MAX_NAME_SIZE - 1))
    {
        *dst = src as _;
    }
    nv
}

/// Rejects an unknown query parameter.
pub fn invalid_param(param: cl_uint) -> Info {
    log::debug!(target: "vkcl::api", "unknown query parameter 0x{param:x}");
    Err(ClError(CL_INVALID_VALUE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_protocol() {
        let mut size = 0usize;
        // Size only.
        unsafe { write_info(info("abc"), 0, std::ptr::null_mut(), &mut size) }.unwrap();
        assert_eq!(size, 4);
        // Too small a buffer.
        let mut buf = [0u8; 3];
        let r = unsafe { write_info(info("abc"), 3, buf.as_mut_ptr().cast(), &mut size) };
        assert_eq!(r, Err(ClError(CL_INVALID_VALUE)));
        // Exactly right.
        let mut buf = [0u8; 4];
        unsafe {
            write_info(
                info("abc"),
                4,
                buf.as_mut_ptr().cast(),
                std::ptr::null_mut(),
            )
        }
        .unwrap();
        assert_eq!(&buf, b"abc\0");
        assert_eq!(true.info_bytes(), CL_TRUE.to_ne_bytes());
        assert_eq!(vec![1u64, 2].info_bytes().len(), 16);
    }

    #[test]
    fn panics_stay_inside() {
        assert_eq!(api_call("test", || panic!("boom")), CL_OUT_OF_RESOURCES);
        assert_eq!(api_call("test", || err(CL_INVALID_VALUE)), CL_INVALID_VALUE);
        let mut code = 0;
        let p: *mut u8 = unsafe { api_create("test", &mut code, || err(CL_INVALID_CONTEXT)) };
        assert!(p.is_null());
        assert_eq!(code, CL_INVALID_CONTEXT);
    }

    #[test]
    fn name_versions_are_truncated_and_terminated() {
        let nv = name_version(&"x".repeat(100), 7);
        assert_eq!(nv.version, 7);
        assert_eq!(nv.name[62], b'x' as _);
        assert_eq!(nv.name[63], 0);
    }
}
