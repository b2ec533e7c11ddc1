// Vectors of 8/16-bit values as arguments.
__kernel void narrow(__global uchar4 *out, uchar4 v, uchar3 w, ushort2 s, char2 c) {
    out[0] = v;
    out[1] = (uchar4)(w, 9);
    out[2] = as_uchar4(s);
    out[3] = (uchar4)(as_uchar2(c), 1, 2);
}

// vloadn/vstoren on global and __local memory.
__kernel void vl(__global const float *in, __global float *out, __local float *tmp) {
    size_t i = get_global_id(0), l = get_local_id(0);
    vstore4(vload4(i, in) * 2.0f, l, tmp);
    barrier(CLK_LOCAL_MEM_FENCE);
    vstore3(vload3(l, tmp) + 1.0f, i, out);
}

// Wide vectors reinterpreted as vectors or scalars of other component
// sizes, on values the kernel computes (not only loads).
__kernel void reinterpret_wide(__global const uint4 *w, __global const ulong *l, __global const uchar16 *b,
                               __global uchar16 *bytes_of_w, __global uint4 *words_of_b,
                               __global ulong *long_of_b, __global uchar8 *bytes_of_l,
                               __global short16 *shorts_of_longs, __global float8 *floats_of_shorts) {
    uint4 v = w[0] + (uint4)(1, 2, 3, 4);
    bytes_of_w[0] = as_uchar16(v) + (uchar16)(1);
    uchar16 c = b[0] ^ (uchar16)(0x5a);
    words_of_b[0] = as_uint4(c);
    long_of_b[0] = as_ulong(c.lo) + 1;
    bytes_of_l[0] = as_uchar8(l[0] + 3) + (uchar8)(2);
    long4 big = (long4)(l[0], l[0] * 3, -l[0], 7);
    shorts_of_longs[0] = as_short16(big);
    floats_of_shorts[0] = as_float8(as_short16(big) + (short16)(1));
}
