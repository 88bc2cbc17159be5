//! Folder watching (inotify, Linux): one reusable watcher for whatever keeps a view of the
//! disk up to date (the agent service's workspaces, an editor's projects).
//!
//! A [`Watcher`] watches folders: one alone ([`Watcher::watch_dir`], its entries only) or a
//! whole tree ([`Watcher::watch_tree`]: every folder below it that a filter keeps, and the
//! folders created or moved in later, whose files already there are reported as created).
//! It reports [`Change`]s in one of two ways:
//!
//! - **synchronously**: [`Watcher::drain`] returns everything queued so far, without waiting.
//!   A caller that drains before it answers sees every change made before it was asked (no
//!   thread, no race): what [`crate::service::Service`] does on every call.
//! - **in the background**: [`Watcher::spawn`] moves the watcher to a thread that waits for
//!   events and hands each batch to a callback (typically one that sends it to a channel),
//!   for a long-running server. The thread ends when the callback returns `false`, when the
//!   returned [`Running`] is dropped, or when no watched folder is left.
//!
//! Where watching is not possible (not Linux, no inotify instance, the user's watch limit
//! reached) the calls return an error: the caller then falls back to looking at the disk
//! (stating files).
//!
//! ```no_run
//! use kiwi_kernel::watch::{Change, Watcher};
//! # fn main() -> std::io::Result<()> {
//! let mut w = Watcher::new()?;
//! w.watch_tree("/project/.ai".as_ref(), |dir| !dir.ends_with("__pycache__"))?;
//! // ... later, before answering:
//! for change in w.drain()? {
//!     if change.is_structural() { /* walk again */ }
//! }
//! // or, in a server:
//! let (tx, rx) = std::sync::mpsc::channel::<Vec<Change>>();
//! let running = w.spawn(move |batch| tx.send(batch).is_ok())?;
//! # drop((rx, running)); Ok(()) }
//! ```

use std::path::{Path, PathBuf};

/// One change seen under a watched folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A file's (or folder's) contents or attributes changed: written, closed after
    /// writing, permissions or times changed.
    Modified(PathBuf),
    /// A file or folder appeared: created, or moved in. A folder that appears inside a
    /// watched tree is watched from then on.
    Created(PathBuf),
    /// A file or folder went away: deleted or moved out; also a watched folder itself
    /// (deleted, moved, or its file system unmounted).
    Removed(PathBuf),
    /// The kernel's event queue overflowed: changes were lost; look at the disk again.
    Overflow,
}

impl Change {
    /// The path the change is about (`None` for [`Change::Overflow`]).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Change::Modified(p) | Change::Created(p) | Change::Removed(p) => Some(p),
            Change::Overflow => None,
        }
    }

    /// Whether the set of files may have changed (anything but [`Change::Modified`]): a
    /// listing made before it may be out of date.
    pub fn is_structural(&self) -> bool {
        !matches!(self, Change::Modified(_))
    }
}

/// Which subfolders of a tree are watched (the tree's root always is).
type Keep = std::sync::Arc<dyn Fn(&Path) -> bool + Send + Sync>;

#[cfg(target_os = "linux")]
mod imp {
    use super::{Change, Keep};
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
    use std::collections::HashMap;
    use std::ffi::OsString;
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    /// The events asked for on every watched folder.
    fn mask() -> WatchMask {
        WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::ATTRIB
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
    }

    /// The size of the buffer events are read into (many events per read).
    const BUFFER: usize = 64 * 1024;

    /// What the watcher knows: the watched folders and the trees that follow new folders.
    pub(super) struct State {
        watches: Watches,
        wds: HashMap<WatchDescriptor, PathBuf>,
        trees: Vec<(PathBuf, Keep)>,
    }

    /// An event copied out of the read buffer.
    struct Raw {
        wd: WatchDescriptor,
        mask: EventMask,
        name: Option<OsString>,
    }

