// Vector shapes, structs with padding, private arrays and atomics, each
// checked against a host computation.

// vec3, vec8 and vec16 loads, stores, swizzles and shuffles.
__kernel void swizzles(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    __global const float3 *in3 = (__global const float3 *)in;
    float3 a = in3[i];                      // 16-byte stride: vec3 takes vec4's room
    float3 b = vload3(i, in + 64 * 4);      // packed: 12-byte stride
    float8 c = vload8(i, in + 2 * 64 * 4);
    float16 d = vload16(i, in + 2 * 64 * 4 + 64 * 8);
    float3 s3 = a.zxy + b.yyz;
    float8 s8 = c.s76543210 * (float8)(2.0f) + d.hi;
    float4 s4 = d.even.lo + d.odd.hi + c.s0246;
    uint8 mask = (uint8)(7, 0, 6, 1, 5, 2, 4, 3);
    float8 sh = shuffle(c, mask);
    float16 sh2 = shuffle2(c, d.lo, (uint16)(15, 0, 14, 1, 13, 2, 12, 3, 11, 4, 10, 5, 9, 6, 8, 7));
    __global float *o = out + i * 48;
    vstore3(s3, 0, o);
    o[3] = a.s2 - b.s0;
    vstore8(s8, 0, o + 4);
    vstore4(s4, 0, o + 12);
    vstore8(sh, 0, o + 16);
    vstore16(sh2, 0, o + 24);
    ((__global float3 *)(o + 40))[0] = (float3)(d.sf, d.s8, a.y);
    float16 e = d;
    e.s5 = -1.0f;
    e.sabc = (float3)(c.s1, c.s2, c.s3);
    o[44] = e.s5 + e.sa + e.sb + e.sc;
    o[45] = dot(a, b);
    o[46] = s4.x > s4.w ? 1.0f : 0.0f;
    o[47] = (float)(any(a > b) + 2 * all(c > 0.0f));
}

// Relational tests on scalars (1 or 0) and on 8-component vectors (-1 or 0).
__kernel void relational(__global const float *in, __global int *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float x = in[i], y = in[(i + 1) % n];
    __global int *o = out + 12 * i;
    o[0] = isfinite(x);
    o[1] = isnormal(x);
    o[2] = signbit(x);
    o[3] = isordered(x, y);
    o[4] = isunordered(x, y);
    o[5] = islessgreater(x, y);
    float8 v = (float8)(x, y, x, y, -x, -y, x, -y);
    int8 r = isnormal(v) + 2 * signbit(v) + 4 * isfinite(v);
    o[6] = r.s0;
    o[7] = r.s1;
    o[8] = r.s4;
    o[9] = r.s5;
    o[10] = r.s6;
    o[11] = r.s7;
}

// A struct with padding between and after members, read and written in
// global memory with the OpenCL C layout.
typedef struct {
    char c;      // 0, then 3 bytes of padding
    int i;       // 4
    short s;     // 8, then 6 bytes of padding
    long l;      // 16
    float3 v;    // 32 (16-byte aligned, 16 bytes)
    uchar u[3];  // 48, then 13 bytes of padding: the struct is 64 bytes
} Padded;

__kernel void structs(__global Padded *p) {
    size_t n = get_global_id(0);
    Padded x = p[n];
    x.c = (char)(x.c + 1);
    x.i = x.i * 3;
    x.s = (short)(x.s - x.c);
    x.l = x.l + (long)x.i;
    x.v = x.v.zyx * 2.0f;
    x.u[n % 3] = (uchar)(x.u[0] + x.u[1] + x.u[2]);
    p[n] = x;
}

// A private array written and read at indices known only at run time.
__kernel void private_array(__global const uint *in, __global uint *out) {
    size_t g = get_global_id(0);
    uint a[19];
    for (uint k = 0; k < 19; k++)
        a[k] = in[g] * (k + 1);
    uint acc = 0;
    for (uint k = 0; k < 19; k++)
        acc += a[(in[g] + 7 * k) % 19] ^ k;
    a[in[g] % 19] = acc;
    out[g] = a[(in[g] + 1) % 19] + a[in[g] % 19];
}

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
// Contended 64-bit atomics on global and local memory.
__kernel void count64(__global ulong *g, __local ulong *l) {
    if (get_local_id(0) == 0) {
        l[0] = 0;
        l[1] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    ulong big = 0x100000001ul;
    atom_add(&l[0], big);
    atom_max(&l[1], (ulong)get_global_id(0) << 33);
    atom_add(&g[0], big);
    atom_inc(&g[1]);
    atom_max(&g[2], (ulong)get_global_id(0) << 40);
    atom_min(&g[3], (ulong)get_global_id(0) << 40);
    atom_xor(&g[4], (ulong)1 << (get_global_id(0) % 64));
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        atom_add(&g[5], l[0]);
        atom_max(&g[6], l[1]);
    }
}

// C11 atomics with explicit memory orders and scopes (OpenCL C 2.0 and up).
#if __OPENCL_C_VERSION__ >= 200
__kernel void c11(__global atomic_uint *g, __global atomic_long *w, __local atomic_uint *l) {
    if (get_local_id(0) == 0)
        atomic_init(l, 0u);
    work_group_barrier(CLK_LOCAL_MEM_FENCE);
    atomic_fetch_add_explicit(l, 1u, memory_order_relaxed, memory_scope_work_group);
    atomic_fetch_add_explicit(&g[0], 1u, memory_order_relaxed, memory_scope_device);
    atomic_fetch_max_explicit(&g[1], (uint)get_global_id(0), memory_order_acq_rel, memory_scope_device);
    atomic_fetch_add_explicit(&w[0], (long)get_global_id(0), memory_order_relaxed, memory_scope_device);
    uint expected = atomic_load_explicit(&g[2], memory_order_acquire, memory_scope_device);
    while (!atomic_compare_exchange_weak_explicit(&g[2], &expected, expected + 2u,
                                                  memory_order_acq_rel, memory_order_relaxed,
                                                  memory_scope_device))
        ;
    work_group_barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0)
        atomic_fetch_add_explicit(&g[3], atomic_load_explicit(l, memory_order_relaxed, memory_scope_work_group),
                                  memory_order_acq_rel, memory_scope_device);
    atomic_store_explicit(&g[4], 42u, memory_order_release, memory_scope_device);
}
#endif

