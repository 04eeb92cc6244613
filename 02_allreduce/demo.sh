# 02_allreduce's part of make demo (sourced by scripts/demo.sh, which defines
# step): every all-reduce algorithm on 4 ranks, then time against 2 to 8 ranks.
# Its record replayed on one core per rank and priced on one 8-GPU H100 node
# (replay/replay) gives the chart's replayed and modeled lines.
step mpirun -np 4 ./02_allreduce/allreduce --device cpu --op allreduce --algo all \
    --minbytes 1K --maxbytes 16M --stepfactor 4 --csv plots/data/allreduce.csv --record plots/data/allreduce_record.txt
step rm -f plots/data/allreduce_replay.csv
step ./replay/replay --record plots/data/allreduce_record.txt --cluster h100x1 --csv plots/data/allreduce_replay.csv
step bash 02_allreduce/sweep_ranks.sh plots/data/allreduce_ranks.csv 1M --device cpu --iters 10
# The compressed all-reduce: bytes per rank of 1 MiB on 2 to 4 ranks, every
# compressor (the README's chart is this run's).
step bash 02_allreduce/sweep_compress.sh plots/data/allreduce_compress.csv --device cpu
# The ring all-reduce's steps on 4 ranks, watched as ring.c runs them
# (ring_steps.png; a second).
step mpirun -np 4 ./02_allreduce/ring_schedule --csv plots/data/ring_steps.csv
# The hierarchy's bandwidths: memory, shared memory between 2 ranks, TCP
# between 2 nodes of scripts/cluster.sh (as root; else those rows are left
# out), beside an H100 cluster's published figures (hierarchy.png).
step bash 02_allreduce/hierarchy.sh plots/data/hierarchy.csv
