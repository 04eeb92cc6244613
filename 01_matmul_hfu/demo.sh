# 01_matmul_hfu's part of make demo (sourced by scripts/demo.sh, which defines
# step): the matmul sweep on this CPU, and the peaks of the GPU generations.
step ./01_matmul_hfu/hfu --device cpu --csv plots/data/hfu.csv
# The roofline: those kernels at their arithmetic intensities under this
# CPU's roofs (its STREAM triad, a few seconds) and the H100's, with the
# H100 sweep of reference/h100_hfu.csv (roofline.png).
step bash 01_matmul_hfu/roofline.sh plots/data/roofline.csv plots/data/hfu.csv
step ./01_matmul_hfu/hfu --peaks --csv plots/data/gpu_peaks.csv
