//! Rewrites already made, for programs built again from the same SPIR-V:
//! the same source built into a new program object, a binary the
//! application kept from an earlier run (as hashcat does), a test suite
//! building one source many times. A rewrite is a pure function of the
//! module, the kernel, the device's capabilities and the options, and
//! large kernels take hundreds of milliseconds, so a second build reuses
//! the first one's rewrites.
//!
//! Two layers: this process's memo, and the disk cache (`rewrite-*`
//! entries of [`crate::compiler::cache`], postcard-encoded), whose keys add
//! the digest of the compiler's sources (made by `build.rs`) and the
//! libclc library file, so that a rewrite made by other code is never
//! taken.

use std::collections::{HashMap, VecDeque};
use std::hash::Hasher;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use crate::compiler::cache::{self, fnv1a};
use crate::compiler::spirv::input::reflect::KernelInfo;
use crate::compiler::spirv::p2_builtins::libclc;
use crate::compiler::spirv::p5_vulkan::finish::DeviceCaps;
use crate::compiler::spirv::p5_vulkan::images::ImageClass;
use crate::compiler::spirv::{self as rewriter, Rewritten};

/// The memo keeps at most this many SPIR-V words (16 MiB, input modules
/// and rewrites together), the oldest rewrites going first: it lives in
/// the application's process, and the disk cache holds the rest.
const KEEP_WORDS: usize = 4 << 20;

/// An input module: its length and three hashes of its words (two FNV-1a
/// variants and SipHash). Within the process a hit is also checked word
/// for word; on disk these stand for the module, 192 bits that put an
/// accidental match out of reach. (A toolchain whose SipHash differs only
/// misses entries made by another.)
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ModuleId {
    words: usize,
    hashes: [u64; 3],
}

