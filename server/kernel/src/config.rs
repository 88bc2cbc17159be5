//! The user's and the project's `config.yaml`: environment filtering and execution defaults.

use crate::env::FilterConfig;
use std::path::{Path, PathBuf};

/// The default of `mcp.max_answer_bytes`: about four thousand tokens.
pub const DEFAULT_ANSWER_BYTES: usize = 16 * 1024;
/// The smallest `mcp.max_answer_bytes` taken (below it an error's own fields do not fit).
pub const MIN_ANSWER_BYTES: usize = 2048;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub filter: FilterConfig,
    /// `execution.default`: the environment for tools that declare no preference.
    pub execution_default: Option<String>,
    /// `execution.image`: the default container image.
    pub execution_image: Option<String>,
    /// `execution.hosts`: the SSH hosts tools may run on (the user's file only: a project
    /// may name a host, never define one; [`Config::merge_project`]).
    pub execution_hosts: std::collections::BTreeMap<String, SshHost>,
    /// `spaces:`: the extra spaces, the project's first, then the user's.
    pub spaces: Vec<SpaceEntry>,
    /// `trust.require_signed`: which registries' items must be signed by a trusted key.
    pub require_signed: RequireSigned,
    /// `trust.tofu`: pulls trust a publisher's key the first time they see it (off unless the
    /// user's own config.yaml says `true`; a project may switch it off, never on).
    pub trust_on_first_use: Option<bool>,
    /// `mcp.max_answer_bytes`: the most bytes of JSON one `kiwi mcp` answer carries (a
    /// run's output beyond it is kept whole as a `kiwi://run/<id>/output` resource).
    pub max_answer_bytes: Option<usize>,
    /// The files that were read, in order (user, then project).
    pub sources: Vec<PathBuf>,
    /// Problems reading them: (file, message). They never stop a check.
    pub problems: Vec<(PathBuf, String)>,
    /// What the project's file changed of the user's settings, or tried to and was refused
    /// ([`Config::load`]: a project narrows, never widens).
    pub project_settings: Vec<ProjectSetting>,
}

/// A setting of the project's `config.yaml` that the user is told about: refused (it would
/// widen what the user's configuration allows) or applied where it changes how the user's
/// own items run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProjectSetting {
    pub file: PathBuf,
    /// The key, dotted (`env.allow`, `execution.default`).
    pub key: String,
    /// The value as written (for `env.allow`, the one entry).
    pub value: String,
    pub refused: bool,
    pub message: String,
}

/// How isolated an execution environment is: a project may move the user's default only
/// towards more isolation.
fn isolation(env: Option<&str>) -> u8 {
    match env.map(str::trim) {
        None | Some("") | Some("local") => 0,
        Some("container") => 1,
        Some("sandbox") => 1,
        // An unknown name: the run refuses it; ranked above so it is reported, not hidden.
        Some(_) => 2,
    }
}

/// One entry of `execution.hosts` (issue 30): where `kiwi run --env ssh:NAME` runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SshHost {
    /// An ssh destination (`user@host`, `host`) or an alias of `~/.ssh/config`.
    pub ssh: String,
    /// The project's working directory on the host (absolute, or `~/...`).
    pub workdir: Option<String>,
    /// An ssh client configuration file used instead of `~/.ssh/config` (`ssh -F`).
    pub ssh_config: Option<PathBuf>,
    /// The file that defines it.
    pub source: PathBuf,
}

/// The keys of an `execution.hosts` entry.
pub const SSH_HOST_KEYS: &[&str] = &["ssh", "workdir", "ssh_config"];

/// Why an `execution.hosts` value cannot be used, if it cannot: a destination that ssh
/// would read as an option, or with spaces or control characters; a relative workdir.
pub fn ssh_host_problem(name: &str, h: &SshHost) -> Option<String> {
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !name_ok {
        return Some(format!(
            "execution.hosts: `{name}` is not a host name kiwi accepts (letters, digits, `-`, `_`, `.`)"
        ));
    }
    let d = h.ssh.trim();
    if d.is_empty() || d.starts_with('-') || d.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Some(format!(
            "execution.hosts.{name}.ssh must be an ssh destination (`user@host` or an alias of ~/.ssh/config), without spaces, not starting with `-`"
        ));
    }
    if let Some(w) = &h.workdir {
        if !(w.starts_with('/') || w == "~" || w.starts_with("~/"))
            || w.chars().any(char::is_control)
        {
            return Some(format!(
                "execution.hosts.{name}.workdir must be an absolute path on the host (or `~/...`)"
            ));
        }
    }
    None
}

