//! Pass 13 (phase 3): Work-item functions. OpenCL's 64-bit built-in
//! variables become Vulkan's 32-bit ones (widened where they are read),
//! plus the push-constant members for what Vulkan lacks: global size,
//! global offset and the work dimension come from the host; the work-group
//! size is a specialization-constant vector (SpecIds 0, 1, 2) so one module
//! serves every local size. An NDRange may run as several dispatches (more
//! groups than one dispatch allows, or partial work-groups run with a
//! smaller size), so the group id is Vulkan's plus the dispatch's group
//! offset, the global id is group id * enqueued size + local id + global
//! offset, and the number of groups is computed from the global and
//! enqueued sizes; get_local_size is the dispatch's actual size.
//!
//! Takes the kernel after `groups`, the `Block`, and whether it runs as 1-D
//! work-groups. Guarantees no OpenCL work-item built-in variable is left:
//! each read is Vulkan's 32-bit built-in, widened, or a push-constant
//! member; the work-group size is the specialization-constant vector of
//! SpecIds 0, 1 and 2.

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{BuiltIn, Decoration, Op, StorageClass, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::p3_interface::interface::Block;

/// The three specialization constants that size the work-group.
pub const LOCAL_SIZE_SPEC_IDS: [u32; 3] = [0, 1, 2];

fn builtin_of(ctx: &Ctx, var: Word) -> Option<BuiltIn> {
    ctx.module.annotations.iter().find_map(|a| {
        (a.class.opcode == Op::Decorate && id_at(a, 0) == Some(var)).then(|| {
            match a.operands.get(1..3) {
                Some(
                    [
                        Operand::Decoration(Decoration::BuiltIn),
                        Operand::BuiltIn(b),
                    ],
                ) => Some(*b),
                _ => None,
            }
        })?
    })
}

/// The work-group size vector (creating it on first use).
pub fn workgroup_size(ctx: &mut Ctx) -> Word {
    let u32t = ctx.uint(32);
    let v3 = ctx.vector(u32t, 3);
    // The vector made here (its first component is SpecId 0), not OpenCL's
    // variable of the same built-in.
    let ours = ctx
        .module
        .types_global_values
        .iter()
        .filter(|g| g.class.opcode == Op::SpecConstantComposite)
        .find(|g| {
            id_at(g, 0).is_some_and(|c| {
                ctx.decoration_literal(c, Decoration::SpecId) == Some(LOCAL_SIZE_SPEC_IDS[0])
            })
        })
        .and_then(|g| g.result_id);
    if let Some(id) = ours {
        return id;
    }
    let mut comps = Vec::new();
    for spec_id in LOCAL_SIZE_SPEC_IDS {
        let c = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::SpecConstant,
            Some(u32t),
            Some(c),
            vec![Operand::LiteralBit32(1)],
        ));
        ctx.decorate(c, Decoration::SpecId, vec![Operand::LiteralBit32(spec_id)]);
        comps.push(Operand::IdRef(c));
    }
    let id = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::SpecConstantComposite,
        Some(v3),
        Some(id),
        comps,
    ));
    ctx.decorate(
        id,
        Decoration::BuiltIn,
        vec![Operand::BuiltIn(BuiltIn::WorkgroupSize)],
    );
    id
}

/// Runs the kernel as 1-D Vulkan work-groups of the OpenCL work-group's
/// linear size: Vulkan's WorkgroupSize becomes (x * y * z, 1, 1) while
/// [`workgroup_size`] stays OpenCL's, and local ids are computed from the
/// local linear index. Sub-groups then follow the local linear id, as
/// drivers lay out sub-groups along x.
pub fn flatten_workgroup(ctx: &mut Ctx) {
    let ours = workgroup_size(ctx);
    ctx.module.annotations.retain(|a| {
        !(id_at(a, 0) == Some(ours)
            && a.operands.get(1) == Some(&Operand::Decoration(Decoration::BuiltIn)))
    });
    let u32t = ctx.uint(32);
    let v3 = ctx.vector(u32t, 3);
    let comps: Vec<Word> = ctx
        .global(ours)
        .map(|g| (0..3).filter_map(|k| id_at(g, k)).collect())
        .unwrap_or_default();
    let spec_mul = |ctx: &mut Ctx, a: Word, b: Word| {
        let r = ctx.fresh();
        ctx.module.types_global_values.push(Instruction::new(
            Op::SpecConstantOp,
            Some(u32t),
            Some(r),
            vec![
                Operand::LiteralSpecConstantOpInteger(Op::IMul),
                Operand::IdRef(a),
                Operand::IdRef(b),
            ],
        ));
        r
    };
    let xy = spec_mul(ctx, comps[0], comps[1]);
    let xyz = spec_mul(ctx, xy, comps[2]);
    let one = ctx.const_u32(1);
    let flat = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::SpecConstantComposite,
        Some(v3),
        Some(flat),
        vec![
            Operand::IdRef(xyz),
            Operand::IdRef(one),
            Operand::IdRef(one),
        ],
    ));
    ctx.decorate(
        flat,
        Decoration::BuiltIn,
        vec![Operand::BuiltIn(BuiltIn::WorkgroupSize)],
    );
}

