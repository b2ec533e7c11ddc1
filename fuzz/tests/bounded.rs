//! The bounded fuzz run CI makes: every target over its seeds and
//! mutants of them (the structural mutator, unguided), a few minutes in
//! all. `VKCL_FUZZ_CASES` multiplies the number of cases, `VKCL_FUZZ_SEED`
//! picks other mutants. A case that panics anywhere in vkcl (even where
//! the API layer contains the panic), trips an assertion of the harness,
//! or runs longer than two minutes fails the run; its input is written to
//! `target/fuzz-failures/` for `cargo fuzz run <target> <file>` or a
//! regression test.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use vkcl_fuzz::mutate::{self, Rng};
use vkcl_fuzz::seeds::Seeds;
use vkcl_fuzz::targets;

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let kernels = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/kernels");
        Seeds::gather(&kernels, None)
    })
}

/// Panic messages seen anywhere in the process (vkcl's contained ones
/// included), by a hook installed once.
fn panics() -> &'static Mutex<Vec<String>> {
    static PANICS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    PANICS.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            panics()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(info.to_string());
            default(info);
        }));
        Mutex::new(Vec::new())
    })
}

fn cases(base: u64) -> u64 {
    let factor: f64 = std::env::var("VKCL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    ((base as f64) * factor).max(1.0) as u64
}

fn failure_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures")
}

/// Runs `target` on `n` mutants of `corpus`, made by `mutant`. Returns
/// the failures (their inputs are written to `target/fuzz-failures/`).
fn run(
    name: &str,
    n: u64,
    corpus: &[Vec<u8>],
    mutant: impl Fn(&[u8], &mut Rng) -> Vec<u8>,
    target: impl Fn(&[u8]) + std::panic::RefUnwindSafe,
) {
    assert!(!corpus.is_empty(), "{name}: no seeds");
    // One target at a time, so that each panic and count is its own.
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    targets::reset();
    let seed: u64 = std::env::var("VKCL_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut rng = Rng::new(seed ^ vkcl::compiler::cache::fnv1a(name.as_bytes(), 0));
    let started = Instant::now();
    // A case running for two minutes is a hang: the whole run stops.
    let case_started = std::sync::Arc::new(AtomicU64::new(u64::MAX));
    let watch = case_started.clone();
    let label = name.to_string();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_secs(5));
            let at = watch.load(Ordering::Relaxed);
            if at == u64::MAX - 1 {
                return;
            }
            if at != u64::MAX && started.elapsed().as_secs() > at + 120 {
                eprintln!("{label}: a case has run for two minutes; stopping");
                std::process::abort();
            }
        }
    });
    let mut failures = Vec::new();
    for case in 0..n {
        let base = &corpus[(case as usize) % corpus.len()];
        // The seeds themselves first, then mutants.
        let input = if (case as usize) < corpus.len() {
            base.clone()
        } else {
            let mut x = mutant(base, &mut rng);
            if rng.chance(30) {
                x = mutant(&x, &mut rng);
            }
            x
        };
        let seen = panics().lock().unwrap().len();
        case_started.store(started.elapsed().as_secs(), Ordering::Relaxed);
        let ok = std::panic::catch_unwind(|| target(&input)).is_ok();
        let now = panics().lock().unwrap().len();
        if !ok || now > seen {
            let dir = failure_dir();
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join(format!("{name}-{case}"));
            std::fs::write(&file, &input).unwrap();
            failures.push(format!(
                "{}: {}",
                file.display(),
                panics().lock().unwrap()[seen..].join(" / ")
            ));
        }
    }
    case_started.store(u64::MAX - 1, Ordering::Relaxed);
    eprintln!(
        "{name}: {n} cases in {:.1} s; {}",
        started.elapsed().as_secs_f64(),
        targets::summary()
    );
    assert!(
        failures.is_empty(),
        "{name}: {} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A mutant of a SPIR-V module: structural mostly, bytes sometimes.
fn spirv_mutant(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    if rng.chance(85)
        && let Some(m) = vkcl_fuzz::mutate_spirv(seed, rng)
    {
        return m;
    }
    let mut b = seed.to_vec();
    mutate::mutate_bytes(&mut b, rng, seed.len() + 64);
    b
}

fn byte_mutant(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = seed.to_vec();
    mutate::mutate_bytes(&mut b, rng, seed.len() + 64);
    b
}

/// OpenCL C and option words spliced into a source or options line.
const TOKENS: &[&str] = &[
    "__kernel ",
    "kernel void k(global int *p) { p[0] = 1; }\n",
    "__global ",
    "__local ",
    "__constant ",
    "__private ",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ";",
    "*",
    "&",
    "0x7fffffff",
    "-1",
    "int4",
    "double",
    "half",
    "long16",
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
    "#include \"x.h\"\n",
    "#define A(x) x##x\n",
    "get_global_id(0)",
    "barrier(CLK_LOCAL_MEM_FENCE)",
    "printf(\"%d %v4hlf %s\\n\", 1, (float4)(1), \"a\")",
    "atomic_add(p, 1)",
    "vload16(0, p)",
    "__attribute__((reqd_work_group_size(1024,1024,1)))",
    "while(1);",
    "for(;;){}",
    "goto l; l:",
    "struct __attribute__((packed)) S { char c; int i; };",
    "-cl-std=CL",
    "3.0",
    "2.0",
    "1.1",
    " -D",
    " -I",
    " -cl-",
    "\"",
    " -x spir",
    "-w -Werror",
    "-cl-kernel-arg-info",
    "-create-library",
    "\n",
];

fn token_mutant(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below(3) {
        if rng.chance(60) {
            let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
            let at = rng.below(b.len() + 1);
            b.splice(at..at, t.iter().copied());
        } else {
            mutate::mutate_bytes(&mut b, rng, seed.len() + 256);
        }
    }
    b
}

#[test]
fn rewrite() {
    panics();
    run(
        "rewrite",
        cases(300),
        &seeds().spirv,
        spirv_mutant,
        targets::rewrite,
    );
}

#[test]
fn il() {
    panics();
    run("il", cases(150), &seeds().spirv, spirv_mutant, targets::il);
}

#[test]
fn binary() {
    panics();
    let mutant = |seed: &[u8], rng: &mut Rng| {
        if rng.chance(80)
            && let Some(m) = mutate::mutate_binary(seed, rng)
        {
            return m;
        }
        byte_mutant(seed, rng)
    };
    run(
        "binary",
        cases(150),
        &seeds().binaries,
        mutant,
        targets::binary,
    );
}

#[test]
fn options() {
    panics();
    run(
        "options",
        cases(400),
        &seeds().options,
        token_mutant,
        targets::options,
    );
}

#[test]
fn source() {
    panics();
    run(
        "source",
        cases(20),
        &seeds().sources,
        token_mutant,
        targets::source,
    );
}
