// The image kernel tests, shared by tests/image_kernels.rs and tests/image_kernels_other_devices.rs.

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    device_reports_images,
    fetch_and_write_float_int_uint,
    samplers_address_and_filter,
    unnormalized_integral_coordinates,
    orders_without_alpha_and_swizzled_orders,
    literal_sampler_with_integer_coordinates,
    a_literal_sampler_read_at_many_places,
    three_d_and_array_images,
    read_write_images,
    image_queries,
    argument_errors,
    every_image_argument_beside_an_argument_block,
    an_image_beside_vectors_past_the_push_constants,
    bgra_images_written_by_kernels,
    one_d_image_buffers_share_the_buffer,
    one_d_image_buffer_errors,
    two_d_images_from_buffers,
    linear_filtering_at_texel_centres,
    linear_filtering_of_8_bit_formats,
    packed_and_alpha_first_formats,
    packed_16_bit_formats,
    two_d_images_from_images,
    depth_images,
);

const SRC: &str = include_str!("../kernels/images.cl");

const RW_SRC: &str = "kernel void read_write_2d(read_write image2d_t img) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    write_imageui(img, p, read_imageui(img, p) + (uint4)(p.x, p.y, 1, 0));
}";

const RW_BUFFER_SRC: &str = "kernel void bump_1d_buffer(read_write image1d_buffer_t img) {
    int i = get_global_id(0);
    write_imageui(img, i, read_imageui(img, i) + (uint4)(1, 2, 3, 4));
}";

const fn fmt(order: cl_channel_order, ty: cl_channel_type) -> cl_image_format {
    cl_image_format {
        image_channel_order: order,
        image_channel_data_type: ty,
    }
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn to_floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

struct Images<'a> {
    s: Setup<'a>,
    made: Vec<cl_mem>,
    samplers: Vec<cl_sampler>,
}

impl<'a> Images<'a> {
    fn new(cl: &'a Cl) -> Self {
        Images {
            s: Setup::new(cl),
            made: Vec::new(),
            samplers: Vec::new(),
        }
    }

    fn image(
        &mut self,
        flags: cl_mem_flags,
        f: cl_image_format,
        d: cl_image_desc,
        data: Option<&[u8]>,
    ) -> cl_mem {
        let cl = self.s.cl;
        let mut e = 1;
        let (flags, host) = match data {
            Some(b) => (flags | CL_MEM_COPY_HOST_PTR, b.as_ptr() as *mut c_void),
            None => (flags, null_mut()),
        };
        let m = unsafe { cl.clCreateImage.unwrap()(self.s.c, flags, &f, &d, host, &mut e) };
        assert_eq!(e, CL_SUCCESS, "{}: clCreateImage", cl.how);
        self.made.push(m);
        m
    }

    fn sampler(
        &mut self,
        normalized: bool,
        addressing: cl_addressing_mode,
        filter: cl_filter_mode,
    ) -> cl_sampler {
        let mut e = 1;
        let s = unsafe {
            self.s.cl.clCreateSampler.unwrap()(
                self.s.c,
                normalized as cl_bool,
                addressing,
                filter,
                &mut e,
            )
        };
        assert_eq!(e, CL_SUCCESS);
        self.samplers.push(s);
        s
    }

    fn read(&self, m: cl_mem, dims: [usize; 3], bytes: usize) -> Vec<u8> {
        let mut out = vec![0u8; bytes];
        let o = [0usize; 3];
        let r = unsafe {
            self.s.cl.clEnqueueReadImage.unwrap()(
                self.s.q,
                m,
                CL_TRUE,
                o.as_ptr(),
                dims.as_ptr(),
                0,
                0,
                out.as_mut_ptr().cast(),
                0,
                null(),
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS);
        out
    }
}

impl Drop for Images<'_> {
    fn drop(&mut self) {
        unsafe {
            for &m in &self.made {
                self.s.cl.clReleaseMemObject.unwrap()(m);
            }
            for &s in &self.samplers {
                self.s.cl.clReleaseSampler.unwrap()(s);
            }
        }
    }
}

fn device_reports_images(cl: &Cl) {
    let d = cl.device();
    let support = u32_of(&cl.device_bytes(d, CL_DEVICE_IMAGE_SUPPORT).unwrap());
    assert_eq!(support, CL_TRUE, "{}", cl.how);
    let w = usize_of(&cl.device_bytes(d, CL_DEVICE_IMAGE2D_MAX_WIDTH).unwrap());
    assert!(w >= 4096);
    let reads = u32_of(&cl.device_bytes(d, CL_DEVICE_MAX_READ_IMAGE_ARGS).unwrap());
    assert!(reads >= 6);
    let features = cl.device_bytes(d, CL_DEVICE_OPENCL_C_FEATURES).unwrap();
    let text = String::from_utf8_lossy(&features);
    assert!(text.contains("__opencl_c_images"));
}

fn fetch_and_write_float_int_uint(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (13, 7);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let n = w * h * 4;
    // Floats.
    let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 3.0).collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_RGBA, CL_FLOAT),
        d2,
        Some(&floats(&data)),
    );
    let dst = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_FLOAT), d2, None);
    let k = t.s.kernel(SRC, "fetch_2d", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &dst);
    t.s.run(k, &[w, h], None, None);
    let got = to_floats(&t.read(dst, [w, h, 1], n * 4));
    let want: Vec<f32> = data.iter().map(|v| v * 2.0).collect();
    assert_eq!(got, want, "{}: fetch_2d", cl.how);
    // Normalized 8-bit: read as floats, written back converted.
    let bytes: Vec<u8> = (0..n).map(|i| (i * 7 % 128) as u8).collect();
    let src8 = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_RGBA, CL_UNORM_INT8),
        d2,
        Some(&bytes),
    );
    let dst8 = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_UNORM_INT8), d2, None);
    t.s.arg(k, 0, &src8);
    t.s.arg(k, 1, &dst8);
    t.s.run(k, &[w, h], None, None);
    let got = t.read(dst8, [w, h, 1], n);
    let want: Vec<u8> = bytes
        .iter()
        .map(|&b| (b as u32 * 2).min(255) as u8)
        .collect();
    assert_eq!(got, want, "{}: fetch_2d on UNORM_INT8", cl.how);
    // Signed 16-bit integers.
    let ints: Vec<i16> = (0..n).map(|i| i as i16 * 37 - 1500).collect();
    let srci = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_RGBA, CL_SIGNED_INT16),
        d2,
        Some(&bytes_of(&ints)),
    );
    let dsti = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_SIGNED_INT16), d2, None);
    let k = t.s.kernel(SRC, "fetch_2d_int", "");
    t.s.arg(k, 0, &srci);
    t.s.arg(k, 1, &dsti);
    t.s.run(k, &[w, h], None, None);
    let got = t.read(dsti, [w, h, 1], n * 2);
    let want: Vec<i16> = ints
        .iter()
        .enumerate()
        .map(|(i, v)| v - (i % 4 + 1) as i16)
        .collect();
    assert_eq!(got, bytes_of(&want), "{}: fetch_2d_int", cl.how);
    // Unsigned 8-bit integers, BGRA: the kernel sees RGBA order.
    let srcu = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_BGRA, CL_UNSIGNED_INT8),
        d2,
        Some(&bytes),
    );
    let dstu = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_UNSIGNED_INT8), d2, None);
    let k = t.s.kernel(SRC, "fetch_2d_uint", "");
    t.s.arg(k, 0, &srcu);
    t.s.arg(k, 1, &dstu);
    t.s.run(k, &[w, h], None, None);
    let got = t.read(dstu, [w, h, 1], n);
    let mut want = Vec::with_capacity(n);
    for px in bytes.chunks_exact(4) {
        let rgba = [px[2], px[1], px[0], px[3]];
        want.extend(rgba.iter().enumerate().map(|(c, &v)| v + c as u8 + 1));
    }
    assert_eq!(got, want, "{}: fetch_2d_uint from BGRA", cl.how);
}

/// The texel a nearest sampler picks for normalized coordinate `u` over
/// `n` texels, per the OpenCL specification's addressing rules.
fn nearest(u: f32, n: usize, addressing: cl_addressing_mode) -> Option<usize> {
    let n_f = n as f32;
    match addressing {
        CL_ADDRESS_REPEAT => {
            let s = (u - u.floor()) * n_f;
            let i = s.floor() as usize;
            Some(if i > n - 1 { 0 } else { i })
        }
        CL_ADDRESS_MIRRORED_REPEAT => {
            let s = 2.0 * (0.5 * u).round_ties_even();
            let s = (u - s).abs() * n_f;
            Some((s.floor() as usize).min(n - 1))
        }
        CL_ADDRESS_CLAMP => {
            let i = (u * n_f).floor();
            (i >= 0.0 && i < n_f).then_some(i as usize)
        }
        _ => Some(((u * n_f).floor().max(0.0) as usize).min(n - 1)),
    }
}

fn samplers_address_and_filter(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (8, 4);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let data: Vec<f32> = (0..w * h * 4).map(|i| (i * 3 % 17) as f32).collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_RGBA, CL_FLOAT),
        d2,
        Some(&floats(&data)),
    );
    let dst = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_FLOAT), d2, None);
    let k = t.s.kernel(SRC, "sample_2d", "");
    let texel = |x: usize, y: usize| &data[(y * w + x) * 4..(y * w + x) * 4 + 4];
    // Nearest, with each addressing mode, normalized or not, shifted so
    // that some samples fall outside the image.
    for (normalized, addressing) in [
        (false, CL_ADDRESS_CLAMP_TO_EDGE),
        (false, CL_ADDRESS_CLAMP),
        (true, CL_ADDRESS_CLAMP_TO_EDGE),
        (true, CL_ADDRESS_CLAMP),
        (true, CL_ADDRESS_REPEAT),
        (true, CL_ADDRESS_MIRRORED_REPEAT),
    ] {
        let smp = t.sampler(normalized, addressing, CL_FILTER_NEAREST);
        let (sx, sy) = if normalized {
            (1.0 / w as f32, 1.0 / h as f32)
        } else {
            (1.0, 1.0)
        };
        let shift = -3.0f32;
        t.s.arg(k, 0, &src);
        t.s.arg(k, 1, &smp);
        t.s.arg(k, 2, &dst);
        t.s.arg(k, 3, &sx);
        t.s.arg(k, 4, &sy);
        t.s.arg(k, 5, &shift);
        t.s.run(k, &[w, h], None, None);
        let got = to_floats(&t.read(dst, [w, h, 1], w * h * 16));
        for y in 0..h {
            for x in 0..w {
                let u = (x as f32 + 0.5 + shift) / w as f32;
                let v = (y as f32 + 0.5) / h as f32;
                let want: Vec<f32> = match (nearest(u, w, addressing), nearest(v, h, addressing)) {
                    (Some(i), Some(j)) => texel(i, j).to_vec(),
                    _ => vec![0.0; 4],
                };
                let at = (y * w + x) * 4;
                assert_eq!(
                    got[at..at + 4],
                    want[..],
                    "{}: normalized {normalized}, addressing {addressing:x}, ({x}, {y})",
                    cl.how
                );
            }
        }
    }
    // Linear: halfway between texel centres is their average.
    let smp = t.sampler(false, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_LINEAR);
    let (one, half) = (1.0f32, 0.5f32);
    t.s.arg(k, 1, &smp);
    t.s.arg(k, 3, &one);
    t.s.arg(k, 4, &one);
    t.s.arg(k, 5, &half);
    t.s.run(k, &[w, h], None, None);
    let got = to_floats(&t.read(dst, [w, h, 1], w * h * 16));
    for y in 0..h {
        for x in 0..w {
            let right = (x + 1).min(w - 1);
            for c in 0..4 {
                let want = (texel(x, y)[c] + texel(right, y)[c]) / 2.0;
                let g = got[(y * w + x) * 4 + c];
                assert!(
                    (g - want).abs() <= 0.02 * want.abs().max(1.0),
                    "{}: linear ({x}, {y}) {c}: {g} vs {want}",
                    cl.how
                );
            }
        }
    }
}

