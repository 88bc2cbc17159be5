"""`kiwi lsp` under the capabilities of real clients (pytest-lsp's recorded sets: VS Code,
Neovim 0.6 to 0.11, Emacs/eglot).

Run with `bash tests/lsp/run.sh [path/to/kiwi]`. Each test runs once per client. Besides what
each test asserts, pytest-lsp checks every answer against the client's capabilities (completion
items, work-done progress, ...) and fails the test on a mismatch, and these tests fail when the
server sends a request the client did not declare support for.
"""

import asyncio
import json
import os
import pathlib
import urllib.parse
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

KIWI = os.environ["KIWI_BIN"]
PROJECT = pathlib.Path(os.environ["KIWI_LSP_PROJECT"])
DIRECTIVE = PROJECT / ".ai/directives/greet.md"
RUNTIME = PROJECT / ".ai/tools/rt/py_rt.py"
TOOL = PROJECT / ".ai/tools/text/echo.py"
# Written by run.sh: a directive calling `shared/shout`, a tool of the extra space KIWI_SPACES names.
USES_EXTRA = PROJECT / ".ai/directives/uses_extra.md"
# Written by run.sh: the skills `deploy` and `review`, and an AGENTS.md naming `deploy`.
DEPLOY = PROJECT / ".agents/skills/deploy"
REVIEW = PROJECT / ".agents/skills/review/SKILL.md"
AGENTS = PROJECT / "AGENTS.md"

CLIENTS = [
    "visual-studio-code@v1.65.2",
    "neovim@v0.6.1",
    "neovim@v0.7.0",
    "neovim@v0.8.0",
    "neovim@v0.9.1",
    "neovim@v0.10.0",
    "neovim@v0.11.0",
    "emacs@v29.1",
]

# Server-to-client requests and the client capability each one needs.
NEEDS = {
    types.CLIENT_REGISTER_CAPABILITY: "workspace.didChangeWatchedFiles.dynamicRegistration",
    types.WORKSPACE_CODE_LENS_REFRESH: "workspace.codeLens.refreshSupport",
    types.WORKSPACE_INLAY_HINT_REFRESH: "workspace.inlayHint.refreshSupport",
    types.WORKSPACE_SEMANTIC_TOKENS_REFRESH: "workspace.semanticTokens.refreshSupport",
}


def make_client() -> LanguageClient:
    client = make_test_lsp_client()
    client.server_requests = []  # type: ignore[attr-defined]

    def recorder(method: str):
        def handle(ls: LanguageClient, params: Any):
            ls.server_requests.append((method, params))  # type: ignore[attr-defined]
            return None

        return handle

    for method in NEEDS:
        client.feature(method)(recorder(method))
    return client


def capability(caps: types.ClientCapabilities, dotted: str) -> bool:
    value: Any = caps
    for part in dotted.split("."):
        value = getattr(value, {"didChangeWatchedFiles": "did_change_watched_files",
                                "dynamicRegistration": "dynamic_registration",
                                "codeLens": "code_lens", "inlayHint": "inlay_hint",
                                "semanticTokens": "semantic_tokens",
                                "refreshSupport": "refresh_support"}.get(part, part), None)
        if value is None:
            return False
    return bool(value)


def client_info(name: str) -> types.ClientInfo:
    """The `clientInfo` each client sends with its capabilities (`neovim@v0.7.0`: Neovim 0.7.0)."""
    client, version = name.split("@v")
    names = {"visual-studio-code": "Visual Studio Code", "neovim": "Neovim", "emacs": "Eglot"}
    return types.ClientInfo(name=names[client], version=version)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[KIWI, "lsp"], client_factory=make_client),
    params=CLIENTS,
)
async def client(lsp_client: LanguageClient, request):
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            client_info=client_info(request.param),
            root_uri=PROJECT.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=PROJECT.as_uri(), name="proj")],
        )
    )
    lsp_client.init_result = result  # type: ignore[attr-defined]
    lsp_client.label = request.param  # type: ignore[attr-defined]
    yield
    # No request the client cannot handle, whatever happened in the test.
    for method, _ in lsp_client.server_requests:  # type: ignore[attr-defined]
        assert capability(lsp_client.capabilities, NEEDS[method]), (
            f"the server sent {method} to {request.param}, which does not declare {NEEDS[method]}"
        )
    await lsp_client.shutdown_session()


