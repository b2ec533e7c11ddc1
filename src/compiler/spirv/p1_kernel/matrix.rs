//! Pass 1c (phase 1): Cooperative matrices (`cl_vkcl_cooperative_matrix`,
//! see `docs/cooperative-matrix.md`). The front end's prelude declares, for
//! each matrix the device multiplies (VK_KHR_cooperative_matrix), a handle
//! type `coop_mat_<use>_<element>_<rows>x<cols>`: a private pointer to an
//! incomplete struct `__vkcl_coop_mat_<use>_<element>_<rows>x<cols>`,
//! which OpenCL C can only assign, pass and return. Handles travel as
//! ordinary values through the front end (phis, selects, variables,
//! arrays, calls), and the built-ins that make and take them stay calls
//! to imports. This pass makes each handle's pointer type the
//! `OpTypeCooperativeMatrixKHR` it stands for (sub-group scope), so every
//! value, variable and array of handles becomes one of matrices at once,
//! and each built-in call the `OpCooperativeMatrix*KHR` instruction or
//! the arithmetic it names.
//!
//! Takes `clock`'s module. Guarantees no handle type and no call to the
//! built-ins is left; fails the kernel where it uses a matrix the device
//! lacks, a layout that is not a constant, or a handle in any other way
//! than the built-ins, assignment and calls.
//!
//! Half matrices keep the 16-bit float type, which the built-ins pass
//! otherwise makes `ushort` everywhere: [`reconcile_halves`] then puts
//! bitcasts where `half` scalars meet them.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{CooperativeMatrixOperands, MemoryAccess, Op, Scope, StorageClass, Word};

use crate::compiler::spirv::common::ctx::{Ctx, id_at};
use crate::compiler::spirv::common::{HashMap, HashSet};
use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;

/// An element type of cooperative matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Component {
    Half,
    Float,
    Char,
    Short,
    Int,
    Long,
    Uchar,
    Ushort,
    Uint,
    Ulong,
}

impl Component {
    const ALL: [Component; 10] = [
        Component::Half,
        Component::Float,
        Component::Char,
        Component::Short,
        Component::Int,
        Component::Long,
        Component::Uchar,
        Component::Ushort,
        Component::Uint,
        Component::Ulong,
    ];

    /// The OpenCL C scalar type.
    pub fn name(self) -> &'static str {
        match self {
            Component::Half => "half",
            Component::Float => "float",
            Component::Char => "char",
            Component::Short => "short",
            Component::Int => "int",
            Component::Long => "long",
            Component::Uchar => "uchar",
            Component::Ushort => "ushort",
            Component::Uint => "uint",
            Component::Ulong => "ulong",
        }
    }

    fn from_name(name: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.name() == name)
    }

    pub fn bits(self) -> u32 {
        match self {
            Component::Char | Component::Uchar => 8,
            Component::Half | Component::Short | Component::Ushort => 16,
            Component::Float | Component::Int | Component::Uint => 32,
            Component::Long | Component::Ulong => 64,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Component::Half | Component::Float)
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            Component::Char | Component::Short | Component::Int | Component::Long
        )
    }
}

/// The operand a matrix is in a multiply-add (SPIR-V's
/// CooperativeMatrixUse).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Use {
    A,
    B,
    Accumulator,
}

impl Use {
    fn name(self) -> &'static str {
        match self {
            Use::A => "a",
            Use::B => "b",
            Use::Accumulator => "acc",
        }
    }

    fn spirv(self) -> u32 {
        match self {
            Use::A => 0,
            Use::B => 1,
            Use::Accumulator => 2,
        }
    }
}

/// One cooperative matrix type: use, element type and shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MatrixType {
    pub usage: Use,
    pub component: Component,
    pub rows: u32,
    pub cols: u32,
}

impl MatrixType {
    /// `a_half_16x16`: what the built-ins' names and the handle's struct
    /// add to their stems.
    pub fn suffix(&self) -> String {
        format!(
            "{}_{}_{}x{}",
            self.usage.name(),
            self.component.name(),
            self.rows,
            self.cols
        )
    }

    /// The OpenCL C type name of the handle.
    pub fn type_name(&self) -> String {
        format!("coop_mat_{}", self.suffix())
    }

    fn parse(suffix: &str) -> Option<MatrixType> {
        let mut parts = suffix.splitn(3, '_');
        let usage = match parts.next()? {
            "a" => Use::A,
            "b" => Use::B,
            "acc" => Use::Accumulator,
            _ => return None,
        };
        let component = Component::from_name(parts.next()?)?;
        let (rows, cols) = parts.next()?.split_once('x')?;
        Some(MatrixType {
            usage,
            component,
            rows: rows.parse().ok()?,
            cols: cols.parse().ok()?,
        })
    }
}

/// A multiply-add the device runs on matrices of sub-group scope
/// (VkCooperativeMatrixPropertiesKHR): `result = a (m×k) × b (k×n) + c
/// (m×n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MatrixVariant {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub a: Component,
    pub b: Component,
    pub c: Component,
    pub result: Component,
    pub saturating: bool,
}

/// Multiply-adds NVIDIA's drivers list (among others), for tests and
/// fuzzing of a device with matrices: half into float and into half, and
/// signed bytes into ints.
pub const SAMPLE: &[MatrixVariant] = &[
    MatrixVariant::plain(16, 16, 16, Component::Half, Component::Float),
    MatrixVariant::plain(16, 16, 16, Component::Half, Component::Half),
    MatrixVariant::plain(16, 16, 32, Component::Char, Component::Int),
];

impl MatrixVariant {
    /// The multiply-add of `inputs` (A and B) into `sums` (C and the
    /// result), not saturating.
    pub const fn plain(m: u32, n: u32, k: u32, inputs: Component, sums: Component) -> Self {
        MatrixVariant {
            m,
            n,
            k,
            a: inputs,
            b: inputs,
            c: sums,
            result: sums,
            saturating: false,
        }
    }

