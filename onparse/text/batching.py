"""Length-sorted batches over any stream, so padding and packing waste little work.

Pure Python: the parser, the command line and evaluation all batch through
``sorted_batches``, and restore input order with ``in_input_order``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def sorted_batches(
    items: Iterable[Item],
    batch_size: int,
    length: Callable[[Item], int],
    window: int | None = None,
    max_tokens: int | None = None,
    window_tokens: int | None = None,
) -> Iterator[list[tuple[int, Item]]]:
    """Batches of ``(position, item)``, longest first, reading a window of items at a time.

    Items are read lazily, so a stream of any length batches in bounded
    memory; where reading the stream fails, the items read before the
    failure are batched first, then the error is raised. A window closes at ``window`` items (default:
    ``batch_size``) or
    once its items' lengths (each counted as at least 1) reach
    ``window_tokens``; within it items are sorted by decreasing ``length``
    and cut into batches of at most ``batch_size`` items and ``max_tokens``
    in length (an item longer than that has a batch of its own). Positions
    count from 0 over the whole stream.
    """
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    window = max(window or batch_size, 1)
    numbered = enumerate(items)
    while True:
        chunk: list[tuple[int, int, Item]] = []
        tokens = 0
        failure = None
        try:
            for position, item in numbered:
                size = length(item)
                chunk.append((size, position, item))
                tokens += max(size, 1)
                if len(chunk) >= window or (window_tokens is not None and tokens >= window_tokens):
                    break
        except Exception as err:  # the stream's own error, raised once what came before it is done
            failure = err
        if not chunk and failure is None:
            return
        chunk.sort(key=lambda entry: -entry[0])  # stable: equal lengths keep their order
        batch: list[tuple[int, Item]] = []
        batch_tokens = 0
        for size, position, item in chunk:
            if batch and (len(batch) >= batch_size or (max_tokens is not None and batch_tokens + size > max_tokens)):
                yield batch
                batch, batch_tokens = [], 0
            batch.append((position, item))
            batch_tokens += size
        if batch:
            yield batch
        if failure is not None:
            raise failure


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
