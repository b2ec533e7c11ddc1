//! Pass 1e (phase 1): Device-side enqueue. `enqueue_kernel` and
//! `enqueue_marker` write launch records into the launch list of the
//! command that runs the kernel; the host reads them when the command's
//! device work is done and runs what they ask for (see
//! `core::enqueue`). Device events are slots of the list's event table.
//!
//! The list is a buffer whose device address arrives in the push
//! constants (the interface pass stores it into `Ctx::enqueue_list`'s
//! private variable, and the launch's number into `Ctx::enqueue_parent`'s). It starts with a header of 32-bit words:
//! * [`RECORD_BYTES_USED`]: bytes of records written so far (atomic);
//! * [`RECORD_CAPACITY`]: bytes the record area holds;
//! * [`EVENTS_USED`]: event slots handed out so far (atomic);
//! * [`EVENT_CAPACITY`]: event slots the table holds;
//! * [`DEFAULT_QUEUE`]: two words, the default device queue's value (0
//!   where the context has none);
//! * [`RECORDS_AT`]: the byte offset of the record area.
//!
//! Event slots of [`EVENT_BYTES`] start at [`EVENTS_AT`]: a status word
//! (`CL_SUBMITTED` for a user event until set; the host writes
//! `CL_COMPLETE` or an error there when the event ends), a kind word (1 for
//! a command, 2 for a user event), the address `capture_event_profiling_info`
//! asked for (two words), and the two 64-bit profiling values the host
//! writes when the event ends ([`EVENT_TIMES`]): the command's execution
//! time and the time until it and its children were complete, in
//! nanoseconds. A capture of an event already complete copies them at
//! once; for one not yet complete the host writes them to the address
//! before anything waiting for the event runs. A `clk_event_t` is a pointer to its slot; a
//! `queue_t` a pointer that is null or not (every enqueue goes to the
//! list of the running command, whichever device queue it names).
//!
//! A record (8-byte aligned) is: its size, the block kernel (index in the
//! kernel's [`Enqueues`] plus 1; 0 for a marker), the flags, the work
//! dimension, the number of `__local` sizes, the number of events waited
//! for, the returned event (slot index plus 1, or 0), the block literal's
//! size; then the NDRange's offsets, global sizes and local sizes (three
//! 64-bit words each); the number the host gave the launch that wrote it
//! (push constants next to the list's address; 0 for the command's own
//! kernel) and a word of padding; then the `__local` sizes and the waited events'
//! slot numbers (plus 1), one word each; then, 8-byte aligned, the block
//! literal (the block's captured values), copied from the kernel's
//! private memory.
//!
//! Takes `select`'s module, with the names of the block kernels that
//! `OpEnqueueKernel` instructions invoke (read before `select` drops
//! them). Guarantees no queue or device event type and no device-enqueue
//! instruction is left; returns the program's block kernels, by record
//! kind.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{MemoryAccess, Op, StorageClass, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::builder::Builder;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

/// Header words, by byte offset.
pub const RECORD_BYTES_USED: u64 = 0;
pub const RECORD_CAPACITY: u64 = 4;
pub const EVENTS_USED: u64 = 8;
pub const EVENT_CAPACITY: u64 = 12;
pub const DEFAULT_QUEUE: u64 = 16;
pub const RECORDS_AT: u64 = 24;
/// Where the event table starts, and the bytes of one slot.
pub const EVENTS_AT: u64 = 64;
pub const EVENT_BYTES: u64 = 32;
/// Where a slot holds the capture address, and the profiling values.
pub const EVENT_CAPTURE: u64 = 8;
pub const EVENT_TIMES: u64 = 16;
/// Where a record holds the number of the launch that wrote it.
pub const RECORD_PARENT: u64 = 104;
/// Bytes of a record before its `__local` sizes.
pub const RECORD_FIXED: u64 = 112;

/// Event slot kinds.
pub const EVENT_COMMAND: u32 = 1;
pub const EVENT_USER: u32 = 2;

/// The device-side error codes enqueues return.
const CLK_SUCCESS: i32 = 0;
const CLK_INVALID_QUEUE: i32 = -102;
const CLK_DEVICE_QUEUE_FULL: i32 = -161;
const CLK_EVENT_ALLOCATION_FAILURE: i32 = -100;
const CLK_INVALID_NDRANGE: i32 = -160;
/// Event statuses.
const CL_SUBMITTED: u32 = 2;
const CL_QUEUED: u32 = 3;

/// The block kernels of the program, sorted: record kind k names
/// `blocks[k - 1]`, whichever of the program's kernels wrote it.
pub type Enqueues = Vec<String>;

/// Whether the module uses device-side enqueue at all.
pub fn used(module: &rspirv::dr::Module) -> bool {
    module
        .types_global_values
        .iter()
        .any(|t| matches!(t.class.opcode, Op::TypeQueue | Op::TypeDeviceEvent))
        || module
            .all_inst_iter()
            .any(|i| invoke_operand(i.class.opcode).is_some())
}

/// The operand index of the block function in instructions that name one.
fn invoke_operand(op: Op) -> Option<usize> {
    match op {
        Op::EnqueueKernel => Some(6),
        // After the NDRange or the sub-group count.
        Op::GetKernelNDrangeSubGroupCount
        | Op::GetKernelNDrangeMaxSubGroupSize
        | Op::GetKernelLocalSizeForSubgroupCount => Some(1),
        // First.
        Op::GetKernelWorkGroupSize
        | Op::GetKernelPreferredWorkGroupSizeMultiple
        | Op::GetKernelMaxNumSubgroups => Some(0),
        _ => None,
    }
}

