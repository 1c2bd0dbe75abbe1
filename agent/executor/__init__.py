"""The one executor (DESIGN §6): every tool call a run or an MCP session makes goes through it.

calls.py      the pipeline: decide a call (checks, first failure wins), run it, log it
arguments.py  parsing the model's argument string; the canonical, storable form of arguments
outcome.py    a call's outcome as data; running a handler under its timeout; results over the cap
log.py        the call's one ToolCallLog row, and the logged result when a call id comes again
prior.py      what the run has called already (PriorCalls), or the database's answer (LogChecks)
pool.py       the process's call threads, which keep their database connections; the step runs
              its model calls on them too
loops.py      loop detection over a run's calls; its keys are worked out here, once per call,
              so it lives below the step that asks it
"""
