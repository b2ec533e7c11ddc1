// The image tests, shared by tests/images.rs and tests/images_other_devices.rs.

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    supported_formats_are_listed,
    creation_errors,
    image_and_memory_queries,
    every_image_type_round_trips_regions,
    host_pointers_with_pitches,
    image_to_image_and_buffer_copies,
    fills_convert_the_colour,
    map_and_unmap_images,
    transfer_errors,
    samplers,
);

const fn fmt(order: cl_channel_order, ty: cl_channel_type) -> cl_image_format {
    cl_image_format {
        image_channel_order: order,
        image_channel_data_type: ty,
    }
}

/// A representative set of formats with their element sizes.
const FORMATS: [(cl_image_format, usize); 7] = [
    (fmt(CL_RGBA, CL_UNORM_INT8), 4),
    (fmt(CL_R, CL_FLOAT), 4),
    (fmt(CL_RG, CL_UNSIGNED_INT16), 4),
    (fmt(CL_BGRA, CL_UNORM_INT8), 4),
    (fmt(CL_RGBA, CL_HALF_FLOAT), 8),
    (fmt(CL_R, CL_SIGNED_INT8), 1),
    (fmt(CL_RGBA, CL_FLOAT), 16),
];

/// One image of each type, with its size in OpenCL's region coordinates.
fn shapes() -> Vec<(cl_image_desc, [usize; 3])> {
    vec![
        (image_desc(CL_MEM_OBJECT_IMAGE1D, 37, 0, 0, 0), [37, 1, 1]),
        (
            image_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, 19, 0, 0, 5),
            [19, 5, 1],
        ),
        (image_desc(CL_MEM_OBJECT_IMAGE2D, 23, 17, 0, 0), [23, 17, 1]),
        (
            image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, 13, 11, 0, 4),
            [13, 11, 4],
        ),
        (image_desc(CL_MEM_OBJECT_IMAGE3D, 9, 7, 6, 0), [9, 7, 6]),
    ]
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// A host model of an image: packed elements in region order.
struct Model {
    dims: [usize; 3],
    elem: usize,
    data: Vec<u8>,
}

impl Model {
    fn at(&self, x: usize, y: usize, z: usize) -> usize {
        ((z * self.dims[1] + y) * self.dims[0] + x) * self.elem
    }

    /// The region packed with the given strides (in bytes) for y and z.
    fn get(&self, o: [usize; 3], r: [usize; 3], ys: usize, zs: usize) -> Vec<u8> {
        let mut out = vec![0u8; (r[2] - 1) * zs + (r[1] - 1) * ys + r[0] * self.elem];
        for z in 0..r[2] {
            for y in 0..r[1] {
                let src = self.at(o[0], o[1] + y, o[2] + z);
                let dst = z * zs + y * ys;
                let n = r[0] * self.elem;
                out[dst..dst + n].copy_from_slice(&self.data[src..src + n]);
            }
        }
        out
    }

    fn put(&mut self, o: [usize; 3], r: [usize; 3], ys: usize, zs: usize, src: &[u8]) {
        for z in 0..r[2] {
            for y in 0..r[1] {
                let dst = self.at(o[0], o[1] + y, o[2] + z);
                let at = z * zs + y * ys;
                let n = r[0] * self.elem;
                self.data[dst..dst + n].copy_from_slice(&src[at..at + n]);
            }
        }
    }
}

