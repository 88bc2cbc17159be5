//! The MCP server driven in process: newline-delimited JSON-RPC over a `tokio::io::duplex`,
//! exactly as a client would speak it on stdio.

use kiwi_kernel::context::Host;
use kiwi_kernel::service::Service;
use kiwi_mcp::KiwiServer;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const CANARIES: [(&str, &str); 3] = [
    ("FAKE_API_KEY", "canary-key-5f1e2d"),
    ("SOME_TOKEN", "canary-token-9a8b7c"),
    ("DB_PASSWORD", "canary-password-3c4d"),
];

struct Client {
    w: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    r: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    next: u64,
    /// Notifications received so far.
    notes: Vec<Value>,
    /// Every line received (for the canary check).
    wire: String,
    tmp: String,
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const DIRECTIVE: &str = r#"# Greet

```xml
<directive name="greet" version="1.0.0">
  <metadata>
    <description>Greet someone with the echo tool</description>
    <category>test</category>
    <author>tests</author>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="t/echo"/>
      <load resource="kiwi" action="load" item_type="knowledge" id="k/*"/>
      <search resource="kiwi" action="search" item_type="knowledge" id="*"/>
      <execute resource="kiwi" action="run" item_type="directive" id="d/inner"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="name" type="string" required="true">Who to greet</input>
    <input name="times" type="integer" default="1">How many times</input>
    <input name="tone" type="string" enum="warm|dry" default="warm">The tone</input>
  </inputs>
  <process>
    <step name="greet">
      <description>Greet {input:name} {input:times} time(s), {input:tone}</description>
      <execute item_type="tool" item_id="t/echo">
        <param name="name" value="{input:name}"/>
      </execute>
    </step>
    <step name="notes">
      <description>Read the notes</description>
      <load item_type="knowledge" item_id="k/notes"/>
      <search item_type="knowledge" query="greeting"/>
    </step>
    <step name="inner">
      <description>Run the inner directive</description>
      <execute item_type="directive" item_id="d/inner"/>
    </step>
  </process>
  <outputs>
    <success>{input:name} was greeted</success>
  </outputs>
</directive>
```
"#;

const INNER: &str = r#"# Inner

```xml
<directive name="inner" version="1.0.0">
  <metadata>
    <description>An inner directive that asks for more than its parent grants</description>
    <category>test</category>
    <author>tests</author>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="*"/>
    </permissions>
  </metadata>
  <process>
    <step name="slow">
      <description>Run the slow tool</description>
      <execute item_type="tool" item_id="t/slow"/>
    </step>
  </process>
  <outputs>
    <success>done</success>
  </outputs>
</directive>
```
"#;

const ECHO: &str = r#"version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print a greeting and the environment the tool gets
config_schema:
  type: object
  properties:
    name:
      type: string
  required: [name]
config:
  command: bash
  args: ["-c", "echo hello {name}; env"]
  timeout: 20
"#;

const SLOW: &str = r#"version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print numbered lines slowly
config_schema:
  type: object
  properties:
    n:
      type: integer
config:
  command: bash
  args: ["-c", "for i in $(seq 1 {n}); do echo line $i; sleep 0.1; done"]
  timeout: 60
"#;

const NOTES: &str = "---\nid: notes\nentry_type: reference\ntitle: Greeting notes\ntags: [greeting, notes]\n---\n\nBe kind when you greet.\n";

fn project(tmp: &Path) -> PathBuf {
    let p = tmp.join("proj");
    let ai = p.join(".ai");
    write(&ai, "directives/d/greet.md", DIRECTIVE);
    write(&ai, "directives/d/inner.md", INNER);
    write(&ai, "tools/t/echo.yaml", ECHO);
    write(&ai, "tools/t/slow.yaml", SLOW);
    write(&ai, "knowledge/k/notes.md", NOTES);
    write(
        &ai,
        "knowledge/other/secret.md",
        "---\nid: secret\nentry_type: reference\ntitle: Other\n---\n\nnot for greet\n",
    );
    p.canonicalize().unwrap()
}

fn host(tmp: &Path) -> Host {
    let user = tmp.join("user");
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let home = tmp.join("home");
    let mut vars: Vec<(&str, &str)> = vec![
        ("KIWI_USERSPACE_DIR", user.to_str().unwrap()),
        ("PATH", &path),
        ("HOME", home.to_str().unwrap()),
        ("SHELL", "/bin/bash"),
    ];
    vars.extend(CANARIES);
    let mut h = Host::for_tests(&vars);
    h.cwd = Some(tmp.to_path_buf());
    h
}

impl Client {
    async fn start(project: Option<PathBuf>, host: Host, tmp: &Path) -> Client {
        Self::start_with(project, host, tmp, "2025-11-25").await
    }

    /// A client that asks for protocol `version` in `initialize`.
    async fn start_with(project: Option<PathBuf>, host: Host, tmp: &Path, version: &str) -> Client {
        let (a, b) = tokio::io::duplex(1 << 22);
        let server = KiwiServer::new(Service::new(project, host));
        tokio::spawn(async move {
            if let Ok(running) = server.serve(a).await {
                let _ = running.waiting().await;
            }
        });
        let (r, w) = tokio::io::split(b);
        let mut c = Client {
            w,
            r: BufReader::new(r).lines(),
            next: 0,
            notes: Vec::new(),
            wire: String::new(),
            tmp: tmp.to_string_lossy().into_owned(),
        };
        let init = c
            .request(
                "initialize",
                json!({"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "tests", "version": "1"}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], version);
        c.notify("notifications/initialized", json!({})).await;
        c
    }

    async fn send(&mut self, msg: Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.w.write_all(line.as_bytes()).await.unwrap();
        self.w.flush().await.unwrap();
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    async fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The response to `id`; notifications met on the way are kept.
    async fn response(&mut self, id: u64) -> Value {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.r.next_line())
                .await
                .expect("a response within 30 s")
                .unwrap()
                .expect("the server closed the stream");
            self.wire.push_str(&line);
            self.wire.push('\n');
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
            if v.get("method").is_some() {
                self.notes.push(v);
            }
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(id).await
    }

    /// A tool call; returns (isError, structuredContent) after checking the text copy.
    async fn call(&mut self, name: &str, args: Value) -> (bool, Value) {
        let r = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await;
        let res = &r["result"];
        assert!(res.is_object(), "no result: {r}");
        let structured = res["structuredContent"].clone();
        let text = res["content"][0]["text"].as_str().unwrap();
        let parsed: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parsed, structured, "the text is the same JSON");
        (res["isError"] == json!(true), structured)
    }

    async fn ok(&mut self, name: &str, args: Value) -> Value {
        let (err, v) = self.call(name, args).await;
        assert!(!err, "unexpected error: {v:#}");
        v
    }

    async fn err(&mut self, name: &str, args: Value) -> Value {
        let (err, v) = self.call(name, args).await;
        assert!(err, "expected an error: {v:#}");
        for k in [
            "error",
            "item_type",
            "action",
            "item_id",
            "message",
            "suggestions",
        ] {
            assert!(v.get(k).is_some(), "error body lacks `{k}`: {v:#}");
        }
        v
    }

    fn norm(&self, v: &Value) -> Value {
        serde_json::from_str(&v.to_string().replace(&self.tmp, "<TMP>")).unwrap()
    }

    fn assert_no_canary(&self) {
        for (_, value) in CANARIES {
            assert!(!self.wire.contains(value), "a secret leaked on the wire");
        }
    }
}

async fn setup() -> (tempfile::TempDir, Client) {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    let c = Client::start(Some(p), host(&tmp), &tmp).await;
    (dir, c)
}

#[tokio::test]
async fn lists_tools_with_schemas_and_annotations() {
    let (_d, mut c) = setup().await;
    let r = c.request("tools/list", json!({})).await;
    let tools = r["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search", "load", "execute", "help"]);
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["outputSchema"]["type"], "object");
        let ro = t["annotations"]["readOnlyHint"] == json!(true);
        let idem = t["annotations"]["idempotentHint"] == json!(true);
        assert_eq!(ro, t["name"] != "execute", "{}", t["name"]);
        assert_eq!(idem, t["name"] != "execute");
    }
}

#[tokio::test]
async fn search_ranks_tolerates_typos_and_shows_shadowing() {
    let (_d, mut c) = setup().await;
    let v = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "greeting"}),
        )
        .await;
    assert_eq!(v["results"][0]["id"], "k/notes");
    insta::assert_json_snapshot!("search_greeting", c.norm(&v));
    let typo = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "greetign"}),
        )
        .await;
    assert_eq!(typo["results"][0]["id"], "k/notes");
    let sys = c
        .ok("search", json!({"item_type": "system", "query": "shell"}))
        .await;
    assert_eq!(sys["results"][0]["id"], "shell");
    let b = c
        .ok(
            "search",
            json!({"item_type": "tool", "query": "subprocess", "source": "builtin", "limit": 1}),
        )
        .await;
    assert_eq!(b["results"].as_array().unwrap().len(), 1);
    assert_eq!(b["results"][0]["source"], "builtin");
    let e = c
        .err("search", json!({"item_type": "widget", "query": "x"}))
        .await;
    assert_eq!(e["error"], "invalid_item_type");
    assert_eq!(
        e["suggestions"],
        json!(["directive", "tool", "knowledge", "system"])
    );
    let e = c
        .err(
            "search",
            json!({"item_type": "tool", "query": "x", "source": "nowhere"}),
        )
        .await;
    assert_eq!(e["error"], "invalid_source");
    let e = c.err("search", json!({"query": "x"})).await;
    assert_eq!(e["error"], "invalid_arguments");
}

