PROGRAMS += 04_fsdp/fsdp
FSDP_PROGRAM_SRCS := 04_fsdp/main.c 04_fsdp/bench.c 04_fsdp/fsdp.c
04_fsdp/fsdp: $(call objects,$(FSDP_PROGRAM_SRCS))

# The exercises' numeric answers (README.md, "Exercises"), from
# 04_fsdp/answers.txt: make check-exercises (every chapter) or
# make check-exercises-04.
check-exercises: check-exercises-04
check-exercises-04:
	@bash 04_fsdp/check_exercises.sh
.PHONY: check-exercises check-exercises-04
