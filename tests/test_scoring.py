"""The F1 protocol on small gold and prediction pairs worked by hand."""

import subprocess
import sys

import pytest
from nltk import Tree

from onparse.structures.scoring import predicted_spans, score, scored_spans, sentence_prf
from onparse.text.treebank import gold_sentence, read_gold


def gold(bracketed: str):
    return gold_sentence(Tree.fromstring(bracketed))


def test_whole_sentence_and_single_words_are_not_scored():
    assert scored_spans({(0, 4), (0, 1), (1, 4), (2, 4)}, 4) == {(1, 4), (2, 4)}


def test_sentence_prf_by_hand():
    p, r, f = sentence_prf({(0, 2), (2, 4)}, {(0, 2), (1, 3), (2, 5)})
    assert (p, r) == (0.5, 1 / 3)
    assert f == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


def test_empty_gold_conventions():
    assert sentence_prf(set(), set()) == (1.0, 1.0, 1.0)
    assert sentence_prf({(0, 2)}, set()) == (0.0, 1.0, 0.0)
    assert sentence_prf(set(), {(0, 2)}) == (0.0, 0.0, 0.0)


def test_one_and_two_word_sentences_score_one():
    one = gold("(S (NP (NN Yes)) (. .))")
    two = gold("(S (NP (PRP We)) (VP (VBD won)))")
    result = score([set(), {(0, 2)}], [one, two])
    assert result["sentence_f1"] == 100.0
    assert result["corpus_f1"] == 0.0  # nothing to count at corpus level


def test_a_tree_of_punctuation_alone_is_no_sentence():
    """Every caller of the scorer counts the same sentences: one with no words would add a free 100 (empty-set rule)."""
    punctuation = gold("(S (. .) (. .))")
    two = gold("(S (NP (NNS Dogs)) (VP (VBP bark) (ADVP (RB loudly))))")
    result = score([set(), {(0, 2)}], [punctuation, two])
    assert result["sentences"] == 1
    assert result["sentence_f1"] == 0.0


def test_sentence_and_corpus_f1_and_label_recall():
    a = gold("(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))))")
    # gold scored spans: NP(0,2) VP(2,6) PP(3,6) NP(4,6)
    b = gold("(S (NP (DT a) (JJ big) (NN dog)) (VP (VBD barked)))")
    # gold scored spans: NP(0,3)
    right = [{(0, 6), (1, 6), (2, 6), (3, 6), (4, 6)}, {(0, 4), (1, 4), (2, 4)}]
    result = score(right, [a, b])
    # a: pred {(1,6),(2,6),(3,6),(4,6)}, overlap 3 -> P 3/4, R 3/4, F1 0.75; b: overlap 0 -> 0
    assert result["sentence_f1"] == pytest.approx(37.5)
    p, r = 3 / 6, 3 / 5
    assert result["corpus_f1"] == pytest.approx(100 * 2 * p * r / (p + r))
    assert result["label_recall"] == pytest.approx({"NP": 100 / 3, "VP": 100.0, "PP": 100.0})
    # by length: all five gold spans have 2-4 words; VP(2,6), PP(3,6) and NP(4,6) found
    assert result["length_recall"] == pytest.approx({"2-4": 60.0})
    assert result["right_branching_agreement"] == pytest.approx(100.0)  # these predictions are right-branching


def test_length_recall_and_right_branching_agreement_by_hand():
    """Gold spans of 2-4, 5-8 and 9+ words are recalled apart; RB is F1 against the right-branching tree."""
    words = " ".join(f"(NN w{k})" for k in range(10))
    ten = gold(f"(S (NP {words}))")  # one whole-sentence span: nothing scored, so add structure by hand
    nested = gold(
        "(S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN e) (NN f) (NN g) (NN h) (NN i) (NN j) (NN k))))"
    )  # scored gold: NP(0,2) 2 words, VP(2,11) 9 words, NP(3,11) 8 words
    left = {(0, 2), (0, 3), (0, 4), (0, 5), (0, 6), (0, 7), (0, 8), (0, 9), (0, 10)}  # left-branching over 11 words
    result = score([left, set()], [nested, ten])
    assert result["length_recall"] == pytest.approx({"2-4": 100.0, "5-8": 0.0, "9+": 0.0})
    assert result["right_branching_agreement"] == pytest.approx(0.0)  # ten's empty tree shares nothing either
    right = {(k, 11) for k in range(1, 10)}
    assert score([right], [nested])["right_branching_agreement"] == pytest.approx(100.0)
    assert score([right], [nested])["length_recall"] == pytest.approx({"2-4": 0.0, "5-8": 100.0, "9+": 100.0})


