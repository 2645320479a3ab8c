"""The fusion library: which ops may share a kernel, how long a kernel takes, and the
grouping of a function into kernels under one policy.

- legality.py: fusion kinds and the UBFusion rules, the templates' capacity check, the
  cycle check;
- cost.py: `KernelCost`, the roofline `kernel_time`, per-op costs of library ops, and
  `Refusal`, the reason a candidate is not taken;
- partition.py: the one `Partitioner` and its `FusionPolicy`;
- view_placement.py: after the merges, a view chain moves to its producer where it pays.

The passes are thin drivers over it: ub-fusion (passes/ub_fusion.py) partitions and
outlines, split-fusion's cost gate (passes/rules/split_cost.py) partitions a scratch copy
with the same policy. This package imports nothing itself, so importing one of its
modules loads only what that module needs.
"""
