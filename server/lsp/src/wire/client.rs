//! One client for the wire, shared by every test that drives a server, `kiwi-bench lsp` and
//! the fuzz harness: the JSON-RPC bookkeeping ([`Inbox`]: ids, answers matched to their
//! requests, the queue of notifications and server requests, what a server's request is
//! answered with) and a blocking [`Client`] over any byte stream (a spawned `kiwi lsp` or
//! `kiwi mcp`'s stdio). The in-process async test client of `kiwi-lsp` files what it reads
//! through the same [`Inbox`] and [`reply`].

use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The server on the other end: how messages are framed, and what its requests get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `kiwi lsp`: `Content-Length` frames ([`super::encode`]); every server request
    /// (`workspace/configuration`, `client/registerCapability`,
    /// `window/workDoneProgress/create`, `workspace/*/refresh`) is answered.
    Lsp,
    /// `kiwi mcp`: one JSON message per line; `ping` and `roots/list` are answered.
    Mcp,
}

/// The answer to `msg` if it is a request of the server (it has a `method` and an `id`).
pub fn reply(peer: Peer, msg: &Json) -> Option<Json> {
    let id = msg.get("id")?;
    let method = msg.get("method")?.as_str().unwrap_or_default();
    let result = match (peer, method) {
        (Peer::Lsp, "workspace/configuration") => json!([]),
        (Peer::Lsp, _) | (Peer::Mcp, "ping") => Json::Null,
        (Peer::Mcp, "roots/list") => json!({"roots": []}),
        (Peer::Mcp, _) => return None,
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// A notification message.
pub fn notification(method: &str, params: Json) -> Json {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// The client's side of the conversation, without any I/O: the ids it gave, the answers
/// read and not asked for yet, the notifications and server requests not consumed yet.
pub struct Inbox {
    pending: HashMap<String, Json>,
    /// Notifications and server requests read and not consumed yet, oldest first.
    pub notes: Vec<Json>,
    next_id: i64,
}

impl Inbox {
    /// An inbox whose first request gets the id `first_id`.
    pub fn new(first_id: i64) -> Inbox {
        Inbox {
            pending: HashMap::new(),
            notes: Vec::new(),
            next_id: first_id,
        }
    }

    /// An id not used yet.
    pub fn fresh_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// A request message with a fresh id: (the id, the message).
    pub fn request(&mut self, method: &str, params: Json) -> (i64, Json) {
        let id = self.fresh_id();
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        (id, msg)
    }

    /// File one message read from the server: an answer by its id, anything else (a
    /// notification, a server request) in [`Inbox::notes`].
    pub fn file(&mut self, msg: Json) {
        match msg.get("id") {
            Some(id) if msg.get("method").is_none() => {
                self.pending.insert(id.to_string(), msg);
            }
            _ => self.notes.push(msg),
        }
    }

    /// The answer to request `id`, if it was read.
    pub fn answer(&mut self, id: &Json) -> Option<Json> {
        self.pending.remove(&id.to_string())
    }

    /// The oldest note that satisfies `pred` (consumed).
    pub fn note(&mut self, pred: impl Fn(&Json) -> bool) -> Option<Json> {
        let i = self.notes.iter().position(pred)?;
        Some(self.notes.remove(i))
    }
}

/// A blocking client over a byte stream: `writer` goes to the server, a thread reads the
/// server's output. Every wait is bounded; server requests are answered while waiting.
pub struct Client<W: Write> {
    writer: Option<W>,
    rx: Receiver<Result<Json, String>>,
    peer: Peer,
    pub inbox: Inbox,
}

impl<W: Write> Client<W> {
    /// A client writing to `writer` and reading the server's output from `reader` (on a
    /// thread of its own); its first request gets the id `first_id`.
    pub fn new(
        peer: Peer,
        reader: impl Read + Send + 'static,
        writer: W,
        first_id: i64,
    ) -> Client<W> {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(reader);
            loop {
                let msg = match peer {
                    Peer::Lsp => super::read(&mut r),
                    Peer::Mcp => {
                        let mut line = String::new();
                        match r.read_line(&mut line) {
                            Ok(0) | Err(_) => None,
                            Ok(_) => Some(
                                serde_json::from_str::<Json>(&line)
                                    .map_err(|e| format!("stdout line is not JSON ({e}): {line}")),
                            ),
                        }
                    }
                };
                let Some(m) = msg else { return };
                if tx.send(m).is_err() {
                    return;
                }
            }
        });
        Client {
            writer: Some(writer),
            rx,
            peer,
            inbox: Inbox::new(first_id),
        }
    }

    /// Write bytes as they are (for malformed frames).
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<(), String> {
        let w = self.writer.as_mut().ok_or("the client closed its side")?;
        w.write_all(bytes)
            .and_then(|()| w.flush())
            .map_err(|e| format!("the server does not read its input: {e}"))
    }

    /// Send one message, framed for the peer.
    pub fn send(&mut self, msg: &Json) -> Result<(), String> {
        match self.peer {
            Peer::Lsp => self.write_raw(&super::encode_json(msg)),
            Peer::Mcp => self.write_raw(format!("{msg}\n").as_bytes()),
        }
    }

    /// Close the client's side (the server's input ends).
    pub fn close(&mut self) {
        drop(self.writer.take());
    }

    pub fn notify(&mut self, method: &str, params: Json) -> Result<(), String> {
        self.send(&notification(method, params))
    }

    /// Send a request without waiting; its id.
    pub fn send_request(&mut self, method: &str, params: Json) -> Result<i64, String> {
        let (id, msg) = self.inbox.request(method, params);
        self.send(&msg)?;
        Ok(id)
    }

    /// Send a request and wait (within `bound`) for its answer (the whole message).
    pub fn request(&mut self, method: &str, params: Json, bound: Duration) -> Result<Json, String> {
        let id = self.send_request(method, params)?;
        self.answer(&json!(id), bound)
    }

    /// Read one message within `deadline` and file it (answering a server request).
    fn take_one(&mut self, deadline: Instant) -> Result<Json, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        let msg = match self.rx.recv_timeout(left) {
            Ok(Ok(m)) => m,
            Ok(Err(e)) => return Err(format!("the server wrote a malformed message: {e}")),
            Err(RecvTimeoutError::Timeout) => return Err("nothing in time".into()),
            Err(RecvTimeoutError::Disconnected) => {
                return Err("the server closed its output".into())
            }
        };
        if let Some(r) = reply(self.peer, &msg) {
            self.send(&r)?;
        }
        Ok(msg)
    }

    /// The answer with this id (the whole message), within `bound`.
    pub fn answer(&mut self, id: &Json, bound: Duration) -> Result<Json, String> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(m) = self.inbox.answer(id) {
                return Ok(m);
            }
            let m = self
                .take_one(deadline)
                .map_err(|e| format!("no answer to id {id} within {bound:?}: {e}"))?;
            self.inbox.file(m);
        }
    }

    /// The first notification or server request that satisfies `pred` (consumed), looking
    /// at the ones read before first; answers read meanwhile are kept.
    pub fn wait_note(
        &mut self,
        bound: Duration,
        pred: impl Fn(&Json) -> bool,
    ) -> Result<Json, String> {
        let deadline = Instant::now() + bound;
        if let Some(m) = self.inbox.note(&pred) {
            return Ok(m);
        }
        loop {
            let m = self
                .take_one(deadline)
                .map_err(|e| format!("no matching notification within {bound:?}: {e}"))?;
            if m.get("id").is_none() && pred(&m) {
                return Ok(m);
            }
            self.inbox.file(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(msgs: &[Json]) -> std::io::Cursor<Vec<u8>> {
        std::io::Cursor::new(msgs.iter().flat_map(super::super::encode_json).collect())
    }

    #[test]
    fn replies_by_peer() {
        let req = |m: &str| json!({"jsonrpc": "2.0", "id": 7, "method": m});
        let conf = reply(Peer::Lsp, &req("workspace/configuration")).unwrap();
        assert_eq!(conf["result"], json!([]));
        assert_eq!(conf["id"], json!(7));
        let reg = reply(Peer::Lsp, &req("client/registerCapability")).unwrap();
        assert_eq!(reg["result"], Json::Null);
        assert_eq!(
            reply(Peer::Mcp, &req("roots/list")).unwrap()["result"],
            json!({"roots": []})
        );
        assert!(reply(Peer::Mcp, &req("sampling/createMessage")).is_none());
        // Notifications and answers get nothing.
        assert!(reply(Peer::Lsp, &json!({"method": "$/progress"})).is_none());
        assert!(reply(Peer::Lsp, &json!({"id": 7, "result": 1})).is_none());
    }

    #[test]
    fn answers_are_matched_and_server_requests_answered_while_waiting() {
        let note =
            json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"message": "hi"}});
        let server_req =
            json!({"jsonrpc": "2.0", "id": "r1", "method": "window/workDoneProgress/create"});
        let other = json!({"jsonrpc": "2.0", "id": 2, "result": "second"});
        let first = json!({"jsonrpc": "2.0", "id": 1, "result": "first"});
        let input = frames(&[
            note.clone(),
            server_req.clone(),
            other.clone(),
            first.clone(),
        ]);
        let mut c = Client::new(Peer::Lsp, input, Vec::new(), 1);
        let bound = Duration::from_secs(10);
        assert_eq!(c.request("a", json!({}), bound), Ok(first));
        assert_eq!(c.answer(&json!(2), bound), Ok(other));
        assert_eq!(
            c.wait_note(bound, |m| m["method"] == "window/logMessage"),
            Ok(note)
        );
        assert_eq!(c.inbox.notes, vec![server_req]);
        let written = super::super::split(c.writer.as_ref().unwrap()).unwrap();
        assert_eq!(written[0]["method"], "a");
        assert_eq!(written[0]["id"], json!(1));
        assert_eq!(
            written[1],
            json!({"jsonrpc": "2.0", "id": "r1", "result": null})
        );
        // The server's output has ended: a clear error, no hang.
        let e = c.answer(&json!(3), bound).unwrap_err();
        assert!(e.contains("closed its output"), "{e}");
        c.close();
        assert!(c.notify("x", json!({})).is_err());
    }
}
