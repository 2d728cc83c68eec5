"""The card of a fit's model: what the fit did, in prose and figures."""

from __future__ import annotations

from pathlib import Path

from onparse.families import named
from onparse.fit.stages import DIRECTIONS, READINGS, chosen_reading, done_entries
from onparse.plan import FitPlan
from onparse.store.atomic import replacing_file
from onparse.store.modeldir import read_json, write_json


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
    measured = ", ".join(
        f"{value:,.0f} {named(name).unit} a second ({named(name).plural})" for name, value in sizing["rates"].items()
    )
    again = sizing.get("replanned")
    replan = (
        ""
        if not again
        else (
            f" After {again['after']} ({again['spent_minutes']:.0f} minutes in) the rest was sized again at the "
            f"rates its "
            f"models trained ({', '.join(f'{value:,.0f}' for value in again['rates'].values())} a second): each "
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
    weighed = sizing.get("larger")
    larger = ""
    if weighed:
        family = named(weighed["family"])
        section = FitPlan.from_dict(record["plan"]).sections[family.name]
        larger = (
            f" With every model reading all of it there was time to spare, so larger {family.plural} were timed "
            f"({weighed['rate']:,.0f} {family.unit} a second), foreseen to take "
            f"{weighed['predicted_total_minutes']:.0f} minutes in all against "
            f"{weighed['default_predicted_total_minutes']:.0f}: "
            + (
                f"the {family.plural} are {section.model} and learn in updates of {section.batch_size}."
                if weighed["chosen"]
                else "no time for them."
            )
        )
    choices = sizing.get("choices")
    first = (
        ""
        if not choices
        else (
            f" The stages that chose how the ON-LSTMs read (the probes, their referees, the direction trial) read "
            f"{choices['scale']:.0%} of it, whatever the load, foreseen to take {choices['predicted_minutes']:.0f} "
            "minutes."
        )
    )
    return (
        f"Sized to {sizing['hours']:g} hours: this machine gave the fit {measured} on this text, so each model was "
        f"sized to read {sizing['scale']:.0%} of what the recipe reads (at most all of it), foreseen to take "
        f"{sizing['predicted_total_minutes']:.0f} minutes.{first}{larger}{replan}"
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


def parser_summary(record: dict) -> str | None:
    """Which parser the fit's model is and why: the students' vote, or the vote that taught them where the students'
    moved toward a fixed shape (``runners.checked_against_teacher``); None for a fit without students."""
    chosen = next((entry["parser"] for entry in record["stages"] if "parser" in entry), None)
    if chosen is None:
        return None
    if chosen["kind"] == "teacher":
        return f"Parser: the vote that taught the students ({chosen['teacher']}'s members), since {chosen['why']}."
    return f"Parser: the students' vote beside their teachers ({chosen['why']}; moved {chosen['shape_drift']:+.1f})."


def reading_summary(record: dict) -> str:
    """What the card says of the reading rules: each probe's agreement with its referee, the direction trial's
    perplexities, and the reading chosen."""
    done = done_entries(record)
    directed = [name for name in FitPlan.from_dict(record["plan"]).member_families() if named(name).reads_either_way]
    reads = named(directed[0]).describe_reading(chosen_reading(record))
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
        read = {name: done.get(name, {}).get("tokens_seen") for name in trial["perplexity"]}
        unequal = len(set(read.values())) > 1  # a fit re-planned between them (one begun before that rule held)
        fairness = (
            "; not like with like: " + ", ".join(f"{name} read {tokens:,} tokens" for name, tokens in read.items())
            if unequal and None not in read.values()
            else ""
        )
        why.append(
            f"the direction of the trial's member of lower dev perplexity ({figures}; "
            f"{trial['out_of_the_vote']} does not vote{fairness})"
        )
    return f"Reading: the {named(directed[0]).plural} read {reads}: {'; '.join(why)}; no gold trees."


def folder_bytes(folder: Path) -> int:
    """The bytes of the files under ``folder`` (links not followed)."""
    return sum(path.lstat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def write_card(model: Path, record: dict) -> None:
    """The fit's model card: its plan, every stage with its time and figures, how each choice was made, and the disk
    the fit's folder takes.

    Long: the card's sections in the order it reads them."""
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
        *filter(None, [prior_summary(record), parser_summary(record)]),
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
