//! Pass 11 (phase 3): Generic pointers and the relocation fallback.
//!
//! Takes the kernel after `module_data`. Guarantees no `Generic` pointer is
//! left, and every private or `__local` object whose address escapes what
//! logical pointers express lives in the scratch buffer, reached through
//! `CrossWorkgroup` pointers; returns the `Scratch` sizes.
//!
//! Vulkan's `Function` and `Workgroup` pointers are logical: they can be
//! indexed, but not cast to another type, offset from an arbitrary
//! element, converted to integers, compared, selected between or stored.
//! OpenCL C does all of these. This pass finds, through SSA (access
//! chains, casts, phis and selects) and through variables that hold
//! pointers (unoptimised code, out-parameters), the objects every pointer
//! can point into; a generic pointer loaded from other memory may point to
//! anything the kernel stored there, or to global memory:
//!
//! * A generic pointer that can only point into one object or one storage
//!   class takes that class (the fast path): the casts to and from
//!   `Generic` disappear, `to_global`/`to_local`/`to_private` and
//!   `get_fence` become constants.
//! * A private or local object whose address escapes in a way logical
//!   pointers cannot express (a cast to another pointee type, a step from
//!   something other than an element of an array, or of arrays of arrays,
//!   reached from the object by array indexes alone, a
//!   run-time index into an inner array or vector, a conversion to an
//!   integer, a store of the pointer, a pointer comparison, a selection
//!   between objects, a generic pointer that can point into several
//!   storage classes) moves into a per-dispatch scratch buffer: private
//!   objects at
//!   `scratch + linear global id * private_bytes`, local ones at
//!   `scratch + private region + linear group id * local_bytes`, each at
//!   its OpenCL C alignment. Pointers into them become `CrossWorkgroup`
//!   pointers, which the addressing pass turns into device addresses like
//!   any other global data; generic pointers that mix classes are device
//!   addresses too, and the class queries compare the address with the
//!   scratch buffer's regions. `__local` pointer arguments are placed at
//!   enqueue, after the kernel's own local data, at offsets given as
//!   specialization constants.
//!
//! The scratch buffer's address and the size of its private region come
//! from the push constants (`interface::SCRATCH`); the host allocates it
//! per command from the sizes returned here.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{BuiltIn, Decoration, MemoryAccess, Op, StorageClass, Word};

use crate::compiler::spirv::common::ctx::Prologue;
use crate::compiler::spirv::common::ctx::{
    Ctx, add_memory_access, id_at, ids_used, insert_at_kernel_start,
};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::input::reflect::layout;
use crate::compiler::spirv::p3_interface::interface::{
    Block, SCRATCH, SCRATCH_BYTES, SCRATCH_PRIVATE_BYTES, header_address, header_word,
};
use crate::compiler::spirv::p3_interface::words;

/// The scratch memory a kernel needs per work-item and per work-group.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Scratch {
    /// Bytes of relocated private data per work-item (a multiple of 16).
    pub private_bytes: u32,
    /// Bytes of relocated local data per work-group (a multiple of 16),
    /// before the relocated `__local` arguments.
    pub local_bytes: u32,
    /// Relocated `__local` pointer arguments, whose sizes are known at
    /// enqueue: the host places them after `local_bytes` and gives each
    /// one's offset, and the whole per-group size, as specialization
    /// constants.
    pub local_args: Vec<LocalArg>,
}

/// A `__local` pointer argument placed in scratch memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LocalArg {
    /// The SpecId of its length in elements (`interface::Slot::Local`).
    pub length_spec_id: u32,
    pub elem_size: u32,
    pub align: u32,
    /// The SpecId of its byte offset in the work-group's local region.
    pub offset_spec_id: u32,
}

/// The SpecId of the per-work-group size of the local region, when
/// `__local` arguments are relocated; their offsets' SpecIds follow.
pub const LOCAL_STRIDE_SPEC_ID: u32 = 0x8000;

/// Where a pointer may point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Origin {
    /// Into a `Function` or `Workgroup` variable.
    Var(Word),
    /// Somewhere in a storage class (buffers, constants, ...).
    Class(StorageClass),
    /// Nowhere: a null or undefined pointer.
    Null,
}

pub(super) const DERIVES: &[Op] = &[
    Op::AccessChain,
    Op::InBoundsAccessChain,
    Op::PtrAccessChain,
    Op::InBoundsPtrAccessChain,
    Op::Bitcast,
    Op::CopyObject,
    Op::PtrCastToGeneric,
    Op::GenericCastToPtr,
    Op::GenericCastToPtrExplicit,
];

/// OpenCL memory semantics `get_fence` reads (shifted right by 8 by the
/// front end: 1 local, 2 global).
const WORKGROUP_MEMORY: u32 = 0x100;
const CROSS_WORKGROUP_MEMORY: u32 = 0x200;

pub(super) struct Analysis {
    pub(super) types: HashMap<Word, Instruction>,
    /// Result type of every value (globals and function code).
    pub(super) value_type: HashMap<Word, Word>,
    /// Defining instruction of every function-code value.
    pub(super) defs: HashMap<Word, Instruction>,
    pub(super) origins: HashMap<Word, Vec<Origin>>,
    /// `Function` and `Workgroup` variables and their storage class.
    pub(super) vars: HashMap<Word, StorageClass>,
    /// Every instruction of the functions.
    pub(super) code: Vec<Instruction>,
    /// Function variables holding pointers, and where those point.
    pub(super) slots: HashMap<Word, Vec<Origin>>,
    /// Where pointers stored in other memory point.
    pub(super) stored: Vec<Origin>,
}

impl Analysis {
    pub(super) fn pointer_parts(&self, ty: Word) -> Option<(StorageClass, Word)> {
        let t = self.types.get(&ty)?;
        match (t.class.opcode, t.operands.first(), t.operands.get(1)) {
            (Op::TypePointer, Some(Operand::StorageClass(sc)), Some(Operand::IdRef(p))) => {
                Some((*sc, *p))
            }
            _ => None,
        }
    }

    pub(super) fn value_pointer(&self, v: Word) -> Option<(StorageClass, Word)> {
        self.pointer_parts(*self.value_type.get(&v)?)
    }

    pub(super) fn origins_of(&self, v: Word) -> &[Origin] {
        self.origins.get(&v).map(Vec::as_slice).unwrap_or(&[])
    }

    fn var_origins(&self, v: Word) -> impl Iterator<Item = Word> + '_ {
        self.origins_of(v).iter().filter_map(|o| match o {
            Origin::Var(x) => Some(*x),
            _ => None,
        })
    }
}

fn union(into: &mut Vec<Origin>, from: &[Origin]) -> bool {
    let mut changed = false;
    for o in from {
        if !into.contains(o) {
            into.push(*o);
            changed = true;
        }
    }
    changed
}

fn is_zero(types: &HashMap<Word, Instruction>, v: Word) -> bool {
    types.get(&v).is_some_and(|c| {
        c.class.opcode == Op::ConstantNull
            || (c.class.opcode == Op::Constant
                && matches!(
                    c.operands.first(),
                    Some(Operand::LiteralBit32(0)) | Some(Operand::LiteralBit64(0))
                ))
    })
}

/// Rewrites generic pointers and relocates what must be; returns the
/// scratch memory the kernel `fid` needs.
pub fn run(ctx: &mut Ctx, fid: Word, block: &Block) -> Result<Scratch, String> {
    let uses_pointers = ctx.module.types_global_values.iter().any(|t| {
        t.class.opcode == Op::TypePointer
            && matches!(
                t.operands.first(),
                Some(Operand::StorageClass(
                    StorageClass::Function | StorageClass::Workgroup | StorageClass::Generic
                ))
            )
    });
    if !uses_pointers {
        return Ok(Scratch::default());
    }
    let mut a = analyse(ctx)?;
    let mut reasons = choose(&a)?;
    // Private objects whose pointers are all known stay private, as words.
    let users = words::users(&a);
    let mut flat: Vec<(Word, HashSet<Word>)> = Vec::new();
    for &v in reasons.keys() {
        match words::eligible(&a, &users, v) {
            Ok(into) => flat.push((v, into)),
            Err(why) => log::debug!(target: "vkcl::compiler", "%{v} cannot stay private: {why}"),
        }
    }
    if !flat.is_empty() {
        flat.sort_unstable_by_key(|f| f.0);
        for (v, _) in &flat {
            log::debug!(target: "vkcl::compiler", "%{v} stays private, as words (Op{:?})", reasons[v]);
        }
        words::flatten(ctx, fid, &a, &flat)?;
        a = analyse(ctx)?;
        reasons = choose(&a)?;
    }
    if log::log_enabled!(target: "vkcl::compiler", log::Level::Debug) {
        for (v, why) in &reasons {
            let name = ctx
                .module
                .debug_names
                .iter()
                .find(|n| n.class.opcode == Op::Name && id_at(n, 0) == Some(*v))
                .and_then(|n| match n.operands.get(1) {
                    Some(Operand::LiteralString(s)) => Some(s.as_str()),
                    _ => None,
                })
                .unwrap_or("");
            log::debug!(target: "vkcl::compiler", "%{v} {name} moves to scratch memory (Op{why:?})");
        }
    }
    let relocated: HashSet<Word> = reasons.keys().copied().collect();
    check_classes(&a, &reasons)?;
    rewrite(ctx, &mut a, &relocated, fid, block)
}

