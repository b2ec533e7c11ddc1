//! Kernel metadata read from an OpenCL SPIR-V module: kernel names and, per
//! argument, its name, address/access/type qualifiers and type name, plus
//! `reqd_work_group_size`, `work_group_size_hint` and `vec_type_hint`.
//!
//! Argument type names and qualifiers come from the `kernel_arg_type.*`
//! and `kernel_arg_type_qual.*` strings llvm-spirv keeps for vkcl; address
//! and access qualifiers from the parameter types themselves.

use opencl_sys::*;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{
    Decoration, ExecutionMode, ExecutionModel, FunctionParameterAttribute, Op, StorageClass,
};

use crate::compiler::spirv::common::HashMap;

/// What an argument is, as clSetKernelArg will need to know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A `__global` or `__constant` pointer: a buffer (or null).
    Buffer,
    /// A `__local` pointer: a size only.
    Local,
    /// A value of this many bytes (scalars, vectors, structs).
    Value(u32),
    Image,
    Sampler,
    /// A pipe (`read_only pipe T`, `write_only pipe T`): a pipe object,
    /// passed to the kernel as its buffer's address.
    Pipe,
    /// A device queue (`queue_t`): an on-device command queue.
    Queue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArg {
    pub name: String,
    pub kind: ArgKind,
    pub address: cl_kernel_arg_address_qualifier,
    pub access: cl_kernel_arg_access_qualifier,
    pub type_name: String,
    /// A `cl_bitfield` (64 bits) in the Khronos headers, whatever width
    /// opencl-sys gives `cl_kernel_arg_type_qualifier`.
    pub type_qual: cl_bitfield,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    pub args: Vec<KernelArg>,
    pub reqd_work_group_size: Option<[u32; 3]>,
    pub work_group_size_hint: Option<[u32; 3]>,
    pub vec_type_hint: Option<String>,
    /// `intel_reqd_sub_group_size`: the sub-group size the kernel needs.
    pub reqd_sub_group_size: Option<u32>,
    /// Bytes of `__local` variables the kernel declares.
    pub local_bytes: u64,
    /// Bytes of the private (function) variables of the kernel and of the
    /// functions it calls, each function counted once.
    pub private_bytes: u64,
    /// A block kernel: the body of a block that kernels enqueue on the
    /// device, not a kernel applications see.
    pub block: bool,
}

impl KernelInfo {
    /// CL_KERNEL_ATTRIBUTES: the attributes as OpenCL C spells them.
    pub fn attributes(&self) -> String {
        let mut a = Vec::new();
        if let Some([x, y, z]) = self.reqd_work_group_size {
            a.push(format!("reqd_work_group_size({x},{y},{z})"));
        }
        if let Some([x, y, z]) = self.work_group_size_hint {
            a.push(format!("work_group_size_hint({x},{y},{z})"));
        }
        if let Some(t) = &self.vec_type_hint {
            a.push(format!("vec_type_hint({t})"));
        }
        if let Some(n) = self.reqd_sub_group_size {
            a.push(format!("intel_reqd_sub_group_size({n})"));
        }
        a.join(" ")
    }
}

/// Reads a module, with decoration groups replaced by the decorations
/// they stand for (Vulkan modules may not have groups, and the readers
/// of decorations then see every one directly).
pub fn load(words: &[u32]) -> Result<Module, String> {
    let (words, chains) = hide_constant_access_chains(words);
    let mut m = rspirv::dr::load_words(&words).map_err(|e| format!("malformed SPIR-V: {e:?}"))?;
    restore_constant_access_chains(&mut m, &chains);
    flatten_decoration_groups(&mut m);
    builtins_as_input(&mut m);
    Ok(m)
}

/// What a pointer type points at.
fn pointee_of(m: &Module, ptr: u32) -> Option<u32> {
    m.types_global_values
        .iter()
        .find(|t| t.class.opcode == Op::TypePointer && t.result_id == Some(ptr))?
        .operands
        .get(1)
        .and_then(id)
}

