//! `vkcl icd install|uninstall`: the .icd file ICD loaders read.

use std::path::{Path, PathBuf};

use clap::ValueEnum;

#[derive(Clone, Copy, ValueEnum)]
pub enum Action {
    Install,
    Uninstall,
}

#[derive(clap::Args)]
pub struct Args {
    action: Action,
    /// /etc/OpenCL/vendors: every user and application.
    #[arg(long, conflicts_with_all = ["user", "dir"])]
    system: bool,
    /// $XDG_DATA_HOME/vkcl (~/.local/share/vkcl), for OCL_ICD_VENDORS (the default).
    #[arg(long, conflicts_with = "dir")]
    user: bool,
    /// Any folder, for OCL_ICD_VENDORS.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The vkcl library to name (default: the one next to this program,
    /// or in the build folder it came from).
    #[arg(long, value_name = "PATH")]
    library: Option<PathBuf>,
}

const TEMPLATE: &str = include_str!("../../icd/vkcl.icd.in");

fn library_name() -> &'static str {
    if cfg!(windows) {
        "vkcl.dll"
    } else {
        "libvkcl.so"
    }
}

/// The library beside the executable (an install) or in its build folder.
fn find_library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = exe.parent().ok_or("this program has no folder")?;
    for d in [dir.to_path_buf(), dir.join("../lib"), dir.join("..")] {
        let p = d.join(library_name());
        if p.exists() {
            return p
                .canonicalize()
                .map_err(|e| format!("cannot resolve {}: {e}", p.display()));
        }
    }
    Err(format!(
        "no {} next to {}: pass --library PATH",
        library_name(),
        exe.display()
    ))
}

fn user_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("vkcl"));
    }
    let home = std::env::var_os("HOME").ok_or("HOME is not set: pass --dir")?;
    Ok(PathBuf::from(home).join(".local/share/vkcl"))
}

pub fn run(a: Args) -> Result<(), String> {
    let dir = if a.system {
        PathBuf::from("/etc/OpenCL/vendors")
    } else if let Some(d) = a.dir {
        d
    } else {
        user_dir()?
    };
    let file = dir.join("vkcl.icd");
    match a.action {
        Action::Install => {
            let lib = match a.library {
                Some(l) => l
                    .canonicalize()
                    .map_err(|e| format!("cannot find {}: {e}", l.display()))?,
                None => find_library()?,
            };
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let text = TEMPLATE.replace("@VKCL_LIBRARY_PATH@", &lib.display().to_string());
            write_atomically(&file, &text)?;
            println!("wrote {} naming {}", file.display(), lib.display());
            if !a.system {
                println!("for this shell: export OCL_ICD_VENDORS={}", dir.display());
            }
        }
        Action::Uninstall => match std::fs::remove_file(&file) {
            Ok(()) => println!("removed {}", file.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("{} is not installed", file.display()));
            }
            Err(e) => return Err(format!("cannot remove {}: {e}", file.display())),
        },
    }
    Ok(())
}

fn write_atomically(file: &Path, text: &str) -> Result<(), String> {
    let aside = file.with_extension(format!("icd.{}", std::process::id()));
    std::fs::write(&aside, text).map_err(|e| format!("cannot write {}: {e}", aside.display()))?;
    std::fs::rename(&aside, file).map_err(|e| format!("cannot write {}: {e}", file.display()))
}
