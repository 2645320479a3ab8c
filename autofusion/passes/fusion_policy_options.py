"""The pass options that make the fusion library's policy (fusion/partition.py).

ub-fusion and split-fusion take the same options and build the policy in the same
place, so split-fusion's cost gate estimates with the grouping ub-fusion will run:

    afc-opt m.mlir -p 'split-fusion{max-inputs=32},ub-fusion{max-inputs=32}'

`afc compile -O N` passes both the caps of its level (driver/pipeline.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from autofusion.diagnostics import UserError
from autofusion.fusion.partition import FusionPolicy
from autofusion.passes.rule_registry import read_switch


@dataclass(frozen=True)
class FusionPolicyOptions:
    """The policy's options, as fields of a pass (`ub-fusion{max-ops=64}`)."""

    max_ops: int = FusionPolicy.max_ops
    """At most this many ops per kernel (large kernels compile slowly; TVM caps at 256)."""
    max_inputs: int = FusionPolicy.max_inputs
    """At most this many GM inputs per kernel (the chip's queue limits also apply)."""
    dynamic_size: int = FusionPolicy.dynamic_size
    """The size the cost model assumes for dynamic dimensions."""
    switch_file: str | None = None
    """CANN fusion switch file (JSON or `Name:off` lines); its UBFusion section turns the
    grouping or its rules off (split-fusion's own rules are in its GraphFusion section)."""

    def fusion_policy(self) -> FusionPolicy:
        """The policy these options give; a one-line error for a bad option."""
        switch = read_switch(self.switch_file)
        if self.max_ops < 1 or self.max_inputs < 1:
            raise UserError("max-ops and max-inputs must be at least 1")
        if self.dynamic_size < 1:
            raise UserError("dynamic-size must be at least 1")
        return FusionPolicy(self.max_ops, self.max_inputs, self.dynamic_size, switch)
