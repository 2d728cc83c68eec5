"""Writing files and folders so that an interrupted run never leaves a half-written one where a good one stood.

Everything is written beside its target under a temporary name and moved
into place only once complete. Targets that are not regular files (a
terminal, /dev/null, a pipe) are written directly: there is nothing to protect.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def is_special(path: Path) -> bool:
    """True for an existing target that is not a regular file or folder (a device, a pipe)."""
    return path.exists() and not (path.is_file() or path.is_dir())


@contextmanager
def replacing_file(path: Path, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text file to write; it replaces ``path`` when the block ends without an exception."""
    if is_special(path):
        with open(path, "w", encoding=encoding) as direct:
            yield direct
        return
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "w", encoding=encoding) as file:
            yield file
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def replacing_folder(path: Path) -> Iterator[Path]:
    """A new folder to fill; it replaces the folder ``path`` when the block ends without an exception."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part"))
    try:
        yield temporary
        if path.exists():
            old = temporary.with_suffix(".old")
            path.rename(old)
            temporary.rename(path)
            shutil.rmtree(old)
        else:
            temporary.rename(path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when two paths name one existing file (also through links or other spellings)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
