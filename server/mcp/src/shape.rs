//! Answers sized for an agent's context window (issue 26): one answer carries at most
//! `mcp.max_answer_bytes` of JSON (16 KB by default). A tool run's output beyond it keeps its
//! head and tail with line and byte counts, the whole of it kept (bounded) as a
//! `kiwi://run/<id>/output` resource; any other answer that is too large has its largest
//! texts cut the same way and its longest lists shortened, and says so in `truncated`.

use serde_json::{json, Map, Value as Json};
use std::collections::VecDeque;

/// How many runs' whole outputs are kept, and how many bytes in all (the oldest go first).
pub const KEEP_RUNS: usize = 16;
pub const KEEP_BYTES: usize = 64 << 20;

/// The URI scheme of a kept output.
pub const RUN_PREFIX: &str = "kiwi://run/";

/// The whole outputs of the runs whose answers were cut.
#[derive(Default)]
pub struct Outputs {
    next: u64,
    kept: VecDeque<Kept>,
    bytes: usize,
}

struct Kept {
    id: u64,
    stdout: String,
    stderr: String,
}

impl Outputs {
    /// Keep a run's output; its id. The oldest kept outputs are dropped past
    /// [`KEEP_RUNS`] runs or [`KEEP_BYTES`] bytes.
    pub fn keep(&mut self, stdout: String, stderr: String) -> u64 {
        self.next += 1;
        let id = self.next;
        self.bytes += stdout.len() + stderr.len();
        self.kept.push_back(Kept { id, stdout, stderr });
        while self.kept.len() > KEEP_RUNS || (self.bytes > KEEP_BYTES && self.kept.len() > 1) {
            if let Some(k) = self.kept.pop_front() {
                self.bytes -= k.stdout.len() + k.stderr.len();
            }
        }
        id
    }

    /// The text of `kiwi://run/<id>/output` (or `/stderr`), optionally `?lines=A-B`
    /// (1-based, inclusive). `Err` says why there is none.
    pub fn read(&self, uri: &str) -> Result<String, String> {
        let rest = uri.strip_prefix(RUN_PREFIX).unwrap_or(uri);
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (id, which) = path
            .split_once('/')
            .ok_or_else(|| format!("`{uri}` is not a run output; they are kiwi://run/<id>/output or kiwi://run/<id>/stderr"))?;
        let id: u64 = id
            .parse()
            .map_err(|_| format!("`{id}` is not a run id (a number an answer gave)"))?;
        let k = self.kept.iter().find(|k| k.id == id).ok_or_else(|| {
            if id == 0 || id > self.next {
                format!("no run {id} in this session")
            } else {
                format!(
                    "the output of run {id} is no longer kept: a session keeps the last {KEEP_RUNS} cut outputs (at most {} MB); run the tool again",
                    KEEP_BYTES >> 20
                )
            }
        })?;
        let text = match which {
            "output" => &k.stdout,
            "stderr" => &k.stderr,
            other => {
                return Err(format!(
                    "`{other}` is not part of a run; read kiwi://run/{id}/output or kiwi://run/{id}/stderr"
                ))
            }
        };
        if query.is_empty() {
            return Ok(text.clone());
        }
        let range = query
            .strip_prefix("lines=")
            .and_then(|r| r.split_once('-'))
            .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
            .filter(|(a, b)| *a >= 1 && a <= b)
            .ok_or_else(|| {
                format!("`?{query}` is not a line range; use ?lines=A-B (1-based, A <= B)")
            })?;
        Ok(text
            .split_inclusive('\n')
            .skip(range.0 - 1)
            .take(range.1 - range.0 + 1)
            .collect())
    }
}

fn size(v: &Json) -> usize {
    serde_json::to_string(v).map_or(0, |s| s.len())
}

fn lines(s: &str) -> usize {
    s.lines().count()
}

/// The largest char boundary at or below `i`.
fn floor(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary at or above `i`.
fn ceil(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// `text` cut to about `budget` bytes: its head and tail (whole lines where they fit), a
/// line between saying what was left out and where the whole is. The head's and tail's
/// line counts.
fn excerpt(text: &str, budget: usize, whole: &str) -> (String, usize, usize) {
    let half = budget / 2;
    // Head: whole lines up to half the budget (a single longer line is cut).
    let mut head_end = floor(text, half);
    if let Some(nl) = text[..head_end].rfind('\n') {
        head_end = nl + 1;
    }
    let mut tail_start = ceil(text, text.len().saturating_sub(half)).max(head_end);
    if let Some(nl) = text[tail_start..].find('\n') {
        if tail_start + nl + 1 < text.len()
            && tail_start > 0
            && text.as_bytes()[tail_start - 1] != b'\n'
        {
            tail_start += nl + 1;
        }
    }
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    let gap = &text[head_end..tail_start];
    let mut out = String::with_capacity(budget + 200);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[… {} lines, {} bytes left out; the whole is {whole} …]\n",
        lines(gap),
        gap.len()
    ));
    out.push_str(tail);
    (out, lines(head), lines(tail))
}

