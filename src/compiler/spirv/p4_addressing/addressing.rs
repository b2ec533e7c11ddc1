//! Pass 14 (phase 4): Addressing. OpenCL's Physical64 pointers become
//! Vulkan's: `CrossWorkgroup` and `UniformConstant` data pointers become
//! `PhysicalStorageBuffer` pointers (64-bit device addresses) with the
//! OpenCL C ABI layout made explicit (`ArrayStride`, `Offset`) and every
//! access `Aligned` (module-scope data became device pointers in the
//! module_data pass); pointer arithmetic on
//! `Function`/`Workgroup`/`Private` objects becomes plain access chains
//! where the first step is zero (what cannot, the relocate pass moved into
//! device memory).
//!
//! Takes the kernel after phase 3 (no `Generic` pointers). Guarantees no
//! `CrossWorkgroup` or `UniformConstant` pointer is left: data pointers are
//! `PhysicalStorageBuffer` pointers to types with explicit
//! `ArrayStride`/`Offset` layout, and every access through them is
//! `Aligned`; arithmetic on logical pointers is access chains. What it
//! cannot express fails by name.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Decoration, MemoryAccess, Op, StorageClass, Word};

use crate::compiler::spirv::common::ctx::{Ctx, Prologue, id_at};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::input::reflect::layout;

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    drop_unused_generic_values(ctx);
    // Data pointers become device addresses.
    let mut psb_types = Vec::new();
    for t in &mut ctx.module.types_global_values {
        if t.class.opcode == Op::TypeForwardPointer {
            // A recursive struct's pointer, declared ahead.
            if matches!(
                t.operands.get(1),
                Some(Operand::StorageClass(
                    StorageClass::CrossWorkgroup | StorageClass::UniformConstant
                ))
            ) {
                t.operands[1] = Operand::StorageClass(StorageClass::PhysicalStorageBuffer);
            }
            continue;
        }
        if t.class.opcode != Op::TypePointer {
            continue;
        }
        match t.operands[0] {
            Operand::StorageClass(StorageClass::CrossWorkgroup)
            | Operand::StorageClass(StorageClass::UniformConstant) => {
                t.operands[0] = Operand::StorageClass(StorageClass::PhysicalStorageBuffer);
                psb_types.push(t.result_id.expect("types have ids"));
            }
            Operand::StorageClass(StorageClass::Generic) => {
                return Err("generic address space pointers are not supported yet".into());
            }
            _ => {}
        }
    }
    // The types, as they are now, for both steps below (which add only
    // decorations and instructions, no types).
    let types: HashMap<Word, Instruction> = ctx
        .module
        .types_global_values
        .iter()
        .filter_map(|i| i.result_id.map(|r| (r, i.clone())))
        .collect();
    explicit_layout(ctx, &types, &psb_types)?;
    rewrite_accesses(ctx, &types)?;
    split_underaligned_vectors(ctx);
    split_underaligned_wide_scalars(ctx);
    integer_steps(ctx);
    packed_member_addresses(ctx);
    opaque_packed_pointees(ctx);
    Ok(())
}

/// Access chains on device addresses that pass through a packed struct
/// become integer arithmetic on the address (each member's `Offset`, each
/// element's `ArrayStride`): NVIDIA's compiler places the members of such
/// a struct at its own offsets, not the `Offset`s the module declares
/// (CTS vectors `vec_align_packed_struct_arr`: a float8 after a char read
/// as 2 bytes further on).
fn packed_member_addresses(ctx: &mut Ctx) {
    let packed = crate::compiler::spirv::input::reflect::packed_structs(&ctx.module);
    if packed.is_empty() {
        return;
    }
    let mut offsets: HashMap<(Word, u32), u32> = HashMap::default();
    for a in &ctx.module.annotations {
        if let (Op::MemberDecorate, Some(t), Some(Operand::LiteralBit32(m))) =
            (a.class.opcode, id_at(a, 0), a.operands.get(1))
        {
            if let (Some(Operand::Decoration(Decoration::Offset)), Some(Operand::LiteralBit32(o))) =
                (a.operands.get(2), a.operands.get(3))
            {
                offsets.insert((t, *m), *o);
            }
        }
    }
    let constants: HashMap<Word, u64> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Constant)
        .filter_map(|i| {
            let v = match i.operands.first()? {
                Operand::LiteralBit32(v) => u64::from(*v),
                Operand::LiteralBit64(v) => *v,
                _ => return None,
            };
            Some((i.result_id?, v))
        })
        .collect();
    let types = ctx.value_types();
    let u64t = ctx.uint(64);
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for b in functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
        let mut out = Prologue {
            code: Vec::with_capacity(b.instructions.len()),
        };
        for i in std::mem::take(&mut b.instructions) {
            match packed_chain(ctx, &types, &packed, &offsets, &constants, &i) {
                Some(steps) => {
                    let base = id_at(&i, 0).expect("a chain has a base");
                    let mut address = out.op(ctx, Op::ConvertPtrToU, u64t, &[base]);
                    for (index, scale) in steps {
                        address = match index {
                            None => {
                                let bytes = ctx.const_int(u64t, scale);
                                out.op(ctx, Op::IAdd, u64t, &[address, bytes])
                            }
                            Some(x) => add_elements(ctx, &mut out, &types, address, x, scale),
                        };
                    }
                    out.code.push(Instruction::new(
                        Op::ConvertUToPtr,
                        i.result_type,
                        i.result_id,
                        vec![Operand::IdRef(address)],
                    ));
                }
                None => out.code.push(i),
            }
        }
        b.instructions = out.code;
    }
    ctx.module.functions = functions;
}

