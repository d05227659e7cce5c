//! How the generated scripts' bench (torch on the CPU at raised precision)
//! calls the APIs that the torch callable of their own name does not
//! replay, keyed by the op table's `Prefix.op` names: MindSpore APIs whose
//! signature differs from torch's (a helper of the scripts' machinery,
//! `python/msprobe_rs/repro/ms_bench.py`, taking MindSpore's argument
//! names), MindSpore APIs torch spells otherwise, and the Tensor casts to a
//! fixed dtype, which the bench raises. `src/render/api_map.rs` is their one
//! reader.

/// A MindSpore API the bench replays with a helper of the machinery.
#[derive(Debug, Clone, Copy)]
pub struct BenchHelper {
    /// The dump's `Prefix.op`.
    pub api: &'static str,
    /// The function `ms_bench.py` defines with MindSpore's signature.
    pub helper: &'static str,
    /// Why torch's function of the same name does not do (the script's note).
    pub why: &'static str,
}

/// A MindSpore API whose torch bench is a torch callable of another name.
#[derive(Debug, Clone, Copy)]
pub struct BenchRename {
    /// The dump's `Prefix.op`.
    pub api: &'static str,
    /// The torch module.
    pub module: &'static str,
    /// The callable in it.
    pub attr: &'static str,
    /// Why (the script's note).
    pub why: &'static str,
}

const fn helper(api: &'static str, helper: &'static str, why: &'static str) -> BenchHelper {
    BenchHelper { api, helper, why }
}

/// MindSpore APIs whose signature, defaults or index dtypes differ from the
/// torch function of their name.
pub const MINDSPORE_HELPERS: &[BenchHelper] = &[
    helper("Functional.gather", "ms_ops_gather", "mindspore.ops.gather(params, indices, axis) takes whole slices; torch.gather does not"),
    helper(
        "Functional.conv2d",
        "ms_ops_conv2d",
        "mindspore.ops.conv2d takes pad_mode ('valid', 'same', 'pad'); torch.nn.functional.conv2d does not, and pads evenly only",
    ),
    helper("Functional.cross_entropy", "ms_ops_cross_entropy", "torch wants int64 class indices; MindSpore takes Int32"),
    helper(
        "Functional.nll_loss",
        "ms_ops_nll_loss",
        "torch wants int64 class indices, and its nll_loss has neither MindSpore's argument order nor its label_smoothing",
    ),
    helper(
        "Functional.binary_cross_entropy_with_logits",
        "ms_ops_binary_cross_entropy_with_logits",
        "mindspore.ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction): torch's fourth argument is size_average",
    ),
    helper(
        "MintFunctional.binary_cross_entropy",
        "ms_mint_binary_cross_entropy",
        "mint's binary_cross_entropy takes reduction fourth; torch's fourth argument is size_average",
    ),
    helper("Functional.rms_norm", "ms_ops_rms_norm", "torch has no rms_norm with gamma and rstd: torch_npu's npu_rms_norm reference, the same Ascend operator"),
    helper("Functional.swiglu", "ms_ops_swiglu", "torch has no swiglu: torch_npu's npu_swiglu reference, the same Ascend operator"),
    helper("Functional.fast_gelu", "ms_ops_fast_gelu", "torch has no fast_gelu: torch_npu's npu_fast_gelu reference, the same formula"),
    helper(
        "Functional.rotary_position_embedding",
        "ms_ops_rotary_position_embedding",
        "torch has no rotary_position_embedding: torch_npu's npu_rotary_mul reference (mode 0 'half', 1 'interleave')",
    ),
    helper(
        "Functional.flash_attention_score",
        "ms_ops_flash_attention_score",
        "torch has no flash_attention_score: torch_npu's npu_fusion_attention reference under MindSpore's names, attention_out alone",
    ),
    helper("Functional.l1_loss", "ms_ops_l1_loss", "mindspore.ops.l1_loss takes reduction third; torch's third argument is size_average"),
    helper("Functional.mse_loss", "ms_ops_mse_loss", "mindspore.ops.mse_loss takes reduction third; torch's third argument is size_average"),
    helper(
        "Functional.smooth_l1_loss",
        "ms_ops_smooth_l1_loss",
        "mindspore.ops.smooth_l1_loss takes beta third and reduces with 'none' by default; torch takes size_average third and 'mean'",
    ),
    helper("Functional.kl_div", "ms_ops_kl_div", "mindspore.ops.kl_div takes reduction third; torch's third argument is size_average"),
    helper(
        "Functional.one_hot",
        "ms_ops_one_hot",
        "mindspore.ops.one_hot(indices, depth, on_value, off_value, axis); torch's one_hot takes int64 indices and a class count only",
    ),
    helper("Functional.index_add", "ms_ops_index_add", "mindspore.ops.index_add(x, indices, y, axis) is torch.index_add(x, axis, indices, y)"),
    helper("Functional.tensor_scatter_elements", "ms_ops_tensor_scatter_elements", "torch.scatter or scatter_add by the reduction, with int64 indices"),
    helper(
        "Functional.clip_by_global_norm",
        "ms_ops_clip_by_global_norm",
        "torch has no such function: every tensor scaled by clip_norm / max(global norm, clip_norm)",
    ),
    helper("Functional.assign", "ms_ops_assign", "torch has no such function: the variable takes the value's values (Tensor.copy_)"),
    helper(
        "Functional.dropout",
        "ms_ops_dropout",
        "MindSpore and torch draw different random masks: the bench keeps the elements the tested run kept, scaled by 1 / (1 - p)",
    ),
    helper("Tensor.transpose", "ms_tensor_transpose", "mindspore.Tensor.transpose(*axes) permutes all axes like numpy; torch.Tensor.transpose swaps two"),
    helper("Tensor.var", "ms_tensor_var", "mindspore.Tensor.var(axis, ddof=0, keepdims) divides by N by default; torch by N - 1"),
    helper("Tensor.std", "ms_tensor_std", "mindspore.Tensor.std(axis, ddof=0, keepdims) divides by N by default; torch by N - 1"),
    helper("Functional.amax", "ms_ops_amax", "mindspore.ops.amax takes keepdims; torch.amax keepdim"),
    helper("Functional.amin", "ms_ops_amin", "mindspore.ops.amin takes keepdims; torch.amin keepdim"),
    helper("Functional.nansum", "ms_ops_nansum", "mindspore.ops.nansum takes keepdims; torch.nansum keepdim"),
    helper("Functional.nanmean", "ms_ops_nanmean", "mindspore.ops.nanmean takes keepdims; torch.nanmean keepdim"),
    helper("Functional.var_mean", "ms_ops_var_mean", "mindspore.ops.var_mean(input, axis, ddof=0, keepdims) divides by N by default; torch by N - 1"),
    helper("Functional.std_mean", "ms_ops_std_mean", "mindspore.ops.std_mean(input, axis, ddof=0, keepdims) divides by N by default; torch by N - 1"),
];