fn literal_sampler_with_integer_coordinates(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (6, 3);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let bytes: Vec<u8> = (0..w * h * 4).map(|i| (i * 5 + 1) as u8).collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_RGBA, CL_UNORM_INT8),
        d2,
        Some(&bytes),
    );
    let dst = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_FLOAT), d2, None);
    let k = t.s.kernel(SRC, "sample_int_coords", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &dst);
    t.s.run(k, &[w, h], None, None);
    let got = to_floats(&t.read(dst, [w, h, 1], w * h * 16));
    for y in 0..h {
        for x in 0..w {
            for c in 0..4 {
                let want = if x == 0 {
                    0.0
                } else {
                    bytes[(y * w + x - 1) * 4 + c] as f32 / 255.0
                };
                let g = got[(y * w + x) * 4 + c];
                assert!(
                    (g - want).abs() < 1e-6,
                    "{}: ({x}, {y}) {c}: {g} vs {want}",
                    cl.how
                );
            }
        }
    }
}

/// One literal sampler read at 40 places (and a second one at 8): each
/// use of a sampler variable is a constant of its own in the SPIR-V, and
/// giving each a descriptor passed the stage's sampler limit (32 on
/// lavapipe), where the driver hung or crashed on the pipeline.
fn a_literal_sampler_read_at_many_places(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (8, 8);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let pixels: Vec<f32> = (0..w * h).flat_map(|i| [i as f32, 1.0, 0.0, 0.0]).collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_RGBA, CL_FLOAT),
        d2,
        Some(&floats(&pixels)),
    );
    let mut body = String::new();
    for k in 0..40 {
        body += &format!("    v += read_imagef(img, near, (int2)(x + {}, y + {})).x;\n", k % 5, k / 5);
    }
    for k in 0..8 {
        body += &format!("    v += read_imagef(img, wrap, (float2)(x + {k} + 0.5f, y + 0.5f)).y;\n");
    }
    let source = format!(
        "constant sampler_t near = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;
        kernel void many(read_only image2d_t img, global float *out) {{
            int x = get_global_id(0), y = get_global_id(1);
            const sampler_t wrap = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
            float v = 0;
        {body}    out[y * get_global_size(0) + x] = v;
        }}"
    );
    let k = t.s.kernel(&source, "many", "");
    let out = t.s.zeroed(w * h * 4);
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &out);
    t.s.run(k, &[w, h], None, None);
    let got = to_floats(&t.s.cl.read(t.s.q, out, 0, w * h * 4));
    for y in 0..h {
        for x in 0..w {
            let mut want = 0.0;
            for k in 0..40 {
                let (px, py) = ((x + k % 5).min(w - 1), (y + k / 5).min(h - 1));
                want += (py * w + px) as f32;
            }
            // CLK_ADDRESS_CLAMP reads the border (0) past the edge.
            want += (0..8).filter(|k| x + k < w).count() as f32;
            assert_eq!(got[y * w + x], want, "{}: ({x}, {y})", cl.how);
        }
    }
}

fn three_d_and_array_images(cl: &Cl) {
    let mut t = Images::new(cl);
    // 3D.
    let (w, h, d) = (5, 4, 3);
    let n = w * h * d;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let f = fmt(CL_R, CL_FLOAT);
    let src = t.image(
        CL_MEM_READ_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE3D, w, h, d, 0),
        Some(&floats(&data)),
    );
    let dst = t.image(
        CL_MEM_WRITE_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE3D, w, h, d, 0),
        None,
    );
    let k = t.s.kernel(SRC, "fetch_3d", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &dst);
    t.s.run(k, &[w, h, d], None, None);
    let got = to_floats(&t.read(dst, [w, h, d], n * 4));
    assert_eq!(
        got,
        data.iter().map(|v| v + 1.0).collect::<Vec<_>>(),
        "{}: 3D",
        cl.how
    );
    // 2D array, through a sampler.
    let la = 3;
    let f = fmt(CL_RG, CL_FLOAT);
    let data: Vec<f32> = (0..w * h * la * 2).map(|i| i as f32 * 0.5).collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, w, h, 0, la),
        Some(&floats(&data)),
    );
    let dst = t.image(
        CL_MEM_WRITE_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, w, h, 0, la),
        None,
    );
    let smp = t.sampler(false, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST);
    let k = t.s.kernel(SRC, "sample_2d_array", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &smp);
    t.s.arg(k, 2, &dst);
    t.s.run(k, &[w, h, la], None, None);
    let got = to_floats(&t.read(dst, [w, h, la], w * h * la * 8));
    assert_eq!(got, data, "{}: 2D array", cl.how);
    // 1D, unsigned.
    let n1 = 50;
    let words: Vec<u32> = (0..n1 * 4).map(|i| i as u32 * 11).collect();
    let f = fmt(CL_RGBA, CL_UNSIGNED_INT32);
    let src = t.image(
        CL_MEM_READ_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE1D, n1, 0, 0, 0),
        Some(&bytes_of(&words)),
    );
    let dst = t.image(
        CL_MEM_WRITE_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE1D, n1, 0, 0, 0),
        None,
    );
    let k = t.s.kernel(SRC, "fetch_1d", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &dst);
    t.s.run(k, &[n1], None, None);
    let got = t.read(dst, [n1, 1, 1], n1 * 16);
    let want: Vec<u32> = words.iter().map(|v| v * 3).collect();
    assert_eq!(got, bytes_of(&want), "{}: 1D", cl.how);
    // 1D array, half floats.
    let (n1, layers) = (9, 4);
    let halves: Vec<u16> = (0..n1 * layers * 4)
        .map(|i| 0x3c00 + (i as u16) * 8)
        .collect();
    let f = fmt(CL_RGBA, CL_HALF_FLOAT);
    let src = t.image(
        CL_MEM_READ_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, n1, 0, 0, layers),
        Some(&bytes_of(&halves)),
    );
    let dst = t.image(
        CL_MEM_WRITE_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, n1, 0, 0, layers),
        None,
    );
    let k = t.s.kernel(SRC, "fetch_1d_array", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &dst);
    t.s.run(k, &[n1, layers], None, None);
    let got = t.read(dst, [n1, layers, 1], n1 * layers * 8);
    let want: Vec<u16> = halves.iter().map(|h| h ^ 0x8000).collect();
    assert_eq!(got, bytes_of(&want), "{}: 1D array", cl.how);
}

fn read_write_images(cl: &Cl) {
    let d = cl.device();
    if u32_of(
        &cl.device_bytes(d, CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS)
            .unwrap(),
    ) == 0
    {
        // The device cannot read storage images without a format.
        return;
    }
    let mut t = Images::new(cl);
    let (w, h) = (7, 5);
    let data: Vec<u16> = (0..w * h * 4).map(|i| i as u16 * 3).collect();
    let f = fmt(CL_RGBA, CL_UNSIGNED_INT16);
    let img = t.image(
        CL_MEM_READ_WRITE,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0),
        Some(&bytes_of(&data)),
    );
    let k = t.s.kernel(RW_SRC, "read_write_2d", "-cl-std=CL3.0");
    t.s.arg(k, 0, &img);
    t.s.run(k, &[w, h], None, None);
    let got = t.read(img, [w, h, 1], w * h * 8);
    let mut want = data.clone();
    for y in 0..h {
        for x in 0..w {
            let at = (y * w + x) * 4;
            want[at] += x as u16;
            want[at + 1] += y as u16;
            want[at + 2] += 1;
        }
    }
    assert_eq!(got, bytes_of(&want), "{}: read_write", cl.how);
}

fn image_queries(cl: &Cl) {
    let mut t = Images::new(cl);
    let a = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_BGRA, CL_UNORM_INT8),
        image_desc(CL_MEM_OBJECT_IMAGE2D, 21, 9, 0, 0),
        None,
    );
    let b = t.image(
        CL_MEM_WRITE_ONLY,
        fmt(CL_R, CL_SIGNED_INT32),
        image_desc(CL_MEM_OBJECT_IMAGE3D, 6, 5, 4, 0),
        None,
    );
    let c = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_RGBA, CL_FLOAT),
        image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, 3, 2, 0, 7),
        None,
    );
    let d = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_R, CL_UNORM_INT16),
        image_desc(CL_MEM_OBJECT_IMAGE1D, 33, 0, 0, 0),
        None,
    );
    let e = t.image(
        CL_MEM_WRITE_ONLY,
        fmt(CL_RG, CL_HALF_FLOAT),
        image_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, 17, 0, 0, 5),
        None,
    );
    let out = t.s.zeroed(64);
    let k = t.s.kernel(SRC, "queries", "");
    for (i, m) in [a, b, c, d, e, out].iter().enumerate() {
        t.s.arg(k, i as u32, m);
    }
    t.s.run(k, &[1], None, None);
    let got = t.s.words(out, 16);
    let want = [
        21,
        9,
        CL_BGRA,
        CL_UNORM_INT8,
        6,
        5,
        4,
        CL_SIGNED_INT32,
        3,
        2,
        7,
        33,
        17,
        5,
        21 * 1000 + 9,
        6 * 10000 + 5 * 100 + 4,
    ];
    assert_eq!(got, want, "{}: queries", cl.how);
}