/// Device pointers to a packed struct (or to a struct or array holding
/// one) whose values, once `packed_member_addresses` has made their chains
/// arithmetic, only travel as addresses point to an opaque word instead:
/// Vulkan holds every type a device pointer points to to its layout rules,
/// which a packed struct's members break (an `int` at offset 1). Pointers
/// that are still dereferenced keep their type (and the module then fails
/// validation with the reason).
fn opaque_packed_pointees(ctx: &mut Ctx) {
    let packed = crate::compiler::spirv::input::reflect::packed_structs(&ctx.module);
    if packed.is_empty() {
        return;
    }
    // Every struct or array type that holds a packed struct.
    let mut holds = packed;
    loop {
        let more: Vec<Word> = ctx
            .module
            .types_global_values
            .iter()
            .filter(|t| {
                matches!(
                    t.class.opcode,
                    Op::TypeStruct | Op::TypeArray | Op::TypeRuntimeArray
                )
            })
            .filter(|t| t.result_id.is_some_and(|r| !holds.contains(&r)))
            .filter(|t| {
                let members = if t.class.opcode == Op::TypeStruct {
                    t.operands.len()
                } else {
                    1
                };
                (0..members).any(|m| id_at(t, m).is_some_and(|x| holds.contains(&x)))
            })
            .filter_map(|t| t.result_id)
            .collect();
        if more.is_empty() {
            break;
        }
        holds.extend(more);
    }
    let pointers: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| {
            t.class.opcode == Op::TypePointer
                && t.operands.first()
                    == Some(&Operand::StorageClass(StorageClass::PhysicalStorageBuffer))
                && id_at(t, 1).is_some_and(|x| holds.contains(&x))
        })
        .filter_map(|t| t.result_id)
        .collect();
    if pointers.is_empty() {
        return;
    }
    // The values of those pointer types, and the types whose values are
    // used other than as addresses.
    let code = || {
        ctx.module.types_global_values.iter().chain(
            ctx.module
                .functions
                .iter()
                .flat_map(|f| f.parameters.iter().chain(f.all_inst_iter())),
        )
    };
    let values: HashMap<Word, Word> = code()
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .filter(|(_, t)| pointers.contains(t))
        .collect();
    let mut dereferenced = HashSet::default();
    for i in code() {
        for (k, op) in i.operands.iter().enumerate() {
            let Some(ty) =
                crate::compiler::spirv::input::reflect::id(op).and_then(|v| values.get(&v))
            else {
                continue;
            };
            let as_address = match i.class.opcode {
                Op::ConvertPtrToU
                | Op::Bitcast
                | Op::CopyObject
                | Op::Phi
                | Op::Select
                | Op::PtrEqual
                | Op::PtrNotEqual
                | Op::FunctionCall
                | Op::ReturnValue => true,
                // Stored as a value, not stored through.
                Op::Store => k == 1,
                _ => false,
            };
            if !as_address {
                dereferenced.insert(*ty);
            }
        }
    }
    let opaque_ones: HashSet<Word> = pointers.difference(&dereferenced).copied().collect();
    if opaque_ones.is_empty() {
        return;
    }
    let word = ctx.uint(32);
    let opaque = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::TypeStruct,
        None,
        Some(opaque),
        vec![Operand::IdRef(word)],
    ));
    ctx.member_decorate(
        opaque,
        0,
        Decoration::Offset,
        vec![Operand::LiteralBit32(0)],
    );
    for t in ctx.module.types_global_values.iter_mut() {
        if t.result_id.is_some_and(|r| opaque_ones.contains(&r)) {
            t.operands[1] = Operand::IdRef(opaque);
        }
    }
    // Their strides described the packed struct; nothing steps by them now.
    ctx.module.annotations.retain(|a| {
        !(a.operands.get(1) == Some(&Operand::Decoration(Decoration::ArrayStride))
            && id_at(a, 0).is_some_and(|t| opaque_ones.contains(&t)))
    });
    ctx.sort_globals();
}

/// For an access chain on a device address that enters a packed struct:
/// the bytes each index adds, as (run-time index, scale) or (None, a
/// constant number of bytes).
fn packed_chain(
    ctx: &Ctx,
    types: &HashMap<Word, Word>,
    packed: &HashSet<Word>,
    offsets: &HashMap<(Word, u32), u32>,
    constants: &HashMap<Word, u64>,
    i: &Instruction,
) -> Option<Vec<(Option<Word>, u64)>> {
    let element_step = match i.class.opcode {
        Op::PtrAccessChain | Op::InBoundsPtrAccessChain => true,
        Op::AccessChain | Op::InBoundsAccessChain => false,
        _ => return None,
    };
    let base_type = *types.get(&id_at(i, 0)?)?;
    let (class, mut ty) = ctx.pointer_parts(base_type)?;
    if class != StorageClass::PhysicalStorageBuffer {
        return None;
    }
    let mut steps = Vec::new();
    let mut through_packed = false;
    let indexes: Vec<Word> = (1..i.operands.len()).filter_map(|n| id_at(i, n)).collect();
    for (n, &x) in indexes.iter().enumerate() {
        let constant = constants.get(&x).copied();
        if n == 0 && element_step {
            let stride = ctx.decoration_literal(base_type, Decoration::ArrayStride)?;
            steps.push(match constant {
                Some(c) => (None, c.wrapping_mul(u64::from(stride))),
                None => (Some(x), u64::from(stride)),
            });
            continue;
        }
        let t = ctx.global(ty)?;
        match t.class.opcode {
            Op::TypeStruct => {
                through_packed |= packed.contains(&ty);
                let m = u32::try_from(constant?).ok()?;
                steps.push((None, u64::from(*offsets.get(&(ty, m))?)));
                ty = id_at(t, m as usize)?;
            }
            Op::TypeArray | Op::TypeRuntimeArray => {
                let stride = ctx.decoration_literal(ty, Decoration::ArrayStride)?;
                steps.push(match constant {
                    Some(c) => (None, c.wrapping_mul(u64::from(stride))),
                    None => (Some(x), u64::from(stride)),
                });
                ty = id_at(t, 0)?;
            }
            Op::TypeVector => {
                let component = id_at(t, 0)?;
                let size = match ctx.global(component)?.operands.first()? {
                    Operand::LiteralBit32(w) => u64::from(*w / 8),
                    _ => return None,
                };
                steps.push(match constant {
                    Some(c) => (None, c * size),
                    None => (Some(x), size),
                });
                ty = component;
            }
            _ => return None,
        }
    }
    through_packed.then_some(steps)
}