/// Loads of one component of a built-in vector through an access chain
/// (as some producers write `get_global_id(0)`) become a load of the
/// whole vector and an extract, the form the rewrite replaces.
fn loads_through_chains(m: &mut Module, builtins: &crate::compiler::spirv::common::HashSet<u32>) {
    let chains = [Op::AccessChain, Op::InBoundsAccessChain];
    let vectors: HashMap<u32, u32> = m
        .types_global_values
        .iter()
        .filter(|v| {
            v.class.opcode == Op::Variable && v.result_id.is_some_and(|r| builtins.contains(&r))
        })
        .filter_map(|v| Some((v.result_id?, pointee_of(m, v.result_type?)?)))
        .collect();
    let Some(header) = m.header.as_mut() else {
        return;
    };
    let bound = &mut header.bound;
    for f in m.functions.iter_mut() {
        // Chain result → (variable, index).
        let mut into: HashMap<u32, (u32, u32)> = HashMap::default();
        for i in f.blocks.iter().flat_map(|b| &b.instructions) {
            if chains.contains(&i.class.opcode) && i.operands.len() == 2 {
                if let (Some(base), Some(index), Some(r)) =
                    (id(&i.operands[0]), id(&i.operands[1]), i.result_id)
                {
                    if vectors.contains_key(&base) {
                        into.insert(r, (base, index));
                    }
                }
            }
        }
        if into.is_empty() {
            continue;
        }
        for block in f.blocks.iter_mut() {
            let mut out = Vec::with_capacity(block.instructions.len() + 1);
            for i in std::mem::take(&mut block.instructions) {
                let through = (i.class.opcode == Op::Load)
                    .then(|| i.operands.first().and_then(id))
                    .flatten()
                    .and_then(|p| into.get(&p).copied());
                match (through, i.result_type, i.result_id) {
                    (Some((var, index)), Some(ty), Some(r)) => {
                        let whole = *bound;
                        *bound += 1;
                        out.push(Instruction::new(
                            Op::Load,
                            Some(vectors[&var]),
                            Some(whole),
                            vec![Operand::IdRef(var)],
                        ));
                        out.push(Instruction::new(
                            Op::VectorExtractDynamic,
                            Some(ty),
                            Some(r),
                            vec![Operand::IdRef(whole), Operand::IdRef(index)],
                        ));
                    }
                    _ => out.push(i),
                }
            }
            block.instructions = out;
        }
        // The chains nothing else uses go.
        let used: crate::compiler::spirv::common::HashSet<u32> = f
            .blocks
            .iter()
            .flat_map(|b| &b.instructions)
            .flat_map(|i| i.operands.iter().filter_map(id))
            .collect();
        for block in f.blocks.iter_mut() {
            block.instructions.retain(|i| {
                !i.result_id
                    .is_some_and(|r| into.contains_key(&r) && !used.contains(&r))
            });
        }
    }
}

/// Older SPIR-V translators declare OpenCL's built-in variables
/// (`__spirv_BuiltInGlobalInvocationId`, ...) in the UniformConstant
/// storage class; SPIR-V's OpenCL environment and newer producers use
/// Input. Such variables are moved to Input, where the rewrite looks for
/// built-ins, and loads through access chains into any built-in become
/// whole loads (see [`loads_through_chains`]).
fn builtins_as_input(m: &mut Module) {
    let builtins: crate::compiler::spirv::common::HashSet<u32> = m
        .annotations
        .iter()
        .filter(|a| {
            a.class.opcode == Op::Decorate
                && a.operands.get(1)
                    == Some(&Operand::Decoration(rspirv::spirv::Decoration::BuiltIn))
        })
        .filter_map(|a| a.operands.first().and_then(id))
        .collect();
    let uniform_constant = Operand::StorageClass(StorageClass::UniformConstant);
    let moved: Vec<u32> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable && i.operands.first() == Some(&uniform_constant))
        .filter_map(|i| i.result_id)
        .filter(|v| builtins.contains(v))
        .collect();
    for var in moved {
        let Some(ty) = m
            .types_global_values
            .iter()
            .find(|i| i.result_id == Some(var))
            .and_then(|i| i.result_type)
        else {
            continue;
        };
        let Some(to) = pointee_of(m, ty) else {
            continue;
        };
        let ptr = input_pointer(m, to);
        if let Some(v) = m
            .types_global_values
            .iter_mut()
            .find(|i| i.result_id == Some(var))
        {
            v.result_type = Some(ptr);
            v.operands[0] = Operand::StorageClass(StorageClass::Input);
        }
    }
    loads_through_chains(m, &builtins);
}

