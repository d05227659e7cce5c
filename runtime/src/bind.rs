//! Binding call arguments to an op's parameters, the way Python binds them.
//!
//! An op's signature is written as in the torch docs:
//! `"input, other, *, alpha=1"`, `"input, *shape"`, `"input, dim=None, keepdim=False"`.
//! Positional arguments fill parameters in order, keywords by name
//! (MindSpore's `axis`/`keep_dims`/`input_x` are accepted for `dim`/`keepdim`/`input`),
//! `*name` collects the remaining positionals (a single list argument is
//! taken as the whole collection, so `x.reshape(2, 3)` and `x.reshape((2, 3))`
//! bind alike), and defaults fill the rest.

use std::collections::HashMap;

use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// Keyword spellings of MindSpore that name the same torch parameter: the
/// binder maps them, and the scripts' renderer takes them from here.
pub const KEYWORD_ALIASES: &[(&str, &str)] = &[("axis", "dim"), ("keep_dims", "keepdim"), ("input_x", "input"), ("x", "input")];

struct Param {
    name: &'static str,
    default: Option<&'static str>,
    varargs: bool,
    kw_only: bool,
}

fn parse_sig(sig: &'static str) -> Vec<Param> {
    let mut kw_only = false;
    let mut params = vec![];
    for part in sig.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "*" {
            kw_only = true;
            continue;
        }
        let (name, default) = match part.split_once('=') {
            Some((n, d)) => (n.trim(), Some(d.trim())),
            None => (part, None),
        };
        let varargs = name.starts_with('*');
        params.push(Param { name: name.trim_start_matches('*'), default, varargs, kw_only });
        if varargs {
            kw_only = true;
        }
    }
    params
}

