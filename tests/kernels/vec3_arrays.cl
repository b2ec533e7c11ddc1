// A local tile and a private array of float3, indexed at run time (the
// shape of OpenMM's neighbour-list kernel, its block positions in a local
// float3 array). clang loads and stores three-component vectors as four
// components through a cast pointer unless told to keep them; the cast
// moved the local tile to device memory. Both arrays stay where they are
// (the rewriter's unit tests check that); `vec3_arrays` in
// tests/pointers.rs checks the results.
kernel void vec3_arrays(global const float* in, global float* out, int n) {
    local float3 tile[16];
    float3 p[8];
    size_t lid = get_local_id(0), gid = get_global_id(0);
    tile[lid] = vload3(gid, in);
    for (int i = 0; i < 8; i++)
        p[i] = vload3((gid + i) % get_global_size(0), in);
    barrier(CLK_LOCAL_MEM_FENCE);
    float3 s = tile[(lid + 1) % 16];
    for (int i = 0; i < n; i++)
        s += p[i & 7] * tile[(lid + i) & 15];
    vstore3(s, gid, out);
}
