//! Argument descriptors of a dumped call: tensors by dtype, shape and
//! statistics, and every non-tensor value msprobe serialises.

use std::path::{Component, Path};

use serde_json::{Map, Value};

use super::ModelError;
use super::TDType;
use crate::dump::nonfinite;

/// One recorded statistic (`Max`, `Min`, ...): a number, possibly non-finite;
/// a bool for bool tensors; or absent (`null`, empty tensors).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// A number (may be NaN or infinite).
    Num(f64),
    /// `any`/`all` of a bool tensor.
    Bool(bool),
    /// Not recorded.
    Missing,
}

/// A tensor as the dump describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorDesc {
    /// Element type.
    pub dtype: TDType,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Largest element.
    pub max: Stat,
    /// Smallest element.
    pub min: Stat,
    /// Mean of the elements (`Mean`), with `norm` what ties an input to the
    /// output it was (`replay --from-compare`'s data flow).
    pub mean: Stat,
    /// L2 norm of the elements (`Norm`).
    pub norm: Stat,
    /// `requires_grad` as dumped (PyTorch only).
    pub requires_grad: Option<bool>,
    /// File name of the saved tensor (tensor dumps only): a bare file name
    /// (no separator, `.`, `..` or absolute path), checked when typed.
    pub data_name: Option<String>,
}

/// A dumped argument or output value.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A tensor.
    Tensor(TensorDesc),
    /// `bool`.
    Bool(bool),
    /// `int` and numpy integer scalars.
    Int(i64),
    /// `float` and numpy float scalars (may be NaN or infinite).
    Float(f64),
    /// `str`.
    Str(String),
    /// `slice(start, stop, step)`.
    Slice([Option<i64>; 3]),
    /// `...`.
    Ellipsis,
    /// `torch.Size`.
    Size(Vec<i64>),
    /// A dtype argument (`torch.dtype` / `mindspore.dtype`).
    DType(TDType),
    /// A device argument (`cuda:0`, `npu:0`, `cpu`, or an index).
    Device(String),
    /// `torch.memory_format` by name.
    MemoryFormat(String),
    /// `None`.
    None,
    /// Something msprobe could not serialise (`{}`) or a type the tool does not
    /// replay (process groups, DTensor, ...); replayed as `None`.
    Unsupported(String),
    /// A list or tuple.
    List(Vec<Arg>),
}

const MEMORY_FORMATS: &[&str] = &["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"];
const TENSOR_TYPES: &[&str] = &["torch.Tensor", "torch.nn.parameter.Parameter", "mindspore.Tensor", "mindspore.common.tensor.Tensor"];
const INT_SCALARS: &[&str] = &["int", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"];
const FLOAT_SCALARS: &[&str] = &["float", "float16", "float32", "float64"];

fn err(path: &str, expected: impl Into<String>) -> ModelError {
    ModelError::Arg { path: path.to_string(), expected: expected.into() }
}

fn as_f64(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| nonfinite::value(v))
}

fn stat(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Stat, ModelError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Stat::Missing),
        Some(Value::Bool(b)) => Ok(Stat::Bool(*b)),
        Some(v) => as_f64(v).map(Stat::Num).ok_or_else(|| err(&format!("{path}.{key}"), "a number, NaN, Infinity, a bool or null")),
    }
}

fn opt_int(v: &Value, path: &str) -> Result<Option<i64>, ModelError> {
    match v {
        Value::Null => Ok(None),
        v => v.as_i64().map(Some).ok_or_else(|| err(path, "an integer or null")),
    }
}

fn int_list(v: Option<&Value>, path: &str) -> Result<Vec<i64>, ModelError> {
    let items = v.and_then(Value::as_array).ok_or_else(|| err(path, "a list of integers"))?;
    items.iter().map(|x| x.as_i64().ok_or_else(|| err(path, "a list of integers"))).collect()
}

/// A data file name must be a bare file name of the dump's tensor folder:
/// it is joined to that folder, and a separator, `.`, `..`, a drive or an
/// absolute path in it would name a file elsewhere. Such a name is refused
/// whatever the data mode (only tensor files use it).
fn data_name(v: Option<&Value>, path: &str) -> Result<Option<String>, ModelError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let bare = !s.contains(['/', '\\', '\0'])
                && !s.chars().any(char::is_control)
                && matches!(Path::new(s).components().collect::<Vec<_>>()[..], [Component::Normal(_)]);
            if !bare {
                return Err(err(
                    path,
                    format!("a bare file name in the dump's tensor folder (no '/', '\\', '.', '..', control character or absolute path), got {s:?}"),
                ));
            }
            Ok(Some(s.clone()))
        }
        Some(_) => Err(err(path, "a string")),
    }
}

