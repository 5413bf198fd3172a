#!/usr/bin/env bash
# Builds the project's images where no image registry is reachable:
#   1. a Debian 12 base (python3, venv, CA certificates incl. this machine's) made with mmdebstrap, cached;
#   2. `docker build` of the Dockerfile's default target and its `lab` target on that base;
#   3. `docker save` of both into OCI archives, for `ctr images import` into the cluster's containerd.
# A private dockerd (dockerd.sh) is started for the build and stopped after it, unless one already answers
# at WORKDIR/docker/docker.sock; RUN steps use the host's network, as `docker build --network host`.
# Usage: images.sh WORKDIR   (writes WORKDIR/images/*.tar, or with IMAGES_SAVE=0 only builds, also the
# Shibboleth SP and Keycloak images of compose.yaml; needs root and `tools.sh docker`)
set -euo pipefail

W=${1:?usage: images.sh WORKDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${AUTHBENCH_TOOLS_CACHE:-/opt/authbench-cache}
BASE_IMAGE=authbench-base:bookworm
APP_IMAGE=${APP_IMAGE:-authbench:ci}
LAB_IMAGE=${LAB_IMAGE:-authbench-lab:ci}
SP_IMAGE=${SP_IMAGE:-authbench-sp:ci}
KEYCLOAK_IMAGE=${KEYCLOAK_IMAGE:-authbench-keycloak:ci}
SAVE=${IMAGES_SAVE:-1}   # 0: build only (compose uses them in place), 1: also save for containerd
SUITE=bookworm
say() { echo "authbench images: $*" >&2; }

mkdir -p "$W/images" "$CACHE/images"
export DOCKER_HOST=unix://$W/docker/docker.sock DOCKER_BUILDKIT=0
# the Debian CLI that matches its dockerd (another docker CLI may come first on PATH)
docker() { /usr/bin/docker "$@"; }
if ! docker info >/dev/null 2>&1; then   # a caller (the compose tests) may keep one running across builds
  "$(dirname "$0")/dockerd.sh" start "$W"
  trap '"$(dirname "$0")/dockerd.sh" stop "$W"' EXIT
fi

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  base_tar=$CACHE/images/base-$SUITE.tar
  if [ ! -s "$base_tar" ]; then
    # the mirror this machine's apt uses (deb822 or one-line sources)
    mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "'$SUITE'" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    [ -n "$mirror" ] || { say "no Debian mirror found in /etc/apt/sources.list*"; exit 2; }
    say "making the $SUITE base with mmdebstrap (a minute or two, once)"
    mmdebstrap --quiet --variant=minbase --mode=root --format=tar --include=ca-certificates,python3,python3-venv \
      --customize-hook='cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/" 2>/dev/null || true' \
      --customize-hook='chroot "$1" update-ca-certificates >/dev/null' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
      "$SUITE" "$base_tar.partial" "$mirror"
    mv "$base_tar.partial" "$base_tar"   # only a finished tarball is ever used
  fi
  docker import "$base_tar" "$BASE_IMAGE" >/dev/null
fi

say "docker build $APP_IMAGE, $LAB_IMAGE and $SP_IMAGE"
docker build -q --network host --build-arg BASE_IMAGE=$BASE_IMAGE -t "$APP_IMAGE" "$ROOT" >/dev/null
docker build -q --network host --build-arg BASE_IMAGE=$BASE_IMAGE --target lab -t "$LAB_IMAGE" "$ROOT" >/dev/null
docker build -q --network host --build-arg BASE_IMAGE=$BASE_IMAGE --target sp -t "$SP_IMAGE" "$ROOT" >/dev/null
if [ "$SAVE" != 1 ]; then   # compose: Keycloak's image too (Keycloak from Maven Central, built, at its first build)
  say "docker build $KEYCLOAK_IMAGE"
  docker build -q --network host --build-arg BASE_IMAGE=$BASE_IMAGE --target keycloak -t "$KEYCLOAK_IMAGE" "$ROOT" >/dev/null
  say "images built"; exit 0
fi

# the pod sandbox image: the pause binary alone
mkdir -p "$W/pause-root" && cp "$CACHE/bin/pause" "$W/pause-root/"
tar -C "$W/pause-root" -c . | docker import -c 'ENTRYPOINT ["/pause"]' - localhost/pause:ci >/dev/null

docker save "$APP_IMAGE" -o "$W/images/app.tar"
docker save "$LAB_IMAGE" -o "$W/images/lab.tar"
docker save localhost/pause:ci -o "$W/images/pause.tar"
say "images saved in $W/images"
