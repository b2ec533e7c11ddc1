//! Pass 3 (phase 1): Memory copies. clang turns struct and array
//! assignments, and the zero or constant initialisation of aggregates, into
//! `memcpy`/`memset` calls that llvm-spirv emits as `OpCopyMemorySized`
//! (and sometimes `OpCopyMemory`) between byte pointers. Vulkan has no
//! sized copy, so each becomes typed loads and stores.
//!
//! Takes the one-function kernel. Guarantees no `OpCopyMemorySized` or
//! `OpCopyMemory` is left: each became typed loads and stores. A copy it
//! cannot express fails the rewrite by name (see below).
//!
//! The byte pointers are casts of typed pointers; the pass looks through
//! the casts to the typed pointers and their pointee types, and handles:
//! * a copy between two objects of the same type, or of k consecutive
//!   elements of one type (typed loads and stores, element by element);
//! * a copy from a module-scope constant whose value is all zero (stores
//!   of zero values of the destination's type);
//! * a copy from a module-scope constant of the destination's type (a
//!   store of the constant's value);
//! * a copy from a module-scope constant of integers into another type
//!   (stores of its bytes, in the widest units the alignment allows);
//! * any other copy between unrelated types: integer units loaded and
//!   stored through reinterpreted pointers (which the relocation pass turns
//!   into device addresses where they point to private or local data).
//!
//! What remains (module constants of other kinds copied into another
//! type, copies of over 4096 units) fails the rewrite by name.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Op, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::input::reflect::layout;

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    let has_copies = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .any(|i| matches!(i.class.opcode, Op::CopyMemorySized | Op::CopyMemory));
    if !has_copies {
        return Ok(());
    }
    // Every function-local value's defining instruction and type.
    let mut defs: HashMap<Word, Instruction> = HashMap::default();
    for i in ctx.module.functions.iter().flat_map(|f| {
        f.parameters
            .iter()
            .chain(f.blocks.iter().flat_map(|b| &b.instructions))
    }) {
        if let Some(r) = i.result_id {
            defs.insert(r, i.clone());
        }
    }
    let mut functions = std::mem::take(&mut ctx.module.functions);
    let result = (|| {
        for b in functions.iter_mut().flat_map(|f| &mut f.blocks) {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                match i.class.opcode {
                    Op::CopyMemorySized | Op::CopyMemory => {
                        lower_copy(ctx, &defs, &i, &mut out)?;
                    }
                    _ => out.push(i),
                }
            }
            b.instructions = out;
        }
        Ok(())
    })();
    ctx.module.functions = functions;
    result
}

/// A pointer with its casts looked through: (typed pointer, its pointer
/// type, the pointee type). Access chains that step to the first byte of
/// an object (all indices but the first zero) count as casts; a non-zero
/// first index becomes an element step on the object's own type, emitted
/// into `out`.
fn origin(
    ctx: &mut Ctx,
    defs: &HashMap<Word, Instruction>,
    out: &mut Vec<Instruction>,
    mut p: Word,
) -> Option<(Word, Word, Word)> {
    let mut element: Option<Word> = None;
    // The step's unit is its pointer's pointee: after a step, casts to
    // another pointee end the search at the step itself.
    let pointee_of = |ctx: &Ctx, v: Word| {
        defs.get(&v)
            .and_then(|d| d.result_type)
            .or_else(|| ctx.type_of(v))
            .and_then(|t| ctx.pointer_parts(t))
            .map(|x| x.1)
    };
    let mut stepped: Option<Word> = None;
    while let Some(d) = defs.get(&p) {
        match d.class.opcode {
            Op::Bitcast | Op::CopyObject => {
                let src = id_at(d, 0)?;
                if let Some(chain) = stepped
                    && pointee_of(ctx, src) != pointee_of(ctx, chain)
                {
                    p = chain;
                    element = None;
                    break;
                }
                p = src;
            }
            Op::PtrAccessChain | Op::InBoundsPtrAccessChain if element.is_none() => {
                let zero = |x: Option<Word>| x.is_some_and(|c| is_zero(ctx, c));
                if !(2..d.operands.len()).all(|n| zero(id_at(d, n))) {
                    break;
                }
                let first = id_at(d, 1)?;
                if !zero(Some(first)) {
                    element = Some(first);
                    stepped = Some(p);
                }
                p = id_at(d, 0)?;
            }
            _ => break,
        }
    }
    let ty = defs
        .get(&p)
        .and_then(|d| d.result_type)
        .or_else(|| ctx.type_of(p))?;
    let (_, pointee) = ctx.pointer_parts(ty)?;
    if let Some(e) = element {
        let q = ctx.fresh();
        out.push(Instruction::new(
            Op::InBoundsPtrAccessChain,
            Some(ty),
            Some(q),
            vec![Operand::IdRef(p), Operand::IdRef(e)],
        ));
        p = q;
    }
    Some((p, ty, pointee))
}

