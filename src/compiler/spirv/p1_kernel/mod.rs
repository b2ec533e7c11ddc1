//! Phase 1: one kernel, one function. Passes 1 to 5, in this order:
//! `select` keeps the kernel and what it reaches, `clock` reads the kernel
//! clock where cl_khr_kernel_clock's built-ins are called, `matrix` makes
//! cooperative matrix handles and built-ins SPIR-V's, `pipes` makes pipe
//! built-ins code on the pipe's buffer, `inline` makes it one
//! function, `memcopy` and `async_copy` turn OpenCL's copies into loads,
//! stores and loops, and `printf` turns calls into record writes.
//!
//! After this phase the module holds exactly one kernel, as one function
//! with no calls other than `OpenCL.std` instructions.

/// Pass 1.
pub mod select;

/// Pass 1b.
pub mod clock;

/// Pass 1c.
pub mod matrix;

/// Pass 1d.
pub mod pipes;

/// Pass 1e: device-side enqueue.
pub mod enqueue;

/// Pass 2.
pub mod inline;

/// Pass 3.
pub mod memcopy;

/// Pass 4.
pub mod async_copy;

/// Pass 5.
pub mod printf;
