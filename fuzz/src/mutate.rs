//! Structural mutations of SPIR-V modules: operands, types, ids, control
//! flow, decorations, capabilities and literals change, so that most
//! mutants are still modules (random bytes fail the validator at once)
//! and many are still valid ones the rewriter has never seen.

use rspirv::binary::Assemble;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Capability, Decoration, FunctionControl, Op, StorageClass, Word};

/// A small, seedable generator (SplitMix64): mutations are reproducible
/// from the seed libFuzzer or the bounded test hands over.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    pub fn chance(&mut self, in_hundred: u64) -> bool {
        self.next_u64() % 100 < in_hundred
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[self.below(items.len())])
    }
}

/// The words of a module in little-endian bytes.
pub fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The words of `bytes`, if they are whole words.
pub fn to_words(bytes: &[u8]) -> Option<Vec<u32>> {
    (bytes.len().is_multiple_of(4) && !bytes.is_empty()).then(|| {
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// `words` with one to four structural mutations; `None` when `words` is
/// not a module rspirv can read (callers then mutate bytes instead).
pub fn mutate_module(words: &[u32], rng: &mut Rng) -> Option<Vec<u32>> {
    if !well_framed(words) {
        return None;
    }
    let mut module = rspirv::dr::load_words(words).ok()?;
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        // A mutation that finds nothing to change tries another kind.
        for _ in 0..8 {
            if mutate_once(&mut module, rng) {
                break;
            }
        }
    }
    Some(module.assemble())
}

/// Whether `words` are a header and whole instructions: rspirv's reader
/// panics on an instruction longer than the words left (vkcl reads only
/// modules the validator accepted; the mutator reads anything).
fn well_framed(words: &[u32]) -> bool {
    if words.len() < 5 || words[0] != 0x0723_0203 {
        return false;
    }
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return false;
        }
        at += count;
    }
    true
}

/// The mutations, one of which is made.
const KINDS: usize = 13;

fn mutate_once(m: &mut Module, rng: &mut Rng) -> bool {
    match rng.below(KINDS) {
        0 | 1 => replace_id_operand(m, rng),
        2 => replace_result_type(m, rng),
        3 => change_literal(m, rng),
        4 => delete_instruction(m, rng),
        5 => duplicate_instruction(m, rng),
        6 => swap_neighbours(m, rng),
        7 => change_opcode(m, rng),
        8 => change_decoration(m, rng),
        9 => retarget_branch(m, rng),
        10 => change_storage_class(m, rng),
        11 => change_type_shape(m, rng),
        _ => change_module_header(m, rng),
    }
}

/// Every instruction of the functions, as (function, block, index).
fn code_sites(m: &Module) -> Vec<(usize, usize, usize)> {
    let mut sites = Vec::new();
    for (f, func) in m.functions.iter().enumerate() {
        for (b, block) in func.blocks.iter().enumerate() {
            for i in 0..block.instructions.len() {
                sites.push((f, b, i));
            }
        }
    }
    sites
}

fn code_at(m: &mut Module, (f, b, i): (usize, usize, usize)) -> &mut Instruction {
    &mut m.functions[f].blocks[b].instructions[i]
}

fn is_terminator(op: Op) -> bool {
    matches!(
        op,
        Op::Branch
            | Op::BranchConditional
            | Op::Switch
            | Op::Return
            | Op::ReturnValue
            | Op::Unreachable
            | Op::Kill
    )
}

/// The result types of ids defined anywhere in the module.
fn defined(m: &Module) -> Vec<(Word, Option<Word>, Op)> {
    m.all_inst_iter()
        .filter_map(|i| Some((i.result_id?, i.result_type, i.class.opcode)))
        .collect()
}

fn is_type(op: Op) -> bool {
    format!("{op:?}").starts_with("Type")
}

