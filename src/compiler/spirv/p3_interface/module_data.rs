//! Pass 10 (phase 3): Module data. Program-scope `__global` variables
//! (`CrossWorkgroup` variables at module scope) and module-scope
//! `__constant` data (`UniformConstant` variables: tables, literals,
//! libclc's coefficient tables) live in device memory, reached through
//! device addresses like any buffer.
//!
//! Takes the kernel after `interface`, its `Block`, and the program's
//! layout (`program_layout`, computed on the whole module before the
//! rewrite). Guarantees no module-scope `CrossWorkgroup` or
//! `UniformConstant` variable is left: each is a device pointer into the
//! program's or the kernel's segment; returns the kernel's segment and
//! relocations, or `None` when it has no module data.
//!
//! Two segments hold them:
//! * the program's segment, one per program and device, shared by all
//!   its kernels and kept for the program's life: every such variable of
//!   the program's own module, laid out by [`program_layout`] in
//!   declaration order, so that each kernel's rewrite finds a variable at
//!   the same offset;
//! * the kernel's segment, one per rewritten kernel: its first eight bytes
//!   hold the program segment's address, then the constant data the
//!   rewrite itself added (libclc's tables).
//!
//! The kernel finds its segment at `interface::MODULE_DATA` in the push
//! constants. Each variable becomes, at the kernel's start, its address
//! converted to a pointer of the variable's type; the addressing pass then
//! treats it as any other device pointer. Initialisers, including
//! addresses of other variables (`global int *p = &x;`), are evaluated
//! into the segments' bytes here; the host adds the segments' addresses
//! where [`ModuleData::relocations`] says, when it uploads them.
//!
//! [`program_layout`]: crate::compiler::spirv::p3_interface::module_data::program_layout
//! [`ModuleData::relocations`]: crate::compiler::spirv::p3_interface::module_data::ModuleData::relocations

use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Decoration, MemoryAccess, Op, StorageClass, Word};

use crate::compiler::spirv::common::ctx::{
    Ctx, Prologue, decoration_literal, id_at, ids_used, insert_at_kernel_start,
};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::input::reflect::{self, is_packed, layout};
use crate::compiler::spirv::p3_interface::interface::{Block, MODULE_DATA, header_address};

/// A place in a segment that holds an address: the host writes the base
/// address of the segment named plus `target` there.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Relocation {
    pub at: u64,
    pub target: u64,
    /// Whether `target` is in the program's segment (else in the segment
    /// holding the relocation).
    pub program: bool,
}

/// The initial contents of a segment.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModuleData {
    pub bytes: Vec<u8>,
    pub relocations: Vec<Relocation>,
}

impl ModuleData {
    /// The bytes to upload for a segment at `own`, with the program's
    /// segment at `program`.
    pub fn resolve(&self, own: u64, program: u64) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        for r in &self.relocations {
            let base = if r.program { program } else { own };
            let at = r.at as usize;
            bytes[at..at + 8].copy_from_slice(&(base + r.target).to_le_bytes());
        }
        bytes
    }

    /// Whether uploading this segment needs the program's segment.
    pub fn needs_program(&self) -> bool {
        self.relocations.iter().any(|r| r.program)
    }
}

/// Where the program's variables live in its segment, and its contents.
#[derive(Clone, Debug, Default)]
pub struct ProgramLayout {
    pub offsets: HashMap<Word, u64>,
    pub data: ModuleData,
}

/// Lays out the program's segment (see the module documentation). Run
/// with the module's packed structs known to `reflect::layout`.
pub fn program_layout(module: &Module) -> Result<ProgramLayout, String> {
    let g = globals(module);
    let vars = data_variables(module);
    let (offsets, size) = place(module, &g, &vars, 0)?;
    let target = |v: Word| offsets.get(&v).map(|&o| (false, o));
    let data = fill(&g, &vars, &offsets, size, &target)?;
    Ok(ProgramLayout { offsets, data })
}

