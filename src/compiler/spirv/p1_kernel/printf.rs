//! Pass 5 (phase 1): Printf. Each call appends a record to the dispatch's
//! printf buffer, which the host formats after the command completes, in
//! order, before its event completes.
//!
//! Takes the one-function kernel. Guarantees no `printf` instruction is
//! left: each call site reserves and writes a record through the buffer
//! pointer in `Ctx::printf_buffer`'s variable; returns the call sites, by
//! the index their records carry.
//!
//! The buffer holds a 32-bit count of the record bytes used, then its
//! capacity, then the records. A call reserves its record with one atomic
//! add and writes it only if it fits (printf then returns 0, else -1, and
//! the host reports the overflow). A record is the call site's index
//! followed by each argument in 32-bit words: integers of up to 32 bits
//! and floats as one word, 64-bit values as two, vectors component by
//! component, and `%s` strings (constant strings, known at build time) as
//! their index in the string table.
//!
//! The format strings and the argument kinds of every call site travel
//! with the rewritten kernel; the buffer's address arrives in the push
//! constants (the interface pass stores it into the private variable this
//! pass reads, `Ctx::printf_buffer`).

use rspirv::dr::{Block, Instruction, Operand};
use rspirv::spirv::{Op, OpenclStd100Op as C, StorageClass, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};

/// How one printf argument is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PrintfArg {
    /// An integer or float of `bytes` (1, 2, 4 or 8) bytes, `lanes`
    /// components; 8-byte values take two words, smaller ones one.
    Value { float: bool, bytes: u32, lanes: u32 },
    /// A constant string: one word, its index in the call's strings.
    String,
}

/// One printf call site.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PrintfCall {
    pub format: String,
    pub args: Vec<PrintfArg>,
    /// The `%s` strings, by the index their argument word holds.
    pub strings: Vec<String>,
}

impl PrintfArg {
    pub fn words(&self) -> u32 {
        match self {
            PrintfArg::Value { bytes, lanes, .. } => lanes * if *bytes == 8 { 2 } else { 1 },
            PrintfArg::String => 1,
        }
    }
}

