# Chapter 03: distributed data parallel.

# Unit tests of the shared pieces the trainers need: data and checkpoints.
TEST_PROGRAMS += build/tests/unit_data build/tests/unit_ckpt
build/tests/unit_data: $(call objects,tests/unit_data.c)
build/tests/unit_ckpt: $(call objects,tests/unit_ckpt.c)
