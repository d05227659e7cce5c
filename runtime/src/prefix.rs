//! The namespaces msprobe hooks APIs in: the first segment of a dump key
//! (`Torch.matmul.0`), one type for the binary (names, rendering) and the
//! runtime (the call being replayed, the hook lists).

use std::fmt;

use crate::spec::Framework;

/// The namespace an API was hooked in, i.e. the first segment of its dump key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Prefix {
    /// `torch.nn.functional` (PyTorch) or `mindspore.ops` (MindSpore).
    Functional,
    /// Methods of `torch.Tensor` / `mindspore.Tensor`.
    Tensor,
    /// Top-level `torch` functions (incl. `torch.linalg`, dumped by last segment).
    Torch,
    /// `mindspore.mint`.
    Mint,
    /// `mindspore.mint.nn.functional`.
    MintFunctional,
    /// `torch_npu` (PyTorch dumps on Ascend; msprobe's dumper records its
    /// functions as `NPU.<op>.<N>`).
    Npu,
}

impl Prefix {
    /// Parses the first dump-key segment.
    pub fn parse(s: &str) -> Option<Prefix> {
        Some(match s {
            "Functional" => Prefix::Functional,
            "Tensor" => Prefix::Tensor,
            "Torch" => Prefix::Torch,
            "Mint" => Prefix::Mint,
            "MintFunctional" => Prefix::MintFunctional,
            "NPU" => Prefix::Npu,
            _ => return None,
        })
    }

    /// The spelling used in dump keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Prefix::Functional => "Functional",
            Prefix::Tensor => "Tensor",
            Prefix::Torch => "Torch",
            Prefix::Mint => "Mint",
            Prefix::MintFunctional => "MintFunctional",
            Prefix::Npu => "NPU",
        }
    }

    /// Whether `framework`'s dumps can contain this prefix (the others are
    /// not replayed: `Distributed`, `Jit`, `Aten`, module entries, ...);
    /// MSAdapter's dumps have PyTorch's (its `NPU` entries are calls of
    /// MSAdapter's torch_npu, msprobe 26.2.0's `api_register.py`).
    pub fn replayable_in(self, framework: Framework) -> bool {
        match framework.api_family() {
            Framework::MindSpore => matches!(self, Prefix::Functional | Prefix::Tensor | Prefix::Mint | Prefix::MintFunctional),
            _ => matches!(self, Prefix::Functional | Prefix::Tensor | Prefix::Torch | Prefix::Npu),
        }
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
