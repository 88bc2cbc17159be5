//! Candidates: the generic strategies of the registry applied to a context. Pure: reads the
//! file system and the given variables, never the process environment, never writes.

use super::registry::{
    Base, FileName, GlobalBase, Location, Manager, Probe, Strategy, VersionFile, VersionFormat,
};
use super::spec::Interpreter;
use super::{Candidate, Outcome, Resolution, ResolveContext};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Resolve a readable interpreter spec.
pub fn resolve_interpreter(interp: &Interpreter, ctx: &ResolveContext) -> Resolution {
    let mut trail = Vec::new();
    let found = match &interp.rtype.strategy {
        Strategy::Search { locations, .. } => interp.search().into_iter().any(|name| {
            locations
                .iter()
                .find(|l| l.name == name)
                .is_some_and(|l| probe_location(interp, l, ctx, &mut trail))
        }),
        Strategy::VersionManager => probe_version_manager(interp, ctx, &mut trail),
    };
    let (value, outcome) = if found {
        let index = trail.len() - 1;
        (
            Some(trail[index].path.to_string_lossy().into_owned()),
            Outcome::Found { index },
        )
    } else if let Some(fb) = &interp.fallback {
        let on_path = which_in_env(fb, ctx);
        trail.push(Candidate {
            location: "fallback".into(),
            path: PathBuf::from(fb),
            found: on_path.is_some(),
            note: Some(match &on_path {
                Some(p) => format!("on PATH at {}", p.display()),
                None => "not on PATH either".into(),
            }),
        });
        (Some(fb.clone()), Outcome::Fallback)
    } else {
        (None, Outcome::Unresolved)
    };
    Resolution {
        resolver: interp.rtype.name.to_string(),
        var: interp.var.clone(),
        value,
        outcome,
        trail,
    }
}

/// A variable of the context (case-insensitively on Windows), when set and not empty.
pub fn var<'a>(vars: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    let v = if cfg!(windows) {
        vars.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    } else {
        vars.get(name)
    };
    v.map(String::as_str).filter(|v| !v.is_empty())
}

// ---------------------------------------------------------------------------------------
// Another machine's file system (issue 30): the same strategies, answered from elsewhere.

/// What a path is, as a [`View`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    /// A regular file; `true` when it has an execute bit.
    File(bool),
    Other,
}

/// A file system other than this machine's (an SSH host's, from one round trip of probes):
/// while one is set ([`with_view`]), every file the resolver looks at is asked of it.
pub trait View {
    /// What `path` is (symlinks followed), `None` when it does not exist.
    fn kind(&self, path: &Path) -> Option<Kind>;
    /// The names in a folder.
    fn read_dir(&self, path: &Path) -> Option<Vec<String>>;
    /// A small text file (a version file).
    fn read_text(&self, path: &Path) -> Option<String>;
}

