//! The scripts' machinery: the Python package `python/msprobe_rs/repro/`,
//! compiled into the binary, plus its data tables rendered from the Rust
//! tables (`_tables.py`).
//!
//! A standalone script is its head (rendered per call from
//! `templates/python/<framework>.py.tera`) followed by [`machinery`]: the
//! tables, then each file of the framework's list ([`files`]) from the line
//! after its [`MARKER`] line to its end, verbatim (what is above the marker,
//! the module docstring and the package's imports, is dropped: the head
//! imports what the machinery uses). With `--shared-module` the same text
//! goes once into [`shared_module_file`] beside the scripts, which import it.
//! The machinery reads the head's names through the `call` argument (the
//! script's module), so it runs the same inlined and imported.

use std::fmt::Write;

use runtime::dtype::{Category, TDType};
use runtime::ops::{self, api_standard, Rounding, Slicing};
use runtime::{bind, exit, pyfmt};

use super::api_map;
use super::literal::{py_bool, py_float, py_str};
use crate::model::{Framework, Prefix};

/// The line after which a package file is inlined into the scripts (the
/// package's `msprobe_rs.repro.MARKER`).
pub const MARKER: &str = "# --- msprobe-rs: the scripts inline this file from here ---";

macro_rules! repro {
    ($($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/python/msprobe_rs/repro/", $file)))),*]
    };
}

/// The PyTorch scripts' files, in inlining order (`_tables.py` comes first, rendered).
const PYTORCH: &[(&str, &str)] =
    repro!["data_generate.py", "torch_exec.py", "npu_bench.py", "magnitude.py", "standard.py", "compare.py", "run_ut.py", "pytorch_side.py"];

/// The MindSpore scripts' files, in inlining order (`_tables.py` comes first, rendered).
const MINDSPORE: &[(&str, &str)] = repro![
    "data_generate.py",
    "torch_exec.py",
    "npu_bench.py",
    "magnitude.py",
    "ms_bench.py",
    "ms_exec.py",
    "standard.py",
    "compare.py",
    "run_ut.py",
    "mindspore_side.py"
];

/// The MSAdapter (mindtorch) scripts' files, in inlining order (`_tables.py`
/// comes first, rendered): `two_torches.py` binds MSAdapter's torch and the
/// real torch before the rest uses them.
const MINDTORCH: &[(&str, &str)] = repro![
    "two_torches.py",
    "data_generate.py",
    "torch_exec.py",
    "npu_bench.py",
    "magnitude.py",
    "ms_exec.py",
    "standard.py",
    "compare.py",
    "run_ut.py",
    "mindtorch_side.py"
];

/// The package files of `framework`'s machinery, `(file name, text)`, in
/// inlining order.
pub fn files(framework: Framework) -> &'static [(&'static str, &'static str)] {
    match framework {
        Framework::PyTorch => PYTORCH,
        Framework::MindSpore => MINDSPORE,
        Framework::MindTorch => MINDTORCH,
    }
}