def encoding(client: LanguageClient) -> str:
    return client.init_result.capabilities.position_encoding or "utf-16"  # type: ignore[attr-defined]


def position(client: LanguageClient, path: pathlib.Path, needle: str, delta: int = 0) -> types.Position:
    """The position of `needle` (+ delta characters) in the encoding the server negotiated."""
    text = path.read_text(encoding="utf-8")
    off = text.index(needle) + delta
    line = text.count("\n", 0, off)
    prefix = text[text.rfind("\n", 0, off) + 1 : off]
    if encoding(client) == "utf-8":
        col = len(prefix.encode("utf-8"))
    else:
        col = len(prefix.encode("utf-16-le")) // 2
    return types.Position(line=line, character=col)


def open_file(client: LanguageClient, path: pathlib.Path) -> str:
    uri = path.as_uri()
    language = "markdown" if path.suffix == ".md" else "python"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language, version=1, text=path.read_text(encoding="utf-8")
            )
        )
    )
    return uri


async def diagnostics_for(client: LanguageClient, uri: str, until=lambda diags: True) -> list[types.Diagnostic]:
    """The diagnostics last published for `uri`, once `until` holds for them (20 s at most)."""

    async def wait():
        while uri not in client.diagnostics or not until(list(client.diagnostics[uri])):
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        return list(client.diagnostics[uri])

    try:
        return await asyncio.wait_for(wait(), 20)
    except asyncio.TimeoutError:
        raise AssertionError(f"diagnostics for {uri}: {client.diagnostics.get(uri)}") from None


async def test_position_encoding_is_negotiated(client: LanguageClient):
    general = client.capabilities.general
    offered = (general.position_encodings if general else None) or []
    expected = "utf-8" if types.PositionEncodingKind.Utf8 in offered else "utf-16"
    assert encoding(client) == expected


async def test_diagnostics_with_codes_and_ranges(client: LanguageClient):
    uri = open_file(client, DIRECTIVE)
    diags = await diagnostics_for(client, uri)
    by_code = {d.code: d for d in diags}
    assert "K003" in by_code, [d.code for d in diags]
    # The range covers the unknown id `text/ecko`, in the negotiated encoding.
    start = position(client, DIRECTIVE, 'item_id="text/ecko"', len('item_id="'))
    assert by_code["K003"].range.start == start
    assert by_code["K003"].source == "kiwi"


async def test_hover_on_input_placeholder(client: LanguageClient):
    uri = open_file(client, DIRECTIVE)
    # After the emoji: a wrong encoding would land elsewhere.
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position(client, DIRECTIVE, "{input:who} freundlich", 3),
        )
    )
    assert hover is not None
    assert "input `who`" in hover.contents.value


async def test_hover_on_interpreter_shows_project_venv(client: LanguageClient):
    uri = open_file(client, RUNTIME)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position(client, RUNTIME, "venv_python", 2),
        )
    )
    assert hover is not None
    assert f"{PROJECT}/.venv/bin/python" in hover.contents.value


async def test_run_lens_executes_the_tool(client: LanguageClient):
    uri = open_file(client, TOOL)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    titles = [lens.command.title for lens in lenses or [] if lens.command]
    assert "▶ Run" in titles, titles
    run = next(lens.command for lens in lenses if lens.command and lens.command.title == "▶ Run")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=run.command, arguments=run.arguments)
    )
    assert isinstance(result, dict) and result.get("exit_code") == 0, result
    assert "hello world" in json.dumps(result)


async def test_completion_of_tool_ids(client: LanguageClient):
    uri = open_file(client, DIRECTIVE)
    await diagnostics_for(client, uri)  # the project is indexed
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position(client, DIRECTIVE, 'item_id="text/echo"', len('item_id="text/')),
        )
    )
    items = result.items if isinstance(result, types.CompletionList) else (result or [])
    assert "text/echo" in [i.label for i in items], [i.label for i in items]


