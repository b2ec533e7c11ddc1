//! Linking SPIR-V modules (clLinkProgram), with SPIRV-Tools' `spirv-link`
//! (Debian/Ubuntu package spirv-tools), and validating SPIR-V: modules
//! given by applications (clCreateProgramWithIL) and every rewritten
//! module, with SPIRV-Tools' validator built into vkcl.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Command;

use spirv_tools::TargetEnv;
use spirv_tools::val::{Validator, compiled::CompiledValidator};

fn tool(name: &str) -> Option<PathBuf> {
    super::frontend::find_in_path(name)
}

/// SPIR-V words as the bytes of a `.spv` file.
pub(crate) fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A scratch file path for this process.
fn scratch(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("vkcl-{}-{tag}.spv", super::unique_tag()))
}

/// The SPIR-V version of a module, as (major, minor).
pub fn version(words: &[u32]) -> (u32, u32) {
    let v = words.get(1).copied().unwrap_or(0);
    ((v >> 16) & 0xFF, (v >> 8) & 0xFF)
}

/// Whether linking is possible on this system.
pub fn linker_available() -> bool {
    tool("spirv-link").is_some()
}

/// The instructions of a module's words after its header, each with its
/// operands, up to the first whose word count is 0 or runs past the end
/// (the word where that one starts, if any).
fn instructions(words: &[u32]) -> (Vec<&[u32]>, Option<usize>) {
    let mut instructions = Vec::new();
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return (instructions, Some(at));
        }
        instructions.push(&words[at..at + count]);
        at += count;
    }
    (instructions, None)
}

/// The names a module exports (decorated `LinkageAttributes` with the
/// `Export` type) that must have one definition among a link's inputs:
/// kernels (entry points) and variables. Other functions are left out:
/// the front end gives C99 `inline` functions an external body in every
/// object (`-fgnu89-inline`), and a header's inline functions may be
/// defined in several inputs. Read word by word.
fn single_definitions(words: &[u32]) -> Vec<String> {
    const OP_ENTRY_POINT: u32 = 15;
    const OP_DECORATE: u32 = 71;
    const OP_VARIABLE: u32 = 59;
    const LINKAGE_ATTRIBUTES: u32 = 41;
    const EXPORT: u32 = 0;
    let (instructions, _) = instructions(words);
    let opcode = |i: &[u32]| i[0] & 0xFFFF;
    let string = |w: &[u32]| {
        let bytes = to_bytes(w);
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    };
    // Kernels by name (the entry point may be a wrapper of the exported
    // function), variables by id.
    let kernels: HashSet<String> = instructions
        .iter()
        .filter(|i| opcode(i) == OP_ENTRY_POINT && i.len() > 3)
        .map(|i| string(&i[3..]))
        .collect();
    let variables: HashSet<u32> = instructions
        .iter()
        .filter(|i| opcode(i) == OP_VARIABLE && i.len() > 2)
        .map(|i| i[2])
        .collect();
    instructions
        .iter()
        .filter(|i| {
            opcode(i) == OP_DECORATE
                && i.len() >= 5
                && i[2] == LINKAGE_ATTRIBUTES
                && i[i.len() - 1] == EXPORT
        })
        .filter_map(|i| {
            let name = string(&i[3..i.len() - 1]);
            (variables.contains(&i[1]) || kernels.contains(&name)).then_some(name)
        })
        .collect()
}

