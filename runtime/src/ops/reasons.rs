//! The names of msprobe's hook lists that are never replayed natively, each
//! with the reason: what the call does that a replay from one rank's dump
//! cannot reproduce or judge. Data, one home: a dump's call of such a name
//! is a `skip` row giving the reason ([`crate::error::Error::NotReplayed`]),
//! the coverage test counts them apart from the op table's gaps, and the
//! README's table of them is printed from here
//! (`HOOK_TABLE=1 cargo test -p runtime --test hook_coverage`).
//!
//! A name belongs here only when no op-table entry could judge it: a name
//! that could be replayed but is not yet is a gap, not a reason.

use crate::spec::Framework;

/// Why a hooked name is not replayed natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// It draws random numbers, and the dump records neither the generator's
    /// state nor a mask the draws could be read back from.
    Random,
    /// A collective inside the kernel: its result depends on the other
    /// ranks' tensors, which one rank's dump does not hold.
    Collective,
    /// Its result is a fact of the device or of memory, not values computed
    /// from its inputs.
    DeviceState,
    /// An argument is a Python function, which the dump does not record.
    Callable,
    /// A module on the hook list, not a function: msprobe lists it, and a
    /// call of it is never dumped.
    Module,
    /// MindSpore has no function of the name (neither 2.6 nor 2.10, the
    /// versions the project runs): msprobe wraps only what the module
    /// holds, so no call of it is dumped (runtime/tests/agreement.rs checks
    /// the absence in MindSpore itself).
    Absent,
}

impl Reason {
    /// The sentence a `skip` row and the README give.
    pub fn why(self) -> &'static str {
        match self {
            Reason::Random => "it draws random numbers, and the dump records neither the generator's state nor a mask to read the draws back from",
            Reason::Collective => "it communicates with the other ranks inside the kernel, and one rank's dump does not hold their tensors",
            Reason::DeviceState => "its result is a fact of the device or its memory, not values computed from its inputs",
            Reason::Callable => "an argument is a Python function, which the dump does not record",
            Reason::Module => "it is a module msprobe lists, not a function; no call of it is dumped",
            Reason::Absent => "MindSpore (2.6, 2.10) has no function of that name, and msprobe wraps only what exists; no call of it is dumped",
        }
    }

    /// A short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Random => "random numbers",
            Reason::Collective => "a collective",
            Reason::DeviceState => "device state",
            Reason::Callable => "a Python function argument",
            Reason::Module => "a module, not a function",
            Reason::Absent => "not in MindSpore",
        }
    }
}

/// One reason and the names it applies to, in dumps of `family`.
#[derive(Debug)]
pub struct Reasoned {
    /// PyTorch (MSAdapter's dumps too) or MindSpore.
    pub family: Framework,
    /// Why.
    pub reason: Reason,
    /// Dump names, `Prefix.op`.
    pub names: &'static [&'static str],
}

