#!/usr/bin/env bash
# A real single-machine Slurm for the tests: slurmctld + slurmd on this host, one node, partition "debug".
#
#   bash scripts/slurm-local.sh start    # install (apt) if needed, configure, start, smoke-test; idempotent
#   bash scripts/slurm-local.sh stop     # stop only the daemons this script started (its pid files)
#   bash scripts/slurm-local.sh status   # sinfo (exit 1 if Slurm does not answer)
#
# Needs root (apt-get, /etc/slurm, daemons as SlurmUser=root). No systemd needed: the daemons are
# started directly and daemonize themselves. If a Slurm controller this script did not start already
# answers, nothing is touched. Environment knobs:
#   SLURM_LOCAL_TIMEOUT   seconds to wait for the node to come up idle (default 30)
#   SLURM_LOCAL_PACKAGES  Debian packages to install (default "slurm-wlm munge")
#   SLURM_LOCAL_NO_CHECK=1  skip the srun/sbatch smoke test after starting
set -euo pipefail

RUN_DIR=/run/manybench-slurm          # our pid files + lock; only daemons we started write here
CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
LOG_DIR=/var/log/slurm
CTLD_SPOOL=/var/spool/slurmctld
SLURMD_SPOOL=/var/spool/slurmd
MARKER="# Written by manybench scripts/slurm-local.sh"
TIMEOUT="${SLURM_LOCAL_TIMEOUT:-30}"
PACKAGES="${SLURM_LOCAL_PACKAGES:-slurm-wlm munge}"
NODE="$(hostname -s)"

log() { printf 'slurm-local: %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  for f in "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" /var/log/munge/munged.log; do
    [ -f "$f" ] && { echo "---- tail $f" >&2; tail -n 25 "$f" >&2; }
  done
  exit 1
}

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 && SUDO="sudo -n" || { log "needs root (or passwordless sudo)"; exit 1; }
  exec $SUDO bash "$0" "$@"
fi

# ---- pid-file helpers: a pid counts only while /proc/PID/comm is the expected program
pid_alive() {  # NAME -> 0 if RUN_DIR/NAME.pid names a live process called NAME
  local f="$RUN_DIR/$1.pid" pid
  [ -s "$f" ] || return 1
  pid="$(tr -dc 0-9 <"$f")"
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$1" ]
}
our_pid() { tr -dc 0-9 <"$RUN_DIR/$1.pid"; }

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
sinfo_ok() { command -v sinfo >/dev/null 2>&1 && timeout 10 sinfo -h -o %T >/dev/null 2>&1; }
node_state() { timeout 10 sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n1 || true; }
munge_ok() { command -v munge >/dev/null 2>&1 && timeout 5 munge -n 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1; }

# ---- install
install_packages() {
  local need=0 b
  for b in slurmctld slurmd sbatch srun sinfo munged munge; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || need=1
  done
  [ "$need" = 0 ] && return 0
  log "installing $PACKAGES"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  if ! apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=120 $PACKAGES >/tmp/slurm-local-apt.log 2>&1; then
    log "apt-get install failed; apt-get update and retry"
    apt-get update -qq >>/tmp/slurm-local-apt.log 2>&1 || true
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=120 $PACKAGES >>/tmp/slurm-local-apt.log 2>&1 \
      || { tail -n 20 /tmp/slurm-local-apt.log >&2; die "apt-get install $PACKAGES failed"; }
  fi
}

# ---- munge
start_munge() {
  if munge_ok; then
    pid_alive munged || log "using the munged already running"
    return 0
  fi
  local key=/etc/munge/munge.key
  mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
  if [ ! -s "$key" ]; then
    log "creating $key"
    if command -v mungekey >/dev/null 2>&1; then
      mungekey --create --keyfile="$key" --force
    else
      dd if=/dev/urandom bs=1 count=1024 of="$key" 2>/dev/null
    fi
  fi
  local user=root
  if id munge >/dev/null 2>&1; then user=munge; fi
  chown -R "$user:$user" /etc/munge /var/lib/munge /var/log/munge /run/munge
  chmod 0700 /etc/munge /var/lib/munge /var/log/munge
  chmod 0755 /run/munge
  chmod 0400 "$key"
  rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock /run/munge/munged.pid
  local started=0
  if [ "$user" = munge ]; then
    runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid 2>>"$RUN_DIR/munged.err" 9>&- \
      && started=1 || log "munged as user munge failed; trying as root"
  fi
  if [ "$started" = 0 ]; then
    chown -R root:root /etc/munge /var/lib/munge /var/log/munge /run/munge
    /usr/sbin/munged --force --pid-file=/run/munge/munged.pid 2>>"$RUN_DIR/munged.err" 9>&- \
      || die "munged failed to start: $(tail -n 3 "$RUN_DIR/munged.err")"
  fi
  for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && munge_ok && break; sleep 0.1; done
  # munged (running as user munge) cannot write into RUN_DIR: copy its pid file there.
  [ -s /run/munge/munged.pid ] && cp -f /run/munge/munged.pid "$RUN_DIR/munged.pid"
  munge_ok || die "munged does not answer (munge -n | unmunge)"
}

