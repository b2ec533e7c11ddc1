"""pyvkfft's tests on the OpenCL device (scripts/apps.sh pyvkfft).

pyvkfft (VkFFT from Python) generates and builds an FFT kernel for each
transform it plans: radix, Bluestein and real-to-complex kernels, with
local memory and barriers. Its own test command, pyvkfft-test, looks for
GPU devices only; this runs the same tests on the first device of the
first platform, CPU devices included.

    pyvkfft_test.py          pyvkfft's regular test suite (pyvkfft-test)
    pyvkfft_test.py --quick  its accuracy check of a few transforms

Each transform is compared with NumPy or SciPy by pyvkfft's own measure
and tolerance. The last line is "N passed, N failed" (the suite's, with
the tests skipped: pyvkfft's CUDA ones); a failed subtest of the suite
counts as one failure.
"""

import sys

import pyopencl as cl

# pyvkfft picks its device by type at each call: let it take any.
cl.device_type.GPU = cl.device_type.ALL


def quick():
    import numpy as np
    from pyvkfft.accuracy import test_accuracy

    # (shape, ndim, dtype, r2c, dct)
    cases = [
        ((256,), 1, np.complex64, False, False),
        ((30, 42), 2, np.complex64, False, False),
        ((16, 16, 16), 3, np.complex64, False, False),
        ((97,), 1, np.complex64, False, False),  # Bluestein
        ((14,), 1, np.float32, True, False),
        ((15,), 1, np.float32, True, False),  # odd lengths: local float2 halves
        ((9, 20), 2, np.float32, True, False),
        ((64,), 1, np.float32, False, 2),  # DCT-II
    ]
    passed = failed = 0
    for shape, ndim, dtype, r2c, dct in cases:
        for inplace in (False, True):
            res = test_accuracy("pyopencl", shape, ndim, None, dtype, inplace, 1, None,
                                r2c=r2c, dct=dct, verbose=False)
            what = "%s %s %s inplace=%d" % (
                "R2C" if r2c else "DCT%d" % dct if dct else "C2C",
                shape, np.dtype(dtype), inplace)
            good = res["tol_test"] and (inplace or res["src_unchanged_fft"])
            if good:
                passed += 1
                print("  ok   %s" % what)
            else:
                failed += 1
                print("  FAIL %s: FFT %.1e, iFFT %.1e, tolerance %.1e" % (
                    what, res["ni"], res["nii"], res["tol"]))
    print("%d passed, %d failed" % (passed, failed))
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
    sys.exit(0 if (quick() if "--quick" in sys.argv[1:] else suite()) else 1)