/// A new 32-bit Vulkan built-in input variable.
fn vulkan_input(ctx: &mut Ctx, b: BuiltIn, vector: bool) -> Word {
    let u32t = ctx.uint(32);
    let t = if vector { ctx.vector(u32t, 3) } else { u32t };
    let p = ctx.pointer(StorageClass::Input, t);
    let v = ctx.fresh();
    ctx.module.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(p),
        Some(v),
        vec![Operand::StorageClass(StorageClass::Input)],
    ));
    ctx.decorate(v, Decoration::BuiltIn, vec![Operand::BuiltIn(b)]);
    v
}

/// Appends `op a b` of type `ty` to `code`.
fn binop(ctx: &mut Ctx, code: &mut Vec<Instruction>, op: Op, ty: Word, a: Word, b: Word) -> Word {
    let r = ctx.fresh();
    code.push(Instruction::new(
        op,
        Some(ty),
        Some(r),
        vec![Operand::IdRef(a), Operand::IdRef(b)],
    ));
    r
}

/// Appends a one-operand instruction (a load, a conversion) to `code`.
fn unop(ctx: &mut Ctx, code: &mut Vec<Instruction>, op: Op, ty: Word, a: Word) -> Word {
    let r = ctx.fresh();
    code.push(Instruction::new(
        op,
        Some(ty),
        Some(r),
        vec![Operand::IdRef(a)],
    ));
    r
}

fn extract(ctx: &mut Ctx, code: &mut Vec<Instruction>, ty: Word, v: Word, k: u32) -> Word {
    let r = ctx.fresh();
    code.push(Instruction::new(
        Op::CompositeExtract,
        Some(ty),
        Some(r),
        vec![Operand::IdRef(v), Operand::LiteralBit32(k)],
    ));
    r
}

