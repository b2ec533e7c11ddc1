//! SPIR-V handling: reading OpenCL modules, and the rewrite of one kernel
//! of an OpenCL (Kernel, Physical64) module into a Vulkan compute module.
//!
//! The rewrite is a sequence of passes, one file each, run in the order
//! `rewrite_module` gives. Each phase of passes has its folder, named in
//! order (`p1_kernel` to `p5_vulkan`), whose `mod.rs` lists its passes by
//! number and says what holds once they ran; each pass file starts with
//! its contract. `common` holds the helpers all passes share, `input` what
//! reads OpenCL SPIR-V outside the rewrite. docs/ARCHITECTURE.md describes
//! the whole. What a pass cannot handle yet fails the rewrite with a
//! message naming the construct; the caller reports it, never a panic.

pub mod common;
pub mod input;
pub mod p1_kernel;
pub mod p2_builtins;
pub mod p3_interface;
pub mod p4_addressing;
pub mod p5_vulkan;

use rspirv::binary::Assemble;

use crate::compiler::spirv::common::ctx::Ctx;
use crate::compiler::spirv::input::reflect::{self, KernelInfo};
use crate::compiler::spirv::p1_kernel::{
    async_copy, clock, enqueue, inline, matrix, memcopy, pipes, printf, select,
};
use crate::compiler::spirv::p2_builtins::{convert, extinst, vectors};
use crate::compiler::spirv::p3_interface::interface::{self, PushLayout};
use crate::compiler::spirv::p3_interface::{builtins, groups, module_data, relocate};
use crate::compiler::spirv::p4_addressing::{addressing, slots, structure};
use crate::compiler::spirv::p5_vulkan::finish::{self, DeviceCaps};
use crate::compiler::spirv::p5_vulkan::{images, sync, unroll};

/// A kernel ready for Vulkan.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rewritten {
    pub words: Vec<u32>,
    pub push: PushLayout,
    /// The kernel's printf call sites, by the index their records carry.
    pub printf: Vec<printf::PrintfCall>,
    /// Scratch memory for relocated private and local data.
    pub scratch: relocate::Scratch,
    /// The kernel's module data segment, when it uses program-scope
    /// variables or module-scope constant data.
    pub data: Option<module_data::ModuleData>,
    /// The descriptors of the kernel's images and samplers.
    pub images: images::ImageInterface,
    /// A launch of one work-item needs a form of its own (rewritten with
    /// `Options::single_work_item`), whose loops are repeated further.
    pub single_work_item_form: bool,
    /// It runs as 1-D Vulkan work-groups of the OpenCL work-group's linear
    /// size (it uses sub-groups, or `Options::flat_work_groups`).
    pub flat: bool,
    /// The bytes of its Workgroup variables: the kernel's `__local`
    /// variables and the rewriter's own (collectives' scratch).
    pub workgroup_bytes: u64,
    /// The block kernels it may enqueue on the device, by the kind its
    /// launch records carry (see the enqueue pass); `None` for a kernel
    /// that does not enqueue.
    pub enqueues: Option<enqueue::Enqueues>,
}

/// Choices for the rewrite: those of the program's build options, and
/// how the kernel is launched.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// `-cl-fast-relaxed-math` or `-cl-unsafe-math-optimizations`: the
    /// transcendental functions may use Vulkan's native forms, as the
    /// specification's relaxed precision allows.
    pub relaxed_math: bool,
    /// `-cl-mad-enable` (or the relaxed options): multiplies and adds may
    /// be fused; otherwise every float operation rounds on its own.
    pub contract: bool,
    /// `-cl-denorms-are-zero`: single-precision denormals may be flushed.
    pub denorms_are_zero: bool,
    /// The kernel runs as one work-item (an NDRange of one): on devices
    /// whose loops are bounded, its loops are repeated further (see the
    /// unroll pass).
    pub single_work_item: bool,
    /// Work-groups run as 1-D Vulkan work-groups of their linear size
    /// (see `builtins::flatten_workgroup`), so that a work-group may be as
    /// long in any dimension as the device's largest work-group, past
    /// Vulkan's per-dimension limits (kernels enqueued on the device), and
    /// so that CPU devices fill their vectors with narrow work-groups.
    pub flat_work_groups: bool,
}