/// The program segment's initial contents, from the program's SPIR-V.
pub fn program_data(words: &[u32]) -> Result<ModuleData, String> {
    let module = reflect::load(words)?;
    reflect::with_packed_structs(reflect::packed_structs(&module), || program_layout(&module))
        .map(|l| l.data)
}

/// Bytes of the program's `__global` variables
/// (CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE).
pub fn global_variable_bytes(words: &[u32]) -> u64 {
    let Ok(module) = reflect::load(words) else {
        return 0;
    };
    reflect::with_packed_structs(reflect::packed_structs(&module), || {
        let g = globals(&module);
        data_variables(&module)
            .iter()
            .filter(|&&v| storage_class(&g, v) == Some(StorageClass::CrossWorkgroup))
            .filter_map(|&v| pointee_layout(&g, v).ok())
            .map(|(size, _)| u64::from(size))
            .sum()
    })
}

/// Whether the module (one kernel's, after inlining and linking the
/// built-ins) has data for the segments: its push constants then carry
/// the kernel segment's address at `interface::MODULE_DATA`.
pub fn uses_module_data(module: &Module) -> bool {
    !data_variables(module).is_empty()
}

/// Rewrites the kernel `fid` (see the module documentation); returns its
/// segment when it uses module data.
pub fn run(
    ctx: &mut Ctx,
    fid: Word,
    block: &Block,
    program: &ProgramLayout,
) -> Result<Option<ModuleData>, String> {
    let vars = data_variables(&ctx.module);
    if vars.is_empty() {
        return Ok(None);
    }
    // The kernel's own variables follow the program segment's address.
    let g = globals(&ctx.module);
    let own: Vec<Word> = vars
        .iter()
        .copied()
        .filter(|v| !program.offsets.contains_key(v))
        .collect();
    let (own_offsets, size) = place(&ctx.module, &g, &own, 8)?;
    let uses_program = vars.iter().any(|v| program.offsets.contains_key(v));
    let target = |v: Word| {
        own_offsets
            .get(&v)
            .map(|&o| (false, o))
            .or_else(|| program.offsets.get(&v).map(|&o| (true, o)))
    };
    let mut data = fill(&g, &own, &own_offsets, size, &target)?;
    let var_types: Vec<Option<Word>> = vars.iter().map(|v| g[v].result_type).collect();
    drop(g);
    if uses_program {
        data.relocations.push(Relocation {
            at: 0,
            target: 0,
            program: true,
        });
    }

    // Each variable's address, at the kernel's start.
    let u64t = ctx.uint(64);
    let mut p = Prologue { code: Vec::new() };
    let segment = header_address(ctx, &mut p, block, MODULE_DATA);
    let program_base = if uses_program {
        let ptr = ctx.pointer(StorageClass::CrossWorkgroup, u64t);
        let at = p.op(ctx, Op::ConvertUToPtr, ptr, &[segment]);
        let id = ctx.fresh();
        p.code.push(Instruction::new(
            Op::Load,
            Some(u64t),
            Some(id),
            vec![
                Operand::IdRef(at),
                Operand::MemoryAccess(MemoryAccess::ALIGNED),
                Operand::LiteralBit32(8),
            ],
        ));
        Some(id)
    } else {
        None
    };
    let mut replace: HashMap<Word, Word> = HashMap::default();
    // Constant data's addresses, with the type each points to.
    let mut constant_tables: HashMap<Word, Word> = HashMap::default();
    for (&v, ty) in vars.iter().zip(var_types) {
        let ty = ty.ok_or("variable without type")?;
        let (base, offset) = match (own_offsets.get(&v), program.offsets.get(&v)) {
            (Some(&o), _) => (segment, o),
            (None, Some(&o)) => (program_base.ok_or("no program segment")?, o),
            (None, None) => return Err("module data variable without a place".into()),
        };
        let k = ctx.const_int(u64t, offset);
        let address = p.op(ctx, Op::IAdd, u64t, &[base, k]);
        let ptr = p.op(ctx, Op::ConvertUToPtr, ty, &[address]);
        if let Some((StorageClass::UniformConstant, pointee)) = ctx.pointer_parts(ty) {
            constant_tables.insert(ptr, pointee);
        }
        replace.insert(v, ptr);
    }

    // Constants made from the variables' addresses: the initialisers of
    // other variables (now in the segments' bytes) and constant pointer
    // arithmetic (`&table[2]`), which becomes code at the kernel's start.
    let mut gone: HashSet<Word> = vars.iter().copied().collect();
    for i in &ctx.module.types_global_values {
        let Some(id) = i.result_id else { continue };
        if gone.contains(&id) || !ids_used(i).any(|x| gone.contains(&x)) {
            continue;
        }
        gone.insert(id);
        if i.class.opcode == Op::SpecConstantOp {
            let Some(Operand::LiteralSpecConstantOpInteger(op)) = i.operands.first() else {
                return Err("malformed OpSpecConstantOp".into());
            };
            let operands = i.operands[1..]
                .iter()
                .map(|o| match o {
                    Operand::IdRef(x) => Operand::IdRef(*replace.get(x).unwrap_or(x)),
                    other => other.clone(),
                })
                .collect();
            p.code
                .push(Instruction::new(*op, i.result_type, Some(id), operands));
            // The instruction keeps its id; uses need no change.
            replace.insert(id, id);
        }
    }
    // Initialisers nothing else uses go too: some cannot exist in a Vulkan
    // module (a null struct of logical pointers).
    let mut candidates: Vec<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable && i.result_id.is_some_and(|r| gone.contains(&r))
        })
        .filter_map(|i| id_at(i, 1))
        .collect();
    while !candidates.is_empty() {
        let used: HashSet<Word> = ctx
            .module
            .types_global_values
            .iter()
            .filter(|i| i.result_id.is_none_or(|r| !gone.contains(&r)))
            .chain(ctx.module.functions.iter().flat_map(|f| f.all_inst_iter()))
            .chain(p.code.iter())
            .flat_map(ids_used)
            .collect();
        let dead: Vec<Word> = candidates
            .drain(..)
            .filter(|c| !used.contains(c) && !gone.contains(c))
            .collect();
        for c in dead {
            gone.insert(c);
            if let Some(i) = ctx
                .module
                .types_global_values
                .iter()
                .find(|i| i.result_id == Some(c))
            {
                if matches!(
                    i.class.opcode,
                    Op::ConstantComposite | Op::SpecConstantComposite
                ) {
                    candidates.extend(ids_used(i).filter(|&x| Some(x) != i.result_type));
                }
            }
        }
    }
    ctx.forget_globals(&gone);
    for f in &mut ctx.module.functions {
        for i in f.all_inst_iter_mut() {
            for o in &mut i.operands {
                if let Operand::IdRef(x) = o {
                    if let Some(&r) = replace.get(x) {
                        *x = r;
                    } else if gone.contains(x) {
                        return Err(
                            "a constant built from the addresses of program-scope variables is not supported"
                                .into(),
                        );
                    }
                }
            }
        }
    }
    clamp_table_indexes(ctx, &constant_tables)?;
    insert_at_kernel_start(&mut ctx.module.functions, fid, p.code)?;
    Ok(Some(data))
}

