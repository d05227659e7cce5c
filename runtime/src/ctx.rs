//! The precision a replay runs in, and the torch-semantics helpers every op
//! uses: promotion, broadcasting, dims, rounding of results.

use candle_core::{DType, Device, Tensor};

use crate::device;
use crate::dtype::{Category, TDType};
use crate::error::{Error, Result};
use crate::value::{storage, Value, T};

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
    /// Where the run computes ([`crate::device::for_side`]).
    pub device: Device,
    /// Seed of random ops (dropout): the same on both sides.
    pub seed: u64,
    /// Dropout's keep mask, when a tensor dump recorded the op's output.
    pub keep_mask: Option<std::sync::Arc<Vec<bool>>>,
    /// The most elements an op may create from its integer arguments
    /// (`ones(2**31, 2**31)`, `arange(1e12)`): the replay's tensor size limit.
    pub max_elements: usize,
    /// The parameters whose tensors are complex, held as float pairs of
    /// their parts' dtype in a trailing dimension of 2 (a complex call
    /// lowered by the replay; `crate::ops::complex`). Empty for real calls.
    pub complex: Vec<String>,
    /// The parameters whose gradient the dump recorded transposed, in a
    /// file (an autograd node took `weight.t()`): a kernel that can write
    /// such a gradient in that layout for free returns it as a transposed
    /// view of a contiguous tensor, so mapping it into the recorded layout
    /// ([`crate::grad_layout::Transform::apply`]) copies nothing. The
    /// values are the same either way (where the plan emulates the row
    /// after all, the judge reads the view through candle's strided copy).
    /// Empty outside a replay of recorded gradients.
    pub transposed_grads: Vec<String>,
}

impl Ctx {
    /// The bench context.
    pub fn bench(seed: u64) -> Ctx {
        Ctx {
            side: Side::Bench,
            compute: DType::F64,
            device: device::for_side(Side::Bench).device(),
            seed,
            keep_mask: None,
            max_elements: usize::MAX,
            complex: vec![],
            transposed_grads: vec![],
        }
    }

    /// The rounding probe: computed in float32 like the emulated device,
    /// but results not rounded to their dtype (a float16 or bfloat16 op's
    /// float32 accumulation, as it is before the output is stored). The
    /// `bound` standard measures an op's own rounding with it.
    pub fn probe(seed: u64) -> Ctx {
        Ctx {
            side: Side::Bench,
            compute: DType::F32,
            device: device::for_side(Side::Bench).device(),
            seed,
            keep_mask: None,
            max_elements: usize::MAX,
            complex: vec![],
            transposed_grads: vec![],
        }
    }

    /// The device context for calls whose widest float is `widest`.
    pub fn device(widest: TDType, seed: u64) -> Ctx {
        let compute = if widest == TDType::F64 { DType::F64 } else { DType::F32 };
        Ctx {
            side: Side::Device,
            compute,
            device: device::for_side(Side::Device).device(),
            seed,
            keep_mask: None,
            max_elements: usize::MAX,
            complex: vec![],
            transposed_grads: vec![],
        }
    }

    /// Whether parameter `name` holds a complex tensor as float pairs ([`Ctx::complex`]).
    pub fn is_complex(&self, name: &str) -> bool {
        self.complex.iter().any(|c| c == name)
    }

    /// Whether parameter `name`'s gradient was recorded transposed ([`Ctx::transposed_grads`]).
    pub fn grad_transposed(&self, name: &str) -> bool {
        self.transposed_grads.iter().any(|p| p == name)
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
        Ok(match self.rounding_step(dtype) {
            Some(r) => t.to_dtype(r)?.to_dtype(storage)?,
            None => t.to_dtype(storage)?,
        })
    }

    /// The dtype a result of `dtype` is rounded to on its way to storage:
    /// on the device side, a dtype narrower than its storage.
    fn rounding_step(&self, dtype: TDType) -> Option<DType> {
        match (self.side, dtype.rounding()) {
            (Side::Device, Some(r)) if r != self.storage(dtype) => Some(r),
            _ => None,
        }
    }

