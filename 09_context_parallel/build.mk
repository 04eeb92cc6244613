PROGRAMS += 09_context_parallel/cp
09_context_parallel/cp: $(call objects,09_context_parallel/main.c 09_context_parallel/cp.c)
