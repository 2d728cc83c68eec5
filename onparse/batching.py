"""Length-sorted batches over any stream, so padding and packing waste little work.

Pure Python: the parser, the command line and evaluation all batch through
``sorted_batches``, and restore input order with ``in_input_order``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def sorted_batches(
    items: Iterable[Item], batch_size: int, length: Callable[[Item], int], window: int | None = None
) -> Iterator[list[tuple[int, Item]]]:
    """Batches of ``(position, item)``, longest first, reading ``window`` items at a time.

    Items are read lazily, so a stream of any length batches in bounded
    memory; within each window of ``window`` items (default: ``batch_size``)
    they are sorted by decreasing ``length`` and cut into batches of at most
    ``batch_size``. Positions count from 0 over the whole stream.
    """
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    window = max(window or batch_size, 1)
    numbered = enumerate(items)
    while chunk := list(islice(numbered, window)):
        chunk.sort(key=lambda pair: -length(pair[1]))  # stable: equal lengths keep their order
        for start in range(0, len(chunk), batch_size):
            yield chunk[start : start + batch_size]


def in_input_order(batches: Iterable[list[tuple[int, Result]]]) -> Iterator[Result]:
    """Results of ``sorted_batches``'s batches, yielded by position as soon as each is due."""
    waiting: dict[int, Result] = {}
    due = 0
    for batch in batches:
        waiting.update(batch)
        while due in waiting:
            yield waiting.pop(due)
            due += 1
    if waiting:
        raise ValueError(f"positions missing before {min(waiting)}")
