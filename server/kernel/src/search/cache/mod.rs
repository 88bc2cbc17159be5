//! The search index kept on disk, in the user space's `cache/` folder, so that a new server
//! (an agent starts one per session) answers its first search without reading every item.
//!
//! One file per project (`cache/search-<hash of the project and user space>.idx`) holds:
//! a header (format, the kiwi version and a fingerprint of the builtin items, the project and
//! user space it describes, the extra spaces it was built with: a cache of other extra spaces
//! is not used), the listing it was built from (every item file with its sidecar
//! script, size and modification times; every folder that can hold items with its time),
//! and the index (terms, written forms, documents; the postings and lookups are made again
//! on reading). It is used only when the listing equals the disk's: a file added, changed or
//! removed since (a folder's time changes when a file is added or removed) makes it stale, and
//! it is built again and rewritten. A file that is not one (corrupt, truncated, of another
//! version, of another project, naming an item file the listing lacks) is ignored. Written
//! atomically (a temporary file renamed over it).

use super::{Doc, Index, Meta};
use crate::ids::{ItemType, Space};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A file's modification time and size, and its sidecar script's time.
pub type Stamp = (Option<SystemTime>, u64, Option<SystemTime>);
/// Every item file: its sidecar script and its stamp.
pub type Files = HashMap<PathBuf, (Option<PathBuf>, Stamp)>;
/// Every folder that can hold items, with its modification time.
pub type Dirs = HashMap<PathBuf, Option<SystemTime>>;
/// The extra spaces of a workspace, in precedence order: each space and its root.
pub type Extras = Vec<(Space, PathBuf)>;

const MAGIC: &[u8] = b"KIWI-SEARCH-INDEX\n";
const FORMAT: u32 = 2;

/// An index read from the cache, with the listing it describes.
#[derive(Debug)]
pub struct Cached {
    pub files: Files,
    pub dirs: Dirs,
    pub index: std::sync::Arc<Index>,
}

/// The stamp of an item file (and its script) now.
pub fn stamp(path: &Path, script: Option<&Path>) -> Stamp {
    let m = std::fs::metadata(path).ok();
    (
        m.as_ref().and_then(|m| m.modified().ok()),
        m.map(|m| m.len()).unwrap_or(0),
        script.and_then(|s| std::fs::metadata(s).ok()?.modified().ok()),
    )
}

fn dir_mtime(d: &Path) -> Option<SystemTime> {
    std::fs::symlink_metadata(d).ok()?.modified().ok()
}

/// The cache file of a project (`None`: no project) under a user space.
pub fn path_for(user: &Path, project: Option<&Path>) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (user, project).hash(&mut h);
    user.join("cache")
        .join(format!("search-{:016x}.idx", h.finish()))
}

/// What the cache depends on besides the files: the format, kiwi's version and the builtin
/// items and system catalogue it carries.
fn fingerprint() -> u64 {
    use std::hash::{Hash, Hasher};
    static FP: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *FP.get_or_init(|| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (FORMAT, crate::system::KIWI_VERSION).hash(&mut h);
        for item in crate::workspace::builtin_items() {
            (item.id.as_str(), item.text()).hash(&mut h);
        }
        for s in crate::system::CATALOGUE {
            (s.id, s.title, s.description).hash(&mut h);
        }
        h.finish()
    })
}

/// Whether the disk still holds exactly the listing: every folder's time and every file's
/// stamp (stated in parallel).
pub fn listing_is_current(files: &Files, dirs: &Dirs) -> bool {
    use rayon::prelude::*;
    dirs.par_iter().all(|(d, m)| dir_mtime(d) == *m)
        && files
            .par_iter()
            .all(|(p, (script, s))| stamp(p, script.as_deref()) == *s)
}

/// Read the cache of a project; `None` when there is none or it is not a valid one for this
/// project, user space and kiwi (its listing is not compared with the disk here).
pub fn read(user: &Path, project: Option<&Path>, extras: &Extras) -> Option<Cached> {
    let bytes = std::fs::read(path_for(user, project)).ok()?;
    decode(&bytes, user, project, extras)
}

