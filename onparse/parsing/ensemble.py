"""Making an ensemble directory: members (model directories or training runs) whose trees vote, and its card.

Each member parses with its own layer, or with the layer the ensemble chose
for it: ``agreeing_layers`` picks, without gold trees, the layer (or the
mean of the layers) whose trees agree best with the vote of the other
members' trees on unlabelled text.

An ensemble is a config naming its members and whether a right-branching
tree votes too (``modeldir.save_ensemble``); how its trees are built is
``onparse.structures.builder``'s business. Members are copied into the ensemble's
``members/`` folder by default, so the ensemble stands alone and rewriting a
model elsewhere never changes it; ``copy=False`` names them where they stand.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from onparse.config import LAYER_RULES
from onparse.families import OnlstmConfig, readouts
from onparse.parsing.parse import Parser
from onparse.settings import Layer, layer_key
from onparse.store import modeldir, shipped
from onparse.store.atomic import replacing_folder
from onparse.structures.builder import TreeBuilder
from onparse.structures.scoring import score
from onparse.structures.trees import spans
from onparse.text.corpus import read_sentences
from onparse.text.language import Sentence
from onparse.text.treebank import GoldSentence


@dataclass
class MemberSource:
    """Where a member comes from: a model directory, or a run folder's ``model/``."""

    name: str
    model: Path


def member_source(path: Path | str) -> MemberSource:
    """The model a path means: a training run stands for its ``model/``; ModelDirError when it holds none."""
    path = Path(path)
    if (path / "model" / "config.json").is_file() and (path / "history.jsonl").is_file():
        return MemberSource(path.name, path / "model")
    if modeldir.read_ensemble(path) is not None:
        raise modeldir.ModelDirError(f"{path} is an ensemble: give its members (its config.json lists them)")
    modeldir.load(path)  # checked whole now, not when the ensemble is first used
    return MemberSource(path.name if path.name != "model" else path.parent.name, path)


def member_summary(source: MemberSource, stored: Path, ensemble: Path) -> dict:
    """What the ensemble's card says of a member: where it came from, its family and size, its layer, how it was
    chosen, its command and training time."""
    bundle_card = modeldir.read_json(source.model / "card.json") if (source.model / "card.json").is_file() else {}
    config = modeldir.read_json(source.model / "config.json")
    summary = {
        "name": source.name,
        "path": os.path.relpath(stored.resolve(), ensemble.resolve()),
        "from": str(source.model),
        "family": config.get("family", OnlstmConfig.family),
        "size": config["model"],
        "layer": config["default_layer"],
    }
    for key in ("model_selection", "selected", "command", "train_seconds", "tokens_seen"):
        if key in bundle_card:
            summary[key] = bundle_card[key]
    return summary


def candidate_trees(
    models: list[Path | str], sentences: list[Sentence], settings: dict
) -> tuple[list[list], list[list[Layer]], list[dict[Layer, list[set]]]]:
    """Each model's distances on ``sentences``, its candidate layers (each layer and the mean), and each candidate's
    trees (as span sets), computed once."""
    parsers = [Parser(modeldir.load(member_source(model).model), **settings) for model in models]
    distances = [
        [found for (found,) in parser.distances(sentences)] for parser in parsers
    ]  # per model, sentence: layers x words
    candidates = [readouts(parser.members[0].model.config) for parser in parsers]
    own_trees = [
        {layer: [spans(TreeBuilder((layer,)).build([d]).tree) for d in found] for layer in layers_of}
        for found, layers_of in zip(distances, candidates)
    ]
    return distances, candidates, own_trees


def pairwise_agreement(trees: list[list[set]], sentences: list[Sentence]) -> list[list[float]]:
    """Sentence F1 of each model's trees against each other model's (a symmetric table: binary trees over the same
    words have as many spans); the diagonal is 100."""
    table = [[100.0] * len(trees) for _ in trees]
    for a in range(len(trees)):
        reference = [
            GoldSentence(tuple(sentence.word_tokens), frozenset(found), (), "another member")
            for sentence, found in zip(sentences, trees[a])
        ]
        for b in range(a + 1, len(trees)):
            table[a][b] = table[b][a] = score(trees[b], reference)["sentence_f1"]
    return table


def model_trees(model: Path | str, sentences: list[Sentence], settings: dict) -> list[set]:
    """A model's (or an ensemble's) trees of ``sentences``, each as its set of spans."""
    parser = Parser.load(model, **settings)
    return [spans(parser.build(found).tree) for found in parser.distances(sentences)]


