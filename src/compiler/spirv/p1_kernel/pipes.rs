//! Pass 1d (phase 1): Pipes. A pipe argument is the address of the pipe
//! object's buffer, and the pipe built-ins become code on that buffer.
//!
//! The buffer (made by `clCreatePipe`, see `core::memory::Pipe`) starts
//! with a header of 32-bit words, then the packets from byte
//! [`PACKETS_AT`] on, a ring of `max_packets` slots:
//! * word 0: packets reserved for writing so far (a counter that wraps);
//! * word 1: packets reserved for reading so far;
//! * word 2: `max_packets`, word 3: the packet size.
//!
//! Packet k of the pipe's history lives in slot k mod `max_packets`. A
//! reservation of n packets is a compare-and-swap loop on its counter that
//! succeeds while the other counter leaves room (writes: at most
//! `max_packets` unread; reads: n written and not yet read), so a pipe
//! never hands out a slot twice and never loses a packet. A reservation
//! id is a struct of its first packet's counter value and its count, a
//! count of 0 being the invalid id; `read_pipe`/`write_pipe` without one
//! reserve a single packet. A packet type larger than the pipe's packets
//! reserves nothing, so such a mismatch (undefined behaviour) cannot write
//! past the ring; slots are as long as the kernel's packet type. Commits do nothing: a packet is in its slot
//! once its copy is made, and kernels see what an earlier command wrote
//! through the ordering of commands. Reads and writes of one pipe by
//! commands that run at the same time are not ordered this way: a read
//! may then find a packet reserved but not yet written.
//!
//! Work-group reservations are made by the work-item of local index 0
//! between two barriers and read back from a `__local` variable;
//! sub-group ones by the elected work-item, broadcast to the sub-group.
//!
//! Every built-in becomes a call of a function this pass adds (the inline
//! pass then inlines it); packets are copied in the widest integer units
//! that their size and alignment allow.
//!
//! Takes `select`'s module. Guarantees no pipe or reservation id type and
//! no pipe instruction is left: pipe types are `CrossWorkgroup` pointers to
//! the header's words, reservation ids structs of two words. Program-scope
//! pipes (`PipeStorage`) fail by name.