/// Steps of a run-time or negative number of elements on device addresses
/// become integer arithmetic on the 64-bit address. NVIDIA's compiler (driver
/// 580) misplaces the result of two `OpPtrAccessChain` steps on device
/// addresses when one goes back by a run-time amount (`vstore3(v, i, p -
/// k)` stored nowhere); the same address computed as bytes added to the
/// address is right there, and means the same everywhere. Steps on a
/// pointer cast from another pointer (`OpBitcast`) become integer
/// arithmetic too, constant and forwards or not: Mesa 22.3's SPIR-V
/// translation gives such a cast no element size, so lavapipe moved them by
/// nothing (struct copies through byte pointers wrote every word to the
/// first).
fn integer_steps(ctx: &mut Ctx) {
    // Constant steps forwards stay steps.
    let forwards: HashSet<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| match (i.class.opcode, i.operands.first()) {
            (Op::Constant, Some(Operand::LiteralBit32(v))) => *v as i32 >= 0,
            (Op::Constant, Some(Operand::LiteralBit64(v))) => *v as i64 >= 0,
            _ => false,
        })
        .filter_map(|i| i.result_id)
        .collect();
    let types = ctx.value_types();
    let casts: HashSet<Word> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .filter(|i| i.class.opcode == Op::Bitcast)
        .filter_map(|i| i.result_id)
        .collect();
    let u64t = ctx.uint(64);
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for b in functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
        if !b
            .instructions
            .iter()
            .any(|i| i.class.opcode == Op::PtrAccessChain)
        {
            continue;
        }
        let mut out = Prologue {
            code: Vec::with_capacity(b.instructions.len()),
        };
        for i in std::mem::take(&mut b.instructions) {
            let Some((base, step, base_type, stride)) =
                device_step(ctx, &types, &forwards, &casts, &i)
            else {
                out.code.push(i);
                continue;
            };
            let address = out.op(ctx, Op::ConvertPtrToU, u64t, &[base]);
            let moved = add_elements(ctx, &mut out, &types, address, step, u64::from(stride));
            let rest = &i.operands[2..];
            if rest.is_empty() {
                out.code.push(Instruction::new(
                    Op::ConvertUToPtr,
                    i.result_type,
                    i.result_id,
                    vec![Operand::IdRef(moved)],
                ));
            } else {
                let element = out.op(ctx, Op::ConvertUToPtr, base_type, &[moved]);
                let mut operands = vec![Operand::IdRef(element)];
                operands.extend(rest.iter().cloned());
                out.code.push(Instruction::new(
                    Op::AccessChain,
                    i.result_type,
                    i.result_id,
                    operands,
                ));
            }
        }
        b.instructions = out.code;
    }
    ctx.module.functions = functions;
}

/// 64-bit `address` moved by `index` elements of `stride` bytes; element
/// indices are signed.
fn add_elements(
    ctx: &mut Ctx,
    out: &mut Prologue,
    types: &HashMap<Word, Word>,
    address: Word,
    index: Word,
    stride: u64,
) -> Word {
    let u64t = ctx.uint(64);
    let index = match types.get(&index) {
        Some(&t) if t == u64t => index,
        _ => out.op(ctx, Op::SConvert, u64t, &[index]),
    };
    let stride = ctx.const_int(u64t, stride);
    let bytes = out.op(ctx, Op::IMul, u64t, &[index, stride]);
    out.op(ctx, Op::IAdd, u64t, &[address, bytes])
}

/// For a step on a device address that [`integer_steps`] rewrites (not a
/// constant step forwards): its base, step, the base's pointer type and
/// that type's `ArrayStride`.
fn device_step(
    ctx: &Ctx,
    types: &HashMap<Word, Word>,
    forwards: &HashSet<Word>,
    casts: &HashSet<Word>,
    i: &Instruction,
) -> Option<(Word, Word, Word, u32)> {
    if i.class.opcode != Op::PtrAccessChain {
        return None;
    }
    let (base, step) = (id_at(i, 0)?, id_at(i, 1)?);
    let base_type = *types.get(&base)?;
    if ctx.pointer_parts(base_type)?.0 != StorageClass::PhysicalStorageBuffer
        || (forwards.contains(&step) && !casts.contains(&base))
    {
        return None;
    }
    let stride = ctx.decoration_literal(base_type, Decoration::ArrayStride)?;
    Some((base, step, base_type, stride))
}

/// Generic pointer values nothing uses any more (an `OpUndef` whose uses
/// the generic pointer passes resolved), and then the generic pointer
/// types nothing names, go: what remains of the generic address space is
/// what it could not resolve.
fn drop_unused_generic_values(ctx: &mut Ctx) {
    loop {
        // Uses in code and types; names and decorations do not count.
        let m = &ctx.module;
        let used: HashSet<Word> = m
            .types_global_values
            .iter()
            .chain(m.entry_points.iter())
            .chain(m.execution_modes.iter())
            .chain(m.functions.iter().flat_map(|f| f.all_inst_iter()))
            .flat_map(|i| {
                i.result_type
                    .into_iter()
                    .chain(i.operands.iter().filter_map(|o| match o {
                        Operand::IdRef(x) => Some(*x),
                        _ => None,
                    }))
            })
            .collect();
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
        let before = ctx.module.types_global_values.len();
        ctx.module.types_global_values.retain(|i| {
            let Some(r) = i.result_id else { return true };
            let dead_value = matches!(i.class.opcode, Op::Undef | Op::ConstantNull)
                && i.result_type.is_some_and(|t| generic.contains(&t));
            let dead_type = generic.contains(&r);
            !((dead_value || dead_type) && !used.contains(&r))
        });
        if ctx.module.types_global_values.len() == before {
            break;
        }
    }
    let kept: HashSet<Word> = ctx
        .module
        .all_inst_iter()
        .filter_map(|i| i.result_id)
        .collect();
    // Names and decorations of what went go too.
    ctx.module
        .debug_names
        .retain(|i| !matches!(i.operands.first(), Some(Operand::IdRef(t)) if !kept.contains(t)));
    ctx.module
        .annotations
        .retain(|i| !matches!(i.operands.first(), Some(Operand::IdRef(t)) if !kept.contains(t)));
}

/// A load or store through a device address, as the passes that split
/// accesses see it.
struct DeviceAccess<'a> {
    inst: &'a Instruction,
    ptr: Word,
    /// The type the pointer points at.
    pointee: Word,
    store: bool,
    /// Where the memory operands start.
    first: usize,
    /// The `Aligned` literal, if any.
    aligned: Option<u32>,
}

impl DeviceAccess<'_> {
    /// The memory operands with `Aligned` set to `align` (volatile ones
    /// stay volatile).
    fn operands_aligned(&self, align: u32) -> Vec<Operand> {
        let mut access = self.inst.operands[self.first..].to_vec();
        access[1] = Operand::LiteralBit32(align);
        access
    }
}

