// Kernel arguments that do not fit (or do not travel as) push constants.

typedef struct {
    char c;
    int i;
    float4 v;
    short s[3];
} Inner;

typedef struct {
    uchar tag;
    Inner in;
    long l;
    char3 c3;
} Outer;

// Each field of a struct argument, as ints.
__kernel void structs(__global int *out, Outer o, int k) {
    out[0] = o.tag;
    out[1] = o.in.c;
    out[2] = o.in.i;
    out[3] = (int)o.in.v.x;
    out[4] = (int)o.in.v.w;
    out[5] = o.in.s[0];
    out[6] = o.in.s[2];
    out[7] = (int)(o.l >> 32);
    out[8] = (int)o.l;
    out[9] = o.c3.x;
    out[10] = o.c3.z;
    out[11] = k;
}

// Every component of wide and narrow vectors, as longs.
__kernel void vectors(__global long *out, float8 f, char16 c, short8 s, char3 c3,
                      uchar8 u8, long16 l, ushort2 u2, int k) {
    int n = 0;
    for (int i = 0; i < 8; i++) out[n++] = (long)f[i];
    for (int i = 0; i < 16; i++) out[n++] = c[i];
    for (int i = 0; i < 8; i++) out[n++] = s[i];
    for (int i = 0; i < 3; i++) out[n++] = c3[i];
    for (int i = 0; i < 8; i++) out[n++] = u8[i];
    for (int i = 0; i < 16; i++) out[n++] = l[i];
    for (int i = 0; i < 2; i++) out[n++] = u2[i];
    out[n++] = k;
}

// 160 bytes of scalars: more than lavapipe's push constants hold.
__kernel void many(__global long *out, long a0, long a1, long a2, long a3, long a4,
                   long a5, long a6, long a7, long a8, long a9, int b0, long a10,
                   long a11, long a12, long a13, long a14, long a15, long a16,
                   long a17, long a18, float b1) {
    size_t i = get_global_id(0);
    long sum = a0 + 2 * a1 + 3 * a2 + 4 * a3 + 5 * a4 + 6 * a5 + 7 * a6 + 8 * a7
        + 9 * a8 + 10 * a9 + 11 * a10 + 12 * a11 + 13 * a12 + 14 * a13 + 15 * a14
        + 16 * a15 + 17 * a16 + 18 * a17 + 19 * a18;
    out[i] = sum * (long)i + b0 + (long)b1;
}

// Close to CL_DEVICE_MAX_PARAMETER_SIZE (1024 bytes) in one struct.
typedef struct {
    int v[240];
    short tail;
} Big;

__kernel void big(__global int *out, Big b) {
    size_t i = get_global_id(0);
    out[i] = b.v[i] * 2 + b.tail;
}