/// Every name that is never replayed, by framework and reason.
pub static REASONS: &[Reasoned] = &[
    Reasoned {
        family: Framework::PyTorch,
        reason: Reason::Random,
        names: &[
            "Torch.bernoulli",
            "Torch.binomial",
            "Torch.multinomial",
            "Torch.normal",
            "Torch.poisson",
            "Tensor.bernoulli",
            "Tensor.bernoulli_",
            "Tensor.cauchy_",
            "Tensor.exponential_",
            "Tensor.geometric_",
            "Tensor.log_normal_",
            "Tensor.multinomial",
            "Tensor.normal_",
            "Functional.gumbel_softmax",
            "Functional.fractional_max_pool2d",
            "Functional.fractional_max_pool2d_with_indices",
            "Functional.fractional_max_pool3d",
            "Functional.fractional_max_pool3d_with_indices",
            "NPU.npu_random_choice_with_mask",
            "NPU._npu_dropout",
            "NPU.npu_dropout_with_add_softmax",
        ],
    },
    Reasoned {
        family: Framework::PyTorch,
        reason: Reason::Collective,
        names: &[
            "NPU.npu_all_gather_base_mm",
            "NPU.npu_mm_reduce_scatter_base",
            "NPU.npu_mm_all_reduce_base",
            "NPU.npu_all_gather_quant_mm",
            "NPU.npu_quant_mm_reduce_scatter",
            "NPU.npu_quant_reduce_scatter",
            "NPU.npu_quant_all_reduce",
            "NPU.npu_all_to_all_matmul",
            "NPU.npu_matmul_all_to_all",
            "NPU.npu_quant_matmul_all_to_all",
            "NPU.npu_all_to_all_quant_matmul",
            "NPU.npu_quant_gmm_alltoallv",
            "NPU.npu_alltoallv_gmm",
            "NPU.npu_alltoallv_quant_gmm",
            "NPU.npu_gmm_alltoallv",
            "NPU.npu_moe_distribute_dispatch",
            "NPU.npu_moe_distribute_dispatch_v2",
            "NPU.npu_moe_distribute_dispatch_setup",
            "NPU.npu_moe_distribute_dispatch_teardown",
            "NPU.npu_moe_distribute_combine",
            "NPU.npu_moe_distribute_combine_v2",
            "NPU.npu_moe_distribute_combine_setup",
            "NPU.npu_moe_distribute_combine_teardown",
            "NPU.npu_moe_distribute_combine_add_rms_norm",
        ],
    },
    Reasoned {
        family: Framework::PyTorch,
        reason: Reason::DeviceState,
        names: &["NPU.npu_alloc_float_status", "NPU.npu_prefetch", "Tensor.stride", "Tensor.q_zero_point"],
    },
    Reasoned { family: Framework::PyTorch, reason: Reason::Callable, names: &["Tensor.map_", "Tensor.map2_"] },
    Reasoned {
        family: Framework::MindSpore,
        reason: Reason::Random,
        names: &[
            "Functional.bernoulli",
            "Functional.gamma",
            "Functional.laplace",
            "Functional.multinomial",
            "Functional.multinomial_with_replacement",
            "Functional.normal",
            "Functional.rand",
            "Functional.rand_like",
            "Functional.randint",
            "Functional.randint_like",
            "Functional.randn",
            "Functional.randn_like",
            "Functional.random_gamma",
            "Functional.random_poisson",
            "Functional.randperm",
            "Functional.standard_laplace",
            "Functional.standard_normal",
            "Functional.uniform",
            "Functional.choice_with_mask",
            "Functional.random_categorical",
            "Functional.log_uniform_candidate_sampler",
            "Functional.uniform_candidate_sampler",
            "Functional.shuffle",
            "Functional.gumbel_softmax",
            "Functional.rrelu",
            "Functional.fractional_max_pool3d",
            "Tensor.bernoulli",
            "Tensor.multinomial",
            "Mint.bernoulli",
            "Mint.multinomial",
            "Mint.normal",
            "Mint.rand",
            "Mint.rand_like",
            "MintFunctional.normal",
        ],
    },
    Reasoned { family: Framework::MindSpore, reason: Reason::Callable, names: &["Functional.derivative", "Functional.jet"] },
    Reasoned {
        family: Framework::MindSpore,
        reason: Reason::Module,
        names: &["Mint.absolute_import", "Mint.functional", "Mint.nn", "Mint.special", "Mint.linalg", "MintFunctional.absolute_import"],
    },
    Reasoned {
        family: Framework::MindSpore,
        reason: Reason::Absent,
        names: &[
            "Tensor.__imatmul__",
            "Mint.add_ex",
            "Mint.any_ex",
            "Mint.avg_pool2d",
            "Mint.baddbmm_ex",
            "Mint.batch_norm",
            "Mint.cat_ex",
            "Mint.flip_ex",
            "Mint.fold",
            "Mint.grid_sample",
            "Mint.interpolate",
            "Mint.leaky_relu",
            "Mint.linear",
            "Mint.mean_ex",
            "Mint.one_hot",
            "Mint.ones_ex",
            "Mint.pad",
            "Mint.permute_ex",
            "Mint.softplus",
            "Mint.sqrt_ex",
            "Mint.sub_ex",
            "Mint.unfold",
            "Mint.zeros_ex",
            "MintFunctional.batch_norm_ex",
            "MintFunctional.bce_with_logits",
            "MintFunctional.max_pool2d_ex",
            "MintFunctional.one_hot_ext",
            "MintFunctional.softmax_ex",
        ],
    },
];

/// Why `api` (`Prefix.op`) is never replayed in dumps of `framework`, if it is one of [`REASONS`].
pub fn reason(framework: Framework, api: &str) -> Option<Reason> {
    let family = framework.api_family();
    REASONS.iter().find(|r| r.family == family && r.names.contains(&api)).map(|r| r.reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::hooks::LISTS;

    /// A reason is never given for a name the op table holds for the
    /// framework (a MindSpore name may fall back to PyTorch's entry of the
    /// same name, which the reason overrides), every name
    /// is on one of the framework's hook lists (8.3.2's, or named in 26.2.0's
    /// NPU list, which the coverage test reads), and each once.
    #[test]
    fn reasons_name_only_unreplayed_hooked_names_once() {
        let mut seen = std::collections::HashSet::new();
        for r in REASONS {
            for name in r.names {
                assert!(seen.insert((r.family, *name)), "{name} is listed twice");
                let own = if r.family == Framework::MindSpore { format!("MS.{name}") } else { name.to_string() };
                let in_table = crate::ops::table().any(|op| op.names.contains(&own.as_str()));
                assert!(!in_table && crate::ops::derive::lookup(r.family, name).is_none(), "{name} is replayed and has a reason");
                assert!(crate::ops::lookup(r.family, name).is_none(), "{name}: lookup must give way to the reason");
                let (prefix, op) = name.split_once('.').unwrap();
                let listed = LISTS.iter().any(|l| l.framework == r.family && l.prefix.as_str() == prefix && l.contains(op));
                assert!(listed || prefix == "NPU", "{name} is on no hook list of {}", r.family.as_str());
            }
        }
    }
}
