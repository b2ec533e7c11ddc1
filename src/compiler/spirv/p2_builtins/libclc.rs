//! Built-ins from libclc. The `OpenCL.std`
//! instructions that Vulkan has no instruction for at OpenCL's precision
//! (`sin`, `exp`, `pow`, `log`, ...) become calls to libclc's
//! implementations, which are copied from libclc's SPIR-V library into
//! the module (with the functions, constant tables, types and constants
//! they use) and then inlined and rewritten like the kernel's own code.
//!
//! The library is `VKCL_LIBCLC`, else libclc's `spirv64-mesa3d-.spv` in
//! the usual places; it is read once per process. libclc names its
//! functions with the Itanium C++ mangling of the OpenCL C overloads
//! (`_Z3powff`, `_Z5fractDv4_fPU3AS1S_`), so the call is found by
//! mangling the built-in's name with its operand types.

use std::sync::OnceLock;

use rspirv::dr::{Function, Instruction, Module, Operand};
use rspirv::spirv::{Decoration, Op, StorageClass, Word};

use crate::compiler::spirv::common::HashMap;
use crate::compiler::spirv::common::ctx::{Ctx, id_at};

/// libclc's SPIR-V library, indexed for lookups.
pub struct Library {
    module: Module,
    /// Exported function name -> index in `module.functions`.
    exports: HashMap<String, usize>,
    /// Function id -> index in `module.functions`.
    functions: HashMap<Word, usize>,
    /// Global id (type, constant, variable) -> index in types_global_values.
    globals: HashMap<Word, usize>,
    /// The library's `OpenCL.std` import.
    opencl_std: Option<Word>,
    /// Target id -> indexes of its decorations in `module.annotations`.
    decorations: HashMap<Word, Vec<usize>>,
    /// The library's `OpConstantTrue` and `OpConstantFalse`.
    true_false: Option<(Word, Word)>,
}

/// Whether denormals are kept, as the device and the build options
/// decide. libclc asks `__clc_fp32_subnormals_supported` and
/// `__clc_fp64_subnormals_supported`, which its SPIR-V library answers
/// "no" for every type; its `fma`, `ldexp`, `rootn` and `remquo` then
/// flush denormal operands. The copies answer with these instead.
#[derive(Clone, Copy, Debug, Default)]
pub struct Subnormals {
    pub float: bool,
    pub double: bool,
}

const LIBRARY_PATHS: &[&str] = &[
    "/usr/lib/clc/spirv64-mesa3d-.spv",
    "/usr/share/clc/spirv64-mesa3d-.spv",
    "/usr/local/lib/clc/spirv64-mesa3d-.spv",
    "/usr/local/share/clc/spirv64-mesa3d-.spv",
];

/// The library, or why there is none.
pub fn library() -> Result<&'static Library, String> {
    static LIB: OnceLock<Result<Library, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Where the library is: `VKCL_LIBCLC`, else the first of the usual places.
fn path() -> Result<std::path::PathBuf, String> {
    match std::env::var_os("VKCL_LIBCLC") {
        Some(p) => Ok(std::path::PathBuf::from(p)),
        None => LIBRARY_PATHS
            .iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.exists())
            .ok_or_else(|| {
                "libclc's SPIR-V library (spirv64-mesa3d-.spv, package libclc) is not installed"
                    .to_string()
            }),
    }
}

/// The library file this process uses (its path, size and modification
/// time), without loading it: rewrites that called into another version
/// of libclc are not this one's.
pub fn identity() -> String {
    let Ok(path) = path() else {
        return "none".into();
    };
    let meta = std::fs::metadata(&path).ok();
    let modified = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!(
        "{} {} {modified}",
        path.display(),
        meta.map_or(0, |m| m.len())
    )
}

