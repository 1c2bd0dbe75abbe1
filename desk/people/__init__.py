"""A desk user's own name and signature (DESIGN §19): the API (api.py) and the page (views.py)."""
