# 05_hsdp's part of make demo (sourced by scripts/demo.sh, which defines step):
# shard groups of 1, 2 and 4 ranks on 2 simulated nodes, without the link
# model and with a fast and a slow link between the nodes (the hsdp chart).
step bash 05_hsdp/sweep_links.sh plots/data/hsdp.csv --device cpu
