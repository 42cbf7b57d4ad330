"""The contracts every stage shares: what a cleaned row's condition tags are and which tokens
frame a row (``framing``), the arrays of a tokenized folder and of an epoch (``spans``), how a
task name finds its sampling rule in ``prefix_config.yaml`` (``prefix_rules``), and the record of
the published cleaned corpus a tokenized folder was made from (``cleaned_provenance``).

This package imports nothing of the project's but ``common`` and the compiled core, and every
stage may import it (docs/ARCHITECTURE.md, "Layers"; tests/project/test_import_graph.py).
"""
