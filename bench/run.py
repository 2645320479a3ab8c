"""`make bench`: every benchmark of afc, printed as tables."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import check_speed
import convnext_compile
import hfusion_partition
import import_models
import llm_decode
import model_suite
import parse_print
import qwen_fusion


def main() -> None:
    parse_print.main()
    import_models.main()
    qwen_fusion.main()
    llm_decode.main()
    model_suite.main()
    check_speed.main()
    convnext_compile.main()
    hfusion_partition.main()


if __name__ == "__main__":
    main()
