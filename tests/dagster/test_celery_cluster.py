"""Scale-out on real components: Redis, PostgreSQL and two dagster-celery workers.

The module starts a ``redis-server`` and a PostgreSQL server on loopback ports, a Dagster home
with ``docker/dagster.yaml`` (the deployment's instance config) and two Celery workers started
the way ``docker/compose.yaml`` starts them: each serves the general queue plus its training
node's queue and declares its node in ``HRM_WORKER_NODE``; node-a and node-b write their
epochs under different roots. On that cluster it cleans part of the demo corpus and trains the
tokenizer in process, tokenizes every partition with the Celery executor, evaluates the
sampled-epochs sensor and executes the runs it requests, then checks where every step ran and
what it wrote. Workers and servers run in their own process groups and are stopped by the
fixtures' teardown, also when a test or a fixture fails.

Every test runs on two clusters (the ``cluster`` fixture's parameter):

- ``local``: the data root and the raw root are one local folder every process reaches, as the
  shared volume of ``docker/compose.yaml`` (NFS on a real cluster);
- ``s3``: both roots are prefixes of a bucket on an S3-compatible server on loopback (moto,
  ``tests/support/s3_server.py``), reached through the standard AWS variables only. No folder
  is shared: every worker and the process that runs the cleaning has its own working
  directory, ``HRM_CACHE_DIR`` and ``TMPDIR``, as separate machines would (this process its
  own cache), and the tests check that none of them wrote data anywhere else.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import pytest
from conftest import REPO_ROOT
from support.s3_server import S3Server

from hrm_assets.common import settings
from hrm_assets.common.manifest import MANIFEST_FILE, verify_folder
from hrm_assets.defs.common.executor import (
    BACKEND_ENV,
    BROKER_ENV,
    EXECUTOR_ENV,
    GENERAL_QUEUE,
    WORKER_NODE_ENV,
)
from hrm_assets.defs.common.keys import cleaned_key, sampled_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.assets import NODE_TAG, build_sampled_asset
from hrm_assets.defs.sampled.inputs import FINGERPRINT_METADATA, FINGERPRINT_TAG
from hrm_assets.defs.sampled.sensors import SENSOR_NAME, build_sampled_epochs_sensor
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.demo import write_demo_corpus
from hrm_assets.sampling.training_nodes import TRAINING_NODES_ENV, load_training_nodes
from hrm_assets.tokenization.tokenize import ARRAY_FILES

pytestmark = pytest.mark.slow

NODES = ("node-a", "node-b")
# Seven cleaned files from four sources: enough partitions to keep both workers busy, few
# enough for the whole module to stay well under three minutes on two cores.
SOURCES = ("gsm8k_train", "math_train", "ampsmathematica", "numinamath")
VOCAB = 1024
PG_USER, PG_PASSWORD, PG_DB = "hrm", "hrm-test", "dagster"
# Where the data lives: one shared local folder, or a bucket and no shared folder at all.
VARIANTS = ("local", "s3")
# With object storage each process is a machine of its own: a folder with its working
# directory and its cache. The driver runs the cleaning and orchestrates runs (the code server's
# part); "test" is this process, which evaluates the sensor.
DRIVER_MACHINE, TEST_MACHINE = "driver", "test"
STARTUP_TIMEOUT = 60.0
RUN_TIMEOUT = 240.0

# Executes runs in a fresh process whose environment selects the cluster (Celery executor,
# PostgreSQL instance, the two nodes): the Definitions read it at import. A spec is either
# {"job", "tags", "assets"} for execute_job (the Celery executor needs a reconstructable job
# and a persistent instance, as `dagster job execute` uses them), or {"job", "in_process",
# "assets", "run_config"} for execute_in_process.
DRIVER = r"""
import json, sys
import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository
from hrm_assets.definitions import defs

