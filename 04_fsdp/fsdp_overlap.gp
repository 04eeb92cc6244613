# fsdp_overlap.gp: one ZeRO-3 training step of every rank on one time axis,
# from the run's Perfetto trace (--trace, cut by scripts/trace_step.py):
# each unit's all-gather, prefetched one unit ahead, and each bucket's
# reduce-scatter against the compute that hides them. Drawn by
# 03_ddp/ddp_overlap.gp.
#   gnuplot -e "csv='plots/data/fsdp_overlap.csv'; out='plots/fsdp_overlap.png'" 04_fsdp/fsdp_overlap.gp
# Columns: rank,kind,lane,name,start_ms,end_ms,ts_us,dur_us + provenance
what = "04\\_fsdp: ZeRO-3 with --prefetch 1, one step of 2 ranks from its trace: each unit's all-gather one unit ahead, the reduce-scatters during backward"
load '03_ddp/ddp_overlap.gp'
