"""A third family is one module, through the fit: a toy family declared in this file alone (its settings, model,
training, student objective and dev figures) is registered at run time and fitted beside ON-LSTMs by ``onparse
fit``, members to card, and resumed, with no module of onparse changed for it."""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from torch import nn

from onparse import families
from onparse.families.base import FitSection
from onparse.families.onlstm import ONLSTM
from onparse.settings import Reading

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAME = "unigram"


@dataclass
class UnigramConfig:
    """A unigram model's size: its vocabulary alone."""

    family: ClassVar[str] = NAME
    vocab_size: int = 60

    def check(self) -> None:
        if type(self.vocab_size) is not int or self.vocab_size < 3:
            raise ValueError(f"vocab_size must be a whole number of at least 3, not {self.vocab_size!r}")


class UnigramModel(nn.Module):
    """Each word's probability; a word's distance is its surprisal, so the tree splits before the rarest word."""

    stores_matmul_weights = False

    def __init__(self, config: UnigramConfig):
        super().__init__()
        self.config = config
        self.logits = nn.Parameter(torch.zeros(config.vocab_size))

    @classmethod
    def from_weights(cls, config: UnigramConfig, state: dict) -> "UnigramModel":
        model = cls(config)
        model.load_state_dict({name: tensor.float() for name, tensor in state.items()})
        return model

    def no_words_output(self) -> np.ndarray:
        return np.zeros((1, 0))

    def sentence_outputs(self, read, batch, reading, eos_id, compute_dtype) -> list[np.ndarray]:
        surprisal = -torch.log_softmax(self.logits.detach().float(), 0)
        return [surprisal[torch.tensor(ids, dtype=torch.long)].numpy()[None, :] for ids in read]

    def nll(self, ids: list[int]) -> torch.Tensor:
        return -torch.log_softmax(self.logits, 0)[torch.tensor(ids, dtype=torch.long)].sum()


class WordsObjective:
    """The words' likelihood, a few sentences an update."""

    train_mode = True

    def __init__(self, sentences: list[list[int]], size: int = 50):
        self.batches = [sentences[start : start + size] for start in range(0, len(sentences), size)]
        self.batches_per_epoch = len(self.batches)

    def loss(self, model, epoch, batch, dtype):
        ids = [word for sentence in self.batches[batch] for word in sentence]
        return model.nll(ids) / max(1, len(ids)), len(ids), {}

    def new_epoch(self) -> None:
        pass

    def state(self) -> list:
        return []

    def restore(self, state, device) -> None:
        pass


def perplexity(sentences: list[list[int]]):
    words = [word for sentence in sentences for word in sentence]

    @torch.no_grad()
    def figures(model, dtype) -> dict[str, float]:
        return {"dev_ppl": math.exp(model.nll(words).item() / max(1, len(words)))}

    return figures


def unigram_setup(config, checkpoint=None, ranks=None):
    from onparse.text.corpus import read_corpus, training_sentences
    from onparse.text.vocabulary import Vocabulary
    from onparse.training.train import Setup

    sentences = training_sentences(config)
    vocab = Vocabulary(checkpoint["vocab"]) if checkpoint else Vocabulary.build(sentences, config.model.vocab_size)
    dev = config.dev and read_corpus([config.dev], config.language, config.encoding, config.reading, config.tokenized)
    model = UnigramModel(UnigramConfig(vocab_size=len(vocab)))
    data = [vocab.ids(sentence) for sentence in sentences]
    return Setup(model, vocab, WordsObjective(data), dev and perplexity([vocab.ids(s) for s in dev]))


def unigram_student(config, sentences, found, vocab, shares=None):
    from onparse.text.reading import model_tokens

    return WordsObjective([vocab.ids(model_tokens(config.reading, sentence)) for sentence in sentences])


def unigram_dev_figures(config, sentences, vocab, device):
    from onparse.text.reading import model_tokens

    return perplexity([vocab.ids(model_tokens(config.reading, sentence)) for sentence in sentences])


@dataclass
class UnigramSection(FitSection):
    """The unigram members of a fit: a small vocabulary, a student of each teacher."""

    model: UnigramConfig = field(default_factory=UnigramConfig)
    students: int | None = 1


