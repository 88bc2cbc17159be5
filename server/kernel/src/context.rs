//! The host the kernel runs on, as data: its environment variables, home and working
//! directory. Everything that reads the environment takes a `Host`, so tests can give one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct Host {
    /// The process environment (unfiltered: filtering happens when a tool's environment is built).
    pub vars: BTreeMap<String, String>,
    pub home: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
}

impl Host {
    /// The real host: this process's environment, home and working directory.
    pub fn from_process() -> Self {
        Host {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            home: dirs::home_dir(),
            cwd: std::env::current_dir().ok(),
        }
    }

    /// A host with exactly these variables; `HOME` (if given) is the home directory.
    pub fn for_tests(vars: &[(&str, &str)]) -> Self {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let home = vars.get("HOME").map(PathBuf::from);
        Host {
            vars,
            home,
            cwd: Some(PathBuf::from("/")),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The user space root: `$KIWI_USERSPACE_DIR`, else `$AI_USER_SPACE`, else `~/.ai`.
    pub fn user_space(&self) -> PathBuf {
        for var in ["KIWI_USERSPACE_DIR", "AI_USER_SPACE"] {
            if let Some(v) = self.get(var).filter(|v| !v.is_empty()) {
                let p = expand_tilde(v, self.home.as_deref());
                // A relative path is read from the working directory, once: everything that
                // records the user space (config.yaml, system items) holds it absolute.
                return match &self.cwd {
                    Some(cwd) if p.is_relative() => cwd.join(p),
                    _ => p,
                };
            }
        }
        self.home
            .clone()
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".ai")
    }
}

/// Make this process's initial environment unreadable through `/proc/<pid>/environ`
/// (issue 12: a tool read every secret of kiwi's environment from `/proc/$PPID/environ`,
/// as root and as an unprivileged user alike).
///
/// `/proc/<pid>/environ` shows the memory the kernel set up at `execve` (`env_start` to
/// `env_end` of `/proc/self/stat`), whatever the process did with its environment since.
/// This copies every `environ` string that lives there to the heap (so `getenv`,
/// `std::env` and the environment children inherit are unchanged), then zeroes that
/// memory in place, as `setproctitle`-style code does. Nothing needs a privilege.
///
/// Call it first thing in `main`, before any thread starts (it writes `environ`).
/// Elsewhere than Linux it does nothing. Returns whether the block was scrubbed.
pub fn hide_initial_environment() -> bool {
    #[cfg(target_os = "linux")]
    {
        let scrubbed = scrub_linux().is_some();
        // The environment now lives on the heap, and a run's supervisor is a fork of kiwi:
        // a tool of the same user read it back through /proc/$PPID/mem (issue 12). A process
        // that is not dumpable has its /proc/<pid>/{mem,environ,maps} owned by root and
        // refused to every other process without CAP_SYS_PTRACE, which tools run without
        // (`exec::supervisor` drops it from their bounding set). Forks inherit the flag;
        // `execve` resets it, so tools themselves are dumpable as usual.
        // SAFETY: a plain system call.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        scrubbed
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

#[cfg(target_os = "linux")]
fn scrub_linux() -> Option<()> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces): field 3 on.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // env_start and env_end are fields 50 and 51 (proc(5)).
    let start: usize = fields.get(50 - 3)?.parse().ok()?;
    let end: usize = fields.get(51 - 3)?.parse().ok()?;
    if start == 0 || end <= start {
        return None;
    }
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    // SAFETY: single-threaded at start-up (documented contract); `environ` is the C
    // library's NULL-terminated array of C strings. Each string inside [start, end) is
    // duplicated with strdup (never freed: the environment lives as long as the process)
    // and its pointer replaced before the block is zeroed, so no pointer into the block
    // stays in `environ`. The block [start, end) is the writable stack memory the kernel
    // filled with the environment strings at execve.
    unsafe {
        let mut p = environ;
        if p.is_null() {
            return None;
        }
        while !(*p).is_null() {
            let at = *p as usize;
            if at >= start && at < end {
                let dup = libc::strdup(*p);
                if dup.is_null() {
                    return None;
                }
                *p = dup;
            }
            p = p.add(1);
        }
        std::ptr::write_bytes(start as *mut u8, 0, end - start);
    }
    Some(())
}

/// `~` and `~/x` to the home directory.
pub fn expand_tilde(p: &str, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(p),
    }
}

