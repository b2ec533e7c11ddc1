//! Buffer SVM: one pointer value for host and device, so a list linked on
//! the host is walked by a kernel; fine-grained allocations used by the
//! host between commands without mapping; the SVM commands (map, unmap,
//! memcpy, fill, migrate, free); buffers made from SVM pointers; and the
//! errors the specification names. On devices without SVM every
//! allocation fails and the commands report CL_INVALID_OPERATION.

mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    linked_list_built_on_the_host,
    memcpy_fill_and_migrate,
    pointer_into_an_allocation_as_argument,
    buffer_made_from_an_svm_pointer,
    enqueued_free_calls_back,
    invalid_requests,
    fine_grained_buffers_need_no_map,
);

const SOURCE: &str = include_str!("kernels/svm.cl");
const OPTIONS: &str = "-cl-std=CL3.0";

fn svm_supported(cl: &Cl) -> bool {
    let caps = cl
        .device_bytes(cl.device(), CL_DEVICE_SVM_CAPABILITIES)
        .unwrap();
    u64_of(&caps) & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0
}

fn alloc(cl: &Cl, c: cl_context, size: usize) -> *mut c_void {
    let p = unsafe { cl.clSVMAlloc.unwrap()(c, CL_MEM_READ_WRITE, size, 0) };
    assert!(!p.is_null(), "{}: clSVMAlloc", cl.how);
    p
}

fn free(cl: &Cl, c: cl_context, p: *mut c_void) {
    unsafe { cl.clSVMFree.unwrap()(c, p) };
}

fn map(cl: &Cl, q: cl_command_queue, p: *mut c_void, size: usize, flags: cl_map_flags) {
    let r =
        unsafe { cl.clEnqueueSVMMap.unwrap()(q, CL_TRUE, flags, p, size, 0, null(), null_mut()) };
    assert_eq!(r, CL_SUCCESS, "{}: map", cl.how);
}

fn unmap(cl: &Cl, q: cl_command_queue, p: *mut c_void) {
    let r = unsafe { cl.clEnqueueSVMUnmap.unwrap()(q, p, 0, null(), null_mut()) };
    assert_eq!(r, CL_SUCCESS, "{}: unmap", cl.how);
}

fn svm_arg(cl: &Cl, k: cl_kernel, i: u32, p: *const c_void) {
    let r = unsafe { cl.clSetKernelArgSVMPointer.unwrap()(k, i, p) };
    assert_eq!(r, CL_SUCCESS, "{}: svm arg {i}", cl.how);
}

