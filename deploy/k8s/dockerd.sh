#!/usr/bin/env bash
# A private dockerd for the image builds and compose.yaml's tests, on the cached data root:
#   dockerd.sh start WORKDIR   starts it (socket WORKDIR/docker/docker.sock) and waits until it answers
#   dockerd.sh stop WORKDIR    stops it and unmounts what it left under WORKDIR
# No default bridge, no iptables rules, no NAT: builds use the host's network (`build --network host`),
# compose's networks are user-defined bridges that compose.yaml makes internal with no gateway address.
# One dockerd at a time owns the data root (a lock file held for dockerd's lifetime).
set -euo pipefail

ACTION=${1:?usage: dockerd.sh start|stop WORKDIR}
W=${2:?usage: dockerd.sh start|stop WORKDIR}
CACHE=${AUTHBENCH_TOOLS_CACHE:-/opt/authbench-cache}
DOCKERD_WAIT_S=60
LOCK_WAIT_S=900   # another build or test holding the data root
say() { echo "authbench dockerd: $*" >&2; }
D=$W/docker
mkdir -p "$D" "$CACHE/docker"

case $ACTION in
start)
  # setsid: dockerd outlives this script; flock holds the data root until dockerd ends
  setsid flock -w "$LOCK_WAIT_S" "$CACHE/docker.lock" \
    dockerd --data-root "$CACHE/docker" --exec-root "$D/exec" --pidfile "$D/dockerd.pid" \
      --host "unix://$D/docker.sock" --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
      >"$D/dockerd.log" 2>&1 </dev/null &
  echo $! > "$D/flock.pid"
  for _ in $(seq 1 $(((DOCKERD_WAIT_S + LOCK_WAIT_S) * 2))); do
    DOCKER_HOST=unix://$D/docker.sock /usr/bin/docker info >/dev/null 2>&1 && exit 0
    kill -0 "$(cat "$D/flock.pid")" 2>/dev/null || break
    sleep 0.5
  done
  say "dockerd did not start; see $D/dockerd.log"; tail -5 "$D/dockerd.log" >&2; exit 1 ;;
stop)
  # dockerd first (flock then ends with it); flock itself only if dockerd never started
  pid=$(cat "$D/dockerd.pid" 2>/dev/null || cat "$D/flock.pid" 2>/dev/null || true)
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$(cat "$D/flock.pid" 2>/dev/null || echo 0)" 2>/dev/null || break; sleep 0.5; done
  { grep -F " $D/" /proc/mounts || true; } | awk '{print $2}' | sort -r | while read -r mount; do
    umount -l "$mount" || true
  done ;;
*) say "unknown action $ACTION: start or stop"; exit 2 ;;
esac
