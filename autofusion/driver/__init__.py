"""`afc compile` and `afc explain`: the whole pipeline, from a model file to kernels.

compile.py runs the stages (import, graph fusion, split fusion, UB fusion, ONNX export,
lowering, code generation) and writes the output directory atomically; the other
modules render its outputs (report.md, graph.dot), check its numerics and explain its
decisions.
"""
