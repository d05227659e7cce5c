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
    /// `torch._VF`, the kernels behind `nn.LSTM` (`VF.lstm.0`).
    Vf,
    /// ATen operators (msprobe's aten level).
    Aten,
    /// Collective communication (`torch.distributed`, MindSpore's `comm_func`).
    Distributed,
    /// `mindspore.mint.distributed`.
    MintDistributed,
    /// MindSpore Primitives, the kernels below its APIs.
    Primitive,
    /// Jit-compiled functions, one entry per graph.
    Jit,
    /// MindSpeed's fused kernels.
    MindSpeed,
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
            "VF" => Prefix::Vf,
            "Aten" => Prefix::Aten,
            "Distributed" => Prefix::Distributed,
            "MintDistributed" => Prefix::MintDistributed,
            "Primitive" => Prefix::Primitive,
            "Jit" => Prefix::Jit,
            "MindSpeed" => Prefix::MindSpeed,
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
            Prefix::Vf => "VF",
            Prefix::Aten => "Aten",
            Prefix::Distributed => "Distributed",
            Prefix::MintDistributed => "MintDistributed",
            Prefix::Primitive => "Primitive",
            Prefix::Jit => "Jit",
            Prefix::MindSpeed => "MindSpeed",
        }
    }

    /// Whether `framework`'s dumps can contain this prefix (the others are
    /// not replayed: `Distributed`, `Jit`, `Aten`, module entries, ...);
    /// MSAdapter's dumps have PyTorch's (its `NPU` entries are calls of
    /// MSAdapter's torch_npu, msprobe 26.2.0's `api_register.py`).
    pub fn replayable_in(self, framework: Framework) -> bool {
        match framework.api_family() {
            Framework::MindSpore => matches!(self, Prefix::Functional | Prefix::Tensor | Prefix::Mint | Prefix::MintFunctional),
            _ => matches!(self, Prefix::Functional | Prefix::Tensor | Prefix::Torch | Prefix::Npu | Prefix::Vf),
        }
    }

    /// Why a call under this prefix is never replayed natively, for the
    /// prefixes msprobe writes that are not the op table's: a replay counts
    /// such entries under this reason instead of dropping them unseen.
    pub fn not_replayed(self) -> Option<&'static str> {
        Some(match self {
            Prefix::Distributed | Prefix::MintDistributed => {
                "a collective communication: its result is made of the other ranks' data, which one rank's dump does not hold"
            }
            Prefix::Primitive => "a MindSpore Primitive, the kernel below an API: the API call that ran it is judged",
            Prefix::Jit => "a jit-compiled graph recorded as one entry, not one API",
            Prefix::Aten => "an ATen operator of msprobe's aten level, below the APIs the op table replays",
            Prefix::MindSpeed => "a MindSpeed fused kernel, which the op table does not hold",
            _ => return None,
        })
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
