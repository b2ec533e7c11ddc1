//! Editing an rspirv module: fresh ids, and types and constants found or
//! added in the module's global section.

use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Op, StorageClass, Word};

/// A module under rewrite.
pub struct Ctx {
    pub module: Module,
    /// The private variable printf calls read the printf buffer's address
    /// from, when the kernel calls printf (see the printf pass).
    pub printf_buffer: Option<Word>,
    /// The private variable device-side enqueues read the launch list's
    /// address from, when the kernel enqueues (see the enqueue pass).
    pub enqueue_list: Option<Word>,
    /// The private variable holding the number the host gave the launch,
    /// which its records carry (see the enqueue pass).
    pub enqueue_parent: Option<Word>,
    /// Whether `__local` data was relocated into device memory (see the
    /// relocate pass): barriers then order device memory too.
    pub relocated_local: bool,
    /// Capabilities the kernel's image operations need (see the images
    /// pass); the finish pass declares them.
    pub image_caps: Vec<rspirv::spirv::Capability>,
    /// Whether the kernel is built on the Vulkan memory model (see the
    /// sync pass); the finish pass declares it.
    pub vulkan_memory_model: bool,
}

impl Ctx {
    pub fn new(module: Module) -> Ctx {
        Ctx {
            module,
            printf_buffer: None,
            enqueue_list: None,
            enqueue_parent: None,
            relocated_local: false,
            image_caps: Vec::new(),
            vulkan_memory_model: false,
        }
    }

    pub fn fresh(&mut self) -> Word {
        let h = self
            .module
            .header
            .as_mut()
            .expect("loaded modules have a header");
        let id = h.bound;
        h.bound += 1;
        id
    }

    pub fn find_type(&self, op: Op, operands: &[Operand]) -> Option<Word> {
        self.module
            .types_global_values
            .iter()
            .find(|i| i.class.opcode == op && i.operands == operands)
            .and_then(|i| i.result_id)
    }

    /// A type with these operands: the existing one, or a new one.
    pub fn ty(&mut self, op: Op, operands: Vec<Operand>) -> Word {
        if let Some(id) = self.find_type(op, &operands) {
            return id;
        }
        let id = self.fresh();
        self.module
            .types_global_values
            .push(Instruction::new(op, None, Some(id), operands));
        id
    }

    pub fn void(&mut self) -> Word {
        self.ty(Op::TypeVoid, vec![])
    }

    pub fn uint(&mut self, width: u32) -> Word {
        self.ty(
            Op::TypeInt,
            vec![Operand::LiteralBit32(width), Operand::LiteralBit32(0)],
        )
    }

    pub fn vector(&mut self, component: Word, n: u32) -> Word {
        self.ty(
            Op::TypeVector,
            vec![Operand::IdRef(component), Operand::LiteralBit32(n)],
        )
    }

    /// Always a new pointer type (decorations may differ between them).
    pub fn new_pointer(&mut self, sc: StorageClass, pointee: Word) -> Word {
        let id = self.fresh();
        self.module.types_global_values.push(Instruction::new(
            Op::TypePointer,
            None,
            Some(id),
            vec![Operand::StorageClass(sc), Operand::IdRef(pointee)],
        ));
        id
    }

    /// A new module-scope `Private` variable of type `ty`: where a pass
    /// keeps a value the interface pass stores at the kernel's start (a
    /// buffer's address from the push constants).
    pub fn private_variable(&mut self, ty: Word) -> Word {
        let ptr = self.pointer(StorageClass::Private, ty);
        let id = self.fresh();
        self.module.types_global_values.push(Instruction::new(
            Op::Variable,
            Some(ptr),
            Some(id),
            vec![Operand::StorageClass(StorageClass::Private)],
        ));
        id
    }

    pub fn pointer(&mut self, sc: StorageClass, pointee: Word) -> Word {
        self.ty(
            Op::TypePointer,
            vec![Operand::StorageClass(sc), Operand::IdRef(pointee)],
        )
    }

    pub fn function_type(&mut self, ret: Word, params: &[Word]) -> Word {
        let mut ops = vec![Operand::IdRef(ret)];
        ops.extend(params.iter().map(|&p| Operand::IdRef(p)));
        self.ty(Op::TypeFunction, ops)
    }

