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
pub const MAX_EVENTS: u32 = 32768;

/// Bytes of records a command's launch list holds: what kernels enqueue
/// runs only once the command's device work is done, so the list holds
/// every record of a level, not a queue's worth that the device drains as
/// it goes: the default device queue's size (or the preferred one), but
/// at least 1 KiB per work-item of the command (up to 64 MiB) and 1 MiB.
pub fn record_bytes(queue_size: Option<u32>, work_items: u64) -> u32 {
    let per_item = work_items.saturating_mul(1024).min(64 << 20) as u32;
    queue_size
        .unwrap_or(PREFERRED_QUEUE_SIZE)
        .max(per_item)
        .max(1 << 20)
}

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

    /// The event slots handed out so far: (slot id, status, kind,
    /// capture address).
    fn events(&self) -> Vec<(u32, i32, u32, u64)> {
        let n = self.word(abi::EVENTS_USED).min(MAX_EVENTS) as usize;
        let table = self.read(abi::EVENTS_AT, n * abi::EVENT_BYTES as usize);
        table
            .chunks(abi::EVENT_BYTES as usize)
            .enumerate()
            .map(|(slot, e)| {
                let word = |o: usize| u32::from_ne_bytes(e[o..o + 4].try_into().expect("4 bytes"));
                let capture = abi::EVENT_CAPTURE as usize;
                let address =
                    u64::from_ne_bytes(e[capture..capture + 8].try_into().expect("8 bytes"));
                (slot as u32 + 1, word(0) as i32, word(4), address)
            })
            .collect()
    }

    /// Ends event `id` (slot plus 1) with `status` and its profiling
    /// values, for kernels that look at it later.
    fn end_event(&self, id: u32, status: cl_int, times: [u64; 2]) {
        let at = abi::EVENTS_AT + abi::EVENT_BYTES * u64::from(id - 1);
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&times[0].to_ne_bytes());
        bytes[8..].copy_from_slice(&times[1].to_ne_bytes());
        let b = self.staging.buffer();
        b.write((at + abi::EVENT_TIMES) as usize, &bytes);
        b.write(at as usize, &status.to_ne_bytes());
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
    /// When its kernel started and ended, and when it completed with its
    /// children (host nanoseconds from the tree's start, all above 0).
    started: u64,
    ended: u64,
    completed: u64,
}

impl Node {
    fn new(record: Option<Record>) -> Node {
        Node {
            record,
            outstanding: 1,
            failed: None,
            status: None,
            started: 0,
            ended: 0,
            completed: 0,
        }
    }

