#!/usr/bin/env bash
# A single-node Kubernetes cluster on this machine, for the chart's real tests:
# etcd, kube-apiserver, controller-manager, scheduler, containerd + runc, kubelet, kube-proxy and CoreDNS.
# Everything listens on 127.0.0.1, except CoreDNS on the pod bridge's own address. Pods get a private
# bridge with no default route and no NAT: they reach each other and Service IPs, nothing else.
#   cluster.sh up WORKDIR      start it (binaries from `tools.sh cluster`); writes WORKDIR/env
#   cluster.sh down WORKDIR    stop everything it started; no process, port, mount, netns or rule is left
# Needs root (cgroups, network namespaces, iptables). Facts about this sandbox that shaped the flags:
# cgroups v1 (runc, cgroupfs, failCgroupV1=false), no CAP_SYS_RESOURCE (restrict_oom_score_adj).
set -euo pipefail

ACTION=${1:?usage: cluster.sh up|down WORKDIR}
W=$(mkdir -p "${2:?usage: cluster.sh up|down WORKDIR}" && cd "$2" && pwd)
CACHE=${AUTHBENCH_TOOLS_CACHE:-/opt/authbench-cache}
export PATH=$CACHE/bin:$PATH
BRIDGE=abk8s0
POD_CIDR=10.244.0.0/24
BRIDGE_IP=10.244.0.1
SERVICE_CIDR=10.0.0.0/24
API_PORT=6443
ETCD_PORT=2379
CNI_BIN=/usr/lib/cni
READY_WAIT_S=120
STOP_WAIT_S=10
# start order; `down` stops them in reverse
COMPONENTS=(etcd apiserver controller-manager scheduler containerd kubelet kube-proxy coredns)
P=$W/pki
say() { echo "authbench cluster: $*" >&2; }

start() {  # start NAME COMMAND...: in the background, logged, its pid recorded
  local name=$1; shift
  nohup "$@" >"$W/logs/$name.log" 2>&1 &
  echo $! >"$W/pids/$name"
}

wait_for() {  # wait_for WHAT SECONDS COMMAND...
  local what=$1 seconds=$2; shift 2
  for _ in $(seq 1 $((seconds * 2))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  say "$what not ready after ${seconds}s; logs in $W/logs"; return 1
}

pki() {
  mkdir -p "$P"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.crt" -days 2 -subj /CN=authbench-test-ca 2>/dev/null
  sign() {  # sign NAME SUBJECT EXTENSIONS
    openssl req -newkey rsa:2048 -nodes -keyout "$P/$1.key" -out "$P/$1.csr" -subj "$2" 2>/dev/null
    printf '%s\n' "$3" >"$P/$1.ext"
    openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -out "$P/$1.crt" -days 2 \
      -extfile "$P/$1.ext" 2>/dev/null
  }
  sign apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:${SERVICE_CIDR%.*}.1,DNS:localhost,DNS:kubernetes.default.svc"
  sign admin "/CN=admin/O=system:masters" "extendedKeyUsage=clientAuth"
  sign kubelet "/CN=system:node:localhost/O=system:nodes" "extendedKeyUsage=clientAuth"
  openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
  openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
  for user in admin kubelet; do
    cat >"$P/$user.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: $P/ca.crt}}]
users: [{name: $user, user: {client-certificate: $P/$user.crt, client-key: $P/$user.key}}]
contexts: [{name: test, context: {cluster: test, user: $user}}]
current-context: test
KUBECONFIG
  done
}

network() {
  mkdir -p "$W/cni" "$W/cni-ipam"
  cat >"$W/cni/10-authbench.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "authbench-test", "plugins": [{"type": "bridge", "bridge": "$BRIDGE",
 "isGateway": true, "isDefaultGateway": false, "ipMasq": false, "hairpinMode": true,
 "ipam": {"type": "host-local", "dataDir": "$W/cni-ipam", "ranges": [[{"subnet": "$POD_CIDR"}]],
          "routes": [{"dst": "$SERVICE_CIDR"}]}}]}
CNI
  ip link add "$BRIDGE" type bridge
  ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Service IPs are DNAT-ed back onto the bridge: the host must forward between the bridge's ports
  cat /proc/sys/net/ipv4/ip_forward >"$W/ip_forward.before"
  sysctl -qw net.ipv4.ip_forward=1
}

