//! Values an op consumes and produces: tensors with their logical dtype,
//! Python scalars, dtypes, slices, lists.

use candle_core::{DType, Device, Tensor};

use crate::dtype::TDType;
use crate::error::{Error, Result};

/// A tensor: its values in the run's storage precision for its dtype, plus
/// the dtype torch would give it.
#[derive(Debug, Clone)]
pub struct T {
    /// Values: F64 on the bench; on the emulated device F32 for floating
    /// dtypes (F64 in float64 calls) and F64 for integers and bools
    /// ([`storage`]).
    pub t: Tensor,
    /// The logical torch dtype.
    pub dtype: TDType,
}

impl T {
    /// Shape.
    pub fn dims(&self) -> &[usize] {
        self.t.dims()
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.t.rank()
    }

    /// Calls `f` with all values as f64, row-major: a contiguous float64
    /// host tensor lends its own storage; any other is converted first
    /// ([`T::to_f64_vec`]). The judge reads every bench output and gradient
    /// this way: a copy of each, and of each loss gradient, was a full
    /// float64 tensor more per row at a call's peak.
    pub fn with_f64<R>(&self, f: impl FnOnce(&[f64]) -> R) -> Result<R> {
        match self.with_host_slice::<f64, _, _>(f) {
            Ok(r) => Ok(r),
            Err(f) => Ok(f(&self.to_f64_vec()?)),
        }
    }

    /// `f` of the tensor's own storage when it is a contiguous host tensor
    /// stored as `D`; `f` back otherwise.
    fn with_host_slice<D: candle_core::WithDType, R, F: FnOnce(&[D]) -> R>(&self, f: F) -> std::result::Result<R, F> {
        if self.t.dtype() != D::DTYPE {
            return Err(f);
        }
        let (storage, layout) = self.t.storage_and_layout();
        match (&*storage, layout.contiguous_offsets()) {
            (candle_core::Storage::Cpu(s), Some((start, end))) => match s.as_slice::<D>() {
                Ok(all) => Ok(f(&all[start..end])),
                Err(_) => Err(f),
            },
            _ => Err(f),
        }
    }

    /// All values as f64, row-major: a float32 tensor widened in one pass,
    /// from its own storage where it is a contiguous host tensor (an
    /// emulated device's output or gradient: the judge widens each).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        if let Ok(v) = self.with_host_slice::<f32, _, _>(|all: &[f32]| all.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>()) {
            return Ok(v);
        }
        let flat = self.t.flatten_all()?;
        Ok(match flat.dtype() {
            DType::F32 => flat.to_vec1::<f32>()?.into_iter().map(f64::from).collect(),
            _ => flat.to_dtype(DType::F64)?.to_vec1::<f64>()?,
        })
    }

    /// [`T::from_f64`] of values that are already `dtype`'s own (read from a
    /// file of that dtype): the same tensor, without rounding them again.
    pub fn from_exact_f64(values: Vec<f64>, shape: &[usize], dtype: TDType, compute: DType, device: &Device) -> Result<T> {
        let t = Tensor::from_vec(values, shape, device)?.to_dtype(storage(dtype, compute))?;
        Ok(T { t, dtype })
    }

    /// Builds a tensor from f64 values, rounded to `dtype`, stored as a run
    /// whose floats compute in `compute` stores it ([`storage`]:
    /// integers and bools stay f64), on `device`.
    pub fn from_f64(values: Vec<f64>, shape: &[usize], dtype: TDType, compute: DType, device: &Device) -> Result<T> {
        let t = Tensor::from_vec(values, shape, device)?;
        let stored = storage(dtype, compute);
        // Rounded to the dtype first, so both sides start from the same numbers.
        let t = match dtype.rounding() {
            Some(r) => t.to_dtype(r)?.to_dtype(stored)?,
            None => t.to_dtype(stored)?,
        };
        Ok(T { t, dtype })
    }
}

/// An argument or result value.
#[derive(Debug, Clone)]
pub enum Value {
    /// A tensor.
    Tensor(T),
    /// Python int.
    Int(i64),
    /// Python float.
    Float(f64),
    /// Python bool.
    Bool(bool),
    /// Python str.
    Str(String),
    /// A dtype argument.
    DType(TDType),
    /// `slice(start, stop, step)`.
    Slice(Option<i64>, Option<i64>, Option<i64>),
    /// `...`.
    Ellipsis,
    /// A list or tuple.
    List(Vec<Value>),
    /// None (also what unsupported dump values replay as).
    None,
}

impl Value {
    /// A short description for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Tensor(_) => "tensor",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::Str(_) => "str",
            Value::DType(_) => "dtype",
            Value::Slice(..) => "slice",
            Value::Ellipsis => "ellipsis",
            Value::List(_) => "list",
            Value::None => "None",
        }
    }

    /// The tensor inside, or an error naming what was found.
    pub fn tensor(&self, what: &str) -> Result<&T> {
        match self {
            Value::Tensor(t) => Ok(t),
            v => Err(Error::Arg(format!("{what}: expected a tensor, got {}", v.kind()))),
        }
    }

    /// A Python number as f64 (bool counts as 0/1).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(x) => Some(*x),
            Value::Bool(b) => Some(*b as i64 as f64),
            _ => None,
        }
    }

    /// A Python int (bool counts).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
}

/// The candle dtype a tensor of logical `dtype` is stored in when floats
/// compute in `compute`: `compute` for floating dtypes, f64 for integer and
/// bool dtypes. So integer arithmetic is exact on the emulated device too,
/// as on a real one, not done in f32: exact while every value and
/// intermediate stays within ±2^53, f64's integer range; int64 values beyond
/// it are rounded, and integer overflow does not wrap around as in torch.
pub fn storage(dtype: TDType, compute: DType) -> DType {
    if dtype.is_float() {
        compute
    } else {
        DType::F64
    }
}