/// Calls `split` on every load and store through a device address; where
/// it returns code, that code replaces the access.
fn split_device_accesses(
    ctx: &mut Ctx,
    mut split: impl FnMut(&mut Ctx, &DeviceAccess) -> Option<Vec<Instruction>>,
) {
    let types = ctx.value_types();
    for f in 0..ctx.module.functions.len() {
        for b in 0..ctx.module.functions[f].blocks.len() {
            let code = std::mem::take(&mut ctx.module.functions[f].blocks[b].instructions);
            let mut out = Vec::with_capacity(code.len());
            for i in code {
                let store = i.class.opcode == Op::Store;
                if !store && i.class.opcode != Op::Load {
                    out.push(i);
                    continue;
                }
                let first = if store { 2 } else { 1 };
                let access = id_at(&i, 0).and_then(|ptr| {
                    let (sc, pointee) = ctx.pointer_parts(*types.get(&ptr)?)?;
                    (sc == StorageClass::PhysicalStorageBuffer).then_some(DeviceAccess {
                        inst: &i,
                        ptr,
                        pointee,
                        store,
                        first,
                        aligned: match (i.operands.get(first), i.operands.get(first + 1)) {
                            (Some(Operand::MemoryAccess(m)), Some(Operand::LiteralBit32(a)))
                                if m.contains(MemoryAccess::ALIGNED) =>
                            {
                                Some(*a)
                            }
                            _ => None,
                        },
                    })
                });
                match access.and_then(|a| split(ctx, &a)) {
                    Some(code) => out.extend(code),
                    None => out.push(i),
                }
            }
            ctx.module.functions[f].blocks[b].instructions = out;
        }
    }
}

/// 64-bit loads and stores in device memory whose `Aligned` is below 8
/// (members of packed structs: a `long` after an `int`) become two 32-bit
/// accesses, low half first: NVIDIA's driver makes an 8-byte access from
/// the address rounded down to 8 whatever `Aligned` says.
fn split_underaligned_wide_scalars(ctx: &mut Ctx) {
    split_device_accesses(ctx, |ctx, a| {
        let t = ctx.global(a.pointee)?;
        let wide = matches!(t.class.opcode, Op::TypeInt | Op::TypeFloat)
            && t.operands.first() == Some(&Operand::LiteralBit32(64));
        let aligned = a.aligned.filter(|&al| wide && al < 8)?;
        let value = if a.store {
            Some(id_at(a.inst, 1)?)
        } else {
            None
        };
        let u32t = ctx.uint(32);
        let u64t = ctx.uint(64);
        let pair = ctx.vector(u32t, 2);
        let half_ptr = ctx.pointer(StorageClass::PhysicalStorageBuffer, u32t);
        let four = ctx.const_int(u64t, 4);
        let access = a.operands_aligned(aligned.min(4));
        let mut out = Prologue { code: Vec::new() };
        // The two halves' addresses.
        let low = out.op(ctx, Op::ConvertPtrToU, u64t, &[a.ptr]);
        let high = out.op(ctx, Op::IAdd, u64t, &[low, four]);
        let halves = [low, high].map(|at| out.op(ctx, Op::ConvertUToPtr, half_ptr, &[at]));
        if let Some(value) = value {
            let bits = out.op(ctx, Op::Bitcast, pair, &[value]);
            for (k, &p) in halves.iter().enumerate() {
                let part = ctx.fresh();
                out.code.push(Instruction::new(
                    Op::CompositeExtract,
                    Some(u32t),
                    Some(part),
                    vec![Operand::IdRef(bits), Operand::LiteralBit32(k as u32)],
                ));
                let mut ops = vec![Operand::IdRef(p), Operand::IdRef(part)];
                ops.extend(access.iter().cloned());
                out.code.push(Instruction::new(Op::Store, None, None, ops));
            }
        } else {
            let mut parts = Vec::new();
            for &p in &halves {
                let part = ctx.fresh();
                let mut ops = vec![Operand::IdRef(p)];
                ops.extend(access.iter().cloned());
                out.code
                    .push(Instruction::new(Op::Load, Some(u32t), Some(part), ops));
                parts.push(part);
            }
            let bits = out.op(ctx, Op::CompositeConstruct, pair, &parts);
            out.code.push(Instruction::new(
                Op::Bitcast,
                a.inst.result_type,
                a.inst.result_id,
                vec![Operand::IdRef(bits)],
            ));
        }
        Some(out.code)
    })
}

/// Vector loads and stores in device memory whose `Aligned` is below the
/// vector's own alignment (packed structs, `vload`-style casts) become one
/// access per component: some drivers (NVIDIA's) load a whole vector from
/// the address rounded down to the vector's alignment whatever `Aligned`
/// says, while they honour it for scalars.
fn split_underaligned_vectors(ctx: &mut Ctx) {
    split_device_accesses(ctx, |ctx, a| {
        let v = ctx.global(a.pointee)?;
        if v.class.opcode != Op::TypeVector {
            return None;
        }
        let comp = id_at(v, 0)?;
        let n = match v.operands.get(1) {
            Some(Operand::LiteralBit32(n)) => *n,
            _ => return None,
        };
        let bytes = match ctx.global(comp)?.operands.first() {
            Some(Operand::LiteralBit32(b)) => *b / 8,
            _ => return None,
        };
        let aligned = a.aligned.filter(|&al| al < bytes * n.next_power_of_two())?;
        let value = if a.store {
            Some(id_at(a.inst, 1)?)
        } else {
            None
        };
        let comp_ptr = ctx.pointer(StorageClass::PhysicalStorageBuffer, comp);
        // Aligned as a component is.
        let access = a.operands_aligned(aligned.min(bytes));
        let mut out = Vec::new();
        let mut parts = Vec::new();
        for k in 0..n {
            let index = ctx.const_u32(k);
            let at = ctx.fresh();
            out.push(Instruction::new(
                Op::AccessChain,
                Some(comp_ptr),
                Some(at),
                vec![Operand::IdRef(a.ptr), Operand::IdRef(index)],
            ));
            let part = ctx.fresh();
            if let Some(value) = value {
                out.push(Instruction::new(
                    Op::CompositeExtract,
                    Some(comp),
                    Some(part),
                    vec![Operand::IdRef(value), Operand::LiteralBit32(k)],
                ));
                let mut ops = vec![Operand::IdRef(at), Operand::IdRef(part)];
                ops.extend(access.iter().cloned());
                out.push(Instruction::new(Op::Store, None, None, ops));
            } else {
                let mut ops = vec![Operand::IdRef(at)];
                ops.extend(access.iter().cloned());
                out.push(Instruction::new(Op::Load, Some(comp), Some(part), ops));
                parts.push(Operand::IdRef(part));
            }
        }
        if !a.store {
            out.push(Instruction::new(
                Op::CompositeConstruct,
                a.inst.result_type,
                a.inst.result_id,
                parts,
            ));
        }
        Some(out)
    })
}