fn analyse(ctx: &Ctx) -> Result<Analysis, String> {
    let types: HashMap<Word, Instruction> = ctx
        .module
        .types_global_values
        .iter()
        .filter_map(|i| Some((i.result_id?, i.clone())))
        .collect();
    let mut a = Analysis {
        types,
        value_type: HashMap::default(),
        defs: HashMap::default(),
        origins: HashMap::default(),
        vars: HashMap::default(),
        code: Vec::new(),
        slots: HashMap::default(),
        stored: Vec::new(),
    };
    for g in &ctx.module.types_global_values {
        let (Some(r), Some(t)) = (g.result_id, g.result_type) else {
            continue;
        };
        a.value_type.insert(r, t);
        let Some((sc, _)) = a.pointer_parts(t) else {
            continue;
        };
        match g.class.opcode {
            Op::Variable if sc == StorageClass::Workgroup => {
                a.vars.insert(r, sc);
                a.origins.insert(r, vec![Origin::Var(r)]);
            }
            Op::Variable => {
                a.origins.insert(r, vec![Origin::Class(sc)]);
            }
            Op::ConstantNull | Op::Undef => {
                a.origins.insert(r, vec![Origin::Null]);
            }
            _ => {}
        }
    }
    for f in &ctx.module.functions {
        for i in f.all_inst_iter() {
            if let Some(r) = i.result_id {
                if let Some(t) = i.result_type {
                    a.value_type.insert(r, t);
                }
                a.defs.insert(r, i.clone());
            }
        }
    }
    // Origins, to a fixed point (phis carry them around loops).
    let code: Vec<Instruction> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter().cloned())
        .collect();
    a.code = code;
    // Function variables that hold a pointer (out-parameters, unoptimised
    // code): what is loaded from them is what was stored.
    for i in &a.code {
        if i.class.opcode == Op::Variable
            && let (Some(r), Some(t)) = (i.result_id, i.result_type)
            && let Some((StorageClass::Function, pointee)) = a.pointer_parts(t)
            && a.pointer_parts(pointee).is_some()
        {
            a.slots.insert(r, Vec::new());
        }
    }
    // A variable whose address goes anywhere but straight into loads and
    // stores (a cast to a generic out-parameter) may be written through
    // that other pointer: what is loaded from it is not known here.
    for i in &a.code {
        let through = matches!(i.class.opcode, Op::Load | Op::Store);
        for (k, o) in i.operands.iter().enumerate() {
            if let Operand::IdRef(v) = o
                && !(through && k == 0)
            {
                a.slots.remove(v);
            }
        }
    }
    loop {
        let mut changed = false;
        for i in &a.code.clone() {
            if i.class.opcode == Op::Store
                && let (Some(p), Some(v)) = (id_at(i, 0), id_at(i, 1))
            {
                let from = a.origins_of(v).to_vec();
                if a.slots.contains_key(&p) {
                    changed |= union(a.slots.get_mut(&p).expect("a slot"), &from);
                } else if a.value_pointer(v).is_some() {
                    // A pointer stored anywhere else: whatever loads a
                    // generic pointer from memory may get it.
                    changed |= union(&mut a.stored, &from);
                }
                continue;
            }
            if matches!(i.class.opcode, Op::CompositeConstruct | Op::CompositeInsert) {
                // Pointers put into aggregates may be stored with them.
                for k in 0..i.operands.len() {
                    if let Some(v) = id_at(i, k)
                        && a.value_pointer(v).is_some()
                    {
                        let from = a.origins_of(v).to_vec();
                        changed |= union(&mut a.stored, &from);
                    }
                }
            }
            let (Some(r), Some(t)) = (i.result_id, i.result_type) else {
                continue;
            };
            let Some((sc, _)) = a.pointer_parts(t) else {
                continue;
            };
            let new: Vec<Origin> = match i.class.opcode {
                Op::Variable if sc == StorageClass::Function => {
                    a.vars.insert(r, sc);
                    vec![Origin::Var(r)]
                }
                op if DERIVES.contains(&op) => {
                    let src = id_at(i, 0).ok_or("malformed pointer instruction")?;
                    if a.value_pointer(src).is_some() {
                        a.origins_of(src).to_vec()
                    } else {
                        vec![Origin::Class(sc)]
                    }
                }
                Op::Phi => {
                    let mut o = Vec::new();
                    for k in (0..i.operands.len()).step_by(2) {
                        let v = id_at(i, k).ok_or("malformed phi")?;
                        union(&mut o, a.origins_of(v));
                    }
                    o
                }
                Op::Load if id_at(i, 0).is_some_and(|p| a.slots.contains_key(&p)) => {
                    a.slots[&id_at(i, 0).expect("a slot")].clone()
                }
                Op::Load | Op::CompositeExtract
                    if matches!(
                        sc,
                        StorageClass::Generic | StorageClass::Function | StorageClass::Workgroup
                    ) =>
                {
                    // A pointer from memory: one stored there by this
                    // kernel (which relocated its object), or a global
                    // one; a device address either way.
                    let mut o: Vec<Origin> = a
                        .stored
                        .iter()
                        .copied()
                        .filter(|x| match x {
                            Origin::Var(v) => {
                                sc == StorageClass::Generic || a.vars.get(v) == Some(&sc)
                            }
                            _ => sc == StorageClass::Generic,
                        })
                        .collect();
                    union(&mut o, &[Origin::Class(StorageClass::CrossWorkgroup)]);
                    o
                }
                Op::Select => {
                    let mut o = Vec::new();
                    for k in [1, 2] {
                        let v = id_at(i, k).ok_or("malformed select")?;
                        union(&mut o, a.origins_of(v));
                    }
                    o
                }
                _ => vec![Origin::Class(sc)],
            };
            let entry = a.origins.entry(r).or_default();
            changed |= union(entry, &new);
        }
        if !changed {
            break;
        }
    }
    Ok(a)
}

