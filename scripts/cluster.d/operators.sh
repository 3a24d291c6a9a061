# shellcheck shell=bash
# Sourced by scripts/cluster, which sets the paths and settings used here.
# The Kubeflow operators: training-operator, mpi-operator, JobSet and Trainer, their webhooks reached by URL.

start_operators() {
  kubeconfig "$C/operators.kubeconfig" kubeflow-operators token "$PKI/operators.token"
  local kc=$C/operators.kubeconfig
  if [ -x "$BIN/mpi-operator" ]; then
    start_supervised mpi-operator "$BIN/mpi-operator" --kubeConfig "$kc" --lock-namespace mpi-operator \
      --monitoring-port 0 ${OPERATOR_GANG:+--gang-scheduling="$OPERATOR_GANG"}
  fi
  if [ -x "$BIN/training-operator" ]; then
    start_training_operator
  fi
  if [ -x "$BIN/jobset-controller" ]; then
    start_jobset
  fi
  if [ -x "$BIN/trainer-$TRAINER" ]; then
    start_trainer
  fi
}

start_training_operator() {
  # Its certificate rotator fills the Secret and the webhook configuration's caBundle
  # and holds every controller back until both exist; the webhook is reached by URL
  # (no Service can route to 127.0.0.1) under the name its certificate carries.
  local d
  d=$(modsrc training-operator github.com/kubeflow/training-operator)
  KA -n kubeflow create secret generic training-operator-webhook-cert --dry-run=client -o yaml \
    | KA apply --server-side --force-conflicts -f - >/dev/null
  url_webhooks "$d/manifests/base/webhook/manifests.yaml" "https://training-operator.kubeflow.svc:$TO_WEBHOOK_PORT" \
    validator.training-operator.kubeflow.org - | KA apply --server-side --force-conflicts -f - >/dev/null
  start_private_tmp training-operator kubeflow/training-operator-webhook-cert env MY_POD_NAMESPACE=kubeflow KUBECONFIG="$C/operators.kubeconfig" \
    "$BIN/training-operator" --enable-scheme=tfjob --enable-scheme=pytorchjob \
    --metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081 \
    --webhook-server-port="$TO_WEBHOOK_PORT" ${OPERATOR_GANG:+--gang-scheduler-name="$OPERATOR_GANG"}
  # its validating webhook must answer before a job is created (a PyTorchJob created
  # before then is refused: "failed calling webhook ... connection refused")
  webhook_answers "$TO_WEBHOOK_PORT" "the training-operator's" training-operator
}

# webhook_answers PORT WHOSE LOG: wait up to 90 s for a webhook server on PORT. Not
# fatal: the operator may still come up, and the line names where to look.
webhook_answers() {
  local i
  for ((i = 0; i < 360; i++)); do
    curl -sk --max-time 2 -o /dev/null "https://127.0.0.1:$1/" && return 0
    sleep 0.25
  done
  log "$2 webhook does not answer yet (see .cluster/logs/$3.log)"
}

# url_webhooks FILE BASE_URL VALIDATING_NAME MUTATING_NAME: a release's webhook
# configurations, renamed as its certificate rotator expects them, each Service
# reference replaced by the URL BASE_URL/PATH (no Service routes to 127.0.0.1).
url_webhooks() {
  awk -v base="$2" -v vname="$3" -v mname="$4" '
    /^  name: validating-webhook-configuration$/ { print "  name: " vname; next }
    /^  name: mutating-webhook-configuration$/ { print "  name: " mname; next }
    /^ *service:$/ { indent = $0; sub(/service:.*/, "", indent); insvc = 1; next }
    insvc && /^ *(name|namespace):/ { next }
    insvc && /^ *path:/ { print indent "url: " base $2; insvc = 0; next }
    { print }' "$1"
}

# empty_secret NAMESPACE NAME: the Secret a certificate rotator fills (it may update, not create).
empty_secret() {
  KA -n "$1" get secret "$2" >/dev/null 2>&1 \
    || KA -n "$1" create secret generic "$2" >/dev/null
}

