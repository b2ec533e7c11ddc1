//! Command queues on Vulkan.
//!
//! Each OpenCL queue owns a timeline semaphore and records its commands into
//! an open Vulkan command buffer (a batch). A batch is submitted on clFlush,
//! on blocking calls and waits, when another queue needs one of its events,
//! when it reaches [`BATCH_LIMIT`] commands, or at once while fewer than
//! [`IN_FLIGHT`] of the queue's batches are in flight (the device would
//! otherwise sit idle, and a lone command would wait for the flush); it
//! signals the next value of the queue's timeline, and every event in it
//! is a point on that timeline.
//! The device's completion worker (see `core::worker`) waits for those
//! values, runs the host side of each command (copies into application
//! memory) and completes the events in order.
//!
//! A command is recorded only once every event it waits for is complete or
//! submitted: waits on other queues' submitted events become timeline waits
//! of the batch. Commands waiting for a user event, or for a command that is
//! itself held back, stay on the host until that event is set. Submitting a
//! wait for something not yet submitted would let one blocked batch stall
//! the Vulkan queue other OpenCL queues of the device share, so vkcl never
//! does that.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use ash::vk;
use opencl_sys::*;

use crate::core::census::{self, Kind};
use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult};
use crate::core::event::{Due, Event, Stage, host_time_ns};
pub use crate::core::memory::Use;
use crate::core::object::{ClObject, Handle};
use crate::core::trace::span;
use crate::vk::device::LogicalDevice;
use crate::vk::external::BinarySemaphore;
use crate::vk::memory::{BufferUse, DeviceBuffer};

/// A batch is submitted once it holds this many commands.
pub const BATCH_LIMIT: usize = 64;

/// A batch is submitted as soon as it holds a command while fewer than
/// this many of the queue's batches are in flight: one running, one
/// queued behind it, so that the device goes from one batch straight to
/// the next instead of waiting for the host to learn that the first has
/// completed and to submit what gathered meanwhile (on NVIDIA's driver
/// tens of microseconds, paid at every batch of a simulation's steps).
const IN_FLIGHT: usize = 2;

/// Records a command's device work.
pub type RecordFn = Box<dyn FnOnce(&Recorder<'_>) -> ClResult<()> + Send>;
/// Runs on the host once the command's device work is done.
pub type CompleteFn = Box<dyn FnOnce() -> ClResult<()> + Send>;

/// One enqueued command.
pub struct Command {
    pub event: Arc<Handle<Event>>,
    /// The wait list first, then the queue's implicit ordering.
    deps: Vec<Arc<Handle<Event>>>,
    /// How many of `deps` came from the wait list: only their failure
    /// fails this command; the implicit ones only order it.
    explicit: usize,
    pub record: Option<RecordFn>,
    pub complete: Option<CompleteFn>,
    /// Kept alive until the command completes (buffers, staging memory).
    pub keep: Vec<Box<dyn Any + Send + Sync>>,
    /// See [`Work::host_access`].
    host_access: bool,
    /// See [`Work::uses`].
    uses: Vec<Use>,
    /// Its number in the queue's breadcrumbs (`VKCL_BREADCRUMBS`), or 0.
    pub crumb: u32,
    /// See [`BinaryOps`].
    binary: BinaryOps,
    /// A part of a command split in several (see
    /// [`Handle::<Queue>::enqueue_parts`]): its batch is submitted at once,
    /// so that its host step runs while the device does the next part.
    alone: bool,
    /// For the last part of a split command: the first part, whose start
    /// is the command's start in its profile.
    pub first_part: Option<Arc<Handle<Event>>>,
}

impl Command {
    fn new(
        event: Arc<Handle<Event>>,
        deps: Vec<Arc<Handle<Event>>>,
        explicit: usize,
        work: Work,
        binary: BinaryOps,
    ) -> Command {
        Command {
            event,
            deps,
            explicit,
            record: work.record,
            complete: work.complete,
            keep: work.keep,
            host_access: work.host_access,
            uses: work.uses,
            crumb: 0,
            binary,
            alone: false,
            first_part: None,
        }
    }
}

/// Binary Vulkan semaphores (those shared with other APIs) a command
/// waits for before it starts, or signals once it and every command
/// before it on its queue are done. Such a command is submitted on its
/// own batch's edge: a wait opens a new batch, a signal closes its batch,
/// and either is submitted at once, so that Vulkan sees signals and waits
/// in the order they were enqueued.
#[derive(Default)]
pub struct BinaryOps {
    pub wait: Vec<Arc<BinarySemaphore>>,
    pub signal: Vec<Arc<BinarySemaphore>>,
}

impl BinaryOps {
    fn is_empty(&self) -> bool {
        self.wait.is_empty() && self.signal.is_empty()
    }
}

/// What a command is, for the ordering rules of out-of-order queues.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// Waits for its wait list (and, out of order, the last barrier).
    Normal,
    /// With an empty wait list, waits for every earlier command.
    Marker,
    /// A marker that later commands also wait for.
    Barrier,
}

