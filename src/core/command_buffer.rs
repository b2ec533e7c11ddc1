//! Command buffers of `cl_khr_command_buffer`: commands recorded once and
//! enqueued any number of times.
//!
//! A recorded command is its checked plan (see `api::memory::Plan`): the
//! same checks and the same device work as the matching enqueue, with the
//! values of the call that recorded it (for a kernel, a launch made from
//! the arguments set then). Enqueuing the buffer makes each command's work
//! afresh and enqueues it on the queue, between a start marker that waits
//! for the enqueue's wait list and a final command that waits for every
//! recorded one and whose event the application gets; the queue batches
//! them into one submission where their dependencies allow.
//!
//! Where every command is device work alone and the context has one
//! device, the first enqueue records that work once into a Vulkan
//! secondary command buffer (`Replay`) that later enqueues execute again
//! from their batch, until an update of a mutable dispatch changes it.
//!
//! Sync points are the commands' numbers (from 1): in a buffer recorded
//! for an out-of-order queue a command waits for the commands its
//! sync-point list names and for the last barrier recorded before it; in
//! one recorded for an in-order queue each command also waits for the one
//! before, whatever queue the buffer is enqueued on. Enqueues of one buffer run one
//! after another (each waits for the previous one's final command), as
//! their launches share memory.

use std::any::Any;
use std::sync::{Arc, Mutex};

use ash::vk;
use opencl_sys::*;

use crate::core::census::{self, Kind};
use crate::core::context::Context;
use crate::core::error::{ClError, ClResult, err};
use crate::core::event::Event;
use crate::core::kernel::Kernel;
use crate::core::launch::Launch;
use crate::core::memory::Use;
use crate::core::object::{ClObject, Handle};
use crate::core::queue::{Ordering, Queue, Recorder, Work};
use crate::vk::device::LogicalDevice;

/// `CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR` (opencl-sys 0.6 has a
/// wrong value for it).
pub const CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR: cl_command_buffer_properties_khr = 0x12B7;

/// The parts of a kernel command that vkcl lets an application update
/// (`CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR`): all of them.
pub const MUTABLE_FIELDS: cl_mutable_dispatch_fields_khr = CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR
    | CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR
    | CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR
    | CL_MUTABLE_DISPATCH_ARGUMENTS_KHR
    | CL_MUTABLE_DISPATCH_EXEC_INFO_KHR;

/// A recorded command's device work, made afresh for each enqueue.
pub type Plan = Arc<dyn Fn(&Arc<Handle<Queue>>) -> ClResult<Work> + Send + Sync>;

struct Recorded {
    command_type: cl_command_type,
    plan: Option<Plan>,
    /// Sync points (command numbers) this command waits for.
    waits_for: Vec<cl_sync_point_khr>,
    barrier: bool,
}

#[derive(Default)]
struct State {
    finalized: bool,
    commands: Vec<Recorded>,
    /// The kernel commands that have a mutable-dispatch handle.
    dispatches: Vec<Arc<Handle<MutableDispatch>>>,
    /// The final command of the last enqueue, which the next one waits for.
    last: Option<Arc<Handle<Event>>>,
    /// The commands' device work recorded into Vulkan by an earlier
    /// enqueue, while it still holds.
    replay: Option<Arc<Replay>>,
}

/// A command buffer's device work recorded once into a Vulkan secondary
/// command buffer, and what that recording uses. Enqueues execute it from
/// their batch's command buffer and hold it until they complete.
struct Replay {
    device: Arc<LogicalDevice>,
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
    /// What the recorded commands use: launches, buffers, staging.
    keep: Vec<Box<dyn Any + Send + Sync>>,
    /// The memory objects the commands read and write.
    uses: Vec<Use>,
}

