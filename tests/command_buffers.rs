//! cl_khr_command_buffer: commands recorded once and enqueued many times,
//! with the kernel arguments of the moment they were recorded, sync points
//! and barriers ordering a buffer recorded for an out-of-order queue, a
//! buffer run on another queue of the device, and the errors the extension
//! names; cl_khr_command_buffer_mutable_dispatch: kernel commands updated
//! between enqueues, arguments left for an update, and the update's
//! errors; through the ICD loader and directly.

mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use common::*;
use opencl_sys::*;

both_ways!(
    offered_and_queried,
    replays_run_with_the_arguments_recorded,
    sync_points_and_barriers_order_an_out_of_order_buffer,
    another_queue_keeps_the_recorded_order,
    errors,
    mutable_dispatches_take_updates_between_enqueues,
    arguments_may_wait_for_an_update,
    updates_are_checked_and_all_or_nothing,
    recorded_kernels_enqueue_on_the_device,
);

const SRC: &str = "kernel void add(global uint *p, uint v) { p[get_global_id(0)] += v; }\n\
                   kernel void twice(global uint *p) { p[get_global_id(0)] *= 2u; }";

const N: usize = 64;

/// A kernel command to record: the kernel, its sizes (one entry per
/// dimension; offset and local size may be empty) and properties.
struct Dispatch<'a> {
    kernel: cl_kernel,
    offset: &'a [usize],
    global: &'a [usize],
    local: &'a [usize],
    properties: &'a [cl_command_properties_khr],
    waits: &'a [cl_sync_point_khr],
}

impl Dispatch<'_> {
    /// `kernel` over N work-items.
    fn of(kernel: cl_kernel) -> Dispatch<'static> {
        Dispatch {
            kernel,
            offset: &[],
            global: &[N],
            local: &[],
            properties: &[],
            waits: &[],
        }
    }
}

/// A null pointer for an empty list.
fn ptr_or_null<T>(v: &[T]) -> *const T {
    if v.is_empty() { null() } else { v.as_ptr() }
}

/// An update of a mutable dispatch's arguments and sizes (empty: not
/// changed).
fn config(
    command: cl_mutable_command_khr,
    args: &[cl_mutable_dispatch_arg_khr],
    global: &[usize],
    offset: &[usize],
) -> cl_mutable_dispatch_config_khr {
    cl_mutable_dispatch_config_khr {
        command,
        num_args: args.len() as cl_uint,
        num_svm_args: 0,
        num_exec_infos: 0,
        work_dim: 0,
        arg_list: ptr_or_null(args),
        arg_svm_list: null(),
        exec_info_list: null(),
        global_work_offset: ptr_or_null(offset),
        global_work_size: ptr_or_null(global),
        local_work_size: null(),
    }
}

/// A kernel argument update of `value`.
fn arg_of<T>(index: u32, value: &T) -> cl_mutable_dispatch_arg_khr {
    cl_mutable_dispatch_arg_khr {
        arg_index: index,
        arg_size: std::mem::size_of::<T>(),
        arg_value: (value as *const T).cast(),
    }
}

impl CommandBufferApi {
    fn buffer_for(&self, q: cl_command_queue) -> cl_command_buffer_khr {
        self.buffer_with(q, &[])
    }

    /// A command buffer for `q` whose kernel commands may be updated.
    fn mutable_buffer_for(&self, q: cl_command_queue) -> cl_command_buffer_khr {
        self.buffer_with(
            q,
            &[CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_MUTABLE_KHR],
        )
    }

    /// A command buffer for `q` with the properties `props` (without the
    /// terminating 0).
    fn buffer_with(
        &self,
        q: cl_command_queue,
        props: &[cl_command_buffer_properties_khr],
    ) -> cl_command_buffer_khr {
        let list: Vec<_> = props.iter().copied().chain([0]).collect();
        let mut err = 1;
        let b = unsafe { (self.create)(1, &q, list.as_ptr(), &mut err) };
        assert_eq!(err, CL_SUCCESS);
        b
    }

