//! The vkcl tool's subcommands, run as a user would: their output, and
//! clear messages with a non-zero exit for bad input. vkcl is reached
//! through the ICD loader with an .icd file naming the freshly built
//! library, with the Khronos validation layer on and fatal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// target/<profile>, where the tool and libvkcl.so are built.
fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_vkcl"))
        .parent()
        .expect("target/<profile>")
        .to_path_buf()
}

fn icd_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let lib = build_dir().join("libvkcl.so");
        assert!(
            lib.exists(),
            "{} is missing: build the library first",
            lib.display()
        );
        let dir = build_dir().join("tool-test-icd");
        std::fs::create_dir_all(&dir).unwrap();
        let aside = dir.join(format!("vkcl.icd.{}", std::process::id()));
        std::fs::write(&aside, format!("{}\n", lib.display())).unwrap();
        std::fs::rename(&aside, dir.join("vkcl.icd")).unwrap();
        dir
    })
}

fn vkcl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vkcl"))
        .args(args)
        .env("OCL_ICD_VENDORS", icd_dir())
        .env("VKCL_VALIDATION", "abort")
        .output()
        .expect("the tool runs")
}

fn ok(args: &[&str]) -> String {
    let out = vkcl(args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "vkcl {args:?} failed: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Runs a command that must fail; returns its message.
fn fails(args: &[&str]) -> String {
    let out = vkcl(args);
    assert!(!out.status.success(), "vkcl {args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "vkcl {args:?} panicked: {err}");
    err
}

/// The folder of the tests' scratch files, made where missing.
fn files_dir() -> PathBuf {
    let dir = build_dir().join("tool-test-files");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A scratch file with `text`, unique to the test.
fn file(name: &str, text: &str) -> PathBuf {
    let p = files_dir().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const ADD: &str = "__kernel void add(__global const float *a, __global const float *b, \
                   __global float *c, float s) { size_t i = get_global_id(0); c[i] = a[i] + s * b[i]; }";

#[test]
fn info_lists_the_device_and_its_capabilities() {
    let out = ok(&["info"]);
    assert!(out.contains("Device 0:"), "{out}");
    assert!(out.contains("bufferDeviceAddress"), "{out}");
    assert!(out.contains("OpenCL C features:"), "{out}");
}

#[test]
fn compile_shows_every_stage() {
    let src = file("compile_add.cl", ADD);
    let src = src.to_str().unwrap();
    let meta = ok(&["compile", src]);
    assert!(meta.contains("kernel add"), "{meta}");
    assert!(meta.contains("float s"), "{meta}");
    assert!(ok(&["compile", src, "--emit", "kernel-spirv"]).contains("OpEntryPoint Kernel"));
    assert!(ok(&["compile", src, "--emit", "vulkan-spirv"]).contains("OpEntryPoint GLCompute"));
    let dump = build_dir().join("tool-test-files/dump");
    ok(&["compile", src, "--dump", dump.to_str().unwrap()]);
    for f in ["kernel.spv", "kernel.spvasm", "add.vulkan.spv", "build.log"] {
        assert!(dump.join(f).exists(), "{f} missing");
    }
    let out = build_dir().join("tool-test-files/add.spv");
    ok(&[
        "compile",
        src,
        "--emit",
        "vulkan-spirv",
        "-o",
        out.to_str().unwrap(),
    ]);
    let words = std::fs::read(&out).unwrap();
    assert_eq!(&words[..4], &0x0723_0203u32.to_le_bytes());
}

#[test]
fn compile_reports_errors() {
    let bad = file(
        "bad.cl",
        "__kernel void k(__global int *a) { a[0] = undeclared; }",
    );
    let err = fails(&["compile", bad.to_str().unwrap()]);
    assert!(err.contains("undeclared"), "{err}");
    assert!(fails(&["compile", "/no/such/file.cl"]).contains("cannot read"));
    let src = file("compile_kernel.cl", ADD);
    let err = fails(&["compile", src.to_str().unwrap(), "--kernel", "nope"]);
    assert!(err.contains("no kernel named"), "{err}");
    assert!(
        fails(&["compile", src.to_str().unwrap(), "--emit", "nonsense"]).contains("invalid value")
    );
}

#[test]
fn run_computes_and_prints() {
    let src = file("run_add.cl", ADD);
    let out = ok(&[
        "run",
        src.to_str().unwrap(),
        "add",
        "--global",
        "256",
        "--local",
        "64",
        "--arg",
        "buf:float:256:iota",
        "--arg",
        "buf:float:256:iota",
        "--arg",
        "buf:float:256",
        "--arg",
        "float:2",
        "--print",
        "4",
        "--repeat",
        "2",
    ]);
    assert!(out.contains("kernel time"), "{out}");
    assert!(out.contains("arg 2: 0 3 6 9"), "{out}");
}

/// An application run with VKCL_TRACE leaves a timeline that `vkcl trace`
/// sums up: its OpenCL calls on the host, and its kernel and transfers on
/// the device (the kernel, and the reads of `--print`) in batches whose
/// submission and completion the host saw.
#[test]
fn trace_records_calls_and_device_work() {
    let src = file("trace_add.cl", ADD);
    let trace = files_dir().join("trace.json");
    let _ = std::fs::remove_file(&trace);
    let out = Command::new(env!("CARGO_BIN_EXE_vkcl"))
        .args([
            "run",
            src.to_str().unwrap(),
            "add",
            "--global",
            "64",
            "--arg",
            "buf:float:64:iota",
            "--arg",
            "buf:float:64:iota",
            "--arg",
            "buf:float:64",
            "--arg",
            "float:2",
            "--repeat",
            "3",
            "--print",
            "2",
        ])
        .env("OCL_ICD_VENDORS", icd_dir())
        .env("VKCL_VALIDATION", "abort")
        .env("VKCL_TRACE", &trace)
        .output()
        .expect("the tool runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&trace).expect("the trace is written");
    assert!(
        text.trim_end().ends_with(']'),
        "the array is closed at exit"
    );
    let summary = ok(&["trace", trace.to_str().unwrap()]);
    for what in [
        "clEnqueueNDRangeKernel",
        "clBuildProgram",
        "vkQueueSubmit",
        "build the launch",
        "record",
        "end the batch",
        "complete batch",
        "device: ",
        "    add ",
        "read buffer",
        "submission to start",
    ] {
        assert!(summary.contains(what), "no {what:?} in:\n{summary}");
    }
    assert!(fails(&["trace", "/no/such/trace.json"]).contains("cannot read"));
}

/// What an application packager does: a program binary and SPIR-V IL made
/// by `vkcl compile`, each run by `vkcl run` as a program built elsewhere.
#[test]
fn binaries_and_il_from_compile_run() {
    let src = file("shipped_add.cl", ADD);
    assert!(fails(&["compile", src.to_str().unwrap(), "--emit", "binary"]).contains("-o"));
    for (emit, name) in [
        ("binary", "shipped_add.bin"),
        ("kernel-spirv", "shipped_add.spv"),
    ] {
        let out = build_dir().join("tool-test-files").join(name);
        ok(&[
            "compile",
            src.to_str().unwrap(),
            "--emit",
            emit,
            "-o",
            out.to_str().unwrap(),
        ]);
        let printed = ok(&[
            "run",
            out.to_str().unwrap(),
            "add",
            "--global",
            "64",
            "--arg",
            "buf:float:64:iota",
            "--arg",
            "buf:float:64:iota",
            "--arg",
            "buf:float:64",
            "--arg",
            "float:2",
            "--print",
            "4",
        ]);
        assert!(printed.contains("arg 2: 0 3 6 9"), "{emit}: {printed}");
    }
}

#[test]
fn run_rejects_bad_input() {
    let src = file("run_bad.cl", ADD);
    let src = src.to_str().unwrap();
    let err = fails(&["run", src, "nope", "--global", "8"]);
    assert!(err.contains("no kernel named"), "{err}");
    let err = fails(&["run", src, "add", "--global", "8", "--arg", "buf:flot:8"]);
    assert!(err.contains("bad argument spec"), "{err}");
    let err = fails(&["run", src, "add", "--global", "8", "--arg", "buf:float:8"]);
    assert!(err.contains("takes 4 argument(s)"), "{err}");
    assert!(fails(&["run", "/no/such.cl", "add", "--global", "8"]).contains("cannot read"));
    let err = fails(&["run", src, "add", "--global", "8", "--local", "4,4"]);
    assert!(err.contains("--local"), "{err}");
}

#[test]
fn icd_install_and_uninstall() {
    let dir = build_dir().join("tool-test-files/icd");
    let dir = dir.to_str().unwrap();
    let lib = build_dir().join("libvkcl.so");
    let out = ok(&[
        "icd",
        "install",
        "--dir",
        dir,
        "--library",
        lib.to_str().unwrap(),
    ]);
    assert!(out.contains("OCL_ICD_VENDORS"), "{out}");
    let written = std::fs::read_to_string(Path::new(dir).join("vkcl.icd")).unwrap();
    assert_eq!(
        written.trim(),
        lib.canonicalize().unwrap().to_str().unwrap()
    );
    ok(&["icd", "uninstall", "--dir", dir]);
    assert!(fails(&["icd", "uninstall", "--dir", dir]).contains("not installed"));
    let err = fails(&[
        "icd",
        "install",
        "--dir",
        dir,
        "--library",
        "/no/such/lib.so",
    ]);
    assert!(err.contains("cannot find"), "{err}");
}

#[test]
fn bench_quick_measures_every_figure() {
    let json = files_dir().join("bench.json");
    let out = ok(&["bench", "--quick", "--json", json.to_str().unwrap()]);
    for figure in [
        "float16",
        "Single-precision compute",
        "Integer compute",
        "enqueueReadBuffer",
        "enqueue to completion",
        "back to back, per kernel",
        "STREAM triad",
        "tiled matmul",
        "KiB groups per CU",
    ] {
        assert!(out.contains(figure), "{figure} missing: {out}");
    }
    let j = std::fs::read_to_string(&json).unwrap();
    assert!(j.contains("\"figures\""), "{j}");
    let err = fails(&["bench", "--quick", "--platform", "no-such-platform"]);
    assert!(err.contains("no OpenCL platform named"), "{err}");
}

#[test]
fn info_says_why_a_vulkan_device_is_not_offered() {
    let out = Command::new(env!("CARGO_BIN_EXE_vkcl"))
        .arg("info")
        .env("OCL_ICD_VENDORS", icd_dir())
        .env("VKCL_DEVICE", "no-such-device")
        .output()
        .expect("the tool runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("not selected by VKCL_DEVICE"), "{text}");
}
