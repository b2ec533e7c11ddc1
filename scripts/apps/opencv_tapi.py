"""OpenCV's transparent API (UMat) on the default OpenCL device, each
operation compared with OpenCV's own CPU result. OpenCL errors raise
(OPENCV_OPENCL_RAISE_ERROR) instead of falling back to the CPU quietly.
Prints one line per operation and a closing 'N passed, N failed' line."""

import os
import sys

os.environ.setdefault("OPENCV_OPENCL_RAISE_ERROR", "1")
# OpenCV takes a GPU by default; lavapipe's device is a CPU one.
os.environ.setdefault("OPENCV_OPENCL_DEVICE", ":GPU:0")

import cv2  # noqa: E402
import numpy as np  # noqa: E402


def main():
    if not cv2.ocl.haveOpenCL():
        print("opencv: no OpenCL device")
        print("0 passed, 1 failed")
        return 1
    cv2.ocl.setUseOpenCL(True)
    dev = cv2.ocl.Device.getDefault()
    if not dev.name():
        if os.environ["OPENCV_OPENCL_DEVICE"] == ":GPU:0":
            os.environ["OPENCV_OPENCL_DEVICE"] = ":CPU:0"
            os.execv(sys.executable, [sys.executable] + sys.argv)
        print("opencv: no OpenCL device selected")
        print("0 passed, 1 failed")
        return 1
    print(f"device: {dev.name()} ({dev.vendorName()}, {dev.version()})")
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    # A smooth image too, so that edges and thresholds are not all noise.
    yy, xx = np.mgrid[0:480, 0:640]
    smooth = ((np.sin(xx / 23.0) + np.cos(yy / 17.0)) * 60 + 128).astype(np.uint8)
    f32 = rng.random((256, 256), dtype=np.float32)
    rot = cv2.getRotationMatrix2D((320, 240), 17, 0.9)

    # name, function, input, tolerance (max abs difference), share of
    # elements allowed to differ by more (rounding of filters on ties)
    cases = [
        ("cvtColor BGR2GRAY", lambda m: cv2.cvtColor(m, cv2.COLOR_BGR2GRAY), img, 1, 0),
        ("cvtColor BGR2HSV", lambda m: cv2.cvtColor(m, cv2.COLOR_BGR2HSV), img, 2, 0.001),
        ("GaussianBlur 5x5", lambda m: cv2.GaussianBlur(m, (5, 5), 1.5), img, 1, 0),
        ("blur 7x7", lambda m: cv2.blur(m, (7, 7)), img, 1, 0),
        ("medianBlur 3", lambda m: cv2.medianBlur(m, 3), img, 0, 0),
        ("resize linear", lambda m: cv2.resize(m, (320, 240), interpolation=cv2.INTER_LINEAR), img, 1, 0),
        ("resize area", lambda m: cv2.resize(m, (160, 120), interpolation=cv2.INTER_AREA), img, 1, 0),
        ("warpAffine", lambda m: cv2.warpAffine(m, rot, (640, 480)), img, 2, 0.002),
        ("Sobel dx", lambda m: cv2.Sobel(m, cv2.CV_16S, 1, 0), smooth, 0, 0),
        ("Canny", lambda m: cv2.Canny(m, 50, 150), smooth, 0, 0.01),
        ("threshold", lambda m: cv2.threshold(m, 127, 255, cv2.THRESH_BINARY)[1], smooth, 0, 0),
        ("erode", lambda m: cv2.erode(m, np.ones((3, 3), np.uint8)), img, 0, 0),
        ("dilate", lambda m: cv2.dilate(m, np.ones((5, 5), np.uint8)), img, 0, 0),
        ("add", lambda m: cv2.add(m, m), img, 0, 0),
        ("addWeighted", lambda m: cv2.addWeighted(m, 0.3, m, 0.6, 5), img, 1, 0),
        ("equalizeHist", lambda m: cv2.equalizeHist(m), smooth, 1, 0),
        ("multiply float", lambda m: cv2.multiply(m, m, scale=0.5), f32, 1e-6, 0),
        ("gemm", lambda m: cv2.gemm(m, m, 1.0, None, 0.0), f32, 1e-3, 0),
        ("dft", lambda m: cv2.dft(m, flags=cv2.DFT_COMPLEX_OUTPUT), f32, 1e-2, 0),
        ("sqrt", lambda m: cv2.sqrt(m), f32, 1e-6, 0),
        ("normalize", lambda m: cv2.normalize(m, None, 0, 1, cv2.NORM_MINMAX), f32, 1e-5, 0),
    ]
    passed = failed = 0
    for name, fn, data, tol, share in cases:
        try:
            want = np.asarray(fn(data))
            got = fn(cv2.UMat(data))
            got = got.get() if isinstance(got, cv2.UMat) else np.asarray(got)
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            over = float((diff > tol).mean()) if diff.size else 0.0
            ok = got.shape == want.shape and over <= share
            detail = f"max diff {diff.max() if diff.size else 0:g}, {over:.4%} over {tol}"
        except cv2.error as e:
            ok, detail = False, f"OpenCL error: {str(e).strip().splitlines()[-1]}"
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: {detail}")
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
