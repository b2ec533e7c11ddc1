//! The OpenCL C front end: the system's clang and its matching llvm-spirv
//! turn OpenCL C into SPIR-V for the Kernel execution model.
//!
//! The tools are found once per process: `VKCL_CLANG` and `VKCL_LLVM_SPIRV`
//! name them explicitly; otherwise the newest `clang-N`/`llvm-spirv-N` pair
//! on `PATH`, N from 19 down to 15. Results are cached on disk (see
//! [`crate::compiler::cache`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use opencl_sys::*;

use crate::compiler::spirv::input::normalise;
use crate::compiler::{cache, process};
use crate::core::error::{ClError, ClResult};

pub struct FrontEnd {
    pub clang: PathBuf,
    pub llvm_spirv: PathBuf,
    /// `clang --version`'s first line, part of every cache key.
    pub version: String,
}

/// The front end, if this system has one.
pub fn front_end() -> Option<&'static FrontEnd> {
    static FE: OnceLock<Option<FrontEnd>> = OnceLock::new();
    FE.get_or_init(|| {
        let found = discover();
        match &found {
            Some(fe) => log::info!(target: "vkcl::compiler", "OpenCL C front end: {} + {} ({})", fe.clang.display(), fe.llvm_spirv.display(), fe.version),
            None => log::warn!(target: "vkcl::compiler", "no OpenCL C front end found (clang-N with llvm-spirv-N, N = 15..19, or VKCL_CLANG/VKCL_LLVM_SPIRV): building from source is unavailable"),
        }
        found
    })
    .as_ref()
}

/// The program `name` (with `.exe` on Windows) in a folder of `PATH`.
pub(crate) fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    std::env::split_paths(&path)
        .map(|dir| dir.join(&file))
        .find(|p| p.is_file())
}

fn version_of(clang: &Path) -> Option<String> {
    let out = Command::new(clang).arg("--version").output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    })
}

fn discover() -> Option<FrontEnd> {
    let env_clang = std::env::var_os("VKCL_CLANG").map(PathBuf::from);
    let env_spirv = std::env::var_os("VKCL_LLVM_SPIRV").map(PathBuf::from);
    let pairs: Vec<(PathBuf, PathBuf)> = match (env_clang, env_spirv) {
        (Some(c), Some(s)) => vec![(c, s)],
        (c, s) => (15..=19)
            .rev()
            .filter_map(|n| {
                let clang = c.clone().or_else(|| find_in_path(&format!("clang-{n}")))?;
                let spirv = s
                    .clone()
                    .or_else(|| find_in_path(&format!("llvm-spirv-{n}")))?;
                Some((clang, spirv))
            })
            .collect(),
    };
    pairs.into_iter().find_map(|(clang, llvm_spirv)| {
        let version = version_of(&clang)?;
        llvm_spirv.is_file().then_some(FrontEnd {
            clang,
            llvm_spirv,
            version,
        })
    })
}

/// What a build is for: the error code for bad options differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Build,
    Compile,
    Link,
}

impl Purpose {
    fn bad_options(self) -> ClError {
        ClError(match self {
            Purpose::Build => CL_INVALID_BUILD_OPTIONS,
            Purpose::Compile => CL_INVALID_COMPILER_OPTIONS,
            Purpose::Link => CL_INVALID_LINKER_OPTIONS,
        })
    }
}

/// Parsed build options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Arguments for clang, in order.
    pub clang: Vec<String>,
    /// The OpenCL C version asked for, e.g. "CL1.2" (default CL1.2).
    pub cl_std: String,
    pub kernel_arg_info: bool,
    pub create_library: bool,
    pub enable_link_options: bool,
    pub opt_disable: bool,
    /// Built into an executable (clBuildProgram), not a compiled object
    /// for clLinkProgram: only the kernels need to stay visible.
    pub executable: bool,
}

/// Options the specification defines that pass to clang unchanged.
const CLANG_FLAGS: &[&str] = &[
    "-cl-single-precision-constant",
    "-cl-denorms-are-zero",
    "-cl-fp32-correctly-rounded-divide-sqrt",
    "-cl-mad-enable",
    "-cl-no-signed-zeros",
    "-cl-unsafe-math-optimizations",
    "-cl-finite-math-only",
    "-cl-fast-relaxed-math",
    "-cl-uniform-work-group-size",
    "-cl-no-subgroup-ifp",
    "-w",
    "-Werror",
];

/// Link options (clLinkProgram) the specification defines.
const LINK_FLAGS: &[&str] = &[
    "-create-library",
    "-enable-link-options",
    "-cl-denorms-are-zero",
    "-cl-no-signed-zeros",
    "-cl-unsafe-math-optimizations",
    "-cl-finite-math-only",
    "-cl-fast-relaxed-math",
    "-cl-no-subgroup-ifp",
];

/// Splits an options string into words, honouring double quotes.
fn split_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in s.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

impl Options {
    pub fn parse(text: &str, purpose: Purpose) -> ClResult<Options> {
        let mut o = Options {
            cl_std: "CL1.2".into(),
            executable: purpose == Purpose::Build,
            ..Default::default()
        };
        let words = split_words(text);
        let mut it = words.into_iter();
        while let Some(w) = it.next() {
            if purpose == Purpose::Link {
                if !LINK_FLAGS.contains(&w.as_str()) {
                    return Err(purpose.bad_options());
                }
                match w.as_str() {
                    "-create-library" => o.create_library = true,
                    "-enable-link-options" => o.enable_link_options = true,
                    _ => o.clang.push(w),
                }
                continue;
            }
            match w.as_str() {
                "-D" | "-I" => {
                    let v = it.next().ok_or(purpose.bad_options())?;
                    o.clang.push(w);
                    o.clang.push(v);
                }
                _ if (w.starts_with("-D") || w.starts_with("-I")) && w.len() > 2 => o.clang.push(w),
                "-cl-opt-disable" => o.opt_disable = true,
                "-cl-kernel-arg-info" => o.kernel_arg_info = true,
                // Sub-groups never promise independent forward progress
                // here, so there is nothing to relax (and clang 15 does not
                // know the option).
                "-cl-no-subgroup-ifp" => {}
                // The specification's options that ask for nothing vkcl
                // does: strict aliasing (deprecated since OpenCL 1.1; clang
                // ignores it) and debugging information (`-g`: no debugger
                // reaches kernels run through Vulkan).
                "-cl-strict-aliasing" | "-g" => {}
                _ if w.starts_with("-cl-std=") => {
                    let v = &w["-cl-std=".len()..];
                    if !["CL1.0", "CL1.1", "CL1.2", "CL3.0"].contains(&v) {
                        return Err(purpose.bad_options());
                    }
                    o.cl_std = v.to_string();
                }
                _ if CLANG_FLAGS.contains(&w.as_str()) => o.clang.push(w),
                _ => {
                    log::debug!(target: "vkcl::compiler", "unknown build option {w:?}");
                    return Err(purpose.bad_options());
                }
            }
        }
        Ok(o)
    }
}

