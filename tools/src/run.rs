//! `vkcl run`: one kernel, arguments from the command line.

use std::ffi::c_void;
use std::path::PathBuf;

use opencl_sys::*;

use crate::cl::{Session, query};

#[derive(clap::Args)]
#[command(after_help = "\
Argument specs (--arg, one per kernel argument, in order):
  buf:TYPE:COUNT[:FILL]   a buffer of COUNT elements of TYPE (char, uchar,
                          short, ushort, int, uint, long, ulong, float,
                          double), FILL = zero (default), iota or random
  TYPE:VALUE              a scalar, e.g. int:5 or float:1.5
  local:BYTES             a __local buffer of BYTES bytes

Example: vkcl run add.cl add --global 1024 --arg buf:float:1024:iota \\
         --arg buf:float:1024:random --arg buf:float:1024 --print 4")]
pub struct Args {
    /// The program: OpenCL C source, SPIR-V IL (.spv) or a vkcl program
    /// binary (from `vkcl compile --emit binary`).
    file: PathBuf,
    /// The kernel to run.
    kernel: String,
    /// Global size, 1 to 3 comma-separated values.
    #[arg(long, value_delimiter = ',', required = true)]
    global: Vec<usize>,
    /// Local size (default: the implementation's choice).
    #[arg(long, value_delimiter = ',')]
    local: Option<Vec<usize>>,
    #[arg(long = "arg", value_name = "SPEC")]
    args: Vec<String>,
    /// Prints the first N elements of each buffer afterwards.
    #[arg(long, value_name = "N", default_value_t = 0)]
    print: usize,
    /// Runs the kernel this many times and reports min and mean.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    #[arg(long, default_value = "")]
    options: String,
    /// Prints the build log, also of a build that succeeded (with
    /// NVIDIA's OpenCL and `--options=-cl-nv-verbose`: registers and
    /// memory per kernel).
    #[arg(long)]
    build_log: bool,
    /// Platform (a part of its name) and device index.
    #[arg(long)]
    platform: Option<String>,
    #[arg(long, default_value_t = 0)]
    device: usize,
}

