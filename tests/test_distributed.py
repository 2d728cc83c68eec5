"""Training across processes: torchrun with DistributedDataParallel on the CPU (gloo)."""

import json
import os
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from conftest import SLACK

from onparse.config import TrainConfig
from onparse.families import OnlstmConfig, PcfgConfig
from onparse.families.pcfg import PCFG_TRAINING
from onparse.training import distributed
from onparse.training.runfolder import read_checkpoint
from onparse.training.runfolder import trainer as make_trainer

pytestmark = pytest.mark.slow  # fits, subprocesses, wheels and docs builds: make test, not test-fast

ROOT = Path(__file__).resolve().parents[1]
CORPUS, DEV = str(ROOT / "examples" / "corpus.txt"), str(ROOT / "examples" / "dev.txt")
NO_DROPOUT = OnlstmConfig(
    vocab_size=200,
    embedding_size=16,
    hidden_size=24,
    chunk_size=4,
    dropout=0.0,
    dropouth=0.0,
    dropouti=0.0,
    dropoute=0.0,
    wdrop=0.0,
)
CONFIG = TrainConfig(train=[CORPUS], model=NO_DROPOUT, batch_size=8, bptt=10, epochs=1, dtype="fp32", warmup_updates=1)


def first_update(rank: int, world: int, port: int, out: str, config: TrainConfig = CONFIG) -> None:
    """One rank of a launch: one update, rank 0 saves the weights, the words counted and its objective."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    torch.set_num_threads(1)
    trainer = make_trainer(config, ranks=distributed.Ranks(rank, world))  # as the command passes what it read
    next(trainer.steps())
    if rank == 0:
        torch.save(
            {
                "model": trainer.model.state_dict(),
                "tokens": trainer.run.tokens_seen,
                "columns": getattr(trainer.objective, "data", torch.empty(0, 0)).size(1),
            },
            out,
        )
    distributed.leave()


GRAMMAR = TrainConfig(
    train=[CORPUS],
    family="pcfg",
    model=PcfgConfig(vocab_size=200, nonterminals=3, preterminals=4, symbol_size=8),
    **{**PCFG_TRAINING, "batch_size": 150, "epochs": 1, "dtype": "fp32", "warmup_updates": 1},
)


def test_two_ranks_take_a_grammars_first_update_one_process_takes(tmp_path):
    one = make_trainer(GRAMMAR)
    batch = one.objective.batches(0)[0]
    assert len(batch) % 2 == 1  # the ranks' shares differ by a sentence: the loss scaling must still be exact
    mp.spawn(first_update, args=(2, free_port(), str(tmp_path / "two.pt"), GRAMMAR), nprocs=2)
    two = torch.load(tmp_path / "two.pt", weights_only=True)
    start = {name: tensor.clone() for name, tensor in one.model.state_dict().items()}
    next(one.steps())
    assert two["tokens"] == one.run.tokens_seen == len(batch) * len(one.objective.sentences[batch[0]])
    for name, tensor in one.model.state_dict().items():
        assert not torch.equal(tensor, start[name]), name  # every rule network moved
        torch.testing.assert_close(two["model"][name], tensor, rtol=1e-5, atol=1e-6)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_two_ranks_with_half_the_batch_take_the_first_update_one_process_takes(tmp_path):
    mp.spawn(first_update, args=(2, free_port(), str(tmp_path / "two.pt")), nprocs=2)
    two = torch.load(tmp_path / "two.pt", weights_only=True)
    one = make_trainer(CONFIG)
    start = {name: tensor.clone() for name, tensor in one.model.state_dict().items()}
    next(one.steps())
    assert two["columns"] == CONFIG.batch_size // 2 and two["tokens"] == one.run.tokens_seen
    for name, tensor in one.model.state_dict().items():
        assert not torch.equal(tensor, start[name]) or name.startswith("embedding"), (
            name
        )  # the update moved the weights
        torch.testing.assert_close(two["model"][name], tensor, rtol=1e-5, atol=1e-6)


def torchrun(*args: str, cwd: Path, command: str = "train") -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "onparse",
            command,
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=SLACK * 60,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def test_two_processes_train_the_loss_falls_and_the_run_resumes(tmp_path):
    options = [
        "--train",
        CORPUS,
        "--dev",
        DEV,
        "--out",
        "run",
        "--embedding-size",
        "16",
        "--hidden-size",
        "24",
        "--chunk-size",
        "4",
        "--vocab-size",
        "200",
        "--batch-size",
        "8",
        "--bptt",
        "10",
        "--lr",
        "0.01",
        "--evals-per-epoch",
        "2",
    ]
    first = torchrun(*options, "--epochs", "3", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "training on 2 processes, 4 of the 8 streams each" in first.stderr
    assert first.stdout.count("trained 3 epochs") == 1  # rank 0 alone speaks
    resumed = torchrun("--out", "run", "--resume", "--epochs", "5", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    history = [json.loads(line) for line in (tmp_path / "run" / "history.jsonl").read_text().splitlines()]
    assert [record["epoch"] for record in history] == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]
    assert [record["update"] for record in history] == sorted({record["update"] for record in history})
    assert history[-1]["dev_ppl"] < history[0]["dev_ppl"]
    checkpoint = read_checkpoint(tmp_path / "run")
    assert checkpoint["run"]["epoch"] == 5
    card = json.loads((tmp_path / "run" / "model" / "card.json").read_text())
    assert card["processes"] == 2


def test_the_carried_state_is_gathered_whole_and_scattered_back():
    state = [(torch.arange(8.0).view(8, 1), -torch.arange(8.0).view(8, 1))]
    halves = [distributed.scatter_columns(state, distributed.Ranks(rank, 2)) for rank in (0, 1)]
    assert [h.flatten().tolist() for ((h, _),) in halves] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(ValueError, match="multiple of 3"):
        distributed.own_columns(8, distributed.Ranks(0, 3))


def test_one_process_needs_no_process_group():
    assert (
        distributed.join("cpu", distributed.Ranks()) == distributed.Ranks() and not torch.distributed.is_initialized()
    )
    trainer = make_trainer(replace(CONFIG, epochs=1))
    assert trainer.replica is trainer.model


def test_a_fit_under_torchrun_trains_members_of_both_families_on_both_processes_and_finishes_on_one(tmp_path):
    text = (
        tmp_path / "text.txt"
    )  # the example text over SMALL_TEXT_TOKENS, so the re-plan weighs a turn of members more
    text.write_text(Path(CORPUS).read_text() * 30)
    done = torchrun(
        "--train",
        str(text),
        "--dev",
        DEV,
        "--out",
        "fit",
        "--members",
        "5",
        "--rounds",
        "0",
        "--member-epochs",
        "1",
        "--family",
        "onlstm",
        "--family",
        "pcfg",
        "--grammar-epochs",
        "1",
        "--nonterminals",
        "3",
        "--preterminals",
        "4",
        "--symbol-size",
        "8",
        "--embedding-size",
        "16",
        "--hidden-size",
        "24",
        "--chunk-size",
        "4",
        "--vocab-size",
        "60",
        "--sentences",
        "100",
        "--dtype",
        "fp32",
        "--hours",
        "1",
        cwd=tmp_path,
        command="fit",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("fit done") == 1
    assert done.stderr.count("fitting a parser to") == 1  # rank 0 sizes and opens the fit, both train as it says
    record = json.loads((tmp_path / "fit" / "fit.json").read_text())
    replanned = record["budget"]["replanned"]
    # an hour: a turn more, weighed at the first re-plan (after the trial) and kept by every one after it
    assert record["budget"]["replans"] > 1 and replanned["more_members"]["chosen"]
    probes = ["probe-forward-punctuation", "probe-forward-words"]
    assert [stage["name"] for stage in record["stages"]] == [
        "member-2",
        "member-4",
        *probes,
        "readings",
        "member-1",
        "member-3",
        "directions",
        "member-6",
        "member-5",
        "member-7",
        "ensemble-1",
        "scratch",
        "grammar-student-1",
        "grammar-student-2",
        "model",
    ]
    retired = next(stage for stage in record["stages"] if stage["name"] == "directions")["out_of_the_vote"]
    members = [
        f"member-{k}" for k in range(1, 8) if f"member-{k}" != retired
    ]  # the trial's other member: its figures kept
    cards = [json.loads((tmp_path / "fit" / member / "model" / "card.json").read_text()) for member in members]
    # the probes and the direction trial weighed by both, every member trained by both (those after the trial and the
    # re-plan too)
    assert [card["processes"] for card in cards] == [2] * 6 and "member-5" in members
    assert "one in 2 of the sentences of each" in done.stderr
    for student in ("scratch", "grammar-student-1"):
        assert json.loads((tmp_path / "fit" / student / "model" / "card.json").read_text())["processes"] == 1
    assert (tmp_path / "fit" / "model" / "card.md").is_file()
