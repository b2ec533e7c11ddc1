#!/usr/bin/env bash
# Sets everything up, builds vkcl (release) and runs the main job: clinfo
# through the ICD loader, showing vkcl's platform and its devices.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

setup_runtime
log "building vkcl (release)"
cargo build --release --lib
use_built_icd release

log "clinfo through the ICD loader (OCL_ICD_VENDORS=$OCL_ICD_VENDORS)"
clinfo
