//! Which APIs a script may call, and which Python callables replay them,
//! per framework and prefix.
//!
//! An op name reaches generated code only when the framework exposes it
//! under the dump's prefix ([`exposed`]): it is on msprobe's hook list for
//! that framework and prefix (`runtime/src/ops/hooks.rs`), or the runtime's op
//! table replays `Prefix.op` for that framework. A dotted name
//! (`linalg.vector_norm`) passes only where a list holds it. Module paths are
//! constants of this file, so the rendered call path is made of table
//! entries and constants, never of dump text. Which bench callable replays
//! an API that torch's function of its name does not is the op table's
//! module's (`runtime/src/ops/bench.rs`).

use runtime::ops;
use runtime::ops::bench;
use runtime::ops::hooks;

use crate::model::{ApiName, Framework, Prefix};

/// A dumped API that its framework does not expose under its prefix; no
/// script or project is made for it. The message is the expectation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected an API that {module} exposes under {prefix} ({whence})")]
pub struct NotExposed {
    /// `torch`, `torch_npu`, `mindspore`, `MSAdapter's torch` or `MSAdapter's torch_npu`.
    pub module: &'static str,
    /// The dump's prefix.
    pub prefix: &'static str,
    /// Where such APIs are listed.
    pub whence: &'static str,
}

const LIST_OR_TABLE: &str = "msprobe's list or the runtime's op table";
const TABLE_ONLY: &str = "the runtime's op table only: an NPU call's bench is its reference there";

/// Whether `framework` exposes `name` under its prefix: msprobe's hook list
/// holds the op (for PyTorch's `Torch` prefix also as `linalg.<op>`, the
/// torch.linalg functions msprobe dumps by their last name), or the
/// runtime's op table replays `Prefix.op` for `framework`. An `NPU` name
/// must be in the op table: no CPU function of torch replays it, so its
/// bench is the table's reference (its hook list says what dumps may hold).
pub fn exposed(framework: Framework, name: &ApiName) -> Result<(), NotExposed> {
    let op = name.op.as_str();
    let needs_table = name.prefix == Prefix::Npu;
    let on_list = !needs_table
        && hooks::hook_list(framework, name.prefix)
            .is_some_and(|list| list.contains(op) || (name.prefix == Prefix::Torch && !op.contains('.') && list.contains(&format!("linalg.{op}"))));
    let in_table = name.prefix.replayable_in(framework) && ops::lookup(framework, &name.op_key()).is_some();
    if on_list || in_table {
        Ok(())
    } else {
        let module = match framework {
            Framework::PyTorch if name.prefix == Prefix::Npu => "torch_npu",
            Framework::PyTorch => "torch",
            Framework::MindSpore => "mindspore",
            Framework::MindTorch if name.prefix == Prefix::Npu => "MSAdapter's torch_npu",
            Framework::MindTorch => "MSAdapter's torch",
        };
        let whence = if needs_table && framework != Framework::MindSpore { TABLE_ONLY } else { LIST_OR_TABLE };
        Err(NotExposed { module, prefix: name.prefix.as_str(), whence })
    }
}