/// A tool run's answer made to fit: the chain detail only when `detail`; the output once
/// (the parsed `json`, or `stdout` when it is not JSON); past `cap`, the output cut to its
/// head and tail, the whole kept in `outputs` and named in `result.output`.
pub fn shape_run(v: &mut Json, detail: bool, cap: usize, outputs: &std::sync::Mutex<Outputs>) {
    let Some(r) = v.get_mut("result").and_then(Json::as_object_mut) else {
        return;
    };
    if !r.contains_key("stdout") {
        return; // an HTTP run, or `init`: no process output
    }
    if !detail {
        for k in ["chain", "execution", "tool", "pid"] {
            r.remove(k);
        }
    }
    let parsed = r.get("json").is_some_and(|j| !j.is_null());
    let raw_stdout = if parsed {
        r.remove("stdout")
    } else {
        r.remove("json");
        None
    };
    if size(v) <= cap {
        return;
    }
    let r = v["result"].as_object_mut().expect("checked above");
    let stdout = match raw_stdout {
        Some(Json::String(s)) => {
            r.remove("json");
            s
        }
        _ => take_str(r, "stdout"),
    };
    let stderr = take_str(r, "stderr");
    r.remove("stdout_base64");
    r.remove("stderr_base64");
    let (out_len, err_len) = (stdout.len(), stderr.len());
    let (out_lines, err_lines) = (lines(&stdout), lines(&stderr));
    let id = outputs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .keep(stdout.clone(), stderr.clone());
    let out_uri = format!("{RUN_PREFIX}{id}/output");
    let err_uri = format!("{RUN_PREFIX}{id}/stderr");
    r.insert(
        "output".into(),
        json!({
            "resource": out_uri,
            "stderr_resource": err_uri,
            "stdout_lines": out_lines,
            "stdout_kept_bytes": out_len,
            "stderr_lines": err_lines,
            "stderr_kept_bytes": err_len,
            "message": format!(
                "the output is larger than this answer may be ({cap} bytes, mcp.max_answer_bytes): its head and tail are shown; resources/read {out_uri} gives the whole (add ?lines=A-B for a range)"
            ),
        }),
    );
    r.insert("stdout".into(), Json::String(String::new()));
    r.insert("stderr".into(), Json::String(String::new()));
    let rest = size(v);
    let mut budget = cap.saturating_sub(rest + 400).max(512);
    // JSON escapes can make the text longer than its bytes: shrink until it fits.
    for _ in 0..8 {
        let err_budget = err_len.min(budget / 4);
        let out_budget = budget - err_budget;
        let (o, oh, ot) = if out_len > out_budget {
            excerpt(&stdout, out_budget, &out_uri)
        } else {
            (stdout.clone(), out_lines, 0)
        };
        let (e, eh, et) = if err_len > err_budget {
            excerpt(&stderr, err_budget, &err_uri)
        } else {
            (stderr.clone(), err_lines, 0)
        };
        let r = v["result"].as_object_mut().expect("checked above");
        r.insert("stdout".into(), Json::String(o));
        r.insert("stderr".into(), Json::String(e));
        if let Some(Json::Object(info)) = r.get_mut("output") {
            info.insert(
                "stdout_shown".into(),
                json!({"head_lines": oh, "tail_lines": ot}),
            );
            info.insert(
                "stderr_shown".into(),
                json!({"head_lines": eh, "tail_lines": et}),
            );
        }
        if size(v) <= cap || budget <= 512 {
            break;
        }
        budget = (budget * 3 / 4).max(512);
    }
}

fn take_str(r: &mut Map<String, Json>, k: &str) -> String {
    match r.remove(k) {
        Some(Json::String(s)) => s,
        _ => String::new(),
    }
}

/// Any answer made to fit `cap`: its largest strings cut to head and tail, then its longest
/// lists shortened, each cut named in `truncated` (a JSON pointer and what was left out);
/// `whole` says where the whole is (a resource), when there is one.
pub fn fit(v: &mut Json, cap: usize, whole: Option<&str>) {
    if size(v) <= cap || !v.is_object() {
        return;
    }
    let mut cuts: Vec<Json> = Vec::new();
    let where_whole = whole.unwrap_or("not kept: ask for less");
    for _ in 0..64 {
        let now = size(v);
        if now <= cap {
            break;
        }
        let over = now - cap;
        let mut best: Option<(String, usize, bool)> = None; // (pointer, length, is string)
        largest(v, String::new(), &mut best);
        let Some((ptr, len, is_str)) = best else {
            break;
        };
        let Some(target) = v.pointer_mut(&ptr) else {
            break;
        };
        if is_str && len > 512 {
            let s = target.as_str().unwrap_or("").to_string();
            let budget = len.saturating_sub(over + 300).max(256);
            let (cut, h, t) = excerpt(&s, budget, where_whole);
            *target = Json::String(cut);
            cuts.push(json!({"path": ptr, "bytes": len, "lines": lines(&s), "head_lines": h, "tail_lines": t}));
        } else if let Some(list) = target.as_array_mut().filter(|l| l.len() > 1) {
            let total = list.len();
            let keep = (total / 2).max(1);
            list.truncate(keep);
            match cuts
                .iter_mut()
                .find(|c| c["path"] == json!(ptr) && c.get("items").is_some())
            {
                Some(c) => c["kept"] = json!(keep),
                None => cuts.push(json!({"path": ptr, "items": total, "kept": keep})),
            }
        } else {
            break;
        }
    }
    if !cuts.is_empty() {
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "truncated".into(),
                json!({
                    "cap_bytes": cap,
                    "cuts": cuts,
                    "message": format!(
                        "this answer was larger than {cap} bytes (mcp.max_answer_bytes): the parts named in cuts were shortened; the whole: {where_whole}"
                    ),
                }),
            );
        }
    }
}

