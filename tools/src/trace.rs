//! `vkcl trace FILE`: sums up a timeline written with `VKCL_TRACE`: where
//! the host's time went in OpenCL calls, how busy each device was, and
//! why it was idle between batches (nothing submitted yet, or submitted
//! and not started: the driver's latency).

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;

#[derive(clap::Args)]
pub struct Args {
    /// A file written by an application run with VKCL_TRACE=FILE.
    file: PathBuf,
    /// How many rows each table shows.
    #[arg(long, default_value_t = 15)]
    rows: usize,
}

/// A span of the trace: name, category, process, row, start and length
/// (microseconds), arguments.
struct Span {
    name: String,
    cat: String,
    pid: u64,
    tid: u64,
    ts: f64,
    dur: f64,
    args: Value,
}

pub fn run(a: Args) -> Result<(), String> {
    let text = std::fs::read_to_string(&a.file)
        .map_err(|e| format!("cannot read {}: {e}", a.file.display()))?;
    let events = parse(&text).map_err(|e| format!("{}: {e}", a.file.display()))?;
    print!("{}", summary(&events, a.rows));
    Ok(())
}

/// The events of a trace. A process that ended without running its exit
/// handlers leaves the array open, with a comma after the last event.
fn parse(text: &str) -> Result<Vec<Value>, String> {
    match serde_json::from_str::<Vec<Value>>(text) {
        Ok(v) => Ok(v),
        Err(first) => {
            let cut = text.trim_end().trim_end_matches(',');
            serde_json::from_str::<Vec<Value>>(&format!("{cut}]"))
                .map_err(|_| format!("not a trace: {first}"))
        }
    }
}

/// The names of the trace's rows, by process and row, and of its
/// processes.
type Names = (HashMap<(u64, u64), String>, HashMap<u64, String>);

fn spans(events: &[Value]) -> (Vec<Span>, Names) {
    let mut spans = Vec::new();
    let mut threads = HashMap::new();
    let mut processes = HashMap::new();
    for e in events {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let n = |k: &str| e.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let pid = n("pid") as u64;
        let tid = n("tid") as u64;
        let meta_name = || {
            e.pointer("/args/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match s("ph").as_str() {
            "X" => spans.push(Span {
                name: s("name"),
                cat: s("cat"),
                pid,
                tid,
                ts: n("ts"),
                dur: n("dur"),
                args: e.get("args").cloned().unwrap_or(Value::Null),
            }),
            "M" if s("name") == "thread_name" => {
                threads.insert((pid, tid), meta_name());
            }
            "M" if s("name") == "process_name" => {
                processes.insert(pid, meta_name());
            }
            _ => {}
        }
    }
    (spans, (threads, processes))
}

/// Count, total and largest length of spans by name, largest total first.
fn by_name<'a>(spans: impl Iterator<Item = &'a Span>) -> Vec<(String, usize, f64, f64)> {
    let mut m: HashMap<&str, (usize, f64, f64)> = HashMap::new();
    for s in spans {
        let e = m.entry(&s.name).or_default();
        e.0 += 1;
        e.1 += s.dur;
        e.2 = e.2.max(s.dur);
    }
    let mut v: Vec<_> = m
        .into_iter()
        .map(|(k, (n, t, max))| (k.to_string(), n, t, max))
        .collect();
    v.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    v
}

fn table(out: &mut String, rows: &[(String, usize, f64, f64)], limit: usize) {
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "    {:<40} {:>9} {:>11} {:>10} {:>10}",
        "", "count", "total ms", "mean us", "max us"
    );
    for (name, n, total, max) in rows.iter().take(limit) {
        let _ = writeln!(
            out,
            "    {:<40} {:>9} {:>11.3} {:>10.2} {:>10.2}",
            name,
            n,
            total / 1000.0,
            total / *n as f64,
            max
        );
    }
    if rows.len() > limit {
        let (n, t) = rows[limit..]
            .iter()
            .fold((0, 0.0), |(n, t), r| (n + r.1, t + r.2));
        let _ = writeln!(
            out,
            "    {:<40} {:>9} {:>11.3}",
            format!("({} more)", rows.len() - limit),
            n,
            t / 1000.0
        );
    }
}

/// Median, mean and 90th percentile of `v` (microseconds), as text.
fn spread(v: &mut [f64]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!(
        "median {:.1} us, mean {:.1}, 90th percentile {:.1} ({} batches)",
        at(0.5),
        mean,
        at(0.9),
        v.len()
    )
}

