//! The rulebook: every judging rule's numbers, API sets and factors as
//! data (`runtime/rulebook.json`), read by the native judge here and
//! rendered into the scripts' `_tables.py` (`RULEBOOK`) by the renderer,
//! so a threshold or factor is written once and both judges take it.
//!
//! The file is compiled in; `MSPROBE_RS_RULEBOOK=FILE` replaces it for a
//! run (the binary checks the file with [`check_override`] before anything
//! else, so [`get`] never meets a bad one).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The environment variable that names a rulebook to use instead of the
/// compiled-in one.
pub const OVERRIDE: &str = "MSPROBE_RS_RULEBOOK";

/// The compiled-in rulebook's text. Generated Rust projects compile in
/// the copy `op_generate --lang rust` writes beside them, which is this file.
pub const DEFAULT: &str = include_str!("../rulebook.json");

/// The whole rulebook (field names as in the file).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rulebook {
    /// What the file is.
    pub about: String,
    /// msprobe's api standard: its API sets by rule and level.
    pub api_standard: ApiSets,
    /// The absolute threshold rule, by dtype class.
    pub absolute: ByClass<Absolute>,
    /// The ULP rule, by dtype class.
    pub ulp: ByClass<Ulp>,
    /// The thousandth rule.
    pub thousandth: Thousandth,
    /// The benchmark rule.
    pub benchmark: Benchmark,
    /// The bound standard's factors.
    pub rounding: Rounding,
    /// The bound's systematic view.
    pub systematic: Systematic,
    /// Devices whose kernels of a kind round float32 operands shorter.
    pub reduced_operands: ReducedOperands,
    /// The reports' columns.
    pub csv: Columns,
    /// How a call's own error's effect on the loss is estimated and said.
    pub loss_effect: LossEffect,
    /// Constants of the fused NPU ops' references.
    pub npu_references: NpuReferences,
    /// random_data's ranges where the statistics give none.
    pub random_data: RandomData,
    /// The standards a run that names none judges its rows by.
    pub default_standard: DefaultStandard,
}

/// The standards of a run that names none, by the tested side of a row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultStandard {
    /// Why.
    pub about: String,
    /// The standard of a row whose tested side is a device's own values.
    pub recorded: String,
    /// The standard of a row whose tested side is the emulated device.
    pub emulated: String,
    /// Whether a recorded row's elements within the rounding bound count
    /// as exact when `recorded` alone does not pass it.
    pub recorded_within_bound_pass: bool,
}

/// The rounding bound's systematic view: the common relative error of a
/// whole tensor that rounding may leave.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Systematic {
    /// Why.
    pub about: String,
    /// The largest common relative error, in epsilons of the output
    /// dtype; `None`: no systematic view for the class.
    pub epsilons: ByClass<Option<f64>>,
    /// Standard errors from 0 a common error must be to count.
    pub z: f64,
    /// The fewest finite, non-zero bench elements the view needs.
    pub min_elements: usize,
}

/// Devices whose float32 kernels of a kind (the op table's
/// `Fact::ReducedOperands`) round their operands to a shorter mantissa by
/// default, by kind and device (`cpu`, `cuda`, `npu`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReducedOperands {
    /// Why.
    pub about: String,
    /// Convolutions, by device.
    pub conv: BTreeMap<String, Operands>,
}

impl ReducedOperands {
    /// The operands' rounding of kernels of `kind` on `device`, if any.
    pub fn get(&self, kind: &str, device: &str) -> Option<&Operands> {
        match kind {
            "conv" => self.conv.get(device),
            _ => None,
        }
    }
}

/// How a device rounds a kernel's float32 operands.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operands {
    /// The operands' mantissa bits (u = 2^-(mantissa+1)).
    pub mantissa: i32,
    /// Roundings of a term (a product's two operands: 2).
    pub k: f64,
    /// The documented setting this comes from (the Message names it).
    pub source: String,
}

/// The standards `default_standard` may name.
const NAMED_STANDARDS: [&str; 3] = ["msprobe", "api", "bound"];

