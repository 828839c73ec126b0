#!/bin/bash
# Started by the injection config's postStart in the main container, as upstream's envd-run.sh is: it starts
# $ENVD_DIR/envd in the background with its output on PID 1's stdout (the container's log) and returns, leaving
# envd running inside the main container, where it reads and writes that container's files.
set -e
if [ -z "$ENVD_DIR" ]; then
  echo "Error: ENVD_DIR environment variable is not defined" >&2
  exit 1
fi
nohup "$ENVD_DIR/envd" -isnotfc >/proc/1/fd/1 2>&1 &
