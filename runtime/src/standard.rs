//! Precision standards: how one compared output is judged. `msprobe` is the
//! seed's rule (cosine above a threshold and max absolute error below one);
//! `api` is msprobe's precision checker's per-API, per-dtype standard
//! (binary equality, absolute threshold, ULP, thousandth, benchmark ratio;
//! which rule and level each op takes is [`crate::ops::api_standard`]'s);
//! `bound` passes an element when its error is within what rounding in the
//! device's precision can do to it ([`Rounding`]: `k·u·magnitude + ulp/2`,
//! the magnitude from the bench pass, see `crate::replay`'s magnitudes).
//! The `api` standard uses the same bound where its reference-based and
//! threshold rules cannot decide: elements within it count as exact.
//! The generated Python scripts judge with the same rules and messages
//! (`python/msprobe_rs/repro/standard.py`); shared cases in
//! `runtime/tests/standard/cases.json` hold both to the same verdicts.
//!
//! Both languages compute every metric the same way, operation for
//! operation, so that they agree to the bit: sums are exactly rounded
//! ([`fsum`], Python's `math.fsum`), exponents are read from the float's
//! bits (NumPy's `frexp`), and scaling by powers of two is exact (`ldexp`).
//! The one exception is the msprobe rule's cosine, whose sums are ordered
//! differently in the two languages (see `runtime/src/compare.rs`).

mod fsum;
mod rules;
mod screen;

pub(crate) use rules::round_to;

use crate::compare::{compare, Metrics, Status};
use crate::dtype::TDType;
use crate::ops::api_standard::{api_standard, ApiRule, Level};
use crate::rulebook;

use rules::Outcome;

/// The standard a run judges with (`--standard`, config key `standard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Standard {
    /// What a run takes when none is named: the rulebook's
    /// `default_standard` picks a standard per row, by whether its tested
    /// side is the device's recorded value or the emulated device
    /// ([`Standard::for_row`]): a device is held to msprobe's thresholds,
    /// an emulation of its dtype to that dtype's rounding bound.
    #[default]
    Default,
    /// Cosine above `cosine_threshold` and max absolute error below
    /// `max_abs_err_threshold` (msprobe's op_generate rule), on every row.
    Msprobe,
    /// Per API and dtype, msprobe's precision checker's standards, with
    /// elements within the rounding bound counted as exact.
    Api,
    /// Every element within the rounding error bound of its op class.
    Bound,
}

impl Standard {
    /// Every standard, in the CLI's order.
    pub const ALL: [Standard; 4] = [Standard::Default, Standard::Msprobe, Standard::Api, Standard::Bound];

