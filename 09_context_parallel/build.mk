PROGRAMS += 09_context_parallel/cp
CP_PROGRAM_SRCS := 09_context_parallel/main.c 09_context_parallel/trainer.c 09_context_parallel/report.c \
                   09_context_parallel/cp.c
09_context_parallel/cp: $(call objects,$(CP_PROGRAM_SRCS))

# The exercises' numeric answers (README.md, "Exercises"), from
# 09_context_parallel/answers.txt: make check-exercises (every chapter) or
# make check-exercises-09.
check-exercises: check-exercises-09
check-exercises-09:
	@bash 09_context_parallel/check_exercises.sh
.PHONY: check-exercises check-exercises-09
