// Sub-group built-ins and collectives. The element type T comes from the
// build options; every kernel indexes by the global linear id.

kernel void sg_info(global uint *out) {
    size_t g = get_global_linear_id();
    out[g * 6 + 0] = get_sub_group_size();
    out[g * 6 + 1] = get_max_sub_group_size();
    out[g * 6 + 2] = get_num_sub_groups();
    out[g * 6 + 3] = get_enqueued_num_sub_groups();
    out[g * 6 + 4] = get_sub_group_id();
    out[g * 6 + 5] = get_sub_group_local_id();
}

#ifdef T
kernel void sg_ops(global const T *in, global T *out, global int *votes) {
    size_t g = get_global_linear_id();
    T x = in[g];
    out[g * 11 + 0] = sub_group_reduce_add(x);
    out[g * 11 + 1] = sub_group_reduce_min(x);
    out[g * 11 + 2] = sub_group_reduce_max(x);
    out[g * 11 + 3] = sub_group_scan_inclusive_add(x);
    out[g * 11 + 4] = sub_group_scan_inclusive_min(x);
    out[g * 11 + 5] = sub_group_scan_inclusive_max(x);
    out[g * 11 + 6] = sub_group_scan_exclusive_add(x);
    out[g * 11 + 7] = sub_group_scan_exclusive_min(x);
    out[g * 11 + 8] = sub_group_scan_exclusive_max(x);
    out[g * 11 + 9] = sub_group_broadcast(x, 0);
    out[g * 11 + 10] = sub_group_broadcast(x, get_sub_group_size() - 1);
    votes[g * 2 + 0] = sub_group_all(x > (T)0);
    votes[g * 2 + 1] = sub_group_any(x > (T)2);
    sub_group_barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

#ifdef T
// Work-group collectives; two calls of each kind, so the shared scratch is
// reused.
kernel void wg_ops(global const T *in, global T *out, global int *votes) {
    size_t g = get_global_linear_id();
    T x = in[g];
    global T *o = out + g * 12;
    o[0] = work_group_reduce_add(x);
    o[1] = work_group_reduce_min(x);
    o[2] = work_group_reduce_max(x);
    o[3] = work_group_scan_inclusive_add(x);
    o[4] = work_group_scan_inclusive_min(x);
    o[5] = work_group_scan_inclusive_max(x);
    o[6] = work_group_scan_exclusive_add(x);
    o[7] = work_group_scan_exclusive_min(x);
    o[8] = work_group_scan_exclusive_max(x);
    o[9] = work_group_broadcast(x, get_local_size(0) - 1);
    o[10] = work_group_broadcast(x, 0, get_local_size(1) - 1);
    o[11] = work_group_broadcast(x, 0, 0, get_local_size(2) - 1);
    votes[g * 2 + 0] = work_group_all(x > (T)0);
    votes[g * 2 + 1] = work_group_any(x > (T)5);
}
#endif
