from django.db import models
from django.db.models import Q


class Policy(models.Model):
    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)

    class Meta:
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return self.title


class PolicyVersion(models.Model):
    """One version of a policy. Published versions are immutable: editing makes a new draft."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"
        RETIRED = "retired", "Retired"

    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="versions")
    version = models.PositiveIntegerField()
    effective_from = models.DateField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    # Parameters of the refund rules (policies/rules.py), e.g. {"refund_window_days": 30}.
    rules = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["policy", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "version"], name="policy_version_unique"),
            models.UniqueConstraint(
                fields=["policy"],
                condition=Q(status="published"),
                name="one_published_version_per_policy",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.policy.slug} v{self.version} ({self.status})"


class Clause(models.Model):
    policy_version = models.ForeignKey(
        PolicyVersion, on_delete=models.CASCADE, related_name="clauses"
    )
    ref = models.CharField(max_length=16)
    title = models.CharField(max_length=200)
    text = models.TextField()

    class Meta:
        ordering = ["policy_version", "ref"]
        constraints = [
            models.UniqueConstraint(fields=["policy_version", "ref"], name="clause_ref_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.ref} {self.title}"
