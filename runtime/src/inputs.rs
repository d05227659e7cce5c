//! Turning specs into values: seeded random data from the dumped range, or
//! the dumped tensor files, rounded to the dumped dtype for both sides.
//! Sizes are the caller's to bound ([`crate::limits`]; `replay` checks
//! every tensor before realizing any); counts here are overflow-checked, and
//! a tensor file is read only when its header has the dumped shape.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::ctx::Ctx;
use crate::dtype::{Category, TDType};
use crate::error::{Error, Result};
use crate::io::{read_tensor_shaped, HostData};
use crate::limits::element_count;
use crate::spec::{DataMode, Spec, TensorSpec};
use candle_core::{DType, Tensor};

use crate::value::{Value, T};

/// A tensor's values as f64, shared by both sides.
#[derive(Debug, Clone)]
pub struct Master {
    /// Row-major values.
    pub values: Vec<f64>,
    /// Shape.
    pub shape: Vec<usize>,
    /// Logical dtype.
    pub dtype: TDType,
    /// The dtype of the file the values were read from (`None`: random
    /// data). When it is [`Master::dtype`], every value is already one of
    /// the dtype's, and rounding it to the dtype again changes nothing.
    pub read_as: Option<TDType>,
    /// The tensor made from the values once per storage dtype on the host
    /// (float64, float32): every run of the call (the bench, the device,
    /// the rounding magnitudes' dozens of reruns) shares it instead of
    /// copying and rounding the values again. candle's tensors are
    /// immutable, and a variable of the backward is a copy; the values and
    /// dtype are only adjusted before the first run (`replay::call`).
    made: [std::sync::OnceLock<Tensor>; 2],
}

impl Master {
    /// The values of a tensor of `shape` and logical `dtype` (`read_as`: see the field).
    pub fn new(values: Vec<f64>, shape: Vec<usize>, dtype: TDType, read_as: Option<TDType>) -> Master {
        Master { values, shape, dtype, read_as, made: Default::default() }
    }

    /// Hands the values of an exact float tensor (read from a file of its
    /// dtype) to its float64 tensor, which then stands for them: a real-data
    /// input held its values twice, as a `Vec` and as the bench's tensor.
    /// Called once the call's adjustments are done and before its first
    /// run; the values are not read after it (tensors of other storage
    /// dtypes are made from that tensor).
    pub fn settle(&mut self) -> Result<()> {
        let f64_bench = crate::value::storage(self.dtype, DType::F64) == DType::F64;
        if !self.is_exact() || !self.dtype.is_float() || !f64_bench || self.made[0].get().is_some() {
            return Ok(());
        }
        let values = std::mem::take(&mut self.values);
        let t = Tensor::from_vec(values, self.shape.as_slice(), &crate::device::host())?;
        let _ = self.made[0].set(t);
        Ok(())
    }

    /// Whether the values are the dtype's own (read from a file of that dtype).
    pub fn is_exact(&self) -> bool {
        self.read_as == Some(self.dtype)
    }

    /// The float64 tensor the values went to ([`Master::settle`]).
    fn settled(&self) -> Option<&Tensor> {
        self.made[0].get().filter(|_| self.values.is_empty() && self.shape.iter().product::<usize>() > 0)
    }

    /// The tensor on `ctx`'s side: rounded to the dtype (unless exact), in
    /// the side's storage ([`crate::value::storage`]).
    pub fn on(&self, ctx: &Ctx) -> Result<T> {
        let make = || match (self.is_exact(), self.settled()) {
            (true, Some(t)) => Ok(T { t: t.to_device(&ctx.device)?.to_dtype(crate::value::storage(self.dtype, ctx.compute))?, dtype: self.dtype }),
            (true, None) => T::from_exact_f64(self.values.clone(), &self.shape, self.dtype, ctx.compute, &ctx.device),
            (false, _) => T::from_f64(self.values.clone(), &self.shape, self.dtype, ctx.compute, &ctx.device),
        };
        let slot = match crate::value::storage(self.dtype, ctx.compute) {
            DType::F64 => 0,
            DType::F32 => 1,
            _ => return make(),
        };
        if !ctx.device.is_cpu() {
            return make();
        }
        if let Some(t) = self.made[slot].get() {
            return Ok(T { t: t.clone(), dtype: self.dtype });
        }
        let t = make()?;
        let _ = self.made[slot].set(t.t.clone());
        Ok(t)
    }
}