impl Replay {
    /// A secondary command buffer that may be pending in several batches
    /// at once, in a pool of its own; the caller records into it.
    fn begin(device: &Arc<LogicalDevice>) -> Result<Replay, vk::Result> {
        let info = vk::CommandPoolCreateInfo::default().queue_family_index(device.queue_family);
        // SAFETY: valid device and family.
        let pool = unsafe { device.raw.create_command_pool(&info, None)? };
        census::add(Kind::CommandPools, 1);
        let mut replay = Replay {
            device: device.clone(),
            pool,
            cb: vk::CommandBuffer::null(),
            keep: Vec::new(),
            uses: Vec::new(),
        };
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::SECONDARY)
            .command_buffer_count(1);
        // SAFETY: the pool is this replay's own.
        let cb = unsafe { device.raw.allocate_command_buffers(&info)?[0] };
        let inheritance = vk::CommandBufferInheritanceInfo::default();
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE)
            .inheritance_info(&inheritance);
        // SAFETY: a fresh command buffer of this pool.
        unsafe { device.raw.begin_command_buffer(cb, &begin)? };
        replay.cb = cb;
        Ok(replay)
    }

    /// Records `works` one after another, each seeing what the ones before
    /// wrote, and ends the recording. A work that cannot be recorded
    /// gives its error.
    fn record(mut self, works: Vec<Work>) -> ClResult<Replay> {
        let rec = Recorder {
            device: &self.device.raw,
            cb: self.cb,
        };
        for (i, w) in works.into_iter().enumerate() {
            if i > 0 {
                rec.full_barrier();
            }
            self.keep.extend(w.keep);
            self.uses.extend(w.uses);
            if let Some(record) = w.record {
                record(&rec)?;
            }
        }
        // SAFETY: recording state, begun in `begin`.
        unsafe { self.device.raw.end_command_buffer(self.cb)? };
        Ok(self)
    }

    /// Work that executes the recording.
    fn work(self: &Arc<Self>) -> Work {
        let cb = self.cb;
        Work {
            record: Some(Box::new(move |r| {
                // SAFETY: a primary command buffer in the recording state;
                // the secondary is executable and kept by this work, and
                // was begun for simultaneous use.
                unsafe { r.device.cmd_execute_commands(r.cb, &[cb]) };
                Ok(())
            })),
            complete: None,
            keep: vec![Box::new(self.clone())],
            host_access: false,
            uses: self.uses.clone(),
        }
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        census::remove(Kind::CommandPools, 1);
        let Some(_driver) = self.device.destroyable() else {
            return; // a hung device may still use it, or the process is exiting
        };
        // SAFETY: every enqueue that executes the recording holds it until
        // its batch completed; the pool frees its command buffer.
        unsafe { self.device.raw.destroy_command_pool(self.pool, None) };
    }
}

/// The properties of a command buffer (`clCreateCommandBufferKHR`).
#[derive(Default, Clone)]
pub struct Properties {
    /// The list as the application passed it, terminator included (empty
    /// without one).
    pub list: Vec<cl_command_buffer_properties_khr>,
    /// `CL_COMMAND_BUFFER_MUTABLE_KHR`: kernel commands may be updated.
    pub mutable: bool,
    /// `CL_MUTABLE_DISPATCH_ASSERT_NO_ADDITIONAL_WORK_GROUPS_KHR`.
    pub no_additional_groups: bool,
}

pub struct CommandBuffer {
    pub context: Arc<Handle<Context>>,
    /// The queue the buffer records for (the extension's single queue).
    pub queue: Arc<Handle<Queue>>,
    pub properties: Properties,
    state: Mutex<State>,
}

/// Whether a command buffer can be enqueued
/// (`CL_COMMAND_BUFFER_STATE_KHR`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BufferState {
    Recording,
    /// Finalized, but a kernel command still lacks arguments.
    Finalized,
    Executable,
}

/// The NDRange of a kernel command as the application gave it: `global`
/// has `work_dim` entries, `offset` and `local` as many or none.
#[derive(Clone, Debug)]
pub struct Sizes {
    pub offset: Vec<usize>,
    pub global: Vec<usize>,
    pub local: Vec<usize>,
}

/// What a mutable dispatch runs now: its own copy of the kernel with the
/// arguments as recorded or updated, its sizes, and the launch they make
/// (none while an argument is missing).
#[derive(Clone)]
pub struct DispatchState {
    pub kernel: Arc<Handle<Kernel>>,
    pub sizes: Sizes,
    pub launch: Option<Arc<Launch>>,
}

/// A kernel command of a command buffer that the application holds a
/// handle to (`cl_mutable_command_khr`) and may update between enqueues
/// (`cl_khr_command_buffer_mutable_dispatch`).
pub struct MutableDispatch {
    /// The command buffer's handle (the buffer owns the dispatch).
    pub buffer: usize,
    pub queue: Arc<Handle<Queue>>,
    /// The kernel the command was recorded with.
    pub recorded_kernel: Arc<Handle<Kernel>>,
    pub work_dim: u32,
    /// The property list as the application passed it (empty for none).
    pub properties: Vec<cl_command_properties_khr>,
    /// What updates may change.
    pub fields: cl_mutable_dispatch_fields_khr,
    /// Whether every work-group had the local size when recorded; an
    /// update may not change that.
    pub uniform: bool,
    state: Mutex<DispatchState>,
}

