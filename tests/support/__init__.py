"""What several test modules share: builders of inputs (cleaned rows, tokenized trees, sampled
corpora, instance configs), Dagster fixtures, the demo graph, the browser driver and the
ndarray-npy oracle. Importable as ``support.<module>`` from every test folder (``tests/`` is on
``sys.path`` through its ``conftest.py``)."""
