//! The op table: one entry per API, saying how its arguments bind, how its
//! forward runs (with torch's semantics, built from candle primitives),
//! whether a backward exists, how its results are judged ([`Standard`]),
//! and what else the replay must know about it ([`Fact`]: a cast that may
//! be a no-op, autocast's lower precision, class targets, an inner node's
//! recorded gradient). [`api_standard`] is msprobe's api standard, keyed
//! by op name: which of its rules and levels an op takes. The replay and
//! the standards dispatch on these, never on API names of their own.
//! Adding an op is adding an entry here (and its agreement cases).
//!
//! Names are prefix-qualified (`Torch.add`, `Tensor.__add__`, `Mint.add`,
//! `Functional.gather`), because the same op name can mean different things
//! under different prefixes (MindSpore's `ops.gather` is not `torch.gather`);
//! msprobe's api standard alone names ops by base name, under every prefix.

mod activation;
pub mod api_standard;
mod arith;
mod aten;
mod attention_heads;
mod attention_kernel;
mod batch_norm_kernel;
mod batch_norm_parts;
pub mod bench;
mod bessel;
mod bias_kernel;
mod blas;
pub mod chain;
mod compare;
pub mod complex;
mod conv;
mod conv_kernel;
mod covariance;
mod create;
pub mod derive;
mod diag;
mod distance;
mod einsum;
mod factor;
mod few_rows;
mod fold;
mod fused;
mod gelu_kernel;
mod gemm_into;
mod grid;
pub mod hooks;
mod index;
mod inner_grad;
#[cfg(test)]
mod kernel_check;
mod layer_norm_kernel;
mod linalg;
mod linear_kernel;
mod loss;
mod math;
mod methods;
mod mha;
mod ms_array;
mod ms_fused;
mod ms_math;
mod ms_reduce;
mod ms_torch;
mod nn;
mod node_grads;
mod norm;
mod npu_act;
mod npu_attention;
mod npu_boxes;
mod npu_fused;
mod npu_infer;
mod npu_logits;
mod npu_misc;
mod npu_moe;
mod npu_route;
mod npu_torch;
mod order_stats;
mod pool;
mod pool3d;
mod pool_kernel;
mod rearrange;
pub mod reasons;
mod reduce;
mod relu_kernel;
mod rnn;
mod scatter;
mod search;
mod shape;
mod slicing;
mod special;
mod svd;
mod syncbn;
mod vector;
mod windows;

pub use slicing::{Slicing, Whole};

use std::collections::HashMap;
use std::sync::OnceLock;

use candle_core::Tensor;

use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::Result;
use crate::grad_layout::NodeLayouts;
use crate::spec::Framework;
use crate::value::{Value, T};

/// The usual result of an op: one tensor.
fn one(t: T) -> Result<Vec<Value>> {
    Ok(vec![Value::Tensor(t)])
}

/// An entry with no facts and no random numbers: how the torch_npu kernel
/// files list theirs.
const fn entry(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, backward: bool, standard: Standard) -> Op {
    Op { names, sig, forward, backward, standard, random: false, facts: &[] }
}

/// Runs torch's entry `api` on `args` and `kwargs`, bound to its own
/// signature: how another framework's spelling of a torch function under
/// other arguments (`mindspore.ops.argsort`, `torch_npu.npu_transpose`)
/// replays it, so its arithmetic and gradient keep one home.
fn rebind(ctx: &Ctx, api: &str, args: Vec<Value>, kwargs: &[(&str, Value)]) -> Result<Vec<Value>> {
    let op = lookup(Framework::PyTorch, api).ok_or_else(|| crate::error::Error::Arg(format!("{api}: no torch entry")))?;
    let kwargs = kwargs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    (op.forward)(ctx, &crate::bind::bind(api, op.sig, args, kwargs)?)
}

/// The dtype of a result that must be floating: integer inputs give float32, as in torch.
fn float_of(d: TDType) -> TDType {
    if d.is_float() {
        d
    } else {
        TDType::F32
    }
}

