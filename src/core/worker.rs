//! The completion worker: one thread per device that waits for submitted
//! batches to finish (on their timeline values: a short poll on GPUs, then
//! a blocking wait for whichever queue's oldest batch finishes first), then
//! runs each command's host side and completes its event, in each queue's
//! order. When the device is lost, or finishes nothing for as
//! long as its watchdog allows, it fails what is in flight.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ash::vk;
use opencl_sys::*;

use crate::core::object::Handle;
use crate::core::queue::{Batch, Queue, Stamps};
use crate::vk::device::LogicalDevice;

struct InFlight {
    queue: Arc<Handle<Queue>>,
    value: u64,
    batch: Batch,
}

pub struct Worker {
    inflight: Mutex<VecDeque<InFlight>>,
    more: Condvar,
    started: std::sync::Once,
    /// Batches in flight, read without the lock while polling for work.
    count: AtomicUsize,
    /// How long the thread polls for the next batch before it sleeps (the
    /// device's `spin`): an application that waits for each command and
    /// enqueues the next finds the worker awake.
    spin: OnceLock<Duration>,
    /// With breadcrumbs (`VKCL_BREADCRUMBS=1`), the last batches that
    /// finished, newest last: a kernel that faults may finish its own
    /// work before the device stops, so the report names what ran just
    /// before the stall too.
    finished: Mutex<VecDeque<String>>,
    /// The thread sleeps on `more` (read and written under the
    /// `inflight` lock): only then does a push wake it, a futex call
    /// saved on every submission while it polls.
    sleeping: std::sync::atomic::AtomicBool,
}

/// How many finished batches the breadcrumbs report keeps.
const FINISHED_KEPT: usize = 32;

impl Default for Worker {
    fn default() -> Self {
        Worker {
            inflight: Mutex::new(VecDeque::new()),
            more: Condvar::new(),
            started: std::sync::Once::new(),
            count: AtomicUsize::new(0),
            spin: OnceLock::new(),
            finished: Mutex::new(VecDeque::new()),
            sleeping: Default::default(),
        }
    }
}

impl Worker {
    /// Hands a submitted batch to the worker.
    pub fn push(self: &Arc<Self>, queue: Arc<Handle<Queue>>, value: u64, batch: Batch) {
        self.spin.get_or_init(|| queue.vk.spin());
        self.started.call_once(|| {
            let me = self.clone();
            std::thread::Builder::new()
                .name("vkcl-completion".into())
                .spawn(move || me.run())
                .expect("spawn the completion worker");
        });
        let asleep = {
            let mut list = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
            list.push_back(InFlight {
                queue,
                value,
                batch,
            });
            self.sleeping.load(Ordering::Relaxed)
        };
        self.count.fetch_add(1, Ordering::Release);
        if asleep {
            self.more.notify_one();
        }
    }

