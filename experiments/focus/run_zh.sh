#!/usr/bin/env bash
# Parse-focused grammar students in Chinese (CTB), one thread, from a worktree at a fixed commit:
# bash experiments/focus/run_zh.sh [students...]. The teacher is the shipped Chinese vote (onlstm-ctb's nine
# members); every run records dev perplexity, agreement with the teacher and (for the record) CTB 30's F1 at each
# evaluation in its history.jsonl.
set -euo pipefail
export OMP_NUM_THREADS=1 PYTHONPATH="$PWD"
CTB=../shared/data/ctb
R=runs/focus-zh
onp() { python3 -m onparse "$@"; }
mkdir -p $R
student() {  # name, then its own flags; a run begun before resumes with its own settings
    if [ -f $R/$1/checkpoint.pt ]; then
        onp distill --out $R/$1 --resume --threads 1 --quiet
    elif [ ! -d $R/$1/model ]; then
        onp distill --teacher models/onlstm-ctb --out $R/$1 "${@:2}" --train $CTB/29 --dev $CTB/30 --dev-gold $CTB/30 \
            --threads 1 --sample-seed 1111 --trees $R/teacher.jsonl --quiet
    fi
}
for name in "$@"; do
    case $name in
        # the shipped grammars' shape (30 x 60) from scratch, focused as the English sc-f3, kept by dev perplexity
        sc-f3) student sc-f3 --student models/onlstm-ctb/members/generation-1-shares --from-scratch --seed 1211 \
                   --passes 4 --focus 3 --evals-per-pass 2 --select-by-perplexity ;;
        # its second seed, and eight passes at the first (its curve still rose at 4.0)
        sc-f3-s2) student sc-f3-s2 --student models/onlstm-ctb/members/generation-1-shares --from-scratch --seed 1212 \
                      --passes 4 --focus 3 --evals-per-pass 2 --select-by-perplexity ;;
        sc-f3-8p) student sc-f3-8p --student models/onlstm-ctb/members/generation-1-shares --from-scratch --seed 1211 \
                      --passes 8 --focus 3 --evals-per-pass 2 --select-by-perplexity ;;
        # a tree student of the same teacher, sample and seed: what the focus adds in Chinese
        sc-trees) student sc-trees --student models/onlstm-ctb/members/generation-1-shares --from-scratch --seed 1211 \
                      --passes 4 --evals-per-pass 2 --select-by-perplexity ;;
    esac
done
