"""A fit sized to its hours: the recipe's reading scaled so that the predicted minutes fit, never past the recipe."""

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from onparse.families import OnlstmConfig
from onparse.families.onlstm import MEMBER_TOKENS
from onparse.fit import sizing
from onparse.plan import FitPlan
from onparse.training import budget
from onparse.training.budget import Rates, costs, reading_of, sized

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def corpus(tokens: int, words: int, sentence_tokens: float) -> dict:
    return {"tokens": tokens, "units": {"onlstm": tokens, "pcfg": words}, "sentence_tokens": sentence_tokens}


CORPUS = corpus(950_000, 800_000, 25.0)  # WSJ 00-20's size
SMALL = corpus(8_600, 7_000, 21.5)  # 400 sentences
RATES: Rates = {"onlstm": 1_000.0, "pcfg": 4_500.0}  # one thread of this project's machines
FORWARD_WORDS = {"directions": ["forward"], "punctuation": False}  # ON-LSTMs whose reading is given: no probe


def plan(onlstm: dict | None = None, pcfg: dict | None = None, **changes) -> FitPlan:
    """A plan of the default families, two grammar students each teacher, with ``changes`` and each family's section
    changed as given."""
    found = FitPlan(**{"train": ["t"], "dev": "d", "member_epochs": None, **changes})
    if "pcfg" in found.sections or pcfg:
        found = found.with_section("pcfg", **{"students": 2, **(pcfg or {})})
    return found.with_section("onlstm", **onlstm) if onlstm else found


def section(found: FitPlan, family: str, *names: str) -> tuple:
    """Some settings of one family's section."""
    return tuple(getattr(found.sections[family], name) for name in names)


def test_members_epochs_hold_for_the_grammars_and_the_probes_read_no_more_than_a_member():
    from onparse.training.budget import at_scale

    given, small = plan(member_epochs=1), corpus(100_000, 80_000, 25.0)
    settled = at_scale(given, small, 1.0, given)
    assert settled.sections["pcfg"].epochs == 1 and section(settled, "onlstm", "probe_tokens", "probe_epochs") == (
        100_000,
        1,
    )
    full = at_scale(plan(), CORPUS, 1.0, plan())
    assert section(full, "onlstm", "probe_tokens") == section(plan(), "onlstm", "probe_tokens")  # a member reads more


def test_a_model_reads_the_text_whole_as_often_as_its_target_says_or_a_sample_of_it_once():
    assert reading_of(3_000_000, 1_000_000) == (3, None)
    assert reading_of(1_200_000, 1_000_000) == (1, None)
    assert reading_of(400_000, 1_000_000) == (1, 400_000)
    assert reading_of(700_000, 1_000_000) == (
        1,
        700_000,
    )  # below one epoch, what fits: not the whole text it cannot afford
    assert reading_of(1_000_000, 3_724) == (budget.MAX_EPOCHS, None)  # 400 sentences are not read 269 times


@pytest.mark.parametrize(
    "tokens, reading",
    [(1_360_000, (1, None)), (2_000_000, (1, None)), (2_100_000, (1, 1_000_000)), (400_000, (2, None))],
)
def test_a_text_up_to_twice_the_members_reading_is_read_whole_and_a_longer_one_sampled(tokens, reading):
    from onparse.training.budget import at_scale

    text = corpus(tokens, 800_000, 25.0)
    settled = at_scale(plan(), text, 1.0, plan())
    assert section(settled, "onlstm", "epochs", "sample") == reading
    if reading[1] is None and tokens > MEMBER_TOKENS:  # short of time, the whole text shrinks to a sample
        assert at_scale(plan(), text, 0.5, plan()).sections["onlstm"].sample == tokens // 2