fn load() -> Result<Library, String> {
    let path = path()?;
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let module = rspirv::dr::load_bytes(&bytes)
        .map_err(|e| format!("{} is not a SPIR-V module: {e}", path.display()))?;
    let functions: HashMap<Word, usize> = module
        .functions
        .iter()
        .enumerate()
        .filter_map(|(n, f)| Some((f.def.as_ref()?.result_id?, n)))
        .collect();
    let mut exports = HashMap::default();
    for a in &module.annotations {
        if a.class.opcode != Op::Decorate
            || a.operands.get(1) != Some(&Operand::Decoration(Decoration::LinkageAttributes))
        {
            continue;
        }
        if let (Some(target), Some(Operand::LiteralString(name))) = (id_at(a, 0), a.operands.get(2))
        {
            if let Some(&n) = functions.get(&target) {
                exports.insert(name.clone(), n);
            }
        }
    }
    let globals = module
        .types_global_values
        .iter()
        .enumerate()
        .filter_map(|(n, i)| Some((i.result_id?, n)))
        .collect();
    let opencl_std = module.ext_inst_imports.iter().find_map(|i| {
        (i.operands.first() == Some(&Operand::LiteralString("OpenCL.std".into())))
            .then_some(i.result_id)
            .flatten()
    });
    let mut decorations: HashMap<Word, Vec<usize>> = HashMap::default();
    for (n, a) in module.annotations.iter().enumerate() {
        if matches!(a.class.opcode, Op::Decorate | Op::MemberDecorate) {
            if let Some(t) = id_at(a, 0) {
                decorations.entry(t).or_default().push(n);
            }
        }
    }
    let constant = |op: Op| {
        module
            .types_global_values
            .iter()
            .find(|i| i.class.opcode == op)
            .and_then(|i| i.result_id)
    };
    let true_false = constant(Op::ConstantTrue).zip(constant(Op::ConstantFalse));
    log::debug!(target: "vkcl::compiler", "libclc: {} ({} functions)", path.display(), exports.len());
    Ok(Library {
        module,
        exports,
        functions,
        globals,
        opencl_std,
        decorations,
        true_false,
    })
}

impl Library {
    pub fn has(&self, name: &str) -> bool {
        self.exports.contains_key(name)
    }
}

/// Copies library functions into a module, remembering what it copied.
pub struct Linker {
    lib: &'static Library,
    /// Library id -> module id.
    map: HashMap<Word, Word>,
    /// The module's constants by their text, for reuse.
    existing: HashMap<String, Word>,
    subnormals: Subnormals,
}

/// What identifies a constant: its opcode, type and operands.
fn global_key(i: &Instruction) -> String {
    format!("{:?} {:?} {:?}", i.class.opcode, i.result_type, i.operands)
}

impl Linker {
    pub fn new(lib: &'static Library, subnormals: Subnormals) -> Linker {
        Linker {
            lib,
            map: HashMap::default(),
            existing: HashMap::default(),
            subnormals,
        }
    }

    /// Starts a round of copying: functions copied before were inlined
    /// and are gone, and the module may have new types and constants.
    pub fn begin(&mut self, ctx: &Ctx) {
        let lib = self.lib;
        self.map.retain(|k, _| !lib.functions.contains_key(k));
        self.existing = ctx
            .module
            .types_global_values
            .iter()
            .filter(|g| g.class.opcode != Op::Variable && g.result_type.is_some())
            .filter_map(|g| Some((global_key(g), g.result_id?)))
            .collect();
    }

    /// The module's function for exported library function `name`,
    /// copied in on first use.
    pub fn function(&mut self, ctx: &mut Ctx, name: &str) -> Result<Word, String> {
        let &n = self
            .lib
            .exports
            .get(name)
            .ok_or_else(|| format!("libclc has no {name}"))?;
        let fid = self.lib.module.functions[n]
            .def
            .as_ref()
            .and_then(|d| d.result_id)
            .ok_or("libclc function without id")?;
        self.id(ctx, fid)
    }

    /// The module's id for library id `id`, copying what it names.
    fn id(&mut self, ctx: &mut Ctx, id: Word) -> Result<Word, String> {
        if let Some(&m) = self.map.get(&id) {
            return Ok(m);
        }
        if Some(id) == self.lib.opencl_std {
            let ours = ctx.ext_import_or_add("OpenCL.std");
            self.map.insert(id, ours);
            return Ok(ours);
        }
        if let Some(&n) = self.lib.functions.get(&id) {
            return self.copy_function(ctx, n);
        }
        let &n = self
            .lib
            .globals
            .get(&id)
            .ok_or_else(|| format!("libclc id %{id} is not defined"))?;
        let src = self.lib.module.types_global_values[n].clone();
        let mut i = src.clone();
        if let Some(t) = i.result_type {
            i.result_type = Some(self.id(ctx, t)?);
        }
        for o in &mut i.operands {
            if let Operand::IdRef(x) | Operand::IdScope(x) | Operand::IdMemorySemantics(x) = o {
                *x = self.id(ctx, *x)?;
            }
        }
        // Types and constants already in the module are reused (SPIR-V
        // forbids duplicate scalar types); variables are always new.
        if i.result_type.is_none() {
            // A type: found or added like the passes' own, so that no
            // type is declared twice.
            let before = ctx.module.types_global_values.len();
            let ours = ctx.ty(i.class.opcode, i.operands);
            if ctx.module.types_global_values.len() > before {
                self.copy_decorations(ctx, id, ours);
            }
            self.map.insert(id, ours);
            return Ok(ours);
        }
        let key = (i.class.opcode != Op::Variable).then(|| global_key(&i));
        let ours = match key.as_ref().and_then(|k| self.existing.get(k)) {
            Some(&e) => e,
            None => {
                let fresh = ctx.fresh();
                i.result_id = Some(fresh);
                ctx.module.types_global_values.push(i);
                if let Some(k) = key {
                    self.existing.insert(k, fresh);
                }
                self.copy_decorations(ctx, id, fresh);
                fresh
            }
        };
        self.map.insert(id, ours);
        Ok(ours)
    }

