#!/usr/bin/env bash
# piglit's OpenCL tests (the distribution's piglit package: about 700 API
# tests and kernels of built-ins, vector loads and stores, atomics and
# build options, each checked against its expected results), by hand:
#
#   scripts/piglit.sh [PIGLIT-RUN-ARGS...]      e.g. -j 2, or -t vstore
#
# Runs `piglit run cl` against the freshly built library (release), or
# against the OpenCL in OCL_ICD_VENDORS when that is set, prints piglit's
# summary and every test that did not pass with the lines of its output
# that say why, and exits non-zero when a test fails, crashes or times out other
# than those listed below, whose expectations vkcl does not share:
#
# api@clgetcommandqueueinfo    CL_QUEUE_SIZE of a host queue: OpenCL 2.0
#                              and later answer CL_INVALID_COMMAND_QUEUE
#                              (as PoCL does); piglit expects a size.
# api@clcreateprogramwithbinary  clCreateKernel on a program made from a
#                              binary but not built: the specification
#                              asks for a build first (PoCL fails it too).
# api@clgetextensionfunctionaddressforplatform  an invalid platform: the
#                              ICD loader, not vkcl, answers it (PoCL
#                              fails it too).
# api@clgetdeviceinfo          piglit wants "OpenCL 1.1" inside the
#                              version strings of an OpenCL 3.0 device.
# program@build@include-directories  its header is found only from the
#                              piglit source tree, which the package lacks.
# program@execute@amdgcn-f32-inline-immediates  expects denormal results
#                              flushed under -cl-denorms-are-zero, which
#                              the specification allows but does not
#                              require.
# api@cllinkprogram            two objects defining the same function: vkcl
#                              links them (each object keeps its own),
#                              since C99 inline functions have an external
#                              body in every object; kernels and variables
#                              defined twice do fail.
#
# Two may time out on CPU devices: the float tgamma and erfc built-ins,
# which vkcl computes in double precision there, run about 100 s on
# lavapipe against piglit's 60 s (and pass given the time).
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

expected=(api@clgetcommandqueueinfo api@clcreateprogramwithbinary
    api@clgetextensionfunctionaddressforplatform api@clgetdeviceinfo
    program@build@include-directories program@execute@amdgcn-f32-inline-immediates
    api@cllinkprogram)

slow=(program@execute@builtin@builtin-float-tgamma-1.0.generated
    program@execute@builtin@builtin-float-erfc-1.0.generated)

setup_runtime
apt_install piglit python3
if [ -z "${OCL_ICD_VENDORS:-}" ]; then
    log "cargo build --release --lib"
    cargo build --release --lib
    use_built_icd release
fi
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT
log "piglit run cl (OpenCL platforms: $OCL_ICD_VENDORS)"
piglit run cl "$@" "$results/out" >"$results/run.log" 2>&1 || true
# Each test that did not pass: its result, name and why.
python3 - "$results" "${expected[*]}" "${slow[*]}" <<'PY'
import bz2, json, os, sys

results, expected, slow = sys.argv[1], set(sys.argv[2].split()), set(sys.argv[3].split())
path = os.path.join(results, "out", "results.json.bz2")
if not os.path.exists(path):
    print("piglit wrote no results:")
    print(open(os.path.join(results, "run.log")).read()[-2000:])
    sys.exit(1)
tests = json.load(bz2.open(path))["tests"]
counts, unexpected = {}, []
for name, t in sorted(tests.items()):
    r = t["result"]
    counts[r] = counts.get(r, 0) + 1
    if r in ("pass", "skip"):
        continue
    out = [l for l in (t.get("out", "") + t.get("err", "")).splitlines()
           if l.strip() and not l.startswith("#")]
    telling = [l for l in out if any(w in l.lower() for w in ("fail", "error", "expect"))]
    out = telling or out
    known = name in expected or (r == "timeout" and name in slow)
    print(f"{r:8} {name}{'  (expected)' if known else ''}")
    for line in out[:3]:
        print(f"           {line[:160]}")
    if not known:
        unexpected.append(name)
print("piglit cl: " + ", ".join(f"{n} {r}" for r, n in sorted(counts.items()))
      + f"; {len(unexpected)} unexpected")
sys.exit(1 if unexpected or not tests else 0)
PY
