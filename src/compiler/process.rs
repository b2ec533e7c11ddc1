//! The compiler's helper programs (clang, llvm-spirv, spirv-link), run
//! with a bound on their time: a build must end, with a log, even where
//! a tool does not (clang 15 loops for ever in its error recovery on some
//! malformed sources, printing the same note again and again). Past the
//! bound the tool is killed and the build fails, its log saying so.
//!
//! `VKCL_COMPILER_TIMEOUT` sets the bound in seconds (default 600, far
//! beyond any real program's compile: the largest kernels vkcl has built,
//! hashcat's, take seconds).

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The most one helper program may run.
pub fn time_limit() -> Duration {
    static LIMIT: OnceLock<Duration> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("VKCL_COMPILER_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(Duration::from_secs(600), Duration::from_secs_f64)
    })
}

/// What a helper program wrote and how it ended.
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// It ran past the time limit and was killed.
    pub timed_out: bool,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status.success() && !self.timed_out
    }

    /// The tool's messages, and where it was killed, a line saying so.
    pub fn log(&self, tool: &str) -> String {
        let mut log = String::from_utf8_lossy(&self.stderr).into_owned();
        if self.timed_out {
            if !log.is_empty() && !log.ends_with('\n') {
                log.push('\n');
            }
            log.push_str(&format!(
                "{tool} did not finish within {} s and was stopped \
                 (VKCL_COMPILER_TIMEOUT sets the limit)\n",
                time_limit().as_secs_f64()
            ));
        }
        log
    }
}

/// Runs `cmd` to its end or to `limit`, with no input, collecting what it
/// writes (as `Command::output` does). On Unix the tool leads a process
/// group of its own, so that killing it also stops what it started.
pub fn output_within(cmd: &mut Command, limit: Duration) -> std::io::Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    let mut child = cmd.spawn()?;
    // Both pipes drained while it runs: a tool that fills one would
    // otherwise wait for ever.
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let start = Instant::now();
    let mut nap = Duration::from_millis(1);
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait()? {
            break (status, false);
        }
        if start.elapsed() >= limit {
            #[cfg(unix)]
            // SAFETY: kill(2) on the group the child leads; it has not been
            // waited for, so its id is not reused.
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.kill();
            break (child.wait()?, true);
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
    })
}

/// Reads `pipe` to its end on a thread of its own.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// [`output_within`] the configured [`time_limit`].
pub fn output(cmd: &mut Command) -> std::io::Result<Output> {
    output_within(cmd, time_limit())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A tool that does not end is stopped at the limit, with what it
    /// wrote before; one that ends keeps its status and output.
    #[test]
    fn a_tool_past_its_limit_is_stopped() {
        let mut forever = Command::new("sh");
        forever.args(["-c", "echo started >&2; while :; do :; done"]);
        let start = Instant::now();
        let out = output_within(&mut forever, Duration::from_millis(300)).unwrap();
        assert!(out.timed_out && !out.success());
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(
            out.log("sh")
                .starts_with("started\nsh did not finish within"),
            "{}",
            out.log("sh")
        );

        let mut quick = Command::new("sh");
        quick.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = output_within(&mut quick, Duration::from_secs(60)).unwrap();
        assert!(!out.timed_out);
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(
            (&out.stdout[..], &out.stderr[..]),
            (&b"out\n"[..], &b"err\n"[..])
        );
    }

    /// A tool's children that keep its pipes open are stopped with it:
    /// the call returns at the limit, not when they end.
    #[test]
    fn what_a_stopped_tool_started_stops_too() {
        let mut parent = Command::new("sh");
        parent.args(["-c", "sleep 30 & sleep 30"]);
        let start = Instant::now();
        let out = output_within(&mut parent, Duration::from_millis(300)).unwrap();
        assert!(out.timed_out);
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
