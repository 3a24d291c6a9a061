"""Bad job descriptions: each gives one line naming the field and what to do."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jupyter_ddl.core import contract, kinds, names
from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.models import GangScheduling, JobSpec, Resources, Toleration, VolumeMount
from jupyter_ddl.validation import problems, validate


def spec(strategy: str = "torch-ddp", name: str = "job", **kw) -> JobSpec:
    return JobSpec(name=name, strategy=strategy, **kw)


GPU = Resources(gpu=1)

# (id, spec, fragment the message must contain, field the message must start with)
CASES = [
    ("unknown-strategy", spec("torch-fsdp"), "choose one of: tf-mirrored", "strategy"),
    ("name-uppercase", spec(name="MyJob"), "is not a DNS-1035 label", "name"),
    ("name-underscore", spec(name="my_job"), "is not a DNS-1035 label", "name"),
    ("name-starts-digit", spec(name="1job"), "start with a letter", "name"),
    ("name-empty", spec(name=""), "has no name", "name"),
    ("name-too-long-with-suffix", spec(name="a" * 55, replicas={"Worker": 12}), "shorten the name to at most 53", "name"),
    ("name-too-long-mpi", spec("horovod", name="h" * 56, replicas={"Worker": 3}), "'" + "h" * 56 + "-worker-2'", "name"),
    ("name-too-long-trainjob", spec(name="t" * 50, target="TrainJob", replicas={"Node": 10}), "-node-0-9-xxxxx' (65 > 63", "name"),
    ("negative-count", spec(replicas={"Worker": -1}), "-1 is negative", "replicas.Worker"),
    ("count-not-int", spec(replicas={"Worker": "2"}), "not a whole number", "replicas.Worker"),
    ("master-not-one", spec(replicas={"Master": 2}), "needs exactly 1 Master, got 2", "replicas.Master"),
    ("ps-job-without-ps", spec("tf-parameter-server", replicas={"PS": 0}), "needs at least 1 PS, got 0", "replicas.PS"),
    ("mwms-with-ps", spec("tf-multi-worker-mirrored", replicas={"PS": 1}), "has no PS role", "replicas.PS"),
    ("mirrored-two-workers", spec("tf-mirrored", replicas={"Worker": 2}), "needs exactly 1 Worker", "replicas.Worker"),
    ("elastic-zero-workers", spec("torch-elastic", replicas={"Worker": 0}), "needs at least 1 Worker", "replicas.Worker"),
    ("horovod-two-launchers", spec("horovod", replicas={"Launcher": 2}), "exactly 1 Launcher", "replicas.Launcher"),
    ("gpu-on-ps", spec("tf-parameter-server", resources={"PS": GPU}), "cannot use accelerators", "resources.PS.gpu"),
    ("gpu-on-launcher", spec("horovod", resources={"Launcher": GPU}), "cannot use accelerators", "resources.Launcher.gpu"),
    ("negative-gpu", spec(default_resources=Resources(gpu=-1)), "-1 is negative", "default_resources.gpu"),
    ("bad-cpu", spec(default_resources=Resources(cpu="two")), "not a Kubernetes quantity", "default_resources.cpu"),
    ("bad-memory", spec(default_resources=Resources(memory="4 GB")), "4Gi or 512Mi", "default_resources.memory"),
    ("bad-gpu-resource", spec(default_resources=Resources(gpu=1, gpu_resource="gpu")), "vendor-qualified", "default_resources.gpu_resource"),
    ("resources-for-missing-role", spec(resources={"PS": GPU}), "has no PS role", "resources.PS"),
    ("tpu-without-tpu", spec("tf-tpu"), "needs a TPU", "resources.tpu"),
    ("tpu-on-gpu-strategy", spec("tf-mirrored", default_resources=Resources(tpu=8)), "does not use TPUs", "resources.tpu"),
    ("nproc-with-dp", spec("torch-dp", nproc_per_node=2), "drives every GPU from one process", "nproc_per_node"),
    ("nproc-zero", spec(nproc_per_node=0), "below 1", "nproc_per_node"),
    ("nproc-on-tf", spec("tf-mirrored", nproc_per_node=2), "only PyTorch strategies", "nproc_per_node"),
    ("unknown-dist-backend", spec(dist_backend="ucc"), "choose one of: gloo, nccl, mpi", "dist_backend"),
    ("nccl-without-gpu", spec(dist_backend="nccl"), "nccl needs a GPU", "dist_backend"),
    ("dist-backend-on-tf", spec("tf-multi-worker-mirrored", dist_backend="gloo"), "no distributed backend choice", "dist_backend"),
    ("s10_7-mpi-restart-always", spec("horovod", restart_policy="Always"), "an MPIJob refuses Always", "restart_policy"),
    ("mpi-restart-exitcode", spec("horovod", restart_policy="ExitCode"), "use Never or OnFailure", "restart_policy"),
    ("unknown-restart-policy", spec(restart_policy="Sometimes"), "unknown policy 'Sometimes'", "restart_policy"),
    ("s10_8-trainjob-for-tf", spec("tf-multi-worker-mirrored", target="TrainJob"), "cannot run as a TrainJob", "target"),
    ("trainjob-for-horovod", spec("horovod", target="TrainJob"), "cannot run as a TrainJob", "target"),
    ("unknown-target", spec(target="JobSet"), "unknown target 'JobSet'", "target"),
    ("runtime-ref-without-trainjob", spec(runtime_ref="torch-distributed"), "only a TrainJob", "runtime_ref"),
    ("trainjob-restart-policy", spec(target="TrainJob", restart_policy="ExitCode"), "Jobs refuse ExitCode", "restart_policy"),
    ("trainjob-reserved-env", spec(target="TrainJob", env={"PET_NNODES": "4"}), "operator sets PET_NNODES", "env.PET_NNODES"),
    ("operator-env-rank", spec(env={"RANK": "0"}), "operator sets RANK", "env.RANK"),
    ("operator-env-tf-config", spec("tf-multi-worker-mirrored", env={"TF_CONFIG": "{}"}), "operator sets TF_CONFIG", "env.TF_CONFIG"),
    ("negative-backoff", spec(backoff_limit=-1), "below 0", "backoff_limit"),
    ("zero-deadline", spec(active_deadline_seconds=0), "below 1", "active_deadline_seconds"),
    ("negative-ttl", spec(ttl_seconds_after_finished=-5), "below 0", "ttl_seconds_after_finished"),
    ("gang-min-too-big", spec(gang=GangScheduling(min_available=5)), "more than the job's 2 replicas", "gang.min_available"),
    ("mpi-gang-counts-launcher", spec("horovod", replicas={"Worker": 2}, gang=GangScheduling(min_available=3)), "counts the launcher", "gang.min_available"),
    ("gang-min-zero", spec(gang=GangScheduling(min_available=0)), "below 1", "gang.min_available"),
    ("gang-unknown-scheduler", spec(gang=GangScheduling(scheduler="kueue")), "choose volcano or scheduler-plugins", "gang.scheduler"),
    ("gang-queue-on-coscheduling", spec(gang=GangScheduling(scheduler="scheduler-plugins", queue="q")), "ignores queue", "gang.queue"),
    ("gang-on-trainjob", spec(target="TrainJob", gang=GangScheduling()), "podGroupPolicy", "gang"),
    ("bad-env-name", spec(env={"1X": "v"}), "not a valid variable name", "env.1X"),
    ("bad-secret-env-name", spec(secret_env=["MY TOKEN"]), "not a valid variable name", "secret_env.MY TOKEN"),
    ("env-and-secret", spec(env={"TOKEN": "x"}, secret_env=["TOKEN"]), "keep only one", "env.TOKEN"),
    ("bad-image", spec(image="my image:1"), "not an image reference", "image"),
    ("empty-command", spec(command=[]), "command is empty", "command"),
    ("slots-on-torch", spec(slots_per_worker=4), "only MPI strategies", "slots_per_worker"),
    ("slots-zero", spec("horovod", slots_per_worker=0), "below 1", "slots_per_worker"),
    ("elastic-min-over-max", spec("torch-elastic", backend_options={"elastic_min_replicas": 4, "elastic_max_replicas": 2}), "exceeds", "backend_options.elastic_min_replicas"),
    ("nccl-process-without-gpu", spec(nproc_per_node=2, default_resources=GPU), "NCCL needs one GPU per process", "nproc_per_node"),
    ("bad-node-selector", spec(node_selector={"a/b/c": "x"}), "not a valid label key", "node_selector.a/b/c"),
    ("bad-label-value", spec(labels={"team": "a b"}), "not a valid label value", "labels.team"),
    ("reserved-label", spec(labels={"jupyter-ddl.io/managed": "no"}), "prefix is reserved", "labels.jupyter-ddl.io/managed"),
    ("toleration-exists-with-value", spec(tolerations=[Toleration(key="k", operator="Exists", value="v")]), "takes no value", "tolerations[0].value"),
    ("toleration-bad-effect", spec(tolerations=[Toleration(key="k", value="v", effect="Sometimes")]), "unknown effect", "tolerations[0].effect"),
    ("toleration-seconds-not-noexecute", spec(tolerations=[Toleration(key="k", value="v", effect="NoSchedule", toleration_seconds=5)]), "only a NoExecute", "tolerations[0].toleration_seconds"),
    ("volume-relative-path", spec(volumes=[VolumeMount("data", "data")]), "is not absolute", "volumes[0].mount_path"),
    ("volume-bad-claim", spec(volumes=[VolumeMount("Data_1", "/data")]), "not a valid claim name", "volumes[0].claim_name"),
    ("volume-same-path", spec(volumes=[VolumeMount("a", "/d"), VolumeMount("b", "/d")]), "mounted twice", "volumes[1].mount_path"),
    ("bad-namespace", spec(namespace="Team_A"), "not a DNS-1123 label", "namespace"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "bad", "fragment", "field"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_names_field_and_fix(case, bad, fragment, field):
    found = problems(bad)
    hits = [p for p in found if fragment in p]
    assert hits, f"{case}: no problem mentions {fragment!r}: {found}"
    message = hits[0]
    assert message.startswith(field + ":"), message
    assert "\n" not in message
    assert ";" in message, f"no next step in {message!r}"
    with pytest.raises(ValidationError) as err:
        validate(bad)
    assert message in err.value.problems


def test_enough_bad_input_cases():
    assert len(CASES) >= 25


def test_every_problem_is_reported_at_once():
    bad = spec(name="Bad_Name", replicas={"Worker": -1}, env={"1X": "v"}, backoff_limit=-1)
    fields = [p.split(":", 1)[0] for p in problems(bad)]
    assert fields == ["name", "replicas.Worker", "backoff_limit", "env.1X"]
    with pytest.raises(ValidationError) as err:
        validate(bad)
    assert len(err.value.problems) == 4
    assert str(err.value).count(";") >= 4  # one line, every problem in it


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_strategy_default_is_valid(name):
    s = JobSpec(name="ok", strategy=name)
    if CATALOG[name].needs_tpu:
        s = replace(s, default_resources=Resources(tpu=8))
    assert problems(s) == []


@pytest.mark.parametrize(
    "good",
    [
        spec(replicas={"Worker": 3}, default_resources=Resources(gpu=2, cpu="4", memory="8Gi"), dist_backend="nccl"),
        spec(target="TrainJob", replicas={"Node": 4}, nproc_per_node=2),
        spec("deepspeed", target="TrainJob", runtime_ref="deepspeed-distributed"),
        spec("torch-elastic", backend_options={"elastic_min_replicas": 1, "elastic_max_replicas": 4}),
        spec("tf-parameter-server", replicas={"Worker": 4, "PS": 2, "Evaluator": 1}, restart_policy="ExitCode"),
        spec("horovod", slots_per_worker=2, restart_policy="OnFailure", gang=GangScheduling(queue="research", min_available=2)),
        spec(tolerations=[Toleration(operator="Exists")], volumes=[VolumeMount("data", "/data", read_only=True)]),
        spec(name="a" * 53, replicas={"Worker": 12}),  # exactly 63 with "-worker-11"
    ],
)  # fmt: skip
def test_good_specs_pass(good):
    assert problems(good) == []


# -- names ---------------------------------------------------------------------------
def test_generated_names_fit_every_kind_with_many_replicas():
    for nb in ("Work/Experiments/ResNet 50 — Final (copy).ipynb", None, "12345.ipynb", "x" * 200):
        name = names.generate_name(nb, "cell-17")
        assert names.is_dns1035_label(name), name
        assert len(name) <= names.GENERATED_MAX
        for strategy in ("torch-ddp", "horovod", "tf-parameter-server"):
            s = JobSpec(name, strategy, replicas={"Worker": 99})
            assert problems(s) == [], (name, strategy)
        s = JobSpec(name, "torch-ddp", target="TrainJob", replicas={"Node": 99})
        assert problems(s) == []


def test_generated_name_is_readable_and_random():
    a = names.generate_name("notebooks/MNIST Training.ipynb", "train", rand="ab1cd")
    assert a == "mnist-training-train-ab1cd"
    assert names.generate_name("a.ipynb") != names.generate_name("a.ipynb")
    assert names.generate_name(None, None, rand="zz9zz") == "ddl-zz9zz"


def test_derived_names_follow_the_operators():
    assert kinds.PYTORCHJOB.derived_names("j", {"Master": 1, "Worker": 3}) == [
        "j-master-0",
        "j-worker-2",
    ]
    assert kinds.MPIJOB.derived_names("j", {"Launcher": 1, "Worker": 2}) == [
        "j-launcher",
        "j-worker-1",
    ]
    assert kinds.TRAINJOB.derived_names("j", {"Node": 4}) == ["j-node-0-3-xxxxx"]
    # a deepspeed TrainJob's launcher pod has the longest name (§4.2)
    assert names.longest_derived("j", kinds.TRAINJOB, {"Launcher": 1, "Node": 12}) == (
        "j-launcher-0-0-xxxxx"
    )


def test_operator_env_names_cover_the_contract():
    torch = contract.operator_env_names(JobSpec("j", "torch-ddp"))
    assert {"MASTER_ADDR", "RANK", "WORLD_SIZE", "PET_NNODES", "PYTHONUNBUFFERED"} <= torch
    assert (
        contract.operator_env_names(JobSpec("j", "tf-mirrored")) == set()
    )  # one replica: no TF_CONFIG