/// The names of the parameters of `sig`, in order.
pub fn param_names(sig: &'static str) -> Vec<&'static str> {
    parse_sig(sig).iter().map(|p| p.name).collect()
}

/// The position of parameter `name` among the positional parameters of
/// `sig` (`None` when it is keyword-only or absent).
pub fn param_position(sig: &'static str, name: &str) -> Option<usize> {
    parse_sig(sig).iter().take_while(|p| !p.kw_only && !p.varargs).position(|p| p.name == name)
}

fn default_value(text: &str) -> Value {
    match text {
        "None" => Value::None,
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        t if t.starts_with('\'') => Value::Str(t.trim_matches('\'').to_string()),
        t => t.parse::<i64>().map(Value::Int).unwrap_or_else(|_| t.parse::<f64>().map(Value::Float).unwrap_or(Value::None)),
    }
}

/// The parameter of `sig` each argument of a call binds to: `positional`
/// arguments in order (a `*name` takes the rest; `None` past the signature),
/// then the `keywords` through [`KEYWORD_ALIASES`]. The gradient layouts
/// ([`crate::grad_layout`]) name a call's inputs by parameter.
pub fn parameters(sig: &'static str, positional: usize, keywords: &[&str]) -> Vec<Option<&'static str>> {
    let params = parse_sig(sig);
    let mut by_position = params.iter().filter(|p| !p.kw_only || p.varargs);
    let mut rest: Option<&'static str> = None;
    let mut out: Vec<Option<&'static str>> = (0..positional)
        .map(|_| {
            if rest.is_none() {
                if let Some(p) = by_position.next() {
                    if p.varargs {
                        rest = Some(p.name);
                    } else {
                        return Some(p.name);
                    }
                }
            }
            rest
        })
        .collect();
    out.extend(keywords.iter().map(|key| {
        let name = KEYWORD_ALIASES.iter().find(|(a, _)| a == key).map(|(_, n)| *n).unwrap_or(key);
        params.iter().find(|p| p.name == name).map(|p| p.name)
    }));
    out
}

/// Arguments bound to parameter names.
#[derive(Debug)]
pub struct Bound {
    api: String,
    values: HashMap<&'static str, Value>,
}

/// Binds `args`/`kwargs` to `sig` for the API `api` (named in errors).
pub fn bind(api: &str, sig: &'static str, args: Vec<Value>, kwargs: Vec<(String, Value)>) -> Result<Bound> {
    let params = parse_sig(sig);
    let mut values: HashMap<&'static str, Value> = HashMap::new();
    let mut args = args.into_iter();
    for p in params.iter().filter(|p| !p.kw_only || p.varargs) {
        if p.varargs {
            let rest: Vec<Value> = args.by_ref().collect();
            let collected = match rest.as_slice() {
                [Value::List(items)] => Value::List(items.clone()),
                _ => Value::List(rest),
            };
            values.insert(p.name, collected);
            break;
        }
        match args.next() {
            Some(v) => {
                values.insert(p.name, v);
            }
            None => break,
        }
    }
    let extra = args.count();
    if extra > 0 {
        return Err(Error::Arg(format!("{api}: {extra} positional argument(s) too many for ({sig})")));
    }
    for (key, v) in kwargs {
        // `out=` only says where torch writes the result: the call is the
        // function without it, judged on the tensor it returns (`out` itself).
        if key == "out" && !params.iter().any(|p| p.name == "out") {
            continue;
        }
        let name = KEYWORD_ALIASES.iter().find(|(a, _)| *a == key).map(|(_, n)| *n).unwrap_or(key.as_str());
        let Some(p) = params.iter().find(|p| p.name == name) else {
            return Err(Error::Arg(format!("{api}: unexpected keyword argument {key:?} for ({sig})")));
        };
        if values.insert(p.name, v).is_some() {
            return Err(Error::Arg(format!("{api}: got multiple values for {:?}", p.name)));
        }
    }
    for p in &params {
        if !values.contains_key(p.name) {
            match (p.default, p.varargs) {
                (Some(d), _) => {
                    values.insert(p.name, default_value(d));
                }
                (None, true) => {
                    values.insert(p.name, Value::List(vec![]));
                }
                (None, false) => return Err(Error::Arg(format!("{api}: missing argument {:?} for ({sig})", p.name))),
            }
        }
    }
    Ok(Bound { api: api.to_string(), values })
}

impl Bound {
    fn get(&self, name: &str) -> &Value {
        self.values.get(name).unwrap_or(&Value::None)
    }

    fn err(&self, name: &str, expected: &str) -> Error {
        Error::Arg(format!("{}: argument {name:?}: expected {expected}, got {}", self.api, self.get(name).kind()))
    }

    /// The raw value.
    pub fn value(&self, name: &str) -> &Value {
        self.get(name)
    }

    /// The same arguments with `from` named `to`: a MindSpore spelling
    /// whose parameter has its own name (`keepdims`) runs torch's forward.
    pub fn renamed(&self, from: &'static str, to: &'static str) -> Bound {
        let values = self.values.iter().map(|(&k, v)| (if k == from { to } else { k }, v.clone())).collect();
        Bound { api: self.api.clone(), values }
    }

    /// Whether the argument is None.
    pub fn is_none(&self, name: &str) -> bool {
        matches!(self.get(name), Value::None)
    }

    /// A required tensor.
    pub fn tensor(&self, name: &str) -> Result<&T> {
        match self.get(name) {
            Value::Tensor(t) => Ok(t),
            _ => Err(self.err(name, "a tensor")),
        }
    }

    /// An optional tensor.
    pub fn opt_tensor(&self, name: &str) -> Result<Option<&T>> {
        match self.get(name) {
            Value::None => Ok(None),
            _ => self.tensor(name).map(Some),
        }
    }

    /// A list of tensors.
    pub fn tensors(&self, name: &str) -> Result<Vec<&T>> {
        match self.get(name) {
            Value::List(items) => items.iter().map(|v| v.tensor(name)).collect(),
            _ => Err(self.err(name, "a list of tensors")),
        }
    }

    /// A Python int.
    pub fn int(&self, name: &str) -> Result<i64> {
        self.get(name).as_i64().ok_or_else(|| self.err(name, "an int"))
    }

    /// An optional Python int.
    pub fn opt_int(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name) {
            Value::None => Ok(None),
            _ => self.int(name).map(Some),
        }
    }

    /// A Python number.
    pub fn float(&self, name: &str) -> Result<f64> {
        self.get(name).as_f64().ok_or_else(|| self.err(name, "a number"))
    }

    /// An optional Python number.
    pub fn opt_float(&self, name: &str) -> Result<Option<f64>> {
        match self.get(name) {
            Value::None => Ok(None),
            _ => self.float(name).map(Some),
        }
    }

    /// A Python bool.
    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.get(name) {
            Value::Bool(b) => Ok(*b),
            Value::Int(i) => Ok(*i != 0),
            _ => Err(self.err(name, "a bool")),
        }
    }

    /// A string.
    pub fn str(&self, name: &str) -> Result<&str> {
        match self.get(name) {
            Value::Str(s) => Ok(s),
            _ => Err(self.err(name, "a string")),
        }
    }

    /// An int or a list of ints (`dim=1`, `dim=(0, 2)`, `*shape`).
    pub fn ints(&self, name: &str) -> Result<Vec<i64>> {
        match self.get(name) {
            Value::List(items) => items.iter().map(|v| v.as_i64().ok_or_else(|| self.err(name, "a list of ints"))).collect(),
            v => v.as_i64().map(|i| vec![i]).ok_or_else(|| self.err(name, "an int or a list of ints")),
        }
    }

    /// Like [`Bound::ints`], or `None`.
    pub fn opt_ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.get(name) {
            Value::None => Ok(None),
            _ => self.ints(name).map(Some),
        }
    }

    /// An optional dtype argument.
    pub fn opt_dtype(&self, name: &str) -> Result<Option<TDType>> {
        match self.get(name) {
            Value::None => Ok(None),
            Value::DType(d) => Ok(Some(*d)),
            _ => Err(self.err(name, "a dtype")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_named_by_the_parameters_they_bind_to() {
        assert_eq!(parameters("input, weight, bias=None", 2, &["bias"]), [Some("input"), Some("weight"), Some("bias")]);
        assert_eq!(parameters("input, *shape", 3, &[]), [Some("input"), Some("shape"), Some("shape")]);
        assert_eq!(parameters("input, *, alpha=1", 2, &["alpha", "x", "nope"]), [Some("input"), None, Some("alpha"), Some("input"), None]);
    }

    #[test]
    fn binds_like_python() {
        let b = bind("t", "input, dim=None, keepdim=False, *, dtype=None", vec![Value::Int(1)], vec![("keep_dims".into(), Value::Bool(true))]).unwrap();
        assert_eq!(b.int("input").unwrap(), 1);
        assert!(b.bool("keepdim").unwrap());
        assert!(b.is_none("dim"));
        let b = bind("t", "input, *shape", vec![Value::Int(0), Value::List(vec![Value::Int(2), Value::Int(3)])], vec![]).unwrap();
        assert_eq!(b.ints("shape").unwrap(), vec![2, 3]);
        let b = bind("t", "input, *shape", vec![Value::Int(0), Value::Int(2), Value::Int(3)], vec![]).unwrap();
        assert_eq!(b.ints("shape").unwrap(), vec![2, 3]);
        let e = bind("t", "input, *, alpha=1", vec![Value::Int(0), Value::Int(1)], vec![]).unwrap_err().to_string();
        assert!(e.contains("too many"), "{e}");
        assert!(bind("t", "input", vec![], vec![("other".into(), Value::None)]).is_err());
        let b = bind("t", "input, reduction='mean', eps=1e-05", vec![Value::None], vec![]).unwrap();
        assert_eq!((b.str("reduction").unwrap(), b.float("eps").unwrap()), ("mean", 1e-5));
    }
}