    fn copy_decorations(&mut self, ctx: &mut Ctx, from: Word, to: Word) {
        let lib = self.lib;
        let decorations: Vec<Instruction> = lib
            .decorations
            .get(&from)
            .into_iter()
            .flatten()
            .map(|&n| &lib.module.annotations[n])
            .filter(|a| {
                !matches!(
                    a.operands.get(1),
                    Some(Operand::Decoration(
                        Decoration::LinkageAttributes | Decoration::FuncParamAttr
                    ))
                )
            })
            .cloned()
            .collect();
        for mut d in decorations {
            d.operands[0] = Operand::IdRef(to);
            ctx.module.annotations.push(d);
        }
    }

    fn copy_function(&mut self, ctx: &mut Ctx, n: usize) -> Result<Word, String> {
        let src: &Function = &self.lib.module.functions[n];
        let def = src
            .def
            .as_ref()
            .ok_or("libclc function without definition")?;
        let fid = def.result_id.ok_or("libclc function without id")?;
        let name = self
            .lib
            .exports
            .iter()
            .find_map(|(k, &v)| (v == n).then_some(k.as_str()))
            .unwrap_or("?");
        if src.blocks.is_empty() {
            return Err(format!("libclc's {name} has no body"));
        }
        let answer = match name {
            "__clc_fp32_subnormals_supported" => Some(self.subnormals.float),
            "__clc_fp64_subnormals_supported" => Some(self.subnormals.double),
            _ => None,
        };
        let ours = ctx.fresh();
        self.map.insert(fid, ours);
        // Fresh ids for everything the function defines.
        let local: Vec<Word> = src
            .parameters
            .iter()
            .chain(
                src.blocks
                    .iter()
                    .flat_map(|b| b.label.iter().chain(&b.instructions)),
            )
            .filter_map(|i| i.result_id)
            .collect();
        for l in local {
            let f = ctx.fresh();
            self.map.insert(l, f);
        }
        let src = src.clone();
        let mut copy = src.clone();
        let remap = |this: &mut Self, ctx: &mut Ctx, i: &mut Instruction| -> Result<(), String> {
            if let Some(r) = i.result_id.as_mut() {
                *r = this.map[r];
            }
            if let Some(t) = i.result_type {
                i.result_type = Some(this.id(ctx, t)?);
            }
            for o in &mut i.operands {
                if let Operand::IdRef(x) | Operand::IdScope(x) | Operand::IdMemorySemantics(x) = o {
                    *x = this.id(ctx, *x)?;
                }
            }
            Ok(())
        };
        let mut d = copy.def.take().ok_or("no definition")?;
        remap(self, ctx, &mut d)?;
        // Everything gets inlined: the library's DontInline means nothing here.
        d.operands[0] = Operand::FunctionControl(rspirv::spirv::FunctionControl::NONE);
        copy.def = Some(d);
        for p in &mut copy.parameters {
            remap(self, ctx, p)?;
        }
        for b in &mut copy.blocks {
            if let Some(l) = b.label.as_mut() {
                remap(self, ctx, l)?;
            }
            for i in &mut b.instructions {
                remap(self, ctx, i)?;
            }
        }
        if let (Some(yes), Some((t, f))) = (answer, self.lib.true_false) {
            let value = self.id(ctx, if yes { t } else { f })?;
            for i in copy.blocks.iter_mut().flat_map(|b| &mut b.instructions) {
                if i.class.opcode == Op::ReturnValue {
                    i.operands = vec![Operand::IdRef(value)];
                }
            }
        }
        ctx.module.functions.push(copy);
        Ok(ours)
    }
}

