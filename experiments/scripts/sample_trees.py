"""A random sample of a treebank's sentences as one .mrg file: the text-size curve (how dev F1 grows with the text).

    python scripts/sample_trees.py ../shared/data/ctb/29 runs/text-size/ctb-10k.mrg --sentences 10000
    onparse train --train runs/text-size/ctb-10k.mrg --dev ../shared/data/ctb/30 --language zh ...

Training reads only a tree's leaves, so a sample kept as trees keeps the
treebank's own words and punctuation (no tokenizer in between). The sample
is derived from the treebank: write it under runs/, never into git. An
existing output is left alone.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from onparse.text.treebank import read_trees, tree_files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("treebank", help="a file, folder or glob of bracketed trees")
    parser.add_argument("out", type=Path, help="the .mrg file to write (must not exist)")
    parser.add_argument("--sentences", type=int, required=True, help="how many trees to keep")
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--encoding", default="UTF-8")
    args = parser.parse_args()
    if args.out.exists():
        parser.error(f"{args.out} exists: choose another name")
    trees = [tree for file in tree_files(args.treebank) for tree, _ in read_trees(file, args.encoding)]
    if args.sentences > len(trees):
        parser.error(f"{args.treebank} holds {len(trees)} trees, fewer than --sentences {args.sentences}")
    kept = sorted(random.Random(args.seed).sample(range(len(trees)), args.sentences))  # in corpus order
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "x", encoding="UTF-8") as out:
        out.writelines(trees[k].pformat(margin=1 << 30) + "\n" for k in kept)
    print(f"{args.out}: {len(kept)} of {len(trees)} trees (seed {args.seed})")


if __name__ == "__main__":
    main()
