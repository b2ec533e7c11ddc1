#!/usr/bin/env bash
# Runs real OpenCL applications against the freshly built vkcl (release),
# through the ICD loader with vkcl as the only platform, and prints one line
# per application:  NAME: N passed, N failed, N skipped
# Exits non-zero on any failure or crash.
#
#   scripts/apps.sh [--quick] [APP ...]      APP: pyopencl hashcat opencv ffmpeg clblast clfft silx
#                                            pyfai gpyfft reikna gegl sasmodels openmm pyvkfft
#                                            viennacl
#
# pyopencl  PyOpenCL's own test suite, at the version the distribution
#           packages (the tests come from that release's source archive
#           on the Python package index); one pytest run per test file, so
#           that a crash costs one file, counted as one failure.
# hashcat   `hashcat -b` over several hash modes; each benchmark runs the
#           kernels' self-test first, and a failed self-test or build is a
#           failure.
# opencv    OpenCV's transparent API (UMat) on the OpenCL device against
#           OpenCV's CPU results (scripts/apps/opencv_tapi.py).
# ffmpeg    FFmpeg's OpenCL video filters on a generated video, each
#           output compared byte for byte with the same filter run on the
#           distribution's PoCL (its CPU OpenCL); deshake_opencl, whose
#           feature matching turns the last bits of bilinear filtering
#           into different motion estimates, is only run.
# clblast   CLBlast's test suite (the distribution's clblast-tests): every
#           BLAS routine in every precision against the reference BLAS.
#           Half-precision routines are counted apart: no other OpenCL
#           here has half precision to compare with, and CLBlast 1.5.3
#           fails three of them by itself (iHAMAX breaks ties between
#           equal half values by work-item rather than by index;
#           HAXPYBATCHED and HGEMMBATCHED upload half factors their
#           kernels read as floats, as on AMD's OpenCL too).
# clfft     clFFT's client (the distribution's clfft-client), whose
#           transforms check themselves against a reference: lengths of
#           radices 2, 3, 5 and 7, in one to three dimensions, batched,
#           in and out of place, forward and backward, single and double.
#           (Radices 11 and 13 fail on PoCL as well and are left out.)
# silx      silx's OpenCL test suite (the distribution's python3-silx):
#           image processing, projections, convolutions, statistics,
#           sparse matrices and compensated sums against NumPy and SciPy;
#           the tests that download data skip themselves offline.
# pyfai     pyFAI's OpenCL tests (the distribution's python3-pyfai):
#           azimuthal integration of diffraction images (CSR and LUT sparse
#           matrices, histograms with atomics), bitonic sorts, peak finding
#           and preprocessing, against its Cython and NumPy results.
# gpyfft    gpyfft's tests (the distribution's python3-gpyfft, Python on
#           clFFT through PyOpenCL): batched, strided and callback FFTs
#           against NumPy's.
# reikna    reikna's test suite (0.8.0, the last release for NumPy 1, from
#           the Python package index into target/apps; its tests from that
#           release's source archive): kernel templates with complex and
#           double arithmetic, reductions, scans, sorts, counter-based random
#           numbers (Philox, Threefry), FFTs of many sizes, Hankel
#           transforms, matrix products and transposes, against NumPy.
#           Left out: the performance tests (marked perf; their single
#           precision FFTs of up to 4 million points fail reikna's
#           element-wise 1e-5 relative tolerance on PoCL as well), and
#           test_multiarg_mul with int/float/complex arguments, which
#           compares float results with a double reference across a
#           cancelling complex product and fails at random on PoCL too
#           (and, on devices with less than 33,792 bytes of local memory,
#           the complex double matrix product, whose blocks need that).
# gegl      GEGL (the image processing library under GIMP) through its
#           command-line tool: 21 operations that have OpenCL kernels
#           (blurs, bilateral and noise-reduction filters, oilify,
#           pixelize, colour operations, contrast stretching with its
#           reductions, compositing), each applied to a generated image on the OpenCL
#           device and compared with the same operation's OpenCL kernels
#           on the distribution's PoCL (within 1e-5; GEGL's own CPU code
#           differs from its kernels by design). GEGL uses OpenCL only
#           with one thread (GEGL_THREADS=1); a run where vkcl built no
#           kernel of the operation counts as a failure.
# sasmodels SasView's small-angle scattering models (the distribution's
#           python3-sasmodels): each model's own test values (intensities,
#           form factors, effective radii and volumes) computed by its
#           OpenCL kernels, in the precision the model asks for. Left out:
#           pringle and superball, whose work-items loop more than a CPU
#           device allows (nested quadratures of Bessel series, about a
#           million iterations each: llvmpipe leaves every loop after
#           65535), so that their results there are cut short; PoCL
#           passes them.
# openmm    OpenMM, the molecular dynamics library (the distribution's
#           packages), on its OpenCL platform through its C++ API
#           (scripts/apps/openmm_pme.cpp): a charged crystal with PME
#           electrostatics, forces against OpenMM's CPU platform within
#           1e-3 of the root-mean-square force, then 200 steps of dynamics
#           that must keep the total energy. Small, because on CPU devices
#           OpenMM's kernels loop within each work-item and llvmpipe ends
#           loops after 65535 iterations (OpenMM's own testInstallation,
#           8867 atoms, gets its nonbonded forces cut short there).
# pyvkfft   pyvkfft (VkFFT from Python; 2025.1.1 from the Python package
#           index, its OpenCL backend built into target/apps), which
#           generates an FFT kernel for each transform it plans: its
#           accuracy check (the measure and tolerance of its own test
#           suite, against SciPy) of 156 transforms: complex, real, DCT and
#           DST, radix and Bluestein lengths, one to three dimensions, in
#           and out of place, single and double precision, through
#           scripts/apps/pyvkfft_test.py, which lets it take CPU devices
#           too (pyvkfft-test looks for GPUs only; `pyvkfft_test.py
#           --suite` runs pyvkfft-test's regular suite, hours on a CPU
#           device).
# viennacl  ViennaCL, the linear algebra library (the distribution's
#           libviennacl-dev), through scripts/apps/viennacl_check.cpp:
#           vector operations and reductions, dense and sparse products,
#           and its CG, BiCGStab and GMRES solvers on a Poisson matrix, in
#           single and double precision, against the host. Not in --quick
#           (its kernels take about a minute to build on a CPU device).
# darktable darktable, the raw photo editor (the distribution's package),
#           through darktable-cli and scripts/apps/darktable_check.py: a
#           generated image developed with 26 of darktable's own presets of
#           modules with OpenCL kernels (local laplacian and bilateral local
#           contrast, filmic, colour balance rgb, tone and rgb curves,
#           wavelet and profiled denoising, diffuse or sharpen, negadoctor,
#           ...) and one history of several, each on the device under test
#           and on the distribution's PoCL, within 1e-3 of each other, every
#           module processed on the OpenCL device (darktable's own CPU code
#           differs from its kernels by design). darktable turns away
#           OpenCL devices of type CPU on first sight; the checker enables
#           them in its config.
#
# --quick runs the part CI runs: a few PyOpenCL test files, one hash mode,
# OpenCV, a few FFmpeg filters, a few CLBlast routines, a few clFFT
# transforms, two silx test files, one file (or folder) each of pyFAI,
# gpyfft and reikna, two GEGL operations, three sasmodels models, 16
# pyvkfft transforms and four darktable histories. Every run is bounded in
# time (VKCL_APP_TIMEOUT seconds per step, default 1800). Set
# OCL_ICD_VENDORS to run the same applications against another OpenCL
# implementation.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

