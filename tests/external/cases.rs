// The cases of tests/external.rs and tests/external_linear_images.rs.

#[path = "../../examples/vulkan_interop/vulkan.rs"]
#[allow(dead_code)]
mod vulkan;

use std::ffi::c_void;

use common::*;
use opencl_sys::*;

both_ways!(
    offered_and_queried,
    imported_buffer_runs_kernels,
    imported_image_runs_kernels,
    imported_image_arrays_and_3d_images,
    imported_vulkan_images_run_kernels,
    errors,
    semaphores_shared_with_vulkan,
    semaphores_shared_between_contexts,
);

type MemObjectsOp = unsafe extern "C" fn(
    cl_command_queue,
    cl_uint,
    *const cl_mem,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;

type HandleFn = unsafe extern "C" fn(
    cl_semaphore_khr,
    cl_device_id,
    cl_external_semaphore_handle_type_khr,
    usize,
    *mut c_void,
    *mut usize,
) -> cl_int;

fn extensions(cl: &Cl) -> Vec<String> {
    c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap())
        .split(' ')
        .map(String::from)
        .collect()
}

fn has(cl: &Cl, name: &str) -> bool {
    extensions(cl).iter().any(|e| e == name)
}

fn uints(b: &[u8]) -> Vec<u32> {
    b.chunks(4).map(u32_of).collect()
}

/// The Vulkan program's side, on the OpenCL device's GPU.
fn vulkan_side(cl: &Cl, semaphores: bool) -> vulkan::VulkanSide {
    let uuid: [u8; 16] = cl
        .device_bytes(cl.device(), CL_DEVICE_UUID_KHR)
        .unwrap()
        .try_into()
        .unwrap();
    vulkan::VulkanSide::new(uuid, semaphores).unwrap()
}

fn import(cl: &Cl, c: cl_context, fd: i32, size: usize) -> Result<cl_mem, cl_int> {
    let props = [
        CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties,
        fd as cl_mem_properties,
        CL_MEM_DEVICE_HANDLE_LIST_KHR,
        cl.device() as cl_mem_properties,
        CL_MEM_DEVICE_HANDLE_LIST_END_KHR,
        0,
    ];
    let mut err = 1;
    let b = unsafe {
        cl.clCreateBufferWithProperties.unwrap()(
            c,
            props.as_ptr(),
            CL_MEM_READ_WRITE,
            size,
            std::ptr::null_mut(),
            &mut err,
        )
    };
    if err == CL_SUCCESS { Ok(b) } else { Err(err) }
}

fn offered_and_queried(cl: &Cl) {
    let d = cl.device();
    let memory = uints(
        &cl.device_bytes(d, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR)
            .unwrap(),
    );
    assert_eq!(
        has(cl, "cl_khr_external_memory_opaque_fd"),
        memory.contains(&CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR)
    );
    assert_eq!(has(cl, "cl_khr_external_memory"), !memory.is_empty());
    let import = uints(
        &cl.device_bytes(d, CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR)
            .unwrap(),
    );
    let export = uints(
        &cl.device_bytes(d, CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR)
            .unwrap(),
    );
    let either = |t| import.contains(&t) || export.contains(&t);
    assert_eq!(
        has(cl, "cl_khr_external_semaphore"),
        !import.is_empty() || !export.is_empty()
    );
    assert_eq!(
        has(cl, "cl_khr_external_semaphore_opaque_fd"),
        either(CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR)
    );
    assert_eq!(
        has(cl, "cl_khr_external_semaphore_sync_fd"),
        either(CL_SEMAPHORE_HANDLE_SYNC_FD_KHR)
    );
    // Images are imported from the same handles, as linear images.
    let linear = uints(
        &cl.device_bytes(
            d,
            CL_DEVICE_EXTERNAL_MEMORY_IMPORT_ASSUME_LINEAR_IMAGES_HANDLE_TYPES_KHR,
        )
        .unwrap(),
    );
    assert_eq!(linear, memory);
    // The platform lists what all its devices import.
    let platform = uints(
        &cl.platform_bytes(
            cl.platform(),
            CL_PLATFORM_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR,
        )
        .unwrap(),
    );
    assert!(platform.iter().all(|t| memory.contains(t)));
    // Where every device of the platform has the extensions, the
    // platform names them too (vkcl's tests see one device).
    let platform_ext = cl.platform_string(cl.platform(), CL_PLATFORM_EXTENSIONS);
    let named = |e: &str| platform_ext.split(' ').any(|x| x == e);
    if cl.devices(CL_DEVICE_TYPE_ALL).unwrap().len() == 1 {
        for e in [
            "cl_khr_external_memory",
            "cl_khr_external_memory_opaque_fd",
            "cl_khr_external_semaphore",
            "cl_khr_external_semaphore_opaque_fd",
            "cl_khr_external_semaphore_sync_fd",
        ] {
            assert_eq!(named(e), has(cl, e), "{e} in {platform_ext:?}");
        }
    }
}