/// Constants of msprobe's references of torch_npu's fused ops.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NpuReferences {
    /// Where they are used.
    pub about: String,
    /// npu_fast_gelu's `x·sigmoid(alpha·x)`.
    pub fast_gelu_alpha: f64,
    /// The logit npu_scaled_masked_softmax gives a masked place.
    pub scaled_masked_softmax_fill: f64,
}

/// random_data's `[low, high]` where the dump's statistics give none.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomData {
    /// Where they are used.
    pub about: String,
    /// A float tensor without Min/Max.
    pub float_without_stats: [f64; 2],
    /// An integer tensor without Min/Max.
    pub int_without_stats: [f64; 2],
    /// A tensor whose Min or Max is NaN.
    pub after_a_nan_stat: [f64; 2],
}

/// The columns of the accuracy CSVs, in order (each list's length is fixed:
/// the writers fill that many cells).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Columns {
    /// Whose columns these are.
    pub about: String,
    /// msprobe's nine columns of the details CSV.
    pub details: Vec<String>,
    /// The two the api and bound standards append to the details.
    pub standard: Vec<String>,
    /// msprobe's four columns of the result CSV.
    pub result: Vec<String>,
    /// The two a job's replay appends to both CSVs.
    pub job: Vec<String>,
    /// The three a dump's replay appends to the details when it has loss effects.
    pub effect: Vec<String>,
}

/// The first-order effect of a call's own error on the loss: when it is
/// rounding noise, when first order is not enough, and which ops' outputs
/// are losses.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossEffect {
    /// Why.
    pub about: String,
    /// Unit roundoffs of the output dtype, times `sqrt(sum((dL/dy * y)^2))`,
    /// an effect may reach and still be rounding noise.
    pub noise_roundoffs: f64,
    /// The relative error `||e|| / ||y||` beyond which the estimate is unreliable.
    pub first_order_relative_error: f64,
    /// Ops (names after the prefix) whose output moves by steps or along boundaries.
    pub saturating: Vec<String>,
    /// Ops whose scalar forward output is a training loss.
    pub losses: Vec<String>,
}

impl LossEffect {
    /// Whether the op `name` (after the prefix) saturates.
    pub fn saturates(&self, name: &str) -> bool {
        self.saturating.iter().any(|s| s == name)
    }

    /// Whether the op `name` (after the prefix) computes a loss.
    pub fn is_loss(&self, name: &str) -> bool {
        self.losses.iter().any(|s| s == name)
    }
}

/// One value per dtype class of the api standard (float16, bfloat16, and
/// everything else as float32).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByClass<T> {
    /// What the rule does with these values.
    pub about: String,
    /// float16.
    pub fp16: T,
    /// bfloat16.
    pub bf16: T,
    /// float32 and float64.
    pub fp32: T,
}

/// msprobe's API sets of the api standard by base op name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSets {
    /// What the sets mean.
    pub about: String,
    /// Judged by the absolute threshold.
    pub absolute: Vec<String>,
    /// Judged by binary equality.
    pub binary: Vec<String>,
    /// Judged by ULP errors.
    pub ulp: Vec<String>,
    /// Judged by the thousandth rule.
    pub thousandth: Vec<String>,
    /// The benchmark rule's level 1.
    pub level1: Vec<String>,
    /// The benchmark rule's level 2.
    pub level2: Vec<String>,
}

/// The absolute threshold of one class.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Absolute {
    /// The largest relative error of a normal value.
    pub rtol: f64,
    /// Values with |bench| at most this are small.
    pub small: f64,
    /// The largest absolute error of a small value.
    pub atol: f64,
}

/// The ULP rule of one class.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ulp {
    /// An element over this many ULP counts against the share.
    pub over: f64,
    /// A share of such elements below this passes.
    pub share_below: f64,
    /// A mean ULP error below this passes too (when set).
    pub mean_below: Option<f64>,
}

/// The thousandth rule.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thousandth {
    /// What the rule does.
    pub about: String,
    /// The relative error a value must be within.
    pub rtol: f64,
    /// The share of such values a pass needs to exceed.
    pub share_above: f64,
}

