PROGRAMS += 03_ddp/ddp
03_ddp/ddp: $(call objects,03_ddp/main.c)