/// Keeps run-time indexes into constant tables inside the tables. Code
/// that reads a table entry before it knows whether it needs it (libclc's
/// `sinh` of a huge argument) may compute an index far outside it; a
/// private copy of the table forgave that, device memory may not (lavapipe
/// faults). Indexes within bounds are unchanged.
fn clamp_table_indexes(ctx: &mut Ctx, tables: &HashMap<Word, Word>) -> Result<(), String> {
    if tables.is_empty() {
        return Ok(());
    }
    let bool_ty = ctx.ty(Op::TypeBool, vec![]);
    let value_types: HashMap<Word, Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for mut i in std::mem::take(&mut b.instructions) {
                let first_index = match i.class.opcode {
                    Op::AccessChain | Op::InBoundsAccessChain => Some(1),
                    Op::PtrAccessChain | Op::InBoundsPtrAccessChain => Some(2),
                    _ => None,
                };
                if let Some(first) = first_index
                    && let Some(&pointee) = id_at(&i, 0).and_then(|base| tables.get(&base))
                {
                    let mut ty = pointee;
                    for k in first..i.operands.len() {
                        let Some(idx) = id_at(&i, k) else { break };
                        let Some(t) = ctx.global(ty).cloned() else {
                            break;
                        };
                        let next = match t.class.opcode {
                            Op::TypeArray | Op::TypeVector | Op::TypeRuntimeArray => id_at(&t, 0),
                            Op::TypeStruct => {
                                let m =
                                    constant_u64(ctx, idx).ok_or("struct index not constant")?;
                                id_at(&t, m as usize)
                            }
                            _ => None,
                        };
                        let length = match t.class.opcode {
                            Op::TypeArray => id_at(&t, 1).and_then(|l| constant_u64(ctx, l)),
                            _ => None,
                        };
                        if let Some(n) = length
                            && n > 0
                            && constant_u64(ctx, idx).is_none()
                        {
                            let ity = value_types
                                .get(&idx)
                                .copied()
                                .or_else(|| ctx.type_of(idx))
                                .ok_or("index without type")?;
                            let last = ctx.const_int(ity, n - 1);
                            let inside = ctx.fresh();
                            out.push(Instruction::new(
                                Op::ULessThanEqual,
                                Some(bool_ty),
                                Some(inside),
                                vec![Operand::IdRef(idx), Operand::IdRef(last)],
                            ));
                            let clamped = ctx.fresh();
                            out.push(Instruction::new(
                                Op::Select,
                                Some(ity),
                                Some(clamped),
                                vec![
                                    Operand::IdRef(inside),
                                    Operand::IdRef(idx),
                                    Operand::IdRef(last),
                                ],
                            ));
                            i.operands[k] = Operand::IdRef(clamped);
                        }
                        match next {
                            Some(n) => ty = n,
                            None => break,
                        }
                    }
                }
                out.push(i);
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    Ok(())
}

/// The value of an integer constant.
fn constant_u64(ctx: &Ctx, c: Word) -> Option<u64> {
    ctx.global(c)
        .filter(|i| i.class.opcode == Op::Constant)
        .and_then(literal_bits)
}

/// The bits of an `OpConstant`'s or `OpSpecConstant`'s value.
fn literal_bits(i: &Instruction) -> Option<u64> {
    match i.operands.first()? {
        Operand::LiteralBit32(v) => Some(u64::from(*v)),
        Operand::LiteralBit64(v) => Some(*v),
        _ => None,
    }
}

type Globals<'a> = HashMap<Word, &'a Instruction>;

fn globals(module: &Module) -> Globals<'_> {
    module
        .types_global_values
        .iter()
        .filter_map(|i| i.result_id.map(|r| (r, i)))
        .collect()
}

