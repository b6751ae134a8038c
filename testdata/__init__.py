"""Development-only data generators (not shipped in the ``reportgen`` package).

``testdata.synthetic`` writes deterministic SageMaker-Debugger raw profiles: ``sample_data/``
(``scripts/make_sample_data.py``), the benchmark profiles (``benchmarks/generate_data.py``) and the
tests' small profiles.  Import it from the repository root (``PYTHONPATH=.``; pytest does this).
"""
