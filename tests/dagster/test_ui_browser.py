"""The Dagster UI in a real browser: lineage and the sampled asset's analytics are shown.

The demo corpus is materialized into a temporary data root and ``DAGSTER_HOME``, then
``dagster dev`` serves it on loopback and headless Chromium (Debian ``chromium``, which
``.ci/run`` installs) opens pages over the DevTools protocol:

* the global asset lineage, narrowed to one chain ``cleaned/gsm8k_train -> tokenizer ->
  tokenized/gsm8k_train -> sampled/local`` with its groups expanded: the rendered nodes and
  edge paths (read back from the page's SVG) must be exactly that chain's dependencies, as the
  webserver's GraphQL API reports them;
* the ``sampled/local`` asset page: the metadata table shows ``analytics``, ``categories``,
  ``tasks`` and ``category_token_share``, and the ``analytics`` Markdown opens rendered, with
  every heading of the stored report as text;
* at data_io's FLAN scale, served by ``dagster-webserver`` over an instance where
  ``tokenized/flan`` has 2,000 materialized partitions: its Partitions tab counts them all,
  lists them (not an error or a spinner), and finds the last one by name with its own record.

Screenshots of each page land in the test's temporary folder (paths printed on failure too).
Without a Chromium binary (``chromium``, ``chromium-browser``, ``google-chrome`` on PATH, or
``$HRM_CHROMIUM``) the module is skipped, except in CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef
from support.ui_browser import (
    DevToolsPage,
    GiveUp,
    HeadlessChromium,
    find_chromium,
    free_port,
    graphql,
    http_get,
    log_tail,
    start_process_group,
    stop_process_group,
    wait_until,
)

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.defs.common.keys import tokenized_key
from hrm_assets.defs.sampled.inputs import DATA_VERSION_TAG
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE = "local"  # the training node in training_nodes.yaml
SAMPLED = f"sampled/{NODE}"
CHAIN = ("cleaned/gsm8k_train", "tokenizer", "tokenized/gsm8k_train", SAMPLED)
VIEWPORT = (1600, 1000)

FLAN_PARTITIONS = 2_000  # data_io's FLAN writes ~1,800 per-task files

MATERIALIZE_TIMEOUT = 240  # the demo takes ~40 s
SERVER_TIMEOUT = 120  # dagster dev is up in ~15 s
PAGE_TIMEOUT = 45

ASSET_GRAPH_QUERY = "{ assetNodes { assetKey { path } dependencyKeys { path } } }"
LATEST_METADATA_QUERY = """
query ($path: [String!]!) {
  assetOrError(assetKey: {path: $path}) {
    __typename
    ... on Asset {
      assetMaterializations(limit: 1) {
        metadataEntries { label __typename ... on MarkdownMetadataEntry { mdStr } }
      }
    }
  }
}
"""

# The asset graph as the page renders it: group boxes, asset nodes (SVG foreignObjects with their
# layout coordinates) and the edge paths between them.
RENDERED_GRAPH_JS = """
(() => {
  const box = el => ({
    x: parseFloat(el.getAttribute('x')), y: parseFloat(el.getAttribute('y')),
    w: parseFloat(el.getAttribute('width')), h: parseFloat(el.getAttribute('height')),
  });
  const firstText = el => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.textContent.trim()) return n.textContent.trim();
    }
    return '';
  };
  const groups = Array.from(document.querySelectorAll('foreignObject.group'))
    .map(el => ({name: firstText(el), ...box(el)}));
  // A node's status: the background of a zoomed-out (minimal) node, "light" until the live
  // data arrives; a full-size node says "Loading..." until then.
  const status = el => {
    const minimal = el.querySelector('[class*="minimalAssetNodeBox"]');
    if (minimal) return minimal.style.getPropertyValue('--minimal-bg').trim();
    return el.textContent.includes('Loading...') ? 'loading' : 'shown';
  };
  const nodes = Array.from(document.querySelectorAll('foreignObject'))
    .filter(el => el.querySelector('[class*="AssetNode_assetName"]'))
    .map(el => ({
      name: el.querySelector('[class*="AssetNode_assetName"]').innerText.trim(),
      status: status(el),
      ...box(el),
    }));
  const edges = Array.from(document.querySelectorAll('path[stroke^="var(--color-lineage-edge"]'))
    .map(el => el.getAttribute('d'));
  const loading = nodes.some(n => n.status === 'loading' || n.status.includes('background-light'));
  return {groups, nodes, edges, loading};
})()
"""

# Click "[Show Markdown]" in the metadata row whose key cell is exactly `analytics`.
OPEN_ANALYTICS_JS = """
(() => {
  const row = Array.from(document.querySelectorAll('tr'))
    .find(tr => tr.cells.length && tr.cells[0].innerText.trim() === 'analytics');
  if (!row) return false;
  const button = Array.from(row.querySelectorAll('*'))
    .find(el => el.children.length === 0 && el.textContent.trim() === '[Show Markdown]');
  if (!button) return false;
  button.scrollIntoView({block: 'center'});
  button.click();
  return true;
})()
"""

# The text of the dialog showing the analytics, once its Markdown is rendered (headings are h3).
DIALOG_TEXT_JS = """
(() => {
  const dialog = Array.from(document.querySelectorAll('[role="dialog"]'))
    .find(el => Array.from(el.querySelectorAll('h3'))
      .some(h => h.innerText.includes('Category Coverage Stats')));
  return dialog ? dialog.innerText : '';
})()
"""

# The page has loaded: no skeleton placeholders left, and the share bars are a rendered table.
ASSET_PAGE_LOADED_JS = """
(() => {
  if (document.querySelector('[class*="Skeleton"]')) return false;
  const row = Array.from(document.querySelectorAll('tr'))
    .find(tr => tr.cells.length && tr.cells[0].innerText.trim() === 'category_token_share');
  return Boolean(row && row.cells[row.cells.length - 1].querySelector('table'));
})()
"""

SCROLL_TO_HEADING_JS = """
(() => {
  const heading = Array.from(document.querySelectorAll('[role="dialog"] h3'))
    .find(h => h.innerText.includes('Category Coverage Stats'));
  if (!heading) return null;
  heading.scrollIntoView({block: 'start'});
  return heading.getBoundingClientRect().top;
})()
"""


# The partition keys listed on an asset's Partitions tab (a virtualized list: only the rows in
# view are in the DOM; a long key is shown cut in the middle, with its full text in a sibling),
# and whether anything is still loading.
PARTITION_LIST_JS = """
(() => {
  const keys = Array.from(document.querySelectorAll('body *'))
    .map(el => el.children.length ? '' : el.textContent.trim())
    .filter(text => /^flan__[\\w.-]+\\.parquet$/.test(text));
  const busy = document.querySelectorAll(
    '[class*="Spinner"], [class*="Skeleton"], [role="progressbar"]').length;
  return {keys: [...new Set(keys)], busy};
})()
"""

FOCUS_PARTITION_FILTER_JS = """
(() => {
  const input = document.querySelector('input[placeholder^="Filter by name"]');
  if (!input) return false;
  input.focus();
  return true;
})()
"""

# The selected partition's metadata table, {label: value}.
METADATA_TABLE_JS = """
(() => Object.fromEntries(Array.from(document.querySelectorAll('tr'))
  .filter(tr => tr.cells.length >= 2)
  .map(tr => [tr.cells[0].innerText.trim(), tr.cells[1].innerText.trim()])))()