/// `total` is the number that match, a cursor pages through them, and a limit that is not a
/// whole number from 1 to 1000 is an error (issue 16, point 2).
#[tokio::test]
async fn search_total_counts_every_match_and_a_cursor_pages() {
    let (_d, mut c) = setup().await;
    let all = c
        .ok(
            "search",
            json!({"item_type": "tool", "query": "", "limit": 1000}),
        )
        .await;
    let every: Vec<Value> = all["results"].as_array().unwrap().clone();
    assert!(every.len() >= 3, "the fixture has several tools: {all:#}");
    assert_eq!(all["total"], json!(every.len()));
    assert!(all.get("cursor").is_none(), "one page holds them all");
    // Page by one: `total` is every match, and the cursors walk the same list.
    let mut seen = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..every.len() + 1 {
        let mut args = json!({"item_type": "tool", "query": "", "limit": 1});
        if let Some(cur) = &cursor {
            args["cursor"] = cur.clone();
        }
        let page = c.ok("search", args).await;
        assert_eq!(page["total"], json!(every.len()), "{page:#}");
        seen.extend(page["results"].as_array().unwrap().iter().cloned());
        cursor = page.get("cursor").cloned();
        if cursor.is_none() {
            break;
        }
        assert!(cursor.as_ref().unwrap().is_string());
    }
    assert_eq!(seen, every);
    // The same with a query: the pages together are the ranked list.
    let ranked = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "greeting", "limit": 100}),
        )
        .await;
    let n = ranked["results"].as_array().unwrap().len();
    assert!(n >= 2, "{ranked:#}");
    assert_eq!(ranked["total"], json!(n));
    let first = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "greeting", "limit": 1}),
        )
        .await;
    assert_eq!(first["total"], json!(n));
    assert_eq!(first["results"][0], ranked["results"][0]);
    let second = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "greeting", "limit": 1, "cursor": first["cursor"]}),
        )
        .await;
    assert_eq!(second["results"][0], ranked["results"][1]);
    // A cursor of another search, or garbage, is refused.
    let e = c
        .err(
            "search",
            json!({"item_type": "knowledge", "query": "other", "cursor": first["cursor"]}),
        )
        .await;
    assert_eq!(e["error"], "invalid_arguments");
    assert!(e["message"].as_str().unwrap().contains("cursor"), "{e:#}");
    let e = c
        .err(
            "search",
            json!({"item_type": "tool", "query": "", "cursor": "zz"}),
        )
        .await;
    assert_eq!(e["error"], "invalid_arguments");
    // Limits: 0, a string, a fraction, a negative number and too many are errors.
    for bad in [json!(0), json!("3"), json!(2.5), json!(-1), json!(1001)] {
        let e = c
            .err(
                "search",
                json!({"item_type": "tool", "query": "", "limit": bad}),
            )
            .await;
        assert_eq!(e["error"], "invalid_arguments", "limit {bad}: {e:#}");
        assert!(
            e["message"].as_str().unwrap().contains("`limit`"),
            "limit {bad}: {e:#}"
        );
    }
}

/// The search index is kept on disk in the user space's `cache/` (issue 16, point 15); a new
/// server never answers from a stale or corrupt one: an item changed, added or removed since
/// is seen at its first search.
#[tokio::test]
async fn search_index_kept_on_disk_is_never_trusted_stale() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    let cache_files = || -> Vec<PathBuf> {
        std::fs::read_dir(tmp.join("user/cache"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "idx"))
            .collect()
    };
    let ids = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap().to_string())
            .collect()
    };
    let first = {
        let mut c = Client::start(Some(p.clone()), host(&tmp), &tmp).await;
        let v = c
            .ok(
                "search",
                json!({"item_type": "knowledge", "query": "greeting"}),
            )
            .await;
        // Written in the background: wait for it.
        for _ in 0..100 {
            if !cache_files().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(cache_files().len(), 1, "one cache file for the project");
        ids(&v)
    };
    assert_eq!(first, ["k/notes", "other/secret"]);
    // A second server, nothing changed: the same answer.
    let mut c = Client::start(Some(p.clone()), host(&tmp), &tmp).await;
    let v = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "greeting"}),
        )
        .await;
    assert_eq!(ids(&v), first);
    drop(c);
    // Changed, added and removed since the cache was written.
    std::thread::sleep(Duration::from_millis(20));
    let ai = p.join(".ai");
    write(
        &ai,
        "knowledge/k/notes.md",
        "---\nid: notes\nentry_type: reference\ntitle: Farewell notes\n---\n\nGoodbye.\n",
    );
    write(
        &ai,
        "knowledge/k/added.md",
        "---\nid: added\nentry_type: reference\ntitle: Greeting words\n---\n\nHello.\n",
    );
    std::fs::remove_file(ai.join("knowledge/other/secret.md")).unwrap();
    let mut c = Client::start(Some(p.clone()), host(&tmp), &tmp).await;
    let v = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "greeting"}),
        )
        .await;
    assert_eq!(ids(&v), ["k/added"], "{v:#}");
    drop(c);
    // A corrupt cache is ignored (and rebuilt).
    for f in cache_files() {
        std::fs::write(&f, b"KIWI-SEARCH-INDEX\ngarbage").unwrap();
    }
    let mut c = Client::start(Some(p.clone()), host(&tmp), &tmp).await;
    let v = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "greeting"}),
        )
        .await;
    assert_eq!(ids(&v), ["k/added"], "{v:#}");
}

/// `resources/list` and `prompts/list` page with `nextCursor` (issue 16, point 2).
#[tokio::test]
async fn resources_and_prompts_page_with_next_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    for i in 0..130 {
        write(
            &p.join(".ai"),
            &format!("knowledge/many/k{i:03}.md"),
            &format!("---\nid: k{i:03}\nentry_type: reference\ntitle: Entry {i}\n---\n\nText.\n"),
        );
        write(
            &p.join(".ai"),
            &format!("directives/many/d{i:03}.md"),
            &DIRECTIVE.replace("name=\"greet\"", &format!("name=\"d{i:03}\"")),
        );
    }
    let mut c = Client::start(Some(p), host(&tmp), &tmp).await;
    for (method, key) in [("resources/list", "resources"), ("prompts/list", "prompts")] {
        let mut all: Vec<Value> = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut pages = 0;
        loop {
            let params = match &cursor {
                Some(cur) => json!({"cursor": cur}),
                None => json!({}),
            };
            let r = c.request(method, params).await;
            let items = r["result"][key].as_array().unwrap_or_else(|| panic!("{r}"));
            assert!(items.len() <= 100, "{method}: a page holds at most 100");
            all.extend(items.iter().cloned());
            pages += 1;
            cursor = r["result"].get("nextCursor").cloned();
            if cursor.is_none() {
                break;
            }
            assert!(pages < 10, "{method} pages forever");
        }
        assert!(
            pages >= 2,
            "{method}: {} items in {pages} page(s)",
            all.len()
        );
        let mut names: Vec<String> = all
            .iter()
            .map(|i| i.get("uri").or(i.get("name")).unwrap().to_string())
            .collect();
        let n = names.len();
        assert!(n >= 130, "{method}: {n}");
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "{method}: no item twice");
        let r = c.request(method, json!({"cursor": "nonsense"})).await;
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
    }
}

#[tokio::test]
async fn load_returns_content_and_errors_suggest() {
    let (_d, mut c) = setup().await;
    let v = c
        .ok(
            "load",
            json!({"item_type": "knowledge", "item_id": "k/notes"}),
        )
        .await;
    insta::assert_json_snapshot!("load_notes", c.norm(&v));
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "k/note"}),
        )
        .await;
    insta::assert_json_snapshot!("load_unknown", c.norm(&e));
    for bad in ["../etc/passwd", "/etc/passwd", "a/../../b"] {
        let e = c
            .err("load", json!({"item_type": "tool", "item_id": bad}))
            .await;
        assert_eq!(e["error"], "invalid_id", "{bad}");
    }
    let sys = c
        .ok("load", json!({"item_type": "system", "item_id": "runtime"}))
        .await;
    assert_eq!(sys["fields"]["platform"], "linux");
    let e = c
        .err("load", json!({"item_type": "system", "item_id": "path"}))
        .await;
    assert_eq!(e["suggestions"][0], "paths");
}

#[tokio::test]
async fn load_with_destination_copies_atomically_and_never_overwrites() {
    let (d, mut c) = setup().await;
    let v = c
        .ok(
            "load",
            json!({"item_type": "knowledge", "item_id": "core/permissions", "destination": "project"}),
        )
        .await;
    let path = PathBuf::from(v["path"].as_str().unwrap());
    assert!(path.ends_with(".ai/knowledge/core/permissions.md"));
    assert!(path.exists());
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "core/permissions", "source": "builtin", "destination": "project"}),
        )
        .await;
    assert_eq!(e["error"], "exists");
    std::fs::write(
        &path,
        "---\nid: permissions\nentry_type: reference\ntitle: mine\n---\n\nmine\n",
    )
    .unwrap();
    c.ok(
        "load",
        json!({"item_type": "knowledge", "item_id": "core/permissions", "source": "builtin", "destination": "project", "force": true}),
    )
    .await;
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("Permissions"));
    // The copy now shadows the builtin one.
    let s = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "core/permissions"}),
        )
        .await;
    let builtin = s["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["source"] == "builtin")
        .unwrap();
    assert_eq!(builtin["shadowed_by"], "project");
    // A symlinked folder that leads out of the space is refused.
    #[cfg(unix)]
    {
        let outside = d.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let ai = d.path().canonicalize().unwrap().join("proj/.ai/tools/esc");
        std::os::unix::fs::symlink(&outside, &ai).unwrap();
        let e = c
            .err(
                "execute",
                json!({"item_type": "tool", "action": "create", "item_id": "esc/x",
                       "parameters": {"content": ECHO}}),
            )
            .await;
        assert_eq!(e["error"], "invalid_id");
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    }
    // A symlinked item file that leads out of the space: refused, its target never shown.
    #[cfg(unix)]
    {
        let secret = d.path().join("outside-secret.md");
        std::fs::write(
            &secret,
            "---\nid: leak\ntitle: top secret words\n---\nclassified\n",
        )
        .unwrap();
        let link = d
            .path()
            .canonicalize()
            .unwrap()
            .join("proj/.ai/knowledge/k/leak.md");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let v = c
            .ok(
                "load",
                json!({"item_type": "knowledge", "item_id": "k/leak"}),
            )
            .await;
        assert_eq!(v["content"], "");
        assert_eq!(v["diagnostics"][0]["code"], "K006");
        // The kernel's one diagnostic view, as `kiwi check --format json` and the LSP give it.
        let keys: Vec<&String> = v["diagnostics"][0].as_object().unwrap().keys().collect();
        assert_eq!(keys, kiwi_kernel::diag::view::FIELDS, "{v}");
        let s = c
            .ok(
                "search",
                json!({"item_type": "knowledge", "query": "classified"}),
            )
            .await;
        assert!(s["results"].as_array().unwrap().is_empty());
        assert!(!c.wire.contains("top secret words"));
    }
    let e = c
        .err(
            "load",
            json!({"item_type": "system", "item_id": "paths", "destination": "user"}),
        )
        .await;
    assert_eq!(e["allowed_actions"], json!(["run"]));
}

