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
# Main mode waits for "$SANDBOX_ENV_DIR/.env_ready", then starts COMMAND with "$SANDBOX_ENV_DIR/env.sh"
# sourced (every assignment exported) and stays its parent: it passes signals on, returns COMMAND's exit
# status as the container's, and ends COMMAND when the claim ends (.env_recycled appears), so that the
# container restarts into a new wait and nothing of the last claim runs on into the next one.
# Probe mode succeeds at once while the sandbox is still unclaimed (the real process has not started,
# so there is nothing to probe yet); once ready it runs the probe with the same environment.
#
# Run as root, the wrapper first takes the folder, so that no other user of the sandbox can change what it runs
# or reads (take_folder, below).
#
# The file format, the wake FIFO, who writes them and who can change them are described in docs/env-file.md.

env_dir="${SANDBOX_ENV_DIR:-/var/sandbox}"
ready_file="$env_dir/.env_ready"
env_file="$env_dir/env.sh"
wake_file="$env_dir/.env_wake"
recycled_file="$env_dir/.env_recycled"
script_file="$env_dir/run_with_envs.sh"
# While a writer wakes the FIFO, the wait is a blocked read(); this bound only catches a writer that does not
# (or a wake lost to another reader), at one stat a second.
wake_poll_seconds=1
# Without the FIFO, a read on a descriptor that never becomes readable is the pause: no process, but a
# shorter bound, since nothing else ends the wait.
fallback_poll_seconds=0.1
# While COMMAND runs, the watch for the claim's end: the wake makes it prompt, this bound catches a lost wake.
recycle_poll_seconds=5
# How long COMMAND has to end after SIGTERM once its claim ended, before it is killed.
recycle_stop_seconds=3
# The container's exit status when the wrapper ended COMMAND because its claim ended.
recycled_status=75

usage() {
  echo "usage: run_with_envs.sh [--probe] -- COMMAND [ARG...]" >&2
}

# Run as root (the container's user, as in E2B's images), the wrapper is PID 1 of the main container before any
# tenant code exists there: the kubelet's 0777 folder becomes root's, 1755, the script in it root's and 0555,
# and what a wrapper trusts in it can then be changed by root only (envd, which writes the claim's files).
# The sticky bit is the mark that the folder was taken: the kubelet never sets it, only the folder's owner can,
# and bash reads it without a process ([ -k ]), so every later run (an exec probe each period) costs two stats
# here, not a chmod. The folder is locked first, so nothing checked after it can change under the check.
# Whatever is at .env_wake and is not a FIFO root made (a concurrent wrapper of the pod may have made one) was
# put there by another user before the take: removed, so that the FIFO the wait uses is root's own.
take_folder() {
  if ! type -P chown >/dev/null || ! type -P chmod >/dev/null; then
    echo "run_with_envs.sh: no chown or chmod on PATH: $env_dir stays writable by every user of the container" >&2
    return 1
  fi
  if ! chown 0:0 "$env_dir" || ! chmod 1755 "$env_dir"; then
    echo "run_with_envs.sh: could not take $env_dir: it stays writable by every user of the container" >&2
    return 1
  fi
  if [ -f "$script_file" ] && [ ! -L "$script_file" ]; then
    if ! chown 0:0 "$script_file" || ! chmod 0555 "$script_file"; then
      echo "run_with_envs.sh: could not make $script_file root's and read-only" >&2
    fi
  fi
  if ! wake_fifo_trusted && { [ -e "$wake_file" ] || [ -L "$wake_file" ]; }; then
    remove_wake_file
  fi
}

# rm is the one way bash has to unlink; without it (or if it fails) the wait goes without the FIFO.
remove_wake_file() {
  type -P rm >/dev/null && rm -f -- "$wake_file" 2>/dev/null && [ ! -e "$wake_file" ] && [ ! -L "$wake_file" ]
}