/// The modules a script of `framework` imports for its `tested` callable
/// (the bench's torch modules come with `import torch`). An MSAdapter
/// script's head imports MindSpore only: its machinery binds `msadapter`
/// and `torch` (`python/msprobe_rs/repro/two_torches.py`).
pub fn modules(framework: Framework) -> &'static [&'static str] {
    match framework {
        Framework::PyTorch => &["torch"],
        Framework::MindTorch => &["mindspore"],
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
        Prefix::Npu => plain("torch_npu"),
        Prefix::Vf => plain("torch._VF"),
        Prefix::Aten => plain("torch.ops.aten"),
        Prefix::Distributed | Prefix::MintDistributed => plain("torch.distributed"),
        // Not torch's: never exposed ([`exposed`]: no hook list, not in the table).
        Prefix::Primitive | Prefix::Jit | Prefix::MindSpeed => plain("torch"),
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

/// MSAdapter's torch module as an MSAdapter script binds it
/// (`python/msprobe_rs/repro/two_torches.py`), and its modules as attributes
/// of it, by the real torch's module path.
fn msadapter_module(torch_module: &'static str) -> &'static str {
    match torch_module {
        "torch" => "msadapter",
        "torch.Tensor" => "msadapter.Tensor",
        "torch.nn.functional" => "msadapter.nn.functional",
        "torch.linalg" => "msadapter.linalg",
        "torch._VF" => "msadapter._VF",
        "torch.ops.aten" => "msadapter.ops.aten",
        "torch.distributed" => "msadapter.distributed",
        other => unreachable!("torch_for has no module {other}"),
    }
}

/// The callable under test (on the device, in the dumped dtype; MSAdapter's
/// torch has the real one's paths, below its own module).
pub fn tested(framework: Framework, name: &ApiName) -> Callable {
    match framework {
        Framework::PyTorch => torch_for(name.prefix, &name.op),
        Framework::MindTorch => {
            let torch = torch_for(name.prefix, &name.op);
            Callable { module: msadapter_module(torch.module), ..torch }
        }
        Framework::MindSpore => {
            let module = match name.prefix {
                Prefix::Mint => "mindspore.mint",
                Prefix::MintFunctional => "mindspore.mint.nn.functional",
                Prefix::Tensor => "mindspore.Tensor",
                Prefix::MintDistributed => "mindspore.mint.distributed",
                // Torch, NPU and the prefixes without an op table are never
                // exposed in MindSpore dumps ([`exposed`]).
                Prefix::Functional
                | Prefix::Torch
                | Prefix::Npu
                | Prefix::Vf
                | Prefix::Aten
                | Prefix::Distributed
                | Prefix::Primitive
                | Prefix::Jit
                | Prefix::MindSpeed => "mindspore.ops",
            };
            Callable { module, attr: name.op.clone(), note: None }
        }
    }
}

/// The bench callable (torch on the CPU at raised precision).
pub fn bench(framework: Framework, name: &ApiName) -> Callable {
    let api = name.op_key();
    if let Some(raised) = bench::raised_cast(&api) {
        return Callable {
            module: "torch.Tensor",
            attr: raised.to_string(),
            note: Some("the bench casts to the raised dtype, as it raises every input and dtype argument"),
        };
    }
    if framework == Framework::MindSpore {
        if let Some(h) = bench::mindspore_helper(&api) {
            return Callable { module: "", attr: h.helper.to_string(), note: Some(h.why) };
        }
        if let Some(r) = bench::mindspore_rename(&api) {
            return Callable { module: r.module, attr: r.attr.to_string(), note: Some(r.why) };
        }
    }
    if name.prefix == Prefix::Npu {
        return Callable {
            module: "",
            attr: format!("{NPU_REFERENCE}{}", name.op),
            note: Some("torch_npu's kernels run on the NPU only: the bench is the machinery's torch reference (npu_bench.py)"),
        };
    }
    match (framework, name.prefix) {
        // mindspore.ops functions: torch.nn.functional when it has the name, else torch.
        (Framework::MindSpore, Prefix::Functional) => match name.op.as_str() {
            op if hooks::hook_list(Framework::PyTorch, Prefix::Functional).is_some_and(|l| l.contains(op)) => torch_for(Prefix::Functional, op),
            op => Callable {
                module: "torch",
                attr: op.to_string(),
                note: Some("torch.nn.functional has no such name; the bench uses the torch function of the same name"),
            },
        },
        _ => torch_for(name.prefix, &name.op),
    }
}

/// The prefix of an NPU call's bench in `python/msprobe_rs/repro/npu_bench.py` (`ref_<op>`).
const NPU_REFERENCE: &str = "ref_";

/// The ops of the op table's `NPU.` names, sorted: each has its reference
/// `ref_<op>` in `python/msprobe_rs/repro/npu_bench.py` (rendered into the scripts' tables).
pub fn npu_references() -> Vec<&'static str> {
    let mut ops: Vec<&str> = ops::table().flat_map(|op| op.names.iter().filter_map(|n| n.strip_prefix("NPU."))).collect();
    ops.sort_unstable();
    ops
}

/// The names of the bench helpers `python/msprobe_rs/repro/ms_bench.py`
/// defines that the bench table names (rendered into the scripts' tables).
pub fn ms_bench_helpers() -> impl Iterator<Item = &'static str> {
    bench::MINDSPORE_HELPERS.iter().map(|h| h.helper)
}

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
        assert_eq!(path(tested(Framework::PyTorch, &n("NPU.npu_rms_norm.0"))), "torch_npu.npu_rms_norm");
        assert_eq!(
            (bench(Framework::PyTorch, &n("NPU.npu_linear.0")).module, bench(Framework::PyTorch, &n("NPU.npu_linear.0")).attr.as_str()),
            ("", "ref_npu_linear")
        );
        assert!(npu_references().contains(&"npu_linear") && npu_references().contains(&"npu_fusion_attention"));
        assert_eq!(path(tested(Framework::MindSpore, &n("Functional.gather.0"))), "mindspore.ops.gather");
        assert_eq!(bench(Framework::MindSpore, &n("Functional.gather.0")).attr, "ms_ops_gather");
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.log_softmax.0"))), "torch.nn.functional.log_softmax");
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.matmul.0"))), "torch.matmul");
        assert_eq!(path(bench(Framework::MindSpore, &n("Mint.split.0"))), "torch.split");
        assert_eq!(bench(Framework::MindSpore, &n("Tensor.transpose.0")).attr, "ms_tensor_transpose");
        assert_eq!(path(bench(Framework::PyTorch, &n("Tensor.transpose.0"))), "torch.Tensor.transpose");
        assert_eq!(path(bench(Framework::MindSpore, &n("MintFunctional.linear.0"))), "torch.nn.functional.linear");
        // MSAdapter's dumps: its torch tested, the real torch bench.
        assert_eq!(path(tested(Framework::MindTorch, &n("Tensor.reshape.779"))), "msadapter.Tensor.reshape");
        assert_eq!(path(tested(Framework::MindTorch, &n("Functional.softmax.0"))), "msadapter.nn.functional.softmax");
        assert_eq!(path(tested(Framework::MindTorch, &n("Torch.matmul.0"))), "msadapter.matmul");
        assert_eq!(path(bench(Framework::MindTorch, &n("Tensor.reshape.779"))), "torch.Tensor.reshape");
        assert_eq!(path(bench(Framework::MindTorch, &n("Tensor.float.0"))), "torch.Tensor.double");
    }

    #[test]
    fn only_names_a_table_holds_are_exposed() {
        let n = |s| ApiName::parse(s).unwrap();
        let (pt, ms, mt) = (Framework::PyTorch, Framework::MindSpore, Framework::MindTorch);
        for (fw, ok) in [
            (mt, "Torch.matmul.0"), // MSAdapter's dumps: PyTorch's names
            (mt, "Tensor.reshape.0"),
            (mt, "Functional.smooth_l1_loss.0"),
            (pt, "Torch.matmul.0"),
            (pt, "Torch.vector_norm.0"),        // msprobe's linalg.vector_norm, dumped by its last name
            (pt, "Torch.linalg.vector_norm.0"), // the dotted name, where the list has it
            (pt, "Functional.rms_norm.0"),      // the runtime's op table only
            (pt, "NPU.npu_rms_norm.0"),         // torch_npu's, with a reference in the op table
            (mt, "NPU.npu_fusion_attention.0"), // MSAdapter's torch_npu
            (pt, "Tensor.__setitem__.0"),
            (ms, "Mint.split.0"),
            (ms, "MintFunctional.rms_norm.0"), // the runtime's op table only
            (ms, "Functional.gather.0"),
        ] {
            assert_eq!(exposed(fw, &n(ok)), Ok(()), "{ok}");
        }
        let refused = |fw, s| exposed(fw, &n(s)).unwrap_err().to_string();
        assert_eq!(refused(pt, "Torch.os.system.0"), "expected an API that torch exposes under Torch (msprobe's list or the runtime's op table)");
        assert_eq!(refused(ms, "Mint.os.system.0"), "expected an API that mindspore exposes under Mint (msprobe's list or the runtime's op table)");
        let npu = "expected an API that torch_npu exposes under NPU (the runtime's op table only: an NPU call's bench is its reference there)";
        assert_eq!(refused(pt, "NPU.npu_no_such_op.0"), npu);
        assert_eq!(refused(pt, "NPU.npu_gru.0"), npu, "on msprobe's list, without a reference");
        assert_eq!(
            refused(mt, "NPU.npu_gru.0"),
            "expected an API that MSAdapter's torch_npu exposes under NPU (the runtime's op table only: an NPU call's bench is its reference there)"
        );
        assert_eq!(refused(ms, "NPU.npu_rms_norm.0"), "expected an API that mindspore exposes under NPU (msprobe's list or the runtime's op table)");
        assert_eq!(refused(mt, "Tensor.os.system.0"), "expected an API that MSAdapter's torch exposes under Tensor (msprobe's list or the runtime's op table)");
        for (fw, bad) in [
            (pt, "Torch.system.0"),
            (pt, "Torch.linalg.system.0"),
            (pt, "Functional.linalg.norm.0"), // linalg only under Torch
            (pt, "Tensor.vector_norm.0"),
            (pt, "Mint.add.0"),     // a MindSpore prefix in a PyTorch dump, though the table has Mint.add
            (ms, "Torch.matmul.0"), // not replayed for MindSpore dumps
            (ms, "Functional.eval.0"),
            (mt, "Mint.add.0"),         // MindSpore's prefixes are not MSAdapter's
            (mt, "Functional.dense.0"), // mindspore.ops, not torch.nn.functional
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
                assert!(!parsed.op.contains('.') || (list.prefix == Prefix::Torch && name.starts_with("linalg.")), "{name}");
            }
        }
    }

    #[test]
    fn every_bench_helper_is_defined_in_the_package() {
        let helpers = include_str!("../../python/msprobe_rs/repro/ms_bench.py");
        for h in bench::MINDSPORE_HELPERS {
            let attr = h.helper;
            assert!(helpers.contains(&format!("\ndef {attr}(")), "{attr} is not defined in python/msprobe_rs/repro/ms_bench.py");
            let name = ApiName::parse(&format!("{}.0", h.api)).unwrap();
            assert_eq!(exposed(Framework::MindSpore, &name), Ok(()), "{}", h.api);
            assert_eq!(bench(Framework::MindSpore, &name).attr, attr);
        }
        let n = |s| ApiName::parse(s).unwrap();
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.dense.0"))), "torch.nn.functional.linear");
        // MindSpore's own spellings: torch's function of another name (or module).
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.floor_div.0"))), "torch.floor_divide");
        assert_eq!(path(bench(Framework::MindSpore, &n("Tensor.equal.0"))), "torch.Tensor.eq");
        assert_eq!(path(bench(Framework::MindSpore, &n("Functional.bessel_k0e.0"))), "torch.special.scaled_modified_bessel_k0");
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
