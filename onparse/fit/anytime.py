"""``OUT/model`` at every moment of a fit: the best parser made so far, so that a fit stopped by its hours, by Ctrl-C
or by a crash still leaves one.

As soon as the first member is trained it is ``OUT/model`` (an ensemble of one); each later stage replaces it, whole
and at once (``make_ensemble``'s atomic folder), only where a gold-free rule says the new one is better:

- a member replaces a member of its family that reads as it does and has a higher dev perplexity (like with like);
- a vote of the fit's models replaces a member or an earlier vote (a vote of them beat its members in every
  language measured, and each later vote is of more models, or of students of the earlier one, its collapsed
  models left out);
- the fit's last stage writes ``OUT/model`` itself, with the fit's card.

The card of a model published so says which stage it is and which are still to come (``ANYTIME``).
"""

from __future__ import annotations

from pathlib import Path

from onparse.fit.stages import FINAL, Stage
from onparse.parsing.ensemble import make_ensemble
from onparse.store.modeldir import read_ensemble, read_json

ANYTIME = "anytime"  # the card's key for a model published before the fit's end


def published(out: Path) -> dict | None:
    """What ``OUT/model`` is now: the card's ``ANYTIME`` entry; ``{"kind": "vote", "stage": FINAL}`` for the model of
    a fit that ended (a fit resumed for more); None where there is none yet."""
    card = out / FINAL / "card.json"
    if not card.is_file():
        return None
    return read_json(card).get(ANYTIME) or {"kind": "vote", "stage": FINAL}


def voting_stages(settled: list[Stage]) -> set[str]:
    """The stages whose models vote in one of the fit's ensembles (not the probes a reading rule weighs)."""
    return {name for stage in settled if is_vote(stage) for name in stage.members}


def is_vote(stage: Stage) -> bool:
    return stage.config is None and stage.reference is None and not stage.trial and bool(stage.members)


def publish(out: Path, stage: Stage, entry: dict, settled: list[Stage], done: set[str], voter: float) -> dict | None:
    """Make ``stage`` (just done) ``OUT/model`` where the rules say it is better than what is there; returns what was
    published, else None. ``voter``: the right-branching votes the fit's model casts (a teachers' vote's prior is
    for its students, not for a parser)."""
    if stage.name == FINAL:
        return None
    current = published(out)
    if stage.config is not None and stage.config.distill is None and stage.name in voting_stages(settled):
        candidate = {
            "stage": stage.name,
            "kind": "member",
            "family": stage.config.family,
            "reads": entry.get("reads"),
            "dev_ppl": entry.get("selected", {}).get("dev_ppl"),
        }
        alike = current is not None and current["kind"] == "member" and current.get("family") == candidate["family"]
        better = current is None or (
            alike
            and current.get("reads") == candidate["reads"]
            and None not in (candidate["dev_ppl"], current.get("dev_ppl"))
            and candidate["dev_ppl"] < current["dev_ppl"]
        )
        members, layers = [out / stage.name], None
    elif is_vote(stage) and (ensemble := read_ensemble(out / stage.name)) is not None:
        candidate, better = {"stage": stage.name, "kind": "vote"}, True
        members, layers = ensemble.members, ensemble.layers
    else:
        return None
    if not better:
        return None
    candidate["still_to_come"] = [later.name for later in settled if later.name not in done]
    candidate["rule"] = "a member replaces one of its family and reading of higher dev perplexity; a vote replaces a "
    candidate["rule"] += "member or an earlier vote; the fit's last stage writes the fit's model (no gold trees)"
    make_ensemble(out / FINAL, members, voter, copy=True, layers=layers, overwrite=True, card={ANYTIME: candidate})
    return candidate
