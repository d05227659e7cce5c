"""The start-up hook of the wheel (python/_msprobe_rs_route.py and
python/msprobe_rs_route.pth): which command lines of an ``msprobe`` script
it hands to msprobe-rs, and that it does nothing for any other program.
scripts/test-wheel.sh runs it as pip installs it, beside mindstudio-probe."""

import builtins
import os
import pkgutil
import stat

import pytest

import _msprobe_rs_route as route_mod

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTH = os.path.join(SOURCE, "msprobe_rs_route.pth")


@pytest.mark.parametrize("args, want", [
    (["-f", "mindspore", "op_generate", "-i", "c.json"], "op_generate"),
    (["--framework", "pytorch", "replay"], "replay"),
    (["--framework=pytorch", "nan_analyze"], "nan_analyze"),
    (["-fpytorch", "config_check"], "config_check"),
    (["-f=pytorch", "single_compare"], "single_compare"),
    (["compare", "-f", "pytorch"], "compare"),
    (["-f", "pytorch", "--help", "op_generate"], None),
    (["--version"], None),
    (["-f", "pytorch"], None),
    ([], None),
])
def test_the_subcommand_is_the_first_word_after_the_framework(args, want):
    assert route_mod.subcommand(args) == want


def binaries(tmp_path, ours=True):
    """A bin folder with an `msprobe` script and, when `ours`, an executable `msprobe-rs`."""
    (tmp_path / "msprobe").write_text("#!/usr/bin/env python3\n")
    if ours:
        (tmp_path / "msprobe-rs").write_bytes(b"\x7fELF")
        (tmp_path / "msprobe-rs").chmod(stat.S_IRWXU)
    return str(tmp_path / "msprobe")


def routed(argv):
    calls = []
    route_mod.route(argv, execv=lambda path, args: calls.append((path, args)))
    return calls


def test_our_subcommands_exec_the_binary_beside_the_script_with_the_command_line_unchanged(tmp_path):
    script = binaries(tmp_path)
    for argv in ([script, "-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out"], [script, "replay", "--dump", "d"]):
        assert routed(argv) == [(str(tmp_path / "msprobe-rs"), argv)]


def test_anything_else_is_left_alone(tmp_path):
    script = binaries(tmp_path)
    for argv in ([script, "-f", "pytorch", "compare", "-i", "a"], [script, "--version"], [script], [],
                 [str(tmp_path / "msprobe.py"), "-f", "pytorch", "op_generate"], ["-c", "op_generate"]):
        assert routed(argv) == [], argv
    # No msprobe-rs beside the script (msprobe-rs uninstalled, or a script elsewhere), or not executable.
    (tmp_path / "bare").mkdir()
    bare = binaries(tmp_path / "bare", ours=False)
    assert routed([bare, "-f", "pytorch", "op_generate"]) == []
    (tmp_path / "msprobe-rs").chmod(stat.S_IRUSR)
    assert routed([script, "-f", "pytorch", "op_generate"]) == []


def test_a_binary_that_cannot_start_leaves_one_line_and_mindstudio_probe_answers(tmp_path, capsys):
    script = binaries(tmp_path)

    def fails(path, args):
        raise OSError(8, "Exec format error")

    route_mod.route([script, "-f", "pytorch", "op_generate"], execv=fails)
    err = capsys.readouterr().err
    assert err == f"msprobe-rs: cannot run {tmp_path / 'msprobe-rs'} ([Errno 8] Exec format error); mindstudio-probe's msprobe answers instead\n"


def test_the_pth_is_one_import_line_that_imports_the_module_only_for_msprobe():
    with open(PTH) as f:
        lines = f.read().splitlines()
    assert len(lines) == 1 and lines[0].startswith("import ")
    # Run as site runs it: nothing imported unless argv[0] is named msprobe.
    for argv, imports in ((["-c"], False), (["/env/bin/python3"], False), (["/env/bin/msprobe", "--version"], True)):
        seen = []
        fake_sys = type("sys", (), {"argv": argv})
        env = {"__builtins__": dict(vars(builtins), __import__=lambda name, *a: seen.append(name) or _Module())}
        exec(lines[0].replace("import os, sys; ", ""), env, {"os": os, "sys": fake_sys})
        assert (seen == ["_msprobe_rs_route"]) == imports, (argv, seen)


def test_the_start_file_names_route_as_pep_829_spells_an_entry_point():
    with open(os.path.join(SOURCE, "msprobe_rs_route.start"), encoding="utf-8-sig") as f:
        assert f.read().splitlines() == ["_msprobe_rs_route:route"]
    assert pkgutil.resolve_name("_msprobe_rs_route:route") is route_mod.route


class _Module:
    def route(self):
        pass
