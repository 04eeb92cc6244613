# Unit tests of the shared library.
TEST_PROGRAMS += build/tests/unit_common
build/tests/unit_common: $(call objects,tests/unit_common.c)

# The model's unit tests (ops backward against finite differences, the whole
# model's gradient, stages, bf16, AdamW). common/*.c are in build/libcommon.a.
TEST_PROGRAMS += build/tests/unit_model
build/tests/unit_model: $(call objects,tests/unit_model.c)