"""


@dataclass
class DagsterUI:
    base_url: str
    log_path: Path


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


@pytest.fixture(scope="module")
def chromium_binary() -> str:
    binary = find_chromium()
    if binary is None:
        reason = "no Chromium binary (chromium, chromium-browser, google-chrome) on PATH"
        if _in_ci():
            pytest.fail(f"{reason}; .ci/run installs Debian's chromium")
        pytest.skip(f"{reason}; install it with `apt-get install chromium` or set HRM_CHROMIUM")
    return binary


def _environment(dagster_home: Path, data_root: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The local multiprocess executor, whatever the calling shell selected.
    for name in ("HRM_EXECUTOR", "HRM_WORKER_NODE", "HRM_CELERY_BROKER", "HRM_CELERY_BACKEND"):
        env.pop(name, None)
    env.update(
        DAGSTER_HOME=str(dagster_home),
        HRM_DATA_ROOT=str(data_root),
        HRM_RAW_ROOT=str(data_root / "demo_raw"),
        PYTHONUNBUFFERED="1",
    )
    return env


def _asset_graph(base_url: str) -> dict[str, set[str]]:
    nodes = graphql(base_url, ASSET_GRAPH_QUERY)["assetNodes"]
    return {
        "/".join(node["assetKey"]["path"]): {"/".join(d["path"]) for d in node["dependencyKeys"]}
        for node in nodes
    }


@pytest.fixture(scope="module")
def dagster_ui(chromium_binary, tmp_path_factory) -> Iterator[DagsterUI]:
    """The demo, materialized, served by ``dagster dev`` on 127.0.0.1 (stopped afterwards)."""
    workdir = tmp_path_factory.mktemp("ui")
    dagster_home = workdir / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(REPO_ROOT / "dagster_home" / "dagster.yaml", dagster_home / "dagster.yaml")
    data_root = workdir / "data"
    env = _environment(dagster_home, data_root)

    quickstart = subprocess.run(
        [sys.executable, "-m", "hrm_assets.quickstart", "--data-root", str(data_root)]
        + ["--epochs", "2"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=MATERIALIZE_TIMEOUT,
    )
    assert quickstart.returncode == 0, (
        f"the demo did not materialize:\n{quickstart.stdout[-3000:]}\n{quickstart.stderr[-5000:]}"
    )

    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = workdir / "dagster-dev.log"
    command = [sys.executable, "-m", "dagster", "dev", "-w", "workspace.yaml"]
    command += ["-h", "127.0.0.1", "-p", str(port)]
    with _serving("dagster dev", command, env, log_path, base_url):
        yield DagsterUI(base_url=base_url, log_path=log_path)


@contextmanager
def _serving(name: str, command: list[str], env: dict[str, str], log_path: Path, base_url: str):
    """Run a Dagster server until the code location has loaded; stop it on exit."""
    server = start_process_group(command, log_path, env=env, cwd=REPO_ROOT)
    try:

        def serving() -> bool:
            if server.poll() is not None:
                raise GiveUp(f"{name} exited with {server.returncode}")
            http_get(f"{base_url}/server_info")
            return SAMPLED in _asset_graph(base_url)  # the code location has loaded

        try:
            wait_until(serving, SERVER_TIMEOUT, f"{name} on {base_url}", interval=0.5)
        except (GiveUp, TimeoutError) as error:
            pytest.fail(f"{error}\n--- {log_path} ---\n{log_tail(log_path, 60)}")
        # The first page of a fresh instance opens a "Join the Dagster community" dialog over
        # everything; mark it seen, as a click on its Skip button would.
        graphql(base_url, "mutation { setNuxSeen }")
        yield
    finally:
        # A clean shutdown takes ~10 s; nothing here needs one (all is temporary).
        stop_process_group(server, grace=5.0)


@pytest.fixture(scope="module")
def flan_partitions_ui(chromium_binary, tmp_path_factory) -> Iterator[DagsterUI]:
    """``dagster-webserver`` on 127.0.0.1 over an instance where ``tokenized/flan`` has
    ``FLAN_PARTITIONS`` registered partitions, each with a materialization as a build records it
    (data version, rows, tokens). The events are reported directly: the page shows records, and
    running 2,000 partitions would only slow the test down."""
    workdir = tmp_path_factory.mktemp("ui-flan")
    dagster_home = workdir / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(REPO_ROOT / "dagster_home" / "dagster.yaml", dagster_home / "dagster.yaml")
    keys = [flan_partition(index) for index in range(FLAN_PARTITIONS)]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(dagster_home))  # the copied dagster.yaml reads it
        instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home)))
        instance.add_dynamic_partitions(TOKENIZED_PARTITIONS["flan"].name, keys)
        for index, key in enumerate(keys):
            instance.report_runless_asset_event(
                dg.AssetMaterialization(
                    tokenized_key("flan"),
                    partition=key,
                    metadata={"dagster/row_count": index + 1, "tokens": 40 * (index + 1)},
                    tags={DATA_VERSION_TAG: f"version-{index}"},
                )
            )
        instance.dispose()

    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = workdir / "dagster-webserver.log"
    command = [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml"]
    command += ["-h", "127.0.0.1", "-p", str(port)]
    env = _environment(dagster_home, workdir / "data")
    with _serving("dagster-webserver", command, env, log_path, base_url):
        yield DagsterUI(base_url=base_url, log_path=log_path)


def flan_partition(index: int) -> str:
    return f"flan__cot_fsopt_data__task{index:04d}.parquet"


@pytest.fixture
def browser_page(chromium_binary, tmp_path) -> Iterator[DevToolsPage]:
    browser = HeadlessChromium(chromium_binary, tmp_path / "chromium-profile", tmp_path / "c.log")
    try:
        page = browser.open_page()
        try:
            page.set_viewport(*VIEWPORT)
            yield page
        finally:
            page.close()
    finally:
        browser.stop()


@pytest.fixture
def page(dagster_ui, browser_page) -> DevToolsPage:
    return browser_page


@contextmanager
def screenshot_on_failure(page: DevToolsPage, path: Path, server_log: Path) -> Iterator[None]:
    """On any failure inside, save what the browser shows and add the server log's tail."""
    try:
        yield
    except Exception as error:
        try:
            page.screenshot(path)
            saved = f"screenshot of the failure: {path}"
        except Exception as screenshot_error:
            saved = f"no screenshot ({screenshot_error!r})"
        raise AssertionError(
            f"{error}\n{saved}\n--- {server_log} ---\n{log_tail(server_log, 30)}"
        ) from error


