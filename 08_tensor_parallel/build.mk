PROGRAMS += 08_tensor_parallel/tp
TP_PROGRAM_SRCS := 08_tensor_parallel/main.c 08_tensor_parallel/trainer.c 08_tensor_parallel/report.c \
                   08_tensor_parallel/tp.c
08_tensor_parallel/tp: $(call objects,$(TP_PROGRAM_SRCS))

# The exercises' numeric answers (README.md, "Exercises"), from
# 08_tensor_parallel/answers.txt: make check-exercises (every chapter) or
# make check-exercises-08.
check-exercises: check-exercises-08
check-exercises-08:
	@bash 08_tensor_parallel/check_exercises.sh
.PHONY: check-exercises check-exercises-08