impl ClObject for MutableDispatch {
    const INVALID: i32 = CL_INVALID_MUTABLE_COMMAND_KHR;
}

impl MutableDispatch {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        buffer: &Arc<Handle<CommandBuffer>>,
        recorded_kernel: Arc<Handle<Kernel>>,
        work_dim: u32,
        properties: Vec<cl_command_properties_khr>,
        fields: cl_mutable_dispatch_fields_khr,
        uniform: bool,
        state: DispatchState,
    ) -> Arc<Handle<MutableDispatch>> {
        Handle::new(MutableDispatch {
            buffer: Handle::as_raw::<std::ffi::c_void>(buffer) as usize,
            queue: buffer.queue.clone(),
            recorded_kernel,
            work_dim,
            properties,
            fields,
            uniform,
            state: Mutex::new(state),
        })
    }

    pub fn state(&self) -> DispatchState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The device work of one run as the dispatch stands.
    pub fn work(&self) -> ClResult<Work> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.launch
            .as_ref()
            .map(Launch::work)
            .ok_or(ClError(CL_INVALID_OPERATION))
    }
}

impl ClObject for CommandBuffer {
    const INVALID: i32 = CL_INVALID_COMMAND_BUFFER_KHR;
    const KIND: Option<crate::core::census::Kind> =
        Some(crate::core::census::Kind::CommandBufferObjects);
}

