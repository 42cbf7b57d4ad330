"""data_io-compatible sampling command: ``python -m hrm_assets.sampling key=value ...``.

Keys are those of data_io's ``sample_tokenized.py``, plus ``drop_short_after_truncate`` and
``tokenizer_path``. The other settings and their defaults (data_io's) are in
``hrm_assets.sampling.defaults``; the paths default to this project's layout
(``hrm_assets.common.settings``), not data_io's folders:

    tokenized_path      $HRM_DATA_ROOT/tokenized        (data_io: data_tokenized_bpe_65k)
                        ($HRM_TOKENIZED_ROOT when set; a folder or an s3:// URL)
    output_path         $HRM_DATA_ROOT/sampled/local    (data_io: /dev/shm/sampled)
    prefix_config_path  ./prefix_config.yaml when the working directory has one (as data_io),
                        else <project>/prefix_config.yaml
    tokenizer_path      the one tokenizer_info.json records (hrm-data only)

``node=<name>`` samples as that training node of ``training_nodes.yaml``
(``$HRM_TRAINING_NODES``): its output folder, rules file and settings, the ones the Dagster asset
``sampled/<name>`` and its sensor use; a key given beside it that differs from the node's is
refused (the node's folder only receives epochs of its own settings). The command ends by
saying on stderr which rules file and which roots it used.

A tokenized root in object storage (``tokenized_path=s3://bucket/prefix/tokenized``, or the
default when ``$HRM_DATA_ROOT`` is a URL) is sampled from its working copy in
``$HRM_CACHE_DIR`` (only changed objects downloaded; ``hrm_assets.sampling.remote_input``),
shipping the tokenizer of ``$HRM_TOKENIZER_ROOT`` (or ``<data root>/tokenizer``) when that is
remote too. The output stays local.

The Markdown analytics go to stdout (data_io's sections first, then filtering and epoch
sections); progress bars and warnings go to stderr. Bad input exits with status 2 (arguments)
or 1 (data, I/O) and one ``hrm-sample: error: ...`` line, no traceback.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.common import settings
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.layout import is_cleaned_name
from hrm_assets.common.storage import parse_location
from hrm_assets.sampling.analytics import render_report
from hrm_assets.sampling.defaults import SETTINGS, SamplingSetting, shown_default
from hrm_assets.sampling.remote_input import readable_tokenized
from hrm_assets.sampling.sampler import SamplingConfig, SamplingError, make_config, sample_tokenized
from hrm_assets.sampling.training_nodes import (
    TrainingNodesError,
    load_training_nodes,
    nodes_sharing_output,
    training_nodes_path,
)

PROG = "hrm-sample"
PATH_KEYS = ("tokenized_path", "output_path", "prefix_config_path", "tokenizer_path")
NODE_KEY = "node"
# data_io's sample_tokenized.py reads its rules from the working directory.
WORKING_PREFIX_CONFIG = "prefix_config.yaml"
INT_KEYS = tuple(s.name for s in SETTINGS if not isinstance(s.default, bool))
BOOL_KEYS = tuple(s.name for s in SETTINGS if isinstance(s.default, bool))
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}

_PATH_HELP = (
    (
        "tokenized_path",
        "tokenized root, a folder or an s3:// URL (default $HRM_DATA_ROOT/tokenized)",
    ),
    (
        "output_path",
        "sampled folder, replaced as a whole (default $HRM_DATA_ROOT/sampled/local)",
    ),
    (
        "prefix_config_path",
        "sampling rules (default ./prefix_config.yaml when present, as data_io reads it, "
        "else <project>/prefix_config.yaml)",
    ),
    (
        "tokenizer_path",
        "tokenizer.json (or its folder) to ship in <output>/tokenizer/ for HRM-Text's "
        "inference and export (default: the one tokenizer_info.json records)",
    ),
)


def _key_help(key: str, help_text: str) -> list[str]:
    """One key of the usage text: ``key=VALUE`` then its help, wrapped at column 25."""
    lines = textwrap.wrap(help_text, width=54, break_on_hyphens=False)
    if len(key) <= 22:
        return [f"  {key:<23}{lines[0]}", *(" " * 25 + line for line in lines[1:])]
    return [f"  {key}", *(" " * 25 + line for line in lines)]


def _setting_usage(setting: SamplingSetting) -> list[str]:
    kind = "BOOL" if isinstance(setting.default, bool) else "INT"
    return _key_help(f"{setting.name}={kind}", f"{setting.help} (default {shown_default(setting)})")


def usage_text() -> str:
    """The ``--help`` text; the settings' lines come from ``hrm_assets.sampling.defaults``."""
    lines = [
        f"usage: {PROG} [key=value ...]",
        "",
        "Stratified sampling of a tokenized folder into epochs (data_io's sample_tokenized.py).",
        "",
        "keys:",
    ]
    for key, help_text in _PATH_HELP:
        lines += _key_help(f"{key}=PATH", help_text)
    for setting in SETTINGS:
        lines += _setting_usage(setting)
    lines += _key_help(
        f"{NODE_KEY}=NAME",
        "sample as this training node of training_nodes.yaml: its output_path, rules and "
        "settings (keys that differ from the node's are refused)",
    )
    lines += [
        "",
        "The analytics report (Markdown) is written to stdout; progress and warnings to stderr.",
    ]
    return "\n".join(lines) + "\n"


