//! printf: every work-item's line, formatted as C's printf formats it,
//! written to standard output before the command's event completes; a
//! small VKCL_PRINTF_BUFFER_SIZE loses lines but nothing else. The kernel
//! runs in a child process so that its standard output can be read.

mod common;

use std::process::Command;

use common::*;

const SOURCE: &str = include_str!("kernels/printf.cl");
const N: usize = 64;

/// Runs in the child process only: prints through vkcl.
#[test]
fn child_prints() {
    let Ok(how) = std::env::var("VKCL_PRINTF_CHILD") else {
        return;
    };
    let cl = if how == "loader" { loader() } else { direct() };
    let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.25).collect();
    let mut s = Setup::new(cl);
    let k = s.kernel(SOURCE, "lines", "");
    let b = s.buffer_from(&bytes_of(&a));
    s.arg(k, 0, &b);
    s.run(k, &[N], Some(&[16]), None);
    let r = unsafe { cl.clFinish.unwrap()(s.q) };
    assert_eq!(r, 0);
    println!("child done");
}

fn child(how: &str, buffer: Option<&str>) -> String {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child_prints", "--nocapture", "--test-threads=1"])
        .env("VKCL_PRINTF_CHILD", how);
    if let Some(size) = buffer {
        c.env("VKCL_PRINTF_BUFFER_SIZE", size);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} {} OUT {}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The kernel's lines (libtest may print its own text before the first).
fn printed(out: &str) -> Vec<&str> {
    out.lines()
        .filter_map(|l| l.find("line ").map(|p| &l[p..]))
        .collect()
}

fn expected(i: usize) -> String {
    let a = i as f32 * 0.25;
    let e = format!("{:.1e}", a * 1000.0);
    // C writes the exponent with a sign and two digits.
    let (m, x) = e.split_once('e').unwrap();
    let x: i32 = x.parse().unwrap();
    let e = format!("{m}e{}{:02}", if x < 0 { '-' } else { '+' }, x.abs());
    format!(
        "line {i:03}: {a:.2} text {i},{},2,3 {:x} {} {e:>7} {}",
        -(i as i32),
        i * 17,
        (b'a' + (i % 26) as u8) as char,
        i * 3
    )
}

#[test]
fn every_line_through_the_loader_and_directly() {
    for how in ["loader", "direct"] {
        let out = child(how, None);
        assert!(out.contains("child done"), "{how}: {out}");
        let narrow = out
            .lines()
            .find_map(|l| l.strip_prefix("narrow "))
            .unwrap_or_else(|| panic!("{how}: no narrow line in {out}"));
        let (values, pointer) = narrow.rsplit_once(' ').unwrap();
        assert_eq!(values, "8001 80 -56", "{how}");
        let address = pointer.strip_prefix("0x").expect("%p prints 0x...");
        assert_ne!(u64::from_str_radix(address, 16).unwrap(), 0, "{how}");
        let lines = printed(&out);
        assert_eq!(lines.len(), N, "{how}: {out}");
        for i in 0..N {
            let want = expected(i);
            assert!(
                lines.contains(&want.as_str()),
                "{how}: no line {want:?} in {lines:?}"
            );
        }
    }
}

#[test]
fn a_small_buffer_loses_lines_only() {
    let out = child("direct", Some("256"));
    assert!(out.contains("child done"), "{out}");
    let lines = printed(&out);
    assert!(lines.len() < N, "{} lines fit in 256 bytes", lines.len());
    for l in &lines {
        let i: usize = l[5..8].parse().unwrap();
        assert_eq!(*l, expected(i));
    }
}
