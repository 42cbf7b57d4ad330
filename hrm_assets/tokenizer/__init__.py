"""Stage 2, the tokenizer: byte-level BPE trained on the cleaned files in data_io's configuration.

- :mod:`~hrm_assets.tokenizer.train`: ``train_tokenizer`` and the files it reads from.

Dagster wiring: ``hrm_assets.defs.tokenizer``.
"""