/// The device work of a command, ready to record.
pub struct Work {
    pub record: Option<RecordFn>,
    pub complete: Option<CompleteFn>,
    pub keep: Vec<Box<dyn Any + Send + Sync>>,
    /// The host step reads or writes the device's memory itself (where
    /// that memory is the host's): the command's batch is submitted at
    /// once, and later commands that depend on it reach the device only
    /// after the host step has run.
    pub host_access: bool,
    /// The buffers it reads or writes, for contexts of several devices:
    /// their copies on the queue's device are made current before the
    /// command is recorded (see [`crate::core::memory::Copies`]).
    pub uses: Vec<Use>,
}

impl Work {
    pub fn none() -> Work {
        Work {
            record: None,
            complete: None,
            keep: Vec::new(),
            host_access: false,
            uses: Vec::new(),
        }
    }
}

/// Records into a batch's command buffer.
pub struct Recorder<'a> {
    pub device: &'a ash::Device,
    pub cb: vk::CommandBuffer,
}

impl Recorder<'_> {
    pub fn copy_buffer(&self, src: vk::Buffer, dst: vk::Buffer, regions: &[vk::BufferCopy]) {
        if regions.is_empty() {
            return;
        }
        // SAFETY: recording into a command buffer in the recording state;
        // the buffers are kept alive by the command until it completes.
        unsafe { self.device.cmd_copy_buffer(self.cb, src, dst, regions) };
    }

    /// Copies one region from a buffer into an image (kept in `GENERAL`).
    pub fn copy_buffer_to_image(
        &self,
        src: vk::Buffer,
        dst: vk::Image,
        region: vk::BufferImageCopy,
    ) {
        crate::vk::image::record_copy_to_image(self.device, self.cb, src, dst, region);
    }

    /// Copies one region from an image (kept in `GENERAL`) into a buffer.
    pub fn copy_image_to_buffer(
        &self,
        src: vk::Image,
        dst: vk::Buffer,
        region: vk::BufferImageCopy,
    ) {
        crate::vk::image::record_copy_from_image(self.device, self.cb, src, dst, region);
    }

    pub fn fill_buffer(&self, dst: vk::Buffer, offset: u64, size: u64, data: u32) {
        // SAFETY: as for copy_buffer; offset and size are multiples of 4.
        unsafe {
            self.device
                .cmd_fill_buffer(self.cb, dst, offset, size, data)
        };
    }

    /// Runs a compute pipeline over `groups` work-groups.
    pub fn dispatch(
        &self,
        pipeline: &crate::vk::pipeline::ComputePipeline,
        push: &[u8],
        groups: [u32; 3],
        set: Option<vk::DescriptorSet>,
    ) {
        // SAFETY: recording state; the pipeline and descriptor set are
        // kept alive by the command; the push constants fit the pipeline
        // layout's range.
        unsafe {
            self.device
                .cmd_bind_pipeline(self.cb, vk::PipelineBindPoint::COMPUTE, pipeline.raw);
            if let Some(set) = set {
                self.device.cmd_bind_descriptor_sets(
                    self.cb,
                    vk::PipelineBindPoint::COMPUTE,
                    pipeline.layout(),
                    0,
                    &[set],
                    &[],
                );
            }
            self.device.cmd_push_constants(
                self.cb,
                pipeline.layout(),
                vk::ShaderStageFlags::COMPUTE,
                0,
                push,
            );
            self.device
                .cmd_dispatch(self.cb, groups[0], groups[1], groups[2]);
        }
    }

    /// Makes all earlier device work visible to all later device work.
    pub fn full_barrier(&self) {
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
            .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
        // SAFETY: recording state; a plain global memory barrier.
        unsafe {
            self.device.cmd_pipeline_barrier(
                self.cb,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            )
        };
    }

    /// Makes all device writes visible to host reads after the batch.
    fn host_barrier(&self) {
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: recording state.
        unsafe {
            self.device.cmd_pipeline_barrier(
                self.cb,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            )
        };
    }
}

/// A batch's timestamp queries, two per command, and the buffer the
/// batch copies their values into at its end. The completion worker reads
/// them from there: reading a query pool is a driver call that, on some
/// drivers (lavapipe), first waits for the whole device to go idle.
pub struct Stamps {
    pub pool: vk::QueryPool,
    pub values: DeviceBuffer,
}

/// A command buffer being filled, with its commands.
pub struct Batch {
    cb: vk::CommandBuffer,
    pub commands: Vec<Command>,
    waits: Vec<(vk::Semaphore, u64)>,
    /// Binary semaphores waited for before the batch starts and
    /// signalled once it is done (see [`BinaryOps`]).
    binary_waits: Vec<vk::Semaphore>,
    binary_signals: Vec<vk::Semaphore>,
    /// Two timestamps per command on profiling queues (on every queue
    /// while tracing, `VKCL_TRACE`).
    pub queries: Option<Stamps>,
    /// Host time of its submission.
    pub submitted: u64,
}