instance = dg.DagsterInstance.get()
repository = ReconstructableRepository.for_module("hrm_assets.definitions", "defs")
for spec in json.loads(sys.argv[1]):
    assets = [dg.AssetKey(path) for path in spec["assets"]] if spec.get("assets") else None
    if spec.get("in_process"):
        result = defs.resolve_job_def(spec["job"]).execute_in_process(
            instance=instance, asset_selection=assets, run_config=spec.get("run_config")
        )
    else:
        job = ReconstructableJob(repository, spec["job"])
        result = dg.execute_job(
            job, instance=instance, tags=spec.get("tags"), asset_selection=assets
        )
    print("RUN " + json.dumps({"run_id": result.run_id, "success": result.success}), flush=True)
"""


# --------------------------------------------------------------------------- processes


def _missing(what: str) -> None:
    message = f"{what} not found: install the Debian packages redis-server and postgresql"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until(ready: Callable[[], bool], what: str, log: Path, timeout=STARTUP_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    raise TimeoutError(f"{what} not ready after {timeout:.0f}s; log:\n{tail}")


@dataclass
class Process:
    """A child in its own process group (so its children stop with it), logging to a file."""

    name: str
    args: list[str]
    log: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    stop_signal: int = signal.SIGTERM
    popen: subprocess.Popen | None = field(default=None, init=False)

    def start(self) -> Process:
        handle = open(self.log, "ab")  # noqa: SIM115 - the child keeps it open
        self.popen = subprocess.Popen(
            self.args,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,
        )
        handle.close()
        return self

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        if self.popen is None:
            return
        for sig in (self.stop_signal, signal.SIGKILL):
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.popen.wait(timeout=grace)
                # The group leader is gone; make sure no child of it lingers.
                os.killpg(self.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
            break


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        _missing("redis-server")
    import redis

    root = tmp_path_factory.mktemp("redis")
    port = _free_port()
    server = Process(
        "redis",
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(root),
        ],
        root / "redis.log",
    )
    try:
        server.start()

        def ping() -> bool:
            try:
                return bool(redis.Redis(host="127.0.0.1", port=port).ping())
            except redis.exceptions.ConnectionError:
                return False

        _wait_until(ping, "redis-server", server.log)
        yield f"redis://127.0.0.1:{port}"
    finally:
        server.stop()


def _postgres_bin() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="module")
def postgres() -> Iterator[dict[str, str]]:
    """A throwaway cluster on a free port; the DAGSTER_PG_* variables docker/dagster.yaml reads.

    PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user that
    Debian's package creates, in a private temporary folder it owns.
    """
    bindir = _postgres_bin()
    if bindir is None:
        _missing("PostgreSQL (initdb)")
    import psycopg2

    as_user: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="hrm-pg-"))
    if os.geteuid() == 0:
        import pwd

        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            _missing("the postgres user")
        os.chown(root, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    (root / "password").write_text(PG_PASSWORD)
    if as_user:
        os.chown(root / "password", account.pw_uid, account.pw_gid)
    server = None
    try:
        subprocess.run(
            [
                *as_user,
                str(bindir / "initdb"),
                "-D",
                str(root / "data"),
                "-U",
                PG_USER,
                f"--pwfile={root / 'password'}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
        )
        server = Process(
            "postgres",
            [
                *as_user,
                str(bindir / "postgres"),
                "-D",
                str(root / "data"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-k",
                str(root),
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=200",
            ],
            root / "server.log",
            stop_signal=signal.SIGINT,  # fast shutdown: don't wait for clients to leave
        )
        server.start()

        def connect(db: str = "postgres"):
            return psycopg2.connect(
                host="127.0.0.1", port=port, user=PG_USER, password=PG_PASSWORD, dbname=db
            )

        def accepting() -> bool:
            try:
                connect().close()
                return True
            except psycopg2.OperationalError:
                return False

        _wait_until(accepting, "PostgreSQL", server.log)
        admin = connect()
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {PG_DB}")
        admin.close()
        yield {
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(port),
            "DAGSTER_PG_USER": PG_USER,
            "DAGSTER_PG_PASSWORD": PG_PASSWORD,
            "DAGSTER_PG_DB": PG_DB,
        }
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _database(postgres: dict[str, str], name: str) -> dict[str, str]:
    """A new, empty database on the module's server: the DAGSTER_PG_* variables naming it."""
    import psycopg2

    admin = psycopg2.connect(
        host=postgres["DAGSTER_PG_HOST"],
        port=postgres["DAGSTER_PG_PORT"],
        user=postgres["DAGSTER_PG_USER"],
        password=postgres["DAGSTER_PG_PASSWORD"],
        dbname=postgres["DAGSTER_PG_DB"],
    )
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    admin.close()
    return {**postgres, "DAGSTER_PG_DB": name}


