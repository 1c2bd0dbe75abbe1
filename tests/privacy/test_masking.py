"""What the model may see of a customer (DESIGN §17): addresses, phone numbers and last
names masked; the desk's identifiers, amounts and dates untouched."""

import time

import pytest

from agent.privacy import (
    Masker,
    fill_customer_details,
    first_name,
    mask_for_model,
    mask_result_for_model,
)
from orders.models import Customer
from tests.factories import OrderFactory


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("li.wei@example.com", "l***@example.com"),
        ("Write to Maria.Garcia+shop@mail.example.co.uk.", "Write to M***@mail.example.co.uk."),
        ("<sam_carter@example.org>", "<s***@example.org>"),
        ("13800138000@qq.com", "1***@qq.com"),
        ('"li.wei"@example.com', '"***@example.com'),
        ("li[dot]wei[at]example[dot]com", "l***[at]example[dot]com"),
        ("用户 wang@例子.公司 来信", "用户 w***@例子.公司 来信"),
    ],
)
def test_it_masks_email_addresses_to_their_first_character_and_domain(text, masked):
    assert mask_for_model(text) == masked


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("+86 138 0013 8000", "+** *** **** **00"),
        ("+8613800138000", "+***********00"),
        ("0086-138-0013-8000", "****-***-****-**00"),
        ("+1 (415) 555-0123", "+* (***) ***-**23"),
        ("+44 20 7946 0958", "+** ** **** **58"),
        ("+49 30 1234567", "+** ** *****67"),
        ("(415) 555-0123", "(***) ***-**23"),
        ("415-555-0123", "***-***-**23"),
        ("415.555.0123", "***.***.**23"),
        ("020 7946 0958", "*** **** **58"),
        ("07700 900123", "***** ****23"),
        ("010-12345678", "***-******78"),
        ("01 23 45 67 89", "** ** ** ** 89"),
        ("13800138000", "*********00"),
        ("138-0013-8000", "***-****-**00"),
        ("138 0013 8000", "*** **** **00"),
    ],
)
def test_it_masks_phone_numbers_in_international_and_local_formats(text, masked):
    assert mask_for_model(f"call me on {text} please") == f"call me on {masked} please"


@pytest.mark.parametrize(
    "text",
    [
        "order 202610110087",
        "orders 20261011008712345678 and 12345678",
        "Amount 129.00, total 1,299.00 CNY, 6999.00, 1 299.50",
        "delivered 2026-10-11T09:00:00+00:00, on 2026-10-11 14:30",
        "ticket TCK-1001, request rf_0123456789abcdef01234567, version 2",
        "sku MUG-001-1234567 at 10:30",
        "clause R-2, 30 days, 500.00 limit",
        "l***@example.com and +** *** **** **00",
    ],
)
def test_it_leaves_order_ids_amounts_dates_and_identifiers_alone(text):
    assert mask_for_model(text) == text


@pytest.mark.django_db
def test_it_names_the_customer_by_first_name_only():
    customer = Customer.objects.create(name="Maria Garcia", email="maria.garcia@example.com")

    masked = mask_for_model(
        "Hello, I am MARIA GARCIA (maria.garcia@example.com). Regards, Garcia. — Maria",
        customer=customer,
    )

    assert masked == "Hello, I am Maria (m***@example.com). Regards, G.. — Maria"
    assert first_name(customer) == "Maria"


@pytest.mark.django_db
def test_a_bare_number_that_is_one_of_the_customers_order_ids_is_not_a_phone_number():
    customer = Customer.objects.create(name="Li Wei", email="li.wei@example.com")
    OrderFactory(customer=customer, order_id="13912345678")

    masked = mask_for_model("order 13912345678, phone 13800138000", customer=customer)

    assert masked == "order 13912345678, phone *********00"


@pytest.mark.django_db
def test_it_masks_every_string_of_a_result_but_the_desks_identifiers():
    customer = Customer.objects.create(name="Li Wei", email="li.wei@example.com")
    result = {
        "ok": True,
        "order_id": "13800138000",
        "amount_paid": "129.00",
        "lines": [{"sku": "MUG-1", "name": "Mug for Li Wei"}],
        "note": {"untrusted_customer_text": "Call Wei on 13800138000 or li.wei@example.com"},
        "total": 3,
    }

    assert mask_result_for_model(result, customer=customer) == {
        "ok": True,
        "order_id": "13800138000",
        "amount_paid": "129.00",
        "lines": [{"sku": "MUG-1", "name": "Mug for Li"}],
        "note": {"untrusted_customer_text": "Call W. on *********00 or l***@example.com"},
        "total": 3,
    }


