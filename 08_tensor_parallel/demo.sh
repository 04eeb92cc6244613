# 08_tensor_parallel's part of make demo (sourced by scripts/demo.sh, which
# defines step): a tensor- and sequence-parallel run on 2 ranks, which prints
# its bytes per layer and its activation memory beside the formulas, then the
# sweep over the degree and the link speed behind plots/tp.png.
step mpirun -np 2 ./08_tensor_parallel/tp --device cpu --tp 2 --sp --steps 40 --threads 1
step bash 08_tensor_parallel/sweep_tp.sh plots/data/tp.csv --device cpu
