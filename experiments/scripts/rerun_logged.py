"""Train a run again from a row of experiments/log.jsonl (its recorded config), with JSON changes, in a run folder
of its own; run it again with the same folder to resume. For settings the command line does not take (Adam's beta1,
weight decay) and for reproducing a logged experiment exactly.

    python scripts/rerun_logged.py exp33/wsj-30-kim-decay-s1114 runs/exp33/again
    python scripts/rerun_logged.py exp33/wsj-30-s1111 runs/exp33/compound '{"seed": 1114, "model": {"latent_size": 64}}'
"""

import json
import sys
from pathlib import Path

import torch

from onparse.config import TrainConfig
from onparse.training import runfolder

torch.set_num_threads(1)
name, out = sys.argv[1], Path(sys.argv[2])
changes = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
rows = {row["name"]: row for row in map(json.loads, open(Path(__file__).resolve().parent.parent / "log.jsonl"))}
if name not in rows:
    sys.exit(f"rerun_logged.py: no row {name!r} in experiments/log.jsonl")
resume = (out / "config.json").exists()


def new_config() -> TrainConfig:
    config = dict(rows[name]["config"])
    for key, value in changes.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) else value
    return TrainConfig.from_dict(config)


with runfolder.opened(out, resume, False, new_config, None) as config:
    runfolder.train(config, out, resume=resume)
