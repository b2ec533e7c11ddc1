// Rotates and byte alignment written with shifts, as hash kernels write
// them: optimised, LLVM makes them funnel shifts (llvm.fshl/fshr), which
// llvm-spirv emits as helper functions; vkcl lowers their calls in place.
// Amounts of 0 and of the full width included, and 64-bit funnel shifts
// by constants below, at and above 32 (which vkcl does on 32-bit words).
uint align_bytes(uint a, uint b, int c) {
    switch (c & 3) {
    case 0: return b;
    case 1: return (a << 24) | (b >> 8);
    case 2: return (a << 16) | (b >> 16);
    default: return (a << 8) | (b >> 24);
    }
}

kernel void funnel_shifts(global const uint *in, global uint *out) {
    size_t g = get_global_id(0);
    uint x = in[2 * g], y = in[2 * g + 1];
    uint s = (uint)g & 31;
    ulong wide = ((ulong)x << 32) | y;
    uint t = (uint)g & 63;
    out[12 * g] = (x << s) | (x >> ((32 - s) & 31));
    out[12 * g + 1] = (x >> s) | (x << ((32 - s) & 31));
    ulong r = (wide << t) | (wide >> ((64 - t) & 63));
    out[12 * g + 2] = (uint)r;
    out[12 * g + 3] = (uint)(r >> 32);
    out[12 * g + 4] = align_bytes(x, y, (int)g) ^ align_bytes(y, x, (int)(g >> 2));
    out[12 * g + 5] = (x << 7 | x >> 25) + (y >> 13 | y << 19);
    ulong other = ((ulong)y << 32) | (x ^ 0x5a5a5a5au);
    ulong rot = ((wide >> 14) | (wide << 50)) ^ ((wide >> 41) | (wide << 23));
    ulong mixed = ((wide << 32) | (wide >> 32)) + ((wide << 40) | (other >> 24));
    ulong low = (wide >> 7) | (other << 57);
    out[12 * g + 6] = (uint)rot;
    out[12 * g + 7] = (uint)(rot >> 32);
    out[12 * g + 8] = (uint)mixed;
    out[12 * g + 9] = (uint)(mixed >> 32);
    out[12 * g + 10] = (uint)low;
    out[12 * g + 11] = (uint)(low >> 32);
}