/// The names of the functions `OpEnqueueKernel` invokes (a block kernel's
/// body has its entry point's name), by function id.
pub fn invoke_names(module: &rspirv::dr::Module) -> HashMap<Word, String> {
    // Every rewrite and reflection asks; only modules that declare the
    // capability can have such instructions.
    let declares = module.capabilities.iter().any(|c| {
        c.operands.first()
            == Some(&Operand::Capability(
                rspirv::spirv::Capability::DeviceEnqueue,
            ))
    });
    if !declares {
        return HashMap::default();
    }
    let invoked: Vec<Word> = module
        .all_inst_iter()
        .filter_map(|i| id_at(i, invoke_operand(i.class.opcode)?))
        .collect();
    module
        .debug_names
        .iter()
        .filter(|n| n.class.opcode == Op::Name)
        .filter_map(|n| {
            let f = id_at(n, 0)?;
            let Some(Operand::LiteralString(s)) = n.operands.get(1) else {
                return None;
            };
            invoked.contains(&f).then(|| (f, s.clone()))
        })
        .collect()
}

/// The names of the block kernels a module's kernels may enqueue: entry
/// points of their own, which applications do not see as kernels.
pub fn block_kernels(module: &rspirv::dr::Module) -> Vec<String> {
    sorted(&invoke_names(module))
}

/// The block kernels of `names` ([`invoke_names`]), sorted: the record
/// kinds of the program's kernels.
fn sorted(names: &HashMap<Word, String>) -> Enqueues {
    let mut all: Vec<String> = names.values().cloned().collect();
    all.sort();
    all.dedup();
    all
}

pub fn run(
    ctx: &mut Ctx,
    fid: Word,
    caps: &DeviceCaps,
    names: &HashMap<Word, String>,
) -> Result<Option<Enqueues>, String> {
    literal_parameters(ctx, fid)?;
    if !used(&ctx.module) {
        return Ok(None);
    }
    let uint = ctx.uint(32);
    // Queues and device events become pointers into the launch list, in
    // place (pointer types may repeat).
    for t in &mut ctx.module.types_global_values {
        if matches!(t.class.opcode, Op::TypeQueue | Op::TypeDeviceEvent) {
            *t = Instruction::new(
                Op::TypePointer,
                None,
                t.result_id,
                vec![
                    Operand::StorageClass(StorageClass::CrossWorkgroup),
                    Operand::IdRef(uint),
                ],
            );
        }
    }
    ctx.sort_globals();
    let ulong = ctx.uint(64);
    let list = ctx.private_variable(ulong);
    ctx.enqueue_list = Some(list);
    let parent = ctx.private_variable(ulong);
    ctx.enqueue_parent = Some(parent);
    let types = ctx.value_types();
    let mut pass = Pass::new(ctx, list, parent, names, caps);
    let mut functions = std::mem::take(&mut pass.ctx.module.functions);
    let result = (|| {
        for f in &mut functions {
            for b in &mut f.blocks {
                let mut out = Vec::with_capacity(b.instructions.len());
                for i in std::mem::take(&mut b.instructions) {
                    pass.lower(&types, i, &mut out)?;
                }
                b.instructions = out;
            }
        }
        Ok(())
    })();
    let added = std::mem::take(&mut pass.added);
    let blocks = std::mem::take(&mut pass.blocks);
    ctx.module.functions = functions;
    ctx.module.functions.extend(added);
    result.map(|()| Some(blocks))
}

/// The statuses an enqueue function returns, with the blocks they come
/// from (the exit block's phi).
type Codes = Vec<(Word, Word)>;

/// Whether an enqueue has a wait list and a returned event.
#[derive(Clone, Copy)]
struct Site {
    waits: bool,
    returns_event: bool,
}

/// A block kernel's literal parameter (a `Generic` pointer) becomes a
/// `CrossWorkgroup` one, cast to `Generic` where the kernel starts: the
/// host passes the literal's device address.
fn literal_parameters(ctx: &mut Ctx, fid: Word) -> Result<(), String> {
    let Some(at) = ctx
        .module
        .functions
        .iter()
        .position(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(fid))
    else {
        return Err("kernel function missing".into());
    };
    let generic: Vec<(usize, Word, Word)> = ctx.module.functions[at]
        .parameters
        .iter()
        .enumerate()
        .filter_map(|(k, p)| {
            let ty = p.result_type?;
            match ctx.pointer_parts(ty)? {
                (StorageClass::Generic, pointee) => Some((k, pointee, ty)),
                _ => None,
            }
        })
        .collect();
    if generic.is_empty() {
        return Ok(());
    }
    let mut casts = Vec::new();
    let mut renamed: HashMap<Word, Word> = HashMap::default();
    for (k, pointee, generic_ty) in generic {
        let global = ctx.pointer(StorageClass::CrossWorkgroup, pointee);
        let param = &mut ctx.module.functions[at].parameters[k];
        let old = param.result_id.ok_or("parameter without id")?;
        param.result_type = Some(global);
        let new = ctx.fresh();
        ctx.module.functions[at].parameters[k].result_id = Some(new);
        casts.push(Instruction::new(
            Op::PtrCastToGeneric,
            Some(generic_ty),
            Some(old),
            vec![Operand::IdRef(new)],
        ));
        renamed.insert(old, new);
    }
    // Names and decorations stay with the parameter.
    for i in ctx
        .module
        .debug_names
        .iter_mut()
        .chain(ctx.module.annotations.iter_mut())
    {
        if let Some(Operand::IdRef(t)) = i.operands.first_mut()
            && let Some(&n) = renamed.get(t)
        {
            *t = n;
        }
    }
    let f = &ctx.module.functions[at];
    let ret = f
        .def
        .as_ref()
        .and_then(|d| d.result_type)
        .ok_or("kernel without a type")?;
    let params: Vec<Word> = f.parameters.iter().filter_map(|p| p.result_type).collect();
    let ty = ctx.function_type(ret, &params);
    if let Some(def) = ctx.module.functions[at].def.as_mut() {
        def.operands[1] = Operand::IdRef(ty);
    }
    crate::compiler::spirv::common::ctx::insert_at_kernel_start(
        &mut ctx.module.functions,
        fid,
        casts,
    )
}

