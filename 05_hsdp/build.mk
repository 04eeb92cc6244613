PROGRAMS += 05_hsdp/hsdp
HSDP_PROGRAM_SRCS := 05_hsdp/main.c 05_hsdp/hsdp.c 04_fsdp/fsdp.c
05_hsdp/hsdp: $(call objects,$(HSDP_PROGRAM_SRCS))

# The exercises' numeric answers (README.md, "Exercises"), from
# 05_hsdp/answers.txt: make check-exercises (every chapter) or
# make check-exercises-05.
check-exercises: check-exercises-05
check-exercises-05:
	@bash 05_hsdp/check_exercises.sh
.PHONY: check-exercises check-exercises-05
