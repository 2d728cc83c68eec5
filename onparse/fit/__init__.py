"""The fit (``onparse fit``), the whole recipe as one resumable run: members, ensembles, distillation rounds,
students from scratch, generations.

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

The package by concern: ``stages`` (what runs, in order), ``sizing`` (how much each stage reads, for the text and
the hours), ``records`` (``fit.json``), ``runners`` (each kind of stage), ``card`` (the model's card) and ``loop``
(the stages run one after the other).
"""

from onparse.fit.loop import fit, opened_fit
from onparse.fit.records import TimeUp
from onparse.fit.stages import FINAL, RECORD

__all__ = ["FINAL", "RECORD", "TimeUp", "fit", "opened_fit"]
