"""reportgen: standalone, offline HTML profiling reports for ML training jobs.

The pipeline: resolve the source -> read raw data / rule outputs -> run the rules ->
execute the analysis notebook (papermill) -> nbconvert with our template -> one HTML file.
"""

__version__ = "0.1.0"
