"""The Python API people reach for: onparse.load, nltk's ParserI, a spaCy component; docstring examples run."""

import doctest
import importlib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import spacy
from conftest import SLACK
from nltk import Tree
from spacy.tokens import Doc

import onparse
from onparse.integrations.nltk_parser import ONLSTMParser
from onparse.integrations.spacy_component import CONSTITUENTS, TREE
from onparse.parsing.parse import Parser
from onparse.store.shipped import MODELS, SHIPPED_BY_LANGUAGE
from onparse.structures.trees import TokenTree


@pytest.mark.parametrize(
    "module",
    [
        "onparse",
        "onparse.parsing.parse",
        "onparse.families",
        "onparse.integrations.nltk_parser",
        "onparse.integrations.spacy_component",
    ],
)
def test_the_docstring_examples_run(module):
    found = doctest.testmod(
        importlib.import_module(module), extraglobs={"onparse": onparse}, optionflags=doctest.ELLIPSIS
    )
    assert found.attempted and not found.failed


def test_the_nltk_parsers_first_import_path_still_gives_it():
    from onparse import nltk_parser

    assert nltk_parser.ONLSTMParser is ONLSTMParser


def test_load_gives_a_parser_with_the_settings_asked_for(tiny_model_dir):
    parser = onparse.load(str(tiny_model_dir), layer=1, batch_size=3)
    assert isinstance(parser, Parser) and parser.builder.layers == (1,) and parser.batch_size == 3


def test_the_nltk_parser_takes_token_lists_and_batches_them(tiny_model_dir):
    parser = ONLSTMParser(tiny_model_dir)
    sentences = [["the", "cat", "sat", "on", "the", "mat", "."], ["a", "dog"], ["the", "(", "cat", ")"]]
    alone = [parser.parse_one(sentence) for sentence in sentences]
    assert [tree.leaves() for tree in alone] == sentences
    assert [next(trees) for trees in parser.parse_sents(sentences)] == alone
    assert list(parser.parse_all(sentences[0])) == [alone[0]]
    with pytest.raises(TypeError):
        parser.parse_one("the cat sat")  # a string is no token list
    with pytest.raises(NotImplementedError):
        parser.grammar()


@pytest.fixture(scope="module")
def nlp(tiny_model_dir):
    pipeline = spacy.blank("en")
    pipeline.add_pipe("sentencizer")
    pipeline.add_pipe("onparse", config={"model": str(tiny_model_dir)})
    return pipeline


def test_the_spacy_component_puts_a_tree_and_spans_on_each_sentence(nlp, tiny_model_dir):
    doc = nlp("The cat  sat on the mat. A dog sat.")
    parser = Parser.load(tiny_model_dir)
    for sent in doc.sents:
        words = [token.text for token in sent if not token.is_space]  # the double space is a token of its own
        expected = parser.parse_tokens([words])[0]
        assert sent._.get(TREE) == expected.text_tree
        constituents = sent._.get(CONSTITUENTS)
        assert [[t.text for t in span if not t.is_space] for span in constituents] == [
            words[a:b] for a, b in expected.constituent_spans()
        ]
        assert constituents[0].start == sent.start and constituents[0].end == sent.end  # the whole sentence first


def test_the_spacy_component_batches_docs_and_leaves_empty_sentences_alone(nlp):
    texts = ["The cat sat.", "   ", "A dog sat on the mat."] * 30
    piped = list(nlp.pipe(texts, batch_size=7))
    assert [doc.text for doc in piped] == texts
    one_by_one = [nlp(text) for text in texts[:3]]
    assert [[s._.get(TREE) for s in doc.sents] for doc in piped[:3]] == [
        [s._.get(TREE) for s in doc.sents] for doc in one_by_one
    ]
    assert [s._.get(TREE) for s in piped[1].sents] == [None]


