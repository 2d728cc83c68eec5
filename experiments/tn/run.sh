#!/usr/bin/env bash
# Three-family English votes and their focused grammar student: the vote of nine of experiments/focus/run.sh (ON-LSTMs
# and grammars) with the tensor grammars of runs/tn/en-128-s{1,2} (issue 75), one thread, from a worktree at a
# fixed commit: bash experiments/tn/run.sh [steps...]. Figures go to runs/tn/*.json and the notebook.
set -euo pipefail
export OMP_NUM_THREADS=1 PYTHONPATH="$PWD"
WSJ=../shared/data/ptb/wsj
R=runs/tn
F=runs/focus
onp() { python3 -m onparse "$@"; }
for old in 56a8fee:g62 9cb5493:g60 45f30d8:g58; do   # the three grammars shipped as pcfg-wsj before the default
    [ -d $F/${old#*:} ] || { mkdir -p $F/${old#*:} && git archive ${old%:*} models/pcfg-wsj | tar -x -C $F/${old#*:} --strip-components=2; }
done
M=models/onlstm-wsj-mixed/members
NINE="models/onlstm-wsj-gpu-r4/members/gpu-paper-b256-s1111 models/onlstm-wsj-distilled-r3/members/distill-scratch \
    $M/wsj-30-s1111 $M/wsj-30-s3 $M/wsj-64-s2 $F/g62 $F/g60 $F/g58 models/pcfg-wsj"
TN="$R/en-128-s1/model $R/en-128-s2/model"  # seed 1113's was still training when the student began
eleven() { [ -d $R/en-eleven ] || onp ensemble $NINE $TN --link --out $R/en-eleven; }
for step in "$@"; do
    case $step in
        votes)  # the nine alone, and with the three tensor grammars
            [ -d $R/en-nine ] || onp ensemble $NINE --link --out $R/en-nine
            eleven
            for v in en-nine en-eleven; do onp eval --model $R/$v --gold $WSJ/22 --json > $R/$v.json; done ;;
        student)  # the focused grammar student of the eleven, from scratch, kept by dev perplexity
            eleven
            [ -d $R/en-sc-f3/model ] || onp distill --teacher $R/en-eleven --out $R/en-sc-f3 --student models/pcfg-wsj \
                --from-scratch --seed 1211 --passes 4 --focus 3 --select-by-perplexity --train "$WSJ/[01][0-9]" \
                --train $WSJ/20 --dev $WSJ/22 --dev-gold $WSJ/22 --threads 1 --sample-seed 1111 \
                --trees $R/en-eleven.jsonl --quiet
            onp eval --model $R/en-sc-f3/model --gold $WSJ/22 --json > $R/en-sc-f3.json ;;
        de)  # German: onlstm-negra's five with the three tensor grammars, and the student pcfg-negra's recipe makes of it
            N=../shared/data/negra
            [ -d $R/de-eight ] || onp ensemble models/onlstm-negra/members/{member-1,member-2,member-3,member-4,scratch} \
                $R/de-128-s1/model $R/de-128-s2/model $R/de-128-s3/model --link --out $R/de-eight
            [ -d $R/de-ft3/model ] || onp distill --teacher $R/de-eight --student models/onlstm-negra/members/member-3 \
                --train $N/negra-corpus.sent --dev $N/valid.penn --dev-gold $N/valid.penn --encoding latin-1 \
                --lr 5e-4 --passes 2 --threads 1 --out $R/de-ft3 --trees $R/de-eight.jsonl --quiet
            for v in de-eight de-ft3/model; do
                onp eval --model $R/$v --gold $N/valid.penn --encoding latin-1 --json > $R/${v%/model}.json
            done ;;
    esac
done
