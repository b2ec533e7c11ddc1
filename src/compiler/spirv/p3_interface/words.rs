//! Part of pass 11 (phase 3): private objects that logical pointers cannot
//! follow stay private, as arrays of 32-bit words.
//!
//! Optimised OpenCL C reaches private objects in ways Vulkan's `Function`
//! pointers cannot express: a `uchar *` view of a `uint` array, a step
//! from one member of a struct into the next, a pointer induction variable
//! (a phi of pointers) walking an array. The relocate pass would move such
//! an object into device memory. Where every pointer into one private
//! variable is known (made from it by access chains, casts, phis and
//! selects, and used only to load, store and compare within it), this
//! part keeps it private instead:
//!
//! * the variable becomes an array of 32-bit words (its OpenCL C size,
//!   rounded up);
//! * every pointer into it becomes its byte offset, a 32-bit integer
//!   (phis and selects of pointers become phis and selects of offsets,
//!   pointer comparisons and differences integer ones);
//! * every load and store through such a pointer reads and writes the
//!   words it covers: 8- and 16-bit values by shift and mask within their
//!   word (a store reads, merges and writes the word back: private memory
//!   has no other writer), 64-bit ones as two words, vectors, arrays and
//!   structs member by member.
//!
//! Accesses are taken to be naturally aligned, as OpenCL C requires;
//! objects holding packed structs, pointers or booleans, variables with
//! initialisers, and pointers that leave the object (stored, converted
//! to integers, mixed with other objects) keep the scratch fallback.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Op, StorageClass, Word};

use crate::compiler::spirv::common::ctx::{Ctx, Prologue, id_at, insert_at_kernel_start};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::input::reflect::{is_packed, layout};
use crate::compiler::spirv::p3_interface::relocate::{Analysis, DERIVES, Origin};

/// Objects larger than this stay with the scratch fallback.
const MAX_WORDS: u32 = 16 * 1024;

/// Whether `op` makes a pointer from another one, keeping its object: the
/// relocation pass's derivations, less the explicit cast from generic
/// (which gives null where the class differs).
fn derives(op: Op) -> bool {
    DERIVES.contains(&op) && op != Op::GenericCastToPtrExplicit
}

/// What may use a pointer into a word object converted to an integer:
/// with another such pointer, the offsets give the same answers.
const INTEGER_PAIRS: &[Op] = &[
    Op::IEqual,
    Op::INotEqual,
    Op::ULessThan,
    Op::ULessThanEqual,
    Op::UGreaterThan,
    Op::UGreaterThanEqual,
    Op::SLessThan,
    Op::SLessThanEqual,
    Op::SGreaterThan,
    Op::SGreaterThanEqual,
    Op::ISub,
];

/// Every instruction of the functions that uses each value.
pub(super) fn users(a: &Analysis) -> HashMap<Word, Vec<usize>> {
    let mut out: HashMap<Word, Vec<usize>> = HashMap::default();
    for (k, i) in a.code.iter().enumerate() {
        for o in &i.operands {
            if let Operand::IdRef(v) = o {
                out.entry(*v).or_default().push(k);
            }
        }
    }
    out
}

/// Whether `ty` is data that words can hold: integers and floats of 8 to
/// 64 bits, and vectors, arrays and (unpacked) structs of them.
fn plain(a: &Analysis, ty: Word) -> bool {
    let Some(t) = a.types.get(&ty) else {
        return false;
    };
    match t.class.opcode {
        Op::TypeInt | Op::TypeFloat => {
            matches!(
                t.operands.first(),
                Some(Operand::LiteralBit32(8 | 16 | 32 | 64))
            )
        }
        Op::TypeVector | Op::TypeArray => id_at(t, 0).is_some_and(|e| plain(a, e)),
        Op::TypeStruct => {
            !is_packed(ty)
                && (0..t.operands.len()).all(|k| id_at(t, k).is_some_and(|m| plain(a, m)))
        }
        _ => false,
    }
}

