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
