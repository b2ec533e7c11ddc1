//! Pipes (`__opencl_c_pipes`): packets written by one kernel and read by
//! the next, through plain, reserved, work-group and sub-group reads and
//! writes; a full pipe refuses writes and an empty one reads; the pipe
//! queries in kernels and on the host, and the errors of clCreatePipe,
//! of pipes given where buffers go and buffers where pipes go. Through
//! the ICD loader and directly.

mod common;

include!("pipes/cases.rs");
