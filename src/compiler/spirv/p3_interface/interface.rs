//! Pass 9 (phase 3): The kernel interface. Kernel parameters become members
//! of one push-constant block that the host fills at each dispatch: buffers
//! as 64-bit device addresses turned back into pointers, values by value.
//! The block starts with the work-item data Vulkan has no built-in for
//! (global offset, global size, work dimension, and for NDRanges run as
//! several dispatches the first group's id and the enqueued work-group
//! size). The kernel becomes a function without parameters, ready to be the
//! compute entry point.
//!
//! Takes the kernel after phase 2, its arguments as `reflect` read them,
//! the device's push-constant size and whether the kernel uses module data.
//! Guarantees the kernel function has no parameters: each is read from the
//! push constants or the argument block, and images and samplers are
//! `OpUndef`s of their OpenCL types for the images pass; returns the
//! `PushLayout` (one `Slot` per argument) and the `Block` the later passes
//! read the header members through.
//!
//! Arguments that do not fit the device's push constants, or that need
//! memory to be rebuilt (structs by value with their OpenCL C layout,
//! 8/16-component vectors, vectors of 8/16-bit values wider than 8 bytes),
//! all travel instead in a per-dispatch argument block whose device
//! address is in the push constants; they are read through CrossWorkgroup
//! pointers, which the addressing pass turns into laid-out device
//! addresses like any other global data.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Decoration, Op, StorageClass, Word};

use crate::compiler::spirv::common::ctx::{Ctx, Prologue};
use crate::compiler::spirv::input::reflect::{ArgKind, KernelArg, layout};

/// How a push-constant member becomes the kernel's parameter value.
#[derive(Clone, Copy)]
enum Conv {
    Direct,
    /// An 8/16-bit scalar stored in a 32-bit member.
    Widen(Word),
    /// A vector of 8/16-bit values stored in one 32/64-bit member.
    Bits {
        comp: Word,
        comp_bits: u32,
        bytes: u32,
    },
}

/// How the host writes one kernel argument into the push constants.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Slot {
    /// A buffer's device address (u64), or 0 for a null buffer.
    Address { offset: u32 },
    /// The argument's bytes, as the application passed them.
    Bytes { offset: u32, size: u32 },
    /// A `__local` buffer: its size (in elements of `elem_size` bytes)
    /// is specialization constant `spec_id`.
    Local { spec_id: u32, elem_size: u32 },
    /// An image: its view at `binding` of descriptor set 0, and as
    /// specialization constants `info` and `info + 1`, its channel order
    /// and channel data type (less CLK_R and CLK_SNORM_INT8, as the SPIR-V
    /// queries return them; the order word has `images::NO_ALPHA` set for
    /// orders without alpha).
    Image { binding: u32, info: u32 },
    /// A sampler at `binding`, and as specialization constant `info` a
    /// word of its modes (`images::SAMPLER_NORMALIZED`, `SAMPLER_LINEAR`,
    /// `SAMPLER_REPEAT`).
    Sampler { binding: u32, info: u32 },
}

/// SpecIds of `__local` argument sizes start after the work-group size.
pub const FIRST_LOCAL_SPEC_ID: u32 = 3;

/// SpecIds of image and sampler info words: two per binding from here.
/// They take no push-constant room, so the number of image arguments is
/// Vulkan's descriptor limit; a kernel gets one pipeline per combination
/// of formats and sampler modes it meets.
pub const FIRST_IMAGE_SPEC_ID: u32 = 0x9000;

/// The push-constant block the host fills for a dispatch.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PushLayout {
    pub size: u32,
    pub args: Vec<Slot>,
    /// When the arguments do not fit in push constants (or need memory
    /// to be rebuilt: structs, wide vectors), they all travel in an
    /// argument block of this many bytes, whose device address is the
    /// push-constant member at `arg_block`; the slots' offsets are then
    /// offsets in the block.
    pub block: Option<u32>,
    /// Where the argument block's address goes (right after the header).
    pub arg_block: u32,
}

