"""The word list that maps normalized words to the model's ids."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from onparse.text.tokenize import FULL_WIDTH

UNK = "<unk>"
EOS = "<eos>"


class Vocabulary:
    """Ids for normalized words; unknown words map to ``<unk>``, sentences end in ``<eos>``."""

    def __init__(self, words: list[str]):
        self.words = list(words)
        rows = {w: i for i, w in enumerate(self.words)}
        if len(rows) != len(self.words):
            twice = next(w for i, w in enumerate(self.words) if rows[w] != i)
            raise ValueError(f"the word {twice!r} is listed twice (each word has one row)")
        # Words as normalize() now spells them: a list written before full-width forms were folded (ｗｔｏ) is read
        # as ASCII too, the first (more frequent) row winning where both spellings were listed
        self.index: dict[str, int] = {}
        for i, w in enumerate(self.words):
            self.index.setdefault(w.translate(FULL_WIDTH), i)
        if UNK not in self.index or EOS not in self.index:
            raise ValueError(f"a vocabulary needs {UNK} and {EOS}")
        self.unk_id = self.index[UNK]
        self.eos_id = self.index[EOS]

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def ids(self, words: Iterable[str]) -> list[int]:
        return [self.index.get(w, self.unk_id) for w in words]

    @classmethod
    def build(cls, sentences: Iterable[list[str]], size: int) -> "Vocabulary":
        """The ``size`` most frequent words (ties broken alphabetically), plus the two specials."""
        counts = Counter(w for sentence in sentences for w in sentence)
        for special in (UNK, EOS):
            counts.pop(special, None)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return cls([EOS, UNK] + [w for w, _ in ranked[: size - 2]])

    def save(self, path: Path) -> None:
        path.write_text("\n".join(self.words) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> "Vocabulary":
        return cls(path.read_text(encoding="utf-8").split("\n")[:-1])