    /// clCommandNDRangeKernelKHR of `d` on `b`'s own queue: gives the
    /// result, with the sync point and, where `handle` is given, the
    /// mutable-dispatch handle.
    fn record(
        &self,
        b: cl_command_buffer_khr,
        d: &Dispatch,
        handle: Option<&mut cl_mutable_command_khr>,
    ) -> (cl_int, cl_sync_point_khr) {
        let props: Vec<_> = if d.properties.is_empty() {
            Vec::new()
        } else {
            d.properties.iter().copied().chain([0]).collect()
        };
        let mut point = 0;
        let r = unsafe {
            (self.ndrange)(
                b,
                null_mut(),
                ptr_or_null(&props),
                d.kernel,
                d.global.len() as cl_uint,
                ptr_or_null(d.offset),
                d.global.as_ptr(),
                ptr_or_null(d.local),
                d.waits.len() as cl_uint,
                ptr_or_null(d.waits),
                &mut point,
                handle.map_or(null_mut(), |h| h as *mut _),
            )
        };
        (r, point)
    }

    /// Records `k` over N items after `waits`; gives its sync point.
    fn kernel(
        &self,
        b: cl_command_buffer_khr,
        k: cl_kernel,
        waits: &[cl_sync_point_khr],
    ) -> cl_sync_point_khr {
        let (r, point) = self.record(
            b,
            &Dispatch {
                waits,
                ..Dispatch::of(k)
            },
            None,
        );
        assert_eq!(r, CL_SUCCESS, "clCommandNDRangeKernelKHR");
        point
    }

    /// Records `d` as a mutable dispatch; gives its handle.
    fn mutable(&self, b: cl_command_buffer_khr, d: &Dispatch) -> cl_mutable_command_khr {
        let mut handle = null_mut();
        let (r, _) = self.record(b, d, Some(&mut handle));
        assert_eq!(r, CL_SUCCESS, "clCommandNDRangeKernelKHR");
        assert!(!handle.is_null());
        handle
    }

    /// clUpdateMutableCommandsKHR of `configs`.
    fn update(
        &self,
        b: cl_command_buffer_khr,
        configs: &[cl_mutable_dispatch_config_khr],
    ) -> cl_int {
        let types = vec![CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR; configs.len()];
        let mut list: Vec<*const c_void> = configs
            .iter()
            .map(|c| (c as *const cl_mutable_dispatch_config_khr).cast())
            .collect();
        unsafe {
            (self.update)(
                b,
                configs.len() as cl_uint,
                ptr_or_null(&types),
                if list.is_empty() {
                    null_mut()
                } else {
                    list.as_mut_ptr()
                },
            )
        }
    }

    fn command_info(
        &self,
        m: cl_mutable_command_khr,
        param: cl_mutable_command_info_khr,
    ) -> Vec<u8> {
        query(|n, v, r| unsafe { (self.command_info)(m, param, n, v, r) }).unwrap()
    }

