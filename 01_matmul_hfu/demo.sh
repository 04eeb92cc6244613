# 01_matmul_hfu's part of make demo (sourced by scripts/demo.sh, which defines
# step): the matmul sweep on this CPU, and the peaks of the GPU generations.
step ./01_matmul_hfu/hfu --device cpu --csv plots/data/hfu.csv
step ./01_matmul_hfu/hfu --peaks --csv plots/data/gpu_peaks.csv