containerd_config() {
  mkdir -p "$W/containerd"
  containerd config default | sed \
    -e "s#^root = .*#root = \"$W/containerd/root\"#" \
    -e "s#^state = .*#state = \"$W/containerd/state\"#" \
    -e "s#address = \"/run/containerd/containerd.sock\"#address = \"$W/containerd/containerd.sock\"#" \
    -e 's#sandbox_image = .*#sandbox_image = "localhost/pause:ci"#' \
    -e "s#bin_dir = \"/opt/cni/bin\"#bin_dir = \"$CNI_BIN\"#" \
    -e "s#conf_dir = \"/etc/cni/net.d\"#conf_dir = \"$W/cni\"#" \
    -e 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' >"$W/containerd/config.toml"
}

kubelet_config() {
  printf 'nameserver %s\nsearch default.svc.cluster.local svc.cluster.local cluster.local\n' "$BRIDGE_IP" >"$W/resolv.conf"
  cat >"$W/kubelet.yaml" <<KUBELET
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $P/ca.crt}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$W/containerd/containerd.sock
resolvConf: $W/resolv.conf
clusterDNS: ["$BRIDGE_IP"]
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
KUBELET
  cat >"$W/Corefile" <<COREFILE
.:53 {
    bind $BRIDGE_IP
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $P/admin.kubeconfig
        pods insecure
    }
}
COREFILE
}

