//! The one bridge from the dump model to the runtime: an [`ApiCall`] and
//! its settings become a [`runtime::spec::Replay`]. `replay` runs what this
//! makes; `op_generate --lang rust` renders it as code. No other code maps
//! model values to runtime specs.

use std::path::Path;

use runtime::spec::{ApiId, Replay, Spec, TensorSpec};

use crate::config::OpConfig;
use crate::model::{ApiCall, ApiName, Arg, Direction, Framework, Stat};

fn stat(s: Stat) -> Option<f64> {
    match s {
        Stat::Num(x) => Some(x),
        Stat::Bool(b) => Some(b as u8 as f64),
        Stat::Missing => None,
    }
}

/// A dumped value as a runtime spec; tensor files are joined to `data_dir`
/// (their names are bare file names, `crate::model`), and the runtime opens
/// them only inside it (`runtime::io::open_inside`).
fn spec(a: &Arg, data_dir: Option<&Path>) -> Spec {
    match a {
        Arg::Tensor(t) => Spec::Tensor(TensorSpec {
            dtype: t.dtype,
            // A dimension beyond usize (32-bit hosts) saturates: over every limit.
            shape: t.shape.iter().map(|&d| usize::try_from(d).unwrap_or(usize::MAX)).collect(),
            low: stat(t.min),
            high: stat(t.max),
            requires_grad: t.requires_grad,
            data: match (&t.data_name, data_dir) {
                (Some(n), Some(d)) => Some(d.join(n)),
                _ => None,
            },
        }),
        Arg::Bool(b) => Spec::Bool(*b),
        Arg::Int(i) => Spec::Int(*i),
        Arg::Float(x) => Spec::Float(*x),
        Arg::Str(s) => Spec::Str(s.clone()),
        Arg::Slice([a, b, c]) => Spec::Slice(*a, *b, *c),
        Arg::Ellipsis => Spec::Ellipsis,
        Arg::Size(d) => Spec::List(d.iter().map(|&x| Spec::Int(x)).collect()),
        Arg::DType(d) => Spec::DType(*d),
        // The device side is the runtime's; memory formats do not change values.
        Arg::Device(_) | Arg::MemoryFormat(_) | Arg::None | Arg::Unsupported(_) => Spec::None,
        Arg::List(items) => Spec::List(items.iter().map(|x| spec(x, data_dir)).collect()),
    }
}

/// The runtime's name of a call.
fn api_id(name: &ApiName) -> ApiId {
    ApiId { prefix: name.prefix, op: name.op.clone(), call: name.call.clone() }
}

/// The runtime's description of one call in `direction`. Tensor files are
/// found in `data_dir`; with `use_recorded`, a tensor dump's recorded
/// outputs are the tested side.
pub fn to_replay(call: &ApiCall, framework: Framework, config: &OpConfig, direction: Direction, data_dir: Option<&Path>, use_recorded: bool) -> Replay {
    let specs = |args: &[Arg]| args.iter().map(|a| spec(a, data_dir)).collect::<Vec<_>>();
    Replay {
        api: api_id(&call.name),
        framework,
        args: specs(&call.forward.args),
        kwargs: call.forward.kwargs.iter().map(|(k, v)| (k.clone(), spec(v, data_dir))).collect(),
        outputs: specs(&call.forward.outputs),
        grad_outputs: match (&call.backward, direction) {
            (Some(b), Direction::Backward) => Some(specs(&b.grad_outputs)),
            _ => None,
        },
        grad_inputs: call.backward.as_ref().map(|b| specs(&b.grad_inputs)).unwrap_or_default(),
        data_mode: config.data_mode,
        seed: config.random_seed,
        iterations: config.iter_times,
        cosine_threshold: config.cosine_threshold,
        max_abs_err_threshold: config.max_abs_err_threshold,
        standard: config.standard,
        use_recorded,
        dump_device: config.dump_device,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DumpInput;
    use crate::model::TDType;

    #[test]
    fn complex_tensors_stay_tensors_and_sizes_become_lists() {
        let fwd = serde_json::json!({
            "input_args": [{"type": "torch.Tensor", "dtype": "torch.complex64", "shape": [2], "Max": 1.0, "Min": 0.0, "data_name": "x.pt"}],
            "input_kwargs": {"size": {"type": "torch.Size", "value": [2, 3]}},
            "output": [],
        });
        let call = ApiCall::from_entries(ApiName::parse("Torch.view.0").unwrap(), &fwd, None).unwrap();
        let r = to_replay(&call, Framework::PyTorch, &OpConfig::defaults(DumpInput::Extract("d".into())), Direction::Forward, Some(Path::new("dd")), true);
        assert_eq!(r.api.to_string(), "Torch.view.0");
        let Spec::Tensor(t) = &r.args[0] else { panic!("{:?}", r.args[0]) };
        assert_eq!((t.dtype, t.data.as_deref()), (TDType::C64, Some(Path::new("dd/x.pt"))));
        assert_eq!(r.kwargs[0].1, Spec::List(vec![Spec::Int(2), Spec::Int(3)]));
        assert!(r.grad_outputs.is_none());
    }
}
