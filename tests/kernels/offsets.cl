// Records the work-item functions of each item of a 3-D NDRange.
__kernel void ids(__global uint *out) {
    size_t x = get_global_id(0) - get_global_offset(0);
    size_t y = get_global_id(1) - get_global_offset(1);
    size_t z = get_global_id(2) - get_global_offset(2);
    size_t i = (z * get_global_size(1) + y) * get_global_size(0) + x;
    out[4 * i + 0] = get_global_id(0) + 1000 * get_global_id(1) + 1000000 * get_global_id(2);
    out[4 * i + 1] = get_local_id(0) + 100 * get_local_id(1) + 10000 * get_local_id(2);
    out[4 * i + 2] = get_group_id(0) + 100 * get_group_id(1) + 10000 * get_group_id(2);
    out[4 * i + 3] = get_work_dim() + 10 * get_num_groups(0) + 1000 * get_local_size(1);
}