fn argument_errors(cl: &Cl) {
    let mut t = Images::new(cl);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, 4, 4, 0, 0);
    let img3 = t.image(
        0,
        fmt(CL_RGBA, CL_FLOAT),
        image_desc(CL_MEM_OBJECT_IMAGE3D, 4, 4, 4, 0),
        None,
    );
    let lum = t.image(CL_MEM_READ_ONLY, fmt(CL_LUMINANCE, CL_FLOAT), d2, None);
    let buf = t.s.buffer(64);
    let k = t.s.kernel(SRC, "fetch_2d", "");
    let set = |i: u32, m: &cl_mem| unsafe {
        cl.clSetKernelArg.unwrap()(
            k,
            i,
            std::mem::size_of::<cl_mem>(),
            (m as *const cl_mem).cast(),
        )
    };
    // A 3D image for a 2D parameter, a buffer for an image.
    assert_eq!(set(0, &img3), CL_INVALID_ARG_VALUE);
    assert_eq!(set(0, &buf), CL_INVALID_MEM_OBJECT);
    // Luminance can be read, not written.
    assert_eq!(set(0, &lum), CL_SUCCESS);
    assert_eq!(set(1, &lum), CL_INVALID_ARG_VALUE);
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 0, 4, (&img3 as *const cl_mem).cast()) };
    assert_eq!(r, CL_INVALID_ARG_SIZE);
    // Images kernels may only read are not written, nor read those they
    // may only write.
    let ro = t.image(CL_MEM_READ_ONLY, fmt(CL_RGBA, CL_FLOAT), d2, None);
    let wo = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_FLOAT), d2, None);
    assert_eq!(set(0, &wo), CL_INVALID_ARG_VALUE);
    assert_eq!(set(1, &ro), CL_INVALID_ARG_VALUE);
    assert_eq!(set(0, &ro), CL_SUCCESS);
    assert_eq!(set(1, &wo), CL_SUCCESS);
    // Formats for read_write arguments only where kernels have them.
    let d = cl.device();
    let rw_args = u32_of(
        &cl.device_bytes(d, CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS)
            .unwrap(),
    );
    let mut n = 0;
    let r = unsafe {
        cl.clGetSupportedImageFormats.unwrap()(
            t.s.c,
            CL_MEM_KERNEL_READ_AND_WRITE,
            CL_MEM_OBJECT_IMAGE2D,
            0,
            null_mut(),
            &mut n,
        )
    };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(
        n == 0,
        rw_args == 0,
        "{n} read-write formats, {rw_args} arguments"
    );
    // A sampler argument takes samplers only.
    let ks = t.s.kernel(SRC, "sample_2d", "");
    let r = unsafe {
        cl.clSetKernelArg.unwrap()(
            ks,
            1,
            std::mem::size_of::<cl_mem>(),
            (&buf as *const cl_mem).cast(),
        )
    };
    assert_eq!(r, CL_INVALID_SAMPLER);
}

fn orders_without_alpha_and_swizzled_orders(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (4, 2);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let dst = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_FLOAT), d2, None);
    let k = t.s.kernel(SRC, "sample_2d", "");
    let clamp = t.sampler(false, CL_ADDRESS_CLAMP, CL_FILTER_NEAREST);
    let values: Vec<f32> = (0..w * h).map(|i| i as f32 + 0.25).collect();
    let unorm: Vec<u8> = (0..w * h).map(|i| (i * 30) as u8).collect();
    type Expect = fn(f32) -> [f32; 4];
    let cases: Vec<(cl_image_format, Vec<u8>, Expect)> = vec![
        (fmt(CL_R, CL_FLOAT), floats(&values), |v| [v, 0.0, 0.0, 1.0]),
        (fmt(CL_LUMINANCE, CL_FLOAT), floats(&values), |v| {
            [v, v, v, 1.0]
        }),
        (fmt(CL_INTENSITY, CL_FLOAT), floats(&values), |v| {
            [v, v, v, v]
        }),
        (fmt(CL_A, CL_UNORM_INT8), unorm.clone(), |v| {
            [0.0, 0.0, 0.0, v]
        }),
    ];
    for (f, data, expect) in cases {
        let src = t.image(CL_MEM_READ_ONLY, f, d2, Some(&data));
        let (one, shift) = (1.0f32, -1.0f32);
        t.s.arg(k, 0, &src);
        t.s.arg(k, 1, &clamp);
        t.s.arg(k, 2, &dst);
        t.s.arg(k, 3, &one);
        t.s.arg(k, 4, &one);
        t.s.arg(k, 5, &shift);
        t.s.run(k, &[w, h], None, None);
        let got = to_floats(&t.read(dst, [w, h, 1], w * h * 16));
        for y in 0..h {
            for x in 0..w {
                let want = if x == 0 {
                    // The border: transparent black, or opaque black for
                    // orders without alpha.
                    let opaque = matches!(f.image_channel_order, CL_R | CL_LUMINANCE);
                    [0.0, 0.0, 0.0, if opaque { 1.0 } else { 0.0 }]
                } else {
                    let i = y * w + x - 1;
                    let v = if f.image_channel_data_type == CL_FLOAT {
                        values[i]
                    } else {
                        unorm[i] as f32 / 255.0
                    };
                    expect(v)
                };
                let at = (y * w + x) * 4;
                for c in 0..4 {
                    assert!(
                        (got[at + c] - want[c]).abs() < 1e-6,
                        "{}: order {:x} ({x}, {y}): {:?} vs {want:?}",
                        cl.how,
                        f.image_channel_order,
                        &got[at..at + 4]
                    );
                }
            }
        }
    }
}

/// Unnormalized coordinates that are whole numbers name the texel they
/// start, however the size divides them.
fn unnormalized_integral_coordinates(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (329, 2);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let data: Vec<f32> = (0..w * h).map(|i| i as f32).collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_R, CL_FLOAT),
        d2,
        Some(&floats(&data)),
    );
    let dst = t.image(CL_MEM_WRITE_ONLY, fmt(CL_R, CL_FLOAT), d2, None);
    let k = t.s.kernel(SRC, "sample_2d", "");
    for addressing in [CL_ADDRESS_CLAMP_TO_EDGE, CL_ADDRESS_CLAMP, CL_ADDRESS_NONE] {
        let smp = t.sampler(false, addressing, CL_FILTER_NEAREST);
        let (one, shift) = (1.0f32, -0.5f32);
        t.s.arg(k, 0, &src);
        t.s.arg(k, 1, &smp);
        t.s.arg(k, 2, &dst);
        t.s.arg(k, 3, &one);
        t.s.arg(k, 4, &one);
        t.s.arg(k, 5, &shift);
        t.s.run(k, &[w, h], None, None);
        let got = to_floats(&t.read(dst, [w, h, 1], w * h * 4));
        assert_eq!(got, data, "{}: addressing {addressing:x}", cl.how);
    }
    // Linear filtering at texel centres weighs only that texel, even
    // between values far apart.
    let wild: Vec<f32> = (0..w * h)
        .map(|i| if i % 2 == 0 { 3.0e13 } else { -7.0 })
        .collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_R, CL_FLOAT),
        d2,
        Some(&floats(&wild)),
    );
    let smp = t.sampler(false, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_LINEAR);
    let (one, centre) = (1.0f32, 0.0f32);
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &smp);
    t.s.arg(k, 5, &centre);
    t.s.arg(k, 3, &one);
    t.s.run(k, &[w, h], None, None);
    let got = to_floats(&t.read(dst, [w, h, 1], w * h * 4));
    assert_eq!(got, wild, "{}: linear at texel centres", cl.how);
}

/// All but one of the read images the device reports, a written image, a
/// sampler and a struct too large for push constants (so an argument
/// block) in one kernel.
fn every_image_argument_beside_an_argument_block(cl: &Cl) {
    let d = cl.device();
    let max_reads = u32_of(&cl.device_bytes(d, CL_DEVICE_MAX_READ_IMAGE_ARGS).unwrap()) as usize;
    assert!(
        max_reads >= 128,
        "{}: {max_reads} read image arguments",
        cl.how
    );
    // The written image takes one of the shader stage's resources, which
    // may be no more than the read images' limit.
    let reads = max_reads - 1;
    let writes = u32_of(&cl.device_bytes(d, CL_DEVICE_MAX_WRITE_IMAGE_ARGS).unwrap());
    assert!(writes >= 64, "{}: {writes} write image arguments", cl.how);
    let samplers = u32_of(&cl.device_bytes(d, CL_DEVICE_MAX_SAMPLERS).unwrap());
    assert!(samplers >= 16, "{}: {samplers} samplers", cl.how);
    let mut src = String::from(
        "typedef struct { uint v[16]; } Big;\nkernel void many(global uint *out, Big big, sampler_t s, write_only image2d_t w",
    );
    for k in 0..reads {
        src.push_str(&format!(", read_only image2d_t i{k}"));
    }
    src.push_str(") {\n    uint sum = 0;\n");
    for k in 0..reads {
        src.push_str(&format!(
            "    sum += read_imageui(i{k}, s, (int2)(0, 0)).x * {};\n",
            k + 1
        ));
    }
    src.push_str("    out[0] = sum;\n    out[1] = big.v[0] + big.v[15];\n    write_imageui(w, (int2)(0, 0), (uint4)(sum, 0, 0, 1));\n}\n");
    // Unoptimised code keeps image and sampler arguments in variables.
    for options in ["", "-cl-opt-disable"] {
        many_images(cl, &src, options, reads);
    }
}

/// Plain vector arguments that do not fit the push constants move every
/// argument to an argument block; an image among them is still one
/// binding (its parameter was once bound twice, which failed validation:
/// FFmpeg's nlmeans_opencl filter).
fn an_image_beside_vectors_past_the_push_constants(cl: &Cl) {
    let mut src =
        String::from("kernel void k(global uint *out, read_only image2d_t img, sampler_t s");
    for v in 0..24 {
        src.push_str(&format!(", int4 v{v}"));
    }
    src.push_str(") {\n    int4 sum = 0;\n");
    for v in 0..24 {
        src.push_str(&format!("    sum += v{v};\n"));
    }
    src.push_str(
        "    out[0] = read_imageui(img, s, (int2)(v0.x, v1.y)).x;\n    out[1] = sum.x + sum.w;\n}\n",
    );
    let mut t = Images::new(cl);
    let k = t.s.kernel(&src, "k", "");
    let out = t.s.zeroed(8);
    t.s.arg(k, 0, &out);
    let texels: Vec<u8> = (0..4).map(|v| 10 + v).collect();
    let img = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_R, CL_UNSIGNED_INT8),
        image_desc(CL_MEM_OBJECT_IMAGE2D, 2, 2, 1, 0),
        Some(&texels),
    );
    t.s.arg(k, 1, &img);
    let sampler = t.sampler(false, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST);
    t.s.arg(k, 2, &sampler);
    for v in 0..24u32 {
        let x = if v == 0 { 1 } else { 0 };
        let y = if v == 1 { 1 } else { 0 };
        let value: [i32; 4] = [x + v as i32, y, 0, v as i32];
        t.s.arg(k, 3 + v, &value);
    }
    // v0.x is 1, v1.y is 1: texel (1, 1). Sums of 0..24 plus the 1 of v0.x.
    t.s.run(k, &[1], None, None);
    assert_eq!(t.s.words(out, 2), vec![13, 277 + 276], "{}", cl.how);
}