    pub fn a_type(&self) -> MatrixType {
        MatrixType {
            usage: Use::A,
            component: self.a,
            rows: self.m,
            cols: self.k,
        }
    }

    pub fn b_type(&self) -> MatrixType {
        MatrixType {
            usage: Use::B,
            component: self.b,
            rows: self.k,
            cols: self.n,
        }
    }

    pub fn c_type(&self) -> MatrixType {
        MatrixType {
            usage: Use::Accumulator,
            component: self.c,
            rows: self.m,
            cols: self.n,
        }
    }

    /// The multiply-adds OpenCL C reaches through `coop_mat_muladd`:
    /// those whose result has the accumulator's type.
    fn offered_to_c(&self) -> bool {
        !self.saturating && self.c == self.result
    }
}

/// Every matrix type the variants name, in a fixed order.
pub fn matrix_types(variants: &[MatrixVariant]) -> Vec<MatrixType> {
    let set: BTreeSet<MatrixType> = variants
        .iter()
        .filter(|v| v.offered_to_c())
        .flat_map(|v| [v.a_type(), v.b_type(), v.c_type()])
        .collect();
    set.into_iter().collect()
}

/// Whether `from` converts to `to` (`coop_mat_convert_*`): same use and
/// shape, another element type, and for integers another width (SPIR-V
/// converts integers between widths only).
fn converts(from: &MatrixType, to: &MatrixType) -> bool {
    from.usage == to.usage
        && from.rows == to.rows
        && from.cols == to.cols
        && from.component != to.component
        && (from.component.is_float()
            || to.component.is_float()
            || from.component.bits() != to.component.bits())
}

/// The OpenCL C declarations of cl_vkcl_cooperative_matrix for a device
/// with these variants (empty without any), for the front end's prelude.
pub fn declarations(variants: &[MatrixVariant]) -> String {
    let types = matrix_types(variants);
    if types.is_empty() {
        return String::new();
    }
    const O: &str = "__attribute__((overloadable))";
    let mut p = String::from(
        "#define cl_vkcl_cooperative_matrix 1\n\
         #define CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR 0\n\
         #define CLK_COOPERATIVE_MATRIX_LAYOUT_COLUMN_MAJOR 1\n",
    );
    let half = types.iter().any(|t| t.component == Component::Half);
    if half {
        p.push_str("#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n");
    }
    for t in &types {
        let (n, e, s) = (t.type_name(), t.component.name(), t.suffix());
        let _ = writeln!(p, "typedef struct __vkcl_coop_mat_{s} __private *{n};");
        // Through pointers to the elements, or to uint4 (16 bytes at a
        // time, the stride then counted in uint4).
        for unit in [e, "uint4"] {
            for space in ["const __global", "const __local", "__constant"] {
                let _ = writeln!(
                    p,
                    "{n} {O} coop_mat_load_{s}({space} {unit} *p, int layout, uint stride);"
                );
            }
            for space in ["__global", "__local"] {
                let _ = writeln!(
                    p,
                    "void {O} coop_mat_store({space} {unit} *p, {n} m, int layout, uint stride);"
                );
            }
        }
        let _ = writeln!(p, "{n} {O} coop_mat_init_{s}({e} v);");
        let _ = writeln!(p, "uint {O} coop_mat_length({n} m);");
        let _ = writeln!(p, "{e} {O} coop_mat_extract({n} m, uint i);");
        let _ = writeln!(p, "{n} {O} coop_mat_insert({n} m, uint i, {e} v);");
        for op in ["add", "sub", "mul", "div"] {
            let _ = writeln!(p, "{n} {O} coop_mat_{op}({n} a, {n} b);");
        }
        let _ = writeln!(p, "{n} {O} coop_mat_negate({n} a);");
        let _ = writeln!(p, "{n} {O} coop_mat_scale({n} a, {e} s);");
    }
    for from in &types {
        for to in types.iter().filter(|to| converts(from, to)) {
            let _ = writeln!(
                p,
                "{} {O} coop_mat_convert_{}({} m);",
                to.type_name(),
                to.suffix(),
                from.type_name()
            );
        }
    }
    let muladds: BTreeSet<(MatrixType, MatrixType, MatrixType)> = variants
        .iter()
        .filter(|v| v.offered_to_c())
        .map(|v| (v.a_type(), v.b_type(), v.c_type()))
        .collect();
    for (a, b, c) in muladds {
        let _ = writeln!(
            p,
            "{} {O} coop_mat_muladd({} a, {} b, {} c);",
            c.type_name(),
            a.type_name(),
            b.type_name(),
            c.type_name()
        );
    }
    if half {
        p.push_str("#pragma OPENCL EXTENSION cl_khr_fp16 : disable\n");
    }
    p
}

/// The built-ins, by the names the prelude gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Builtin {
    Load(MatrixType),
    Store,
    MulAdd,
    Init(MatrixType),
    Length,
    Extract,
    Insert,
    /// Element-wise arithmetic: add, sub, mul, div.
    Arith(u8),
    Negate,
    Scale,
    Convert(MatrixType),
}