/// An id operand becomes another id: mostly one of the same type (a valid
/// module with a different meaning), sometimes any id.
fn replace_id_operand(m: &mut Module, rng: &mut Rng) -> bool {
    let defs = defined(m);
    let sites: Vec<_> = code_sites(m)
        .into_iter()
        .filter(|&s| {
            let (f, b, i) = s;
            let ins = &m.functions[f].blocks[b].instructions[i];
            ins.operands.iter().any(|o| matches!(o, Operand::IdRef(_)))
        })
        .collect();
    let Some(&site) = rng.pick(&sites) else {
        return false;
    };
    let type_of = |id: Word| defs.iter().find(|d| d.0 == id).and_then(|d| d.1);
    let same_type = rng.chance(75);
    let ins = code_at(m, site);
    let slots: Vec<usize> = (0..ins.operands.len())
        .filter(|&k| matches!(ins.operands[k], Operand::IdRef(_)))
        .collect();
    let k = slots[rng.below(slots.len())];
    let Operand::IdRef(old) = ins.operands[k] else {
        return false;
    };
    let want = type_of(old);
    let choices: Vec<Word> = defs
        .iter()
        .filter(|d| d.0 != old && (!same_type || d.1 == want))
        .map(|d| d.0)
        .collect();
    match rng.pick(&choices) {
        Some(&new) => {
            ins.operands[k] = Operand::IdRef(new);
            true
        }
        None => false,
    }
}

fn replace_result_type(m: &mut Module, rng: &mut Rng) -> bool {
    let types: Vec<Word> = defined(m)
        .into_iter()
        .filter(|d| is_type(d.2))
        .map(|d| d.0)
        .collect();
    let sites: Vec<_> = code_sites(m)
        .into_iter()
        .filter(|&(f, b, i)| {
            m.functions[f].blocks[b].instructions[i]
                .result_type
                .is_some()
        })
        .collect();
    let (Some(&site), Some(&ty)) = (rng.pick(&sites), rng.pick(&types)) else {
        return false;
    };
    code_at(m, site).result_type = Some(ty);
    true
}

/// Interesting values for 32-bit literals: limits, powers of two, and
/// values next to them.
fn interesting(rng: &mut Rng, old: u64, bits: u32) -> u64 {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let v = match rng.below(8) {
        0 => 0,
        1 => 1,
        2 => mask,
        3 => 1 << (bits - 1),
        4 => old.wrapping_add(1),
        5 => old.wrapping_sub(1),
        6 => old ^ (1 << rng.below(bits as usize)),
        _ => 1 << rng.below(bits as usize),
    };
    v & mask
}

/// A literal operand (a constant's value, an extended instruction's
/// number, a vector size, a decoration's value, a memory access mask)
/// changes.
fn change_literal(m: &mut Module, rng: &mut Rng) -> bool {
    let mut all: Vec<&mut Instruction> = m.all_inst_iter_mut().collect();
    let candidates: Vec<usize> = (0..all.len())
        .filter(|&k| {
            all[k].operands.iter().any(|o| {
                matches!(
                    o,
                    Operand::LiteralBit32(_)
                        | Operand::LiteralBit64(_)
                        | Operand::LiteralExtInstInteger(_)
                        | Operand::MemoryAccess(_)
                        | Operand::Scope(_)
                        | Operand::MemorySemantics(_)
                )
            })
        })
        .collect();
    let Some(&k) = rng.pick(&candidates) else {
        return false;
    };
    let ins = &mut all[k];
    let slots: Vec<usize> = (0..ins.operands.len())
        .filter(|&j| {
            matches!(
                ins.operands[j],
                Operand::LiteralBit32(_)
                    | Operand::LiteralBit64(_)
                    | Operand::LiteralExtInstInteger(_)
                    | Operand::MemoryAccess(_)
                    | Operand::Scope(_)
                    | Operand::MemorySemantics(_)
            )
        })
        .collect();
    let j = slots[rng.below(slots.len())];
    let op = &mut ins.operands[j];
    *op = match op {
        Operand::LiteralBit32(v) => {
            Operand::LiteralBit32(interesting(rng, u64::from(*v), 32) as u32)
        }
        Operand::LiteralBit64(v) => Operand::LiteralBit64(interesting(rng, *v, 64)),
        // OpenCL.std numbers run to about 200.
        Operand::LiteralExtInstInteger(_) => Operand::LiteralExtInstInteger(rng.below(210) as u32),
        Operand::MemoryAccess(_) => Operand::MemoryAccess(
            rspirv::spirv::MemoryAccess::from_bits_truncate(rng.next_u64() as u32 & 0x3F),
        ),
        Operand::Scope(_) => match rspirv::spirv::Scope::from_u32(rng.below(6) as u32) {
            Some(s) => Operand::Scope(s),
            None => return false,
        },
        Operand::MemorySemantics(_) => Operand::MemorySemantics(
            rspirv::spirv::MemorySemantics::from_bits_truncate(rng.next_u64() as u32 & 0xFFFF),
        ),
        _ => return false,
    };
    true
}

