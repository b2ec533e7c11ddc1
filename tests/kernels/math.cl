// Math built-ins, one result per function and input; the host checks each
// against a double-precision reference within OpenCL C's ULP limits.

#define OUT(k, v) out[(k) * n + i] = (v)

__kernel void unary(__global const float *in, __global float *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float x = in[i];
    OUT(0, sin(x));
    OUT(1, cos(x));
    OUT(2, tan(x));
    OUT(3, asin(x));
    OUT(4, acos(x));
    OUT(5, atan(x));
    OUT(6, sinh(x));
    OUT(7, cosh(x));
    OUT(8, tanh(x));
    OUT(9, asinh(x));
    OUT(10, acosh(x));
    OUT(11, atanh(x));
    OUT(12, exp(x));
    OUT(13, exp2(x));
    OUT(14, exp10(x));
    OUT(15, expm1(x));
    OUT(16, log(x));
    OUT(17, log2(x));
    OUT(18, log10(x));
    OUT(19, log1p(x));
    OUT(20, sqrt(x));
    OUT(21, rsqrt(x));
    OUT(22, cbrt(x));
    OUT(23, round(x));
    float whole;
    OUT(24, fract(x, &whole));
    OUT(25, whole);
    OUT(26, logb(x));
    int e;
    OUT(27, frexp(x, &e));
    OUT(28, (float)e);
    // Reduced precision: within 8192 ULP, also where results are tiny.
    OUT(29, half_sin(x));
    OUT(30, half_cos(x));
    OUT(31, half_exp(x));
    OUT(32, half_exp2(x));
    OUT(33, half_log(x));
    OUT(34, half_log2(x));
    OUT(35, half_log10(x));
    OUT(36, half_exp10(x));
    OUT(37, half_recip(x));
}

__kernel void binary(__global const float *in, __global const float *in2, __global float *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float x = in[i], y = in2[i];
    OUT(0, pow(x, y));
    OUT(1, atan2(x, y));
    OUT(2, hypot(x, y));
    OUT(3, x * y);
    OUT(4, x - y);
    OUT(5, copysign(x, y));
    OUT(6, fdim(x, y));
    OUT(7, maxmag(x, y));
    OUT(8, minmag(x, y));
    OUT(9, nextafter(x, y));
    OUT(10, x / y);
    OUT(11, ldexp(x, (int)y));
    OUT(12, pown(x, (int)y));
    OUT(13, fmax(x, y));
    OUT(14, fmin(x, y));
    OUT(15, fabs(x));
}

// sin on 16-component vectors: libclc's vector overload, split afterwards.
__kernel void wide(__global const float16 *in, __global float16 *out) {
    size_t i = get_global_id(0);
    out[i] = sin(in[i]) + exp(in[i] * 0.125f);
}

// fmod, remainder, remquo and fma: libclc's implementations, with loops
// and many branches.
__kernel void remainders(__global const float *in, __global const float *in2, __global float *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float x = in[i], y = in2[i];
    int q;
    OUT(0, fmod(x, y));
    OUT(1, remainder(x, y));
    OUT(2, remquo(x, y, &q));
    OUT(3, (float)(q & 7));
    OUT(4, fma(x, y, x));
}

// Built with -cl-fast-relaxed-math in the tests: native forms allowed.
__kernel void relaxed(__global const float *in, __global float *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float x = in[i];
    OUT(0, sin(x));
    OUT(1, cos(x));
    OUT(2, exp(x));
    OUT(3, log(fabs(x) + 0.25f));
    OUT(4, powr(fabs(x) + 0.25f, 1.5f));
}

// The native functions, whose precision is the implementation's.
__kernel void natives(__global const float *in, __global float *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float x = in[i];
    float4 v = (float4)(x, x * 0.5f, x * 0.25f, x * 0.125f);
    OUT(0, native_exp10(x));
    OUT(1, native_log10(fabs(x) + 0.25f));
    OUT(2, native_exp2(x));
    OUT(3, native_log2(fabs(x) + 0.25f));
    OUT(4, native_exp10(v).w);
    OUT(5, native_log10(fabs(v) + 0.25f).y);
    OUT(6, native_recip(fabs(x) + 0.25f));
    OUT(7, native_powr(fabs(x) + 0.25f, 1.5f));
}

// The signed zeros of sinpi, cospi and tanpi at whole and half numbers,
// and tgamma's signed infinities at zeros.
__kernel void pi_zeros(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float x = in[i];
    out[4 * i] = sinpi(x);
    out[4 * i + 1] = cospi(x);
    out[4 * i + 2] = tanpi(x);
    out[4 * i + 3] = tgamma(x);
}

// tgamma and erfc, which single precision computes in double where the
// device has doubles.
__kernel void gamma_erfc(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    out[2 * i] = tgamma(in[i]);
    out[2 * i + 1] = erfc(in[i]);
}