thread_local! {
    static VIEW: std::cell::RefCell<Option<std::rc::Rc<dyn View>>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` with the resolver looking at `view` instead of this machine (on this thread).
pub fn with_view<R>(view: std::rc::Rc<dyn View>, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<std::rc::Rc<dyn View>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let old = self.0.take();
            VIEW.with(|v| *v.borrow_mut() = old);
        }
    }
    let old = VIEW.with(|v| v.borrow_mut().replace(view));
    let _reset = Reset(old);
    f()
}

fn view() -> Option<std::rc::Rc<dyn View>> {
    VIEW.with(|v| v.borrow().clone())
}

fn kind_of(path: &Path) -> Option<Kind> {
    if let Some(v) = view() {
        return v.kind(path);
    }
    let m = std::fs::metadata(path).ok()?;
    Some(if m.is_dir() {
        Kind::Dir
    } else if m.is_file() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            Kind::File(m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            Kind::File(true)
        }
    } else {
        Kind::Other
    })
}

fn dir_names(path: &Path) -> Vec<String> {
    if let Some(v) = view() {
        return v.read_dir(path).unwrap_or_default();
    }
    std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect()
}

/// Whether `path` is a file that can be run: it exists (symlinks followed) and, on Unix, has
/// an execute bit.
pub fn is_executable(path: &Path) -> bool {
    if view().is_some() {
        return kind_of(path) == Some(Kind::File(true));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                true
            }
        }
        _ => false,
    }
}

fn why_not(path: &Path) -> Option<String> {
    match kind_of(path) {
        None => None,
        Some(Kind::Dir) => Some("is a directory".into()),
        Some(_) => Some("exists but is not executable".into()),
    }
}

/// Join a relative path written with `/` to a base, with native separators.
fn join_rel(base: &Path, rel: &str) -> PathBuf {
    let mut p = base.to_path_buf();
    p.extend(rel.split('/').filter(|s| !s.is_empty()));
    p
}

fn file_candidate(location: &str, path: PathBuf) -> Candidate {
    let found = is_executable(&path);
    let note = if found { None } else { why_not(&path) };
    Candidate {
        location: location.to_string(),
        path,
        found,
        note,
    }
}

/// Probe one location; push its candidates; true when one was found.
fn probe_location(
    interp: &Interpreter,
    loc: &Location,
    ctx: &ResolveContext,
    trail: &mut Vec<Candidate>,
) -> bool {
    match &loc.probe {
        Probe::File {
            base,
            unix,
            windows,
        } => {
            let rel = if cfg!(windows) { windows } else { unix };
            let base_dir = match base {
                Base::Project => ctx.project,
                Base::User => Some(ctx.user),
            };
            let Some(base_dir) = base_dir else {
                trail.push(Candidate {
                    location: loc.name.to_string(),
                    path: join_rel(Path::new(""), rel),
                    found: false,
                    note: Some("no project: skipped".into()),
                });
                return false;
            };
            let c = file_candidate(loc.name, join_rel(base_dir, rel));
            let found = c.found;
            trail.push(c);
            found
        }
        Probe::KeyDirs { key, default, file } => {
            let dirs: Vec<String> = match interp.value.get(key) {
                Some(v) => match (v.as_str(), v.as_list()) {
                    (Some(s), _) => vec![s.to_string()],
                    (_, Some(list)) => list
                        .iter()
                        .filter_map(|x| x.as_str())
                        .map(str::to_string)
                        .collect(),
                    _ => Vec::new(),
                },
                None => default.iter().map(|d| d.to_string()).collect(),
            };
            let name = match file {
                FileName::Fixed { unix, windows } => {
                    Some((if cfg!(windows) { *windows } else { *unix }).to_string())
                }
                FileName::Key(k) => interp.str(k).map(str::to_string),
            };
            let Some(name) = name else {
                return false;
            };
            let Some(project) = ctx.project else {
                if !dirs.is_empty() {
                    trail.push(Candidate {
                        location: loc.name.to_string(),
                        path: join_rel(Path::new(&dirs[0]), &name),
                        found: false,
                        note: Some("no project: skipped".into()),
                    });
                }
                return false;
            };
            for dir in dirs.iter().filter(|d| !d.trim().is_empty()) {
                let base = if Path::new(dir).is_absolute() {
                    PathBuf::from(dir)
                } else {
                    join_rel(project, dir)
                };
                let c = file_candidate(loc.name, join_rel(&base, &name));
                let found = c.found;
                trail.push(c);
                if found {
                    return true;
                }
            }
            false
        }
        Probe::OnPath(names) => probe_path(loc.name, names.iter().copied(), ctx, trail),
        Probe::OnPathKey(key) => match interp.str(key) {
            Some(name) => probe_path(loc.name, [name], ctx, trail),
            None => false,
        },
    }
}

/// Look names up on PATH in order; push one candidate per name tried.
fn probe_path<'a>(
    location: &str,
    names: impl IntoIterator<Item = &'a str>,
    ctx: &ResolveContext,
    trail: &mut Vec<Candidate>,
) -> bool {
    for name in names {
        let found = which_in_env(name, ctx);
        let note = match (&found, var(ctx.vars, "PATH")) {
            (Some(_), _) => None,
            (None, None) => Some("PATH is not set".to_string()),
            (None, Some(_)) => Some("not on PATH".to_string()),
        };
        let hit = found.is_some();
        trail.push(Candidate {
            location: location.to_string(),
            path: found.unwrap_or_else(|| PathBuf::from(name)),
            found: hit,
            note,
        });
        if hit {
            return true;
        }
    }
    false
}

/// `which` against the PATH (and PATHEXT, on Windows) of the context, never the process's.
pub fn which_in_env(name: &str, ctx: &ResolveContext) -> Option<PathBuf> {
    let path = var(ctx.vars, "PATH")?;
    if view().is_some() {
        // Another machine (Unix): each PATH entry in order, as `which` does here.
        if name.contains('/') {
            let p = PathBuf::from(name);
            return (p.is_absolute() && is_executable(&p)).then_some(p);
        }
        return path
            .split(':')
            .filter(|d| d.starts_with('/'))
            .map(|d| Path::new(d).join(name))
            .find(|p| is_executable(p));
    }
    let sys = EnvSys {
        path_ext: var(ctx.vars, "PATHEXT").map(OsString::from),
        home: ctx.home.map(Path::to_path_buf),
    };
    let cwd = ctx.project.unwrap_or(ctx.user).to_path_buf();
    which::WhichConfig::new_with_sys(sys)
        .binary_name(OsString::from(name))
        .custom_path_list(OsString::from(path))
        .custom_cwd(cwd)
        .first_result()
        .ok()
}

/// The host as `which` sees it, with the PATHEXT and home of the environment being built.
struct EnvSys {
    path_ext: Option<OsString>,
    home: Option<PathBuf>,
}

impl which::sys::Sys for EnvSys {
    type ReadDirEntry = std::fs::DirEntry;
    type Metadata = std::fs::Metadata;

    fn is_windows(&self) -> bool {
        cfg!(windows)
    }
    fn current_dir(&self) -> std::io::Result<PathBuf> {
        // Only reached without a custom cwd, which `which_in_env` always gives.
        Err(std::io::Error::other("no current directory"))
    }
    fn home_dir(&self) -> Option<PathBuf> {
        self.home.clone()
    }
    fn env_split_paths(&self, paths: &OsStr) -> Vec<PathBuf> {
        // An empty entry would mean the current directory: never search it implicitly.
        std::env::split_paths(paths)
            .filter(|p| !p.as_os_str().is_empty())
            .collect()
    }
    fn env_path(&self) -> Option<OsString> {
        None
    }
    fn env_path_ext(&self) -> Option<OsString> {
        self.path_ext.clone()
    }
    fn metadata(&self, path: &Path) -> std::io::Result<Self::Metadata> {
        which::sys::RealSys.metadata(path)
    }
    fn symlink_metadata(&self, path: &Path) -> std::io::Result<Self::Metadata> {
        which::sys::RealSys.symlink_metadata(path)
    }
    fn read_dir(
        &self,
        path: &Path,
    ) -> std::io::Result<Box<dyn Iterator<Item = std::io::Result<Self::ReadDirEntry>>>> {
        which::sys::RealSys.read_dir(path)
    }
    fn is_valid_executable(&self, path: &Path) -> std::io::Result<bool> {
        which::sys::RealSys.is_valid_executable(path)
    }
}

/// Read a small text file (version files): at most 64 KiB, UTF-8 only.
fn read_small(path: &Path) -> Option<String> {
    if let Some(v) = view() {
        return v.read_text(path);
    }
    let f = crate::ids::open_regular(path).ok()?;
    let mut s = String::new();
    f.take(64 * 1024).read_to_string(&mut s).ok()?;
    Some(s)
}

/// The version a version file names (`plugin`: the `.tool-versions` line to read).
pub fn parse_version_file(
    text: &str,
    format: VersionFormat,
    plugin: Option<&str>,
) -> Option<String> {
    let mut lines = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty());
    match format {
        VersionFormat::Plain => lines
            .next()
            .and_then(|l| l.split_whitespace().next())
            .map(str::to_string),
        VersionFormat::ToolVersions => {
            let plugin = plugin?;
            lines.find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some(plugin))
                    .then(|| words.next().map(str::to_string))
                    .flatten()
            })
        }
    }
}

fn read_version_file(path: &Path, format: VersionFormat, plugin: Option<&str>) -> Option<String> {
    parse_version_file(&read_small(path)?, format, plugin)
}

/// The version to use and where it came from.
fn find_version(
    interp: &Interpreter,
    m: &Manager,
    root: &Path,
    plugin: Option<&str>,
    ctx: &ResolveContext,
) -> Result<(String, String), String> {
    if let Some(v) = interp.str("version") {
        return Ok((v.trim().to_string(), "`version`".into()));
    }
    let VersionFile { name, format } = m.version_file;
    if let Some(project) = ctx.project {
        if let Some(v) = read_version_file(&project.join(name), format, plugin) {
            return Ok((v, name.to_string()));
        }
    }
    if let Some(g) = m.global_version {
        let base = match g.base {
            GlobalBase::Root => Some(root),
            GlobalBase::Home => ctx.home,
        };
        if let Some(path) = base.map(|b| join_rel(b, g.file)) {
            if let Some(v) = read_version_file(&path, g.format, plugin) {
                return Ok((v, path.display().to_string()));
            }
        }
    }
    let what = match (format, plugin) {
        (VersionFormat::ToolVersions, Some(p)) => format!("no `{p}` line in {name}"),
        _ => format!("no {name}"),
    };
    Err(format!("no version: no `version` key, {what}"))
}

/// Order versions: numeric components numerically, others as text.
fn version_key(v: &str) -> Vec<(u64, String)> {
    v.split(['.', '-'])
        .map(|part| match part.parse::<u64>() {
            Ok(n) => (n, String::new()),
            Err(_) => (0, part.to_string()),
        })
        .collect()
}

fn probe_version_manager(
    interp: &Interpreter,
    ctx: &ResolveContext,
    trail: &mut Vec<Candidate>,
) -> bool {
    let Some(m) = interp.manager else {
        return false;
    };
    let plugin = interp.str("plugin");
    let binary = interp.str("binary").or(m.binary).or(plugin);
    if probe_manager_dir(interp, m, plugin, binary, ctx, trail) {
        return true;
    }
    let names: Vec<&str> = match (interp.str("binary"), m.path_names) {
        (Some(b), _) => vec![b],
        (None, names) if !names.is_empty() => names.to_vec(),
        (None, _) => binary.into_iter().collect(),
    };
    probe_path("system", names, ctx, trail)
}

fn probe_manager_dir(
    interp: &Interpreter,
    m: &Manager,
    plugin: Option<&str>,
    binary: Option<&str>,
    ctx: &ResolveContext,
    trail: &mut Vec<Candidate>,
) -> bool {
    let Some(binary) = binary else {
        return false;
    };
    // The root from the tool's environment, else from the user's shell (where nvm, pyenv,
    // rbenv and asdf set it), said so in the trail: the filter keeps it from the tool.
    let from_shell = var(ctx.vars, m.root_var)
        .is_none()
        .then(|| ctx.shell.and_then(|sh| var(sh, m.root_var)))
        .flatten();
    if let Some(r) = from_shell {
        trail.push(Candidate {
            location: m.name.to_string(),
            path: crate::context::expand_tilde(r, ctx.home),
            found: kind_of(&crate::context::expand_tilde(r, ctx.home)) == Some(Kind::Dir),
            note: Some(format!(
                "${} from the user's shell: read to resolve, not passed to the tool",
                m.root_var
            )),
        });
    }
    let root = match (var(ctx.vars, m.root_var).or(from_shell), ctx.home) {
        (Some(r), home) => crate::context::expand_tilde(r, home),
        (None, Some(home)) => home.join(m.default_root),
        (None, None) => {
            trail.push(Candidate {
                location: m.name.to_string(),
                path: PathBuf::from(format!("${}", m.root_var)),
                found: false,
                note: Some(format!(
                    "${} is not set and there is no home directory",
                    m.root_var
                )),
            });
            return false;
        }
    };
    let versions = join_rel(
        &root,
        &m.versions_dir.replace("{plugin}", plugin.unwrap_or("")),
    );
    let bin = m.bin.replace("{binary}", binary);
    let (version, source) = match find_version(interp, m, &root, plugin, ctx) {
        Ok(v) => v,
        Err(note) => {
            trail.push(Candidate {
                location: m.name.to_string(),
                path: versions,
                found: false,
                note: Some(note),
            });
            return false;
        }
    };
    let wanted = version
        .strip_prefix(m.version_prefix)
        .filter(|_| !m.version_prefix.is_empty())
        .unwrap_or(&version)
        .to_string();
    if wanted.contains(['/', '\\']) || wanted.split('.').any(|part| part.is_empty()) {
        trail.push(Candidate {
            location: m.name.to_string(),
            path: versions,
            found: false,
            note: Some(format!(
                "`{wanted}` from {source} is not a version {} can resolve here",
                m.name
            )),
        });
        return false;
    }
    if wanted == "system" {
        trail.push(Candidate {
            location: m.name.to_string(),
            path: versions,
            found: false,
            note: Some(format!(
                "version `system` from {source}: the plain binary on PATH"
            )),
        });
        return false;
    }
    let at = |v: &str| join_rel(&versions.join(format!("{}{v}", m.version_prefix)), &bin);
    let exact = at(&wanted);
    if is_executable(&exact) {
        trail.push(Candidate {
            location: m.name.to_string(),
            path: exact,
            found: true,
            note: Some(format!("version {wanted} from {source}")),
        });
        return true;
    }
    // A partial version (`3.11`, `20`): the newest installed version it is a prefix of.
    let mut matches: Vec<String> = dir_names(&versions)
        .into_iter()
        .filter_map(|n| n.strip_prefix(m.version_prefix).map(str::to_string))
        .filter(|v| v.starts_with(&format!("{wanted}.")))
        .collect();
    matches.sort_by_key(|v| std::cmp::Reverse(version_key(v)));
    if let Some(v) = matches.into_iter().find(|v| is_executable(&at(v))) {
        trail.push(Candidate {
            location: m.name.to_string(),
            path: at(&v),
            found: true,
            note: Some(format!(
                "version {wanted} from {source}: newest installed match {v}"
            )),
        });
        return true;
    }
    let mut note = format!("version {wanted} from {source}: not installed");
    if let Some(why) = why_not(&exact) {
        note = format!("version {wanted} from {source}: {why}");
    }
    trail.push(Candidate {
        location: m.name.to_string(),
        path: exact,
        found: false,
        note: Some(note),
    });
    false
}