/// The benchmark rule.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Benchmark {
    /// What the rule does.
    pub about: String,
    /// The error bound of the small value error proportion's ratio.
    pub small_value_bound: f64,
    /// The error bounds of (max relative, mean relative, rms) ratios by level.
    pub levels: Levels,
    /// Small values, their atol, and the ratios' floor, by class.
    pub fp16: BenchmarkClass,
    /// bfloat16.
    pub bf16: BenchmarkClass,
    /// float32 and float64.
    pub fp32: BenchmarkClass,
}

/// The benchmark rule's bounds by level.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Levels {
    /// msprobe's level 1.
    pub level1: [f64; 3],
    /// msprobe's level 2.
    pub level2: [f64; 3],
    /// Every other op.
    pub default: [f64; 3],
}

/// The benchmark rule's values of one class.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkClass {
    /// Values with |bench| at most this are small.
    pub small: f64,
    /// A small value's error counts when over this.
    pub atol: f64,
    /// The least denominator of a ratio (without a reference run: the floor).
    pub floor: f64,
}

/// The bound standard's factors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rounding {
    /// Where the factors come from.
    pub about: String,
    /// `[forward, backward]` k by rounding class name.
    pub k: BTreeMap<String, [f64; 2]>,
    /// `[forward, backward]` k of float16 and bfloat16 results by rounding
    /// class name (every class but sums, which accumulate in float32), with
    /// their own dtype's unit roundoff.
    pub half_precision_k: BTreeMap<String, [f64; 2]>,
    /// The longest accumulation chain the sums class's k covers: a
    /// contraction's result summing more terms has its magnitude grown by
    /// `√(n / chain_covered)` (`ops::chain`).
    pub chain_covered: f64,
}

impl Rounding {
    /// k of class `name` (forward, or `backward`); a class the file does
    /// not name is a broken rulebook, refused when it is read.
    pub fn k(&self, name: &str, backward: bool) -> f64 {
        self.k.get(name).map_or(f64::NAN, |k| k[usize::from(backward)])
    }

    /// [`Rounding::k`] of a float16 or bfloat16 result (`half_precision_k`).
    pub fn half_k(&self, name: &str, backward: bool) -> f64 {
        self.half_precision_k.get(name).map_or(f64::NAN, |k| k[usize::from(backward)])
    }
}

/// The rounding classes the engines compute (`ops::Rounding` names): each
/// must have its k.
const ROUNDING_CLASSES: [&str; 6] = ["terms", "sums", "selects", "smooth", "parts", "composite"];

/// Parses and checks a rulebook's text: every field there, every number
/// finite and (but the constants of `npu_references` and `random_data`) not
/// negative, every rounding class named, every CSV column list
/// of its length.
pub fn parse(text: &str) -> Result<Rulebook, String> {
    let book: Rulebook = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let value = serde_json::to_value(&book).map_err(|e| e.to_string())?;
    for (section, v) in value.as_object().into_iter().flatten() {
        check_numbers(v, section, !["npu_references", "random_data"].contains(&section.as_str()))?;
    }
    for (class, b) in [("fp16", &book.benchmark.fp16), ("bf16", &book.benchmark.bf16), ("fp32", &book.benchmark.fp32)] {
        if !(b.floor > 0.0) {
            return Err(format!("benchmark.{class}.floor: expected a number above 0 (the ratios' least denominator), got {}", b.floor));
        }
    }
    for (side, name) in [("recorded", &book.default_standard.recorded), ("emulated", &book.default_standard.emulated)] {
        if !NAMED_STANDARDS.contains(&name.as_str()) {
            return Err(format!("default_standard.{side}: expected \"msprobe\", \"api\" or \"bound\", got {name:?}"));
        }
    }
    let c = &book.csv;
    for (name, list, len) in [("details", &c.details, 9), ("standard", &c.standard, 2), ("result", &c.result, 4), ("job", &c.job, 2), ("effect", &c.effect, 3)]
    {
        if list.len() != len {
            return Err(format!("csv.{name}: expected {len} column names, got {}", list.len()));
        }
    }
    for class in ROUNDING_CLASSES {
        if !book.rounding.k.contains_key(class) {
            return Err(format!("rounding.k: the class {class:?} is missing"));
        }
        if class != "sums" && !book.rounding.half_precision_k.contains_key(class) {
            return Err(format!("rounding.half_precision_k: the class {class:?} is missing"));
        }
    }
    Ok(book)
}

