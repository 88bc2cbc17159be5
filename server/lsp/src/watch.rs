//! The server's own file watching, for clients that cannot watch
//! (`workspace.didChangeWatchedFiles.dynamicRegistration` false, as Neovim on Linux): inotify
//! on each project's `.ai/` tree (every folder, new ones added as they appear), its root
//! (`.venv`, version and dotenv files) and `.venv/bin`. A thread reads the events and sends
//! the changed paths; it ends when the receiver is gone.

use std::path::{Path, PathBuf};
use tokio::sync::mpsc::UnboundedSender;

/// Whether a change of `path` (under project `root`) matters to the server: item files, and
/// what interpreter resolution and the environment read.
pub fn relevant(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let mut comps = rel.components();
    let Some(first) = comps.next().and_then(|c| c.as_os_str().to_str()) else {
        return false;
    };
    first == ".ai"
        || first == ".venv"
        || first.starts_with(".env")
        || matches!(first, ".python-version" | ".nvmrc" | ".tool-versions")
        || (first == "node_modules" && comps.next().is_some_and(|c| c.as_os_str() == ".bin"))
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::ffi::OsStrExt;

    struct Inotify {
        fd: i32,
        wds: HashMap<i32, PathBuf>,
    }

    impl Drop for Inotify {
        fn drop(&mut self) {
            // SAFETY: closing the descriptor this struct owns, once.
            unsafe {
                libc::close(self.fd);
            }
        }
    }

    const MASK: u32 = libc::IN_MODIFY
        | libc::IN_CLOSE_WRITE
        | libc::IN_ATTRIB
        | libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO;

    impl Inotify {
        fn add(&mut self, dir: &Path) -> bool {
            let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
                return false;
            };
            // SAFETY: a valid NUL-terminated path and our descriptor.
            let wd = unsafe { libc::inotify_add_watch(self.fd, c.as_ptr(), MASK) };
            if wd < 0 {
                return false;
            }
            self.wds.insert(wd, dir.to_path_buf());
            true
        }

        /// `dir` and every folder below it (symlinks not followed).
        fn add_tree(&mut self, dir: &Path) {
            if !self.add(dir) {
                return;
            }
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    self.add_tree(&e.path());
                }
            }
        }
    }

    /// Watch the projects at `roots`; changed paths go to `tx` (a batch per read).
    pub fn spawn(roots: Vec<PathBuf>, tx: UnboundedSender<Vec<PathBuf>>) -> bool {
        // SAFETY: a plain syscall; the descriptor is owned by `Inotify` below.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return false;
        }
        let mut ino = Inotify {
            fd,
            wds: HashMap::new(),
        };
        for root in &roots {
            ino.add(root);
            ino.add_tree(&root.join(".ai"));
            ino.add(&root.join(".venv"));
            ino.add(&root.join(".venv/bin"));
        }
        std::thread::Builder::new()
            .name("kiwi-watch".into())
            .spawn(move || run(ino, roots, tx))
            .is_ok()
    }

    fn run(mut ino: Inotify, roots: Vec<PathBuf>, tx: UnboundedSender<Vec<PathBuf>>) {
        let mut buf = vec![0u8; 64 * 1024];
        let head = std::mem::size_of::<libc::inotify_event>();
        while !tx.is_closed() {
            let mut pfd = libc::pollfd {
                fd: ino.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd we own; a bounded wait so a closed receiver is noticed.
            let r = unsafe { libc::poll(&mut pfd, 1, 500) };
            if r <= 0 {
                continue;
            }
            // SAFETY: reading into a buffer we own, within its length.
            let n = unsafe { libc::read(ino.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                continue;
            }
            let n = n as usize;
            let mut changed = Vec::new();
            let mut at = 0;
            while at + head <= n {
                // SAFETY: the kernel wrote whole events; read_unaligned copes with alignment.
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let len = ev.len as usize;
                let name = &buf[(at + head).min(n)..(at + head + len).min(n)];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                at += head + len;
                let Some(dir) = ino.wds.get(&ev.wd).cloned() else {
                    continue;
                };
                if name.is_empty() {
                    continue;
                }
                let path = dir.join(std::ffi::OsStr::from_bytes(name));
                let Some(root) = roots.iter().find(|r| path.starts_with(r)) else {
                    continue;
                };
                if !relevant(root, &path) {
                    continue;
                }
                let new_dir = ev.mask & libc::IN_ISDIR != 0
                    && ev.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0;
                if new_dir {
                    if path.starts_with(root.join(".ai")) {
                        ino.add_tree(&path);
                        // Files written before the watch existed.
                        collect_files(&path, &mut changed);
                    } else if path == root.join(".venv") || path == root.join(".venv/bin") {
                        ino.add(&path);
                        if path == root.join(".venv") {
                            ino.add(&path.join("bin"));
                        }
                    }
                }
                changed.push(path);
            }
            if !changed.is_empty() && tx.send(changed).is_err() {
                return;
            }
        }
    }

    fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                collect_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

#[cfg(target_os = "linux")]
pub use imp::spawn;

/// No watcher on this system: the client's events (or edits) are all there is.
#[cfg(not(target_os = "linux"))]
pub fn spawn(_roots: Vec<PathBuf>, _tx: UnboundedSender<Vec<PathBuf>>) -> bool {
    false
}