/// The Input pointer type to `to`: the module's, or a new one declared
/// after `to`.
fn input_pointer(m: &mut Module, to: u32) -> u32 {
    let input = Operand::StorageClass(StorageClass::Input);
    if let Some(t) = m.types_global_values.iter().find(|t| {
        t.class.opcode == Op::TypePointer
            && t.operands.first() == Some(&input)
            && t.operands.get(1).and_then(id) == Some(to)
    }) {
        return t.result_id.unwrap_or_default();
    }
    let header = m.header.as_mut().expect("a loaded module has a header");
    let new = header.bound;
    header.bound += 1;
    let at = m
        .types_global_values
        .iter()
        .position(|t| t.result_id == Some(to))
        .map_or(0, |p| p + 1);
    m.types_global_values.insert(
        at,
        Instruction::new(
            Op::TypePointer,
            None,
            Some(new),
            vec![input, Operand::IdRef(to)],
        ),
    );
    new
}

/// rspirv reads an `OpSpecConstantOp` access chain only when it has
/// exactly one index (`&table[2]` has two, `(int *)((char *)&s + 12)` none).
/// Such constants are handed to it as `OpSpecConstantComposite`s of their
/// operands, and the operation is noted by result id.
fn hide_constant_access_chains(words: &[u32]) -> (Vec<u32>, HashMap<u32, Op>) {
    let mut out = Vec::with_capacity(words.len());
    let mut chains = HashMap::default();
    out.extend_from_slice(&words[..words.len().min(5)]);
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        let end = (at + count.max(1)).min(words.len());
        let inner = words.get(at + 3).copied();
        let chain = [
            Op::AccessChain,
            Op::InBoundsAccessChain,
            Op::PtrAccessChain,
            Op::InBoundsPtrAccessChain,
        ]
        .into_iter()
        .find(|op| Some(*op as u32) == inner);
        match chain {
            Some(op) if opcode == Op::SpecConstantOp as u32 && count >= 5 && end == at + count => {
                out.push(((count as u32 - 1) << 16) | Op::SpecConstantComposite as u32);
                out.extend_from_slice(&words[at + 1..at + 3]);
                out.extend_from_slice(&words[at + 4..end]);
                chains.insert(words[at + 2], op);
            }
            _ => out.extend_from_slice(&words[at..end]),
        }
        at = end;
    }
    (out, chains)
}

fn restore_constant_access_chains(m: &mut Module, chains: &HashMap<u32, Op>) {
    if chains.is_empty() {
        return;
    }
    for i in &mut m.types_global_values {
        let Some(op) = i.result_id.and_then(|r| chains.get(&r)) else {
            continue;
        };
        if i.class.opcode == Op::SpecConstantComposite {
            let mut operands = vec![Operand::LiteralSpecConstantOpInteger(*op)];
            operands.append(&mut i.operands);
            *i = Instruction::new(Op::SpecConstantOp, i.result_type, i.result_id, operands);
        }
    }
}

fn flatten_decoration_groups(m: &mut Module) {
    let groups: crate::compiler::spirv::common::HashSet<u32> = m
        .annotations
        .iter()
        .filter(|a| a.class.opcode == Op::DecorationGroup)
        .filter_map(|a| a.result_id)
        .collect();
    if groups.is_empty() {
        return;
    }
    let of_group = |g: u32| -> Vec<Instruction> {
        m.annotations
            .iter()
            .filter(|a| {
                matches!(a.class.opcode, Op::Decorate | Op::DecorateId)
                    && a.operands.first().and_then(id) == Some(g)
            })
            .cloned()
            .collect()
    };
    let mut flat = Vec::new();
    for a in &m.annotations {
        match a.class.opcode {
            Op::GroupDecorate => {
                let Some(g) = a.operands.first().and_then(id) else {
                    continue;
                };
                for target in a.operands[1..].iter().filter_map(id) {
                    for mut d in of_group(g) {
                        d.operands[0] = Operand::IdRef(target);
                        flat.push(d);
                    }
                }
            }
            Op::GroupMemberDecorate => {
                let Some(g) = a.operands.first().and_then(id) else {
                    continue;
                };
                for pair in a.operands[1..].chunks_exact(2) {
                    let (Some(target), Some(member)) = (id(&pair[0]), lit(&pair[1])) else {
                        continue;
                    };
                    for d in of_group(g) {
                        let mut ops = vec![Operand::IdRef(target), Operand::LiteralBit32(member)];
                        ops.extend(d.operands[1..].iter().cloned());
                        flat.push(Instruction::new(Op::MemberDecorate, None, None, ops));
                    }
                }
            }
            _ => {}
        }
    }
    m.annotations.retain(|a| {
        !matches!(
            a.class.opcode,
            Op::DecorationGroup | Op::GroupDecorate | Op::GroupMemberDecorate
        ) && !a
            .operands
            .first()
            .and_then(id)
            .is_some_and(|t| groups.contains(&t))
    });
    m.annotations.extend(flat);
    m.debug_names.retain(|n| {
        !n.operands
            .first()
            .and_then(id)
            .is_some_and(|t| groups.contains(&t))
    });
}

