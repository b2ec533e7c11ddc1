#!/usr/bin/env python3
"""darktable's OpenCL processing on the platforms of OCL_ICD_VENDORS against
the distribution's PoCL.

darktable-cli develops a generated 256x256 image with one history per case
(darktable's own presets of modules with OpenCL kernels, read from the
data.db a first start writes), once on the OpenCL device under test and once
on PoCL, and compares the two 32-bit float exports. A case passes when both
runs processed every module of the history on the OpenCL device and the
results agree within 1e-3 (darktable's CPU code differs from its kernels by
design, so the CPU path is no reference).

  darktable_check.py SCRATCH [--quick]

Prints one line per case and a last line "N passed, N failed".
"""

import os
import re
import shutil
import sqlite3
import subprocess
import sys

import numpy as np

KERNELS = "/usr/share/darktable/kernels"
TOLERANCE = 1e-3

# case: [(module, preset)], histories of darktable's built-in presets.
CASES = {
    "exposure": [("exposure", "scene-referred default")],
    "filmic": [("filmic", "12 EV (outdoors)")],
    "colorbalancergb": [("colorbalancergb", "basic colorfulness: vibrant colors")],
    "local-laplacian": [("bilat", "clarity")],
    "local-laplacian-hdr": [("bilat", "HDR local tone-mapping")],
    "sharpen": [("sharpen", "sharpen")],
    "atrous": [("atrous", "denoise & sharpen")],
    "denoiseprofile": [("denoiseprofile", "wavelets: chroma only")],
    "diffuse": [("diffuse", "lens deblur: medium")],
    "channelmixerrgb": [("channelmixerrgb", "basic channel mixer")],
    "rgbcurve": [("rgbcurve", "contrast - med (linear)")],
    "tonecurve": [("tonecurve", "contrast - med (linear)")],
    "vignette": [("vignette", "lomo")],
    "lowpass": [("lowpass", "local contrast mask")],
    "colorzones": [("colorzones", "natural skin tones")],
    "splittoning": [("splittoning", "authentic sepia")],
    "monochrome": [("monochrome", "red filter")],
    "graduatednd": [("graduatednd", "orange ND2 (soft)")],
    "colorbalance": [("colorbalance", "similar to Kodak Portra")],
    "lowlight": [("lowlight", "indoor dim")],
    "relight": [("relight", "fill-light 0.25EV with 4 zones")],
    "basecurve": [("basecurve", "nikon like")],
    "negadoctor": [("negadoctor", "color film")],
    "colorcorrection": [("colorcorrection", "warm tone")],
    "colorchecker": [("colorchecker", "Fuji Velvia emulation")],
    "profile_gamma": [("profile_gamma", "12 EV dynamic range (generic)")],
    "several": [
        ("exposure", "scene-referred default"),
        ("denoiseprofile", "wavelets: chroma only"),
        ("bilat", "clarity"),
        ("colorbalancergb", "basic colorfulness: vibrant colors"),
        ("sharpen", "sharpen"),
        ("vignette", "lomo"),
    ],
}
# Local laplacian and tone curve read images at many places (their kernels
# once passed a device's sampler limit); negadoctor uses native_log10.
QUICK = ["local-laplacian", "tonecurve", "negadoctor", "several"]


def write_pfm(path, rgb):
    h, w, _ = rgb.shape
    with open(path, "wb") as f:
        f.write(b"PF\n%d %d\n-1.0\n" % (w, h))
        f.write(np.ascontiguousarray(rgb[::-1], dtype="<f4").tobytes())


def read_pfm(path):
    with open(path, "rb") as f:
        kind = f.readline().strip()
        dims = f.readline().split()
        while len(dims) < 2:
            dims += f.readline().split()
        w, h = int(dims[0]), int(dims[1])
        scale = float(f.readline())
        data = np.frombuffer(f.read(), dtype="<f4" if scale < 0 else ">f4")
    channels = 3 if kind == b"PF" else 1
    return data.reshape(h, w, channels)[::-1]


def test_image(path):
    """Gradients, a hue sweep and fine detail: something for every module."""
    n = 256
    y, x = np.mgrid[0:n, 0:n] / (n - 1)
    r = 0.5 + 0.45 * np.sin(6.0 * x + 2.0 * y)
    g = 0.05 + 0.9 * y * (0.8 + 0.2 * np.cos(40.0 * x))
    b = 0.5 + 0.4 * np.cos(9.0 * x * y + 1.0)
    rgb = np.stack([r, g, b], axis=-1).astype(np.float32) * np.float32(0.8)
    write_pfm(path, rgb)


def xmp(history, presets):
    items = []
    for i, (module, name) in enumerate(history):
        version, params, blend_version, blend_params = presets[(module, name)]
        items.append(
            f"""     <rdf:li darktable:num="{i}" darktable:operation="{module}"
      darktable:enabled="1" darktable:modversion="{version}"
      darktable:params="{params.hex()}" darktable:multi_name=""
      darktable:multi_priority="0" darktable:blendop_version="{blend_version}"
      darktable:blendop_params="{blend_params.hex()}"/>"""
        )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:darktable="http://darktable.sf.net/"
   darktable:xmp_version="5" darktable:history_end="{len(history)}"
   darktable:iop_order_version="2">
   <darktable:history>
    <rdf:Seq>
{chr(10).join(items)}
    </rdf:Seq>
   </darktable:history>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
