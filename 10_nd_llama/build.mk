# Chapter 10: the 4D trainer and the planner.
PROGRAMS += 10_nd_llama/plan
10_nd_llama/plan: $(call objects,10_nd_llama/plan.c 10_nd_llama/cost.c)
