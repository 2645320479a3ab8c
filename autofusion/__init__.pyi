"""Types of afc's embedding API: __init__.py loads these names lazily (`X as X` marks a
re-export, PEP 484)."""

from autofusion.codegen import get_all_targets as get_all_targets
from autofusion.diagnostics import SourceLocation as SourceLocation
from autofusion.diagnostics import UserError as UserError
from autofusion.diagnostics import op_location as op_location
from autofusion.dialects import get_all_dialects as get_all_dialects
from autofusion.dialects.buffer import Buffer as Buffer
from autofusion.dialects.graph import Graph as Graph
from autofusion.mlir_io import default_context as default_context
from autofusion.mlir_io import module_to_text as module_to_text
from autofusion.mlir_io import parse_module as parse_module
from autofusion.passes import get_all_passes as get_all_passes
from autofusion.passes.graph_fusion import GraphFusionPass as GraphFusionPass
from autofusion.passes.lower_to_buffer import LowerToBufferPass as LowerToBufferPass
from autofusion.passes.set_target import SetTargetPass as SetTargetPass
from autofusion.passes.split_fusion import SplitFusionPass as SplitFusionPass
from autofusion.passes.ub_fusion import UbFusionPass as UbFusionPass
from autofusion.tools.afc_opt import AfcOptMain as AfcOptMain
from autofusion.tools.afc_opt import run_opt as run_opt
from autofusion.universe import AFC_UNIVERSE as AFC_UNIVERSE

__version__: str
