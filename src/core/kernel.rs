//! Kernel objects: one kernel of a built program, with its argument values.

use std::sync::{Arc, Mutex, MutexGuard};

use opencl_sys::*;

use crate::compiler::spirv::reflect::{ArgKind, KernelInfo};
use crate::core::error::{ClError, ClResult, err};
use crate::core::memory::Buffer;
use crate::core::object::{ClObject, Handle};
use crate::core::program::Program;

/// The value set for one argument.
#[derive(Clone)]
pub enum ArgValue {
    /// A buffer, or null.
    Buffer(Option<Arc<Handle<Buffer>>>),
    /// The size of a `__local` allocation.
    Local(usize),
    /// Plain bytes (scalars, vectors, structs).
    Bytes(Vec<u8>),
}

pub struct Kernel {
    pub program: Arc<Handle<Program>>,
    pub info: KernelInfo,
    /// Built with -cl-kernel-arg-info.
    pub arg_info: bool,
    args: Mutex<Vec<Option<ArgValue>>>,
}

impl ClObject for Kernel {
    const INVALID: i32 = CL_INVALID_KERNEL;
}

impl Drop for Kernel {
    fn drop(&mut self) {
        self.program
            .kernels_attached
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Kernel {
    /// clCreateKernel: `name` must be a kernel of the program's executable.
    pub fn new(program: &Arc<Handle<Program>>, name: &str) -> ClResult<Arc<Handle<Kernel>>> {
        let kernels = program
            .executable_kernels()
            .ok_or(ClError(CL_INVALID_PROGRAM_EXECUTABLE))?;
        let info = kernels
            .into_iter()
            .find(|k| k.name == name)
            .ok_or(ClError(CL_INVALID_KERNEL_NAME))?;
        Ok(Self::with_args(program, info, None))
    }

    fn with_args(
        program: &Arc<Handle<Program>>,
        info: KernelInfo,
        args: Option<Vec<Option<ArgValue>>>,
    ) -> Arc<Handle<Kernel>> {
        program
            .kernels_attached
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let arg_info = program
            .builds()
            .iter()
            .any(|b| b.arg_info && b.kernels.iter().any(|k| k.name == info.name));
        let n = info.args.len();
        Handle::new(Kernel {
            program: program.clone(),
            info,
            arg_info,
            args: Mutex::new(args.unwrap_or_else(|| vec![None; n])),
        })
    }

    /// clCloneKernel: the same kernel with the same argument values.
    pub fn clone_kernel(&self) -> Arc<Handle<Kernel>> {
        Self::with_args(&self.program, self.info.clone(), Some(self.args().clone()))
    }

    pub fn args(&self) -> MutexGuard<'_, Vec<Option<ArgValue>>> {
        self.args.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// clSetKernelArg, once the argument value is decoded.
    pub fn set_arg(&self, index: usize, value: ArgValue) -> ClResult<()> {
        let mut args = self.args();
        let slot = args.get_mut(index).ok_or(ClError(CL_INVALID_ARG_INDEX))?;
        *slot = Some(value);
        Ok(())
    }

    pub fn arg_kind(&self, index: usize) -> ClResult<&ArgKind> {
        self.info
            .args
            .get(index)
            .map(|a| &a.kind)
            .ok_or(ClError(CL_INVALID_ARG_INDEX))
    }

    /// Checks that every argument has a value (CL_INVALID_KERNEL_ARGS).
    pub fn check_args_set(&self) -> ClResult<()> {
        if self.args().iter().any(Option::is_none) {
            return err(CL_INVALID_KERNEL_ARGS);
        }
        Ok(())
    }

    /// Bytes of `__local` memory the set arguments ask for.
    pub fn local_arg_bytes(&self) -> u64 {
        self.args()
            .iter()
            .map(|a| match a {
                Some(ArgValue::Local(n)) => *n as u64,
                _ => 0,
            })
            .sum()
    }
}