/// The constant string a pointer names (through access chains and casts
/// to a module-scope array of chars with an initialiser).
fn constant_string(ctx: &Ctx, defs: &HashMap<Word, Instruction>, mut p: Word) -> Option<String> {
    while let Some(d) = defs.get(&p) {
        match d.class.opcode {
            Op::PtrAccessChain
            | Op::InBoundsPtrAccessChain
            | Op::AccessChain
            | Op::InBoundsAccessChain
            | Op::Bitcast
            | Op::CopyObject
            | Op::PtrCastToGeneric => p = id_at(d, 0)?,
            _ => return None,
        }
    }
    let var = ctx.global(p)?;
    let init = ctx.global(id_at(var, 1)?)?;
    let bytes: Vec<u8> = match init.class.opcode {
        Op::ConstantComposite => init
            .operands
            .iter()
            .map(|o| match o {
                Operand::IdRef(c) => match ctx.global(*c)?.class.opcode {
                    Op::ConstantNull => Some(0u8),
                    _ => match ctx.global(*c)?.operands.first() {
                        Some(Operand::LiteralBit32(v)) => Some(*v as u8),
                        _ => None,
                    },
                },
                _ => None,
            })
            .collect::<Option<Vec<u8>>>()?,
        Op::ConstantNull => vec![0],
        _ => return None,
    };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

fn argument_kind(ctx: &Ctx, ty: Word) -> Option<PrintfArg> {
    let t = ctx.global(ty)?;
    let (comp, lanes) = match (t.class.opcode, t.operands.get(1)) {
        (Op::TypeVector, Some(Operand::LiteralBit32(n))) => (id_at(t, 0)?, *n),
        _ => (ty, 1),
    };
    let c = ctx.global(comp)?;
    let bits = match c.operands.first() {
        Some(Operand::LiteralBit32(b)) => *b,
        _ => return None,
    };
    match c.class.opcode {
        Op::TypeInt | Op::TypeFloat => Some(PrintfArg::Value {
            float: c.class.opcode == Op::TypeFloat,
            bytes: bits / 8,
            lanes,
        }),
        Op::TypePointer => None,
        _ => None,
    }
}

/// Lowers every printf call of the kernel; returns the call sites.
pub fn run(ctx: &mut Ctx) -> Result<Vec<PrintfCall>, String> {
    let Some(ocl) = ctx.ext_import("OpenCL.std") else {
        return Ok(Vec::new());
    };
    let is_printf = |i: &Instruction| {
        i.class.opcode == Op::ExtInst
            && id_at(i, 0) == Some(ocl)
            && i.operands.get(1) == Some(&Operand::LiteralExtInstInteger(C::printf as u32))
    };
    if !ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .any(is_printf)
    {
        return Ok(Vec::new());
    }
    let mut defs: HashMap<Word, Instruction> = HashMap::default();
    for i in ctx.module.functions.iter().flat_map(|f| f.all_inst_iter()) {
        if let Some(r) = i.result_id {
            defs.insert(r, i.clone());
        }
    }
    let u32t = ctx.uint(32);
    let u64t = ctx.uint(64);
    let bool_ty = ctx.ty(Op::TypeBool, vec![]);
    let psb_u32 = ctx.pointer(StorageClass::PhysicalStorageBuffer, u32t);
    // The buffer's address, stored at the kernel's start by the interface pass.
    let address_var = ctx.private_variable(u64t);
    ctx.printf_buffer = Some(address_var);
    let (device, relaxed) = (ctx.const_u32(1), ctx.const_u32(0));
    let mut calls = Vec::new();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        let mut b = 0;
        while b < f.blocks.len() {
            let Some(at) = f.blocks[b].instructions.iter().position(is_printf) else {
                b += 1;
                continue;
            };
            let call = f.blocks[b].instructions[at].clone();
            let ids: Vec<Word> = (2..call.operands.len())
                .filter_map(|n| id_at(&call, n))
                .collect();
            let format = constant_string(ctx, &defs, ids[0])
                .ok_or("printf with a format that is not a constant string is not supported")?;
            let mut site = PrintfCall {
                format,
                args: Vec::new(),
                strings: Vec::new(),
            };
            // The words to write: (value id, is 64-bit).
            let mut words: Vec<(Word, bool)> = Vec::new();
            let mut code: Vec<Instruction> = Vec::new();
            let emit =
                |ctx: &mut Ctx, code: &mut Vec<Instruction>, op: Op, ty: Word, args: &[Operand]| {
                    let id = ctx.fresh();
                    code.push(Instruction::new(op, Some(ty), Some(id), args.to_vec()));
                    id
                };
            for &a in &ids[1..] {
                let ty = defs
                    .get(&a)
                    .and_then(|d| d.result_type)
                    .or_else(|| ctx.type_of(a))
                    .ok_or("printf argument of unknown type")?;
                if let Some((sc, _)) = ctx.pointer_parts(ty) {
                    let Some(s) = constant_string(ctx, &defs, a) else {
                        // %p of a global or constant pointer: its device
                        // address.
                        if !matches!(
                            sc,
                            StorageClass::CrossWorkgroup | StorageClass::UniformConstant
                        ) {
                            return Err(format!(
                                "printf of a pointer to {sc:?} memory is not supported yet"
                            ));
                        }
                        let u64t = ctx.uint(64);
                        let v = emit(
                            ctx,
                            &mut code,
                            Op::ConvertPtrToU,
                            u64t,
                            &[Operand::IdRef(a)],
                        );
                        site.args.push(PrintfArg::Value {
                            float: false,
                            bytes: 8,
                            lanes: 1,
                        });
                        words.push((v, true));
                        continue;
                    };
                    let k = ctx.const_u32(site.strings.len() as u32);
                    site.strings.push(s);
                    site.args.push(PrintfArg::String);
                    words.push((k, false));
                    continue;
                }
                let kind = argument_kind(ctx, ty)
                    .ok_or("printf argument of this type is not supported")?;
                let PrintfArg::Value {
                    float,
                    bytes,
                    lanes,
                } = kind
                else {
                    unreachable!("values")
                };
                site.args.push(kind);
                let comp_ty = if lanes > 1 {
                    ctx.global(ty).and_then(|t| id_at(t, 0)).ok_or("vector")?
                } else {
                    ty
                };
                for k in 0..lanes {
                    let v = if lanes > 1 {
                        emit(
                            ctx,
                            &mut code,
                            Op::CompositeExtract,
                            comp_ty,
                            &[Operand::IdRef(a), Operand::LiteralBit32(k)],
                        )
                    } else {
                        a
                    };
                    // As raw bits, widened to a word.
                    let int_ty = ctx.uint(bytes * 8);
                    let bits = if float {
                        emit(ctx, &mut code, Op::Bitcast, int_ty, &[Operand::IdRef(v)])
                    } else {
                        v
                    };
                    let word = match bytes {
                        8 => bits,
                        4 => bits,
                        _ => emit(ctx, &mut code, Op::UConvert, u32t, &[Operand::IdRef(bits)]),
                    };
                    words.push((word, bytes == 8));
                }
            }
            let record_words: u32 = 1 + words.iter().map(|w| if w.1 { 2 } else { 1 }).sum::<u32>();
            let index = ctx.const_u32(calls.len() as u32);
            calls.push(site);
            // Reserve: used = atomic_add(buffer[0], bytes).
            let address = emit(
                ctx,
                &mut code,
                Op::Load,
                u64t,
                &[Operand::IdRef(address_var)],
            );
            let counter = emit(
                ctx,
                &mut code,
                Op::ConvertUToPtr,
                psb_u32,
                &[Operand::IdRef(address)],
            );
            let bytes_c = ctx.const_u32(record_words * 4);
            let start = emit(
                ctx,
                &mut code,
                Op::AtomicIAdd,
                u32t,
                &[
                    Operand::IdRef(counter),
                    Operand::IdScope(device),
                    Operand::IdMemorySemantics(relaxed),
                    Operand::IdRef(bytes_c),
                ],
            );
            let four = ctx.const_int(u64t, 4);
            let cap_at = emit(
                ctx,
                &mut code,
                Op::IAdd,
                u64t,
                &[Operand::IdRef(address), Operand::IdRef(four)],
            );
            let cap_ptr = emit(
                ctx,
                &mut code,
                Op::ConvertUToPtr,
                psb_u32,
                &[Operand::IdRef(cap_at)],
            );
            let mut load_cap =
                Instruction::new(Op::Load, Some(u32t), None, vec![Operand::IdRef(cap_ptr)]);
            let capacity = ctx.fresh();
            load_cap.result_id = Some(capacity);
            code.push(load_cap);
            let end = emit(
                ctx,
                &mut code,
                Op::IAdd,
                u32t,
                &[Operand::IdRef(start), Operand::IdRef(bytes_c)],
            );
            let fits = emit(
                ctx,
                &mut code,
                Op::ULessThanEqual,
                bool_ty,
                &[Operand::IdRef(end), Operand::IdRef(capacity)],
            );
            // Split the block: [before, reserve] -> write? -> rest.
            let rest_instructions = f.blocks[b].instructions.split_off(at + 1);
            f.blocks[b].instructions.pop();
            let (write_label, rest_label) = (ctx.fresh(), ctx.fresh());
            let old_label = f.blocks[b].label_id().ok_or("block without label")?;
            let mut before = std::mem::take(&mut f.blocks[b].instructions);
            before.extend(code);
            before.push(Instruction::new(
                Op::BranchConditional,
                None,
                None,
                vec![
                    Operand::IdRef(fits),
                    Operand::IdRef(write_label),
                    Operand::IdRef(rest_label),
                ],
            ));
            f.blocks[b].instructions = before;
            // The record: words at buffer + 8 + start.
            let mut w = Vec::new();
            let start64 = emit(ctx, &mut w, Op::UConvert, u64t, &[Operand::IdRef(start)]);
            let eight = ctx.const_int(u64t, 8);
            let base = emit(
                ctx,
                &mut w,
                Op::IAdd,
                u64t,
                &[Operand::IdRef(address), Operand::IdRef(eight)],
            );
            let base = emit(
                ctx,
                &mut w,
                Op::IAdd,
                u64t,
                &[Operand::IdRef(base), Operand::IdRef(start64)],
            );
            let mut slot = 0u64;
            let store = |ctx: &mut Ctx, w: &mut Vec<Instruction>, value: Word, slot: u64| {
                let off = ctx.const_int(u64t, slot * 4);
                let at = emit(
                    ctx,
                    w,
                    Op::IAdd,
                    u64t,
                    &[Operand::IdRef(base), Operand::IdRef(off)],
                );
                let p = emit(ctx, w, Op::ConvertUToPtr, psb_u32, &[Operand::IdRef(at)]);
                w.push(Instruction::new(
                    Op::Store,
                    None,
                    None,
                    vec![Operand::IdRef(p), Operand::IdRef(value)],
                ));
            };
            store(ctx, &mut w, index, slot);
            slot += 1;
            for (value, wide) in words {
                if wide {
                    let lo = emit(ctx, &mut w, Op::UConvert, u32t, &[Operand::IdRef(value)]);
                    let k32 = ctx.const_int(u64t, 32);
                    let shifted = emit(
                        ctx,
                        &mut w,
                        Op::ShiftRightLogical,
                        u64t,
                        &[Operand::IdRef(value), Operand::IdRef(k32)],
                    );
                    let hi = emit(ctx, &mut w, Op::UConvert, u32t, &[Operand::IdRef(shifted)]);
                    store(ctx, &mut w, lo, slot);
                    store(ctx, &mut w, hi, slot + 1);
                    slot += 2;
                } else {
                    store(ctx, &mut w, value, slot);
                    slot += 1;
                }
            }
            w.push(Instruction::new(
                Op::Branch,
                None,
                None,
                vec![Operand::IdRef(rest_label)],
            ));
            // After: printf's result, 0 or -1, and the rest of the block.
            let (zero, minus_one) = (ctx.const_u32(0), ctx.const_u32(u32::MAX));
            let mut r = vec![Instruction::new(
                Op::Phi,
                call.result_type,
                call.result_id,
                vec![
                    Operand::IdRef(zero),
                    Operand::IdRef(write_label),
                    Operand::IdRef(minus_one),
                    Operand::IdRef(old_label),
                ],
            )];
            r.extend(rest_instructions);
            // Phis after the old block now come from the rest block.
            for other in f.blocks.iter_mut() {
                for p in other
                    .instructions
                    .iter_mut()
                    .filter(|p| p.class.opcode == Op::Phi)
                {
                    for o in p.operands.iter_mut().skip(1).step_by(2) {
                        if *o == Operand::IdRef(old_label) {
                            *o = Operand::IdRef(rest_label);
                        }
                    }
                }
            }
            let block = |label: Word, instructions: Vec<Instruction>| Block {
                label: Some(Instruction::new(Op::Label, None, Some(label), vec![])),
                instructions,
            };
            f.blocks.insert(b + 1, block(write_label, w));
            f.blocks.insert(b + 2, block(rest_label, r));
            b += 2;
        }
    }
    ctx.module.functions = functions;
    Ok(calls)
}
