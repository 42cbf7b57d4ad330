"""docker/: the compose deployment agrees with the project's settings and the tested cluster.

Docker cannot run here, so every service's command is parsed by the installed command-line
interface it names (dagster, dagster-webserver, dagster-daemon, dagster-celery), with the
container paths it mentions mapped back to the repository files the Dockerfile copies there;
every environment variable is one the project or its instance config reads; the workers match
the training nodes the image is configured with, queue for queue.
"""

from __future__ import annotations

import re
import shlex
import warnings
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse

import click
import pytest
import yaml
from conftest import REPO_ROOT

from hrm_assets.common import settings
from hrm_assets.defs.common.executor import (
    BACKEND_ENV,
    BROKER_ENV,
    EXECUTOR_ENV,
    EXECUTOR_MODES,
    GENERAL_QUEUE,
    WORKER_NODE_ENV,
)
from hrm_assets.sampling.training_nodes import TRAINING_NODES_ENV, load_training_nodes

DOCKER = REPO_ROOT / "docker"
INFRA = {"postgres", "redis"}
DAGSTER_SERVICES = {"code-server", "webserver", "daemon"}
PROJECT_ENV = {
    settings.DATA_ROOT_ENV,
    settings.RAW_ROOT_ENV,
    TRAINING_NODES_ENV,
    EXECUTOR_ENV,
    BROKER_ENV,
    BACKEND_ENV,
    WORKER_NODE_ENV,
    "DAGSTER_HOME",
}


def _clis() -> dict[str, click.Command]:
    import dagster._cli
    import dagster._daemon.cli
    import dagster_celery.cli
    import dagster_webserver.cli

    return {
        "dagster": dagster._cli.cli,
        "dagster-webserver": dagster_webserver.cli.cli,
        "dagster-daemon": dagster._daemon.cli.cli,
        "dagster-celery": dagster_celery.cli.main,
    }


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict[str, dict]:
    return compose["services"]


def _stages(dockerfile: str) -> list[list[str]]:
    """Instructions per build stage, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", dockerfile)
    stages: list[list[str]] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


@pytest.fixture(scope="module")
def stages() -> list[list[str]]:
    return _stages((DOCKER / "Dockerfile").read_text())


@pytest.fixture(scope="module")
def image_files(stages) -> dict[str, Path]:
    """Container path -> repository file, from the runtime stage's plain COPY lines."""
    files = {}
    for line in stages[-1]:
        words = shlex.split(line)
        if words[0].upper() == "COPY" and not any(w.startswith("--from") for w in words):
            *sources, target = words[1:]
            assert len(sources) == 1, line
            files[target] = REPO_ROOT / sources[0]
    return files


@pytest.fixture(scope="module")
def image_env(stages) -> dict[str, str]:
    env = {}
    for line in stages[-1]:
        if line.upper().startswith("ENV "):
            for word in shlex.split(line[4:]):
                name, _, value = word.partition("=")
                env[name] = value
    return env


