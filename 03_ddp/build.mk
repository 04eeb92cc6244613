PROGRAMS += 03_ddp/ddp
DDP_PROGRAM_SRCS := 03_ddp/main.c 03_ddp/trainer.c
03_ddp/ddp: $(call objects,$(DDP_PROGRAM_SRCS))
# PyTorch's DataParallel in C: one process, one thread per replica.
PROGRAMS += 03_ddp/dataparallel
03_ddp/dataparallel: $(call objects,03_ddp/dataparallel.c)
# Federated averaging with stragglers, on top of local SGD's idea.
PROGRAMS += 03_ddp/fedavg
03_ddp/fedavg: $(call objects,03_ddp/fedavg.c)

# The exercises' numeric answers (README.md, "Exercises"), from
# 03_ddp/answers.txt: make check-exercises (every chapter) or
# make check-exercises-03.
check-exercises: check-exercises-03
check-exercises-03:
	@bash 03_ddp/check_exercises.sh
.PHONY: check-exercises check-exercises-03

# Data parallelism through a parameter server: BSP, ASP and SSP (README.md).
PROGRAMS += 03_ddp/paramserver
03_ddp/paramserver: $(call objects,03_ddp/paramserver.c)
