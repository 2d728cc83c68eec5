"""Writing files and folders so that an interrupted run never leaves a half-written one where a good one stood.

Everything is written beside its target under a temporary name and moved
into place only once complete. Targets that are not regular files (a
terminal, /dev/null, a pipe) are written directly: there is nothing to protect.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def is_special(path: Path) -> bool:
    """True for an existing target that is not a regular file or folder (a device, a pipe)."""
    return path.exists() and not (path.is_file() or path.is_dir())


def check_writable(path: Path) -> None:
    """OSError, before any work, for an output that cannot be written where it is: no such folder, or a file or
    folder its owner protected from writing (a shell's ``>`` refuses those too)."""
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise FileNotFoundError(2, "no such folder", str(path.parent))
    if (
        target.exists()
        and not os.access(target, os.W_OK)
        or not target.exists()
        and not os.access(target.parent, os.W_OK)
    ):
        raise PermissionError(13, "write-protected", str(path))


@contextmanager
def replacing_file(path: Path, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text file to write; it replaces ``path`` when the block ends without an exception.

    A symbolic link is written through (the file it points to is replaced;
    the link stays), a file with other hard links is written in place (so
    every name keeps seeing it), and the file keeps its permissions (a new
    one gets the usual ones, 0666 less the umask). SIGTERM while writing ends the process
    (exit 143) after removing the unfinished file, as Ctrl-C does through
    KeyboardInterrupt.
    """
    target = Path(os.path.realpath(path))
    if is_special(target) or (target.is_file() and target.stat().st_nlink > 1):
        with open(target, "w", encoding=encoding) as direct:
            yield direct
        return
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~_umask()
    remove_abandoned(target)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=_temporary_prefix(target), suffix=".part")
    try:
        with _terminated_on_sigterm():
            with os.fdopen(handle, "w", encoding=encoding) as file:
                yield file
            os.chmod(temporary, mode)
            os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _temporary_prefix(target: Path) -> str:
    """Where a temporary copy of ``target`` is written: beside it, hidden, named by the process writing it."""
    return f".{target.name}.{os.getpid()}."


def remove_abandoned(target: Path) -> None:
    """Remove the temporary copies of ``target`` that processes no longer running left behind (``kill -9``, a
    power cut): ``.NAME.PID.*.part``, and ``.old`` where ``target`` itself stands again."""
    pattern = re.compile(re.escape(f".{target.name}.") + r"(\d+)\.[^/]*\.(part|old)")
    for entry in target.parent.glob(f".{glob.escape(target.name)}.*"):
        found = pattern.fullmatch(entry.name)
        if not found or _running(int(found[1])) or found[2] == "old" and not target.exists():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process: theirs to clean up
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def _terminated_on_sigterm() -> Iterator[None]:
    """SIGTERM (and SIGHUP, a closed terminal or ssh session) raise SystemExit(128 + the signal) inside the block,
    so ``finally`` and ``except`` clauses run and nothing half-written stays behind (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(number, frame) -> None:
        raise SystemExit(128 + number)

    previous = {number: signal.signal(number, terminate) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class OutputTaken(FileExistsError):
    """An output folder that another process is writing, or that appeared while this one wrote its own."""

    def __str__(self) -> str:  # the folder, then why: a user's line, not "[Errno 17] ..."
        return f"{self.filename}: {self.strerror}"


@contextmanager
def replacing_folder(path: Path, new: bool = False) -> Iterator[Path]:
    """A new folder to fill; it replaces the folder ``path`` when the block ends without an exception.

    The folder keeps the mode of the one it replaces (a new one gets the
    usual 0777 less the umask); SIGTERM, like Ctrl-C, removes the unfinished one.
    ``new``: ``path`` is claimed as a new output, the one way every command
    holds its output folder against a second writer: ``OutputTaken`` at once
    where it exists or another running process is writing it, and at the end
    where it appeared meanwhile (nothing of either writer is lost).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.is_dir() else 0o777 & ~_umask()
    remove_abandoned(path)
    if new and (path.exists() or path.is_symlink()):
        raise OutputTaken(17, "exists: choose another --out", str(path))
    temporary = Path(tempfile.mkdtemp(dir=path.parent, prefix=_temporary_prefix(path), suffix=".part"))
    try:
        if new and any(other != temporary for other in _written_by_running(path)):
            raise OutputTaken(
                17, "another onparse process is writing it: wait for it, or choose another --out", str(path)
            )
        with _terminated_on_sigterm():
            yield temporary
        os.chmod(temporary, mode)
        if new and (path.exists() or path.is_symlink()):
            raise OutputTaken(
                17, "was written by another process meanwhile: nothing of it replaced; choose another --out", str(path)
            )
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


def _written_by_running(target: Path) -> list[Path]:
    """The unfinished copies of ``target`` that running processes are writing (``.NAME.PID.*.part``)."""
    pattern = re.compile(re.escape(f".{target.name}.") + r"(\d+)\.[^/]*\.part")
    return [
        entry
        for entry in target.parent.glob(f".{glob.escape(target.name)}.*")
        if (found := pattern.fullmatch(entry.name)) and _running(int(found[1]))
    ]


def same_file(a: str | Path | IO, b: str | Path) -> bool:
    """True when two paths (or an open stream and a path) name one existing file (also through links or other
    spellings); False for a stream without a file behind it."""
    try:
        first = os.fstat(a.fileno()) if hasattr(a, "fileno") else os.stat(a)
        return os.path.samestat(first, os.stat(b))
    except (OSError, ValueError):
        return False
