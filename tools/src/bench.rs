//! `vkcl bench`: clpeak-style figures through the public OpenCL API, so the
//! same command measures vkcl and any other platform side by side.

use std::ffi::c_void;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use opencl_sys::*;

use crate::cl::{Session, check, text};

#[derive(clap::Args)]
pub struct Args {
    /// The platform: a part of its name, case-insensitive (default: the
    /// first one the ICD loader lists).
    #[arg(long)]
    platform: Option<String>,
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Also writes the figures as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Small sizes and few repetitions: seconds, even on CPU devices.
    #[arg(long)]
    quick: bool,
}

/// The benchmark's kernels, with a register-blocked SGEMM (`sgemm_8x8`:
/// 128×128 blocks of C per work-group, 8×8 per work-item).
const KERNELS: &str = concat!(
    include_str!("../../tests/kernels/register_blocks.cl"),
    r#"
#define FETCH 16
#define SUM1(v) (v)
#define SUM2(v) ((v).s0 + (v).s1)
#define SUM4(v) ((v).s0 + (v).s1 + (v).s2 + (v).s3)
#define SUM8(v) (SUM4((v).lo) + SUM4((v).hi))
#define SUM16(v) (SUM8((v).lo) + SUM8((v).hi))
#define READ(T, N) \
__kernel void read_##T(__global const T *in, __global float *out) { \
    size_t i = get_global_id(0), n = get_global_size(0); \
    T acc = (T)0; \
    for (int k = 0; k < FETCH; k++) acc += in[i + k * n]; \
    out[i] = SUM##N(acc); \
}
READ(float, 1) READ(float2, 2) READ(float4, 4) READ(float8, 8) READ(float16, 16)

#define MAD16(x, y) x = mad(y, x, y); y = mad(x, y, x); x = mad(y, x, y); y = mad(x, y, x); \
    x = mad(y, x, y); y = mad(x, y, x); x = mad(y, x, y); y = mad(x, y, x); \
    x = mad(y, x, y); y = mad(x, y, x); x = mad(y, x, y); y = mad(x, y, x); \
    x = mad(y, x, y); y = mad(x, y, x); x = mad(y, x, y); y = mad(x, y, x);
#define IMAD16(x, y) x = y * x + y; y = x * y + x; x = y * x + y; y = x * y + x; \
    x = y * x + y; y = x * y + x; x = y * x + y; y = x * y + x; \
    x = y * x + y; y = x * y + x; x = y * x + y; y = x * y + x; \
    x = y * x + y; y = x * y + x; x = y * x + y; y = x * y + x;
#define COMPUTE(NAME, T, S, STEP, N) \
__kernel void NAME(__global S *out, S seed) { \
    T x = (T)(seed + (S)get_local_id(0)), y = (T)seed; \
    for (int k = 0; k < 64; k++) { STEP(x, y) STEP(x, y) STEP(x, y) STEP(x, y) } \
    out[get_global_id(0)] = SUM##N(y); \
}
COMPUTE(sp_float, float, float, MAD16, 1) COMPUTE(sp_float4, float4, float, MAD16, 4)
COMPUTE(sp_float16, float16, float, MAD16, 16)
COMPUTE(int_int, int, int, IMAD16, 1) COMPUTE(int_int4, int4, int, IMAD16, 4)
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
COMPUTE(dp_double, double, double, MAD16, 1) COMPUTE(dp_double4, double4, double, MAD16, 4)
#endif
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
COMPUTE(hp_half, half, float, MAD16, 1) COMPUTE(hp_half2, half2, float, MAD16, 2)
COMPUTE(hp_half4, half4, float, MAD16, 4)
#endif

__kernel void empty(void) {}

__kernel void triad(__global float *a, __global const float *b, __global const float *c, float s) {
    size_t i = get_global_id(0);
    a[i] = b[i] + s * c[i];
}

__kernel void resident(__global uint *out, __local uint *s, uint words, uint iters) {
    uint lid = get_local_id(0), n = get_local_size(0);
    for (uint i = lid; i < words; i += n) s[i] = i * 2654435761u;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = lid;
    for (uint i = 0; i < iters; i++) x = s[(x ^ i) % words] + i;
    out[get_global_id(0)] = x;
}

#define TILE 16
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void matmul(__global const float *A, __global const float *B, __global float *C, int n) {
    __local float a[TILE][TILE], b[TILE][TILE];
    int col = get_global_id(0), row = get_global_id(1);
    int lx = get_local_id(0), ly = get_local_id(1);
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        a[ly][lx] = A[row * n + t + lx];
        b[ly][lx] = B[(t + ly) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++) acc += a[ly][k] * b[k][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * n + col] = acc;
}
"#
);

/// One measured figure.
struct Figure {
    group: &'static str,
    name: String,
    value: f64,
    unit: &'static str,
}

struct Bench<'a> {
    s: &'a Session,
    program: cl_program,
    figures: Vec<Figure>,
    reps: usize,
}

