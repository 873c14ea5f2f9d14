"""An MCP client built on the official Python SDK (`mcp` on PyPI), for the tests of Wright's
`/mcp` endpoint: connects over streamable HTTP, lists the tools, calls the ones it is asked to.

    python mcp_client.py MODE URL TOKEN CALLS

MODE is `legacy` (a `ClientSession`: the initialize handshake most clients speak today) or
`auto` (the SDK's `Client`, which asks `server/discover` first and speaks the stateless
2026-07-28 protocol when the server offers it). TOKEN is sent as `Authorization: Bearer TOKEN` (an empty string sends no header). CALLS is a
JSON list of [name, arguments]. Prints one JSON object: the HTTP statuses the client saw,
and either `tools` and `results` (each a CallToolResult as the SDK parsed it) or `error`.
"""

import asyncio
import json
import sys

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def describe(error: BaseException) -> str:
    """The error, with the errors inside an exception group (anyio's task groups wrap them)."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    return f"{type(error).__name__}: {error}"


async def main(mode: str, url: str, token: str, calls: list) -> dict:
    statuses: list[int] = []

    async def record(response):
        statuses.append(response.status_code)

    headers = {"Authorization": f"Bearer {token}"} if token else None
    http_client = create_mcp_http_client(headers=headers)
    http_client.event_hooks["response"].append(record)
    outcome: dict = {"statuses": statuses}
    try:
        async with http_client:
            if mode == "legacy":
                async with streamable_http_client(url, http_client=http_client) as (read, write):
                    async with ClientSession(read, write) as session:
                        initialized = await session.initialize()
                        outcome["server"] = initialized.server_info.name
                        outcome["protocol"] = initialized.protocol_version
                        outcome["tools"] = [dump(tool) for tool in (await session.list_tools()).tools]
                        outcome["results"] = [dump(await session.call_tool(name, args)) for name, args in calls]
            else:
                transport = streamable_http_client(url, http_client=http_client)
                async with Client(transport, mode=mode, cache=None) as client:
                    outcome["server"] = client.server_info.name
                    outcome["protocol"] = client.protocol_version
                    outcome["tools"] = [dump(tool) for tool in (await client.list_tools()).tools]
                    outcome["results"] = [dump(await client.call_tool(name, args)) for name, args in calls]
    except BaseException as error:  # noqa: BLE001 - the test reads what went wrong
        outcome["error"] = describe(error)
    return outcome


if __name__ == "__main__":
    result = asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))
    print(json.dumps(result))
