// A loop that fills a work-group's tile of a local array of structs, each
// work-item its own element, where the two arms end by storing zeros to
// different fields: the shape of OpenMM's nonbonded kernel. The field
// addresses do not change in the loop and are computed before it; LLVM's
// CFG simplification then likes to sink the arms' last stores into one
// store through a phi of two field pointers, which logical pointers
// cannot express. The array must stay in local memory all the same (the
// rewriter's unit tests check that); `local_fields` in tests/pointers.rs
// checks the results.
typedef struct {
    float x, y, z, q;
    float fx, fy, fz;
    float charge, sx, sy;
} Atom;

kernel void local_fields(global const float4* pos, global const float4* params,
                         global const int* index, int tiles, global float* out) {
    local Atom atoms[64];
    size_t lid = get_local_id(0), size = get_local_size(0);
    float sum = 0;
    for (int t = 0; t < tiles; t++) {
        int j = index[t * size + lid];
        if (j >= 0) {
            float4 p = pos[j];
            atoms[lid].x = p.x;
            atoms[lid].y = p.y;
            atoms[lid].z = p.z;
            atoms[lid].q = p.w;
            float4 m = params[j];
            atoms[lid].charge = m.x;
            atoms[lid].sx = m.y;
            atoms[lid].sy = m.z;
            atoms[lid].fx = 0;
            atoms[lid].fy = 0;
            atoms[lid].fz = 0;
        } else {
            atoms[lid].x = 0;
            atoms[lid].y = 0;
            atoms[lid].z = 0;
            atoms[lid].charge = 0;
            atoms[lid].sx = 0;
            atoms[lid].sy = 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        Atom a = atoms[(lid + t + 1) % size];
        sum += a.x + 2 * a.y + 4 * a.z + 8 * a.q + 16 * a.fx + 32 * a.fy + 64 * a.fz + 128 * a.charge + 256 * a.sx + 512 * a.sy;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[get_global_id(0)] = sum;
}
