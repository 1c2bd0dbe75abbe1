"""The step of an assistant run (DESIGN §7), which a Celery task runs (agent/tasks.py).

run_step.py      the step loop: `advance` holds the run, calls the model or the tools, hands over
step_base.py     the step's outcome, lease and writes, which its other parts stand on
step_endings.py  the limits that force a run's last answer (steps, time, loops) and its endings
step_tools.py    running a reply's tool calls, saving each result, handing the run over
step_answer.py   the model's final answer: posted, asked again for, or replaced
step_model.py    the model call: context, retries, the breaker, the reply saved
calls.py         a step's tool calls: which are pending, which run together, how events name them
prompts.py       the system prompt and the context sent to the model on every step
handover.py      what a step leaves in its process for the next step of its run
replies.py       what one model reply may put into a run
streaming.py     the answer as it arrives, as `message.delta` events
"""
