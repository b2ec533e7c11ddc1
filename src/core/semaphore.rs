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
//!
//! A semaphore shared with another API (cl_khr_external_semaphore: made
//! exportable, or imported from a file descriptor) is a binary Vulkan
//! semaphore instead, whose signals and waits are those of the batches
//! that carry them (see [`crate::core::queue::BinaryOps`]): the other API
//! may signal it or wait for it, so vkcl cannot keep its line. A wait
//! still depends on the last signal enqueued through vkcl, so that Vulkan
//! receives that signal first; a wait with no such signal waits for one
//! from outside.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use opencl_sys::*;

use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClResult, err};
use crate::core::event::{Event, Stage};
use crate::core::object::{Callback, ClObject, Handle};
use crate::core::queue::{BinaryOps, Ordering, Queue, Work};
use crate::vk::external::{BinarySemaphore, SemaphoreHandle};

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
    /// The Vulkan semaphore of a semaphore shared with other APIs.
    external: Option<External>,
}

/// A semaphore shared with other APIs.
struct External {
    vk: Arc<BinarySemaphore>,
    /// The handle kinds it was made to export (empty for imports).
    export: Vec<SemaphoreHandle>,
    /// The handle kind it was imported from (`None` for exportable ones).
    import: Option<SemaphoreHandle>,
    state: Mutex<ExternalState>,
}

#[derive(Default)]
struct ExternalState {
    /// The last signal enqueued through vkcl and not yet waited for.
    signal: Option<Arc<Handle<Event>>>,
    /// A sync file was imported and not yet waited for.
    imported: bool,
}

/// The OpenCL name of a handle kind.
pub fn handle_type(kind: SemaphoreHandle) -> cl_external_semaphore_handle_type_khr {
    match kind {
        SemaphoreHandle::OpaqueFd => CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR,
        SemaphoreHandle::SyncFd => CL_SEMAPHORE_HANDLE_SYNC_FD_KHR,
    }
}