#[tokio::test]
async fn directive_run_binds_inputs_and_enforces_permissions() {
    let (_d, mut c) = setup().await;
    // Bad parameters first: each refused, nothing becomes active.
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "d/greet", "parameters": {}}),
        )
        .await;
    assert_eq!(e["error"], "invalid_parameters");
    assert_eq!(e["suggestions"], json!(["name"]));
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "d/greet",
                   "parameters": {"name": "Ada", "tones": "dry"}}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("not an input"));
    assert_eq!(e["suggestions"][0], "tone");
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "d/greet",
                   "parameters": {"name": "Ada", "tone": "loud"}}),
        )
        .await;
    assert_eq!(e["suggestions"], json!(["warm", "dry"]));
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "d/greet",
                   "parameters": {"name": "Ada", "times": "many"}}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("integer"));

    let v = c
        .ok(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "d/greet",
                   "parameters": {"name": "Ada", "times": "2"}}),
        )
        .await;
    assert_eq!(
        v["inputs"],
        json!({"name": "Ada", "times": 2, "tone": "warm"})
    );
    assert_eq!(v["steps"][0]["description"], "Greet Ada 2 time(s), warm");
    assert_eq!(v["steps"][0]["calls"][0]["item_id"], "t/echo");
    assert_eq!(
        v["steps"][0]["calls"][0]["parameters"],
        json!({"name": "Ada"})
    );
    assert_eq!(v["outputs"][0]["description"], "Ada was greeted");
    assert_eq!(v["session"]["active_directive"], "d/greet");
    // Issue 16, point 7: the parsed directive only; the filled file with `raw: true`.
    assert!(v.get("body").is_none(), "{v}");
    assert_eq!(
        v["steps"][0]["calls"][0]["action"], "run",
        "an execute without an action runs"
    );
    assert_eq!(v["session"]["nested"], false);

    // Granted: run t/echo, load k/*, search knowledge.
    let r = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo", "parameters": {"name": "Ada"}}),
        )
        .await;
    assert!(r["result"]["stdout"]
        .as_str()
        .unwrap()
        .contains("hello Ada"));
    c.ok(
        "load",
        json!({"item_type": "knowledge", "item_id": "k/notes"}),
    )
    .await;
    let s = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "not for greet other"}),
        )
        .await;
    // Results are filtered by what the directive grants (search on any knowledge).
    assert!(s["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["id"] == "other/secret"));
    // Refused: another tool, other knowledge, a search of tools.
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/slow"}),
        )
        .await;
    insta::assert_json_snapshot!("refused_capability", c.norm(&e));
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "other/secret"}),
        )
        .await;
    assert_eq!(e["error"], "permission_denied");
    let e = c
        .err("search", json!({"item_type": "tool", "query": "echo"}))
        .await;
    assert_eq!(e["missing_capability"], "kiwi.search.tool.*");
    // System items stay readable? Not granted here: refused too.
    let e = c
        .err(
            "execute",
            json!({"item_type": "system", "action": "run", "item_id": "paths"}),
        )
        .await;
    assert_eq!(e["error"], "permission_denied");

    // Nested: the inner directive asks for run on any tool, but the parent narrows it.
    let v = c
        .ok(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "d/inner"}),
        )
        .await;
    assert_eq!(v["session"]["depth"], 2);
    // Nested because a step of d/greet calls it (issue 16, point 8).
    assert_eq!(v["session"]["parent"], "d/greet");
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/slow", "parameters": {"n": 1}}),
        )
        .await;
    assert_eq!(e["directive"], "d/greet");
    c.ok(
        "execute",
        json!({"item_type": "directive", "action": "done", "item_id": "d/inner"}),
    )
    .await;
    let v = c
        .ok(
            "execute",
            json!({"item_type": "directive", "action": "done", "item_id": "d/greet"}),
        )
        .await;
    assert_eq!(v["active_directive"], Value::Null);
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "done", "item_id": "d/greet"}),
        )
        .await;
    assert_eq!(e["error"], "not_active");
    // Unrestricted again.
    c.ok(
        "execute",
        json!({"item_type": "tool", "action": "run", "item_id": "t/slow", "parameters": {"n": 1}}),
    )
    .await;
    c.assert_no_canary();
}

#[tokio::test]
async fn tool_run_dry_run_progress_and_secrets() {
    let (_d, mut c) = setup().await;
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "dry_run", "item_id": "t/echo", "parameters": {"name": "Bo"}}),
        )
        .await;
    assert_eq!(v["plan"]["command"][0], "bash");
    let v2 = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo", "dry_run": true, "parameters": {"name": "Bo"}}),
        )
        .await;
    assert_eq!(v2["dry_run"], true);
    let id = c
        .send_request(
            "tools/call",
            json!({"name": "execute", "_meta": {"progressToken": "pt-1"},
                   "arguments": {"item_type": "tool", "action": "run", "item_id": "t/slow", "parameters": {"n": 3}}}),
        )
        .await;
    let r = c.response(id).await;
    assert_eq!(r["result"]["isError"], false);
    let msgs: Vec<&str> = c
        .notes
        .iter()
        .filter(|n| {
            n["method"] == "notifications/progress" && n["params"]["progressToken"] == "pt-1"
        })
        .filter_map(|n| n["params"]["message"].as_str())
        .collect();
    assert_eq!(msgs, ["line 1", "line 2", "line 3"]);
    // The tool's environment holds none of the canaries; nothing on the wire does.
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo", "parameters": {"name": "Bo"}}),
        )
        .await;
    assert!(!v["result"]["stdout"]
        .as_str()
        .unwrap()
        .contains("FAKE_API_KEY"));
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo", "parameters": {"nam": "Bo"}}),
        )
        .await;
    assert_eq!(e["error"], "execution_error");
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "link", "item_id": "t/echo"}),
        )
        .await;
    assert_eq!(e["error"], "invalid_action");
    c.assert_no_canary();
}

#[tokio::test]
async fn cancel_stops_the_tool() {
    let (_d, mut c) = setup().await;
    let started = std::time::Instant::now();
    let id = c
        .send_request(
            "tools/call",
            json!({"name": "execute", "_meta": {"progressToken": 7},
                   "arguments": {"item_type": "tool", "action": "run", "item_id": "t/slow", "parameters": {"n": 300}}}),
        )
        .await;
    // Wait for the first line, then cancel.
    loop {
        let line = c.r.next_line().await.unwrap().unwrap();
        if line.contains("notifications/progress") {
            break;
        }
    }
    c.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "test"}),
    )
    .await;
    // The server answers the next request; the cancelled one gets no response.
    let r = c
        .request("tools/call", json!({"name": "help", "arguments": {}}))
        .await;
    assert_eq!(r["result"]["isError"], false);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(started.elapsed() < Duration::from_secs(20));
    // No process of the tool remains (its group was stopped): `seq 1 300` with 0.1 s sleeps
    // would still be running.
    let out = std::process::Command::new("pgrep")
        .args(["-f", "seq 1 300"])
        .output();
    if let Ok(o) = out {
        assert!(o.stdout.is_empty(), "the tool still runs");
    }
}

#[tokio::test]
async fn system_items_are_read_only() {
    let (_d, mut c) = setup().await;
    for id in ["paths", "runtime", "shell", "mcp"] {
        let v = c
            .ok(
                "execute",
                json!({"item_type": "system", "action": "run", "item_id": id}),
            )
            .await;
        assert_eq!(v["read_only"], true);
    }
    for action in ["create", "update", "delete", "validate"] {
        let e = c
            .err(
                "execute",
                json!({"item_type": "system", "action": action, "item_id": "paths"}),
            )
            .await;
        assert_eq!(e["error"], "read_only");
        assert_eq!(e["allowed_actions"], json!(["run"]));
    }
    let e = c
        .err(
            "execute",
            json!({"item_type": "system", "action": "run", "item_id": "secrets"}),
        )
        .await;
    assert_eq!(e["error"], "not_found");
    c.assert_no_canary();
}