/// Links modules into one; `library` keeps unresolved imports (a
/// library), otherwise every import must be resolved (an executable).
/// A kernel or variable that two inputs define is an error, as in C
/// (`spirv-link` would keep both definitions).
pub fn link(modules: &[Vec<u32>], library: bool) -> Result<Vec<u32>, String> {
    let mut defined: HashMap<String, usize> = HashMap::new();
    for (n, m) in modules.iter().enumerate() {
        for name in single_definitions(m) {
            if let Some(first) = defined.insert(name.clone(), n) {
                return Err(format!(
                    "`{name}` is defined in input {} and in input {}",
                    first + 1,
                    n + 1
                ));
            }
        }
    }
    let exe = tool("spirv-link").ok_or("spirv-link (package spirv-tools) is not installed")?;
    let inputs: Vec<PathBuf> = modules.iter().map(|_| scratch("in")).collect();
    let output = scratch("out");
    let run = || -> Result<Vec<u32>, String> {
        for (p, m) in inputs.iter().zip(modules) {
            std::fs::write(p, to_bytes(m)).map_err(|e| e.to_string())?;
        }
        let mut cmd = Command::new(&exe);
        cmd.arg("--target-env").arg("opencl2.2");
        if library {
            cmd.arg("--create-library");
        }
        cmd.arg("-o").arg(&output).args(&inputs);
        let out = crate::compiler::process::output(&mut cmd).map_err(|e| e.to_string())?;
        if out.timed_out {
            return Err(out.log("spirv-link"));
        }
        if !out.status.success() {
            // The linker's diagnostics, wherever it wrote them; never an
            // empty log.
            let text = [&out.stderr, &out.stdout]
                .iter()
                .map(|b| String::from_utf8_lossy(b).replace("error: ", ""))
                .map(|t| t.trim().to_string())
                .find(|t| !t.is_empty())
                .unwrap_or_else(|| format!("spirv-link failed ({})", out.status));
            return Err(text);
        }
        let bytes = std::fs::read(&output).map_err(|e| e.to_string())?;
        crate::compiler::frontend::words_of(&bytes)
            .ok_or_else(|| "spirv-link produced a malformed module".into())
    };
    let result = run();
    for p in inputs.iter().chain([&output]) {
        let _ = std::fs::remove_file(p);
    }
    result
}

/// Runs SPIRV-Tools' validator for `env`; its diagnostic on failure.
fn run_validator(words: &[u32], env: TargetEnv) -> Result<(), String> {
    let validator = CompiledValidator::with_env(env);
    validator
        .validate(words, None)
        .map_err(|e| match e.diagnostic {
            Some(d) if d.notes.trim().is_empty() => d.message.trim().to_string(),
            Some(d) => format!("{}\n{}", d.message.trim(), d.notes.trim_end()),
            None => format!("the validator failed ({:?})", e.inner),
        })
}

/// Checks what SPIRV-Tools' validator assumes of a module before it
/// checks it (a validator that asserts or crashes takes the application's
/// process with it): whole instructions, no `OpString` as an operand of an
/// `OpenCL.std` instruction, and scalar or vector operands where the
/// validator reads a component type before it checks the operand's type
/// (it asserts otherwise). Read word by word: nothing else may read a
/// module before it is validated.
fn safe_to_validate(words: &[u32]) -> Result<(), String> {
    if words.len() < 5 || words[0] != 0x0723_0203 {
        return Err("not a SPIR-V module".into());
    }
    let (instructions, malformed) = instructions(words);
    if let Some(at) = malformed {
        return Err(format!(
            "instruction at word {at} runs past the module's end"
        ));
    }
    const OP_STRING: u32 = 7;
    const OP_EXT_INST_IMPORT: u32 = 11;
    const OP_EXT_INST: u32 = 12;
    let opcode = |i: &[u32]| i[0] & 0xFFFF;
    let strings: HashSet<u32> = instructions
        .iter()
        .filter(|i| opcode(i) == OP_STRING && i.len() > 1)
        .map(|i| i[1])
        .collect();
    let opencl_std: HashSet<u32> = instructions
        .iter()
        .filter(|i| opcode(i) == OP_EXT_INST_IMPORT && i.len() > 2)
        .filter(|i| {
            i[2..]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .take(11)
                .eq(*b"OpenCL.std\0")
        })
        .map(|i| i[1])
        .collect();
    let types = ValueTypes::read(&instructions);
    for i in instructions
        .iter()
        .filter(|i| opcode(i) == OP_EXT_INST && i.len() > 5)
    {
        if !opencl_std.contains(&i[3]) {
            continue;
        }
        // vloadn, vload_halfn and vloada_halfn end in a literal count, the
        // vstore*_r forms in a literal rounding mode.
        let literal_last = matches!(i[4], 171 | 174 | 176 | 178 | 179 | 181);
        let ids = &i[5..i.len() - usize::from(literal_last)];
        if let Some(x) = ids.iter().find(|x| strings.contains(x)) {
            return Err(format!(
                "operand %{x} of an OpenCL.std instruction is a string"
            ));
        }
        // The validator's rule for the vstore_half family takes the bit
        // width of Data (`GetBitWidth`, validate_extensions.cpp), and its
        // rule for u_upsample/s_upsample the component count of Hi
        // (`GetDimension`), before checking that they are scalars or
        // vectors: on a pointer, a label or a struct `GetComponentType`
        // or `GetDimension` asserts.
        let name = match i[4] {
            164 => "u_upsample",
            165 => "s_upsample",
            175 => "vstore_half",
            176 => "vstore_half_r",
            177 => "vstore_halfn",
            178 => "vstore_halfn_r",
            180 => "vstorea_halfn",
            181 => "vstorea_halfn_r",
            _ => continue,
        };
        if !types.scalar_or_vector(i[5]) {
            return Err(format!(
                "operand %{} of OpenCL.std {name} is not a scalar or vector",
                i[5]
            ));
        }
    }
    Ok(())
}

