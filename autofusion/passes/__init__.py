"""afc's passes by name, each behind a factory so that importing this is cheap."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """afc's passes by their pipeline names."""
    return {}