/// How a parameter is read from the argument block.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MemConv {
    /// A value of the parameter's type.
    Value,
    /// A buffer's device address.
    Address,
    /// A struct, copied into a private variable the parameter points to.
    Copy,
}

/// Byte offsets of the built-in members.
pub const GLOBAL_OFFSET: u32 = 0;
pub const GLOBAL_SIZE: u32 = 12;
pub const WORK_DIM: u32 = 24;
/// The group id of this dispatch's first work-group: an NDRange larger
/// than one dispatch, or with a partial last work-group, runs as several.
pub const GROUP_OFFSET: u32 = 28;
/// The work-group size the application enqueued; a dispatch of partial
/// work-groups runs with a smaller one in its specialization constants.
pub const ENQUEUED_LOCAL_SIZE: u32 = 40;
/// The printf buffer's device address (two words), for kernels that print.
pub const PRINTF_BUFFER: u32 = 56;
/// The scratch buffer's device address (two words), for kernels whose
/// private or local data was relocated into device memory.
pub const SCRATCH: u32 = 64;
/// Bytes of the scratch buffer's private region, where the local region
/// starts.
pub const SCRATCH_PRIVATE_BYTES: u32 = 72;
/// Bytes of the whole scratch buffer.
pub const SCRATCH_BYTES: u32 = 76;
/// Bytes of the header every kernel has.
pub const HEADER: u32 = 80;
/// The device address (two words) of the kernel's data segment: the
/// header grows by it for kernels that use program-scope variables or
/// module-scope constant data (see the module_data pass).
pub const MODULE_DATA: u32 = HEADER;

/// Where the launch list's device address (two words) is, for kernels
/// that enqueue on the device: after the header and the module data's
/// address. The launch's number follows (two words, the high one 0).
pub fn enqueue_list_at(module_data: bool) -> u32 {
    if module_data { MODULE_DATA + 8 } else { HEADER }
}

/// Appends to `code` the store into private variable `to` of the device
/// address in the two header words at `offset` of push-constant block
/// `block`.
fn store_address(ctx: &mut Ctx, code: &mut Vec<Instruction>, block: Word, offset: u32, to: Word) {
    let u32t = ctx.uint(32);
    let u64t = ctx.uint(64);
    let pc_u32 = ctx.pointer(StorageClass::PushConstant, u32t);
    let mut half = |k: u32| {
        let (chain, word, wide) = (ctx.fresh(), ctx.fresh(), ctx.fresh());
        let index = ctx.const_u32(offset / 4 + k);
        code.push(Instruction::new(
            Op::AccessChain,
            Some(pc_u32),
            Some(chain),
            vec![Operand::IdRef(block), Operand::IdRef(index)],
        ));
        code.push(Instruction::new(
            Op::Load,
            Some(u32t),
            Some(word),
            vec![Operand::IdRef(chain)],
        ));
        code.push(Instruction::new(
            Op::UConvert,
            Some(u64t),
            Some(wide),
            vec![Operand::IdRef(word)],
        ));
        wide
    };
    let (lo, hi) = (half(0), half(1));
    let k32 = ctx.const_int(u64t, 32);
    let (shifted, address) = (ctx.fresh(), ctx.fresh());
    code.push(Instruction::new(
        Op::ShiftLeftLogical,
        Some(u64t),
        Some(shifted),
        vec![Operand::IdRef(hi), Operand::IdRef(k32)],
    ));
    code.push(Instruction::new(
        Op::BitwiseOr,
        Some(u64t),
        Some(address),
        vec![Operand::IdRef(shifted), Operand::IdRef(lo)],
    ));
    code.push(Instruction::new(
        Op::Store,
        None,
        None,
        vec![Operand::IdRef(to), Operand::IdRef(address)],
    ));
}

