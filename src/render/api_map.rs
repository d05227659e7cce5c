//! Which APIs a script may call, and which Python callables replay them,
//! per framework and prefix.
//!
//! An op name reaches generated code only when the framework exposes it
//! under the dump's prefix ([`exposed`]): it is on msprobe's hook list for
//! that framework and prefix (`runtime/src/ops/hooks.rs`), or the runtime's op
//! table replays `Prefix.op` for that framework. A dotted name
//! (`linalg.vector_norm`) passes only where a list holds it. Module paths are
//! constants of this file, so the rendered call path is made of table
//! entries and constants, never of dump text.

use runtime::ops::hooks::{self, HookList};
use runtime::ops;

use crate::model::{ApiName, Framework, Prefix};

/// msprobe's hook list of `framework` under `prefix` (none for a prefix
/// its dumps are not replayed under).
fn hook_list(framework: Framework, prefix: Prefix) -> Option<&'static HookList> {
    hooks::hook_list(framework, prefix.as_str())
}


/// A dumped API that its framework does not expose under its prefix; no
/// script or project is made for it. The message is the expectation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected an API that {module} exposes under {prefix} (msprobe's list or the runtime's op table)")]
pub struct NotExposed {
    /// `torch` or `mindspore`.
    pub module: &'static str,
    /// The dump's prefix.
    pub prefix: &'static str,
}

/// Whether `framework` exposes `name` under its prefix: msprobe's hook list
/// holds the op (for PyTorch's `Torch` prefix also as `linalg.<op>`, the
/// torch.linalg functions msprobe dumps by their last name), or the
/// runtime's op table replays `Prefix.op` for `framework`.
pub fn exposed(framework: Framework, name: &ApiName) -> Result<(), NotExposed> {
    let op = name.op.as_str();
    let on_list = hook_list(framework, name.prefix).is_some_and(|list| {
        list.contains(op) || (name.prefix == Prefix::Torch && !op.contains('.') && list.contains(&format!("linalg.{op}")))
    });
    let in_table = name.prefix.replayable_in(framework) && ops::lookup(framework, &format!("{}.{op}", name.prefix.as_str())).is_some();
    if on_list || in_table {
        Ok(())
    } else {
        let module = match framework {
            Framework::PyTorch => "torch",
            Framework::MindSpore => "mindspore",
        };
        Err(NotExposed { module, prefix: name.prefix.as_str() })
    }
}

/// The modules a script of `framework` imports for its `tested` callable
/// (the bench's torch modules come with `import torch`).
pub fn modules(framework: Framework) -> &'static [&'static str] {
    match framework {
        Framework::PyTorch => &["torch"],
        Framework::MindSpore => &["mindspore", "mindspore.mint", "mindspore.mint.nn.functional", "mindspore.ops"],
    }
}

/// A Python callable as `module` + `attr`, with an optional note for the reader.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Callable {
    /// Module path, e.g. `torch.nn.functional`; empty for a helper defined in the script.
    pub module: &'static str,
    /// Attribute (the op, or a helper's name).
    pub attr: String,
    /// Why this mapping was chosen, when it is not the obvious one.
    pub note: Option<&'static str>,
}

fn torch_for(prefix: Prefix, op: &str) -> Callable {
    let plain = |module| Callable { module, attr: op.to_string(), note: None };
    match prefix {
        Prefix::Tensor => plain("torch.Tensor"),
        Prefix::Functional | Prefix::MintFunctional => plain("torch.nn.functional"),
        Prefix::Torch | Prefix::Mint => {
            if let Some(rest) = op.strip_prefix("linalg.") {
                Callable { module: "torch.linalg", attr: rest.to_string(), note: None }
            } else if hooks::TORCH_LINALG_ONLY.contains(op) {
                Callable {
                    module: "torch.linalg",
                    attr: op.to_string(),
                    note: Some("msprobe dumps torch.linalg functions by their last name; this one exists only in torch.linalg"),
                }
            } else {
                plain("torch")
            }
        }
    }
}

/// The callable under test (on the device, in the dumped dtype).
pub fn tested(framework: Framework, name: &ApiName) -> Callable {
    match framework {
        Framework::PyTorch => torch_for(name.prefix, &name.op),
        Framework::MindSpore => {
            let module = match name.prefix {
                Prefix::Mint => "mindspore.mint",
                Prefix::MintFunctional => "mindspore.mint.nn.functional",
                Prefix::Tensor => "mindspore.Tensor",
                Prefix::Functional | Prefix::Torch => "mindspore.ops",
            };
            Callable { module, attr: name.op.clone(), note: None }
        }
    }
}

