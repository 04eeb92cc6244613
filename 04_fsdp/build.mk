PROGRAMS += 04_fsdp/fsdp
04_fsdp/fsdp: $(call objects,04_fsdp/main.c 04_fsdp/fsdp.c)