def test_a_doc_without_sentences_gets_them_before_it_is_parsed(tiny_model_dir):
    pipeline = spacy.blank("en")
    pipeline.add_pipe("onparse", config={"model": str(tiny_model_dir)})
    doc = pipeline("the cat sat. a dog sat")
    assert [sent._.get(TREE).leaves() for sent in doc.sents] == [["the", "cat", "sat", "."], ["a", "dog", "sat"]]
    joined = TokenTree("X", [sent._.get(TREE) for sent in doc.sents])
    assert doc[:]._.get(TREE) == joined  # the Doc: its sentences' trees, joined, drawn in order as each is


@pytest.mark.slow
def test_the_component_is_registered_by_entry_point_and_refuses_languages_it_has_no_model_for():
    assert "onparse" in {point.name for point in entry_points(group="spacy_factories")}
    with pytest.raises(ValueError, match="no model for language 'fr'"):
        spacy.blank("fr").add_pipe("onparse")


@pytest.mark.parametrize("language", sorted(SHIPPED_BY_LANGUAGE))
def test_each_language_gets_a_shipped_model_of_that_language(language):
    assert (MODELS / SHIPPED_BY_LANGUAGE[language]).is_dir()
    assert Parser.load(SHIPPED_BY_LANGUAGE[language]).language == language


def test_tokens_given_as_any_iterable_parse_as_the_list_would(tiny_model_dir):
    parser = onparse.load(str(tiny_model_dir))
    tokens = ["The", "cat", "sat", "on", "the", "mat", "."]
    expected = str(parser.parse_tokens([tokens])[0].text_tree)
    for given in (iter(tokens), map(str, tokens), tuple(tokens)):
        assert str(next(parser.parse_sents([given])).text_tree) == expected
    assert str(ONLSTMParser(tiny_model_dir).parse_one(iter(tokens))) == str(parser.parse_tokens([tokens])[0].nltk_tree)


def test_what_is_no_sentence_is_refused_by_name(tiny_model_dir):
    parser = onparse.load(str(tiny_model_dir))
    with pytest.raises(TypeError, match="sentence 2 is None"):
        list(parser.parse_sents(["The cat sat.", None, "Dogs bark."]))
    with pytest.raises(TypeError, match="sentence 2"):
        list(ONLSTMParser(tiny_model_dir).parse_sents([["a", "b"], None]))
    with pytest.raises(onparse.parsing.parse.InputError, match="token 1 is empty"):
        parser.parse_tokens([["", "is", "big"]])


def test_the_parses_read_before_a_failing_stream_are_given_first(tiny_model_dir):
    def sentences():
        for k in range(50):
            yield "the cat sat"
        raise RuntimeError("the source broke")

    parsed = []
    with pytest.raises(RuntimeError, match="the source broke"):
        for parse in onparse.load(str(tiny_model_dir)).parse_sents(sentences()):
            parsed.append(parse)
    assert len(parsed) == 50


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"layer": "3"}, "neither a layer number"),
        ({"layer": True}, "neither a layer number"),
        ({"layer": 4}, "layers 1 to 3"),
        ({"dtype": "fp64"}, "dtype must be one of"),
        ({"batch_size": "64"}, "batch_size must be a whole number"),
        ({"max_words": 10**9}, "max_words is at most"),
        ({"device": "meta"}, "not usable"),
    ],
)
def test_load_checks_its_settings_as_the_command_line_does(tiny_model_dir, settings, message):
    with pytest.raises(onparse.parsing.parse.InputError, match=message):
        onparse.load(str(tiny_model_dir), **settings)


def test_an_empty_model_name_is_named_as_such():
    with pytest.raises(onparse.store.modeldir.ModelDirError, match="no model named ''"):
        onparse.load("")


