//! `clinfo` through the ICD loader: vkcl's platform and devices are listed
//! with every property and no error, and `VKCL_DEVICE` selects devices.

mod common;

use std::process::Command;

fn clinfo(envs: &[(&str, &str)]) -> String {
    let icd = common::environment();
    let mut cmd = Command::new("clinfo");
    cmd.env("OCL_ICD_VENDORS", icd)
        .env("VKCL_VALIDATION", "abort");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .expect("clinfo must be installed (scripts/test.sh installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "clinfo failed: {}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stderr.trim().is_empty(),
        "clinfo wrote to stderr:\n{stderr}"
    );
    stdout
}

fn number_of_devices(out: &str) -> usize {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Number of devices"))
        .map(|n| n.trim().parse().unwrap())
        .expect("a device count")
}

#[test]
fn clinfo_lists_vkcl_without_errors() {
    let out = clinfo(&[]);
    let error_lines: Vec<&str> = out
        .lines()
        .filter(|l| {
            let l = l.to_lowercase();
            l.contains("error") && !l.contains("error correction")
                || l.contains("invalid")
                || l.contains("<unknown")
        })
        .collect();
    assert!(
        error_lines.is_empty(),
        "clinfo reported errors:\n{}",
        error_lines.join("\n")
    );
    assert!(
        out.contains("Platform Name                                   vkcl"),
        "{out}"
    );
    assert!(number_of_devices(&out) >= 1, "{out}");
    assert!(
        out.contains("clCreateContextFromType(NULL, CL_DEVICE_TYPE_DEFAULT)  Success"),
        "{out}"
    );
}

#[test]
fn vkcl_device_selects_by_index_and_name() {
    let all = number_of_devices(&clinfo(&[]));
    assert_eq!(
        number_of_devices(&clinfo(&[("VKCL_DEVICE", "no-such-device")])),
        0
    );
    assert_eq!(number_of_devices(&clinfo(&[("VKCL_DEVICE", "0")])), 1);
    if all == 1 {
        let out = clinfo(&[]);
        let name = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("Device Name"))
            .unwrap()
            .trim()
            .to_string();
        let part = &name[..name.len().min(6)].to_uppercase();
        assert_eq!(number_of_devices(&clinfo(&[("VKCL_DEVICE", part)])), 1);
    }
}