    impl State {
        fn add(&mut self, dir: &Path) -> io::Result<()> {
            let wd = self.watches.add(dir, mask())?;
            self.wds.insert(wd, dir.to_path_buf());
            Ok(())
        }

        /// `dir` and every folder below it that `keep` keeps (symbolic links not followed);
        /// `found` receives the files met on the way. A folder gone meanwhile is skipped.
        fn add_tree(
            &mut self,
            dir: &Path,
            keep: &Keep,
            found: &mut Vec<PathBuf>,
        ) -> io::Result<()> {
            let mut stack = vec![dir.to_path_buf()];
            while let Some(d) = stack.pop() {
                match self.add(&d) {
                    Ok(()) => {}
                    Err(e) if d != dir && e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
                let Ok(entries) = std::fs::read_dir(&d) else {
                    continue;
                };
                for e in entries.flatten() {
                    let p = e.path();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        if keep(&p) {
                            stack.push(p);
                        }
                    } else {
                        found.push(p);
                    }
                }
            }
            Ok(())
        }

        /// Stop watching `dir` and every folder below it (moved out of the tree).
        fn forget_tree(&mut self, dir: &Path) {
            let gone: Vec<WatchDescriptor> = self
                .wds
                .iter()
                .filter(|(_, p)| p.starts_with(dir))
                .map(|(wd, _)| wd.clone())
                .collect();
            for wd in gone {
                self.wds.remove(&wd);
                // Its `IGNORED` event then names no known folder and is skipped.
                let _ = self.watches.remove(wd);
            }
        }

        /// The tree a new folder `path` belongs to and is kept by, if any.
        fn tree_of(&self, path: &Path) -> Option<Keep> {
            self.trees
                .iter()
                .find(|(root, keep)| path.starts_with(root) && path != root && keep(path))
                .map(|(_, keep)| keep.clone())
        }

