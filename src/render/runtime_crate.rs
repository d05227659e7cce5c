//! The runtime crate's source, compiled into the binary, so a generated Rust
//! project builds wherever the binary came from (a wheel, `cargo install`,
//! a clone since deleted): `op_generate --lang rust` writes this copy once
//! beside the projects, as `msprobe-runtime-<version>/`, and the projects
//! depend on it by relative path (`MSPROBE_RUNTIME_PATH` names another
//! runtime instead). A test lists `runtime/src` so no file is left out.

use std::path::Path;

/// `(path relative to runtime/, text)` of each embedded file.
macro_rules! embed {
    ($($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runtime/", $file)))),*]
    };
}

/// Every source file of the runtime crate, and the rulebook it compiles in.
const SOURCES: &[(&str, &str)] = embed![
    "src/atomic.rs",
    "src/bind.rs",
    "src/compare.rs",
    "src/ctx.rs",
    "src/device.rs",
    "src/dtype.rs",
    "src/error.rs",
    "src/exec.rs",
    "src/exit.rs",
    "src/grad_layout.rs",
    "src/heap.rs",
    "src/inputs.rs",
    "src/io/checkpoint.rs",
    "src/io/decode.rs",
    "src/io/mod.rs",
    "src/io/npy.rs",
    "src/io/npy_write.rs",
    "src/io/pickle.rs",
    "src/io/pt.rs",
    "src/lib.rs",
    "src/limits.rs",
    "src/minimize/axes.rs",
    "src/minimize/cut.rs",
    "src/minimize/mod.rs",
    "src/ops/activation.rs",
    "src/ops/api_standard.rs",
    "src/ops/arith.rs",
    "src/ops/bench.rs",
    "src/ops/blas.rs",
    "src/ops/chain.rs",
    "src/ops/compare.rs",
    "src/ops/complex.rs",
    "src/ops/conv.rs",
    "src/ops/covariance.rs",
    "src/ops/create.rs",
    "src/ops/derive.rs",
    "src/ops/diag.rs",
    "src/ops/distance.rs",
    "src/ops/einsum.rs",
    "src/ops/fused.rs",
    "src/ops/attention_kernel.rs",
    "src/ops/batch_norm_kernel.rs",
    "src/ops/batch_norm_parts.rs",
    "src/ops/bias_kernel.rs",
    "src/ops/conv_kernel.rs",
    "src/ops/factor.rs",
    "src/ops/fold.rs",
    "src/ops/few_rows.rs",
    "src/ops/gemm_into.rs",
    "src/ops/gelu_kernel.rs",
    "src/ops/kernel_check.rs",
    "src/ops/layer_norm_kernel.rs",
    "src/ops/linear_kernel.rs",
    "src/ops/relu_kernel.rs",
    "src/ops/grid.rs",
    "src/ops/pool3d.rs",
    "src/ops/pool_kernel.rs",
    "src/ops/aten.rs",
    "src/ops/attention_heads.rs",
    "src/ops/hook_lists/mindspore_functional.txt",
    "src/ops/hook_lists/mindspore_mint.txt",
    "src/ops/hook_lists/mindspore_mint_functional.txt",
    "src/ops/hook_lists/mindspore_tensor.txt",
    "src/ops/hook_lists/pytorch_functional.txt",
    "src/ops/hook_lists/pytorch_npu.txt",
    "src/ops/hook_lists/pytorch_tensor.txt",
    "src/ops/hook_lists/pytorch_torch.txt",
    "src/ops/hook_lists/torch_linalg_only.txt",
    "src/ops/hooks.rs",
    "src/ops/index.rs",
    "src/ops/inner_grad.rs",
    "src/ops/linalg.rs",
    "src/ops/loss.rs",
    "src/ops/math.rs",
    "src/ops/methods.rs",
    "src/ops/mha.rs",
    "src/ops/ms_fused.rs",
    "src/ops/ms_reduce.rs",
    "src/ops/npu_infer.rs",
    "src/ops/npu_moe.rs",
    "src/ops/npu_route.rs",
    "src/ops/npu_logits.rs",
    "src/ops/npu_act.rs",
    "src/ops/npu_boxes.rs",
    "src/ops/npu_torch.rs",
    "src/ops/bessel.rs",
    "src/ops/ms_math.rs",
    "src/ops/ms_array.rs",
    "src/ops/ms_torch.rs",
    "src/ops/mod.rs",
    "src/ops/nn.rs",
    "src/ops/node_grads.rs",
    "src/ops/order_stats.rs",
    "src/ops/norm.rs",
    "src/ops/npu_attention.rs",
    "src/ops/npu_fused.rs",
    "src/ops/npu_misc.rs",
    "src/ops/pool.rs",
    "src/ops/rearrange.rs",
    "src/ops/reasons.rs",
    "src/ops/reduce.rs",
    "src/ops/rnn.rs",
    "src/ops/scatter.rs",
    "src/ops/search.rs",
    "src/ops/shape.rs",
    "src/ops/slicing.rs",
    "src/ops/special.rs",
    "src/ops/svd.rs",
    "src/ops/syncbn.rs",
    "src/ops/vector.rs",
    "src/ops/windows.rs",
    "src/prefix.rs",
    "src/pyfmt.rs",
    "src/replay/call.rs",
    "src/replay/complex.rs",
    "src/replay/effect.rs",
    "src/replay/judge.rs",
    "src/replay/magnitude.rs",
    "src/replay/mod.rs",
    "src/replay/plan.rs",
    "src/replay/quirks.rs",
    "src/replay/tested.rs",
    "src/report/csv.rs",
    "src/report/effect.rs",
    "src/report/html.rs",
    "src/report/mod.rs",
    "src/report/report.html",
    "src/report/stamp.rs",
    "src/report/table.rs",
    "src/repro.rs",
    "src/rulebook.rs",
    "src/simd.rs",
    "src/spec.rs",
    "src/standard.rs",
    "src/standard/fsum.rs",
    "src/standard/rules.rs",
    "src/standard/screen.rs",
    "src/threads.rs",
    "src/value.rs",
    // Read by src/rulebook.rs (include_str!).
    "rulebook.json",
];

/// The runtime's own manifest, made standalone by [`standalone_manifest`].
const MANIFEST: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/runtime/Cargo.toml"));

/// The manifest sections a build of the library needs; the rest (dev
/// dependencies, benches, workspace settings) refer to files and a
/// workspace the copy does not have.
const KEPT_SECTIONS: &[&str] = &["[package]", "[dependencies]", "[features]"];

/// The folder the copy is written to, beside the projects:
/// `msprobe-runtime-<version of this generator>`.
pub fn folder_name() -> String {
    format!("msprobe-runtime-{}", env!("CARGO_PKG_VERSION"))
}

/// The files of the copy: `(path relative to its folder, text)`, the
/// manifest first.
pub fn files() -> Vec<(&'static str, String)> {
    let mut files = vec![("Cargo.toml", standalone_manifest(MANIFEST))];
    files.extend(SOURCES.iter().map(|&(path, text)| (path, text.to_string())));
    files
}

/// `manifest` with only the sections a dependent build reads (the package,
/// its dependencies, per-target dependencies, features), under a comment
/// saying where it came from.
fn standalone_manifest(manifest: &str) -> String {
    let mut out = format!("# The msprobe runtime crate, written by msprobe-rs {} for the generated projects beside it.\n", env!("CARGO_PKG_VERSION"));
    let mut keep = false;
    for line in manifest.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            keep = KEPT_SECTIONS.contains(&trimmed) || (trimmed.starts_with("[target.") && trimmed.ends_with(".dependencies]"));
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Whether `path` (relative to the runtime's folder) is a file of the copy.
pub fn holds(path: &Path) -> bool {
    path == Path::new("Cargo.toml") || SOURCES.iter().any(|(p, _)| Path::new(p) == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn sources_on_disk(dir: &Path, root: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources_on_disk(&path, root, found);
            } else {
                found.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }

    #[test]
    fn every_file_of_runtime_src_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
        let mut found = vec![];
        sources_on_disk(&root.join("src"), &root, &mut found);
        let missing: Vec<_> = found.iter().filter(|p| !holds(p)).collect();
        assert!(missing.is_empty(), "add these to SOURCES in src/render/runtime_crate.rs: {missing:?}");
        assert_eq!(found.len(), SOURCES.iter().filter(|(p, _)| p.starts_with("src/")).count(), "SOURCES names a file runtime/src no longer has");
    }

    #[test]
    fn the_manifest_is_standalone() {
        let manifest = standalone_manifest(MANIFEST);
        assert!(manifest.contains("[package]\nname = \"runtime\"") && manifest.contains("[dependencies]\ncandle-core"), "{manifest}");
        assert!(manifest.contains("[target.'cfg(unix)'.dependencies]"), "{manifest}");
        for gone in ["[dev-dependencies]", "[[bench]]", "workspace", "benches/"] {
            assert!(!manifest.contains(gone), "{gone} in {manifest}");
        }
    }

    #[test]
    fn the_folder_is_named_by_the_generator_version() {
        assert_eq!(folder_name(), format!("msprobe-runtime-{}", env!("CARGO_PKG_VERSION")));
        assert_eq!(files()[0].0, "Cargo.toml");
    }
}