@pytest.mark.parametrize("hours", [1.0, 2.0, 3.0])
def test_the_plan_fills_the_hours_given_and_no_more(hours):
    found, record = sized(plan(), RATES, CORPUS, hours)
    total = sum(costs(found, RATES, CORPUS).values())
    assert total <= budget.USABLE * 60 * hours and record["predicted_total_minutes"] == pytest.approx(total, abs=0.5)
    assert total >= 0.98 * budget.USABLE * 60 * hours  # filled
    assert 0 < record["scale"] < 1 and found.sentences == pytest.approx(record["scale"] * plan().sentences, rel=0.01)
    larger = sized(plan(), RATES, CORPUS, hours + 1)[1]["scale"]
    assert larger > record["scale"]  # more time, more reading


def test_a_text_larger_than_a_members_reading_fills_the_hours_too():
    chinese = corpus(1_360_000, 800_000, 25.0)  # CTB 29: a member reads less than one epoch of it at 3 hours
    found, _ = sized(plan(), RATES, chinese, 3.0)
    assert (
        found.sections["onlstm"].sample is not None
        and sum(costs(found, RATES, chinese).values()) >= 0.98 * budget.USABLE * 180
    )


def test_hours_to_spare_never_train_past_the_recipe():
    found, record = sized(plan(), RATES, CORPUS, 100.0)
    assert record["scale"] == 1 and section(found, "onlstm", "epochs", "sample") == (1, None)
    assert found.sections["pcfg"].epochs == 5 and found.sentences == plan().sentences


def test_too_few_hours_are_said(caplog):
    found, record = sized(plan(), RATES, CORPUS, 0.05)
    assert record["scale"] == 0.05 and budget.hours_for_one_call(record, 0.05) > 0.05
    assert budget.hours_for_one_call(record, 100.0) is None
    assert found.sections["onlstm"].sample < CORPUS["tokens"]


@pytest.mark.slow
def test_a_fit_given_hours_measures_this_machine_and_records_its_plan(tmp_path):
    from onparse.fit import fit

    given = FitPlan(
        train=[str(EXAMPLES / "corpus.txt")],
        dev=str(EXAMPLES / "dev.txt"),
        members=2,
        rounds=0,
        families=["onlstm", "pcfg"],
        sentences=100,
        scratch_passes=1,
        evals_per_epoch=1,
        dtype="fp32",
        member_epochs=1,
    ).with_section(
        "onlstm",
        model=OnlstmConfig(vocab_size=60, embedding_size=16, hidden_size=24, chunk_size=4),
        **FORWARD_WORDS,
    )
    record = fit(given.with_section("pcfg", epochs=1), tmp_path / "fit", hours=2.0)
    sizing = json.loads((tmp_path / "fit" / "fit.json").read_text())["budget"]
    assert sizing == record["budget"] and sizing["hours"] == 2.0
    assert sizing["rates"]["onlstm"] > 0 and sizing["rates"]["pcfg"] > 0
    card = (tmp_path / "fit" / "model" / "card.md").read_text()
    # sized again once both families trained, and after every stage since: the card gives the last
    assert sizing["replans"] >= 1 and "Sized to 2 hours" in card and f"After {sizing['replanned']['after']}" in card
    member = next(entry for entry in record["stages"] if entry["name"] == "member-1")
    wall_rate = member["tokens_seen"] / (60 * member["wall_minutes"]) * budget.wall_factor(given, "onlstm")
    assert sizing["replanned"]["rates"]["onlstm"] == pytest.approx(wall_rate)  # what its stage took, not its updates


def test_a_grammar_is_cut_as_the_rest_and_its_dev_gold_scoring_is_paid_for():
    from onparse.training.budget import at_scale

    full = at_scale(plan(), CORPUS, 1.0, plan())
    assert full.sections["pcfg"].epochs == 5
    assert at_scale(plan(), CORPUS, 0.6, plan()).sections["pcfg"].epochs == 3  # five epochs, 60%
    scored = plan(dev_gold="gold.mrg")
    assert (
        costs(full, RATES, CORPUS)["grammars"] < costs(at_scale(scored, CORPUS, 1.0, scored), RATES, CORPUS)["grammars"]
    )