#[tokio::test]
async fn create_update_delete_validate_link() {
    let (d, mut c) = setup().await;
    let root = d.path().canonicalize().unwrap().join("proj/.ai");
    // Unparsable content is refused with its diagnostics; nothing is written.
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "create", "item_id": "t/bad",
                   "parameters": {"content": "version: [unclosed\n  - : :\n"}}),
        )
        .await;
    assert_eq!(e["error"], "invalid_content");
    assert!(!e["diagnostics"].as_array().unwrap().is_empty());
    assert!(!root.join("tools/t/bad.yaml").exists());
    let e = c
        .err(
            "execute",
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new", "parameters": {}}),
        )
        .await;
    assert_eq!(e["suggestions"], json!(["content"]));
    let v = c
        .ok(
            "execute",
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                   "parameters": {"content": "---\nid: new\nentry_type: reference\ntitle: New entry\n---\n\nFresh words zanzibar.\n"}}),
        )
        .await;
    assert_eq!(v["space"], "project");
    // The index is true at once.
    let s = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "zanzibar"}),
        )
        .await;
    assert_eq!(s["results"][0]["id"], "k/new");
    let e = c
        .err(
            "execute",
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                   "parameters": {"content": "---\ntitle: again\n---\n"}}),
        )
        .await;
    assert_eq!(e["error"], "exists");
    c.ok(
        "execute",
        json!({"item_type": "knowledge", "action": "update", "item_id": "k/new",
               "parameters": {"content": "---\nid: new\nentry_type: reference\ntitle: New entry\n---\n\nNow about quokkas.\n"}}),
    )
    .await;
    let s = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "quokkas"}),
        )
        .await;
    assert_eq!(s["results"][0]["id"], "k/new");
    let v = c
        .ok(
            "execute",
            json!({"item_type": "knowledge", "action": "link", "item_id": "k/new",
                   "parameters": {"reference": "k/notes"}}),
        )
        .await;
    assert_eq!(v["references_added"], json!(["k/notes"]));
    let text = std::fs::read_to_string(root.join("knowledge/k/new.md")).unwrap();
    assert!(text.contains("references: [k/notes]"), "{text}");
    let v = c
        .ok(
            "execute",
            json!({"item_type": "knowledge", "action": "validate", "item_id": "k/new"}),
        )
        .await;
    assert_eq!(v["valid"], true);
    c.ok(
        "execute",
        json!({"item_type": "knowledge", "action": "delete", "item_id": "k/new"}),
    )
    .await;
    assert!(!root.join("knowledge/k/new.md").exists());
    let e = c
        .err(
            "execute",
            json!({"item_type": "knowledge", "action": "delete", "item_id": "k/new"}),
        )
        .await;
    assert_eq!(e["error"], "not_found");
    // The builtin space is never touched.
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "delete", "item_id": "core/init"}),
        )
        .await;
    assert_eq!(e["error"], "read_only");
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "update", "item_id": "core/init",
                   "parameters": {"content": DIRECTIVE}}),
        )
        .await;
    assert_eq!(e["error"], "read_only");
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "create", "item_id": "x/y",
                   "parameters": {"content": DIRECTIVE, "space": "builtin"}}),
        )
        .await;
    assert_eq!(e["error"], "read_only");
    // A file changed on disk by someone else is seen by the next call.
    std::fs::write(
        root.join("knowledge/k/disk.md"),
        "---\nid: disk\nentry_type: reference\ntitle: Disk\n---\n\nwombat\n",
    )
    .unwrap();
    let s = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "wombat"}),
        )
        .await;
    assert_eq!(s["results"][0]["id"], "k/disk");
    // Changed in place (no file added or removed): seen too.
    std::fs::write(
        root.join("knowledge/k/disk.md"),
        "---\nid: disk\nentry_type: reference\ntitle: Disk\n---\n\nplatypus\n",
    )
    .unwrap();
    let s = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "platypus"}),
        )
        .await;
    assert_eq!(s["results"][0]["id"], "k/disk");
    std::fs::remove_file(root.join("knowledge/k/disk.md")).unwrap();
    let s = c
        .ok(
            "search",
            json!({"item_type": "knowledge", "query": "wombat"}),
        )
        .await;
    assert!(s["results"].as_array().unwrap().is_empty());
    let v = c
        .ok(
            "execute",
            json!({"item_type": "directive", "action": "validate", "item_id": "d/greet"}),
        )
        .await;
    assert!(v["diagnostics"].is_array());
}

#[tokio::test]
async fn help_topics() {
    let (_d, mut c) = setup().await;
    for t in kiwi_kernel::service::HELP_TOPICS {
        let v = c.ok("help", json!({"topic": t})).await;
        assert!(v["example"]["tool"].is_string());
    }
    let e = c.err("help", json!({"topic": "serch"})).await;
    assert_eq!(e["suggestions"][0], "search");
    let r = c
        .request("tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert!(r["error"].is_object());
}

#[tokio::test]
async fn prompts_and_resources() {
    let (_d, mut c) = setup().await;
    let r = c.request("prompts/list", json!({})).await;
    let prompts = r["result"]["prompts"].as_array().unwrap();
    let greet = prompts.iter().find(|p| p["name"] == "d/greet").unwrap();
    assert_eq!(
        greet["arguments"],
        json!([{"name": "name", "description": "Who to greet", "required": true},
               {"name": "times", "description": "How many times", "required": false},
               {"name": "tone", "description": "The tone", "required": false}])
    );
    assert!(prompts.iter().any(|p| p["name"] == "core/init"));
    let r = c
        .request(
            "prompts/get",
            json!({"name": "d/greet", "arguments": {"name": "Cy"}}),
        )
        .await;
    let text = r["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Greet Cy 1 time(s), warm"));
    let r = c
        .request("prompts/get", json!({"name": "d/greet", "arguments": {}}))
        .await;
    assert!(r["error"].is_object());

    let r = c.request("resources/list", json!({})).await;
    let res = r["result"]["resources"].as_array().unwrap();
    let uris: Vec<&str> = res.iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert!(uris.contains(&"kiwi://directive/d/greet"));
    assert!(uris.contains(&"kiwi://system/paths"));
    assert!(uris.contains(&"kiwi://tool/subprocess"));
    let r = c.request("resources/templates/list", json!({})).await;
    assert_eq!(
        r["result"]["resourceTemplates"][0]["uriTemplate"],
        "kiwi://{type}/{id}"
    );
    let r = c
        .request("resources/read", json!({"uri": "kiwi://knowledge/k/notes"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["mimeType"], "text/markdown");
    assert!(r["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Be kind"));
    let r = c
        .request("resources/read", json!({"uri": "kiwi://system/runtime"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["mimeType"], "application/json");
    let r = c
        .request("resources/read", json!({"uri": "kiwi://knowledge/k/nope"}))
        .await;
    assert!(r["error"].is_object());
    let r = c
        .request(
            "resources/read",
            json!({"uri": "kiwi://tool/../../etc/passwd"}),
        )
        .await;
    assert!(r["error"].is_object());
    c.assert_no_canary();
}

#[tokio::test]
async fn without_a_project_calls_name_one() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    let mut c = Client::start(None, host(&tmp), &tmp).await;
    // Builtin and user items need no project.
    c.ok(
        "load",
        json!({"item_type": "directive", "item_id": "core/init"}),
    )
    .await;
    let e = c
        .err(
            "load",
            json!({"item_type": "directive", "item_id": "d/greet"}),
        )
        .await;
    // Not in the user or builtin space: the project it needs is missing (issue 16, point 3).
    assert_eq!(e["error"], "no_project");
    c.ok(
        "load",
        json!({"item_type": "directive", "item_id": "d/greet", "project_path": p.to_str().unwrap()}),
    )
    .await;
    let e = c
        .err(
            "load",
            json!({"item_type": "directive", "item_id": "core/init", "destination": "project"}),
        )
        .await;
    assert_eq!(e["error"], "no_project");
    let e = c
        .err(
            "search",
            json!({"item_type": "directive", "query": "x", "project_path": "/nonexistent"}),
        )
        .await;
    assert_eq!(e["error"], "invalid_project_path");
}

#[tokio::test]
async fn init_through_the_builtin_tool() {
    let (d, mut c) = setup().await;
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "core/init_userspace"}),
        )
        .await;
    assert_eq!(v["result"]["existed"], false);
    let user = d.path().canonicalize().unwrap().join("user");
    assert!(user.join("config.yaml").exists());
    assert!(user.join("directives/core/init.md").exists());
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "core/init_userspace"}),
        )
        .await;
    assert_eq!(v["result"]["written"], json!([]));
    // The user space copy now shadows the builtin directive.
    let v = c
        .ok(
            "load",
            json!({"item_type": "directive", "item_id": "core/init"}),
        )
        .await;
    assert_eq!(v["source"], "user");
}