/// How the forward results of an op are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standard {
    /// By the run's precision standard (`crate::standard`).
    Accuracy,
    /// Values must be identical (data movement): binary equality under
    /// every standard. Casts to a float dtype are not data movement: the
    /// bench keeps float64 while the device rounds.
    Exact,
    /// The values are undefined (uninitialized memory, `torch.empty`): only
    /// the shapes of the forward outputs are judged.
    Undefined,
}

/// The keywords a fused attention API names its mask and token band by
/// ([`Fact::TokenMask`]): torch_npu's `atten_mask`, `pre_tockens`,
/// `next_tockens`; MindSpore's `attn_mask`, `pre_tokens`, `next_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenKeys {
    /// The mask (true or 1: not attended).
    pub mask: &'static str,
    /// How far before its own place a query attends.
    pub pre: &'static str,
    /// How far after.
    pub next: &'static str,
}

/// What the replay knows about an op beyond its semantics: how PyTorch
/// runs it and how msprobe records it. Each is recognised from the data
/// before it changes a verdict (`crate::replay`'s quirks).
#[derive(Debug, Clone, Copy)]
pub enum Fact {
    /// A cast (`Tensor.to`, `.float()`, ...) that returns its input itself
    /// when the input already has the dtype: no autograd node of its own, so
    /// the dump's gradients are those of the op that produced the input.
    NoopCast,
    /// In PyTorch autocast's lower-precision list ("lower_precision_fp"):
    /// under autocast it runs on its floating inputs cast down.
    Autocast,
    /// The second positional argument is class indices (`cross_entropy`,
    /// `nll_loss`): random ones stay valid classes.
    ClassTargets,
    /// msprobe (8.3.2, PyTorch) records the input gradient w.r.t. an inner
    /// node's output, not the op's input.
    InnerGradient(InnerGradient),
    /// How rounding can move its results ([`Rounding`]; [`Rounding::Composite`] when absent).
    Rounding(Rounding),
    /// msprobe's PyTorch dumps list its input gradients as its last
    /// autograd node takes them, not in input order (`linear`'s
    /// AddmmBackward0 `[bias, input, weight.t()]`, a view's one incoming
    /// gradient): the layouts it can have ([`crate::grad_layout`]).
    NodeGradients(NodeLayouts),
    /// Its mask in sparse_mode 0 attends only the band between its
    /// pre and next tokens (npu_fusion_attention, flash_attention_score:
    /// the keyword names are the [`TokenKeys`]): statistics cannot give the
    /// recorded mask back, so a random one is the band's own (Megatron's
    /// causal call: the causal mask).
    TokenMask(TokenKeys),
    /// Elements of the intermediates one run of the op holds beyond its
    /// inputs and outputs (attention's `[B, N, S1, S2]` scores), from the
    /// call's specs: the working-set estimate counts them
    /// ([`crate::limits`]). `None` when the specs do not say.
    Intermediates(fn(&crate::spec::Replay) -> Option<u128>),
    /// A derived in-place form ([`derive`]): the entry's out-of-place
    /// result written into `self`, in its dtype ([`derive::into_self`]).
    InPlace,
    /// Its kind of kernel (`"conv"`) rounds float32 operands shorter on
    /// some devices by default: the rulebook's `reduced_operands` by kind.
    ReducedOperands(&'static str),
    /// Its kernel is known to leave a common relative error in float32
    /// results beyond what rounding leaves ([`CommonError`]): the bound's
    /// systematic view allows that much and says why.
    CommonError(CommonError),
    /// Parameters the rounding magnitudes do not perturb: no result reads
    /// them while a bool parameter is true (batch_norm's running statistics
    /// in training), or, always, they are positions that choose which
    /// inputs are read rather than operands (roi_align's rois, whose
    /// perturbation jumps across its bilinear taps).
    Inert(Inert),
    /// The dimensions it treats independently ([`Slicing`]), for
    /// `replay --minimize`; elementwise ops have theirs by rule
    /// ([`Op::slicing`]).
    Slicing(Slicing),
    /// Its gradients computed straight from its inputs and output
    /// gradients ([`Gradients`]), without candle's autograd.
    Gradients(Gradients),
}

/// An op's gradients from its bound inputs and the gradient of each of its
/// outputs (`None` where there is none; in its output's dtype and shape
/// after the forward ran, as dumped when the caller skipped the forward:
/// a gradient that does not fit is `None`, for autograd), by parameter name: what candle's autograd of the op's forward gives, bit
/// for bit, without its graph. Autograd copies each input into a variable,
/// starts each gradient from a zero tensor it adds into, and keeps every
/// node's gradient: full-size passes that took half a GPT-2 linear call's
/// bench time outside the products. `None` when the call is not one the
/// op's kernels take (another dtype, a rounding step between the kernel and
/// the output): autograd runs instead.
pub type Gradients = fn(&Ctx, &Bound, &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>>;

/// Parameters the rounding magnitudes of a call do not perturb: when its
/// bool parameter `when` is true, or always when there is none
/// ([`Fact::Inert`]).
#[derive(Debug, Clone, Copy)]
pub struct Inert {
    /// The bool parameter.
    pub when: Option<&'static str>,
    /// The parameters its results then do not read.
    pub params: &'static [&'static str],
}

/// A kernel's measured common relative error in float32 results, with
/// where it was measured: the device differs from correctly rounded
/// arithmetic by that much, which is not an error of the call.
#[derive(Debug, Clone, Copy)]
pub struct CommonError {
    /// The largest common error, in epsilons of float32 (2^-23).
    pub float32_epsilons: f64,
    /// The kernel and the dump it was measured on.
    pub source: &'static str,
}

/// How rounding in the device's precision can move an op's results: the
/// magnitude the `bound` standard scales the unit roundoff by, computed in
/// the bench pass (`crate::replay`'s magnitudes; the scripts compute the
/// same), and the class's factor `k` ([`Rounding::k`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// Sums of a few signed terms and single products (add and sub with
    /// alpha, mul, div, addcmul, addcdiv): the op on the absolute values of
    /// its floating inputs and scalars, `negated` (a parameter name) negated
    /// so that a difference becomes a sum: `|a| + |α·b|`, `|a·b|`.
    Terms {
        /// The subtracted parameter (`other` of `sub`).
        negated: Option<&'static str>,
    },
    /// Contractions and reductions (matmul, linear, conv, pooling means,
    /// sum, mean): the op on absolute values, `|A|·|B|`, `Σ|x|`.
    Sums,
    /// Selections (max pooling, relu): each output is one of the inputs (or 0), copied
    /// exactly, and each input's gradient sums the output gradients of the
    /// places that chose it: `|y|`, and the backward of `|dy|` (one run,
    /// where Composite's 23 reruns measure the same thing).
    Selects,
    /// Elementwise functions: `|f(x)| + Σⱼ|xⱼ·∂ⱼf|`, each floating input
    /// perturbed alone by a relative `±h` (central differences in f64).
    Smooth,
    /// A formula that cancels inside where its first-order terms do not
    /// show it (gelu's `1 + erf(x/√2)` for negative x; attention's
    /// `dO·Vᵀ - rowsum(dO⊙O)` where a row attends to one key): Smooth's
    /// (or Composite's) magnitude plus the magnitudes of its parts
    /// ([`Parts`]); or the parts alone where they bound every term (the
    /// fused attentions, whose Composite would rerun a whole LLM-sized
    /// attention two dozen times).
    Parts(Parts),
    /// Everything else (softmax, norms, losses, attention): the first-order
    /// terms along each input (uniformly and along two sign patterns) plus
    /// the error the op's own composition shows when computed in float32,
    /// in units of float32's roundoff.
    Composite,
}

