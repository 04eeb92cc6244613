# 03_ddp's part of make demo (sourced by scripts/demo.sh, which defines step):
# a 2-rank training run and its loss chart, then the bucket-size sweep.
step mpirun -np 2 ./03_ddp/ddp --device cpu --csv plots/data/ddp_loss.csv
step bash 03_ddp/sweep_buckets.sh plots/data/ddp_buckets.csv --device cpu
