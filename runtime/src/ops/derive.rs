//! The long tail by rule: names of msprobe's hook lists that the table does
//! not hold but that mean one of its entries, replayed from that entry
//! instead of by code per name. A name is derived when it is
//!
//! - an in-place form (`Tensor.masked_fill_`, `Torch.relu_`,
//!   `Tensor.__isub__`): its out-of-place entry, the result cast to the
//!   dtype of `self` ([`into_self`]; torch refuses a result of a higher
//!   category), its gradients the entry's (torch differentiates
//!   `x.clone().index_add_(...)` as `index_add`);
//! - a Python operator (`Tensor.__and__`, `Tensor.__ge__`, a commutative
//!   reflected `__rand__`): the function Python's operator calls;
//! - another spelling of the same function: the method form of a torch
//!   function or the reverse (`Tensor.atan2` and `Torch.atan2`), torch's
//!   documented aliases (`arccos`, `multiply`, `greater`), MindSpore's
//!   `mint` and `mint.nn.functional` (torch's API, [`MINT`]), and
//!   MindSpore's own functions that are torch's ([`MS_TORCH_SPELLINGS`]).
//!
//! Only names on a hook list are derived (the set is finite and known:
//! [`derived`]), each once, and every derived name has its agreement cases
//! (the base's cases, run under the derived name in torch, or in MindSpore
//! for MindSpore's own spellings: runtime/tests/agreement.rs).

use std::collections::HashSet;
use std::sync::OnceLock;

use super::{direct, Fact, Op};
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::spec::Framework;
use crate::value::Value;

/// Python's binary and unary operator methods and the torch function each calls.
const OPERATORS: &[(&str, &str)] = &[
    ("add", "add"),
    ("sub", "sub"),
    ("mul", "mul"),
    ("truediv", "div"),
    ("div", "div"),
    ("floordiv", "floor_divide"),
    ("mod", "remainder"),
    ("pow", "pow"),
    ("matmul", "matmul"),
    ("and", "bitwise_and"),
    ("or", "bitwise_or"),
    ("xor", "bitwise_xor"),
    ("lshift", "bitwise_left_shift"),
    ("rshift", "bitwise_right_shift"),
    ("eq", "eq"),
    ("ne", "ne"),
    ("lt", "lt"),
    ("le", "le"),
    ("gt", "gt"),
    ("ge", "ge"),
    ("neg", "neg"),
    ("abs", "abs"),
    ("invert", "bitwise_not"),
];

/// The operators whose reflected form (`__rand__`: `other & self`) is the operator itself.
const COMMUTATIVE: &[&str] = &["add", "mul", "and", "or", "xor"];

/// torch's documented aliases: the alias and the function it names.
const ALIASES: &[(&str, &str)] = &[
    ("absolute", "abs"),
    ("arccos", "acos"),
    ("arcsin", "asin"),
    ("arctan", "atan"),
    ("arctan2", "atan2"),
    ("arccosh", "acosh"),
    ("arcsinh", "asinh"),
    ("arctanh", "atanh"),
    ("multiply", "mul"),
    ("divide", "div"),
    ("subtract", "sub"),
    ("true_divide", "div"),
    ("greater", "gt"),
    ("greater_equal", "ge"),
    ("less", "lt"),
    ("less_equal", "le"),
    ("not_equal", "ne"),
    ("negative", "neg"),
    ("clip", "clamp"),
    ("fix", "trunc"),
    ("swapdims", "transpose"),
    ("moveaxis", "movedim"),
    ("concatenate", "cat"),
    ("ger", "outer"),
    ("row_stack", "vstack"),
    ("__div__", "__truediv__"),
    ("__rdiv__", "__rtruediv__"),
    ("__idiv__", "__itruediv__"),
    ("__nonzero__", "__bool__"),
];

/// Method forms that are not the torch function of the same name:
/// `Tensor.where(condition, y)` is `torch.where(condition, self, y)`;
/// `Tensor.lu` is the old `torch.lu` (packed factor and pivots), while
/// `Torch.lu` is what msprobe records for `linalg.lu` (P, L, U).
const OTHER_FUNCTIONS: &[&str] = &["where", "lu"];