/// The values pointing into `var` (it included), when it can become
/// words: every one of them points into it alone and is only used in ways
/// an offset can express. Otherwise, why not.
pub(super) fn eligible(
    a: &Analysis,
    users: &HashMap<Word, Vec<usize>>,
    var: Word,
) -> Result<HashSet<Word>, String> {
    let def = a.defs.get(&var).ok_or("not a variable of the kernel")?;
    if def.class.opcode != Op::Variable || def.operands.len() > 1 {
        return Err("it has an initialiser".into());
    }
    let (sc, pointee) = a.value_pointer(var).ok_or("no pointer type")?;
    if sc != StorageClass::Function {
        return Err("it is __local".into());
    }
    if !plain(a, pointee) {
        return Err("it holds pointers, booleans or packed structs".into());
    }
    let refs: HashMap<Word, &Instruction> = a.types.iter().map(|(k, v)| (*k, v)).collect();
    let (size, _) = layout(&refs, pointee)?;
    if size.div_ceil(4) > MAX_WORDS {
        return Err(format!("it is larger than {} KiB", MAX_WORDS / 256));
    }
    let into: HashSet<Word> = a
        .origins
        .iter()
        .filter(|(_, o)| o.contains(&Origin::Var(var)))
        .map(|(v, _)| *v)
        .collect();
    let null = |v: Word| a.origins_of(v) == [Origin::Null] && a.types.contains_key(&v);
    for &v in &into {
        if a.origins_of(v)
            .iter()
            .any(|o| !matches!(o, Origin::Null) && *o != Origin::Var(var))
        {
            return Err(format!("%{v} may point elsewhere too"));
        }
        let d = a.defs.get(&v).ok_or("a pointer made outside the kernel")?;
        let op = d.class.opcode;
        let pointer_result = d.result_type.and_then(|t| a.pointer_parts(t)).is_some();
        let ok = match op {
            Op::Variable => v == var,
            _ if derives(op) => pointer_result && id_at(d, 0).is_some_and(|b| into.contains(&b)),
            Op::Phi => (0..d.operands.len())
                .step_by(2)
                .all(|k| id_at(d, k).is_some_and(|x| into.contains(&x) || null(x))),
            Op::Select => [1, 2]
                .iter()
                .all(|&k| id_at(d, k).is_some_and(|x| into.contains(&x) || null(x))),
            _ => false,
        };
        if !ok {
            return Err(format!("a pointer into it made by Op{op:?}"));
        }
        for &u in users.get(&v).map(Vec::as_slice).unwrap_or(&[]) {
            let i = &a.code[u];
            let ok = match i.class.opcode {
                op if derives(op) => i.result_id.is_some_and(|r| into.contains(&r)),
                Op::Phi | Op::Select => i.result_id.is_some_and(|r| into.contains(&r)),
                Op::Load => id_at(i, 0) == Some(v) && i.result_type.is_some_and(|t| plain(a, t)),
                Op::Store => {
                    id_at(i, 0) == Some(v)
                        && id_at(i, 1).is_some_and(|x| {
                            !into.contains(&x) && a.value_type.get(&x).is_some_and(|&t| plain(a, t))
                        })
                }
                Op::PtrEqual | Op::PtrNotEqual | Op::PtrDiff => {
                    (0..2).all(|k| id_at(i, k).is_some_and(|x| into.contains(&x)))
                }
                // As an integer compared with, or subtracted from, another
                // pointer into it: offsets compare and subtract alike.
                Op::ConvertPtrToU => i.result_id.is_some_and(|r| {
                    users
                        .get(&r)
                        .map(Vec::as_slice)
                        .unwrap_or(&[])
                        .iter()
                        .all(|&c| {
                            let c = &a.code[c];
                            INTEGER_PAIRS.contains(&c.class.opcode)
                                && (0..2).all(|k| {
                                    id_at(c, k).and_then(|x| a.defs.get(&x)).is_some_and(|d| {
                                        d.class.opcode == Op::ConvertPtrToU
                                            && id_at(d, 0).is_some_and(|p| into.contains(&p))
                                    })
                                })
                        })
                }),
                _ => false,
            };
            if !ok {
                return Err(format!("a pointer into it used by Op{:?}", i.class.opcode));
            }
        }
    }
    Ok(into)
}

