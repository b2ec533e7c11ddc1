//! Programs: OpenCL C source, SPIR-V IL or vkcl binaries in; per-device
//! builds (compile, link) with their status, options, log and kernels.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use opencl_sys::*;

use crate::compiler::cache::fnv1a;
use crate::compiler::frontend::{self, DeviceMacros, ObjectIr, Options, Purpose};
use crate::compiler::link;
use crate::compiler::memo::{self, ModuleId};
use crate::compiler::spirv::input::reflect::ArgKind;
use crate::compiler::spirv::input::reflect::{self, KernelInfo};
use crate::compiler::spirv::p3_interface::module_data;
use crate::compiler::spirv::p5_vulkan::images::ImageClass;
use crate::compiler::spirv::{self as rewriter, Rewritten};
use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::core::kernel::CompiledForms;
use crate::core::memory::upload;
use crate::core::object::{ClObject, Handle};
use crate::vk::device::LogicalDevice;
use crate::vk::memory::{BufferUse, DeviceBuffer};

/// What a program was created from.
pub enum Origin {
    Source(String),
    Il(Vec<u8>),
    Binary,
    /// The result of clLinkProgram.
    Linked,
}

/// One device's build.
#[derive(Clone)]
pub struct Build {
    pub status: cl_build_status,
    pub options: String,
    pub log: String,
    pub binary_type: cl_program_binary_type,
    /// `None` for a compiled object kept as LLVM IR (`object`).
    pub spirv: Option<Arc<Vec<u32>>>,
    /// A compiled object's code as LLVM IR, optimised when it is linked.
    pub object: Option<Arc<ObjectIr>>,
    pub kernels: Vec<KernelInfo>,
    /// Built with -cl-kernel-arg-info (argument names are available).
    pub arg_info: bool,
}

impl Build {
    /// Whether the build holds code (SPIR-V, or a compiled object's IR).
    pub fn has_code(&self) -> bool {
        self.spirv.is_some() || self.object.is_some()
    }

    /// The build's SPIR-V; a compiled object kept as LLVM IR is
    /// translated (once) now.
    pub fn code(&self) -> Result<Option<Arc<Vec<u32>>>, String> {
        match (&self.spirv, &self.object) {
            (Some(s), _) => Ok(Some(s.clone())),
            (None, Some(o)) => o.spirv().map(Some),
            (None, None) => Ok(None),
        }
    }
}

impl Default for Build {
    fn default() -> Self {
        Build {
            status: CL_BUILD_NONE,
            options: String::new(),
            log: String::new(),
            binary_type: CL_PROGRAM_BINARY_TYPE_NONE,
            spirv: None,
            object: None,
            kernels: Vec::new(),
            arg_info: false,
        }
    }
}

pub struct Program {
    pub context: Arc<Handle<Context>>,
    pub devices: Vec<Arc<Handle<Device>>>,
    pub origin: Origin,
    builds: Mutex<Vec<Build>>,
    /// Kernel objects created from this program.
    pub kernels_attached: AtomicUsize,
    /// Values set with clSetProgramSpecializationConstant, by SpecId.
    spec_values: Mutex<HashMap<u32, Vec<u8>>>,
    /// Device memory of each device's build for its program-scope
    /// variables and constant data (see the module_data pass), made when
    /// a kernel first needs it and kept for the program's life.
    segments: Mutex<HashMap<usize, Arc<DeviceBuffer>>>,
    /// Kernels rewritten for Vulkan: made for every kernel when an
    /// executable is built (so that a kernel vkcl cannot run fails the
    /// build, not its first enqueue) and again for other image classes.
    rewrites: Mutex<HashMap<RewriteKey, Arc<Rewritten>>>,
    /// The Vulkan forms (shader module, pipelines) of each kernel, by
    /// name, shared by every kernel object made from this program, so
    /// that an application that creates a kernel object per call (as
    /// CLBlast and PyOpenCL do) makes each pipeline once.
    forms: Mutex<HashMap<String, Arc<Mutex<CompiledForms>>>>,
}

/// A device index, a kernel name, the classes of its image arguments and
/// whether it runs as one work-item.
type RewriteKey = (usize, String, Vec<ImageClass>, rewriter::Form);

/// The kernels of a build, rewritten.
type Rewrites = Vec<(RewriteKey, Arc<Rewritten>)>;
/// A rewrite made at build time, or why it failed.
type Made = (RewriteKey, Result<Arc<Rewritten>, String>);

impl ClObject for Program {
    const INVALID: i32 = CL_INVALID_PROGRAM;
    const KIND: Option<crate::core::census::Kind> = Some(crate::core::census::Kind::Programs);
}

