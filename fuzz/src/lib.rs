//! Fuzz targets for what applications hand to vkcl: SPIR-V IL, program
//! binaries, OpenCL C sources, build options, and the rewriter itself.
//!
//! Each target is a function of bytes that must return normally. Inputs
//! vkcl rejects give the specification's error code (with a build log
//! where a build failed); inputs it accepts build, and their kernels
//! become Vulkan shader modules and pipelines. A panic anywhere in vkcl
//! (the API layer turns one into `CL_OUT_OF_RESOURCES`, but it is still a
//! bug), a hang, or a message from the Khronos validation layer is a
//! finding.
//!
//! The same functions run three ways: under libFuzzer (`fuzz_targets/`,
//! `scripts/fuzz.sh`, coverage-guided, for long runs), unguided over the
//! seeds and the structural mutator in this crate's tests (the bounded run
//! CI makes), and as regression tests for what the fuzzers found.

pub mod mutate;
pub mod seeds;
pub mod session;
pub mod targets;

/// The panic hook that makes every panic a finding, even one vkcl's API
/// layer contains: the process aborts with the panic's message.
pub fn abort_on_panic() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        std::process::abort();
    }));
}

/// A libFuzzer custom mutator's work for inputs of one kind: `data[..size]`
/// mutated in place by `structural` (into at most `max_size` bytes), or by
/// libFuzzer's own byte mutations (`bytes`) for one case in five and
/// where `structural` cannot read the input. The new size.
pub fn custom_mutate(
    data: &mut [u8],
    size: usize,
    max_size: usize,
    seed: u32,
    structural: impl Fn(&[u8], &mut mutate::Rng) -> Option<Vec<u8>>,
    bytes: impl Fn(&mut [u8], usize, usize) -> usize,
) -> usize {
    let mut rng = mutate::Rng::new(u64::from(seed));
    if rng.chance(80)
        && let Some(out) = structural(&data[..size], &mut rng).filter(|o| o.len() <= max_size)
    {
        data[..out.len()].copy_from_slice(&out);
        return out.len();
    }
    bytes(data, size, max_size)
}

/// Structural mutation of a SPIR-V input, in bytes.
pub fn mutate_spirv(data: &[u8], rng: &mut mutate::Rng) -> Option<Vec<u8>> {
    let words = mutate::to_words(data)?;
    mutate::mutate_module(&words, rng).map(|w| mutate::to_bytes(&w))
}