    /// The CLI / config spelling: `default`, `msprobe`, `api`, `bound`.
    pub fn as_str(self) -> &'static str {
        match self {
            Standard::Default => "default",
            Standard::Msprobe => "msprobe",
            Standard::Api => "api",
            Standard::Bound => "bound",
        }
    }

    /// Whether its verdicts use the rounding magnitudes (computed in an
    /// extra pass over the bench only when they do).
    pub fn uses_rounding(self) -> bool {
        self != Standard::Msprobe
    }

    /// The standard one row is judged by: `Default` resolved by the
    /// rulebook's `default_standard` for a row whose tested side is
    /// `emulated` (or the device's recorded value); any other as is.
    pub fn for_row(self, emulated: bool) -> Standard {
        if self != Standard::Default {
            return self;
        }
        let rule = &rulebook::get().default_standard;
        let name = if emulated { &rule.emulated } else { &rule.recorded };
        Standard::named(name).filter(|s| *s != Standard::Default).unwrap_or(Standard::Msprobe)
    }

    /// The standard spelled `name` ([`Standard::as_str`]).
    pub fn named(name: &str) -> Option<Standard> {
        Standard::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// What the rounding bound of one output is made of.
#[derive(Debug, Clone, Copy)]
pub struct Rounding<'a> {
    /// Per element, the magnitude rounding acts on (`|a| + |αb|`, `|A|·|B|`,
    /// `|f| + |x·f'|`, ...), from the bench pass.
    pub magnitude: &'a [f64],
    /// The op class's factor ([`crate::ops::Rounding::factors`]).
    pub k: f64,
    /// The precision the device computes in ([`crate::ops::Rounding::factors`]):
    /// its unit roundoff and underflow unit.
    pub compute: TDType,
    /// The common error the op's kernel is known to leave in float32
    /// results (epsilons, source: [`crate::ops::CommonError`]); `None` for
    /// most ops.
    pub common_error: Option<(f64, &'a str)>,
    /// The rounding of the operands the device adds (k, u, source: the
    /// rulebook's `reduced_operands` of the op's kind on the dump's
    /// device); `None` for most rows.
    pub operands: Option<(f64, f64, &'a str)>,
}

/// One output to judge: the values of both sides (and of the reference
/// run, for the benchmark standard) as f64, element for element.
#[derive(Debug, Clone, Copy)]
pub struct Case<'a> {
    /// The op name without its prefix (`ApiId.op`: `matmul`, `__add__`):
    /// the api standard's table ([`crate::ops::api_standard`]) is keyed by it.
    pub op: &'a str,
    /// Whether the output is a gradient (a backward row).
    pub backward: bool,
    /// Whether the op table marks the op as data movement (values must be identical).
    pub exact_op: bool,
    /// The tested side's dtype: it picks the thresholds.
    pub dtype: TDType,
    /// The tested values.
    pub tested: &'a [f64],
    /// The bench values (raised precision).
    pub bench: &'a [f64],
    /// The output's shape, for the element indices Messages name; empty
    /// (or not matching the values): flat indices.
    pub shape: &'a [usize],
    /// The op run on the CPU in the tested dtype, for the benchmark
    /// standard's ratios; `None` when no such run exists.
    pub reference: Option<&'a [f64]>,
    /// The msprobe standard's cosine threshold.
    pub cosine_threshold: f64,
    /// The msprobe standard's max absolute error threshold.
    pub max_abs_err_threshold: f64,
    /// The rounding bound's parts; `None` when the output has none.
    pub rounding: Option<Rounding<'a>>,
    /// Whether the tested side is the emulated device (random data, no
    /// recorded value, a CPU run of the script) rather than a device's own
    /// values: [`Standard::Default`] judges such a row by another rule.
    pub emulated: bool,
}

/// A verdict and what it was decided on.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The verdict.
    pub status: Status,
    /// Why it is not a pass (problems joined by `"; "`), or a note, or empty.
    pub message: String,
    /// The rule applied.
    pub rule: Rule,
    /// The rule's own metrics, `name=value` joined by `"; "` (the
    /// `Standard Metrics` column of `--standard api` reports).
    pub metrics: String,
    /// The metric pass over both sides (cosine, max errors, NaN/Inf
    /// counts: a details row's columns); `None` when the sides could not
    /// be compared.
    pub measured: Option<Metrics>,
}

/// The rules a row can be judged by; [`Rule::name`] is the report's
/// `Standard` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Cosine above a threshold and max absolute error below one (`--standard msprobe`).
    CosineMaxAbs,
    /// Every element identical (data movement, integers, bools; some APIs).
    Binary,
    /// Relative error within a dtype's threshold, absolute near zero.
    Absolute,
    /// Units in the last place against the reference run.
    Ulp,
    /// Relative error within a thousandth.
    Thousandth,
    /// Error ratios against the reference run, per level.
    Benchmark,
    /// Every element within `k·u·magnitude + ulp/2` (`--standard bound`).
    RoundingBound,
    /// Only the shapes are compared: the values are undefined (chosen by
    /// the replay for such ops, never by a standard).
    Shape,
}

impl Rule {
    /// The report's spelling: `cosine and max abs`, `binary equality`,
    /// `absolute threshold`, `ulp`, `thousandth`, `benchmark`, `rounding bound`, `shape`.
    pub fn name(self) -> &'static str {
        match self {
            Rule::CosineMaxAbs => "cosine and max abs",
            Rule::Binary => "binary equality",
            Rule::Absolute => "absolute threshold",
            Rule::Ulp => "ulp",
            Rule::Thousandth => "thousandth",
            Rule::Benchmark => "benchmark",
            Rule::RoundingBound => "rounding bound",
            Rule::Shape => "shape",
        }
    }
}

/// The threshold class of a float dtype: float16, bfloat16, everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Fp16,
    Bf16,
    Fp32,
}

