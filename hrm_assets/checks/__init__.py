"""Checks of the outputs, above every stage: they read what cleaning, tokenization and sampling
wrote and never write.

- :mod:`~hrm_assets.checks.consistency`: the asset checks' consistency checks of cleaned files,
  tokenized folders and sampled folders (each a ``CheckReport``).
- :mod:`~hrm_assets.checks.verify`: output folders against their ``manifest.json``, the span rule
  and their identity; :mod:`~hrm_assets.checks.cli`: its command, ``hrm-verify``
  (``python -m hrm_assets.checks``).
"""
