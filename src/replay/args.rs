//! A call's arguments and recorded outputs as the HTML report lists them:
//! dtype, shape and recorded min/max of each tensor, other values as text.

use runtime::report::HtmlArg;

use crate::model::{ApiCall, Arg, Framework, Stat};

/// A recorded statistic as text.
fn stat_text(s: &Stat) -> String {
    match s {
        Stat::Num(x) => runtime::pyfmt::format_g6(*x),
        Stat::Bool(b) => if *b { "True" } else { "False" }.into(),
        Stat::Missing => "-".into(),
    }
}

/// One argument (a list flattened as `name[i]`) as the report shows it.
fn push_arg(out: &mut Vec<HtmlArg>, name: String, a: &Arg, framework: Framework) {
    match a {
        Arg::Tensor(t) => out.push(HtmlArg { name, dtype: framework.dtype_name(t.dtype), shape: format!("{:?}", t.shape), min: stat_text(&t.min), max: stat_text(&t.max) }),
        Arg::List(items) if items.iter().any(|i| matches!(i, Arg::Tensor(_))) && items.len() <= 64 => {
            for (i, x) in items.iter().enumerate() {
                push_arg(out, format!("{name}[{i}]"), x, framework);
            }
        }
        other => {
            let text = format!("{other:?}");
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
