"""How much the fit reads: the plan sized to the text and to ``--hours`` (``budget`` times this machine), and sized
again as stages end."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import onparse.budget as budget
from onparse.budget import MEMBER_TOKENS
from onparse.corpus import read_sentences
from onparse.families import GrammarConfig, of
from onparse.families.pcfg_training import MAX_TRAINING_WORDS
from onparse.fit.stages import Stage, done_entries, member_configs
from onparse.plan import FitPlan
from onparse.reading import model_tokens
from onparse.settings import Reading

log = logging.getLogger("onparse")


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
        True: bool(plan.onlstm_members()),
        False: plan.members > len(plan.onlstm_members()),
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