/// The types of a module's values, read from its words.
struct ValueTypes {
    /// The type id of each value with a result type.
    of: HashMap<u32, u32>,
    /// The boolean, integer, float and vector types.
    scalars_and_vectors: HashSet<u32>,
}

impl ValueTypes {
    /// Reads each instruction whose grammar starts with a result type and
    /// a result id, and each scalar and vector type.
    fn read(instructions: &[&[u32]]) -> ValueTypes {
        use rspirv::grammar::{INSTRUCTION_TABLE, OperandKind};
        // OpTypeBool, OpTypeInt, OpTypeFloat, OpTypeVector.
        const SCALAR_OR_VECTOR: std::ops::RangeInclusive<u32> = 20..=23;
        let mut typed: HashMap<u32, bool> = HashMap::new();
        let mut has_result_type = |op: u32| {
            *typed.entry(op).or_insert_with(|| {
                INSTRUCTION_TABLE.lookup_opcode(op).is_some_and(|g| {
                    let kinds: Vec<OperandKind> =
                        g.operands.iter().take(2).map(|o| o.kind).collect();
                    kinds == [OperandKind::IdResultType, OperandKind::IdResult]
                })
            })
        };
        let mut v = ValueTypes {
            of: HashMap::new(),
            scalars_and_vectors: HashSet::new(),
        };
        for i in instructions.iter().filter(|i| i.len() > 1) {
            let op = i[0] & 0xFFFF;
            if SCALAR_OR_VECTOR.contains(&op) {
                v.scalars_and_vectors.insert(i[1]);
            } else if i.len() > 2 && has_result_type(op) {
                v.of.insert(i[2], i[1]);
            }
        }
        v
    }

    /// Whether `value` has a boolean, integer or float scalar or vector
    /// type (the validator has checked vector components by the time it
    /// reaches instructions in functions).
    fn scalar_or_vector(&self, value: u32) -> bool {
        self.of
            .get(&value)
            .is_some_and(|t| self.scalars_and_vectors.contains(t))
    }
}

/// Validates an OpenCL SPIR-V module with the rules of its SPIR-V version.
pub fn validate(words: &[u32]) -> Result<(), String> {
    safe_to_validate(words)?;
    let env = match version(words) {
        (1, 0) => TargetEnv::Universal_1_0,
        (1, 1) => TargetEnv::Universal_1_1,
        (1, 2) => TargetEnv::Universal_1_2,
        (1, 3) => TargetEnv::Universal_1_3,
        (1, 4) => TargetEnv::Universal_1_4,
        (1, 5) => TargetEnv::Universal_1_5,
        (1, 6) => TargetEnv::Universal_1_6,
        (major, minor) => return Err(format!("SPIR-V {major}.{minor} is not supported")),
    };
    run_validator(words, env)
}

