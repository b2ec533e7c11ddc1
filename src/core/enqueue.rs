//! Device-side enqueue, host side. A command whose kernel may enqueue
//! (`enqueue_kernel`, `enqueue_marker`) gets a launch list (a buffer the
//! kernel writes launch records and device events into; its layout is the
//! rewriter's, see `compiler::spirv::p1_kernel::enqueue`). Once the
//! command's device work is done, its host step runs what the records ask
//! for, level by level: the records whose events are complete run
//! together as one submission, and the records those kernels write are
//! read when that submission is done, until none is left. The command's
//! event completes after the whole tree, as a parent kernel completes
//! with its children.
//!
//! Every device queue of a context feeds the same list: device queues are
//! out of order, so only events order records, and a record names the
//! launch that wrote it, so an event completes only when its kernel's own
//! children have completed too. The host step waits for each level on the
//! completion worker's thread.

use std::collections::HashMap;
use std::sync::Arc;

use opencl_sys::*;

use crate::compiler::spirv::p1_kernel::enqueue as abi;
use crate::core::error::ClResult;
use crate::core::kernel::{ArgValue, Kernel};
use crate::core::launch::{Launch, NdRange};
use crate::core::memory::Staging;
use crate::core::object::Handle;
use crate::core::queue::{Queue, Recorder};
use crate::vk::memory::BufferUse;

/// On-device queue sizes (CL_QUEUE_SIZE): the preferred and the largest.
pub const PREFERRED_QUEUE_SIZE: u32 = 256 << 10;
pub const MAX_QUEUE_SIZE: u32 = 16 << 20;
/// On-device queues per device, and device events per command.
pub const MAX_QUEUES: u32 = 64;
pub const MAX_EVENTS: u32 = 65536;

/// A command's launch list.
pub struct LaunchList {
    staging: Arc<Staging>,
    /// Bytes of its record area.
    records: u32,
    /// The default device queue's value for `get_default_queue` (0 for
    /// none).
    default_queue: u64,
}

/// Where the record area starts.
const RECORDS_START: u64 = abi::EVENTS_AT + abi::EVENT_BYTES * MAX_EVENTS as u64;

impl LaunchList {
    /// A list of `records` bytes of records.
    pub fn new(
        vk: &Arc<crate::vk::device::LogicalDevice>,
        records: u32,
        default_queue: u64,
    ) -> ClResult<Arc<LaunchList>> {
        let staging = Staging::new(
            vk,
            (RECORDS_START + u64::from(records)) as usize,
            BufferUse::Readback,
        )?;
        let list = LaunchList {
            staging,
            records,
            default_queue,
        };
        list.reset();
        Ok(Arc::new(list))
    }

    pub fn address(&self) -> u64 {
        self.staging.buffer().address
    }

    /// Empties the records and the event table.
    fn reset(&self) {
        let mut header = [0u8; abi::EVENTS_AT as usize];
        let mut put = |at: u64, bytes: &[u8]| {
            header[at as usize..at as usize + bytes.len()].copy_from_slice(bytes)
        };
        put(abi::RECORD_BYTES_USED, &0u32.to_ne_bytes());
        put(abi::RECORD_CAPACITY, &self.records.to_ne_bytes());
        put(abi::EVENTS_USED, &0u32.to_ne_bytes());
        put(abi::EVENT_CAPACITY, &MAX_EVENTS.to_ne_bytes());
        put(abi::DEFAULT_QUEUE, &self.default_queue.to_ne_bytes());
        put(abi::RECORDS_AT, &(RECORDS_START as u32).to_ne_bytes());
        self.staging.buffer().write(0, &header);
    }

    fn read(&self, at: u64, len: usize) -> Vec<u8> {
        let mut bytes = vec![0u8; len];
        // SAFETY: `bytes` has room for `len` bytes, and the list holds them.
        unsafe {
            self.staging
                .buffer()
                .read_to(at as usize, bytes.as_mut_ptr().cast(), len)
        };
        bytes
    }

