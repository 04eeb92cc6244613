# replay/replay: a record replayed on one core per rank and priced on a GPU cluster.
PROGRAMS += replay/replay
replay/replay: $(call objects,replay/main.c 10_nd_llama/cost.c)
