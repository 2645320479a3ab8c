"""Makes afc's dialects, passes and targets visible to the stock `xdsl-opt`.

Registered as the `afc` entry point of the `xdsl.universe` group in pyproject.toml.
Loading it also makes afc's errors one line under those drivers (see
diagnostics.report_uncaught_user_errors).
"""

from xdsl.universe import Universe

from autofusion.codegen import get_all_targets
from autofusion.diagnostics import report_uncaught_user_errors
from autofusion.dialects import get_all_dialects
from autofusion.passes import get_all_passes

# xdsl-opt lets a pass's error escape as a traceback; afc's errors are one line
report_uncaught_user_errors()

AFC_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets=get_all_targets(),
)