struct QueueState {
    pending: VecDeque<Command>,
    batch: Option<Batch>,
    /// The last timeline value handed to a batch.
    last_value: u64,
    /// Someone waits for this queue: submit as soon as anything is recorded.
    flush_wanted: bool,
    /// Batches submitted and not yet completed. While there are none the
    /// device has nothing of this queue to run, and what is recorded is
    /// submitted at once: batching would only make it wait.
    in_flight: usize,
    /// In-order queues: the previous command.
    last: Option<Weak<Handle<Event>>>,
    /// Out-of-order queues: the last barrier and the commands since.
    barrier: Option<Weak<Handle<Event>>>,
    since_barrier: Vec<Weak<Handle<Event>>>,
    pool: vk::CommandPool,
    free_cbs: Vec<vk::CommandBuffer>,
    free_query_pools: Vec<Stamps>,
    /// The last breadcrumb number handed to a command.
    crumb_seq: u32,
}

pub struct Queue {
    pub context: Arc<Handle<Context>>,
    pub device: Arc<Handle<Device>>,
    pub properties: cl_command_queue_properties,
    /// The property list as passed to clCreateCommandQueueWithProperties.
    pub properties_array: Vec<cl_queue_properties>,
    pub vk: Arc<LogicalDevice>,
    /// An on-device queue (`CL_QUEUE_ON_DEVICE`) of this many bytes:
    /// kernels enqueue to it, the host does not.
    pub on_device: Option<u32>,
    /// The Vulkan queue this queue submits to (`LogicalDevice::pick_queue`).
    vk_queue: usize,
    pub timeline: vk::Semaphore,
    state: Mutex<QueueState>,
    /// With `VKCL_BREADCRUMBS`: words the device writes as it works
    /// through the queue. With `1`, the first two are the numbers of the
    /// last command it started and of the last it finished (written around
    /// each command), so that a hang report names the command that never
    /// finished; with `1` or `batches`, the third is the timeline value of
    /// the last batch whose commands all ran (its seal, written after
    /// them), which the completion worker checks against the timeline.
    crumbs: Option<DeviceBuffer>,
    /// Where launches' argument blocks are written.
    pub arg_blocks: crate::core::memory::ArgBlocks,
}

impl ClObject for Queue {
    const INVALID: i32 = CL_INVALID_COMMAND_QUEUE;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Queues);
}

/// Work to do once the queue lock is released.
#[derive(Default)]
struct After {
    due: Vec<Due>,
    failed: Vec<Command>,
    flush: Vec<Arc<Handle<Queue>>>,
    progressed: bool,
}

enum Readiness {
    Ready(Vec<(vk::Semaphore, u64)>),
    Failed,
    Wait,
}

impl Batch {
    pub fn cb(&self) -> vk::CommandBuffer {
        self.cb
    }

    /// The timeline values (of other queues) the batch waits for.
    pub fn waits(&self) -> &[(vk::Semaphore, u64)] {
        &self.waits
    }
}