quick=0
apps=()
for a in "$@"; do
    case "$a" in
        --quick) quick=1 ;;
        pyopencl | hashcat | opencv | ffmpeg | clblast | clfft | silx | pyfai | gpyfft | reikna | gegl | sasmodels | openmm | pyvkfft | viennacl | darktable) apps+=("$a") ;;
        *) echo "unknown application $a (pyopencl, hashcat, opencv, ffmpeg, clblast, clfft, silx, pyfai, gpyfft, reikna, gegl, sasmodels, openmm, pyvkfft, viennacl, darktable)" >&2; exit 2 ;;
    esac
done
[ ${#apps[@]} -eq 0 ] && apps=(pyopencl hashcat opencv ffmpeg clblast clfft silx pyfai gpyfft reikna gegl sasmodels openmm pyvkfft viennacl darktable)
limit="${VKCL_APP_TIMEOUT:-1800}"
# The distribution's Python, which has its packages.
py=/usr/bin/python3

setup_runtime
apt_install python3 python3-numpy python3-pyopencl python3-pytest python3-mako \
    hashcat python3-opencv ffmpeg pocl-opencl-icd clblast-tests clfft-client python3-silx \
    python3-pyfai python3-gpyfft python3-pip gegl python3-sasmodels libopenmm-dev libopenmm-plugins g++ \
    python3-scipy python3-psutil ocl-icd-opencl-dev libviennacl-dev libboost-dev darktable
if [ -z "${OCL_ICD_VENDORS:-}" ]; then
    log "cargo build --release --lib"
    cargo build --release --lib
    use_built_icd release
fi
log "OpenCL platforms: $OCL_ICD_VENDORS"
# The applications' own caches of program binaries would hide changes in
# the library under test.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export PYOPENCL_NO_CACHE=1 XDG_CACHE_HOME="$scratch/cache" XDG_DATA_HOME="$scratch/data"
work="$VKCL_ROOT/target/apps"
mkdir -p "$work"

summary=()
status=0
report() { # NAME PASSED FAILED SKIPPED [NOTE]
    local line="$1: $2 passed, $3 failed, $4 skipped${5:+ ($5)}"
    summary+=("$line")
    [ "$3" -eq 0 ] || status=1
}

# The numbers pytest's last line gives ("3 failed, 20 passed, 2 skipped in 9s").
pytest_count() { # WORD FILE
    tail -n 3 "$2" | grep -oE "[0-9]+ $1" | tail -n 1 | grep -oE "^[0-9]+" || echo 0
}

# Reports NAME's counts from the last line of OUT ("N passed, N failed[, N
# skipped]", as the checkers in scripts/apps print it); a run that exited
# with RC other than 0 and counted no failure counts one.
report_last_line() { # NAME OUT RC
    local last p f s
    last="$(tail -n 1 "$2")"
    p="$(grep -oE "^[0-9]+ passed" <<<"$last" | grep -oE "^[0-9]+" || echo 0)"
    f="$(grep -oE "[0-9]+ failed" <<<"$last" | grep -oE "^[0-9]+" || echo 0)"
    s="$(grep -oE "[0-9]+ skipped" <<<"$last" | grep -oE "^[0-9]+" || echo 0)"
    if [ "$3" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        tail -n 5 "$2" | sed 's/^/    /'
    fi
    report "$1" "$p" "$f" "$s" "$([ "$3" -ge 124 ] && echo "exit $3")"
}

# One pytest run per test file (or folder) in DIR, so that a crash costs
# one file, counted as one failure; reports NAME's counts. The array
# pytest_args adds arguments to every run.
pytest_args=()
pytest_files() { # NAME DIR FILE...
    local name="$1" dir="$2"
    shift 2
    local passed=0 failed=0 skipped=0 notes=() f out rc
    for f in "$@"; do
        out="$scratch/$name-$f.log"
        log "$name: $f"
        rc=0
        (cd "$dir" && timeout "$limit" "$py" -m pytest -q -p no:cacheprovider \
            -o addopts="" "${pytest_args[@]}" "$f") >"$out" 2>&1 || rc=$?
        local p fl e s
        p="$(pytest_count passed "$out")"
        fl="$(pytest_count failed "$out")"
        e="$(pytest_count error "$out")"
        s="$(pytest_count skipped "$out")"
        passed=$((passed + p)); skipped=$((skipped + s)); failed=$((failed + fl + e))
        grep -E "^(FAILED|ERROR) " "$out" | sed 's/^/    /' | cut -c1-200 || true
        if [ "$rc" -ge 124 ]; then
            failed=$((failed + 1))
            notes+=("$f: $( [ "$rc" -eq 124 ] && echo "timed out" || echo "crashed, exit $rc")")
            tail -n 5 "$out" | sed 's/^/    /'
        elif [ "$rc" -ne 0 ] && [ "$((fl + e))" -eq 0 ]; then
            failed=$((failed + 1))
            notes+=("$f: exit $rc")
            tail -n 5 "$out" | sed 's/^/    /'
        fi
    done
    report "$name" "$passed" "$failed" "$skipped" "$(IFS=';'; echo "${notes[*]}")"
}

run_pyopencl() {
    local version dir files=()
    version="$("$py" -c 'import pyopencl; print(pyopencl.VERSION_TEXT)')"
    dir="$work/pyopencl-$version"
    if [ ! -d "$dir/test" ]; then
        log "fetching the tests of pyopencl $version (source archive on the Python package index)"
        local url
        url="$(curl -sSf https://pypi.org/simple/pyopencl/ |
            grep -oE "https://[^\"#]*/pyopencl-$version\.tar\.gz" | head -n 1)"
        [ -n "$url" ] || { echo "no source archive for pyopencl $version" >&2; return 1; }
        curl -sSfL "$url" | tar -xz -C "$work"
    fi
    if [ "$quick" -eq 1 ]; then
        files=(test_wrapper.py test_enqueue_copy.py test_arrays_in_structs.py test_clrandom.py)
    else
        files=(test_wrapper.py test_enqueue_copy.py test_arrays_in_structs.py test_clrandom.py
            test_array.py test_clmath.py test_algorithm.py)
    fi
    pytest_files pyopencl "$dir/test" "${files[@]}"
}

run_hashcat() {
    local modes=(0 100 1400 1700 1000 3200)
    [ "$quick" -eq 1 ] && modes=(0)
    local passed=0 failed=0 m out rc notes=()
    for m in "${modes[@]}"; do
        out="$scratch/hashcat-$m.log"
        log "hashcat -b -m $m"
        rc=0
        (cd "$scratch" && timeout "$limit" hashcat -b -m "$m" --quiet) >"$out" 2>&1 || rc=$?
        if [ "$rc" -eq 0 ] && grep -q "^Speed.#" "$out" &&
            ! grep -qiE "self-test failed|build failed|CL_[A-Z_]+|skipping" "$out"; then
            passed=$((passed + 1))
            grep "^Speed.#" "$out" | sed "s/^/    -m $m /"
        else
            failed=$((failed + 1))
            notes+=("-m $m: exit $rc")
            grep -iE "failed|error|CL_|skipping" "$out" | head -n 5 | sed 's/^/    /'
        fi
    done
    report hashcat "$passed" "$failed" 0 "$(IFS=';'; echo "${notes[*]}")"
}

run_opencv() {
    local out="$scratch/opencv.log" rc=0
    log "opencv transparent API"
    timeout "$limit" "$py" "$VKCL_ROOT/scripts/apps/opencv_tapi.py" >"$out" 2>&1 || rc=$?
    grep -vE "^  ok " "$out" | sed 's/^/    /'
    report_last_line opencv "$out" "$rc"
}

# One FFmpeg filter graph per case: NAME|INPUT|FILTER. INPUT is `one`
# (a 320x240 test pattern, 5 frames) or `two` (the pattern and a second
# one for filters of two inputs); FILTER runs between hwupload and
# hwdownload (or, for two inputs, takes [a] and [b]).
ffmpeg_cases() {
    local all=(
        "avgblur|one|avgblur_opencl=sizeX=3"
        "boxblur|one|boxblur_opencl"
        "convolution|one|convolution_opencl=0m='1 1 1 1 1 1 1 1 1':0rdiv=1/9"
        "dilation|one|dilation_opencl"
        "erosion|one|erosion_opencl"
        "nlmeans|one|nlmeans_opencl"
        "pad|one|pad_opencl=w=400:h=300:x=10:y=10"
        "prewitt|one|prewitt_opencl"
        "roberts|one|roberts_opencl"
        "sobel|one|sobel_opencl"
        "transpose|one|transpose_opencl"
        "unsharp|one|unsharp_opencl"
        "colorkey|rgba|colorkey_opencl=color=0x00ff00:similarity=0.3"
        "overlay|two|[a][b]overlay_opencl=x=20:y=20"
        "xfade|two|[a][b]xfade_opencl=transition=wipeleft:duration=0.2:offset=0.1"
    )
    if [ "$quick" -eq 1 ]; then
        printf '%s\n' "${all[@]}" | grep -E "^(avgblur|nlmeans|unsharp|overlay)\|"
    else
        printf '%s\n' "${all[@]}"
    fi
}

# Runs one case with the OpenCL platforms of $OCL_ICD_VENDORS; writes the
# raw frames to OUT.
ffmpeg_filter() { # INPUT FILTER OUT
    local src="testsrc2=size=320x240:rate=10:duration=0.5"
    local args=(-nostdin -hide_banner -v error -init_hw_device opencl=gpu:0.0 -filter_hw_device gpu)
    case "$1" in
        one) args+=(-f lavfi -i "$src" -vf "format=yuv420p,hwupload,$2,hwdownload,format=yuv420p") ;;
        rgba) args+=(-f lavfi -i "$src" -vf "format=rgba,hwupload,$2,hwdownload,format=rgba") ;;
        two) args+=(-f lavfi -i "$src" -f lavfi -i "testsrc=size=320x240:rate=10:duration=0.5"
            -filter_complex "[0]format=yuv420p,hwupload[a];[1]format=yuv420p,hwupload[b];$2,hwdownload,format=yuv420p") ;;
    esac
    timeout "$limit" ffmpeg "${args[@]}" -f rawvideo -y "$3"
}

