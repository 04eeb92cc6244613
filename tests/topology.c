/* topology.c FILE: writes this machine's hardware topology (hwloc's XML) to
 * FILE, for tests/run.sh.
 *
 * Open MPI's mpirun and every MPI process started without it (a singleton)
 * probe the machine through hwloc when they start: they read /sys, PCI
 * devices' configuration space included. A run of `make test` starts about
 * a thousand of them, and the PCI reads alone were 3% of its CPU. With
 * HWLOC_XMLFILE set to this file (and HWLOC_THISSYSTEM=1: it describes this
 * machine, so binding still works), they read the file instead. Open MPI
 * places and binds a job's ranks as it does without the file, under
 * `taskset` too (each rank's allowed cores compared, with and without).
 */
#include <hwloc.h>
#include <stdio.h>

int main(int argc, char **argv) {
    hwloc_topology_t topo;
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    if (hwloc_topology_init(&topo) != 0) return 1;
    int rc = hwloc_topology_load(topo) != 0 || hwloc_topology_export_xml(topo, argv[1], 0) != 0;
    hwloc_topology_destroy(topo);
    if (rc) fprintf(stderr, "error: cannot write the topology to %s\n", argv[1]);
    return rc;
}
