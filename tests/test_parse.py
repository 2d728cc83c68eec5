"""The Parser: normalized model input, and batches that change nothing."""

import itertools

import pytest

from onparse.parsing.parse import InputError, Parser
from onparse.store.modeldir import load
from onparse.structures.trees import TokenTree, attach_punctuation, build_tree, map_leaves


def test_model_input_is_normalized_with_unknowns(tiny_model_dir):
    parser = Parser.load(tiny_model_dir)
    parse = parser.parse("The Cat sat on 3 zebras!")
    assert parse.tokens == ["The", "Cat", "sat", "on", "3", "zebras", "!"]
    assert parse.model_input == ["the", "cat", "sat", "on", "N", "<unk>"]
    assert parse.distances[0].shape == (3, 6)
    assert parse.tree.leaves() == list(range(7))


@pytest.mark.parametrize("batch_size", [4, 64])  # 64: several groups of 16 padded to different lengths
def test_batched_trees_equal_one_at_a_time(tiny_model_dir, batch_size):
    sentences = ["the cat sat", "a dog sat on the mat .", "the mat", "cat", "on the cat a dog sat on a mat"] * 8
    batched = list(Parser.load(tiny_model_dir, batch_size=batch_size).parse_sents(sentences))
    single = list(Parser.load(tiny_model_dir, batch_size=1).parse_sents(sentences))
    assert len(batched) == len(single) == len(sentences)
    for a, b in zip(batched, single):
        assert a.tree == b.tree
        assert abs(a.distances[0] - b.distances[0]).max() < 1e-5


def test_progress_counts_each_batch_as_the_model_answers_it_every_line_once(tiny_model_dir):
    lines = [b"the cat sat on the mat", b"", b"\xff not utf-8", b"a dog sat"] * 10  # blank and refused lines too
    told = []
    parses = Parser.load(tiny_model_dir, batch_size=4).parse_lines(lines, invalid=lambda *_: None, progress=told.append)
    first = next(parses)  # the batch that holds the first line is counted by the time that line is out
    assert first is not None and 1 <= sum(told) < len(lines)
    assert len([first, *parses]) == len(lines) and sum(told) == len(lines) and max(told) <= 4


def test_each_layer_builds_a_binary_tree_from_its_own_distances(tiny_model_dir):
    bundle = load(tiny_model_dir)
    for k in (1, 2, 3):
        parse = Parser(bundle, layer=k).parse("the cat sat on the mat")
        assert parse.builder.layers == (k,)
        assert parse.words_tree == build_tree(parse.distances[0][k - 1])
        assert all(len(node) == 2 for node in parse.words_tree.subtrees())
        assert parse.words_tree.leaves() == list(range(6))
    with pytest.raises(InputError, match="layers 1 to 3"):
        Parser(bundle, layer=4)


def test_punctuation_is_attached_to_the_words_tree(tiny_model_dir):
    parse = Parser.load(tiny_model_dir).parse("the cat , sat .")
    assert parse.word_positions == [0, 1, 3]
    assert parse.tree == attach_punctuation(parse.words_tree, [0, 1, 3], 5)
    assert parse.tree.leaves() == [0, 1, 2, 3, 4]


def test_none_passes_through_and_invalid_sentences_are_reported(tiny_model_dir):
    parser = Parser.load(tiny_model_dir, max_words=3)
    reported = []
    out = list(
        parser.parse_stream(
            [["the", "cat"], None, ["a"] * 5, ["dog"]],
            window=2,
            invalid=lambda position, err: reported.append((position, str(err))),
        )
    )
    assert [p is None for p in out] == [False, True, True, False]
    assert out[3].tokens == ["dog"]
    assert [position for position, _ in reported] == [2]
    assert reported[0][1].startswith("5 words is over the limit of 3 (--max-words")


def test_limits(tiny_model_dir):
    parser = Parser.load(tiny_model_dir, max_words=5)
    with pytest.raises(InputError, match="over the limit"):
        parser.parse("the cat sat on the mat")
    with pytest.raises(InputError, match="empty"):
        parser.parse("")


def test_the_mean_of_the_layers_can_build_the_tree(tiny_model_dir):
    parse = Parser.load(tiny_model_dir, layer="mean").parse("the cat sat on the mat")
    assert parse.builder.layers == ("mean",)
    assert parse.words_tree == build_tree(parse.distances[0].mean(axis=0))
    with pytest.raises(InputError, match="or 'mean'"):
        Parser.load(tiny_model_dir, layer="median")