run_ffmpeg() {
    local pocl="$scratch/pocl"
    mkdir -p "$pocl"
    cp /etc/OpenCL/vendors/pocl.icd "$pocl/" || return 1
    local passed=0 failed=0 skipped=0 notes=() line name input filter rc
    while IFS='|' read -r name input filter; do
        log "ffmpeg: $filter"
        rc=0
        ffmpeg_filter "$input" "$filter" "$scratch/ff-$name.raw" 2>"$scratch/ff-$name.log" || rc=$?
        if [ "$rc" -ne 0 ]; then
            failed=$((failed + 1)); notes+=("$name: exit $rc")
            head -n 5 "$scratch/ff-$name.log" | sed 's/^/    /'
            continue
        fi
        if ! OCL_ICD_VENDORS="$pocl" ffmpeg_filter "$input" "$filter" "$scratch/ff-$name.pocl" \
            2>"$scratch/ff-$name.pocl.log"; then
            skipped=$((skipped + 1)); notes+=("$name: PoCL failed")
        elif cmp -s "$scratch/ff-$name.raw" "$scratch/ff-$name.pocl"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); notes+=("$name: output differs from PoCL's")
        fi
    done < <(ffmpeg_cases)
    if [ "$quick" -eq 0 ]; then
        log "ffmpeg: deshake_opencl (run, not compared)"
        if ffmpeg_filter one deshake_opencl "$scratch/ff-deshake.raw" 2>"$scratch/ff-deshake.log"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); notes+=("deshake: failed")
        fi
    fi
    report ffmpeg "$passed" "$failed" "$skipped" "$(IFS=';'; echo "${notes[*]}")"
}