pub fn id(op: &Operand) -> Option<u32> {
    match op {
        Operand::IdRef(i) => Some(*i),
        _ => None,
    }
}

fn lit(op: &Operand) -> Option<u32> {
    match op {
        Operand::LiteralBit32(v) => Some(*v),
        _ => None,
    }
}

fn string(op: &Operand) -> Option<&str> {
    match op {
        Operand::LiteralString(s) => Some(s),
        _ => None,
    }
}

/// The kernels of a module, in entry-point order.
pub fn kernels(module: &Module) -> Result<Vec<KernelInfo>, String> {
    let types: HashMap<u32, &Instruction> = module
        .types_global_values
        .iter()
        .filter_map(|i| i.result_id.map(|r| (r, i)))
        .collect();
    let names: HashMap<u32, &str> = module
        .debug_names
        .iter()
        .filter(|i| i.class.opcode == Op::Name)
        .filter_map(|i| Some((id(&i.operands[0])?, string(&i.operands[1])?)))
        .collect();
    let strings: Vec<&str> = module
        .debug_string_source
        .iter()
        .filter(|i| i.class.opcode == Op::String)
        .filter_map(|i| string(i.operands.first()?))
        .collect();
    let decorated = |target: u32, what: &dyn Fn(&[Operand]) -> bool| {
        module.annotations.iter().any(|i| {
            i.class.opcode == Op::Decorate
                && id(&i.operands[0]) == Some(target)
                && what(&i.operands[1..])
        })
    };
    let blocks = crate::compiler::spirv::p1_kernel::enqueue::block_kernels(module);
    let mut out = Vec::new();
    for ep in &module.entry_points {
        if !matches!(
            ep.operands.first(),
            Some(Operand::ExecutionModel(ExecutionModel::Kernel))
        ) {
            continue;
        }
        let func_id = ep.operands.get(1).and_then(id).ok_or("bad OpEntryPoint")?;
        let name = ep
            .operands
            .get(2)
            .and_then(string)
            .ok_or("bad OpEntryPoint")?
            .to_string();
        let func = module
            .functions
            .iter()
            .find(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(func_id))
            .ok_or_else(|| format!("kernel {name} has no body"))?;
        let list = |prefix: &str| -> Option<Vec<String>> {
            let key = format!("{prefix}.{name}.");
            strings
                .iter()
                .find_map(|s| s.strip_prefix(key.as_str()))
                .map(|rest| {
                    let mut v: Vec<String> = rest.split(',').map(str::to_string).collect();
                    if v.last().is_some_and(String::is_empty) {
                        v.pop();
                    }
                    v
                })
        };
        let type_names = list("kernel_arg_type");
        let type_quals = list("kernel_arg_type_qual");
        let mut args = Vec::new();
        for (i, p) in func.parameters.iter().enumerate() {
            let pid = p.result_id.ok_or("parameter without id")?;
            let ty = p.result_type.ok_or("parameter without type")?;
            let (kind, address, access) = arg_kind(&types, ty, pid, &decorated)?;
            let mut type_qual: cl_bitfield = 0;
            let qual_text = type_quals
                .as_ref()
                .and_then(|q| q.get(i))
                .cloned()
                .unwrap_or_default();
            if qual_text.split(' ').any(|q| q == "const")
                || address == CL_KERNEL_ARG_ADDRESS_CONSTANT
            {
                type_qual |= CL_KERNEL_ARG_TYPE_CONST as cl_bitfield;
            }
            if qual_text.split(' ').any(|q| q == "restrict")
                || decorated(pid, &|o| {
                    o == [
                        Operand::Decoration(Decoration::FuncParamAttr),
                        Operand::FunctionParameterAttribute(FunctionParameterAttribute::NoAlias),
                    ]
                })
            {
                type_qual |= CL_KERNEL_ARG_TYPE_RESTRICT as cl_bitfield;
            }
            if qual_text.split(' ').any(|q| q == "volatile")
                || decorated(pid, &|o| o == [Operand::Decoration(Decoration::Volatile)])
            {
                type_qual |= CL_KERNEL_ARG_TYPE_VOLATILE as cl_bitfield;
            }
            if qual_text.split(' ').any(|q| q == "pipe") {
                type_qual |= CL_KERNEL_ARG_TYPE_PIPE as cl_bitfield;
            }
            // A pipe's element qualifiers are not the argument's.
            if kind == ArgKind::Pipe {
                type_qual = CL_KERNEL_ARG_TYPE_PIPE as cl_bitfield;
            }
            // restrict and volatile only qualify pointers.
            if !matches!(kind, ArgKind::Buffer | ArgKind::Local) {
                type_qual &=
                    !((CL_KERNEL_ARG_TYPE_RESTRICT | CL_KERNEL_ARG_TYPE_VOLATILE) as cl_bitfield);
            }
            args.push(KernelArg {
                name: names.get(&pid).map(|s| s.to_string()).unwrap_or_default(),
                kind,
                address,
                access,
                type_name: type_names
                    .as_ref()
                    .and_then(|t| t.get(i))
                    .cloned()
                    .unwrap_or_default(),
                type_qual,
            });
        }
        let mode = |m: ExecutionMode| {
            module.execution_modes.iter().find_map(|i| {
                (id(&i.operands[0]) == Some(func_id)
                    && i.operands.get(1) == Some(&Operand::ExecutionMode(m)))
                .then(|| i.operands[2..].iter().filter_map(lit).collect::<Vec<u32>>())
            })
        };
        let triple = |v: Option<Vec<u32>>| v.filter(|v| v.len() == 3).map(|v| [v[0], v[1], v[2]]);
        let (local_bytes, private_bytes) = variable_bytes(module, &types, func_id);
        out.push(KernelInfo {
            name: name.clone(),
            args,
            reqd_work_group_size: triple(mode(ExecutionMode::LocalSize)),
            work_group_size_hint: triple(mode(ExecutionMode::LocalSizeHint)),
            vec_type_hint: mode(ExecutionMode::VecTypeHint)
                .and_then(|v| v.first().map(|&h| vec_type_name(h))),
            reqd_sub_group_size: mode(ExecutionMode::SubgroupSize).and_then(|v| v.first().copied()),
            local_bytes,
            private_bytes,
            block: blocks.contains(&name),
        });
    }
    Ok(out)
}

