// Kernels of cl_vkcl_cooperative_matrix, for the rewriter's tests: every
// built-in, handles in arrays, phis and helper functions, half and float
// matrices from global and local memory.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

typedef coop_mat_a_half_16x16 A;
typedef coop_mat_b_half_16x16 B;
typedef coop_mat_acc_float_16x16 C;

static C step(A a, B b, C c) { return coop_mat_muladd(a, b, c); }

// C (m x n) = A (m x k) x B (k x n), one 16x16 tile of C per sub-group,
// two accumulators in an array, B through local memory.
kernel void gemm(global const half *a, global const half *b, global float *c,
                 uint n, uint k) {
    __local half tile[16 * 16];
    uint row = get_group_id(1) * 16, col = get_group_id(0) * 16;
    C acc[2];
    acc[0] = coop_mat_init_acc_float_16x16(0.0f);
    acc[1] = coop_mat_init_acc_float_16x16(0.0f);
    for (uint kk = 0; kk < k; kk += 16) {
        for (uint i = get_local_id(0); i < 256; i += get_local_size(0))
            tile[i] = b[(kk + i / 16) * n + col + i % 16];
        barrier(CLK_LOCAL_MEM_FENCE);
        A ma = coop_mat_load_a_half_16x16(a + row * k + kk,
                                          CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, k);
        B mb = coop_mat_load_b_half_16x16(tile, CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, 16);
        acc[(kk / 16) & 1] = step(ma, mb, acc[(kk / 16) & 1]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C sum = coop_mat_add(acc[0], acc[1]);
    coop_mat_store(c + row * n + col, sum, CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, n);
}

// Element-wise work: scale, negate, a ReLU through the elements,
// conversion to half and back.
kernel void elements(global const float *in, global float *out, global half *h, float s) {
    C m = coop_mat_load_acc_float_16x16(in, CLK_COOPERATIVE_MATRIX_LAYOUT_COLUMN_MAJOR, 16);
    m = coop_mat_negate(coop_mat_scale(m, s));
    for (uint i = 0; i < coop_mat_length(m); i++)
        m = coop_mat_insert(m, i, fmax(coop_mat_extract(m, i), 0.0f));
    coop_mat_acc_half_16x16 mh = coop_mat_convert_acc_half_16x16(m);
    mh = coop_mat_insert(mh, 0, coop_mat_extract(mh, 0) + (half)1.0f);
    mh = coop_mat_mul(mh, coop_mat_init_acc_half_16x16((half)2.0f));
    coop_mat_store(h, mh, CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, 16);
    coop_mat_store(out, coop_mat_convert_acc_float_16x16(mh), CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, 16);
}

// Signed bytes with an int accumulator.
kernel void bytes(global const char *a, global const char *b, global int *c) {
    coop_mat_acc_int_16x16 acc = coop_mat_init_acc_int_16x16(-3);
    acc = coop_mat_muladd(coop_mat_load_a_char_16x32(a, CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, 32),
                          coop_mat_load_b_char_32x16(b, CLK_COOPERATIVE_MATRIX_LAYOUT_COLUMN_MAJOR, 32),
                          acc);
    acc = coop_mat_insert(acc, 1, coop_mat_extract(acc, 1) / 2);
    coop_mat_store(c, acc, CLK_COOPERATIVE_MATRIX_LAYOUT_ROW_MAJOR, 16);
}