/// Loads the push-constant header word at byte `offset`, widened to 64
/// bits.
pub fn header_word(ctx: &mut Ctx, p: &mut Prologue, block: &Block, offset: u32) -> Word {
    let u32t = ctx.uint(32);
    let u64t = ctx.uint(64);
    let pc_u32 = ctx.pointer(StorageClass::PushConstant, u32t);
    let idx = ctx.const_u32(offset / 4);
    let chain = p.op(ctx, Op::AccessChain, pc_u32, &[block.var, idx]);
    let w = p.op(ctx, Op::Load, u32t, &[chain]);
    p.op(ctx, Op::UConvert, u64t, &[w])
}

/// Loads the device address held in the two header words at `offset`.
pub fn header_address(ctx: &mut Ctx, p: &mut Prologue, block: &Block, offset: u32) -> Word {
    let u64t = ctx.uint(64);
    let lo = header_word(ctx, p, block, offset);
    let hi = header_word(ctx, p, block, offset + 4);
    let k32 = ctx.const_int(u64t, 32);
    let shifted = p.op(ctx, Op::ShiftLeftLogical, u64t, &[hi, k32]);
    p.op(ctx, Op::BitwiseOr, u64t, &[shifted, lo])
}

/// The block variable and its member indexes for the built-ins.
pub struct Block {
    pub var: Word,
    /// Member index of global offset x (y, z follow), global size x
    /// (y, z follow), work_dim, group offset x (y, z follow) and enqueued
    /// local size x (y, z follow).
    pub global_offset: u32,
    pub global_size: u32,
    pub work_dim: u32,
    pub group_offset: u32,
    pub enqueued_local_size: u32,
    /// Image and sampler parameters, for the images pass.
    pub images: Vec<ImageParam>,
}

/// An image or sampler parameter: defined by an `OpUndef` of its OpenCL
/// type until the images pass loads it from its descriptor.
#[derive(Clone, Copy, Debug)]
pub struct ImageParam {
    pub id: Word,
    pub binding: u32,
    /// The SpecId of its first info word ([`Slot::Image`]).
    pub info_spec: u32,
    pub sampler: bool,
}

/// An image or sampler argument: the next binding, and its info words as
/// specialization constants.
fn image_slot(
    sampler: bool,
    pid: Word,
    pty: Word,
    images: &mut Vec<ImageParam>,
    slots: &mut Vec<Slot>,
    undefs: &mut Vec<(Word, Word)>,
) {
    let binding = images.len() as u32;
    let info = FIRST_IMAGE_SPEC_ID + 2 * binding;
    images.push(ImageParam {
        id: pid,
        binding,
        info_spec: info,
        sampler,
    });
    slots.push(if sampler {
        Slot::Sampler { binding, info }
    } else {
        Slot::Image { binding, info }
    });
    undefs.push((pid, pty));
}

fn ctx_pointer_parts(
    types: &crate::compiler::spirv::common::HashMap<Word, &Instruction>,
    ty: Word,
) -> Option<(StorageClass, Word)> {
    let t = types.get(&ty)?;
    match (t.class.opcode, t.operands.first(), t.operands.get(1)) {
        (Op::TypePointer, Some(Operand::StorageClass(sc)), Some(Operand::IdRef(p))) => {
            Some((*sc, *p))
        }
        _ => None,
    }
}