def reference_agreement(
    models: list[Path | str], referees: list[Path | str], sentences: list[Sentence], settings: dict
) -> list[float]:
    """Sentence F1 of each model's trees (at its own layer) against the vote of every other model and the
    ``referees`` on unlabelled text: the candidate that agrees best with all the others. No gold trees."""
    everyone = [*models, *referees]
    distances, _, own_trees = candidate_trees(everyone, sentences, settings)
    layers = [modeldir.load(member_source(model).model).default_layer for model in everyone]
    found = []
    for m in range(len(models)):
        voters = [k for k in range(len(everyone)) if k != m]
        vote = TreeBuilder(tuple(layers[k] for k in voters))
        reference = [
            GoldSentence(
                tuple(sentence.word_tokens),
                frozenset(spans(vote.build([distances[k][i] for k in voters]).tree)),
                (),
                "the others' vote",
            )
            for i, sentence in enumerate(sentences)
        ]
        found.append(score(own_trees[m][layers[m]], reference)["sentence_f1"])
    return found


def most_consistent(
    own_trees: list[dict[Layer, list[set]]], sentences: list[Sentence]
) -> tuple[Layer, dict[str, float]]:
    """The candidate layer every model has whose trees agree best between the models: mean sentence F1 over every
    pair of models (a layer that holds syntax holds it in every seed and direction; one that holds noise does not).
    Ties go to the earlier candidate."""
    shared = [layer for layer in own_trees[0] if all(layer in trees for trees in own_trees)]
    consistency = {}
    for layer in shared:
        table = pairwise_agreement([trees[layer] for trees in own_trees], sentences)
        pairs = [table[a][b] for a in range(len(table)) for b in range(a + 1, len(table))]
        consistency[layer_key(layer)] = round(sum(pairs) / len(pairs), 2) if pairs else 100.0
    return max(shared, key=lambda layer: consistency[layer_key(layer)]), consistency


def most_central(trees: list[list[set]], sentences: list[Sentence], keep: int) -> tuple[list[int], list[float]]:
    """The ``keep`` models (their indices, in order) whose trees agree best on average with every other model's, and
    each model's mean agreement. A seed that learnt something the others did not stands apart and is left out; no
    gold trees. Ties go to the earlier model."""
    table = pairwise_agreement(trees, sentences)
    centrality = [
        round(sum(row[b] for b in range(len(row)) if b != a) / max(len(row) - 1, 1), 2) for a, row in enumerate(table)
    ]
    ranked = sorted(range(len(trees)), key=lambda m: -centrality[m])
    return sorted(ranked[:keep]), centrality


def agreeing_layers(
    distances: list[list],
    candidates: list[list[Layer]],
    own_trees: list[dict[Layer, list[set]]],
    sentences: list[Sentence],
    sweeps: int = 2,
) -> tuple[list[Layer], list[dict[str, float]]]:
    """Each model's layer (or the mean) whose trees agree best with the vote of the others' trees; no gold trees.

    Over each model's distances, candidate layers and their trees
    (``candidate_trees``): starting from the mean of every model's layers
    (a grammar: its span marginals), each model in turn takes the candidate
    with the highest sentence F1 against the tree the others vote for
    (``TreeBuilder``, at their layers as they stand) on ``sentences``;
    ``sweeps`` passes over the models. Returns the layers and, per model,
    each candidate's agreement in the last pass.
    """
    layers: list[Layer] = [found[-1] for found in candidates]  # the mean (a grammar: its span marginals)
    agreement: list[dict[str, float]] = [{} for _ in distances]
    if len(distances) < 2:
        return layers, agreement
    for _ in range(sweeps):
        for m in range(len(distances)):
            others = [k for k in range(len(distances)) if k != m]
            vote = TreeBuilder(tuple(layers[k] for k in others))
            reference = [
                GoldSentence(
                    tuple(sentence.word_tokens),
                    frozenset(spans(vote.build([distances[k][i] for k in others]).tree)),
                    (),
                    "the other members' vote",
                )
                for i, sentence in enumerate(sentences)
            ]
            agreement[m] = {
                layer_key(layer): round(score(trees, reference)["sentence_f1"], 2)
                for layer, trees in own_trees[m].items()
            }
            layers[m] = max(
                candidates[m], key=lambda layer: agreement[m][layer_key(layer)]
            )  # ties: the first candidate
    return layers, agreement