fn int_range(d: TDType) -> (f64, f64) {
    match d {
        TDType::U8 => (0.0, 255.0),
        TDType::I8 => (-128.0, 127.0),
        TDType::I16 => (-32768.0, 32767.0),
        TDType::U16 => (0.0, 65535.0),
        TDType::I32 => (-2147483648.0, 2147483647.0),
        TDType::U32 => (0.0, 4294967295.0),
        _ => (-9.007e15, 9.007e15),
    }
}

/// Uniform values in the dumped [Min, Max] with Min and Max placed first and
/// last; non-finite statistics put that value into the tensor (an infinite
/// Max last, an infinite Min first, a NaN in the middle), as the Python
/// scripts do. `stream` is (seed, iteration, ordinal): every tensor and
/// iteration gets its own reproducible stream. A shape whose element count
/// overflows is an input error.
fn random_values(spec: &TensorSpec, stream: (u64, u64, u64)) -> Result<Vec<f64>> {
    let n = element_count(&spec.shape).ok_or_else(|| Error::Input(format!("shape {:?}: the element count overflows", spec.shape)))?;
    let mut rng = ChaCha8Rng::seed_from_u64(stream.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ stream.1.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) ^ stream.2);
    if spec.dtype == TDType::Bool {
        return Ok(match (spec.low, spec.high) {
            (_, Some(0.0)) => vec![0.0; n],
            (Some(1.0), _) => vec![1.0; n],
            _ => (0..n).map(|_| rng.random_range(0..2) as f64).collect(),
        });
    }
    let is_int = spec.dtype.category() == Category::Int;
    let ranges = &crate::rulebook::get().random_data;
    let (mut low, mut high) = match (spec.low, spec.high) {
        (Some(l), Some(h)) => (l, h),
        _ if is_int => (ranges.int_without_stats[0], ranges.int_without_stats[1]),
        _ => (ranges.float_without_stats[0], ranges.float_without_stats[1]),
    };
    let mut specials: Vec<(usize, f64)> = vec![];
    if low.is_nan() || high.is_nan() {
        specials.push((n / 2, f64::NAN));
        (low, high) = (ranges.after_a_nan_stat[0], ranges.after_a_nan_stat[1]);
    }
    if high.is_infinite() {
        specials.push((n.saturating_sub(1), high));
        high = if low.is_finite() { low.abs() } else { 1.0 };
    }
    if low.is_infinite() {
        specials.push((0, low));
        low = -high.abs();
    }
    if low > high {
        std::mem::swap(&mut low, &mut high);
    }
    let mut values: Vec<f64> = if is_int {
        let (lo_lim, hi_lim) = int_range(spec.dtype);
        let (lo, hi) = (low.ceil().max(lo_lim), high.floor().min(hi_lim));
        let (lo, hi) = if lo > hi { (lo.min(hi_lim), lo.min(hi_lim)) } else { (lo, hi) };
        low = lo;
        high = hi;
        (0..n).map(|_| (lo + (rng.random::<f64>() * (hi - lo + 1.0)).floor()).min(hi)).collect()
    } else {
        let (mid, half) = (low / 2.0 + high / 2.0, high / 2.0 - low / 2.0);
        (0..n).map(|_| mid + half * (2.0 * rng.random::<f64>() - 1.0)).collect()
    };
    if n > 0 {
        values[0] = low;
        values[n - 1] = high;
        for (i, v) in specials {
            values[i] = v;
        }
    }
    Ok(values)
}

