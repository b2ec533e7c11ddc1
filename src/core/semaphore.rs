//! Binary semaphores of `cl_khr_semaphore`: a signal operation enqueued
//! on one queue releases a wait operation enqueued on the same or another
//! queue of the context.
//!
//! A semaphore is a line of signals not yet waited for and a line of
//! waits not yet signalled. A signal is a marker command; a wait is a
//! barrier that depends on the signal it takes (the oldest pending one).
//! A wait enqueued before any signal depends on a gate, an internal event
//! that completes when the next signal enqueued completes (or fails with
//! its error). So the ordering the extension requires rides on the
//! queues' own event dependencies: across queues these become Vulkan
//! timeline waits, and nothing on the host blocks.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use opencl_sys::*;

use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClResult, err};
use crate::core::event::Event;
use crate::core::object::{Callback, ClObject, Handle};
use crate::core::queue::{Ordering, Queue, Work};

#[derive(Default)]
struct Lines {
    /// Signal commands enqueued and not yet taken by a wait, oldest first.
    signals: VecDeque<Arc<Handle<Event>>>,
    /// Gates of waits enqueued while no signal was pending, oldest first.
    gates: VecDeque<Arc<Handle<Event>>>,
}

pub struct Semaphore {
    pub context: Arc<Handle<Context>>,
    /// The one device the semaphore belongs to.
    pub device: Arc<Handle<Device>>,
    /// The property list as the application passed it, terminator included.
    pub properties: Vec<cl_semaphore_properties_khr>,
    lines: Mutex<Lines>,
}

impl ClObject for Semaphore {
    const INVALID: i32 = CL_INVALID_SEMAPHORE_KHR;
    const KIND: Option<crate::core::census::Kind> =
        Some(crate::core::census::Kind::SemaphoreObjects);
}

impl Semaphore {
    /// Reads a property list: the type (binary, the only one) is required,
    /// and a device list, when given, names exactly one device of the
    /// context; without one, the context must have a single device.
    ///
    /// # Safety
    /// `props` is null or a zero-terminated list of properties.
    pub unsafe fn create(
        context: Arc<Handle<Context>>,
        props: *const cl_semaphore_properties_khr,
    ) -> ClResult<Arc<Handle<Semaphore>>> {
        if props.is_null() {
            return err(CL_INVALID_VALUE);
        }
        let mut raw = Vec::new();
        let mut seen = Vec::new();
        let mut kind = None;
        let mut devices: Option<Vec<cl_device_id>> = None;
        let mut i = 0;
        // SAFETY (reads below): the caller promises a zero-terminated list
        // whose names are followed by their values.
        let read = |at: usize| unsafe { *props.add(at) };
        loop {
            let name = read(i);
            raw.push(name);
            if name == 0 {
                break;
            }
            if seen.contains(&name) {
                return err(CL_INVALID_PROPERTY);
            }
            seen.push(name);
            i += 1;
            match name as cl_uint {
                CL_SEMAPHORE_TYPE_KHR => {
                    let value = read(i);
                    raw.push(value);
                    i += 1;
                    if value != CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr {
                        return err(CL_INVALID_VALUE);
                    }
                    kind = Some(value);
                }
                CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR => {
                    let mut list = Vec::new();
                    loop {
                        let d = read(i);
                        raw.push(d);
                        i += 1;
                        if d == CL_SEMAPHORE_DEVICE_HANDLE_LIST_END_KHR
                            as cl_semaphore_properties_khr
                        {
                            break;
                        }
                        list.push(d as cl_device_id);
                    }
                    devices = Some(list);
                }
                _ => return err(CL_INVALID_PROPERTY),
            }
        }
        if kind.is_none() {
            return err(CL_INVALID_VALUE);
        }
        let device = match devices {
            Some(list) => {
                let [one] = list[..] else {
                    return err(CL_INVALID_DEVICE);
                };
                let d = Handle::<Device>::from_raw(one)?;
                if !context.devices.iter().any(|c| Arc::ptr_eq(c, &d)) {
                    return err(CL_INVALID_DEVICE);
                }
                d
            }
            None => match &context.devices[..] {
                [one] => one.clone(),
                _ => return err(CL_INVALID_PROPERTY),
            },
        };
        Ok(Handle::new(Semaphore {
            context,
            device,
            properties: raw,
            lines: Mutex::new(Lines::default()),
        }))
    }

    /// The binary payload: 1 while a signal that has completed waits to be
    /// taken, else 0.
    pub fn payload(&self) -> cl_semaphore_payload_khr {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let signalled = lines
            .signals
            .front()
            .is_some_and(|s| s.status() == CL_COMPLETE as cl_int);
        signalled as cl_semaphore_payload_khr
    }

    /// Records `signal` (a command's event) as this semaphore's next
    /// signal: it releases the oldest waiting gate, or waits for a wait.
    fn signalled_by(&self, signal: &Arc<Handle<Event>>) {
        let gate = {
            let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
            match lines.gates.pop_front() {
                Some(g) => g,
                None => {
                    lines.signals.push_back(signal.clone());
                    return;
                }
            }
        };
        // The callback owns one reference to the gate until it runs.
        let user_data = Arc::into_raw(gate) as *mut c_void;
        signal.add_callback(
            CL_COMPLETE as cl_int,
            Callback {
                func: open_gate,
                user_data,
            },
        );
    }

    /// What a wait depends on: the oldest pending signal, or a new gate
    /// that the next signal opens.
    fn taken_by_wait(&self) -> Arc<Handle<Event>> {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = lines.signals.pop_front() {
            return s;
        }
        let gate = Event::user(self.context.clone());
        lines.gates.push_back(gate.clone());
        gate
    }
}

/// The completion callback of a signal that a wait's gate depends on.
extern "C" fn open_gate(_signal: cl_event, status: cl_int, user_data: *mut c_void) {
    // SAFETY: `user_data` is the reference `signalled_by` gave up, and
    // this callback runs once.
    let gate = unsafe { Arc::from_raw(user_data as *const Handle<Event>) };
    gate.finish(status.min(CL_COMPLETE as cl_int), None);
    gate.context.repump();
}

/// clEnqueueSignalSemaphoresKHR: a marker whose completion signals every
/// semaphore of `semaphores`.
pub fn enqueue_signal(
    queue: &Arc<Handle<Queue>>,
    semaphores: &[Arc<Handle<Semaphore>>],
    waits: Vec<Arc<Handle<Event>>>,
) -> ClResult<Arc<Handle<Event>>> {
    let event = queue.enqueue(
        CL_COMMAND_SEMAPHORE_SIGNAL_KHR,
        waits,
        Ordering::Marker,
        Work::none(),
    )?;
    for s in semaphores {
        s.signalled_by(&event);
    }
    Ok(event)
}

/// clEnqueueWaitSemaphoresKHR: a barrier on the queue that waits for a
/// signal of every semaphore of `semaphores`.
pub fn enqueue_wait(
    queue: &Arc<Handle<Queue>>,
    semaphores: &[Arc<Handle<Semaphore>>],
    mut waits: Vec<Arc<Handle<Event>>>,
) -> ClResult<Arc<Handle<Event>>> {
    waits.extend(semaphores.iter().map(|s| s.taken_by_wait()));
    queue.enqueue(
        CL_COMMAND_SEMAPHORE_WAIT_KHR,
        waits,
        Ordering::Barrier,
        Work::none(),
    )
}