fn type_name(ctx: &Ctx, ty: Word) -> String {
    ctx.global(ty)
        .map(|t| {
            format!("{:?}", t.class.opcode)
                .trim_start_matches("Type")
                .to_string()
        })
        .unwrap_or_else(|| "?".into())
}

/// Whether a module-scope constant is zero all through.
fn is_zero(ctx: &Ctx, c: Word) -> bool {
    let Some(def) = ctx.global(c) else {
        return false;
    };
    match def.class.opcode {
        Op::ConstantNull => true,
        Op::Constant => def.operands.iter().all(|o| match o {
            Operand::LiteralBit32(v) => *v == 0,
            Operand::LiteralBit64(v) => *v == 0,
            _ => false,
        }),
        Op::ConstantComposite => def
            .operands
            .iter()
            .all(|o| matches!(o, Operand::IdRef(x) if is_zero(ctx, *x))),
        _ => false,
    }
}

/// The component type and count of a vector or array type.
fn components(ctx: &Ctx, ty: Word) -> Option<(Word, u32)> {
    let t = ctx.global(ty)?;
    let elem = id_at(t, 0)?;
    let n = match (t.class.opcode, t.operands.get(1)) {
        (Op::TypeVector, Some(Operand::LiteralBit32(n))) => *n,
        (Op::TypeArray, Some(Operand::IdRef(len))) => match ctx.global(*len)?.operands.first()? {
            Operand::LiteralBit32(v) => *v,
            Operand::LiteralBit64(v) => u32::try_from(*v).ok()?,
            _ => return None,
        },
        _ => return None,
    };
    Some((elem, n))
}

/// `v` (of type `from`) as a value of type `to` with the same components.
fn rebuild(ctx: &mut Ctx, out: &mut Vec<Instruction>, v: Word, from: Word, to: Word) -> Word {
    let Some((elem, n)) = components(ctx, from) else {
        return v;
    };
    let parts: Vec<Operand> = (0..n)
        .map(|k| {
            let c = ctx.fresh();
            out.push(Instruction::new(
                Op::CompositeExtract,
                Some(elem),
                Some(c),
                vec![Operand::IdRef(v), Operand::LiteralBit32(k)],
            ));
            Operand::IdRef(c)
        })
        .collect();
    let rebuilt = ctx.fresh();
    out.push(Instruction::new(
        Op::CompositeConstruct,
        Some(to),
        Some(rebuilt),
        parts,
    ));
    rebuilt
}

/// Whether two types hold the same components (a vector and an array).
fn same_components(ctx: &Ctx, a: Word, b: Word) -> bool {
    matches!((components(ctx, a), components(ctx, b)), (Some(x), Some(y)) if x == y)
}