/// What the device offers, as the preprocessor sees it.
pub struct DeviceMacros {
    /// OpenCL C extensions and `__opencl_c_*` features the device has.
    pub features: Vec<String>,
    pub image_support: bool,
    /// The cooperative matrix multiply-adds the prelude declares
    /// (cl_vkcl_cooperative_matrix).
    pub matrices: &'static [crate::compiler::spirv::p1_kernel::matrix::MatrixVariant],
}

/// Extension and feature macros clang's OpenCL headers may define on their
/// own; those the device lacks are undefined again by the prelude.
const OPTIONAL_MACROS: &[&str] = &[
    "cl_khr_3d_image_writes",
    "cl_khr_byte_addressable_store",
    "cl_khr_depth_images",
    "cl_khr_extended_bit_ops",
    "cl_khr_fp16",
    "cl_khr_fp64",
    "cl_khr_gl_msaa_sharing",
    "cl_khr_global_int32_base_atomics",
    "cl_khr_global_int32_extended_atomics",
    "cl_khr_int64_base_atomics",
    "cl_khr_int64_extended_atomics",
    "cl_khr_integer_dot_product",
    "cl_khr_local_int32_base_atomics",
    "cl_khr_local_int32_extended_atomics",
    "cl_khr_mipmap_image",
    "cl_khr_mipmap_image_writes",
    "cl_khr_srgb_image_writes",
    "cl_khr_subgroups",
    "cl_khr_subgroup_ballot",
    "cl_khr_subgroup_clustered_reduce",
    "cl_khr_subgroup_extended_types",
    "cl_khr_subgroup_non_uniform_arithmetic",
    "cl_khr_subgroup_non_uniform_vote",
    "cl_khr_subgroup_rotate",
    "cl_khr_subgroup_shuffle",
    "cl_khr_subgroup_shuffle_relative",
    "__opencl_c_3d_image_writes",
    "__opencl_c_atomic_order_acq_rel",
    "__opencl_c_atomic_order_seq_cst",
    "__opencl_c_atomic_scope_all_devices",
    "__opencl_c_atomic_scope_device",
    "__opencl_c_device_enqueue",
    "__opencl_c_ext_fp16_global_atomic_add",
    "__opencl_c_ext_fp16_global_atomic_load_store",
    "__opencl_c_ext_fp16_global_atomic_min_max",
    "__opencl_c_ext_fp16_local_atomic_add",
    "__opencl_c_ext_fp16_local_atomic_load_store",
    "__opencl_c_ext_fp16_local_atomic_min_max",
    "__opencl_c_ext_fp32_global_atomic_add",
    "__opencl_c_ext_fp32_global_atomic_min_max",
    "__opencl_c_ext_fp32_local_atomic_add",
    "__opencl_c_ext_fp32_local_atomic_min_max",
    "__opencl_c_ext_fp64_global_atomic_add",
    "__opencl_c_ext_fp64_global_atomic_min_max",
    "__opencl_c_ext_fp64_local_atomic_add",
    "__opencl_c_ext_fp64_local_atomic_min_max",
    "__opencl_c_fp64",
    "__opencl_c_generic_address_space",
    "__opencl_c_images",
    "__opencl_c_int64",
    "__opencl_c_integer_dot_product_input_4x8bit",
    "__opencl_c_integer_dot_product_input_4x8bit_packed",
    "__opencl_c_pipes",
    "__opencl_c_program_scope_global_variables",
    "__opencl_c_read_write_images",
    "__opencl_c_subgroups",
    "__opencl_c_work_group_collective_functions",
];

