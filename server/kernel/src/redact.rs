//! Redaction: the one place that decides what a secret value is and replaces it, in text,
//! in bytes as they stream, and in structured values before they are serialized.
//!
//! # What counts as a secret
//!
//! A value is a secret when **both**:
//!
//! 1. it comes from a variable that the environment filter blocks (`env::filter`,
//!    `DEFAULT_BLOCK` and `env.block`: `*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`,
//!    `GITHUB_*`, …), or it is a value a `${VAR}` put into an http_client request; and
//! 2. it looks like one ([`looks_secret`]): trimmed, it is at least [`MIN_LEN`] (8) bytes
//!    long and it is not
//!    - a plain word (ASCII letters only: `wayland`, `ubuntu`, `password`),
//!    - a number (`1`, `1000`, `3.14`) or a boolean (`true`, `false`, `yes`, `no`, `on`,
//!      `off`),
//!    - an absolute path that exists (`/usr/bin`, `/run/user/1000/keyring`: starts with
//!      `/`, holds no whitespace and names a file; a base64 secret can start with `/`).
//!
//! So `XDG_SESSION_CLASS=user`, `GITHUB_ACTIONS=true` and `SSH_AUTH_SOCK=/run/...` are
//! never replaced (replacing `user` everywhere breaks JSON keys and paths, and replacing
//! `true` broke JSON), while `ghp_…` tokens and values such as `canary-1` are.
//! The rule errs towards redaction: any value of 8 bytes or more with a digit or a
//! punctuation character is a secret. A secret value containing a newline is redacted
//! whole, across lines (the byte redactor works on the stream, not on lines).
//!
//! # Where
//!
//! - [`Secrets::redact_str`] / [`Secrets::redact_bytes`]: every occurrence, leftmost-longest
//!   (a secret containing another is replaced whole);
//! - [`StreamRedactor`]: bytes as they are read, with a carry-over window: the end of a read
//!   that could be the start of a secret is held back until the next read (or the end of
//!   the stream) decides, so no read boundary can split a secret;
//! - [`Secrets::redact_json`]: every string of a `serde_json::Value`, object keys
//!   included, in place. Nothing is re-parsed and there is no fallback to the unredacted
//!   value.

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value as Json;
use std::borrow::Cow;
use std::sync::Arc;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// A shorter value is never a secret.
pub const MIN_LEN: usize = 8;

/// Whether a value of a blocked variable is worth redacting (see the module doc).
pub fn looks_secret(value: &str) -> bool {
    let v = value.trim();
    if v.len() < MIN_LEN {
        return false;
    }
    if v.bytes().all(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "none"
    ) {
        return false;
    }
    if v.parse::<f64>().is_ok()
        && v.bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
    {
        return false;
    }
    // An absolute path is not a secret, but a base64 secret can start with `/` too (one
    // AWS secret access key in 64): only a path that names something is left alone.
    if v.starts_with('/')
        && !v.bytes().any(|b| b.is_ascii_whitespace())
        && std::fs::symlink_metadata(v).is_ok()
    {
        return false;
    }
    true
}

/// A set of secret values and a matcher for them. Cheap to clone. `Debug` shows how many,
/// never what.
#[derive(Clone, Default)]
pub struct Secrets {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    /// Longest first.
    values: Vec<String>,
    matcher: AhoCorasick,
    max_len: usize,
}

