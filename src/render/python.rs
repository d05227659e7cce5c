//! The context of the Python templates (`templates/python/`): an [`ApiCall`]
//! and its settings as the scripts see them. Every dump value arrives here
//! already as a Python literal (see [`super::literal`]); the templates only
//! arrange literals, and the callables come from [`super::api_map`].

use runtime::bind;
use runtime::grad_layout::{self, GradInput, Place};
use runtime::{exit, ops, pyfmt};
use serde::Serialize;

use super::api_map::{self, Callable, NotExposed};
use super::literal::{py_bool, py_float, py_opt, py_str};
use crate::config::OpConfig;
use crate::model::{ApiCall, Arg, Direction, Framework, Stat, TDType};
use crate::paths::PathRef;

/// One argument value for the templates, tagged by `kind`.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArgCtx {
    /// A dumped tensor (`TensorSpec(...)` in the script).
    Tensor {
        /// dtype string literal in the framework's spelling (`torch.float32`, `Float32`).
        dtype: String,
        /// Shape as a Python list literal.
        dims: String,
        /// Dumped Min (literal or `None`).
        low: String,
        /// Dumped Max (literal or `None`).
        high: String,
        /// `True`/`False`/`None`.
        requires_grad: String,
        /// File name literal or `None`.
        data_name: String,
    },
    /// A plain literal (number, bool, str, None).
    Literal {
        /// The literal.
        lit: String,
    },
    /// `slice(start, stop, step)`.
    Slice {
        /// Start literal.
        start: String,
        /// Stop literal.
        stop: String,
        /// Step literal.
        step: String,
    },
    /// `...`.
    Ellipsis,
    /// `DType(...)`: a dtype argument.
    Dtype {
        /// dtype string literal.
        lit: String,
    },
    /// `Device(...)`: replaced by the run's device (tested) or CPU (bench).
    Device {
        /// device string literal.
        lit: String,
    },
    /// `Size([...])`.
    Size {
        /// Dimensions list literal.
        lit: String,
    },
    /// `MemoryFormat(...)`.
    MemoryFormat {
        /// Format name literal.
        lit: String,
    },
    /// `Unsupported(...)`: replayed as None.
    Unsupported {
        /// Type name literal.
        lit: String,
    },
    /// A list of values.
    List {
        /// The items.
        items: Vec<ArgCtx>,
    },
}

/// A keyword argument.
#[derive(Debug, Serialize)]
pub struct KwargCtx {
    /// The keyword as a string literal.
    pub key: String,
    /// Its value.
    pub value: ArgCtx,
}

/// The exit codes a script uses, from `runtime::exit` (the one table).
#[derive(Debug, Serialize)]
pub struct ExitCodes {
    /// No row is an error or a skip.
    pub ok: u8,
    /// Some row is an error.
    pub inaccurate: u8,
    /// A tensor file is missing, unreadable, malformed or of the wrong shape.
    pub input: u8,
    /// The script itself failed.
    pub internal: u8,
    /// No error, but some call could not be replayed here.
    pub skipped: u8,
}

const EXIT_CODES: ExitCodes = ExitCodes { ok: exit::OK, inaccurate: exit::INACCURATE, input: exit::INPUT, internal: exit::INTERNAL, skipped: exit::SKIPPED };

