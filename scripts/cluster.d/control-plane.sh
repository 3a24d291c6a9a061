# shellcheck shell=bash
# Sourced by scripts/cluster, which sets the paths and settings used here.
# etcd, kube-apiserver, the controllers, the schedulers, the node agent and what a Kubeflow cluster has besides (namespaces, CRDs, roles).

start_etcd() {
  mkdir -p "$DATA"
  chmod 700 "$DATA"
  start etcd etcd --name cluster --data-dir "$DATA" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "cluster=http://127.0.0.1:$((ETCD_PORT + 1))" \
    --listen-metrics-urls "" --enable-v2=false --quota-backend-bytes 2147483648
  wait_for etcd 30 curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
  # The apiserver calls the training-operator's webhook by the name its certificate
  # rotator signs (training-operator.kubeflow.svc). That name resolves to 127.0.0.1 in the
  # apiserver's own mount namespace only, where a hosts file is bound over /etc/hosts:
  # the machine's /etc/hosts is never touched, and the mount ends with the process.
  {
    cat /etc/hosts
    echo "127.0.0.1 training-operator.kubeflow.svc jobset-webhook-service.jobset-system.svc"
    echo "127.0.0.1 kubeflow-trainer-controller-manager.kubeflow-system.svc"
  } >"$C/apiserver.hosts"
  start kube-apiserver unshare --mount --propagation private sh -c \
    'mount --bind "$0" /etc/hosts && exec "$@"' "$C/apiserver.hosts" \
    "$BIN/kube-apiserver" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --token-auth-file="$PKI/tokens.csv" \
    --authorization-mode=RBAC --anonymous-auth=true \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 --allow-privileged=true \
    --kubelet-preferred-address-types=InternalIP --profiling=false
  wait_for kube-apiserver 120 api_ready
}

start_controllers() {
  kubeconfig "$C/kcm.kubeconfig" kcm cert "$PKI/kcm.crt" "$PKI/kcm.key"
  kubeconfig "$C/scheduler.kubeconfig" scheduler cert "$PKI/scheduler.crt" "$PKI/scheduler.key"
  # The controllers a Kubeflow job needs: Job (MPIJob launchers, JobSet/TrainJob pods),
  # the garbage collector (ownerReference cascades, foreground deletion), TTL after
  # finished, service accounts and their tokens, namespace deletion, pod GC, the root CA
  # ConfigMap, quotas, and endpoints for headless Services.
  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$C/kcm.kubeconfig" --bind-address=127.0.0.1 --secure-port=10257 \
    --leader-elect=false --use-service-account-credentials=true \
    --controllers=job-controller,garbage-collector-controller,ttl-after-finished-controller,serviceaccount-controller,serviceaccount-token-controller,namespace-controller,pod-garbage-collector-controller,root-ca-certificate-publisher-controller,resourcequota-controller,endpoints-controller,endpointslice-controller \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --profiling=false
  start_supervised kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$C/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false --profiling=false
}

# A second scheduler, as scheduler-plugins installs one: its own profile name, the
# Coscheduling plugin at queue sort, PreFilter, Permit and the rest, reading the
# scheduling.x-k8s.io PodGroups (CRD from tests/data/crds, applied with the others).
# It runs as the scheduler's identity, bound to a role for PodGroups besides.
start_gang_scheduler() {
  [ -x "$BIN/scheduler-plugins" ] || return 0
  KA apply --server-side --force-conflicts -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: jupyter-ddl-coscheduling}
rules:
- apiGroups: [scheduling.x-k8s.io]
  resources: [podgroups, podgroups/status, elasticquotas, elasticquotas/status]
  verbs: [get, list, watch, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: jupyter-ddl-coscheduling}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: jupyter-ddl-coscheduling}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kube-scheduler"}
EOF
  # permitWaitingTimeSeconds: how long the pods that fit wait at Permit for the rest of
  # their gang before all of them go back to the queue
  cat >"$C/gang-scheduler.config.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: "$C/scheduler.kubeconfig"}
profiles:
- schedulerName: $GANG_SCHEDULER
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args: {permitWaitingTimeSeconds: 30}
EOF
  start gang-scheduler "$BIN/scheduler-plugins" --config="$C/gang-scheduler.config.yaml" \
    --bind-address=127.0.0.1 --secure-port=10261 --profiling=false
  (wait_for "the gang scheduler" 60 curl -skf --max-time 2 https://127.0.0.1:10261/healthz) 2>/dev/null \
    || log "the gang scheduler does not answer (see .cluster/logs/gang-scheduler.log)"
}

KA() { kubectl --kubeconfig "$C/admin.kubeconfig" "$@"; }

# The operators' CRDs and runtimes come from the same pinned release as their binaries.
modsrc() { (cd "$ROOT/cluster/$1" && go list -m -f '{{.Dir}}' "$2"); }