/// How a kernel is launched, where that gives it a rewrite of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Form {
    /// An NDRange of one work-item ([`Options::single_work_item`]).
    pub single_work_item: bool,
    /// Work-groups run as 1-D Vulkan work-groups
    /// ([`Options::flat_work_groups`]).
    pub flat: bool,
}

impl Options {
    /// The options that matter to the rewrite, from build options.
    pub fn from_build_options(options: &str) -> Options {
        let has = |names: &[&str]| options.split_whitespace().any(|o| names.contains(&o));
        let relaxed_math = has(&["-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations"]);
        Options {
            relaxed_math,
            contract: relaxed_math || has(&["-cl-mad-enable"]),
            denorms_are_zero: has(&["-cl-denorms-are-zero"]),
            single_work_item: false,
            flat_work_groups: false,
        }
    }
}

/// Rewrites `kernel` of an OpenCL SPIR-V module for a Vulkan device.
pub fn rewrite(words: &[u32], kernel: &KernelInfo, caps: &DeviceCaps) -> Result<Rewritten, String> {
    rewrite_with(words, kernel, caps, Options::default())
}

/// [`rewrite`] with the choices of the program's build options.
pub fn rewrite_with(
    words: &[u32],
    kernel: &KernelInfo,
    caps: &DeviceCaps,
    options: Options,
) -> Result<Rewritten, String> {
    rewrite_for_images(words, kernel, caps, options, &[])
}

/// [`rewrite_with`] for a kernel whose image arguments read as `classes`
/// (in argument order; missing ones as floats).
pub fn rewrite_for_images(
    words: &[u32],
    kernel: &KernelInfo,
    caps: &DeviceCaps,
    options: Options,
    classes: &[images::ImageClass],
) -> Result<Rewritten, String> {
    let module = reflect::load(words)?;
    let packed = reflect::packed_structs(&module);
    reflect::with_packed_structs(packed, || {
        rewrite_module(module, kernel, caps, options, classes)
    })
}

