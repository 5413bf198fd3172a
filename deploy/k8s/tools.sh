#!/usr/bin/env bash
# Builds the tools each test target needs, once, into a cache outside the clone (no binary downloads are possible
# here: everything comes from the Go module proxy, npm, PyPI and Debian). Each target builds only what it uses:
#   tools.sh test     helm, kubeconform and offline Kubernetes JSON schemas (the chart's tests) and panva's
#                     oidc-provider from npm, the OpenID Provider of tests/oidc (for `make test`)
#   tools.sh docker   docker compose, and Docker and mmdebstrap from Debian (for `make test-compose`)
#   tools.sh cluster  helm, Docker and mmdebstrap, etcd, the Kubernetes binaries, CoreDNS, a pause binary and the
#                     Debian packages a local cluster needs (for `make test-k8s`)
# Every step is skipped when its result is already in the cache, so a warm run takes seconds.
# Prints the cache's bin directory on its last line.
set -euo pipefail

MODE=${1:-test}
case "$MODE" in test|docker|cluster) ;; *) echo "usage: tools.sh test|docker|cluster" >&2; exit 2 ;; esac
CACHE=${AUTHBENCH_TOOLS_CACHE:-/opt/authbench-cache}
HELM_VERSION=v3.22.0
KUBECONFORM_VERSION=v0.8.0
K8S_VERSION=1.37.2
ETCD_VERSION=v3.7.0
COREDNS_VERSION=v1.15.0
SCHEMA_VERSION=1.37.0           # the Kubernetes API version the schemas describe
KUBERNETES_VALIDATE_VERSION=1.37.0
COMPOSE_VERSION=v5.6.0
OIDC_PROVIDER_VERSION=9.13.3    # tests/oidc/conftest.py's VERSION
# Where the docker CLI (Debian's and any other) looks for its plugins: compose is linked there.
CLI_PLUGINS=/usr/local/lib/docker/cli-plugins
# The Kubernetes module's staging repositories: a wrapper module pins each to the matching v0.x release.
K8S_STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider cluster-bootstrap
  code-generator component-base component-helpers controller-manager cri-api cri-client cri-streaming csi-translation-lib
  dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy
  kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver streaming)
DEBIAN_PACKAGES=(docker.io containerd runc containernetworking-plugins iptables conntrack mmdebstrap)

BIN=$CACHE/bin
export GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/pkg/mod GOCACHE=$CACHE/go-build GOFLAGS=-mod=mod CGO_ENABLED=0
export PATH=/usr/local/go/bin:$PATH
mkdir -p "$BIN" "$CACHE/src"
say() { echo "authbench tools: $*" >&2; }
SCHEMAS=$CACHE/schemas/v$SCHEMA_VERSION-standalone-strict
OIDC_PROVIDER=$CACHE/npm/oidc-provider-$OIDC_PROVIDER_VERSION
# make test's tools, when all there, need no lock: a long build of another mode's (CI's Kubernetes build, in the
# background) must not hold make test up
if [ "$MODE" = test ] && [ -x "$BIN/helm" ] && [ -x "$BIN/kubeconform" ] && [ -d "$SCHEMAS" ] \
   && [ -f "$OIDC_PROVIDER/node_modules/oidc-provider/lib/index.js" ]; then
  echo "$BIN"; exit 0
fi
# One build at a time per cache: two checkouts' `make test` at once would both make the same venv, module cache and
# binaries (seen: one's pip vanished under the other's `python3 -m venv`).
exec 9>"$CACHE/tools.lock"
flock -w 3600 9 || { say "another tools.sh held $CACHE/tools.lock for an hour; is one stuck?"; exit 1; }
gobuild() { nice -n 10 go build -trimpath "$@"; }

if ! command -v go >/dev/null; then
  say "no Go toolchain on PATH: install Go 1.26 (it builds helm and kubeconform from the Go module proxy)"; exit 2
fi

if [ "$MODE" != docker ] && [ ! -x "$BIN/helm" ]; then
  say "building helm $HELM_VERSION (about 4 minutes, once)"
  GOBIN=$BIN nice -n 10 go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
if [ "$MODE" = test ] && [ ! -x "$BIN/kubeconform" ]; then
  say "building kubeconform $KUBECONFORM_VERSION"
  GOBIN=$BIN nice -n 10 go install -trimpath -ldflags "-s -w" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
fi
if [ "$MODE" = test ] && [ ! -d "$SCHEMAS" ]; then
  say "Kubernetes $SCHEMA_VERSION JSON schemas from kubernetes-validate (made self-contained)"
  [ -x "$CACHE/venv/bin/python" ] || python3 -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  "$CACHE/venv/bin/python" "$(dirname "$0")/standalone_schemas.py" "$CACHE/schemas" "$SCHEMA_VERSION"