/// A byte offset: known now, or computed by the kernel.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Off {
    Const(u32),
    Id(Word),
}

/// Emits the code of one block, with cached types and constants.
struct Emitter<'a> {
    ctx: &'a mut Ctx,
    types: &'a HashMap<Word, &'a Instruction>,
    /// The type of every value of the functions.
    values: &'a HashMap<Word, Word>,
    out: Prologue,
    u32t: Word,
    consts: HashMap<u32, Word>,
    word_ptr: Word,
    /// The word array being read or written.
    var: Word,
    /// Pointers to words at known places made in this block.
    pointers: HashMap<(Word, u32), Word>,
}

impl Emitter<'_> {
    fn op(&mut self, op: Op, ty: Word, args: &[Word]) -> Word {
        self.out.op(self.ctx, op, ty, args)
    }

    fn konst(&mut self, v: u32) -> Word {
        if let Some(&c) = self.consts.get(&v) {
            return c;
        }
        let c = self.ctx.const_u32(v);
        self.consts.insert(v, c);
        c
    }

    fn id(&mut self, o: Off) -> Word {
        match o {
            Off::Const(c) => self.konst(c),
            Off::Id(x) => x,
        }
    }

    fn add(&mut self, x: Off, y: Off) -> Off {
        match (x, y) {
            (Off::Const(p), Off::Const(q)) => Off::Const(p.wrapping_add(q)),
            (o, Off::Const(0)) | (Off::Const(0), o) => o,
            _ => {
                let (p, q) = (self.id(x), self.id(y));
                Off::Id(self.op(Op::IAdd, self.u32t, &[p, q]))
            }
        }
    }

    fn mul(&mut self, x: Off, c: u32) -> Off {
        match x {
            Off::Const(p) => Off::Const(p.wrapping_mul(c)),
            _ if c == 1 => x,
            _ if c == 0 => Off::Const(0),
            Off::Id(p) => {
                let k = self.konst(c);
                Off::Id(self.op(Op::IMul, self.u32t, &[p, k]))
            }
        }
    }

    fn binary(&mut self, op: Op, x: Off, c: u32) -> Off {
        match x {
            Off::Const(p) => Off::Const(match op {
                Op::ShiftRightLogical => p >> c,
                Op::ShiftLeftLogical => p << c,
                Op::BitwiseAnd => p & c,
                _ => unreachable!("only shifts and masks fold"),
            }),
            Off::Id(p) => {
                let k = self.konst(c);
                Off::Id(self.op(op, self.u32t, &[p, k]))
            }
        }
    }

    /// An index operand as a 32-bit offset (indexes are signed; offsets
    /// wrap modulo 2^32 like the object's addresses would).
    fn index(&mut self, v: Word) -> Off {
        if let Some(c) = self.types.get(&v) {
            match (c.class.opcode, c.operands.first()) {
                (Op::Constant, Some(Operand::LiteralBit32(x))) => {
                    // Narrow constants are signed like any index.
                    let w = c.result_type.and_then(|t| self.int_width(t)).unwrap_or(32);
                    let x = if w < 32 {
                        ((*x << (32 - w)) as i32 >> (32 - w)) as u32
                    } else {
                        *x
                    };
                    return Off::Const(x);
                }
                (Op::Constant, Some(Operand::LiteralBit64(x))) => return Off::Const(*x as u32),
                (Op::ConstantNull, _) => return Off::Const(0),
                _ => {}
            }
        }
        let ty = self.value_type(v);
        match self.int_width(ty) {
            Some(32) => Off::Id(v),
            Some(64) => Off::Id(self.op(Op::UConvert, self.u32t, &[v])),
            _ => Off::Id(self.op(Op::SConvert, self.u32t, &[v])),
        }
    }

    fn value_type(&self, v: Word) -> Word {
        self.values.get(&v).copied().unwrap_or(0)
    }

    fn int_width(&self, ty: Word) -> Option<u32> {
        let t = self.types.get(&ty)?;
        match (t.class.opcode, t.operands.first()) {
            (Op::TypeInt | Op::TypeFloat, Some(Operand::LiteralBit32(w))) => Some(*w),
            _ => None,
        }
    }

    fn layout(&self, ty: Word) -> Result<(u32, u32), String> {
        layout(self.types, ty)
    }

    /// The byte offset of member `k` of struct `ty`.
    fn member_offset(&self, ty: Word, k: u32) -> Result<u32, String> {
        let t = self.types.get(&ty).ok_or("unknown struct")?;
        let mut at = 0u32;
        for (n, m) in t.operands.iter().enumerate() {
            let Operand::IdRef(m) = m else {
                return Err("malformed struct".into());
            };
            let (ms, ma) = self.layout(*m)?;
            at = at.next_multiple_of(ma.max(1));
            if n as u32 == k {
                return Ok(at);
            }
            at += ms;
        }
        Err("struct member out of range".into())
    }

    /// Steps `indexes` into type `ty` from offset `at`.
    fn chain(&mut self, mut at: Off, mut ty: Word, indexes: &[Word]) -> Result<Off, String> {
        for &x in indexes {
            let t = *self.types.get(&ty).ok_or("unknown type")?;
            match t.class.opcode {
                Op::TypeArray | Op::TypeVector => {
                    let e = id_at(t, 0).ok_or("malformed type")?;
                    let (es, _) = self.layout(e)?;
                    let i = self.index(x);
                    let step = self.mul(i, es);
                    at = self.add(at, step);
                    ty = e;
                }
                Op::TypeStruct => {
                    let Off::Const(k) = self.index(x) else {
                        return Err("a struct member chosen at run time".into());
                    };
                    let m = self.member_offset(ty, k)?;
                    at = self.add(at, Off::Const(m));
                    ty = id_at(t, k as usize).ok_or("struct member out of range")?;
                }
                _ => return Err("an access chain into a scalar".into()),
            }
        }
        Ok(at)
    }

    fn word_at(&mut self, index: Off) -> Word {
        // Within a block, one pointer per word at a known place.
        if let Off::Const(c) = index
            && let Some(&p) = self.pointers.get(&(self.var, c))
        {
            return p;
        }
        let i = self.id(index);
        let (p, var) = (self.word_ptr, self.var);
        let ptr = self.op(Op::AccessChain, p, &[var, i]);
        if let Off::Const(c) = index {
            self.pointers.insert((var, c), ptr);
        }
        ptr
    }

    fn load_word(&mut self, index: Off) -> Word {
        let p = self.word_at(index);
        self.op(Op::Load, self.u32t, &[p])
    }

    fn store_word(&mut self, index: Off, v: Word) {
        let p = self.word_at(index);
        self.out.code.push(Instruction::new(
            Op::Store,
            None,
            None,
            vec![Operand::IdRef(p), Operand::IdRef(v)],
        ));
    }

    fn scalar_type(&mut self, ty: Word) -> Result<(bool, u32), String> {
        let t = self.types.get(&ty).ok_or("unknown type")?;
        let w = self.int_width(ty).ok_or("not a scalar")?;
        Ok((t.class.opcode == Op::TypeFloat, w))
    }

    /// A value of type `ty` read from the words at byte offset `at`.
    fn load(&mut self, at: Off, ty: Word) -> Result<Word, String> {
        let t = *self.types.get(&ty).ok_or("unknown type")?;
        match t.class.opcode {
            Op::TypeInt | Op::TypeFloat => {
                let (float, w) = self.scalar_type(ty)?;
                let index = self.binary(Op::ShiftRightLogical, at, 2);
                let bits = match w {
                    32 => self.load_word(index),
                    64 => {
                        let lo = self.load_word(index);
                        let next = self.add(index, Off::Const(1));
                        let hi = self.load_word(next);
                        let u64t = self.ctx.uint(64);
                        let lo = self.op(Op::UConvert, u64t, &[lo]);
                        let hi = self.op(Op::UConvert, u64t, &[hi]);
                        let k = self.konst(32);
                        let hi = self.op(Op::ShiftLeftLogical, u64t, &[hi, k]);
                        self.op(Op::BitwiseOr, u64t, &[lo, hi])
                    }
                    _ => {
                        let word = self.load_word(index);
                        let byte = self.binary(Op::BitwiseAnd, at, 3);
                        let shift = self.binary(Op::ShiftLeftLogical, byte, 3);
                        let low = if shift == Off::Const(0) {
                            word
                        } else {
                            let s = self.id(shift);
                            self.op(Op::ShiftRightLogical, self.u32t, &[word, s])
                        };
                        let nt = self.ctx.uint(w);
                        self.op(Op::UConvert, nt, &[low])
                    }
                };
                let it = self.ctx.uint(w);
                Ok(if float || ty != it {
                    self.op(Op::Bitcast, ty, &[bits])
                } else {
                    bits
                })
            }
            Op::TypeVector | Op::TypeArray | Op::TypeStruct => {
                let n = self.members(t)?;
                let mut parts = Vec::with_capacity(n.len());
                for (off, mty) in n {
                    let at = self.add(at, Off::Const(off));
                    parts.push(self.load(at, mty)?);
                }
                Ok(self.op(Op::CompositeConstruct, ty, &parts))
            }
            other => Err(format!("a load of Op{other:?} from a private object")),
        }
    }

    /// Writes `v` of type `ty` to the words at byte offset `at`.
    fn store(&mut self, at: Off, ty: Word, v: Word) -> Result<(), String> {
        let t = *self.types.get(&ty).ok_or("unknown type")?;
        match t.class.opcode {
            Op::TypeInt | Op::TypeFloat => {
                let (float, w) = self.scalar_type(ty)?;
                let it = self.ctx.uint(w);
                let bits = if float || ty != it {
                    self.op(Op::Bitcast, it, &[v])
                } else {
                    v
                };
                let index = self.binary(Op::ShiftRightLogical, at, 2);
                match w {
                    32 => self.store_word(index, bits),
                    64 => {
                        let lo = self.op(Op::UConvert, self.u32t, &[bits]);
                        let k = self.konst(32);
                        let hi = self.op(Op::ShiftRightLogical, it, &[bits, k]);
                        let hi = self.op(Op::UConvert, self.u32t, &[hi]);
                        self.store_word(index, lo);
                        let next = self.add(index, Off::Const(1));
                        self.store_word(next, hi);
                    }
                    _ => {
                        let word = self.load_word(index);
                        let byte = self.binary(Op::BitwiseAnd, at, 3);
                        let shift = self.binary(Op::ShiftLeftLogical, byte, 3);
                        let s = self.id(shift);
                        let wide = self.op(Op::UConvert, self.u32t, &[bits]);
                        let m = self.konst(if w == 8 { 0xff } else { 0xffff });
                        let (placed, mask) = if shift == Off::Const(0) {
                            (wide, m)
                        } else {
                            let placed = self.op(Op::ShiftLeftLogical, self.u32t, &[wide, s]);
                            let mask = self.op(Op::ShiftLeftLogical, self.u32t, &[m, s]);
                            (placed, mask)
                        };
                        let keep = self.op(Op::Not, self.u32t, &[mask]);
                        let kept = self.op(Op::BitwiseAnd, self.u32t, &[word, keep]);
                        let merged = self.op(Op::BitwiseOr, self.u32t, &[kept, placed]);
                        self.store_word(index, merged);
                    }
                }
                Ok(())
            }
            Op::TypeVector | Op::TypeArray | Op::TypeStruct => {
                for (k, (off, mty)) in self.members(t)?.into_iter().enumerate() {
                    let part = self.ctx.fresh();
                    self.out.code.push(Instruction::new(
                        Op::CompositeExtract,
                        Some(mty),
                        Some(part),
                        vec![Operand::IdRef(v), Operand::LiteralBit32(k as u32)],
                    ));
                    let at = self.add(at, Off::Const(off));
                    self.store(at, mty, part)?;
                }
                Ok(())
            }
            other => Err(format!("a store of Op{other:?} to a private object")),
        }
    }

    /// The byte offset and type of each member of a composite type.
    fn members(&self, t: &Instruction) -> Result<Vec<(u32, Word)>, String> {
        match t.class.opcode {
            Op::TypeVector | Op::TypeArray => {
                let e = id_at(t, 0).ok_or("malformed type")?;
                let (es, _) = self.layout(e)?;
                let n = match t.class.opcode {
                    Op::TypeVector => match t.operands.get(1) {
                        Some(Operand::LiteralBit32(n)) => *n,
                        _ => return Err("malformed vector".into()),
                    },
                    _ => {
                        let (size, _) = self.layout(t.result_id.ok_or("malformed type")?)?;
                        size / es.max(1)
                    }
                };
                Ok((0..n).map(|k| (k * es, e)).collect())
            }
            _ => {
                let ty = t.result_id.ok_or("malformed type")?;
                (0..t.operands.len())
                    .map(|k| {
                        Ok((
                            self.member_offset(ty, k as u32)?,
                            id_at(t, k).ok_or("malformed struct")?,
                        ))
                    })
                    .collect()
            }
        }
    }
}