/// One entry of `spaces:` in a `config.yaml`: a directory that holds an `.ai/` (a plain
/// string, or a mapping `{path: DIR, name: NAME}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceEntry {
    /// As written (`~` expanded; relative paths are resolved against `base`).
    pub path: PathBuf,
    pub name: Option<String>,
    /// The directory a relative `path` is relative to: the project root for the
    /// project's config, the user space for the user's.
    pub base: PathBuf,
    /// The file that lists it.
    pub source: PathBuf,
}

/// `trust.require_signed` of the `config.yaml` files: `true` (every registry), a list of
/// registry names, or a mapping `{NAME: true|false, "*": DEFAULT}`. Either file can require
/// signatures; neither lifts what the other requires (a project cloned from elsewhere cannot
/// switch off the user's requirement), so the settings of both files are joined by "or".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequireSigned {
    /// `true`, or `"*": true`: every registry.
    pub all: bool,
    /// The registries named.
    pub registries: Vec<String>,
}

impl RequireSigned {
    /// Whether items pulled from this registry (its configured name) must be signed by a
    /// trusted key.
    pub fn for_registry(&self, name: &str) -> bool {
        self.all || self.registries.iter().any(|r| r == name)
    }

    fn merge(
        &mut self,
        file: &Path,
        v: &crate::value::Value,
        problems: &mut Vec<(PathBuf, String)>,
    ) {
        use crate::value::ValueKind;
        match &v.kind {
            ValueKind::Null => {}
            ValueKind::Bool(b) => self.all |= b,
            ValueKind::Str(s) => self.registries.push(s.value.clone()),
            ValueKind::List(l) => {
                for x in l {
                    match x.as_str() {
                        Some(name) => self.registries.push(name.to_string()),
                        None => problems.push((
                            file.to_path_buf(),
                            "an entry of `trust.require_signed` is a registry name; this one is ignored".into(),
                        )),
                    }
                }
            }
            ValueKind::Map(m) => {
                for e in m {
                    match e.value.kind {
                        ValueKind::Bool(true) if e.key == "*" => self.all = true,
                        ValueKind::Bool(true) => self.registries.push(e.key.clone()),
                        ValueKind::Bool(false) => {}
                        _ => problems.push((
                            file.to_path_buf(),
                            format!("`trust.require_signed.{}` is true or false; this value is ignored", e.key),
                        )),
                    }
                }
            }
            _ => problems.push((
                file.to_path_buf(),
                "`trust.require_signed` is true, a list of registry names or a mapping of names to true/false; this value is ignored".into(),
            )),
        }
    }
}

impl Config {
    /// Read `<user>/config.yaml` then `<project>/.ai/config.yaml`. The project, a folder
    /// the user may have cloned from anyone, may narrow what the user's file allows, never
    /// widen it ([`Config::merge_project`]).
    pub fn load(user: &Path, project: Option<&Path>) -> Config {
        let read = |file: PathBuf, base: &Path| {
            let mut c = Config::default();
            // A regular file only: the project's may come from anyone (a named pipe is
            // skipped at once, never waited on).
            if let Ok(text) = crate::ids::read_regular(&file).map(String::from_utf8) {
                let Ok(text) = text else { return c };
                c.merge_text(&file, &text);
                for s in c.spaces.iter_mut() {
                    s.base = base.to_path_buf();
                }
            }
            c
        };
        let mut cfg = read(user.join("config.yaml"), user);
        if let Some(p) = project {
            let file = p.join(".ai").join("config.yaml");
            if file.is_file() {
                let project = read(file.clone(), p);
                cfg.merge_project(&file, project);
            }
        }
        cfg
    }

