PROGRAMS += 08_tensor_parallel/tp
08_tensor_parallel/tp: $(call objects,08_tensor_parallel/main.c 08_tensor_parallel/tp.c)