    /// Whether [`Ctx::out`] gives `t` back as it is for a result of
    /// `dtype` (no cast, no rounding step): its gradient then reaches `t`
    /// unchanged too.
    pub fn keeps(&self, t: &Tensor, dtype: TDType) -> bool {
        self.rounding_step(dtype).is_none() && t.dtype() == self.storage(dtype)
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
            // Float to integer truncates toward zero, like torch. Values out
            // of range (±inf, overflow) are undefined in torch: they saturate
            // to the dtype's bounds and NaN becomes 0, as on aarch64 hosts
            // and in Rust (`-inf` gives int64's minimum on x86 too).
            Category::Int if x.dtype.is_float() => {
                let (lo, hi) = dtype.int_range().expect("an integer dtype has a range");
                let pos = x.t.ge(0.0)?;
                let truncated = pos.where_cond(&x.t.floor()?, &x.t.ceil()?)?.clamp(lo, hi)?;
                let nan = x.t.ne(&x.t)?;
                nan.where_cond(&truncated.zeros_like()?, &truncated)?.to_dtype(self.storage(dtype))?
            }
            Category::Int => x.t.to_dtype(self.storage(dtype))?,
            Category::Bool => x.t.ne(0.0)?.to_dtype(self.storage(dtype))?,
            Category::Complex => {
                return Err(Error::Unsupported(format!(
                    "a cast to {} (complex tensors are computed only by the complex entries, as float pairs)",
                    dtype.name()
                )))
            }
        };
        Ok(T { t, dtype })
    }

    /// Refuses a shape over [`Ctx::max_elements`] (or whose element count
    /// overflows) before anything is allocated.
    pub fn fits(&self, shape: &[usize]) -> Result<()> {
        match crate::limits::element_count(shape) {
            Some(n) if n <= self.max_elements => Ok(()),
            _ => Err(Error::Unsupported(format!("a result of shape {shape:?} is over the tensor size limit ({} elements)", self.max_elements))),
        }
    }

    /// A tensor of `shape` filled with `v`, in the storage of `dtype`
    /// (not rounded: [`Ctx::out`] does that).
    pub fn full(&self, shape: &[usize], v: f64, dtype: TDType) -> Result<Tensor> {
        self.fits(shape)?;
        Ok((Tensor::ones(shape, self.storage(dtype), &self.device)? * v)?)
    }

    /// A 0-d tensor holding `v`, in the storage of `dtype` (not rounded to
    /// it: torch's kernels take a Python scalar in their compute precision).
    pub fn scalar(&self, v: f64, dtype: TDType) -> Result<Tensor> {
        Ok(Tensor::new(v, &self.device)?.to_dtype(self.storage(dtype))?)
    }
}

