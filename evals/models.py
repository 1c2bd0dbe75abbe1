"""What `manage.py eval_agent` measured (DESIGN §11): one EvalRun per invocation, one
EvalCaseResult per case run. Written only by the command; read in admin to see how a prompt,
tools or model change moved each metric."""

from django.db import models


class EvalRun(models.Model):
    started_at = models.DateTimeField()
    # Null while the cases are still running (or when the command died before the end).
    finished_at = models.DateTimeField(null=True, blank=True)
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=100)
    prompt_version = models.CharField(max_length=32)
    tools_version = models.CharField(max_length=32)
    git_commit = models.CharField(max_length=40, blank=True)
    cases_path = models.CharField(max_length=500)
    repeat = models.PositiveIntegerField(default=1)
    concurrency = models.PositiveIntegerField(default=1)
    cases_count = models.PositiveIntegerField(default=0)
    metrics = models.JSONField(default=dict)
    # The whole JSON report the command wrote, so a stored run can be compared later.
    report = models.JSONField(default=dict)
    # Model latency of a run (the sum of its model calls), over the runs.
    latency_p50_ms = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"eval {self.pk} of {self.model} ({self.prompt_version}, {self.started_at:%Y-%m-%d})"


class EvalCaseResult(models.Model):
    """One case executed once (a *run* in DESIGN §11)."""

    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case_id = models.CharField(max_length=200)
    repeat_index = models.PositiveIntegerField(default=0)
    passed = models.BooleanField()
    tools_called = models.JSONField(default=list)
    failures = models.JSONField(default=list)
    answer = models.TextField(blank=True)
    # Tool calls with their arguments and results, the refunds created, and the answer.
    transcript = models.JSONField(default=dict)
    first_tool = models.CharField(max_length=100, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    # Why the case could not be run to the end (a setup step, a crashed worker), if it could not.
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["eval_run", "case_id", "repeat_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["eval_run", "case_id", "repeat_index"], name="eval_case_result_unique"
            ),
        ]

    def __str__(self) -> str:
        verdict = "pass" if self.passed else "fail"
        return f"{self.case_id} #{self.repeat_index} {verdict}"
