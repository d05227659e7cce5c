//! Ops that pick, place or repeat elements by index: topk (with the tie
//! order of torch's and MindSpore's CPU kernels), one_hot, scatter /
//! scatter_add / index_add (and MindSpore's tensor_scatter_elements and
//! index_add), repeat_interleave.

use candle_core::{DType, Tensor};

use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, operand, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::ops::nn::indices;
use crate::value::{Value, T};

/// The sorting algorithms of libstdc++ (GCC's C++ standard library), step
/// for step, so that elements that compare equal end up in the same order
/// as in the CPU kernels that call them (torch's topk: `std::partial_sort`,
/// `std::nth_element`, `std::sort`; MindSpore's: `std::nth_element` and
/// `std::stable_sort`). `less` is the kernel's comparator.
mod stl {
    /// `std::__lg`: floor(log2(n)), n > 0.
    fn lg(n: usize) -> usize {
        (usize::BITS - 1 - n.leading_zeros()) as usize
    }

    fn push_heap<E: Copy>(v: &mut [E], mut hole: usize, top: usize, value: E, less: &impl Fn(&E, &E) -> bool) {
        let mut parent = hole.wrapping_sub(1) / 2;
        while hole > top && less(&v[parent], &value) {
            v[hole] = v[parent];
            hole = parent;
            parent = hole.wrapping_sub(1) / 2;
        }
        v[hole] = value;
    }

    fn adjust_heap<E: Copy>(v: &mut [E], mut hole: usize, len: usize, value: E, less: &impl Fn(&E, &E) -> bool) {
        let top = hole;
        let mut child = hole;
        while len > 0 && child < (len - 1) / 2 {
            child = 2 * (child + 1);
            if less(&v[child], &v[child - 1]) {
                child -= 1;
            }
            v[hole] = v[child];
            hole = child;
        }
        if len & 1 == 0 && len >= 2 && child == (len - 2) / 2 {
            child = 2 * (child + 1);
            v[hole] = v[child - 1];
            hole = child - 1;
        }
        push_heap(v, hole, top, value, less);
    }