fn delete_instruction(m: &mut Module, rng: &mut Rng) -> bool {
    if rng.chance(20) {
        // A type, constant or global variable.
        let n = m.types_global_values.len();
        if n == 0 {
            return false;
        }
        m.types_global_values.remove(rng.below(n));
        return true;
    }
    let sites: Vec<_> = code_sites(m)
        .into_iter()
        .filter(|&(f, b, i)| {
            let op = m.functions[f].blocks[b].instructions[i].class.opcode;
            !is_terminator(op)
        })
        .collect();
    let Some(&(f, b, i)) = rng.pick(&sites) else {
        return false;
    };
    m.functions[f].blocks[b].instructions.remove(i);
    true
}

fn duplicate_instruction(m: &mut Module, rng: &mut Rng) -> bool {
    let sites: Vec<_> = code_sites(m)
        .into_iter()
        .filter(|&(f, b, i)| {
            let ins = &m.functions[f].blocks[b].instructions[i];
            !is_terminator(ins.class.opcode)
                && !matches!(
                    ins.class.opcode,
                    Op::Phi | Op::Variable | Op::SelectionMerge | Op::LoopMerge
                )
        })
        .collect();
    let Some(&(f, b, i)) = rng.pick(&sites) else {
        return false;
    };
    let mut copy = m.functions[f].blocks[b].instructions[i].clone();
    if copy.result_id.is_some() {
        // A fresh id, unless the (mutated) header's bound has none left.
        let header = m.header.as_mut().expect("loaded modules have a header");
        let Some(next) = header.bound.checked_add(1) else {
            return false;
        };
        copy.result_id = Some(header.bound);
        header.bound = next;
    }
    m.functions[f].blocks[b].instructions.insert(i + 1, copy);
    true
}

fn swap_neighbours(m: &mut Module, rng: &mut Rng) -> bool {
    let sites: Vec<_> = code_sites(m)
        .into_iter()
        .filter(|&(f, b, i)| {
            let block = &m.functions[f].blocks[b].instructions;
            i + 1 < block.len() && !is_terminator(block[i + 1].class.opcode)
        })
        .collect();
    let Some(&(f, b, i)) = rng.pick(&sites) else {
        return false;
    };
    m.functions[f].blocks[b].instructions.swap(i, i + 1);
    true
}

/// Opcodes that take the same operands, so that one can stand for another.
const FAMILIES: &[&[Op]] = &[
    &[
        Op::IAdd,
        Op::ISub,
        Op::IMul,
        Op::SDiv,
        Op::UDiv,
        Op::SRem,
        Op::SMod,
        Op::UMod,
        Op::ShiftLeftLogical,
        Op::ShiftRightLogical,
        Op::ShiftRightArithmetic,
        Op::BitwiseAnd,
        Op::BitwiseOr,
        Op::BitwiseXor,
    ],
    &[Op::FAdd, Op::FSub, Op::FMul, Op::FDiv, Op::FRem, Op::FMod],
    &[
        Op::IEqual,
        Op::INotEqual,
        Op::ULessThan,
        Op::SLessThan,
        Op::UGreaterThan,
        Op::SGreaterThan,
        Op::ULessThanEqual,
        Op::SLessThanEqual,
        Op::UGreaterThanEqual,
        Op::SGreaterThanEqual,
    ],
    &[
        Op::FOrdEqual,
        Op::FOrdNotEqual,
        Op::FOrdLessThan,
        Op::FOrdGreaterThan,
        Op::FUnordLessThan,
        Op::FUnordGreaterThanEqual,
        Op::LessOrGreater,
        Op::Ordered,
        Op::Unordered,
    ],
    &[Op::ConvertFToU, Op::ConvertFToS],
    &[Op::ConvertSToF, Op::ConvertUToF],
    &[Op::UConvert, Op::SConvert, Op::Bitcast],
    &[Op::SNegate, Op::Not, Op::FNegate],
    &[
        Op::LogicalAnd,
        Op::LogicalOr,
        Op::LogicalEqual,
        Op::LogicalNotEqual,
    ],
    &[
        Op::AtomicIAdd,
        Op::AtomicISub,
        Op::AtomicSMin,
        Op::AtomicUMin,
        Op::AtomicSMax,
        Op::AtomicUMax,
        Op::AtomicAnd,
        Op::AtomicOr,
        Op::AtomicXor,
        Op::AtomicExchange,
    ],
    &[Op::AccessChain, Op::InBoundsAccessChain],
    &[Op::PtrAccessChain, Op::InBoundsPtrAccessChain],
    &[
        Op::GroupIAdd,
        Op::GroupSMin,
        Op::GroupUMax,
        Op::GroupFAdd,
        Op::GroupFMax,
    ],
];

