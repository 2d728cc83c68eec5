"""The model stage a fit's command would build with two --student-direction, from stages trained apart.

    python scripts/other_student.py runs/fit/wsj-both runs/exp/wsj-scratch-backward backward
    python scripts/students_vote.py runs/fit/wsj-both runs/exp/wsj-scratch-backward runs/exp/students-vote forward
    backward

A maintainer tool for measuring issue 29's lever 4 without rerunning a fit: the second student must have been
trained with the config the command gives its stage ``scratch-2`` (``other_student.py`` does so). Prints the
model stage's record (layers by the plan's rule, dev F1 with gold trees for the record), and that of the vote
with the second student in place of the first.
"""

import json
import sys
from pathlib import Path

import torch

from onparse.fit.runners import ensemble_stage
from onparse.fit.stages import Stage, stages
from onparse.plan import FitPlan

torch.set_num_threads(1)
fit, other, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
out.mkdir(parents=True, exist_ok=True)
record = json.load(open(fit / "fit.json"))
plan = FitPlan.from_dict(record["plan"]).with_section("onlstm", student_directions=sys.argv[4:6])
model = {s.name: s for s in stages(plan, fit, record)}["model"]
links = {
    "scratch": fit / "scratch",
    "scratch-2": other,
    **{m: fit / m for m in model.members if m.startswith("member-")},
}
for name, target in links.items():
    if not (out / name).exists():
        (out / name).symlink_to(Path(target).resolve())
for members in ([*model.members], ["scratch-2", *model.members[2:]]):
    name = "model" if members == model.members else "model-second-student-only"
    figures = (
        ensemble_stage(Stage(name, members=members), plan, out)
        if name == "model"
        else ensemble_stage(Stage("ensemble-x", members=members), plan, out)
    )
    print(name, members, json.dumps(figures))