/// The parameters whose values are operands of a sum or product: Terms and
/// Sums take the absolute value of an integer given there (`add(x, -3)`,
/// `alpha=-3`), and of no other integer (a `dim` keeps its sign).
pub const OPERANDS: &[&str] = &[
    "input", "other", "alpha", "beta", "value", "tensor1", "tensor2", "mat1", "mat2", "batch1", "batch2", "mat", "vec", "vec1", "vec2", "weight", "bias",
    "source", "src",
];

/// What a [`Parts`] function gives: per forward output in order (the
/// first few, or none), and per named parameter, its gradient's magnitudes.
pub type PartMagnitudes = (Vec<Vec<f64>>, Vec<(&'static str, Vec<f64>)>);

/// What a [`Parts`] formula's parts are added to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rest {
    /// Smooth's first-order terms.
    Smooth,
    /// Composite's terms and float32 probe.
    Composite,
    /// Nothing: the parts bound every term themselves (an output or
    /// gradient they do not give has no magnitude).
    Nothing,
}

impl Rest {
    /// The name the scripts' tables give it.
    pub fn name(self) -> &'static str {
        match self {
            Rest::Smooth => "smooth",
            Rest::Composite => "composite",
            Rest::Nothing => "nothing",
        }
    }
}

/// The magnitudes of the parts of a formula that cancels inside, from the
/// bench's bound arguments and the first output's gradient: for the
/// outputs, and for the gradients of the parameters it names.
#[derive(Debug, Clone, Copy)]
pub struct Parts {
    /// The scripts' name of the same formula (their tables key by it).
    pub name: &'static str,
    /// What the parts are added to.
    pub rest: Rest,
    /// The parts' magnitudes.
    pub magnitude: fn(&Bound, Option<&T>) -> Result<PartMagnitudes>,
}

