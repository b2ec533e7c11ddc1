#!/usr/bin/env bash
# Coverage-guided fuzzing of what applications hand to vkcl, by hand
# (CI runs the same targets unguided and small: fuzz/tests/bounded.rs):
#
#   scripts/fuzz.sh [--runs N] [--cts CTS_CHECKOUT] [--build-only] [TARGET...]
#
# Targets (fuzz/fuzz_targets/): il, binary, rewrite, options, source
# (default: all five). Installs a nightly toolchain and cargo-fuzz where
# missing, writes seed corpora to target/fuzz/corpus/<target> (the test
# suite's kernels; the CTS's SPIR-V assembly given a CTS checkout), runs
# each target with libFuzzer for N cases (default 1,000,000) and prints
# one line per target: cases, findings, corpus size, time. Findings are
# kept in target/fuzz/artifacts/<target>/ (`cargo +nightly fuzz run
# <target> --features libfuzzer <file>` replays one).
#
# Rewritten modules the validator refuses never reach the driver; with
# VKCL_FUZZ_STRICT=1 they count as findings too, to find rewriter gaps.
# Lavapipe's process grows by about 85 KB with every compute pipeline it
# compiles (destroyed or not), so on CPU devices long runs stop at shader
# modules (VKCL_FUZZ_PIPELINES=0) unless the environment says otherwise;
# CI's bounded run and GPU runs make the pipelines.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

runs=1000000
cts=""
build_only=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --cts) cts="$2"; shift 2 ;;
        --build-only) build_only=1; shift ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(il binary rewrite options source)

setup_runtime
if ! rustup toolchain list | grep -q '^nightly'; then
    log "rustup toolchain install nightly"
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    log "cargo install cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

fuzz_dir="$VKCL_ROOT/target/fuzz"
log "seed corpora"
cargo run --quiet -p vkcl-fuzz --example seeds -- "$fuzz_dir/corpus" ${cts:+"$cts"}

# No sanitizer: vkcl's unsafe code is at the C boundary, which the
# harness calls correctly; panics (debug assertions and overflow checks
# on), aborts, hangs and validation messages are what is looked for.
# Without LTO: the release profile's thin LTO leaves vkcl's own code
# without coverage counters, and libFuzzer then sees only the harness.
export CARGO_PROFILE_RELEASE_LTO=false
fuzz=(cargo +nightly fuzz run --features libfuzzer --sanitizer none --debug-assertions)
log "cargo fuzz build"
cargo +nightly fuzz build --features libfuzzer --sanitizer none --debug-assertions
[ "$build_only" = 1 ] && exit 0

if [ -z "${VKCL_FUZZ_PIPELINES:-}" ] && cargo run --quiet -p vkcl-tool -- info 2>/dev/null \
    | grep -E '^Device 0:' | grep -qiE 'llvmpipe|lavapipe|swiftshader'; then
    export VKCL_FUZZ_PIPELINES=0
fi
status=0
summary=()
for t in "${targets[@]}"; do
    log "fuzzing $t: $runs cases"
    mkdir -p "$fuzz_dir/artifacts/$t"
    out="$fuzz_dir/$t.log"
    start=$(date +%s)
    "${fuzz[@]}" "$t" "$fuzz_dir/corpus/$t" -- \
        -runs="$runs" -timeout=60 -rss_limit_mb=8192 -max_len=1048576 \
        -print_final_stats=1 -artifact_prefix="$fuzz_dir/artifacts/$t/" \
        >"$out" 2>&1 || status=1
    secs=$(( $(date +%s) - start ))
    cases=$(grep -E '^stat::number_of_executed_units' "$out" | awk '{print $2}')
    findings=$(find "$fuzz_dir/artifacts/$t" -type f | wc -l)
    corpus=$(find "$fuzz_dir/corpus/$t" -type f | wc -l)
    summary+=("$t: ${cases:-?} cases, $findings findings, corpus $corpus, ${secs} s")
done
printf '%s\n' "${summary[@]}"
exit "$status"
