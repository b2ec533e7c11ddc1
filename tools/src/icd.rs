//! `vkcl icd install|uninstall`: the .icd file ICD loaders read on Linux
//! and other Unix systems, or on Windows the registry value the Khronos
//! loader reads (`HKEY_LOCAL_MACHINE\SOFTWARE\Khronos\OpenCL\Vendors`,
//! a DWORD 0 named by the library's full path).

#[cfg(not(windows))]
use std::path::Path;
use std::path::PathBuf;

use clap::ValueEnum;

#[derive(Clone, Copy, ValueEnum)]
pub enum Action {
    Install,
    Uninstall,
}

#[derive(clap::Args)]
pub struct Args {
    action: Action,
    /// /etc/OpenCL/vendors: every user and application (on Windows, the
    /// registry: the only place the Khronos loader looks, and the default).
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

#[cfg(not(windows))]
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

#[cfg(not(windows))]
fn user_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("vkcl"));
    }
    let home = std::env::var_os("HOME").ok_or("HOME is not set: pass --dir")?;
    Ok(PathBuf::from(home).join(".local/share/vkcl"))
}

/// The library named by `--library`, or the one this program finds.
fn library(a: &Args) -> Result<PathBuf, String> {
    match &a.library {
        Some(l) => l
            .canonicalize()
            .map_err(|e| format!("cannot find {}: {e}", l.display())),
        None => find_library(),
    }
}

#[cfg(windows)]
pub fn run(a: Args) -> Result<(), String> {
    if a.user || a.dir.is_some() {
        return Err("on Windows the Khronos loader reads only the registry \
                    (HKEY_LOCAL_MACHINE), or OCL_ICD_FILENAMES for one process: \
                    use --system or no option"
            .into());
    }
    let lib = library(&a)?;
    // A verbatim path (\\?\C:\...) is what canonicalize gives; loaders
    // and users expect the plain form.
    let text = lib.display().to_string();
    let name = text.strip_prefix(r"\\?\").unwrap_or(&text);
    match a.action {
        Action::Install => {
            registry::set(name)?;
            println!("registered {name} in HKEY_LOCAL_MACHINE\\{}", registry::KEY);
        }
        Action::Uninstall => {
            registry::remove(name)?;
            println!("removed {name} from HKEY_LOCAL_MACHINE\\{}", registry::KEY);
        }
    }
    Ok(())
}

/// The Khronos loader's vendor key, through the Win32 registry API.
#[cfg(windows)]
mod registry {
    use windows_sys::Win32::Foundation::{ERROR_FILE_NOT_FOUND, ERROR_SUCCESS};
    use windows_sys::Win32::System::Registry::*;

    pub const KEY: &str = r"SOFTWARE\Khronos\OpenCL\Vendors";

    fn wide(s: &str) -> Vec<u16> {
        s.encode_utf16().chain(std::iter::once(0)).collect()
    }

    /// The vendor key, created if missing, open for writing.
    fn open() -> Result<HKEY, String> {
        let mut key: HKEY = std::ptr::null_mut();
        let path = wide(KEY);
        // SAFETY: `path` is NUL-terminated and `key` receives the handle.
        let r = unsafe {
            RegCreateKeyExW(
                HKEY_LOCAL_MACHINE,
                path.as_ptr(),
                0,
                std::ptr::null(),
                REG_OPTION_NON_VOLATILE,
                KEY_SET_VALUE,
                std::ptr::null(),
                &mut key,
                std::ptr::null_mut(),
            )
        };
        if r != ERROR_SUCCESS {
            return Err(format!(
                "cannot open HKEY_LOCAL_MACHINE\\{KEY} (error {r}; an administrator's shell is needed)"
            ));
        }
        Ok(key)
    }

    /// Names `library` as an ICD: a DWORD 0 value named by its path.
    pub fn set(library: &str) -> Result<(), String> {
        let key = open()?;
        let name = wide(library);
        let zero = 0u32.to_le_bytes();
        // SAFETY: `key` is open for writing, `name` NUL-terminated, and
        // the data four bytes, as REG_DWORD is.
        let r = unsafe { RegSetValueExW(key, name.as_ptr(), 0, REG_DWORD, zero.as_ptr(), 4) };
        // SAFETY: `key` was opened above.
        unsafe { RegCloseKey(key) };
        if r != ERROR_SUCCESS {
            return Err(format!("cannot write the registry value (error {r})"));
        }
        Ok(())
    }

    pub fn remove(library: &str) -> Result<(), String> {
        let key = open()?;
        let name = wide(library);
        // SAFETY: `key` is open for writing and `name` NUL-terminated.
        let r = unsafe { RegDeleteValueW(key, name.as_ptr()) };
        // SAFETY: `key` was opened above.
        unsafe { RegCloseKey(key) };
        match r {
            ERROR_SUCCESS => Ok(()),
            ERROR_FILE_NOT_FOUND => Err(format!("{library} is not installed")),
            _ => Err(format!("cannot remove the registry value (error {r})")),
        }
    }
}

#[cfg(not(windows))]
pub fn run(a: Args) -> Result<(), String> {
    let dir = if a.system {
        PathBuf::from("/etc/OpenCL/vendors")
    } else if let Some(d) = a.dir.clone() {
        d
    } else {
        user_dir()?
    };
    let file = dir.join("vkcl.icd");
    match a.action {
        Action::Install => {
            let lib = library(&a)?;
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

#[cfg(not(windows))]
fn write_atomically(file: &Path, text: &str) -> Result<(), String> {
    let aside = file.with_extension(format!("icd.{}", std::process::id()));
    std::fs::write(&aside, text).map_err(|e| format!("cannot write {}: {e}", aside.display()))?;
    std::fs::rename(&aside, file).map_err(|e| format!("cannot write {}: {e}", file.display()))
}