/// Read the cache of a project and compare its listing with the disk, the two at once (the
/// index is decoded while the files are stated); `Some` only when it is valid and current,
/// with the moment the comparison began and what `before_check` made of the listing just
/// before it began (a watch of its folders: whatever changes after is in its queue).
pub fn read_current<T>(
    user: &Path,
    project: Option<&Path>,
    extras: &Extras,
    before_check: impl FnOnce(&Files, &Dirs) -> T,
) -> Option<(Cached, std::time::Instant, T)> {
    let bytes = std::fs::read(path_for(user, project)).ok()?;
    let mut r = R(&bytes);
    let (files, dirs) = decode_listing(&mut r, user, project, extras)?;
    let made = before_check(&files, &dirs);
    let start = std::time::Instant::now();
    let (current, index) = rayon::join(
        || listing_is_current(&files, &dirs),
        || decode_index(&mut r, &files, extras),
    );
    if !current {
        return None;
    }
    Some((
        Cached {
            index: std::sync::Arc::new(index?),
            files,
            dirs,
        },
        start,
        made,
    ))
}

/// [`write`] on a thread of its own (one write of a cache file at a time: a write asked for
/// while one is under way is skipped; the next index built writes it).
pub fn write_in_background(
    user: PathBuf,
    project: Option<PathBuf>,
    extras: Extras,
    files: Files,
    dirs: Dirs,
    index: std::sync::Arc<Index>,
) {
    use std::collections::HashSet;
    let path = path_for(&user, project.as_deref());
    {
        let mut w = WRITING.lock().unwrap_or_else(|p| p.into_inner());
        if !w.get_or_insert_with(HashSet::new).insert(path.clone()) {
            return;
        }
    }
    let spawned = std::thread::Builder::new()
        .name("kiwi-search-cache".into())
        .spawn({
            let path = path.clone();
            move || {
                let _ = write(&user, project.as_deref(), &extras, &files, &dirs, &index);
                let mut w = WRITING.lock().unwrap_or_else(|p| p.into_inner());
                w.get_or_insert_with(HashSet::new).remove(&path);
            }
        });
    if spawned.is_err() {
        let mut w = WRITING.lock().unwrap_or_else(|p| p.into_inner());
        w.get_or_insert_with(HashSet::new).remove(&path);
    }
}

/// The cache files being written in the background.
static WRITING: std::sync::Mutex<Option<std::collections::HashSet<PathBuf>>> =
    std::sync::Mutex::new(None);

/// Wait (at most `limit`) until no cache file is being written in the background: what a
/// process calls before it exits, so that the next one finds the index it built (`kiwi
/// search` exited before, and the next run built the index again). `true` when none is.
pub fn wait_for_writes(limit: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + limit;
    loop {
        let busy = WRITING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|w| !w.is_empty());
        if !busy {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Write the cache of a project atomically. Errors are the caller's to ignore: a cache that
/// cannot be written is rebuilt next time.
pub fn write(
    user: &Path,
    project: Option<&Path>,
    extras: &Extras,
    files: &Files,
    dirs: &Dirs,
    index: &Index,
) -> std::io::Result<()> {
    let Some(bytes) = encode(user, project, extras, files, dirs, index) else {
        return Ok(()); // a path that is not UTF-8: not cached
    };
    let path = path_for(user, project);
    let dir = path.parent().unwrap_or(user);
    std::fs::create_dir_all(dir)?;
    // A temporary file of this process and thread, renamed over the cache: a reader sees the
    // old file or the new one, never a part.
    let tmp = dir.join(format!(
        ".{}.{}.{:?}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("search"),
        std::process::id(),
        std::thread::current().id()
    ));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, &bytes)?;
        f.sync_data()?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

// ------------------------------------------------------------------------------ encoding

struct W(Vec<u8>);

impl W {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u32(n as u32);
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    fn path(&mut self, p: &Path) -> Option<()> {
        self.str(p.to_str()?);
        Some(())
    }
    fn time(&mut self, t: Option<SystemTime>) {
        match t.map(|t| t.duration_since(SystemTime::UNIX_EPOCH)) {
            None => self.u8(0),
            Some(Ok(d)) => {
                self.u8(1);
                self.u64(d.as_secs());
                self.u32(d.subsec_nanos());
            }
            Some(Err(e)) => {
                self.u8(2);
                self.u64(e.duration().as_secs());
                self.u32(e.duration().subsec_nanos());
            }
        }
    }
}

struct R<'a>(&'a [u8]);

impl<'a> R<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn f32(&mut self) -> Option<f32> {
        let v = f32::from_le_bytes(self.take(4)?.try_into().ok()?);
        v.is_finite().then_some(v)
    }
    /// A count of things of at least `min` bytes each: never more than the bytes left allow.
    fn len(&mut self, min: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.saturating_mul(min.max(1)) <= self.0.len()).then_some(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = self.len(1)?;
        std::str::from_utf8(self.take(n)?).ok()
    }
    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_string)
    }
    fn opt_string(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.string()?)),
            _ => None,
        }
    }
    fn path(&mut self) -> Option<PathBuf> {
        self.str().map(PathBuf::from)
    }
    fn time(&mut self) -> Option<Option<SystemTime>> {
        let tag = self.u8()?;
        if tag == 0 {
            return Some(None);
        }
        let d = Duration::new(self.u64()?, self.u32()?);
        match tag {
            1 => SystemTime::UNIX_EPOCH.checked_add(d).map(Some),
            2 => SystemTime::UNIX_EPOCH.checked_sub(d).map(Some),
            _ => None,
        }
    }
}