impl ModuleId {
    pub fn of(spirv: &[u32]) -> ModuleId {
        let mut sip = std::hash::DefaultHasher::new();
        let (mut a, mut b) = (0xcbf2_9ce4_8422_2325u64, 0x6c62_272e_07bb_0142u64);
        for w in spirv {
            let bytes = w.to_le_bytes();
            a = fnv1a(&bytes, a);
            b = fnv1a(&bytes, b.rotate_left(29));
            sip.write_u32(*w);
        }
        ModuleId {
            words: spirv.len(),
            hashes: [a, b, sip.finish()],
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = (self.words as u64).to_le_bytes().to_vec();
        for h in self.hashes {
            out.extend_from_slice(&h.to_le_bytes());
        }
        out
    }
}

/// Everything a rewrite depends on besides the module's words.
type Key = (ModuleId, String);

#[derive(Default)]
struct Memo {
    /// Each input module once, shared by its kernels' entries and checked
    /// word for word on every hit.
    modules: HashMap<ModuleId, Arc<[u32]>>,
    entries: HashMap<Key, (Arc<[u32]>, Arc<Rewritten>)>,
    order: VecDeque<Key>,
    words: usize,
}

static MEMO: Mutex<Option<Memo>> = Mutex::new(None);

fn key(
    id: ModuleId,
    kernel: &KernelInfo,
    caps: &DeviceCaps,
    options: &rewriter::Options,
    classes: &[ImageClass],
) -> Key {
    (
        id,
        format!("{kernel:?}\n{caps:?}\n{options:?}\n{classes:?}"),
    )
}

/// `kernel` of `spirv` (whose id is `id`) rewritten for a device with
/// `caps`: made now, or the rewrite made earlier from the same inputs.
/// Failures are not kept.
pub fn rewrite(
    spirv: &[u32],
    id: ModuleId,
    kernel: &KernelInfo,
    caps: &DeviceCaps,
    options: rewriter::Options,
    classes: &[ImageClass],
) -> Result<Arc<Rewritten>, String> {
    rewrite_in(
        cache::dir().as_deref(),
        spirv,
        id,
        kernel,
        caps,
        options,
        classes,
    )
}

/// The rewrite [`rewrite`] would give, if the memo holds it: nothing is
/// made or read from disk.
pub fn find(
    spirv: &[u32],
    id: ModuleId,
    kernel: &KernelInfo,
    caps: &DeviceCaps,
    options: &rewriter::Options,
    classes: &[ImageClass],
) -> Option<Arc<Rewritten>> {
    lookup(&key(id, kernel, caps, options, classes), spirv)
}

/// How many modules' kernel lists [`kernels`] keeps.
const KERNEL_LISTS: usize = 16;

/// The kernels of the module `spirv` (whose id is `id`), as `reflect`
/// finds them: found now, or the list found for the same module before
/// (a build from source whose front end output comes from the cache then
/// parses nothing). Failures are not kept.
pub fn kernels(
    spirv: &[u32],
    id: ModuleId,
    reflect: impl FnOnce(&[u32]) -> Result<Vec<KernelInfo>, String>,
) -> Result<Vec<KernelInfo>, String> {
    type Lists = VecDeque<(ModuleId, Arc<[u32]>, Vec<KernelInfo>)>;
    static LISTS: Mutex<Lists> = Mutex::new(VecDeque::new());
    let lists = || LISTS.lock().unwrap_or_else(|e| e.into_inner());
    let hit = lists()
        .iter()
        .find(|(i, words, _)| *i == id && **words == *spirv)
        .map(|(_, _, k)| k.clone());
    if let Some(k) = hit {
        return Ok(k);
    }
    let found = reflect(spirv)?;
    let mut lists = lists();
    if lists.len() == KERNEL_LISTS {
        lists.pop_front();
    }
    lists.push_back((id, spirv.into(), found.clone()));
    Ok(found)
}

/// [`rewrite`] with the disk cache in `dir` (none: the memo only).
fn rewrite_in(
    dir: Option<&Path>,
    spirv: &[u32],
    id: ModuleId,
    kernel: &KernelInfo,
    caps: &DeviceCaps,
    options: rewriter::Options,
    classes: &[ImageClass],
) -> Result<Arc<Rewritten>, String> {
    let key = key(id, kernel, caps, &options, classes);
    if let Some(found) = lookup(&key, spirv) {
        return Ok(found);
    }
    if let Some(found) = dir.and_then(|d| from_disk(d, &key)) {
        log::debug!(target: "vkcl::cache", "{}: rewrite from the disk cache", kernel.name);
        let found = Arc::new(found);
        keep(key, spirv, &found);
        return Ok(found);
    }
    let rewritten = Arc::new(rewriter::rewrite_for_images(
        spirv, kernel, caps, options, classes,
    )?);
    if let Some(d) = dir {
        to_disk(d, &key, &rewritten);
    }
    keep(key, spirv, &rewritten);
    Ok(rewritten)
}

/// The disk cache's key for `key`.
fn disk_key(key: &Key) -> cache::Key {
    static LIBCLC: OnceLock<String> = OnceLock::new();
    let mut k = cache::Key::new("rewrite");
    k.add(env!("VKCL_COMPILER_DIGEST").as_bytes());
    k.add(LIBCLC.get_or_init(libclc::identity).as_bytes());
    k.add(&key.0.bytes());
    k.add(key.1.as_bytes());
    k
}

fn from_disk(dir: &Path, key: &Key) -> Option<Rewritten> {
    let blob = cache::load_blob_in(dir, "rewrite", &disk_key(key))?;
    postcard::from_bytes(&blob)
        .inspect_err(
            |e| log::info!(target: "vkcl::cache", "ignoring a rewrite the cache holds: {e}"),
        )
        .ok()
}

fn to_disk(dir: &Path, key: &Key, rewritten: &Rewritten) {
    match postcard::to_stdvec(rewritten) {
        Ok(blob) => cache::store_blob_in(dir, "rewrite", &disk_key(key), &blob),
        Err(e) => log::debug!(target: "vkcl::cache", "cannot encode a rewrite: {e}"),
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<Memo>> {
    MEMO.lock().unwrap_or_else(|e| e.into_inner())
}

fn lookup(key: &Key, spirv: &[u32]) -> Option<Arc<Rewritten>> {
    let memo = lock();
    let (module, rewritten) = memo.as_ref()?.entries.get(key)?;
    // A hash shared by two modules is a miss, never the other's rewrite.
    (**module == *spirv).then(|| rewritten.clone())
}

fn keep(key: Key, spirv: &[u32], rewritten: &Arc<Rewritten>) {
    let mut guard = lock();
    let memo = guard.get_or_insert_with(Memo::default);
    let module = match memo.modules.get(&key.0) {
        Some(m) if **m == *spirv => m.clone(),
        // Another module with the same hash keeps its place; this
        // rewrite is not kept.
        Some(_) => return,
        None => {
            let m: Arc<[u32]> = spirv.into();
            memo.words += m.len();
            memo.modules.insert(key.0, m.clone());
            m
        }
    };
    memo.words += rewritten.words.len();
    if let Some((_, old)) = memo
        .entries
        .insert(key.clone(), (module, rewritten.clone()))
    {
        memo.words -= old.words.len();
    } else {
        memo.order.push_back(key);
    }
    while memo.words > KEEP_WORDS && memo.order.len() > 1 {
        let Some(oldest) = memo.order.pop_front() else {
            break;
        };
        let Some((module, old)) = memo.entries.remove(&oldest) else {
            continue;
        };
        memo.words -= old.words.len();
        // The memo's own reference and this one: no entry uses it now.
        if Arc::strong_count(&module) == 2 {
            memo.modules.remove(&oldest.0);
            memo.words -= module.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::frontend;
    use crate::compiler::spirv::input::reflect;

    /// A second rewrite of the same kernel from the same module is the
    /// first one, not a new one; another device's is new; another module
    /// under the same id is never given this one's (in the process, where
    /// modules are compared word for word).
    #[test]
    fn the_same_inputs_give_the_rewrite_made_before() {
        let source = "kernel void memo_test(global int *p) { p[get_global_id(0)] += 7; }";
        let Some(spirv) = frontend::build_for_test(source, false) else {
            return;
        };
        let spirv = &spirv;
        let module = reflect::load(spirv).unwrap();
        let kernel = &reflect::kernels(&module).unwrap()[0];
        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        let id = ModuleId::of(spirv);
        let opts = rewriter::Options::default();
        let first = rewrite_in(None, spirv, id, kernel, &caps, opts, &[]).unwrap();
        let again = rewrite_in(None, spirv, id, kernel, &caps, opts, &[]).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other = DeviceCaps {
            max_push_constants: 256,
            ..caps
        };
        let for_other = rewrite_in(None, spirv, id, kernel, &other, opts, &[]).unwrap();
        assert!(!Arc::ptr_eq(&first, &for_other));
        // Another module under the same id (a hash collision) is not
        // given this module's rewrite.
        let mut changed = spirv.clone();
        let last = changed.len() - 1;
        changed.push(changed[last]);
        changed[last] = 0x0001_0000 | 8; // OpNop, one word
        let collided = rewrite_in(None, &changed, id, kernel, &caps, opts, &[]);
        assert!(!collided.is_ok_and(|r| *r == *first));
    }

    /// A module's kernel list is found once; the same words give it again
    /// without reflecting, other words under the same id do not; `find`
    /// sees only what the memo holds.
    #[test]
    fn kernel_lists_and_found_rewrites() {
        let source = "kernel void list_test(global int *p) { p[0] = 3; }";
        let Some(spirv) = frontend::build_for_test(source, false) else {
            return;
        };
        let id = ModuleId::of(&spirv);
        let reflected = |w: &[u32]| reflect::kernels(&reflect::load(w)?);
        let first = kernels(&spirv, id, reflected).unwrap();
        assert_eq!(first[0].name, "list_test");
        let again = kernels(&spirv, id, |_| Err("reflected again".into())).unwrap();
        assert_eq!(again, first);
        let mut changed = spirv.clone();
        changed.push(0x0001_0000 | 8); // OpNop
        assert!(kernels(&changed, id, |_| Err("another module".into())).is_err());

        let caps = DeviceCaps {
            max_push_constants: 128,
            ..Default::default()
        };
        let opts = rewriter::Options::default();
        let kernel = &first[0];
        assert!(find(&spirv, id, kernel, &caps, &opts, &[]).is_none());
        let made = rewrite_in(None, &spirv, id, kernel, &caps, opts, &[]).unwrap();
        let found = find(&spirv, id, kernel, &caps, &opts, &[]).unwrap();
        assert!(Arc::ptr_eq(&made, &found));
    }

    /// A rewrite stored on disk comes back whole; another key, or a
    /// damaged entry, gives nothing.
    #[test]
    fn rewrites_round_trip_through_the_disk_cache() {
        // Push constants, printf, scratch, module data and images: every
        // part of a rewrite.
        let source = "constant int table[4] = {1, 2, 3, 4};\n\
                      kernel void disk_test(global int *p, read_only image2d_t img, sampler_t s) {\n\
                        int a[8];\n\
                        for (int i = 0; i < 8; i++) a[i] = p[i] * table[i & 3];\n\
                        float4 c = read_imagef(img, s, (int2)(0, 0));\n\
                        p[0] = a[p[1] & 7] + (int)c.x;\n\
                        printf(\"%d %s\\n\", p[0], \"x\");\n\
                      }";
        let Some(spirv) = frontend::build_for_test(source, true) else {
            return;
        };
        let spirv = &spirv;
        let module = reflect::load(spirv).unwrap();
        let kernel = &reflect::kernels(&module).unwrap()[0];
        let caps = DeviceCaps {
            max_push_constants: 128,
            int8: true,
            int16: true,
            storage8: true,
            storage16: true,
            ..Default::default()
        };
        let id = ModuleId::of(spirv);
        let opts = rewriter::Options::default();
        let classes = [ImageClass::Float];
        let made = rewriter::rewrite_for_images(spirv, kernel, &caps, opts, &classes).unwrap();
        assert!(!made.printf.is_empty() && made.data.is_some() && !made.images.bindings.is_empty());
        let dir = std::env::temp_dir().join(format!("vkcl-memo-{}", crate::compiler::unique_tag()));
        let k = key(id, kernel, &caps, &opts, &classes);
        assert_eq!(from_disk(&dir, &k), None);
        to_disk(&dir, &k, &made);
        assert_eq!(from_disk(&dir, &k).as_ref(), Some(&made));
        let other = key(id, kernel, &caps, &opts, &[ImageClass::Int]);
        assert_eq!(from_disk(&dir, &other), None);
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let mut data = std::fs::read(entry.path()).unwrap();
            let middle = data.len() / 2;
            data[middle] ^= 0x40;
            std::fs::write(entry.path(), data).unwrap();
        }
        assert_eq!(from_disk(&dir, &k), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