    fn make_heap<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) {
        let len = v.len();
        if len < 2 {
            return;
        }
        let mut parent = (len - 2) / 2;
        loop {
            adjust_heap(v, parent, len, v[parent], less);
            if parent == 0 {
                return;
            }
            parent -= 1;
        }
    }

    /// `std::__pop_heap(first, first + len, result)`.
    fn pop_heap<E: Copy>(v: &mut [E], len: usize, result: usize, less: &impl Fn(&E, &E) -> bool) {
        let value = v[result];
        v[result] = v[0];
        adjust_heap(v, 0, len, value, less);
    }

    fn heap_select<E: Copy>(v: &mut [E], middle: usize, less: &impl Fn(&E, &E) -> bool) {
        make_heap(&mut v[..middle], less);
        for i in middle..v.len() {
            if less(&v[i], &v[0]) {
                pop_heap(v, middle, i, less);
            }
        }
    }

    fn sort_heap<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) {
        let mut last = v.len();
        while last > 1 {
            last -= 1;
            pop_heap(v, last, last, less);
        }
    }

    /// `std::partial_sort(first, first + middle, last)`.
    pub fn partial_sort<E: Copy>(v: &mut [E], middle: usize, less: &impl Fn(&E, &E) -> bool) {
        heap_select(v, middle, less);
        sort_heap(&mut v[..middle], less);
    }

    fn unguarded_linear_insert<E: Copy>(v: &mut [E], mut last: usize, less: &impl Fn(&E, &E) -> bool) {
        let value = v[last];
        while less(&value, &v[last - 1]) {
            v[last] = v[last - 1];
            last -= 1;
        }
        v[last] = value;
    }

    fn insertion_sort<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) {
        for i in 1..v.len() {
            if less(&v[i], &v[0]) {
                let value = v[i];
                v.copy_within(0..i, 1);
                v[0] = value;
            } else {
                unguarded_linear_insert(v, i, less);
            }
        }
    }

    fn move_median_to_first<E: Copy>(v: &mut [E], result: usize, a: usize, b: usize, c: usize, less: &impl Fn(&E, &E) -> bool) {
        let pick = if less(&v[a], &v[b]) {
            if less(&v[b], &v[c]) {
                b
            } else if less(&v[a], &v[c]) {
                c
            } else {
                a
            }
        } else if less(&v[a], &v[c]) {
            a
        } else if less(&v[b], &v[c]) {
            c
        } else {
            b
        };
        v.swap(result, pick);
    }

    /// `std::__unguarded_partition(first, last, pivot)` over `v[first..last]`.
    fn unguarded_partition<E: Copy>(v: &mut [E], mut first: usize, mut last: usize, pivot: usize, less: &impl Fn(&E, &E) -> bool) -> usize {
        loop {
            while less(&v[first], &v[pivot]) {
                first += 1;
            }
            last -= 1;
            while less(&v[pivot], &v[last]) {
                last -= 1;
            }
            if first >= last {
                return first;
            }
            v.swap(first, last);
            first += 1;
        }
    }

    fn unguarded_partition_pivot<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) -> usize {
        let (len, mid) = (v.len(), v.len() / 2);
        move_median_to_first(v, 0, 1, mid, len - 1, less);
        unguarded_partition(v, 1, len, 0, less)
    }

    /// `std::nth_element(first, first + nth, last)`.
    pub fn nth_element<E: Copy>(v: &mut [E], nth: usize, less: &impl Fn(&E, &E) -> bool) {
        if v.is_empty() || nth >= v.len() {
            return;
        }
        let (mut first, mut last) = (0, v.len());
        let mut depth = lg(v.len()) * 2;
        while last - first > 3 {
            if depth == 0 {
                heap_select(&mut v[first..last], nth - first + 1, less);
                v.swap(first, nth);
                return;
            }
            depth -= 1;
            let cut = first + unguarded_partition_pivot(&mut v[first..last], less);
            if cut <= nth {
                first = cut;
            } else {
                last = cut;
            }
        }
        insertion_sort(&mut v[first..last], less);
    }

    fn introsort_loop<E: Copy>(v: &mut [E], mut depth: usize, less: &impl Fn(&E, &E) -> bool) {
        let mut last = v.len();
        while last > 16 {
            if depth == 0 {
                partial_sort(&mut v[..last], last, less);
                return;
            }
            depth -= 1;
            let cut = unguarded_partition_pivot(&mut v[..last], less);
            introsort_loop(&mut v[cut..last], depth, less);
            last = cut;
        }
    }

    /// `std::sort(first, last)`.
    pub fn sort<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) {
        if v.is_empty() {
            return;
        }
        introsort_loop(v, lg(v.len()) * 2, less);
        if v.len() > 16 {
            insertion_sort(&mut v[..16], less);
            for i in 16..v.len() {
                unguarded_linear_insert(v, i, less);
            }
        } else {
            insertion_sort(v, less);
        }
    }

    /// `std::stable_sort(first, last)`.
    pub fn stable_sort<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) {
        v.sort_by(|a, b| {
            if less(a, b) {
                std::cmp::Ordering::Less
            } else if less(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
    }
}

/// Whose CPU kernel a topk follows (the order of tied elements differs).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// torch's `topk_impl_loop`: NaN counts as the largest; partial_sort when
    /// 64·k ≤ n, else nth_element and a sort of the first k − 1.
    Torch,
    /// MindSpore's TopK CPU kernel (smallest-k as the largest of −x): a
    /// stable sort when k > n/2, else nth_element and a stable sort of the first k.
    MindSpore,
}

/// The positions of the `k` picked elements of one row, in output order.
fn topk_row(row: &[f64], k: usize, largest: bool, sorted: bool, kernel: Kernel) -> Vec<usize> {
    let n = row.len();
    match kernel {
        Kernel::Torch => {
            let mut q: Vec<(f64, usize)> = row.iter().copied().zip(0..).collect();
            let less = |x: &(f64, usize), y: &(f64, usize)| {
                if largest {
                    (x.0.is_nan() && !y.0.is_nan()) || x.0 > y.0
                } else {
                    (!x.0.is_nan() && y.0.is_nan()) || x.0 < y.0
                }
            };
            if k * 64 <= n {
                stl::partial_sort(&mut q, k, &less);
            } else {
                stl::nth_element(&mut q, k - 1, &less);
                if sorted {
                    stl::sort(&mut q[..k - 1], &less);
                }
            }
            q[..k].iter().map(|e| e.1).collect()
        }
        Kernel::MindSpore => {
            let sign = if largest { 1.0 } else { -1.0 };
            let mut idx: Vec<usize> = (0..n).collect();
            let less = |a: &usize, b: &usize| sign * row[*a] > sign * row[*b];
            if sorted && k > n / 2 {
                stl::stable_sort(&mut idx, &less);
            } else {
                stl::nth_element(&mut idx, k, &less);
                if sorted {
                    stl::stable_sort(&mut idx[..k], &less);
                }
            }
            idx.truncate(k);
            idx
        }
    }
}

/// Values and indices of the `k` largest (smallest) elements along a dim;
/// the values' gradient goes to the picked elements.
fn topk(ctx: &Ctx, b: &Bound, kernel: Kernel) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = match b.opt_int("dim")? {
        Some(d) => dim(d, x.rank())?,
        None => x.rank().saturating_sub(1),
    };
    let (largest, sorted) = (b.bool("largest")?, b.bool("sorted")?);
    // A 0-d tensor is one element along its only dim.
    let shape: Vec<usize> = if x.rank() == 0 { vec![1] } else { x.dims().to_vec() };
    let n = shape[d];
    let k = b.int("k")?;
    if k < 0 || k as usize > n {
        return Err(Error::Arg(format!("topk: k = {k} is out of range for a dim of size {n}")));
    }
    let k = k as usize;
    let mut out_shape = shape.clone();
    out_shape[d] = k;
    ctx.fits(&out_shape)?;
    let (outer, inner): (usize, usize) = (shape[..d].iter().product(), shape[d + 1..].iter().product());
    let values = x.to_f64_vec()?;
    let mut picked = vec![0usize; outer * k * inner];
    if k > 0 {
        for o in 0..outer {
            for i in 0..inner {
                let row: Vec<f64> = (0..n).map(|j| values[(o * n + j) * inner + i]).collect();
                for (j, p) in topk_row(&row, k, largest, sorted, kernel).into_iter().enumerate() {
                    picked[(o * k + j) * inner + i] = p;
                }
            }
        }
    }
    let final_shape: Vec<usize> = if x.rank() == 0 { vec![] } else { out_shape.clone() };
    let index_dtype = if kernel == Kernel::MindSpore { TDType::I32 } else { TDType::I64 };
    let idx_values: Vec<f64> = picked.iter().map(|&p| p as f64).collect();
    let indices_out = T::from_f64(idx_values, &final_shape, index_dtype, ctx.compute, &ctx.device)?;
    let vals = if picked.is_empty() {
        Tensor::zeros(out_shape.as_slice(), x.t.dtype(), &ctx.device)?
    } else {
        let idx = Tensor::from_vec(picked.iter().map(|&p| p as u32).collect::<Vec<u32>>(), out_shape.as_slice(), &ctx.device)?;
        x.t.reshape(shape.as_slice())?.contiguous()?.gather(&idx, d)?
    };
    let vals = ctx.out(vals.reshape(final_shape.as_slice())?, x.dtype)?;
    Ok(vec![Value::Tensor(vals), Value::Tensor(indices_out)])
}

