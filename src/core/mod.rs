//! The OpenCL object model: platforms, devices, contexts, queues, events,
//! buffers, images, samplers, programs, kernels, kernel launches and SVM,
//! with the completion worker and the census of what is alive.

pub mod census;
pub mod command_buffer;
pub mod context;
pub mod device;
pub mod enqueue;
pub mod error;
pub mod event;
// OpenCL spells some channel orders in lower case (CL_sRGBA, CL_Rx).
#[allow(non_upper_case_globals)]
pub mod format;
pub mod image;
pub mod kernel;
pub mod launch;
pub mod memory;
pub mod object;
pub mod platform;
pub mod printf;
pub mod program;
pub mod queue;
pub mod ranges;
pub mod sampler;
pub mod semaphore;
pub mod svm;
pub mod trace;
pub mod worker;

/// Sets up logging from `VKCL_LOG` (for example `VKCL_LOG=debug` or
/// `VKCL_LOG=vkcl::vk=trace`); warnings and errors are shown by default.
/// Does nothing if the application already installed a logger.
pub fn init_logging() {
    let filter = std::env::var("VKCL_LOG").unwrap_or_else(|_| "warn".into());
    let _ = env_logger::Builder::new()
        .parse_filters(&filter)
        .format_timestamp(None)
        .target(env_logger::Target::Stderr)
        .try_init();
}
