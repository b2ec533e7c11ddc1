// Half-precision values in memory, computed in single precision.
__kernel void load_half(__global const half *h, __global float *f, __global float4 *f4, __global float *f3) {
    size_t i = get_global_id(0);
    f[i] = vload_half(i, h);
    if (i % 4 == 0) {
        f4[i / 4] = vload_half4(i / 4, h);
        vstore3(vloada_half3(i / 4, h), i / 4, f3);
    }
}

__kernel void store_half(__global const float *f, __global half *rte, __global half *rtz,
                         __global half *rtp, __global half *rtn, __global half *vec) {
    size_t i = get_global_id(0);
    float x = f[i];
    vstore_half(x, i, rte);
    vstore_half_rtz(x, i, rtz);
    vstore_half_rtp(x, i, rtp);
    vstore_half_rtn(x, i, rtn);
    if (i % 2 == 0)
        vstore_half2(vload2(i / 2, f), i / 2, vec);
}
