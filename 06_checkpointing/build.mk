PROGRAMS += 06_checkpointing/ckpt
CKPT_SOURCES := 06_checkpointing/main.c 06_checkpointing/recompute.c 06_checkpointing/saver.c 06_checkpointing/failure.c
06_checkpointing/ckpt: $(call objects,$(CKPT_SOURCES))
TEST_PROGRAMS += build/tests/unit_checkpointing
build/tests/unit_checkpointing: $(call objects,tests/unit_checkpointing.c 06_checkpointing/recompute.c 06_checkpointing/failure.c)
