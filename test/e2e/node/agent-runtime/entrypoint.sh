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
cp /workspace/envd-run.sh /workspace/envd "$ENVD_DIR/"
cp /usr/local/bin/node "$ENVD_DIR/node"
cp -R /workspace/envd-js "$ENVD_DIR/"
chmod +x "$ENVD_DIR/envd-run.sh" "$ENVD_DIR/envd" "$ENVD_DIR/node"
echo "entrypoint.sh: envd stand-in copied to $ENVD_DIR"
# As PID 1 without a handler, sh would ignore SIGTERM and the pod would wait out its grace period.
trap 'exit 0' TERM INT
sleep infinity &
wait