fn type_no(t: ItemType) -> u8 {
    ItemType::ALL.iter().position(|x| *x == t).unwrap_or(0) as u8
}

fn type_of(n: u8) -> Option<ItemType> {
    ItemType::ALL.get(n as usize).copied()
}

/// A space as written: 0 none (system items), 1 to 3 the spaces every workspace has, 4 and
/// the extra space's number among the extras (`None`: an extra space not among them).
fn write_space(w: &mut W, s: Option<Space>, extras: &Extras) -> Option<()> {
    match s {
        None => w.u8(0),
        Some(Space::Extra(_)) => {
            let i = extras.iter().position(|(x, _)| Some(*x) == s)?;
            w.u8(4);
            w.u32(i as u32);
        }
        Some(s) => w.u8(Space::ALL.iter().position(|x| *x == s)? as u8 + 1),
    }
    Some(())
}

fn read_space(r: &mut R, extras: &Extras) -> Option<Option<Space>> {
    match r.u8()? {
        0 => Some(None),
        4 => extras.get(r.u32()? as usize).map(|(s, _)| Some(*s)),
        n => Space::ALL.get(n as usize - 1).copied().map(Some),
    }
}

fn encode(
    user: &Path,
    project: Option<&Path>,
    extras: &Extras,
    files: &Files,
    dirs: &Dirs,
    idx: &Index,
) -> Option<Vec<u8>> {
    let mut w = W(Vec::with_capacity(1 << 20));
    w.0.extend_from_slice(MAGIC);
    w.u32(FORMAT);
    w.u64(fingerprint());
    w.path(user)?;
    match project {
        None => w.u8(0),
        Some(p) => {
            w.u8(1);
            w.path(p)?;
        }
    }
    w.len(extras.len());
    for (s, root) in extras {
        w.str(s.as_str());
        w.path(root)?;
    }
    let mut fs: Vec<_> = files.iter().collect();
    fs.sort_by(|a, b| a.0.cmp(b.0));
    w.len(fs.len());
    for (p, (script, (m, size, sm))) in fs {
        w.path(p)?;
        match script {
            None => w.u8(0),
            Some(s) => {
                w.u8(1);
                w.path(s)?;
            }
        }
        w.time(*m);
        w.u64(*size);
        w.time(*sm);
    }
    let mut ds: Vec<_> = dirs.iter().collect();
    ds.sort_by(|a, b| a.0.cmp(b.0));
    w.len(ds.len());
    for (d, m) in ds {
        w.path(d)?;
        w.time(*m);
    }
    // The index.
    w.f32(idx.avg_len);
    w.len(idx.terms.len());
    for t in &idx.terms {
        w.str(t);
    }
    w.len(idx.forms.len());
    for (f, t) in &idx.forms {
        w.str(f);
        w.u32(*t);
    }
    w.len(idx.docs.len());
    for d in &idx.docs {
        w.u8(type_no(d.item_type));
        w.str(&d.id);
        write_space(&mut w, d.source, extras)?;
        match &d.path {
            None => w.u8(0),
            Some(p) => {
                w.u8(1);
                w.path(p)?;
            }
        }
        w.str(&d.meta.name);
        w.opt_str(d.meta.description.as_deref());
        w.opt_str(d.meta.category.as_deref());
        w.opt_str(d.meta.version.as_deref());
        w.len(d.meta.tags.len());
        for t in &d.meta.tags {
            w.str(t);
        }
        w.len(d.tf.len());
        for (t, f) in d.tf.iter() {
            w.u32(*t);
            w.f32(*f);
        }
        w.len(d.name_terms.len());
        for t in d.name_terms.iter() {
            w.u32(*t);
        }
        w.f32(d.len);
    }
    let mut winners: Vec<_> = idx.winners.iter().collect();
    winners.sort_by(|a, b| (type_no(a.0 .0), &a.0 .1).cmp(&(type_no(b.0 .0), &b.0 .1)));
    w.len(winners.len());
    for ((t, id), s) in winners {
        w.u8(type_no(*t));
        w.str(id);
        write_space(&mut w, Some(*s), extras)?;
    }
    Some(w.0)
}