fn many_images(cl: &Cl, src: &str, options: &str, reads: usize) {
    let mut t = Images::new(cl);
    let k = t.s.kernel(src, "many", options);
    let r8 = fmt(CL_R, CL_UNSIGNED_INT8);
    let r32 = fmt(CL_R, CL_UNSIGNED_INT32);
    let one = image_desc(CL_MEM_OBJECT_IMAGE2D, 1, 1, 1, 0);
    let out = t.s.zeroed(8);
    t.s.arg(k, 0, &out);
    let big: Vec<u32> = (0..16).map(|v| v * 3 + 1).collect();
    t.s.arg_bytes(k, 1, &bytes_of(&big));
    let sampler = t.sampler(false, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST);
    t.s.arg(k, 2, &sampler);
    let w = t.image(CL_MEM_WRITE_ONLY, r32, one, None);
    t.s.arg(k, 3, &w);
    for n in 0..reads {
        let img = t.image(CL_MEM_READ_ONLY, r8, one, Some(&[(n % 7) as u8]));
        t.s.arg(k, 4 + n as u32, &img);
    }
    t.s.run(k, &[1], None, None);
    let want: u32 = (0..reads).map(|n| (n % 7) as u32 * (n as u32 + 1)).sum();
    assert_eq!(
        t.s.words(out, 2),
        vec![want, 1 + 46],
        "{} {options}",
        cl.how
    );
    let got = t.read(w, [1, 1, 1], 4);
    assert_eq!(u32_of(&got), want, "{} {options}", cl.how);
}

/// CL_BGRA images (a required write format) written by kernels, whether
/// or not the device writes B8G8R8A8 storage images itself.
fn bgra_images_written_by_kernels(cl: &Cl) {
    let (w, h) = (5usize, 3usize);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let rgba: Vec<u8> = (0..w * h * 4).map(|i| (i * 7 % 251) as u8).collect();
    for (kernel, ty) in [
        ("fetch_2d", CL_UNORM_INT8),
        ("fetch_2d_uint", CL_UNSIGNED_INT8),
    ] {
        let mut t = Images::new(cl);
        let k = t.s.kernel(SRC, kernel, "");
        let src = t.image(CL_MEM_READ_ONLY, fmt(CL_RGBA, ty), d2, Some(&rgba));
        let dst = t.image(CL_MEM_WRITE_ONLY, fmt(CL_BGRA, ty), d2, None);
        t.s.arg(k, 0, &src);
        t.s.arg(k, 1, &dst);
        t.s.run(k, &[w, h], None, None);
        let got = t.read(dst, [w, h, 1], w * h * 4);
        // fetch_2d doubles (saturating), fetch_2d_uint adds 1, 2, 3, 4
        // (inputs stay below 251, so nothing saturates).
        let f = |c: u8, k: usize| match kernel {
            "fetch_2d" => (c as u32 * 2).min(255) as u8,
            _ => c.saturating_add(k as u8 + 1),
        };
        let want: Vec<u8> = rgba
            .chunks_exact(4)
            .flat_map(|p| [f(p[2], 2), f(p[1], 1), f(p[0], 0), f(p[3], 3)])
            .collect();
        assert_eq!(got, want, "{}: {kernel}", cl.how);
    }
}

impl Images<'_> {
    /// A 1D image buffer of `width` texels over `buffer`.
    fn over(
        &mut self,
        buffer: cl_mem,
        flags: cl_mem_flags,
        f: cl_image_format,
        width: usize,
    ) -> cl_mem {
        let mut d = image_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, width, 0, 0, 0);
        d.buffer = buffer;
        let mut e = 1;
        let m = unsafe {
            self.s.cl.clCreateImage.unwrap()(self.s.c, flags, &f, &d, null_mut(), &mut e)
        };
        assert_eq!(
            e, CL_SUCCESS,
            "{}: clCreateImage of a 1D image buffer",
            self.s.cl.how
        );
        self.made.push(m);
        m
    }
}