async def test_symbols_and_inlay_hints(client: LanguageClient):
    uri = open_file(client, DIRECTIVE)
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    names = json.dumps([getattr(s, "name", None) for s in symbols or []])
    assert "greet" in names, names
    rt = open_file(client, RUNTIME)
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=rt),
            range=types.Range(start=types.Position(0, 0), end=types.Position(40, 0)),
        )
    )
    labels = json.dumps([h.label if isinstance(h.label, str) else [p.label for p in h.label] for h in hints or []])
    assert ".venv/bin/python" in labels, labels


async def test_incremental_edit_then_hover_sees_new_text(client: LanguageClient):
    uri = open_file(client, DIRECTIVE)
    await diagnostics_for(client, uri, lambda ds: "K003" in [d.code for d in ds])
    # Fix the unknown id with an incremental change; the K003 goes away.
    start = position(client, DIRECTIVE, 'item_id="text/ecko"', len('item_id="text/'))
    end = types.Position(line=start.line, character=start.character + len("ecko"))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text="echo")
            ],
        )
    )
    await diagnostics_for(client, uri, lambda ds: "K003" not in [d.code for d in ds])
    # ... and a hover right after the edit answers from the new text.
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=start)
    )
    assert hover is not None and "text/echo" in hover.contents.value, hover


async def test_lenses_follow_a_quick_fix_without_a_save(client: LanguageClient):
    """Issue 15, point 4: the K003 fix (text/ecko -> text/echo) applied as the client does, as
    a change; a client that supports it is asked to refresh its lenses, and a new
    "▶ Run step" lens is there. A client that does not is never sent the request (checked by
    the fixture)."""
    uri = open_file(client, DIRECTIVE)
    await diagnostics_for(client, uri, lambda ds: "K003" in [d.code for d in ds])
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    before = await client.text_document_code_lens_async(params)
    start = position(client, DIRECTIVE, 'item_id="text/ecko"', len('item_id="text/'))
    end = types.Position(line=start.line, character=start.character + len("ecko"))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text="echo")
            ],
        )
    )
    await diagnostics_for(client, uri, lambda ds: "K003" not in [d.code for d in ds])
    if capability(client.capabilities, "workspace.codeLens.refreshSupport"):

        async def refreshed():
            while not any(m == types.WORKSPACE_CODE_LENS_REFRESH for m, _ in client.server_requests):  # type: ignore[attr-defined]
                await asyncio.sleep(0.05)

        await asyncio.wait_for(refreshed(), 10)
    after = await client.text_document_code_lens_async(params)
    assert len(after or []) == len(before or []) + 1, [lens.command.title for lens in after or [] if lens.command]


async def test_semantic_tokens_refreshed_when_indexed(client: LanguageClient):
    """Issue 15: item ids carry kiwi's `unresolved` modifier, which depends on the workspace;
    a client that supports it (VS Code) is asked to re-read the tokens when indexing ends. A
    client that does not is never sent the request (checked by the fixture)."""
    legend = client.init_result.capabilities.semantic_tokens_provider.legend  # type: ignore[attr-defined]
    assert "unresolved" in legend.token_modifiers, legend
    uri = open_file(client, DIRECTIVE)
    await diagnostics_for(client, uri)
    if capability(client.capabilities, "workspace.semanticTokens.refreshSupport"):

        async def refreshed():
            while not any(m == types.WORKSPACE_SEMANTIC_TOKENS_REFRESH for m, _ in client.server_requests):  # type: ignore[attr-defined]
                await asyncio.sleep(0.05)

        await asyncio.wait_for(refreshed(), 10)
    tokens = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    # `text/ecko` is no tool: its token is marked unresolved (bit 1).
    assert tokens is not None and any(m & 2 for m in tokens.data[4::5]), tokens


async def test_folding_links_tokens_and_formatting(client: LanguageClient):
    """Issue 15, points 17 and 18, under each client's capabilities."""
    uri = open_file(client, DIRECTIVE)
    await diagnostics_for(client, uri)
    doc = types.TextDocumentIdentifier(uri=uri)
    folds = await client.text_document_folding_range_async(types.FoldingRangeParams(text_document=doc))
    say = position(client, DIRECTIVE, '<step name="say">').line
    assert any(f.start_line == say for f in folds or []), folds
    links = await client.text_document_document_link_async(types.DocumentLinkParams(text_document=doc))
    assert [link.target for link in links or []] == [TOOL.as_uri()], links
    tokens = await client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(text_document=doc))
    assert tokens is not None and len(tokens.data) % 5 == 0 and len(tokens.data) >= 5 * 4, tokens
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(text_document=doc, options=types.FormattingOptions(tab_size=2, insert_spaces=True))
    )
    assert edits == [], edits  # greet.md is formatted already


