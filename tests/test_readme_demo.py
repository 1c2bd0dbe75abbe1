"""The README's walkthrough tells the demo data as `seed_demo` makes it: who each demo ticket
starts assigned to."""

import re
from pathlib import Path

from desk import demo

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _demo_assignees() -> dict[str, str | None]:
    return {reference: assignee for reference, _, _, _, assignee, _ in demo.TICKETS}


def _readme_assignees() -> dict[str, str | None]:
    """What the walkthrough's step 2 says each ticket starts with."""
    sentence = re.search(r"the demo data starts (.*?)\)", README, re.S)
    assert sentence, "the walkthrough no longer says who the demo tickets start assigned to"
    said: dict[str, str | None] = {}
    for part in re.split(r",\s*(?:and\s+)?", " ".join(sentence.group(1).split())):
        tickets = re.findall(r"TCK-\d+", part)
        user = re.search(r"`(\w+)`", part)
        for reference in tickets:
            said[reference] = user.group(1) if user and "unassigned" not in part else None
    return said


def test_the_walkthrough_says_who_each_demo_ticket_starts_assigned_to():
    assert _readme_assignees() == _demo_assignees()


def test_the_quick_start_logs_in_as_whoever_tck_1001_is_assigned_to():
    assignee = _demo_assignees()["TCK-1001"]

    assert f"As `{assignee}`, open ticket **TCK-1001**" in README
    assert f"it is already assigned to `{assignee}`" in README
