PROGRAMS += 03_ddp/ddp
03_ddp/ddp: $(call objects,03_ddp/main.c)
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