impl Class {
    /// `(mantissa bits, smallest normal exponent)` of the class's dtype.
    fn format(self) -> (i32, i32) {
        let dtype = match self {
            Class::Fp16 => TDType::F16,
            Class::Bf16 => TDType::BF16,
            Class::Fp32 => TDType::F32,
        };
        dtype.float_format().unwrap_or((23, -126))
    }

    /// The class's value of a rule of the rulebook.
    fn pick<T>(self, by: &rulebook::ByClass<T>) -> &T {
        match self {
            Class::Fp16 => &by.fp16,
            Class::Bf16 => &by.bf16,
            Class::Fp32 => &by.fp32,
        }
    }

    /// The class's values of the benchmark rule.
    fn pick_benchmark(self, rule: &rulebook::Benchmark) -> &rulebook::BenchmarkClass {
        match self {
            Class::Fp16 => &rule.fp16,
            Class::Bf16 => &rule.bf16,
            Class::Fp32 => &rule.fp32,
        }
    }

    fn of(dtype: TDType) -> Class {
        match dtype {
            TDType::F16 => Class::Fp16,
            TDType::BF16 => Class::Bf16,
            _ => Class::Fp32,
        }
    }
}

/// Which rule judges a row: the api standard's rule of the op (`api`, and
/// `bound` without a magnitude) forward, the benchmark backward.
fn rule(standard: Standard, api: ApiRule, backward: bool, exact_op: bool, dtype: TDType, bounded: bool) -> Rule {
    if exact_op || !dtype.is_float() {
        return Rule::Binary;
    }
    match standard {
        Standard::Msprobe => return Rule::CosineMaxAbs,
        // The api standard's exact ops (abs, relu, gather, ...) stay exact forward.
        Standard::Bound if bounded && (api != ApiRule::Binary || backward) => return Rule::RoundingBound,
        _ => {}
    }
    // The op-specific rules judge what the op computes; its gradients are
    // other computations (sums over broadcast dims, reductions that cancel
    // to rounding noise), judged against the reference run.
    if backward {
        return Rule::Benchmark;
    }
    match api {
        ApiRule::Absolute => Rule::Absolute,
        ApiRule::Binary => Rule::Binary,
        ApiRule::Ulp => Rule::Ulp,
        ApiRule::Thousandth => Rule::Thousandth,
        ApiRule::Benchmark => Rule::Benchmark,
    }
}

/// The benchmark rule's (max relative, mean relative, rms) error bounds at `level`.
fn level_bounds(level: Level) -> [f64; 3] {
    match level {
        Level::One => rulebook::get().benchmark.levels.level1,
        Level::Two => rulebook::get().benchmark.levels.level2,
        Level::Default => rulebook::get().benchmark.levels.default,
    }
}

/// The note of a `bound` row judged by the api standard's rule instead.
pub const NO_BOUND: &str = "no rounding bound for this output: judged by the api standard";

/// The Message of an emulated row's `error` under the default standard
/// whose tested side has Inf or NaN where the bench is finite (`{dtype}`
/// is the tested dtype's name; rendered into the scripts' tables too).
pub const EMULATED_OVERFLOW: &str =
    "the emulated {dtype} arithmetic itself fails here (Inf or NaN where the float64 bench is finite: overflow): any device computing in {dtype} fails so";

/// The Message of an emulated row's other `error` under the default
/// standard (rendered into the scripts' tables too).
pub const EMULATED_BEYOND_BOUND: &str = "the emulated {dtype} arithmetic itself fails here (error beyond its rounding bound: cancellation or accumulation): any device computing in {dtype} fails so";

/// What judged an emulated row under the default standard, in its Message
/// (`{rule}` is the rule's name; rendered into the scripts' tables too).
pub const EMULATED_RULE: &str = "emulated device judged by the {rule} rule";

