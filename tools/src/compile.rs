//! `vkcl compile`: the offline compiler.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use opencl_sys::{CL_BUILD_SUCCESS, CL_PROGRAM_BINARY_TYPE_EXECUTABLE};
use rspirv::binary::Disassemble;
use vkcl::compiler::frontend::{self, Options, Purpose};
use vkcl::compiler::spirv::{self, input::reflect};
use vkcl::core::platform::platform;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The OpenCL SPIR-V from the front end (or the input module).
    KernelSpirv,
    /// The Vulkan compute module of each kernel.
    VulkanSpirv,
    /// Kernels, arguments and their push-constant layout.
    Metadata,
    /// A vkcl program binary (an executable, as `CL_PROGRAM_BINARIES`
    /// gives it), for clCreateProgramWithBinary on machines without a
    /// compiler. It suits every device that has what its module uses.
    Binary,
}

#[derive(clap::Args)]
pub struct Args {
    /// An OpenCL C source (.cl) or a SPIR-V module (.spv).
    file: PathBuf,
    /// Where to write the output: with several kernels and
    /// --emit vulkan-spirv, OUT.<kernel>.spv each (or choose one with
    /// --kernel). Without it: metadata and disassembly go to stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Build options, as clBuildProgram takes them.
    #[arg(long, default_value = "")]
    options: String,
    #[arg(long, value_enum, default_value = "metadata")]
    emit: Emit,
    /// Only this kernel.
    #[arg(long)]
    kernel: Option<String>,
    /// Writes every stage (.spv and .spvasm) and the build log into DIR.
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
    /// The device whose features decide the rewrite (index in `vkcl info`).
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn bytes_of(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn disassemble(words: &[u32]) -> String {
    match rspirv::dr::load_words(words) {
        Ok(m) => m.disassemble(),
        Err(e) => format!("; cannot disassemble: {e}"),
    }
}

fn write(path: &Path, data: &[u8]) -> Result<(), String> {
    std::fs::write(path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

pub fn run(a: Args) -> Result<(), String> {
    let input =
        std::fs::read(&a.file).map_err(|e| format!("cannot read {}: {e}", a.file.display()))?;
    let devices = &platform().devices;
    let device = devices.get(a.device).ok_or_else(|| {
        format!(
            "there is no device {} (vkcl info lists {})",
            a.device,
            devices.len()
        )
    })?;
    if let Some(dir) = &a.dump {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // Stage 1: OpenCL SPIR-V.
    let is_spirv = a.file.extension().is_some_and(|e| e == "spv");
    let (words, log) = if is_spirv {
        let w = frontend::words_of(&input)
            .ok_or_else(|| format!("{} is not a SPIR-V module", a.file.display()))?;
        (w, String::new())
    } else {
        let source = String::from_utf8(input)
            .map_err(|_| format!("{} is not UTF-8 text", a.file.display()))?;
        let fe = frontend::front_end()
            .ok_or("no OpenCL C front end (clang-N and llvm-spirv-N) is installed")?;
        let options = Options::parse(&a.options, Purpose::Build)
            .map_err(|_| format!("invalid build options: {}", a.options))?;
        let macros = vkcl::core::program::device_macros(device);
        match fe.compile(&source, &[], &options, &macros) {
            Ok(c) => (c.spirv, c.log),
            Err(e) => {
                if let Some(dir) = &a.dump {
                    write(&dir.join("build.log"), e.log.as_bytes())?;
                }
                return Err(format!("the build failed:\n{}", e.log));
            }
        }
    };
    if !log.trim().is_empty() {
        eprintln!("{}", log.trim_end());
    }
    if let Some(dir) = &a.dump {
        write(&dir.join("build.log"), log.as_bytes())?;
        write(&dir.join("kernel.spv"), &bytes_of(&words))?;
        write(&dir.join("kernel.spvasm"), disassemble(&words).as_bytes())?;
    }
    let module = reflect::load(&words)?;
    let mut kernels = reflect::kernels(&module)?;
    if let Some(want) = &a.kernel {
        kernels.retain(|k| &k.name == want);
        if kernels.is_empty() {
            return Err(format!("the program has no kernel named {want:?}"));
        }
    }
    if a.emit == Emit::Binary {
        let out = a
            .output
            .as_ref()
            .ok_or("--emit binary writes a file: name it with -o")?;
        let options = Options::parse(&a.options, Purpose::Build)
            .map_err(|_| format!("invalid build options: {}", a.options))?;
        let build = vkcl::core::program::Build {
            status: CL_BUILD_SUCCESS,
            options: a.options.clone(),
            binary_type: CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
            spirv: Some(std::sync::Arc::new(words.clone())),
            kernels,
            arg_info: options.kernel_arg_info,
            ..Default::default()
        };
        let unmet = device.unmet_needs(&words);
        if !unmet.is_empty() {
            eprintln!(
                "note: device {} cannot run this binary: it lacks {}",
                a.device,
                unmet.join(", ")
            );
        }
        return write(out, &vkcl::core::program::encode_binary(&build));
    }
    if a.emit == Emit::KernelSpirv {
        return match &a.output {
            Some(out) => write(out, &bytes_of(&words)),
            None => {
                print!("{}", disassemble(&words));
                Ok(())
            }
        };
    }
    // Stage 2: a Vulkan module per kernel.
    let caps = vkcl::core::kernel::device_caps(device);
    let options = spirv::Options::from_build_options(&a.options);
    let mut failed = Vec::new();
    for k in &kernels {
        let rewritten = match spirv::rewrite_with(&words, k, &caps, options) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("kernel {}: {e}", k.name);
                failed.push(k.name.clone());
                continue;
            }
        };
        if let Some(dir) = &a.dump {
            write(
                &dir.join(format!("{}.vulkan.spv", k.name)),
                &bytes_of(&rewritten.words),
            )?;
            write(
                &dir.join(format!("{}.vulkan.spvasm", k.name)),
                disassemble(&rewritten.words).as_bytes(),
            )?;
        }
        match a.emit {
            Emit::VulkanSpirv => match &a.output {
                Some(out) if kernels.len() == 1 => write(out, &bytes_of(&rewritten.words))?,
                Some(out) => {
                    let mut name = out.clone().into_os_string();
                    name.push(format!(".{}.spv", k.name));
                    write(Path::new(&name), &bytes_of(&rewritten.words))?;
                }
                None => print!("{}", disassemble(&rewritten.words)),
            },
            Emit::Metadata => {
                let text = metadata(k, &rewritten);
                match &a.output {
                    Some(out) => write(out, text.as_bytes())?,
                    None => print!("{text}"),
                }
            }
            Emit::KernelSpirv | Emit::Binary => unreachable!("returned above"),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("cannot rewrite for Vulkan: {}", failed.join(", ")))
    }
}

fn metadata(k: &reflect::KernelInfo, r: &spirv::Rewritten) -> String {
    let mut s = format!("kernel {}\n", k.name);
    let attributes = k.attributes();
    if !attributes.is_empty() {
        s.push_str(&format!("  attributes: {attributes}\n"));
    }
    if k.local_bytes > 0 {
        s.push_str(&format!("  __local variables: {} bytes\n", k.local_bytes));
    }
    for (n, arg) in k.args.iter().enumerate() {
        s.push_str(&format!(
            "  arg {n}: {} {} ({:?}, address {:#x}, access {:#x})\n",
            arg.type_name, arg.name, arg.kind, arg.address, arg.access
        ));
    }
    s.push_str(&format!("  push constants: {:?}\n", r.push));
    s.push_str(&format!("  printf calls: {}\n", r.printf.len()));
    s.push_str(&format!("  Vulkan module: {} words\n", r.words.len()));
    s
}
