// Conversions with saturation and rounding modes.
#define OUT(k, v) o[(k) * n + i] = (v)

__kernel void float_to_int(__global const float *a, __global int *o) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float x = a[i];
    OUT(0, convert_int_sat(x));
    OUT(1, convert_int_sat_rte(x));
    OUT(2, convert_int_sat_rtp(x));
    OUT(3, convert_int_sat_rtn(x));
    OUT(4, as_int(convert_uint_sat(x)));
    OUT(5, convert_uchar_sat(x));
    OUT(6, convert_char_sat_rte(x));
    OUT(7, convert_short_sat_rtn(x));
    OUT(8, convert_ushort_sat_rtp(x));
    OUT(9, fabs(x) < 1.0e9f ? convert_int_rte(x) : 0);
    OUT(10, fabs(x) < 1.0e9f ? convert_int_rtp(x) : 0);
}

__kernel void int_to_int(__global const int *a, __global int *o) {
    size_t i = get_global_id(0), n = get_global_size(0);
    int x = a[i];
    uint u = as_uint(x);
    long l = (long)x * 3;
    OUT(0, convert_uchar_sat(x));
    OUT(1, convert_char_sat(x));
    OUT(2, convert_ushort_sat(x));
    OUT(3, convert_short_sat(x));
    OUT(4, as_int(convert_uint_sat(x)));
    OUT(5, convert_int_sat(u));
    OUT(6, convert_uchar_sat(u));
    OUT(7, convert_char_sat(u));
    OUT(8, convert_int_sat(l));
    OUT(9, as_int(convert_uint_sat(l)));
    OUT(10, convert_short_sat(l));
}

__kernel void int_to_float(__global const int *a, __global float *o) {
    size_t i = get_global_id(0), n = get_global_size(0);
    int x = a[i];
    uint u = as_uint(x);
    OUT(0, convert_float_rtz(x));
    OUT(1, convert_float_rtp(x));
    OUT(2, convert_float_rtn(x));
    OUT(3, convert_float_rte(x));
    OUT(4, convert_float_rtz(u));
    OUT(5, convert_float_rtp(u));
    OUT(6, convert_float_rtn(u));
    OUT(7, convert_float(u));
}

__kernel void long_to_float(__global const long *a, __global float *o) {
    size_t i = get_global_id(0), n = get_global_size(0);
    long x = a[i];
    ulong u = as_ulong(x);
    OUT(0, convert_float_rtz(x));
    OUT(1, convert_float_rtp(x));
    OUT(2, convert_float_rtn(x));
    OUT(3, convert_float_rtz(u));
    OUT(4, convert_float_rtp(u));
    OUT(5, convert_float_rtn(u));
}
