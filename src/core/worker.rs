//! The completion worker: one thread per device that waits for submitted
//! batches to finish (on their timeline values: a short poll on GPUs, then
//! a blocking wait), then runs each command's host side and completes its
//! event, in order. When the device is lost, or finishes nothing for as
//! long as its watchdog allows, it fails what is in flight.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use ash::vk;
use opencl_sys::*;

use crate::core::object::Handle;
use crate::core::queue::{Batch, Queue};
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
}

impl Default for Worker {
    fn default() -> Self {
        Worker {
            inflight: Mutex::new(VecDeque::new()),
            more: Condvar::new(),
            started: std::sync::Once::new(),
        }
    }
}

impl Worker {
    /// Hands a submitted batch to the worker.
    pub fn push(self: &Arc<Self>, queue: Arc<Handle<Queue>>, value: u64, batch: Batch) {
        self.started.call_once(|| {
            let me = self.clone();
            std::thread::Builder::new()
                .name("vkcl-completion".into())
                .spawn(move || me.run())
                .expect("spawn the completion worker");
        });
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(InFlight {
                queue,
                value,
                batch,
            });
        self.more.notify_one();
    }

    fn run(self: Arc<Self>) {
        // The submission waited for at the front, and since when: the
        // watchdog's measure of a device that finishes nothing.
        let mut front: Option<(usize, u64, Instant)> = None;
        loop {
            // The oldest submission first: every submitted batch finishes
            // on its own (none waits for anything unsubmitted).
            let (queue, value) = {
                let mut list = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
                while list.is_empty() {
                    list = self.more.wait(list).unwrap_or_else(|e| e.into_inner());
                }
                let front = &list[0];
                (front.queue.clone(), front.value)
            };
            let key = (Arc::as_ptr(&queue) as usize, value);
            let since = match front {
                Some((q, v, t)) if (q, v) == key => t,
                _ => {
                    let now = Instant::now();
                    front = Some((key.0, key.1, now));
                    now
                }
            };
            let lost = match queue.vk.wait_timeline(queue.timeline, value, 2_000_000_000) {
                Ok(true) => None,
                Ok(false) if queue.vk.is_lost() => Some("the device was lost".to_string()),
                Ok(false) => match queue.vk.watchdog {
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
                    queue.vk.mark_lost();
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
                let why = match running(&lost) {
                    Some(what) => format!("{why}; the device was running {what}"),
                    None => why,
                };
                log::error!(target: "vkcl::worker", "{why}");
                queue.context.notify_error(&format!("vkcl: {why}"));
                report_unfinished(&lost);
                for done in lost {
                    fail(done);
                }
                front = None;
                queue.device.repump();
                continue;
            }
            front = None;
            let done = {
                let mut list = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
                list.pop_front().expect("the front was waited for")
            };
            complete(done);
            queue.device.repump();
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

fn complete(done: InFlight) {
    let InFlight { queue, batch, .. } = done;
    let times = batch
        .queries
        .and_then(|qp| gpu_times(&queue.vk, qp, batch.commands.len()));
    let cb = batch.cb();
    let queries = batch.queries;
    for (i, mut cmd) in batch.commands.into_iter().enumerate() {
        let status = match cmd.complete.take().map(|f| f()) {
            Some(Err(e)) => e.0,
            _ => CL_COMPLETE as cl_int,
        };
        drop(std::mem::take(&mut cmd.keep));
        cmd.event.finish(status, times.as_ref().map(|t| t[i]));
    }
    queue.recycle(cb, queries);
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
/// timestamp queries.
fn gpu_times(dev: &LogicalDevice, qp: vk::QueryPool, n: usize) -> Option<Vec<(u64, u64)>> {
    if n == 0 {
        return Some(Vec::new());
    }
    let mut raw = vec![0u64; 2 * n];
    // SAFETY: the batch has completed, so its queries are written; the
    // output holds two 64-bit results per command.
    unsafe {
        dev.raw
            .get_query_pool_results(qp, 0, &mut raw, vk::QueryResultFlags::TYPE_64)
            .ok()?
    };
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
    Some(
        raw.chunks(2)
            .map(|c| (to_host(c[0]), to_host(c[1])))
            .collect(),
    )
}
