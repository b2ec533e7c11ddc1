//! Events: the status of one command (or a user event), its callbacks and
//! its profiling times.
//!
//! Status walks `CL_QUEUED → CL_SUBMITTED → CL_RUNNING → CL_COMPLETE`, or ends
//! in a negative error. Alongside the status, the event records how far its
//! command has got inside vkcl ([`Stage`]), which is what the queues look at
//! when they decide whether a dependent command can be recorded.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ash::vk;
use opencl_sys::*;

use crate::core::context::Context;
use crate::core::error::{ClResult, err};
use crate::core::object::{Callback, ClObject, Handle};
use crate::core::queue::Queue;

pub type EventCallback = unsafe extern "C" fn(cl_event, cl_int, *mut c_void);

/// Callbacks that became due while a lock was held, to run after it is
/// released (callbacks may call back into OpenCL).
pub struct Due {
    event: Arc<Handle<Event>>,
    list: Vec<(cl_int, Callback<EventCallback>)>,
}

impl Due {
    pub fn run(self) {
        Event::run_callbacks(&self.event, self.list);
    }
}

/// How far an event's command has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Enqueued, not yet recorded (or a user event not yet set).
    Pending,
    /// Recorded into its queue's open command buffer.
    Recorded,
    /// Submitted: done once `semaphore` reaches `value`.
    Submitted {
        semaphore: vk::Semaphore,
        value: u64,
    },
    /// Complete, or failed.
    Done,
}

/// Host times (ns, `CLOCK_MONOTONIC`) of the profiling points.
#[derive(Clone, Copy, Debug, Default)]
pub struct Profile {
    pub queued: u64,
    pub submit: u64,
    pub start: u64,
    pub end: u64,
    pub complete: u64,
}

struct State {
    status: cl_int,
    stage: Stage,
    profile: Profile,
    callbacks: Vec<(cl_int, Callback<EventCallback>)>,
    /// Threads asleep in [`Event::wait`]: only they need a wake-up (a
    /// futex call), and most waiters see the end while they poll.
    sleepers: u32,
}

pub struct Event {
    pub context: Arc<Handle<Context>>,
    /// `None` for user events.
    pub queue: Option<Arc<Handle<Queue>>>,
    pub command_type: cl_command_type,
    pub profiling: bool,
    /// The command's host step touches device memory: see
    /// `Work::host_access`.
    host_gate: std::sync::atomic::AtomicBool,
    /// What the command runs, for diagnostics (a kernel's name).
    pub label: std::sync::OnceLock<Arc<str>>,
    state: Mutex<State>,
    changed: Condvar,
    /// The status is final (complete or failed): read without the lock by
    /// threads that poll before they sleep.
    ended: AtomicBool,
}

impl ClObject for Event {
    const INVALID: i32 = CL_INVALID_EVENT;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Events);
}

/// The host clock all profiling times use: a monotonic clock in
/// nanoseconds (`CLOCK_MONOTONIC` on Unix, the same clock lavapipe's
/// timestamps use).
pub fn host_time_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the struct for a valid clock id.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
    #[cfg(not(unix))]
    {
        use std::sync::OnceLock;
        use std::time::Instant;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
    }
}

impl Event {
    /// The event of an enqueued command, in `CL_QUEUED`.
    pub fn for_command(
        queue: &Arc<Handle<Queue>>,
        command_type: cl_command_type,
    ) -> Arc<Handle<Event>> {
        let profiling = queue.profiling();
        Handle::new(Event {
            context: queue.context.clone(),
            queue: Some(queue.clone()),
            command_type,
            profiling,
            host_gate: Default::default(),
            label: Default::default(),
            state: Mutex::new(State {
                status: CL_QUEUED as cl_int,
                stage: Stage::Pending,
                profile: Profile {
                    queued: host_time_ns(),
                    ..Default::default()
                },
                callbacks: Vec::new(),
                sleepers: 0,
            }),
            changed: Condvar::new(),
            ended: AtomicBool::new(false),
        })
    }

