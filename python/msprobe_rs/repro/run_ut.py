"""The command line of a repro script and its loop: each iteration makes the
inputs, runs the tested and the bench side, compares, and the report is
written once (msprobe's run_ut does this for its checker).
"""

import argparse
import sys
import traceback

import numpy as np

from ._tables import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_SKIPPED
from .compare import (DETAILS_HEADER, SKIP, STANDARD_COLUMNS, cell, compare_outputs, exit_code, result_row, run_side,
                      skip_row, write_report)
from .data_generate import InputError, Master, Realizer, band_mask, fold_class_targets
from .magnitude import common_error_of, magnitudes, reduced_operands_of, rounding_factors, rounding_of
from .standard import standard_for_row

# --- msprobe-rs: the scripts inline this file from here ---


# The standards whose verdicts use the rounding magnitudes and the reference run
# (the bound standard falls back to the api standard's rules where there is no bound).
ROUNDING_STANDARDS = ("api", "bound")


def uses_rounding(standard):
    """Whether rows judged by standard need the magnitudes and the reference run (the
    default standard's: the standard a device's rows resolve to; a script judges the
    framework's own run on its machine)."""
    return standard_for_row(standard, False) in ROUNDING_STANDARDS


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
    parser.add_argument("--standard", choices=["default", "msprobe", "api", "bound"], default=call.STANDARD,
                        help="precision standard: default (msprobe's thresholds, elements within the rounding bound "
                             "counted as exact), msprobe (cosine and max abs), api (per API and dtype) or bound (every "
                             "element within its rounding error bound); api and bound add the Standard and "
                             "Standard Metrics columns (default: %(default)s)")
    parser.add_argument("--tested", choices=["run", "recorded"], default="run",
                        help="the tested side: run (the call on --device, in the dumped dtype) or recorded (real_data: "
                             "the outputs and gradients the dump recorded, the device's own values, judged as msprobe-rs "
                             "replay --data-mode real_data judges them) (default: %(default)s)")
    parser.add_argument("--dump-device", choices=["cpu", "cuda", "npu"], default=call.DUMP_DEVICE,
                        help="with --tested recorded: the device the dump was recorded on (its float32 convolutions "
                             "are held to TF32 / HF32 operands on cuda / npu) (default: %(default)s)")
    parser.add_argument("--allow-skip", action="store_true",
                        help=f"exit {EXIT_OK} instead of {EXIT_SKIPPED} when calls that cannot be replayed here are the only problem")
    opts = parser.parse_args(argv)
    if opts.tested == "recorded" and call.DATA_MODE != "real_data":
        parser.error("--tested recorded judges the values a tensor dump recorded: it needs a real_data script")
    missing = side.unavailable(call)
    if missing and opts.tested == "run":  # nothing can run the tested call here: one line, a skip
        print(f"{call.API_NAME} {call.PROPAGATION}: skip: {missing}")
        return EXIT_OK if opts.allow_skip else EXIT_SKIPPED
    device = side.select_device(opts.device)
    # A recorded tested side is never the reference run.
    opts.reference_is_tested = side.reference_is_tested(device) and opts.tested == "run"
    # One casing for both frameworks (MindSpore says "CPU" / "Ascend", torch "cpu" / "npu").
    device_name = str(device).lower()
    print(f"{call.API_NAME} {call.PROPAGATION}: tested on {device_name}, bench on cpu, {call.DATA_MODE}, {call.ITER_TIMES} iteration(s), standard {opts.standard}")
    tested_text = RECORDED_TESTED if opts.tested == "recorded" else f"{side.TESTED_FRAMEWORK} on {device_name} in the dumped dtype"
    compared = f"tested: {tested_text}; bench: {side.BENCH_FRAMEWORK} on cpu at raised precision"

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
            if call.TOKEN_MASK and call.DATA_MODE == "random_data":
                band_mask(kwargs, call.TOKEN_MASK)
            in_exc = None
        except InputError:
            raise
        except Exception as exc:  # e.g. random data for a complex dtype: this tool's coverage
            in_exc = exc
        if in_exc is None:
            # The tested run first: a MindSpore bench helper follows what it did (dropout).
            if not missing:
                (t_out, t_grads), t_exc = run_side(reseed, side.run_tested, side.tested_leaf, call, args, kwargs, grad_outputs, device)
            (b_out, b_grads), b_exc = run_side(reseed, side.run_bench, side.bench_leaf, call, args, kwargs, grad_outputs)
            if missing:  # --tested recorded without the tested framework: the bench lines the recorded values up
                (t_out, t_grads), t_exc = (b_out, b_grads), None
        forward_rows, backward_rows = [], []
        if in_exc or t_exc or b_exc:
            failed = [(None, in_exc)] if in_exc else [("tested", t_exc), ("bench", b_exc)]
            rows = [skip_row(call.API_NAME, direction, which, exc) for which, exc in failed if exc]
            forward_rows, backward_rows = (rows, []) if direction == "forward" else ([], rows)
        else:
            (r_out, r_grads), rounding = (None, None), (None, None)
            if uses_rounding(opts.standard) and not missing:  # no tested framework here: no reference run
                r_out, r_grads = side.reference_leaves(call, args, kwargs, grad_outputs, device, (t_out, t_grads))
            if opts.tested == "recorded":
                t_out, t_grads = recorded_leaves(call, side, realize, (t_out, t_grads))
            # The default standard bounds a device's rows too, where msprobe's thresholds fail them.
            if uses_rounding(opts.standard) or opts.standard == "default":
                # The device whose values the tested side holds: the recorded dump's, or the run's.
                held = opts.dump_device if opts.tested == "recorded" else device_name.split(":")[0]
                rounding = bench_magnitudes(call, side, reseed, args, kwargs, grad_outputs, held)
            unjudged = [None, None, None, None, None, None, SKIP, UNRECORDED, None, None]
            if t_out is None:
                forward_rows = [[f"{call.API_NAME}.forward"] + unjudged]
            else:
                forward_rows = compare_outputs(call, "forward", t_out, b_out, r_out, opts, rounding[0])
            if call.PROPAGATION == "backward" and t_grads is None:
                backward_rows = [[f"{call.API_NAME}.backward"] + unjudged]
            elif call.PROPAGATION == "backward":
                backward_rows = compare_outputs(call, "backward", t_grads, b_grads, r_grads, opts, rounding[1])
        for row in forward_rows + backward_rows:  # every row that ran says what was compared
            if not row[8].startswith("cannot replay here:"):
                row[8] = "; ".join(part for part in (row[8], compared) if part)
        details += forward_rows + backward_rows
        results.append(result_row(call.API_NAME, forward_rows, backward_rows))
        for row in forward_rows + backward_rows:
            print(f"  {row[0]}: {row[7]}  cosine={cell(row[4]) or '-'}  max_abs_err={cell(row[5]) or '-'}  ({row[8]})")
    details_header = DETAILS_HEADER + (STANDARD_COLUMNS if opts.standard not in ("msprobe", "default") else [])
    result_path, details_path = write_report(opts.output_dir, details_header, details, results)
    print(f"wrote {result_path}")
    print(f"wrote {details_path}")
    return exit_code([r[7] for r in details], opts.allow_skip)