/// The module-scope `CrossWorkgroup` and `UniformConstant` variables of
/// data, in declaration order (literal samplers and other opaque objects
/// are the images pass's).
fn data_variables(module: &Module) -> Vec<Word> {
    let g = globals(module);
    module
        .types_global_values
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable
                && matches!(
                    i.operands.first(),
                    Some(Operand::StorageClass(
                        StorageClass::CrossWorkgroup | StorageClass::UniformConstant
                    ))
                )
        })
        .filter_map(|i| i.result_id)
        .filter(|&v| {
            let opaque = pointee(&g, v)
                .ok()
                .and_then(|t| g.get(&t))
                .is_some_and(|t| {
                    matches!(
                        t.class.opcode,
                        Op::TypeSampler
                            | Op::TypeImage
                            | Op::TypeSampledImage
                            | Op::TypeEvent
                            | Op::TypeDeviceEvent
                            | Op::TypeQueue
                            | Op::TypePipe
                            | Op::TypeReserveId
                    )
                });
            !opaque
        })
        .collect()
}

fn storage_class(g: &Globals, v: Word) -> Option<StorageClass> {
    match g.get(&v)?.operands.first() {
        Some(Operand::StorageClass(sc)) => Some(*sc),
        _ => None,
    }
}

/// The type a pointer-typed value points to.
fn pointee(g: &Globals, v: Word) -> Result<Word, String> {
    let ty = g
        .get(&v)
        .and_then(|i| i.result_type)
        .ok_or("value without type")?;
    g.get(&ty)
        .filter(|t| t.class.opcode == Op::TypePointer)
        .and_then(|t| id_at(t, 1))
        .ok_or_else(|| "module data of non-pointer type".to_string())
}

