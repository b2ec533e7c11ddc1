//! The Vulkan instance: the loader is opened at run time, one instance serves
//! every device, and the Khronos validation layer can be switched on with
//! `VKCL_VALIDATION` (see the README).

use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ash::{ext, khr, vk};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// What `VKCL_VALIDATION` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validation {
    /// No layer (the default).
    Off,
    /// Enable the layer and log each message as an error.
    Log,
    /// Enable the layer; a message aborts the process after it is logged.
    /// Test suites use this so that no validation message goes unnoticed.
    Abort,
}

impl Validation {
    pub fn from_env() -> Self {
        match std::env::var("VKCL_VALIDATION").as_deref() {
            Ok("abort") | Ok("fatal") => Validation::Abort,
            Ok("") | Ok("0") | Ok("off") | Err(_) => Validation::Off,
            Ok(_) => Validation::Log,
        }
    }
}

/// Set in `Validation::Abort` mode.
static ABORT_ON_MESSAGE: AtomicBool = AtomicBool::new(false);

/// Validation messages seen so far in this process.
static VALIDATION_MESSAGES: AtomicU64 = AtomicU64::new(0);

/// The validation layer's Vulkan version, when it is on (0: off).
static VALIDATION_LAYER_VERSION: std::sync::atomic::AtomicU32 =
    std::sync::atomic::AtomicU32::new(0);

/// Whether the validation layer in use (if any) knows the Vulkan features
/// of header version `version`: extensions newer than the layer are left
/// off while validating, as the layer would reject their structures.
pub fn validation_knows(version: u32) -> bool {
    let layer = VALIDATION_LAYER_VERSION.load(Ordering::Relaxed);
    layer == 0 || layer >= version
}

/// How many validation messages the layer has reported in this process.
pub fn validation_message_count() -> u64 {
    VALIDATION_MESSAGES.load(Ordering::Relaxed)
}

pub struct Instance {
    pub entry: ash::Entry,
    pub raw: ash::Instance,
    /// The instance-level Vulkan version vkcl asked for.
    pub api_version: u32,
    debug: Option<(ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
}

impl Instance {
    /// Loads the Vulkan loader and creates the instance. Errors are strings
    /// for the log: the platform then simply has no devices.
    pub fn new(validation: Validation) -> Result<Self, String> {
        // SAFETY: loading the system's Vulkan loader runs its initialisers;
        // that is what every Vulkan application does.
        let entry = unsafe { ash::Entry::load() }
            .map_err(|e| format!("cannot load the Vulkan loader: {e}"))?;
        // SAFETY: plain global query on a loaded entry.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(|e| format!("vkEnumerateInstanceVersion failed: {e}"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if loader_version < vk::API_VERSION_1_2 {
            return Err(format!(
                "the Vulkan loader offers version {}.{}; vkcl needs 1.2",
                vk::api_version_major(loader_version),
                vk::api_version_minor(loader_version)
            ));
        }
        let api_version = loader_version.min(vk::API_VERSION_1_3);

        // SAFETY: global queries on a loaded entry.
        let available_exts = unsafe { entry.enumerate_instance_extension_properties(None) }
            .map_err(|e| format!("cannot list instance extensions: {e}"))?;
        let has_ext = |name: &CStr| {
            available_exts
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(name))
        };
        // SAFETY: as above.
        let layers = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
        let has_layer = layers
            .iter()
            .any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER));

        let mut ext_names = Vec::new();
        let mut flags = vk::InstanceCreateFlags::empty();
        if has_ext(khr::portability_enumeration::NAME) {
            ext_names.push(khr::portability_enumeration::NAME.as_ptr());
            flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
        }
        let mut layer_names = Vec::new();
        let mut use_debug = false;
        if validation != Validation::Off {
            if !has_layer {
                return Err(
                    "VKCL_VALIDATION is set but the Khronos validation layer is not installed \
                     (Debian/Ubuntu: vulkan-validationlayers)"
                        .into(),
                );
            }
            layer_names.push(VALIDATION_LAYER.as_ptr());
            let version = layers
                .iter()
                .find(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER))
                .map_or(0, |l| l.spec_version);
            VALIDATION_LAYER_VERSION.store(version, Ordering::Relaxed);
            // The layer itself provides VK_EXT_debug_utils.
            ext_names.push(ext::debug_utils::NAME.as_ptr());
            use_debug = true;
        }

        let app = vk::ApplicationInfo::default()
            .application_name(c"vkcl")
            .engine_name(c"vkcl")
            .engine_version(vk::make_api_version(0, 0, 1, 0))
            .api_version(api_version);
        ABORT_ON_MESSAGE.store(validation == Validation::Abort, Ordering::Relaxed);
        let mut messenger_info = debug_messenger_info();
        let mut info = vk::InstanceCreateInfo::default()
            .flags(flags)
            .application_info(&app)
            .enabled_extension_names(&ext_names)
            .enabled_layer_names(&layer_names);
        if use_debug {
            // Also covers messages from vkCreateInstance/vkDestroyInstance.
            info = info.push_next(&mut messenger_info);
        }
        // SAFETY: every pointer in `info` refers to locals that outlive the call.
        let raw = unsafe { entry.create_instance(&info, None) }
            .map_err(|e| format!("vkCreateInstance failed: {e}"))?;

        let debug = if use_debug {
            let loader = ext::debug_utils::Instance::new(&entry, &raw);
            // SAFETY: valid instance with VK_EXT_debug_utils enabled.
            match unsafe { loader.create_debug_utils_messenger(&messenger_info, None) } {
                Ok(m) => Some((loader, m)),
                Err(e) => {
                    log::error!(target: "vkcl::vk", "cannot install the validation messenger: {e}");
                    None
                }
            }
        } else {
            None
        };
        log::info!(
            target: "vkcl::vk",
            "Vulkan instance {}.{} created (validation: {validation:?})",
            vk::api_version_major(api_version),
            vk::api_version_minor(api_version)
        );
        Ok(Instance {
            entry,
            raw,
            api_version,
            debug,
        })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: the messenger and instance were created here and every
        // device created from this instance is gone before the instance is.
        unsafe {
            if let Some((loader, m)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(m, None);
            }
            self.raw.destroy_instance(None);
        }
    }
}

fn debug_messenger_info() -> vk::DebugUtilsMessengerCreateInfoEXT<'static> {
    vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(
            vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
        )
        .message_type(
            vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
        )
        .pfn_user_callback(Some(on_validation_message))
}

unsafe extern "system" fn on_validation_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user_data: *mut c_void,
) -> vk::Bool32 {
    VALIDATION_MESSAGES.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the layer passes a valid callback-data struct for the duration
    // of the call; its message is a NUL-terminated string when non-null.
    let message = unsafe {
        data.as_ref()
            .and_then(|d| d.message_as_c_str())
            .map(|m| m.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    log::error!(target: "vkcl::validation", "{severity:?} {kind:?}: {message}");
    if ABORT_ON_MESSAGE.load(Ordering::Relaxed) {
        // Abort mode: make the failure impossible to miss, even when no
        // logger is listening.
        eprintln!("vkcl: Vulkan validation message ({severity:?} {kind:?}): {message}");
        std::process::abort();
    }
    vk::FALSE
}
