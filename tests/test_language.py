"""Languages: a model directory records how its text is tokenized, and parsing and training follow it."""

import json

import pytest
from click.testing import CliRunner
from conftest import tiny_model

from onparse.cli import main
from onparse.parsing.parse import Parser
from onparse.store import modeldir
from onparse.text.corpus import read_sentences
from onparse.text.language import LanguageError, tokenizer


def words(paths, *args):
    """The words of each sentence read from ``paths`` (punctuation kept apart)."""
    return [sentence.word_tokens for sentence in read_sentences(paths, *args)]


def model_in(tmp_path, language: str):
    model, vocab = tiny_model(1)
    modeldir.save(tmp_path / language, model, vocab, default_layer=2, language=language)
    return tmp_path / language


def test_german_and_chinese_text_split_with_their_own_tokenizers():
    assert tokenizer("de")("Die Mäuse „laufen“ über die Straße – schnell.") == [
        "Die",
        "Mäuse",
        "„",
        "laufen",
        "“",
        "über",
        "die",
        "Straße",
        "–",
        "schnell",
        ".",
    ]
    assert (
        tokenizer("zh")("猫坐在垫子上。")[-1] == "。" and "".join(tokenizer("zh")("猫坐在垫子上。")) == "猫坐在垫子上。"
    )
    assert tokenizer("en")("Stocks fell 5%.") == ["Stocks", "fell", "5", "%", "."]
    with pytest.raises(LanguageError, match="not a language code spaCy knows .*xx: its multi-language tokenizer"):
        tokenizer("qq")("x")


def test_a_language_whose_tokenizer_needs_a_missing_package_is_refused_naming_the_package():
    import importlib.util

    if importlib.util.find_spec("pythainlp"):
        pytest.skip("PyThaiNLP is installed here")
    with pytest.raises(LanguageError, match="'th' needs a package that is not installed: .*PyThaiNLP"):
        tokenizer("th")


def test_a_model_parses_raw_text_as_its_language_is_tokenized(tmp_path):
    german = model_in(tmp_path, "de")
    assert json.loads((german / "config.json").read_text())["language"] == "de"
    parse = Parser.load(german).parse("Die Mäuse „laufen“ über die Straße.")
    assert parse.tokens[2] == "„" and [parse.tokens[i] for i in parse.word_positions] == [
        "Die",
        "Mäuse",
        "laufen",
        "über",
        "die",
        "Straße",
    ]  # „ “ . are punctuation in any script
    chinese = model_in(tmp_path, "zh")
    result = CliRunner().invoke(main, ["--model", str(chinese), "--format", "json", "猫坐在垫子上。"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert "".join(record["tokens"]) == "猫坐在垫子上。" and record["tokens"][-1] not in record["model_input"]


def test_a_model_directory_with_a_bad_language_is_refused(tmp_path):
    german = model_in(tmp_path, "de")
    config = json.loads((german / "config.json").read_text())
    (german / "config.json").write_text(json.dumps({**config, "language": "../../etc"}))
    refused = CliRunner().invoke(main, ["--model", str(german), "x"])
    assert refused.exit_code == 2 and "language must be a language code" in refused.stderr


def test_training_text_is_tokenized_as_its_language(tmp_path):
    text = tmp_path / "de.txt"
    text.write_text("Die Mäuse „laufen“ schnell.\n", encoding="utf-8")
    assert words([str(text)], "de") == [["Die", "Mäuse", "laufen", "schnell"]]
    assert words([str(text)], "en") == words([str(text)], "de")  # typographic quotes split by the Penn rules too


@pytest.mark.slow
def test_a_run_records_its_language_in_every_model_directory(tmp_path):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--train",
            str(examples / "corpus.txt"),
            "--dev",
            str(examples / "dev.txt"),
            "--out",
            str(tmp_path / "run"),
            "--language",
            "de",
            "--epochs",
            "1",
            "--embedding-size",
            "8",
            "--hidden-size",
            "12",
            "--chunk-size",
            "4",
            "--vocab-size",
            "40",
            "--batch-size",
            "4",
            "--bptt",
            "10",
            "--dtype",
            "fp32",
        ],
    )
    assert result.exit_code == 0, result.output
    assert {json.loads(p.read_text())["language"] for p in (tmp_path / "run").glob("*/config.json")} == {"de"}
    assert Parser.load(tmp_path / "run" / "model").language == "de"


