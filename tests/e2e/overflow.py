"""Whether a page fits its window: nothing may make the whole page scroll sideways. Long ids,
JSON and tables wrap or scroll inside their own box instead."""

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


def page_width(page) -> int:
    """How wide the page's content is, in CSS pixels (more than the window: it overflows)."""
    return page.evaluate("document.documentElement.scrollWidth")


def assert_fits(page, what: str) -> None:
    window = page.viewport_size["width"]
    width = page_width(page)
    assert width <= window, f"{what} is {width}px wide in a {window}px window"
