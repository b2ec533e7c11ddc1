// The integer built-ins for one scalar or vector type T, chosen with -DT=...
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define AS_T(v) CAT(as_, T)(v)

#ifdef T
__kernel void ops(__global const T *a, __global const T *b, __global const T *c, __global T *r) {
    size_t i = get_global_id(0), n = get_global_size(0);
    T x = a[i], y = b[i], z = c[i];
    r[0 * n + i] = clz(x);
    r[1 * n + i] = ctz(x);
    r[2 * n + i] = popcount(x);
    r[3 * n + i] = rotate(x, y);
    r[4 * n + i] = add_sat(x, y);
    r[5 * n + i] = sub_sat(x, y);
    r[6 * n + i] = hadd(x, y);
    r[7 * n + i] = rhadd(x, y);
    r[8 * n + i] = AS_T(abs_diff(x, y));
    r[9 * n + i] = mul_hi(x, y);
    r[10 * n + i] = mad_hi(x, y, z);
    r[11 * n + i] = mad_sat(x, y, z);
    r[12 * n + i] = bitselect(x, y, z);
    r[13 * n + i] = select(x, y, z);
    r[14 * n + i] = AS_T(abs(x));
    r[15 * n + i] = x * y + z;
    // Division and remainder with both signs (never by 0 or -1).
    T d = ((y >> 2) & ~(T)1) | (T)2;
    r[16 * n + i] = x / d;
    r[17 * n + i] = x % d;
}
#endif

// upsample(hi, lo) for the H/L/R types given with -DH=... -DL=... -DR=...
#ifdef H
__kernel void up(__global const H *hi, __global const L *lo, __global R *r) {
    size_t i = get_global_id(0);
    r[i] = upsample(hi[i], lo[i]);
}
#endif