def test_spacy_docs_keep_their_parses_through_every_kind_of_serialization(nlp):
    import pickle

    from spacy.tokens import DocBin

    doc = nlp("The cat sat on the mat. A dog sat.")
    trees = [sent._.parse_string for sent in doc.sents]
    assert all(trees)
    stored = DocBin(store_user_data=True)
    stored.add(doc)
    for copy in (
        Doc(nlp.vocab).from_bytes(doc.to_bytes()),
        doc.copy(),
        pickle.loads(pickle.dumps(doc)),
        next(iter(DocBin().from_bytes(stored.to_bytes()).get_docs(nlp.vocab))),
    ):
        assert [sent._.parse_string for sent in copy.sents] == trees


@pytest.mark.timeout(SLACK * 24)
def test_spacy_parses_across_processes(tiny_model_dir):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the parent's OpenMP pool running, as by default: a forked child must not wait on it
    torch.ones(256, 256) @ torch.ones(256, 256)
    pipeline = spacy.blank("en")
    pipeline.add_pipe("sentencizer")
    pipeline.add_pipe("onparse", config={"model": str(tiny_model_dir)})
    texts = ["The cat sat. Dogs bark."] * 4
    alone = [[sent._.parse_string for sent in doc.sents] for doc in pipeline.pipe(texts)]
    try:
        assert [[sent._.parse_string for sent in doc.sents] for doc in pipeline.pipe(texts, n_process=2)] == alone
    finally:
        torch.set_num_threads(threads)


def test_spacy_spans_answer_as_benepars_do(nlp, tiny_model_dir):
    from onparse.integrations.spacy_component import NonConstituentException

    doc = nlp("The cat sat on the mat.")
    sent = next(doc.sents)
    expected = Parser.load(tiny_model_dir).parse("The cat sat on the mat.").text_tree
    assert sent._.parse_string == str(expected) and sent._.onparse_tree == expected
    constituents = list(sent._.constituents)
    assert constituents[0] == sent and all(span._.parse_string for span in constituents)
    for span in constituents[1:]:
        assert span._.parent is not None and span in span._.parent._.children
        assert span._.labels == (("X",) if len(span) > 1 else ()) and 0 < span._.confidence <= 1
    assert sent._.parent is None and [t.text for c in sent._.children for t in c] == [t.text for t in sent]
    leaf = doc[1:2]
    assert leaf._.parent is not None and leaf in leaf._.parent._.children and leaf._.children == []
    assert all(child in constituents for span in constituents for child in span._.children)  # single tokens too
    assert [len(span) for span in constituents].count(1) == len(doc) and leaf._.constituents == [leaf]
    assert (doc[1]._.parent, doc[1]._.parse_string, doc[1]._.labels) == (leaf._.parent, "cat", ())
    assert sent._.onparse_constituents == [span for span in constituents if len(span) > 1]
    assert sent._.labels == ("X",) and sent._.parse_string.startswith("(X ")  # benepar's idiom finds the constituents
    from onparse.structures.trees import unescape

    brackets = nlp("The cat ( a big one ) sat [ quietly ] on the mat .")

    leaves = Tree.fromstring(next(brackets.sents)._.parse_string).leaves()
    assert [unescape(leaf) for leaf in leaves] == [t.text for t in brackets]
    outside = next(doc[i : i + 2] for i in range(len(doc) - 1) if doc[i : i + 2] not in constituents)
    for attribute in ("parse_string", "constituents", "children", "parent", "labels", "confidence"):
        with pytest.raises(NonConstituentException, match="is no constituent"):
            outside._.get(attribute)


@pytest.mark.slow
def test_the_spacy_component_checks_its_config_and_reads_chinese_as_the_model_was_trained():
    pipeline = spacy.blank("en")
    with pytest.warns(UserWarning, match="one at a time"):
        pipeline.add_pipe("onparse", config={"batch_size": 0})
    assert next(pipeline("The cat sat.").sents)._.parse_string
    chinese = spacy.blank("zh")
    with pytest.warns(UserWarning, match="segments with jieba"):
        chinese.add_pipe("onparse")
    text = "我们在北京大学学习中文。"
    assert [token.text for token in chinese(text)] == onparse.load("onlstm-ctb").tokenize(text)