fn one_d_image_buffers_share_the_buffer(cl: &Cl) {
    let mut t = Images::new(cl);
    let formats = supported_formats(&t, CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE1D_BUFFER);
    for f in [
        fmt(CL_RGBA, CL_UNORM_INT8),
        fmt(CL_RGBA, CL_FLOAT),
        fmt(CL_RGBA, CL_UNSIGNED_INT32),
    ] {
        assert!(
            formats.contains(&(f.image_channel_order, f.image_channel_data_type)),
            "{}",
            cl.how
        );
    }
    let max = usize_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_IMAGE_MAX_BUFFER_SIZE)
            .unwrap(),
    );
    assert!(
        max >= 65536,
        "{}: CL_DEVICE_IMAGE_MAX_BUFFER_SIZE {max}",
        cl.how
    );
    // More texels than many devices allow in a 1D image.
    let n = 40_000usize;
    let bytes: Vec<u8> = (0..n * 4).map(|i| (i * 13 % 256) as u8).collect();
    let src_buf = t.s.buffer_from(&bytes);
    let dst_buf = t.s.zeroed(n * 4);
    let widths = t.s.zeroed(8);
    let src = t.over(src_buf, CL_MEM_READ_ONLY, fmt(CL_RGBA, CL_UNORM_INT8), n);
    let dst = t.over(dst_buf, CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_UNORM_INT8), n);
    let k = t.s.kernel(SRC, "scale_1d_buffer", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &dst);
    t.s.arg(k, 2, &widths);
    t.s.run(k, &[n], None, None);
    assert_eq!(
        t.s.words(widths, 2),
        vec![n as u32; 2],
        "{}: get_image_width",
        cl.how
    );
    // The kernel's writes are in the buffer.
    let want: Vec<u8> = bytes
        .iter()
        .map(|&b| ((b as f32 / 255.0 * 0.5) * 255.0).round() as u8)
        .collect();
    let got = cl.read(t.s.q, dst_buf, 0, n * 4);
    let off = got
        .iter()
        .zip(&want)
        .filter(|(a, b)| a.abs_diff(**b) > 1)
        .count();
    assert_eq!(off, 0, "{}: scale_1d_buffer through the buffer", cl.how);
    // And in the image, read from an origin.
    let mut part = vec![0u8; 100 * 4];
    let (o, r) = ([n - 100, 0, 0], [100usize, 1, 1]);
    let e = unsafe {
        cl.clEnqueueReadImage.unwrap()(
            t.s.q,
            dst,
            CL_TRUE,
            o.as_ptr(),
            r.as_ptr(),
            0,
            0,
            part.as_mut_ptr().cast(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(e, CL_SUCCESS);
    assert_eq!(
        part,
        got[(n - 100) * 4..],
        "{}: clEnqueueReadImage of a 1D image buffer",
        cl.how
    );
    // BGRA texels: the buffer holds blue first.
    let bgra_buf = t.s.zeroed(n * 4);
    let bgra = t.over(bgra_buf, CL_MEM_WRITE_ONLY, fmt(CL_BGRA, CL_UNORM_INT8), n);
    t.s.arg(k, 1, &bgra);
    t.s.run(k, &[n], None, None);
    let got = cl.read(t.s.q, bgra_buf, 0, n * 4);
    let swapped: Vec<u8> = want
        .chunks_exact(4)
        .flat_map(|p| [p[2], p[1], p[0], p[3]])
        .collect();
    let off = got
        .iter()
        .zip(&swapped)
        .filter(|(a, b)| a.abs_diff(**b) > 1)
        .count();
    assert_eq!(off, 0, "{}: scale_1d_buffer into BGRA", cl.how);
    // Writes through the buffer are the image's texels, and image writes
    // the buffer's bytes.
    cl.write(t.s.q, src_buf, 0, &[9, 8, 7, 6]);
    let e = unsafe {
        let px = [1u8, 2, 3, 4];
        let (o, r) = ([1usize, 0, 0], [1usize, 1, 1]);
        cl.clEnqueueWriteImage.unwrap()(
            t.s.q,
            src,
            CL_TRUE,
            o.as_ptr(),
            r.as_ptr(),
            0,
            0,
            px.as_ptr().cast(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(e, CL_SUCCESS);
    assert_eq!(
        t.read(src, [2, 1, 1], 8),
        vec![9, 8, 7, 6, 1, 2, 3, 4],
        "{}",
        cl.how
    );
    assert_eq!(
        cl.read(t.s.q, src_buf, 0, 8),
        vec![9, 8, 7, 6, 1, 2, 3, 4],
        "{}",
        cl.how
    );
    // Read-write: integers, in place, in a sub-buffer.
    if read_write_supported(cl) {
        let whole = t.s.buffer_from(&vec![5u8; 4096]);
        let region = cl_buffer_region {
            origin: 1024,
            size: 1024,
        };
        let mut e = 1;
        let sub = unsafe {
            cl.clCreateSubBuffer.unwrap()(
                whole,
                CL_MEM_READ_WRITE,
                CL_BUFFER_CREATE_TYPE_REGION,
                (&region as *const cl_buffer_region).cast(),
                &mut e,
            )
        };
        assert_eq!(e, CL_SUCCESS);
        t.made.push(sub);
        let img = t.over(sub, 0, fmt(CL_RGBA, CL_UNSIGNED_INT8), 256);
        let k = t.s.kernel(RW_BUFFER_SRC, "bump_1d_buffer", "-cl-std=CL3.0");
        t.s.arg(k, 0, &img);
        t.s.run(k, &[256], None, None);
        let got = cl.read(t.s.q, whole, 0, 4096);
        for (i, &v) in got.iter().enumerate() {
            let want = if (1024..2048).contains(&i) {
                5 + 1 + (i % 4) as u8
            } else {
                5
            };
            assert_eq!(v, want, "{}: byte {i} after bump_1d_buffer", cl.how);
        }
    }
    // Queries name the buffer.
    let mut named: cl_mem = null_mut();
    unsafe {
        cl.clGetImageInfo.unwrap()(
            src,
            CL_IMAGE_BUFFER,
            8,
            (&mut named as *mut cl_mem).cast(),
            null_mut(),
        );
    }
    assert_eq!(named, src_buf);
    unsafe {
        cl.clGetMemObjectInfo.unwrap()(
            dst,
            CL_MEM_ASSOCIATED_MEMOBJECT,
            8,
            (&mut named as *mut cl_mem).cast(),
            null_mut(),
        );
    }
    assert_eq!(named, dst_buf);
}

fn read_write_supported(cl: &Cl) -> bool {
    u32_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS)
            .unwrap(),
    ) > 0
}

fn supported_formats(t: &Images, flags: cl_mem_flags, ty: cl_mem_object_type) -> Vec<(u32, u32)> {
    let mut n = 0;
    let cl = t.s.cl;
    unsafe { cl.clGetSupportedImageFormats.unwrap()(t.s.c, flags, ty, 0, null_mut(), &mut n) };
    let mut list = vec![fmt(0, 0); n as usize];
    unsafe {
        cl.clGetSupportedImageFormats.unwrap()(t.s.c, flags, ty, n, list.as_mut_ptr(), null_mut())
    };
    list.iter()
        .map(|f| (f.image_channel_order, f.image_channel_data_type))
        .collect()
}

fn one_d_image_buffer_errors(cl: &Cl) {
    let mut t = Images::new(cl);
    let f = fmt(CL_RGBA, CL_FLOAT);
    let ro = cl.buffer(t.s.c, CL_MEM_READ_ONLY, 1024, null_mut());
    t.made.push(ro);
    let create = |flags: cl_mem_flags, width: usize, buffer: cl_mem, host: *mut c_void| {
        let mut d = image_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, width, 0, 0, 0);
        d.buffer = buffer;
        let mut e = 1;
        let m = unsafe { cl.clCreateImage.unwrap()(t.s.c, flags, &f, &d, host, &mut e) };
        if !m.is_null() {
            unsafe { cl.clReleaseMemObject.unwrap()(m) };
        }
        e
    };
    // 64 float texels fill the buffer; 65 do not fit.
    assert_eq!(create(0, 64, ro, null_mut()), CL_SUCCESS, "{}", cl.how);
    assert_eq!(
        create(0, 65, ro, null_mut()),
        CL_INVALID_IMAGE_SIZE,
        "{}",
        cl.how
    );
    assert_eq!(
        create(0, 0, ro, null_mut()),
        CL_INVALID_IMAGE_DESCRIPTOR,
        "{}",
        cl.how
    );
    assert_eq!(
        create(0, 8, null_mut(), null_mut()),
        CL_INVALID_IMAGE_DESCRIPTOR,
        "{}",
        cl.how
    );
    // The buffer's access cannot be widened.
    assert_eq!(
        create(CL_MEM_WRITE_ONLY, 8, ro, null_mut()),
        CL_INVALID_VALUE,
        "{}",
        cl.how
    );
    assert_eq!(
        create(CL_MEM_READ_WRITE, 8, ro, null_mut()),
        CL_INVALID_VALUE,
        "{}",
        cl.how
    );
    assert_eq!(
        create(CL_MEM_USE_HOST_PTR, 8, ro, null_mut()),
        CL_INVALID_VALUE,
        "{}",
        cl.how
    );
    let mut host = [0u8; 64];
    assert_eq!(
        create(0, 8, ro, host.as_mut_ptr().cast()),
        CL_INVALID_HOST_PTR,
        "{}",
        cl.how
    );
    // Flags not given are the buffer's.
    let img = t.over(ro, 0, f, 16);
    let mut flags: cl_mem_flags = 0;
    unsafe {
        cl.clGetMemObjectInfo.unwrap()(
            img,
            CL_MEM_FLAGS,
            8,
            (&mut flags as *mut cl_mem_flags).cast(),
            null_mut(),
        );
    }
    assert_eq!(
        flags & (CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY | CL_MEM_READ_WRITE),
        CL_MEM_READ_ONLY,
        "{}",
        cl.how
    );
    // A read-only image cannot be a write_only argument.
    let k = t.s.kernel(SRC, "scale_1d_buffer", "");
    let r = unsafe { cl.clSetKernelArg.unwrap()(k, 1, 8, (&img as *const cl_mem).cast()) };
    assert_eq!(r, CL_INVALID_ARG_VALUE, "{}", cl.how);
}

/// A 2D image of `w`×`h` texels whose rows are `pitch` bytes apart in `buffer`.
fn from_rows(
    t: &mut Images,
    buffer: cl_mem,
    flags: cl_mem_flags,
    f: cl_image_format,
    w: usize,
    h: usize,
    pitch: usize,
) -> Result<cl_mem, cl_int> {
    let mut d = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    d.image_row_pitch = pitch;
    d.buffer = buffer;
    let mut e = 1;
    let m = unsafe { t.s.cl.clCreateImage.unwrap()(t.s.c, flags, &f, &d, null_mut(), &mut e) };
    if e != CL_SUCCESS {
        return Err(e);
    }
    t.made.push(m);
    Ok(m)
}

fn two_d_images_from_buffers(cl: &Cl) {
    let d = cl.device();
    let ext =
        String::from_utf8_lossy(&cl.device_bytes(d, CL_DEVICE_EXTENSIONS).unwrap()).into_owned();
    assert!(ext.contains("cl_khr_image2d_from_buffer"), "{}", cl.how);
    let align = u32_of(&cl.device_bytes(d, CL_DEVICE_IMAGE_PITCH_ALIGNMENT).unwrap()) as usize;
    let base = u32_of(
        &cl.device_bytes(d, CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT)
            .unwrap(),
    );
    assert!(
        align.is_power_of_two() && base.is_power_of_two(),
        "{}",
        cl.how
    );
    let mut t = Images::new(cl);
    let (w, h) = (13usize, 7usize);
    let f = fmt(CL_RGBA, CL_UNORM_INT8);
    // Rows padded to a multiple of the alignment, with room to spare.
    let pitch = (w + 3).next_multiple_of(align) * 4;
    let bytes: Vec<u8> = (0..pitch * h).map(|i| (i * 7 % 128) as u8).collect();
    let src_buf = t.s.buffer_from(&bytes);
    let dst_buf = t.s.buffer_from(&vec![0xeeu8; pitch * h]);
    let src = from_rows(&mut t, src_buf, CL_MEM_READ_ONLY, f, w, h, pitch).unwrap();
    let dst = from_rows(&mut t, dst_buf, CL_MEM_WRITE_ONLY, f, w, h, pitch).unwrap();
    let mut got_pitch = 0usize;
    unsafe {
        cl.clGetImageInfo.unwrap()(
            dst,
            CL_IMAGE_ROW_PITCH,
            8,
            (&mut got_pitch as *mut usize).cast(),
            null_mut(),
        );
    }
    assert_eq!(got_pitch, pitch, "{}", cl.how);
    let k = t.s.kernel(SRC, "fetch_2d", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &dst);
    t.s.run(k, &[w, h], None, None);
    // The kernel's texels are in the buffer's rows; the padding is as it was.
    let got = cl.read(t.s.q, dst_buf, 0, pitch * h);
    for y in 0..h {
        for x in 0..pitch {
            let i = y * pitch + x;
            let want = if x < w * 4 {
                (bytes[i] as u32 * 2).min(255) as u8
            } else {
                0xee
            };
            assert_eq!(got[i], want, "{}: row {y}, byte {x}", cl.how);
        }
    }
    // Buffer writes are seen by the next kernel and by image reads.
    cl.write(t.s.q, src_buf, pitch * 2, &[100, 0, 50, 10]);
    t.s.run(k, &[w, h], None, None);
    assert_eq!(
        cl.read(t.s.q, dst_buf, pitch * 2, 4),
        vec![200, 0, 100, 20],
        "{}",
        cl.how
    );
    let mut px = [0u8; 8];
    let (o, r) = ([0usize, 2, 0], [2usize, 1, 1]);
    let e = unsafe {
        cl.clEnqueueReadImage.unwrap()(
            t.s.q,
            dst,
            CL_TRUE,
            o.as_ptr(),
            r.as_ptr(),
            0,
            0,
            px.as_mut_ptr().cast(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(e, CL_SUCCESS);
    assert_eq!(px[..4], [200, 0, 100, 20], "{}", cl.how);
    // Image writes land in the buffer's rows.
    let (o, r) = ([w - 1, h - 1, 0], [1usize, 1, 1]);
    let e = unsafe {
        cl.clEnqueueWriteImage.unwrap()(
            t.s.q,
            dst,
            CL_TRUE,
            o.as_ptr(),
            r.as_ptr(),
            0,
            0,
            [1u8, 2, 3, 4].as_ptr().cast(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(e, CL_SUCCESS);
    assert_eq!(
        cl.read(t.s.q, dst_buf, (h - 1) * pitch + (w - 1) * 4, 4),
        vec![1, 2, 3, 4],
        "{}",
        cl.how
    );
    // A copy from an ordinary image, then a fill, read back through the buffer.
    let plain = t.image(
        CL_MEM_READ_WRITE,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE2D, 2, 2, 0, 0),
        Some(&[9u8; 16]),
    );
    let (so, dorig, r) = ([0usize; 3], [3usize, 4, 0], [2usize, 2, 1]);
    let e = unsafe {
        cl.clEnqueueCopyImage.unwrap()(
            t.s.q,
            plain,
            dst,
            so.as_ptr(),
            dorig.as_ptr(),
            r.as_ptr(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(e, CL_SUCCESS);
    assert_eq!(
        cl.read(t.s.q, dst_buf, 5 * pitch + 3 * 4, 8),
        vec![9u8; 8],
        "{}",
        cl.how
    );
    // Errors.
    assert_eq!(
        from_rows(&mut t, src_buf, 0, f, w, h, w * 4 - 4),
        Err(CL_INVALID_IMAGE_DESCRIPTOR),
        "{}",
        cl.how
    );
    assert_eq!(
        from_rows(&mut t, src_buf, 0, f, w, h + 1, pitch),
        Err(CL_INVALID_IMAGE_SIZE),
        "{}",
        cl.how
    );
    // A 2D image names another image, not rows (two_d_images_from_images).
    assert!(
        from_rows(&mut t, plain, 0, f, 2, 2, 0).is_ok(),
        "{}",
        cl.how
    );
    let mut d3 = image_desc(CL_MEM_OBJECT_IMAGE3D, 2, 2, 2, 0);
    d3.buffer = src_buf;
    let mut e = 1;
    let m = unsafe { cl.clCreateImage.unwrap()(t.s.c, 0, &f, &d3, null_mut(), &mut e) };
    assert!(m.is_null());
    assert_eq!(e, CL_INVALID_IMAGE_DESCRIPTOR, "{}", cl.how);
}

/// CLK_ADDRESS_CLAMP's border colour for orders without alpha.
const OPAQUE_BLACK: [f32; 4] = [0.0, 0.0, 0.0, 1.0];

/// The OpenCL C specification's linear filter along one axis of `n`
/// texels: the two texels (`None` outside the image, for the border) and
/// the upper one's weight.
fn linear_axis(
    s: f32,
    n: usize,
    normalized: bool,
    addressing: cl_addressing_mode,
) -> ([Option<usize>; 2], f32) {
    let w = n as f32;
    let u = match (normalized, addressing) {
        (true, CL_ADDRESS_REPEAT) => (s - s.floor()) * w,
        (true, CL_ADDRESS_MIRRORED_REPEAT) => (s - 2.0 * (0.5 * s).round_ties_even()).abs() * w,
        (true, _) => s * w,
        (false, _) => s,
    };
    let t = u - 0.5;
    let lower = t.floor();
    let a = t - lower;
    let (mut i0, mut i1) = (lower as i64, lower as i64 + 1);
    let n = n as i64;
    match addressing {
        CL_ADDRESS_REPEAT => {
            if i0 < 0 {
                i0 += n;
            }
            if i1 > n - 1 {
                i1 -= n;
            }
        }
        CL_ADDRESS_CLAMP => {
            let inside = |i: i64| (0..n).contains(&i).then_some(i as usize);
            return ([inside(i0), inside(i1)], a);
        }
        _ => {}
    }
    let clamp = |i: i64| Some(i.clamp(0, n - 1) as usize);
    ([clamp(i0), clamp(i1)], a)
}

/// The filtered value of `texel` (RGBA of whole texels at (x, y, z)) at
/// per-axis filters, with `border` outside the image.
fn linear_value(
    axes: &[([Option<usize>; 2], f32)],
    texel: &dyn Fn(&[usize]) -> [f32; 4],
    border: [f32; 4],
) -> [f32; 4] {
    let mut sum = [0.0f64; 4];
    for corner in 0..1usize << axes.len() {
        let mut at = Vec::new();
        let mut weight = 1.0f64;
        for (j, (texels, a)) in axes.iter().enumerate() {
            let side = (corner >> j) & 1;
            at.push(texels[side]);
            weight *= if side == 1 {
                *a as f64
            } else {
                1.0 - *a as f64
            };
        }
        let t = match at.iter().copied().collect::<Option<Vec<usize>>>() {
            Some(at) => texel(&at),
            None => border,
        };
        for c in 0..4 {
            sum[c] += weight * t[c] as f64;
        }
    }
    sum.map(|v| v as f32)
}

/// Samples `img` with sampler `smp` at `coords` through kernel `name`
/// (image, sampler, coordinates, results; or image, coordinates, results
/// for a kernel with its own sampler).
fn sample_at(
    t: &mut Images,
    name: &str,
    img: cl_mem,
    smp: Option<cl_sampler>,
    coords: &[[f32; 4]],
) -> Vec<[f32; 4]> {
    let k = t.s.kernel(SRC, name, "");
    let flat: Vec<f32> = coords.iter().flatten().copied().collect();
    let at = t.s.buffer_from(&floats(&flat));
    let out = t.s.buffer(coords.len() * 16);
    let mut i = 0;
    t.s.arg(k, i, &img);
    i += 1;
    if let Some(s) = smp {
        t.s.arg(k, i, &s);
        i += 1;
    }
    t.s.arg(k, i, &at);
    t.s.arg(k, i + 1, &out);
    t.s.run(k, &[coords.len()], None, None);
    let got = to_floats(&t.s.cl.read(t.s.q, out, 0, coords.len() * 16));
    got.chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}

/// Linear filtering of 3D images and arrays at unnormalized coordinates
/// on texel centres gives the texel itself, however large its neighbours:
/// the weights of the neighbours are exactly 0 (dividing by a size that is
/// not a power of two, as normalized sampling would, leaves them near
/// 1e-7, which is an error of 1e-3 against neighbours 1e4 times larger).
fn linear_filtering_at_texel_centres(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h, d) = (23, 7, 5);
    // Small texels beside huge ones, like a chequerboard.
    let value = |x: usize, y: usize, z: usize| {
        if (x + y + z) % 2 == 0 {
            1.0 + x as f32 / 64.0
        } else {
            1.0e4
        }
    };
    let data: Vec<f32> = (0..d)
        .flat_map(|z| (0..h).flat_map(move |y| (0..w).map(move |x| value(x, y, z))))
        .collect();
    let f = fmt(CL_R, CL_FLOAT);
    let img3 = t.image(
        CL_MEM_READ_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE3D, w, h, d, 0),
        Some(&floats(&data)),
    );
    let arr = t.image(
        CL_MEM_READ_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, w, h, 0, d),
        Some(&floats(&data)),
    );
    let line: Vec<f32> = (0..w).map(|x| value(x, 0, 0)).collect();
    let lines: Vec<f32> = (0..3).flat_map(|_| line.iter().copied()).collect();
    let arr1 = t.image(
        CL_MEM_READ_ONLY,
        f,
        image_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, w, 0, 0, 3),
        Some(&floats(&lines)),
    );
    // Every centre, a few off-centre points, and points outside.
    let mut coords = Vec::new();
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                coords.push([x as f32 + 0.5, y as f32 + 0.5, z as f32 + 0.5, 0.0]);
            }
        }
    }
    coords.extend([
        [0.75, 1.25, 2.5, 0.0],
        [-3.0, 2.5, 1.5, 0.0],
        [w as f32 + 0.25, 0.5, 0.5, 0.0],
    ]);
    let texel3 = |at: &[usize]| [data[(at[2] * h + at[1]) * w + at[0]], 0.0, 0.0, 1.0];
    for addressing in [CL_ADDRESS_CLAMP_TO_EDGE, CL_ADDRESS_CLAMP] {
        let smp = t.sampler(false, addressing, CL_FILTER_LINEAR);
        let got3 = sample_at(&mut t, "sample_at_3d", img3, Some(smp), &coords);
        let got_arr = sample_at(&mut t, "sample_at_2d_array", arr, Some(smp), &coords);
        for (i, c) in coords.iter().enumerate() {
            let axes: Vec<_> = (0..3)
                .map(|j| linear_axis(c[j], [w, h, d][j], false, addressing))
                .collect();
            let want = linear_value(&axes, &texel3, OPAQUE_BLACK);
            let layer = (c[2].round_ties_even().clamp(0.0, d as f32 - 1.0)) as usize;
            let want_arr = linear_value(
                &axes[..2],
                &|at: &[usize]| texel3(&[at[0], at[1], layer]),
                OPAQUE_BLACK,
            );
            for (what, got, want) in [("3D", got3[i], want), ("2D array", got_arr[i], want_arr)] {
                assert!(
                    (got[0] - want[0]).abs() <= 1e-5 * want[0].abs().max(1.0),
                    "{}: {what} {addressing:x} at {c:?}: {} vs {}",
                    cl.how,
                    got[0],
                    want[0]
                );
            }
        }
    }
    // A literal sampler with the border, on a 1D array.
    let line_coords: Vec<[f32; 4]> = (0..w + 2)
        .map(|x| [x as f32 - 0.5, (x % 3) as f32, 0.0, 0.0])
        .collect();
    let got = sample_at(
        &mut t,
        "sample_at_1d_array_border",
        arr1,
        None,
        &line_coords,
    );
    for (i, c) in line_coords.iter().enumerate() {
        let axis = linear_axis(c[0], w, false, CL_ADDRESS_CLAMP);
        let want = linear_value(
            &[axis],
            &|at: &[usize]| [line[at[0]], 0.0, 0.0, 1.0],
            OPAQUE_BLACK,
        );
        assert!(
            (got[i][0] - want[0]).abs() <= 1e-5 * want[0].abs().max(1.0),
            "{}: 1D array at {c:?}: {} vs {}",
            cl.how,
            got[i][0],
            want[0]
        );
    }
}

/// Linear filtering of 8-bit normalized formats at the precision OpenCL
/// asks for (Mesa's lavapipe interpolates those bytes as bytes, off by up
/// to 1/255), in every addressing mode, at quarter-texel positions that
/// devices with 8 sub-texel bits also hit exactly.
fn linear_filtering_of_8_bit_formats(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (13, 6);
    for (order, channels) in [(CL_R, 1), (CL_RGBA, 4)] {
        linear_8_bit(cl, &mut t, w, h, order, channels);
    }
}

fn linear_8_bit(
    cl: &Cl,
    t: &mut Images,
    w: usize,
    h: usize,
    order: cl_channel_order,
    channels: usize,
) {
    let bytes: Vec<u8> = (0..w * h * channels)
        .map(|i| ((i * 97 + 31) % 256) as u8)
        .collect();
    let img = t.image(
        CL_MEM_READ_ONLY,
        fmt(order, CL_UNORM_INT8),
        image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0),
        Some(&bytes),
    );
    let texel = |at: &[usize]| {
        let o = (at[1] * w + at[0]) * channels;
        let c = |i: usize| {
            if i < channels {
                bytes[o + i] as f32 / 255.0
            } else if i == 3 {
                1.0
            } else {
                0.0
            }
        };
        [c(0), c(1), c(2), c(3)]
    };
    for normalized in [false, true] {
        for addressing in [
            CL_ADDRESS_CLAMP_TO_EDGE,
            CL_ADDRESS_CLAMP,
            CL_ADDRESS_REPEAT,
            CL_ADDRESS_MIRRORED_REPEAT,
        ] {
            if !normalized && matches!(addressing, CL_ADDRESS_REPEAT | CL_ADDRESS_MIRRORED_REPEAT) {
                continue;
            }
            let smp = t.sampler(normalized, addressing, CL_FILTER_LINEAR);
            let mut coords = Vec::new();
            for q in -6..(w as i32 * 4 + 6) {
                let x = q as f32 / 4.0;
                let y = (q % 23) as f32 / 4.0 - 0.5;
                coords.push(if normalized {
                    [x / w as f32, y / h as f32, 0.0, 0.0]
                } else {
                    [x, y, 0.0, 0.0]
                });
            }
            let got = sample_at(t, "sample_at_2d", img, Some(smp), &coords);
            for (i, c) in coords.iter().enumerate() {
                let axes = [
                    linear_axis(c[0], w, normalized, addressing),
                    linear_axis(c[1], h, normalized, addressing),
                ];
                // Orders without alpha have an opaque border.
                let border = if channels == 4 {
                    [0.0; 4]
                } else {
                    OPAQUE_BLACK
                };
                let want = linear_value(&axes, &texel, border);
                for ch in 0..4 {
                    assert!(
                        (got[i][ch] - want[ch]).abs() <= 2e-5,
                        "{}: order {order:x}, normalized {normalized}, addressing {addressing:x}, at {c:?}, channel {ch}: {} vs {}",
                        cl.how,
                        got[i][ch],
                        want[ch]
                    );
                }
            }
        }
    }
}

/// The packed 565/555/101010 formats, the alpha-first orders and CL_RA, read by a
/// kernel (fetch_2d doubles each channel) and filled by
/// clEnqueueFillImage, where the device offers them.
fn packed_and_alpha_first_formats(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (3, 2);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let offered = supported_formats(&t, CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE2D);
    let dst = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_FLOAT), d2, None);
    let k = t.s.kernel(SRC, "fetch_2d", "");
    // Each case: the format, a texel's bytes from its index, and the
    // channels read from those bytes.
    type Bytes = fn(u32) -> Vec<u8>;
    type Expect = fn(u32) -> [f32; 4];
    let cases: Vec<(cl_image_format, Bytes, Expect)> = vec![
        (
            fmt(CL_RGB, CL_UNORM_SHORT_565),
            |i| ((i << 11) | ((2 * i) << 5) | (31 - i)).to_le_bytes()[..2].to_vec(),
            |i| {
                [
                    i as f32 / 31.0,
                    (2 * i) as f32 / 63.0,
                    (31 - i) as f32 / 31.0,
                    1.0,
                ]
            },
        ),
        (
            // The unused top bit set: it must not show.
            fmt(CL_RGB, CL_UNORM_SHORT_555),
            |i| (0x8000 | (i << 10) | ((2 * i) << 5) | (31 - i)).to_le_bytes()[..2].to_vec(),
            |i| {
                [
                    i as f32 / 31.0,
                    (2 * i) as f32 / 31.0,
                    (31 - i) as f32 / 31.0,
                    1.0,
                ]
            },
        ),
        (
            fmt(CL_RGB, CL_UNORM_INT_101010),
            |i| {
                (((100 * i) << 20) | (1023 << 10) | (7 * i))
                    .to_le_bytes()
                    .to_vec()
            },
            |i| [(100 * i) as f32 / 1023.0, 1.0, (7 * i) as f32 / 1023.0, 1.0],
        ),
        (
            fmt(CL_ARGB, CL_UNORM_INT8),
            |i| vec![255 - i as u8, 10 * i as u8, 20 * i as u8, 30 * i as u8],
            |i| {
                let n = |v: u32| v as f32 / 255.0;
                [n(10 * i), n(20 * i), n(30 * i), n(255 - i)]
            },
        ),
        (
            fmt(CL_ABGR, CL_UNORM_INT8),
            |i| vec![255 - i as u8, 10 * i as u8, 20 * i as u8, 30 * i as u8],
            |i| {
                let n = |v: u32| v as f32 / 255.0;
                [n(30 * i), n(20 * i), n(10 * i), n(255 - i)]
            },
        ),
        (
            fmt(CL_RA, CL_UNORM_INT8),
            |i| vec![10 * i as u8, 255 - i as u8],
            |i| [(10 * i) as f32 / 255.0, 0.0, 0.0, (255 - i) as f32 / 255.0],
        ),
    ];
    let mut tried = 0;
    let mut wrong = Vec::new();
    for (f, bytes, expect) in cases {
        let key = (f.image_channel_order, f.image_channel_data_type);
        if !offered.contains(&key) {
            continue;
        }
        tried += 1;
        let data: Vec<u8> = (0..(w * h) as u32).flat_map(bytes).collect();
        let src = t.image(CL_MEM_READ_ONLY, f, d2, Some(&data));
        t.s.arg(k, 0, &src);
        t.s.arg(k, 1, &dst);
        t.s.run(k, &[w, h], None, None);
        let got = to_floats(&t.read(dst, [w, h, 1], w * h * 16));
        for i in 0..w * h {
            let want = expect(i as u32).map(|v| v * 2.0);
            let texel = &got[i * 4..i * 4 + 4];
            if (0..4).any(|c| (texel[c] - want[c]).abs() >= 1e-5) {
                wrong.push(format!("format {key:x?} texel {i}: {texel:?} vs {want:?}"));
                break;
            }
        }
        // A fill stores the colour in the format's own layout.
        let color = [1.0f32, 0.0, 1.0, 0.0];
        let r = unsafe {
            cl.clEnqueueFillImage.unwrap()(
                t.s.q,
                src,
                color.as_ptr().cast(),
                [0usize; 3].as_ptr(),
                [w, h, 1].as_ptr(),
                0,
                null(),
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "{}: fill {key:x?}", cl.how);
        let elem = data.len() / (w * h);
        let back = t.read(src, [w, h, 1], data.len());
        let want: Vec<u8> = match key.1 {
            CL_UNORM_SHORT_565 => 0xf81fu16.to_le_bytes().to_vec(),
            CL_UNORM_SHORT_555 => 0x7c1fu16.to_le_bytes().to_vec(),
            CL_UNORM_INT_101010 => ((1023u32 << 20) | 1023).to_le_bytes().to_vec(),
            _ if key.0 == CL_RA => vec![255, 0],
            // A, R, G, B and A, B, G, R of (1, 0, 1, 0) alike.
            _ => vec![0, 255, 0, 255],
        };
        assert_eq!(&back[..elem], &want[..], "{}: fill {key:x?}", cl.how);
    }
    assert!(wrong.is_empty(), "{}: {wrong:#?}", cl.how);
    // Every device with images offers at least the alpha-first orders.
    assert!(tried > 0, "{}: none of the formats is offered", cl.how);
}

/// CL_UNORM_SHORT_565 and _555 images written by kernels (each channel
/// rounded to its nearest step, clamped, NaN to 0) and sampled at every
/// OpenCL precision: nearest and linear filtering, which kernels do
/// themselves on the unpacked channels, at coordinates between texels.
fn packed_16_bit_formats(cl: &Cl) {
    let mut t = Images::new(cl);
    let offered = supported_formats(&t, CL_MEM_WRITE_ONLY, CL_MEM_OBJECT_IMAGE2D);
    let (w, h) = (9, 4);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let mut tried = 0;
    for (ty, bits) in [
        (CL_UNORM_SHORT_565, [5u32, 6, 5]),
        (CL_UNORM_SHORT_555, [5, 5, 5]),
    ] {
        if !offered.contains(&(CL_RGB, ty)) {
            continue;
        }
        tried += 1;
        let max = bits.map(|b| ((1u32 << b) - 1) as f32);
        // Kernel writes: fetch_2d writes twice what it reads.
        let colours: Vec<f32> = (0..w * h)
            .flat_map(|i| {
                let x = i as f32 / (w * h) as f32;
                match i {
                    0 => [f32::NAN, -1.0, 2.0, 0.0],
                    _ => [x * 0.49, 0.5 - x * 0.3, (x * 7.3).fract() * 0.5, 0.25],
                }
            })
            .collect();
        let src = t.image(
            CL_MEM_READ_ONLY,
            fmt(CL_RGBA, CL_FLOAT),
            d2,
            Some(&floats(&colours)),
        );
        let packed = t.image(CL_MEM_READ_WRITE, fmt(CL_RGB, ty), d2, None);
        let k = t.s.kernel(SRC, "fetch_2d", "");
        t.s.arg(k, 0, &src);
        t.s.arg(k, 1, &packed);
        t.s.run(k, &[w, h], None, None);
        let raw = t.read(packed, [w, h, 1], w * h * 2);
        let word = |i: usize| u16::from_le_bytes([raw[i * 2], raw[i * 2 + 1]]) as u32;
        let shifts = [bits[1] + bits[2], bits[2], 0];
        for i in 0..w * h {
            let mut want = 0u32;
            for c in 0..3 {
                let v = colours[i * 4 + c] * 2.0;
                let v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
                want |= ((v * max[c]).round_ties_even() as u32) << shifts[c];
            }
            assert_eq!(word(i), want, "{}: type {ty:x} texel {i} written", cl.how);
        }
        // Reads, nearest and linear, of what the kernel wrote.
        let texel = |at: &[usize]| {
            let v = word(at[1] * w + at[0]);
            let c = |j: usize| ((v >> shifts[j]) & ((1 << bits[j]) - 1)) as f32 / max[j];
            [c(0), c(1), c(2), 1.0]
        };
        for filter in [CL_FILTER_NEAREST, CL_FILTER_LINEAR] {
            for addressing in [CL_ADDRESS_CLAMP_TO_EDGE, CL_ADDRESS_CLAMP] {
                let smp = t.sampler(false, addressing, filter);
                let coords: Vec<[f32; 4]> = (-3..(w as i32 * 3 + 3))
                    .map(|q| [q as f32 / 3.0, (q % 5) as f32 / 3.0 - 0.25, 0.0, 0.0])
                    .collect();
                let got = sample_at(&mut t, "sample_at_2d", packed, Some(smp), &coords);
                for (i, c) in coords.iter().enumerate() {
                    let want = if filter == CL_FILTER_LINEAR {
                        let axes = [
                            linear_axis(c[0], w, false, addressing),
                            linear_axis(c[1], h, false, addressing),
                        ];
                        linear_value(&axes, &texel, OPAQUE_BLACK)
                    } else {
                        // Unnormalized: the texel the coordinate is in.
                        let pick = |u: f32, n: usize| {
                            let i = u.floor();
                            if addressing == CL_ADDRESS_CLAMP {
                                (i >= 0.0 && i < n as f32).then_some(i as usize)
                            } else {
                                Some(i.clamp(0.0, (n - 1) as f32) as usize)
                            }
                        };
                        match (pick(c[0], w), pick(c[1], h)) {
                            (Some(x), Some(y)) => texel(&[x, y]),
                            _ => OPAQUE_BLACK,
                        }
                    };
                    for ch in 0..4 {
                        assert!(
                            (got[i][ch] - want[ch]).abs() <= 2e-5,
                            "{}: type {ty:x}, filter {filter:x}, addressing {addressing:x}, at {c:?}, channel {ch}: {} vs {}",
                            cl.how,
                            got[i][ch],
                            want[ch]
                        );
                    }
                }
            }
        }
    }
    assert!(
        tried > 0,
        "{}: neither packed 16-bit format is offered",
        cl.how
    );
}

/// The sRGB transfer function, encoded to linear.
fn from_srgb(v: f32) -> f32 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

/// 2D images made from 2D images share their texels: an sRGBA image made
/// from an RGBA one reads what kernels and the host wrote to the other,
/// decoded; errors for sizes and formats the source does not allow.
fn two_d_images_from_images(cl: &Cl) {
    let mut t = Images::new(cl);
    let (w, h) = (5, 3);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let rgba = fmt(CL_RGBA, CL_UNORM_INT8);
    let srgba = fmt(CL_sRGBA, CL_UNORM_INT8);
    if !supported_formats(&t, CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE2D)
        .contains(&(CL_sRGBA, CL_UNORM_INT8))
    {
        return;
    }
    let k = t.s.kernel(
        "kernel void copy_2d(read_only image2d_t src, write_only image2d_t dst) {
            int2 p = (int2)(get_global_id(0), get_global_id(1));
            write_imagef(dst, p, read_imagef(src, p));
        }",
        "copy_2d",
        "",
    );
    let bytes: Vec<u8> = (0..w * h * 4).map(|i| (i * 13 % 256) as u8).collect();
    let linear = t.image(CL_MEM_READ_WRITE, rgba, d2, Some(&bytes));
    let view = |t: &mut Images, source: cl_mem, f: cl_image_format, d: cl_image_desc| {
        let mut d = d;
        d.buffer = source;
        let mut e = 1;
        let m = unsafe {
            t.s.cl.clCreateImage.unwrap()(t.s.c, CL_MEM_READ_ONLY, &f, &d, null_mut(), &mut e)
        };
        if e == CL_SUCCESS {
            t.made.push(m);
        }
        (m, e)
    };
    let (encoded, e) = view(&mut t, linear, srgba, d2);
    assert_eq!(e, CL_SUCCESS, "{}: sRGBA from RGBA", cl.how);
    let mut named: cl_mem = null_mut();
    unsafe {
        cl.clGetMemObjectInfo.unwrap()(
            encoded,
            CL_MEM_ASSOCIATED_MEMOBJECT,
            8,
            (&mut named as *mut cl_mem).cast(),
            null_mut(),
        );
    }
    assert_eq!(named, linear, "{}", cl.how);
    let out = t.image(CL_MEM_WRITE_ONLY, fmt(CL_RGBA, CL_FLOAT), d2, None);
    let check = |t: &Images, texels: &[u8], what: &str| {
        t.s.arg(k, 0, &encoded);
        t.s.arg(k, 1, &out);
        t.s.run(k, &[w, h], None, None);
        let got = to_floats(&t.read(out, [w, h, 1], w * h * 16));
        for (i, (&g, &b)) in got.iter().zip(texels).enumerate() {
            let v = b as f32 / 255.0;
            let want = if i % 4 == 3 { v } else { from_srgb(v) };
            assert!(
                (g - want).abs() < 2e-3,
                "{}: {what}: channel {i}: {g} vs {want}",
                cl.how
            );
        }
    };
    check(&t, &bytes, "host data of the source");
    // A kernel writes the source; the view reads what it wrote.
    let values: Vec<f32> = (0..w * h * 4).map(|i| (i % 8) as f32 / 7.0).collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_RGBA, CL_FLOAT),
        d2,
        Some(&floats(&values)),
    );
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &linear);
    t.s.run(k, &[w, h], None, None);
    let written: Vec<u8> = values.iter().map(|v| (v * 255.0).round() as u8).collect();
    assert_eq!(t.read(encoded, [w, h, 1], w * h * 4), written, "{}", cl.how);
    check(&t, &written, "kernel writes to the source");
    // Sizes and formats the source does not allow.
    let (_, e) = view(
        &mut t,
        linear,
        srgba,
        image_desc(CL_MEM_OBJECT_IMAGE2D, w + 1, h, 0, 0),
    );
    assert_eq!(e, CL_INVALID_IMAGE_DESCRIPTOR, "{}: width", cl.how);
    let (_, e) = view(&mut t, linear, fmt(CL_BGRA, CL_UNORM_INT8), d2);
    assert_eq!(e, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, "{}: order", cl.how);
    let (_, e) = view(&mut t, linear, fmt(CL_sRGBA, CL_UNORM_INT16), d2);
    assert_eq!(
        e, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR,
        "{}: data type",
        cl.how
    );
    let d3 = image_desc(CL_MEM_OBJECT_IMAGE3D, w, h, 2, 0);
    let cube = t.image(CL_MEM_READ_WRITE, rgba, d3, None);
    let (_, e) = view(&mut t, cube, srgba, d2);
    assert_eq!(e, CL_INVALID_IMAGE_DESCRIPTOR, "{}: 3D source", cl.how);
    // The same format: a second name for the texels.
    let (same, e) = view(&mut t, encoded, srgba, d2);
    assert_eq!(e, CL_SUCCESS, "{}: same format", cl.how);
    assert_eq!(t.read(same, [w, h, 1], w * h * 4), written, "{}", cl.how);
    // An image made from an image made from a buffer sees the buffer.
    let rows_buf = t.s.buffer_from(&bytes);
    let rows = from_rows(&mut t, rows_buf, CL_MEM_READ_ONLY, rgba, w, h, 0).unwrap();
    let (encoded, e) = view(&mut t, rows, srgba, d2);
    assert_eq!(e, CL_SUCCESS, "{}: sRGBA from rows", cl.how);
    t.s.arg(k, 0, &encoded);
    t.s.arg(k, 1, &out);
    t.s.run(k, &[w, h], None, None);
    let got = to_floats(&t.read(out, [w, h, 1], w * h * 16));
    for (i, (&g, &b)) in got.iter().zip(&bytes).enumerate() {
        let v = b as f32 / 255.0;
        let want = if i % 4 == 3 { v } else { from_srgb(v) };
        assert!(
            (g - want).abs() < 2e-3,
            "{}: rows: channel {i}: {g} vs {want}",
            cl.how
        );
    }
}