#[derive(Clone, Copy)]
enum Elem {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl Elem {
    fn parse(s: &str) -> Option<Elem> {
        Some(match s {
            "char" => Elem::I8,
            "uchar" => Elem::U8,
            "short" => Elem::I16,
            "ushort" => Elem::U16,
            "int" => Elem::I32,
            "uint" => Elem::U32,
            "long" => Elem::I64,
            "ulong" => Elem::U64,
            "float" => Elem::F32,
            "double" => Elem::F64,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Elem::I8 | Elem::U8 => 1,
            Elem::I16 | Elem::U16 => 2,
            Elem::I32 | Elem::U32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 => 8,
        }
    }

    /// The bytes of `v` as this type (integers wrap).
    fn encode(self, v: f64) -> Vec<u8> {
        match self {
            Elem::I8 => (v as i64 as i8).to_le_bytes().to_vec(),
            Elem::U8 => (v as i64 as u8).to_le_bytes().to_vec(),
            Elem::I16 => (v as i64 as i16).to_le_bytes().to_vec(),
            Elem::U16 => (v as i64 as u16).to_le_bytes().to_vec(),
            Elem::I32 => (v as i64 as i32).to_le_bytes().to_vec(),
            Elem::U32 => (v as i64 as u32).to_le_bytes().to_vec(),
            Elem::I64 => (v as i64).to_le_bytes().to_vec(),
            Elem::U64 => (v as u64).to_le_bytes().to_vec(),
            Elem::F32 => (v as f32).to_le_bytes().to_vec(),
            Elem::F64 => v.to_le_bytes().to_vec(),
        }
    }

    fn decode(self, b: &[u8]) -> String {
        macro_rules! get {
            ($t:ty) => {
                <$t>::from_le_bytes(b.try_into().expect("element size")).to_string()
            };
        }
        match self {
            Elem::I8 => get!(i8),
            Elem::U8 => get!(u8),
            Elem::I16 => get!(i16),
            Elem::U16 => get!(u16),
            Elem::I32 => get!(i32),
            Elem::U32 => get!(u32),
            Elem::I64 => get!(i64),
            Elem::U64 => get!(u64),
            Elem::F32 => get!(f32),
            Elem::F64 => get!(f64),
        }
    }
}

enum Arg {
    Buffer { elem: Elem, data: Vec<u8> },
    Scalar(Vec<u8>),
    Local(usize),
}

/// Parses one --arg spec.
fn parse_arg(spec: &str) -> Result<Arg, String> {
    let bad = |why: &str| format!("bad argument spec {spec:?}: {why} (see vkcl run --help)");
    let parts: Vec<&str> = spec.split(':').collect();
    match parts.as_slice() {
        ["buf", ty, count, rest @ ..] => {
            let elem = Elem::parse(ty).ok_or_else(|| bad("unknown element type"))?;
            let count: usize = count
                .parse()
                .map_err(|_| bad("the count is not a number"))?;
            let fill = match rest {
                [] => "zero",
                [f] => f,
                _ => return Err(bad("too many fields")),
            };
            let mut seed = 0x2545_F491_4F6C_DD1Du64;
            let mut data = Vec::with_capacity(count * elem.size());
            for i in 0..count {
                let v = match fill {
                    "zero" => 0.0,
                    "iota" => i as f64,
                    "random" => {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        match elem {
                            Elem::F32 | Elem::F64 => (seed >> 11) as f64 / (1u64 << 53) as f64,
                            _ => (seed % 256) as f64,
                        }
                    }
                    _ => return Err(bad("the fill is not zero, iota or random")),
                };
                data.extend(elem.encode(v));
            }
            Ok(Arg::Buffer { elem, data })
        }
        ["local", bytes] => Ok(Arg::Local(
            bytes.parse().map_err(|_| bad("the size is not a number"))?,
        )),
        [ty, value] => {
            let elem = Elem::parse(ty).ok_or_else(|| bad("unknown type"))?;
            let v: f64 = value
                .parse()
                .map_err(|_| bad("the value is not a number"))?;
            Ok(Arg::Scalar(elem.encode(v)))
        }
        _ => Err(bad(
            "expected buf:TYPE:COUNT[:FILL], TYPE:VALUE or local:BYTES",
        )),
    }
}

pub fn run(a: Args) -> Result<(), String> {
    if a.global.is_empty() || a.global.len() > 3 {
        return Err("--global takes 1 to 3 sizes".into());
    }
    if let Some(l) = &a.local {
        if l.len() != a.global.len() {
            return Err("--local needs as many sizes as --global".into());
        }
    }
    let file =
        std::fs::read(&a.file).map_err(|e| format!("cannot read {}: {e}", a.file.display()))?;
    let args: Vec<Arg> = a
        .args
        .iter()
        .map(|s| parse_arg(s))
        .collect::<Result<_, _>>()?;
    let s = Session::open(a.platform.as_deref(), a.device)?;
    let program = s.program(&file, &a.options)?;
    if a.build_log {
        eprintln!("build log:\n{}", s.build_log(program).trim_end());
    }
    let k = s.kernel(program, &a.kernel)?;
    let count = query(|size, v, r| unsafe {
        (s.api.clGetKernelInfo.unwrap())(k, CL_KERNEL_NUM_ARGS, size, v, r)
    })
    .map_err(|e| format!("clGetKernelInfo failed with error {e}"))?;
    let count = u32::from_ne_bytes(count[..4].try_into().expect("a cl_uint")) as usize;
    if count != args.len() {
        return Err(format!(
            "kernel {} takes {count} argument(s); {} given",
            a.kernel,
            args.len()
        ));
    }
    let mut buffers = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let i = i as u32;
        match arg {
            Arg::Buffer { elem, data } => {
                let b = s.buffer(data.len(), Some(data))?;
                s.set_arg(
                    k,
                    i,
                    std::mem::size_of::<cl_mem>(),
                    (&b as *const cl_mem).cast(),
                )?;
                buffers.push((i, b, *elem, data.len()));
            }
            Arg::Scalar(bytes) => s.set_arg(k, i, bytes.len(), bytes.as_ptr().cast())?,
            Arg::Local(n) => s.set_arg(k, i, *n, std::ptr::null::<c_void>())?,
        }
    }
    println!("{} on {} ({})", a.kernel, s.device_name, s.platform_name);
    let mut times = Vec::new();
    for _ in 0..a.repeat.max(1) {
        times.push(s.launch(k, &a.global, a.local.as_deref())?);
    }
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "kernel time: min {:.3} ms, mean {:.3} ms over {} run(s)",
        min * 1e3,
        mean * 1e3,
        times.len()
    );
    if a.print > 0 {
        for (i, b, elem, len) in &buffers {
            let bytes = s.read(*b, *len)?;
            let shown: Vec<String> = bytes
                .chunks(elem.size())
                .take(a.print)
                .map(|c| elem.decode(c))
                .collect();
            println!("arg {i}: {}", shown.join(" "));
        }
    }
    for (_, b, _, _) in buffers {
        unsafe { (s.api.clReleaseMemObject.unwrap())(b) };
    }
    unsafe {
        (s.api.clReleaseKernel.unwrap())(k);
        (s.api.clReleaseProgram.unwrap())(program);
    }
    Ok(())
}
