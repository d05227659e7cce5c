//! How many terms one element of a contraction's result sums: its
//! accumulation chain. A device that accumulates a matrix product's terms
//! one after another in float32 (a GPU's GEMM thread along K, an Ascend
//! cube's blocks) leaves an error growing with the square root of the
//! chain's length where the terms share a sign (a weight's gradient summed
//! over the tokens), beyond the Sums class's k for long chains; the
//! rulebook's `rounding.chain_covered` says how long a chain k covers, and
//! the Sums magnitude of a longer one grows by `√(n / covered)`
//! (`crate::replay`'s magnitudes; the scripts' `magnitude.py` mirrors these
//! lengths). The lengths come from the op's structure ([`Slicing`]):
//! products, `linear` and convolutions; other Sums ops have none.

use super::slicing::Slicing;

/// The accumulation lengths of a call's results: its first output's, and
/// each gradient's (by parameter name, in the order given); `None` where
/// the structure does not say or a shape is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chains {
    /// Output 0's length.
    pub output: Option<usize>,
    /// Each gradient's, aligned with the parameters asked for.
    pub grads: Vec<Option<usize>>,
}

/// The element count of a shape.
fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// `a / b` of element counts, at least 1 (an empty tensor sums nothing).
fn ratio(a: usize, b: usize) -> usize {
    (a / b.max(1)).max(1)
}

/// The chains of a call of an op with structure `slicing`: `shape(name)`
/// gives a tensor parameter's shape, `output` output 0's element count,
/// `grads` the parameter of each gradient. `None` for a structure without
/// contractions.
pub fn lengths(slicing: Slicing, shape: &dyn Fn(&str) -> Option<Vec<usize>>, output: usize, grads: &[Option<&str>]) -> Option<Chains> {
    match slicing {
        // a [..., M, K] @ b [..., K, N]: K; a's gradient sums over N, b's over
        // a's rows that share one of b's matrices; an added tensor's over its broadcast.
        Slicing::Product { a, b } => {
            let (sa, sb) = (shape(a)?, shape(b)?);
            let k = *sa.last()?;
            let b_batch = if sb.len() >= 2 { ratio(numel(&sb), sb[sb.len() - 1] * sb[sb.len() - 2]) } else { 1 };
            let n = if sb.len() >= 2 { sb[sb.len() - 1] } else { 1 };
            let rows = ratio(numel(&sa), k);
            Some(Chains {
                output: Some(k),
                grads: grads
                    .iter()
                    .map(|p| match *p {
                        Some(p) if p == a => Some(n.max(1)),
                        Some(p) if p == b => Some(ratio(rows, b_batch)),
                        Some(p) => shape(p).map(|s| ratio(output, numel(&s))),
                        None => None,
                    })
                    .collect(),
            })
        }
        // input [..., K] @ weight [N, K]ᵀ + bias: K; input's gradient sums over N, weight's and bias's over the rows.
        Slicing::Linear => {
            let (input, weight) = (shape("input")?, shape("weight")?);
            let k = *input.last()?;
            let rows = ratio(numel(&input), k);
            let n = if weight.len() == 2 { weight[0] } else { 1 };
            let per = move |p: &str| match p {
                "input" => Some(n.max(1)),
                "weight" | "bias" => Some(rows),
                _ => None,
            };
            Some(Chains { output: Some(k), grads: grads.iter().map(|p| p.and_then(per)).collect() })
        }
        // input [N, C, ...] * weight [O, C/groups, kernel...]: C/groups·kernel; input's
        // gradient at most O·kernel, weight's and bias's at most N·spatial.
        Slicing::Conv => {
            let (input, weight) = (shape("input")?, shape("weight")?);
            let channels = if input.len() == weight.len() { 1 } else { 0 };
            let (out, back, over) = (ratio(numel(&weight), weight[0]), ratio(numel(&weight), *weight.get(1)?), ratio(numel(&input), *input.get(channels)?));
            Some(Chains {
                output: Some(out),
                grads: grads
                    .iter()
                    .map(|p| match *p {
                        Some("input") => Some(back),
                        Some("weight") | Some("bias") => Some(over),
                        _ => None,
                    })
                    .collect(),
            })
        }
        _ => None,
    }
}

/// The factor a Sums magnitude of a chain of `n` terms grows by: `√(n /
/// covered)` beyond the `covered` length k holds, else 1.
pub fn factor(n: usize, covered: f64) -> f64 {
    let n = n as f64;
    if n > covered {
        (n / covered).sqrt()
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(named: &'static [(&'static str, &'static [usize])]) -> impl Fn(&str) -> Option<Vec<usize>> {
        move |name| named.iter().find(|(n, _)| *n == name).map(|(_, s)| s.to_vec())
    }

    #[test]
    fn a_linear_weight_gradient_sums_over_every_token() {
        let shape = shapes(&[("input", &[4, 128, 768]), ("weight", &[2304, 768]), ("bias", &[2304])]);
        let c = lengths(Slicing::Linear, &shape, 4 * 128 * 2304, &[Some("input"), Some("weight"), Some("bias")]).unwrap();
        assert_eq!(c, Chains { output: Some(768), grads: vec![Some(2304), Some(512), Some(512)] });
    }

    #[test]
    fn a_batched_product_sums_within_its_own_matrices() {
        let shape = shapes(&[("input", &[12, 64, 32]), ("mat2", &[12, 32, 64])]);
        let c = lengths(Slicing::Product { a: "input", b: "mat2" }, &shape, 12 * 64 * 64, &[Some("input"), Some("mat2")]).unwrap();
        assert_eq!(c, Chains { output: Some(32), grads: vec![Some(64), Some(64)] });
        // A matrix shared by the batch (matmul broadcasting it) sums over every row.
        let shape = shapes(&[("input", &[8, 64, 32]), ("other", &[32, 16])]);
        let c = lengths(Slicing::Product { a: "input", b: "other" }, &shape, 8 * 64 * 16, &[Some("other")]).unwrap();
        assert_eq!(c.grads, vec![Some(512)]);
        // addmm's added input: its broadcast.
        let shape = shapes(&[("input", &[16]), ("mat1", &[100, 8]), ("mat2", &[8, 16])]);
        let c = lengths(Slicing::Product { a: "mat1", b: "mat2" }, &shape, 1600, &[Some("input")]).unwrap();
        assert_eq!(c.grads, vec![Some(100)]);
    }

    #[test]
    fn a_convolution_sums_its_kernel_forward_and_the_batch_for_its_weight() {
        let shape = shapes(&[("input", &[8, 64, 56, 56]), ("weight", &[128, 64, 3, 3])]);
        let c = lengths(Slicing::Conv, &shape, 8 * 128 * 56 * 56, &[Some("input"), Some("weight"), None]).unwrap();
        assert_eq!(c, Chains { output: Some(576), grads: vec![Some(1152), Some(8 * 56 * 56), None] });
    }

    #[test]
    fn chains_within_the_covered_length_keep_the_magnitude() {
        assert_eq!(factor(128, 128.0), 1.0);
        assert_eq!(factor(512, 128.0), 2.0);
        assert_eq!(lengths(Slicing::Kept, &|_| None, 1, &[]), None);
    }
}