run_clblast() {
    local tests=() t
    if [ "$quick" -eq 1 ]; then
        tests=(xaxpy xdot xnrm2 xger xomatcopy)
    else
        for t in /usr/bin/clblast_test_*; do tests+=("${t#/usr/bin/clblast_test_}"); done
    fi
    local passed=0 failed=0 skipped=0 half_failed=0 notes=() out rc counts
    for t in "${tests[@]}"; do
        out="$scratch/clblast-$t.log"
        log "clblast: $t"
        rc=0
        timeout "$limit" "clblast_test_$t" -q >"$out" 2>&1 || rc=$?
        # Per routine: "NAME PASSED SKIPPED FAILED".
        counts="$(sed 's/\x1b\[[0-9;]*m//g' "$out" | awk '
            /Starting tests for the/ { split($0, q, "\047"); name = q[2] }
            /Pass rate/ { p += $4; s += $7; f += $10; if (!(name in seen)) order[++n] = name; seen[name] = 1
                          P[name] += $4; S[name] += $7; F[name] += $10 }
            END { for (i = 1; i <= n; i++) print order[i], P[order[i]], S[order[i]], F[order[i]] }')"
        local name p sk f
        while read -r name p sk f; do
            [ -n "$name" ] || continue
            skipped=$((skipped + sk))
            if [[ "$name" == H* || "$name" == iH* ]]; then
                passed=$((passed + p)); half_failed=$((half_failed + f))
                [ "$f" -eq 0 ] || notes+=("$name: $f failed (half, not counted)")
            else
                passed=$((passed + p)); failed=$((failed + f))
                [ "$f" -eq 0 ] || notes+=("$name: $f failed")
            fi
        done <<<"$counts"
        if [ "$rc" -ge 124 ] || [ -z "$counts" ]; then
            failed=$((failed + 1)); notes+=("$t: exit $rc")
            tail -n 5 "$out" | sed 's/^/    /'
        fi
    done
    report clblast "$passed" "$failed" "$skipped" "$(IFS=';'; echo "${notes[*]}")"
}