def test_the_onlstm_students_are_paid_for_one_per_direction():
    from onparse.training.budget import at_scale

    def student_minutes(given: FitPlan) -> float:
        return costs(at_scale(given, CORPUS, 1.0, given), RATES, CORPUS).get("ON-LSTM students", 0.0)

    one, both = (
        student_minutes(plan(onlstm={"student_directions": directions})) for directions in ([], ["forward", "backward"])
    )
    assert 0 < one and both == pytest.approx(2 * one)
    assert student_minutes(plan(families=["pcfg"], pcfg={"students": None})) == 0  # grammars alone: no ON-LSTM student


def test_a_fit_replans_at_the_rates_its_first_models_showed_to_fill_the_time_left(tmp_path):
    from dataclasses import asdict

    from onparse.fit.sizing import replanned
    from onparse.fit.stages import stages

    given = plan()
    slow = {name: rate / 2 for name, rate in RATES.items()}  # timed beside other work
    first, sizing = sized(given, slow, CORPUS, 3.0)
    record = {
        "plan": asdict(first),
        "stages": [],
        "budget": {**sizing, "corpus": CORPUS, "timing_minutes": 1.0, "given": budget.given_reading(given)},
    }

    def trained(name: str, tokens: int, rate: float, slowed: float = 1.0) -> None:  # a stage done at the machine's
        family = "pcfg" if name in ("member-2", "member-4") else "onlstm"  # true rate, its wall minutes ``slowed``
        wall = slowed * budget.wall_factor(first, family) * tokens / rate / 60
        record["stages"].append({"name": name, "tokens_seen": tokens, "tokens_per_second": rate, "wall_minutes": wall})

    probe_tokens = first.sections["onlstm"].probe_tokens
    trained("probe-forward-punctuation", probe_tokens, RATES["onlstm"] / 3)  # smaller batches: slower a token
    trained("probe-forward-words", probe_tokens, RATES["onlstm"] / 3)
    trained("member-2", 2_000_000, RATES["pcfg"])
    trained("member-4", 2_000_000, RATES["pcfg"])
    record["stages"].append({"name": "readings", "wall_minutes": 1.0})
    assert replanned(first, record, stages(first, tmp_path, record)) is None  # no ON-LSTM member's rate seen yet
    trained("member-1", first.sections["onlstm"].sample, RATES["onlstm"])
    assert replanned(first, record, stages(first, tmp_path, record)) is None  # the trial's second member reads alike
    trained("member-3", first.sections["onlstm"].sample, RATES["onlstm"])
    record["stages"].append({"name": "directions", "wall_minutes": 0.1})
    again = replanned(first, record, stages(first, tmp_path, record))
    redone = record["budget"]["replanned"]
    assert redone["after"] == "directions" and redone["rates"]["onlstm"] == pytest.approx(RATES["onlstm"])
    assert redone["scale"] > 1.3 * sizing["scale"]
    assert again.sections["onlstm"].sample > first.sections["onlstm"].sample  # twice the speed
    done = {"probes": 2, "onlstm": 2, "pcfg": 2}
    whole, rest = costs(again, RATES, CORPUS), costs(again, RATES, CORPUS, done)
    assert rest["probes"] == rest["grammars"] == 0 < whole["probes"]
    assert rest["ON-LSTMs"] == pytest.approx(whole["ON-LSTMs"] / 3)  # two of three trained
    left = budget.USABLE * 180 - redone["spent_minutes"]
    assert (
        left * 0.95 <= sum(costs(again, RATES, CORPUS, done).values()) <= left + 0.05
    )  # the time left, filled (a grammar reads whole epochs; the record keeps the minutes spent to a tenth)
    assert again.sentences > first.sentences  # the students still to train
    # after every stage, at the rates the members showed so far: a member slowed by other work cuts the rest
    trained("member-5", again.sections["onlstm"].sample, RATES["onlstm"] / 4)
    later = replanned(again, record, stages(again, tmp_path, record))
    latest = record["budget"]["replanned"]
    assert latest["after"] == "member-5" and record["budget"]["replans"] == 2
    assert latest["rates"]["onlstm"] < redone["rates"]["onlstm"] and latest["scale"] < redone["scale"]
    assert later.sentences < again.sentences
    # at the wall rate: a member whose training kept its pace but whose stage took four times the wall minutes
    # (evaluations and saves beside other work) cuts the rest as much as one that trained four times slower
    record["stages"][-1] = {**record["stages"][-1], "tokens_per_second": RATES["onlstm"]}
    record["budget"]["replanned"] = redone
    paced = replanned(again, record, stages(again, tmp_path, record))
    assert record["budget"]["replanned"]["scale"] == latest["scale"] and paced.sentences == later.sentences