fn finish(cl: &Cl, q: cl_command_queue) {
    assert_eq!(unsafe { cl.clFinish.unwrap()(q) }, CL_SUCCESS);
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Node {
    value: i32,
    next: *mut Node,
}

fn linked_list_built_on_the_host(cl: &Cl) {
    let mut s = Setup::new(cl);
    if !svm_supported(cl) {
        let p = unsafe { cl.clSVMAlloc.unwrap()(s.c, CL_MEM_READ_WRITE, 64, 0) };
        assert!(p.is_null(), "{}: no SVM, no allocation", cl.how);
        return;
    }
    let n = 100usize;
    let nodes = alloc(cl, s.c, n * std::mem::size_of::<Node>()).cast::<Node>();
    let sum = alloc(cl, s.c, 4).cast::<i32>();
    map(
        cl,
        s.q,
        nodes.cast(),
        n * std::mem::size_of::<Node>(),
        CL_MAP_WRITE,
    );
    // Linked out of order: the k-th node of the list is node k * 37 % n
    // (37 and n are coprime, so every node is visited once).
    let order: Vec<usize> = (0..n).map(|k| k * 37 % n).collect();
    for (k, &at) in order.iter().enumerate() {
        let next = order
            .get(k + 1)
            .map_or(null_mut(), |&m| unsafe { nodes.add(m) });
        unsafe {
            *nodes.add(at) = Node {
                value: at as i32 + 1,
                next,
            }
        };
    }
    unmap(cl, s.q, nodes.cast());
    let k = s.kernel(SOURCE, "walk", OPTIONS);
    svm_arg(cl, k, 0, nodes.cast());
    svm_arg(cl, k, 1, sum.cast());
    let list = [nodes as *const c_void];
    let r = unsafe {
        cl.clSetKernelExecInfo.unwrap()(
            k,
            CL_KERNEL_EXEC_INFO_SVM_PTRS,
            std::mem::size_of_val(&list),
            list.as_ptr().cast(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[1], None, None);
    finish(cl, s.q);
    map(cl, s.q, sum.cast(), 4, CL_MAP_READ);
    assert_eq!(unsafe { *sum }, (n * (n + 1) / 2) as i32, "{}", cl.how);
    unmap(cl, s.q, sum.cast());
    map(
        cl,
        s.q,
        nodes.cast(),
        n * std::mem::size_of::<Node>(),
        CL_MAP_READ,
    );
    for k in 0..n {
        assert_eq!(unsafe { (*nodes.add(k)).value }, 2 * (k as i32 + 1));
    }
    unmap(cl, s.q, nodes.cast());
    finish(cl, s.q);
    free(cl, s.c, nodes.cast());
    free(cl, s.c, sum.cast());
}

fn memcpy_fill_and_migrate(cl: &Cl) {
    let s = Setup::new(cl);
    if !svm_supported(cl) {
        let mut x = [0u8; 4];
        let r = unsafe {
            cl.clEnqueueSVMMemcpy.unwrap()(
                s.q,
                CL_TRUE,
                x.as_mut_ptr().cast(),
                [1u8; 4].as_ptr().cast(),
                4,
                0,
                null(),
                null_mut(),
            )
        };
        assert_eq!(r, CL_INVALID_OPERATION, "{}", cl.how);
        return;
    }
    let n = 4096usize;
    let a = alloc(cl, s.c, n);
    let b = alloc(cl, s.c, n);
    let pattern = 0x1234_5678u32;
    let r = unsafe {
        cl.clEnqueueSVMMemFill.unwrap()(
            s.q,
            a,
            (&pattern as *const u32).cast(),
            4,
            n,
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    let r =
        unsafe { cl.clEnqueueSVMMemcpy.unwrap()(s.q, CL_FALSE, b, a, n, 0, null(), null_mut()) };
    assert_eq!(r, CL_SUCCESS);
    let ptrs = [b as *const c_void];
    let r = unsafe {
        cl.clEnqueueSVMMigrateMem.unwrap()(
            s.q,
            1,
            ptrs.as_ptr() as *mut _,
            null(),
            0,
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    let mut host = vec![0u8; n];
    let r = unsafe {
        cl.clEnqueueSVMMemcpy.unwrap()(
            s.q,
            CL_TRUE,
            host.as_mut_ptr().cast(),
            b,
            n,
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    let want: Vec<u8> = pattern
        .to_le_bytes()
        .iter()
        .copied()
        .cycle()
        .take(n)
        .collect();
    assert_eq!(host, want, "{}", cl.how);
    // Overlapping copies are refused.
    let r = unsafe {
        cl.clEnqueueSVMMemcpy.unwrap()(
            s.q,
            CL_TRUE,
            a.cast::<u8>().add(8).cast(),
            a,
            64,
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_MEM_COPY_OVERLAP);
    free(cl, s.c, a);
    free(cl, s.c, b);
}

fn pointer_into_an_allocation_as_argument(cl: &Cl) {
    let mut s = Setup::new(cl);
    if !svm_supported(cl) {
        return;
    }
    let n = 64usize;
    let data = alloc(cl, s.c, 4 * n).cast::<i32>();
    map(cl, s.q, data.cast(), 4 * n, CL_MAP_WRITE_INVALIDATE_REGION);
    for k in 0..n {
        unsafe { *data.add(k) = k as i32 };
    }
    unmap(cl, s.q, data.cast());
    let k = s.kernel(SOURCE, "add_one", OPTIONS);
    // The second half only.
    svm_arg(cl, k, 0, unsafe { data.add(n / 2) }.cast());
    s.run(k, &[n / 2], None, None);
    finish(cl, s.q);
    map(cl, s.q, data.cast(), 4 * n, CL_MAP_READ);
    let got: Vec<i32> = (0..n).map(|k| unsafe { *data.add(k) }).collect();
    let want: Vec<i32> = (0..n as i32)
        .map(|k| if k < 32 { k } else { k + 1 })
        .collect();
    assert_eq!(got, want, "{}", cl.how);
    unmap(cl, s.q, data.cast());
    finish(cl, s.q);
    free(cl, s.c, data.cast());
}

fn buffer_made_from_an_svm_pointer(cl: &Cl) {
    let mut s = Setup::new(cl);
    if !svm_supported(cl) {
        return;
    }
    let n = 64usize;
    let data = alloc(cl, s.c, 4 * (n + 16)).cast::<i32>();
    map(cl, s.q, data.cast(), 4 * (n + 16), CL_MAP_WRITE);
    for k in 0..n + 16 {
        unsafe { *data.add(k) = 1 };
    }
    unmap(cl, s.q, data.cast());
    let inner = unsafe { data.add(16) };
    let b = cl.buffer(
        s.c,
        CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
        4 * n,
        inner.cast(),
    );
    let uses = query(|size, value, size_ret| unsafe {
        cl.clGetMemObjectInfo.unwrap()(b, CL_MEM_USES_SVM_POINTER, size, value, size_ret)
    })
    .unwrap();
    assert_eq!(u32_of(&uses), CL_TRUE, "{}", cl.how);
    let k = s.kernel(SOURCE, "scale", OPTIONS);
    s.arg(k, 0, &b);
    s.arg(k, 1, &5i32);
    s.run(k, &[n], None, None);
    finish(cl, s.q);
    // The kernel wrote the SVM memory itself.
    map(cl, s.q, data.cast(), 4 * (n + 16), CL_MAP_READ);
    let got: Vec<i32> = (0..n + 16).map(|k| unsafe { *data.add(k) }).collect();
    let want: Vec<i32> = (0..n + 16).map(|k| if k < 16 { 1 } else { 5 }).collect();
    assert_eq!(got, want, "{}", cl.how);
    unmap(cl, s.q, data.cast());
    finish(cl, s.q);
    unsafe { cl.clReleaseMemObject.unwrap()(b) };
    free(cl, s.c, data.cast());
}

unsafe extern "C" fn note_free(
    _q: cl_command_queue,
    n: cl_uint,
    ptrs: *mut *mut c_void,
    user: *mut c_void,
) {
    // SAFETY: the test passes a u32 counter and the pointers it freed.
    unsafe {
        *user.cast::<u32>() += n;
        assert!(!(*ptrs).is_null());
    }
}

fn enqueued_free_calls_back(cl: &Cl) {
    let s = Setup::new(cl);
    if !svm_supported(cl) {
        return;
    }
    let mut ptrs = [alloc(cl, s.c, 256), alloc(cl, s.c, 256)];
    let mut count = 0u32;
    let r = unsafe {
        cl.clEnqueueSVMFree.unwrap()(
            s.q,
            2,
            ptrs.as_mut_ptr(),
            Some(note_free),
            (&mut count as *mut u32).cast(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    finish(cl, s.q);
    assert_eq!(count, 2, "{}", cl.how);
    // The callback freed nothing: the application does.
    for p in ptrs {
        free(cl, s.c, p);
    }
    // Without a callback the allocations are freed.
    let mut more = [alloc(cl, s.c, 128)];
    let r = unsafe {
        cl.clEnqueueSVMFree.unwrap()(
            s.q,
            1,
            more.as_mut_ptr(),
            None,
            null_mut(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    finish(cl, s.q);
}

fn invalid_requests(cl: &Cl) {
    let mut s = Setup::new(cl);
    let c = s.c;
    let try_alloc = |flags: cl_svm_mem_flags, size: usize, align: u32| unsafe {
        cl.clSVMAlloc.unwrap()(c, flags, size, align)
    };
    // SVM atomics are not offered; bad flags, sizes and alignments give
    // null.
    let atomics = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS;
    assert!(try_alloc(atomics, 64, 0).is_null());
    assert!(try_alloc(CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, 64, 0).is_null());
    assert!(try_alloc(CL_MEM_READ_WRITE, 0, 0).is_null());
    assert!(try_alloc(CL_MEM_READ_WRITE, 64, 3).is_null());
    let k = s.kernel(SOURCE, "scale", OPTIONS);
    if !svm_supported(cl) {
        let r = unsafe { cl.clSetKernelArgSVMPointer.unwrap()(k, 0, null()) };
        assert_eq!(r, CL_INVALID_OPERATION);
        return;
    }
    let p = try_alloc(CL_MEM_READ_WRITE, 64, 1024);
    assert!(!p.is_null() && p as usize % 1024 == 0, "{}", cl.how);
    // An SVM pointer for the int argument is refused; for the pointer it is not.
    let r = unsafe { cl.clSetKernelArgSVMPointer.unwrap()(k, 1, p) };
    assert_eq!(r, CL_INVALID_ARG_VALUE);
    let r = unsafe { cl.clSetKernelArgSVMPointer.unwrap()(k, 5, p) };
    assert_eq!(r, CL_INVALID_ARG_INDEX);
    svm_arg(cl, k, 0, p);
    let yes: cl_bool = CL_TRUE;
    let r = unsafe {
        cl.clSetKernelExecInfo.unwrap()(
            k,
            CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM,
            std::mem::size_of::<cl_bool>(),
            (&yes as *const cl_bool).cast(),
        )
    };
    assert_eq!(r, CL_INVALID_OPERATION);
    // An empty list unsets the pointers set before.
    let r = unsafe { cl.clSetKernelExecInfo.unwrap()(k, CL_KERNEL_EXEC_INFO_SVM_PTRS, 0, null()) };
    assert_eq!(r, CL_SUCCESS);
    // A buffer from an SVM pointer must fit in its allocation.
    let mut err = 0;
    let b = unsafe { cl.clCreateBuffer.unwrap()(c, CL_MEM_USE_HOST_PTR, 128, p, &mut err) };
    assert!(b.is_null());
    assert_eq!(err, CL_INVALID_BUFFER_SIZE);
    let r = unsafe {
        cl.clEnqueueSVMMemcpy.unwrap()(s.q, CL_TRUE, null_mut(), p, 4, 0, null(), null_mut())
    };
    assert_eq!(r, CL_INVALID_VALUE);
    let pattern = [0u8; 3];
    let r = unsafe {
        cl.clEnqueueSVMMemFill.unwrap()(
            s.q,
            p,
            pattern.as_ptr().cast(),
            3,
            6,
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_VALUE);
    let r = unsafe {
        cl.clEnqueueSVMMap.unwrap()(s.q, CL_TRUE, CL_MAP_READ, p, 0, 0, null(), null_mut())
    };
    assert_eq!(r, CL_INVALID_VALUE);
    finish(cl, s.q);
    free(cl, s.c, p);
    // Freeing null does nothing.
    free(cl, s.c, null_mut());
}

/// A fine-grained allocation is read and written by the host between
/// commands, with no map or unmap: kernels see what the host wrote before
/// they were enqueued, the host what they wrote once they completed.
fn fine_grained_buffers_need_no_map(cl: &Cl) {
    let caps = u64_of(
        &cl.device_bytes(cl.device(), CL_DEVICE_SVM_CAPABILITIES)
            .unwrap(),
    );
    if caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER == 0 {
        return;
    }
    assert_ne!(caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER, 0, "{}", cl.how);
    assert_eq!(caps & CL_DEVICE_SVM_ATOMICS, 0, "{}", cl.how);
    let mut s = Setup::new(cl);
    let n = 256;
    let flags = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER;
    let p = unsafe { cl.clSVMAlloc.unwrap()(s.c, flags, n * 4, 0) };
    assert!(!p.is_null(), "{}: clSVMAlloc", cl.how);
    let data = p.cast::<i32>();
    let k = s.kernel(SOURCE, "add_one", OPTIONS);
    svm_arg(cl, k, 0, p);
    for round in 1..=3i32 {
        // Written by the host for this round, read by the kernel.
        for i in 0..n {
            unsafe { data.add(i).write_volatile(i as i32 * 10 + round * 1000) };
        }
        s.run(k, &[n], None, None);
        finish(cl, s.q);
        for i in 0..n {
            let v = unsafe { data.add(i).read_volatile() };
            assert_eq!(
                v,
                i as i32 * 10 + round * 1000 + 1,
                "{}: item {i}, round {round}",
                cl.how
            );
        }
    }
    free(cl, s.c, p);
}