# --------------------------------------------------------------------------- where data lives


@dataclass(frozen=True)
class FolderRoot:
    """A root that is a local folder (shared by every process of the cluster)."""

    path: Path

    @property
    def url(self) -> str:
        return str(self.path)

    def files(self) -> list[str]:
        """Every file under the root, as sorted relative POSIX paths."""
        if not self.path.is_dir():
            return []
        found = (path for path in self.path.rglob("*") if path.is_file())
        return sorted(path.relative_to(self.path).as_posix() for path in found)

    def read(self, relative: str) -> bytes:
        return (self.path / relative).read_bytes()

    def put_folder(self, folder: Path) -> None:
        shutil.copytree(folder, self.path, dirs_exist_ok=True)


@dataclass(frozen=True)
class BucketRoot:
    """A root that is a prefix of a bucket, inspected with the test's own client (boto3), not
    with the code under test."""

    server: S3Server
    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def files(self) -> list[str]:
        start = len(self.prefix) + 1
        return [key[start:] for key in self.server.keys(self.bucket, f"{self.prefix}/")]

    def read(self, relative: str) -> bytes:
        response = self.server.client().get_object(
            Bucket=self.bucket, Key=f"{self.prefix}/{relative}"
        )
        return response["Body"].read()

    def put_folder(self, folder: Path) -> None:
        client = self.server.client()
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                key = f"{self.prefix}/{path.relative_to(folder).as_posix()}"
                client.upload_file(str(path), self.bucket, key)


Root = FolderRoot | BucketRoot


# --------------------------------------------------------------------------- the cluster


def _machine_cache(root: Path, machine: str) -> Path:
    """``HRM_CACHE_DIR`` of a machine of the object-storage cluster: in the folder it owns."""
    return root / machine / "cache"


def _machine_scratch(root: Path, machine: str) -> Path:
    """``TMPDIR`` of a machine of the object-storage cluster (where the Rust core stages a
    tokenized folder before publishing it): in the folder it owns."""
    return root / machine / "tmp"


