//! A call's arguments and recorded outputs as the HTML report lists them:
//! dtype, shape and recorded min/max of each tensor, other values as
//! Python writes them (through [`runtime::pyfmt`]).

use runtime::pyfmt;
use runtime::report::HtmlArg;

use crate::model::{ApiCall, Arg, Framework, Stat};

/// A recorded statistic as text.
fn stat_text(s: &Stat) -> String {
    match s {
        Stat::Num(x) => pyfmt::format_g6(*x),
        Stat::Bool(b) => pyfmt::bool(*b).into(),
        Stat::Missing => "-".into(),
    }
}

/// A shape as Python's `list` writes it: `[2, 3]`.
fn shape_text(shape: &[u64]) -> String {
    pyfmt::list(shape)
}

/// A value as Python shows it: `None`, `True`, `0.1`, `'mean'`, `[2, 3]`,
/// `torch.float32`, `slice(1, None, None)`; a tensor inside a value as
/// `tensor(dtype=..., shape=[...])`, a value msprobe could not record as
/// `{}` (its record) or `<type>`.
fn python_form(a: &Arg, framework: Framework) -> String {
    let opt = |x: &Option<i64>| x.map_or_else(|| pyfmt::none().to_string(), |v| v.to_string());
    match a {
        Arg::Tensor(t) => format!("tensor(dtype={}, shape={})", framework.dtype_name(t.dtype), shape_text(&t.shape)),
        Arg::Bool(b) => pyfmt::bool(*b).into(),
        Arg::Int(i) => i.to_string(),
        Arg::Float(x) => pyfmt::repr(*x),
        Arg::Str(s) | Arg::Device(s) => pyfmt::str_repr(s),
        Arg::Slice([start, stop, step]) => format!("slice({}, {}, {})", opt(start), opt(stop), opt(step)),
        Arg::Ellipsis => "Ellipsis".into(),
        Arg::Size(dims) => match framework.api_family() {
            Framework::MindSpore => pyfmt::tuple(dims),
            _ => format!("torch.Size({})", pyfmt::list(dims)),
        },
        Arg::DType(d) => framework.dtype_name(*d),
        Arg::MemoryFormat(name) => format!("torch.{name}"),
        Arg::None => pyfmt::none().into(),
        Arg::Unsupported(ty) if ty.is_empty() => "{}".into(),
        Arg::Unsupported(ty) => format!("<{ty}>"),
        Arg::List(items) => pyfmt::list(items.iter().map(|x| python_form(x, framework))),
    }
}

/// One argument (a list flattened as `name[i]`) as the report shows it.
fn push_arg(out: &mut Vec<HtmlArg>, name: String, a: &Arg, framework: Framework) {
    match a {
        Arg::Tensor(t) => {
            out.push(HtmlArg { name, dtype: framework.dtype_name(t.dtype), shape: shape_text(&t.shape), min: stat_text(&t.min), max: stat_text(&t.max) })
        }
        Arg::List(items) if items.iter().any(|i| matches!(i, Arg::Tensor(_))) && items.len() <= 64 => {
            for (i, x) in items.iter().enumerate() {
                push_arg(out, format!("{name}[{i}]"), x, framework);
            }
        }
        other => {
            let text = python_form(other, framework);
            let text = if text.len() > 120 { format!("{}...", &text[..text.char_indices().nth(117).map_or(text.len(), |(i, _)| i)]) } else { text };
            out.push(HtmlArg { name, dtype: "value".into(), shape: String::new(), min: text, max: String::new() })
        }
    }
}

/// The arguments and recorded outputs of a call.
pub(super) fn of(call: &ApiCall, framework: Framework) -> Vec<HtmlArg> {
    let mut out = vec![];
    for (i, a) in call.forward.args.iter().enumerate() {
        push_arg(&mut out, format!("args[{i}]"), a, framework);
    }
    for (k, a) in &call.forward.kwargs {
        push_arg(&mut out, format!("kwargs.{k}"), a, framework);
    }
    for (i, a) in call.forward.outputs.iter().enumerate() {
        push_arg(&mut out, format!("output[{i}]"), a, framework);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime::dtype::TDType;

    #[test]
    fn values_read_as_python() {
        let pt = |a: &Arg| python_form(a, Framework::PyTorch);
        assert_eq!(pt(&Arg::None), "None");
        assert_eq!(pt(&Arg::Bool(true)), "True");
        assert_eq!(pt(&Arg::Float(1e-05)), "1e-05");
        assert_eq!(pt(&Arg::Str("mean".into())), "'mean'");
        assert_eq!(pt(&Arg::List(vec![Arg::Int(2), Arg::Int(3)])), "[2, 3]");
        assert_eq!(pt(&Arg::DType(TDType::F32)), "torch.float32");
        assert_eq!(pt(&Arg::Size(vec![2, 3])), "torch.Size([2, 3])");
        assert_eq!(python_form(&Arg::Size(vec![6]), Framework::MindSpore), "(6,)");
        assert_eq!(pt(&Arg::Slice([Some(1), None, Some(-1)])), "slice(1, None, -1)");
        assert_eq!(pt(&Arg::Unsupported(String::new())), "{}");
    }
}
