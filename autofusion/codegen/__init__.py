"""afc's output targets (`afc-opt -t NAME`), each behind a factory."""

from collections.abc import Callable

from xdsl.utils.target import Target


def _onnx() -> type[Target]:
    from frontends.onnx.export import OnnxTarget

    return OnnxTarget


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """afc's targets by name."""
    return {"onnx": _onnx}