# ---- slurm.conf
node_line() {
  # What slurmd itself detects (so the node is never drained for a mismatch), memory a bit under free.
  local detected cpus mem_total mem_avail mem
  detected="$(slurmd -C 2>/dev/null | head -n1 || true)"
  cpus="$(nproc)"
  mem_total=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 ))
  mem_avail=$(( $(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) / 1024 ))
  # 90% of what is free, rounded down to 512 MiB so the file stays the same from one start to the next.
  mem=$(( (mem_avail < mem_total ? mem_avail : mem_total) * 9 / 10 / 512 * 512 ))
  [ "$mem" -ge 512 ] || mem=256
  local topo="CPUs=$cpus"
  if [[ "$detected" == NodeName=* ]]; then
    topo="$(tr ' ' '\n' <<<"$detected" | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')"
  fi
  echo "NodeName=$NODE NodeAddr=127.0.0.1 ${topo% } RealMemory=$mem State=UNKNOWN"
}

write_conf() {
  local tmp
  tmp="$(mktemp)"
  cat >"$tmp" <<EOF
$MARKER: single-node test cluster on this host.
ClusterName=manybench
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$CTLD_SPOOL
SlurmdSpoolDir=$SLURMD_SPOOL
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: plain process tracking, no task binding, no accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Trust the configured node description over what slurmd measures (memory shrinks while tests run).
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=120
SlurmdTimeout=300
InactiveLimit=0
MinJobAge=4
KillWait=5
Waittime=0
$(node_line)
# OverSubscribe=FORCE:4: up to 4 jobs may share a core, so a whole-node job does not block the rest.
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  mkdir -p "$CONF_DIR"
  if [ -f "$CONF" ] && ! grep -qF "$MARKER" "$CONF"; then
    local bak
    bak="$CONF.before-manybench.$(date +%s)"
    log "keeping the existing $CONF as $bak"
    cp -p "$CONF" "$bak"
  fi
  if [ -f "$CONF" ] && cmp -s "$tmp" "$CONF"; then rm -f "$tmp"; return 0; fi
  install -m 0644 "$tmp" "$CONF"
  rm -f "$tmp"
  # No cgroup.conf: 22.05 has no CgroupPlugin=disabled (slurmd refuses to start with it); without the
  # file slurmd autodetects the cgroup version, which it only uses for its own bookkeeping here.
}

# ---- daemons
wait_idle() {
  local deadline=$(( SECONDS + TIMEOUT )) st=""
  while [ "$SECONDS" -lt "$deadline" ]; do
    st="$(node_state)"
    case "$st" in
      idle|mixed|allocated|completing) return 0 ;;
      down*|drain*|fail*)
        # ReturnToService=2 brings it back when slurmd registers; nudge a node left down by an old state.
        scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
  done
  die "node $NODE not idle after ${TIMEOUT}s (state: ${st:-no answer}); $(timeout 5 sinfo -R 2>&1 | tail -n +2)"
}

smoke_test() {
  local out tmpd
  out="$(timeout 60 srun -N1 -n1 hostname 2>&1)" || die "srun -N1 -n1 hostname failed: $out"
  [ "$(hostname -s)" = "${out%%.*}" ] || die "srun hostname printed '$out', expected $NODE"
  tmpd="$(mktemp -d)"
  timeout 90 sbatch --wait --quiet --chdir="$tmpd" --output="$tmpd/out" --wrap hostname >/dev/null 2>"$tmpd/err" \
    || die "sbatch --wait --wrap hostname failed: $(cat "$tmpd/err")"
  grep -q "^${NODE}" "$tmpd/out" || die "sbatch job output: '$(cat "$tmpd/out" 2>/dev/null)'"
  rm -rf "$tmpd"
}