@dataclass
class Cluster:
    variant: str  # one of VARIANTS
    root: Path
    env: dict[str, str]
    instance: dg.DagsterInstance
    nodes_file: Path
    data_paths: DataPaths
    data: Root
    raw: Root
    workers: dict[str, str] = field(default_factory=dict)  # node -> Celery worker name
    processes: list[Process] = field(default_factory=list)

    def node_output(self, node: str) -> Path:
        return self.root / node / "shm" / "sampled"

    def machine_env(self, machine: str) -> dict[str, str]:
        """The environment of a process on ``machine``: with object storage, its own cache
        and scratch folders."""
        if self.variant == "local":
            return dict(self.env)
        scratch = _machine_scratch(self.root, machine)
        scratch.mkdir(parents=True, exist_ok=True)
        return {
            **self.env,
            settings.CACHE_DIR_ENV: str(_machine_cache(self.root, machine)),
            "TMPDIR": str(scratch),
        }

    def machine_cwd(self, machine: str) -> Path:
        """Where a process on ``machine`` runs: the checkout when the data folder is shared,
        else the machine's own folder (so that a relative ``./data`` would land there)."""
        if self.variant == "local":
            return REPO_ROOT
        folder = self.root / machine
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def write_raw(self, staging: Path) -> None:
        """The demo corpus of the module's sources, written under ``staging`` and put into the
        raw root."""
        write_demo_corpus(staging, SOURCES)
        self.raw.put_folder(staging)

    def drive(self, specs: list[dict], label: str) -> subprocess.Popen:
        log = open(self.root / f"driver-{label}.log", "wb")  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, "-c", DRIVER, json.dumps(specs)],
            stdout=subprocess.PIPE,
            stderr=log,
            env=self.machine_env(DRIVER_MACHINE),
            cwd=self.machine_cwd(DRIVER_MACHINE),
            start_new_session=True,
        )
        log.close()
        process.label = label  # type: ignore[attr-defined]
        return process

    def finish(self, drivers: list[subprocess.Popen]) -> list[dict]:
        """Every run the drivers report; fails with the driver's log if one of them fails."""
        runs = []
        for process in drivers:
            try:
                out, _ = process.communicate(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                out, _ = process.communicate()
            log = (self.root / f"driver-{process.label}.log").read_text(errors="replace")
            assert process.returncode == 0, f"driver {process.label} failed:\n{log[-4000:]}"
            for line in out.decode().splitlines():
                if line.startswith("RUN "):
                    runs.append(json.loads(line[4:]))
        failed = [run for run in runs if not run["success"]]
        assert not failed, f"failed runs: {failed}; logs under {self.root}"
        return runs

    def sensor_tick(self):
        """The sampled-epochs sensor for the cluster's nodes, evaluated against its instance."""
        nodes = load_training_nodes(self.nodes_file)
        sensor = build_sampled_epochs_sensor(nodes)
        definitions = dg.Definitions(
            assets=[build_sampled_asset(node) for node in nodes],
            sensors=[sensor],
            resources={"data_paths": self.data_paths},
        )
        # Dagster 1.13's build_sensor_context does not take resources from `definitions`.
        context = dg.build_sensor_context(
            instance=self.instance,
            definitions=definitions,
            resources={"data_paths": self.data_paths},
        )
        return definitions.resolve_sensor_def(SENSOR_NAME).evaluate_tick(context)


def _write_nodes_file(root: Path) -> Path:
    path = root / "training_nodes.yaml"
    lines = ["nodes:"]
    for node in NODES:
        output = root / node / "shm" / "sampled"
        lines += [f"  - name: {node}", f"    queue: {node}", f"    output_path: {output}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _start_worker(cluster: Cluster, node: str) -> Process:
    """``dagster-celery worker start`` as docker/compose.yaml runs it, one pool process."""
    env = {**cluster.machine_env(node), WORKER_NODE_ENV: node}
    process = Process(
        node,
        [
            "dagster-celery",
            "worker",
            "start",
            "-A",
            "dagster_celery.app",
            "-n",
            node,
            # One -q with a comma list: repeated -q options reach celery as repeated -Q, of which
            # celery keeps only the last.
            "-q",
            f"{GENERAL_QUEUE},{node}",
            "-y",
            str(REPO_ROOT / "docker" / "celery.yaml"),
            "--",
            "--concurrency=1",
            "--without-mingle",
            "--without-gossip",
        ],
        cluster.root / f"worker-{node}.log",
        env=env,
        cwd=cluster.machine_cwd(node),
    )
    return process.start()


@pytest.fixture(scope="module", params=VARIANTS)
def cluster(request, tmp_path_factory, redis_url, postgres) -> Iterator[Cluster]:
    variant = request.param
    root = tmp_path_factory.mktemp(f"cluster-{variant}")
    home = root / "home"
    home.mkdir()
    shutil.copy(REPO_ROOT / "docker" / "dagster.yaml", home / "dagster.yaml")
    if variant == "local":
        data, raw = FolderRoot(root / "data"), FolderRoot(root / "raw")
        storage_env: dict[str, str] = {}
    else:
        server = request.getfixturevalue("s3_server")
        bucket = server.create_bucket("hrm-cluster")
        data, raw = BucketRoot(server, bucket, "data"), BucketRoot(server, bucket, "raw")
        storage_env = server.environment()
    data_paths = DataPaths(
        data_root=data.url,
        raw_root=raw.url,
        prefix_config_path=str(settings.default_prefix_config_path()),
    )
    nodes_file = _write_nodes_file(root)
    # Each variant its own database and Redis databases: the instance starts empty.
    database = _database(postgres, f"{PG_DB}_{variant}")
    first_redis_db = 2 * VARIANTS.index(variant)
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in (WORKER_NODE_ENV, settings.CACHE_DIR_ENV)
        },
        **database,
        **storage_env,
        "DAGSTER_HOME": str(home),
        EXECUTOR_ENV: "celery",
        BROKER_ENV: f"{redis_url}/{first_redis_db}",
        BACKEND_ENV: f"{redis_url}/{first_redis_db + 1}",
        settings.DATA_ROOT_ENV: data.url,
        settings.RAW_ROOT_ENV: raw.url,
        TRAINING_NODES_ENV: str(nodes_file),
        # No declared sources, whatever the working directory holds: every process loads the
        # same definitions.
        settings.SOURCES_YAML_ENV: "",
    }
    # This process reads the instance and evaluates the sensor: a machine of the cluster too.
    own_env = {**database, **storage_env}
    if variant == "s3":
        own_env[settings.CACHE_DIR_ENV] = str(_machine_cache(root, TEST_MACHINE))
    with pytest.MonkeyPatch.context() as patch:
        for name, value in own_env.items():
            patch.setenv(name, value)
        instance = dg.DagsterInstance.from_config(str(home))
        made = Cluster(variant, root, env, instance, nodes_file, data_paths, data, raw)
        try:
            made.processes = [_start_worker(made, node) for node in NODES]
            yield made
        finally:
            for process in made.processes:
                process.stop()
            instance.dispose()