impl Bench<'_> {
    fn progress(&self, what: &str) {
        if std::io::stderr().is_terminal() {
            eprint!("\r\x1b[2K  measuring {what} ...");
            let _ = std::io::stderr().flush();
        }
    }

    fn add(
        &mut self,
        group: &'static str,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) {
        self.figures.push(Figure {
            group,
            name: name.into(),
            value,
            unit,
        });
    }

    /// The best time of `reps` runs of `kernel` (after one warm-up).
    fn best(
        &self,
        kernel: &str,
        args: &[(usize, *const c_void)],
        global: &[usize],
        local: Option<&[usize]>,
    ) -> Result<f64, String> {
        self.best_in(self.program, kernel, args, global, local)
    }

    /// [`Bench::best`] for a kernel of another program.
    fn best_in(
        &self,
        program: cl_program,
        kernel: &str,
        args: &[(usize, *const c_void)],
        global: &[usize],
        local: Option<&[usize]>,
    ) -> Result<f64, String> {
        let k = self.s.kernel(program, kernel)?;
        set_args(self.s, k, args)?;
        self.s.launch(k, global, local)?;
        let mut best = f64::INFINITY;
        for _ in 0..self.reps {
            best = best.min(self.s.launch(k, global, local)?);
        }
        unsafe { (self.s.api.clReleaseKernel.unwrap())(k) };
        Ok(best.max(1e-9))
    }
}