impl Queue {
    pub fn new(
        context: Arc<Handle<Context>>,
        device: Arc<Handle<Device>>,
        properties: cl_command_queue_properties,
        properties_array: Vec<cl_queue_properties>,
        on_device: Option<u32>,
    ) -> ClResult<Arc<Handle<Queue>>> {
        let vk = device.logical()?;
        // First: a buffer that fails to be made frees itself.
        let crumbs = if breadcrumbs() != Crumbs::Off {
            let b = DeviceBuffer::new(&vk, 16, BufferUse::Readback)?;
            b.write(0, &[0; 16]);
            Some(b)
        } else {
            None
        };
        let timeline = vk.create_timeline()?;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(vk.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device and family.
        let pool = unsafe { vk.raw.create_command_pool(&info, None) }.inspect_err(|_| {
            // SAFETY: the semaphore is unused.
            unsafe { vk.raw.destroy_semaphore(timeline, None) }
        })?;
        if properties & CL_QUEUE_PROFILING_ENABLE != 0 {
            vk.timestamp_offset();
        }
        census::add(Kind::Semaphores, 1);
        census::add(Kind::CommandPools, 1);
        let q = Handle::new(Queue {
            context,
            device: device.clone(),
            properties,
            properties_array,
            on_device,
            vk_queue: vk.pick_queue(),
            vk,
            timeline,
            state: Mutex::new(QueueState {
                pending: VecDeque::new(),
                batch: None,
                last_value: 0,
                flush_wanted: false,
                in_flight: 0,
                last: None,
                barrier: None,
                since_barrier: Vec::new(),
                pool,
                free_cbs: Vec::new(),
                free_query_pools: Vec::new(),
                crumb_seq: 0,
            }),
            crumbs,
            arg_blocks: Default::default(),
        });
        device.register_queue(&q);
        Ok(q)
    }

    /// The breadcrumbs (`VKCL_BREADCRUMBS`): the numbers of the last
    /// command the device started and of the last it finished.
    pub fn crumbs(&self) -> Option<(u32, u32)> {
        if breadcrumbs() != Crumbs::Commands {
            return None;
        }
        let [started, finished, _] = self.crumb_words()?;
        Some((started, finished))
    }

    /// The seal of the last batch whose commands the device has run (see
    /// [`Queue::crumbs`]; its timeline value, modulo 2^32), with
    /// breadcrumbs on.
    pub fn sealed(&self) -> Option<u32> {
        Some(self.crumb_words()?[2])
    }

    fn crumb_words(&self) -> Option<[u32; 3]> {
        let c = self.crumbs.as_ref()?;
        let mut words = [0u32; 3];
        // SAFETY: 12 bytes into a 12-byte array; the device may still be
        // writing them (diagnostics only).
        unsafe { c.read_to(0, words.as_mut_ptr().cast(), 12) };
        Some(words)
    }

    pub fn profiling(&self) -> bool {
        self.properties & CL_QUEUE_PROFILING_ENABLE != 0
    }

    pub fn in_order(&self) -> bool {
        self.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE == 0
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open_batch(&self, st: &mut QueueState) -> ClResult<Batch> {
        let d = &self.vk.raw;
        let cb = match st.free_cbs.pop() {
            Some(cb) => cb,
            None => {
                let info = vk::CommandBufferAllocateInfo::default()
                    .command_pool(st.pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1);
                // SAFETY: the pool belongs to this queue and is used under its lock.
                unsafe { d.allocate_command_buffers(&info)?[0] }
            }
        };
        let timed = self.profiling() || crate::core::trace::tracer().is_some();
        let queries = if timed && self.vk.timestamp_bits > 0 {
            Some(match st.free_query_pools.pop() {
                Some(p) => p,
                None => {
                    // The buffer first: one that fails to be made frees itself.
                    let values =
                        DeviceBuffer::new(&self.vk, 16 * BATCH_LIMIT as u64, BufferUse::Readback)?;
                    let info = vk::QueryPoolCreateInfo::default()
                        .query_type(vk::QueryType::TIMESTAMP)
                        .query_count(2 * BATCH_LIMIT as u32);
                    // SAFETY: valid device.
                    let pool = unsafe { d.create_query_pool(&info, None)? };
                    census::add(Kind::QueryPools, 1);
                    Stamps { pool, values }
                }
            })
        } else {
            None
        };
        // SAFETY: the command buffer is not in use (fresh or returned after
        // its batch completed); the pool allows resetting it.
        unsafe {
            d.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())?;
            d.begin_command_buffer(
                cb,
                &vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )?;
            if let Some(qp) = queries.as_ref().map(|q| q.pool) {
                // The pool is fresh or its batch completed: nothing uses it.
                if self.vk.host_query_reset {
                    d.reset_query_pool(qp, 0, 2 * BATCH_LIMIT as u32);
                } else {
                    d.cmd_reset_query_pool(cb, qp, 0, 2 * BATCH_LIMIT as u32);
                }
            }
        }
        Ok(Batch {
            cb,
            commands: Vec::new(),
            waits: Vec::new(),
            binary_waits: Vec::new(),
            binary_signals: Vec::new(),
            queries,
            submitted: 0,
        })
    }

    /// Called by the completion worker when a batch is done.
    pub fn recycle(&self, cb: vk::CommandBuffer, queries: Option<Stamps>) {
        let mut st = self.lock();
        st.in_flight = st.in_flight.saturating_sub(1);
        st.free_cbs.push(cb);
        if let Some(q) = queries {
            st.free_query_pools.push(q);
        }
    }
}

impl Handle<Queue> {
    /// Enqueues a command and returns its event.
    pub fn enqueue(
        self: &Arc<Self>,
        command_type: cl_command_type,
        wait_list: Vec<Arc<Handle<Event>>>,
        ordering: Ordering,
        work: Work,
    ) -> ClResult<Arc<Handle<Event>>> {
        self.enqueue_binary(
            command_type,
            wait_list,
            ordering,
            work,
            BinaryOps::default(),
        )
    }

    /// Enqueues a command that also waits for or signals binary Vulkan
    /// semaphores, and returns its event.
    pub fn enqueue_binary(
        self: &Arc<Self>,
        command_type: cl_command_type,
        wait_list: Vec<Arc<Handle<Event>>>,
        ordering: Ordering,
        mut work: Work,
        binary: BinaryOps,
    ) -> ClResult<Arc<Handle<Event>>> {
        // The semaphores live until the command completes.
        for s in binary.wait.iter().chain(&binary.signal) {
            work.keep.push(Box::new(s.clone()));
        }
        self.takes_commands()?;
        let event = Event::for_command(self, command_type);
        if work.host_access {
            event.set_host_gate();
        }
        let mut after = After::default();
        let result = {
            let mut st = self.lock();
            let explicit = wait_list.len();
            let mut deps = wait_list;
            deps.extend(self.order(&mut st, &event, ordering, explicit == 0));
            st.pending
                .push_back(Command::new(event.clone(), deps, explicit, work, binary));
            self.pump(&mut st, &mut after)
        };
        self.after(after);
        result.map(|()| event)
    }