fn change_opcode(m: &mut Module, rng: &mut Rng) -> bool {
    let sites: Vec<_> = code_sites(m)
        .into_iter()
        .filter(|&(f, b, i)| {
            let op = m.functions[f].blocks[b].instructions[i].class.opcode;
            FAMILIES.iter().any(|fam| fam.contains(&op))
        })
        .collect();
    let Some(&site) = rng.pick(&sites) else {
        return false;
    };
    let ins = code_at(m, site);
    let family = FAMILIES
        .iter()
        .find(|fam| fam.contains(&ins.class.opcode))
        .expect("filtered");
    let op = family[rng.below(family.len())];
    *ins = Instruction::new(op, ins.result_type, ins.result_id, ins.operands.clone());
    true
}

const DECORATIONS: &[Decoration] = &[
    Decoration::Restrict,
    Decoration::Aliased,
    Decoration::Volatile,
    Decoration::Constant,
    Decoration::NoContraction,
    Decoration::NoSignedWrap,
    Decoration::NoUnsignedWrap,
    Decoration::CPacked,
    Decoration::Alignment,
    Decoration::SaturatedConversion,
    Decoration::FPRoundingMode,
    Decoration::FuncParamAttr,
    Decoration::SpecId,
    Decoration::BuiltIn,
    Decoration::ArrayStride,
    Decoration::Offset,
    Decoration::MaxByteOffset,
];

/// A decoration is added to some id, or one is removed, or one's value
/// changes.
fn change_decoration(m: &mut Module, rng: &mut Rng) -> bool {
    match rng.below(3) {
        0 if !m.annotations.is_empty() => {
            let k = rng.below(m.annotations.len());
            m.annotations.remove(k);
            true
        }
        1 if !m.annotations.is_empty() => {
            let k = rng.below(m.annotations.len());
            let a = &mut m.annotations[k];
            match a.operands.last_mut() {
                Some(Operand::LiteralBit32(v)) => {
                    *v = interesting(rng, u64::from(*v), 32) as u32;
                    true
                }
                _ => false,
            }
        }
        _ => {
            let ids: Vec<Word> = defined(m).into_iter().map(|d| d.0).collect();
            let (Some(&id), Some(&d)) = (rng.pick(&ids), rng.pick(DECORATIONS)) else {
                return false;
            };
            let mut ops = vec![Operand::IdRef(id), Operand::Decoration(d)];
            match d {
                Decoration::Alignment
                | Decoration::SpecId
                | Decoration::ArrayStride
                | Decoration::Offset
                | Decoration::MaxByteOffset => {
                    ops.push(Operand::LiteralBit32(1 << rng.below(8)));
                }
                Decoration::FPRoundingMode => ops.push(Operand::FPRoundingMode(
                    rspirv::spirv::FPRoundingMode::from_u32(rng.below(4) as u32)
                        .expect("0..4 are rounding modes"),
                )),
                Decoration::FuncParamAttr => ops.push(Operand::FunctionParameterAttribute(
                    rspirv::spirv::FunctionParameterAttribute::from_u32(rng.below(8) as u32)
                        .expect("0..8 are attributes"),
                )),
                Decoration::BuiltIn => {
                    let b = [24u32, 25, 26, 27, 28, 29, 34, 36, 37, 38, 40, 41, 43];
                    match rspirv::spirv::BuiltIn::from_u32(b[rng.below(b.len())]) {
                        Some(b) => ops.push(Operand::BuiltIn(b)),
                        None => return false,
                    }
                }
                _ => {}
            }
            m.annotations
                .push(Instruction::new(Op::Decorate, None, None, ops));
            true
        }
    }
}

