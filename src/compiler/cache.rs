//! The disk cache of front-end results, keyed by everything that decides
//! the output: source, headers, options, device macros, the front end's
//! version and vkcl's own (its version and the digest of its compiler's
//! sources).
//!
//! Entries live in `$VKCL_CACHE_DIR`, else `$XDG_CACHE_HOME/vkcl`, else
//! `~/.cache/vkcl` (on Windows `%LOCALAPPDATA%\vkcl\cache`); `VKCL_CACHE=0`
//! turns the cache off. An entry holds its
//! whole key and a checksum: a mismatched or corrupt entry is ignored (and
//! rebuilt), never trusted. Writes go to a temporary file renamed into
//! place, so readers never see half an entry.

use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"VKCLCC01";

/// Everything a cached result depends on.
pub struct Key {
    bytes: Vec<u8>,
}

impl Key {
    pub fn new(kind: &str) -> Key {
        let mut k = Key { bytes: Vec::new() };
        k.add(env!("CARGO_PKG_VERSION").as_bytes());
        // Results are only as good as the code that made them: the front
        // end's post-processing (in src/compiler) changes between builds
        // of one version too.
        k.add(env!("VKCL_COMPILER_DIGEST").as_bytes());
        k.add(kind.as_bytes());
        k
    }

    /// Adds one length-prefixed part.
    pub fn add(&mut self, part: &[u8]) {
        self.bytes
            .extend_from_slice(&(part.len() as u64).to_le_bytes());
        self.bytes.extend_from_slice(part);
    }

    fn file_name(&self) -> String {
        format!(
            "{:016x}{:016x}.bin",
            fnv1a(&self.bytes, 0xcbf2_9ce4_8422_2325),
            fnv1a(&self.bytes, 0x6c62_272e_07bb_0142)
        )
    }
}

/// 64-bit FNV-1a from `seed`.
pub fn fnv1a(data: &[u8], seed: u64) -> u64 {
    data.iter().fold(seed, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// The cache directory, or none when `VKCL_CACHE=0`.
pub fn dir() -> Option<PathBuf> {
    if std::env::var("VKCL_CACHE").is_ok_and(|v| v == "0") {
        return None;
    }
    if let Some(d) = std::env::var_os("VKCL_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("vkcl"));
    }
    if cfg!(windows) {
        return std::env::var_os("LOCALAPPDATA")
            .map(|d| PathBuf::from(d).join("vkcl").join("cache"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("vkcl"))
}

fn encode(key: &Key, spirv: &[u32], log: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.bytes.len() + spirv.len() * 4 + log.len() + 48);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&key.bytes);
    out.extend_from_slice(&(spirv.len() as u64).to_le_bytes());
    for w in spirv {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&(log.len() as u64).to_le_bytes());
    out.extend_from_slice(log.as_bytes());
    let sum = fnv1a(&out, 0xcbf2_9ce4_8422_2325);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn decode(key: &Key, data: &[u8]) -> Option<(Vec<u32>, String)> {
    let body = data.get(..data.len().checked_sub(8)?)?;
    let sum = u64::from_le_bytes(data[body.len()..].try_into().ok()?);
    if fnv1a(body, 0xcbf2_9ce4_8422_2325) != sum || !body.starts_with(MAGIC) {
        return None;
    }
    let mut at = MAGIC.len();
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = body.get(at..at.checked_add(n)?)?;
        at += n;
        Some(s)
    };
    let len = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize;
    let key_len = len(take(8)?);
    if take(key_len)? != key.bytes.as_slice() {
        return None;
    }
    let words = len(take(8)?);
    let spirv = take(words.checked_mul(4)?)?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    let log_len = len(take(8)?);
    let log = String::from_utf8(take(log_len)?.to_vec()).ok()?;
    Some((spirv, log))
}

/// A cached result for `key`, if a sound one exists.
pub fn load(key: &Key) -> Option<(Vec<u32>, String)> {
    let path = dir()?.join(key.file_name());
    let data = std::fs::read(&path).ok()?;
    match decode(key, &data) {
        Some(hit) => {
            log::debug!(target: "vkcl::cache", "cache hit {}", path.display());
            Some(hit)
        }
        None => {
            log::info!(target: "vkcl::cache", "ignoring a corrupt or mismatched cache entry {}", path.display());
            None
        }
    }
}

/// Stores a result; failures only cost the next build its speed.
pub fn store(key: &Key, spirv: &[u32], log: &str) {
    let Some(dir) = dir() else { return };
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!(".{}.{}.tmp", key.file_name(), super::unique_tag()));
        std::fs::write(&tmp, encode(key, spirv, log))?;
        std::fs::rename(&tmp, dir.join(key.file_name()))
    };
    if let Err(e) = write() {
        log::debug!(target: "vkcl::cache", "cannot write a cache entry in {}: {e}", dir.display());
    }
}

