"""Compares two images GEGL saved as NumPy arrays (gegl:npy-save).

Usage: gegl_compare.py GOT.npy WANT.npy TOLERANCE
Exits 0 when both have the same shape and every component is within
TOLERANCE of the other's; prints the largest difference either way.
"""
import sys

import numpy as np


def main() -> int:
    got, want, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
    a = np.load(got).astype(np.float64)
    b = np.load(want).astype(np.float64)
    if a.shape != b.shape:
        print(f"shape {a.shape}, expected {b.shape}")
        return 1
    if a.size == 0:
        print("empty image")
        return 1
    worst = float(np.abs(a - b).max())
    print(f"{a.shape[1]}x{a.shape[0]}, largest difference {worst:.3g}")
    return 0 if worst <= tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