/// The bytes a type takes, `u64::MAX` for one of 4 GiB or more, `None`
/// where its size is unknown (an array of specialised length).
fn type_bytes(types: &HashMap<u32, &Instruction>, pointer: Option<u32>) -> Option<u64> {
    let ptr = types.get(&pointer?)?;
    let pointee = id(ptr.operands.get(1)?)?;
    match layout(types, pointee) {
        Ok((s, _)) => Some(s as u64),
        // Past any device's memory: the build fails on it.
        Err(e) if e.ends_with(TOO_LARGE) => Some(u64::MAX),
        Err(_) => None,
    }
}

/// The sizes of the module-scope `__local` variables a kernel (and what it
/// calls) uses, and of the private (function) variables of those
/// functions.
fn variable_bytes(module: &Module, types: &HashMap<u32, &Instruction>, kernel: u32) -> (u64, u64) {
    let by_id: HashMap<u32, &rspirv::dr::Function> = module
        .functions
        .iter()
        .filter_map(|f| Some((f.def.as_ref()?.result_id?, f)))
        .collect();
    let mut seen = crate::compiler::spirv::common::HashSet::from_iter([kernel]);
    let mut todo = vec![kernel];
    let mut used = crate::compiler::spirv::common::HashSet::default();
    let mut private = 0u64;
    while let Some(f) = todo.pop() {
        let Some(func) = by_id.get(&f) else { continue };
        for i in func.blocks.iter().flat_map(|b| &b.instructions) {
            if i.class.opcode == Op::Variable
                && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Function))
            {
                private = private.saturating_add(type_bytes(types, i.result_type).unwrap_or(0));
            }
            for o in &i.operands {
                if let Operand::IdRef(x) = o {
                    used.insert(*x);
                    if i.class.opcode == Op::FunctionCall && seen.insert(*x) {
                        todo.push(*x);
                    }
                }
            }
        }
    }
    let local = module
        .types_global_values
        .iter()
        .filter(|v| {
            v.class.opcode == Op::Variable
                && v.operands.first() == Some(&Operand::StorageClass(StorageClass::Workgroup))
                && v.result_id.is_some_and(|r| used.contains(&r))
        })
        .filter_map(|v| type_bytes(types, v.result_type))
        .fold(0, u64::saturating_add);
    (local, private)
}