pub fn run(
    ctx: &mut Ctx,
    fid: Word,
    args: &[KernelArg],
    max_push: u32,
    module_data: bool,
) -> Result<(PushLayout, Block), String> {
    let u32t = ctx.uint(32);
    let u64t = ctx.uint(64);
    let header = enqueue_list_at(module_data) + if ctx.enqueue_list.is_some() { 16 } else { 0 };
    let mut members: Vec<(Word, u32)> = (0..header / 4).map(|i| (u32t, i * 4)).collect();
    let func_index = ctx
        .module
        .functions
        .iter()
        .position(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(fid))
        .ok_or("kernel function missing")?;
    let params = std::mem::take(&mut ctx.module.functions[func_index].parameters);
    if params.len() != args.len() {
        return Err("kernel parameters and metadata disagree".into());
    }
    let types: crate::compiler::spirv::common::HashMap<Word, &Instruction> = ctx
        .module
        .types_global_values
        .iter()
        .filter_map(|i| i.result_id.map(|r| (r, i)))
        .collect();
    let mut offset = header;
    let mut slots = Vec::new();
    // (param id, param type, member index, how to load)
    let mut loads: Vec<(Word, Word, u32, Conv)> = Vec::new();
    // (param id, param type, element type, SpecId) of __local arguments.
    let mut locals: Vec<(Word, Word, Word, u32)> = Vec::new();
    let mut in_memory = false;
    let mut images: Vec<ImageParam> = Vec::new();
    // (param id, param type) of images and samplers.
    let mut undefs: Vec<(Word, Word)> = Vec::new();
    for (p, a) in params.iter().zip(args) {
        let pid = p.result_id.ok_or("parameter without id")?;
        let pty = p.result_type.ok_or("parameter without type")?;
        match &a.kind {
            ArgKind::Buffer | ArgKind::Pipe | ArgKind::Queue => {
                offset = offset.next_multiple_of(8);
                slots.push(Slot::Address { offset });
                loads.push((pid, pty, members.len() as u32, Conv::Direct));
                members.push((u64t, offset));
                offset += 8;
            }
            ArgKind::Value(size) => {
                let t = types.get(&pty).ok_or("unknown parameter type")?;
                let narrow = t.class.opcode == Op::TypeInt
                    && matches!(t.operands.first(), Some(Operand::LiteralBit32(w)) if *w < 32);
                match t.class.opcode {
                    Op::TypeInt | Op::TypeFloat | Op::TypeVector => {}
                    // Structs (passed by pointer) and wide vectors (now
                    // arrays) are read from memory in the OpenCL C layout.
                    _ => {
                        in_memory = true;
                        break;
                    }
                }
                let (_, align) = layout(&types, pty)?;
                if t.class.opcode == Op::TypeVector {
                    let comp = match t.operands.first() {
                        Some(Operand::IdRef(c)) => *c,
                        _ => return Err("bad vector type".into()),
                    };
                    let comp_size = layout(&types, comp)?.0;
                    if comp_size < 4 {
                        // Vectors of 8/16-bit values travel as one 32- or
                        // 64-bit word and are reinterpreted in the shader.
                        if !matches!(*size, 2 | 4 | 8) {
                            in_memory = true;
                            break;
                        }
                        let word = if *size == 8 { u64t } else { u32t };
                        offset = offset.next_multiple_of(*size.max(&4));
                        slots.push(Slot::Bytes {
                            offset,
                            size: *size,
                        });
                        loads.push((
                            pid,
                            pty,
                            members.len() as u32,
                            Conv::Bits {
                                comp,
                                comp_bits: comp_size * 8,
                                bytes: *size,
                            },
                        ));
                        members.push((word, offset));
                        offset += (*size).max(4);
                        continue;
                    }
                }
                if narrow {
                    offset = offset.next_multiple_of(4);
                    slots.push(Slot::Bytes {
                        offset,
                        size: *size,
                    });
                    loads.push((pid, pty, members.len() as u32, Conv::Widen(u32t)));
                    members.push((u32t, offset));
                    offset += 4;
                } else {
                    offset = offset.next_multiple_of(align.max(4));
                    slots.push(Slot::Bytes {
                        offset,
                        size: *size,
                    });
                    loads.push((pid, pty, members.len() as u32, Conv::Direct));
                    members.push((pty, offset));
                    offset += *size;
                }
            }
            ArgKind::Local => {
                let (_, pointee) =
                    ctx_pointer_parts(&types, pty).ok_or("bad __local argument type")?;
                let elem_size = layout(&types, pointee).map(|l| l.0).unwrap_or(1).max(1);
                let spec_id = FIRST_LOCAL_SPEC_ID + locals.len() as u32;
                slots.push(Slot::Local { spec_id, elem_size });
                locals.push((pid, pty, pointee, spec_id));
            }
            ArgKind::Image | ArgKind::Sampler => {
                image_slot(
                    a.kind == ArgKind::Sampler,
                    pid,
                    pty,
                    &mut images,
                    &mut slots,
                    &mut undefs,
                );
            }
        }
    }
    let mut size = offset.next_multiple_of(8);
    let limit = if max_push == 0 { 128 } else { max_push };
    // (param id, param type, offset in the argument block, how to load)
    let mut mem_loads: Vec<(Word, Word, u32, MemConv)> = Vec::new();
    let mut block_size = None;
    if in_memory || size > limit {
        // Laid out again from the first argument: images and samplers too.
        (members, slots, loads, locals, images, undefs) = (
            (0..header / 4).map(|i| (u32t, i * 4)).collect(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        members.push((u64t, header));
        size = header + 8;
        let mut at = 0u32;
        for (p, a) in params.iter().zip(args) {
            let pid = p.result_id.ok_or("parameter without id")?;
            let pty = p.result_type.ok_or("parameter without type")?;
            match &a.kind {
                ArgKind::Buffer | ArgKind::Pipe | ArgKind::Queue => {
                    at = at.next_multiple_of(8);
                    slots.push(Slot::Address { offset: at });
                    mem_loads.push((pid, pty, at, MemConv::Address));
                    at += 8;
                }
                ArgKind::Value(bytes) => {
                    // A struct arrives as a pointer to a private copy.
                    let (ty, conv) = match ctx_pointer_parts(&types, pty) {
                        Some((StorageClass::Function, pointee)) => (pointee, MemConv::Copy),
                        Some(_) => {
                            return Err(format!(
                                "argument {} of type {} by value has an unexpected pointer type",
                                a.name, a.type_name
                            ));
                        }
                        None => (pty, MemConv::Value),
                    };
                    let (lsize, align) = layout(&types, ty)?;
                    at = at.next_multiple_of(align.max(1));
                    slots.push(Slot::Bytes {
                        offset: at,
                        size: *bytes,
                    });
                    mem_loads.push((pid, ty, at, conv));
                    at += lsize.max(*bytes);
                }
                ArgKind::Local => {
                    let (_, pointee) =
                        ctx_pointer_parts(&types, pty).ok_or("bad __local argument type")?;
                    let elem_size = layout(&types, pointee).map(|l| l.0).unwrap_or(1).max(1);
                    let spec_id = FIRST_LOCAL_SPEC_ID + locals.len() as u32;
                    slots.push(Slot::Local { spec_id, elem_size });
                    locals.push((pid, pty, pointee, spec_id));
                }
                ArgKind::Image | ArgKind::Sampler => {
                    image_slot(
                        a.kind == ArgKind::Sampler,
                        pid,
                        pty,
                        &mut images,
                        &mut slots,
                        &mut undefs,
                    );
                }
            }
        }
        block_size = Some(at.max(1));
    }
    // The block type and variable.
    let block_ty = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::TypeStruct,
        None,
        Some(block_ty),
        members.iter().map(|(t, _)| Operand::IdRef(*t)).collect(),
    ));
    ctx.decorate(block_ty, Decoration::Block, vec![]);
    for (i, (_, off)) in members.iter().enumerate() {
        ctx.member_decorate(
            block_ty,
            i as u32,
            Decoration::Offset,
            vec![Operand::LiteralBit32(*off)],
        );
    }
    let block_ptr = ctx.pointer(StorageClass::PushConstant, block_ty);
    let var = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(block_ptr),
        Some(var),
        vec![Operand::StorageClass(StorageClass::PushConstant)],
    ));
    // Loads at the start of the kernel, defining the old parameter ids.
    let mut code = Vec::new();
    for (pid, pty) in undefs {
        code.push(Instruction::new(Op::Undef, Some(pty), Some(pid), vec![]));
    }
    if let Some(printf) = ctx.printf_buffer {
        store_address(ctx, &mut code, var, PRINTF_BUFFER, printf);
    }
    if let Some(list) = ctx.enqueue_list {
        store_address(ctx, &mut code, var, enqueue_list_at(module_data), list);
    }
    if let Some(parent) = ctx.enqueue_parent {
        store_address(
            ctx,
            &mut code,
            var,
            enqueue_list_at(module_data) + 8,
            parent,
        );
    }
    // Function variables holding copies of struct arguments.
    let mut copies = Vec::new();
    if !mem_loads.is_empty() {
        let mptr = ctx.pointer(StorageClass::PushConstant, u64t);
        let index = ctx.const_u32(members.len() as u32 - 1);
        let chain = ctx.fresh();
        code.push(Instruction::new(
            Op::AccessChain,
            Some(mptr),
            Some(chain),
            vec![Operand::IdRef(var), Operand::IdRef(index)],
        ));
        let base = ctx.fresh();
        code.push(Instruction::new(
            Op::Load,
            Some(u64t),
            Some(base),
            vec![Operand::IdRef(chain)],
        ));
        for (pid, ty, at, conv) in mem_loads {
            let offset = ctx.fresh();
            ctx.module.types_global_values.push(Instruction::new(
                Op::Constant,
                Some(u64t),
                Some(offset),
                vec![Operand::LiteralBit64(at as u64)],
            ));
            let addr = ctx.fresh();
            code.push(Instruction::new(
                Op::IAdd,
                Some(u64t),
                Some(addr),
                vec![Operand::IdRef(base), Operand::IdRef(offset)],
            ));
            // A CrossWorkgroup pointer, which the addressing pass turns
            // into a device address with the OpenCL C layout.
            let data_ty = if conv == MemConv::Address { u64t } else { ty };
            let gptr_ty = ctx.pointer(StorageClass::CrossWorkgroup, data_ty);
            let gptr = ctx.fresh();
            code.push(Instruction::new(
                Op::ConvertUToPtr,
                Some(gptr_ty),
                Some(gptr),
                vec![Operand::IdRef(addr)],
            ));
            let value = if conv == MemConv::Value {
                pid
            } else {
                ctx.fresh()
            };
            code.push(Instruction::new(
                Op::Load,
                Some(data_ty),
                Some(value),
                vec![Operand::IdRef(gptr)],
            ));
            match conv {
                MemConv::Value => {}
                MemConv::Address => code.push(Instruction::new(
                    Op::ConvertUToPtr,
                    Some(ty),
                    Some(pid),
                    vec![Operand::IdRef(value)],
                )),
                MemConv::Copy => {
                    let fptr = ctx.pointer(StorageClass::Function, ty);
                    copies.push(Instruction::new(
                        Op::Variable,
                        Some(fptr),
                        Some(pid),
                        vec![Operand::StorageClass(StorageClass::Function)],
                    ));
                    code.push(Instruction::new(
                        Op::Store,
                        None,
                        None,
                        vec![Operand::IdRef(pid), Operand::IdRef(value)],
                    ));
                }
            }
        }
    }
    for (pid, pty, member, widen) in loads {
        let member_ty = members[member as usize].0;
        let mptr = ctx.pointer(StorageClass::PushConstant, member_ty);
        let index = ctx.const_u32(member);
        let chain = ctx.fresh();
        code.push(Instruction::new(
            Op::AccessChain,
            Some(mptr),
            Some(chain),
            vec![Operand::IdRef(var), Operand::IdRef(index)],
        ));
        let is_ptr = ctx.pointer_parts(pty).is_some();
        match widen {
            _ if is_ptr => {
                let addr = ctx.fresh();
                code.push(Instruction::new(
                    Op::Load,
                    Some(u64t),
                    Some(addr),
                    vec![Operand::IdRef(chain)],
                ));
                code.push(Instruction::new(
                    Op::ConvertUToPtr,
                    Some(pty),
                    Some(pid),
                    vec![Operand::IdRef(addr)],
                ));
            }
            Conv::Widen(wide) => {
                let v = ctx.fresh();
                code.push(Instruction::new(
                    Op::Load,
                    Some(wide),
                    Some(v),
                    vec![Operand::IdRef(chain)],
                ));
                code.push(Instruction::new(
                    Op::UConvert,
                    Some(pty),
                    Some(pid),
                    vec![Operand::IdRef(v)],
                ));
            }
            Conv::Direct => {
                code.push(Instruction::new(
                    Op::Load,
                    Some(pty),
                    Some(pid),
                    vec![Operand::IdRef(chain)],
                ));
            }
            Conv::Bits {
                comp,
                comp_bits,
                bytes,
            } => {
                let mut v = ctx.fresh();
                code.push(Instruction::new(
                    Op::Load,
                    Some(member_ty),
                    Some(v),
                    vec![Operand::IdRef(chain)],
                ));
                if bytes == 2 {
                    let u16t = ctx.uint(16);
                    let n = ctx.fresh();
                    code.push(Instruction::new(
                        Op::UConvert,
                        Some(u16t),
                        Some(n),
                        vec![Operand::IdRef(v)],
                    ));
                    v = n;
                }
                let lanes = ctx
                    .global(pty)
                    .and_then(|t| match t.operands.get(1) {
                        Some(Operand::LiteralBit32(n)) => Some(*n),
                        _ => None,
                    })
                    .ok_or("bad vector type")?;
                let padded = bytes * 8 / comp_bits;
                if padded == lanes {
                    code.push(Instruction::new(
                        Op::Bitcast,
                        Some(pty),
                        Some(pid),
                        vec![Operand::IdRef(v)],
                    ));
                } else {
                    // A 3-vector occupies the room of a 4-vector.
                    let full = ctx.vector(comp, padded);
                    let b = ctx.fresh();
                    code.push(Instruction::new(
                        Op::Bitcast,
                        Some(full),
                        Some(b),
                        vec![Operand::IdRef(v)],
                    ));
                    let mut ops = vec![Operand::IdRef(b), Operand::IdRef(b)];
                    ops.extend((0..lanes).map(Operand::LiteralBit32));
                    code.push(Instruction::new(
                        Op::VectorShuffle,
                        Some(pty),
                        Some(pid),
                        ops,
                    ));
                }
            }
        }
    }
    // __local arguments: work-group arrays sized at pipeline creation.
    for (pid, pty, elem, spec_id) in locals {
        let n = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::SpecConstant,
            Some(u32t),
            Some(n),
            vec![Operand::LiteralBit32(1)],
        ));
        ctx.decorate(n, Decoration::SpecId, vec![Operand::LiteralBit32(spec_id)]);
        let arr = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::TypeArray,
            None,
            Some(arr),
            vec![Operand::IdRef(elem), Operand::IdRef(n)],
        ));
        let arr_ptr = ctx.pointer(StorageClass::Workgroup, arr);
        let var = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::Variable,
            Some(arr_ptr),
            Some(var),
            vec![Operand::StorageClass(StorageClass::Workgroup)],
        ));
        let zero = ctx.const_u32(0);
        code.push(Instruction::new(
            Op::AccessChain,
            Some(pty),
            Some(pid),
            vec![Operand::IdRef(var), Operand::IdRef(zero)],
        ));
    }
    let void = ctx.void();
    let fty = ctx.function_type(void, &[]);
    let func = &mut ctx.module.functions[func_index];
    let def = func.def.as_mut().ok_or("kernel without OpFunction")?;
    if let Some(op) = def.operands.get_mut(1) {
        *op = Operand::IdRef(fty);
    }
    let entry = func.blocks.first_mut().ok_or("kernel without a body")?;
    let at = entry
        .instructions
        .iter()
        .take_while(|i| i.class.opcode == Op::Variable)
        .count();
    entry.instructions.splice(at..at, code);
    entry.instructions.splice(0..0, copies);
    // Parameter decorations have nothing left to decorate.
    let gone: Vec<Word> = params.iter().filter_map(|p| p.result_id).collect();
    ctx.module.annotations.retain(|a| {
        !(matches!(a.class.opcode, Op::Decorate)
            && matches!(a.operands.first(), Some(Operand::IdRef(t)) if gone.contains(t)))
    });
    Ok((
        PushLayout {
            size,
            args: slots,
            block: block_size,
            arg_block: header,
        },
        Block {
            var,
            global_offset: 0,
            global_size: 3,
            work_dim: 6,
            group_offset: 7,
            enqueued_local_size: 10,
            images,
        },
    ))
}

