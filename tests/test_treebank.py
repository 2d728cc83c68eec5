"""Reading gold trees in LDC and one-tree-per-line layouts."""

import pytest
from conftest import FIXTURES

from onparse.text.treebank import RULES, TreebankError, read_gold, tree_files


def test_ldc_file_drops_punctuation_and_empty_elements_and_strips_function_tags():
    first, second = read_gold(str(FIXTURES / "ldc_style.mrg"))
    assert first.words == ("The", "old", "lighthouse", "stood", "on", "the", "cliff")
    assert set(first.labeled) == {("S", 0, 7), ("NP", 0, 3), ("VP", 3, 7), ("PP", 4, 7), ("NP", 5, 7)}
    assert second.words == ("Gulls", "were", "seen", "near", "it", "today")
    assert ("VP", 1, 5) in second.labeled and ("VP", 2, 5) in second.labeled and ("PP", 3, 5) in second.labeled
    assert first.source.endswith("ldc_style.mrg:1") and second.source.endswith("ldc_style.mrg:7")


def test_one_tree_per_line():
    sentences = list(read_gold(str(FIXTURES / "one_per_line.txt")))
    assert [s.words for s in sentences] == [("The", "cat", "sat", "on", "the", "mat"), ("She", "ran"), ("Hello",)]
    assert sentences[1].spans == {(0, 2)}
    assert sentences[2].spans == frozenset()


def test_malformed_tree_names_file_and_line():
    with pytest.raises(TreebankError, match=r"malformed\.mrg:2"):
        list(read_gold(str(FIXTURES / "malformed.mrg")))


def test_non_utf8_and_missing_paths(tmp_path):
    bad = tmp_path / "bad.mrg"
    bad.write_bytes(b"( (S (NN caf\xe9)) )\n")
    with pytest.raises(TreebankError, match="not UTF-8"):
        list(read_gold(str(bad)))
    with pytest.raises(TreebankError, match="no such file"):
        tree_files(str(tmp_path / "nothing*.mrg"))
    with pytest.raises(TreebankError, match="no .mrg files"):
        tree_files(str(tmp_path / "empty_dir" if (tmp_path / "empty_dir").mkdir() is None else ""))


def test_folders_are_searched_recursively_and_globs_expand(tmp_path):
    (tmp_path / "23").mkdir()
    (tmp_path / "23" / "wsj_2300.mrg").write_text((FIXTURES / "ldc_style.mrg").read_text())
    assert len(list(read_gold(str(tmp_path)))) == 2
    assert len(list(read_gold(str(tmp_path / "2*")))) == 2


def test_text_outside_trees_is_an_error(tmp_path):
    stray = tmp_path / "stray.mrg"
    stray.write_text("(S (NN a))\nhello\n")
    with pytest.raises(TreebankError, match="stray.mrg:2"):
        list(read_gold(str(stray)))


def test_line_numbers_in_long_files(tmp_path):
    many = tmp_path / "many.txt"
    many.write_text("(S (NN a) (NN b))\n" * 999 + "\n(S (NN c))\n) stray\n")
    trees = []
    with pytest.raises(TreebankError, match=r"many\.txt:1002: text outside any tree"):
        for tree in read_gold(str(many)):
            trees.append(tree)
    assert len(trees) == 1000 and trees[998].source.endswith(":999") and trees[999].source.endswith(":1001")


def test_a_node_of_bare_words_is_refused_with_its_file_and_line(tmp_path):
    odd = tmp_path / "odd.mrg"
    odd.write_text("(S (NN a))\n(S (NP the cat) (VP (VBD sat)))\n")
    with pytest.raises(TreebankError, match=r"odd\.mrg:2: 'the' is not the only child"):
        list(read_gold(str(odd)))


def test_a_misplaced_label_beside_constituents_is_no_word(tmp_path):
    ctb = tmp_path / "ctb.mrg"  # as in the released CTB: an unlabeled bracket whose label follows its first child
    ctb.write_text(
        "((IP (CP ((WHNP (-NONE- *OP*)) CP (IP (NP (NN 地方) (NN 当局)) (VP (VV 组织))))) (PU 。)))\n", encoding="utf-8"
    )
    (sentence,) = read_gold(str(ctb), RULES["ctb"])
    assert sentence.words == ("地方", "当局", "组织") and (0, 2) in sentence.spans


def test_the_fast_reader_reads_what_nltk_reads():
    from nltk import Tree

    from onparse.structures.trees import bracketed
    from onparse.text.treebank import read_trees

    for name in ("ldc_style.mrg", "one_per_line.txt"):
        text = (FIXTURES / name).read_text()
        ours = [bracketed(tree) for tree, _ in read_trees(FIXTURES / name)]
        expected = [
            Tree.fromstring(line, remove_empty_top_bracketing=True).pformat(margin=10**9)
            for line in _top_level_trees(text)
        ]
        assert ours == expected and len(ours) >= 2


def _top_level_trees(text: str) -> list[str]:
    found, depth, start = [], 0, 0
    for position, char in enumerate(text):
        if char == "(":
            start = position if depth == 0 else start
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                found.append(text[start : position + 1])
    return found


def test_a_byte_order_mark_and_pipes_are_read(tmp_path):
    marked = tmp_path / "bom.mrg"
    marked.write_bytes("\ufeff(S (NN a) (NN b))\n".encode())
    (sentence,) = read_gold(str(marked))
    assert sentence.words == ("a", "b")
    assert tree_files("/dev/null") == [__import__("pathlib").Path("/dev/null")] and list(read_gold("/dev/null")) == []


