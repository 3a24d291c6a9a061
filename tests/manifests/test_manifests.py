"""Generated Kubeflow objects: strict CRD schema + operator admission rules + the operator
contract (section numbers refer to docs/operator-contract.md)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.manifests import (
    CODE_DIR,
    LABEL_CODE_DIGEST,
    LABEL_MANAGED,
    WORK_DIR,
    build_manifests,
    commands,
    configmap_key,
)
from jupyter_ddl.manifests.podgroup import min_resources, quantity
from jupyter_ddl.models import (
    CleanPodPolicy,
    GangScheduling,
    JobSpec,
    Resources,
    Toleration,
    VolumeMount,
)
from jupyter_ddl.validation import problems
from tests.support.admission import admission_problems
from tests.support.crd_schema import strict_schema, validate_object

IMAGE = "registry.example:5000/team/img:code-abc"
CMD = ["python", f"{CODE_DIR}/main.py"]
DIGEST = "sha256:" + "ab" * 32
GPU2 = Resources(cpu="2", memory="8Gi", gpu=2)


def build(spec: JobSpec, **kw) -> list[dict]:
    assert problems(spec) == [], problems(spec)
    kw.setdefault("code_digest", DIGEST)
    return build_manifests(spec, image=IMAGE, command=CMD, **kw)


def shapes() -> list[tuple[str, JobSpec]]:
    out = []
    for name, strategy in CATALOG.items():
        base = JobSpec(f"{name}-job", name)
        if strategy.needs_tpu:
            base = replace(base, default_resources=Resources(tpu=4))
        out.append((f"{name}-default", base))
        big = replace(
            base,
            replicas={r.role: (r.max or 3) for r in strategy.roles},
            secret_env=["HF_TOKEN"],
            env={"EPOCHS": "3"},
        )
        if not strategy.needs_tpu:
            big = replace(big, resources={r.role: GPU2 for r in strategy.roles if r.gpu})
        out.append((f"{name}-max-gpu", big))
        if strategy.trainjob_runtime:
            tj = JobSpec(f"{name}-tj", name, {"Node": 3}, target="TrainJob", default_resources=GPU2)
            out.append((f"{name}-trainjob", tj))
    out += [
        ("ps-evaluator-exitcode", JobSpec("ps", "tf-parameter-server", {"Worker": 3, "PS": 2, "Evaluator": 1}, restart_policy="ExitCode")),
        ("mwms-with-chief", JobSpec("mw", "tf-multi-worker-mirrored", {"Chief": 1, "Worker": 2})),
        ("ddp-nproc-4", JobSpec("n4", "torch-ddp", {"Worker": 1}, nproc_per_node=4, default_resources=Resources(gpu=4))),
        ("horovod-slots", JobSpec("hv", "horovod", {"Worker": 4}, slots_per_worker=4, resources={"Worker": Resources(gpu=4)})),
        ("volcano-gang", JobSpec("vg", "torch-ddp", {"Worker": 3}, gang=GangScheduling(queue="research", priority_class="high", min_available=2), default_resources=Resources(cpu="500m", memory="1Gi"))),
        ("coscheduling-gang", JobSpec("cg", "horovod", {"Worker": 2}, gang=GangScheduling(scheduler="scheduler-plugins", schedule_timeout_seconds=60))),
        ("tf-gang", JobSpec("tg", "tf-parameter-server", gang=GangScheduling())),
        ("placement", JobSpec("pl", "torch-ddp", node_selector={"gpu": "a100"}, tolerations=[Toleration("nvidia.com/gpu", "Exists", effect="NoSchedule")], volumes=[VolumeMount("datasets", "/data", read_only=True), VolumeMount("ckpt", "/ckpt", name="ckpt", sub_path="runs")])),
        ("policies", JobSpec("po", "ignite", backoff_limit=3, active_deadline_seconds=3600, ttl_seconds_after_finished=600, clean_pod_policy=CleanPodPolicy.ALL, namespace="team-a", notebook="work/Ignite Demo.ipynb", user="alice@example.com", labels={"team": "vision"}, annotations={"note": "x"})),
        ("trainjob-placement", JobSpec("tp", "torch-elastic", {"Node": 2}, target="TrainJob", node_selector={"pool": "gpu"}, tolerations=[Toleration(operator="Exists")], volumes=[VolumeMount("datasets", "/data")], active_deadline_seconds=60)),
    ]  # fmt: skip
    return out


SHAPES = shapes()


@pytest.mark.parametrize(("case", "spec"), SHAPES, ids=[s[0] for s in SHAPES])
@pytest.mark.parametrize("configmap", [None, "code-cm"], ids=["image", "configmap"])
def test_objects_pass_strict_crd_schema_and_admission(case, spec, configmap):
    objects = build(spec, code_configmap=configmap, code_paths=["main.py", "pkg/mod.py"])
    assert objects[0]["kind"] == spec.shape.kind
    for obj in objects:
        assert validate_object(obj) == [], (case, obj["kind"])
        assert admission_problems(obj) == [], (case, obj["kind"])
        json.dumps(obj)  # plain data only


# -- the checkers themselves must be able to fail ----------------------------------------------
def test_strict_schema_rejects_what_the_api_server_would():
    job = build(JobSpec("x", "torch-ddp"))[0]
    bad = copy.deepcopy(job)
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["gpus"] = 1
    bad["spec"]["runPolicy"]["backoffLimit"] = "three"
    bad["metadata"]["labelz"] = {}
    errors = validate_object(bad)
    assert any("'gpus' was unexpected" in e for e in errors)
    assert any(e.startswith("spec.runPolicy.backoffLimit:") for e in errors)
    assert any("'labelz' was unexpected" in e for e in errors)
    ok = copy.deepcopy(job)  # int-or-string: both forms accepted for quantities
    ok["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
        "resources"
    ] = {"limits": {"memory": "1Gi", "cpu": 2}}
    assert validate_object(ok) == []
    assert "no CRD serves" in validate_object({"apiVersion": "kubeflow.org/v9", "kind": "TFJob"})[0]


def test_strict_schema_keeps_preserve_unknown_fields_and_maps_open():
    import jsonschema

    crd = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "map": {"type": "object", "additionalProperties": {"type": "string"}},
                    "size": {
                        "x-kubernetes-int-or-string": True,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                    },
                    "maybe": {"type": "string", "nullable": True},
                },
            }
        },
    }
    check = jsonschema.Draft7Validator(strict_schema(crd))
    ok = {"spec": {"free": {"any": {"thing": 1}}, "map": {"k": "v"}, "size": 3, "maybe": None}}
    assert list(check.iter_errors(ok)) == []
    assert [e.message for e in check.iter_errors({"spec": {"size": "2Gi", "other": 1}})] == [
        "Additional properties are not allowed ('other' was unexpected)"
    ]
    assert not check.is_valid({"spec": {"map": {"k": 1}}})


def test_strict_schema_evaluates_trainjob_cel_name_rule():
    tj = build(JobSpec("tj", "torch-ddp", target="TrainJob"))[0]
    tj["metadata"]["name"] = "Bad.Name"
    assert "<root>: metadata.name must match RFC 1035 DNS label format" in validate_object(tj)


def test_admission_helpers_catch_contract_violations():
    job = build(JobSpec("x", "torch-ddp", {"Worker": 1}))[0]
    del job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"]  # §10.5: nil is refused
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = (
        "main"
    )
    found = admission_problems(job)
    assert "PyTorchJob: Master.replicas must be set to exactly 1" in found
    mpi = build(JobSpec("h", "horovod"))[0]
    mpi["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "Always"
    assert any("not Never/OnFailure" in p for p in admission_problems(mpi))
    tf = build(JobSpec("t", "tf-multi-worker-mirrored", {"Chief": 1}))[0]
    tf["spec"]["tfReplicaSpecs"]["Master"] = copy.deepcopy(tf["spec"]["tfReplicaSpecs"]["Chief"])
    assert "TFJob: more than one Chief/Master replica" in admission_problems(tf)


# -- contract facts in the objects ------------------------------------------------------------------
def containers(job: dict, role: str) -> list[dict]:
    key = {
        "TFJob": "tfReplicaSpecs",
        "PyTorchJob": "pytorchReplicaSpecs",
        "MPIJob": "mpiReplicaSpecs",
    }[job["kind"]]
    return job["spec"][key][role]["template"]["spec"]["containers"]


def test_s10_4_container_names_the_operators_look_for():
    assert [
        c["name"] for c in containers(build(JobSpec("a", "tf-multi-worker-mirrored"))[0], "Worker")
    ] == ["tensorflow"]
    assert [c["name"] for c in containers(build(JobSpec("a", "ignite"))[0], "Master")] == [
        "pytorch"
    ]
    mpi = build(JobSpec("a", "horovod"))[0]
    assert containers(mpi, "Launcher")[0]["name"] == "launcher"


def test_s10_5_master_replicas_written_explicitly_and_replica_types_camel_case():
    job = build(JobSpec("a", "deepspeed", {"Worker": 2}))[0]
    assert job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] == 1
    assert list(job["spec"]["pytorchReplicaSpecs"]) == ["Master", "Worker"]


def test_s10_10_clean_pod_policy_defaults_to_running_so_ps_pods_end():
    job = build(JobSpec("a", "tf-parameter-server"))[0]
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 3}
    assert job["spec"]["tfReplicaSpecs"]["PS"]["restartPolicy"] == "Never"


def test_backoff_limit_is_always_written_so_a_crash_loop_ends():
    """The operators' default is unlimited (§1.6); ours is DEFAULT_BACKOFF_LIMIT."""
    assert build(JobSpec("a", "torch-ddp"))[0]["spec"]["runPolicy"]["backoffLimit"] == 3
    spec = JobSpec("a", "torch-ddp", backoff_limit=0)
    assert build(spec)[0]["spec"]["runPolicy"]["backoffLimit"] == 0