run_clfft() {
    local cases=("-x 1024" "-x 1000 --inv" "-x 64 -y 64 -z 64" "-x 360 -y 120 --double")
    [ "$quick" -eq 0 ] && cases+=("-x 2187" "-x 3125" "-x 2401" "-x 1024 -y 1024" "-x 4096 -o"
        "-x 8192 --batchSize 8" "-x 1024 -y 128 --double -o --inv" "-x 49 -y 25 -z 9"
        "-x 65536 --double")
    local passed=0 failed=0 notes=() c out rc
    for c in "${cases[@]}"; do
        out="$scratch/clfft.log"
        log "clFFT-client $c"
        rc=0
        # shellcheck disable=SC2086 # the case is a list of arguments
        timeout "$limit" clFFT-client $c >"$out" 2>&1 || rc=$?
        if [ "$rc" -eq 0 ] && grep -q "Client Test \*\*\*\*\*PASS" "$out"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); notes+=("$c: exit $rc")
            grep -iE "fail|error" "$out" | head -n 3 | sed 's/^/    /'
        fi
    done
    report clfft "$passed" "$failed" 0 "$(IFS=';'; echo "${notes[*]}")"
}

# The test files of a Python package's test module (every test_*.py,
# or the given quick ones under --quick), one pytest run each.
package_tests() { # NAME MODULE QUICK_FILE...
    local name="$1" module="$2" dir files=()
    shift 2
    dir="$("$py" -c "import os, $module as t; print(os.path.dirname(t.__file__))")"
    if [ "$quick" -eq 1 ]; then
        files=("$@")
    else
        for f in "$dir"/test_*.py; do files+=("${f##*/}"); done
    fi
    pytest_files "$name" "$dir" "${files[@]}"
}

