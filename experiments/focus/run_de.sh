#!/usr/bin/env bash
# Parse-focused grammar students in German (NEGRA), one thread, from a worktree at a fixed commit:
# bash experiments/focus/run_de.sh [students...]. The teacher is the shipped German vote (onlstm-negra's five members)
# with pcfg-negra beside it; every run records dev perplexity, agreement with the teacher and (for the record)
# valid.penn's F1 at each evaluation in its history.jsonl.
set -euo pipefail
export OMP_NUM_THREADS=1 PYTHONPATH="$PWD"
NEGRA=../shared/data/negra
R=runs/focus-de
onp() { python3 -m onparse "$@"; }
mkdir -p $R
M=models/onlstm-negra/members
[ -d $R/teacher ] || onp ensemble $M/scratch $M/member-1 $M/member-2 $M/member-3 $M/member-4 models/pcfg-negra \
    --link --out $R/teacher
student() {  # name, then its own flags; a run begun before resumes with its own settings
    if [ -f $R/$1/checkpoint.pt ]; then
        onp distill --out $R/$1 --resume --threads 1 --quiet
    elif [ ! -d $R/$1/model ]; then
        onp distill --teacher $R/teacher --out $R/$1 "${@:2}" --train $NEGRA/negra-corpus.sent --encoding latin-1 \
            --dev $NEGRA/valid.penn --dev-gold $NEGRA/valid.penn --threads 1 --sample-seed 1111 \
            --trees $R/teacher.jsonl --quiet
    fi
}
for name in "$@"; do
    case $name in
        # pcfg-negra's shape (64 x 128) from scratch, focused as the English sc-f3, kept by dev perplexity
        sc-f3) student sc-f3 --student models/pcfg-negra --from-scratch --seed 1211 --passes 8 --focus 3 \
                   --evals-per-pass 2 --select-by-perplexity ;;
        # a tree student of the same teacher, sample and seed: what the focus adds
        sc-trees) student sc-trees --student models/pcfg-negra --from-scratch --seed 1211 --passes 8 \
                      --evals-per-pass 2 --select-by-perplexity ;;
    esac
done