/// Everything a Python script template needs.
#[derive(Debug, Serialize)]
pub struct PythonContext {
    /// `msprobe-rs <version>`.
    pub generator: String,
    /// `pytorch` / `mindspore`.
    pub framework: &'static str,
    /// `Prefix.op.N` (validated: identifiers and digits only).
    pub api_name: String,
    /// `Prefix.op.N.forward|backward`, the script's file stem.
    pub api_full_name: String,
    /// `Prefix.op` as a string literal: the API the precision standard looks up.
    pub api_op: String,
    /// `True` when the op table marks the op as data movement (forward values must be identical).
    pub exact_op: String,
    /// Why the forward outputs cannot be compared (a string literal), or `None`.
    pub undefined_outputs: String,
    /// `True` for the losses whose second argument is class indices
    /// (`cross_entropy`, `nll_loss`): random targets are folded into the classes.
    pub class_targets: String,
    /// The keywords `(mask, pre, next)` of a fused attention whose random
    /// mask in sparse_mode 0 is its token band's; `None` for other ops.
    pub token_mask: String,
    /// `forward` / `backward`.
    pub propagation: &'static str,
    /// The callable under test.
    pub tested: Callable,
    /// The bench callable.
    pub bench: Callable,
    /// The modules the script imports for its callables (api_map's module paths).
    pub modules: &'static [&'static str],
    /// Positional arguments.
    pub args: Vec<ArgCtx>,
    /// Keyword arguments.
    pub kwargs: Vec<KwargCtx>,
    /// Gradients w.r.t. the outputs (backward only).
    pub grad_outputs: Vec<ArgCtx>,
    /// The call's outputs as the dump recorded them (`--tested recorded`);
    /// `None` for an op that draws random numbers (the script's draws are
    /// not the device's; the native replay takes the recorded mask).
    pub recorded_outputs: Option<Vec<ArgCtx>>,
    /// The gradients w.r.t. the inputs as the dump recorded them (backward
    /// only); `None` unless they line up with the inputs ([`grads_in_input_order`]):
    /// the scripts do not line up msprobe's other layouts, the native replay does.
    pub recorded_grads: Option<Vec<ArgCtx>>,
    /// `"random_data"` / `"real_data"` literal.
    pub data_mode: String,
    /// Seed.
    pub random_seed: u64,
    /// Iterations.
    pub iter_times: u32,
    /// Cosine threshold literal.
    pub cosine_threshold: String,
    /// Max-abs-error threshold literal.
    pub max_abs_err_threshold: String,
    /// Folder of the tensor files as a string literal, or `None`.
    pub data_dir: String,
    /// Whether `data_dir` is relative to the script's own folder.
    pub data_dir_relative: bool,
    /// The dump this came from, as seen from the script, as a string literal.
    pub source: String,
    /// The precision standard, `msprobe` or `api` (`--standard` overrides it).
    pub standard: &'static str,
    /// The device the dump was recorded on (`cpu`, `cuda`, `npu`): `--tested recorded`'s.
    pub dump_device: &'static str,
    /// The script's exit codes.
    pub exit: ExitCodes,
    /// The shared module the script imports its machinery from
    /// (`--shared-module`); `None`: the machinery is inlined.
    pub shared: Option<SharedModule>,
}

/// Where a script finds the shared module (`--shared-module`).
#[derive(Debug, Clone, Serialize)]
pub struct SharedModule {
    /// Its import name (`msprobe_repro_<version>_<framework>`).
    pub module: String,
    /// Its folder relative to the script's, as a string literal (`"."`, `".."`).
    pub folder: String,
}

impl SharedModule {
    /// The shared module of `framework`'s scripts in `folder` (relative to the scripts' folder).
    pub fn new(framework: Framework, folder: &str) -> SharedModule {
        SharedModule { module: super::machinery::shared_module_name(framework), folder: py_str(folder) }
    }
}

fn stat(s: Stat) -> String {
    match s {
        Stat::Num(x) => py_float(x),
        Stat::Bool(b) => py_float(b as u8 as f64),
        Stat::Missing => py_opt(None),
    }
}

/// A dtype as the dump spells it, as a string literal (`"torch.float32"`, `"Float32"`).
fn dtype_lit(d: TDType, fw: Framework) -> String {
    py_str(&fw.dtype_name(d))
}

fn arg(a: &Arg, fw: Framework) -> ArgCtx {
    let lit = |lit: String| ArgCtx::Literal { lit };
    match a {
        Arg::Tensor(t) => ArgCtx::Tensor {
            dtype: dtype_lit(t.dtype, fw),
            dims: pyfmt::list(&t.shape),
            low: stat(t.min),
            high: stat(t.max),
            requires_grad: py_opt(t.requires_grad.map(py_bool)),
            data_name: py_opt(t.data_name.as_deref().map(py_str)),
        },
        Arg::Bool(b) => lit(py_bool(*b)),
        Arg::Int(i) => lit(i.to_string()),
        Arg::Float(x) => lit(py_float(*x)),
        Arg::Str(s) => lit(py_str(s)),
        Arg::None => lit(py_opt(None)),
        Arg::Slice([a, b, c]) => {
            let o = |x: &Option<i64>| py_opt(x.map(|v| v.to_string()));
            ArgCtx::Slice { start: o(a), stop: o(b), step: o(c) }
        }
        Arg::Ellipsis => ArgCtx::Ellipsis,
        Arg::Size(d) => ArgCtx::Size { lit: pyfmt::list(d) },
        Arg::DType(d) => ArgCtx::Dtype { lit: dtype_lit(*d, fw) },
        Arg::Device(d) => ArgCtx::Device { lit: py_str(d) },
        Arg::MemoryFormat(m) => ArgCtx::MemoryFormat { lit: py_str(m) },
        Arg::Unsupported(t) => ArgCtx::Unsupported { lit: py_str(t) },
        Arg::List(items) => ArgCtx::List { items: items.iter().map(|x| arg(x, fw)).collect() },
    }
}