def _dismiss_community_dialog(page: DevToolsPage) -> None:
    """Skip the "Join the Dagster community" dialog if it shows despite setNuxSeen."""
    if "Join the Dagster community" in page.text():
        page.click_text("Skip")


def _endpoints(path: str) -> tuple[tuple[float, float], tuple[float, float]]:
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path)]
    assert len(numbers) >= 4, f"unexpected edge path {path!r}"
    return (numbers[0], numbers[1]), (numbers[-2], numbers[-1])


def _rendered_lineage(graph: dict) -> tuple[dict[str, dict], set[tuple[str, str]]]:
    """Asset keys of the rendered nodes, and the edges between them, from the page geometry.

    A node shows the last part of its key inside the box of its group; in this project the
    group is the key's first part (``tokenizer`` is alone in its group). An edge runs from the
    right side of its upstream node to the left side (arrow tip) of its downstream one.
    """

    def inside(node: dict, group: dict) -> bool:
        cx, cy = node["x"] + node["w"] / 2, node["y"] + node["h"] / 2
        return group["x"] <= cx <= group["x"] + group["w"] and (
            group["y"] <= cy <= group["y"] + group["h"]
        )

    nodes: dict[str, dict] = {}
    for node in graph["nodes"]:
        group = next((g["name"] for g in graph["groups"] if inside(node, g)), None)
        key = node["name"] if group in (None, node["name"]) else f"{group}/{node['name']}"
        nodes[key] = node

    def node_at(x: float, y: float, side: str) -> str:
        def distance(node: dict) -> float:
            edge_x = node["x"] + node["w"] if side == "right" else node["x"]
            return abs(x - edge_x)

        candidates = [
            (distance(n), key) for key, n in nodes.items() if n["y"] <= y <= n["y"] + n["h"]
        ]
        assert candidates and min(candidates)[0] <= 20, (
            f"no node's {side} side at ({x}, {y}); nodes: {nodes}"
        )
        return min(candidates)[1]

    edges = set()
    for path in graph["edges"]:
        (x1, y1), (x2, y2) = _endpoints(path)
        edges.add((node_at(x1, y1, "right"), node_at(x2, y2, "left")))
    return nodes, edges


