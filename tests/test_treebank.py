"""Reading gold trees in LDC and one-tree-per-line layouts."""

import pytest

from conftest import FIXTURES
from onparse.treebank import TreebankError, read_gold, tree_files


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


def test_a_bare_word_among_constituents_is_refused_with_its_file_and_line(tmp_path):
    odd = tmp_path / "odd.mrg"
    odd.write_text("(S (NN a))\n(S (NP (DT the) junk (NN cat)) (VP (VBD sat)))\n")
    with pytest.raises(TreebankError, match=r"odd\.mrg:2: 'junk' is not the only child"):
        list(read_gold(str(odd)))


def test_the_fast_reader_reads_what_nltk_reads():
    from nltk import Tree

    from onparse.treebank import read_trees
    from onparse.trees import bracketed

    for name in ("ldc_style.mrg", "one_per_line.txt"):
        text = (FIXTURES / name).read_text()
        ours = [bracketed(tree) for tree, _ in read_trees(FIXTURES / name)]
        expected = [Tree.fromstring(line, remove_empty_top_bracketing=True).pformat(margin=10**9)
                    for line in _top_level_trees(text)]
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