fn create_image(
    cl: &Cl,
    c: cl_context,
    props: *const cl_mem_properties,
    flags: cl_mem_flags,
    format: &cl_image_format,
    desc: &cl_image_desc,
) -> Result<cl_mem, cl_int> {
    let mut err = 1;
    // SAFETY: a property list ending in 0 (or null), a format and a
    // description; no host memory.
    let image = unsafe {
        cl.clCreateImageWithProperties.unwrap()(
            c,
            props,
            flags,
            format,
            desc,
            std::ptr::null_mut(),
            &mut err,
        )
    };
    if err == CL_SUCCESS {
        Ok(image)
    } else {
        Err(err)
    }
}

fn imported_buffer_runs_kernels(cl: &Cl) {
    if !has(cl, "cl_khr_external_memory_opaque_fd") {
        eprintln!("skipped: no cl_khr_external_memory_opaque_fd");
        return;
    }
    let mut vk = vulkan_side(cl, false);
    let words = 3000;
    let shared = vk.shared_buffer(4 * words as u64).unwrap();
    vk.fill(&shared, 5, None).unwrap();
    let mut s = Setup::new(cl);
    let b = import(cl, s.c, shared.fd, 4 * words).unwrap();
    // SAFETY (both): the entry points have this signature.
    let acquire: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueAcquireExternalMemObjectsKHR") };
    let release: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueReleaseExternalMemObjectsKHR") };
    let k = s.kernel(
        "kernel void f(global uint *x) { uint i = get_global_id(0); x[i] = x[i] * 3u + i; }",
        "f",
        "",
    );
    s.arg(k, 0, &b);
    let mut acquired = std::ptr::null_mut();
    assert_eq!(
        unsafe { acquire(s.q, 1, &b, 0, std::ptr::null(), &mut acquired) },
        CL_SUCCESS
    );
    s.run(k, &[words], None, None);
    // OpenCL reads it like any buffer, and so does Vulkan after the release.
    let want: Vec<u32> = (0..words as u32).map(|i| 15 + i).collect();
    assert_eq!(uints(&cl.read(s.q, b, 0, 4 * words)), want, "{}", cl.how);
    let mut released = std::ptr::null_mut();
    assert_eq!(
        unsafe { release(s.q, 1, &b, 0, std::ptr::null(), &mut released) },
        CL_SUCCESS
    );
    assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
    let ty = |e| {
        u32_of(
            &query(|size, v, ret| unsafe {
                cl.clGetEventInfo.unwrap()(e, CL_EVENT_COMMAND_TYPE, size, v, ret)
            })
            .unwrap(),
        )
    };
    assert_eq!(ty(acquired), CL_COMMAND_ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR);
    assert_eq!(ty(released), CL_COMMAND_RELEASE_EXTERNAL_MEM_OBJECTS_KHR);
    assert_eq!(vk.read(&shared, None).unwrap(), want);
    // The property list comes back as given.
    let props = query(|size, v, ret| unsafe {
        cl.clGetMemObjectInfo.unwrap()(b, CL_MEM_PROPERTIES, size, v, ret)
    })
    .unwrap();
    assert_eq!(props.len(), 6 * 8);
    unsafe {
        cl.clReleaseEvent.unwrap()(acquired);
        cl.clReleaseEvent.unwrap()(released);
        cl.clReleaseMemObject.unwrap()(b);
    }
}