def choose(
    models: list[Path | str],
    rule: str,
    sentences: list[Sentence] | None = None,
    settings: dict | None = None,
    keep: int | None = None,
    fixed_layer: Layer | None = None,
) -> dict:
    """An ensemble's gold-free choices, the one dispatch over ``config.LAYER_RULES``: each model's layer (``"own"``:
    the layer its directory names; ``"fixed"``: ``fixed_layer`` for every model that has it, a grammar its one
    readout; ``"agreement"``: ``agreeing_layers`` on ``sentences``; ``"consistency"``: one layer for all,
    ``most_consistent``), then, with ``keep``, only the ``keep`` models whose trees at those layers agree best with
    the others' on ``sentences`` (``most_central``).

    Returns ``{"members": kept indices, "layers": their layers}`` and the figures behind each choice.
    """
    if rule not in LAYER_RULES:
        raise ValueError(f"the layer rule is one of {', '.join(LAYER_RULES)}, not {rule!r:.40}")
    if keep is not None and not 1 <= keep <= len(models):
        raise ValueError(f"can keep 1 to {len(models)} of {len(models)} members, not {keep}")
    on_text = rule in ("agreement", "consistency") or (keep is not None and keep < len(models))
    if on_text and sentences is None:
        raise ValueError(f"the {rule} rule and keep choose on unlabelled text: give it")
    bundles = [modeldir.load(member_source(model).model) for model in models]
    candidates = [readouts(bundle.model.config) for bundle in bundles]
    chosen: dict = {}
    if on_text:
        distances, candidates, own_trees = candidate_trees(models, sentences, settings or {})
    if rule == "own":
        layers = [bundle.default_layer for bundle in bundles]
    elif rule == "fixed":  # a model without that layer (a grammar) reads its one readout
        layers = [fixed_layer if fixed_layer in found else found[-1] for found in candidates]
    elif rule == "agreement":
        layers, chosen["layer_agreement"] = agreeing_layers(distances, candidates, own_trees, sentences)
    else:  # one layer shared by every model that has several; a model of one readout (a grammar) keeps it
        layered = [m for m in range(len(models)) if len(candidates[m]) > 1]
        layer, chosen["layer_consistency"] = (
            most_consistent([own_trees[m] for m in layered], sentences) if layered else (None, {})
        )
        layers = [layer if m in layered else candidates[m][0] for m in range(len(models))]
    kept = list(range(len(models)))
    if keep is not None and keep < len(models):
        kept, chosen["member_agreement"] = most_central([own_trees[m][layers[m]] for m in kept], sentences, keep)
    return {"members": kept, "layers": [layers[m] for m in kept], **chosen}


def build(
    out: Path,
    models: list[Path | str],
    rule: str = "own",
    sentences: list[Sentence] | None = None,
    settings: dict | None = None,
    keep: int | None = None,
    fixed_layer: Layer | None = None,
    layers: list[Layer] | None = None,
    right_branching_voter: float = 0.0,
    copy: bool = True,
    overwrite: bool = False,
    card: dict | None = None,
) -> dict:
    """Make an ensemble directory with its choices made: the one way ``onparse ensemble`` and the fit make one.

    ``out`` is checked first (``check_target``) where choosing on text takes
    minutes; then ``choose`` gives the members kept and their layers, unless ``layers``
    are given (chosen elsewhere, as the fit's gold-dev protocol does); then
    ``make_ensemble``. Choices made on text are recorded in the card
    (``chosen_on``). Returns the choices.
    """
    if sentences is not None and layers is None:  # refused now, before minutes of choosing (make_ensemble checks again)
        check_target(out, models, copy, overwrite)
    chosen = (
        {"members": list(range(len(models))), "layers": layers}
        if layers is not None
        else choose(models, rule, sentences, settings, keep, fixed_layer)
    )
    card = dict(card or {})
    if sentences is not None and layers is None:  # no gold trees: the text and rule that chose, and their figures
        card["chosen_on"] = {**card.get("chosen_on", {}), "layer_rule": rule, "keep": keep, "figures": chosen}
    make_ensemble(
        out,
        [models[m] for m in chosen["members"]],
        right_branching_voter,
        copy=copy,
        card=card,
        layers=chosen["layers"],
        overwrite=overwrite,
    )
    return chosen


def choice_text(
    out: Path, members: list[Path | str], text: str, encoding: str = "UTF-8", copy: bool = True, overwrite: bool = False
) -> list[Sentence]:
    """The unlabelled text an ensemble's choices are made on, read in its members' own language (never a default),
    once ``out`` is known to be a place the ensemble may be written (``check_target``: refused before minutes of
    work)."""
    sources = check_target(out, members, copy, overwrite)
    return read_sentences([text], modeldir.load(sources[0].model).language, encoding)