@pytest.mark.django_db
def test_a_draft_gets_the_real_name_and_address_from_the_customer_record():
    customer = Customer.objects.create(name="Li Wei", email="li.wei@example.com")

    draft = fill_customer_details(
        "Dear {{customer.name}}, we wrote to l***@example.com, not to s***@example.com. "
        "Thanks, {{customer.first_name}} ({{customer.email}})",
        customer=customer,
    )

    assert draft == (
        "Dear Li Wei, we wrote to li.wei@example.com, not to s***@example.com. "
        "Thanks, Li (li.wei@example.com)"
    )


def test_a_long_tool_result_full_of_numbers_is_masked_quickly():
    # Digits everywhere, none of them personal data, then one phone number: the finders read
    # runs of digits once and ask phonenumbers only about the few that could be one.
    text = "1234567 " * 2500 + "order 202610110087 (415) 555-0123 " * 100

    started = time.perf_counter()
    masked = mask_for_model(text)

    assert time.perf_counter() - started < 2
    assert masked.count("(***) ***-**23") == 100
    assert masked.startswith("1234567 1234567 ")


@pytest.mark.parametrize(
    "unit",
    ["钱款", "退", "0-", "0-" * 63 + "0 x ", "1 ", "999 ", "+8", "a@", "9." * 20 + " x "],
)
def test_a_text_made_to_cost_seconds_is_masked_in_a_fraction_of_one(unit):
    # Found by fuzzing the reply API: a CJK run read again from each of its characters (35 s
    # for 20,000), and runs of single digits tried every way they could split (10 s). What
    # no person writes is masked unread rather than read at any cost.
    text = (unit * 20_000)[:20_000]

    started = time.process_time()
    masked = mask_for_model(text)

    assert time.process_time() - started < 5
    assert len(masked) == len(text)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("电话１３８００１３８０００。", "电话*********００。"),
        ("li.wei＠example.com", "l***＠example.com"),
        ("li.wei\u200b@example.com", "l***\u200b@example.com"),
        ("138/0013/8000", "***/****/**00"),
        ("137_1234_5678", "***_****_**78"),
        ("138–0013–8000", "***–****–**00"),
        ("1 3 8 0 0 1 3 8 0 0 0", "* * * * * * * * * 0 0"),
        ("手机号13800138000", "手机号*********00"),
        ("身份证11010519491231002X", "身份证****************2X"),
        ("卡号 6222 0212 3456 7890 128", "卡号 **** **** **** ***0 128"),
        ("card 4111111111111111", "card ************1111"),
    ],
)
def test_it_masks_what_people_type_and_keeps_the_rest_as_written(text, masked):
    assert mask_for_model(text) == masked


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("电话:13800138000/13912345678", "电话:*********00/*********78"),
        ("call 13800138000,13912345678", "call *********00,*********78"),
        ("order 202610110087 13800138000", "order 202610110087 *********00"),
        ("Tel13800138000", "Tel*********00"),
        ("幺三八零零幺三八零零零", "*********零零"),
        ("０９０ー１２３４ー５６７８", "***ー****ー**７８"),
        ("IBAN DE89 3704 0044 0532 0130 00", "IBAN **** **** **** **** **30 00"),
    ],
)
def test_it_masks_numbers_written_together_glued_or_in_chinese_numerals(text, masked):
    assert mask_for_model(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "Invoice no. 2026-000123, ISBN 978-3-16-148410-0, version 1.2.3.4567890",
        "price 1 234 567 (approx), tracking 773 456 789 012, 0.12345678 BTC",
        "订单二〇二六一〇一一〇〇八七, call create_refund for order 202610280001",
    ],
)
def test_it_leaves_numbers_grouped_unlike_any_regions_phone_numbers_alone(text):
    assert mask_for_model(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "total 415 555 0199 USD",
        "total USD 415 555 0199",
        "total 020 7946 0958 GBP",
        "余额 13800138000 元",
        "paid 020 7946 0958 kr",
    ],
)
def test_a_number_with_a_currency_code_or_word_beside_it_is_an_amount(text):
    without_currency = text.replace("USD", "").replace("GBP", "").replace("元", "")
    without_currency = without_currency.replace(" kr", "").strip()

    assert mask_for_model(text) == text
    assert mask_for_model(without_currency) != without_currency


@pytest.mark.django_db
def test_the_context_remembers_a_masking_by_the_text_the_name_and_the_order_ids():
    customer = Customer.objects.create(name="Li Wei", email="li.wei@example.com")
    text = "Li Wei, order 13912345678, phone 13800138000"

    assert Masker(customer).remembered_text(text) == "Li, order *********78, phone *********00"

    OrderFactory(customer=customer, order_id="13912345678")
    assert Masker(customer).remembered_text(text) == "Li, order 13912345678, phone *********00"

    customer.name = "Wei Li"
    assert Masker(customer).remembered_text(text) == "L. Wei, order 13912345678, phone *********00"
    assert Masker(customer).remembered_text(text) == Masker(customer).text(text)
