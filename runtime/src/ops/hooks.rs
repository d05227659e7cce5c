//! msprobe 8.3.2's hook lists (`support_wrap_ops.yaml`, one file per
//! framework and prefix in `hook_lists/`): the APIs msprobe's dump tool can
//! record under each prefix. Beside the op table because together they say
//! which APIs a framework exposes: an API on its list (or in the op table)
//! is one a generated script may call by name (`src/render/api_map.rs`).

use crate::prefix::Prefix;
use crate::spec::Framework;

/// One hook list: the names under `prefix` in dumps of `framework`.
#[derive(Debug, Clone, Copy)]
pub struct HookList {
    /// The framework whose dumps use the prefix.
    pub framework: Framework,
    /// The dump's prefix (`Functional`, `Tensor`, `Torch`, `NPU`, `Mint`, `MintFunctional`).
    pub prefix: Prefix,
    text: &'static str,
}

impl HookList {
    /// The names of the list: one a line, `#` lines are comments.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
    }

    /// Whether the list holds `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.names().any(|l| l == name)
    }
}

const fn list(framework: Framework, prefix: Prefix, text: &'static str) -> HookList {
    HookList { framework, prefix, text }
}

/// Every hook list.
pub const LISTS: &[HookList] = &[
    list(Framework::PyTorch, Prefix::Functional, include_str!("hook_lists/pytorch_functional.txt")),
    list(Framework::PyTorch, Prefix::Tensor, include_str!("hook_lists/pytorch_tensor.txt")),
    list(Framework::PyTorch, Prefix::Torch, include_str!("hook_lists/pytorch_torch.txt")),
    list(Framework::PyTorch, Prefix::Npu, include_str!("hook_lists/pytorch_npu.txt")),
    list(Framework::MindSpore, Prefix::Functional, include_str!("hook_lists/mindspore_functional.txt")),
    list(Framework::MindSpore, Prefix::Tensor, include_str!("hook_lists/mindspore_tensor.txt")),
    list(Framework::MindSpore, Prefix::Mint, include_str!("hook_lists/mindspore_mint.txt")),
    list(Framework::MindSpore, Prefix::MintFunctional, include_str!("hook_lists/mindspore_mint_functional.txt")),
];

/// The torch functions msprobe dumps under `Torch` by their last name that
/// exist only in `torch.linalg` (each is `linalg.<name>` on the Torch list).
pub const TORCH_LINALG_ONLY: HookList = list(Framework::PyTorch, Prefix::Torch, include_str!("hook_lists/torch_linalg_only.txt"));

/// The hook list of `framework` under `prefix` (MSAdapter's dumps record
/// PyTorch's APIs: its lists, [`Framework::api_family`]); `None` for a
/// prefix its dumps are not replayed under.
pub fn hook_list(framework: Framework, prefix: Prefix) -> Option<&'static HookList> {
    LISTS.iter().find(|l| l.framework == framework.api_family() && l.prefix == prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_list_has_names_and_linalg_only_names_are_on_the_torch_list() {
        for l in LISTS.iter().chain([&TORCH_LINALG_ONLY]) {
            assert!(l.names().count() > 0, "{} {}", l.framework.as_str(), l.prefix);
        }
        let torch = hook_list(Framework::PyTorch, Prefix::Torch).unwrap();
        for name in TORCH_LINALG_ONLY.names() {
            assert!(torch.contains(&format!("linalg.{name}")), "{name} is not linalg.{name} on the Torch list");
        }
        assert!(hook_list(Framework::MindSpore, Prefix::Torch).is_none());
        assert!(hook_list(Framework::MindTorch, Prefix::Torch).unwrap().contains("matmul"));
        assert!(hook_list(Framework::MindTorch, Prefix::Mint).is_none());
        let npu = hook_list(Framework::PyTorch, Prefix::Npu).unwrap();
        assert_eq!(npu.names().count(), 113);
        assert!(npu.contains("npu_fusion_attention") && npu.contains("npu_rms_norm"));
        assert!(hook_list(Framework::MindTorch, Prefix::Npu).is_some() && hook_list(Framework::MindSpore, Prefix::Npu).is_none());
    }
}
