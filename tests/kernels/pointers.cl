// Pointer casts and arithmetic on private and local data, and generic
// pointers (OpenCL C 3.0).

kernel void float_bytes(global const float *in, global uchar *out) {
    size_t i = get_global_id(0);
    float f = in[i];
    uchar *b = (uchar *)&f;
    int r = (int)(i & 3);
    for (int k = 0; k < 4; k++)
        out[4 * i + k] = b[(k + r) & 3];
}

kernel void private_vload(global const float4 *in, global float4 *out, global const int *shift) {
    size_t i = get_global_id(0);
    float4 v[2] = {in[i] * 2.0f, in[i] + 1.0f};
    out[i] = vload4(0, (float *)v + shift[i]);
}

kernel void walk_private(global const int *in, global int *out) {
    size_t i = get_global_id(0);
    int a[8];
    for (int k = 0; k < 8; k++)
        a[k] = in[8 * i + k] * 2 + k;
    int s = 0;
    for (int *p = a; p < a + 8; p++)
        s = s * 3 + *p;
    out[i] = s;
}

kernel void local_cast(global const float *in, global float *out) {
    local float tile[16];
    size_t l = get_local_id(0), g = get_global_id(0);
    tile[l] = in[g];
    barrier(CLK_LOCAL_MEM_FENCE);
    local float4 *t4 = (local float4 *)tile;
    float4 a = t4[(l / 4 + 1) % 4];
    float4 b = vload4(0, (local float *)tile + ((l + 4) & 12));
    out[g] = a.x + a.y * 2 + a.z * 3 + a.w * 4 + b.x * 5 + b.w * 6;
}

typedef struct {
    int a;
    float b;
    short c[3];
} S;

int read_through_casts(S *s) {
    int *p = (int *)s;
    return p[0] + (int)(((float *)p)[1]) + ((short *)(p + 2))[2];
}

kernel void struct_helper(global const int *in, global int *out) {
    size_t i = get_global_id(0);
    S s;
    s.a = in[i];
    s.b = in[i] * 0.5f;
    s.c[0] = 1;
    s.c[1] = 2;
    s.c[2] = (short)(in[i] + 7);
    out[i] = read_through_casts(&s);
}

kernel void alignment(global const int *idx, global uint *out) {
    local float4 l4[4];
    local long ld[2];
    float4 p4[3];
    long pd[2];
    size_t i = get_global_id(0);
    int k = idx[i];
    l4[k] = (float4)(1.0f);
    p4[k % 3] = (float4)(2.0f);
    pd[k & 1] = 3;
    ld[k & 1] = 4;
    out[i] = ((size_t)&l4[k] % 16) | ((size_t)&ld[k & 1] % 8) << 4 | ((size_t)&p4[k % 3] % 16) << 8 |
             ((size_t)&pd[k & 1] % 8) << 12 | ((uint)(p4[k % 3].y + pd[k & 1]) << 16);
}

kernel void generic_select(global float *buf, global const int *cond) {
    size_t i = get_global_id(0);
    float x = 10.0f;
    float *p = cond[i] ? (float *)&x : (float *)&buf[i];
    *p *= 3.0f;
    buf[i] += x;
}