/// The class of every element of an integer tensor, checked against
/// `classes` (`None`: the largest plus one, as torch's `num_classes=-1`).
fn classes_of(ids: &T, classes: Option<usize>, what: &str) -> Result<(Vec<usize>, usize)> {
    if ids.dtype.is_float() {
        return Err(Error::Arg(format!("{what}: expects an integer tensor, got {}", ids.dtype.name())));
    }
    let vals = ids.to_f64_vec()?;
    let n = match classes {
        Some(n) => n,
        None if vals.is_empty() => return Err(Error::Arg(format!("{what}: cannot infer the number of classes of an empty tensor"))),
        None => vals.iter().fold(0f64, |m, &v| m.max(v)) as usize + 1,
    };
    let picked = vals
        .iter()
        .map(|&v| if v < 0.0 || v >= n as f64 { Err(Error::Arg(format!("{what}: class {v} is out of range for {n} classes"))) } else { Ok(v as usize) })
        .collect::<Result<Vec<_>>>()?;
    Ok((picked, n))
}

/// A 0/1 tensor of shape `ids.shape + [classes]`.
fn hot(ctx: &Ctx, ids: &T, picked: &[usize], classes: usize) -> Result<(Vec<f64>, Vec<usize>)> {
    let shape = [ids.dims(), &[classes]].concat();
    ctx.fits(&shape)?;
    let mut out = vec![0.0; picked.len() * classes];
    for (i, &c) in picked.iter().enumerate() {
        out[i * classes + c] = 1.0;
    }
    Ok((out, shape))
}

/// torch.nn.functional.one_hot(tensor, num_classes=-1): int64.
fn one_hot(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let ids = b.tensor("tensor")?;
    let n = b.int("num_classes")?;
    let (picked, n) = classes_of(ids, (n >= 0).then_some(n as usize), "one_hot")?;
    let (values, shape) = hot(ctx, ids, &picked, n)?;
    one(T::from_f64(values, &shape, TDType::I64, ctx.compute, &ctx.device)?)
}

/// mindspore.ops.one_hot(indices, depth, on_value=1, off_value=0, axis=-1):
/// `on_value` where the class is, `off_value` elsewhere, in on_value's
/// dtype, the classes along `axis`. MindSpore's gradient for on_value and
/// off_value is zero (its OneHot backward returns zeros), so they enter as
/// constants.
fn ms_one_hot(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let ids = b.tensor("indices")?;
    let depth = b.int("depth")?;
    if depth < 0 {
        return Err(Error::Arg(format!("one_hot: depth must be non-negative, got {depth}")));
    }
    let (on, off) = (b.value("on_value"), b.value("off_value"));
    let dtype = result_type(&[on])?;
    let (picked, n) = classes_of(ids, Some(depth as usize), "one_hot")?;
    let (values, shape) = hot(ctx, ids, &picked, n)?;
    let mask = Tensor::from_vec(values, shape.as_slice(), &ctx.device)?.ne(0.0)?;
    let on = operand(ctx, on, dtype)?.detach().broadcast_as(shape.as_slice())?;
    let off = operand(ctx, off, dtype)?.detach().broadcast_as(shape.as_slice())?;
    let mut t = mask.where_cond(&on, &off)?;
    let rank = shape.len();
    // MindSpore's `axis` (bound as `dim`, its alias).
    let axis = b.int("dim")?;
    let axis = if axis < 0 { axis + rank as i64 } else { axis };
    if axis < 0 || axis >= rank as i64 {
        return Err(Error::Arg(format!("one_hot: axis {} out of range for a result of rank {rank}", b.int("dim")?)));
    }
    if (axis as usize) != rank - 1 {
        let mut order: Vec<usize> = (0..rank - 1).collect();
        order.insert(axis as usize, rank - 1);
        t = t.permute(order)?.contiguous()?;
    }
    one(ctx.out(t, dtype)?)
}

