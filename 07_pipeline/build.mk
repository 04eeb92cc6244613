PIPELINE_SRCS := 07_pipeline/schedule.c 07_pipeline/executor.c
PROGRAMS += 07_pipeline/pipeline
07_pipeline/pipeline: $(call objects,07_pipeline/main.c $(PIPELINE_SRCS))

TEST_PROGRAMS += build/tests/unit_schedule
build/tests/unit_schedule: $(call objects,tests/unit_schedule.c 07_pipeline/schedule.c)