/// Device time, batch by batch: how busy, and why idle between batches.
struct Device {
    busy: f64,
    span: f64,
    batches: usize,
    commands: usize,
    /// Idle with nothing submitted: the host had not handed over the next
    /// batch yet.
    host_late: f64,
    /// Idle with the next batch submitted and not started.
    not_started: f64,
    /// Between the commands of a batch.
    inside: f64,
    /// Submission to start, where the device was idle when it came.
    latency: Vec<f64>,
    /// Last command's end to the completion worker seeing the batch done.
    seen: Vec<f64>,
    /// The spans of `host_late`, each with the batch submitted at its end
    /// (queue, timeline value).
    late: Vec<(f64, f64, String, u64)>,
}

fn device(spans: &[&Span]) -> Device {
    let mut batches: Vec<&Span> = spans
        .iter()
        .copied()
        .filter(|s| s.name == "batch")
        .collect();
    batches.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    let mut commands: Vec<&Span> = spans
        .iter()
        .copied()
        .filter(|s| s.name != "batch")
        .collect();
    commands.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    let arg = |s: &Span, k: &str| s.args.get(k).and_then(Value::as_f64);
    let mut d = Device {
        busy: 0.0,
        span: 0.0,
        batches: batches.len(),
        commands: commands.len(),
        host_late: 0.0,
        not_started: 0.0,
        inside: 0.0,
        latency: Vec::new(),
        seen: Vec::new(),
        late: Vec::new(),
    };
    let mut busy_until = f64::NEG_INFINITY;
    for b in &batches {
        let end = b.ts + b.dur;
        if let Some(submitted) = arg(b, "submitted") {
            if b.ts > busy_until && busy_until.is_finite() {
                let gap = b.ts - busy_until;
                let late = (submitted - busy_until).clamp(0.0, gap);
                d.host_late += late;
                d.not_started += gap - late;
                if late > 0.0 {
                    let queue = b.args.get("queue").and_then(Value::as_str).unwrap_or("");
                    let value = arg(b, "batch").unwrap_or(0.0) as u64;
                    d.late
                        .push((busy_until, busy_until + late, queue.to_string(), value));
                }
            }
            if b.ts >= busy_until {
                d.latency.push((b.ts - submitted.max(busy_until)).max(0.0));
            }
        }
        if let Some(seen) = arg(b, "seen") {
            d.seen.push((seen - end).max(0.0));
        }
        busy_until = busy_until.max(end);
    }
    // Busy: the union of the commands' spans; inside: the gaps of that
    // union that fall within a batch.
    let mut until = f64::NEG_INFINITY;
    for c in &commands {
        let end = c.ts + c.dur;
        if c.ts > until {
            if until.is_finite()
                && batches
                    .iter()
                    .any(|b| b.ts <= until && c.ts <= b.ts + b.dur)
            {
                d.inside += c.ts - until;
            }
            d.busy += c.dur;
            until = end;
        } else if end > until {
            d.busy += end - until;
            until = end;
        }
    }
    if let (Some(first), Some(last)) = (
        commands.first(),
        commands.iter().map(|c| c.ts + c.dur).reduce(f64::max),
    ) {
        d.span = last - first.ts;
    }
    d
}