const fn rename(api: &'static str, module: &'static str, attr: &'static str, why: &'static str) -> BenchRename {
    BenchRename { api, module, attr, why }
}

/// MindSpore APIs whose torch bench is a torch callable of another name
/// (the same positional arguments, checked in MindSpore by the op table's
/// agreement cases of the name).
pub const MINDSPORE_RENAMES: &[BenchRename] = &[
    rename("Functional.dense", "torch.nn.functional", "linear", "mindspore.ops.dense(input, weight, bias) is torch's linear"),
    rename("Functional.floor_div", "torch", "floor_divide", "mindspore.ops.floor_div(x, y) is torch's floor_divide"),
    rename("Functional.floor_mod", "torch", "remainder", "mindspore.ops.floor_mod(x, y) is torch's remainder (the divisor's sign)"),
    rename("Functional.truncate_mod", "torch", "fmod", "mindspore.ops.truncate_mod(x, y) is torch's fmod (the dividend's sign)"),
    rename("Functional.equal", "torch", "eq", "mindspore.ops.equal compares elementwise, as torch.eq; torch.equal gives one bool"),
    rename("Tensor.equal", "torch.Tensor", "eq", "mindspore.Tensor.equal compares elementwise, as torch.Tensor.eq; torch.Tensor.equal gives one bool"),
    rename("Functional.inv", "torch", "reciprocal", "mindspore.ops.inv(x) is torch's reciprocal"),
    rename("Functional.invert", "torch", "bitwise_not", "mindspore.ops.invert(x) is torch's bitwise_not"),
    rename("Functional.tensor_dot", "torch", "tensordot", "mindspore.ops.tensor_dot(x1, x2, axes) is torch's tensordot"),
    rename("Functional.range", "torch", "arange", "mindspore.ops.range(start, end, step) is torch's arange"),
    rename("Functional.deepcopy", "torch", "clone", "mindspore.ops.deepcopy(x) is a copy: torch's clone"),
    rename("Tensor.copy", "torch.Tensor", "clone", "mindspore.Tensor.copy() is a copy: torch's clone"),
    rename("Functional.expand_dims", "torch", "unsqueeze", "mindspore.ops.expand_dims(x, axis) is torch's unsqueeze"),
    rename("Functional.gather_d", "torch", "gather", "mindspore.ops.gather_d(x, dim, index) is torch's gather"),
    rename("Functional.gather_elements", "torch", "gather", "mindspore.ops.gather_elements(input, dim, index) is torch's gather"),
    rename("Functional.reverse", "torch", "flip", "mindspore.ops.reverse(x, axis) is torch's flip"),
    rename("Functional.select", "torch", "where", "mindspore.ops.select(condition, x, y) is torch's where"),
    rename("Functional.size", "torch", "numel", "mindspore.ops.size(x) is the element count: torch's numel"),
    rename("Functional.transpose", "torch", "permute", "mindspore.ops.transpose(x, perm) permutes all axes: torch's permute"),
    rename("Functional.unstack", "torch", "unbind", "mindspore.ops.unstack(x, axis) is torch's unbind"),
    rename("Functional.clip_by_value", "torch", "clamp", "mindspore.ops.clip_by_value(x, min, max) is torch's clamp"),
    rename("Functional.bessel_j0", "torch.special", "bessel_j0", "torch spells MindSpore's bessel_j0 in torch.special"),
    rename("Functional.bessel_j1", "torch.special", "bessel_j1", "torch spells MindSpore's bessel_j1 in torch.special"),
    rename("Functional.bessel_y0", "torch.special", "bessel_y0", "torch spells MindSpore's bessel_y0 in torch.special"),
    rename("Functional.bessel_y1", "torch.special", "bessel_y1", "torch spells MindSpore's bessel_y1 in torch.special"),
    rename("Functional.bessel_i0", "torch.special", "modified_bessel_i0", "MindSpore's bessel_i0 is torch.special's modified_bessel_i0"),
    rename("Functional.bessel_i1", "torch.special", "modified_bessel_i1", "MindSpore's bessel_i1 is torch.special's modified_bessel_i1"),
    rename("Functional.bessel_i0e", "torch.special", "i0e", "MindSpore's bessel_i0e is torch.special's i0e"),
    rename("Functional.bessel_i1e", "torch.special", "i1e", "MindSpore's bessel_i1e is torch.special's i1e"),
    rename("Functional.bessel_k0", "torch.special", "modified_bessel_k0", "MindSpore's bessel_k0 is torch.special's modified_bessel_k0"),
    rename("Functional.bessel_k1", "torch.special", "modified_bessel_k1", "MindSpore's bessel_k1 is torch.special's modified_bessel_k1"),
    rename("Functional.bessel_k0e", "torch.special", "scaled_modified_bessel_k0", "MindSpore's bessel_k0e is torch.special's scaled_modified_bessel_k0"),
    rename("Functional.bessel_k1e", "torch.special", "scaled_modified_bessel_k1", "MindSpore's bessel_k1e is torch.special's scaled_modified_bessel_k1"),
];