do_start() {
  mkdir -p "$RUN_DIR"
  exec 9>"$RUN_DIR/lock"
  flock -w 300 9 || die "another slurm-local.sh holds $RUN_DIR/lock"

  if pid_alive slurmctld && pid_alive slurmd && sinfo_ok; then
    wait_idle
    log "already running (ours): $(node_state) on $NODE"
    return 0
  fi
  if ! pid_alive slurmctld; then
    # A controller we did not start: leave it alone. (sinfo takes ~9 s to give up when no controller
    # listens, so it is only asked when a slurmctld runs here or a slurm.conf not ours points elsewhere.)
    if pgrep -x slurmctld >/dev/null 2>&1; then
      if sinfo_ok; then
        log "a Slurm controller not started by this script already answers; leaving it alone"
        timeout 10 sinfo >&2 || true
        return 0
      fi
      die "a slurmctld not started by this script is running (pid $(pgrep -x slurmctld | tr '\n' ' ')) but sinfo fails; not touching it"
    fi
    if { [ -n "${SLURM_CONF:-}" ] || { [ -f "$CONF" ] && ! grep -qF "$MARKER" "$CONF"; }; } && sinfo_ok; then
      log "a Slurm controller not started by this script already answers (${SLURM_CONF:-$CONF}); leaving it alone"
      timeout 10 sinfo >&2 || true
      return 0
    fi
  fi

  local t0=$SECONDS
  install_packages
  start_munge
  mkdir -p "$LOG_DIR" "$CTLD_SPOOL" "$SLURMD_SPOOL"
  # Our controller still running (only slurmd to restart): keep the config it was started with.
  pid_alive slurmctld || write_conf
  export SLURM_CONF="$CONF"

  local started=0
  if ! pid_alive slurmctld; then
    rm -f "$RUN_DIR/slurmctld.pid"
    # 9>&-: the daemons must not inherit the lock.
    slurmctld -f "$CONF" 9>&- || die "slurmctld failed to start"
    started=1
  fi
  for _ in $(seq 100); do port_open 6817 && break; sleep 0.2; done
  port_open 6817 || die "slurmctld does not listen on port 6817"
  if ! pid_alive slurmd; then
    if pgrep -x slurmd >/dev/null 2>&1; then
      die "a slurmd not started by this script is running (pid $(pgrep -x slurmd | tr '\n' ' ')); not touching it"
    fi
    rm -f "$RUN_DIR/slurmd.pid"
    slurmd -f "$CONF" 9>&- || die "slurmd failed to start"
    started=1
  fi
  for _ in $(seq 50); do pid_alive slurmctld && pid_alive slurmd && break; sleep 0.1; done
  pid_alive slurmctld || die "slurmctld exited"
  pid_alive slurmd || die "slurmd exited"
  wait_idle
  if [ "$started" = 1 ] && [ "${SLURM_LOCAL_NO_CHECK:-0}" != 1 ]; then
    smoke_test
  fi
  log "up in $(( SECONDS - t0 ))s: node $NODE ($(node_state)), partition debug"
}

stop_one() {  # NAME
  pid_alive "$1" || { rm -f "$RUN_DIR/$1.pid"; return 0; }
  local pid
  pid="$(our_pid "$1")"
  log "stopping $1 (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  if [ -d "/proc/$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$RUN_DIR/$1.pid"
}

do_stop() {
  [ -d "$RUN_DIR" ] || { log "nothing to stop"; return 0; }
  exec 9>"$RUN_DIR/lock"
  flock -w 300 9 || die "another slurm-local.sh holds $RUN_DIR/lock"
  if pid_alive slurmctld; then
    # Our controller: cancel its jobs so no job steps linger after slurmd goes.
    local jobs
    jobs="$(timeout 5 squeue -h -o %i 2>/dev/null | tr '\n' ' ' || true)"
    # shellcheck disable=SC2086
    [ -z "${jobs// /}" ] || timeout 10 scancel --quiet $jobs 2>/dev/null || true
    for _ in $(seq 20); do [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  stop_one slurmd
  stop_one slurmctld
  stop_one munged
}

do_status() {
  if ! command -v sinfo >/dev/null 2>&1; then echo "Slurm is not installed"; return 1; fi
  local rc=0
  timeout 10 sinfo || rc=$?
  for d in slurmctld slurmd munged; do
    if pid_alive "$d"; then echo "$d: running (pid $(our_pid "$d"), started by slurm-local.sh)"; fi
  done
  return "$rc"
}

case "${1:-}" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
