//! How msprobe records input gradients: the one home of the layouts a
//! dump's list of input gradients can have, used by the native replay and
//! by the script renderer (which marks the inputs whose gradient is `null`).
//!
//! PyTorch dumps list the floating tensors marked `requires_grad`
//! (batch_norm's running statistics have none); older dumps and unmarked
//! ones, every floating tensor (none for layer_norm's normalized_shape or
//! cross_entropy's target); MindSpore dumps, every tensor (a `null` slot for
//! an integer target).

/// What the layouts need to know of one positional input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GradInput {
    /// The input is a tensor.
    pub tensor: bool,
    /// The input is a floating-point tensor.
    pub float: bool,
    /// The input is a tensor the dump marks `requires_grad` (the first
    /// layout counts the floating ones).
    pub marked: bool,
}

/// Where each positional input's gradient sits in the dump's list of
/// `recorded` input gradients (`None` for inputs without one), for the first
/// layout whose count matches `recorded` and is above zero: the marked
/// floating tensors, then every floating tensor, then every tensor. `None`
/// when no layout fits.
pub fn gradient_slots(inputs: &[GradInput], recorded: usize) -> Option<Vec<Option<usize>>> {
    let layouts: [fn(&GradInput) -> bool; 3] = [|i| i.float && i.marked, |i| i.float, |i| i.tensor];
    layouts.iter().find_map(|keep| {
        let mut next = 0;
        let slots: Vec<Option<usize>> = inputs
            .iter()
            .map(|input| {
                keep(input).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        (next == recorded && next > 0).then_some(slots)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKED: GradInput = GradInput { tensor: true, float: true, marked: true };
    const FLOAT: GradInput = GradInput { tensor: true, float: true, marked: false };
    const INT: GradInput = GradInput { tensor: true, float: false, marked: false };
    const SCALAR: GradInput = GradInput { tensor: false, float: false, marked: false };

    #[test]
    fn marked_floats_come_first() {
        // batch_norm in a PyTorch dump: input, running statistics (unmarked), weight, bias.
        let inputs = [MARKED, FLOAT, FLOAT, MARKED, MARKED];
        assert_eq!(gradient_slots(&inputs, 3), Some(vec![Some(0), None, None, Some(1), Some(2)]));
        // Every float recorded: the second layout.
        assert_eq!(gradient_slots(&inputs, 5), Some((0..5).map(Some).collect()));
    }

    #[test]
    fn floats_then_every_tensor() {
        // layer_norm(x, normalized_shape, weight, bias): no gradient for the shape.
        assert_eq!(gradient_slots(&[FLOAT, SCALAR, FLOAT, FLOAT], 3), Some(vec![Some(0), None, Some(1), Some(2)]));
        // cross_entropy in a MindSpore dump: a slot for the integer target too.
        assert_eq!(gradient_slots(&[FLOAT, INT, FLOAT], 3), Some(vec![Some(0), Some(1), Some(2)]));
        // Floats win where both fit.
        assert_eq!(gradient_slots(&[FLOAT, INT], 1), Some(vec![Some(0), None]));
    }

    #[test]
    fn no_layout_fits() {
        assert_eq!(gradient_slots(&[FLOAT, INT], 3), None);
        assert_eq!(gradient_slots(&[SCALAR, INT], 0), None);
        assert_eq!(gradient_slots(&[], 0), None);
    }
}
