//! Contexts: creation, properties, queries, reference counts and destructor
//! callbacks, through the ICD loader and directly.

mod common;

use std::ffi::c_void;
use std::sync::Mutex;

use common::*;
use opencl_sys::*;

both_ways!(
    create_and_query,
    create_from_type,
    properties_are_checked,
    bad_arguments,
    reference_counts_and_stale_handles,
    destructor_callbacks_run_in_reverse,
    concurrent_contexts,
);

fn create_and_query(cl: &Cl) {
    let d = cl.device();
    let p = cl.platform();
    let props = [CL_CONTEXT_PLATFORM, p as cl_context_properties, 0];
    let devices = [d, d]; // duplicates are ignored
    let mut err = 1;
    let c = unsafe {
        cl.clCreateContext.unwrap()(
            props.as_ptr(),
            2,
            devices.as_ptr(),
            None,
            std::ptr::null_mut(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS);
    assert_eq!(
        u32_of(&cl.context_bytes(c, CL_CONTEXT_NUM_DEVICES).unwrap()),
        1
    );
    assert_eq!(
        usize_of(&cl.context_bytes(c, CL_CONTEXT_DEVICES).unwrap()),
        d as usize
    );
    assert_eq!(
        u32_of(&cl.context_bytes(c, CL_CONTEXT_REFERENCE_COUNT).unwrap()),
        1
    );
    let got = cl.context_bytes(c, CL_CONTEXT_PROPERTIES).unwrap();
    let want: Vec<u8> = props.iter().flat_map(|v| v.to_ne_bytes()).collect();
    assert_eq!(got, want, "the properties come back as passed");
    assert_eq!(cl.context_bytes(c, 0xFFFF), Err(CL_INVALID_VALUE));
    unsafe { assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS) };

    // Without properties, CL_CONTEXT_PROPERTIES is empty.
    let c = cl.context();
    assert_eq!(
        cl.context_bytes(c, CL_CONTEXT_PROPERTIES).unwrap(),
        Vec::<u8>::new()
    );
    unsafe { assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS) };
}

fn create_from_type(cl: &Cl) {
    let p = cl.platform();
    let props = [CL_CONTEXT_PLATFORM, p as cl_context_properties, 0];
    let all = cl.devices(CL_DEVICE_TYPE_ALL).unwrap();
    let mut err = 1;
    let c = unsafe {
        cl.clCreateContextFromType.unwrap()(
            props.as_ptr(),
            CL_DEVICE_TYPE_ALL,
            None,
            std::ptr::null_mut(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS);
    assert_eq!(
        u32_of(&cl.context_bytes(c, CL_CONTEXT_NUM_DEVICES).unwrap()) as usize,
        all.len()
    );
    unsafe { assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS) };

    for ty in [
        CL_DEVICE_TYPE_CPU,
        CL_DEVICE_TYPE_GPU,
        CL_DEVICE_TYPE_ACCELERATOR,
    ] {
        let expected = cl.devices(ty);
        let c = unsafe {
            cl.clCreateContextFromType.unwrap()(
                props.as_ptr(),
                ty,
                None,
                std::ptr::null_mut(),
                &mut err,
            )
        };
        match expected {
            Ok(list) => {
                assert_eq!(err, CL_SUCCESS);
                let n = u32_of(&cl.context_bytes(c, CL_CONTEXT_NUM_DEVICES).unwrap());
                assert_eq!(n as usize, list.len());
                unsafe { assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS) };
            }
            Err(_) => {
                assert!(c.is_null());
                assert_eq!(err, CL_DEVICE_NOT_FOUND);
            }
        }
    }
    let c = unsafe {
        cl.clCreateContextFromType.unwrap()(
            props.as_ptr(),
            1 << 40,
            None,
            std::ptr::null_mut(),
            &mut err,
        )
    };
    assert!(c.is_null());
    assert_eq!(err, CL_INVALID_DEVICE_TYPE);
}

fn create_with(cl: &Cl, props: &[cl_context_properties]) -> cl_int {
    let d = cl.device();
    let mut err = 1;
    let c = unsafe {
        cl.clCreateContext.unwrap()(props.as_ptr(), 1, &d, None, std::ptr::null_mut(), &mut err)
    };
    if err == CL_SUCCESS {
        unsafe { assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS) };
    } else {
        assert!(c.is_null());
    }
    err
}

fn properties_are_checked(cl: &Cl) {
    let p = cl.platform() as cl_context_properties;
    assert_eq!(
        create_with(cl, &[CL_CONTEXT_INTEROP_USER_SYNC, 1, 0]),
        CL_SUCCESS
    );
    assert_eq!(create_with(cl, &[0x7777, 1, 0]), CL_INVALID_PROPERTY);
    assert_eq!(
        create_with(cl, &[CL_CONTEXT_PLATFORM, p, CL_CONTEXT_PLATFORM, p, 0]),
        CL_INVALID_PROPERTY
    );
    // The ICD loader checks CL_CONTEXT_PLATFORM itself before vkcl sees it.
    if cl.how == "direct" {
        let bogus = junk_handle::<c_void>() as cl_context_properties;
        assert_eq!(
            create_with(cl, &[CL_CONTEXT_PLATFORM, bogus, 0]),
            CL_INVALID_PLATFORM
        );
    }
}

