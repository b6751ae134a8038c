"""Interpreting Describe*Job responses (pure functions, shapes as in the spec)."""

from reportgen.sources.jobs import training_info_from_description
from reportgen.sources.s3 import S3Uri


def test_profiler_path_falls_back_to_output_path_and_rule_found_by_name():
    desc = {
        "TrainingJobName": "xgboost-2021-12-08-06-42-21-123",
        "TrainingJobStatus": "Completed",
        "OutputDataConfig": {"S3OutputPath": "s3://sagemaker-ap-southeast-1-123456789012/", "KmsKeyId": ""},
        "ResourceConfig": {"InstanceGroups": [
            {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 2, "InstanceGroupName": "a"},
            {"InstanceType": "ml.c5.xlarge", "InstanceCount": 1, "InstanceGroupName": "b"},
        ]},
        "ProfilerRuleEvaluationStatuses": [
            {"RuleConfigurationName": "ProfilerReport-1638945746", "RuleEvaluationStatus": "Error",
             "StatusDetails": "InternalServerError: We encountered an internal error. Please try again."},
        ],
    }
    info = training_info_from_description(desc, "ap-southeast-1")
    assert info.raw_uri == S3Uri("sagemaker-ap-southeast-1-123456789012", "xgboost-2021-12-08-06-42-21-123/profiler-output/")
    assert info.rule_output_uris == (
        S3Uri("sagemaker-ap-southeast-1-123456789012", "xgboost-2021-12-08-06-42-21-123/rule-output/ProfilerReport-1638945746/"),
    )
    assert (info.instance_type, info.instance_count) == ("ml.c5.xlarge, ml.p3.2xlarge", 3)
    assert info.incomplete is False
    assert info.notes == (
        "rule ProfilerReport-1638945746 ended in Error: InternalServerError: We encountered an internal error. Please try again.",
    )


def test_rule_identified_by_rule_to_invoke_not_name():
    desc = {
        "TrainingJobName": "job-1",
        "TrainingJobStatus": "Completed",
        "OutputDataConfig": {"S3OutputPath": "s3://out-bucket/out"},
        "ProfilerConfig": {"S3OutputPath": "s3://prof-bucket/prof", "ProfilingIntervalInMilliseconds": 500},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
        "ProfilerRuleConfigurations": [
            {"RuleConfigurationName": "LowGPU", "RuleEvaluatorImage": "i", "RuleParameters": {"rule_to_invoke": "LowGPUUtilization"}},
            {"RuleConfigurationName": "my-report", "RuleEvaluatorImage": "i", "RuleParameters": {"rule_to_invoke": "ProfilerReport"}},
        ],
    }
    info = training_info_from_description(desc, "us-west-2")
    assert info.rule.name == "my-report"
    assert info.raw_uri == S3Uri("prof-bucket", "prof/job-1/profiler-output/")
    assert info.rule_output_uris == (S3Uri("out-bucket", "out/job-1/rule-output/my-report/"),)
    assert info.notes == ()