pub fn run(ctx: &mut Ctx, block: &Block, flat: bool) -> Result<(), String> {
    // OpenCL built-in variables and what they are.
    let vars: Vec<(Word, BuiltIn)> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable
                && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Input))
        })
        .filter_map(|i| i.result_id)
        .collect::<Vec<_>>()
        .into_iter()
        .filter_map(|v| builtin_of(ctx, v).map(|b| (v, b)))
        .collect();
    let u32t = ctx.uint(32);
    let v3 = ctx.vector(u32t, 3);
    let mut replacement: HashMap<Word, BuiltIn> = HashMap::default();
    let mut vk_vars: HashMap<BuiltIn, Word> = HashMap::default();
    for &(v, b) in &vars {
        // The Vulkan built-ins each OpenCL one is computed from: an
        // NDRange may run as several dispatches, so ids that span the
        // whole NDRange come from the dispatch's group offset, the
        // enqueued work-group size and Vulkan's per-dispatch ids.
        let needs: &[BuiltIn] = match b {
            BuiltIn::GlobalInvocationId | BuiltIn::GlobalLinearId => {
                &[BuiltIn::WorkgroupId, BuiltIn::LocalInvocationId]
            }
            BuiltIn::LocalInvocationId => &[BuiltIn::LocalInvocationId],
            BuiltIn::WorkgroupId => &[BuiltIn::WorkgroupId],
            BuiltIn::LocalInvocationIndex => &[BuiltIn::LocalInvocationIndex],
            BuiltIn::NumWorkgroups
            | BuiltIn::WorkgroupSize
            | BuiltIn::EnqueuedWorkgroupSize
            | BuiltIn::GlobalSize
            | BuiltIn::GlobalOffset
            | BuiltIn::WorkDim => &[],
            // Vulkan's own, kept by the sub-group pass.
            BuiltIn::SubgroupSize
            | BuiltIn::SubgroupId
            | BuiltIn::SubgroupLocalInvocationId
            | BuiltIn::NumSubgroups
            | BuiltIn::SubgroupEqMask
            | BuiltIn::SubgroupGeMask
            | BuiltIn::SubgroupGtMask
            | BuiltIn::SubgroupLeMask
            | BuiltIn::SubgroupLtMask => continue,
            other => {
                return Err(format!(
                    "the work-item built-in {other:?} is not supported yet"
                ));
            }
        };
        for &n in needs {
            // Flat work-groups compute the local id from the index.
            let n = if flat && n == BuiltIn::LocalInvocationId {
                BuiltIn::LocalInvocationIndex
            } else {
                n
            };
            vk_vars
                .entry(n)
                .or_insert_with(|| vulkan_input(ctx, n, n != BuiltIn::LocalInvocationIndex));
        }
        replacement.insert(v, b);
    }
    let pc_u32 = ctx.pointer(StorageClass::PushConstant, u32t);
    let member = |ctx: &mut Ctx, code: &mut Vec<Instruction>, m: u32| -> Word {
        let idx = ctx.const_u32(m);
        let ptr = ctx.fresh();
        code.push(Instruction::new(
            Op::AccessChain,
            Some(pc_u32),
            Some(ptr),
            vec![Operand::IdRef(block.var), Operand::IdRef(idx)],
        ));
        unop(ctx, code, Op::Load, u32t, ptr)
    };
    let vec3_from_push = |ctx: &mut Ctx, code: &mut Vec<Instruction>, first: u32| -> Word {
        let c: Vec<Word> = (0..3).map(|i| member(ctx, code, first + i)).collect();
        let v = ctx.fresh();
        code.push(Instruction::new(
            Op::CompositeConstruct,
            Some(v3),
            Some(v),
            c.into_iter().map(Operand::IdRef).collect(),
        ));
        v
    };
    // The id within the work-group.
    let local_id =
        |ctx: &mut Ctx, code: &mut Vec<Instruction>, vk: &HashMap<BuiltIn, Word>, flat: bool| {
            if !flat {
                return unop(ctx, code, Op::Load, v3, vk[&BuiltIn::LocalInvocationId]);
            }
            let i = unop(
                ctx,
                code,
                Op::Load,
                u32t,
                vk[&BuiltIn::LocalInvocationIndex],
            );
            let size = workgroup_size(ctx);
            let sx = extract(ctx, code, u32t, size, 0);
            let sy = extract(ctx, code, u32t, size, 1);
            let x = binop(ctx, code, Op::UMod, u32t, i, sx);
            let t = binop(ctx, code, Op::UDiv, u32t, i, sx);
            let y = binop(ctx, code, Op::UMod, u32t, t, sy);
            let z = binop(ctx, code, Op::UDiv, u32t, t, sy);
            let v = ctx.fresh();
            code.push(Instruction::new(
                Op::CompositeConstruct,
                Some(v3),
                Some(v),
                vec![Operand::IdRef(x), Operand::IdRef(y), Operand::IdRef(z)],
            ));
            v
        };
    // The group id across the whole NDRange.
    let group_id = |ctx: &mut Ctx, code: &mut Vec<Instruction>, vk: &HashMap<BuiltIn, Word>| {
        let w = unop(ctx, code, Op::Load, v3, vk[&BuiltIn::WorkgroupId]);
        let g = vec3_from_push(ctx, code, block.group_offset);
        binop(ctx, code, Op::IAdd, v3, w, g)
    };
    // The global id without the global offset: group id times the
    // enqueued size plus the local id (a partial group starts where the
    // uniform ones end).
    let id_from_zero = |ctx: &mut Ctx, code: &mut Vec<Instruction>, vk: &HashMap<BuiltIn, Word>| {
        let g = group_id(ctx, code, vk);
        let e = vec3_from_push(ctx, code, block.enqueued_local_size);
        let base = binop(ctx, code, Op::IMul, v3, g, e);
        let l = local_id(ctx, code, vk, flat);
        binop(ctx, code, Op::IAdd, v3, base, l)
    };
    // Values loaded from OpenCL built-in variables, by what they hold.
    let mut loaded: HashMap<Word, BuiltIn> = HashMap::default();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for f in &mut functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for i in std::mem::take(&mut b.instructions) {
                let src = (i.class.opcode == Op::Load).then(|| id_at(&i, 0)).flatten();
                let Some(kind) = src.and_then(|s| replacement.get(&s).copied()) else {
                    out.push(i);
                    continue;
                };
                let rty = i.result_type.ok_or("load without type")?;
                let rid = i.result_id.ok_or("load without id")?;
                let mut code = Vec::new();
                let (value, from) = match kind {
                    BuiltIn::WorkDim => (member(ctx, &mut code, block.work_dim), u32t),
                    BuiltIn::GlobalSize => (vec3_from_push(ctx, &mut code, block.global_size), v3),
                    BuiltIn::GlobalOffset => {
                        (vec3_from_push(ctx, &mut code, block.global_offset), v3)
                    }
                    BuiltIn::WorkgroupSize => (workgroup_size(ctx), v3),
                    BuiltIn::EnqueuedWorkgroupSize => (
                        vec3_from_push(ctx, &mut code, block.enqueued_local_size),
                        v3,
                    ),
                    BuiltIn::NumWorkgroups => {
                        // ceil(global / enqueued), as (global - 1) / enqueued + 1
                        // so a global size near 2^32 does not overflow.
                        let s = vec3_from_push(ctx, &mut code, block.global_size);
                        let e = vec3_from_push(ctx, &mut code, block.enqueued_local_size);
                        let one = ctx.const_u32(1);
                        let ones = ctx.fresh();
                        ctx.module.types_global_values.push(Instruction::new(
                            Op::ConstantComposite,
                            Some(v3),
                            Some(ones),
                            vec![Operand::IdRef(one); 3],
                        ));
                        let t = binop(ctx, &mut code, Op::ISub, v3, s, ones);
                        let t = binop(ctx, &mut code, Op::UDiv, v3, t, e);
                        (binop(ctx, &mut code, Op::IAdd, v3, t, ones), v3)
                    }
                    BuiltIn::WorkgroupId => (group_id(ctx, &mut code, &vk_vars), v3),
                    BuiltIn::GlobalInvocationId => {
                        let id = id_from_zero(ctx, &mut code, &vk_vars);
                        let off = vec3_from_push(ctx, &mut code, block.global_offset);
                        (binop(ctx, &mut code, Op::IAdd, v3, id, off), v3)
                    }
                    BuiltIn::GlobalLinearId => {
                        // In the result's width: the NDRange may hold more
                        // than 2^32 work-items.
                        let id = id_from_zero(ctx, &mut code, &vk_vars);
                        let size = vec3_from_push(ctx, &mut code, block.global_size);
                        let part = |ctx: &mut Ctx, code: &mut Vec<Instruction>, v, k| {
                            let c = extract(ctx, code, u32t, v, k);
                            if rty == u32t {
                                c
                            } else {
                                unop(ctx, code, Op::UConvert, rty, c)
                            }
                        };
                        let (x, y, z) = (
                            part(ctx, &mut code, id, 0),
                            part(ctx, &mut code, id, 1),
                            part(ctx, &mut code, id, 2),
                        );
                        let sx = part(ctx, &mut code, size, 0);
                        let sy = part(ctx, &mut code, size, 1);
                        let t = binop(ctx, &mut code, Op::IMul, rty, z, sy);
                        let t = binop(ctx, &mut code, Op::IAdd, rty, t, y);
                        let t = binop(ctx, &mut code, Op::IMul, rty, t, sx);
                        (binop(ctx, &mut code, Op::IAdd, rty, t, x), rty)
                    }
                    BuiltIn::LocalInvocationIndex => {
                        (unop(ctx, &mut code, Op::Load, u32t, vk_vars[&kind]), u32t)
                    }
                    BuiltIn::LocalInvocationId => (local_id(ctx, &mut code, &vk_vars, flat), v3),
                    _ => (unop(ctx, &mut code, Op::Load, v3, vk_vars[&kind]), v3),
                };
                // Widen to the OpenCL type (size_t vectors, or uint).
                if rty == from {
                    code.push(Instruction::new(
                        Op::CopyObject,
                        Some(rty),
                        Some(rid),
                        vec![Operand::IdRef(value)],
                    ));
                } else {
                    code.push(Instruction::new(
                        Op::UConvert,
                        Some(rty),
                        Some(rid),
                        vec![Operand::IdRef(value)],
                    ));
                }
                out.extend(code);
                loaded.insert(rid, kind);
            }
            b.instructions = out;
        }
    }
    out_of_range_dimensions(ctx, &mut functions, &loaded);
    ctx.module.functions = functions;
    // The OpenCL variables are gone.
    let gone: Vec<Word> = replacement.keys().copied().collect();
    ctx.forget_globals(&gone.iter().copied().collect());
    Ok(())
}

