"""Every output format on one hand-built parse, with and without punctuation."""

import json

import numpy as np
import pytest

from onparse.parsing.formats import FORMATS
from onparse.parsing.parse import Parse
from onparse.structures.builder import TreeBuilder
from onparse.structures.trees import attach_punctuation

# "The cat sat , (quietly) ." : the model reads words 0 1 2 4; layer 2's largest
# distance (0.9, "sat") splits [The cat] from [sat (quietly)]; "," sits between
# words of the right constituent and joins it; "." joins the root.
TOKENS = ["The", "cat", "sat", ",", "(quietly)", "."]
POSITIONS = [0, 1, 2, 4]
DISTANCES = np.array([[0.2, 0.1, 0.3, 0.4], [0.1, 0.5, 0.9, 0.3], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)


@pytest.fixture
def parse() -> Parse:
    builder = TreeBuilder((2,))
    built = builder.build([DISTANCES])
    return Parse(
        TOKENS,
        POSITIONS,
        ["the", "cat", "sat", "<unk>"],
        [DISTANCES],
        builder,
        built,
        attach_punctuation(built.tree, POSITIONS, len(TOKENS)),
    )


def test_bracket(parse):
    assert FORMATS["bracket"](parse, True) == "(X (X The cat) (X sat , -LRB-quietly-RRB-) .)"
    assert FORMATS["bracket"](parse, False) == "(X (X The cat) (X sat -LRB-quietly-RRB-))"


def test_mrg_tags_words_X_and_punctuation_with_penn_tags(parse):
    assert FORMATS["mrg"](parse, True) == "(X (X (X The) (X cat)) (X (X sat) (, ,) (X -LRB-quietly-RRB-)) (. .))"
    assert FORMATS["mrg"](parse, False) == "(X (X (X The) (X cat)) (X (X sat) (X -LRB-quietly-RRB-)))"


def test_json_spans_are_token_positions_with_or_without_punctuation(parse):
    full, bare = (json.loads(FORMATS["json"](parse, punct)) for punct in (True, False))
    assert full["spans"] == [[0, 6], [0, 2], [2, 5]]
    assert bare["spans"] == [[0, 5], [0, 2], [2, 5]]  # the words-only root ends after "(quietly)", token 4
    assert full["tree"] == "(X (X The cat) (X sat , -LRB-quietly-RRB-) .)"
    assert full["tokens"] == TOKENS and full["word_positions"] == POSITIONS and full["layers"] == [2]
    assert full["model_input"] == ["the", "cat", "sat", "<unk>"]
    assert full["distances"] == [[0.1, 0.5, 0.9, 0.3]]  # the row the tree was built from: layer 2
    assert full["layer_distances"][0][1] == [0.1, 0.5, 0.9, 0.3] and len(full["layer_distances"][0]) == 3
    assert full["confidence"] == [1.0, 1.0, 1.0]  # a lone member's spans hold every vote


def test_pretty_draws_the_tree_with_distance_bars(parse):
    assert FORMATS["pretty"](parse, True) == "\n".join(
        [
            "X  (layer 2 distances)",
            "├── X",
            "│   ├── The            █                    0.100",
            "│   └── cat            ███████████          0.500",
            "├── X",
            "│   ├── sat            ████████████████████ 0.900",
            "│   ├── ,",
            "│   └── (quietly)      ██████               0.300",
            "└── .",
        ]
    )
    assert FORMATS["pretty"](parse, False) == "\n".join(
        [
            "X  (layer 2 distances)",
            "├── X",
            "│   ├── The            █                    0.100",
            "│   └── cat            ███████████          0.500",
            "└── X",
            "    ├── sat            ████████████████████ 0.900",
            "    └── (quietly)      ██████               0.300",
        ]
    )


def test_a_sentence_of_punctuation_alone():
    nothing = np.zeros((3, 0), dtype=np.float32)
    builder = TreeBuilder((1,))
    built = builder.build([nothing])
    parse = Parse(["!", "?"], [], [], [nothing], builder, built, attach_punctuation(built.tree, [], 2))
    assert FORMATS["bracket"](parse, True) == "(X ! ?)"
    assert FORMATS["bracket"](parse, False) == "(X )"
    assert FORMATS["mrg"](parse, True) == "(X (. !) (. ?))"
    assert parse.constituent_spans(True) == [(0, 2)] and parse.constituent_spans(False) == []


def test_svg_is_a_picture_a_browser_reads_with_every_token_in_order(tiny_model_dir, tmp_path):
    import xml.etree.ElementTree as ElementTree

    from click.testing import CliRunner

    from onparse.cli import main

    sentence = "The cat & the dog sat on the mat."
    written = CliRunner().invoke(
        main, ["--model", str(tiny_model_dir), "-f", "svg", "-o", str(tmp_path / "tree.svg"), sentence]
    )
    assert written.exit_code == 0, written.stderr
    root = ElementTree.parse(tmp_path / "tree.svg").getroot()  # well-formed XML, & escaped
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [element.text for element in root.iter("{http://www.w3.org/2000/svg}text")]
    tokens = ["The", "cat", "&", "the", "dog", "sat", "on", "the", "mat", "."]
    assert texts[-len(tokens) :] == tokens  # one text element per token, left to right, after the node labels
    from onparse.parsing.parse import Parser

    parse = Parser.load(tiny_model_dir).parse(sentence)
    assert parse._repr_svg_() == (tmp_path / "tree.svg").read_text().strip()  # what Jupyter shows


def test_several_sentences_drawn_make_a_page_of_pictures_or_are_refused_for_one_picture_file(tiny_model_dir, tmp_path):
    import xml.etree.ElementTree as ElementTree
    from html.parser import HTMLParser

    from click.testing import CliRunner

    from onparse.cli import main

    two = ["--model", str(tiny_model_dir), "-f", "svg", "The cat sat.", "Dogs bark."]
    (tmp_path / "tree.svg").write_text("kept\n")
    refused = CliRunner().invoke(main, [*two, "-o", str(tmp_path / "tree.svg")])
    assert refused.exit_code == 2 and "is one picture" in refused.stderr and "trees.html" in refused.stderr
    assert (tmp_path / "tree.svg").read_text() == "kept\n"  # left as it was
    page = CliRunner().invoke(main, [*two, "-o", str(tmp_path / "trees.html")])
    assert page.exit_code == 0, page.output
    html = (tmp_path / "trees.html").read_text()
    figures = [chunk.split("</figure>")[0] for chunk in html.split("<figure>")[1:]]
    assert len(figures) == 2 and html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    for figure in figures:  # each a well-formed picture of its own
        assert ElementTree.fromstring(figure).tag == "{http://www.w3.org/2000/svg}svg"
    HTMLParser().feed(html)


def test_the_command_line_offers_every_format_the_library_writes_and_no_other():
    from onparse.commands.options import FORMAT_NAMES
    from onparse.parsing.formats import FORMATS

    assert FORMAT_NAMES == tuple(FORMATS)  # named once for the option (no torch import), kept equal here
