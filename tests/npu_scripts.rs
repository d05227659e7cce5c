//! PyTorch scripts of `NPU.` calls: op_generate renders one per call and
//! direction of the NPU test dump (tests/fixtures/npu_misc/clean), whose
//! tested side is `torch_npu.<op>` and whose bench is the machinery's torch
//! reference (python/msprobe_rs/repro/npu_bench.py). Without torch_npu a
//! script prints one line and exits with the skip code (8; 0 with
//! --allow-skip). With a stand-in torch_npu (its ops the torch compositions
//! of runtime/tests/npu_misc/compositions.py, run on the CPU in float32)
//! the scripts run, and every row passes; perturbed (three of them), every row fails.
//! The forward scripts of the fused ops' dump (tests/fixtures/npu/clean) run
//! the same way against runtime/tests/npu/compositions.py, npu_fusion_attention
//! returning torch_npu's seven outputs (the scripts judge the first three).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{python, repo};

/// The scripts the clean NPU dump gives (`--propagation both`).
const SCRIPTS: &[&str] = &[
    "NPU.matmul_backward.0.forward",
    "NPU.npu_apply_adam.0.forward",
    "NPU.npu_apply_adam_w.0.forward",
    "NPU.npu_confusion_transpose.0.backward",
    "NPU.npu_confusion_transpose.0.forward",
    "NPU.npu_group_norm_silu.0.forward",
    "NPU.npu_layer_norm_eval.0.forward",
    "NPU.npu_linear.0.backward",
    "NPU.npu_linear.0.forward",
    "NPU.npu_moe_gating_top_k_softmax.0.forward",
    "NPU.npu_sort_v2.0.forward",
];

/// torch_npu as these scripts use it, on the CPU: its ops are the agreement
/// test's compositions, and `torch.npu` says no NPU is there.
const STAND_IN: &str = r#"
import importlib.util
import os
import types

import torch

torch.npu = types.SimpleNamespace(is_available=lambda: False)
_spec = importlib.util.spec_from_file_location("npu_misc_compositions", os.environ["NPU_MISC_COMPOSITIONS"])
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update(_c.COMPOSITIONS)
"#;

/// The fused ops' torch_npu on the CPU: runtime/tests/npu/compositions.py, the
/// attention with torch_npu's softmax_out, seed, offset and numels after its three outputs.
const FUSED_STAND_IN: &str = r#"
import importlib.util
import os
import types

import torch

torch.npu = types.SimpleNamespace(is_available=lambda: False)
_spec = importlib.util.spec_from_file_location("npu_compositions", os.environ["NPU_COMPOSITIONS"])
_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_c)
globals().update({name: getattr(_c, name) for name in dir(_c) if name.startswith("npu_")})
# Spellings without a composition of their own name: in-place forms (their results), aliases.
fast_gelu = _c.npu_fast_gelu
one_ = _c.one_
empty_with_format = _c.empty_with_format
scatter_update = scatter_update_ = _c.scatter_update
npu_format_cast_ = _c.npu_format_cast
npu_scatter_nd_update_ = _c.npu_scatter_nd_update
npu_convolution_transpose = _c.npu_conv_transpose2d


def npu_dtype_cast(x, dtype):
    return x.to(dtype)


def npu_fusion_attention(*args, **kwargs):  # keep_prob < 1: runs without its dropout
    return (*_c.npu_fusion_attention(*args, **kwargs), torch.zeros(0), 1234, 0, 0)
"#;