const BLOB_MAGIC: &[u8; 8] = b"VKCLBL01";

/// A blob entry (such as a Vulkan pipeline cache): the key, the data and a
/// checksum, under a file name that starts with `prefix`.
fn blob_path(dir: &Path, prefix: &str, key: &Key) -> PathBuf {
    dir.join(format!("{prefix}-{}", key.file_name()))
}

fn encode_blob(key: &Key, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.bytes.len() + data.len() + 32);
    out.extend_from_slice(BLOB_MAGIC);
    out.extend_from_slice(&(key.bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&key.bytes);
    out.extend_from_slice(data);
    let sum = fnv1a(&out, 0xcbf2_9ce4_8422_2325);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn decode_blob(key: &Key, data: &[u8]) -> Option<Vec<u8>> {
    let body = data.get(..data.len().checked_sub(8)?)?;
    let sum = u64::from_le_bytes(data[body.len()..].try_into().ok()?);
    if fnv1a(body, 0xcbf2_9ce4_8422_2325) != sum || !body.starts_with(BLOB_MAGIC) {
        return None;
    }
    let at = BLOB_MAGIC.len();
    let key_len = u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?) as usize;
    let key_end = (at + 8).checked_add(key_len)?;
    if body.get(at + 8..key_end)? != key.bytes.as_slice() {
        return None;
    }
    Some(body[key_end..].to_vec())
}

/// The blob stored for `key` under `prefix`, if a sound one exists.
pub fn load_blob(prefix: &str, key: &Key) -> Option<Vec<u8>> {
    load_blob_in(&dir()?, prefix, key)
}

/// [`load_blob`] from the cache directory `dir`.
pub fn load_blob_in(dir: &Path, prefix: &str, key: &Key) -> Option<Vec<u8>> {
    let path = blob_path(dir, prefix, key);
    let data = std::fs::read(&path).ok()?;
    let blob = decode_blob(key, &data);
    if blob.is_none() {
        log::info!(target: "vkcl::cache", "ignoring a corrupt or mismatched cache entry {}", path.display());
    }
    blob
}

/// Stores a blob; failures only cost the next run its speed.
pub fn store_blob(prefix: &str, key: &Key, data: &[u8]) {
    if let Some(dir) = dir() {
        store_blob_in(&dir, prefix, key, data);
    }
}

/// [`store_blob`] into the cache directory `dir`.
pub fn store_blob_in(dir: &Path, prefix: &str, key: &Key, data: &[u8]) {
    let path = blob_path(dir, prefix, key);
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let name = path.file_name().expect("a file name").to_string_lossy();
        let tmp = dir.join(format!(".{name}.{}.tmp", super::unique_tag()));
        std::fs::write(&tmp, encode_blob(key, data))?;
        std::fs::rename(&tmp, &path)
    };
    if let Err(e) = write() {
        log::debug!(target: "vkcl::cache", "cannot write {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_round_trip_and_corruption() {
        let mut key = Key::new("blob");
        key.add(b"device");
        let data = [1u8, 2, 3, 4, 5];
        let enc = encode_blob(&key, &data);
        assert_eq!(decode_blob(&key, &enc).as_deref(), Some(&data[..]));
        let mut other = Key::new("blob");
        other.add(b"another device");
        assert_eq!(decode_blob(&other, &enc), None);
        let mut bad = enc.clone();
        bad[20] ^= 1;
        assert_eq!(decode_blob(&key, &bad), None);
        assert_eq!(decode_blob(&key, &enc[..4]), None);
    }

    #[test]
    fn round_trip_and_corruption() {
        let mut k = Key::new("test");
        k.add(b"source");
        let data = encode(&k, &[1, 2, 3], "log");
        assert_eq!(decode(&k, &data), Some((vec![1, 2, 3], "log".into())));
        // Another key with the same file is not accepted.
        let mut other = Key::new("test");
        other.add(b"sourcf");
        assert_eq!(decode(&other, &data), None);
        // Any flipped byte or truncation is caught.
        for i in [0, 10, data.len() / 2, data.len() - 1] {
            let mut bad = data.clone();
            bad[i] ^= 1;
            assert_eq!(decode(&k, &bad), None, "byte {i}");
        }
        assert_eq!(decode(&k, &data[..data.len() - 3]), None);
        assert_eq!(decode(&k, &[]), None);
    }
}