/// The name an Itanium-mangled function name (`_Z<length><name>...`)
/// stands for; other names as they are.
fn demangled(name: &str) -> &str {
    let Some(rest) = name.strip_prefix("_Z") else {
        return name;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(len) = rest[..digits].parse::<usize>() else {
        return name;
    };
    rest.get(digits..digits + len).unwrap_or(name)
}

fn builtin(name: &str) -> Option<Builtin> {
    let name = demangled(name).strip_prefix("coop_mat_")?;
    let typed = |stem: &str| name.strip_prefix(stem).and_then(MatrixType::parse);
    Some(match name {
        "store" => Builtin::Store,
        "muladd" => Builtin::MulAdd,
        "length" => Builtin::Length,
        "extract" => Builtin::Extract,
        "insert" => Builtin::Insert,
        "add" => Builtin::Arith(0),
        "sub" => Builtin::Arith(1),
        "mul" => Builtin::Arith(2),
        "div" => Builtin::Arith(3),
        "negate" => Builtin::Negate,
        "scale" => Builtin::Scale,
        _ => {
            if let Some(t) = typed("load_") {
                Builtin::Load(t)
            } else if let Some(t) = typed("init_") {
                Builtin::Init(t)
            } else if let Some(t) = typed("convert_") {
                Builtin::Convert(t)
            } else {
                return None;
            }
        }
    })
}

/// Whether the module has cooperative matrix types.
pub fn uses_matrices(ctx: &Ctx) -> bool {
    ctx.module
        .types_global_values
        .iter()
        .any(|t| t.class.opcode == Op::TypeCooperativeMatrixKHR)
}

/// The alignment vkcl promises the driver for matrix loads and stores in
/// device memory, and asks of applications' pointers and strides.
pub const ALIGNMENT: u32 = 16;

pub fn run(ctx: &mut Ctx, caps: &DeviceCaps) -> Result<(), String> {
    // Handle structs, by type id.
    let structs: HashMap<Word, MatrixType> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| t.class.opcode == Op::TypeOpaque)
        .filter_map(|t| {
            let Some(Operand::LiteralString(name)) = t.operands.first() else {
                return None;
            };
            let suffix = name.strip_prefix("struct.__vkcl_coop_mat_")?;
            Some((t.result_id?, MatrixType::parse(suffix)?))
        })
        .collect();
    // Imported built-ins, by function id.
    let builtins: HashMap<Word, (Builtin, String)> = ctx
        .imports()
        .into_iter()
        .filter_map(|(f, name)| Some((f, (builtin(&name)?, demangled(&name).to_string()))))
        .collect();
    if structs.is_empty() && builtins.is_empty() {
        return native_matrices(ctx, caps, &HashMap::default());
    }
    let offered = matrix_types(caps.matrices);
    for t in structs.values() {
        if !offered.contains(t) {
            return Err(format!(
                "the device has no cooperative matrix {} (cl_vkcl_cooperative_matrix)",
                t.type_name()
            ));
        }
    }
    // Each handle's pointer type becomes its matrix type, in place.
    let handles: Vec<(usize, MatrixType)> = ctx
        .module
        .types_global_values
        .iter()
        .enumerate()
        .filter(|(_, t)| t.class.opcode == Op::TypePointer)
        .filter_map(|(k, t)| Some((k, *structs.get(&id_at(t, 1)?)?)))
        .collect();
    let scope = ctx.const_u32(Scope::Subgroup as u32);
    let mut matrix_of: HashMap<Word, MatrixType> = HashMap::default();
    for (k, t) in handles {
        let component = component_type(ctx, t.component);
        let operands = vec![
            Operand::IdRef(component),
            Operand::IdRef(scope),
            Operand::IdRef(ctx.const_u32(t.rows)),
            Operand::IdRef(ctx.const_u32(t.cols)),
            Operand::IdRef(ctx.const_u32(t.usage.spirv())),
        ];
        let slot = &mut ctx.module.types_global_values[k];
        let id = slot.result_id.ok_or("a type without an id")?;
        *slot = Instruction::new(Op::TypeCooperativeMatrixKHR, None, Some(id), operands);
        matrix_of.insert(id, t);
    }
    let opaque: HashSet<Word> = structs.keys().copied().collect();
    ctx.forget_globals(&opaque);
    ctx.sort_globals();
    let types = ctx.value_types();
    let mut functions = std::mem::take(&mut ctx.module.functions);
    let result = (|| {
        for f in &mut functions {
            let mut variables = Vec::new();
            for b in &mut f.blocks {
                let mut out = Vec::with_capacity(b.instructions.len());
                for i in b.instructions.drain(..) {
                    let call = (i.class.opcode == Op::FunctionCall)
                        .then(|| id_at(&i, 0).and_then(|c| builtins.get(&c)))
                        .flatten();
                    match call {
                        Some((which, name)) => lower(
                            ctx,
                            &types,
                            &matrix_of,
                            *which,
                            name,
                            &i,
                            &mut out,
                            &mut variables,
                        )?,
                        None => out.push(i),
                    }
                }
                b.instructions = out;
            }
            if let Some(entry) = f.blocks.first_mut() {
                entry.instructions.splice(0..0, variables);
            }
        }
        Ok::<(), String>(())
    })();
    ctx.module.functions = functions;
    result?;
    // The declarations go, with their names and linkage.
    let declared = |f: &rspirv::dr::Function| {
        f.blocks.is_empty()
            && f.def
                .as_ref()
                .and_then(|d| d.result_id)
                .is_some_and(|id| builtins.contains_key(&id))
    };
    ctx.module.functions.retain(|f| !declared(f));
    ctx.forget_globals(&builtins.keys().copied().collect());
    check_uses(ctx, &matrix_of)?;
    native_matrices(ctx, caps, &matrix_of)
}

