//! Program entry points: creation from source, IL and binaries; build,
//! compile and link; program and build queries.

use std::ffi::{CStr, c_char, c_void};
use std::sync::Arc;

use opencl_sys::*;

use crate::api::util::*;
use crate::compiler::frontend::Purpose;
use crate::compiler::spirv::p3_interface::module_data;
use crate::core::context::Context;
use crate::core::device::Device;
use crate::core::error::{ClError, ClResult, err};
use crate::core::object::Handle;
use crate::core::program::{self, Build, Origin, Program, decode_binary, encode_binary};

type BuildNotify = Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>;

/// A callback and its data, carried to the thread that runs the build.
struct Notify(unsafe extern "C" fn(cl_program, *mut c_void), usize);

fn notify(pfn: BuildNotify, user_data: *mut c_void) -> ClResult<Option<Notify>> {
    match pfn {
        None if !user_data.is_null() => err(CL_INVALID_VALUE),
        None => Ok(None),
        Some(f) => Ok(Some(Notify(f, user_data as usize))),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateProgramWithSource(
    context: cl_context,
    count: cl_uint,
    strings: *mut *const c_char,
    lengths: *const usize,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let create = || {
        let c = Handle::<Context>::from_raw(context)?;
        if count == 0 || strings.is_null() {
            return err(CL_INVALID_VALUE);
        }
        let mut source = Vec::new();
        for i in 0..count as usize {
            // SAFETY: `count` string pointers, per the specification.
            let s = unsafe { *strings.add(i) };
            if s.is_null() {
                return err(CL_INVALID_VALUE);
            }
            // SAFETY: lengths is null or has `count` entries.
            let len = if lengths.is_null() {
                0
            } else {
                unsafe { *lengths.add(i) }
            };
            if len == 0 {
                // SAFETY: a NUL-terminated string.
                source.extend_from_slice(unsafe { CStr::from_ptr(s) }.to_bytes());
            } else {
                // SAFETY: `len` bytes, per the specification.
                source
                    .extend_from_slice(unsafe { std::slice::from_raw_parts(s.cast::<u8>(), len) });
            }
        }
        let text = String::from_utf8_lossy(&source).into_owned();
        let devices = c.devices.clone();
        Ok(Handle::into_api(Program::new(
            c,
            devices,
            Origin::Source(text),
            Vec::new(),
        )))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateProgramWithSource", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateProgramWithIL(
    context: cl_context,
    il: *const c_void,
    length: usize,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let create = || {
        let c = Handle::<Context>::from_raw(context)?;
        if il.is_null() || length == 0 {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: `length` readable bytes, per the specification.
        let bytes = unsafe { std::slice::from_raw_parts(il.cast::<u8>(), length) }.to_vec();
        program::check_il(&bytes)?;
        let devices = c.devices.clone();
        Ok(Handle::into_api(Program::new(
            c,
            devices,
            Origin::Il(bytes),
            Vec::new(),
        )))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateProgramWithIL", errcode_ret, create) }
}

/// The devices a call names, all of `available`; none named means all.
fn device_list(
    available: &[Arc<Handle<Device>>],
    num: cl_uint,
    list: *const cl_device_id,
) -> ClResult<Vec<usize>> {
    if (num == 0) != list.is_null() {
        return err(CL_INVALID_VALUE);
    }
    if num == 0 {
        return Ok((0..available.len()).collect());
    }
    // SAFETY: `num` handles, per the specification.
    let ids = unsafe { slice_in(list, num as usize)? };
    let mut out = Vec::new();
    for &id in ids {
        let d = Handle::<Device>::from_raw(id)?;
        let i = available
            .iter()
            .position(|x| Arc::ptr_eq(x, &d))
            .ok_or(ClError(CL_INVALID_DEVICE))?;
        if !out.contains(&i) {
            out.push(i);
        }
    }
    Ok(out)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateProgramWithBinary(
    context: cl_context,
    num_devices: cl_uint,
    device_list_ptr: *const cl_device_id,
    lengths: *const usize,
    binaries: *mut *const u8,
    binary_status: *mut cl_int,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let create = || {
        let c = Handle::<Context>::from_raw(context)?;
        if num_devices == 0 || device_list_ptr.is_null() || lengths.is_null() || binaries.is_null()
        {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: `num_devices` handles, per the specification.
        let ids = unsafe { slice_in(device_list_ptr, num_devices as usize)? };
        let mut devices = Vec::new();
        for &id in ids {
            let d = Handle::<Device>::from_raw(id)?;
            if !c.has_device(&d) {
                return err(CL_INVALID_DEVICE);
            }
            devices.push(d);
        }
        // Entry `i` of binary_status, which may be null.
        let set_status = |i: usize, status: cl_int| {
            if !binary_status.is_null() {
                // SAFETY: non-null, with num_devices entries per the specification.
                unsafe { binary_status.add(i).write(status) };
            }
        };
        let mut builds = Vec::new();
        let mut bad = false;
        for (i, device) in devices.iter().enumerate() {
            // SAFETY: `num_devices` entries in both arrays.
            let (len, ptr) = unsafe { (*lengths.add(i), *binaries.add(i)) };
            if len == 0 || ptr.is_null() {
                set_status(i, CL_INVALID_VALUE);
                return err(CL_INVALID_VALUE);
            }
            // SAFETY: `len` readable bytes.
            let data = unsafe { std::slice::from_raw_parts(ptr, len) };
            // A binary suits a device when the device has all its module
            // asks for (made on another machine, it may ask for more).
            let suited = decode_binary(data).filter(|b| {
                let unmet = b
                    .spirv
                    .as_ref()
                    .map_or_else(Vec::new, |w| device.unmet_needs(w));
                if !unmet.is_empty() {
                    log::warn!(
                        target: "vkcl::program",
                        "a program binary needs {}, which {} lacks",
                        unmet.join(", "),
                        device.name()
                    );
                }
                unmet.is_empty()
            });
            let (build, status) = match suited {
                Some(b) => (b, CL_SUCCESS),
                None => {
                    bad = true;
                    (Build::default(), CL_INVALID_BINARY)
                }
            };
            set_status(i, status);
            builds.push(build);
        }
        if bad {
            return err(CL_INVALID_BINARY);
        }
        Ok(Handle::into_api(Program::new(
            c,
            devices,
            Origin::Binary,
            builds,
        )))
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateProgramWithBinary", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCreateProgramWithBuiltInKernels(
    context: cl_context,
    num_devices: cl_uint,
    device_list_ptr: *const cl_device_id,
    kernel_names: *const c_char,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let create = || -> ClResult<cl_program> {
        let c = Handle::<Context>::from_raw(context)?;
        if num_devices == 0 || device_list_ptr.is_null() || kernel_names.is_null() {
            return err(CL_INVALID_VALUE);
        }
        device_list(&c.devices, num_devices, device_list_ptr)?;
        // No device has built-in kernels (CL_DEVICE_BUILT_IN_KERNELS is empty).
        err(CL_INVALID_VALUE)
    };
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { api_create("clCreateProgramWithBuiltInKernels", errcode_ret, create) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clRetainProgram(program: cl_program) -> cl_int {
    api_call("clRetainProgram", || {
        Handle::<Program>::from_raw(program)?.retain()
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clReleaseProgram(program: cl_program) -> cl_int {
    api_call("clReleaseProgram", || {
        Handle::release(Handle::<Program>::from_raw(program)?)
    })
}

/// Options text of a call (null means none).
fn options_of(options: *const c_char) -> String {
    if options.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated string, per the specification.
        unsafe { CStr::from_ptr(options) }
            .to_string_lossy()
            .into_owned()
    }
}

/// Runs a build now, or on another thread when the application gave a
/// callback, which then runs when the build is done.
fn run_maybe_async(
    p: Arc<Handle<Program>>,
    targets: Vec<usize>,
    notify: Option<Notify>,
    work: impl FnOnce(&Program, &[usize]) -> cl_int + Send + 'static,
) -> ClResult<()> {
    p.begin(&targets)?;
    match notify {
        None => {
            let code = work(&p, &targets);
            if code == CL_SUCCESS {
                Ok(())
            } else {
                err(code)
            }
        }
        Some(Notify(f, data)) => {
            std::thread::Builder::new()
                .name("vkcl-build".into())
                .spawn(move || {
                    work(&p, &targets);
                    // SAFETY: the application's callback for this program.
                    unsafe { f(Handle::as_raw(&p), data as *mut c_void) };
                })
                .map_err(|_| ClError(CL_OUT_OF_HOST_MEMORY))?;
            Ok(())
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clBuildProgram(
    program: cl_program,
    num_devices: cl_uint,
    device_list_ptr: *const cl_device_id,
    options: *const c_char,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
) -> cl_int {
    api_call("clBuildProgram", || {
        let p = Handle::<Program>::from_raw(program)?;
        let targets = device_list(&p.devices, num_devices, device_list_ptr)?;
        let notify = notify(pfn_notify, user_data)?;
        if p.has_kernels() {
            return err(CL_INVALID_OPERATION);
        }
        if matches!(p.origin, Origin::Source(_)) && !program::compiler_available() {
            return err(CL_COMPILER_NOT_AVAILABLE);
        }
        let text = options_of(options);
        run_maybe_async(p, targets, notify, move |p, t| {
            p.run_build(t, &text, Purpose::Build, &[])
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clCompileProgram(
    program: cl_program,
    num_devices: cl_uint,
    device_list_ptr: *const cl_device_id,
    options: *const c_char,
    num_input_headers: cl_uint,
    input_headers: *const cl_program,
    header_include_names: *mut *const c_char,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
) -> cl_int {
    api_call("clCompileProgram", || {
        let p = Handle::<Program>::from_raw(program)?;
        let targets = device_list(&p.devices, num_devices, device_list_ptr)?;
        let notify = notify(pfn_notify, user_data)?;
        if (num_input_headers == 0) != input_headers.is_null()
            || (num_input_headers == 0) != header_include_names.is_null()
        {
            return err(CL_INVALID_VALUE);
        }
        if p.has_kernels() {
            return err(CL_INVALID_OPERATION);
        }
        match p.origin {
            Origin::Source(_) if !program::compiler_available() => {
                return err(CL_COMPILER_NOT_AVAILABLE);
            }
            // IL compiles to an object as it is.
            Origin::Source(_) | Origin::Il(_) => {}
            _ => return err(CL_INVALID_OPERATION),
        }
        let mut headers = Vec::new();
        for i in 0..num_input_headers as usize {
            // SAFETY: `num_input_headers` entries in both arrays.
            let (h, name) = unsafe { (*input_headers.add(i), *header_include_names.add(i)) };
            let hp = Handle::<Program>::from_raw(h)?;
            if name.is_null() {
                return err(CL_INVALID_VALUE);
            }
            // SAFETY: a NUL-terminated string.
            let name = unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned();
            let Origin::Source(text) = &hp.origin else {
                return err(CL_INVALID_OPERATION);
            };
            headers.push((name, text.clone().into_bytes()));
        }
        let text = options_of(options);
        run_maybe_async(p, targets, notify, move |p, t| {
            p.run_build(t, &text, Purpose::Compile, &headers)
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clLinkProgram(
    context: cl_context,
    num_devices: cl_uint,
    device_list_ptr: *const cl_device_id,
    options: *const c_char,
    num_input_programs: cl_uint,
    input_programs: *const cl_program,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_program {
    let mut program: cl_program = std::ptr::null_mut();
    let code = api_call("clLinkProgram", || {
        let c = Handle::<Context>::from_raw(context)?;
        let targets = device_list(&c.devices, num_devices, device_list_ptr)?;
        let notify = notify(pfn_notify, user_data)?;
        if num_input_programs == 0 || input_programs.is_null() {
            return err(CL_INVALID_VALUE);
        }
        if !program::linker_available() {
            return err(CL_LINKER_NOT_AVAILABLE);
        }
        // SAFETY: `num_input_programs` handles, per the specification.
        let raw = unsafe { slice_in(input_programs, num_input_programs as usize)? };
        let inputs = raw
            .iter()
            .map(|&p| Handle::<Program>::from_raw(p))
            .collect::<ClResult<Vec<_>>>()?;
        if inputs.iter().any(|p| !Arc::ptr_eq(&p.context, &c)) {
            return err(CL_INVALID_CONTEXT);
        }
        // For each device, every input holds a compiled object or library
        // for it (it is linked there) or none does (it gets no executable);
        // anything else is invalid, as is a link that reaches no device.
        let mut linked_anywhere = false;
        for &t in &targets {
            let held = inputs
                .iter()
                .filter(|p| program::linkable_build(p, &c.devices[t]).is_some())
                .count();
            if held == inputs.len() {
                linked_anywhere = true;
            } else if held != 0 {
                return err(CL_INVALID_OPERATION);
            }
        }
        if !linked_anywhere {
            return err(CL_INVALID_OPERATION);
        }
        let text = options_of(options);
        crate::compiler::frontend::Options::parse(&text, Purpose::Link)?;
        let devices: Vec<_> = targets.iter().map(|&i| c.devices[i].clone()).collect();
        let out = Program::new(c, devices, Origin::Linked, Vec::new());
        program = Handle::into_api(out.clone());
        let all: Vec<usize> = (0..out.devices.len()).collect();
        run_maybe_async(out, all, notify, move |p, _| p.run_link(&inputs, &text))
    });
    // SAFETY: errcode_ret is null or writable, per the specification.
    unsafe { write_out(errcode_ret, code) };
    // A failed link still returns the program, so its log can be read.
    if code == CL_SUCCESS || code == CL_LINK_PROGRAM_FAILURE {
        program
    } else {
        std::ptr::null_mut()
    }
}

fn program_info(
    p: &Arc<Handle<Program>>,
    param: cl_program_info,
    value: *mut c_void,
    size: usize,
) -> Info {
    let no_executable = || ClError(CL_INVALID_PROGRAM_EXECUTABLE);
    match param {
        CL_PROGRAM_REFERENCE_COUNT => info(p.api_ref_count()),
        CL_PROGRAM_CONTEXT => info(Handle::as_raw::<c_void>(&p.context)),
        CL_PROGRAM_NUM_DEVICES => info(p.devices.len() as cl_uint),
        CL_PROGRAM_DEVICES => info(
            p.devices
                .iter()
                .map(Handle::as_raw::<c_void>)
                .collect::<Vec<_>>(),
        ),
        CL_PROGRAM_SOURCE => info(match &p.origin {
            Origin::Source(s) => s.clone(),
            _ => String::new(),
        }),
        CL_PROGRAM_IL => info(match &p.origin {
            Origin::Il(b) => b.clone(),
            _ => Vec::new(),
        }),
        CL_PROGRAM_BINARY_SIZES => info(
            p.builds()
                .iter()
                .map(|b| encode_binary(b).len())
                .collect::<Vec<usize>>(),
        ),
        CL_PROGRAM_BINARIES => {
            let bins: Vec<Vec<u8>> = p.builds().iter().map(encode_binary).collect();
            let needed = bins.len() * std::mem::size_of::<*mut u8>();
            if !value.is_null() && size >= needed {
                for (i, b) in bins.iter().enumerate() {
                    // SAFETY: the application passes an array of pointers,
                    // each null or large enough for its binary.
                    unsafe {
                        let dst = *(value as *const *mut u8).add(i);
                        if !dst.is_null() {
                            std::ptr::copy_nonoverlapping(b.as_ptr(), dst, b.len());
                        }
                    }
                }
            }
            // The answer is the pointer array as the application gave it.
            if value.is_null() || size < needed {
                return info(vec![0usize; bins.len()]);
            }
            // SAFETY: checked size above.
            info(unsafe { std::slice::from_raw_parts(value as *const usize, bins.len()) }.to_vec())
        }
        CL_PROGRAM_NUM_KERNELS => info(p.application_kernels().ok_or_else(no_executable)?.len()),
        CL_PROGRAM_KERNEL_NAMES => info(
            p.application_kernels()
                .ok_or_else(no_executable)?
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(";"),
        ),
        CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT | CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT => {
            info(false)
        }
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetProgramInfo(
    program: cl_program,
    param_name: cl_program_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetProgramInfo", || {
        let p = Handle::<Program>::from_raw(program)?;
        let answer = program_info(&p, param_name, param_value, param_value_size);
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe { write_info(answer, param_value_size, param_value, param_value_size_ret) }
    })
}

fn build_info(b: &Build, param: cl_program_build_info) -> Info {
    match param {
        CL_PROGRAM_BUILD_STATUS => info(b.status),
        CL_PROGRAM_BUILD_OPTIONS => info(b.options.clone()),
        CL_PROGRAM_BUILD_LOG => info(b.log.clone()),
        CL_PROGRAM_BINARY_TYPE => info(b.binary_type),
        CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE => info(
            b.code()
                .ok()
                .flatten()
                .map_or(0, |w| module_data::global_variable_bytes(&w)) as usize,
        ),
        _ => invalid_param(param),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetProgramBuildInfo(
    program: cl_program,
    device: cl_device_id,
    param_name: cl_program_build_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    api_call("clGetProgramBuildInfo", || {
        let p = Handle::<Program>::from_raw(program)?;
        let d = Handle::<Device>::from_raw(device)?;
        let i = p.device_index(&d).ok_or(ClError(CL_INVALID_DEVICE))?;
        let b = p.build_of(i);
        // SAFETY: the application passes buffers of the sizes it states.
        unsafe {
            write_info(
                build_info(&b, param_name),
                param_value_size,
                param_value,
                param_value_size_ret,
            )
        }
    })
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetProgramReleaseCallback(
    _program: cl_program,
    _pfn_notify: Option<unsafe extern "C" fn(program: cl_program, user_data: *mut c_void)>,
    _user_data: *mut c_void,
) -> cl_int {
    unsupported("clSetProgramReleaseCallback")
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn clSetProgramSpecializationConstant(
    program: cl_program,
    spec_id: cl_uint,
    spec_size: usize,
    spec_value: *const c_void,
) -> cl_int {
    api_call("clSetProgramSpecializationConstant", || {
        let p = Handle::<Program>::from_raw(program)?;
        if spec_value.is_null() || spec_size == 0 {
            return err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes spec_size readable bytes.
        let value = unsafe { std::slice::from_raw_parts(spec_value.cast::<u8>(), spec_size) };
        p.set_spec_constant(spec_id, value)
    })
}
