"""Differential testing of passes: interpret the IR before and after, compare the numbers."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from autofusion.interpreter import find_function, random_inputs, run_function
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes import get_all_passes


def apply_pipeline(module: ModuleOp, pipeline: str) -> ModuleOp:
    """Apply an xDSL-syntax pipeline in place (verifying after each pass); return the module."""
    ctx = default_context()
    passes = PassPipeline.parse_spec(
        get_all_passes(), pipeline, lambda _prev, mod, _next: mod.verify()
    )
    passes.apply(ctx, module)
    module.verify()
    return module


def check_pass(
    text: str,
    pipeline: str,
    *,
    inputs: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    rtol: float = 1e-5,
    atol: float = 1e-5,
) -> str:
    """Run `pipeline` on `text`; assert the outputs are unchanged; return the new IR."""
    ctx = default_context()
    before = parse_module(ctx, text, "before.mlir")
    feeds = dict(inputs) if inputs is not None else random_inputs(find_function(before), seed)
    want = run_function(before, feeds)
    after = apply_pipeline(parse_module(ctx, text, "after.mlir"), pipeline)
    got = run_function(after, feeds)
    assert list(got) == list(want)
    for name in want:
        w, g = np.asarray(want[name], np.float64), np.asarray(got[name], np.float64)
        assert w.shape == g.shape, f"{name}: shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"output {name}")
    return module_to_text(ctx, after)


def assert_close(
    got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], rtol: float, atol: float
) -> None:
    """The same outputs in the same order, none with a NaN (an element no kernel wrote),
    each within `rtol` and `atol` times its largest expected magnitude (at least 1)."""
    assert list(got) == list(want)
    for key, value in want.items():
        w, g = value.astype(np.float64), got[key].astype(np.float64)
        assert w.shape == g.shape, key
        assert not np.isnan(g).any(), f"{key}: NaN (an unwritten element leaked)"
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * scale, err_msg=key)


def group(body: str, args: list[tuple[str, str]], results: list[tuple[str, str]]) -> str:
    """A function holding one fusion group over its arguments (`%<name>_` inside)."""
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    bind = ", ".join(f"%{n}_ = %{n} : {t}" for n, t in args)
    rtypes = ", ".join(t for _, t in results)
    yields = ", ".join(f"%{n}" for n, _ in results)
    return f"""
func.func @main({sig}) -> ({rtypes}) {{
  %grp:{len(results)} = graph.fusion_group ({bind}) -> ({rtypes}) {{
{body}
    graph.yield {yields} : {rtypes}
  }}
  func.return {", ".join(f"%grp#{i}" for i in range(len(results)))} : {rtypes}
}}"""