/// Memory Vulkan exported is a linear 2D image for OpenCL, rows a pitch
/// apart: kernels read and write its texels, and Vulkan sees the writes.
fn imported_image_runs_kernels(cl: &Cl) {
    if !has(cl, "cl_khr_external_memory_opaque_fd") {
        eprintln!("skipped: no cl_khr_external_memory_opaque_fd");
        return;
    }
    let linear = uints(
        &cl.device_bytes(
            cl.device(),
            CL_DEVICE_EXTERNAL_MEMORY_IMPORT_ASSUME_LINEAR_IMAGES_HANDLE_TYPES_KHR,
        )
        .unwrap(),
    );
    assert!(linear.contains(&CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR));
    let mut vk = vulkan_side(cl, false);
    // Rows of 40 texels, 64 texels apart.
    let (w, h, pitch_texels) = (40usize, 24usize, 64usize);
    let shared = vk.shared_buffer((4 * pitch_texels * h) as u64).unwrap();
    vk.fill(&shared, 7, None).unwrap();
    let mut s = Setup::new(cl);
    let props = [
        CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties,
        shared.fd as cl_mem_properties,
        0,
    ];
    let format = cl_image_format {
        image_channel_order: CL_R,
        image_channel_data_type: CL_UNSIGNED_INT32,
    };
    let mut desc = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
    desc.image_row_pitch = 4 * pitch_texels;
    // As Vulkan reports a linear image's layout: the slice pitch too.
    desc.image_slice_pitch = 4 * pitch_texels * h;
    let image = create_image(cl, s.c, props.as_ptr(), CL_MEM_READ_WRITE, &format, &desc)
        .unwrap_or_else(|e| panic!("{}: clCreateImageWithProperties ({e})", cl.how));
    // The image's memory is no buffer of the application's.
    let associated = query(|size, v, ret| unsafe {
        cl.clGetMemObjectInfo.unwrap()(image, CL_MEM_ASSOCIATED_MEMOBJECT, size, v, ret)
    })
    .unwrap();
    assert_eq!(u64_of(&associated), 0);
    // SAFETY (both): the entry points have this signature.
    let acquire: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueAcquireExternalMemObjectsKHR") };
    let release: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueReleaseExternalMemObjectsKHR") };
    let k = s.kernel(
        "kernel void f(read_only image2d_t in, write_only image2d_t out, global uint *seen) {
            int x = get_global_id(0), y = get_global_id(1);
            uint v = read_imageui(in, (int2)(x, y)).x;
            seen[y * get_global_size(0) + x] = v;
            write_imageui(out, (int2)(x, y), (uint4)(v * 10u + (uint)(y * 100 + x), 0, 0, 0));
        }",
        "f",
        "",
    );
    let seen = s.zeroed(4 * w * h);
    // The kernel reads the image and writes a copy of the same memory.
    let copy = create_image(
        cl,
        s.c,
        std::ptr::null(),
        CL_MEM_READ_WRITE,
        &format,
        &image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0),
    )
    .unwrap_or_else(|e| panic!("{} ({e})", cl.how));
    s.arg(k, 0, &image);
    s.arg(k, 1, &copy);
    s.arg(k, 2, &seen);
    let none = std::ptr::null();
    assert_eq!(
        unsafe { acquire(s.q, 1, &image, 0, none, std::ptr::null_mut()) },
        CL_SUCCESS
    );
    s.run(k, &[w, h], None, None);
    assert!(s.words(seen, w * h).iter().all(|&v| v == 7), "{}", cl.how);
    // Then the copy goes back into the imported image, for Vulkan.
    s.arg(k, 0, &copy);
    s.arg(k, 1, &image);
    s.run(k, &[w, h], None, None);
    assert_eq!(
        unsafe { release(s.q, 1, &image, 0, none, std::ptr::null_mut()) },
        CL_SUCCESS
    );
    assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
    let words = vk.read(&shared, None).unwrap();
    for y in 0..h {
        for x in 0..pitch_texels {
            let got = words[y * pitch_texels + x];
            // Texels past the row's end are left alone.
            let want = if x < w {
                (7 * 10 + (y * 100 + x) as u32) * 10 + (y * 100 + x) as u32
            } else {
                7
            };
            assert_eq!(got, want, "{}: texel {x},{y}", cl.how);
        }
    }
    unsafe {
        cl.clReleaseMemObject.unwrap()(copy);
        cl.clReleaseMemObject.unwrap()(image);
    }
    // A 1D image: one row.
    let shared = vk.shared_buffer(4 * 64).unwrap();
    vk.fill(&shared, 9, None).unwrap();
    let props = [
        CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties,
        shared.fd as cl_mem_properties,
        0,
    ];
    let row = create_image(
        cl,
        s.c,
        props.as_ptr(),
        CL_MEM_READ_ONLY,
        &format,
        &image_desc(CL_MEM_OBJECT_IMAGE1D, 50, 0, 0, 0),
    )
    .unwrap_or_else(|e| panic!("{}: a 1D image ({e})", cl.how));
    let k1 = s.kernel(
        "kernel void g(read_only image1d_t in, global uint *out) {
            int x = get_global_id(0);
            out[x] = read_imageui(in, x).x + 1u;
        }",
        "g",
        "",
    );
    let out = s.zeroed(4 * 50);
    s.arg(k1, 0, &row);
    s.arg(k1, 1, &out);
    assert_eq!(
        unsafe { acquire(s.q, 1, &row, 0, none, std::ptr::null_mut()) },
        CL_SUCCESS
    );
    s.run(k1, &[50], None, None);
    assert_eq!(
        unsafe { release(s.q, 1, &row, 0, none, std::ptr::null_mut()) },
        CL_SUCCESS
    );
    assert!(s.words(out, 50).iter().all(|&v| v == 10), "{}", cl.how);
    unsafe { cl.clReleaseMemObject.unwrap()(row) };
}