impl PartialEq for Parts {
    fn eq(&self, other: &Parts) -> bool {
        self.name == other.name
    }
}

impl Eq for Parts {}

impl Rounding {
    /// The factor of `k·u·magnitude` for forward outputs, or gradients
    /// (`backward`): the rulebook's k of the class ([`crate::rulebook`],
    /// which says where each factor comes from).
    pub fn k(self, backward: bool) -> f64 {
        crate::rulebook::get().rounding.k(self.factor_class(), backward)
    }

    /// The rulebook's name of the class's factors: Parts whose rest is
    /// Composite's, or nothing (a composite's whole bound), take Composite's.
    fn factor_class(self) -> &'static str {
        match self {
            Rounding::Parts(p) if p.rest != Rest::Smooth => "composite",
            other => other.name(),
        }
    }

    /// `(k, compute dtype)` of an output of `dtype` (`backward`: a
    /// gradient): the precision the device computes in gives `u` (its unit
    /// roundoff) and `eta`. Float64 computes in float64, everything else in
    /// float32, except float16 and bfloat16 results of every class but Sums,
    /// which take their own dtype and the rulebook's `half_precision_k` of
    /// the class (a kernel may compute them in that dtype: MindSpore's CPU
    /// float16 silu and its gradient measured at 2 ulp of float16; a
    /// bfloat16 div's gradient rounds several times in bfloat16; a Terms
    /// forward result is one correctly rounded operation). Sums accumulate
    /// in float32.
    pub fn factors(self, dtype: TDType, backward: bool) -> (f64, TDType) {
        match dtype {
            TDType::F64 => (self.k(backward), TDType::F64),
            TDType::F16 | TDType::BF16 if !matches!(self, Rounding::Sums) => (crate::rulebook::get().rounding.half_k(self.factor_class(), backward), dtype),
            _ => (self.k(backward), TDType::F32),
        }
    }

    /// The class's name (the scripts' tables key by it).
    pub fn name(self) -> &'static str {
        match self {
            Rounding::Terms { .. } => "terms",
            Rounding::Sums => "sums",
            Rounding::Selects => "selects",
            Rounding::Smooth => "smooth",
            Rounding::Parts(_) => "parts",
            Rounding::Composite => "composite",
        }
    }
}

