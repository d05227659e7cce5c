//! One API call: its forward entry and, when dumped, its backward entry,
//! paired by name.

use serde_json::Value;

#[cfg(test)]
use super::TDType;
use super::{ApiName, Arg, ModelError, Prefix};

/// The forward half: how the API was called and what it returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Forward {
    /// Positional arguments.
    pub args: Vec<Arg>,
    /// Keyword arguments in dump order.
    pub kwargs: Vec<(String, Arg)>,
    /// Recorded outputs.
    pub outputs: Vec<Arg>,
}

/// The backward half, in msprobe's naming: the entry's `input` holds the
/// gradients flowing into the call (w.r.t. its outputs), `output` the
/// gradients it produced (w.r.t. its inputs).
#[derive(Debug, Clone, PartialEq)]
pub struct Backward {
    /// Gradients w.r.t. the forward outputs (`input`, or `grad_input` in old dumps).
    pub grad_outputs: Vec<Arg>,
    /// Recorded gradients w.r.t. the forward inputs (`output` / `grad_output`).
    pub grad_inputs: Vec<Arg>,
}

/// A dumped API call ready for rendering or replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiCall {
    /// `Prefix.op.N`.
    pub name: ApiName,
    /// The forward entry.
    pub forward: Forward,
    /// The backward entry, when the dump has one.
    pub backward: Option<Backward>,
}

fn list(entry: &Value, key: &str, path: &str) -> Result<Option<Vec<Arg>>, ModelError> {
    match entry.get(key) {
        None => Ok(None),
        Some(v @ Value::Array(_)) => match Arg::from_json(v, &format!("{path}.{key}"))? {
            Arg::List(items) => Ok(Some(items)),
            _ => unreachable!("an array types as a list"),
        },
        Some(Value::Null) => Ok(Some(vec![])),
        Some(_) => Err(ModelError::Arg { path: format!("{path}.{key}"), expected: "a list".into() }),
    }
}

impl ApiCall {
    /// Types the forward entry (required) and backward entry (optional) of `name`.
    pub fn from_entries(name: ApiName, forward: &Value, backward: Option<&Value>) -> Result<ApiCall, ModelError> {
        let fpath = name.key(super::Direction::Forward);
        if !forward.is_object() {
            return Err(ModelError::Arg { path: fpath, expected: "an object with input_args, input_kwargs and output".into() });
        }
        let kwargs = match forward.get("input_kwargs") {
            None | Some(Value::Null) => vec![],
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| Ok((k.clone(), Arg::from_json(v, &format!("{fpath}.input_kwargs.{}", path_key(k)))?)))
                .collect::<Result<_, ModelError>>()?,
            Some(_) => return Err(ModelError::Arg { path: format!("{fpath}.input_kwargs"), expected: "an object".into() }),
        };
        let mut forward =
            Forward { args: list(forward, "input_args", &fpath)?.unwrap_or_default(), kwargs, outputs: list(forward, "output", &fpath)?.unwrap_or_default() };
        if name.prefix == Prefix::Tensor && name.op == "to" {
            recover_cast_dtype(&mut forward);
        }
        let backward = match backward {
            None => None,
            Some(b) => {
                let bpath = name.key(super::Direction::Backward);
                let grad_outputs = match list(b, "grad_input", &bpath)? {
                    Some(g) => g,
                    None => list(b, "input", &bpath)?
                        .ok_or_else(|| ModelError::Arg { path: bpath.clone(), expected: "an \"input\" (or \"grad_input\") list of gradients".into() })?,
                };
                let grad_inputs = match list(b, "grad_output", &bpath)? {
                    Some(g) => g,
                    None => list(b, "output", &bpath)?.unwrap_or_default(),
                };
                Some(Backward { grad_outputs, grad_inputs })
            }
        };
        Ok(ApiCall { name, forward, backward })
    }
}
/// msprobe 8.3.2 records the `torch.dtype` (and `torch.device`) arguments
/// of `Tensor.to` as `{}`, so `x.to(torch.long)` would replay as a no-op:
/// each unrecorded positional argument becomes the recorded output's dtype
/// (a cast to the same dtype, where the `{}` was a device, changes nothing).
fn recover_cast_dtype(forward: &mut Forward) {
    let Some(Arg::Tensor(out)) = forward.outputs.first() else { return };
    let dtype = out.dtype;
    for arg in forward.args.iter_mut().skip(1) {
        if *arg == Arg::Unsupported(String::new()) {
            *arg = Arg::DType(dtype);
        }
    }
}

/// A dump key as a JSON path segment: itself when it is a plain
/// identifier, else quoted and escaped, so an error message stays one line
/// of printable text whatever the dump holds.
fn path_key(k: &str) -> String {
    let plain = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        k.to_string()
    } else {
        format!("{:?}", k).chars().flat_map(|c| if c.is_ascii() && !c.is_ascii_control() { vec![c] } else { c.escape_unicode().collect() }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn to_call(output_dtype: &str) -> ApiCall {
        let t = |dtype: &str| json!({"type": "torch.Tensor", "dtype": dtype, "shape": [2], "Max": 1.0, "Min": 0.0, "requires_grad": false});
        let entry = json!({"input_args": [t("torch.float32"), {}], "input_kwargs": {}, "output": [t(output_dtype)]});
        ApiCall::from_entries(ApiName::parse("Tensor.to.1").unwrap(), &entry, None).unwrap()
    }

    #[test]
    fn an_unrecorded_cast_argument_is_the_recorded_outputs_dtype() {
        assert_eq!(to_call("torch.int64").forward.args[1], Arg::DType(TDType::I64));
        assert_eq!(to_call("torch.float32").forward.args[1], Arg::DType(TDType::F32));
        let other =
            ApiCall::from_entries(ApiName::parse("Tensor.add.0").unwrap(), &json!({"input_args": [{}], "input_kwargs": {}, "output": []}), None).unwrap();
        assert_eq!(other.forward.args[0], Arg::Unsupported(String::new()));
    }
}
