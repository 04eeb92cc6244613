# The suite's one entry point.
#   make            build every chapter program in place (01_matmul_hfu/hfu, ...)
#   make programs   the same without the CUDA emulator's programs (tests/cuda_emu)
#   make test       build, then run the unit and multi-rank tests (DEVICE=cuda on a GPU);
#                   the CUDA emulator's programs build while the first tests run
#   make demo       the main job on this machine, then its charts
#   make plots      redraw every chart from the CSV files present (plots/data -> plots/)
#   make figures    redraw the charts the READMEs show from the CSVs committed beside
#                   them (NN_*/figures/data/NAME.csv -> NN_*/figures/NAME.png)
#   make tables     regenerate the READMEs' tables of measured numbers from those CSVs
#   make reference-charts  measure again (make demo), refuse data taken on a busy
#                   machine, then ship the CSVs beside the figures and redraw them
#   make assignment NAME="02-ring ..." [DIR=...]  a student copy with those
#                   assignments' code left out (ASSIGNMENTS.md)
#                   [WITH_BUILD=1: with build/, so only the stripped files recompile]
#   make grade NAME="02-ring ..."  run their graded tests, print the score
#   make answers [CH="04 07"]  for instructors: the exercises' numeric answers
#   make regrade SUBMISSIONS=DIR [NAME=...] [REPORTS=DIR]  grade a folder of
#                   submissions in a clean copy of the suite: a table of scores
#   make deps       install the Debian packages the suite needs (if missing)
#   make cluster-up [NODES=2 GBPS=1 RANKS=2 SLURM=1]  nodes on this machine
#                   (network namespaces, TCP between them; scripts/cluster.sh,
#                   as root); SLURM=1 makes them a Slurm cluster
#   make cluster-down  remove them
#   make clean
# Knobs: CUDA=0 leaves the CUDA backend out (default: built when nvcc is
# found on the PATH or in CUDA_HOME); CUDA_ARCH="80 90" picks GPU targets;
# SANITIZE=1 builds with AddressSanitizer and UndefinedBehaviorSanitizer;
# MARCH=x86-64-v3 (default native) builds binaries that also run on the other
# machines of a cluster, whose CPUs may lack this one's instructions;
# V=1 prints every compiler command instead of one short line per step.

SHELL := /bin/bash
.DEFAULT_GOAL := all

# ---- toolchain -------------------------------------------------------------
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null))
ifeq ($(CUDA_HOME),)
CUDA_HOME := /usr/local/cuda
endif
NVCC := $(CUDA_HOME)/bin/nvcc
ifeq ($(origin CUDA),undefined)
CUDA := $(if $(wildcard $(NVCC)),1,0)
endif
CUDA_ARCH ?= 80 90
SANITIZE ?= 0
MARCH ?= native
DEVICE ?= cpu
V ?= 0

# say(WHAT,FILE): one short line per build step, or nothing with V=1 (which
# shows the command itself).
ifeq ($(V),1)
say =
else
say = @printf '  %-5s %s\n' '$(1)' '$(2)';
endif

MPICC ?= mpicc
CFLAGS := -std=gnu11 -O3 -march=$(MARCH) -g -Wall -Wextra -Werror=implicit-function-declaration \
          -fno-strict-aliasing -Icommon -I. -MMD -MP
LDLIBS := -lopenblas -lm -lpthread -ldl
NVCCFLAGS := -std=c++17 -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1 -O3 -g -lineinfo -Icommon -I. -MMD -MP --Werror all-warnings \
             -Xcompiler -Wall,-Wextra,-Werror,-fno-strict-aliasing \
             -ccbin $(shell command -v g++ 2>/dev/null || echo g++) \
             $(shell $(MPICC) --showme:compile 2>/dev/null) \
             $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a))

ifeq ($(CUDA),1)
CFLAGS += -DUSE_CUDA -I$(CUDA_HOME)/include
NVCCFLAGS += -DUSE_CUDA
LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lnccl -lstdc++
endif
ifeq ($(SANITIZE),1)
CFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
NVCCFLAGS += -Xcompiler -fsanitize=address -Xcompiler -fsanitize=undefined -Xcompiler -fno-omit-frame-pointer
endif

