#!/bin/sh
# The agent-runtime stand-in's native sidecar: as upstream's agent-runtime image does, it copies envd and
# envd-run.sh into $ENVD_DIR, the volume it shares with the main container, and then stays up. Its envd is the
# test double (test/support/envd-double.ts), so node and the double's script go along with it.
set -eu
if [ -z "${ENVD_DIR:-}" ]; then
  echo "entrypoint.sh: ENVD_DIR is not set" >&2
  exit 1
fi
mkdir -p "$ENVD_DIR"
# What the main container's postStart runs appears last and whole: node and the double first, then envd and,
# last, envd-run.sh (postStart's own script, so once it is there everything it runs is), each made executable
# under a temporary name and renamed into place. Copied plainly, envd could be there but not yet executable
# ("Permission denied"). The suite's sidecar has a startupProbe on envd-run.sh, so the kubelet starts the main
# container only after this.
cp /usr/local/bin/node "$ENVD_DIR/node"
chmod +x "$ENVD_DIR/node"
cp -R /workspace/envd-js "$ENVD_DIR/"
for name in envd envd-run.sh; do
  cp "/workspace/$name" "$ENVD_DIR/.$name.tmp"
  chmod +x "$ENVD_DIR/.$name.tmp"
  mv "$ENVD_DIR/.$name.tmp" "$ENVD_DIR/$name"
done
echo "entrypoint.sh: envd stand-in copied to $ENVD_DIR"
# As PID 1 without a handler, sh would ignore SIGTERM and the pod would wait out its grace period.
trap 'exit 0' TERM INT
sleep infinity &
wait