# What a row judged with --tested recorded compared on its tested side.
RECORDED_TESTED = "device values recorded in the dump"
# The row of --tested recorded where the script cannot line the recorded values up with its own.
UNRECORDED = ("cannot judge the recorded values here: the op draws random numbers, or the dump lists its "
              "gradients otherwise than one per floating input in order (an autograd node's list, an inner "
              "node's gradient, a no-op cast's), or in another count; msprobe-rs replay --data-mode real_data "
              "lines them up")


def recorded_leaves(call, side, realize, computed):
    """The leaves of the call's recorded outputs and, in a backward script, gradients, in
    place of the computed ones (computed: the tested run's (outputs, grads) leaves); None for
    a list the script cannot line up with its own (UNRECORDED): --tested recorded."""
    outputs, grads = call.recorded()
    outputs = None if outputs is None else side.judged_outputs(call, outputs)

    def leaf(value):
        if isinstance(value, Master):
            return value.spec.dtype, np.asarray(value.array, dtype=np.float64)
        return side.tested_leaf(value)

    def lined_up(recorded, mine):
        if recorded is None or mine is None or len(recorded) != len(mine):
            return None
        return [leaf(v) for v in realize(recorded)]

    return lined_up(outputs, computed[0]), lined_up(grads, computed[1])


def bench_magnitudes(call, side, reseed, args, kwargs, grad_outputs, device="cpu"):
    """The rounding bound's parts of the call's forward outputs and gradients:
    (magnitudes, factors(dtype) -> (k, compute dtype, known common error or None, the device's
    rounding of the operands or None)) each, the magnitudes from the bench function
    rerun on the call's inputs (magnitude.py); None for an API the op table does not hold."""
    entry = rounding_of(call.API_OP, side.ROUNDING_PREFIXES)
    if entry is None:
        return None, None

    def run(args, kwargs, grad_outputs, raise_precision):
        reseed()
        return side.run_bench(call, args, kwargs, grad_outputs, raise_precision)

    outputs, grads = magnitudes(entry, run, args, kwargs, grad_outputs)
    common = common_error_of(call.API_OP, side.ROUNDING_PREFIXES)
    operands = reduced_operands_of(call.API_OP, side.ROUNDING_PREFIXES, device) if side.REDUCED_OPERANDS_APPLY else None

    def factors(dtype, backward):
        kc = rounding_factors(entry, dtype, backward)
        f32 = dtype == "float32"
        return None if kc is None else kc + (common if f32 else None, operands if f32 else None)

    return ((outputs, lambda dtype: factors(dtype, False)), (grads, lambda dtype: factors(dtype, True)))


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
