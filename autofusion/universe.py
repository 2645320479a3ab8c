"""Makes afc's dialects, passes and targets visible to the stock `xdsl-opt`.

Registered as the `afc` entry point of the `xdsl.universe` group in pyproject.toml.
"""

from xdsl.universe import Universe

from autofusion.codegen import get_all_targets
from autofusion.dialects import get_all_dialects
from autofusion.passes import get_all_passes

AFC_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets=get_all_targets(),
)
