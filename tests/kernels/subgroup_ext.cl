// The cl_khr_subgroup_* extensions. Each work-item writes what it got
// into its own row of `out`; the host checks every row against the
// sub-group it belongs to. Each kernel exists where its extensions do.

#if defined(cl_khr_subgroup_ballot)
kernel void sg_ballot(global const uint *in, global uint *out) {
    size_t i = get_global_id(0);
    uint4 b = sub_group_ballot((in[i] & 1) != 0);
    global uint *o = out + i * 8;
    o[0] = sub_group_ballot_bit_count(b);
    o[1] = sub_group_ballot_inclusive_scan(b);
    o[2] = sub_group_ballot_exclusive_scan(b);
    o[3] = sub_group_ballot_bit_count(b) ? sub_group_ballot_find_lsb(b) : 99;
    o[4] = sub_group_ballot_bit_count(b) ? sub_group_ballot_find_msb(b) : 99;
    o[5] = sub_group_inverse_ballot(b);
    o[6] = get_sub_group_lt_mask().x | (get_sub_group_eq_mask().x << 1);
    o[7] = sub_group_ballot_bit_extract(b, 0);
}
#endif

#if defined(cl_khr_subgroup_non_uniform_arithmetic) && defined(cl_khr_subgroup_non_uniform_vote) && defined(cl_khr_subgroup_ballot)
// Operations met by only some lanes of a sub-group: the even and the odd
// ones, each in its own arm of a branch.
kernel void sg_divergent(global const int *in, global int *out) {
    size_t i = get_global_id(0);
    int x = in[i];
    global int *o = out + i * 6;
    if (get_sub_group_local_id() & 1) {
        o[0] = sub_group_non_uniform_reduce_add(x);
        o[1] = sub_group_non_uniform_scan_inclusive_max(x);
        o[2] = sub_group_elect();
        o[3] = sub_group_non_uniform_broadcast(x, 1);
        o[4] = sub_group_broadcast_first(x);
        o[5] = sub_group_non_uniform_all(x > 0);
    } else {
        o[0] = sub_group_non_uniform_reduce_add(x);
        o[1] = sub_group_non_uniform_scan_inclusive_max(x);
        o[2] = sub_group_elect();
        o[3] = sub_group_non_uniform_broadcast(x, 0);
        o[4] = sub_group_broadcast_first(x);
        o[5] = sub_group_non_uniform_all(x > 0);
    }
}
#endif

#if defined(cl_khr_subgroup_shuffle) && defined(cl_khr_subgroup_shuffle_relative)
kernel void sg_shuffle(global const int *in, global int *out) {
    size_t i = get_global_id(0);
    int x = in[i];
    uint lane = get_sub_group_local_id();
    uint n = get_sub_group_size();
    global int *o = out + i * 4;
    o[0] = sub_group_shuffle(x, (lane + 1) % n);
    o[1] = sub_group_shuffle_xor(x, 1);
    o[2] = sub_group_shuffle_up(x, 1);
    o[3] = sub_group_shuffle_down(x, 1);
}
#endif

#if defined(cl_khr_subgroup_extended_types)
kernel void sg_extended(global const short *in, global short *out_s,
                        global char *out_c, global ushort8 *out_v) {
    size_t i = get_global_id(0);
    short s = in[i];
    out_s[i] = sub_group_scan_inclusive_max(s);
    out_c[i] = sub_group_reduce_add((char)s);
    ushort8 v = (ushort8)(s, s + 1, s + 2, s + 3, s + 4, s + 5, s + 6, s + 7);
    out_v[i] = sub_group_broadcast(v, 0);
}
#endif

#if defined(cl_khr_subgroup_clustered_reduce)
kernel void sg_clustered(global const int *in, global int *out) {
    size_t i = get_global_id(0);
    out[i] = sub_group_clustered_reduce_add(in[i], 4);
}

// Other operations, cluster sizes and types, and a reduction that only the
// work-items with odd inputs reach.
kernel void sg_clustered_more(global const int *in, global int *out) {
    size_t i = get_global_id(0);
    int x = in[i];
    out[4 * i] = sub_group_clustered_reduce_max(x, 8);
    out[4 * i + 1] = as_int(sub_group_clustered_reduce_min((float)x, 2));
    out[4 * i + 2] = sub_group_clustered_reduce_xor(x, 4);
    out[4 * i + 3] = (x & 1) ? sub_group_clustered_reduce_add(x, 4) : -1;
}
#endif

#if defined(cl_khr_subgroup_rotate)
kernel void sg_rotate(global const int *in, global int *out) {
    size_t i = get_global_id(0);
    out[2 * i] = sub_group_rotate(in[i], 3);
    out[2 * i + 1] = sub_group_clustered_rotate(in[i], 1, 4);
}
#endif