/// The variables whose address escapes logical pointers.
fn choose(a: &Analysis) -> Result<HashMap<Word, Op>, String> {
    let mut out = HashMap::default();
    let used: HashSet<Word> = a.code.iter().flat_map(ids_used).collect();
    let escape = |v: Word, out: &mut HashMap<Word, Op>, op: Op| {
        for x in a.var_origins(v) {
            out.entry(x).or_insert(op);
        }
    };
    for i in &a.code {
        // Dead code (left by earlier passes) escapes nothing.
        if i.result_id.is_some_and(|r| !used.contains(&r)) {
            continue;
        }
        let op = i.class.opcode;
        if let Some(r) = i.result_id
            && i.result_type.and_then(|t| a.pointer_parts(t)).is_some()
        {
            let o = a.origins_of(r);
            let places = o.iter().filter(|x| **x != Origin::Null).count();
            let has_var = o.iter().any(|x| matches!(x, Origin::Var(_)));
            // Several places, or a choice between pointers into a private
            // or local object: logical pointers cannot hold that.
            if places > 1 || (has_var && matches!(op, Op::Phi | Op::Select)) {
                escape(r, &mut out, op);
            }
        }
        match op {
            Op::Bitcast => {
                let src = id_at(i, 0).ok_or("malformed bitcast")?;
                let from = a.value_pointer(src).map(|p| p.1);
                let to = i.result_type.and_then(|t| a.pointer_parts(t)).map(|p| p.1);
                if from.is_some() && from != to {
                    escape(src, &mut out, op);
                }
            }
            Op::PtrAccessChain | Op::InBoundsPtrAccessChain => {
                let base = id_at(i, 0).ok_or("malformed access chain")?;
                let step = id_at(i, 1).ok_or("malformed access chain")?;
                if !is_zero(&a.types, step) && !steps_within_array(a, base) {
                    escape(base, &mut out, op);
                }
                if indexes_may_leave_their_composite(a, base, &i.operands[2..]) {
                    escape(base, &mut out, op);
                }
            }
            Op::AccessChain | Op::InBoundsAccessChain => {
                let base = id_at(i, 0).ok_or("malformed access chain")?;
                if indexes_may_leave_their_composite(a, base, &i.operands[1..]) {
                    escape(base, &mut out, op);
                }
            }
            Op::ConvertPtrToU | Op::PtrEqual | Op::PtrNotEqual | Op::PtrDiff => {
                for k in 0..i.operands.len() {
                    if let Some(v) = id_at(i, k) {
                        escape(v, &mut out, op);
                    }
                }
            }
            Op::Store => {
                let v = id_at(i, 1).ok_or("malformed store")?;
                let into_slot = id_at(i, 0).is_some_and(|p| a.slots.contains_key(&p));
                if a.value_pointer(v).is_some() && !into_slot {
                    escape(v, &mut out, op);
                }
            }
            Op::CopyMemorySized => {
                for k in 0..2 {
                    escape(id_at(i, k).ok_or("malformed copy")?, &mut out, op);
                }
            }
            Op::GenericCastToPtrExplicit => {
                escape(id_at(i, 0).ok_or("malformed cast")?, &mut out, op);
            }
            Op::CompositeConstruct | Op::CompositeInsert | Op::ExtInst => {
                for k in 0..i.operands.len() {
                    if let Some(v) = id_at(i, k)
                        && a.value_pointer(v).is_some()
                    {
                        escape(v, &mut out, op);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Whether pointer arithmetic on `base` stays a plain access chain: the
/// base points to an element of a one-dimensional array (or vector)
/// object, which the addressing pass offsets by moving its index. A step
/// from an element of an inner array, vector or struct may leave it, as C
/// allows, which an index cannot express.
fn steps_within_array(a: &Analysis, base: Word) -> bool {
    // Whether `levels` indexes into object `v` each pick an array element
    // (or, for one index, a vector component): a step from the element
    // they reach stays in the object, the addressing pass carrying what
    // leaves an inner array into the enclosing indexes (C's objects are
    // flat), which it can where every array's length is a constant (not a
    // specialization constant).
    let known_length = |array: &Instruction| {
        id_at(array, 1)
            .and_then(|n| a.types.get(&n))
            .is_some_and(|n| n.class.opcode == Op::Constant)
    };
    let arrays_all_the_way = |v: Word, levels: usize| {
        let v = through_casts(a, v);
        if !a.vars.contains_key(&v) {
            return false;
        }
        let Some(mut t) = a.value_pointer(v).map(|(_, t)| t) else {
            return false;
        };
        for level in 0..levels {
            match a.types.get(&t) {
                Some(ti)
                    if ti.class.opcode == Op::TypeArray && (levels == 1 || known_length(ti)) =>
                {
                    match id_at(ti, 0) {
                        Some(e) => t = e,
                        None => return false,
                    }
                }
                Some(ti) if ti.class.opcode == Op::TypeVector && levels == 1 && level == 0 => {}
                _ => return false,
            }
        }
        true
    };
    let mut p = through_casts(a, base);
    loop {
        let Some(d) = a.defs.get(&p) else {
            return false;
        };
        let Some(b) = id_at(d, 0) else {
            return false;
        };
        match d.class.opcode {
            Op::AccessChain | Op::InBoundsAccessChain => {
                return arrays_all_the_way(b, d.operands.len() - 1);
            }
            Op::PtrAccessChain | Op::InBoundsPtrAccessChain => {
                if d.operands.len() == 2 {
                    // A step from an element is an element.
                    p = through_casts(a, b);
                    continue;
                }
                let zero = id_at(d, 1).is_some_and(|s| is_zero(&a.types, s));
                return zero && arrays_all_the_way(b, d.operands.len() - 2);
            }
            _ => return false,
        }
    }
}

/// The pointer `v` is a cast or copy of, through any number of them.
fn through_casts(a: &Analysis, mut v: Word) -> Word {
    while let Some(d) = a.defs.get(&v) {
        match d.class.opcode {
            Op::PtrCastToGeneric | Op::GenericCastToPtr | Op::CopyObject => match id_at(d, 0) {
                Some(b) => v = b,
                None => break,
            },
            _ => break,
        }
    }
    v
}

/// Whether access chain indexes may step out of the composite they index:
/// front ends fold pointer arithmetic into indexes of inner arrays and
/// vectors that go past their end (legal in C, where the object is flat),
/// which logical pointers cannot follow. A run-time index into the object
/// itself is safe, and so is one into an inner array where every level
/// above it is an array of known length too: the addressing pass carries
/// what leaves an inner array into the enclosing index.
fn indexes_may_leave_their_composite(a: &Analysis, base: Word, indexes: &[Operand]) -> bool {
    let constant = |o: &Operand| match o {
        Operand::IdRef(x) => a
            .types
            .get(x)
            .is_some_and(|c| matches!(c.class.opcode, Op::Constant | Op::ConstantNull)),
        _ => true,
    };
    let root = through_casts(a, base);
    if !a.vars.contains_key(&root) {
        return indexes.iter().any(|o| !constant(o));
    }
    // The type each index selects in, while every level so far is an
    // array of known length.
    let mut arrays = a.value_pointer(root).map(|(_, t)| t);
    for (k, o) in indexes.iter().enumerate() {
        let level = arrays.and_then(|t| a.types.get(&t)).filter(|ti| {
            ti.class.opcode == Op::TypeArray
                && id_at(ti, 1).is_some_and(|n| {
                    a.types
                        .get(&n)
                        .is_some_and(|c| c.class.opcode == Op::Constant)
                })
        });
        if k > 0 && !constant(o) && level.is_none() {
            return true;
        }
        arrays = level.and_then(|ti| id_at(ti, 0));
    }
    false
}

/// The storage class a pointer value has after the rewrite.
fn final_class(
    a: &Analysis,
    relocated: &HashSet<Word>,
    v: Word,
    declared: StorageClass,
) -> Result<StorageClass, String> {
    final_class_of(a, relocated, a.origins_of(v), declared)
}

fn final_class_of(
    a: &Analysis,
    relocated: &HashSet<Word>,
    o: &[Origin],
    declared: StorageClass,
) -> Result<StorageClass, String> {
    let places: Vec<Origin> = o.iter().copied().filter(|x| *x != Origin::Null).collect();
    let moved = places
        .iter()
        .any(|x| matches!(x, Origin::Var(v) if relocated.contains(v)));
    if moved || places.contains(&Origin::Class(StorageClass::CrossWorkgroup)) {
        if let Some(Origin::Class(other)) = places
            .iter()
            .find(|x| matches!(x, Origin::Class(c) if *c != StorageClass::CrossWorkgroup))
        {
            return Err(format!(
                "a pointer that may point to {other:?} memory or to global memory is not supported"
            ));
        }
        return Ok(StorageClass::CrossWorkgroup);
    }
    match places.as_slice() {
        [] if declared == StorageClass::Generic => Ok(StorageClass::CrossWorkgroup),
        [] => Ok(declared),
        [Origin::Var(x)] => Ok(a.vars[x]),
        [Origin::Class(StorageClass::Generic)] => {
            Err("generic pointers made from integers are not supported yet".into())
        }
        [Origin::Class(sc)] => Ok(*sc),
        _ => Err("a pointer into several places that could not be relocated".into()),
    }
}

fn check_classes(a: &Analysis, reasons: &HashMap<Word, Op>) -> Result<(), String> {
    let relocated: HashSet<Word> = reasons.keys().copied().collect();
    let relocated = &relocated;
    for i in a.defs.values() {
        if let (Some(r), Some(t)) = (i.result_id, i.result_type)
            && let Some((sc, _)) = a.pointer_parts(t)
        {
            final_class(a, relocated, r, sc)?;
        }
    }
    for (&v, why) in reasons {
        if a.vars.get(&v) == Some(&StorageClass::Workgroup)
            && let Some((_, pointee)) = a.value_pointer(v)
        {
            let refs: HashMap<Word, &Instruction> = a.types.iter().map(|(k, v)| (*k, v)).collect();
            let sized_at_enqueue = a.types.get(&pointee).is_some_and(|t| {
                t.class.opcode == Op::TypeArray
                    && id_at(t, 1)
                        .and_then(|l| a.types.get(&l))
                        .is_some_and(|l| l.class.opcode == Op::SpecConstant)
            });
            if layout(&refs, pointee).is_err() && !sized_at_enqueue {
                return Err(format!(
                    "a __local object of unknown size used with Op{why:?} is not supported yet"
                ));
            }
        }
    }
    Ok(())
}

/// An OpenCL work-item built-in variable (a 3-vector of size_t), which
/// the built-ins pass lowers.
fn opencl_builtin(ctx: &mut Ctx, b: BuiltIn) -> Word {
    let existing = ctx.module.annotations.iter().find_map(|d| {
        (d.class.opcode == Op::Decorate
            && d.operands.get(1..3)
                == Some(&[
                    Operand::Decoration(Decoration::BuiltIn),
                    Operand::BuiltIn(b),
                ]))
        .then(|| id_at(d, 0))
        .flatten()
        .filter(|&v| {
            ctx.global(v).is_some_and(|g| {
                g.class.opcode == Op::Variable
                    && g.operands.first() == Some(&Operand::StorageClass(StorageClass::Input))
            })
        })
    });
    if let Some(v) = existing {
        return v;
    }
    let u64t = ctx.uint(64);
    let v3 = ctx.vector(u64t, 3);
    let ptr = ctx.pointer(StorageClass::Input, v3);
    let id = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(ptr),
        Some(id),
        vec![Operand::StorageClass(StorageClass::Input)],
    ));
    ctx.decorate(id, Decoration::BuiltIn, vec![Operand::BuiltIn(b)]);
    id
}

/// Linear index of a 3-D id within a 3-D size, as u64.
fn linear(ctx: &mut Ctx, p: &mut Prologue, id: Word, size: Word) -> Word {
    let u64t = ctx.uint(64);
    let c = |ctx: &mut Ctx, p: &mut Prologue, v: Word, k: u32| {
        let id = ctx.fresh();
        p.code.push(Instruction::new(
            Op::CompositeExtract,
            Some(u64t),
            Some(id),
            vec![Operand::IdRef(v), Operand::LiteralBit32(k)],
        ));
        id
    };
    let (x, y, z) = (c(ctx, p, id, 0), c(ctx, p, id, 1), c(ctx, p, id, 2));
    let (sx, sy) = (c(ctx, p, size, 0), c(ctx, p, size, 1));
    let zy = p.op(ctx, Op::IMul, u64t, &[z, sy]);
    let yz = p.op(ctx, Op::IAdd, u64t, &[y, zy]);
    let yzx = p.op(ctx, Op::IMul, u64t, &[yz, sx]);
    p.op(ctx, Op::IAdd, u64t, &[x, yzx])
}

/// A u32 header member of the push constants, as u64.
fn rewrite(
    ctx: &mut Ctx,
    a: &mut Analysis,
    relocated: &HashSet<Word>,
    fid: Word,
    block: &Block,
) -> Result<Scratch, String> {
    let refs: HashMap<Word, Instruction> = a.types.clone();
    let refs: HashMap<Word, &Instruction> = refs.iter().map(|(k, v)| (*k, v)).collect();
    // Offsets of the relocated variables, in declaration order.
    let mut order: Vec<Word> = relocated.iter().copied().collect();
    order.sort_unstable();
    let mut offsets: HashMap<Word, u64> = HashMap::default();
    let (mut private_bytes, mut local_bytes) = (0u64, 0u64);
    let (mut private_align, mut local_align) = (16u64, 16u64);
    let mut initialisers: Vec<(Word, Word)> = Vec::new();
    // __local arguments: arrays sized by a specialization constant.
    let mut local_args: HashMap<Word, (LocalArg, Word)> = HashMap::default();
    for &v in &order {
        let (_, pointee) = a.value_pointer(v).ok_or("variable without pointer type")?;
        if layout(&refs, pointee).is_ok() {
            continue;
        }
        let arr = a.types.get(&pointee).ok_or("unknown type")?;
        let (elem, len) = match (arr.class.opcode, id_at(arr, 0), id_at(arr, 1)) {
            (Op::TypeArray, Some(e), Some(l)) => (e, l),
            _ => return Err("a relocated private or __local object of unknown size".into()),
        };
        let length_spec_id = ctx
            .decoration_literal(len, Decoration::SpecId)
            .ok_or("a relocated private or __local object of unknown size")?;
        let (elem_size, align) = layout(&refs, elem)?;
        let offset_spec_id = LOCAL_STRIDE_SPEC_ID + 1 + local_args.len() as u32;
        let u32t = ctx.uint(32);
        let spec = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::SpecConstant,
            Some(u32t),
            Some(spec),
            vec![Operand::LiteralBit32(0)],
        ));
        ctx.decorate(
            spec,
            Decoration::SpecId,
            vec![Operand::LiteralBit32(offset_spec_id)],
        );
        local_args.insert(
            v,
            (
                LocalArg {
                    length_spec_id,
                    elem_size,
                    align,
                    offset_spec_id,
                },
                spec,
            ),
        );
    }
    for &v in &order {
        if local_args.contains_key(&v) {
            continue;
        }
        let (_, pointee) = a.value_pointer(v).ok_or("variable without pointer type")?;
        let (size, align) = layout(&refs, pointee)?;
        let decorated = ctx
            .decoration_literal(v, Decoration::Alignment)
            .unwrap_or(1);
        let align = u64::from(align.max(decorated).max(1));
        let (bytes, max) = if a.vars[&v] == StorageClass::Function {
            (&mut private_bytes, &mut private_align)
        } else {
            (&mut local_bytes, &mut local_align)
        };
        *bytes = bytes.next_multiple_of(align);
        offsets.insert(v, *bytes);
        *bytes += u64::from(size.max(1));
        *max = (*max).max(align);
    }
    let scratch = Scratch {
        private_bytes: u32::try_from(private_bytes.next_multiple_of(private_align))
            .map_err(|_| "too much relocated private data")?,
        local_bytes: u32::try_from(local_bytes.next_multiple_of(local_align))
            .map_err(|_| "too much relocated local data")?,
        local_args: {
            let mut v: Vec<LocalArg> = local_args.values().map(|x| x.0).collect();
            v.sort_by_key(|x| x.offset_spec_id);
            v
        },
    };
    let relocated_local = order.iter().any(|v| a.vars[v] == StorageClass::Workgroup);
    ctx.relocated_local |= relocated_local;

    // What slots held before memory types change.
    let slot_contents: HashMap<Word, (StorageClass, Word)> = a
        .slots
        .keys()
        .filter_map(|&slot| {
            let (_, content) = a.value_pointer(slot)?;
            Some((slot, a.pointer_parts(content)?))
        })
        .collect();
    let in_memory = logical_pointers_in_memory_become_global(ctx, a);

    // New result types: generic pointers take their class, pointers into
    // relocated objects become global ones.
    let mut retyped: HashMap<Word, Word> = HashMap::default();
    let values: Vec<(Word, Word)> = a
        .defs
        .values()
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    for (r, t) in values {
        let Some((sc, pointee)) = a.pointer_parts(t) else {
            continue;
        };
        let class = final_class(a, relocated, r, sc)?;
        if class != sc {
            let pointee = in_memory.get(&pointee).copied().unwrap_or(pointee);
            let nt = ctx.pointer(class, pointee);
            if !a.types.contains_key(&nt)
                && let Some(g) = ctx.global(nt)
            {
                a.types.insert(nt, g.clone());
            }
            retyped.insert(r, nt);
            a.value_type.insert(r, nt);
        }
    }
    // Variables holding pointers hold what they now are.
    for (slot, o) in a.slots.clone() {
        let Some(&(csc, cpointee)) = slot_contents.get(&slot) else {
            continue;
        };
        let class = final_class_of(a, relocated, &o, csc)?;
        let content_changed = a
            .value_pointer(slot)
            .and_then(|(_, c)| a.pointer_parts(c))
            .is_some_and(|(now, _)| now != csc);
        if class == csc && !content_changed {
            continue;
        }
        if relocated.contains(&slot) {
            return Err(
                "a relocated variable holding a relocated pointer is not supported yet".into(),
            );
        }
        let nc = ctx.pointer(class, cpointee);
        let nt = ctx.pointer(StorageClass::Function, nc);
        for t in [nc, nt] {
            if let Some(g) = ctx.global(t) {
                a.types.insert(t, g.clone());
            }
        }
        retyped.insert(slot, nt);
        a.value_type.insert(slot, nt);
    }
    let needs_runtime = a.defs.values().any(|i| {
        matches!(
            i.class.opcode,
            Op::GenericCastToPtrExplicit | Op::GenericPtrMemSemantics
        ) && id_at(i, 0).is_some_and(|v| a.var_origins(v).any(|x| relocated.contains(&x)))
    });
    // Generic operations whose operands kept their types (module-scope
    // nulls and undefs) are rewritten all the same.
    let generic_left = a.code.iter().any(|i| {
        matches!(
            i.class.opcode,
            Op::PtrCastToGeneric
                | Op::GenericCastToPtr
                | Op::GenericCastToPtrExplicit
                | Op::GenericPtrMemSemantics
        )
    });
    if relocated.is_empty() && retyped.is_empty() && !generic_left {
        // Generic pointer types may still be named by the types of
        // functions inlined away, their values flattened into words.
        drop_generic_types(ctx)?;
        return Ok(scratch);
    }

    // The kernel's prologue: the scratch regions and each object's address.
    let u64t = ctx.uint(64);
    let mut p = Prologue { code: Vec::new() };
    let mut regions = None;
    if !relocated.is_empty() || needs_runtime {
        let base = header_address(ctx, &mut p, block, SCRATCH);
        let private_size = header_word(ctx, &mut p, block, SCRATCH_PRIVATE_BYTES);
        let total = header_word(ctx, &mut p, block, SCRATCH_BYTES);
        let local_start = p.op(ctx, Op::IAdd, u64t, &[base, private_size]);
        let end = p.op(ctx, Op::IAdd, u64t, &[base, total]);
        regions = Some((base, local_start, end));
        let v3 = ctx.vector(u64t, 3);
        let mut bases: HashMap<StorageClass, Word> = HashMap::default();
        if order.iter().any(|v| a.vars[v] == StorageClass::Function) {
            let vars: Vec<Word> = [
                BuiltIn::GlobalInvocationId,
                BuiltIn::GlobalOffset,
                BuiltIn::GlobalSize,
            ]
            .into_iter()
            .map(|b| opencl_builtin(ctx, b))
            .collect();
            let gid = p.op(ctx, Op::Load, v3, &[vars[0]]);
            let off = p.op(ctx, Op::Load, v3, &[vars[1]]);
            let size = p.op(ctx, Op::Load, v3, &[vars[2]]);
            let id = p.op(ctx, Op::ISub, v3, &[gid, off]);
            let lin = linear(ctx, &mut p, id, size);
            let stride = ctx.const_int(u64t, u64::from(scratch.private_bytes));
            let at = p.op(ctx, Op::IMul, u64t, &[lin, stride]);
            bases.insert(
                StorageClass::Function,
                p.op(ctx, Op::IAdd, u64t, &[base, at]),
            );
        }
        if relocated_local {
            let vars: Vec<Word> = [BuiltIn::WorkgroupId, BuiltIn::NumWorkgroups]
                .into_iter()
                .map(|b| opencl_builtin(ctx, b))
                .collect();
            let group = p.op(ctx, Op::Load, v3, &[vars[0]]);
            let groups = p.op(ctx, Op::Load, v3, &[vars[1]]);
            let lin = linear(ctx, &mut p, group, groups);
            let stride = if local_args.is_empty() {
                ctx.const_int(u64t, u64::from(scratch.local_bytes))
            } else {
                let u32t = ctx.uint(32);
                let spec = ctx.fresh();
                ctx.module.types_global_values.push(Instruction::new(
                    Op::SpecConstant,
                    Some(u32t),
                    Some(spec),
                    vec![Operand::LiteralBit32(scratch.local_bytes)],
                ));
                ctx.decorate(
                    spec,
                    Decoration::SpecId,
                    vec![Operand::LiteralBit32(LOCAL_STRIDE_SPEC_ID)],
                );
                p.op(ctx, Op::UConvert, u64t, &[spec])
            };
            let at = p.op(ctx, Op::IMul, u64t, &[lin, stride]);
            bases.insert(
                StorageClass::Workgroup,
                p.op(ctx, Op::IAdd, u64t, &[local_start, at]),
            );
        }
        for &v in &order {
            let (_, pointee) = a.value_pointer(v).ok_or("variable without pointer type")?;
            let off = match local_args.get(&v) {
                Some(&(_, spec)) => p.op(ctx, Op::UConvert, u64t, &[spec]),
                None => ctx.const_int(u64t, offsets[&v]),
            };
            let addr = p.op(ctx, Op::IAdd, u64t, &[bases[&a.vars[&v]], off]);
            let ptr = ctx.pointer(StorageClass::CrossWorkgroup, pointee);
            p.code.push(Instruction::new(
                Op::ConvertUToPtr,
                Some(ptr),
                Some(v),
                vec![Operand::IdRef(addr)],
            ));
            a.value_type.insert(v, ptr);
            if let Some(d) = a.defs.get(&v)
                && let Some(init) = id_at(d, 1)
            {
                initialisers.push((v, init));
            }
        }
        for (v, init) in initialisers {
            p.code.push(Instruction::new(
                Op::Store,
                None,
                None,
                vec![Operand::IdRef(v), Operand::IdRef(init)],
            ));
        }
    }

    // Null pointers of the classes that change become null device
    // addresses made in the prologue.
    let mut nulls: HashMap<Word, Word> = HashMap::default();
    let null_consts: HashMap<Word, (StorageClass, Word, Word)> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|g| matches!(g.class.opcode, Op::ConstantNull | Op::Undef))
        .filter_map(|g| {
            let t = g.result_type?;
            let (sc, pointee) = a.pointer_parts(t)?;
            matches!(
                sc,
                StorageClass::Generic | StorageClass::Function | StorageClass::Workgroup
            )
            .then_some((g.result_id?, (sc, pointee, t)))
        })
        .collect();
    let zero64 = ctx.const_int(u64t, 0);
    let mut null_of = |ctx: &mut Ctx, p: &mut Prologue, pointee: Word| -> Word {
        if let Some(&n) = nulls.get(&pointee) {
            return n;
        }
        let ptr = ctx.pointer(StorageClass::CrossWorkgroup, pointee);
        let n = p.op(ctx, Op::ConvertUToPtr, ptr, &[zero64]);
        nulls.insert(pointee, n);
        n
    };

    let mut subst: HashMap<Word, Word> = HashMap::default();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        let this = f.def.as_ref().and_then(|d| d.result_id);
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for mut i in std::mem::take(&mut b.instructions) {
                if let Some(r) = i.result_id {
                    if relocated.contains(&r) {
                        if this != Some(fid) {
                            return Err("relocated private data outside the kernel".into());
                        }
                        continue;
                    }
                    if let Some(&t) = retyped.get(&r) {
                        i.result_type = Some(t);
                    }
                }
                // The type a null operand must have here, where known.
                let expected = match i.class.opcode {
                    Op::Phi | Op::Select => i.result_type,
                    Op::Store => id_at(&i, 0)
                        .and_then(|t| a.value_type.get(&t))
                        .and_then(|&t| a.pointer_parts(t))
                        .map(|x| x.1),
                    // A null cast to a pointer that became a device
                    // address: a null device address.
                    Op::PtrCastToGeneric | Op::GenericCastToPtr | Op::CopyObject | Op::Bitcast
                        if i.result_type
                            .and_then(|t| a.pointer_parts(t))
                            .is_some_and(|(sc, _)| sc == StorageClass::CrossWorkgroup) =>
                    {
                        i.result_type
                    }
                    _ => None,
                };
                let as_address = matches!(
                    i.class.opcode,
                    Op::ConvertPtrToU | Op::PtrEqual | Op::PtrNotEqual | Op::PtrDiff
                );
                for o in &mut i.operands {
                    let Operand::IdRef(x) = o else { continue };
                    let Some(&(sc, pointee, ty)) = null_consts.get(x) else {
                        continue;
                    };
                    match expected.and_then(|e| Some((e, a.pointer_parts(e)?))) {
                        Some((e, (StorageClass::CrossWorkgroup, ep))) => {
                            *x = null_of(ctx, &mut p, ep);
                            if i.class.opcode != Op::Store {
                                a.value_type.insert(*x, e);
                            }
                        }
                        Some((e, _)) if e != ty => *x = ctx.const_null(e),
                        Some(_) => {}
                        None if sc == StorageClass::Generic || as_address => {
                            *x = null_of(ctx, &mut p, pointee);
                        }
                        None => {}
                    }
                }
                // A pointer that can only be null (unoptimised code keeps
                // nulls in slots) casts to a null of the new type, and is
                // address 0.
                let null_only = |v: Word| {
                    a.value_pointer(v).is_some()
                        && !a.origins_of(v).is_empty()
                        && a.origins_of(v).iter().all(|o| *o == Origin::Null)
                };
                match i.class.opcode {
                    Op::PtrCastToGeneric | Op::GenericCastToPtr | Op::CopyObject
                        if id_at(&i, 0).is_some_and(null_only)
                            && i.result_type.and_then(|t| a.pointer_parts(t)).is_some() =>
                    {
                        let rt = i.result_type.ok_or("cast without type")?;
                        let (sc, pointee) = a.pointer_parts(rt).ok_or("cast to a non-pointer")?;
                        let null = if sc == StorageClass::CrossWorkgroup {
                            null_of(ctx, &mut p, pointee)
                        } else {
                            ctx.const_null(rt)
                        };
                        subst.insert(i.result_id.ok_or("cast without result")?, null);
                        continue;
                    }
                    Op::ConvertPtrToU if id_at(&i, 0).is_some_and(null_only) => {
                        let rt = i.result_type.ok_or("conversion without type")?;
                        let zero = ctx.const_int(rt, 0);
                        subst.insert(i.result_id.ok_or("conversion without result")?, zero);
                        continue;
                    }
                    _ => {}
                }
                let ty_of = |v: Word| a.value_type.get(&v).copied();
                match i.class.opcode {
                    Op::PtrCastToGeneric | Op::GenericCastToPtr | Op::CopyObject
                        if i.result_type.and_then(|t| a.pointer_parts(t)).is_some() =>
                    {
                        let src = id_at(&i, 0).ok_or("malformed cast")?;
                        if ty_of(src) != i.result_type {
                            if ty_of(src).and_then(|t| a.pointer_parts(t)).map(|x| x.1)
                                != i.result_type.and_then(|t| a.pointer_parts(t)).map(|x| x.1)
                            {
                                return Err("a pointer cast changes type unexpectedly".into());
                            }
                            if i.class.opcode != Op::CopyObject {
                                // Same class and pointee, different type ids.
                                i = Instruction::new(
                                    Op::Bitcast,
                                    i.result_type,
                                    i.result_id,
                                    i.operands.clone(),
                                );
                                if ty_of(src).and_then(|t| a.pointer_parts(t)).map(|x| x.0)
                                    != Some(StorageClass::CrossWorkgroup)
                                {
                                    return Err("a pointer cast between logical pointers of different types".into());
                                }
                                out.push(i);
                                continue;
                            }
                        }
                        subst.insert(i.result_id.ok_or("cast without result")?, src);
                        continue;
                    }
                    Op::Bitcast if i.result_type.and_then(|t| a.pointer_parts(t)).is_some() => {
                        let src = id_at(&i, 0).ok_or("malformed cast")?;
                        if ty_of(src) == i.result_type {
                            subst.insert(i.result_id.ok_or("cast without result")?, src);
                            continue;
                        }
                    }
                    Op::GenericCastToPtrExplicit => {
                        let src = id_at(&i, 0).ok_or("malformed cast")?;
                        let target = match i.operands.get(1) {
                            Some(Operand::StorageClass(sc)) => *sc,
                            _ => return Err("malformed cast".into()),
                        };
                        let r = i.result_id.ok_or("cast without result")?;
                        let rt = i.result_type.ok_or("cast without type")?;
                        let (_, pointee) = a.pointer_parts(rt).ok_or("cast to a non-pointer")?;
                        let null = null_of(ctx, &mut p, pointee);
                        let cond = class_test(ctx, a, relocated, regions, src, target, &mut out)?;
                        let src_v = if ty_of(src) == Some(rt) {
                            src
                        } else {
                            let c = ctx.fresh();
                            out.push(Instruction::new(
                                Op::Bitcast,
                                Some(rt),
                                Some(c),
                                vec![Operand::IdRef(src)],
                            ));
                            c
                        };
                        match cond {
                            Test::Always => {
                                subst.insert(r, src_v);
                            }
                            Test::Never => {
                                subst.insert(r, null);
                            }
                            Test::When(c) => out.push(Instruction::new(
                                Op::Select,
                                Some(rt),
                                Some(r),
                                vec![
                                    Operand::IdRef(c),
                                    Operand::IdRef(src_v),
                                    Operand::IdRef(null),
                                ],
                            )),
                        }
                        continue;
                    }
                    Op::GenericPtrMemSemantics => {
                        let src = id_at(&i, 0).ok_or("malformed query")?;
                        let u32t = i.result_type.ok_or("query without type")?;
                        let mut value = ctx.const_int(u32t, 0);
                        for (class, bits) in [
                            (StorageClass::CrossWorkgroup, CROSS_WORKGROUP_MEMORY),
                            (StorageClass::Workgroup, WORKGROUP_MEMORY),
                        ] {
                            let bits = ctx.const_int(u32t, u64::from(bits));
                            match class_test(ctx, a, relocated, regions, src, class, &mut out)? {
                                Test::Always => value = bits,
                                Test::Never => {}
                                Test::When(c) => {
                                    let s = ctx.fresh();
                                    out.push(Instruction::new(
                                        Op::Select,
                                        Some(u32t),
                                        Some(s),
                                        vec![
                                            Operand::IdRef(c),
                                            Operand::IdRef(bits),
                                            Operand::IdRef(value),
                                        ],
                                    ));
                                    value = s;
                                }
                            }
                        }
                        subst.insert(i.result_id.ok_or("query without result")?, value);
                        continue;
                    }
                    Op::PtrEqual | Op::PtrNotEqual | Op::PtrDiff => {
                        // Pointers as device addresses compare as integers.
                        let (x, y) = (
                            id_at(&i, 0).ok_or("malformed comparison")?,
                            id_at(&i, 1).ok_or("malformed comparison")?,
                        );
                        let class = ty_of(x).and_then(|t| a.pointer_parts(t));
                        if let Some((StorageClass::CrossWorkgroup, pointee)) = class {
                            let (xu, yu) = (ctx.fresh(), ctx.fresh());
                            for (u, v) in [(xu, x), (yu, y)] {
                                out.push(Instruction::new(
                                    Op::ConvertPtrToU,
                                    Some(u64t),
                                    Some(u),
                                    vec![Operand::IdRef(v)],
                                ));
                            }
                            let (op, ty) = match i.class.opcode {
                                Op::PtrEqual => (Op::IEqual, i.result_type),
                                Op::PtrNotEqual => (Op::INotEqual, i.result_type),
                                _ => (Op::ISub, Some(u64t)),
                            };
                            if i.class.opcode == Op::PtrDiff {
                                let size = u64::from(layout(&refs, pointee)?.0.max(1));
                                let (d, q) = (ctx.fresh(), ctx.fresh());
                                let size = ctx.const_int(u64t, size);
                                out.push(Instruction::new(
                                    op,
                                    ty,
                                    Some(d),
                                    vec![Operand::IdRef(xu), Operand::IdRef(yu)],
                                ));
                                out.push(Instruction::new(
                                    Op::SDiv,
                                    Some(u64t),
                                    Some(q),
                                    vec![Operand::IdRef(d), Operand::IdRef(size)],
                                ));
                                let rt = i.result_type.ok_or("comparison without type")?;
                                let conv = if rt == u64t {
                                    Op::CopyObject
                                } else {
                                    Op::SConvert
                                };
                                out.push(Instruction::new(
                                    conv,
                                    Some(rt),
                                    i.result_id,
                                    vec![Operand::IdRef(q)],
                                ));
                            } else {
                                out.push(Instruction::new(
                                    op,
                                    ty,
                                    i.result_id,
                                    vec![Operand::IdRef(xu), Operand::IdRef(yu)],
                                ));
                            }
                            continue;
                        }
                    }
                    Op::Load | Op::Store if relocated_local => {
                        // Local data in device memory: accesses other
                        // work-items of the group may see, ordered by
                        // barriers, so the compiler must not cache them.
                        let ptr = id_at(&i, 0).ok_or("malformed access")?;
                        let to_local = a.var_origins(ptr).any(|v| {
                            relocated.contains(&v) && a.vars[&v] == StorageClass::Workgroup
                        });
                        if to_local {
                            add_memory_access(&mut i, MemoryAccess::VOLATILE);
                        }
                    }
                    _ => {}
                }
                out.push(i);
            }
            b.instructions = out;
        }
    }
    // Substitutions may chain (a cast of a cast).
    let resolve = |mut v: Word| {
        while let Some(&n) = subst.get(&v) {
            v = n;
        }
        v
    };
    for f in &mut functions {
        for i in f.all_inst_iter_mut() {
            for o in &mut i.operands {
                if let Operand::IdRef(x) = o {
                    *x = resolve(*x);
                }
            }
        }
        for i in p.code.iter_mut() {
            for o in &mut i.operands {
                if let Operand::IdRef(x) = o {
                    *x = resolve(*x);
                }
            }
        }
    }
    insert_at_kernel_start(&mut functions, fid, p.code)?;
    ctx.module.functions = functions;

    // Relocated local variables leave the module scope.
    ctx.forget_globals(relocated);
    generic_types_in_memory_become_global(ctx);
    drop_generic_types(ctx)?;
    Ok(scratch)
}