@pytest.mark.parametrize("hours", [2.0, 1.0, 0.6, 0.3])
def test_the_stages_that_choose_read_the_recipe_or_a_power_of_two_of_it_whatever_the_rates_noise(hours):
    given = plan()  # five members: probes, then grammars 2 and 4 referee them, then the trial's ON-LSTMs 1 and 3
    assert given.choosing_members() == [1, 2, 3, 4] and plan(onlstm={"directions": ["forward"]}).choosing_members() == [
        2,
        4,
    ]
    full = budget.at_scale(given, CORPUS, 1.0, given)
    whole, after = costs(full, RATES, CORPUS), costs(full, RATES, CORPUS, {"probes": 2, "onlstm": 2, "pcfg": 2})
    assert budget.choosing_minutes(full, RATES, CORPUS) == pytest.approx(
        whole["probes"] + whole["grammars"] + whole["ON-LSTMs"] * 2 / 3
    )
    assert whole["grammars"] > 0 and after["ON-LSTMs"] > 0  # the choices are not the whole fit
    room = budget.CHOICES_SHARE * budget.USABLE * 60 * hours
    scales = set()
    for noise in (0.97, 1.0, 1.03):  # the fit's own rates, as timed beside a busy process and alone (1-3% apart)
        rates = {name: rate * noise for name, rate in RATES.items()}
        first, sizing = sized(given, rates, CORPUS, hours)
        found, settled = budget.choices_read_alike(given, rates, CORPUS, hours, sizing)
        scale = settled["choices"]["scale"]
        assert scale in (1, 1 / 2, 1 / 4, 1 / 8, 1 / 16) and scale >= sizing["scale"]
        assert (
            settled["choices"]["predicted_minutes"]
            <= room
            < budget.choosing_minutes(budget.at_scale(given, CORPUS, 2 * scale, given), rates, CORPUS)
        )  # the largest that fits
        assert found.sections["onlstm"].sample == budget.at_scale(given, CORPUS, scale, given).sections["onlstm"].sample
        scales.add(scale)
    assert len(scales) == 1  # a power of two moves only where the rates cross its edge


def test_timing_counts_the_fits_own_cpu_time_so_other_work_does_not_shrink_the_plan(monkeypatch, caplog):
    from onparse.fit.stages import member_configs

    given = plan(
        train=[str(EXAMPLES / "corpus.txt")],
        dev=str(EXAMPLES / "dev.txt"),
        onlstm={"model": OnlstmConfig(vocab_size=60, embedding_size=16, hidden_size=24, chunk_size=4)},
    )
    config = budget.first_of_each(member_configs(given, Path("unused")))["onlstm"]
    wall = budget.timed(config)
    clock = iter([0.0, 1e-6])  # the updates took almost none of this process's own time: other work had the cores
    monkeypatch.setattr(budget.time, "process_time", lambda: next(clock))
    with caplog.at_level("DEBUG", logger="onparse"):
        slowed = budget.timed(config)
    assert slowed > 1000 * wall and "other work is slowing this machine" in caplog.text
    clock = iter([0.0, 1e6])  # more own time than wall time: never a rate under the wall's
    assert budget.timed(config) < 10 * wall


