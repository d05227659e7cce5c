//! Recorded gradients compared in the layout msprobe records them in
//! (runtime/src/grad_layout.rs, the op table's `Fact::NodeGradients`), on
//! the real dumps of tests/fixtures/layouts/<version>/tensor
//! (zoo/make/make_pytorch_layouts.sh: msprobe 8.3.2 and 26.2.0, torch 2.15; linear,
//! matmul, scaled_dot_product_attention, cross_entropy):
//! every backward row's exact status and what its tested side is, under
//! every standard; and a recorded square weight gradient that is not the
//! transposed one is caught.

mod common;

use std::path::Path;
use std::process::Command;

use common::repo;
use runtime::replay::SELF_REFERENCE;

const VERSIONS: [&str; 2] = ["8.3.2", "26.2.0"];
const BENCH: &str = "bench: float64 recompute on the CPU";
const RECORDED: &str = "tested: device gradient recorded in the dump; bench: float64 recompute on the CPU";
const TRANSPOSED: &str = "tested: device gradient recorded in the dump, of the transposed input as the autograd node took it (weight.t()), compared with the computed gradient transposed; bench: float64 recompute on the CPU";

/// What a row's tested side is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tested {
    /// The recorded gradient, as computed.
    Recorded,
    /// The recorded gradient of `weight.t()`: compared transposed.
    Transposed,
    /// The emulated device: the dump's entry is the gradient this node passes on.
    Elsewhere(&'static str),
    /// cross_entropy's inner log_softmax gradient (the inner-gradient quirk).
    Inner,
}

use Tested::*;

const VIEW: &str = "a view of the product (UnsafeViewBackward0, SqueezeBackward4)";
const ATTENTION_VIEW: &str = "a view of the attention (SqueezeBackward1, UnsafeViewBackward0)";
const MATMUL_VIEW: &str = "a view of the product (UnsafeViewBackward0, SqueezeBackward4, CloneBackward0)";

