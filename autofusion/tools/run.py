"""`afc run`: interpret a model on inputs from an .npz file and write the outputs.

With `--emulate`, every `buffer.launch` of buffer-level IR runs the generated Ascend C,
compiled with g++ against afc's emulation of the API (autofusion/codegen/emulate.py);
the rest of the module is interpreted as usual.
"""

from __future__ import annotations

import argparse
import zipfile

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType

from autofusion import dtypes
from autofusion.diagnostics import UserError
from autofusion.tools.atomic_output import atomic_file


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="graph-level or buffer-level IR (.mlir), or any model file")
    p.add_argument("--inputs", help=".npz with one array per function argument")
    p.add_argument("-o", "--output", help=".npz to write the results to")
    p.add_argument("--entry", help="function to run (default: @main or the only function)")
    p.add_argument(
        "--random-inputs",
        type=int,
        metavar="SEED",
        help="run on random inputs drawn with this seed instead of --inputs",
    )
    p.add_argument(
        "--emulate",
        action="store_true",
        help="run the kernels of buffer-level IR as generated Ascend C compiled with g++",
    )


def read_npz(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        raise UserError(f"not a readable .npz file ({e})", path) from e


def check_dtypes(f: func.FuncOp, inputs: dict[str, np.ndarray], path: str) -> None:
    """Each array must already have the dtype `f` stores its argument in: converting, say,
    float64 or int64 data to f32 would silently change the values the model sees."""
    from autofusion.interpreter import argument_names

    for name, t in zip(argument_names(f), f.function_type.inputs.data):
        if name not in inputs or not isinstance(t, TensorType):
            continue  # a missing input is reported when the arguments are bound
        want = dtypes.storage_dtype(t.element_type)
        if inputs[name].dtype != want:
            raise UserError(
                f"input '{name}' has dtype {inputs[name].dtype}, but @{f.sym_name.data} "
                f"takes {t} (store it as {want})",
                path,
            )


def write_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    with atomic_file(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds badly


def main(args: argparse.Namespace) -> int:
    from autofusion.interpreter import find_function, random_inputs, run_function
    from autofusion.mlir_io import default_context
    from autofusion.tools.model_input import load_model

    if args.inputs is None and args.random_inputs is None:
        raise UserError("give the inputs with --inputs IN.npz (or --random-inputs SEED)")
    ctx = default_context()
    module = load_model(ctx, args.model)
    if args.inputs is not None:
        inputs = read_npz(args.inputs)
        check_dtypes(find_function(module, args.entry), inputs, args.inputs)
    else:
        inputs = random_inputs(find_function(module, args.entry), args.random_inputs)
    if args.emulate:
        from autofusion.codegen.emulate import run_function_emulated

        outputs = run_function_emulated(module, inputs, args.entry)
    else:
        outputs = run_function(module, inputs, args.entry)
    if args.output:
        write_npz(args.output, outputs)
    else:
        for name, value in outputs.items():
            print(f"{name}: {value.dtype}{list(value.shape)}")
            print(np.array2string(value, threshold=64, precision=6))
    return 0