def test_score_needs_aligned_inputs():
    with pytest.raises(ValueError):
        score([set()], [])


def test_predicted_spans_skip_leaves_outside_the_gold_words():
    tree = Tree.fromstring("(X (X The cat) (X sat .))")
    assert predicted_spans(tree, ("The", "cat", "sat")) == {(0, 3), (0, 2)}
    with pytest.raises(ValueError, match="gold words"):
        predicted_spans(tree, ("A", "cat", "sat"), "pred.txt:1")


def test_scoring_never_imports_torch():
    code = "import sys, onparse.structures.scoring; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_predictions_that_do_not_align_are_refused_or_left_out_and_reported_never_scored(tmp_path):
    from onparse.structures.scoring import score_predictions

    gold_file = tmp_path / "gold.txt"
    gold_file.write_text(
        "(S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .))\n(S (NP (DT the) (NN mat)) (. .))\n(S (. .))\n"
    )
    gold = list(read_gold(str(gold_file)))
    pred = tmp_path / "pred.txt"
    pred.write_text("(X (X the cat) (X sat .))\n(X the (X big mat))\n(X )\n")  # an extra word; a tree of no words
    with pytest.raises(ValueError, match=r"a word the gold lacks: 'big'\); 1 of 2 predictions do not align"):
        score_predictions(str(pred), gold)
    result = score_predictions(str(pred), gold, skip_unaligned=True)
    assert result["aligned"] == 1 and result["sentence_f1"] == 100.0
    assert [(u["sentence"], "'big'" in u["reason"]) for u in result["unaligned"]] == [(2, True)]
    pred.write_text("(X a dog)\n(X the (X big mat))\n(X )\n")
    with pytest.raises(ValueError, match="no prediction aligns"):
        score_predictions(str(pred), gold, skip_unaligned=True)


def test_what_parse_prints_for_a_line_of_punctuation_alone_scores_back(tmp_path):
    from click.testing import CliRunner

    from onparse.cli import main

    gold_file = tmp_path / "gold.txt"
    gold_file.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n(S (. .))\n")
    lines = tmp_path / "lines.txt"
    lines.write_text("the cat sat\n.\n")
    parsed = CliRunner().invoke(main, ["--tokenized", "--no-punct", "-i", str(lines), "-o", str(tmp_path / "pred.txt")])
    assert parsed.exit_code == 0, parsed.output
    scored = CliRunner().invoke(
        main, ["eval", "--gold", str(gold_file), "--pred", str(tmp_path / "pred.txt"), "--json"]
    )
    assert scored.exit_code == 0, scored.output


def test_label_recall_counts_only_the_spans_the_protocol_scores():
    """The whole sentence's label (NP here) is no scored span, so it is neither found nor missed."""
    whole_np = gold("(NP (NP (DT the) (NN cat)) (PP (IN on) (NP (DT the) (NN mat))))")
    right_branching = {(0, 5), (1, 5), (2, 5), (3, 5)}
    assert score([right_branching], [whole_np])["label_recall"] == pytest.approx({"NP": 50.0, "PP": 100.0})


def test_predictions_are_read_as_utf8_whatever_the_golds_encoding(tmp_path):
    import json as json_module

    from click.testing import CliRunner

    from onparse.cli import main

    (tmp_path / "gold.penn").write_bytes("(S (NP (ART Die) (NN Mäuse)) (VVFIN laufen) ($. .))\n".encode("latin-1"))
    (tmp_path / "pred.txt").write_text("(X (X Die Mäuse) laufen .)\n", encoding="utf-8")
    common = [
        "eval",
        "--gold",
        str(tmp_path / "gold.penn"),
        "--encoding",
        "latin-1",
        "--pred",
        str(tmp_path / "pred.txt"),
        "--json",
    ]
    scored = CliRunner().invoke(main, common)
    assert scored.exit_code == 0, scored.stderr
    assert json_module.loads(scored.stdout)["sentences"] == 1
    misread = CliRunner().invoke(main, [*common, "--pred-encoding", "latin-1"])
    assert misread.exit_code != 0  # the same file read as latin-1 no longer holds the gold words