/// Whether `dir` is a project's folder: it holds `.ai/`, or the clients' skills folders
/// (`.agents/skills/`, `.claude/skills/`, `.github/skills/`): a project with Agent Skills and
/// no `.ai/` is a project too, but not the home folder, whose `~/.claude/skills` are the user's.
pub fn is_project_folder(dir: &Path) -> bool {
    dir.join(".ai").is_dir()
        || (crate::skill::PROJECT_FOLDERS[1..]
            .iter()
            .any(|f| dir.join(f).is_dir())
            && dirs::home_dir().as_deref() != Some(dir))
}

/// The nearest ancestor of `start` (itself included) that holds a `.ai/` folder.
pub fn find_project_root(start: &Path) -> Option<PathBuf> {
    let start = if start.is_file() {
        start.parent()?
    } else {
        start
    };
    let mut cur = Some(start);
    while let Some(dir) = cur {
        if is_project_folder(dir) {
            return Some(dir.to_path_buf());
        }
        // A path inside a `.ai/` belongs to the project that holds that `.ai/`.
        if dir.file_name().is_some_and(|n| n == ".ai") {
            return dir.parent().map(Path::to_path_buf);
        }
        cur = dir.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_space_precedence() {
        let h = Host::for_tests(&[("HOME", "/home/u")]);
        assert_eq!(h.user_space(), PathBuf::from("/home/u/.ai"));
        let h = Host::for_tests(&[("HOME", "/home/u"), ("AI_USER_SPACE", "/a")]);
        assert_eq!(h.user_space(), PathBuf::from("/a"));
        let h = Host::for_tests(&[
            ("HOME", "/home/u"),
            ("AI_USER_SPACE", "/a"),
            ("KIWI_USERSPACE_DIR", "~/k"),
        ]);
        assert_eq!(h.user_space(), PathBuf::from("/home/u/k"));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn initial_environment_hidden_but_kept() {
        // In a child process of its own: the test harness runs tests on threads.
        if std::env::var_os("KIWI_TEST_SCRUB_CHILD").is_none() {
            let exe = std::env::current_exe().unwrap();
            let o = std::process::Command::new(exe)
                .args([
                    "--exact",
                    "context::tests::initial_environment_hidden_but_kept",
                    "--test-threads=1",
                    "--nocapture",
                ])
                .env("KIWI_TEST_SCRUB_CHILD", "1")
                .env("SOME_TOKEN", "canary-scrub-5e1f")
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{out}");
            assert!(out.contains("scrub-checked"), "{out}");
            return;
        }
        assert!(hide_initial_environment());
        // Not dumpable, this process's /proc files belong to root: an unprivileged test could
        // not read its own environ back. Dumpable again for the check (the scrub is done).
        // SAFETY: a plain system call.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        }
        let environ = std::fs::read("/proc/self/environ").unwrap();
        assert!(!String::from_utf8_lossy(&environ).contains("canary-scrub-5e1f"));
        assert!(environ.iter().all(|b| *b == 0));
        // The process still has its environment, and passes it on.
        assert_eq!(std::env::var("SOME_TOKEN").unwrap(), "canary-scrub-5e1f");
        let o = std::process::Command::new("sh")
            .args(["-c", "printf %s \"$SOME_TOKEN\""])
            .output()
            .unwrap();
        assert_eq!(o.stdout, b"canary-scrub-5e1f");
        println!("scrub-checked");
    }

    #[test]
    fn project_root() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("p/.ai/tools/x")).unwrap();
        std::fs::create_dir_all(d.path().join("p/src/deep")).unwrap();
        let p = d.path().join("p");
        assert_eq!(find_project_root(&p.join("src/deep")), Some(p.clone()));
        assert_eq!(find_project_root(&p.join(".ai/tools/x")), Some(p.clone()));
        assert_eq!(find_project_root(d.path()), None);
    }
}