/// Memory Vulkan exported holds a 1D image array, a 2D image array or a 3D
/// image for OpenCL, as Vulkan lays out such a linear image: rows a pitch
/// apart in slices (layers) a pitch apart, with gaps between rows and
/// between slices. Writes of a region land where that layout puts them
/// (Vulkan reads them, the gaps untouched), reads of a region and kernels
/// see the texels, and what a kernel writes reaches Vulkan.
fn imported_image_arrays_and_3d_images(cl: &Cl) {
    if !has(cl, "cl_khr_external_memory_opaque_fd") {
        eprintln!("skipped: no cl_khr_external_memory_opaque_fd");
        return;
    }
    let mut vk = vulkan_side(cl, false);
    let mut s = Setup::new(cl);
    // SAFETY (both): the entry points have this signature.
    let acquire: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueAcquireExternalMemObjectsKHR") };
    let release: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueReleaseExternalMemObjectsKHR") };
    let format = cl_image_format {
        image_channel_order: CL_R,
        image_channel_data_type: CL_UNSIGNED_INT32,
    };
    // Rows of 12 texels 16 apart; slices of 5 rows, 7 rows apart.
    let (w, pitch) = (12usize, 16usize);
    for (ty, h, n, kind, coord) in [
        (CL_MEM_OBJECT_IMAGE3D, 5, 4, "image3d_t", "(int4)(x, y, z, 0)"),
        (CL_MEM_OBJECT_IMAGE2D_ARRAY, 5, 4, "image2d_array_t", "(int4)(x, y, z, 0)"),
        (CL_MEM_OBJECT_IMAGE1D_ARRAY, 1, 6, "image1d_array_t", "(int2)(x, z)"),
    ] {
        let slice = if h == 1 { 2 * pitch } else { 7 * pitch };
        let shared = vk.shared_buffer((4 * slice * n) as u64).unwrap();
        vk.fill(&shared, 7, None).unwrap();
        let props = [
            CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties,
            shared.fd as cl_mem_properties,
            0,
        ];
        let mut desc = image_desc(ty, w, if h == 1 { 0 } else { h }, 0, 0);
        if ty == CL_MEM_OBJECT_IMAGE3D {
            desc.image_depth = n;
        } else {
            desc.image_array_size = n;
        }
        desc.image_row_pitch = 4 * pitch;
        desc.image_slice_pitch = 4 * slice;
        let image = create_image(cl, s.c, props.as_ptr(), CL_MEM_READ_WRITE, &format, &desc)
            .unwrap_or_else(|e| panic!("{}: {kind} ({e})", cl.how));
        let none = std::ptr::null();
        assert_eq!(
            unsafe { acquire(s.q, 1, &image, 0, none, std::ptr::null_mut()) },
            CL_SUCCESS
        );
        // The texel at x, y, z (z: the slice or layer).
        let at = |x: usize, y: usize, z: usize| z * slice + y * pitch + x;
        let value = |x: usize, y: usize, z: usize| (1000 * z + 100 * y + x) as u32;
        // Write the region x 2..10, y 1..h, z 1..n.
        let (origin, region) = if h == 1 {
            ([2, 1, 0], [8, n - 1, 1])
        } else {
            ([2, 1, 1], [8, h - 1, n - 1])
        };
        let (o, r) = (origin, region);
        let mut texels = Vec::new();
        let (zs, ys) = if h == 1 {
            (o[1]..o[1] + r[1], 0..1)
        } else {
            (o[2]..o[2] + r[2], o[1]..o[1] + r[1])
        };
        for z in zs.clone() {
            for y in ys.clone() {
                for x in o[0]..o[0] + r[0] {
                    texels.push(value(x, y, z));
                }
            }
        }
        let written = unsafe {
            cl.clEnqueueWriteImage.unwrap()(
                s.q,
                image,
                CL_TRUE,
                origin.as_ptr(),
                region.as_ptr(),
                0,
                0,
                texels.as_ptr().cast(),
                0,
                none,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(written, CL_SUCCESS, "{}: {kind}", cl.how);
        let mut back = vec![0u32; texels.len()];
        let read = unsafe {
            cl.clEnqueueReadImage.unwrap()(
                s.q,
                image,
                CL_TRUE,
                origin.as_ptr(),
                region.as_ptr(),
                0,
                0,
                back.as_mut_ptr().cast(),
                0,
                none,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(read, CL_SUCCESS, "{}: {kind}", cl.how);
        assert_eq!(back, texels, "{}: {kind} read back", cl.how);
        // A kernel adds 5 to every texel of the image, in place through
        // a copy: first into a buffer, then back.
        let source = format!(
            "kernel void f(read_only {kind} in, global uint *out) {{
                int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
                size_t i = (z * get_global_size(1) + y) * get_global_size(0) + x;
                out[i] = read_imageui(in, {coord}).x + 5u;
            }}
            kernel void g(global const uint *in, write_only {kind} out) {{
                int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
                size_t i = (z * get_global_size(1) + y) * get_global_size(0) + x;
                write_imageui(out, {coord}, (uint4)(in[i], 0, 0, 0));
            }}"
        );
        let k = s.kernel(&source, "f", "");
        let g = s.kernel(&source, "g", "");
        let out = s.zeroed(4 * w * h * n);
        s.arg(k, 0, &image);
        s.arg(k, 1, &out);
        s.run(k, &[w, h, n], None, None);
        s.arg(g, 0, &out);
        s.arg(g, 1, &image);
        s.run(g, &[w, h, n], None, None);
        assert_eq!(
            unsafe { release(s.q, 1, &image, 0, none, std::ptr::null_mut()) },
            CL_SUCCESS
        );
        assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
        let words = vk.read(&shared, None).unwrap();
        for z in 0..n {
            for y in 0..slice / pitch {
                for x in 0..pitch {
                    let inside = x < w && y < h;
                    let was_written =
                        zs.contains(&z) && ys.contains(&y) && (o[0]..o[0] + r[0]).contains(&x);
                    let want = match (inside, was_written) {
                        (false, _) => 7,
                        (true, true) => value(x, y, z) + 5,
                        (true, false) => 7 + 5,
                    };
                    assert_eq!(words[at(x, y, z)], want, "{}: {kind} {x},{y},{z}", cl.how);
                }
            }
        }
        unsafe { cl.clReleaseMemObject.unwrap()(image) };
    }
}

/// Memory a Vulkan program made for a linear image, of each memory type
/// such an image may take (some of which buffers may not use on GPUs), is
/// an image for OpenCL at the row pitch Vulkan reports: kernels read the
/// texels Vulkan wrote, clEnqueueReadImage too, and Vulkan reads the
/// texels kernels wrote.
fn imported_vulkan_images_run_kernels(cl: &Cl) {
    if !has(cl, "cl_khr_external_memory_opaque_fd") {
        eprintln!("skipped: no cl_khr_external_memory_opaque_fd");
        return;
    }
    let mut vk = vulkan_side(cl, false);
    let (w, h) = (37usize, 19usize);
    let mut s = Setup::new(cl);
    // SAFETY (both): the entry points have this signature.
    let acquire: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueAcquireExternalMemObjectsKHR") };
    let release: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueReleaseExternalMemObjectsKHR") };
    let reader = s.kernel(
        "kernel void r(read_only image2d_t in, global uint *seen) {
            int x = get_global_id(0), y = get_global_id(1);
            seen[y * get_global_size(0) + x] = read_imageui(in, (int2)(x, y)).x;
        }",
        "r",
        "",
    );
    let writer = s.kernel(
        "kernel void w(write_only image2d_t out) {
            int x = get_global_id(0), y = get_global_id(1);
            write_imageui(out, (int2)(x, y), (uint4)((uint)(y * 100 + x) + 1u, 0, 0, 0));
        }",
        "w",
        "",
    );
    let format = cl_image_format {
        image_channel_order: CL_R,
        image_channel_data_type: CL_UNSIGNED_INT32,
    };
    let types = vk.image_memory_types(w as u32, h as u32).unwrap();
    assert!(!types.is_empty());
    let none = std::ptr::null();
    for memory_type in types {
        let how = format!("{}, memory type {memory_type}", cl.how);
        let shared = vk.shared_image(w as u32, h as u32, memory_type).unwrap();
        vk.fill_image(&shared, 3).unwrap();
        let props = [
            CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties,
            shared.fd as cl_mem_properties,
            CL_MEM_DEVICE_HANDLE_LIST_KHR,
            cl.device() as cl_mem_properties,
            CL_MEM_DEVICE_HANDLE_LIST_END_KHR,
            0,
        ];
        let mut desc = image_desc(CL_MEM_OBJECT_IMAGE2D, w, h, 0, 0);
        desc.image_row_pitch = shared.row_pitch as usize;
        desc.image_slice_pitch = shared.depth_pitch as usize;
        let image = create_image(cl, s.c, props.as_ptr(), CL_MEM_READ_WRITE, &format, &desc)
            .unwrap_or_else(|e| panic!("{how}: clCreateImageWithProperties ({e})"));
        let seen = s.zeroed(4 * w * h);
        s.arg(reader, 0, &image);
        s.arg(reader, 1, &seen);
        s.arg(writer, 0, &image);
        assert_eq!(
            unsafe { acquire(s.q, 1, &image, 0, none, std::ptr::null_mut()) },
            CL_SUCCESS
        );
        s.run(reader, &[w, h], None, None);
        assert!(s.words(seen, w * h).iter().all(|&v| v == 3), "{how}");
        s.run(writer, &[w, h], None, None);
        let mut texels = vec![0u32; w * h];
        let (origin, region) = ([0usize; 3], [w, h, 1]);
        let r = unsafe {
            cl.clEnqueueReadImage.unwrap()(
                s.q,
                image,
                CL_TRUE,
                origin.as_ptr(),
                region.as_ptr(),
                0,
                0,
                texels.as_mut_ptr().cast(),
                0,
                none,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "{how}: clEnqueueReadImage");
        let want: Vec<u32> = (0..h)
            .flat_map(|y| (0..w).map(move |x| (y * 100 + x) as u32 + 1))
            .collect();
        assert_eq!(texels, want, "{how}: read back by OpenCL");
        assert_eq!(
            unsafe { release(s.q, 1, &image, 0, none, std::ptr::null_mut()) },
            CL_SUCCESS
        );
        assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
        assert_eq!(
            vk.read_image(&shared).unwrap(),
            want,
            "{how}: read by Vulkan"
        );
        unsafe {
            cl.clReleaseMemObject.unwrap()(seen);
            cl.clReleaseMemObject.unwrap()(image);
        }
    }
}

fn errors(cl: &Cl) {
    let mut s = Setup::new(cl);
    let plain = s.buffer(64);
    if has(cl, "cl_khr_external_memory") {
        // SAFETY: the entry point has this signature.
        let acquire: MemObjectsOp =
            unsafe { extension_fn(cl, "clEnqueueAcquireExternalMemObjectsKHR") };
        let none = std::ptr::null();
        // Not imported.
        assert_eq!(
            unsafe { acquire(s.q, 1, &plain, 0, none, std::ptr::null_mut()) },
            CL_INVALID_MEM_OBJECT
        );
        assert_eq!(
            unsafe { acquire(s.q, 0, std::ptr::null(), 0, none, std::ptr::null_mut()) },
            CL_INVALID_VALUE
        );
        // A descriptor that is not open (drivers may take it on trust).
        assert_eq!(import(cl, s.c, -64, 64).unwrap_err(), CL_INVALID_VALUE);
        assert_eq!(import(cl, s.c, 1 << 20, 64).unwrap_err(), CL_INVALID_VALUE);
        // Host memory cannot go into imported memory.
        let mut host = [0u8; 64];
        let props = [
            CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR as cl_mem_properties,
            0,
            0,
        ];
        let mut err = 1;
        unsafe {
            cl.clCreateBufferWithProperties.unwrap()(
                s.c,
                props.as_ptr(),
                CL_MEM_USE_HOST_PTR,
                64,
                host.as_mut_ptr().cast(),
                &mut err,
            )
        };
        assert_eq!(err, CL_INVALID_VALUE);
        // A device list naming no device of the context.
        let props = [
            CL_MEM_DEVICE_HANDLE_LIST_KHR,
            CL_MEM_DEVICE_HANDLE_LIST_END_KHR,
            0,
        ];
        unsafe {
            cl.clCreateBufferWithProperties.unwrap()(
                s.c,
                props.as_ptr(),
                0,
                64,
                std::ptr::null_mut(),
                &mut err,
            )
        };
        assert_eq!(err, CL_INVALID_DEVICE);
    }
    // A plain semaphore exports nothing.
    let sem = SemaphoreApi::new(cl);
    // SAFETY: the entry point has this signature.
    let handle: HandleFn = unsafe { extension_fn(cl, "clGetSemaphoreHandleForTypeKHR") };
    let props = [
        CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
        CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
        0,
    ];
    let mut err = 1;
    let h = unsafe { (sem.create)(s.c, props.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    let mut fd = -1i32;
    let r = unsafe {
        handle(
            h,
            cl.device(),
            CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR,
            4,
            (&mut fd as *mut i32).cast(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_VALUE);
    let exportable =
        query(|size, v, ret| unsafe { (sem.info)(h, CL_SEMAPHORE_EXPORTABLE_KHR, size, v, ret) })
            .unwrap();
    assert_eq!(u32_of(&exportable), CL_FALSE);
    unsafe { (sem.release)(h) };
    // A handle type the device cannot export.
    let export = uints(
        &cl.device_bytes(cl.device(), CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR)
            .unwrap(),
    );
    if !export.contains(&CL_SEMAPHORE_HANDLE_SYNC_FD_KHR) {
        let props = [
            CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
            CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
            CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR,
            CL_SEMAPHORE_HANDLE_SYNC_FD_KHR as cl_semaphore_properties_khr,
            CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR,
            0,
        ];
        unsafe { (sem.create)(s.c, props.as_ptr(), &mut err) };
        assert_eq!(err, CL_INVALID_PROPERTY);
    }
}

/// An exportable semaphore of `kind` on context `c`.
fn exportable(sem: &SemaphoreApi, c: cl_context, kind: cl_uint) -> cl_semaphore_khr {
    let props = [
        CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
        CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
        CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR,
        kind as cl_semaphore_properties_khr,
        CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR,
        0,
    ];
    let mut err = 1;
    let h = unsafe { (sem.create)(c, props.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    h
}

/// A semaphore on context `c` imported from `fd` of `kind`.
fn imported(sem: &SemaphoreApi, c: cl_context, kind: cl_uint, fd: i32) -> cl_semaphore_khr {
    let props = [
        CL_SEMAPHORE_TYPE_KHR as cl_semaphore_properties_khr,
        CL_SEMAPHORE_TYPE_BINARY_KHR as cl_semaphore_properties_khr,
        kind as cl_semaphore_properties_khr,
        fd as cl_semaphore_properties_khr,
        0,
    ];
    let mut err = 1;
    let h = unsafe { (sem.create)(c, props.as_ptr(), &mut err) };
    assert_eq!(err, CL_SUCCESS);
    h
}

fn export(cl: &Cl, h: cl_semaphore_khr, kind: cl_uint) -> i32 {
    // SAFETY: the entry point has this signature.
    let handle: HandleFn = unsafe { extension_fn(cl, "clGetSemaphoreHandleForTypeKHR") };
    let (mut fd, mut size) = (-1i32, 0usize);
    let r = unsafe {
        handle(
            h,
            cl.device(),
            kind,
            4,
            (&mut fd as *mut i32).cast(),
            &mut size,
        )
    };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(size, 4);
    fd
}

fn semaphore_fds(cl: &Cl) -> bool {
    let ok = has(cl, "cl_khr_external_semaphore_opaque_fd");
    if !ok {
        eprintln!("skipped: no cl_khr_external_semaphore_opaque_fd on this device");
    }
    ok
}

fn op(f: SemaphoreOp, q: cl_command_queue, h: cl_semaphore_khr) {
    let r = unsafe {
        f(
            q,
            1,
            &h,
            std::ptr::null(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
}

/// Vulkan fills, signals; OpenCL waits, computes, signals; Vulkan waits
/// and reads: no host wait between them.
fn semaphores_shared_with_vulkan(cl: &Cl) {
    if !semaphore_fds(cl) || !has(cl, "cl_khr_external_memory_opaque_fd") {
        return;
    }
    let mut vk = vulkan_side(cl, true);
    assert!(vk.has_semaphores());
    let sem = SemaphoreApi::new(cl);
    let mut s = Setup::new(cl);
    let words = 1 << 16;
    let shared = vk.shared_buffer(4 * words as u64).unwrap();
    let b = import(cl, s.c, shared.fd, 4 * words).unwrap();
    let k = s.kernel(
        "kernel void f(global uint *x) { uint i = get_global_id(0); x[i] = x[i] * 3u + i; }",
        "f",
        "",
    );
    s.arg(k, 0, &b);
    // SAFETY (both): the entry points have this signature.
    let acquire: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueAcquireExternalMemObjectsKHR") };
    let release: MemObjectsOp =
        unsafe { extension_fn(cl, "clEnqueueReleaseExternalMemObjectsKHR") };
    let vk_sem = vk.semaphore().unwrap();
    let cl_waits = imported(
        &sem,
        s.c,
        CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR,
        vk.export_semaphore(vk_sem).unwrap(),
    );
    let cl_signals = exportable(&sem, s.c, CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR);
    let vk_waits = vk
        .import_semaphore(export(cl, cl_signals, CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR))
        .unwrap();
    for round in 0..3u32 {
        vk.fill(&shared, round, Some(vk_sem)).unwrap();
        op(sem.wait, s.q, cl_waits);
        let none = std::ptr::null();
        assert_eq!(
            unsafe { acquire(s.q, 1, &b, 0, none, std::ptr::null_mut()) },
            0
        );
        assert_eq!(s.enqueue(k, &[words], None, None), CL_SUCCESS);
        assert_eq!(
            unsafe { release(s.q, 1, &b, 0, none, std::ptr::null_mut()) },
            0
        );
        op(sem.signal, s.q, cl_signals);
        let want: Vec<u32> = (0..words as u32).map(|i| 3 * round + i).collect();
        assert_eq!(
            vk.read(&shared, Some(vk_waits)).unwrap(),
            want,
            "round {round}"
        );
    }
    assert_eq!(unsafe { cl.clFinish.unwrap()(s.q) }, CL_SUCCESS);
    unsafe {
        (sem.release)(cl_waits);
        (sem.release)(cl_signals);
        cl.clReleaseMemObject.unwrap()(b);
    }
}

/// A semaphore exported from one context and imported into another orders
/// a producer in the first before a consumer in the second; with a sync
/// file too, where the device exports those.
fn semaphores_shared_between_contexts(cl: &Cl) {
    if !semaphore_fds(cl) {
        return;
    }
    let sem = SemaphoreApi::new(cl);
    let export_types = uints(
        &cl.device_bytes(cl.device(), CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR)
            .unwrap(),
    );
    let import_types = uints(
        &cl.device_bytes(cl.device(), CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR)
            .unwrap(),
    );
    let mut first = Setup::new(cl);
    let second = Setup::new(cl);
    let src = "kernel void produce(global uint *x, uint rounds) {
            uint i = get_global_id(0), v = i;
            for (uint r = 0; r < rounds; r++) v = v * 1664525u + 1013904223u;
            x[i] = v;
        }";
    let produce = first.kernel(src, "produce", "");
    let n = 1 << 14;
    let mid = first.zeroed(4 * n);
    let rounds = 3000u32;
    first.arg(produce, 0, &mid);
    first.arg(produce, 1, &rounds);
    let want: Vec<u32> = (0..n as u32)
        .map(|i| (0..rounds).fold(i, |v, _| v.wrapping_mul(1664525).wrapping_add(1013904223)))
        .collect();
    for kind in [
        CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR,
        CL_SEMAPHORE_HANDLE_SYNC_FD_KHR,
    ] {
        if !export_types.contains(&kind) || !import_types.contains(&kind) {
            eprintln!("{kind:#x}: not both exported and imported here");
            continue;
        }
        let h = exportable(&sem, first.c, kind);
        // An opaque descriptor shares the payload from the start; a sync
        // file is the signal itself, taken once it is enqueued.
        let early = (kind == CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR)
            .then(|| imported(&sem, second.c, kind, export(cl, h, kind)));
        assert_eq!(first.enqueue(produce, &[n], None, None), CL_SUCCESS);
        op(sem.signal, first.q, h);
        let other = early.unwrap_or_else(|| imported(&sem, second.c, kind, export(cl, h, kind)));
        op(sem.wait, second.q, other);
        // The second context sees the first's memory only through the
        // host: the wait orders a read of the producer's result.
        assert_eq!(unsafe { cl.clFinish.unwrap()(second.q) }, CL_SUCCESS);
        assert_eq!(uints(&cl.read(first.q, mid, 0, 4 * n)), want, "{kind:#x}");
        unsafe {
            (sem.release)(h);
            (sem.release)(other);
        }
    }
}

/// The example: a Vulkan program and OpenCL share a buffer, and
/// semaphores where the device has them.
#[test]
fn vulkan_interop_example() {
    environment();
    let exe = build_dir().join("examples").join("vulkan_interop");
    if !exe.exists() {
        eprintln!("skipped: {} is not built", exe.display());
        return;
    }
    let loader = direct();
    if !has(loader, "cl_khr_external_memory_opaque_fd") {
        eprintln!("skipped: no cl_khr_external_memory_opaque_fd");
        return;
    }
    let out = std::process::Command::new(&exe)
        .arg("100000")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("all 100000 words right"), "{text}");
}
