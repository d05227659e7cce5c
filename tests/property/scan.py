"""Checks generated Python scripts for code that the templates do not write.

Each script must be ASCII, compile (py_compile), and, parsed with `ast`, use
only the names the templates and the machinery use: every Name, Attribute,
import, function, argument and keyword name must occur in the golden heads
and shared-module scripts (golden/python/) or in the machinery's package
(python/msprobe_rs/repro/, which the scripts inline). The one exception is the callable of
`tested` and `bench`: their body must be a docstring and
`return MODULE.ATTR(*args, **kwargs)` (or `return HELPER(*args, **kwargs)`)
with MODULE one of api_map's module constants and ATTR a name of the tables
(msprobe's hook lists and the runtime's op table, given in NAMES_FILE), and
HELPER one of the bench helpers of the machinery (MS_BENCH_HELPERS, rendered
into python/msprobe_rs/repro/_tables.py from src/render/api_map.rs).

usage: python scan.py KNOWN_DIRS NAMES_FILE SCRIPT_DIR  (KNOWN_DIRS: folders joined by os.pathsep)
Prints one line per problem (`path: problem`) and exits 1 when there is any.
"""

import ast
import os
import py_compile
import sys
import tempfile

# src/render/api_map.rs's module constants.
MODULES = {
    "torch", "torch.nn.functional", "torch.Tensor", "torch.linalg",
    "mindspore.mint", "mindspore.mint.nn.functional", "mindspore.Tensor", "mindspore.ops",
    "msadapter", "msadapter.nn.functional", "msadapter.Tensor", "msadapter.linalg",
}
# The bench helpers of the MindSpore machinery, from its generated tables.
_TABLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "msprobe_rs", "repro", "_tables.py")
_NAMESPACE = {}
with open(_TABLES, encoding="utf-8") as _f:
    exec(compile(_f.read(), _TABLES, "exec"), _NAMESPACE)
HELPERS = set(_NAMESPACE["MS_BENCH_HELPERS"])
CALLABLES = ("tested", "bench")


def dotted(node):
    """`a.b.c` of a Name/Attribute chain, or None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else base + "." + node.attr
    return None


def callable_path(fn):
    """The dotted callable a `tested`/`bench` function returns, or raises
    ValueError when the function is not exactly docstring + that return."""
    body = fn.body
    if not (len(body) == 2 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        raise ValueError(f"{fn.name}: expected a docstring and one return")
    ret = body[1]
    call = ret.value if isinstance(ret, ast.Return) else None
    if not (isinstance(call, ast.Call) and len(call.args) == 1 and isinstance(call.args[0], ast.Starred)
            and dotted(call.args[0].value) == "args" and len(call.keywords) == 1 and call.keywords[0].arg is None
            and dotted(call.keywords[0].value) == "kwargs"):
        raise ValueError(f"{fn.name}: expected `return F(*args, **kwargs)`")
    path = dotted(call.func)
    if path is None:
        raise ValueError(f"{fn.name}: the callable is not a dotted name")
    return path


def names(tree):
    """Every identifier the code uses or defines, except the callables of
    `tested` and `bench`."""
    skip = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in CALLABLES and len(node.body) == 2:
            ret = node.body[1]
            if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Call):
                skip.update(id(n) for n in ast.walk(ret.value.func))
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.module:
                out.update(node.module.split("."))
            for alias in node.names:
                out.update(alias.name.split("."))
                if alias.asname:
                    out.add(alias.asname)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


def scripts(folder):
    for root, _, files in os.walk(folder):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(root, f)


def main():
    known_dirs, names_file, script_dir = sys.argv[1:4]
    allowed = set()
    for path in (p for d in known_dirs.split(os.pathsep) for p in scripts(d)):
        with open(path, encoding="utf-8") as f:
            allowed |= names(ast.parse(f.read(), path))
    with open(names_file, encoding="utf-8") as f:
        table = {line.strip() for line in f if line.strip()}
    problems, count = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in scripts(script_dir):
            count += 1
            with open(path, "rb") as f:
                raw = f.read()
            if not raw.isascii():
                problems.append(f"{path}: not ASCII")
            try:
                py_compile.compile(path, cfile=os.path.join(tmp, "x.pyc"), doraise=True)
            except py_compile.PyCompileError as e:
                problems.append(f"{path}: does not compile: {e.msg.strip().splitlines()[-1]}")
                continue
            tree = ast.parse(raw.decode("utf-8"), path)
            foreign = sorted(names(tree) - allowed)
            if foreign:
                problems.append(f"{path}: names the templates do not use: {foreign}")
            defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in CALLABLES}
            for name in CALLABLES:
                if name not in defs:
                    problems.append(f"{path}: no function {name}")
                    continue
                try:
                    full = callable_path(defs[name])
                except ValueError as e:
                    problems.append(f"{path}: {e}")
                    continue
                module, _, attr = full.rpartition(".")
                ok = full in HELPERS if not module else module in MODULES and attr in table
                if not ok:
                    problems.append(f"{path}: {name} calls {full}, not a table entry")
    for p in problems:
        print(p)
    print(f"scanned {count} scripts, {len(problems)} problems", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
