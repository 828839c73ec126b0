#!/bin/bash
# run_with_envs.sh — hold a pre-warmed sandbox container's process until its per-claim environment exists.
#
#   run_with_envs.sh [--probe] -- COMMAND [ARG...]
#
# The webhook (env-vars injection policy Auto) rewrites container commands to
#   /bin/bash /var/sandbox/run_with_envs.sh -- <original command...>
# and exec probes to
#   /bin/bash /var/sandbox/run_with_envs.sh --probe -- <original probe command...>
#
# Main mode waits for "$SANDBOX_ENV_DIR/.env_ready", sources "$SANDBOX_ENV_DIR/env.sh" with every
# assignment exported, then execs COMMAND so it keeps this PID: signals reach it directly and its
# exit status is the container's.
# Probe mode succeeds at once while the sandbox is still unclaimed (the real process has not started,
# so there is nothing to probe yet); once ready it runs the probe with the same environment.
#
# The file format, the wake FIFO and who writes them are described in docs/env-file.md.

env_dir="${SANDBOX_ENV_DIR:-/var/sandbox}"
ready_file="$env_dir/.env_ready"
env_file="$env_dir/env.sh"
wake_file="$env_dir/.env_wake"
# While a writer wakes the FIFO, the wait is a blocked read(); this bound only catches a writer that does not
# (or a wake lost to another reader), at one stat a second.
wake_poll_seconds=1
# Without the FIFO, a read on a descriptor that never becomes readable is the pause: no process, but a
# shorter bound, since nothing else ends the wait.
fallback_poll_seconds=0.1

usage() {
  echo "usage: run_with_envs.sh [--probe] -- COMMAND [ARG...]" >&2
}

# The FIFO is made once, by the first wrapper of the pod (or by whoever installs the script); bash cannot
# make one itself, so this uses its loadable mkfifo builtin where the image has it, else mkfifo from PATH:
# at most one process, before the wait. A FIFO any user of the pod can write, since the writer (envd) may run
# as another user than the app; a stray write only makes the wrapper look at .env_ready again.
make_wake_fifo() {
  [ -p "$wake_file" ] && return 0
  [ -e "$wake_file" ] && return 1
  if enable -f mkfifo mkfifo 2>/dev/null || type -P mkfifo >/dev/null; then
    mkfifo -m 0666 "$wake_file" 2>/dev/null
  fi
  [ -p "$wake_file" ]
}

# Sets wake_fd to the FIFO opened read-write (so the open never blocks and the read never sees an end of
# file), else to /dev/ptmx (a pty master nobody writes to: never readable); the poll bound to go with it.
open_wait_fd() {
  wake_fd=''
  if make_wake_fifo && { exec {wake_fd}<>"$wake_file"; } 2>/dev/null; then
    poll_seconds=$wake_poll_seconds
  elif { exec {wake_fd}<>/dev/ptmx; } 2>/dev/null; then
    poll_seconds=$fallback_poll_seconds
  else
    wake_fd=''
    poll_seconds=$fallback_poll_seconds
  fi
}

# Returns once .env_ready exists. read is a builtin: waiting forks nothing, and a trapped signal interrupts it
# at once. The check follows the open, so a wake written before the FIFO was opened is never waited for.
wait_for_ready() {
  local woken='' byte status
  open_wait_fd
  while [ ! -e "$ready_file" ]; do
    if [ -z "$wake_fd" ]; then
      sleep "$poll_seconds"
      continue
    fi
    read -r -N 1 -t "$poll_seconds" -u "$wake_fd" byte
    status=$?
    if [ "$status" -eq 0 ]; then
      woken=1
    elif [ "$status" -le 128 ]; then
      # An end of file or a read error would return at once, every time: pause another way instead.
      exec {wake_fd}>&-
      wake_fd=''
    fi
  done
  if [ -n "$wake_fd" ]; then
    # One writer's byte wakes one reader: pass it on to the next wrapper of the pod that waits on the FIFO.
    if [ -n "$woken" ]; then
      printf '\n' >&"$wake_fd"
    fi
    exec {wake_fd}>&-
  fi
}

mode=main
while [ "$#" -gt 0 ]; do
  case "$1" in
    --probe)
      mode=probe
      shift
      ;;
    --)
      shift
      break
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*)
      echo "run_with_envs.sh: unknown option '$1'" >&2
      usage
      exit 2
      ;;
    *)
      # The command must come after "--" so that its own options are never taken for ours.
      echo "run_with_envs.sh: unexpected argument '$1' before '--'" >&2
      usage
      exit 2
      ;;
  esac
done

if [ "$#" -eq 0 ]; then
  # Nothing to run is not worth a crash loop: say so and let the container finish.
  echo "run_with_envs.sh: no command given after '--'; nothing to run" >&2
  exit 0
fi

if [ "$mode" = probe ]; then
  if [ ! -e "$ready_file" ]; then
    exit 0
  fi
else
  # As PID 1 of a container, bash would ignore SIGTERM without a handler, and the pod would hang for
  # its whole termination grace period while unclaimed. exec resets these traps for COMMAND.
  trap 'exit 143' TERM
  trap 'exit 130' INT
  if [ ! -e "$ready_file" ]; then
    wait_for_ready
  elif [ -p "$wake_file" ]; then
    # A writer whose wake found no wrapper holding the FIFO (this container was restarting) is still blocked
    # opening it; an open of ours ends that, and its byte then goes nowhere.
    { exec {wake_fd}<>"$wake_file" && exec {wake_fd}>&-; } 2>/dev/null
  fi
  trap - TERM INT
fi

if [ -f "$env_file" ]; then
  # set -a exports every assignment in env.sh, whether or not the writer used "export".
  set -a
  # shellcheck disable=SC1090
  if ! . "$env_file"; then
    echo "run_with_envs.sh: $env_file did not load cleanly; running the command with what was set" >&2
  fi
  set +a
else
  echo "run_with_envs.sh: $ready_file exists but $env_file does not; running the command without extra variables" >&2
fi

# Nothing below reads a variable env.sh could have replaced, except PATH, which is meant to decide
# where COMMAND is found. exec keeps this PID; if COMMAND cannot be run, bash exits 126/127.
exec "$@"
