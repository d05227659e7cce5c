#!/usr/bin/env bash
# A real single-node Slurm on this machine, without systemd, for the test that
# submits the shipped job array (tests/slurm.rs); also usable by hand to try
# examples/slurm/. Everything lives in DIR: the config, a munge key made for
# this cluster, the daemons' state, spool, logs and pid files.
#
#   scripts/slurm/cluster.sh start DIR   writes DIR/slurm.conf, starts munged (as
#                                        the munge user), slurmctld and slurmd, and
#                                        waits until `sinfo` shows the node idle;
#                                        prints `export SLURM_CONF=DIR/slurm.conf`
#   scripts/slurm/cluster.sh stop DIR    stops the daemons start recorded in
#                                        DIR/pids, by pid, and waits for them
#
# Every client command (sbatch, sinfo, squeue, scancel) must run with
# SLURM_CONF=DIR/slurm.conf. The ports are free ones picked at start, so
# several clusters (several test runs) can run side by side. Needs root and
# Debian's slurm-wlm and munge (scripts/setup-slurm.sh). On a failed start the
# daemons' logs are printed and what was started is stopped.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
# Nothing to stop in a folder that is not there.
[ "$cmd" != stop ] || [ -d "$2" ] || exit 0
mkdir -p "$2"
dir=$(cd "$2" && pwd)
conf=$dir/slurm.conf
pids=$dir/pids
# Seconds to wait for the node to turn idle, and for a daemon to exit.
start_timeout=${SLURM_START_TIMEOUT:-60}
stop_timeout=10

# A TCP port nothing on localhost listens on, from 20000-59999, not in "$@".
free_port() {
    local port
    while :; do
        port=$((20000 + RANDOM % 40000))
        case " $* " in *" $port "*) continue ;; esac
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
}

# The pid in FILE, once its daemon has written it (waits up to 10 s).
read_pid() {
    local file=$1 i
    for i in $(seq 100); do
        if [ -s "$file" ]; then
            tr -d ' \n' <"$file"
            return
        fi
        sleep 0.1
    done
    return 1
}

# Stops every daemon recorded in DIR/pids (NAME PID lines), newest first:
# SIGTERM, then SIGKILL after $stop_timeout s. A pid whose process is not the
# recorded program any more (gone, or reused) is left alone.
stop() {
    [ -f "$pids" ] || return 0
    local name pid i
    # Jobs still running (a test that failed midway) are cancelled first, so
    # that no job step outlives the cluster.
    if [ -f "$conf" ] && grep -q '^slurmctld ' "$pids"; then
        if SLURM_CONF=$conf scancel --quiet --user=root 2>/dev/null; then
            for i in $(seq $((stop_timeout * 10))); do
                [ -z "$(SLURM_CONF=$conf squeue -h -o %A 2>/dev/null)" ] && break
                sleep 0.1
            done
        fi
    fi
    tac "$pids" | while read -r name pid; do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || continue
        kill -TERM "$pid" 2>/dev/null || continue
        for i in $(seq $((stop_timeout * 10))); do
            [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || break
            sleep 0.1
        done
        if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    rm -f "$pids"
}

# Prints the daemons' logs, stops what was started, and fails with MESSAGE.
fail() {
    echo "scripts/slurm/cluster.sh: $1" >&2
    local log
    for log in "$dir"/munge/munged.log "$dir"/log/*; do
        [ -f "$log" ] || continue
        echo "---- $log" >&2
        tail -n 40 "$log" >&2
    done
    stop
    exit 1
}

# Records a started daemon: NAME PID (the pid its pid file holds).
record() {
    local name=$1 file=$2 pid
    pid=$(read_pid "$file") || fail "$name wrote no pid file $file"
    echo "$name $pid" >>"$pids"
}

start() {
    [ "$(id -u)" -eq 0 ] || { echo "$0: must run as root (SlurmUser=root, munged run as munge)" >&2; exit 1; }
    for prog in munged mungekey slurmctld slurmd sinfo; do
        command -v "$prog" >/dev/null || { echo "$0: $prog is missing: run scripts/setup-slurm.sh" >&2; exit 1; }
    done
    [ ! -s "$pids" ] || { echo "$0: $dir already holds a cluster ($pids): stop it first" >&2; exit 1; }
    rm -rf "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
    # Unix socket paths (munged's, slurmd's) hold at most 107 bytes.
    [ ${#dir} -le 64 ] || { echo "$0: $dir is too long a folder for the daemons' sockets (at most 64 bytes)" >&2; exit 1; }
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
    # munged (as munge) must reach its folder, and its socket folder must be
    # searchable by all (munged refuses it otherwise); the key itself is 0600.
    chmod 0711 "$dir"
    chown munge:munge "$dir/munge"
    chmod 0755 "$dir/munge"
    runuser -u munge -- mungekey --create --keyfile="$dir/munge/munge.key" --bits=1024
    runuser -u munge -- munged \
        --socket="$dir/munge/munge.socket" \
        --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" \
        --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed" \
        || fail "munged did not start (log: $dir/munge/munged.log)"
    record munged "$dir/munge/munged.pid"

    local host ctld_port slurmd_port node
    host=$(hostname -s)
    ctld_port=$(free_port)
    slurmd_port=$(free_port "$ctld_port")
    # The node as slurmd sees it (CPUs, sockets, cores, threads, RealMemory),
    # so it registers as configured instead of being drained.
    node=$(slurmd -C | head -n 1)
    node=${node#NodeName=* }
    cat >"$conf" <<CONF
# Written by scripts/slurm/cluster.sh: a single-node cluster in $dir.
ClusterName=msprobe-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No systemd, no cgroups in a container: plain process tracking, no task
# binding, no accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
SchedulerType=sched/builtin
# Schedule at once on submission and completion (default: at most every 2 s).
SchedulerParameters=sched_min_interval=100000
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 $node State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF=$conf
    slurmctld -f "$conf" -i || fail "slurmctld did not start"
    record slurmctld "$dir/run/slurmctld.pid"
    slurmd -f "$conf" -N "$host" || fail "slurmd did not start"
    record slurmd "$dir/run/slurmd.pid"
    local i state=""
    for i in $(seq $((start_timeout * 2))); do
        state=$(sinfo -h -N -n "$host" -o %T 2>/dev/null || true)
        [ "$state" = idle ] && break
        sleep 0.5
    done
    [ "$state" = idle ] || fail "node $host is not idle after ${start_timeout}s (sinfo says: ${state:-nothing})"
    echo "export SLURM_CONF=$conf"
}

case $cmd in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