fn decode(bytes: &[u8], user: &Path, project: Option<&Path>, extras: &Extras) -> Option<Cached> {
    let mut r = R(bytes);
    let (files, dirs) = decode_listing(&mut r, user, project, extras)?;
    let index = decode_index(&mut r, &files, extras)?;
    Some(Cached {
        files,
        dirs,
        index: std::sync::Arc::new(index),
    })
}

/// The header and the listing (`None` also when the cache was built with other extra spaces
/// than `extras`, the workspace's now).
fn decode_listing(
    r: &mut R,
    user: &Path,
    project: Option<&Path>,
    extras: &Extras,
) -> Option<(Files, Dirs)> {
    if r.take(MAGIC.len())? != MAGIC || r.u32()? != FORMAT || r.u64()? != fingerprint() {
        return None;
    }
    if r.path()? != user {
        return None;
    }
    let p = match r.u8()? {
        0 => None,
        1 => Some(r.path()?),
        _ => return None,
    };
    if p.as_deref() != project {
        return None;
    }
    if r.len(8)? != extras.len() {
        return None;
    }
    for (s, root) in extras {
        if r.str()? != s.as_str() || r.path()? != *root {
            return None;
        }
    }
    let n = r.len(2)?;
    let mut files = Files::with_capacity(n);
    for _ in 0..n {
        let p = r.path()?;
        let script = match r.u8()? {
            0 => None,
            1 => Some(r.path()?),
            _ => return None,
        };
        let stamp = (r.time()?, r.u64()?, r.time()?);
        files.insert(p, (script, stamp));
    }
    let n = r.len(2)?;
    let mut dirs = Dirs::with_capacity(n);
    for _ in 0..n {
        let d = r.path()?;
        dirs.insert(d, r.time()?);
    }
    Some((files, dirs))
}

