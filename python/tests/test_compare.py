"""Rows, verdicts, exit codes and the CSV bytes."""

import os

import numpy as np
import pytest

from msprobe_rs.repro.compare import (cell, compare_leaf, compare_outputs, exit_code, result_row, run_side, skip_row,
                                      write_csv, write_report)
from conftest import make_call


class Opts:
    perturb = 0.0
    standard = "msprobe"
    reference_is_tested = False


def test_cells_a_spreadsheet_would_run_are_text():
    assert [cell(v) for v in (None, 0.5, -0.5, 1e-08, float("inf"), 3, "=1+1", "-x", "@SUM(A1)", "-inf", "plain")] == [
        "", "0.5", "-0.5", "1e-08", "inf", "3", "'=1+1", "'-x", "'@SUM(A1)", "-inf", "plain"]


def test_csv_bytes(tmp_path):
    path = tmp_path / "x.csv"
    write_csv(str(path), ["A", "B"], [["a,b", None], ['say "hi"', 1.5]])
    assert path.read_bytes() == '\ufeffA,B\r\n"a,b",\r\n"say ""hi""",1.5\r\n'.encode("utf-8")
    assert oct(os.stat(path).st_mode & 0o777) == "0o640"
    assert [p.name for p in tmp_path.iterdir()] == ["x.csv"]


def test_a_report_is_a_new_pair_of_files(tmp_path):
    first = write_report(str(tmp_path), ["API Name", "Status"], [["x", "pass", "dropped"]], [["x", "pass", "", ""]])
    second = write_report(str(tmp_path), ["API Name", "Status"], [], [])
    assert first != second and len(os.listdir(tmp_path)) == 4
    assert open(first[1], encoding="utf-8-sig").read() == "API Name,Status\nx,pass\n"


def test_rows_and_verdicts():
    call = make_call()
    tested = ("torch.float32", np.array([1.0, 2.0]))
    row = compare_leaf(call, tested, ("torch.float64", np.array([1.0, 2.0])), None, False, Opts())
    assert row[3] == pytest.approx(1.0)
    assert row[:3] + row[4:] == ["torch.float64", "torch.float32", "(2,)", 0.0, 0.0, "pass", "", "cosine and max abs", ""]
    row = compare_leaf(call, tested, ("torch.float64", np.array([1.0, 2.0, 3.0])), None, False, Opts())
    assert row[6:8] == ["skip", "cannot judge: shape mismatch: tested (2,), bench (3,)"]
    row = compare_leaf(call, ("NoneType", None), ("torch.float64", np.array([1.0])), None, False, Opts())
    assert row[6:8] == ["skip", "cannot judge: output of type NoneType is not comparable"]
    undefined = make_call(UNDEFINED_OUTPUTS="values undefined (uninitialized memory): only the shape is compared")
    row = compare_leaf(undefined, tested, ("torch.float64", np.array([9.0, 9.0])), None, False, Opts())
    assert row[6:9] == ["pass", undefined.UNDEFINED_OUTPUTS, "shape"]
    rows = compare_outputs(call, "forward", [tested], [], None, Opts())
    assert rows[0][0] == "Torch.add.0.forward.output.0" and rows[0][7:9] == ["skip", "cannot judge: output count differs: tested 1, bench 0"]
    skip = skip_row("Torch.add.0", "forward", "bench", TypeError("bad\nmore"))
    assert skip[0] == "Torch.add.0.forward" and skip[8] == "cannot replay here: the bench call raised TypeError: bad"
    assert result_row("Torch.add.0", [skip], []) == ["Torch.add.0", "skip", None, "Torch.add.0.forward: " + skip[8]]


@pytest.mark.parametrize("statuses,allow_skip,code", [
    (["pass", "warning"], False, 0), (["pass", "error", "skip"], False, 3), (["skip"], False, 8), (["skip"], True, 0), ([], False, 0)])
def test_exit_codes(statuses, allow_skip, code):
    assert exit_code(statuses, allow_skip) == code


def test_a_side_that_raises_is_a_skip_not_a_crash(capsys):
    seeds = []

    def runner(x):
        raise RuntimeError("no kernel")
    (outputs, grads), exc = run_side(lambda: seeds.append(1), runner, str, 1)
    assert (outputs, grads, str(exc), seeds) == (None, None, "no kernel", [1])
    assert "RuntimeError: no kernel" in capsys.readouterr().err
    assert run_side(lambda: None, lambda x: ([x], None), lambda v: v * 2, 3) == (([6], None), None)


def test_complex_values_are_judged_as_pairs_of_their_parts_dtype():
    """Issue 38: torch.polar in complex64 against the bench's complex128 (the scripts raise complex64 to
    complex128) is judged as float32 pairs, so rounding passes, where a bit-for-bit check failed; an error
    of 1e-2 in one imaginary part is an error. The shape is the complex tensor's."""
    import torch

    from msprobe_rs.repro.torch_exec import RAISE_PRECISION, torch_leaf

    assert RAISE_PRECISION[torch.complex64] == torch.complex128
    call = make_call(API_OP="Torch.polar")
    magnitude, angle = torch.tensor([0.5, 1.25, 2.0, 3.0]), torch.tensor([0.3, -1.1, 2.5, 0.01])
    tested = torch.polar(magnitude, angle)
    bench = torch.polar(magnitude.double(), angle.double())
    assert not np.array_equal(torch.view_as_real(tested).double().numpy(), torch.view_as_real(bench).numpy())
    for standard in ("msprobe", "api"):
        opts = Opts()
        opts.standard = standard
        row = compare_leaf(call, torch_leaf(tested), torch_leaf(bench), None, False, opts)
        assert row[:3] == ["torch.complex128", "torch.complex64", "(4,)"] and row[6] == "pass", (standard, row)
        wrong = tested.clone()
        wrong[2] += 1e-2j
        assert compare_leaf(call, torch_leaf(wrong), torch_leaf(bench), None, False, opts)[6] == "error", standard