fn marks_requires_grad(a: &Arg) -> bool {
    match a {
        Arg::Tensor(t) => t.requires_grad == Some(true),
        Arg::List(items) => items.iter().any(marks_requires_grad),
        _ => false,
    }
}

/// The positional float tensor inputs whose recorded gradient is `null`
/// (batch_norm's running statistics in a MindSpore dump): the backward
/// script marks them `requires_grad=False` and does not differentiate them.
/// Only where the dump marks no input `requires_grad` (MindSpore dumps mark
/// none; a PyTorch dump's own marks already say it), and where the recorded
/// list lines up with the inputs by one of msprobe's layouts
/// ([`grad_layout::recorded_places`]: one gradient per positional float
/// tensor input, or per positional tensor input (MindSpore), or the op's
/// autograd node's list in a PyTorch dump, such as linear's
/// `[bias, input, weight.t()]`). When every gradient is null, nothing is
/// marked (the backward still has something to run).
fn null_gradients(call: &ApiCall, framework: Framework) -> Vec<usize> {
    let forward = &call.forward;
    if forward.args.iter().chain(forward.kwargs.iter().map(|(_, v)| v)).any(marks_requires_grad) {
        return vec![];
    }
    let Some((places, grads)) = recorded_places(call, framework) else { return vec![] };
    let float: Vec<bool> = forward.args.iter().map(|a| matches!(a, Arg::Tensor(t) if t.dtype.is_float())).collect();
    let null: Vec<usize> = (0..float.len()).filter(|&i| float[i] && matches!(places[i], Place::Recorded(k, _) if matches!(grads[k], Arg::None))).collect();
    if null.len() == float.iter().filter(|&&f| f).count() {
        return vec![];
    }
    null
}

/// Where each input's gradient (positional, then keyword) sits in the
/// dump's recorded list ([`grad_layout::recorded_places`], with the op's
/// autograd node layouts where it has them), beside that list; `None`
/// without a backward or when no layout fits.
fn recorded_places(call: &ApiCall, framework: Framework) -> Option<(Vec<Place>, &[Arg])> {
    let backward = call.backward.as_ref()?;
    let forward = &call.forward;
    let shape = |a: &Arg| match a {
        Arg::Tensor(t) => Some(t.shape.iter().map(|&d| d as usize).collect::<Vec<usize>>()),
        _ => None,
    };
    let all: Vec<(&Arg, bool)> = forward.args.iter().map(|a| (a, false)).chain(forward.kwargs.iter().map(|(_, a)| (a, true))).collect();
    let shapes: Vec<Option<Vec<usize>>> = all.iter().map(|(a, _)| shape(a)).collect();
    let op = ops::lookup(framework, &call.name.op_key());
    let keywords: Vec<&str> = forward.kwargs.iter().map(|(k, _)| k.as_str()).collect();
    let params = op.map_or_else(|| vec![None; all.len()], |op| bind::parameters(op.sig, forward.args.len(), &keywords));
    let inputs: Vec<GradInput> = all
        .iter()
        .zip(&shapes)
        .zip(params)
        .map(|(((a, keyword), shape), param)| GradInput {
            tensor: shape.is_some(),
            float: matches!(a, Arg::Tensor(t) if t.dtype.is_float()),
            marked: false,
            param,
            keyword: *keyword,
            shape: shape.as_deref(),
        })
        .collect();
    let grads = &backward.grad_inputs;
    let recorded: Vec<Option<Vec<usize>>> = grads.iter().map(shape).collect();
    let recorded: Vec<Option<&[usize]>> = recorded.iter().map(Option::as_deref).collect();
    let incoming = backward.grad_outputs.first().and_then(shape).map(|s| s.iter().product());
    let node = op.and_then(|op| op.node_gradients(framework));
    Some((grad_layout::recorded_places(&inputs, &recorded, incoming, node)?, grads))
}

/// Whether an op whose gradients msprobe records as its autograd node
/// lists them has, in this call, the list in input order: every positional
/// input's gradient at its own index, untransformed, and nothing else
/// there (a convolution's `ConvolutionBackward0` with a bias).
fn node_list_in_input_order(call: &ApiCall, framework: Framework) -> bool {
    let Some((places, grads)) = recorded_places(call, framework) else { return false };
    let positional = call.forward.args.len();
    grads.len() <= positional
        && places.iter().enumerate().all(|(i, p)| match p {
            Place::Recorded(k, grad_layout::Transform::Same) => *k == i,
            Place::Absent => i >= grads.len(),
            _ => false,
        })
}

