"""The package's files as the scripts inline them: one marker line each,
only imports above it, and one namespace (no name defined twice, none of a
head's names defined)."""

import ast
import os

import msprobe_rs.repro as repro

PACKAGE = os.path.dirname(repro.__file__)
# The inlining order of src/render/machinery.rs (after the rendered _tables.py).
PYTORCH = ["_tables.py", "data_generate.py", "torch_exec.py", "npu_bench.py", "magnitude.py", "standard.py", "compare.py", "run_ut.py", "pytorch_side.py"]
MINDSPORE = ["_tables.py", "data_generate.py", "torch_exec.py", "npu_bench.py", "magnitude.py", "ms_bench.py", "ms_exec.py", "standard.py",
             "compare.py", "run_ut.py", "mindspore_side.py"]
MINDTORCH = ["_tables.py", "two_torches.py", "data_generate.py", "torch_exec.py", "npu_bench.py", "magnitude.py", "ms_exec.py", "standard.py", "compare.py",
             "run_ut.py", "mindtorch_side.py"]
# What a head defines (templates/python/*.py.tera).
HEAD_NAMES = {"tested", "bench", "inputs", "recorded", "API_NAME", "PROPAGATION", "DATA_MODE", "RANDOM_SEED", "ITER_TIMES",
              "COSINE_THRESHOLD", "MAX_ABS_ERR_THRESHOLD", "STANDARD", "API_OP", "EXACT_OP", "UNDEFINED_OUTPUTS",
              "CLASS_TARGETS", "TOKEN_MASK", "DATA_DIR", "SOURCE_DUMP", "BENCH_TAKES_MINDSPORE_NAMES", "DUMP_DEVICE"}


def split(name):
    with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
        text = f.read()
    above, marker, inlined = text.partition("\n" + repro.MARKER + "\n")
    assert marker, f"{name} has no marker line"
    return above, inlined


def defined(tree):
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.extend(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def test_every_file_has_one_marker_and_only_imports_above_it():
    for name in sorted(set(PYTORCH + MINDSPORE + MINDTORCH)):
        above, inlined = split(name)
        assert repro.MARKER not in inlined, name
        for node in ast.parse(above).body:
            docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            assert docstring or isinstance(node, (ast.Import, ast.ImportFrom, ast.Try)), f"{name}: {ast.dump(node)[:80]}"
        assert not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(ast.parse(inlined))), name


def test_the_inlined_machinery_is_one_namespace_without_head_names():
    for files in (PYTORCH, MINDSPORE, MINDTORCH):
        names = [n for f in files for n in defined(ast.parse(split(f)[1]))]
        twice = sorted({n for n in names if names.count(n) > 1})
        assert twice == [], twice
        assert not HEAD_NAMES & set(names)
        assert {"run", "TensorSpec", "DType", "Device", "Size", "MemoryFormat", "Unsupported"} <= set(names)


def test_machinery_names_only_what_it_defines_or_imports_in_the_head():
    """A name the inlined code reads is defined by the machinery, a builtin,
    or imported by every head (the stdlib modules, np, torch, mindspore)."""
    import builtins
    head_imports = {"argparse", "csv", "datetime", "importlib", "io", "math", "os", "pickle", "re", "sys", "tempfile", "traceback", "np",
                    "torch", "torch_npu", "mindspore", "__name__"}
    for files in (PYTORCH, MINDSPORE, MINDTORCH):
        trees = [ast.parse(split(f)[1]) for f in files]
        known = {n for t in trees for n in defined(t)} | head_imports | set(dir(builtins))
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef):
                    known.add(node.name)
                if isinstance(node, (ast.FunctionDef, ast.Lambda)):
                    known |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    known.add(node.id)
                if isinstance(node, ast.ExceptHandler) and node.name:
                    known.add(node.name)
        used = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        assert used - known == set(), files[-1]