/// An inner node whose output's gradient msprobe records as the op's input gradient.
#[derive(Debug, Clone, Copy)]
pub struct InnerGradient {
    /// The gradient w.r.t. the inner node's output for the output gradient
    /// `g`, as f64 values shaped like the input; `None` outside the case
    /// recognised.
    pub grad: fn(&Bound, &T) -> Result<Option<Vec<f64>>>,
    /// The note of a row judged against it.
    pub note: &'static str,
}

/// One op-table entry.
pub struct Op {
    /// The dump names this entry replays (`Prefix.op`).
    pub names: &'static [&'static str],
    /// Python-style signature (see [`crate::bind`]).
    pub sig: &'static str,
    /// The forward computation.
    pub forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>,
    /// Whether torch defines a gradient (replayed with candle's autograd).
    pub backward: bool,
    /// How results are judged.
    pub standard: Standard,
    /// Whether the op draws random numbers (dropout): replayed with the same
    /// draws on both sides, or with the mask a tensor dump recorded.
    pub random: bool,
    /// What else is known about it (see [`Fact`]).
    pub facts: &'static [Fact],
}

impl Op {
    /// Whether it is a cast that may be a no-op ([`Fact::NoopCast`]).
    pub fn noop_cast(&self) -> bool {
        self.facts.iter().any(|f| matches!(f, Fact::NoopCast))
    }

    /// Whether autocast runs it in the lower precision ([`Fact::Autocast`]).
    pub fn autocast(&self) -> bool {
        self.facts.iter().any(|f| matches!(f, Fact::Autocast))
    }

    /// Elements of the intermediates of one run of `r` ([`Fact::Intermediates`]), 0 for most ops.
    pub fn intermediates(&self, r: &crate::spec::Replay) -> u128 {
        self.facts.iter().find_map(|f| if let Fact::Intermediates(f) = f { f(r) } else { None }).unwrap_or(0)
    }

