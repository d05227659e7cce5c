//! The first-order effect of a call's own error on the loss: for a forward
//! output whose device value `y` the dump recorded, and whose gradient
//! `dL/dy` its backward entry recorded, `<dL/dy, y - round(y_bench)>`, the
//! bench being the op in float64 on the call's own recorded inputs, rounded
//! to the output's dtype (what a correctly rounding kernel writes: the
//! output's own final rounding is no error of the call, and exact patching,
//! which puts the float64 value back in the output's dtype, does not see it). An error that
//! vanishes downstream has a small effect however bad its metrics; an
//! inherited error (wrong inputs, right op) has none, since the bench runs
//! on the same inputs. The rulebook's `loss_effect` says when an effect is
//! rounding noise and when first order is not enough.

use rayon::prelude::*;

use crate::dtype::TDType;
use crate::pyfmt::format_g6;
use crate::rulebook;

/// Elements one thread sums at a time: the sums are added stretch by
/// stretch in order, each stretch's in [`LANES`] interleaved partial sums,
/// so they are the same whatever the thread count (an estimate: its last
/// bits follow this order, not the elements').
const STRETCH: usize = 1 << 15;
/// Partial sums per stretch: independent additions the CPU overlaps.
const LANES: usize = 4;

/// A row's Effect Note: the call has no backward entry.
pub const NO_BACKWARD: &str = "no loss effect: the dump has no backward entry for this call";
/// A row's Effect Note: the tested side is the emulated device.
pub const NOT_RECORDED: &str = "no loss effect: the device's output is not in the dump (an emulated device's error is not the device's)";
/// A row's Effect Note: the backward entry lacks this output's gradient.
pub const NO_GRADIENT: &str = "no loss effect: the backward entry has no gradient of this output";

/// The effect of one forward output's own error.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Effect {
    /// `<dL/dy, y - y_bench>`; `None` when it cannot be computed (the note says why).
    pub value: Option<f64>,
    /// What rounding the exact output once can move the loss by.
    pub noise: Option<f64>,
    /// Why there is none, why it is unreliable, or that it is noise; empty otherwise.
    pub note: String,
}

impl Effect {
    /// No effect, for the reason `note`.
    pub fn none(note: &str) -> Effect {
        Effect { value: None, noise: None, note: note.into() }
    }
}

/// The effect of the error `tested - round(bench)` of an output of op `op`
/// (its name after the prefix) in `dtype`, whose loss gradient is `dy`.
pub(super) fn of(op: &str, dtype: TDType, tested: &[f64], bench: &[f64], dy: &[f64]) -> Effect {
    let rules = &rulebook::get().loss_effect;
    if dy.len() != tested.len() || bench.len() != tested.len() {
        return Effect::none(&format!("no loss effect: the gradient has {} elements, the output {}", dy.len(), tested.len()));
    }
    // float32 (most rows) rounds element by element as `round_to` does, without a rounded copy.
    let rounded = if dtype == TDType::F32 { vec![] } else { crate::standard::round_to(bench, dtype) };
    let stretch = |(c, ((t, b), g)): (usize, ((&[f64], &[f64]), &[f64]))| {
        let first = c * STRETCH;
        let round = |i: usize, b: f64| if dtype == TDType::F32 { f64::from(b as f32) } else { rounded[first + i] };
        let mut sums = [[0.0f64; LANES]; 4];
        for (i, ((&t, &b), &g)) in t.iter().zip(b).zip(g).enumerate() {
            let (k, r) = (i % LANES, round(i, b));
            // Equal values (a -inf fill on both sides) have no error; a zero
            // gradient reads nothing of its element (it adds +0: nothing).
            let d = if t == r { 0.0 } else { t - r };
            let weighted = g != 0.0;
            sums[0][k] += if weighted { g * d } else { 0.0 };
            sums[1][k] += if weighted { (g * b) * (g * b) } else { 0.0 };
            let finite = b.is_finite();
            sums[2][k] += if finite { d * d } else { 0.0 };
            sums[3][k] += if finite { b * b } else { 0.0 };
        }
        sums.map(|lanes| lanes.iter().sum::<f64>())
    };
    let stretches: Vec<[f64; 4]> = tested.par_chunks(STRETCH).zip(bench.par_chunks(STRETCH)).zip(dy.par_chunks(STRETCH)).enumerate().map(stretch).collect();
    let [effect, scale, ee, yy] = stretches.iter().fold([0.0f64; 4], |acc, s| [acc[0] + s[0], acc[1] + s[1], acc[2] + s[2], acc[3] + s[3]]);
    if !(effect.is_finite() && scale.is_finite() && ee.is_finite() && yy.is_finite()) {
        return Effect::none("no loss effect: the output, its bench value or its gradient is not finite");
    }
    let u = dtype.float_format().map_or(0.0, |(mantissa, _)| 2f64.powi(-(mantissa + 1)));
    let noise = rules.noise_roundoffs * u * scale.sqrt();
    let relative = if yy > 0.0 {
        (ee / yy).sqrt()
    } else if ee > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    let note = if relative > rules.first_order_relative_error {
        format!("first-order estimate unreliable: the error is {} of the output's norm", format_g6(relative))
    } else if ee > 0.0 && rules.saturates(op) {
        format!("first-order estimate unreliable: {op} saturates (an error across its steps or boundaries moves the loss by more than first order)")
    } else if effect.abs() <= noise {
        format!("within the output's rounding noise (|effect| <= {})", format_g6(noise))
    } else {
        String::new()
    };
    Effect { value: Some(effect), noise: Some(noise), note }
}