start_jobset() {
  local d port=${CLUSTER_JOBSET_WEBHOOK_PORT:-9444}
  d=$(modsrc jobset sigs.k8s.io/jobset)
  KA create namespace jobset-system >/dev/null 2>&1 || true
  empty_secret jobset-system jobset-webhook-server-cert
  url_webhooks "$d/config/components/webhook/manifests.yaml" \
    "https://jobset-webhook-service.jobset-system.svc:$port" \
    jobset-validating-webhook-configuration jobset-mutating-webhook-configuration \
    | KA apply --server-side --force-conflicts -f - >/dev/null
  cat >"$C/jobset.config.yaml" <<EOF
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: true}
webhook: {port: $port, host: 127.0.0.1}
metrics: {bindAddress: "127.0.0.1:18443"}
health: {healthProbeBindAddress: "127.0.0.1:18082"}
EOF
  start_private_tmp jobset-controller jobset-system/jobset-webhook-server-cert env KUBECONFIG="$C/operators.kubeconfig" \
    "$BIN/jobset-controller" --config "$C/jobset.config.yaml"
  # JobSet's webhooks see every pod (exclusive placement) and fail closed: until its
  # server answers, any pod's creation is refused ("connection refused", seen right
  # after up under load)
  webhook_answers "$port" "JobSet's" jobset-controller
}

start_trainer() {
  local d port=${CLUSTER_TRAINER_WEBHOOK_PORT:-9445}
  d=$(modsrc "trainer-${TRAINER%.0}" github.com/kubeflow/trainer/v2)
  empty_secret kubeflow-system kubeflow-trainer-webhook-cert
  url_webhooks "$d/manifests/base/webhook/manifests.yaml" \
    "https://kubeflow-trainer-controller-manager.kubeflow-system.svc:$port" \
    validator.trainer.kubeflow.org defaulter.trainer.kubeflow.org \
    | KA apply --server-side --force-conflicts -f - >/dev/null
  if [ "${TRAINER#v2.0.}" != "$TRAINER" ]; then
    # v2.0 takes flags, not a configuration file; its webhook server binds every
    # interface (it has no flag for the host). It starts that server as soon as its
    # rotator has filled the Secret and exits when the files are not there yet, so it
    # is restarted, as a kubelet restarts its pod until the mounted Secret has them
    start_private_tmp trainer kubeflow-system/kubeflow-trainer-webhook-cert env KUBECONFIG="$C/operators.kubeconfig" \
      "$BIN/trainer-$TRAINER" --metrics-bind-address 0 --health-probe-bind-address 127.0.0.1:18083 \
      --webhook-server-port "$port" --webhook-service-name kubeflow-trainer-controller-manager \
      --webhook-secret-name kubeflow-trainer-webhook-cert
  else
    start_trainer_config "$port"
  fi
  # the release's ClusterTrainingRuntimes, once its validating webhook answers
  local f
  for f in "$d"/manifests/base/runtimes/*_distributed.yaml; do
    if ! (wait_for "the Trainer webhook" 60 KA apply --server-side --force-conflicts -f "$f") 2>/dev/null; then
      log "Trainer $TRAINER's webhook does not answer: its runtimes are not installed (see .cluster/logs/trainer.log)"
      return 0
    fi
  done
}

# v2.1 on: a Configuration file
start_trainer_config() {
  local port=$1
  cat >"$C/trainer.config.yaml" <<EOF
apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:18083"}
metrics: {bindAddress: "127.0.0.1:18444", secureServing: true}
webhook: {port: $port, host: 127.0.0.1}
leaderElection: {leaderElect: false}
certManagement:
  enable: true
  webhookServiceName: kubeflow-trainer-controller-manager
  webhookSecretName: kubeflow-trainer-webhook-cert
statusServer: {port: 10443}
EOF
  # restarted by start_private_tmp, as every operator is: under load its webhook server,
  # too, opened the certificate files before they were written
  start_private_tmp trainer kubeflow-system/kubeflow-trainer-webhook-cert env KUBECONFIG="$C/operators.kubeconfig" \
    "$BIN/trainer-$TRAINER" --config "$C/trainer.config.yaml"
}