        /// The changes one event stands for (a new folder of a tree is watched here).
        fn translate(&mut self, ev: Raw, out: &mut Vec<Change>) {
            if ev.mask.contains(EventMask::Q_OVERFLOW) {
                out.push(Change::Overflow);
                return;
            }
            let Some(dir) = self.wds.get(&ev.wd).cloned() else {
                return;
            };
            if ev.mask.contains(EventMask::IGNORED) {
                // The watch is gone (its folder deleted or unmounted).
                self.wds.remove(&ev.wd);
                out.push(Change::Removed(dir));
                return;
            }
            if ev
                .mask
                .intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF)
            {
                out.push(Change::Removed(dir));
                return;
            }
            // An event about the watched folder itself (its times): nothing to report.
            let Some(name) = ev.name else {
                return;
            };
            let path = dir.join(name);
            if ev.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
                if ev.mask.contains(EventMask::ISDIR) {
                    if let Some(keep) = self.tree_of(&path) {
                        let mut found = Vec::new();
                        // Out of watches: the folder is reported, its later changes are not.
                        let _ = self.add_tree(&path, &keep, &mut found);
                        out.push(Change::Created(path));
                        // Files written before the watch existed.
                        out.extend(found.into_iter().map(Change::Created));
                        return;
                    }
                }
                out.push(Change::Created(path));
            } else if ev
                .mask
                .intersects(EventMask::DELETE | EventMask::MOVED_FROM)
            {
                if ev.mask.contains(EventMask::ISDIR) && ev.mask.contains(EventMask::MOVED_FROM) {
                    // Moved away (maybe within the tree: then it comes back as MOVED_TO):
                    // its watches would go on reporting under the old path.
                    self.forget_tree(&path);
                }
                out.push(Change::Removed(path));
            } else {
                out.push(Change::Modified(path));
            }
        }
    }

    fn read(ino: &mut Inotify, buf: &mut [u8], blocking: bool) -> io::Result<Vec<Raw>> {
        let events = if blocking {
            ino.read_events_blocking(buf)?
        } else {
            ino.read_events(buf)?
        };
        Ok(events
            .map(|e| Raw {
                wd: e.wd,
                mask: e.mask,
                name: e.name.map(|n| n.to_os_string()),
            })
            .collect())
    }

    pub struct Watcher {
        ino: Inotify,
        state: State,
        buf: Vec<u8>,
    }

    impl Watcher {
        pub fn new() -> io::Result<Watcher> {
            let ino = Inotify::init()?;
            let watches = ino.watches();
            Ok(Watcher {
                ino,
                state: State {
                    watches,
                    wds: HashMap::new(),
                    trees: Vec::new(),
                },
                buf: vec![0; BUFFER],
            })
        }

        pub fn watch_dir(&mut self, dir: &Path) -> io::Result<()> {
            self.state.add(dir)
        }

        pub fn watch_tree(&mut self, root: &Path, keep: Keep) -> io::Result<()> {
            let mut found = Vec::new();
            self.state.add_tree(root, &keep, &mut found)?;
            self.state.trees.push((root.to_path_buf(), keep));
            Ok(())
        }

        pub fn watched(&self) -> usize {
            self.state.wds.len()
        }

        pub fn drain(&mut self) -> io::Result<Vec<Change>> {
            let mut out = Vec::new();
            loop {
                match read(&mut self.ino, &mut self.buf, false) {
                    Ok(events) => {
                        for ev in events {
                            self.state.translate(ev, &mut out);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(out),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
        }

        pub fn spawn(
            self,
            mut on_change: Box<dyn FnMut(Vec<Change>) -> bool + Send>,
        ) -> io::Result<Running> {
            if self.state.wds.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no folder is watched: nothing would ever be reported",
                ));
            }
            let Watcher {
                mut ino,
                state,
                mut buf,
            } = self;
            let state = Arc::new(Mutex::new(state));
            let stop = Arc::new(AtomicBool::new(false));
            let (st, halt) = (state.clone(), stop.clone());
            std::thread::Builder::new()
                .name("kiwi-watch".into())
                .spawn(move || loop {
                    let events = match read(&mut ino, &mut buf, true) {
                        Ok(events) => events,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => return,
                    };
                    if halt.load(Ordering::SeqCst) {
                        return;
                    }
                    let mut changes = Vec::new();
                    let empty = {
                        let mut s = st.lock().unwrap_or_else(|p| p.into_inner());
                        for ev in events {
                            s.translate(ev, &mut changes);
                        }
                        s.wds.is_empty()
                    };
                    if !changes.is_empty() && !on_change(changes) {
                        return;
                    }
                    if empty {
                        return;
                    }
                })?;
            Ok(Running { state, stop })
        }
    }

    pub struct Running {
        state: Arc<Mutex<State>>,
        stop: Arc<AtomicBool>,
    }

    impl Drop for Running {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            // Removing the watches queues their `IGNORED` events: the thread wakes and ends.
            let wds: Vec<WatchDescriptor> = s.wds.drain().map(|(wd, _)| wd).collect();
            for wd in wds {
                let _ = s.watches.remove(wd);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Change, Keep};
    use std::io;
    use std::path::Path;

    fn unsupported<T>() -> io::Result<T> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "folder watching needs Linux (inotify)",
        ))
    }

    pub struct Watcher;

    impl Watcher {
        pub fn new() -> io::Result<Watcher> {
            unsupported()
        }
        pub fn watch_dir(&mut self, _dir: &Path) -> io::Result<()> {
            unsupported()
        }
        pub fn watch_tree(&mut self, _root: &Path, _keep: Keep) -> io::Result<()> {
            unsupported()
        }
        pub fn watched(&self) -> usize {
            0
        }
        pub fn drain(&mut self) -> io::Result<Vec<Change>> {
            unsupported()
        }
        pub fn spawn(
            self,
            _on_change: Box<dyn FnMut(Vec<Change>) -> bool + Send>,
        ) -> io::Result<Running> {
            unsupported()
        }
    }

    pub struct Running;
}