USAGE = usage_text()


class UsageError(ValueError):
    """A bad command-line argument."""


def default_prefix_config() -> tuple[Path, str]:
    """The rules file used when none is given, and why: ``./prefix_config.yaml`` when the
    working directory has one (data_io reads it from there), else the project's."""
    local = Path(WORKING_PREFIX_CONFIG)
    if local.is_file():
        return local.absolute(), "the working directory's, as data_io reads it"
    return settings.default_prefix_config_path(), "the project's default"


def default_values() -> dict[str, object]:
    """The CLI's defaults: project paths from ``hrm_assets.common.settings`` (the rules file
    from :func:`default_prefix_config`), the other settings' from
    ``hrm_assets.sampling.defaults`` (through ``SamplingConfig``)."""
    values: dict[str, object] = {
        "tokenized_path": settings.stage_root(settings.TOKENIZED_ROOT_ENV, "tokenized"),
        "output_path": settings.sampled_root() / "local",
        "prefix_config_path": default_prefix_config()[0],
        "tokenizer_path": None,
    }
    for key in (*INT_KEYS, *BOOL_KEYS):
        values[key] = SamplingConfig.model_fields[key].default
    return values


def parse_arguments(arguments: Sequence[str]) -> SamplingConfig:
    """``key=value`` arguments (last one wins, as with OmegaConf) to a validated config
    (a local ``tokenized_path``; :func:`main` resolves a remote one first)."""
    return _config(parse_values(arguments))


def _config(values: dict[str, object]) -> SamplingConfig:
    try:
        return make_config(**values)
    except SamplingError as exc:
        raise UsageError(str(exc)) from None


def parse_values(arguments: Sequence[str]) -> dict[str, object]:
    """``key=value`` arguments over :func:`default_values` (or over the settings of the node
    ``node=`` names); ``tokenized_path`` may be a URL."""
    given = parse_given(arguments)
    node_name = given.pop(NODE_KEY, None)
    values = default_values()
    if node_name is not None:
        values.update(node_values(str(node_name), given))
    values.update(given)
    return values


def node_values(name: str, given: dict[str, object]) -> dict[str, object]:
    """The output folder, rules file, tokenizer and settings of training node ``name``; a
    UsageError naming the key when ``given`` asks for another value of one of them."""
    try:
        nodes = {node.name: node for node in load_training_nodes()}
    except TrainingNodesError as exc:
        raise UsageError(str(exc)) from None
    node = nodes.get(name)
    if node is None:
        raise UsageError(
            f"node={name}: no such training node in {training_nodes_path()} "
            f"(nodes: {', '.join(nodes)})"
        )
    sharing = nodes_sharing_output(list(nodes.values()), node)
    if sharing:
        raise UsageError(
            f"node={name}: nodes {name!r} and {', '.join(map(repr, sharing))} share output_path "
            f"{node.output_dir()} ({training_nodes_path()}); on this machine their epochs would "
            "replace each other's: give each node its own output_path"
        )
    values: dict[str, object] = {
        **node.sampling_settings(),
        "output_path": node.output_dir(settings.data_root()),
        "prefix_config_path": node.prefix_config(settings.default_prefix_config_path()),
    }
    if node.tokenizer_path:
        values["tokenizer_path"] = Path(node.tokenizer_path).absolute()
    for key, value in given.items():
        if key in values and _differs(value, values[key]):
            raise UsageError(
                f"{key}={value} differs from training node {name!r}'s {key}: {values[key]} "
                f"({training_nodes_path()}); its folder only receives epochs of its own "
                "settings: change them there, or leave out node= to sample elsewhere"
            )
    return values


