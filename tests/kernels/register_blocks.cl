// A register-blocked SGEMM: 8x8 accumulators per work-item in a private
// array, filled and read in loops nested two deep, which LLVM's -O2 does
// not unroll fully (the front end's tests and `vkcl bench`).
// 128x128 blocks of C per work-group of 16x16 work-items, each 8x8 of
// them (strided by 16, so that local reads do not conflict), A's block
// kept transposed.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void sgemm_8x8(__global const float *A, __global const float *B, __global float *C, int n) {
    __local float as[8][128 + 4], bs[8][128 + 4];
    int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
    int row0 = get_group_id(1) * 128, col0 = get_group_id(0) * 128;
    float acc[8][8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
    for (int t = 0; t < n; t += 8) {
        for (int e = tid; e < 1024; e += 256) {
            as[e % 8][e / 8] = A[(row0 + e / 8) * n + t + e % 8];
            bs[e / 128][e % 128] = B[(t + e / 128) * n + col0 + e % 128];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < 8; k++) {
            float a[8], b[8];
            for (int i = 0; i < 8; i++) a[i] = as[k][ty + 16 * i];
            for (int j = 0; j < 8; j++) b[j] = bs[k][tx + 16 * j];
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++) acc[i][j] = mad(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) C[(row0 + ty + 16 * i) * n + col0 + tx + 16 * j] = acc[i][j];
}