/// A branch goes to another block of its function (loops and selections
/// change shape; many mutants break structure, some stay valid).
fn retarget_branch(m: &mut Module, rng: &mut Rng) -> bool {
    let sites: Vec<_> = code_sites(m)
        .into_iter()
        .filter(|&(f, b, i)| {
            matches!(
                m.functions[f].blocks[b].instructions[i].class.opcode,
                Op::Branch
                    | Op::BranchConditional
                    | Op::Switch
                    | Op::SelectionMerge
                    | Op::LoopMerge
                    | Op::Phi
            )
        })
        .collect();
    let Some(&(f, b, i)) = rng.pick(&sites) else {
        return false;
    };
    let labels: Vec<Word> = m.functions[f]
        .blocks
        .iter()
        .filter_map(|blk| blk.label.as_ref().and_then(|l| l.result_id))
        .collect();
    let ins = &mut m.functions[f].blocks[b].instructions[i];
    let slots: Vec<usize> = (0..ins.operands.len())
        .filter(|&k| matches!(ins.operands[k], Operand::IdRef(x) if labels.contains(&x)))
        .collect();
    let (Some(&k), Some(&l)) = (rng.pick(&slots), rng.pick(&labels)) else {
        return false;
    };
    ins.operands[k] = Operand::IdRef(l);
    true
}

const STORAGE_CLASSES: &[StorageClass] = &[
    StorageClass::Function,
    StorageClass::CrossWorkgroup,
    StorageClass::Workgroup,
    StorageClass::UniformConstant,
    StorageClass::Generic,
    StorageClass::Private,
    StorageClass::Input,
];

fn change_storage_class(m: &mut Module, rng: &mut Rng) -> bool {
    let mut all: Vec<&mut Instruction> = m
        .all_inst_iter_mut()
        .filter(|i| {
            i.operands
                .iter()
                .any(|o| matches!(o, Operand::StorageClass(_)))
        })
        .collect();
    let n = all.len();
    if n == 0 {
        return false;
    }
    let ins = &mut all[rng.below(n)];
    let sc = STORAGE_CLASSES[rng.below(STORAGE_CLASSES.len())];
    for o in ins.operands.iter_mut() {
        if let Operand::StorageClass(s) = o {
            *s = sc;
            return true;
        }
    }
    false
}

/// An integer or float width, a vector's size, an array's length, a
/// struct's members or a function's control change.
fn change_type_shape(m: &mut Module, rng: &mut Rng) -> bool {
    let constants: Vec<Word> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Constant)
        .filter_map(|i| i.result_id)
        .collect();
    let candidates: Vec<usize> = (0..m.types_global_values.len())
        .filter(|&k| {
            matches!(
                m.types_global_values[k].class.opcode,
                Op::TypeInt | Op::TypeFloat | Op::TypeVector | Op::TypeArray | Op::TypeStruct
            )
        })
        .collect();
    if rng.chance(15) {
        // Function control: inline, don't inline, pure, const.
        let mut fns: Vec<&mut Instruction> = m
            .functions
            .iter_mut()
            .filter_map(|f| f.def.as_mut())
            .collect();
        let n = fns.len();
        if n == 0 {
            return false;
        }
        let f = &mut fns[rng.below(n)];
        f.operands[0] =
            Operand::FunctionControl(FunctionControl::from_bits_truncate(rng.below(16) as u32));
        return true;
    }
    let Some(&k) = rng.pick(&candidates) else {
        return false;
    };
    let t = &mut m.types_global_values[k];
    match t.class.opcode {
        Op::TypeInt => t.operands[0] = Operand::LiteralBit32([8, 16, 32, 64][rng.below(4)]),
        Op::TypeFloat => t.operands[0] = Operand::LiteralBit32([16, 32, 64][rng.below(3)]),
        Op::TypeVector => t.operands[1] = Operand::LiteralBit32([2, 3, 4, 8, 16][rng.below(5)]),
        Op::TypeArray => match rng.pick(&constants) {
            Some(&c) => t.operands[1] = Operand::IdRef(c),
            None => return false,
        },
        Op::TypeStruct if !t.operands.is_empty() => {
            let a = rng.below(t.operands.len());
            let b = rng.below(t.operands.len());
            t.operands.swap(a, b);
        }
        _ => return false,
    }
    true
}

