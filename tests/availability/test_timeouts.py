"""Which timeouts each Kubernetes request gets (pure): reads short, writes longer,
a watch its server-side timeout plus the read timeout, a followed log no read timeout."""

from __future__ import annotations

from jupyter_ddl.backends.kubernetes.connection import Timeouts, is_stream
from jupyter_ddl.config import Config

T = Timeouts.of(Config(kube_connect_timeout=2, kube_read_timeout=4, kube_write_timeout=20))
API = "https://k8s.example:6443"


def test_reads_writes_and_streams():
    assert T.for_request("GET", f"{API}/apis/kubeflow.org/v1/namespaces/a/pytorchjobs") == (2, 4)
    assert T.for_request("GET", f"{API}/version") == (2, 4)
    assert T.for_request("POST", f"{API}/api/v1/namespaces/a/configmaps") == (2, 20)
    assert T.for_request("PATCH", f"{API}/apis/kubeflow.org/v1/namespaces/a/tfjobs/x") == (2, 20)
    watch = f"{API}/api/v1/namespaces/a/pods?watch=true&timeoutSeconds=30"
    assert T.for_request("GET", watch) == (2, 34)
    assert T.for_request("GET", f"{API}/api/v1/namespaces/a/pods?watch=true") == (2, None)
    follow = f"{API}/api/v1/namespaces/a/pods/p/log?follow=true&timestamps=true"
    assert T.for_request("GET", follow) == (2, None)
    assert is_stream(watch) and is_stream(follow)
    assert not is_stream(f"{API}/api/v1/namespaces/a/pods/p/log?timestamps=true")


def test_defaults_are_the_configs():
    assert Timeouts.of(Config()) == Timeouts(3.0, 5.0, 30.0)
