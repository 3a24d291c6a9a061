# shellcheck shell=bash
# Sourced by scripts/cluster, which sets the paths and settings used here.
# The tier's binaries: each a `go build` of a pinned module (cluster/*/go.mod), skipped when built.

# build_tool MODULE_DIR PACKAGE OUTPUT [LDFLAGS]: one `go build`, skipped when OUTPUT exists.
build_tool() {
  [ -x "$BIN/$3" ] && return 0
  # one build of a binary at a time, whoever asks (two `up`s, a background build)
  (
    flock 9
    build_tool_locked "$@"
  ) 9>"$BIN/.$3.lock"
}

build_tool_locked() {
  local dir=$1 pkg=$2 out=$3 ld=${4:-} t0=$SECONDS
  [ -x "$BIN/$out" ] && return 0
  command -v go >/dev/null || die "go is missing: install Go 1.26 (https://go.dev/dl) and rerun"
  log "building $out from cluster/$dir (a cold build takes minutes; log: .cluster/logs/build-$out.log)"
  if (cd "$ROOT/cluster/$dir" && nice go build -trimpath -ldflags "-s -w $ld" -o "$BIN/$out.tmp" "$pkg") \
      >"$LOGS/build-$out.log" 2>&1; then
    mv "$BIN/$out.tmp" "$BIN/$out"
    log "built $out in $(elapsed $t0) s"
  else
    rm -f "$BIN/$out.tmp"
    log "could not build $out (last lines of .cluster/logs/build-$out.log):"
    tail -5 "$LOGS/build-$out.log" >&2
    return 1
  fi
}

# k8s_ldflags [VERSION]: the version stamps of a Kubernetes build (K8S_VERSION by default)
k8s_ldflags() {
  local v=${1:-$K8S_VERSION} minor p ld=""
  minor=${v#v1.}
  minor=${minor%%.*}
  # kubectl version reads these from the apiserver's /version
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$ld"
}

do_build() {
  mkdir -p "$BIN" "$LOGS"
  local ld
  ld=$(k8s_ldflags)
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    build_tool controlplane "k8s.io/kubernetes/cmd/$c" "$c" "$ld" || die "the control plane did not build"
  done
  # The operators: one that does not build is left out (README says which and why).
  build_tool mpi-operator github.com/kubeflow/mpi-operator/cmd/mpi-operator mpi-operator || true
  build_tool training-operator github.com/kubeflow/training-operator/cmd/training-operator.v1 training-operator || true
  build_tool jobset sigs.k8s.io/jobset jobset-controller || true
  local t
  for t in $TRAINERS; do
    build_tool "trainer-${t%.0}" github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager "trainer-$t" || true
  done
  # The gang scheduler: kube-scheduler at the release scheduler-plugins pins, with its
  # Coscheduling plugin (cluster/coscheduling). Without it the tier has no gang scheduler.
  build_tool coscheduling . scheduler-plugins "$(k8s_ldflags "$COSCHED_K8S")" \
    || log "the gang scheduler did not build: the tier runs without one (gang tests skip)"
}
