"""Redis is killed and restarted, again and again, while a worker with embedded beat runs
tasks (DESIGN §8): the worker and its beat live on and carry on with the restarted Redis."""

import pytest
import redis

from refunds.models import RefundRequest
from refunds.tasks import execute_refund
from tests.conftest import TEST_QUEUE
from tests.services import WorkerProcess, wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

REDIS_KILLS = 3
# The provider holds each answer this long: Redis is killed while the task waits for it.
PROVIDER_ANSWERS_AFTER_S = 3.0
# Where beat (-B) sends the periodic sweeps: Celery's default queue, which the worker under
# test does not consume, so what beat published stays there to be counted.
BEAT_QUEUE = "celery"


def test_it_keeps_a_worker_and_its_beat_running_across_redis_kills_with_tasks_in_flight(
    private_redis, stripe_server, make_refund, tmp_path
):
    # Given a worker with embedded beat on the private Redis, whose provider answers late
    stripe_server.stall_next(count=REDIS_KILLS, seconds=PROVIDER_ANSWERS_AFTER_S)
    worker = WorkerProcess(
        TEST_QUEUE,
        log_name="flt-broker-restarts",
        extra_env={
            "REDIS_URL": private_redis.url,
            "REFUND_ADAPTER": "stripe",
            "STRIPE_API_KEY": stripe_server.api_key,
            "STRIPE_API_BASE": stripe_server.url,
            "AGENT_SWEEP_SECONDS": "1",
        },
        extra_args=["--beat", "--schedule", str(tmp_path / "beat-schedule")],
        # As `make worker`: a free process keeps a read pending on Redis while the other
        # runs the task, so the kill breaks both.
        concurrency=2,
    ).start()
    refunds = [make_refund() for _ in range(REDIS_KILLS + 1)]
    try:
        for killed, refund in enumerate(refunds[:REDIS_KILLS], start=1):
            # When Redis is SIGKILLed while the worker's task waits for the provider, and
            # comes back (empty: it keeps nothing on disk)
            execute_refund.delay(refund.pk)
            wait_for(
                lambda killed=killed: len(stripe_server.create_requests()) == killed,
                what="the provider call",
                worker=worker,
            )
            assert RefundRequest.objects.get(pk=refund.pk).status == "executing"
            private_redis.kill()
            private_redis.start()

            # Then the task that was running finishes, and the worker is still there
            wait_for(
                lambda refund=refund: RefundRequest.objects.get(pk=refund.pk).status == "succeeded",
                what=f"the refund in flight at kill {killed}",
                worker=worker,
            )
            assert worker.process.poll() is None, worker.log()[-4000:]

        # When a new task is sent to the restarted Redis
        last = execute_refund.delay(refunds[-1].pk)

        # Then the worker runs it, and beat publishes its sweeps there again
        wait_for(lambda: worker.finished(last), what="the task sent after the kills", worker=worker)
        beat_queue = redis.Redis.from_url(private_redis.url)
        wait_for(lambda: beat_queue.llen(BEAT_QUEUE) > 0, what="beat's next sweep", worker=worker)
        assert worker.process.poll() is None
    finally:
        worker.stop()

    # Then every refund was made once, under its own key, and nothing was fatal
    assert [RefundRequest.objects.get(pk=r.pk).status for r in refunds] == ["succeeded"] * len(
        refunds
    )
    assert [sent.headers["idempotency-key"] for sent in stripe_server.create_requests()] == [
        r.request_id for r in refunds
    ]
    assert len(stripe_server.refunds) == len(refunds)
    assert "Unrecoverable error" not in worker.log()