    fn word(&self, at: u64) -> u32 {
        let b = self.read(at, 4);
        u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The records written since the last call, which empties the area.
    fn take_records(&self) -> Vec<Record> {
        let used = self.word(abi::RECORD_BYTES_USED).min(self.records);
        self.staging
            .buffer()
            .write(abi::RECORD_BYTES_USED as usize, &0u32.to_ne_bytes());
        let bytes = self.read(RECORDS_START, used as usize);
        let mut out = Vec::new();
        let mut at = 0usize;
        while at + abi::RECORD_FIXED as usize <= bytes.len() {
            let word = |o: usize| {
                u32::from_ne_bytes(bytes[at + o..at + o + 4].try_into().expect("4 bytes"))
            };
            let long = |o: usize| {
                u64::from_ne_bytes(bytes[at + o..at + o + 8].try_into().expect("8 bytes"))
            };
            let size = word(0) as usize;
            if size < abi::RECORD_FIXED as usize || at + size > bytes.len() {
                break;
            }
            let (n_locals, n_waits) = (word(16) as usize, word(20) as usize);
            let lists = abi::RECORD_FIXED as usize;
            let literal_at = (lists + 4 * (n_locals + n_waits)).next_multiple_of(8);
            let literal_len = word(28) as usize;
            if literal_at + literal_len > size {
                break;
            }
            let triple = |o: usize| [long(o), long(o + 8), long(o + 16)];
            out.push(Record {
                kind: word(4),
                work_dim: word(12),
                event: word(24),
                offset: triple(32),
                global: triple(56),
                local: triple(80),
                parent: word(abi::RECORD_PARENT as usize),
                locals: (0..n_locals).map(|k| word(lists + 4 * k)).collect(),
                waits: (0..n_waits)
                    .map(|k| word(lists + 4 * (n_locals + k)))
                    .collect(),
                literal: bytes[at + literal_at..at + literal_at + literal_len].to_vec(),
            });
            at += size;
        }
        out
    }

    /// The statuses of the user events the kernels made, by slot.
    fn user_events(&self) -> Vec<(usize, i32)> {
        let n = self.word(abi::EVENTS_USED).min(MAX_EVENTS) as usize;
        let table = self.read(abi::EVENTS_AT, n * abi::EVENT_BYTES as usize);
        table
            .chunks(abi::EVENT_BYTES as usize)
            .enumerate()
            .filter(|(_, e)| u32::from_ne_bytes([e[4], e[5], e[6], e[7]]) == abi::EVENT_USER)
            .map(|(slot, e)| (slot, i32::from_ne_bytes([e[0], e[1], e[2], e[3]])))
            .collect()
    }
}

/// One launch record, as the kernel wrote it.
struct Record {
    /// The block kernel (by the program's block list, from 1), or 0 for a
    /// marker.
    kind: u32,
    work_dim: u32,
    /// The event it returns (slot plus 1), or 0.
    event: u32,
    offset: [u64; 3],
    global: [u64; 3],
    local: [u64; 3],
    /// The launch that wrote it.
    parent: u32,
    locals: Vec<u32>,
    waits: Vec<u32>,
    literal: Vec<u8>,
}

/// A launch of the tree: the command's own kernel (0) or a record.
struct Node {
    record: Option<Record>,
    /// Its own run (until its level is done) plus its children not yet
    /// complete.
    outstanding: u32,
    /// Why it failed, where it did.
    failed: Option<cl_int>,
    /// The status it ended with, once complete.
    status: Option<cl_int>,
}

impl Node {
    fn new(record: Option<Record>) -> Node {
        Node {
            record,
            outstanding: 1,
            failed: None,
            status: None,
        }
    }
}

/// Runs what the command's kernel enqueued, and what that enqueued in
/// turn, until nothing is left; `blocks` are the program's block kernels
/// by record kind.
pub fn run_tree(
    queue: &Arc<Handle<Queue>>,
    program: &Arc<Handle<crate::core::program::Program>>,
    blocks: &[String],
    list: &Arc<LaunchList>,
) -> ClResult<()> {
    let mut nodes = vec![Node::new(None)];
    // Event slot -> the node whose event it is.
    let mut event_nodes: HashMap<u32, usize> = HashMap::new();
    let mut user: HashMap<u32, i32> = HashMap::new();
    let mut kernels: HashMap<u32, Arc<Handle<Kernel>>> = HashMap::new();
    let mut pending: Vec<usize> = Vec::new();
    let mut ran: Vec<usize> = vec![0];
    let result = loop {
        for mut r in list.take_records() {
            let at = nodes.len();
            let parent = (r.parent as usize).min(at - 1);
            r.parent = parent as u32;
            nodes[parent].outstanding += 1;
            if r.event != 0 {
                event_nodes.insert(r.event, at);
            }
            nodes.push(Node::new(Some(r)));
            pending.push(at);
        }
        for n in std::mem::take(&mut ran) {
            finish(&mut nodes, n, CL_COMPLETE);
        }
        for (slot, status) in list.user_events() {
            user.insert(slot as u32 + 1, status);
        }
        // An event's status: complete (0), failed (< 0) or not yet (None).
        let status_of = |nodes: &[Node], id: u32| -> Option<cl_int> {
            if let Some(&n) = event_nodes.get(&id) {
                return nodes[n].status;
            }
            match user.get(&id) {
                Some(&s) if s <= 0 => Some(s),
                Some(_) => None,
                // Not an event of this command: nothing to wait for.
                None => Some(CL_COMPLETE),
            }
        };
        // Markers, and records whose wait failed, end without running;
        // one may unblock another.
        let mut ready = Vec::new();
        loop {
            let mut moved = false;
            let mut still = Vec::new();
            for n in std::mem::take(&mut pending) {
                let waits = &nodes[n].record.as_ref().expect("records").waits;
                let statuses: Vec<Option<cl_int>> =
                    waits.iter().map(|&w| status_of(&nodes, w)).collect();
                if statuses.iter().any(Option::is_none) {
                    still.push(n);
                    continue;
                }
                let failed = statuses.iter().flatten().any(|&s| s < 0);
                let marker = nodes[n].record.as_ref().is_some_and(|r| r.kind == 0);
                if failed {
                    finish(&mut nodes, n, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
                    moved = true;
                } else if marker {
                    finish(&mut nodes, n, CL_COMPLETE);
                    moved = true;
                } else {
                    ready.push(n);
                }
            }
            pending = still;
            if !moved {
                break;
            }
        }
        if ready.is_empty() {
            if !pending.is_empty() {
                // What waits for a user event no kernel will set.
                log::warn!(target: "vkcl::enqueue", "{} enqueued kernels wait for events that never complete; they fail", pending.len());
                for n in std::mem::take(&mut pending) {
                    finish(&mut nodes, n, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
                }
            }
            break Ok(());
        }
        // The level: each record's literal in one upload, then its launch.
        let total: usize = ready
            .iter()
            .map(|&n| {
                nodes[n]
                    .record
                    .as_ref()
                    .expect("records")
                    .literal
                    .len()
                    .next_multiple_of(16)
            })
            .sum();
        let literals = match Staging::new(&queue.vk, total.max(16), BufferUse::Upload) {
            Ok(s) => s,
            Err(e) => break Err(e),
        };
        let mut launches = Vec::new();
        let mut at = 0usize;
        for &n in &ready {
            let r = nodes[n].record.as_ref().expect("records");
            literals.buffer().write(at, &r.literal);
            let address = literals.buffer().address + at as u64;
            at += r.literal.len().next_multiple_of(16);
            match launch(queue, program, blocks, &mut kernels, r, address, list, n) {
                Ok(l) => launches.push((n, l)),
                Err(e) => {
                    log::warn!(target: "vkcl::enqueue", "an enqueued kernel cannot run: error {}", e.0);
                    finish(&mut nodes, n, e.0);
                }
            }
        }
        let device = &queue.vk.raw;
        let recorded = queue.vk.one_shot(|cb| {
            let r = Recorder { device, cb };
            for (_, l) in &launches {
                let _ = l.record(&r);
            }
            r.full_barrier();
        });
        if let Err(e) = recorded {
            break Err(crate::core::error::ClError::from(e));
        }
        for (n, l) in launches {
            let _ = l.print();
            ran.push(n);
        }
        drop(literals);
    };
    list.reset();
    result
}

/// Ends node `n`'s own part with `status`: a node with nothing
/// outstanding completes (with its failure, if it failed), and its parent
/// may then complete too. A child's failure does not fail its parent.
fn finish(nodes: &mut [Node], n: usize, status: cl_int) {
    let mut n = n;
    if status < 0 {
        nodes[n].failed.get_or_insert(status);
    }
    loop {
        let node = &mut nodes[n];
        node.outstanding -= 1;
        if node.outstanding > 0 {
            return;
        }
        node.status = Some(node.failed.unwrap_or(CL_COMPLETE));
        match &node.record {
            Some(r) if (r.parent as usize) < n => n = r.parent as usize,
            _ => return,
        }
    }
}

/// The launch of record `r` (node `n`), its literal at `literal`.
#[allow(clippy::too_many_arguments)]
fn launch(
    queue: &Arc<Handle<Queue>>,
    program: &Arc<Handle<crate::core::program::Program>>,
    blocks: &[String],
    kernels: &mut HashMap<u32, Arc<Handle<Kernel>>>,
    r: &Record,
    literal: u64,
    list: &Arc<LaunchList>,
    n: usize,
) -> ClResult<Launch> {
    let name = blocks
        .get(r.kind as usize - 1)
        .ok_or(crate::core::error::ClError(CL_INVALID_KERNEL))?;
    let kernel = match kernels.get(&r.kind) {
        Some(k) => k.clone(),
        None => {
            let k = Kernel::new(program, name)?;
            kernels.insert(r.kind, k.clone());
            k
        }
    };
    let k = kernel.clone_kernel();
    k.set_arg(0, ArgValue::Address(literal))?;
    for (i, &size) in r.locals.iter().enumerate() {
        k.set_arg(1 + i, ArgValue::Local(size as usize))?;
    }
    k.check_args_set()?;
    let dims = r.work_dim.clamp(1, 3) as usize;
    let to_usize = |v: &[u64; 3]| -> Vec<usize> { v[..dims].iter().map(|&x| x as usize).collect() };
    let local = if r.local[..dims].iter().all(|&l| l == 0) {
        Vec::new()
    } else {
        to_usize(&r.local)
    };
    let range = NdRange::new(
        &k,
        &queue.device,
        &to_usize(&r.offset),
        &to_usize(&r.global),
        &local,
    )?;
    Launch::new_in(queue, &k, range, Some((list.clone(), n as u32)))
}