# As root, only a FIFO that root made is trusted: not a symlink (which may lead anywhere, and the wrapper writes
# a byte back into what it opened), not another user's (envd chowns an upload's target to a --file-user).
# Run as another user, the folder was not taken and any FIFO goes, as before.
wake_fifo_trusted() {
  [ -p "$wake_file" ] || return 1
  [ "$EUID" -ne 0 ] || { [ ! -L "$wake_file" ] && [ -O "$wake_file" ]; }
}

# The FIFO is made once, by the first wrapper of the pod; bash cannot make one itself, so this uses its loadable
# mkfifo builtin where the image has it, else mkfifo from PATH: at most one process (two when something else
# must be removed first), before the wait. Made by root, it is root's and 0600: only root (envd) can wake, the
# same user that can write .env_ready. Made by another user, any user of the pod can write it, since the writer
# (envd) may run as another user than the app; a stray write only makes the wrapper look at .env_ready again.
make_wake_fifo() {
  local fifo_mode=0666
  wake_fifo_trusted && return 0
  if [ "$EUID" -eq 0 ]; then
    fifo_mode=0600
    if [ -e "$wake_file" ] || [ -L "$wake_file" ]; then
      remove_wake_file || return 1
    fi
  elif [ -e "$wake_file" ]; then
    return 1
  fi
  if enable -f mkfifo mkfifo 2>/dev/null || type -P mkfifo >/dev/null; then
    mkfifo -m "$fifo_mode" "$wake_file" 2>/dev/null
  fi
  wake_fifo_trusted
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

# A claim is there to run: .env_ready, and no mark of an ended claim beside it. Clearing writes the mark after
# removing .env_ready and a delivery removes it before writing .env_ready, so both are there only when a write
# of an ended claim landed late (a request of an old term): its files are not the next claim's.
claim_ready() {
  [ -e "$ready_file" ] && [ ! -e "$recycled_file" ]
}

# Returns once a claim is ready. read is a builtin: waiting forks nothing, and a trapped signal interrupts it
# at once. The check follows the open, so a wake written before the FIFO was opened is never waited for.
wait_for_ready() {
  local woken='' byte status
  open_wait_fd
  while ! claim_ready; do
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

# Sources env.sh into this shell, every assignment exported. Only ever run in the shell that then becomes
# COMMAND (a probe, or the supervised command's own subshell): nothing env.sh sets reaches the supervisor.
load_env() {
  if [ -f "$env_file" ] && [ "$EUID" -eq 0 ] && [ ! -O "$env_file" ]; then
    # Run as root, a file another user could have written is never sourced: nothing it says would be the claim's.
    echo "run_with_envs.sh: $env_file is not owned by root, so it is not loaded; running the command without extra variables" >&2
  elif [ -f "$env_file" ]; then
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
}

# A trapped signal, to COMMAND once it has started.
forward_signal() {
  if [ -n "$app_pid" ]; then
    kill -"$1" "$app_pid" 2>/dev/null
  else
    held_signals="$held_signals $1"
  fi
}

# Runs COMMAND as this shell's child and waits for it; see the top of this file. COMMAND starts in a subshell
# that loads env.sh and execs it: its stdin is the container's (not /dev/null, as for other background jobs),
# and SIGINT and SIGQUIT are its own to handle (not ignored, as for other background jobs).
supervise() {
  local status signal
  # Every signal a container is sent goes on to COMMAND; a wait the signal interrupted is taken up again. The
  # traps are set before COMMAND starts: a signal in between is held and passed on once it runs, never lost
  # (PID 1 ignores a signal it has no handler for) nor, outside a container, the end of the wrapper alone.
  app_pid=''
  held_signals=''
  for signal in TERM INT HUP QUIT USR1 USR2 WINCH; do
    # shellcheck disable=SC2064
    trap "forward_signal $signal" "$signal"
  done
  ( trap - TERM INT HUP QUIT USR1 USR2 WINCH; load_env; exec "$@" ) <&0 &
  app_pid=$!
  for signal in $held_signals; do
    kill -"$signal" "$app_pid" 2>/dev/null
  done
  watch_for_recycle &
  watch_pid=$!
  while :; do
    wait "$app_pid" 2>/dev/null
    status=$?
    # Above 128, either COMMAND died of a signal or a trapped one interrupted the wait: the job is still
    # known to a second wait in the one case (which then returns its status), not in the other.
    if [ "$status" -le 128 ]; then
      break
    fi
    if kill -0 "$app_pid" 2>/dev/null; then
      continue
    fi
    wait "$app_pid" 2>/dev/null
    local again=$?
    if [ "$again" -ne 127 ]; then
      status=$again
    fi
    break
  done
  # SIGKILL: a watch that has not yet reset the traps it was forked with would pass SIGTERM on and live on.
  kill -KILL "$watch_pid" 2>/dev/null
  if [ -e "$recycled_file" ]; then
    echo "run_with_envs.sh: the claim ended ($recycled_file): the command was stopped, and the container ends so that it restarts into a new wait" >&2
    exit "$recycled_status"
  fi
  exit "$status"
}

# The watch for the claim's end, in a child of its own while COMMAND runs: a blocked read of the wake FIFO
# (a byte at each wake, none otherwise), the mark looked at after each byte and each poll bound. Once the
# mark is there, COMMAND gets SIGTERM, then SIGKILL if it has not ended within recycle_stop_seconds; the
# supervisor, waiting on COMMAND, then ends the container. Without the FIFO and /dev/ptmx there is no
# pause that costs nothing, and nothing is watched: deliver-env then sees the container never restarted,
# and gives the pod no further claim (docs/deliver-env.md).
watch_for_recycle() {
  local byte status waited=0
  trap - TERM INT HUP QUIT USR1 USR2 WINCH
  open_wait_fd
  if [ -z "$wake_fd" ]; then
    exit 0
  fi
  while [ ! -e "$recycled_file" ]; do
    read -r -N 1 -t "$recycle_poll_seconds" -u "$wake_fd" byte
    status=$?
    if [ "$status" -ne 0 ] && [ "$status" -le 128 ]; then
      # An end of file or a read error would return at once, every time: nothing to pause on.
      exit 0
    fi
  done
  kill -TERM "$app_pid" 2>/dev/null
  while kill -0 "$app_pid" 2>/dev/null; do
    if [ "$waited" -ge $((recycle_stop_seconds * 10)) ]; then
      kill -KILL "$app_pid" 2>/dev/null
      break
    fi
    read -r -N 1 -t 0.1 -u "$wake_fd" byte
    waited=$((waited + 1))
  done
  # Pass a wake on, as a waiting wrapper does: another wrapper of the pod may watch the same FIFO.
  printf '\n' >&"$wake_fd" 2>/dev/null
  exit 0
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

# Taken already (the mark, and root's), or not root: two stats at most, and no process.
if [ "$EUID" -eq 0 ] && ! { [ -k "$env_dir" ] && [ -O "$env_dir" ]; } && [ -d "$env_dir" ]; then
  take_folder
fi

if [ "$mode" = probe ]; then
  if ! claim_ready; then
    exit 0
  fi
else
  # As PID 1 of a container, bash would ignore SIGTERM without a handler, and the pod would hang for
  # its whole termination grace period while unclaimed. Once COMMAND runs, the supervisor's traps pass
  # signals on instead.
  trap 'exit 143' TERM
  trap 'exit 130' INT
  if ! claim_ready; then
    wait_for_ready
  elif wake_fifo_trusted; then
    # A writer whose wake found no wrapper holding the FIFO (this container was restarting) is still blocked
    # opening it; an open of ours ends that, and its byte then goes nowhere.
    { exec {wake_fd}<>"$wake_file" && exec {wake_fd}>&-; } 2>/dev/null
  fi
fi

if [ "$mode" = probe ]; then
  load_env
  exec "$@"
fi
supervise "$@"
