// The buffer and transfer tests, shared by tests/buffers.rs,
// tests/buffers_device_local.rs and tests/buffers_staging.rs.

use std::ffi::c_void;
use std::sync::Mutex;

use common::*;
use opencl_sys::*;

both_ways!(
    every_flag_combination_round_trips,
    fill_with_every_pattern_size,
    rect_transfers_match_a_host_reference,
    map_and_unmap,
    use_host_ptr_maps_onto_the_host_memory,
    sub_buffers_share_their_parent,
    memory_object_queries_and_destructors,
    large_transfers,
    large_transfers_between_partial_pages,
    transfers_keep_queue_order,
    large_reads_keep_their_order_events_and_profile,
);

fn release(cl: &Cl, mems: &[cl_mem], queues: &[cl_command_queue], c: cl_context) {
    unsafe {
        for &m in mems {
            assert_eq!(cl.clReleaseMemObject.unwrap()(m), CL_SUCCESS);
        }
        for &q in queues {
            assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
        }
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn every_flag_combination_round_trips(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let access = [0, CL_MEM_READ_WRITE, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY];
    let host = [
        0,
        CL_MEM_ALLOC_HOST_PTR,
        CL_MEM_COPY_HOST_PTR,
        CL_MEM_USE_HOST_PTR,
        CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR,
    ];
    for a in access {
        for h in host {
            let size = 1000;
            let mut init = pattern(size, (a + h) as u8);
            let ptr = if h & (CL_MEM_COPY_HOST_PTR | CL_MEM_USE_HOST_PTR) != 0 {
                init.as_mut_ptr().cast()
            } else {
                std::ptr::null_mut()
            };
            let b = cl.buffer(c, a | h, size, ptr);
            if !ptr.is_null() {
                assert_eq!(
                    cl.read(q, b, 0, size),
                    init,
                    "initial data, flags {:#x}",
                    a | h
                );
            }
            let data = pattern(size - 10, 99);
            cl.write(q, b, 10, &data);
            assert_eq!(cl.read(q, b, 10, size - 10), data, "flags {:#x}", a | h);
            unsafe { assert_eq!(cl.clReleaseMemObject.unwrap()(b), CL_SUCCESS) };
        }
    }
    release(cl, &[], &[q], c);
}

fn fill_with_every_pattern_size(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    const SIZE: usize = 4096;
    let b = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    let mut n = 1;
    while n <= 128 {
        let base = vec![0xEEu8; SIZE];
        cl.write(q, b, 0, &base);
        let pat = pattern(n, n as u8);
        // A fill that starts and ends off the 4-byte grid where it can.
        let offset = n * 3;
        let size = n * (SIZE / n / 2);
        let r = unsafe {
            cl.clEnqueueFillBuffer.unwrap()(
                q,
                b,
                pat.as_ptr().cast(),
                n,
                offset,
                size,
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "pattern size {n}");
        let got = cl.read(q, b, 0, SIZE);
        let mut want = base.clone();
        for i in 0..size {
            want[offset + i] = pat[i % n];
        }
        assert!(got == want, "fill with a {n}-byte pattern");
        n *= 2;
    }
    release(cl, &[b], &[q], c);
}

/// The host reference of a rectangular copy between two byte arrays.
#[allow(clippy::too_many_arguments)]
fn copy_rect_ref(
    src: &[u8],
    so: [usize; 3],
    srp: usize,
    ssp: usize,
    dst: &mut [u8],
    dof: [usize; 3],
    drp: usize,
    dsp: usize,
    region: [usize; 3],
) {
    for z in 0..region[2] {
        for y in 0..region[1] {
            let s = so[0] + (so[1] + y) * srp + (so[2] + z) * ssp;
            let d = dof[0] + (dof[1] + y) * drp + (dof[2] + z) * dsp;
            dst[d..d + region[0]].copy_from_slice(&src[s..s + region[0]]);
        }
    }
}

fn rect_transfers_match_a_host_reference(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    const SIZE: usize = 16 * 1024;
    let a = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    let b = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    let init_a = pattern(SIZE, 1);
    let init_b = pattern(SIZE, 2);
    cl.write(q, a, 0, &init_a);
    cl.write(q, b, 0, &init_b);
    let region = [13usize, 7, 3];
    // Write a rectangle from host memory with its own pitches.
    let host = pattern(4096, 3);
    let (ho, hrp, hsp) = ([2usize, 1, 1], 20usize, 200usize);
    let (bo, brp, bsp) = ([5usize, 2, 0], 64usize, 1024usize);
    unsafe {
        assert_eq!(
            cl.clEnqueueWriteBufferRect.unwrap()(
                q,
                a,
                CL_TRUE,
                bo.as_ptr(),
                ho.as_ptr(),
                region.as_ptr(),
                brp,
                bsp,
                hrp,
                hsp,
                host.as_ptr().cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut()
            ),
            CL_SUCCESS
        );
    }
    let mut want_a = init_a.clone();
    copy_rect_ref(&host, ho, hrp, hsp, &mut want_a, bo, brp, bsp, region);
    assert!(cl.read(q, a, 0, SIZE) == want_a, "write rect");
    // Copy a rectangle between buffers.
    let (so, srp, ssp) = ([1usize, 3, 1], 64usize, 1024usize);
    let (dof, drp, dsp) = ([7usize, 0, 2], 100usize, 2000usize);
    unsafe {
        assert_eq!(
            cl.clEnqueueCopyBufferRect.unwrap()(
                q,
                a,
                b,
                so.as_ptr(),
                dof.as_ptr(),
                region.as_ptr(),
                srp,
                ssp,
                drp,
                dsp,
                0,
                std::ptr::null(),
                std::ptr::null_mut()
            ),
            CL_SUCCESS
        );
    }
    let mut want_b = init_b.clone();
    copy_rect_ref(&want_a, so, srp, ssp, &mut want_b, dof, drp, dsp, region);
    assert!(cl.read(q, b, 0, SIZE) == want_b, "copy rect");
    // Read a rectangle back into host memory with default (tight) pitches.
    let mut out = vec![0u8; region[0] * region[1] * region[2]];
    unsafe {
        assert_eq!(
            cl.clEnqueueReadBufferRect.unwrap()(
                q,
                b,
                CL_TRUE,
                dof.as_ptr(),
                [0usize; 3].as_ptr(),
                region.as_ptr(),
                drp,
                dsp,
                0,
                0,
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut()
            ),
            CL_SUCCESS
        );
    }
    let mut want_out = vec![0u8; out.len()];
    copy_rect_ref(
        &want_b,
        dof,
        drp,
        dsp,
        &mut want_out,
        [0; 3],
        region[0],
        region[0] * region[1],
        region,
    );
    assert_eq!(out, want_out, "read rect");
    release(cl, &[a, b], &[q], c);
}

fn map(
    cl: &Cl,
    q: cl_command_queue,
    b: cl_mem,
    flags: cl_map_flags,
    offset: usize,
    size: usize,
) -> *mut u8 {
    let mut err = 1;
    let p = unsafe {
        cl.clEnqueueMapBuffer.unwrap()(
            q,
            b,
            CL_TRUE,
            flags,
            offset,
            size,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS, "map");
    p.cast()
}

fn unmap(cl: &Cl, q: cl_command_queue, b: cl_mem, p: *mut u8) {
    let r = unsafe {
        cl.clEnqueueUnmapMemObject.unwrap()(
            q,
            b,
            p.cast(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS, "unmap");
}

fn map_count(cl: &Cl, b: cl_mem) -> u32 {
    u32_of(
        &query(|s, v, sr| unsafe { cl.clGetMemObjectInfo.unwrap()(b, CL_MEM_MAP_COUNT, s, v, sr) })
            .unwrap(),
    )
}

fn map_and_unmap(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    const SIZE: usize = 8192;
    let b = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    let init = pattern(SIZE, 5);
    cl.write(q, b, 0, &init);
    // Read mapping shows the contents.
    let p = map(cl, q, b, CL_MAP_READ, 100, 1000);
    assert_eq!(
        unsafe { std::slice::from_raw_parts(p, 1000) },
        &init[100..1100]
    );
    // Two read mappings of one region may coexist.
    let p2 = map(cl, q, b, CL_MAP_READ, 500, 100);
    assert_eq!(map_count(cl, b), 2);
    unmap(cl, q, b, p2);
    unmap(cl, q, b, p);
    // A write mapping carries its changes back on unmap.
    let p = map(cl, q, b, CL_MAP_WRITE, 2000, 300);
    assert_eq!(
        unsafe { std::slice::from_raw_parts(p, 300) },
        &init[2000..2300],
        "CL_MAP_WRITE shows the contents"
    );
    unsafe { std::ptr::write_bytes(p, 0xAB, 300) };
    unmap(cl, q, b, p);
    let p = map(cl, q, b, CL_MAP_WRITE_INVALIDATE_REGION, 4000, 16);
    unsafe { std::ptr::write_bytes(p, 0xCD, 16) };
    unmap(cl, q, b, p);
    assert_eq!(map_count(cl, b), 0);
    let mut want = init.clone();
    want[2000..2300].fill(0xAB);
    want[4000..4016].fill(0xCD);
    assert!(cl.read(q, b, 0, SIZE) == want);
    release(cl, &[b], &[q], c);
}

fn use_host_ptr_maps_onto_the_host_memory(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    const SIZE: usize = 4096;
    let mut host = pattern(SIZE, 9);
    let b = cl.buffer(
        c,
        CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
        SIZE,
        host.as_mut_ptr().cast(),
    );
    let hp =
        query(|s, v, sr| unsafe { cl.clGetMemObjectInfo.unwrap()(b, CL_MEM_HOST_PTR, s, v, sr) })
            .unwrap();
    assert_eq!(usize_of(&hp), host.as_ptr() as usize);
    let data = pattern(256, 77);
    cl.write(q, b, 512, &data);
    // Mapping returns the application's own memory, brought up to date.
    let p = map(cl, q, b, CL_MAP_READ | CL_MAP_WRITE, 512, 256);
    assert_eq!(p as usize, host.as_ptr() as usize + 512);
    assert_eq!(&host[512..768], &data[..]);
    host[600] = 0x42;
    unmap(cl, q, b, p);
    assert_eq!(cl.read(q, b, 600, 1), vec![0x42]);
    release(cl, &[b], &[q], c);
}

fn sub_buffers_share_their_parent(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    let align = u32_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_MEM_BASE_ADDR_ALIGN)
            .unwrap(),
    ) as usize
        / 8;
    let size = align * 8;
    let parent = cl.buffer(c, CL_MEM_READ_WRITE, size, std::ptr::null_mut());
    cl.write(q, parent, 0, &vec![0u8; size]);
    let region = cl_buffer_region {
        origin: align * 2,
        size: align * 3,
    };
    let mut err = 1;
    let sub = unsafe {
        cl.clCreateSubBuffer.unwrap()(
            parent,
            CL_MEM_READ_WRITE,
            CL_BUFFER_CREATE_TYPE_REGION,
            (&region as *const cl_buffer_region).cast(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS);
    let data = pattern(align * 3, 11);
    cl.write(q, sub, 0, &data);
    let all = cl.read(q, parent, 0, size);
    assert_eq!(&all[align * 2..align * 5], &data[..]);
    assert!(all[..align * 2].iter().all(|&x| x == 0));
    let info =
        |p| query(|s, v, sr| unsafe { cl.clGetMemObjectInfo.unwrap()(sub, p, s, v, sr) }).unwrap();
    assert_eq!(usize_of(&info(CL_MEM_OFFSET)), align * 2);
    assert_eq!(
        usize_of(&info(CL_MEM_ASSOCIATED_MEMOBJECT)),
        parent as usize
    );
    assert_eq!(usize_of(&info(CL_MEM_SIZE)), align * 3);
    // Copying between a sub-buffer and the overlapping part of its parent
    // is an overlap.
    let r = unsafe {
        cl.clEnqueueCopyBuffer.unwrap()(
            q,
            sub,
            parent,
            0,
            align * 2 + align / 2,
            align,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_MEM_COPY_OVERLAP);
    let r = unsafe {
        cl.clEnqueueCopyBuffer.unwrap()(
            q,
            sub,
            parent,
            0,
            0,
            align,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(cl.read(q, parent, 0, align), &data[..align]);
    // The parent lives on while its sub-buffer does.
    release(cl, &[parent], &[], c);
    assert_eq!(cl.read(q, sub, 0, align * 3), data);
    unsafe {
        assert_eq!(cl.clReleaseMemObject.unwrap()(sub), CL_SUCCESS);
        assert_eq!(cl.clReleaseCommandQueue.unwrap()(q), CL_SUCCESS);
    }
}

static DESTROYED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_destroy(m: cl_mem, user_data: *mut c_void) {
    DESTROYED
        .lock()
        .unwrap()
        .push((m as usize, user_data as usize));
}

fn memory_object_queries_and_destructors(cl: &Cl) {
    let c = cl.context();
    let props: [cl_mem_properties; 1] = [0];
    let mut err = 1;
    let b = unsafe {
        cl.clCreateBufferWithProperties.unwrap()(
            c,
            props.as_ptr(),
            CL_MEM_READ_ONLY | CL_MEM_HOST_NO_ACCESS,
            128,
            std::ptr::null_mut(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS);
    let info =
        |p| query(|s, v, sr| unsafe { cl.clGetMemObjectInfo.unwrap()(b, p, s, v, sr) }).unwrap();
    assert_eq!(u32_of(&info(CL_MEM_TYPE)), CL_MEM_OBJECT_BUFFER);
    assert_eq!(
        u64_of(&info(CL_MEM_FLAGS)),
        CL_MEM_READ_ONLY | CL_MEM_HOST_NO_ACCESS
    );
    assert_eq!(usize_of(&info(CL_MEM_SIZE)), 128);
    assert_eq!(usize_of(&info(CL_MEM_HOST_PTR)), 0);
    assert_eq!(usize_of(&info(CL_MEM_CONTEXT)), c as usize);
    assert_eq!(u32_of(&info(CL_MEM_REFERENCE_COUNT)), 1);
    assert_eq!(u32_of(&info(CL_MEM_USES_SVM_POINTER)), 0);
    assert_eq!(info(CL_MEM_PROPERTIES), 0u64.to_ne_bytes().to_vec());
    let tag = if cl.how == "direct" { 10 } else { 20 };
    unsafe {
        let set = cl.clSetMemObjectDestructorCallback.unwrap();
        assert_eq!(set(b, Some(on_destroy), tag as *mut c_void), CL_SUCCESS);
        assert_eq!(
            set(b, Some(on_destroy), (tag + 1) as *mut c_void),
            CL_SUCCESS
        );
        assert_eq!(set(b, None, std::ptr::null_mut()), CL_INVALID_VALUE);
    }
    release(cl, &[b], &[], c);
    let mine: Vec<usize> = DESTROYED
        .lock()
        .unwrap()
        .iter()
        // The other way of loading vkcl runs this test too, in this
        // process: its buffer may have had the same address.
        .filter(|&&(m, u)| m == b as usize && (u == tag || u == tag + 1))
        .map(|&(_, u)| u)
        .collect();
    assert_eq!(mine, vec![tag + 1, tag], "most recent first");
}

fn large_transfers(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    const SIZE: usize = 48 << 20;
    let b = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    let data = pattern(SIZE, 13);
    cl.write(q, b, 0, &data);
    assert!(cl.read(q, b, 0, SIZE) == data);
    release(cl, &[b], &[q], c);
}

/// Large reads and writes whose host range starts and ends inside pages:
/// where the device imports the application's memory (writes over 32 MiB)
/// it imports only the whole pages, and the bytes on either side of the
/// range stay as they were.
fn large_transfers_between_partial_pages(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    const SIZE: usize = (33 << 20) + 123;
    const GUARD: usize = 8192;
    let b = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    for (n, start) in [1usize, 4095, 4096, 100].into_iter().enumerate() {
        let data = pattern(SIZE, 20 + n as u8);
        let mut host = vec![0xa5u8; GUARD + SIZE + GUARD];
        host[GUARD + start..GUARD + start + SIZE - start].copy_from_slice(&data[..SIZE - start]);
        // Written from an unaligned range, read back whole.
        let from = &host[GUARD + start..GUARD + start + SIZE - start];
        cl.write(q, b, start, from);
        let got = cl.read(q, b, start, SIZE - start);
        assert!(got == data[..SIZE - start], "{}: write at {start}", cl.how);
        // Read into an unaligned range: nothing around it changes.
        let mut into = vec![0x5au8; GUARD + SIZE + GUARD];
        unsafe {
            let r = cl.clEnqueueReadBuffer.unwrap()(
                q,
                b,
                CL_TRUE,
                start,
                SIZE - start,
                into.as_mut_ptr().add(GUARD + start).cast(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            );
            assert_eq!(r, CL_SUCCESS);
        }
        assert!(into[GUARD + start..GUARD + SIZE] == data[..SIZE - start], "{}: read at {start}", cl.how);
        assert!(into[..GUARD + start].iter().all(|&x| x == 0x5a), "{}: before {start}", cl.how);
        assert!(into[GUARD + SIZE..].iter().all(|&x| x == 0x5a), "{}: after {start}", cl.how);
    }
    release(cl, &[b], &[q], c);
}

/// A non-blocking read, then a fill and a write of the same range in the
/// same queue: the read sees the data from before them, and the write's
/// source may change once the write has completed.
fn transfers_keep_queue_order(cl: &Cl) {
    let c = cl.context();
    let q = cl.queue(c, 0);
    const SIZE: usize = 1 << 20;
    let first = pattern(SIZE, 1);
    let b = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    cl.write(q, b, 0, &first);
    let mut seen = vec![0u8; SIZE];
    let mut second = pattern(SIZE, 2);
    let zero = 0u32;
    unsafe {
        let r = cl.clEnqueueReadBuffer.unwrap()(
            q,
            b,
            CL_FALSE,
            0,
            SIZE,
            seen.as_mut_ptr().cast(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        assert_eq!(r, CL_SUCCESS);
        let r = cl.clEnqueueFillBuffer.unwrap()(
            q,
            b,
            (&zero as *const u32).cast(),
            4,
            0,
            SIZE,
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        );
        assert_eq!(r, CL_SUCCESS);
        let mut done = std::ptr::null_mut();
        let r = cl.clEnqueueWriteBuffer.unwrap()(
            q,
            b,
            CL_FALSE,
            0,
            SIZE,
            second.as_ptr().cast(),
            0,
            std::ptr::null(),
            &mut done,
        );
        assert_eq!(r, CL_SUCCESS);
        assert_eq!(cl.clWaitForEvents.unwrap()(1, &done), CL_SUCCESS);
        assert_eq!(cl.clReleaseEvent.unwrap()(done), CL_SUCCESS);
    }
    // The write is complete: its source is the application's again.
    second.iter_mut().for_each(|x| *x = 0x55);
    assert!(seen == first, "the read saw later commands' data");
    let got = cl.read(q, b, 0, SIZE);
    assert!(got == pattern(SIZE, 2), "the write lost its data");
    release(cl, &[b], &[q], c);
}

fn enqueue_read(cl: &Cl, q: cl_command_queue, b: cl_mem, into: &mut [u8], waits: &[cl_event]) -> cl_event {
    let mut e = std::ptr::null_mut();
    let r = unsafe {
        cl.clEnqueueReadBuffer.unwrap()(
            q,
            b,
            CL_FALSE,
            0,
            into.len(),
            into.as_mut_ptr().cast(),
            waits.len() as cl_uint,
            if waits.is_empty() { std::ptr::null() } else { waits.as_ptr() },
            &mut e,
        )
    };
    assert_eq!(r, CL_SUCCESS, "{}: read", cl.how);
    e
}

/// Reads of several staging pieces (where the device's memory is not the
/// host's and vkcl does not import the application's): each piece is a
/// submission of its own, but the read is one command. Its event completes
/// once every byte is in place, with a profile from the first piece's start;
/// it waits for its wait list, fails with it, and later commands of an
/// in-order queue do not overtake it.
fn large_reads_keep_their_order_events_and_profile(cl: &Cl) {
    let c = cl.context();
    const SIZE: usize = (20 << 20) + 12;
    let data = pattern(SIZE, 31);
    let b = cl.buffer(c, CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut());
    for props in [CL_QUEUE_PROFILING_ENABLE, CL_QUEUE_PROFILING_ENABLE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE] {
        let q = cl.queue(c, props);
        cl.write(q, b, 0, &data);
        let mut seen = vec![0u8; SIZE];
        let e = enqueue_read(cl, q, b, &mut seen, &[]);
        assert_eq!(unsafe { cl.clWaitForEvents.unwrap()(1, &e) }, CL_SUCCESS);
        assert!(seen == data, "{}: read", cl.how);
        let p = cl.profile(e);
        assert!(p.windows(2).all(|w| w[0] <= w[1]), "{}: profile {p:?}", cl.how);
        assert_eq!(unsafe { cl.clReleaseEvent.unwrap()(e) }, CL_SUCCESS);

        // Held back by a user event, then failed with it: nothing read.
        let gate = cl.user_event(c);
        let mut untouched = vec![7u8; SIZE];
        let e = enqueue_read(cl, q, b, &mut untouched, &[gate]);
        unsafe { cl.clFlush.unwrap()(q) };
        assert!(cl.event_status(e) > CL_COMPLETE as cl_int, "{}: ran before its wait list", cl.how);
        assert_eq!(unsafe { cl.clSetUserEventStatus.unwrap()(gate, -1) }, CL_SUCCESS);
        assert_eq!(unsafe { cl.clFinish.unwrap()(q) }, CL_SUCCESS);
        assert!(cl.event_status(e) < 0, "{}: a read after a failed event", cl.how);
        assert!(untouched.iter().all(|&x| x == 7), "{}: a failed read wrote", cl.how);
        unsafe {
            cl.clReleaseEvent.unwrap()(e);
            cl.clReleaseEvent.unwrap()(gate);
        }
        assert_eq!(unsafe { cl.clReleaseCommandQueue.unwrap()(q) }, CL_SUCCESS);
    }
    // In order: a fill enqueued after a non-blocking read does not reach
    // what the read sees.
    let q = cl.queue(c, 0);
    let mut seen = vec![0u8; SIZE];
    let e = enqueue_read(cl, q, b, &mut seen, &[]);
    let zero = 0u32;
    let r = unsafe {
        cl.clEnqueueFillBuffer.unwrap()(q, b, (&zero as *const u32).cast(), 4, 0, SIZE - 12, 0, std::ptr::null(), std::ptr::null_mut())
    };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(unsafe { cl.clWaitForEvents.unwrap()(1, &e) }, CL_SUCCESS);
    assert!(seen == data, "{}: the read saw a later fill", cl.how);
    assert!(cl.read(q, b, 0, SIZE - 12).iter().all(|&x| x == 0), "{}: fill", cl.how);
    unsafe { cl.clReleaseEvent.unwrap()(e) };
    // The host enqueues no read, large or small, to a device queue.
    let props = [
        CL_QUEUE_PROPERTIES as cl_queue_properties,
        CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
        0,
    ];
    let mut err = 1;
    let on_device = unsafe {
        cl.clCreateCommandQueueWithProperties.unwrap()(c, cl.device(), props.as_ptr(), &mut err)
    };
    if err == CL_SUCCESS {
        for len in [16, SIZE] {
            let mut into = vec![0u8; len];
            let r = unsafe {
                cl.clEnqueueReadBuffer.unwrap()(
                    on_device,
                    b,
                    CL_TRUE,
                    0,
                    len,
                    into.as_mut_ptr().cast(),
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(r, CL_INVALID_COMMAND_QUEUE, "{}: a read of {len} bytes on a device queue", cl.how);
        }
        assert_eq!(unsafe { cl.clReleaseCommandQueue.unwrap()(on_device) }, CL_SUCCESS);
    }
    release(cl, &[b], &[q], c);
}
