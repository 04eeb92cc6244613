# Unit tests of the shared library.
TEST_PROGRAMS += build/tests/unit_common
build/tests/unit_common: $(call objects,tests/unit_common.c)

# The model's unit tests (ops backward against finite differences, the whole
# model's gradient, stages, bf16, AdamW). common/*.c are in build/libcommon.a.
TEST_PROGRAMS += build/tests/unit_model
build/tests/unit_model: $(call objects,tests/unit_model.c)

# Gradient synchronisation and the trace writer, on real ranks.
TEST_PROGRAMS += build/tests/unit_grad_sync
build/tests/unit_grad_sync: $(call objects,tests/unit_grad_sync.c tests/unit_trace.c)

# The equivalence check every trainer chapter's tests use.
TEST_PROGRAMS += build/tests/compare
build/tests/compare: $(call objects,tests/compare.c)

# Shards with their communication against the whole model (tensor,
# sequence and context parallelism), on real ranks.
TEST_PROGRAMS += build/tests/unit_shards
build/tests/unit_shards: $(call objects,tests/unit_shards.c 08_tensor_parallel/tp.c 09_context_parallel/cp.c)

# The link model: set against measured latency and bandwidth (4 ranks).
TEST_PROGRAMS += build/tests/unit_link
build/tests/unit_link: $(call objects,tests/unit_link.c)

# The corpus: determinism, structure, shards disjoint on real ranks.
TEST_PROGRAMS += build/tests/unit_data
build/tests/unit_data: $(call objects,tests/unit_data.c)

# Checkpoint files and sets: round trip, every refusal, a crash in mid-save.
TEST_PROGRAMS += build/tests/unit_ckpt
build/tests/unit_ckpt: $(call objects,tests/unit_ckpt.c)

# The gradient compressors: round trips, bytes, error feedback, the
# compressed all-reduce on real ranks.
TEST_PROGRAMS += build/tests/unit_compress
build/tests/unit_compress: $(call objects,tests/unit_compress.c)

# The replay engine on hand-built traces, the record file, the recorder.
TEST_PROGRAMS += build/tests/unit_replay
build/tests/unit_replay: $(call objects,tests/unit_replay.c)