/// Judges one output by `standard` ([`Standard::for_row`] of the case).
/// Under [`Standard::Default`] an emulated row's Message names the rule
/// and its metrics (the CSVs keep msprobe's nine columns there), and an
/// error of it says that the dtype's own arithmetic fails.
pub fn judge(standard: Standard, case: &Case) -> Judged {
    let rescue = standard == Standard::Default && !case.emulated && rulebook::get().default_standard.recorded_within_bound_pass;
    let mut judged = judge_by(standard.for_row(case.emulated), rescue, case);
    if standard != Standard::Default || !case.emulated {
        return judged;
    }
    let mut parts = Vec::new();
    if judged.status == Status::Error {
        let overflow = judged.measured.as_ref().is_some_and(|m| m.tested_nan + m.tested_inf > m.bench_nan + m.bench_inf);
        parts.push((if overflow { EMULATED_OVERFLOW } else { EMULATED_BEYOND_BOUND }).replace("{dtype}", case.dtype.name()));
    }
    if !judged.message.is_empty() {
        parts.push(judged.message.clone());
    }
    if judged.rule != Rule::CosineMaxAbs {
        let rule = EMULATED_RULE.replace("{rule}", judged.rule.name());
        parts.push(if judged.metrics.is_empty() { rule } else { format!("{rule} ({})", judged.metrics) });
    }
    judged.message = parts.join("; ");
    judged
}