const DEPTH_SRC: &str = "
kernel void depth_copy(read_only image2d_depth_t a, sampler_t s, write_only image2d_depth_t b,
                       global float *out) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    float sampled = read_imagef(a, s, (float2)(p.x + 0.5f, p.y + 0.5f));
    float fetched = read_imagef(a, p);
    write_imagef(b, p, sampled + fetched);
    if (p.x == 0 && p.y == 0) {
        out[0] = get_image_width(a);
        out[1] = get_image_channel_order(a);
        out[2] = get_image_channel_data_type(b);
    }
}
kernel void depth_array(read_only image2d_array_depth_t a, write_only image2d_array_depth_t b) {
    int4 p = (int4)(get_global_id(0), get_global_id(1), get_global_id(2), 0);
    write_imagef(b, p, read_imagef(a, p) * 3.0f);
}
kernel void plain(read_only image2d_t a, write_only image2d_t b) {
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    write_imagef(b, p, read_imagef(a, p));
}
";

/// Depth images (cl_khr_depth_images): 2D images and arrays of CL_DEPTH
/// read and written as scalars, sampled, queried and filled; the other
/// image types refuse the order, and image arguments must match the
/// parameter's depth-ness.
fn depth_images(cl: &Cl) {
    let d = cl.device();
    let ext =
        String::from_utf8_lossy(&cl.device_bytes(d, CL_DEVICE_EXTENSIONS).unwrap()).into_owned();
    assert!(ext.contains("cl_khr_depth_images"), "{}", cl.how);
    let mut t = Images::new(cl);
    let rw = CL_MEM_READ_WRITE;
    assert!(
        supported_formats(&t, rw, CL_MEM_OBJECT_IMAGE2D).contains(&(CL_DEPTH, CL_FLOAT)),
        "{}",
        cl.how
    );
    for ty in [
        CL_MEM_OBJECT_IMAGE3D,
        CL_MEM_OBJECT_IMAGE1D,
        CL_MEM_OBJECT_IMAGE1D_BUFFER,
    ] {
        assert!(
            !supported_formats(&t, rw, ty)
                .iter()
                .any(|f| f.0 == CL_DEPTH),
            "{}: type {ty:x}",
            cl.how
        );
    }
    let (w, h) = (6, 4);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    let depth = fmt(CL_DEPTH, CL_FLOAT);
    let values: Vec<f32> = (0..w * h).map(|i| i as f32 * 0.125 - 1.0).collect();
    let a = t.image(CL_MEM_READ_ONLY, depth, d2, Some(&floats(&values)));
    let b = t.image(CL_MEM_WRITE_ONLY, depth, d2, None);
    let out = t.s.buffer(12);
    let s = t.sampler(false, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST);
    let k = t.s.kernel(DEPTH_SRC, "depth_copy", "");
    t.s.arg(k, 0, &a);
    t.s.arg(k, 1, &s);
    t.s.arg(k, 2, &b);
    t.s.arg(k, 3, &out);
    t.s.run(k, &[w, h], None, None);
    let got = to_floats(&t.read(b, [w, h, 1], w * h * 4));
    let want: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
    assert_eq!(got, want, "{}", cl.how);
    let queries = to_floats(&cl.read(t.s.q, out, 0, 12));
    assert_eq!(
        queries,
        [w as f32, CL_DEPTH as f32, CL_FLOAT as f32],
        "{}",
        cl.how
    );
    // A fill colour of a depth image is one float.
    let fill = 0.75f32;
    let r = unsafe {
        cl.clEnqueueFillImage.unwrap()(
            t.s.q,
            b,
            (&fill as *const f32).cast(),
            [1usize, 1, 0].as_ptr(),
            [2usize, 2, 1].as_ptr(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS, "{}", cl.how);
    let got = to_floats(&t.read(b, [w, h, 1], w * h * 4));
    assert_eq!(got[w + 1], 0.75, "{}", cl.how);
    assert_eq!(got[2 * w + 2], 0.75, "{}", cl.how);
    assert_eq!(got[0], want[0], "{}", cl.how);
    // 16-bit normalized depth in arrays.
    let layers = 3;
    let da = image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, w, h, 0, layers);
    let n = w * h * layers;
    let unorm: Vec<u16> = (0..n).map(|i| (i * 1000) as u16).collect();
    let bytes: Vec<u8> = unorm.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let src = t.image(
        CL_MEM_READ_ONLY,
        fmt(CL_DEPTH, CL_UNORM_INT16),
        da,
        Some(&bytes),
    );
    let dst = t.image(CL_MEM_WRITE_ONLY, depth, da, None);
    let k = t.s.kernel(DEPTH_SRC, "depth_array", "");
    t.s.arg(k, 0, &src);
    t.s.arg(k, 1, &dst);
    t.s.run(k, &[w, h, layers], None, None);
    let got = to_floats(&t.read(dst, [w, h, layers], n * 4));
    for (i, (&g, &u)) in got.iter().zip(&unorm).enumerate() {
        let want = u as f32 / 65535.0 * 3.0;
        assert!(
            (g - want).abs() < 1e-5,
            "{}: texel {i}: {g} vs {want}",
            cl.how
        );
    }
    // Other image types refuse the order.
    let mut e = 1;
    let d3 = image_desc(CL_MEM_OBJECT_IMAGE3D, w, h, 2, 0);
    let m = unsafe { cl.clCreateImage.unwrap()(t.s.c, rw, &depth, &d3, null_mut(), &mut e) };
    assert!(m.is_null(), "{}", cl.how);
    assert_eq!(e, CL_IMAGE_FORMAT_NOT_SUPPORTED, "{}", cl.how);
    // A depth image is no image2d_t, and an image of colour no depth image.
    let k = t.s.kernel(DEPTH_SRC, "plain", "");
    let set = |k: cl_kernel, i: u32, m: &cl_mem| unsafe {
        cl.clSetKernelArg.unwrap()(k, i, 8, (m as *const cl_mem).cast())
    };
    assert_eq!(set(k, 0, &a), CL_INVALID_ARG_VALUE, "{}", cl.how);
    let colour = t.image(CL_MEM_READ_ONLY, fmt(CL_R, CL_FLOAT), d2, None);
    let k = t.s.kernel(DEPTH_SRC, "depth_copy", "");
    assert_eq!(set(k, 0, &colour), CL_INVALID_ARG_VALUE, "{}", cl.how);
}