/// Matrices a module declares itself (SPIR-V IL with
/// SPV_KHR_cooperative_matrix, not made from handles): each must be one
/// the device offers, at sub-group scope. OpenCL SPIR-V's integers have no
/// signedness, which the multiply-adds' operands give instead; Vulkan's
/// drivers match matrix types by it, so integer matrices that a
/// multiply-add takes as signed get signed element types. Loads and
/// stores of device memory without `Aligned` get vkcl's 16 bytes.
fn native_matrices(
    ctx: &mut Ctx,
    caps: &DeviceCaps,
    handled: &HashMap<Word, MatrixType>,
) -> Result<(), String> {
    let native: Vec<Word> = ctx
        .module
        .types_global_values
        .iter()
        .filter(|t| t.class.opcode == Op::TypeCooperativeMatrixKHR)
        .filter_map(|t| t.result_id)
        .filter(|id| !handled.contains_key(id))
        .collect();
    if native.is_empty() {
        return Ok(());
    }
    let types = ctx.value_types();
    // Matrix types a multiply-add takes or gives as signed.
    let mut signed: HashSet<Word> = HashSet::default();
    for i in ctx.module.functions.iter().flat_map(|f| f.all_inst_iter()) {
        if i.class.opcode != Op::CooperativeMatrixMulAddKHR {
            continue;
        }
        let flags = match i.operands.get(3) {
            Some(Operand::CooperativeMatrixOperands(f)) => *f,
            _ => CooperativeMatrixOperands::NONE_KHR,
        };
        for (k, flag) in [
            (0, CooperativeMatrixOperands::MATRIX_A_SIGNED_COMPONENTS_KHR),
            (1, CooperativeMatrixOperands::MATRIX_B_SIGNED_COMPONENTS_KHR),
            (2, CooperativeMatrixOperands::MATRIX_C_SIGNED_COMPONENTS_KHR),
        ] {
            if flags.contains(flag)
                && let Some(t) = id_at(i, k).and_then(|v| types.get(&v))
            {
                signed.insert(*t);
            }
        }
        if flags.contains(CooperativeMatrixOperands::MATRIX_RESULT_SIGNED_COMPONENTS_KHR) {
            signed.extend(i.result_type);
        }
    }
    let offered = matrix_types(caps.matrices);
    let constant = |ctx: &Ctx, id: Option<Word>| -> Option<u32> {
        match ctx
            .global(id?)
            .map(|c| (c.class.opcode, c.operands.first()))
        {
            Some((Op::Constant, Some(Operand::LiteralBit32(v)))) => Some(*v),
            _ => None,
        }
    };
    for id in native {
        let t = ctx
            .global(id)
            .ok_or("a matrix type without a definition")?
            .clone();
        let element = ctx
            .global(id_at(&t, 0).ok_or("a malformed matrix type")?)
            .cloned()
            .ok_or("a matrix of an unknown element type")?;
        let bits = match element.operands.first() {
            Some(Operand::LiteralBit32(b)) => *b,
            _ => 0,
        };
        let is_signed = signed.contains(&id);
        let component = match (element.class.opcode, bits) {
            (Op::TypeFloat, 16) => Some(Component::Half),
            (Op::TypeFloat, 32) => Some(Component::Float),
            (Op::TypeInt, _) => Component::ALL
                .into_iter()
                .find(|c| !c.is_float() && c.bits() == bits && c.is_signed() == is_signed),
            _ => None,
        };
        let usage = match constant(ctx, id_at(&t, 4)) {
            Some(0) => Some(Use::A),
            Some(1) => Some(Use::B),
            Some(2) => Some(Use::Accumulator),
            _ => None,
        };
        let (Some(component), Some(rows), Some(cols), Some(usage)) = (
            component,
            constant(ctx, id_at(&t, 2)),
            constant(ctx, id_at(&t, 3)),
            usage,
        ) else {
            return Err(
                "a cooperative matrix type of an element type, use or size vkcl does not take \
                 (sizes must be constants, not specialization constants)"
                    .into(),
            );
        };
        let matrix = MatrixType {
            usage,
            component,
            rows,
            cols,
        };
        let scope = match t.operands.get(1) {
            Some(Operand::IdScope(x) | Operand::IdRef(x)) => Some(*x),
            _ => None,
        };
        if constant(ctx, scope) != Some(Scope::Subgroup as u32) || !offered.contains(&matrix) {
            return Err(format!(
                "the device has no cooperative matrix {} at sub-group scope (cl_vkcl_cooperative_matrix)",
                matrix.type_name()
            ));
        }
        if is_signed {
            let uses_elements = ctx
                .module
                .functions
                .iter()
                .flat_map(|f| f.all_inst_iter())
                .any(|i| {
                    let on_matrix = |k: usize| id_at(i, k).and_then(|v| types.get(&v)) == Some(&id);
                    match i.class.opcode {
                        Op::CompositeConstruct => i.result_type == Some(id),
                        Op::CompositeExtract | Op::CompositeInsert => {
                            on_matrix(0) || on_matrix(1) || i.result_type == Some(id)
                        }
                        Op::AccessChain | Op::InBoundsAccessChain => on_matrix(0),
                        _ => false,
                    }
                });
            if uses_elements {
                return Err(format!(
                    "elements of signed integer matrices ({}) in SPIR-V IL are not supported yet",
                    matrix.type_name()
                ));
            }
            let element = component_type(ctx, component);
            if let Some(slot) = ctx
                .module
                .types_global_values
                .iter_mut()
                .find(|x| x.result_id == Some(id))
            {
                slot.operands[0] = Operand::IdRef(element);
            }
        }
    }
    ctx.sort_globals();
    // Device memory accesses promise vkcl's alignment where they name none.
    let types = ctx.value_types();
    let device_pointer = |v: Word, ctx: &Ctx| {
        types
            .get(&v)
            .and_then(|t| ctx.pointer_parts(*t))
            .is_some_and(|(sc, _)| {
                matches!(
                    sc,
                    StorageClass::CrossWorkgroup | StorageClass::UniformConstant
                )
            })
    };
    let mut functions = std::mem::take(&mut ctx.module.functions);
    let mut result = Ok(());
    for i in functions
        .iter_mut()
        .flat_map(|f| f.blocks.iter_mut())
        .flat_map(|b| b.instructions.iter_mut())
    {
        let at = match i.class.opcode {
            Op::CooperativeMatrixLoadKHR => 3,
            Op::CooperativeMatrixStoreKHR => 4,
            _ => continue,
        };
        if !id_at(i, 0).is_some_and(|p| device_pointer(p, ctx)) {
            continue;
        }
        if i.operands.len() < at {
            result = Err("a cooperative matrix load or store without a stride".to_string());
            break;
        }
        match i.operands.get_mut(at) {
            Some(Operand::MemoryAccess(m)) if m.contains(MemoryAccess::ALIGNED) => {}
            Some(Operand::MemoryAccess(m)) => {
                *m |= MemoryAccess::ALIGNED;
                i.operands.insert(at + 1, Operand::LiteralBit32(ALIGNMENT));
            }
            _ => {
                i.operands
                    .push(Operand::MemoryAccess(MemoryAccess::ALIGNED));
                i.operands.push(Operand::LiteralBit32(ALIGNMENT));
            }
        }
    }
    ctx.module.functions = functions;
    result
}