run_silx() { package_tests silx silx.opencl.test test_addition.py test_kahan.py; }
run_pyfai() { package_tests pyfai pyFAI.opencl.test test_ocl_azim_csr.py; }
run_gpyfft() { package_tests gpyfft gpyfft.test test_batched.py; }

run_reikna() {
    local version=0.8.0 site="$work/reikna-site"
    local dir="$work/reikna-$version"
    if [ ! -d "$site/reikna" ] || [ ! -d "$dir/test" ]; then
        log "fetching reikna $version and its tests (Python package index)"
        "$py" -m pip install -q --root-user-action=ignore --no-deps --target "$site" \
            "reikna==$version" funcparserlib funcsigs &&
            "$py" -m pip download -q --no-deps --no-binary :all: -d "$work" "reikna==$version" &&
            tar -xzf "$work/reikna-$version.tar.gz" -C "$work" || return 1
    fi
    local files=(test_core test_algorithms test_cbrng test_fft test_linalg test_dht.py
        test_transformations.py test_cluda)
    [ "$quick" -eq 1 ] && files=(test_core)
    # Node ids are relative to reikna's root folder (its pytest.ini).
    # shellcheck disable=SC2034 # read by pytest_files
    local pytest_args=(--api=ocl -m "not perf"
        "--deselect=test/test_cluda/test_functions.py::test_multiarg_mul[ocl,0,0-f-ifccfi]")
    # reikna's complex double matrix product takes 32x32 blocks wherever
    # 1024 work-items fit, two (32x32 + 32) double2 tiles: 33,792 bytes of
    # local memory, which the build refuses on devices with less (as
    # NVIDIA's OpenCL does); reikna tries smaller blocks only when the
    # work-group size is what does not fit.
    local local_mem
    local_mem="$("$py" -c 'import pyopencl as cl; print(cl.get_platforms()[0].get_devices()[0].local_mem_size)')"
    if [ "$local_mem" -lt 33792 ]; then
        pytest_args+=("--deselect=test/test_linalg/test_matrixmul.py::test_dtypes[cc-ocl,0,0,dp]")
    fi
    PYTHONPATH="$site" pytest_files reikna "$dir/test" "${files[@]}"
}

