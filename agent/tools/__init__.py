"""The tools the model can call (DESIGN §6).

registry.py    the declarations: one `Tool` per tool, its schema, kind, roles and handler
reads.py       the read handlers: an order, the customer's orders, policy, refund status
refund.py      create_refund, which proposes a refund through the refunds services
paging.py      results over MAX_RESULT_CHARS, and read_tool_result, which pages through them
validation.py  the arguments checked against each tool's JSON Schema (with jsonschema)
"""