/// What a script inlines of a package file: the text after its marker line.
/// Every file has the marker (a unit test reads them all).
fn inlined(text: &'static str) -> &'static str {
    let marker = format!("\n{MARKER}\n");
    text.find(&marker).map_or("", |i| &text[i + marker.len()..])
}

/// The whole machinery of `framework`'s scripts, as inlined after the head.
pub fn machinery(framework: Framework) -> String {
    let mut out = tables_body();
    for (_, text) in files(framework) {
        out.push_str(inlined(text));
    }
    out
}

/// `python/msprobe_rs/repro/_tables.py` as the renderer writes it (the
/// committed file must be exactly this; `tests/golden.rs` checks it).
pub fn tables_file() -> String {
    let mut out = String::from(
        "\"\"\"The data tables of the repro machinery, rendered from msprobe-rs's Rust tables\n\
         by src/render/machinery.rs. Generated: do not edit (`UPDATE_GOLDEN=1 cargo test\n\
         --test golden` rewrites it; tests/golden.rs fails when it differs).\n\"\"\"\n\n",
    );
    out.push_str(MARKER);
    out.push('\n');
    out.push_str(&tables_body());
    out
}

/// `python/msprobe_rs/_hook_lists.py`: msprobe 8.3.2's PyTorch and
/// MindSpore hook lists (`runtime/src/ops/hook_lists/`), which
/// `ResultChange`'s api_hooks variant wraps, so that an installed wheel has
/// them (the package ships no Rust sources).
pub fn hook_lists_file() -> String {
    let mut out = String::from(
        "\"\"\"msprobe 8.3.2's PyTorch and MindSpore hook lists (runtime/src/ops/hook_lists/), by\n\
         namespace, rendered by src/render/machinery.rs. Generated: do not edit (`UPDATE_GOLDEN=1\n\
         cargo test --test golden` rewrites it; tests/golden.rs fails when it differs).\n\"\"\"\n",
    );
    // PyTorch's NPU list is torch_npu's, not torch's: not wrapped.
    let lists: [(&str, Framework, &[(&str, Prefix)]); 2] = [
        ("HOOK_LISTS", Framework::PyTorch, &[("functional", Prefix::Functional), ("tensor", Prefix::Tensor), ("torch", Prefix::Torch)]),
        (
            "MS_HOOK_LISTS",
            Framework::MindSpore,
            &[("ops", Prefix::Functional), ("tensor", Prefix::Tensor), ("mint", Prefix::Mint), ("mint.nn.functional", Prefix::MintFunctional)],
        ),
    ];
    for (variable, framework, namespaces) in lists {
        writeln!(out, "\n{variable} = {{").unwrap();
        for &(key, prefix) in namespaces {
            let names: Vec<&str> = ops::hooks::hook_list(framework, prefix).map(|l| l.names().collect()).unwrap_or_default();
            writeln!(out, "    {}: (", py_str(key)).unwrap();
            for name in names {
                writeln!(out, "        {},", py_str(name)).unwrap();
            }
            out.push_str("    ),\n");
        }
        out.push_str("}\n");
    }
    out
}

fn py_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.into_iter().map(py_str).collect();
    format!("[{}]", items.join(", "))
}

fn kind(d: TDType) -> &'static str {
    match d.category() {
        Category::Bool => "bool",
        Category::Int => "int",
        Category::Float => "float",
        Category::Complex => "complex",
    }
}

/// The value range of an integer dtype, exactly.
fn int_range(d: TDType) -> Option<(i128, i128)> {
    let (low, _) = d.int_range()?;
    let bits = d.bits();
    Some(if low < 0.0 { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) })
}

/// The rulebook in force ([`runtime::rulebook::get`]) as a Python literal:
/// its rules' numbers, without the `about` texts and the API sets (which
/// `STANDARD_API_SETS` holds as frozensets).
fn rulebook_literal() -> String {
    let mut value = serde_json::to_value(runtime::rulebook::get()).expect("the rulebook serializes");
    if let Some(map) = value.as_object_mut() {
        map.remove("api_standard");
    }
    py_value(&value)
}

