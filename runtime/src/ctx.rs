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
    /// Emulated device: floating tensors computed in f32 (f64 for float64
    /// calls), every floating result rounded once to its dtype, as device
    /// kernels do; integer and bool tensors computed exactly (see [`Ctx::storage`]).
    Device,
}

/// How one run computes.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// Bench or device.
    pub side: Side,
    /// Storage and compute precision of floating tensors (integer and bool
    /// tensors are always f64, see [`Ctx::storage`]).
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

    /// The candle dtype a tensor of logical `dtype` is stored and computed
    /// in: [`Ctx::compute`] for floating dtypes, f64 for integers and bools
    /// on both sides (see [`storage`]).
    pub fn storage(&self, dtype: TDType) -> DType {
        storage(dtype, self.compute)
    }

    /// `t` in the storage of `dtype`, rounded to `dtype` on the device side
    /// (in one step from `t`'s own precision, so never rounded twice).
    fn stored(&self, t: &Tensor, dtype: TDType) -> Result<Tensor> {
        let storage = self.storage(dtype);
        Ok(match (self.side, dtype.rounding()) {
            (Side::Device, Some(r)) if r != storage => t.to_dtype(r)?.to_dtype(storage)?,
            _ => t.to_dtype(storage)?,
        })
    }

    /// An op result: rounded to `dtype` on the device side.
    pub fn out(&self, t: Tensor, dtype: TDType) -> Result<T> {
        Ok(T { t: self.stored(&t, dtype)?, dtype })
    }

    /// An explicit cast (`.to(dtype)`, `.float()`, a `dtype=` argument).
    /// To a floating dtype it rounds on the device side only: the bench
    /// stays float64 throughout and just relabels the tensor, so it never
    /// computes in a lowered precision. To an integer dtype it truncates
    /// toward zero and to bool it tests for nonzero, on both sides, since
    /// that is the cast's meaning, not a loss of precision.
    pub fn cast(&self, x: &T, dtype: TDType) -> Result<T> {
        let t = match dtype.category() {
            Category::Float => self.stored(&x.t, dtype)?,
            // Float to integer truncates toward zero, like torch.
            Category::Int if x.dtype.is_float() => {
                let pos = x.t.ge(0.0)?;
                pos.where_cond(&x.t.floor()?, &x.t.ceil()?)?.to_dtype(self.storage(dtype))?
            }
            Category::Int => x.t.to_dtype(self.storage(dtype))?,
            Category::Bool => x.t.ne(0.0)?.to_dtype(self.storage(dtype))?,
            Category::Complex => return Err(Error::Unsupported(format!("a cast to {} (the runtime computes no complex dtype)", dtype.name()))),
        };
        Ok(T { t, dtype })
    }

    /// A tensor of `shape` filled with `v`, in the storage of `dtype`
    /// (not rounded: [`Ctx::out`] does that).
    pub fn full(&self, shape: &[usize], v: f64, dtype: TDType) -> Result<Tensor> {
        Ok((Tensor::ones(shape, self.storage(dtype), &Device::Cpu)? * v)?)
    }

    /// A 0-d tensor holding `v`, in the storage of `dtype` (not rounded to
    /// it: torch's kernels take a Python scalar in their compute precision).
    pub fn scalar(&self, v: f64, dtype: TDType) -> Result<Tensor> {
        Ok(Tensor::new(v, &Device::Cpu)?.to_dtype(self.storage(dtype))?)
    }
}

/// The candle dtype a tensor of logical `dtype` is stored in when floats
/// compute in `compute`: `compute` for floating dtypes, f64 for integer and
/// bool dtypes. So integer arithmetic is exact on the emulated device too
/// (as on a real one), not done in f32: exact while every value and
/// intermediate stays within ±2^53, f64's integer range; int64 values beyond
/// it are rounded, and integer overflow does not wrap around as in torch.
pub fn storage(dtype: TDType, compute: DType) -> DType {
    if dtype.is_float() {
        compute
    } else {
        DType::F64
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

/// An operand of an op that computes in `dtype` (its result type), in the
/// storage of `dtype`. A tensor of another dtype is cast to `dtype` first,
/// as torch casts operands to their common dtype (on the device side an
/// int64 tensor added to a float16 one is rounded to float16 first); a
/// Python number becomes a 0-d tensor, not rounded (see [`Ctx::scalar`]).
pub fn operand(ctx: &Ctx, v: &Value, dtype: TDType) -> Result<Tensor> {
    match v {
        Value::Tensor(t) if t.dtype == dtype => Ok(t.t.to_dtype(ctx.storage(dtype))?),
        Value::Tensor(t) => Ok(ctx.cast(t, dtype)?.t),
        v => match v.as_f64() {
            Some(x) => ctx.scalar(x, dtype),
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