    fn run(self: Arc<Self>) {
        // Since when the device has finished nothing while work was in
        // flight: the watchdog's measure of a hung device.
        let mut idle_since: Option<Instant> = None;
        loop {
            let spin = self.spin.get().copied().unwrap_or_default();
            if !spin.is_zero() && self.count.load(Ordering::Acquire) == 0 {
                let until = Instant::now() + spin;
                while self.count.load(Ordering::Acquire) == 0 && Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
            // The oldest submission of each queue: every submitted batch
            // finishes on its own (none waits for anything unsubmitted);
            // a queue's batches finish in order, those of different queues
            // (on different Vulkan queues) in any order.
            let fronts: Vec<(Arc<Handle<Queue>>, u64)> = {
                let mut list = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
                while list.is_empty() {
                    self.sleeping.store(true, Ordering::Relaxed);
                    list = self.more.wait(list).unwrap_or_else(|e| e.into_inner());
                    self.sleeping.store(false, Ordering::Relaxed);
                }
                let mut fronts: Vec<(Arc<Handle<Queue>>, u64)> = Vec::new();
                for f in list.iter() {
                    if !fronts.iter().any(|(q, _)| Arc::ptr_eq(q, &f.queue)) {
                        fronts.push((f.queue.clone(), f.value));
                    }
                }
                fronts
            };
            let since = *idle_since.get_or_insert_with(Instant::now);
            let queue = fronts[0].0.clone();
            let waits: Vec<(vk::Semaphore, u64)> =
                fronts.iter().map(|(q, v)| (q.timeline, *v)).collect();
            let mut finished = None;
            let trace = crate::core::trace::tracer();
            let waited = trace.map(|_| crate::core::event::host_time_ns());
            let result = queue.vk.wait_any(&waits, 2_000_000_000);
            if let (Some(t), Some(waited)) = (trace, waited) {
                let now = crate::core::event::host_time_ns();
                t.host("vkcl", "wait for the device", waited, now, "");
            }
            let lost = match result {
                Ok(Some(i)) => {
                    finished = Some(i);
                    None
                }
                Ok(None) if queue.vk.is_lost() => Some("the device was lost".to_string()),
                Ok(None) => match queue.vk.watchdog {
                    Some(limit) if since.elapsed() >= limit => {
                        queue.vk.declare_hung(since.elapsed());
                        Some(format!(
                            "the device finished nothing for {:.0} s and is taken as hung (VKCL_WATCHDOG)",
                            since.elapsed().as_secs_f64()
                        ))
                    }
                    _ => continue,
                },
                Err(e) => {
                    if e == vk::Result::ERROR_DEVICE_LOST {
                        queue.vk.mark_lost();
                    } else {
                        // The wait failed, not the device: what was
                        // submitted may still run.
                        queue.vk.abandon(e);
                    }
                    Some(format!("the device was lost ({e})"))
                }
            };
            if let Some(why) = lost {
                // Nothing in flight on the device will finish. Every such
                // command fails now, so that nothing waits for it for ever,
                // and later work fails at once.
                let lost: Vec<InFlight> = self
                    .inflight
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .drain(..)
                    .collect();
                self.count.fetch_sub(lost.len(), Ordering::Release);
                let why = match running(&lost) {
                    Some(what) => format!("{why}; the device was running {what}"),
                    None => why,
                };
                log::error!(target: "vkcl::worker", "{why}");
                queue.context.notify_error(&format!("vkcl: {why}"));
                let now = crate::core::event::host_time_ns();
                for f in self
                    .finished
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                {
                    log::error!(target: "vkcl::worker", "finished before (now at {now} ns): {f}");
                }
                report_unfinished(&lost);
                for done in lost {
                    fail(done);
                }
                idle_since = None;
                queue.context.repump();
                continue;
            }
            let Some((queue, value)) = finished.map(|i| fronts[i].clone()) else {
                continue;
            };
            idle_since = None;
            let done = {
                let mut list = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
                let at = list
                    .iter()
                    .position(|f| Arc::ptr_eq(&f.queue, &queue) && f.value == value)
                    .expect("a waited-for batch stays in flight until completed here");
                let done = list.remove(at).expect("index in range");
                self.count.fetch_sub(1, Ordering::Release);
                done
            };
            check_seal(&done);
            if crate::core::queue::breadcrumbs() != crate::core::queue::Crumbs::Off {
                let mut finished = self.finished.lock().unwrap_or_else(|e| e.into_inner());
                if finished.len() == FINISHED_KEPT {
                    finished.pop_front();
                }
                finished.push_back(summary(&done));
            }
            complete(done);
            queue.context.repump();
        }
    }
}

/// What the breadcrumbs say of a command that started and never finished.
const RUNNING: &str = "started, never finished";

/// Where the device stands with command `c` by its queue's breadcrumbs
/// (`VKCL_BREADCRUMBS`: the last command started, the last finished):
/// finished, [`RUNNING`] or not started; `None` without breadcrumbs.
fn progress(c: &crate::core::queue::Command, crumbs: Option<(u32, u32)>) -> Option<&'static str> {
    let (started, finished) = crumbs.filter(|_| c.crumb > 0)?;
    Some(if finished >= c.crumb {
        "finished"
    } else if started >= c.crumb {
        RUNNING
    } else {
        "not started"
    })
}

