"""The fit's stages, in order: members (and the reading probes and trials), ensembles, rounds, students and
generations; which are stale once a stage is added."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from onparse.config import DistillConfig, TrainConfig
from onparse.families import named
from onparse.plan import FitPlan
from onparse.settings import Reading

DISTILL_FIELDS = frozenset(item.name for item in fields(DistillConfig))

RECORD = "fit.json"


FINAL = "model"  # the last stage: the fit's parser, made again whenever a stage before it is added


TEACHERS = "ensemble-"  # the votes students learn (ensemble-R teaches round R, the last the students from scratch)


@dataclass
class Stage:
    """One step of the recipe: a training run (``config``) or an ensemble of earlier stages (``members``)."""

    name: str
    config: TrainConfig | None = None
    members: list[str] = field(default_factory=list)
    teacher: str | None = None  # an ensemble of students: the stage whose vote they learnt (their trees are compared)
    reference: list[str] | None = None  # the reading rule's stage: the models whose vote its candidates (members) meet
    trial: bool = False  # the direction trial's stage: its members read each way, the lower dev perplexity settles it


READINGS = "readings"  # the stage where the reading probes choose what the ON-LSTMs read


DIRECTIONS = "directions"  # the stage where the direction trial chooses which way the other ON-LSTMs read


PROBE_BATCH = 20  # streams of a probe's updates: about 180 updates of its sample, where a member's 64 would make 55


def probe_name(reading: Reading) -> str:
    return f"probe-{reading.direction}-" + ("punctuation" if reading.punctuation else "words")


def done_entries(record: dict | None) -> dict[str, dict]:
    """The record's entries of the stages done so far, by name (none before the fit's first)."""
    return {entry["name"]: entry for entry in (record or {}).get("stages", [])}


def chosen_reading(record: dict | None) -> Reading | None:
    """The reading the rules chose, once the ``readings`` stage (punctuation) or the ``directions`` stage (direction)
    is recorded (None before either): the trial's direction overrides the probes'."""
    done = done_entries(record)
    chosen = {**done.get(READINGS, {}).get("chosen", {}), **done.get(DIRECTIONS, {}).get("chosen", {})}
    return Reading.from_dict(chosen) if chosen else None


def trial_loser(record: dict | None) -> str | None:
    """The direction trial's member that does not vote, once the ``directions`` stage is recorded (None before)."""
    done = done_entries(record)
    return done.get(DIRECTIONS, {}).get("out_of_the_vote")


