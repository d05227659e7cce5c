//! msprobe's api standard per op: which of its precision checker's rules
//! judges an op's forward outputs, and which level bounds the benchmark
//! rule's error ratios (`--standard api`, judged by `crate::standard`).
//!
//! This is msprobe's own table (its standard's yaml), keyed by the base op
//! name rather than by an op-table entry: the same name takes the same rule
//! under every prefix and dunder or in-place spelling, and the table names
//! ops that have no entry in the runtime (`npu_cross_entropy_loss`, ...),
//! which the generated scripts still judge (they receive it as
//! [`api_sets`]).

use ApiRule::{Absolute, Benchmark, Binary, Thousandth, Ulp};
use Level::{One, Two};

/// The rule of the api standard that judges an op's forward outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiRule {
    /// Relative error within a dtype's threshold, absolute near zero.
    Absolute,
    /// Every element identical.
    Binary,
    /// Units in the last place against the reference run.
    Ulp,
    /// Relative error within a thousandth.
    Thousandth,
    /// Error ratios against the reference run (every op the table does not
    /// give another rule).
    Benchmark,
}

/// The benchmark rule's level: how large an op's error ratios may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// msprobe's level 1, the loosest of the named levels.
    One,
    /// msprobe's level 2.
    Two,
    /// Every op the table names at no level.
    Default,
}

/// What the api standard says of one op name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiStandard {
    /// The rule its forward outputs are judged by.
    pub rule: ApiRule,
    /// The level the benchmark rule applies to it (its gradients, and ops of that rule).
    pub level: Level,
}

/// msprobe's table by base op name ([`base_name`]); an op named nowhere
/// takes the benchmark rule at the default level.
const TABLE: &[(&str, ApiRule, Level)] = &[
    ("add", Absolute, Level::Default),
    ("sub", Absolute, Level::Default),
    ("mul", Absolute, Level::Default),
    ("div", Absolute, Level::Default),
    ("truediv", Absolute, Level::Default),
    ("true_divide", Absolute, Level::Default),
    ("floordiv", Absolute, Level::Default),
    ("floor_divide", Absolute, Level::Default),
    ("multiply", Absolute, Level::Default),
    ("subtract", Absolute, Level::Default),
    ("divide", Absolute, Level::Default),
    ("rsub", Absolute, Level::Default),
    ("leaky_relu", Absolute, Level::Default),
    ("prelu", Absolute, Level::Default),
    ("reciprocal", Absolute, Level::Default),
    ("rsqrt", Absolute, Level::Default),
    ("square", Absolute, Level::Default),
    ("abs", Binary, Level::Default),
    ("argmin", Binary, Level::Default),
    ("argmax", Binary, Level::Default),
    ("bitwise_and", Binary, Level::Default),
    ("broadcast_to", Binary, Level::Default),
    ("ceil", Binary, Level::Default),
    ("equal", Binary, Level::Default),
    ("eq", Binary, Level::Default),
    ("fill", Binary, Level::Default),
    ("flatten", Binary, Level::Default),
    ("floor", Binary, Level::Default),
    ("gather", Binary, Level::Default),
    ("greater", Binary, Level::Default),
    ("greater_equal", Binary, Level::Default),
    ("gt", Binary, Level::Default),
    ("ge", Binary, Level::Default),
    ("less", Binary, Level::Default),
    ("less_equal", Binary, Level::Default),
    ("lt", Binary, Level::Default),
    ("le", Binary, Level::Default),
    ("histc", Binary, Level::Default),
    ("isfinite", Binary, Level::Default),
    ("isnan", Binary, Level::Default),
    ("logical_and", Binary, Level::Default),
    ("logical_or", Binary, Level::Default),
    ("logical_not", Binary, Level::Default),
    ("logical_xor", Binary, Level::Default),
    ("masked_fill", Binary, Level::Default),
    ("max_pool3d", Binary, Level::Default),
    ("maximum", Binary, Level::Default),
    ("minimum", Binary, Level::Default),
    ("neg", Binary, Level::Default),
    ("negative", Binary, Level::Default),
    ("nonzero", Binary, Two),
    ("not_equal", Binary, Level::Default),
    ("ne", Binary, Level::Default),
    ("one_hot", Binary, Two),
    ("pad", Binary, Level::Default),
    ("relu", Binary, Level::Default),
    ("reshape", Binary, Level::Default),
    ("round", Binary, Level::Default),
    ("select", Binary, Level::Default),
    ("sign", Binary, Level::Default),
    ("sort", Binary, Level::Default),
    ("tile", Binary, Level::Default),
    ("topk", Binary, Level::Default),
    ("transpose", Binary, Level::Default),
    ("tril", Binary, Level::Default),
    ("triu", Binary, Level::Default),
    ("type_as", Binary, Level::Default),
    ("matmul", Ulp, Two),
    ("addbmm", Ulp, Level::Default),
    ("addmm", Ulp, Two),
    ("baddbmm", Ulp, Level::Default),
    ("bilinear", Ulp, Level::Default),
    ("bmm", Ulp, Level::Default),
    ("chain_matmul", Ulp, Level::Default),
    ("hspmm", Ulp, Level::Default),
    ("linear", Ulp, Level::Default),
    ("mm", Ulp, Two),
    ("mv", Ulp, Level::Default),
    ("smm", Ulp, Level::Default),
    ("sspaddmm", Ulp, Level::Default),
    ("conv1d", Thousandth, Level::Default),
    ("conv2d", Thousandth, Level::Default),
    ("embedding", Benchmark, One),
    ("npu_fusion_attention", Benchmark, One),
    ("npu_fusion_attention_grad", Benchmark, One),
    ("scatter", Benchmark, One),
    ("scatter_add", Benchmark, One),
    ("gelu", Benchmark, Two),
    ("layer_norm", Benchmark, Two),
    ("index", Benchmark, Two),
    ("sum", Benchmark, Two),
    ("npu_rms_norm", Benchmark, Two),
    ("rms_norm", Benchmark, Two),
    ("cross_entropy", Benchmark, Two),
    ("npu_cross_entropy_loss", Benchmark, Two),
];