/// The SPIR-V type of a matrix element: signed integers are signed types
/// (drivers match matrix types against their list by signedness).
fn component_type(ctx: &mut Ctx, c: Component) -> Word {
    if c.is_float() {
        ctx.ty(Op::TypeFloat, vec![Operand::LiteralBit32(c.bits())])
    } else {
        ctx.ty(
            Op::TypeInt,
            vec![
                Operand::LiteralBit32(c.bits()),
                Operand::LiteralBit32(c.is_signed() as u32),
            ],
        )
    }
}

/// The instructions for one call of a built-in, appended to `out`;
/// variables the function needs go to `variables`.
#[allow(clippy::too_many_arguments)]
fn lower(
    ctx: &mut Ctx,
    types: &HashMap<Word, Word>,
    matrix_of: &HashMap<Word, MatrixType>,
    which: Builtin,
    name: &str,
    call: &Instruction,
    out: &mut Vec<Instruction>,
    variables: &mut Vec<Instruction>,
) -> Result<(), String> {
    let args: Vec<Word> = (1..call.operands.len())
        .map(|k| id_at(call, k).ok_or_else(|| format!("malformed call of {name}")))
        .collect::<Result<_, _>>()?;
    let arg = |k: usize| {
        args.get(k)
            .copied()
            .ok_or_else(|| format!("{name} takes more arguments"))
    };
    let rt = call.result_type.ok_or("a call without a type")?;
    let rid = call.result_id;
    let matrix = |v: Word| -> Result<(Word, MatrixType), String> {
        let t = *types
            .get(&v)
            .ok_or_else(|| format!("{name}: unknown value %{v}"))?;
        let m = *matrix_of
            .get(&t)
            .ok_or_else(|| format!("{name} takes a cooperative matrix"))?;
        Ok((t, m))
    };
    let mut emit = |op: Op, ty: Option<Word>, id: Option<Word>, operands: Vec<Operand>| {
        out.push(Instruction::new(op, ty, id, operands));
    };
    let ids = |v: &[Word]| v.iter().map(|&x| Operand::IdRef(x)).collect::<Vec<_>>();
    match which {
        Builtin::Load(_) | Builtin::Store => {
            let ptr = arg(0)?;
            let store = which == Builtin::Store;
            let (layout, stride) = if store {
                (arg(2)?, arg(3)?)
            } else {
                (arg(1)?, arg(2)?)
            };
            let layout = constant_layout(ctx, layout, name)?;
            let class = types
                .get(&ptr)
                .and_then(|t| ctx.pointer_parts(*t))
                .map(|(sc, _)| sc)
                .ok_or_else(|| format!("{name} takes a pointer"))?;
            let mut operands = if store {
                ids(&[ptr, arg(1)?, layout, stride])
            } else {
                ids(&[ptr, layout, stride])
            };
            if matches!(
                class,
                StorageClass::CrossWorkgroup | StorageClass::UniformConstant
            ) {
                operands.push(Operand::MemoryAccess(MemoryAccess::ALIGNED));
                operands.push(Operand::LiteralBit32(ALIGNMENT));
            }
            if store {
                emit(Op::CooperativeMatrixStoreKHR, None, None, operands);
            } else {
                emit(Op::CooperativeMatrixLoadKHR, Some(rt), rid, operands);
            }
        }
        Builtin::MulAdd => {
            let (a, b, c) = (arg(0)?, arg(1)?, arg(2)?);
            let (_, ma) = matrix(a)?;
            let (_, mb) = matrix(b)?;
            let (_, mc) = matrix(c)?;
            let mut flags = CooperativeMatrixOperands::NONE_KHR;
            for (signed, flag) in [
                (
                    ma.component.is_signed(),
                    CooperativeMatrixOperands::MATRIX_A_SIGNED_COMPONENTS_KHR,
                ),
                (
                    mb.component.is_signed(),
                    CooperativeMatrixOperands::MATRIX_B_SIGNED_COMPONENTS_KHR,
                ),
                (
                    mc.component.is_signed(),
                    CooperativeMatrixOperands::MATRIX_C_SIGNED_COMPONENTS_KHR,
                ),
                (
                    mc.component.is_signed(),
                    CooperativeMatrixOperands::MATRIX_RESULT_SIGNED_COMPONENTS_KHR,
                ),
            ] {
                if signed {
                    flags |= flag;
                }
            }
            let mut operands = ids(&[a, b, c]);
            if !flags.is_empty() {
                operands.push(Operand::CooperativeMatrixOperands(flags));
            }
            emit(Op::CooperativeMatrixMulAddKHR, Some(rt), rid, operands);
        }
        Builtin::Init(t) => {
            let v = to_component(ctx, t.component, arg(0)?, out);
            out.push(Instruction::new(
                Op::CompositeConstruct,
                Some(rt),
                rid,
                vec![Operand::IdRef(v)],
            ));
        }
        Builtin::Length => {
            let (t, _) = matrix(arg(0)?)?;
            emit(
                Op::CooperativeMatrixLengthKHR,
                Some(rt),
                rid,
                vec![Operand::IdRef(t)],
            );
        }
        Builtin::Extract | Builtin::Insert => {
            let (m, index) = (arg(0)?, arg(1)?);
            let (t, mt) = matrix(m)?;
            let element = component_type(ctx, mt.component);
            let var = ctx.fresh();
            let var_type = ctx.pointer(StorageClass::Function, t);
            variables.push(Instruction::new(
                Op::Variable,
                Some(var_type),
                Some(var),
                vec![Operand::StorageClass(StorageClass::Function)],
            ));
            let at = ctx.fresh();
            let at_type = ctx.pointer(StorageClass::Function, element);
            out.push(Instruction::new(Op::Store, None, None, ids(&[var, m])));
            out.push(Instruction::new(
                Op::AccessChain,
                Some(at_type),
                Some(at),
                ids(&[var, index]),
            ));
            if which == Builtin::Insert {
                let v = to_component(ctx, mt.component, arg(2)?, out);
                out.push(Instruction::new(Op::Store, None, None, ids(&[at, v])));
                out.push(Instruction::new(Op::Load, Some(rt), rid, ids(&[var])));
            } else if mt.component.is_signed() {
                let x = ctx.fresh();
                out.push(Instruction::new(
                    Op::Load,
                    Some(element),
                    Some(x),
                    ids(&[at]),
                ));
                out.push(Instruction::new(Op::Bitcast, Some(rt), rid, ids(&[x])));
            } else {
                out.push(Instruction::new(Op::Load, Some(rt), rid, ids(&[at])));
            }
        }
        Builtin::Arith(k) => {
            let (a, b) = (arg(0)?, arg(1)?);
            let (_, mt) = matrix(a)?;
            let op = arithmetic(mt.component, k);
            emit(op, Some(rt), rid, ids(&[a, b]));
        }
        Builtin::Negate => {
            let a = arg(0)?;
            let (_, mt) = matrix(a)?;
            let op = if mt.component.is_float() {
                Op::FNegate
            } else {
                Op::SNegate
            };
            emit(op, Some(rt), rid, ids(&[a]));
        }
        Builtin::Scale => {
            // The scalar made a matrix of its own, then multiplied
            // element-wise (OpMatrixTimesScalar takes float matrices only).
            let (a, s) = (arg(0)?, arg(1)?);
            let (t, mt) = matrix(a)?;
            let s = to_component(ctx, mt.component, s, out);
            let splat = ctx.fresh();
            out.push(Instruction::new(
                Op::CompositeConstruct,
                Some(t),
                Some(splat),
                vec![Operand::IdRef(s)],
            ));
            out.push(Instruction::new(
                arithmetic(mt.component, 2),
                Some(rt),
                rid,
                ids(&[a, splat]),
            ));
        }
        Builtin::Convert(to) => {
            let m = arg(0)?;
            let (_, from) = matrix(m)?;
            if !converts(&from, &to) {
                return Err(format!(
                    "{name}: {} does not convert to {}",
                    from.type_name(),
                    to.type_name()
                ));
            }
            let (f, g) = (from.component, to.component);
            let op = match (f.is_float(), g.is_float()) {
                (true, true) => Op::FConvert,
                (false, true) if f.is_signed() => Op::ConvertSToF,
                (false, true) => Op::ConvertUToF,
                (true, false) if g.is_signed() => Op::ConvertFToS,
                (true, false) => Op::ConvertFToU,
                (false, false) if f.is_signed() => Op::SConvert,
                (false, false) => Op::UConvert,
            };
            emit(op, Some(rt), rid, ids(&[m]));
        }
    }
    Ok(())
}

