//! The `ssh` environment (issue 30): a tool runs on a host of the user's configuration
//! (`execution.hosts.NAME`), through the system's OpenSSH client.
//!
//! - **Connection**: one master per host (`ControlMaster=auto`, its socket in a private
//!   runtime folder of kiwi's, `ControlPersist`), strict host-key checking, batch mode, no
//!   agent or X11 forwarding, no forwarding at all; the client gets a minimal environment
//!   (never a tool's variable: nothing for `SendEnv` to send).
//! - **Plan** ([`plan_remote`], at plan time, read-only on the host): the host's home and
//!   PATH (once per connection), then ONE round trip for every probe: the interpreter
//!   candidates of the chain's resolvers (the same registry, looking at the host through
//!   [`crate::env::resolve::View`]) and which of the chain's files the host's cache lacks.
//!   The spec's paths are rewritten: the chain's files to their place in the cache
//!   (`~/.cache/kiwi/trees/TREE/...`, content-addressed), the project to the host's working
//!   directory, the interpreters to what the host resolved.
//! - **Run** ([`Ssh::run`]): the missing files shipped (verified by sha256 on the host), then
//!   the launcher (`ssh_launcher.py`, python3 on the host) reads the command and the
//!   filtered environment from stdin (never a command line), runs the tool in its own
//!   process group under a watchdog: stdin's end (kiwi or its client gone), the connection
//!   gone, a timeout: the group, and anything below the launcher, is killed.

use super::{path_str, BoxFuture, ExecutionEnvironment, Setup};
use crate::config::SshHost;
use crate::env::resolve::{Kind as FsKind, View};
use crate::exec::process::{self, ProcessResult, ProcessSpec};
use crate::exec::{ErrorKind, ExecError, OutputSink, Stream};
use serde_json::{json, Value as Json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

/// The launcher run on the host (`python3 -c LAUNCHER MODE`).
pub const LAUNCHER: &str = include_str!("ssh_launcher.py");
/// The line the launcher ends stderr with: the tool's status.
const STATUS: &[u8] = b"\x01kiwi-status ";
/// How long the master persists after the last run.
pub const CONTROL_PERSIST: &str = "600";
/// How long a plan's answers about the host (home, PATH) are reused.
const FACTS_TTL: Duration = Duration::from_secs(300);
/// The chain's files and the tool's folder: what is shipped at most.
const MAX_FILE: u64 = 4 << 20;
const MAX_SIBLINGS: usize = 64;

/// A host of the user's configuration, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub name: String,
    pub host: SshHost,
}

/// What the plan decided for the host: the files, what the host lacks, the trails.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RemotePlan {
    pub host: String,
    pub destination: String,
    pub home: String,
    pub workdir: String,
    /// The working directory is made (in the cache) when there is none configured.
    pub make_workdir: bool,
    /// The tree in the cache that holds the chain's files.
    pub tree: String,
    /// Local path -> (sha256, mode), for every file shipped.
    pub files: BTreeMap<PathBuf, (String, u32)>,
    /// The digests the host's cache lacks (shipped at run time).
    pub missing: Vec<String>,
    /// The interpreters as the host resolved them.
    pub resolutions: Vec<crate::env::Resolution>,
    /// The probe round trips made (1, unless a version file named a version).
    pub round_trips: usize,
}

impl RemotePlan {
    /// Lines for a plan's reader.
    pub fn describe(&self) -> Vec<String> {
        let mut out = vec![
            format!("host `{}` ({}), home {}", self.host, self.destination, self.home),
            format!(
                "working directory {}{}",
                self.workdir,
                if self.make_workdir {
                    " (none configured: a folder in the cache)"
                } else {
                    ""
                }
            ),
            format!(
                "files: {} shipped content-addressed to {}/.cache/kiwi/trees/{}, {} missing on the host",
                self.files.len(),
                self.home,
                &self.tree[..12.min(self.tree.len())],
                self.missing.len()
            ),
        ];
        for r in &self.resolutions {
            out.push(format!(
                "on the host: {}",
                r.explain().replace('\n', "\n  ")
            ));
        }
        out
    }
}

// ---------------------------------------------------------------------------------------
// The client

fn err(kind: ErrorKind, m: impl Into<String>) -> ExecError {
    ExecError::new(kind, m.into())
}

/// kiwi's private runtime folder for the control sockets (0700, ours, or refused).
pub fn control_dir(host_env: &BTreeMap<String, String>) -> Result<PathBuf, ExecError> {
    let uid = unsafe { libc::geteuid() };
    let base = match host_env
        .get("XDG_RUNTIME_DIR")
        .filter(|d| d.starts_with('/'))
    {
        Some(d) => PathBuf::from(d).join("kiwi"),
        None => PathBuf::from(format!("/tmp/kiwi-{uid}")),
    };
    let dir = base.join("ssh");
    for d in [&base, &dir] {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        let _ = std::fs::DirBuilder::new().mode(0o700).create(d);
        let m = std::fs::symlink_metadata(d).map_err(|e| {
            err(
                ErrorKind::Unavailable,
                format!("cannot make kiwi's runtime folder {}: {e}", d.display()),
            )
        })?;
        if !m.is_dir() || m.uid() != uid || m.permissions().mode() & 0o077 != 0 {
            return Err(err(
                ErrorKind::Unavailable,
                format!(
                    "{} is not a private folder of yours (0700): kiwi keeps its ssh control sockets there and refuses to use it",
                    d.display()
                ),
            ));
        }
    }
    Ok(dir)
}