/// Where `index` sends each of its elements in `x` (flat positions), for
/// scatter along `d`: the element at coordinates c goes to c with c[d]
/// replaced by its index value. Needs index.size(i) ≤ x.size(i) off `d`.
fn scatter_positions(x: &T, index: &T, d: usize, what: &str) -> Result<Vec<i64>> {
    if index.rank() != x.rank() && !(index.rank() <= 1 && x.rank() <= 1) {
        return Err(Error::Arg(format!("{what}: index of rank {} for a tensor of rank {}", index.rank(), x.rank())));
    }
    let xd: Vec<usize> = if x.rank() == 0 { vec![1] } else { x.dims().to_vec() };
    let id: Vec<usize> = if index.rank() == 0 { vec![1] } else { index.dims().to_vec() };
    for (i, (&n, &m)) in xd.iter().zip(&id).enumerate() {
        if i != d && m > n {
            return Err(Error::Arg(format!("{what}: index of shape {:?} is larger than the tensor's {:?} off dim {d}", index.dims(), x.dims())));
        }
    }
    let picked = indices(index, xd[d], what)?.flatten_all()?.to_vec1::<u32>()?;
    let mut strides = vec![1usize; xd.len()];
    for i in (0..xd.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * xd[i + 1];
    }
    Ok(picked
        .iter()
        .enumerate()
        .map(|(flat, &p)| {
            let mut rest = flat;
            let mut pos = 0;
            for i in (0..id.len()).rev() {
                let c = if i == d { p as usize } else { rest % id[i] };
                rest /= id[i];
                pos += c * strides[i];
            }
            pos as i64
        })
        .collect())
}

/// `src` cut to the index's shape (torch reads only that corner), flat.
fn source_flat(src: &Tensor, index_dims: &[usize]) -> Result<Tensor> {
    let mut s = src.clone();
    if s.rank() == 0 {
        s = s.reshape(1)?;
    }
    if s.rank() != index_dims.len() {
        return Err(Error::Arg(format!("scatter: src of shape {:?} for an index of shape {index_dims:?}", src.dims())));
    }
    for (i, &n) in index_dims.iter().enumerate() {
        if n > s.dims()[i] {
            return Err(Error::Arg(format!("scatter: src of shape {:?} is smaller than the index {index_dims:?}", src.dims())));
        }
        if n < s.dims()[i] {
            s = s.narrow(i, 0, n)?;
        }
    }
    Ok(s.contiguous()?.flatten_all()?)
}

/// How a scatter combines a source element with its target.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reduce {
    /// The last element sent to a place replaces it (torch's CPU loop order).
    Set,
    /// Every element sent to a place is added to it.
    Add,
}

/// scatter / scatter_add along `d`, with torch's gradients: `input` gets
/// the output's gradient except where an element was set, each source
/// element the gradient at its target.
fn scatter_into(ctx: &Ctx, x: &T, d: usize, index: &T, src: &Value, how: Reduce, what: &str) -> Result<T> {
    let pos = scatter_positions(x, index, d, what)?;
    let dtype = x.dtype;
    // A Python value is cast to the tensor's dtype, as torch does (2.7 into an int tensor is 2).
    let src = match src {
        Value::Tensor(s) => ctx.cast(s, dtype)?.t,
        v => {
            let own = result_type(&[v])?;
            ctx.cast(&T { t: operand(ctx, v, own)?, dtype: own }, dtype)?.t
        }
    };
    let src = if src.rank() == 0 { src.broadcast_as(if index.rank() == 0 { vec![1] } else { index.dims().to_vec() })? } else { src };
    let index_dims: Vec<usize> = if index.rank() == 0 { vec![1] } else { index.dims().to_vec() };
    let flat = x.t.flatten_all()?;
    if pos.is_empty() {
        return Ok(T { t: x.t.clone(), dtype });
    }
    let src = source_flat(&src, &index_dims)?;
    let n = flat.dims()[0];
    let at = Tensor::from_vec(pos.clone(), pos.len(), &ctx.device)?;
    let out = match how {
        Reduce::Add => flat.index_add(&at, &src, 0)?,
        Reduce::Set => {
            // Each target's last writer, and whether several wrote there.
            let src_values = src.to_dtype(DType::F64)?.to_vec1::<f64>()?;
            let mut value = vec![0.0; n];
            let mut hits = vec![0u32; n];
            for (&p, &v) in pos.iter().zip(&src_values) {
                value[p as usize] = v;
                hits[p as usize] += 1;
            }
            // The sum of the writers: exactly the value where one wrote, and
            // the gradient of every writer (torch gives each its target's).
            let sum = flat.zeros_like()?.index_add(&at, &src, 0)?;
            let last = Tensor::from_vec(value, n, &ctx.device)?.to_dtype(flat.dtype())?;
            let dup = Tensor::from_vec(hits.iter().map(|&h| (h > 1) as u8).collect::<Vec<u8>>(), n, &ctx.device)?;
            let written = dup.where_cond(&(&last + (&sum - sum.detach())?)?, &sum)?;
            let hit = Tensor::from_vec(hits.iter().map(|&h| (h > 0) as u8).collect::<Vec<u8>>(), n, &ctx.device)?;
            hit.where_cond(&written, &flat)?
        }
    };
    ctx.out(out.reshape(x.dims())?, dtype)
}