/// Decorates what device-address pointers point at with OpenCL C's layout.
fn explicit_layout(
    ctx: &mut Ctx,
    types: &HashMap<Word, Instruction>,
    psb_types: &[Word],
) -> Result<(), String> {
    let refs: HashMap<Word, &Instruction> = types.iter().map(|(k, v)| (*k, v)).collect();
    let mut done = HashSet::default();
    let mut todo: Vec<Word> = Vec::new();
    for &p in psb_types {
        let pointee = id_at(&types[&p], 1).ok_or("bad pointer")?;
        // Pointers into opaque types never get dereferenced as data.
        if let Ok((size, _)) = layout(&refs, pointee) {
            ctx.decorate(
                p,
                Decoration::ArrayStride,
                vec![Operand::LiteralBit32(size.max(1))],
            );
        }
        todo.push(pointee);
    }
    while let Some(t) = todo.pop() {
        if !done.insert(t) {
            continue;
        }
        let Some(inst) = types.get(&t) else { continue };
        match inst.class.opcode {
            Op::TypeStruct => {
                let mut offset = 0u32;
                let packed = crate::compiler::spirv::input::reflect::is_packed(t);
                for (m, op) in inst.operands.iter().enumerate() {
                    let Operand::IdRef(mt) = op else { continue };
                    let (ms, ma) = layout(&refs, *mt)?;
                    let ma = if packed { 1 } else { ma };
                    offset = offset.next_multiple_of(ma);
                    ctx.member_decorate(
                        t,
                        m as u32,
                        Decoration::Offset,
                        vec![Operand::LiteralBit32(offset)],
                    );
                    offset += ms;
                    todo.push(*mt);
                }
            }
            Op::TypeArray => {
                let et = id_at(inst, 0).ok_or("bad array")?;
                let (es, _) = layout(&refs, et)?;
                ctx.decorate(t, Decoration::ArrayStride, vec![Operand::LiteralBit32(es)]);
                todo.push(et);
            }
            Op::TypeRuntimeArray => return Err("runtime arrays are not supported".into()),
            _ => {}
        }
    }
    Ok(())
}

/// The width of an integer type.
fn int_width(types: &HashMap<Word, Instruction>, ty: Word) -> Option<u32> {
    let t = types.get(&ty)?;
    match (t.class.opcode, t.operands.first()) {
        (Op::TypeInt, Some(Operand::LiteralBit32(w))) => Some(*w),
        _ => None,
    }
}

/// Records the result of access chain `i` as (object, indexes) in
/// `element_of`, flattening chains on chains into one object, so that
/// pointer arithmetic on it can move its last index.
fn note_element(
    element_of: &mut HashMap<Word, (Word, Vec<Word>)>,
    i: &Instruction,
) -> Result<(), String> {
    let base = id_at(i, 0).ok_or("bad access chain")?;
    let idx: Vec<Word> = (1..i.operands.len()).filter_map(|n| id_at(i, n)).collect();
    if let (Some(r), false) = (i.result_id, idx.is_empty()) {
        let (obj, mut all) = element_of.get(&base).cloned().unwrap_or((base, Vec::new()));
        all.extend(idx);
        element_of.insert(r, (obj, all));
    }
    Ok(())
}

/// `index + addend` as an index of integer type `ty`, the addend first
/// converted (sign-extended or truncated) to `ty` where `converts`.
fn add_to_index(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    ty: Word,
    index: Word,
    addend: Word,
    converts: bool,
) -> Word {
    let mut addend_v = addend;
    if converts {
        addend_v = ctx.fresh();
        out.push(Instruction::new(
            Op::SConvert,
            Some(ty),
            Some(addend_v),
            vec![Operand::IdRef(addend)],
        ));
    }
    let sum = ctx.fresh();
    out.push(Instruction::new(
        Op::IAdd,
        Some(ty),
        Some(sum),
        vec![Operand::IdRef(index), Operand::IdRef(addend_v)],
    ));
    sum
}

/// Carries what each index of `idx` (into an object whose levels have
/// the array `lengths`, see `array_lengths`) steps past its array into the
/// index before it, from the last to the second, where both levels are
/// arrays of known length and `moves(index)` says the index may leave its
/// array (an index a carry changed may always). True if any changed.
fn carry_indexes(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    idx: &mut [Word],
    lengths: &[Option<u64>],
    value_type: &HashMap<Word, Word>,
    new_types: &mut HashMap<Word, Word>,
    moves: impl Fn(Word) -> bool,
) -> Result<bool, String> {
    let type_of = |new_types: &HashMap<Word, Word>, v: Word| -> Result<Word, String> {
        value_type
            .get(&v)
            .or(new_types.get(&v))
            .copied()
            .ok_or_else(|| "index of unknown type".to_string())
    };
    let mut changed = false;
    for level in (1..idx.len()).rev() {
        let (Some(n), Some(_)) = (lengths[level], lengths[level - 1]) else {
            continue;
        };
        let t = idx[level];
        if !changed && !moves(t) {
            continue;
        }
        let tt = type_of(new_types, t)?;
        let (within, carry) = carry_step(ctx, out, tt, t, n);
        new_types.insert(within, tt);
        new_types.insert(carry, tt);
        idx[level] = within;
        let outer = idx[level - 1];
        let ot = type_of(new_types, outer)?;
        let moved = add_to_index(ctx, out, ot, outer, carry, ot != tt);
        new_types.insert(moved, ot);
        idx[level - 1] = moved;
        changed = true;
    }
    Ok(changed)
}

/// Splits index `t` (of integer type `ty`) of an array of `n` elements
/// into the index within the array and the whole arrays it steps over
/// (rounded down, so that a step back from the first element is the last
/// element of the previous array): `(t mod n, t div n)`.
fn carry_step(
    ctx: &mut Ctx,
    out: &mut Vec<Instruction>,
    ty: Word,
    t: Word,
    n: u64,
) -> (Word, Word) {
    let mut op = |ctx: &mut Ctx, op: Op, a: Word, b: Word| {
        let r = ctx.fresh();
        out.push(Instruction::new(
            op,
            Some(ty),
            Some(r),
            vec![Operand::IdRef(a), Operand::IdRef(b)],
        ));
        r
    };
    if n.is_power_of_two() {
        let mask = ctx.const_int(ty, n - 1);
        let shift = ctx.const_int(ty, u64::from(n.trailing_zeros()));
        let within = op(ctx, Op::BitwiseAnd, t, mask);
        let carry = op(ctx, Op::ShiftRightArithmetic, t, shift);
        (within, carry)
    } else {
        let length = ctx.const_int(ty, n);
        let within = op(ctx, Op::SMod, t, length);
        let whole = op(ctx, Op::ISub, t, within);
        let carry = op(ctx, Op::SDiv, whole, length);
        (within, carry)
    }
}