fn pointee_layout(g: &Globals, v: Word) -> Result<(u32, u32), String> {
    layout(g, pointee(g, v)?)
}

/// The alignment every variable of a segment gets at least.
const VECTOR_ALIGN: u32 = 16;

/// The alignment of a segment's start: device buffers start 256-byte
/// aligned (`vk::memory::MIN_ALIGNMENT`). No offset in the segment gives
/// a variable more, so `Alignment` decorations count up to this: padding
/// for more only made segments larger (4 GB for an `Alignment` of
/// 2^32 - 1, all of it copied and uploaded by the host).
pub const SEGMENT_ALIGN: u32 = 256;

/// Offsets of `vars` from `start`, each aligned as its type and its
/// `Alignment` decoration ask (up to [`SEGMENT_ALIGN`]), and at least to
/// 16 bytes; and the end. Code reads byte tables as wider vectors
/// (libclc's bits of 2/pi as `uint4` at multiples of 16 bytes), and
/// NVIDIA's 16-byte loads ignore the low bits of an address that is not
/// 16-byte aligned.
fn place(
    module: &Module,
    g: &Globals,
    vars: &[Word],
    start: u64,
) -> Result<(HashMap<Word, u64>, u64), String> {
    let mut offsets = HashMap::default();
    let mut end = start;
    for &v in vars {
        let (size, align) = pointee_layout(g, v)?;
        let decorated = decoration_literal(module, v, Decoration::Alignment)
            .unwrap_or(1)
            .min(SEGMENT_ALIGN);
        let align = u64::from(align.max(decorated).max(VECTOR_ALIGN));
        let at = end.next_multiple_of(align);
        offsets.insert(v, at);
        end = at + u64::from(size);
    }
    Ok((offsets, end))
}

/// A segment's contents: `vars` at `offsets` with their initialisers
/// (zero where they have none). `target` finds a variable's segment (true
/// for the program's) and offset.
fn fill(
    g: &Globals,
    vars: &[Word],
    offsets: &HashMap<Word, u64>,
    size: u64,
    target: &dyn Fn(Word) -> Option<(bool, u64)>,
) -> Result<ModuleData, String> {
    let mut data = ModuleData {
        bytes: vec![0; size as usize],
        relocations: Vec::new(),
    };
    for &v in vars {
        let Some(init) = g[&v].operands.get(1).and_then(|o| match o {
            Operand::IdRef(x) => Some(*x),
            _ => None,
        }) else {
            continue;
        };
        let ty = pointee(g, v)?;
        write_constant(g, init, ty, offsets[&v], &mut data, target)?;
    }
    Ok(data)
}

/// Integer value of a constant (sign-extended from its width).
fn constant_value(g: &Globals, c: Word) -> Option<i64> {
    let i = g.get(&c)?;
    if i.class.opcode != Op::Constant {
        return None;
    }
    let width = match g.get(&i.result_type?)?.operands.first() {
        Some(Operand::LiteralBit32(w)) => *w,
        _ => return None,
    };
    let raw = literal_bits(i)?;
    let shift = 64 - width.min(64);
    Some(((raw << shift) as i64) >> shift)
}

