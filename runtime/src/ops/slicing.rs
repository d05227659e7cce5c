//! Which dimensions of a call's tensors an op treats independently: cut
//! along one of them, the call's output is the same cut of the whole
//! call's output, so a failing call can be shrunk with the device's own
//! recorded values kept as the evidence (`replay --minimize`,
//! [`crate::minimize`]). Reduced dimensions are never among them: a
//! shortened sum has no recorded result.

/// The independent dimensions of an op, by kind ([`super::Fact::Slicing`];
/// elementwise ops get [`Slicing::Aligned`] with nothing whole by rule,
/// [`super::Op::slicing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slicing {
    /// Every dimension of output 0 except those [`Whole`] keeps whole:
    /// the outputs of output 0's rank cut at the same dimension, the
    /// tensor inputs aligned to it from the right (a size-1 dimension is
    /// broadcast and stays whole). Elementwise ops, softmax over a
    /// dimension, norms over the trailing dimensions.
    Aligned(Whole),
    /// A matrix product `a @ b` (parameters named): the output's batch
    /// dimensions, the rows of `a` and the columns of `b`; a tensor added
    /// to it (addmm's `input`) aligned to the output from the right.
    Product {
        /// The left factor.
        a: &'static str,
        /// The right factor.
        b: &'static str,
    },
    /// The output's leading dimensions are those of the parameter's tensor,
    /// one for one (embedding: the indices' dimensions, each index's row
    /// of the table whole).
    Leading(&'static str),
    /// `linear(input, weight, bias)`: the input's leading dimensions and
    /// the output features (weight's rows, bias).
    Linear,
    /// A convolution: the batch (input and output dimension 0) and, when
    /// `groups` is 1, the output channels (weight's dimension 0, bias).
    Conv,
    /// batch_norm: the channels (dimension 1 of input and output, the
    /// per-channel parameters).
    Channels,
    /// scaled_dot_product_attention: the batch dimensions and, without a
    /// causal mask or dropout, the query rows.
    Attention,
    /// npu_fusion_attention: the batch of its `input_layout` and, in
    /// sparse mode 0 without a token band or dropout, the query rows.
    FusionAttention,
    /// Nothing known independent, where the rule would say otherwise: an
    /// elementwise rounding class on an op that is not elementwise
    /// (`outer`'s product of two vectors, `__setitem__`'s index).
    Kept,
}

/// The dimensions of output 0 an [`Slicing::Aligned`] op keeps whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whole {
    /// None: an elementwise op.
    Nothing,
    /// The last n (a rotary embedding's head dimension, a masked softmax's keys).
    Last(usize),
    /// The dimension the parameter names (default when absent; `None`:
    /// an absent parameter leaves nothing known).
    Dim(&'static str, Option<i64>),
    /// As many trailing dimensions as the shape parameter has entries
    /// (layer_norm's `normalized_shape`).
    Normalized(&'static str),
}