/// MindSpore's prefixes whose APIs are torch's (`mindspore.mint.X` is
/// `torch.X`, `mint.nn.functional.X` is `torch.nn.functional.X`), and the
/// PyTorch prefix each spells.
const MINT: &[(&str, &str)] = &[("Mint", "Torch"), ("MintFunctional", "Functional")];

/// MindSpore's own functions (`mindspore.ops.X`, dumped `Functional.X`)
/// and `Tensor` methods that are torch's function of the same name: the
/// same parameters in the same places under the same names and the same
/// values, checked in MindSpore itself (runtime/tests/agreement.rs runs
/// every case of the base under the MindSpore name through
/// tests/agreement/ms_bridge.py, forward and MindSpore's own backward).
/// MindSpore's `axis` is torch's `dim` (the binder's keyword aliases);
/// those that differ stay out (many have an `MS.` name on a torch entry
/// instead, with cases of their own, run in MindSpore): `keepdims` for `keepdim` (`ops.amax`,
/// `nansum`: their own entries, `ms_reduce.rs`), `ddof` for `correction` (`std`, `var`),
/// `ops.flatten`'s kept batch dimension, `max`/`min` returning one tensor,
/// int32 indices (`argsort`, `sort`), `xlogy(0, 0)`, `signbit(-0.0)`,
/// and those the agreement cases showed to differ (`addmv` with `beta=0`,
/// `diff` and `round` beyond `n=1` and `decimals=0`, `cdist`, `tile`, `narrow`,
/// `erfinv` near ±1, `digamma` near its root, `renorm`'s float `p`,
/// `igamma(0, x)` (NaN in MindSpore), `lu_unpack`'s parts not unpacked
/// (None), `orgqr`'s `input2`, `ormqr`, `Tensor.index_put`'s 2-D values,
/// `logdet`'s gradient at a negative determinant, `cross` broadcast,
/// `hann_window`'s dtype, `polygamma`,
/// `bartlett_window` and `blackman_window` wanting tensors, `trapz`'s and
/// `searchsorted`'s parameter names, `rot90` and `swapdims` without torch's
/// defaults, `block_diag`, `hsplit` of 1-D, a differentiated `full_like`, and
/// `angle`, `lerp`, `roll`, `index_fill`, `nan_to_num`, `hardshrink` without
/// a CPU kernel for any case's dtype).
/// `(prefix, name)`.
#[rustfmt::skip]
const MS_TORCH_SPELLINGS: &[(&str, &str)] = &[
    ("Functional", "abs"), ("Functional", "absolute"), ("Functional", "acos"),
    ("Functional", "acosh"), ("Functional", "addbmm"), ("Functional", "addcdiv"),
    ("Functional", "addcmul"), ("Functional", "addr"), ("Functional", "adjoint"),
    ("Functional", "all"), ("Functional", "arccos"), ("Functional", "arccosh"),
    ("Functional", "arcsin"), ("Functional", "arcsinh"), ("Functional", "arctan"),
    ("Functional", "arctan2"), ("Functional", "arctanh"), ("Functional", "argmax"),
    ("Functional", "argwhere"), ("Functional", "asin"), ("Functional", "asinh"),
    ("Functional", "atan"), ("Functional", "atan2"), ("Functional", "atanh"),
    ("Functional", "atleast_1d"), ("Functional", "atleast_2d"), ("Functional", "atleast_3d"),
    ("Functional", "bitwise_and"), ("Functional", "bitwise_left_shift"),
    ("Functional", "bitwise_or"), ("Functional", "bitwise_right_shift"),
    ("Functional", "bitwise_xor"), ("Functional", "broadcast_to"), ("Functional", "ceil"),
    ("Functional", "cholesky_solve"), ("Functional", "clamp"), ("Functional", "clip"),
    ("Functional", "column_stack"), ("Functional", "combinations"), ("Functional", "concat"),
    ("Functional", "conj"), ("Functional", "copysign"), ("Functional", "cos"),
    ("Functional", "cosh"), ("Functional", "cov"), ("Functional", "cumsum"),
    ("Functional", "deg2rad"), ("Functional", "diag_embed"), ("Functional", "diagflat"),
    ("Functional", "diagonal"), ("Functional", "diagonal_scatter"), ("Functional", "div"),
    ("Functional", "divide"), ("Functional", "dsplit"), ("Functional", "dstack"),
    ("Functional", "eq"), ("Functional", "erf"), ("Functional", "erfc"), ("Functional", "exp"),
    ("Functional", "exp2"), ("Functional", "expm1"), ("Functional", "eye"), ("Functional", "flip"),
    ("Functional", "fliplr"), ("Functional", "flipud"), ("Functional", "float_power"),
    ("Functional", "floor"), ("Functional", "fmax"), ("Functional", "fmod"), ("Functional", "frac"),
    ("Functional", "gcd"), ("Functional", "ge"), ("Functional", "ger"), ("Functional", "greater"),
    ("Functional", "greater_equal"), ("Functional", "gt"), ("Functional", "hamming_window"),
    ("Functional", "heaviside"), ("Functional", "hstack"), ("Functional", "hypot"),
    ("Functional", "i0"),
    ("Functional", "index_select"), ("Functional", "inner"), ("Functional", "inverse"),
    ("Functional", "is_complex"), ("Functional", "is_nonzero"), ("Functional", "is_tensor"),
    ("Functional", "isclose"), ("Functional", "isfinite"), ("Functional", "isinf"),
    ("Functional", "isnan"), ("Functional", "isneginf"), ("Functional", "isposinf"),
    ("Functional", "isreal"), ("Functional", "kaiser_window"), ("Functional", "kron"),
    ("Functional", "lcm"), ("Functional", "ldexp"), ("Functional", "le"), ("Functional", "less"),
    ("Functional", "less_equal"), ("Functional", "log"), ("Functional", "log10"),
    ("Functional", "log1p"), ("Functional", "log2"), ("Functional", "logaddexp"),
    ("Functional", "logaddexp2"), ("Functional", "logical_and"), ("Functional", "logical_not"),
    ("Functional", "logical_or"), ("Functional", "logical_xor"), ("Functional", "logit"),
    ("Functional", "lt"), ("Functional", "lu_solve"),
    ("Functional", "masked_select"), ("Functional", "moveaxis"), ("Functional", "movedim"),
    ("Functional", "msort"), ("Functional", "mul"), ("Functional", "multiply"),
    ("Functional", "mv"), ("Functional", "mvlgamma"), ("Functional", "ne"), ("Functional", "neg"),
    ("Functional", "negative"), ("Functional", "not_equal"), ("Functional", "numel"),
    ("Functional", "positive"),
    ("Functional", "pow"), ("Functional", "prod"), ("Functional", "rad2deg"),
    ("Functional", "ravel"), ("Functional", "reciprocal"), ("Functional", "remainder"),
    ("Functional", "reshape"), ("Functional", "row_stack"), ("Functional", "sgn"),
    ("Functional", "sign"), ("Functional", "sinc"), ("Functional", "sinh"),
    ("Functional", "slice_scatter"), ("Functional", "slogdet"), ("Functional", "square"),
    ("Functional", "squeeze"), ("Functional", "subtract"), ("Functional", "sum"),
    ("Functional", "swapaxes"), ("Functional", "t"),
    ("Functional", "tan"), ("Functional", "trace"), ("Functional", "tril_indices"),
    ("Functional", "triu"), ("Functional", "triu_indices"), ("Functional", "trunc"),
    ("Functional", "unsqueeze"), ("Functional", "vsplit"), ("Functional", "vstack"),
    ("Tensor", "__and__"), ("Tensor", "__ifloordiv__"), ("Tensor", "__imod__"),
    ("Tensor", "__mod__"), ("Tensor", "__or__"), ("Tensor", "__xor__"), ("Tensor", "absolute"),
    ("Tensor", "acos"), ("Tensor", "acosh"), ("Tensor", "addbmm"), ("Tensor", "addr"),
    ("Tensor", "all"), ("Tensor", "arccos"), ("Tensor", "arccosh"), ("Tensor", "arcsin"),
    ("Tensor", "arcsinh"), ("Tensor", "arctan"), ("Tensor", "arctanh"), ("Tensor", "asin"),
    ("Tensor", "asinh"), ("Tensor", "atan"), ("Tensor", "atan2"), ("Tensor", "atanh"),
    ("Tensor", "bitwise_and"), ("Tensor", "bitwise_or"), ("Tensor", "bitwise_xor"),
    ("Tensor", "ceil"), ("Tensor", "cholesky_solve"), ("Tensor", "clip"), ("Tensor", "conj"),
    ("Tensor", "copysign"), ("Tensor", "cosh"), ("Tensor", "deg2rad"), ("Tensor", "diagflat"),
    ("Tensor", "diagonal"), ("Tensor", "divide"), ("Tensor", "erfc"), ("Tensor", "expm1"),
    ("Tensor", "flip"), ("Tensor", "fliplr"), ("Tensor", "flipud"), ("Tensor", "float_power"),
    ("Tensor", "floor"), ("Tensor", "fmod"), ("Tensor", "frac"), ("Tensor", "ger"),
    ("Tensor", "greater"), ("Tensor", "greater_equal"), ("Tensor", "heaviside"),
    ("Tensor", "hypot"), ("Tensor", "i0"),
    ("Tensor", "inner"), ("Tensor", "inverse"), ("Tensor", "is_complex"),
    ("Tensor", "is_signed"), ("Tensor", "isclose"), ("Tensor", "isfinite"), ("Tensor", "isinf"),
    ("Tensor", "isnan"), ("Tensor", "isneginf"), ("Tensor", "isposinf"), ("Tensor", "lcm"),
    ("Tensor", "ldexp"), ("Tensor", "less"), ("Tensor", "less_equal"), ("Tensor", "log10"),
    ("Tensor", "log1p"), ("Tensor", "log2"), ("Tensor", "logaddexp"), ("Tensor", "logaddexp2"),
    ("Tensor", "logit"), ("Tensor", "masked_scatter"), ("Tensor", "masked_select"),
    ("Tensor", "moveaxis"), ("Tensor", "movedim"), ("Tensor", "msort"), ("Tensor", "multiply"),
    ("Tensor", "mvlgamma"), ("Tensor", "nansum"), ("Tensor", "negative"), ("Tensor", "nelement"),
    ("Tensor", "new_ones"), ("Tensor", "new_zeros"), ("Tensor", "not_equal"), ("Tensor", "prod"),
    ("Tensor", "rad2deg"), ("Tensor", "ravel"), ("Tensor", "remainder"), ("Tensor", "sgn"),
    ("Tensor", "sign"), ("Tensor", "sinc"), ("Tensor", "sinh"), ("Tensor", "slogdet"),
    ("Tensor", "subtract"), ("Tensor", "take"), ("Tensor", "tan"), ("Tensor", "trace"),
    ("Tensor", "true_divide"), ("Tensor", "trunc"),
];

