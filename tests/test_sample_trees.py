"""scripts/sample_trees.py: a sample of a treebank keeps its trees as they were, and leaves an existing file alone."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, SLACK

from onparse.treebank import read_gold

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "sample_trees.py"


def sample(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=SLACK * 12)


def test_a_sample_reads_back_as_the_same_sentences_and_trees(tmp_path):
    source = str(FIXTURES / "ctb_style.mrg")
    out = tmp_path / "one.mrg"
    done = sample(source, str(out), "--sentences", "1", "--seed", "3")
    assert done.returncode == 0, done.stderr
    originals = {(g.tokens, g.words, g.spans) for g in read_gold(source)}
    kept = [(g.tokens, g.words, g.spans) for g in read_gold(str(out))]
    assert len(kept) == 1 and kept[0] in originals


@pytest.mark.slow
def test_an_existing_output_is_left_alone_and_too_large_a_sample_refused(tmp_path):
    out = tmp_path / "mine.mrg"
    out.write_text("my own notes\n")
    done = sample(str(FIXTURES / "ldc_style.mrg"), str(out), "--sentences", "1")
    assert done.returncode != 0 and "exists" in done.stderr and out.read_text() == "my own notes\n"
    done = sample(str(FIXTURES / "ldc_style.mrg"), str(tmp_path / "new.mrg"), "--sentences", "3")
    assert done.returncode != 0 and "fewer than" in done.stderr and not (tmp_path / "new.mrg").exists()
