"""The legal notice every report carries (our wording, same meaning as the original's)."""

SHORT = ("Findings and recommendations in this report are generated automatically and are for "
         "information only.")

FULL = (
    "This report is generated automatically from profiling data of your training job. Its findings and "
    "recommendations are provided for information only: they may be incomplete or not apply to your "
    "workload, and you are responsible for assessing them independently before acting on them.",
    "reportgen is open-source software distributed under the Apache License 2.0, on an \"as is\" basis, "
    "without warranties or conditions of any kind. It is not affiliated with or endorsed by Amazon Web "
    "Services; SageMaker is a trademark of Amazon.com, Inc. or its affiliates.",
)
