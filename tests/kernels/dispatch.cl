// Work-item functions of NDRanges that run as several dispatches.

#if __OPENCL_C_VERSION__ >= 200
#define RECORD(o, d)                         \
    o[6 * d + 0] = get_global_id(d);         \
    o[6 * d + 1] = get_local_id(d);          \
    o[6 * d + 2] = get_group_id(d);          \
    o[6 * d + 3] = get_local_size(d);        \
    o[6 * d + 4] = get_enqueued_local_size(d); \
    o[6 * d + 5] = get_num_groups(d);

// 19 words per work-item: 6 per dimension, then the global linear id.
__kernel void items(__global uint *out) {
    size_t x = get_global_id(0) - get_global_offset(0);
    size_t y = get_global_id(1) - get_global_offset(1);
    size_t z = get_global_id(2) - get_global_offset(2);
    size_t i = (z * get_global_size(1) + y) * get_global_size(0) + x;
    __global uint *o = out + 19 * i;
    RECORD(o, 0)
    RECORD(o, 1)
    RECORD(o, 2)
    o[18] = get_global_linear_id();
}
#endif

// Each work-item of a 1-D NDRange counts itself (100 when the number of
// groups is not `num_groups`) and records its group.
__kernel void once(__global uint *hits, __global uint *groups, uint num_groups) {
    size_t i = get_global_id(0) - get_global_offset(0);
    hits[i] += get_num_groups(0) == num_groups ? 1 : 100;
    groups[i] = get_group_id(0);
#if __OPENCL_C_VERSION__ >= 200
    if (get_local_size(0) != get_enqueued_local_size(0))
        groups[i] |= 0x40000000u;
#endif
}

// Per-group sums through __local memory and a barrier.
__kernel void group_sums(__global const uint *in, __global uint *sums,
                         __local uint *scratch) {
    size_t l = get_local_id(0);
    scratch[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        uint s = 0;
        for (size_t i = 0; i < get_local_size(0); i++)
            s += scratch[i];
        sums[get_group_id(0)] = s;
    }
}

// Per-column sums of a 2-D NDRange whose work-groups are columns (local
// size (1, n)): each item reads the one below it through __local memory
// after a barrier.
__kernel void column_sums(__global const uint *in, __global uint *out,
                          __local uint *scratch) {
    size_t x = get_global_id(0), y = get_global_id(1), l = get_local_id(1);
    size_t n = get_local_size(1);
    scratch[l] = in[y * get_global_size(0) + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[y * get_global_size(0) + x] =
        scratch[l] + (l + 1 < n ? scratch[l + 1] : 0u) + 1000u * (uint)get_group_id(1);
}

// A required work-group size with a global size that is not a multiple.
__kernel __attribute__((reqd_work_group_size(4, 1, 1)))
void sized(__global uint *out) {
    out[get_global_id(0)] = get_local_size(0) * 100 + get_group_id(0);
}