/// What is judged of the outputs of `name` when the op table says their
/// values are undefined (uninitialized memory, [`ops::Op::values_undefined`]):
/// the Message of their rows (the runtime's is the same).
pub fn undefined_outputs(framework: Framework, name: &ApiName) -> Option<&'static str> {
    let undefined = ops::lookup(framework, &format!("{}.{}", name.prefix.as_str(), name.op)).is_some_and(|op| op.values_undefined());
    undefined.then_some("values undefined (uninitialized memory): only the shape is compared")
}

/// Tensor methods that cast to a fixed dtype, and the cast the bench makes
/// instead: to the raised dtype (float16/bfloat16 -> float32, float32 ->
/// float64), as the bench raises every input and dtype argument. The same
/// method names in both frameworks.
const RAISED_CASTS: &[(&str, &str)] = &[("half", "float"), ("bfloat16", "float"), ("float", "double")];

/// The bench callable (torch on the CPU at raised precision).
pub fn bench(framework: Framework, name: &ApiName) -> Callable {
    if name.prefix == Prefix::Tensor {
        if let Some(&(_, raised)) = RAISED_CASTS.iter().find(|(op, _)| *op == name.op) {
            return Callable {
                module: "torch.Tensor",
                attr: raised.to_string(),
                note: Some("the bench casts to the raised dtype, as it raises every input and dtype argument"),
            };
        }
    }
    if framework == Framework::MindSpore {
        if let Some(&(_, _, attr, note)) = MINDSPORE_BENCH_HELPERS.iter().find(|(p, op, _, _)| *p == name.prefix && *op == name.op) {
            return Callable { module: "", attr: attr.to_string(), note: Some(note) };
        }
        if let Some(&(_, _, module, attr, note)) = MINDSPORE_BENCH_RENAMES.iter().find(|(p, op, _, _, _)| *p == name.prefix && *op == name.op) {
            return Callable { module, attr: attr.to_string(), note: Some(note) };
        }
    }
    match (framework, name.prefix) {
        // mindspore.ops functions: torch.nn.functional when it has the name, else torch.
        (Framework::MindSpore, Prefix::Functional) => match name.op.as_str() {
            op if hook_list(Framework::PyTorch, Prefix::Functional).is_some_and(|l| l.contains(op)) => torch_for(Prefix::Functional, op),
            op => Callable {
                module: "torch",
                attr: op.to_string(),
                note: Some("torch.nn.functional has no such name; the bench uses the torch function of the same name"),
            },
        },
        _ => torch_for(name.prefix, &name.op),
    }
}

/// The names of the bench helpers `python/msprobe_rs/repro/ms_bench.py`
/// defines that the bench table names (rendered into the scripts' tables).
pub fn ms_bench_helpers() -> impl Iterator<Item = &'static str> {
    MINDSPORE_BENCH_HELPERS.iter().map(|&(_, _, attr, _)| attr)
}