def test_parse_takes_one_text_and_parse_sents_many_texts_or_token_lists(tiny_model_dir):
    parser = Parser.load(tiny_model_dir)
    one = parser.parse("The cat (sat) .")
    assert one.tokens == ["The", "cat", "(", "sat", ")", "."]
    assert one.text_tree.leaves() == one.tokens and one.text_tree == TokenTree.convert(
        map_leaves(one.tree, one.tokens.__getitem__)
    )
    with pytest.raises(TypeError, match="parse_sents"):
        parser.parse(["the cat"])
    with pytest.raises(TypeError, match="parse\\(text\\)"):
        parser.parse_sents("the cat")
    both = list(parser.parse_sents(["the cat sat .", ["the", "cat,sat", "."]]))
    assert [p.tokens for p in both] == [["the", "cat", "sat", "."], ["the", "cat,sat", "."]]  # token lists as given
    assert both[0].tree == parser.parse("the cat sat .").tree


@pytest.mark.slow
def test_parse_sents_streams_an_endless_iterable(tiny_model_dir):
    endless = itertools.cycle(["the cat sat on the mat", "a dog sat"])
    first = list(itertools.islice(Parser.load(tiny_model_dir).parse_sents(endless), 5))
    assert [len(p.tokens) for p in first] == [6, 3, 6, 3, 6]


def test_lines_are_read_as_training_text_is_read_comments_skipped_and_ids_left_out(tiny_model_dir):
    """NEGRA's .sent file: a %% header, then "   17:<TAB>sentence"; the output keeps one line per line."""
    parser = Parser(load(tiny_model_dir))
    lines = [b"%% NEGRA", b"    1:\tthe cat sat", b"", b"    2:\ta dog ran"]
    parsed = list(parser.parse_lines(lines, tokenized=True))
    assert parsed[0] is None and parsed[2] is None
    assert [parse.tokens for parse in (parsed[1], parsed[3])] == [["the", "cat", "sat"], ["a", "dog", "ran"]]
    plain = list(parser.parse_lines([b"17 cats sleep", b"2:\tstays whole"], tokenized=True))
    assert [parse.tokens for parse in plain] == [["17", "cats", "sleep"], ["2:", "stays", "whole"]]
    percent = list(
        parser.parse_lines([b"%% of the votes went to him", b"", b"%% more", b"the cat sat"], tokenized=True)
    )
    assert [parse and parse.tokens for parse in percent] == [
        ["%%", "of", "the", "votes", "went", "to", "him"],
        None,
        ["%%", "more"],
        ["the", "cat", "sat"],
    ]  # no ids: sentences
    alone = list(parser.parse_lines([b"%% of the votes went to him"], tokenized=True))
    assert alone[0].tokens[:2] == ["%%", "of"]


def test_a_line_with_a_carriage_return_is_refused_and_a_control_character_kept_with_a_warning(tiny_model_dir, caplog):
    """CR line ends would run every sentence into one: refused with a message. A NUL or an escape byte is kept as
    given (nothing lost), said once, and escaped in a picture, which XML could not hold otherwise."""
    import xml.dom.minidom

    parser = Parser(load(tiny_model_dir))
    said = []
    with caplog.at_level("WARNING", logger="onparse"):
        parsed = list(
            parser.parse_lines(
                [b"the cat sat\ra dog ran\rit rained", b"the cat\x00 sat", b"a dog\x1b ran"],
                invalid=lambda position, reason: said.append((position, str(reason))),
            )
        )
    assert parsed[0] is None and said == [(0, said[0][1])] and "carriage return" in said[0][1]
    assert parsed[1].tokens == ["the", "cat\x00", "sat"] and parsed[2].tokens == ["a", "dog\x1b", "ran"]
    assert [record.message for record in caplog.records].count(caplog.records[0].message) == 1
    assert "holds a control character: kept as given" in caplog.records[0].message
    xml.dom.minidom.parseString(parsed[1].svg())  # a valid picture, the byte written \\x00


def test_text_the_model_mostly_does_not_know_is_said_once(tiny_model_dir, caplog):
    parser = Parser(load(tiny_model_dir))
    with caplog.at_level("WARNING", logger="onparse"):
        list(parser.parse_sents(["the cat sat on the mat"]))
        assert not caplog.records
        list(
            parser.parse_sents(
                [
                    "\u0642\u0637\u0629 \u062c\u0644\u0633\u062a \u0647\u0646\u0627 \u0627\u0644\u064a\u0648\u0645 .",
                    "zzz qqq xxx yyy vvv",
                ]
            )
        )
    assert (
        len(caplog.records) == 1
        and "unknown to" in caplog.records[0].message
        and "another language" in caplog.records[0].message
    )