def test_training_reads_trees_and_text_in_their_encoding(tmp_path):
    from conftest import FIXTURES

    negra = str(FIXTURES / "negra_style.penn")  # latin-1 trees: their words, punctuation tags dropped
    assert words([negra], "de", "latin-1") == [["Die", "Mäuse", "laufen", "über", "die", "Straße"], ["große", "Häuser"]]
    text = tmp_path / "latin1.txt"
    text.write_bytes("Große Häuser stehen.\n".encode("latin-1"))
    assert words([str(text)], "de", "latin-1") == [["Große", "Häuser", "stehen"]]
    with pytest.raises(ValueError, match="not UTF-8 text .*--encoding"):
        read_sentences([str(text)], "de")


def test_text_with_an_id_before_each_sentence_and_comment_lines_gives_the_sentences_alone(tmp_path):
    numbered = tmp_path / "negra.sent"  # the NEGRA corpus's raw sentences: a %% header, then "    ID:<TAB>sentence"
    numbered.write_bytes(
        "%% raw sentences\n%%\n    1:\tGroße Häuser stehen .\n   12:\tSie 2 laufen .\n".encode("latin-1")
    )
    assert words([str(numbered)], "de", "latin-1") == [["Große", "Häuser", "stehen"], ["Sie", "2", "laufen"]]
    plain = tmp_path / "plain.txt"  # one line with a tab is not a file of ids
    plain.write_text("Große\tHäuser stehen .\nSie laufen .\n", encoding="utf-8")
    assert words([str(plain)], "de") == [["Große", "Häuser", "stehen"], ["Sie", "laufen"]]
    percent = tmp_path / "percent.txt"  # no ids: a line starting %% is a sentence, not a comment
    percent.write_text("%% der Stimmen gingen an ihn .\nSie laufen .\n", encoding="utf-8")
    found = words([str(percent)], "de")
    assert len(found) == 2 and found[0][-5:] == ["der", "Stimmen", "gingen", "an", "ihn"]


def test_eval_raw_types_the_gold_back_and_splits_it_as_the_models_language(tmp_path):
    from nltk import Tree

    from onparse.parsing.evaluate import evaluate_raw
    from onparse.text.treebank import RULES, gold_sentence

    tree = Tree.fromstring("(S (NN Katzen) (VVFIN laufen) (APPRART am) (ADJA 3.) (NN Mai) ($. .))")
    gold = [gold_sentence(tree, "t", RULES["negra"])]
    german = evaluate_raw(Parser.load(model_in(tmp_path, "de")), gold, [tree])
    english = evaluate_raw(Parser.load(model_in(tmp_path, "en")), gold, [tree])
    assert german["same_tokens"] == 1 and english["same_tokens"] == 0  # the Penn rules split the ordinal "3."


def test_decomposed_text_reads_as_composed_text_does(tmp_path):
    import unicodedata

    from onparse.text.tokenize import normalize

    composed = "Die Mäuse laufen schnell über die große Straße."
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed and tokenizer("de")(decomposed) == tokenizer("de")(composed)
    assert normalize(unicodedata.normalize("NFD", "Über")) == "über"


def test_models_of_another_language_neither_teach_nor_vote_nor_serve_a_pipeline(tmp_path, tiny_model_dir):
    import shutil

    import spacy

    from onparse.config import DistillConfig
    from onparse.parsing.ensemble import build
    from onparse.store import modeldir
    from onparse.training.distill import distillation_config

    german = tmp_path / "german"
    shutil.copytree(tiny_model_dir, german)
    config = json.loads((german / "config.json").read_text())
    (german / "config.json").write_text(json.dumps({**config, "language": "de"}))
    assert modeldir.languages(german) == {"de"} and modeldir.languages(tiny_model_dir) == {"en"}
    with pytest.raises(modeldir.ModelDirError, match="members read one language"):
        build(tmp_path / "mixed", [tiny_model_dir, german])
    assert not (tmp_path / "mixed").exists()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\n" * 20)
    run = distillation_config(
        DistillConfig(teacher=str(german), start=str(tiny_model_dir), sentences=10), train=[str(corpus)]
    )
    from onparse.training.runfolder import trainer

    with pytest.raises(ValueError, match="the teacher .* reads de text; this text is 'en'"):
        trainer(run, work_dir=tmp_path / "run")
    with pytest.raises(ValueError, match="reads 'de' text and this pipeline is 'en'"):
        spacy.blank("en").add_pipe("onparse", config={"model": str(german)})


