//! `VKCL_TRACE=<file>`: a timeline of what vkcl does, written as Chrome
//! trace events (a JSON array; it opens in Perfetto or chrome://tracing,
//! and `vkcl trace <file>` sums it up). `%p` in the name becomes the
//! process id, for programs that start others.
//!
//! On the host: every OpenCL call (category `api`), each `vkQueueSubmit`,
//! and the completion worker's waits and completions (`vkcl`), one row
//! per thread. On each device: every command, from timestamps the queue
//! writes around it while tracing (profiling queue or not), in one row
//! per OpenCL queue, inside a `batch` event per submission whose
//! arguments say when the batch was submitted and when the worker saw it
//! done (host clock, microseconds). Together they tell where the time
//! goes: in the application, in vkcl's calls, in the driver's submission
//! latency, on the device, or nowhere (the device idle, waiting for the
//! host).
//!
//! Off (the default), the cost is one load of an initialised `OnceLock`
//! per call.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use opencl_sys::*;

use crate::core::event::host_time_ns;

/// Events gathered before they are written out.
const BUFFERED: usize = 1 << 20;

pub struct Tracer {
    file: Mutex<std::fs::File>,
    state: Mutex<State>,
    /// Host time of time 0 in the file.
    epoch: u64,
    next_thread: AtomicU32,
    /// Set once the file is closed (at exit): later events are dropped.
    closed: AtomicBool,
}

#[derive(Default)]
struct State {
    text: String,
    /// Trace process ids of devices, by an address that identifies them.
    devices: HashMap<usize, u32>,
    /// Row ids of queues (by address) within their device.
    queues: HashMap<usize, u32>,
}

static TRACER: OnceLock<Option<Tracer>> = OnceLock::new();

thread_local! {
    /// This thread's row in the trace, once it has one.
    static THREAD: Cell<u32> = const { Cell::new(0) };
}

/// The tracer, where `VKCL_TRACE` names a file that could be made.
pub fn tracer() -> Option<&'static Tracer> {
    TRACER.get_or_init(open).as_ref()
}

/// Runs `f`; while tracing, as a span `name` of vkcl's own host work on
/// the calling thread's row (the parts of an OpenCL call).
pub fn span<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let Some(t) = tracer() else {
        return f();
    };
    let start = crate::core::event::host_time_ns();
    let out = f();
    t.host("vkcl", name, start, crate::core::event::host_time_ns(), "");
    out
}

fn open() -> Option<Tracer> {
    let name = std::env::var("VKCL_TRACE").ok().filter(|p| !p.is_empty())?;
    let path = name.replace("%p", &std::process::id().to_string());
    let mut file = match std::fs::File::create(&path) {
        Ok(f) => f,
        Err(e) => {
            log::warn!(target: "vkcl::trace", "VKCL_TRACE: cannot create {path}: {e}");
            return None;
        }
    };
    file.write_all(b"[\n").ok()?;
    // SAFETY: registers a plain function with no captured state.
    unsafe { libc::atexit(close_at_exit) };
    let t = Tracer {
        file: Mutex::new(file),
        state: Mutex::new(State::default()),
        epoch: host_time_ns(),
        next_thread: AtomicU32::new(1),
        closed: AtomicBool::new(false),
    };
    let mut st = t.lock();
    let pid = std::process::id();
    let what = std::env::args().next().unwrap_or_default();
    let _ = writeln!(
        st.text,
        r#"{{"name":"process_name","ph":"M","pid":{pid},"args":{{"name":"{} (host)"}}}},"#,
        escape(&what)
    );
    drop(st);
    Some(t)
}

extern "C" fn close_at_exit() {
    if let Some(t) = TRACER.get().and_then(Option::as_ref) {
        t.close();
    }
}

/// `s` as the inside of a JSON string.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A command's name in the trace, by its type.
pub fn command_name(command_type: cl_command_type) -> &'static str {
    match command_type {
        CL_COMMAND_NDRANGE_KERNEL => "kernel",
        CL_COMMAND_TASK => "task",
        CL_COMMAND_NATIVE_KERNEL => "native kernel",
        CL_COMMAND_READ_BUFFER => "read buffer",
        CL_COMMAND_WRITE_BUFFER => "write buffer",
        CL_COMMAND_COPY_BUFFER => "copy buffer",
        CL_COMMAND_READ_IMAGE => "read image",
        CL_COMMAND_WRITE_IMAGE => "write image",
        CL_COMMAND_COPY_IMAGE => "copy image",
        CL_COMMAND_COPY_IMAGE_TO_BUFFER => "copy image to buffer",
        CL_COMMAND_COPY_BUFFER_TO_IMAGE => "copy buffer to image",
        CL_COMMAND_MAP_BUFFER => "map buffer",
        CL_COMMAND_MAP_IMAGE => "map image",
        CL_COMMAND_UNMAP_MEM_OBJECT => "unmap",
        CL_COMMAND_MARKER => "marker",
        CL_COMMAND_READ_BUFFER_RECT => "read buffer rect",
        CL_COMMAND_WRITE_BUFFER_RECT => "write buffer rect",
        CL_COMMAND_COPY_BUFFER_RECT => "copy buffer rect",
        CL_COMMAND_BARRIER => "barrier",
        CL_COMMAND_MIGRATE_MEM_OBJECTS => "migrate",
        CL_COMMAND_FILL_BUFFER => "fill buffer",
        CL_COMMAND_FILL_IMAGE => "fill image",
        CL_COMMAND_SVM_FREE => "SVM free",
        CL_COMMAND_SVM_MEMCPY => "SVM memcpy",
        CL_COMMAND_SVM_MEMFILL => "SVM memfill",
        CL_COMMAND_SVM_MAP => "SVM map",
        CL_COMMAND_SVM_UNMAP => "SVM unmap",
        CL_COMMAND_COMMAND_BUFFER_KHR => "command buffer",
        _ => "command",
    }
}

