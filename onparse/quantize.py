"""Int8 copies of models and ensembles (the word tables in 4 bits where asked), with what that cost in F1 written
into their cards."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from onparse.ensemble import make_ensemble
from onparse.evaluate import evaluate_parser
from onparse.modeldir import load, read_ensemble, save, without_figures, write_json
from onparse.parse import Parser
from onparse.treebank import read_gold


def quantized_copy(source: Path | str, out: Path, gold: str | None = None, device: str = "cpu",
                   encoding: str = "UTF-8", precision: str = "int8") -> dict | None:
    """Write ``source`` (a model, or an ensemble: each member) to ``out`` with int8 weights (``"int4-words"``: the word
    tables in 4 bits); with ``gold`` (trees in ``encoding``), the sentence F1 of both precisions.

    The card records the change, so a user sees what int8 cost before shipping it; the source's own figures are
    left out of it (without ``gold`` the copy's card names no figure rather than one of other weights).
    """
    figures = None
    if gold:
        sentences = list(read_gold(gold, encoding=encoding))
        figures = lambda path: round(evaluate_parser(Parser.load(path, device=device), sentences,  # noqa: E731
                                                     untrained_seed=None)["sentence_f1"], 2)
    change = {"gold": gold, "before": figures(source)} if figures else None
    ensemble = read_ensemble(source)
    if ensemble is None:
        bundle = load(source)
        card = {**without_figures(bundle.card), "weights": precision, "quantized_from": str(bundle.path)}
        save(Path(out), bundle.model, bundle.vocab, bundle.default_layer, card, precision=precision, language=bundle.language,
             reading=bundle.reading)
    else:
        with tempfile.TemporaryDirectory() as scratch:
            members = [Path(scratch) / str(k) / path.name for k, path in enumerate(ensemble.members)]
            for path, member in zip(ensemble.members, members):
                quantized_copy(path, member, precision=precision)
            kept = {key: value for key, value in without_figures(ensemble.card).items() if key != "members"}
            card = make_ensemble(Path(out), members, ensemble.right_branching_voter, card={
                **kept, "weights": precision, "quantized_from": str(ensemble.path)}, layers=ensemble.layers)
        if (ensemble.path / "card.md").is_file():
            shutil.copyfile(ensemble.path / "card.md", Path(out) / "card.md")
    if change:
        change["after"] = figures(out)
        card["int8_change"] = change
        write_json(Path(out) / "card.json", card)
    return change
