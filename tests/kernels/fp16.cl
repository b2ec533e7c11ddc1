// Half-precision arithmetic (cl_khr_fp16), checked by tests/fp16.rs.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

__kernel void arithmetic(__global const half *a, __global const half *b, __global half *out) {
    size_t i = get_global_id(0);
    half x = a[i], y = b[i];
    out[5 * i] = x + y;
    out[5 * i + 1] = x - y;
    out[5 * i + 2] = x * y;
    out[5 * i + 3] = x / y;
    out[5 * i + 4] = sqrt(x);
}

__kernel void fused(__global const half *a, __global const half *b, __global const half *c,
                    __global half *out) {
    size_t i = get_global_id(0);
    out[i] = fma(a[i], b[i], c[i]);
}

__kernel void conversions(__global const float *f, __global const int *n, __global const half *h,
                          __global half *rounded, __global int *ints, __global float *widened) {
    size_t i = get_global_id(0);
    float x = f[i];
    rounded[6 * i] = convert_half(x);
    rounded[6 * i + 1] = convert_half_rtz(x);
    rounded[6 * i + 2] = convert_half_rtp(x);
    rounded[6 * i + 3] = convert_half_rtn(x);
    rounded[6 * i + 4] = convert_half(n[i]);
    rounded[6 * i + 5] = convert_half_rtz(n[i]);
    ints[2 * i] = convert_int_sat(h[i]);
    ints[2 * i + 1] = convert_int_sat_rtp(h[i]);
    widened[i] = convert_float_rtz(h[i]);
}

__kernel void math(__global const half *a, __global const half *b, __global half *out) {
    size_t i = get_global_id(0);
    half x = a[i], y = b[i];
    out[8 * i] = sin(x);
    out[8 * i + 1] = exp(x);
    out[8 * i + 2] = log(x);
    out[8 * i + 3] = pow(x, y);
    out[8 * i + 4] = atan2(x, y);
    out[8 * i + 5] = fmax(x, y);
    out[8 * i + 6] = rsqrt(x);
    out[8 * i + 7] = mad(x, y, x);
}

__kernel void vectors_and_out_parameters(__global const half4 *a, __global half4 *out,
                                         __global int4 *ints) {
    size_t i = get_global_id(0);
    half4 x = a[i];
    half4 whole;
    half4 frac = modf(x, &whole);
    int4 e;
    half4 m = frexp(x, &e);
    out[4 * i] = frac;
    out[4 * i + 1] = whole;
    out[4 * i + 2] = m;
    out[4 * i + 3] = x * (half)2.0 + (half4)(0.5h, -1.0h, 2.0h, 0.25h);
    ints[2 * i] = e;
    ints[2 * i + 1] = convert_int4(isnan(x)) + 2 * convert_int4(x > (half)1.0)
        + 4 * convert_int4(as_ushort4(x) & (ushort)1) + 8 * convert_int4(isnormal(x));
}

__kernel void image_halves(read_only image2d_t src, write_only image2d_t dst) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    write_imageh(dst, p, read_imageh(src, p) * (half)2.0);
}

// Edges where half differs from float: nextafter steps between halves,
// fract stays below 1.
__kernel void edges(__global const half *a, __global const half *b, __global half *out) {
    size_t i = get_global_id(0);
    half whole;
    out[2 * i] = nextafter(a[i], b[i]);
    out[2 * i + 1] = fract(a[i], &whole);
}

// Eight-wide halves: each operation rounded on its own (contraction
// off), comparisons with NaNs unordered.
__kernel void wide_vectors_and_comparisons(__global const half8 *a, __global const half8 *b,
                                           __global half8 *out, __global short8 *flags) {
#pragma OPENCL FP_CONTRACT OFF
    size_t i = get_global_id(0);
    half8 x = a[i], y = b[i];
    out[3 * i] = x * y - x;
    out[3 * i + 1] = -x + y;
    out[3 * i + 2] = x * (half)3.0;
    flags[3 * i] = x < y;
    flags[3 * i + 1] = x >= y;
    flags[3 * i + 2] = x != y;
}

// Signs read through conversions to float: NaNs keep theirs.
__kernel void signs(__global const half *a, __global const half *b, __global half *out,
                    __global int *flags) {
    size_t i = get_global_id(0);
    out[i] = copysign(a[i], b[i]);
    flags[i] = signbit(b[i]);
}
