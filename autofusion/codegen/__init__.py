"""afc's output targets (`afc-opt -t NAME`), each behind a factory."""

from collections.abc import Callable

from xdsl.utils.target import Target


def _ascendc() -> type[Target]:
    from autofusion.codegen.ascendc_target import AscendCTarget

    return AscendCTarget


def _onnx() -> type[Target]:
    from frontends.onnx.export import OnnxTarget

    return OnnxTarget


def _report() -> type[Target]:
    from autofusion.codegen.report_target import ReportTarget

    return ReportTarget


def _hfusion() -> type[Target]:
    from autofusion.codegen.hfusion_export import HFusionTarget

    return HFusionTarget


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """afc's targets by name."""
    return {"ascendc": _ascendc, "onnx": _onnx, "report": _report, "hfusion": _hfusion}
