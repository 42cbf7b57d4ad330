"""Adoption: taking existing outputs (a published cleaned corpus, data_io's tokenizer) as the
platform's own inputs without copying or modifying them.

- :mod:`~hrm_assets.adoption.cleaned`: cleaned roots laid out as data_io writes them (``data/``
  and ``data_clustered/``) or as a Hugging Face Hub download caches them (symlinks into
  ``blobs/``): their files by source, content versions and provenance.

The tokenizer's adoption rule is :func:`hrm_assets.tokenizer.train.is_ours`. Dagster wiring:
``hrm_assets.defs.tokenized.sensors`` (records) and ``hrm_assets.defs.tokenized.assets``
(reads).
"""
