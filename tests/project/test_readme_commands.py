"""The README's "Using it" commands, as written, in a fresh copy of the checkout.

A new user pastes them into a shell at the repository root after ``make demo``, with no
variable set. So here: the checkout is copied to a temporary folder (tracked and untracked
files, the compiled extension; not data/, dagster_home's database or build output), ``make``'s
two steps run in it (``python -m hrm_assets.local_env`` writes the ``.env`` that Dagster's CLI
reads, ``python -m hrm_assets.quickstart`` materializes the demo), and every command of the
table runs there through ``bash -c``, in the table's order, in an environment without any
``DAGSTER_*`` or ``HRM_*`` variable. The repository itself is never written to.

Every other command the README names is one of those (or another form of one in the same row,
which runs too), one of the two steps above, or a ``make`` target or a command the Makefile runs
(the README's quickstart and table of targets): ``test_the_readme_names_no_command_left_untested``.

``dagster dev`` serves until stopped: it runs until its webserver answers (on a free port,
through Dagster's own ``DAGSTER_WEBSERVER_PORT``, so the command stays as written) and must show
the demo's runs, which only the project's instance holds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.ui_browser import (
    free_port,
    graphql,
    log_tail,
    start_process_group,
    stop_process_group,
    wait_until,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
COMMAND_TIMEOUT = 600

pytestmark = pytest.mark.slow


def using_it_commands(readme: str) -> list[tuple[str, str]]:
    """(what, command) of each row of the README's "Using it" table: the command is the first
    code span of the row's second cell."""
    section = readme.split("\n## Using it\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| what | command |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|", 1)]
        match = re.search(r"`([^`]+)`", cells[1])
        assert match, f"no command in the README row {line!r}"
        rows.append((cells[0], match.group(1)))
    return rows


PROGRAMS = ("dagster ", "python ", "hrm-")
DEMO_STEPS = ("python -m hrm_assets.local_env", "python -m hrm_assets.quickstart")


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def is_command(span: str) -> bool:
    """A command with arguments of a program the README's commands run. A name alone is a
    mention, not a command: a program (``hrm-verify``), a module (``python -m
    hrm_assets.checks``), a Dagster sub-command without options (``dagster job execute``)."""
    words = span.split()
    if span == "dagster dev":
        return True
    if words[0] == "dagster":
        return any(word.startswith("-") for word in words)
    if words[0] == "python":
        return len(words) > 3
    return words[0].startswith("hrm-") and len(words) > 1


def in_makefile(span: str, makefile: str) -> bool:
    """Whether a line of the Makefile runs ``span``: its words in order, others between them
    (``pip install -c constraints.txt`` in ``$(PYTHON) -m pip install --progress-bar off -c
    constraints.txt ...``)."""
    for line in makefile.splitlines():
        words = iter(line.split())
        if all(word in words for word in span.split()):
            return True
    return False


def using_it_alternatives(readme: str) -> list[tuple[str, str]]:
    """(what, command) of the other commands a row of the table gives (``(or name sources:
    `hrm-materialize-tokenized flan tasksource`)``), after its first."""
    section = readme.split("\n## Using it\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|", 1)]
        if line.startswith("|") and len(cells) == 2 and not cells[1].startswith("command"):
            spans = code_spans(cells[1])[1:]
            rows += [(cells[0], span) for span in spans if is_command(span)]
    return rows


def test_the_using_it_table_is_parsed_whole():
    rows = using_it_commands(README.read_text(encoding="utf-8"))
    whats = [what for what, _ in rows]
    assert whats[0].startswith("UI") and rows[0][1] == "dagster dev"
    assert len(rows) >= 10
    programs = {"dagster", "python", "hrm-verify", "hrm-materialize-tokenized"}
    assert all(command.split()[0] in programs for _, command in rows)


