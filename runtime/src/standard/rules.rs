//! The api standard's rules, each over one output's values. NaN/Inf
//! disagreement is reported by the caller; the rules measure only the
//! elements finite on both sides (and metrics are 0 when there are none).

use super::fsum::fsum;
use super::screen::{Screen, Sums};
use super::Class;
use crate::compare::Status;
use crate::dtype::TDType;
use crate::pyfmt::{format_g6 as g, repr};
use crate::rulebook;
use rayon::prelude::*;

/// A rule's verdict before the NaN/Inf check is added.
pub(super) struct Outcome {
    /// The rule's verdict.
    pub status: Status,
    /// Why it is not a pass.
    pub problems: Vec<String>,
    /// Remarks that follow the problems (also on pass rows).
    pub notes: Vec<String>,
    /// `name=value; ...`
    pub metrics: String,
}

impl Outcome {
    /// Error when there is a problem, else pass.
    fn from_problems(problems: Vec<String>, metrics: String) -> Outcome {
        let status = if problems.is_empty() { Status::Pass } else { Status::Error };
        Outcome { status, problems, notes: Vec::new(), metrics }
    }
}

/// The pairs finite on both sides, as (absolute error, bench).
fn finite<'a>(x: &'a [f64], b: &'a [f64]) -> impl Iterator<Item = (f64, f64)> + 'a {
    x.iter().zip(b).filter(|(x, b)| x.is_finite() && b.is_finite()).map(|(&x, &b)| ((x - b).abs(), b))
}