/// Whether the dump's recorded input gradients of `call` are one per
/// positional floating tensor input (PyTorch), or one per positional
/// tensor input (MindSpore), in order, each `null` or of its input's shape,
/// for an op whose gradients msprobe records as they are (no inner node's
/// gradient or no-op cast, no random draws, and an autograd node's list
/// only where it is in input order): the layouts a script compares as it
/// computes them.
fn grads_in_input_order(call: &ApiCall, framework: Framework) -> bool {
    let Some(backward) = &call.backward else { return false };
    if let Some(op) = ops::lookup(framework, &call.name.op_key()) {
        if op.random || op.noop_cast() || op.inner_gradient().is_some() {
            return false;
        }
        if op.node_gradients(framework).is_some() && !node_list_in_input_order(call, framework) {
            return false;
        }
    }
    let lines_up = |keep: fn(&TDType) -> bool| {
        let shapes: Vec<&Vec<u64>> =
            call.forward.args.iter().filter_map(|a| if let Arg::Tensor(t) = a { keep(&t.dtype).then_some(&t.shape) } else { None }).collect();
        !shapes.is_empty()
            && shapes.len() == backward.grad_inputs.len()
            && shapes.iter().zip(&backward.grad_inputs).all(|(shape, g)| match g {
                Arg::Tensor(t) => &t.shape == *shape,
                Arg::None => true,
                _ => false,
            })
    };
    lines_up(|d| d.is_float()) || (framework != Framework::PyTorch && lines_up(|_| true))
}