/// Issue 12: `init` runs on the one path every tool runs on (`exec::prepare`, then the run's
/// redaction): its result never shows a secret value, here one that is part of the user
/// space's path; its dry run is the plan of the builtin tool.
#[tokio::test]
async fn init_runs_on_the_one_tool_path() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    let mut h = host(&tmp);
    let user = tmp.join(format!("spaces-{}", CANARIES[0].1)).join("user");
    h.vars.insert(
        "KIWI_USERSPACE_DIR".into(),
        user.to_str().unwrap().to_string(),
    );
    let mut c = Client::start(Some(p), h, &tmp).await;
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "core/init_userspace"}),
        )
        .await;
    assert_eq!(v["result"]["existed"], false, "{v}");
    assert!(user.join("config.yaml").exists());
    let text = v.to_string();
    assert!(
        !text.contains(CANARIES[0].1),
        "a secret in init's result: {text}"
    );
    assert!(text.contains("[redacted]"), "{text}");
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "dry_run", "item_id": "core/init_userspace"}),
        )
        .await;
    assert_eq!(v["dry_run"], true, "{v}");
    assert!(!v.to_string().contains(CANARIES[0].1), "{v}");
    // The user space's copy of the tool, unchanged but for a comment, with a planted
    // error-level diagnostic: refused like any tool with one, nothing run.
    let copy = user.join("tools/core/init_userspace.yaml");
    let text = std::fs::read_to_string(&copy).unwrap();
    std::fs::write(&copy, text.replace("timeout: 60", "timeout: \"sixty\"")).unwrap();
    std::fs::remove_file(user.join("config.yaml")).unwrap();
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "core/init_userspace"}),
        )
        .await;
    assert_eq!(e["error"], "invalid_item", "{e}");
    assert!(!user.join("config.yaml").exists(), "init ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_calls_all_answer() {
    let (_d, mut c) = setup().await;
    let mut ids = Vec::new();
    for i in 0..200 {
        let args = match i % 4 {
            0 => {
                json!({"name": "search", "arguments": {"item_type": "knowledge", "query": "greeting"}})
            }
            1 => {
                json!({"name": "load", "arguments": {"item_type": "knowledge", "item_id": "k/notes"}})
            }
            2 => {
                json!({"name": "execute", "arguments": {"item_type": "system", "action": "run", "item_id": "mcp"}})
            }
            _ => json!({"name": "help", "arguments": {"topic": "search"}}),
        };
        ids.push((i, c.send_request("tools/call", args).await));
    }
    let mut answers = std::collections::HashMap::new();
    while answers.len() < 200 {
        let line = tokio::time::timeout(Duration::from_secs(60), c.r.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = v.get("id").and_then(Value::as_u64) {
            answers.insert(id, v);
        }
    }
    for (i, id) in ids {
        let r = &answers[&id]["result"];
        assert_eq!(r["isError"], false, "{i}");
        let s = &r["structuredContent"];
        match i % 4 {
            0 => assert_eq!(s["results"][0]["id"], "k/notes"),
            1 => assert_eq!(s["id"], "k/notes"),
            2 => assert_eq!(s["fields"]["server_name"], "kiwi"),
            _ => assert_eq!(s["topic"], "search"),
        }
    }
}

#[tokio::test]
async fn tools_and_directives_can_be_created_validated_deleted() {
    let (d, mut c) = setup().await;
    let root = d.path().canonicalize().unwrap().join("proj/.ai");
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "create", "item_id": "t/echo2",
                   "parameters": {"content": ECHO}}),
        )
        .await;
    assert!(v["path"].as_str().unwrap().ends_with("tools/t/echo2.yaml"));
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "validate", "item_id": "t/echo2"}),
        )
        .await;
    assert_eq!(v["valid"], true, "{v:#}");
    let r = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo2", "parameters": {"name": "Di"}}),
        )
        .await;
    assert!(r["result"]["stdout"]
        .as_str()
        .unwrap()
        .starts_with("hello Di"));
    c.ok(
        "execute",
        json!({"item_type": "tool", "action": "delete", "item_id": "t/echo2"}),
    )
    .await;
    assert!(!root.join("tools/t/echo2.yaml").exists());

    let v = c
        .ok(
            "execute",
            json!({"item_type": "directive", "action": "create", "item_id": "x/inner_copy",
                   "parameters": {"content": INNER, "space": "user"}}),
        )
        .await;
    assert_eq!(v["space"], "user");
    let v = c
        .ok(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "x/inner_copy"}),
        )
        .await;
    assert_eq!(v["steps"][0]["calls"][0]["item_id"], "t/slow");
    // Unknown ids everywhere get the closest ids.
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/eho"}),
        )
        .await;
    assert_eq!(e["error"], "not_found");
    assert_eq!(e["suggestions"][0], "t/echo");
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "fly", "item_id": "d/greet"}),
        )
        .await;
    assert_eq!(
        e["allowed_actions"],
        json!(["run", "done", "validate", "create", "update", "delete", "publish"])
    );
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo", "parameters": [1, 2]}),
        )
        .await;
    assert_eq!(e["error"], "invalid_parameters");
}

/// A directive with the given permissions and one step that loads a knowledge entry.
fn directive_granting(name: &str, permissions: &str) -> String {
    format!(
        r#"# {name}

```xml
<directive name="{name}" version="1.0.0">
  <metadata>
    <description>A directive that grants {name}</description>
    <category>test</category>
    <author>tests</author>
    <permissions>
{permissions}
    </permissions>
  </metadata>
  <process>
    <step name="read">
      <description>Read the notes</description>
      <load item_type="knowledge" item_id="k/notes"/>
    </step>
  </process>
  <outputs>
    <success>done</success>
  </outputs>
</directive>
```
"#
    )
}

/// Issue 12, point 13: `load` with `destination` writes an item, so under a running
/// directive it needs `create` (or `update` when `force` overwrites) on the destination
/// item, not only `load`; `resources/read` and `prompts/get` are checked like `load`.
#[tokio::test]
async fn load_with_destination_needs_create_or_update_under_a_directive() {
    let (d, mut c) = setup().await;
    let tmp = d.path().canonicalize().unwrap();
    let ai = tmp.join("proj/.ai");
    write(
        &ai,
        "directives/d/loader.md",
        &directive_granting(
            "loader",
            r#"      <load resource="kiwi" action="load" item_type="knowledge" id="*"/>"#,
        ),
    );
    write(
        &ai,
        "directives/d/noter.md",
        &directive_granting(
            "noter",
            r#"      <load resource="kiwi" action="load" item_type="knowledge" id="*"/>
      <execute resource="kiwi" action="create" item_type="knowledge" id="notes/*"/>"#,
        ),
    );
    write(
        &tmp.join("user"),
        "knowledge/notes/tip.md",
        "---\nid: tip\nentry_type: reference\ntitle: A tip\n---\n\nA tip.\n",
    );
    let mine = "---\nid: permissions\nentry_type: reference\ntitle: mine\n---\n\nmine\n";
    write(&ai, "knowledge/core/permissions.md", mine);
    let user_copy = tmp.join("user/knowledge/core/permissions.md");

    c.ok(
        "execute",
        json!({"item_type": "directive", "action": "run", "item_id": "d/loader"}),
    )
    .await;
    // Positive control: a plain load is granted.
    c.ok(
        "load",
        json!({"item_type": "knowledge", "item_id": "core/permissions"}),
    )
    .await;
    // A copy into the user space creates an item there: `create` is not granted.
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "core/permissions", "source": "builtin",
                   "destination": "user", "force": true}),
        )
        .await;
    assert_eq!(e["error"], "permission_denied", "{e:#}");
    assert_eq!(
        e["missing_capability"],
        "kiwi.create.knowledge.core/permissions"
    );
    assert!(!user_copy.exists(), "the user space was written");
    // An overwrite of the project's file (force) needs `update`.
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "core/permissions", "source": "builtin",
                   "destination": "project", "force": true}),
        )
        .await;
    assert_eq!(e["error"], "permission_denied", "{e:#}");
    assert!(e["missing_capability"].as_str().unwrap().contains("update"));
    assert_eq!(
        std::fs::read_to_string(ai.join("knowledge/core/permissions.md")).unwrap(),
        mine
    );
    // resources/read and prompts/get are checked like load: knowledge is granted,
    // directives are not.
    let r = c
        .request("resources/read", json!({"uri": "kiwi://knowledge/k/notes"}))
        .await;
    assert!(r["result"].is_object(), "{r}");
    let r = c
        .request("resources/read", json!({"uri": "kiwi://directive/d/greet"}))
        .await;
    assert!(r["error"].is_object(), "{r}");
    let r = c
        .request(
            "prompts/get",
            json!({"name": "d/greet", "arguments": {"name": "Cy"}}),
        )
        .await;
    assert!(r["error"].is_object(), "{r}");
    c.ok(
        "execute",
        json!({"item_type": "directive", "action": "done", "item_id": "d/loader"}),
    )
    .await;

    // `create knowledge notes/*`: a copy into notes/ is granted, one outside is not.
    c.ok(
        "execute",
        json!({"item_type": "directive", "action": "run", "item_id": "d/noter"}),
    )
    .await;
    let v = c
        .ok(
            "load",
            json!({"item_type": "knowledge", "item_id": "notes/tip", "destination": "project"}),
        )
        .await;
    assert!(ai.join("knowledge/notes/tip.md").exists(), "{v:#}");
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "core/permissions", "source": "builtin",
                   "destination": "project", "force": true}),
        )
        .await;
    assert_eq!(e["error"], "permission_denied", "{e:#}");
    assert_eq!(
        std::fs::read_to_string(ai.join("knowledge/core/permissions.md")).unwrap(),
        mine
    );
    c.assert_no_canary();
}

/// Issue 12, point 15: copying an item kiwi refused to read (a symlink out of its space)
/// fails with a clear error and writes nothing (it wrote an empty file).
#[cfg(unix)]
#[tokio::test]
async fn copying_a_refused_symlinked_item_fails_and_writes_nothing() {
    let (d, mut c) = setup().await;
    let tmp = d.path().canonicalize().unwrap();
    let secret = tmp.join("outside-secret.md");
    std::fs::write(
        &secret,
        "---\nid: leak\ntitle: top secret words\n---\nclassified\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, tmp.join("proj/.ai/knowledge/k/leak.md")).unwrap();
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "k/leak", "destination": "user"}),
        )
        .await;
    assert_eq!(e["error"], "invalid_item", "{e:#}");
    assert!(e["message"]
        .as_str()
        .unwrap()
        .contains("nothing was written"));
    assert!(!tmp.join("user/knowledge/k/leak.md").exists());
    let r = c
        .request("resources/read", json!({"uri": "kiwi://knowledge/k/leak"}))
        .await;
    assert!(r["error"].is_object(), "{r}");
    // Positive control: a readable item is copied.
    c.ok(
        "load",
        json!({"item_type": "knowledge", "item_id": "k/notes", "destination": "user"}),
    )
    .await;
    assert!(tmp.join("user/knowledge/k/notes.md").exists());
    assert!(!c.wire.contains("top secret words"));
}