def check_target(out: Path, members: list[Path | str], copy: bool, overwrite: bool) -> list[MemberSource]:
    """The members' sources, once ``out`` is known to be a place an ensemble of them may be written: empty or new,
    a folder already holding every member named in place (``written_around``), or with ``overwrite`` an ensemble
    outside the shipped models (``modeldir.refuse_to_replace``) that holds no member it would name (``copy=False``);
    ModelDirError otherwise, before anything is written."""
    sources = [member_source(member) for member in members]
    if not sources:
        raise ValueError("an ensemble needs at least one member")
    read = {source.name: modeldir.languages(source.model) for source in sources}
    if len(set().union(*read.values())) > 1:  # its members vote on one sentence's words: one language
        raise modeldir.ModelDirError(
            "an ensemble's members read one language, and these do not: "
            + ", ".join(f"{name} {'/'.join(sorted(found))}" for name, found in read.items())
        )
    if written_around(out, sources, copy):
        return sources
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        modeldir.refuse_to_replace(out, modeldir.is_ensemble_folder, "an ensemble")
        if not overwrite:
            raise modeldir.ModelDirError(f"{out} exists: choose another --out, or --overwrite")
    for source in sources if not copy else []:
        inside = source.model.resolve()
        if inside == out.resolve() or out.resolve() in inside.parents:
            raise modeldir.ModelDirError(
                f"{source.model} lies inside --out {out}: replacing it would delete a member "
                "the ensemble names; copy the members instead of --link"
            )
    return sources


def written_around(out: Path, sources: list[MemberSource], copy: bool) -> bool:
    """Whether the ensemble goes into ``out`` beside what is there: members named in place (``--link``), every one of
    them inside ``out``, and ``out`` a real folder outside the shipped models holding no config or card of its own.
    Two files are added and nothing is replaced or deleted (``runs/a runs/b --out runs``: the folder of the runs)."""
    if (
        copy
        or out.is_symlink()
        or not out.is_dir()
        or any((out / name).exists() for name in modeldir.ENSEMBLE_FILES - {"members"})
    ):
        return False
    models, resolved = shipped.MODELS.resolve(), out.resolve()
    if resolved == models or models in resolved.parents or resolved in models.parents:
        return False
    return all(resolved in source.model.resolve().parents for source in sources)


def make_ensemble(
    out: Path,
    members: list[Path | str],
    right_branching_voter: float = 0.0,
    copy: bool = True,
    card: dict | None = None,
    layers: list[Layer] | None = None,
    overwrite: bool = False,
) -> dict:
    """Write an ensemble directory at ``out`` (replacing one there only when complete); returns its card.

    ``members`` are model directories or run folders (their ``model/``).
    Copied members go to ``out/members/NAME`` (names made unique with a
    number), their own files alone (``modeldir.copy_model``). ``layers``,
    where given, is each member's layer in this ensemble;
    ``right_branching_voter`` the votes of a right-branching tree (0: none).
    A folder that holds every member named in place gets the ensemble's
    config and card beside them (``written_around``). A folder at ``out``
    is replaced only with ``overwrite``, and only an
    ensemble outside the shipped models (``modeldir.refuse_to_replace``)
    whose replacement leaves every linked member standing; ModelDirError
    otherwise, before anything is written.
    """
    out = Path(out)
    sources = check_target(out, members, copy, overwrite)
    names: list[str] = []
    for source in sources:
        name, k = source.name, 2
        while name in names:
            name, k = f"{source.name}-{k}", k + 1
        names.append(name)
    around = written_around(out, sources, copy)
    with (
        nullcontext(out) if around else replacing_folder(out) as folder
    ):  # a sibling of out: relative names hold for out
        placed = []
        for source, name in zip(sources, names):
            if copy:
                modeldir.copy_model(source.model, folder / "members" / name)
            placed.append(folder / "members" / name if copy else source.model.resolve())
        summaries = [member_summary(source, path, folder) for source, path in zip(sources, placed)]
        if layers is not None:
            for summary, layer in zip(summaries, layers):
                summary["layer"] = layer
        written = {"members": summaries, "right_branching_voter": right_branching_voter, **(card or {})}
        modeldir.save_ensemble(folder, placed, right_branching_voter, written, layers)
    modeldir.read_ensemble(out)  # what was written reads back
    return written
