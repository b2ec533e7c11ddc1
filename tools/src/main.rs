//! `vkcl`: the front door to vkcl. Shows devices and why capabilities are
//! on or off, compiles OpenCL C offline through every stage, runs one
//! kernel from the command line, benchmarks any OpenCL platform, and
//! installs the ICD file.

mod bench;
mod cl;
mod compile;
mod icd;
mod info;
mod run;
mod trace;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "vkcl", version, about = "OpenCL 3.0 on any Vulkan 1.2+ device")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Platforms and devices as vkcl sees them, with the Vulkan features
    /// behind each OpenCL capability and why a capability is off.
    Info,
    /// Compiles OpenCL C (or checks SPIR-V) and shows each stage.
    Compile(compile::Args),
    /// Runs one kernel with arguments from the command line.
    Run(run::Args),
    /// clpeak-style figures through the OpenCL API of any platform.
    Bench(bench::Args),
    /// Installs or removes vkcl's ICD file for OpenCL ICD loaders.
    Icd(icd::Args),
    /// Sums up a timeline written with VKCL_TRACE=FILE: time in OpenCL
    /// calls, device busy and idle time, and why the device was idle.
    Trace(trace::Args),
}

fn main() -> ExitCode {
    // Output piped into `head` or a closed pager ends the program quietly,
    // as for other command-line tools, instead of a panic on the next print.
    #[cfg(unix)]
    // SAFETY: restoring the default action of SIGPIPE before any thread
    // starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info => info::run(),
        Command::Compile(a) => compile::run(a),
        Command::Run(a) => run::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Icd(a) => icd::run(a),
        Command::Trace(a) => trace::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vkcl: {e}");
            ExitCode::FAILURE
        }
    }
}
