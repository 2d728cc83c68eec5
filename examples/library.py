"""Using onparse from Python: parse, read distances, score. Runs from any folder."""

import numpy
from nltk import Tree

import onparse
from onparse.scoring import score
from onparse.treebank import gold_sentence
from onparse.trees import spans

parser = onparse.load()  # the shipped default; onparse.load("onlstm-negra"), or a model directory's path, for others
for parse in parser.parse_sents(["The cat sat on the mat.", "Stocks fell sharply on Friday."]):
    print(parse.bracket())
    # tree_distances: one row per member, the distances its tree was built from (NaN for a grammar, whose tree comes
    # from its span marginals); the ON-LSTM members' mean, and each constituent's share of the votes
    rows = parse.tree_distances[~numpy.isnan(parse.tree_distances).any(axis=1)]
    print("  distances:", rows.mean(axis=0).round(3).tolist() if len(rows) else "none (no ON-LSTM member)")
    print("  confidence:", [round(parse.confidence(span), 2) for span in parse.constituent_spans()])
    print("  as JSON:", sorted(parse.to_dict()))

gold = [gold_sentence(Tree.fromstring(tree)) for tree in [
    "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
    "(S (NP (NNS Stocks)) (VP (VBD fell) (ADVP (RB sharply)) (PP (IN on) (NP (NNP Friday)))) (. .))"]]
parses = parser.parse_sents([list(sentence.tokens) for sentence in gold])  # token lists, taken as given
print(score([spans(parse.words_tree) for parse in parses], gold))
