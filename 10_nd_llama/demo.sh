# 10_nd_llama's part of make demo (sourced by scripts/demo.sh, which defines
# step): the 4D trainer first when it is there, then the planner: its answer
# for Llama 3 405B on 16,384 H100s with 16M tokens per batch (the best plans'
# memory per GPU becomes a chart) and Llama 3's table 4 predicted beside the
# published MFU (the other chart).
[ -f 10_nd_llama/demo_train.sh ] && . 10_nd_llama/demo_train.sh
step ./10_nd_llama/plan --preset llama3-405b --gpus 16384 --batch 2048 --top 10 --csv plots/data/plan_memory.csv
step ./10_nd_llama/plan --llama3-table4 --csv plots/data/llama3_table4.csv