    /// A constant of integer type `ty` (any width), or of a float type
    /// given by its bits.
    pub fn const_int(&mut self, ty: Word, v: u64) -> Word {
        let wide = matches!(
            self.global(ty).and_then(|t| t.operands.first()),
            Some(Operand::LiteralBit32(64))
        );
        let literal = if wide {
            Operand::LiteralBit64(v)
        } else {
            Operand::LiteralBit32(v as u32)
        };
        if let Some(id) = self.module.types_global_values.iter().find_map(|i| {
            (i.class.opcode == Op::Constant
                && i.result_type == Some(ty)
                && i.operands.first() == Some(&literal))
            .then_some(i.result_id)
            .flatten()
        }) {
            return id;
        }
        let id = self.fresh();
        self.module.types_global_values.push(Instruction::new(
            Op::Constant,
            Some(ty),
            Some(id),
            vec![literal],
        ));
        id
    }

    /// The id of the module's extended instruction set `name`, if imported.
    pub fn ext_import(&self, name: &str) -> Option<Word> {
        self.module.ext_inst_imports.iter().find_map(|i| {
            matches!(i.operands.first(), Some(Operand::LiteralString(s)) if s == name)
                .then_some(i.result_id)
                .flatten()
        })
    }

    /// The module's import of extended instruction set `name` (added when
    /// missing).
    pub fn ext_import_or_add(&mut self, name: &str) -> Word {
        if let Some(id) = self.ext_import(name) {
            return id;
        }
        let id = self.fresh();
        self.module.ext_inst_imports.push(Instruction::new(
            Op::ExtInstImport,
            None,
            Some(id),
            vec![Operand::LiteralString(name.into())],
        ));
        id
    }

    /// A 32-bit unsigned constant.
    pub fn const_u32(&mut self, v: u32) -> Word {
        let t = self.uint(32);
        self.const_int(t, u64::from(v))
    }

    /// The null (all-zero) constant of type `ty`.
    pub fn const_null(&mut self, ty: Word) -> Word {
        if let Some(id) = self.module.types_global_values.iter().find_map(|i| {
            (i.class.opcode == Op::ConstantNull && i.result_type == Some(ty))
                .then_some(i.result_id)
                .flatten()
        }) {
            return id;
        }
        let id = self.fresh();
        self.module.types_global_values.push(Instruction::new(
            Op::ConstantNull,
            Some(ty),
            Some(id),
            vec![],
        ));
        id
    }

    pub fn decorate(
        &mut self,
        target: Word,
        decoration: rspirv::spirv::Decoration,
        extra: Vec<Operand>,
    ) {
        let mut ops = vec![Operand::IdRef(target), Operand::Decoration(decoration)];
        ops.extend(extra);
        self.module
            .annotations
            .push(Instruction::new(Op::Decorate, None, None, ops));
    }

    /// The literal operand of decoration `d` on `id` (SpecId, Alignment,
    /// ...), if `id` has it.
    pub fn decoration_literal(&self, id: Word, d: rspirv::spirv::Decoration) -> Option<u32> {
        decoration_literal(&self.module, id, d)
    }

    pub fn member_decorate(
        &mut self,
        target: Word,
        member: u32,
        decoration: rspirv::spirv::Decoration,
        extra: Vec<Operand>,
    ) {
        let mut ops = vec![
            Operand::IdRef(target),
            Operand::LiteralBit32(member),
            Operand::Decoration(decoration),
        ];
        ops.extend(extra);
        self.module
            .annotations
            .push(Instruction::new(Op::MemberDecorate, None, None, ops));
    }

    /// Orders types, constants and variables so that each comes after
    /// what it refers to (keeping the order otherwise).
    /// Removes the module-scope definitions of `gone`, with their names,
    /// their decorations and their places in the entry points' interfaces.
    pub fn forget_globals(&mut self, gone: &crate::compiler::spirv::common::HashSet<Word>) {
        let named = |i: &Instruction| id_at(i, 0).is_some_and(|t| gone.contains(&t));
        let m = &mut self.module;
        m.types_global_values
            .retain(|i| i.result_id.is_none_or(|r| !gone.contains(&r)));
        m.annotations.retain(|a| !named(a));
        m.debug_names.retain(|a| !named(a));
        for e in &mut m.entry_points {
            e.operands
                .retain(|o| !matches!(o, Operand::IdRef(x) if gone.contains(x)));
        }
    }

