//! MindSpore's fused kernels of `mindspore.ops` (`MS.Functional.` names):
//! `flash_attention_score`, `rms_norm`, `rotary_position_embedding` and
//! `fast_gelu` (msprobe's MindSpore hook lists name them) and `swiglu`,
//! with MindSpore's signatures, on the math of torch_npu's kernels of the
//! same Ascend operators (`npu_fused.rs`, `npu_attention.rs`).

use super::npu_attention::{flash_attention_score, ms_parts, ms_scores, MS_TOKENS};
use super::npu_fused::{fast_gelu_of, rms_norm, rotary_of, swiglu_of};
use super::{Fact, Op, Parts, Rest, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::Value;

/// swiglu(input, dim=-1): `silu(a)·b` for the halves of input along `dim`.
fn swiglu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    swiglu_of(ctx, b.tensor("input")?, b.int("dim")?, "swiglu")
}

/// fast_gelu(x): `x / (1 + exp(-1.702|x|)) · exp(0.851(x - |x|))`.
fn fast_gelu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    fast_gelu_of(ctx, b.tensor("x")?)
}

/// rotary_position_embedding(x, cos, sin, mode=0): `x·cos + rot(x)·sin`,
/// mode 0 rotating the halves of the last dim, mode 1 interleaved pairs.
fn rotary_position_embedding(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let mode = match b.int("mode")? {
        0 => "half",
        1 => "interleave",
        m => return Err(Error::Arg(format!("rotary_position_embedding: mode must be 0 (half) or 1 (interleave), got {m}"))),
    };
    rotary_of(ctx, b.tensor("x")?, b.tensor("cos")?, b.tensor("sin")?, mode, "rotary_position_embedding")
}

/// The entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["MS.Functional.rms_norm"],
        sig: "x, gamma, epsilon=1e-06",
        forward: rms_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op { names: &["MS.Functional.swiglu"], sig: "input, dim=-1", forward: swiglu, backward: true, standard: Standard::Accuracy, random: false, facts: &[] },
    Op {
        names: &["MS.Functional.fast_gelu"],
        sig: "x",
        forward: fast_gelu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["MS.Functional.rotary_position_embedding"],
        sig: "x, cos, sin, mode=0",
        forward: rotary_position_embedding,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["MS.Functional.flash_attention_score"],
        sig: "query, key, value, head_num, real_shift=None, drop_mask=None, padding_mask=None, attn_mask=None, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, keep_prob=1.0, scalar_value=1.0, pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0, input_layout='BSH', sparse_mode=0",
        forward: flash_attention_score,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::TokenMask(MS_TOKENS),
            Fact::Intermediates(ms_scores),
            Fact::Rounding(Rounding::Parts(Parts { name: "flash_attention_score", rest: Rest::Nothing, magnitude: ms_parts })),
        ],
    },
];