// The rewriter lays segments out for a start this aligned.
const _: () = assert!(crate::vk::memory::MIN_ALIGNMENT >= module_data::SEGMENT_ALIGN as u64);

/// Device memory holding a module data segment: `data` with its addresses
/// resolved, given the program segment's address where it needs one.
pub fn new_segment(
    vk: &Arc<LogicalDevice>,
    data: &module_data::ModuleData,
    program: Option<u64>,
) -> Result<Arc<DeviceBuffer>, String> {
    let buffer = DeviceBuffer::new(vk, data.bytes.len() as u64, BufferUse::Device)
        .map_err(|e| format!("no device memory for module data: {e}"))?;
    let bytes = data.resolve(buffer.address, program.unwrap_or(buffer.address));
    if !bytes.is_empty() {
        upload(vk, &buffer, 0, &bytes)
            .map_err(|e| format!("module data upload failed: {}", e.0))?;
    }
    Ok(Arc::new(buffer))
}

/// The OpenCL C features and extensions of a device, for the front end.
pub fn device_macros(d: &Device) -> DeviceMacros {
    let mut features: Vec<String> = d
        .opencl_c_features()
        .iter()
        .map(|f| f.to_string())
        .collect();
    features.extend(
        d.extensions()
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| {
                !crate::core::device::PLATFORM_EXTENSIONS
                    .iter()
                    .any(|(p, _)| p == n)
            })
            .filter(|n| *n != "cl_khr_pci_bus_info")
            .map(str::to_string),
    );
    DeviceMacros {
        features,
        image_support: d.image_support(),
        matrices: d.cooperative_matrices(),
    }
}

/// SPIR-V's vec_type_hint has no signedness: where the source names an
/// unsigned type for a kernel (`vec_type_hint(uchar4)`), that is the hint
/// CL_KERNEL_ATTRIBUTES gives.
fn unsigned_vec_type_hints(source: &str, kernels: &mut [KernelInfo]) {
    let hints = vec_type_hints_in(source);
    for k in kernels {
        if let (Some(have), Some(named)) = (&k.vec_type_hint, hints.get(&k.name))
            && named.strip_prefix('u') == Some(have.as_str())
        {
            k.vec_type_hint = Some(named.clone());
        }
    }
}

/// Kernel name → the type its `vec_type_hint` attribute names, as written:
/// the attribute, then the first identifier followed by `(` that is not an
/// attribute.
fn vec_type_hints_in(source: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut rest = source;
    while let Some(at) = rest.find("vec_type_hint") {
        rest = &rest[at + "vec_type_hint".len()..];
        let Some(open) = rest.trim_start().strip_prefix('(') else {
            continue;
        };
        let Some(close) = open.find(')') else {
            break;
        };
        let ty = open[..close].trim().to_string();
        // The function name: an identifier directly followed by '('.
        let mut tail = &open[close..];
        let name = loop {
            let Some(start) = tail.find(|c: char| ident(c)) else {
                break None;
            };
            let word_len = tail[start..]
                .find(|c: char| !ident(c))
                .unwrap_or(tail.len() - start);
            let word = &tail[start..start + word_len];
            tail = &tail[start + word_len..];
            if tail.trim_start().starts_with('(')
                && !matches!(word, "__attribute__" | "__attribute" | "vec_type_hint")
                && !word.starts_with("reqd_")
                && !word.ends_with("_hint")
            {
                break Some(word.to_string());
            }
            if tail.trim_start().starts_with('{') || tail.trim_start().starts_with(';') {
                break None;
            }
        };
        if let Some(name) = name {
            out.insert(name, ty);
        }
        rest = tail;
    }
    out
}

/// A program binary: magic, format version, binary type, whether argument
/// names are kept, build options, the SPIR-V, and a checksum.
const BINARY_MAGIC: &[u8; 8] = b"VKCLBIN\0";
const BINARY_VERSION: u32 = 1;