/// What the host threads that submitted each next batch did while the
/// device waited for them (`late`: spans of idle time, each with the
/// queue and timeline value of the batch that ended it): milliseconds per
/// OpenCL call, and outside OpenCL calls, largest first.
fn waiting_host(
    spans: &[Span],
    threads: &HashMap<(u64, u64), String>,
    late: &[(f64, f64, String, u64)],
) -> Vec<(String, f64)> {
    // Who submitted each batch: (queue, value) -> (process, thread).
    let mut submitter: HashMap<(String, u64), (u64, u64)> = HashMap::new();
    for s in spans.iter().filter(|s| s.name == "vkQueueSubmit") {
        let queue = s.args.get("queue").and_then(Value::as_str).unwrap_or("");
        let value = s.args.get("batch").and_then(Value::as_f64).unwrap_or(0.0) as u64;
        submitter.insert((queue.to_string(), value), (s.pid, s.tid));
    }
    // Each thread's OpenCL calls, by start.
    let mut calls: HashMap<(u64, u64), Vec<&Span>> = HashMap::new();
    for s in spans.iter().filter(|s| s.cat == "api") {
        calls.entry((s.pid, s.tid)).or_default().push(s);
    }
    for v in calls.values_mut() {
        v.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    }
    let mut total: HashMap<String, f64> = HashMap::new();
    for (from, to, queue, value) in late {
        let Some(thread) = submitter.get(&(queue.clone(), *value)) else {
            *total
                .entry("(submitted by an unknown thread)".into())
                .or_default() += to - from;
            continue;
        };
        if threads.get(thread).is_some_and(|n| n == "vkcl-completion") {
            // Submitted when an earlier batch completed: the worker's
            // time from seeing it to submitting.
            *total.entry("vkcl's completion worker".into()).or_default() += to - from;
            continue;
        }
        let mut inside = 0.0;
        // Calls overlapping [from, to]; an outer call covers what it calls.
        let mut covered_to = *from;
        for c in calls.get(thread).into_iter().flatten() {
            if c.ts >= *to {
                break;
            }
            let (a, b) = (c.ts.max(covered_to), (c.ts + c.dur).min(*to));
            if b > a {
                *total.entry(c.name.clone()).or_default() += b - a;
                inside += b - a;
                covered_to = b;
            }
        }
        *total.entry("outside OpenCL calls".into()).or_default() += (to - from - inside).max(0.0);
    }
    let mut v: Vec<(String, f64)> = total.into_iter().map(|(k, us)| (k, us / 1000.0)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

fn summary(events: &[Value], rows: usize) -> String {
    use std::fmt::Write as _;
    let (spans, (threads, processes)) = spans(events);
    let mut out = String::new();
    let (first, last) = spans
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(f, l), s| {
            (f.min(s.ts), l.max(s.ts + s.dur))
        });
    if spans.is_empty() {
        out.push_str("The trace holds no spans.\n");
        return out;
    }
    let _ = writeln!(
        out,
        "{:.3} ms from the first span to the last",
        (last - first) / 1000.0
    );

    // Host: OpenCL calls per thread, then by name.
    let api: Vec<&Span> = spans.iter().filter(|s| s.cat == "api").collect();
    let mut per_thread: HashMap<(u64, u64), (usize, f64)> = HashMap::new();
    for s in &api {
        let e = per_thread.entry((s.pid, s.tid)).or_default();
        e.0 += 1;
        e.1 += s.dur;
    }
    let mut per_thread: Vec<_> = per_thread.into_iter().collect();
    per_thread.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
    let _ = writeln!(out, "\nHost threads, time inside OpenCL calls:");
    for ((pid, tid), (n, total)) in &per_thread {
        let name = threads
            .get(&(*pid, *tid))
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}"));
        let _ = writeln!(
            out,
            "    {name:<40} {n:>9} calls {:>11.3} ms ({:.1}% of the trace)",
            total / 1000.0,
            100.0 * total / (last - first)
        );
    }
    let _ = writeln!(out, "\nOpenCL calls:");
    table(&mut out, &by_name(api.iter().copied()), rows);
    let own: Vec<&Span> = spans.iter().filter(|s| s.cat == "vkcl").collect();
    if !own.is_empty() {
        let _ = writeln!(out, "\nvkcl's own host work:");
        table(&mut out, &by_name(own.iter().copied()), rows);
    }

    // Devices.
    let mut pids: Vec<u64> = spans
        .iter()
        .filter(|s| s.cat == "device")
        .map(|s| s.pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        let on: Vec<&Span> = spans
            .iter()
            .filter(|s| s.cat == "device" && s.pid == pid)
            .collect();
        let d = device(&on);
        let name = processes.get(&pid).cloned().unwrap_or_default();
        let _ = writeln!(out, "\n{name}:");
        let pct = |x: f64| {
            if d.span > 0.0 {
                100.0 * x / d.span
            } else {
                0.0
            }
        };
        let _ = writeln!(
            out,
            "    {} commands in {} batches; busy {:.3} ms of the {:.3} ms from its first command to its last ({:.1}%)",
            d.commands,
            d.batches,
            d.busy / 1000.0,
            d.span / 1000.0,
            pct(d.busy)
        );
        let _ = writeln!(
            out,
            "    idle between batches, nothing submitted yet:   {:>10.3} ms ({:.1}%)",
            d.host_late / 1000.0,
            pct(d.host_late)
        );
        let _ = writeln!(
            out,
            "    idle between batches, submitted, not started:  {:>10.3} ms ({:.1}%)",
            d.not_started / 1000.0,
            pct(d.not_started)
        );
        let _ = writeln!(
            out,
            "    idle between the commands of a batch:          {:>10.3} ms ({:.1}%)",
            d.inside / 1000.0,
            pct(d.inside)
        );
        if !d.late.is_empty() {
            let _ = writeln!(
                out,
                "    while nothing was submitted, the threads that submitted next were in:"
            );
            let rows_of = waiting_host(&spans, &threads, &d.late);
            for (name, ms) in rows_of.iter().take(rows) {
                let _ = writeln!(out, "        {name:<40} {ms:>10.3} ms");
            }
        }
        let (mut latency, mut seen) = (d.latency, d.seen);
        let _ = writeln!(
            out,
            "    submission to start, device idle:  {}",
            spread(&mut latency)
        );
        let _ = writeln!(
            out,
            "    end to the host seeing it:         {}",
            spread(&mut seen)
        );
        let _ = writeln!(out, "    by command:");
        table(
            &mut out,
            &by_name(on.iter().copied().filter(|s| s.name != "batch")),
            rows,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(body: &str) -> Vec<Value> {
        parse(body).expect("a trace")
    }

    /// A device idle twice between three batches: once before the next
    /// batch was submitted, once after (the driver's latency).
    #[test]
    fn idle_time_is_split_by_whether_the_next_batch_was_submitted() {
        let events = trace(
            r#"[
{"name":"process_name","ph":"M","pid":9,"args":{"name":"device: d"}},
{"name":"batch","cat":"device","ph":"X","pid":9,"tid":1,"ts":100,"dur":10,"args":{"submitted":90,"seen":112}},
{"name":"k","cat":"device","ph":"X","pid":9,"tid":1,"ts":100,"dur":4,"args":{}},
{"name":"k","cat":"device","ph":"X","pid":9,"tid":1,"ts":106,"dur":4,"args":{}},
{"name":"batch","cat":"device","ph":"X","pid":9,"tid":1,"ts":130,"dur":5,"args":{"queue":"q","batch":2,"submitted":125,"seen":136}},
{"name":"vkQueueSubmit","cat":"vkcl","ph":"X","pid":1,"tid":3,"ts":125,"dur":1,"args":{"queue":"q","batch":2}},
{"name":"clEnqueueNDRangeKernel","cat":"api","ph":"X","pid":1,"tid":3,"ts":112,"dur":6,"args":{}},
{"name":"clFinish","cat":"api","ph":"X","pid":1,"tid":4,"ts":100,"dur":50,"args":{}},
{"name":"k","cat":"device","ph":"X","pid":9,"tid":1,"ts":130,"dur":5,"args":{}},
{"name":"batch","cat":"device","ph":"X","pid":9,"tid":1,"ts":140,"dur":5,"args":{"submitted":105,"seen":150}},
{"name":"k","cat":"device","ph":"X","pid":9,"tid":1,"ts":140,"dur":5,"args":{}},
"#,
        );
        let (spans, _) = spans(&events);
        let on: Vec<&Span> = spans.iter().filter(|s| s.cat == "device").collect();
        let d = device(&on);
        assert_eq!(d.commands, 4);
        assert_eq!(d.batches, 3);
        assert_eq!(d.busy, 18.0);
        assert_eq!(d.span, 45.0);
        // 110 to 130: 15 before the submission at 125, 5 after it.
        // 135 to 140: submitted long before, so all 5 not started.
        assert_eq!(d.host_late, 15.0);
        assert_eq!(d.not_started, 10.0);
        assert_eq!(d.inside, 2.0);
        assert_eq!(d.latency, vec![10.0, 5.0, 5.0]);
        assert_eq!(d.seen, vec![2.0, 1.0, 5.0]);
        // During the 15 us before batch 2, its submitting thread spent 6
        // in an enqueue; the other thread's clFinish does not count.
        let waiting = waiting_host(&spans, &HashMap::new(), &d.late);
        assert_eq!(
            waiting,
            vec![
                ("outside OpenCL calls".to_string(), 0.009),
                ("clEnqueueNDRangeKernel".to_string(), 0.006)
            ]
        );
        let text = summary(&events, 5);
        assert!(text.contains("device: d"), "{text}");
    }

    #[test]
    fn an_unclosed_trace_is_read() {
        assert_eq!(trace("[\n{\"ph\":\"i\"},\n").len(), 1);
        assert!(parse("{").is_err());
    }
}
