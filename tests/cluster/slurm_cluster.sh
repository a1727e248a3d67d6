#!/usr/bin/env bash
# A one-node Slurm on this machine, for tests: Debian's slurm-wlm and munge, run as root with
# everything of their own in one scratch folder (config, state, spool, logs, munge key and
# socket), the daemons on free loopback ports, nothing in /etc touched.
#
#   slurm_cluster.sh start DIR   starts munged, slurmctld and slurmd; writes DIR/env.sh, which
#                                exports SLURM_CONF for the client commands (sbatch, squeue...)
#   slurm_cluster.sh stop DIR    stops the daemons it started, by their pid files
#
# start exits 77 (SKIP) with the reason on stderr where the daemons cannot start here (not root,
# binaries missing); every other failure is an error (exit 1) with the daemon's log tail.
# Every wait polls a state a bounded number of times; nothing sleeps and hopes.
set -euo pipefail

readonly SKIP=77
readonly POLLS=100       # state polls per wait
readonly POLL_SECONDS=0.2

die() { echo "slurm_cluster: error: $*" >&2; exit 1; }
skip() { echo "slurm_cluster: SKIP: $*" >&2; exit "$SKIP"; }

# shellcheck source=poll.sh
. "$(dirname "${BASH_SOURCE[0]}")/poll.sh"

# A TCP port on 127.0.0.1 that nothing listens on now (the kernel picks it).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

log_tail() { [ -f "$1" ] && tail -n 20 "$1" >&2 || true; }

check_can_run() {
  [ "$(id -u)" -eq 0 ] || skip "not root: slurmd must run as root to start jobs as their users"
  local b
  for b in munged slurmctld slurmd sbatch squeue scontrol sinfo python3; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] ||
      skip "$b is missing (packaging/install-deps.sh installs slurm-wlm and munge)"
  done
}

start_munge() {
  local dir=$1/munge
  # munged wants its socket folder (and the path to it) searchable by everyone.
  mkdir -p "$dir" && chmod 0755 "$dir"
  # A fresh random key for this cluster only; munged wants it readable by its user alone.
  head -c 1024 /dev/urandom >"$dir/munge.key"
  chmod 0400 "$dir/munge.key"
  munged --socket="$dir/munge.socket" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" ||
    { log_tail "$dir/munged.log"; die "munged did not start"; }
  wait_until test -S "$dir/munge.socket" || { log_tail "$dir/munged.log"; die "munged made no socket"; }
}

write_config() {
  local root=$1 node ctld_port slurmd_port hardware
  node=$(hostname -s)
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  # CPUs, sockets, cores, threads and memory as slurmd itself detects them (UpTime dropped).
  hardware=$(/usr/sbin/slurmd -C | head -n 1 | sed 's/^NodeName=[^ ]* //')
  mkdir -p "$root/state" "$root/spool" "$root/log"
  cat >"$root/slurm.conf" <<EOF
# Written by tests/cluster/slurm_cluster.sh: a one-node test cluster on the loopback.
ClusterName=mpwbtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also bounds how long a requeued job waits before it may start again (default 120 s).
AuthInfo=socket=$root/munge/munge.socket,cred_expire=10
StateSaveLocation=$root/state
SlurmdSpoolDir=$root/spool
SlurmctldPidFile=$root/slurmctld.pid
SlurmdPidFile=$root/slurmd.pid
SlurmctldLogFile=$root/log/slurmctld.log
SlurmdLogFile=$root/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# Schedule often, so a requeued task starts again soon after it is eligible.
SchedulerParameters=bf_interval=1,sched_min_interval=100000
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
JobRequeue=1
# Finished jobs stay in squeue this long (s): without accounting it is all that reports them.
MinJobAge=600
KillWait=10
NodeName=$node NodeAddr=127.0.0.1 $hardware State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  echo "export SLURM_CONF=$root/slurm.conf" >"$root/env.sh"
}

node_idle() { sinfo -h -N -o '%T' | grep -Eq '^idle'; }

start() {
  local root=$1
  check_can_run
  [ ! -e "$root/slurmctld.pid" ] || die "$root already holds a cluster (stop it first)"
  mkdir -p "$root" && chmod 0755 "$root"
  root=$(cd "$root" && pwd)
  local t0
  t0=$(date +%s%N)
  start_munge "$root"
  write_config "$root"
  export SLURM_CONF=$root/slurm.conf
  /usr/sbin/slurmctld -f "$SLURM_CONF" -i ||
    { log_tail "$root/log/slurmctld.log"; die "slurmctld did not start"; }
  wait_until scontrol ping || { log_tail "$root/log/slurmctld.log"; die "slurmctld does not answer"; }
  /usr/sbin/slurmd -f "$SLURM_CONF" || { log_tail "$root/log/slurmd.log"; die "slurmd did not start"; }
  wait_until node_idle ||
    { sinfo -N >&2 || true; log_tail "$root/log/slurmd.log"; die "the node never became idle"; }
  echo "slurm_cluster: started in $((($(date +%s%N) - t0) / 1000000)) ms (SLURM_CONF=$SLURM_CONF)"
}

# Sends SIGTERM to the daemon of the pid file and waits for it to go. 0 when none was running.
stop_daemon() {
  local pid_file=$1 pid
  [ -f "$pid_file" ] || return 0
  pid=$(cat "$pid_file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    wait_until bash -c "! kill -0 $pid" || { kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$pid_file"
}

stop() {
  local root=$1
  [ -d "$root" ] || die "no cluster folder $root"
  stop_daemon "$root/slurmd.pid"
  stop_daemon "$root/slurmctld.pid"
  stop_daemon "$root/munge/munged.pid"
  echo "slurm_cluster: stopped"
}

case "${1:-}" in
  start) [ $# -eq 2 ] || die "usage: $0 start DIR"; start "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 start|stop DIR" ;;
esac