    /// The keywords of its mask and token band when a random mask is the
    /// band's ([`Fact::TokenMask`]).
    pub fn token_mask(&self) -> Option<&'static TokenKeys> {
        self.facts.iter().find_map(|f| match f {
            Fact::TokenMask(keys) => Some(keys),
            _ => None,
        })
    }

    /// Its kind of kernel for the rulebook's `reduced_operands` ([`Fact::ReducedOperands`]).
    pub fn reduced_operands(&self) -> Option<&'static str> {
        self.facts.iter().find_map(|f| match f {
            Fact::ReducedOperands(kind) => Some(*kind),
            _ => None,
        })
    }

    /// The parameters its results do not read, and when ([`Fact::Inert`]).
    pub fn inert(&self) -> Option<&'static Inert> {
        self.facts.iter().find_map(|f| match f {
            Fact::Inert(i) => Some(i),
            _ => None,
        })
    }

    /// The common error its kernel is known to leave ([`Fact::CommonError`]).
    pub fn common_error(&self) -> Option<&'static CommonError> {
        self.facts.iter().find_map(|f| match f {
            Fact::CommonError(c) => Some(c),
            _ => None,
        })
    }

    /// Whether the second positional argument is class indices ([`Fact::ClassTargets`]).
    pub fn class_targets(&self) -> bool {
        self.facts.iter().any(|f| matches!(f, Fact::ClassTargets))
    }

    /// The inner node whose gradient msprobe may record as the input's ([`Fact::InnerGradient`]).
    pub fn inner_gradient(&self) -> Option<&InnerGradient> {
        self.facts.iter().find_map(|f| match f {
            Fact::InnerGradient(g) => Some(g),
            _ => None,
        })
    }

    /// How rounding can move its results ([`Fact::Rounding`], else [`Rounding::Composite`]).
    pub fn rounding(&self) -> Rounding {
        self.facts
            .iter()
            .find_map(|f| match f {
                Fact::Rounding(r) => Some(*r),
                _ => None,
            })
            .unwrap_or(Rounding::Composite)
    }

    /// How a dump of `framework` lists its input gradients, when not in
    /// input order ([`Fact::NodeGradients`]): only msprobe's PyTorch hook
    /// records a node's gradients (MindSpore's and MSAdapter's record the
    /// API cell's, in input order).
    pub fn node_gradients(&self, framework: Framework) -> Option<NodeLayouts> {
        if framework != Framework::PyTorch {
            return None;
        }
        self.facts.iter().find_map(|f| match f {
            Fact::NodeGradients(l) => Some(*l),
            _ => None,
        })
    }

    /// The dimensions it treats independently: its [`Fact::Slicing`], or
    /// by rule every dimension of an elementwise op (the rounding classes
    /// [`Rounding::Terms`] and [`Rounding::Smooth`], and Parts added to
    /// Smooth's terms, are elementwise by definition); `None`: the op has none known, and a failing call of
    /// it keeps its size.
    pub fn slicing(&self) -> Option<Slicing> {
        let given = self.facts.iter().find_map(|f| if let Fact::Slicing(s) = f { Some(*s) } else { None });
        let elementwise = match self.rounding() {
            Rounding::Terms { .. } | Rounding::Smooth => true,
            Rounding::Parts(p) => p.rest == Rest::Smooth,
            _ => false,
        };
        match given {
            Some(Slicing::Kept) => None,
            Some(s) => Some(s),
            None => elementwise.then_some(Slicing::Aligned(Whole::Nothing)),
        }
    }

    /// Its [`Gradients`], where it has them.
    pub fn gradients(&self) -> Option<Gradients> {
        self.facts.iter().find_map(|f| if let Fact::Gradients(g) = f { Some(*g) } else { None })
    }

    /// Whether it is a derived in-place form ([`Fact::InPlace`]).
    pub fn in_place(&self) -> bool {
        self.facts.iter().any(|f| matches!(f, Fact::InPlace))
    }

    /// Whether its forward values are undefined (uninitialized memory): only shapes are judged.
    pub fn values_undefined(&self) -> bool {
        self.standard == Standard::Undefined
    }

    /// Whether it only moves data ([`Standard::Exact`]): its forward values
    /// must be identical under every standard.
    pub fn moves_data(&self) -> bool {
        self.standard == Standard::Exact
    }
}

/// Every op the runtime replays.
pub fn table() -> impl Iterator<Item = &'static Op> {
    arith::OPS
        .iter()
        .chain(blas::OPS)
        .chain(activation::OPS)
        .chain(conv::OPS)
        .chain(pool::OPS)
        .chain(nn::OPS)
        .chain(norm::OPS)
        .chain(loss::OPS)
        .chain(shape::OPS)
        .chain(reduce::OPS)
        .chain(ms_reduce::OPS)
        .chain(npu_infer::OPS)
        .chain(npu_moe::OPS)
        .chain(npu_route::OPS)
        .chain(npu_logits::OPS)
        .chain(npu_act::OPS)
        .chain(npu_boxes::OPS)
        .chain(npu_torch::OPS)
        .chain(bessel::OPS)
        .chain(ms_math::OPS)
        .chain(ms_array::OPS)
        .chain(ms_torch::OPS)
        .chain(create::OPS)
        .chain(compare::OPS)
        .chain(index::OPS)
        .chain(math::OPS)
        .chain(ms_fused::OPS)
        .chain(einsum::OPS)
        .chain(npu_fused::OPS)
        .chain(npu_attention::OPS)
        .chain(npu_misc::OPS)
        .chain(rearrange::OPS)
        .chain(distance::OPS)
        .chain(grid::OPS)
        .chain(fold::OPS)
        .chain(diag::OPS)
        .chain(mha::OPS)
        .chain(rnn::OPS)
        .chain(special::OPS)
        .chain(windows::OPS)
        .chain(vector::OPS)
        .chain(search::OPS)
        .chain(methods::OPS)
        .chain(linalg::OPS)
        .chain(aten::OPS)
        .chain(order_stats::OPS)
        .chain(scatter::OPS)
        .chain(covariance::OPS)
        .chain(pool3d::OPS)
        .chain(syncbn::OPS)
        .chain(factor::OPS)
        .chain(svd::OPS)
}

