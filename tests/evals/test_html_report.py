"""--html: one self-contained page a human reads, with every piece of case text escaped (cases
carry injection strings and HTML-like text on purpose)."""

from html.parser import HTMLParser

import pytest
from django.test import override_settings

from tests.evals.cases import MUG, case, database_for_the_module, run_eval, write_cases

NOTE = '<script>alert("note")</script><img src=x onerror=alert(1)> Leave it at the door.'
MESSAGE = "What did the customer pay? <b>bold</b> <a href='https://evil.example'>click</a>"

# The module's eval uses the database from a module fixture: the mark makes pytest-django set
# up the test database even when these are the only tests run (else the eval would write to,
# and then delete from, the database the settings name).
pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def page(django_db_setup, django_db_blocker, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("html")
    cases = write_cases(
        tmp_path / "cases.jsonl",
        [
            {
                # Fails on purpose (the planner looks the order up), so its transcript is shown.
                **case("<i>paid</i>", MESSAGE, tools=["list_customer_orders"]),
                "setup": [{"kind": "order_note", "order_id": MUG, "note": NOTE}],
            },
            case("mug-paid", "What did the customer pay?", tools=["get_order"]),
        ],
    )
    html_path = tmp_path / "report.html"
    with override_settings(LLM_PROVIDER="offline"), database_for_the_module(django_db_blocker):
        run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"), "--html", str(html_path))
    return html_path.read_text(encoding="utf-8")


class Elements(HTMLParser):
    """Every element of a page, with its attributes, as a browser would parse them."""

    def __init__(self, page: str):
        super().__init__()
        self.found: list[tuple[str, dict]] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def test_the_page_needs_nothing_from_outside(page):
    elements = Elements(page).found

    assert page.startswith("<!DOCTYPE html>")
    assert {tag for tag, _ in elements} == {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "b", "span", "table",
        "thead", "tbody", "tr", "th", "td", "pre", "details", "summary", "ul", "li",
    }  # fmt: skip
    assert {name for _, attrs in elements for name in attrs} == {"lang", "charset", "class"}
    style = page[page.index("<style>") : page.index("</style>")]
    assert "url(" not in style
    assert "@import" not in style


def test_case_text_and_tool_results_are_escaped(page):
    assert "&lt;i&gt;paid&lt;/i&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt; &lt;a href=&#x27;https://evil.example&#x27;&gt;" in page
    # The order note reaches the page inside get_order's result, as JSON text.
    assert "&lt;script&gt;alert(\\&quot;note\\&quot;)&lt;/script&gt;&lt;img src=x" in page


def test_it_shows_metrics_the_confusion_matrix_and_the_failing_transcript(page):
    assert "<td>task_success</td><td class=num>0.5000</td>" in page
    assert "Expected first tool vs. first tool called" in page
    assert "<th>list_customer_orders</th><td class='num miss'>1</td>" in page
    assert "<th>get_order</th><td class='num hit'>1</td>" in page
    assert "Failing runs (1)" in page
    assert "missing tool call: list_customer_orders" in page
    assert "paid 129.00 CNY" in page  # the answer