/// `t` widened to f64, for the inside of an elementwise function that a
/// device computes as one kernel (sigmoid, silu, gelu, pow, the fused
/// multiply-adds of lerp and addcmul): its result is then the exact value rounded once
/// by [`Ctx::out`], as an accurate kernel gives, not a chain of float32
/// roundings (which lose a few ulps, and every digit where gelu's
/// 1 + erf(x) cancels). A no-op on the bench.
pub fn precise(t: &Tensor) -> candle_core::Result<Tensor> {
    t.to_dtype(DType::F64)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Framework;

    /// Runs `api` forward on `ctx` and returns its first output.
    fn run(ctx: &Ctx, api: &str, args: Vec<Value>, kwargs: Vec<(&str, Value)>) -> T {
        let op = crate::ops::lookup(Framework::PyTorch, api).unwrap();
        let kwargs = kwargs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let out = crate::exec::run(op, api, args, kwargs, &[], None, ctx).unwrap();
        match out.outputs.into_iter().next() {
            Some(Value::Tensor(t)) => t,
            other => panic!("{api} returned {other:?}"),
        }
    }

    fn tensor(ctx: &Ctx, values: &[f64], dtype: TDType) -> Value {
        Value::Tensor(T::from_f64(values.to_vec(), &[values.len()], dtype, ctx.compute, &ctx.device).unwrap())
    }

    fn values(t: &T) -> Vec<f64> {
        t.to_f64_vec().unwrap()
    }

    const NEAR_1E9: [f64; 4] = [1_000_000_001.0, 999_999_999.0, -1_000_000_007.0, 1_073_741_823.0];

    #[test]
    fn integer_arithmetic_is_exact_on_the_device() {
        for (widest, dtype) in [(TDType::F32, TDType::I64), (TDType::F32, TDType::I32), (TDType::F16, TDType::I64), (TDType::F64, TDType::I64)] {
            let ctx = Ctx::device(widest, 0);
            let other = [7.0, 1_000_000_003.0, -3.0, 1.0];
            let (a, b) = (tensor(&ctx, &NEAR_1E9, dtype), tensor(&ctx, &other, dtype));
            let exact = |f: fn(f64, f64) -> f64| NEAR_1E9.iter().zip(&other).map(|(&x, &y)| f(x, y)).collect::<Vec<f64>>();
            let add = run(&ctx, "Torch.add", vec![a.clone(), b.clone()], vec![]);
            assert_eq!((values(&add), add.dtype), (exact(|x, y| x + y), dtype), "{dtype:?} add");
            let sub = run(&ctx, "Torch.sub", vec![a.clone(), b.clone()], vec![]);
            assert_eq!(values(&sub), exact(|x, y| x - y), "{dtype:?} sub");
            let mul = run(&ctx, "Torch.mul", vec![a.clone(), tensor(&ctx, &[2.0, -1.0, 1.0, 2.0], dtype)], vec![]);
            assert_eq!(values(&mul), vec![2_000_000_002.0, -999_999_999.0, -1_000_000_007.0, 2_147_483_646.0], "{dtype:?} mul");
            if dtype == TDType::I64 {
                // Products up to ~9e15, within f64's exact integers.
                let mul = run(&ctx, "Torch.mul", vec![a.clone(), tensor(&ctx, &[3.0, -5.0, 8_999_999.0, 2.0], dtype)], vec![]);
                assert_eq!(values(&mul), vec![3_000_000_003.0, -4_999_999_995.0, -8_999_999_062_999_993.0, 2_147_483_646.0], "{dtype:?} mul");
            }
            let scaled = run(&ctx, "Torch.add", vec![a.clone(), Value::Int(1)], vec![("alpha", Value::Int(3))]);
            assert_eq!(values(&scaled), NEAR_1E9.iter().map(|x| x + 3.0).collect::<Vec<_>>(), "{dtype:?} add alpha");
            let sum = run(&ctx, "Torch.sum", vec![a.clone()], vec![]);
            assert_eq!((values(&sum), sum.dtype), (vec![NEAR_1E9.iter().sum()], TDType::I64), "{dtype:?} sum");
            let cumsum = run(&ctx, "Torch.cumsum", vec![a], vec![("dim", Value::Int(0))]);
            assert_eq!(values(&cumsum)[3], NEAR_1E9.iter().sum::<f64>(), "{dtype:?} cumsum");
        }
    }

    #[test]
    fn float_results_are_still_rounded_to_their_dtype() {
        let ctx = Ctx::device(TDType::F32, 0);
        // 1 + 2^-30 is not a float32: the device gives 1, the bench keeps it.
        let (a, b) = (tensor(&ctx, &[1.0, 3.0], TDType::F32), tensor(&ctx, &[2f64.powi(-30), 0.1], TDType::F32));
        let sum = run(&ctx, "Torch.add", vec![a, b], vec![]);
        assert_eq!(values(&sum), vec![1.0, (3.0f32 + 0.1f32) as f64]);
        let bench = Ctx::bench(0);
        let sum = run(&bench, "Torch.add", vec![tensor(&bench, &[1.0], TDType::F32), tensor(&bench, &[2f64.powi(-30)], TDType::F32)], vec![]);
        assert_eq!(values(&sum), vec![1.0 + 2f64.powi(-30)]);
        // float16: computed in f32, rounded once (1 + 2^-11 ties to 1).
        let ctx = Ctx::device(TDType::F16, 0);
        let sum =
            run(&ctx, "Torch.add", vec![tensor(&ctx, &[1.0, 1.0], TDType::F16), tensor(&ctx, &[2f64.powi(-11), 3.0 * 2f64.powi(-11)], TDType::F16)], vec![]);
        assert_eq!((values(&sum), sum.dtype), (vec![1.0, 1.0 + 2.0 * 2f64.powi(-10)], TDType::F16));
    }

    #[test]
    fn mixed_integer_and_float_operands_promote_like_torch() {
        let ctx = Ctx::device(TDType::F16, 0);
        // torch: int64 2049 becomes float16 2048 before the product.
        let prod = run(&ctx, "Torch.mul", vec![tensor(&ctx, &[2049.0], TDType::I64), tensor(&ctx, &[3.0], TDType::F16)], vec![]);
        assert_eq!((values(&prod), prod.dtype), (vec![6144.0], TDType::F16));
        // int tensor + Python float -> float32; the int is rounded to float32.
        let ctx = Ctx::device(TDType::F32, 0);
        let sum = run(&ctx, "Torch.add", vec![tensor(&ctx, &[1_000_000_001.0], TDType::I64), Value::Float(0.5)], vec![]);
        assert_eq!((values(&sum), sum.dtype), (vec![1e9], TDType::F32));
        // int64 / int64 -> float32 on the device, exact floor division.
        let q = run(
            &ctx,
            "Torch.div",
            vec![tensor(&ctx, &NEAR_1E9, TDType::I64), tensor(&ctx, &[7.0; 4], TDType::I64)],
            vec![("rounding_mode", Value::Str("floor".into()))],
        );
        assert_eq!(values(&q), NEAR_1E9.iter().map(|x| (x / 7.0).floor()).collect::<Vec<_>>());
    }

    #[test]
    fn float_casts_round_on_the_device_only() {
        let third = 1.0 / 3.0;
        let (bench, device) = (Ctx::bench(0), Ctx::device(TDType::F32, 0));
        for api in ["Tensor.half", "Tensor.bfloat16", "Tensor.float"] {
            let b = run(&bench, api, vec![tensor(&bench, &[third, 70000.0], TDType::F64)], vec![]);
            assert_eq!(values(&b), vec![third, 70000.0], "{api} on the bench");
        }
        let d = run(&device, "Tensor.half", vec![tensor(&device, &[third, 70000.0], TDType::F32)], vec![]);
        assert_eq!((values(&d), d.dtype), (vec![half::f16::from_f64(third).to_f64(), f64::INFINITY], TDType::F16));
        let d = run(&device, "Tensor.to", vec![tensor(&device, &[third], TDType::F32), Value::DType(TDType::BF16)], vec![]);
        assert_eq!((values(&d), d.dtype), (vec![half::bf16::from_f64(third).to_f64()], TDType::BF16));
        // dtype= arguments: the bench computes in float64 and only relabels.
        let x = [0.1, 0.2, third];
        let exps: Vec<f64> = x.iter().map(|v: &f64| v.exp()).collect();
        let total: f64 = exps.iter().sum();
        for api in ["Functional.softmax", "Torch.softmax"] {
            let s = run(&bench, api, vec![tensor(&bench, &x, TDType::F64)], vec![("dim", Value::Int(-1)), ("dtype", Value::DType(TDType::F16))]);
            assert_eq!(s.dtype, TDType::F16);
            for (got, e) in values(&s).iter().zip(&exps) {
                assert!((got - e / total).abs() < 1e-15, "{api}: {got} vs {}", e / total);
            }
        }
        let s = run(&bench, "Torch.sum", vec![tensor(&bench, &x, TDType::F64)], vec![("dtype", Value::DType(TDType::F16))]);
        assert_eq!((values(&s), s.dtype), (vec![0.1 + 0.2 + third], TDType::F16));
        let m = run(&bench, "Torch.mean", vec![tensor(&bench, &[1.0, 2.0, 1_000_000_001.0], TDType::I64)], vec![("dtype", Value::DType(TDType::BF16))]);
        assert!((values(&m)[0] - 1_000_000_004.0 / 3.0).abs() < 1e-6, "{:?}", values(&m));
        let c = run(&bench, "Torch.cumsum", vec![tensor(&bench, &x, TDType::F64), Value::Int(0)], vec![("dtype", Value::DType(TDType::F16))]);
        assert_eq!(values(&c)[2], 0.1 + 0.2 + third);
        // The device rounds the cast input and the result.
        let s = run(&device, "Torch.sum", vec![tensor(&device, &x, TDType::F32)], vec![("dtype", Value::DType(TDType::F16))]);
        let h = |v: f64| half::f16::from_f64(v).to_f64();
        assert_eq!(values(&s), vec![h(h(0.1) + h(0.2) + h(third))]);
        // Integer and bool casts are the same on both sides.
        for ctx in [&bench, &device] {
            let i = run(ctx, "Tensor.long", vec![tensor(ctx, &[-2.7, 2.7, 1e9], TDType::F32)], vec![]);
            assert_eq!((values(&i), i.dtype), (vec![-2.0, 2.0, 1e9], TDType::I64));
            let b = run(ctx, "Tensor.bool", vec![tensor(ctx, &[0.0, -0.5], TDType::F32)], vec![]);
            assert_eq!((values(&b), b.dtype), (vec![0.0, 1.0], TDType::Bool));
        }
    }
}