/// Issue 12, points 16-18 through MCP: a directive or a tool with an error-level diagnostic
/// is refused with its diagnostics (a misspelt placeholder no longer silently becomes ""),
/// and `create` of a Python tool with a syntax error reports it and writes nothing.
#[tokio::test]
async fn items_with_errors_are_refused_with_their_diagnostics() {
    let (d, mut c) = setup().await;
    let tmp = d.path().canonicalize().unwrap();
    let ai = tmp.join("proj/.ai");
    write(
        &ai,
        "directives/d/typo.md",
        &DIRECTIVE
            .replace("name=\"greet\"", "name=\"typo\"")
            .replace(
                "<param name=\"name\" value=\"{input:name}\"/>",
                "<param name=\"name\" value=\"{input:naem}\"/>",
            ),
    );
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "d/typo",
                   "parameters": {"name": "Cy"}}),
        )
        .await;
    assert_eq!(e["error"], "invalid_item", "{e:#}");
    let diags = e["diagnostics"].as_array().unwrap();
    assert!(diags.iter().any(|x| x["code"] == "D108"), "{e:#}");
    // It did not become the active directive.
    let e = c
        .err(
            "execute",
            json!({"item_type": "directive", "action": "done", "item_id": "d/typo"}),
        )
        .await;
    assert_eq!(e["error"], "not_active");
    // Nor is it given as a prompt with the typo filled with "".
    let r = c
        .request(
            "prompts/get",
            json!({"name": "d/typo", "arguments": {"name": "Cy"}}),
        )
        .await;
    assert!(r["error"].to_string().contains("D108"), "{r}");
    // Positive control: the directive without the typo is a prompt.
    let r = c
        .request(
            "prompts/get",
            json!({"name": "d/greet", "arguments": {"name": "Cy"}}),
        )
        .await;
    assert!(r["result"].is_object(), "{r}");

    let bad = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"x\"\nCONFIG = {\"timeout\": 1 * 1}\nimport time\nif __name__ == \"__main__\":\n    time.sleep(3)\n    print(\"finished\")\n";
    write(&ai, "tools/t/mul.py", bad);
    for action in ["run", "dry_run"] {
        let e = c
            .err(
                "execute",
                json!({"item_type": "tool", "action": action, "item_id": "t/mul"}),
            )
            .await;
        assert_eq!(e["error"], "invalid_item", "{e:#}");
        assert_eq!(e["diagnostics"][0]["code"], "T301", "{e:#}");
        assert_eq!(e["diagnostics"][0]["line"], 5, "{e:#}");
    }
    // Positive control: a clean tool runs.
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo",
                   "parameters": {"name": "Cy"}}),
        )
        .await;
    assert!(v["result"]["stdout"].as_str().unwrap().contains("hello Cy"));

    let broken = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"x\"\ndef broken(:\n    pass\n";
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "create", "item_id": "t/broken",
                   "parameters": {"content": broken, "format": "python"}}),
        )
        .await;
    assert_eq!(e["error"], "invalid_content", "{e:#}");
    assert_eq!(e["diagnostics"][0]["code"], "T301", "{e:#}");
    assert_eq!(e["diagnostics"][0]["line"], 5, "{e:#}");
    assert!(!ai.join("tools/t/broken.py").exists());
}

/// Issue 13: an extra space named by `KIWI_SPACES` (rye's system space): its items are
/// searched with their space as `source`, loaded, and run; writes never go there.
#[tokio::test]
async fn extra_space_items_are_searched_loaded_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    let sys = tmp.join("rye");
    write(
        &sys,
        ".ai/tools/rye/core/primitives/subprocess.yaml",
        "version: \"1.0.0\"\ntool_type: primitive\nexecutor_id: null\nconfig_schema:\n  type: object\n  properties:\n    command: {type: string}\n    args: {type: array}\n  required: [command]\n",
    );
    write(
        &sys,
        ".ai/tools/rye/sys/zebra_echo.yaml",
        "version: \"1.0.0\"\ntool_type: bash\nexecutor_id: rye/core/primitives/subprocess\ndescription: Echo a zebra from the system space\nconfig:\n  command: echo\n  args: [\"zebra from\", \"{system_space}\"]\n",
    );
    let mut h = host(&tmp);
    h.vars
        .insert("KIWI_SPACES".into(), sys.display().to_string());
    let mut c = Client::start(Some(p), h, &tmp).await;

    let v = c
        .ok("search", json!({"item_type": "tool", "query": "zebra"}))
        .await;
    assert_eq!(v["results"][0]["id"], "rye/sys/zebra_echo", "{v:#}");
    assert_eq!(v["results"][0]["source"], "rye", "{v:#}");
    let only = c
        .ok(
            "search",
            json!({"item_type": "tool", "query": "zebra", "source": "rye"}),
        )
        .await;
    assert_eq!(only["results"][0]["id"], "rye/sys/zebra_echo");
    let e = c
        .err(
            "search",
            json!({"item_type": "tool", "query": "x", "source": "nowhere"}),
        )
        .await;
    assert!(
        e["suggestions"].as_array().unwrap().contains(&json!("rye")),
        "{e:#}"
    );

    let l = c
        .ok(
            "load",
            json!({"item_type": "tool", "item_id": "rye/sys/zebra_echo"}),
        )
        .await;
    assert_eq!(l["source"], "rye", "{l:#}");

    let r = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "rye/sys/zebra_echo"}),
        )
        .await;
    assert_eq!(
        r["result"]["stdout"],
        // rye's `{system_space}`: the folder that holds the space's `.ai` (issue 23).
        format!("zebra from {}\n", sys.display()),
        "{r:#}"
    );

    // The extra space is read-only.
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "create", "item_id": "x/new",
                   "parameters": {"space": "rye", "content": "version: \"1.0.0\"\n"}}),
        )
        .await;
    assert_eq!(e["error"], "read_only", "{e:#}");
    c.assert_no_canary();
}

// ---------------------------------------------------------------------------------------
// Honest results (issue 16, points 1, 3, 4, 5)

const FAIL: &str = r#"version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print a line and exit 3
config:
  command: bash
  args: ["-c", "echo partial output; echo oops >&2; exit 3"]
  timeout: 20
"#;

const HANG: &str = r#"version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print a line then sleep past its timeout
config:
  command: bash
  args: ["-c", "echo before the timeout; sleep 30"]
  timeout: 1
"#;

/// A tool that exits 0 and answers `{"success": false, "error": …}` (rye's tools' own way of
/// failing), and one that answers `{"ok": false}`.
const SAYS_FAILED: &str = r#"version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Exit 0 with a JSON answer that says it failed
config:
  command: bash
  args: ["-c", "echo '{\"success\": false, \"error\": \"no such branch: main2\"}'"]
  timeout: 20
"#;

const SAYS_NOT_OK: &str = r#"version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Exit 0 with ok false
config:
  command: bash
  args: ["-c", "echo '{\"ok\": false}'"]
  timeout: 20
"#;

const SAYS_SUCCEEDED: &str = r#"version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Exit 0 with success true
config:
  command: bash
  args: ["-c", "echo '{\"success\": true, \"ok\": true, \"data\": 1}'"]
  timeout: 20
"#;

/// Issue 26, 6: a tool's own JSON answer `success: false` (or `ok: false`) is an error the
/// agent sees as one, with the tool's error text; exit 0 with `success: true` stays a success.
#[tokio::test]
async fn a_tool_answering_success_false_is_an_error() {
    let (d, mut c) = setup().await;
    let ai = d.path().canonicalize().unwrap().join("proj/.ai");
    write(&ai, "tools/t/says_failed.yaml", SAYS_FAILED);
    write(&ai, "tools/t/says_not_ok.yaml", SAYS_NOT_OK);
    write(&ai, "tools/t/says_succeeded.yaml", SAYS_SUCCEEDED);
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/says_failed"}),
        )
        .await;
    assert_eq!(e["error"], "tool_failed", "{e:#}");
    assert_eq!(e["result"]["exit_code"], 0, "{e:#}");
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("success: false") && m.contains("no such branch: main2"),
        "{m}"
    );
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/says_not_ok"}),
        )
        .await;
    assert_eq!(e["error"], "tool_failed", "{e:#}");
    assert!(
        e["message"].as_str().unwrap().contains("ok: false"),
        "{e:#}"
    );
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/says_succeeded"}),
        )
        .await;
    assert_eq!(v["result"]["json"]["data"], 1, "{v:#}");
}

#[tokio::test]
async fn a_failed_or_timed_out_run_is_an_error_with_its_output() {
    let (d, mut c) = setup().await;
    let ai = d.path().canonicalize().unwrap().join("proj/.ai");
    write(&ai, "tools/t/fail.yaml", FAIL);
    write(&ai, "tools/t/hang.yaml", HANG);
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/fail"}),
        )
        .await;
    assert_eq!(e["error"], "tool_failed", "{e:#}");
    assert_eq!(e["result"]["exit_code"], 3);
    assert_eq!(e["result"]["stdout"], "partial output\n");
    assert_eq!(e["result"]["stderr"], "oops\n");
    assert!(e["message"].as_str().unwrap().contains("exit"), "{e:#}");
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/hang"}),
        )
        .await;
    assert_eq!(e["error"], "timed_out", "{e:#}");
    assert_eq!(e["result"]["timed_out"], true);
    assert_eq!(e["result"]["exit_code_shell"], 124);
    assert_eq!(e["result"]["stdout"], "before the timeout\n");
    // A run that succeeds stays a success.
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo", "parameters": {"name": "Al"}}),
        )
        .await;
    assert_eq!(v["result"]["exit_code"], 0);
}

