//! The data flow between a dump's forward calls, as its statistics show
//! it: an input whose dtype, shape and recorded Max, Min, Mean and Norm
//! are those of an earlier call's output is taken to be that output (the
//! latest such call's: an exact match of four statistics of the same shape
//! is another tensor only by coincidence). `replay --from-compare` walks
//! it from an inherited difference to the own error upstream of it.

use std::collections::{HashMap, VecDeque};

use crate::model::{ApiCall, Stat, TensorDesc};

/// Producers and consumers of each call, by index in dump order.
#[derive(Debug, Default)]
pub(super) struct Flow {
    producers: Vec<Vec<usize>>,
    consumers: Vec<Vec<usize>>,
}

/// The identity of a tensor by its record: dtype, shape and the bits of
/// its four statistics; `None` when it has none of them.
fn key(t: &TensorDesc) -> Option<String> {
    let bits = |s: &Stat| match s {
        Stat::Num(x) => Some(x.to_bits().to_string()),
        Stat::Bool(b) => Some(b.to_string()),
        Stat::Missing => None,
    };
    let stats: Vec<Option<String>> = [&t.max, &t.min, &t.mean, &t.norm].into_iter().map(bits).collect();
    if stats.iter().all(Option::is_none) {
        return None;
    }
    let stats: Vec<String> = stats.into_iter().map(Option::unwrap_or_default).collect();
    Some(format!("{}|{:?}|{}", t.dtype.name(), t.shape, stats.join(",")))
}

impl Flow {
    /// The flow of `calls` (in dump order).
    pub fn of(calls: &[ApiCall]) -> Flow {
        let mut latest: HashMap<String, usize> = HashMap::new();
        let mut flow = Flow { producers: vec![vec![]; calls.len()], consumers: vec![vec![]; calls.len()] };
        for (i, call) in calls.iter().enumerate() {
            let f = &call.forward;
            let inputs = f.args.iter().chain(f.kwargs.iter().map(|(_, a)| a)).flat_map(|a| a.tensors());
            let mut producers: Vec<usize> = inputs.filter_map(key).filter_map(|k| latest.get(&k).copied()).collect();
            producers.sort_unstable();
            producers.dedup();
            for &p in &producers {
                flow.consumers[p].push(i);
            }
            flow.producers[i] = producers;
            for k in f.outputs.iter().flat_map(|a| a.tensors()).filter_map(key) {
                latest.insert(k, i);
            }
        }
        flow
    }

    /// The nearest call to `from` (fewest edges; among as near, the latest)
    /// for which `target` holds: upstream along producers, and with
    /// `downstream` along consumers too (a gradient depends on both).
    pub fn nearest(&self, from: usize, target: &dyn Fn(usize) -> bool, downstream: bool) -> Option<usize> {
        let mut seen = vec![false; self.producers.len()];
        let mut frontier = VecDeque::from([from]);
        seen[from] = true;
        while !frontier.is_empty() {
            let mut next = vec![];
            for i in frontier.drain(..) {
                let around = self.producers[i].iter().chain(if downstream { self.consumers[i].iter() } else { [].iter() });
                for &j in around {
                    if !seen[j] {
                        seen[j] = true;
                        next.push(j);
                    }
                }
            }
            if let Some(&hit) = next.iter().filter(|&&j| target(j)).max() {
                return Some(hit);
            }
            frontier.extend(next);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Arg, Forward};
    use runtime::dtype::TDType;

    fn t(x: f64) -> Arg {
        let s = Stat::Num(x);
        Arg::Tensor(TensorDesc { dtype: TDType::F32, shape: vec![2], max: s, min: s, mean: s, norm: s, requires_grad: None, data_name: None })
    }

    fn call(name: &str, inputs: &[f64], output: f64) -> ApiCall {
        ApiCall {
            name: crate::model::ApiName::parse(name).unwrap(),
            forward: Forward { args: inputs.iter().map(|&x| t(x)).collect(), kwargs: vec![], outputs: vec![t(output)] },
            backward: None,
        }
    }

    #[test]
    fn inputs_flow_from_the_latest_output_they_equal() {
        // a -> b -> c, and d reads a's output and an unseen tensor.
        let calls = [call("Torch.a.0", &[9.0], 1.0), call("Torch.b.0", &[1.0], 2.0), call("Torch.c.0", &[2.0], 3.0), call("Torch.d.0", &[1.0, 7.0], 4.0)];
        let flow = Flow::of(&calls);
        assert_eq!(flow.producers, [vec![], vec![0], vec![1], vec![0]]);
        assert_eq!(flow.nearest(2, &|j| j == 0, false), Some(0));
        assert_eq!(flow.nearest(2, &|j| j == 3, false), None);
        assert_eq!(flow.nearest(2, &|j| j == 3, true), Some(3));
        assert_eq!(flow.nearest(0, &|j| j == 0, true), None, "not itself");
    }
}