/// Whether MindSpore's `prefix.op` is torch's function `op` ([`MS_TORCH_SPELLINGS`]).
fn ms_torch_spelling(prefix: &str, op: &str) -> bool {
    MS_TORCH_SPELLINGS.contains(&(prefix, op))
}

/// How a derived name replays its base entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Derivation {
    /// The base entry's name this name was derived from.
    pub base: &'static str,
    /// Whether the call updates `self` in place ([`into_self`]).
    pub in_place: bool,
}

/// The spellings to try for `op` under `prefix` of `family`, and whether they run in place.
fn candidates(family: Framework, prefix: &str, op: &str) -> Vec<(String, bool)> {
    let spelled = op;
    let alias = ALIASES.iter().find(|(a, _)| *a == op).map(|(_, t)| *t);
    let op = alias.unwrap_or(op);
    // An alias of a name the table holds (`__rdiv__` of `__rtruediv__`).
    let mut out: Vec<(String, bool)> = alias.map(|a| (format!("{prefix}.{a}"), false)).into_iter().collect();
    let (stem, in_place) = match op.strip_prefix("__").and_then(|o| o.strip_suffix("__")) {
        Some(inner) => {
            let find = |n: &str| OPERATORS.iter().find(|(o, _)| *o == n).map(|(_, f)| *f);
            // `a @= b` is not in place in torch (it rebinds `a` to `a @ b`).
            let in_place = inner.strip_prefix('i').filter(|o| *o != "matmul").and_then(find);
            match (find(inner), in_place, inner.strip_prefix('r')) {
                (Some(f), _, _) => (f.to_string(), false),
                (None, Some(f), _) => (f.to_string(), true),
                (None, None, Some(r)) if COMMUTATIVE.contains(&r) => (find(r).unwrap_or(r).to_string(), false),
                _ => return out,
            }
        }
        None => match op.strip_suffix('_') {
            Some(stem) if !stem.is_empty() && !stem.ends_with('_') && !op.starts_with('_') => (stem.to_string(), true),
            _ => (op.to_string(), false),
        },
    };
    // MindSpore's own APIs (mindspore.ops, Tensor) take their in-place and
    // operator forms, and torch's function where MindSpore's is torch's
    // ([`MS_TORCH_SPELLINGS`]); their other spellings are not torch's.
    let ms_own = family == Framework::MindSpore && !MINT.iter().any(|(m, _)| *m == prefix);
    let torch_api = !ms_own || ms_torch_spelling(prefix, spelled) || (alias.is_none() && ms_torch_spelling(prefix, &stem));
    let mut stems = vec![stem.clone()];
    if torch_api {
        stems.extend(ALIASES.iter().filter(|(a, _)| *a == stem).map(|(_, t)| t.to_string()));
    } else if alias.is_some() {
        return vec![];
    }
    let other_function = OTHER_FUNCTIONS.contains(&stem.as_str());
    let prefixes: Vec<&str> = match (family, prefix) {
        (Framework::MindSpore, p) => match MINT.iter().find(|(m, _)| *m == p) {
            Some((m, torch)) if *torch == "Torch" && !other_function => vec![m, torch, "Tensor"],
            Some((m, torch)) => vec![m, torch],
            None if torch_api && !other_function => vec![p, "Torch", "Tensor"],
            None => vec![p],
        },
        (_, "Tensor") if !other_function => vec!["Tensor", "Torch"],
        (_, "Torch") if !other_function => vec!["Torch", "Tensor"],
        (_, p) => vec![p],
    };
    for s in &stems {
        for p in &prefixes {
            out.push((format!("{p}.{s}"), in_place));
        }
    }
    out
}

