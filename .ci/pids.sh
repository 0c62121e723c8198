# shellcheck shell=bash
# Processes .ci/run starts, by pid: it stops only what it started, by the pid it recorded, and touches a
# pid file another program left only after checking that its pid is still that program (a pid is reused
# once its process is gone). Nothing is ever stopped by name.

# Where .ci/run records the pids of what it starts (tmpfs: a reboot clears it with the processes).
CI_PIDS=${CI_PIDS:-/var/run/tollgate-ci}

# is_program PID PROGRAM [ARGUMENT]: whether PID is alive and runs PROGRAM (its executable's name), with
# ARGUMENT in its command line when given; not a later process that took the pid.
is_program() {
  local pid=$1 program=$2 argument=${3:-} exe
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  exe=${exe% (deleted)}
  [ "${exe##*/}" = "$program" ] || return 1
  [ -z "$argument" ] || tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$argument"
}

# record NAME PID: notes that this script started PID as NAME.
record() {
  mkdir -p "$CI_PIDS"
  echo "$2" >"$CI_PIDS/$1.pid"
}

# stop_recorded NAME PROGRAM [ARGUMENT]: stops the process recorded as NAME when it is still PROGRAM
# (SIGTERM, then SIGKILL after 10 s), and forgets it.
stop_recorded() {
  local file="$CI_PIDS/$1.pid" pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  if is_program "$pid" "$2" "${3:-}"; then
    echo "stopping $1 (pid $pid), which an earlier run of .ci/run started"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do is_program "$pid" "$2" "${3:-}" || break; sleep 0.5; done
    if is_program "$pid" "$2" "${3:-}"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$file"
}

# drop_stale FILE PROGRAM [ARGUMENT]: removes a pid file another program left when its pid is no longer
# PROGRAM (dead, or taken by another process); keeps it, and the process, when it is.
drop_stale() {
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  if ! is_program "$pid" "$2" "${3:-}"; then
    echo "removing $file: pid ${pid:-?} is not $2 any more"
    rm -f "$file"
  fi
}