def test_graphql_asset_graph_has_the_pipeline_lineage(dagster_ui):
    """The webserver's graph: raw -> cleaned -> tokenizer -> tokenized -> sampled."""
    deps = _asset_graph(dagster_ui.base_url)
    names = list(SOURCES)
    for name in names:
        assert deps[f"cleaned/{name}"] == {f"raw/{name}"}
        assert deps[f"tokenized/{name}"] == {f"cleaned/{name}", "tokenizer"}
    assert deps["tokenizer"] == {f"cleaned/{name}" for name in names}
    assert deps[SAMPLED] == {f"tokenized/{name}" for name in names}


def test_asset_graph_page_renders_the_lineage(page, dagster_ui, tmp_path):
    deps = _asset_graph(dagster_ui.base_url)
    expected_edges = {(up, key) for key in CHAIN for up in deps[key] if up in CHAIN}
    assert len(expected_edges) == 4, expected_edges  # the chain is what the test thinks it is

    selection = " or ".join(f'key:"{key}"' for key in CHAIN)
    groups = sorted({key.split("/")[0] for key in CHAIN})
    expanded = ",".join(f"global@global:{group}" for group in groups)
    url = (
        f"{dagster_ui.base_url}/asset-groups~{urllib.parse.quote(selection, safe='')}"
        f"?expanded={urllib.parse.quote(expanded, safe='')}"
    )
    screenshot = tmp_path / "asset-graph.png"
    with screenshot_on_failure(page, tmp_path / "asset-graph-failure.png", dagster_ui.log_path):
        page.navigate(url)
        page.wait_for_text(["Global asset lineage", "gsm8k_train", "tokenizer", NODE])
        _dismiss_community_dialog(page)

        def settled() -> dict | None:
            graph = page.evaluate(RENDERED_GRAPH_JS)
            ready = len(graph["nodes"]) == len(CHAIN) and len(graph["edges"]) >= 4
            return graph if ready and not graph["loading"] else None

        graph = wait_until(
            settled, PAGE_TIMEOUT, "the four asset nodes with their status, and their edges"
        )
        page.screenshot(screenshot)

        nodes, edges = _rendered_lineage(graph)
        assert set(nodes) == set(CHAIN), f"rendered nodes {sorted(nodes)}"
        assert edges == expected_edges, f"rendered edges {sorted(edges)}"
        # Left to right in dependency order.
        xs = [nodes[key]["x"] for key in CHAIN]
        assert xs == sorted(xs) and len(set(xs)) == len(xs), f"node x positions {xs}"
    assert screenshot.stat().st_size > 10_000


