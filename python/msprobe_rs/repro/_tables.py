"""The data tables of the repro machinery, rendered from msprobe-rs's Rust tables
by src/render/machinery.rs. Generated: do not edit (`UPDATE_GOLDEN=1 cargo test
--test golden` rewrites it; tests/golden.rs fails when it differs).
"""

# --- msprobe-rs: the scripts inline this file from here ---


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
# msprobe's API sets of the api standard by rule (runtime/src/ops/api_standard.rs).
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
# Message parts the native replay writes too (runtime/src/replay/judge.rs).
UNDEFINED_VALUES = "values undefined (uninitialized memory): only the shape is compared"
SELF_REFERENCE = "the reference run is the tested run itself, so this rule cannot fail here"