/// The element-wise operation `k` (add, sub, mul, div) for elements of
/// this type.
fn arithmetic(c: Component, k: u8) -> Op {
    match (c.is_float(), k) {
        (true, 0) => Op::FAdd,
        (true, 1) => Op::FSub,
        (true, 2) => Op::FMul,
        (true, _) => Op::FDiv,
        (false, 0) => Op::IAdd,
        (false, 1) => Op::ISub,
        (false, 2) => Op::IMul,
        (false, _) if c.is_signed() => Op::SDiv,
        (false, _) => Op::UDiv,
    }
}

/// A scalar of the kernel as a matrix element: signed elements are signed
/// integer types, which OpenCL SPIR-V does not have.
fn to_component(ctx: &mut Ctx, c: Component, v: Word, out: &mut Vec<Instruction>) -> Word {
    if !c.is_signed() {
        return v;
    }
    let ty = component_type(ctx, c);
    let id = ctx.fresh();
    out.push(Instruction::new(
        Op::Bitcast,
        Some(ty),
        Some(id),
        vec![Operand::IdRef(v)],
    ));
    id
}

/// The layout argument as a 32-bit constant (SPIR-V takes only constants).
fn constant_layout(ctx: &mut Ctx, layout: Word, name: &str) -> Result<Word, String> {
    let value = ctx
        .global(layout)
        .and_then(|c| match (c.class.opcode, c.operands.first()) {
            (Op::Constant, Some(Operand::LiteralBit32(v))) => Some(*v),
            (Op::Constant, Some(Operand::LiteralBit64(v))) => u32::try_from(*v).ok(),
            (Op::ConstantNull, _) => Some(0),
            _ => None,
        });
    match value {
        Some(v @ (0 | 1)) => Ok(ctx.const_u32(v)),
        Some(v) => Err(format!(
            "{name}: layout {v} is neither CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR nor _COLUMN_MAJOR"
        )),
        None => Err(format!(
            "{name}: the layout must be a constant (CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR or _COLUMN_MAJOR)"
        )),
    }
}

/// Fails where a matrix is used other than through the built-ins,
/// assignment and calls (a cast of the handle, a comparison, a
/// conversion to an integer).
fn check_uses(ctx: &Ctx, matrix_of: &HashMap<Word, MatrixType>) -> Result<(), String> {
    if matrix_of.is_empty() {
        return Ok(());
    }
    let types = ctx.value_types();
    let is_matrix = |v: Word| types.get(&v).is_some_and(|t| matrix_of.contains_key(t));
    for i in ctx.module.functions.iter().flat_map(|f| f.all_inst_iter()) {
        let allowed = matches!(
            i.class.opcode,
            Op::Phi
                | Op::Select
                | Op::Load
                | Op::Store
                | Op::FunctionCall
                | Op::ReturnValue
                | Op::CopyObject
                | Op::CompositeConstruct
                | Op::CompositeInsert
                | Op::CompositeExtract
                | Op::CooperativeMatrixLoadKHR
                | Op::CooperativeMatrixStoreKHR
                | Op::CooperativeMatrixMulAddKHR
                | Op::CooperativeMatrixLengthKHR
                | Op::FAdd
                | Op::FSub
                | Op::FMul
                | Op::FDiv
                | Op::IAdd
                | Op::ISub
                | Op::IMul
                | Op::SDiv
                | Op::UDiv
                | Op::FNegate
                | Op::SNegate
                | Op::FConvert
                | Op::SConvert
                | Op::UConvert
                | Op::ConvertSToF
                | Op::ConvertUToF
                | Op::ConvertFToS
                | Op::ConvertFToU
        );
        if !allowed
            && i.operands
                .iter()
                .any(|o| matches!(o, Operand::IdRef(v) if is_matrix(*v)))
        {
            return Err(format!(
                "a cooperative matrix is used by {:?}: matrices can only be assigned, passed to functions and given to the coop_mat_* built-ins",
                i.class.opcode
            ));
        }
    }
    Ok(())
}

