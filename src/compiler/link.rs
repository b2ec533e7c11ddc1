//! Linking SPIR-V modules (clLinkProgram), with SPIRV-Tools' `spirv-link`
//! (Debian/Ubuntu package spirv-tools), and validating SPIR-V: modules
//! given by applications (clCreateProgramWithIL) and every rewritten
//! module, with SPIRV-Tools' validator built into vkcl.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;

use spirv_tools::TargetEnv;
use spirv_tools::val::{Validator, compiled::CompiledValidator};

fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn to_bytes(words: &[u32]) -> Vec<u8> {
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

/// Links modules into one; `library` keeps unresolved imports (a
/// library), otherwise every import must be resolved (an executable).
pub fn link(modules: &[Vec<u32>], library: bool) -> Result<Vec<u32>, String> {
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
        let out = cmd
            .arg("-o")
            .arg(&output)
            .args(&inputs)
            .output()
            .map_err(|e| e.to_string())?;
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
/// process with it): whole instructions, and no `OpString` as an operand
/// of an `OpenCL.std` instruction (the validator asserts on one). Read
/// word by word: nothing else may read a module before it is validated.
fn safe_to_validate(words: &[u32]) -> Result<(), String> {
    if words.len() < 5 || words[0] != 0x0723_0203 {
        return Err("not a SPIR-V module".into());
    }
    let mut instructions = Vec::new();
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return Err(format!(
                "instruction at word {at} runs past the module's end"
            ));
        }
        instructions.push(&words[at..at + count]);
        at += count;
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
    }
    Ok(())
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