#[cfg(test)]
mod tests {
    use rspirv::binary::Assemble;
    use rspirv::spirv::{
        AddressingModel, Capability, ExecutionModel, FunctionControl, MemoryModel,
    };

    use super::*;
    use crate::compiler::spirv::input::reflect::KernelInfo;
    use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

    /// `kernel void k(global uint *out, uint v) { *out = v; }`
    fn store_kernel() -> (Vec<u32>, KernelInfo) {
        let mut b = rspirv::dr::Builder::new();
        b.set_version(1, 0);
        for c in [Capability::Addresses, Capability::Kernel, Capability::Int64] {
            b.capability(c);
        }
        b.memory_model(AddressingModel::Physical64, MemoryModel::OpenCL);
        let void = b.type_void();
        let u32t = b.type_int(32, 0);
        let gptr = b.type_pointer(None, StorageClass::CrossWorkgroup, u32t);
        let fty = b.type_function(void, vec![gptr, u32t]);
        let f = b
            .begin_function(void, None, FunctionControl::NONE, fty)
            .unwrap();
        let out = b.function_parameter(gptr).unwrap();
        let v = b.function_parameter(u32t).unwrap();
        b.begin_block(None).unwrap();
        b.store(out, v, None, vec![]).unwrap();
        b.ret().unwrap();
        b.end_function().unwrap();
        b.entry_point(ExecutionModel::Kernel, f, "k", vec![]);
        let arg = |name: &str, kind| KernelArg {
            name: name.into(),
            kind,
            address: 0,
            access: 0,
            type_name: String::new(),
            type_qual: 0,
        };
        let info = KernelInfo {
            name: "k".into(),
            args: vec![arg("out", ArgKind::Buffer), arg("v", ArgKind::Value(4))],
            reqd_work_group_size: None,
            reqd_sub_group_size: None,
            work_group_size_hint: None,
            vec_type_hint: None,
            local_bytes: 0,
            private_bytes: 0,
            block: false,
        };
        (b.module().assemble(), info)
    }

    #[test]
    fn arguments_in_push_constants_when_they_fit() {
        let (words, info) = store_kernel();
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        let r = crate::compiler::spirv::rewrite(&words, &info, &caps).unwrap();
        assert_eq!(r.push.block, None);
        assert_eq!(
            r.push.args,
            vec![
                Slot::Address { offset: HEADER },
                Slot::Bytes {
                    offset: HEADER + 8,
                    size: 4
                }
            ]
        );
        assert_eq!(r.push.size, HEADER + 16);
    }

    #[test]
    fn arguments_in_a_block_when_push_constants_are_full() {
        let (words, info) = store_kernel();
        let caps = DeviceCaps {
            max_push_constants: HEADER + 8,
            ..Default::default()
        };
        // The rewrite validates the module it returns.
        let r = crate::compiler::spirv::rewrite(&words, &info, &caps).unwrap();
        assert_eq!(r.push.block, Some(12));
        assert_eq!(
            r.push.args,
            vec![
                Slot::Address { offset: 0 },
                Slot::Bytes { offset: 8, size: 4 }
            ]
        );
        assert_eq!(r.push.size, r.push.arg_block + 8);
    }
}
