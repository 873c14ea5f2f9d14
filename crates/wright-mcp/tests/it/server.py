"""An MCP server for wright-mcp's tests, built on the official Python SDK (`mcp` on PyPI).

    python server.py stdio
    python server.py http PORT [HOST...]

Over HTTP the SDK's DNS-rebinding protection stays on; it answers `Host: 127.0.0.1`,
`localhost` and `[::1]` on any port, and the HOST names given (for tests that reach the server
under a name that only their own resolution knows).

Tools: echo (marked read-only), env (the variable names the process sees), big (a result of N bytes), die (the
process exits in the middle of the call), slow (answers after N seconds), grow / shrink (add or
remove the tool `added_later`, then send notifications/tools/list_changed).
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations

server = MCPServer("wright-test-server")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Returns the text it was given."""
    return text


@server.tool()
def env() -> str:
    """The names of the environment variables this process sees, sorted, comma-separated."""
    return ",".join(sorted(os.environ))


@server.tool()
def big(size: int) -> str:
    """A text of `size` bytes."""
    return "x" * size


@server.tool()
def die() -> str:
    """Exits the whole server process while the call is running."""
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Answers after `seconds`."""
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def fails() -> str:
    """Raises, which the SDK reports as a result with isError: true."""
    raise ValueError("the disk is on fire")


def added_later() -> str:
    return "I was added later"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `added_later` and tells the client the list changed."""
    server.add_tool(added_later, name="added_later", description="Added by grow")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
async def shrink(ctx: Context) -> str:
    """Removes the tool `added_later` and tells the client the list changed."""
    server.remove_tool("added_later")
    await ctx.session.send_tool_list_changed()
    return "shrunk"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", *(f"{host}:*" for host in sys.argv[3:])]
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts)
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), transport_security=security)