def _wait_for_workers(cluster: Cluster) -> None:
    for process in cluster.processes:

        def ready(process=process) -> bool:
            if not process.running():
                raise RuntimeError(
                    f"worker {process.name} exited:\n{process.log.read_text()[-3000:]}"
                )
            return " ready." in process.log.read_text(errors="replace")

        _wait_until(ready, f"worker {process.name}", process.log)
        line = next(
            line for line in process.log.read_text().splitlines() if line.endswith(" ready.")
        )
        cluster.workers[process.name] = line.split()[-2]  # "... node-a@host ready."


@dataclass
class Outcome:
    tokenize_runs: list[str]
    requests: list[dg.RunRequest]
    sample_runs: list[str]
    sensor_after: object
    seconds: dict[str, float]


def _run_pipeline(cluster: Cluster) -> Outcome:
    seconds = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hrm-demo-raw-") as staging:
        cluster.write_raw(Path(staging))
    prepare = cluster.drive(
        [
            {
                "job": "clean_and_train_tokenizer",
                "in_process": True,
                "assets": [cleaned_key(name).path for name in SOURCES] + [["tokenizer"]],
                "run_config": {"ops": {"tokenizer": {"config": {"vocab_size": VOCAB}}}},
            }
        ],
        "prepare",
    )
    cluster.finish([prepare])
    seconds["clean_and_tokenizer"] = time.monotonic() - started
    _wait_for_workers(cluster)

    started = time.monotonic()
    work = [
        {"job": f"tokenize_{name}", "tags": {"dagster/partition": key}}
        for name in SOURCES
        for key in cluster.instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[name].name)
    ]
    assert len(work) >= 6, work
    # Two launchers at once, as the daemon launches a backfill's runs side by side.
    drivers = [cluster.drive(work[index::2], f"tokenize-{index}") for index in range(2)]
    tokenize_runs = [run["run_id"] for run in cluster.finish(drivers)]
    seconds["tokenize_on_celery"] = time.monotonic() - started

    started = time.monotonic()
    tick = cluster.sensor_tick()
    requests = list(tick.run_requests or [])
    assert requests, f"the sensor requested nothing: {tick.skip_message}"
    drivers = [
        cluster.drive(
            [
                {
                    "job": "sample_epochs",
                    "assets": [key.path for key in request.asset_selection],
                    # What the daemon adds to a sensor's run.
                    "tags": {
                        **request.tags,
                        "dagster/run_key": request.run_key,
                        "dagster/sensor_name": SENSOR_NAME,
                    },
                }
            ],
            f"sample-{request.tags[NODE_TAG]}",
        )
        for request in requests
    ]
    sample_runs = [run["run_id"] for run in cluster.finish(drivers)]
    seconds["sample_on_celery"] = time.monotonic() - started
    return Outcome(tokenize_runs, requests, sample_runs, cluster.sensor_tick(), seconds)


