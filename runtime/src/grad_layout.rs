//! How msprobe records input gradients: the one home of the layouts a
//! dump's list of input gradients can have, used by the native replay and
//! by the script renderer (which marks the inputs whose gradient is `null`).
//!
//! Two kinds of layout:
//! - **In input order** ([`gradient_slots`]). PyTorch dumps list the
//!   floating tensors marked `requires_grad` (batch_norm's running
//!   statistics have none); older dumps and unmarked ones, every floating
//!   tensor (none for layer_norm's normalized_shape or cross_entropy's
//!   target); MindSpore and MSAdapter dumps, every tensor (a `null` slot for
//!   an integer target): their backward hook is on the API's cell, whose
//!   gradients are the API's inputs'.
//! - **The last autograd node's inputs** ([`NodeLayout`], the op table's
//!   `Fact::NodeGradients`). msprobe's PyTorch API hook registers its
//!   backward hook on the `grad_fn` of the call's first output
//!   (`grad_fn.register_hook`, msprobe 8.3.2 and 26.2.0), so the dump holds
//!   the gradients w.r.t. that node's inputs, in the node's order: a 2-D
//!   `linear` records AddmmBackward0's `[bias, input, weight.t()]`, a 3-D one
//!   the single gradient of the view that reshapes the product
//!   (UnsafeViewBackward0), which is the incoming gradient viewed, no
//!   input's. Which layouts an op can have is the op's fact; which one a
//!   dump has is confirmed by the data (the count, and each entry's shape).
//!
//! A recorded gradient is compared with the computed one mapped into the
//! recorded layout by [`Transform::apply`]; an input whose gradient the
//! list does not hold is [`Place::Elsewhere`], with the reason.

use crate::error::Result;
use crate::value::T;

/// What the layouts need to know of one input of a call (positional, then
/// keyword, as the call lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GradInput<'a> {
    /// The input is a tensor.
    pub tensor: bool,
    /// The input is a floating-point tensor.
    pub float: bool,
    /// The input is a tensor the dump marks `requires_grad` (the first
    /// layout counts the floating ones).
    pub marked: bool,
    /// The op's parameter it binds to (`None`: past the signature).
    pub param: Option<&'static str>,
    /// It was passed by keyword (the input-order layouts hold positional
    /// inputs only).
    pub keyword: bool,
    /// Its shape, when it is a tensor.
    pub shape: Option<&'a [usize]>,
}

/// How a recorded gradient is laid out relative to the gradient computed
/// for its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    /// As computed.
    Same,
    /// The last two dims swapped: the node took `weight.t()`, so it records
    /// the gradient of the transposed weight.
    Transposed,
}

impl Transform {
    /// `grad`, a gradient computed for the input (bench or emulated device,
    /// or any per-element quantity shaped like it, such as a rounding
    /// magnitude), in the layout msprobe recorded. Pure: values are moved,
    /// never changed.
    pub fn apply(self, grad: &T) -> Result<T> {
        Ok(match self {
            Transform::Same => grad.clone(),
            Transform::Transposed => T { t: swap_last_two(&grad.t)?, dtype: grad.dtype },
        })
    }

    /// The shape `apply` gives for an input of shape `dims` (`None` when it
    /// cannot apply: a transpose of fewer than two dims).
    pub fn dims(self, dims: &[usize]) -> Option<Vec<usize>> {
        match self {
            Transform::Same => Some(dims.to_vec()),
            Transform::Transposed if dims.len() >= 2 => {
                let mut d = dims.to_vec();
                d.swap(dims.len() - 2, dims.len() - 1);
                Some(d)
            }
            Transform::Transposed => None,
        }
    }
}

/// Side of the square tiles a transpose copies: a tile of each side stays in cache.
const TILE: usize = 32;

/// `t` with its last two dims swapped, contiguous. A contiguous float
/// tensor on the host is copied in tiles, in parallel over the matrices'
/// row bands; candle's strided copy (anything else) walks it one element at
/// a time, a third of a ResNet-50 linear call's replay.
fn swap_last_two(t: &candle_core::Tensor) -> candle_core::Result<candle_core::Tensor> {
    use candle_core::{DType, Tensor};
    let dims = t.dims();
    if dims.len() < 2 || !t.is_contiguous() || !crate::device::is_host(t) {
        return t.t()?.contiguous();
    }
    let (rows, cols) = (dims[dims.len() - 2], dims[dims.len() - 1]);
    let mut swapped = dims.to_vec();
    swapped.swap(dims.len() - 2, dims.len() - 1);
    match t.dtype() {
        DType::F64 => crate::device::with_host_values("transpose", [t], |[v]| Tensor::from_vec(tiled::<f64>(v, rows, cols), swapped, t.device())),
        DType::F32 => crate::device::with_host_values("transpose", [t], |[v]| Tensor::from_vec(tiled::<f32>(v, rows, cols), swapped, t.device())),
        _ => t.t()?.contiguous(),
    }
}