def test_s1_6_run_policy_fields():
    spec = JobSpec(
        "a",
        "ignite",
        backoff_limit=2,
        active_deadline_seconds=90,
        ttl_seconds_after_finished=30,
        clean_pod_policy=CleanPodPolicy.NONE,
    )
    assert build(spec)[0]["spec"]["runPolicy"] == {
        "cleanPodPolicy": "None", "ttlSecondsAfterFinished": 30, "activeDeadlineSeconds": 90, "backoffLimit": 2,
    }  # fmt: skip


def test_s3_1_mpijob_shape():
    job = build(JobSpec("hv", "horovod", {"Worker": 3}, slots_per_worker=2))[0]
    spec = job["spec"]
    assert (spec["slotsPerWorker"], spec["sshAuthMountPath"]) == (2, "/root/.ssh")
    replicas = spec["mpiReplicaSpecs"]
    assert (replicas["Launcher"]["restartPolicy"], replicas["Worker"]["restartPolicy"]) == (
        "OnFailure",
        "Never",
    )
    assert replicas["Worker"]["replicas"] == 3
    launcher = containers(job, "Launcher")[0]["command"]
    assert launcher[:4] == ["mpirun", "--allow-run-as-root", "-np", "6"] and launcher[-2:] == CMD
    assert "command" not in containers(job, "Worker")[0]  # the operator runs sshd -De


