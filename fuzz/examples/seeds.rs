//! Writes the seed corpora of every fuzz target:
//! `seeds OUT_DIR [CTS_CHECKOUT]` makes OUT_DIR/<target>/<n>.
use std::path::PathBuf;

use vkcl_fuzz::seeds::Seeds;

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let Some(out) = args.first() else {
        eprintln!("usage: seeds OUT_DIR [CTS_CHECKOUT]");
        std::process::exit(2);
    };
    let kernels = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/kernels");
    let seeds = Seeds::gather(&kernels, args.get(1).map(PathBuf::as_path));
    for (target, items) in [
        ("il", &seeds.spirv),
        ("rewrite", &seeds.spirv),
        ("binary", &seeds.binaries),
        ("source", &seeds.sources),
        ("options", &seeds.options),
    ] {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir).expect("the corpus directory can be made");
        for (n, item) in items.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{n:04}")), item).expect("a seed is written");
        }
        println!("{target}: {} seeds", items.len());
    }
}