/// Judges one output by `standard`, resolved; with `rescue`, msprobe's
/// thresholds are applied again with the elements within the rounding
/// bound counted as exact when they fail.
fn judge_by(standard: Standard, rescue: bool, case: &Case) -> Judged {
    let api = api_standard(case.op);
    // A magnitude that is not finite where the bench is (an input perturbed
    // into NaN, a float32 probe that overflowed) bounds nothing: no bound.
    let bounded = case
        .rounding
        .is_some_and(|r| r.magnitude.len() == case.bench.len() && r.magnitude.iter().zip(case.bench).all(|(m, b)| m.is_finite() || !b.is_finite()));
    let rounding = case.rounding.filter(|_| bounded);
    let rule = rule(standard, api.rule, case.backward, case.exact_op, case.dtype, bounded);
    // Binary equality compares with the exact result as the dtype holds it
    // (a fill value, a cast: rounded once). Elsewhere a bench value past the
    // dtype's range stays finite: the dtype's own overflow is reported.
    let rounded = (rule == Rule::Binary).then(|| rules::round_to(case.bench, case.dtype));
    let (t, b) = (case.tested, rounded.as_deref().unwrap_or(case.bench));
    // `compare` also counts the NaN and Inf of both sides for every rule.
    let m = match compare(t, b) {
        Ok(m) => m,
        Err(e) => return Judged { status: Status::Error, message: e.to_string(), rule, metrics: String::new(), measured: None },
    };
    let verdict = |status, message: String, metrics: String| Judged { status, message, rule, metrics, measured: Some(m.clone()) };
    if t.is_empty() {
        return verdict(Status::Pass, "empty tensor".into(), String::new());
    }
    // msprobe's thresholds on `x`: the tested values themselves reuse the
    // pass above; a rescue's values (some counted as exact) take a new one.
    let thresholds = |x: &[f64]| match if std::ptr::eq(x, t) { Ok(m.clone()) } else { compare(x, b) } {
        Ok(m) => {
            let (status, message) = m.status(case.cosine_threshold, case.max_abs_err_threshold);
            Outcome {
                status,
                problems: if message.is_empty() || status == Status::Pass { vec![] } else { vec![message.clone()] },
                notes: if status == Status::Pass && !message.is_empty() { vec![message] } else { vec![] },
                metrics: String::new(),
            }
        }
        Err(e) => Outcome { status: Status::Error, problems: vec![e.to_string()], notes: vec![], metrics: String::new() },
    };
    if rule == Rule::CosineMaxAbs {
        let bound = rounding
            .filter(|_| rescue)
            .map(|r| rules::ElementBound::new(r.magnitude, r.k, r.compute, case.dtype).with_common_error(r.common_error).with_operands(r.operands));
        let Outcome { status, problems, notes, .. } = match &bound {
            Some(bound) => rules::rescued(t, b, bound, "msprobe's thresholds", thresholds),
            None => thresholds(t),
        };
        return verdict(status, problems.into_iter().chain(notes).collect::<Vec<_>>().join("; "), String::new());
    }
    let class = Class::of(case.dtype);
    let eps = if case.dtype == TDType::F64 { f64::EPSILON } else { f64::from(f32::EPSILON) };
    let bound = rounding.map(|r| rules::ElementBound::new(r.magnitude, r.k, r.compute, case.dtype).with_common_error(r.common_error).with_operands(r.operands));
    let api_rule = |t: &[f64]| match rule {
        Rule::Binary => rules::binary(t, b),
        Rule::Absolute => rules::absolute(t, b, class, eps),
        Rule::Ulp => rules::ulp(t, b, case.reference, class),
        Rule::Thousandth => rules::thousandth(t, b, eps),
        _ => rules::benchmark(t, b, case.reference, class, eps, level_bounds(api.level)),
    };
    let out = match (&bound, rule) {
        (Some(bound), Rule::RoundingBound) => rules::rounding_bound(t, b, bound, case.shape),
        (Some(bound), r) if r != Rule::Binary && r != Rule::CosineMaxAbs => rules::rescued(t, b, bound, "the api rule", api_rule),
        _ => api_rule(t),
    };
    let Outcome { mut status, problems, mut notes, metrics } = out;
    if standard == Standard::Bound && rule != Rule::RoundingBound && rule != Rule::Binary {
        notes.push(NO_BOUND.into());
    }
    let mut message = Vec::new();
    if m.nonfinite_differ {
        status = Status::Error;
        message
            .push(format!("NaN/Inf differ: tested has {} NaN and {} Inf, bench has {} NaN and {} Inf", m.tested_nan, m.tested_inf, m.bench_nan, m.bench_inf));
    }
    message.extend(problems);
    message.extend(notes);
    verdict(status, message.join("; "), metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_choice() {
        use Rule::*;
        let of = |standard, op, backward, exact_op, dtype| rule(standard, api_standard(op).rule, backward, exact_op, dtype, false);
        let api = |op, backward, dtype| of(Standard::Api, op, backward, false, dtype);
        assert_eq!(api("__radd__", false, TDType::F16), Absolute);
        assert_eq!(api("__rsub__", false, TDType::F32), Absolute);
        assert_eq!(api("__rsub__", true, TDType::F32), Benchmark);
        assert_eq!(api("relu", false, TDType::F32), Binary);
        assert_eq!(api("relu", true, TDType::F32), Benchmark);
        assert_eq!(api("matmul", false, TDType::BF16), Ulp);
        assert_eq!(api("matmul", true, TDType::BF16), Benchmark);
        assert_eq!(api("__rmatmul__", false, TDType::F32), Ulp);
        assert_eq!(api("conv2d", false, TDType::F32), Thousandth);
        assert_eq!(api("conv2d", true, TDType::F32), Benchmark);
        assert_eq!(api("conv3d", false, TDType::F32), Benchmark);
        assert_eq!(api("silu", false, TDType::F64), Benchmark);
        // Integer and bool outputs, and data movement, are exact under both standards.
        assert_eq!(api("matmul", false, TDType::I64), Binary);
        assert_eq!(api("sum", false, TDType::Bool), Binary);
        assert_eq!(of(Standard::Api, "view", false, true, TDType::F32), Binary);
        assert_eq!(of(Standard::Msprobe, "view", false, true, TDType::F32), Binary);
        assert_eq!(of(Standard::Msprobe, "add", false, false, TDType::I32), Binary);
        assert_eq!(of(Standard::Msprobe, "add", false, false, TDType::F32), CosineMaxAbs);
        // `bound` takes the rounding bound where there is a magnitude, else the api rule.
        let bound = |op, backward, bounded| rule(Standard::Bound, api_standard(op).rule, backward, false, TDType::BF16, bounded);
        assert_eq!(bound("add", false, true), RoundingBound);
        assert_eq!(bound("add", true, true), RoundingBound);
        assert_eq!(bound("add", false, false), Absolute);
        assert_eq!(bound("matmul", true, false), Benchmark);
        assert_eq!(bound("relu", false, true), Binary);
        assert_eq!(bound("relu", true, true), RoundingBound);
        assert_eq!(rule(Standard::Bound, api_standard("add").rule, false, false, TDType::I64, true), Binary);
        assert_eq!(rule(Standard::Bound, api_standard("view").rule, false, true, TDType::F32, true), Binary);
    }

    #[test]
    fn levels() {
        assert_eq!(level_bounds(api_standard("embedding").level), [5.0, 1.5, 1.5]);
        assert_eq!(level_bounds(api_standard("__imatmul__").level), [2.0, 1.2, 1.2]);
        assert_eq!(level_bounds(api_standard("silu").level), [10.0, 2.0, 2.0]);
    }
}