fn rewrite_module(
    module: rspirv::dr::Module,
    kernel: &KernelInfo,
    caps: &DeviceCaps,
    options: Options,
    classes: &[images::ImageClass],
) -> Result<Rewritten, String> {
    let started = std::time::Instant::now();
    let mut last = started;
    // Each pass's time, for VKCL_LOG=trace.
    let mut lap = |pass: &str| {
        let now = std::time::Instant::now();
        log::trace!(target: "vkcl::compiler", "{}: {pass} {:?}", kernel.name, now - last);
        last = now;
    };
    // Laid out on the whole program, so that every kernel agrees.
    let program = module_data::program_layout(&module)?;
    let invoked = enqueue::invoke_names(&module);
    let mut ctx = Ctx::new(module);
    let fid = select::run(&mut ctx, &kernel.name)?;
    clock::run(&mut ctx, caps)?;
    matrix::run(&mut ctx, caps)?;
    pipes::run(&mut ctx, caps)?;
    let enqueues = enqueue::run(&mut ctx, fid, caps, &invoked)?;
    inline::run(&mut ctx, fid)?;
    memcopy::run(&mut ctx)?;
    async_copy::run(&mut ctx)?;
    let printf = printf::run(&mut ctx)?;
    lap("select, inline, copies, printf");
    // Built-ins first: vloadn/vstoren become pointer arithmetic (lowered
    // by the addressing pass), and math on 8/16-component vectors is then
    // split by the vectors pass like any other operation.
    extinst::run(&mut ctx, fid, options, caps)?;
    convert::run(&mut ctx)?;
    lap("built-ins");
    vectors::run(&mut ctx)?;
    lap("vectors");
    let with_data = module_data::uses_module_data(&ctx.module);
    let (push, block) = interface::run(
        &mut ctx,
        fid,
        &kernel.args,
        caps.max_push_constants,
        with_data,
    )?;
    let data = module_data::run(&mut ctx, fid, &block, &program)?;
    let scratch = relocate::run(&mut ctx, fid, &block)?;
    lap("relocate");
    // Work-group collectives need sub-group arithmetic and the device's
    // sub-group width.
    let levels =
        (caps.subgroup_size > 0 && caps.subgroup_ops & 0x4 != 0).then_some(groups::Levels {
            subgroup_size: caps.subgroup_size,
            max_work_group_size: caps.max_work_group_size,
        });
    let shuffles = caps.subgroup_ops & 0x10 != 0;
    let clustered = caps.subgroup_ops & 0x40 != 0;
    let mut flat = groups::run(&mut ctx, &block, levels, shuffles, clustered)?;
    if options.flat_work_groups && !flat {
        builtins::flatten_workgroup(&mut ctx);
        flat = true;
    }
    builtins::run(&mut ctx, &block, flat)?;
    lap("interface");
    addressing::run(&mut ctx)?;
    lap("addressing");
    structure::run(&mut ctx)?;
    slots::run(&mut ctx)?;
    lap("structure");
    let images = images::run(&mut ctx, fid, &block, classes)?;
    sync::run(&mut ctx, caps)?;
    finish::run(&mut ctx, fid, caps)?;
    let workgroup_bytes = reflect::workgroup_bytes(&ctx.module);
    lap("finish");
    let mut words = ctx.module.assemble();
    let mut single_work_item_form = false;
    if caps.bounded_loops {
        single_work_item_form = unroll::run(&mut ctx, options.single_work_item);
        let unrolled = ctx.module.assemble();
        lap("unroll");
        match crate::compiler::link::validate_vulkan(&unrolled) {
            Ok(()) => words = unrolled,
            // The loops stay as they were: what repeating them broke is
            // a gap in the unroll pass, not a reason to fail the kernel.
            Err(e) => {
                log::debug!(target: "vkcl::compiler", "{}: loops not unrolled: {e}", kernel.name);
                validate_or_dump(&words, &kernel.name)?;
            }
        }
    } else {
        validate_or_dump(&words, &kernel.name)?;
    }
    lap("spirv-val");
    log::debug!(target: "vkcl::compiler", "{} rewritten in {:?} ({} words)", kernel.name, started.elapsed(), words.len());
    Ok(Rewritten {
        words,
        push,
        printf,
        scratch,
        data,
        images,
        single_work_item_form,
        flat,
        workgroup_bytes,
        enqueues,
    })
}

