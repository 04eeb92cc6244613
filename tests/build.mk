# The CUDA emulator (tests/cuda_emu/README.md): the suite's own .cu files
# compiled by g++ against the emulator's headers and run on the CPU, always
# under AddressSanitizer and UndefinedBehaviorSanitizer. Test-only: nothing
# here is linked into the programs, and nvcc is not needed.
#
#   build/emu/<path>.cu.o    a .cu file, after rewrite_shared, as C++
#   build/emu/<path>.o       a .c file, with USE_CUDA and the sanitizers
#   build/emu/libcommon.a    common/ in emulated-CUDA form
#   build/emu/<program>      a chapter's program on the emulated GPU
#   build/tests/cuda_emu_*   the emulator's own tests
#
# A chapter's program gets its emulated twin with one line:
#   $(eval $(call emu_program,NAME,SOURCES))

EMU := build/emu
EMU_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
EMU_MPI_COMPILE := $(shell $(MPICC) --showme:compile 2>/dev/null)
EMU_MPI_LINK := $(shell $(MPICC) --showme:link 2>/dev/null)
EMU_INC := -I$(EMU)/common -Itests/cuda_emu/include -Icommon -I. $(EMU_MPI_COMPILE)
# -g1: line tables only, enough for the sanitizers' file:line stack traces;
# full -g took twice as long to compile (ops_cuda_attention: 15 s against 8)
EMU_CXXFLAGS := -std=c++17 -O1 -g1 $(EMU_SAN) -DCUDA_EMU -DUSE_CUDA -DOMPI_SKIP_MPICXX=1 \
                -Wall -Wno-unused-parameter -Wno-unused-function -Wno-unknown-pragmas -MMD -MP
EMU_CFLAGS := -std=gnu11 -O1 -g1 $(EMU_SAN) -DUSE_CUDA -Wall -Wno-unused-parameter \
              -fno-strict-aliasing -Icommon -I. -MMD -MP
EMU_LDLIBS := $(EMU_MPI_LINK) -lopenblas -lm -lpthread

EMU_REWRITE := $(EMU)/rewrite_shared
# .cuh headers, rewritten too (a device function may declare __shared__).
EMU_CUH := $(patsubst %,$(EMU)/%,$(wildcard common/*.cuh [0-9]*/*.cuh))

emu_objects = $(patsubst %.c,$(EMU)/%.o,$(filter %.c,$(1))) \
              $(patsubst %.cu,$(EMU)/%.cu.o,$(filter %.cu,$(1)))

$(EMU_REWRITE): tests/cuda_emu/rewrite_shared.cc
	@mkdir -p $(@D)
	$(call say,CXX,$@)g++ -std=c++17 -O1 -Wall $< -o $@

# A static pattern rule: the rewritten headers are named targets, so make
# builds a new one before an existing .cu.cc compiles (with a plain pattern
# rule, make's built-in %.o: %.cc won over the rule below).
$(EMU_CUH): $(EMU)/%.cuh: %.cuh $(EMU_REWRITE)
	@mkdir -p $(@D)
	$(call say,GEN,$@)$(EMU_REWRITE) $< $@

$(EMU)/%.cu.cc: %.cu $(EMU_REWRITE)
	@mkdir -p $(@D)
	$(call say,GEN,$@)$(EMU_REWRITE) $< $@

# Keep the rewritten sources (the dependency files name them).
.PRECIOUS: $(EMU)/%.cu.cc $(EMU)/%.cuh

$(EMU)/%.cu.o: $(EMU)/%.cu.cc $(EMU_CUH)
	$(call say,EMU,$<)g++ -x c++ $(EMU_CXXFLAGS) -iquote $(dir $*) $(EMU_INC) -c $< -o $@

$(EMU)/%.o: %.c
	@mkdir -p $(@D)
	$(call say,EMU,$<)$(MPICC) $(EMU_CFLAGS) -c $< -o $@

$(EMU)/harness/%.o: tests/cuda_emu/%.cc
	@mkdir -p $(@D)
	$(call say,EMU,$<)g++ $(EMU_CXXFLAGS) $(EMU_INC) -c $< -o $@

# The scheduler touches no user data: optimised, not instrumented, but it
# tells AddressSanitizer about its stack switches.
$(EMU)/harness/emu_threads.o: tests/cuda_emu/emu_threads.cc
	@mkdir -p $(@D)
	$(call say,EMU,$<)g++ $(filter-out -O1 $(EMU_SAN),$(EMU_CXXFLAGS)) -O2 -DEMU_ASAN_FIBERS $(EMU_INC) -c $< -o $@

# emu_mpi.cc defines the program's blocking MPI calls (MPI's profiling
# interface): the archive comes before -lmpi on the link line, so they win.
EMU_HARNESS := $(EMU)/libcuda_emu.a
$(EMU_HARNESS): $(patsubst tests/cuda_emu/%.cc,$(EMU)/harness/%.o,$(wildcard tests/cuda_emu/emu_*.cc))
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

