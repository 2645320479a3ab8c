"""A lit configuration for FileCheck suites of compilers that embed afc.

A downstream `lit.cfg` needs two lines (docs/embedding.md):

    from autofusion.testing.lit import configure
    configure(config, lit_config, __file__, tools={"%mycc-opt": "mycc-opt"})

Tests can then run `%afc-opt`, `%python`, `filecheck`, and the tools named in `tools`.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import Any

SUFFIXES = (".mlir", ".test", ".py")


def configure(
    config: Any,
    lit_config: Any,
    cfg_file: str,
    *,
    tools: Mapping[str, str] | None = None,
    python_path: Sequence[str] = (),
    timeout: int = 120,
) -> None:
    """Set up a lit suite rooted at `cfg_file`'s directory.

    `tools` maps substitutions to console scripts of the running Python's environment (the
    one afc is installed in); `python_path` are directories the tests' Python imports from
    (a downstream package that is not installed). Each test gets at most `timeout` seconds.
    """
    import lit.formats

    root = os.path.dirname(os.path.abspath(cfg_file))
    config.name = config.name if getattr(config, "name", None) else os.path.basename(root)
    config.test_format = lit.formats.ShTest()
    config.suffixes = list(SUFFIXES)
    config.test_source_root = root
    config.excludes = ["lit.cfg", "lit.local.cfg", "Inputs"]

    # the tools of the Python running lit (the virtualenv afc is installed in) come first
    bin_dir = os.path.dirname(sys.executable)
    path = bin_dir + os.pathsep + os.environ.get("PATH", "")
    config.environment["PATH"] = path
    config.environment["PYTHONHASHSEED"] = "0"  # output does not depend on hash order
    extra = [os.path.abspath(p) for p in python_path]
    config.environment["PYTHONPATH"] = os.pathsep.join(
        [*extra, *filter(None, [os.environ.get("PYTHONPATH")])]
    )

    config.substitutions.append(("%python", sys.executable))
    wanted = {"%afc-opt": "afc-opt", "filecheck": "filecheck", **(tools or {})}
    for key, script in wanted.items():
        found = shutil.which(script, path=path)
        if found is None:
            lit_config.fatal(f"{script} is not installed next to {sys.executable}")
        if key != script:  # a bare name needs no substitution, PATH finds it
            config.substitutions.append((key, found))

    _set_timeout(config, lit_config, timeout)


def _set_timeout(config: Any, lit_config: Any, seconds: int) -> None:
    """A hang fails its test instead of the suite (lit needs psutil for timeouts)."""
    try:
        import psutil  # noqa: F401
    except ImportError:
        lit_config.warning("psutil is not installed: no per-test timeout")
        return
    # lit >= 24 sets the timeout on the suite config; older lit on lit_config
    if hasattr(config, "maxIndividualTestTime"):
        config.maxIndividualTestTime = seconds
    else:
        lit_config.maxIndividualTestTime = seconds