/// Whether a pointer points into a storage class: known at build time,
/// or a comparison with the scratch buffer's regions.
enum Test {
    Always,
    Never,
    When(Word),
}

fn class_test(
    ctx: &mut Ctx,
    a: &Analysis,
    relocated: &HashSet<Word>,
    regions: Option<(Word, Word, Word)>,
    v: Word,
    class: StorageClass,
    out: &mut Vec<Instruction>,
) -> Result<Test, String> {
    let classes: Vec<StorageClass> = a
        .origins_of(v)
        .iter()
        .filter_map(|o| match o {
            Origin::Var(x) => Some(a.vars[x]),
            Origin::Class(c) => Some(*c),
            Origin::Null => None,
        })
        .collect();
    let runtime = a.var_origins(v).any(|x| relocated.contains(&x));
    if !runtime {
        return Ok(
            if classes.iter().all(|c| *c == class) && !classes.is_empty() {
                Test::Always
            } else {
                Test::Never
            },
        );
    }
    if !classes.contains(&class) {
        return Ok(Test::Never);
    }
    let (base, local_start, end) = regions.ok_or("scratch regions missing")?;
    let u64t = ctx.uint(64);
    let bool_t = ctx.ty(Op::TypeBool, vec![]);
    let mut p = Prologue {
        code: std::mem::take(out),
    };
    let addr = p.op(ctx, Op::ConvertPtrToU, u64t, &[v]);
    let within = |ctx: &mut Ctx, p: &mut Prologue, lo, hi| {
        let ge = p.op(ctx, Op::UGreaterThanEqual, bool_t, &[addr, lo]);
        let lt = p.op(ctx, Op::ULessThan, bool_t, &[addr, hi]);
        p.op(ctx, Op::LogicalAnd, bool_t, &[ge, lt])
    };
    let c = match class {
        StorageClass::Function => within(ctx, &mut p, base, local_start),
        StorageClass::Workgroup => within(ctx, &mut p, local_start, end),
        _ => {
            let inside = within(ctx, &mut p, base, end);
            // Null is in no class.
            let zero = ctx.const_int(u64t, 0);
            let nonnull = p.op(ctx, Op::INotEqual, bool_t, &[addr, zero]);
            let outside = p.op(ctx, Op::LogicalNot, bool_t, &[inside]);
            p.op(ctx, Op::LogicalAnd, bool_t, &[outside, nonnull])
        }
    };
    *out = p.code;
    Ok(Test::When(c))
}