/// Work-item functions take a dimension that may be out of range: then
/// the sizes are 1 and the ids and offsets 0 (OpenCL C 6.15.1). A
/// constant dimension of 3 or more becomes that value; a variable one is
/// tested.
fn out_of_range_dimensions(
    ctx: &mut Ctx,
    functions: &mut [rspirv::dr::Function],
    loaded: &HashMap<Word, BuiltIn>,
) {
    let default_of = |b: BuiltIn| -> u64 {
        match b {
            BuiltIn::GlobalSize
            | BuiltIn::WorkgroupSize
            | BuiltIn::EnqueuedWorkgroupSize
            | BuiltIn::NumWorkgroups => 1,
            _ => 0,
        }
    };
    let bool_ty = ctx.ty(Op::TypeBool, vec![]);
    let types: HashMap<Word, Word> = functions
        .iter()
        .flat_map(|f| f.all_inst_iter())
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    for b in functions.iter_mut().flat_map(|f| &mut f.blocks) {
        let mut out = Vec::with_capacity(b.instructions.len());
        for i in std::mem::take(&mut b.instructions) {
            let source = id_at(&i, 0).and_then(|v| loaded.get(&v).copied());
            let (Some(kind), Some(rty), Some(rid)) = (source, i.result_type, i.result_id) else {
                out.push(i);
                continue;
            };
            match (i.class.opcode, i.operands.get(1)) {
                (Op::CompositeExtract, Some(Operand::LiteralBit32(k))) if *k >= 3 => {
                    let c = ctx.const_int(rty, default_of(kind));
                    out.push(Instruction::new(
                        Op::CopyObject,
                        Some(rty),
                        Some(rid),
                        vec![Operand::IdRef(c)],
                    ));
                }
                (Op::VectorExtractDynamic, Some(Operand::IdRef(index))) => {
                    let index = *index;
                    let index_ty = types
                        .get(&index)
                        .copied()
                        .or_else(|| ctx.type_of(index))
                        .unwrap_or(rty);
                    let (three, zero) = (ctx.const_int(index_ty, 3), ctx.const_int(index_ty, 0));
                    let (inside, safe, value) = (ctx.fresh(), ctx.fresh(), ctx.fresh());
                    let fallback = ctx.const_int(rty, default_of(kind));
                    out.push(Instruction::new(
                        Op::ULessThan,
                        Some(bool_ty),
                        Some(inside),
                        vec![Operand::IdRef(index), Operand::IdRef(three)],
                    ));
                    out.push(Instruction::new(
                        Op::Select,
                        Some(index_ty),
                        Some(safe),
                        vec![
                            Operand::IdRef(inside),
                            Operand::IdRef(index),
                            Operand::IdRef(zero),
                        ],
                    ));
                    out.push(Instruction::new(
                        Op::VectorExtractDynamic,
                        Some(rty),
                        Some(value),
                        vec![i.operands[0].clone(), Operand::IdRef(safe)],
                    ));
                    out.push(Instruction::new(
                        Op::Select,
                        Some(rty),
                        Some(rid),
                        vec![
                            Operand::IdRef(inside),
                            Operand::IdRef(value),
                            Operand::IdRef(fallback),
                        ],
                    ));
                }
                _ => out.push(i),
            }
        }
        b.instructions = out;
    }
}