/// A JSON value as a Python literal, without its objects' `about` keys.
fn py_value(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => py_bool(*b),
        Value::Number(n) => py_float(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => py_str(s),
        Value::Array(items) => format!("[{}]", items.iter().map(py_value).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let items: Vec<String> = map.iter().filter(|(k, _)| *k != "about").map(|(k, x)| format!("{}: {}", py_str(k), py_value(x))).collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// The tables' Python text (what the scripts inline).
fn tables_body() -> String {
    let mut out = String::new();
    let o = &mut out;
    o.push_str(
        "\n\n# Exit codes (runtime/src/exit.rs): every row passes (warnings included) / some\n\
         # row is an error / a tensor file is unusable / the script failed / some call\n\
         # could not be replayed here and nothing is an error (--allow-skip makes that EXIT_OK).\n",
    );
    for (name, code) in [("OK", exit::OK), ("INACCURATE", exit::INACCURATE), ("INPUT", exit::INPUT), ("INTERNAL", exit::INTERNAL), ("SKIPPED", exit::SKIPPED)] {
        writeln!(o, "EXIT_{name} = {code}").unwrap();
    }
    o.push_str("# Every dtype (runtime/src/dtype.rs): (canonical name, kind, every name a dump spells it by).\nDTYPE_TABLE = [\n");
    for d in TDType::ALL {
        let names: Vec<String> = d.torch_names().map(|n| format!("torch.{n}")).chain([d.mindspore_name().to_string()]).collect();
        writeln!(o, "    ({}, {}, {}),", py_str(d.name()), py_str(kind(d)), py_list(names.iter().map(String::as_str))).unwrap();
    }
    o.push_str("]\n# The values of each integer dtype: (min, max).\nINT_RANGES = {\n");
    for d in TDType::ALL {
        if let Some((low, high)) = int_range(d) {
            writeln!(o, "    {}: ({low}, {high}),", py_str(d.name())).unwrap();
        }
    }
    o.push_str("}\n# The real dtype of each part of a complex dtype: its values are judged as pairs of it.\nCOMPLEX_PARTS = {\n");
    for d in TDType::ALL.iter().filter(|d| d.component() != **d) {
        writeln!(o, "    {}: {},", py_str(d.name()), py_str(d.component().name())).unwrap();
    }
    o.push_str("}\n# MindSpore's name of each dtype, by canonical name.\nMS_NAMES = {\n");
    for d in TDType::ALL {
        writeln!(o, "    {}: {},", py_str(d.name()), py_str(d.mindspore_name())).unwrap();
    }
    o.push_str(
        "}\n# MindSpore keyword names that torch spells differently (runtime/src/bind.rs); a\n\
         # bench helper of ms_bench takes MindSpore's own names.\nKEYWORD_ALIASES = {\n",
    );
    for (alias, name) in bind::KEYWORD_ALIASES {
        writeln!(o, "    {}: {},", py_str(alias), py_str(name)).unwrap();
    }
    o.push_str("}\n# The judging rules' numbers and factors (runtime/rulebook.json, which says what each is).\n");
    writeln!(o, "RULEBOOK = {}", rulebook_literal()).unwrap();
    o.push_str("# msprobe's API sets of the api standard by rule (the rulebook's api_standard).\nSTANDARD_API_SETS = {\n");
    for (rule, names) in api_standard::api_sets() {
        writeln!(o, "    {}: frozenset({}),", py_str(rule), py_list(names.iter().copied())).unwrap();
    }
    o.push_str("}\n# The bench helpers of ms_bench that the bench table names (runtime/src/ops/bench.rs).\n");
    let mut helpers: Vec<&str> = api_map::ms_bench_helpers().collect();
    helpers.sort_unstable();
    helpers.dedup();
    writeln!(o, "MS_BENCH_HELPERS = frozenset({})", py_list(helpers)).unwrap();
    o.push_str("# The op table's NPU names (runtime/src/ops/): each call's bench is npu_bench's ref_<op>.\n");
    writeln!(o, "NPU_REFERENCES = frozenset({})", py_list(api_map::npu_references())).unwrap();
    rounding_tables(o);
    o.push_str("# Message parts the native replay writes too (runtime/src/replay/judge.rs).\n");
    writeln!(o, "UNDEFINED_VALUES = {}", py_str(runtime::replay::UNDEFINED_VALUES)).unwrap();
    writeln!(o, "SELF_REFERENCE = {}", py_str(runtime::replay::SELF_REFERENCE)).unwrap();
    o.push_str("# An emulated row's error under the default standard (runtime/src/standard.rs).\n");
    writeln!(o, "EMULATED_OVERFLOW = {}", py_str(runtime::standard::EMULATED_OVERFLOW)).unwrap();
    writeln!(o, "EMULATED_BEYOND_BOUND = {}", py_str(runtime::standard::EMULATED_BEYOND_BOUND)).unwrap();
    writeln!(o, "EMULATED_RULE = {}", py_str(runtime::standard::EMULATED_RULE)).unwrap();
    out
}

/// One API's rounding class as the scripts' `ROUNDING` holds it.
fn rounding_entry(op: &ops::Op) -> String {
    let class = op.rounding();
    match class {
        Rounding::Terms { negated } => {
            let position = negated.and_then(|n| bind::param_position(op.sig, n)).map_or("None".to_string(), |p| p.to_string());
            let params = pyfmt::tuple(bind::param_names(op.sig).into_iter().map(py_str));
            format!("({}, {position}, {}, {params})", py_str(class.name()), negated.map_or("None".to_string(), py_str))
        }
        Rounding::Sums => {
            let chain = match op.slicing() {
                Some(Slicing::Product { a, b }) => format!("(\"product\", {}, {})", py_str(a), py_str(b)),
                Some(Slicing::Linear) => "(\"linear\",)".to_string(),
                Some(Slicing::Conv) => "(\"conv\",)".to_string(),
                _ => "None".to_string(),
            };
            format!("({}, {}, {chain})", py_str(class.name()), pyfmt::tuple(bind::param_names(op.sig).into_iter().map(py_str)))
        }
        Rounding::Parts(parts) => {
            let params = pyfmt::tuple(bind::param_names(op.sig).into_iter().map(py_str));
            format!("({}, {}, {}, {params})", py_str(class.name()), py_str(parts.name), py_str(parts.rest.name()))
        }
        // Parameters the magnitudes never perturb (positions such as roi_align's rois).
        Rounding::Composite => match op.inert().filter(|i| i.when.is_none()) {
            Some(inert) => format!(
                "({}, {}, {})",
                py_str(class.name()),
                pyfmt::tuple(inert.params.iter().copied().map(py_str)),
                pyfmt::tuple(bind::param_names(op.sig).into_iter().map(py_str))
            ),
            None => format!("({},)", py_str(class.name())),
        },
        _ => format!("({},)", py_str(class.name())),
    }
}

/// The key of a class's factors in `ROUNDING_FACTORS`: its name, a formula's parts by the formula's name.
fn factors_key(class: Rounding) -> &'static str {
    match class {
        Rounding::Parts(parts) => parts.name,
        _ => class.name(),
    }
}

/// `ROUNDING` (every op-table name's rounding class, `runtime/src/ops/mod.rs`, and every derived name's)
/// and `ROUNDING_FACTORS` (each class's `(k, compute dtype)` per float dtype,
/// forward and backward), and `FLOAT_FORMATS` (each float dtype's mantissa
/// bits and smallest normal exponent, `TDType::float_format`).
fn rounding_tables(o: &mut String) {
    o.push_str(
        "# How rounding can move each API's results, by op-table name (runtime/src/ops/mod.rs,\n\
         # Rounding; the magnitudes of magnitude.py): (\"terms\", the negated parameter's\n\
         # position or None, its name or None, the signature's parameter names), (\"sums\",\n\
         # parameter names, its accumulation chains: (\"product\", a, b), (\"linear\",), (\"conv\",) or None),\n\
         # (\"selects\",), (\"smooth\",), (\"parts\", formula, what its parts are\n\
         # added to: \"smooth\", \"composite\" or \"nothing\", parameter names), (\"composite\",)\n\
         # or (\"composite\", parameters never perturbed, parameter names).\nROUNDING = {\n",
    );
    let mut classes: Vec<Rounding> = vec![];
    for op in ops::table() {
        let entry = rounding_entry(op);
        for name in op.names {
            writeln!(o, "    {}: {entry},", py_str(name)).unwrap();
        }
        if !classes.iter().any(|c| factors_key(*c) == factors_key(op.rounding())) {
            classes.push(op.rounding());
        }
    }
    // The names derived by rule (runtime/src/ops/derive.rs) take their base's
    // class; MindSpore's under "MS.", which its scripts look up first.
    for d in ops::derive::derived() {
        let ms = if d.family == Framework::MindSpore { "MS." } else { "" };
        writeln!(o, "    {}: {},", py_str(&format!("{ms}{}", d.name)), rounding_entry(&d.op)).unwrap();
    }
    o.push_str(
        "}\n# Each class's (k, compute dtype: u and eta) of k*(u*magnitude + eta) + ulp/2 by the output's float dtype, as\n\
         # (forward, backward) (Rounding::factors); a formula's parts by the formula's name.\nROUNDING_FACTORS = {\n",
    );
    let floats: Vec<TDType> = TDType::ALL.into_iter().filter(|d| d.is_float()).collect();
    for class in classes {
        let per_dtype: Vec<String> = floats
            .iter()
            .map(|&d| {
                let pair = |backward| {
                    let (k, compute) = class.factors(d, backward);
                    format!("({}, {})", py_float(k), py_str(compute.name()))
                };
                format!("{}: ({}, {})", py_str(d.name()), pair(false), pair(true))
            })
            .collect();
        writeln!(o, "    {}: {{{}}},", py_str(factors_key(class)), per_dtype.join(", ")).unwrap();
    }
    writeln!(
        o,
        "}}\n# The parameters whose integers are operands of terms and sums (ops::OPERANDS).\nROUNDING_OPERANDS = frozenset({})",
        py_list(ops::OPERANDS.iter().copied())
    )
    .unwrap();
    o.push_str("# The ops whose kernel rounds float32 operands shorter on some devices (ops::Fact::ReducedOperands):\n# their kind in the rulebook's reduced_operands, by op-table name.\nREDUCED_OPERANDS = {\n");
    for op in ops::table() {
        if let Some(kind) = op.reduced_operands() {
            for name in op.names {
                writeln!(o, "    {}: {},", py_str(name), py_str(kind)).unwrap();
            }
        }
    }
    o.push_str("}\n");
    o.push_str("# The ops whose kernel is known to leave a common error in float32 results (ops::CommonError):\n# (epsilons, source) by op-table name.\nKERNEL_COMMON_ERROR = {\n");
    for op in ops::table() {
        if let Some(c) = op.common_error() {
            for name in op.names {
                writeln!(o, "    {}: ({}, {}),", py_str(name), py_float(c.float32_epsilons), py_str(c.source)).unwrap();
            }
        }
    }
    o.push_str("}\n");
    o.push_str("# (mantissa bits, smallest normal exponent) of each float dtype (TDType::float_format).\nFLOAT_FORMATS = {\n");
    for d in &floats {
        if let Some((mant, emin)) = d.float_format() {
            writeln!(o, "    {}: ({mant}, {emin}),", py_str(d.name())).unwrap();
        }
    }
    o.push_str("}\n");
}

/// The file name of the shared module of `framework`'s scripts, versioned
/// by the generator: `msprobe_repro_<version, dots as _>_<framework>.py`.
pub fn shared_module_file(framework: Framework) -> String {
    format!("{}.py", shared_module_name(framework))
}

/// The shared module's import name (its file name without `.py`).
pub fn shared_module_name(framework: Framework) -> String {
    format!("msprobe_repro_{}_{}", env!("CARGO_PKG_VERSION").replace(['.', '-', '+'], "_"), framework.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_has_one_marker_and_the_package_says_the_same() {
        for fw in Framework::ALL {
            for (name, text) in files(fw) {
                assert_eq!(text.matches(&format!("\n{MARKER}\n")).count(), 1, "{name}: one marker line");
                assert!(inlined(text).starts_with("\n\n") && !inlined(text).starts_with("\n\n\n"), "{name}: two blank lines after the marker");
                assert!(text.ends_with('\n') && !text.ends_with("\n\n"), "{name}: one newline at the end");
            }
        }
        let init = include_str!("../../python/msprobe_rs/repro/__init__.py");
        assert!(init.contains(&format!("MARKER = {}\n", py_str(MARKER))), "msprobe_rs.repro.MARKER differs");
    }

    #[test]
    fn tables_hold_the_rust_tables() {
        let body = tables_body();
        assert!(body.contains("    (\"int16\", \"int\", [\"torch.int16\", \"torch.short\", \"Int16\"]),\n"), "{body}");
        assert!(body.contains("    \"uint64\": (0, 18446744073709551615),\n    (") || body.contains("    \"uint64\": (0, 18446744073709551615),\n}"), "{body}");
        assert!(body.contains("    \"int8\": (-128, 127),\n"), "{body}");
        assert!(body.contains("    \"keep_dims\": \"keepdim\",\n"), "{body}");
        assert!(body.contains("EXIT_SKIPPED = 8\n"), "{body}");
        assert!(body.contains("\"ms_ops_conv2d\""), "{body}");
        assert!(body.contains("    \"Torch.sub\": (\"terms\", 1, \"other\", (\"input\", \"other\", \"alpha\")),\n    \"Tensor.sub\": (\"terms\", 1, \"other\", (\"input\", \"other\", \"alpha\")),\n"), "{body}");
        assert!(body.contains("    \"Functional.gelu\": (\"parts\", \"gelu\", \"smooth\", (\"input\", \"approximate\")),\n"), "{body}");
        assert!(
            body.contains("    \"Functional.softmax\": (\"parts\", \"softmax\", \"composite\", (\"input\", \"dim\", \"_stacklevel\", \"dtype\")),\n"),
            "{body}"
        );
        assert!(body.contains("    \"Functional.log_softmax\": (\"composite\",),\n"), "{body}");
        assert!(body.contains("    \"terms\": {\"float16\": ((1.0, \"float16\"), (4.0, \"float16\")), "), "{body}");
        assert!(body.contains("    \"bfloat16\": (7, -126),\n"), "{body}");
        assert_eq!(shared_module_file(Framework::MindSpore), format!("msprobe_repro_{}_mindspore.py", env!("CARGO_PKG_VERSION").replace('.', "_")));
    }
}