/// MindSpore APIs whose signature, defaults or index dtypes differ from the
/// torch function of their name: (prefix, op, the helper
/// `python/msprobe_rs/repro/ms_bench.py` defines with MindSpore's signature, why). A helper takes
/// MindSpore's keyword names (the script does not rename them to torch's).
const MINDSPORE_BENCH_HELPERS: &[(Prefix, &str, &str, &str)] = &[
    (Prefix::Functional, "gather", "ms_ops_gather", "mindspore.ops.gather(params, indices, axis) takes whole slices; torch.gather does not"),
    (Prefix::Functional, "conv2d", "ms_ops_conv2d", "mindspore.ops.conv2d takes pad_mode ('valid', 'same', 'pad'); torch.nn.functional.conv2d does not, and pads evenly only"),
    (Prefix::Functional, "cross_entropy", "ms_ops_cross_entropy", "torch wants int64 class indices; MindSpore takes Int32"),
    (Prefix::Functional, "nll_loss", "ms_ops_nll_loss", "torch wants int64 class indices, and its nll_loss has neither MindSpore's argument order nor its label_smoothing"),
    (
        Prefix::Functional,
        "binary_cross_entropy_with_logits",
        "ms_ops_binary_cross_entropy_with_logits",
        "mindspore.ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction): torch's fourth argument is size_average",
    ),
    (Prefix::MintFunctional, "binary_cross_entropy", "ms_mint_binary_cross_entropy", "mint's binary_cross_entropy takes reduction fourth; torch's fourth argument is size_average"),
    (Prefix::Functional, "l1_loss", "ms_ops_l1_loss", "mindspore.ops.l1_loss takes reduction third; torch's third argument is size_average"),
    (Prefix::Functional, "mse_loss", "ms_ops_mse_loss", "mindspore.ops.mse_loss takes reduction third; torch's third argument is size_average"),
    (Prefix::Functional, "smooth_l1_loss", "ms_ops_smooth_l1_loss", "mindspore.ops.smooth_l1_loss takes beta third and reduces with 'none' by default; torch takes size_average third and 'mean'"),
    (Prefix::Functional, "kl_div", "ms_ops_kl_div", "mindspore.ops.kl_div takes reduction third; torch's third argument is size_average"),
    (Prefix::Functional, "one_hot", "ms_ops_one_hot", "mindspore.ops.one_hot(indices, depth, on_value, off_value, axis); torch's one_hot takes int64 indices and a class count only"),
    (Prefix::Functional, "index_add", "ms_ops_index_add", "mindspore.ops.index_add(x, indices, y, axis) is torch.index_add(x, axis, indices, y)"),
    (Prefix::Functional, "tensor_scatter_elements", "ms_ops_tensor_scatter_elements", "torch.scatter or scatter_add by the reduction, with int64 indices"),
    (Prefix::Functional, "clip_by_global_norm", "ms_ops_clip_by_global_norm", "torch has no such function: every tensor scaled by clip_norm / max(global norm, clip_norm)"),
    (Prefix::Functional, "assign", "ms_ops_assign", "torch has no such function: the variable takes the value's values (Tensor.copy_)"),
    (
        Prefix::Functional,
        "dropout",
        "ms_ops_dropout",
        "MindSpore and torch draw different random masks: the bench keeps the elements the tested run kept, scaled by 1 / (1 - p)",
    ),
    (Prefix::Tensor, "transpose", "ms_tensor_transpose", "mindspore.Tensor.transpose(*axes) permutes all axes like numpy; torch.Tensor.transpose swaps two"),
    (Prefix::Tensor, "var", "ms_tensor_var", "mindspore.Tensor.var(axis, ddof=0, keepdims) divides by N by default; torch by N - 1"),
    (Prefix::Tensor, "std", "ms_tensor_std", "mindspore.Tensor.std(axis, ddof=0, keepdims) divides by N by default; torch by N - 1"),
];

/// MindSpore APIs whose torch bench is a torch callable of another name:
/// (prefix, op, module, attr, why).
const MINDSPORE_BENCH_RENAMES: &[(Prefix, &str, &str, &str, &str)] =
    &[(Prefix::Functional, "dense", "torch.nn.functional", "linear", "mindspore.ops.dense(input, weight, bias) is torch's linear")];

#[cfg(test)]
mod tests {
    use super::*;

    fn path(c: Callable) -> String {
        format!("{}.{}", c.module, c.attr)
    }

    #[test]
    fn maps_prefixes() {
        let n = |s| ApiName::parse(s).unwrap();
        assert_eq!(path(tested(Framework::PyTorch, &n("Functional.softmax.0"))), "torch.nn.functional.softmax");
        assert_eq!(path(tested(Framework::PyTorch, &n("Torch.vector_norm.0"))), "torch.linalg.vector_norm");
        assert_eq!(path(tested(Framework::PyTorch, &n("Torch.norm.0"))), "torch.norm");
        assert_eq!(path(tested(Framework::MindSpore, &n("Functional.gather.0"))), "mindspore.ops.gather");
        assert_eq!(bench(Framework::MindSpore, &n("Functional.gather.0")).attr, "ms_ops_gather");
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.log_softmax.0"))), "torch.nn.functional.log_softmax");
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.matmul.0"))), "torch.matmul");
        assert_eq!(path(bench(Framework::MindSpore, &n("Mint.split.0"))), "torch.split");
        assert_eq!(bench(Framework::MindSpore, &n("Tensor.transpose.0")).attr, "ms_tensor_transpose");
        assert_eq!(path(bench(Framework::PyTorch, &n("Tensor.transpose.0"))), "torch.Tensor.transpose");
        assert_eq!(path(bench(Framework::MindSpore, &n("MintFunctional.linear.0"))), "torch.nn.functional.linear");
    }