def test_gpu_requests_equal_limits_and_cpu_is_only_requested():
    job = build(JobSpec("g", "torch-ddp", default_resources=GPU2))[0]
    res = containers(job, "Worker")[0]["resources"]
    assert res == {
        "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": 2},
        "limits": {"memory": "8Gi", "nvidia.com/gpu": 2},
    }


def test_secret_env_only_by_reference_and_shim_env():
    spec = JobSpec(
        "s", "torch-ddp", env={"EPOCHS": "2"}, secret_env=["WANDB_API_KEY"], dist_backend="gloo"
    )
    env = containers(build(spec)[0], "Master")[0]["env"]
    assert {
        "name": "WANDB_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "s-secrets", "key": "WANDB_API_KEY"}},
    } in env
    assert {"name": "EPOCHS", "value": "2"} in env
    assert {"name": "JUPYTER_DDL_STRATEGY", "value": "torch-ddp"} in env
    assert {"name": "JUPYTER_DDL_DIST_BACKEND", "value": "gloo"} in env


def test_our_labels_and_annotations_on_job_and_pods():
    spec = JobSpec(
        "l",
        "torch-ddp",
        notebook="work/My Notebook.ipynb",
        user="alice@example.com",
        labels={"team": "cv"},
    )
    job = build(spec)[0]
    assert job["metadata"]["labels"] == {
        "team": "cv", LABEL_MANAGED: "true", "jupyter-ddl.io/strategy": "torch-ddp",
        "jupyter-ddl.io/notebook": "My-Notebook.ipynb", "jupyter-ddl.io/user": "alice-example.com",
        LABEL_CODE_DIGEST: "ab" * 6,
    }  # fmt: skip
    assert job["metadata"]["annotations"]["jupyter-ddl.io/code-digest"] == DIGEST
    assert job["metadata"]["annotations"]["jupyter-ddl.io/notebook"] == "work/My Notebook.ipynb"
    pod_meta = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]
    assert pod_meta["labels"][LABEL_MANAGED] == "true"
    assert pod_meta["annotations"] == {"sidecar.istio.io/inject": "false"}