/// Byte offset of member `m` of a struct under OpenCL C's ABI.
fn member_offset(g: &Globals, st: Word, m: usize) -> Result<u64, String> {
    let t = g.get(&st).ok_or("unknown struct")?;
    let packed = is_packed(st);
    let mut offset = 0u32;
    for (k, op) in t.operands.iter().enumerate() {
        let Operand::IdRef(mt) = op else {
            return Err("bad struct".into());
        };
        let (ms, ma) = layout(g, *mt)?;
        offset = offset.next_multiple_of(if packed { 1 } else { ma });
        if k == m {
            return Ok(u64::from(offset));
        }
        offset += ms;
    }
    Err("struct member out of range".into())
}

/// The type `index` selects inside `ty`, and its byte offset.
fn step(g: &Globals, ty: Word, index: i64) -> Result<(Word, i64), String> {
    let t = g.get(&ty).ok_or("unknown type")?;
    match t.class.opcode {
        Op::TypeStruct => {
            let m = usize::try_from(index).map_err(|_| "negative member index")?;
            let mt = id_at(t, m).ok_or("struct member out of range")?;
            Ok((mt, member_offset(g, ty, m)? as i64))
        }
        Op::TypeArray | Op::TypeRuntimeArray | Op::TypeVector => {
            let et = id_at(t, 0).ok_or("bad composite")?;
            Ok((et, index * i64::from(layout(g, et)?.0)))
        }
        other => Err(format!("cannot index into {other:?}")),
    }
}

/// The variable and byte offset a constant pointer designates (None for
/// a null pointer).
fn constant_pointer(g: &Globals, c: Word) -> Result<Option<(Word, i64)>, String> {
    let i = g.get(&c).ok_or("unknown constant")?;
    match i.class.opcode {
        Op::Variable => Ok(Some((c, 0))),
        Op::ConstantNull | Op::Undef => Ok(None),
        Op::SpecConstantOp => {
            let Some(Operand::LiteralSpecConstantOpInteger(op)) = i.operands.first() else {
                return Err("malformed OpSpecConstantOp".into());
            };
            let ids: Vec<Word> = i.operands[1..]
                .iter()
                .filter_map(|o| match o {
                    Operand::IdRef(x) => Some(*x),
                    _ => None,
                })
                .collect();
            let base = *ids.first().ok_or("malformed OpSpecConstantOp")?;
            match op {
                Op::Bitcast
                | Op::PtrCastToGeneric
                | Op::GenericCastToPtr
                | Op::CopyObject
                | Op::ConvertPtrToU => constant_pointer(g, base),
                Op::AccessChain
                | Op::InBoundsAccessChain
                | Op::PtrAccessChain
                | Op::InBoundsPtrAccessChain => {
                    let Some((var, mut offset)) = constant_pointer(g, base)? else {
                        return Err("address arithmetic on a null pointer constant".into());
                    };
                    let mut ty = pointee(g, base)?;
                    let mut indexes = ids[1..].iter();
                    if matches!(op, Op::PtrAccessChain | Op::InBoundsPtrAccessChain) {
                        let n = indexes.next().ok_or("malformed pointer arithmetic")?;
                        let n =
                            constant_value(g, *n).ok_or("pointer arithmetic by a non-constant")?;
                        offset += n * i64::from(layout(g, ty)?.0);
                    }
                    for idx in indexes {
                        let n = constant_value(g, *idx)
                            .ok_or("pointer arithmetic by a non-constant")?;
                        let (next, by) = step(g, ty, n)?;
                        ty = next;
                        offset += by;
                    }
                    Ok(Some((var, offset)))
                }
                other => Err(format!(
                    "constant pointer expression {other:?} is not supported"
                )),
            }
        }
        other => Err(format!("{other:?} as a pointer constant is not supported")),
    }
}