/// The `[rows, cols]` matrices of `v`, each transposed to `[cols, rows]`.
fn tiled<V: Copy + Default + Send + Sync>(v: &[V], rows: usize, cols: usize) -> Vec<V> {
    use rayon::prelude::*;
    let mut out = crate::heap::filled(V::default(), v.len());
    let size = rows * cols;
    if size == 0 {
        return out;
    }
    // A band: TILE output rows (input columns) of one matrix.
    out.par_chunks_mut(size).zip(v.par_chunks(size)).for_each(|(out, v)| {
        out.par_chunks_mut(TILE * rows).enumerate().for_each(|(band, out)| {
            let c0 = band * TILE;
            let width = (cols - c0).min(TILE);
            for r0 in (0..rows).step_by(TILE) {
                for r in r0..(r0 + TILE).min(rows) {
                    for c in 0..width {
                        out[c * rows + r] = v[r * cols + c0 + c];
                    }
                }
            }
        });
    });
    out
}

/// One entry of a node's list of input gradients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The gradient of the input bound to this parameter, as transformed.
    Input(&'static str, Transform),
    /// The incoming gradient (of the op's output) passed on by a node that
    /// ends the op after its product (a view reshaping it, a sum of terms,
    /// a division): no input's gradient is there.
    Incoming,
}

/// One layout an op's last autograd node can have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLayout {
    /// The node, as torch names it (the Message's reason names it).
    pub node: &'static str,
    /// Its list of input gradients.
    pub slots: Vec<Slot>,
}

/// An op's node layouts for a call: the candidates, tried in order, given
/// the call's inputs (an op-table fact).
pub type NodeLayouts = fn(&Inputs) -> Vec<NodeLayout>;

/// A call's inputs as a [`NodeLayouts`] sees them: by parameter name.
pub struct Inputs<'a>(&'a [GradInput<'a>]);

impl Inputs<'_> {
    /// The shape of the tensor bound to `param` (`None`: not given, `None`,
    /// or not a tensor).
    pub fn shape(&self, param: &str) -> Option<&[usize]> {
        self.0.iter().find(|i| i.param == Some(param)).and_then(|i| i.shape)
    }

    /// The rank of the tensor bound to `param`.
    pub fn rank(&self, param: &str) -> Option<usize> {
        self.shape(param).map(<[usize]>::len)
    }
}

/// Where one input's gradient is in the dump's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// At this index, in this transform of the computed gradient.
    Recorded(usize, Transform),
    /// The layout has none for it (an integer, an unmarked tensor).
    Absent,
    /// The list holds other gradients: why (for the row's Message).
    Elsewhere(String),
}

/// Where each input's gradient sits in the dump's list of `recorded`
/// input gradients (each entry's shape, `None` for a `null` or non-tensor
/// entry), for a call whose incoming (output) gradient has `incoming`
/// elements. With the op's `node` layouts (PyTorch dumps of an op with the
/// fact), the first candidate the data confirms: one entry per slot, each
/// input's `null` or of its transformed shape, each incoming gradient of
/// `incoming` elements. Otherwise the input-order layouts
/// ([`gradient_slots`] over the positional inputs). `None` when no layout
/// fits.
pub fn recorded_places(inputs: &[GradInput], recorded: &[Option<&[usize]>], incoming: Option<usize>, node: Option<NodeLayouts>) -> Option<Vec<Place>> {
    let Some(layouts) = node else {
        let positional: Vec<GradInput> = inputs.iter().filter(|i| !i.keyword).copied().collect();
        let slots = gradient_slots(&positional, recorded.len())?;
        let mut slots = slots.into_iter();
        return Some(
            inputs
                .iter()
                .map(|i| if i.keyword { Place::Absent } else { slots.next().flatten().map_or(Place::Absent, |k| Place::Recorded(k, Transform::Same)) })
                .collect(),
        );
    };
    let view = Inputs(inputs);
    let fits = |layout: &NodeLayout| {
        layout.slots.len() == recorded.len()
            && layout.slots.iter().zip(recorded).all(|(slot, rec)| match (slot, rec) {
                (Slot::Input(_, _), None) => true,
                (Slot::Input(p, t), Some(dims)) => view.shape(p).and_then(|s| t.dims(s)).is_some_and(|d| d == *dims),
                (Slot::Incoming, Some(dims)) => incoming == Some(dims.iter().product()),
                (Slot::Incoming, None) => false,
            })
    };
    let layout = layouts(&view).into_iter().find(fits)?;
    let place = |input: &GradInput| {
        let found = layout.slots.iter().enumerate().find_map(|(k, s)| match s {
            Slot::Input(p, t) if input.param == Some(*p) => Some(Place::Recorded(k, *t)),
            _ => None,
        });
        found.unwrap_or_else(|| match layout.slots.contains(&Slot::Incoming) {
            true => Place::Elsewhere(format!(
                "msprobe records the input gradients of the call's last autograd node, {}: the incoming gradient passed on, not this input's gradient",
                layout.node
            )),
            false => Place::Absent,
        })
    };
    Some(inputs.iter().map(place).collect())
}