/// torch.scatter(input, dim, index, src | value, *, reduce=None).
fn scatter(ctx: &Ctx, b: &Bound, add: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let src = match (b.value("src"), b.value("value")) {
        (Value::None, v) | (v, Value::None) => v,
        _ => return Err(Error::Arg("scatter: give src or value, not both".into())),
    };
    if matches!(src, Value::None) {
        return Err(Error::Arg("scatter: missing src or value".into()));
    }
    let how = match b.value("reduce") {
        _ if add => Reduce::Add,
        Value::None => Reduce::Set,
        Value::Str(s) if s == "add" => Reduce::Add,
        other => return Err(Error::Unsupported(format!("scatter with reduce={other:?}"))),
    };
    one(scatter_into(ctx, x, d, b.tensor("index")?, src, how, "scatter")?)
}

/// mindspore.ops.tensor_scatter_elements(input_x, indices, updates, axis=0,
/// reduction='none'): scatter ('none') or scatter_add ('add').
fn tensor_scatter_elements(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let how = match b.str("reduction")? {
        "none" => Reduce::Set,
        "add" => Reduce::Add,
        r => return Err(Error::Unsupported(format!("tensor_scatter_elements with reduction={r:?}"))),
    };
    one(scatter_into(ctx, x, d, b.tensor("indices")?, b.value("updates"), how, "tensor_scatter_elements")?)
}

/// torch.index_add(input, dim, index, source, *, alpha=1): whole slices of
/// `source` added at the 1-D `index` along `dim` (MindSpore's index_add
/// names them `indices` and `y`).
fn index_add(ctx: &Ctx, b: &Bound, [index, source]: [&str; 2]) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let index = b.tensor(index)?;
    if index.rank() > 1 {
        return Err(Error::Arg(format!("index_add: index must be 1-D, got shape {:?}", index.dims())));
    }
    let src = ctx.cast(b.tensor(source)?, x.dtype)?.t;
    let alpha = b.float("alpha")?;
    let src = if alpha == 1.0 { src } else { (src * alpha)? };
    if index.t.elem_count() == 0 {
        return one(x.clone());
    }
    let idx = indices(index, x.dims()[d], "index_add")?.flatten_all()?;
    one(ctx.out(x.t.index_add(&idx, &src, d)?, x.dtype)?)
}

/// torch.take(input, index): the flattened input at `index`, in its shape.
fn take(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, index) = (b.tensor("input")?, b.tensor("index")?);
    let idx = indices(index, x.t.elem_count(), "take")?.flatten_all()?;
    one(ctx.out(x.t.flatten_all()?.index_select(&idx, 0)?.reshape(index.dims())?, x.dtype)?)
}

/// torch.take_along_dim(input, indices, dim=None): gather along `dim` with
/// both broadcast elsewhere; without `dim`, take on the flattened input.
fn take_along_dim(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, index) = (b.tensor("input")?, b.tensor("indices")?);
    if b.is_none("dim") {
        let idx = indices(index, x.t.elem_count(), "take_along_dim")?.flatten_all()?;
        return one(ctx.out(x.t.flatten_all()?.index_select(&idx, 0)?, x.dtype)?);
    }
    if x.rank() != index.rank() {
        return Err(Error::Arg(format!("take_along_dim: input {:?} and indices {:?} should have the same number of dimensions", x.dims(), index.dims())));
    }
    let d = dim(b.int("dim")?, x.rank())?;
    let mut shape = vec![];
    for (i, (&m, &n)) in x.dims().iter().zip(index.dims()).enumerate() {
        shape.push(if i == d || m == n || n == 1 {
            m
        } else if m == 1 {
            n
        } else {
            return Err(Error::Arg(format!("take_along_dim: {:?} and {:?} do not broadcast", x.dims(), index.dims())));
        });
    }
    let with = |size: usize| -> Vec<usize> { shape.iter().enumerate().map(|(i, &s)| if i == d { size } else { s }).collect() };
    let xb = x.t.broadcast_as(with(x.dims()[d]))?.contiguous()?;
    let ib = indices(index, x.dims()[d], "take_along_dim")?.broadcast_as(with(index.dims()[d]))?.contiguous()?;
    one(ctx.out(xb.gather(&ib, d)?, x.dtype)?)
}

/// torch.masked_select(input, mask): the elements where the broadcast mask
/// is true, in order, as a vector.
fn masked_select(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, mask) = (b.tensor("input")?, b.tensor("mask")?);
    if mask.dtype != TDType::Bool {
        return Err(Error::Arg(format!("masked_select: expected a bool mask, got {}", mask.dtype.name())));
    }
    let shape = crate::ctx::broadcast_shape(x.dims(), mask.dims())?;
    let xb = x.t.broadcast_as(shape.as_slice())?.flatten_all()?;
    let kept: Vec<u32> = mask
        .t
        .broadcast_as(shape.as_slice())?
        .flatten_all()?
        .to_dtype(DType::F64)?
        .to_vec1::<f64>()?
        .iter()
        .enumerate()
        .filter(|(_, &m)| m != 0.0)
        .map(|(i, _)| i as u32)
        .collect();
    let n = kept.len();
    one(ctx.out(xb.index_select(&Tensor::from_vec(kept, n, x.t.device())?, 0)?, x.dtype)?)
}

