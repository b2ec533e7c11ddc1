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
//! Sync points are the commands' numbers (from 1): in a buffer recorded
//! for an out-of-order queue a command waits for the commands its
//! sync-point list names and for the last barrier recorded before it; in
//! one recorded for an in-order queue each command also waits for the one
//! before, whatever queue the buffer is enqueued on. Enqueues of one buffer run one
//! after another (each waits for the previous one's final command), as
//! their launches share memory.

use std::sync::{Arc, Mutex};

use opencl_sys::*;

use crate::core::context::Context;
use crate::core::error::{ClError, ClResult, err};
use crate::core::event::Event;
use crate::core::object::{ClObject, Handle};
use crate::core::queue::{Ordering, Queue, Work};

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
    /// The final command of the last enqueue, which the next one waits for.
    last: Option<Arc<Handle<Event>>>,
}

pub struct CommandBuffer {
    pub context: Arc<Handle<Context>>,
    /// The queue the buffer records for (the extension's single queue).
    pub queue: Arc<Handle<Queue>>,
    /// The property list as the application passed it, terminator
    /// included (empty without one).
    pub properties: Vec<cl_command_buffer_properties_khr>,
    state: Mutex<State>,
}

impl ClObject for CommandBuffer {
    const INVALID: i32 = CL_INVALID_COMMAND_BUFFER_KHR;
    const KIND: Option<crate::core::census::Kind> =
        Some(crate::core::census::Kind::CommandBufferObjects);
}

impl CommandBuffer {
    /// A command buffer for `queue`. `properties` is the checked list.
    pub fn new(
        queue: Arc<Handle<Queue>>,
        properties: Vec<cl_command_buffer_properties_khr>,
    ) -> Arc<Handle<CommandBuffer>> {
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
        if !st.finalized {
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
                Some(plan) => plan(queue)?,
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

/// Reads a command buffer property list (null: none). The extension
/// defines `CL_COMMAND_BUFFER_FLAGS_KHR`, whose flags belong to other
/// extensions vkcl does not offer: only 0 is valid.
///
/// # Safety
/// `props` is null or a zero-terminated list of name and value pairs.
pub unsafe fn read_properties(
    props: *const cl_command_buffer_properties_khr,
) -> ClResult<Vec<cl_command_buffer_properties_khr>> {
    let mut out = Vec::new();
    if props.is_null() {
        return Ok(out);
    }
    let mut seen = Vec::new();
    let mut i = 0;
    loop {
        // SAFETY: the caller promises a zero-terminated list of pairs.
        let name = unsafe { *props.add(i) };
        out.push(name);
        if name == 0 {
            return Ok(out);
        }
        // SAFETY: as above: a name is followed by its value.
        let value = unsafe { *props.add(i + 1) };
        out.push(value);
        i += 2;
        if seen.contains(&name) {
            return err(CL_INVALID_VALUE);
        }
        seen.push(name);
        match name {
            CL_COMMAND_BUFFER_FLAGS_KHR if value == 0 => {}
            _ => return Err(ClError(CL_INVALID_VALUE)),
        }
    }
}
