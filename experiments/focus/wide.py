"""A grammar student from scratch of another shape than its start's (distill has no shape flag): the run's
config made as ``onparse distill`` makes it, its grammar widened, then trained (or resumed) as distill trains.

    python3 experiments/focus/wide.py OUT NONTERMINALS PRETERMINALS -- DISTILL_FLAGS...
"""

import sys
from dataclasses import replace
from pathlib import Path

from onparse.config import DistillConfig
from onparse.hardware import use_threads
from onparse.training import runfolder
from onparse.training.distill import distillation_config

out, nonterminals, preterminals = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
flags = dict(zip(sys.argv[5::2], sys.argv[6::2]))  # --name value pairs (bool flags are set below)


def new_config():
    spec = DistillConfig(
        teacher=flags["--teacher"],
        start=flags["--student"],
        from_scratch=True,
        sentences=40000,
        sample_seed=int(flags["--sample-seed"]),
        trees=flags["--trees"],
        focus=float(flags["--focus"]),
    )
    config = distillation_config(
        spec,
        train=flags["--train"].split(","),
        dev=flags["--dev"],
        dev_gold=flags["--dev-gold"],
        epochs=int(flags["--passes"]),
        seed=int(flags["--seed"]),
        evals_per_epoch=int(flags["--evals-per-pass"]),
        select_by="dev_ppl",
    )
    return replace(config, model=replace(config.model, nonterminals=nonterminals, preterminals=preterminals))


use_threads(1)
resume = (out / "checkpoint.pt").exists()
with runfolder.opened(out, resume, False, new_config) as config:
    runfolder.train(config, out, resume=resume, command=" ".join(sys.argv))
