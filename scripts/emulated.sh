#!/usr/bin/env bash
# Runs vkcl's 64-bit ARM and Windows builds where there is no such machine:
#
# * aarch64 under qemu's user-mode emulation, on the distribution's arm64
#   packages (Vulkan loader, lavapipe, validation layer, ocl-icd): `vkcl
#   info`, the matmul example through the ICD loader, and the platform,
#   buffer, execution, kernel and compiler-less program tests (OpenCL C is
#   compiled by the host's clang, which the emulated library starts).
# * Windows under Wine, whose Vulkan forwards to the host's driver (through
#   Wine's X11 driver, so on a virtual X server, Xvfb): `vkcl
#   info` with vkcl.dll opened directly; the Khronos ICD loader built from
#   its sources with MinGW, vkcl registered with `vkcl icd install` and
#   reached through the loader by `vkcl run` on a program binary the host
#   made (as an application packager would); and the test sets that need no
#   OpenCL C compiler (platform, context, buffers, images, execution, IL
#   programs and program binaries), both ways, without the validation layer,
#   which Wine does not offer to Windows programs. The Windows build has no
#   front end under Wine: the host's clang cannot read Windows paths.
#
# Prints one summary line per platform with its test counts. Called by
# scripts/test.sh; runs alone too. VKCL_EMULATED=aarch64 or =windows runs
# one of the two. The Khronos loader is cloned from GitHub, or taken from
# OPENCL_ICD_LOADER_SRC (a checkout of KhronosGroup/OpenCL-ICD-Loader);
# where neither is reachable the loader runs are skipped, said in the
# summary. Debian has the arm64 packages on its usual mirrors; on
# Ubuntu the aarch64 part needs ports.ubuntu.com in the apt sources, and is
# skipped (with a message) without it.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

which="${VKCL_EMULATED:-aarch64 windows}"
summary_file="$VKCL_ROOT/target/emulated-summary.txt"
mkdir -p "$VKCL_ROOT/target"
: > "$summary_file"
summary() { echo "$*" >> "$summary_file"; }

# Runs `cargo test` with the given arguments, output kept in $1, and adds
# "N passed, M failed" for it to the variable named by $2.
counted_tests() {
    local out="$1" var="$2"
    shift 2
    local rc
    set +e
    cargo test "$@" 2>&1 | tee "$out" | grep -E "^test result|FAILED|panicked"
    rc=${PIPESTATUS[0]}
    set -e
    local passed failed
    passed=$(grep -oE "[0-9]+ passed" "$out" | awk '{s += $1} END {print s + 0}')
    failed=$(grep -oE "[0-9]+ failed" "$out" | awk '{s += $1} END {print s + 0}')
    printf -v "$var" '%s passed, %s failed' "$passed" "$failed"
    return "$rc"
}

run_aarch64() {
    local arm_packages=(libc6:arm64 libgcc-s1:arm64 libstdc++6:arm64 libvulkan1:arm64
        mesa-vulkan-drivers:arm64 vulkan-validationlayers:arm64 ocl-icd-libopencl1:arm64)
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        log "adding the arm64 architecture to dpkg"
        as_root dpkg --add-architecture arm64
        apt_updated=0
    fi
    if ! (apt_install qemu-user gcc-aarch64-linux-gnu "${arm_packages[@]}"); then
        summary "aarch64 (qemu): skipped, the distribution's arm64 packages could not be installed"
        return 0
    fi
    local target=aarch64-unknown-linux-gnu
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=qemu-aarch64
    log "aarch64: building the library, the vkcl tool, the example and the tests"
    cargo build --target "$target" --lib
    cargo build --target "$target" -p vkcl-tool
    cargo build --target "$target" --example matmul

    log "aarch64: vkcl info"
    qemu-aarch64 "target/$target/debug/vkcl" info > "target/$target/info.txt"
    head -n 8 "target/$target/info.txt"

    local icd="$VKCL_ROOT/target/$target/debug/icd"
    mkdir -p "$icd"
    echo "$VKCL_ROOT/target/$target/debug/libvkcl.so" > "$icd/vkcl.icd"
    log "aarch64: tiled matrix multiply through the arm64 ICD loader"
    OCL_ICD_VENDORS="$icd" qemu-aarch64 "target/$target/debug/examples/matmul" 128

    log "aarch64: tests"
    local counts
    counted_tests "target/$target/tests.log" counts --target "$target" --no-fail-fast \
        --test platform_device --test buffers --test execution --test kernels \
        --test programs_without_compiler
    summary "aarch64 (qemu-aarch64, lavapipe arm64): vkcl info, matmul, tests $counts"
}

