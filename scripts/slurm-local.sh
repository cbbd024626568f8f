#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for testing the slurm/*.sh job scripts
# (tests/integration/slurm_sbatch.sh) without a real cluster.
#
#   scripts/slurm-local.sh start    # munged + slurmctld + slurmd; prints `export SLURM_CONF=...`
#   scripts/slurm-local.sh stop     # stops the daemons this script started
#   scripts/slurm-local.sh status   # sinfo of the local cluster
#
# Must run as root (slurmd launches jobs as the submitting user; munged runs as the
# `munge` user). Everything lives under $SLURM_LOCAL_DIR (default /tmp/trainer-slurm):
# slurm.conf, gres.conf, state, spool, logs and pid files; /etc/slurm is not touched,
# so clients need SLURM_CONF=$SLURM_LOCAL_DIR/slurm.conf (sbatch passes it on to jobs).
#
# The node advertises two GPUs (Gres=gpu:2, counted only, no device files) so that
# `#SBATCH --gres=gpu:2` in slurm/multi_gpu.sh is accepted on a GPU-less machine.
# SLURM_LOCAL_CPUS (default: nproc) sets the CPUs the node advertises; more than the
# machine has is allowed (SlurmdParameters=config_overrides) so tests can ask for
# --cpus-per-task=3 on a 2-core CI machine.
set -euo pipefail

DIR=${SLURM_LOCAL_DIR:-/tmp/trainer-slurm}
CPUS=${SLURM_LOCAL_CPUS:-$(nproc)}
NODE=$(hostname -s)
CONF=$DIR/slurm.conf
# Ports away from the defaults, so a site's own slurmd (if any) is not disturbed.
CTLD_PORT=${SLURM_LOCAL_CTLD_PORT:-16817}
SLURMD_PORT=${SLURM_LOCAL_SLURMD_PORT:-16818}

die() { echo "slurm-local: $*" >&2; exit 1; }

need_binaries() {
  local b
  for b in munged slurmctld slurmd sbatch sinfo; do
    command -v "$b" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$b" >/dev/null 2>&1 ||
      die "missing '$b' (Debian: apt-get install slurm-wlm munge)"
  done
}

mpi_default() {
  # pmix when Slurm was built with it (Debian's slurm-wlm is), else none.
  if ls /usr/lib/*/slurm-wlm/mpi_pmix*.so /usr/lib/slurm/mpi_pmix*.so /usr/lib64/slurm/mpi_pmix*.so \
       >/dev/null 2>&1; then
    echo pmix
  else
    echo none
  fi
}

write_config() {
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
  chmod 755 "$DIR" "$DIR/spool"
  cat >"$CONF" <<EOF
# Written by scripts/slurm-local.sh: a one-node test cluster.
ClusterName=trainer-local
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups in a container: track processes by parent pid, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=$(mpi_default)
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  # Slurm drops GPUs without device files ("Removing file-less GPU"), so give it two
  # stand-ins: character devices equal to /dev/null (1,3). Nothing opens them:
  # with task/none no cgroup binds them; jobs only see CUDA_VISIBLE_DEVICES=0,1.
  mkdir -p "$DIR/dev"
  local i
  for i in 0 1; do
    [[ -e $DIR/dev/nvidia$i ]] || mknod "$DIR/dev/nvidia$i" c 1 3 2>/dev/null || touch "$DIR/dev/nvidia$i"
  done
  cat >"$DIR/gres.conf" <<EOF
AutoDetect=off
NodeName=$NODE Name=gpu File=$DIR/dev/nvidia[0-1]
EOF
}

start_munged() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    echo "slurm-local: munged already running"
    return
  fi
  [[ -s /etc/munge/munge.key ]] || { mkdir -p /etc/munge; mungekey --create --keyfile=/etc/munge/munge.key; }
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
  chmod 0700 /etc/munge /var/log/munge
  chmod 0400 /etc/munge/munge.key
  chmod 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged --force
  local i
  for i in $(seq 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && { touch "$DIR/munged.ours"; return; }
    sleep 0.1
  done
  die "munged did not come up (see /var/log/munge/munged.log)"
}

wait_node_idle() {
  local i state
  for i in $(seq 120); do
    state=$(sinfo -h -n "$NODE" -o %t 2>/dev/null || true)
    case $state in
      idle*|mix*|alloc*) echo "slurm-local: node $NODE is $state"; return ;;
      drain*|down*) scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
  done
  echo "--- slurmctld.log" >&2; tail -n 30 "$DIR/log/slurmctld.log" >&2 || true
  echo "--- slurmd.log" >&2; tail -n 30 "$DIR/log/slurmd.log" >&2 || true
  die "node $NODE did not become idle (state: ${state:-unknown})"
}

start() {
  [[ $(id -u) == 0 ]] || die "must run as root (slurmd starts jobs as the submitting user)"
  need_binaries
  export PATH=$PATH:/usr/sbin SLURM_CONF=$CONF
  if [[ -f $DIR/slurmctld.pid ]] && kill -0 "$(cat "$DIR/slurmctld.pid")" 2>/dev/null; then
    echo "slurm-local: already running (SLURM_CONF=$CONF)"
    return
  fi
  write_config
  start_munged
  # -i: ignore state from an earlier run; -c: clear it (fresh job ids and node state).
  slurmctld -f "$CONF" -c -i
  slurmd -f "$CONF"
  wait_node_idle
  echo "export SLURM_CONF=$CONF"
}

stop_pid() {  # stop_pid NAME PIDFILE
  local pidfile=$2 pid i
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    echo "slurm-local: stopped $1 ($pid)"
  fi
  rm -f "$pidfile"
}

stop() {
  stop_pid slurmd "$DIR/slurmd.pid"
  stop_pid slurmctld "$DIR/slurmctld.pid"
  if [[ -f $DIR/munged.ours ]]; then
    stop_pid munged /run/munge/munged.pid
    rm -f "$DIR/munged.ours"
  fi
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) SLURM_CONF=$CONF sinfo ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