/// The handle kind an OpenCL name stands for.
pub fn handle_kind(ty: cl_external_semaphore_handle_type_khr) -> Option<SemaphoreHandle> {
    SemaphoreHandle::ALL
        .into_iter()
        .find(|&k| handle_type(k) == ty)
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
        let mut export: Option<Vec<SemaphoreHandle>> = None;
        let mut import: Option<(SemaphoreHandle, i32)> = None;
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
                n if n == CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR as cl_uint => {
                    let mut list = Vec::new();
                    loop {
                        let t = read(i);
                        raw.push(t);
                        i += 1;
                        if t == CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR {
                            break;
                        }
                        let Some(kind) = handle_kind(t as cl_uint) else {
                            return err(CL_INVALID_PROPERTY);
                        };
                        if list.contains(&kind) {
                            return err(CL_INVALID_VALUE);
                        }
                        list.push(kind);
                    }
                    export = Some(list);
                }
                ty if handle_kind(ty).is_some() => {
                    let value = read(i);
                    raw.push(value);
                    i += 1;
                    if import.is_some() {
                        return err(CL_INVALID_PROPERTY);
                    }
                    let kind = handle_kind(ty).expect("matched above");
                    import = Some((kind, value as i32));
                }
                _ => return err(CL_INVALID_PROPERTY),
            }
        }
        if kind.is_none() {
            return err(CL_INVALID_VALUE);
        }
        let device = match devices {
            Some(list) => context.one_device(&list)?,
            None => match &context.devices[..] {
                [one] => one.clone(),
                _ => return err(CL_INVALID_PROPERTY),
            },
        };
        let external = match (export, import) {
            // An imported semaphore exports nothing.
            (Some(_), Some(_)) => return err(CL_INVALID_OPERATION),
            (Some(list), None) if !list.is_empty() => {
                let caps = &device.info.external;
                if list.iter().any(|k| !caps.semaphore_export.contains(k)) {
                    return err(CL_INVALID_PROPERTY);
                }
                let flags = list.iter().fold(Default::default(), |f, k| f | k.flags());
                let vk = BinarySemaphore::new(&device.logical()?, flags)?;
                Some(External::new(vk, list, None))
            }
            (_, Some((kind, fd))) => {
                if !device.info.external.semaphore_import.contains(&kind) {
                    return err(CL_INVALID_PROPERTY);
                }
                // A sync file of -1 stands for a signal already done.
                let already = kind == SemaphoreHandle::SyncFd && fd == -1;
                if !already && !crate::vk::external::is_open_fd(fd) {
                    return err(CL_INVALID_VALUE);
                }
                let vk = BinarySemaphore::new(&device.logical()?, Default::default())?;
                if let Err(e) = vk.import(kind, fd) {
                    log::warn!(target: "vkcl::semaphore", "cannot import a semaphore from file descriptor {fd}: {e}");
                    return err(CL_INVALID_VALUE);
                }
                Some(External::new(vk, Vec::new(), Some(kind)))
            }
            _ => None,
        };
        Ok(Handle::new(Semaphore {
            context,
            device,
            properties: raw,
            lines: Mutex::new(Lines::default()),
            external,
        }))
    }

    /// The handle kinds the semaphore can export (none unless it was made
    /// exportable).
    pub fn export_types(&self) -> Vec<SemaphoreHandle> {
        self.external
            .as_ref()
            .map(|e| e.export.clone())
            .unwrap_or_default()
    }

    /// clGetSemaphoreHandleForTypeKHR: a new file descriptor, which the
    /// caller owns. A sync file stands for the last signal enqueued, which
    /// must have reached the device, and takes it, as a wait would.
    pub fn export(&self, kind: SemaphoreHandle) -> ClResult<i32> {
        let Some(ext) = self.external.as_ref().filter(|e| e.export.contains(&kind)) else {
            return err(CL_INVALID_VALUE);
        };
        if kind == SemaphoreHandle::SyncFd {
            let Some(signal) = ext.lock().signal.clone() else {
                log::warn!(target: "vkcl::semaphore", "a sync file is exported from a semaphore with no signal enqueued");
                return err(CL_INVALID_OPERATION);
            };
            if let Some(q) = &signal.queue {
                q.flush()?;
            }
            if matches!(signal.stage(), Stage::Pending | Stage::Recorded) {
                log::warn!(target: "vkcl::semaphore", "a sync file is exported for a signal still held back by its wait list");
                return err(CL_INVALID_OPERATION);
            }
            let mut state = ext.lock();
            if state
                .signal
                .as_ref()
                .is_some_and(|s| Arc::ptr_eq(s, &signal))
            {
                state.signal = None;
            }
            state.imported = false;
        }
        ext.vk.export(kind).map_err(|e| {
            log::warn!(target: "vkcl::semaphore", "exporting a semaphore failed: {e}");
            crate::core::error::ClError(CL_OUT_OF_RESOURCES)
        })
    }

    /// clReImportSemaphoreSyncFdKHR: the semaphore takes the signal of a
    /// sync file (`-1`: one that has already happened) until its next wait.
    pub fn reimport_sync_fd(&self, fd: i32) -> ClResult<()> {
        let Some(ext) = self
            .external
            .as_ref()
            .filter(|e| e.import == Some(SemaphoreHandle::SyncFd))
        else {
            return err(CL_INVALID_SEMAPHORE_KHR);
        };
        if fd != -1 && !crate::vk::external::is_open_fd(fd) {
            return err(CL_INVALID_VALUE);
        }
        let mut state = ext.lock();
        if let Err(e) = ext.vk.import(SemaphoreHandle::SyncFd, fd) {
            log::warn!(target: "vkcl::semaphore", "cannot import sync file {fd}: {e}");
            return err(CL_INVALID_VALUE);
        }
        state.imported = true;
        Ok(())
    }

    /// The binary payload: 1 while a signal that has completed waits to be
    /// taken, else 0.
    pub fn payload(&self) -> cl_semaphore_payload_khr {
        if let Some(ext) = &self.external {
            let state = ext.lock();
            let signalled = state.imported
                || state
                    .signal
                    .as_ref()
                    .is_some_and(|s| s.status() == CL_COMPLETE as cl_int);
            return signalled as cl_semaphore_payload_khr;
        }
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

impl External {
    fn new(
        vk: BinarySemaphore,
        export: Vec<SemaphoreHandle>,
        import: Option<SemaphoreHandle>,
    ) -> External {
        External {
            vk: Arc::new(vk),
            export,
            import,
            state: Mutex::new(ExternalState {
                signal: None,
                // A sync file comes signalled (or about to be).
                imported: import == Some(SemaphoreHandle::SyncFd),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ExternalState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
    let binary = BinaryOps {
        wait: Vec::new(),
        signal: semaphores
            .iter()
            .filter_map(|s| Some(s.external.as_ref()?.vk.clone()))
            .collect(),
    };
    let event = queue.enqueue_binary(
        CL_COMMAND_SEMAPHORE_SIGNAL_KHR,
        waits,
        Ordering::Marker,
        Work::none(),
        binary,
    )?;
    for ext in semaphores.iter().filter_map(|s| s.external.as_ref()) {
        let mut state = ext.lock();
        state.signal = Some(event.clone());
        state.imported = false;
    }
    for s in semaphores.iter().filter(|s| s.external.is_none()) {
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
    let mut binary = BinaryOps::default();
    for s in semaphores {
        match &s.external {
            Some(ext) => {
                binary.wait.push(ext.vk.clone());
                let mut state = ext.lock();
                waits.extend(state.signal.take());
                state.imported = false;
            }
            None => waits.push(s.taken_by_wait()),
        }
    }
    queue.enqueue_binary(
        CL_COMMAND_SEMAPHORE_WAIT_KHR,
        waits,
        Ordering::Barrier,
        Work::none(),
        binary,
    )
}
