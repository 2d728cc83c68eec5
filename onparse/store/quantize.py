"""Int8 copies of models and ensembles (the word tables in 4 bits where asked), with what that cost in F1 written
into their cards."""

from __future__ import annotations

import tempfile
from pathlib import Path

from onparse.parsing.ensemble import make_ensemble
from onparse.parsing.evaluate import evaluate_parser
from onparse.parsing.parse import Parser
from onparse.store.atomic import replacing_folder
from onparse.store.modeldir import load, read_ensemble, save, without_figures, write_json
from onparse.text.treebank import check_gold, read_gold


def quantized_copy(
    source: Path | str,
    out: Path,
    gold: str | None = None,
    device: str = "cpu",
    encoding: str = "UTF-8",
    precision: str = "int8",
) -> dict | None:
    """Write ``source`` (a model, or an ensemble: each member) to ``out`` with int8 weights (``"int4-words"``: the word
    tables in 4 bits); with ``gold`` (trees in ``encoding``), the sentence F1 of both precisions.

    The card records the change, so a user sees what int8 cost before shipping it; the source's own figures are
    left out of it (without ``gold`` the copy's card names no figure rather than one of other weights).
    """
    figures = None
    if gold:
        check_gold(gold, encoding)
        sentences = list(read_gold(gold, encoding=encoding))

        def figures(path: Path | str) -> float:
            return round(
                evaluate_parser(Parser.load(path, device=device), sentences, untrained_seed=None)["sentence_f1"], 2
            )

    change = None
    with replacing_folder(
        Path(out), new=True
    ) as folder:  # the copy appears whole, its figure in its card, or not at all
        change = {"gold": gold, "before": figures(source)} if figures else None
        card = write_copy(source, folder, precision)
        if change:
            change["after"] = figures(folder)
            card["int8_change"] = change
            write_json(folder / "card.json", card)
    return change


def write_copy(source: Path | str, out: Path, precision: str) -> dict:
    """The int8 (or int4-words) copy of a model or of an ensemble (each member) written to ``out``; its card."""
    ensemble = read_ensemble(source)
    if ensemble is None:
        bundle = load(source)
        card = {**without_figures(bundle.card), "weights": precision, "quantized_from": str(bundle.path)}
        save(
            out,
            bundle.model,
            bundle.vocab,
            bundle.default_layer,
            card,
            precision=precision,
            language=bundle.language,
            reading=bundle.reading,
        )
        return card
    ensemble.check_members()  # a linked member replaced since is refused, not copied in
    with tempfile.TemporaryDirectory() as scratch:
        members = [Path(scratch) / str(k) / path.name for k, path in enumerate(ensemble.members)]
        for path, member in zip(ensemble.members, members):
            write_copy(path, member, precision)
        kept = {key: value for key, value in without_figures(ensemble.card).items() if key != "members"}
        card = make_ensemble(
            out,
            members,
            ensemble.right_branching_voter,
            card={**kept, "weights": precision, "quantized_from": str(ensemble.path)},
            layers=ensemble.layers,
        )
    return card  # the source's card.md is not copied: its prose and figures are of other weights