fn lower_copy(
    ctx: &mut Ctx,
    defs: &HashMap<Word, Instruction>,
    i: &Instruction,
    out: &mut Vec<Instruction>,
) -> Result<(), String> {
    let (dst, src) = (
        id_at(i, 0).ok_or("malformed memory copy")?,
        id_at(i, 1).ok_or("malformed memory copy")?,
    );
    let (d, d_ty, d_elem) =
        origin(ctx, defs, out, dst).ok_or("memory copy to an untyped pointer")?;
    let (s, s_ty, s_elem) =
        origin(ctx, defs, out, src).ok_or("memory copy from an untyped pointer")?;
    let types: HashMap<Word, &Instruction> = ctx
        .module
        .types_global_values
        .iter()
        .filter_map(|t| Some((t.result_id?, t)))
        .collect();
    let d_size = layout(&types, d_elem)?.0;
    let s_size = layout(&types, s_elem).map(|l| l.0).unwrap_or(0);
    let bytes = if i.class.opcode == Op::CopyMemory {
        layout(&types, s_elem)?.0
    } else {
        let n = id_at(i, 2).ok_or("malformed OpCopyMemorySized")?;
        match types.get(&n).map(|c| (c.class.opcode, c.operands.first())) {
            Some((Op::Constant, Some(Operand::LiteralBit32(v)))) => *v,
            Some((Op::Constant, Some(Operand::LiteralBit64(v)))) => {
                u32::try_from(*v).map_err(|_| "a memory copy of over 4 GiB")?
            }
            _ => {
                return Err(
                    "OpCopyMemorySized of a size known only at run time is not supported yet"
                        .into(),
                );
            }
        }
    };
    drop(types);
    if bytes == 0 {
        return Ok(());
    }
    let unsupported = || {
        format!(
            "OpCopyMemorySized of {bytes} bytes from {} to {} is not supported yet",
            type_name(ctx, s_elem),
            type_name(ctx, d_elem)
        )
    };
    // Copies between unrelated types go unit by unit through reinterpreted
    // pointers, which the relocation pass makes device addresses (module
    // constants cannot be reinterpreted: they are not in device memory).
    let constant_var = |p: Word| {
        ctx.global(p).is_some_and(|v| {
            v.class.opcode == Op::Variable
                && v.operands.first()
                    == Some(&Operand::StorageClass(
                        rspirv::spirv::StorageClass::UniformConstant,
                    ))
        })
    };
    let by_units = !constant_var(s) && !constant_var(d);
    // A module constant copied into another type: its bytes are known.
    let constant_bytes = if constant_var(s) && !constant_var(d) {
        ctx.global(s)
            .and_then(|v| id_at(v, 1))
            .and_then(|init| constant_bytes(ctx, init))
            .filter(|b| b.len() >= bytes as usize)
    } else {
        None
    };
    if d_size == 0 || bytes % d_size != 0 {
        if by_units {
            return copy_units(ctx, defs, i, (dst, src), bytes, out);
        }
        if let Some(b) = &constant_bytes {
            return store_bytes(ctx, defs, i, dst, &b[..bytes as usize], out);
        }
        return Err(unsupported());
    }
    let count = bytes / d_size;
    // The values to store, one per destination element.
    enum Source {
        Value(Word),
        Elements,
        Rebuilt,
    }
    let initializer = ctx
        .global(s)
        .filter(|v| v.class.opcode == Op::Variable)
        .and_then(|v| id_at(v, 1));
    let source = match initializer {
        Some(init) if is_zero(ctx, init) => Source::Value(ctx.const_null(d_elem)),
        Some(init) if s_elem == d_elem && count == 1 => Source::Value(init),
        _ if s_elem == d_elem => Source::Elements,
        // A vector and an array of its components (or the reverse): each
        // value is rebuilt component by component.
        _ if s_size == d_size && same_components(ctx, s_elem, d_elem) => Source::Rebuilt,
        _ if by_units => return copy_units(ctx, defs, i, (dst, src), bytes, out),
        _ if constant_bytes.is_some() => {
            let b = constant_bytes.expect("checked");
            return store_bytes(ctx, defs, i, dst, &b[..bytes as usize], out);
        }
        _ => return Err(unsupported()),
    };
    let index_ty = ctx.uint(32);
    for k in 0..count {
        let at = |ctx: &mut Ctx, out: &mut Vec<Instruction>, base: Word, ty: Word| -> Word {
            if k == 0 {
                return base;
            }
            let kc = ctx.const_int(index_ty, u64::from(k));
            let p = ctx.fresh();
            out.push(Instruction::new(
                Op::InBoundsPtrAccessChain,
                Some(ty),
                Some(p),
                vec![Operand::IdRef(base), Operand::IdRef(kc)],
            ));
            p
        };
        let value = match source {
            Source::Value(v) => v,
            Source::Elements | Source::Rebuilt => {
                let from = at(ctx, out, s, s_ty);
                let v = ctx.fresh();
                out.push(Instruction::new(
                    Op::Load,
                    Some(s_elem),
                    Some(v),
                    vec![Operand::IdRef(from)],
                ));
                if matches!(source, Source::Rebuilt) {
                    rebuild(ctx, out, v, s_elem, d_elem)
                } else {
                    v
                }
            }
        };
        let to = at(ctx, out, d, d_ty);
        out.push(Instruction::new(
            Op::Store,
            None,
            None,
            vec![Operand::IdRef(to), Operand::IdRef(value)],
        ));
    }
    Ok(())
}