def test_spacy_spans_of_a_right_branching_tree_of_2000_words_answer_without_recursion(nlp):
    """Every walk of the component is iterative: a tree as deep as its sentence is long raises no RecursionError."""
    from onparse.integrations.spacy_component import KEY, LENGTH

    n = 2000
    doc = nlp.make_doc(" ".join(["word"] * n))
    doc.user_data[LENGTH] = n
    doc.user_data[KEY] = {
        0: {"end": n, "tokens": list(range(n)), "spans": [[i, n] for i in range(n - 1)], "confidence": [1.0] * (n - 1)}
    }
    whole, tail = doc[:], doc[n - 3 :]
    assert [len(span) for span in whole._.constituents if len(span) > 1] == list(range(n, 1, -1))
    assert len(whole._.constituents) == 2 * n - 1  # and every single token
    assert [c.start for c in tail._.children] == [n - 3, n - 2] and tail._.parent == doc[n - 4 :]
    assert doc[n - 1 : n]._.parent == doc[n - 2 :] and whole._.parent is None
    assert whole._.parse_string.count("(X") == n - 1 and tail._.confidence == 1.0


def test_a_parse_repr_is_short_and_says_its_tree(tiny_model_dir):
    parser = onparse.load(str(tiny_model_dir))
    short = parser.parse("the cat sat")
    assert repr(short) == f"Parse(3 tokens, {short.bracket()})"
    assert len(repr(parser.parse(" ".join(["cat"] * 300)))) < 230


def test_trees_handed_to_nltk_draw_their_tokens_in_order(tiny_model_dir, capsys):
    """nltk's printer misplaces a bare leaf beside subtrees; a preterminal over each token keeps the order."""
    parse = onparse.load(str(tiny_model_dir)).parse("The cat sat on the mat.")
    parse.nltk_tree.pretty_print()
    assert capsys.readouterr().out.split("\n")[-3].split() == parse.tokens
    parse.text_tree.pretty_print()  # the README's first object: drawn in order too, its string and leaves nltk's
    assert capsys.readouterr().out.split("\n")[-3].split() == parse.tokens
    assert parse.text_tree.leaves() == parse.tokens and str(parse.text_tree) == parse.bracket()
    assert "<svg" in parse.text_tree._repr_svg_()
    assert (
        parse.nltk_tree.leaves() == parse.tokens
        and [p.label() for p in parse.nltk_tree.subtrees(lambda t: t.height() == 2)][-1] == "."
    )
    assert str(ONLSTMParser(tiny_model_dir).parse_one(parse.tokens)) == str(parse.nltk_tree)


def test_every_tree_string_reads_back_as_its_tokens_and_a_token_no_string_can_hold_is_refused(tiny_model_dir):
    """A token's brackets and spaces are escaped in every tree string (``-LRB-``, ``New␣York``) and read back by
    ``trees.unescape``; a tab or a line break inside a token, which no line of a tree holds, is refused in one line
    naming its position."""
    from onparse.parsing.parse import InputError
    from onparse.structures.trees import unescape

    parser = onparse.load(str(tiny_model_dir))
    for token in ("cat\nsat", "cat\r", "cat\u2028sat", "cat\tsat", "cat\u00a0sat"):
        with pytest.raises(InputError, match="token 2 .* holds whitespace other than a space"):
            parser.parse_tokens([["the", token]])
    with pytest.raises(InputError, match="^sentence 2: empty sentence"):
        list(parser.parse_sents(["the cat", []]))  # a caller of many sentences is told which
    tokens = ["(", "New York", ")", "is", "[big]", "(a)", "."]
    parse = parser.parse_tokens([tokens])[0]
    assert parse.text_tree.leaves() == tokens  # the tree object keeps the tokens as given
    for written in (parse.bracket(), parse.bracket(punct=False)):
        leaves = [unescape(leaf) for leaf in Tree.fromstring(written).leaves()]
        assert leaves == [
            tokens[k] for k in (range(len(tokens)) if written == parse.bracket() else parse.word_positions)
        ]
    assert "New\u2423York" in parse.bracket()