/// Whether each position along dim `d` of `x` is named by `index`, as a
/// tensor broadcastable to `x` (1 where named).
fn named_positions(x: &T, d: usize, index: &T, what: &str) -> Result<Tensor> {
    if index.rank() > 1 {
        return Err(Error::Arg(format!("{what}: index must be at most 1-D, got shape {:?}", index.dims())));
    }
    let size = x.dims()[d];
    let mut hit = vec![0u8; size];
    for i in indices(index, size, what)?.flatten_all()?.to_vec1::<u32>()? {
        hit[i as usize] = 1;
    }
    let shape: Vec<usize> = (0..x.rank()).map(|i| if i == d { size } else { 1 }).collect();
    Ok(Tensor::from_vec(hit, shape, x.t.device())?.broadcast_as(x.dims())?)
}

/// torch.index_fill(input, dim, index, value): the slices along `dim` at
/// `index` set to `value` (a number or a 0-D tensor, differentiated).
fn index_fill(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = if x.rank() == 0 { 0 } else { dim(b.int("dim")?, x.rank())? };
    let xt = if x.rank() == 0 { T { t: x.t.reshape(1)?, dtype: x.dtype } } else { x.clone() };
    let hit = named_positions(&xt, d, b.tensor("index")?, "index_fill")?;
    let value = ctx.cast(&T { t: operand(ctx, b.value("value"), result_type(&[b.value("value")])?)?, dtype: result_type(&[b.value("value")])? }, x.dtype)?;
    let out = hit.where_cond(&value.t.reshape(())?.broadcast_as(xt.dims())?, &xt.t)?;
    one(ctx.out(out.reshape(x.dims())?, x.dtype)?)
}

/// torch.index_copy(input, dim, index, source): the slices along `dim` at
/// `index` replaced by `source`'s, in order.
fn index_copy(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let index = b.tensor("index")?;
    let hit = named_positions(x, d, index, "index_copy")?;
    let src = ctx.cast(b.tensor("source")?, x.dtype)?.t;
    if index.t.elem_count() == 0 {
        return one(x.clone());
    }
    let idx = indices(index, x.dims()[d], "index_copy")?.flatten_all()?;
    let placed = x.t.zeros_like()?.index_add(&idx, &src, d)?;
    one(ctx.out(hit.where_cond(&placed, &x.t)?, x.dtype)?)
}

/// The index that repeats each position `i` of a dim of size `n` `r[i]` times.
fn repeated(repeats: &[f64], n: usize) -> Result<Vec<u32>> {
    let reps: Vec<f64> = match repeats.len() {
        1 => vec![repeats[0]; n],
        m if m == n => repeats.to_vec(),
        m => return Err(Error::Arg(format!("repeat_interleave: {m} repeats for a dim of size {n}"))),
    };
    let mut out = vec![];
    for (i, &r) in reps.iter().enumerate() {
        if r < 0.0 {
            return Err(Error::Arg(format!("repeat_interleave: negative repeat {r}")));
        }
        out.extend(std::iter::repeat_n(i as u32, r as usize));
    }
    Ok(out)
}

/// torch.repeat_interleave(input, repeats, dim=None): each element (slice
/// along `dim`; of the flattened input without one) repeated; `repeats` an
/// int or a tensor. With an int tensor alone, the positions repeated by it.
fn repeat_interleave(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (x, reps): (T, Vec<f64>) = match b.value("repeats") {
        Value::None => {
            // repeat_interleave(repeats): arange(len(repeats)) repeated.
            let n = x.t.elem_count();
            (T::from_f64((0..n).map(|i| i as f64).collect(), &[n], TDType::I64, ctx.compute, &ctx.device)?, x.to_f64_vec()?)
        }
        Value::Tensor(r) if r.dtype.is_float() => return Err(Error::Arg("repeat_interleave: repeats must be an integer tensor".into())),
        Value::Tensor(r) => (x.clone(), r.to_f64_vec()?),
        v => {
            (x.clone(), vec![v.as_i64().ok_or_else(|| Error::Arg(format!("repeat_interleave: repeats must be an int or a tensor, got {}", v.kind())))? as f64])
        }
    };
    let (t, d) = match b.opt_int("dim")? {
        Some(d) if x.rank() > 0 => (x.t.clone(), dim(d, x.rank())?),
        _ => (x.t.flatten_all()?, 0),
    };
    let idx = repeated(&reps, t.dims()[d])?;
    let mut shape = t.dims().to_vec();
    shape[d] = idx.len();
    ctx.fits(&shape)?;
    let n = idx.len();
    let out = if n == 0 { Tensor::zeros(shape.as_slice(), t.dtype(), &ctx.device)? } else { t.index_select(&Tensor::from_vec(idx, n, &ctx.device)?, d)? };
    one(T { t: out, dtype: x.dtype })
}

