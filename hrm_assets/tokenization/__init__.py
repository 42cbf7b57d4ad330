"""Stage 3, tokenization: cleaned files -> tokenized folders of ``.npy`` arrays (docs/CONTRACTS.md
section 2).

- :mod:`~hrm_assets.tokenization.tokenize`: the Python face of the Rust encoder
  (``hrm_assets._core``): a tree of cleaned files tokenized; its parts:
  :mod:`~hrm_assets.tokenization.tokenizer_setup` (the tokenizer and its encoder),
  :mod:`~hrm_assets.tokenization.versions` (data versions: when a folder is current),
  :mod:`~hrm_assets.tokenization.output_folders` (ownership of output folders, pruning),
  :mod:`~hrm_assets.tokenization.chunks` (many files, chunk by chunk),
  :mod:`~hrm_assets.tokenization.outcomes` (what each file came to).
- :mod:`~hrm_assets.tokenization.cli`: data_io's tokenizer command (``hrm-tokenize``,
  ``python -m hrm_assets.tokenization``).
- :mod:`~hrm_assets.contracts.framing`: the special tokens around instruction and response.
- :mod:`~hrm_assets.tokenization.partitioning`: which cleaned files (partitions) a source has.
- :mod:`~hrm_assets.tokenization.snapshot`: one consistent version of a tokenized root, held
  while a reader (the sampler, an export) reads it.
- :mod:`~hrm_assets.tokenization.identity`: whose data a tokenized folder holds (its
  ``metadata.json`` against its name and arrays), and what a reader refuses in its inputs.

Dagster wiring: ``hrm_assets.defs.tokenized``. Rust core: ``rust_tokenizer/src/tokenize/``.
"""
