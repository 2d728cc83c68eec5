"""Checks on the Penn Treebank in ../shared/data/ptb (skipped where it is absent)."""

import json

import pytest

from conftest import ptb_section
from onparse.evaluate import evaluate_parser
from onparse.scoring import baseline_scores
from onparse.modeldir import DEFAULT_MODEL
from onparse.parse import Parser
from onparse.treebank import read_gold

pytestmark = pytest.mark.data


def test_right_branching_on_section_22_matches_the_published_figure():
    gold = list(read_gold(str(ptb_section("22"))))
    assert len(gold) == 1700
    assert baseline_scores(gold)["right_branching"]["sentence_f1"] == pytest.approx(38.7, abs=0.05)


@pytest.mark.slow
def test_shipped_model_reproduces_its_card_on_section_22():
    gold = list(read_gold(str(ptb_section("22"))))
    card = json.loads((DEFAULT_MODEL / "card.json").read_text())
    result = evaluate_parser(Parser.load(), gold, untrained_seed=None)
    for layer, figures in card["dev"]["section_22"]["layers"].items():
        assert result["layers"][layer]["sentence_f1"] == pytest.approx(figures["sentence_f1"], abs=0.05)
        assert result["layers"][layer]["corpus_f1"] == pytest.approx(figures["corpus_f1"], abs=0.05)
