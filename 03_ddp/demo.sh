# 03_ddp's part of make demo (sourced by scripts/demo.sh, which defines step):
# the default 2-rank training run and the same global batch on 1 rank (one
# CSV: the loss chart draws them over each other), weak scaling on 1, 2 and
# 4 ranks, then the bucket-size sweep; each point of the sweeps 3 times.
step mpirun -np 2 ./03_ddp/ddp --device cpu --csv plots/data/ddp_loss.csv
step ./03_ddp/ddp --device cpu --csv plots/data/ddp_loss.csv
step bash 03_ddp/sweep_scaling.sh plots/data/ddp_scaling.csv --device cpu
step bash 03_ddp/sweep_buckets.sh plots/data/ddp_buckets.csv --device cpu
# Compressed gradients on a slow simulated link, a short version (15 steps).
step env STEPS=15 bash 03_ddp/sweep_compress.sh plots/data/ddp_compress.csv --device cpu