/// Private and local pointers held in memory other than pointer slots (a
/// struct member, an array element, a `__local` or `__global` variable)
/// are device addresses: storing one relocated its object, and loading
/// one gives a global pointer. Their types become global pointer types
/// wherever a type names them as a member, an element or a pointee;
/// slots are typed again from what they hold. Returns the replaced types.
fn logical_pointers_in_memory_become_global(
    ctx: &mut Ctx,
    a: &mut Analysis,
) -> HashMap<Word, Word> {
    let logical = |a: &Analysis, t: Word| {
        a.pointer_parts(t)
            .is_some_and(|(sc, _)| matches!(sc, StorageClass::Function | StorageClass::Workgroup))
    };
    let slot_types: HashSet<Word> = a
        .slots
        .keys()
        .filter_map(|s| a.value_type.get(s).copied())
        .collect();
    let mut held: HashSet<Word> = HashSet::default();
    for t in a.types.values() {
        match t.class.opcode {
            Op::TypeStruct | Op::TypeArray | Op::TypeRuntimeArray => {
                let members = if t.class.opcode == Op::TypeStruct {
                    t.operands.len()
                } else {
                    1
                };
                for k in 0..members {
                    if let Some(m) = id_at(t, k)
                        && logical(a, m)
                    {
                        held.insert(m);
                    }
                }
            }
            _ => {}
        }
    }
    // Pointees of the pointers values have, other than slot variables.
    for (v, ty) in &a.value_type {
        if a.slots.contains_key(v) && slot_types.contains(ty) {
            continue;
        }
        if let Some((_, pointee)) = a.pointer_parts(*ty)
            && logical(a, pointee)
        {
            held.insert(pointee);
        }
    }
    if held.is_empty() {
        return HashMap::default();
    }
    let mut held: Vec<Word> = held.into_iter().collect();
    held.sort_unstable();
    let map: HashMap<Word, Word> = held
        .iter()
        .filter_map(|&p| {
            let (_, pointee) = a.pointer_parts(p)?;
            Some((p, ctx.pointer(StorageClass::CrossWorkgroup, pointee)))
        })
        .collect();
    for t in &mut ctx.module.types_global_values {
        if !matches!(
            t.class.opcode,
            Op::TypeStruct | Op::TypeArray | Op::TypeRuntimeArray | Op::TypePointer
        ) {
            continue;
        }
        for o in &mut t.operands {
            if let Operand::IdRef(x) = o
                && let Some(&g) = map.get(x)
            {
                *x = g;
            }
        }
    }
    // Constant aggregates (a variable's initialiser) hold null or
    // undefined pointers of the replaced types: those of the new ones.
    let nulls: HashMap<Word, Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|c| matches!(c.class.opcode, Op::ConstantNull | Op::Undef))
        .filter_map(|c| Some((c.result_id?, c.class.opcode, *map.get(&c.result_type?)?)))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(c, op, g)| {
            if op == Op::ConstantNull {
                return (c, ctx.const_null(g));
            }
            let u = ctx.fresh();
            ctx.module.types_global_values.push(Instruction::new(
                Op::Undef,
                Some(g),
                Some(u),
                vec![],
            ));
            (c, u)
        })
        .collect();
    for c in &mut ctx.module.types_global_values {
        if matches!(
            c.class.opcode,
            Op::ConstantComposite | Op::SpecConstantComposite
        ) {
            for o in &mut c.operands {
                if let Operand::IdRef(x) = o
                    && let Some(&n) = nulls.get(x)
                {
                    *x = n;
                }
            }
        }
    }
    ctx.sort_globals();
    for t in &ctx.module.types_global_values {
        if let Some(r) = t.result_id
            && a.types.contains_key(&r)
        {
            a.types.insert(r, t.clone());
        }
    }
    for &g in map.values() {
        if let Some(t) = ctx.global(g) {
            a.types.insert(g, t.clone());
        }
    }
    map
}

