"""afc: an operator auto-fusion compiler for Huawei Ascend NPUs, built on xDSL.

The names below are afc's embedding API (docs/embedding.md); everything else is internal.
They load on first use, so `import autofusion` stays as cheap as an empty package, and
this module imports none of afc's modules: every module of afc and frontends/ loads this
package first, so an import here would be a cycle. Their types are in __init__.pyi (the
lazy-loading layout of Scientific Python's SPEC 1), which type checkers read instead.
"""

# public name -> module that defines it
_API: dict[str, str] = {
    # contexts, parsing and printing
    "default_context": "autofusion.mlir_io",
    "parse_module": "autofusion.mlir_io",
    "module_to_text": "autofusion.mlir_io",
    # registries: dialects, passes and targets by name, and the xdsl.universe entry
    "get_all_dialects": "autofusion.dialects",
    "get_all_passes": "autofusion.passes",
    "get_all_targets": "autofusion.codegen",
    "AFC_UNIVERSE": "autofusion.universe",
    # the dialects
    "Graph": "autofusion.dialects.graph",
    "Buffer": "autofusion.dialects.buffer",
    # the passes
    "SetTargetPass": "autofusion.passes.set_target",
    "GraphFusionPass": "autofusion.passes.graph_fusion",
    "SplitFusionPass": "autofusion.passes.split_fusion",
    "UbFusionPass": "autofusion.passes.ub_fusion",
    "LowerToBufferPass": "autofusion.passes.lower_to_buffer",
    # the afc-opt driver, to subclass, and the command-line wrapper that runs it
    "AfcOptMain": "autofusion.tools.afc_opt",
    "run_opt": "autofusion.tools.afc_opt",
    # errors
    "UserError": "autofusion.diagnostics",
    "SourceLocation": "autofusion.diagnostics",
    "op_location": "autofusion.diagnostics",
}

__all__ = [
    "AFC_UNIVERSE",
    "AfcOptMain",
    "Buffer",
    "Graph",
    "GraphFusionPass",
    "LowerToBufferPass",
    "SetTargetPass",
    "SourceLocation",
    "SplitFusionPass",
    "UbFusionPass",
    "UserError",
    "__version__",
    "default_context",
    "get_all_dialects",
    "get_all_passes",
    "get_all_targets",
    "module_to_text",
    "op_location",
    "parse_module",
    "run_opt",
]


def __getattr__(name: str) -> object:
    if name == "__version__":
        from autofusion.version import package_version

        value: object = package_version()
    elif name in _API:
        import importlib

        value = getattr(importlib.import_module(_API[name]), name)
    else:
        raise AttributeError(f"module 'autofusion' has no attribute {name!r}")
    globals()[name] = value  # later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
