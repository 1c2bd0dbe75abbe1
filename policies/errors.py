from config.errors import ApplicationError, Conflict


class PolicyVersionImmutable(Conflict):
    """A published or retired version is never edited; draft a new version instead (409)."""

    code = "policy_version_immutable"


class PolicyPublishRefused(ApplicationError):
    """The version cannot be published as it stands (400)."""

    code = "policy_publish_refused"