def test_a_doc_retokenized_after_parsing_says_so_instead_of_an_index_error(nlp):
    doc = nlp("The cat sat on the mat. Stocks fell.")
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:2])
    with pytest.raises(ValueError, match="tokens changed after it was parsed"):
        list(doc.sents)[-1]._.parse_string
    copied = nlp("The cat sat on the mat. Stocks fell.")
    tail = list(copied.sents)[1].as_doc(copy_user_data=True)
    with pytest.raises(ValueError, match="run the onparse component on it again"):
        tail[:]._.constituents
    assert nlp(tail.text)[:]._.parse_string  # parsed again, it answers


def test_the_spacy_component_takes_max_words_from_its_config(tiny_model_dir):
    pipeline = spacy.blank("en")
    pipeline.add_pipe("onparse", config={"model": str(tiny_model_dir), "max_words": 3})
    doc = pipeline("the cat sat . a dog sat on the big mat .")
    short, long = list(doc.sents)
    assert short._.parse_string is not None and long._.parse_string is None  # over the limit: no tree, as documented


def test_a_doc_no_onparse_component_parsed_says_what_to_add(nlp):  # nlp: the component registered
    unparsed = spacy.blank("en")("The cat sat.")
    with pytest.raises(ValueError, match='never parsed \\(add the component with nlp.add_pipe\\("onparse"\\)\\)'):
        unparsed[:]._.parse_string
    merged = spacy.tokens.Doc.from_docs([nlp("The cat sat."), nlp("Dogs bark.")])  # parsed Docs, joined
    with pytest.raises(ValueError, match="or was made by Doc.from_docs, which keeps none"):
        merged[:]._.parse_string


def test_trees_are_binary_over_the_words_and_punctuation_joins_the_smallest_constituent_around_it(tiny_model_dir):
    """What the README says the trees are: with the punctuation left out every node has two children; each mark hangs
    from the smallest node that spans the words on either side of it (the root for marks at the edges)."""
    from nltk import Tree

    parse = onparse.load(str(tiny_model_dir)).parse("“Well,” she said, “the cat sat on the mat.”")
    words = Tree.fromstring(parse.bracket(punct=False))
    assert all(len(node) == 2 for node in words.subtrees())
    punct = [k for k in range(len(parse.tokens)) if k not in parse.word_positions]
    for k in punct:
        before = max([w for w in parse.word_positions if w < k], default=None)
        after = min([w for w in parse.word_positions if w > k], default=None)
        parent = next(node for node in parse.tree.subtrees() if k in node)  # the node holding the mark as a child
        if before is None or after is None:
            assert parent is parse.tree
        else:
            spans_both = [node for node in parse.tree.subtrees() if {before, after} <= set(node.leaves())]
            assert parent is min(spans_both, key=lambda node: len(node.leaves()))


def test_a_zero_width_space_is_no_word_of_the_spacy_tree(nlp):
    """A token of invisible marks alone (a zero-width space) is left out of the tree, as a space is and as onparse's
    own tokenizer leaves it out."""
    doc = nlp("The cat \u200b sat on the mat.")
    sent = next(doc.sents)
    assert (
        "\u200b" not in sent._.onparse_tree.leaves()
        and sent._.onparse_tree.leaves() == "The cat sat on the mat .".split()
    )


def test_each_languages_default_is_a_model_the_readme_installs_and_names():
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    named = set(re.findall(r"--model ((?:onlstm|pcfg)-[\w-]+)", readme)) | {"pcfg-wsj"}
    assert set(SHIPPED_BY_LANGUAGE.values()) <= named and SHIPPED_BY_LANGUAGE["de"] == "pcfg-negra"
