"""Run one of data_io's cleaning scripts with its Hub loads redirected to local files.

Usage, from a work folder whose ``raw_data`` is the golden raw root and with a data_io checkout
on ``PYTHONPATH``::

    python run_data_io_offline.py pipe.clean_gsm8k_train

data_io's code is run unchanged (``runpy``). Before it runs, ``datasets.load_dataset(hub_id,
config, split=...)`` is replaced by ``load_dataset("json", data_files=
"raw_data/<hub_id>/<config>/<split>.jsonl", split=...)`` and ``get_dataset_config_names(hub_id)``
by the sorted config folders of ``raw_data/<hub_id>`` (the Hub lists hendrycks_math's configs
in that order). Scripts that read ``raw_data/`` themselves (dmmath, ARB) need no redirection.
"""

from __future__ import annotations

import os
import runpy
import sys

import datasets

RAW = "raw_data"
_hub_load_dataset = datasets.load_dataset


def local_config_names(path: str, *args, **kwargs) -> list[str]:
    root = os.path.join(RAW, path)
    return sorted(name for name in os.listdir(root) if os.path.isdir(os.path.join(root, name)))


def local_load_dataset(path: str, name: str | None = None, split: str | None = None, **kwargs):
    folder = os.path.join(RAW, path, name or "default")
    if split is None:
        names = os.listdir(folder)
        splits = sorted(f.removesuffix(".jsonl") for f in names if f.endswith(".jsonl"))
    else:
        splits = [split]
    data_files = {s: os.path.join(folder, f"{s}.jsonl") for s in splits}
    return _hub_load_dataset("json", data_files=data_files, split=split)


datasets.load_dataset = local_load_dataset
datasets.get_dataset_config_names = local_config_names

if __name__ == "__main__":
    runpy.run_module(sys.argv[1], run_name="__main__", alter_sys=True)
