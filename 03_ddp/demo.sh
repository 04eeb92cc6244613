# 03_ddp's part of make demo (sourced by scripts/demo.sh, which defines step):
# the default 2-rank training run and the same global batch on 1 rank (one
# CSV: the loss chart draws them over each other), weak scaling on 1, 2 and
# 4 ranks, then the bucket-size sweep; each point of the sweeps 3 times.
step mpirun -np 2 ./03_ddp/ddp --device cpu --csv plots/data/ddp_loss.csv
step ./03_ddp/ddp --device cpu --csv plots/data/ddp_loss.csv
step bash 03_ddp/sweep_scaling.sh plots/data/ddp_scaling.csv --device cpu
step bash 03_ddp/sweep_buckets.sh plots/data/ddp_buckets.csv --device cpu
# DataParallel (one process, a thread per replica) against DDP at the same
# global batch, 1, 2 and 4 replicas or ranks, each point 3 times: the
# README's chart and table are this run's.
step bash 03_ddp/sweep_dataparallel.sh plots/data/dataparallel.csv --device cpu
# Local SGD at H = 1, 4 and 16 and DiLoCo beside DDP, on a small model, 320
# steps: the README's chart and table are this run's.
step bash 03_ddp/sweep_local.sh plots/data/ddp_local.csv --device cpu
# The parameter server: BSP, ASP and SSP:2 without and with a straggler (6
# short runs of 4 ranks, one row per update; the chart paramserver.png in plots/).
step bash 03_ddp/sweep_paramserver.sh plots/data/paramserver.csv --device cpu
# Federated averaging: C 0.1, 0.5, 1 at E 1, E 4, and E 4 under two
# deadlines, 32 clients, 30 rounds: the README's chart is this run's.
step bash 03_ddp/sweep_fedavg.sh plots/data/ddp_fedavg.csv --device cpu
# Compressed gradients on a slow simulated link, a short version (15 steps).
step env STEPS=15 bash 03_ddp/sweep_compress.sh plots/data/ddp_compress.csv --device cpu
# Federated averaging's rounds phase by phase, per client, from a 3-round
# run's own record of its clients (fedavg_round.png; a few seconds).
step bash 03_ddp/fedavg_round.sh plots/data/fedavg_round.csv --device cpu
# One step of DDP's trace on 2 ranks, compute and the buckets' all-reduces
# on one time axis (ddp_overlap.png; a few seconds).
step bash scripts/trace_overlap.sh plots/data/ddp_overlap.csv 2 ./03_ddp/ddp --device cpu --threads 1 --dim 256 \
    --heads 8 --kv-heads 4 --layers 8 --seq 16 --batch 2 --bucket-mb 4 --steps 5