pub fn encode_binary(b: &Build) -> Vec<u8> {
    let spirv = match b.code() {
        Ok(Some(spirv)) => spirv,
        Ok(None) => return Vec::new(),
        Err(e) => {
            log::warn!(target: "vkcl::program", "a compiled object has no binary: {e}");
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    out.extend_from_slice(BINARY_MAGIC);
    out.extend_from_slice(&BINARY_VERSION.to_le_bytes());
    out.extend_from_slice(&b.binary_type.to_le_bytes());
    out.extend_from_slice(&(b.arg_info as u32).to_le_bytes());
    out.extend_from_slice(&(b.options.len() as u32).to_le_bytes());
    out.extend_from_slice(b.options.as_bytes());
    out.extend_from_slice(&(spirv.len() as u32).to_le_bytes());
    for w in spirv.iter() {
        out.extend_from_slice(&w.to_le_bytes());
    }
    let sum = fnv1a(&out, 0xcbf2_9ce4_8422_2325);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The parts of a vkcl program binary (type, whether argument names are
/// kept, build options, SPIR-V words) when its container is whole and its
/// checksum right; what they hold is not checked.
pub fn binary_parts(data: &[u8]) -> Option<(u32, bool, String, Vec<u32>)> {
    let body = data.get(..data.len().checked_sub(8)?)?;
    let sum = u64::from_le_bytes(data[body.len()..].try_into().ok()?);
    if !body.starts_with(BINARY_MAGIC) || fnv1a(body, 0xcbf2_9ce4_8422_2325) != sum {
        return None;
    }
    let mut at = BINARY_MAGIC.len();
    let mut word = || -> Option<u32> {
        let v = u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        Some(v)
    };
    if word()? != BINARY_VERSION {
        return None;
    }
    let binary_type = word()?;
    let arg_info = word()? != 0;
    let opt_len = word()? as usize;
    let options = String::from_utf8(body.get(at..at.checked_add(opt_len)?)?.to_vec()).ok()?;
    at += opt_len;
    let n = u32::from_le_bytes(body.get(at..at.checked_add(4)?)?.try_into().ok()?) as usize;
    at += 4;
    let bytes = body.get(at..at.checked_add(n.checked_mul(4)?)?)?;
    if at + n * 4 != body.len() {
        return None;
    }
    let spirv: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    Some((binary_type, arg_info, options, spirv))
}

/// Reads a vkcl program binary; anything else is `None`.
pub fn decode_binary(data: &[u8]) -> Option<Build> {
    let (binary_type, arg_info, options, spirv) = binary_parts(data)?;
    if ![
        CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT,
        CL_PROGRAM_BINARY_TYPE_LIBRARY,
        CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
    ]
    .contains(&binary_type)
    {
        return None;
    }
    // A binary whose checksum is right may still carry a module vkcl
    // never wrote (made by hand, or by another version): it is checked as
    // IL is.
    if let Err(e) = link::validate(&spirv) {
        log::warn!(target: "vkcl::program", "a program binary's SPIR-V does not validate: {e}");
        return None;
    }
    let module = reflect::load(&spirv).ok()?;
    let kernels = reflect::kernels(&module).ok()?;
    Some(Build {
        status: CL_BUILD_NONE,
        options,
        log: String::new(),
        binary_type,
        spirv: Some(Arc::new(spirv)),
        object: None,
        kernels,
        arg_info,
    })
}

impl Program {
    /// clSetProgramSpecializationConstant: checks the SpecId and size
    /// against the IL and keeps the value for the next build.
    pub fn set_spec_constant(&self, spec_id: u32, value: &[u8]) -> ClResult<()> {
        let Origin::Il(bytes) = &self.origin else {
            return err(CL_INVALID_PROGRAM);
        };
        let words = frontend::words_of(bytes).ok_or(ClError(CL_INVALID_PROGRAM))?;
        let sizes = crate::compiler::spirv::input::specialize::spec_ids(&words)
            .map_err(|_| ClError(CL_INVALID_PROGRAM))?;
        match sizes.get(&spec_id) {
            None => err(CL_INVALID_SPEC_ID),
            Some(&size) if size != value.len() => err(CL_INVALID_VALUE),
            Some(_) => {
                self.spec_values
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(spec_id, value.to_vec());
                Ok(())
            }
        }
    }

    pub fn new(
        context: Arc<Handle<Context>>,
        devices: Vec<Arc<Handle<Device>>>,
        origin: Origin,
        builds: Vec<Build>,
    ) -> Arc<Handle<Program>> {
        let builds = if builds.is_empty() {
            vec![Build::default(); devices.len()]
        } else {
            builds
        };
        Handle::new(Program {
            context,
            devices,
            origin,
            builds: Mutex::new(builds),
            kernels_attached: AtomicUsize::new(0),
            spec_values: Mutex::new(HashMap::new()),
            segments: Mutex::new(HashMap::new()),
            rewrites: Mutex::new(HashMap::new()),
            forms: Mutex::new(HashMap::new()),
        })
    }

    pub fn builds(&self) -> MutexGuard<'_, Vec<Build>> {
        self.builds.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The index of a device among the program's devices.
    pub fn device_index(&self, d: &Device) -> Option<usize> {
        self.devices
            .iter()
            .position(|x| std::ptr::eq::<Device>(&***x, d))
    }

    /// The build of one device.
    pub fn build_of(&self, i: usize) -> Build {
        self.builds()[i].clone()
    }

    /// Kernels of the first device with an executable.
    pub fn executable_kernels(&self) -> Option<Vec<KernelInfo>> {
        self.builds()
            .iter()
            .find(|b| {
                b.status == CL_BUILD_SUCCESS && b.binary_type == CL_PROGRAM_BINARY_TYPE_EXECUTABLE
            })
            .map(|b| b.kernels.clone())
    }

    /// The kernels applications see: the executable's, less the block
    /// kernels that kernels enqueue on the device.
    pub fn application_kernels(&self) -> Option<Vec<KernelInfo>> {
        self.executable_kernels()
            .map(|k| k.into_iter().filter(|k| !k.block).collect())
    }

    /// Starts a build or compile on `targets`: checks that none is in
    /// progress and marks them so.
    pub fn begin(&self, targets: &[usize]) -> ClResult<()> {
        let mut builds = self.builds();
        if targets
            .iter()
            .any(|&i| builds[i].status == CL_BUILD_IN_PROGRESS)
        {
            return err(CL_INVALID_OPERATION);
        }
        for &i in targets {
            builds[i].status = CL_BUILD_IN_PROGRESS;
        }
        Ok(())
    }

    fn finish(&self, targets: &[usize], build: Build) {
        let mut builds = self.builds();
        let mut segments = self.segments.lock().unwrap_or_else(|e| e.into_inner());
        let mut rewrites = self.rewrites.lock().unwrap_or_else(|e| e.into_inner());
        for &i in targets {
            builds[i] = build.clone();
            segments.remove(&i);
        }
        rewrites.retain(|(i, ..), _| !targets.contains(i));
        // Kernel objects made before keep the forms they have.
        self.forms.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The Vulkan forms of the kernel `name`, shared by the kernel objects
    /// made from this build.
    pub fn compiled_forms(&self, name: &str) -> Arc<Mutex<CompiledForms>> {
        let mut forms = self.forms.lock().unwrap_or_else(|e| e.into_inner());
        forms.entry(name.to_string()).or_default().clone()
    }

    /// `kernel` of the build at device index `i` rewritten for Vulkan with
    /// image arguments of `classes`, for NDRanges of one work-item or of
    /// any size, made once.
    pub fn rewritten(
        &self,
        i: usize,
        kernel: &KernelInfo,
        classes: &[ImageClass],
        form: rewriter::Form,
    ) -> Result<Arc<Rewritten>, String> {
        let key = (i, kernel.name.clone(), classes.to_vec(), form);
        if let Some(r) = self.rewrites().get(&key) {
            return Ok(r.clone());
        }
        let build = self.build_of(i);
        let spirv = build
            .spirv
            .ok_or("the program has no executable for this device")?;
        let r = rewrite_kernel(
            &self.devices[i],
            &spirv,
            ModuleId::of(&spirv),
            &build.options,
            kernel,
            classes,
            form,
        )?;
        self.rewrites().insert(key, r.clone());
        Ok(r)
    }

    fn rewrites(&self) -> MutexGuard<'_, HashMap<RewriteKey, Arc<Rewritten>>> {
        self.rewrites.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rewrites every kernel of an executable for each device at `targets`
    /// (image arguments as floats, the classes a kernel starts with) and
    /// keeps the results; the first kernel that cannot run fails with a
    /// log naming it and the construct.
    fn rewrite_all(&self, targets: &[usize], build: &Build) -> Result<Rewrites, String> {
        let Some(spirv) = &build.spirv else {
            return Ok(Vec::new());
        };
        if build.binary_type != CL_PROGRAM_BINARY_TYPE_EXECUTABLE {
            return Ok(Vec::new());
        }
        let id = ModuleId::of(spirv);
        // Rewrites made before (a program built again) are taken here;
        // threads are started only for the rewriting left to do.
        let mut found: Vec<Made> = Vec::new();
        let mut left = Vec::new();
        let jobs = targets
            .iter()
            .flat_map(|&i| build.kernels.iter().map(move |k| (i, k)));
        for (i, kernel) in jobs {
            let classes = float_classes(kernel);
            match made_before(
                &self.devices[i],
                spirv,
                id,
                &build.options,
                kernel,
                &classes,
            ) {
                Some(r) => found.push((
                    (i, kernel.name.clone(), classes, rewriter::Form::default()),
                    Ok(r),
                )),
                None => left.push((i, kernel, classes)),
            }
        }
        let next = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(left.len());
        let results: Vec<Vec<Made>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let n = next.fetch_add(1, Ordering::Relaxed);
                            let Some((i, kernel, classes)) = left.get(n) else {
                                return done;
                            };
                            let form = rewriter::Form::default();
                            let r = rewrite_kernel(
                                &self.devices[*i],
                                spirv,
                                id,
                                &build.options,
                                kernel,
                                classes,
                                form,
                            );
                            done.push(((*i, kernel.name.clone(), classes.clone(), form), r));
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let mut failures = Vec::new();
        let mut rewrites = Vec::new();
        for (key, r) in found.into_iter().chain(results.into_iter().flatten()) {
            match r {
                Ok(r) => rewrites.push((key, r)),
                Err(e) => failures.push(format!(
                    "kernel {} cannot run on {}: {e}",
                    key.1,
                    self.devices[key.0].name()
                )),
            }
        }
        if failures.is_empty() {
            Ok(rewrites)
        } else {
            failures.sort();
            failures.dedup();
            Err(failures.join("\n"))
        }
    }

    /// The program's module data segment on the device at index `i` (see
    /// the module_data pass), initialised from `spirv` on first use.
    pub fn data_segment(
        &self,
        i: usize,
        vk: &Arc<LogicalDevice>,
        spirv: &[u32],
    ) -> Result<Arc<DeviceBuffer>, String> {
        let mut segments = self.segments.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = segments.get(&i) {
            return Ok(s.clone());
        }
        let data = module_data::program_data(spirv)?;
        let segment = new_segment(vk, &data, None)?;
        segments.insert(i, segment.clone());
        Ok(segment)
    }

    /// clBuildProgram (`purpose` Build) or clCompileProgram (Compile) for
    /// the devices at `targets`, already marked in progress. Returns the
    /// status code the call reports.
    pub fn run_build(
        &self,
        targets: &[usize],
        options_text: &str,
        purpose: Purpose,
        headers: &[(String, Vec<u8>)],
    ) -> cl_int {
        log::debug!(target: "vkcl::program", "{purpose:?} with options {options_text:?}");
        let result = self.compute_build(targets, options_text, purpose, headers);
        let (build, code) = match result {
            Ok(b) => (b, CL_SUCCESS),
            Err((b, code)) => (b, code),
        };
        self.finish_checked(targets, build, code, CL_BUILD_PROGRAM_FAILURE)
    }

    /// Ends a build with `build` (status `code`): an executable's kernels
    /// are rewritten first, and one that cannot run fails the build with
    /// `failure` and a log saying why.
    fn finish_checked(
        &self,
        targets: &[usize],
        mut build: Build,
        code: cl_int,
        failure: cl_int,
    ) -> cl_int {
        if code != CL_SUCCESS {
            self.finish(targets, build);
            return code;
        }
        match self.rewrite_all(targets, &build) {
            Ok(rewrites) => {
                self.finish(targets, build);
                self.rewrites().extend(rewrites);
                CL_SUCCESS
            }
            Err(why) => {
                if !build.log.is_empty() && !build.log.ends_with('\n') {
                    build.log.push('\n');
                }
                build.log.push_str(&why);
                build.log.push('\n');
                log::debug!(target: "vkcl::program", "{why}");
                self.finish(
                    targets,
                    Build {
                        status: CL_BUILD_ERROR,
                        binary_type: CL_PROGRAM_BINARY_TYPE_NONE,
                        spirv: None,
                        object: None,
                        kernels: Vec::new(),
                        ..build
                    },
                );
                failure
            }
        }
    }

    fn compute_build(
        &self,
        targets: &[usize],
        options_text: &str,
        purpose: Purpose,
        headers: &[(String, Vec<u8>)],
    ) -> Result<Build, (Build, cl_int)> {
        let failure_code = if purpose == Purpose::Compile {
            CL_COMPILE_PROGRAM_FAILURE
        } else {
            CL_BUILD_PROGRAM_FAILURE
        };
        let failed = |log: String, code: cl_int| {
            (
                Build {
                    status: CL_BUILD_ERROR,
                    options: options_text.to_string(),
                    log,
                    ..Default::default()
                },
                code,
            )
        };
        let options = Options::parse(options_text, purpose)
            .map_err(|e| failed(format!("invalid options: {options_text}"), e.0))?;
        let binary_type = if purpose == Purpose::Compile {
            CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT
        } else {
            CL_PROGRAM_BINARY_TYPE_EXECUTABLE
        };
        let mut object = None;
        let (spirv, log) = match &self.origin {
            Origin::Source(src) => {
                let fe = frontend::front_end().ok_or_else(|| {
                    failed(
                        "no OpenCL C compiler is available".into(),
                        CL_COMPILER_NOT_AVAILABLE,
                    )
                })?;
                let macros = device_macros(&self.devices[targets[0]]);
                match fe.compile(src, headers, &options, &macros) {
                    Ok(c) => {
                        object = c.object;
                        (c.spirv, c.log)
                    }
                    Err(e) => return Err(failed(e.log, failure_code)),
                }
            }
            Origin::Il(bytes) => {
                let words = frontend::words_of(bytes)
                    .ok_or_else(|| failed("invalid SPIR-V".into(), failure_code))?;
                let values = self
                    .spec_values
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                let words = crate::compiler::spirv::input::specialize::apply(&words, &values)
                    .map_err(|e| failed(e, failure_code))?;
                (words, String::new())
            }
            Origin::Binary | Origin::Linked => {
                let current = self.build_of(targets[0]);
                let Some(spirv) = current.spirv.clone() else {
                    return Err(failed(
                        "no program binary for this device".into(),
                        CL_INVALID_BINARY,
                    ));
                };
                if purpose == Purpose::Compile {
                    return Err(failed(
                        "a program made from a binary has no source to compile".into(),
                        CL_INVALID_OPERATION,
                    ));
                }
                if current.binary_type == CL_PROGRAM_BINARY_TYPE_EXECUTABLE {
                    return Ok(Build {
                        status: CL_BUILD_SUCCESS,
                        ..current
                    });
                }
                match link::link(&[spirv.to_vec()], false) {
                    Ok(w) => (w, String::new()),
                    Err(log) => return Err(failed(log, failure_code)),
                }
            }
        };
        if let Some(object) = object {
            // Kept as LLVM IR until it is linked: kernels are known, and
            // checked, in the linked program.
            return Ok(Build {
                status: CL_BUILD_SUCCESS,
                options: options_text.to_string(),
                log,
                binary_type,
                spirv: None,
                object: Some(object),
                kernels: Vec::new(),
                arg_info: options.kernel_arg_info,
            });
        }
        let mut kernels = memo::kernels(&spirv, ModuleId::of(&spirv), |w| {
            reflect::kernels(&reflect::load(w)?)
        })
        .map_err(|e| failed(e, failure_code))?;
        if let Origin::Source(src) = &self.origin {
            unsigned_vec_type_hints(src, &mut kernels);
        }
        // IL may ask for what a device lacks: it is made elsewhere, without
        // this device's macros (binaries are checked when they are loaded).
        for &t in targets
            .iter()
            .filter(|_| matches!(self.origin, Origin::Il(_)))
        {
            let unmet = self.devices[t].unmet_needs(&spirv);
            if !unmet.is_empty() {
                return Err(failed(
                    format!(
                        "the program needs {}, which {} lacks",
                        unmet.join(", "),
                        self.devices[t].name()
                    ),
                    failure_code,
                ));
            }
        }
        // A required sub-group size must be one every device offers.
        for k in &kernels {
            for &t in targets {
                if let Some(why) = unoffered_sub_group_size(&self.devices[t], k) {
                    return Err(failed(format!("kernel {}: {why}", k.name), failure_code));
                }
            }
        }
        Ok(Build {
            status: CL_BUILD_SUCCESS,
            options: options_text.to_string(),
            log,
            binary_type,
            spirv: Some(Arc::new(spirv)),
            object: None,
            kernels,
            arg_info: options.kernel_arg_info,
        })
    }

    /// clLinkProgram: links the compiled objects and libraries of `inputs`
    /// for the devices of `self` (a new, empty program), once for each set
    /// of input builds (devices built together share theirs); a device for
    /// which the inputs hold nothing gets no executable.
    pub fn run_link(&self, inputs: &[Arc<Handle<Program>>], options_text: &str) -> cl_int {
        log::debug!(target: "vkcl::program", "link of {} programs with options {options_text:?}", inputs.len());
        type Group = (Vec<usize>, Vec<Build>);
        let mut groups: Vec<Group> = Vec::new();
        let mut code = CL_SUCCESS;
        for (j, device) in self.devices.iter().enumerate() {
            let builds: Option<Vec<Build>> =
                inputs.iter().map(|p| linkable_build(p, device)).collect();
            let Some(builds) = builds else {
                self.finish(&[j], Build::default());
                continue;
            };
            match groups.iter_mut().find(|(_, b)| same_code(b, &builds)) {
                Some((targets, _)) => targets.push(j),
                None => groups.push((vec![j], builds)),
            }
        }
        for (targets, builds) in groups {
            let c = self.link_builds(&targets, &builds, options_text);
            if code == CL_SUCCESS {
                code = c;
            }
        }
        code
    }

    /// Links `builds` (one per input program) for the devices at
    /// `targets`; the status code the call reports.
    fn link_builds(&self, all: &[usize], builds: &[Build], options_text: &str) -> cl_int {
        let failed = |log: String| Build {
            status: CL_BUILD_ERROR,
            options: options_text.to_string(),
            log,
            ..Default::default()
        };
        let options = match Options::parse(options_text, Purpose::Link) {
            Ok(o) => o,
            Err(e) => {
                self.finish(all, failed(format!("invalid link options: {options_text}")));
                return e.0;
            }
        };
        // An executable of one object kept as LLVM IR is optimised whole,
        // with only its kernels visible; otherwise the inputs' SPIR-V is
        // linked.
        let alone = match builds {
            [b] if !options.create_library => b.object.as_ref().and_then(|o| {
                o.executable()
                    .inspect_err(|e| log::debug!(target: "vkcl::program", "the object alone did not build: {e}"))
                    .ok()
            }),
            _ => None,
        };
        let linked = match alone {
            Some(words) => Ok(words),
            None => {
                // Objects kept as LLVM IR are optimised side by side (each
                // keeps its result); inputs that hold SPIR-V need no work.
                let pending: Vec<&Build> = builds.iter().filter(|b| b.spirv.is_none()).collect();
                if pending.len() > 1 {
                    std::thread::scope(|s| {
                        let made: Vec<_> = pending
                            .into_iter()
                            .map(|b| s.spawn(move || b.code().map(drop)))
                            .collect();
                        // A thread's failure shows again below, on this one.
                        for m in made {
                            let _ = m.join();
                        }
                    });
                }
                builds
                    .iter()
                    .map(|b| b.code().map(|c| c.expect("checked above").to_vec()))
                    .collect::<Result<Vec<_>, String>>()
                    .and_then(|modules| link::link(&modules, options.create_library))
            }
        }
        .and_then(|w| {
            let module = reflect::load(&w)?;
            Ok((reflect::kernels(&module)?, w))
        });
        match linked {
            Ok((kernels, spirv)) => {
                let arg_info = builds.iter().all(|b| b.arg_info);
                self.finish_checked(
                    all,
                    Build {
                        status: CL_BUILD_SUCCESS,
                        options: options_text.to_string(),
                        log: String::new(),
                        binary_type: if options.create_library {
                            CL_PROGRAM_BINARY_TYPE_LIBRARY
                        } else {
                            CL_PROGRAM_BINARY_TYPE_EXECUTABLE
                        },
                        spirv: Some(Arc::new(spirv)),
                        object: None,
                        kernels,
                        arg_info,
                    },
                    CL_SUCCESS,
                    CL_LINK_PROGRAM_FAILURE,
                )
            }
            Err(log) => {
                log::debug!(target: "vkcl::program", "link failed: {log}");
                self.finish(all, failed(log));
                CL_LINK_PROGRAM_FAILURE
            }
        }
    }
}

/// The build of `program` for `device` that a link may take: a compiled
/// object or library with code (built, compiled or loaded from a binary).
pub fn linkable_build(program: &Program, device: &Device) -> Option<Build> {
    let b = program.build_of(program.device_index(device)?);
    let linkable = b.status != CL_BUILD_ERROR
        && b.has_code()
        && [
            CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT,
            CL_PROGRAM_BINARY_TYPE_LIBRARY,
        ]
        .contains(&b.binary_type);
    linkable.then_some(b)
}

/// Whether two lists of builds hold the same code, input by input (the
/// builds of devices that were built together).
fn same_code(a: &[Build], b: &[Build]) -> bool {
    fn same<T>(x: &Option<Arc<T>>, y: &Option<Arc<T>>) -> bool {
        match (x, y) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y),
            (None, None) => true,
            _ => false,
        }
    }
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            same(&x.spirv, &y.spirv) && same(&x.object, &y.object) && x.options == y.options
        })
}

/// Image arguments read as floats, the classes a kernel starts with.
fn float_classes(kernel: &KernelInfo) -> Vec<ImageClass> {
    let images = kernel
        .args
        .iter()
        .filter(|a| a.kind == ArgKind::Image)
        .count();
    vec![ImageClass::Float; images]
}

/// `kernel` of `spirv` (whose id is `id`), built with `options`,
/// rewritten for `device`: made now or taken from this process's memo.
/// Why `device` cannot run `kernel`'s required sub-group size, if it
/// cannot.
fn unoffered_sub_group_size(device: &Device, kernel: &KernelInfo) -> Option<String> {
    let size = kernel.reqd_sub_group_size?;
    let offered = device.required_subgroup_sizes();
    (!offered.contains(&size)).then(|| {
        format!(
            "{} cannot run sub-groups of {size} work-items (intel_reqd_sub_group_size); it offers {offered:?}",
            device.name()
        )
    })
}

/// The most private memory a work-item may have: drivers compile kernels
/// with more (a fuzzed array of 2^64 rows) into pipelines that crash them.
const PRIVATE_LIMIT: u64 = 512 * 1024;

fn rewrite_kernel(
    device: &Device,
    spirv: &[u32],
    id: ModuleId,
    options: &str,
    kernel: &KernelInfo,
    classes: &[ImageClass],
    form: rewriter::Form,
) -> Result<Arc<Rewritten>, String> {
    may_run(device, kernel)?;
    let rewritten = memo::rewrite(
        spirv,
        id,
        kernel,
        &crate::core::kernel::device_caps(device),
        rewriter::Options {
            single_work_item: form.single_work_item,
            flat_work_groups: form.flat,
            ..rewriter::Options::from_build_options(options)
        },
        classes,
    )?;
    fits_local_memory(device, &rewritten)?;
    Ok(rewritten)
}

/// The rewrite [`rewrite_kernel`] would give (for all work-items), if it
/// was made before in this process and the kernel can run.
fn made_before(
    device: &Device,
    spirv: &[u32],
    id: ModuleId,
    options: &str,
    kernel: &KernelInfo,
    classes: &[ImageClass],
) -> Option<Arc<Rewritten>> {
    may_run(device, kernel).ok()?;
    let options = rewriter::Options::from_build_options(options);
    let caps = crate::core::kernel::device_caps(device);
    let rewritten = memo::find(spirv, id, kernel, &caps, &options, classes)?;
    fits_local_memory(device, &rewritten).ok()?;
    Some(rewritten)
}

/// Why `kernel` cannot run on `device` whatever its rewrite, if it cannot.
fn may_run(device: &Device, kernel: &KernelInfo) -> Result<(), String> {
    // Vulkan refuses a pipeline whose workgroup memory exceeds the
    // device's shared memory, where OpenCL's limit for `__local` data is
    // the same number (CL_DEVICE_LOCAL_MEM_SIZE).
    let limit = device.local_mem_size();
    if kernel.local_bytes > limit {
        return Err(format!(
            "its __local variables take {} bytes, more than the device's {limit} (CL_DEVICE_LOCAL_MEM_SIZE)",
            kernel.local_bytes
        ));
    }
    // Checked by builds from source and IL already; linked programs are
    // checked here.
    if let Some(why) = unoffered_sub_group_size(device, kernel) {
        return Err(why);
    }
    if kernel.private_bytes > PRIVATE_LIMIT {
        return Err(format!(
            "its private variables take {} bytes per work-item, more than the {PRIVATE_LIMIT} vkcl allows one (CUDA's limit of local memory per thread)",
            kernel.private_bytes
        ));
    }
    Ok(())
}

/// Whether the rewrite's work-group memory fits the device's.
fn fits_local_memory(device: &Device, rewritten: &Rewritten) -> Result<(), String> {
    let limit = device.local_mem_size();
    // The rewriter's own Workgroup data (the collectives' scratch) shares
    // the same memory as the kernel's `__local` variables.
    if rewritten.workgroup_bytes > limit {
        return Err(format!(
            "its __local variables and the work-group memory its work-group functions need take {} bytes, more than the device's {limit} (CL_DEVICE_LOCAL_MEM_SIZE)",
            rewritten.workgroup_bytes
        ));
    }
    Ok(())
}

/// Checks application IL: a SPIR-V module (1.0 to 1.6) that validates.
pub fn check_il(bytes: &[u8]) -> ClResult<()> {
    let words = frontend::words_of(bytes).ok_or(ClError(CL_INVALID_VALUE))?;
    let (major, minor) = link::version(&words);
    if major != 1 || minor > 6 {
        return err(CL_INVALID_VALUE);
    }
    if let Err(msg) = link::validate(&words) {
        log::warn!(target: "vkcl::program", "rejected SPIR-V: {msg}");
        return err(CL_INVALID_VALUE);
    }
    Ok(())
}

/// Whether the front end can build from source on this system.
pub fn compiler_available() -> bool {
    frontend::front_end().is_some()
}

/// Whether programs can be linked on this system.
pub fn linker_available() -> bool {
    compiler_available() && link::linker_available()
}

impl Program {
    /// The number of kernel objects attached, for CL_INVALID_OPERATION checks.
    pub fn has_kernels(&self) -> bool {
        self.kernels_attached.load(Ordering::Acquire) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_type_hints_are_read_from_the_source() {
        let src = "__kernel __attribute__((vec_type_hint(uchar2))) void a(global int *p) {}\n\
                   __attribute__((vec_type_hint(ushort4), work_group_size_hint(1, 1, 1)))\n\
                   kernel void b(global int *p) {}\n\
                   kernel void __attribute__((vec_type_hint(int))) c(int x) {}\n\
                   kernel void d(int x) {}\n";
        let h = vec_type_hints_in(src);
        assert_eq!(h.get("a").map(String::as_str), Some("uchar2"));
        assert_eq!(h.get("b").map(String::as_str), Some("ushort4"));
        assert_eq!(h.get("c").map(String::as_str), Some("int"));
        assert_eq!(h.get("d"), None);
    }
}