    /// Enqueues one command done in `parts` (at least one), and returns
    /// its event. Each part but the last is a command of its own, with an
    /// event the application never sees, submitted as soon as it is
    /// recorded: the device does the next part while the completion
    /// worker runs this one's host step (a large read: the device copies
    /// the next piece into staging memory while the host copies this one
    /// out). Part `j` reaches the device only once part `j - ring` has
    /// finished, host step included, so that parts `ring` apart may share
    /// memory. The last part carries the command's event: it completes
    /// after the others (a queue's batches complete in order), and fails
    /// where one of them failed. Its profile runs from the first part's
    /// start to its own end.
    pub fn enqueue_parts(
        self: &Arc<Self>,
        command_type: cl_command_type,
        wait_list: Vec<Arc<Handle<Event>>>,
        mut parts: Vec<Work>,
        ring: usize,
    ) -> ClResult<Arc<Handle<Event>>> {
        let Some(mut last) = parts.pop() else {
            return Err(ClError(CL_INVALID_VALUE));
        };
        if parts.is_empty() {
            return self.enqueue(command_type, wait_list, Ordering::Normal, last);
        }
        self.takes_commands()?;
        let ring = ring.max(1);
        let event = Event::for_command(self, command_type);
        let mut after = After::default();
        let result = {
            let mut st = self.lock();
            let explicit = wait_list.len();
            let implicit = self.order(&mut st, &event, Ordering::Normal, explicit == 0);
            // What part `j` waits for: the command's dependencies, and the
            // part `ring` before it (whose host step gates it).
            let deps_of = |j: usize, earlier: &[Arc<Handle<Event>>]| {
                let mut deps = wait_list.clone();
                deps.extend(j.checked_sub(ring).map(|i| earlier[i].clone()));
                deps.extend(implicit.iter().cloned());
                deps
            };
            let mut earlier: Vec<Arc<Handle<Event>>> = Vec::with_capacity(parts.len());
            for (j, work) in parts.into_iter().enumerate() {
                let part = Event::for_command(self, command_type);
                part.set_host_gate();
                let mut cmd = Command::new(
                    part.clone(),
                    deps_of(j, &earlier),
                    explicit,
                    work,
                    BinaryOps::default(),
                );
                cmd.alone = true;
                st.pending.push_back(cmd);
                earlier.push(part);
            }
            let deps = deps_of(earlier.len(), &earlier);
            let first = earlier[0].clone();
            // The earlier parts' events are final when the last part's host
            // step runs.
            let own = last.complete.take();
            last.complete = Some(Box::new(move || {
                if earlier.iter().any(|e| e.status() < 0) {
                    return Err(ClError(CL_OUT_OF_RESOURCES));
                }
                own.map_or(Ok(()), |f| f())
            }));
            let mut cmd = Command::new(event.clone(), deps, explicit, last, BinaryOps::default());
            cmd.first_part = Some(first);
            st.pending.push_back(cmd);
            self.pump(&mut st, &mut after)
        };
        self.after(after);
        result.map(|()| event)
    }

    /// Whether the host may enqueue to this queue now: not to an
    /// on-device queue (CL_INVALID_COMMAND_QUEUE), nor once the device
    /// is lost (CL_OUT_OF_RESOURCES).
    fn takes_commands(&self) -> ClResult<()> {
        if self.on_device.is_some() {
            return Err(ClError(CL_INVALID_COMMAND_QUEUE));
        }
        if self.vk.is_lost() {
            return Err(ClError(CL_OUT_OF_RESOURCES));
        }
        Ok(())
    }

    /// The commands a new command with `event` waits for by the queue's
    /// ordering rules (on an in-order queue the one before; otherwise the
    /// last barrier, and for a marker or barrier without a wait list every
    /// command since), and notes it in them.
    fn order(
        &self,
        st: &mut QueueState,
        event: &Arc<Handle<Event>>,
        ordering: Ordering,
        no_wait_list: bool,
    ) -> Vec<Arc<Handle<Event>>> {
        let mut deps = Vec::new();
        let up = |w: &Weak<Handle<Event>>| w.upgrade();
        if self.in_order() {
            deps.extend(st.last.as_ref().and_then(up));
            st.last = Some(Arc::downgrade(event));
        } else {
            deps.extend(st.barrier.as_ref().and_then(up));
            if ordering != Ordering::Normal && no_wait_list {
                deps.extend(st.since_barrier.iter().filter_map(up));
            }
            if ordering == Ordering::Barrier {
                st.barrier = Some(Arc::downgrade(event));
                st.since_barrier.clear();
            } else {
                st.since_barrier.retain(|w| w.strong_count() > 0);
                st.since_barrier.push(Arc::downgrade(event));
            }
        }
        deps
    }