/// Makes each of `vars` (with the values pointing into it, from
/// [`eligible`]) an array of words, its pointers byte offsets.
pub(super) fn flatten(
    ctx: &mut Ctx,
    fid: Word,
    a: &Analysis,
    vars: &[(Word, HashSet<Word>)],
) -> Result<(), String> {
    let u32t = ctx.uint(32);
    let word_ptr = ctx.pointer(StorageClass::Function, u32t);
    // Which object each pointer points into, and the new variables.
    let mut object: HashMap<Word, Word> = HashMap::default();
    let mut words: HashMap<Word, Word> = HashMap::default();
    let mut new_vars: HashMap<Word, Instruction> = HashMap::default();
    for (var, into) in vars {
        let (_, pointee) = a.value_pointer(*var).ok_or("variable without a type")?;
        let refs: HashMap<Word, &Instruction> = a.types.iter().map(|(k, v)| (*k, v)).collect();
        let (size, _) = layout(&refs, pointee)?;
        let len = ctx.const_u32(size.div_ceil(4).max(1));
        let arr = ctx.ty(
            Op::TypeArray,
            vec![Operand::IdRef(u32t), Operand::IdRef(len)],
        );
        let ptr = ctx.pointer(StorageClass::Function, arr);
        let w = ctx.fresh();
        new_vars.insert(
            *var,
            Instruction::new(
                Op::Variable,
                Some(ptr),
                Some(w),
                vec![Operand::StorageClass(StorageClass::Function)],
            ),
        );
        words.insert(*var, w);
        for &v in into {
            object.insert(v, *var);
        }
    }
    let undef = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Undef,
        Some(u32t),
        Some(undef),
        vec![],
    ));
    let globals: Vec<Instruction> = ctx.module.types_global_values.clone();
    let types: HashMap<Word, &Instruction> = globals
        .iter()
        .filter_map(|g| Some((g.result_id?, g)))
        .collect();
    let mut offsets: HashMap<Word, Off> = HashMap::default();
    for (var, _) in vars {
        offsets.insert(*var, Off::Const(0));
    }
    // Phis of offsets get their ids first: loops use them before their
    // incoming values are made.
    for i in &a.code {
        if i.class.opcode == Op::Phi
            && let Some(r) = i.result_id
            && object.contains_key(&r)
        {
            offsets.insert(r, Off::Id(ctx.fresh()));
        }
    }
    let mut phis: Vec<(usize, usize, usize)> = Vec::new();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    let mut consts: HashMap<u32, Word> = HashMap::default();
    for (fi, f) in functions.iter_mut().enumerate() {
        for (bi, b) in f.blocks.iter_mut().enumerate() {
            let mut e = Emitter {
                ctx,
                types: &types,
                values: &a.value_type,
                out: Prologue {
                    code: Vec::with_capacity(b.instructions.len()),
                },
                u32t,
                consts: std::mem::take(&mut consts),
                word_ptr,
                var: 0,
                pointers: HashMap::default(),
            };
            for i in std::mem::take(&mut b.instructions) {
                let r = i.result_id;
                if r.is_some_and(|r| new_vars.contains_key(&r)) {
                    continue;
                }
                let into = |x: Option<Word>| x.and_then(|x| object.get(&x).copied());
                let op = i.class.opcode;
                if into(r).is_some() {
                    let r = r.expect("a result");
                    match op {
                        Op::Phi => {
                            let Some(Off::Id(id)) = offsets.get(&r).copied() else {
                                return Err("a phi of offsets without an id".into());
                            };
                            phis.push((fi, bi, e.out.code.len()));
                            e.out.code.push(Instruction::new(
                                Op::Phi,
                                Some(u32t),
                                Some(id),
                                i.operands.clone(),
                            ));
                        }
                        Op::Select => {
                            let c = id_at(&i, 0).ok_or("malformed select")?;
                            let mut arms = [0; 2];
                            for (n, k) in [1, 2].into_iter().enumerate() {
                                let x = id_at(&i, k).ok_or("malformed select")?;
                                arms[n] = match offsets.get(&x) {
                                    Some(&o) => e.id(o),
                                    None => undef,
                                };
                            }
                            let s = e.op(Op::Select, u32t, &[c, arms[0], arms[1]]);
                            offsets.insert(r, Off::Id(s));
                        }
                        Op::AccessChain | Op::InBoundsAccessChain => {
                            let base = id_at(&i, 0).ok_or("malformed access chain")?;
                            let from = *offsets.get(&base).ok_or("unknown base")?;
                            let (_, pointee) =
                                a.value_pointer(base).ok_or("a base without a type")?;
                            let idx: Vec<Word> = (1..i.operands.len())
                                .map(|k| id_at(&i, k).ok_or("malformed access chain"))
                                .collect::<Result<_, _>>()?;
                            let at = e.chain(from, pointee, &idx)?;
                            offsets.insert(r, at);
                        }
                        Op::PtrAccessChain | Op::InBoundsPtrAccessChain => {
                            let base = id_at(&i, 0).ok_or("malformed access chain")?;
                            let from = *offsets.get(&base).ok_or("unknown base")?;
                            let (_, pointee) =
                                a.value_pointer(base).ok_or("a base without a type")?;
                            let step = id_at(&i, 1).ok_or("malformed access chain")?;
                            let (size, _) = e.layout(pointee)?;
                            let s = e.index(step);
                            let s = e.mul(s, size);
                            let from = e.add(from, s);
                            let idx: Vec<Word> = (2..i.operands.len())
                                .map(|k| id_at(&i, k).ok_or("malformed access chain"))
                                .collect::<Result<_, _>>()?;
                            let at = e.chain(from, pointee, &idx)?;
                            offsets.insert(r, at);
                        }
                        _ => {
                            // Casts and copies keep the offset.
                            let base = id_at(&i, 0).ok_or("malformed cast")?;
                            let from = *offsets.get(&base).ok_or("unknown base")?;
                            offsets.insert(r, from);
                        }
                    }
                    continue;
                }
                match op {
                    Op::Load if into(id_at(&i, 0)).is_some() => {
                        let p = id_at(&i, 0).expect("a pointer");
                        e.var = words[&object[&p]];
                        let ty = i.result_type.ok_or("a load without a type")?;
                        let v = e.load(offsets[&p], ty)?;
                        // The last instruction made the value: it takes the
                        // load's id.
                        let last = e.out.code.last_mut().ok_or("a load made nothing")?;
                        debug_assert_eq!(last.result_id, Some(v));
                        last.result_id = r;
                    }
                    Op::Store if into(id_at(&i, 0)).is_some() => {
                        let p = id_at(&i, 0).expect("a pointer");
                        e.var = words[&object[&p]];
                        let v = id_at(&i, 1).ok_or("malformed store")?;
                        let (_, ty) = a.value_pointer(p).ok_or("a pointer without a type")?;
                        let ty = a.value_type.get(&v).copied().unwrap_or(ty);
                        e.store(offsets[&p], ty, v)?;
                    }
                    Op::ConvertPtrToU if into(id_at(&i, 0)).is_some() => {
                        let p = id_at(&i, 0).expect("a pointer");
                        let ty = i.result_type.ok_or("a conversion without a type")?;
                        let x = e.id(offsets[&p]);
                        let op = if e.int_width(ty) == Some(32) {
                            Op::CopyObject
                        } else {
                            Op::UConvert
                        };
                        e.out
                            .code
                            .push(Instruction::new(op, Some(ty), r, vec![Operand::IdRef(x)]));
                    }
                    Op::PtrEqual | Op::PtrNotEqual | Op::PtrDiff
                        if into(id_at(&i, 0)).is_some() =>
                    {
                        let (p, q) = (
                            id_at(&i, 0).expect("a pointer"),
                            id_at(&i, 1).ok_or("malformed comparison")?,
                        );
                        let x = e.id(offsets[&p]);
                        let y = e.id(*offsets.get(&q).ok_or("unknown pointer")?);
                        let ty = i.result_type.ok_or("a comparison without a type")?;
                        let v = match op {
                            Op::PtrEqual => e.op(Op::IEqual, ty, &[x, y]),
                            Op::PtrNotEqual => e.op(Op::INotEqual, ty, &[x, y]),
                            _ => {
                                let (_, pointee) =
                                    a.value_pointer(p).ok_or("a pointer without a type")?;
                                let (size, _) = e.layout(pointee)?;
                                let d = e.op(Op::ISub, u32t, &[x, y]);
                                let d = if e.int_width(ty) == Some(32) {
                                    d
                                } else {
                                    e.op(Op::SConvert, ty, &[d])
                                };
                                let k = e.ctx.const_int(ty, u64::from(size.max(1)));
                                e.op(Op::SDiv, ty, &[d, k])
                            }
                        };
                        e.out.code.push(Instruction::new(
                            Op::CopyObject,
                            Some(ty),
                            r,
                            vec![Operand::IdRef(v)],
                        ));
                    }
                    _ => e.out.code.push(i),
                }
            }
            b.instructions = std::mem::take(&mut e.out.code);
            consts = std::mem::take(&mut e.consts);
        }
    }
    // Incoming offsets of the phis.
    for (fi, bi, at) in phis {
        let i = &mut functions[fi].blocks[bi].instructions[at];
        for k in (0..i.operands.len()).step_by(2) {
            let Some(x) = id_at(i, k) else { continue };
            let o = match offsets.get(&x) {
                Some(Off::Const(c)) => ctx.const_u32(*c),
                Some(Off::Id(id)) => *id,
                None => undef,
            };
            i.operands[k] = Operand::IdRef(o);
        }
    }
    // The word arrays open the kernel, where the objects were.
    let made: Vec<Instruction> = vars.iter().map(|(v, _)| new_vars[v].clone()).collect();
    insert_at_kernel_start(&mut functions, fid, made)?;
    ctx.module.functions = functions;
    // Names and decorations of the pointers that are gone.
    let gone: HashSet<Word> = object.keys().copied().collect();
    ctx.module
        .debug_names
        .retain(|n| id_at(n, 0).is_none_or(|x| !gone.contains(&x)));
    ctx.module
        .annotations
        .retain(|d| id_at(d, 0).is_none_or(|x| !gone.contains(&x)));
    Ok(())
}