def _differs(given: object, node_value: object) -> bool:
    if isinstance(given, Path) and isinstance(node_value, Path):
        return given.absolute() != node_value.absolute()
    return given != node_value


def parse_given(arguments: Sequence[str]) -> dict[str, object]:
    """The ``key=value`` arguments as typed values (last one wins), without defaults."""
    values: dict[str, object] = {}
    for argument in arguments:
        key, sep, value = argument.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"expected key=value, got {argument!r}")
        if key in PATH_KEYS:
            if not value.strip():
                raise UsageError(f"{key}: empty path")
            values[key] = parse_location(value) if key == "tokenized_path" else Path(value)
        elif key in INT_KEYS:
            try:
                values[key] = int(value.strip())
            except ValueError:
                raise UsageError(f"{key}: expected an integer, got {value!r}") from None
        elif key in BOOL_KEYS:
            flag = _BOOLEANS.get(value.strip().lower())
            if flag is None:
                raise UsageError(f"{key}: expected true or false, got {value!r}")
            values[key] = flag
        elif key == NODE_KEY:
            if not value.strip():
                raise UsageError(f"{key}: empty node name")
            values[key] = value.strip()
        else:
            known = ", ".join((*PATH_KEYS, *INT_KEYS, *BOOL_KEYS, NODE_KEY))
            raise UsageError(f"unknown key {key!r} (known keys: {known})")
    return values


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr, flush=True)


def _log(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def _fail(message: str, status: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    return status


def default_output_among_cleaned_files(output_path: Path) -> str | None:
    """A warning when the output is the default one (``$HRM_DATA_ROOT/sampled/local``) and
    that data root holds cleaned files itself, as data_io's ``data/`` folder does: the epochs
    would land inside a data_io user's cleaned folder."""
    default = default_values()["output_path"]
    if Path(output_path).absolute() != Path(str(default)).absolute():
        return None
    root = settings.data_root()
    if not root.is_dir() or not any(is_cleaned_name(entry.name) for entry in root.iterdir()):
        return None
    return (
        f"the default output {Path(output_path).absolute()} is inside {root}, which holds "
        "cleaned files (data_io's data/ folder?); name the epochs' folder with output_path= "
        "(data_io's default is /dev/shm/sampled)"
    )


def used_inputs_line(config: SamplingConfig, tokenized: object) -> str:
    """What the run read and wrote, said when it is done (an error names its file instead):
    the rules file (and why that one), the tokenized root and the output folder."""
    rules = Path(config.prefix_config_path).absolute()
    default, why = default_prefix_config()
    if rules == default.absolute():
        origin = why
    elif rules == Path(WORKING_PREFIX_CONFIG).absolute():
        origin = "the working directory's"
    else:
        origin = "given"
    return (
        f"rules {rules} ({origin}); tokenized root {tokenized}; "
        f"output {Path(config.output_path).absolute()}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0 ok, 1 bad data or I/O, 2 bad arguments)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if any(argument in ("-h", "--help") for argument in arguments):
        sys.stdout.write(USAGE)
        return 0
    if problem := settings.root_setting_problem():
        return _fail(problem, 2)
    try:
        values = parse_values(arguments)
    except (UsageError, ValueError) as exc:
        return _fail(f"{exc}\n{USAGE.splitlines()[0]}", 2)
    tokenized = DataRoot(values["tokenized_path"])
    tokenizer = None
    if tokenized.remote is not None and values["tokenizer_path"] is None:
        tokenizer = DataRoot(settings.stage_root(settings.TOKENIZER_ROOT_ENV, "tokenizer"))
    try:
        with readable_tokenized(tokenized, tokenizer, _log) as (local, shipped):
            values["tokenized_path"] = local
            if shipped is not None:
                values["tokenizer_path"] = shipped
            try:
                config = _config(values)
            except UsageError as exc:
                return _fail(f"{exc}\n{USAGE.splitlines()[0]}", 2)
            crowded = default_output_among_cleaned_files(config.output_path)
            if crowded:
                _warn(crowded)
            result = sample_tokenized(config, progress=True, warn=_warn, log=_log)
    except SamplingError as exc:
        return _fail(str(exc), 1)
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc), 1)
    except KeyboardInterrupt:
        return _fail("interrupted; the previous output is unchanged", 130)
    sys.stdout.write(render_report(result))
    sys.stdout.flush()
    _log(used_inputs_line(config, tokenized))
    return 0


if __name__ == "__main__":
    sys.exit(main())