impl DeviceMacros {
    /// clang's `-cl-ext=`: everything off, then what the device has.
    fn cl_ext(&self) -> String {
        std::iter::once("-all".to_string())
            .chain(self.features.iter().map(|f| format!("+{f}")))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Included after clang's own header: removes what the device lacks
    /// and defines what the specification requires that clang does not.
    fn prelude(&self) -> String {
        let mut p =
            String::from("#ifndef __OPENCL_VERSION__\n#define __OPENCL_VERSION__ 300\n#endif\n");
        for m in OPTIONAL_MACROS {
            if !self.features.iter().any(|f| f == m) {
                p.push_str(&format!("#undef {m}\n"));
            }
        }
        if !self.image_support {
            p.push_str("#undef __IMAGE_SUPPORT__\n");
        }
        if self
            .features
            .iter()
            .any(|f| f == "__opencl_c_integer_dot_product_input_4x8bit_packed")
        {
            p.push_str(PACKED_DOT_PRODUCTS);
        }
        // cl_khr_kernel_clock is newer than clang 15: its macros and
        // built-ins are declared here, and the rewriter reads the clock
        // where they are called.
        if self.features.iter().any(|f| f == "cl_khr_kernel_clock") {
            p.push_str("#define cl_khr_kernel_clock 1\n");
            for scope in ["device", "work_group", "sub_group"] {
                let feature = format!("__opencl_c_kernel_clock_scope_{scope}");
                if self.features.contains(&feature) {
                    p.push_str(&format!(
                        "#define {feature} 1\nulong clock_read_{scope}(void);\nuint2 clock_read_hilo_{scope}(void);\n"
                    ));
                }
            }
        }
        // cl_vkcl_cooperative_matrix: handle types and built-ins for the
        // device's matrices, which the rewriter's matrix pass lowers.
        p.push_str(&crate::compiler::spirv::p1_kernel::matrix::declarations(
            self.matrices,
        ));
        p
    }
}

/// cl_khr_integer_dot_product's packed forms, which llvm-spirv 15 leaves
/// as calls: the same products of the four bytes, as vectors.
const PACKED_DOT_PRODUCTS: &str = "\
#define dot_4x8packed_uu_uint(a, b) dot(as_uchar4((uint)(a)), as_uchar4((uint)(b)))
#define dot_4x8packed_ss_int(a, b) dot(as_char4((uint)(a)), as_char4((uint)(b)))
#define dot_4x8packed_us_int(a, b) dot(as_uchar4((uint)(a)), as_char4((uint)(b)))
#define dot_4x8packed_su_int(a, b) dot(as_char4((uint)(a)), as_uchar4((uint)(b)))
#define dot_acc_sat_4x8packed_uu_uint(a, b, c) \\
    dot_acc_sat(as_uchar4((uint)(a)), as_uchar4((uint)(b)), (uint)(c))
#define dot_acc_sat_4x8packed_ss_int(a, b, c) \\
    dot_acc_sat(as_char4((uint)(a)), as_char4((uint)(b)), (int)(c))
#define dot_acc_sat_4x8packed_us_int(a, b, c) \\
    dot_acc_sat(as_uchar4((uint)(a)), as_char4((uint)(b)), (int)(c))
#define dot_acc_sat_4x8packed_su_int(a, b, c) \\
    dot_acc_sat(as_char4((uint)(a)), as_uchar4((uint)(b)), (int)(c))
";

/// The outcome of running the front end.
pub struct Compiled {
    /// Empty where `object` holds the code.
    pub spirv: Vec<u32>,
    /// A compiled object's code, optimised when it is linked.
    pub object: Option<Arc<ObjectIr>>,
    pub log: String,
}

/// A failed compile, with the compiler's diagnostics.
pub struct CompileError {
    pub log: String,
}

/// A private scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("vkcl-{}", super::unique_tag()));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl FrontEnd {
    /// Compiles OpenCL C (with embedded headers, by include name) to SPIR-V.
    pub fn compile(
        &self,
        source: &str,
        headers: &[(String, Vec<u8>)],
        options: &Options,
        device: &DeviceMacros,
    ) -> Result<Compiled, CompileError> {
        let mut key = cache::Key::new(
            "opencl-c, SPIR-V 1.0 or 1.3, convergent sub-groups, not vectorised, gnu89 inline, native integer widths, phi parents once, dominance order, optimised from unoptimised code, executables with internal functions, private arrays unrolled where calls do not multiply, arms' stores not sunk, three-component vectors kept",
        );
        key.add(self.version.as_bytes());
        key.add(options.clang.join("\u{1}").as_bytes());
        key.add(options.cl_std.as_bytes());
        key.add(&[
            options.kernel_arg_info as u8,
            options.opt_disable as u8,
            device.image_support as u8,
            options.executable as u8,
        ]);
        key.add(device.cl_ext().as_bytes());
        let prelude_text = device.prelude();
        key.add(prelude_text.as_bytes());
        key.add(source.as_bytes());
        for (name, body) in headers {
            key.add(name.as_bytes());
            key.add(body);
        }
        // What applications build: the source with the options it was
        // built with, named by its hash.
        super::dump(
            &format!("program-{:016x}.cl", cache::fnv1a(source.as_bytes(), 0)),
            || format!("// options: {}\n{source}", options.clang.join(" ")).into_bytes(),
        );
        // Headers found through -I can change without the key seeing it:
        // such builds are not cached.
        let cacheable = !options.clang.iter().any(|o| o.starts_with("-I"))
            // An optimised object is unoptimised LLVM IR, quick to make
            // again; what takes time is cached where it is optimised.
            && (options.executable || options.opt_disable);
        if let Some((spirv, log)) = cacheable.then(|| cache::load(&key)).flatten() {
            return Ok(Compiled {
                spirv,
                object: None,
                log,
            });
        }
        let started = std::time::Instant::now();
        let fail = |log: String| CompileError { log };
        let scratch =
            Scratch::new().map_err(|e| fail(format!("cannot create a scratch directory: {e}")))?;
        let dir = &scratch.0;
        for (name, body) in headers {
            let path = dir.join("include").join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| fail(format!("cannot write header {name}: {e}")))?;
            }
            std::fs::write(&path, body)
                .map_err(|e| fail(format!("cannot write header {name}: {e}")))?;
        }
        let prelude = dir.join("vkcl-device.h");
        std::fs::write(&prelude, &prelude_text)
            .map_err(|e| fail(format!("cannot write the device prelude: {e}")))?;
        let src = dir.join("program.cl");
        std::fs::write(&src, source).map_err(|e| fail(format!("cannot write the source: {e}")))?;
        let bc = dir.join("program.bc");
        let spv = dir.join("program.spv");
        // clang, then llvm-spirv; optimised code with `freeze` goes through
        // LLVM's text form (below), and other optimised code llvm-spirv
        // cannot translate (odd integer widths, the vectoriser's
        // llvm.vector.reduce.* and its vectors wider than 16, a null
        // pointer folded into a cast between named address spaces) is built
        // again unoptimised: the driver's compiler optimises what it
        // receives anyway.
        let uses_subgroups = source.contains("sub_group_")
            || headers
                .iter()
                .any(|(_, body)| body.windows(10).any(|w| w == b"sub_group_"));
        let ll = dir.join("program.ll");
        // `text`: through LLVM's text form. `Text::Thaw`: the optimised
        // module with its `freeze` instructions (which llvm-spirv 15 cannot
        // translate) made plain copies. `Text::Unoptimised`: the module
        // built unoptimised, for the optimiser to take from its text form
        // (see `unoptimised_ir`); nothing is translated.
        let translate =
            |optimise: bool, text: Text, spirv_version: &str| -> Result<String, String> {
                let thaw = text == Text::Thaw;
                let unoptimised = text == Text::Unoptimised;
                let mut clang = Command::new(&self.clang);
                clang
                    .arg("-x")
                    .arg("cl")
                    .arg(format!("-cl-std={}", options.cl_std))
                    .args(["-target", "spir64-unknown-unknown", "-emit-llvm", "-c"])
                    .arg(if optimise && !unoptimised {
                        "-O2"
                    } else {
                        "-O0"
                    })
                    .arg("-Xclang")
                    .arg(format!("-cl-ext={}", device.cl_ext()))
                    .arg("-include")
                    .arg(&prelude)
                    .arg("-fno-discard-value-names")
                    // C99 makes a plain `inline` definition an inline-only one:
                    // a call clang does not inline (a large function,
                    // `noinline`, -O0) then names a function that no module
                    // defines. OpenCL code is written for compilers that emit
                    // the function anyway, as GNU C's `inline` does.
                    .arg("-fgnu89-inline")
                    // Lifetime markers mean nothing to Vulkan, and with them
                    // clang routes loop exits through cleanup switches that the
                    // optimiser narrows to odd widths (i3).
                    .args(["-Xclang", "-disable-lifetime-markers"])
                    // Three-component vectors are loaded and stored as
                    // themselves, not as four components through a cast
                    // pointer: a cast that Vulkan's logical pointers cannot
                    // express, which moved `local` arrays of float3 to
                    // device memory.
                    .args(["-Xclang", "-fpreserve-vec3-type"])
                    .arg("-I")
                    .arg(dir.join("include"))
                    .args(&options.clang);
                if options.kernel_arg_info {
                    clang.arg("-cl-kernel-arg-info");
                }
                if unoptimised {
                    // Optimised later, from the text form; with native
                    // widths declared, LLVM would make switches lookup
                    // tables in private globals.
                    clang.args(["-Xclang", "-disable-O0-optnone", "-fno-jump-tables"]);
                } else if optimise {
                    optimiser_flags(&mut clang, uses_subgroups);
                }
                if thaw || unoptimised {
                    clang.arg("-S");
                }
                clang
                    .arg("-o")
                    .arg(if thaw || unoptimised { &ll } else { &bc })
                    .arg(&src)
                    .current_dir(dir);
                let out = process::output(&mut clang)
                    .map_err(|e| format!("cannot run {}: {e}", self.clang.display()))?;
                // Diagnostics name the file as the application gave it: no path.
                let log = out.log("clang").replace(&format!("{}/", dir.display()), "");
                if !out.success() {
                    return Err(log);
                }
                if unoptimised {
                    return Ok(log);
                }
                if thaw {
                    let text = std::fs::read_to_string(&ll).map_err(|e| e.to_string())?;
                    std::fs::write(&ll, thaw_freezes(&text)).map_err(|e| e.to_string())?;
                    if let Err(e) = self.clang_ir(&["-c", "-O0"], &ll, &bc, uses_subgroups) {
                        return Err(log + &e);
                    }
                }
                self.llvm_spirv(&bc, &spv, spirv_version)
                    .map(|more| log + &more)
            };
        // SPIR-V 1.0 wherever it suffices, so that objects link with the
        // widest range of tools; the cl_khr_subgroup_* built-ins exist only
        // as SPIR-V 1.3's OpGroupNonUniform* instructions, which llvm-spirv
        // refuses (by aborting) below that version.
        let translate = |optimise: bool, text: Text| match translate(optimise, text, "1.0") {
            Err(log) if log.contains("isAllowedToUseVersion") => {
                log::debug!(target: "vkcl::compiler", "the program needs SPIR-V 1.3");
                translate(optimise, text, "1.3")
            }
            other => other,
        };
        // The program as unoptimised LLVM IR text, with 8-, 16-, 32- and
        // 64-bit integers declared native (SPIR's data layout declares
        // none, and LLVM then narrows values to widths such as i2, which
        // llvm-spirv refuses), and its log.
        let unoptimised_ir = || -> Result<(String, String), String> {
            let log = translate(false, Text::Unoptimised)?;
            let text = std::fs::read_to_string(&ll).map_err(|e| e.to_string())?;
            Ok((with_native_integers(&text), log))
        };
        // Inline assembly crashes llvm-spirv or is unknown to clang in
        // OpenCL mode: say what it is, where.
        let fail = |log: String| match inline_assembly(source, headers) {
            Some(at) => CompileError {
                log: format!(
                    "{at}: error: inline assembly is not supported: vkcl runs kernels as Vulkan SPIR-V, which cannot hold a GPU's native instructions\n{}",
                    // llvm-spirv's crash report says nothing more.
                    if log.contains("Stack dump") { "" } else { &log }
                ),
            },
            None => CompileError { log },
        };
        let optimise = !options.opt_disable;
        // An optimised build starts from unoptimised code, optimised from
        // its text form (`FrontEnd::translate_ir`); in an executable, with its
        // functions other than kernels made internal, so that the
        // optimiser drops what no kernel calls (a program's headers may
        // define hundreds of helpers it does not use). A compiled object
        // keeps that text and is optimised when it is linked, where a
        // program linked from one object gets the same. Where that fails,
        // clang optimises the source itself, its `freeze` instructions
        // (from div/rem pairing and loop passes) thawed through the text
        // form; what still fails is built unoptimised.
        if optimise {
            match unoptimised_ir() {
                Ok((text, log)) if !options.executable => {
                    log::debug!(target: "vkcl::compiler", "front end: an object of {} bytes of LLVM IR in {:?}", text.len(), started.elapsed());
                    return Ok(Compiled {
                        spirv: Vec::new(),
                        object: Some(Arc::new(ObjectIr::new(text, uses_subgroups))),
                        log,
                    });
                }
                Ok((text, log)) => match self.translate_ir(&text, uses_subgroups, true, false) {
                    Ok(spirv) => {
                        if cacheable {
                            cache::store(&key, &spirv, &log);
                        }
                        log::debug!(target: "vkcl::compiler", "front end: {} words in {:?}", spirv.len(), started.elapsed());
                        return Ok(Compiled {
                            spirv,
                            object: None,
                            log,
                        });
                    }
                    Err(e) => {
                        log::debug!(target: "vkcl::compiler", "optimising the unoptimised program failed: {}", e.trim());
                    }
                },
                // The source has errors: clang would report the same
                // again in the optimised build.
                Err(log) if diagnosed(&log) => return Err(fail(log)),
                Err(log) => {
                    log::debug!(target: "vkcl::compiler", "building the unoptimised program failed: {}", log.trim());
                }
            }
        }
        let translate = |optimise: bool| match translate(optimise, Text::None) {
            Err(log) if optimise && log.contains("freeze") => {
                log::debug!(target: "vkcl::compiler", "the optimised program has freeze instructions: translating it through LLVM's text form");
                translate(true, Text::Thaw)
            }
            other => other,
        };
        let log = match translate(optimise) {
            Ok(log) => log,
            Err(log) if optimise && untranslatable(&log) => {
                log::debug!(target: "vkcl::compiler", "llvm-spirv cannot translate the optimised program; building it unoptimised: {}", log.trim());
                translate(false).map_err(fail)?
            }
            Err(log) => return Err(fail(log)),
        };
        let spirv = read_spirv(&spv).map_err(fail)?;
        if cacheable {
            cache::store(&key, &spirv, &log);
        }
        log::debug!(target: "vkcl::compiler", "front end: {} words in {:?}", spirv.len(), started.elapsed());
        Ok(Compiled {
            spirv,
            object: None,
            log,
        })
    }

    /// Runs clang on LLVM IR text `input` with `flags`, writing `output`;
    /// `subgroups`: the program uses sub-group built-ins.
    fn clang_ir(
        &self,
        flags: &[&str],
        input: &Path,
        output: &Path,
        subgroups: bool,
    ) -> Result<(), String> {
        let mut clang = Command::new(&self.clang);
        clang
            .args([
                "-x",
                "ir",
                "-target",
                "spir64-unknown-unknown",
                "-emit-llvm",
            ])
            .args(flags)
            .arg("-o")
            .arg(output)
            .arg(input);
        if flags.contains(&"-O2") {
            optimiser_flags(&mut clang, subgroups);
        }
        let out = process::output(&mut clang)
            .map_err(|e| format!("cannot run {}: {e}", self.clang.display()))?;
        if out.success() {
            Ok(())
        } else {
            Err(out.log("clang"))
        }
    }

    /// Translates LLVM bitcode `bc` to SPIR-V `spv` of at most
    /// `spirv_version`; returns llvm-spirv's messages.
    fn llvm_spirv(&self, bc: &Path, spv: &Path, spirv_version: &str) -> Result<String, String> {
        let mut cmd = Command::new(&self.llvm_spirv);
        cmd.arg("--preserve-ocl-kernel-arg-type-metadata-through-string")
            .arg(format!("--spirv-max-version={spirv_version}"))
            // sub_group_rotate, which the rewriter makes a shuffle,
            // cl_khr_extended_bit_ops and cl_khr_integer_dot_product.
            .arg(
                "--spirv-ext=+SPV_KHR_subgroup_rotate,+SPV_KHR_bit_instructions,\
                 +SPV_KHR_integer_dot_product",
            )
            .arg(bc)
            .arg("-o")
            .arg(spv);
        let out = process::output(&mut cmd)
            .map_err(|e| format!("cannot run {}: {e}", self.llvm_spirv.display()))?;
        let log = out.log("llvm-spirv");
        if out.success() { Ok(log) } else { Err(log) }
    }

    /// [`FrontEnd::translate_ir`] with the unoptimised fallback, its results
    /// cached on disk (a build's are cached by its source instead).
    fn translate_ir_cached(
        &self,
        ir: &str,
        subgroups: bool,
        executable: bool,
    ) -> Result<Vec<u32>, String> {
        let mut key = cache::Key::new(
            "LLVM IR to SPIR-V 1.0 or 1.3, optimised where it translates, private arrays unrolled where calls do not multiply, arms' stores not sunk, three-component vectors kept",
        );
        key.add(self.version.as_bytes());
        key.add(&[subgroups as u8, executable as u8]);
        // The text itself can be tens of megabytes: two hashes stand for it.
        key.add(&(ir.len() as u64).to_le_bytes());
        key.add(&cache::fnv1a(ir.as_bytes(), 0xcbf2_9ce4_8422_2325).to_le_bytes());
        key.add(&cache::fnv1a(ir.as_bytes(), 0x9e37_79b9_7f4a_7c15).to_le_bytes());
        if let Some((spirv, _)) = cache::load(&key) {
            return Ok(spirv);
        }
        let spirv = self.translate_ir(ir, subgroups, executable, true)?;
        cache::store(&key, &spirv, "");
        Ok(spirv)
    }

    /// SPIR-V from unoptimised LLVM IR text with native integer widths
    /// (see `unoptimised_ir` in [`FrontEnd::compile`]): optimised, or,
    /// where llvm-spirv cannot translate the optimised code and
    /// `unoptimised` allows it, as it is. `executable`: only kernels need
    /// to stay visible (the text's other functions are internal or are
    /// made so), so that the optimiser drops what no kernel reaches.
    fn translate_ir(
        &self,
        ir: &str,
        subgroups: bool,
        executable: bool,
        unoptimised: bool,
    ) -> Result<Vec<u32>, String> {
        let started = std::time::Instant::now();
        let scratch =
            Scratch::new().map_err(|e| format!("cannot create a scratch directory: {e}"))?;
        let dir = &scratch.0;
        let (ll, opt, bc, spv) = (
            dir.join("program.ll"),
            dir.join("program.opt.ll"),
            dir.join("program.bc"),
            dir.join("program.spv"),
        );
        let text = if executable {
            with_internal_functions(ir)
        } else {
            ir.to_string()
        };
        std::fs::write(&ll, text).map_err(|e| format!("cannot write LLVM IR: {e}"))?;
        let translate = |input: &Path| -> Result<String, String> {
            self.clang_ir(&["-c", "-O0"], input, &bc, subgroups)?;
            match self.llvm_spirv(&bc, &spv, "1.0") {
                Err(log) if log.contains("isAllowedToUseVersion") => {
                    self.llvm_spirv(&bc, &spv, "1.3")
                }
                other => other,
            }
        };
        let optimised = || -> Result<String, String> {
            self.clang_ir(&["-O2", "-S"], &ll, &opt, subgroups)?;
            let mut text = std::fs::read_to_string(&opt).map_err(|e| e.to_string())?;
            // Private arrays left in memory are indexed in loops that -O2
            // did not unroll (it unrolls fully only up to 150 or so
            // instructions); drivers then keep them in slow local memory
            // (a register-blocked SGEMM, its 8×8 accumulators in an array:
            // 2.4 TFLOP/s on an H200 against 22.9 with them in registers).
            // GPU compilers unroll such loops much further (LLVM's AMDGPU
            // target raises the threshold for loops that index private
            // arrays): the module is optimised once more with a higher
            // threshold, kept where fewer arrays stay in memory.
            let left = private_arrays(&text);
            if left > 0 {
                let more = dir.join("program.unrolled.ll");
                let unrolled = ["-O2", "-S", "-mllvm", UNROLL_THRESHOLD];
                if self.clang_ir(&unrolled, &ll, &more, subgroups).is_ok() {
                    let t = std::fs::read_to_string(&more).map_err(|e| e.to_string())?;
                    log::debug!(target: "vkcl::compiler", "private arrays in memory: {left} at -O2, {} unrolled further (calls of the module's functions: {}, then {})", private_arrays(&t), calls_within(&text), calls_within(&t));
                    if unrolled_is_better(&text, &t) {
                        text = t;
                    }
                }
            }
            std::fs::write(&opt, thaw_freezes(&text)).map_err(|e| e.to_string())?;
            translate(&opt)
        };
        if let Err(log) = optimised() {
            if !unoptimised {
                return Err(log);
            }
            log::debug!(target: "vkcl::compiler", "llvm-spirv cannot translate the optimised code; translating it unoptimised: {}", log.trim());
            translate(&ll)?;
        }
        let spirv = read_spirv(&spv)?;
        log::debug!(target: "vkcl::compiler", "front end, from LLVM IR: {} words in {:?}", spirv.len(), started.elapsed());
        Ok(spirv)
    }
}