/// Watches folders and reports their [`Change`]s (see the module documentation).
pub struct Watcher(imp::Watcher);

/// A watcher running on its own thread ([`Watcher::spawn`]); dropping it stops the thread.
pub struct Running(#[allow(dead_code)] imp::Running);

impl Watcher {
    /// A watcher watching nothing yet. Fails where watching is not possible.
    pub fn new() -> std::io::Result<Watcher> {
        imp::Watcher::new().map(Watcher)
    }

    /// Watch the entries of `dir` (files and folders directly in it; not the folders'
    /// contents), and `dir` itself going away.
    pub fn watch_dir(&mut self, dir: &Path) -> std::io::Result<()> {
        self.0.watch_dir(dir)
    }

    /// Watch `root` and every folder below it for which `keep` (given the folder's path)
    /// holds; symbolic links are not followed. A folder created or moved in below `root`
    /// later (and kept) is watched as soon as its creation is seen, its files already there
    /// reported as [`Change::Created`]. Fails when `root` cannot be watched or the watch
    /// limit is reached (a folder vanishing meanwhile is skipped).
    pub fn watch_tree(
        &mut self,
        root: &Path,
        keep: impl Fn(&Path) -> bool + Send + Sync + 'static,
    ) -> std::io::Result<()> {
        self.0.watch_tree(root, std::sync::Arc::new(keep))
    }

    /// How many folders are watched.
    pub fn watched(&self) -> usize {
        self.0.watched()
    }

    /// Every change queued so far, without waiting (empty when nothing changed). An error
    /// means the watcher can no longer be trusted: look at the disk instead.
    pub fn drain(&mut self) -> std::io::Result<Vec<Change>> {
        self.0.drain()
    }

    /// Move the watcher to a thread (`kiwi-watch`) that waits for changes and calls
    /// `on_change` with each batch. It ends when `on_change` returns `false`, when the
    /// returned [`Running`] is dropped, or when every watched folder is gone. Fails when
    /// nothing is watched or no thread can be started.
    pub fn spawn(
        self,
        on_change: impl FnMut(Vec<Change>) -> bool + Send + 'static,
    ) -> std::io::Result<Running> {
        self.0.spawn(Box::new(on_change)).map(Running)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::time::Duration;

    fn has(changes: &[Change], want: &Change) -> bool {
        changes.iter().any(|c| c == want)
    }

    #[test]
    fn drain_reports_writes_creations_and_removals_of_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.md"), "a").unwrap();
        let mut w = Watcher::new().unwrap();
        w.watch_dir(d).unwrap();
        assert_eq!(w.drain().unwrap(), vec![]);
        std::fs::write(d.join("a.md"), "changed").unwrap();
        std::fs::write(d.join("b.md"), "new").unwrap();
        std::fs::remove_file(d.join("a.md")).unwrap();
        let c = w.drain().unwrap();
        assert!(has(&c, &Change::Modified(d.join("a.md"))), "{c:?}");
        assert!(has(&c, &Change::Created(d.join("b.md"))), "{c:?}");
        assert!(has(&c, &Change::Removed(d.join("a.md"))), "{c:?}");
        assert!(c.iter().any(Change::is_structural));
        // Drained: nothing twice.
        assert_eq!(w.drain().unwrap(), vec![]);
    }

    #[test]
    fn watch_dir_is_not_recursive_but_watch_tree_is_and_follows_new_folders() {
        let dir = tempfile::tempdir().unwrap();
        let flat = dir.path().join("flat");
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(flat.join("sub")).unwrap();
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        std::fs::create_dir_all(tree.join("__pycache__")).unwrap();
        let mut w = Watcher::new().unwrap();
        w.watch_dir(&flat).unwrap();
        w.watch_tree(&tree, |p| !p.ends_with("__pycache__"))
            .unwrap();
        assert_eq!(w.watched(), 3);
        std::fs::write(flat.join("sub/x"), "x").unwrap();
        std::fs::write(tree.join("__pycache__/x"), "x").unwrap();
        std::fs::write(tree.join("sub/x"), "x").unwrap();
        let c = w.drain().unwrap();
        assert_eq!(
            c.iter()
                .filter(|c| c.path() == Some(&flat.join("sub/x")))
                .count(),
            0
        );
        assert!(!c
            .iter()
            .any(|c| c.path() == Some(&tree.join("__pycache__/x"))));
        assert!(has(&c, &Change::Created(tree.join("sub/x"))), "{c:?}");
        // A folder created later, with a file written before the watcher saw it.
        std::fs::create_dir_all(tree.join("new/deeper")).unwrap();
        std::fs::write(tree.join("new/deeper/early"), "e").unwrap();
        let c = w.drain().unwrap();
        assert!(has(&c, &Change::Created(tree.join("new"))), "{c:?}");
        assert!(
            has(&c, &Change::Created(tree.join("new/deeper/early"))),
            "{c:?}"
        );
        std::fs::write(tree.join("new/deeper/late"), "l").unwrap();
        let c = w.drain().unwrap();
        assert!(
            has(&c, &Change::Created(tree.join("new/deeper/late"))),
            "{c:?}"
        );
        // A folder moved away is no longer reported under its old path.
        std::fs::rename(tree.join("new"), dir.path().join("away")).unwrap();
        let c = w.drain().unwrap();
        assert!(has(&c, &Change::Removed(tree.join("new"))), "{c:?}");
        std::fs::write(dir.path().join("away/deeper/after"), "a").unwrap();
        let c = w.drain().unwrap();
        assert!(
            !c.iter()
                .any(|c| c.path().is_some_and(|p| p.starts_with(&tree))),
            "{c:?}"
        );
    }

    #[test]
    fn a_watched_folder_that_is_deleted_is_reported_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("gone");
        std::fs::create_dir(&d).unwrap();
        let mut w = Watcher::new().unwrap();
        w.watch_dir(&d).unwrap();
        std::fs::remove_dir(&d).unwrap();
        let c = w.drain().unwrap();
        assert!(has(&c, &Change::Removed(d.clone())), "{c:?}");
        assert_eq!(w.watched(), 0);
    }

    #[test]
    fn watching_a_missing_folder_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Watcher::new().unwrap();
        assert!(w.watch_dir(&dir.path().join("missing")).is_err());
        assert!(w.watch_tree(&dir.path().join("missing"), |_| true).is_err());
    }

    #[test]
    fn spawned_watcher_delivers_batches_and_stops_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        let mut w = Watcher::new().unwrap();
        w.watch_tree(&d, |_| true).unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<Vec<Change>>();
        let running = w.spawn(move |batch| tx.send(batch).is_ok()).unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        // Wait for the folder to be seen (and watched) before writing in it.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while !has(&seen, &Change::Created(d.join("sub"))) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            seen.extend(
                rx.recv_timeout(left)
                    .expect("the folder's creation is reported"),
            );
        }
        std::fs::write(d.join("sub/f"), "x").unwrap();
        let mut seen = Vec::new();
        while !has(&seen, &Change::Created(d.join("sub/f"))) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            seen.extend(
                rx.recv_timeout(left)
                    .expect("a file of the new folder is reported"),
            );
        }
        drop(running);
        // The thread ends and drops its sender: the channel closes.
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(_) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(e) => panic!("the watcher thread did not end: {e}"),
            }
        }
    }

    #[test]
    fn spawning_a_watcher_that_watches_nothing_fails() {
        let w = Watcher::new().unwrap();
        assert!(w.spawn(|_| true).is_err());
    }
}
