# Unit tests of the shared library.
TEST_PROGRAMS += build/tests/unit_common
build/tests/unit_common: $(call objects,tests/unit_common.c)