fn entry(name: &str) -> Option<ApiStandard> {
    TABLE.iter().find(|(n, ..)| *n == name).map(|&(_, rule, level)| ApiStandard { rule, level })
}

/// The op's base name as the table spells it: without `__...__` and one
/// trailing `_` (in-place); a dunder's reflected or in-place `r` / `i`
/// prefix is dropped when the name itself is not in the table
/// (`__radd__` -> `add`, `__rsub__` stays `rsub`).
fn base_name(op: &str) -> &str {
    let dunder = op.len() > 4 && op.starts_with("__") && op.ends_with("__");
    let name = if dunder { &op[2..op.len() - 2] } else { op };
    let name = name.strip_suffix('_').unwrap_or(name);
    if entry(name).is_none() && dunder && (name.starts_with('r') || name.starts_with('i')) {
        &name[1..]
    } else {
        name
    }
}

/// The api standard of `op`, the op name without its prefix (`ApiId.op`:
/// `matmul`, `__radd__`, `add_`).
pub fn api_standard(op: &str) -> ApiStandard {
    entry(base_name(op)).unwrap_or(ApiStandard { rule: Benchmark, level: Level::Default })
}

/// msprobe's API sets of the api standard, by rule and level, for
/// rendering into the scripts (whose mirror of the standard reads the
/// same base names): `absolute`, `binary`, `ulp`, `thousandth`, `level1`,
/// `level2`, each in the table's order.
pub fn api_sets() -> Vec<(&'static str, Vec<&'static str>)> {
    let names = |keep: fn(ApiRule, Level) -> bool| TABLE.iter().filter(|&&(_, rule, level)| keep(rule, level)).map(|&(name, ..)| name).collect();
    vec![
        ("absolute", names(|rule, _| rule == Absolute)),
        ("binary", names(|rule, _| rule == Binary)),
        ("ulp", names(|rule, _| rule == Ulp)),
        ("thousandth", names(|rule, _| rule == Thousandth)),
        ("level1", names(|_, level| level == One)),
        ("level2", names(|_, level| level == Two)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names() {
        for (op, want) in [
            ("__radd__", "add"),
            ("__iadd__", "add"),
            ("__imul__", "mul"),
            ("__rtruediv__", "truediv"),
            ("__rsub__", "rsub"),
            ("__round__", "round"),
            ("__index__", "index"),
            ("__rshift__", "shift"),
            ("__and__", "and"),
            ("conv2d", "conv2d"),
            ("add_", "add"),
            ("relu_", "relu"),
            ("rsqrt", "rsqrt"),
            ("rsqrt_", "rsqrt"),
            ("isfinite", "isfinite"),
            ("npu_rms_norm", "npu_rms_norm"),
            ("____", "___"),
            ("_____", ""),
        ] {
            assert_eq!(base_name(op), want, "{op}");
        }
    }

    #[test]
    fn rules_and_levels_by_op_name() {
        let rule = |op| api_standard(op).rule;
        assert_eq!(rule("__radd__"), Absolute);
        assert_eq!(rule("__rsub__"), Absolute);
        assert_eq!(rule("relu"), Binary);
        assert_eq!(rule("__rmatmul__"), Ulp);
        assert_eq!(rule("conv2d"), Thousandth);
        assert_eq!(rule("conv3d"), Benchmark);
        assert_eq!(rule("npu_fusion_attention"), Benchmark);
        let level = |op| api_standard(op).level;
        assert_eq!((level("embedding"), level("__imatmul__"), level("sum"), level("one_hot")), (One, Two, Two, Two));
        assert_eq!((level("silu"), level("add_")), (Level::Default, Level::Default));
    }

    #[test]
    fn every_entry_is_a_base_name_once_and_says_something() {
        let mut seen = std::collections::HashSet::new();
        for &(name, rule, level) in TABLE {
            assert!(seen.insert(name) && base_name(name) == name, "{name}: twice, or not a base name");
            assert!((rule, level) != (Benchmark, Level::Default), "{name}: what every unnamed op gets");
            let sets: Vec<&str> = api_sets().into_iter().filter(|(_, names)| names.contains(&name)).map(|(set, _)| set).collect();
            assert_eq!(sets.len(), usize::from(rule != Benchmark) + usize::from(level != Level::Default), "{name}: in {sets:?}");
        }
    }
}
