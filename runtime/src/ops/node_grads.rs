//! The autograd nodes whose input gradients msprobe's PyTorch dumps list
//! for some ops ([`super::Fact::NodeGradients`]): the `grad_fn` torch 2.x
//! builds for the call's first output (`python zoo/make/pytorch_layouts/
//! layouts.py` prints them). Ops without this fact are recorded in input
//! order (mm, bmm, addmm, baddbmm: their nodes take their inputs as given).

use crate::grad_layout::{Inputs, NodeLayout, Slot, Transform};

const SAME: Transform = Transform::Same;

fn layout(node: &'static str, slots: Vec<Slot>) -> NodeLayout {
    NodeLayout { node, slots }
}

/// `linear(input, weight, bias)`: a 2-D input is `addmm(bias, input,
/// weight.t())` (`mm` without a bias), whose node takes the transposed
/// weight; any other input folds into that product and a view reshapes it
/// back (the one incoming gradient), or, for an input the fold cannot view
/// (not contiguous), adds the bias after it (AddBackward0: the incoming
/// gradient and the bias's).
pub(super) fn linear(i: &Inputs) -> Vec<NodeLayout> {
    let (weight, bias) = (Slot::Input("weight", Transform::Transposed), i.shape("bias").is_some());
    match i.rank("input") {
        Some(2) if bias => vec![layout("AddmmBackward0", vec![Slot::Input("bias", SAME), Slot::Input("input", SAME), weight])],
        Some(2) => vec![layout("MmBackward0", vec![Slot::Input("input", SAME), weight])],
        _ if bias => vec![layout("UnsafeViewBackward0", vec![Slot::Incoming]), layout("AddBackward0", vec![Slot::Incoming, Slot::Input("bias", SAME)])],
        _ => vec![layout("a view of the product (UnsafeViewBackward0, SqueezeBackward4)", vec![Slot::Incoming])],
    }
}

/// `matmul(input, other)`: 2-D @ 2-D is `mm`, 2-D @ 1-D `mv`, 1-D @ 1-D
/// `dot`, each taking the inputs as given; every other rank pair folds or
/// broadcasts into `mm`/`bmm`/`mv` and ends in a view of the product (or a
/// copy of its transpose): the one incoming gradient.
pub(super) fn matmul(i: &Inputs) -> Vec<NodeLayout> {
    matmul_of_ranks(i.rank("input"), i.rank("other"))
}

/// matmul's layouts for complex operands held as float pairs (each rank one
/// more than the complex tensor's): a complex product has the same nodes.
pub(super) fn complex_matmul(i: &Inputs) -> Vec<NodeLayout> {
    let complex_rank = |name| i.rank(name).and_then(|r: usize| r.checked_sub(1));
    matmul_of_ranks(complex_rank("input"), complex_rank("other"))
}

fn matmul_of_ranks(input: Option<usize>, other: Option<usize>) -> Vec<NodeLayout> {
    let both = vec![Slot::Input("input", SAME), Slot::Input("other", SAME)];
    match (input, other) {
        (Some(2), Some(2)) => vec![layout("MmBackward0", both)],
        (Some(2), Some(1)) => vec![layout("MvBackward0", both)],
        (Some(1), Some(1)) => vec![layout("DotBackward0", both)],
        _ => vec![layout("a view of the product (UnsafeViewBackward0, SqueezeBackward4, CloneBackward0)", vec![Slot::Incoming])],
    }
}

/// `scaled_dot_product_attention(query, key, value)`: the fused kernels'
/// nodes take query, key and value (ScaledDotProductFlashAttentionForCpuBackward0
/// for 4-D inputs on the CPU); 3-D inputs are unsqueezed into them and
/// squeezed back, and the math fallback ends in a view of a product: the one
/// incoming gradient.
pub(super) fn attention(_: &Inputs) -> Vec<NodeLayout> {
    vec![
        layout("the fused attention kernel's node", vec![Slot::Input("query", SAME), Slot::Input("key", SAME), Slot::Input("value", SAME)]),
        layout("a view of the attention (SqueezeBackward1, UnsafeViewBackward0)", vec![Slot::Incoming]),
    ]
}

