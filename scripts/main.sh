#!/usr/bin/env bash
# Sets everything up, builds vkcl (release) and runs the main job: clinfo
# through the ICD loader, showing vkcl's platform and its devices, then a
# tiled matrix multiply on the default device, checked against the CPU and
# timed with event profiling.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

setup_runtime
log "building vkcl (release)"
cargo build --release --lib --example matmul
use_built_icd release

log "clinfo through the ICD loader (OCL_ICD_VENDORS=$OCL_ICD_VENDORS)"
clinfo

log "tiled matrix multiply on the default device"
"$VKCL_ROOT/target/release/examples/matmul" "${VKCL_MATMUL_N:-512}"