@pytest.fixture(scope="module")
def outcome(cluster) -> Outcome:
    result = _run_pipeline(cluster)
    print(f"\ncluster timings: { {k: round(v, 1) for k, v in result.seconds.items()} }")
    return result


def _celery_workers_by_step(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """Step key -> the Celery worker dagster-celery reports having executed it."""
    workers = {}
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        metadata = event.engine_event_data.metadata if event.engine_event_data else {}
        if event.step_key and "Celery worker" in metadata:
            workers[event.step_key] = metadata["Celery worker"].value
    return workers


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# --------------------------------------------------------------------------- the tests


def test_tokenization_steps_spread_over_both_workers(cluster, outcome):
    tokenize_steps = {f"tokenized_{name}" for name in SOURCES}
    placed = {}
    for run_id in outcome.tokenize_runs:
        run = cluster.instance.get_run_by_id(run_id)
        assert run.status == dg.DagsterRunStatus.SUCCESS
        placed.update(
            {
                (run.tags["dagster/partition"], step): worker
                for step, worker in _celery_workers_by_step(cluster.instance, run_id).items()
                if step in tokenize_steps
            }
        )
    assert len(placed) == len(outcome.tokenize_runs)  # every partition ran on a worker
    assert set(placed.values()) == set(cluster.workers.values()), placed
    # Every registered partition is materialized, by those runs.
    for name in SOURCES:
        keys = cluster.instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[name].name)
        assert cluster.instance.get_materialized_partitions(tokenized_key(name)) == set(keys)


def test_sensor_requests_one_run_per_node(outcome):
    assert sorted(request.tags[NODE_TAG] for request in outcome.requests) == list(NODES)
    for request in outcome.requests:
        node = request.tags[NODE_TAG]
        assert request.asset_selection == [sampled_key(node)]
        assert request.run_key == f"{node}:{request.tags[FINGERPRINT_TAG]}"
    assert len({request.run_key for request in outcome.requests}) == len(NODES)


def test_each_nodes_epochs_written_by_that_nodes_worker(cluster, outcome):
    for node in NODES:
        event = cluster.instance.get_latest_materialization_event(sampled_key(node))
        metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()}
        worker = cluster.workers[node]
        assert metadata["worker_name"] == worker
        assert metadata["worker_queue"] == node
        assert metadata["worker_node"] == node
        assert metadata["output_path"] == str(cluster.node_output(node))
        run = cluster.instance.get_run_by_id(event.run_id)
        assert event.run_id in outcome.sample_runs
        assert run.tags[NODE_TAG] == node
        assert run.tags["dagster/sensor_name"] == SENSOR_NAME
        assert run.tags[FINGERPRINT_TAG] == metadata[FINGERPRINT_METADATA]
        # dagster-celery's own record of where the step ran agrees with the metadata.
        step = sampled_key(node).to_python_identifier()
        assert _celery_workers_by_step(cluster.instance, event.run_id)[step] == worker
    # Nothing fell back to the data root.
    assert not [name for name in cluster.data.files() if name.startswith("sampled/")]


def test_both_nodes_hold_byte_identical_epochs(cluster, outcome):
    trees = {node: _tree(cluster.node_output(node)) for node in NODES}
    first = trees[NODES[0]]
    assert "tokens.npy" in first and "epoch_0/inst_start.npy" in first
    assert len(first["tokens.npy"]) > 1000
    for node in NODES[1:]:
        assert trees[node].keys() == first.keys()
        differing = [name for name in first if trees[node][name] != first[name]]
        assert not differing, f"{node} differs from {NODES[0]} in {differing}"