/// `cross_entropy(input, target)`: class indices end in `nll_loss`, whose
/// node takes the inner `log_softmax` output (shaped like the input; the
/// inner-gradient quirk judges it, [`super::Fact::InnerGradient`]); label
/// smoothing ends in the sum of its two terms (AddBackward0, two incoming
/// gradients), class probabilities in the mean's division (DivBackward1,
/// one).
pub(super) fn cross_entropy(_: &Inputs) -> Vec<NodeLayout> {
    vec![
        layout("NllLossBackward0", vec![Slot::Input("input", SAME)]),
        layout("AddBackward0 (label smoothing's two terms)", vec![Slot::Incoming, Slot::Incoming]),
        layout("DivBackward1 (the mean over class probabilities)", vec![Slot::Incoming]),
    ]
}

/// `conv*d(input, weight, bias)` and `conv_transpose*d`: one
/// `ConvolutionBackward0` node taking input, weight and bias as given, its
/// bias slot `null` when the call has none (a ResNet's convolutions), which
/// the input-order layouts cannot place (they count tensors, and `None` is
/// none).
pub(super) fn convolution(_: &Inputs) -> Vec<NodeLayout> {
    vec![layout("ConvolutionBackward0", vec![Slot::Input("input", SAME), Slot::Input("weight", SAME), Slot::Input("bias", SAME)])]
}

#[cfg(test)]
mod tests {
    use crate::grad_layout::{recorded_places, GradInput, Place, Transform};
    use crate::ops::lookup;
    use crate::spec::Framework;

    fn input<'a>(param: &'static str, shape: &'a [usize]) -> GradInput<'a> {
        GradInput { tensor: true, float: true, marked: true, param: Some(param), keyword: false, shape: Some(shape) }
    }

    fn places(api: &str, inputs: &[GradInput], recorded: &[Option<&[usize]>], incoming: usize) -> Option<Vec<Place>> {
        let node = lookup(Framework::PyTorch, api).unwrap().node_gradients(Framework::PyTorch);
        assert!(node.is_some(), "{api}");
        recorded_places(inputs, recorded, Some(incoming), node)
    }

    #[test]
    fn the_facts_are_pytorchs_only() {
        for (fw, api) in [
            (Framework::MindSpore, "MintFunctional.linear"),
            (Framework::MindSpore, "Functional.dense"),
            (Framework::MindTorch, "Functional.linear"),
            (Framework::MindSpore, "Mint.matmul"),
        ] {
            assert!(lookup(fw, api).unwrap().node_gradients(fw).is_none(), "{api}");
        }
        for api in ["Torch.mm", "Torch.addmm", "Torch.bmm", "Tensor.split"] {
            assert!(lookup(Framework::PyTorch, api).unwrap().node_gradients(Framework::PyTorch).is_none(), "{api}");
        }
    }