def test_sampled_asset_page_shows_the_analytics(page, dagster_ui, tmp_path):
    latest = graphql(dagster_ui.base_url, LATEST_METADATA_QUERY, {"path": SAMPLED.split("/")})
    entries = latest["assetOrError"]["assetMaterializations"][0]["metadataEntries"]
    markdown = {e["label"]: e["mdStr"] for e in entries if e["__typename"].startswith("Markdown")}
    headings = re.findall(r"^#+\s+(.+?)\s*$", markdown["analytics"], re.MULTILINE)
    assert "Category Coverage Stats" in headings, headings

    page_shot = tmp_path / "sampled-asset.png"
    analytics_shot = tmp_path / "sampled-analytics.png"
    with screenshot_on_failure(page, tmp_path / "sampled-failure.png", dagster_ui.log_path):
        page.navigate(f"{dagster_ui.base_url}/assets/{SAMPLED}")
        page.wait_for_text(
            ["Metadata", "analytics", "[Show Markdown]", "categories", "category_token_share"]
            + ["tasks", "Upstream assets", "tokenized / gsm8k_train"]
            # The categories table and the share bars (Markdown, drawn a moment later) inline.
            + ["Show schema", "Platypus", "Sampled tokens", "█"],
            timeout=PAGE_TIMEOUT,
        )
        _dismiss_community_dialog(page)
        page.wait_for_js(ASSET_PAGE_LOADED_JS, PAGE_TIMEOUT, "the status and the share table")
        page.evaluate(
            "Array.from(document.querySelectorAll('tr')).find(tr => tr.cells.length && "
            "tr.cells[0].innerText.trim() === 'category_token_share').scrollIntoView()"
        )
        page.screenshot(page_shot)

        assert page.evaluate(OPEN_ANALYTICS_JS), "no [Show Markdown] in the analytics row"
        shown = wait_until(
            lambda: page.evaluate(DIALOG_TEXT_JS), PAGE_TIMEOUT, "the analytics Markdown dialog"
        )
        missing = [heading for heading in headings if heading not in shown]
        assert not missing, f"headings not shown: {missing}\n{shown[:2000]}"
        assert "###" not in shown and "|---" not in shown, "the Markdown is shown unrendered"
        assert "GLOBAL" in shown
        # Bring the first heading to the top of the dialog once it has stopped moving.
        positions: list[float] = []

        def heading_at_top() -> bool:
            top = page.evaluate(SCROLL_TO_HEADING_JS)
            if top is None:
                return False
            positions.append(top)
            stable = len(positions) >= 2 and abs(positions[-1] - positions[-2]) < 1
            return stable and -5 < top < 300

        wait_until(heading_at_top, PAGE_TIMEOUT, "the Category Coverage Stats heading in view")
        page.screenshot(analytics_shot)
    assert page_shot.stat().st_size > 10_000 and analytics_shot.stat().st_size > 10_000