def test_only_grammars_the_user_left_as_the_recipes_are_grown_by_the_time():
    from onparse.families import PcfgConfig

    assert budget.shape_chosen_by_time(plan()) == "pcfg"
    for chosen in (
        plan(pcfg={"larger": False}),
        plan(pcfg={"larger": True}),
        plan(pcfg={"batch_size": 200}),
        plan(pcfg={"model": PcfgConfig(nonterminals=40)}),
        plan(pcfg={"epochs": 3}),
        plan(families=["onlstm"]),
    ):
        assert budget.shape_chosen_by_time(chosen) is None
    larger = budget.larger(plan(), ["pcfg"])
    grown = larger.sections["pcfg"]
    assert (grown.model.nonterminals, grown.model.preterminals, grown.batch_size) == (64, 128, 200)
    settled = budget.at_scale(larger, CORPUS, 1.0, larger)  # 2.4 M words: three epochs of 800,000
    assert (
        settled.sections["pcfg"].epochs == 3
        and budget.at_scale(plan(), CORPUS, 1.0, plan()).sections["pcfg"].epochs == 5
    )
    asked = plan(train=[str(EXAMPLES / "corpus.txt")], dev=str(EXAMPLES / "dev.txt"), pcfg={"larger": True})
    found = sizing.settled_plan(asked, Path("unused"), None)[0]
    assert found.sections["pcfg"].shape["nonterminals"] == 64  # asked: no hours needed
    with pytest.raises(ValueError, match="larger-grammars"):
        plan(pcfg={"larger": True, "model": PcfgConfig(nonterminals=40)}).check()


@pytest.mark.parametrize("room", ["both", "default only", "neither"])
def test_hours_to_spare_grow_the_grammars_where_the_larger_ones_fit(tmp_path, monkeypatch, room):
    from onparse.fit.card import budget_summary
    from onparse.fit.sizing import settled_plan, text_size

    given = plan(train=[str(EXAMPLES / "corpus.txt")], dev=str(EXAMPLES / "dev.txt"), pcfg={"students": None})
    slower = 3.0  # a larger grammar's words a second, against the default's
    monkeypatch.setattr(
        budget,
        "timed",
        lambda config: (
            RATES["onlstm"]
            if config.family == "onlstm"
            else RATES["pcfg"] / (slower if config.model.nonterminals > 30 else 1)
        ),
    )
    text = text_size(given)
    minutes = {
        name: sum(costs(budget.at_scale(shaped, text, 1.0, shaped), rates, text).values())
        for name, shaped, rates in (
            ("default", given, RATES),
            ("larger", budget.larger(given, ["pcfg"]), {**RATES, "pcfg": RATES["pcfg"] / slower}),
        )
    }
    assert minutes["larger"] > minutes["default"]
    hours = {
        "both": minutes["larger"] * 1.01,
        "default only": (minutes["default"] + minutes["larger"]) / 2,
        "neither": minutes["default"] * 0.9,
    }[room] / (60 * budget.USABLE)
    found, sizing, _ = settled_plan(given, tmp_path, hours)
    grown = room == "both"
    assert found.sections["pcfg"].shape == (
        {"nonterminals": 64, "preterminals": 128, "batch_size": 200}
        if grown
        else {"nonterminals": 30, "preterminals": 60, "batch_size": 600}
    )
    assert (sizing["scale"] < 1) == (room == "neither")
    if room == "neither":  # no time to spare: the larger grammars are not even timed
        assert "larger" not in sizing
        return
    weighed = sizing["larger"]
    assert weighed["chosen"] == grown and weighed["family"] == "pcfg"
    assert weighed["rate"] == pytest.approx(RATES["pcfg"] / slower)
    assert weighed["default_predicted_total_minutes"] == pytest.approx(minutes["default"], abs=0.5)
    if grown:
        assert weighed["predicted_total_minutes"] == pytest.approx(minutes["larger"], abs=0.5)
    said = budget_summary({"budget": sizing, "plan": asdict(found)})
    assert ("nonterminals=64, preterminals=128" in said) == grown and ("no time for them" in said) == (not grown)