/// Tensor methods that cast to a fixed dtype (in both frameworks), and the
/// method the bench calls instead: the cast to the raised dtype
/// (float16/bfloat16 -> float32, float32 -> float64), as the bench raises
/// every input and dtype argument.
pub const RAISED_CASTS: &[(&str, &str)] = &[("Tensor.half", "float"), ("Tensor.bfloat16", "float"), ("Tensor.float", "double")];

/// The MindSpore helper that replays `api` (`Prefix.op`) on the bench.
pub fn mindspore_helper(api: &str) -> Option<&'static BenchHelper> {
    MINDSPORE_HELPERS.iter().find(|h| h.api == api)
}

/// The torch callable of another name that replays MindSpore's `api` on the bench.
pub fn mindspore_rename(api: &str) -> Option<&'static BenchRename> {
    MINDSPORE_RENAMES.iter().find(|r| r.api == api)
}

/// The raised cast the bench calls for the Tensor cast `api`.
pub fn raised_cast(api: &str) -> Option<&'static str> {
    RAISED_CASTS.iter().find(|(a, _)| *a == api).map(|&(_, raised)| raised)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_once_and_helpers_are_python_names() {
        let mut seen = std::collections::HashSet::new();
        for api in MINDSPORE_HELPERS.iter().map(|h| h.api).chain(MINDSPORE_RENAMES.iter().map(|r| r.api)) {
            assert!(seen.insert(api), "{api} twice");
            assert_eq!(api.split('.').count(), 2, "{api}");
        }
        for h in MINDSPORE_HELPERS {
            assert!(h.helper.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'), "{}", h.helper);
        }
        assert_eq!(raised_cast("Tensor.half"), Some("float"));
        assert_eq!(raised_cast("Torch.half"), None);
    }
}