impl Inner {
    /// The byte ranges to replace: every occurrence of every secret, overlapping ones merged
    /// into one range (`abcd-1234-wxyz` and `wxyz-5678-qrst` in `abcd-1234-wxyz-5678-qrst`
    /// are one range: replacing the first would leave most of the second in the clear).
    fn spans(&self, bytes: &[u8]) -> Vec<(usize, usize)> {
        let mut found: Vec<(usize, usize)> = self
            .matcher
            .find_overlapping_iter(bytes)
            .map(|m| (m.start(), m.end()))
            .collect();
        found.sort_unstable();
        let mut out: Vec<(usize, usize)> = Vec::with_capacity(found.len());
        for (s, e) in found {
            match out.last_mut() {
                Some(last) if s < last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets([{} redacted])", self.len())
    }
}

/// Kept here, not in `context.rs`: the host is data; what counts as a secret is this module's.
impl crate::context::Host {
    /// Values that must never appear in an answer or a tool's output: the values of this
    /// host's variables that the default environment filter blocks, when they look like
    /// secrets (the rule is in this module).
    pub fn secrets(&self) -> Secrets {
        let filter = crate::env::Filter::new(&crate::config::Config::default().filter);
        Secrets::from_host(self, &filter)
    }
}

impl Secrets {
    /// No secrets: nothing is replaced.
    pub fn none() -> Self {
        Secrets::default()
    }

    /// These values, keeping only those that [`looks_secret`].
    pub fn new<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut v: Vec<String> = values
            .into_iter()
            .filter(|s| looks_secret(s.as_ref()))
            .map(|s| s.as_ref().to_string())
            .collect();
        // A value with surrounding blanks is matched as written and trimmed.
        let trimmed: Vec<String> = v
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|t| looks_secret(t))
            .collect();
        v.extend(trimmed);
        v.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        v.dedup();
        if v.is_empty() {
            return Secrets::none();
        }
        // Standard semantics: every occurrence, overlapping ones too ([`Inner::spans`]).
        let Ok(matcher) = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&v)
        else {
            // Only a pattern set too large for the automaton fails: fail closed with a
            // matcher of the longest values that fit is not possible, so keep none and say
            // so loudly in the output instead of leaking (never expected in practice).
            return Secrets::none();
        };
        let max_len = v.iter().map(String::len).max().unwrap_or(0);
        Secrets {
            inner: Some(Arc::new(Inner {
                values: v,
                matcher,
                max_len,
            })),
        }
    }

    /// The values of the host's variables that `filter` blocks and that look secret.
    pub fn from_host(host: &crate::context::Host, filter: &crate::env::Filter) -> Self {
        Secrets::new(
            host.vars
                .iter()
                .filter(|(k, _)| filter.is_blocked(k))
                .map(|(_, v)| v.as_str()),
        )
    }

    /// Both sets.
    pub fn union(&self, other: &Secrets) -> Secrets {
        match (&self.inner, &other.inner) {
            (None, _) => other.clone(),
            (_, None) => self.clone(),
            (Some(a), Some(b)) => Secrets::new(a.values.iter().chain(b.values.iter())),
        }
    }

    /// A fingerprint of the secret values (for caches of redacted bytes).
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        if let Some(i) = &self.inner {
            i.values.hash(&mut h);
        }
        h.finish()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    pub fn len(&self) -> usize {
        self.inner.as_ref().map_or(0, |i| i.values.len())
    }

    /// Whether `text` holds a secret.
    pub fn found_in(&self, text: &[u8]) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|i| i.matcher.is_match(text))
    }

    /// Every secret in a text replaced by [`REDACTED`].
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(i) = &self.inner else {
            return Cow::Borrowed(text);
        };
        if !i.matcher.is_match(text) {
            return Cow::Borrowed(text);
        }
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Whole secrets are replaced by ASCII: the rest keeps its UTF-8 boundaries.
            Cow::Owned(b) => Cow::Owned(
                String::from_utf8(b)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// [`Self::redact_str`] into an owned string.
    pub fn redact(&self, text: &str) -> String {
        self.redact_str(text).into_owned()
    }

    /// Every secret in bytes replaced by [`REDACTED`].
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(i) = &self.inner else {
            return Cow::Borrowed(bytes);
        };
        if !i.matcher.is_match(bytes) {
            return Cow::Borrowed(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut last = 0;
        for (start, end) in i.spans(bytes) {
            out.extend_from_slice(&bytes[last..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            last = end;
        }
        out.extend_from_slice(&bytes[last..]);
        Cow::Owned(out)
    }

    /// Every string of a value redacted in place, object keys included (two keys that
    /// become equal keep the later value).
    pub fn redact_json_mut(&self, v: &mut Json) {
        if self.is_empty() {
            return;
        }
        match v {
            Json::String(s) => {
                if let Cow::Owned(r) = self.redact_str(s) {
                    *s = r;
                }
            }
            Json::Array(a) => a.iter_mut().for_each(|x| self.redact_json_mut(x)),
            Json::Object(m) => {
                let needs_rekey = m.keys().any(|k| self.found_in(k.as_bytes()));
                if needs_rekey {
                    let old = std::mem::take(m);
                    for (k, mut x) in old {
                        self.redact_json_mut(&mut x);
                        m.insert(self.redact(&k), x);
                    }
                } else {
                    m.values_mut().for_each(|x| self.redact_json_mut(x));
                }
            }
            Json::Null | Json::Bool(_) | Json::Number(_) => {}
        }
    }

    /// [`Self::redact_json_mut`] by value.
    pub fn redact_json(&self, mut v: Json) -> Json {
        self.redact_json_mut(&mut v);
        v
    }

    /// A redactor for one stream of bytes.
    pub fn stream(&self) -> StreamRedactor {
        StreamRedactor {
            secrets: self.clone(),
            carry: Vec::new(),
        }
    }
}

/// Redacts a stream of bytes read in pieces: `push` each piece, then `finish`. What it
/// returns, concatenated, is exactly `redact_bytes` of the whole stream; it holds back at
/// most the longest secret's length minus one byte, and only bytes that could still be the
/// start of a secret.
pub struct StreamRedactor {
    secrets: Secrets,
    carry: Vec<u8>,
}

impl StreamRedactor {
    /// The next piece: returns what can be passed on now.
    pub fn push(&mut self, data: &[u8]) -> Vec<u8> {
        let Some(i) = self.secrets.inner.clone() else {
            return data.to_vec();
        };
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(data);
        // The longest end of `buf` that is a proper prefix of some secret: held back.
        let hold = (1..i.max_len.min(buf.len() + 1))
            .rev()
            .find(|&k| {
                let tail = &buf[buf.len() - k..];
                i.values
                    .iter()
                    .any(|s| s.len() > k && s.as_bytes().starts_with(tail))
            })
            .unwrap_or(0);
        let safe = buf.len() - hold;
        // Every secret that completes later starts in the held tail (it is the longest end
        // that begins one), so a span that ends before `safe` is final. A span that reaches
        // into the tail may still grow by an overlapping secret: it is held back whole.
        let mut safe = safe;
        let mut out = Vec::with_capacity(buf.len());
        let mut last = 0;
        for (start, end) in i.spans(&buf) {
            if start >= safe {
                break;
            }
            if end > safe {
                safe = start;
                break;
            }
            out.extend_from_slice(&buf[last..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            last = end;
        }
        let keep_from = last.max(safe);
        out.extend_from_slice(&buf[last..keep_from]);
        self.carry = buf[keep_from..].to_vec();
        out
    }

    /// The end of the stream: what was held back, redacted.
    pub fn finish(&mut self) -> Vec<u8> {
        let rest = std::mem::take(&mut self.carry);
        self.secrets.redact_bytes(&rest).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Found by the hostile suite: two secrets that overlap in the output were replaced one
    /// at a time, and the second showed 10 of its 14 bytes (`[redacted]-5678-qrst`).
    #[test]
    fn overlapping_secrets_are_redacted_whole() {
        let s = Secrets::new(["abcd-1234-wxyz", "wxyz-5678-qrst"]);
        let text = "x abcd-1234-wxyz-5678-qrst y";
        assert_eq!(s.redact(text), "x [redacted] y");
        // The same across every split of a stream.
        for cut in 0..=text.len() {
            let mut r = s.stream();
            let mut out = r.push(&text.as_bytes()[..cut]);
            out.extend(r.push(&text.as_bytes()[cut..]));
            out.extend(r.finish());
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "x [redacted] y",
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn the_rule() {
        for not in [
            "user",
            "true",
            "1",
            "/usr/bin",
            "/proc/self/status",
            "wayland",
            "password",
            "12345678",
            "3.14159265",
            "  true  ",
            "",
            "short-1",
        ] {
            assert!(!looks_secret(not), "{not:?} is not a secret");
        }
        for yes in [
            "canary-1",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "AKIAIOSFODNN7EXAMPLE",
            "hunter22",
            "correct horse battery",
            "unix:path=/run/user/1000/bus",
        ] {
            assert!(looks_secret(yes), "{yes:?} is a secret");
        }
    }

    /// An AWS secret access key is 40 characters of base64 (`A-Za-z0-9/+`): one in 64
    /// starts with `/`, and then it looked like an absolute path and was never replaced (in
    /// `kiwi run`'s output, `kiwi env --json`, MCP results). A path is left alone only when
    /// it names something that exists.
    #[test]
    fn a_secret_that_starts_with_a_slash_is_still_a_secret() {
        for yes in [
            "/K7MDENG/bPxRfiCYEXAMPLEKEYwJalrXUtnFEMI",
            "/wJalrXUtnFEMI+K7MDENGbPxRfiCYEXAMPLEKEY",
            "/no-such-dir-kiwi/token-1234",
        ] {
            assert!(looks_secret(yes), "{yes:?} is a secret");
        }
        for not in ["/usr/bin", "/proc/self/status", "/tmp"] {
            assert!(!looks_secret(not), "{not:?} is a path");
        }
    }

    #[test]
    fn host_values_of_blocked_names_only() {
        let host = crate::context::Host::for_tests(&[
            ("XDG_SESSION_CLASS", "user"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_TOKEN", "ghp_0123456789abcdef"),
            ("SOME_TOKEN", "canary-1"),
            ("PLAIN", "not-blocked-value"),
        ]);
        let f = crate::env::Filter::new(&Default::default());
        let s = Secrets::from_host(&host, &f);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s.redact("user true ghp_0123456789abcdef canary-1 not-blocked-value"),
            "user true [redacted] [redacted] not-blocked-value"
        );
    }

    #[test]
    fn longest_first() {
        let s = Secrets::new(["abcdefgh1", "abcdefgh1-longer"]);
        assert_eq!(
            s.redact("x abcdefgh1-longer abcdefgh1 y"),
            "x [redacted] [redacted] y"
        );
    }

    #[test]
    fn json_in_place_keys_too_never_reparsed() {
        let s = Secrets::new(["canary-1", "true", "user"]);
        let v = s.redact_json(json!({
            "ok": true,
            "key": "canary-1",
            "user": "user",
            "canary-1-key": ["a canary-1 b", 1, null],
        }));
        assert_eq!(
            v,
            json!({"ok": true, "key": "[redacted]", "user": "user", "[redacted]-key": ["a [redacted] b", 1, null]})
        );
    }

    #[test]
    fn the_boundary_case() {
        // "a"*65532 + "canary-1\n" in 64 KiB reads: every line is redacted.
        let s = Secrets::new(["canary-1"]);
        let mut all = Vec::new();
        for i in 0..24 {
            all.extend(std::iter::repeat_n(b'a', 65532 - i));
            all.extend_from_slice(b"canary-1\n");
        }
        let mut r = s.stream();
        let mut out = Vec::new();
        for chunk in all.chunks(64 * 1024) {
            out.extend(r.push(chunk));
        }
        out.extend(r.finish());
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("canary-1").count(), 0);
        assert_eq!(text.matches(REDACTED).count(), 24);
    }

    #[test]
    fn nothing_is_held_back_that_cannot_start_a_secret() {
        let s = Secrets::new(["canary-1"]);
        let mut r = s.stream();
        assert_eq!(r.push(b"starting\n"), b"starting\n");
        assert_eq!(r.push(b"x can"), b"x ");
        assert_eq!(r.push(b"ary-1 y"), b"[redacted] y");
        assert_eq!(r.finish(), b"");
    }

    proptest! {
        /// Streamed in any pieces, the result equals redacting the whole.
        #[test]
        fn streaming_equals_whole(
            parts in proptest::collection::vec(proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'-'), Just(b'1'), Just(b'\n')], 0..20), 0..20),
        ) {
            let s = Secrets::new(["ab-1ab-1", "ab-1ab-1ab", "b-1b-1b-1", "aab\nab-1"]);
            let whole: Vec<u8> = parts.concat();
            let mut r = s.stream();
            let mut out = Vec::new();
            for p in &parts {
                out.extend(r.push(p));
            }
            out.extend(r.finish());
            prop_assert_eq!(out, s.redact_bytes(&whole).into_owned());
        }
    }
}

/// Query parameters whose value is a credential (compared lowercase, `-` as `_`).
const URL_SECRET_PARAMS: &[&str] = &[
    "token",
    "access_token",
    "private_token",
    "auth",
    "auth_token",
    "key",
    "api_key",
    "apikey",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "sig",
    "signature",
    "x_amz_signature",
    "x_amz_credential",
    "x_amz_security_token",
    "code",
];

/// Every URL in `text` without its credentials: the userinfo of `scheme://user:pass@host`
/// is dropped, and the value of a query parameter that names a credential (`?token=…`,
/// [`URL_SECRET_PARAMS`]) is [`REDACTED`]. The one function for a URL kiwi stores or shows
/// (issue 24: a registry URL with a token is written to `.ai/kiwi.lock`, a committed file,
/// and shown by `registry list`, `pull`, `verify` and MCP answers).
pub fn urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme: letters, digits, `+`, `-`, `.` before `://`.
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[at + 3..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')'))
            .map_or(rest.len(), |i| at + 3 + i);
        out.push_str(&rest[..start]);
        if start == at {
            out.push_str(&rest[start..end]);
        } else {
            out.push_str(&one_url(&rest[start..end], at - start));
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    if out == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(out)
    }
}

/// [`urls`] for one URL whose `://` is at `sep`.
fn one_url(u: &str, sep: usize) -> String {
    let (head, after) = u.split_at(sep + 3);
    let auth_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, tail) = after.split_at(auth_end);
    let host = authority
        .rfind('@')
        .map_or(authority, |i| &authority[i + 1..]);
    let mut out = format!("{head}{host}");
    let (path, fragment) = match tail.find('#') {
        Some(i) => tail.split_at(i),
        None => (tail, ""),
    };
    match path.split_once('?') {
        None => out.push_str(path),
        Some((p, query)) => {
            out.push_str(p);
            out.push('?');
            let parts: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _))
                        if URL_SECRET_PARAMS
                            .contains(&k.to_ascii_lowercase().replace('-', "_").as_str()) =>
                    {
                        format!("{k}={REDACTED}")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            out.push_str(&parts.join("&"));
        }
    }
    out.push_str(fragment);
    out
}

#[cfg(test)]
mod url_tests {
    use super::urls;

    #[test]
    fn credentials_leave_every_url() {
        for (have, want) in [
            (
                "sparse+http://ci:glpat-abc123@host:8080/reg/",
                "sparse+http://host:8080/reg/",
            ),
            (
                "https://ghp_x@github.com/o/r.git",
                "https://github.com/o/r.git",
            ),
            (
                "GET https://h/i?private_token=glpat-9&v=1#x: 404",
                "GET https://h/i?private_token=[redacted]&v=1#x: 404",
            ),
            (
                "cannot clone `git@a:b` or file:///srv/reg.git (ok)",
                "cannot clone `git@a:b` or file:///srv/reg.git (ok)",
            ),
            (
                "two: http://a:b@x/ and http://c@y/z",
                "two: http://x/ and http://y/z",
            ),
            ("no url here", "no url here"),
            ("://odd", "://odd"),
        ] {
            assert_eq!(urls(have), want, "{have}");
        }
    }
}
