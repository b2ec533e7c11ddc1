// Kernels for tests/image_kernels.rs: every image type read and written,
// with and without samplers, and the image queries.

__constant sampler_t clamp_int = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;

kernel void fetch_2d(read_only image2d_t src, write_only image2d_t dst) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    write_imagef(dst, p, read_imagef(src, p) * 2.0f);
}

kernel void fetch_2d_int(read_only image2d_t src, write_only image2d_t dst) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    write_imagei(dst, p, read_imagei(src, p) - (int4)(1, 2, 3, 4));
}

kernel void fetch_2d_uint(read_only image2d_t src, write_only image2d_t dst) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    write_imageui(dst, p, read_imageui(src, p) + (uint4)(1, 2, 3, 4));
}

kernel void sample_2d(read_only image2d_t src, sampler_t s, write_only image2d_t dst, float scale_x, float scale_y, float shift) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    float2 c = (float2)((p.x + 0.5f + shift) * scale_x, (p.y + 0.5f) * scale_y);
    write_imagef(dst, p, read_imagef(src, s, c));
}

kernel void sample_int_coords(read_only image2d_t src, write_only image2d_t dst) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    write_imagef(dst, p, read_imagef(src, clamp_int, p - (int2)(1, 0)));
}

kernel void fetch_3d(read_only image3d_t src, write_only image3d_t dst) {
    int4 p = (int4)(get_global_id(0), get_global_id(1), get_global_id(2), 0);
    write_imagef(dst, p, read_imagef(src, p) + 1.0f);
}

kernel void sample_2d_array(read_only image2d_array_t src, sampler_t s, write_only image2d_array_t dst) {
    int4 p = (int4)(get_global_id(0), get_global_id(1), get_global_id(2), 0);
    float4 c = (float4)(p.x + 0.5f, p.y + 0.5f, p.z, 0.0f);
    write_imagef(dst, p, read_imagef(src, s, c));
}

kernel void fetch_1d(read_only image1d_t src, write_only image1d_t dst) {
    int x = get_global_id(0);
    write_imageui(dst, x, read_imageui(src, x) * 3);
}

kernel void fetch_1d_array(read_only image1d_array_t src, write_only image1d_array_t dst) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    write_imagef(dst, p, -read_imagef(src, p));
}

kernel void queries(read_only image2d_t a, write_only image3d_t b, read_only image2d_array_t c, read_only image1d_t d, write_only image1d_array_t e, global int *out) {
    out[0] = get_image_width(a);
    out[1] = get_image_height(a);
    out[2] = get_image_channel_order(a);
    out[3] = get_image_channel_data_type(a);
    out[4] = get_image_width(b);
    out[5] = get_image_height(b);
    out[6] = get_image_depth(b);
    out[7] = get_image_channel_data_type(b);
    out[8] = get_image_width(c);
    out[9] = get_image_height(c);
    out[10] = (int)get_image_array_size(c);
    out[11] = get_image_width(d);
    out[12] = get_image_width(e);
    out[13] = (int)get_image_array_size(e);
    int2 dim = get_image_dim(a);
    out[14] = dim.x * 1000 + dim.y;
    int4 dim3 = get_image_dim(b);
    out[15] = dim3.x * 10000 + dim3.y * 100 + dim3.z;
}

// 1D image buffers: texels that live in a buffer.
kernel void scale_1d_buffer(read_only image1d_buffer_t src, write_only image1d_buffer_t dst,
                            global int *width) {
    int i = get_global_id(0);
    write_imagef(dst, i, read_imagef(src, i) * 0.5f);
    if (i == 0) {
        width[0] = get_image_width(src);
        width[1] = get_image_width(dst);
    }
}

// One read per coordinate, for checking filtering against the
// specification's formulas.
kernel void sample_at_2d(read_only image2d_t img, sampler_t s, global const float4 *at, global float4 *out) {
    size_t i = get_global_id(0);
    out[i] = read_imagef(img, s, at[i].xy);
}

kernel void sample_at_3d(read_only image3d_t img, sampler_t s, global const float4 *at, global float4 *out) {
    size_t i = get_global_id(0);
    out[i] = read_imagef(img, s, at[i]);
}

kernel void sample_at_2d_array(read_only image2d_array_t img, sampler_t s, global const float4 *at, global float4 *out) {
    size_t i = get_global_id(0);
    out[i] = read_imagef(img, s, at[i]);
}

kernel void sample_at_1d_array_border(read_only image1d_array_t img, global const float4 *at, global float4 *out) {
    const sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_LINEAR;
    size_t i = get_global_id(0);
    out[i] = read_imagef(img, s, at[i].xy);
}
