"""Train a fit's student from scratch again, reading the other way: the stage ``scratch-2`` that
``--student-direction`` would add to that fit's command (its config but the direction), in a run folder of its own.

    python scripts/other_student.py runs/fit/negra-b200 runs/exp/negra-scratch-forward forward
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

import torch

from onparse.config import TrainConfig
from onparse.training import runfolder

torch.set_num_threads(1)
fit, out, direction = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
resume = (out / "config.json").exists()


def new_config():
    cfg = TrainConfig.from_dict(json.load(open(fit / "scratch" / "config.json")))
    return replace(cfg, reading=replace(cfg.reading, direction=direction))


with runfolder.opened(out, resume, False, new_config, None) as config:
    runfolder.train(config, out, resume=resume)