up() {
  for port in $API_PORT $ETCD_PORT $((ETCD_PORT + 1)) $((ETCD_PORT + 2)) 10250 10256 10257 10259; do
    if ss -Hltn "sport = :$port" | grep -q .; then say "port $port is in use: another cluster running?"; exit 2; fi
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then say "bridge $BRIDGE exists: another test cluster is up"; exit 2; fi
  mkdir -p "$W/logs" "$W/pids"
  ls /var/run/netns 2>/dev/null | sort >"$W/netns.before" || true
  for tool in iptables ip6tables; do
    $tool-save 2>/dev/null | grep -q KUBE-FIREWALL || echo "$tool" >>"$W/kubelet-chains.absent"
  done
  pki
  export KUBECONFIG=$P/admin.kubeconfig
  printf 'export KUBECONFIG=%s\nexport CONTAINERD_ADDRESS=%s\nexport PATH=%s:$PATH\n' \
    "$KUBECONFIG" "$W/containerd/containerd.sock" "$CACHE/bin" >"$W/env"
  start etcd etcd --data-dir "$W/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "default=http://127.0.0.1:$((ETCD_PORT + 1))" \
    --listen-metrics-urls "http://127.0.0.1:$((ETCD_PORT + 2))" --unsafe-no-fsync
  start apiserver kube-apiserver --etcd-servers="http://127.0.0.1:$ETCD_PORT" --bind-address=127.0.0.1 \
    --secure-port=$API_PORT --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
    --kubelet-preferred-address-types=Hostname --tls-cert-file="$P/apiserver.crt" \
    --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local --service-account-key-file="$P/sa.pub" \
    --service-account-signing-key-file="$P/sa.key" --service-cluster-ip-range=$SERVICE_CIDR \
    --authorization-mode=Node,RBAC --kubelet-client-certificate="$P/admin.crt" --kubelet-client-key="$P/admin.key"
  wait_for kube-apiserver $READY_WAIT_S kubectl get --raw /readyz
  start controller-manager kube-controller-manager --kubeconfig="$KUBECONFIG" \
    --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" --bind-address=127.0.0.1 \
    --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
    --use-service-account-credentials=true --controllers='*,-nodeipam' --leader-elect=false
  start scheduler kube-scheduler --kubeconfig="$KUBECONFIG" --authentication-kubeconfig="$KUBECONFIG" \
    --authorization-kubeconfig="$KUBECONFIG" --bind-address=127.0.0.1 --leader-elect=false
  network
  containerd_config
  start containerd containerd --config "$W/containerd/config.toml"
  wait_for containerd 60 ctr --address "$W/containerd/containerd.sock" version
  for image in "$W"/images/*.tar; do
    ctr --address "$W/containerd/containerd.sock" -n k8s.io images import "$image" >/dev/null
  done
  kubelet_config
  start kubelet kubelet --config="$W/kubelet.yaml" --kubeconfig="$P/kubelet.kubeconfig" \
    --hostname-override=localhost --root-dir="$W/kubelet" --cert-dir="$W/kubelet-pki"
  start kube-proxy kube-proxy --kubeconfig="$KUBECONFIG" --proxy-mode=iptables --masquerade-all \
    --cluster-cidr=$POD_CIDR --hostname-override=localhost --bind-address=127.0.0.1 \
    --healthz-bind-address=127.0.0.1:10256 --metrics-bind-address=127.0.0.1:10249 --conntrack-max-per-core=0 \
    --nodeport-addresses=127.0.0.1/32
  start coredns coredns -conf "$W/Corefile"
  wait_for "node localhost" $READY_WAIT_S kubectl wait --for=condition=Ready node/localhost --timeout=1s
  say "up: source $W/env"
}

pid_of() { [ -f "$W/pids/$1" ] && cat "$W/pids/$1"; }

# kubelet's own chains (kube-proxy --cleanup leaves them), removed if the cluster made them
KUBELET_CHAINS=(KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT)
kubelet_rules_cleanup() {
  local tool table chain
  for tool in iptables ip6tables; do
    grep -qx "$tool" "$W/kubelet-chains.absent" 2>/dev/null || continue
    for chain in INPUT OUTPUT; do while $tool -D "$chain" -j KUBE-FIREWALL 2>/dev/null; do :; done; done
    for table in mangle filter nat; do
      for chain in "${KUBELET_CHAINS[@]}"; do
        $tool -t $table -F "$chain" 2>/dev/null && $tool -t $table -X "$chain" 2>/dev/null || true
      done
    done
  done
}

down() {
  local sock=$W/containerd/containerd.sock pid i
  if [ -S "$sock" ] && kill -0 "$(pid_of containerd)" 2>/dev/null; then
    # pod containers first, or their shims outlive containerd
    for task in $(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$sock" -n k8s.io tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
    done
    sleep 1
    for task in $(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$sock" -n k8s.io tasks delete -f "$task" >/dev/null 2>&1 || true
    done
  fi
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    pid=$(pid_of "${COMPONENTS[i]}") || continue
    kill "$pid" 2>/dev/null || true
  done
  for _ in $(seq 1 $((STOP_WAIT_S * 2))); do
    local alive=0
    for name in "${COMPONENTS[@]}"; do pid=$(pid_of "$name") && kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.5
  done
  # the apiserver may hang in its graceful shutdown once etcd is gone
  for name in "${COMPONENTS[@]}"; do pid=$(pid_of "$name") && kill -9 "$pid" 2>/dev/null || true; done
  # shims and pod processes this cluster started: their command lines name its work directory
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    [ "$pid" = $$ ] || [ "$pid" = "$PPID" ] && continue
    grep -qsF "$W/" "$proc/cmdline" && kill -9 "$pid" 2>/dev/null || true
  done
  [ -d "$W/pids" ] && kube-proxy --cleanup >/dev/null 2>&1 || true
  kubelet_rules_cleanup
  { grep -F " $W/" /proc/mounts || true; } | awk '{print $2}' | sort -r | while read -r mount; do
    umount -l "$mount" 2>/dev/null || true
  done
  if [ -f "$W/netns.before" ]; then
    comm -13 "$W/netns.before" <(ls /var/run/netns 2>/dev/null | sort || true) | while read -r ns; do
      umount "/var/run/netns/$ns" 2>/dev/null || true; rm -f "/var/run/netns/$ns"
    done
  fi
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE"; fi
  # the pods' cgroups (kubelet's cgroupfs driver makes /kubepods in every hierarchy)
  find /sys/fs/cgroup/*/kubepods -depth -type d -exec rmdir {} + 2>/dev/null || true
  if [ -f "$W/ip_forward.before" ]; then sysctl -qw net.ipv4.ip_forward="$(cat "$W/ip_forward.before")"; fi
  rm -rf "$W/pids"
  say "down"
}

case $ACTION in
  up) up ;;
  down) down ;;
  *) say "unknown action $ACTION: up or down"; exit 2 ;;
esac
