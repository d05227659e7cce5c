#!/usr/bin/env bash
# Installs what tests/slurm.rs needs, only when missing: a single-node Slurm's
# parts (Debian's `slurm-wlm`: slurmctld, slurmd and the client commands, and
# `munge`, which authenticates them; scripts/slurm/cluster.sh starts them
# without systemd) and Debian's `python3-yaml`, with which the test reads the
# shipped Kubernetes Job (examples/kubernetes/) as Kubernetes would.
# With MSPROBE_RS_REINSTALL=1 they are downloaded and installed again, as on
# a new machine (scripts/fresh-check.sh sets it).
# Idempotent; starts no daemon. Prints the Slurm version.
set -euo pipefail
missing=0
for prog in slurmctld slurmd sbatch scontrol sinfo munged mungekey; do
    command -v "$prog" >/dev/null || missing=1
done
/usr/bin/python3 -c 'import yaml' 2>/dev/null || missing=1
if [ "${MSPROBE_RS_REINSTALL:-}" = 1 ]; then missing=1; fi
if [ "$missing" -eq 1 ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes \
        $SUDO apt-get install -y -qq --no-install-recommends --reinstall slurm-wlm munge python3-yaml >/dev/null
fi
slurmd -V