/// How [`layout`]'s error for a type of 4 GiB or more ends.
const TOO_LARGE: &str = "is larger than 4 GiB";

type Decorated<'a> = dyn Fn(u32, &dyn Fn(&[Operand]) -> bool) -> bool + 'a;

fn arg_kind(
    types: &HashMap<u32, &Instruction>,
    ty: u32,
    param: u32,
    decorated: &Decorated<'_>,
) -> Result<
    (
        ArgKind,
        cl_kernel_arg_address_qualifier,
        cl_kernel_arg_access_qualifier,
    ),
    String,
> {
    let t = types.get(&ty).ok_or("parameter of unknown type")?;
    let none = CL_KERNEL_ARG_ACCESS_NONE;
    Ok(match t.class.opcode {
        Op::TypePointer => {
            let byval = decorated(param, &|o| {
                o == [
                    Operand::Decoration(Decoration::FuncParamAttr),
                    Operand::FunctionParameterAttribute(FunctionParameterAttribute::ByVal),
                ]
            });
            match t.operands.first() {
                Some(Operand::StorageClass(StorageClass::CrossWorkgroup)) => {
                    (ArgKind::Buffer, CL_KERNEL_ARG_ADDRESS_GLOBAL, none)
                }
                Some(Operand::StorageClass(StorageClass::UniformConstant)) => {
                    (ArgKind::Buffer, CL_KERNEL_ARG_ADDRESS_CONSTANT, none)
                }
                Some(Operand::StorageClass(StorageClass::Workgroup)) => {
                    (ArgKind::Local, CL_KERNEL_ARG_ADDRESS_LOCAL, none)
                }
                // A block kernel's literal: in device memory (see the
                // enqueue pass).
                Some(Operand::StorageClass(StorageClass::Generic)) => {
                    (ArgKind::Buffer, CL_KERNEL_ARG_ADDRESS_GLOBAL, none)
                }
                Some(Operand::StorageClass(StorageClass::Function)) if byval => {
                    let pointee = t.operands.get(1).and_then(id).ok_or("bad pointer type")?;
                    (
                        ArgKind::Value(size_of(types, pointee)?),
                        CL_KERNEL_ARG_ADDRESS_PRIVATE,
                        none,
                    )
                }
                other => {
                    return Err(format!(
                        "kernel argument pointer in storage class {other:?}"
                    ));
                }
            }
        }
        Op::TypeImage => {
            let access = match t.operands.get(7) {
                Some(Operand::AccessQualifier(rspirv::spirv::AccessQualifier::WriteOnly)) => {
                    CL_KERNEL_ARG_ACCESS_WRITE_ONLY
                }
                Some(Operand::AccessQualifier(rspirv::spirv::AccessQualifier::ReadWrite)) => {
                    CL_KERNEL_ARG_ACCESS_READ_WRITE
                }
                _ => CL_KERNEL_ARG_ACCESS_READ_ONLY,
            };
            (ArgKind::Image, CL_KERNEL_ARG_ADDRESS_GLOBAL, access)
        }
        Op::TypeSampler => (ArgKind::Sampler, CL_KERNEL_ARG_ADDRESS_PRIVATE, none),
        Op::TypeQueue => (ArgKind::Queue, CL_KERNEL_ARG_ADDRESS_PRIVATE, none),
        Op::TypePipe => {
            let access = match t.operands.first() {
                Some(Operand::AccessQualifier(rspirv::spirv::AccessQualifier::WriteOnly)) => {
                    CL_KERNEL_ARG_ACCESS_WRITE_ONLY
                }
                _ => CL_KERNEL_ARG_ACCESS_READ_ONLY,
            };
            (ArgKind::Pipe, CL_KERNEL_ARG_ADDRESS_GLOBAL, access)
        }
        _ => (
            ArgKind::Value(size_of(types, ty)?),
            CL_KERNEL_ARG_ADDRESS_PRIVATE,
            none,
        ),
    })
}