/// The base entry of `api` in `family` by rule, when the table does not hold it.
fn derive(family: Framework, api: &str) -> Option<(&'static Op, Derivation)> {
    let (prefix, op) = api.split_once('.')?;
    candidates(family, prefix, op).into_iter().find_map(|(name, in_place)| {
        let base = direct(family, &name)?;
        let base_name = base.names.iter().find(|n| n.trim_start_matches("MS.") == name)?;
        Some((base, Derivation { base: base_name, in_place }))
    })
}

/// One derived name with its entry.
pub struct Derived {
    /// The framework family whose dumps use the name.
    pub family: Framework,
    /// The name (`Prefix.op`).
    pub name: &'static str,
    /// What it derives from.
    pub derivation: Derivation,
    /// Its entry: the base's, under the derived name.
    pub op: Op,
}

/// Every derived name of the hook lists (built once).
pub fn derived() -> &'static [Derived] {
    static DERIVED: OnceLock<Vec<Derived>> = OnceLock::new();
    DERIVED.get_or_init(|| {
        let mut out: Vec<Derived> = vec![];
        let mut seen: HashSet<(Framework, String)> = HashSet::new();
        for list in super::hooks::LISTS {
            for name in list.names() {
                let api = format!("{}.{}", list.prefix, name.rsplit('.').next().unwrap_or(name));
                if direct(list.framework, &api).is_some() || !seen.insert((list.framework, api.clone())) {
                    continue;
                }
                let Some((base, derivation)) = derive(list.framework, &api) else { continue };
                let name: &'static str = Box::leak(api.into_boxed_str());
                let mut facts = base.facts.to_vec();
                if derivation.in_place {
                    facts.retain(|f| !matches!(f, Fact::NodeGradients(_)));
                    facts.push(Fact::InPlace);
                }
                let op = Op {
                    names: Box::leak(vec![name].into_boxed_slice()),
                    sig: base.sig,
                    forward: base.forward,
                    // An in-place form's gradients are its out-of-place base's
                    // (`self`'s old value in, the result out: torch differentiates
                    // `x.clone().index_add_(...)` as `index_add`).
                    backward: base.backward,
                    standard: base.standard,
                    random: base.random,
                    facts: Box::leak(facts.into_boxed_slice()),
                };
                out.push(Derived { family: list.framework, name, derivation, op });
            }
        }
        out
    })
}