/// The commands the breadcrumbs (`VKCL_BREADCRUMBS`) show started and
/// never finished, by name, if any.
fn running(lost: &[InFlight]) -> Option<String> {
    let names: Vec<String> = lost
        .iter()
        .flat_map(|f| {
            let crumbs = f.queue.crumbs();
            f.batch
                .commands
                .iter()
                .filter(move |c| progress(c, crumbs) == Some(RUNNING))
                .map(|c| match c.event.label.get() {
                    Some(label) => format!("kernel {label}"),
                    None => format!("command 0x{:x}", c.event.command_type),
                })
        })
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// A finished batch for the breadcrumbs report: when (host clock), its
/// queue and its commands.
fn summary(f: &InFlight) -> String {
    let commands: Vec<String> = f
        .batch
        .commands
        .iter()
        .map(|c| match c.event.label.get() {
            Some(label) => format!("{label} (0x{:x})", c.event.command_type),
            None => format!("0x{:x}", c.event.command_type),
        })
        .collect();
    format!(
        "at {} ns, queue {:p} batch {}: {}",
        crate::core::event::host_time_ns(),
        Arc::as_ptr(&f.queue),
        f.value,
        commands.join(", ")
    )
}

/// Says what was in flight when the device stopped: per batch, its
/// queue's progress and its commands, so that the kernel that hung or
/// faulted can be found.
fn report_unfinished(lost: &[InFlight]) {
    // A timeline's value now, or why it cannot be read.
    let now = |f: &InFlight, semaphore: vk::Semaphore| {
        // SAFETY: the queue's own timeline, or that of a queue an event of
        // the batch's commands keeps alive.
        let value = unsafe { f.queue.vk.raw.get_semaphore_counter_value(semaphore) };
        value.map_or_else(|e| e.to_string(), |v| v.to_string())
    };
    for f in lost {
        // With breadcrumbs, where the device stands in the queue's commands.
        let crumbs = f.queue.crumbs();
        let commands: Vec<String> = f
            .batch
            .commands
            .iter()
            .map(|c| {
                let what = match c.event.label.get() {
                    Some(label) => format!("{label} (0x{:x})", c.event.command_type),
                    None => format!("0x{:x}", c.event.command_type),
                };
                match progress(c, crumbs) {
                    Some(state) => format!("{what} [{state}]"),
                    None => what,
                }
            })
            .collect();
        let waits: Vec<String> = f
            .batch
            .waits()
            .iter()
            .map(|&(semaphore, value)| format!("{semaphore:?} {value} (at {})", now(f, semaphore)))
            .collect();
        log::error!(
            target: "vkcl::worker",
            "unfinished: queue {:p} (timeline {:?}), batch {} (the queue reached {}), waiting for [{}]: {}",
            Arc::as_ptr(&f.queue),
            f.queue.timeline,
            f.value,
            now(f, f.queue.timeline),
            waits.join(", "),
            commands.join(", ")
        );
    }
}

/// With breadcrumbs on: whether the device ran every command of a batch
/// its timeline says is done (the batch's seal, written after them, must
/// be there). A batch taken as done early would have its results read,
/// and its memory freed and reused, while the device may still run it.
fn check_seal(f: &InFlight) {
    let Some(sealed) = f.queue.sealed() else {
        return;
    };
    if seal_behind(sealed, f.value) {
        log::error!(
            target: "vkcl::worker",
            "batch {} of queue {:p} reached its timeline value before the device ran its commands (the last seal is {sealed}): {}",
            f.value,
            Arc::as_ptr(&f.queue),
            summary(f)
        );
    }
}

/// Whether the last seal a queue's device wrote, `sealed`, comes before
/// the batch of timeline value `value`. Seals are timeline values modulo
/// 2^32; a queue's batches finish in order, so a batch that is done has
/// the last seal at or after its own.
fn seal_behind(sealed: u32, value: u64) -> bool {
    (sealed.wrapping_sub(value as u32) as i32) < 0
}

fn complete(done: InFlight) {
    let trace = crate::core::trace::tracer();
    // When the worker saw the batch done, for the trace.
    let seen = trace.map_or(0, |_| crate::core::event::host_time_ns());
    let InFlight {
        queue,
        batch,
        value,
    } = done;
    let times = batch
        .queries
        .as_ref()
        .map(|q| gpu_times(&queue.vk, q, batch.commands.len()));
    if let (Some(t), Some(times)) = (trace, &times) {
        trace_batch(t, &queue, &batch, value, times, seen);
    }
    // Device times are the events' only where the application asked for
    // profiling (they are there for the trace otherwise).
    let times = times.filter(|_| queue.profiling());
    let cb = batch.cb();
    let queries = batch.queries;
    for (i, mut cmd) in batch.commands.into_iter().enumerate() {
        let status = match cmd.complete.take().map(|f| f()) {
            Some(Err(e)) => e.0,
            _ => CL_COMPLETE as cl_int,
        };
        drop(std::mem::take(&mut cmd.keep));
        let mut span = times.as_ref().map(|t| t[i]);
        if let Some(first) = cmd.first_part.take() {
            // A command done in parts runs from its first part's start.
            let p = cmd.event.starts_with(&first);
            span = span.map(|(_, end)| (p.start, end));
        }
        cmd.event.finish(status, span);
    }
    queue.recycle(cb, queries);
    if let Some(t) = trace {
        let args = format!(r#""queue":"{:p}","batch":{value}"#, Arc::as_ptr(&queue));
        t.host(
            "vkcl",
            "complete batch",
            seen,
            crate::core::event::host_time_ns(),
            &args,
        );
    }
}

/// Puts a finished batch on the trace (`VKCL_TRACE`): each command's
/// device time (`times`), inside the batch's own span, whose arguments
/// say when it was submitted and when the worker saw it done (`seen`).
fn trace_batch(
    t: &crate::core::trace::Tracer,
    queue: &Arc<Handle<Queue>>,
    batch: &Batch,
    value: u64,
    times: &[(u64, u64)],
    seen: u64,
) {
    let (Some(first), Some(last)) = (times.first(), times.last()) else {
        return;
    };
    let mut spans = Vec::with_capacity(times.len() + 1);
    spans.push((
        "batch".to_string(),
        first.0,
        last.1.max(first.0),
        format!(
            r#""queue":"{:p}","batch":{value},"commands":{},"submitted":{},"seen":{}"#,
            Arc::as_ptr(queue),
            times.len(),
            t.micros(batch.submitted),
            t.micros(seen)
        ),
    ));
    for (cmd, &(start, end)) in batch.commands.iter().zip(times) {
        let name = match cmd.event.label.get() {
            Some(label) => label.to_string(),
            None => crate::core::trace::command_name(cmd.event.command_type).to_string(),
        };
        spans.push((name, start, end.max(start), String::new()));
    }
    let device = Arc::as_ptr(&queue.vk) as usize;
    t.device(
        device,
        || queue.device.name(),
        Arc::as_ptr(queue) as usize,
        &spans,
    );
}

/// Ends a batch the device will never finish: its commands' events fail
/// with CL_OUT_OF_RESOURCES, without their host side (results that were
/// never made are not copied anywhere). On a hung device the batch may
/// still run: its command buffer is not reused, and the Vulkan objects its
/// commands kept are not destroyed (their `Drop` leaves them on a hung
/// device).
fn fail(done: InFlight) {
    let InFlight { queue, batch, .. } = done;
    let cb = batch.cb();
    let queries = batch.queries;
    for mut cmd in batch.commands {
        drop(cmd.complete.take());
        drop(std::mem::take(&mut cmd.keep));
        cmd.event.finish(CL_OUT_OF_RESOURCES, None);
    }
    if !queue.vk.is_hung() {
        queue.recycle(cb, queries);
    }
}

/// Start and end of each command in the host clock, from the batch's
/// timestamps (copied into their buffer at the batch's end).
fn gpu_times(dev: &LogicalDevice, stamps: &Stamps, n: usize) -> Vec<(u64, u64)> {
    let mut raw = vec![0u64; 2 * n];
    // SAFETY: the batch has completed, and its last commands copied its 2n
    // timestamps into the buffer (which holds 2 * BATCH_LIMIT) and made
    // them visible to the host.
    unsafe { stamps.values.read_to(0, raw.as_mut_ptr().cast(), 16 * n) };
    let mask = if dev.timestamp_bits >= 64 {
        u64::MAX
    } else {
        (1u64 << dev.timestamp_bits) - 1
    };
    let offset = dev.timestamp_offset();
    let to_host = |ticks: u64| {
        let ns = (ticks & mask) as f64 * dev.timestamp_period;
        (ns as i128 + offset as i128).max(0) as u64
    };
    raw.chunks(2)
        .map(|c| (to_host(c[0]), to_host(c[1])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::seal_behind;

    /// A batch is done when the last seal is its own or a later batch's,
    /// across the seals' wrap at 2^32 too; an earlier seal (or none yet,
    /// 0) is behind.
    #[test]
    fn seals_before_their_batch_are_behind() {
        assert!(!seal_behind(5, 5));
        assert!(!seal_behind(7, 5));
        assert!(seal_behind(4, 5));
        assert!(seal_behind(0, 1));
        assert!(!seal_behind(2, (1 << 32) + 1));
        assert!(!seal_behind(0, 1 << 32));
        assert!(seal_behind(u32::MAX, 1 << 32));
        assert!(!seal_behind(1, u64::from(u32::MAX)));
    }
}