/// The size of a type under OpenCL C's ABI (vec3 takes the room of vec4).
pub fn size_of(types: &HashMap<u32, &Instruction>, ty: u32) -> Result<u32, String> {
    Ok(layout(types, ty)?.0)
}

thread_local! {
    /// The structs of the module being rewritten that are packed
    /// (`__attribute__((packed))`, the `CPacked` decoration).
    static PACKED: std::cell::RefCell<crate::compiler::spirv::common::HashSet<u32>> =
        std::cell::RefCell::new(crate::compiler::spirv::common::HashSet::default());
}

/// The packed structs of a module.
pub fn packed_structs(module: &Module) -> crate::compiler::spirv::common::HashSet<u32> {
    module
        .annotations
        .iter()
        .filter(|a| {
            a.class.opcode == Op::Decorate
                && a.operands.get(1) == Some(&Operand::Decoration(Decoration::CPacked))
        })
        .filter_map(|a| match a.operands.first() {
            Some(Operand::IdRef(t)) => Some(*t),
            _ => None,
        })
        .collect()
}

/// Runs `f` with `packed` (see [`packed_structs`]) known to [`layout`].
pub fn with_packed_structs<T>(
    packed: crate::compiler::spirv::common::HashSet<u32>,
    f: impl FnOnce() -> T,
) -> T {
    let before = PACKED.with(|p| p.replace(packed));
    let r = f();
    PACKED.with(|p| p.replace(before));
    r
}

/// Whether a struct is packed (see [`with_packed_structs`]).
pub fn is_packed(ty: u32) -> bool {
    PACKED.with(|p| p.borrow().contains(&ty))
}

/// Size and alignment of a type under OpenCL C's ABI.
pub fn layout(types: &HashMap<u32, &Instruction>, ty: u32) -> Result<(u32, u32), String> {
    let t = types.get(&ty).ok_or("unknown type")?;
    // Valid modules may declare types of any size; vkcl's sizes are 32-bit.
    let too_large = || format!("type %{ty} {TOO_LARGE}");
    let mul = |a: u32, b: u32| a.checked_mul(b).ok_or_else(too_large);
    let lit0 = || t.operands.first().and_then(lit).ok_or("bad type");
    Ok(match t.class.opcode {
        Op::TypeBool => (1, 1),
        Op::TypeInt | Op::TypeFloat => {
            let b = lit0()? / 8;
            (b, b)
        }
        Op::TypeVector => {
            let (es, _) = layout(types, t.operands.first().and_then(id).ok_or("bad vector")?)?;
            let n = t.operands.get(1).and_then(lit).ok_or("bad vector")?;
            let n = if n == 3 { 4 } else { n };
            (mul(es, n)?, mul(es, n)?)
        }
        Op::TypeArray => {
            let (es, ea) = layout(types, t.operands.first().and_then(id).ok_or("bad array")?)?;
            let len_id = t.operands.get(1).and_then(id).ok_or("bad array")?;
            let len = types
                .get(&len_id)
                .filter(|c| c.class.opcode == Op::Constant)
                .and_then(|c| match c.operands.first() {
                    Some(Operand::LiteralBit32(v)) => Some(Ok(*v)),
                    Some(Operand::LiteralBit64(v)) => {
                        Some(u32::try_from(*v).map_err(|_| too_large()))
                    }
                    _ => None,
                })
                .ok_or("array of unknown length")??;
            // The vectors pass holds 8/16-component vectors as arrays with
            // a 32-bit length (front ends give array lengths 64 bits): they
            // keep the vector's alignment.
            let wide_vector = matches!(len, 8 | 16)
                && types.get(&len_id).is_some_and(|c| {
                    c.result_type
                        .and_then(|t| types.get(&t))
                        .is_some_and(|t| t.operands.first() == Some(&Operand::LiteralBit32(32)))
                })
                && types
                    .get(&t.operands.first().and_then(id).ok_or("bad array")?)
                    .is_some_and(|e| matches!(e.class.opcode, Op::TypeInt | Op::TypeFloat));
            let size = mul(es, len)?;
            (size, if wide_vector { size } else { ea })
        }
        Op::TypeStruct => {
            let packed = is_packed(ty);
            let mut size = 0u32;
            let mut align = 1u32;
            for m in &t.operands {
                let (ms, ma) = layout(types, id(m).ok_or("bad struct")?)?;
                let ma = if packed { 1 } else { ma.max(1) };
                size = mul(size.div_ceil(ma), ma)?
                    .checked_add(ms)
                    .ok_or_else(too_large)?;
                align = align.max(ma);
            }
            (mul(size.div_ceil(align), align)?, align)
        }
        Op::TypePointer | Op::TypeEvent | Op::TypeSampler => (8, 8),
        other => return Err(format!("no OpenCL layout for {other:?}")),
    })
}

