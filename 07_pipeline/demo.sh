# 07_pipeline's part of make demo (sourced by scripts/demo.sh, which defines
# step): the lecture's picture of a schedule, the bubble against the
# micro-batches (2 stages measured, 4 and 8 replayed), one step's timeline,
# the activations each schedule holds on 4 stages, ZB-H1 against 1F1B, and
# TeraPipe's token slices cut to equal FLOPs (each slice's time, the keys and
# values kept).
step ./07_pipeline/pipeline --show-schedule --schedule gpipe --stages 4 --micro 4
step ./07_pipeline/pipeline --show-schedule --schedule interleaved --stages 4 --micro 4
step ./07_pipeline/pipeline --show-schedule --schedule zbh1 --stages 4 --micro 8
step bash 07_pipeline/sweep_zbh1.sh plots/data/zbh1.csv --device cpu
step ./07_pipeline/pipeline --show-schedule --schedule terapipe --stages 3 --micro 2 --slices 4
step mpirun -np 2 ./07_pipeline/pipeline --device cpu --threads 1 --schedule terapipe --slices 4 --balance --dim 64 \
    --heads 4 --kv-heads 2 --layers 4 --seq 512 --batch 4 --micro 2 --steps 4 --replay none
step bash 07_pipeline/sweep_bubble.sh plots/data/bubble.csv --device cpu
step mpirun -np 2 ./07_pipeline/pipeline --device cpu --threads 1 --schedule 1f1b --micro 4 --dim 256 --heads 8 \
    --kv-heads 4 --layers 16 --seq 64 --batch 16 --steps 4 --replay 4 --gantt-csv plots/data/pipeline_gantt.csv
for s in gpipe 1f1b interleaved; do
    step mpirun -np 4 ./07_pipeline/pipeline --device cpu --threads 1 --schedule "$s" --micro 8 --dim 64 --heads 4 \
        --kv-heads 2 --layers 8 --seq 64 --batch 16 --steps 2 --replay none --memory-csv plots/data/pipeline_memory.csv
done
# the micro-batch size at a fixed batch of 16: the step, the bubble and the
# GEMMs' efficiency at b = 1..16, here and replayed on the H100 data
step bash 07_pipeline/sweep_microbatch.sh plots/data/microbatch.csv --device cpu
