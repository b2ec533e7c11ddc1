// Shapes of optimised code the front end must hand on valid, built
// optimised: merged switch cases (a phi naming one parent per case), a
// switch on two bits (LLVM narrows it to `i2` unless native integer widths
// are declared) and a copy loop of run-time length (a `memcpy` to LLVM's
// loop idioms). `shapes(out, 41)` stores 487, and 531 with NARROW_SWITCH
// defined (which adds the two-bit switch: without it, LLVM's optimised code
// translates as it is).
uint pick(uint x, uint y) {
    switch (x) {
    case 0: case 4: case 9: case 13: return 0;
    case 3: return y * 5;
    case 5: return y ^ 77;
    case 7: return y + 3;
    default: return y >> 2;
    }
}
#ifdef NARROW_SWITCH
uint quarter(uint x) {
    switch (x & 3) {
    case 0: return x * 7;
    case 1: return x ^ 5;
    case 2: return x + 9;
    default: return x >> 1;
    }
}
#else
uint quarter(uint x) { return 0; }
#endif
kernel void shapes(global int* out, int value) {
    uint buf[16], copy[16];
    uint n = (uint)value & 15;
    for (uint i = 0; i < 16; i++) buf[i] = i * 3 + value;
    for (uint i = 0; i < n; i++) copy[i] = buf[i];
    uint s = 0;
    for (uint i = 0; i < n; i++) s += copy[i];
    out[0] = (int)(s + pick((uint)value, (uint)value) + quarter((uint)value));
}