def test_a_dangling_link_is_named(tmp_path):
    (tmp_path / "gone.mrg").symlink_to(tmp_path / "missing.mrg")
    with pytest.raises(TreebankError, match="symbolic link to nothing"):
        tree_files(str(tmp_path / "gone.mrg"))


def test_a_ctb_file_with_document_markup_reads_with_the_ctb_word_rule():
    reader = read_gold(str(FIXTURES / "ctb_style.mrg"))
    first, second = reader
    assert reader.rule.name == "ctb"
    assert first.words == ("猫", "坐", "在", "垫子", "上") and second.words == ("跑", "了")  # PU and -NONE- dropped
    assert set(first.labeled) == {("IP", 0, 5), ("VP", 1, 5), ("PP", 2, 5), ("NP", 3, 5)}
    assert first.source.endswith("ctb_style.mrg:6")


def test_a_negra_file_in_latin1_with_comments_reads_with_the_dollar_tag_rule():
    with pytest.raises(TreebankError, match="not UTF-8 text .*--encoding"):
        list(read_gold(str(FIXTURES / "negra_style.penn")))
    reader = read_gold(str(FIXTURES / "negra_style.penn"), encoding="latin-1")
    first, second = reader
    assert reader.rule.name == "negra"
    assert first.words == ("Die", "Mäuse", "laufen", "über", "die", "Straße") and second.words == ("große", "Häuser")
    assert ("NP", 0, 2) in first.labeled and ("PP", 3, 6) in first.labeled


def test_a_treebank_whose_tags_the_rule_does_not_know_is_an_error_not_perfect_scores(tmp_path):
    from onparse.text.treebank import named_rule

    negra = FIXTURES / "negra_style.penn"
    with pytest.raises(TreebankError, match="only 3 of 11 leaves are words under the ptb rule"):
        list(read_gold(str(negra), named_rule("ptb"), encoding="latin-1"))
    tagged = named_rule("tags:$.,$*LRB*")
    assert [len(s.words) for s in read_gold(str(negra), tagged, encoding="latin-1")] == [6, 2]
    with pytest.raises(TreebankError, match="unknown word rule"):
        named_rule("klingon")


def test_the_unicode_fallback_keeps_words_and_drops_punctuation_and_symbols():
    from onparse.text.treebank import RULES

    rule = RULES["unicode"]
    assert rule.is_word("X", "Haus") and rule.is_word("X", "N2") and rule.is_word("X", "—a")
    assert not rule.is_word("X", "«") and not rule.is_word("X", "。") and not rule.is_word("X", "€")
    assert not rule.is_word("-NONE-", "*pro*")


def test_eval_names_the_rule_and_scores_other_treebanks():
    import json

    from click.testing import CliRunner

    from onparse.cli import main

    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            str(FIXTURES / "negra_style.penn"),
            "--encoding",
            "latin-1",
            "--pred",
            str(FIXTURES / "negra_style.penn"),
            "--pred-encoding",
            "latin-1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert (
        figures["words"] == "negra" and "tag starting with $" in figures["protocol"] and figures["sentence_f1"] == 100.0
    )
    refused = CliRunner().invoke(
        main,
        [
            "eval",
            "--gold",
            str(FIXTURES / "negra_style.penn"),
            "--encoding",
            "latin-1",
            "--words",
            "ptb",
            "--pred",
            str(FIXTURES / "negra_style.penn"),
            "--pred-encoding",
            "latin-1",
        ],
    )
    assert refused.exit_code == 1 and "leaves are words under the ptb rule" in refused.stderr


def test_negra_traces_are_empty_elements_and_never_words():
    from nltk import Tree

    from onparse.text.treebank import RULES, gold_sentence

    tree = Tree.fromstring("(S (NP-*T1* (ART Die) (NN Maus)) (VVFIN lief) (VP (*T1*-MO -) (ADV schnell)) ($. .))")
    sentence = gold_sentence(tree, rule=RULES["negra"])
    assert sentence.words == ("Die", "Maus", "lief", "schnell")
    assert RULES["negra"].is_word("$,", ",") is False and RULES["ptb"].is_word("*T2*", "-") is False


def test_a_recursive_glob_names_each_file_once(tmp_path):
    from onparse.text.treebank import tree_files

    (tmp_path / "sub").mkdir()
    for name in ("a.mrg", "sub/b.mrg"):
        (tmp_path / name).write_text("(S (NN x) (NN y))\n")
    assert [p.relative_to(tmp_path).as_posix() for p in tree_files(str(tmp_path / "**"))] == ["a.mrg", "sub/b.mrg"]


def test_files_whose_tags_call_for_different_word_rules_are_refused_unless_one_rule_is_named(tmp_path):
    from onparse.text.treebank import RULES, TreebankError, read_gold

    (tmp_path / "a.mrg").write_text("(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))\n")
    (tmp_path / "b.mrg").write_text("(IP (NP (NR 北京)) (VP (VV 下雨)) (PU 。))\n")
    with pytest.raises(TreebankError, match="mixes treebanks: .*b.mrg reads under the ctb rule"):
        list(read_gold(str(tmp_path / "*.mrg")))
    assert [len(s.words) for s in read_gold(str(tmp_path / "*.mrg"), RULES["unicode"])] == [3, 2]
    assert [len(s.words) for s in read_gold(str(tmp_path / "b.mrg"))] == [2]


def test_punctuation_tags_holding_a_comma_are_named_with_semicolons():
    from onparse.text.treebank import named_rule

    assert named_rule("tags:$,;$.;$(").punctuation_tags == {"$,", "$.", "$("}
    assert named_rule("tags:PU,HYPH").punctuation_tags == {"PU", "HYPH"}