    #[test]
    fn only_names_a_table_holds_are_exposed() {
        let n = |s| ApiName::parse(s).unwrap();
        let (pt, ms) = (Framework::PyTorch, Framework::MindSpore);
        for (fw, ok) in [
            (pt, "Torch.matmul.0"),
            (pt, "Torch.vector_norm.0"),         // msprobe's linalg.vector_norm, dumped by its last name
            (pt, "Torch.linalg.vector_norm.0"),  // the dotted name, where the list has it
            (pt, "Functional.rms_norm.0"),       // the runtime's op table only
            (pt, "Tensor.__setitem__.0"),
            (ms, "Mint.split.0"),
            (ms, "MintFunctional.rms_norm.0"),   // the runtime's op table only
            (ms, "Functional.gather.0"),
        ] {
            assert_eq!(exposed(fw, &n(ok)), Ok(()), "{ok}");
        }
        let refused = |fw, s| exposed(fw, &n(s)).unwrap_err().to_string();
        assert_eq!(refused(pt, "Torch.os.system.0"), "expected an API that torch exposes under Torch (msprobe's list or the runtime's op table)");
        assert_eq!(refused(ms, "Mint.os.system.0"), "expected an API that mindspore exposes under Mint (msprobe's list or the runtime's op table)");
        for (fw, bad) in [
            (pt, "Torch.system.0"),
            (pt, "Torch.linalg.system.0"),
            (pt, "Functional.linalg.norm.0"),  // linalg only under Torch
            (pt, "Tensor.vector_norm.0"),
            (pt, "Mint.add.0"),                // a MindSpore prefix in a PyTorch dump, though the table has Mint.add
            (ms, "Torch.matmul.0"),            // not replayed for MindSpore dumps
            (ms, "Functional.eval.0"),
            (pt, "Tensor.__class__.0"),
        ] {
            assert!(exposed(fw, &n(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_hold_identifiers_only() {
        for list in hooks::LISTS.iter().chain([&hooks::TORCH_LINALG_ONLY]) {
            for name in list.names() {
                // A name a dump key can carry: `op` or, on the Torch list, `linalg.op`.
                let parsed = ApiName::parse(&format!("Torch.{name}.0")).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(!parsed.op.contains('.') || (list.prefix == "Torch" && name.starts_with("linalg.")), "{name}");
            }
        }
    }

    #[test]
    fn every_bench_helper_is_defined_in_the_package() {
        let helpers = include_str!("../../python/msprobe_rs/repro/ms_bench.py");
        for (prefix, op, attr, _) in MINDSPORE_BENCH_HELPERS {
            assert!(helpers.contains(&format!("\ndef {attr}(")), "{attr} is not defined in python/msprobe_rs/repro/ms_bench.py");
            assert!(attr.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'), "{attr}");
            let name = ApiName::parse(&format!("{}.{op}.0", prefix.as_str())).unwrap();
            assert_eq!(exposed(Framework::MindSpore, &name), Ok(()), "{op}");
            assert_eq!(bench(Framework::MindSpore, &name).attr, *attr);
        }
        let n = |s| ApiName::parse(s).unwrap();
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.dense.0"))), "torch.nn.functional.linear");
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.conv2d.0"))), ".ms_ops_conv2d");
        // The PyTorch bench of the same names stays torch's.
        assert_eq!(path(bench(Framework::PyTorch, &n("Functional.conv2d.0"))), "torch.nn.functional.conv2d");
        assert_eq!(path(bench(Framework::PyTorch, &n("Tensor.var.0"))), "torch.Tensor.var");
    }

    #[test]
    fn casts_to_a_fixed_dtype_are_raised_on_the_bench() {
        let n = |s| ApiName::parse(s).unwrap();
        for fw in [Framework::PyTorch, Framework::MindSpore] {
            assert_eq!(path(bench(fw, &n("Tensor.half.0"))), "torch.Tensor.float");
            assert_eq!(path(bench(fw, &n("Tensor.bfloat16.0"))), "torch.Tensor.float");
            assert_eq!(path(bench(fw, &n("Tensor.float.0"))), "torch.Tensor.double");
            assert_eq!(path(bench(fw, &n("Tensor.double.0"))), "torch.Tensor.double");
        }
        assert_eq!(path(tested(Framework::PyTorch, &n("Tensor.half.0"))), "torch.Tensor.half");
        assert_eq!(path(tested(Framework::MindSpore, &n("Tensor.float.0"))), "mindspore.Tensor.float");
    }
}