    fn fill(&self, b: cl_command_buffer_khr, m: cl_mem, value: u32) -> cl_sync_point_khr {
        let mut point = 0;
        let r = unsafe {
            (self.fill)(
                b,
                null_mut(),
                null(),
                m,
                (&value as *const u32).cast(),
                4,
                0,
                N * 4,
                0,
                null(),
                &mut point,
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "clCommandFillBufferKHR");
        point
    }

    fn copy(
        &self,
        b: cl_command_buffer_khr,
        src: cl_mem,
        dst: cl_mem,
        waits: &[cl_sync_point_khr],
    ) {
        let r = unsafe {
            (self.copy)(
                b,
                null_mut(),
                null(),
                src,
                dst,
                0,
                0,
                N * 4,
                waits.len() as cl_uint,
                if waits.is_empty() {
                    null()
                } else {
                    waits.as_ptr()
                },
                null_mut(),
                null_mut(),
            )
        };
        assert_eq!(r, CL_SUCCESS, "clCommandCopyBufferKHR");
    }

    fn run(&self, b: cl_command_buffer_khr, event: *mut cl_event) {
        let r = unsafe { (self.enqueue)(0, null_mut(), b, 0, null(), event) };
        assert_eq!(r, CL_SUCCESS, "clEnqueueCommandBufferKHR");
    }

    fn info_u32(&self, b: cl_command_buffer_khr, param: cl_command_buffer_info_khr) -> u32 {
        let mut v = 0u32;
        let r = unsafe { (self.info)(b, param, 4, (&mut v as *mut u32).cast(), null_mut()) };
        assert_eq!(r, CL_SUCCESS);
        v
    }
}

fn offered_and_queried(cl: &Cl) {
    let d = cl.device();
    let ext = c_string(&cl.device_bytes(d, CL_DEVICE_EXTENSIONS).unwrap());
    assert!(ext.contains("cl_khr_command_buffer"), "{}: {ext}", cl.how);
    let caps = cl
        .device_bytes(d, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR)
        .unwrap();
    assert_eq!(
        u64::from_ne_bytes(caps.try_into().unwrap()),
        CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR
            | CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR
            | CL_COMMAND_BUFFER_CAPABILITY_DEVICE_SIDE_ENQUEUE_KHR
    );
    assert!(
        ext.contains("cl_khr_command_buffer_mutable_dispatch"),
        "{}: {ext}",
        cl.how
    );
    let fields = cl
        .device_bytes(d, CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR)
        .unwrap();
    assert_eq!(u64::from_ne_bytes(fields.try_into().unwrap()), 0x1f);
    let required = cl
        .device_bytes(d, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR)
        .unwrap();
    assert_eq!(u64::from_ne_bytes(required.try_into().unwrap()), 0);
    let cb = CommandBufferApi::new(cl);
    let s = Setup::new(cl);
    let b = cb.buffer_for(s.q);
    assert_eq!(
        cb.info_u32(b, CL_COMMAND_BUFFER_STATE_KHR),
        CL_COMMAND_BUFFER_STATE_RECORDING_KHR
    );
    assert_eq!(cb.info_u32(b, CL_COMMAND_BUFFER_NUM_QUEUES_KHR), 1);
    assert_eq!(cb.info_u32(b, CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR), 1);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    assert_eq!(
        cb.info_u32(b, CL_COMMAND_BUFFER_STATE_KHR),
        CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR
    );
    unsafe { (cb.release)(b) };
}

/// Each enqueue runs every command again, with the kernel argument set
/// when the command was recorded, not the one set since.
fn replays_run_with_the_arguments_recorded(cl: &Cl) {
    let cb = CommandBufferApi::new(cl);
    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "add", "");
    let (p, out) = (s.zeroed(N * 4), s.zeroed(N * 4));
    s.arg(k, 0, &p);
    s.arg(k, 1, &5u32);
    let b = cb.buffer_for(s.q);
    cb.kernel(b, k, &[]);
    cb.copy(b, p, out, &[]);
    s.arg(k, 1, &1000u32);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    let mut events = [null_mut(); 3];
    for e in &mut events {
        cb.run(b, e);
    }
    assert_eq!(s.words(out, N), vec![15; N], "{}", cl.how);
    for e in events {
        let ty = query(|n, v, r| unsafe {
            cl.clGetEventInfo.unwrap()(e, CL_EVENT_COMMAND_TYPE, n, v, r)
        })
        .unwrap();
        assert_eq!(u32_of(&ty), CL_COMMAND_COMMAND_BUFFER_KHR);
        assert_eq!(cl.event_status(e), CL_COMPLETE);
        unsafe { cl.clReleaseEvent.unwrap()(e) };
    }
    unsafe { (cb.release)(b) };
}

const ENQUEUES: &str = "kernel void parent(global uint *p) {\n\
    size_t i = get_global_id(0);\n\
    enqueue_kernel(get_default_queue(), CLK_ENQUEUE_FLAGS_WAIT_KERNEL, ndrange_1D(2),\n\
                   ^{ atomic_add(&p[i], (uint)get_global_id(0) + 1u); });\n\
}";