const CAPABILITIES: &[Capability] = &[
    Capability::Int8,
    Capability::Int16,
    Capability::Int64,
    Capability::Float16,
    Capability::Float64,
    Capability::Vector16,
    Capability::Float16Buffer,
    Capability::GenericPointer,
    Capability::Groups,
    Capability::Int64Atomics,
    Capability::ImageBasic,
    Capability::LiteralSampler,
    Capability::GroupNonUniform,
    Capability::GroupNonUniformBallot,
    Capability::SubgroupShuffleINTEL,
    Capability::DeviceEnqueue,
    Capability::Pipes,
];

/// A capability is added or removed, or an execution mode changes.
fn change_module_header(m: &mut Module, rng: &mut Rng) -> bool {
    match rng.below(3) {
        0 => {
            let c = CAPABILITIES[rng.below(CAPABILITIES.len())];
            m.capabilities.push(Instruction::new(
                Op::Capability,
                None,
                None,
                vec![Operand::Capability(c)],
            ));
            true
        }
        1 if m.capabilities.len() > 1 => {
            let k = rng.below(m.capabilities.len());
            m.capabilities.remove(k);
            true
        }
        _ => {
            let Some(entry) = m
                .entry_points
                .first()
                .and_then(|e| e.operands.get(1))
                .cloned()
            else {
                return false;
            };
            let mut ops = vec![entry];
            let sizes: Vec<Operand> = (0..3)
                .map(|_| Operand::LiteralBit32(1 << rng.below(11)))
                .collect();
            match rng.below(3) {
                0 => {
                    ops.push(Operand::ExecutionMode(
                        rspirv::spirv::ExecutionMode::LocalSize,
                    ));
                    ops.extend(sizes);
                }
                1 => {
                    ops.push(Operand::ExecutionMode(
                        rspirv::spirv::ExecutionMode::LocalSizeHint,
                    ));
                    ops.extend(sizes);
                }
                _ => ops.push(Operand::ExecutionMode(
                    rspirv::spirv::ExecutionMode::ContractionOff,
                )),
            }
            m.execution_modes
                .push(Instruction::new(Op::ExecutionMode, None, None, ops));
            true
        }
    }
}

/// Byte-level mutations, for inputs that are not modules and for the
/// containers around them: bit flips, overwritten and removed spans.
pub fn mutate_bytes(data: &mut Vec<u8>, rng: &mut Rng, max_len: usize) {
    for _ in 0..1 + rng.below(4) {
        match rng.below(5) {
            0 if !data.is_empty() => {
                let k = rng.below(data.len());
                data[k] ^= 1 << rng.below(8);
            }
            1 if !data.is_empty() => {
                let k = rng.below(data.len());
                data[k] = [0, 1, 0x7F, 0x80, 0xFF][rng.below(5)];
            }
            2 if data.len() > 4 => {
                let at = rng.below(data.len());
                let n = rng.below((data.len() - at).min(64)) + 1;
                data.drain(at..at + n);
            }
            3 if data.len() < max_len => {
                let at = rng.below(data.len() + 1);
                let n = (rng.below(16) + 1).min(max_len - data.len());
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                data.splice(at..at, bytes);
            }
            _ if data.len() >= 8 => {
                // A word of the input repeated elsewhere (ids, lengths).
                let from = rng.below(data.len() / 4) * 4;
                let to = rng.below(data.len() / 4) * 4;
                let w: [u8; 4] = data[from..from + 4].try_into().expect("4 bytes");
                data[to..to + 4].copy_from_slice(&w);
            }
            _ => {}
        }
    }
    data.truncate(max_len);
}

