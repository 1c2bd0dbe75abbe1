"""Personal data in the forms people type it (tests/data/masking_forms.jsonl, the tuning set):
every phone number, address, identity number and card of a line is kept from the model, and
every order number, amount, date, time and desk identifier of a line reaches it as written."""

import json
import unicodedata
from pathlib import Path

import pytest

from agent.privacy import mask_for_model
from desk.demo import ORDERS
from tests.factories import CustomerFactory, OrderFactory

FORMS = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "data" / "masking_forms.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
    if line.strip()
]
# One of the customer's orders has the shape of a Chinese mobile number: it stays an order id.
MOBILE_SHAPED_ORDER_ID = "15912345678"


def comparable(text: str) -> str:
    """Letters and digits only, as the model could read them whatever the separators."""
    return "".join(
        char for char in unicodedata.normalize("NFKC", text).casefold() if char.isalnum()
    )


def reaches_the_model(value: str, masked: str) -> bool:
    """All of `value` but its last two characters (the digits a masked number keeps) is still
    readable in `masked`."""
    return comparable(value)[:-2] in comparable(masked)


@pytest.fixture
def customer(db):
    customer = CustomerFactory(name="Li Wei", email="li.wei@example.com")
    for order_id in [row[0] for row in ORDERS] + [MOBILE_SHAPED_ORDER_ID]:
        OrderFactory(customer=customer, order_id=order_id)
    return customer


def test_the_tuning_set_is_varied_enough_to_tune_on():
    assert len(FORMS) >= 80
    assert len({form["lang"] for form in FORMS}) >= 8
    assert sum(1 for form in FORMS if not form["hide"]) >= 30


@pytest.mark.parametrize(
    "form", FORMS, ids=[f"{n}-{form['lang']}" for n, form in enumerate(FORMS, start=1)]
)
def test_personal_data_is_masked_and_the_desks_figures_are_not(form, customer):
    masked = mask_for_model(form["text"], customer=customer)

    assert [value for value in form["hide"] if reaches_the_model(value, masked)] == []
    assert [value for value in form["keep"] if value not in masked] == []
    # Masked text masked again is unchanged: a transcript masked as it was logged stays so.
    assert mask_for_model(masked, customer=customer) == masked
