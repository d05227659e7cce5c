//! The estimated cost of replaying one call, which `--shard` balances: the
//! bytes of tensor data it reads plus the float64 operations of its bench
//! run, from the shapes the dump records. A scheduling estimate, not a
//! fact about the op: it only has to rank a 2048×2048 matmul far above an
//! add, and be the same on every machine.

use crate::model::{ApiCall, Arg, Direction, TensorDesc};

/// Operations per element of an op that is not a contraction: an
/// elementwise op, a reduction, a copy.
const PER_ELEMENT: u64 = 8;

/// The elements of a tensor (saturating).
fn elements(t: &TensorDesc) -> u64 {
    t.shape.iter().fold(1u64, |n, &d| n.saturating_mul(d))
}

/// The tensors of some values, in order.
fn tensors(args: &[Arg]) -> Vec<&TensorDesc> {
    args.iter().flat_map(Arg::tensors).collect()
}

/// The length of `t`'s dimension `from_end` places from the last (0: the last).
fn dim_from_end(t: &TensorDesc, from_end: usize) -> u64 {
    t.shape.len().checked_sub(from_end + 1).map_or(1, |i| t.shape[i])
}

/// The float64 operations of one forward run: `2·m·n·k` for a matrix
/// product (output elements × the contracted length), `2 · output ·
/// (weight elements / output channels)` for a convolution, `4 · q · sk` for
/// attention, else [`PER_ELEMENT`] per element of the inputs and outputs.
fn forward_flops(call: &ApiCall) -> u64 {
    let op = call.name.op.rsplit('.').next().unwrap_or(&call.name.op).trim_matches('_');
    let mut inputs = tensors(&call.forward.args);
    inputs.extend(call.forward.kwargs.iter().flat_map(|(_, a)| a.tensors()));
    let outputs = tensors(&call.forward.outputs);
    let out: u64 = outputs.iter().map(|t| elements(t)).fold(0, u64::saturating_add);
    let matmul = ["matmul", "mm", "bmm", "linear", "dense", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "einsum", "BatchMatMul", "MatMul"];
    let contracted = |skip: usize| inputs.iter().skip(skip).find(|t| !t.shape.is_empty()).map_or(1, |t| dim_from_end(t, 0));
    if matmul.contains(&op) {
        let skip = usize::from(op.starts_with("add") || op == "baddbmm");
        return out.saturating_mul(2).saturating_mul(contracted(skip));
    }
    if op.starts_with("conv") || op == "convolution" {
        let per_output = inputs.get(1).map_or(1, |w| elements(w) / w.shape.first().copied().unwrap_or(1).max(1));
        return out.saturating_mul(2).saturating_mul(per_output.max(1));
    }
    if op.contains("attention") {
        let (q, k) = (inputs.first().map_or(0, |t| elements(t)), inputs.get(1).map_or(1, |t| dim_from_end(t, 1)));
        return q.saturating_mul(4).saturating_mul(k);
    }
    let all: u64 = inputs.iter().map(|t| elements(t)).fold(out, u64::saturating_add);
    all.saturating_mul(PER_ELEMENT)
}

/// The estimated cost of replaying `call` in `direction` over `iterations`
/// runs: the bytes of its recorded tensors (read from their files with
/// real data, held in memory either way) plus its float64 operations, a
/// backward run counting three forwards.
pub fn estimate(call: &ApiCall, direction: Direction, iterations: u32) -> u64 {
    let mut values: Vec<&TensorDesc> = tensors(&call.forward.args);
    values.extend(call.forward.kwargs.iter().flat_map(|(_, a)| a.tensors()));
    values.extend(tensors(&call.forward.outputs));
    let mut runs = 1;
    if let (Direction::Backward, Some(b)) = (direction, &call.backward) {
        values.extend(tensors(&b.grad_outputs));
        values.extend(tensors(&b.grad_inputs));
        runs = 3;
    }
    let bytes = values.iter().map(|t| elements(t).saturating_mul(t.dtype.itemsize() as u64)).fold(0, u64::saturating_add);
    let flops = forward_flops(call).saturating_mul(runs).saturating_mul(u64::from(iterations.max(1)));
    bytes.saturating_add(flops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ApiName;

    fn call(name: &str, args: &[&[u64]], out: &[u64]) -> ApiCall {
        let t = |s: &[u64]| serde_json::json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": s, "Max": 1.0, "Min": 0.0});
        let fwd = serde_json::json!({"input_args": args.iter().map(|s| t(s)).collect::<Vec<_>>(), "input_kwargs": {}, "output": [t(out)]});
        ApiCall::from_entries(ApiName::parse(name).unwrap(), &fwd, None).unwrap()
    }

    #[test]
    fn contractions_cost_by_their_products() {
        let mm = call("Torch.matmul.0", &[&[64, 32], &[32, 16]], &[64, 16]);
        assert_eq!(forward_flops(&mm), 2 * 64 * 16 * 32);
        let conv = call("Functional.conv2d.0", &[&[1, 3, 8, 8], &[4, 3, 3, 3]], &[1, 4, 6, 6]);
        assert_eq!(forward_flops(&conv), 2 * 4 * 36 * 27);
        let sdpa = call("Functional.scaled_dot_product_attention.0", &[&[1, 2, 16, 8], &[1, 2, 32, 8], &[1, 2, 32, 8]], &[1, 2, 16, 8]);
        assert_eq!(forward_flops(&sdpa), 4 * 256 * 32);
        let add = call("Tensor.add.0", &[&[10], &[10]], &[10]);
        assert_eq!(forward_flops(&add), 8 * 30);
        // Bytes count too: three float32 tensors of 10 elements.
        assert_eq!(estimate(&add, Direction::Forward, 1), 120 + 240);
        assert_eq!(estimate(&add, Direction::Forward, 2), 120 + 480);
    }
}