    /// clFlush: submits what is recorded, and anything recorded later that
    /// was enqueued before this call.
    pub fn flush(self: &Arc<Self>) -> ClResult<()> {
        let mut after = After::default();
        let result = {
            let mut st = self.lock();
            st.flush_wanted = true;
            self.pump(&mut st, &mut after)
        };
        self.after(after);
        result
    }

    /// clFinish: waits for every command enqueued so far: on an in-order
    /// queue, for the last one; otherwise for a marker.
    pub fn finish(self: &Arc<Self>) -> ClResult<()> {
        if self.in_order() {
            let last = self.lock().last.as_ref().and_then(Weak::upgrade);
            self.flush()?;
            // Gone: it completed, and every command before it.
            if let Some(last) = last {
                last.wait();
            }
            return Ok(());
        }
        let marker = self.enqueue(
            CL_COMMAND_MARKER,
            Vec::new(),
            Ordering::Marker,
            Work::none(),
        )?;
        self.flush()?;
        marker.wait();
        Ok(())
    }

    /// Records what can be recorded and submits when asked to.
    fn pump(self: &Arc<Self>, st: &mut QueueState, after: &mut After) -> ClResult<()> {
        let in_order = self.in_order();
        let mut i = 0;
        while i < st.pending.len() {
            match self.readiness(&st.pending[i], after) {
                Readiness::Ready(waits) => {
                    let cmd = st.pending.remove(i).expect("index in range");
                    let host_access = cmd.host_access;
                    let alone = cmd.alone;
                    let binary = !cmd.binary.is_empty();
                    // A binary wait holds back its whole batch: it opens one.
                    if !cmd.binary.wait.is_empty()
                        && st.batch.as_ref().is_some_and(|b| !b.commands.is_empty())
                    {
                        self.submit(st, after)?;
                    }
                    self.record(st, cmd, waits)?;
                    if host_access
                        || alone
                        || binary
                        || st.in_flight < IN_FLIGHT
                        || st
                            .batch
                            .as_ref()
                            .is_some_and(|b| b.commands.len() >= BATCH_LIMIT)
                    {
                        self.submit(st, after)?;
                    }
                }
                Readiness::Failed => {
                    let cmd = st.pending.remove(i).expect("index in range");
                    after.failed.push(cmd);
                }
                Readiness::Wait if in_order => break,
                Readiness::Wait => i += 1,
            }
        }
        if (st.flush_wanted || st.in_flight < IN_FLIGHT) && st.batch.is_some() {
            self.submit(st, after)?;
        }
        if st.pending.is_empty() {
            st.flush_wanted = false;
        }
        Ok(())
    }

    fn readiness(self: &Arc<Self>, cmd: &Command, after: &mut After) -> Readiness {
        let mut waits = Vec::new();
        for (i, dep) in cmd.deps.iter().enumerate() {
            let status = dep.status();
            if status < 0 && i < cmd.explicit {
                return Readiness::Failed;
            }
            if status <= CL_COMPLETE as cl_int {
                continue;
            }
            let own = dep.queue.as_ref().is_some_and(|q| Arc::ptr_eq(q, self));
            match dep.stage() {
                Stage::Done => {}
                // Its host step has not run yet (it runs once the device
                // is done with it): nothing after it may start before.
                Stage::Submitted { .. } if dep.host_gate() => return Readiness::Wait,
                Stage::Submitted { semaphore, value } => {
                    let same_device = dep
                        .queue
                        .as_ref()
                        .is_none_or(|q| Arc::ptr_eq(&q.vk, &self.vk));
                    // Another Vulkan device's timeline cannot be waited for
                    // on this one: the command stays on the host until the
                    // event is complete.
                    if !same_device {
                        return Readiness::Wait;
                    }
                    if !own {
                        waits.push((semaphore, value));
                    }
                }
                Stage::Recorded if own => {}
                Stage::Recorded | Stage::Pending => {
                    if let Some(q) = dep.queue.as_ref().filter(|_| !own) {
                        if !after.flush.iter().any(|x| Arc::ptr_eq(x, q)) {
                            after.flush.push(q.clone());
                        }
                    }
                    return Readiness::Wait;
                }
            }
        }
        Readiness::Ready(waits)
    }

