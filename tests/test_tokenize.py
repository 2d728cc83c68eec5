"""Tokens follow Penn Treebank conventions; the model reads normalized words."""

from pathlib import Path

import pytest

from onparse.text.tokenize import is_punct, normalize, tokenize, word_positions


def test_treebank_tokenization_keeps_the_users_spelling():
    assert tokenize("The cat didn't pay $3.50.") == ["The", "cat", "did", "n't", "pay", "$", "3.50", "."]


def test_normalization_lowercases_and_writes_numbers_as_N():
    assert [normalize(w) for w in ["The", "1990s", "3.50", "1,000", "No."]] == ["the", "Ns", "N", "N", "no."]


def test_punctuation_detection():
    assert all(map(is_punct, [",", ".", "``", "''", "$", "#", "--", "-LRB-", "...", ")"]))
    assert not any(map(is_punct, ["cat", "n't", "3.50", "U.S.", "'s"]))


def test_percent_and_ampersand_are_words_as_in_the_treebank():
    assert not is_punct("%") and not is_punct("&")  # tagged NN and CC in the Penn Treebank; the model read them
    assert tokenize("Profit rose 5 % at Procter & Gamble.") == [
        "Profit",
        "rose",
        "5",
        "%",
        "at",
        "Procter",
        "&",
        "Gamble",
        ".",
    ]


def test_possessive_apostrophe_is_a_word_and_currency_symbols_are_not():
    tokens = ["The", "investors", "'", "US$", "5", "'", "gain", "'", "."]
    assert word_positions(tokens) == [0, 1, 2, 4, 6]  # the quote after "5" and after "gain" is punctuation
    assert is_punct("US$") and is_punct("C$") and not is_punct("US")


def test_tokens_the_treebank_keeps_whole_stay_whole_and_quotes_are_the_users():
    assert tokenize('S&L and AT&T said "hi" to M&A.') == [
        "S&L",
        "and",
        "AT&T",
        "said",
        '"',
        "hi",
        '"',
        "to",
        "M&A",
        ".",
    ]
    assert tokenize("rock 'n' roll, 47%-controlled, 19-to-$21 in US$") == [
        "rock",
        "'n'",
        "roll",
        ",",
        "47%-controlled",
        ",",
        "19-to-$21",
        "in",
        "US$",
    ]
    assert tokenize("It isn't 'safe' -- A & B.") == ["It", "is", "n't", "'", "safe", "'", "--", "A", "&", "B", "."]
    assert tokenize("He works for Fulton (U.S.A.)") == ["He", "works", "for", "Fulton", "(", "U.S.A", ".", ")"]


def test_a_words_own_apostrophe_stays_but_possessives_and_closing_quotes_split():
    assert tokenize("the mean ol' law was goin' home") == ["the", "mean", "ol'", "law", "was", "goin'", "home"]
    assert tokenize("the investors' money") == ["the", "investors", "'", "money"]
    assert tokenize("he said 'go home' and left") == ["he", "said", "'", "go", "home", "'", "and", "left"]
    assert tokenize("shares of Dunkin' Donuts") == [
        "shares",
        "of",
        "Dunkin",
        "'",
        "Donuts",
    ]  # a name: split, as the treebank mostly does


def test_a_period_the_treebank_writes_as_its_own_token_is_split_mid_sentence():
    assert tokenize("Toyobo Co. (Japan) rose") == ["Toyobo", "Co", ".", "(", "Japan", ")", "rose"]
    assert tokenize('it was like bubble gum." Then') == ["it", "was", "like", "bubble", "gum", ".", '"', "Then"]
    assert tokenize("2. Take a loss") == ["2", ".", "Take", "a", "loss"]
    assert tokenize("Agip S.p. A. and Birkel G.m.b. H. agreed") == [
        "Agip",
        "S.p",
        ".",
        "A.",
        "and",
        "Birkel",
        "G.m.b",
        ".",
        "H.",
        "agreed",
    ]
    assert tokenize("Mr. Smith of Acme Corp. said so") == ["Mr.", "Smith", "of", "Acme", "Corp.", "said", "so"]


def test_punctuation_of_every_script_is_punctuation_and_numbers_of_every_script_are_N():
    assert all(is_punct(token) for token in ["，", "。", "、", "！", "„", "“", "«", "»", "–", "…"])
    assert not any(is_punct(token) for token in ["%", "&", "Straße", "猫", "N2"])
    assert [normalize(word) for word in ["２００８", "٣٤", "1,000.5", "Mäuse"]] == ["N", "N", "N", "mäuse"]
    assert word_positions(["Die", "Mäuse", "„", "laufen", "“", "."]) == [0, 1, 3]


def test_negras_bracket_spellings_are_punctuation_as_penns_are():
    from onparse.text.tokenize import word_positions

    assert word_positions(["Die", "*LRB*", "Katze", "*RRB*", "-LRB-", "schläft"]) == [0, 2, 5]


def test_an_emoji_is_punctuation_whatever_presentation_selector_or_joiner_it_carries():
    from onparse.text.tokenize import is_punct

    assert all(is_punct(token) for token in ["❤", "❤\ufe0f", "👍🏽", "👨\u200d👩\u200d👧", "🇩🇪"])
    assert not any(is_punct(token) for token in ["a", "\ufe0f", "é", "%"])


