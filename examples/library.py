"""Using onparse from Python: parse, read distances, score."""

import onparse
from onparse.formats import bracket
from onparse.scoring import score
from onparse.treebank import read_gold
from onparse.trees import spans

parser = onparse.load()  # the shipped model; onparse.load("path/to/model", layer=3) for others
for parse in parser.parse_sents(["The cat sat on the mat.", "Stocks fell sharply on Friday."]):
    print(bracket(parse))
    # tree_distances: one row per member (one row for a single model), the distances its tree was built from
    print("  distances:", parse.tree_distances.mean(axis=0).round(3).tolist())

gold = list(read_gold("tests/fixtures/one_per_line.txt"))
parses = parser.parse_sents([list(s.words) for s in gold])  # token lists, taken as given
print(score([spans(p.words_tree) for p in parses], gold))
