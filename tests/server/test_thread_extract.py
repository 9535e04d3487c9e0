"""``threads.search(extract=...)``: values picked out of each thread found, as ``langgraph dev`` answers them."""

from __future__ import annotations

import pytest
from _serve_proc import Server
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import UnprocessableEntityError


@pytest.fixture(scope="module")
def server(server_on_both: Server) -> Server:
    return server_on_both


def test_extract_picks_values_by_path_and_keeps_them_beside_select(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create(metadata={"user": "u7"})["thread_id"]
    client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": "hi"}]})
    paths = {
        "last": "values.messages[-1].content",
        "first_type": "values.messages[0].type",
        "user": "metadata.user",
        "missing": "values.nope.deeper",
        "beyond": "values.messages[9]",
    }
    (found,) = client.threads.search(ids=[tid], extract=paths)
    assert found["extracted"] == {
        "last": "you said: hi",
        "first_type": "human",
        "user": "u7",
        "missing": None,
        "beyond": None,
    }
    assert found["values"]["turns"] == 1  # the thread as without extract
    (picked,) = client.threads.search(ids=[tid], select=["thread_id"], extract={"user": "metadata.user"})
    assert picked == {"thread_id": tid, "extracted": {"user": "u7"}}


@pytest.mark.parametrize(
    ("extract", "message"),
    [
        ({"u": "foo.user"}, "must start with one of"),
        ({"1u": "metadata.user"}, "must be an identifier"),
        ({"status": "metadata.user"}, "is a field of the thread"),
        ({f"a{i}": "metadata.user" for i in range(11)}, "at most 10"),
        ({"u": "values..x"}, "cannot read"),
        ({"u": ""}, "non-empty"),
    ],
)
def test_bad_extracts_are_422(server: Server, extract: dict[str, str], message: str) -> None:
    with pytest.raises(UnprocessableEntityError, match=message):
        get_sync_client(url=server.url).threads.search(extract=extract)
