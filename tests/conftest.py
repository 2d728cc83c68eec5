"""Shared fixtures: a tiny random model directory, and where the treebank lives."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest
import torch

from onparse.families import OnlstmConfig
from onparse.families.onlstm.model import OnlstmModel
from onparse.store import modeldir
from onparse.text.vocabulary import Vocabulary

FIXTURES = Path(__file__).parent / "fixtures"
PTB = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ptb" / "wsj"
# A test's subprocess is taken for hung past SLACK times a bound on what its work takes alone (``SLACK * 60``: a
# minute's work): CI has run the suite four to six times slower on a busy machine than alone, so no limit here is
# one a loaded machine reaches (ONPARSE_TEST_SLACK sets another factor).
SLACK = float(os.environ.get("ONPARSE_TEST_SLACK", "15"))


# Every process a test starts leads a process group of its own, ended with the test (and, after Ctrl-C, when pytest
# exits): a torchrun's workers or an interrupted fit never outlive the run.
STARTED: list[subprocess.Popen] = []
_start = subprocess.Popen.__init__


def _started_in_its_own_group(self, *args, **kwargs) -> None:
    kwargs.setdefault("start_new_session", True)
    _start(self, *args, **kwargs)
    STARTED.append(self)


subprocess.Popen.__init__ = _started_in_its_own_group


def end_started() -> None:
    """End every process group the tests started that still runs."""
    while STARTED:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(STARTED.pop().pid, signal.SIGKILL)


atexit.register(end_started)


@pytest.fixture(autouse=True)
def _processes_end_with_their_test():
    yield
    end_started()


@pytest.fixture(autouse=True)
def _tiny_fits_keep_their_students_vote(monkeypatch):
    """The tiny models a test fits in seconds parse in near fixed shapes, by chance nearer or farther than their
    teacher: the fit's check of its model against its teacher stands aside in every test but those that set
    ``runners.SHAPE_DRIFT`` (``test_fit``'s)."""
    from onparse.fit import runners

    monkeypatch.setattr(runners, "SHAPE_DRIFT", float("inf"))


def tiny_model(seed: int = 0) -> tuple[OnlstmModel, Vocabulary]:
    torch.manual_seed(seed)
    vocab = Vocabulary(["<eos>", "<unk>", "the", "cat", "sat", "on", "mat", "a", "dog", "N"])
    config = OnlstmConfig(vocab_size=len(vocab), embedding_size=8, hidden_size=12, n_layers=3, chunk_size=4)
    return OnlstmModel(config).eval(), vocab


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    model, vocab = tiny_model()
    path = tmp_path_factory.mktemp("models") / "tiny"
    modeldir.save(path, model, vocab, default_layer=2, card={"note": "random weights for tests"})
    return path


def ptb_section(section: str) -> Path:
    """The section's folder, or a skip naming the path looked for."""
    path = PTB / section
    if not path.is_dir():
        pytest.skip(f"Penn Treebank not found at {path}")
    return path


@pytest.fixture(scope="session")
def tiny_ensemble_dir(tmp_path_factory) -> Path:
    """Three tiny random members (seeds 0, 1, 2) held inside an ensemble directory."""
    path = tmp_path_factory.mktemp("models") / "ensemble"
    members = []
    for seed in range(3):
        model, vocab = tiny_model(seed)
        members.append(path / f"seed-{seed}")
        modeldir.save(members[-1], model, vocab, default_layer=2)
    modeldir.save_ensemble(path, members, card={"note": "random members for tests"})
    return path