/// The values of one tensor spec.
pub fn master(spec: &TensorSpec, mode: DataMode, stream: (u64, u64, u64)) -> Result<Master> {
    if !spec.dtype.is_computable() {
        // The replay lowers a complex call to float pairs first (`replay::complex`).
        return Err(Error::Unsupported(format!("{} tensors are made only as float pairs of their parts", spec.dtype.name())));
    }
    let (values, read_as) = match mode {
        DataMode::Random => (random_values(spec, stream)?, None),
        DataMode::Real => {
            let path = spec.data.as_ref().ok_or_else(|| Error::Input("real data: this tensor has no data file in the dump".into()))?;
            let host = read_tensor_shaped(path, &spec.shape)?;
            let values = match host.data {
                HostData::F64(v) => v,
                HostData::I64(v) => v.into_iter().map(|x| x as f64).collect(),
                HostData::U64(v) => v.into_iter().map(|x| x as f64).collect(),
                HostData::Bool(v) => v.into_iter().map(|x| x as u8 as f64).collect(),
            };
            (values, Some(host.dtype))
        }
    };
    Ok(Master::new(values, spec.shape.clone(), spec.dtype, read_as))
}

/// Spec trees with their tensors realized once (shared by both sides).
#[derive(Debug, Clone)]
pub enum Realized {
    /// A tensor's values.
    Tensor(Master, Option<bool>),
    /// Anything else, as a value.
    Value(Value),
    /// A list.
    List(Vec<Realized>),
}

/// How many tensors of `spec` [`realize`] numbers (it adds as many to
/// `ordinal`): where the next spec's numbers start.
pub fn numbered(spec: &Spec) -> u64 {
    match spec {
        Spec::Tensor(_) => 1,
        Spec::List(items) => items.iter().map(numbered).sum(),
        _ => 0,
    }
}

/// Realizes every tensor of `spec`; `ordinal` numbers tensors across the call.
pub fn realize(spec: &Spec, mode: DataMode, seed: u64, iteration: u64, ordinal: &mut u64) -> Result<Realized> {
    Ok(match spec {
        Spec::Tensor(t) => {
            *ordinal += 1;
            Realized::Tensor(master(t, mode, (seed, iteration, *ordinal))?, t.requires_grad)
        }
        Spec::List(items) => Realized::List(items.iter().map(|s| realize(s, mode, seed, iteration, ordinal)).collect::<Result<_>>()?),
        Spec::Int(i) => Realized::Value(Value::Int(*i)),
        Spec::Float(x) => Realized::Value(Value::Float(*x)),
        Spec::Bool(b) => Realized::Value(Value::Bool(*b)),
        Spec::Str(s) => Realized::Value(Value::Str(s.clone())),
        Spec::DType(d) => Realized::Value(Value::DType(*d)),
        Spec::Slice(a, b, c) => Realized::Value(Value::Slice(*a, *b, *c)),
        Spec::Ellipsis => Realized::Value(Value::Ellipsis),
        Spec::None => Realized::Value(Value::None),
    })
}

impl Realized {
    /// The value for one side: tensors built in that side's precision.
    pub fn on(&self, ctx: &Ctx) -> Result<Value> {
        Ok(match self {
            Realized::Tensor(m, _) => Value::Tensor(m.on(ctx)?),
            Realized::Value(v) => v.clone(),
            Realized::List(items) => Value::List(items.iter().map(|r| r.on(ctx)).collect::<Result<_>>()?),
        })
    }

    /// The widest float dtype among the tensors here.
    pub fn widest_float(&self) -> Option<TDType> {
        match self {
            Realized::Tensor(m, _) if m.dtype.is_float() => Some(m.dtype),
            Realized::List(items) => items.iter().filter_map(Realized::widest_float).max_by_key(|d| d.bits()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `numbered` says how far `realize` moves the ordinal, so that a
    /// call's specs realized side by side draw the streams they would one
    /// after another: tensors count, nested in lists too; scalars do not.
    #[test]
    fn numbered_is_how_far_realize_moves_the_ordinal() {
        let tensor = || Spec::Tensor(TensorSpec { dtype: TDType::F32, shape: vec![2], low: Some(-1.0), high: Some(1.0), requires_grad: None, data: None });
        let specs =
            [tensor(), Spec::Int(3), Spec::None, Spec::List(vec![tensor(), Spec::Float(0.5), Spec::List(vec![tensor(), tensor()])]), Spec::List(vec![])];
        for spec in &specs {
            let mut ordinal = 7;
            realize(spec, DataMode::Random, 0, 0, &mut ordinal).unwrap();
            assert_eq!(ordinal - 7, numbered(spec), "{spec:?}");
        }
        assert_eq!(specs.iter().map(numbered).collect::<Vec<_>>(), vec![1, 0, 0, 3, 0]);
    }
}