    #[test]
    fn linear_and_matmul_as_the_real_dumps_record_them() {
        // tests/fixtures/layouts: Functional.linear.0 (2-D, square weight, bias), .4 (3-D, bias), Torch.matmul.0 / .2.
        let (x, w, b) = ([3usize, 4], [4usize, 4], [4usize]);
        let inputs = [input("input", &x), input("weight", &w), input("bias", &b)];
        let p = places("Functional.linear", &inputs, &[Some(&[4]), Some(&[3, 4]), Some(&[4, 4])], 12).unwrap();
        assert_eq!(p, [Place::Recorded(1, Transform::Same), Place::Recorded(2, Transform::Transposed), Place::Recorded(0, Transform::Same)]);
        let (x3, w5, b5) = ([2usize, 3, 4], [5usize, 4], [5usize]);
        let inputs = [input("input", &x3), input("weight", &w5), input("bias", &b5)];
        let p = places("Functional.linear", &inputs, &[Some(&[6, 5])], 30).unwrap();
        assert!(matches!(&p[0], Place::Elsewhere(why) if why.contains("UnsafeViewBackward0")), "{p:?}");
        // A 3-D input the fold cannot view: the bias's gradient is still there.
        let p = places("Functional.linear", &inputs, &[Some(&[2, 3, 5]), Some(&[5])], 30).unwrap();
        assert!(matches!(&p[0], Place::Elsewhere(why) if why.contains("AddBackward0")) && p[2] == Place::Recorded(1, Transform::Same), "{p:?}");
        let (a, o) = ([3usize, 4], [4usize, 4]);
        let p = places("Torch.matmul", &[input("input", &a), input("other", &o)], &[Some(&[3, 4]), Some(&[4, 4])], 12).unwrap();
        assert_eq!(p, [Place::Recorded(0, Transform::Same), Place::Recorded(1, Transform::Same)]);
        let (a4, o3) = ([2usize, 2, 3, 4], [2usize, 4, 5]);
        let p = places("Tensor.__matmul__", &[input("input", &a4), input("other", &o3)], &[Some(&[4, 3, 5])], 60).unwrap();
        assert!(matches!(&p[1], Place::Elsewhere(_)));
    }

    #[test]
    fn attention_and_cross_entropy_by_their_data() {
        let q = [1usize, 2, 4, 8];
        let qkv = [input("query", &q), input("key", &q), input("value", &q)];
        let p = places("Functional.scaled_dot_product_attention", &qkv, &[Some(&q), Some(&q), Some(&q)], 64).unwrap();
        assert_eq!(p[2], Place::Recorded(2, Transform::Same));
        assert!(matches!(&places("Functional.scaled_dot_product_attention", &qkv, &[Some(&[2, 4, 8])], 64).unwrap()[0], Place::Elsewhere(_)));
        let (x, t) = ([2usize, 10], [2usize]);
        let inputs = [input("input", &x), GradInput { float: false, marked: false, ..input("target", &t) }];
        assert_eq!(places("Functional.cross_entropy", &inputs, &[Some(&[2, 10])], 1).unwrap()[0], Place::Recorded(0, Transform::Same));
        let smoothed = places("Functional.cross_entropy", &inputs, &[Some(&[]), Some(&[])], 1).unwrap();
        assert!(matches!(&smoothed[0], Place::Elsewhere(why) if why.contains("label smoothing")), "{smoothed:?}");
    }

    #[test]
    fn convolutions_list_a_null_for_a_missing_bias() {
        // resnet50_tensor (msprobe 26.2.0): Functional.conv2d.4, bias None, recorded [input, weight, null].
        let (x, w) = ([8usize, 64, 56, 56], [256usize, 64, 1, 1]);
        let none = GradInput { tensor: false, float: false, marked: false, param: Some("bias"), keyword: false, shape: None };
        let inputs = [input("input", &x), input("weight", &w), none];
        let p = places("Functional.conv2d", &inputs, &[Some(&x), Some(&w), None], 8 * 256 * 56 * 56).unwrap();
        assert_eq!(p[..2], [Place::Recorded(0, Transform::Same), Place::Recorded(1, Transform::Same)]);
        // With a bias: its gradient third.
        let b = [256usize];
        let inputs = [input("input", &x), input("weight", &w), input("bias", &b)];
        let p = places("Torch.conv_transpose2d", &inputs, &[Some(&x), Some(&w), Some(&b)], 1).unwrap();
        assert_eq!(p[2], Place::Recorded(2, Transform::Same));
        // The wrong count fits no layout.
        assert_eq!(places("Functional.conv1d", &inputs, &[Some(&x), Some(&w)], 1), None);
    }
}