/// The derived entry of `api` for dumps of `family`.
pub fn lookup(family: Framework, api: &str) -> Option<&'static Op> {
    derived().iter().find(|d| d.family == family && d.name == api).map(|d| &d.op)
}

/// An in-place op's result: the out-of-place result cast to `self`'s
/// dtype, which it cannot exceed in category (torch refuses to write a
/// float result into an integer tensor).
pub fn into_self(ctx: &Ctx, dtype: TDType, out: Vec<Value>) -> Result<Vec<Value>> {
    into_self_shaped(ctx, dtype, None, out)
}

/// [`into_self`] for `self` of shape `dims`: a result of more or fewer
/// elements (`self` broadcast against a larger operand) cannot be written
/// into it; a view's new shape (`transpose_`, `squeeze_`) can.
pub fn into_self_shaped(ctx: &Ctx, dtype: TDType, dims: Option<&[usize]>, out: Vec<Value>) -> Result<Vec<Value>> {
    match out.into_iter().next() {
        Some(Value::Tensor(t)) if t.dtype.category() > dtype.category() => {
            Err(Error::Arg(format!("result type {} can't be cast to the in-place output type {}", t.dtype.name(), dtype.name())))
        }
        Some(Value::Tensor(t)) if dims.is_some_and(|d| d.iter().product::<usize>() != t.t.elem_count()) => {
            Err(Error::Arg(format!("the in-place result's shape {:?} doesn't match self's {:?}", t.dims(), dims.unwrap_or_default())))
        }
        Some(Value::Tensor(t)) => Ok(vec![Value::Tensor(ctx.cast(&t, dtype)?)]),
        _ => Err(Error::Arg("in-place op produced no tensor".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derivation(family: Framework, api: &str) -> Option<(&'static str, bool)> {
        derived().iter().find(|d| d.family == family && d.name == api).map(|d| (d.derivation.base, d.derivation.in_place))
    }

    #[test]
    fn names_derive_by_rule() {
        let pt = Framework::PyTorch;
        assert_eq!(derivation(pt, "Tensor.masked_fill_"), Some(("Tensor.masked_fill", true)));
        assert_eq!(derivation(pt, "Tensor.__isub__"), Some(("Tensor.sub", true)));
        assert_eq!(derivation(pt, "Tensor.sub_"), Some(("Tensor.sub", true)));
        assert_eq!(derivation(pt, "Tensor.multiply"), Some(("Tensor.mul", false)));
        assert_eq!(derivation(pt, "Tensor.__rdiv__"), Some(("Tensor.__rtruediv__", false)));
        assert_eq!(derivation(pt, "Tensor.index_add_"), Some(("Tensor.index_add", true)));
        assert_eq!(derivation(pt, "Torch.relu_"), Some(("Torch.relu", true)));
        // Names the table holds are not derived; nor are names off the lists.
        assert_eq!(derivation(pt, "Tensor.add_"), None);
        assert!(lookup(pt, "Tensor.add__").is_none() && lookup(pt, "Tensor.__rlshift__").is_none());
        assert_eq!(derivation(pt, "Tensor.__nonzero__"), Some(("Tensor.__bool__", false)));
        let op = lookup(pt, "Tensor.masked_fill_").unwrap();
        assert!(op.in_place() && op.backward && op.names == ["Tensor.masked_fill_"]);
        // MSAdapter's dumps are PyTorch's: the same derived names.
        assert!(std::ptr::eq(super::super::lookup(Framework::MindTorch, "Tensor.masked_fill_").unwrap(), op));
        // MindSpore's own spellings of torch's functions; not those that differ.
        let ms = Framework::MindSpore;
        assert_eq!(derivation(ms, "Functional.abs"), Some(("Torch.abs", false)));
        assert_eq!(derivation(ms, "Functional.arccos"), Some(("Torch.acos", false)));
        assert_eq!(derivation(ms, "Tensor.__and__"), Some(("Torch.bitwise_and", false)));
        assert!(lookup(ms, "Functional.std").is_none() && lookup(ms, "Functional.flatten").is_none());
    }
}