kernel void generic_loop(global int *buf) {
    size_t i = get_global_id(0);
    int priv[4] = {1, 2, 3, 4};
    local int loc[4];
    if (get_local_id(0) == 0)
        for (int k = 0; k < 4; k++)
            loc[k] = 10 * (k + 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    int s = 0;
    for (int k = 0; k < 8; k++) {
        int *p = (k % 3 == 0) ? (int *)&priv[k & 3]
                 : (k % 3 == 1) ? (int *)&loc[k & 3]
                                : (int *)&buf[4 * i + (k & 3)];
        s += *p;
        if (k % 3 != 1)
            *p += 1;
    }
    int *q = (int *)priv;
    for (int k = 0; k < 6; k++) {
        s = s * 2 + *q;
        q = (k & 1) ? (int *)&buf[4 * i + k % 4] : (int *)&priv[k % 4];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    buf[4 * i] = s;
}

kernel void class_queries(global float *buf, global int *res) {
    local float lx;
    float px = 1.0f;
    size_t i = get_global_id(0);
    int c = i % 3;
    float *p = c == 0 ? (float *)&px : c == 1 ? (float *)&lx : (float *)&buf[i];
    int r = (to_global(p) != NULL) | (to_local(p) != NULL) << 1 | (to_private(p) != NULL) << 2;
    if (c != 0)
        r |= get_fence(p) << 4;
    res[i] = r + (int)*p * 0;
}

kernel void class_queries_static(global float *buf, global int *res) {
    local float lx;
    float px = 1.0f;
    size_t i = get_global_id(0);
    float *g = (float *)&buf[i];
    float *l = (float *)&lx;
    float *pp = (float *)&px;
    res[3 * i] = (to_global(g) != NULL) | (to_local(g) != NULL) << 1 | (to_private(g) != NULL) << 2 | get_fence(g) << 4;
    res[3 * i + 1] = (to_global(l) != NULL) | (to_local(l) != NULL) << 1 | (to_private(l) != NULL) << 2 | get_fence(l) << 4;
    res[3 * i + 2] = (to_global(pp) != NULL) | (to_local(pp) != NULL) << 1 | (to_private(pp) != NULL) << 2;
}

typedef struct {
    char pre[12];
    char8 vec;
    char post[12];
} Padded;

kernel void struct_member_alignment(global uint *dest) {
    Padded test;
    int tid = get_global_id(0);
    dest[tid] = (uint)((uchar *)&(test.vec));
}

kernel void local_argument_cast(global const float *in, global float *out, local float *tile,
                                local int *counts) {
    size_t l = get_local_id(0), g = get_global_id(0), n = get_local_size(0);
    tile[l] = in[g];
    if (l == 0)
        counts[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_inc(counts);
    local float4 *t4 = (local float4 *)tile;
    float4 a = t4[(l / 4 + 1) % (n / 4)];
    float4 b = vload4(0, tile + ((l + 4) % n & ~(size_t)3));
    barrier(CLK_LOCAL_MEM_FENCE);
    out[g] = a.x + a.y * 2 + a.z * 3 + a.w * 4 + b.x * 5 + b.w * 6 + counts[0] * 100;
}

kernel void truncated_addresses(global uint *dest) {
    local float4 l4[2];
    float4 p4[2];
    int tid = get_global_id(0);
    p4[tid & 1] = (float4)(tid);
    dest[tid] = ((uint)((uchar *)&l4[tid & 1]) % 16) | ((uint)((uchar *)&p4[tid & 1]) % 16) << 4 |
                (uint)p4[tid & 1].x << 8;
}

kernel void vstore_private_array(global const long2 *src, global const uint *offsets, global long *dest,
                                 uint shift) {
    long2 priv[8];
    int tid = get_global_id(0);
    for (int k = 0; k < 8; k++)
        priv[k] = (long2)(0);
    vstore2(src[tid], offsets[tid], ((long *)priv) + shift);
    long *sp = (long *)(priv + offsets[tid]) + shift;
    dest[18 * tid + 16] = sp[0];
    dest[18 * tid + 17] = sp[1];
    for (int k = 0; k < 16; k++)
        dest[18 * tid + k] = ((long *)priv)[k];
}

kernel void vload_local_argument(local char *shared, global const char *src, global const uint *offsets,
                                 global const uint *shifts, global char4 *results, int n) {
    int tid = get_global_id(0);
    if (get_local_id(0) == 0)
        for (int i = 0; i < n; i++)
            shared[i] = src[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    results[tid] = vload4(offsets[tid], ((local char *)shared) + shifts[tid]);
}

kernel void copy_then_walk(global const int *in, global int *out) {
    size_t i = get_global_id(0);
    int a[8];
    for (int k = 0; k < 8; k++)
        a[k] = in[8 * i + k];
    int s = 0;
    for (int *p = a; p < a + 8; p++)
        s = s * 3 + *p;
    out[i] = s;
}

kernel void vstore_private_cts(global float4 *srcValues, global uint *offsets, global float4 *destBuffer,
                               uint alignmentOffset) {
    private float4 sPrivateStorage[16];
    int tid = get_global_id(0);
    sPrivateStorage[tid] = (float4)(float)0;
    vstore4(srcValues[tid], offsets[tid], ((private float *)sPrivateStorage) + alignmentOffset);
    uint i;
    private float *sp = (private float *)(sPrivateStorage + offsets[tid]) + alignmentOffset;
    global float *dp = (global float *)(destBuffer + offsets[tid]) + alignmentOffset;
    for (i = 0; i < sizeof(sPrivateStorage[0]) / sizeof(*sp); i++)
        dp[i] = sp[i];
}

int sum_through_generic(int *p, int n) {
    int s = 0;
    for (int k = 0; k < n; k++)
        s += p[k];
    return s;
}

kernel void generic_helper(global const int *g, global int *out) {
    local int l[4];
    int pr[4];
    size_t i = get_global_id(0), lid = get_local_id(0);
    if (lid < 4)
        l[lid] = (int)lid + 1;
    for (int k = 0; k < 4; k++)
        pr[k] = (int)i * k;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = sum_through_generic((int *)(g + 4 * i), 4) + sum_through_generic((int *)l, 4) * 100 +
             sum_through_generic((int *)pr, 4) * 10000;
}

kernel void atomics_on_relocated_local(global int *out) {
    local int counters[4], others[4];
    size_t lid = get_local_id(0);
    if (lid < 4) {
        counters[lid] = 0;
        others[lid] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // A choice between two local arrays moves both to device memory.
    volatile local int *c = (lid & 4) ? &others[lid % 4] : &counters[lid % 4];
    atomic_add(c, (int)lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = counters[lid % 4] + others[lid % 4] * 1000;
}

kernel void pointers_in_memory(global int *buf, global int *res) {
    int priv[2] = {10, 20};
    local int loc[2];
    size_t i = get_global_id(0), lid = get_local_id(0);
    if (lid == 0) {
        loc[0] = 100;
        loc[1] = 200;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int *ptrs[3] = {(int *)&priv[i & 1], (int *)&loc[(i >> 1) & 1], (int *)&buf[i]};
    int k = (int)(i % 3);
    int *p = ptrs[k];
    res[i] = *p + (to_private(p) != NULL) * 1000 + (to_local(p) != NULL) * 2000 +
             (to_global(p) != NULL) * 4000;
}

typedef struct {
    int *p;
    int bias;
} Ref;

kernel void pointer_in_struct(global int *buf, global int *res) {
    int priv = 5;
    size_t i = get_global_id(0);
    Ref r[2];
    r[0].p = (int *)&priv;
    r[0].bias = 1;
    r[1].p = (int *)&buf[i];
    r[1].bias = 2;
    Ref *s = &r[i & 1];
    res[i] = *s->p * 10 + s->bias + (to_private(s->p) != NULL) * 100;
}

typedef struct __attribute__((packed)) {
    char c;
    int4 v;
    short s;
} Packed;

kernel void packed_structs(global const Packed *src, global int *out) {
    size_t i = get_global_id(0);
    out[2 * i] = src[i].v.y + src[i].s + src[i].c;
    out[2 * i + 1] = (int)((global const uchar *)&src[i].v - (global const uchar *)src);
}

kernel void out_parameters(global const float *in, global float *out, global int *iout) {
    local float lf[64];
    size_t i = get_global_id(0), l = get_local_id(0);
    float x = in[i];
    float whole;
    int e;
    float c;
    out[5 * i] = fract(x, &whole);
    out[5 * i + 1] = whole;
    out[5 * i + 2] = frexp(x, &e);
    iout[2 * i] = e;
    out[5 * i + 3] = sincos(x, &lf[l]);
    out[5 * i + 4] = lf[l];
    int q;
    float r = remquo(x, 1.5f, &q);
    iout[2 * i + 1] = q;
    out[5 * i] += 0.0f * r;
}

kernel void out_parameter_chosen_at_run_time(global const float *in, global float *out) {
    size_t i = get_global_id(0);
    float whole = -1.0f;
    float *w = (i & 1) ? (float *)&whole : (float *)&out[2 * i + 1];
    out[2 * i] = fract(in[i], w);
    if (i & 1)
        out[2 * i + 1] = whole;
}

kernel void half_through_private(global const float *in, global float *out) {
    size_t i = get_global_id(0);
    ushort h[4];
    local ushort lh[64];
    vstore_half(in[i], 0, (half *)h);
    vstore_half_rtz(in[i] * 2.0f, 1, (half *)h);
    vstore_half(in[i] * 4.0f, get_local_id(0), (local half *)lh);
    out[3 * i] = vload_half(0, (half *)h);
    out[3 * i + 1] = vload_half(1, (const half *)h);
    out[3 * i + 2] = vload_half(get_local_id(0), (local half *)lh);
}

kernel void constant_string_copy(global char *out, global const int *idx) {
    char text[] = "a private copy of a constant string, 59 bytes long.......";
    size_t i = get_global_id(0);
    out[i] = text[idx[i]];
}

// Private and local pointers held in memory: a private struct, a __local
// struct, a program-scope __global struct and a union.
typedef struct {
    global int *g;
    local int *l;
    private int *p;
} Ptrs;

global Ptrs ptrs_in_global;

kernel void logical_pointers_in_memory(global int *data, global int *out) {
    size_t i = get_global_id(0);
    size_t lid = get_local_id(0);
    local int lval[64];
    local Ptrs in_local;
    int pval = (int)i * 3;
    lval[lid] = (int)i * 5;
    barrier(CLK_LOCAL_MEM_FENCE);
    Ptrs mine = {data + i, lval + lid, &pval};
    int r = *mine.g + *mine.l * 10 + *mine.p * 100;
    if (lid == 0) {
        in_local.g = data;
        in_local.l = lval;
        in_local.p = &pval;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    r += in_local.l[lid] * 1000;
    r += (to_local(in_local.l) != NULL) << 20 | (to_private(mine.p) != NULL) << 21;
    union {
        global int *g;
        private int *p;
    } u;
    u.p = &pval;
    r += *u.p;
    int g = -1;
    if (i == 0) {
        ptrs_in_global.p = &pval;
        ptrs_in_global.l = lval;
        g = *ptrs_in_global.p + ptrs_in_global.l[1];
    }
    out[2 * i] = r;
    out[2 * i + 1] = g;
}

// Null pointers of every address space compared through generic ones.
kernel void null_comparisons(global uint *out) {
    size_t i = get_global_id(0);
    int value = 7;
    int *ptr = NULL;
    local int *lptr = NULL;
    global int *gptr = NULL;
    private int *pptr = NULL;
    uint r = (ptr == lptr) | (ptr == pptr) << 1 | (ptr == gptr) << 2;
    ptr = lptr;
    r |= ((gptr == ptr) && (lptr == ptr)) << 3;
    pptr = &value;
    r |= (ptr != pptr) << 4;
    out[i] = r;
}

// The last work-item's pointers are moved back by a run-time amount before
// the vector access (as OpenCL-CTS test_half does for 3-vectors), so that
// its three elements end at the buffers' ends.
__kernel void moved_back(__global const float *in, __global float *out, __global half *halves, uint back) {
    size_t i = get_global_id(0);
    size_t adjust = i == get_global_size(0) - 1 ? back : 0;
    float3 v = vload3(i, in - adjust) * 2.0f;
    vstore3(v, i, out - adjust);
    vstore_half3(v, i, halves - adjust);
}

// A global pointer held in a private variable, set through a generic
// pointer to that variable (an out-parameter), then used.
void point_at(__global int *__generic *where, __global int *target) {
    *where = target;
}
__kernel void pointer_set_through_out_parameter(__global int *out) {
    __global int *p = 0;
    point_at(&p, out + get_global_id(0));
    *p = (int)get_global_id(0) + 1;
}
