"""afc's dialects, registered lazily (a factory per name) like xDSL's own."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_graph() -> Dialect:
    from autofusion.dialects.graph import Graph

    return Graph


def get_buffer() -> Dialect:
    from autofusion.dialects.buffer import Buffer

    return Buffer


def get_afc() -> Dialect:
    from autofusion.dialects.target import Afc

    return Afc


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """afc's dialects by name."""
    return {"graph": get_graph, "buffer": get_buffer, "afc": get_afc}
