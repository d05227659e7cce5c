//! How msprobe records some calls differently from what the op computes,
//! recognised from the data so that the verdict does not blame the device
//! for the way the dump was recorded (README, "Recording quirks"). Which
//! ops can show which quirk is the op table's ([`crate::ops::Fact`]); how
//! each is recognised is here:
//! - a dropout whose recorded output equals its input: msprobe dumped it as
//!   an identity;
//! - a dropout's mask is visible only where the input is non-zero: the
//!   recorded gradient gives it elsewhere;
//! - `cross_entropy`'s and `l1_loss`'s recorded input gradients are, in
//!   PyTorch dumps of msprobe 8.3.2, the gradients w.r.t. their inner
//!   nodes' outputs (`log_softmax`, `abs`);
//! - a cast to the input's own dtype returns the input itself: its recorded
//!   gradients are those of the op that produced the input;
//! - an op that ran under autocast records its inputs before the cast
//!   (float32) and its output after (bfloat16): replayed on the cast inputs;
//! - a tensor dumped in another memory layout (a non-contiguous view's raw
//!   memory, seen in MindSpore dumps) holds the right values in another
//!   order: a data-movement op then looks wrong (a `warning`, since a device
//!   layout bug looks the same).

use crate::dtype::TDType;
use crate::ops::Op;

/// Message of a dropout replayed as the identity msprobe recorded.
pub(super) const DROPOUT_IDENTITY: &str =
    "msprobe quirk: the recorded output equals the input (msprobe dumped this dropout as an identity); replayed as an identity";

/// Why the recorded gradients of a cast that changed nothing are not its own.
pub(super) const NOOP_CAST: &str =
    "msprobe quirk: a cast to the input's own dtype returns the input itself, so the dump's gradients are those of the op that produced it";

/// Whether `op` is a cast ([`Op::noop_cast`]) whose recorded output has
/// its input's dtype: a no-op, with no autograd node of its own.
pub(super) fn is_noop_cast(op: &Op, input: Option<TDType>, output: Option<TDType>) -> bool {
    op.noop_cast() && input.is_some() && input == output
}

/// Message of a data-movement row whose two sides hold the same values in
/// another order. The data cannot tell a dump's layout from a device's
/// layout bug, so such a row is at least a `warning`.
pub(super) const OTHER_LAYOUT: &str =
    "same values in another order: a tensor dumped in another memory layout (msprobe quirk, seen with non-contiguous MindSpore tensors) or a device layout bug; compared as sorted values";

/// The dtype an autocast region ran `op` in, when the data says it did:
/// an autocast op ([`Op::autocast`]) whose recorded output is float16 or
/// bfloat16 while some floating input was dumped wider.
pub(super) fn autocast_dtype(op: &Op, output: Option<TDType>, inputs: &[TDType]) -> Option<TDType> {
    let out = output.filter(|d| matches!(d, TDType::F16 | TDType::BF16))?;
    (op.autocast() && inputs.iter().any(|d| d.is_float() && d.bits() > out.bits())).then_some(out)
}

/// The values in IEEE total order (NaN last, `-0.0` before `0.0`): how
/// two layouts of the same values are compared.
pub(super) fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Whether `tested` and `bench` hold exactly the same values (NaN included)
/// in a different order.
pub(super) fn same_values_other_order(tested: &[f64], bench: &[f64]) -> bool {
    tested.len() == bench.len()
        && tested != bench
        && sorted(tested).iter().zip(sorted(bench)).all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()))
}