impl PythonContext {
    /// Builds the context for `call` in `direction` as configured; `data_dir`
    /// is the tensor folder and `source` the dump, both as seen from the
    /// script's folder. An API that `framework` does not expose under its
    /// prefix ([`api_map::exposed`]) gets no context: its callable would
    /// come from the dump.
    pub fn new(
        call: &ApiCall,
        framework: Framework,
        cfg: &OpConfig,
        direction: Direction,
        data_dir: Option<&PathRef>,
        source: &str,
    ) -> Result<PythonContext, NotExposed> {
        api_map::exposed(framework, &call.name)?;
        let args = |list: &[Arg]| list.iter().map(|a| arg(a, framework)).collect::<Vec<_>>();
        let mut positional = args(&call.forward.args);
        if direction == Direction::Backward {
            for i in null_gradients(call, framework) {
                if let ArgCtx::Tensor { requires_grad, .. } = &mut positional[i] {
                    *requires_grad = py_bool(false);
                }
            }
        }
        let api_op = call.name.op_key();
        let op = ops::lookup(framework, &api_op);
        let exact_op = op.is_some_and(|op| op.moves_data());
        Ok(PythonContext {
            generator: format!("msprobe-rs {}", env!("CARGO_PKG_VERSION")),
            framework: framework.as_str(),
            api_name: call.name.to_string(),
            api_full_name: call.name.key(direction),
            api_op: py_str(&api_op),
            exact_op: py_bool(exact_op),
            undefined_outputs: py_opt(op.filter(|op| op.values_undefined()).map(|_| py_str(runtime::replay::UNDEFINED_VALUES))),
            class_targets: py_bool(op.is_some_and(|op| op.class_targets())),
            token_mask: py_opt(op.and_then(|op| op.token_mask()).map(|k| format!("({}, {}, {})", py_str(k.mask), py_str(k.pre), py_str(k.next)))),
            propagation: direction.as_str(),
            tested: api_map::tested(framework, &call.name),
            bench: api_map::bench(framework, &call.name),
            modules: api_map::modules(framework),
            args: positional,
            kwargs: call.forward.kwargs.iter().map(|(k, v)| KwargCtx { key: py_str(k), value: arg(v, framework) }).collect(),
            grad_outputs: match (&call.backward, direction) {
                (Some(b), Direction::Backward) => args(&b.grad_outputs),
                _ => vec![],
            },
            recorded_outputs: op.is_none_or(|op| !op.random).then(|| args(&call.forward.outputs)),
            recorded_grads: match (&call.backward, direction) {
                (Some(b), Direction::Backward) if grads_in_input_order(call, framework) => Some(args(&b.grad_inputs)),
                _ => None,
            },
            data_mode: py_str(cfg.data_mode.as_str()),
            random_seed: cfg.random_seed,
            iter_times: cfg.iter_times,
            cosine_threshold: py_float(cfg.cosine_threshold),
            max_abs_err_threshold: py_float(cfg.max_abs_err_threshold),
            data_dir: py_opt(data_dir.map(|d| py_str(&d.text))),
            data_dir_relative: data_dir.is_some_and(|d| d.relative),
            source: py_str(source),
            standard: cfg.standard.as_str(),
            dump_device: cfg.dump_device.as_str(),
            exit: EXIT_CODES,
            shared: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::DumpInput;
    use crate::model::ApiName;

    fn tensor(dtype: &str, requires_grad: Option<bool>) -> serde_json::Value {
        let mut t = json!({"type": "mindspore.Tensor", "dtype": dtype, "shape": [2], "Max": 1.0, "Min": 0.0});
        if let Some(r) = requires_grad {
            t["requires_grad"] = json!(r);
        }
        t
    }

    /// The requires_grad literal of each positional argument in `direction`.
    fn marks(forward: serde_json::Value, grads: serde_json::Value, direction: Direction) -> Vec<String> {
        let name = ApiName::parse("Functional.batch_norm.0").unwrap();
        let backward = json!({"input": [tensor("Float32", None)], "output": grads});
        let call = ApiCall::from_entries(name, &forward, Some(&backward)).unwrap();
        let cfg = OpConfig::defaults(DumpInput::Extract("x.json".into()));
        let ctx = PythonContext::new(&call, Framework::MindSpore, &cfg, direction, None, "").unwrap();
        ctx.args.iter().map(|a| if let ArgCtx::Tensor { requires_grad, .. } = a { requires_grad.clone() } else { "-".into() }).collect()
    }

    #[test]
    fn inputs_with_a_null_recorded_gradient_are_not_differentiated() {
        let f = |r| tensor("Float32", r);
        // batch_norm(x, running_mean, running_var, weight, bias): the dump records no gradient for the running statistics.
        let forward =
            json!({"input_args": [f(None), f(None), f(None), f(None), f(None)], "input_kwargs": {"training": {"type": "bool", "value": true}}, "output": []});
        let grads = json!([f(None), null, null, f(None), f(None)]);
        assert_eq!(marks(forward.clone(), grads.clone(), Direction::Backward), ["None", "False", "False", "None", "None"]);
        // The forward script differentiates nothing: unchanged.
        assert_eq!(marks(forward.clone(), grads, Direction::Forward), ["None"; 5]);
        // A list that does not line up with the inputs, or only nulls: nothing is marked.
        assert_eq!(marks(forward.clone(), json!([f(None), null]), Direction::Backward), ["None"; 5]);
        assert_eq!(marks(forward, json!([null, null, null, null, null]), Direction::Backward), ["None"; 5]);
        // One gradient per tensor input, integer ones included (cross_entropy's Int32 target).
        let forward = json!({"input_args": [f(None), tensor("Int32", None), f(None)], "input_kwargs": {}, "output": []});
        assert_eq!(marks(forward, json!([f(None), null, null]), Direction::Backward), ["None", "None", "False"]);
        // A dump that marks requires_grad (PyTorch) says it already.
        let forward = json!({"input_args": [f(Some(true)), f(Some(false))], "input_kwargs": {}, "output": []});
        assert_eq!(marks(forward, json!([f(None), null]), Direction::Backward), ["True", "False"]);
    }

    #[test]
    fn an_unmarked_pytorch_linear_is_read_in_its_nodes_layout() {
        let t = |dtype: &str, shape: serde_json::Value| json!({"type": "torch.Tensor", "dtype": dtype, "shape": shape, "Max": 1.0, "Min": 0.0});
        let f32 = |shape| t("torch.float32", shape);
        // linear(x, w, b) with x[3,4], w[4,4]: AddmmBackward0 records [b, x, w.t()]; x had no gradient.
        let forward = json!({"input_args": [f32(json!([3, 4])), f32(json!([4, 4])), f32(json!([4]))], "input_kwargs": {}, "output": [f32(json!([3, 4]))]});
        let backward = json!({"input": [f32(json!([3, 4]))], "output": [f32(json!([4])), null, f32(json!([4, 4]))]});
        let call = ApiCall::from_entries(ApiName::parse("Functional.linear.0").unwrap(), &forward, Some(&backward)).unwrap();
        let cfg = OpConfig::defaults(DumpInput::Extract("x.json".into()));
        let marks = |fw| {
            let ctx = PythonContext::new(&call, fw, &cfg, Direction::Backward, None, "").unwrap();
            ctx.args.iter().map(|a| if let ArgCtx::Tensor { requires_grad, .. } = a { requires_grad.clone() } else { "-".into() }).collect::<Vec<_>>()
        };
        // The input's gradient is the null one, not the weight's (as input order would say).
        assert_eq!(marks(Framework::PyTorch), ["False", "None", "None"]);
        // MSAdapter's dumps list the API's inputs in order.
        assert_eq!(marks(Framework::MindTorch), ["None", "False", "None"]);
    }
}