fi

if [ "$MODE" = docker ] && [ ! -x "$BIN/docker-compose" ]; then
  # a wrapper module: compose's own go.mod has `exclude` directives, which `go install pkg@version` refuses
  say "building docker compose $COMPOSE_VERSION (about 2 minutes, once)"
  mkdir -p "$CACHE/src/compose"; cd "$CACHE/src/compose"
  printf 'module composebuild\n\ngo 1.26.0\n\nrequire github.com/docker/compose/v5 %s\n' "$COMPOSE_VERSION" > go.mod
  printf '\nexclude (\n\tgithub.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc\n' >> go.mod
  printf '\tgithub.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2\n)\n' >> go.mod
  gobuild -ldflags "-s -w -X github.com/docker/compose/v5/internal.Version=$COMPOSE_VERSION" \
    -o "$BIN/docker-compose" github.com/docker/compose/v5/cmd
  cd - >/dev/null
fi
if [ -x "$BIN/docker-compose" ] && [ "$(readlink "$CLI_PLUGINS/docker-compose" 2>/dev/null)" != "$BIN/docker-compose" ] \
   && [ "$(id -u)" -eq 0 ]; then
  mkdir -p "$CLI_PLUGINS" && ln -sf "$BIN/docker-compose" "$CLI_PLUGINS/docker-compose"
fi

if [ "$MODE" = test ] && [ ! -f "$OIDC_PROVIDER/node_modules/oidc-provider/lib/index.js" ]; then
  command -v npm >/dev/null || { say "no npm on PATH: install Node.js 20 or later with npm (Debian: apt-get install npm)"; exit 2; }
  say "oidc-provider $OIDC_PROVIDER_VERSION from npm (the tests' OpenID Provider)"
  mkdir -p "$OIDC_PROVIDER" && echo '{"private": true}' > "$OIDC_PROVIDER/package.json"
  npm install --prefix "$OIDC_PROVIDER" --ignore-scripts --no-audit --no-fund --loglevel=error \
    "oidc-provider@$OIDC_PROVIDER_VERSION" >/dev/null
fi

if [ "$MODE" = docker ] || [ "$MODE" = cluster ]; then
  missing=()
  for p in "${DEBIAN_PACKAGES[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    [ "$(id -u)" -eq 0 ] || { say "run as root, or: sudo apt-get install ${missing[*]}"; exit 2; }
    apt=(apt-get -o DPkg::Lock::Timeout=600)   # another apt (make setup, beside it in CI) may hold the lock
    "${apt[@]}" update -q >/dev/null
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT   # keep docker/containerd from starting as system services
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
if [ "$MODE" = cluster ]; then
  if [ ! -x "$BIN/pause" ]; then
    say "building the pod sandbox's pause binary"
    mkdir -p "$CACHE/src/pause"; cp "$(dirname "$0")/pause/main.go" "$CACHE/src/pause/"
    printf 'module pause\n\ngo 1.26\n' > "$CACHE/src/pause/go.mod"
    (cd "$CACHE/src/pause" && gobuild -ldflags '-s -w' -o "$BIN/pause" .)
  fi
  if [ ! -x "$BIN/etcd" ]; then
    say "building etcd $ETCD_VERSION"
    mkdir -p "$CACHE/src/etcd"; cd "$CACHE/src/etcd"
    printf 'module etcdbuild\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > go.mod
    gobuild -ldflags '-s -w' -o "$BIN/etcd" go.etcd.io/etcd/server/v3; cd - >/dev/null
  fi
  if [ ! -x "$BIN/kubelet" ] || [ ! -x "$BIN/kubectl" ]; then
    say "building Kubernetes $K8S_VERSION (about 20 minutes cold, once)"
    mkdir -p "$CACHE/src/k8s"; cd "$CACHE/src/k8s"
    { printf 'module k8sbuild\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
      for m in "${K8S_STAGING[@]}"; do printf '\tk8s.io/%s => k8s.io/%s v0.%s\n' "$m" "$m" "${K8S_VERSION#1.}"; done
      printf ')\n'; } > go.mod
    ld="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
    ld="$ld -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
    gobuild -ldflags "$ld" -o "$BIN/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy \
      k8s.io/kubernetes/cmd/kubectl
    cd - >/dev/null
  fi
  if [ ! -x "$BIN/coredns" ]; then
    say "building CoreDNS $COREDNS_VERSION"
    GOBIN=$BIN nice -n 10 go install -trimpath -ldflags '-s -w' "github.com/coredns/coredns@$COREDNS_VERSION"
  fi
fi
echo "$BIN"