/// torch and MindSpore count a tensor's elements in an int64: a shape whose
/// product is larger describes no tensor (and would wrap a count).
fn check_shape(shape: &[i64], path: &str) -> Result<(), ModelError> {
    if shape.iter().any(|&d| d < 0) {
        return Err(err(path, "non-negative dimensions"));
    }
    let count = if shape.contains(&0) { Some(0) } else { shape.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d)) };
    if count.is_none() {
        return Err(err(path, format!("dimensions whose product (the element count) fits in an int64, got {shape:?}")));
    }
    Ok(())
}

fn tensor(obj: &Map<String, Value>, path: &str) -> Result<TensorDesc, ModelError> {
    let dtype_str = obj.get("dtype").and_then(Value::as_str).ok_or_else(|| err(&format!("{path}.dtype"), "a dtype string"))?;
    let dtype = TDType::parse(dtype_str)
        .ok_or_else(|| err(&format!("{path}.dtype"), format!("a supported dtype (float16/32/64, bfloat16, int, bool, complex), got {dtype_str:?}")))?;
    let shape = int_list(obj.get("shape"), &format!("{path}.shape"))?;
    check_shape(&shape, &format!("{path}.shape"))?;
    let requires_grad = match obj.get("requires_grad") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(err(&format!("{path}.requires_grad"), "a bool")),
    };
    Ok(TensorDesc {
        dtype,
        shape: shape.into_iter().map(|d| d as u64).collect(),
        max: stat(obj, "Max", path)?,
        min: stat(obj, "Min", path)?,
        // Read for matching alone: a value of another form is as good as none.
        mean: stat(obj, "Mean", path).unwrap_or(Stat::Missing),
        norm: stat(obj, "Norm", path).unwrap_or(Stat::Missing),
        requires_grad,
        data_name: data_name(obj.get("data_name"), &format!("{path}.data_name"))?,
    })
}

impl Arg {
    /// Types one JSON value of `input_args`, `input_kwargs`, `output`, ...;
    /// `path` names it in errors (`Tensor.add.0.forward.input_args[1]`).
    pub fn from_json(v: &Value, path: &str) -> Result<Arg, ModelError> {
        let obj = match v {
            Value::Null => return Ok(Arg::None),
            Value::Array(items) => {
                return items.iter().enumerate().map(|(i, x)| Arg::from_json(x, &format!("{path}[{i}]"))).collect::<Result<_, _>>().map(Arg::List)
            }
            Value::Object(obj) => obj,
            _ => return Err(err(path, "an argument descriptor object, a list or null")),
        };
        let Some(ty) = obj.get("type") else {
            return Ok(Arg::Unsupported(String::new()));
        };
        let ty = ty.as_str().ok_or_else(|| err(&format!("{path}.type"), "a string"))?;
        let value = obj.get("value");
        let vpath = format!("{path}.value");
        Ok(match ty {
            t if TENSOR_TYPES.contains(&t) => Arg::Tensor(tensor(obj, path)?),
            "bool" | "bool_" => Arg::Bool(value.and_then(Value::as_bool).ok_or_else(|| err(&vpath, "a bool"))?),
            t if INT_SCALARS.contains(&t) => Arg::Int(value.and_then(Value::as_i64).ok_or_else(|| err(&vpath, "an integer"))?),
            t if FLOAT_SCALARS.contains(&t) => Arg::Float(value.and_then(as_f64).ok_or_else(|| err(&vpath, "a number"))?),
            "str" => Arg::Str(value.and_then(Value::as_str).ok_or_else(|| err(&vpath, "a string"))?.to_string()),
            "slice" => {
                let parts = value.and_then(Value::as_array).filter(|a| a.len() == 3).ok_or_else(|| err(&vpath, "[start, stop, step]"))?;
                Arg::Slice([opt_int(&parts[0], &vpath)?, opt_int(&parts[1], &vpath)?, opt_int(&parts[2], &vpath)?])
            }
            "ellipsis" => Arg::Ellipsis,
            "torch.Size" => Arg::Size(int_list(value, &vpath)?),
            "torch.dtype" | "mindspore.dtype" => {
                let s = value.and_then(Value::as_str).ok_or_else(|| err(&vpath, "a dtype string"))?;
                Arg::DType(TDType::parse(s).ok_or_else(|| err(&vpath, format!("a known dtype, got {s:?}")))?)
            }
            "torch.device" => Arg::Device(match value {
                Some(Value::String(s)) if s.chars().all(|c| c.is_ascii_alphanumeric() || c == ':') => s.clone(),
                Some(Value::Number(n)) if n.is_u64() => n.to_string(),
                _ => return Err(err(&vpath, "a device such as \"cuda:0\", \"npu:0\", \"cpu\" or an index")),
            }),
            "torch.memory_format" => {
                let f = obj.get("format").and_then(Value::as_str).unwrap_or("");
                if !MEMORY_FORMATS.contains(&f) {
                    return Err(err(&format!("{path}.format"), format!("one of {MEMORY_FORMATS:?}")));
                }
                Arg::MemoryFormat(f.to_string())
            }
            other => Arg::Unsupported(other.to_string()),
        })
    }

