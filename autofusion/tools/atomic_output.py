"""Outputs that appear whole or not at all.

A tool writes into a temporary sibling of its output and renames it into place only
when it succeeds, so a failed run never leaves a partial file or directory behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_OUTPUT_FLAGS = ("-o", "--output-file")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path; on success it replaces `path`, on failure it is removed."""
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(target))
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(2, "No such directory", str(parent))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates 0600 files; an output gets the permissions a plain open() gives
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary directory; on success it replaces `path`."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        if target.exists():
            backup = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=parent))
            backup.rmdir()
            os.replace(target, backup)
            os.replace(tmp, target)
            shutil.rmtree(backup, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def split_output_flag(args: Sequence[str]) -> tuple[list[str], str | None]:
    """Remove `-o X` / `--output-file[=]X` from CLI args; return the rest and X."""
    rest: list[str] = []
    output: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _OUTPUT_FLAGS and i + 1 < len(args):
            output = args[i + 1]
            i += 2
            continue
        if arg.startswith("--output-file="):
            output = arg.split("=", 1)[1]
        elif arg.startswith("-o") and len(arg) > 2 and not arg.startswith("--"):
            output = arg[2:]
        else:
            rest.append(arg)
        i += 1
    return rest, output
