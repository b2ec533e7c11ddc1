// Contended atomics on global and local memory, 32- and 64-bit.
__kernel void count32(__global uint *g, __local uint *l) {
    if (get_local_id(0) == 0)
        l[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_inc(&l[0]);
    atomic_add(&g[0], 1u);
    atomic_max(&g[1], (uint)get_global_id(0));
    atomic_min(&g[2], (uint)get_global_id(0));
    atomic_xchg(&g[3], 7u);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0)
        atomic_add(&g[4], l[0]);
}
