import time

import pytest

from tickets.models import TicketMessage
from tickets.tasks import post_system_message


@pytest.mark.services
def test_a_real_worker_executes_a_task_from_the_real_broker(celery_worker, demo):
    """Redis in CI, the filesystem transport on a laptop."""
    post_system_message.delay("TCK-1001", "Hello from the worker")

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if TicketMessage.objects.filter(body="Hello from the worker").exists():
            break
        time.sleep(0.2)
    message = TicketMessage.objects.get(body="Hello from the worker")
    assert message.ticket.reference == "TCK-1001"
    assert message.author_kind == "system"
    assert "post_system_message" in celery_worker.log()