/// The full-unroll threshold of the second optimisation of modules whose
/// private arrays -O2 leaves in memory (LLVM's default at -O2 is 150
/// instructions of unrolled loop, AMDGPU's for loops indexing private
/// arrays 2500).
const UNROLL_THRESHOLD: &str = "-unroll-threshold=1000";

/// How many private arrays optimised LLVM IR keeps in memory (`alloca`s
/// of array type).
fn private_arrays(ir: &str) -> usize {
    ir.lines().filter(|l| l.contains(" = alloca [")).count()
}

/// Whether the module optimised with more unrolling (`unrolled`) is kept
/// over the one -O2 made: where it leaves fewer private arrays in memory,
/// and does not call the module's own functions more often. Unrolling a
/// loop around a call of a function -O2 kept apart copies the call, and
/// every copy becomes a whole body once calls are inlined: quadratures
/// nested in one another (SasView's models) grew kernels past a million
/// instructions that way.
fn unrolled_is_better(o2: &str, unrolled: &str) -> bool {
    private_arrays(unrolled) < private_arrays(o2) && calls_within(unrolled) <= calls_within(o2)
}

/// How many calls LLVM IR makes to functions it defines (not to
/// intrinsics or built-ins, which it only declares).
fn calls_within(ir: &str) -> usize {
    let callee = |l: &str, after: &str| -> Option<String> {
        let rest = &l[l.find(after)? + after.len()..];
        let at = rest.find('@')?;
        let name: String = rest[at + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
            .collect();
        (!name.is_empty()).then_some(name)
    };
    let defined: std::collections::HashSet<String> = ir
        .lines()
        .filter(|l| l.starts_with("define "))
        .filter_map(|l| callee(l, "define "))
        .collect();
    ir.lines()
        .filter(|l| l.contains(" call "))
        .filter_map(|l| callee(l, " call "))
        .filter(|n| defined.contains(n))
        .count()
}

/// The flags of every clang step that optimises; `subgroups`: the program
/// uses sub-group built-ins.
fn optimiser_flags(clang: &mut Command, subgroups: bool) {
    // LLVM's vectorisers make vectors SPIR-V cannot hold (more than 16
    // components) and Vulkan's drivers split again: the driver's compiler
    // vectorises for its own hardware.
    clang.args(["-fno-vectorize", "-fno-slp-vectorize"]);
    // Loops that copy a run-time number of elements stay loops: as a
    // `memcpy` of unknown size they would become an OpCopyMemorySized
    // Vulkan has no counterpart for.
    clang.args(["-mllvm", "-disable-loop-idiom-memcpy"]);
    // The CFG simplification sinks instructions that end both arms of a
    // branch into their join, with a phi for the operand they differ in.
    // Stores to two fields of a private or local struct become one store
    // through a phi of the two field pointers, which Vulkan's logical
    // pointers cannot hold: the rewriter would move the whole object to
    // device memory (OpenMM's nonbonded kernel, its tile of atoms in local
    // memory: 2.3 times slower on an H100). And LLVM 15 sinks convergent
    // calls the same way, so that a non-uniform sub-group operation would
    // run with lanes from both arms.
    clang.args(["-mllvm", "-simplifycfg-sink-common=false"]);
    if subgroups {
        // Hoisting identical convergent calls out of both arms has the
        // same effect on sub-group operations.
        clang.args(["-mllvm", "-simplifycfg-hoist-common=false"]);
    }
}

/// Whether llvm-spirv's messages say it cannot translate optimised code
/// that the unoptimised build of the same program avoids.
fn untranslatable(log: &str) -> bool {
    log.contains("Can't translate llvm instruction")
        || log.contains("InvalidBitWidth")
        || log.contains("Unexpected llvm intrinsic")
        || log.contains("allowed only to generic")
        || log.contains("Unsupported vector type")
}

/// The SPIR-V module llvm-spirv wrote at `spv`, normalised.
fn read_spirv(spv: &Path) -> Result<Vec<u32>, String> {
    let bytes = std::fs::read(spv).map_err(|e| format!("cannot read the SPIR-V: {e}"))?;
    let spirv = words_of(&bytes).ok_or("llvm-spirv produced a malformed module")?;
    Ok(normalise::normalise(&spirv).unwrap_or(spirv))
}

/// A compiled object's code as unoptimised LLVM IR text (native integer
/// widths declared), optimised only when needed: a program linked from
/// this object alone is optimised with every function but its kernels
/// internal ([`ObjectIr::executable`]), so that the optimiser drops the
/// helpers no kernel reaches instead of optimising a whole header's worth
/// of them; other uses (binaries, links of several objects) take
/// [`ObjectIr::spirv`], optimised with every function kept.
pub struct ObjectIr {
    text: String,
    subgroups: bool,
    spirv: OnceLock<Result<Arc<Vec<u32>>, String>>,
}

impl ObjectIr {
    fn new(text: String, subgroups: bool) -> ObjectIr {
        ObjectIr {
            text,
            subgroups,
            spirv: OnceLock::new(),
        }
    }

    /// The object's SPIR-V, made once.
    pub fn spirv(&self) -> Result<Arc<Vec<u32>>, String> {
        self.spirv
            .get_or_init(|| {
                let fe = front_end().ok_or("no OpenCL C compiler is available")?;
                fe.translate_ir_cached(&self.text, self.subgroups, false)
                    .map(Arc::new)
            })
            .clone()
    }

    /// An executable made of this object alone.
    pub fn executable(&self) -> Result<Vec<u32>, String> {
        let fe = front_end().ok_or("no OpenCL C compiler is available")?;
        fe.translate_ir_cached(&self.text, self.subgroups, true)
    }
}

/// How a build goes through LLVM's text form (see `translate`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Text {
    None,
    Thaw,
    Unoptimised,
}