# GEGL's command-line tool, one thread (GEGL runs OpenCL kernels only
# then): DEVICE_TYPE (cpu, gpu: GEGL_USE_OPENCL), OUTPUT, then the
# operations.
gegl_run() {
    local kind="$1" out="$2"
    shift 2
    GEGL_THREADS=1 GEGL_USE_OPENCL="$kind" timeout "$limit" gegl -o "$out" -- "$@" >&2
}

run_gegl() {
    local pocl="$scratch/pocl"
    mkdir -p "$pocl"
    cp /etc/OpenCL/vendors/pocl.icd "$pocl/" || return 1
    # Each: an operation and its arguments (@IN@: the input image).
    local ops=(box-blur bilateral-filter brightness-contrast color-temperature mono-mixer
        motion-blur-linear noise-reduction oilify pixelize snn-mean threshold value-invert
        vignette levels alien-map posterize noise-hsv stretch-contrast invert-linear
        red-eye-removal
        "over aux=[ gegl:load path=@IN@ gegl:value-invert gegl:opacity value=0.6 ]")
    [ "$quick" -eq 1 ] && ops=(bilateral-filter stretch-contrast)
    # GEGL asks for OpenCL devices of one type.
    local kind
    kind="$("$py" -c 'import pyopencl as cl
d = cl.get_platforms()[0].get_devices()[0]
print("cpu" if d.type & cl.device_type.CPU else "gpu")')" || return 1
    local input="$scratch/gegl-in.png"
    gegl_run no "$input" gegl:plasma seed=7 width=320 height=240 \
        gegl:crop width=320 height=240 2>"$scratch/gegl-in.log" || return 1
    local passed=0 failed=0 skipped=0 notes=() entry op args got want log rc
    for entry in "${ops[@]}"; do
        read -r -a args <<<"${entry//@IN@/$input}"
        op="${args[0]}"
        args[0]="gegl:$op"
        log "gegl: $op"
        got="$scratch/gegl-$op.npy" want="$scratch/gegl-$op.pocl.npy" log="$scratch/gegl-$op.log"
        rc=0
        VKCL_LOG="vkcl::compiler=debug,vkcl::cache=debug" \
            gegl_run "$kind" "$got" gegl:load path="$input" "${args[@]}" 2>"$log" || rc=$?
        if [ "$rc" -ne 0 ]; then
            failed=$((failed + 1)); notes+=("$op: exit $rc")
            grep -v '^\[' "$log" | head -n 5 | sed 's/^/    /'
            continue
        fi
        # With vkcl, the operation's own kernels (not only the pixel
        # format conversions GEGL builds first) must have been built.
        if grep -q 'vkcl::' "$log" &&
            ! grep -E 'rewritten in|rewrite from' "$log" | grep -vq '_to_'; then
            failed=$((failed + 1)); notes+=("$op: no OpenCL kernel ran")
            continue
        fi
        if ! OCL_ICD_VENDORS="$pocl" gegl_run cpu "$want" gegl:load path="$input" "${args[@]}" \
            2>"$scratch/gegl-$op.pocl.log"; then
            skipped=$((skipped + 1)); notes+=("$op: PoCL failed")
        elif "$py" "$VKCL_ROOT/scripts/apps/gegl_compare.py" "$got" "$want" 1e-5 \
            >"$scratch/gegl-$op.cmp"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); notes+=("$op: $(cat "$scratch/gegl-$op.cmp")")
        fi
    done
    report gegl "$passed" "$failed" "$skipped" "$(IFS=';'; echo "${notes[*]}")"
}