#[tokio::test]
async fn without_a_project_a_call_that_needs_one_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    let mut c = Client::start(None, host(&tmp), &tmp).await;
    let user = tmp.join("user");
    let e = c
        .err(
            "search",
            json!({"item_type": "directive", "query": "greet"}),
        )
        .await;
    assert_eq!(e["error"], "no_project", "{e:#}");
    assert!(e["message"].as_str().unwrap().contains("project_path"));
    // Asked explicitly, the user and builtin spaces are searched.
    let v = c
        .ok(
            "search",
            json!({"item_type": "directive", "query": "init", "source": "builtin"}),
        )
        .await;
    assert_eq!(v["results"][0]["id"], "core/init");
    c.ok(
        "search",
        json!({"item_type": "directive", "query": "init", "source": "user"}),
    )
    .await;
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo", "parameters": {"name": "x"}}),
        )
        .await;
    assert_eq!(e["error"], "no_project", "{e:#}");
    let e = c
        .err(
            "load",
            json!({"item_type": "directive", "item_id": "d/greet"}),
        )
        .await;
    assert_eq!(e["error"], "no_project", "{e:#}");
    // Writing needs a project unless the user space is asked for.
    let e = c
        .err(
            "execute",
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                   "parameters": {"content": NOTES}}),
        )
        .await;
    assert_eq!(e["error"], "no_project", "{e:#}");
    assert!(!user.join("knowledge/k/new.md").exists());
    let v = c
        .ok(
            "execute",
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                   "parameters": {"content": NOTES, "space": "user"}}),
        )
        .await;
    assert_eq!(v["space"], "user");
    assert!(user.join("knowledge/k/new.md").exists());
    // An item of the user or builtin space needs no project; copying to the user space
    // neither.
    c.ok(
        "load",
        json!({"item_type": "directive", "item_id": "core/init"}),
    )
    .await;
    c.ok(
        "load",
        json!({"item_type": "directive", "item_id": "core/init", "destination": "user"}),
    )
    .await;
    // project_path still names one.
    c.ok(
        "search",
        json!({"item_type": "directive", "query": "greet", "project_path": p.to_str().unwrap()}),
    )
    .await;
}

#[tokio::test]
async fn a_project_path_other_than_the_servers_project_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    let other = tmp.join("other");
    write(&other.join(".ai"), "tools/t/echo.yaml", ECHO);
    let mut c = Client::start(Some(p.clone()), host(&tmp), &tmp).await;
    let e = c
        .err(
            "search",
            json!({"item_type": "tool", "query": "echo", "project_path": other.to_str().unwrap()}),
        )
        .await;
    assert_eq!(e["error"], "project_mismatch", "{e:#}");
    assert!(e["message"].as_str().unwrap().contains(p.to_str().unwrap()));
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo",
                   "parameters": {"name": "x"}, "project_path": other.to_str().unwrap()}),
        )
        .await;
    assert_eq!(e["error"], "project_mismatch", "{e:#}");
    // The same project, spelt another way, is that project.
    let same = format!("{}/../proj", p.display());
    c.ok(
        "search",
        json!({"item_type": "tool", "query": "echo", "project_path": same}),
    )
    .await;
}

const WORD_COUNT_PY: &str = r#"__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__category__ = "text"
__tool_description__ = "Count words"

def main(**kwargs):
    return {"words": 0}
"#;

#[tokio::test]
async fn an_id_is_one_file_and_delete_says_what_it_resolves_to() {
    let (d, mut c) = setup().await;
    let ai = d.path().canonicalize().unwrap().join("proj/.ai");
    write(&ai, "tools/text/word_count.py", WORD_COUNT_PY);
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "create", "item_id": "text/word_count",
                   "parameters": {"content": ECHO}}),
        )
        .await;
    assert_eq!(e["error"], "exists", "{e:#}");
    assert!(
        e["path"].as_str().unwrap().ends_with("word_count.py"),
        "{e:#}"
    );
    assert!(!ai.join("tools/text/word_count.yaml").exists());
    // Not even with force: force overwrites the same file, it never adds a second one.
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "create", "item_id": "text/word_count",
                   "parameters": {"content": ECHO, "force": true}}),
        )
        .await;
    assert_eq!(e["error"], "exists", "{e:#}");
    assert!(!ai.join("tools/text/word_count.yaml").exists());

    // A user copy of t/echo: deleting the project's leaves the user's.
    c.ok(
        "load",
        json!({"item_type": "tool", "item_id": "t/echo", "destination": "user"}),
    )
    .await;
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "delete", "item_id": "t/echo"}),
        )
        .await;
    assert_eq!(v["now_resolves_to"]["space"], "user", "{v:#}");
    assert!(v["now_resolves_to"]["path"]
        .as_str()
        .unwrap()
        .ends_with("user/tools/t/echo.yaml"));
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "delete", "item_id": "text/word_count"}),
        )
        .await;
    assert_eq!(v["now_resolves_to"], Value::Null, "{v:#}");
}

#[tokio::test]
async fn load_to_a_space_with_force_restores_from_the_next_space_down() {
    let (d, mut c) = setup().await;
    let user = d.path().canonicalize().unwrap().join("user");
    let v = c
        .ok(
            "load",
            json!({"item_type": "knowledge", "item_id": "core/permissions", "destination": "user"}),
        )
        .await;
    let target = user.join("knowledge/core/permissions.md");
    assert_eq!(v["path"], target.to_str().unwrap());
    let mine = "---\nid: permissions\nentry_type: reference\ntitle: mine\n---\n\nmine\n";
    std::fs::write(&target, mine).unwrap();
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "core/permissions", "destination": "user"}),
        )
        .await;
    assert_eq!(e["error"], "exists");
    let v = c
        .ok(
            "load",
            json!({"item_type": "knowledge", "item_id": "core/permissions", "destination": "user", "force": true}),
        )
        .await;
    assert_eq!(v["from"], "builtin", "{v:#}");
    assert_eq!(v["overwrote"], true, "{v:#}");
    assert!(v["source_path"]
        .as_str()
        .unwrap()
        .contains("knowledge/core/permissions.md"));
    assert!(v["message"].as_str().unwrap().contains("onto"), "{v:#}");
    let now = std::fs::read_to_string(&target).unwrap();
    assert_ne!(now, mine, "force restored nothing");
    assert!(now.contains("Permissions"));
    // An item only in the destination space has nothing below it to copy.
    write(&user, "knowledge/mine/only.md", mine);
    let e = c
        .err(
            "load",
            json!({"item_type": "knowledge", "item_id": "mine/only", "destination": "user", "force": true}),
        )
        .await;
    assert_eq!(e["error"], "nothing_to_copy", "{e:#}");
}

// ---------------------------------------------------------------------------------------
// Answers an agent can act on (issue 16, point 10)

#[tokio::test]
async fn a_misspelt_parameter_gets_a_did_you_mean() {
    let (_d, mut c) = setup().await;
    let e = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "t/echo", "parameters": {"nme": "Bo"}}),
        )
        .await;
    assert_eq!(e["error"], "execution_error");
    assert_eq!(e["suggestions"], json!(["name"]), "{e:#}");
    let details = e["details"].to_string();
    assert!(details.contains("did you mean `name`"), "{e:#}");
}

#[tokio::test]
async fn empty_content_creates_nothing() {
    let (d, mut c) = setup().await;
    let ai = d.path().canonicalize().unwrap().join("proj/.ai");
    for content in ["", "  \n\t\n"] {
        for t in ["tool", "directive", "knowledge"] {
            let e = c
                .err(
                    "execute",
                    json!({"item_type": t, "action": "create", "item_id": "e/empty",
                           "parameters": {"content": content}}),
                )
                .await;
            assert_eq!(e["error"], "invalid_content", "{t}: {e:#}");
        }
    }
    assert!(!ai.join("tools/e").exists());
    assert!(!ai.join("directives/e").exists());
    assert!(!ai.join("knowledge/e").exists());
}

#[tokio::test]
async fn system_mcp_names_the_negotiated_protocol_version() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = project(&tmp);
    for version in ["2025-06-18", "2025-11-25"] {
        let mut c = Client::start_with(Some(p.clone()), host(&tmp), &tmp, version).await;
        let v = c
            .ok(
                "execute",
                json!({"item_type": "system", "action": "run", "item_id": "mcp"}),
            )
            .await;
        assert_eq!(v["fields"]["protocol_version"], version, "{v:#}");
        let v = c
            .ok("load", json!({"item_type": "system", "item_id": "mcp"}))
            .await;
        assert_eq!(v["fields"]["protocol_version"], version, "{v:#}");
        let r = c
            .request("resources/read", json!({"uri": "kiwi://system/mcp"}))
            .await;
        let text = r["result"]["contents"][0]["text"].as_str().unwrap();
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["fields"]["protocol_version"], version, "{v:#}");
    }
}

const SCRIPTED: &str = r#"version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: A YAML tool whose work is its script
config:
  command: python3
  args: ["{tool_dir}/scripted.py"]
  timeout: 20
"#;

