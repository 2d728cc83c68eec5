"""Using onparse from Python: parse, read distances, score. Runs from any folder."""

import numpy
from nltk import Tree

import onparse
from onparse.store.shipped import install_hint, installed_names
from onparse.structures.scoring import score
from onparse.structures.trees import spans
from onparse.text.treebank import gold_sentence

parser = onparse.load()  # the shipped default, one grammar; onparse.load("onlstm-negra"), or a model directory's path
for parse in parser.parse_sents(["The cat sat on the mat.", "Stocks fell sharply on Friday."]):
    print(parse.bracket())
    # each constituent's confidence: its span marginal under the grammar (in a vote, its share of the votes)
    print("  confidence:", [round(parse.confidence(span), 2) for span in parse.constituent_spans()])
    print("  as JSON:", sorted(parse.to_dict()))

# An ON-LSTM's syntactic distances: tree_distances has one row per member (NaN for a grammar, whose tree comes from
# its span marginals). onlstm-wsj is its own package: `pip install .` gives the default alone (the README installs it)
if "onlstm-wsj" in installed_names():
    voters = onparse.load("onlstm-wsj").parse("The cat sat on the mat.")
    rows = voters.tree_distances[~numpy.isnan(voters.tree_distances).any(axis=1)]
    print(voters.bracket(), "distances:", rows.mean(axis=0).round(3).tolist())
else:
    print("distances: onlstm-wsj is not installed here:", install_hint("onlstm-wsj"))

gold = [
    gold_sentence(Tree.fromstring(tree))
    for tree in [
        "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
        "(S (NP (NNS Stocks)) (VP (VBD fell) (ADVP (RB sharply)) (PP (IN on) (NP (NNP Friday)))) (. .))",
    ]
]
parses = parser.parse_sents([list(sentence.tokens) for sentence in gold])  # token lists, taken as given
print(score([spans(parse.words_tree) for parse in parses], gold))