/// `count / total`, 0 when there is nothing to count.
fn ratio(count: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

/// Every element identical (NaN where the bench has NaN).
pub(super) fn binary(t: &[f64], b: &[f64]) -> Outcome {
    let differ = t.iter().zip(b).filter(|(x, y)| x != y && !(x.is_nan() && y.is_nan())).count();
    let max_abs = finite(t, b).fold(0.0f64, |m, (d, _)| m.max(d));
    let mut problems = Vec::new();
    if differ > 0 {
        problems.push(format!("binary equality: {differ} of {} elements differ (max absolute error {})", t.len(), g(max_abs)));
    }
    Outcome::from_problems(problems, format!("error_rate={}", g(ratio(differ, t.len()))))
}

/// Relative error bounded on normal values, absolute error on small ones.
pub(super) fn absolute(t: &[f64], b: &[f64], class: Class, eps: f64) -> Outcome {
    let rulebook::Absolute { rtol, small, atol } = *class.pick(&rulebook::get().absolute);
    let (mut n_normal, mut n_small, mut n_rel, mut n_abs, mut max_rel) = (0, 0, 0, 0, 0.0f64);
    for (d, b) in finite(t, b) {
        if b.abs() <= small {
            n_small += 1;
            n_abs += usize::from(d > atol);
        } else {
            let rel = d / (b.abs() + eps);
            n_normal += 1;
            n_rel += usize::from(rel > rtol);
            max_rel = max_rel.max(rel);
        }
    }
    let mut problems = Vec::new();
    if n_rel > 0 {
        problems.push(format!("absolute threshold: relative error above {} at {n_rel} of {n_normal} normal values (max {})", g(rtol), g(max_rel)));
    }
    if n_abs > 0 {
        problems.push(format!("absolute threshold: absolute error above {} at {n_abs} of {n_small} small values (|bench| <= {})", g(atol), g(small)));
    }
    let metrics = format!("rel_err_ratio={}; abs_err_ratio={}", g(ratio(n_rel, n_normal)), g(ratio(n_abs, n_small)));
    Outcome::from_problems(problems, metrics)
}

/// `2^k`, exactly (`k` is a normal exponent).
fn pow2(k: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&k));
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `floor(log2(x))` of a finite `x > 0` from its bits (NumPy's `frexp`
/// exponent minus one); subnormals give -1023, below every rule's floor.
fn floor_log2(x: f64) -> i32 {
    let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
    if biased == 0 {
        -1023
    } else {
        biased - 1023
    }
}

/// Errors in units in the last place of the bench value in the tested dtype.
pub(super) fn ulp(t: &[f64], b: &[f64], reference: Option<&[f64]>, class: Class) -> Outcome {
    let (mant, min_eb) = class.format();
    let rule = *class.pick(&rulebook::get().ulp);
    let over = rule.over;
    // (max, mean, share above `over`) of one side's ULP errors.
    let stats = |x: &[f64]| {
        let ulps: Vec<f64> = finite(x, b)
            .map(|(d, b)| {
                let eb = if b == 0.0 { min_eb.max(0) } else { floor_log2(b.abs()).max(min_eb) };
                d * pow2(mant - eb)
            })
            .collect();
        let n = ulps.len();
        if n == 0 {
            (0.0, 0.0, 0.0)
        } else {
            let max = ulps.iter().fold(0.0f64, |m, &u| m.max(u));
            (max, fsum(ulps.iter().copied()) / n as f64, ratio(ulps.iter().filter(|&&u| u > over).count(), n))
        }
    };
    let (max, mean, share) = stats(t);
    let (pass, bound) = match rule.mean_below {
        Some(m) => (mean < m || share < rule.share_below, format!("mean < {} or share < {}", g(m), g(rule.share_below))),
        None => (share < rule.share_below, format!("share < {}", g(rule.share_below))),
    };
    // msprobe also passes a share no larger than the reference device's
    // (its GPU; here the CPU run in the tested dtype).
    let reference_share = reference.filter(|r| r.len() == b.len()).map(|r| stats(r).2);
    let mut problems = Vec::new();
    if !pass && !reference_share.is_some_and(|r| share <= r) {
        let versus = reference_share.map(|r| format!(", or at most the reference's {}", g(r))).unwrap_or_default();
        problems.push(format!("ulp: mean {} and max {} ULP, share {} above {} ULP (pass: {bound}{versus})", g(mean), g(max), g(share), g(over)));
    }
    Outcome::from_problems(problems, format!("max_ulp={}; mean_ulp={}; ulp_error_proportion={}", g(max), g(mean), g(share)))
}

/// More than the rulebook's share (99.9%) of the values within its
/// relative error (0.001). With no value finite on both sides there is
/// nothing to measure: a pass.
pub(super) fn thousandth(t: &[f64], b: &[f64], eps: f64) -> Outcome {
    let rule = &rulebook::get().thousandth;
    let (mut n, mut within) = (0, 0);
    for (d, b) in finite(t, b) {
        n += 1;
        within += usize::from(d / (b.abs() + eps) < rule.rtol);
    }
    let share = ratio(within, n);
    let mut problems = Vec::new();
    if n > 0 && !(share > rule.share_above) {
        problems.push(format!("thousandth: share {} of values within relative error {} (pass: above {})", g(share), g(rule.rtol), g(rule.share_above)));
    }
    Outcome::from_problems(problems, format!("thousandth_ratio={}", g(share)))
}

/// Small value error proportion, max and mean relative error and root
/// mean squared error of `x` against the bench.
fn benchmark_metrics(x: &[f64], b: &[f64], small: f64, atol: f64, eps: f64) -> [f64; 4] {
    let (mut n_small, mut n_small_err) = (0, 0);
    let (mut rel, mut sq) = (Vec::new(), Vec::new());
    for (d, b) in finite(x, b) {
        if b.abs() <= small {
            n_small += 1;
            n_small_err += usize::from(d > atol);
        } else {
            rel.push(d / (b.abs() + eps));
            sq.push(d * d);
        }
    }
    let n = rel.len();
    if n == 0 {
        return [ratio(n_small_err, n_small), 0.0, 0.0, 0.0];
    }
    let max_rel = rel.iter().fold(0.0f64, |m, &r| m.max(r));
    [ratio(n_small_err, n_small), max_rel, fsum(rel) / n as f64, (fsum(sq) / n as f64).sqrt()]
}

/// The tested side's errors as multiples of the reference run's (the op
/// on the CPU in the tested dtype), or of the dtype's floor without one.
pub(super) fn benchmark(t: &[f64], b: &[f64], reference: Option<&[f64]>, class: Class, eps: f64, level: [f64; 3]) -> Outcome {
    const LABELS: [&str; 4] = ["small value error proportion", "max relative error", "mean relative error", "root mean squared error"];
    let rule = &rulebook::get().benchmark;
    let rulebook::BenchmarkClass { small, atol, floor: min_err } = *class.pick_benchmark(rule);
    let reference = reference.filter(|r| r.len() == b.len());
    let tested = benchmark_metrics(t, b, small, atol, eps);
    let refs = reference.map_or([0.0; 4], |r| benchmark_metrics(r, b, small, atol, eps));
    let bounds = [rule.small_value_bound, level[0], level[1], level[2]];
    let mut out = Outcome { status: Status::Pass, problems: Vec::new(), notes: Vec::new(), metrics: String::new() };
    let mut ratios = [0.0; 4];
    for i in 0..4 {
        ratios[i] = tested[i] / refs[i].max(min_err);
        let status = if ratios[i] <= 1.0 {
            Status::Pass
        } else if ratios[i] <= bounds[i] {
            Status::Warning
        } else {
            Status::Error
        };
        if status != Status::Pass {
            out.problems.push(format!(
                "benchmark: {} {} is {} times the reference's {} (pass <= 1, error > {})",
                LABELS[i],
                g(tested[i]),
                g(ratios[i]),
                g(refs[i]),
                g(bounds[i])
            ));
        }
        out.status = out.status.max(status);
    }
    if reference.is_none() {
        out.notes.push(format!("no reference run in the tested dtype: ratios against the dtype's floor {}", g(min_err)));
    }
    out.metrics =
        format!("small_value_err_ratio={}; max_rel_err_ratio={}; mean_rel_err_ratio={}; rmse_ratio={}", g(ratios[0]), g(ratios[1]), g(ratios[2]), g(ratios[3]));
    out
}

/// Each value rounded to nearest (ties to even) in `dtype`'s format, past
/// its largest finite magnitude to ±Inf: the exact result of an op whose
/// result is one of its inputs' values or a constant (a fill, a cast), as
/// the device writes it in `dtype`; float64 and non-float values unchanged.
pub(crate) fn round_to(values: &[f64], dtype: TDType) -> Vec<f64> {
    if dtype == TDType::F32 {
        // The hardware's conversion: the same rounding (nearest, ties to
        // even, gradual underflow, ±Inf past the largest), several times
        // faster (tested against the formula below).
        return values.iter().map(|&x| f64::from(x as f32)).collect();
    }
    match dtype.float_format().filter(|_| dtype != TDType::F64) {
        Some((mant, emin)) => round_to_format(values, mant, emin),
        None => values.to_vec(),
    }
}

/// [`round_to`] a format of `mant` stored mantissa bits and smallest
/// normal exponent `emin`.
fn round_to_format(values: &[f64], mant: i32, emin: i32) -> Vec<f64> {
    let largest = (2.0 - ldexp1(-mant)) * ldexp1(1 - emin);
    values
        .iter()
        .map(|&x| {
            if !x.is_finite() || x == 0.0 {
                return x;
            }
            let scale = ldexp1(floor_log2(x.abs()).max(emin) - mant);
            let y = (x / scale).round_ties_even() * scale;
            if y.abs() > largest {
                f64::INFINITY.copysign(y)
            } else {
                y
            }
        })
        .collect()
}

/// `2^k` for any `k` from the smallest subnormal's exponent (-1074) up, exactly.
fn ldexp1(k: i32) -> f64 {
    if k >= -1022 {
        pow2(k)
    } else {
        f64::from_bits(1u64 << (k + 1074).max(0))
    }
}

/// The rounding error bound of each element of one output:
/// `k·(u·m + η) + ulp_d(m)/2`, with `u` the unit roundoff of the precision
/// the device computes in (the op class's, for the dtype), `η` that
/// precision's underflow unit (half its smallest subnormal: the model
/// `fl(x∘y) = (x∘y)(1+δ) + η` of arithmetic with gradual underflow, which
/// bounds the roundings of intermediates that are subnormal), and `ulp_d` the spacing of the output dtype
/// at the magnitude `m` (rounding the result, or an intermediate stored in
/// the output dtype, moves it by at most that much).
pub(super) struct ElementBound<'a> {
    magnitude: &'a [f64],
    /// The op class's factor.
    pub k: f64,
    /// The unit roundoff of the compute precision.
    pub u: f64,
    /// Half the smallest subnormal of the compute precision (0 for float64,
    /// whose half subnormal is below every double).
    eta: f64,
    mant: i32,
    emin: i32,
    /// The output dtype (the systematic view's epsilons are its).
    dtype: TDType,
    /// The float32 common error the op's kernel is known to leave
    /// (epsilons, source): the systematic view allows it.
    common_error: Option<(f64, &'a str)>,
    /// The device's rounding of the operands (k, u, source): `k·u·m` more.
    operands: Option<(f64, f64, &'a str)>,
}

impl<'a> ElementBound<'a> {
    /// The bound for outputs of `dtype` computed in `compute` (float dtypes;
    /// anything else is taken as float32).
    pub fn new(magnitude: &'a [f64], k: f64, compute: TDType, dtype: TDType) -> ElementBound<'a> {
        let (mant, emin) = dtype.float_format().unwrap_or((23, -126));
        let (cm, ce) = compute.float_format().unwrap_or((23, -126));
        let eta = if ce - cm - 1 < -1074 { 0.0 } else { ldexp1(ce - cm - 1) };
        ElementBound { magnitude, k, u: ldexp1(-(cm + 1)), eta, mant, emin, dtype, common_error: None, operands: None }
    }

    /// The bound of an op whose kernel is known to leave a common error
    /// in float32 results ([`crate::ops::CommonError`]).
    pub fn with_common_error(self, common_error: Option<(f64, &'a str)>) -> ElementBound<'a> {
        ElementBound { common_error, ..self }
    }

    /// The bound of a row whose device rounds the op's operands shorter
    /// (the rulebook's `reduced_operands`): `k·u·m` more per element.
    pub fn with_operands(self, operands: Option<(f64, f64, &'a str)>) -> ElementBound<'a> {
        ElementBound { operands, ..self }
    }

    /// What the device's rounding of the operands adds, for a row's Message.
    fn operands_note(&self) -> Option<String> {
        self.operands.map(|(k, u, source)| format!("bound plus k*u*magnitude for the operands (k={}, u={}: {source})", g(k), g(u)))
    }

    /// The bound of element `i`.
    pub fn at(&self, i: usize) -> f64 {
        // A NaN magnitude (an input perturbed into NaN) bounds nothing.
        let m = if self.magnitude[i].is_nan() { 0.0 } else { self.magnitude[i].abs() };
        let e = if m == 0.0 || !m.is_finite() { self.emin } else { floor_log2(m).max(self.emin) };
        let half_ulp = if m.is_finite() { ldexp1(e - self.mant - 1) } else { f64::INFINITY };
        let operands = self.operands.map_or(0.0, |(k, u, _)| k * u * m);
        self.k * (self.u * m + self.eta) + operands + half_ulp
    }

    /// `|t - b| / bound` of element `i` (0 where either side is not finite).
    pub fn ratio(&self, i: usize, t: f64, b: f64) -> f64 {
        if t.is_finite() && b.is_finite() {
            (t - b).abs() / self.at(i)
        } else {
            0.0
        }
    }
}

/// Element `at` of values shaped `shape` as `[i, j, ...]` (row-major), or
/// its flat index when the shape does not hold `len` values.
fn element_index(at: usize, shape: &[usize], len: usize) -> String {
    if shape.is_empty() || shape.iter().product::<usize>() != len {
        return at.to_string();
    }
    let (mut rest, mut index) = (at, vec![0; shape.len()]);
    for (slot, &dim) in index.iter_mut().zip(shape).rev() {
        *slot = rest % dim.max(1);
        rest /= dim.max(1);
    }
    format!("[{}]", index.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "))
}

impl ElementBound<'_> {
    /// `|t - b|` in ULPs of the output dtype at `b` (its spacing there).
    fn ulps(&self, t: f64, b: f64) -> f64 {
        let e = if b == 0.0 || !b.is_finite() { self.emin } else { floor_log2(b.abs()).max(self.emin) };
        (t - b).abs() / ldexp1(e - self.mant)
    }
}

/// Elements one thread takes at least in the rounding bound's pass.
const BOUND_CHUNK: usize = 1 << 15;

/// One stretch of the rounding bound's pass: the elements beyond their
/// bound, the worst ratio and its first index, and the systematic view's
/// plain sums.
struct Stretch {
    beyond: usize,
    worst: f64,
    at: usize,
    sums: Sums,
}

/// Every element within its rounding bound, and no systematic error
/// ([`systematic`]); the worst element named by its index in `shape`. One
/// pass computes each element's bound once, for its ratio and for the
/// systematic view's screen; stretches of it run on rayon's threads. The
/// counts and the worst element (the first of equal ratios) are the
/// one-thread pass's; the screen's sums are added in another order, which
/// its error bounds allow for (it only ever decides as the exact sums do).
pub(super) fn rounding_bound(t: &[f64], b: &[f64], bound: &ElementBound, shape: &[usize]) -> Outcome {
    let view = View::of(bound);
    let stretch = |(c, (t, b)): (usize, (&[f64], &[f64]))| {
        let mut s = Stretch { beyond: 0, worst: 0.0, at: 0, sums: Sums::default() };
        for (j, (&x, &y)) in t.iter().zip(b).enumerate() {
            let i = c * BOUND_CHUNK + j;
            // bound.ratio(i, x, y), with the bound computed once.
            let r = if x.is_finite() && y.is_finite() {
                let w = bound.at(i);
                match &view {
                    Some(v) if v.counts(w, y) => {
                        // |x - y| / w is |(x - y) / w| bit for bit: the unit's error serves both.
                        let d = (x - y) / w;
                        s.sums.add(d, y / w);
                        d.abs()
                    }
                    _ => (x - y).abs() / w,
                }
            } else {
                0.0
            };
            s.beyond += usize::from(r > 1.0);
            if r > s.worst {
                s.worst = r;
                s.at = i;
            }
        }
        s
    };
    let stretches: Vec<Stretch> = t.par_chunks(BOUND_CHUNK).zip(b.par_chunks(BOUND_CHUNK)).enumerate().map(stretch).collect();
    let (mut beyond, mut worst, mut at, mut sums) = (0usize, 0.0f64, 0usize, Sums::default());
    for s in stretches {
        beyond += s.beyond;
        if s.worst > worst {
            (worst, at) = (s.worst, s.at);
        }
        sums.merge(&s.sums);
    }
    let mut problems = Vec::new();
    if beyond > 0 {
        problems.push(format!(
            "rounding bound: {beyond} of {} elements beyond k*(u*magnitude + eta) + ulp/2 (k={}, u={}); worst {} times the bound at element {}: tested {}, bench {} ({} ULPs of {}), magnitude {}",
            t.len(),
            g(bound.k),
            g(bound.u),
            g(worst),
            element_index(at, shape, t.len()),
            repr(t[at]),
            repr(b[at]),
            g(bound.ulps(t[at], b[at])),
            bound.dtype.name(),
            g(bound.magnitude[at])
        ));
    }
    problems.extend(view.and_then(|v| v.finish(t, b, bound, sums.decide(v.min_elements, v.limit * v.eps))));
    let metrics = format!("bound_ratio={}; beyond_bound={}; k={}; u={}", g(worst), g(ratio(beyond, t.len())), g(bound.k), g(bound.u));
    let mut out = Outcome::from_problems(problems, metrics);
    out.notes.extend(bound.operands_note());
    out
}

/// The rounding bound's systematic view: the whole tensor's common
/// relative error `ρ` (tested ≈ bench·(1 + ρ)) and its standard error, a
/// least-squares fit in which each element counts by its own bound `B`
/// (`e/B = ρ·b/B`: an element whose bound is loose, a long sum that
/// cancels, carries little; over the finite bench elements of normal size
/// with a finite bound). Rounding to nearest leaves `ρ` near 0 however
/// loose each element's bound is, so a `ρ` beyond the rulebook's
/// `systematic` epsilons of the output dtype and `z` standard errors from
/// 0 is a problem naming it; `None` when fewer than `min_elements`
/// elements effectively carry the fit (`(Σx²)²/Σx⁴`, `x = b/B`), or for a
/// dtype class the rulebook gives no epsilons.
pub(super) fn systematic(t: &[f64], b: &[f64], bound: &ElementBound) -> Option<String> {
    let view = View::of(bound)?;
    let screened = view.sums(t, b, bound).decide(view.min_elements, view.limit * view.eps);
    view.finish(t, b, bound, screened)
}

/// The systematic view of one row's bound: its epsilons and which
/// elements carry the fit.
struct View<'a> {
    /// The epsilons allowed (the rulebook's, or the kernel's known figure).
    limit: f64,
    /// The output dtype's epsilon.
    eps: f64,
    /// Its smallest normal value: subnormal bench values round with a
    /// relative error beyond any epsilon, and are left out.
    normal: f64,
    /// The kernel's known common error, when it sets `limit`.
    known: Option<(f64, &'a str)>,
    min_elements: f64,
}

impl<'a> View<'a> {
    /// `None` for a dtype class the rulebook gives no epsilons.
    fn of(bound: &ElementBound<'a>) -> Option<View<'a>> {
        let book = &rulebook::get().systematic;
        let dtype = bound.dtype;
        let (mant, emin) = dtype.float_format()?;
        let mut limit = (*Class::of(dtype).pick(&book.epsilons))?;
        // A kernel known to leave more (float32 results only): its figure, and why.
        let known = bound.common_error.filter(|&(eps, _)| dtype == TDType::F32 && eps > limit);
        if let Some((eps, _)) = known {
            limit = eps;
        }
        Some(View { limit, eps: ldexp1(-mant), normal: ldexp1(emin), known, min_elements: book.min_elements as f64 })
    }

    /// Whether an element of finite tested and bench (`y`) values, whose
    /// bound is `w`, carries the fit.
    #[inline]
    fn counts(&self, w: f64, y: f64) -> bool {
        y.abs() >= self.normal && w.is_finite() && w > 0.0
    }

    /// The plain sums of [`View::units`] (the screen's), in stretches on
    /// rayon's threads merged in order.
    fn sums(&self, t: &[f64], b: &[f64], bound: &ElementBound) -> Sums {
        let stretch = |(c, (t, b)): (usize, (&[f64], &[f64]))| {
            let mut sums = Sums::default();
            for (d, x) in self.units(c * BOUND_CHUNK, t, b, bound) {
                sums.add(d, x);
            }
            sums
        };
        let stretches: Vec<Sums> = t.par_chunks(BOUND_CHUNK).zip(b.par_chunks(BOUND_CHUNK)).enumerate().map(stretch).collect();
        stretches.iter().fold(Sums::default(), |mut all, s| {
            all.merge(s);
            all
        })
    }

    /// `(d, x)` = (error, bench) in units of each counted element's bound,
    /// for the elements `t` and `b` hold from index `from` on.
    fn units<'s>(&'s self, from: usize, t: &'s [f64], b: &'s [f64], bound: &'s ElementBound) -> impl Iterator<Item = (f64, f64)> + 's {
        t.iter().zip(b).enumerate().filter(|(_, (x, y))| x.is_finite() && y.is_finite()).filter_map(move |(i, (&x, &y))| {
            let w = bound.at(from + i);
            self.counts(w, y).then(|| ((x - y) / w, y / w))
        })
    }

    /// The view, the screen's decision taken: the exact sums where it is unsure.
    fn finish(&self, t: &[f64], b: &[f64], bound: &ElementBound, screened: Screen) -> Option<String> {
        if screened == Screen::Quiet {
            return None;
        }
        let (limit, eps, dtype, known) = (self.limit, self.eps, bound.dtype, self.known);
        let book = &rulebook::get().systematic;
        // Sized up front: grown by doubling, a large fit's pairs were copied over and over.
        let mut pairs: Vec<(f64, f64)> = Vec::with_capacity(t.len());
        pairs.extend(self.units(0, t, b, bound));
        let den = fsum(pairs.iter().map(|&(_, x)| x * x));
        let quartic = fsum(pairs.iter().map(|&(_, x)| (x * x) * (x * x)));
        // The elements that carry the fit (a few can carry it alone).
        let effective = den * den / quartic;
        if !(den > 0.0 && den.is_finite() && effective >= self.min_elements) {
            return None;
        }
        let rho = fsum(pairs.iter().map(|&(d, x)| d * x)) / den;
        if !(rho.abs() > limit * eps) {
            return None;
        }
        let se = fsum(pairs.iter().map(|&(d, x)| {
            let r = (d - rho * x) * x;
            r * r
        }))
        .sqrt()
            / den;
        if !(rho.abs() > book.z * se) {
            return None;
        }
        Some(format!(
            "systematic error: every element about {} ULPs of {} off (common relative error {} over {} elements, standard error {} ULPs); rounding leaves at most {}{}",
            g(rho / eps),
            dtype.name(),
            g(rho),
            pairs.len(),
            g(se / eps),
            g(limit),
            known.map(|(_, source)| format!(" (the op's kernel: {source})")).unwrap_or_default()
        ))
    }
}

/// A rule (`name`: the api rule, msprobe's thresholds) that is not a
/// pass, rerun with the elements within the rounding bound counted as
/// exact; the better verdict, with a note when the bound changed it.
pub(super) fn rescued(t: &[f64], b: &[f64], bound: &ElementBound, name: &str, rule: impl Fn(&[f64]) -> Outcome) -> Outcome {
    let mut raw = rule(t);
    if raw.status == Status::Pass {
        return raw;
    }
    if let Some(problem) = systematic(t, b, bound) {
        // Every element may be within its bound, the whole tensor is not: no rescue.
        raw.problems.push(problem);
        return raw;
    }
    // The tested values with those within their bound replaced by the bench's, in stretches on
    // rayon's threads: how many, and the worst ratio among them (a count and a maximum, the
    // same in any order).
    let mut exact = vec![0.0f64; t.len()];
    let stretch = |(c, ((out, t), b)): (usize, ((&mut [f64], &[f64]), &[f64]))| {
        let (mut n, mut worst) = (0usize, 0.0f64);
        for (j, ((slot, &x), &y)) in out.iter_mut().zip(t).zip(b).enumerate() {
            let r = bound.ratio(c * BOUND_CHUNK + j, x, y);
            *slot = if x != y && r <= 1.0 && x.is_finite() && y.is_finite() {
                n += 1;
                worst = worst.max(r);
                y
            } else {
                x
            };
        }
        (n, worst)
    };
    let (n, worst) = exact
        .par_chunks_mut(BOUND_CHUNK)
        .zip(t.par_chunks(BOUND_CHUNK))
        .zip(b.par_chunks(BOUND_CHUNK))
        .enumerate()
        .map(stretch)
        .reduce(|| (0, 0.0), |(n, w), (m, v)| (n + m, w.max(v)));
    if n == 0 {
        return raw;
    }
    let mut out = rule(&exact);
    if out.status >= raw.status {
        return raw;
    }
    out.notes.push(format!("{n} elements within the rounding bound counted as exact (worst {} of the bound; {name} alone: {})", g(worst), raw.status));
    out.notes.extend(bound.operands_note());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two_are_exact_down_to_the_smallest_subnormal() {
        assert_eq!(ldexp1(-24), 1.0 / 16777216.0);
        assert_eq!(ldexp1(-1074), f64::from_bits(1));
        assert_eq!(ldexp1(-1023), f64::from_bits(1 << 51));
        assert_eq!(ElementBound::new(&[], 1.0, TDType::F16, TDType::F16).eta, ldexp1(-25));
        assert_eq!(ElementBound::new(&[], 1.0, TDType::F32, TDType::BF16).eta, ldexp1(-150));
        assert_eq!(ElementBound::new(&[], 1.0, TDType::F64, TDType::F64).eta, 0.0);
        assert_eq!(ElementBound::new(&[], 1.0, TDType::BF16, TDType::BF16).u, ldexp1(-8));
    }

    /// float32's hardware conversion is the formula's rounding: ties,
    /// subnormals, the edge of overflow, signs, non-finite values.
    #[test]
    fn float32_rounding_by_conversion_is_the_formulas() {
        let (max, tiny) = (f64::from(f32::MAX), f64::from(f32::from_bits(1)));
        let half_ulp_max = ldexp1(127 - 24);
        let mut values =
            vec![0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, max, max + half_ulp_max, max + half_ulp_max * 0.999, tiny, tiny / 2.0, tiny * 1.5, tiny * 0.7];
        values.extend([1.0 + ldexp1(-24), 1.0 + 3.0 * ldexp1(-24), 1.0 + ldexp1(-24) + ldexp1(-40)]);
        values.extend((0..20000).map(|i| (i as f64 * 0.7311).sin() * ldexp1((i % 300) - 150)));
        let values: Vec<f64> = values.iter().flat_map(|&v| [v, -v]).collect();
        let (fast, formula) = (round_to(&values, TDType::F32), round_to_format(&values, 23, -126));
        for ((v, a), b) in values.iter().zip(&fast).zip(&formula) {
            assert_eq!(a.to_bits(), b.to_bits(), "{v:e}: {a:e} vs {b:e}");
        }
        assert!(round_to(&[f64::NAN], TDType::F32)[0].is_nan());
    }

    #[test]
    fn the_bound_is_k_roundings_of_the_magnitude_plus_half_an_output_ulp() {
        let m = [1.5, 0.0, 3.0e-6];
        // float32: 3·2^-24·1.5 + 2^-24 (half the ulp of 1.5); at 0, half float32's smallest subnormal plus 3·eta.
        let b = ElementBound::new(&m, 3.0, TDType::F32, TDType::F32);
        assert_eq!(b.at(0), 3.0 * ldexp1(-24) * 1.5 + 3.0 * ldexp1(-150) + ldexp1(-24));
        assert_eq!(b.at(1), 3.0 * ldexp1(-150) + ldexp1(-150));
        // bfloat16 computed in bfloat16: u = 2^-8, half an ulp of bfloat16 at 3e-6 (2^-19 binade: 2^-27).
        let b = ElementBound::new(&m, 4.0, TDType::BF16, TDType::BF16);
        assert_eq!(b.at(2), 4.0 * (ldexp1(-8) * 3.0e-6 + ldexp1(-134)) + ldexp1(-27));
        // The ratio is 0 where a side is not finite (the NaN/Inf check judges those).
        assert_eq!(b.ratio(0, f64::NAN, 1.5), 0.0);
        // A NaN magnitude bounds nothing but half an ulp of zero.
        let nan = [f64::NAN];
        let b = ElementBound::new(&nan, 4.0, TDType::F32, TDType::F32);
        assert_eq!(b.at(0), 4.0 * ldexp1(-150) + ldexp1(-150));
    }

    #[test]
    fn the_api_rule_is_rescued_only_when_the_bound_changes_its_verdict() {
        let (t, b, m) = ([1.0 + 4.0e-6, 2.0], [1.0, 2.0], [1.0e3, 2.0]);
        let bound = ElementBound::new(&m, 3.0, TDType::F32, TDType::F32);
        let eps = f64::from(f32::EPSILON);
        let out = rescued(&t, &b, &bound, "the api rule", |t| absolute(t, &b, Class::Fp32, eps));
        assert_eq!(out.status, Status::Pass);
        assert_eq!(out.notes, ["1 elements within the rounding bound counted as exact (worst 0.0191084 of the bound; the api rule alone: error)"]);
        // Beyond the bound: the rule's own verdict and message.
        let tight = [1.0, 2.0];
        let bound = ElementBound::new(&tight, 3.0, TDType::F32, TDType::F32);
        let out = rescued(&t, &b, &bound, "the api rule", |t| absolute(t, &b, Class::Fp32, eps));
        assert_eq!(out.status, Status::Error);
        assert!(out.notes.is_empty());
    }

    /// The pass in stretches on several threads finds the counts, the
    /// first of two equal worst ratios and the systematic view's verdict
    /// that one pass over the elements in order finds; the rescue counts
    /// the elements within their bound and their worst ratio as one pass does.
    #[test]
    fn the_parallel_pass_is_the_one_thread_pass() {
        let n = 3 * BOUND_CHUNK + 5;
        let (first, second) = (BOUND_CHUNK + 17, 2 * BOUND_CHUNK + 3);
        let mut b: Vec<f64> = (0..n).map(|i| 1.0 + ((i as f64) * 0.61).sin() * 0.4).collect();
        // The two worst elements alike: their ratios are equal bit for bit.
        b[second] = b[first];
        let m: Vec<f64> = b.iter().map(|x| x.abs()).collect();
        let bound = ElementBound::new(&m, 2.0, TDType::F32, TDType::F32);
        for common in [0.0, 8.0 * f64::from(f32::EPSILON)] {
            let mut t: Vec<f64> = b.iter().map(|&x| f64::from((x * (1.0 + common)) as f32)).collect();
            // Two elements 50 bounds off, in two stretches, and a few 2 bounds off.
            for i in (7..n).step_by(BOUND_CHUNK / 3) {
                t[i] = b[i] - 2.0 * bound.at(i);
            }
            for i in [first, second] {
                t[i] = b[i] + 50.0 * bound.at(i);
            }
            let (mut beyond, mut worst, mut at) = (0, 0.0f64, 0);
            for (i, (&x, &y)) in t.iter().zip(&b).enumerate() {
                let r = bound.ratio(i, x, y);
                beyond += usize::from(r > 1.0);
                if r > worst {
                    (worst, at) = (r, i);
                }
            }
            assert_eq!((at, bound.ratio(first, t[first], b[first])), (first, bound.ratio(second, t[second], b[second])));
            let out = rounding_bound(&t, &b, &bound, &[n]);
            assert_eq!(out.metrics, format!("bound_ratio={}; beyond_bound={}; k=2; u={}", g(worst), g(ratio(beyond, n)), g(bound.u)));
            assert!(out.problems[0].contains(&format!("{beyond} of {n} elements beyond")), "{}", out.problems[0]);
            assert!(out.problems[0].contains(&format!("at element [{first}]")), "{}", out.problems[0]);
            let systematic = systematic(&t, &b, &bound);
            assert_eq!(systematic.is_some(), common > 0.0);
            assert_eq!(out.problems.get(1), systematic.as_ref());
            if common == 0.0 {
                // The rescue's count and worst ratio of the elements it counts as exact.
                let within: Vec<f64> = t.iter().zip(&b).enumerate().map(|(i, (&x, &y))| bound.ratio(i, x, y)).filter(|&r| r <= 1.0 && r > 0.0).collect();
                let worst = within.iter().fold(0.0f64, |w, &r| w.max(r));
                let few_differ = |x: &[f64]| {
                    let differ = x.iter().zip(&b).filter(|(p, q)| p != q).count();
                    Outcome::from_problems(if differ > 20 { vec![format!("{differ} differ")] } else { vec![] }, String::new())
                };
                let out = rescued(&t, &b, &bound, "the rule", few_differ);
                assert_eq!(out.status, Status::Pass);
                let note =
                    format!("{} elements within the rounding bound counted as exact (worst {} of the bound; the rule alone: error)", within.len(), g(worst));
                assert_eq!(out.notes, [note]);
            }
        }
    }
}
