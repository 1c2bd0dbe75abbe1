"""The desk's tools for other agent hosts over the Model Context Protocol (DESIGN §12).

`manage.py mcp_server` serves them over streamable HTTP (`agent.mcp.http`) or stdio
(`agent.mcp.stdio`). Both transports authenticate an MCP token (DESIGN §17) and bind one
ticket when a session starts (`agent.mcp.auth`), record the session (`agent.mcp.sessions`),
and answer every request with the same server (`agent.mcp.server`): the tools of agent.tools,
run by agent.executor exactly as in a run.
"""