    fn record(
        self: &Arc<Self>,
        st: &mut QueueState,
        mut cmd: Command,
        waits: Vec<(vk::Semaphore, u64)>,
    ) -> ClResult<()> {
        if st.batch.is_none() {
            st.batch = Some(span("open a batch", || self.open_batch(st))?);
        }
        let batch = st.batch.as_mut().expect("opened above");
        let rec = Recorder {
            device: &self.vk.raw,
            cb: batch.cb,
        };
        let index = batch.commands.len() as u32;
        if let Some(qp) = batch.queries.as_ref().map(|q| q.pool) {
            // SAFETY: recording state; the pool has two queries per command.
            unsafe {
                self.vk.raw.cmd_write_timestamp(
                    batch.cb,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    qp,
                    2 * index,
                )
            };
        }
        rec.full_barrier();
        let current = span("make memory current", || {
            crate::core::memory::make_current(self, &rec, &cmd.uses)
        });
        if let Ok(staging) = &current
            && !staging.is_empty()
        {
            rec.full_barrier();
        }
        if let Some(c) = self
            .crumbs
            .as_ref()
            .filter(|_| breadcrumbs() == Crumbs::Commands)
        {
            st.crumb_seq += 1;
            cmd.crumb = st.crumb_seq;
            rec.fill_buffer(c.raw, 0, 4, cmd.crumb);
        }
        let recorded = match current {
            Ok(staging) => {
                cmd.keep.extend(staging);
                span("record", || {
                    cmd.record.take().map(|f| f(&rec)).unwrap_or(Ok(()))
                })
            }
            Err(e) => Err(e),
        };
        if let Some(c) = self.crumbs.as_ref().filter(|_| cmd.crumb > 0) {
            rec.full_barrier();
            rec.fill_buffer(c.raw, 4, 4, cmd.crumb);
        }
        if let Some(qp) = batch.queries.as_ref().map(|q| q.pool) {
            // SAFETY: as above.
            unsafe {
                self.vk.raw.cmd_write_timestamp(
                    batch.cb,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    qp,
                    2 * index + 1,
                )
            };
        }
        if let Err(e) = recorded {
            // The command cannot run; it still takes its place in the batch
            // so that its event completes in order, with the error.
            log::warn!(target: "vkcl::queue", "a command could not be recorded: {e}");
            cmd.complete = Some(Box::new(move || Err(e)));
        }
        batch
            .binary_waits
            .extend(cmd.binary.wait.iter().map(|s| s.raw));
        batch
            .binary_signals
            .extend(cmd.binary.signal.iter().map(|s| s.raw));
        for w in waits {
            match batch.waits.iter_mut().find(|(s, _)| *s == w.0) {
                Some(existing) => existing.1 = existing.1.max(w.1),
                None => batch.waits.push(w),
            }
        }
        cmd.event.set_recorded();
        batch.commands.push(cmd);
        Ok(())
    }

