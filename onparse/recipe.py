"""The whole recipe as one resumable run: members, ensembles, distillation rounds, students from scratch, generations.

``fit`` turns raw text into a parser without gold trees:

1. ``member-K``: language models and grammars trained from random weights
   (seeds differ), each keeping its point of lowest dev perplexity; where the
   plan leaves them open, reading probes (``probe-*``, judged in ``readings``)
   choose whether the ON-LSTMs read punctuation, and the first two ON-LSTMs,
   reading each way, choose the others' direction (``directions``: the lower
   dev perplexity; the other does not vote);
2. ``ensemble-1``: their trees vote (tree averaging);
3. ``round-R-K``: each model of the last ensemble is fine-tuned on that
   ensemble's trees of the training text (distillation; the teacher parses
   one sample once, kept in ``teachers/``), keeping its point that agrees
   best with the teacher on dev text; ``ensemble-R+1`` votes over the students;
4. ``scratch``: a student from random weights learns the last ensemble's trees
   (``scratch-2``, ...: one more for each further direction the plan's
   ``student_directions`` name, so that the students see both sides of a gap;
   ``grammar-student-N``: the plan's ``grammar_students``, grammars that learn
   the same trees);
5. ``generation-G`` (with ``plan.generations``; self-training): the students
   and the last round's students vote as ``generation-0``; each generation's
   students (``generation-G-scratch``, ``generation-G-grammar-student-N``: the
   same kinds as the first students, seeds of their own) learn the vote of the
   generation before and vote alone; the climb ends early after a generation
   whose trees agree with its teacher's on the dev text at
   ``plan.stop_agreement`` or more (``climb_ended``; no gold trees);
6. ``model``: the last vote (the scratch students and the last round's students,
   or the last generation's students): the fit's model directory, ready for
   ``--model``.

Each ensemble builds every ON-LSTM's trees from ``plan.fixed_layer`` (the
mean of its layers by default; a grammar: its span marginals), or, with
``layer_rule="agreement"``, from the layer whose trees agree best with the
other members' vote on the dev text (``ensemble.agreeing_layers``); students learn their
teachers' trees at ``plan.layer`` (the mean of the layers by default). A vote
layer other than the learnt one keeps the students' trees apart: the
ranking loss makes them agree at the layer it trains. The
right-branching voter joins only when asked for, with the votes asked for.
Gold dev trees, when given, are scored at every stage for the record; they
choose nothing unless ``select_by_gold`` asks for the original protocol,
which the card then says. Each stage is recorded in ``fit.json`` as it ends;
a stopped fit resumes at the stage it was in, mid-run from that run's checkpoint, and a stage's
minutes count every call that ran it (``unfinished`` keeps those of calls stopped mid-stage).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from rich.console import Console

from onparse import budget, distributed, runfolder
from onparse.atomic import replacing_file
from onparse.budget import MEMBER_TOKENS
from onparse.config import DistillConfig, FitPlan, TrainConfig
from onparse.corpus import read_sentences
from onparse.ensemble import build, make_ensemble, reference_agreement, tree_agreement
from onparse.evaluate import evaluate_parser
from onparse.families import GrammarConfig, ModelConfig, layer_from_key, named, of
from onparse.families.pcfg_training import MAX_TRAINING_WORDS
from onparse.hardware import describe, one_line
from onparse.modeldir import read_json, write_json
from onparse.parse import Parser
from onparse.reading import model_tokens
from onparse.report import fit_clock, stage_line
from onparse.settings import Layer, Reading, layer_key
from onparse.train import selection_rule
from onparse.treebank import check_gold, read_gold

RECORD = "fit.json"
FINAL = "model"  # the last stage: the fit's parser, made again whenever a stage before it is added
TEACHERS = "ensemble-"  # the votes students learn (ensemble-R teaches round R, the last the students from scratch)
log = logging.getLogger("onparse")


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
    has done so far) settles what depends on earlier stages (the reading the rule chose)."""
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
        select_by=select,
        keep_evaluations=plan.keep_evaluations,
    )
    members = [
        Stage(f"member-{k}", member_stage_config(plan, k, plan.reading(k, chosen), common))
        for k in range(1, plan.members + 1)
    ]
    grammars = {stage.name for stage in members if not of(stage.config.model).reads_either_way}  # they vote as trained
    found = []
    if plan.chooses_reading:  # probes, then the grammars that referee them, then the ON-LSTMs as the rule chose
        lead = plan.language_models()[0]  # the probes take the first ON-LSTM's shape and seed
        probes = [
            Stage(
                probe_name(reading),
                replace(
                    member_stage_config(plan, lead, reading, common),
                    epochs=plan.probe_epochs,
                    batch_size=PROBE_BATCH,
                    evals_per_epoch=2,
                    sample_tokens=plan.probe_tokens,
                ),
            )
            for reading in plan.candidate_readings()
        ]
        found += [
            *probes,
            *(stage for stage in members if stage.name in grammars),
            Stage(
                READINGS,
                members=[stage.name for stage in probes],
                reference=[stage.name for stage in members if stage.name in grammars],
            ),
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
            if start in grammars:  # a grammar learns from text alone: it votes again as it is
                students.append(start)
                continue
            k = lineage[start]  # named for the member it descends from, so names stay as voters settle
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
                        epochs=plan.finetune_passes,
                        lr=plan.finetune_lr,
                        batch_size=plan.student_batch_size,
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
    # students from scratch learn the last ensemble's trees: ON-LSTMs with the shape and vocabulary of the first
    # ON-LSTM that votes, grammars with the first grammar's (or the plan's student_grammar shape)
    first = next((name for name in voters if name not in grammars), None)
    first_grammar = next((name for name in voters if name in grammars), None)  # FitPlan.check: one votes if asked for
    starts = {
        "onlstm": first and (str(out / first / "model"), *shapes[first]),
        "grammar": first_grammar
        and (str(out / first_grammar / "model"), plan.student_grammar or shapes[first_grammar][0]),
    }
    students = student_stages(plan, out, f"ensemble-{plan.rounds + 1}", "", starts, plan.seed, common)
    found.extend(students)
    voters = [*(stage.name for stage in students), *previous]  # grammars alone and no student: the first ensemble
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
    found.append(Stage(FINAL, members=voters))
    return found


# Seeds of generation g's students start at the plan's seed + GENERATION_SEEDS * g: apart from every earlier one's.
GENERATION_SEEDS = 100


def student_stages(
    plan: FitPlan, out: Path, teacher: str, prefix: str, starts: dict, seed: int, common: dict
) -> list[Stage]:
    """Students from scratch of one teacher (a stage's vote), all learning its trees of one sample of the training
    text: an ON-LSTM per direction the plan's ``student_directions`` name (one, reading as its start, if none),
    from ``seed``; ``plan.grammar_student_count`` grammars, from ``seed`` up. ``starts`` gives each family's start
    folder
    and shape (None where the fit has no such member); names begin with ``prefix``."""
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
    if plan.language_model_students:
        start, model, reading = starts["onlstm"]
        readings = [replace(reading, direction=d) for d in plan.student_directions] or [reading]
        for i, student_reading in enumerate(readings):
            found.append(
                Stage(
                    prefix + (f"scratch-{i + 1}" if i else "scratch"),
                    TrainConfig(
                        model=model,
                        reading=student_reading,
                        epochs=plan.scratch_passes,
                        lr=plan.scratch_lr,
                        batch_size=plan.student_batch_size,
                        seed=seed,
                        distill=replace(distill, start=start),
                        **common,
                    ),
                )
            )
    for i in range(plan.grammar_student_count):
        start, model = starts["grammar"]
        grammar = of(model)
        found.append(
            Stage(
                f"{prefix}grammar-student-{i + 1}",
                TrainConfig(
                    family=grammar.name,
                    model=model,
                    epochs=plan.scratch_passes,
                    seed=seed + i,
                    distill=replace(distill, start=start),
                    **{**common, **grammar.student_training, "default_layer": grammar.readouts(model)[0]},
                ),
            )
        )
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


SMALL_TEXT_TOKENS = 100_000  # training text under this is said to be small: a tenth of what a member reads


def text_size(plan: FitPlan) -> dict:
    """The training text's size as the budget weighs it: ``tokens`` a language model reads (punctuation counted: the
    more a member may read, sentence ends included), ``grammar_words`` of the sentences a grammar learns (two to
    MAX_TRAINING_WORDS words), ``sentence_tokens`` on average, and ``sentences``; ValueError for a text of none."""
    text = read_sentences(plan.train, plan.language, plan.encoding, plan.tokenized)
    if not text:
        raise ValueError(f"the training text ({', '.join(plan.train)}) holds no sentence")
    grammars = plan.members_of(GrammarConfig.family)
    lm, grammar = replace(plan.reading(1), punctuation=True), plan.reading(grammars[0]) if grammars else Reading()
    tokens = sum(len(model_tokens(lm, sentence)) + 1 for sentence in text)
    lengths = (len(model_tokens(grammar, sentence)) for sentence in text)
    return {
        "tokens": tokens,
        "sentence_tokens": tokens / len(text),
        "sentences": len(text),
        "grammar_words": sum(n for n in lengths if 2 <= n <= MAX_TRAINING_WORDS),
    }


def settled_plan(plan: FitPlan, out: Path, hours: float | None = None) -> tuple[FitPlan, dict | None]:
    """The plan with what each model reads settled: members' epochs as asked, or enough to read about
    ``budget.member_tokens`` tokens (a grammar: GRAMMAR_TOKENS of its training sentences, two to MAX_TRAINING_WORDS
    words), a sample where
    that is less than the text; with ``hours``, all of it scaled to end within them on this machine (``budget``),
    with larger grammars where they fit too (``with_larger_grammars``), and what the record keeps of that; a turn of
    members more where asked (``budget.more_members``: where the time allows, the re-plan weighs it)."""
    corpus = text_size(plan)
    asked = budget.larger(plan) if plan.larger_grammars else plan
    asked = budget.more_members(asked) if plan.more_members else asked
    if not hours:
        warn_small_text(corpus, 1.0)
        return budget.at_scale(asked, corpus, 1.0, asked), None
    log.info(f"measuring this machine's throughput on the text, to size the fit to {hours:g} hours")
    started = time.monotonic()
    rates = budget.measure(member_configs(asked, out))
    found, sizing = budget.sized(asked, rates, corpus, hours)
    if budget.time_chooses_grammars(plan) and sizing["scale"] >= 1:  # time to spare with all the recipe read
        found, sizing = with_larger_grammars(plan, out, rates, corpus, hours, (found, sizing))
    budget.check_enough(sizing, hours)
    warn_small_text(corpus, sizing["scale"])
    # what a re-plan needs: the text's size, the readings as given, the minutes the timing took
    return found, {
        **sizing,
        "corpus": corpus,
        "given": budget.given_reading(plan),
        "timing_minutes": round((time.monotonic() - started) / 60, 2),
    }


def warn_small_text(corpus: dict, scale: float) -> None:
    """A warning for a text under SMALL_TEXT_TOKENS: how often each member reads it, as sized (``scale`` of what the
    recipe reads), so that it agrees with what the sizing says."""
    if corpus["tokens"] < SMALL_TEXT_TOKENS:
        log.warning(
            f"the training text is small ({corpus['sentences']:,} sentences, {corpus['tokens']:,} tokens): each "
            f"member reads it about {scale * MEMBER_TOKENS / max(corpus['tokens'], 1):,.0f} times over; the shipped "
            "parsers learnt from 400,000 to 1,000,000 tokens, and more text helps more than any setting"
        )


def member_configs(plan: FitPlan, out: Path) -> list[TrainConfig]:
    """The runs of the plan's members (as the reading rule's first candidate reads)."""
    return [stage.config for stage in stages(plan, out) if stage.name.startswith("member-")]


def with_larger_grammars(
    plan: FitPlan, out: Path, rates: budget.Rates, corpus: dict, hours: float, smaller: tuple[FitPlan, dict]
) -> tuple[FitPlan, dict]:
    """The plan sized with the larger grammars (``budget.larger``, timed on this machine) where they fit the hours
    with everything else reading all the recipe reads, else ``smaller`` (the plan and its sizing with the default
    grammars); the sizing records both."""
    larger = budget.larger(plan)
    grammar = next(config for config in member_configs(larger, out) if not of(config.model).reads_either_way)
    rates = replace(rates, grammar_words=budget.timed(grammar))
    found, sizing = budget.sized(larger, rates, corpus, hours)
    fits = sizing["scale"] >= 1
    weighed = {
        "chosen": fits,
        "grammar_words_per_second": rates.grammar_words,
        "predicted_total_minutes": sizing["predicted_total_minutes"],
        "default_predicted_total_minutes": smaller[1]["predicted_total_minutes"],
    }
    log.info(
        f"larger grammars ({plan.member_grammar.nonterminals} x {plan.member_grammar.preterminals} symbols grown to "
        f"{larger.member_grammar.nonterminals} x {larger.member_grammar.preterminals}) would take "
        f"{sizing['predicted_total_minutes']:.0f} minutes in all: {'chosen' if fits else 'no time for them'}"
    )
    chosen, chosen_sizing = (found, sizing) if fits else smaller
    return chosen, {**chosen_sizing, "larger_grammars": weighed}


def replanned(plan: FitPlan, record: dict, settled: list[Stage]) -> FitPlan | None:
    """The plan re-sized to the time left once a member of each family is trained, at the throughput the members
    showed (a few timed updates misjudge it when other work runs beside them), and what it records in the budget's
    ``replanned``; None where the fit has no hours, is re-planned already, or a family's rate is not seen yet."""
    sizing = record.get("budget")
    if not sizing or "replanned" in sizing or "given" not in sizing:
        return None
    by_name = {stage.name: stage for stage in settled}
    done = done_entries(record)
    # the members' rates, not the probes': a probe learns in smaller batches (PROBE_BATCH), so trains slower a token
    trained = [
        (of(by_name[name].config.model).reads_either_way, name, entry)
        for name, entry in done.items()
        if name.startswith("member-") and name in by_name
    ]
    wanted = {
        True: bool(plan.language_models()),
        False: plan.members > len(plan.language_models()),
    }  # either way: an LM
    seen = {
        kind: (
            sum(entry["tokens_seen"] for k, _, entry in trained if k == kind),
            sum(
                entry["tokens_seen"] / entry["tokens_per_second"]
                for k, _, entry in trained
                if k == kind and entry.get("tokens_per_second")
            ),
        )
        for kind in wanted
    }
    if any(wanted[kind] and seconds <= 0 for kind, (_, seconds) in seen.items()):
        return None
    rates = budget.Rates(*(tokens / seconds if wanted[kind] else None for kind, (tokens, seconds) in seen.items()))
    members = [kind for kind, _, _ in trained]
    counts = {
        "probes": sum(name.startswith("probe-") for name in done),
        "language models": members.count(True),
        "grammars": members.count(False),
    }
    spent = spent_minutes(record)
    given = replace(plan, **sizing["given"])
    found, again = budget.sized(plan, rates, sizing["corpus"], sizing["hours"], spent, given, counts)
    # time to spare with all the recipe read; not on a small text: what limits its members is the text, not the time
    if budget.time_chooses_members(plan) and again["scale"] >= 1 and sizing["corpus"]["tokens"] >= SMALL_TEXT_TOKENS:
        found, again = budget.with_more_members(
            (found, again), rates, sizing["corpus"], sizing["hours"], spent, given, counts
        )
    sizing["replanned"] = {
        "after": record["stages"][-1]["name"],
        "spent_minutes": round(spent, 1),
        **{
            key: again[key]
            for key in ("scale", "rates", "predicted_minutes", "predicted_total_minutes", "more_members")
            if key in again
        },
    }
    log.info(
        f"re-planned after {sizing['replanned']['after']}, at the rates its models trained: each model still to "
        f"train reads {again['scale']:.0%} of the recipe (was {sizing['scale']:.0%}), "
        f"{again['predicted_total_minutes']:.0f} more minutes foreseen"
    )
    return found


def spent_minutes(record: dict) -> float:
    """The fit's wall minutes so far: timing the machine, the stages done, and stages stopped midway."""
    return (
        (record.get("budget") or {}).get("timing_minutes", 0.0)
        + sum(entry["wall_minutes"] for entry in record["stages"])
        + sum((record.get("unfinished") or {}).values())
    )


class TimeUp(Exception):
    """The fit's time ran out; what was done is recorded and a resume continues."""


def read_record(out: Path) -> dict:
    """The fit's record, its plan and the stages done so far, checked field by field: RunFolderError naming
    what is wrong in a damaged or hand-edited ``fit.json``."""
    record = read_json(out / RECORD)
    stages_done = record.get("stages")
    if (
        not isinstance(record.get("plan"), dict)
        or not isinstance(stages_done, list)
        or not all(isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in stages_done)
    ):
        raise runfolder.RunFolderError(
            f"{out / RECORD}: not a fit's record (a plan, and a list of stages each with a name)"
        )
    names = [entry["name"] for entry in stages_done]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice:
        raise runfolder.RunFolderError(f"{out / RECORD}: stage {twice} is listed twice")
    timeless = next(
        (
            entry["name"]
            for entry in stages_done
            if type(entry.get("wall_minutes")) not in (int, float) or not 0 <= entry["wall_minutes"] < math.inf
        ),
        None,
    )
    if timeless:
        raise runfolder.RunFolderError(f"{out / RECORD}: stage {timeless} has no wall_minutes (a number of minutes)")
    unfinished = record.get("unfinished", {})
    if not isinstance(unfinished, dict) or not all(type(v) in (int, float) and v >= 0 for v in unfinished.values()):
        raise runfolder.RunFolderError(
            f"{out / RECORD}: its unfinished stages must map each name to minutes, not {unfinished!r:.40}"
        )
    in_flight = record.get("in_flight", {})
    if (
        not isinstance(in_flight, dict)
        or in_flight
        and not (
            isinstance(in_flight.get("stage"), str)
            and all(type(in_flight.get(key)) in (int, float) and in_flight[key] >= 0 for key in ("since", "earlier"))
        )
    ):
        raise runfolder.RunFolderError(
            f"{out / RECORD}: its stage in flight must be a name, a start time and minutes, not {in_flight!r:.40}"
        )
    try:
        FitPlan.from_dict(record["plan"]).check()
    except (TypeError, ValueError) as err:
        raise runfolder.RunFolderError(f"{out / RECORD}: its plan does not hold ({one_line(err)})") from None
    return record


def check_stages_done(plan: FitPlan, out: Path, record: dict) -> None:
    """RunFolderError where the plan (a ``fit.json`` edited by hand) makes a training stage that is done something
    other than what it was trained as: its family, shape or reading."""
    done = {entry["name"] for entry in record["stages"]}
    for stage in stages(plan, out, record):
        trained = out / stage.name / "config.json"
        if stage.config is None or stage.name not in done or not trained.is_file():
            continue
        changed = stage_change(TrainConfig.from_dict(read_json(trained)), stage.config)
        if changed:
            raise runfolder.RunFolderError(
                f"{out / RECORD}: its plan makes stage {stage.name} {changed}: a plan cannot "
                "change a stage that is done (put the plan back, or start a new fit)"
            )


def stage_change(was: TrainConfig, now: TrainConfig) -> str:
    """What ``now`` makes of a stage trained as ``was``: the first of its family, its sizes and its reading that
    differs; empty where they agree."""
    settings = {
        "family": (was.family, now.family),
        **{name: (getattr(was.model, name, None), value) for name, value in asdict(now.model).items()},
        "reading": (of(was.model).describe_reading(was.reading), of(now.model).describe_reading(now.reading)),
    }
    return next((f"of {name} {new} (trained with {old})" for name, (old, new) in settings.items() if old != new), "")


def count_killed_call(record: dict, out: Path) -> None:
    """A call killed mid-stage (kill -9, a machine's end) left its stage ``in_flight``: its minutes count, from the
    stage's start to the last file the stage wrote, as a stopped call's do."""
    in_flight = record.pop("in_flight", None)
    if not in_flight:
        return
    folder = out / in_flight["stage"]
    last = (
        max((path.stat().st_mtime for path in folder.rglob("*")), default=in_flight["since"])
        if folder.is_dir()
        else in_flight["since"]
    )
    minutes = max(0.0, last - in_flight["since"]) / 60
    unfinished = record.setdefault("unfinished", {})
    unfinished[in_flight["stage"]] = unfinished.get(in_flight["stage"], 0.0) + in_flight["earlier"] + minutes


def write_record(out: Path, record: dict) -> None:
    with replacing_file(out / RECORD) as file:
        file.write(json.dumps(record, indent=2) + "\n")


def gold_figures(path: Path, gold_path: str, settings: dict, encoding: str = "UTF-8") -> dict:
    """Dev gold sentence F1 of an ensemble's members and of its vote with and without the right-branching voter."""
    result = evaluate_parser(
        Parser.load(path, **settings), list(read_gold(gold_path, encoding=encoding)), untrained_seed=None
    )
    return {
        "members": {k: round(v["sentence_f1"], 2) for k, v in result["members"].items()},
        "without_voter": round(result["ensemble"]["sentence_f1"], 2),
        "with_voter": round(result["ensemble_right_branching"]["sentence_f1"], 2),
    }


def gold_layer(run: Path) -> Layer:
    """The layer (or mean) of best dev F1 at the point a run kept (its gold figures were measured there)."""
    figures = read_json(run / "model" / "card.json")["selected"]["dev_f1_per_layer"]
    return layer_from_key(max(figures, key=figures.get))


def run_stage(
    stage: Stage, plan: FitPlan, out: Path, deadline: float | None, console: Console, ranks: distributed.Ranks
) -> dict:
    """Run one stage to its end and return what the record keeps of it; TimeUp when the deadline comes first."""
    if stage.reference is not None:
        return reading_stage(stage, plan, out)
    if stage.trial:
        return direction_stage(stage, out)
    if stage.config is None:
        return ensemble_stage(stage, plan, out)
    return training_stage(stage, plan, out, deadline, console, ranks)


def reading_stage(stage: Stage, plan: FitPlan, out: Path) -> dict:
    """The reading rule: each probe's trees against the vote of the other probes and the grammar members on the dev
    text; the ON-LSTMs read as the probe that agrees best with them all. No gold trees: a grammar reads the words
    whatever the probes read, so it referees them alike, and the other probes add what each reading sees."""
    settings = {"device": plan.device, "dtype": plan.dtype}
    sentences = read_sentences([plan.dev], plan.language, plan.encoding, plan.tokenized)
    probes = [out / name for name in stage.members]
    agreement = reference_agreement(probes, [out / name for name in stage.reference], sentences, settings)
    best = max(range(len(probes)), key=lambda m: agreement[m])  # ties: the earlier candidate
    entry = {
        "agreement": {name: round(value, 2) for name, value in zip(stage.members, agreement)},
        "referee": "the vote of the other probes and the grammar members"
        if stage.reference
        else "the other probes' vote",
        "chosen": asdict(plan.candidate_readings()[best]),
    }
    distributed.wait_for_all()  # under torchrun every rank weighed the probes before rank 0 trims them
    if plan.dev_gold:  # for the record: what each probe reads on gold trees
        gold = list(read_gold(plan.dev_gold, encoding=plan.encoding))
        entry["dev_gold"] = {
            name: round(evaluate_parser(Parser.load(probe, **settings), gold, None)["sentence_f1"], 2)
            for name, probe in zip(stage.members, probes)
        }
    return entry


def unused_after(stage: Stage, entry: dict) -> list[str]:
    """The runs a rule's stage leaves unused: the probes once the reading is chosen, the trial's other member once
    the direction is (their settings, histories and figures stay in the record)."""
    if stage.reference is not None:
        return stage.members
    return [entry["out_of_the_vote"]] if stage.trial else []


def direction_stage(stage: Stage, out: Path) -> dict:
    """The direction trial: of the two ON-LSTMs that read each way (the same punctuation, so the same vocabulary),
    each at its point of lowest dev perplexity, the lower perplexity wins; every other ON-LSTM reads in its direction,
    and the other does not vote. A sentence's probability is the same read either way, so the direction a model fits
    better is the one whose bias suits the language: in every pair of full members measured (Chinese, German,
    English) it was the one whose trees scored better (experiments/notebook.md). Members given
    sizes in turn (--hidden-size repeated) compare their sizes too. No gold trees."""
    perplexity = {name: read_json(out / name / "model" / "card.json")["selected"]["dev_ppl"] for name in stage.members}
    best = min(stage.members, key=lambda name: perplexity[name])  # ties: the first, reading left to right
    direction = read_json(out / best / "model" / "config.json")["reading"]["direction"]
    return {
        "perplexity": {name: round(value, 2) for name, value in perplexity.items()},
        "rule": "the lower dev perplexity (no gold trees)",
        "chosen": {"direction": direction},
        "out_of_the_vote": next(name for name in stage.members if name != best),
    }


def ensemble_stage(stage: Stage, plan: FitPlan, out: Path) -> dict:
    """Vote over earlier stages' models, each member at the layer the plan's rule gives it."""
    settings = {"device": plan.device, "dtype": plan.dtype}
    path = out / stage.name
    final = stage.name == FINAL  # the fit's model stands alone; the ensembles between name their members in place
    members = [out / name for name in stage.members]
    gold_layers = [gold_layer(member) for member in members] if plan.select_by_gold else None  # the original protocol
    sentences = (
        read_sentences([plan.dev], plan.language, plan.encoding, plan.tokenized)
        if plan.layer_rule in ("agreement", "consistency")
        else None
    )
    prior = plan.teacher_right_branching if stage.name.startswith(TEACHERS) else 0.0  # the ensembles students learn
    votes = plan.right_branching_voter + prior * len(members)
    chosen = build(
        path,
        members,
        plan.layer_rule,
        sentences,
        settings,
        fixed_layer=plan.fixed_layer,
        layers=gold_layers,
        right_branching_voter=votes,
        copy=final,
        overwrite=True,
    )
    del chosen["members"]  # every member votes
    entry = {
        "right_branching_voter": votes,
        **({"teacher_prior": prior} if prior else {}),
        **chosen,
        **({"layers_chosen_on_gold": True} if gold_layers else {}),
    }
    if plan.dev_gold:
        gold = gold_figures(path, plan.dev_gold, settings, plan.encoding)
        if plan.select_by_gold:  # the voter chosen on gold trees: the record says so
            entry["right_branching_voter"] = (votes or 1.0) if gold["with_voter"] > gold["without_voter"] else 0.0
            if not entry["right_branching_voter"]:
                entry.pop("teacher_prior", None)  # gold took the voter out, the prior with it
            make_ensemble(
                path, members, entry["right_branching_voter"], copy=final, layers=chosen["layers"], overwrite=True
            )
        entry.update(
            voter_chosen_on_gold=plan.select_by_gold,
            dev_gold=gold,
            dev_f1=gold["with_voter" if entry["right_branching_voter"] else "without_voter"],
        )
    if stage.teacher:  # the climb's gold-free figure: how far this vote moved from the trees its students learnt
        dev_sentences = read_sentences([plan.dev], plan.language, plan.encoding, plan.tokenized)
        entry["teacher_agreement"] = round(tree_agreement(path, out / stage.teacher, dev_sentences, settings), 2)
    return entry


def training_stage(
    stage: Stage, plan: FitPlan, out: Path, deadline: float | None, console: Console, ranks: distributed.Ranks
) -> dict:
    """Train (or resume) a stage's run folder to the end of its schedule; its model/ is the point its rule kept."""
    path = out / stage.name
    resume = (path / "checkpoint.pt").is_file()  # else stopped before its first checkpoint: start it again
    remaining = None if deadline is None else (deadline - time.monotonic()) / 60  # past: stop after one step
    with runfolder.opened(path, resume, True, lambda: stage.config, ranks=ranks):
        run = runfolder.train(
            stage.config, path, resume=resume, max_minutes=remaining, console=console, title=stage.name, ranks=ranks
        )
    if run.epoch < stage.config.epochs:
        raise TimeUp(stage.name)
    distributed.wait_for_all()  # every rank reads what rank 0 kept, so later stages agree
    if ranks.main and not plan.keep_evaluations:  # a finished stage is never resumed: its model is what the fit uses
        runfolder.settle(path)
    selected = read_json(path / "model" / "card.json")["selected"]
    kept = {key: selected[key] for key in ("epoch", "dev_ppl", "teacher_agreement") if key in selected}
    layer = (
        stage.config.default_layer
    )  # the layer its trees are taken at: a grammar's span marginals, an ON-LSTM's plan.layer
    figures = (
        {"dev_f1": round(selected["dev_f1_per_layer"][layer_key(layer)], 2)} if "dev_f1_per_layer" in selected else {}
    )
    reading = stage.config.reading
    reads = of(stage.config.model).describe_reading(reading)
    return {
        "train_minutes": round(run.train_seconds / 60, 2),
        "tokens_seen": run.tokens_seen,
        "tokens_per_second": round(run.tokens_seen / max(run.train_seconds, 1e-9), 1),
        "selected": kept,
        "model_selection": selection_rule(stage.config),
        "reads": reads,
        **figures,
    }


@contextlib.contextmanager
def opened_fit(out: Path, plan: FitPlan | None, ranks: distributed.Ranks = distributed.Ranks()) -> Iterator[str]:
    """The fit's folder held for this process (rank 0's alone under torchrun): ``plan`` None resumes the fit recorded
    there, a new plan needs a folder holding no fit; RunFolderError otherwise. Yields the device the fit runs on."""
    with runfolder.locked_run(out) if ranks.main else contextlib.nullcontext():
        if plan is None and not (out / RECORD).is_file():
            raise runfolder.RunFolderError(f"{out}: no {RECORD} to resume from")
        if ranks.main and plan is not None and runfolder.run_contents(out):
            raise runfolder.RunFolderError(
                f"{out} already holds a fit: continue it with --resume, or choose another --out"
            )
        yield plan.device if plan else read_record(out)["plan"]["device"]


def fit(
    plan: FitPlan | None,
    out: Path,
    resume: bool = False,
    hours: float | None = None,
    console: Console | None = None,
    command: str = "",
    stage_done: Callable[[str], None] | None = None,
    ranks: distributed.Ranks = distributed.Ranks(),
) -> dict:
    """Run (or resume, with the plan recorded in ``out``) the recipe into ``out``; returns the record.
    ``out/model`` is the parser.

    ``hours`` limits this call: the stage in flight checkpoints and TimeUp is
    raised; ``resume`` continues. ``stage_done`` is told each stage's name as
    it is recorded.

    Under torchrun (``ranks``: the launch's, as its command read them) every
    process trains the members together (DDP); then rank 0 goes on alone with
    the ensembles and the distillation stages, and the other processes end.
    """
    console = (console or Console(stderr=True)) if ranks.main else Console(quiet=True)
    deadline = time.monotonic() + 3600 * hours if hours else None
    if resume:
        record = read_record(out)
        count_killed_call(record, out)
        left = 60 * record["budget"]["hours"] - spent_minutes(record) if "budget" in record else 0.0
        if hours is None and left > 0:  # the budget holds across calls: what is left of its hours
            deadline = time.monotonic() + 60 * left
            if ranks.main:
                log.info(
                    f"resuming with {left:.0f} of the fit's {record['budget']['hours']:g} hours' minutes left "
                    "(--hours gives this call another budget)"
                )
        elif hours is None and "budget" in record and ranks.main:  # its hours spent: a resume is asked to finish it
            log.info(
                f"the fit's {record['budget']['hours']:g} hours are spent: resuming to its end (--hours limits it)"
            )
        plan = FitPlan.from_dict(record["plan"])
        if plan.direction_trial and not record.get("direction_trial"):
            raise runfolder.RunFolderError(
                f"{out}: this fit was begun by an onparse whose probes chose the direction; "
                "resume it with that version, or start a new fit"
            )
        check_stages_done(plan, out, record)
    else:
        plan.check()
        if plan.dev_gold:
            check_gold(plan.dev_gold, plan.encoding)
        distributed.join(plan.device, ranks)  # the launch's processes meet: rank 0 alone times the machine and
        if ranks.main:  # settles the plan, and every process trains as it says
            plan, sizing = settled_plan(plan, out, hours)
            record = {
                "plan": asdict(plan),
                "command": command,
                "hardware": describe(plan.device),
                "stages": [],
                **({"budget": sizing} if sizing else {}),
                **({"direction_trial": True} if plan.direction_trial else {}),
            }
            if sizing:
                log.info(
                    f"sized to {hours:g} hours: each model reads {sizing['scale']:.0%} of what the recipe reads, "
                    f"{len(stages(plan, out, record))} stages foreseen to take {sizing['predicted_total_minutes']:.0f} "
                    "minutes (fit.json keeps the sizing)"
                )
            out.mkdir(parents=True, exist_ok=True)
            write_record(out, record)
        distributed.wait_for_all()
        if not ranks.main:
            record = read_record(out)
            plan = FitPlan.from_dict(record["plan"])
    while True:
        settled = stages(plan, out, record)  # what is left, as settled by the stages done
        done = {entry["name"] for entry in record["stages"]}
        todo = [stage for stage in settled if stage.name not in done]
        if not todo:
            break
        stale = stale_stages(settled, record, out) | ({FINAL} & done)  # the final model: of every stage before it
        if stale:  # a stage done before one of its inputs was (re)made, as a fit.json edited for another member makes
            for entry in [entry for entry in record["stages"] if entry["name"] in stale]:  # its minutes still count
                record.setdefault("unfinished", {})[entry["name"]] = entry.get("wall_minutes", 0.0)
            record["stages"] = [entry for entry in record["stages"] if entry["name"] not in stale]
            continue
        stage, number = todo[0], len(settled) - len(todo) + 1
        alone = (
            stage.config.distill is not None if stage.config else stage.reference is None and not stage.trial
        )  # the members are done
        if ranks.world > 1 and alone:  # (every rank weighs the probes, and trains the members after them)
            if not ranks.main:
                distributed.go_alone()
                return record
            ranks = distributed.go_alone()
        if ranks.main:
            log.info(
                f"stage {number}/{len(settled)}: {stage.name}"
                + (f" (ensemble of {', '.join(stage.members)})" if stage.members else "")
                + f"; {fit_clock(record)}"
            )
        started = time.monotonic()
        earlier = record.setdefault("unfinished", {}).pop(stage.name, 0.0)  # minutes of earlier calls stopped mid-stage
        record["in_flight"] = {"stage": stage.name, "since": time.time(), "earlier": earlier}  # what a kill -9 leaves
        if ranks.main:
            write_record(out, record)
        try:
            entry = {"name": stage.name, **run_stage(stage, plan, out, deadline, console, ranks)}
        except BaseException:  # stopped mid-stage (time limit, signal, error): its minutes count when the stage ends
            record["unfinished"][stage.name] = earlier + (time.monotonic() - started) / 60
            del record["in_flight"]
            if ranks.main:
                with contextlib.suppress(OSError):  # on a full disk the stage's own error is the one to report
                    write_record(out, record)
            raise
        entry["wall_minutes"] = round(earlier + (time.monotonic() - started) / 60, 2)
        del record["in_flight"]
        record["stages"].append(entry)
        if ranks.main:
            if again := replanned(plan, record, settled):
                plan, record["plan"] = again, asdict(again)
            write_record(out, record)
            for run in [] if plan.keep_evaluations else unused_after(stage, entry):
                runfolder.retire(out / run)  # the rule has chosen: the run's figures are in the record
        if ranks.world > 1:  # the other processes train as rank 0's plan says, re-planned or not
            distributed.wait_for_all()
            if not ranks.main:
                plan = FitPlan.from_dict(read_record(out)["plan"])
        if ranks.main:
            log.info(stage_line(entry), extra={"record": entry})
        if stage_done:
            stage_done(stage.name)
    if ranks.main:
        write_card(out / FINAL, record)
    return record


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


def climb_summary(record: dict) -> str:
    """What the card says of the generations: how many ran, and why the climb ended."""
    plan = FitPlan.from_dict(record["plan"])
    ran = [
        entry for entry in record["stages"] if entry["name"].startswith("generation-") and "teacher_agreement" in entry
    ]
    ended = (
        "it ended early: the last generation's trees agreed with its teacher's at "
        f"{ran[-1]['teacher_agreement']:.2f} >= {plan.stop_agreement:g}"
        if ran and len(ran) < plan.generations
        else f"the climb stops early when a generation agrees with its teacher at {plan.stop_agreement:g} or more"
    )
    return (
        f"Generations: {len(ran)} of {plan.generations}, each generation's students learning the vote before it and "
        f"voting alone (no gold trees); {ended}."
    )


def budget_summary(record: dict) -> str:
    """What the card says of the fit's sizing: the hours, this machine's rates, the scale and the minutes foreseen."""
    sizing = record["budget"]
    rates = sizing["rates"]
    measured = ", ".join(
        f"{value:,.0f} {name.replace('_per_second', '').replace('_', ' ')} a second"
        for name, value in rates.items()
        if value
    )
    again = sizing.get("replanned")
    replan = (
        ""
        if not again
        else (
            f" After {again['after']} ({again['spent_minutes']:.0f} minutes in) the rest was sized again at the "
            f"rates its "
            f"models trained ({', '.join(f'{value:,.0f}' for value in again['rates'].values() if value)} a "
            f"second): each "
            f"model still to train read {again['scale']:.0%}, foreseen to take "
            f"{again['predicted_total_minutes']:.0f} more minutes."
        )
    )
    more = (again or {}).get("more_members")
    if more:  # the re-plan weighed a turn of the family cycle more
        replan += (
            f" One more member of each family ({more['members']} in all) was foreseen to take "
            f"{more['predicted_total_minutes']:.0f} more minutes: "
            + ("trained." if more["chosen"] else "no time for them.")
        )
    weighed, shape = sizing.get("larger_grammars"), record["plan"]["member_grammar"]
    grammars = (
        ""
        if not weighed
        else (
            f" With every model reading all of it there was time to spare, so larger grammars were timed "
            f"({weighed['grammar_words_per_second']:,.0f} words a second), foreseen to take "
            f"{weighed['predicted_total_minutes']:.0f} minutes in all against "
            f"{weighed['default_predicted_total_minutes']:.0f}: "
            + (
                f"the grammars have {shape['nonterminals']} x {shape['preterminals']} symbols and learn in "
                f"{record['plan']['grammar_batch_size']}-word updates."
                if weighed["chosen"]
                else "no time for them."
            )
        )
    )
    return (
        f"Sized to {sizing['hours']:g} hours: this machine trained {measured} on this text, so each model read "
        f"{sizing['scale']:.0%} of what the recipe reads (at most all of it), foreseen to take "
        f"{sizing['predicted_total_minutes']:.0f} minutes.{grammars}{replan}"
    )


def prior_summary(record: dict) -> str | None:
    """What the card says of the teachers' right-branching prior, where one voted: where, and that gold chose its
    share."""
    shares = {entry["name"]: entry["teacher_prior"] for entry in record["stages"] if entry.get("teacher_prior")}
    if not shares:
        return None
    plan = record["plan"]
    why = (
        "asked for"
        if plan.get("teacher_prior") is not None
        else f"a prior for head-initial languages ({plan['language']}); the share was chosen on WSJ section 22's gold "
        "trees, this fit's one choice made on gold"
    )
    return (
        f"Teacher prior: the right-branching tree cast {next(iter(shares.values())):g} of the votes of "
        f"{', '.join(shares)} "
        f"(the trees the students learn), none in the model's own vote: {why}."
    )


def reading_summary(record: dict) -> str:
    """What the card says of the reading rules: each probe's agreement with its referee, the direction trial's
    perplexities, and the reading chosen."""
    done = {entry["name"]: entry for entry in record["stages"]}
    reads = of(ModelConfig()).describe_reading(chosen_reading(record))
    why = []
    if READINGS in done:
        probes = done[READINGS]
        figures = ", ".join(f"{name.removeprefix('probe-')} {value:.2f}" for name, value in probes["agreement"].items())
        why.append(
            f"the probe reading whose trees agreed best with {probes['referee']} on the dev text (sentence F1: "
            f"{figures})"
        )
    if DIRECTIONS in done:
        trial = done[DIRECTIONS]
        figures = ", ".join(f"{name} {value:.2f}" for name, value in trial["perplexity"].items())
        why.append(
            f"the direction of the trial's member of lower dev perplexity ({figures}; "
            f"{trial['out_of_the_vote']} does not vote)"
        )
    return f"Reading: the ON-LSTMs read {reads}: {'; '.join(why)}; no gold trees."


def folder_bytes(folder: Path) -> int:
    """The bytes of the files under ``folder`` (links not followed)."""
    return sum(path.lstat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def write_card(model: Path, record: dict) -> None:
    """The fit's model card: its plan, every stage with its time and figures, how each choice was made, and the disk
    the fit's folder takes."""
    disk = folder_bytes(model.parent)
    card = {**read_json(model / "card.json"), "fit": record, "disk_bytes": disk}
    write_json(model / "card.json", card)
    plan = record["plan"]
    gold_rule = (
        "checkpoints, each member's layer and the right-branching voter chosen on gold dev trees (the original "
        "ON-LSTM protocol: not unsupervised)"
        if plan["select_by_gold"]
        else "no gold trees: members kept at their lowest dev perplexity, students at their best agreement with "
        "the teacher on dev text" + ("; gold dev trees scored for the record only" if plan["dev_gold"] else "")
    )
    lines = [
        f"# {model.parent.name}: a parser fitted by `onparse fit`",
        "",
        f"Command: `{record.get('command') or 'onparse fit'}`",
        "",
        f"Selection: {gold_rule}. "
        + (
            ""
            if plan["select_by_gold"]
            else "Each ensemble gives each member the layer (or mean of layers) whose trees agree best with the "
            "other members' vote on the dev text (no gold trees); students learn their teachers' trees at "
            f"layer {plan['layer']!r}"
            if plan.get("layer_rule") == "agreement"
            else "Each ensemble gives every member the one layer (or mean of layers) whose trees agree best between "
            "the members on the dev text (no gold trees); students learn their teachers' trees at "
            f"layer {plan['layer']!r}"
            if plan.get("layer_rule") == "consistency"
            else f"Every ensemble builds its members' trees from layer {FitPlan.from_dict(plan).fixed_layer!r} (a "
            f"fixed rule); "
            f"students learn their teachers' trees at layer {plan['layer']!r}"
        )
        + "; the right-branching voter is "
        + (f"on, with {card['right_branching_voter']:g} votes" if card["right_branching_voter"] else "off")
        + (" (asked for: a prior for right-branching languages)" if plan["right_branching_voter"] else "")
        + ".",
        *filter(None, [prior_summary(record)]),
        *([reading_summary(record)] if chosen_reading(record) else []),
        *([climb_summary(record)] if plan.get("generations") else []),
        *([budget_summary(record)] if record.get("budget") else []),
        f"Hardware: {record['hardware']}.",
        "",
        "| stage | reads | training minutes | wall minutes | selected point | dev F1 (gold, scored only) |",
        "| --- | --- | ---: | ---: | --- | ---: |",
    ]
    for entry in record["stages"]:
        selected = entry.get("selected", {})
        point = ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in selected.items())
        if "teacher_agreement" in entry:  # a generation's vote: how far it moved from its teacher's trees
            point = f"agrees {entry['teacher_agreement']:.2f} with its teacher's trees"
        gold = entry.get("dev_f1")
        lines.append(
            f"| {entry['name']} | {entry.get('reads', '-')} | {entry.get('train_minutes', 0):.1f} | "
            f"{entry['wall_minutes']:.1f} | {point or '-'} | "
            f"{'-' if gold is None else f'{gold:.1f}'} |"
        )
    lines += [
        "",
        f"Total: {sum(e['wall_minutes'] for e in record['stages']):.0f} wall minutes over {len(record['stages'])} "
        f"stages "
        "(every call's: a stage's stopped calls, and a killed call's up to the stage's last write, included).",
        "",
        f"Disk: {disk / 1e6:,.1f} MB in {model.parent.name}/ when the fit ended (its run folders, checkpoints and this "
        f"model; this model alone {folder_bytes(model) / 1e6:,.1f} MB).",
        "",
    ]
    with replacing_file(model / "card.md") as file:
        file.write("\n".join(lines))
