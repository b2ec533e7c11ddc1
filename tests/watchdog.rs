//! A device that finishes nothing for longer than `VKCL_WATCHDOG` is taken
//! as hung: the kernel's event ends in an error, waits return, and later
//! commands on the device fail with CL_OUT_OF_RESOURCES. Some GPU drivers
//! neither end nor report a kernel that stores through a wild pointer;
//! here a kernel that runs for long stands in for one, with a watchdog of
//! one second.

mod common;

use std::ptr::{null, null_mut};
use std::time::{Duration, Instant};

use common::*;
use opencl_sys::*;

/// Long enough to outlast the watchdog on any host: `n` dependent steps
/// for each of a million work-items (one loop of fewer than 65536
/// iterations, which llvmpipe runs in full).
const LONG: &str = "kernel void long_kernel(global uint *out, uint n) {
    uint x = get_global_id(0);
    for (uint i = 0; i < n; i++)
        x = x * 1664525u + 1013904223u + i;
    out[get_global_id(0) & 63] = x;
}";

/// What the context's callback was told.
static NOTES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

extern "C" fn note(
    errinfo: *const std::ffi::c_char,
    _private: *const std::ffi::c_void,
    _size: usize,
    _user: *mut std::ffi::c_void,
) {
    // SAFETY: vkcl passes a NUL-terminated message.
    let text = unsafe { std::ffi::CStr::from_ptr(errinfo) };
    NOTES
        .lock()
        .unwrap()
        .push(text.to_string_lossy().into_owned());
}

#[test]
fn a_device_that_finishes_nothing_is_taken_as_hung() {
    // SAFETY: set before vkcl first reads them, while no other thread of
    // this test binary (one test) reads the environment.
    unsafe {
        std::env::set_var("VKCL_WATCHDOG", "1");
        std::env::set_var("VKCL_BREADCRUMBS", "1");
    }
    let cl = direct();
    let d = cl.device();
    let mut err = 1;
    // SAFETY: one device; `note` lives for the whole program.
    let c = unsafe { cl.clCreateContext.unwrap()(null(), 1, &d, Some(note), null_mut(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let mut s = Setup::on(cl, c);
    let k = s.kernel(LONG, "long_kernel", "");
    let out = s.zeroed(64 * 4);
    s.arg(k, 0, &out);
    s.arg(k, 1, &60_000u32);
    let start = Instant::now();
    let event = s.launch(k, &[1 << 20]);
    let finished = s
        .finish_within(Duration::from_secs(60))
        .expect("clFinish returns once the watchdog runs out");
    let status = cl.event_status(event);
    eprintln!(
        "clFinish: {finished} after {:.1} s; the kernel's event: {status}",
        start.elapsed().as_secs_f64()
    );
    assert!(
        status < 0,
        "the kernel outlasting the watchdog ends in an error: {status}"
    );
    // The breadcrumbs name the kernel the device was running.
    let notes = NOTES.lock().unwrap().clone();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("the device was running kernel long_kernel")),
        "the context is told which kernel hung: {notes:?}"
    );
    let mut e2 = null_mut();
    // SAFETY: as above.
    let r = unsafe { cl.clEnqueueMarkerWithWaitList.unwrap()(s.q, 0, null(), &mut e2) };
    assert_eq!(r, CL_OUT_OF_RESOURCES, "a command after the device hung");
    // Nor does an image, whose layout the device sets when it is made.
    let format = cl_image_format {
        image_channel_order: CL_RGBA,
        image_channel_data_type: CL_UNORM_INT8,
    };
    let desc = image_desc(CL_MEM_OBJECT_IMAGE2D, 16, 16, 0, 0);
    let mut err = 1;
    // SAFETY: valid format and descriptor; no host pointer.
    let image = unsafe {
        cl.clCreateImage.unwrap()(s.c, CL_MEM_READ_WRITE, &format, &desc, null_mut(), &mut err)
    };
    assert!(image.is_null());
    assert_eq!(err, CL_OUT_OF_RESOURCES, "an image after the device hung");
    // SAFETY: released once; the Setup releases the rest.
    unsafe { cl.clReleaseEvent.unwrap()(event) };
}