    fn submit(self: &Arc<Self>, st: &mut QueueState, after: &mut After) -> ClResult<()> {
        let Some(mut batch) = st.batch.take() else {
            return Ok(());
        };
        let d = &self.vk.raw;
        let value = st.last_value + 1;
        let rec = Recorder {
            device: d,
            cb: batch.cb,
        };
        if let Some(c) = &self.crumbs {
            // The seal: written once every command of the batch has run.
            rec.full_barrier();
            rec.fill_buffer(c.raw, 8, 4, value as u32);
        }
        if let Some(q) = &batch.queries {
            // The timestamps into memory the worker reads directly.
            rec.full_barrier();
            // SAFETY: recording state; every one of the first 2n queries
            // was reset and written by the batch, and the buffer holds
            // 2 * BATCH_LIMIT values.
            unsafe {
                d.cmd_copy_query_pool_results(
                    batch.cb,
                    q.pool,
                    0,
                    2 * batch.commands.len() as u32,
                    q.values.raw,
                    0,
                    8,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                )
            };
        }
        span("end the batch", || {
            rec.host_barrier();
            // SAFETY: the command buffer is in the recording state.
            unsafe { d.end_command_buffer(batch.cb) }
        })?;
        // Binary semaphores take no value: theirs are ignored.
        let wait_sems: Vec<vk::Semaphore> = batch
            .waits
            .iter()
            .map(|w| w.0)
            .chain(batch.binary_waits.iter().copied())
            .collect();
        let wait_values: Vec<u64> = batch
            .waits
            .iter()
            .map(|w| w.1)
            .chain(batch.binary_waits.iter().map(|_| 0))
            .collect();
        let wait_stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; wait_sems.len()];
        let signal: Vec<vk::Semaphore> = std::iter::once(self.timeline)
            .chain(batch.binary_signals.iter().copied())
            .collect();
        let signal_values: Vec<u64> = std::iter::once(value)
            .chain(batch.binary_signals.iter().map(|_| 0))
            .collect();
        let cbs = [batch.cb];
        let mut timeline_info = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&wait_sems)
            .wait_dst_stage_mask(&wait_stages)
            .command_buffers(&cbs)
            .signal_semaphores(&signal)
            .push_next(&mut timeline_info);
        let at = host_time_ns();
        let submitted = self.vk.submit(self.vk_queue, &[submit], vk::Fence::null());
        if let Some(t) = crate::core::trace::tracer() {
            let args = format!(
                r#""queue":"{:p}","batch":{value},"commands":{}"#,
                Arc::as_ptr(self),
                batch.commands.len()
            );
            t.host("vkcl", "vkQueueSubmit", at, host_time_ns(), &args);
        }
        if let Err(e) = submitted {
            log::error!(target: "vkcl::queue", "vkQueueSubmit failed: {e}");
            self.context
                .notify_error(&format!("vkcl: submission failed ({e})"));
            // The batch is lost: fail its commands.
            st.free_cbs.push(batch.cb);
            if let Some(q) = batch.queries {
                st.free_query_pools.push(q);
            }
            after.failed.extend(batch.commands);
            return Err(ClError::from(e));
        }
        // The batch's first command runs now only where nothing is ahead
        // of it: no earlier batch of the queue in flight, no wait for
        // another queue. Otherwise its commands stay CL_SUBMITTED until
        // the batch completes.
        let starts_now =
            st.in_flight == 0 && batch.waits.is_empty() && batch.binary_waits.is_empty();
        st.last_value = value;
        st.in_flight += 1;
        for (i, cmd) in batch.commands.iter().enumerate() {
            after.due.push(cmd.event.mark_submitted(
                self.timeline,
                value,
                at,
                i == 0 && starts_now,
            ));
        }
        after.progressed = true;
        batch.submitted = at;
        self.device.worker().push(self.clone(), value, batch);
        Ok(())
    }

    /// Tries again to record held-back commands (something they waited for
    /// has moved on).
    pub fn repump(self: &Arc<Self>) {
        let mut after = After::default();
        {
            let mut st = self.lock();
            if st.pending.is_empty()
                && !((st.flush_wanted || st.in_flight < IN_FLIGHT) && st.batch.is_some())
            {
                return;
            }
            if let Err(e) = self.pump(&mut st, &mut after) {
                log::warn!(target: "vkcl::queue", "recording held-back commands failed: {e}");
            }
        }
        self.after(after);
    }

    fn after(self: &Arc<Self>, after: After) {
        for due in after.due {
            due.run();
        }
        let failed = !after.failed.is_empty();
        for cmd in after.failed {
            cmd.event
                .finish(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, None);
        }
        // Queues holding work this queue waits for submit it as soon as it
        // is recorded; the device's repump loop does the recording, so that
        // long chains across queues never recurse.
        let mut submit_elsewhere = false;
        for q in &after.flush {
            let newly = {
                let mut st = q.lock();
                let newly = !st.flush_wanted && st.batch.is_some();
                st.flush_wanted = true;
                newly
            };
            // Only a queue with something recorded has anything to submit
            // now; held-back commands are recorded when what they wait
            // for moves on, which triggers its own repump.
            if newly {
                if Arc::ptr_eq(&q.device, &self.device) {
                    submit_elsewhere = true;
                } else {
                    q.device.repump();
                }
            }
        }
        if after.progressed || failed || submit_elsewhere {
            self.device.repump();
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Batches the watchdog gave up on may still run on the device, with
        // this queue's command buffers and timeline: they stay, as they do
        // when the process exits.
        let Some(_driver) = self.vk.destroyable() else {
            return;
        };
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = st.batch.take() {
            st.free_cbs.push(b.cb);
            if let Some(q) = b.queries {
                st.free_query_pools.push(q);
            }
        }
        let d = &self.vk.raw;
        // SAFETY: a queue is dropped only when no batch of it is in flight
        // (in-flight batches hold a reference), so nothing uses these.
        unsafe {
            for q in st.free_query_pools.drain(..) {
                d.destroy_query_pool(q.pool, None);
                census::remove(Kind::QueryPools, 1);
            }
            d.destroy_command_pool(st.pool, None);
            // The completion worker may have seen the last value through
            // the counter while the driver still finishes that signal
            // (lavapipe moves the counter before it releases the lock it
            // signals under): a wait for the value, already reached,
            // returns at once and goes through that lock first.
            if st.last_value > 0 {
                let (sems, values) = ([self.timeline], [st.last_value]);
                let info = vk::SemaphoreWaitInfo::default()
                    .semaphores(&sems)
                    .values(&values);
                let _ = d.wait_semaphores(&info, 1_000_000_000);
            }
            d.destroy_semaphore(self.timeline, None);
        }
        census::remove(Kind::Semaphores, 1);
        census::remove(Kind::CommandPools, 1);
    }
}

/// What the queues mark on the device as it works (`VKCL_BREADCRUMBS`,
/// see [`Queue::crumbs`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Crumbs {
    Off,
    /// `batches`: each batch's seal only, one barrier and one write per
    /// batch.
    Batches,
    /// `1`: the seals, and which commands started and finished (a barrier
    /// more per command).
    Commands,
}

pub(crate) fn breadcrumbs() -> Crumbs {
    static LEVEL: std::sync::OnceLock<Crumbs> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| match std::env::var("VKCL_BREADCRUMBS").as_deref() {
        Ok("1") => Crumbs::Commands,
        Ok("batches") => Crumbs::Batches,
        _ => Crumbs::Off,
    })
}
