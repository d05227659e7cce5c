//! The precision a replay runs in, and the torch-semantics helpers every op
//! uses: promotion, broadcasting, dims, rounding of results.

use candle_core::{DType, Device, Tensor};

use crate::dtype::{Category, TDType};
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// Which side of the comparison a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// High-precision reference: everything in f64, results not rounded.
    Bench,
    /// Emulated device: computed in f32 (f64 for float64 calls), every
    /// result rounded once to its dtype, as device kernels do.
    Device,
}

/// How one run computes.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// Bench or device.
    pub side: Side,
    /// Storage and compute precision of every tensor.
    pub compute: DType,
    /// Seed of random ops (dropout): the same on both sides.
    pub seed: u64,
    /// Dropout's keep mask, when a tensor dump recorded the op's output.
    pub keep_mask: Option<std::sync::Arc<Vec<bool>>>,
}

impl Ctx {
    /// The bench context.
    pub fn bench(seed: u64) -> Ctx {
        Ctx { side: Side::Bench, compute: DType::F64, seed, keep_mask: None }
    }

    /// The device context for calls whose widest float is `widest`.
    pub fn device(widest: TDType, seed: u64) -> Ctx {
        let compute = if widest == TDType::F64 { DType::F64 } else { DType::F32 };
        Ctx { side: Side::Device, compute, seed, keep_mask: None }
    }

    /// An op result: rounded to `dtype` on the device side.
    pub fn out(&self, t: Tensor, dtype: TDType) -> Result<T> {
        let t = t.to_dtype(self.compute)?;
        let t = match (self.side, dtype.rounding()) {
            (Side::Device, Some(r)) if r != self.compute => t.to_dtype(r)?.to_dtype(self.compute)?,
            _ => t,
        };
        Ok(T { t, dtype })
    }

    /// An explicit cast (`.to(dtype)`, `.float()`): applied on both sides,
    /// since the cast is the op's meaning, not a loss of precision.
    pub fn cast(&self, x: &T, dtype: TDType) -> Result<T> {
        let t = match dtype.category() {
            Category::Float => match dtype.rounding() {
                Some(r) if r != self.compute => x.t.to_dtype(r)?.to_dtype(self.compute)?,
                _ => x.t.clone(),
            },
            // Float to integer truncates toward zero, like torch.
            Category::Int if x.dtype.is_float() => {
                let pos = x.t.ge(0.0)?;
                pos.where_cond(&x.t.floor()?, &x.t.ceil()?)?
            }
            Category::Int => x.t.clone(),
            Category::Bool => x.t.ne(0.0)?.to_dtype(self.compute)?,
            Category::Complex => return Err(Error::Unsupported(format!("a cast to {} (the runtime computes no complex dtype)", dtype.name()))),
        };
        Ok(T { t, dtype })
    }

    /// A tensor of `shape` filled with `v`.
    pub fn full(&self, shape: &[usize], v: f64) -> Result<Tensor> {
        Ok((Tensor::ones(shape, self.compute, &Device::Cpu)? * v)?)
    }

    /// A 0-d tensor holding `v`.
    pub fn scalar(&self, v: f64) -> Result<Tensor> {
        Ok(Tensor::new(v, &Device::Cpu)?.to_dtype(self.compute)?)
    }
}

/// torch.result_type over operands: dimensioned tensors outrank 0-d
/// tensors, which outrank Python scalars, unless a lower group has a
/// higher category (int tensor + float scalar -> float32).
pub fn result_type(operands: &[&Value]) -> Result<TDType> {
    let mut dim: Option<TDType> = None;
    let mut zero: Option<TDType> = None;
    let mut scalar: Option<Category> = None;
    for v in operands {
        match v {
            Value::Tensor(t) if t.rank() > 0 => dim = Some(dim.map_or(t.dtype, |d| TDType::promote(d, t.dtype))),
            Value::Tensor(t) => zero = Some(zero.map_or(t.dtype, |d| TDType::promote(d, t.dtype))),
            Value::Bool(_) => scalar = Some(scalar.map_or(Category::Bool, |c| c.max(Category::Bool))),
            Value::Int(_) => scalar = Some(scalar.map_or(Category::Int, |c| c.max(Category::Int))),
            Value::Float(_) => scalar = Some(Category::Float),
            other => return Err(Error::Arg(format!("expected a tensor or a number, got {}", other.kind()))),
        }
    }
    let cat = |d: Option<TDType>| d.map(TDType::category);
    let top = [cat(dim), cat(zero), scalar].into_iter().flatten().max().unwrap_or(Category::Float);
    Ok(match (dim, zero) {
        (Some(d), _) if d.category() >= top => d,
        (_, Some(z)) if z.category() >= top => z,
        _ => match top {
            Category::Float => TDType::F32,
            Category::Int => TDType::I64,
            Category::Bool => TDType::Bool,
            Category::Complex => TDType::C64,
        },
    })
}

/// A tensor operand in compute precision (scalars become 0-d tensors).
pub fn operand(ctx: &Ctx, v: &Value) -> Result<Tensor> {
    match v {
        Value::Tensor(t) => Ok(t.t.clone()),
        v => match v.as_f64() {
            Some(x) => ctx.scalar(x),
            None => Err(Error::Arg(format!("expected a tensor or a number, got {}", v.kind()))),
        },
    }
}

/// Broadcast shape of two shapes (numpy rules).
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return Err(Error::Arg(format!("shapes {a:?} and {b:?} do not broadcast"))),
        };
    }
    Ok(out)
}

/// Both operands broadcast to their common shape.
pub fn broadcast2(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let shape = broadcast_shape(a.dims(), b.dims())?;
    Ok((a.broadcast_as(shape.as_slice())?, b.broadcast_as(shape.as_slice())?))
}

/// A dim index with Python's negative indexing, checked against `rank`
/// (a 0-d tensor accepts 0 and -1, as in torch).
pub fn dim(d: i64, rank: usize) -> Result<usize> {
    let r = rank.max(1) as i64;
    let i = if d < 0 { d + r } else { d };
    if i < 0 || i >= r {
        return Err(Error::Arg(format!("dim {d} out of range for a tensor of rank {rank}")));
    }
    Ok(i as usize)
}
