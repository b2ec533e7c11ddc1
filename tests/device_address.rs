//! cl_ext_buffer_device_address: buffers whose device address the
//! application reads (CL_MEM_DEVICE_PRIVATE_ADDRESS_EXT, CL_MEM_DEVICE_ADDRESS_EXT)
//! and passes to kernels as is, offsets included
//! (clSetKernelArgDevicePointerEXT).

mod common;

use std::ptr::null_mut;

use common::*;
use opencl_sys::*;

both_ways!(address_passed_to_a_kernel, address_queries_and_errors);

const SOURCE: &str = "kernel void add_one(global int *data) { data[get_global_id(0)] += 1; }";

fn buffer_with_address(
    cl: &Cl,
    c: cl_context,
    size: usize,
    value: cl_mem_properties,
) -> (cl_mem, cl_int) {
    let props = [CL_MEM_DEVICE_PRIVATE_ADDRESS_EXT, value, 0];
    let mut err = 0;
    let b = unsafe {
        cl.clCreateBufferWithProperties.unwrap()(
            c,
            props.as_ptr(),
            CL_MEM_READ_WRITE,
            size,
            null_mut(),
            &mut err,
        )
    };
    (b, err)
}

fn address_of(cl: &Cl, b: cl_mem) -> Result<u64, cl_int> {
    query(|size, value, size_ret| unsafe {
        cl.clGetMemObjectInfo.unwrap()(b, CL_MEM_DEVICE_ADDRESS_EXT, size, value, size_ret)
    })
    .map(|v| u64_of(&v))
}

fn address_passed_to_a_kernel(cl: &Cl) {
    let ext = c_string(&cl.device_bytes(cl.device(), CL_DEVICE_EXTENSIONS).unwrap());
    assert!(ext.split(' ').any(|e| e == "cl_ext_buffer_device_address"));
    let mut s = Setup::new(cl);
    let n = 64usize;
    let (b, err) = buffer_with_address(cl, s.c, 4 * n, CL_TRUE as cl_mem_properties);
    assert_eq!(err, CL_SUCCESS);
    let zeros = vec![0u8; 4 * n];
    cl.write(s.q, b, 0, &zeros);
    let address = address_of(cl, b).unwrap();
    assert_ne!(address, 0);
    type SetDevicePointer = unsafe extern "C" fn(cl_kernel, cl_uint, cl_ulong) -> cl_int;
    // SAFETY: the extension's entry point has this signature.
    let set: SetDevicePointer = unsafe { extension_fn(cl, "clSetKernelArgDevicePointerEXT") };
    let k = s.kernel(SOURCE, "add_one", "");
    // The second half, through an address inside the buffer.
    assert_eq!(
        unsafe { set(k, 0, address + 4 * (n as u64 / 2)) },
        CL_SUCCESS
    );
    let list = [address];
    let r = unsafe {
        cl.clSetKernelExecInfo.unwrap()(
            k,
            CL_KERNEL_EXEC_INFO_DEVICE_PTRS_EXT,
            std::mem::size_of_val(&list),
            list.as_ptr().cast(),
        )
    };
    assert_eq!(r, CL_SUCCESS);
    s.run(k, &[n / 2], None, None);
    let got = s.words(b, n);
    let want: Vec<u32> = (0..n).map(|i| u32::from(i >= n / 2)).collect();
    assert_eq!(got, want, "{}", cl.how);
    // A scalar argument takes no address.
    assert_eq!(unsafe { set(k, 1, address) }, CL_INVALID_ARG_INDEX);
    unsafe { cl.clReleaseMemObject.unwrap()(b) };
}

fn address_queries_and_errors(cl: &Cl) {
    let c = cl.context();
    // Without the property the address is not the application's.
    let plain = cl.buffer(c, CL_MEM_READ_WRITE, 64, null_mut());
    assert_eq!(address_of(cl, plain), Err(CL_INVALID_OPERATION));
    let (off, err) = buffer_with_address(cl, c, 64, CL_FALSE as cl_mem_properties);
    assert_eq!(err, CL_SUCCESS);
    assert_eq!(address_of(cl, off), Err(CL_INVALID_OPERATION));
    let (bad, err) = buffer_with_address(cl, c, 64, 7);
    assert!(bad.is_null());
    assert_eq!(err, CL_INVALID_PROPERTY);
    // A sub-buffer's address is its parent's plus its origin.
    let (b, _) = buffer_with_address(cl, c, 4096, CL_TRUE as cl_mem_properties);
    let region = cl_buffer_region {
        origin: 1024,
        size: 256,
    };
    let mut err = 0;
    let sub = unsafe {
        cl.clCreateSubBuffer.unwrap()(
            b,
            CL_MEM_READ_WRITE,
            CL_BUFFER_CREATE_TYPE_REGION,
            (&region as *const cl_buffer_region).cast(),
            &mut err,
        )
    };
    assert_eq!(err, CL_SUCCESS);
    assert_eq!(
        address_of(cl, sub).unwrap(),
        address_of(cl, b).unwrap() + 1024
    );
    unsafe {
        for m in [sub, b, off, plain] {
            cl.clReleaseMemObject.unwrap()(m);
        }
        cl.clReleaseContext.unwrap()(c);
    }
}
