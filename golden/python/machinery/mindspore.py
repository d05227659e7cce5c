

# Exit codes (runtime/src/exit.rs): every row passes (warnings included) / some
# row is an error / a tensor file is unusable / the script failed / some call
# could not be replayed here and nothing is an error (--allow-skip makes that EXIT_OK).
EXIT_OK = 0
EXIT_INACCURATE = 3
EXIT_INPUT = 4
EXIT_INTERNAL = 6
EXIT_SKIPPED = 8
# Every dtype (runtime/src/dtype.rs): (canonical name, kind, every name a dump spells it by).
DTYPE_TABLE = [
    ("bool", "bool", ["torch.bool", "Bool"]),
    ("uint8", "int", ["torch.uint8", "UInt8"]),
    ("int8", "int", ["torch.int8", "Int8"]),
    ("int16", "int", ["torch.int16", "torch.short", "Int16"]),
    ("uint16", "int", ["torch.uint16", "UInt16"]),
    ("int32", "int", ["torch.int32", "torch.int", "Int32"]),
    ("uint32", "int", ["torch.uint32", "UInt32"]),
    ("int64", "int", ["torch.int64", "torch.long", "Int64"]),
    ("uint64", "int", ["torch.uint64", "UInt64"]),
    ("float16", "float", ["torch.float16", "torch.half", "Float16"]),
    ("bfloat16", "float", ["torch.bfloat16", "BFloat16"]),
    ("float32", "float", ["torch.float32", "torch.float", "Float32"]),
    ("float64", "float", ["torch.float64", "torch.double", "Float64"]),
    ("complex64", "complex", ["torch.complex64", "torch.cfloat", "Complex64"]),
    ("complex128", "complex", ["torch.complex128", "torch.cdouble", "Complex128"]),
]
# The values of each integer dtype: (min, max).
INT_RANGES = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "int16": (-32768, 32767),
    "uint16": (0, 65535),
    "int32": (-2147483648, 2147483647),
    "uint32": (0, 4294967295),
    "int64": (-9223372036854775808, 9223372036854775807),
    "uint64": (0, 18446744073709551615),
}
# MindSpore's name of each dtype, by canonical name.
MS_NAMES = {
    "bool": "Bool",
    "uint8": "UInt8",
    "int8": "Int8",
    "int16": "Int16",
    "uint16": "UInt16",
    "int32": "Int32",
    "uint32": "UInt32",
    "int64": "Int64",
    "uint64": "UInt64",
    "float16": "Float16",
    "bfloat16": "BFloat16",
    "float32": "Float32",
    "float64": "Float64",
    "complex64": "Complex64",
    "complex128": "Complex128",
}
# MindSpore keyword names that torch spells differently (runtime/src/bind.rs); a
# bench helper of ms_bench takes MindSpore's own names.
KEYWORD_ALIASES = {
    "axis": "dim",
    "keep_dims": "keepdim",
    "input_x": "input",
    "x": "input",
}
# The judging rules' numbers and factors (runtime/rulebook.json, which says what each is).
RULEBOOK = {"rounding": {"k": {"composite": [64.0, 64.0], "parts": [32.0, 32.0], "smooth": [32.0, 32.0], "sums": [16.0, 16.0], "terms": [3.0, 16.0]}, "half_precision_k": 4.0}, "absolute": {"fp16": {"rtol": 0.001, "small": 0.001, "atol": 1e-5}, "bf16": {"rtol": 0.004, "small": 0.001, "atol": 1e-5}, "fp32": {"rtol": 1e-6, "small": 1e-6, "atol": 1e-9}}, "ulp": {"fp16": {"over": 1.0, "share_below": 0.001, "mean_below": None}, "bf16": {"over": 1.0, "share_below": 0.001, "mean_below": None}, "fp32": {"over": 32.0, "share_below": 0.05, "mean_below": 64.0}}, "thousandth": {"rtol": 0.001, "share_above": 0.999}, "benchmark": {"small_value_bound": 2.0, "levels": {"level1": [5.0, 1.5, 1.5], "level2": [2.0, 1.2, 1.2], "default": [10.0, 2.0, 2.0]}, "fp16": {"small": 0.001, "atol": 1e-5, "floor": 0.00048828125}, "bf16": {"small": 0.001, "atol": 1e-5, "floor": 0.00390625}, "fp32": {"small": 1e-6, "atol": 1e-9, "floor": 6.103515625e-5}}}
# msprobe's API sets of the api standard by rule (the rulebook's api_standard).
STANDARD_API_SETS = {
    "absolute": frozenset(["add", "sub", "mul", "div", "truediv", "true_divide", "floordiv", "floor_divide", "multiply", "subtract", "divide", "rsub", "leaky_relu", "prelu", "reciprocal", "rsqrt", "square"]),
    "binary": frozenset(["abs", "argmin", "argmax", "bitwise_and", "broadcast_to", "ceil", "equal", "eq", "fill", "flatten", "floor", "gather", "greater", "greater_equal", "gt", "ge", "less", "less_equal", "lt", "le", "histc", "isfinite", "isnan", "logical_and", "logical_or", "logical_not", "logical_xor", "masked_fill", "max_pool3d", "maximum", "minimum", "neg", "negative", "nonzero", "not_equal", "ne", "one_hot", "pad", "relu", "reshape", "round", "select", "sign", "sort", "tile", "topk", "transpose", "tril", "triu", "type_as"]),
    "ulp": frozenset(["matmul", "addbmm", "addmm", "baddbmm", "bilinear", "bmm", "chain_matmul", "hspmm", "linear", "mm", "mv", "smm", "sspaddmm"]),
    "thousandth": frozenset(["conv1d", "conv2d"]),
    "level1": frozenset(["embedding", "npu_fusion_attention", "npu_fusion_attention_grad", "scatter", "scatter_add"]),
    "level2": frozenset(["nonzero", "one_hot", "matmul", "addmm", "mm", "gelu", "layer_norm", "index", "sum", "npu_rms_norm", "rms_norm", "cross_entropy", "npu_cross_entropy_loss"]),
}
# The bench helpers of ms_bench that the bench table names (runtime/src/ops/bench.rs).
MS_BENCH_HELPERS = frozenset(["ms_mint_binary_cross_entropy", "ms_ops_assign", "ms_ops_binary_cross_entropy_with_logits", "ms_ops_clip_by_global_norm", "ms_ops_conv2d", "ms_ops_cross_entropy", "ms_ops_dropout", "ms_ops_gather", "ms_ops_index_add", "ms_ops_kl_div", "ms_ops_l1_loss", "ms_ops_mse_loss", "ms_ops_nll_loss", "ms_ops_one_hot", "ms_ops_smooth_l1_loss", "ms_ops_tensor_scatter_elements", "ms_tensor_std", "ms_tensor_transpose", "ms_tensor_var"])
# The op table's NPU names (runtime/src/ops/): each call's bench is npu_bench's ref_<op>.
NPU_REFERENCES = frozenset(["fast_gelu", "matmul_backward", "npu_apply_adam", "npu_apply_adam_w", "npu_confusion_transpose", "npu_fast_gelu", "npu_fusion_attention", "npu_group_norm_silu", "npu_layer_norm_eval", "npu_linear", "npu_mish", "npu_moe_gating_top_k_softmax", "npu_rms_norm", "npu_rotary_mul", "npu_scaled_masked_softmax", "npu_sort_v2", "npu_swiglu"])
# How rounding can move each API's results, by op-table name (runtime/src/ops/mod.rs,
# Rounding; the magnitudes of magnitude.py): ("terms", the negated parameter's
# position or None, its name or None, the signature's parameter names), ("sums",
# parameter names), ("smooth",), ("parts", formula, whether the rest is
# composite's, parameter names), ("composite",).
ROUNDING = {
    "Torch.add": ("terms", None, None, ("input", "other", "alpha")),
    "Tensor.add": ("terms", None, None, ("input", "other", "alpha")),
    "Tensor.__add__": ("terms", None, None, ("input", "other", "alpha")),
    "Tensor.__radd__": ("terms", None, None, ("input", "other", "alpha")),
    "Mint.add": ("terms", None, None, ("input", "other", "alpha")),
    "Tensor.add_": ("terms", None, None, ("input", "other", "alpha")),
    "Tensor.__iadd__": ("terms", None, None, ("input", "other", "alpha")),
    "Torch.sub": ("terms", 1, "other", ("input", "other", "alpha")),
    "Tensor.sub": ("terms", 1, "other", ("input", "other", "alpha")),
    "Tensor.__sub__": ("terms", 1, "other", ("input", "other", "alpha")),
    "Mint.sub": ("terms", 1, "other", ("input", "other", "alpha")),
    "Tensor.__rsub__": ("terms", 0, "input", ("input", "other")),
    "Torch.mul": ("terms", None, None, ("input", "other")),
    "Tensor.mul": ("terms", None, None, ("input", "other")),
    "Tensor.__mul__": ("terms", None, None, ("input", "other")),
    "Tensor.__rmul__": ("terms", None, None, ("input", "other")),
    "Mint.mul": ("terms", None, None, ("input", "other")),
    "Tensor.mul_": ("terms", None, None, ("input", "other")),
    "Tensor.__imul__": ("terms", None, None, ("input", "other")),
    "Torch.div": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.div": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.__truediv__": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Mint.div": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Torch.true_divide": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.__rtruediv__": ("terms", None, None, ("input", "other")),
    "Torch.neg": ("terms", None, None, ("input",)),
    "Tensor.neg": ("terms", None, None, ("input",)),
    "Tensor.__neg__": ("terms", None, None, ("input",)),
    "Mint.neg": ("terms", None, None, ("input",)),
    "Torch.square": ("terms", None, None, ("input",)),
    "Tensor.square": ("terms", None, None, ("input",)),
    "Mint.square": ("terms", None, None, ("input",)),
    "Torch.pow": ("smooth",),
    "Tensor.pow": ("smooth",),
    "Tensor.__pow__": ("smooth",),
    "Mint.pow": ("smooth",),
    "Tensor.__rpow__": ("smooth",),
    "Torch.outer": ("terms", None, None, ("input", "vec2")),
    "Tensor.outer": ("terms", None, None, ("input", "vec2")),
    "Mint.outer": ("terms", None, None, ("input", "vec2")),
    "MS.Functional.outer": ("terms", None, None, ("input", "vec2")),
    "Torch.sqrt": ("smooth",),
    "Tensor.sqrt": ("smooth",),
    "Mint.sqrt": ("smooth",),
    "MS.Functional.sqrt": ("smooth",),
    "Torch.rsqrt": ("smooth",),
    "Tensor.rsqrt": ("smooth",),
    "Mint.rsqrt": ("smooth",),
    "MS.Functional.rsqrt": ("smooth",),
    "Torch.reciprocal": ("smooth",),
    "Tensor.reciprocal": ("smooth",),
    "Mint.reciprocal": ("smooth",),
    "Torch.clamp": ("smooth",),
    "Tensor.clamp": ("smooth",),
    "Mint.clamp": ("smooth",),
    "Torch.clip": ("smooth",),
    "Tensor.clamp_": ("smooth",),
    "Tensor.div_": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.rsqrt_": ("smooth",),
    "Tensor.square_": ("terms", None, None, ("input",)),
    "Tensor.addcmul_": ("terms", None, None, ("input", "tensor1", "tensor2", "value")),
    "Tensor.addcdiv_": ("terms", None, None, ("input", "tensor1", "tensor2", "value")),
    "Tensor.lerp_": ("smooth",),
    "Torch.addcmul": ("terms", None, None, ("input", "tensor1", "tensor2", "value")),
    "Tensor.addcmul": ("terms", None, None, ("input", "tensor1", "tensor2", "value")),
    "Torch.addcdiv": ("terms", None, None, ("input", "tensor1", "tensor2", "value")),
    "Tensor.addcdiv": ("terms", None, None, ("input", "tensor1", "tensor2", "value")),
    "Torch.lerp": ("smooth",),
    "Tensor.lerp": ("smooth",),
    "Torch.mm": ("sums", ("input", "mat2")),
    "Tensor.mm": ("sums", ("input", "mat2")),
    "Mint.mm": ("sums", ("input", "mat2")),
    "MS.Functional.mm": ("sums", ("input", "mat2")),
    "Torch.bmm": ("sums", ("input", "mat2")),
    "Tensor.bmm": ("sums", ("input", "mat2")),
    "Mint.bmm": ("sums", ("input", "mat2")),
    "MS.Functional.bmm": ("sums", ("input_x", "mat2")),
    "Torch.addmm": ("sums", ("input", "mat1", "mat2", "beta", "alpha")),
    "Tensor.addmm": ("sums", ("input", "mat1", "mat2", "beta", "alpha")),
    "Mint.addmm": ("sums", ("input", "mat1", "mat2", "beta", "alpha")),
    "MS.Functional.addmm": ("sums", ("input", "mat1", "mat2", "beta", "alpha")),
    "Torch.baddbmm": ("sums", ("input", "batch1", "batch2", "beta", "alpha")),
    "Tensor.baddbmm": ("sums", ("input", "batch1", "batch2", "beta", "alpha")),
    "Mint.baddbmm": ("sums", ("input", "batch1", "batch2", "beta", "alpha")),
    "MS.Functional.baddbmm": ("sums", ("input", "batch1", "batch2", "beta", "alpha")),
    "Functional.relu": ("smooth",),
    "Torch.relu": ("smooth",),
    "Tensor.relu": ("smooth",),
    "Mint.relu": ("smooth",),
    "MintFunctional.relu": ("smooth",),
    "Functional.leaky_relu": ("smooth",),
    "MintFunctional.leaky_relu": ("smooth",),
    "Functional.sigmoid": ("parts", "sigmoid", False, ("input",)),
    "Torch.sigmoid": ("parts", "sigmoid", False, ("input",)),
    "Tensor.sigmoid": ("parts", "sigmoid", False, ("input",)),
    "Mint.sigmoid": ("parts", "sigmoid", False, ("input",)),
    "MintFunctional.sigmoid": ("parts", "sigmoid", False, ("input",)),
    "Functional.tanh": ("parts", "tanh", False, ("input",)),
    "Torch.tanh": ("parts", "tanh", False, ("input",)),
    "Tensor.tanh": ("parts", "tanh", False, ("input",)),
    "Mint.tanh": ("parts", "tanh", False, ("input",)),
    "MintFunctional.tanh": ("parts", "tanh", False, ("input",)),
    "Torch.exp": ("smooth",),
    "Tensor.exp": ("smooth",),
    "Mint.exp": ("smooth",),
    "Torch.log": ("smooth",),
    "Tensor.log": ("smooth",),
    "Mint.log": ("smooth",),
    "Torch.sin": ("smooth",),
    "Tensor.sin": ("smooth",),
    "Mint.sin": ("smooth",),
    "MS.Functional.sin": ("smooth",),
    "Torch.cos": ("smooth",),
    "Tensor.cos": ("smooth",),
    "Mint.cos": ("smooth",),
    "Torch.erf": ("smooth",),
    "Tensor.erf": ("smooth",),
    "Mint.erf": ("smooth",),
    "Torch.abs": ("smooth",),
    "Tensor.abs": ("smooth",),
    "Tensor.__abs__": ("smooth",),
    "Mint.abs": ("smooth",),
    "Functional.rms_norm": ("composite",),
    "MintFunctional.rms_norm": ("composite",),
    "Functional.hardswish": ("smooth",),
    "MS.Functional.hardswish": ("smooth",),
    "MintFunctional.hardswish": ("smooth",),
    "Functional.hardsigmoid": ("smooth",),
    "MintFunctional.hardsigmoid": ("smooth",),
    "Functional.relu6": ("smooth",),
    "MintFunctional.relu6": ("smooth",),
    "MS.Functional.relu6": ("smooth",),
    "Functional.elu": ("smooth",),
    "Functional.selu": ("smooth",),
    "Torch.selu": ("smooth",),
    "Functional.celu": ("smooth",),
    "Torch.celu": ("smooth",),
    "Functional.softplus": ("smooth",),
    "Functional.softsign": ("smooth",),
    "Functional.logsigmoid": ("smooth",),
    "Functional.tanhshrink": ("smooth",),
    "Functional.mish": ("smooth",),
    "Functional.hardshrink": ("smooth",),
    "Torch.hardshrink": ("smooth",),
    "Functional.softshrink": ("smooth",),
    "Functional.hardtanh": ("smooth",),
    "Functional.threshold": ("smooth",),
    "Torch.threshold": ("smooth",),
    "Functional.glu": ("smooth",),
    "Functional.softmin": ("composite",),
    "MS.Functional.softmin": ("composite",),
    "Functional.conv1d": ("sums", ("input", "weight", "bias", "stride", "padding", "dilation", "groups")),
    "Torch.conv1d": ("sums", ("input", "weight", "bias", "stride", "padding", "dilation", "groups")),
    "MintFunctional.conv1d": ("sums", ("input", "weight", "bias", "stride", "padding", "dilation", "groups")),
    "Functional.conv2d": ("sums", ("input", "weight", "bias", "stride", "padding", "dilation", "groups")),
    "Torch.conv2d": ("sums", ("input", "weight", "bias", "stride", "padding", "dilation", "groups")),
    "MintFunctional.conv2d": ("sums", ("input", "weight", "bias", "stride", "padding", "dilation", "groups")),
    "MS.Functional.conv2d": ("sums", ("input", "weight", "bias", "stride", "pad_mode", "padding", "dilation", "groups")),
    "Functional.conv_transpose1d": ("sums", ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")),
    "Torch.conv_transpose1d": ("sums", ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")),
    "Functional.conv_transpose2d": ("sums", ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")),
    "Torch.conv_transpose2d": ("sums", ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")),
    "MintFunctional.conv_transpose2d": ("sums", ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")),
    "Functional.max_pool2d": ("composite",),
    "MintFunctional.max_pool2d": ("composite",),
    "Functional.avg_pool2d": ("sums", ("input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")),
    "MintFunctional.avg_pool2d": ("sums", ("input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")),
    "Functional.adaptive_avg_pool1d": ("sums", ("input", "output_size")),
    "Torch.adaptive_avg_pool1d": ("sums", ("input", "output_size")),
    "MintFunctional.adaptive_avg_pool1d": ("sums", ("input", "output_size")),
    "Functional.adaptive_avg_pool2d": ("sums", ("input", "output_size")),
    "MintFunctional.adaptive_avg_pool2d": ("sums", ("input", "output_size")),
    "Functional.interpolate": ("composite",),
    "MintFunctional.interpolate": ("composite",),
    "Torch.matmul": ("sums", ("input", "other")),
    "Tensor.matmul": ("sums", ("input", "other")),
    "Tensor.__matmul__": ("sums", ("input", "other")),
    "Mint.matmul": ("sums", ("input", "other")),
    "Functional.linear": ("sums", ("input", "weight", "bias")),
    "MintFunctional.linear": ("sums", ("input", "weight", "bias")),
    "MS.Functional.dense": ("sums", ("input", "weight", "bias")),
    "Functional.softmax": ("composite",),
    "MintFunctional.softmax": ("composite",),
    "Torch.softmax": ("composite",),
    "Tensor.softmax": ("composite",),
    "Mint.softmax": ("composite",),
    "MS.Functional.log_softmax": ("composite",),
    "Functional.log_softmax": ("composite",),
    "MintFunctional.log_softmax": ("composite",),
    "Torch.log_softmax": ("composite",),
    "Tensor.log_softmax": ("composite",),
    "Mint.log_softmax": ("composite",),
    "Functional.gelu": ("parts", "gelu", False, ("input", "approximate")),
    "MintFunctional.gelu": ("parts", "gelu", False, ("input", "approximate")),
    "Torch.gelu": ("parts", "gelu", False, ("input", "approximate")),
    "Functional.silu": ("smooth",),
    "MintFunctional.silu": ("smooth",),
    "Torch.silu": ("smooth",),
    "Functional.layer_norm": ("composite",),
    "MintFunctional.layer_norm": ("composite",),
    "Torch.layer_norm": ("composite",),
    "Functional.embedding": ("composite",),
    "MintFunctional.embedding": ("composite",),
    "Functional.dropout": ("composite",),
    "MintFunctional.dropout": ("composite",),
    "Functional.scaled_dot_product_attention": ("parts", "sdpa", True, ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")),
    "Functional.batch_norm": ("composite",),
    "MintFunctional.batch_norm": ("composite",),
    "Functional.group_norm": ("composite",),
    "MintFunctional.group_norm": ("composite",),
    "Torch.group_norm": ("composite",),
    "Functional.cross_entropy": ("composite",),
    "MS.Functional.cross_entropy": ("composite",),
    "MintFunctional.cross_entropy": ("composite",),
    "Functional.nll_loss": ("composite",),
    "MS.Functional.nll_loss": ("composite",),
    "Functional.l1_loss": ("composite",),
    "MS.Functional.l1_loss": ("composite",),
    "MintFunctional.l1_loss": ("composite",),
    "Functional.mse_loss": ("composite",),
    "MS.Functional.mse_loss": ("composite",),
    "MintFunctional.mse_loss": ("composite",),
    "Functional.smooth_l1_loss": ("composite",),
    "MS.Functional.smooth_l1_loss": ("composite",),
    "Functional.kl_div": ("composite",),
    "MS.Functional.kl_div": ("composite",),
    "Functional.binary_cross_entropy": ("composite",),
    "MS.Functional.binary_cross_entropy": ("composite",),
    "MintFunctional.binary_cross_entropy": ("composite",),
    "Functional.binary_cross_entropy_with_logits": ("composite",),
    "MS.Functional.binary_cross_entropy_with_logits": ("composite",),
    "MintFunctional.binary_cross_entropy_with_logits": ("composite",),
    "Tensor.reshape": ("composite",),
    "Tensor.view": ("composite",),
    "Torch.reshape": ("composite",),
    "Mint.reshape": ("composite",),
    "Tensor.permute": ("composite",),
    "Torch.permute": ("composite",),
    "Mint.permute": ("composite",),
    "Torch.transpose": ("composite",),
    "Tensor.transpose": ("composite",),
    "Mint.transpose": ("composite",),
    "Torch.swapaxes": ("composite",),
    "Tensor.swapaxes": ("composite",),
    "Torch.t": ("composite",),
    "Tensor.t": ("composite",),
    "MS.Tensor.transpose": ("composite",),
    "Torch.unsqueeze": ("composite",),
    "Tensor.unsqueeze": ("composite",),
    "Mint.unsqueeze": ("composite",),
    "Torch.squeeze": ("composite",),
    "Tensor.squeeze": ("composite",),
    "Mint.squeeze": ("composite",),
    "Tensor.expand": ("composite",),
    "Torch.broadcast_to": ("composite",),
    "Tensor.broadcast_to": ("composite",),
    "Mint.broadcast_to": ("composite",),
    "Torch.narrow": ("composite",),
    "Tensor.narrow": ("composite",),
    "Mint.narrow": ("composite",),
    "MS.Functional.assign": ("composite",),
    "Torch.split": ("composite",),
    "Tensor.split": ("composite",),
    "Mint.split": ("composite",),
    "MS.Functional.split": ("composite",),
    "Torch.chunk": ("composite",),
    "Tensor.chunk": ("composite",),
    "Mint.chunk": ("composite",),
    "MS.Functional.chunk": ("composite",),
    "Torch.stack": ("composite",),
    "Mint.stack": ("composite",),
    "MS.Functional.stack": ("composite",),
    "Torch.cat": ("composite",),
    "Mint.cat": ("composite",),
    "Torch.concat": ("composite",),
    "MS.Functional.cat": ("composite",),
    "Torch.triu": ("composite",),
    "Tensor.triu": ("composite",),
    "Mint.triu": ("composite",),
    "Torch.tril": ("composite",),
    "Tensor.tril": ("composite",),
    "Mint.tril": ("composite",),
    "MS.Functional.tril": ("composite",),
    "Torch.masked_fill": ("smooth",),
    "Tensor.masked_fill": ("smooth",),
    "Mint.masked_fill": ("smooth",),
    "MS.Functional.masked_fill": ("smooth",),
    "Torch.gather": ("composite",),
    "Tensor.gather": ("composite",),
    "Mint.gather": ("composite",),
    "Torch.index_select": ("composite",),
    "Tensor.index_select": ("composite",),
    "Mint.index_select": ("composite",),
    "MS.Functional.gather": ("composite",),
    "Tensor.__setitem__": ("smooth",),
    "Tensor.contiguous": ("composite",),
    "Tensor.clone": ("composite",),
    "Torch.clone": ("composite",),
    "Mint.clone": ("composite",),
    "Torch.flatten": ("composite",),
    "Tensor.flatten": ("composite",),
    "Mint.flatten": ("composite",),
    "Torch.unbind": ("composite",),
    "MS.Functional.unbind": ("composite",),
    "MS.Tensor.unbind": ("composite",),
    "Torch.split_with_sizes": ("composite",),
    "Torch.unsafe_split_with_sizes": ("composite",),
    "Torch.unsafe_split": ("composite",),
    "Torch.unsafe_chunk": ("composite",),
    "Torch.tensor_split": ("composite",),
    "MS.Functional.tensor_split": ("composite",),
    "MS.Tensor.tensor_split": ("composite",),
    "Torch.hsplit": ("composite",),
    "Torch.vsplit": ("composite",),
    "Torch.dsplit": ("composite",),
    "Torch.movedim": ("composite",),
    "Torch.flip": ("composite",),
    "Torch.fliplr": ("composite",),
    "Torch.flipud": ("composite",),
    "Torch.roll": ("composite",),
    "Torch.rot90": ("composite",),
    "Torch.tile": ("composite",),
    "Tensor.repeat": ("composite",),
    "Torch.ravel": ("composite",),
    "Tensor.view_as": ("composite",),
    "Tensor.reshape_as": ("composite",),
    "Tensor.expand_as": ("composite",),
    "Torch.select": ("composite",),
    "Torch.diagonal": ("composite",),
    "Torch.narrow_copy": ("composite",),
    "Torch.atleast_1d": ("composite",),
    "Torch.atleast_2d": ("composite",),
    "Torch.atleast_3d": ("composite",),
    "Torch.hstack": ("composite",),
    "Torch.vstack": ("composite",),
    "Torch.dstack": ("composite",),
    "Torch.column_stack": ("composite",),
    "Torch.unflatten": ("composite",),
    "Functional.pad": ("composite",),
    "Torch.mean": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Tensor.mean": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Mint.mean": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Torch.sum": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Tensor.sum": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Mint.sum": ("sums", ("input", "dim", "keepdim", "dtype")),
    "MS.Tensor.sum": ("sums", ("input", "dim", "dtype", "keepdims", "initial", "keepdim")),
    "Torch.logsumexp": ("composite",),
    "Tensor.logsumexp": ("composite",),
    "Mint.logsumexp": ("composite",),
    "Torch.vector_norm": ("composite",),
    "Tensor.norm": ("composite",),
    "Torch.norm": ("composite",),
    "Torch.amax": ("composite",),
    "Tensor.amax": ("composite",),
    "Mint.amax": ("composite",),
    "Torch.amin": ("composite",),
    "Tensor.amin": ("composite",),
    "Mint.amin": ("composite",),
    "Torch.max": ("composite",),
    "Tensor.max": ("composite",),
    "Torch.min": ("composite",),
    "Tensor.min": ("composite",),
    "Torch.argmax": ("composite",),
    "Tensor.argmax": ("composite",),
    "Mint.argmax": ("composite",),
    "Torch.argmin": ("composite",),
    "Tensor.argmin": ("composite",),
    "Mint.argmin": ("composite",),
    "Torch.var": ("composite",),
    "Tensor.var": ("composite",),
    "Torch.std": ("composite",),
    "Tensor.std": ("composite",),
    "MS.Tensor.var": ("composite",),
    "MS.Tensor.std": ("composite",),
    "Torch.cumsum": ("sums", ("input", "dim", "dtype")),
    "Tensor.cumsum": ("sums", ("input", "dim", "dtype")),
    "Mint.cumsum": ("sums", ("input", "dim", "dtype")),
    "Torch._foreach_norm": ("composite",),
    "MS.Functional.clip_by_global_norm": ("composite",),
    "Torch.all": ("composite",),
    "Torch.any": ("composite",),
    "Torch.prod": ("composite",),
    "Torch.nansum": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Torch.nanmean": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Torch.cumprod": ("composite",),
    "Torch.logcumsumexp": ("composite",),
    "Torch.count_nonzero": ("composite",),
    "Functional.normalize": ("composite",),
    "Torch.aminmax": ("composite",),
    "Torch.arange": ("composite",),
    "Mint.arange": ("composite",),
    "MS.Functional.arange": ("composite",),
    "Torch.empty": ("composite",),
    "Torch.empty_like": ("composite",),
    "Torch.empty_strided": ("composite",),
    "Tensor.new_empty": ("composite",),
    "Tensor.new_empty_strided": ("composite",),
    "Torch.ones_like": ("composite",),
    "Mint.ones_like": ("composite",),
    "Torch.zeros_like": ("composite",),
    "Mint.zeros_like": ("composite",),
    "Torch.full_like": ("composite",),
    "Mint.ones": ("composite",),
    "Torch.ones": ("composite",),
    "Mint.zeros": ("composite",),
    "Torch.zeros": ("composite",),
    "Tensor.to": ("smooth",),
    "Tensor.float": ("smooth",),
    "Tensor.half": ("smooth",),
    "Tensor.bfloat16": ("smooth",),
    "Tensor.double": ("smooth",),
    "Tensor.long": ("composite",),
    "Tensor.int": ("composite",),
    "Tensor.bool": ("composite",),
    "Tensor.type_as": ("smooth",),
    "Torch.eq": ("composite",),
    "Tensor.eq": ("composite",),
    "Tensor.__eq__": ("composite",),
    "Mint.eq": ("composite",),
    "Torch.ne": ("composite",),
    "Tensor.ne": ("composite",),
    "Tensor.__ne__": ("composite",),
    "Mint.ne": ("composite",),
    "Torch.gt": ("composite",),
    "Tensor.gt": ("composite",),
    "Tensor.__gt__": ("composite",),
    "Mint.gt": ("composite",),
    "Torch.ge": ("composite",),
    "Tensor.ge": ("composite",),
    "Tensor.__ge__": ("composite",),
    "Mint.ge": ("composite",),
    "Torch.lt": ("composite",),
    "Tensor.lt": ("composite",),
    "Tensor.__lt__": ("composite",),
    "Mint.lt": ("composite",),
    "Torch.le": ("composite",),
    "Tensor.le": ("composite",),
    "Tensor.__le__": ("composite",),
    "Mint.le": ("composite",),
    "Torch.logical_and": ("composite",),
    "Tensor.logical_and": ("composite",),
    "Mint.logical_and": ("composite",),
    "Torch.logical_or": ("composite",),
    "Tensor.logical_or": ("composite",),
    "Mint.logical_or": ("composite",),
    "Torch.logical_xor": ("composite",),
    "Tensor.logical_xor": ("composite",),
    "Mint.logical_xor": ("composite",),
    "Torch.logical_not": ("composite",),
    "Tensor.logical_not": ("composite",),
    "Mint.logical_not": ("composite",),
    "Torch.maximum": ("smooth",),
    "Tensor.maximum": ("smooth",),
    "Mint.maximum": ("smooth",),
    "Torch.minimum": ("smooth",),
    "Tensor.minimum": ("smooth",),
    "Mint.minimum": ("smooth",),
    "Tensor.where": ("smooth",),
    "Torch.where": ("smooth",),
    "Mint.where": ("smooth",),
    "MS.Functional.where": ("smooth",),
    "Torch.topk": ("composite",),
    "Tensor.topk": ("composite",),
    "Mint.topk": ("composite",),
    "MS.Functional.topk": ("composite",),
    "Functional.one_hot": ("composite",),
    "MintFunctional.one_hot": ("composite",),
    "MS.Functional.one_hot": ("composite",),
    "Torch.scatter": ("composite",),
    "Tensor.scatter": ("composite",),
    "Mint.scatter": ("composite",),
    "Torch.scatter_add": ("sums", ("input", "dim", "index", "src")),
    "Tensor.scatter_add": ("sums", ("input", "dim", "index", "src")),
    "Mint.scatter_add": ("sums", ("input", "dim", "index", "src")),
    "MS.Functional.tensor_scatter_elements": ("sums", ("input", "indices", "updates", "dim", "reduction")),
    "Torch.index_add": ("sums", ("input", "dim", "index", "source", "alpha")),
    "Tensor.index_add": ("sums", ("input", "dim", "index", "source", "alpha")),
    "Mint.index_add": ("sums", ("input", "dim", "index", "source", "alpha")),
    "MS.Functional.index_add": ("sums", ("input", "indices", "y", "dim", "use_lock", "check_index_bound", "alpha")),
    "Torch.repeat_interleave": ("composite",),
    "Tensor.repeat_interleave": ("composite",),
    "MS.Functional.repeat_interleave": ("composite",),
    "Torch.sort": ("composite",),
    "Torch.argsort": ("composite",),
    "Torch.msort": ("composite",),
    "Torch.tan": ("smooth",),
    "Torch.asin": ("smooth",),
    "Torch.acos": ("smooth",),
    "Torch.atan": ("smooth",),
    "Torch.sinh": ("smooth",),
    "Torch.cosh": ("smooth",),
    "Torch.asinh": ("smooth",),
    "Torch.acosh": ("smooth",),
    "Torch.atanh": ("smooth",),
    "Torch.log10": ("smooth",),
    "Torch.log2": ("smooth",),
    "Torch.log1p": ("smooth",),
    "Torch.expm1": ("smooth",),
    "Torch.exp2": ("smooth",),
    "Torch.sinc": ("smooth",),
    "Torch.deg2rad": ("smooth",),
    "Torch.rad2deg": ("smooth",),
    "Torch.ceil": ("composite",),
    "Torch.floor": ("composite",),
    "Torch.trunc": ("composite",),
    "Torch.sign": ("composite",),
    "Torch.sgn": ("composite",),
    "Torch.isfinite": ("composite",),
    "Torch.isinf": ("composite",),
    "Torch.isnan": ("composite",),
    "Torch.isposinf": ("composite",),
    "Torch.isneginf": ("composite",),
    "Torch.signbit": ("composite",),
    "Torch.frac": ("smooth",),
    "Torch.atan2": ("smooth",),
    "Torch.hypot": ("smooth",),
    "Torch.logaddexp": ("smooth",),
    "Torch.logaddexp2": ("smooth",),
    "Torch.xlogy": ("smooth",),
    "Torch.fmod": ("smooth",),
    "Torch.remainder": ("smooth",),
    "Torch.copysign": ("smooth",),
    "Torch.bitwise_and": ("composite",),
    "Torch.bitwise_or": ("composite",),
    "Torch.bitwise_xor": ("composite",),
    "Torch.bitwise_left_shift": ("composite",),
    "Torch.bitwise_right_shift": ("composite",),
    "Torch.gcd": ("composite",),
    "Torch.lcm": ("composite",),
    "Torch.bitwise_not": ("composite",),
    "Torch.floor_divide": ("composite",),
    "Torch.round": ("composite",),
    "Torch.clamp_min": ("smooth",),
    "Torch.clamp_max": ("smooth",),
    "Torch.fmax": ("smooth",),
    "Torch.fmin": ("smooth",),
    "Torch.float_power": ("smooth",),
    "Torch.heaviside": ("composite",),
    "Torch.ldexp": ("smooth",),
    "Torch.logit": ("smooth",),
    "Torch.nan_to_num": ("smooth",),
    "Torch.erfc": ("smooth",),
    "Torch.isclose": ("composite",),
    "Tensor.__bool__": ("composite",),
    "Tensor.__rmod__": ("composite",),
    "Torch.einsum": ("sums", ("equation", "operands")),
    "MS.Functional.einsum": ("sums", ("equation", "operands")),
    "NPU.npu_rms_norm": ("composite",),
    "NPU.npu_swiglu": ("composite",),
    "NPU.npu_fast_gelu": ("smooth",),
    "NPU.fast_gelu": ("smooth",),
    "NPU.npu_mish": ("smooth",),
    "NPU.npu_rotary_mul": ("composite",),
    "NPU.npu_scaled_masked_softmax": ("composite",),
    "NPU.npu_fusion_attention": ("composite",),
    "NPU.npu_linear": ("sums", ("input", "weight", "bias")),
    "NPU.npu_confusion_transpose": ("composite",),
    "NPU.npu_apply_adam": ("composite",),
    "NPU.npu_apply_adam_w": ("composite",),
    "NPU.npu_layer_norm_eval": ("composite",),
    "NPU.npu_group_norm_silu": ("composite",),
    "NPU.npu_moe_gating_top_k_softmax": ("composite",),
    "NPU.npu_sort_v2": ("composite",),
    "NPU.matmul_backward": ("sums", ("grad", "self", "other", "mask")),
    "Functional.threshold_": ("smooth",),
    "Functional.relu_": ("smooth",),
    "Functional.hardtanh_": ("smooth",),
    "Functional.elu_": ("smooth",),
    "Functional.selu_": ("smooth",),
    "Functional.celu_": ("smooth",),
    "Functional.leaky_relu_": ("smooth",),
    "Tensor.__and__": ("composite",),
    "Tensor.__div__": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.__floordiv__": ("composite",),
    "Tensor.__iand__": ("composite",),
    "Tensor.__idiv__": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.__ifloordiv__": ("composite",),
    "Tensor.__ilshift__": ("composite",),
    "Tensor.__imod__": ("smooth",),
    "Tensor.__ior__": ("composite",),
    "Tensor.__ipow__": ("smooth",),
    "Tensor.__irshift__": ("composite",),
    "Tensor.__isub__": ("terms", 1, "other", ("input", "other", "alpha")),
    "Tensor.__ixor__": ("composite",),
    "Tensor.__lshift__": ("composite",),
    "Tensor.__mod__": ("smooth",),
    "Tensor.__nonzero__": ("composite",),
    "Tensor.__or__": ("composite",),
    "Tensor.__rdiv__": ("terms", None, None, ("input", "other")),
    "Tensor.__ror__": ("composite",),
    "Tensor.__rshift__": ("composite",),
    "Tensor.__rxor__": ("composite",),
    "Tensor.__xor__": ("composite",),
    "Tensor.abs_": ("smooth",),
    "Tensor.absolute": ("smooth",),
    "Tensor.absolute_": ("smooth",),
    "Tensor.acos": ("smooth",),
    "Tensor.acos_": ("smooth",),
    "Tensor.acosh": ("smooth",),
    "Tensor.acosh_": ("smooth",),
    "Tensor.addmm_": ("sums", ("input", "mat1", "mat2", "beta", "alpha")),
    "Tensor.all": ("composite",),
    "Tensor.aminmax": ("composite",),
    "Tensor.any": ("composite",),
    "Tensor.arccos": ("smooth",),
    "Tensor.arccos_": ("smooth",),
    "Tensor.arccosh": ("smooth",),
    "Tensor.arccosh_": ("smooth",),
    "Tensor.arcsin": ("smooth",),
    "Tensor.arcsin_": ("smooth",),
    "Tensor.arcsinh": ("smooth",),
    "Tensor.arcsinh_": ("smooth",),
    "Tensor.arctan": ("smooth",),
    "Tensor.arctan2": ("smooth",),
    "Tensor.arctan2_": ("smooth",),
    "Tensor.arctan_": ("smooth",),
    "Tensor.arctanh": ("smooth",),
    "Tensor.arctanh_": ("smooth",),
    "Tensor.argsort": ("composite",),
    "Tensor.asin": ("smooth",),
    "Tensor.asin_": ("smooth",),
    "Tensor.asinh": ("smooth",),
    "Tensor.asinh_": ("smooth",),
    "Tensor.atan": ("smooth",),
    "Tensor.atan2": ("smooth",),
    "Tensor.atan2_": ("smooth",),
    "Tensor.atan_": ("smooth",),
    "Tensor.atanh": ("smooth",),
    "Tensor.atanh_": ("smooth",),
    "Tensor.baddbmm_": ("sums", ("input", "batch1", "batch2", "beta", "alpha")),
    "Tensor.bitwise_and": ("composite",),
    "Tensor.bitwise_and_": ("composite",),
    "Tensor.bitwise_left_shift": ("composite",),
    "Tensor.bitwise_left_shift_": ("composite",),
    "Tensor.bitwise_not": ("composite",),
    "Tensor.bitwise_not_": ("composite",),
    "Tensor.bitwise_or": ("composite",),
    "Tensor.bitwise_or_": ("composite",),
    "Tensor.bitwise_right_shift": ("composite",),
    "Tensor.bitwise_right_shift_": ("composite",),
    "Tensor.bitwise_xor": ("composite",),
    "Tensor.bitwise_xor_": ("composite",),
    "Tensor.ceil": ("composite",),
    "Tensor.ceil_": ("composite",),
    "Tensor.clamp_max": ("smooth",),
    "Tensor.clamp_max_": ("smooth",),
    "Tensor.clamp_min": ("smooth",),
    "Tensor.clamp_min_": ("smooth",),
    "Tensor.clip": ("smooth",),
    "Tensor.clip_": ("smooth",),
    "Tensor.copysign": ("smooth",),
    "Tensor.copysign_": ("smooth",),
    "Tensor.cos_": ("smooth",),
    "Tensor.cosh": ("smooth",),
    "Tensor.cosh_": ("smooth",),
    "Tensor.count_nonzero": ("composite",),
    "Tensor.cumprod": ("composite",),
    "Tensor.cumprod_": ("composite",),
    "Tensor.cumsum_": ("sums", ("input", "dim", "dtype")),
    "Tensor.deg2rad": ("smooth",),
    "Tensor.deg2rad_": ("smooth",),
    "Tensor.diagonal": ("composite",),
    "Tensor.divide": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.divide_": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.dsplit": ("composite",),
    "Tensor.eq_": ("composite",),
    "Tensor.erf_": ("smooth",),
    "Tensor.erfc": ("smooth",),
    "Tensor.erfc_": ("smooth",),
    "Tensor.exp2": ("smooth",),
    "Tensor.exp2_": ("smooth",),
    "Tensor.exp_": ("smooth",),
    "Tensor.expm1": ("smooth",),
    "Tensor.expm1_": ("smooth",),
    "Tensor.fix": ("composite",),
    "Tensor.fix_": ("composite",),
    "Tensor.flip": ("composite",),
    "Tensor.fliplr": ("composite",),
    "Tensor.flipud": ("composite",),
    "Tensor.float_power": ("smooth",),
    "Tensor.float_power_": ("smooth",),
    "Tensor.floor": ("composite",),
    "Tensor.floor_": ("composite",),
    "Tensor.floor_divide": ("composite",),
    "Tensor.floor_divide_": ("composite",),
    "Tensor.fmax": ("smooth",),
    "Tensor.fmin": ("smooth",),
    "Tensor.fmod": ("smooth",),
    "Tensor.fmod_": ("smooth",),
    "Tensor.frac": ("smooth",),
    "Tensor.frac_": ("smooth",),
    "Tensor.gcd": ("composite",),
    "Tensor.gcd_": ("composite",),
    "Tensor.ge_": ("composite",),
    "Tensor.ger": ("terms", None, None, ("input", "vec2")),
    "Tensor.greater": ("composite",),
    "Tensor.greater_": ("composite",),
    "Tensor.greater_equal": ("composite",),
    "Tensor.greater_equal_": ("composite",),
    "Tensor.gt_": ("composite",),
    "Tensor.hardshrink": ("smooth",),
    "Tensor.heaviside": ("composite",),
    "Tensor.heaviside_": ("composite",),
    "Tensor.hsplit": ("composite",),
    "Tensor.hypot": ("smooth",),
    "Tensor.hypot_": ("smooth",),
    "Tensor.index_add_": ("sums", ("input", "dim", "index", "source", "alpha")),
    "Tensor.isclose": ("composite",),
    "Tensor.isfinite": ("composite",),
    "Tensor.isinf": ("composite",),
    "Tensor.isnan": ("composite",),
    "Tensor.isneginf": ("composite",),
    "Tensor.isposinf": ("composite",),
    "Tensor.lcm": ("composite",),
    "Tensor.lcm_": ("composite",),
    "Tensor.ldexp": ("smooth",),
    "Tensor.ldexp_": ("smooth",),
    "Tensor.le_": ("composite",),
    "Tensor.less": ("composite",),
    "Tensor.less_": ("composite",),
    "Tensor.less_equal": ("composite",),
    "Tensor.less_equal_": ("composite",),
    "Tensor.log10": ("smooth",),
    "Tensor.log10_": ("smooth",),
    "Tensor.log1p": ("smooth",),
    "Tensor.log1p_": ("smooth",),
    "Tensor.log2": ("smooth",),
    "Tensor.log2_": ("smooth",),
    "Tensor.log_": ("smooth",),
    "Tensor.logaddexp": ("smooth",),
    "Tensor.logaddexp2": ("smooth",),
    "Tensor.logcumsumexp": ("composite",),
    "Tensor.logical_and_": ("composite",),
    "Tensor.logical_not_": ("composite",),
    "Tensor.logical_or_": ("composite",),
    "Tensor.logical_xor_": ("composite",),
    "Tensor.logit": ("smooth",),
    "Tensor.logit_": ("smooth",),
    "Tensor.lt_": ("composite",),
    "Tensor.masked_fill_": ("smooth",),
    "Tensor.moveaxis": ("composite",),
    "Tensor.movedim": ("composite",),
    "Tensor.msort": ("composite",),
    "Tensor.multiply": ("terms", None, None, ("input", "other")),
    "Tensor.multiply_": ("terms", None, None, ("input", "other")),
    "Tensor.nan_to_num": ("smooth",),
    "Tensor.nan_to_num_": ("smooth",),
    "Tensor.nanmean": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Tensor.nansum": ("sums", ("input", "dim", "keepdim", "dtype")),
    "Tensor.narrow_copy": ("composite",),
    "Tensor.ne_": ("composite",),
    "Tensor.neg_": ("terms", None, None, ("input",)),
    "Tensor.negative": ("terms", None, None, ("input",)),
    "Tensor.negative_": ("terms", None, None, ("input",)),
    "Tensor.not_equal": ("composite",),
    "Tensor.not_equal_": ("composite",),
    "Tensor.pow_": ("smooth",),
    "Tensor.prod": ("composite",),
    "Tensor.rad2deg": ("smooth",),
    "Tensor.rad2deg_": ("smooth",),
    "Tensor.ravel": ("composite",),
    "Tensor.reciprocal_": ("smooth",),
    "Tensor.relu_": ("smooth",),
    "Tensor.remainder": ("smooth",),
    "Tensor.remainder_": ("smooth",),
    "Tensor.roll": ("composite",),
    "Tensor.rot90": ("composite",),
    "Tensor.round": ("composite",),
    "Tensor.round_": ("composite",),
    "Tensor.scatter_": ("composite",),
    "Tensor.scatter_add_": ("sums", ("input", "dim", "index", "src")),
    "Tensor.select": ("composite",),
    "Tensor.sgn": ("composite",),
    "Tensor.sgn_": ("composite",),
    "Tensor.sigmoid_": ("parts", "sigmoid", False, ("input",)),
    "Tensor.sign": ("composite",),
    "Tensor.sign_": ("composite",),
    "Tensor.signbit": ("composite",),
    "Tensor.sin_": ("smooth",),
    "Tensor.sinc": ("smooth",),
    "Tensor.sinc_": ("smooth",),
    "Tensor.sinh": ("smooth",),
    "Tensor.sinh_": ("smooth",),
    "Tensor.sort": ("composite",),
    "Tensor.split_with_sizes": ("composite",),
    "Tensor.sqrt_": ("smooth",),
    "Tensor.squeeze_": ("composite",),
    "Tensor.sub_": ("terms", 1, "other", ("input", "other", "alpha")),
    "Tensor.subtract": ("terms", 1, "other", ("input", "other", "alpha")),
    "Tensor.swapdims": ("composite",),
    "Tensor.swapdims_": ("composite",),
    "Tensor.t_": ("composite",),
    "Tensor.tan": ("smooth",),
    "Tensor.tan_": ("smooth",),
    "Tensor.tanh_": ("parts", "tanh", False, ("input",)),
    "Tensor.tensor_split": ("composite",),
    "Tensor.tile": ("composite",),
    "Tensor.transpose_": ("composite",),
    "Tensor.tril_": ("composite",),
    "Tensor.triu_": ("composite",),
    "Tensor.true_divide": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.true_divide_": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Tensor.trunc": ("composite",),
    "Tensor.trunc_": ("composite",),
    "Tensor.unbind": ("composite",),
    "Tensor.unflatten": ("composite",),
    "Tensor.unsafe_chunk": ("composite",),
    "Tensor.unsafe_split": ("composite",),
    "Tensor.unsafe_split_with_sizes": ("composite",),
    "Tensor.unsqueeze_": ("composite",),
    "Tensor.vsplit": ("composite",),
    "Tensor.xlogy": ("smooth",),
    "Tensor.xlogy_": ("smooth",),
    "Torch.abs_": ("smooth",),
    "Torch.absolute": ("smooth",),
    "Torch.acos_": ("smooth",),
    "Torch.acosh_": ("smooth",),
    "Torch.arccos": ("smooth",),
    "Torch.arccos_": ("smooth",),
    "Torch.arccosh": ("smooth",),
    "Torch.arccosh_": ("smooth",),
    "Torch.arcsin": ("smooth",),
    "Torch.arcsin_": ("smooth",),
    "Torch.arcsinh": ("smooth",),
    "Torch.arcsinh_": ("smooth",),
    "Torch.arctan": ("smooth",),
    "Torch.arctan2": ("smooth",),
    "Torch.arctan_": ("smooth",),
    "Torch.arctanh": ("smooth",),
    "Torch.arctanh_": ("smooth",),
    "Torch.asin_": ("smooth",),
    "Torch.asinh_": ("smooth",),
    "Torch.atan_": ("smooth",),
    "Torch.atanh_": ("smooth",),
    "Torch.ceil_": ("composite",),
    "Torch.celu_": ("smooth",),
    "Torch.clamp_": ("smooth",),
    "Torch.clamp_max_": ("smooth",),
    "Torch.clamp_min_": ("smooth",),
    "Torch.clip_": ("smooth",),
    "Torch.concatenate": ("composite",),
    "Torch.cos_": ("smooth",),
    "Torch.cosh_": ("smooth",),
    "Torch.deg2rad_": ("smooth",),
    "Torch.divide": ("terms", None, None, ("input", "other", "rounding_mode")),
    "Torch.erf_": ("smooth",),
    "Torch.erfc_": ("smooth",),
    "Torch.exp2_": ("smooth",),
    "Torch.exp_": ("smooth",),
    "Torch.expm1_": ("smooth",),
    "Torch.fix": ("composite",),
    "Torch.fix_": ("composite",),
    "Torch.floor_": ("composite",),
    "Torch.frac_": ("smooth",),
    "Torch.gcd_": ("composite",),
    "Torch.ger": ("terms", None, None, ("input", "vec2")),
    "Torch.greater": ("composite",),
    "Torch.greater_equal": ("composite",),
    "Torch.lcm_": ("composite",),
    "Torch.ldexp_": ("smooth",),
    "Torch.less": ("composite",),
    "Torch.less_equal": ("composite",),
    "Torch.log10_": ("smooth",),
    "Torch.log1p_": ("smooth",),
    "Torch.log2_": ("smooth",),
    "Torch.log_": ("smooth",),
    "Torch.logit_": ("smooth",),
    "Torch.moveaxis": ("composite",),
    "Torch.multiply": ("terms", None, None, ("input", "other")),
    "Torch.nan_to_num_": ("smooth",),
    "Torch.neg_": ("terms", None, None, ("input",)),
    "Torch.negative": ("terms", None, None, ("input",)),
    "Torch.negative_": ("terms", None, None, ("input",)),
    "Torch.not_equal": ("composite",),
    "Torch.rad2deg_": ("smooth",),
    "Torch.reciprocal_": ("smooth",),
    "Torch.relu_": ("smooth",),
    "Torch.round_": ("composite",),
    "Torch.row_stack": ("composite",),
    "Torch.rsqrt_": ("smooth",),
    "Torch.selu_": ("smooth",),
    "Torch.sigmoid_": ("parts", "sigmoid", False, ("input",)),
    "Torch.sin_": ("smooth",),
    "Torch.sinc_": ("smooth",),
    "Torch.sinh_": ("smooth",),
    "Torch.sqrt_": ("smooth",),
    "Torch.square_": ("terms", None, None, ("input",)),
    "Torch.subtract": ("terms", 1, "other", ("input", "other", "alpha")),
    "Torch.swapdims": ("composite",),
    "Torch.tan_": ("smooth",),
    "Torch.tanh_": ("parts", "tanh", False, ("input",)),
    "Torch.threshold_": ("smooth",),
    "Torch.trunc_": ("composite",),
    "Torch.xlogy_": ("smooth",),
    "MS.Tensor.__isub__": ("terms", 1, "other", ("input", "other", "alpha")),
    "MS.Tensor.sub_": ("terms", 1, "other", ("input", "other", "alpha")),
    "MS.Mint.all": ("composite",),
    "MS.Mint.any": ("composite",),
    "MS.Mint.bitwise_and": ("composite",),
    "MS.Mint.bitwise_or": ("composite",),
    "MS.Mint.bitwise_xor": ("composite",),
    "MS.Mint.ceil": ("composite",),
    "MS.Mint.conv2d": ("sums", ("input", "weight", "bias", "stride", "padding", "dilation", "groups")),
    "MS.Mint.conv_transpose2d": ("sums", ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")),
    "MS.Mint.divide": ("terms", None, None, ("input", "other", "rounding_mode")),
    "MS.Mint.flip": ("composite",),
    "MS.Mint.gelu": ("parts", "gelu", False, ("input", "approximate")),
    "MS.Mint.greater": ("composite",),
    "MS.Mint.group_norm": ("composite",),
    "MS.Mint.isclose": ("composite",),
    "MS.Mint.isfinite": ("composite",),
    "MS.Mint.layer_norm": ("composite",),
    "MS.Mint.less": ("composite",),
    "MS.Mint.less_equal": ("composite",),
    "MS.Mint.max": ("composite",),
    "MS.Mint.min": ("composite",),
    "MS.Mint.negative": ("terms", None, None, ("input",)),
    "MS.Mint.prod": ("composite",),
    "MS.Mint.remainder": ("smooth",),
    "MS.Mint.repeat_interleave": ("composite",),
    "MS.Mint.silu": ("smooth",),
    "MS.Mint.sort": ("composite",),
    "MS.Mint.tile": ("composite",),
    "MS.Mint.xlogy": ("smooth",),
    "MS.Mint.select": ("composite",),
    "MS.Mint.floor": ("composite",),
    "MS.Mint.arctan2": ("smooth",),
    "MS.Mint.sign": ("composite",),
    "MS.Mint.concat": ("composite",),
    "MS.Mint.atanh": ("smooth",),
    "MS.Mint.greater_equal": ("composite",),
    "MS.Mint.fix": ("composite",),
    "MS.Mint.asinh": ("smooth",),
    "MS.Mint.atan": ("smooth",),
    "MS.Mint.nan_to_num": ("smooth",),
    "MS.Mint.tan": ("smooth",),
    "MS.Mint.round": ("composite",),
    "MS.Mint.cosh": ("smooth",),
    "MS.Mint.norm": ("composite",),
    "MS.Mint.roll": ("composite",),
    "MS.Mint.log1p": ("smooth",),
    "MS.Mint.arccos": ("smooth",),
    "MS.Mint.arcsin": ("smooth",),
    "MS.Mint.acosh": ("smooth",),
    "MS.Mint.acos": ("smooth",),
    "MS.Mint.sinc": ("smooth",),
    "MS.Mint.arcsinh": ("smooth",),
    "MS.Mint.asin": ("smooth",),
    "MS.Mint.arctanh": ("smooth",),
    "MS.Mint.erfc": ("smooth",),
    "MS.Mint.expm1": ("smooth",),
    "MS.Mint.logaddexp": ("smooth",),
    "MS.Mint.sinh": ("smooth",),
    "MS.Mint.arccosh": ("smooth",),
    "MS.Mint.atan2": ("smooth",),
    "MS.Mint.trunc": ("composite",),
    "MS.Mint.arctan": ("smooth",),
    "MS.Mint.swapaxes": ("composite",),
    "MS.MintFunctional.dense": ("sums", ("input", "weight", "bias")),
    "MS.MintFunctional.pad": ("composite",),
    "MS.MintFunctional.relu_": ("smooth",),
    "MS.MintFunctional.softplus": ("smooth",),
    "MS.MintFunctional.selu": ("smooth",),
    "MS.MintFunctional.softshrink": ("smooth",),
    "MS.MintFunctional.logsigmoid": ("smooth",),
    "MS.MintFunctional.mish": ("smooth",),
    "MS.MintFunctional.hardshrink": ("smooth",),
    "MS.MintFunctional.elu": ("smooth",),
}
# Each class's (k, compute dtype: u and eta) of k*(u*magnitude + eta) + ulp/2 by the output's float dtype, as
# (forward, backward) (Rounding::factors); a formula's parts by the formula's name.
ROUNDING_FACTORS = {
    "terms": {"float16": ((4.0, "float16"), (4.0, "float16")), "bfloat16": ((4.0, "bfloat16"), (4.0, "bfloat16")), "float32": ((3.0, "float32"), (16.0, "float32")), "float64": ((3.0, "float64"), (16.0, "float64"))},
    "smooth": {"float16": ((4.0, "float16"), (4.0, "float16")), "bfloat16": ((4.0, "bfloat16"), (4.0, "bfloat16")), "float32": ((32.0, "float32"), (32.0, "float32")), "float64": ((32.0, "float64"), (32.0, "float64"))},
    "sums": {"float16": ((16.0, "float32"), (16.0, "float32")), "bfloat16": ((16.0, "float32"), (16.0, "float32")), "float32": ((16.0, "float32"), (16.0, "float32")), "float64": ((16.0, "float64"), (16.0, "float64"))},
    "sigmoid": {"float16": ((4.0, "float16"), (4.0, "float16")), "bfloat16": ((4.0, "bfloat16"), (4.0, "bfloat16")), "float32": ((32.0, "float32"), (32.0, "float32")), "float64": ((32.0, "float64"), (32.0, "float64"))},
    "tanh": {"float16": ((4.0, "float16"), (4.0, "float16")), "bfloat16": ((4.0, "bfloat16"), (4.0, "bfloat16")), "float32": ((32.0, "float32"), (32.0, "float32")), "float64": ((32.0, "float64"), (32.0, "float64"))},
    "composite": {"float16": ((4.0, "float16"), (4.0, "float16")), "bfloat16": ((4.0, "bfloat16"), (4.0, "bfloat16")), "float32": ((64.0, "float32"), (64.0, "float32")), "float64": ((64.0, "float64"), (64.0, "float64"))},
    "gelu": {"float16": ((4.0, "float16"), (4.0, "float16")), "bfloat16": ((4.0, "bfloat16"), (4.0, "bfloat16")), "float32": ((32.0, "float32"), (32.0, "float32")), "float64": ((32.0, "float64"), (32.0, "float64"))},
    "sdpa": {"float16": ((4.0, "float16"), (4.0, "float16")), "bfloat16": ((4.0, "bfloat16"), (4.0, "bfloat16")), "float32": ((64.0, "float32"), (64.0, "float32")), "float64": ((64.0, "float64"), (64.0, "float64"))},
}
# The parameters whose integers are operands of terms and sums (ops::OPERANDS).
ROUNDING_OPERANDS = frozenset(["input", "other", "alpha", "beta", "value", "tensor1", "tensor2", "mat1", "mat2", "batch1", "batch2", "vec2", "weight", "bias", "source", "src"])
# (mantissa bits, smallest normal exponent) of each float dtype (TDType::float_format).
FLOAT_FORMATS = {
    "float16": (10, -14),
    "bfloat16": (7, -126),
    "float32": (23, -126),
    "float64": (52, -1022),
}
# Message parts the native replay writes too (runtime/src/replay/judge.rs).
UNDEFINED_VALUES = "values undefined (uninitialized memory): only the shape is compared"
SELF_REFERENCE = "the reference run is the tested run itself, so this rule cannot fail here"


class TensorSpec:
    """A dumped tensor: dtype, shape, value range and (tensor dumps) its file."""

    def __init__(self, dtype, shape, low=None, high=None, requires_grad=None, data_name=None):
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.low = low
        self.high = high
        self.requires_grad = requires_grad
        self.data_name = data_name


class DType:
    """A dtype argument, by name in the dump's spelling."""

    def __init__(self, name):
        self.name = name


class Device:
    """A device argument: the tested run uses its own device, the bench the CPU."""

    def __init__(self, name):
        self.name = name


class Size:
    """A torch.Size argument."""

    def __init__(self, dims):
        self.dims = list(dims)


class MemoryFormat:
    """A torch.memory_format argument, by name."""

    def __init__(self, name):
        self.name = name


class Unsupported:
    """A value msprobe could not record (or this tool cannot replay): passed as None."""

    def __init__(self, type_name):
        self.type_name = type_name


class Master:
    """A tensor's values as a numpy array (float64, int64 or bool) plus its spec;
    both the tested and the bench tensors are made from it."""

    def __init__(self, spec, array):
        self.spec = spec
        self.array = array


# dtype name (both frameworks' spellings) -> (canonical name, kind)
DTYPES = {name: (canon, kind) for canon, kind, names in DTYPE_TABLE for name in names}


def dtype_info(name):
    if name not in DTYPES:
        raise ValueError(f"unsupported dtype {name!r}")
    return DTYPES[name]


def _num(x):
    """A statistic as a float (bools count as 0/1), or None."""
    if x is None:
        return None
    return float(x)


def random_array(spec, rng):
    """Values drawn uniformly from the dumped [Min, Max], with Min and Max
    themselves placed first and last. Non-finite statistics are kept: an
    infinite Max puts +inf last, an infinite Min puts -inf first, and a NaN
    statistic puts one NaN in the middle; the rest is drawn from a finite range."""
    canon, kind = dtype_info(spec.dtype)
    shape = spec.shape
    size = int(np.prod(shape)) if shape else 1
    low, high = _num(spec.low), _num(spec.high)
    if kind == "bool":
        if high == 0:
            return np.zeros(shape, dtype=bool)
        if low == 1:
            return np.ones(shape, dtype=bool)
        return rng.integers(0, 2, size=shape).astype(bool)
    if kind == "complex":
        raise ValueError(f"random data for {spec.dtype} is not supported; use real_data")
    specials = []
    if low is None or high is None:
        low, high = (-1.0, 1.0) if kind == "float" else (0.0, 1.0)
    if math.isnan(low) or math.isnan(high):
        specials.append((size // 2, float("nan")))
        low, high = -1.0, 1.0
    if math.isinf(high):
        specials.append((size - 1, high))
        high = abs(low) if math.isfinite(low) else 1.0
    if math.isinf(low):
        specials.append((0, low))
        low = -abs(high)
    if low > high:
        low, high = high, low
    if kind == "int":
        lo_lim, hi_lim = INT_RANGES[canon]
        hi_lim = min(hi_lim, 2**63 - 1)  # drawn as int64
        lo, hi = max(int(math.ceil(low)), lo_lim), min(int(math.floor(high)), hi_lim)
        if lo > hi:
            lo = hi = min(max(int(round(low)), lo_lim), hi_lim)
        array = np.asarray(rng.integers(lo, hi, size=shape, dtype=np.int64, endpoint=True))
        ends = (lo, hi)
    else:
        mid, half = low / 2 + high / 2, high / 2 - low / 2
        array = np.asarray(mid + half * (2.0 * rng.random(size=shape) - 1.0), dtype=np.float64)
        ends = (low, high)
    flat = array.reshape(-1)
    if flat.size:
        flat[0], flat[-1] = ends
        for index, value in specials:
            flat[index] = value
    return array


class InputError(Exception):
    """A tensor file the run cannot use: the script prints one line and
    exits with EXIT_INPUT, writing no CSV."""

    def __init__(self, path, problem):
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def first_line(exc):
    return (str(exc).strip().splitlines() or [""])[0]


def unsafe_reason(exc):
    """The line of torch's weights_only refusal that names what the pickle wanted."""
    lines = [line.strip() for line in str(exc).splitlines() if "GLOBAL" in line]
    return lines[0] if lines else first_line(exc)


def read_tensor_file(path):
    """The array in a .npy file (no pickles) or a .pt file (torch.load with
    weights_only=True: a pickle that would call anything is refused). The
    file is read first, so that what cannot be read is told apart from what
    cannot be parsed."""
    try:
        with open(path, "rb") as f:
            data = io.BytesIO(f.read())
    except FileNotFoundError:
        raise InputError(path, "no such file (--data-dir names the dump's tensor folder)") from None
    except OSError as exc:
        raise InputError(path, f"cannot read it: {exc.strerror or first_line(exc)}") from None
    try:
        if path.endswith(".npy"):
            array = np.load(data, allow_pickle=False)
        else:
            tensor = torch.load(data, map_location="cpu", weights_only=True)
            if not isinstance(tensor, torch.Tensor):
                raise InputError(path, f"holds a {type(tensor).__name__}, not a tensor")
            if tensor.dtype == torch.bfloat16 or tensor.dtype == torch.float16:
                tensor = tensor.to(torch.float32)
            array = tensor.detach().numpy()
    except InputError:
        raise
    except pickle.UnpicklingError as exc:
        raise InputError(path, f"refused: not a plain tensor file ({unsafe_reason(exc)})") from None
    except Exception as exc:  # torch and numpy report truncated or malformed files in many ways
        detail = first_line(exc)
        raise InputError(path, f"truncated or malformed: {type(exc).__name__}{': ' + detail if detail else ''}") from None
    if array.dtype.kind not in "biufc":
        raise InputError(path, f"holds {array.dtype} values, not numbers")
    return array


def load_array(spec, data_dir, api_name):
    """The dumped tensor from its .pt (PyTorch) or .npy (MindSpore) file;
    api_name names the call when the spec has no file."""
    if not spec.data_name:
        raise InputError(api_name, "an input has no tensor file (data_name): real_data needs a tensor dump")
    if data_dir is None:
        raise InputError(spec.data_name, "no tensor folder is known: pass --data-dir")
    # Tensor files are read only from inside the tensor folder (msprobe-rs's
    # rule; the dump's data_name is someone else's text).
    name = spec.data_name
    if name in (".", "..") or "/" in name or "\\" in name or "\0" in name or os.path.isabs(name) or os.path.splitdrive(name)[0]:
        raise InputError(name, "refused: a tensor file name must be a bare file name in the dump's tensor folder")
    path = os.path.join(data_dir, name)
    folder, resolved = os.path.realpath(data_dir), os.path.realpath(path)
    if os.path.commonpath([folder, resolved]) != folder:
        raise InputError(path, f"refused: it resolves to {resolved}, outside the tensor folder {folder}")
    array = read_tensor_file(path)
    if tuple(array.shape) != spec.shape:
        raise InputError(path, f"shape {tuple(array.shape)} differs from the dumped {spec.shape}")
    _, kind = dtype_info(spec.dtype)
    if kind == "float":
        return array.astype(np.float64)
    if kind == "int":
        return array.astype(np.int64)
    return array


class Realizer:
    """Turns spec trees into Master values. In random_data mode each tensor
    gets its own random stream, seeded by (the script's RANDOM_SEED,
    iteration, ordinal): every tensor and every iteration differs, and a
    rerun reproduces them. call is the script (DATA_MODE, RANDOM_SEED, API_NAME)."""

    def __init__(self, call, iteration, data_dir):
        self.iteration = iteration
        self.data_mode = call.DATA_MODE
        self.seed = call.RANDOM_SEED
        self.api_name = call.API_NAME
        self.data_dir = data_dir
        self.ordinal = 0

    def __call__(self, value):
        if isinstance(value, TensorSpec):
            self.ordinal += 1
            if self.data_mode == "real_data":
                return Master(value, load_array(value, self.data_dir, self.api_name))
            rng = np.random.default_rng([self.seed, self.iteration, self.ordinal])
            return Master(value, random_array(value, rng))
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value


def fold_class_targets(args, kwargs):
    """Random class indices of cross_entropy/nll_loss (the second positional
    argument, integer) drawn from a dumped range whose Min is the ignore
    marker (-100) land between the marker and class 0, which torch and
    MindSpore refuse: such values become |v| mod (Max + 1), and the marker
    itself is kept (as msprobe-rs replay does)."""
    if len(args) < 2 or not isinstance(args[1], Master) or dtype_info(args[1].spec.dtype)[1] != "int":
        return
    ignore = kwargs.get("ignore_index", -100)
    values = args[1].array
    if values.size == 0:
        return
    top = max(int(values.max()), 0)
    folded = np.where((values < 0) & (values != ignore), np.abs(values) % (top + 1), values)
    args[1] = Master(args[1].spec, folded.astype(values.dtype))


def wants_grad(master, any_marked):
    """Which inputs the backward pass differentiates: float tensors that were
    marked requires_grad in the dump, or, when the dump marks none (MindSpore
    dumps carry no requires_grad), every float tensor but those marked
    requires_grad=False (the generator marks the inputs whose recorded
    gradient is null, such as batch_norm's running statistics)."""
    _, kind = dtype_info(master.spec.dtype)
    if kind != "float":
        return False
    return bool(master.spec.requires_grad) if any_marked else master.spec.requires_grad is not False


def any_marked(values):
    found = False
    for v in values:
        if isinstance(v, Master) and v.spec.requires_grad:
            found = True
        elif isinstance(v, (list, tuple)):
            found = found or any_marked(v)
    return found


RAISE_PRECISION = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float64}
MEMORY_FORMATS = {"contiguous_format": torch.contiguous_format, "channels_last": torch.channels_last,
                  "channels_last_3d": torch.channels_last_3d, "preserve_format": torch.preserve_format}


def torch_dtype(name):
    return getattr(torch, dtype_info(name)[0])


def to_torch(value, device, raise_precision, exact_op=False):
    """A torch value from a Master tree: tensors rounded to the dumped dtype
    first (so both sides start from the same numbers), then raised for the
    bench, and dtype arguments raised the same way (softmax(x, dtype=float32)
    computes in float64 on the bench), except for ops that must match bit for
    bit (exact_op, the script's EXACT_OP: arange(0, 1, 0.1, dtype=float32)
    makes float32 values)."""
    if isinstance(value, Master):
        dtype = torch_dtype(value.spec.dtype)
        tensor = torch.from_numpy(np.array(value.array, order="C")).to(dtype)  # np.array keeps 0-d shapes
        if raise_precision:
            tensor = tensor.to(RAISE_PRECISION.get(dtype, dtype))
        return tensor.to(device)
    if isinstance(value, DType):
        dtype = torch_dtype(value.name)
        return RAISE_PRECISION.get(dtype, dtype) if raise_precision and not exact_op else dtype
    if isinstance(value, Device):
        return torch.device(device)
    if isinstance(value, Size):
        return torch.Size(value.dims)
    if isinstance(value, MemoryFormat):
        return MEMORY_FORMATS[value.name]
    if isinstance(value, Unsupported):
        return None
    if isinstance(value, list):
        return [to_torch(v, device, raise_precision, exact_op) for v in value]
    if isinstance(value, tuple):
        return tuple(to_torch(v, device, raise_precision, exact_op) for v in value)
    if isinstance(value, dict):
        return {k: to_torch(v, device, raise_precision, exact_op) for k, v in value.items()}
    return value


def flatten_outputs(out):
    if isinstance(out, (list, tuple)):
        return [leaf for item in out for leaf in flatten_outputs(item)]
    return [out]


def torch_run(fn, args, kwargs, grad_outputs, device, raise_precision, exact_op=False):
    """Runs fn forward and, when grad_outputs is given, backward with
    torch.autograd.grad. Returns (outputs, gradients w.r.t. the inputs or None)."""
    backward = grad_outputs is not None
    marked = any_marked(list(args) + list(kwargs.values()))
    leaves = []

    def convert(value):
        if isinstance(value, (list, tuple)):  # tensors inside a list (cat, stack) are differentiated too
            items = [convert(v) for v in value]
            return items if isinstance(value, list) else tuple(items)
        tensor = to_torch(value, device, raise_precision, exact_op)
        if backward and isinstance(value, Master) and wants_grad(value, marked):
            tensor.requires_grad_(True)
            leaves.append(tensor)
            return tensor.clone()  # a non-leaf copy, so in-place APIs can run
        return tensor

    call_args = [convert(a) for a in args]
    call_kwargs = {k: convert(v) for k, v in kwargs.items()}
    with torch.set_grad_enabled(backward):
        out = fn(*call_args, **call_kwargs)
    if out is None and call_args:
        out = call_args[0]  # an in-place API such as __setitem__: compare the updated self
    outputs = flatten_outputs(out)
    if not backward:
        return outputs, None
    if not leaves:
        raise ValueError("backward: no floating-point input to differentiate")
    pairs = []
    for i, o in enumerate(outputs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if isinstance(o, torch.Tensor) and o.requires_grad and isinstance(g, Master):
            grad = to_torch(g, device, raise_precision, exact_op).to(o.dtype)
            if grad.shape != o.shape:
                if grad.numel() != o.numel():
                    raise ValueError(f"backward: dumped gradient {i} has shape {tuple(grad.shape)}, output has {tuple(o.shape)}")
                grad = grad.reshape(o.shape)
            pairs.append((o, grad))
    if not any(isinstance(g, Master) for g in grad_outputs[:len(outputs)]):
        raise ValueError("backward: no output has a dumped gradient")
    if pairs:
        grads = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)
    else:  # no output depends differentiably on the inputs (one_hot's on/off values): zero gradients
        grads = [None] * len(leaves)
    grads = [torch.zeros_like(leaf) if g is None else g for g, leaf in zip(grads, leaves)]
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in outputs], grads


def torch_leaf(value, dtype_label=str):
    """(dtype label, float64 array or None) of one torch output, for comparison."""
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        if tensor.is_complex():
            tensor = torch.view_as_real(tensor)
        return dtype_label(value.dtype), tensor.to(torch.float64).numpy()
    return scalar_leaf(value)


# The relative perturbation of the central differences (2^-20): large against
# float64's rounding, small against any curvature that matters.
MAGNITUDE_H = 2.0 ** -20
# float32's unit roundoff: the float32 probe's errors in its units.
MAGNITUDE_U32 = 2.0 ** -24


def rounding_of(api_op, prefixes):
    """The rounding class of the op-table entry of api_op (``Prefix.op``), looked up
    with each of prefixes in turn ("MS." first for MindSpore's own meanings, as the
    op table's lookup does); None for an API the op table does not hold."""
    for prefix in prefixes:
        entry = ROUNDING.get(prefix + api_op)
        if entry is not None:
            return entry
    return None


def rounding_factors(entry, dtype, backward):
    """The class's (k, compute dtype) of k*(u*magnitude + eta) + ulp/2 for an output of dtype (the
    tested side's canonical name), forward or a gradient; None for a dtype that is not a float."""
    per_dtype = ROUNDING_FACTORS[entry[1] if entry[0] == "parts" else entry[0]].get(dtype)
    return None if per_dtype is None else per_dtype[1 if backward else 0]


def _mag_is_float(value):
    return isinstance(value, Master) and dtype_info(value.spec.dtype)[1] == "float"


def _mag_values(master):
    """A float Master's values as the bench starts from them (rounded to the dumped dtype), in float64."""
    return to_torch(master, "cpu", raise_precision=False).to(torch.float64).numpy()


def _mag_walk(value, dtype, tensor=None, scalar=None):
    """value with its float tensors made Masters of dtype from tensor(values) (their
    values unchanged without it), its float dtype arguments dtype, and its Python
    numbers passed through scalar; lists and tuples walked."""
    if _mag_is_float(value):
        array = _mag_values(value)
        s = value.spec
        spec = TensorSpec(dtype, s.shape, s.low, s.high, s.requires_grad, s.data_name)
        return Master(spec, array if tensor is None else tensor(array))
    if isinstance(value, DType) and dtype_info(value.name)[1] == "float":
        return DType(dtype)
    if isinstance(value, (list, tuple)):
        items = [_mag_walk(v, dtype, tensor, scalar) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if scalar is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        return scalar(value)
    return value


def _mag_signs(n, pattern):
    """The sign of each element of a patterned perturbation: alternating, or the
    Thue-Morse sequence (the parity of the flat index's bits)."""
    j = np.arange(n, dtype=np.int64)
    if pattern == "alternating":
        odd = j % 2
    else:
        odd = np.zeros(n, dtype=np.int64)
        while j.any():
            odd ^= j & 1
            j = j >> 1
    return np.where(odd == 1, -1.0, 1.0)


def _mag_perturbed(h, pattern):
    """Values times 1 + h (uniform), or 1 + h*sign by a pattern."""
    def tensor(x):
        if pattern == "uniform":
            return x * (1.0 + h)
        return (x.reshape(-1) * (1.0 + h * _mag_signs(x.size, pattern))).reshape(x.shape)
    return tensor


def _mag_absolute(negate, operand):
    """(tensor, scalar) transforms to absolute values, non-positive where negate;
    integers too where they are an operand (ROUNDING_OPERANDS: a dim keeps its sign)."""
    sign = -1.0 if negate else 1.0

    def scalar(x):
        if isinstance(x, float):
            return sign * abs(x)
        if negate:
            return -abs(x)
        return abs(x) if operand else x
    return (lambda x: sign * np.abs(x)), scalar


def _mag_flat(run_result):
    """(per output, per gradient) float64 values of one run: float tensors only for
    the outputs (None elsewhere), every gradient."""
    outputs, grads = run_result

    def values(v, any_tensor):
        if isinstance(v, torch.Tensor) and (any_tensor or v.is_floating_point()):
            return v.detach().cpu().to(torch.float64).numpy().reshape(-1)
        return None
    return [values(o, False) for o in outputs], [values(g, True) for g in (grads or [])]


def _mag_add_difference(acc, x, y, scale):
    """acc[i] += |x[i] - y[i]| * scale; None where a side is missing or the sizes differ."""
    for i, a in enumerate(acc):
        xi = x[i] if i < len(x) else None
        yi = y[i] if i < len(y) else None
        if a is None or xi is None or yi is None or a.size != xi.size or xi.size != yi.size:
            acc[i] = None
        else:
            acc[i] = a + np.abs(xi - yi) * scale


def _mag_add_parts(acc, parts):
    """acc[0] += parts (nothing when there are none); None when the sizes differ."""
    if not acc or parts is None:
        return
    if acc[0] is not None and parts is not None and acc[0].size == parts.size:
        acc[0] = acc[0] + parts
    else:
        acc[0] = None


def _mag_perturbable(value):
    if isinstance(value, (list, tuple)):
        return any(_mag_perturbable(v) for v in value)
    return _mag_is_float(value)


def _mag_float64_call(value):
    """Whether a float tensor input is float64 (its device computes in float64: no float32 probe)."""
    if isinstance(value, (list, tuple)):
        return any(_mag_float64_call(v) for v in value)
    return _mag_is_float(value) and dtype_info(value.spec.dtype)[0] == "float64"


class _MagCall:
    """The bench call's variations: run(args, kwargs, grad_outputs, raise_precision)
    runs the bench function (the side's run_bench) on Master trees."""

    def __init__(self, run, args, kwargs, grad_outputs):
        self.run, self.args, self.kwargs, self.grad_outputs = run, list(args), dict(kwargs), grad_outputs
        self.keys = list(self.kwargs)

    def slots(self):
        """Top-level arguments, positionals then keywords: (slot, keyword or None, value)."""
        n = len(self.args)
        return [(i, None, v) for i, v in enumerate(self.args)] + [(n + i, k, self.kwargs[k]) for i, k in enumerate(self.keys)]

    def run_with(self, arg, grad=None, dtype="torch.float64", raise_precision=True):
        """Runs the bench with each float tensor in dtype and each top-level argument
        passed through arg(slot, keyword, value); the dumped output gradients in dtype,
        through grad (values) when given."""
        values = {slot: arg(slot, key, v) for slot, key, v in self.slots()}
        n = len(self.args)
        args = [values[i] for i in range(n)]
        kwargs = {k: values[n + i] for i, k in enumerate(self.keys)}
        grads = None if self.grad_outputs is None else [_mag_walk(g, dtype, grad) for g in self.grad_outputs]
        return _mag_flat(self.run(args, kwargs, grads, raise_precision))


def _mag_on_absolute_values(c, negated_position, negated_name, names):
    """terms and sums: the op (and its backward, with |dy|) on the absolute values of
    its floats (and of its integer operands), the negated parameter made non-positive."""
    def arg(slot, key, v):
        name = KEYWORD_ALIASES.get(key, key) if key is not None else (names[slot] if slot < len(names) else None)
        negate = negated_name is not None and (name == negated_name if key is not None else slot == negated_position)
        tensor, scalar = _mag_absolute(negate, name in ROUNDING_OPERANDS)
        return _mag_walk(v, "torch.float64", tensor, scalar)
    outputs, grads = c.run_with(arg, grad=np.abs)
    return [None if o is None else np.abs(o) for o in outputs], [None if g is None else np.abs(g) for g in grads]


def _mag_first_order(c, patterns):
    """|y| + sum over each float input j and pattern p of |y(x_j(1+h p)) - y(x_j(1-h p))| / 2h,
    for the outputs and (with the same dy) the gradients; also the plain float64 run."""
    base = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64"))
    o = [None if x is None else np.abs(x) for x in base[0]]
    g = [None if x is None else np.abs(x) for x in base[1]]
    for j, _, value in c.slots():
        if not _mag_perturbable(value):
            continue
        for pattern in patterns:
            def at(h):
                return c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64", _mag_perturbed(h, pattern) if slot == j else None))
            plus, minus = at(MAGNITUDE_H), at(-MAGNITUDE_H)
            _mag_add_difference(o, plus[0], minus[0], 0.5 / MAGNITUDE_H)
            _mag_add_difference(g, plus[1], minus[1], 0.5 / MAGNITUDE_H)
    return o, g, base


def _mag_bound(c, names):
    """The call's arguments by the signature's parameter names (positionals by position,
    keywords by name or alias): float tensors as float64 torch tensors, other tensors as
    they are, anything else unchanged."""
    def value(v):
        if _mag_is_float(v):
            return torch.from_numpy(_mag_values(v))
        return to_torch(v, "cpu", raise_precision=False) if isinstance(v, Master) else v
    bound = {name: value(v) for name, v in zip(names, c.args)}
    for k, v in c.kwargs.items():
        bound[KEYWORD_ALIASES.get(k, k)] = value(v)
    return bound


def _mag_flat64(t):
    return t.reshape(-1).numpy()


def gelu_parts(bound, dy):
    """gelu's parts (the mirror of gelu_parts in runtime/src/ops/nn.rs): x*(1 + erf(x/sqrt2))/2
    cancels inside for negative x, and so does its derivative (tanh form alike):
    |x|*(1 + |inner|)/2 forward, |dy|*((1 + |inner|)/2 + |x*inner'|/2) backward (none without dy)."""
    x = bound["input"].reshape(-1).numpy()
    c = math.sqrt(2.0 / math.pi)
    if bound.get("approximate") == "tanh":
        t = np.tanh(c * (x + 0.044715 * x * x * x))
        inner, slope = np.abs(t), np.abs(x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x))
    else:
        erf = torch.special.erf(torch.from_numpy(x * (1.0 / math.sqrt(2.0)))).numpy()
        inner, slope = np.abs(erf), np.abs(x * (2.0 / math.sqrt(math.pi)) * (1.0 / math.sqrt(2.0)) * np.exp(-x * x / 2.0))
    forward = np.abs(x) * 0.5 * (1.0 + inner)
    if dy is None or dy.numel() != x.size:
        return forward, []
    return forward, [("input", np.abs(dy.reshape(-1).numpy()) * (0.5 * (1.0 + inner) + 0.5 * slope))]


def _mag_sdpa_weights(bound, q, k):
    """The attention weights of scaled_dot_product_attention (softmax of the scaled,
    masked logits) and the scale, as runtime/src/ops/nn.rs computes them."""
    if float(bound.get("dropout_p") or 0.0) != 0.0:
        raise ValueError("scaled_dot_product_attention: dropout_p > 0 is random")
    if bound.get("enable_gqa") and q.shape[max(q.dim() - 3, 0)] != k.shape[max(k.dim() - 3, 0)]:
        raise ValueError("scaled_dot_product_attention: grouped-query attention")
    scale = bound.get("scale")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    attn = (q @ k.transpose(-2, -1)) * scale
    if bound.get("is_causal"):
        allowed = torch.ones(attn.shape[-2], attn.shape[-1], dtype=torch.bool).tril()
        attn = attn.masked_fill(~allowed, -math.inf)
    mask = bound.get("attn_mask")
    if isinstance(mask, torch.Tensor):
        attn = attn.masked_fill(~(mask != 0), -math.inf) if mask.dtype == torch.bool else attn + mask.to(torch.float64)
    return torch.softmax(attn, -1), scale


def sdpa_parts(bound, dy):
    """scaled_dot_product_attention's parts (the mirror of sdpa_parts in
    runtime/src/ops/nn.rs): its output sums P*V and its gradients sum dS*K, dS^T*Q,
    P^T*dO with dS = P*(dO*V^T - rowsum(dO*O)), a difference that cancels exactly where a
    row attends to one key: the same sums over absolute values."""
    q, k, v = bound["query"], bound["key"], bound["value"]
    p, scale = _mag_sdpa_weights(bound, q, k)
    qa, ka, va = q.abs(), k.abs(), v.abs()
    pv = p @ va
    if dy is None or dy.numel() != pv.numel():
        return _mag_flat64(pv), []
    doa = dy.reshape(pv.shape).abs()
    d = (doa * pv).sum(-1, keepdim=True)  # rowsum(dO*O) over absolute values: O's own parts, P*|V|
    ds = p * ((doa @ va.transpose(-2, -1)) + d)
    return _mag_flat64(pv), [("query", _mag_flat64((ds @ ka) * scale)), ("key", _mag_flat64((ds.transpose(-2, -1) @ qa) * scale)),
                             ("value", _mag_flat64(p.transpose(-2, -1) @ doa))]


def _mag_output_gradient_parts(bound, dy, f, parts):
    """The parts of a gradient computed from the output y = f(x): |dy|*parts(y) for the
    input's gradient; none forward (the mirror of output_gradient_parts in activation.rs)."""
    x = bound["input"].reshape(-1).numpy()
    if dy is None or dy.numel() != x.size:
        return None, []
    return None, [("input", np.abs(dy.reshape(-1).numpy()) * parts(f(x)))]


def tanh_parts(bound, dy):
    """tanh's gradient dy*(1 - y^2) from the rounded output cancels where |y| -> 1: |dy|*(1 + y^2)."""
    return _mag_output_gradient_parts(bound, dy, np.tanh, lambda y: 1.0 + y * y)


def sigmoid_parts(bound, dy):
    """sigmoid's gradient dy*y*(1 - y) cancels where y -> 1: |dy|*|y|*(1 + |y|)."""
    return _mag_output_gradient_parts(bound, dy, lambda x: 1.0 / (1.0 + np.exp(-x)), lambda y: np.abs(y) * (1.0 + np.abs(y)))


PARTS = {"gelu": gelu_parts, "sdpa": sdpa_parts, "tanh": tanh_parts, "sigmoid": sigmoid_parts}


def _mag_gradient_params(c, names):
    """The parameter name of each gradient, in the bench's order (torch_run's leaves): a
    tensor inside a list has none."""
    marked = any_marked(list(c.args) + list(c.kwargs.values()))

    def leaves(v):
        if isinstance(v, (list, tuple)):
            return sum(leaves(item) for item in v)
        return int(isinstance(v, Master) and wants_grad(v, marked))
    out = []
    for slot, key, v in c.slots():
        name = KEYWORD_ALIASES.get(key, key) if key is not None else (names[slot] if slot < len(names) else None)
        if isinstance(v, Master):
            out.extend([name if name in names else None] * leaves(v))
        else:
            out.extend([None] * leaves(v))
    return out


def _mag_parts(c, name, composite, names):
    """A formula's parts added to Smooth's (or Composite's) magnitudes: to the first output,
    and to the gradients of the parameters the formula names."""
    o, g = _mag_composite(c) if composite else _mag_first_order(c, ["uniform"])[:2]
    first_dy = c.grad_outputs[0] if c.grad_outputs else None
    dy = torch.from_numpy(_mag_values(first_dy)) if _mag_is_float(first_dy) else None
    forward, backward = PARTS[name](_mag_bound(c, names), dy)
    _mag_add_parts(o, forward)
    for i, param in enumerate(_mag_gradient_params(c, names)[:len(g)]):
        parts = next((m for n, m in backward if n == param), None)
        if parts is not None:
            slot = [g[i]]
            _mag_add_parts(slot, parts)
            g[i] = slot[0]
    return o, g


def _mag_composite(c):
    o, g, base = _mag_first_order(c, ["uniform", "alternating", "thue-morse"])
    if g:
        # The gradients along the output gradients' sign patterns (a bias's sums dy).
        for pattern in ["alternating", "thue-morse"]:
            plus = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64"), grad=_mag_perturbed(MAGNITUDE_H, pattern))
            minus = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64"), grad=_mag_perturbed(-MAGNITUDE_H, pattern))
            _mag_add_difference(g, plus[1], minus[1], 0.5 / MAGNITUDE_H)
    if not any(_mag_float64_call(v) for _, _, v in c.slots()):
        # The op computed in float32, its result not rounded to the output dtype.
        probe = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float32"), dtype="torch.float32", raise_precision=False)
        _mag_add_difference(o, probe[0], base[0], 1.0 / MAGNITUDE_U32)
        _mag_add_difference(g, probe[1], base[1], 1.0 / MAGNITUDE_U32)
    return o, g


def magnitudes(entry, run, args, kwargs, grad_outputs):
    """The magnitudes of one call of rounding class entry (rounding_of), as
    (per forward output, per gradient) float64 arrays (None where there is none),
    aligned with the bench's outputs and gradients. run(args, kwargs, grad_outputs,
    raise_precision) runs the bench function (torch values back); ([], []) when the
    class cannot be evaluated for this call (its rows then have no bound)."""
    if entry is None:
        return [], []
    c = _MagCall(run, args, kwargs, grad_outputs)
    try:
        if entry[0] == "terms":
            return _mag_on_absolute_values(c, entry[1], entry[2], entry[3])
        if entry[0] == "sums":
            return _mag_on_absolute_values(c, None, None, entry[1])
        if entry[0] == "smooth":
            o, g, _ = _mag_first_order(c, ["uniform"])
            return o, g
        if entry[0] == "parts":
            return _mag_parts(c, entry[1], entry[2], entry[3])
        return _mag_composite(c)
    except Exception:  # an argument the variations cannot take: no bound, the rows say so
        return [], []


def ms_ops_gather(input_params, input_indices, axis, batch_dims=0):
    """torch equivalent of mindspore.ops.gather: whole slices along `axis`."""
    if batch_dims:
        raise NotImplementedError("ms_ops_gather: batch_dims is not supported")
    axis = axis % input_params.dim()
    picked = torch.index_select(input_params, axis, input_indices.reshape(-1).long())
    shape = tuple(input_params.shape[:axis]) + tuple(input_indices.shape) + tuple(input_params.shape[axis + 1:])
    return picked.reshape(shape)


def ms_tensor_transpose(tensor, *axes):
    """torch equivalent of mindspore.Tensor.transpose(*axes), a numpy-style permutation."""
    if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
        axes = tuple(axes[0])
    if not axes:
        axes = tuple(reversed(range(tensor.dim())))
    return tensor.permute(*axes)


def as_int64(tensor):
    """Integer indices as torch's index and loss kernels want them (MindSpore takes Int32)."""
    return tensor.long() if isinstance(tensor, torch.Tensor) and not tensor.is_floating_point() else tensor


def pair_of(value):
    """An int or a sequence as two per-dim values (a 4-value NCHW stride or dilation keeps its last two)."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    return value[-2:] if len(value) == 4 else (value * 2 if len(value) == 1 else value)


def ms_ops_conv2d(input, weight, bias=None, stride=1, pad_mode="valid", padding=0, dilation=1, groups=1):
    """torch equivalent of mindspore.ops.conv2d: pad_mode 'valid' (no padding),
    'same' (output size ceil(in / stride), the odd padding at the bottom and
    right, any stride) or 'pad' (padding: one int or (height, width))."""
    stride, dilation = pair_of(stride), pair_of(dilation)
    if pad_mode == "pad":
        (top, left) = pair_of(padding)
        bottom, right = top, left
    elif pad_mode == "same":
        pads = []
        for size, k, s, d in zip(input.shape[-2:], weight.shape[-2:], stride, dilation):
            total = max((-(-size // s) - 1) * s + d * (k - 1) + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
        (top, bottom), (left, right) = pads
    elif pad_mode == "valid":
        top = bottom = left = right = 0
    else:
        raise ValueError(f"ms_ops_conv2d: pad_mode must be 'valid', 'same' or 'pad', got {pad_mode!r}")
    padded = torch.nn.functional.pad(input, (left, right, top, bottom))
    return torch.nn.functional.conv2d(padded, weight, bias, stride, 0, dilation, groups)


def ms_ops_cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch equivalent of mindspore.ops.cross_entropy: class indices as int64."""
    return torch.nn.functional.cross_entropy(input, as_int64(target), weight, ignore_index=ignore_index,
                                             reduction=reduction, label_smoothing=label_smoothing)


def ms_ops_nll_loss(inputs, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch equivalent of mindspore.ops.nll_loss: class indices as int64, and
    MindSpore's label_smoothing, which torch's nll_loss lacks (mixes in
    -sum_c w[c] * inputs[c] / C as torch's cross_entropy does)."""
    target = as_int64(target)
    nll = torch.nn.functional.nll_loss(inputs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    classes = inputs.shape[1] if inputs.dim() > 1 else inputs.shape[0]
    class_dim = 1 if inputs.dim() > 1 else 0
    w = weight if weight is not None else torch.ones(classes, dtype=inputs.dtype)
    shape = [1] * inputs.dim()
    shape[class_dim] = classes
    kept = target != ignore_index
    smooth = -(inputs * w.reshape(shape)).sum(class_dim) * kept
    if reduction == "none":
        pass
    elif reduction == "sum":
        smooth = smooth.sum()
    else:
        picked = w[torch.where(kept, target, 0)] * kept
        smooth = smooth.sum() / picked.sum()
    return (1 - label_smoothing) * nll + label_smoothing * smooth / classes


def ms_ops_binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction="mean"):
    """torch equivalent of mindspore.ops.binary_cross_entropy_with_logits, whose
    third and fourth positional arguments are weight and pos_weight."""
    return torch.nn.functional.binary_cross_entropy_with_logits(input, target, weight, reduction=reduction,
                                                                pos_weight=pos_weight)


def ms_mint_binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """torch equivalent of mindspore.mint.nn.functional.binary_cross_entropy (reduction third after weight)."""
    return torch.nn.functional.binary_cross_entropy(input, target, weight, reduction=reduction)


def ms_ops_l1_loss(input, target, reduction="mean"):
    """torch equivalent of mindspore.ops.l1_loss (reduction third)."""
    return torch.nn.functional.l1_loss(input, target, reduction=reduction)


def ms_ops_mse_loss(input, target, reduction="mean"):
    """torch equivalent of mindspore.ops.mse_loss (reduction third)."""
    return torch.nn.functional.mse_loss(input, target, reduction=reduction)


def ms_ops_smooth_l1_loss(input, target, beta=1.0, reduction="none"):
    """torch equivalent of mindspore.ops.smooth_l1_loss: beta third, reduction 'none' by default."""
    return torch.nn.functional.smooth_l1_loss(input, target, reduction=reduction, beta=beta)


def ms_ops_kl_div(logits, labels, reduction="mean"):
    """torch equivalent of mindspore.ops.kl_div (reduction third)."""
    return torch.nn.functional.kl_div(logits, labels, reduction=reduction)


def ms_ops_one_hot(indices, depth, on_value=1, off_value=0, axis=-1):
    """torch equivalent of mindspore.ops.one_hot: on and off values (tensors
    or numbers, their dtype is the output's) and the axis of the new dim.
    MindSpore's gradient w.r.t. on_value and off_value is zero (its dump
    records none): they are constants here too."""
    hot = torch.nn.functional.one_hot(as_int64(indices), depth).bool()
    on = on_value.detach() if isinstance(on_value, torch.Tensor) else torch.tensor(on_value)
    off = off_value.detach() if isinstance(off_value, torch.Tensor) else torch.tensor(off_value, dtype=on.dtype)
    out = torch.where(hot, on, off.to(on.dtype))
    return out.movedim(-1, axis) if axis != -1 else out


def ms_ops_index_add(x, indices, y, axis, use_lock=True, check_index_bound=True):
    """torch equivalent of mindspore.ops.index_add(x, indices, y, axis): torch.index_add(x, axis, indices, y)."""
    return torch.index_add(x, axis, as_int64(indices), y)


def ms_ops_tensor_scatter_elements(input_x, indices, updates, axis=0, reduction="none"):
    """torch equivalent of mindspore.ops.tensor_scatter_elements: scatter
    ('none') or scatter-add ('add') of updates along axis."""
    if reduction == "none":
        return torch.scatter(input_x, axis, as_int64(indices), updates)
    if reduction == "add":
        return torch.scatter_add(input_x, axis, as_int64(indices), updates)
    raise ValueError(f"ms_ops_tensor_scatter_elements: reduction must be 'none' or 'add', got {reduction!r}")


def ms_ops_clip_by_global_norm(x, clip_norm=1.0, use_norm=None):
    """torch equivalent of mindspore.ops.clip_by_global_norm: every tensor
    scaled by clip_norm / max(global norm, clip_norm)."""
    tensors = list(x) if isinstance(x, (list, tuple)) else [x]
    norm = use_norm if use_norm is not None else torch.sqrt(sum((t * t).sum() for t in tensors))
    scale = clip_norm / torch.maximum(torch.as_tensor(norm, dtype=tensors[0].dtype), torch.as_tensor(clip_norm, dtype=tensors[0].dtype))
    clipped = tuple(t * scale for t in tensors)
    return clipped if isinstance(x, (list, tuple)) else clipped[0]


def ms_ops_assign(variable, value):
    """torch equivalent of mindspore.ops.assign: variable takes value's values and is returned."""
    return variable.copy_(value)


def ms_tensor_variance(fn, input, args, kwargs):
    """torch.var or torch.std as mindspore.Tensor.var/std computes them:
    (axis=None, ddof=0, keepdims=False), also spelled with dim, correction
    and keepdim; MindSpore 2.10 divides by N - ddof with ddof 0 unless told
    otherwise (torch's correction is 1 by default)."""
    bound = dict(zip(["axis", "ddof", "keepdims"], args))
    for ms_name, alias in (("axis", "dim"), ("ddof", "correction"), ("keepdims", "keepdim")):
        for name in (ms_name, alias):
            if kwargs.get(name) is not None:
                bound[ms_name] = kwargs[name]
    dim = bound.get("axis")
    dim = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    return fn(input, dim=dim, correction=bound.get("ddof", 0), keepdim=bool(bound.get("keepdims", False)))


def ms_tensor_var(input, *args, **kwargs):
    """torch equivalent of mindspore.Tensor.var (see ms_tensor_variance)."""
    return ms_tensor_variance(torch.var, input, args, kwargs)


def ms_tensor_std(input, *args, **kwargs):
    """torch equivalent of mindspore.Tensor.std (see ms_tensor_variance)."""
    return ms_tensor_variance(torch.std, input, args, kwargs)


# What the last tested run did (args, kwargs, outputs, grads), set by the
# MindSpore side after each tested run, for the helpers that follow it.
TESTED_RUN = {}


def ms_ops_dropout(input, p=0.5, training=True, seed=None):
    """torch equivalent of mindspore.ops.dropout with the tested call's mask:
    MindSpore and torch draw different random masks, so the bench keeps the
    elements the tested run kept (tested_kept) and scales them by 1 / (1 - p)."""
    if not training or p == 0:
        return input
    kept = tested_kept()
    if kept is None or tuple(kept.shape) != tuple(input.shape):
        raise ValueError("ms_ops_dropout: the tested run's mask is unknown")
    return input * torch.from_numpy(kept).to(input.dtype) / (1 - p)


def tested_kept():
    """The tested dropout's mask (a bool array, None before a tested run):
    kept where its output is non-zero, and where the input is zero, where its
    gradient is non-zero."""
    if "outputs" not in TESTED_RUN:
        return None
    args, kwargs, outputs, grads = (TESTED_RUN[k] for k in ("args", "kwargs", "outputs", "grads"))
    source = args[0] if args else kwargs.get("input")
    kept = outputs[0].asnumpy() != 0
    if grads and isinstance(source, Master):
        kept |= (source.array == 0) & (grads[0].asnumpy() != 0)
    return kept


def ms_dtype(name):
    return getattr(mindspore, dtype_info(name)[0])


def to_mindspore(value):
    """A MindSpore value from a Master tree, in the dumped dtype."""
    if isinstance(value, Master):
        canon, kind = dtype_info(value.spec.dtype)
        if canon == "bfloat16":
            return mindspore.Tensor(value.array.astype(np.float32)).astype(mindspore.bfloat16)
        return mindspore.Tensor(value.array.astype(np.dtype(canon)))
    if isinstance(value, DType):
        return ms_dtype(value.name)
    if isinstance(value, Size):
        return tuple(value.dims)
    if isinstance(value, (Device, MemoryFormat, Unsupported)):
        return None
    if isinstance(value, (list, tuple)):
        # JSON cannot tell tuples from lists; MindSpore APIs want tuples (shapes, axes).
        return tuple(to_mindspore(v) for v in value)
    if isinstance(value, dict):
        return {k: to_mindspore(v) for k, v in value.items()}
    return value


def ms_zeros_like(tensor):
    return mindspore.Tensor(np.zeros(tensor.shape, dtype=np.float32)).astype(tensor.dtype)


def grad_slots(value, path, marked, slots):
    """The paths of the tensors to differentiate in value, tensors inside
    lists (cat, stack) included, in the order torch_run makes its leaves."""
    if isinstance(value, Master):
        if wants_grad(value, marked):
            slots.append(path)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            grad_slots(item, path + (i,), marked, slots)


def at_path(value, path):
    for key in path:
        value = value[key]
    return value


def with_replaced(value, path, new):
    """value with the item at path replaced (lists and tuples are copied)."""
    if not path:
        return new
    items = list(value)
    items[path[0]] = with_replaced(items[path[0]], path[1:], new)
    return tuple(items) if isinstance(value, tuple) else items


def ms_run(fn, args, kwargs, grad_outputs, convert=to_mindspore):
    """Runs fn forward and, when grad_outputs is given, backward with
    mindspore.vjp w.r.t. the float inputs (tensors inside lists too); convert
    makes the call's values from the Master trees (MindSpore's tensors, or
    MSAdapter's, which MindSpore's autograd differentiates the same way)."""
    call_args = [convert(a) for a in args]
    call_kwargs = {k: convert(v) for k, v in kwargs.items()}
    if grad_outputs is None:
        out = fn(*call_args, **call_kwargs)
        if out is None and call_args:
            out = call_args[0]
        return flatten_outputs(out), None
    marked = any_marked(list(args) + list(kwargs.values()))
    slots = []
    for i, a in enumerate(args):
        grad_slots(a, (i,), marked, slots)
    for k, v in kwargs.items():
        grad_slots(v, (k,), marked, slots)
    if not slots:
        raise ValueError("backward: no floating-point input to differentiate")

    def with_inputs(*diff):
        full_args, full_kwargs = list(call_args), dict(call_kwargs)
        for path, tensor in zip(slots, diff):
            if isinstance(path[0], int):
                full_args[path[0]] = with_replaced(full_args[path[0]], path[1:], tensor)
            else:
                full_kwargs[path[0]] = with_replaced(full_kwargs[path[0]], path[1:], tensor)
        return fn(*full_args, **full_kwargs)

    primals = [at_path(call_args if isinstance(path[0], int) else call_kwargs, path) for path in slots]
    out, vjp_fn = mindspore.vjp(with_inputs, *primals)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    sens = []
    for i, o in enumerate(outs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if isinstance(g, Master):
            grad = convert(g).astype(o.dtype)
            if tuple(grad.shape) != tuple(o.shape):
                grad = grad.reshape(o.shape)
            sens.append(grad)
        else:
            sens.append(ms_zeros_like(o))
    grads = vjp_fn(tuple(sens) if isinstance(out, (tuple, list)) else sens[0])
    grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
    return flatten_outputs(out), grads


def select_device(requested):
    if requested:
        mindspore.set_device(requested)
    return mindspore.get_context("device_target")


def reference_is_tested(device):
    """Whether the api standard's reference run (the CPU in the dumped dtype)
    is the tested run itself."""
    return str(device).lower() == "cpu"


def reference_leaves(call, args, kwargs, grad_outputs, device, tested_leaves):
    """The api standard's reference: the tested function on the CPU in the
    dumped dtype. That is the tested run itself on the CPU target; elsewhere
    there is none (MindSpore runs on one target per process)."""
    return tested_leaves if reference_is_tested(device) else (None, None)


def ms_dtype_label(dtype):
    """MindSpore's name of a tensor's dtype: MindSpore's own (``Float32``), also
    for MSAdapter's dtypes, whose text is mindtorch's (``mindtorch.float32``)."""
    text = str(dtype)
    return MS_NAMES.get(text.rpartition(".")[2], text) if "." in text else text


def tested_leaf(value):
    if isinstance(value, mindspore.Tensor):
        label = ms_dtype_label(value.dtype)
        if value.dtype == mindspore.bfloat16:
            value = value.astype(mindspore.float32)
        return label, value.asnumpy().astype(np.float64)
    return scalar_leaf(value)


def bench_leaf(value):
    return torch_leaf(value, dtype_label=ms_dtype_label)


def seed_frameworks(seed):
    mindspore.set_seed(seed)
    torch.manual_seed(seed)


# msprobe's API sets by rule (runtime/src/ops/api_standard.rs, rendered into _tables).
_STD_ABSOLUTE = STANDARD_API_SETS["absolute"]
_STD_BINARY = STANDARD_API_SETS["binary"]
_STD_ULP = STANDARD_API_SETS["ulp"]
_STD_THOUSANDTH = STANDARD_API_SETS["thousandth"]
# Benchmark levels: (max relative, mean relative, rms) error bounds.
_STD_LEVEL1 = STANDARD_API_SETS["level1"]
_STD_LEVEL2 = STANDARD_API_SETS["level2"]
_STD_KNOWN = _STD_ABSOLUTE | _STD_BINARY | _STD_ULP | _STD_THOUSANDTH | _STD_LEVEL1 | _STD_LEVEL2
_STD_FLOATS = frozenset(["float16", "bfloat16", "float32", "float64"])
_STD_SEVERITY = {"pass": 0, "warning": 1, "error": 3}


def metrics(t, b):
    """Cosine similarity, max absolute error and max relative error in float64,
    over the elements that are finite on both sides."""
    mask = np.isfinite(t) & np.isfinite(b)
    t, b = t[mask], b[mask]
    if t.size == 0:
        return 1.0, 0.0, 0.0
    scale_t, scale_b = np.max(np.abs(t)), np.max(np.abs(b))
    if scale_t == 0 and scale_b == 0:
        cosine = 1.0
    elif scale_t == 0 or scale_b == 0:
        cosine = 0.0
    else:
        ts, bs = t / scale_t, b / scale_b
        cosine = float(np.dot(ts, bs) / (np.linalg.norm(ts) * np.linalg.norm(bs)))
        cosine = min(1.0, max(-1.0, cosine))
    diff = np.abs(t - b)
    max_abs = float(np.max(diff))
    max_rel = float(np.max(diff / (np.abs(b) + (b == 0) * 1e-8)))
    return cosine, max_abs, max_rel


def _std_g(x):
    return f"{float(x):.6g}"


def _std_fsum(values):
    """Exactly rounded sum; a sum that overflows is inf (math.fsum raises)."""
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


def _std_ratio(count, total):
    return count / total if total else 0.0


def _std_base_name(api):
    """The API's base name as the tables spell it: after the last '.', without
    __...__ and one trailing '_'; a dunder's r/i prefix is dropped when the
    name itself is in no table (__radd__ -> add, __rsub__ stays rsub)."""
    name = api.rsplit(".", 1)[-1]
    dunder = len(name) > 4 and name.startswith("__") and name.endswith("__")
    if dunder:
        name = name[2:-2]
    if name.endswith("_"):
        name = name[:-1]
    if name not in _STD_KNOWN and dunder and name[:1] in ("r", "i"):
        name = name[1:]
    return name


def _std_rule(standard, api, backward, exact_op, dtype, bounded):
    if exact_op or dtype not in _STD_FLOATS:
        return "binary equality"
    if standard == "msprobe":
        return "cosine and max abs"
    if standard not in ("api", "bound"):
        raise ValueError(f"unknown standard {standard!r}")
    name = _std_base_name(api)
    # The api standard's exact ops (abs, relu, gather, ...) stay exact forward.
    if standard == "bound" and bounded and (backward or name in _STD_ABSOLUTE or name not in _STD_BINARY):
        return "rounding bound"
    # The op-specific rules judge what the op computes; its gradients are other
    # computations (sums over broadcast dims, reductions that cancel to rounding
    # noise), judged against the reference run.
    if backward:
        return "benchmark"
    if name in _STD_ABSOLUTE:
        return "absolute threshold"
    if name in _STD_BINARY:
        return "binary equality"
    if name in _STD_ULP:
        return "ulp"
    if name in _STD_THOUSANDTH:
        return "thousandth"
    return "benchmark"


def _std_level_bounds(api):
    name = _std_base_name(api)
    levels = RULEBOOK["benchmark"]["levels"]
    if name in _STD_LEVEL1:
        return tuple(levels["level1"])
    if name in _STD_LEVEL2:
        return tuple(levels["level2"])
    return tuple(levels["default"])


def _std_class(dtype):
    return {"float16": "fp16", "bfloat16": "bf16"}.get(dtype, "fp32")


def _std_finite(x, b):
    """(absolute error, bench) over the pairs finite on both sides."""
    mask = np.isfinite(x) & np.isfinite(b)
    x, b = x[mask], b[mask]
    return np.abs(x - b), b


def _std_msprobe(t, b, cosine_threshold, max_abs_err_threshold):
    cosine, max_abs, _ = metrics(t, b)
    problems = []
    t_nan, b_nan = np.isnan(t), np.isnan(b)
    t_inf, b_inf = np.isinf(t), np.isinf(b)
    if (t_nan != b_nan).any() or (t_inf != b_inf).any() or (t[t_inf] != b[b_inf]).any():
        problems.append(f"NaN/Inf differ: tested has {int(t_nan.sum())} NaN and {int(t_inf.sum())} Inf, "
                        f"bench has {int(b_nan.sum())} NaN and {int(b_inf.sum())} Inf")
    if not cosine > cosine_threshold:
        problems.append(f"cosine similarity {cosine:.6g} is not above the threshold {float(cosine_threshold)!r}")
    if not max_abs < max_abs_err_threshold:
        problems.append(f"max absolute error {max_abs:.6g} is not below the threshold {float(max_abs_err_threshold)!r}")
    if problems:
        return "error", "; ".join(problems)
    if b_nan.any() or b_inf.any():
        return "pass", "NaN/Inf at the same places on both sides; metrics over the finite elements"
    return "pass", ""


def _std_binary(t, b):
    differ = int(np.count_nonzero((t != b) & ~(np.isnan(t) & np.isnan(b))))
    d, _ = _std_finite(t, b)
    max_abs = float(np.max(d)) if d.size else 0.0
    problems = []
    if differ:
        problems.append(f"binary equality: {differ} of {t.size} elements differ (max absolute error {_std_g(max_abs)})")
    return problems, f"error_rate={_std_g(_std_ratio(differ, t.size))}"


def _std_absolute(t, b, cls, eps):
    rule = RULEBOOK["absolute"][cls]
    rtol, small, atol = rule["rtol"], rule["small"], rule["atol"]
    d, b = _std_finite(t, b)
    is_small = np.abs(b) <= small
    n_small = int(np.count_nonzero(is_small))
    n_abs = int(np.count_nonzero(is_small & (d > atol)))
    rel = d[~is_small] / (np.abs(b[~is_small]) + eps)
    n_normal, n_rel = rel.size, int(np.count_nonzero(rel > rtol))
    problems = []
    if n_rel:
        problems.append(f"absolute threshold: relative error above {_std_g(rtol)} at {n_rel} of {n_normal} normal values "
                        f"(max {_std_g(np.max(rel))})")
    if n_abs:
        problems.append(f"absolute threshold: absolute error above {_std_g(atol)} at {n_abs} of {n_small} small values "
                        f"(|bench| <= {_std_g(small)})")
    return problems, f"rel_err_ratio={_std_g(_std_ratio(n_rel, n_normal))}; abs_err_ratio={_std_g(_std_ratio(n_abs, n_small))}"


def _std_ulp(t, b, reference, cls):
    mant, min_eb = FLOAT_FORMATS[{"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}[cls]]
    rule = RULEBOOK["ulp"][cls]
    over = rule["over"]

    def stats(x):
        d, bb = _std_finite(x, b)
        _, exponent = np.frexp(np.abs(bb))
        eb = np.where(bb == 0, max(0, min_eb), np.maximum(exponent.astype(np.int64) - 1, min_eb))
        ulps = np.ldexp(d, (mant - eb).astype(np.int32))
        n = ulps.size
        if not n:
            return 0.0, 0.0, 0.0
        return float(np.max(ulps)), _std_fsum(ulps.tolist()) / n, int(np.count_nonzero(ulps > over)) / n

    max_ulp, mean, share = stats(t)
    if rule["mean_below"] is not None:
        passed = mean < rule["mean_below"] or share < rule["share_below"]
        bound = f"mean < {_std_g(rule['mean_below'])} or share < {_std_g(rule['share_below'])}"
    else:
        passed, bound = share < rule["share_below"], f"share < {_std_g(rule['share_below'])}"
    # msprobe also passes a share no larger than the reference device's (its GPU;
    # here the CPU run in the tested dtype).
    reference_share = stats(reference)[2] if reference is not None and reference.size == b.size else None
    problems = []
    if not passed and not (reference_share is not None and share <= reference_share):
        versus = f", or at most the reference's {_std_g(reference_share)}" if reference_share is not None else ""
        problems.append(f"ulp: mean {_std_g(mean)} and max {_std_g(max_ulp)} ULP, share {_std_g(share)} above {_std_g(over)} ULP "
                        f"(pass: {bound}{versus})")
    return problems, f"max_ulp={_std_g(max_ulp)}; mean_ulp={_std_g(mean)}; ulp_error_proportion={_std_g(share)}"


def _std_thousandth(t, b, eps):
    """With no value finite on both sides there is nothing to measure: a pass."""
    d, b = _std_finite(t, b)
    n = d.size
    rule = RULEBOOK["thousandth"]
    share = _std_ratio(int(np.count_nonzero(d / (np.abs(b) + eps) < rule["rtol"])), n)
    problems = []
    if n and not share > rule["share_above"]:
        problems.append(f"thousandth: share {_std_g(share)} of values within relative error {_std_g(rule['rtol'])} "
                        f"(pass: above {_std_g(rule['share_above'])})")
    return problems, f"thousandth_ratio={_std_g(share)}"


def _std_benchmark_metrics(x, b, small, atol, eps):
    """Small value error proportion, max and mean relative error, rmse of x against b."""
    d, b = _std_finite(x, b)
    is_small = np.abs(b) <= small
    svep = _std_ratio(int(np.count_nonzero(is_small & (d > atol))), int(np.count_nonzero(is_small)))
    d, b = d[~is_small], b[~is_small]
    n = d.size
    if not n:
        return [svep, 0.0, 0.0, 0.0]
    rel = d / (np.abs(b) + eps)
    return [svep, float(np.max(rel)), _std_fsum(rel.tolist()) / n, math.sqrt(_std_fsum((d * d).tolist()) / n)]


def _std_benchmark(t, b, reference, cls, eps, level):
    labels = ["small value error proportion", "max relative error", "mean relative error", "root mean squared error"]
    rule = RULEBOOK["benchmark"]
    small, atol, min_err = (rule[cls][k] for k in ("small", "atol", "floor"))
    if reference is not None and reference.size != b.size:
        reference = None
    tested = _std_benchmark_metrics(t, b, small, atol, eps)
    refs = [0.0] * 4 if reference is None else _std_benchmark_metrics(reference, b, small, atol, eps)
    bounds = [rule["small_value_bound"]] + list(level)
    status, problems, ratios = "pass", [], []
    for label, x, r, bound in zip(labels, tested, refs, bounds):
        ratio = x / max(r, min_err)
        ratios.append(ratio)
        one = "pass" if ratio <= 1 else "warning" if ratio <= bound else "error"
        if one != "pass":
            problems.append(f"benchmark: {label} {_std_g(x)} is {_std_g(ratio)} times the reference's {_std_g(r)} "
                            f"(pass <= 1, error > {_std_g(bound)})")
        status = max(status, one, key=_STD_SEVERITY.get)
    notes = [] if reference is not None else [f"no reference run in the tested dtype: ratios against the dtype's floor {_std_g(min_err)}"]
    text = "small_value_err_ratio={}; max_rel_err_ratio={}; mean_rel_err_ratio={}; rmse_ratio={}".format(*map(_std_g, ratios))
    return status, problems, notes, text


def _std_ldexp1(k):
    """2**k exactly for any k, 2**-1074 (the smallest subnormal) below it."""
    return float(np.ldexp(1.0, max(k, -1074)))


class _StdElementBound:
    """The rounding error bound of each element of one output: k*(u*m + eta) + ulp_d(m)/2,
    u the unit roundoff of compute, the precision the device computes in (the op class's,
    for the dtype), eta its underflow unit (half its smallest subnormal; 0 for float64,
    below every double), ulp_d the spacing of the output dtype at the magnitude m."""

    def __init__(self, magnitude, k, compute, dtype):
        mant, emin = FLOAT_FORMATS.get(dtype, FLOAT_FORMATS["float32"])
        compute_mant, compute_emin = FLOAT_FORMATS.get(compute, FLOAT_FORMATS["float32"])
        self.magnitude, self.k, self.u = magnitude, float(k), _std_ldexp1(-(compute_mant + 1))
        eta = 0.0 if compute_emin - compute_mant - 1 < -1074 else _std_ldexp1(compute_emin - compute_mant - 1)
        # A NaN magnitude (an input perturbed into NaN) bounds nothing.
        m = np.where(np.isnan(magnitude), 0.0, np.abs(magnitude))
        finite = np.isfinite(m)
        _, exponent = np.frexp(np.where(finite, m, 0.0))
        e = np.where((m == 0) | ~finite, emin, np.maximum(exponent.astype(np.int64) - 1, emin))
        half_ulp = np.ldexp(1.0, np.maximum(e - mant - 1, -1074).astype(np.int32))
        self.bound = self.k * (self.u * m + eta) + np.where(finite, half_ulp, math.inf)

    def ratios(self, t, b):
        """|t - b| / bound per element (0 where either side is not finite)."""
        both = np.isfinite(t) & np.isfinite(b)
        return np.where(both, np.abs(np.where(both, t - b, 0.0)) / self.bound, 0.0)


def _std_rounding_bound(t, b, bound):
    r = bound.ratios(t, b)
    beyond = int(np.count_nonzero(r > 1.0))
    positive = r > 0.0
    worst, at = 0.0, 0
    if positive.any():
        worst = float(np.max(r[positive]))
        at = int(np.flatnonzero(r == worst)[0])
    problems = []
    if beyond:
        problems.append(f"rounding bound: {beyond} of {t.size} elements beyond k*(u*magnitude + eta) + ulp/2 "
                        f"(k={_std_g(bound.k)}, u={_std_g(bound.u)}); worst {_std_g(worst)} times the bound at element "
                        f"{at}: tested {float(t[at])!r}, bench {float(b[at])!r}, magnitude {_std_g(bound.magnitude[at])}")
    text = (f"bound_ratio={_std_g(worst)}; beyond_bound={_std_g(_std_ratio(beyond, t.size))}; "
            f"k={_std_g(bound.k)}; u={_std_g(bound.u)}")
    return ("error" if problems else "pass"), problems, [], text


def _std_rescued(t, b, bound, rule):
    """An api rule that is not a pass, rerun with the elements within the rounding
    bound counted as exact; the better verdict, with a note when the bound changed it."""
    raw = rule(t)
    if raw[0] == "pass":
        return raw
    r = bound.ratios(t, b)
    within = (t != b) & (r <= 1.0) & np.isfinite(t) & np.isfinite(b)
    n = int(np.count_nonzero(within))
    if not n:
        return raw
    worst = float(np.max(r[within]))
    status, problems, notes, text = rule(np.where(within, b, t))
    if _STD_SEVERITY[status] >= _STD_SEVERITY[raw[0]]:
        return raw
    notes = notes + [f"{n} elements within the rounding bound counted as exact (worst {_std_g(worst)} of the bound; "
                     f"the api rule alone: {raw[0]})"]
    return status, problems, notes, text


def _std_api_rule(rule, t, b, reference, cls, eps, api):
    """One api rule's (status, problems, notes, metrics_text) of t against b."""
    if rule == "benchmark":
        return _std_benchmark(t, b, reference, cls, eps, _std_level_bounds(api))
    if rule == "binary equality":
        problems, text = _std_binary(t, b)
    elif rule == "absolute threshold":
        problems, text = _std_absolute(t, b, cls, eps)
    elif rule == "ulp":
        problems, text = _std_ulp(t, b, reference, cls)
    else:
        problems, text = _std_thousandth(t, b, eps)
    return ("error" if problems else "pass"), problems, [], text


# The note of a `bound` row judged by the api standard's rule instead.
NO_BOUND = "no rounding bound for this output: judged by the api standard"


def judge(standard, api, backward, exact_op, dtype, tested, bench, reference, cosine_threshold, max_abs_err_threshold, rounding=None):
    """Judges one output by the precision standard ("msprobe", "api" or "bound"):
    returns (status, message, rule, metrics_text). tested, bench and reference (or
    None) are 1-D float64 arrays; dtype is the tested side's canonical name;
    rounding is (magnitude, k, compute) of the rounding bound (magnitude a 1-D float64 array
    like bench; k and the compute dtype the class's factors for the dtype), or None when the
    output has none. A magnitude that is not finite where the bench is bounds nothing."""
    bounded = (rounding is not None and rounding[0].size == bench.size
               and bool(np.all(np.isfinite(rounding[0]) | ~np.isfinite(bench))))
    rule = _std_rule(standard, api, backward, exact_op, dtype, bounded)
    t, b = tested, bench
    if t.size != b.size:
        return "error", f"cannot compare: tested has {t.size} elements, bench has {b.size}", rule, ""
    if t.size == 0:
        return "pass", "empty tensor", rule, ""
    with np.errstate(all="ignore"):
        if rule == "cosine and max abs":
            status, message = _std_msprobe(t, b, cosine_threshold, max_abs_err_threshold)
            return status, message, rule, ""
        cls = _std_class(dtype)
        eps = 2.0 ** -52 if dtype == "float64" else 2.0 ** -23
        bound = _StdElementBound(rounding[0], rounding[1], rounding[2], dtype) if bounded else None

        def api_rule(x):
            return _std_api_rule(rule, x, b, reference, cls, eps, api)

        if bound is not None and rule == "rounding bound":
            status, problems, notes, text = _std_rounding_bound(t, b, bound)
        elif bound is not None and rule not in ("binary equality", "cosine and max abs"):
            status, problems, notes, text = _std_rescued(t, b, bound, api_rule)
        else:
            status, problems, notes, text = api_rule(t)
        problems, notes = list(problems), list(notes)
        if standard == "bound" and rule not in ("rounding bound", "binary equality"):
            notes.append(NO_BOUND)
        t_nan, b_nan = np.isnan(t), np.isnan(b)
        t_inf, b_inf = np.isinf(t), np.isinf(b)
        if (t_nan != b_nan).any() or (t_inf != b_inf).any() or (t[t_inf] != b[b_inf]).any():
            status = "error"
            problems.insert(0, f"NaN/Inf differ: tested has {int(t_nan.sum())} NaN and {int(t_inf.sum())} Inf, "
                               f"bench has {int(b_nan.sum())} NaN and {int(b_inf.sum())} Inf")
    return status, "; ".join(problems + notes), rule, text


DETAILS_HEADER = ["API Name", "Bench Dtype", "Tested Dtype", "Shape", "Cosine", "MaxAbsErr", "MaxRelativeErr", "Status", "Message"]
# Appended under --standard api and bound: the rule applied and its own metrics.
STANDARD_COLUMNS = ["Standard", "Standard Metrics"]
RESULT_HEADER = ["API Name", "Forward Test Success", "Backward Test Success", "Message"]
PASS, WARNING, SKIP, ERROR = "pass", "warning", "skip", "error"
SEVERITY = {PASS: 0, WARNING: 1, SKIP: 2, ERROR: 3}


def scalar_leaf(value):
    """Python numbers, and sequences of them, compare like tensors of their
    numpy dtype (bool, int64, float64); anything else is not comparable."""
    numbers = (bool, int, float)
    if isinstance(value, numbers) or (isinstance(value, (list, tuple)) and all(isinstance(v, numbers) for v in value)):
        array = np.array(value)
        if array.dtype.kind in "biuf":
            return type(value).__name__, array
    return type(value).__name__, None


def leaf_dtype(label, values):
    """The canonical name of a leaf's dtype: a tensor's from its label, a
    Python value's from its numpy array."""
    return dtype_info(label)[0] if label in DTYPES else values.dtype.name


def compare_leaf(call, tested_leaf_, bench_leaf_, reference, backward, opts, rounding=None):
    """One details row after the name: dtypes, shape, metrics, status, message,
    and the standard's rule and metrics (None where nothing was compared).
    call is the script: UNDEFINED_OUTPUTS, EXACT_OP, API_OP and the thresholds;
    rounding is the bench value's rounding magnitude and the factors of its bound,
    (magnitude array, factors(dtype) -> (k, compute dtype) or None), or None."""
    (t_dtype, t), (b_dtype, b) = tested_leaf_, bench_leaf_
    shape = str(tuple(b.shape)) if b is not None else "()"

    def uncompared(status, message):
        return [b_dtype, t_dtype, shape, None, None, None, status, message, None, None]

    # Rows that cannot be judged are this tool's coverage: skips.
    if t is None or b is None:
        return uncompared(SKIP, f"cannot judge: output of type {b_dtype if b is None else t_dtype} is not comparable")
    dtype = leaf_dtype(t_dtype, t)
    t, b = t.astype(np.float64), b.astype(np.float64)
    if opts.perturb and t.size:
        t = t + opts.perturb * (1.0 + np.abs(t))
    if t.shape != b.shape:
        return uncompared(SKIP, f"cannot judge: shape mismatch: tested {tuple(t.shape)}, bench {tuple(b.shape)}")
    if call.UNDEFINED_OUTPUTS and not backward:
        return [b_dtype, t_dtype, shape, None, None, None, PASS, call.UNDEFINED_OUTPUTS, "shape", None]
    if reference is not None:
        reference = reference.astype(np.float64).reshape(-1) if reference.shape == b.shape else None
    t, b = t.reshape(-1), b.reshape(-1)
    cosine, max_abs, max_rel = metrics(t, b) if t.size else (None, None, None)
    # Data movement is exact forward; its gradients are sums and casts.
    exact = call.EXACT_OP and not backward
    factors = None if rounding is None else rounding[1](dtype)
    if factors is not None:
        rounding = (np.asarray(rounding[0], dtype=np.float64).reshape(-1),) + factors
    else:
        rounding = None
    status, message, rule, metrics_text = judge(opts.standard, call.API_OP, backward, exact, dtype, t, b, reference,
                                                call.COSINE_THRESHOLD, call.MAX_ABS_ERR_THRESHOLD, rounding=rounding)
    if opts.reference_is_tested and rule in ("benchmark", "ulp"):
        # --perturb moves the tested values only, so the reference (the tested
        # run as it came out) then differs from them and the rule can fail.
        perturbed = "the reference run is the tested run before --perturb, so this rule judges the perturbation"
        note = perturbed if opts.perturb else SELF_REFERENCE
        message = "; ".join(part for part in (message, note) if part)
    return [b_dtype, t_dtype, shape, cosine, max_abs, max_rel, status, message, rule, metrics_text]


def compare_outputs(call, direction, tested_leaves, bench_leaves, reference_leaves, opts, rounding=None):
    """One row per output; reference_leaves (the api standard's CPU run in
    the dumped dtype) may be None, and so may rounding: (per output magnitude
    array or None, factors(dtype) -> (k, u) or None), the rounding bound's parts of the bench values."""
    rows = []
    for i in range(max(len(tested_leaves), len(bench_leaves))):
        name = f"{call.API_NAME}.{direction}.output.{i}"
        if i >= len(tested_leaves) or i >= len(bench_leaves):
            message = f"cannot judge: output count differs: tested {len(tested_leaves)}, bench {len(bench_leaves)}"
            rows.append([name, None, None, None, None, None, None, SKIP, message, None, None])
            continue
        if tested_leaves[i][0] == "NoneType" and bench_leaves[i][0] == "NoneType":
            continue
        reference = reference_leaves[i][1] if reference_leaves is not None and i < len(reference_leaves) else None
        magnitude = rounding[0][i] if rounding is not None and i < len(rounding[0]) else None
        bound = None if magnitude is None else (magnitude, rounding[1])
        rows.append([name] + compare_leaf(call, tested_leaves[i], bench_leaves[i], reference, direction == "backward", opts,
                                          bound))
    return rows


def skip_row(api_name, direction, side, exc):
    """A side that raised: the call cannot be replayed here (no kernel on this
    device, an argument the framework rejects, inputs this script cannot make),
    which says nothing of its accuracy. side None: the inputs."""
    what = f"the {side} call raised" if side else "its inputs cannot be made:"
    message = f"cannot replay here: {what} {type(exc).__name__}: {first_line(exc)}"
    return [f"{api_name}.{direction}", None, None, None, None, None, None, SKIP, message, None, None]


def worst(statuses):
    return max(statuses, key=SEVERITY.__getitem__, default=None)


def result_row(api_name, forward_rows, backward_rows):
    messages = [f"{r[0]}: {r[8]}" for r in forward_rows + backward_rows if r[7] != PASS]
    return [api_name, worst(r[7] for r in forward_rows), worst(r[7] for r in backward_rows), "; ".join(messages)]


def exit_code(statuses, allow_skip):
    """Any error row: EXIT_INACCURATE; else any skip: EXIT_SKIPPED unless
    allowed; else EXIT_OK (warnings included)."""
    status = worst(statuses)
    if status == ERROR:
        return EXIT_INACCURATE
    if status == SKIP and not allow_skip:
        return EXIT_SKIPPED
    return EXIT_OK


# A number as the reports print them (-0.5, 1e-08, -inf, nan): it keeps its sign.
NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE)


def cell(value):
    """A CSV cell: empty for None, repr() for floats, str() otherwise; text a
    spreadsheet would run as a formula (starting with = + - @ tab CR, not a
    number) gets a leading ' so it shows as text."""
    if value is None:
        return ""
    text = repr(value) if isinstance(value, float) else str(value)
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not NUMBER.fullmatch(text):
        return "'" + text
    return text


def write_csv(path, header, rows):
    """Writes the whole file beside its final name, then renames it into place:
    a crash never leaves a half-written CSV."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".csv")
    try:
        with os.fdopen(fd, "w", encoding="utf-8-sig", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows([[cell(v) for v in row] for row in rows])
        os.chmod(tmp, 0o640)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_report(output_dir, details_header, details, results):
    os.makedirs(output_dir, mode=0o750, exist_ok=True)
    now = datetime.datetime.now()
    while True:  # a new pair of files per run, even within the same second
        stamp = now.strftime("%Y%m%d%H%M%S")
        result_path = os.path.join(output_dir, f"accuracy_checking_result_{stamp}.csv")
        details_path = os.path.join(output_dir, f"accuracy_checking_details_{stamp}.csv")
        if not os.path.exists(result_path) and not os.path.exists(details_path):
            break
        now += datetime.timedelta(seconds=1)
    write_csv(details_path, details_header, [row[:len(details_header)] for row in details])
    write_csv(result_path, RESULT_HEADER, results)
    return result_path, details_path


def run_side(reseed, runner, leaf, *call):
    """Runs one side and converts its results for comparison. Frameworks that
    execute lazily (MindSpore) raise only when results are read, so both steps
    sit under the same guard; a failure becomes a skip row. reseed() seeds
    the frameworks first."""
    reseed()  # same seed for both sides: random APIs (dropout) can then agree on one device
    try:
        outputs, grads = runner(*call)
        return ([leaf(x) for x in outputs], None if grads is None else [leaf(x) for x in grads]), None
    except Exception as exc:  # recorded as a skip row; the traceback helps whoever edits the script
        traceback.print_exc()
        return (None, None), exc


# The standards whose verdicts use the rounding magnitudes and the reference run
# (the bound standard falls back to the api standard's rules where there is no bound).
ROUNDING_STANDARDS = ("api", "bound")


def main(call, side, argv=None):
    """Replays the script's call (call: the script's module, the head's names)
    on the framework side side (select_device, run_tested, run_bench, ...)
    ITER_TIMES times, writes the CSVs and returns the exit code."""
    parser = argparse.ArgumentParser(description=f"Replay {call.API_NAME} ({call.PROPAGATION}) and compare tested against bench.")
    parser.add_argument("--device", help="device of the tested run (default: the best available)")
    parser.add_argument("--output-dir", default="./op_result_output", help="where the CSVs go (default: %(default)s)")
    parser.add_argument("--data-dir", default=call.DATA_DIR, help="folder of the dumped tensor files (real_data)")
    parser.add_argument("--perturb", type=float, default=0.0, metavar="EPS",
                        help="add EPS*(1+|x|) to every tested output before comparing: checks that errors are caught")
    parser.add_argument("--standard", choices=["msprobe", "api", "bound"], default=call.STANDARD,
                        help="precision standard: msprobe (cosine and max abs), api (per API and dtype) or bound "
                             "(every element within its rounding error bound); api and bound add the Standard and "
                             "Standard Metrics columns (default: %(default)s)")
    parser.add_argument("--allow-skip", action="store_true",
                        help=f"exit {EXIT_OK} instead of {EXIT_SKIPPED} when calls that cannot be replayed here are the only problem")
    opts = parser.parse_args(argv)
    missing = side.unavailable(call)
    if missing:  # nothing can run the tested call here: one line, a skip
        print(f"{call.API_NAME} {call.PROPAGATION}: skip: {missing}")
        return EXIT_OK if opts.allow_skip else EXIT_SKIPPED
    device = side.select_device(opts.device)
    opts.reference_is_tested = side.reference_is_tested(device)
    # One casing for both frameworks (MindSpore says "CPU" / "Ascend", torch "cpu" / "npu").
    device_name = str(device).lower()
    print(f"{call.API_NAME} {call.PROPAGATION}: tested on {device_name}, bench on cpu, {call.DATA_MODE}, {call.ITER_TIMES} iteration(s), standard {opts.standard}")
    compared = (f"tested: {side.TESTED_FRAMEWORK} on {device_name} in the dumped dtype; "
                f"bench: {side.BENCH_FRAMEWORK} on cpu at raised precision")

    def reseed():
        side.seed_frameworks(call.RANDOM_SEED)

    details, results = [], []
    for iteration in range(call.ITER_TIMES):
        args, kwargs, grad_outputs = call.inputs()
        realize = Realizer(call, iteration, opts.data_dir)
        direction = "backward" if call.PROPAGATION == "backward" else "forward"
        try:
            args, kwargs = realize(args), realize(kwargs)
            grad_outputs = realize(grad_outputs) if call.PROPAGATION == "backward" else None
            if call.CLASS_TARGETS and call.DATA_MODE == "random_data":
                fold_class_targets(args, kwargs)
            in_exc = None
        except InputError:
            raise
        except Exception as exc:  # e.g. random data for a complex dtype: this tool's coverage
            in_exc = exc
        if in_exc is None:
            (t_out, t_grads), t_exc = run_side(reseed, side.run_tested, side.tested_leaf, call, args, kwargs, grad_outputs, device)
            (b_out, b_grads), b_exc = run_side(reseed, side.run_bench, side.bench_leaf, call, args, kwargs, grad_outputs)
        forward_rows, backward_rows = [], []
        if in_exc or t_exc or b_exc:
            failed = [(None, in_exc)] if in_exc else [("tested", t_exc), ("bench", b_exc)]
            rows = [skip_row(call.API_NAME, direction, which, exc) for which, exc in failed if exc]
            forward_rows, backward_rows = (rows, []) if direction == "forward" else ([], rows)
        else:
            (r_out, r_grads), rounding = (None, None), (None, None)
            if opts.standard in ROUNDING_STANDARDS:
                r_out, r_grads = side.reference_leaves(call, args, kwargs, grad_outputs, device, (t_out, t_grads))
                rounding = bench_magnitudes(call, side, reseed, args, kwargs, grad_outputs)
            forward_rows = compare_outputs(call, "forward", t_out, b_out, r_out, opts, rounding[0])
            if call.PROPAGATION == "backward":
                backward_rows = compare_outputs(call, "backward", t_grads, b_grads, r_grads, opts, rounding[1])
        for row in forward_rows + backward_rows:  # every row that ran says what was compared
            if not row[8].startswith("cannot replay here:"):
                row[8] = "; ".join(part for part in (row[8], compared) if part)
        details += forward_rows + backward_rows
        results.append(result_row(call.API_NAME, forward_rows, backward_rows))
        for row in forward_rows + backward_rows:
            print(f"  {row[0]}: {row[7]}  cosine={cell(row[4]) or '-'}  max_abs_err={cell(row[5]) or '-'}  ({row[8]})")
    details_header = DETAILS_HEADER + (STANDARD_COLUMNS if opts.standard in ROUNDING_STANDARDS else [])
    result_path, details_path = write_report(opts.output_dir, details_header, details, results)
    print(f"wrote {result_path}")
    print(f"wrote {details_path}")
    return exit_code([r[7] for r in details], opts.allow_skip)


def bench_magnitudes(call, side, reseed, args, kwargs, grad_outputs):
    """The rounding bound's parts of the call's forward outputs and gradients:
    (magnitudes, factors(dtype) -> (k, u)) each, the magnitudes from the bench function
    rerun on the call's inputs (magnitude.py); None for an API the op table does not hold."""
    entry = rounding_of(call.API_OP, side.ROUNDING_PREFIXES)
    if entry is None:
        return None, None

    def run(args, kwargs, grad_outputs, raise_precision):
        reseed()
        return side.run_bench(call, args, kwargs, grad_outputs, raise_precision)

    outputs, grads = magnitudes(entry, run, args, kwargs, grad_outputs)
    return ((outputs, lambda dtype: rounding_factors(entry, dtype, False)),
            (grads, lambda dtype: rounding_factors(entry, dtype, True)))


def run_script(call, side, argv=None):
    """main() with its failures as exit codes: an unusable tensor file is one
    line and EXIT_INPUT (no CSV is written), anything else a bug in the
    script, EXIT_INTERNAL with the traceback."""
    try:
        return main(call, side, argv)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except Exception:
        traceback.print_exc()
        return EXIT_INTERNAL


# What each row's Message says was compared.
TESTED_FRAMEWORK, BENCH_FRAMEWORK = "mindspore", "torch"
# The op-table prefixes an API's rounding class is looked up with (magnitude.rounding_of):
# MindSpore's own meanings ("MS.Functional.dense") first, as the op table's lookup does.
ROUNDING_PREFIXES = ("MS.", "")


def unavailable(call):
    """Why the tested call cannot run here, or None: MindSpore runs every call it dumps."""
    return None


def run_tested(call, args, kwargs, grad_outputs, device):
    outputs, grads = ms_run(call.tested, args, kwargs, grad_outputs)
    # What the tested run did, for the bench helpers that follow it (dropout keeps the same elements).
    TESTED_RUN.clear()
    TESTED_RUN.update(args=args, kwargs=kwargs, outputs=outputs, grads=grads)
    return outputs, grads


def run_bench(call, args, kwargs, grad_outputs, raise_precision=True):
    if not call.BENCH_TAKES_MINDSPORE_NAMES:
        kwargs = {KEYWORD_ALIASES.get(k, k): v for k, v in kwargs.items()}
    return torch_run(call.bench, args, kwargs, grad_outputs, "cpu", raise_precision=raise_precision, exact_op=call.EXACT_OP)


def run(call, argv=None):
    """Runs the script call (its module: the head's inputs(), tested, bench
    and settings) on the MindSpore side (MindSpore tested, torch bench); returns the exit code."""
    return run_script(call, sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(run(sys.modules[__name__]))