impl Tracer {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Microseconds since the trace began, of host time `ns`.
    fn ts(&self, ns: u64) -> f64 {
        (ns as i128 - self.epoch as i128) as f64 / 1000.0
    }

    /// This thread's row, named the first time.
    fn thread(&self, st: &mut State) -> u32 {
        THREAD.with(|t| {
            if t.get() == 0 {
                let id = self.next_thread.fetch_add(1, Ordering::Relaxed);
                t.set(id);
                let name = match std::thread::current().name() {
                    Some(n) => escape(n),
                    None => format!("thread {id}"),
                };
                let _ = writeln!(
                    st.text,
                    r#"{{"name":"thread_name","ph":"M","pid":{},"tid":{id},"args":{{"name":"{name}"}}}},"#,
                    std::process::id()
                );
            }
            t.get()
        })
    }

    /// A span of host work on this thread, from `start` to `end` (host
    /// nanoseconds). `args` is empty or the members of a JSON object.
    pub fn host(&self, category: &str, name: &str, start: u64, end: u64, args: &str) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let mut st = self.lock();
        let tid = self.thread(&mut st);
        let (ts, dur) = (self.ts(start), end.saturating_sub(start) as f64 / 1000.0);
        let _ = writeln!(
            st.text,
            r#"{{"name":"{name}","cat":"{category}","ph":"X","pid":{},"tid":{tid},"ts":{ts:.3},"dur":{dur:.3},"args":{{{args}}}}},"#,
            std::process::id()
        );
        self.spill(st);
    }

    /// Device work of a queue: `spans` are (name, start, end, args) in
    /// host nanoseconds. The device (`device`, an address that identifies
    /// it, named by `device_name` the first time) is a process of the
    /// trace, the queue (`queue`, likewise) one of its rows.
    pub fn device(
        &self,
        device: usize,
        device_name: impl FnOnce() -> String,
        queue: usize,
        spans: &[(String, u64, u64, String)],
    ) {
        if self.closed.load(Ordering::Relaxed) || spans.is_empty() {
            return;
        }
        let mut st = self.lock();
        let pid = match st.devices.get(&device) {
            Some(&pid) => pid,
            None => {
                // Below any process id the host can have.
                let pid = u32::MAX - st.devices.len() as u32;
                st.devices.insert(device, pid);
                let _ = writeln!(
                    st.text,
                    r#"{{"name":"process_name","ph":"M","pid":{pid},"args":{{"name":"device: {}"}}}},"#,
                    escape(&device_name())
                );
                pid
            }
        };
        let tid = match st.queues.get(&queue) {
            Some(&tid) => tid,
            None => {
                let tid = st.queues.len() as u32 + 1;
                st.queues.insert(queue, tid);
                let _ = writeln!(
                    st.text,
                    r#"{{"name":"thread_name","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":"queue {tid}"}}}},"#
                );
                tid
            }
        };
        for (name, start, end, args) in spans {
            let (ts, dur) = (self.ts(*start), end.saturating_sub(*start) as f64 / 1000.0);
            let _ = writeln!(
                st.text,
                r#"{{"name":"{}","cat":"device","ph":"X","pid":{pid},"tid":{tid},"ts":{ts:.3},"dur":{dur:.3},"args":{{{args}}}}},"#,
                escape(name)
            );
        }
        self.spill(st);
    }

    /// Microseconds since the trace began, of host time `ns`, for
    /// arguments.
    pub fn micros(&self, ns: u64) -> String {
        format!("{:.3}", self.ts(ns))
    }

    /// Writes the gathered events out once there are enough of them.
    fn spill(&self, mut st: std::sync::MutexGuard<'_, State>) {
        if st.text.len() < BUFFERED {
            return;
        }
        let text = std::mem::take(&mut st.text);
        drop(st);
        self.write(text.as_bytes());
    }

    fn write(&self, bytes: &[u8]) {
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = f.write_all(bytes) {
            log::warn!(target: "vkcl::trace", "VKCL_TRACE: write failed: {e}");
        }
    }

    /// Writes what is left and ends the array; later events are dropped.
    fn close(&self) {
        if self.closed.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut text = std::mem::take(&mut self.lock().text);
        // The last element closes the array (JSON allows no trailing comma).
        let _ = writeln!(
            text,
            r#"{{"name":"trace end","ph":"i","s":"g","pid":{},"tid":0,"ts":{:.3}}}]"#,
            std::process::id(),
            self.ts(host_time_ns())
        );
        self.write(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn names_are_escaped_for_json() {
        assert_eq!(escape("plain_kernel"), "plain_kernel");
        assert_eq!(escape("a\"b\\c\n"), "a\\\"b\\\\c\\u000a");
    }
}
