#!/usr/bin/env bash
# A real single-machine Grid Engine for the tests (Debian's Son of Grid Engine 8.1): sge_qmaster +
# sge_execd on this host, one exec host, queue "all.q", a consumable "gpu" (4 per host).
#
#   bash scripts/sge-local.sh start    # install (apt) if needed, configure, start, smoke-test; idempotent
#   bash scripts/sge-local.sh stop     # stop only the daemons this script started (its pid files)
#   bash scripts/sge-local.sh status   # qstat -f (exit 1 if the qmaster does not answer)
#
# Needs root (apt-get, the cell's files, daemons). No systemd: the daemons daemonize themselves.
# As scripts/slurm-local.sh does for Slurm, a qmaster this script did not start is left alone.
# Environment knobs:
#   SGE_LOCAL_TIMEOUT   seconds to wait for the exec host to report (default 60)
#   SGE_LOCAL_SLOTS     slots of all.q on this host (default 8: test jobs share the cpus)
#   SGE_LOCAL_NO_CHECK=1  skip the qsub smoke test after starting
set -euo pipefail

export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
COMMON="$SGE_ROOT/$SGE_CELL/common"
RUN_DIR=/run/manybench-sge            # our pid files + lock
QMASTER_PID=/var/spool/gridengine/qmaster/qmaster.pid
NODE="$(hostname -s)"
TIMEOUT="${SGE_LOCAL_TIMEOUT:-60}"
SLOTS="${SGE_LOCAL_SLOTS:-8}"
PACKAGES="gridengine-master gridengine-exec gridengine-client"