/// The entry for `Prefix.op` of a dump from `framework`: the table's, or
/// one derived by rule from it ([`derive`]: in-place forms, operators,
/// other spellings of the same function).
/// MindSpore-specific meanings are listed as `MS.Prefix.op` and win for
/// MindSpore dumps; MSAdapter's calls are PyTorch's ([`Framework::api_family`]).
/// A name with a reason never to be replayed ([`reasons`]) has none.
pub fn lookup(framework: Framework, api: &str) -> Option<&'static Op> {
    if reasons::reason(framework, api).is_some() {
        return None;
    }
    direct(framework, api).or_else(|| derive::lookup(framework.api_family(), api)).or_else(|| complex::complex_only(framework, api))
}

/// [`lookup`]'s entry, or the error a `skip` row gives: the name's reason
/// never to be replayed, else the op table's gap.
pub fn require(framework: Framework, api: &str) -> crate::error::Result<&'static Op> {
    if let Some(r) = reasons::reason(framework, api) {
        return Err(crate::error::Error::NotReplayed { api: api.to_string(), reason: r.why() });
    }
    lookup(framework, api).ok_or_else(|| crate::error::Error::UnknownOp(api.to_string()))
}

/// The table's own entry for `Prefix.op`, as [`lookup`] without derivation.
fn direct(framework: Framework, api: &str) -> Option<&'static Op> {
    let ms = (framework.api_family() == Framework::MindSpore).then(|| format!("MS.{api}"));
    let by_name = by_name();
    ms.and_then(|n| by_name.get(n.as_str())).or_else(|| by_name.get(api)).copied()
}

