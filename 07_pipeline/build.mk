PIPELINE_SRCS := 07_pipeline/schedule.c
PROGRAMS += 07_pipeline/pipeline
PIPELINE_PROGRAM_SRCS := 07_pipeline/main.c 07_pipeline/pipeline.c 07_pipeline/summary.c 07_pipeline/report.c \
                         $(PIPELINE_SRCS)
07_pipeline/pipeline: $(call objects,$(PIPELINE_PROGRAM_SRCS))

TEST_PROGRAMS += build/tests/unit_schedule
build/tests/unit_schedule: $(call objects,tests/unit_schedule.c 07_pipeline/schedule.c)

# The exercises' numeric answers (README.md, "Exercises"), from
# 07_pipeline/answers.txt: make check-exercises (every chapter) or
# make check-exercises-07.
check-exercises: check-exercises-07
check-exercises-07: 07_pipeline/pipeline
	@bash 07_pipeline/check_exercises.sh
.PHONY: check-exercises check-exercises-07
