#!/usr/bin/env bash
# Sets everything up and runs the whole test suite: formatting, clippy, unit
# and integration tests (through the ICD loader and by direct linking, with
# the Khronos validation layer failing on any message), the multi-device
# matrix multiply example on two devices, the quick part of
# the application corpus (scripts/apps.sh --quick), and the Windows and
# 64-bit ARM builds run under Wine and qemu (scripts/emulated.sh).
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

setup_runtime
apt_install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
if command -v rustup >/dev/null; then
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
    rustup target add x86_64-pc-windows-gnu aarch64-unknown-linux-gnu >/dev/null
fi

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

log "cargo build (the shared library the integration tests load)"
cargo build --lib
log "cargo test"
cargo test --workspace --no-fail-fast

log "examples/matmul_split over two devices (each Vulkan device offered twice)"
(
    use_built_icd debug
    VKCL_DEVICE_REPEAT=2 VKCL_VALIDATION=abort cargo run --quiet --example matmul_split -- 128
)

# The quick corpus runs on the debug library the tests used: a release
# build would compile SPIRV-Tools' C++ once more (several minutes on two
# cores) for a run that takes about as long either way.
log "applications (scripts/apps.sh --quick, on the debug library)"
(
    use_built_icd debug
    bash "$VKCL_ROOT/scripts/apps.sh" --quick
)

log "64-bit ARM under qemu and Windows under Wine (scripts/emulated.sh)"
bash "$VKCL_ROOT/scripts/emulated.sh"

log "all checks passed"
