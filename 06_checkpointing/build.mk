PROGRAMS += 06_checkpointing/ckpt
CKPT_SOURCES := 06_checkpointing/main.c 06_checkpointing/trainer.c 06_checkpointing/report.c 06_checkpointing/goodput.c \
                06_checkpointing/recompute.c 06_checkpointing/saver.c 06_checkpointing/failure.c
06_checkpointing/ckpt: $(call objects,$(CKPT_SOURCES))
TEST_PROGRAMS += build/tests/unit_checkpointing
build/tests/unit_checkpointing: $(call objects,tests/unit_checkpointing.c 06_checkpointing/recompute.c 06_checkpointing/failure.c)

# The exercises' numeric answers (README.md, "Exercises"), from
# 06_checkpointing/answers.txt: make check-exercises (every chapter) or
# make check-exercises-06.
check-exercises: check-exercises-06
check-exercises-06: 06_checkpointing/ckpt
	@bash 06_checkpointing/check_exercises.sh
.PHONY: check-exercises check-exercises-06