/// The ssh client.
pub fn ssh_program(host_env: &BTreeMap<String, String>) -> Result<PathBuf, ExecError> {
    let path = host_env
        .get("PATH")
        .cloned()
        .unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("ssh"))
        .find(|p| crate::env::is_executable(p))
        .ok_or_else(|| {
            err(
                ErrorKind::Unavailable,
                "the OpenSSH client (`ssh`) is not on PATH: install openssh-client",
            )
        })
}

/// The options of every ssh call kiwi makes (command-line options win over any config file).
pub fn ssh_options(target: &SshTarget, control: &Path) -> Vec<String> {
    let mut a = Vec::new();
    if let Some(f) = &target.host.ssh_config {
        a.extend(["-F".to_string(), path_str(f)]);
    }
    for o in [
        "ControlMaster=auto".to_string(),
        format!("ControlPath={}/%C", control.display()),
        format!("ControlPersist={CONTROL_PERSIST}"),
        "StrictHostKeyChecking=yes".into(),
        "BatchMode=yes".into(),
        "ForwardAgent=no".into(),
        "ForwardX11=no".into(),
        "ClearAllForwardings=yes".into(),
        "PermitLocalCommand=no".into(),
        "ConnectTimeout=15".into(),
        "ServerAliveInterval=15".into(),
        "ServerAliveCountMax=3".into(),
        "LogLevel=ERROR".into(),
    ] {
        a.extend(["-o".to_string(), o]);
    }
    a.push("-T".into());
    a
}

/// The client's environment: what ssh needs to find its files and an agent; never a tool's.
pub fn client_env(host_env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SSH_AUTH_SOCK",
        "XDG_RUNTIME_DIR",
    ]
    .iter()
    .filter_map(|k| host_env.get(*k).map(|v| (k.to_string(), v.clone())))
    .collect()
}

/// The remote command: the launcher in a mode (all input on stdin).
pub fn remote_command(mode: &str) -> String {
    format!("exec python3 -c {} {mode}", sh_quote(LAUNCHER))
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// ssh's error, in a sentence that says what to do.
pub fn explain_failure(target: &SshTarget, stderr: &str) -> String {
    refusal(target, stderr).unwrap_or_else(|| {
        format!(
            "cannot reach the host `{}` ({}) over ssh: {}; nothing was run",
            target.name,
            target.host.ssh,
            last_line(stderr).unwrap_or("ssh failed")
        )
    })
}

fn last_line(stderr: &str) -> Option<&str> {
    stderr.lines().map(str::trim).rfind(|l| !l.is_empty())
}

/// The host refused kiwi (its key, the login), in a sentence that says what to do.
fn refusal(target: &SshTarget, stderr: &str) -> Option<String> {
    let dest = &target.host.ssh;
    let name = &target.name;
    let last = last_line(stderr).unwrap_or("ssh failed");
    if stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
        || stderr.contains("HOST KEY HAS CHANGED")
    {
        Some(format!(
            "the host key of `{dest}` (host `{name}`) has CHANGED since it was recorded in known_hosts: kiwi refuses to connect (it could be an attack). If the host was reinstalled, check its new fingerprint out of band, then `ssh-keygen -R {dest}` and add the new key; nothing was run"
        ))
    } else if stderr.contains("Host key verification failed")
        || stderr.contains("No ED25519 host key is known")
        || stderr.contains("host key is known")
    {
        let (h, p) = split_port(dest);
        Some(format!(
            "the host key of `{dest}` (host `{name}`) is not known: kiwi checks host keys strictly. Check the fingerprint, then add it: `ssh-keyscan -H {p}{h} >> ~/.ssh/known_hosts` (or connect once with `ssh {dest}`); nothing was run"
        ))
    } else if stderr.contains("Permission denied") {
        Some(format!(
            "ssh to `{dest}` (host `{name}`) was refused: {last} (kiwi runs ssh in batch mode: a key, an agent or a certificate must log in without a prompt); nothing was run"
        ))
    } else {
        None
    }
}

/// ssh's end in the middle of a run (the connection was up a moment before: the master was
/// checked and the files shipped): a refusal said as such, else the connection lost. The
/// launcher on the host ends the run's processes when its connection goes.
pub fn explain_lost(target: &SshTarget, stderr: &str) -> String {
    if let Some(refused) = refusal(target, stderr) {
        return refused;
    }
    let last = last_line(stderr)
        .map(|l| format!(" ({l})"))
        .unwrap_or_default();
    format!(
        "the connection to the host `{}` ({}) was lost during the run{last}: the output streamed until then is all that came back, and kiwi's launcher there ends the run's processes when its connection goes",
        target.name, target.host.ssh
    )
}

fn split_port(dest: &str) -> (String, String) {
    let host = dest.rsplit('@').next().unwrap_or(dest).to_string();
    (host, String::new())
}

fn run_blocking(
    program: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    input: &[u8],
    timeout: Duration,
) -> Result<(i32, Vec<u8>, String), ExecError> {
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(ErrorKind::Spawn, format!("cannot start ssh: {e}")))?;
    let mut stdin = child.stdin.take();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        if let Some(w) = stdin.as_mut() {
            let _ = w.write_all(&input);
        }
        drop(stdin);
    });
    let mut so = child.stdout.take();
    let mut se = child.stderr.take();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(s) = so.as_mut() {
            let _ = s.take(256 << 20).read_to_end(&mut v);
        }
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(s) = se.as_mut() {
            let _ = s.take(1 << 20).read_to_end(&mut v);
        }
        v
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(err(
                    ErrorKind::Timeout,
                    format!("ssh did not answer in {}s", timeout.as_secs()),
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(err(ErrorKind::Spawn, format!("waiting for ssh: {e}"))),
        }
    };
    let _ = feeder.join();
    let out = out_t.join().unwrap_or_default();
    let errb = err_t.join().unwrap_or_default();
    Ok((
        status.code().unwrap_or(255),
        out,
        String::from_utf8_lossy(&errb).into_owned(),
    ))
}