run_windows() {
    apt_install wine64 xvfb xauth gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 cmake ninja-build \
        git opencl-c-headers
    local wine
    wine="$(command -v wine64 || echo /usr/lib/wine/wine64)"
    [ -x "$wine" ] || { echo "no wine64 found" >&2; return 1; }
    local target=x86_64-pc-windows-gnu
    local out="$VKCL_ROOT/target/$target/debug"
    export WINEPREFIX="$VKCL_ROOT/target/wine" WINEDEBUG=-all
    # Wine's own opencl.dll (OpenCL 1.2, passed on to the host's loader)
    # gives way to the Khronos loader installed below.
    export WINEDLLOVERRIDES="opencl=n"
    # Each Windows program on its own virtual display: Wine's Vulkan goes
    # through its X11 driver.
    win() { xvfb-run -a "$wine" "$@"; }
    export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="xvfb-run -a $wine"
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        log "windows: creating the Wine prefix"
        "$wine" wineboot -i >/dev/null 2>&1 || true
        "$(command -v wineserver || echo /usr/lib/wine/wineserver)" -w || true
    fi
    local system32="$WINEPREFIX/drive_c/windows/system32"
    if ! [ -f "$system32/bcryptprimitives.dll" ] && ! ls /usr/lib/x86_64-linux-gnu/wine/x86_64-windows/bcryptprimitives.dll >/dev/null 2>&1; then
        log "windows: Wine lacks bcryptprimitives.dll; building a stand-in (scripts/wine)"
        x86_64-w64-mingw32-gcc -shared -O2 -o "$system32/bcryptprimitives.dll" \
            "$VKCL_ROOT/scripts/wine/bcryptprimitives.c" -ladvapi32
    fi

    log "windows: building vkcl.dll and vkcl.exe (the tests are built below)"
    cargo build --target "$target" --lib
    cargo build --target "$target" -p vkcl-tool

    log "windows: vkcl info (vkcl.dll opened directly)"
    win "$out/vkcl.exe" info > "$out/info.txt"
    head -n 8 "$out/info.txt"

    log "windows: vkcl icd install writes the registry value the Khronos loader reads"
    win "$out/vkcl.exe" icd install --library "$out/vkcl.dll"
    win reg query 'HKLM\SOFTWARE\Khronos\OpenCL\Vendors' | tee "$out/reg.txt"
    grep -q 'vkcl.dll' "$out/reg.txt"

    # The Khronos ICD loader, from its sources, as the OpenCL.dll of the
    # Wine prefix's system folder (where GPU drivers install it).
    local loader="registry value written (no loader)"
    if build_windows_loader; then
        cp "$VKCL_ROOT/target/windows-loader/build/OpenCL.dll" "$system32/OpenCL.dll"
        log "windows: vkcl run through OpenCL.dll, which finds vkcl in the registry"
        # The program binary comes from the host's vkcl, as an application
        # packager's machine would make it.
        local kernel="$VKCL_ROOT/target/$target/add.cl"
        echo "kernel void add(global float *a, global float *b) { size_t i = get_global_id(0); b[i] = a[i] + 1.0f; }" > "$kernel"
        cargo run -q -p vkcl-tool -- compile "$kernel" --emit binary -o "$out/add.bin"
        win "$out/vkcl.exe" run "$out/add.bin" add --global 64 \
            --arg buf:float:64:iota --arg buf:float:64 --print 4 | tee "$out/run.log"
        grep -q "arg 1: 1 2 3 4" "$out/run.log"
        loader="registry and Khronos loader: vkcl run"
    else
        summary "windows: the Khronos ICD loader's sources could not be fetched; loader runs skipped"
    fi

    # Wine offers no Vulkan layers to Windows programs, so these runs go
    # without the validation layer (the same paths run under it on Linux).
    export VKCL_VALIDATION=off
    log "windows: tests (no OpenCL C compiler in the Windows build's reach)"
    # The IL test's modules come from the host's front end, which the
    # Windows build cannot wait for under Wine: a host run saves them.
    local il="$VKCL_ROOT/target/$target/il"
    cargo build -q --lib
    VKCL_TEST_IL_DIR="$il" cargo test -q --test programs_without_compiler >/dev/null
    local counts filter=()
    [ -f "$system32/OpenCL.dll" ] || filter=(directly_linked)
    VKCL_TEST_IL_DIR="Z:${il//\//\\}" \
        counted_tests "target/$target/tests.log" counts --target "$target" --no-fail-fast \
        --test platform_device --test context --test buffers --test buffer_errors \
        --test images --test execution --test programs_without_compiler -- "${filter[@]}"
    summary "windows (wine $("$wine" --version 2>/dev/null | sed 's/^wine-//'), lavapipe): vkcl info, $loader, tests $counts"
}

# The Khronos OpenCL-ICD-Loader at the release of the distribution's OpenCL
# headers (Debian 12: 2023.02.06), built with MinGW under
# target/windows-loader.
build_windows_loader() {
    local dir="$VKCL_ROOT/target/windows-loader"
    [ -f "$dir/build/OpenCL.dll" ] && return 0
    mkdir -p "$dir"
    local src="${OPENCL_ICD_LOADER_SRC:-$dir/OpenCL-ICD-Loader}"
    if [ ! -d "$src" ]; then
        git clone -q --depth 1 --branch v2023.02.06 \
            https://github.com/KhronosGroup/OpenCL-ICD-Loader "$src" || return 1
    fi
    cat > "$dir/mingw.cmake" <<'EOF'
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
EOF
    # The headers alone: the rest of /usr/include is the host's C library.
    mkdir -p "$dir/include"
    cp -r /usr/include/CL "$dir/include/"
    cmake -S "$src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_TOOLCHAIN_FILE="$dir/mingw.cmake" -DBUILD_TESTING=OFF \
        -DOPENCL_ICD_LOADER_HEADERS_DIR="$dir/include" >/dev/null &&
        ninja -C "$dir/build" OpenCL >/dev/null
}

status=0
for w in $which; do
    set +e
    (set -e; "run_$w")
    rc=$?
    set -e
    [ "$rc" -eq 0 ] || { status=1; summary "$w: FAILED (see above)"; }
done
while read -r line; do
    log "$line"
done < "$summary_file"
exit "$status"