/// sort(input, dim=-1, descending=False, stable=False): the values (the
/// input gathered, so the gradient goes back to where each came from) and
/// their int64 indices; NaN sorts as the largest; equal values keep their
/// order (a stable sort, as torch's CPU sort gives).
fn sort_values(ctx: &Ctx, x: &T, d: i64, descending: bool) -> Result<(T, T)> {
    if x.rank() == 0 {
        return Ok((x.clone(), T::from_f64(vec![0.0], &[], TDType::I64, ctx.compute, &ctx.device)?));
    }
    let d = dim(d, x.rank())?;
    let last = x.rank() - 1;
    let t = x.t.transpose(d, last)?.contiguous()?;
    let n = t.dims()[last];
    let values = t.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?;
    let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v };
    let mut order: Vec<u32> = Vec::with_capacity(values.len());
    for row in values.chunks(n.max(1)) {
        let mut idx: Vec<usize> = (0..row.len()).collect();
        idx.sort_by(|&i, &j| {
            let (a, b) = (row[i], row[j]);
            let o = key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal).then(a.is_nan().cmp(&b.is_nan()));
            if descending {
                o.reverse()
            } else {
                o
            }
        });
        order.extend(idx.into_iter().map(|i| i as u32));
    }
    let index = Tensor::from_vec(order.clone(), t.dims(), t.device())?;
    let sorted = t.gather(&index, last)?.transpose(d, last)?;
    let positions = Tensor::from_vec(order.into_iter().map(|i| i as f64).collect::<Vec<_>>(), t.dims(), t.device())?.transpose(d, last)?.contiguous()?;
    Ok((T { t: sorted, dtype: x.dtype }, ctx.out(positions, TDType::I64)?))
}

/// `torch.nonzero`: the indices of the nonzero elements (NaN included) in
/// row-major order, an int64 `[n, rank]` tensor, or with `as_tuple` one
/// `[n]` tensor per dimension.
fn nonzero(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = x.dims().to_vec();
    let flat: Vec<usize> = x.to_f64_vec()?.iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(i, _)| i).collect();
    // Each flat index unravelled, one column per dimension.
    let columns: Vec<Vec<f64>> = (0..dims.len())
        .map(|d| {
            let stride: usize = dims[d + 1..].iter().product();
            flat.iter().map(|&i| ((i / stride) % dims[d]) as f64).collect()
        })
        .collect();
    let int = |values: Vec<f64>, shape: &[usize]| T::from_f64(values, shape, TDType::I64, ctx.compute, &ctx.device).map(Value::Tensor);
    if b.bool("as_tuple")? {
        return columns.into_iter().map(|c| int(c, &[flat.len()])).collect();
    }
    let rows: Vec<f64> = (0..flat.len()).flat_map(|r| columns.iter().map(move |c| c[r])).collect();
    Ok(vec![int(rows, &[flat.len(), dims.len()])?])
}

/// `torch.bincount`: how often each value of a 1-D non-negative integer
/// tensor occurs (int64), or the sum of its `weights` per value (in the
/// weights' float dtype, float64 for others), over `max(input) + 1` bins
/// and at least `minlength`.
fn bincount(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() != 1 || x.dtype.is_float() {
        return Err(Error::Arg("bincount: input must be a 1-d integer tensor".into()));
    }
    let values = x.to_f64_vec()?;
    if values.iter().any(|v| *v < 0.0) {
        return Err(Error::Arg("bincount: input must be non-negative".into()));
    }
    let bins = values.iter().map(|v| *v as usize + 1).max().unwrap_or(0).max(usize::try_from(b.int("minlength")?).unwrap_or(0));
    let weights = b.opt_tensor("weights")?;
    let w = weights.map(|w| w.to_f64_vec()).transpose()?;
    let mut out = vec![0.0; bins];
    for (i, v) in values.iter().enumerate() {
        out[*v as usize] += w.as_ref().map_or(1.0, |w| w[i]);
    }
    let dtype = match weights {
        None => TDType::I64,
        Some(w) if w.dtype.is_float() => w.dtype,
        Some(_) => TDType::F64,
    };
    one(T::from_f64(out, &[bins], dtype, ctx.compute, &ctx.device)?)
}

/// repeat_interleave under a signature: elements copied, exact, differentiated.
const fn interleaved(names: &'static [&'static str], sig: &'static str) -> Op {
    Op { names, sig, forward: repeat_interleave, backward: true, standard: Standard::Exact, random: false, facts: &[] }
}