/// The fused ops' forward scripts and, where one is not all `pass` with exit 0, its exit code and Message.
const FUSED: &[(&str, Option<(i32, &str)>)] = &[
    ("NPU.empty_with_format.0.forward", None),
    ("NPU.fast_gelu.0.forward", None),
    ("NPU.npu_add_rms_norm.0.forward", None),
    ("NPU.npu_add_rms_norm_v2.0.forward", None),
    ("NPU.npu_anchor_response_flags.0.forward", None),
    ("NPU.npu_anti_quant.0.forward", None),
    ("NPU.npu_apply_rotary_pos_emb.0.forward", None),
    ("NPU.npu_attention_update.0.forward", None),
    ("NPU.npu_bmmV2.0.forward", None),
    ("NPU.npu_bounding_box_decode.0.forward", None),
    ("NPU.npu_bounding_box_encode.0.forward", None),
    ("NPU.npu_broadcast.0.forward", None),
    ("NPU.npu_ciou.0.forward", None),
    ("NPU.npu_clipped_swiglu.0.forward", None),
    ("NPU.npu_conv2d.0.forward", None),
    ("NPU.npu_conv3d.0.forward", None),
    ("NPU.npu_conv_transpose2d.0.forward", None),
    ("NPU.npu_convert_weight_to_int4pack.0.forward", None),
    ("NPU.npu_convolution.0.forward", None),
    ("NPU.npu_convolution_transpose.0.forward", None),
    ("NPU.npu_cross_entropy_loss.0.forward", None),
    ("NPU.npu_diou.0.forward", None),
    ("NPU.npu_dtype_cast.0.forward", None),
    ("NPU.npu_fast_gelu.0.forward", None),
    ("NPU.npu_ffn.0.forward", None),
    ("NPU.npu_format_cast.0.forward", None),
    ("NPU.npu_format_cast_.0.forward", None),
    ("NPU.npu_fused_add_topk_div.0.forward", None),
    ("NPU.npu_fused_infer_attention_score.0.forward", None),
    ("NPU.npu_fused_infer_attention_score_v2.0.forward", None),
    ("NPU.npu_fused_matmul.0.forward", None),
    ("NPU.npu_fusion_attention.0.forward", None),
    ("NPU.npu_fusion_attention.1.forward", None),
    ("NPU.npu_fusion_attention.2.forward", None),
    (
        "NPU.npu_fusion_attention.3.forward",
        Some((8, "cannot replay here: the bench call raised NotImplementedError: npu_fusion_attention: keep_prob < 1 draws the dropout mask on the device")),
    ),
    ("NPU.npu_fusion_attention_v3.0.forward", None),
    ("NPU.npu_gather_sparse_index.0.forward", None),
    ("NPU.npu_geglu.0.forward", None),
    ("NPU.npu_gelu.0.forward", None),
    ("NPU.npu_gelu_mul.0.forward", None),
    ("NPU.npu_giou.0.forward", None),
    ("NPU.npu_grid_assign_positive.0.forward", None),
    ("NPU.npu_group_norm_swish.0.forward", None),
    ("NPU.npu_grouped_matmul.0.forward", None),
    ("NPU.npu_grouped_matmul_add_.0.forward", None),
    ("NPU.npu_incre_flash_attention.0.forward", None),
    ("NPU.npu_indexing.0.forward", None),
    ("NPU.npu_interleave_rope.0.forward", None),
    ("NPU.npu_masked_fill_range.0.forward", None),
    ("NPU.npu_max.0.forward", None),
    ("NPU.npu_min.0.forward", None),
    ("NPU.npu_mish.0.forward", None),
    ("NPU.npu_moe_compute_expert_tokens.0.forward", None),
    ("NPU.npu_moe_finalize_routing.0.forward", None),
    ("NPU.npu_moe_gating_top_k.0.forward", None),
    ("NPU.npu_moe_init_routing.0.forward", None),
    ("NPU.npu_moe_init_routing_v2.0.forward", None),
    ("NPU.npu_moe_re_routing.0.forward", None),
    ("NPU.npu_moe_token_permute.0.forward", None),
    ("NPU.npu_moe_token_permute_with_routing_map.0.forward", None),
    ("NPU.npu_moe_token_unpermute.0.forward", None),
    ("NPU.npu_mrope.0.forward", None),
    ("NPU.npu_normalize_batch.0.forward", None),
    ("NPU.npu_one_hot.0.forward", None),
    ("NPU.npu_pad.0.forward", None),
    ("NPU.npu_prompt_flash_attention.0.forward", None),
    ("NPU.npu_reshape.0.forward", None),
    ("NPU.npu_rms_norm.0.forward", None),
    ("NPU.npu_roi_align.0.forward", None),
    ("NPU.npu_roi_alignbk.0.forward", None),
    ("NPU.npu_rotary_mul.0.forward", None),
    ("NPU.npu_rotated_box_decode.0.forward", None),
    ("NPU.npu_rotated_box_encode.0.forward", None),
    ("NPU.npu_scaled_masked_softmax.0.forward", None),
    ("NPU.npu_scatter.0.forward", None),
    ("NPU.npu_scatter_nd_update.0.forward", None),
    ("NPU.npu_scatter_nd_update_.0.forward", None),
    ("NPU.npu_sign_bits_pack.0.forward", None),
    ("NPU.npu_sign_bits_unpack.0.forward", None),
    ("NPU.npu_silu.0.forward", None),
    ("NPU.npu_slice.0.forward", None),
    ("NPU.npu_softmax_cross_entropy_with_logits.0.forward", None),
    ("NPU.npu_stride_add.0.forward", None),
    ("NPU.npu_swiglu.0.forward", None),
    ("NPU.npu_top_k_top_p.0.forward", None),
    ("NPU.npu_transpose.0.forward", None),
    ("NPU.npu_transpose_batchmatmul.0.forward", None),
    ("NPU.npu_yolo_boxes_encode.0.forward", None),
    ("NPU.one_.0.forward", None),
    ("NPU.scatter_update.0.forward", None),
    ("NPU.scatter_update_.0.forward", None),
];