def test_sensor_requests_nothing_once_nodes_are_current(outcome):
    assert not outcome.sensor_after.run_requests
    assert "node(s) hold epochs of the current" in outcome.sensor_after.skip_message


def test_data_root_holds_what_every_stage_wrote(cluster, outcome):
    """The cleaned files, the tokenizer and every partition's tokenized folder, read back from
    the data root itself (the bucket, for object storage): each folder's manifest lists the
    five arrays with the sizes and SHA-256 of the bytes stored."""
    files = cluster.data.files()
    assert "tokenizer/tokenizer.json" in files, files
    cleaned = [name for name in files if name.startswith("cleaned/")]
    for name in SOURCES:
        keys = cluster.instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[name].name)
        assert keys and any(name in path for path in cleaned), (name, cleaned)
        for key in keys:
            manifest = json.loads(cluster.data.read(f"tokenized/{key}/{MANIFEST_FILE}"))
            assert sorted(manifest["files"]) == sorted(ARRAY_FILES), key
            for array, entry in manifest["files"].items():
                stored = cluster.data.read(f"tokenized/{key}/{array}")
                assert len(stored) == entry["size"], (key, array)
                assert hashlib.sha256(stored).hexdigest() == entry["sha256"], (key, array)
    # Each node's epochs pass hrm-verify where the node keeps them.
    for node in NODES:
        report = verify_folder(cluster.node_output(node))
        assert report.ok, report.problems


def test_every_machine_writes_data_only_where_the_deployment_puts_it(cluster, outcome):
    """Local: the shared data and raw folders. Object storage: the bucket, and on each machine
    only its own cache and (on a training node) its epochs; no common local data path."""
    shared = {"home"}  # the instance's DAGSTER_HOME (Dagster's logs), not data
    if cluster.variant == "local":
        shared |= {"data", "raw"}
    machines = {*NODES, DRIVER_MACHINE, TEST_MACHINE}
    written = [path.relative_to(cluster.root) for path in cluster.root.rglob("*") if path.is_file()]
    stray = [
        path for path in written if len(path.parts) > 1 and path.parts[0] not in shared | machines
    ]
    assert not stray, stray
    for node in NODES:  # a node: its epochs, and with object storage its cache
        elsewhere = [
            path
            for path in written
            if path.parts[0] == node and path.parts[1] not in ("shm", "cache")
        ]
        assert not elsewhere, elsewhere
    if cluster.variant == "local":
        return
    assert not (cluster.root / "data").exists() and not (cluster.root / "raw").exists()
    # Every staged folder was removed once published: scratch folders hold nothing.
    assert not [path for path in written if len(path.parts) > 1 and path.parts[1] == "tmp"]
    caches = [process.env[settings.CACHE_DIR_ENV] for process in cluster.processes]
    assert sorted(caches) == sorted(str(_machine_cache(cluster.root, node)) for node in NODES)
    scratch = [process.env["TMPDIR"] for process in cluster.processes]
    assert sorted(scratch) == sorted(str(_machine_scratch(cluster.root, node)) for node in NODES)
    for process in cluster.processes:
        assert process.env[settings.DATA_ROOT_ENV] == cluster.data.url
        assert process.env[settings.RAW_ROOT_ENV] == cluster.raw.url
        assert process.cwd == cluster.root / process.name
    # Each node sampled from a copy of the bucket's tokenized folders in its own cache.
    keys = [
        key
        for name in SOURCES
        for key in cluster.instance.get_dynamic_partitions(TOKENIZED_PARTITIONS[name].name)
    ]
    for node in NODES:
        cache = _machine_cache(cluster.root, node)
        for key in keys:
            copies = list(cache.rglob(f"tokenized/{key}/{MANIFEST_FILE}"))
            assert len(copies) == 1, (node, key, copies)
            stored = cluster.data.read(f"tokenized/{key}/{MANIFEST_FILE}")
            assert copies[0].read_bytes() == stored, (node, key)