#[cfg(test)]
mod tests {
    use rspirv::binary::Assemble;
    use rspirv::spirv::{
        AddressingModel, Capability, ExecutionModel, FunctionControl, MemoryModel,
    };

    use super::*;
    use crate::compiler::spirv::input::reflect::{ArgKind, KernelArg, KernelInfo};
    use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

    /// `kernel void k(global ulong *out) { *out = get_global_id(0); }`
    fn global_id_kernel() -> (Vec<u32>, KernelInfo) {
        let mut b = rspirv::dr::Builder::new();
        b.set_version(1, 0);
        for c in [Capability::Addresses, Capability::Kernel, Capability::Int64] {
            b.capability(c);
        }
        b.memory_model(AddressingModel::Physical64, MemoryModel::OpenCL);
        let void = b.type_void();
        let u64t = b.type_int(64, 0);
        let v3 = b.type_vector(u64t, 3);
        let in_ptr = b.type_pointer(None, StorageClass::Input, v3);
        let gid = b.variable(in_ptr, None, StorageClass::Input, None);
        b.decorate(
            gid,
            Decoration::BuiltIn,
            vec![Operand::BuiltIn(BuiltIn::GlobalInvocationId)],
        );
        let gptr = b.type_pointer(None, StorageClass::CrossWorkgroup, u64t);
        let fty = b.type_function(void, vec![gptr]);
        let f = b
            .begin_function(void, None, FunctionControl::NONE, fty)
            .unwrap();
        let out = b.function_parameter(gptr).unwrap();
        b.begin_block(None).unwrap();
        let all = b.load(v3, None, gid, None, vec![]).unwrap();
        let x = b.composite_extract(u64t, None, all, vec![0]).unwrap();
        b.store(out, x, None, vec![]).unwrap();
        b.ret().unwrap();
        b.end_function().unwrap();
        b.entry_point(ExecutionModel::Kernel, f, "k", vec![gid]);
        let info = KernelInfo {
            name: "k".into(),
            args: vec![KernelArg {
                name: "out".into(),
                kind: ArgKind::Buffer,
                address: 0,
                access: 0,
                type_name: String::new(),
                type_qual: 0,
            }],
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
    fn kernels_keep_denormals_where_the_device_promises_to() {
        let (words, info) = global_id_kernel();
        for keep in [false, true] {
            let caps = DeviceCaps {
                max_push_constants: 128,
                denorm_preserve_f32: keep,
                ..Default::default()
            };
            // The rewrite validates the module it returns.
            let r = crate::compiler::spirv::rewrite(&words, &info, &caps).unwrap();
            let m = rspirv::dr::load_words(&r.words).unwrap();
            let mode = m.execution_modes.iter().any(|i| {
                i.operands.get(1)
                    == Some(&Operand::ExecutionMode(
                        rspirv::spirv::ExecutionMode::DenormPreserve,
                    ))
            });
            assert_eq!(mode, keep);
        }
    }

    #[test]
    fn global_id_spans_split_dispatches() {
        let (words, info) = global_id_kernel();
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        // The rewrite validates the module it returns.
        let r = crate::compiler::spirv::rewrite(&words, &info, &caps).unwrap();
        let m = rspirv::dr::load_words(&r.words).unwrap();
        let builtins: Vec<BuiltIn> = m
            .annotations
            .iter()
            .filter_map(|a| match a.operands.get(1..3) {
                Some(
                    [
                        Operand::Decoration(Decoration::BuiltIn),
                        Operand::BuiltIn(b),
                    ],
                ) => Some(*b),
                _ => None,
            })
            .collect();
        // Group id (per dispatch) and local id, not Vulkan's global id,
        // which restarts at each dispatch.
        assert!(builtins.contains(&BuiltIn::WorkgroupId));
        assert!(builtins.contains(&BuiltIn::LocalInvocationId));
        assert!(!builtins.contains(&BuiltIn::GlobalInvocationId));
        // The group offset and enqueued size come from the push constants.
        let multiplies = m
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
            .filter(|i| i.class.opcode == Op::IMul)
            .count();
        assert_eq!(multiplies, 1);
    }
}
