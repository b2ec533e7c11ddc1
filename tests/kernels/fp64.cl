// Double precision (cl_khr_fp64): math built-ins, arithmetic, conversions
// with rounding modes, and vectors.

#define UNARY(F) o[n * k++ + i] = F(x);

// In three kernels: one with all of them is more than lavapipe's
// compiler survives.
kernel void unary0(global const double *in, global double *o, int n) {
    int i = get_global_id(0), k = 0;
    double x = in[i];
    UNARY(sqrt) UNARY(sin) UNARY(cos) UNARY(tan) UNARY(exp) UNARY(exp2)
    UNARY(log) UNARY(log2) UNARY(log10)
}

kernel void unary1(global const double *in, global double *o, int n) {
    int i = get_global_id(0), k = 0;
    double x = in[i];
    UNARY(cbrt) UNARY(atan) UNARY(asin) UNARY(acos) UNARY(sinh) UNARY(cosh)
    UNARY(tanh) UNARY(asinh) UNARY(acosh)
}

kernel void unary2(global const double *in, global double *o, int n) {
    int i = get_global_id(0), k = 0;
    double x = in[i];
    UNARY(atanh) UNARY(expm1) UNARY(log1p) UNARY(floor) UNARY(ceil)
    UNARY(trunc) UNARY(round) UNARY(fabs) UNARY(rsqrt)
}

kernel void binary(global const double *a, global const double *b, global double *o, int n) {
    int i = get_global_id(0), k = 0;
    double x = a[i], y = b[i];
    o[n * k++ + i] = pow(x, y);
    o[n * k++ + i] = atan2(x, y);
    o[n * k++ + i] = hypot(x, y);
    o[n * k++ + i] = fmod(x, y);
    o[n * k++ + i] = fmin(x, y);
    o[n * k++ + i] = fmax(x, y);
    o[n * k++ + i] = fma(x, y, x);
    o[n * k++ + i] = x * y;
    o[n * k++ + i] = x / y;
    o[n * k++ + i] = x + y;
    o[n * k++ + i] = copysign(x, y);
}

kernel void narrow(global const double *in, global float *o) {
    int i = get_global_id(0);
    double x = in[i];
    o[4 * i] = convert_float_rte(x);
    o[4 * i + 1] = convert_float_rtz(x);
    o[4 * i + 2] = convert_float_rtp(x);
    o[4 * i + 3] = convert_float_rtn(x);
}

kernel void to_int(global const double *in, global int *o) {
    int i = get_global_id(0);
    double x = in[i];
    o[4 * i] = convert_int_sat_rtz(x);
    o[4 * i + 1] = convert_int_sat_rtp(x);
    o[4 * i + 2] = convert_int_sat_rtn(x);
    o[4 * i + 3] = convert_int_sat_rte(x);
}

kernel void widen(global const float *f, global const int *n, global double *o) {
    int i = get_global_id(0);
    o[2 * i] = f[i];
    o[2 * i + 1] = convert_double(n[i]);
}

kernel void vectors(global const double *in, global double *o) {
    int i = get_global_id(0);
    double4 v = vload4(i, in);
    double4 w = v.wzyx * 2.0 + (double4)(dot(v, v));
    vstore4(w, i, o);
    double3 c = cross(v.xyz, v.yzx);
    vstore3(c, i, o + 4 * get_global_size(0));
}

kernel void narrow_half(global const double *in, global half *o) {
    int i = get_global_id(0);
    double x = in[i];
    vstore_half_rte(x, 4 * i, o);
    vstore_half_rtz(x, 4 * i + 1, o);
    vstore_half_rtp(x, 4 * i + 2, o);
    vstore_half_rtn(x, 4 * i + 3, o);
}