/// Each name of the table with its entry (names are unique: a unit test
/// holds it), built once: [`direct`] runs for every call and for each of
/// the hook lists' names when [`derive::derived`] is built, which a scan of
/// the table made 11 ms of the first lookup of a derived name.
fn by_name() -> &'static HashMap<&'static str, &'static Op> {
    static BY_NAME: OnceLock<HashMap<&'static str, &'static Op>> = OnceLock::new();
    BY_NAME.get_or_init(|| table().flat_map(|op| op.names.iter().map(move |&n| (n, op))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_signatures_parse() {
        let mut seen = std::collections::HashSet::new();
        for op in table() {
            for n in op.names {
                assert!(seen.insert(*n), "{n} is in the table twice");
                let parts: Vec<&str> = n.split('.').collect();
                assert!(parts.len() == 2 || (parts.len() == 3 && parts[0] == "MS"), "{n}");
            }
        }
    }

    #[test]
    fn rounding_classes_and_their_factors() {
        let class = |name| lookup(Framework::PyTorch, name).unwrap().rounding();
        assert_eq!(class("Torch.sub"), Rounding::Terms { negated: Some("other") });
        assert_eq!(class("Tensor.__rsub__"), Rounding::Terms { negated: Some("input") });
        assert_eq!(class("Functional.linear"), Rounding::Sums);
        assert_eq!(class("Torch.exp"), Rounding::Smooth);
        assert!(matches!(class("Torch.tanh"), Rounding::Parts(p) if p.name == "tanh"));
        assert!(matches!(class("Torch.sigmoid"), Rounding::Parts(p) if p.name == "sigmoid"));
        assert!(matches!(class("Functional.gelu"), Rounding::Parts(p) if p.name == "gelu" && p.rest == Rest::Smooth));
        assert!(matches!(class("Functional.scaled_dot_product_attention"), Rounding::Parts(p) if p.name == "sdpa" && p.rest == Rest::Composite));
        assert!(matches!(class("Functional.layer_norm"), Rounding::Parts(p) if p.name == "layer_norm" && p.rest == Rest::Composite));
        assert!(matches!(class("Functional.softmax"), Rounding::Parts(p) if p.name == "softmax" && p.rest == Rest::Composite));
        assert_eq!(class("Functional.group_norm"), Rounding::Composite);
        // Every negated parameter is a parameter of its entry's signature.
        for op in table() {
            if let Rounding::Terms { negated: Some(n) } = op.rounding() {
                assert!(crate::bind::param_names(op.sig).contains(&n), "{}: {n}", op.names[0]);
            }
        }
        assert_eq!(Rounding::Sums.factors(TDType::BF16, false), (16.0, TDType::F32));
        assert_eq!(Rounding::Smooth.factors(TDType::BF16, false), (4.0, TDType::BF16));
        assert_eq!(Rounding::Smooth.factors(TDType::F16, true), (4.0, TDType::F16));
        assert_eq!(Rounding::Terms { negated: None }.factors(TDType::F16, true), (4.0, TDType::F16));
        // One correctly rounded sum or product, and one rounding more for a kernel's approximation.
        assert_eq!(Rounding::Terms { negated: None }.factors(TDType::BF16, false), (1.0, TDType::BF16));
        assert_eq!(Rounding::Terms { negated: None }.factors(TDType::F32, true), (16.0, TDType::F32));
        assert_eq!(Rounding::Terms { negated: None }.factors(TDType::F32, false), (3.0, TDType::F32));
        assert_eq!(Rounding::Composite.factors(TDType::F64, false), (64.0, TDType::F64));
    }

    #[test]
    fn facts_are_on_their_entries() {
        let op = |fw, name| lookup(fw, name).unwrap();
        for name in ["Functional.cross_entropy", "Functional.nll_loss", "MintFunctional.cross_entropy"] {
            assert!(op(Framework::PyTorch, name).class_targets(), "{name}");
        }
        assert!(op(Framework::MindSpore, "Functional.nll_loss").class_targets());
        // MSAdapter's Functional is torch.nn.functional, not mindspore.ops: PyTorch's entries.
        for name in ["Functional.nll_loss", "Functional.log_softmax", "Functional.mse_loss"] {
            assert!(
                std::ptr::eq(op(Framework::MindTorch, name), op(Framework::PyTorch, name))
                    && !std::ptr::eq(op(Framework::MindTorch, name), op(Framework::MindSpore, name)),
                "{name}"
            );
        }
        assert!(lookup(Framework::MindTorch, "Functional.dense").is_none() && lookup(Framework::MindSpore, "Functional.dense").is_some());
        assert!(!op(Framework::PyTorch, "Functional.l1_loss").class_targets());
        assert!(op(Framework::PyTorch, "Functional.l1_loss").inner_gradient().is_some());
        assert!(op(Framework::MindSpore, "Functional.cross_entropy").inner_gradient().is_some());
        assert!(op(Framework::PyTorch, "Functional.nll_loss").inner_gradient().is_none());
        assert!(op(Framework::PyTorch, "Tensor.type_as").noop_cast() && !op(Framework::PyTorch, "Tensor.long").noop_cast());
        assert!(op(Framework::PyTorch, "Tensor.__matmul__").autocast() && !op(Framework::PyTorch, "Torch.add").autocast());
        // MindSpore's dense is linear and shares its entry, autocast included: the fact
        // changes a replay only when the data shows a down-cast output.
        assert!(op(Framework::MindSpore, "Functional.dense").autocast());
        for name in ["Torch.empty", "Torch.empty_like", "Torch.empty_strided", "Tensor.new_empty", "Tensor.new_empty_strided"] {
            assert!(op(Framework::PyTorch, name).values_undefined(), "{name}");
        }
    }
}