run_sasmodels() {
    # All models but two whose work-items loop longer than lavapipe
    # allows (see the header).
    local models=(all pringle superball) out="$scratch/sasmodels.log" rc=0
    [ "$quick" -eq 1 ] && models=(sphere cylinder core_shell_sphere)
    log "sasmodels: ${models[*]}"
    (cd "$scratch" && timeout "$limit" "$py" -m sasmodels.model_test -v -e opencl "${models[@]}") \
        >"$out" 2>&1 || rc=$?
    local passed failed
    passed="$(grep -cE '\.\.\. ok$' "$out" || true)"
    failed="$(grep -cE '^(FAIL|ERROR): ' "$out" || true)"
    grep -E '^(FAIL|ERROR): ' "$out" | sed 's/^/    /' | cut -c1-200 || true
    if ! grep -q '^Ran [0-9]* test' "$out"; then
        failed=$((failed + 1))
        tail -n 5 "$out" | sed 's/^/    /'
        report sasmodels "$passed" "$failed" 0 "exit $rc"
        return
    fi
    report sasmodels "$passed" "$failed" 0
}

run_openmm() {
    # Not in --quick: building OpenMM's kernels takes about a minute on a
    # CPU device.
    if [ "$quick" -eq 1 ]; then
        report openmm 0 0 1 "not in --quick"
        return
    fi
    local bin="$work/openmm_pme" out="$scratch/openmm.log" rc=0
    g++ -O2 -o "$bin" "$VKCL_ROOT/scripts/apps/openmm_pme.cpp" -I/usr/include/openmm -lOpenMM
    log "openmm: PME crystal of 1000 sites, 200 steps"
    (cd "$scratch" && timeout "$limit" "$bin" 10 200) >"$out" 2>&1 || rc=$?
    grep -E "forces|ns/day|drift" "$out" | sed 's/^/    /'
    if [ "$rc" -eq 0 ]; then
        report openmm 1 0 0
    else
        tail -n 5 "$out" | sed 's/^/    /'
        report openmm 0 1 0 "exit $rc"
    fi
}

run_pyvkfft() {
    local version=2025.1.1 site="$work/pyvkfft-site" out="$scratch/pyvkfft.log" rc=0 args=()
    if [ ! -f "$site/pyvkfft/version.py" ]; then
        log "building pyvkfft $version's OpenCL backend (Python package index)"
        rm -rf "$site"
        "$py" -m pip download -q --no-deps --no-binary :all: -d "$work" "pyvkfft==$version" &&
            "$py" -m pip install -q --root-user-action=ignore --no-deps --target "$site" \
                "$work/pyvkfft-$version.tar.gz" || return 1
    fi
    [ "$quick" -eq 1 ] && args=(--quick)
    log "pyvkfft ${args[*]}"
    PYTHONPATH="$site" timeout "$limit" "$py" "$VKCL_ROOT/scripts/apps/pyvkfft_test.py" "${args[@]}" \
        >"$out" 2>&1 || rc=$?
    grep -E "^  FAIL |^(FAIL|ERROR): " "$out" | sed 's/^ */    /' | cut -c1-240 || true
    report_last_line pyvkfft "$out" "$rc"
}

run_viennacl() {
    if [ "$quick" -eq 1 ]; then
        report viennacl 0 0 1 "not in --quick"
        return
    fi
    local bin="$work/viennacl_check" out="$scratch/viennacl.log" rc=0
    g++ -O2 -std=c++14 -w -o "$bin" "$VKCL_ROOT/scripts/apps/viennacl_check.cpp" -lOpenCL || return 1
    log "viennacl"
    (cd "$scratch" && timeout "$limit" "$bin") >"$out" 2>&1 || rc=$?
    grep -E "^  FAIL " "$out" | sed 's/^ */    /' || true
    report_last_line viennacl "$out" "$rc"
}

run_darktable() {
    local out="$scratch/darktable.log" rc=0 args=()
    [ "$quick" -eq 1 ] && args=(--quick)
    mkdir -p "$scratch/darktable"
    log "darktable ${args[*]}"
    timeout "$limit" "$py" "$VKCL_ROOT/scripts/apps/darktable_check.py" "$scratch/darktable" \
        "${args[@]}" >"$out" 2>&1 || rc=$?
    grep -E "^  FAIL " "$out" | sed 's/^ */    /' | cut -c1-240 || true
    report_last_line darktable "$out" "$rc"
}

for a in "${apps[@]}"; do
    "run_$a" || report "$a" 0 1 0 "could not run"
done

echo
for line in "${summary[@]}"; do
    echo "$line"
done
exit "$status"
