#!/usr/bin/env bash
# The long reliability runs, by hand (CI runs the same tests smaller):
#
#   scripts/reliability.sh [CTS_BUILD]
#
# churn     every object kind created and released 10,000 times per way of
#           reaching vkcl (tests/churn.rs); vkcl's census of live OpenCL
#           objects, Vulkan objects and device memory must come back to
#           where it stood, and resident memory stay flat.
# threads   16 threads with contexts of their own and 16 sharing one
#           context, 400,000 checked commands per way (tests/threads.rs).
# limits    memory used up by buffers and images, printf beyond its
#           buffer, argument blocks at the limit, 10,000 commands without
#           a flush, a million events (tests/limits.rs, as CI runs it).
# faults    on GPUs: a kernel storing through a wild pointer loses the
#           device, not the process (tests/device_faults.rs).
# fuzz      the fuzz targets unguided, 20 times CI's cases
#           (fuzz/tests/bounded.rs; scripts/fuzz.sh for libFuzzer runs).
# CTS       with the path of an OpenCL-CTS build: test_basic in the CTS's
#           parallel mode (8 worker threads) against vkcl, without the
#           tests that share globals when run at once (see the README).
#
# The test binaries run with the Khronos validation layer failing on any
# message; VKCL_VALIDATION=0 turns it off (machines without the layer).
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

setup_runtime
log "cargo build --lib"
cargo build --lib
status=0
summary=()
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
# Runs a test binary with the given environment; its output goes to the
# terminal and to $out.
run_test() { # NAME ENV... -- CARGO-TEST-ARGS...
    local name="$1"; shift
    local env=()
    while [ "$1" != "--" ]; do env+=("$1"); shift; done
    shift
    env "${env[@]}" cargo test "$@" 2>&1 | tee "$out" >&2 || true
    if grep -q "test result: ok" "$out"; then
        summary+=("$name: passed")
    else
        summary+=("$name: FAILED"); status=1
    fi
}

log "churn: 10,000 rounds per way"
run_test churn "VKCL_TEST_CHURN_ROUNDS=${VKCL_TEST_CHURN_ROUNDS:-10000}" -- \
    --test churn -- --nocapture
grep -E "rounds; census" "$out" | sed 's/census {.*}; //' >&2 || true

log "threads: 400,000 commands per way"
run_test threads "VKCL_TEST_THREAD_COMMANDS=${VKCL_TEST_THREAD_COMMANDS:-200000}" -- \
    --test threads

log "limits"
run_test limits -- --test limits -- --nocapture

# CPU Vulkan drivers run kernels on the application's threads.
if ! cargo run --quiet -p vkcl-tool -- info 2>/dev/null | grep -E '^Device 0:' | grep -qiE 'llvmpipe|lavapipe|swiftshader'; then
    log "device faults"
    run_test faults VKCL_TEST_DEVICE_FAULTS=1 VKCL_WATCHDOG=10 -- --test device_faults -- --nocapture
else
    summary+=("faults: not run (CPU device: a wild store would be the process's own crash)")
fi

log "fuzz targets, unguided: 20 times CI's cases"
run_test fuzz "VKCL_FUZZ_CASES=${VKCL_FUZZ_CASES:-20}" "VKCL_FUZZ_SEED=${VKCL_FUZZ_SEED:-$RANDOM}" -- \
    -p vkcl-fuzz --test bounded -- --nocapture --test-threads 1
grep -E "^[a-z]+: [0-9]+ cases" "$out" >&2 || true

if [ -n "${1:-}" ]; then
    basic="$1/test_conformance/basic/test_basic"
    [ -x "$basic" ] || { echo "no $basic" >&2; exit 2; }
    log "cargo build --release --lib"
    cargo build --release --lib
    use_built_icd release
    # These tests keep per-test state (kernel text, a type table, a queue)
    # in globals: run at once, they use each other's.
    racy=(astype vector_creation vload_constant vload_global vload_local vload_private
        vstore_global vstore_local vstore_private progvar_func_scope progvar_prog_scope_init
        progvar_prog_scope_misc progvar_prog_scope_uninit bufferreadwriterect
        immutable_bufferreadwriterect)
    tests=()
    for t in $("$basic" --help 2>&1 | sed -n '/Test names/,$p' | tail -n +2); do
        [[ " ${racy[*]} " == *" $t "* ]] || tests+=("$t")
    done
    log "CTS test_basic --num-worker-threads 8 (${#tests[@]} tests)"
    (cd "$(dirname "$basic")" && CL_DEVICE_TYPE=all "$basic" "${tests[@]}" --num-worker-threads 8) >"$out" 2>&1 || true
    failed="$(grep -E "^[a-z0-9_]+ FAILED" "$out" | awk '{print $1}' | sort -u | tr '\n' ' ')"
    summary+=("CTS basic, 8 worker threads: $(grep -cE "^[a-z0-9_]+ passed" "$out") passed, failed: ${failed:-none}")
    [ -z "$failed" ] || status=1
fi

printf '%s\n' "${summary[@]}"
exit "$status"