/// Every backward row of the layout dumps: name, shape, tested side.
const ROWS: &[(&str, &str, Tested)] = &[
    // linear(x[3,4], w[4,4], b[4]): AddmmBackward0 records [b, x, w.t()].
    ("Functional.linear.0.backward.output.0", "(3, 4)", Recorded),
    ("Functional.linear.0.backward.output.1", "(4, 4)", Transposed),
    ("Functional.linear.0.backward.output.2", "(4,)", Recorded),
    // linear(x[3,4], w[4,4]): MmBackward0 records [x, w.t()]; the square weight is the case
    // whose shapes agree untransposed.
    ("Functional.linear.1.backward.output.0", "(3, 4)", Recorded),
    ("Functional.linear.1.backward.output.1", "(4, 4)", Transposed),
    // linear(x[3,4], w[5,4], b[5]).
    ("Functional.linear.2.backward.output.0", "(3, 4)", Recorded),
    ("Functional.linear.2.backward.output.1", "(4, 5)", Transposed),
    ("Functional.linear.2.backward.output.2", "(5,)", Recorded),
    // linear(x[3,4], w[3,4]).
    ("Functional.linear.3.backward.output.0", "(3, 4)", Recorded),
    ("Functional.linear.3.backward.output.1", "(4, 3)", Transposed),
    // linear(x[2,3,4], w[5,4], b[5]) and linear(x[2,3,4], w[4,4]): one [6, N] tensor, the
    // incoming gradient viewed.
    ("Functional.linear.4.backward.output.0", "(2, 3, 4)", Elsewhere("UnsafeViewBackward0")),
    ("Functional.linear.4.backward.output.1", "(5, 4)", Elsewhere("UnsafeViewBackward0")),
    ("Functional.linear.4.backward.output.2", "(5,)", Elsewhere("UnsafeViewBackward0")),
    ("Functional.linear.5.backward.output.0", "(2, 3, 4)", Elsewhere(VIEW)),
    ("Functional.linear.5.backward.output.1", "(4, 4)", Elsewhere(VIEW)),
    // matmul(x[3,4], w[4,4]): MmBackward0 takes its inputs as given.
    ("Torch.matmul.0.backward.output.0", "(3, 4)", Recorded),
    ("Torch.matmul.0.backward.output.1", "(4, 4)", Recorded),
    // matmul(x[2,3,4], m[4,5]) folds into mm; matmul(x[2,2,3,4], m[2,4,5]) broadcasts into bmm.
    ("Torch.matmul.1.backward.output.0", "(2, 3, 4)", Elsewhere(MATMUL_VIEW)),
    ("Torch.matmul.1.backward.output.1", "(4, 5)", Elsewhere(MATMUL_VIEW)),
    ("Torch.matmul.2.backward.output.0", "(2, 2, 3, 4)", Elsewhere(MATMUL_VIEW)),
    ("Torch.matmul.2.backward.output.1", "(2, 4, 5)", Elsewhere(MATMUL_VIEW)),
    // sdpa(q, k, v) 4-D: the CPU's fused kernel takes [q, k, v]; 3-D: unsqueezed into it and
    // squeezed back, one [1, 2, 4, 8] tensor.
    ("Functional.scaled_dot_product_attention.0.backward.output.0", "(1, 2, 4, 8)", Recorded),
    ("Functional.scaled_dot_product_attention.0.backward.output.1", "(1, 2, 4, 8)", Recorded),
    ("Functional.scaled_dot_product_attention.0.backward.output.2", "(1, 2, 4, 8)", Recorded),
    ("Functional.scaled_dot_product_attention.1.backward.output.0", "(2, 4, 8)", Elsewhere(ATTENTION_VIEW)),
    ("Functional.scaled_dot_product_attention.1.backward.output.1", "(2, 4, 8)", Elsewhere(ATTENTION_VIEW)),
    ("Functional.scaled_dot_product_attention.1.backward.output.2", "(2, 4, 8)", Elsewhere(ATTENTION_VIEW)),
    // The logits' linear(x[3,4], w[3,4]) and the loss; a label-smoothed loss records its two
    // terms' scalar gradients.
    ("Functional.linear.6.backward.output.0", "(3, 4)", Recorded),
    ("Functional.linear.6.backward.output.1", "(4, 3)", Transposed),
    ("Functional.cross_entropy.0.backward.output.0", "(3, 3)", Inner),
    ("Functional.cross_entropy.1.backward.output.0", "(3, 4)", Elsewhere("AddBackward0 (label smoothing's two terms)")),
];

fn dump(version: &str) -> std::path::PathBuf {
    repo().join("tests/fixtures/layouts").join(version).join("tensor")
}

