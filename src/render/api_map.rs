//! Which Python callables replay a dumped API, per framework and prefix.
//!
//! Module paths are constants of this table; the op name is a validated
//! identifier (see `model::ApiName`), so the rendered call path is plain
//! code that a dump cannot alter.

use crate::model::{ApiName, Framework, Prefix};

const TORCH_FUNCTIONAL: &str = include_str!("../../templates/api_names/torch_functional.txt");
const TORCH_LINALG_ONLY: &str = include_str!("../../templates/api_names/torch_linalg_only.txt");

fn listed(list: &str, name: &str) -> bool {
    list.lines().any(|l| l.trim() == name)
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
            } else if listed(TORCH_LINALG_ONLY, op) {
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
    match (framework, name.prefix) {
        // mindspore.ops functions: torch.nn.functional when it has the name, else torch;
        // a few differ in signature and get a helper in the script.
        (Framework::MindSpore, Prefix::Functional) => match name.op.as_str() {
            "gather" => Callable {
                module: "",
                attr: "ms_ops_gather".into(),
                note: Some("mindspore.ops.gather(params, indices, axis) takes whole slices; torch.gather does not"),
            },
            op if listed(TORCH_FUNCTIONAL, op) => torch_for(Prefix::Functional, op),
            op => Callable {
                module: "torch",
                attr: op.to_string(),
                note: Some("torch.nn.functional has no such name; the bench uses the torch function of the same name"),
            },
        },
        (Framework::MindSpore, Prefix::Tensor) if name.op == "transpose" => Callable {
            module: "",
            attr: "ms_tensor_transpose".into(),
            note: Some("mindspore.Tensor.transpose(*axes) permutes all axes like numpy; torch.Tensor.transpose swaps two"),
        },
        _ => torch_for(name.prefix, &name.op),
    }
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
