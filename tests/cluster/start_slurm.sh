#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for the cluster tests (and to
# try the SLURM profile by hand): Debian's slurmctld, slurmd, slurm-client and
# munge, no accounting database.
#
#   tests/cluster/start_slurm.sh up      install if missing, start, wait until `srun true` runs
#   tests/cluster/start_slurm.sh down    stop the daemons this script started (by pid)
#   tests/cluster/start_slurm.sh status  exit 0 if this script's cluster runs jobs
#
# Needs root and apt-get: `up` exits 2 saying why when the machine cannot, 1
# when the cluster does not come up.
# Writes /etc/slurm/slurm.conf (commands inside jobs read it from there) and
# keeps its state, logs and pids in $STATE.
set -euo pipefail

STATE=${DPCD_SLURM_STATE:-/var/tmp/dpcd-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# written by dpcd's tests/cluster/start_slurm.sh"
PACKAGES=(slurmctld slurmd slurm-client munge)

say() { echo "start_slurm: $*" >&2; }
cannot() { say "$*"; exit 2; }

# The node has registered and responds (a "*" would follow its state if not).
node_up() {
    timeout 10 sinfo -h -N -o '%T' 2>/dev/null | grep -qx 'idle\|mixed\|allocated\|completing'
}

# `srun true` passes: the controller schedules and the node runs a job.
ready() {
    node_up && timeout 20 srun --quiet -N1 -n1 -t 1 true >/dev/null 2>&1
}

# Start "$@" in the background, in its own session, and record its pid as $1's.
start() {
    local name=$1
    shift
    setsid "$@" >"$STATE/$name.out" 2>&1 </dev/null &
    echo $! >"$STATE/$name.pid"
}

# The cluster is this script's (a real cluster's login node is not for tests).
ours() { grep -qsF "$MARK" "$CONF"; }

alive() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

install() {
    local missing=()
    command -v slurmctld >/dev/null || missing+=(slurmctld)
    command -v slurmd >/dev/null || missing+=(slurmd)
    command -v srun >/dev/null || missing+=(slurm-client)
    command -v munged >/dev/null || missing+=(munge)
    [ ${#missing[@]} -eq 0 ] && return
    command -v apt-get >/dev/null || cannot "no apt-get to install ${missing[*]}"
    say "installing Debian's ${missing[*]}"
    # Debian's packages do not start their daemons here (policy-rc.d): this script does.
    { timeout 600 apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq \
            --no-install-recommends "${PACKAGES[@]}" >/dev/null; } ||
        cannot "could not install ${PACKAGES[*]} with apt-get"
}

write_conf() {
    if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        cannot "$CONF exists and is not ours: not touching a real cluster's configuration"
    fi
    local host node
    host=$(hostname -s)
    # The node's hardware as slurmd sees it (CPUs, sockets, memory), its first line.
    node=$(timeout 20 slurmd -C | head -n 1)
    mkdir -p "$(dirname "$CONF")" "$STATE/ctld" "$STATE/d"
    # Addresses are 127.0.0.1 whatever the hostname resolves to. Without cgroups
    # (containers): linuxproc and no task plugin; no accounting database.
    cat >"$CONF" <<CONF
$MARK
ClusterName=dpcdtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pidfile
SlurmdPidFile=$STATE/slurmd.pidfile
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
# A cancelled job's processes get SIGTERM, then SIGKILL this many seconds later.
KillWait=5
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
}

up() {
    [ "$(id -u)" = 0 ] || cannot "not root: cannot install or start SLURM's daemons"
    mkdir -p "$STATE"
    if alive slurmctld && alive slurmd && node_up; then
        say "already up"
        return
    fi
    install
    write_conf
    # munged runs as user munge, with its socket directory owned by it.
    if ! timeout 5 sh -c 'munge -n | unmunge' >/dev/null 2>&1; then
        [ -s /etc/munge/munge.key ] || timeout 20 mungekey --create --keyfile /etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
        mkdir -p /run/munge /var/log/munge /var/lib/munge
        chown munge:munge /run/munge /var/log/munge /var/lib/munge
        start munged setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F
        for _ in $(seq 50); do
            timeout 5 sh -c 'munge -n | unmunge' >/dev/null 2>&1 && break
            sleep 0.2
        done
    fi
    alive slurmctld || start slurmctld slurmctld -D -f "$CONF"
    alive slurmd || start slurmd slurmd -D -f "$CONF"
    # slurmctld may report the node idle from its saved state before slurmd
    # registers: `srun true` is the proof.
    local deadline=$((SECONDS + 120))
    while [ $SECONDS -lt $deadline ]; do
        if ready; then
            say "up: $(sinfo -h -o '%P %D %T %c CPUs %m MB')"
            return
        fi
        sleep 1
    done
    say "not ready after 120 s; logs in $STATE"
    tail -n 20 "$STATE"/*.log "$STATE"/*.out >&2 || true
    exit 1
}

down() {
    local name pid
    for name in slurmd slurmctld munged; do
        [ -f "$STATE/$name.pid" ] || continue
        pid=$(cat "$STATE/$name.pid")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid"
            for _ in $(seq 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        fi
        rm -f "$STATE/$name.pid"
    done
    say "down"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) ours && node_up ;;
*)
    echo "usage: $0 up|down|status" >&2
    exit 64
    ;;
esac