impl CommandBuffer {
    /// A command buffer for `queue` with checked properties.
    pub fn new(queue: Arc<Handle<Queue>>, properties: Properties) -> Arc<Handle<CommandBuffer>> {
        Handle::new(CommandBuffer {
            context: queue.context.clone(),
            queue,
            properties,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_finalized(&self) -> bool {
        self.lock().finalized
    }

    pub fn state(&self) -> BufferState {
        Self::state_of(&self.lock())
    }

    fn state_of(st: &State) -> BufferState {
        if !st.finalized {
            BufferState::Recording
        } else if st.dispatches.iter().any(|d| d.state().launch.is_none()) {
            BufferState::Finalized
        } else {
            BufferState::Executable
        }
    }

    /// Records a kernel command that the application may update: its
    /// work is the dispatch's as it stands at each enqueue.
    pub fn record_dispatch(
        &self,
        waits_for: &[cl_sync_point_khr],
        dispatch: Arc<Handle<MutableDispatch>>,
    ) -> ClResult<cl_sync_point_khr> {
        let d = dispatch.clone();
        let plan: Plan = Arc::new(move |_| d.work());
        self.push(
            CL_COMMAND_NDRANGE_KERNEL,
            waits_for,
            Some(plan),
            Some(dispatch),
        )
    }

    /// clUpdateMutableCommandsKHR: `stage` gets a way to tell this
    /// buffer's dispatches and gives the new state of each dispatch it
    /// updates, or an error; the states are set together, under the lock
    /// enqueues take, or none is. Fails with CL_INVALID_OPERATION before
    /// finalization or when the buffer was not made mutable.
    pub fn update(
        &self,
        stage: impl FnOnce(
            &dyn Fn(&Arc<Handle<MutableDispatch>>) -> bool,
        ) -> ClResult<Vec<(Arc<Handle<MutableDispatch>>, DispatchState)>>,
    ) -> ClResult<()> {
        let mut st = self.lock();
        if !st.finalized || !self.properties.mutable {
            return err(CL_INVALID_OPERATION);
        }
        let owns =
            |d: &Arc<Handle<MutableDispatch>>| st.dispatches.iter().any(|o| Arc::ptr_eq(o, d));
        let updated = stage(&owns)?;
        // The recorded work is the dispatches' old work.
        st.replay = None;
        for (d, state) in updated {
            *d.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
        }
        Ok(())
    }

    /// Records a command: `plan` makes its work at each enqueue (none for
    /// a barrier). Gives its sync point. Fails with CL_INVALID_OPERATION
    /// once finalized and CL_INVALID_SYNC_POINT_WAIT_LIST_KHR for a sync
    /// point not recorded before.
    pub fn record(
        &self,
        command_type: cl_command_type,
        waits_for: &[cl_sync_point_khr],
        plan: Option<Plan>,
    ) -> ClResult<cl_sync_point_khr> {
        self.push(command_type, waits_for, plan, None)
    }

    fn push(
        &self,
        command_type: cl_command_type,
        waits_for: &[cl_sync_point_khr],
        plan: Option<Plan>,
        dispatch: Option<Arc<Handle<MutableDispatch>>>,
    ) -> ClResult<cl_sync_point_khr> {
        let mut st = self.lock();
        if st.finalized {
            return err(CL_INVALID_OPERATION);
        }
        let recorded = st.commands.len() as cl_sync_point_khr;
        if waits_for.iter().any(|&p| p == 0 || p > recorded) {
            return err(CL_INVALID_SYNC_POINT_WAIT_LIST_KHR);
        }
        st.commands.push(Recorded {
            command_type,
            barrier: plan.is_none(),
            plan,
            waits_for: waits_for.to_vec(),
        });
        st.dispatches.extend(dispatch);
        Ok(recorded + 1)
    }

    /// clFinalizeCommandBufferKHR: no more commands; enqueues allowed.
    pub fn finalize(&self) -> ClResult<()> {
        let mut st = self.lock();
        if st.finalized {
            return err(CL_INVALID_OPERATION);
        }
        st.finalized = true;
        Ok(())
    }

    /// clEnqueueCommandBufferKHR on `queue` (the buffer's own or a
    /// compatible one), after `wait_list`: gives the event of the whole.
    pub fn enqueue(
        &self,
        queue: &Arc<Handle<Queue>>,
        wait_list: Vec<Arc<Handle<Event>>>,
    ) -> ClResult<Arc<Handle<Event>>> {
        let mut st = self.lock();
        if Self::state_of(&st) != BufferState::Executable {
            return err(CL_INVALID_OPERATION);
        }
        let mut before = wait_list;
        before.extend(st.last.take());
        let start = if before.is_empty() && queue.in_order() {
            None
        } else {
            // With an empty list on an out-of-order queue, a marker waits
            // for every command enqueued before: as an enqueue does.
            Some(queue.enqueue(CL_COMMAND_MARKER, before, Ordering::Marker, Work::none())?)
        };
        // Commands that are device work alone run as one queue command in
        // the recorded order (an order every sync point and barrier
        // allows), with a barrier between them as between queue commands:
        // the recording of an earlier enqueue where there is one for this
        // device.
        if let Some(replay) = st
            .replay
            .as_ref()
            .filter(|r| Arc::ptr_eq(&r.device, &queue.vk))
        {
            let work = replay.work();
            return self.enqueue_whole(&mut st, queue, start, work);
        }
        let mut works = Vec::with_capacity(st.commands.len());
        for c in &st.commands {
            if let Some(plan) = &c.plan {
                works.push(plan(queue)?);
            }
        }
        if works.iter().all(|w| w.complete.is_none() && !w.host_access) {
            let work = if self.context.devices.len() == 1 {
                match Replay::begin(&queue.vk) {
                    Ok(replay) => match replay.record(works) {
                        Ok(replay) => {
                            log::debug!(target: "vkcl::queue",
                                "command buffer recorded into Vulkan ({} commands)", st.commands.len());
                            let replay = Arc::new(replay);
                            st.replay = Some(replay.clone());
                            replay.work()
                        }
                        // The command cannot run: it completes with the
                        // error, as a queue command whose recording fails.
                        Err(e) => Work {
                            record: Some(Box::new(move |_| Err(e))),
                            ..Work::none()
                        },
                    },
                    Err(_) => in_sequence(works),
                }
            } else {
                // In contexts of several devices the memory a command uses
                // may move between enqueues: its work is made afresh.
                in_sequence(works)
            };
            return self.enqueue_whole(&mut st, queue, start, work);
        }
        // Host steps (printf output) run after their command's batch: each
        // command is a queue command of its own.
        let mut works = works.into_iter();
        let mut events: Vec<Arc<Handle<Event>>> = Vec::with_capacity(st.commands.len());
        let mut last_barrier: Option<Arc<Handle<Event>>> = None;
        let in_order = self.queue.in_order();
        for c in &st.commands {
            let mut deps: Vec<Arc<Handle<Event>>> = start.iter().cloned().collect();
            deps.extend(last_barrier.iter().cloned());
            if in_order {
                deps.extend(events.last().cloned());
            }
            if c.barrier && c.waits_for.is_empty() {
                deps.extend(events.iter().cloned());
            }
            deps.extend(c.waits_for.iter().map(|&p| events[p as usize - 1].clone()));
            let work = match &c.plan {
                Some(_) => works.next().unwrap_or_else(Work::none),
                None => Work::none(),
            };
            let event = queue.enqueue(c.command_type, deps, Ordering::Normal, work)?;
            if c.barrier {
                last_barrier = Some(event.clone());
            }
            events.push(event);
        }
        // The whole: complete when every command is, failed when one fails.
        let mut all = events;
        all.extend(start);
        let whole = queue.enqueue(
            CL_COMMAND_COMMAND_BUFFER_KHR,
            all,
            Ordering::Normal,
            Work::none(),
        )?;
        st.last = Some(whole.clone());
        Ok(whole)
    }
}

impl CommandBuffer {
    /// Enqueues the device work of every command as one queue command,
    /// after `start`, and keeps its event for the next enqueue.
    fn enqueue_whole(
        &self,
        st: &mut State,
        queue: &Arc<Handle<Queue>>,
        start: Option<Arc<Handle<Event>>>,
        work: Work,
    ) -> ClResult<Arc<Handle<Event>>> {
        let whole = queue.enqueue(
            CL_COMMAND_COMMAND_BUFFER_KHR,
            start.into_iter().collect(),
            Ordering::Normal,
            work,
        )?;
        st.last = Some(whole.clone());
        Ok(whole)
    }
}

/// Device work that records `works` one after another, each seeing what
/// the ones before wrote. None has a host step.
fn in_sequence(works: Vec<Work>) -> Work {
    let mut records = Vec::with_capacity(works.len());
    let mut keep = Vec::new();
    let mut uses = Vec::new();
    for w in works {
        records.extend(w.record);
        keep.extend(w.keep);
        uses.extend(w.uses);
    }
    Work {
        record: Some(Box::new(move |r| {
            for (i, record) in records.into_iter().enumerate() {
                if i > 0 {
                    r.full_barrier();
                }
                record(r)?;
            }
            Ok(())
        })),
        complete: None,
        keep,
        host_access: false,
        uses,
    }
}

/// Walks a zero-terminated list of name and value pairs (null: none),
/// handing each pair to `each` in order, and gives the list as passed,
/// terminator included (empty for null). Stops at the first error `each`
/// gives.
///
/// # Safety
/// `props` is null or a zero-terminated list of name and value pairs.
pub unsafe fn read_pairs(
    props: *const cl_properties,
    mut each: impl FnMut(cl_properties, cl_properties) -> ClResult<()>,
) -> ClResult<Vec<cl_properties>> {
    let mut list = Vec::new();
    if props.is_null() {
        return Ok(list);
    }
    let mut i = 0;
    loop {
        // SAFETY: the caller promises a zero-terminated list of pairs.
        let name = unsafe { *props.add(i) };
        list.push(name);
        if name == 0 {
            return Ok(list);
        }
        // SAFETY: as above: a name is followed by its value.
        let value = unsafe { *props.add(i + 1) };
        list.push(value);
        i += 2;
        each(name, value)?;
    }
}

/// Reads a command buffer property list (null: none):
/// `CL_COMMAND_BUFFER_FLAGS_KHR` (mutable, simultaneous use; enqueues of
/// one buffer are ordered, so simultaneous use is always possible) and
/// `CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR`.
///
/// # Safety
/// `props` is null or a zero-terminated list of name and value pairs.
pub unsafe fn read_properties(
    props: *const cl_command_buffer_properties_khr,
) -> ClResult<Properties> {
    let mut out = Properties::default();
    let mut seen = Vec::new();
    // SAFETY: passed on from the caller.
    out.list = unsafe {
        read_pairs(props, |name, value| {
            if seen.contains(&name) {
                return err(CL_INVALID_VALUE);
            }
            seen.push(name);
            match name {
                CL_COMMAND_BUFFER_FLAGS_KHR
                    if value
                        & !(CL_COMMAND_BUFFER_MUTABLE_KHR
                            | CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR)
                        == 0 =>
                {
                    out.mutable = value & CL_COMMAND_BUFFER_MUTABLE_KHR != 0;
                }
                CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR
                    if value & !CL_MUTABLE_DISPATCH_ASSERT_NO_ADDITIONAL_WORK_GROUPS_KHR == 0 =>
                {
                    out.no_additional_groups = value != 0;
                }
                _ => return err(CL_INVALID_VALUE),
            }
            Ok(())
        })?
    };
    Ok(out)
}