def test_the_readme_names_no_command_left_untested():
    """Every command in the README runs here (the table, its other forms, the demo's steps),
    and every ``make``/``pip``/``pytest``/``ruff`` one is a Makefile target or in its recipes."""
    readme = README.read_text(encoding="utf-8")
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, re.MULTILINE))
    tested = {command for _, command in using_it_commands(readme)}
    tested |= {command for _, command in using_it_alternatives(readme)} | set(DEMO_STEPS)
    blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", readme, re.DOTALL)
    block_lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    untested = []
    for span in code_spans(readme) + [line for line in block_lines if line]:
        if span.startswith("make "):
            if span.split()[1] not in targets:
                untested.append(span)
        elif span.startswith(("pip ", "pytest ", "ruff ")):
            if not in_makefile(span, makefile):
                untested.append(span)
        elif is_command(span) and span not in tested:
            untested.append(span)
    assert not untested, f"README commands no test runs: {untested}"
    assert "hrm-materialize-tokenized flan tasksource" in tested


def _copy_checkout(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listed)):
        source = REPO_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    for extension in (REPO_ROOT / "hrm_assets").glob("_core*.so"):
        shutil.copy2(extension, target / "hrm_assets" / extension.name)


def _user_environment(checkout: Path) -> dict[str, str]:
    """The caller's environment without the project's variables; the copy's package first on
    the import path (console scripts would otherwise import the editable install's)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DAGSTER_", "HRM_", "PYTEST_"))
    }
    env["PYTHONPATH"] = str(checkout)
    return env


def _run(command: str, checkout: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )


def _serve_ui(command: str, checkout: Path, env: dict[str, str], log: Path) -> dict:
    port = free_port()
    server = start_process_group(
        ["bash", "-c", command], log, env={**env, "DAGSTER_WEBSERVER_PORT": str(port)}, cwd=checkout
    )
    base_url = f"http://127.0.0.1:{port}"
    try:

        def answers():
            if server.poll() is not None:
                raise AssertionError(f"{command!r} exited:\n{log_tail(log)}")
            try:
                return graphql(base_url, "{ shouldShowNux runsOrError { ... on Runs { count } } }")
            except OSError:
                return None

        return wait_until(answers, timeout=180, what=f"{command!r} serving on {base_url}")
    finally:
        stop_process_group(server)


@pytest.fixture(scope="module")
def demo_checkout(tmp_path_factory) -> tuple[Path, dict[str, str], str]:
    """A copy of the checkout after ``make demo``'s own steps; and the demo's output."""
    checkout = tmp_path_factory.mktemp("checkout")
    _copy_checkout(checkout)
    env = _user_environment(checkout)
    for step in ("python -m hrm_assets.local_env", "python -m hrm_assets.quickstart"):
        done = _run(step.replace("python", sys.executable, 1), checkout, env)
        assert done.returncode == 0, f"{step}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return checkout, env, done.stdout + done.stderr


def test_demo_prints_a_line_per_stage_and_the_summary(demo_checkout):
    checkout, _, output = demo_checkout
    lines = output.strip().splitlines()
    stages = [line for line in lines if line.startswith("==> [")]
    assert [line[:9] for line in stages] == [f"==> [{i}/4]" for i in range(1, 5)]
    assert "DEBUG" not in output and "STEP_SUCCESS" not in output
    assert f"Sampled epochs for node 'local': {checkout / 'data' / 'sampled' / 'local'}" in output
    assert f"cd {checkout} && dagster dev" in output
    # The corpus line, the four stages, a blank line, "Done", the epochs, the UI.
    assert len(lines) <= 10, output


def test_every_using_it_command_works_as_written(demo_checkout, tmp_path):
    checkout, env, _ = demo_checkout
    readme = README.read_text(encoding="utf-8")
    for what, command in using_it_commands(readme) + using_it_alternatives(readme):
        if command == "dagster dev":
            found = _serve_ui(command, checkout, env, tmp_path / "dagster-dev.log")
            assert found["runsOrError"]["count"] > 0, "dagster dev opened another instance"
            assert found["shouldShowNux"] is False
            continue
        done = _run(command, checkout, env)
        assert done.returncode == 0, (
            f"{what}: `{command}` exited with {done.returncode}:\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        )
        assert "Traceback" not in done.stderr, f"{what}: `{command}`:\n{done.stderr[-4000:]}"
    assert "### Category Coverage Stats" in (checkout / "analytics.md").read_text()
    assert not list(checkout.glob(".tmp_dagster_home_*")), "a command used a throwaway instance"