    pub fn sort_globals(&mut self) {
        let items = std::mem::take(&mut self.module.types_global_values);
        let index: crate::compiler::spirv::common::HashMap<Word, usize> = items
            .iter()
            .enumerate()
            .filter_map(|(i, x)| Some((x.result_id?, i)))
            .collect();
        // Forward declarations of pointer types (recursive structs) come
        // first; a use of such a pointer type needs no definition before it.
        let forward: crate::compiler::spirv::common::HashSet<Word> = items
            .iter()
            .filter(|x| x.class.opcode == Op::TypeForwardPointer)
            .filter_map(|x| id_at(x, 0))
            .collect();
        let mut done = vec![false; items.len()];
        let mut order: Vec<usize> = (0..items.len())
            .filter(|&i| items[i].class.opcode == Op::TypeForwardPointer)
            .collect();
        for &i in &order {
            done[i] = true;
        }
        fn visit(
            i: usize,
            items: &[Instruction],
            index: &crate::compiler::spirv::common::HashMap<Word, usize>,
            forward: &crate::compiler::spirv::common::HashSet<Word>,
            done: &mut Vec<bool>,
            order: &mut Vec<usize>,
        ) {
            if done[i] {
                return;
            }
            done[i] = true;
            let is_pointer = items[i].class.opcode == Op::TypePointer;
            for d in ids_used(&items[i]) {
                if forward.contains(&d) && !is_pointer {
                    continue;
                }
                if let Some(&j) = index.get(&d) {
                    visit(j, items, index, forward, done, order);
                }
            }
            order.push(i);
        }
        for i in 0..items.len() {
            visit(i, &items, &index, &forward, &mut done, &mut order);
        }
        let mut slots: Vec<Option<Instruction>> = items.into_iter().map(Some).collect();
        self.module.types_global_values = order
            .into_iter()
            .map(|i| slots[i].take().expect("once"))
            .collect();
    }

    /// The functions the module imports (`LinkageAttributes` with
    /// `Import`), with their link names.
    pub fn imports(&self) -> Vec<(Word, String)> {
        self.module
            .annotations
            .iter()
            .filter(|a| {
                a.class.opcode == Op::Decorate
                    && a.operands.get(1)
                        == Some(&Operand::Decoration(
                            rspirv::spirv::Decoration::LinkageAttributes,
                        ))
                    && a.operands.last()
                        == Some(&Operand::LinkageType(rspirv::spirv::LinkageType::Import))
            })
            .filter_map(|a| match (id_at(a, 0), a.operands.get(2)) {
                (Some(f), Some(Operand::LiteralString(name))) => Some((f, name.clone())),
                _ => None,
            })
            .collect()
    }

    /// The module's OpenCL input variable for built-in `b` (of type `ty`),
    /// made if missing.
    pub fn builtin_input(&mut self, b: rspirv::spirv::BuiltIn, ty: Word) -> Word {
        use rspirv::spirv::Decoration;
        let existing = self.module.annotations.iter().find_map(|a| {
            (a.class.opcode == Op::Decorate
                && a.operands.get(1) == Some(&Operand::Decoration(Decoration::BuiltIn))
                && a.operands.get(2) == Some(&Operand::BuiltIn(b)))
            .then(|| id_at(a, 0))
            .flatten()
        });
        if let Some(v) = existing {
            return v;
        }
        let p = self.pointer(StorageClass::Input, ty);
        let v = self.fresh();
        self.module.types_global_values.push(Instruction::new(
            Op::Variable,
            Some(p),
            Some(v),
            vec![Operand::StorageClass(StorageClass::Input)],
        ));
        self.decorate(v, Decoration::BuiltIn, vec![Operand::BuiltIn(b)]);
        v
    }

    /// The defining instruction of a global id (type, constant, variable).
    pub fn global(&self, id: Word) -> Option<&Instruction> {
        self.module
            .types_global_values
            .iter()
            .find(|i| i.result_id == Some(id))
    }

    /// The type of a value defined anywhere in the module.
    pub fn type_of(&self, id: Word) -> Option<Word> {
        if let Some(g) = self.global(id) {
            return g.result_type;
        }
        self.module.functions.iter().find_map(|f| {
            f.parameters
                .iter()
                .chain(f.blocks.iter().flat_map(|b| b.instructions.iter()))
                .find(|i| i.result_id == Some(id))
                .and_then(|i| i.result_type)
        })
    }

    /// The type of every value: the module's globals and the functions'
    /// parameters and results.
    pub fn value_types(&self) -> crate::compiler::spirv::common::HashMap<Word, Word> {
        let globals = self.module.types_global_values.iter();
        let code = self.module.functions.iter().flat_map(|f| {
            f.parameters
                .iter()
                .chain(f.blocks.iter().flat_map(|b| &b.instructions))
        });
        globals
            .chain(code)
            .filter_map(|i| Some((i.result_id?, i.result_type?)))
            .collect()
    }