// async_work_group_copy in and out of __local memory, strided, and prefetch.
__kernel void async_copies(__global const float4 *src, __global float4 *dst, __local float4 *tmp) {
    size_t g = get_group_id(0), l = get_local_id(0), n = get_local_size(0);
    prefetch(src + g * n, n);
    event_t e = async_work_group_copy(tmp, src + g * n, n, 0);
    wait_group_events(1, &e);
    tmp[l] = tmp[l] * 2.0f + (float4)(l);
    barrier(CLK_LOCAL_MEM_FENCE);
    // Group g writes element g of every block of 'groups' elements.
    event_t f = async_work_group_strided_copy(dst + g, tmp, n, get_num_groups(0), 0);
    wait_group_events(1, &f);
}

// Work-item functions with dimensions beyond the NDRange's: sizes are 1,
// ids and offsets 0.
__kernel void out_of_range(__global uint *out, uint d) {
    if (get_global_id(0) != 0)
        return;
    out[0] = get_global_size(3);
    out[1] = get_global_size(d);
    out[2] = get_global_id(d);
    out[3] = get_local_size(d + 1);
    out[4] = get_group_id(d);
    out[5] = get_num_groups(d);
    out[6] = get_local_id(7);
    out[7] = get_global_offset(d);
}

// A __local struct filled by one work-item through a helper, read by all.
typedef struct {
    ulong sizes[3];
    uint dims;
} Shared;

void fill(__local Shared *s) {
    if (get_local_id(0) == 0) {
        for (int i = 0; i < 3; i++)
            s->sizes[i] = get_global_size(i);
        s->dims = get_work_dim();
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel void local_struct(__global uint *out) {
    __local Shared s;
    fill(&s);
    out[get_global_id(0)] = (uint)s.sizes[0] * 10 + s.dims;
}

#if __OPENCL_C_VERSION__ >= 200
// Each work-item claims the first free critical section, guarded by an
// atomic_flag, with fences inside the divergent code (as the CTS's
// atomic_flag test does); every section ends with one owner and its flag
// clear.
__kernel void flag_sections(__global int *owner, __global int *left_set, volatile __local atomic_flag *flags) {
    uint n = get_local_size(0);
    if (get_local_id(0) == 0)
        for (uint i = 0; i < n; i++)
            atomic_flag_clear_explicit(&flags[i], memory_order_relaxed, memory_scope_work_group);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint stop = 0;
    for (uint c = 0; !stop && c < n; c++) {
        bool set = atomic_flag_test_and_set_explicit(&flags[c], memory_order_relaxed, memory_scope_work_group);
        atomic_work_item_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE, memory_order_acquire, memory_scope_work_group);
        if (!set) {
            uint at = get_group_id(0) * n + c;
            if (owner[at] == 0) {
                owner[at] = get_global_id(0) + 1;
                stop = 1;
            }
            atomic_work_item_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_work_group);
            atomic_flag_clear_explicit(&flags[c], memory_order_relaxed, memory_scope_work_group);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0)
        for (uint i = 0; i < n; i++)
            left_set[get_group_id(0) * n + i] =
                atomic_flag_test_and_set_explicit(&flags[i], memory_order_relaxed, memory_scope_work_group);
}
// The same sections, with the flags in global memory and every work-group
// competing for every section: what one work-group wrote inside a section
// must be seen by the next owner of its flag, in another work-group.
__kernel void global_flag_sections(__global int *owner, volatile __global atomic_flag *flags) {
    uint n = get_global_size(0);
    uint stop = 0;
    for (uint c = 0; !stop && c < n; c++) {
        uint at = (c + get_group_id(0) * get_local_size(0)) % n;
        bool set = atomic_flag_test_and_set_explicit(&flags[at], memory_order_relaxed, memory_scope_device);
        atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acquire, memory_scope_device);
        if (!set) {
            if (owner[at] == 0) {
                owner[at] = get_global_id(0) + 1;
                stop = 1;
            }
            atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
            atomic_flag_clear_explicit(&flags[at], memory_order_relaxed, memory_scope_device);
        }
    }
}

// Each work-group leaves its partial sum with a plain store; the last one
// to arrive (told by an acquire-release counter at device scope) adds them
// all up. Every group reads the partial sums once before, so that stale
// copies are at hand if the release and acquire do not reach them.
__kernel void last_group_sums(__global uint *partial, __global uint *before, volatile __global atomic_uint *arrived, __global uint *total) {
    uint groups = get_num_groups(0);
    uint g = get_group_id(0);
    if (get_local_id(0) == 0) {
        uint seen = 0;
        for (uint i = 0; i < groups; i++)
            seen += partial[i];
        before[g] = seen;
        partial[g] = (g + 1) * 1000 + get_local_size(0);
        uint order = atomic_fetch_add_explicit(arrived, 1, memory_order_acq_rel, memory_scope_device);
        if (order == groups - 1) {
            uint sum = 0;
            for (uint i = 0; i < groups; i++)
                sum += partial[i];
            *total = sum;
        }
    }
}
#endif