# Objects of each configuration live apart (build/obj-cuda, build/obj-cpu-asan,
# ...), so switching back and forth rebuilds nothing twice; the programs are
# relinked whenever the configuration differs from the last build's.
OBJ := build/obj-$(if $(filter 1,$(CUDA)),cuda,cpu)$(if $(filter 1,$(SANITIZE)),-asan)
CONFIG := CUDA=$(CUDA) SANITIZE=$(SANITIZE) ARCH=$(CUDA_ARCH) MARCH=$(MARCH) CC=$(MPICC)
STAMP := build/config.stamp
$(shell mkdir -p build; [ "$$(cat $(STAMP) 2>/dev/null)" = "$(CONFIG)" ] || echo '$(CONFIG)' > $(STAMP))

# ---- sources ---------------------------------------------------------------
# objects(files): $(OBJ)/<path>.o for .c, $(OBJ)/<path>.cu.o for .cu (when CUDA=1)
objects = $(patsubst %.c,$(OBJ)/%.o,$(filter %.c,$(1))) \
          $(if $(filter 1,$(CUDA)),$(patsubst %.cu,$(OBJ)/%.cu.o,$(filter %.cu,$(1))))

LIB := $(OBJ)/libcommon.a
LIB_OBJS := $(call objects,$(wildcard common/*.c common/*.cu))

PROGRAMS :=
TEST_PROGRAMS :=
include $(sort $(wildcard */build.mk))

# ---- rules -----------------------------------------------------------------
all: programs $(EMU_TARGETS)
# all but the CUDA emulator's programs (tests/build.mk)
programs: $(LIB) $(PROGRAMS) $(TEST_PROGRAMS)

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(MPICC) $(CFLAGS) -c $< -o $@

$(OBJ)/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(call say,NVCC,$<)$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

$(PROGRAMS) $(TEST_PROGRAMS): $(LIB) $(STAMP)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(MPICC) $(LDFLAGS) $(filter %.o,$^) $(LIB) $(LDLIBS) -o $@

deps:
	@bash scripts/install-deps.sh

# make test, demo and reference-charts build with one job per core unless
# make was given its own -j.
BUILD_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))

# make test builds the programs, then starts the tests while the CUDA
# emulator's programs build (EMU_BUILD in tests/run.sh): the tests that run
# those wait for them, the others use the cores the build leaves idle.
# (EMU_MAKE, not $(MAKE) itself, so that make -n test runs no tests.)
EMU_MAKE = $(MAKE)
test: deps
	@$(MAKE) --no-print-directory $(BUILD_JOBS) programs
	@DEVICE=$(DEVICE) SANITIZE=$(SANITIZE) \
	    EMU_BUILD='$(EMU_MAKE) --no-print-directory -j$(shell nproc 2>/dev/null || echo 1) $(EMU_TARGETS)' bash tests/run.sh

# make demo and reference-charts run the programs alone: the emulator's are
# the tests'.
demo: deps
	@$(MAKE) --no-print-directory $(BUILD_JOBS) programs
	@bash scripts/demo.sh

plots:
	@bash scripts/plots.sh

figures:
	@bash scripts/plots.sh --figures

tables:
	@bash scripts/tables.sh

reference-charts: deps
	@$(MAKE) --no-print-directory $(BUILD_JOBS) programs
	@bash scripts/reference_charts.sh

NODES ?= 2
GBPS ?= 1
RANKS ?= 2
SLURM ?= 0
cluster-up:
	@bash scripts/cluster.sh up $(NODES) --gbps $(GBPS) --ranks-per-node $(RANKS) $(if $(filter 1,$(SLURM)),--slurm)

cluster-down:
	@bash scripts/cluster.sh down

assignment:
	@bash scripts/assignment.sh $(if $(DIR),--dir "$(DIR)") $(if $(filter 1,$(WITH_BUILD)),--with-build) $(NAME)

grade:
	@DEVICE=$(DEVICE) SANITIZE=$(SANITIZE) bash scripts/grade.sh $(NAME)

answers:
	@if [ -f scripts/answers.sh ]; then bash scripts/answers.sh $(CH); else \
	    echo "error: this is a student copy: the answers stay with the instructor's suite" >&2; exit 2; fi

regrade:
	@DEVICE=$(DEVICE) SANITIZE=$(SANITIZE) bash scripts/regrade.sh $(if $(NAME),--names "$(NAME)") $(if $(REPORTS),--reports "$(REPORTS)") $(SUBMISSIONS)

clean:
	rm -rf build $(PROGRAMS) $(TEST_PROGRAMS)

.PHONY: all programs deps test demo plots figures tables reference-charts cluster-up cluster-down assignment grade regrade answers clean
-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