struct Pass<'a> {
    ctx: &'a mut Ctx,
    list: Word,
    /// The private variable holding the launch's number.
    parent: Word,
    names: &'a HashMap<Word, String>,
    caps: &'a DeviceCaps,
    added: Vec<rspirv::dr::Function>,
    blocks: Enqueues,
    uint: Word,
    ulong: Word,
    bool_ty: Word,
}

impl<'a> Pass<'a> {
    fn new(
        ctx: &'a mut Ctx,
        list: Word,
        parent: Word,
        names: &'a HashMap<Word, String>,
        caps: &'a DeviceCaps,
    ) -> Pass<'a> {
        let uint = ctx.uint(32);
        let ulong = ctx.uint(64);
        let bool_ty = ctx.ty(Op::TypeBool, vec![]);
        Pass {
            ctx,
            list,
            parent,
            names,
            caps,
            added: Vec::new(),
            blocks: sorted(names),
            uint,
            ulong,
            bool_ty,
        }
    }

    fn ulong_const(&mut self, v: u64) -> Word {
        self.ctx.const_int(self.ulong, v)
    }

    fn int_const(&mut self, v: i32) -> Word {
        self.ctx.const_u32(v as u32)
    }

    /// The launch list's address.
    fn base(&mut self, b: &mut Builder) -> Word {
        b.ids(self.ctx, Op::Load, self.ulong, &[self.list])
    }

    /// A `CrossWorkgroup` pointer to a `ty` at address `at + offset`.
    fn at(&mut self, b: &mut Builder, at: Word, offset: u64, ty: Word) -> Word {
        let address = if offset == 0 {
            at
        } else {
            let k = self.ulong_const(offset);
            b.ids(self.ctx, Op::IAdd, self.ulong, &[at, k])
        };
        let ptr = self.ctx.pointer(StorageClass::CrossWorkgroup, ty);
        b.ids(self.ctx, Op::ConvertUToPtr, ptr, &[address])
    }

    fn store(&mut self, b: &mut Builder, at: Word, offset: u64, value: Word, ty: Word) {
        let p = self.at(b, at, offset, ty);
        b.void(Op::Store, vec![Operand::IdRef(p), Operand::IdRef(value)]);
    }

    fn load(&mut self, b: &mut Builder, at: Word, offset: u64, ty: Word) -> Word {
        let p = self.at(b, at, offset, ty);
        b.ids(self.ctx, Op::Load, ty, &[p])
    }

    /// An atomic add of `n` to the word at `at + offset`, returning the old
    /// value.
    fn fetch_add(&mut self, b: &mut Builder, at: Word, offset: u64, n: Word) -> Word {
        let p = self.at(b, at, offset, self.uint);
        let old = b.atomic(self.ctx, Op::AtomicIAdd, Some(self.uint), p, &[n]);
        old.expect("an add has a result")
    }

    fn add(&mut self, b: Builder, value: Option<Word>) -> Word {
        let id = b.id;
        self.added.push(b.finish(value));
        id
    }

    /// Replaces device-enqueue instruction `i` by a call or by plain
    /// instructions; anything else passes.
    fn lower(
        &mut self,
        types: &HashMap<Word, Word>,
        i: Instruction,
        out: &mut Vec<Instruction>,
    ) -> Result<(), String> {
        let what = format!("{:?}", i.class.opcode);
        let arg = |n: usize| id_at(&i, n).ok_or_else(|| format!("malformed {what}"));
        let type_of = |v: Word| {
            types
                .get(&v)
                .copied()
                .ok_or_else(|| format!("an operand of {what} of unknown type"))
        };
        let call = |f: Word, args: &[Word]| {
            let mut ops = vec![Operand::IdRef(f)];
            ops.extend(args.iter().map(|&a| Operand::IdRef(a)));
            Instruction::new(Op::FunctionCall, i.result_type, i.result_id, ops)
        };
        match i.class.opcode {
            Op::EnqueueKernel => {
                // Queue, flags, NDRange, events (3), block, literal, size
                // and alignment, then the `__local` sizes.
                if i.operands.len() < 10 {
                    return Err("malformed OpEnqueueKernel".into());
                }
                let invoke = arg(6)?;
                let name = self
                    .names
                    .get(&invoke)
                    .ok_or("enqueue_kernel of a block whose kernel has no name")?
                    .clone();
                let kind = self
                    .blocks
                    .iter()
                    .position(|n| *n == name)
                    .ok_or("enqueue_kernel of an unknown block kernel")?
                    as u32
                    + 1;
                let literal_size = self.constant(arg(8)?).ok_or_else(|| {
                    "enqueue_kernel with a block size known only at run time".to_string()
                })?;
                let args: Vec<Word> = (0..i.operands.len())
                    .filter(|&n| n != 6 && n != 8 && n != 9)
                    .map(arg)
                    .collect::<Result<_, _>>()?;
                let arg_types: Vec<Word> =
                    args.iter().map(|&a| type_of(a)).collect::<Result<_, _>>()?;
                let ty = i.result_type.ok_or("enqueue_kernel without a type")?;
                let site = self.site(args[4], args[5]);
                let f = self.enqueue(ty, &arg_types, site, kind, literal_size);
                out.push(call(f, &args));
            }
            Op::EnqueueMarker => {
                let args: Vec<Word> = (0..4).map(arg).collect::<Result<_, _>>()?;
                let arg_types: Vec<Word> =
                    args.iter().map(|&a| type_of(a)).collect::<Result<_, _>>()?;
                let ty = i.result_type.ok_or("enqueue_marker without a type")?;
                let site = self.site(args[2], args[3]);
                let f = self.marker(ty, &arg_types, site);
                out.push(call(f, &args));
            }
            Op::BuildNDRange => {
                // (global, local, offset) -> {dims, offset[3], global[3],
                // local[3]}: scalars for one dimension, arrays for more.
                let ty = i.result_type.ok_or("ndrange without a type")?;
                let (global, local, offset) = (arg(0)?, arg(1)?, arg(2)?);
                let g_ty = type_of(global)?;
                let dims = match self.ctx.global(g_ty).map(|t| t.class.opcode) {
                    Some(Op::TypeArray) => {
                        let len = self.ctx.global(g_ty).and_then(|t| id_at(t, 1));
                        len.and_then(|l| self.constant(l))
                            .ok_or("ndrange of unknown size")? as u32
                    }
                    _ => 1,
                };
                let array_ty = self
                    .ctx
                    .global(ty)
                    .and_then(|t| id_at(t, 1))
                    .ok_or("malformed ndrange_t")?;
                let zero = self.ulong_const(0);
                let mut parts = vec![self.ctx.const_u32(dims)];
                for v in [offset, global, local] {
                    let mut lanes = Vec::new();
                    for d in 0..3 {
                        lanes.push(if d >= dims {
                            zero
                        } else if dims == 1 {
                            v
                        } else {
                            let lane = self.ctx.fresh();
                            out.push(Instruction::new(
                                Op::CompositeExtract,
                                Some(self.ulong),
                                Some(lane),
                                vec![Operand::IdRef(v), Operand::LiteralBit32(d)],
                            ));
                            lane
                        });
                    }
                    let array = self.ctx.fresh();
                    out.push(Instruction::new(
                        Op::CompositeConstruct,
                        Some(array_ty),
                        Some(array),
                        lanes.into_iter().map(Operand::IdRef).collect(),
                    ));
                    parts.push(array);
                }
                out.push(Instruction::new(
                    Op::CompositeConstruct,
                    Some(ty),
                    i.result_id,
                    parts.into_iter().map(Operand::IdRef).collect(),
                ));
            }
            Op::GetDefaultQueue => {
                let ty = i.result_type.ok_or("get_default_queue without a type")?;
                let (mut b, _) = Builder::new(self.ctx, ty, &[]);
                let base = self.base(&mut b);
                let q = self.load(&mut b, base, DEFAULT_QUEUE, self.ulong);
                let q = b.ids(self.ctx, Op::ConvertUToPtr, ty, &[q]);
                let f = self.add(b, Some(q));
                out.push(call(f, &[]));
            }
            Op::CreateUserEvent => {
                let ty = i.result_type.ok_or("create_user_event without a type")?;
                let f = self.user_event(ty);
                out.push(call(f, &[]));
            }
            Op::SetUserEventStatus => {
                let (event, status) = (arg(0)?, arg(1)?);
                let f = self.set_status(type_of(event)?);
                out.push(self.void_call(f, &[event, status]));
            }
            Op::CaptureEventProfilingInfo => {
                let (event, value) = (arg(0)?, arg(2)?);
                let f = self.capture(type_of(event)?, type_of(value)?);
                out.push(self.void_call(f, &[event, value]));
            }
            // Slots live as long as the command's launch list.
            Op::RetainEvent | Op::ReleaseEvent => {}
            Op::IsValidEvent => {
                let event = arg(0)?;
                let ty = i.result_type.ok_or("is_valid_event without a type")?;
                let f = self.is_valid(type_of(event)?, ty);
                out.push(call(f, &[event]));
            }
            // Block kernels take any work-group size the device does, and
            // their sub-groups are the device's.
            Op::GetKernelWorkGroupSize
            | Op::GetKernelPreferredWorkGroupSizeMultiple
            | Op::GetKernelNDrangeMaxSubGroupSize
            | Op::GetKernelNDrangeSubGroupCount
            | Op::GetKernelMaxNumSubgroups => {
                let ty = i
                    .result_type
                    .ok_or_else(|| format!("{what} without a type"))?;
                let sub = self.caps.subgroup_size.max(1);
                let value = match i.class.opcode {
                    Op::GetKernelWorkGroupSize => self.caps.max_work_group_size,
                    Op::GetKernelMaxNumSubgroups => self.caps.max_work_group_size.div_ceil(sub),
                    Op::GetKernelNDrangeSubGroupCount => {
                        return Err(
                            "get_kernel_sub_group_count_for_ndrange is not supported".into()
                        );
                    }
                    _ => sub,
                };
                let c = self.ctx.const_int(ty, u64::from(value));
                out.push(Instruction::new(
                    Op::CopyObject,
                    i.result_type,
                    i.result_id,
                    vec![Operand::IdRef(c)],
                ));
            }
            Op::GetKernelLocalSizeForSubgroupCount => {
                return Err("get_kernel_local_size_for_sub_group_count is not supported".into());
            }
            _ => out.push(i),
        }
        Ok(())
    }

    /// What an enqueue's wait list and returned event pointers allow,
    /// known where they are null constants.
    fn site(&self, waits: Word, ret: Word) -> Site {
        let null = |v: Word| {
            self.ctx
                .global(v)
                .is_some_and(|c| matches!(c.class.opcode, Op::ConstantNull | Op::Undef))
        };
        Site {
            waits: !null(waits),
            returns_event: !null(ret),
        }
    }

    /// A call of void function `f` with `args`.
    fn void_call(&mut self, f: Word, args: &[Word]) -> Instruction {
        let void = self.ctx.void();
        let mut ops = vec![Operand::IdRef(f)];
        ops.extend(args.iter().map(|&a| Operand::IdRef(a)));
        Instruction::new(Op::FunctionCall, Some(void), None, ops)
    }

    fn constant(&self, id: Word) -> Option<u64> {
        let c = self.ctx.global(id)?;
        match (c.class.opcode, c.operands.first()) {
            (Op::Constant, Some(Operand::LiteralBit32(v))) => Some(u64::from(*v)),
            (Op::Constant, Some(Operand::LiteralBit64(v))) => Some(*v),
            _ => None,
        }
    }

    /// Allocates an event slot of `kind`; returns (slot index, its address,
    /// whether the table had room), in the open block.
    fn new_event(&mut self, b: &mut Builder, base: Word, kind: u32, status: u32) -> (Word, Word) {
        let (uint, ulong, bool_ty) = (self.uint, self.ulong, self.bool_ty);
        let one = self.ctx.const_u32(1);
        let slot = self.fetch_add(b, base, EVENTS_USED, one);
        let cap = self.load(b, base, EVENT_CAPACITY, uint);
        let ok = b.ids(self.ctx, Op::ULessThan, bool_ty, &[slot, cap]);
        let plus_one = b.ids(self.ctx, Op::IAdd, uint, &[slot, one]);
        let (write, done) = (self.ctx.fresh(), self.ctx.fresh());
        let entry = b.label;
        let wide = b.ids(self.ctx, Op::UConvert, ulong, &[slot]);
        let k = self.ulong_const(EVENT_BYTES);
        let offset = b.ids(self.ctx, Op::IMul, ulong, &[wide, k]);
        let table = self.ulong_const(EVENTS_AT);
        let offset = b.ids(self.ctx, Op::IAdd, ulong, &[offset, table]);
        let address = b.ids(self.ctx, Op::IAdd, ulong, &[base, offset]);
        b.branch_if(ok, write, done, write);
        let status = self.ctx.const_u32(status);
        self.store(b, address, 0, status, uint);
        let kind = self.ctx.const_u32(kind);
        self.store(b, address, 4, kind, uint);
        let zero = self.ulong_const(0);
        self.store(b, address, 8, zero, ulong);
        let written = b.label;
        b.branch(done);
        let zero32 = self.ctx.const_u32(0);
        let address = b.phi(self.ctx, ulong, &[(address, written), (zero, entry)]);
        let id = b.phi(self.ctx, uint, &[(plus_one, written), (zero32, entry)]);
        (id, address)
    }

    /// `create_user_event() -> event`: a slot of kind user, submitted.
    fn user_event(&mut self, ty: Word) -> Word {
        let (mut b, _) = Builder::new(self.ctx, ty, &[]);
        let base = self.base(&mut b);
        let (_, address) = self.new_event(&mut b, base, EVENT_USER, CL_SUBMITTED);
        let event = b.ids(self.ctx, Op::ConvertUToPtr, ty, &[address]);
        self.add(b, Some(event))
    }

    /// `is_valid_event(event) -> bool`: neither null nor `CLK_NULL_EVENT`
    /// (all ones).
    fn is_valid(&mut self, event_ty: Word, ty: Word) -> Word {
        let (ulong, bool_ty) = (self.ulong, self.bool_ty);
        let (mut b, p) = Builder::new(self.ctx, ty, &[event_ty]);
        let bits = b.ids(self.ctx, Op::ConvertPtrToU, ulong, &[p[0]]);
        let (zero, ones) = (self.ulong_const(0), self.ulong_const(u64::MAX));
        let not_null = b.ids(self.ctx, Op::INotEqual, bool_ty, &[bits, zero]);
        let not_ones = b.ids(self.ctx, Op::INotEqual, bool_ty, &[bits, ones]);
        let valid = b.ids(self.ctx, Op::LogicalAnd, ty, &[not_null, not_ones]);
        self.add(b, Some(valid))
    }

    /// `set_user_event_status(event, status)`.
    fn set_status(&mut self, event_ty: Word) -> Word {
        let void = self.ctx.void();
        let (uint, ulong, bool_ty) = (self.uint, self.ulong, self.bool_ty);
        let (mut b, p) = Builder::new(self.ctx, void, &[event_ty, uint]);
        let (event, status) = (p[0], p[1]);
        let bits = b.ids(self.ctx, Op::ConvertPtrToU, ulong, &[event]);
        let zero = self.ulong_const(0);
        let some = b.ids(self.ctx, Op::INotEqual, bool_ty, &[bits, zero]);
        let (set, done) = (self.ctx.fresh(), self.ctx.fresh());
        b.branch_if(some, set, done, set);
        b.atomic(self.ctx, Op::AtomicStore, None, event, &[status]);
        b.branch(done);
        self.add(b, None)
    }

    /// `capture_event_profiling_info(event, name, value)`: the address is
    /// kept in the slot for the host; an event already complete has its
    /// values copied now.
    fn capture(&mut self, event_ty: Word, value_ty: Word) -> Word {
        let void = self.ctx.void();
        let (uint, ulong, bool_ty) = (self.uint, self.ulong, self.bool_ty);
        let (mut b, p) = Builder::new(self.ctx, void, &[event_ty, value_ty]);
        let (event, value) = (p[0], p[1]);
        let bits = b.ids(self.ctx, Op::ConvertPtrToU, ulong, &[event]);
        let zero = self.ulong_const(0);
        let some = b.ids(self.ctx, Op::INotEqual, bool_ty, &[bits, zero]);
        let (set, copy, done) = (self.ctx.fresh(), self.ctx.fresh(), self.ctx.fresh());
        b.branch_if(some, set, done, set);
        let address = b.ids(self.ctx, Op::ConvertPtrToU, ulong, &[value]);
        self.store(&mut b, bits, EVENT_CAPTURE, address, ulong);
        let status_at = self.at(&mut b, bits, 0, uint);
        let status = b.atomic(self.ctx, Op::AtomicLoad, Some(uint), status_at, &[]);
        let status = status.expect("a load has a result");
        let zero32 = self.ctx.const_u32(0);
        let complete = b.ids(self.ctx, Op::IEqual, bool_ty, &[status, zero32]);
        b.branch_if(complete, copy, done, copy);
        for k in 0..2 {
            let v = self.load(&mut b, bits, EVENT_TIMES + 8 * k, ulong);
            self.store(&mut b, address, 8 * k, v, ulong);
        }
        b.branch(done);
        self.add(b, None)
    }

    /// Reserves `size` bytes of records: (record address, whether it
    /// fits), in the open block.
    fn reserve(&mut self, b: &mut Builder, base: Word, size: Word) -> (Word, Word) {
        let (uint, ulong, bool_ty) = (self.uint, self.ulong, self.bool_ty);
        let offset = self.fetch_add(b, base, RECORD_BYTES_USED, size);
        let cap = self.load(b, base, RECORD_CAPACITY, uint);
        let end = b.ids(self.ctx, Op::IAdd, uint, &[offset, size]);
        let no_wrap = b.ids(self.ctx, Op::UGreaterThanEqual, bool_ty, &[end, offset]);
        let within = b.ids(self.ctx, Op::ULessThanEqual, bool_ty, &[end, cap]);
        let fits = b.ids(self.ctx, Op::LogicalAnd, bool_ty, &[no_wrap, within]);
        let area = self.load(b, base, RECORDS_AT, uint);
        let at = b.ids(self.ctx, Op::IAdd, uint, &[area, offset]);
        let at = b.ids(self.ctx, Op::UConvert, ulong, &[at]);
        let record = b.ids(self.ctx, Op::IAdd, ulong, &[base, at]);
        (record, fits)
    }

    /// Writes the slot numbers of `n` events from `list` (a pointer to
    /// events) at `at`, one word each (0 for an event not of this launch
    /// list); returns with the loop's exit block open.
    #[allow(clippy::too_many_arguments)]
    fn write_waits(
        &mut self,
        b: &mut Builder,
        base: Word,
        site: Site,
        list: Word,
        list_ty: Word,
        n: Word,
        at: Word,
    ) {
        if !site.waits {
            return;
        }
        let (uint, ulong, bool_ty) = (self.uint, self.ulong, self.bool_ty);
        let event_ty = match self.ctx.pointer_parts(list_ty) {
            Some((_, pointee)) => pointee,
            None => return,
        };
        let zero = self.ctx.const_u32(0);
        let one = self.ctx.const_u32(1);
        let entry = b.label;
        let (head, body, done) = (self.ctx.fresh(), self.ctx.fresh(), self.ctx.fresh());
        b.branch(head);
        let next = self.ctx.fresh();
        let k = b.phi(self.ctx, uint, &[(zero, entry), (next, body)]);
        let more = b.ids(self.ctx, Op::ULessThan, bool_ty, &[k, n]);
        b.branch_if(more, body, done, body);
        let wide = b.ids(self.ctx, Op::UConvert, ulong, &[k]);
        let p = b.ids(self.ctx, Op::PtrAccessChain, list_ty, &[list, wide]);
        let event = b.ids(self.ctx, Op::Load, event_ty, &[p]);
        let bits = b.ids(self.ctx, Op::ConvertPtrToU, ulong, &[event]);
        // (event - (base + EVENTS_AT)) / EVENT_BYTES + 1, where in range.
        let table = self.ulong_const(EVENTS_AT);
        let first = b.ids(self.ctx, Op::IAdd, ulong, &[base, table]);
        let rel = b.ids(self.ctx, Op::ISub, ulong, &[bits, first]);
        let size = self.ulong_const(EVENT_BYTES);
        let slot = b.ids(self.ctx, Op::UDiv, ulong, &[rel, size]);
        let in_table = b.ids(self.ctx, Op::UGreaterThanEqual, bool_ty, &[bits, first]);
        let limit = self.ulong_const(u64::from(u32::MAX - 1));
        let small = b.ids(self.ctx, Op::ULessThan, bool_ty, &[slot, limit]);
        let valid = b.ids(self.ctx, Op::LogicalAnd, bool_ty, &[in_table, small]);
        let slot = b.ids(self.ctx, Op::UConvert, uint, &[slot]);
        let slot = b.ids(self.ctx, Op::IAdd, uint, &[slot, one]);
        let slot = b.ids(self.ctx, Op::Select, uint, &[valid, slot, zero]);
        let four = self.ulong_const(4);
        let offset = b.ids(self.ctx, Op::IMul, ulong, &[wide, four]);
        let address = b.ids(self.ctx, Op::IAdd, ulong, &[at, offset]);
        self.store(b, address, 0, slot, uint);
        b.define(next, Op::IAdd, uint, &[k, one]);
        b.end_block(
            Instruction::new(Op::Branch, None, None, vec![Operand::IdRef(head)]),
            done,
        );
    }

    /// The returned event: a new slot stored through `ret` where `ret`
    /// is not null; returns its number plus 1 (0 for none) and whether a
    /// slot was wanted but the table was full.
    fn returned_event(
        &mut self,
        b: &mut Builder,
        base: Word,
        site: Site,
        ret: Word,
        ret_ty: Word,
    ) -> (Word, Word) {
        let (uint, bool_ty) = (self.uint, self.bool_ty);
        if !site.returns_event {
            let f = self.ctx.const_null(bool_ty);
            return (self.ctx.const_u32(0), f);
        }
        let event_ty = self
            .ctx
            .pointer_parts(ret_ty)
            .map(|(_, p)| p)
            .unwrap_or(uint);
        let (id, address) = self.new_event(b, base, EVENT_COMMAND, CL_QUEUED);
        let event = b.ids(self.ctx, Op::ConvertUToPtr, event_ty, &[address]);
        b.void(Op::Store, vec![Operand::IdRef(ret), Operand::IdRef(event)]);
        let zero32 = self.ctx.const_u32(0);
        let failed = b.ids(self.ctx, Op::IEqual, bool_ty, &[id, zero32]);
        (id, failed)
    }

    /// Branches to `exit` with `CLK_INVALID_QUEUE` where `queue` is null;
    /// the next block is open after.
    fn queue_checked(&mut self, b: &mut Builder, queue: Word, exit: Word, codes: &mut Codes) {
        let bits = b.ids(self.ctx, Op::ConvertPtrToU, self.ulong, &[queue]);
        let zero = self.ulong_const(0);
        let has_queue = b.ids(self.ctx, Op::INotEqual, self.bool_ty, &[bits, zero]);
        self.or_exit(b, has_queue, CLK_INVALID_QUEUE, exit, codes);
    }

    /// Goes on where `ok`, else branches to `exit` with status `code`.
    fn or_exit(&mut self, b: &mut Builder, ok: Word, code: i32, exit: Word, codes: &mut Codes) {
        let next = self.ctx.fresh();
        let code = self.int_const(code);
        codes.push((code, b.label));
        b.branch_if(ok, next, exit, next);
    }

    /// `fixed` bytes and `n` words, rounded up to 8 bytes.
    fn padded(&mut self, b: &mut Builder, fixed: u64, n: Word) -> Word {
        let uint = self.uint;
        let fixed = self.ctx.const_u32(fixed as u32 + 7);
        let four = self.ctx.const_u32(4);
        let words = b.ids(self.ctx, Op::IMul, uint, &[n, four]);
        let bytes = b.ids(self.ctx, Op::IAdd, uint, &[fixed, words]);
        let mask = self.ctx.const_u32(!7);
        b.ids(self.ctx, Op::BitwiseAnd, uint, &[bytes, mask])
    }

    /// Writes a record's first eight words and the launch's number.
    fn record_header(&mut self, b: &mut Builder, record: Word, words: [Word; 8]) {
        let (uint, ulong) = (self.uint, self.ulong);
        for (k, value) in words.into_iter().enumerate() {
            self.store(b, record, 4 * k as u64, value, uint);
        }
        let parent = b.ids(self.ctx, Op::Load, ulong, &[self.parent]);
        let parent = b.ids(self.ctx, Op::UConvert, uint, &[parent]);
        self.store(b, record, RECORD_PARENT, parent, uint);
    }

    /// Ends an enqueue function: success, or `CLK_EVENT_ALLOCATION_FAILURE`
    /// where its event was wanted but the table was full; the status of
    /// whichever way it went.
    fn ended(
        &mut self,
        mut b: Builder,
        ty: Word,
        failed: Word,
        exit: Word,
        mut codes: Codes,
    ) -> Word {
        let ok = self.int_const(CLK_SUCCESS);
        let no_event = self.int_const(CLK_EVENT_ALLOCATION_FAILURE);
        let code = b.ids(self.ctx, Op::Select, ty, &[failed, no_event, ok]);
        codes.push((code, b.label));
        b.branch(exit);
        let status = b.phi(self.ctx, ty, &codes);
        self.add(b, Some(status))
    }

    /// `enqueue_kernel(queue, flags, ndrange, nevents, waits, ret,
    /// literal, local sizes...) -> status` for a block of kind `kind`
    /// whose literal takes `literal_size` bytes.
    fn enqueue(
        &mut self,
        ty: Word,
        params: &[Word],
        site: Site,
        kind: u32,
        literal_size: u64,
    ) -> Word {
        let (uint, ulong, bool_ty) = (self.uint, self.ulong, self.bool_ty);
        let (mut b, p) = Builder::new(self.ctx, ty, params);
        let (queue, flags, ndrange, nevents, waits, ret, literal) =
            (p[0], p[1], p[2], p[3], p[4], p[5], p[6]);
        let locals = &p[7..];
        let exit = self.ctx.fresh();
        let mut codes = Codes::new();
        self.queue_checked(&mut b, queue, exit, &mut codes);
        // The NDRange: 1 to 3 dimensions.
        let nd_ty = self
            .ctx
            .pointer_parts(params[2])
            .map(|(_, t)| t)
            .unwrap_or(uint);
        let nd = b.ids(self.ctx, Op::Load, nd_ty, &[ndrange]);
        let dims = b.extract(self.ctx, uint, nd, 0);
        let one = self.ctx.const_u32(1);
        let three = self.ctx.const_u32(3);
        let low = b.ids(self.ctx, Op::UGreaterThanEqual, bool_ty, &[dims, one]);
        let high = b.ids(self.ctx, Op::ULessThanEqual, bool_ty, &[dims, three]);
        let dims_ok = b.ids(self.ctx, Op::LogicalAnd, bool_ty, &[low, high]);
        self.or_exit(&mut b, dims_ok, CLK_INVALID_NDRANGE, exit, &mut codes);
        // Room for the record.
        let fixed = RECORD_FIXED + 4 * locals.len() as u64;
        let head = self.padded(&mut b, fixed, nevents);
        let literal_room = self.ctx.const_u32(literal_size.next_multiple_of(8) as u32);
        let size = b.ids(self.ctx, Op::IAdd, uint, &[head, literal_room]);
        let base = self.base(&mut b);
        let (record, fits) = self.reserve(&mut b, base, size);
        self.or_exit(&mut b, fits, CLK_DEVICE_QUEUE_FULL, exit, &mut codes);
        let (event, failed) = self.returned_event(&mut b, base, site, ret, params[5]);
        // The record.
        let kind = self.ctx.const_u32(kind);
        let n_locals = self.ctx.const_u32(locals.len() as u32);
        let lit = self.ctx.const_u32(literal_size as u32);
        self.record_header(
            &mut b,
            record,
            [size, kind, flags, dims, n_locals, nevents, event, lit],
        );
        for (member, at) in [(1, 32), (2, 56), (3, 80)] {
            for d in 0..3u32 {
                let v = b.op(
                    self.ctx,
                    Op::CompositeExtract,
                    ulong,
                    &[
                        Operand::IdRef(nd),
                        Operand::LiteralBit32(member),
                        Operand::LiteralBit32(d),
                    ],
                );
                self.store(&mut b, record, at + 8 * u64::from(d), v, ulong);
            }
        }
        for (k, &l) in locals.iter().enumerate() {
            let l_ty = self.ctx.pointer_parts(params[7 + k]).map(|(_, t)| t);
            let v = match l_ty {
                Some(t) if t == ulong => {
                    let v = b.ids(self.ctx, Op::Load, ulong, &[l]);
                    b.ids(self.ctx, Op::UConvert, uint, &[v])
                }
                Some(t) => b.ids(self.ctx, Op::Load, t, &[l]),
                // A size given by value.
                None if params[7 + k] == ulong => b.ids(self.ctx, Op::UConvert, uint, &[l]),
                None => l,
            };
            self.store(&mut b, record, RECORD_FIXED + 4 * k as u64, v, uint);
        }
        let fixed64 = self.ulong_const(fixed);
        let waits_at = b.ids(self.ctx, Op::IAdd, ulong, &[record, fixed64]);
        self.write_waits(&mut b, base, site, waits, params[4], nevents, waits_at);
        // The block literal.
        let head64 = b.ids(self.ctx, Op::UConvert, ulong, &[head]);
        let literal_at = b.ids(self.ctx, Op::IAdd, ulong, &[record, head64]);
        let uchar = self.ctx.uint(8);
        let dst_ty = self.ctx.pointer(StorageClass::CrossWorkgroup, uchar);
        let dst = b.ids(self.ctx, Op::ConvertUToPtr, dst_ty, &[literal_at]);
        let n = self.ulong_const(literal_size);
        b.void(
            Op::CopyMemorySized,
            vec![
                Operand::IdRef(dst),
                Operand::IdRef(literal),
                Operand::IdRef(n),
                Operand::MemoryAccess(MemoryAccess::NONE),
            ],
        );
        self.ended(b, ty, failed, exit, codes)
    }

    /// `enqueue_marker(queue, nevents, waits, ret) -> status`: a record of
    /// kind 0 without NDRange or literal.
    fn marker(&mut self, ty: Word, params: &[Word], site: Site) -> Word {
        let ulong = self.ulong;
        let (mut b, p) = Builder::new(self.ctx, ty, params);
        let (queue, nevents, waits, ret) = (p[0], p[1], p[2], p[3]);
        let exit = self.ctx.fresh();
        let mut codes = Codes::new();
        self.queue_checked(&mut b, queue, exit, &mut codes);
        let size = self.padded(&mut b, RECORD_FIXED, nevents);
        let base = self.base(&mut b);
        let (record, fits) = self.reserve(&mut b, base, size);
        self.or_exit(&mut b, fits, CLK_DEVICE_QUEUE_FULL, exit, &mut codes);
        let (event, failed) = self.returned_event(&mut b, base, site, ret, params[3]);
        let zero = self.ctx.const_u32(0);
        self.record_header(
            &mut b,
            record,
            [size, zero, zero, zero, zero, nevents, event, zero],
        );
        let fixed64 = self.ulong_const(RECORD_FIXED);
        let waits_at = b.ids(self.ctx, Op::IAdd, ulong, &[record, fixed64]);
        self.write_waits(&mut b, base, site, waits, params[2], nevents, waits_at);
        self.ended(b, ty, failed, exit, codes)
    }
}