/// Access chains, alignment of device-address accesses.
fn rewrite_accesses(ctx: &mut Ctx, types: &HashMap<Word, Instruction>) -> Result<(), String> {
    let refs: HashMap<Word, &Instruction> = types.iter().map(|(k, v)| (*k, v)).collect();
    let zero_consts: HashSet<Word> = types
        .values()
        .filter(|i| {
            (i.class.opcode == Op::Constant
                && matches!(
                    i.operands.first(),
                    Some(Operand::LiteralBit32(0)) | Some(Operand::LiteralBit64(0))
                ))
                || i.class.opcode == Op::ConstantNull
        })
        .filter_map(|i| i.result_id)
        .collect();
    // Value id -> type id, for every value in the functions and globals.
    let mut value_type: HashMap<Word, Word> = types
        .values()
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    for f in &ctx.module.functions {
        for i in f
            .parameters
            .iter()
            .chain(f.blocks.iter().flat_map(|b| &b.instructions))
        {
            if let (Some(r), Some(t)) = (i.result_id, i.result_type) {
                value_type.insert(r, t);
            }
        }
    }
    let storage = |v: Word| -> Option<StorageClass> {
        let t = types.get(value_type.get(&v)?)?;
        match t.operands.first() {
            Some(Operand::StorageClass(sc)) if t.class.opcode == Op::TypePointer => Some(*sc),
            _ => None,
        }
    };
    let pointee_align = |ptr: Word| -> Option<u32> {
        let t = types.get(value_type.get(&ptr)?)?;
        let pointee = id_at(t, 1)?;
        layout(&refs, pointee).ok().map(|(_, a)| a)
    };
    let pointee_size = |ptr: Word| -> Option<u32> {
        let t = types.get(value_type.get(&ptr)?)?;
        let pointee = id_at(t, 1)?;
        layout(&refs, pointee).ok().map(|(s, _)| s)
    };
    // Pointers to an element of an object, as (object, indexes): pointer
    // arithmetic on them moves the last index, where that index selects an
    // array element (see `last_step_in_array`).
    let mut element_of: HashMap<Word, (Word, Vec<Word>)> = HashMap::default();
    let constant = |id: Word| -> Option<u64> {
        let c = types.get(&id)?;
        match (c.class.opcode, c.operands.first()) {
            (Op::Constant, Some(Operand::LiteralBit32(v))) => Some(u64::from(*v)),
            (Op::Constant, Some(Operand::LiteralBit64(v))) => Some(*v),
            (Op::ConstantNull, _) => Some(0),
            _ => None,
        }
    };
    // For each of `idx` applied to object `obj`: the length of the array
    // it indexes, where that is an array of known length.
    let array_lengths = |obj: Word, idx: &[Word]| -> Vec<Option<u64>> {
        let mut out = Vec::with_capacity(idx.len());
        let mut t = value_type
            .get(&obj)
            .and_then(|pt| types.get(pt))
            .and_then(|pt| id_at(pt, 1));
        for &i in idx {
            let ti = t.and_then(|t| types.get(&t));
            let (length, next) = match ti.map(|ti| ti.class.opcode) {
                Some(Op::TypeArray) => {
                    let ti = ti.expect("matched");
                    (id_at(ti, 1).and_then(constant), id_at(ti, 0))
                }
                Some(Op::TypeStruct) => {
                    let ti = ti.expect("matched");
                    (None, constant(i).and_then(|m| id_at(ti, m as usize)))
                }
                Some(Op::TypeVector | Op::TypeRuntimeArray) => {
                    (None, ti.and_then(|ti| id_at(ti, 0)))
                }
                _ => (None, None),
            };
            out.push(length.filter(|&n| n > 0));
            t = next;
        }
        out
    };
    // Whether the last of `idx`, applied to object `obj`, picks an element
    // of an array: only then is moving it pointer arithmetic. (Moving a
    // vector component or struct member index is not.)
    let last_step_in_array = |obj: Word, idx: &[Word]| -> bool {
        let Some(mut t) = value_type
            .get(&obj)
            .and_then(|pt| types.get(pt))
            .and_then(|pt| id_at(pt, 1))
        else {
            return false;
        };
        for &i in &idx[..idx.len().saturating_sub(1)] {
            let Some(ti) = types.get(&t) else {
                return false;
            };
            t = match ti.class.opcode {
                Op::TypeArray | Op::TypeRuntimeArray | Op::TypeVector => match id_at(ti, 0) {
                    Some(e) => e,
                    None => return false,
                },
                Op::TypeStruct => match constant(i).and_then(|m| id_at(ti, m as usize)) {
                    Some(e) => e,
                    None => return false,
                },
                _ => return false,
            };
        }
        types
            .get(&t)
            .is_some_and(|ti| matches!(ti.class.opcode, Op::TypeArray | Op::TypeRuntimeArray))
    };
    // The opcode that made each pointer, for messages.
    let defs_op: HashMap<Word, Op> = ctx
        .module
        .functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .chain(ctx.module.types_global_values.iter())
        .filter_map(|i| Some((i.result_id?, i.class.opcode)))
        .collect();
    let mut new_types: HashMap<Word, Word> = HashMap::default();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for mut i in std::mem::take(&mut b.instructions) {
                match i.class.opcode {
                    Op::AccessChain | Op::InBoundsAccessChain => {
                        let base = id_at(&i, 0).ok_or("bad access chain")?;
                        if storage(base) != Some(StorageClass::PhysicalStorageBuffer)
                            && !element_of.contains_key(&base)
                            && i.operands.len() > 2
                        {
                            // Front ends fold pointer arithmetic into the
                            // indexes of inner arrays (C's objects are
                            // flat): a run-time inner index may leave its
                            // array, and goes on into the next one.
                            let mut idx: Vec<Word> =
                                (1..i.operands.len()).filter_map(|n| id_at(&i, n)).collect();
                            let lengths = array_lengths(base, &idx);
                            let carried = carry_indexes(
                                ctx,
                                &mut out,
                                &mut idx,
                                &lengths,
                                &value_type,
                                &mut new_types,
                                |x| constant(x).is_none(),
                            )?;
                            if carried {
                                let mut ops = vec![Operand::IdRef(base)];
                                ops.extend(idx.iter().map(|&x| Operand::IdRef(x)));
                                i = Instruction::new(
                                    i.class.opcode,
                                    i.result_type,
                                    i.result_id,
                                    ops,
                                );
                            }
                        }
                        note_element(&mut element_of, &i)?;
                    }
                    Op::PtrAccessChain | Op::InBoundsPtrAccessChain => {
                        let base = id_at(&i, 0).ok_or("bad access chain")?;
                        let step = id_at(&i, 1).ok_or("bad access chain")?;
                        if storage(base) == Some(StorageClass::PhysicalStorageBuffer) {
                            i = Instruction::new(
                                Op::PtrAccessChain,
                                i.result_type,
                                i.result_id,
                                i.operands.clone(),
                            );
                        } else if zero_consts.contains(&step) {
                            let mut ops = i.operands.clone();
                            ops.remove(1);
                            i = Instruction::new(Op::AccessChain, i.result_type, i.result_id, ops);
                            note_element(&mut element_of, &i)?;
                        } else if let Some((obj, idx)) = element_of
                            .get(&base)
                            .filter(|(obj, idx)| last_step_in_array(*obj, idx))
                            .cloned()
                        {
                            // &obj[..][k] + step = &obj[..][k + step].
                            let last = *idx.last().expect("non-empty");
                            let lt = *value_type
                                .get(&last)
                                .or(new_types.get(&last))
                                .ok_or("index of unknown type")?;
                            let converts = value_type.get(&step) != Some(&lt);
                            let sum = add_to_index(ctx, &mut out, lt, last, step, converts);
                            new_types.insert(sum, lt);
                            let mut idx = idx.clone();
                            *idx.last_mut().expect("non-empty") = sum;
                            // C's objects are flat: a step past the end of
                            // an inner array goes on into the next one.
                            let lengths = array_lengths(obj, &idx);
                            carry_indexes(
                                ctx,
                                &mut out,
                                &mut idx,
                                &lengths,
                                &value_type,
                                &mut new_types,
                                |_| true,
                            )?;
                            let mut ops = vec![Operand::IdRef(obj)];
                            ops.extend(idx.iter().map(|&x| Operand::IdRef(x)));
                            ops.extend(i.operands[2..].iter().cloned());
                            i = Instruction::new(Op::AccessChain, i.result_type, i.result_id, ops);
                            note_element(&mut element_of, &i)?;
                        } else {
                            let from = defs_op.get(&base).copied();
                            return Err(format!(
                                "pointer arithmetic on a {:?} object (a pointer from {from:?}) is not supported yet",
                                storage(base).unwrap_or(StorageClass::Function)
                            ));
                        }
                    }
                    Op::ConvertPtrToU
                        if storage(id_at(&i, 0).ok_or("bad conversion")?)
                            == Some(StorageClass::PhysicalStorageBuffer) =>
                    {
                        // Device addresses convert to 64-bit integers only:
                        // `(uint)ptr` truncates the address.
                        let rt = i.result_type.ok_or("conversion without type")?;
                        if int_width(types, rt).is_some_and(|w| w != 64) {
                            let u64t = ctx.uint(64);
                            let wide = ctx.fresh();
                            out.push(Instruction::new(
                                Op::ConvertPtrToU,
                                Some(u64t),
                                Some(wide),
                                i.operands.clone(),
                            ));
                            i = Instruction::new(
                                Op::UConvert,
                                Some(rt),
                                i.result_id,
                                vec![Operand::IdRef(wide)],
                            );
                        }
                    }
                    Op::ConvertUToPtr
                        if i.result_type.and_then(|t| types.get(&t)).is_some_and(|t| {
                            t.operands.first()
                                == Some(&Operand::StorageClass(StorageClass::PhysicalStorageBuffer))
                        }) =>
                    {
                        let v = id_at(&i, 0).ok_or("bad conversion")?;
                        let width = value_type
                            .get(&v)
                            .or(new_types.get(&v))
                            .and_then(|&t| int_width(types, t));
                        if width.is_some_and(|w| w != 64) {
                            let u64t = ctx.uint(64);
                            let wide = ctx.fresh();
                            out.push(Instruction::new(
                                Op::UConvert,
                                Some(u64t),
                                Some(wide),
                                vec![Operand::IdRef(v)],
                            ));
                            i.operands[0] = Operand::IdRef(wide);
                        }
                    }
                    Op::PtrEqual | Op::PtrNotEqual | Op::PtrDiff
                        if id_at(&i, 0).and_then(storage)
                            == Some(StorageClass::PhysicalStorageBuffer) =>
                    {
                        // Device addresses compare and subtract as
                        // integers (Vulkan has these only for logical
                        // pointers).
                        let (x, y) = (
                            id_at(&i, 0).ok_or("malformed comparison")?,
                            id_at(&i, 1).ok_or("malformed comparison")?,
                        );
                        let u64t = ctx.uint(64);
                        let (xu, yu) = (ctx.fresh(), ctx.fresh());
                        for (u, v) in [(xu, x), (yu, y)] {
                            out.push(Instruction::new(
                                Op::ConvertPtrToU,
                                Some(u64t),
                                Some(u),
                                vec![Operand::IdRef(v)],
                            ));
                        }
                        let ops = vec![Operand::IdRef(xu), Operand::IdRef(yu)];
                        i = match i.class.opcode {
                            Op::PtrEqual => {
                                Instruction::new(Op::IEqual, i.result_type, i.result_id, ops)
                            }
                            Op::PtrNotEqual => {
                                Instruction::new(Op::INotEqual, i.result_type, i.result_id, ops)
                            }
                            _ => {
                                // In elements of the pointee type.
                                let size = pointee_size(x)
                                    .ok_or("a pointer difference of unknown element size")?;
                                let bytes = ctx.fresh();
                                out.push(Instruction::new(Op::ISub, Some(u64t), Some(bytes), ops));
                                let size = ctx.const_int(u64t, u64::from(size.max(1)));
                                let rt =
                                    i.result_type.ok_or("a pointer difference without type")?;
                                let wide = if rt == u64t {
                                    i.result_id
                                } else {
                                    Some(ctx.fresh())
                                };
                                let q = Instruction::new(
                                    Op::SDiv,
                                    Some(u64t),
                                    wide,
                                    vec![Operand::IdRef(bytes), Operand::IdRef(size)],
                                );
                                if rt == u64t {
                                    q
                                } else {
                                    out.push(q);
                                    Instruction::new(
                                        Op::UConvert,
                                        Some(rt),
                                        i.result_id,
                                        vec![Operand::IdRef(wide.ok_or("no id")?)],
                                    )
                                }
                            }
                        };
                    }
                    // A copy of an element's pointer (a cast between types
                    // that are one here, such as `half *` and `short *`)
                    // points at the same element, for pointer arithmetic.
                    Op::CopyObject => {
                        if let (Some(r), Some(src)) = (i.result_id, id_at(&i, 0))
                            && let Some(element) = element_of.get(&src).cloned()
                        {
                            element_of.insert(r, element);
                        }
                    }
                    Op::Load | Op::Store => {
                        let ptr = id_at(&i, 0).ok_or("bad memory access")?;
                        if storage(ptr) == Some(StorageClass::PhysicalStorageBuffer) {
                            let first_mem = if i.class.opcode == Op::Load { 1 } else { 2 };
                            let has_aligned = matches!(i.operands.get(first_mem), Some(Operand::MemoryAccess(m)) if m.contains(MemoryAccess::ALIGNED));
                            if !has_aligned {
                                let align = pointee_align(ptr).unwrap_or(1);
                                match i.operands.get_mut(first_mem) {
                                    Some(Operand::MemoryAccess(m)) => {
                                        // Aligned's literal comes first among the operands' literals.
                                        *m |= MemoryAccess::ALIGNED;
                                        i.operands
                                            .insert(first_mem + 1, Operand::LiteralBit32(align));
                                    }
                                    _ => {
                                        i.operands
                                            .push(Operand::MemoryAccess(MemoryAccess::ALIGNED));
                                        i.operands.push(Operand::LiteralBit32(align));
                                    }
                                }
                            }
                        }
                    }
                    Op::CopyMemory => {
                        // A typed copy is a load and a store.
                        let (dst, src) = (
                            id_at(&i, 0).ok_or("bad copy")?,
                            id_at(&i, 1).ok_or("bad copy")?,
                        );
                        let pointee = types
                            .get(
                                value_type
                                    .get(&src)
                                    .or(new_types.get(&src))
                                    .ok_or("copy of unknown type")?,
                            )
                            .and_then(|t| id_at(t, 1))
                            .ok_or("copy through a non-pointer")?;
                        let v = ctx.fresh();
                        let align = |p: Word| -> Vec<Operand> {
                            if storage(p) == Some(StorageClass::PhysicalStorageBuffer) {
                                vec![
                                    Operand::MemoryAccess(MemoryAccess::ALIGNED),
                                    Operand::LiteralBit32(pointee_align(p).unwrap_or(1)),
                                ]
                            } else {
                                Vec::new()
                            }
                        };
                        let mut load_ops = vec![Operand::IdRef(src)];
                        load_ops.extend(align(src));
                        out.push(Instruction::new(Op::Load, Some(pointee), Some(v), load_ops));
                        let mut store_ops = vec![Operand::IdRef(dst), Operand::IdRef(v)];
                        store_ops.extend(align(dst));
                        i = Instruction::new(Op::Store, None, None, store_ops);
                    }
                    Op::CopyMemorySized => {
                        return Err(
                            "OpCopyMemorySized (memcpy of a computed size) is not supported yet"
                                .into(),
                        );
                    }
                    Op::PtrCastToGeneric | Op::GenericCastToPtr | Op::GenericCastToPtrExplicit => {
                        return Err("generic address space pointers are not supported yet".into());
                    }
                    _ => {}
                }
                out.push(i);
            }
            b.instructions = out;
        }
    }
    ctx.module.functions = functions;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    #[test]
    fn device_pointers_compare_and_subtract_as_integers() {
        let mut ctx = crate::compiler::spirv::common::ctx::assemble_for(
            "OpCapability Addresses
            OpCapability Kernel
            OpCapability Int64
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %k \"k\"
            %void = OpTypeVoid
            %bool = OpTypeBool
            %uint = OpTypeInt 32 0
            %ulong = OpTypeInt 64 0
            %g_uint = OpTypePointer CrossWorkgroup %uint
            %fn = OpTypeFunction %void %g_uint %g_uint
            %k = OpFunction %void None %fn
            %a = OpFunctionParameter %g_uint
            %b = OpFunctionParameter %g_uint
            %l = OpLabel
            %eq = OpPtrEqual %bool %a %b
            %ne = OpPtrNotEqual %bool %a %b
            %d = OpPtrDiff %ulong %a %b
            %d32 = OpPtrDiff %uint %a %b
            OpReturn
            OpFunctionEnd",
            "spv1.4",
        );
        run(&mut ctx).unwrap();
        let ops: Vec<Op> = ctx.module.functions[0]
            .all_inst_iter()
            .map(|i| i.class.opcode)
            .collect();
        assert!(
            !ops.iter()
                .any(|o| matches!(o, Op::PtrEqual | Op::PtrNotEqual | Op::PtrDiff))
        );
        assert!(ops.contains(&Op::IEqual) && ops.contains(&Op::INotEqual));
        // Bytes, then elements of four bytes; the narrow one converted.
        assert_eq!(ops.iter().filter(|&&o| o == Op::SDiv).count(), 2);
        assert!(ops.contains(&Op::UConvert));
    }

    #[test]
    fn underaligned_vector_accesses_go_by_component() {
        let mut ctx = assemble(
            "OpCapability Addresses
            OpCapability Kernel
            OpCapability Int64
            OpMemoryModel Physical64 OpenCL
            OpEntryPoint Kernel %k \"k\"
            %void = OpTypeVoid
            %uint = OpTypeInt 32 0
            %v4 = OpTypeVector %uint 4
            %g_v4 = OpTypePointer CrossWorkgroup %v4
            %fn = OpTypeFunction %void %g_v4 %g_v4
            %k = OpFunction %void None %fn
            %a = OpFunctionParameter %g_v4
            %b = OpFunctionParameter %g_v4
            %l = OpLabel
            %x = OpLoad %v4 %a Aligned 1
            OpStore %b %x Volatile|Aligned 2
            %y = OpLoad %v4 %a Aligned 16
            OpStore %b %y Aligned 16
            OpReturn
            OpFunctionEnd",
        );
        run(&mut ctx).unwrap();
        let code: Vec<&Instruction> = ctx.module.functions[0].all_inst_iter().collect();
        let count = |op| code.iter().filter(|i| i.class.opcode == op).count();
        // Four loads and four stores for the first pair, one each for the second.
        assert_eq!(count(Op::Load), 5);
        assert_eq!(count(Op::Store), 5);
        assert_eq!(count(Op::CompositeConstruct), 1);
        let volatile_stores = code
            .iter()
            .filter(|i| i.class.opcode == Op::Store)
            .filter(|i| {
                matches!(i.operands.get(2), Some(Operand::MemoryAccess(m)) if m.contains(MemoryAccess::VOLATILE))
            })
            .count();
        assert_eq!(volatile_stores, 4);
    }
}