    /// A user event, in `CL_SUBMITTED` until the application sets it.
    pub fn user(context: Arc<Handle<Context>>) -> Arc<Handle<Event>> {
        Handle::new(Event {
            context,
            queue: None,
            command_type: CL_COMMAND_USER,
            profiling: false,
            host_gate: Default::default(),
            label: Default::default(),
            state: Mutex::new(State {
                status: CL_SUBMITTED as cl_int,
                stage: Stage::Pending,
                profile: Profile::default(),
                callbacks: Vec::new(),
                sleepers: 0,
            }),
            changed: Condvar::new(),
            ended: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn status(&self) -> cl_int {
        self.lock().status
    }

    pub fn set_host_gate(&self) {
        self.host_gate
            .store(true, std::sync::atomic::Ordering::Release);
    }

    pub fn host_gate(&self) -> bool {
        self.host_gate.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn stage(&self) -> Stage {
        self.lock().stage
    }

    pub fn profile(&self) -> Profile {
        self.lock().profile
    }

    pub fn is_user(&self) -> bool {
        self.queue.is_none()
    }

    /// Marks the command recorded into its queue's open command buffer.
    pub fn set_recorded(&self) {
        self.lock().stage = Stage::Recorded;
    }

    /// Moves the status forward to `status` (never backwards) and returns
    /// the callbacks that are now due; the caller runs them with
    /// [`Event::run_callbacks`] once it holds no lock.
    #[must_use]
    fn advance(&self, state: &mut State, status: cl_int) -> Vec<(cl_int, Callback<EventCallback>)> {
        if state.status <= CL_COMPLETE as cl_int || status >= state.status {
            return Vec::new();
        }
        state.status = status;
        if status <= CL_COMPLETE as cl_int {
            state.stage = Stage::Done;
            self.ended.store(true, Ordering::Release);
        }
        if state.sleepers > 0 {
            self.changed.notify_all();
        }
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut state.callbacks)
            .into_iter()
            .partition(|(when, _)| status <= *when);
        state.callbacks = keep;
        due.into_iter().map(|(_, cb)| (status, cb)).collect()
    }

    pub(crate) fn run_callbacks(
        this: &Arc<Handle<Self>>,
        due: Vec<(cl_int, Callback<EventCallback>)>,
    ) {
        let raw: cl_event = Handle::as_raw(this);
        for (status, cb) in due {
            // SAFETY: the application registered this callback for this
            // event; it receives the handle, the status and its user_data.
            unsafe { (cb.func)(raw, status, cb.user_data) };
        }
    }

    /// Blocks until the event is complete or failed; returns its status.
    /// The caller makes sure the command can make progress (flushes).
    pub fn wait(&self) -> cl_int {
        // On a GPU a short command ends within microseconds, sooner than
        // a sleeping thread is woken (tens of microseconds on some
        // machines): watch for the end for a moment first.
        let spin = self.queue.as_ref().map_or(Duration::ZERO, |q| q.vk.spin());
        if !spin.is_zero() {
            let until = Instant::now() + spin;
            while !self.ended.load(Ordering::Acquire) && Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        let mut st = self.lock();
        while st.status > CL_COMPLETE as cl_int {
            st.sleepers += 1;
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
            st.sleepers -= 1;
        }
        st.status
    }
}

impl Handle<Event> {
    /// The command was submitted to Vulkan at host time `at`. Vulkan gives
    /// no signal for "started": the first command of a batch (`first`,
    /// given only where nothing is ahead of the batch on the device)
    /// counts as running from then on; the others stay `CL_SUBMITTED` until the
    /// batch completes (they may wait for the earlier ones, and a command
    /// never shows as running while what it waits for still runs). The
    /// returned callbacks must be run once the caller holds no lock.
    #[must_use]
    pub fn mark_submitted(
        self: &Arc<Self>,
        semaphore: vk::Semaphore,
        value: u64,
        at: u64,
        first: bool,
    ) -> Due {
        let mut st = self.lock();
        st.stage = Stage::Submitted { semaphore, value };
        st.profile.submit = at;
        let mut list = self.advance(&mut st, CL_SUBMITTED as cl_int);
        if first {
            list.extend(self.advance(&mut st, CL_RUNNING as cl_int));
        }
        Due {
            event: self.clone(),
            list,
        }
    }

    /// For the last part of a command done in parts: the command was
    /// submitted when `first`, its first part, was. Gives `first`'s profile.
    pub fn starts_with(&self, first: &Event) -> Profile {
        let p = first.profile();
        let mut st = self.lock();
        if p.submit > 0 {
            st.profile.submit = st.profile.submit.min(p.submit).max(st.profile.queued);
        }
        p
    }

    /// Completes the event (`status` is `CL_COMPLETE` or a negative error),
    /// with the device's start and end times when it has them.
    pub fn finish(self: &Arc<Self>, status: cl_int, gpu_times: Option<(u64, u64)>) {
        let due = {
            let mut st = self.lock();
            if st.status <= CL_COMPLETE as cl_int {
                return;
            }
            let now = host_time_ns();
            let p = &mut st.profile;
            if p.submit == 0 {
                p.submit = now.max(p.queued);
            }
            // Device times are converted to the host clock; keep the
            // sequence ordered whatever the conversion's error.
            let (start, end) = gpu_times.unwrap_or((now, now));
            p.start = start.max(p.submit);
            p.end = end.max(p.start);
            p.complete = p.end;
            let mut due = Vec::new();
            if status == CL_COMPLETE as cl_int && st.status > CL_RUNNING as cl_int {
                due.extend(self.advance(&mut st, CL_SUBMITTED as cl_int));
                due.extend(self.advance(&mut st, CL_RUNNING as cl_int));
            }
            due.extend(self.advance(&mut st, status));
            due
        };
        Event::run_callbacks(self, due);
    }

    /// clSetEventCallback: runs at once if the status is already reached.
    pub fn add_callback(self: &Arc<Self>, when: cl_int, cb: Callback<EventCallback>) {
        let due = {
            let mut st = self.lock();
            if st.status <= when {
                vec![(st.status, cb)]
            } else {
                st.callbacks.push((when, cb));
                Vec::new()
            }
        };
        Event::run_callbacks(self, due);
    }

    /// clSetUserEventStatus.
    pub fn set_user_status(self: &Arc<Self>, status: cl_int) -> ClResult<()> {
        if !self.is_user() {
            return err(CL_INVALID_EVENT);
        }
        if status > CL_COMPLETE as cl_int {
            return err(CL_INVALID_VALUE);
        }
        if self.status() <= CL_COMPLETE as cl_int {
            return err(CL_INVALID_OPERATION);
        }
        self.finish(status, None);
        // Commands held back for this event may go now.
        self.context.repump();
        Ok(())
    }
}