log() { printf 'sge-local: %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  for f in /var/spool/gridengine/qmaster/messages /var/spool/gridengine/execd/*/messages; do
    [ -f "$f" ] && { echo "---- tail $f" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}

if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { log "needs root (or passwordless sudo)"; exit 1; }
  exec sudo -n bash "$0" "$@"
fi

pid_alive() {  # NAME -> 0 if RUN_DIR/NAME.pid names a live process called NAME
  local f="$RUN_DIR/$1.pid" pid
  [ -s "$f" ] || return 1
  pid="$(tr -dc 0-9 <"$f")"
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$1" ]
}
qmaster_ok() { command -v qconf >/dev/null 2>&1 && timeout 10 qconf -sh >/dev/null 2>&1; }

install_packages() {
  command -v qconf >/dev/null 2>&1 && [ -x /usr/lib/gridengine/sge_qmaster ] \
    && [ -x /usr/lib/gridengine/sge_execd ] && return 0
  log "installing $PACKAGES"
  # the postinst creates the cell (default) and its spool database with these answers
  debconf-set-selections <<EOF
gridengine-common shared/gridengineconfig boolean true
gridengine-common shared/gridenginecell string default
gridengine-common shared/gridenginemaster string $NODE
gridengine-client shared/gridengineconfig boolean true
gridengine-master shared/gridengineconfig boolean true
EOF
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=120 $PACKAGES \
      >/tmp/sge-local-apt.log 2>&1 || {
    apt-get update -qq >>/tmp/sge-local-apt.log 2>&1 || true
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=120 $PACKAGES \
        >>/tmp/sge-local-apt.log 2>&1 || { tail -n 20 /tmp/sge-local-apt.log >&2; die "apt-get install failed"; }
  }
  [ -d /var/spool/gridengine/spooldb ] || die "the package did not create the cell's spool database"
}

# Grid Engine insists that a client's address resolves back to the name it calls itself:
# here 127.0.0.1 resolves to "localhost" while the host is "$NODE". host_aliases makes them one.
write_names() {
  local addr back
  echo "$NODE" >"$COMMON/act_qmaster"
  addr="$(getent hosts "$NODE" | awk '{print $1; exit}')"
  back="$(getent hosts "$addr" | awk '{print $2; exit}')"
  if [ -n "$back" ] && [ "$back" != "$NODE" ]; then
    echo "$NODE $back" >"$COMMON/host_aliases"
  fi
}

configure() {
  local t
  t="$(mktemp -d)"
  # root submits the test jobs: allow uid/gid 0; bash job scripts run as written (#!)
  qconf -sconf global | sed -e 's/^min_uid .*/min_uid 0/' -e 's/^min_gid .*/min_gid 0/' \
      -e 's/^shell_start_mode .*/shell_start_mode unix_behavior/' >"$t/global"
  qconf -Mconf "$t/global" >/dev/null
  qconf -sh | grep -qx "$NODE" || qconf -ah "$NODE" >/dev/null
  qconf -ss 2>/dev/null | grep -qx "$NODE" || qconf -as "$NODE" >/dev/null
  # a per-host consumable "gpu": jobs request it with -l gpu=N (Grid Engine accounts for it)
  if ! qconf -sc | grep -q '^gpu '; then
    { qconf -sc | grep -v '^#'; echo "gpu gpu INT <= YES YES 0 0"; } >"$t/complex"
    qconf -Mc "$t/complex" >/dev/null
  fi
  printf '%s\n' "hostname $NODE" "load_scaling NONE" "complex_values gpu=4" "user_lists NONE" \
      "xuser_lists NONE" "projects NONE" "xprojects NONE" "usage_scaling NONE" \
      "report_variables NONE" >"$t/exec"
  if qconf -sel 2>/dev/null | grep -qx "$NODE"; then qconf -Me "$t/exec" >/dev/null
  else qconf -Ae "$t/exec" >/dev/null; fi
  printf 'group_name @allhosts\nhostlist %s\n' "$NODE" >"$t/hg"
  if qconf -shgrpl 2>/dev/null | grep -qx @allhosts; then qconf -Mhgrp "$t/hg" >/dev/null
  else qconf -Ahgrp "$t/hg" >/dev/null; fi
  # no load threshold: other work on a shared test machine must not put the queue in alarm
  cat >"$t/q" <<EOF
qname all.q
hostlist @allhosts
seq_no 0
load_thresholds NONE
suspend_thresholds NONE
nsuspend 1
suspend_interval 00:05:00
priority 0
min_cpu_interval 00:05:00
processors UNDEFINED
qtype BATCH INTERACTIVE
ckpt_list NONE
pe_list NONE
rerun FALSE
slots $SLOTS
tmpdir /tmp
shell /bin/bash
prolog NONE
epilog NONE
shell_start_mode unix_behavior
starter_method NONE
suspend_method NONE
resume_method NONE
terminate_method NONE
notify 00:00:60
owner_list NONE
user_lists NONE
xuser_lists NONE
subordinate_list NONE
complex_values NONE
projects NONE
xprojects NONE
calendar NONE
initial_state default
s_rt INFINITY
h_rt INFINITY
s_cpu INFINITY
h_cpu INFINITY
s_fsize INFINITY
h_fsize INFINITY
s_data INFINITY
h_data INFINITY
s_stack INFINITY
h_stack INFINITY
s_core INFINITY
h_core INFINITY
s_rss INFINITY
h_rss INFINITY
s_vmem INFINITY
h_vmem INFINITY
EOF
  if qconf -sql 2>/dev/null | grep -qx all.q; then qconf -Mq "$t/q" >/dev/null
  else qconf -Aq "$t/q" >/dev/null; fi
  # the scheduler runs every second and at once when a job is submitted or ends (the defaults,
  # every 15 s, kept each test job waiting up to 15 s for its turn)
  qconf -ssconf | sed -e 's/^schedule_interval .*/schedule_interval 0:0:1/' \
      -e 's/^flush_submit_sec .*/flush_submit_sec 1/' \
      -e 's/^flush_finish_sec .*/flush_finish_sec 1/' >"$t/sched"
  qconf -Msconf "$t/sched" >/dev/null
  rm -rf "$t"
}

wait_queue() {
  local deadline=$(( SECONDS + TIMEOUT )) st=""
  while [ "$SECONDS" -lt "$deadline" ]; do
    # qstat -f: "all.q@node  BIP  0/0/8  0.50  lx-amd64  [state]"; no state column = usable
    st="$(timeout 10 qstat -f -q "all.q@$NODE" 2>/dev/null | awk -v q="all.q@$NODE" '$1==q {print $6}')"
    if timeout 10 qstat -f -q "all.q@$NODE" 2>/dev/null | grep -q "^all.q@$NODE" && [ -z "$st" ]; then
      return 0
    fi
    [[ "$st" == *E* ]] && qmod -c "all.q@$NODE" >/dev/null 2>&1 || true
    sleep 1
  done
  die "queue all.q@$NODE not usable after ${TIMEOUT}s (state: ${st:-not reported})"
}

smoke_test() {
  local d
  d="$(mktemp -d)"
  timeout 120 qsub -sync y -b y -o "$d/out" -e "$d/err" -cwd -wd "$d" hostname >/dev/null 2>"$d/qsub.err" \
    || die "qsub -sync y hostname failed: $(cat "$d/qsub.err" "$d/err" 2>/dev/null)"
  grep -q "^$NODE" "$d/out" || die "the job printed '$(cat "$d/out" 2>/dev/null)', expected $NODE"
  rm -rf "$d"
}

do_start() {
  mkdir -p "$RUN_DIR"
  exec 9>"$RUN_DIR/lock"
  flock -w 300 9 || die "another sge-local.sh holds $RUN_DIR/lock"
  install_packages
  if pid_alive sge_qmaster && pid_alive sge_execd && qmaster_ok; then
    wait_queue; log "already running (ours) on $NODE"; return 0
  fi
  if ! pid_alive sge_qmaster && pgrep -x sge_qmaster >/dev/null 2>&1; then
    qmaster_ok && { log "a qmaster not started by this script answers; leaving it alone"; return 0; }
    die "an sge_qmaster not started by this script runs (pid $(pgrep -x sge_qmaster | tr '\n' ' ')) but does not answer; not touching it"
  fi
  local t0=$SECONDS started=0
  mkdir -p /var/run/gridengine && chown sgeadmin:sgeadmin /var/run/gridengine
  if ! pid_alive sge_qmaster; then
    write_names
    rm -f "$QMASTER_PID"
    /usr/lib/gridengine/sge_qmaster 9>&- || die "sge_qmaster failed to start"
    for _ in $(seq 100); do [ -s "$QMASTER_PID" ] && qmaster_ok && break; sleep 0.2; done
    cp -f "$QMASTER_PID" "$RUN_DIR/sge_qmaster.pid" 2>/dev/null || true   # (its own pid file)
    pid_alive sge_qmaster || die "sge_qmaster exited"
    started=1
  fi
  qmaster_ok || die "the qmaster does not answer qconf"
  configure
  if ! pid_alive sge_execd; then
    pgrep -x sge_execd >/dev/null 2>&1 && die "an sge_execd not started by this script runs; not touching it"
    mkdir -p /var/spool/gridengine/execd && chown sgeadmin:sgeadmin /var/spool/gridengine/execd
    rm -f /var/spool/gridengine/execd/*/execd.pid
    /usr/lib/gridengine/sge_execd 9>&- || die "sge_execd failed to start"
    # its spool directory is named as the execd resolves itself (here maybe "localhost")
    local pidf=""
    for _ in $(seq 100); do
      pidf="$(ls /var/spool/gridengine/execd/*/execd.pid 2>/dev/null | head -n1 || true)"
      [ -n "$pidf" ] && [ -s "$pidf" ] && break; sleep 0.2
    done
    [ -z "$pidf" ] || cp -f "$pidf" "$RUN_DIR/sge_execd.pid"
    pid_alive sge_execd || die "sge_execd exited"
    started=1
  fi
  wait_queue
  if [ "$started" = 1 ] && [ "${SGE_LOCAL_NO_CHECK:-0}" != 1 ]; then smoke_test; fi
  log "up in $(( SECONDS - t0 ))s: all.q@$NODE, $SLOTS slots, gpu=4"
}

stop_one() {  # NAME
  pid_alive "$1" || { rm -f "$RUN_DIR/$1.pid"; return 0; }
  local pid
  pid="$(tr -dc 0-9 <"$RUN_DIR/$1.pid")"
  log "stopping $1 (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$RUN_DIR/$1.pid"
}

do_stop() {
  [ -d "$RUN_DIR" ] || { log "nothing to stop"; return 0; }
  exec 9>"$RUN_DIR/lock"
  flock -w 300 9 || die "another sge-local.sh holds $RUN_DIR/lock"
  if pid_alive sge_qmaster; then timeout 20 qdel -u '*' >/dev/null 2>&1 || true; fi
  stop_one sge_execd
  stop_one sge_qmaster
}

do_status() {
  command -v qstat >/dev/null 2>&1 || { echo "Grid Engine is not installed"; return 1; }
  local rc=0
  timeout 10 qstat -f || rc=$?
  for d in sge_qmaster sge_execd; do
    pid_alive "$d" && echo "$d: running (pid $(tr -dc 0-9 <"$RUN_DIR/$d.pid"), started by sge-local.sh)"
  done
  return "$rc"
}

case "${1:-}" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
