//! A kernel that faults on a GPU (stores through a wild pointer) loses
//! the Vulkan device: its event ends in an error, later commands on the
//! device fail with CL_OUT_OF_RESOURCES, nothing hangs and the process
//! lives on. Where the driver neither ends nor reports the fault
//! (NVIDIA's keeps such a kernel running), vkcl's watchdog
//! (`VKCL_WATCHDOG`, 60 s on GPUs) takes the device as hung.
//!
//! Runs where `VKCL_TEST_DEVICE_FAULTS=1` (`scripts/reliability.sh` sets
//! it on GPUs). On CPU devices such as lavapipe a kernel runs on the
//! application's own threads, where a wild store is the process's own
//! crash, which no driver contains; there the test says so and passes.

mod common;

use std::ptr::{null, null_mut};
use std::time::Duration;

use common::*;
use opencl_sys::*;

const WILD: &str = "kernel void wild(global uint *ok, ulong at) {
    ok[get_global_id(0)] = 1u;
    /* Far from anything mapped, a page apart per work-item. */
    *(global volatile uint *)(at + get_global_id(0) * 4096ul) = 7u;
}";

#[test]
fn a_wild_store_loses_the_device_not_the_process() {
    if std::env::var("VKCL_TEST_DEVICE_FAULTS").as_deref() != Ok("1") {
        eprintln!("skipped: set VKCL_TEST_DEVICE_FAULTS=1 on a GPU (see the file's comment)");
        return;
    }
    let cl = direct();
    // A context made before the fault, on the same device.
    let other = Setup::new(cl);
    let mut s = Setup::new(cl);
    let k = s.kernel(WILD, "wild", "");
    let ok = s.zeroed(1024 * 4);
    s.arg(k, 0, &ok);
    // Another address to store at: VKCL_TEST_WILD_ADDRESS (hexadecimal).
    let at = std::env::var("VKCL_TEST_WILD_ADDRESS")
        .ok()
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x7f00_dead_0000);
    s.arg(k, 1, &at);
    let event = s.launch(k, &[1024]);
    // clFinish returns (whatever it says) rather than waiting for ever.
    let finished = s
        .finish_within(Duration::from_secs(
            std::env::var("VKCL_TEST_FAULT_WAIT")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(120),
        ))
        .expect("clFinish returns after a device fault");
    let status = cl.event_status(event);
    eprintln!("clFinish: {finished}; the kernel's event: {status}");
    if status == CL_COMPLETE as cl_int {
        // Some drivers drop stores outside any allocation without a fault
        // (robust buffer access): nothing was lost, and the device works.
        eprintln!("the driver did not fault on the wild stores");
        return;
    }
    assert!(
        status < 0,
        "the faulting kernel's event ends in an error: {status}"
    );
    // Later commands on the lost device fail at once.
    let mut e2 = null_mut();
    // SAFETY: as above.
    let r = unsafe { cl.clEnqueueMarkerWithWaitList.unwrap()(s.q, 0, null(), &mut e2) };
    assert_eq!(r, CL_OUT_OF_RESOURCES, "a command after the fault");
    // SAFETY: a valid queue.
    let r = unsafe { cl.clFinish.unwrap()(other.q) };
    eprintln!("clFinish on another context of the same device: {r}");
    assert!(r == CL_SUCCESS || r == CL_OUT_OF_RESOURCES);
    // SAFETY: released once; the Setups release the rest.
    unsafe { cl.clReleaseEvent.unwrap()(event) };
}