    /// Join the project's settings to the user's (`self`): the one rule for what a project
    /// may change (issue 24).
    ///
    /// - `env.block`, `trust.require_signed`: joined (they only narrow).
    /// - `env.allow`: adds names the filter does not block; never releases a blocked one
    ///   (the user's own `env.allow` can). A blocked exact name is refused and reported.
    /// - `execution.default`: applied when at least as isolated as the user's (`local` <
    ///   `sandbox`, `container`); else refused and reported.
    /// - `execution.image`: applied, and reported (it changes where the user's own tools run).
    /// - `spaces:`: the project's come first (they hold items, as the project does).
    pub fn merge_project(&mut self, file: &Path, project: Config) {
        let user_filter = crate::env::Filter::new(&self.filter);
        let mut told = |key: &str, value: &str, refused: bool, message: String| {
            self.project_settings.push(ProjectSetting {
                file: file.to_path_buf(),
                key: key.to_string(),
                value: value.to_string(),
                refused,
                message,
            })
        };
        for a in &project.filter.allow {
            if !crate::env::filter::is_pattern(a) && user_filter.is_blocked(a) {
                told(
                    "env.allow",
                    a,
                    true,
                    format!(
                        "the project's env.allow names {a}, which your configuration blocks: a project cannot release a blocked variable (only your own config.yaml's env.allow can); ignored"
                    ),
                );
            }
        }
        match (&self.execution_default, &project.execution_default) {
            (_, None) => {}
            (mine, Some(theirs)) if isolation(Some(theirs)) < isolation(mine.as_deref()) => told(
                "execution.default",
                theirs,
                true,
                format!(
                    "the project's execution.default `{theirs}` would run tools less isolated than your execution.default `{}`; ignored (a project may only ask for more isolation)",
                    mine.as_deref().unwrap_or("local")
                ),
            ),
            (mine, Some(theirs)) => {
                if mine.as_deref() != Some(theirs.as_str()) {
                    told(
                        "execution.default",
                        theirs,
                        false,
                        format!(
                            "the project sets execution.default `{theirs}` (yours: `{}`): tools without a preference, yours too, run there",
                            mine.as_deref().unwrap_or("local")
                        ),
                    );
                }
                self.execution_default = Some(theirs.clone());
            }
        }
        if let Some(image) = &project.execution_image {
            if self.execution_image.as_deref() != Some(image.as_str()) {
                told(
                    "execution.image",
                    image,
                    false,
                    format!(
                        "the project sets execution.image `{image}`: container runs of your own tools use it too"
                    ),
                );
            }
            self.execution_image = Some(image.clone());
        }
        for name in project.execution_hosts.keys() {
            told(
                &format!("execution.hosts.{name}"),
                name,
                true,
                format!(
                    "the project's config.yaml defines the ssh host `{name}` (execution.hosts): a project may name the host a tool prefers, never define a host or how to reach it; ignored (define it in your own config.yaml)"
                ),
            );
        }
        self.filter.block.extend(project.filter.block);
        self.filter.project_allow.extend(project.filter.allow);
        self.filter
            .project_allow
            .extend(project.filter.project_allow);
        // A smaller cap only narrows what reaches the agent: the smaller of the two wins.
        self.max_answer_bytes = match (self.max_answer_bytes, project.max_answer_bytes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Trust on first use: the user's to switch on; a project may only switch it off.
        match (self.trust_on_first_use, project.trust_on_first_use) {
            (Some(true), Some(false)) => {
                self.trust_on_first_use = Some(false);
                self.project_settings.push(ProjectSetting {
                    file: file.to_path_buf(),
                    key: "trust.tofu".into(),
                    value: "false".into(),
                    refused: false,
                    message: "the project switches off trust on first use (trust.tofu): pulls here refuse publishers you do not trust".into(),
                });
            }
            (mine, Some(true)) if mine != Some(true) => {
                self.project_settings.push(ProjectSetting {
                    file: file.to_path_buf(),
                    key: "trust.tofu".into(),
                    value: "true".into(),
                    refused: true,
                    message: "the project's trust.tofu would trust publishers on first use, which your configuration does not: a project cannot widen what you trust; ignored (set it in your own config.yaml, or pull --trust-on-first-use)".into(),
                });
            }
            _ => {}
        }
        self.require_signed.all |= project.require_signed.all;
        self.require_signed
            .registries
            .extend(project.require_signed.registries);
        let user_spaces = std::mem::take(&mut self.spaces);
        self.spaces = project.spaces;
        self.spaces.extend(user_spaces);
        self.sources.extend(project.sources);
        self.problems.extend(project.problems);
    }

    pub fn merge_text(&mut self, file: &Path, text: &str) {
        self.sources.push(file.to_path_buf());
        let doc = crate::yaml::parse(text, 0);
        if let Some((_, msg)) = doc.errors.first() {
            self.problems.push((file.to_path_buf(), msg.clone()));
        }
        let Some(value) = doc.value.as_ref() else {
            return;
        };
        self.filter.extend_from_config(value);
        if let Some(r) = value.get("trust").and_then(|t| t.get("require_signed")) {
            self.require_signed.merge(file, r, &mut self.problems);
        }
        if let Some(v) = value.get("trust").and_then(|t| t.get("tofu")) {
            match &v.kind {
                crate::value::ValueKind::Bool(b) => self.trust_on_first_use = Some(*b),
                _ => self.problems.push((
                    file.to_path_buf(),
                    "`trust.tofu` is true or false; this value is ignored".into(),
                )),
            }
        }
        if let Some(v) = value.get("mcp").and_then(|m| m.get("max_answer_bytes")) {
            let n = match &v.kind {
                crate::value::ValueKind::Int(n) => usize::try_from(*n).ok(),
                _ => None,
            };
            match n {
                Some(n) if n >= MIN_ANSWER_BYTES => self.max_answer_bytes = Some(n),
                _ => self.problems.push((
                    file.to_path_buf(),
                    format!("`mcp.max_answer_bytes` is a number of bytes, at least {MIN_ANSWER_BYTES}; this value is ignored"),
                )),
            }
        }
        let exec = value.get("execution");
        if let Some(d) = exec.and_then(|e| e.get("default")).and_then(|v| v.as_str()) {
            self.execution_default = Some(d.to_string());
        }
        if let Some(i) = exec.and_then(|e| e.get("image")).and_then(|v| v.as_str()) {
            self.execution_image = Some(i.to_string());
        }
        if let Some(hosts) = exec.and_then(|e| e.get("hosts")) {
            self.read_hosts(file, hosts);
        }
        match value.get("spaces") {
            None => {}
            Some(v) if matches!(v.kind, crate::value::ValueKind::Null) => {}
            Some(v) => match v.as_list() {
                Some(list) => {
                    for entry in list {
                        let (path, name) = match (entry.as_str(), entry.as_map()) {
                            (Some(p), _) => (Some(p), None),
                            (None, Some(_)) => (
                                entry.get("path").and_then(|p| p.as_str()),
                                entry.get("name").and_then(|n| n.as_str()),
                            ),
                            _ => (None, None),
                        };
                        match path.filter(|p| !p.trim().is_empty()) {
                            Some(p) => self.spaces.push(SpaceEntry {
                                path: PathBuf::from(p.trim()),
                                name: name.map(str::to_string),
                                base: PathBuf::new(),
                                source: file.to_path_buf(),
                            }),
                            None => self.problems.push((
                                file.to_path_buf(),
                                "an entry of `spaces:` is a directory (a string) or `{path: DIR, name: NAME}`; this one is neither and is ignored".to_string(),
                            )),
                        }
                    }
                }
                None => self.problems.push((
                    file.to_path_buf(),
                    "`spaces:` is a list of directories that each hold an `.ai/` folder; this value is ignored".to_string(),
                )),
            },
        }
    }
}

/// `kiwi check`'s report of what a project's files change of the user's settings: E420 on
/// its `config.yaml` ([`Config::project_settings`]), E421 on each line of its `.env` files
/// that is not applied. One entry per file with diagnostics: (path, text, diagnostics).
pub fn project_reports(
    user: &Path,
    project: &Path,
    cfg: &Config,
) -> Vec<(
    PathBuf,
    crate::text::SourceText,
    Vec<crate::diag::Diagnostic>,
)> {
    use crate::diag::{Code, Diagnostic, Severity};
    use crate::text::{SourceText, TextRange};
    let read = |p: &Path| {
        crate::ids::read_regular(p)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    let line_of = |text: &str, at: Option<usize>| {
        let start = at.map_or(0, |i| text[..i].rfind('\n').map_or(0, |n| n + 1));
        let end = text[start..].find('\n').map_or(text.len(), |n| start + n);
        TextRange::new(start, end)
    };
    let mut out = Vec::new();
    let file = project.join(".ai").join("config.yaml");
    let settings: Vec<&ProjectSetting> = cfg
        .project_settings
        .iter()
        .filter(|p| p.file == file)
        .collect();
    if !settings.is_empty() {
        let text = read(&file);
        let mut diags: Vec<Diagnostic> = settings
            .iter()
            .map(|p| {
                let key = p.key.rsplit('.').next().unwrap_or(&p.key);
                let at = text
                    .match_indices(p.value.as_str())
                    .map(|(i, _)| i)
                    .find(|&i| text[..i].contains(key));
                let d = Diagnostic::new(Code::E420, line_of(&text, at), p.message.clone());
                if p.refused {
                    d
                } else {
                    d.severity(Severity::Info)
                }
            })
            .collect();
        crate::diag::normalize(&mut diags);
        out.push((file, SourceText::new(text), diags));
    }
    let filter = crate::env::Filter::new(&cfg.filter);
    for path in crate::env::dotenv_files(user, Some(project))
        .into_iter()
        .skip(1)
    {
        let Some((entries, _)) = crate::env::build::read_dotenv(&path) else {
            continue;
        };
        let refused: Vec<String> = entries
            .into_iter()
            .map(|e| e.key)
            .filter(|k| !crate::env::build::project_dotenv_may_set(&filter, k))
            .collect();
        if refused.is_empty() {
            continue;
        }
        let text = read(&path);
        let mut diags: Vec<Diagnostic> = refused
            .into_iter()
            .map(|name| {
                let at = text
                    .lines()
                    .scan(0usize, |off, l| {
                        let here = *off;
                        *off += l.len() + 1;
                        Some((here, l))
                    })
                    .find(|(_, l)| {
                        let l = l.trim_start();
                        let l = l.strip_prefix("export ").unwrap_or(l).trim_start();
                        l.strip_prefix(name.as_str())
                            .is_some_and(|r| r.trim_start().starts_with('='))
                    })
                    .map(|(i, _)| i);
                let r = crate::env::DotenvRefused {
                    path: path.clone(),
                    name,
                };
                Diagnostic::new(Code::E421, line_of(&text, at), r.message())
            })
            .collect();
        crate::diag::normalize(&mut diags);
        out.push((path, SourceText::new(text), diags));
    }
    out
}

impl Config {
    fn read_hosts(&mut self, file: &Path, hosts: &crate::value::Value) {
        use crate::value::ValueKind;
        let Some(map) = hosts.as_map() else {
            if !matches!(hosts.kind, ValueKind::Null) {
                self.problems.push((
                    file.to_path_buf(),
                    "`execution.hosts` is a mapping of host names to `{ssh: DESTINATION, workdir: DIR}`; this value is ignored".into(),
                ));
            }
            return;
        };
        for e in map {
            let text = |k: &str| {
                e.value
                    .get(k)
                    .and_then(|v| v.as_str())
                    .map(|s| s.trim().to_string())
            };
            let host = match (e.value.as_str(), e.value.as_map()) {
                (Some(dest), _) => SshHost {
                    ssh: dest.trim().to_string(),
                    source: file.to_path_buf(),
                    ..SshHost::default()
                },
                (None, Some(m)) => {
                    for k in m.iter().map(|x| x.key.as_str()) {
                        if !SSH_HOST_KEYS.contains(&k) {
                            self.problems.push((
                                file.to_path_buf(),
                                format!("`execution.hosts.{}.{k}` is not a key kiwi reads (the keys are {}); ignored", e.key, SSH_HOST_KEYS.join(", ")),
                            ));
                        }
                    }
                    SshHost {
                        ssh: text("ssh").unwrap_or_default(),
                        workdir: text("workdir").filter(|w| !w.is_empty()),
                        ssh_config: text("ssh_config")
                            .filter(|w| !w.is_empty())
                            .map(|p| crate::context::expand_tilde(&p, dirs::home_dir().as_deref())),
                        source: file.to_path_buf(),
                    }
                }
                _ => SshHost::default(),
            };
            match ssh_host_problem(&e.key, &host) {
                Some(why) => self
                    .problems
                    .push((file.to_path_buf(), format!("{why}; the host is ignored"))),
                None => {
                    self.execution_hosts.insert(e.key.clone(), host);
                }
            }
        }
    }
}