def stages(plan: FitPlan, out: Path, record: dict | None = None) -> list[Stage]:
    """The recipe's stages in order, each a run folder or ensemble directory under ``out``; ``record`` (what the fit
    has done so far) settles what depends on earlier stages (the reading the rule chose).

    Long: the recipe read top to bottom in the order its stages run; split, that order would be spread over
    functions."""
    chosen = chosen_reading(record)
    select = "dev_f1" if plan.select_by_gold else None
    common = dict(
        train=plan.train,
        dev=plan.dev,
        dev_gold=plan.dev_gold,
        default_layer=plan.layer,
        language=plan.language,
        encoding=plan.encoding,
        tokenized=plan.tokenized,
        dtype=plan.dtype,
        device=plan.device,
        evals_per_epoch=plan.evals_per_epoch,
        patience=plan.patience,
        select_by=select,
        keep_evaluations=plan.keep_evaluations,
    )
    members = [
        Stage(f"member-{k}", member_stage_config(plan, k, plan.reading(k, chosen), common))
        for k in range(1, plan.members + 1)
    ]
    as_trained = {stage.name for stage in members if not named(stage.config.family).refined_in_rounds}
    referees = [f"member-{k}" for k in plan.referees()]
    found = []
    if plan.chooses_reading:  # the members that referee the probes, the probes, then the directed ones as chosen
        lead = plan.directed_members()[0]  # the probes take the first directed member's shape and seed
        probes = [
            Stage(
                probe_name(reading),
                replace(
                    member_stage_config(plan, lead, reading, common),
                    epochs=plan.directed_section.probe_epochs,
                    batch_size=PROBE_BATCH,
                    evals_per_epoch=min(2, plan.evals_per_epoch),
                    sample_tokens=plan.directed_section.probe_tokens,
                ),
            )
            for reading in plan.candidate_readings()
        ]
        found += [  # the grammars first: a parser to publish as soon as one is trained, whatever the probes take
            *(stage for stage in members if stage.name in referees),
            *probes,
            Stage(READINGS, members=[stage.name for stage in probes], reference=referees),
        ]
    trial = [f"member-{k}" for k in plan.direction_trial]
    if trial:  # the two ON-LSTMs that read each way, then the rule that settles the others' direction
        found += [stage for stage in members if stage.name in trial] + [Stage(DIRECTIONS, members=trial, trial=True)]
    placed = {stage.name for stage in found}
    found += [stage for stage in members if stage.name not in placed]
    # a student keeps the shape and the reading of the model it starts from
    shapes = {stage.name: (stage.config.model, stage.config.reading) for stage in members}
    lineage = {f"member-{k}": k for k in range(1, plan.members + 1)}  # the member each model descends from
    voters = [stage.name for stage in members if stage.name != trial_loser(record)]
    found.append(Stage("ensemble-1", members=voters))
    previous = found[-1].members
    for r in range(1, plan.rounds + 1):
        teacher = str(out / f"ensemble-{r}")
        students = []
        for start in previous:
            if start in as_trained:  # a grammar learns from text alone: it votes again as it is
                students.append(start)
                continue
            k = lineage[start]  # named for the member it descends from, so names stay as voters settle
            section = plan.section(k)
            distill = DistillConfig(
                teacher=teacher,
                start=str(out / start / "model"),
                sentences=plan.sentences,
                sample_seed=plan.seed,
                trees=str(out / "teachers" / f"ensemble-{r}.jsonl"),
                rank_weight=plan.rank_weight,
                margin=plan.margin,
            )
            found.append(
                Stage(
                    f"round-{r}-{k}",
                    TrainConfig(
                        model=shapes[start][0],
                        reading=shapes[start][1],
                        epochs=section.finetune_passes,
                        lr=section.finetune_lr,
                        batch_size=section.student_batch_size,
                        seed=plan.seed + k - 1,
                        distill=distill,
                        **common,
                    ),
                )
            )
            students.append(found[-1].name)
            shapes[found[-1].name], lineage[found[-1].name] = shapes[start], k
        found.append(Stage(f"ensemble-{r + 1}", members=students))
        previous = students
    # students from scratch learn the last ensemble's trees, each family's with the shape, reading and vocabulary
    # of the first of its members that votes
    family_of = {stage.name: stage.config.family for stage in members}
    first_voter = {}
    for name in voters:
        first_voter.setdefault(family_of[name], name)
    starts = {  # in the order of the plan's families, whichever member the direction trial left out
        family: (str(out / first_voter[family] / "model"), *shapes[first_voter[family]])
        for family in plan.member_families()
        if family in first_voter
    }
    students = student_stages(plan, out, f"ensemble-{plan.rounds + 1}", "", starts, plan.seed, common)
    found.extend(students)
    voters = [*(stage.name for stage in students), *previous]  # grammars alone and no student: the first ensemble
    taught_by = f"ensemble-{plan.rounds + 1}" if students else None  # the vote the model's students learnt
    if plan.generations:  # self-training: each generation's students learn the vote before them, and vote
        found.append(Stage("generation-0", members=voters))
        for g in range(1, plan.generations + 1):
            if climb_ended(record, plan, g - 1):
                break
            students = student_stages(
                plan, out, f"generation-{g - 1}", f"generation-{g}-", starts, plan.seed + GENERATION_SEEDS * g, common
            )
            found.extend(students)
            voters = [stage.name for stage in students]
            found.append(Stage(f"generation-{g}", members=voters, teacher=f"generation-{g - 1}"))
            taught_by = f"generation-{g - 1}"
    found.append(Stage(FINAL, members=voters, teacher=taught_by))
    return found


