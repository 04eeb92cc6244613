# Chapter 10: the 4D trainer and the planner.
PROGRAMS += 10_nd_llama/plan
10_nd_llama/plan: $(call objects,10_nd_llama/plan.c 10_nd_llama/cost.c)
ND_SOURCES := 10_nd_llama/main.c 10_nd_llama/nd.c 10_nd_llama/preset.c 10_nd_llama/dry_run.c \
              10_nd_llama/report.c 10_nd_llama/cost.c 04_fsdp/fsdp.c 06_checkpointing/recompute.c \
              07_pipeline/schedule.c 08_tensor_parallel/tp.c 09_context_parallel/cp.c
PROGRAMS += 10_nd_llama/train
10_nd_llama/train: $(call objects,$(ND_SOURCES))
# The 4D mesh as the trainer builds it: coordinates and groups (mesh.png).
PROGRAMS += 10_nd_llama/mesh
10_nd_llama/mesh: $(call objects,10_nd_llama/mesh.c)

# The exercises' numeric answers (README.md, "Exercises"), from
# 10_nd_llama/answers.txt: make check-exercises (every chapter) or
# make check-exercises-10.
check-exercises: check-exercises-10
check-exercises-10: 10_nd_llama/plan
	@bash 10_nd_llama/check_exercises.sh
.PHONY: check-exercises check-exercises-10