def test_torchrun_when_a_replica_runs_several_processes():
    assert containers(build(JobSpec("a", "torch-ddp"))[0], "Master")[0]["command"] == CMD
    many = build(JobSpec("a", "torch-ddp", nproc_per_node=2))[0]
    assert containers(many, "Master")[0]["command"] == ["torchrun", f"{CODE_DIR}/main.py"]
    assert many["spec"]["nprocPerNode"] == "2"
    assert commands.torchrun(["python3", "-u", "-m", "pkg.train", "--lr", "1"]) == [
        "torchrun",
        "-m",
        "pkg.train",
        "--lr",
        "1",
    ]
    elastic = build(JobSpec("e", "torch-elastic", {"Worker": 2}))[0]
    assert elastic["spec"]["elasticPolicy"] == {
        "rdzvBackend": "c10d",
        "minReplicas": 2,
        "maxReplicas": 2,
    }
    assert containers(elastic, "Worker")[0]["command"][0] == "torchrun"
    own = build(JobSpec("o", "torch-ddp", command=["bash", "-c", "run.sh"]))[0]
    assert containers(own, "Master")[0]["command"] == ["bash", "-c", "run.sh"]


def test_code_configmap_is_mounted_read_only_with_nested_paths():
    job = build(
        JobSpec("c", "horovod"), code_configmap="c-code", code_paths=["main.py", "pkg/mod.py"]
    )[0]
    pod = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert pod["volumes"][:2] == [
        {"name": "ddl-work", "emptyDir": {}},
        {"name": "ddl-code",
         "configMap": {"name": "c-code", "items": [{"key": "main.py", "path": "main.py"}, {"key": "pkg__mod.py", "path": "pkg/mod.py"}]}},
    ]  # fmt: skip
    c = pod["containers"][0]
    assert {"name": "ddl-code", "mountPath": CODE_DIR, "readOnly": True} in c["volumeMounts"]
    # a ConfigMap volume is read-only (operator-contract.md §10.16): the cell works in an emptyDir
    assert c["workingDir"] == WORK_DIR != CODE_DIR
    assert {"name": "ddl-work", "mountPath": WORK_DIR} in c["volumeMounts"]
    assert configmap_key("a/b/c.py") == "a__b__c.py"


def test_code_dir_matches_the_image_builder():
    from jupyter_ddl.image.layer import CODE_DIR as IMAGE_CODE_DIR

    assert CODE_DIR == IMAGE_CODE_DIR