/// The largest string (by bytes) or longest list (by serialized bytes) under `v`.
fn largest(v: &Json, at: String, best: &mut Option<(String, usize, bool)>) {
    let mut consider = |p: &str, n: usize, s: bool| {
        if best.as_ref().is_none_or(|b| n > b.1) {
            *best = Some((p.to_string(), n, s));
        }
    };
    match v {
        Json::String(s) if s.len() > 512 => consider(&at, s.len(), true),
        Json::Array(a) => {
            if a.len() > 1 {
                consider(&at, size(v), false);
            }
            for (i, x) in a.iter().enumerate() {
                largest(x, format!("{at}/{i}"), best);
            }
        }
        Json::Object(o) => {
            for (k, x) in o {
                let k = k.replace('~', "~0").replace('/', "~1");
                largest(x, format!("{at}/{k}"), best);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_run_keeps_head_tail_and_the_whole() {
        let out: String = (1..=200_000)
            .map(|i| format!("line number {i}\n"))
            .collect();
        let mut v = json!({"item_type": "tool", "id": "t", "ok": true, "result": {
            "stdout": out, "stderr": "", "json": null, "chain": ["t", "subprocess"],
            "execution": {"environment": "local"}, "exit_code": 0}});
        let outputs = std::sync::Mutex::new(Outputs::default());
        shape_run(&mut v, false, 16 * 1024, &outputs);
        let n = size(&v);
        assert!(n <= 16 * 1024, "{n}");
        let r = &v["result"];
        let s = r["stdout"].as_str().unwrap();
        assert!(
            s.starts_with("line number 1\n") && s.ends_with("line number 200000\n"),
            "{s}"
        );
        assert!(s.contains("kiwi://run/1/output"), "{s}");
        assert!(r.get("chain").is_none() && r.get("execution").is_none());
        assert_eq!(r["output"]["stdout_lines"], 200_000);
        let o = outputs.lock().unwrap();
        assert_eq!(o.read("kiwi://run/1/output").unwrap(), out);
        assert_eq!(
            o.read("kiwi://run/1/output?lines=2-3").unwrap(),
            "line number 2\nline number 3\n"
        );
        assert!(o.read("kiwi://run/2/output").is_err());
    }

    #[test]
    fn output_once_and_detail_on_request() {
        let mk = || {
            json!({"result": {"stdout": "{\"a\": 1}\n", "stderr": "", "json": {"a": 1},
            "chain": ["t", "subprocess"], "exit_code": 0}})
        };
        let outputs = std::sync::Mutex::new(Outputs::default());
        let mut v = mk();
        shape_run(&mut v, false, 16 * 1024, &outputs);
        assert_eq!(v["result"]["json"], json!({"a": 1}));
        assert!(v["result"].get("stdout").is_none() && v["result"].get("chain").is_none());
        let mut v = mk();
        shape_run(&mut v, true, 16 * 1024, &outputs);
        assert_eq!(v["result"]["chain"], json!(["t", "subprocess"]));
    }

    #[test]
    fn retention_is_bounded() {
        let mut o = Outputs::default();
        for _ in 0..KEEP_RUNS + 2 {
            o.keep("x".into(), String::new());
        }
        let e = o.read("kiwi://run/1/output").unwrap_err();
        assert!(e.contains("no longer kept"), "{e}");
        assert!(o
            .read(&format!("kiwi://run/{}/output", KEEP_RUNS + 2))
            .is_ok());
    }

    #[test]
    fn any_answer_fits() {
        let big: Vec<Json> = (0..5000)
            .map(|i| json!({"id": format!("item/{i}")}))
            .collect();
        let mut v = json!({"results": big, "content": "y\n".repeat(40_000)});
        fit(&mut v, 16 * 1024, Some("kiwi://tool/x"));
        assert!(size(&v) <= 16 * 1024, "{}", size(&v));
        assert!(v["truncated"]["cuts"].as_array().unwrap().len() >= 2, "{v}");
    }
}
