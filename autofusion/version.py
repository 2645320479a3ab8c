"""afc's version: the installed distribution's (pyproject.toml's)."""

from __future__ import annotations


def package_version() -> str:
    """The installed distribution's version, or "0+unknown" when the package runs from a
    checkout that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("afc")
    except PackageNotFoundError:
        return "0+unknown"
