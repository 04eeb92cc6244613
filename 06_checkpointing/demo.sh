# 06_checkpointing's part of make demo (sourced by scripts/demo.sh, which
# defines step): every recomputation policy on a 16-layer model and its
# chart; one job through injected failures, restarted by the supervisor;
# then goodput against the checkpoint interval and its chart.
step bash 06_checkpointing/sweep_recompute.sh plots/data/recompute.csv --device cpu
rm -rf build/demo_ckpt
step bash 06_checkpointing/supervise.sh --np 2 -- ./06_checkpointing/ckpt --device cpu --steps 60 \
    --ckpt-dir build/demo_ckpt --ckpt-every 10 --ckpt-async --fail-at-step 25,48
rm -rf build/demo_ckpt
step bash 06_checkpointing/sweep_goodput.sh plots/data/goodput.csv --device cpu
# Llama 3's interruptions by cause (the paper's table) and the checkpoint
# interval and goodput Young and Daly give at that rate (llama3_failures.png).
step bash 06_checkpointing/llama3_failures.sh plots/data/llama3_failures.csv