    /// CLK_PROFILING_COMMAND_EXEC_TIME's two values.
    fn times(&self) -> [u64; 2] {
        [
            self.ended.saturating_sub(self.started).max(1),
            self.completed.saturating_sub(self.started).max(1),
        ]
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
    let clock = std::time::Instant::now();
    let now = || clock.elapsed().as_nanos() as u64 + 1;
    let mut nodes = vec![Node::new(None)];
    // Event id (slot plus 1) -> the node whose event it is.
    let mut event_nodes: HashMap<u32, usize> = HashMap::new();
    let mut kernels: HashMap<u32, Arc<Handle<Kernel>>> = HashMap::new();
    let mut scatter: Option<Scatter> = None;
    // Events whose capture address has had its values.
    let mut captured: std::collections::HashSet<u32> = Default::default();
    let mut pending: Vec<usize> = Vec::new();
    let mut ran: Vec<usize> = vec![0];
    let mut done: Vec<usize> = Vec::new();
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
        let t = now();
        for n in std::mem::take(&mut ran) {
            finish(&mut nodes, n, CL_COMPLETE, t, &mut done);
        }
        let events = list.events();
        let user: HashMap<u32, i32> = events
            .iter()
            .filter(|e| e.2 == abi::EVENT_USER)
            .map(|e| (e.0, e.1))
            .collect();
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
                if failed || marker {
                    let t = now();
                    nodes[n].started = t;
                    nodes[n].ended = t;
                    let status = if failed {
                        CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
                    } else {
                        CL_COMPLETE
                    };
                    finish(&mut nodes, n, status, t, &mut done);
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
        if ready.is_empty() && !pending.is_empty() {
            // What waits for a user event no kernel will set.
            log::warn!(target: "vkcl::enqueue", "{} enqueued kernels wait for events that never complete; they fail", pending.len());
            let t = now();
            for n in std::mem::take(&mut pending) {
                finish(
                    &mut nodes,
                    n,
                    CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
                    t,
                    &mut done,
                );
            }
        }
        // Ended events: their status and times for kernels to read, and
        // the values of captures made before they ended.
        for n in done.drain(..) {
            if let Some(r) = &nodes[n].record
                && r.event != 0
            {
                list.end_event(
                    r.event,
                    nodes[n].status.unwrap_or(CL_COMPLETE),
                    nodes[n].times(),
                );
            }
        }
        let mut pairs: Vec<u64> = Vec::new();
        for &(id, _, kind, address) in &events {
            if kind != abi::EVENT_COMMAND || address == 0 || captured.contains(&id) {
                continue;
            }
            if let Some(&n) = event_nodes.get(&id)
                && nodes[n].status.is_some()
            {
                let [exec, total] = nodes[n].times();
                pairs.extend([address, exec, address + 8, total]);
                captured.insert(id);
            }
        }
        if ready.is_empty() && pairs.is_empty() {
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
                    let t = now();
                    finish(&mut nodes, n, e.0, t, &mut done);
                }
            }
        }
        let captures = if pairs.is_empty() {
            None
        } else {
            let s = match &scatter {
                Some(s) => s,
                None => match Scatter::new(&queue.vk) {
                    Ok(s) => scatter.insert(s),
                    Err(e) => break Err(e),
                },
            };
            match s.upload(&queue.vk, &pairs) {
                Ok(c) => Some(c),
                Err(e) => break Err(e),
            }
        };
        let device = &queue.vk.raw;
        let started = now();
        let recorded = queue.vk.one_shot(|cb| {
            let r = Recorder { device, cb };
            // The pairs' staging (the tuple's first) lives until after the
            // wait.
            if let (Some(s), Some((_, push, groups))) = (&scatter, &captures) {
                r.dispatch(&s.pipeline, push, [*groups, 1, 1], None);
                r.full_barrier();
            }
            for (_, l) in &launches {
                let _ = l.record(&r);
            }
            r.full_barrier();
        });
        let ended = now();
        if let Err(e) = recorded {
            break Err(crate::core::error::ClError::from(e));
        }
        for (n, l) in launches {
            let _ = l.print();
            nodes[n].started = started;
            nodes[n].ended = ended;
            ran.push(n);
        }
        drop(literals);
    };
    list.reset();
    result
}

/// A small compute pipeline that stores 64-bit values at device
/// addresses: (address, value) pairs in a buffer, one per invocation. It
/// writes the profiling values of captures made before their event ended.
struct Scatter {
    _module: crate::vk::pipeline::KernelModule,
    pipeline: crate::vk::pipeline::ComputePipeline,
}

