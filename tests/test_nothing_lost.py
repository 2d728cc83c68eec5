"""Nothing a user typed, trained or shipped is deleted or replaced, and no model folder carries what lies outside it.

Each command that replaces a folder first checks it is its own kind (a run,
an ensemble), outside the shipped models, and that the new work's inputs are
there; copies of model folders take the model's own files and never follow links.
"""

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import tiny_model

from onparse.cli import main
from onparse.store import modeldir, shipped

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TINY = [
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
]


def run(*arguments):
    return CliRunner().invoke(main, [str(a) for a in arguments])


def train(out: Path, *extra):
    return run("train", "--train", EXAMPLES / "corpus.txt", "--dev", EXAMPLES / "dev.txt", "--out", out, *TINY, *extra)


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def users_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "userdir"
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\section{Results}\n")
    (folder / "sub" / "results.csv").write_text("f1\n55.5\n")
    return folder


def model(path: Path, seed: int = 0) -> Path:
    weights, vocab = tiny_model(seed)
    modeldir.save(path, weights, vocab, default_layer=2)
    return path


def test_overwrite_never_empties_a_folder_that_is_not_a_run(tmp_path):
    folder = users_folder(tmp_path)
    before = snapshot(folder)
    refused = train(folder, "--overwrite")
    assert refused.exit_code == 2 and "not a training run's" in refused.stderr
    assert snapshot(folder) == before and not (folder / ".lock").exists()


@pytest.mark.slow
def test_overwrite_checks_the_new_runs_inputs_before_deleting_the_old_run(tmp_path):
    assert train(tmp_path / "run").exit_code == 0
    before = snapshot(tmp_path / "run")
    refused = run(
        "train",
        "--train",
        tmp_path / "typo.txt",
        "--dev",
        EXAMPLES / "dev.txt",
        "--out",
        tmp_path / "run",
        "--overwrite",
        *TINY,
    )
    assert refused.exit_code == 2 and "typo.txt" in refused.stderr  # a path that names nothing: exit 2
    assert snapshot(tmp_path / "run") == before
    assert train(tmp_path / "run", "--overwrite").exit_code == 0  # a run folder with its inputs found is replaced


@pytest.mark.slow
def test_a_distillation_never_deletes_its_own_teacher_or_a_mistyped_ones_run(tmp_path):
    assert train(tmp_path / "run").exit_code == 0
    before = snapshot(tmp_path / "run")
    common = [
        "--train",
        EXAMPLES / "corpus.txt",
        "--dev",
        EXAMPLES / "dev.txt",
        "--passes",
        "1",
        "--sentences",
        "20",
        "--out",
        tmp_path / "run",
        "--overwrite",
    ]
    inside = run("distill", "--teacher", tmp_path / "run" / "model", "--student", tmp_path / "run" / "model", *common)
    assert inside.exit_code == 2 and "inside --out" in inside.stderr
    mistyped = run("distill", "--teacher", tmp_path / "no-such-model", "--student", tmp_path / "run" / "model", *common)
    assert mistyped.exit_code == 2 and "no-such-model" in mistyped.stderr
    assert snapshot(tmp_path / "run") == before


def test_an_ensemble_replaces_only_an_ensemble_and_never_its_own_members(tmp_path):
    members = [model(tmp_path / "a"), model(tmp_path / "b", 1)]
    folder = users_folder(tmp_path)
    before = snapshot(folder)
    assert run("ensemble", *members, "--out", folder, "--overwrite").exit_code == 2 and snapshot(folder) == before
    kept = snapshot(members[0])
    itself = run("ensemble", members[0], "--out", members[0], "--link", "--overwrite")
    assert itself.exit_code == 2 and snapshot(members[0]) == kept
    assert run("ensemble", *members, "--out", tmp_path / "e").exit_code == 0
    holding = run("ensemble", tmp_path / "e" / "members" / "a", "--out", tmp_path / "e", "--link", "--overwrite")
    assert holding.exit_code == 2 and "inside --out" in holding.stderr
    assert run("ensemble", *members, "--out", tmp_path / "e", "--overwrite", "--right-branching-voter").exit_code == 0


def test_an_ensemble_of_the_runs_in_a_folder_is_written_around_them_and_replaces_nothing(tmp_path):
    """``ensemble runs/a runs/b --out runs --link --overwrite`` (runs/ens meant): two files join the folder; its
    members and the user's notes stay, the ensemble parses; a second time, the folder is no ensemble to replace."""
    runs = tmp_path / "runs"
    members = [model(runs / "a"), model(runs / "b", 1)]
    (runs / "notes.txt").write_text("keep me\n")
    before = snapshot(runs)
    made = run("ensemble", *members, "--out", runs, "--link", "--overwrite")
    assert made.exit_code == 0, made.stderr
    after = snapshot(runs)
    assert {name: after[name] for name in before} == before and set(after) - set(before) == {"config.json", "card.json"}
    assert json.loads((runs / "config.json").read_text())["ensemble"]["members"] == ["a", "b"]
    assert run("--model", runs, "--threads", "1", "the cat sat").stdout.startswith("(X")
    again = run("ensemble", *members, "--out", runs, "--link", "--overwrite")
    assert again.exit_code == 2 and snapshot(runs) == after
    copied = run("ensemble", *members, "--out", tmp_path / "ens2")  # copies go to a new folder as always
    assert copied.exit_code == 0