/// The Itanium mangled name of OpenCL C built-in `name` for operands of
/// SPIR-V types `params`, as libclc names it. Integer operands of the
/// math functions are always `int` (`ldexp`, `pown`, `rootn`, `frexp`).
pub fn mangle(ctx: &Ctx, name: &str, params: &[Word]) -> Option<String> {
    let mut out = format!("_Z{}{}", name.len(), name);
    let mut subs: Vec<String> = Vec::new();
    for &p in params {
        out.push_str(&encode(ctx, p, &mut subs)?);
    }
    Some(out)
}

fn scalar_code(ctx: &Ctx, ty: Word) -> Option<&'static str> {
    let t = ctx.global(ty)?;
    let w = match t.operands.first() {
        Some(Operand::LiteralBit32(w)) => *w,
        _ => return None,
    };
    Some(match (t.class.opcode, w) {
        (Op::TypeFloat, 16) => "Dh",
        (Op::TypeFloat, 32) => "f",
        (Op::TypeFloat, 64) => "d",
        (Op::TypeInt, 8) => "c",
        (Op::TypeInt, 16) => "s",
        (Op::TypeInt, 32) => "i",
        (Op::TypeInt, 64) => "l",
        _ => return None,
    })
}

fn substitute(code: String, subs: &mut Vec<String>) -> String {
    if let Some(k) = subs.iter().position(|s| *s == code) {
        return if k == 0 {
            "S_".into()
        } else {
            format!("S{}_", k - 1)
        };
    }
    subs.push(code.clone());
    code
}

fn encode(ctx: &Ctx, ty: Word, subs: &mut Vec<String>) -> Option<String> {
    let t = ctx.global(ty)?;
    match t.class.opcode {
        Op::TypeVector => {
            let c = id_at(t, 0)?;
            let n = match t.operands.get(1) {
                Some(Operand::LiteralBit32(n)) => *n,
                _ => return None,
            };
            Some(substitute(format!("Dv{n}_{}", scalar_code(ctx, c)?), subs))
        }
        Op::TypePointer => {
            let space = match t.operands.first() {
                Some(Operand::StorageClass(StorageClass::Function)) => "",
                Some(Operand::StorageClass(StorageClass::CrossWorkgroup)) => "U3AS1",
                Some(Operand::StorageClass(StorageClass::UniformConstant)) => "U3AS2",
                Some(Operand::StorageClass(StorageClass::Workgroup)) => "U3AS3",
                _ => return None,
            };
            let pointee = encode(ctx, id_at(t, 1)?, subs)?;
            let qualified = if space.is_empty() {
                pointee
            } else {
                substitute(format!("{space}{pointee}"), subs)
            };
            Some(substitute(format!("P{qualified}"), subs))
        }
        _ => scalar_code(ctx, ty).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::spirv::common::ctx::assemble;

    #[test]
    fn names_are_mangled_as_libclc_exports_them() {
        let ctx = assemble(
            "OpCapability Addresses
             OpCapability Kernel
             OpCapability Int64
             OpMemoryModel Physical64 OpenCL
             %float = OpTypeFloat 32
             %int = OpTypeInt 32 0
             %v2float = OpTypeVector %float 2
             %v4float = OpTypeVector %float 4
             %gp = OpTypePointer CrossWorkgroup %v2float
             %pi = OpTypePointer Function %int",
        );
        let id = |name: &str| {
            ctx.module
                .types_global_values
                .iter()
                .position(|i| {
                    format!("{:?}", i.class.opcode) == name
                        || (name == "v4" && i.operands.get(1) == Some(&Operand::LiteralBit32(4)))
                })
                .map(|n| ctx.module.types_global_values[n].result_id.unwrap())
                .unwrap()
        };
        let (float, v4) = (id("TypeFloat"), id("v4"));
        let v2 = ctx.module.types_global_values[2].result_id.unwrap();
        let (gp, pi) = (
            ctx.module.types_global_values[4].result_id.unwrap(),
            ctx.module.types_global_values[5].result_id.unwrap(),
        );
        assert_eq!(mangle(&ctx, "sin", &[float]).unwrap(), "_Z3sinf");
        assert_eq!(mangle(&ctx, "pow", &[v4, v4]).unwrap(), "_Z3powDv4_fS_");
        assert_eq!(
            mangle(&ctx, "fract", &[v2, gp]).unwrap(),
            "_Z5fractDv2_fPU3AS1S_"
        );
        assert_eq!(mangle(&ctx, "frexp", &[float, pi]).unwrap(), "_Z5frexpfPi");
    }
}