/// The index, after the listing (every item file it names is listed).
fn decode_index(r: &mut R, files: &Files, extras: &Extras) -> Option<Index> {
    let mut idx = Index {
        avg_len: r.f32()?,
        ..Index::default()
    };
    let n = r.len(4)?;
    idx.terms.reserve_exact(n);
    idx.vocab.reserve(n);
    for i in 0..n {
        let t = r.string()?;
        if idx.vocab.insert(t.clone(), i as u32).is_some() {
            return None;
        }
        idx.terms.push(t);
    }
    let terms = idx.terms.len() as u32;
    let n = r.len(8)?;
    idx.forms.reserve_exact(n);
    for _ in 0..n {
        let f = r.string()?;
        let t = r.u32()?;
        if t >= terms {
            return None;
        }
        idx.forms.push((f, t));
    }
    idx.postings = vec![Vec::new(); terms as usize];
    let n = r.len(16)?;
    idx.docs.reserve_exact(n);
    for doc_no in 0..n as u32 {
        let item_type = type_of(r.u8()?)?;
        let id = r.string()?;
        let source = read_space(r, extras)?;
        let path = match r.u8()? {
            0 => None,
            1 => Some(r.path()?),
            _ => return None,
        };
        // An item of the project or user space is one of the listed files: the cache cannot
        // name a file the listing (compared with the disk) lacks.
        if matches!(source, Some(Space::Project | Space::User))
            && !path.as_ref().is_some_and(|p| files.contains_key(p))
        {
            return None;
        }
        let name = r.string()?;
        let description = r.opt_string()?;
        let category = r.opt_string()?;
        let version = r.opt_string()?;
        let k = r.len(4)?;
        let mut tags = Vec::with_capacity(k);
        for _ in 0..k {
            tags.push(r.string()?);
        }
        let k = r.len(8)?;
        let mut tf = Vec::with_capacity(k);
        let mut last = None;
        for _ in 0..k {
            let t = r.u32()?;
            if t >= terms || last.is_some_and(|l| l >= t) {
                return None;
            }
            last = Some(t);
            tf.push((t, r.f32()?));
            idx.postings[t as usize].push(doc_no);
        }
        let k = r.len(4)?;
        let mut name_terms = Vec::with_capacity(k);
        for _ in 0..k {
            let t = r.u32()?;
            if t >= terms {
                return None;
            }
            name_terms.push(t);
        }
        let len = r.f32()?;
        idx.docs.push(Doc {
            item_type,
            id,
            source,
            path,
            meta: Meta {
                name,
                description,
                category,
                version,
                tags,
            },
            tf: tf.into_boxed_slice(),
            name_terms: name_terms.into_boxed_slice(),
            len,
        });
    }
    let n = r.len(6)?;
    for _ in 0..n {
        let t = type_of(r.u8()?)?;
        let id = r.string()?;
        let s = read_space(r, extras)??;
        idx.winners.insert((t, id), s);
    }
    if !r.0.is_empty() {
        return None;
    }
    idx.finish_lookups();
    Some(idx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Host;
    use crate::workspace::Workspace;

    const NO_EXTRAS: Extras = Vec::new();

    fn sample() -> (tempfile::TempDir, PathBuf, PathBuf, Index, Files, Dirs) {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("proj");
        let user = dir.path().join("user");
        for (rel, text) in [
            (
                "tools/text/word_count.py",
                "__version__ = \"1.0.0\"\n__executor_id__ = \"subprocess\"\n__tool_description__ = \"Count words\"\n",
            ),
            (
                "knowledge/web/deploy.md",
                "---\ntitle: Deploying\ntags: [deploy, web]\n---\n\nHow to ship greetings.\n",
            ),
        ] {
            let p = proj.join(".ai").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        // The cache folder exists (`kiwi init` makes it): creating it changes the user space's
        // time, which the listing holds.
        std::fs::create_dir_all(user.join("cache")).unwrap();
        let host = Host::for_tests(&[("KIWI_USERSPACE_DIR", user.to_str().unwrap())]);
        let ws = Workspace::load(Some(proj.clone()), host);
        let idx = Index::build(&ws);
        let mut files = Files::new();
        let mut dirs = Dirs::new();
        for root in [user.clone(), proj.join(".ai")] {
            dirs.insert(root.clone(), dir_mtime(&root));
            for f in crate::workspace::discover(&root) {
                let s = stamp(&f.path, f.script.as_deref());
                files.insert(f.path, (f.script, s));
            }
        }
        (dir, user, proj, idx, files, dirs)
    }

    fn answers(idx: &Index) -> String {
        let mut out = String::new();
        for q in ["count", "wrod", "greetign", "deploy web", "*", "subprocess"] {
            for t in ItemType::ALL {
                out.push_str(&format!("{:?}\n", idx.search_all(t, q, None, 50)));
            }
        }
        out
    }

    /// What is read back answers every query as the index that was written.
    #[test]
    fn round_trip_answers_the_same() {
        let (_d, user, proj, idx, files, dirs) = sample();
        write(&user, Some(&proj), &NO_EXTRAS, &files, &dirs, &idx).unwrap();
        let c = read(&user, Some(&proj), &NO_EXTRAS).expect("the cache reads back");
        assert_eq!(c.files, files);
        assert_eq!(c.dirs, dirs);
        assert!(listing_is_current(&c.files, &c.dirs));
        assert_eq!(answers(&c.index), answers(&idx));
        let (now, _, _) = read_current(&user, Some(&proj), &NO_EXTRAS, |_, _| ()).expect("current");
        assert_eq!(answers(&now.index), answers(&idx));
        assert_eq!(c.index.terms, idx.terms);
        assert_eq!(c.index.postings, idx.postings);
        assert_eq!(c.index.forms, idx.forms);
        assert_eq!(c.index.winners, idx.winners);
        assert_eq!(format!("{:?}", c.index.docs), format!("{:?}", idx.docs));
    }

    /// A cache of another project or user space, corrupt, truncated or with a byte changed is
    /// not used (and never panics); a file changed, added or removed makes the listing stale.
    #[test]
    fn foreign_corrupt_and_stale_caches_are_refused() {
        let (d, user, proj, idx, files, dirs) = sample();
        write(&user, Some(&proj), &NO_EXTRAS, &files, &dirs, &idx).unwrap();
        assert!(read(&user, None, &NO_EXTRAS).is_none());
        // Built without extra spaces: not used where the configuration names one now.
        let one = vec![(
            Space::Extra(crate::ids::ExtraSpace::new(0, "extra")),
            d.path().join("extra/.ai"),
        )];
        assert!(read(&user, Some(&proj), &one).is_none());
        assert!(read(&d.path().join("other"), Some(&proj), &NO_EXTRAS).is_none());
        let path = path_for(&user, Some(&proj));
        let good = std::fs::read(&path).unwrap();
        // Another project's cache copied over this one's name.
        let other = encode(
            &user,
            Some(&d.path().join("x")),
            &NO_EXTRAS,
            &files,
            &dirs,
            &idx,
        )
        .unwrap();
        std::fs::write(&path, &other).unwrap();
        assert!(read(&user, Some(&proj), &NO_EXTRAS).is_none());
        for cut in [0, 10, good.len() / 2, good.len() - 1] {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert!(
                read(&user, Some(&proj), &NO_EXTRAS).is_none(),
                "cut at {cut}"
            );
        }
        // Every byte changed in turn (a sample): refused or read, never a panic; what is read
        // names only listed files.
        for i in (0..good.len()).step_by(13) {
            let mut bad = good.clone();
            bad[i] ^= 0x5a;
            if let Some(c) = decode(&bad, &user, Some(&proj), &NO_EXTRAS) {
                for doc in &c.index.docs {
                    if matches!(doc.source, Some(Space::Project | Space::User)) {
                        assert!(c.files.contains_key(doc.path.as_ref().unwrap()));
                    }
                }
            }
        }
        // A listed file that names no real item: refused when the listing lacks the path.
        let mut fewer = files.clone();
        let gone = fewer.keys().next().unwrap().clone();
        fewer.remove(&gone);
        let lying = encode(&user, Some(&proj), &NO_EXTRAS, &fewer, &dirs, &idx).unwrap();
        assert!(decode(&lying, &user, Some(&proj), &NO_EXTRAS).is_none());
        // Stale listings.
        std::fs::write(&path, &good).unwrap();
        let c = read(&user, Some(&proj), &NO_EXTRAS).unwrap();
        assert!(listing_is_current(&c.files, &c.dirs));
        std::thread::sleep(Duration::from_millis(20));
        let f = proj.join(".ai/tools/text/word_count.py");
        std::fs::write(&f, "__version__ = \"2.0.0\"\n").unwrap();
        assert!(!listing_is_current(&c.files, &c.dirs), "a changed file");
        assert!(
            read_current(&user, Some(&proj), &NO_EXTRAS, |_, _| ()).is_none(),
            "a changed file"
        );
        let (_d2, user2, proj2, idx2, files2, dirs2) = sample();
        assert!(listing_is_current(&files2, &dirs2));
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(proj2.join(".ai/new.md"), "x").unwrap();
        assert!(
            !listing_is_current(&files2, &dirs2),
            "a file added to a root"
        );
        let _ = (user2, idx2);
    }
}
