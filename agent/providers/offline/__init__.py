"""The offline planner: a deterministic stand-in for the model, with no network (DESIGN §3).

planner.py     `OfflinePlanner` and the next move: which tool to call, or answer
transcript.py  the transcript as the planner reads it: calls, results, the ticket's order
intent.py      what the customer's words say happened (the agent's request is read by
               agent/vocabulary/requests.py)
answer.py      the final answer, composed from the tool results
"""
