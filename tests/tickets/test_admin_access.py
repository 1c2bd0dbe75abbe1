import pytest

pytestmark = pytest.mark.django_db

REVIEWER_PAGES = [
    "/admin/refunds/refundrequest/",
    "/admin/agent/toolcalllog/",
    "/admin/orders/order/",
    "/admin/tickets/ticket/",
]


@pytest.mark.parametrize("url", REVIEWER_PAGES)
def test_it_lets_a_reviewer_inspect_refunds_in_admin(client, demo, url):
    client.login(username="reviewer", password="demo-pass-123")
    assert client.get(url).status_code == 200


def test_it_keeps_support_agents_out_of_admin(client, demo):
    client.login(username="agent", password="demo-pass-123")
    response = client.get("/admin/refunds/refundrequest/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_a_reviewer_cannot_edit_orders_in_admin(client, demo):
    client.login(username="reviewer", password="demo-pass-123")
    response = client.get("/admin/orders/order/add/")
    assert response.status_code == 403