def test_a_generation_is_paid_for_its_teachers_trees_and_its_students():
    from onparse.training.budget import at_scale

    full = at_scale(plan(generations=0), CORPUS, 1.0, plan())
    none, one, two = (costs(replace(full, generations=g), RATES, CORPUS) for g in (0, 1, 2))
    students = none["ON-LSTM students"] + none["grammar students"]
    assert "generations" not in none and one["generations"] > students  # the students again, and their teacher's trees
    # the first generation's teacher parses with the members and the first students, a later one with its students alone
    assert students < two["generations"] - one["generations"] < one["generations"]
    assert (
        sized(plan(generations=1), RATES, CORPUS, 3.0)[1]["scale"]
        < sized(plan(generations=0), RATES, CORPUS, 3.0)[1]["scale"]
    )


@pytest.mark.parametrize("room", [True, False])
def test_a_replan_with_time_to_spare_trains_one_more_member_of_each_family(tmp_path, room):
    from dataclasses import asdict

    from onparse.fit.card import budget_summary
    from onparse.fit.sizing import replanned
    from onparse.fit.stages import stages
    from onparse.training.budget import at_scale

    fast, done = {name: 4 * rate for name, rate in RATES.items()}, {"onlstm": 1, "pcfg": 2}
    five = plan(families=["onlstm", "pcfg"], onlstm=FORWARD_WORDS)
    rest = [
        sum(costs(at_scale(shaped, CORPUS, 1.0, five), fast, CORPUS, done).values())
        for shaped in (five, budget.more_members(five))
    ]
    spent = budget.USABLE * 180 - (
        rest[1] + 0.5 if room else (rest[0] + rest[1]) / 2
    )  # room for the turn, or the five alone

    def replan(given: FitPlan, corpus: dict = CORPUS) -> tuple[FitPlan, dict]:
        first, sizing = sized(budget.more_members(given) if given.more_members else given, RATES, corpus, 3.0)
        trained = [  # at 4 times the timing's rates
            {
                "name": name,
                "tokens_seen": tokens,
                "wall_minutes": tokens / (4 * rate) * budget.wall_factor(first, kind) / 60,
            }
            for name, kind, tokens in (
                ("member-2", "pcfg", 4_000_000),
                ("member-4", "pcfg", 4_000_000),
                ("member-1", "onlstm", 950_000),
            )
            for rate in [RATES[kind]]
        ]
        timing = spent - sum(entry["wall_minutes"] for entry in trained)  # the rest of the minutes spent
        record = {
            "plan": asdict(first),
            "budget": {**sizing, "corpus": corpus, "timing_minutes": timing, "given": budget.given_reading(given)},
            "stages": trained,
        }
        return replanned(first, record, stages(first, tmp_path, record)), record

    found, record = replan(plan(families=["onlstm", "pcfg"], onlstm=FORWARD_WORDS))
    weighed = record["budget"]["replanned"]["more_members"]
    assert weighed["chosen"] == room and weighed["members"] == 7 and found.members == (7 if room else 5)
    if room:  # the turn of the cycle: a grammar and an ON-LSTM, so the vote stays three and three
        assert [found.family(k) for k in (6, 7)] == ["pcfg", "onlstm"] and found.member_seed(7) == found.seed + 6
        assert weighed["predicted_total_minutes"] == record["budget"]["replanned"]["predicted_total_minutes"]
    said = budget_summary({**record, "plan": record["plan"]})
    assert "One more member of each family (7 in all)" in said and ("no time for them" in said) == (not room)
    asked, _ = replan(plan(families=["onlstm", "pcfg"], onlstm=FORWARD_WORDS, more_members=False))
    assert asked.members == 5
    small, record = replan(plan(families=["onlstm", "pcfg"], onlstm=FORWARD_WORDS), corpus=SMALL)
    assert small.members == 5 and "more_members" not in record["budget"]["replanned"]  # a small text: not weighed
    always, record = replan(plan(families=["onlstm", "pcfg"], onlstm=FORWARD_WORDS, more_members=True))
    assert always.members == 7 and "more_members" not in record["budget"]["replanned"]  # asked: settled at the start