use rspirv::dr::{Function, Instruction, Operand};
use rspirv::spirv::{BuiltIn, MemoryAccess, Op, StorageClass, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::builder::Builder;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

/// Where the packets start in a pipe's buffer: after the header, aligned
/// for the widest OpenCL C type (`long16`, `double16`).
pub const PACKETS_AT: u64 = 128;

/// The header's words.
const WRITTEN: u32 = 0;
const READ: u32 = 1;
const CAPACITY: u32 = 2;
const PACKET_SIZE: u32 = 3;

/// OpenCL's scopes, as pipe instructions carry them.
const DEVICE: u32 = 1;
const WORKGROUP: u32 = 2;
const SUBGROUP: u32 = 3;

/// Vulkan's sub-group operation bits: basic (elect) and ballot
/// (broadcast of the first).
const SUBGROUP_BASIC: u32 = 0x1;
const SUBGROUP_BALLOT: u32 = 0x8;

pub fn run(ctx: &mut Ctx, caps: &DeviceCaps) -> Result<(), String> {
    let uses_pipes = ctx.module.types_global_values.iter().any(|t| {
        matches!(
            t.class.opcode,
            Op::TypePipe | Op::TypeReserveId | Op::TypePipeStorage
        )
    });
    if !uses_pipes {
        return Ok(());
    }
    if ctx.module.types_global_values.iter().any(|t| {
        matches!(
            t.class.opcode,
            Op::TypePipeStorage | Op::ConstantPipeStorage
        )
    }) {
        return Err("program-scope pipes (PipeStorage) are not supported".into());
    }
    let uint = ctx.uint(32);
    // Pipe types become pointers to the header, in place (one per access
    // qualifier: pointer types may repeat), and reservation ids structs
    // (which may repeat too).
    for t in &mut ctx.module.types_global_values {
        match t.class.opcode {
            Op::TypePipe => {
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
            Op::TypeReserveId => {
                *t = Instruction::new(
                    Op::TypeStruct,
                    None,
                    t.result_id,
                    vec![Operand::IdRef(uint), Operand::IdRef(uint)],
                );
            }
            _ => {}
        }
    }
    ctx.sort_globals();
    let types = ctx.value_types();
    let mut pass = Pass::new(ctx);
    let mut functions = std::mem::take(&mut pass.ctx.module.functions);
    let result = (|| {
        for f in &mut functions {
            for b in &mut f.blocks {
                let mut out = Vec::with_capacity(b.instructions.len());
                for i in std::mem::take(&mut b.instructions) {
                    pass.lower(&types, i, caps, &mut out)?;
                }
                b.instructions = out;
            }
        }
        Ok(())
    })();
    let added = std::mem::take(&mut pass.added);
    ctx.module.functions = functions;
    ctx.module.functions.extend(added);
    result
}

struct Pass<'a> {
    ctx: &'a mut Ctx,
    /// The functions made for the call sites.
    added: Vec<Function>,
    uint: Word,
    ulong: Word,
    bool_ty: Word,
}

/// A pipe instruction's parts, by role.
struct Site {
    pipe: Word,
    pipe_ty: Word,
    /// The packet size and alignment, when constants.
    size: u32,
    align: u32,
}

impl<'a> Pass<'a> {
    fn new(ctx: &'a mut Ctx) -> Pass<'a> {
        let uint = ctx.uint(32);
        let ulong = ctx.uint(64);
        let bool_ty = ctx.ty(Op::TypeBool, vec![]);
        Pass {
            ctx,
            added: Vec::new(),
            uint,
            ulong,
            bool_ty,
        }
    }

    fn constant(&self, id: Word) -> Option<u64> {
        let c = self.ctx.global(id)?;
        match (c.class.opcode, c.operands.first()) {
            (Op::Constant, Some(Operand::LiteralBit32(v))) => Some(u64::from(*v)),
            (Op::Constant, Some(Operand::LiteralBit64(v))) => Some(*v),
            _ => None,
        }
    }

    /// A builder for a new function of these parameter types.
    fn builder(&mut self, ret: Word, params: &[Word]) -> (Builder, Vec<Word>) {
        Builder::new(self.ctx, ret, params)
    }

    /// A pointer to word `n` of the header.
    fn header_word(&mut self, b: &mut Builder, pipe: Word, pipe_ty: Word, n: u32) -> Word {
        if n == 0 {
            return pipe;
        }
        let k = self.ctx.const_u32(n);
        b.ids(self.ctx, Op::InBoundsPtrAccessChain, pipe_ty, &[pipe, k])
    }

    fn site(
        &self,
        types: &HashMap<Word, Word>,
        i: &Instruction,
        pipe_at: usize,
    ) -> Result<Site, String> {
        let what = format!("{:?}", i.class.opcode);
        let pipe = id_at(i, pipe_at).ok_or_else(|| format!("malformed {what}"))?;
        let pipe_ty = types
            .get(&pipe)
            .copied()
            .ok_or_else(|| format!("{what} on a pipe of unknown type"))?;
        let n = i.operands.len();
        let size = id_at(i, n - 2).and_then(|c| self.constant(c));
        let align = id_at(i, n - 1).and_then(|c| self.constant(c));
        let (Some(size), Some(align)) = (size, align) else {
            return Err(format!("{what} with a packet size known only at run time"));
        };
        let size =
            u32::try_from(size).map_err(|_| format!("{what} of a packet of {size} bytes"))?;
        Ok(Site {
            pipe,
            pipe_ty,
            size,
            align: u32::try_from(align).unwrap_or(1).max(1),
        })
    }

    /// Replaces pipe instruction `i` by a call (or, for the few that need
    /// no code of their own, an instruction); anything else passes.
    fn lower(
        &mut self,
        types: &HashMap<Word, Word>,
        i: Instruction,
        caps: &DeviceCaps,
        out: &mut Vec<Instruction>,
    ) -> Result<(), String> {
        let call = |f: Word, ty: Word, args: &[Word]| {
            let mut ops = vec![Operand::IdRef(f)];
            ops.extend(args.iter().map(|&a| Operand::IdRef(a)));
            Instruction::new(Op::FunctionCall, Some(ty), i.result_id, ops)
        };
        let arg = |n: usize| id_at(&i, n).ok_or_else(|| format!("malformed {:?}", i.class.opcode));
        match i.class.opcode {
            Op::ReadPipe | Op::WritePipe => {
                let write = i.class.opcode == Op::WritePipe;
                let s = self.site(types, &i, 0)?;
                let ptr = arg(1)?;
                let ptr_ty = types
                    .get(&ptr)
                    .copied()
                    .ok_or("pipe packet pointer of unknown type")?;
                let ty = i.result_type.ok_or("pipe read without a type")?;
                let f = self.unreserved(&s, ptr_ty, ty, write)?;
                out.push(call(f, ty, &[s.pipe, ptr]));
            }
            Op::ReservedReadPipe | Op::ReservedWritePipe => {
                let write = i.class.opcode == Op::ReservedWritePipe;
                let s = self.site(types, &i, 0)?;
                let (rid, index, ptr) = (arg(1)?, arg(2)?, arg(3)?);
                let rid_ty = types
                    .get(&rid)
                    .copied()
                    .ok_or("reservation id of unknown type")?;
                let ptr_ty = types
                    .get(&ptr)
                    .copied()
                    .ok_or("pipe packet pointer of unknown type")?;
                let ty = i.result_type.ok_or("pipe read without a type")?;
                let f = self.reserved(&s, rid_ty, ptr_ty, ty, write)?;
                out.push(call(f, ty, &[s.pipe, rid, index, ptr]));
            }
            Op::ReserveReadPipePackets | Op::ReserveWritePipePackets => {
                let write = i.class.opcode == Op::ReserveWritePipePackets;
                let s = self.site(types, &i, 0)?;
                let n = arg(1)?;
                let ty = i.result_type.ok_or("reservation without a type")?;
                let f = self.reserve(&s, ty, write);
                out.push(call(f, ty, &[s.pipe, n]));
            }
            Op::GroupReserveReadPipePackets | Op::GroupReserveWritePipePackets => {
                let write = i.class.opcode == Op::GroupReserveWritePipePackets;
                let scope = match i.operands.first() {
                    Some(Operand::IdScope(c) | Operand::IdRef(c)) => self.constant(*c),
                    _ => None,
                };
                let s = self.site(types, &i, 1)?;
                let n = arg(2)?;
                let ty = i.result_type.ok_or("reservation without a type")?;
                let f = match scope.map(|v| v as u32) {
                    Some(WORKGROUP) => self.work_group_reserve(&s, ty, write),
                    Some(SUBGROUP) => {
                        let need = SUBGROUP_BASIC | SUBGROUP_BALLOT;
                        if caps.subgroup_ops & need != need {
                            return Err("sub-group pipe reservations need sub-group ballots, which the device lacks".into());
                        }
                        self.sub_group_reserve(&s, ty, write)
                    }
                    _ => {
                        return Err(
                            "a pipe reservation of a scope other than work-group or sub-group"
                                .into(),
                        );
                    }
                };
                out.push(call(f, ty, &[s.pipe, n]));
            }
            // Packets are in place once copied.
            Op::CommitReadPipe
            | Op::CommitWritePipe
            | Op::GroupCommitReadPipe
            | Op::GroupCommitWritePipe => {}
            Op::IsValidReserveId => {
                let rid = arg(0)?;
                let count = self.ctx.fresh();
                out.push(Instruction::new(
                    Op::CompositeExtract,
                    Some(self.uint),
                    Some(count),
                    vec![Operand::IdRef(rid), Operand::LiteralBit32(1)],
                ));
                let zero = self.ctx.const_u32(0);
                out.push(Instruction::new(
                    Op::INotEqual,
                    i.result_type,
                    i.result_id,
                    vec![Operand::IdRef(count), Operand::IdRef(zero)],
                ));
            }
            Op::GetNumPipePackets | Op::GetMaxPipePackets => {
                let s = self.site(types, &i, 0)?;
                let ty = i.result_type.ok_or("pipe query without a type")?;
                let f = self.query(&s, ty, i.class.opcode == Op::GetMaxPipePackets);
                out.push(call(f, ty, &[s.pipe]));
            }
            Op::ConstantPipeStorage | Op::CreatePipeFromPipeStorage => {
                return Err("program-scope pipes (PipeStorage) are not supported".into());
            }
            _ => out.push(i),
        }
        Ok(())
    }

    fn atomic_load(&mut self, b: &mut Builder, p: Word) -> Word {
        let loaded = b.atomic(self.ctx, Op::AtomicLoad, Some(self.uint), p, &[]);
        loaded.expect("a load has a result")
    }

    /// `reserve(pipe, n) -> id`: a loop of compare-and-swaps on the
    /// counter, while the pipe has room (writes) or packets (reads).
    fn reserve(&mut self, s: &Site, rid_ty: Word, write: bool) -> Word {
        let (uint, bool_ty) = (self.uint, self.bool_ty);
        let (mut b, p) = self.builder(rid_ty, &[s.pipe_ty, uint]);
        let (pipe, n) = (p[0], p[1]);
        let cap_at = self.header_word(&mut b, pipe, s.pipe_ty, CAPACITY);
        let cap = b.ids(self.ctx, Op::Load, uint, &[cap_at]);
        let written_at = self.header_word(&mut b, pipe, s.pipe_ty, WRITTEN);
        let read_at = self.header_word(&mut b, pipe, s.pipe_ty, READ);
        let counter = if write { written_at } else { read_at };
        let zero = self.ctx.const_u32(0);
        let some = b.ids(self.ctx, Op::INotEqual, bool_ty, &[n, zero]);
        // A packet type larger than the pipe's packets (undefined
        // behaviour, which would write past the ring) reserves nothing.
        let size_at = self.header_word(&mut b, pipe, s.pipe_ty, PACKET_SIZE);
        let size = b.ids(self.ctx, Op::Load, uint, &[size_at]);
        let ours = self.ctx.const_u32(s.size);
        let fits = b.ids(self.ctx, Op::ULessThanEqual, bool_ty, &[ours, size]);
        let some = b.ids(self.ctx, Op::LogicalAnd, bool_ty, &[some, fits]);
        let (head, try_it, done) = (self.ctx.fresh(), self.ctx.fresh(), self.ctx.fresh());
        b.branch(head);
        // head: is there room (or are there packets) for n?
        let w = self.atomic_load(&mut b, written_at);
        let r = self.atomic_load(&mut b, read_at);
        let used = b.ids(self.ctx, Op::ISub, uint, &[w, r]);
        let fits = if write {
            let n_fits = b.ids(self.ctx, Op::ULessThanEqual, bool_ty, &[n, cap]);
            let room = b.ids(self.ctx, Op::ISub, uint, &[cap, n]);
            let left = b.ids(self.ctx, Op::ULessThanEqual, bool_ty, &[used, room]);
            b.ids(self.ctx, Op::LogicalAnd, bool_ty, &[n_fits, left])
        } else {
            b.ids(self.ctx, Op::ULessThanEqual, bool_ty, &[n, used])
        };
        let ok = b.ids(self.ctx, Op::LogicalAnd, bool_ty, &[some, fits]);
        let head_label = b.label;
        b.branch_if(ok, try_it, done, try_it);
        // try: claim [old, old + n) unless another work-item came first.
        let old = if write { w } else { r };
        let new = b.ids(self.ctx, Op::IAdd, uint, &[old, n]);
        let (scope, relaxed) = (self.ctx.const_u32(DEVICE), self.ctx.const_u32(0));
        let seen = b.op(
            self.ctx,
            Op::AtomicCompareExchange,
            uint,
            &[
                Operand::IdRef(counter),
                Operand::IdScope(scope),
                Operand::IdMemorySemantics(relaxed),
                Operand::IdMemorySemantics(relaxed),
                Operand::IdRef(new),
                Operand::IdRef(old),
            ],
        );
        let claimed = b.ids(self.ctx, Op::IEqual, bool_ty, &[seen, old]);
        let try_label = b.label;
        b.branch_if(claimed, done, head, done);
        // done: the id, or the invalid one.
        let start = b.phi(self.ctx, uint, &[(old, try_label), (zero, head_label)]);
        let count = b.phi(self.ctx, uint, &[(n, try_label), (zero, head_label)]);
        let id = b.ids(self.ctx, Op::CompositeConstruct, rid_ty, &[start, count]);
        self.add(b, Some(id))
    }

    fn add(&mut self, b: Builder, value: Option<Word>) -> Word {
        let id = b.id;
        self.added.push(b.finish(value));
        id
    }

    /// `packet(pipe, id, index, ptr) -> 0 or -1`: copies packet `index`
    /// of reservation `id` from or to `ptr`, if the reservation holds it.
    fn reserved(
        &mut self,
        s: &Site,
        rid_ty: Word,
        ptr_ty: Word,
        ty: Word,
        write: bool,
    ) -> Result<Word, String> {
        let (uint, ulong, bool_ty) = (self.uint, self.ulong, self.bool_ty);
        let (mut b, p) = self.builder(ty, &[s.pipe_ty, rid_ty, uint, ptr_ty]);
        let (pipe, rid, index, ptr) = (p[0], p[1], p[2], p[3]);
        let start = b.extract(self.ctx, uint, rid, 0);
        let count = b.extract(self.ctx, uint, rid, 1);
        let held = b.ids(self.ctx, Op::ULessThan, bool_ty, &[index, count]);
        let entry = b.label;
        let (copy, done) = (self.ctx.fresh(), self.ctx.fresh());
        b.branch_if(held, copy, done, copy);
        // copy: slot (start + index) mod capacity.
        let cap_at = self.header_word(&mut b, pipe, s.pipe_ty, CAPACITY);
        let cap = b.ids(self.ctx, Op::Load, uint, &[cap_at]);
        let k = b.ids(self.ctx, Op::IAdd, uint, &[start, index]);
        let slot = b.ids(self.ctx, Op::UMod, uint, &[k, cap]);
        let slot = b.ids(self.ctx, Op::UConvert, ulong, &[slot]);
        let unit = [8u32, 4, 2, 1]
            .into_iter()
            .find(|u| s.size % u == 0 && s.align % u == 0)
            .unwrap_or(1);
        let unit_ty = self.ctx.uint(unit * 8);
        let (ptr_sc, _) = self
            .ctx
            .pointer_parts(ptr_ty)
            .ok_or("pipe packet pointer that is no pointer")?;
        let ring_ty = self.ctx.pointer(StorageClass::CrossWorkgroup, unit_ty);
        let user_ty = self.ctx.pointer(ptr_sc, unit_ty);
        let ring = b.ids(self.ctx, Op::Bitcast, ring_ty, &[pipe]);
        let per_packet = self.ctx.const_int(ulong, u64::from(s.size / unit));
        let header_units = self.ctx.const_int(ulong, PACKETS_AT / u64::from(unit));
        let first = b.ids(self.ctx, Op::IMul, ulong, &[slot, per_packet]);
        let first = b.ids(self.ctx, Op::IAdd, ulong, &[first, header_units]);
        let packet = b.ids(
            self.ctx,
            Op::InBoundsPtrAccessChain,
            ring_ty,
            &[ring, first],
        );
        let user = b.ids(self.ctx, Op::Bitcast, user_ty, &[ptr]);
        let aligned = |a: u32| {
            [
                Operand::MemoryAccess(MemoryAccess::ALIGNED),
                Operand::LiteralBit32(a),
            ]
        };
        for u in 0..s.size / unit {
            let at = self.ctx.const_int(ulong, u64::from(u));
            let theirs = b.ids(self.ctx, Op::InBoundsPtrAccessChain, user_ty, &[user, at]);
            let ours = b.ids(self.ctx, Op::InBoundsPtrAccessChain, ring_ty, &[packet, at]);
            let (from, to) = if write {
                (theirs, ours)
            } else {
                (ours, theirs)
            };
            let mut load = vec![Operand::IdRef(from)];
            load.extend(aligned(unit));
            let v = b.op(self.ctx, Op::Load, unit_ty, &load);
            let mut store = vec![Operand::IdRef(to), Operand::IdRef(v)];
            store.extend(aligned(unit));
            b.void(Op::Store, store);
        }
        let copy_label = b.label;
        b.branch(done);
        let (ok, failed) = (self.ctx.const_int(ty, 0), self.ctx.const_int(ty, u64::MAX));
        let r = b.phi(self.ctx, ty, &[(ok, copy_label), (failed, entry)]);
        Ok(self.add(b, Some(r)))
    }

    /// `read_pipe(pipe, ptr)`/`write_pipe(pipe, ptr)`: one packet reserved
    /// and copied.
    fn unreserved(
        &mut self,
        s: &Site,
        ptr_ty: Word,
        ty: Word,
        write: bool,
    ) -> Result<Word, String> {
        let uint = self.uint;
        let rid_ty = self.ctx.ty(
            Op::TypeStruct,
            vec![Operand::IdRef(uint), Operand::IdRef(uint)],
        );
        let reserve = self.reserve(s, rid_ty, write);
        let packet = self.reserved(s, rid_ty, ptr_ty, ty, write)?;
        let (mut b, p) = self.builder(ty, &[s.pipe_ty, ptr_ty]);
        let (pipe, ptr) = (p[0], p[1]);
        let one = self.ctx.const_u32(1);
        let rid = b.ids(self.ctx, Op::FunctionCall, rid_ty, &[reserve, pipe, one]);
        let index = self.ctx.const_u32(0);
        let r = b.ids(
            self.ctx,
            Op::FunctionCall,
            ty,
            &[packet, pipe, rid, index, ptr],
        );
        Ok(self.add(b, Some(r)))
    }

    /// A work-group reservation: made by local index 0 between barriers,
    /// handed to the group through a `__local` variable.
    fn work_group_reserve(&mut self, s: &Site, rid_ty: Word, write: bool) -> Word {
        let reserve = self.reserve(s, rid_ty, write);
        let (ulong, bool_ty) = (self.ulong, self.bool_ty);
        let shared_ty = self.ctx.pointer(StorageClass::Workgroup, rid_ty);
        let shared = self.ctx.fresh();
        self.ctx.module.types_global_values.push(Instruction::new(
            Op::Variable,
            Some(shared_ty),
            Some(shared),
            vec![Operand::StorageClass(StorageClass::Workgroup)],
        ));
        let index_var = self.ctx.builtin_input(BuiltIn::LocalInvocationIndex, ulong);
        let (mut b, p) = self.builder(rid_ty, &[s.pipe_ty, self.uint]);
        let (pipe, n) = (p[0], p[1]);
        let barrier = |ctx: &mut Ctx, b: &mut Builder| {
            // Work-group scope, acquire-release on work-group memory.
            let (wg, sem) = (ctx.const_u32(WORKGROUP), ctx.const_u32(0x8 | 0x100));
            b.void(
                Op::ControlBarrier,
                vec![
                    Operand::IdScope(wg),
                    Operand::IdScope(wg),
                    Operand::IdMemorySemantics(sem),
                ],
            );
        };
        // The first barrier keeps the variable until every work-item read
        // the previous reservation made through it.
        barrier(self.ctx, &mut b);
        let index = b.ids(self.ctx, Op::Load, ulong, &[index_var]);
        let zero = self.ctx.const_int(ulong, 0);
        let first = b.ids(self.ctx, Op::IEqual, bool_ty, &[index, zero]);
        let (make, join) = (self.ctx.fresh(), self.ctx.fresh());
        b.branch_if(first, make, join, make);
        let rid = b.ids(self.ctx, Op::FunctionCall, rid_ty, &[reserve, pipe, n]);
        b.void(Op::Store, vec![Operand::IdRef(shared), Operand::IdRef(rid)]);
        b.branch(join);
        barrier(self.ctx, &mut b);
        let r = b.ids(self.ctx, Op::Load, rid_ty, &[shared]);
        self.add(b, Some(r))
    }

    /// A sub-group reservation: made by the elected work-item, its parts
    /// broadcast from it.
    fn sub_group_reserve(&mut self, s: &Site, rid_ty: Word, write: bool) -> Word {
        let reserve = self.reserve(s, rid_ty, write);
        let (uint, bool_ty) = (self.uint, self.bool_ty);
        let (mut b, p) = self.builder(rid_ty, &[s.pipe_ty, uint]);
        let (pipe, n) = (p[0], p[1]);
        let sg = self.ctx.const_u32(SUBGROUP);
        let elected = b.op(
            self.ctx,
            Op::GroupNonUniformElect,
            bool_ty,
            &[Operand::IdScope(sg)],
        );
        let entry = b.label;
        let (make, join) = (self.ctx.fresh(), self.ctx.fresh());
        b.branch_if(elected, make, join, make);
        let rid = b.ids(self.ctx, Op::FunctionCall, rid_ty, &[reserve, pipe, n]);
        let made = b.label;
        b.branch(join);
        let invalid = self.ctx.const_null(rid_ty);
        let mine = b.phi(self.ctx, rid_ty, &[(rid, made), (invalid, entry)]);
        let mut parts = Vec::new();
        for k in 0..2 {
            let v = b.extract(self.ctx, uint, mine, k);
            parts.push(b.op(
                self.ctx,
                Op::GroupNonUniformBroadcastFirst,
                uint,
                &[Operand::IdScope(sg), Operand::IdRef(v)],
            ));
        }
        let r = b.ids(self.ctx, Op::CompositeConstruct, rid_ty, &parts);
        self.add(b, Some(r))
    }

    /// `get_pipe_num_packets` (written less read) or
    /// `get_pipe_max_packets` (the capacity).
    fn query(&mut self, s: &Site, ty: Word, max: bool) -> Word {
        let uint = self.uint;
        let (mut b, p) = self.builder(ty, &[s.pipe_ty]);
        let pipe = p[0];
        let r = if max {
            let cap_at = self.header_word(&mut b, pipe, s.pipe_ty, CAPACITY);
            b.ids(self.ctx, Op::Load, uint, &[cap_at])
        } else {
            let written_at = self.header_word(&mut b, pipe, s.pipe_ty, WRITTEN);
            let read_at = self.header_word(&mut b, pipe, s.pipe_ty, READ);
            let w = self.atomic_load(&mut b, written_at);
            let r = self.atomic_load(&mut b, read_at);
            b.ids(self.ctx, Op::ISub, uint, &[w, r])
        };
        self.add(b, Some(r))
    }
}

#[cfg(test)]
mod tests {
    use crate::compiler::frontend;
    use crate::compiler::spirv::input::reflect;
    use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

    fn rewrite_all(source: &str) -> Vec<Result<(), String>> {
        let Some(words) = frontend::build_for_test_with(
            source,
            false,
            "-cl-std=CL3.0",
            &["__opencl_c_pipes", "__opencl_c_generic_address_space"],
        ) else {
            return Vec::new();
        };
        let module = reflect::load(&words).unwrap();
        let caps = DeviceCaps {
            max_push_constants: 128,
            int8: true,
            int16: true,
            storage8: true,
            storage16: true,
            ..Default::default()
        };
        reflect::kernels(&module)
            .unwrap()
            .iter()
            .map(|k| crate::compiler::spirv::rewrite(&words, k, &caps).map(|_| ()))
            .collect()
    }

    /// Every pipe instruction of the front end's output is rewritten.
    #[test]
    fn every_pipe_built_in_is_rewritten() {
        let r = rewrite_all(
            "__kernel void groups(__global const float4 *src, __write_only pipe float4 out,
                                  __read_only pipe float4 in, __global uint *n) {
                int gid = get_global_id(0);
                reserve_id_t r = work_group_reserve_write_pipe(out, get_local_size(0));
                if (is_valid_reserve_id(r)) write_pipe(out, r, get_local_id(0), &src[gid]);
                work_group_commit_write_pipe(out, r);
                reserve_id_t q = reserve_read_pipe(in, 2);
                float4 v;
                if (is_valid_reserve_id(q) && read_pipe(in, q, 1, &v) == 0) n[gid] = (uint)v.x;
                commit_read_pipe(in, q);
                n[0] = get_pipe_num_packets(in) + get_pipe_max_packets(out);
            }",
        );
        assert!(r.iter().all(|r| r.is_ok()), "{r:?}");
    }

    #[test]
    fn reads_into_private_variables() {
        let r = rewrite_all(
            "__kernel void get(__read_only pipe uint in, __global uint *dst) {
                uint v;
                if (read_pipe(in, &v) == 0) dst[get_global_id(0)] = v;
            }",
        );
        assert!(r.iter().all(|r| r.is_ok()), "{r:?}");
    }
}
