# shellcheck shell=bash
# Sourced by scripts/cluster, which sets the paths and settings used here.
# The tier's certificate authority, its certificates and tokens, and kubeconfigs.

# sign NAME SUBJECT EXT: a key and a certificate signed by the tier's CA.
sign() {
  local name=$1 subj=$2 ext=$3
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -subj "$subj" \
    -out "$PKI/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 30 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

make_pki() {
  [ -f "$PKI/ca.crt" ] && return 0
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=jupyter-ddl-cluster-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
  sign apiserver "/CN=kube-apiserver" "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth"
  sign kcm "/O=system:kube-controller-manager/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
  sign scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
  # the node agent's kubelet API (the apiserver does not check it: no --kubelet-certificate-authority)
  sign kubelet "/CN=node-0" "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  # static tokens: an admin (system:masters), the notebook user, and one identity per
  # operator (bound below to its release's own ClusterRole where it ships one)
  local admin notebook ops node
  admin=$(openssl rand -hex 24) notebook=$(openssl rand -hex 24) ops=$(openssl rand -hex 24)
  node=$(openssl rand -hex 24)
  {
    echo "$admin,admin,uid-admin,\"system:masters\""
    echo "$notebook,notebook,uid-notebook,\"notebook-users\""
    echo "$ops,kubeflow-operators,uid-operators,\"system:masters\""
    echo "$node,system:node:$NODE,uid-node,\"system:nodes\""
  } >"$PKI/tokens.csv"
  printf '%s' "$admin" >"$PKI/admin.token"
  printf '%s' "$notebook" >"$PKI/notebook.token"
  printf '%s' "$ops" >"$PKI/operators.token"
  printf '%s' "$node" >"$PKI/node.token"
  chmod 600 "$PKI"/*
}

# kubeconfig FILE USER (token|cert) CRED...: a kubeconfig for the tier's apiserver.
kubeconfig() {
  local file=$1 user=$2 kind=$3 ns
  if [ "$kind" = token ]; then ns=${5:-default}; else ns=${6:-default}; fi
  {
    echo "apiVersion: v1"
    echo "kind: Config"
    echo "clusters:"
    echo "- name: jupyter-ddl"
    echo "  cluster:"
    echo "    server: https://127.0.0.1:$API_PORT"
    echo "    certificate-authority: $PKI/ca.crt"
    echo "users:"
    echo "- name: $user"
    echo "  user:"
    if [ "$kind" = token ]; then
      echo "    token: $(cat "$4")"
    else
      echo "    client-certificate: $4"
      echo "    client-key: $5"
    fi
    echo "contexts:"
    echo "- name: $user"
    # the namespace follows the credentials: one argument for a token, two for a cert
    echo "  context: {cluster: jupyter-ddl, user: $user, namespace: $ns}"
    echo "current-context: $user"
  } >"$file"
  chmod 600 "$file"
}