/// The indexing entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.topk", "Tensor.topk", "Mint.topk"],
        sig: "input, k, dim=-1, largest=True, sorted=True",
        forward: |c, b| topk(c, b, Kernel::Torch),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["MS.Functional.topk"],
        sig: "input, k, dim=None, largest=True, sorted=True",
        forward: |c, b| topk(c, b, Kernel::MindSpore),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.one_hot", "MintFunctional.one_hot"],
        sig: "tensor, num_classes=-1",
        forward: one_hot,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["MS.Functional.one_hot"],
        sig: "indices, depth, on_value=1, off_value=0, dim=-1",
        forward: ms_one_hot,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.scatter", "Tensor.scatter", "Mint.scatter", "MS.Functional.scatter"],
        sig: "input, dim, index, src=None, *, value=None, reduce=None",
        forward: |c, b| scatter(c, b, false),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.scatter_add", "Tensor.scatter_add", "Mint.scatter_add"],
        sig: "input, dim, index, src",
        forward: |c, b| scatter(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["MS.Functional.tensor_scatter_elements"],
        sig: "input, indices, updates, dim=0, reduction='none'",
        forward: tensor_scatter_elements,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.index_add", "Tensor.index_add", "Mint.index_add"],
        sig: "input, dim, index, source, *, alpha=1",
        forward: |c, b| index_add(c, b, ["index", "source"]),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["MS.Functional.index_add"],
        sig: "input, indices, y, dim, use_lock=True, check_index_bound=True, *, alpha=1",
        forward: |c, b| index_add(c, b, ["indices", "y"]),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    interleaved(
        &["Torch.repeat_interleave", "Tensor.repeat_interleave", "MS.Functional.repeat_interleave"],
        "input, repeats=None, dim=None, *, output_size=None",
    ),
    // mindspore.ops.repeat_elements(x, rep, axis=0): the axis defaults to 0, never flattened.
    interleaved(&["MS.Functional.repeat_elements"], "input, repeats, dim=0"),
    Op {
        names: &["Torch.nonzero", "Torch.argwhere", "MS.Functional.nonzero", "MS.Tensor.nonzero"],
        sig: "input, *, as_tuple=False",
        forward: nonzero,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.bincount"],
        sig: "input, weights=None, minlength=0",
        forward: bincount,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.sort"],
        sig: "input, dim=-1, descending=False, stable=False",
        forward: |c, b| {
            let (v, i) = sort_values(c, b.tensor("input")?, b.int("dim")?, b.bool("descending")?)?;
            Ok(vec![Value::Tensor(v), Value::Tensor(i)])
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.argsort"],
        sig: "input, dim=-1, descending=False, stable=False",
        forward: |c, b| {
            let (_, i) = sort_values(c, b.tensor("input")?, b.int("dim")?, b.bool("descending")?)?;
            Ok(vec![Value::Tensor(i)])
        },
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.msort"],
        sig: "input",
        forward: |c, b| {
            let (v, _) = sort_values(c, b.tensor("input")?, 0, false)?;
            Ok(vec![Value::Tensor(v)])
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.take"], sig: "input, index", forward: take, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.take_along_dim"],
        sig: "input, indices, dim=None, *, out=None",
        forward: take_along_dim,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.masked_select"],
        sig: "input, mask, *, out=None",
        forward: masked_select,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.index_fill", "MS.Functional.index_fill", "MS.Tensor.index_fill"],
        sig: "input, dim, index, value",
        forward: index_fill,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.index_copy"],
        sig: "input, dim, index, source, *, out=None",
        forward: index_copy,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Tied elements come out in the order MindSpore 2.10's CPU TopK kernel
    /// gives them (values measured with mindspore.ops.topk on these rows).
    #[test]
    fn mindspore_topk_tie_order() {
        let row = [1.0, 3.0, 3.0, 0.0, 3.0, 3.0, 2.0, 3.0];
        let measured: [&[usize]; 8] =
            [&[4], &[4, 7], &[4, 7, 5], &[4, 7, 5, 2], &[1, 2, 4, 5, 7], &[1, 2, 4, 5, 7, 6], &[1, 2, 4, 5, 7, 6, 0], &[1, 2, 4, 5, 7, 6, 0, 3]];
        for (k, want) in (1..=8).zip(measured) {
            assert_eq!(topk_row(&row, k, true, true, Kernel::MindSpore), want, "k = {k}");
        }
        assert_eq!(topk_row(&row, 3, true, false, Kernel::MindSpore), [4, 7, 5], "unsorted");
        assert_eq!(topk_row(&[0.0; 100], 3, true, true, Kernel::MindSpore), [67, 66, 65]);
        assert_eq!(topk_row(&[0.0; 100], 3, false, true, Kernel::MindSpore), [67, 66, 65]);
        let rows: [[f64; 20]; 2] = [
            [2.0, 1.0, 2.0, 1.0, 2.0, 2.0, 2.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 2.0],
            [0.0, 2.0, 0.0, 0.0, 2.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        ];
        let cases: [(usize, bool, bool, [&[usize]; 2]); 5] = [
            (3, true, true, [&[7, 5, 6], &[14, 4, 1]]),
            (5, true, true, [&[6, 11, 7, 5, 19], &[1, 13, 14, 4, 7]]),
            (12, true, true, [&[0, 2, 4, 5, 6, 7, 11, 19, 1, 3, 9, 15], &[1, 4, 13, 14, 6, 7, 9, 15, 0, 2, 3, 5]]),
            (5, false, true, [&[14, 10, 8, 12, 13], &[16, 0, 11, 12, 18]]),
            (4, true, false, [&[6, 11, 7, 5], &[1, 13, 14, 4]]),
        ];
        for (k, largest, sorted, want) in cases {
            for (row, want) in rows.iter().zip(want) {
                assert_eq!(topk_row(row, k, largest, sorted, Kernel::MindSpore), want, "k = {k}, largest = {largest}, sorted = {sorted}");
            }
        }
    }

    /// torch's order on the same row (measured with torch.topk on the CPU);
    /// the agreement test checks many more against torch itself.
    #[test]
    fn torch_topk_tie_order() {
        let row = [1.0, 3.0, 3.0, 0.0, 3.0, 3.0, 2.0, 3.0];
        assert_eq!(topk_row(&row, 5, true, true, Kernel::Torch), [4, 7, 5, 2, 1]);
        assert_eq!(topk_row(&row, 4, false, true, Kernel::Torch), [3, 0, 6, 4]);
        assert_eq!(topk_row(&[0.0; 100], 60, true, true, Kernel::Torch)[..3], [56, 70, 69]);
    }
}