def test_tokenized_partitions_page_shows_2000_partitions(
    browser_page, flan_partitions_ui, tmp_path
):
    """The Partitions tab of ``tokenized/flan`` at data_io's FLAN scale: every partition
    counted as materialized, the list filled with partition keys (not an error or a spinner),
    and the last partition found by name and shown with its own record."""
    page, ui = browser_page, flan_partitions_ui
    last = FLAN_PARTITIONS - 1
    list_shot = tmp_path / "tokenized-flan-partitions.png"
    selected_shot = tmp_path / "tokenized-flan-last-partition.png"
    with screenshot_on_failure(page, tmp_path / "tokenized-flan-failure.png", ui.log_path):
        page.navigate(f"{ui.base_url}/assets/tokenized/flan?view=partitions")
        page.wait_for_text(
            [f"{FLAN_PARTITIONS:,} Partitions Selected", f"Materialized ({FLAN_PARTITIONS})"]
            + ["Missing (0)", "Failed (0)", flan_partition(0)],
            timeout=PAGE_TIMEOUT,
        )
        _dismiss_community_dialog(page)

        def listed() -> dict | None:
            state = page.evaluate(PARTITION_LIST_JS)
            return state if len(state["keys"]) >= 10 and not state["busy"] else None

        keys = wait_until(listed, PAGE_TIMEOUT, "the partition list, loaded")["keys"]
        assert keys == [flan_partition(i) for i in range(len(keys))], keys
        page.screenshot(list_shot)

        # Every partition is in the list, not only the first rows: filter down to the last one.
        assert page.evaluate(FOCUS_PARTITION_FILTER_JS), "no partition filter box"
        page.call("Input.insertText", text=flan_partition(last).removeprefix("flan__"))
        wait_until(
            lambda: page.evaluate(PARTITION_LIST_JS)["keys"] == [flan_partition(last)],
            PAGE_TIMEOUT,
            f"the list narrowed to {flan_partition(last)}",
        )
        assert page.click_text(flan_partition(last))
        page.wait_for_text(["Latest materialization", "tokens", "View all historical events (1)"])
        metadata = wait_until(
            lambda: page.evaluate(METADATA_TABLE_JS), PAGE_TIMEOUT, "the partition's metadata"
        )
        assert metadata["tokens"].replace(",", "") == str(40 * FLAN_PARTITIONS), metadata
        assert metadata["dagster/row_count"].replace(",", "") == str(FLAN_PARTITIONS), metadata
        page.screenshot(selected_shot)
    print(f"screenshots: {list_shot} {selected_shot}")
    assert list_shot.stat().st_size > 10_000 and selected_shot.stat().st_size > 10_000
