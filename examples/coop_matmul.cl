// C = A x B on the tensor cores, through cl_vkcl_cooperative_matrix: A
// (M x K) and B (K x N) half, row-major; C (M x N) float, row-major (with
// -DINT8: A and B char, C int). M and N are multiples of 128, K of BK; A,
// B and C 16-byte aligned.
//
// A work-group computes a 128 x 128 block of C, each of its sub-groups
// SG_ROWS x SG_COLS of it in accumulators of 16 x 16. Steps of BK along K
// stage A's and B's blocks in local memory, copied 16 bytes at a time by
// the whole work-group, rows padded by 16 bytes against bank conflicts;
// the matrices are loaded from there as uint4 rows. Launch: global
// (N / 128 * L, M / 128), local (L, 1), L the sub-group width times
// (128 / SG_ROWS) * (128 / SG_COLS): 4 sub-groups by default, each 64 x 64
// of C (4 x 4 accumulators), with steps of 64 along K.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

#ifndef BK
#define BK 64
#endif
#ifndef SG_ROWS
#define SG_ROWS 64
#endif
#ifndef SG_COLS
#define SG_COLS 64
#endif
#define BM 128
#define BN 128
#define TI (SG_ROWS / 16)
#define TJ (SG_COLS / 16)
#define ACROSS (BN / SG_COLS)
#ifdef INT8
// 16 x 16 x 32 multiply-adds of signed bytes into ints.
typedef char elem;
typedef int sum;
typedef coop_mat_a_char_16x32 tile_a;
typedef coop_mat_b_char_32x16 tile_b;
typedef coop_mat_acc_int_16x16 tile_c;
#define LOAD_A coop_mat_load_a_char_16x32
#define LOAD_B coop_mat_load_b_char_32x16
#define ZERO coop_mat_init_acc_int_16x16(0)
#define TK 32
#define EPU 16
#else
// 16 x 16 x 16 multiply-adds of halves into floats.
typedef half elem;
typedef float sum;
typedef coop_mat_a_half_16x16 tile_a;
typedef coop_mat_b_half_16x16 tile_b;
typedef coop_mat_acc_float_16x16 tile_c;
#define LOAD_A coop_mat_load_a_half_16x16
#define LOAD_B coop_mat_load_b_half_16x16
#define ZERO coop_mat_init_acc_float_16x16(0.0f)
#define TK 16
#define EPU 8
#endif
// EPU: elements per uint4.
#define AW (BK / EPU + 1)
#define BW (BN / EPU + 1)
#define ROW_MAJOR CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR

kernel void coop_matmul(global const elem *A, global const elem *B, global sum *C,
                        uint n, uint k) {
    local uint4 as[BM * AW];
    local uint4 bs[BK * BW];
    global const uint4 *a4 = (global const uint4 *)A;
    global const uint4 *b4 = (global const uint4 *)B;
    uint lid = get_local_id(0), wg = get_local_size(0);
    uint sg = get_sub_group_id();
    uint row0 = get_group_id(1) * BM, col0 = get_group_id(0) * BN;
    uint sr = (sg / ACROSS) * SG_ROWS, sc = (sg % ACROSS) * SG_COLS;
    uint kw = k / EPU, nw = n / EPU;
    tile_c acc[TI][TJ];
    for (int i = 0; i < TI; i++)
        for (int j = 0; j < TJ; j++)
            acc[i][j] = ZERO;
    for (uint kk = 0; kk < k; kk += BK) {
        for (uint x = lid; x < BM * (BK / EPU); x += wg) {
            uint r = x / (BK / EPU), c = x % (BK / EPU);
            as[r * AW + c] = a4[(row0 + r) * kw + kk / EPU + c];
        }
        for (uint x = lid; x < BK * (BN / EPU); x += wg) {
            uint r = x / (BN / EPU), c = x % (BN / EPU);
            bs[r * BW + c] = b4[(kk + r) * nw + col0 / EPU + c];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint ks = 0; ks < BK; ks += TK) {
            tile_a a[TI];
            tile_b b[TJ];
            for (int i = 0; i < TI; i++)
                a[i] = LOAD_A(as + (sr + 16 * i) * AW + ks / EPU, ROW_MAJOR, AW);
            for (int j = 0; j < TJ; j++)
                b[j] = LOAD_B(bs + ks * BW + (sc + 16 * j) / EPU, ROW_MAJOR, BW);
            for (int i = 0; i < TI; i++)
                for (int j = 0; j < TJ; j++)
                    acc[i][j] = coop_mat_muladd(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < TI; i++)
        for (int j = 0; j < TJ; j++)
            coop_mat_store(C + (row0 + sr + 16 * i) * n + col0 + sc + 16 * j, acc[i][j],
                           ROW_MAJOR, n);
}
