"""pyvkfft's tests on the OpenCL device (scripts/apps.sh pyvkfft).

pyvkfft (VkFFT from Python) generates and builds an FFT kernel for each
transform it plans: radix, Bluestein and real-to-complex kernels, with
local memory and barriers. Its own test command, pyvkfft-test, looks for
GPU devices only; this runs on the first device of the first platform,
CPU devices included.

    pyvkfft_test.py          pyvkfft's accuracy check (its test suite's
                             measure and tolerance, against SciPy) of
                             156 transforms of every kind
    pyvkfft_test.py --quick  the same of 16 transforms
    pyvkfft_test.py --suite  pyvkfft's regular test suite (pyvkfft-test:
                             hours on a CPU device)

The last line is "N passed, N failed, N skipped" (with --suite, a failed
subtest counts as one failure and the skipped tests are pyvkfft's CUDA
ones).
"""

import sys

import pyopencl as cl

# pyvkfft picks its device by type at each call: let it take any.
cl.device_type.GPU = cl.device_type.ALL


# (shape, ndim, dtype, r2c, dct, dst) of the transforms --quick checks.
QUICK = [
    ((256,), 1, "complex64", False, 0, 0),
    ((30, 42), 2, "complex64", False, 0, 0),
    ((16, 16, 16), 3, "complex64", False, 0, 0),
    ((97,), 1, "complex64", False, 0, 0),  # Bluestein
    ((14,), 1, "float32", True, 0, 0),
    ((15,), 1, "float32", True, 0, 0),  # odd lengths: local float2 halves
    ((9, 20), 2, "float32", True, 0, 0),
    ((64,), 1, "float32", False, 2, 0),  # DCT-II
]


def wide():
    """The transforms the default run checks: every kind and radix, odd
    and prime lengths (Bluestein), one to three dimensions, batches, in
    single and double precision."""
    cases = []
    for dtype in ("complex64", "complex128"):
        for n in (2, 3, 5, 7, 11, 13, 16, 60, 97, 210, 243, 1024, 1031, 4096):
            cases.append(((n,), 1, dtype, False, 0, 0))
        for shape in ((8, 30), (30, 42), (128, 128), (5, 7, 11), (16, 16, 16)):
            cases.append((shape, len(shape), dtype, False, 0, 0))
        cases.append(((4, 100), 1, dtype, False, 0, 0))  # a batch of 4
    for dtype in ("float32", "float64"):
        for n in (8, 9, 14, 15, 64, 100, 127, 1000):
            cases.append(((n,), 1, dtype, True, 0, 0))
        for shape in ((9, 20), (30, 42), (6, 10, 14)):
            cases.append((shape, len(shape), dtype, True, 0, 0))
        for kind in (1, 2, 3, 4):
            cases.append(((64,), 1, dtype, False, kind, 0))
            cases.append(((30, 21), 2, dtype, False, 0, kind))
    return cases


def check(cases):
    import numpy as np
    from pyvkfft.accuracy import test_accuracy

    double = "cl_khr_fp64" in cl.get_platforms()[0].get_devices()[0].extensions
    passed = failed = skipped = 0
    for shape, ndim, dtype, r2c, dct, dst in cases:
        if dtype in ("complex128", "float64") and not double:
            skipped += 2
            continue
        for inplace in (False, True):
            kind = "R2C" if r2c else "DCT%d" % dct if dct else "DST%d" % dst if dst else "C2C"
            what = "%s %s %s inplace=%d" % (kind, shape, dtype, inplace)
            try:
                res = test_accuracy("pyopencl", shape, ndim, None, np.dtype(dtype), inplace, 1,
                                    None, r2c=r2c, dct=dct, dst=dst, verbose=False)
            except Exception as e:
                failed += 1
                print("  FAIL %s: %s" % (what, str(e).splitlines()[0] if str(e) else type(e)))
                continue
            if res["tol_test"] and (inplace or res["src_unchanged_fft"]):
                passed += 1
                print("  ok   %s" % what)
            else:
                failed += 1
                print("  FAIL %s: FFT %.1e, iFFT %.1e, tolerance %.1e" % (
                    what, res["ni"], res["nii"], res["tol"]))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return failed == 0


def suite():
    import unittest

    from pyvkfft.scripts.pyvkfft_test import main

    # Keep the runner's result: its failures list every failed subtest.
    results = []
    run = unittest.TextTestRunner.run

    def keep(self, test):
        results.append(run(self, test))
        return results[-1]

    unittest.TextTestRunner.run = keep
    sys.argv = ["pyvkfft-test", "--backend", "pyopencl", "--nproc", "1", "--silent"]
    try:
        main()
    except SystemExit:
        pass
    if not results:
        print("0 passed, 1 failed (the suite did not run)")
        return False
    r = results[-1]
    bad = r.failures + r.errors
    tests_failed = len({t.id().split(" ")[0] for t, _ in bad})
    passed = r.testsRun - len(r.skipped) - tests_failed
    print("%d passed, %d failed, %d skipped" % (passed, len(bad), len(r.skipped)))
    return not bad


if __name__ == "__main__":
    if "--suite" in sys.argv[1:]:
        ok = suite()
    else:
        ok = check(QUICK if "--quick" in sys.argv[1:] else wide())
    sys.exit(0 if ok else 1)