class Unigram(families.Family):
    """Unigram members: a word's distance is its surprisal; they read the words left to right."""

    name, settings = NAME, UnigramConfig
    parts: ClassVar[dict] = {
        part: f"{__name__}:{attribute}"
        for part, attribute in (
            ("model", "UnigramModel"),
            ("training_setup", "unigram_setup"),
            ("student_objective", "unigram_student"),
            ("dev_figures", "unigram_dev_figures"),
        )
    }
    reads_either_way, reads_distances = False, True
    training: ClassVar[dict] = {"lr": 0.1, "default_layer": NAME}
    student_training: ClassVar[dict] = {"lr": 0.1, "batch_size": 50}
    longest_sentence = 1000
    section = UnigramSection
    option_prefix, plural, students_plural, unit = NAME, "unigrams", "unigram students", "words"

    def readouts(self, settings):
        return [NAME]

    def default_readout(self, settings):
        return NAME

    def owns(self, layer):
        return layer == NAME

    def check_layer(self, value, settings=None):
        if value != NAME:
            raise ValueError(f"{value!r} is no readout of a unigram model ({NAME!r})")
        return value

    def member_tree(self, output, layer):
        return ONLSTM().member_tree(output, 1)

    def words(self, output):
        return output.shape[-1]

    def describe_readout(self, layer, alone=True):
        return "unigram surprisal" if alone else NAME

    def describe_source(self, layer):
        return "a unigram model's surprisals"

    def untrained_name(self, layer):
        return NAME

    def check_reading(self, reading, student):
        if reading.direction != "forward" or reading.punctuation:
            raise ValueError("a unigram model reads the words, left to right")

    def fit_reading(self, punctuation, direction):
        return Reading()

    def describe_reading(self, reading):
        return "a unigram model over the words"

    def batch_share(self, batch_size, processes):
        return "all of it"


@pytest.fixture
def unigram(monkeypatch):
    monkeypatch.setitem(families.REGISTRY, NAME, Unigram())
    return NAME


@pytest.mark.slow
def test_a_family_registered_at_run_time_is_fitted_beside_the_onlstms_to_a_resumable_model(unigram, tmp_path):
    from onparse.cli import main
    from onparse.parsing.parse import Parser

    out = tmp_path / "fit"
    command = [
        "fit",
        "--train",
        str(EXAMPLES / "corpus.txt"),
        "--dev",
        str(EXAMPLES / "dev.txt"),
        "--out",
        str(out),
        "--family",
        "onlstm",
        "--family",
        unigram,
        "--members",
        "2",
        "--member-epochs",
        "1",
        "--embedding-size",
        "16",
        "--hidden-size",
        "24",
        "--chunk-size",
        "4",
        "--vocab-size",
        "60",
        "--direction",
        "forward",
        "--no-punctuation",
        "--sentences",
        "100",
        "--scratch-passes",
        "1",
        "--evals-per-epoch",
        "1",
        "--dtype",
        "fp32",
        "--threads",
        "1",
        "--hours",
        "1",
    ]
    stopped = CliRunner().invoke(main, [*command[:-2], "--hours", "0.00001"])
    assert stopped.exit_code == 3, stopped.output  # sized, timed, stopped at its hours: resumable
    done = CliRunner().invoke(main, ["fit", "--out", str(out), "--resume", "--threads", "1"])
    assert done.exit_code == 0, done.output
    record = json.loads((out / "fit.json").read_text())
    names = [entry["name"] for entry in record["stages"]]
    assert names == ["member-1", "member-2", "ensemble-1", "scratch", "unigram-student-1", "model"]
    assert set(record["budget"]["rates"]) == {"onlstm", unigram}
    assert {"unigrams", "unigram students"} <= set(record["budget"]["predicted_minutes"])  # paid for by name
    parser = Parser.load(out / "model")
    assert sorted(member.bundle.family for member in parser.members) == ["onlstm", "onlstm", unigram, unigram]
    parsed = parser.parse("the cat sat on the mat")
    assert len(parsed.tree.leaves()) == 6 and len(parsed.built.member_trees) == 4  # the unigrams vote too
    card = (out / "model" / "card.md").read_text()
    assert "unigram-student-1" in card and "unigram" in card.split("Sized to")[1]  # its rate, by name