def test_nothing_is_written_into_the_shipped_models(tmp_path):
    member = model(tmp_path / "a")
    for target in (shipped.MODELS / "onlstm-negra", shipped.MODELS):
        before = (target / "config.json").read_bytes() if (target / "config.json").is_file() else None
        refused = run("ensemble", member, "--out", target, "--overwrite")
        assert refused.exit_code == 2 and "shipped model" in refused.stderr
        assert before is None or (target / "config.json").read_bytes() == before
    for model_folder in (shipped.DEFAULT_MODEL, modeldir.read_ensemble(shipped.MODELS / "onlstm-negra").members[0]):
        before = (model_folder / "weights.pt").read_bytes()
        refused = train(model_folder, "--overwrite")
        assert refused.exit_code == 2 and (model_folder / "weights.pt").read_bytes() == before
        assert modeldir.load(model_folder).path == model_folder


def test_an_ensemble_copies_its_members_own_files_and_never_what_links_point_to(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE KEY")
    member = model(tmp_path / "a")
    (member / "notes").symlink_to(secret)
    (member / "root").symlink_to("/")
    made = run("ensemble", member, "--out", tmp_path / "e")
    assert made.exit_code == 0, made.output
    copied = tmp_path / "e" / "members" / "a"
    assert sorted(p.name for p in copied.iterdir()) == ["config.json", "vocab.txt", "weights.pt"]
    assert not any("PRIVATE" in p.read_text(errors="replace") for p in (tmp_path / "e").rglob("*") if p.is_file())
    (member / "notes").unlink()
    (member / "weights.pt").rename(tmp_path / "weights.pt")
    (member / "weights.pt").symlink_to(tmp_path / "weights.pt")  # a model file that is a link: refused, not followed
    linked = run("ensemble", member, "--out", tmp_path / "e2")
    assert linked.exit_code == 2 and "symbolic link" in linked.stderr and not (tmp_path / "e2").exists()


@pytest.mark.parametrize("overwrite", [False, True])
def test_ensemble_folders_get_the_usual_modes(tmp_path, overwrite):
    members = [model(tmp_path / "a")]
    previous = os.umask(0o022)
    try:
        if overwrite:
            assert run("ensemble", *members, "--out", tmp_path / "e").exit_code == 0
            os.chmod(tmp_path / "e", 0o750)
        assert (
            run("ensemble", *members, "--out", tmp_path / "e", *(["--overwrite"] if overwrite else [])).exit_code == 0
        )
    finally:
        os.umask(previous)
    assert (tmp_path / "e").stat().st_mode & 0o777 == (0o750 if overwrite else 0o755)
    assert json.loads((tmp_path / "e" / "config.json").read_text())["ensemble"]["members"] == ["members/a"]


def test_copies_a_killed_writer_left_are_removed_by_the_next_write_and_a_running_writers_are_kept(tmp_path):
    import subprocess

    from onparse.store.atomic import replacing_file, replacing_folder

    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id no process holds now
    target, folder = tmp_path / "trees.txt", tmp_path / "model"
    abandoned = [tmp_path / f".trees.txt.{gone.pid}.x1y2.part", tmp_path / f".model.{gone.pid}.z3.part"]
    abandoned[0].write_text("half")
    abandoned[1].mkdir()
    running = tmp_path / f".trees.txt.{os.getpid()}.w9.part"
    running.write_text("being written")
    with replacing_file(target) as out:
        out.write("(X a b)\n")
    with replacing_folder(folder) as inside:
        (inside / "config.json").write_text("{}")
    assert not any(path.exists() for path in abandoned) and running.exists()
    assert target.read_text() == "(X a b)\n" and (folder / "config.json").exists()


@pytest.mark.parametrize("stop", [RuntimeError, KeyboardInterrupt])
def test_a_write_stopped_midway_leaves_the_old_file_whole_and_no_part_of_the_new(tmp_path, stop):
    from onparse.store.atomic import replacing_file, replacing_folder

    target, folder = tmp_path / "trees.txt", tmp_path / "model"
    target.write_text("old trees\n")
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(stop):
        with replacing_file(target) as out:
            out.write("half of the new")
            out.flush()
            assert target.read_text() == "old trees\n"  # nothing of the new is at the name while it is written
            raise stop()
    with pytest.raises(stop):
        with replacing_folder(folder) as inside:
            (inside / "weights.pt").write_bytes(b"half")
            raise stop()
    assert target.read_text() == "old trees\n" and [p.name for p in folder.iterdir()] == ["config.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "trees.txt"]  # no part file left beside them
    with replacing_file(target) as out:
        out.write("new trees\n")
    assert target.read_text() == "new trees\n"
