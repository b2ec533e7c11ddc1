#!/usr/bin/env bash
# tests/threads.rs under ThreadSanitizer, by hand:
#
#   scripts/tsan.sh [COMMANDS]
#
# Builds the library and the thread tests with -Zsanitizer=thread on a
# nightly toolchain, the standard library rebuilt with it (-Zbuild-std;
# installs nightly and rust-src where missing), into target/tsan, and runs
# the four 16-thread tests with COMMANDS commands per run (default 4,000:
# TSan runs them about twenty times slower). The test executable exports
# TSan's runtime so that the library it opens at run time finds it. The
# Vulkan driver and the validation layer are not instrumented: where the
# other side of a report is ordered only through them (a batch completing
# on lavapipe's own threads), TSan cannot see that order.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

cd "$VKCL_ROOT"
commands="${1:-4000}"
setup_runtime
if ! rustup toolchain list | grep -q '^nightly'; then
    log "rustup toolchain install nightly"
    rustup toolchain install nightly --profile minimal
fi
rustup component add rust-src --toolchain nightly

target="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Zsanitizer=thread"
export CARGO_TARGET_DIR="$VKCL_ROOT/target/tsan"
log "build the library with ThreadSanitizer"
cargo +nightly build -Zbuild-std --target "$target" --lib
log "build tests/threads.rs with ThreadSanitizer"
cargo +nightly rustc -Zbuild-std --target "$target" --test threads \
    -- -C link-arg=-Wl,--export-dynamic
exe="$(ls -t "$CARGO_TARGET_DIR/$target/debug/deps/"threads-* | grep -v '\.d$' | head -1)"
log "tests/threads.rs, $commands commands per run"
TSAN_OPTIONS="halt_on_error=0 report_signal_unsafe=0 ${TSAN_OPTIONS:-}" \
    VKCL_TEST_THREAD_COMMANDS="$commands" "$exe" --test-threads 1