/// After the built-ins pass made `half` values `ushort` (keeping the
/// 16-bit float type `half` for the matrices, whose types `coop_f16`
/// are): the scalars that fill a half matrix, and elements read from and
/// written into one, are bitcast between the two.
pub fn reconcile_halves(ctx: &mut Ctx, half: Word, short: Word, coop_f16: &HashSet<Word>) {
    /// Where half bits meet a half matrix.
    enum Meets {
        /// The result is a matrix element: it becomes `half`, bitcast to
        /// the bits under the instruction's id.
        Result,
        /// Operand `k` (the bits) is bitcast to `half` first.
        Operand(usize),
        /// Every operand of the bits' type is.
        Operands,
    }
    let types = ctx.value_types();
    let points_into_matrix = |v: Word, ctx: &Ctx| {
        types
            .get(&v)
            .and_then(|t| ctx.pointer_parts(*t))
            .is_some_and(|(_, p)| coop_f16.contains(&p))
    };
    let of_matrix = |v: Option<Word>| {
        v.and_then(|v| types.get(&v))
            .is_some_and(|t| coop_f16.contains(t))
    };
    let mut functions = std::mem::take(&mut ctx.module.functions);
    for b in functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
        // Pointers to elements (access chains into a matrix variable).
        let mut elements: HashSet<Word> = HashSet::default();
        let mut out = Vec::with_capacity(b.instructions.len());
        for mut i in b.instructions.drain(..) {
            let element = |i: &Instruction| id_at(i, 0).is_some_and(|p| elements.contains(&p));
            let meets = match i.class.opcode {
                Op::AccessChain | Op::InBoundsAccessChain
                    if id_at(&i, 0).is_some_and(|base| points_into_matrix(base, ctx)) =>
                {
                    if let Some((sc, _)) = i.result_type.and_then(|t| ctx.pointer_parts(t)) {
                        i.result_type = Some(ctx.pointer(sc, half));
                    }
                    elements.extend(i.result_id);
                    None
                }
                Op::Load if element(&i) => Some(Meets::Result),
                Op::Store if element(&i) => Some(Meets::Operand(1)),
                Op::CompositeExtract if of_matrix(id_at(&i, 0)) => Some(Meets::Result),
                Op::CompositeInsert if of_matrix(i.result_id) => Some(Meets::Operand(0)),
                Op::CompositeConstruct if of_matrix(i.result_id) => Some(Meets::Operands),
                _ => None,
            };
            let mut to_half = |v: Word, out: &mut Vec<Instruction>| {
                let x = ctx.fresh();
                out.push(Instruction::new(
                    Op::Bitcast,
                    Some(half),
                    Some(x),
                    vec![Operand::IdRef(v)],
                ));
                x
            };
            match meets {
                Some(Meets::Result) => {
                    let x = ctx.fresh();
                    let id = i.result_id;
                    i.result_type = Some(half);
                    i.result_id = Some(x);
                    out.push(i);
                    i = Instruction::new(Op::Bitcast, Some(short), id, vec![Operand::IdRef(x)]);
                }
                Some(Meets::Operand(k)) => {
                    if let Some(v) = id_at(&i, k) {
                        i.operands[k] = Operand::IdRef(to_half(v, &mut out));
                    }
                }
                Some(Meets::Operands) => {
                    for o in &mut i.operands {
                        if let Operand::IdRef(v) = o
                            && types.get(v) == Some(&short)
                        {
                            *v = to_half(*v, &mut out);
                        }
                    }
                }
                None => {}
            }
            out.push(i);
        }
        b.instructions = out;
    }
    ctx.module.functions = functions;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let t = MatrixType {
            usage: Use::Accumulator,
            component: Component::Float,
            rows: 16,
            cols: 8,
        };
        assert_eq!(t.type_name(), "coop_mat_acc_float_16x8");
        assert_eq!(MatrixType::parse(&t.suffix()), Some(t));
        assert_eq!(
            builtin("_Z26coop_mat_load_a_half_16x16PU3AS1KDhij"),
            Some(Builtin::Load(MatrixType {
                usage: Use::A,
                component: Component::Half,
                rows: 16,
                cols: 16
            }))
        );
        assert_eq!(
            builtin("_Z15coop_mat_muladdP1aP1bP1c"),
            Some(Builtin::MulAdd)
        );
        assert_eq!(builtin("coop_mat_frobnicate"), None);
        assert_eq!(builtin("_Z3fooi"), None);
    }
}

#[cfg(test)]
mod rewrite_tests {
    use super::*;
    use crate::compiler::frontend::{DeviceMacros, Options, Purpose, front_end};
    use crate::compiler::spirv::input::reflect;

    const VARIANTS: &[MatrixVariant] = SAMPLE;

    fn caps() -> DeviceCaps {
        DeviceCaps {
            max_push_constants: 128,
            int8: true,
            int16: true,
            float16: true,
            storage8: true,
            storage16: true,
            vulkan_memory_model: true,
            subgroup_size: 32,
            max_work_group_size: 1024,
            matrices: VARIANTS,
            ..Default::default()
        }
    }

    fn build(source: &str) -> Option<Vec<u32>> {
        build_with(source, "")
    }

