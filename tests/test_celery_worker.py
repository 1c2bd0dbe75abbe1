from datetime import timedelta

import pytest
from django.utils import timezone

from refunds.models import RefundRequest
from refunds.tasks import expire_confirmations
from tests.factories import RefundProposalFactory
from tests.services import wait_for


@pytest.mark.services
def test_a_real_worker_executes_a_task_from_the_real_broker(celery_worker, agent_user):
    """Redis in CI, the filesystem transport on a laptop."""
    lapsed = RefundProposalFactory(requested_by=agent_user)
    lapsed.confirmations.update(expires_at=timezone.now() - timedelta(minutes=1))

    sent = expire_confirmations.delay()

    wait_for(lambda: celery_worker.finished(sent), what="the task", worker=celery_worker)
    lapsed.refresh_from_db()
    assert lapsed.status == RefundRequest.Status.EXPIRED
    assert "refunds.tasks.expire_confirmations" in celery_worker.log()
