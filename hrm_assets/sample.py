"""data_io-compatible sampling command: ``python -m hrm_assets.sample key=value ...``.

Keys are those of data_io's ``sample_tokenized.py``. The numeric defaults are data_io's; the
paths default to this project's layout (``hrm_assets.settings``), not data_io's folders:

    tokenized_path      $HRM_DATA_ROOT/tokenized        (data_io: data_tokenized_bpe_65k)
    output_path         $HRM_DATA_ROOT/sampled/local    (data_io: /dev/shm/sampled)
    prefix_config_path  <project>/prefix_config.yaml    (data_io: prefix_config.yaml)
    seed=0  epochs=10  context_size=4097  min_resp_length=2
    drop_short_after_truncate=false   (hrm-data only; opt-in, changes bytes)

The Markdown analytics go to stdout (data_io's sections first, then filtering and epoch
sections); progress bars and warnings go to stderr. Bad input exits with status 2 (arguments)
or 1 (data, I/O) and one ``hrm-sample: error: ...`` line, no traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hrm_assets import settings
from hrm_assets.analytics import render_report
from hrm_assets.sampling import SamplingConfig, SamplingError, make_config, sample_tokenized

PROG = "hrm-sample"
PATH_KEYS = ("tokenized_path", "output_path", "prefix_config_path")
INT_KEYS = ("seed", "epochs", "context_size", "min_resp_length")
BOOL_KEYS = ("drop_short_after_truncate",)
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}

USAGE = f"""usage: {PROG} [key=value ...]

Stratified sampling of a tokenized folder into epochs (data_io's sample_tokenized.py).

keys (defaults):
  tokenized_path=PATH      tokenized root ($HRM_DATA_ROOT/tokenized)
  output_path=PATH         sampled folder, replaced as a whole ($HRM_DATA_ROOT/sampled/local)
  prefix_config_path=PATH  sampling rules (<project>/prefix_config.yaml)
  seed=INT                 random seed (0)
  epochs=INT               epochs to write (10)
  context_size=INT         max tokens per row, +1 for the autoregressive shift (4097)
  min_resp_length=INT      drop responses shorter than this (2)
  drop_short_after_truncate=BOOL
                           also drop rows that truncation leaves shorter than
                           min_resp_length (false: keep them, as data_io does)

The analytics report (Markdown) is written to stdout; progress and warnings to stderr.
"""


class UsageError(ValueError):
    """A bad command-line argument."""


def default_values() -> dict[str, object]:
    """The CLI's defaults: project paths from ``hrm_assets.settings``, data_io's numbers."""
    values: dict[str, object] = {
        "tokenized_path": settings.tokenized_root(),
        "output_path": settings.sampled_root() / "local",
        "prefix_config_path": settings.default_prefix_config_path(),
    }
    for key in (*INT_KEYS, *BOOL_KEYS):
        values[key] = SamplingConfig.model_fields[key].default
    return values


def parse_arguments(arguments: Sequence[str]) -> SamplingConfig:
    """``key=value`` arguments (last one wins, as with OmegaConf) to a validated config."""
    values = default_values()
    for argument in arguments:
        key, sep, value = argument.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"expected key=value, got {argument!r}")
        if key in PATH_KEYS:
            if not value.strip():
                raise UsageError(f"{key}: empty path")
            values[key] = Path(value)
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
        else:
            known = ", ".join((*PATH_KEYS, *INT_KEYS, *BOOL_KEYS))
            raise UsageError(f"unknown key {key!r} (known keys: {known})")
    try:
        return make_config(**values)
    except SamplingError as exc:
        raise UsageError(str(exc)) from None


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr, flush=True)


def _fail(message: str, status: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0 ok, 1 bad data or I/O, 2 bad arguments)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if any(argument in ("-h", "--help") for argument in arguments):
        sys.stdout.write(USAGE)
        return 0
    try:
        config = parse_arguments(arguments)
    except UsageError as exc:
        return _fail(f"{exc}\n{USAGE.splitlines()[0]}", 2)
    try:
        result = sample_tokenized(config, progress=True, warn=_warn)
    except SamplingError as exc:
        return _fail(str(exc), 1)
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc), 1)
    except KeyboardInterrupt:
        return _fail("interrupted; the previous output is unchanged", 130)
    sys.stdout.write(render_report(result))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