def test_the_raw_text_path_types_chinese_without_spaces_and_skips_trees_without_words(tmp_path):
    from nltk import Tree

    from onparse.parsing.evaluate import read_typed_gold, typed_back
    from onparse.text.treebank import RULES

    chinese = Tree.fromstring("(IP (NP (NR 北京)) (VP (VV 下雨)) (PU 。))")
    assert typed_back([chinese], "zh") == [(["北京", "下雨", "。"], "北京下雨。")]  # jieba segments it afresh
    assert (
        typed_back([Tree.fromstring("(S (NP (NNS Dogs)) (VP (VBP bark) (-NONE- *T*)) (. .))")], "en")[0][1]
        == "Dogs bark."
    )
    gold = tmp_path / "gold.mrg"
    gold.write_text("(S (-NONE- *T*))\n(S (NP (NNS Dogs)) (VP (VBP bark)) (. .))\n")
    sentences, trees = read_typed_gold(str(gold), RULES["ptb"])
    assert [s.words for s in sentences] == [("Dogs", "bark")] and len(trees) == 1


def test_invisible_format_marks_are_no_tokens():
    assert tokenizer("en")("The cat\u200b sat \u200f on the\u00ad mat.") == [
        "The",
        "cat",
        "sat",
        "on",
        "the",
        "mat",
        ".",
    ]
    assert tokenizer("de")("Die \u200b Katze") == ["Die", "Katze"]


def test_text_written_without_spaces_is_refused_under_a_language_split_at_spaces_and_taken_once_split(tmp_path):
    thai = tmp_path / "thai.txt"
    thai.write_text("แมวนั่งบนเสื่อในบ้านของฉัน\nสุนัขเห่าเสียงดังมากในตอนเช้า\n")
    with pytest.raises(ValueError, match="without spaces between words, as 'th' is, but --language xx .*--language th"):
        read_sentences([str(thai)], "xx")
    split = tmp_path / "split.txt"
    split.write_text("แมว นั่ง บน เสื่อ ใน บ้าน ของ ฉัน\nสุนัข เห่า เสียง ดัง มาก\n")
    assert words([str(split)], "xx")[1] == ["สุนัข", "เห่า", "เสียง", "ดัง", "มาก"]
    chinese = tmp_path / "zh.txt"
    chinese.write_text("猫坐在垫子上面睡觉了很久很久。\n")
    with pytest.raises(ValueError, match="as 'zh' is"):
        read_sentences([str(chinese)], "en")


def test_a_language_no_tokenizer_here_knows_is_a_bad_option_before_any_folder(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat\n" * 10)
    for command in (["train", "--train", str(corpus)], ["fit", "--train", str(corpus), "--dev", str(corpus)]):
        result = CliRunner().invoke(main, command + ["--language", "qq", "--out", str(tmp_path / "run")])
        assert result.exit_code == 2 and "not a language code" in result.output and not (tmp_path / "run").exists()


def test_training_text_already_split_into_tokens_is_taken_as_given(tmp_path):
    from onparse.config import TrainConfig
    from onparse.plan import FitPlan

    text = tmp_path / "tokens.txt"
    text.write_text("Stocks don't fall ,\nแมวนั่งบนเสื่อในบ้านของฉันเอง ตอนเช้า\n")
    assert [s.tokens for s in read_sentences([str(text)], "en", tokenized=True)] == [
        ("Stocks", "don't", "fall", ","),
        ("แมวนั่งบนเสื่อในบ้านของฉันเอง", "ตอนเช้า"),
    ]
    assert read_sentences([str(text)][:1], "en")[0].tokens == ("Stocks", "do", "n't", "fall", ",")
    for settings in (TrainConfig(tokenized="yes"), FitPlan(train=[str(text)], dev=str(text), tokenized=1)):
        with pytest.raises(ValueError, match="tokenized must be true or false"):
            settings.check()
