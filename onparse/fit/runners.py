"""Each kind of stage run: a training run, a reading rule, a direction trial, an ensemble; each returns its record
entry."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, replace
from pathlib import Path

from rich.console import Console

from onparse.families import layer_from_key, of
from onparse.fit.records import TimeUp
from onparse.fit.stages import FINAL, TEACHERS, Stage
from onparse.parsing.ensemble import (
    build,
    make_ensemble,
    member_source,
    model_trees,
    pairwise_agreement,
    reference_agreement,
)
from onparse.parsing.evaluate import evaluate_parser
from onparse.parsing.parse import Parser
from onparse.plan import FitPlan
from onparse.settings import Layer, layer_key
from onparse.store.modeldir import read_ensemble, read_json, write_json
from onparse.structures.scoring import SHAPE_DRIFT, collapsed_shape, shape_drift
from onparse.text.corpus import read_sentences
from onparse.text.treebank import read_gold
from onparse.training import distributed, runfolder
from onparse.training.train import selection_rule

log = logging.getLogger("onparse")


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


def collapsed(model: Path, sentences: list, settings: dict) -> str | None:
    """The one shape a model's trees of the dev text have collapsed into (``scoring.collapsed_shape``), else None.
    Its card keeps the answer (``dev_shape``), so each vote after it reads it rather than parsing again."""
    folder = member_source(model).model
    card_path = folder / "card.json"
    card = read_json(card_path) if card_path.is_file() else {}
    if "dev_shape" in card:
        return card["dev_shape"]
    trees = model_trees(folder, sentences, settings)
    shape = collapsed_shape(trees, [len(sentence.word_tokens) for sentence in sentences])
    write_json(card_path, {**card, "dev_shape": shape})
    return shape


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
    English) it was the one whose trees scored better. Members given
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
    dev_sentences = read_sentences([plan.dev], plan.language, plan.encoding, plan.tokenized)
    shapes = {member.name: collapsed(member, dev_sentences, settings) for member in members}
    left_out = {name: shape for name, shape in shapes.items() if shape}
    if left_out and len(left_out) < len(members):  # a model whose trees are one shape does not vote
        log.warning(f"{stage.name}: left out of the vote, their dev trees one shape: {left_out}")
        members = [member for member in members if not shapes[member.name]]
    else:
        left_out = {}
    gold_layers = [gold_layer(member) for member in members] if plan.select_by_gold else None  # the original protocol
    sentences = dev_sentences if plan.layer_rule in ("agreement", "consistency") else None
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
        **({"left_out": left_out} if left_out else {}),
        "right_branching_voter": votes,
        **({"teacher_prior": prior} if prior else {}),
        **chosen,
        **({"layers_chosen_on_gold": True} if gold_layers else {}),
    }
    if stage.teacher:  # how far this vote moved from the trees its students learnt; the model: a step too far?
        trees = [model_trees(model, dev_sentences, settings) for model in (path, out / stage.teacher)]
        entry["teacher_agreement"] = round(pairwise_agreement(trees, dev_sentences)[0][1], 2)
        if final:
            entry["parser"] = checked_against_teacher(path, out / stage.teacher, trees, dev_sentences, plan)
            if entry["parser"]["kind"] == "teacher":
                members, chosen["layers"] = entry["parser"].pop("members"), entry["parser"].pop("layers")
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
    return entry


def checked_against_teacher(path: Path, teacher: Path, trees: list, sentences: list, plan: FitPlan) -> dict:
    """The fit's model as the rule leaves it at ``path``, and why: the students' vote, unless its ``trees`` (of the
    dev text, the vote's and then the teacher's) moved toward a fixed shape by more than ``scoring.SHAPE_DRIFT``
    points past the vote that taught its students (a student half collapsed into right-branching trees, say), and
    then that vote's members, as a parser (without a teacher's prior). No gold trees."""
    drift = round(shape_drift(*trees, [len(sentence.word_tokens) for sentence in sentences]), 2)
    if drift <= SHAPE_DRIFT:
        return {
            "kind": "students' vote",
            "shape_drift": drift,
            "why": f"within {SHAPE_DRIFT:g} points of the shape of the vote that taught its students",
        }
    taught = read_ensemble(teacher)
    make_ensemble(path, taught.members, plan.right_branching_voter, copy=True, layers=taught.layers, overwrite=True)
    log.warning(
        f"the students' vote moved {drift:.1f} points toward a fixed shape past the vote that taught them: the fit's "
        f"model is that vote ({teacher.name}'s members) instead"
    )
    return {
        "kind": "teacher",
        "teacher": teacher.name,
        "shape_drift": drift,
        "why": f"the students' vote moved {drift:.1f} points toward a fixed shape (more than {SHAPE_DRIFT:g})",
        "members": taught.members,
        "layers": taught.layers,
    }


def training_stage(
    stage: Stage, plan: FitPlan, out: Path, deadline: float | None, console: Console, ranks: distributed.Ranks
) -> dict:
    """Train (or resume) a stage's run folder to the end of its schedule; its model/ is the point its rule kept."""
    path = out / stage.name
    run = trained(stage.config, path, deadline, console, stage.name, ranks)
    distributed.wait_for_all()  # every rank reads what rank 0 kept, so later stages agree
    if ranks.main and not plan.keep_evaluations:  # a finished stage is never resumed: its model is what the fit uses
        runfolder.settle(path)
    saved = runfolder.saved_config(path)
    focused, asked = saved.distill, stage.config.distill
    retried = (  # a call stopped while it trained a collapsed student again, resumed
        {"trained_again": "on the teacher's trees (focus 0)"}
        if asked is not None and asked.focus and focused is not None and not focused.focus
        else {}
    )
    if ranks.main and focused is not None and focused.focus:  # a focused student whose trees collapsed learns the
        settings = {"device": plan.device, "dtype": plan.dtype}  # teacher's trees instead (no gold tree says so)
        dev_sentences = read_sentences([plan.dev], plan.language, plan.encoding, plan.tokenized)
        shape = collapsed(path, dev_sentences, settings)
        if shape:
            log.warning(
                f"{stage.name}: its dev trees collapsed into {shape} trees; trained again on the teacher's trees"
            )
            unfocused = replace(
                stage.config,
                select_by="dev_f1" if plan.select_by_gold else None,
                distill=replace(stage.config.distill, focus=0.0, focus_end=None),
            )
            run, saved = trained(unfocused, path, deadline, console, stage.name, ranks, again=True), unfocused
            if not plan.keep_evaluations:
                runfolder.settle(path)
            retried = {"collapsed_when_focused": shape, "trained_again": "on the teacher's trees (focus 0)"}
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
        "model_selection": selection_rule(saved),
        "reads": reads,
        **figures,
        **retried,
    }


def trained(
    config, path: Path, deadline: float | None, console: Console, title: str, ranks: distributed.Ranks, again=False
):
    """A stage's run trained (or resumed) to the end of its schedule, or afresh over the run it replaces
    (``again``); TimeUp when the deadline comes first."""
    resume = not again and (path / "checkpoint.pt").is_file()  # else stopped before its first checkpoint: afresh
    remaining = None if deadline is None else (deadline - time.monotonic()) / 60  # past: stop after one step
    with runfolder.opened(path, resume, True, lambda: config, ranks=ranks) as config:
        run = runfolder.train(
            config, path, resume=resume, max_minutes=remaining, console=console, title=title, ranks=ranks
        )
    if not run.done(config):
        raise TimeUp(title)
    return run
