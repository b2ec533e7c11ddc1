//! `vkcl info`.

use vkcl::compiler::frontend;
use vkcl::core::platform::platform;
use vkcl::vk::physical::FEATURES;

pub fn run() -> Result<(), String> {
    let p = platform();
    println!("Platform: vkcl {}", env!("CARGO_PKG_VERSION"));
    match frontend::front_end() {
        Some(fe) => println!(
            "OpenCL C front end: {} + {} ({})",
            fe.clang.display(),
            fe.llvm_spirv.display(),
            fe.version
        ),
        None => println!(
            "OpenCL C front end: none found (install clang-N and llvm-spirv-N, N = 15..19): programs from source cannot be built, SPIR-V and binaries can"
        ),
    }
    match vkcl::compiler::spirv::p2_builtins::libclc::library() {
        Ok(_) => println!("libclc: found"),
        Err(e) => println!("libclc: {e} (math built-ins that need it fail to build)"),
    }
    if p.instance.is_none() {
        println!("No Vulkan loader or instance: no devices.");
        return Ok(());
    }
    for (index, name, why) in &p.skipped {
        println!("Vulkan device {index} ({name}) is not an OpenCL device: {why}");
    }
    if p.devices.is_empty() {
        println!("No Vulkan device qualifies.");
    }
    for (n, d) in p.devices.iter().enumerate() {
        let i = &d.info;
        let v = i.props.api_version;
        println!();
        println!("Device {n}: {}", d.name());
        println!("  Vulkan device index {}", d.vulkan_index);
        println!(
            "  Vulkan {}.{}.{}, driver {}",
            vkcl_version_major(v),
            (v >> 12) & 0x3ff,
            v & 0xfff,
            d.vulkan_driver()
        );
        println!(
            "  compute units {}, global memory {} MiB, local memory {} KiB, max work-group {}",
            d.compute_units(),
            d.global_mem_size() >> 20,
            d.local_mem_size() >> 10,
            d.max_work_group_size()
        );
        println!(
            "  host-visible device memory: {}",
            if d.host_unified_memory() {
                "yes (transfers copy in place)"
            } else {
                "no (transfers through staging or imported host memory)"
            }
        );
        println!("  OpenCL C features: {}", d.opencl_c_features().join(" "));
        let ext: Vec<&str> = d.extensions().iter().map(|(n, _)| *n).collect();
        println!("  extensions: {}", ext.join(" "));
        println!("  Vulkan capabilities:");
        for f in FEATURES {
            let present = (f.present)(i);
            let state = match (present, f.required) {
                (true, _) => "yes",
                (false, true) => "MISSING (required)",
                (false, false) => "no",
            };
            // Rows naming an OpenCL extension: is vkcl offering it yet?
            let offered = f
                .opencl
                .strip_prefix("cl_khr_")
                .map(|_| ext.contains(&f.opencl));
            let effect = match (present, f.required, offered) {
                (false, false, _) => " -> off",
                (true, _, Some(false)) if f.opencl == "cl_khr_fp64" => " -> off (VKCL_FP64=0)",
                (true, _, Some(false)) => " -> off (not implemented in vkcl yet)",
                _ => "",
            };
            println!("    {:<44} {:<20} {}{}", f.vulkan, state, f.opencl, effect);
        }
    }
    Ok(())
}

fn vkcl_version_major(v: u32) -> u32 {
    (v >> 22) & 0x7f
}
