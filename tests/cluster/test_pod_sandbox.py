"""A pod's sandbox on the real tier: its own network namespace and IP, peers found by
the names a headless Service gives them, ConfigMap and Secret contents in files and
variables, `$(VAR)` expansion, read-only and subPath mounts, the service account's token in a /run of
the pod's own."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.cluster.tier import MARKS, create, kubectl, wait_for

pytestmark = MARKS

MANIFEST = """
apiVersion: v1
kind: ConfigMap
metadata: {{name: {n}}}
data: {{hello.txt: "hi there"}}
binaryData: {{blob.bin: AAEC/w==}}
---
apiVersion: v1
kind: Secret
metadata: {{name: {n}}}
stringData: {{token: s3cret}}
---
apiVersion: v1
kind: Service
metadata: {{name: {n}}}
spec: {{clusterIP: None, selector: {{app: {n}}}, ports: [{{port: 7000}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {n}-srv, labels: {{app: {n}}}}}
spec:
  hostname: srv
  subdomain: {n}
  restartPolicy: Never
  containers:
  - name: main
    image: python:3.11
    command: [python, -c, "import socket; s = socket.socket(); s.bind(('0.0.0.0', 7000)); s.listen(); c, _ = s.accept(); print('srv got', c.recv(100).decode())"]
---
apiVersion: v1
kind: Pod
metadata: {{name: {n}-cli, labels: {{app: {n}}}}}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: python:3.11
    env:
    - {{name: A, value: one}}
    - {{name: B, value: "$(A)-two $$(A) $(NOPE)"}}
    - {{name: TOK, valueFrom: {{secretKeyRef: {{name: {n}, key: token}}}}}}
    - {{name: MYIP, valueFrom: {{fieldRef: {{fieldPath: status.podIP}}}}}}
    command: [sh, -c]
    args:
    - |
      echo "B=$B arg=$(A) tok=$TOK ip=$MYIP host=$(hostname)"
      od -An -tx1 /cfg/blob.bin; cat /one; echo
      touch /cfg/x 2>/dev/null || echo read-only
      test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token-mounted
      python -c "import socket, time
      for i in range(30):
          try:
              s = socket.create_connection(('srv.{n}', 7000)); break
          except OSError: time.sleep(1)
      s.send(b'hello'); print('sent')"
    volumeMounts:
    - {{name: cfg, mountPath: /cfg}}
    - {{name: cfg, mountPath: /one, subPath: hello.txt}}
  volumes:
  - {{name: cfg, configMap: {{name: {n}}}}}
"""


def phase(name: str) -> str:
    pod = json.loads(kubectl("-n", "notebook", "get", "pod", name, "-o", "json").stdout)
    return str(pod.get("status", {}).get("phase", ""))


def test_pods_get_their_own_ip_names_volumes_and_variables(tier):
    n = f"sbx-{uuid.uuid4().hex[:6]}"
    made = create(MANIFEST.format(n=n))
    assert made.returncode == 0, made.stderr
    try:
        for pod in (f"{n}-srv", f"{n}-cli"):
            wait_for(pod, lambda p=pod: phase(p) in ("Succeeded", "Failed"), 120)
        cli = kubectl("-n", "notebook", "logs", f"{n}-cli").stdout.splitlines()
        srv = kubectl("-n", "notebook", "logs", f"{n}-srv").stdout
        ip = json.loads(kubectl("-n", "notebook", "get", "pod", f"{n}-cli", "-o", "json").stdout)[
            "status"
        ]["podIP"]
        assert ip.startswith("10.244.0.") and ip != "10.244.0.1"
        assert cli[0] == f"B=one-two $(A) $(NOPE) arg=one tok=s3cret ip={ip} host={n}-cli"
        assert cli[1].split() == ["00", "01", "02", "ff"]
        assert cli[2:6] == ["hi there", "read-only", "token-mounted", "sent"], cli
        # the token's folder is the pod's own: the machine does not look like a pod
        assert not Path("/run/secrets").exists()
        assert "srv got hello" in srv
        assert phase(f"{n}-cli") == "Succeeded" and phase(f"{n}-srv") == "Succeeded"
    finally:
        for kind in ("pod", "service", "configmap", "secret"):
            kubectl("-n", "notebook", "delete", kind, "-l" if kind == "pod" else "--ignore-not-found",
                    f"app={n}" if kind == "pod" else n, "--wait=false", check=False)  # fmt: skip