/// The scatter shader: push constants hold the pairs' address and count.
const SCATTER: &str = r#"
OpCapability Shader
OpCapability Int64
OpCapability PhysicalStorageBufferAddresses
OpExtension "SPV_KHR_physical_storage_buffer"
OpMemoryModel PhysicalStorageBuffer64 GLSL450
OpEntryPoint GLCompute %main "main" %gid %pc
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %Push Block
OpMemberDecorate %Push 0 Offset 0
OpMemberDecorate %Push 1 Offset 8
OpDecorate %ptr_u64 ArrayStride 8
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%u32 = OpTypeInt 32 0
%u64 = OpTypeInt 64 0
%v3 = OpTypeVector %u32 3
%in_v3 = OpTypePointer Input %v3
%gid = OpVariable %in_v3 Input
%Push = OpTypeStruct %u64 %u32
%pc_ptr = OpTypePointer PushConstant %Push
%pc = OpVariable %pc_ptr PushConstant
%pc_u64 = OpTypePointer PushConstant %u64
%pc_u32 = OpTypePointer PushConstant %u32
%ptr_u64 = OpTypePointer PhysicalStorageBuffer %u64
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%c2 = OpConstant %u32 2
%main = OpFunction %void None %fn
%entry = OpLabel
%ids = OpLoad %v3 %gid
%x = OpCompositeExtract %u32 %ids 0
%count_at = OpAccessChain %pc_u32 %pc %c1
%count = OpLoad %u32 %count_at
%inside = OpULessThan %bool %x %count
OpSelectionMerge %end None
OpBranchConditional %inside %body %end
%body = OpLabel
%pairs_at = OpAccessChain %pc_u64 %pc %c0
%pairs = OpLoad %u64 %pairs_at
%base = OpConvertUToPtr %ptr_u64 %pairs
%i = OpIMul %u32 %x %c2
%j = OpIAdd %u32 %i %c1
%address_at = OpPtrAccessChain %ptr_u64 %base %i
%address = OpLoad %u64 %address_at Aligned 8
%value_at = OpPtrAccessChain %ptr_u64 %base %j
%value = OpLoad %u64 %value_at Aligned 8
%target = OpConvertUToPtr %ptr_u64 %address
OpStore %target %value Aligned 8
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"#;

/// The scatter shader's words.
fn scatter_words() -> Result<Vec<u32>, String> {
    use spirv_tools::assembler::Assembler;
    let binary = spirv_tools::assembler::create(Some(spirv_tools::TargetEnv::Vulkan_1_2))
        .assemble(SCATTER, spirv_tools::assembler::AssemblerOptions::default())
        .map_err(|e| e.to_string())?;
    Ok(binary.as_words().to_vec())
}

impl Scatter {
    fn new(vk: &Arc<crate::vk::device::LogicalDevice>) -> ClResult<Scatter> {
        let words = scatter_words().map_err(|e| {
            log::error!(target: "vkcl::enqueue", "the scatter shader does not assemble: {e}");
            crate::core::error::ClError(CL_OUT_OF_RESOURCES)
        })?;
        let module = crate::vk::pipeline::KernelModule::new(
            vk,
            "vkcl's scatter shader",
            &words,
            16,
            Vec::new(),
            None,
        )?;
        let pipeline = module.pipeline([64, 1, 1], &[])?;
        Ok(Scatter {
            _module: module,
            pipeline,
        })
    }

    /// The pairs in an upload buffer, the push constants that name them
    /// and the work-groups to dispatch.
    fn upload(
        &self,
        vk: &Arc<crate::vk::device::LogicalDevice>,
        pairs: &[u64],
    ) -> ClResult<(Arc<Staging>, Vec<u8>, u32)> {
        let bytes: Vec<u8> = pairs.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let staging = Staging::new(vk, bytes.len(), BufferUse::Upload)?;
        staging.buffer().write(0, &bytes);
        let count = (pairs.len() / 2) as u32;
        let mut push = Vec::with_capacity(16);
        push.extend(staging.buffer().address.to_ne_bytes());
        push.extend(count.to_ne_bytes());
        push.extend(0u32.to_ne_bytes());
        Ok((staging, push, count.div_ceil(64)))
    }
}

/// Ends node `n`'s own part with `status` at `now`: a node with nothing
/// outstanding completes (with its failure, if it failed) and is added to
/// `done`, and its parent may then complete too. A child's failure does
/// not fail its parent.
fn finish(nodes: &mut [Node], n: usize, status: cl_int, now: u64, done: &mut Vec<usize>) {
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
        node.completed = now;
        done.push(n);
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