/// A connection to a host: the client, its options and environment.
pub struct Conn {
    pub target: SshTarget,
    pub program: PathBuf,
    pub options: Vec<String>,
    pub env: BTreeMap<String, String>,
    control: PathBuf,
}

impl Conn {
    pub fn new(target: &SshTarget, host_env: &BTreeMap<String, String>) -> Result<Conn, ExecError> {
        let control = control_dir(host_env)?;
        Ok(Conn {
            target: target.clone(),
            program: ssh_program(host_env)?,
            options: ssh_options(target, &control),
            env: client_env(host_env),
            control,
        })
    }

    /// The arguments of an ssh call that runs `remote` on the host.
    pub fn args(&self, remote: &str) -> Vec<String> {
        let mut a = self.options.clone();
        a.extend([
            "--".to_string(),
            self.target.host.ssh.clone(),
            remote.to_string(),
        ]);
        a
    }

    /// The master connection, started when there is none (outside any run's process tree,
    /// so that it outlives the run and serves the next).
    pub fn ensure_master(&self) -> Result<(), ExecError> {
        let mut check = self.options.clone();
        check.extend([
            "-O".into(),
            "check".into(),
            "--".into(),
            self.target.host.ssh.clone(),
        ]);
        if let Ok((0, _, _)) = run_blocking(
            &self.program,
            &check,
            &self.env,
            b"",
            Duration::from_secs(10),
        ) {
            return Ok(());
        }
        // `-f`: ssh forks once logged in; its stderr goes to a file (the forked master keeps
        // what it inherited open, a pipe would never end).
        let log = self
            .control
            .join(format!("master-{}.log", std::process::id()));
        let file = std::fs::File::create(&log).map_err(|e| {
            err(
                ErrorKind::Io,
                format!("cannot write {}: {e}", log.display()),
            )
        })?;
        let mut a: Vec<String> = self
            .options
            .iter()
            .map(|o| {
                if o == "ControlMaster=auto" {
                    "ControlMaster=yes".to_string()
                } else {
                    o.clone()
                }
            })
            .collect();
        a.extend([
            "-o".into(),
            "ControlMaster=yes".into(),
            "-N".into(),
            "-f".into(),
            "--".into(),
            self.target.host.ssh.clone(),
        ]);
        let status = Command::new(&self.program)
            .args(&a)
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(file))
            .status()
            .map_err(|e| err(ErrorKind::Spawn, format!("cannot start ssh: {e}")))?;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        if status.success() {
            Ok(())
        } else {
            Err(err(
                ErrorKind::Unavailable,
                explain_failure(&self.target, &text),
            ))
        }
    }

    /// One call of the launcher; its stdout.
    pub fn call(&self, mode: &str, input: &[u8]) -> Result<Vec<u8>, ExecError> {
        let (code, out, stderr) = run_blocking(
            &self.program,
            &self.args(&remote_command(mode)),
            &self.env,
            input,
            Duration::from_secs(120),
        )?;
        if code == 0 {
            return Ok(out);
        }
        if code == 255 {
            return Err(err(
                ErrorKind::Unavailable,
                explain_failure(&self.target, &stderr),
            ));
        }
        if stderr.contains("python3") && (code == 127 || stderr.contains("not found")) {
            return Err(err(
                ErrorKind::Unavailable,
                format!(
                    "the host `{}` has no python3 on its PATH: kiwi's launcher needs it; nothing was run",
                    self.target.name
                ),
            ));
        }
        Err(err(
            ErrorKind::Unavailable,
            format!(
                "kiwi's launcher on the host `{}` failed ({mode}): {}",
                self.target.name,
                stderr.lines().last().unwrap_or("no message")
            ),
        ))
    }

    fn call_json(&self, mode: &str, input: &Json) -> Result<Json, ExecError> {
        let out = self.call(mode, input.to_string().as_bytes())?;
        serde_json::from_slice(&out).map_err(|e| {
            err(
                ErrorKind::Unavailable,
                format!(
                    "kiwi's launcher on `{}` answered nonsense ({mode}): {e}",
                    self.target.name
                ),
            )
        })
    }

    /// The host's home and PATH (asked once per connection, kept beside the socket).
    pub fn facts(&self) -> Result<(String, String), ExecError> {
        let key = hex(&Sha256::digest(format!(
            "{}\0{:?}",
            self.target.host.ssh, self.target.host.ssh_config
        )))[..16]
            .to_string();
        let file = self.control.join(format!("facts-{key}.json"));
        let fresh = std::fs::metadata(&file)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age < FACTS_TTL);
        let read = |j: &Json| {
            Some((
                j.get("home")?.as_str()?.to_string(),
                j.get("path")?.as_str()?.to_string(),
            ))
        };
        if fresh {
            if let Some(f) = std::fs::read(&file)
                .ok()
                .and_then(|b| serde_json::from_slice::<Json>(&b).ok())
                .as_ref()
                .and_then(read)
            {
                return Ok(f);
            }
        }
        let j = self.call_json("hello", &json!({}))?;
        let f = read(&j).ok_or_else(|| {
            err(
                ErrorKind::Unavailable,
                "kiwi's launcher gave no home directory",
            )
        })?;
        if !f.0.starts_with('/') {
            return Err(err(
                ErrorKind::Unavailable,
                "the host's home directory is not an absolute path",
            ));
        }
        let _ = std::fs::write(&file, j.to_string());
        Ok(f)
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// ---------------------------------------------------------------------------------------
// The host's file system, for the resolver