/// Whether a dropout that drops with probability `p` (`None`: it does not
/// drop) was recorded as an identity: every recorded value equals its input,
/// and some input is non-zero (a real dropout would have scaled it).
pub(super) fn dropout_is_identity(input: &[f64], recorded: &[f64], p: Option<f64>) -> bool {
    p.is_some() && input.iter().any(|&x| x != 0.0) && input.iter().zip(recorded).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

/// Dropout's keep mask from a recorded output: kept where the output is
/// non-zero; where the input is zero, kept where the recorded input
/// gradient is non-zero (or kept, when no gradient was recorded). The note
/// says when the input had zeros.
pub(super) fn dropout_mask(input: &[f64], recorded: &[f64], grad: Option<&[f64]>) -> (Vec<bool>, Option<String>) {
    let grad = grad.filter(|g| g.len() == input.len());
    let mut unknown = 0;
    let mask = input
        .iter()
        .zip(recorded)
        .enumerate()
        .map(|(i, (&x, &y))| match (x == 0.0, grad) {
            (false, _) => y != 0.0,
            (true, Some(g)) => g[i] != 0.0,
            (true, None) => {
                unknown += 1;
                true
            }
        })
        .collect();
    let zeros = input.iter().filter(|&&x| x == 0.0).count();
    let note = match (zeros, unknown) {
        (0, _) => None,
        (z, 0) => Some(format!("dropout mask taken from the recorded output, and from the recorded gradient at the {z} zero inputs")),
        (_, u) => Some(format!("dropout mask taken from the recorded output; unknown at {u} zero inputs with no recorded gradient (taken as kept)")),
    };
    (mask, note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::lookup;
    use crate::spec::Framework;

    #[test]
    fn identity_dropout_is_an_exact_copy_of_a_non_zero_input() {
        assert!(dropout_is_identity(&[1.0, 0.0, -2.0], &[1.0, 0.0, -2.0], Some(0.1)));
        assert!(!dropout_is_identity(&[1.0, 0.0, -2.0], &[1.0, 0.0, -2.0], None));
        assert!(!dropout_is_identity(&[1.0, 2.0], &[1.25, 0.0], Some(0.2)));
        assert!(!dropout_is_identity(&[0.0, 0.0], &[0.0, 0.0], Some(0.2)));
    }

    #[test]
    fn autocast_is_a_lower_output_than_input_on_an_autocast_op() {
        let op = |name| lookup(Framework::PyTorch, name).unwrap();
        assert_eq!(autocast_dtype(op("Functional.linear"), Some(TDType::BF16), &[TDType::F32, TDType::F32]), Some(TDType::BF16));
        assert_eq!(autocast_dtype(op("Tensor.__matmul__"), Some(TDType::F16), &[TDType::F16, TDType::F32]), Some(TDType::F16));
        assert_eq!(autocast_dtype(op("Functional.linear"), Some(TDType::F32), &[TDType::F32]), None);
        assert_eq!(autocast_dtype(op("Functional.linear"), Some(TDType::BF16), &[TDType::BF16, TDType::I64]), None);
        assert_eq!(autocast_dtype(op("Tensor.to"), Some(TDType::BF16), &[TDType::F32]), None);
    }

    #[test]
    fn a_noop_cast_has_its_inputs_dtype() {
        let op = |name| lookup(Framework::PyTorch, name).unwrap();
        assert!(is_noop_cast(op("Tensor.to"), Some(TDType::F32), Some(TDType::F32)));
        assert!(is_noop_cast(op("Tensor.type_as"), Some(TDType::BF16), Some(TDType::BF16)));
        assert!(!is_noop_cast(op("Tensor.to"), Some(TDType::F32), Some(TDType::I64)));
        assert!(!is_noop_cast(op("Tensor.add"), Some(TDType::F32), Some(TDType::F32)));
        assert!(!is_noop_cast(op("Tensor.float"), None, Some(TDType::F32)));
    }

    #[test]
    fn other_layouts_are_permutations_of_the_same_values() {
        assert!(same_values_other_order(&[1.0, 2.0, 3.0], &[3.0, 1.0, 2.0]));
        assert!(!same_values_other_order(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]));
        assert!(!same_values_other_order(&[1.0, 2.0, 3.0], &[3.0, 1.0, 2.5]));
        assert!(!same_values_other_order(&[0.0, 1.0], &[1.0, -0.0]));
    }

    #[test]
    fn mask_at_zero_inputs_comes_from_the_gradient() {
        let (mask, note) = dropout_mask(&[1.0, 0.0, 0.0, 3.0], &[1.25, 0.0, 0.0, 0.0], Some(&[1.25, 0.0, 1.25, 0.0]));
        assert_eq!(mask, [true, false, true, false]);
        assert_eq!(note.unwrap(), "dropout mask taken from the recorded output, and from the recorded gradient at the 2 zero inputs");
        let (mask, note) = dropout_mask(&[1.0, 0.0], &[0.0, 0.0], None);
        assert_eq!(mask, [false, true]);
        assert!(note.unwrap().contains("unknown at 1 zero inputs"));
        assert_eq!(dropout_mask(&[1.0, 2.0], &[0.0, 2.5], None), (vec![false, true], None));
    }
}
