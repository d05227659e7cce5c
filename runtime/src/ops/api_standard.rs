//! msprobe's api standard per op: which of its precision checker's rules
//! judges an op's forward outputs, and which level bounds the benchmark
//! rule's error ratios (`--standard api`, judged by `crate::standard`).
//!
//! This is msprobe's own table (its standard's yaml), held as API sets in
//! the rulebook ([`crate::rulebook`]), keyed by the base op name rather
//! than by an op-table entry: the same name takes the same rule
//! under every prefix and dunder or in-place spelling, and the table names
//! ops that have no entry in the runtime (`npu_cross_entropy_loss`, ...),
//! which the generated scripts still judge (they receive it as
//! [`api_sets`]).

use crate::rulebook;
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

/// The rulebook's entry for a base op name ([`base_name`]): the rule of
/// the first rule set that names it, the level of the level set that does;
/// `None` for an op named in no set (the benchmark rule at the default level).
fn entry(name: &str) -> Option<ApiStandard> {
    let sets = &rulebook::get().api_standard;
    let has = |set: &[String]| set.iter().any(|n| n == name);
    let rule = [(&sets.absolute, Absolute), (&sets.binary, Binary), (&sets.ulp, Ulp), (&sets.thousandth, Thousandth)]
        .into_iter()
        .find(|(set, _)| has(set))
        .map(|(_, rule)| rule);
    let level = if has(&sets.level1) {
        Some(One)
    } else if has(&sets.level2) {
        Some(Two)
    } else {
        None
    };
    (rule.is_some() || level.is_some()).then(|| ApiStandard { rule: rule.unwrap_or(Benchmark), level: level.unwrap_or(Level::Default) })
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
    let sets = &rulebook::get().api_standard;
    let names = |set: &'static [String]| set.iter().map(String::as_str).collect();
    vec![
        ("absolute", names(&sets.absolute)),
        ("binary", names(&sets.binary)),
        ("ulp", names(&sets.ulp)),
        ("thousandth", names(&sets.thousandth)),
        ("level1", names(&sets.level1)),
        ("level2", names(&sets.level2)),
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
    fn every_name_is_a_base_name_in_one_rule_set_and_one_level_set_at_most() {
        let sets = api_sets();
        for (set, names) in &sets {
            for name in names {
                assert_eq!(base_name(name), *name, "{set}: {name} is not a base name");
                let rules = sets[..4].iter().filter(|(_, n)| n.contains(name)).count();
                let levels = sets[4..].iter().filter(|(_, n)| n.contains(name)).count();
                assert!(rules <= 1 && levels <= 1 && names.iter().filter(|n| *n == name).count() == 1, "{name}: in {rules} rule sets, {levels} level sets");
            }
        }
    }
}