/// The bytes of a constant made of integers (arrays and vectors of them,
/// or null), in memory order; None for anything else.
fn constant_bytes(ctx: &Ctx, c: Word) -> Option<Vec<u8>> {
    let def = ctx.global(c)?;
    let ty = ctx.global(def.result_type?)?;
    match def.class.opcode {
        Op::ConstantNull => {
            let types: HashMap<Word, &Instruction> = ctx
                .module
                .types_global_values
                .iter()
                .filter_map(|t| Some((t.result_id?, t)))
                .collect();
            let size = layout(&types, def.result_type?).ok()?.0;
            Some(vec![0; size as usize])
        }
        Op::Constant if ty.class.opcode == Op::TypeInt => {
            let width = match ty.operands.first()? {
                Operand::LiteralBit32(w) => *w / 8,
                _ => return None,
            };
            let v = match def.operands.first()? {
                Operand::LiteralBit32(v) => u64::from(*v),
                Operand::LiteralBit64(v) => *v,
                _ => return None,
            };
            Some(v.to_le_bytes()[..width as usize].to_vec())
        }
        Op::ConstantComposite
            if ty.class.opcode == Op::TypeArray
                || (ty.class.opcode == Op::TypeVector
                    && ty.operands.get(1) != Some(&Operand::LiteralBit32(3))) =>
        {
            let mut out = Vec::new();
            for o in &def.operands {
                let Operand::IdRef(x) = o else { return None };
                out.extend(constant_bytes(ctx, *x)?);
            }
            Some(out)
        }
        _ => None,
    }
}

/// Stores known bytes through a reinterpreted destination pointer.
fn store_bytes(
    ctx: &mut Ctx,
    defs: &HashMap<Word, Instruction>,
    i: &Instruction,
    dst: Word,
    bytes: &[u8],
    out: &mut Vec<Instruction>,
) -> Result<(), String> {
    let align = copy_alignment(i) as usize;
    let unit = [8usize, 4, 2, 1]
        .into_iter()
        .find(|u| bytes.len() % u == 0 && align % u == 0)
        .unwrap_or(1);
    if bytes.len() / unit > MAX_UNITS as usize {
        return Err(format!(
            "OpCopyMemorySized of {} constant bytes is not supported yet",
            bytes.len()
        ));
    }
    let sc = defs
        .get(&dst)
        .and_then(|d| d.result_type)
        .or_else(|| ctx.type_of(dst))
        .and_then(|t| ctx.pointer_parts(t))
        .map(|x| x.0)
        .ok_or("memory copy through an untyped pointer")?;
    let ut = ctx.uint(unit as u32 * 8);
    let ty = ctx.pointer(sc, ut);
    let base = ctx.fresh();
    out.push(Instruction::new(
        Op::Bitcast,
        Some(ty),
        Some(base),
        vec![Operand::IdRef(dst)],
    ));
    let index_ty = ctx.uint(32);
    for (k, chunk) in bytes.chunks(unit).enumerate() {
        let mut le = [0u8; 8];
        le[..unit].copy_from_slice(chunk);
        let value = ctx.const_int(ut, u64::from_le_bytes(le));
        let kc = ctx.const_int(index_ty, k as u64);
        let p = ctx.fresh();
        out.push(Instruction::new(
            Op::InBoundsPtrAccessChain,
            Some(ty),
            Some(p),
            vec![Operand::IdRef(base), Operand::IdRef(kc)],
        ));
        out.push(Instruction::new(
            Op::Store,
            None,
            None,
            vec![Operand::IdRef(p), Operand::IdRef(value)],
        ));
    }
    Ok(())
}

/// The alignment a copy's memory operands promise.
fn copy_alignment(i: &Instruction) -> u32 {
    let first_mem = if i.class.opcode == Op::CopyMemory {
        2
    } else {
        3
    };
    match (i.operands.get(first_mem), i.operands.get(first_mem + 1)) {
        (Some(Operand::MemoryAccess(m)), Some(Operand::LiteralBit32(a)))
            if m.contains(rspirv::spirv::MemoryAccess::ALIGNED) =>
        {
            *a
        }
        _ => 1,
    }
}

/// Units of copying: the widest integer that the copy's size and
/// alignment allow.
const MAX_UNITS: u32 = 4096;

