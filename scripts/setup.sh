#!/usr/bin/env bash
# Shared set-up for scripts/main.sh and scripts/test.sh: installs the system
# packages vkcl needs (only those missing), makes sure a Rust toolchain is
# there, and defines helpers. Sourced, not run.

set -euo pipefail

VKCL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export VKCL_ROOT

# Each step's line carries the wall-clock time, so that a CI log shows
# where its minutes go.
log() { printf '\033[1m==> %s %s\033[0m\n' "$(date +%T)" "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=0
apt_install() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$apt_updated" -eq 0 ]; then
        log "apt-get update"
        as_root apt-get update -qq
        apt_updated=1
    fi
    log "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The OpenCL C front end: the oldest clang/llvm-spirv/libclc trio the
# distribution carries from 15 up (Debian 12 has 15, Ubuntu 24.04 17 and 18).
frontend_version() {
    local v
    for v in 15 16 17 18 19; do
        if dpkg-query -W -f='${Status}' "llvm-spirv-$v" 2>/dev/null | grep -q "install ok installed"; then
            echo "$v"; return
        fi
    done
    [ "$apt_updated" -eq 0 ] && { as_root apt-get update -qq; apt_updated=1; }
    for v in 15 16 17 18 19; do
        if apt-cache show "clang-$v" "llvm-spirv-$v" "libclc-$v" >/dev/null 2>&1; then
            echo "$v"; return
        fi
    done
    echo "no clang/llvm-spirv/libclc packages between 15 and 19 found" >&2
    return 1
}

# Packages for building and running vkcl (lavapipe is the Vulkan driver on
# machines without a GPU).
setup_runtime() {
    command -v apt-get >/dev/null || { echo "scripts/setup.sh needs a Debian or Ubuntu system" >&2; exit 1; }
    apt_install ca-certificates curl gcc g++ libc6-dev pkg-config \
        libvulkan1 mesa-vulkan-drivers vulkan-validationlayers vulkan-tools \
        spirv-tools ocl-icd-libopencl1 clinfo
    local v
    v="$(frontend_version)"
    apt_install "clang-$v" "llvm-spirv-$v" "libclc-$v"
    setup_rust
}

setup_rust() {
    if ! command -v cargo >/dev/null; then
        [ -x "$HOME/.cargo/bin/cargo" ] || {
            log "installing Rust with rustup"
            curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
        }
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
}

# Writes an ICD file naming the freshly built library and points the ICD
# loader at it (and only at it).
use_built_icd() {
    local profile="$1"
    local lib="$VKCL_ROOT/target/$profile/libvkcl.so"
    [ -f "$lib" ] || { echo "missing $lib: build first" >&2; exit 1; }
    mkdir -p "$VKCL_ROOT/target/$profile/icd"
    echo "$lib" > "$VKCL_ROOT/target/$profile/icd/vkcl.icd"
    export OCL_ICD_VENDORS="$VKCL_ROOT/target/$profile/icd"
}

cd "$VKCL_ROOT"
