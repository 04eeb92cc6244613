# Chapter 02: the collective benchmark, and the unit test of its checker and
# algorithms (everything but main.c is shared with the test).
ALLREDUCE_SRCS := $(filter-out 02_allreduce/ring_schedule.c,$(wildcard 02_allreduce/*.c 02_allreduce/*.cu))
PROGRAMS += 02_allreduce/allreduce
02_allreduce/allreduce: $(call objects,$(ALLREDUCE_SRCS))
# The ring all-reduce's schedule, watched as ring.c runs it (ring_steps.png).
PROGRAMS += 02_allreduce/ring_schedule
02_allreduce/ring_schedule: $(call objects,02_allreduce/ring_schedule.c 02_allreduce/ring.c 02_allreduce/coll.c)

TEST_PROGRAMS += build/tests/unit_allreduce
build/tests/unit_allreduce: $(call objects,tests/unit_allreduce.c $(filter-out 02_allreduce/main.c,$(ALLREDUCE_SRCS)))

# The exercises' numeric answers (README.md, "Exercises"), from
# 02_allreduce/answers.txt: make check-exercises (every chapter) or
# make check-exercises-02.
check-exercises: check-exercises-02
check-exercises-02:
	@bash 02_allreduce/check_exercises.sh
.PHONY: check-exercises check-exercises-02
