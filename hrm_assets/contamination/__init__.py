"""Know your data: training rows against the evaluation sets (contamination), and the same row
under two sources (exact duplicates). docs/CONTAMINATION.md says what is checked and how to read
the report.

- :mod:`.evalsets`: the evaluation sets (built in, or declared in YAML), loaded from the Hub
  with ``datasets`` or from a local mirror laid out like the Hub, saved as one JSONL each;
- :mod:`.scan`: the hashed word-n-gram index (Rust core, ``_core.NgramIndex``) and the scan of
  cleaned files, one read per file for both passes, with per-file and per-source reports;
- :mod:`.duplicates`: exact duplicates of normalized (instruction, response), counted per
  source pair.

Pure logic: ``hrm_assets/defs/eval/`` turns the reports into Dagster assets and checks.
"""