/// Validates a rewritten module for Vulkan 1.2 (SPIR-V 1.5).
pub fn validate_vulkan(words: &[u32]) -> Result<(), String> {
    run_validator(words, TargetEnv::Vulkan_1_2)
        .map_err(|e| format!("the rewritten module does not validate: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use spirv_tools::assembler::{Assembler, AssemblerOptions, compiled::CompiledAssembler};

    /// A kernel storing `value` with `OpenCL.std` `store` (an instruction
    /// and its operands): the value is a float, a pointer, a label or a
    /// vector.
    fn module(store: &str) -> Vec<u32> {
        let text = format!(
            "OpCapability Addresses\nOpCapability Kernel\nOpCapability Int64\n\
             OpCapability Float16Buffer\n%ext = OpExtInstImport \"OpenCL.std\"\n\
             OpMemoryModel Physical64 OpenCL\nOpEntryPoint Kernel %f \"k\"\n\
             %void = OpTypeVoid\n%float = OpTypeFloat 32\n%half = OpTypeFloat 16\n\
             %uint = OpTypeInt 32 0\n%ulong = OpTypeInt 64 0\n%v2 = OpTypeVector %float 2\n\
             %v2u = OpTypeVector %uint 2\n%zero = OpConstant %ulong 0\n\
             %one = OpConstant %float 1\n%ones = OpConstantComposite %v2 %one %one\n\
             %u1 = OpConstant %uint 1\n%us = OpConstantComposite %v2u %u1 %u1\n\
             %ph = OpTypePointer CrossWorkgroup %half\n%fn = OpTypeFunction %void %ph\n\
             %f = OpFunction %void None %fn\n%p = OpFunctionParameter %ph\n%l = OpLabel\n\
             {store}\nOpReturn\nOpFunctionEnd\n"
        );
        CompiledAssembler::with_env(TargetEnv::Universal_1_0)
            .assemble(&text, AssemblerOptions::default())
            .expect("the module assembles")
            .as_words()
            .to_vec()
    }

    /// SPIRV-Tools' validator asserts (aborting the process) on a
    /// `vstore_half*` whose Data, or a `u_upsample`/`s_upsample` whose Hi,
    /// is no scalar or vector; such modules are refused before it runs.
    #[test]
    fn operands_the_validator_asserts_on_are_refused_first() {
        for bad in [
            "%x = OpExtInst %void %ext vstore_half %p %zero %p",
            "%x = OpExtInst %void %ext vstore_half_r %l %zero %p RTZ",
            "%x = OpExtInst %void %ext vstore_halfn %p %zero %p",
            "%x = OpExtInst %void %ext vstorea_halfn_r %f %zero %p RTE",
            "%x = OpExtInst %ulong %ext u_upsample %p %p",
            "%x = OpExtInst %ulong %ext s_upsample %l %l",
        ] {
            let e = validate(&module(bad)).expect_err(bad);
            assert!(e.contains("is not a scalar or vector"), "{bad}: {e}");
        }
        // The validator's own errors for operands of the wrong scalar or
        // vector type, and valid uses.
        for (store, valid) in [
            ("%x = OpExtInst %void %ext vstore_half %one %zero %p", true),
            (
                "%x = OpExtInst %void %ext vstore_halfn_r %ones %zero %p RTN",
                true,
            ),
            (
                "%x = OpExtInst %void %ext vstore_half %ones %zero %p",
                false,
            ),
            ("%x = OpExtInst %ulong %ext u_upsample %u1 %u1", true),
            ("%x = OpExtInst %ulong %ext u_upsample %us %us", false),
        ] {
            let r = validate(&module(store));
            assert_eq!(r.is_ok(), valid, "{store}: {r:?}");
            if let Err(e) = r {
                assert!(!e.contains("is not a scalar or vector"), "{store}: {e}");
            }
        }
    }
}