#[tokio::test]
async fn a_yaml_tool_with_a_script_exposes_the_script_as_a_resource() {
    let (d, mut c) = setup().await;
    let ai = d.path().canonicalize().unwrap().join("proj/.ai");
    write(&ai, "tools/t/scripted.yaml", SCRIPTED);
    write(&ai, "tools/t/scripted.py", "print('the script body')\n");
    let v = c
        .ok(
            "load",
            json!({"item_type": "tool", "item_id": "t/scripted"}),
        )
        .await;
    assert!(
        v["script"].is_object()
            || v["script_path"].is_string()
            || v.to_string().contains("scripted.py"),
        "{v:#}"
    );
    let list = c.request("resources/list", json!({})).await;
    let mut uris = Vec::new();
    let mut cursor = list["result"]["nextCursor"].clone();
    uris.extend(
        list["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_string()),
    );
    while let Some(cur) = cursor.as_str().map(str::to_string) {
        let more = c.request("resources/list", json!({"cursor": cur})).await;
        uris.extend(
            more["result"]["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["uri"].as_str().unwrap().to_string()),
        );
        cursor = more["result"]["nextCursor"].clone();
    }
    assert!(uris.contains(&"kiwi://tool/t/scripted".to_string()));
    assert!(
        uris.contains(&"kiwi://tool/t/scripted?file=script".to_string()),
        "{uris:?}"
    );
    let r = c
        .request(
            "resources/read",
            json!({"uri": "kiwi://tool/t/scripted?file=script"}),
        )
        .await;
    assert_eq!(
        r["result"]["contents"][0]["text"], "print('the script body')\n",
        "{r:#}"
    );
    assert_eq!(r["result"]["contents"][0]["mimeType"], "text/x-python");
    // Reading the tool gives both files.
    let r = c
        .request("resources/read", json!({"uri": "kiwi://tool/t/scripted"}))
        .await;
    let contents = r["result"]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 2, "{r:#}");
    assert_eq!(contents[1]["uri"], "kiwi://tool/t/scripted?file=script");
    // A tool without a script has no such resource.
    let r = c
        .request(
            "resources/read",
            json!({"uri": "kiwi://tool/t/echo?file=script"}),
        )
        .await;
    assert!(r["error"].is_object(), "{r:#}");
}

/// Issue 17: `execute action: publish` publishes a workspace item to a configured registry,
/// signed with the user's key, through the same code path as `kiwi publish`; it needs a
/// running directive that grants `publish` (refused without one, and under a directive that
/// does not grant it), and refuses an item with error diagnostics. The action is in the
/// tool's input schema and in `help`.
#[tokio::test]
async fn publish_needs_a_directive_granting_it_and_signs_with_the_users_key() {
    use kiwi_kernel::registry::{config, store};
    let (d, mut c) = setup().await;
    let tmp = d.path().canonicalize().unwrap();
    let ai = tmp.join("proj/.ai");
    let user = tmp.join("user");
    let reg = tmp.join("team.git");
    store::create(&reg, "team", true).unwrap();
    let url = store::normalize_url(reg.to_str().unwrap()).unwrap();
    config::save(
        &user,
        &[config::RegistryEntry {
            name: "team".into(),
            url: url.clone(),
        }],
    )
    .unwrap();
    let keys = kiwi_kernel::trust::Keys::generate(&user).unwrap();
    write(
        &ai,
        "directives/d/publisher.md",
        &directive_granting(
            "publisher",
            r#"      <load resource="kiwi" action="load" item_type="knowledge" id="*"/>
      <search resource="kiwi" action="search" item_type="tool" id="*"/>
      <execute resource="kiwi" action="publish" id="*"/>"#,
        ),
    );
    write(
        &ai,
        "directives/d/reader.md",
        &directive_granting(
            "reader",
            r#"      <load resource="kiwi" action="load" item_type="knowledge" id="*"/>
      <execute resource="kiwi" action="run" item_type="tool" id="*"/>"#,
        ),
    );
    write(
        &ai,
        "directives/d/typo.md",
        &DIRECTIVE
            .replace("name=\"greet\"", "name=\"typo\"")
            .replace(
                "<param name=\"name\" value=\"{input:name}\"/>",
                "<param name=\"name\" value=\"{input:naem}\"/>",
            ),
    );
    let publish = |id: &str| {
        json!({"item_type": if id.starts_with("d/") { "directive" } else { "tool" },
               "action": "publish", "item_id": id,
               "parameters": {"registry": "team", "version": "1.0.0"}})
    };
    let published = |reg: &Path| {
        std::process::Command::new("git")
            .args(["--git-dir", reg.to_str().unwrap(), "log", "--format=%s"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };

    // The schema and help name it.
    let r = c.request("tools/list", json!({})).await;
    let exec = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "execute")
        .unwrap()
        .clone();
    let actions = &exec["inputSchema"]["properties"]["action"];
    assert!(
        actions["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("publish")),
        "{actions:#}"
    );
    assert!(
        exec["inputSchema"]["properties"]["parameters"]["description"]
            .as_str()
            .unwrap_or_default()
            .contains("publish"),
        "{exec:#}"
    );
    let h = c.ok("help", json!({"topic": "execute"})).await;
    assert!(h["text"].as_str().unwrap().contains("publish"), "{h:#}");

    // Without a directive: refused, nothing published.
    let e = c.err("execute", publish("t/echo")).await;
    assert_eq!(e["error"], "permission_denied", "{e:#}");
    assert!(e["message"].as_str().unwrap().contains("publish"), "{e:#}");
    assert!(!published(&reg).contains("publish"), "{}", published(&reg));

    // Under a directive that does not grant it: refused, naming the capability.
    c.ok(
        "execute",
        json!({"item_type": "directive", "action": "run", "item_id": "d/reader"}),
    )
    .await;
    let e = c.err("execute", publish("t/echo")).await;
    assert_eq!(e["error"], "permission_denied", "{e:#}");
    assert_eq!(e["missing_capability"], "kiwi.publish.tool.t/echo", "{e:#}");
    assert!(!published(&reg).contains("publish"));

    // Under a directive granting it: published, signed with the user's key.
    c.ok(
        "execute",
        json!({"item_type": "directive", "action": "done", "item_id": "d/reader"}),
    )
    .await;
    c.ok(
        "execute",
        json!({"item_type": "directive", "action": "run", "item_id": "d/publisher"}),
    )
    .await;
    let v = c.ok("execute", publish("t/echo")).await;
    assert_eq!(v["line"]["id"], "t/echo", "{v:#}");
    assert_eq!(v["line"]["version"], "1.0.0", "{v:#}");
    assert_eq!(v["line"]["signer"], json!(keys.fingerprint()), "{v:#}");
    assert_eq!(v["registry"], "team", "{v:#}");
    assert!(published(&reg).contains("publish tool/t/echo@1.0.0"));
    // The registry has it (search and load source: registry read it back).
    let s = c
        .ok(
            "search",
            json!({"item_type": "tool", "query": "greeting", "source": "registry"}),
        )
        .await;
    assert_eq!(s["results"][0]["id"], "t/echo", "{s:#}");
    // The same version again: a conflict.
    let e = c.err("execute", publish("t/echo")).await;
    assert_eq!(e["error"], "exists", "{e:#}");

    // An item with error diagnostics is refused with them, nothing published.
    let e = c.err("execute", publish("d/typo")).await;
    assert_eq!(e["error"], "invalid_item", "{e:#}");
    assert!(
        e["diagnostics"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["code"] == "D108")),
        "{e:#}"
    );
    assert!(!published(&reg).contains("d/typo"));

    // An unknown registry: not found, with the configured ones named.
    let mut bad = publish("t/echo");
    bad["parameters"]["registry"] = json!("nope");
    let e = c.err("execute", bad).await;
    assert_eq!(e["error"], "not_found", "{e:#}");
}

/// Issue 29: items in ryeos's current format (`fixtures/ryeos-today`) through MCP: search
/// finds the frontmatter directive and the `# ryeos-tool:` tool by their descriptions, load
/// returns the directive, and execute runs the tool through its runtime and ryeos's
/// `@subprocess` terminal executor.
#[tokio::test]
async fn ryeos_items_search_load_execute() {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let t = to.join(e.file_name());
            if e.path().is_dir() {
                copy(&e.path(), &t);
            } else {
                std::fs::copy(e.path(), &t).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().canonicalize().unwrap();
    let p = tmp.join("proj");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ryeos-today"),
        &p,
    );
    let mut c = Client::start(Some(p), host(&tmp), &tmp).await;
    let v = c
        .ok(
            "search",
            json!({"item_type": "directive", "query": "greet user house style"}),
        )
        .await;
    assert_eq!(v["results"][0]["id"], "hello/greet_user", "{v:#}");
    let v = c
        .ok(
            "search",
            json!({"item_type": "tool", "query": "greet someone"}),
        )
        .await;
    assert_eq!(v["results"][0]["id"], "hello/greet", "{v:#}");
    let v = c
        .ok(
            "load",
            json!({"item_type": "directive", "item_id": "hello/greet_user"}),
        )
        .await;
    assert!(v.to_string().contains("requires"), "{v:#}");
    let v = c
        .ok(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "hello/greet", "parameters": {"name": "Ada"}}),
        )
        .await;
    assert!(
        // The output once: the parsed JSON when stdout is JSON (issue 26).
        v["result"]["json"]["greeting"] == "hello, Ada",
        "{v:#}"
    );
    // The directive runs: its body the prompt with the input filled, its context, and what
    // it grants, which the next call is checked against.
    let v = c
        .ok(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "hello/greet_user", "parameters": {"name": "Ada"}}),
        )
        .await;
    assert!(
        v["body"].as_str().unwrap_or("").contains("name: Ada"),
        "{v:#}"
    );
    assert_eq!(v["context"]["before"][0], "hello/style", "{v:#}");
    assert!(
        v["permissions"].to_string().contains("hello/greet"),
        "{v:#}"
    );
    let v = c
        .err(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "hello/echo", "parameters": {"text": "x"}}),
        )
        .await;
    assert!(v.to_string().contains("permission_denied"), "{v:#}");
    // The refusal names the capability string to declare, in ryeos's spelling.
    assert!(
        v.to_string().contains("ryeos.execute.tool.hello/echo"),
        "{v:#}"
    );
    c.ok(
        "execute",
        json!({"item_type": "directive", "action": "done", "item_id": "hello/greet_user"}),
    )
    .await;
    // As a prompt: the input filled in its body.
    let p = c
        .request(
            "prompts/get",
            json!({"name": "hello/greet_user", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert!(p.to_string().contains("name: Ada"), "{p}");
    c.assert_no_canary();
}