    fn build_with(source: &str, options: &str) -> Option<Vec<u32>> {
        let Some(fe) = front_end() else {
            eprintln!("no OpenCL C front end: skipped");
            return None;
        };
        let options =
            Options::parse(&format!("-cl-std=CL3.0 {options}"), Purpose::Build).expect("options");
        let device = DeviceMacros {
            features: vec!["cl_khr_fp16".into(), "__opencl_c_subgroups".into()],
            image_support: false,
            matrices: VARIANTS,
        };
        match fe.compile(source, &[], &options, &device) {
            Ok(compiled) => Some(compiled.spirv),
            Err(e) => panic!("the source does not build: {}", e.log),
        }
    }

    /// The test file's module and kernels, where there is a front end.
    fn test_kernels() -> Option<(Vec<u32>, Vec<reflect::KernelInfo>)> {
        let words = build(include_str!(
            "../../../../tests/kernels/cooperative_matrix.cl"
        ))?;
        let module = reflect::load(&words).unwrap();
        let kernels = reflect::kernels(&module).unwrap();
        Some((words, kernels))
    }

    /// Every kernel of the test file rewrites to a module the validator
    /// takes (Vulkan 1.2), with matrix instructions and no handle left.
    #[test]
    fn kernels_become_cooperative_matrix_code() {
        let Some((words, kernels)) = test_kernels() else {
            return;
        };
        assert_eq!(kernels.len(), 3);
        for native_f16 in [false, true] {
            let caps = DeviceCaps {
                native_f16,
                ..caps()
            };
            for kernel in &kernels {
                let rewritten = crate::compiler::spirv::rewrite(&words, kernel, &caps)
                    .unwrap_or_else(|e| panic!("{}: {e}", kernel.name));
                let out = rspirv::dr::load_words(&rewritten.words).unwrap();
                let ops: Vec<Op> = out.all_inst_iter().map(|i| i.class.opcode).collect();
                assert!(
                    ops.contains(&Op::TypeCooperativeMatrixKHR),
                    "{}",
                    kernel.name
                );
                assert!(
                    ops.contains(&Op::CooperativeMatrixStoreKHR),
                    "{}",
                    kernel.name
                );
                assert!(!ops.contains(&Op::TypeOpaque), "{}", kernel.name);
                assert!(!ops.contains(&Op::FunctionCall), "{}", kernel.name);
            }
        }
    }

    /// The example's GEMM (local memory, sub-group ids, 2 × 4 accumulators
    /// in an array of arrays) rewrites, with its matrices in registers:
    /// nothing moves to scratch memory.
    #[test]
    fn the_example_gemm_rewrites() {
        for options in ["", "-DINT8"] {
            let Some(words) =
                build_with(include_str!("../../../../examples/coop_matmul.cl"), options)
            else {
                return;
            };
            let module = reflect::load(&words).unwrap();
            let kernel = &reflect::kernels(&module).unwrap()[0];
            let caps = DeviceCaps {
                subgroup_ops: 0xff,
                ..caps()
            };
            let rewritten = crate::compiler::spirv::rewrite(&words, kernel, &caps)
                .unwrap_or_else(|e| panic!("{options}: {e}"));
            assert_eq!(
                rewritten.scratch,
                crate::compiler::spirv::p3_interface::relocate::Scratch::default(),
                "{options}"
            );
        }
    }

    /// A device without matrices, or without this shape, fails the
    /// kernel with a message naming the matrix.
    #[test]
    fn matrices_the_device_lacks_fail_by_name() {
        let Some((words, kernels)) = test_kernels() else {
            return;
        };
        let gemm = kernels.iter().find(|k| k.name == "gemm").unwrap();
        let caps = DeviceCaps {
            matrices: &VARIANTS[2..],
            ..caps()
        };
        let e = crate::compiler::spirv::rewrite(&words, gemm, &caps).unwrap_err();
        assert!(e.contains("coop_mat_a_half_16x16"), "{e}");
    }

    /// SPIR-V IL that uses SPV_KHR_cooperative_matrix itself: half and
    /// signed byte matrices, an element read and written, a fill.
    const IL: &str = include_str!("../../../../tests/kernels/cooperative_matrix_il.spvasm");

    /// IL kernels with matrices of their own rewrite to valid Vulkan
    /// modules on a device with those matrices (the bytes as signed
    /// ones), and fail by name on one without.
    #[test]
    fn il_matrices_rewrite() {
        use spirv_tools::assembler::Assembler;
        let words = spirv_tools::assembler::create(Some(spirv_tools::TargetEnv::Universal_1_3))
            .assemble(IL, Default::default())
            .expect("the test module assembles")
            .as_words()
            .to_vec();
        let module = reflect::load(&words).unwrap();
        let kernels = reflect::kernels(&module).unwrap();
        for kernel in &kernels {
            crate::compiler::spirv::rewrite(&words, kernel, &caps())
                .unwrap_or_else(|e| panic!("{}: {e}", kernel.name));
            let without = DeviceCaps {
                matrices: &VARIANTS[..1],
                ..caps()
            };
            if kernel.name == "bytes" {
                let e = crate::compiler::spirv::rewrite(&words, kernel, &without).unwrap_err();
                assert!(e.contains("coop_mat_a_char_16x32"), "{e}");
            }
        }
    }

    /// A layout that is no constant fails the kernel with a message.
    #[test]
    fn a_layout_must_be_a_constant() {
        let Some(words) = build(
            "kernel void k(global const float *p, global float *q, int layout) {\n\
             coop_mat_acc_float_16x16 m = coop_mat_load_acc_float_16x16(p, layout, 16);\n\
             coop_mat_store(q, m, 0, 16);\n}\n",
        ) else {
            return;
        };
        let module = reflect::load(&words).unwrap();
        let kernel = &reflect::kernels(&module).unwrap()[0];
        let e = crate::compiler::spirv::rewrite(&words, kernel, &caps()).unwrap_err();
        assert!(e.contains("layout must be a constant"), "{e}");
    }
}