/// Where each positional input's gradient sits in the dump's list of
/// `recorded` input gradients (`None` for inputs without one), for the first
/// input-order layout whose count matches `recorded` and is above zero: the
/// marked floating tensors, then every floating tensor, then every tensor.
/// `None` when no layout fits.
pub fn gradient_slots(inputs: &[GradInput], recorded: usize) -> Option<Vec<Option<usize>>> {
    let layouts: [fn(&GradInput) -> bool; 3] = [|i| i.float && i.marked, |i| i.float, |i| i.tensor];
    layouts.iter().find_map(|keep| {
        let mut next = 0;
        let slots: Vec<Option<usize>> = inputs
            .iter()
            .map(|input| {
                keep(input).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        (next == recorded && next > 0).then_some(slots)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Tensor;

    use crate::dtype::TDType;

    /// The tiled copy is candle's transpose: matrices of tile multiples and
    /// not, a batch of them, a column, an empty one, float32 and float64.
    #[test]
    fn the_tiled_transpose_is_candles() {
        let dev = crate::device::host();
        for dims in [vec![3, 37, 70], vec![64, 33], vec![5, 1], vec![0, 3], vec![2, 32, 32]] {
            let n: usize = dims.iter().product();
            let t = Tensor::from_vec((0..n).map(|i| i as f64 * 0.5 - 3.0).collect::<Vec<_>>(), dims.as_slice(), &dev).unwrap();
            for t in [t.clone(), t.to_dtype(candle_core::DType::F32).unwrap()] {
                let (own, candle) = (swap_last_two(&t).unwrap(), t.t().unwrap().contiguous().unwrap());
                assert_eq!(own.dims(), candle.dims(), "{dims:?}");
                let values = |t: &Tensor| t.flatten_all().unwrap().to_dtype(candle_core::DType::F64).unwrap().to_vec1::<f64>().unwrap();
                assert_eq!(values(&own), values(&candle), "{dims:?} {:?}", t.dtype());
            }
        }
    }

    const MARKED: GradInput = GradInput { tensor: true, float: true, marked: true, param: None, keyword: false, shape: None };
    const FLOAT: GradInput = GradInput { marked: false, ..MARKED };
    const INT: GradInput = GradInput { float: false, ..FLOAT };
    const SCALAR: GradInput = GradInput { tensor: false, ..INT };

    #[test]
    fn marked_floats_come_first() {
        // batch_norm in a PyTorch dump: input, running statistics (unmarked), weight, bias.
        let inputs = [MARKED, FLOAT, FLOAT, MARKED, MARKED];
        assert_eq!(gradient_slots(&inputs, 3), Some(vec![Some(0), None, None, Some(1), Some(2)]));
        // Every float recorded: the second layout.
        assert_eq!(gradient_slots(&inputs, 5), Some((0..5).map(Some).collect()));
    }

    #[test]
    fn floats_then_every_tensor() {
        // layer_norm(x, normalized_shape, weight, bias): no gradient for the shape.
        assert_eq!(gradient_slots(&[FLOAT, SCALAR, FLOAT, FLOAT], 3), Some(vec![Some(0), None, Some(1), Some(2)]));
        // cross_entropy in a MindSpore dump: a slot for the integer target too.
        assert_eq!(gradient_slots(&[FLOAT, INT, FLOAT], 3), Some(vec![Some(0), Some(1), Some(2)]));
        // Floats win where both fit.
        assert_eq!(gradient_slots(&[FLOAT, INT], 1), Some(vec![Some(0), None]));
    }

    #[test]
    fn no_layout_fits() {
        assert_eq!(gradient_slots(&[FLOAT, INT], 3), None);
        assert_eq!(gradient_slots(&[SCALAR, INT], 0), None);
        assert_eq!(gradient_slots(&[], 0), None);
    }

    fn t(values: &[f64], dims: &[usize]) -> T {
        T { t: Tensor::from_slice(values, dims, &crate::device::host()).unwrap(), dtype: TDType::F32 }
    }

    #[test]
    fn transforms_move_values_into_the_recorded_layout() {
        let g = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let tr = Transform::Transposed.apply(&g).unwrap();
        assert_eq!(tr.dims(), [3, 2]);
        assert_eq!(tr.to_f64_vec().unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(tr.dtype, TDType::F32);
        assert_eq!(Transform::Same.apply(&g).unwrap().to_f64_vec().unwrap(), g.to_f64_vec().unwrap());
        // A square weight keeps its shape and still moves its values.
        let sq = Transform::Transposed.apply(&t(&[1.0, 2.0, 3.0, 4.0], &[2, 2])).unwrap();
        assert_eq!(sq.to_f64_vec().unwrap(), [1.0, 3.0, 2.0, 4.0]);
        assert_eq!(Transform::Transposed.dims(&[4, 5]), Some(vec![5, 4]));
        assert_eq!(Transform::Transposed.dims(&[5]), None);
    }

    /// linear's layouts, as its op-table fact gives them for 2-D and N-D inputs.
    fn linear(i: &Inputs) -> Vec<NodeLayout> {
        let w = Slot::Input("weight", Transform::Transposed);
        match (i.rank("input"), i.shape("bias").is_some()) {
            (Some(2), true) => {
                vec![NodeLayout { node: "AddmmBackward0", slots: vec![Slot::Input("bias", Transform::Same), Slot::Input("input", Transform::Same), w] }]
            }
            (Some(2), false) => vec![NodeLayout { node: "MmBackward0", slots: vec![Slot::Input("input", Transform::Same), w] }],
            _ => vec![NodeLayout { node: "UnsafeViewBackward0", slots: vec![Slot::Incoming] }],
        }
    }

    fn input<'a>(param: &'static str, shape: &'a [usize], keyword: bool) -> GradInput<'a> {
        GradInput { param: Some(param), shape: Some(shape), keyword, ..MARKED }
    }

    #[test]
    fn node_layouts_place_by_parameter_and_are_confirmed_by_the_data() {
        let (x, w, b) = ([3, 4], [4, 4], [4]);
        let inputs = [input("input", &x, false), input("weight", &w, false), input("bias", &b, false)];
        let rec: [Option<&[usize]>; 3] = [Some(&[4]), Some(&[3, 4]), Some(&[4, 4])];
        let places = recorded_places(&inputs, &rec, Some(12), Some(linear)).unwrap();
        assert_eq!(places, [Place::Recorded(1, Transform::Same), Place::Recorded(2, Transform::Transposed), Place::Recorded(0, Transform::Same)]);
        // A keyword bias is in the node's list too; a null entry is an input without a gradient.
        let inputs = [input("input", &x, false), input("weight", &w, false), input("bias", &b, true)];
        let rec: [Option<&[usize]>; 3] = [Some(&[4]), None, Some(&[4, 4])];
        assert_eq!(recorded_places(&inputs, &rec, Some(12), Some(linear)).unwrap()[1], Place::Recorded(2, Transform::Transposed));
        // Shapes that do not fit the node's layout: no layout (not the input-order one).
        let rec: [Option<&[usize]>; 3] = [Some(&[3, 4]), Some(&[4, 4]), Some(&[4])];
        assert_eq!(recorded_places(&inputs, &rec, Some(12), Some(linear)), None);
        // Non-square: the transposed weight's shape.
        let (w2, b2) = ([5, 4], [5]);
        let inputs = [input("input", &x, false), input("weight", &w2, false), input("bias", &b2, false)];
        let rec: [Option<&[usize]>; 3] = [Some(&[5]), Some(&[3, 4]), Some(&[4, 5])];
        assert!(recorded_places(&inputs, &rec, Some(15), Some(linear)).is_some());
    }

    #[test]
    fn an_incoming_gradient_viewed_holds_no_inputs_gradient() {
        let (x, w) = ([2, 3, 4], [5, 4]);
        let inputs = [input("input", &x, false), input("weight", &w, false)];
        let places = recorded_places(&inputs, &[Some(&[6, 5])], Some(30), Some(linear)).unwrap();
        let why = "msprobe records the input gradients of the call's last autograd node, UnsafeViewBackward0: the incoming gradient passed on, not this input's gradient";
        assert_eq!(places, [Place::Elsewhere(why.into()), Place::Elsewhere(why.into())]);
        // The view must hold as many elements as the incoming gradient.
        assert_eq!(recorded_places(&inputs, &[Some(&[6, 4])], Some(30), Some(linear)), None);
    }

    #[test]
    fn input_order_layouts_hold_positional_inputs() {
        let (x, w) = ([3, 4], [4, 4]);
        let inputs = [input("input", &x, false), input("weight", &w, false), input("bias", &[4], true)];
        let rec: [Option<&[usize]>; 2] = [Some(&[3, 4]), Some(&[4, 4])];
        assert_eq!(
            recorded_places(&inputs, &rec, Some(12), None).unwrap(),
            [Place::Recorded(0, Transform::Same), Place::Recorded(1, Transform::Same), Place::Absent]
        );
        assert_eq!(recorded_places(&inputs, &rec[..1], Some(12), None), None);
    }
}