/// A recorded kernel that enqueues on the device
/// (`CL_COMMAND_BUFFER_CAPABILITY_DEVICE_SIDE_ENQUEUE_KHR`): each replay
/// runs its blocks, the next command after them.
fn recorded_kernels_enqueue_on_the_device(cl: &Cl) {
    let cb = CommandBufferApi::new(cl);
    let mut s = Setup::new(cl);
    let props = [
        CL_QUEUE_PROPERTIES as cl_queue_properties,
        CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_ON_DEVICE | CL_QUEUE_ON_DEVICE_DEFAULT,
        0,
    ];
    let mut err = 1;
    let dq = unsafe {
        cl.clCreateCommandQueueWithProperties.unwrap()(s.c, cl.device(), props.as_ptr(), &mut err)
    };
    assert_eq!(err, CL_SUCCESS, "default device queue");
    let k = s.kernel(ENQUEUES, "parent", "-cl-std=CL3.0");
    let (p, out) = (s.zeroed(N * 4), s.zeroed(N * 4));
    s.arg(k, 0, &p);
    let b = cb.buffer_for(s.q);
    cb.kernel(b, k, &[]);
    cb.copy(b, p, out, &[]);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    for round in 1..=3u32 {
        let mut e = null_mut();
        cb.run(b, &mut e);
        assert_eq!(
            s.words(out, N),
            vec![3 * round; N],
            "{} round {round}",
            cl.how
        );
        assert_eq!(cl.event_status(e), CL_COMPLETE);
        unsafe { cl.clReleaseEvent.unwrap()(e) };
    }
    unsafe {
        (cb.release)(b);
        cl.clReleaseCommandQueue.unwrap()(dq);
    }
}