def random_trees(lengths: list[int], seed: int) -> list:
    """A random binary tree's spans for each length."""
    import random

    from onparse.structures.trees import binary_tree, spans

    rng = random.Random(seed)
    return [spans(binary_tree(n, lambda start, end: rng.randrange(start + 1, end))) for n in lengths]


def shaped_trees() -> tuple[list[int], list, list, list]:
    """Sixty sentences' lengths (4-12 words) and their right-branching, left-branching and random trees."""
    from onparse.structures.trees import baseline_spans

    lengths = [4 + k % 9 for k in range(60)]
    return (
        lengths,
        [baseline_spans("right_branching", n) for n in lengths],
        [baseline_spans("left_branching", n) for n in lengths],
        random_trees(lengths, 0),
    )


def test_trees_collapsed_into_one_shape_are_told_without_gold_and_trees_that_follow_their_sentences_are_not():

    from onparse.structures.scoring import collapsed_shape
    from onparse.structures.trees import baseline_spans

    lengths, right, left, varied = shaped_trees()
    one_a_length = [baseline_spans("balanced", n) for n in lengths]
    assert collapsed_shape(right, lengths) == "right-branching" and collapsed_shape(left, lengths) == "left-branching"
    assert collapsed_shape(one_a_length, lengths) == "one tree a length"
    assert collapsed_shape(varied, lengths) is None
    mostly = right[:50] + varied[50:]  # five in six right-branching: under the share that says collapsed
    assert collapsed_shape(mostly, lengths) is None and collapsed_shape(right[:9], lengths[:9]) is None


def test_a_vote_that_moved_toward_a_fixed_shape_past_its_teacher_is_told_by_how_far_without_gold():

    from onparse.structures.scoring import shape_agreement, shape_drift

    lengths, right, left, varied = shaped_trees()
    assert shape_agreement(right, lengths)["right-branching"] == 100
    assert shape_agreement(left, lengths) == {
        "right-branching": pytest.approx(shape_agreement(right, lengths)["left-branching"]),
        "left-branching": 100,
    }
    assert shape_drift(varied, varied, lengths) == 0
    partly = right[:30] + varied[30:]  # half its trees right-branching: nearer that shape by what they gained
    gained = shape_agreement(partly, lengths)["right-branching"] - shape_agreement(varied, lengths)["right-branching"]
    assert shape_drift(partly, varied, lengths) == pytest.approx(gained) and gained > 10
    assert shape_drift(varied[:30] + left[30:], right[:30] + varied[30:], lengths) > 10  # toward the other shape
    assert shape_agreement([], []) == {"right-branching": 0, "left-branching": 0}


def test_the_models_shape_check_keeps_a_vote_that_moved_as_sound_students_did_and_catches_one_collapsed_voter():

    from onparse.structures.scoring import SHAPE_DRIFT, shape_drift
    from onparse.structures.trees import spans
    from onparse.structures.voting import average

    lengths, right, _, varied = shaped_trees()
    # a tenth of its trees right-branching: about the 5.9 points a sound German students' vote moved
    assert shape_drift(right[:6] + varied[6:], varied, lengths) <= SHAPE_DRIFT

    def vote(members: list) -> list:
        return [spans(average([member[i] for member in members], n)[0]) for i, n in enumerate(lengths)]

    six = [random_trees(lengths, seed) for seed in range(6)]
    assert shape_drift(vote([*six, random_trees(lengths, 9)]), vote(six), lengths) <= SHAPE_DRIFT
    assert shape_drift(vote([*six, right]), vote(six), lengths) > SHAPE_DRIFT  # one collapsed voter in seven