/// `msprobe replay` of `dump` under `standard`: its exit code and details rows.
fn replay(dump: &Path, standard: &str, extra: &[&str]) -> (i32, Vec<Vec<String>>) {
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "replay", "--dump"])
        .arg(dump)
        .arg("--output-dir")
        .arg(out.path())
        .args(["--standard", standard, "--data-mode", "real_data"])
        .args(extra)
        .output()
        .unwrap();
    let file = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("accuracy_checking_details_"));
    let file = file.unwrap_or_else(|| panic!("no details CSV: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)));
    let rows = common::csv_file_records(&file).split_off(1);
    (o.status.code().unwrap(), rows)
}

/// The Message of a passing row whose tested side is `tested`.
fn expected_message(tested: Tested) -> String {
    match tested {
        Recorded => RECORDED.to_string(),
        Transposed => TRANSPOSED.to_string(),
        Elsewhere(node) => format!("tested: emulated device in the dumped dtypes (msprobe records the input gradients of the call's last autograd node, {node}: the incoming gradient passed on, not this input's gradient); {BENCH}"),
        Inner => format!("msprobe quirk: the recorded gradient is the one w.r.t. cross_entropy's inner log_softmax output; compared with that gradient; {RECORDED}"),
    }
}

#[test]
fn every_recorded_gradient_is_compared_in_its_recorded_layout() {
    for version in VERSIONS {
        for standard in ["api", "msprobe", "bound"] {
            let (code, rows) = replay(&dump(version), standard, &[]);
            assert_eq!(code, 0, "{version} {standard}: {rows:?}");
            let backward: Vec<&Vec<String>> = rows.iter().filter(|r| r[0].contains(".backward.")).collect();
            assert_eq!(backward.len(), ROWS.len(), "{version} {standard}");
            for (row, (name, shape, tested)) in backward.iter().zip(ROWS) {
                let what = format!("{version} {standard} {row:?}");
                assert_eq!((row[0].as_str(), row[3].as_str(), row[7].as_str()), (*name, *shape, "pass"), "{what}");
                let expected = expected_message(*tested);
                let as_expected = match (standard, tested) {
                    // Under the api standard an emulated tested side is its own reference run.
                    ("api", Elsewhere(_)) => row[8] == format!("{SELF_REFERENCE}; {expected}"),
                    // The inner gradient has no rounding bound: the bound standard's note comes first.
                    ("bound", Inner) => row[8].ends_with(&format!("; {expected}")),
                    _ => row[8] == expected,
                };
                assert!(as_expected, "{what}");
                // A recorded gradient agrees with the float64 recompute to float32 rounding.
                if !matches!(tested, Elsewhere(_)) {
                    assert!(row[4].parse::<f64>().unwrap() > 0.999999, "{what}");
                }
            }
            assert!(rows.iter().all(|r| r[7] == "pass"), "{version} {standard}: {rows:?}");
        }
    }
}

/// A square weight's recorded gradient in the weight's own layout (as if
/// msprobe had recorded `[input, weight]`: the recorded file transposed) is
/// an error: the comparison goes by the recorded layout, not by the shape
/// that happens to fit either way.
#[test]
fn an_untransposed_square_weight_gradient_is_an_error() {
    for version in VERSIONS {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("tensor");
        let data = copy.join("dump_tensor_data");
        std::fs::create_dir_all(&data).unwrap();
        for entry in std::fs::read_dir(dump(version).join("dump_tensor_data")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), data.join(entry.file_name())).unwrap();
        }
        let recorded = "Functional.linear.1.backward.output.1.pt";
        common::run_ok(&data, &format!("import torch\ntorch.save(torch.load({recorded:?}).t().contiguous(), 'untransposed.pt')\n"), &[]);
        let text = std::fs::read_to_string(dump(version).join("dump.json")).unwrap();
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let entry = &mut json["data"]["Functional.linear.1.backward"]["output"][1];
        assert_eq!((&entry["shape"], &entry["data_name"]), (&serde_json::json!([4, 4]), &serde_json::json!(recorded)));
        entry["data_name"] = serde_json::json!("untransposed.pt");
        std::fs::write(copy.join("dump.json"), serde_json::to_string(&json).unwrap()).unwrap();
        for standard in ["api", "msprobe", "bound"] {
            let (code, rows) = replay(&copy, standard, &["--filter", "^Functional\\.linear\\.1$"]);
            assert_eq!(code, 3, "{version} {standard}: {rows:?}");
            let statuses: Vec<(&str, &str)> = rows.iter().map(|r| (r[0].as_str(), r[7].as_str())).collect();
            assert_eq!(
                statuses,
                [
                    ("Functional.linear.1.forward.output.0", "pass"),
                    ("Functional.linear.1.backward.output.0", "pass"),
                    ("Functional.linear.1.backward.output.1", "error")
                ],
                "{version} {standard}"
            );
            assert!(rows[2][8].ends_with(TRANSPOSED) && rows[2][4].parse::<f64>().unwrap() < 0.9, "{:?}", rows[2]);
        }
    }
}