/// On an out-of-order queue the commands of a buffer run in the order
/// their sync points and barriers give.
fn sync_points_and_barriers_order_an_out_of_order_buffer(cl: &Cl) {
    let cb = CommandBufferApi::new(cl);
    let mut s = Setup::new(cl);
    let q = cl.queue(s.c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    let add = s.kernel(SRC, "add", "");
    let twice = s.kernel(SRC, "twice", "");
    let (p, out) = (s.zeroed(N * 4), s.zeroed(N * 4));
    s.arg(add, 0, &p);
    s.arg(add, 1, &3u32);
    s.arg(twice, 0, &p);
    let b = cb.buffer_for(q);
    // ((7 + 3) * 2), then copied: each step waits for the one before.
    let filled = cb.fill(b, p, 7);
    let added = cb.kernel(b, add, &[filled]);
    cb.kernel(b, twice, &[added]);
    let r = unsafe { (cb.barrier)(b, null_mut(), null(), 0, null(), null_mut(), null_mut()) };
    assert_eq!(r, CL_SUCCESS);
    cb.copy(b, p, out, &[]);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    let mut e = null_mut();
    let r = unsafe { (cb.enqueue)(0, null_mut(), b, 0, null(), &mut e) };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(unsafe { cl.clWaitForEvents.unwrap()(1, &e) }, CL_SUCCESS);
    assert_eq!(s.words(out, N), vec![20; N], "{}", cl.how);
    unsafe {
        cl.clReleaseEvent.unwrap()(e);
        (cb.release)(b);
        cl.clReleaseCommandQueue.unwrap()(q);
    }
}

/// A buffer recorded for an in-order queue, enqueued on an out-of-order
/// queue of the same device, still runs its commands one after another.
fn another_queue_keeps_the_recorded_order(cl: &Cl) {
    let cb = CommandBufferApi::new(cl);
    let mut s = Setup::new(cl);
    let ooo = cl.queue(s.c, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    let add = s.kernel(SRC, "add", "");
    let twice = s.kernel(SRC, "twice", "");
    let (p, out) = (s.zeroed(N * 4), s.zeroed(N * 4));
    s.arg(add, 0, &p);
    s.arg(add, 1, &1u32);
    s.arg(twice, 0, &p);
    let b = cb.buffer_for(s.q);
    cb.fill(b, p, 4);
    cb.kernel(b, twice, &[]);
    cb.kernel(b, add, &[]);
    cb.copy(b, p, out, &[]);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    let mut queues = [ooo];
    let r = unsafe { (cb.enqueue)(1, queues.as_mut_ptr(), b, 0, null(), null_mut()) };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(unsafe { cl.clFinish.unwrap()(ooo) }, CL_SUCCESS);
    assert_eq!(s.words(out, N), vec![9; N], "{}", cl.how);
    unsafe {
        (cb.release)(b);
        cl.clReleaseCommandQueue.unwrap()(ooo);
    }
}

fn errors(cl: &Cl) {
    let cb = CommandBufferApi::new(cl);
    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "twice", "");
    let p = s.zeroed(N * 4);
    s.arg(k, 0, &p);
    let mut err = 1;
    // One queue, named.
    assert!(unsafe { (cb.create)(0, null(), null(), &mut err) }.is_null());
    assert_eq!(err, CL_INVALID_VALUE);
    let two = [s.q, s.q];
    assert!(unsafe { (cb.create)(2, two.as_ptr(), null(), &mut err) }.is_null());
    assert_eq!(err, CL_INVALID_VALUE);
    let bad_props = [CL_COMMAND_BUFFER_FLAGS_KHR, 1 << 5, 0];
    assert!(unsafe { (cb.create)(1, &s.q, bad_props.as_ptr(), &mut err) }.is_null());
    assert_eq!(err, CL_INVALID_VALUE);
    let b = cb.buffer_for(s.q);
    // Not executable yet.
    assert_eq!(
        unsafe { (cb.enqueue)(0, null_mut(), b, 0, null(), null_mut()) },
        CL_INVALID_OPERATION
    );
    // A queue of its own.
    let r = unsafe {
        (cb.ndrange)(
            b,
            s.q,
            null(),
            k,
            1,
            null(),
            &N,
            null(),
            0,
            null(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_COMMAND_QUEUE);
    // An unknown sync point.
    let later = Dispatch {
        waits: &[7],
        ..Dispatch::of(k)
    };
    assert_eq!(
        cb.record(b, &later, None).0,
        CL_INVALID_SYNC_POINT_WAIT_LIST_KHR
    );
    // A list without entries.
    let r = unsafe {
        (cb.ndrange)(
            b,
            null_mut(),
            null(),
            k,
            1,
            null(),
            &N,
            null(),
            1,
            null(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(r, CL_INVALID_SYNC_POINT_WAIT_LIST_KHR);
    // The enqueue's own checks apply.
    let four = Dispatch {
        global: &[N, 1, 1, 1],
        ..Dispatch::of(k)
    };
    assert_eq!(cb.record(b, &four, None).0, CL_INVALID_WORK_DIMENSION);
    // Properties vkcl does not know.
    let unknown = Dispatch {
        properties: &[CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR, 1 << 20],
        ..Dispatch::of(k)
    };
    assert_eq!(cb.record(b, &unknown, None).0, CL_INVALID_VALUE);
    // Only kernel commands have mutable handles.
    let mut handle = null_mut();
    let value = 0u32;
    let r = unsafe {
        (cb.fill)(
            b,
            null_mut(),
            null(),
            p,
            (&value as *const u32).cast(),
            4,
            0,
            N * 4,
            0,
            null(),
            null_mut(),
            &mut handle,
        )
    };
    assert_eq!(r, CL_INVALID_VALUE);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    // Nothing more once finalized, and finalized once.
    assert_eq!(cb.record(b, &Dispatch::of(k), None).0, CL_INVALID_OPERATION);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_INVALID_OPERATION);
    assert_eq!(
        unsafe { (cb.finalize)(null_mut()) },
        CL_INVALID_COMMAND_BUFFER_KHR
    );
    unsafe { (cb.release)(b) };
}

/// Recorded with a handle, a kernel command runs with the arguments and
/// sizes of the latest update at each enqueue; the kernel it was recorded
/// from keeps its own arguments.
fn mutable_dispatches_take_updates_between_enqueues(cl: &Cl) {
    let cb = CommandBufferApi::new(cl);
    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "add", "");
    let (a, other) = (s.zeroed(N * 4), s.zeroed(N * 4));
    s.arg(k, 0, &a);
    s.arg(k, 1, &5u32);
    let b = cb.mutable_buffer_for(s.q);
    let m = cb.mutable(b, &Dispatch::of(k));
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    cb.run(b, null_mut());
    assert_eq!(s.words(a, N), vec![5; N], "{}", cl.how);
    // Another buffer, another value, half the items.
    let seven = 7u32;
    let args = [arg_of(0, &other), arg_of(1, &seven)];
    assert_eq!(cb.update(b, &[config(m, &args, &[N / 2], &[])]), CL_SUCCESS);
    cb.run(b, null_mut());
    let mut want = vec![7; N / 2];
    want.resize(N, 0);
    assert_eq!(s.words(other, N), want, "{}", cl.how);
    // The other half, by the offset alone.
    assert_eq!(cb.update(b, &[config(m, &[], &[], &[N / 2])]), CL_SUCCESS);
    cb.run(b, null_mut());
    assert_eq!(s.words(other, N), vec![7; N], "{}", cl.how);
    assert_eq!(s.words(a, N), vec![5; N], "{}", cl.how);
    // The kernel object still adds 5 to the first buffer.
    let r = unsafe {
        cl.clEnqueueNDRangeKernel.unwrap()(s.q, k, 1, null(), &N, null(), 0, null(), null_mut())
    };
    assert_eq!(r, CL_SUCCESS);
    assert_eq!(s.words(a, N), vec![10; N], "{}", cl.how);
    // The command as it stands.
    let words = |param| -> Vec<usize> {
        cb.command_info(m, param)
            .chunks_exact(8)
            .map(|c| usize::from_ne_bytes(c.try_into().unwrap()))
            .collect()
    };
    assert_eq!(words(CL_MUTABLE_DISPATCH_GLOBAL_WORK_SIZE_KHR), [N / 2]);
    assert_eq!(words(CL_MUTABLE_DISPATCH_GLOBAL_WORK_OFFSET_KHR), [N / 2]);
    assert_eq!(words(CL_MUTABLE_DISPATCH_LOCAL_WORK_SIZE_KHR), [0]);
    assert_eq!(words(CL_MUTABLE_DISPATCH_KERNEL_KHR), [k as usize]);
    assert_eq!(words(CL_MUTABLE_COMMAND_COMMAND_BUFFER_KHR), [b as usize]);
    assert_eq!(words(CL_MUTABLE_COMMAND_COMMAND_QUEUE_KHR), [s.q as usize]);
    assert_eq!(
        u32_of(&cb.command_info(m, CL_MUTABLE_DISPATCH_DIMENSIONS_KHR)),
        1
    );
    assert_eq!(
        u32_of(&cb.command_info(m, CL_MUTABLE_COMMAND_COMMAND_TYPE_KHR)),
        CL_COMMAND_NDRANGE_KERNEL
    );
    assert!(
        cb.command_info(m, CL_MUTABLE_COMMAND_PROPERTIES_ARRAY_KHR)
            .is_empty()
    );
    unsafe { (cb.release)(b) };
}

/// A command recorded with updatable arguments may leave some unset: the
/// buffer is then finalized but not executable until an update sets them.
fn arguments_may_wait_for_an_update(cl: &Cl) {
    let cb = CommandBufferApi::new(cl);
    let mut s = Setup::new(cl);
    let k = s.kernel(SRC, "add", "");
    let p = s.zeroed(N * 4);
    s.arg(k, 0, &p);
    let b = cb.mutable_buffer_for(s.q);
    assert_eq!(
        cb.record(b, &Dispatch::of(k), None).0,
        CL_INVALID_KERNEL_ARGS
    );
    let later = Dispatch {
        properties: &[
            CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR,
            CL_MUTABLE_DISPATCH_ARGUMENTS_KHR,
        ],
        ..Dispatch::of(k)
    };
    let m = cb.mutable(b, &later);
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    assert_eq!(
        cb.info_u32(b, CL_COMMAND_BUFFER_STATE_KHR),
        CL_COMMAND_BUFFER_STATE_FINALIZED_KHR
    );
    assert_eq!(
        unsafe { (cb.enqueue)(0, null_mut(), b, 0, null(), null_mut()) },
        CL_INVALID_OPERATION
    );
    let three = 3u32;
    assert_eq!(
        cb.update(b, &[config(m, &[arg_of(1, &three)], &[], &[])]),
        CL_SUCCESS
    );
    assert_eq!(
        cb.info_u32(b, CL_COMMAND_BUFFER_STATE_KHR),
        CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR
    );
    cb.run(b, null_mut());
    cb.run(b, null_mut());
    assert_eq!(s.words(p, N), vec![6; N], "{}", cl.how);
    let props = cb.command_info(m, CL_MUTABLE_COMMAND_PROPERTIES_ARRAY_KHR);
    assert_eq!(props.len(), 3 * 8);
    unsafe { (cb.release)(b) };
}

/// clUpdateMutableCommandsKHR's errors; a call that fails changes no
/// command, not even those its valid configurations name.
fn updates_are_checked_and_all_or_nothing(cl: &Cl) {
    let cb = CommandBufferApi::new(cl);
    let mut s = Setup::new(cl);
    // OpenCL C 3.0: partial work-groups are allowed, but an update may
    // not bring them in.
    let k = s.kernel(SRC, "add", "-cl-std=CL3.0");
    let p = s.zeroed(N * 4);
    s.arg(k, 0, &p);
    s.arg(k, 1, &1u32);
    let b = cb.mutable_buffer_for(s.q);
    let all = cb.mutable(
        b,
        &Dispatch {
            local: &[16],
            ..Dispatch::of(k)
        },
    );
    let args_only = cb.mutable(
        b,
        &Dispatch {
            properties: &[
                CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR,
                CL_MUTABLE_DISPATCH_ARGUMENTS_KHR,
            ],
            ..Dispatch::of(k)
        },
    );
    let ten = 10u32;
    let set_ten = [arg_of(1, &ten)];
    // Not before finalization.
    assert_eq!(
        cb.update(b, &[config(all, &set_ten, &[], &[])]),
        CL_INVALID_OPERATION
    );
    assert_eq!(unsafe { (cb.finalize)(b) }, CL_SUCCESS);
    // A size the command may not change.
    assert_eq!(
        cb.update(b, &[config(args_only, &[], &[N / 2], &[])]),
        CL_INVALID_OPERATION
    );
    // Another number of dimensions.
    let mut two_d = config(all, &[], &[], &[]);
    two_d.work_dim = 2;
    assert_eq!(cb.update(b, &[two_d]), CL_INVALID_OPERATION);
    // Work-groups that would no longer all be full.
    assert_eq!(
        cb.update(b, &[config(all, &[], &[N - 8], &[])]),
        CL_INVALID_OPERATION
    );
    // An unknown configuration type, a null configuration.
    let c = config(all, &set_ten, &[], &[]);
    let mut list = [(&c as *const cl_mutable_dispatch_config_khr).cast::<c_void>()];
    let r = unsafe { (cb.update)(b, 1, &7, list.as_mut_ptr()) };
    assert_eq!(r, CL_INVALID_VALUE);
    let mut none = [null::<c_void>()];
    let kind = CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR;
    assert_eq!(
        unsafe { (cb.update)(b, 1, &kind, none.as_mut_ptr()) },
        CL_INVALID_VALUE
    );
    assert_eq!(
        unsafe { (cb.update)(b, 1, null(), list.as_mut_ptr()) },
        CL_INVALID_VALUE
    );
    // A command of another buffer.
    let other = cb.mutable_buffer_for(s.q);
    let foreign = cb.mutable(other, &Dispatch::of(k));
    assert_eq!(unsafe { (cb.finalize)(other) }, CL_SUCCESS);
    assert_eq!(
        cb.update(b, &[config(foreign, &set_ten, &[], &[])]),
        CL_INVALID_MUTABLE_COMMAND_KHR
    );
    // A bad argument in the second configuration: the first is not kept.
    let bad = [arg_of(5, &ten)];
    let r = cb.update(
        b,
        &[
            config(all, &set_ten, &[], &[]),
            config(args_only, &bad, &[], &[]),
        ],
    );
    assert_eq!(r, CL_INVALID_ARG_INDEX);
    cb.run(b, null_mut());
    assert_eq!(s.words(p, N), vec![2; N], "{}", cl.how);
    // Updates of a buffer that was not made mutable.
    let fixed = cb.buffer_for(s.q);
    let m = cb.mutable(fixed, &Dispatch::of(k));
    assert_eq!(unsafe { (cb.finalize)(fixed) }, CL_SUCCESS);
    assert_eq!(
        cb.update(fixed, &[config(m, &set_ten, &[], &[])]),
        CL_INVALID_OPERATION
    );
    unsafe {
        (cb.release)(fixed);
        (cb.release)(other);
        (cb.release)(b);
    }
}