/// The recorded loss of a loss op's scalar output `tested` (the rulebook's
/// `loss_effect.losses`) with its recorded gradient (`1` when none).
pub(super) fn loss(op: &str, tested: &[f64], dy: Option<&[f64]>) -> Option<(f64, f64)> {
    if !rulebook::get().loss_effect.is_loss(op) || tested.len() != 1 || !tested[0].is_finite() {
        return None;
    }
    let grad = dy.and_then(|g| g.first().copied()).filter(|g| g.is_finite() && *g != 0.0).unwrap_or(1.0);
    Some((tested[0], grad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effect_is_the_gradient_weighted_error() {
        let e = of("matmul", TDType::F32, &[1.5, 2.0], &[1.0, 2.0], &[2.0, 7.0]);
        assert_eq!(e.value, Some(1.0));
        assert_eq!(e.noise, Some(5.0 * 2f64.powi(-24) * (4.0f64 + 196.0).sqrt()));
        assert_eq!(e.note, "first-order estimate unreliable: the error is 0.223607 of the output's norm");
    }

    #[test]
    fn rounding_sized_effects_are_noise_and_saturating_ops_are_said() {
        // bfloat16 holds 1 and 1 + 2^-7 (one ULP); 1 + 2^-10 rounds to 1.
        let ulp = 2f64.powi(-7);
        let e = of("add", TDType::BF16, &[1.0 + ulp], &[1.0], &[1.0]);
        assert_eq!((e.value, e.note.as_str()), (Some(ulp), "within the output's rounding noise (|effect| <= 0.0195312)"));
        let e = of("add", TDType::BF16, &[1.0], &[1.0 + 2f64.powi(-10)], &[1.0]);
        assert_eq!(e.value, Some(0.0), "the correctly rounded output has no error");
        let e = of("relu", TDType::BF16, &[1.0 + 4.0 * ulp], &[1.0], &[1.0]);
        assert!(e.note.starts_with("first-order estimate unreliable: relu saturates"), "{}", e.note);
        assert_eq!(of("relu", TDType::BF16, &[1.0], &[1.0], &[1.0]).note, "within the output's rounding noise (|effect| <= 0.0195312)");
    }

    #[test]
    fn mismatched_or_non_finite_values_have_no_effect() {
        assert_eq!(of("add", TDType::F32, &[1.0], &[1.0], &[1.0, 2.0]).value, None);
        let e = of("add", TDType::F32, &[f64::NAN], &[1.0], &[1.0]);
        assert_eq!((e.value, e.note.as_str()), (None, "no loss effect: the output, its bench value or its gradient is not finite"));
        // A fill of -inf on both sides, where the loss does not read it, is no error.
        let e = of("masked_fill", TDType::F32, &[f64::NEG_INFINITY, 2.0], &[f64::NEG_INFINITY, 2.0], &[0.0, 1.0]);
        assert_eq!(e.value, Some(0.0));
    }

    #[test]
    fn only_scalar_loss_ops_record_a_loss() {
        assert_eq!(loss("cross_entropy", &[2.5], Some(&[1024.0])), Some((2.5, 1024.0)));
        assert_eq!(loss("cross_entropy", &[2.5], None), Some((2.5, 1.0)));
        assert_eq!(loss("cross_entropy", &[2.5, 1.0], None), None);
        assert_eq!(loss("matmul", &[2.5], None), None);
    }

    #[test]
    fn the_sums_do_not_depend_on_the_thread_count() {
        let n = 3 * STRETCH + 17;
        let bench: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin() * 10f64.powi((i % 9) as i32 - 4)).collect();
        let tested: Vec<f64> = bench.iter().enumerate().map(|(i, b)| f64::from(*b as f32) + if i % 5 == 0 { 1e-6 } else { 0.0 }).collect();
        let dy: Vec<f64> = (0..n).map(|i| if i % 7 == 0 { 0.0 } else { (i as f64 * 0.11).cos() }).collect();
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| of("add", TDType::F32, &tested, &bench, &dy))
        };
        let one = on(1);
        assert_eq!(one.value.map(f64::to_bits), on(3).value.map(f64::to_bits));
        assert_eq!(one.noise.map(f64::to_bits), on(3).noise.map(f64::to_bits));
        // The element-order sum, to the last bits.
        let exact: f64 = (0..n).filter(|&i| dy[i] != 0.0).map(|i| dy[i] * (tested[i] - f64::from(bench[i] as f32))).sum();
        assert!((one.value.unwrap() - exact).abs() <= 1e-12 * exact.abs(), "{one:?} against {exact}");
    }
}
