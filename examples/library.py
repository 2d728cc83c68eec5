"""Using onparse from Python: parse, read distances, score."""

from onparse.formats import bracket
from onparse.parse import Parser
from onparse.scoring import score
from onparse.treebank import read_gold
from onparse.trees import spans

parser = Parser.load()  # the shipped model; Parser.load("path/to/model", layer=3) for others
for parse in parser.parse(["The cat sat on the mat.", "Stocks fell sharply on Friday."]):
    print(bracket(parse))
    print("  layer", parse.layer, "distances:", parse.distances[parse.layer - 1].round(3).tolist())

gold = list(read_gold("tests/fixtures/one_per_line.txt"))
parses = parser.parse_tokens([list(s.words) for s in gold])
print(score([spans(p.words_tree) for p in parses], gold))