def test_s4_1_trainjob_shape():
    spec = JobSpec(
        "tj",
        "torch-ddp",
        {"Node": 4},
        target="TrainJob",
        nproc_per_node=2,
        default_resources=GPU2,
        node_selector={"pool": "a100"},
    )
    tj = build(spec)[0]
    assert tj["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    trainer = tj["spec"]["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (4, 2)
    # trainer has no workingDir: the command starts in the work directory itself
    assert trainer["command"][:5] == ["sh", "-c", 'cd "$0" && exec "$@"', WORK_DIR, "torchrun"]
    assert trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == 2
    patch = tj["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ]
    assert [j["name"] for j in patch] == ["node"]
    assert patch[0]["template"]["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "a100"}
    ds = build(
        JobSpec("ds", "deepspeed", {"Node": 2}, target="TrainJob"), code_configmap="ds-code"
    )[0]
    assert ds["spec"]["runtimeRef"]["name"] == "deepspeed-distributed"
    assert ds["spec"]["trainer"]["command"][4:8] == ["mpirun", "--allow-run-as-root", "-np", "2"]
    # the node pods keep the runtime's image (§10.19): the code reaches both jobs as a volume
    jobs = ds["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ]
    assert [j["name"] for j in jobs] == ["node", "launcher"]
    for j in jobs:
        pod = j["template"]["spec"]["template"]["spec"]
        assert {"name": "ddl-code", "configMap": {"name": "ds-code"}} in pod["volumes"]


def test_gang_podgroups():
    vg = build(
        JobSpec(
            "vg",
            "torch-ddp",
            {"Worker": 3},
            gang=GangScheduling(queue="q", priority_class="high"),
            default_resources=Resources(cpu="500m", memory="1Gi", gpu=1),
        )
    )
    assert [o["kind"] for o in vg] == ["PyTorchJob", "PodGroup"]
    assert vg[1]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert vg[1]["spec"] == {
        "minMember": 4, "queue": "q", "priorityClassName": "high",
        "minResources": {"cpu": "2", "memory": str(4 * 2**30), "nvidia.com/gpu": "4"},
    }  # fmt: skip
    assert vg[0]["spec"]["runPolicy"]["schedulingPolicy"] == {
        "minAvailable": 4,
        "queue": "q",
        "priorityClass": "high",
    }
    pod = vg[0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vg"
    cs = build(
        JobSpec(
            "cs", "horovod", gang=GangScheduling(scheduler="scheduler-plugins", min_available=2)
        )
    )
    assert cs[1]["apiVersion"] == "scheduling.x-k8s.io/v1alpha1" and cs[1]["spec"] == {
        "minMember": 2
    }
    launcher = cs[0]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    assert launcher["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "cs"
    by_operator = build(
        JobSpec(
            "op", "torch-ddp", gang=GangScheduling(), backend_options={"gang_podgroup": "operator"}
        )
    )
    assert len(by_operator) == 1
    assert (
        "schedulerName"
        not in by_operator[0]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    )


@pytest.mark.parametrize("scheduler", ["volcano", "scheduler-plugins"])
@pytest.mark.parametrize("owner", ["client", "operator"])
def test_mpijob_gang_leaves_out_the_launcher_it_waits_for(scheduler, owner):
    """mpi-operator creates the launcher only once every worker is Ready
    (``WaitForWorkersReady``); Volcano and coscheduling place no member until
    ``minMember`` pods exist; the operator's own PodGroup takes
    ``schedulingPolicy.minAvailable`` when given (workers + 1 otherwise). A gang that
    counted the launcher could never form: it must count the workers only."""
    spec = JobSpec("hv", "horovod", {"Worker": 2}, gang=GangScheduling(scheduler=scheduler),
                   backend_options={"gang_podgroup": owner})  # fmt: skip
    objects = build(spec)
    job = objects[0]["spec"]
    assert job["launcherCreationPolicy"] == "WaitForWorkersReady"
    assert job["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2
    groups = [o for o in objects if o["kind"] == "PodGroup"]
    assert [g["spec"]["minMember"] for g in groups] == ([2] if owner == "client" else [])


def test_quantities_sum_exactly():
    assert quantity("500m") * 3 == quantity("1500m") == quantity("1.5")
    assert quantity("2Gi") == 2 * 2**30 and quantity("1e3") == 1000
    spec = JobSpec(
        "q", "tf-parameter-server", {"Worker": 2}, default_resources=Resources(cpu="250m")
    )
    assert min_resources(spec) == {"cpu": "1"}
    with pytest.raises(ValueError):
        quantity("lots")


@pytest.mark.parametrize("target", [None, "TrainJob"])
def test_mpirun_forwards_every_variable_by_name(target):
    """Open MPI hands ranks started over ssh only ``OMPI_*`` and what ``-x`` names: an
    MPIJob launcher and a TrainJob on an MPI runtime name each variable, never its value."""
    strategy = "deepspeed" if target else "horovod"
    spec = JobSpec("fw", strategy, {"Node": 2} if target else {"Worker": 2}, target=target,
                   env={"WANDB_PROJECT": "x"}, secret_env=["WANDB_API_KEY"])  # fmt: skip
    obj = build(spec)[0]
    if target:
        argv = obj["spec"]["trainer"]["command"]
    else:
        pod = obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
        argv = pod["containers"][0]["command"]
    pairs = {argv[i + 1] for i, a in enumerate(argv) if a == "-x"}
    names = {"WANDB_PROJECT", "WANDB_API_KEY", "JUPYTER_DDL_STRATEGY", "JUPYTER_DDL_JOB"}
    assert names <= pairs and "x" not in argv and not any("=x" in a for a in argv)


def test_config_gang_podgroup_operator_leaves_the_podgroup_to_the_operator():
    """With the operators started with their gang flags, the dry run (and a submit)
    writes no PodGroup and no scheduler name: only runPolicy.schedulingPolicy."""
    import yaml

    from jupyter_ddl.config import Config
    from jupyter_ddl.core.placement import GangScheduling
    from jupyter_ddl.manifests.dryrun import render_yaml

    spec = JobSpec(name="g", strategy="horovod", replicas={"Worker": 2},
                   gang=GangScheduling(scheduler="scheduler-plugins"))  # fmt: skip
    ours = [d for d in yaml.safe_load_all(render_yaml(spec, config=Config())) if d]
    theirs = [
        d
        for d in yaml.safe_load_all(render_yaml(spec, config=Config(gang_podgroup="operator")))
        if d
    ]
    assert "PodGroup" in [d["kind"] for d in ours]
    assert [d["kind"] for d in theirs] == ["MPIJob"], [d["kind"] for d in theirs]
    job = theirs[-1]
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2
    for replica in job["spec"]["mpiReplicaSpecs"].values():
        assert "schedulerName" not in replica["template"]["spec"]
    # a job's own option wins over the config
    mine = replace(spec, backend_options={"gang_podgroup": "client"})
    kinds = [
        d["kind"]
        for d in yaml.safe_load_all(render_yaml(mine, config=Config(gang_podgroup="operator")))
        if d
    ]
    assert "PodGroup" in kinds