/// Generic pointers held in memory (arrays and structs of pointers,
/// pointer variables) are device addresses: every object they can reach
/// was relocated. Their types become global pointer types.
fn generic_types_in_memory_become_global(ctx: &mut Ctx) {
    loop {
        let used: HashSet<Word> = ctx
            .module
            .types_global_values
            .iter()
            .flat_map(|i| ids_used(i).collect::<Vec<_>>())
            .chain(
                ctx.module
                    .functions
                    .iter()
                    .flat_map(|f| f.all_inst_iter())
                    .flat_map(|i| ids_used(i).collect::<Vec<_>>()),
            )
            .collect();
        let Some((generic, pointee)) = ctx.module.types_global_values.iter().find_map(|t| {
            (t.class.opcode == Op::TypePointer
                && t.operands.first() == Some(&Operand::StorageClass(StorageClass::Generic))
                && t.result_id.is_some_and(|r| used.contains(&r)))
            .then(|| Some((t.result_id?, id_at(t, 1)?)))
            .flatten()
        }) else {
            return;
        };
        let global = ctx.pointer(StorageClass::CrossWorkgroup, pointee);
        let swap = |i: &mut Instruction| {
            if i.result_type == Some(generic) {
                i.result_type = Some(global);
            }
            for o in &mut i.operands {
                if *o == Operand::IdRef(generic) {
                    *o = Operand::IdRef(global);
                }
            }
        };
        for t in &mut ctx.module.types_global_values {
            if t.result_id != Some(generic) {
                swap(t);
            }
        }
        for f in &mut ctx.module.functions {
            if let Some(d) = f.def.as_mut() {
                swap(d);
            }
            for i in f.all_inst_iter_mut() {
                swap(i);
            }
        }
        ctx.module
            .types_global_values
            .retain(|t| t.result_id != Some(generic));
        ctx.sort_globals();
    }
}