def test_full_width_letters_read_as_ascii_and_an_older_word_list_finds_them():
    from onparse.text.vocabulary import Vocabulary

    assert normalize("ＷＴＯ") == normalize("WTO") == "wto" and normalize("５０％") == "N%"
    older = Vocabulary(["<eos>", "<unk>", "ｗｔｏ", "a", "ａ"])  # written before folding: both spellings of "a" listed
    assert older.ids([normalize("ＷＴＯ"), normalize("WTO"), normalize("ａ")]) == [2, 2, 3]
    assert "wto" in older and "ｂ" not in older


WEB_TEXT = [
    line.split("\t")
    for line in (Path(__file__).parent / "fixtures" / "web_text.tsv").read_text(encoding="utf-8").splitlines()[1:]
]


@pytest.mark.parametrize("typographic, ascii_twin", WEB_TEXT)
def test_typographic_punctuation_tokenizes_as_its_ascii_twin_and_keeps_the_users_characters(typographic, ascii_twin):
    """Curly quotes, apostrophes, dashes, ellipses and no-break spaces split where their ASCII twins do; every token
    is the user's own text, and the words read as the twin's."""
    tokens, twins = tokenize(typographic), tokenize(ascii_twin)
    assert len(tokens) == len(twins), (tokens, twins)
    assert all(token in typographic for token in tokens)  # the user's characters, not ASCII stand-ins
    assert word_positions(tokens) == word_positions(twins)
    assert [normalize(tokens[i]) for i in word_positions(tokens)] == [
        normalize(twins[i]) for i in word_positions(twins)
    ]


def test_web_text_parses_to_the_trees_of_its_ascii_twins_with_the_shipped_default():
    """The default model reads typographic text as it reads the ASCII it was trained on: the same trees."""
    import onparse

    parser = onparse.load()
    for typographic, ascii_twin in WEB_TEXT:
        mine, twin = parser.parse(typographic), parser.parse(ascii_twin)
        assert mine.tree == twin.tree and mine.model_input == twin.model_input, typographic
        assert mine.tokens != twin.tokens  # the output shows the user's own characters


def test_a_percent_sign_is_a_word_in_every_script_it_is_written_in():
    assert [is_punct(sign) for sign in ("%", "\uff05", "\ufe6a", "\u066a", "&", "\uff06")] == [False] * 6
    assert is_punct("\u2030") and is_punct("#")  # per mille and the number sign stay symbols, as the treebank tags them


def test_an_emoji_is_split_off_a_word_as_punctuation_is_and_its_sequence_stays_one_token():
    """``it😀`` reads as ``it 😀`` does (the emoji a mark beside the word, never part of an unknown word); a skin tone,
    a joined family or a flag stays one token; symbols the treebank keeps in words (``25°C``) stay."""
    assert tokenize("I love it😀!") == tokenize("I love it 😀 !") == ["I", "love", "it", "😀", "!"]
    assert tokenize("Great👍🏽 job") == ["Great", "👍🏽", "job"] and is_punct("👍🏽")
    assert tokenize("family 👨\u200d👩\u200d👧 time")[1] == "👨\u200d👩\u200d👧" and tokenize("flag 🇩🇪 here")[1] == "🇩🇪"
    assert "25°C" in tokenize("It is 25°C today.")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("See https://example.com/prices, now.", ["See", "https://example.com/prices", ",", "now", "."]),
        ("Mail me@example.org (today).", ["Mail", "me@example.org", "(", "today", ")", "."]),
        ("Visit www.example.com.", ["Visit", "www.example.com", "."]),
        ("Press 1️⃣ now", ["Press", "1️⃣", "now"]),
        ("It is short. The next", ["It", "is", "short", ".", "The", "next"]),  # no period glued inside a line
        ("Mr. Smith of Acme Corp. Chairman", ["Mr.", "Smith", "of", "Acme", "Corp.", "Chairman"]),  # abbreviations
        ("wait——no……fine", ["wait", "——", "no", "……", "fine"]),
    ],
)
def test_addresses_keycaps_doubled_marks_and_periods_inside_a_line_as_people_write_them(text, expected):
    from onparse.text.language import tokenizer

    assert tokenizer("en")(text) == expected


def test_a_chinese_dash_and_ellipsis_are_one_token_each():
    from onparse.text.language import tokenizer

    tokens = tokenizer("zh")("他说——不……好")
    assert "——" in tokens and "……" in tokens and "—" not in tokens


def test_a_line_is_cut_into_its_sentences_and_a_treebank_sentence_is_not():
    from onparse.text.language import tokenizer
    from onparse.text.sentences import split_sentences

    en = tokenizer("en")
    assert split_sentences("It is short. The second is longer! And a third? Yes.", en) == [
        "It is short.",
        "The second is longer!",
        "And a third?",
        "Yes.",
    ]
    for one in (
        '" Rally! Rally!" shouted a trader.',
        "Heiwado Co. (Japan) --",
        "1. Buy a new Chevrolet.",
        "Agip S.p. A. and Elf submitted an offer.",
        "Mr. Smith met Dr. Jones at 8 a.m. New York time.",
    ):
        assert split_sentences(one, en) == [one]
    assert split_sentences("猫坐在垫子上。狗在叫！", tokenizer("zh")) == ["猫坐在垫子上。", "狗在叫！"]


def test_an_uppercase_possessive_is_a_word_and_a_closing_quote_is_not():
    assert word_positions(["JONES", "'", "said"]) == [0, 1, 2]
    assert word_positions(["the", "investors", "'", "money"]) == [0, 1, 2, 3]
    assert word_positions(["he", "said", "'", "no", "'"]) == [0, 1, 3]