/// Validates a rewritten kernel; one that does not validate is written to
/// `VKCL_DUMP_DIR` (as `<kernel>.invalid.spv`) where that is set, for
/// debugging the rewriter.
fn validate_or_dump(words: &[u32], kernel: &str) -> Result<(), String> {
    let result = crate::compiler::link::validate_vulkan(words);
    if result.is_err() {
        crate::compiler::dump(&format!("{kernel}.invalid.spv"), || {
            crate::compiler::link::to_bytes(words)
        });
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::frontend;

    /// Kernels whose rewrites iterate the passes' maps and sets (the
    /// structure pass on loops with breaks, continues and returns).
    const KERNELS: &str = include_str!("../../../tests/kernels/control_flow.cl");

    /// Asserts that no object of the first kernel of `source`, rewritten
    /// for a device with `caps` (and 128 bytes of push constants), moves
    /// to scratch memory. Skipped without a front end.
    fn stays_in_place(source: &str, caps: DeviceCaps) {
        let Some(words) = frontend::build_for_test(source, false) else {
            return;
        };
        let module = reflect::load(&words).unwrap();
        let kernel = &reflect::kernels(&module).unwrap()[0];
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..caps
        };
        let rewritten = rewrite(&words, kernel, &caps).unwrap();
        assert_eq!(rewritten.scratch, relocate::Scratch::default());
    }

    /// Rows of two-dimensional private and local arrays walked through
    /// pointers to their first elements stay where they are: no object
    /// moves to scratch memory.
    #[test]
    fn rows_of_arrays_stay_in_place() {
        let source = include_str!("../../../tests/kernels/rows_of_arrays.cl");
        stays_in_place(source, DeviceCaps::default());
    }

    /// Stores to different fields of one element of a local array of
    /// structs, at the ends of two arms (OpenMM's nonbonded kernel), are
    /// not merged into a store through a phi of field pointers: the array
    /// stays in local memory.
    #[test]
    fn fields_stored_in_two_arms_stay_local() {
        let source = include_str!("../../../tests/kernels/local_fields.cl");
        stays_in_place(source, DeviceCaps::default());
    }

    /// A local and a private array of float3, whose elements clang would
    /// load and store as four components through a cast pointer, stay
    /// where they are.
    #[test]
    fn arrays_of_three_component_vectors_stay_in_place() {
        let source = include_str!("../../../tests/kernels/vec3_arrays.cl");
        stays_in_place(source, DeviceCaps::default());
    }

    #[test]
    fn private_struct_seen_as_bytes_stays_private() {
        let source = include_str!("../../../tests/kernels/private_words.cl");
        let caps = DeviceCaps {
            int8: true,
            int16: true,
            storage8: true,
            storage16: true,
            ..Default::default()
        };
        stays_in_place(source, caps);
    }

    /// On a device whose double fma rounds twice (lavapipe), fma on
    /// doubles is worked out on the bits in one function that every use
    /// calls: the kernel's own (scalar and vector) and the many of
    /// libclc's double tgamma, which float tgamma is computed with. Each
    /// use inlined, `tgamma` of a float4 came to 1.1 million words.
    #[test]
    fn soft_double_fmas_share_one_function() {
        let source = "
            #pragma OPENCL EXTENSION cl_khr_fp64 : enable
            __kernel void k(__global double2 *d, __global float4 *f) {
                d[0].x = fma(d[1].x, d[2].x, d[3].x);
                d[4] = fma(d[5], d[6], d[7]);
                f[0] = tgamma(f[1]);
            }";
        let Some(words) = frontend::build_for_test_with(source, false, "", &["cl_khr_fp64"]) else {
            return;
        };
        let module = reflect::load(&words).unwrap();
        let kernel = &reflect::kernels(&module).unwrap()[0];
        let caps = DeviceCaps {
            max_push_constants: 128,
            float64: true,
            double_fma_rounds_twice: true,
            ..Default::default()
        };
        let rewritten = rewrite(&words, kernel, &caps).unwrap();
        let out = rspirv::dr::load_words(&rewritten.words).unwrap();
        assert_eq!(out.functions.len(), 2, "the kernel and the fma");
        let fma = out.functions[1].def.as_ref().unwrap().result_id;
        let calls = out.functions[0]
            .all_inst_iter()
            .filter(|i| i.class.opcode == rspirv::spirv::Op::FunctionCall)
            .filter(|i| i.operands.first() == Some(&rspirv::dr::Operand::IdRef(fma.unwrap())))
            .count();
        // One for the scalar, two for the double2, many for tgamma's four
        // lanes.
        assert!(calls > 3 + 4 * 100, "{calls} calls");
        assert!(
            rewritten.words.len() < 200_000,
            "{} words",
            rewritten.words.len()
        );
    }

    /// The rewrite of a kernel is the same module every time: drivers'
    /// pipeline caches key on it.
    #[test]
    fn the_same_kernel_rewrites_to_the_same_module() {
        let Some(words) = frontend::build_for_test(KERNELS, false) else {
            return;
        };
        let module = reflect::load(&words).unwrap();
        // lavapipe's: the unroll pass runs.
        let caps = DeviceCaps {
            max_push_constants: 128,
            bounded_loops: true,
            ..Default::default()
        };
        // Each on a thread of its own: a thread's first hash map takes new
        // random keys, as a new process's does.
        let words = &words;
        let on_a_new_thread = |kernel| {
            std::thread::scope(|s| {
                s.spawn(|| rewrite(words, kernel, &caps).unwrap().words)
                    .join()
                    .unwrap()
            })
        };
        for kernel in &reflect::kernels(&module).unwrap() {
            let first = on_a_new_thread(kernel);
            for _ in 0..3 {
                assert!(on_a_new_thread(kernel) == first, "{}", kernel.name);
            }
        }
    }
}