/// Unoptimised LLVM IR text made ready for the optimiser: its data layout
/// declares 8-, 16-, 32- and 64-bit integers native, so that the
/// optimiser keeps to those widths, and its functions lose the `noinline`
/// clang gives every function at -O0 (vkcl inlines every call anyway).
fn with_native_integers(ir: &str) -> String {
    const KEY: &str = "target datalayout = \"";
    let ir = match ir.find(KEY) {
        Some(at) => {
            let start = at + KEY.len();
            let end = start + ir[start..].find('"').unwrap_or(0);
            format!("{}-n8:16:32:64{}", &ir[..end], &ir[end..])
        }
        None => ir.to_string(),
    };
    ir.split_inclusive('\n')
        .map(|line| {
            if line.starts_with("attributes #") {
                line.replace(" noinline", "")
            } else {
                line.to_string()
            }
        })
        .collect()
}

/// Unoptimised LLVM IR text of an executable with its functions other than
/// kernels internal: no other module will call them, so the optimiser may
/// inline them anywhere and drop those no kernel reaches.
fn with_internal_functions(ir: &str) -> String {
    ir.split_inclusive('\n')
        .map(|line| {
            match line
                .strip_prefix("define dso_local spir_func ")
                .or_else(|| line.strip_prefix("define spir_func "))
            {
                Some(rest) => format!("define internal spir_func {rest}"),
                None => line.to_string(),
            }
        })
        .collect()
}

