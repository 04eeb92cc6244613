# Chapter 01: hardware FLOPs utilisation of matrix products.
HFU_SRCS := $(filter-out 01_matmul_hfu/membw.c,$(wildcard 01_matmul_hfu/*.c 01_matmul_hfu/*.cu))
PROGRAMS += 01_matmul_hfu/hfu
01_matmul_hfu/hfu: $(call objects,$(HFU_SRCS))
# The STREAM triad: this CPU's memory bandwidth, the roofline's slope.
PROGRAMS += 01_matmul_hfu/membw
01_matmul_hfu/membw: $(call objects,01_matmul_hfu/membw.c)

# Unit tests: the kernels, the checker and the MLP, without the program.
TEST_PROGRAMS += build/tests/unit_hfu
build/tests/unit_hfu: $(call objects,tests/unit_hfu.c $(filter-out 01_matmul_hfu/main.c,$(HFU_SRCS)))

# The exercises' numeric answers (README.md, "Exercises"), from
# 01_matmul_hfu/answers.txt: make check-exercises (every chapter) or
# make check-exercises-01.
check-exercises: check-exercises-01
check-exercises-01: 01_matmul_hfu/hfu
	@bash 01_matmul_hfu/check_exercises.sh
.PHONY: check-exercises check-exercises-01