impl Cl {
    fn image(
        &self,
        c: cl_context,
        flags: cl_mem_flags,
        f: &cl_image_format,
        d: &cl_image_desc,
        host: *mut c_void,
    ) -> Result<cl_mem, cl_int> {
        let mut e = 1;
        let m = unsafe { self.clCreateImage.unwrap()(c, flags, f, d, host, &mut e) };
        if e == CL_SUCCESS {
            assert!(!m.is_null());
            Ok(m)
        } else {
            assert!(m.is_null());
            Err(e)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_image(
        &self,
        q: cl_command_queue,
        m: cl_mem,
        o: [usize; 3],
        r: [usize; 3],
        rp: usize,
        sp: usize,
        data: &[u8],
    ) -> cl_int {
        unsafe {
            self.clEnqueueWriteImage.unwrap()(
                q,
                m,
                CL_TRUE,
                o.as_ptr(),
                r.as_ptr(),
                rp,
                sp,
                data.as_ptr().cast(),
                0,
                null(),
                null_mut(),
            )
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn read_image(
        &self,
        q: cl_command_queue,
        m: cl_mem,
        o: [usize; 3],
        r: [usize; 3],
        rp: usize,
        sp: usize,
        out: &mut [u8],
    ) -> cl_int {
        unsafe {
            self.clEnqueueReadImage.unwrap()(
                q,
                m,
                CL_TRUE,
                o.as_ptr(),
                r.as_ptr(),
                rp,
                sp,
                out.as_mut_ptr().cast(),
                0,
                null(),
                null_mut(),
            )
        }
    }

    fn read_all(&self, q: cl_command_queue, m: cl_mem, dims: [usize; 3], elem: usize) -> Vec<u8> {
        let mut out = vec![0u8; dims.iter().product::<usize>() * elem];
        assert_eq!(
            self.read_image(q, m, [0; 3], dims, 0, 0, &mut out),
            CL_SUCCESS
        );
        out
    }

    fn image_query(&self, m: cl_mem, param: cl_image_info) -> Vec<u8> {
        query(|s, v, r| unsafe { self.clGetImageInfo.unwrap()(m, param, s, v, r) }).unwrap()
    }

    fn mem_query(&self, m: cl_mem, param: cl_mem_info) -> Vec<u8> {
        query(|s, v, r| unsafe { self.clGetMemObjectInfo.unwrap()(m, param, s, v, r) }).unwrap()
    }

    fn release_mem(&self, m: cl_mem) {
        assert_eq!(unsafe { self.clReleaseMemObject.unwrap()(m) }, CL_SUCCESS);
    }

    fn done(&self, q: cl_command_queue, c: cl_context) {
        unsafe {
            assert_eq!(self.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
            assert_eq!(self.clReleaseContext.unwrap()(c), CL_SUCCESS);
        }
    }
}

fn usize_of(b: &[u8]) -> usize {
    usize::from_ne_bytes(b.try_into().unwrap())
}

fn u32_of(b: &[u8]) -> u32 {
    u32::from_ne_bytes(b.try_into().unwrap())
}

fn formats(cl: &Cl, c: cl_context, flags: cl_mem_flags, ty: cl_mem_object_type) -> Vec<(u32, u32)> {
    let mut n = 0;
    let r = unsafe { cl.clGetSupportedImageFormats.unwrap()(c, flags, ty, 0, null_mut(), &mut n) };
    assert_eq!(r, CL_SUCCESS);
    let mut list = vec![fmt(0, 0); n as usize];
    let r = unsafe {
        cl.clGetSupportedImageFormats.unwrap()(c, flags, ty, n, list.as_mut_ptr(), null_mut())
    };
    assert_eq!(r, CL_SUCCESS);
    list.iter()
        .map(|f| (f.image_channel_order, f.image_channel_data_type))
        .collect()
}

fn supported_formats_are_listed(cl: &Cl) {
    let c = cl.context();
    for (d, _) in shapes() {
        let ro = formats(cl, c, CL_MEM_READ_ONLY, d.image_type);
        let rw = formats(cl, c, CL_MEM_READ_WRITE, d.image_type);
        let wo = formats(cl, c, CL_MEM_WRITE_ONLY, d.image_type);
        // The formats every device with images must have, for reading.
        for f in [
            (CL_RGBA, CL_UNORM_INT8),
            (CL_RGBA, CL_FLOAT),
            (CL_RGBA, CL_UNSIGNED_INT32),
            (CL_R, CL_FLOAT),
        ] {
            assert!(ro.contains(&f), "{}: {f:x?} missing", cl.how);
        }
        // Read-write formats can be both read and written.
        assert!(rw.iter().all(|f| ro.contains(f) && wo.contains(f)));
        // Orders stored swizzled cannot be written by kernels.
        assert!(ro.contains(&(CL_LUMINANCE, CL_UNORM_INT8)));
        assert!(!wo.contains(&(CL_LUMINANCE, CL_UNORM_INT8)));
    }
    // Too few entries for a non-null list, unknown flags or types.
    let mut one = fmt(0, 0);
    let ty = CL_MEM_OBJECT_IMAGE2D;
    unsafe {
        let f = cl.clGetSupportedImageFormats.unwrap();
        assert_eq!(f(c, 0, ty, 0, &mut one, null_mut()), CL_INVALID_VALUE);
        assert_eq!(f(c, 1 << 40, ty, 1, &mut one, null_mut()), CL_INVALID_VALUE);
        assert_eq!(
            f(c, 0, CL_MEM_OBJECT_BUFFER, 1, &mut one, null_mut()),
            CL_INVALID_VALUE
        );
        assert_eq!(
            f(null_mut(), 0, ty, 1, &mut one, null_mut()),
            CL_INVALID_CONTEXT
        );
        assert_eq!(f(c, 0, ty, 1, &mut one, null_mut()), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn creation_errors(cl: &Cl) {
    let c = cl.context();
    let rgba = fmt(CL_RGBA, CL_UNORM_INT8);
    let d2 = image_desc(CL_MEM_OBJECT_IMAGE2D, 8, 8, 0, 0);
    let mut host = vec![0u8; 8 * 8 * 4 * 2];
    let hp: *mut c_void = host.as_mut_ptr().cast();
    let bad = |r: Result<cl_mem, cl_int>| r.err().unwrap();
    assert_eq!(
        bad(cl.image(c, 0, &fmt(0x1234, CL_FLOAT), &d2, null_mut())),
        CL_INVALID_IMAGE_FORMAT_DESCRIPTOR
    );
    assert_eq!(
        bad(cl.image(c, 0, &fmt(CL_RGB, CL_UNORM_INT8), &d2, null_mut())),
        CL_INVALID_IMAGE_FORMAT_DESCRIPTOR
    );
    assert_eq!(
        bad(cl.image(c, 0, &fmt(CL_INTENSITY, CL_SIGNED_INT8), &d2, null_mut())),
        CL_INVALID_IMAGE_FORMAT_DESCRIPTOR
    );
    // Well formed, but not a format vkcl offers.
    assert_eq!(
        bad(cl.image(c, 0, &fmt(CL_ABGR, CL_UNORM_INT8), &d2, null_mut())),
        CL_IMAGE_FORMAT_NOT_SUPPORTED
    );
    // A kernel cannot write luminance images.
    assert_eq!(
        bad(cl.image(
            c,
            CL_MEM_WRITE_ONLY,
            &fmt(CL_LUMINANCE, CL_FLOAT),
            &d2,
            null_mut()
        )),
        CL_IMAGE_FORMAT_NOT_SUPPORTED
    );
    let mut e = 1;
    let m = unsafe { cl.clCreateImage.unwrap()(c, 0, null(), &d2, null_mut(), &mut e) };
    assert!(m.is_null());
    assert_eq!(e, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    let m = unsafe { cl.clCreateImage.unwrap()(c, 0, &rgba, null(), null_mut(), &mut e) };
    assert!(m.is_null());
    assert_eq!(e, CL_INVALID_IMAGE_DESCRIPTOR);
    for d in [
        image_desc(CL_MEM_OBJECT_IMAGE2D, 0, 8, 0, 0),
        image_desc(CL_MEM_OBJECT_IMAGE2D, 8, 0, 0, 0),
        image_desc(CL_MEM_OBJECT_IMAGE3D, 8, 8, 0, 0),
        image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, 8, 8, 0, 0),
        image_desc(CL_MEM_OBJECT_BUFFER, 8, 8, 0, 0),
        {
            let mut d = d2;
            d.num_mip_levels = 2;
            d
        },
        {
            let mut d = d2;
            d.image_row_pitch = 64;
            d
        },
    ] {
        assert_eq!(
            bad(cl.image(c, 0, &rgba, &d, null_mut())),
            CL_INVALID_IMAGE_DESCRIPTOR,
            "{}",
            cl.how
        );
    }
    // Pitches with a host pointer: too small, or not whole elements.
    for rp in [31, 34] {
        let mut d = d2;
        d.image_row_pitch = rp;
        assert_eq!(
            bad(cl.image(c, CL_MEM_COPY_HOST_PTR, &rgba, &d, hp)),
            CL_INVALID_IMAGE_DESCRIPTOR
        );
    }
    assert_eq!(
        bad(cl.image(
            c,
            0,
            &rgba,
            &image_desc(CL_MEM_OBJECT_IMAGE2D, 1 << 30, 8, 0, 0),
            null_mut()
        )),
        CL_INVALID_IMAGE_SIZE
    );
    assert_eq!(
        bad(cl.image(
            c,
            0,
            &rgba,
            &image_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, 8, 0, 0, 1 << 30),
            null_mut()
        )),
        CL_INVALID_IMAGE_SIZE
    );
    // Host pointers and their flags.
    assert_eq!(bad(cl.image(c, 0, &rgba, &d2, hp)), CL_INVALID_HOST_PTR);
    assert_eq!(
        bad(cl.image(c, CL_MEM_USE_HOST_PTR, &rgba, &d2, null_mut())),
        CL_INVALID_HOST_PTR
    );
    // Conflicting flags.
    assert_eq!(
        bad(cl.image(
            c,
            CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY,
            &rgba,
            &d2,
            null_mut()
        )),
        CL_INVALID_VALUE
    );
    assert_eq!(
        bad(cl.image(
            c,
            CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR,
            &rgba,
            &d2,
            hp
        )),
        CL_INVALID_VALUE
    );
    // Properties: none are known.
    let props: [cl_mem_properties; 3] = [0x1234, 0, 0];
    let m = unsafe {
        cl.clCreateImageWithProperties.unwrap()(
            c,
            props.as_ptr(),
            0,
            &rgba,
            &d2,
            null_mut(),
            &mut e,
        )
    };
    assert!(m.is_null());
    assert_eq!(e, CL_INVALID_PROPERTY);
    // The OpenCL 1.1 entry points.
    unsafe {
        let m = cl.clCreateImage2D.unwrap()(c, 0, &rgba, 0, 8, 0, null_mut(), &mut e);
        assert!(m.is_null());
        assert_eq!(e, CL_INVALID_IMAGE_SIZE);
        let m = cl.clCreateImage3D.unwrap()(c, 0, &rgba, 8, 8, 1, 0, 0, null_mut(), &mut e);
        assert!(m.is_null());
        assert_eq!(e, CL_INVALID_IMAGE_SIZE);
        let m = cl.clCreateImage2D.unwrap()(c, 0, &rgba, 8, 8, 0, null_mut(), &mut e);
        assert_eq!(e, CL_SUCCESS);
        cl.release_mem(m);
        let m = cl.clCreateImage3D.unwrap()(c, 0, &rgba, 8, 8, 2, 0, 0, null_mut(), &mut e);
        assert_eq!(e, CL_SUCCESS);
        cl.release_mem(m);
        let m = cl.clCreateImage.unwrap()(null_mut(), 0, &rgba, &d2, null_mut(), &mut e);
        assert!(m.is_null());
        assert_eq!(e, CL_INVALID_CONTEXT);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn image_and_memory_queries(cl: &Cl) {
    let c = cl.context();
    let f = fmt(CL_RG, CL_HALF_FLOAT);
    let mut d = image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, 5, 3, 0, 2);
    d.image_row_pitch = 24;
    d.image_slice_pitch = 96;
    let mut host = vec![0u8; 96 * 2];
    let m = cl
        .image(
            c,
            CL_MEM_USE_HOST_PTR | CL_MEM_READ_ONLY,
            &f,
            &d,
            host.as_mut_ptr().cast(),
        )
        .unwrap();
    let q = |p| usize_of(&cl.image_query(m, p));
    assert_eq!(
        cl.image_query(m, CL_IMAGE_FORMAT),
        [CL_RG, CL_HALF_FLOAT]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>()
    );
    assert_eq!(q(CL_IMAGE_ELEMENT_SIZE), 4);
    assert_eq!(q(CL_IMAGE_ROW_PITCH), 24);
    assert_eq!(q(CL_IMAGE_SLICE_PITCH), 96);
    assert_eq!(q(CL_IMAGE_WIDTH), 5);
    assert_eq!(q(CL_IMAGE_HEIGHT), 3);
    assert_eq!(q(CL_IMAGE_DEPTH), 0);
    assert_eq!(q(CL_IMAGE_ARRAY_SIZE), 2);
    assert_eq!(usize_of(&cl.image_query(m, CL_IMAGE_BUFFER)), 0);
    assert_eq!(u32_of(&cl.image_query(m, CL_IMAGE_NUM_MIP_LEVELS)), 0);
    assert_eq!(
        u32_of(&cl.mem_query(m, CL_MEM_TYPE)),
        CL_MEM_OBJECT_IMAGE2D_ARRAY
    );
    assert_eq!(
        usize_of(&cl.mem_query(m, CL_MEM_HOST_PTR)),
        host.as_ptr() as usize
    );
    assert_eq!(usize_of(&cl.mem_query(m, CL_MEM_CONTEXT)), c as usize);
    assert_eq!(u32_of(&cl.mem_query(m, CL_MEM_REFERENCE_COUNT)), 1);
    assert!(usize_of(&cl.mem_query(m, CL_MEM_SIZE)) >= 5 * 3 * 2 * 4);
    let flags = u64::from_ne_bytes(cl.mem_query(m, CL_MEM_FLAGS).try_into().unwrap());
    assert_eq!(flags, CL_MEM_USE_HOST_PTR | CL_MEM_READ_ONLY);
    // Images have no buffer queries; buffers no image queries.
    let b = cl.buffer(c, 0, 64, null_mut());
    let r = unsafe { cl.clGetImageInfo.unwrap()(b, CL_IMAGE_WIDTH, 0, null_mut(), &mut 0) };
    assert_eq!(r, CL_INVALID_MEM_OBJECT);
    let r = unsafe { cl.clGetImageInfo.unwrap()(m, 0x1234, 0, null_mut(), &mut 0) };
    assert_eq!(r, CL_INVALID_VALUE);
    // Packed pitches without a host pointer; a 1D array's slice is a row.
    let m1 = cl
        .image(
            c,
            0,
            &f,
            &image_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, 7, 0, 0, 3),
            null_mut(),
        )
        .unwrap();
    assert_eq!(usize_of(&cl.image_query(m1, CL_IMAGE_ROW_PITCH)), 28);
    assert_eq!(usize_of(&cl.image_query(m1, CL_IMAGE_SLICE_PITCH)), 28);
    assert_eq!(usize_of(&cl.image_query(m1, CL_IMAGE_HEIGHT)), 0);
    // Retain, release and destructor callbacks work on images.
    unsafe {
        assert_eq!(cl.clRetainMemObject.unwrap()(m1), CL_SUCCESS);
        assert_eq!(u32_of(&cl.mem_query(m1, CL_MEM_REFERENCE_COUNT)), 2);
        extern "C" fn note(_m: cl_mem, data: *mut c_void) {
            unsafe { *(data as *mut u32) += 1 };
        }
        let mut called = 0u32;
        let r = cl.clSetMemObjectDestructorCallback.unwrap()(
            m1,
            Some(note),
            (&mut called as *mut u32).cast(),
        );
        assert_eq!(r, CL_SUCCESS);
        cl.release_mem(m1);
        assert_eq!(called, 0);
        cl.release_mem(m1);
        assert_eq!(called, 1);
    }
    cl.release_mem(b);
    cl.release_mem(m);
    unsafe { assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS) };
}

fn every_image_type_round_trips_regions(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    for (i, (f, elem)) in FORMATS.iter().enumerate() {
        for (j, (d, dims)) in shapes().into_iter().enumerate() {
            let ctx = format!("{}: format {f:x?}, type {:x}", cl.how, d.image_type);
            let m = cl.image(c, 0, f, &d, null_mut()).unwrap();
            let mut model = Model {
                dims,
                elem: *elem,
                data: pattern(dims.iter().product::<usize>() * elem, (i * 10 + j) as u32),
            };
            assert_eq!(
                cl.write_image(q, m, [0; 3], dims, 0, 0, &model.data),
                CL_SUCCESS,
                "{ctx}"
            );
            assert_eq!(cl.read_all(q, m, dims, *elem), model.data, "{ctx}");
            // A sub-region written from pitched host memory.
            let o = dims.map(|v| v / 3);
            let r = [dims[0] - o[0] - 1, dims[1] - o[1], dims[2] - o[2]].map(|v| v.max(1));
            let rows_are_slices = d.image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
            let has_slices = matches!(
                d.image_type,
                CL_MEM_OBJECT_IMAGE3D | CL_MEM_OBJECT_IMAGE2D_ARRAY
            );
            let rp = r[0] * elem + 8;
            let (rp, sp, ys, zs) = if rows_are_slices {
                (rp, rp + 4, rp + 4, 0)
            } else if has_slices {
                (rp, rp * r[1] + 12, rp, rp * r[1] + 12)
            } else {
                (rp, 0, rp, 0)
            };
            let src = pattern(
                (r[2] - 1) * zs + (r[1] - 1) * ys + r[0] * elem,
                99 + j as u32,
            );
            assert_eq!(
                cl.write_image(q, m, o, r, rp, sp, &src),
                CL_SUCCESS,
                "{ctx}"
            );
            model.put(o, r, ys, zs, &src);
            assert_eq!(cl.read_all(q, m, dims, *elem), model.data, "{ctx}");
            // The same region read back into pitched memory.
            let mut out = vec![0u8; src.len()];
            assert_eq!(
                cl.read_image(q, m, o, r, rp, sp, &mut out),
                CL_SUCCESS,
                "{ctx}"
            );
            let want = model.get(o, r, ys, zs);
            for z in 0..r[2] {
                for y in 0..r[1] {
                    let at = z * zs + y * ys;
                    let n = r[0] * elem;
                    assert_eq!(
                        out[at..at + n],
                        want[at..at + n],
                        "{ctx}: row {y} slice {z}"
                    );
                }
            }
            cl.release_mem(m);
        }
    }
    cl.done(q, c);
}

fn host_pointers_with_pitches(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let f = fmt(CL_RGBA, CL_UNSIGNED_INT8);
    let (w, h, dd) = (6, 4, 3);
    let (rp, sp) = (w * 4 + 8, (w * 4 + 8) * (h + 1));
    let mut d = image_desc(CL_MEM_OBJECT_IMAGE3D, w, h, dd, 0);
    d.image_row_pitch = rp;
    d.image_slice_pitch = sp;
    let host = pattern(sp * dd, 5);
    let mut model = Model {
        dims: [w, h, dd],
        elem: 4,
        data: vec![0; w * h * dd * 4],
    };
    model.put([0; 3], [w, h, dd], rp, sp, &host);
    // COPY_HOST_PTR takes the pitched data; the image reports packed pitches.
    let mut copy_src = host.clone();
    let m = cl
        .image(
            c,
            CL_MEM_COPY_HOST_PTR,
            &f,
            &d,
            copy_src.as_mut_ptr().cast(),
        )
        .unwrap();
    copy_src.fill(0);
    assert_eq!(cl.read_all(q, m, [w, h, dd], 4), model.data);
    assert_eq!(usize_of(&cl.image_query(m, CL_IMAGE_ROW_PITCH)), w * 4);
    cl.release_mem(m);
    // USE_HOST_PTR: the same data, and mapping returns the host memory.
    let mut use_src = host.clone();
    let m = cl
        .image(c, CL_MEM_USE_HOST_PTR, &f, &d, use_src.as_mut_ptr().cast())
        .unwrap();
    assert_eq!(cl.read_all(q, m, [w, h, dd], 4), model.data);
    let (o, r) = ([1, 1, 1], [2, 2, 2]);
    let (mut rpo, mut spo, mut e) = (0, 0, 1);
    let p = unsafe {
        cl.clEnqueueMapImage.unwrap()(
            q,
            m,
            CL_TRUE,
            CL_MAP_WRITE,
            o.as_ptr(),
            r.as_ptr(),
            &mut rpo,
            &mut spo,
            0,
            null(),
            null_mut(),
            &mut e,
        )
    };
    assert_eq!(e, CL_SUCCESS);
    assert_eq!((rpo, spo), (rp, sp));
    assert_eq!(p as usize, use_src.as_ptr() as usize + 4 + rp + sp);
    unsafe { *(p as *mut u8) = 0xEE };
    let r = unsafe { cl.clEnqueueUnmapMemObject.unwrap()(q, m, p, 0, null(), null_mut()) };
    assert_eq!(r, CL_SUCCESS);
    let mut px = [0u8; 4];
    assert_eq!(cl.read_image(q, m, o, [1, 1, 1], 0, 0, &mut px), CL_SUCCESS);
    assert_eq!(px[0], 0xEE);
    cl.release_mem(m);
    cl.done(q, c);
}

fn image_to_image_and_buffer_copies(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let f = fmt(CL_RGBA, CL_UNORM_INT16);
    let elem = 8;
    let shapes = shapes();
    let mut models = Vec::new();
    let mut images = Vec::new();
    for (k, (d, dims)) in shapes.iter().enumerate() {
        let m = cl.image(c, 0, &f, d, null_mut()).unwrap();
        let data = pattern(dims.iter().product::<usize>() * elem, 40 + k as u32);
        assert_eq!(cl.write_image(q, m, [0; 3], *dims, 0, 0, &data), CL_SUCCESS);
        models.push(Model {
            dims: *dims,
            elem,
            data,
        });
        images.push(m);
    }
    // Every pair of image types: a region that fits both.
    for s in 0..images.len() {
        for t in 0..images.len() {
            if s == t {
                continue;
            }
            let (sd, td) = (models[s].dims, models[t].dims);
            let r = [0, 1, 2].map(|i| sd[i].min(td[i]).div_ceil(2));
            let so = [0, 1, 2].map(|i| sd[i] - r[i]);
            let to = [0, 1, 2].map(|i| (td[i] - r[i]) / 2);
            let e = unsafe {
                cl.clEnqueueCopyImage.unwrap()(
                    q,
                    images[s],
                    images[t],
                    so.as_ptr(),
                    to.as_ptr(),
                    r.as_ptr(),
                    0,
                    null(),
                    null_mut(),
                )
            };
            assert_eq!(e, CL_SUCCESS, "{}: copy {s} -> {t}", cl.how);
            let row = r[0] * elem;
            let bytes = models[s].get(so, r, row, row * r[1]);
            models[t].put(to, r, row, row * r[1], &bytes);
            assert_eq!(
                cl.read_all(q, images[t], td, elem),
                models[t].data,
                "{}: copy {s} -> {t}",
                cl.how
            );
        }
    }
    // Image to buffer and back, at an offset that is not a whole element.
    let b = cl.buffer(c, 0, 4096, null_mut());
    cl.write(q, b, 0, &vec![0u8; 4096]);
    for (k, &m) in images.iter().enumerate() {
        let dims = models[k].dims;
        let r = dims.map(|v| v.div_ceil(2));
        let o = [0, 1, 2].map(|i| dims[i] - r[i]);
        let n = r.iter().product::<usize>() * elem;
        for offset in [0, 8, 3] {
            let e = unsafe {
                cl.clEnqueueCopyImageToBuffer.unwrap()(
                    q,
                    m,
                    b,
                    o.as_ptr(),
                    r.as_ptr(),
                    offset,
                    0,
                    null(),
                    null_mut(),
                )
            };
            assert_eq!(e, CL_SUCCESS);
            let row = r[0] * elem;
            let want = models[k].get(o, r, row, row * r[1]);
            assert_eq!(
                cl.read(q, b, offset, n),
                want,
                "{}: image {k} to buffer at {offset}",
                cl.how
            );
            // And a fresh pattern back in, from the same offset.
            let fresh = pattern(n, 7 * k as u32 + offset as u32);
            cl.write(q, b, offset, &fresh);
            let z = [0usize; 3];
            let e = unsafe {
                cl.clEnqueueCopyBufferToImage.unwrap()(
                    q,
                    b,
                    m,
                    offset,
                    z.as_ptr(),
                    r.as_ptr(),
                    0,
                    null(),
                    null_mut(),
                )
            };
            assert_eq!(e, CL_SUCCESS);
            models[k].put(z, r, row, row * r[1], &fresh);
            assert_eq!(
                cl.read_all(q, m, dims, elem),
                models[k].data,
                "{}: buffer to image {k}",
                cl.how
            );
        }
    }
    cl.release_mem(b);
    for m in images {
        cl.release_mem(m);
    }
    cl.done(q, c);
}

fn fills_convert_the_colour(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let floats = |v: [f32; 4]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    let ints = |v: [i32; 4]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    let cases: Vec<(cl_image_format, Vec<u8>, Vec<u8>)> = vec![
        (
            fmt(CL_RGBA, CL_UNORM_INT8),
            floats([1.0, 0.5, 0.0, 0.25]),
            vec![255, 128, 0, 64],
        ),
        (
            fmt(CL_BGRA, CL_UNORM_INT8),
            floats([1.0, 0.5, 0.0, 2.0]),
            vec![0, 128, 255, 255],
        ),
        (
            fmt(CL_R, CL_FLOAT),
            floats([-3.5, 9.0, 9.0, 9.0]),
            (-3.5f32).to_ne_bytes().to_vec(),
        ),
        (
            fmt(CL_RG, CL_SIGNED_INT16),
            ints([-40000, 1234, 0, 0]),
            [-32768i16, 1234]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect(),
        ),
        (
            fmt(CL_RGBA, CL_UNSIGNED_INT32),
            ints([1, -1, 3, 4]),
            ints([1, -1, 3, 4]),
        ),
        (
            fmt(CL_RGBA, CL_HALF_FLOAT),
            floats([1.0, -2.0, 0.5, 0.0]),
            [0x3c00u16, 0xc000, 0x3800, 0]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect(),
        ),
        (
            fmt(CL_sRGBA, CL_UNORM_INT8),
            floats([1.0, 0.0, 0.5, 0.5]),
            vec![255, 0, 188, 128],
        ),
    ];
    let readable = formats(cl, c, CL_MEM_READ_ONLY, CL_MEM_OBJECT_IMAGE2D);
    for (f, colour, want) in cases {
        if !readable.contains(&(f.image_channel_order, f.image_channel_data_type)) {
            continue;
        }
        let elem = want.len();
        let dims = [7, 5, 1];
        let m = cl
            .image(
                c,
                CL_MEM_READ_ONLY,
                &f,
                &image_desc(CL_MEM_OBJECT_IMAGE2D, 7, 5, 0, 0),
                null_mut(),
            )
            .unwrap();
        let zero = vec![0u8; 7 * 5 * elem];
        assert_eq!(cl.write_image(q, m, [0; 3], dims, 0, 0, &zero), CL_SUCCESS);
        let (o, r) = ([2, 1, 0], [4, 3, 1]);
        let e = unsafe {
            cl.clEnqueueFillImage.unwrap()(
                q,
                m,
                colour.as_ptr().cast(),
                o.as_ptr(),
                r.as_ptr(),
                0,
                null(),
                null_mut(),
            )
        };
        assert_eq!(e, CL_SUCCESS);
        let mut model = Model {
            dims,
            elem,
            data: zero,
        };
        let filled: Vec<u8> = want.iter().copied().cycle().take(12 * elem).collect();
        model.put(o, r, 4 * elem, 12 * elem, &filled);
        assert_eq!(
            cl.read_all(q, m, dims, elem),
            model.data,
            "{}: fill {f:x?}",
            cl.how
        );
        cl.release_mem(m);
    }
    cl.done(q, c);
}

fn map_and_unmap_images(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let f = fmt(CL_RGBA, CL_FLOAT);
    let elem = 16;
    for (k, (d, dims)) in shapes().into_iter().enumerate() {
        let m = cl.image(c, 0, &f, &d, null_mut()).unwrap();
        let mut model = Model {
            dims,
            elem,
            data: pattern(dims.iter().product::<usize>() * elem, 70 + k as u32),
        };
        assert_eq!(
            cl.write_image(q, m, [0; 3], dims, 0, 0, &model.data),
            CL_SUCCESS
        );
        let o = dims.map(|v| v / 4);
        let r = [0, 1, 2].map(|i| dims[i] - o[i]);
        let (mut rp, mut sp, mut e) = (0usize, 0usize, 1);
        let p = unsafe {
            cl.clEnqueueMapImage.unwrap()(
                q,
                m,
                CL_TRUE,
                CL_MAP_READ | CL_MAP_WRITE,
                o.as_ptr(),
                r.as_ptr(),
                &mut rp,
                &mut sp,
                0,
                null(),
                null_mut(),
                &mut e,
            )
        };
        assert_eq!(e, CL_SUCCESS, "{}: map type {:x}", cl.how, d.image_type);
        assert!(rp >= r[0] * elem);
        let rows_are_slices = d.image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
        let (ys, zs) = if rows_are_slices { (sp, 0) } else { (rp, sp) };
        let len = (r[2] - 1) * zs + (r[1] - 1) * ys + r[0] * elem;
        let mapped = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) };
        let want = model.get(o, r, ys, zs);
        for z in 0..r[2] {
            for y in 0..r[1] {
                let at = z * zs + y * ys;
                assert_eq!(mapped[at..at + r[0] * elem], want[at..at + r[0] * elem]);
            }
        }
        // Change every mapped row; the changes land on unmap.
        let fresh = pattern(len, 200 + k as u32);
        for z in 0..r[2] {
            for y in 0..r[1] {
                let at = z * zs + y * ys;
                mapped[at..at + r[0] * elem].copy_from_slice(&fresh[at..at + r[0] * elem]);
            }
        }
        assert_eq!(u32_of(&cl.mem_query(m, CL_MEM_MAP_COUNT)), 1);
        let e = unsafe { cl.clEnqueueUnmapMemObject.unwrap()(q, m, p, 0, null(), null_mut()) };
        assert_eq!(e, CL_SUCCESS);
        model.put(o, r, ys, zs, &fresh);
        assert_eq!(
            cl.read_all(q, m, dims, elem),
            model.data,
            "{}: unmap type {:x}",
            cl.how,
            d.image_type
        );
        // Unmapping again is an error.
        let e = unsafe { cl.clEnqueueUnmapMemObject.unwrap()(q, m, p, 0, null(), null_mut()) };
        assert_eq!(e, CL_INVALID_VALUE);
        cl.release_mem(m);
    }
    cl.done(q, c);
}

fn transfer_errors(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let f = fmt(CL_RGBA, CL_UNORM_INT8);
    let m2 = cl
        .image(
            c,
            0,
            &f,
            &image_desc(CL_MEM_OBJECT_IMAGE2D, 8, 8, 0, 0),
            null_mut(),
        )
        .unwrap();
    let m1 = cl
        .image(
            c,
            0,
            &f,
            &image_desc(CL_MEM_OBJECT_IMAGE1D, 8, 0, 0, 0),
            null_mut(),
        )
        .unwrap();
    let other = cl
        .image(
            c,
            0,
            &fmt(CL_R, CL_FLOAT),
            &image_desc(CL_MEM_OBJECT_IMAGE2D, 8, 8, 0, 0),
            null_mut(),
        )
        .unwrap();
    let mut buf = vec![0u8; 8 * 8 * 4];
    // Regions outside the image, empty, or using coordinates it lacks.
    for (m, o, r) in [
        (m2, [0, 0, 0], [9, 1, 1]),
        (m2, [7, 0, 0], [2, 1, 1]),
        (m2, [0, 0, 0], [0, 1, 1]),
        (m2, [0, 0, 1], [1, 1, 1]),
        (m2, [0, 0, 0], [1, 1, 2]),
        (m1, [0, 1, 0], [1, 1, 1]),
        (m1, [0, 0, 0], [1, 2, 1]),
        (m2, [usize::MAX, 0, 0], [2, 1, 1]),
    ] {
        assert_eq!(
            cl.write_image(q, m, o, r, 0, 0, &buf),
            CL_INVALID_VALUE,
            "{o:?} {r:?}"
        );
        assert_eq!(
            cl.read_image(q, m, o, r, 0, 0, &mut buf),
            CL_INVALID_VALUE,
            "{o:?} {r:?}"
        );
    }
    // Pitches too small, a slice pitch for a 2D image, a null pointer.
    assert_eq!(
        cl.write_image(q, m2, [0; 3], [8, 8, 1], 31, 0, &buf),
        CL_INVALID_VALUE
    );
    assert_eq!(
        cl.write_image(q, m2, [0; 3], [8, 8, 1], 0, 256, &buf),
        CL_INVALID_VALUE
    );
    let (o, r) = ([0usize; 3], [8usize, 8, 1]);
    unsafe {
        let e = cl.clEnqueueReadImage.unwrap()(
            q,
            m2,
            CL_TRUE,
            o.as_ptr(),
            r.as_ptr(),
            0,
            0,
            null_mut(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_INVALID_VALUE);
        let e = cl.clEnqueueReadImage.unwrap()(
            q,
            m2,
            CL_TRUE,
            null(),
            r.as_ptr(),
            0,
            0,
            buf.as_mut_ptr().cast(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_INVALID_VALUE);
        // Buffers are not images, and images are not buffers.
        let b = cl.buffer(c, 0, 256, null_mut());
        let e = cl.clEnqueueReadImage.unwrap()(
            q,
            b,
            CL_TRUE,
            o.as_ptr(),
            r.as_ptr(),
            0,
            0,
            buf.as_mut_ptr().cast(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_INVALID_MEM_OBJECT);
        let e = cl.clEnqueueReadBuffer.unwrap()(
            q,
            m2,
            CL_TRUE,
            0,
            4,
            buf.as_mut_ptr().cast(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_INVALID_MEM_OBJECT);
        // Copies: formats must match, same-image regions must not overlap,
        // buffer ranges must fit.
        let e = cl.clEnqueueCopyImage.unwrap()(
            q,
            m2,
            other,
            o.as_ptr(),
            o.as_ptr(),
            [2, 2, 1].as_ptr(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_IMAGE_FORMAT_MISMATCH);
        let e = cl.clEnqueueCopyImage.unwrap()(
            q,
            m2,
            m2,
            o.as_ptr(),
            [1, 1, 0].as_ptr(),
            [2, 2, 1].as_ptr(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_MEM_COPY_OVERLAP);
        let e = cl.clEnqueueCopyImage.unwrap()(
            q,
            m2,
            m2,
            o.as_ptr(),
            [4, 4, 0].as_ptr(),
            [4, 4, 1].as_ptr(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_SUCCESS);
        let e = cl.clEnqueueCopyImageToBuffer.unwrap()(
            q,
            m2,
            b,
            o.as_ptr(),
            [8, 8, 1].as_ptr(),
            4,
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_INVALID_VALUE);
        let e = cl.clEnqueueCopyBufferToImage.unwrap()(
            q,
            b,
            m2,
            200,
            o.as_ptr(),
            [8, 2, 1].as_ptr(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_INVALID_VALUE);
        let e = cl.clEnqueueFillImage.unwrap()(
            q,
            m2,
            null(),
            o.as_ptr(),
            r.as_ptr(),
            0,
            null(),
            null_mut(),
        );
        assert_eq!(e, CL_INVALID_VALUE);
        // Mapping: a slice pitch pointer is needed only where there are slices.
        let mut rp = 0;
        let mut e = 1;
        let p = cl.clEnqueueMapImage.unwrap()(
            q,
            m2,
            CL_TRUE,
            CL_MAP_READ,
            o.as_ptr(),
            r.as_ptr(),
            &mut rp,
            null_mut(),
            0,
            null(),
            null_mut(),
            &mut e,
        );
        assert_eq!(e, CL_SUCCESS);
        assert_eq!(rp, 32);
        assert_eq!(
            cl.clEnqueueUnmapMemObject.unwrap()(q, m2, p, 0, null(), null_mut()),
            CL_SUCCESS
        );
        let p = cl.clEnqueueMapImage.unwrap()(
            q,
            m2,
            CL_TRUE,
            CL_MAP_READ,
            o.as_ptr(),
            r.as_ptr(),
            null_mut(),
            null_mut(),
            0,
            null(),
            null_mut(),
            &mut e,
        );
        assert!(p.is_null());
        assert_eq!(e, CL_INVALID_VALUE);
        assert_eq!(cl.clFinish.unwrap()(q), CL_SUCCESS);
        cl.release_mem(b);
    }
    // Host access flags.
    let ro = cl
        .image(
            c,
            CL_MEM_HOST_WRITE_ONLY,
            &f,
            &image_desc(CL_MEM_OBJECT_IMAGE2D, 8, 8, 0, 0),
            null_mut(),
        )
        .unwrap();
    assert_eq!(
        cl.read_image(q, ro, [0; 3], [8, 8, 1], 0, 0, &mut buf),
        CL_INVALID_OPERATION
    );
    assert_eq!(
        cl.write_image(q, ro, [0; 3], [8, 8, 1], 0, 0, &buf),
        CL_SUCCESS
    );
    for m in [m1, m2, other, ro] {
        cl.release_mem(m);
    }
    cl.done(q, c);
}

fn samplers(cl: &Cl) {
    let c = cl.context();
    let mut e = 1;
    let sampler_u32 = |s: cl_sampler, p: cl_sampler_info| {
        u32_of(&query(|sz, v, r| unsafe { cl.clGetSamplerInfo.unwrap()(s, p, sz, v, r) }).unwrap())
    };
    for normalized in [CL_FALSE, CL_TRUE] {
        for addressing in [
            CL_ADDRESS_NONE,
            CL_ADDRESS_CLAMP_TO_EDGE,
            CL_ADDRESS_CLAMP,
            CL_ADDRESS_REPEAT,
            CL_ADDRESS_MIRRORED_REPEAT,
        ] {
            for filter in [CL_FILTER_NEAREST, CL_FILTER_LINEAR] {
                let s = unsafe {
                    cl.clCreateSampler.unwrap()(c, normalized, addressing, filter, &mut e)
                };
                let repeats = matches!(addressing, CL_ADDRESS_REPEAT | CL_ADDRESS_MIRRORED_REPEAT);
                if normalized == CL_FALSE && repeats {
                    assert!(s.is_null());
                    assert_eq!(e, CL_INVALID_VALUE);
                    continue;
                }
                assert_eq!(e, CL_SUCCESS);
                assert_eq!(sampler_u32(s, CL_SAMPLER_NORMALIZED_COORDS), normalized);
                assert_eq!(sampler_u32(s, CL_SAMPLER_ADDRESSING_MODE), addressing);
                assert_eq!(sampler_u32(s, CL_SAMPLER_FILTER_MODE), filter);
                assert_eq!(sampler_u32(s, CL_SAMPLER_REFERENCE_COUNT), 1);
                unsafe {
                    assert_eq!(cl.clRetainSampler.unwrap()(s), CL_SUCCESS);
                    assert_eq!(sampler_u32(s, CL_SAMPLER_REFERENCE_COUNT), 2);
                    assert_eq!(cl.clReleaseSampler.unwrap()(s), CL_SUCCESS);
                    assert_eq!(cl.clReleaseSampler.unwrap()(s), CL_SUCCESS);
                }
            }
        }
    }
    unsafe {
        let s = cl.clCreateSampler.unwrap()(c, 2, CL_ADDRESS_CLAMP, CL_FILTER_NEAREST, &mut e);
        assert!(s.is_null());
        assert_eq!(e, CL_INVALID_VALUE);
        let s = cl.clCreateSampler.unwrap()(c, CL_TRUE, 0x1234, CL_FILTER_NEAREST, &mut e);
        assert!(s.is_null());
        assert_eq!(e, CL_INVALID_VALUE);
        let s = cl.clCreateSampler.unwrap()(
            null_mut(),
            CL_TRUE,
            CL_ADDRESS_CLAMP,
            CL_FILTER_NEAREST,
            &mut e,
        );
        assert!(s.is_null());
        assert_eq!(e, CL_INVALID_CONTEXT);
        // With properties: defaults for what is left out, the list kept.
        let props: [cl_sampler_properties; 5] = [
            CL_SAMPLER_FILTER_MODE as _,
            CL_FILTER_LINEAR as _,
            CL_SAMPLER_ADDRESSING_MODE as _,
            CL_ADDRESS_REPEAT as _,
            0,
        ];
        let s = cl.clCreateSamplerWithProperties.unwrap()(c, props.as_ptr(), &mut e);
        assert_eq!(e, CL_SUCCESS);
        assert_eq!(sampler_u32(s, CL_SAMPLER_NORMALIZED_COORDS), CL_TRUE);
        assert_eq!(sampler_u32(s, CL_SAMPLER_FILTER_MODE), CL_FILTER_LINEAR);
        let got =
            query(|sz, v, r| cl.clGetSamplerInfo.unwrap()(s, CL_SAMPLER_PROPERTIES, sz, v, r))
                .unwrap();
        assert_eq!(
            got,
            props
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect::<Vec<u8>>()
        );
        let ctx = query(|sz, v, r| cl.clGetSamplerInfo.unwrap()(s, CL_SAMPLER_CONTEXT, sz, v, r))
            .unwrap();
        assert_eq!(usize_of(&ctx), c as usize);
        assert_eq!(
            cl.clGetSamplerInfo.unwrap()(s, 0x1234, 0, null_mut(), null_mut()),
            CL_INVALID_VALUE
        );
        assert_eq!(cl.clReleaseSampler.unwrap()(s), CL_SUCCESS);
        let s = cl.clCreateSamplerWithProperties.unwrap()(c, null(), &mut e);
        assert_eq!(e, CL_SUCCESS);
        assert_eq!(sampler_u32(s, CL_SAMPLER_ADDRESSING_MODE), CL_ADDRESS_CLAMP);
        let got =
            query(|sz, v, r| cl.clGetSamplerInfo.unwrap()(s, CL_SAMPLER_PROPERTIES, sz, v, r))
                .unwrap();
        assert!(got.is_empty());
        assert_eq!(cl.clReleaseSampler.unwrap()(s), CL_SUCCESS);
        let bad: [cl_sampler_properties; 3] = [0x9999, 1, 0];
        let s = cl.clCreateSamplerWithProperties.unwrap()(c, bad.as_ptr(), &mut e);
        assert!(s.is_null());
        assert_eq!(e, CL_INVALID_VALUE);
        assert_eq!(cl.clRetainSampler.unwrap()(null_mut()), CL_INVALID_SAMPLER);
        assert_eq!(cl.clReleaseSampler.unwrap()(c.cast()), CL_INVALID_SAMPLER);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}