# Seeds of generation g's students start at the plan's seed + GENERATION_SEEDS * g: apart from every earlier one's.
GENERATION_SEEDS = 100


def student_stages(
    plan: FitPlan, out: Path, teacher: str, prefix: str, starts: dict, seed: int, common: dict
) -> list[Stage]:
    """Students from scratch of one teacher (a stage's vote), all learning its trees of one sample of the training
    text: each family's (``Family.students``) from the first of its members that votes (``starts``: its folder,
    settings and reading, by family), seeds from ``seed``; names begin with ``prefix``."""
    distill = DistillConfig(
        teacher=str(out / teacher),
        from_scratch=True,
        sentences=plan.sentences,
        sample_seed=plan.seed,
        trees=str(out / "teachers" / f"{teacher}.jsonl"),
        rank_weight=plan.rank_weight,
        margin=plan.margin,
    )
    found = []
    for family, start in starts.items():
        for name, settings in named(family).students(plan.sections[family], start, seed, prefix, plan):
            run = {**common, **settings}  # a family's distillation settings (its start, a focus) go to the distill's
            own = {key: run.pop(key) for key in DISTILL_FIELDS & run.keys()}
            found.append(Stage(name, TrainConfig(distill=replace(distill, **own), **run)))
    return found


def climb_ended(record: dict | None, plan: FitPlan, generation: int) -> bool:
    """Whether the climb stops after ``generation`` (from 1): its vote's trees agree with its teacher's on the dev text
    at ``plan.stop_agreement`` sentence F1 or more, so another generation would learn nearly the same trees (no
    gold)."""
    done = done_entries(record)
    agreement = done.get(f"generation-{generation}", {}).get("teacher_agreement")
    return generation >= 1 and agreement is not None and agreement >= plan.stop_agreement


def member_stage_config(plan: FitPlan, k: int, reading: Reading, common: dict) -> TrainConfig:
    """Member ``k``'s run: its family's training settings, the plan's schedule for that family."""
    family = plan.family(k)
    settings = {**common, **named(family).training, **plan.schedule(k)}
    return TrainConfig(
        family=family, model=plan.member_settings(k), seed=plan.member_seed(k), reading=reading, **settings
    )


def member_configs(plan: FitPlan, out: Path) -> list[TrainConfig]:
    """The runs of the plan's members (as the reading rule's first candidate reads)."""
    return [stage.config for stage in stages(plan, out) if stage.name.startswith("member-")]


def stage_inputs(stage: Stage, out: Path) -> set[str]:
    """The stages a stage is made from: an ensemble's members (and the stage its students learnt from, the reading
    rule's referees), a student's teacher and start."""
    names = {*stage.members, *(stage.reference or []), *([stage.teacher] if stage.teacher else [])}
    if stage.config and stage.config.distill:
        for path in (stage.config.distill.teacher, stage.config.distill.start):
            inside = Path(path).resolve()
            if out.resolve() in inside.parents:
                names.add(inside.relative_to(out.resolve()).parts[0])
    return names


def stale_stages(settled: list[Stage], record: dict, out: Path) -> set[str]:
    """The stages done before one of their inputs was last made (``stage_inputs``): made of what is no longer there,
    so they are made again, and in turn every stage made of them. A rule's stage (the reading rule, the direction
    trial) chose once, before the fit was sized: members a re-plan adds after it leave its choice standing."""
    finished = {entry["name"]: position for position, entry in enumerate(record["stages"])}
    return {
        stage.name
        for stage in settled
        if stage.name in finished
        and stage.reference is None
        and not stage.trial
        and any(finished.get(name, -1) > finished[stage.name] for name in stage_inputs(stage, out))
    }