/// Removes generic pointer types nothing uses any more (and function
/// types that named them); generic pointers still in use are an error.
fn drop_generic_types(ctx: &mut Ctx) -> Result<(), String> {
    loop {
        let used: HashSet<Word> = ctx
            .module
            .types_global_values
            .iter()
            .flat_map(|i| ids_used(i).collect::<Vec<_>>())
            .chain(
                ctx.module
                    .functions
                    .iter()
                    .flat_map(|f| f.all_inst_iter())
                    .flat_map(|i| ids_used(i).collect::<Vec<_>>()),
            )
            .collect();
        let before = ctx.module.types_global_values.len();
        let generic: HashSet<Word> = ctx
            .module
            .types_global_values
            .iter()
            .filter(|t| {
                t.class.opcode == Op::TypePointer
                    && t.operands.first() == Some(&Operand::StorageClass(StorageClass::Generic))
            })
            .filter_map(|t| t.result_id)
            .collect();
        ctx.module.types_global_values.retain(|t| {
            let r = t.result_id.unwrap_or(0);
            if used.contains(&r) {
                return true;
            }
            let names_generic = ids_used(t).any(|x| generic.contains(&x));
            let is_type = matches!(
                t.class.opcode,
                Op::TypeFunction | Op::TypePointer | Op::TypeArray | Op::TypeStruct
            );
            !(generic.contains(&r) || (is_type && names_generic))
        });
        if ctx.module.types_global_values.len() == before {
            break;
        }
    }
    if ctx.module.types_global_values.iter().any(|t| {
        t.class.opcode == Op::TypePointer
            && t.operands.first() == Some(&Operand::StorageClass(StorageClass::Generic))
    }) {
        return Err("generic pointers stored in memory are not supported yet".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    const HEADER: &str = "
        OpCapability Addresses
        OpCapability Kernel
        OpCapability Int64
        OpCapability GenericPointer
        OpMemoryModel Physical64 OpenCL
        OpEntryPoint Kernel %k \"k\"
        %void = OpTypeVoid
        %bool = OpTypeBool
        %uint = OpTypeInt 32 0
        %ulong = OpTypeInt 64 0
        %float = OpTypeFloat 32
        %v4float = OpTypeVector %float 4
        %ulong_0 = OpConstant %ulong 0
        %ulong_2 = OpConstant %ulong 2
        %uint_20 = OpConstant %uint 20
        %float_1 = OpConstant %float 1
        %p_f = OpTypePointer Function %float
        %p_v4 = OpTypePointer Function %v4float
        %w_f = OpTypePointer Workgroup %float
        %g_f = OpTypePointer CrossWorkgroup %float
        %gen_f = OpTypePointer Generic %float
        %header = OpTypeArray %uint %uint_20
        %pc_header = OpTypePointer PushConstant %header
        %push = OpVariable %pc_header PushConstant
        %lx = OpVariable %w_f Workgroup
        %fn = OpTypeFunction %void %g_f %bool
    ";

    fn block(ctx: &Ctx) -> Block {
        let var = ctx
            .module
            .types_global_values
            .iter()
            .find(|i| {
                i.class.opcode == Op::Variable
                    && i.operands.first()
                        == Some(&Operand::StorageClass(StorageClass::PushConstant))
            })
            .and_then(|i| i.result_id)
            .expect("the test module has a push-constant variable");
        Block {
            var,
            global_offset: 0,
            global_size: 3,
            work_dim: 6,
            group_offset: 7,
            enqueued_local_size: 10,
            images: Vec::new(),
        }
    }

    fn rewrite_kernel(text: &str) -> (Ctx, Result<Scratch, String>) {
        let mut ctx = assemble(&format!("{HEADER}{text}"));
        let fid = ctx.module.functions[0]
            .def
            .as_ref()
            .and_then(|d| d.result_id)
            .expect("a kernel");
        let b = block(&ctx);
        let r = run(&mut ctx, fid, &b);
        (ctx, r)
    }

    fn ops(ctx: &Ctx) -> Vec<Op> {
        ctx.module
            .functions
            .iter()
            .flat_map(|f| f.all_inst_iter())
            .map(|i| i.class.opcode)
            .collect()
    }

    fn generic_types_left(ctx: &Ctx) -> bool {
        ctx.module.types_global_values.iter().any(|t| {
            t.class.opcode == Op::TypePointer
                && t.operands.first() == Some(&Operand::StorageClass(StorageClass::Generic))
        })
    }

    #[test]
    fn generic_pointer_to_one_private_object_takes_its_class() {
        let (ctx, r) = rewrite_kernel(
            "%k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_f
            %c = OpFunctionParameter %bool
            %b = OpLabel
            %x = OpVariable %p_f Function
            %p = OpPtrCastToGeneric %gen_f %x
            OpStore %p %float_1
            %v = OpLoad %float %p
            OpStore %g %v
            OpReturn
            OpFunctionEnd",
        );
        assert_eq!(r.unwrap(), Scratch::default());
        let ops = ops(&ctx);
        assert!(!ops.contains(&Op::PtrCastToGeneric));
        assert!(!ops.contains(&Op::ConvertUToPtr), "nothing is relocated");
        assert!(ops.contains(&Op::Variable));
        assert!(!generic_types_left(&ctx));
    }

    #[test]
    fn cast_private_vector_stays_private_as_words() {
        let (ctx, r) = rewrite_kernel(
            "%k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_f
            %c = OpFunctionParameter %bool
            %b = OpLabel
            %x = OpVariable %p_v4 Function
            %f = OpBitcast %p_f %x
            %e = OpInBoundsPtrAccessChain %p_f %f %ulong_2
            %v = OpLoad %float %e
            OpStore %g %v
            OpReturn
            OpFunctionEnd",
        );
        assert_eq!(r.unwrap(), Scratch::default());
        let ops = ops(&ctx);
        assert!(!ops.contains(&Op::ConvertUToPtr), "nothing is relocated");
        assert!(!ops.contains(&Op::InBoundsPtrAccessChain));
        // The float is word 2 of the vector's four, read as its bits.
        assert!(ops.contains(&Op::Variable));
        assert!(ops.contains(&Op::AccessChain));
        assert!(ops.contains(&Op::Bitcast));
    }

    #[test]
    fn private_vector_whose_address_is_a_number_is_relocated() {
        let (ctx, r) = rewrite_kernel(
            "%k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_f
            %c = OpFunctionParameter %bool
            %b = OpLabel
            %x = OpVariable %p_v4 Function
            %f = OpBitcast %p_f %x
            %e = OpInBoundsPtrAccessChain %p_f %f %ulong_2
            %i = OpConvertPtrToU %ulong %e
            %v = OpConvertUToF %float %i
            OpStore %g %v
            OpReturn
            OpFunctionEnd",
        );
        let scratch = r.unwrap();
        assert_eq!(scratch.private_bytes, 16);
        assert_eq!(scratch.local_bytes, 0);
        let ops = ops(&ctx);
        assert!(!ops.contains(&Op::Variable));
        assert!(ops.contains(&Op::ConvertUToPtr));
        // The work-item's slot comes from its global id.
        assert!(ctx.module.annotations.iter().any(|a| {
            a.operands.get(2) == Some(&Operand::BuiltIn(BuiltIn::GlobalInvocationId))
        }));
    }

    /// A private 2-D array whose inner length is `length`, walked by a
    /// step from an element of a row, which may leave the row.
    fn step_in_rows(length: &str) -> Result<Scratch, String> {
        rewrite_kernel(&format!(
            "%uint_2 = OpConstant %uint 2
            %uint_4 = OpConstant %uint 4
            %ulong_1 = OpConstant %ulong 1
            %n = {length}
            %row = OpTypeArray %float %n
            %rows = OpTypeArray %row %uint_4
            %p_rows = OpTypePointer Function %rows
            %k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_f
            %c = OpFunctionParameter %bool
            %b = OpLabel
            %x = OpVariable %p_rows Function
            %e = OpInBoundsAccessChain %p_f %x %ulong_1 %ulong_2
            %s = OpInBoundsPtrAccessChain %p_f %e %ulong_2
            OpStore %s %float_1
            %v = OpLoad %float %e
            OpStore %g %v
            OpReturn
            OpFunctionEnd"
        ))
        .1
    }

    #[test]
    fn rows_stay_in_place_only_where_their_length_is_known() {
        assert_eq!(
            step_in_rows("OpConstant %uint 4").unwrap(),
            Scratch::default()
        );
        // The addressing pass cannot carry a step past a row whose length
        // is computed from specialization constants: such rows would have
        // to move, which needs their size (it was kept in place, the step
        // folded into the row's index).
        let moved = step_in_rows("OpSpecConstantOp %uint IAdd %uint_2 %uint_2");
        assert!(moved.unwrap_err().contains("unknown size"));
    }

    #[test]
    fn generic_pointer_into_two_classes_is_a_device_address() {
        let (ctx, r) = rewrite_kernel(
            "%k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_f
            %c = OpFunctionParameter %bool
            %b = OpLabel
            %x = OpVariable %p_f Function
            %pg = OpPtrCastToGeneric %gen_f %g
            %px = OpPtrCastToGeneric %gen_f %x
            %p = OpSelect %gen_f %c %px %pg
            OpStore %p %float_1
            %l = OpGenericCastToPtrExplicit %w_f %p Workgroup
            %q = OpGenericCastToPtrExplicit %p_f %p Function
            %v = OpLoad %float %q
            OpStore %g %v
            OpReturn
            OpFunctionEnd",
        );
        assert_eq!(r.unwrap().private_bytes, 16);
        let ops = ops(&ctx);
        assert!(!ops.contains(&Op::GenericCastToPtrExplicit));
        // to_private compares with the private region; to_local cannot
        // succeed (no local object can be reached).
        assert!(ops.contains(&Op::ULessThan));
        assert!(!generic_types_left(&ctx));
        let select = ctx
            .module
            .functions
            .iter()
            .flat_map(|f| f.all_inst_iter())
            .find(|i| i.class.opcode == Op::Select)
            .unwrap();
        let ty = ctx.pointer_parts(select.result_type.unwrap()).unwrap();
        assert_eq!(ty.0, StorageClass::CrossWorkgroup);
    }

    #[test]
    fn get_fence_of_a_local_pointer_is_a_constant() {
        let (ctx, r) = rewrite_kernel(
            "%k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_f
            %c = OpFunctionParameter %bool
            %b = OpLabel
            %p = OpPtrCastToGeneric %gen_f %lx
            %s = OpGenericPtrMemSemantics %uint %p
            %f = OpConvertUToF %float %s
            OpStore %g %f
            OpReturn
            OpFunctionEnd",
        );
        assert_eq!(r.unwrap(), Scratch::default());
        let convert = ctx
            .module
            .functions
            .iter()
            .flat_map(|f| f.all_inst_iter())
            .find(|i| i.class.opcode == Op::ConvertUToF)
            .unwrap();
        let c = ctx.global(id_at(convert, 0).unwrap()).unwrap();
        assert_eq!(c.operands[0], Operand::LiteralBit32(WORKGROUP_MEMORY));
    }

    #[test]
    fn cast_local_pointer_argument_is_placed_at_enqueue() {
        let mut ctx = assemble(&format!(
            "{HEADER}
            OpDecorate %n SpecId 7
            %n = OpSpecConstant %uint 4
            %arr = OpTypeArray %float %n
            %w_arr = OpTypePointer Workgroup %arr
            %w_v4 = OpTypePointer Workgroup %v4float
            %larg = OpVariable %w_arr Workgroup
            %k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_f
            %c = OpFunctionParameter %bool
            %b = OpLabel
            %e = OpAccessChain %w_f %larg %ulong_0
            %v4 = OpBitcast %w_v4 %e
            %v = OpLoad %v4float %v4
            %x = OpCompositeExtract %float %v 1
            OpStore %g %x
            OpReturn
            OpFunctionEnd"
        ));
        let fid = ctx.module.functions[0]
            .def
            .as_ref()
            .unwrap()
            .result_id
            .unwrap();
        let b = block(&ctx);
        let scratch = run(&mut ctx, fid, &b).unwrap();
        assert_eq!(scratch.local_args.len(), 1);
        assert_eq!(scratch.local_args[0].length_spec_id, 7);
        assert_eq!(scratch.local_args[0].elem_size, 4);
    }
}