fn generate(out: &Path) -> PathBuf {
    generate_from(out, "npu_misc/clean", "both")
}

fn generate_from(out: &Path, dump: &str, propagation: &str) -> PathBuf {
    let config =
        serde_json::json!({"dump_json_path": repo().join("tests/fixtures").join(dump).join("dump.json"), "propagation": "forward", "data_mode": "real_data"});
    std::fs::write(out.join("config.json"), config.to_string()).unwrap();
    let scripts = out.join("scripts");
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "op_generate", "-i", "config.json", "-o", "scripts", "--all", "--propagation", propagation])
        .current_dir(out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    scripts
}

/// The scripts in `scripts`, sorted.
fn names(scripts: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(scripts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".py").map(str::to_string))
        .collect();
    names.sort();
    names
}

/// Runs a script, with the stand-in torch_npu of `stand_in` (its folder, which `text` is written into) if given.
fn run(scripts: &Path, name: &str, args: &[&str], stand_in: Option<(&Path, &str)>) -> Output {
    let mut cmd = Command::new(python());
    cmd.arg(format!("{name}.py")).args(args).current_dir(scripts).env("PYTHONDONTWRITEBYTECODE", "1").env_remove("PYTHONPATH");
    if let Some((dir, text)) = stand_in {
        std::fs::create_dir_all(dir.join("torch_npu")).unwrap();
        std::fs::write(dir.join("torch_npu/__init__.py"), text).unwrap();
        cmd.env("PYTHONPATH", dir)
            .env("NPU_MISC_COMPOSITIONS", repo().join("runtime/tests/npu_misc/compositions.py"))
            .env("NPU_COMPOSITIONS", repo().join("runtime/tests/npu/compositions.py"));
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn without_torch_npu_a_script_prints_one_line_and_exits_with_the_skip_code() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = generate(dir.path());
    assert_eq!(names(&scripts), SCRIPTS);
    for name in SCRIPTS {
        let (api, direction) = name.rsplit_once('.').unwrap();
        let line = format!("{api} {direction}: skip: torch_npu is not installed (the tested call is torch_npu's, on an Ascend NPU)\n");
        // --allow-skip once: the same line, exit 0.
        let runs: &[(&[&str], i32)] = if *name == SCRIPTS[0] { &[(&[], 8), (&["--allow-skip"], 0)] } else { &[(&[], 8)] };
        for &(args, code) in runs {
            let o = run(&scripts, name, args, None);
            assert_eq!(
                (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned()),
                (Some(code), line.clone(), String::new()),
                "{name} {args:?}"
            );
        }
        assert!(!scripts.join("op_result_output").exists(), "{name}: a skipped script writes no CSV");
    }
}

#[test]
fn with_a_stand_in_torch_npu_the_scripts_compare_against_the_references() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = generate(dir.path());
    assert_eq!(names(&scripts), SCRIPTS);
    let stand_in = dir.path().join("stand_in");
    for name in SCRIPTS {
        // Perturbed: a float forward, a backward, and integer outputs.
        let perturbed = ["NPU.npu_apply_adam_w.0.forward", "NPU.npu_linear.0.backward", "NPU.npu_moe_gating_top_k_softmax.0.forward"].contains(name);
        for (perturb, code, status) in [("0", 0, "pass"), ("0.01", 3, "error")].into_iter().filter(|r| r.0 == "0" || perturbed) {
            let out = dir.path().join(format!("out_{name}_{perturb}"));
            let o = run(&scripts, name, &["--output-dir", out.to_str().unwrap(), "--perturb", perturb], Some((&stand_in, STAND_IN)));
            assert_eq!(o.status.code(), Some(code), "{name} --perturb {perturb}: {}", text(&o));
            let rows = common::detail_rows(&out);
            assert!(!rows.is_empty(), "{name}");
            for (row, got, message) in rows {
                assert_eq!(got, status, "{name} --perturb {perturb}: {row}: {message}");
                assert!(message.ends_with("tested: torch on cpu in the dumped dtype; bench: torch on cpu at raised precision"), "{row}: {message}");
            }
        }
    }
}

