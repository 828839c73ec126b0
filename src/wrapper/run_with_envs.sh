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
# The file format and who writes it are described in docs/env-file.md.

env_dir="${SANDBOX_ENV_DIR:-/var/sandbox}"
ready_file="$env_dir/.env_ready"
env_file="$env_dir/env.sh"
# Short enough that a claimed sandbox starts promptly, long enough to cost nothing while idle.
poll_seconds=0.1

usage() {
  echo "usage: run_with_envs.sh [--probe] -- COMMAND [ARG...]" >&2
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
  while [ ! -e "$ready_file" ]; do
    sleep "$poll_seconds"
  done
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
