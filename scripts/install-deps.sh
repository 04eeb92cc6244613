#!/usr/bin/env bash
# Install the Debian packages the suite needs, if any is missing:
# Open MPI (compiler wrapper and mpirun), OpenBLAS, gnuplot, make, gcc and
# python3 (the tests' independent references; make demo cuts a step out of a
# trace with it), and
# Slurm with munge where this runs as root (tests/cluster.tests submits a job
# script through a Slurm of its own nodes; it needs root anyway). The
# daemons are not configured here: scripts/cluster.sh up --slurm starts its
# own, with its own key and files.
# Does nothing when everything is present. Runs apt-get as root or via sudo.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have mpicc   || need+=(libopenmpi-dev)
have mpirun  || need+=(openmpi-bin)
have gnuplot || need+=(gnuplot-nox)
have gcc     || need+=(gcc)
have g++     || need+=(g++)
have make    || need+=(make)
have python3 || need+=(python3)   # the tests' independent references; scripts/trace_step.py
have timeout || need+=(coreutils)
if [ "$(id -u)" -eq 0 ]; then
    have slurmd  || need+=(slurmd slurmctld slurm-client)
    have munged  || need+=(munge)
fi
compgen -G '/usr/lib/*/libopenblas.so' >/dev/null || compgen -G '/usr/lib/libopenblas.so' >/dev/null || need+=(libopenblas-dev)

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
echo "installing: ${need[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if have sudo; then sudo="sudo"; else
        echo "error: missing packages (${need[*]}) and not root; install them or run as root" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "installed: ${need[*]}"
