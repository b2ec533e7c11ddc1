// (OpenCL C 2.0 and later)
// get_global_linear_id and get_local_linear_id against their definitions.
__kernel void linear(__global uint *out) {
    size_t g = get_global_linear_id();
    out[2 * g] = (uint)g;
    out[2 * g + 1] = (uint)get_local_linear_id();
}