/// Writes constant `c` of type `ty` at byte `at` of `data`.
fn write_constant(
    g: &Globals,
    c: Word,
    ty: Word,
    at: u64,
    data: &mut ModuleData,
    target: &dyn Fn(Word) -> Option<(bool, u64)>,
) -> Result<(), String> {
    let i = g.get(&c).ok_or("unknown constant")?;
    let t = g.get(&ty).ok_or("unknown type")?;
    // A constant wider than its place (valid SPIR-V may store a 64-bit
    // constant into a 32-bit variable's initialiser) fails the rewrite.
    let put = |data: &mut ModuleData, bytes: &[u8]| -> Result<(), String> {
        usize::try_from(at)
            .ok()
            .and_then(|at| data.bytes.get_mut(at..at.checked_add(bytes.len())?))
            .ok_or("an initialiser larger than its variable")?
            .copy_from_slice(bytes);
        Ok(())
    };
    match i.class.opcode {
        Op::ConstantNull | Op::Undef => Ok(()),
        Op::ConstantTrue | Op::SpecConstantTrue => put(data, &[1]),
        Op::ConstantFalse | Op::SpecConstantFalse => Ok(()),
        Op::Constant | Op::SpecConstant => {
            let width = match t.operands.first() {
                Some(Operand::LiteralBit32(w)) => *w as usize / 8,
                _ => return Err("constant of unknown width".into()),
            };
            let raw = literal_bits(i).ok_or("constant without a value")?;
            put(data, &raw.to_le_bytes()[..width.min(8)])
        }
        Op::ConstantComposite | Op::SpecConstantComposite => {
            for (k, op) in i.operands.iter().enumerate() {
                let Operand::IdRef(part) = op else {
                    return Err("bad composite constant".into());
                };
                let (pt, off) = step(g, ty, k as i64)?;
                write_constant(g, *part, pt, at + off as u64, data, target)?;
            }
            Ok(())
        }
        Op::Variable | Op::SpecConstantOp => {
            if let Some((var, offset)) = constant_pointer(g, c)? {
                let (program, base) = target(var)
                    .ok_or("the address of a variable outside device memory in an initialiser")?;
                if at
                    .checked_add(8)
                    .is_none_or(|end| end > data.bytes.len() as u64)
                {
                    return Err("an initialiser larger than its variable".into());
                }
                data.relocations.push(Relocation {
                    at,
                    target: base.wrapping_add_signed(offset),
                    program,
                });
            }
            Ok(())
        }
        other => Err(format!("{other:?} in an initialiser is not supported")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;
    use rspirv::binary::Assemble;

    const PROGRAM: &str = r#"
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpCapability Int8
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k"
               OpName %table "table"
               OpName %counter "counter"
               OpName %ptr "ptr"
               OpName %s "s"
               OpName %v "v"
               OpDecorate %v Alignment 16
       %uint = OpTypeInt 32 0
      %ulong = OpTypeInt 64 0
      %uchar = OpTypeInt 8 0
     %uint_7 = OpConstant %uint 7
     %uint_1 = OpConstant %uint 1
    %ulong_0 = OpConstant %ulong 0
    %ulong_2 = OpConstant %ulong 2
    %ulong_4 = OpConstant %ulong 4
   %uchar_97 = OpConstant %uchar 97
   %ulong_77 = OpConstant %ulong 77
        %arr = OpTypeArray %uint %ulong_4
    %arr_ptr = OpTypePointer CrossWorkgroup %arr
   %uint_ptr = OpTypePointer CrossWorkgroup %uint
   %pp = OpTypePointer CrossWorkgroup %uint_ptr
          %S = OpTypeStruct %uchar %ulong %uint_ptr
      %S_ptr = OpTypePointer CrossWorkgroup %S
      %float = OpTypeFloat 32
    %v4float = OpTypeVector %float 4
     %v4_ptr = OpTypePointer CrossWorkgroup %v4float
    %float_2 = OpConstant %float 2
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %init = OpConstantComposite %arr %uint_1 %uint_7 %uint_7 %uint_1
      %table = OpVariable %arr_ptr CrossWorkgroup %init
    %counter = OpVariable %uint_ptr CrossWorkgroup
         %at = OpSpecConstantOp %uint_ptr InBoundsPtrAccessChain %table %ulong_0 %ulong_2
        %ptr = OpVariable %pp CrossWorkgroup %at
      %s_ini = OpConstantComposite %S %uchar_97 %ulong_77 %counter
          %s = OpVariable %S_ptr CrossWorkgroup %s_ini
      %v_ini = OpConstantComposite %v4float %float_2 %float_2 %float_2 %float_2
          %v = OpVariable %v4_ptr CrossWorkgroup %v_ini
          %k = OpFunction %void None %fn
          %l = OpLabel
               OpReturn
               OpFunctionEnd
"#;

    #[test]
    fn program_variables_are_laid_out_with_their_initialisers() {
        let ctx = assemble(PROGRAM);
        let l = program_layout(&ctx.module).unwrap();
        let id = |name: &str| {
            ctx.module
                .debug_names
                .iter()
                .find(|n| n.operands.get(1) == Some(&Operand::LiteralString(name.into())))
                .and_then(|n| id_at(n, 0))
        };
        // Every variable 16-byte aligned: table at 0 (16 bytes), counter
        // at 16, ptr at 32, s at 48 (24 bytes), v at 80.
        let at = |name| l.offsets[&id(name).expect("named")];
        assert_eq!(
            [at("table"), at("counter"), at("ptr"), at("s"), at("v")],
            [0, 16, 32, 48, 80]
        );
        assert_eq!(l.data.bytes.len(), 96);
        assert_eq!(
            &l.data.bytes[0..16],
            &[1, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0]
        );
        assert_eq!(l.data.bytes[48], 97);
        assert_eq!(l.data.bytes[56], 77);
        assert_eq!(&l.data.bytes[80..84], &2f32.to_le_bytes());
        // `ptr` holds &table[2]; `s.p` holds &counter.
        let mut relocs = l.data.relocations.clone();
        relocs.sort_by_key(|r| r.at);
        assert_eq!(
            relocs,
            [
                Relocation {
                    at: 32,
                    target: 8,
                    program: false
                },
                Relocation {
                    at: 64,
                    target: 16,
                    program: false
                },
            ]
        );
        let bytes = l.data.resolve(0x1000, 0);
        assert_eq!(&bytes[32..40], &0x1008u64.to_le_bytes());
        let words = ctx.module.assemble();
        assert_eq!(global_variable_bytes(&words), 16 + 4 + 8 + 24 + 16);
        assert_eq!(program_data(&words).unwrap(), l.data);
    }

    /// `Alignment` decorations up to the segment's own alignment place
    /// variables; larger ones (here 2^32 - 1, from a fuzzed module) made a
    /// segment of 4 GB, which the host copied and uploaded.
    #[test]
    fn alignment_counts_up_to_the_segments_own() {
        let text = "OpCapability Addresses\nOpCapability Kernel\nOpCapability Int64\n\
             OpMemoryModel Physical64 OpenCL\nOpEntryPoint Kernel %k \"k\"\n\
             OpDecorate %a Alignment 64\nOpDecorate %b Alignment 4294967295\n\
             OpDecorate %c Alignment 1024\n\
             %uint = OpTypeInt 32 0\n%p = OpTypePointer CrossWorkgroup %uint\n\
             %void = OpTypeVoid\n%fn = OpTypeFunction %void\n\
             %a = OpVariable %p CrossWorkgroup\n%b = OpVariable %p CrossWorkgroup\n\
             %c = OpVariable %p CrossWorkgroup\n\
             %k = OpFunction %void None %fn\n%l = OpLabel\nOpReturn\nOpFunctionEnd\n";
        let ctx = assemble(text);
        let l = program_layout(&ctx.module).unwrap();
        let at = |v: Word| l.offsets[&v];
        let var = |k: usize| {
            ctx.module
                .types_global_values
                .iter()
                .filter(|i| i.class.opcode == Op::Variable)
                .nth(k)
                .and_then(|i| i.result_id)
                .unwrap()
        };
        assert_eq!([at(var(0)), at(var(1)), at(var(2))], [0, 256, 512]);
        assert_eq!(l.data.bytes.len(), 516);
    }
}
