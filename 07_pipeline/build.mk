TEST_PROGRAMS += build/tests/unit_schedule
build/tests/unit_schedule: $(call objects,tests/unit_schedule.c 07_pipeline/schedule.c)