fn bad_arguments(cl: &Cl) {
    let d = cl.device();
    let create = cl.clCreateContext.unwrap();
    let mut err = 0;
    unsafe {
        assert!(
            create(
                std::ptr::null(),
                0,
                &d,
                None,
                std::ptr::null_mut(),
                &mut err
            )
            .is_null()
        );
        assert_eq!(err, CL_INVALID_VALUE);
        assert!(
            create(
                std::ptr::null(),
                1,
                std::ptr::null(),
                None,
                std::ptr::null_mut(),
                &mut err
            )
            .is_null()
        );
        assert_eq!(err, CL_INVALID_VALUE);
        let bad: [cl_device_id; 2] = [d, std::ptr::null_mut()];
        assert!(
            create(
                std::ptr::null(),
                2,
                bad.as_ptr(),
                None,
                std::ptr::null_mut(),
                &mut err
            )
            .is_null()
        );
        assert_eq!(err, CL_INVALID_DEVICE);
        // user_data without a callback.
        let mut x = 0u8;
        assert!(
            create(
                std::ptr::null(),
                1,
                &d,
                None,
                (&mut x as *mut u8).cast(),
                &mut err
            )
            .is_null()
        );
        assert_eq!(err, CL_INVALID_VALUE);
        // errcode_ret may be null.
        let c = create(
            std::ptr::null(),
            1,
            &d,
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        assert!(!c.is_null());
        // A device is not a context.
        assert_eq!(
            cl.context_bytes(d.cast(), CL_CONTEXT_NUM_DEVICES),
            Err(CL_INVALID_CONTEXT)
        );
        assert_eq!(
            cl.clRetainContext.unwrap()(std::ptr::null_mut()),
            CL_INVALID_CONTEXT
        );
        assert_eq!(
            cl.clSetContextDestructorCallback.unwrap()(c, None, std::ptr::null_mut()),
            CL_INVALID_VALUE
        );
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
}

fn reference_counts_and_stale_handles(cl: &Cl) {
    let c = cl.context();
    let count = |c| u32_of(&cl.context_bytes(c, CL_CONTEXT_REFERENCE_COUNT).unwrap());
    unsafe {
        assert_eq!(cl.clRetainContext.unwrap()(c), CL_SUCCESS);
        assert_eq!(cl.clRetainContext.unwrap()(c), CL_SUCCESS);
        assert_eq!(count(c), 3);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
        assert_eq!(count(c), 2);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
    if cl.how == "direct" {
        // The context is gone: its handle is stale, and recognised as such.
        // (Through a loader, the loader would read the freed handle first.)
        unsafe {
            assert_eq!(cl.clReleaseContext.unwrap()(c), CL_INVALID_CONTEXT);
            assert_eq!(cl.clRetainContext.unwrap()(c), CL_INVALID_CONTEXT);
        }
        assert_eq!(
            cl.context_bytes(c, CL_CONTEXT_NUM_DEVICES),
            Err(CL_INVALID_CONTEXT)
        );
    }
}

static DESTROYED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_destroy(c: cl_context, user_data: *mut c_void) {
    DESTROYED
        .lock()
        .unwrap()
        .push((c as usize, user_data as usize));
}

fn destructor_callbacks_run_in_reverse(cl: &Cl) {
    let c = cl.context();
    let set = cl.clSetContextDestructorCallback.unwrap();
    // Distinct tags per way of loading, as both run in one process.
    let base = if cl.how == "direct" { 100 } else { 200 };
    unsafe {
        assert_eq!(set(c, Some(on_destroy), base as *mut c_void), CL_SUCCESS);
        assert_eq!(
            set(c, Some(on_destroy), (base + 1) as *mut c_void),
            CL_SUCCESS
        );
        assert_eq!(cl.clRetainContext.unwrap()(c), CL_SUCCESS);
        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
    }
    let mine = || -> Vec<(usize, usize)> {
        DESTROYED
            .lock()
            .unwrap()
            .iter()
            .copied()
            .filter(|&(h, u)| h == c as usize && (base..base + 2).contains(&u))
            .collect()
    };
    assert!(mine().is_empty(), "not destroyed while referenced");
    unsafe { assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS) };
    assert_eq!(mine(), vec![(c as usize, base + 1), (c as usize, base)]);
}

fn concurrent_contexts(cl: &Cl) {
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..50 {
                    let c = cl.context();
                    assert_eq!(
                        u32_of(&cl.context_bytes(c, CL_CONTEXT_NUM_DEVICES).unwrap()),
                        1
                    );
                    unsafe {
                        assert_eq!(cl.clRetainContext.unwrap()(c), CL_SUCCESS);
                        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
                        assert_eq!(cl.clReleaseContext.unwrap()(c), CL_SUCCESS);
                    }
                }
            });
        }
    });
}
