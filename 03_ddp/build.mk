# Chapter 03: distributed data parallel.
PROGRAMS += 03_ddp/ddp
03_ddp/ddp: $(call objects,03_ddp/main.c 03_ddp/ddp.c)

# Compares two runs' losses and final weights (the equivalence tests use it).
TEST_PROGRAMS += build/03_ddp/compare
build/03_ddp/compare: $(call objects,03_ddp/compare.c)

# Unit tests: data, checkpoints, the trace writer and the DDP module.
TEST_PROGRAMS += build/tests/unit_data build/tests/unit_ckpt build/tests/unit_ddp
build/tests/unit_data: $(call objects,tests/unit_data.c)
build/tests/unit_ckpt: $(call objects,tests/unit_ckpt.c)
build/tests/unit_ddp: $(call objects,tests/unit_ddp.c tests/unit_ddp_trace.c 03_ddp/ddp.c)