"""


class Platform:
    """darktable-cli with OpenCL on one set of ICD files, in a config folder
    of its own."""

    def __init__(self, name, scratch, vendors, extra_env):
        self.name = name
        self.config = os.path.join(scratch, f"config-{name}")
        self.cache = os.path.join(scratch, f"cache-{name}")
        self.env = dict(os.environ, OCL_ICD_VENDORS=vendors, CL_DEVICE_TYPE="all", **extra_env)
        shutil.rmtree(self.config, ignore_errors=True)
        os.makedirs(self.config)

    def run(self, image, sidecar, out):
        if os.path.exists(out):
            os.remove(out)
        args = [
            "darktable-cli", image, sidecar, out, "--core",
            "--configdir", self.config, "--cachedir", self.cache,
            "--conf", "opencl=TRUE", "--conf", "plugins/imageio/format/pfm/bpp=32",
            "-d", "opencl", "-d", "perf",
        ]
        try:
            p = subprocess.run(args, env=self.env, capture_output=True, text=True,
                               errors="replace", timeout=300)
        except subprocess.TimeoutExpired:
            return 124, "timed out after 300 s"
        return p.returncode, p.stdout + p.stderr

    def enable_cpu_devices(self):
        """darktable turns away OpenCL devices of type CPU the first time it
        sees them (its policy, for speed): its config marks them disabled,
        the eighth field of the device's line, which is set back to 0."""
        rc = os.path.join(self.config, "darktablerc")
        lines = open(rc).read().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^(cldevice_v\d+_[^=_]+)=(.*)$", line)
            if m:
                fields = m.group(2).split()
                if len(fields) >= 8:
                    fields[7] = "0"
                    lines[i] = f"{m.group(1)}={' '.join(fields)}"
        open(rc, "w").write("\n".join(lines) + "\n")


def on_device(log):
    """The modules the log (-d perf) says ran on the OpenCL device, and
    those that ran on the CPU."""
    gpu = set(re.findall(r"processed `([^']*)' on GPU", log))
    cpu = set(re.findall(r"processed `([^']*)' on CPU", log))
    return gpu, cpu - gpu


def main():
    scratch = sys.argv[1]
    quick = "--quick" in sys.argv[2:]
    under_test = os.environ.get("OCL_ICD_VENDORS")
    if not under_test:
        print("OCL_ICD_VENDORS must name the platform under test")
        return 2
    pocl = os.path.join(scratch, "pocl-vendors")
    os.makedirs(pocl, exist_ok=True)
    shutil.copy("/etc/OpenCL/vendors/pocl.icd", pocl)
    platforms = [
        Platform("test", scratch, under_test, {}),
        # darktable quotes its -I option, which PoCL does not unquote.
        Platform("pocl", scratch, pocl, {"POCL_EXTRA_BUILD_FLAGS": f"-I{KERNELS}"}),
    ]
    image = os.path.join(scratch, "input.pfm")
    test_image(image)
    # A first start writes the config (with the device disabled, as a CPU
    # device) and the presets; the second then uses the device.
    empty = os.path.join(scratch, "empty.xmp")
    open(empty, "w").write(xmp([], {}))
    for p in platforms:
        rc, log = p.run(image, empty, os.path.join(scratch, f"first-{p.name}.pfm"))
        if rc != 0:
            print(f"  FAIL first start on {p.name}: exit {rc}")
            print("\n".join(log.splitlines()[-5:]))
            print("0 passed, 1 failed")
            return 1
        p.enable_cpu_devices()
    db = sqlite3.connect(os.path.join(platforms[0].config, "data.db"))
    presets = {}
    for module, name, version, params, blend_version, blend_params in db.execute(
        "select operation, name, op_version, op_params, blendop_version, blendop_params"
        " from presets"
    ):
        presets[(module, name)] = (version, params, blend_version, blend_params)
    passed = failed = 0
    for case in QUICK if quick else CASES:
        history = CASES[case]
        missing = [h for h in history if h not in presets]
        if missing:
            print(f"  FAIL {case}: darktable has no preset {missing}")
            failed += 1
            continue
        sidecar = os.path.join(scratch, f"{case}.xmp")
        open(sidecar, "w").write(xmp(history, presets))
        results, problems = {}, []
        for p in platforms:
            out = os.path.join(scratch, f"{case}-{p.name}.pfm")
            rc, log = p.run(image, sidecar, out)
            gpu, cpu = on_device(log)
            if rc != 0 or not os.path.exists(out):
                problems.append(f"{p.name}: exit {rc}")
                problems += [f"    {line}" for line in log.splitlines()[-3:]]
            elif not gpu or cpu:
                problems.append(f"{p.name}: not on the OpenCL device ({', '.join(sorted(cpu)) or 'no OpenCL'})")
            else:
                results[p.name] = read_pfm(out)
        if not problems:
            a, b = results["test"], results["pocl"]
            if a.shape != b.shape:
                problems.append(f"shapes {a.shape} and {b.shape}")
            else:
                diff = float(np.nanmax(np.abs(a - b))) if np.isfinite(a).all() else float("inf")
                if not diff <= TOLERANCE:
                    problems.append(f"differs from PoCL by {diff:.3g}")
                else:
                    print(f"  ok {case}: within {diff:.2g} of PoCL")
        if problems:
            failed += 1
            print(f"  FAIL {case}: " + "; ".join(problems))
        else:
            passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
