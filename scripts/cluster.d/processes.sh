# shellcheck shell=bash
# Sourced by scripts/cluster, which sets the paths and settings used here.
# Starting, supervising and stopping the tier's processes, and what their pods leave on the machine.

running() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

# start NAME CMD...: a process in its own session, its pid in .cluster/run/NAME.pid.
start() {
  local name=$1
  shift
  running "$name" && return 0
  setsid "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}

# start_supervised NAME CMD...: like start, and CMD is started again a second after it
# ends, as the kubelet restarts a static pod's container and a Deployment an operator's
# pod. Some components end themselves when the API server goes away: kube-scheduler
# exits when an update after its informers' relist contradicts its cache, mpi-operator
# when it cannot renew its leader lease; on a real control plane they come back.
start_supervised() {
  local name=$1
  shift
  running "$name" && return 0
  setsid sh -c 'while :; do "$@"; echo "cluster: $0 ended ($?); starting it again in 1 s"; sleep 1; done' \
    "$name" "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
  local what=$1 limit=$2 i
  shift 2
  for ((i = 0; i < limit * 4; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  die "$what did not come up in ${limit} s (see .cluster/logs/)"
}

api_ready() {
  curl -sf --max-time 2 --cacert "$PKI/ca.crt" "https://127.0.0.1:$API_PORT/readyz"
}

# start_private_tmp NAME CMD...: like start, with a private tmpfs on
# /tmp/k8s-webhook-server. Every controller-runtime operator writes its webhook
# certificates to the same fixed /tmp/k8s-webhook-server/serving-certs; each gets its
# own. Only that folder is covered, not /tmp: a checkout under /tmp (CI clones into one)
# keeps its binaries and kubeconfigs visible. The empty mount point stays on the machine:
# removing it while another checkout's tier runs would unmount that tier's certificates.
# The rotator fills SECRET (namespace/name) and waits for its files in the cert dir,
# which a kubelet would write from the mounted Secret: a loop in the same namespace does.
start_private_tmp() {
  local name=$1 secret=$2
  shift 2
  start "$name" unshare --mount --propagation private sh -c '
    mkdir -p /tmp/k8s-webhook-server || exit 1
    mount -t tmpfs -o mode=700,size=16m tmpfs /tmp/k8s-webhook-server || exit 1
    d=/tmp/k8s-webhook-server/serving-certs
    mkdir -p "$d"
    # tls.crt last: the cert rotator of the operator takes the files as mounted once tls.crt
    # exists, and its webhook server then reads the key at once
    (while kill -0 $$ 2>/dev/null; do  # $$: the restart loop below; ends with it
      for k in tls.key ca.crt tls.crt; do
        v=$(kubectl --kubeconfig "$0" -n "${1%/*}" get secret "${1#*/}" -o "jsonpath={.data.${k%.*}\\.${k#*.}}" 2>/dev/null)
        # replaced only when the Secret changed, as the kubelet updates a mounted Secret:
        # a file swapped under a watch every 2 s crashed the certificate watcher of
        # Trainer v2.0 (fsnotify v1.7.0: a nil dereference in its inotify removal)
        [ -n "$v" ] && printf %s "$v" | base64 -d >"$d/$k.new" \
          && { cmp -s "$d/$k.new" "$d/$k" && rm -f "$d/$k.new" || mv "$d/$k.new" "$d/$k"; }
      done
      sleep 2
    done) &
    shift
    # restarted when it exits, as a kubelet restarts a crashed operator pod: its cert
    # rotator may say "certs ready" from the Secret before the copy above wrote the
    # files, and then its webhook server exits on a missing tls.key (seen under load)
    while :; do
      "$@"
      echo "cluster: the operator exited ($?): restarting it in 2 s" >&2
      sleep 2
    done' "$C/admin.kubeconfig" "$secret" "$@"
}

# stop NAME: TERM, then KILL after 10 s, for the process group started as NAME.
stop() {
  local n=$1 pid i
  [ -f "$RUN/$n.pid" ] || return 0
  pid=$(cat "$RUN/$n.pid")
  # the group, even when its leader has already ended: what it left behind goes too
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 0.25
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$RUN/$n.pid"
}

# ports_free: refuse to start beside another tier (another checkout's, or one whose
# `down` never ran). Its etcd would answer this tier's health check, and the two would
# share the bridge jddl0 and the pod range.
ports_free() {
  running etcd && return 0
  local p
  for p in "$API_PORT" "$ETCD_PORT" "$KUBELET_PORT"; do
    if ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
      die "port $p is taken (another tier runs on this machine?): run scripts/cluster down where it was started, or set CLUSTER_API_PORT, CLUSTER_ETCD_PORT and CLUSTER_KUBELET_PORT"
    fi
  done
}

# Every network namespace, veth and bridge the node agent made (all named jddl*), even
# when the agent died before removing them.
remove_network() {
  command -v ip >/dev/null || return 0
  local n
  for n in $(ip netns list 2>/dev/null | awk '$1 ~ /^jddl/ {print $1}'); do
    ip netns del "$n" 2>/dev/null || true
  done
  for n in $(ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep '^jddl'); do
    ip link del "$n" 2>/dev/null || true
  done
}

# The mount points pods needed that this machine lacked (listed by enter.py as the
# topmost path it created): removed where still empty.
remove_mountpoints() {
  [ -f "$C/mountpoints" ] || return 0
  local d
  sort -ru "$C/mountpoints" | while IFS= read -r d; do
    case "$d" in /?*) ;; *) continue ;; esac
    [ -e "$d" ] && find "$d" -xdev -depth -empty -delete 2>/dev/null || true
  done
  rm -f "$C/mountpoints"
}