/// Every number under `v` (at `at`) finite, and not negative when `unsigned`.
fn check_numbers(v: &serde_json::Value, at: &str, unsigned: bool) -> Result<(), String> {
    match v {
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() && (x >= 0.0 || !unsigned) => Ok(()),
            _ if unsigned => Err(format!("{at}: expected a finite number not below 0, got {n}")),
            _ => Err(format!("{at}: expected a finite number, got {n}")),
        },
        serde_json::Value::Array(items) => items.iter().enumerate().try_for_each(|(i, x)| check_numbers(x, &format!("{at}[{i}]"), unsigned)),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(k, x)| check_numbers(x, &format!("{at}.{k}"), unsigned)),
        _ => Ok(()),
    }
}

/// Reads the rulebook `MSPROBE_RS_RULEBOOK` names, if any: `Ok(None)`
/// without one, the file's path and why when it is unusable.
pub fn check_override() -> Result<Option<String>, String> {
    let Some(path) = std::env::var_os(OVERRIDE) else { return Ok(None) };
    let shown = std::path::Path::new(&path).display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{OVERRIDE}={shown}: cannot read it: {e}"))?;
    parse(&text).map_err(|e| format!("{OVERRIDE}={shown}: not a rulebook: {e}"))?;
    Ok(Some(shown))
}

/// The rulebook in force: the file `MSPROBE_RS_RULEBOOK` names (checked
/// by [`check_override`] first), else the compiled-in one.
pub fn get() -> &'static Rulebook {
    static BOOK: OnceLock<Rulebook> = OnceLock::new();
    BOOK.get_or_init(|| {
        let given = std::env::var_os(OVERRIDE).and_then(|p| std::fs::read_to_string(p).ok()).and_then(|t| parse(&t).ok());
        given.unwrap_or_else(|| parse(DEFAULT).expect("the compiled-in rulebook is valid (rulebook's unit test)"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_rulebook_is_valid() {
        let book = parse(DEFAULT).unwrap();
        assert_eq!(book.absolute.bf16.rtol, 4e-3);
        assert_eq!(book.rounding.k("terms", false), 3.0);
    }

    #[test]
    fn a_broken_rulebook_says_where() {
        let mut v: serde_json::Value = serde_json::from_str(DEFAULT).unwrap();
        v["absolute"]["fp32"]["rtol"] = serde_json::json!(-1.0);
        assert_eq!(parse(&v.to_string()).unwrap_err(), "absolute.fp32.rtol: expected a finite number not below 0, got -1.0");
        v["absolute"]["fp32"]["rtol"] = serde_json::json!(1e-6);
        v["rounding"]["k"].as_object_mut().unwrap().remove("sums");
        assert_eq!(parse(&v.to_string()).unwrap_err(), "rounding.k: the class \"sums\" is missing");
        v["ulp"]["fp16"]["extra"] = serde_json::json!(1);
        assert!(parse(&v.to_string()).unwrap_err().contains("unknown field `extra`"), "{v}");
        let mut v: serde_json::Value = serde_json::from_str(DEFAULT).unwrap();
        v["csv"]["result"].as_array_mut().unwrap().pop();
        assert_eq!(parse(&v.to_string()).unwrap_err(), "csv.result: expected 4 column names, got 3");
        let mut v: serde_json::Value = serde_json::from_str(DEFAULT).unwrap();
        v["benchmark"]["bf16"]["floor"] = serde_json::json!(0.0);
        assert_eq!(parse(&v.to_string()).unwrap_err(), "benchmark.bf16.floor: expected a number above 0 (the ratios' least denominator), got 0");
    }
}