EMU_LIB := $(EMU)/libcommon.a
# common/cublas_load.cu opens the real cuBLAS; the emulator is its own cuBLAS.
$(EMU_LIB): $(call emu_objects,$(filter-out common/cublas_load.cu,$(wildcard common/*.c common/*.cu)))
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

EMU_LINK = g++ $(EMU_SAN) $(filter %.o,$^) $(EMU_LIB) $(EMU_HARNESS) $(EMU_LDLIBS) -o $@
EMU_TARGETS :=

# emu_program(NAME, SOURCES): build/emu/NAME, the program built from SOURCES
# with the emulated CUDA backend.
define emu_program
EMU_TARGETS += $(EMU)/$(1)
$(EMU)/$(1): $(call emu_objects,$(2)) $(EMU_LIB) $(EMU_HARNESS)
	$$(call say,LD,$$@)$$(EMU_LINK)
endef

# emu_test(NAME, SOURCES): build/tests/NAME, a test binary on the emulator.
define emu_test
EMU_TARGETS += build/tests/$(1)
build/tests/$(1): $(call emu_objects,$(2)) $(EMU_LIB) $(EMU_HARNESS)
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(EMU_LINK)
endef

# ---- the emulator's own tests ------------------------------------------------
$(eval $(call emu_test,cuda_emu_selftest,tests/cuda_emu/selftest.cu))
$(eval $(call emu_test,cuda_emu_bugs,tests/cuda_emu/bugs.cu))
$(eval $(call emu_test,cuda_emu_comm,tests/cuda_emu/comm_test.c))

# ---- the suite's own unit tests, on the emulated GPU (run with DEV=cuda) --------
ifneq ($(wildcard common/ops_cuda.cu),)
$(eval $(call emu_test,cuda_emu_unit_model,tests/unit_model.c))
$(eval $(call emu_test,cuda_emu_ops,tests/cuda_emu/ops_test.c))
$(eval $(call emu_test,cuda_emu_unit_shards,tests/unit_shards.c 08_tensor_parallel/tp.c 09_context_parallel/cp.c))
endif

# ---- the chapters' programs on the emulated GPU ----------------------------------
ifneq ($(wildcard 01_matmul_hfu/main.c),)
$(eval $(call emu_program,hfu,$(HFU_SRCS)))
endif
ifneq ($(wildcard 02_allreduce/main.c),)
$(eval $(call emu_program,allreduce,$(ALLREDUCE_SRCS)))
endif
ifneq ($(wildcard 03_ddp/main.c),)
$(eval $(call emu_program,ddp,$(DDP_PROGRAM_SRCS)))
$(eval $(call emu_program,fedavg,03_ddp/fedavg.c))
endif
ifneq ($(wildcard 04_fsdp/main.c),)
$(eval $(call emu_program,fsdp,$(FSDP_PROGRAM_SRCS)))
endif
ifneq ($(wildcard 05_hsdp/main.c),)
$(eval $(call emu_program,hsdp,$(HSDP_PROGRAM_SRCS)))
endif
ifneq ($(wildcard 07_pipeline/main.c),)
$(eval $(call emu_program,pipeline,$(PIPELINE_PROGRAM_SRCS)))
endif
ifneq ($(wildcard 08_tensor_parallel/main.c),)
$(eval $(call emu_program,tp,$(TP_PROGRAM_SRCS)))
endif
ifneq ($(wildcard 09_context_parallel/main.c),)
$(eval $(call emu_program,cp,$(CP_PROGRAM_SRCS)))
endif
ifneq ($(wildcard 10_nd_llama/main.c),)
$(eval $(call emu_program,train,$(ND_SOURCES)))
endif
ifneq ($(wildcard 06_checkpointing/main.c),)
$(eval $(call emu_program,ckpt,$(CKPT_SOURCES)))
$(eval $(call emu_test,cuda_emu_unit_checkpointing,tests/unit_checkpointing.c 06_checkpointing/recompute.c 06_checkpointing/failure.c))
endif

-include $(shell find $(EMU) -name '*.d' 2>/dev/null)

# ---- the ops benchmark (tests/bench_ops.c) ------------------------------------------
# build/tests/bench_ops --device cuda times every op at the H100 trainer's
# shapes, fast kernels beside simple ones; build/emu/bench_ops is its twin on
# the emulator (tiny shapes only: a smoke test that it runs and checks).
TEST_PROGRAMS += build/tests/bench_ops
build/tests/bench_ops: $(call objects,tests/bench_ops.c)
$(eval $(call emu_program,bench_ops,tests/bench_ops.c))

# Last, once every emulated program above has joined EMU_TARGETS (a rule's
# prerequisites are read where it stands).
all: $(EMU_TARGETS)