/// The bytes of a module's Workgroup variables (the kernel's `__local`
/// variables and what the rewriter adds for collectives), by OpenCL C's
/// layout; `u64::MAX` when one is larger than 4 GiB. Variables of a type
/// without a fixed size (an array whose length is a specialization
/// constant) count nothing.
pub fn workgroup_bytes(module: &Module) -> u64 {
    let types: HashMap<u32, &Instruction> = module
        .types_global_values
        .iter()
        .filter_map(|i| i.result_id.map(|r| (r, i)))
        .collect();
    module
        .types_global_values
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable
                && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Workgroup))
        })
        .map(|v| type_bytes(&types, v.result_type).unwrap_or(0))
        .fold(0, u64::saturating_add)
}

/// vec_type_hint's operand: the low 16 bits give the component type
/// (0..3: 8/16/32/64-bit int, 4: half, 5: float, 6: double), the high 16
/// the number of components (0 or 1 for a scalar).
fn vec_type_name(hint: u32) -> String {
    let width = hint >> 16;
    let base = match hint & 0xFFFF {
        0 => "char",
        1 => "short",
        2 => "int",
        3 => "long",
        4 => "half",
        5 => "float",
        6 => "double",
        _ => "int",
    };
    if width <= 1 {
        base.to_string()
    } else {
        format!("{base}{width}")
    }
}

/// The capabilities a module declares and its addressing model, read from
/// the words of its preamble without loading the module (for deciding
/// whether a device can run it at all).
pub fn preamble(words: &[u32]) -> (Vec<rspirv::spirv::Capability>, Option<u32>) {
    let mut caps = Vec::new();
    let mut addressing = None;
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let (len, op) = ((first >> 16) as usize, first & 0xffff);
        let Some(operands) = words.get(at + 1..at + len.max(1)) else {
            break;
        };
        match op {
            o if o == Op::Capability as u32 => {
                if let Some(c) = operands
                    .first()
                    .and_then(|&c| rspirv::spirv::Capability::from_u32(c))
                {
                    caps.push(c);
                }
            }
            o if o == Op::Extension as u32 || o == Op::ExtInstImport as u32 => {}
            o if o == Op::MemoryModel as u32 => {
                addressing = operands.first().copied();
                break;
            }
            _ => break,
        }
        at += len.max(1);
    }
    (caps, addressing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_type_hint_operand_is_type_then_width() {
        assert_eq!(vec_type_name(2), "int");
        assert_eq!(vec_type_name(2 << 16), "char2");
        assert_eq!(vec_type_name((4 << 16) | 5), "float4");
        assert_eq!(vec_type_name((16 << 16) | 3), "long16");
    }
}
