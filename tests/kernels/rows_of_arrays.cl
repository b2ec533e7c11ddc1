// Rows of two-dimensional arrays reached through a pointer to their first
// element, as bcrypt's S-boxes are: steps within the row, steps that go on
// into the next row or back into the previous one (C's arrays are flat).
// Both arrays stay where they are, without scratch memory (the rewriter's
// unit tests check that).
#define ROW 64
kernel void rows_of_arrays(global const uint* in, global uint* out) {
    local uint all[8][ROW];
    size_t lid = get_local_id(0), gid = get_global_id(0);
    uint x = in[gid];
    local uint* mine = all[lid];
    for (uint i = 0; i < ROW; i++) mine[i] = x * 3 + i;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint acc = mine[x & (ROW - 1)] + mine[(x >> 6) & (ROW - 1)];
    local uint* first = all[0];
    acc += first[lid * ROW + 7];
    local uint* second = all[1];
    acc += second[-1];
    uint p[3][5];
    for (uint r = 0; r < 3; r++)
        for (uint c = 0; c < 5; c++) p[r][c] = x + r * 10 + c;
    uint* q = p[1];
    acc += q[-2] + q[7] + q[x & 3];
    out[gid] = acc;
}