/// Times `n` host-to-device copies and `n` kernels alone, together on one
/// queue, and on two queues (the best of the bench's repetitions each):
/// with queues that run side by side, the last is near the longer of the
/// first two rather than their sum.
fn overlap(b: &mut Bench<'_>, s: &Session, quick: bool) -> Result<(), String> {
    let n = if quick { 4 } else { 16 };
    let bytes: usize = if quick { 1 << 20 } else { 32 << 20 };
    let items: usize = if quick { 4096 } else { 1 << 25 };
    let (q1, q2) = (s.new_queue()?, s.new_queue()?);
    let host = vec![1u8; bytes];
    let dst = s.buffer(bytes, None)?;
    let out = s.buffer(items * 4, None)?;
    let k = s.kernel(b.program, "sp_float")?;
    let (o, seed) = (arg(&out), arg(&1.3f32));
    s.set_arg(k, 0, o.0, o.1)?;
    s.set_arg(k, 1, seed.0, seed.1)?;
    let copies = |q: cl_command_queue| -> Result<(), String> {
        for _ in 0..n {
            check("clEnqueueWriteBuffer", unsafe {
                (s.api.clEnqueueWriteBuffer.unwrap())(
                    q,
                    dst,
                    CL_FALSE,
                    0,
                    bytes,
                    host.as_ptr().cast(),
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            })?;
        }
        Ok(())
    };
    let kernels = |q: cl_command_queue| -> Result<(), String> {
        for _ in 0..n {
            check("clEnqueueNDRangeKernel", unsafe {
                (s.api.clEnqueueNDRangeKernel.unwrap())(
                    q,
                    k,
                    1,
                    std::ptr::null(),
                    &items,
                    &64usize,
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            })?;
        }
        Ok(())
    };
    // 0: copies alone, 1: kernels alone, 2: both on one queue, 3: both on
    // two queues.
    let once = |shape: usize| -> Result<f64, String> {
        let t0 = Instant::now();
        if shape != 1 {
            copies(q1)?;
        }
        match shape {
            1 | 2 => kernels(q1)?,
            3 => kernels(q2)?,
            _ => {}
        }
        for q in [q1, q2] {
            check("clFlush", unsafe { (s.api.clFlush.unwrap())(q) })?;
        }
        for q in [q1, q2] {
            check("clFinish", unsafe { (s.api.clFinish.unwrap())(q) })?;
        }
        Ok(t0.elapsed().as_secs_f64())
    };
    let mut best = [f64::INFINITY; 4];
    for round in 0..=b.reps {
        for (shape, t) in best.iter_mut().enumerate() {
            let took = once(shape)?;
            if round > 0 {
                *t = t.min(took);
            }
        }
    }
    unsafe {
        (s.api.clReleaseKernel.unwrap())(k);
        (s.api.clReleaseMemObject.unwrap())(dst);
        (s.api.clReleaseMemObject.unwrap())(out);
        (s.api.clReleaseCommandQueue.unwrap())(q1);
        (s.api.clReleaseCommandQueue.unwrap())(q2);
    }
    let names = [
        format!("{n} copies of {} MiB", bytes >> 20),
        format!("{n} kernels"),
        "both, one queue".to_string(),
        "both, two queues".to_string(),
    ];
    for (name, t) in names.into_iter().zip(best) {
        b.add("Queue overlap", name, t * 1e3, "ms");
    }
    Ok(())
}

/// cl_khr_command_buffer: `n` one-item kernels enqueued one by one, then
/// recorded once into a command buffer and enqueued as one, each to its
/// completion (the best of the bench's repetitions, after a warm-up).
/// The extension function `name` of the session's platform as `F`, an
/// `Option` of its function pointer type (never `None` on success).
///
/// # Safety
/// `F` must be the function's type.
unsafe fn extension<F: Copy>(s: &Session, name: &std::ffi::CStr) -> Result<F, String> {
    // SAFETY: a NUL-terminated name and the session's platform.
    let f = unsafe {
        (s.api.clGetExtensionFunctionAddressForPlatform.unwrap())(s.platform, name.as_ptr())
    };
    if f.is_null() {
        return Err(format!("{} is missing", name.to_string_lossy()));
    }
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: a non-null function address read as the caller's function
    // pointer type, which has its size.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&f) })
}

fn replay(b: &mut Bench<'_>, s: &Session, quick: bool) -> Result<(), String> {
    let n = if quick { 4 } else { 32 };
    // SAFETY (each): the named extension function has the type the
    // Khronos headers give it.
    let (create, record, finalize, enqueue, release) = unsafe {
        (
            extension::<clCreateCommandBufferKHR_t>(s, c"clCreateCommandBufferKHR")?,
            extension::<clCommandNDRangeKernelKHR_t>(s, c"clCommandNDRangeKernelKHR")?,
            extension::<clFinalizeCommandBufferKHR_t>(s, c"clFinalizeCommandBufferKHR")?,
            extension::<clEnqueueCommandBufferKHR_t>(s, c"clEnqueueCommandBufferKHR")?,
            extension::<clReleaseCommandBufferKHR_t>(s, c"clReleaseCommandBufferKHR")?,
        )
    };
    let (create, record, finalize, enqueue, release) = (
        create.unwrap(),
        record.unwrap(),
        finalize.unwrap(),
        enqueue.unwrap(),
        release.unwrap(),
    );
    let q = s.new_queue()?;
    let k = s.kernel(b.program, "empty")?;
    let mut err = 0;
    let cb = unsafe { create(1, &q, std::ptr::null(), &mut err) };
    check("clCreateCommandBufferKHR", err)?;
    for _ in 0..n {
        check("clCommandNDRangeKernelKHR", unsafe {
            record(
                cb,
                std::ptr::null_mut(),
                std::ptr::null(),
                k,
                1,
                std::ptr::null(),
                &1usize,
                std::ptr::null(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        })?;
    }
    check("clFinalizeCommandBufferKHR", unsafe { finalize(cb) })?;
    let one_by_one = || -> Result<(), String> {
        for _ in 0..n {
            enqueue_kernel(s, q, k, 1)?;
        }
        check("clFinish", unsafe { (s.api.clFinish.unwrap())(q) })
    };
    let replayed = || -> Result<(), String> {
        check("clEnqueueCommandBufferKHR", unsafe {
            enqueue(
                0,
                std::ptr::null_mut(),
                cb,
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        })?;
        check("clFinish", unsafe { (s.api.clFinish.unwrap())(q) })
    };
    let mut best = [f64::INFINITY; 2];
    for round in 0..=b.reps.max(10) {
        for (i, f) in [&one_by_one as &dyn Fn() -> Result<(), String>, &replayed]
            .iter()
            .enumerate()
        {
            let t0 = Instant::now();
            f()?;
            if round > 0 {
                best[i] = best[i].min(t0.elapsed().as_secs_f64());
            }
        }
    }
    unsafe {
        release(cb);
        (s.api.clReleaseKernel.unwrap())(k);
        (s.api.clReleaseCommandQueue.unwrap())(q);
    }
    b.add(
        "Command buffer",
        format!("{n} kernels, enqueued"),
        best[0] * 1e6,
        "us",
    );
    b.add(
        "Command buffer",
        format!("{n} kernels, one replay"),
        best[1] * 1e6,
        "us",
    );
    Ok(())
}

/// A binary tree of kernels, each of [`TREE_WIDTH`] work-items: launched
/// from the device (each kernel's first work-item enqueues its two
/// children) and the same kernels enqueued from the host level by level.
const TREE: &str = r#"
#define WIDTH 256
void node(__global uint *out, uint level, uint depth) {
    atomic_add(&out[level], 1u);
    if (get_global_id(0) == 0 && level + 1 < depth) {
        queue_t q = get_default_queue();
        for (int c = 0; c < 2; c++) {
            enqueue_kernel(q, CLK_ENQUEUE_FLAGS_NO_WAIT, ndrange_1D(WIDTH),
                           ^{ node(out, level + 1, depth); });
        }
    }
}
__kernel void tree(__global uint *out, uint depth) {
    node(out, 0, depth);
}
__kernel void level(__global uint *out, uint level) {
    atomic_add(&out[level], 1u);
}
"#;
const TREE_WIDTH: usize = 256;

/// Device-side enqueue against the host's: the time to run a tree of
/// 2^depth - 1 kernels either way (the best of the bench's repetitions).
fn device_enqueue(b: &mut Bench<'_>, s: &Session, quick: bool) -> Result<(), String> {
    let depth: u32 = if quick { 5 } else { 10 };
    let props = [
        CL_QUEUE_PROPERTIES as cl_queue_properties,
        CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_ON_DEVICE | CL_QUEUE_ON_DEVICE_DEFAULT,
        CL_QUEUE_SIZE as cl_queue_properties,
        s.device_u64(CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE),
        0,
    ];
    let mut err = 0;
    let device_queue = unsafe {
        (s.api.clCreateCommandQueueWithProperties.unwrap())(
            s.context,
            s.device,
            props.as_ptr(),
            &mut err,
        )
    };
    check(
        "clCreateCommandQueueWithProperties(CL_QUEUE_ON_DEVICE)",
        err,
    )?;
    let program = s.program(TREE.as_bytes(), "-cl-std=CL3.0")?;
    let tree = s.kernel(program, "tree")?;
    let level = s.kernel(program, "level")?;
    let out = s.buffer(4 * depth as usize, Some(&vec![0u8; 4 * depth as usize]))?;
    let run = || -> Result<[f64; 2], String> {
        let mut times = [0.0; 2];
        // From the device.
        let t0 = Instant::now();
        set_args(s, tree, &[arg(&out), arg(&depth)])?;
        enqueue_kernel(s, s.queue, tree, TREE_WIDTH)?;
        s.finish()?;
        times[0] = t0.elapsed().as_secs_f64();
        // From the host, level by level.
        let t0 = Instant::now();
        for l in 0..depth {
            set_args(s, level, &[arg(&out), arg(&l)])?;
            for _ in 0..1u32 << l {
                enqueue_kernel(s, s.queue, level, TREE_WIDTH)?;
            }
        }
        s.finish()?;
        times[1] = t0.elapsed().as_secs_f64();
        Ok(times)
    };
    let mut best = [f64::INFINITY; 2];
    let rounds = b.reps.max(3);
    let mut result = Ok(());
    for round in 0..=rounds {
        match run() {
            Ok(t) if round > 0 => {
                best[0] = best[0].min(t[0]);
                best[1] = best[1].min(t[1]);
            }
            Ok(_) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // Each level's kernels ran, both ways, every round.
    let counts = s.read(out, 4 * depth as usize);
    unsafe {
        (s.api.clReleaseKernel.unwrap())(tree);
        (s.api.clReleaseKernel.unwrap())(level);
        (s.api.clReleaseMemObject.unwrap())(out);
        (s.api.clReleaseProgram.unwrap())(program);
        (s.api.clReleaseCommandQueue.unwrap())(device_queue);
    }
    result?;
    let counts = counts?;
    for (l, c) in counts.chunks(4).enumerate() {
        let got = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]) as u64;
        let want = (2 * (rounds as u64 + 1) * TREE_WIDTH as u64) << l;
        if got != want {
            return Err(format!(
                "device-side enqueue: level {l} ran {got} work-items, not {want}"
            ));
        }
    }
    let kernels = (1u64 << depth) - 1;
    b.add(
        "Device-side enqueue",
        format!("{kernels} kernels, from the device"),
        best[0] * 1e6,
        "us",
    );
    b.add(
        "Device-side enqueue",
        format!("{kernels} kernels, from the host"),
        best[1] * 1e6,
        "us",
    );
    Ok(())
}

/// Enqueues `k` over `global` work-items on `queue`, without waiting.
fn enqueue_kernel(
    s: &Session,
    queue: cl_command_queue,
    k: cl_kernel,
    global: usize,
) -> Result<(), String> {
    check("clEnqueueNDRangeKernel", unsafe {
        (s.api.clEnqueueNDRangeKernel.unwrap())(
            queue,
            k,
            1,
            std::ptr::null(),
            &global,
            std::ptr::null(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    })
}

fn arg<T>(v: &T) -> (usize, *const c_void) {
    (std::mem::size_of::<T>(), (v as *const T).cast())
}

/// Sets `k`'s arguments, from the first, to `args` (see [`arg`]).
fn set_args(s: &Session, k: cl_kernel, args: &[(usize, *const c_void)]) -> Result<(), String> {
    for (i, &(size, value)) in args.iter().enumerate() {
        s.set_arg(k, i as u32, size, value)?;
    }
    Ok(())
}

pub fn run(a: Args) -> Result<(), String> {
    let s = Session::open(a.platform.as_deref(), a.device)?;
    let extensions = text(&s.device_info(CL_DEVICE_EXTENSIONS));
    let max_alloc = s.device_u64(CL_DEVICE_MAX_MEM_ALLOC_SIZE) as usize;
    let program = s.program(KERNELS.as_bytes(), "-cl-mad-enable")?;
    let mut b = Bench {
        s: &s,
        program,
        figures: Vec::new(),
        reps: if a.quick { 2 } else { 10 },
    };
    let result = measure(&mut b, &a, &extensions, max_alloc);
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
    }
    unsafe { (s.api.clReleaseProgram.unwrap())(program) };
    result?;
    println!("Platform: {}", s.platform_name);
    println!("Device:   {}", s.device_name);
    let mut group = "";
    for f in &b.figures {
        if f.group != group {
            group = f.group;
            println!("  {group}");
        }
        println!("    {:<28} {:>12.2} {}", f.name, f.value, f.unit);
    }
    if !extensions.contains("cl_khr_fp64") {
        println!("  (no cl_khr_fp64: double precision not measured)");
    }
    if !extensions.contains("cl_khr_fp16") {
        println!("  (no cl_khr_fp16: half precision not measured)");
    }
    if let Some(path) = &a.json {
        let mut j = format!(
            "{{\n  \"platform\": {:?},\n  \"device\": {:?},\n  \"quick\": {},\n  \"figures\": [\n",
            s.platform_name, s.device_name, a.quick
        );
        for (i, f) in b.figures.iter().enumerate() {
            j.push_str(&format!(
                "    {{\"group\": {:?}, \"name\": {:?}, \"value\": {}, \"unit\": {:?}}}{}\n",
                f.group,
                f.name,
                f.value,
                f.unit,
                if i + 1 < b.figures.len() { "," } else { "" }
            ));
        }
        j.push_str("  ]\n}\n");
        std::fs::write(path, j).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn measure(b: &mut Bench<'_>, a: &Args, extensions: &str, max_alloc: usize) -> Result<(), String> {
    let s = b.s;
    // Global memory bandwidth: FETCH coalesced reads per work-item.
    let bytes = if a.quick {
        16 << 20
    } else {
        (256usize << 20).min(max_alloc / 2)
    };
    let input = s.buffer(bytes, None)?;
    let floats = bytes / 4;
    for (name, width) in [
        ("float", 1usize),
        ("float2", 2),
        ("float4", 4),
        ("float8", 8),
        ("float16", 16),
    ] {
        b.progress(&format!("global memory bandwidth ({name})"));
        let items = floats / width / 16;
        let out = s.buffer(items * 4, None)?;
        let t = b.best(
            &format!("read_{name}"),
            &[arg(&input), arg(&out)],
            &[items],
            Some(&[64]),
        )?;
        b.add(
            "Global memory bandwidth",
            name,
            (items * 16 * width * 4) as f64 / t / 1e9,
            "GB/s",
        );
        unsafe { (s.api.clReleaseMemObject.unwrap())(out) };
    }
    // Compute: 64 x 4 x 16 dependent multiply-adds per lane.
    let items = if a.quick { 4096 } else { 1 << 20 };
    let out = s.buffer(items * 8 * 16, None)?;
    let per_lane = (64 * 4 * 16) as f64;
    let mut compute = vec![
        (
            "Single-precision compute",
            "sp_float",
            1usize,
            "GFLOP/s",
            2.0,
        ),
        ("Single-precision compute", "sp_float4", 4, "GFLOP/s", 2.0),
        ("Single-precision compute", "sp_float16", 16, "GFLOP/s", 2.0),
        ("Integer compute", "int_int", 1, "GIOP/s", 2.0),
        ("Integer compute", "int_int4", 4, "GIOP/s", 2.0),
    ];
    if extensions.contains("cl_khr_fp64") {
        compute.push(("Double-precision compute", "dp_double", 1, "GFLOP/s", 2.0));
        compute.push(("Double-precision compute", "dp_double4", 4, "GFLOP/s", 2.0));
    }
    if extensions.contains("cl_khr_fp16") {
        compute.push(("Half-precision compute", "hp_half", 1, "GFLOP/s", 2.0));
        compute.push(("Half-precision compute", "hp_half2", 2, "GFLOP/s", 2.0));
        compute.push(("Half-precision compute", "hp_half4", 4, "GFLOP/s", 2.0));
    }
    for (group, kernel, lanes, unit, ops) in compute {
        b.progress(kernel);
        let t = if kernel.starts_with("sp") || kernel.starts_with("hp") {
            b.best(kernel, &[arg(&out), arg(&1.3f32)], &[items], Some(&[64]))?
        } else if kernel.starts_with("dp") {
            b.best(kernel, &[arg(&out), arg(&1.3f64)], &[items], Some(&[64]))?
        } else {
            b.best(kernel, &[arg(&out), arg(&3i32)], &[items], Some(&[64]))?
        };
        let name = kernel.split('_').nth(1).unwrap_or(kernel).to_string();
        b.add(
            group,
            name,
            items as f64 * lanes as f64 * per_lane * ops / t / 1e9,
            unit,
        );
    }
    unsafe { (s.api.clReleaseMemObject.unwrap())(out) };
    // Transfers between host memory and a buffer, timed on the host.
    let host = vec![1u8; bytes];
    let mut back = vec![0u8; bytes];
    let timed = |b: &Bench<'_>, f: &mut dyn FnMut() -> Result<(), String>| -> Result<f64, String> {
        f()?;
        let mut best = f64::INFINITY;
        for _ in 0..b.reps {
            let t0 = Instant::now();
            f()?;
            best = best.min(t0.elapsed().as_secs_f64());
        }
        Ok(best.max(1e-9))
    };
    b.progress("transfer bandwidth");
    let t = timed(b, &mut || {
        check("clEnqueueWriteBuffer", unsafe {
            (s.api.clEnqueueWriteBuffer.unwrap())(
                s.queue,
                input,
                CL_TRUE,
                0,
                bytes,
                host.as_ptr().cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        })
    })?;
    b.add(
        "Transfer bandwidth",
        "enqueueWriteBuffer",
        bytes as f64 / t / 1e9,
        "GB/s",
    );
    let t = timed(b, &mut || {
        check("clEnqueueReadBuffer", unsafe {
            (s.api.clEnqueueReadBuffer.unwrap())(
                s.queue,
                input,
                CL_TRUE,
                0,
                bytes,
                back.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        })
    })?;
    b.add(
        "Transfer bandwidth",
        "enqueueReadBuffer",
        bytes as f64 / t / 1e9,
        "GB/s",
    );
    for (name, flags) in [
        ("enqueueMapBuffer (read)", CL_MAP_READ),
        ("map + unmap (write)", CL_MAP_WRITE),
    ] {
        let t = timed(b, &mut || unsafe {
            let mut err = 0;
            let p = (s.api.clEnqueueMapBuffer.unwrap())(
                s.queue,
                input,
                CL_TRUE,
                flags,
                0,
                bytes,
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
                &mut err,
            );
            check("clEnqueueMapBuffer", err)?;
            if flags == CL_MAP_WRITE {
                std::ptr::write_bytes(p.cast::<u8>(), 2, bytes);
            }
            check(
                "clEnqueueUnmapMemObject",
                (s.api.clEnqueueUnmapMemObject.unwrap())(
                    s.queue,
                    input,
                    p,
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                ),
            )?;
            s.finish()
        })?;
        b.add("Transfer bandwidth", name, bytes as f64 / t / 1e9, "GB/s");
    }
    // Latency: enqueue of an empty kernel to its completion, on the host,
    // on the profiling queue and on a plain one; with the enqueue call's
    // share.
    b.progress("kernel launch latency");
    let k = s.kernel(b.program, "empty")?;
    let launches = if a.quick { 200 } else { 1000 };
    let plain = s.new_queue()?;
    // One work-item of the empty kernel, nothing waited for.
    let launch = |queue: cl_command_queue| {
        check("clEnqueueNDRangeKernel", unsafe {
            (s.api.clEnqueueNDRangeKernel.unwrap())(
                queue,
                k,
                1,
                std::ptr::null(),
                &1usize,
                std::ptr::null(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        })
    };
    for (queue, name) in [
        (s.queue, "enqueue to completion"),
        (plain, "same, no profiling"),
    ] {
        let (mut total, mut enqueue) = (0.0, 0.0);
        for i in 0..=launches {
            let t0 = Instant::now();
            launch(queue)?;
            let t1 = t0.elapsed().as_secs_f64();
            check("clFinish", unsafe { (s.api.clFinish.unwrap())(queue) })?;
            if i > 0 {
                total += t0.elapsed().as_secs_f64();
                enqueue += t1;
            }
        }
        b.add("Latency", name, total / launches as f64 * 1e6, "us");
        if queue == plain {
            // Kernels one after another with nobody waiting, as
            // applications' time steps run: what each costs the queue,
            // the device's time between kernels included.
            let t0 = Instant::now();
            for _ in 0..launches {
                launch(queue)?;
            }
            check("clFinish", unsafe { (s.api.clFinish.unwrap())(queue) })?;
            let per = t0.elapsed().as_secs_f64() / launches as f64;
            b.add("Latency", "back to back, per kernel", per * 1e6, "us");
        }
        if queue == s.queue {
            b.add(
                "Latency",
                "of which the enqueue call",
                enqueue / launches as f64 * 1e6,
                "us",
            );
        }
    }
    unsafe {
        (s.api.clReleaseKernel.unwrap())(k);
        (s.api.clReleaseCommandQueue.unwrap())(plain);
    }
    if extensions.contains("cl_khr_command_buffer") {
        b.progress("command buffer replay");
        replay(b, s, a.quick)?;
    }
    if s.device_u64(CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES) & CL_DEVICE_QUEUE_SUPPORTED != 0 {
        b.progress("device-side enqueue");
        device_enqueue(b, s, a.quick)?;
    }
    // Queues side by side: host-to-device copies and kernels, all on one
    // queue, then the copies on one queue and the kernels on another.
    b.progress("queue overlap");
    overlap(b, s, a.quick)?;
    b.progress("local memory residency");
    residency(b, s, a.quick)?;
    // STREAM triad.
    b.progress("STREAM triad");
    let n = floats / 4;
    let (x, y, z) = (
        s.buffer(n * 4, None)?,
        s.buffer(n * 4, None)?,
        s.buffer(n * 4, None)?,
    );
    let t = b.best(
        "triad",
        &[arg(&x), arg(&y), arg(&z), arg(&3.0f32)],
        &[n],
        Some(&[64]),
    )?;
    b.add(
        "Memory",
        "STREAM triad",
        (3 * n * 4) as f64 / t / 1e9,
        "GB/s",
    );
    // Tiled matrix multiply.
    let m: usize = if a.quick { 256 } else { 1024 };
    b.progress("tiled matmul");
    let (ma, mb, mc) = (
        s.buffer(m * m * 4, None)?,
        s.buffer(m * m * 4, None)?,
        s.buffer(m * m * 4, None)?,
    );
    let t = b.best(
        "matmul",
        &[arg(&ma), arg(&mb), arg(&mc), arg(&(m as i32))],
        &[m, m],
        Some(&[16, 16]),
    )?;
    b.add(
        "Memory",
        format!("tiled matmul {m}"),
        2.0 * (m * m * m) as f64 / t / 1e9,
        "GFLOP/s",
    );
    for buf in [input, x, y, z, ma, mb, mc] {
        unsafe { (s.api.clReleaseMemObject.unwrap())(buf) };
    }
    gemm(b, a, extensions)?;
    compile(b, a)
}

/// How many work-groups holding 32 KiB of local memory each (half the
/// device's local memory where that is less than 64 KiB) run at once per
/// compute unit: a dependent chain of local loads per work-item takes the
/// same time for one work-group per compute unit as for as many as fit at
/// once, so `K` groups per compute unit take `K / resident` times as long.
/// Drivers decide how much of a compute unit's memory goes to local memory
/// (NVIDIA's Vulkan driver about 100 KiB of an H200 SM's 228 KiB, its
/// OpenCL all of it), and kernels whose work-groups are limited by their
/// local memory run that much slower or faster.
fn residency(b: &mut Bench<'_>, s: &Session, quick: bool) -> Result<(), String> {
    let local = s.device_u64(CL_DEVICE_LOCAL_MEM_SIZE) as usize;
    let bytes = (32usize << 10).min(local / 2) & !3;
    let units = (s.device_u64(CL_DEVICE_MAX_COMPUTE_UNITS) as usize).max(1);
    let width = 32;
    let (per_unit, iters) = if quick { (8, 64u32) } else { (32, 20000u32) };
    let out = s.buffer(units * per_unit * width * 4, None)?;
    let words = (bytes / 4) as u32;
    let args = [
        arg(&out),
        (bytes, std::ptr::null()),
        arg(&words),
        arg(&iters),
    ];
    let one = b.best("resident", &args, &[units * width], Some(&[width]))?;
    let many = b.best(
        "resident",
        &args,
        &[units * per_unit * width],
        Some(&[width]),
    )?;
    unsafe { (s.api.clReleaseMemObject.unwrap())(out) };
    b.add(
        "Local memory",
        format!("{} KiB groups per CU", bytes >> 10),
        per_unit as f64 * one / many,
        "at once",
    );
    Ok(())
}

/// The cooperative matrix GEMM (`examples/coop_matmul.cl`).
const COOP_MATMUL: &str = include_str!("../../examples/coop_matmul.cl");

/// GEMM of n×n matrices: the FP32 kernels (16×16 tiles; 128×128 blocks of
/// 8×8 per work-item) and their best, and, where the device offers
/// cl_vkcl_cooperative_matrix, half inputs with float accumulation on
/// cooperative matrices, with 256 of its results checked against the CPU
/// and its speed as a multiple of the best FP32 kernel's.
fn gemm(b: &mut Bench<'_>, a: &Args, extensions: &str) -> Result<(), String> {
    let s = b.s;
    let n: usize = if a.quick { 256 } else { 8192 };
    let flops = 2.0 * (n * n * n) as f64;
    b.progress("FP32 GEMM");
    // Small integers, so that no kernel meets denormals or overflows.
    let values: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let (fa, fb) = (
        s.buffer(bytes.len(), Some(&bytes))?,
        s.buffer(bytes.len(), Some(&bytes))?,
    );
    let fc = s.buffer(n * n * 4, None)?;
    let side = n as i32;
    let args = [arg(&fa), arg(&fb), arg(&fc), arg(&side)];
    let tiled = b.best("matmul", &args, &[n, n], Some(&[16, 16]))?;
    let blocked = b.best("sgemm_8x8", &args, &[n / 8, n / 8], Some(&[16, 16]))?;
    let fp32 = flops / tiled.min(blocked) / 1e9;
    b.add(
        "GEMM",
        format!("FP32 {n}, 16x16 tiles"),
        flops / tiled / 1e9,
        "GFLOP/s",
    );
    b.add(
        "GEMM",
        format!("FP32 {n}, 8x8 per item"),
        flops / blocked / 1e9,
        "GFLOP/s",
    );
    b.add("GEMM", format!("FP32 {n}, best"), fp32, "GFLOP/s");
    let listed = if extensions
        .split(' ')
        .any(|e| e == "cl_vkcl_cooperative_matrix")
    {
        s.device_info(CL_DEVICE_COOPERATIVE_MATRIX_VARIANTS_VKCL)
    } else {
        Vec::new()
    };
    // (M, N, K, A, B, C, result, saturating) as the query lists them.
    let offers = |k: u32, types: [u32; 4]| {
        listed.chunks_exact(32).any(|v| {
            let w: Vec<u32> = v
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect();
            w[..3] == [16, 16, k] && w[3..7] == types && w[7] == 0
        })
    };
    let mut coop = Vec::new();
    for (int8, k, types) in [(false, 16, [0, 0, 1, 1]), (true, 32, [3, 3, 5, 5])] {
        if offers(k, types) {
            b.progress("cooperative matrix GEMM");
            coop.push((int8, coop_gemm(b, n, &values, int8)));
        }
    }
    for buf in [fa, fb, fc] {
        unsafe { (s.api.clReleaseMemObject.unwrap())(buf) };
    }
    for (int8, t) in coop {
        let rate = flops / t? / 1e9;
        if int8 {
            b.add("GEMM", format!("int8 {n}, cooperative"), rate, "GOP/s");
        } else {
            b.add("GEMM", format!("half {n}, cooperative"), rate, "GFLOP/s");
            b.add("GEMM", "cooperative / best FP32", rate / fp32, "x");
        }
    }
    Ok(())
}

/// cl_vkcl_cooperative_matrix's device query (see `docs/cooperative-matrix.md`).
const CL_DEVICE_COOPERATIVE_MATRIX_VARIANTS_VKCL: cl_device_info = 0x10F00;

/// The best time of the cooperative matrix GEMM on n×n half (or, with
/// `int8`, signed byte) matrices holding `values`, after checking 256
/// entries of its product.
fn coop_gemm(b: &Bench<'_>, n: usize, values: &[f32], int8: bool) -> Result<f64, String> {
    let s = b.s;
    let options = if int8 {
        "-cl-std=CL3.0 -DINT8"
    } else {
        "-cl-std=CL3.0"
    };
    let program = s.program(COOP_MATMUL.as_bytes(), options)?;
    // Small integers are exact halves: 1.0 is 0x3C00, and so on.
    let half_of = |v: f32| -> u16 {
        match v as i32 {
            0 => 0,
            1 => 0x3C00,
            2 => 0x4000,
            -1 => 0xBC00,
            _ => 0xC000,
        }
    };
    let bytes: Vec<u8> = if int8 {
        values.iter().map(|&v| v as i8 as u8).collect()
    } else {
        values
            .iter()
            .flat_map(|&v| half_of(v).to_le_bytes())
            .collect()
    };
    let (ha, hb) = (
        s.buffer(bytes.len(), Some(&bytes))?,
        s.buffer(bytes.len(), Some(&bytes))?,
    );
    let c = s.buffer(n * n * 4, None)?;
    let result = (|| {
        // Four sub-groups (each 64 x 64 of C): the kernel's preferred
        // multiple is the sub-group width.
        let k = s.kernel(program, "coop_matmul")?;
        let mut width = 0usize;
        check("clGetKernelWorkGroupInfo", unsafe {
            (s.api.clGetKernelWorkGroupInfo.unwrap())(
                k,
                s.device,
                CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                std::mem::size_of::<usize>(),
                (&mut width as *mut usize).cast(),
                std::ptr::null_mut(),
            )
        })?;
        unsafe { (s.api.clReleaseKernel.unwrap())(k) };
        let local = 4 * width.max(1);
        let t = b.best_in(
            program,
            "coop_matmul",
            &[
                arg(&ha),
                arg(&hb),
                arg(&c),
                arg(&(n as u32)),
                arg(&(n as u32)),
            ],
            &[n / 128 * local, n / 128],
            Some(&[local, 1]),
        )?;
        let got = s.read(c, n * n * 4)?;
        for x in 0..256 {
            let (i, j) = ((x * 7919) % n, (x * 104_729) % n);
            let want: f32 = (0..n).map(|k| values[i * n + k] * values[k * n + j]).sum();
            let at = (i * n + j) * 4;
            let word: [u8; 4] = got[at..at + 4].try_into().expect("4 bytes");
            let have = if int8 {
                i32::from_le_bytes(word) as f32
            } else {
                f32::from_le_bytes(word)
            };
            if have != want {
                return Err(format!(
                    "the cooperative matrix GEMM gives {have} at ({i}, {j}), the CPU {want}"
                ));
            }
        }
        Ok(t)
    })();
    unsafe {
        for buf in [ha, hb, c] {
            (s.api.clReleaseMemObject.unwrap())(buf);
        }
        (s.api.clReleaseProgram.unwrap())(program);
    }
    result
}

/// Build and first launch of this benchmark's own program (17 kernels):
/// cold, with a kernel that differs from any earlier run's so that no
/// cache (vkcl's, the driver's) has it, and warm, the same source again.
fn compile(b: &mut Bench<'_>, a: &Args) -> Result<(), String> {
    let s = b.s;
    b.progress("compile time");
    let out = s.buffer(4, None)?;
    let once = |source: &str| -> Result<(f64, f64), String> {
        let t0 = Instant::now();
        let program = s.program(source.as_bytes(), "-cl-mad-enable")?;
        let built = t0.elapsed().as_secs_f64();
        let k = s.kernel(program, "nonce")?;
        let launched = s
            .set_arg(k, 0, std::mem::size_of::<cl_mem>(), arg(&out).1)
            .and_then(|()| s.launch(k, &[1], None));
        let total = t0.elapsed().as_secs_f64();
        unsafe {
            (s.api.clReleaseKernel.unwrap())(k);
            (s.api.clReleaseProgram.unwrap())(program);
        }
        launched?;
        Ok((built, total))
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64 & 0x7fff_ffff);
    let rounds = if a.quick { 1 } else { 3 };
    let (mut cold_build, mut cold_total, mut warm_total) =
        (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    for round in 0..rounds {
        let source = format!(
            "{KERNELS}\n__kernel void nonce(__global int *out) {{ out[0] = {}; }}\n",
            (seed + round as u64) & 0x7fff_ffff
        );
        let (built, total) = once(&source)?;
        cold_build = cold_build.min(built);
        cold_total = cold_total.min(total);
        warm_total = warm_total.min(once(&source)?.1);
    }
    unsafe { (s.api.clReleaseMemObject.unwrap())(out) };
    b.add("Compile", "build (cold)", cold_build * 1e3, "ms");
    b.add(
        "Compile",
        "build + first launch (cold)",
        cold_total * 1e3,
        "ms",
    );
    b.add(
        "Compile",
        "build + first launch (warm)",
        warm_total * 1e3,
        "ms",
    );
    Ok(())
}