/// A program binary mutated inside its container, which is written again
/// with a right checksum (so that the mutants reach what vkcl does with
/// the binary's contents): the SPIR-V structurally, or the build options,
/// binary type or argument-name flag. `None` when `data` is no whole vkcl
/// binary.
pub fn mutate_binary(data: &[u8], rng: &mut Rng) -> Option<Vec<u8>> {
    let (mut binary_type, mut arg_info, mut options, mut spirv) =
        vkcl::core::program::binary_parts(data)?;
    match rng.below(10) {
        0 => binary_type = [0, 1, 2, 4, 0x40E1, 7][rng.below(6)],
        1 => arg_info = !arg_info,
        2 => {
            let mut bytes = options.into_bytes();
            mutate_bytes(&mut bytes, rng, 256);
            options = String::from_utf8_lossy(&bytes).into_owned();
        }
        _ => spirv = mutate_module(&spirv, rng)?,
    }
    let build = vkcl::core::program::Build {
        binary_type,
        arg_info,
        options,
        spirv: Some(std::sync::Arc::new(spirv)),
        ..Default::default()
    };
    Some(vkcl::core::program::encode_binary(&build))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_differ_and_reassemble() {
        let module = crate::seeds::assemble(
            "OpCapability Addresses\nOpCapability Kernel\nOpCapability Int64\n\
             OpMemoryModel Physical64 OpenCL\nOpEntryPoint Kernel %f \"f\"\n\
             %void = OpTypeVoid\n%uint = OpTypeInt 32 0\n%ptr = OpTypePointer CrossWorkgroup %uint\n\
             %fn = OpTypeFunction %void %ptr\n%c1 = OpConstant %uint 1\n\
             %f = OpFunction %void None %fn\n%p = OpFunctionParameter %ptr\n%l = OpLabel\n\
             %v = OpLoad %uint %p\n%w = OpIAdd %uint %v %c1\nOpStore %p %w\nOpReturn\nOpFunctionEnd\n",
            spirv_tools::TargetEnv::Universal_1_0,
        )
        .expect("assembles");
        let mut rng = Rng::new(7);
        let (mut changed, mut readable) = (0, 0);
        for _ in 0..200 {
            let m = mutate_module(&module, &mut rng).expect("a module");
            readable += usize::from(rspirv::dr::load_words(&m).is_ok());
            changed += usize::from(m != module);
        }
        // Some mutants are no longer modules (a type's width changed under
        // its constants); most are.
        assert!(changed > 150, "{changed} of 200 mutants differ");
        assert!(readable > 120, "{readable} of 200 mutants read back");
    }

    /// A header whose id bound is u32::MAX (libFuzzer writes such words
    /// into inputs) leaves no fresh id for a duplicated instruction: the
    /// mutator once overflowed there.
    #[test]
    fn a_full_id_bound_is_no_panic() {
        let mut module = crate::seeds::assemble(
            "OpCapability Addresses\nOpCapability Kernel\nOpMemoryModel Physical64 OpenCL\n\
             OpEntryPoint Kernel %f \"f\"\n%void = OpTypeVoid\n%uint = OpTypeInt 32 0\n\
             %fn = OpTypeFunction %void\n%c1 = OpConstant %uint 1\n\
             %f = OpFunction %void None %fn\n%l = OpLabel\n%v = OpIAdd %uint %c1 %c1\n\
             OpReturn\nOpFunctionEnd\n",
            spirv_tools::TargetEnv::Universal_1_0,
        )
        .expect("assembles");
        module[3] = u32::MAX;
        let mut loaded = rspirv::dr::load_words(&module).expect("a module");
        let mut rng = Rng::new(1);
        for _ in 0..64 {
            duplicate_instruction(&mut loaded, &mut rng);
        }
        assert_eq!(loaded.header.as_ref().map(|h| h.bound), Some(u32::MAX));
    }
}