def _env_refs(value) -> set[str]:
    """Every ``{env: NAME}`` in a Dagster YAML config."""
    if isinstance(value, dict):
        if set(value) == {"env"}:
            return {value["env"]}
        return set().union(*(_env_refs(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_env_refs(v) for v in value)) if value else set()
    return set()


def _service_env(service: dict, image_env: dict[str, str]) -> dict[str, str]:
    return {**image_env, **{k: str(v) for k, v in (service.get("environment") or {}).items()}}


def _parse(command: list[str], image_files: dict[str, Path]) -> tuple[str, dict]:
    """(subcommand path, parsed options) as the named CLI parses ``command``.

    Container paths are replaced by the repository files the image holds there, so options
    that require an existing file check the real one.
    """
    argv = [str(image_files.get(arg, arg)) for arg in command]
    program, args = argv[0], argv[1:]
    group = _clis()[program]
    context = group.make_context(program, list(args))
    names = [program]
    command_obj = group
    while isinstance(command_obj, click.Group):
        with warnings.catch_warnings():  # click 8.2 deprecates protected_args, 9.0 drops it
            warnings.simplefilter("ignore", DeprecationWarning)
            rest = [*getattr(context, "protected_args", []), *context.args]
        name, command_obj, rest = command_obj.resolve_command(context, rest)
        names.append(name)
        context = command_obj.make_context(name, rest, parent=context)
    return " ".join(names), context.params


def _worker_nodes(services, image_env) -> dict[str, dict]:
    """Node name -> worker service, by the HRM_WORKER_NODE each worker declares."""
    workers = {}
    for name, service in services.items():
        env = _service_env(service, image_env)
        if WORKER_NODE_ENV in env:
            workers[env[WORKER_NODE_ENV]] = service | {"name": name}
    return workers


# --------------------------------------------------------------------------- the image


def test_dockerfile_builds_the_wheel_with_maturin_and_ships_a_slim_runtime(stages):
    assert len(stages) >= 2
    build, runtime = stages[0], stages[-1]
    assert re.match(r"FROM \S+ AS build$", build[0], re.IGNORECASE)
    assert any("maturin build --release" in line for line in build)
    assert "slim" in runtime[0]
    runtime_text = "\n".join(runtime)
    assert "COPY --from=build /wheels" in runtime_text
    assert "--no-index" in runtime_text  # installs the built wheels only, offline
    for tool in ("cargo", "rustup", "maturin", "build-essential"):
        assert tool not in runtime_text, f"{tool} in the runtime stage"
    assert any(line.startswith("USER ") and "root" not in line for line in runtime)


def test_image_copies_existing_files_and_sets_project_settings(image_files, image_env):
    for target, source in image_files.items():
        assert source.is_file(), f"{source} (copied to {target}) is missing"
    home = PurePosixPath(image_env["DAGSTER_HOME"])
    assert image_files[str(home / "dagster.yaml")] == DOCKER / "dagster.yaml"
    # hrm_assets.common.settings reads prefix_config.yaml from the folder above the package, which
    # the image installs into its PYTHONPATH folder.
    app = PurePosixPath(image_env["PYTHONPATH"])
    assert image_files[str(app / "prefix_config.yaml")] == REPO_ROOT / "prefix_config.yaml"
    assert f"--target {app}" in (DOCKER / "Dockerfile").read_text()
    assert image_env[TRAINING_NODES_ENV] in image_files
    assert set(image_env) - {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONPATH"} <= (
        PROJECT_ENV
    )


def test_dockerignore_sends_everything_the_dockerfile_copies(stages):
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    allowed = [line[1:] for line in ignore if line.startswith("!")]
    for stage in stages:
        for line in stage:
            words = shlex.split(line)
            if words[0].upper() != "COPY" or any(w.startswith("--from") for w in words):
                continue
            for source in words[1:-1]:
                assert any(
                    source == pattern or pattern.startswith(source.rstrip("/") + "/")
                    for pattern in allowed
                ), f"{source} is excluded from the build context"


# --------------------------------------------------------------------------- instance config


def test_instance_config_is_valid_postgres_storage():
    from dagster._core.instance.config import dagster_instance_config

    config, _ = dagster_instance_config(str(DOCKER), "dagster.yaml")
    database = config["storage"]["postgres"]["postgres_db"]
    assert database["scheme"] == "postgresql+psycopg2"  # dagster-postgres uses psycopg2
    assert config["telemetry"]["enabled"] is False
    # The local default stays SQLite (Dagster's, with pooled connections).
    local = yaml.safe_load((REPO_ROOT / "dagster_home" / "dagster.yaml").read_text())
    assert local["storage"]["custom"]["class"] == "PooledSqliteStorage"


def test_celery_worker_config_reads_the_executors_variables(monkeypatch):
    from dagster_celery.cli import get_validated_config

    config = yaml.safe_load((DOCKER / "celery.yaml").read_text())
    assert config["execution"]["config"]["broker"] == {"env": BROKER_ENV}
    assert config["execution"]["config"]["backend"] == {"env": BACKEND_ENV}
    monkeypatch.setenv(BROKER_ENV, "redis://redis:6379/0")
    monkeypatch.setenv(BACKEND_ENV, "redis://redis:6379/1")
    validated = get_validated_config(str(DOCKER / "celery.yaml"))
    assert validated["broker"] == "redis://redis:6379/0"
    assert validated["backend"] == "redis://redis:6379/1"


# --------------------------------------------------------------------------- services


def test_services_are_infrastructure_dagster_and_one_worker_per_node(services, image_env):
    nodes = load_training_nodes(DOCKER / "training_nodes.yaml")
    workers = _worker_nodes(services, image_env)
    assert sorted(workers) == sorted(node.name for node in nodes)
    assert set(services) == INFRA | DAGSTER_SERVICES | {w["name"] for w in workers.values()}
    for node in nodes:
        assert workers[node.name]["name"] == f"worker-{node.name}"


def test_every_dagster_service_has_the_instance_and_project_settings(
    compose, services, image_env, image_files
):
    instance_env = _env_refs(yaml.safe_load((DOCKER / "dagster.yaml").read_text()))
    celery_env = _env_refs(yaml.safe_load((DOCKER / "celery.yaml").read_text()))
    assert instance_env == {f"DAGSTER_PG_{p}" for p in ("HOST", "PORT", "USER", "PASSWORD", "DB")}
    postgres = services["postgres"]["environment"]
    dagster_services = {name: s for name, s in services.items() if name not in INFRA}
    for name, service in dagster_services.items():
        env = _service_env(service, image_env)
        unknown = {k for k in env if k.startswith(("HRM_", "DAGSTER_"))} - (
            PROJECT_ENV | instance_env
        )
        assert not unknown, f"{name}: variables nothing reads: {unknown}"
        assert instance_env | celery_env | {"DAGSTER_HOME", EXECUTOR_ENV} <= set(env), name
        assert env[EXECUTOR_ENV] == "celery" and env[EXECUTOR_ENV] in EXECUTOR_MODES
        assert env["DAGSTER_PG_HOST"] == "postgres"
        assert env["DAGSTER_PG_USER"] == postgres["POSTGRES_USER"]
        assert env["DAGSTER_PG_PASSWORD"] == postgres["POSTGRES_PASSWORD"]
        assert env["DAGSTER_PG_DB"] == postgres["POSTGRES_DB"]
        for variable in (BROKER_ENV, BACKEND_ENV):
            url = urlparse(env[variable])
            assert (url.scheme, url.hostname) == ("redis", "redis"), (name, variable)
        assert env[TRAINING_NODES_ENV] in image_files
        assert image_files[env[TRAINING_NODES_ENV]] == DOCKER / "training_nodes.yaml"
        assert f"data:{env[settings.DATA_ROOT_ENV]}" in service["volumes"]
        assert f"dagster-storage:{env['DAGSTER_HOME']}/storage" in service["volumes"]
        for dependency in INFRA:
            assert service["depends_on"][dependency]["condition"] == "service_healthy"
    for dependency in INFRA:
        assert "healthcheck" in services[dependency]
    # Every named volume a service mounts is declared.
    for service in services.values():
        for mount in service.get("volumes", []):
            assert mount.split(":")[0] in compose["volumes"], mount


def test_code_server_webserver_and_daemon_commands(services, image_files):
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    module = re.search(r'\[tool\.dagster\]\s*module_name = "([^"]+)"', pyproject).group(1)
    command, params = _parse(services["code-server"]["command"], image_files)
    assert command == "dagster code-server start"
    assert params["module_name"] == module and params["host"] == "0.0.0.0"
    workspace = yaml.safe_load((DOCKER / "workspace.yaml").read_text())
    (location,) = workspace["load_from"]
    assert location["grpc_server"]["host"] == "code-server"
    assert location["grpc_server"]["port"] == params["port"]

    command, params = _parse(services["webserver"]["command"], image_files)
    assert command == "dagster-webserver"
    assert params["workspace"] == (str(DOCKER / "workspace.yaml"),)
    assert services["webserver"]["ports"] == [f"{params['port']}:{params['port']}"]

    command, params = _parse(services["daemon"]["command"], image_files)
    assert command == "dagster-daemon run"
    assert params["workspace"] == (str(DOCKER / "workspace.yaml"),)


def test_each_worker_serves_the_general_queue_and_its_nodes_queue(services, image_env, image_files):
    nodes = load_training_nodes(DOCKER / "training_nodes.yaml")
    workers = _worker_nodes(services, image_env)
    served = set()
    for node in nodes:
        service = workers[node.name]
        command, params = _parse(service["command"], image_files)
        assert command == "dagster-celery worker start"
        assert params["app"] == "dagster_celery.app"
        assert params["name"] == node.name
        assert params["config_yaml"] == str(DOCKER / "celery.yaml")
        # A single -q with a comma list: celery keeps only the last of repeated -Q options.
        assert len(params["queue"]) == 1, params["queue"]
        queues = params["queue"][0].split(",")
        assert queues == [GENERAL_QUEUE, node.queue_name()]
        served.update(queues)
        if node.output_path and node.output_path.startswith("/dev/shm"):
            assert service.get("shm_size"), f"{service['name']}: /dev/shm needs shm_size"
    assert served == {GENERAL_QUEUE} | {node.queue_name() for node in nodes}