#[test]
fn the_fused_ops_scripts_compare_against_their_references() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = generate_from(dir.path(), "npu/clean", "forward");
    assert_eq!(names(&scripts), FUSED.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    let stand_in = dir.path().join("stand_in");
    for &(name, expected) in FUSED {
        let out = dir.path().join(format!("out_{name}"));
        let o = run(&scripts, name, &["--output-dir", out.to_str().unwrap()], Some((&stand_in, FUSED_STAND_IN)));
        let rows = common::detail_rows(&out);
        match expected {
            None => {
                assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
                let outputs = match name.split('.').nth(1) {
                    Some("npu_cross_entropy_loss" | "npu_moe_init_routing_v2" | "npu_moe_re_routing") => 4,
                    Some(
                        "npu_fusion_attention"
                        | "npu_fusion_attention_v3"
                        | "npu_add_rms_norm"
                        | "npu_moe_init_routing"
                        | "npu_moe_gating_top_k"
                        | "npu_group_norm_swish"
                        | "npu_moe_token_permute_with_routing_map",
                    ) => 3,
                    Some(
                        "npu_rms_norm"
                        | "npu_geglu"
                        | "npu_apply_rotary_pos_emb"
                        | "npu_fused_add_topk_div"
                        | "npu_fused_infer_attention_score"
                        | "npu_fused_infer_attention_score_v2"
                        | "npu_moe_token_permute"
                        | "npu_mrope"
                        | "npu_max"
                        | "npu_min"
                        | "npu_attention_update",
                    ) => 2,
                    _ => 1,
                };
                assert_eq!(rows.len(), outputs, "{name}: {rows:?}");
                for (row, status, message) in rows {
                    assert_eq!(status, "pass", "{name}: {row}: {message}");
                }
            }
            Some((code, message)) => {
                assert_eq!(o.status.code(), Some(code), "{name}: {}", text(&o));
                assert_eq!(rows, [(name.to_string(), "skip".to_string(), message.to_string())], "{name}");
            }
        }
    }
}

/// Without torch_npu, `--tested recorded` still judges an NPU dump's fused
/// calls: the recorded values (the NPU's) against the scripts' references,
/// and every row reaches the native replay's status under `bound`: the
/// planted calls (tests/fixtures/npu/planted, and bf16_scaled's 2 %
/// bfloat16 errors of npu_rms_norm and npu_swiglu) are `error` by both.
#[test]
fn without_torch_npu_recorded_values_of_the_fused_ops_reach_the_native_verdicts() {
    for dump in ["npu/planted", "npu/bf16_scaled"] {
        let dir = tempfile::tempdir().unwrap();
        let scripts = generate_from(dir.path(), dump, "forward");
        let native = dir.path().join("native");
        let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
            .args(["-f", "pytorch", "replay", "--dump"])
            .arg(repo().join("tests/fixtures").join(dump))
            .args(["--data-mode", "real_data", "--standard", "bound", "--top", "0", "--propagation", "forward", "--output-dir"])
            .arg(&native)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(3), "{dump}: {}", text(&o));
        let native_rows: std::collections::BTreeMap<String, String> = common::detail_rows(&native).into_iter().map(|(n, s, _)| (n, s)).collect();
        let (mut agree, mut errors) = (0, 0);
        for name in names(&scripts) {
            let out = dir.path().join(format!("out_{name}"));
            run(&scripts, &name, &["--tested", "recorded", "--standard", "bound", "--output-dir", out.to_str().unwrap()], None);
            for (row, status, message) in common::detail_rows(&out) {
                if message.starts_with("cannot replay here: the bench call raised NotImplementedError") {
                    continue; // keep_prob < 1: no reference draws the device's dropout mask
                }
                assert!(message.contains("tested: device values recorded in the dump"), "{dump}: {row}: {message}");
                assert_eq!(Some(&status), native_rows.get(&row), "{dump}: {row}: {message}");
                agree += 1;
                errors += usize::from(status == "error");
            }
        }
        assert!(agree >= 6 && errors >= 2, "{dump}: {agree} rows agree, {errors} errors");
    }
}
