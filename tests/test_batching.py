"""Length-sorted batches over streams, and putting results back in input order."""

import pytest

from onparse.text.batching import in_input_order, sorted_batches


def test_batches_are_sorted_longest_first_within_each_window():
    items = ["aa", "a", "aaaa", "aaa", "a", "aaaaa"]
    batches = list(sorted_batches(items, batch_size=2, length=len, window=4))
    assert batches == [[(2, "aaaa"), (3, "aaa")], [(0, "aa"), (1, "a")], [(5, "aaaaa"), (4, "a")]]


def test_equal_lengths_keep_their_order_and_the_window_defaults_to_a_batch():
    assert list(sorted_batches("abcd", batch_size=3, length=lambda _: 1)) == [
        [(0, "a"), (1, "b"), (2, "c")],
        [(3, "d")],
    ]


def test_streams_are_read_lazily():
    def endless():
        n = 0
        while True:
            yield "x" * (n % 7)
            n += 1

    first = next(sorted_batches(endless(), batch_size=3, length=len, window=6))
    assert [position for position, _ in first] == [5, 4, 3]


def test_results_come_back_in_input_order_as_soon_as_they_are_due():
    items = ["ccc", "a", "bb", "dddd", "e"]
    seen = []

    def run(batch):
        seen.append([position for position, _ in batch])
        return [(position, item.upper()) for position, item in batch]

    results = in_input_order(map(run, sorted_batches(items, batch_size=2, length=len, window=3)))
    assert next(results) == "CCC" and seen == [[0, 2]]  # due once the first batch is done
    assert list(results) == ["A", "BB", "DDDD", "E"]


def test_bad_batch_size():
    with pytest.raises(ValueError):
        next(sorted_batches([1], batch_size=0, length=int))