#[derive(Default)]
struct Recorder {
    paths: Mutex<BTreeSet<String>>,
    dirs: Mutex<BTreeSet<String>>,
    texts: Mutex<BTreeSet<String>>,
    /// What one probe answered.
    kinds: BTreeMap<String, Option<FsKind>>,
    listed: BTreeMap<String, Option<Vec<String>>>,
    read: BTreeMap<String, Option<String>>,
}

impl Recorder {
    fn asked(&self) -> bool {
        let p = self.paths.lock().unwrap_or_else(|p| p.into_inner());
        let d = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        let t = self.texts.lock().unwrap_or_else(|p| p.into_inner());
        p.iter().any(|x| !self.kinds.contains_key(x))
            || d.iter().any(|x| !self.listed.contains_key(x))
            || t.iter().any(|x| !self.read.contains_key(x))
    }
}

impl View for Recorder {
    fn kind(&self, path: &Path) -> Option<FsKind> {
        let p = path_str(path);
        match self.kinds.get(&p) {
            Some(k) => *k,
            None => {
                self.paths
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(p);
                None
            }
        }
    }
    fn read_dir(&self, path: &Path) -> Option<Vec<String>> {
        let p = path_str(path);
        match self.listed.get(&p) {
            Some(k) => k.clone(),
            None => {
                self.dirs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(p);
                None
            }
        }
    }
    fn read_text(&self, path: &Path) -> Option<String> {
        let p = path_str(path);
        match self.read.get(&p) {
            Some(k) => k.clone(),
            None => {
                self.texts
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(p);
                None
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Planning a run on the host

/// The files shipped: every link's file, and the regular files beside the tool.
fn chain_files(chain: &crate::chain::Chain) -> Result<BTreeMap<PathBuf, (String, u32)>, ExecError> {
    let mut paths = BTreeSet::new();
    for (i, l) in chain.links.iter().enumerate() {
        if l.is_builtin() || !l.path.is_file() {
            continue;
        }
        paths.insert(l.path.clone());
        if i == 0 {
            if let Some(dir) = l.path.parent() {
                let mut n = 0;
                for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                    let p = e.path();
                    let hidden = e.file_name().to_string_lossy().starts_with('.');
                    if !hidden
                        && e.file_type().is_ok_and(|t| t.is_file())
                        && e.metadata().is_ok_and(|m| m.len() <= MAX_FILE)
                        && n < MAX_SIBLINGS
                    {
                        paths.insert(p);
                        n += 1;
                    }
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for p in paths {
        let bytes = crate::ids::read_regular(&p)
            .map_err(|e| err(ErrorKind::Io, format!("cannot read {}: {e}", p.display())))?;
        if bytes.len() as u64 > MAX_FILE {
            return Err(err(
                ErrorKind::Io,
                format!(
                    "{} is larger than 4 MiB: kiwi does not ship it to a host",
                    p.display()
                ),
            ));
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p)
            .map(|m| m.permissions().mode())
            .unwrap_or(0o644);
        out.insert(p, (hex(&Sha256::digest(&bytes)), mode & 0o777));
    }
    Ok(out)
}

/// The tree's name: the digest of its manifest.
fn tree_name(files: &BTreeMap<PathBuf, (String, u32)>) -> String {
    let mut h = Sha256::new();
    for (p, (d, m)) in files {
        h.update(path_str(p).as_bytes());
        h.update([0]);
        h.update(d.as_bytes());
        h.update(format!(" {}\n", m & 0o111 != 0).as_bytes());
    }
    hex(&h.finalize())
}

/// Local prefixes to host prefixes, longest first.
struct Rewrite {
    exact: BTreeMap<String, String>,
    prefixes: Vec<(String, String)>,
}

impl Rewrite {
    fn path(&self, s: &str) -> String {
        if let Some(r) = self.exact.get(s) {
            return r.clone();
        }
        for (from, to) in &self.prefixes {
            if s == from {
                return to.clone();
            }
            if let Some(rest) = s.strip_prefix(from.as_str()) {
                if rest.starts_with('/') {
                    return format!("{to}{rest}");
                }
            }
        }
        s.to_string()
    }
    /// A value: a path, or a `:`-separated list of them.
    fn value(&self, s: &str) -> String {
        if !s.contains('/') {
            return s.to_string();
        }
        if let Some(r) = self.exact.get(s) {
            return r.clone();
        }
        s.split(':')
            .map(|p| self.path(p))
            .collect::<Vec<_>>()
            .join(":")
    }
}

fn expand_home(p: &str, home: &str) -> String {
    match p.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{home}{rest}"),
        _ => p.to_string(),
    }
}

/// Plan the run of `spec` on the host: read-only on the host (one round trip of probes, and
/// the host's home and PATH once per connection); rewrites `spec` to the host's paths.
pub fn plan_remote(
    ws: &crate::workspace::Workspace,
    chain: &crate::chain::Chain,
    spec: &mut ProcessSpec,
    target: &SshTarget,
) -> Result<(RemotePlan, impl Fn(&str) -> String), ExecError> {
    let conn = Conn::new(target, &ws.host.vars)?;
    conn.ensure_master()?;
    let (home, path) = conn.facts()?;
    let files = chain_files(chain)?;
    let tree = tree_name(&files);
    let tree_root = format!("{home}/.cache/kiwi/trees/{tree}");
    let (workdir, make_workdir) = match &target.host.workdir {
        Some(w) => (expand_home(w, &home), false),
        None => {
            let key = ws
                .project
                .as_deref()
                .map(|p| hex(&Sha256::digest(path_str(p).as_bytes()))[..16].to_string())
                .unwrap_or_else(|| "none".into());
            (format!("{home}/.cache/kiwi/work/{key}"), true)
        }
    };

    // The chain's interpreters, resolved on the host: the same builder and registry, with
    // the host's home, PATH and working directory, looking at the host's files.
    let links: Vec<crate::env::LinkEnv> = chain
        .links
        .iter()
        .rev()
        // A ryeos link's folder is a path of this machine, not of the host: left unset, so
        // `${runtime_dir}` is refused as unset rather than naming a folder the host lacks.
        .map(|l| crate::env::LinkEnv {
            ryeos_dir: None,
            ..crate::check::link_env(l)
        })
        .collect();
    let mut host_vars = ws.host.vars.clone();
    host_vars.insert("HOME".into(), home.clone());
    host_vars.insert("PATH".into(), path.clone());
    let remote_home = PathBuf::from(&home);
    let remote_project = PathBuf::from(&workdir);
    let remote_user = remote_home.join(".ai");
    let digests: Vec<String> = files
        .values()
        .map(|(d, _)| d.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut rec = Recorder::default();
    let mut missing = Vec::new();
    let mut built;
    let mut round_trips = 0;
    loop {
        let view = std::rc::Rc::new(rec);
        built = crate::env::resolve::with_view(view.clone(), || {
            crate::env::build::build(
                &host_vars,
                Some(&remote_home),
                Some(&remote_project),
                &remote_user,
                &ws.config.filter,
                &links,
            )
        });
        rec = std::rc::Rc::try_unwrap(view).unwrap_or_default();
        if (!rec.asked() && round_trips > 0) || round_trips >= 3 {
            break;
        }
        let ask = |s: &Mutex<BTreeSet<String>>| {
            s.lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned()
                .collect::<Vec<_>>()
        };
        let req = json!({
            "paths": ask(&rec.paths),
            "dirs": ask(&rec.dirs),
            "texts": ask(&rec.texts),
            "blobs": if round_trips == 0 { digests.clone() } else { Vec::new() },
        });
        let ans = conn.call_json("probe", &req)?;
        round_trips += 1;
        if let Some(m) = ans.get("kinds").and_then(Json::as_object) {
            for (k, v) in m {
                let kind = match v.as_str() {
                    Some("dir") => Some(FsKind::Dir),
                    Some("exec") => Some(FsKind::File(true)),
                    Some("file") => Some(FsKind::File(false)),
                    Some(_) => Some(FsKind::Other),
                    None => None,
                };
                rec.kinds.insert(k.clone(), kind);
            }
        }
        if let Some(m) = ans.get("dirs").and_then(Json::as_object) {
            for (k, v) in m {
                let names = v.as_array().map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                });
                rec.listed.insert(k.clone(), names);
            }
        }
        if let Some(m) = ans.get("texts").and_then(Json::as_object) {
            for (k, v) in m {
                rec.read.insert(k.clone(), v.as_str().map(str::to_string));
            }
        }
        if round_trips == 1 {
            missing = ans
                .get("missing")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
        }
    }

    // What the local plan resolved, and what the host did.
    let local = crate::check::build_env(ws, &chain.links);
    let mut exact = BTreeMap::new();
    for (_, r) in &local.resolutions {
        let remote = built
            .resolutions
            .iter()
            .find(|(_, x)| x.var == r.var)
            .map(|(_, x)| x);
        match (&r.value, remote.and_then(|x| x.value.as_ref())) {
            (Some(l), Some(h)) => {
                exact.insert(l.clone(), h.clone());
            }
            (Some(_), None) => {
                let trail = remote.map(|x| x.explain()).unwrap_or_default();
                return Err(err(
                    ErrorKind::Interpreter,
                    format!(
                        "`{}` cannot be resolved on the host `{}`: {trail}; nothing was run",
                        r.var, target.name
                    ),
                ));
            }
            _ => {}
        }
    }
    let mut prefixes: Vec<(String, String)> = files
        .keys()
        .filter_map(|p| p.parent())
        .map(|d| (path_str(d), format!("{tree_root}{}", path_str(d))))
        .collect();
    if let Some(p) = &ws.project {
        prefixes.push((path_str(p), workdir.clone()));
    }
    prefixes.sort_by_key(|(f, _)| std::cmp::Reverse(f.len()));
    prefixes.dedup();
    for p in files.keys() {
        exact.insert(path_str(p), format!("{tree_root}{}", path_str(p)));
    }
    let rw = Rewrite { exact, prefixes };

    spec.program = rw.path(&spec.program);
    spec.args = spec.args.iter().map(|a| rw.path(a)).collect();
    let cwd = rw.path(&path_str(&spec.cwd));
    let cwd = if cwd.starts_with(&workdir) || cwd.starts_with(&tree_root) {
        cwd
    } else {
        workdir.clone()
    };
    spec.cwd = PathBuf::from(&cwd);
    for (k, v) in spec.env.iter_mut() {
        *v = match k.as_str() {
            "HOME" => home.clone(),
            "PATH" => path.clone(),
            "PWD" => cwd.clone(),
            _ => rw.value(v),
        };
    }
    let plan = RemotePlan {
        host: target.name.clone(),
        destination: target.host.ssh.clone(),
        home,
        workdir,
        make_workdir,
        tree,
        files,
        missing,
        resolutions: built.resolutions.into_iter().map(|(_, r)| r).collect(),
        round_trips,
    };
    Ok((plan, move |s: &str| rw.value(s)))
}

// ---------------------------------------------------------------------------------------
// The environment

/// A run on an SSH host.
pub struct Ssh {
    target: SshTarget,
    setup: Setup,
}

impl Ssh {
    pub fn new(setup: &Setup) -> Result<Self, ExecError> {
        let target = setup.ssh.clone().ok_or_else(|| {
            err(
                ErrorKind::Config,
                "no ssh host: use `--env ssh:NAME` with a host of execution.hosts",
            )
        })?;
        ssh_program(&setup.host)?;
        Ok(Ssh {
            target,
            setup: setup.clone(),
        })
    }

    fn remote(&self) -> Result<&RemotePlan, ExecError> {
        self.setup.ssh_plan.as_deref().ok_or_else(|| {
            err(ErrorKind::Config, "the run on an ssh host was not planned for it (kiwi's plan rewrites its paths first)")
        })
    }

    /// Ship what the host lacks (each file read again, and refused if it changed since the
    /// plan); verified by sha256 on the host.
    fn ship(&self, conn: &Conn, plan: &RemotePlan) -> Result<(), ExecError> {
        if plan.missing.is_empty() {
            return Ok(());
        }
        let mut header = Vec::new();
        let mut body = Vec::new();
        let mut sent = BTreeSet::new();
        for (p, (d, _)) in &plan.files {
            if !plan.missing.contains(d) || !sent.insert(d.clone()) {
                continue;
            }
            let bytes = crate::ids::read_regular(p)
                .map_err(|e| err(ErrorKind::Io, format!("cannot read {}: {e}", p.display())))?;
            if hex(&Sha256::digest(&bytes)) != *d {
                return Err(err(
                    ErrorKind::Io,
                    format!(
                        "{} changed since the run was planned; nothing was run",
                        p.display()
                    ),
                ));
            }
            header.push(json!([d, bytes.len()]));
            body.extend_from_slice(&bytes);
        }
        let mut input = serde_json::to_vec(&header).unwrap_or_default();
        input.push(b'\n');
        input.extend_from_slice(&body);
        conn.call("ship", &input).map(|_| ())
    }

    /// The header the launcher reads on stdin: the command, the environment, the tree.
    fn header(&self, spec: &ProcessSpec, plan: &RemotePlan) -> String {
        let mut argv = vec![spec.program.clone()];
        argv.extend(spec.args.iter().cloned());
        let files: serde_json::Map<String, Json> = plan
            .files
            .iter()
            .map(|(p, (d, m))| {
                (
                    path_str(p).trim_start_matches('/').to_string(),
                    json!([d, m]),
                )
            })
            .collect();
        let mut h = json!({
            "argv": argv,
            "env": spec.env,
            "cwd": path_str(&spec.cwd),
            "mkcwd": plan.make_workdir,
            "timeout": spec.timeout.as_secs_f64(),
            "stdin": spec.stdin,
            "tree": plan.tree,
            "files": files,
        })
        .to_string();
        h.push('\n');
        h
    }
}

/// Passes the output on, keeping the launcher's status line for itself.
struct StatusSink<'a> {
    inner: &'a dyn OutputSink,
    status: Mutex<Option<Vec<u8>>>,
}

impl OutputSink for StatusSink<'_> {
    fn output(&self, stream: Stream, bytes: &[u8], newline: bool) {
        if stream == Stream::Stderr {
            if let Some(i) = find(bytes, STATUS) {
                if i > 0 {
                    self.inner.output(stream, &bytes[..i], false);
                }
                *self.status.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(bytes[i + STATUS.len()..].to_vec());
                return;
            }
        }
        self.inner.output(stream, bytes, newline)
    }
    fn flush(&self) {
        self.inner.flush()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl ExecutionEnvironment for Ssh {
    fn name(&self) -> &'static str {
        "ssh"
    }
    fn describe(&self) -> String {
        format!(
            "the ssh host `{}` ({})",
            self.target.name, self.target.host.ssh
        )
    }
    fn run<'a>(
        &'a self,
        spec: &'a ProcessSpec,
        sink: &'a dyn OutputSink,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ProcessResult, ExecError>> {
        Box::pin(async move {
            let plan = Arc::new(self.remote()?.clone());
            let conn = Arc::new(Conn::new(&self.target, &self.setup.host)?);
            {
                let (conn, plan) = (conn.clone(), plan.clone());
                let ship_plan = plan.clone();
                let target = self.target.clone();
                let setup = self.setup.clone();
                tokio::task::spawn_blocking(move || {
                    conn.ensure_master()?;
                    Ssh { target, setup }.ship(&conn, &ship_plan)
                })
                .await
                .map_err(|e| err(ErrorKind::Spawn, format!("shipping the files: {e}")))??;
                let _ = plan;
            }
            let mut ssh = ProcessSpec::new(path_str(&conn.program), "/");
            ssh.args = conn.args(&remote_command("run"));
            ssh.env = conn.env.clone();
            ssh.stdin = Some(self.header(spec, &plan));
            ssh.hold_stdin = true;
            // The launcher keeps the tool's own timeout; this one is for the connection.
            ssh.timeout = spec.timeout + Duration::from_secs(10);
            ssh.max_output_bytes = spec.max_output_bytes;
            ssh.secrets = spec.secrets.clone();
            let filter = StatusSink {
                inner: sink,
                status: Mutex::new(None),
            };
            let mut r = process::run(&ssh, &filter, cancel).await?;
            let status = filter
                .status
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(i) = r.stderr.find("\u{1}kiwi-status ") {
                let removed = r.stderr.len() - i;
                r.stderr.truncate(i);
                r.stderr_bytes = r.stderr_bytes.saturating_sub(removed as u64);
            }
            let status: Option<Json> = status.and_then(|s| serde_json::from_slice(&s).ok());
            match status {
                Some(s) => {
                    if let Some(e) = s.get("spawn_error").and_then(Json::as_str) {
                        return Err(err(
                            ErrorKind::Spawn,
                            format!("on the host `{}`: {e}", self.target.name),
                        ));
                    }
                    r.exit_code = s.get("code").and_then(Json::as_i64).map(|c| c as i32);
                    r.signal = s.get("signal").and_then(Json::as_i64).map(|c| c as i32);
                    if s.get("timed_out").and_then(Json::as_bool) == Some(true) {
                        r.timed_out = true;
                    }
                    if let Some(pid) = s.get("pid").and_then(Json::as_u64) {
                        r.pid = pid as u32;
                    }
                }
                None if r.cancelled || r.timed_out => {}
                None => {
                    let why = if r.exit_code == Some(255) {
                        explain_lost(&self.target, &r.stderr)
                    } else {
                        format!(
                            "the run on the host `{}` did not complete: {}",
                            self.target.name,
                            r.stderr
                                .lines()
                                .rfind(|l| !l.trim().is_empty())
                                .unwrap_or("the connection ended")
                        )
                    };
                    return Err(err(ErrorKind::Unavailable, why));
                }
            }
            Ok(r)
        })
    }
}

// ---------------------------------------------------------------------------------------
// Kubernetes, on paper (docs/src/guide/remote.md): the manifests a run would apply.

/// Where the chain's files are mounted in the pod (read-only, from the ConfigMap), and the
/// working directory (an `emptyDir`).
pub const K8S_TREE: &str = "/kiwi/tree";
pub const K8S_WORK: &str = "/kiwi/work";
/// Variables of a local run that belong to the image in a pod, not to the Secret.
const K8S_IMAGE_OWNS: &[&str] = &["PATH", "HOME", "PWD", "SHELL"];

/// The manifests a run of `spec` (planned for the local machine) in the context `context`
/// would apply, in the order they would be applied: the Secret (the environment; its values
/// never in the Job), the ConfigMap (the chain's files, content-addressed), the Job (cancel by
/// delete, a TTL). The command is rewritten to the pod's paths: each shipped file to its place
/// below [`K8S_TREE`], the working directory (and what lies below it) to [`K8S_WORK`], and an
/// interpreter that is not a shipped file to its file name, looked up on the image's PATH (the
/// image cannot be probed without a cluster).
pub fn kubernetes_manifests(
    context: &str,
    tool: &str,
    image: &str,
    spec: &ProcessSpec,
    chain: &crate::chain::Chain,
    redact: bool,
) -> Result<Vec<Json>, ExecError> {
    let files = chain_files(chain)?;
    let tree = tree_name(&files);
    let digest = hex(&Sha256::digest(
        format!("{tool}\0{tree}\0{}", spec.args.join("\0")).as_bytes(),
    ));
    let slug = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_matches('-')
        .chars()
        .take(40)
        .collect::<String>();
    let name = format!("kiwi-{slug}-{}", &digest[..8]);
    let files_name = format!("kiwi-{slug}-{}-files", &tree[..12]);
    // The variables that name this machine's places (its PATH, home, working directory and
    // shell) stay out: through `envFrom` they would replace the image's own, and the
    // interpreter is looked up on the image's PATH.
    let data: serde_json::Map<String, Json> = spec
        .env
        .iter()
        .filter(|(k, _)| !K8S_IMAGE_OWNS.contains(&k.as_str()))
        .map(|(k, v)| {
            (
                k.clone(),
                json!(if redact {
                    "<redacted>".to_string()
                } else {
                    v.clone()
                }),
            )
        })
        .collect();
    let labels = json!({"app.kubernetes.io/managed-by": "kiwi", "kiwi.run/tool": name.clone()});
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": format!("{name}-env"), "labels": labels.clone(),
                     "annotations": {"kiwi.run/context": context}},
        "type": "Opaque",
        "stringData": data,
    });
    // The ConfigMap: one key per content (its sha256), text as `data`, the rest as
    // `binaryData`; the volume's `items` place each key at its path below the tree.
    let mut text = serde_json::Map::new();
    let mut binary = serde_json::Map::new();
    let mut items = Vec::new();
    let mut rw = Rewrite {
        exact: BTreeMap::new(),
        prefixes: Vec::new(),
    };
    for (p, (d, mode)) in &files {
        let bytes = crate::ids::read_regular(p)
            .map_err(|e| err(ErrorKind::Io, format!("cannot read {}: {e}", p.display())))?;
        use base64::Engine as _;
        match std::str::from_utf8(&bytes) {
            Ok(t) => text.insert(d.clone(), json!(t)),
            Err(_) => binary.insert(
                d.clone(),
                json!(base64::engine::general_purpose::STANDARD.encode(&bytes)),
            ),
        };
        let rel = path_str(p).trim_start_matches('/').to_string();
        rw.exact.insert(path_str(p), format!("{K8S_TREE}/{rel}"));
        items.push(json!({"key": d, "path": rel,
                          "mode": if mode & 0o111 != 0 { 0o555 } else { 0o444 }}));
    }
    // What the API server accepts in one object (etcd's limit on a ConfigMap's content).
    let size: usize = text
        .iter()
        .chain(binary.iter())
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > 1 << 20 {
        return Err(err(
            ErrorKind::Config,
            format!(
                "the chain's files come to {size} bytes in a ConfigMap, which holds at most 1 MiB: move the large files out of the tool's folder"
            ),
        ));
    }
    rw.prefixes
        .push((path_str(&spec.cwd), K8S_WORK.to_string()));
    let mut configmap = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": files_name.clone(), "labels": {"app.kubernetes.io/managed-by": "kiwi"},
                     "annotations": {"kiwi.run/context": context, "kiwi.run/tree": tree}},
        "immutable": true,
    });
    if !text.is_empty() {
        configmap["data"] = Json::Object(text);
    }
    if !binary.is_empty() {
        configmap["binaryData"] = Json::Object(binary);
    }
    let program = match rw.exact.get(&spec.program) {
        Some(p) => p.clone(),
        None => Path::new(&spec.program)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| spec.program.clone()),
    };
    let mut argv = vec![program];
    argv.extend(spec.args.iter().map(|a| rw.value(a)));
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name.clone(), "labels": labels.clone(),
                     "annotations": {"kiwi.run/context": context}},
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 600,
            "activeDeadlineSeconds": spec.timeout.as_secs().max(1),
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": false,
                    "volumes": [
                        {"name": "tree", "configMap": {"name": files_name, "items": items}},
                        {"name": "work", "emptyDir": {}},
                    ],
                    "containers": [{
                        "name": "tool",
                        "image": image,
                        "command": argv,
                        "workingDir": K8S_WORK,
                        "volumeMounts": [
                            {"name": "tree", "mountPath": K8S_TREE, "readOnly": true},
                            {"name": "work", "mountPath": K8S_WORK},
                        ],
                        "envFrom": [{"secretRef": {"name": format!("{name}-env")}}],
                        "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true,
                                            "capabilities": {"drop": ["ALL"]}},
                    }],
                },
            },
        },
    });
    Ok(vec![secret, configmap, job])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_strict_and_never_send_env() {
        let t = SshTarget {
            name: "box".into(),
            host: SshHost {
                ssh: "box".into(),
                ..SshHost::default()
            },
        };
        let o = ssh_options(&t, Path::new("/run/kiwi/ssh")).join(" ");
        for want in [
            "StrictHostKeyChecking=yes",
            "BatchMode=yes",
            "ForwardAgent=no",
            "ForwardX11=no",
            "ClearAllForwardings=yes",
            "ControlMaster=auto",
            "ControlPath=/run/kiwi/ssh/%C",
        ] {
            assert!(o.contains(want), "{want} missing from {o}");
        }
        assert!(!o.contains("SendEnv"));
        let env = client_env(&BTreeMap::from([
            ("PATH".to_string(), "/bin".to_string()),
            ("SOME_TOKEN".to_string(), "x".to_string()),
        ]));
        assert_eq!(env.keys().collect::<Vec<_>>(), vec!["PATH"]);
    }

    #[test]
    fn rewrite_paths_and_lists() {
        let rw = Rewrite {
            exact: BTreeMap::from([(
                "/p/.venv/bin/python".to_string(),
                "/w/.venv/bin/python".to_string(),
            )]),
            prefixes: vec![
                (
                    "/p/.ai/tools/t".to_string(),
                    "/h/c/t/p/.ai/tools/t".to_string(),
                ),
                ("/p".to_string(), "/w".to_string()),
            ],
        };
        assert_eq!(rw.path("/p/.venv/bin/python"), "/w/.venv/bin/python");
        assert_eq!(rw.path("/p/.ai/tools/t/x.py"), "/h/c/t/p/.ai/tools/t/x.py");
        assert_eq!(rw.path("/pq/x"), "/pq/x");
        assert_eq!(rw.value("/p/lib:/other"), "/w/lib:/other");
        assert_eq!(rw.value("plain"), "plain");
    }

    #[test]
    fn launcher_is_quoted_whole() {
        let c = remote_command("run");
        assert!(c.starts_with("exec python3 -c '"));
        assert!(c.ends_with("' run"));
    }
}