/// A copy of `bytes` bytes as loads and stores of integers through
/// reinterpreted pointers.
fn copy_units(
    ctx: &mut Ctx,
    defs: &HashMap<Word, Instruction>,
    i: &Instruction,
    (dst, src): (Word, Word),
    bytes: u32,
    out: &mut Vec<Instruction>,
) -> Result<(), String> {
    let align = copy_alignment(i);
    let unit = [8u32, 4, 2, 1]
        .into_iter()
        .find(|u| bytes % u == 0 && align % u == 0)
        .unwrap_or(1);
    let count = bytes / unit;
    if count > MAX_UNITS {
        return Err(format!(
            "OpCopyMemorySized of {bytes} bytes between different types is not supported yet"
        ));
    }
    let storage = |ctx: &Ctx, p: Word| -> Option<rspirv::spirv::StorageClass> {
        let ty = defs
            .get(&p)
            .and_then(|d| d.result_type)
            .or_else(|| ctx.type_of(p))?;
        ctx.pointer_parts(ty).map(|x| x.0)
    };
    let ut = ctx.uint(unit * 8);
    let index_ty = ctx.uint(32);
    let cast =
        |ctx: &mut Ctx, out: &mut Vec<Instruction>, p: Word| -> Result<(Word, Word), String> {
            let sc = storage(ctx, p).ok_or("memory copy through an untyped pointer")?;
            let ty = ctx.pointer(sc, ut);
            let c = ctx.fresh();
            out.push(Instruction::new(
                Op::Bitcast,
                Some(ty),
                Some(c),
                vec![Operand::IdRef(p)],
            ));
            Ok((c, ty))
        };
    let (d, d_ty) = cast(ctx, out, dst)?;
    let (s, s_ty) = cast(ctx, out, src)?;
    for k in 0..count {
        let at = |ctx: &mut Ctx, out: &mut Vec<Instruction>, base: Word, ty: Word| {
            let kc = ctx.const_int(index_ty, u64::from(k));
            let p = ctx.fresh();
            out.push(Instruction::new(
                Op::InBoundsPtrAccessChain,
                Some(ty),
                Some(p),
                vec![Operand::IdRef(base), Operand::IdRef(kc)],
            ));
            p
        };
        let from = at(ctx, out, s, s_ty);
        let v = ctx.fresh();
        out.push(Instruction::new(
            Op::Load,
            Some(ut),
            Some(v),
            vec![Operand::IdRef(from)],
        ));
        let to = at(ctx, out, d, d_ty);
        out.push(Instruction::new(
            Op::Store,
            None,
            None,
            vec![Operand::IdRef(to), Operand::IdRef(v)],
        ));
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
        OpCapability Int8
        OpMemoryModel Physical64 OpenCL
        OpEntryPoint Kernel %k \"k\"
        %void = OpTypeVoid
        %uchar = OpTypeInt 8 0
        %uint = OpTypeInt 32 0
        %ulong = OpTypeInt 64 0
        %ulong_0 = OpConstant %ulong 0
        %ulong_2 = OpConstant %ulong 2
        %ulong_6 = OpConstant %ulong 6
        %ulong_8 = OpConstant %ulong 8
        %ulong_12 = OpConstant %ulong 12
        %ulong_16 = OpConstant %ulong 16
        %pair = OpTypeStruct %uint %uint
        %arr = OpTypeArray %uchar %ulong_16
        %p_pair = OpTypePointer Function %pair
        %g_pair = OpTypePointer CrossWorkgroup %pair
        %p_bytes = OpTypePointer Function %uchar
        %g_bytes = OpTypePointer CrossWorkgroup %uchar
        %c_arr = OpTypePointer UniformConstant %arr
        %c_bytes = OpTypePointer UniformConstant %uchar
        %zero = OpConstantNull %arr
        %zeros = OpVariable %c_arr UniformConstant %zero
        %fn = OpTypeFunction %void %g_pair
    ";

    fn ops(ctx: &Ctx) -> Vec<Op> {
        ctx.module
            .functions
            .iter()
            .flat_map(|f| f.all_inst_iter())
            .map(|i| i.class.opcode)
            .collect()
    }

    #[test]
    fn struct_copy_becomes_load_and_store() {
        let mut ctx = assemble(&format!(
            "{HEADER}
            %k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_pair
            %b = OpLabel
            %x = OpVariable %p_pair Function
            %dst = OpBitcast %p_bytes %x
            %elem = OpInBoundsPtrAccessChain %g_pair %g %ulong_2
            %src = OpBitcast %g_bytes %elem
            OpCopyMemorySized %dst %src %ulong_8 Aligned 4
            OpReturn
            OpFunctionEnd"
        ));
        run(&mut ctx).unwrap();
        let ops = ops(&ctx);
        assert!(!ops.contains(&Op::CopyMemorySized));
        assert_eq!(ops.iter().filter(|&&o| o == Op::Load).count(), 1);
        assert_eq!(ops.iter().filter(|&&o| o == Op::Store).count(), 1);
    }

    #[test]
    fn copy_from_zero_constant_stores_zeros() {
        let mut ctx = assemble(&format!(
            "{HEADER}
            %k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_pair
            %b = OpLabel
            %dst = OpBitcast %g_bytes %g
            %src = OpBitcast %c_bytes %zeros
            OpCopyMemorySized %dst %src %ulong_16 Aligned 4
            OpReturn
            OpFunctionEnd"
        ));
        run(&mut ctx).unwrap();
        let ops = ops(&ctx);
        assert!(!ops.contains(&Op::Load));
        assert_eq!(ops.iter().filter(|&&o| o == Op::Store).count(), 2);
    }

    #[test]
    fn constant_bytes_are_stored_into_another_type() {
        let ones = (0..16).map(|_| "%u1").collect::<Vec<_>>().join(" ");
        let mut ctx = assemble(&format!(
            "{HEADER}
            %u1 = OpConstant %uchar 1
            %init = OpConstantComposite %arr {ones}
            %ones = OpVariable %c_arr UniformConstant %init
            %k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_pair
            %b = OpLabel
            %dst = OpBitcast %g_bytes %g
            %src = OpBitcast %c_bytes %ones
            OpCopyMemorySized %dst %src %ulong_6 Aligned 2
            OpReturn
            OpFunctionEnd"
        ));
        run(&mut ctx).unwrap();
        let ops = ops(&ctx);
        assert!(!ops.contains(&Op::CopyMemorySized));
        assert!(!ops.contains(&Op::Load));
        // Six bytes aligned to 2: three 16-bit stores of 0x0101.
        assert_eq!(ops.iter().filter(|&&o| o == Op::Store).count(), 3);
    }

    #[test]
    fn byte_steps_stay_byte_steps() {
        let mut ctx = assemble(&format!(
            "{HEADER}
            %k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_pair
            %b = OpLabel
            %x = OpVariable %p_pair Function
            %xb = OpBitcast %p_bytes %x
            %xs = OpPtrAccessChain %p_bytes %xb %ulong_2
            %gb = OpBitcast %g_bytes %g
            %gs = OpPtrAccessChain %g_bytes %gb %ulong_2
            OpCopyMemorySized %gs %xs %ulong_2 Aligned 1
            OpReturn
            OpFunctionEnd"
        ));
        run(&mut ctx).unwrap();
        let structs: Vec<Word> = ctx
            .module
            .types_global_values
            .iter()
            .filter(|t| t.class.opcode == Op::TypeStruct)
            .filter_map(|t| t.result_id)
            .collect();
        let pair_types: Vec<Word> = ctx
            .module
            .types_global_values
            .iter()
            .filter(|t| {
                t.class.opcode == Op::TypePointer
                    && id_at(t, 1).is_some_and(|p| structs.contains(&p))
            })
            .filter_map(|t| t.result_id)
            .collect();
        assert_eq!(pair_types.len(), 2);
        // No step of two whole pairs: the copy moves bytes 2 and 3.
        let steps_pairs = ctx
            .module
            .functions
            .iter()
            .flat_map(|f| f.all_inst_iter())
            .any(|i| {
                i.class.opcode == Op::InBoundsPtrAccessChain
                    && i.result_type.is_some_and(|t| pair_types.contains(&t))
            });
        assert!(!steps_pairs);
        assert!(!ops(&ctx).contains(&Op::CopyMemorySized));
    }

    #[test]
    fn copy_between_unrelated_types_goes_by_units() {
        let mut ctx = assemble(&format!(
            "{HEADER}
            %k = OpFunction %void None %fn
            %g = OpFunctionParameter %g_pair
            %b = OpLabel
            %x = OpVariable %p_pair Function
            %dst = OpBitcast %p_bytes %x
            %src = OpBitcast %g_bytes %g
            OpCopyMemorySized %src %dst %ulong_12 Aligned 4
            OpReturn
            OpFunctionEnd"
        ));
        run(&mut ctx).unwrap();
        let ops = ops(&ctx);
        assert!(!ops.contains(&Op::CopyMemorySized));
        // 12 bytes aligned to 4: three 32-bit words.
        assert_eq!(ops.iter().filter(|&&o| o == Op::Load).count(), 3);
        assert_eq!(ops.iter().filter(|&&o| o == Op::Store).count(), 3);
    }
}
