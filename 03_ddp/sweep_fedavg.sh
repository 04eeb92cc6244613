#!/usr/bin/env bash
# sweep_fedavg.sh [CSV] [FLAGS...]: federated averaging's evaluation loss
# against the round for several client fractions C, local epochs E and
# deadlines D (03_ddp/fedavg), on the same model, clients (a Dirichlet split,
# alpha 0.5) and held-out mix. Every round of every run goes to CSV (default
# plots/data/ddp_fedavg.csv), the data of 03_ddp/ddp_fedavg.gp, with
# fedavg's --fed-csv columns:
#   round,clients,fraction,local_epochs,deadline,alpha,selected,dropped,
#   train_loss,eval_loss,mb_per_round,ddp_mb_per_step
# Then a table per run: the evaluation loss at the end, the fraction of the
# selected clients dropped, the MB of a round against DDP's MB per step over
# as many workers. Flags after CSV go to every run.
#   bash 03_ddp/sweep_fedavg.sh plots/data/ddp_fedavg.csv --device cpu
# Environment: NP (ranks, 2), ROUNDS (30).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/ddp_fedavg.csv}
shift || true
np=${NP:-2}
source 03_ddp/sweep_common.sh
mkdir -p "$(dirname "$out")"
rm -f "$out"
model=(--dim 64 --heads 4 --kv-heads 2 --layers 2 --seq 32 --batch 8 --threads 1 --steps "${ROUNDS:-30}"
       --clients 32 --client-samples 24 --alpha 0.5 --lr 0.3)
one() {  # C E D: one run, its rounds appended to out
    mpirun -np "$np" ./03_ddp/fedavg "${model[@]}" --fraction "$1" --local-epochs "$2" --deadline "$3" \
        --fed-csv "$out" "${extra[@]}" > /dev/null
}
extra=("$@")
for c in 0.1 0.5 1; do one "$c" 1 0; done
one 0.5 4 0
for d in 150 50; do one 0.5 4 "$d"; done
awk -F, 'NR == 1 { next }
    { k = $3 " " $4 " " $5; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      last[k] = $10; sel[k] += $7; drop[k] += $8; mb[k] = $11; ddp[k] = $12; mbs[k] += $11; r[k]++ }
    END {
        printf "%5s %3s %8s %10s %10s %14s %18s\n", "C", "E", "deadline", "eval loss", "dropped", "MB per round",
               "DDP MB per step"
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, p, " ")
            printf "%5s %3s %8s %10.4f %9.1f%% %14.3f %18.3f\n", p[1], p[2], p[3] == 0 ? "none" : p[3], last[k],
                   100 * drop[k] / sel[k], mbs[k] / r[k], ddp[k]
        }
    }' "$out"
