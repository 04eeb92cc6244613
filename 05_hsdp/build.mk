PROGRAMS += 05_hsdp/hsdp
05_hsdp/hsdp: $(call objects,05_hsdp/main.c 04_fsdp/fsdp.c)
