//! Everything that speaks Vulkan, through ash.

pub mod device;
pub mod external;
pub mod image;
pub mod instance;
pub mod memory;
pub mod physical;
pub mod pipeline;