apply_objects() {
  KA apply --server-side --force-conflicts -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $NOTEBOOK_NS}
---
apiVersion: v1
kind: Namespace
metadata: {name: kubeflow}
---
apiVersion: v1
kind: Namespace
metadata: {name: kubeflow-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: mpi-operator}
EOF
  local d crds=()
  d=$(modsrc training-operator github.com/kubeflow/training-operator)
  crds+=("$d/manifests/base/crds/kubeflow.org_tfjobs.yaml" "$d/manifests/base/crds/kubeflow.org_pytorchjobs.yaml")
  d=$(modsrc mpi-operator github.com/kubeflow/mpi-operator)
  crds+=("$d/manifests/base/kubeflow.org_mpijobs.yaml")
  d=$(modsrc jobset sigs.k8s.io/jobset)
  crds+=("$d/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml")
  d=$(modsrc "trainer-${TRAINER%.0}" github.com/kubeflow/trainer/v2)
  crds+=("$d"/manifests/base/crds/trainer.kubeflow.org_*.yaml)
  crds+=("$ROOT"/tests/data/crds/scheduling.*_PodGroup_*.yaml)
  local f
  for f in "${crds[@]}"; do KA apply --server-side --force-conflicts -f "$f" >/dev/null; done
  KA wait --for=condition=Established --timeout=60s crd --all >/dev/null
  apply_notebook_rbac
  # Trainer's own roles for a Kubeflow platform: every authenticated user may read the
  # ClusterTrainingRuntimes (a TrainJob's runtime is read before it is submitted)
  KA apply --server-side --force-conflicts \
    -f "$d/manifests/overlays/kubeflow-platform/kubeflow-trainer-roles.yaml" >/dev/null
  # the node agent gets what the kubelet's role gives a node (no Node authorizer here)
  KA apply --server-side --force-conflicts -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: jupyter-ddl-node-agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:node}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:node:$NODE"}
EOF
}

# The interpreter pods run as `python`/`torchrun` (the tier's stand-in for an image):
# CLUSTER_PYTHON's directory, else the repository's .venv/bin; nothing when neither is set.
pod_bin() {
  local py=${CLUSTER_PYTHON:-}
  [ -z "$py" ] && [ -x "$ROOT/.venv/bin/python" ] && py=$ROOT/.venv/bin/python
  [ -n "$py" ] || return 0
  py=$(command -v "$py") || return 0
  dirname "$py"
}

start_nodeagent() {
  # Each pod: a network namespace on the bridge jddl0 (pod range CLUSTER_POD_CIDR), its
  # volumes and hosts file under .cluster/poddata, the repository first on PYTHONPATH
  # so a pod imports this checkout's jupyter_ddl. Images on the registries listed in
  # .cluster/registries (one `http://HOST:PORT` or `HOST` a line; read at each pull)
  # are pulled into .cluster/images.
  mkdir -p "$C/poddata"
  chmod 700 "$C/poddata"
  start nodeagent env PYTHONPATH="$ROOT/cluster" "${CLUSTER_PYTHON:-python3}" -m nodeagent \
    --server "https://127.0.0.1:$API_PORT" --token-file "$PKI/node.token" --ca "$PKI/ca.crt" \
    --node "$NODE" --port "$KUBELET_PORT" --cert "$PKI/kubelet.crt" --key "$PKI/kubelet.key" \
    --logdir "$C/pods" --piddir "$RUN/pods" --datadir "$C/poddata" \
    --pod-cidr "${CLUSTER_POD_CIDR:-10.244.0.0/24}" --path-prefix "$(pod_bin)" \
    --pythonpath "$ROOT" --record "$C/mountpoints" \
    --registries "$C/registries" --images "$C/images" \
    --log-max-size "${CLUSTER_LOG_MAX_SIZE:-10485760}"
  wait_for "the node agent" 30 KA get node "$NODE"
}

# What a Kubeflow profile gives its owner: kubeflow-edit in the profile's namespace
# (the training kinds, pods and their logs, services, configmaps, secrets, events), and
# nothing cluster-wide.
apply_notebook_rbac() {
  KA apply --server-side --force-conflicts -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kubeflow-edit}
rules:
- apiGroups: [kubeflow.org]
  resources: [tfjobs, pytorchjobs, mpijobs, tfjobs/status, pytorchjobs/status, mpijobs/status]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
- apiGroups: [trainer.kubeflow.org]
  resources: [trainjobs, trainjobs/status, trainingruntimes]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
- apiGroups: [jobset.x-k8s.io]
  resources: [jobsets, jobsets/status]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods, pods/log, services, configmaps, secrets, events, persistentvolumeclaims, serviceaccounts, endpoints]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, list, watch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: namespaceAdmin, namespace: $NOTEBOOK_NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubeflow-edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: notebook}
EOF
}