    /// Every tensor in this value, depth first.
    pub fn tensors(&self) -> Vec<&TensorDesc> {
        match self {
            Arg::Tensor(t) => vec![t],
            Arg::List(items) => items.iter().flat_map(Arg::tensors).collect(),
            _ => vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_tensors_and_scalars() {
        let t = Arg::from_json(
            &json!({"type": "torch.Tensor", "dtype": "torch.float16", "shape": [2, 3], "Max": 1.5, "Min": "\u{0}-Infinity",
                    "requires_grad": true, "data_name": "x.pt"}),
            "a",
        )
        .unwrap();
        let Arg::Tensor(t) = t else { panic!() };
        assert_eq!(t.shape, vec![2, 3]);
        assert_eq!(t.min, Stat::Num(f64::NEG_INFINITY));
        assert_eq!(t.requires_grad, Some(true));
        assert_eq!(Arg::from_json(&json!({"type": "slice", "value": [1, null, 2]}), "a").unwrap(), Arg::Slice([Some(1), None, Some(2)]));
        assert_eq!(Arg::from_json(&json!({}), "a").unwrap(), Arg::Unsupported(String::new()));
        assert_eq!(Arg::from_json(&json!({"type": "float", "value": "\u{0}NaN"}), "a").unwrap().tensors().len(), 0);
    }

    #[test]
    fn rejects_bad_values_with_path() {
        let e = Arg::from_json(&json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": "x"}), "K.input_args[0]").unwrap_err();
        assert_eq!(e.to_string(), "K.input_args[0].shape: expected a list of integers");
        let e = Arg::from_json(&json!({"type": "torch.device", "value": "cuda\"); import os"}), "k").unwrap_err();
        assert!(e.to_string().starts_with("k.value: expected a device"));
    }

    #[test]
    fn data_names_must_be_bare_file_names() {
        let named = |n: &str| Arg::from_json(&json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1], "data_name": n}), "K.input_args[0]");
        let expected = |n: &str| {
            format!("K.input_args[0].data_name: expected a bare file name in the dump's tensor folder (no '/', '\\', '.', '..', control character or absolute path), got {n:?}")
        };
        for bad in ["../../outside/secret.pt", "/etc/passwd", "sub/x.pt", "..\\x.pt", "x.pt/", "..", ".", "", "a\0b.pt", "x\n.pt", "\u{1b}[31mx.pt"] {
            assert_eq!(named(bad).unwrap_err().to_string(), expected(bad), "{bad:?}");
        }
        let Ok(Arg::Tensor(t)) = named("Tensor.add.0.forward.input.0.pt") else { panic!() };
        assert_eq!(t.data_name.as_deref(), Some("Tensor.add.0.forward.input.0.pt"));
        assert!(named("...pt").is_ok());
    }

    #[test]
    fn shapes_whose_element_count_overflows_int64_are_refused() {
        let shaped = |s: Value| Arg::from_json(&json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": s}), "K.output[0]");
        assert_eq!(
            shaped(json!([4294967296u64, 4294967296u64])).unwrap_err().to_string(),
            "K.output[0].shape: expected dimensions whose product (the element count) fits in an int64, got [4294967296, 4294967296]"
        );
        assert!(shaped(json!([1_000_000_000_000i64, 1_000_000_000_000i64])).is_err());
        assert_eq!(shaped(json!([-1, 2])).unwrap_err().to_string(), "K.output[0].shape: expected non-negative dimensions");
        assert!(shaped(json!([4294967296u64, 4294967296u64, 0])).is_ok(), "an empty tensor, however wide");
        assert!(shaped(json!([2147483648u64, 2147483648u64])).is_ok(), "2^62 elements: the memory limit's to refuse");
    }
}