    /// Storage class and pointee of a pointer type.
    pub fn pointer_parts(&self, ty: Word) -> Option<(StorageClass, Word)> {
        let t = self.global(ty)?;
        if t.class.opcode != Op::TypePointer {
            return None;
        }
        match (&t.operands[0], &t.operands[1]) {
            (Operand::StorageClass(sc), Operand::IdRef(p)) => Some((*sc, *p)),
            _ => None,
        }
    }
}

/// Adds `flag` to the memory operands of an `OpLoad`, `OpStore` or
/// cooperative matrix load or store (which always give a stride).
pub fn add_memory_access(i: &mut Instruction, flag: rspirv::spirv::MemoryAccess) {
    let at = match i.class.opcode {
        Op::Load => 1,
        Op::CooperativeMatrixLoadKHR => 3,
        Op::CooperativeMatrixStoreKHR => 4,
        _ => 2,
    };
    match i.operands.get_mut(at) {
        Some(Operand::MemoryAccess(m)) => *m |= flag,
        _ => i.operands.push(Operand::MemoryAccess(flag)),
    }
}

/// Code being emitted (at the kernel's start, or in place), to be
/// spliced into a function.
pub struct Prologue {
    pub code: Vec<Instruction>,
}

impl Prologue {
    /// Appends `op` with id operands; returns its result id.
    pub fn op(&mut self, ctx: &mut Ctx, op: Op, ty: Word, args: &[Word]) -> Word {
        let id = ctx.fresh();
        self.code.push(Instruction::new(
            op,
            Some(ty),
            Some(id),
            args.iter().map(|&x| Operand::IdRef(x)).collect(),
        ));
        id
    }
}

/// The literal of decoration `d` on `id` (SpecId, Alignment, ...).
pub fn decoration_literal(module: &Module, id: Word, d: rspirv::spirv::Decoration) -> Option<u32> {
    module.annotations.iter().find_map(|a| {
        (id_at(a, 0) == Some(id) && a.operands.get(1) == Some(&Operand::Decoration(d)))
            .then(|| match a.operands.get(2) {
                Some(Operand::LiteralBit32(x)) => Some(*x),
                _ => None,
            })
            .flatten()
    })
}

/// Puts `code` at the start of the kernel function `fid`, after its
/// variables.
pub fn insert_at_kernel_start(
    functions: &mut [rspirv::dr::Function],
    fid: Word,
    code: Vec<Instruction>,
) -> Result<(), String> {
    let kernel = functions
        .iter_mut()
        .find(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(fid))
        .ok_or("kernel function missing")?;
    let entry = kernel.blocks.first_mut().ok_or("kernel without code")?;
    let at = entry
        .instructions
        .iter()
        .position(|i| i.class.opcode != Op::Variable)
        .unwrap_or(entry.instructions.len());
    entry.instructions.splice(at..at, code);
    Ok(())
}

pub fn id_at(i: &Instruction, n: usize) -> Option<Word> {
    match i.operands.get(n) {
        Some(Operand::IdRef(id)) => Some(*id),
        _ => None,
    }
}

/// Every id an instruction refers to.
pub fn ids_used(i: &Instruction) -> impl Iterator<Item = Word> + '_ {
    i.result_type
        .into_iter()
        .chain(i.operands.iter().filter_map(|o| match o {
            Operand::IdRef(id) | Operand::IdScope(id) | Operand::IdMemorySemantics(id) => Some(*id),
            _ => None,
        }))
}

/// Test support: a module assembled from SPIR-V text with `spirv-as`.
#[cfg(test)]
pub fn assemble(text: &str) -> Ctx {
    assemble_for(text, "spv1.0")
}

/// Test support: as [`assemble`], for a SPIR-V version (`spv1.4`).
#[cfg(test)]
pub fn assemble_for(text: &str, env: &str) -> Ctx {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("spirv-as")
        .args(["--target-env", env, "-", "-o", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spirv-as (from spirv-tools) runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("spirv-as finishes");
    assert!(out.status.success(), "spirv-as rejects the test module");
    let words: Vec<u32> = out
        .stdout
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("word")))
        .collect();
    Ctx::new(rspirv::dr::load_words(words).expect("a module"))
}