async def test_hover_on_an_item_of_an_extra_space(client: LanguageClient):
    """Issue 13: an item of an extra space (KIWI_SPACES) is found, checked and hovered like any
    other, shown with its space's name."""
    uri = open_file(client, USES_EXTRA)
    diags = await diagnostics_for(client, uri)
    assert "K003" not in [d.code for d in diags], [(d.code, d.message) for d in diags]
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position(client, USES_EXTRA, 'item_id="shared/shout"', len('item_id="s')),
        )
    )
    assert hover is not None
    text = hover.contents.value
    assert "extra, read-only" in text, text
    assert "shared/shout.yaml" in text, text


async def test_references_and_rename_of_a_skill(client: LanguageClient):
    """Issue 28, item 4: from a mention of a skill in another skill, its references reach its
    `name`, both skills and AGENTS.md; the rename moves its folder for a client that takes
    the `rename` resource operation, and is refused with the reason for one that does not."""
    uri = open_file(client, REVIEW)
    at = position(client, REVIEW, "`/deploy`", 3)
    doc = types.TextDocumentIdentifier(uri=uri)
    refs = await client.text_document_references_async(
        types.ReferenceParams(text_document=doc, position=at, context=types.ReferenceContext(include_declaration=True))
    )
    places = sorted(
        (pathlib.Path(urllib.parse.unquote(urllib.parse.urlparse(r.uri).path)).relative_to(PROJECT).as_posix(), r.range.start.line)
        for r in refs or []
    )
    assert places == [
        (".agents/skills/deploy/SKILL.md", 1),  # its `name` (the declaration)
        (".agents/skills/deploy/SKILL.md", 4),  # `/deploy prod`
        (".agents/skills/review/SKILL.md", 2),  # `/deploy` in the description
        (".agents/skills/review/SKILL.md", 4),  # the link through its folder
        ("AGENTS.md", 0),
    ], places
    # The mention in AGENTS.md, in the negotiated encoding (its text is read from disk).
    agents = [r for r in refs if r.uri == AGENTS.as_uri()]
    assert agents[0].range.start == position(client, AGENTS, "deploy"), agents
    caps = client.capabilities.workspace
    edit_caps = caps.workspace_edit if caps else None
    takes_renames = bool(edit_caps and edit_caps.resource_operations and types.ResourceOperationKind.Rename in edit_caps.resource_operations)
    params = types.RenameParams(text_document=doc, position=at, new_name="ship")
    if not takes_renames:
        with pytest.raises(Exception, match="does not take file renames"):
            await client.text_document_rename_async(params)
        return
    name = client.label  # type: ignore[attr-defined]
    if name.startswith("neovim@v0.") and int(name.split(".")[1]) < 9:
        # Neovim before 0.9 declares `rename` but fails on a folder (E502): refused, with why.
        with pytest.raises(Exception, match="Neovim before 0.9"):
            await client.text_document_rename_async(params)
        return
    edit = await client.text_document_rename_async(params)
    assert edit is not None and edit.document_changes, edit
    moves = [op for op in edit.document_changes if isinstance(op, types.RenameFile)]
    assert [(m.old_uri, m.new_uri) for m in moves] == [(DEPLOY.as_uri(), (DEPLOY.parent / "ship").as_uri())], moves
    edited = {op.text_document.uri for op in edit.document_changes if isinstance(op, types.TextDocumentEdit)}
    # The folder moves first; the edits name its files where they are then.
    assert edited == {REVIEW.as_uri(), (DEPLOY.parent / "ship" / "SKILL.md").as_uri(), AGENTS.as_uri()}, edited
    assert isinstance(edit.document_changes[0], types.RenameFile), "the folder moves first"