/// LLVM IR text with each `%x = freeze T v` made `%x = bitcast T v to T`:
/// a plain copy, which is what freezing a defined value is, and the
/// driver's compiler never sees an undefined one it could exploit.
fn thaw_freezes(ir: &str) -> String {
    let mut out = String::with_capacity(ir.len());
    for line in ir.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let thawed = body.split_once(" = freeze ").and_then(|(lhs, rest)| {
            // Metadata attachments follow the operand.
            let (operand, attached) = match rest.find(", !") {
                Some(at) => (&rest[..at], &rest[at..]),
                None => (rest, ""),
            };
            let (ty, value) = operand.trim_end().rsplit_once(' ')?;
            Some(format!("{lhs} = bitcast {ty} {value} to {ty}{attached}"))
        });
        match thawed {
            Some(t) => {
                out.push_str(&t);
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Where the source or one of its headers uses inline assembly (`asm`,
/// `__asm`, `__asm__` followed by `(`, a qualifier or `goto`), as
/// "file:line".
fn inline_assembly(source: &str, headers: &[(String, Vec<u8>)]) -> Option<String> {
    let find = |text: &str| -> Option<usize> {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        text.lines().position(|line| {
            let mut rest = line;
            while let Some(at) = rest.find("asm") {
                let before = rest[..at].trim_end_matches('_');
                let after = rest[at + 3..].trim_start_matches('_');
                let word_starts = !before.ends_with(ident);
                let next = after.trim_start();
                let word_ends = !after.starts_with(ident);
                if word_starts
                    && word_ends
                    && (next.starts_with('(')
                        || ["volatile", "__volatile__", "goto", "inline"]
                            .iter()
                            .any(|q| next.starts_with(q)))
                {
                    return true;
                }
                rest = &rest[at + 3..];
            }
            false
        })
    };
    if let Some(line) = find(source) {
        return Some(format!("program.cl:{}", line + 1));
    }
    headers.iter().find_map(|(name, body)| {
        find(&String::from_utf8_lossy(body)).map(|line| format!("{name}:{}", line + 1))
    })
}

/// SPIR-V bytes as words, in either byte order.
pub fn words_of(bytes: &[u8]) -> Option<Vec<u32>> {
    if bytes.len() % 4 != 0 || bytes.len() < 20 {
        return None;
    }
    let le: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    match le[0] {
        0x0723_0203 => Some(le),
        0x0302_2307 => Some(le.into_iter().map(u32::swap_bytes).collect()),
        _ => None,
    }
}

/// Whether clang's `log` ends in its count of errors found in the source
/// ("1 error generated."), rather than in a crash or a failure to run.
fn diagnosed(log: &str) -> bool {
    !log.contains("Stack dump")
        && log.lines().any(|l| {
            let l = l.trim_end();
            l.ends_with(" error generated.") || l.ends_with(" errors generated.")
        })
}

/// For unit tests: `source` built with default options (and image support
/// where `images`), as SPIR-V; `None`, with a note, where this system has
/// no front end. Panics where the source does not build.
#[cfg(test)]
pub(crate) fn build_for_test(source: &str, images: bool) -> Option<Vec<u32>> {
    build_for_test_with(source, images, "", &[])
}

/// [`build_for_test`] with build options and the device's optional
/// features (`__opencl_c_pipes`, extensions).
#[cfg(test)]
pub(crate) fn build_for_test_with(
    source: &str,
    images: bool,
    options: &str,
    features: &[&str],
) -> Option<Vec<u32>> {
    let Some(fe) = front_end() else {
        eprintln!("no OpenCL C front end: skipped");
        return None;
    };
    let options = Options::parse(options, Purpose::Build).expect("valid options");
    let device = DeviceMacros {
        features: features.iter().map(|f| f.to_string()).collect(),
        image_support: images,
        matrices: &[],
    };
    match fe.compile(source, &[], &options, &device) {
        Ok(compiled) => Some(compiled.spirv),
        Err(e) => panic!("the source does not build: {}", e.log),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_within_counts_calls_of_defined_functions() {
        let ir = "define dso_local spir_func float @part(float %x) #0 {\n  ret float %x\n}\n\
declare spir_func float @_Z3sinf(float)\n\
define dso_local spir_kernel void @k(float addrspace(1)* %o) {\n\
  %a = call spir_func float @part(float 1.0)\n\
  %b = tail call spir_func float @part(float %a)\n\
  %c = call spir_func float @_Z3sinf(float %b)\n\
  %d = call float @llvm.fmuladd.f32(float %a, float %b, float %c)\n\
  ret void\n}\n";
        assert_eq!(calls_within(ir), 2);
        // A loop unrolled around the call: an array fewer, a call more.
        let o2 = format!("{ir}  %arr = alloca [8 x float], align 4\n");
        let unrolled = ir.replace(
            "ret void",
            "%e = call spir_func float @part(float %d)\n  ret void",
        );
        assert!(!unrolled_is_better(&o2, &unrolled));
        assert!(unrolled_is_better(&o2, ir));
    }

    /// Private arrays indexed in loops that -O2 leaves rolled are
    /// unrolled into registers: no array stays a function variable
    /// (without the second optimisation the 8×8 accumulators and a row
    /// of operands did).
    #[test]
    fn private_arrays_in_loops_leave_memory() {
        let Some(words) = build_for_test(
            include_str!("../../tests/kernels/register_blocks.cl"),
            false,
        ) else {
            return;
        };
        let module = rspirv::dr::load_words(&words).unwrap();
        let arrays: Vec<u32> = module
            .types_global_values
            .iter()
            .filter(|t| t.class.opcode == rspirv::spirv::Op::TypeArray)
            .filter_map(|t| t.result_id)
            .collect();
        let array_pointers: Vec<u32> = module
            .types_global_values
            .iter()
            .filter(|t| {
                t.class.opcode == rspirv::spirv::Op::TypePointer
                    && t.operands.first()
                        == Some(&rspirv::dr::Operand::StorageClass(
                            rspirv::spirv::StorageClass::Function,
                        ))
                    && matches!(t.operands.get(1), Some(rspirv::dr::Operand::IdRef(p)) if arrays.contains(p))
            })
            .filter_map(|t| t.result_id)
            .collect();
        let variables = module
            .all_inst_iter()
            .filter(|i| {
                i.class.opcode == rspirv::spirv::Op::Variable
                    && i.result_type.is_some_and(|t| array_pointers.contains(&t))
            })
            .count();
        assert_eq!(variables, 0, "private arrays left in memory");
    }

    use super::*;

    /// A source with errors runs clang once: the optimised build that
    /// follows a failed unoptimised one is for later stages' failures,
    /// and would only report the same errors again.
    #[cfg(unix)]
    #[test]
    fn source_errors_run_clang_once() {
        use std::os::unix::fs::PermissionsExt;
        let Some(fe) = front_end() else {
            eprintln!("no OpenCL C front end: skipped");
            return;
        };
        let dir = Scratch::new().unwrap();
        let runs = dir.0.join("runs");
        let wrapper = dir.0.join("clang");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho run >> '{}'\nexec '{}' \"$@\"\n",
                runs.display(),
                fe.clang.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let counted = FrontEnd {
            clang: wrapper,
            llvm_spirv: fe.llvm_spirv.clone(),
            version: fe.version.clone(),
        };
        let device = DeviceMacros {
            features: Vec::new(),
            image_support: false,
            matrices: &[],
        };
        let options = Options::parse("", Purpose::Build).unwrap();
        let source = "__kernel void k(__global int *p) { p[0] = undeclared; }";
        let Err(e) = counted.compile(source, &[], &options, &device) else {
            panic!("a source with an error built");
        };
        assert!(e.log.contains("undeclared"), "{}", e.log);
        let count = std::fs::read_to_string(&runs).unwrap().lines().count();
        assert_eq!(
            count, 1,
            "clang ran {count} times for a source with an error"
        );
    }

    #[test]
    fn options() {
        let o = Options::parse(
            "-D FOO=1 -DBAR -I \"my dir\" -cl-std=CL3.0 -cl-mad-enable -w",
            Purpose::Build,
        )
        .unwrap();
        assert_eq!(
            o.clang,
            [
                "-D",
                "FOO=1",
                "-DBAR",
                "-I",
                "my dir",
                "-cl-mad-enable",
                "-w"
            ]
        );
        assert_eq!(o.cl_std, "CL3.0");
        assert_eq!(
            Options::parse("-cl-std=CL2.5", Purpose::Build),
            Err(ClError(CL_INVALID_BUILD_OPTIONS))
        );
        assert_eq!(
            Options::parse("-fbogus", Purpose::Compile),
            Err(ClError(CL_INVALID_COMPILER_OPTIONS))
        );
        assert_eq!(
            Options::parse("-D", Purpose::Build),
            Err(ClError(CL_INVALID_BUILD_OPTIONS))
        );
        let l = Options::parse("-create-library -cl-fast-relaxed-math", Purpose::Link).unwrap();
        assert!(l.create_library);
        assert_eq!(
            Options::parse("-DX", Purpose::Link),
            Err(ClError(CL_INVALID_LINKER_OPTIONS))
        );
        assert_eq!(Options::parse("", Purpose::Build).unwrap().cl_std, "CL1.2");
        // Options of the specification that change nothing here.
        let quiet =
            Options::parse("-cl-strict-aliasing -g -cl-opt-disable", Purpose::Build).unwrap();
        assert!(quiet.clang.is_empty() && quiet.opt_disable);
        assert!(Options::parse("-g", Purpose::Compile).is_ok());
    }

    const OPTIMISER_SHAPES: &str = include_str!("../../tests/kernels/optimiser_shapes.cl");

    #[test]
    fn optimised_code_reaches_the_rewriter_valid() {
        let source = format!("#define NARROW_SWITCH\n{OPTIMISER_SHAPES}");
        let Some(words) = build_for_test(&source, false) else {
            return;
        };
        let module = rspirv::dr::load_words(&words).expect("a module");
        let count = |op| {
            module
                .all_inst_iter()
                .filter(|i| i.class.opcode == op)
                .count()
        };
        // Optimised, not the unoptimised fallback: the helpers are inlined,
        // and the one call left is llvm-spirv's entry point calling the
        // kernel.
        use rspirv::spirv::Op;
        assert_eq!(
            count(Op::FunctionCall),
            1,
            "the program was built unoptimised"
        );
        assert_eq!(count(Op::CopyMemorySized), 0, "a copy of run-time length");
        // The validator checks what program binaries carry.
        crate::compiler::link::validate(&words).expect("valid SPIR-V");
    }

    /// A compiled object stays unoptimised LLVM IR until it is used: its
    /// SPIR-V keeps every function for links with other objects, an
    /// executable of it alone only what its kernels reach.
    #[test]
    fn objects_are_optimised_when_linked() {
        let Some(fe) = front_end() else {
            eprintln!("no OpenCL C front end: skipped");
            return;
        };
        let source = "int unused_helper(int x) { return x * 3 + 1; }\n\
            int used_helper(int x) { return x * 5 + 2; }\n\
            kernel void k(global int *out) { out[0] = used_helper(out[0]); }\n";
        let options = Options::parse("", Purpose::Compile).expect("no options");
        let device = DeviceMacros {
            features: Vec::new(),
            image_support: false,
            matrices: &[],
        };
        let compiled = match fe.compile(source, &[], &options, &device) {
            Ok(c) => c,
            Err(e) => panic!("the source does not compile: {}", e.log),
        };
        assert!(compiled.spirv.is_empty(), "no SPIR-V made at compile time");
        let object = compiled.object.expect("the object's LLVM IR");
        let functions = |words: &[u32]| -> Vec<String> {
            let module = rspirv::dr::load_words(words).expect("a module");
            let names: std::collections::HashMap<u32, String> = module
                .debug_names
                .iter()
                .filter(|i| i.class.opcode == rspirv::spirv::Op::Name)
                .filter_map(|i| match (&i.operands[0], &i.operands[1]) {
                    (rspirv::dr::Operand::IdRef(id), rspirv::dr::Operand::LiteralString(name)) => {
                        Some((*id, name.clone()))
                    }
                    _ => None,
                })
                .collect();
            module
                .functions
                .iter()
                .filter_map(|f| f.def.as_ref()?.result_id)
                .filter_map(|id| names.get(&id).cloned())
                .collect()
        };
        let library = functions(&object.spirv().expect("the object's SPIR-V"));
        assert!(library.iter().any(|f| f == "unused_helper"), "{library:?}");
        let executable = functions(&object.executable().expect("an executable"));
        assert!(
            executable.iter().all(|f| !f.contains("helper")),
            "helpers are inlined or dropped: {executable:?}"
        );
        assert!(executable.iter().any(|f| f == "k"), "{executable:?}");
    }

    #[test]
    fn freezes_become_copies() {
        let ir =
            "  %a = freeze i32 %x\n  %b = add i32 %a, 1\n  %c = freeze <4 x i32> %v, !dbg !7\n";
        assert_eq!(
            thaw_freezes(ir),
            "  %a = bitcast i32 %x to i32\n  %b = add i32 %a, 1\n  %c = bitcast <4 x i32> %v to <4 x i32>, !dbg !7\n"
        );
    }

    #[test]
    fn inline_assembly_is_found() {
        let src = "kernel void k() {}\nvoid f() { uint r; asm volatile (\"x\" : \"=r\"(r)); }\n";
        assert_eq!(inline_assembly(src, &[]).as_deref(), Some("program.cl:2"));
        assert_eq!(
            inline_assembly("int x;\n__asm__(\"nop\");", &[]).as_deref(),
            Some("program.cl:2")
        );
        assert_eq!(inline_assembly("int spasm(int asmx); // asm", &[]), None);
        let h = vec![("h.h".to_string(), b"\n\n__asm (\"nop\");".to_vec())];
        assert_eq!(inline_assembly("", &h).as_deref(), Some("h.h:3"));
    }

    #[test]
    fn spirv_words() {
        let mut b = vec![0x03, 0x02, 0x23, 0x07];
        b.extend([0u8; 16]);
        assert_eq!(words_of(&b).unwrap()[0], 0x0723_0203);
        assert!(words_of(&b[..7]).is_none());
        assert!(words_of(&[0u8; 20]).is_none());
    }
}
