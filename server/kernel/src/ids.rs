//! Item types, spaces and item ids.

use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemType {
    Directive,
    Tool,
    Knowledge,
    System,
    /// An Agent Skill: a folder with a `SKILL.md` (see [`crate::skill`]); its id is the
    /// folder's name. Skills live in their own folders, not in a type folder of a space.
    Skill,
}

impl ItemType {
    pub const ALL: [ItemType; 5] = [
        ItemType::Directive,
        ItemType::Tool,
        ItemType::Knowledge,
        ItemType::System,
        ItemType::Skill,
    ];
    /// The types that live in files.
    pub const FILE_TYPES: [ItemType; 3] =
        [ItemType::Directive, ItemType::Tool, ItemType::Knowledge];

    pub fn as_str(self) -> &'static str {
        match self {
            ItemType::Directive => "directive",
            ItemType::Tool => "tool",
            ItemType::Knowledge => "knowledge",
            ItemType::System => "system",
            ItemType::Skill => "skill",
        }
    }
    pub fn parse(s: &str) -> Option<ItemType> {
        ItemType::ALL.into_iter().find(|t| t.as_str() == s)
    }
    /// The folder of a space that holds items of this type.
    pub fn folder(self) -> Option<&'static str> {
        match self {
            ItemType::Directive => Some("directives"),
            ItemType::Tool => Some("tools"),
            ItemType::Knowledge => Some("knowledge"),
            ItemType::System | ItemType::Skill => None,
        }
    }
}

impl std::fmt::Display for ItemType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an item lives. The order is the precedence: `Project` wins over `User` over the
/// extra spaces (in their configured order) over `Builtin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Space {
    Project,
    User,
    /// A read-only space named in `spaces:` of a `config.yaml` or in `KIWI_SPACES`.
    Extra(ExtraSpace),
    Builtin,
}

/// An extra space: its rank among the extra spaces (0 wins) and its name (unique in a
/// workspace; shown wherever a space is named).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExtraSpace {
    pub rank: u16,
    pub name: &'static str,
}

impl ExtraSpace {
    /// An extra space of this rank and name (the name is interned: a process keeps one copy
    /// of each name it ever saw).
    pub fn new(rank: u16, name: &str) -> ExtraSpace {
        ExtraSpace {
            rank,
            name: intern(name),
        }
    }
}

fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

impl Space {
    /// The spaces every workspace has (extra spaces come from configuration).
    pub const ALL: [Space; 3] = [Space::Project, Space::User, Space::Builtin];
    pub fn as_str(self) -> &'static str {
        match self {
            Space::Project => "project",
            Space::User => "user",
            Space::Extra(e) => e.name,
            Space::Builtin => "builtin",
        }
    }
    /// One of the spaces every workspace has, by name (see `Workspace::parse_space` for the
    /// extra spaces too).
    pub fn parse(s: &str) -> Option<Space> {
        Space::ALL.into_iter().find(|t| t.as_str() == s)
    }
    /// Whether items may be written to this space (the project and the user space only).
    pub fn is_writable(self) -> bool {
        matches!(self, Space::Project | Space::User)
    }
}

impl Serialize for Space {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Space {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an item id was refused (K006).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdError {
    Empty,
    Absolute,
    ClimbsOut,
    Backslash,
    Nul,
    EmptySegment,
    ControlCharacter,
}

impl std::fmt::Display for IdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            IdError::Empty => "the id is empty",
            IdError::Absolute => {
                "an item id is relative to its type folder and cannot start with `/`"
            }
            IdError::ClimbsOut => "an item id cannot contain `..` or `.` segments",
            IdError::Backslash => "an item id uses `/` separators, never `\\`",
            IdError::Nul => "an item id cannot contain a NUL character",
            IdError::EmptySegment => {
                "an item id cannot contain an empty segment (`//` or a trailing `/`)"
            }
            IdError::ControlCharacter => "an item id cannot contain control characters",
        };
        f.write_str(s)
    }
}

/// Check an item id before any file system access: never a path that climbs out,
/// is absolute, or holds a backslash, a NUL or an empty segment.
pub fn validate_id(id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty);
    }
    if id.contains('\0') {
        return Err(IdError::Nul);
    }
    if id.contains('\\') {
        return Err(IdError::Backslash);
    }
    if id.starts_with('/')
        || (id.len() >= 2 && id.as_bytes()[1] == b':' && id.as_bytes()[0].is_ascii_alphabetic())
    {
        return Err(IdError::Absolute);
    }
    if id.chars().any(|c| c.is_control()) {
        return Err(IdError::ControlCharacter);
    }
    for seg in id.split('/') {
        if seg.is_empty() {
            return Err(IdError::EmptySegment);
        }
        if seg == ".." || seg == "." {
            return Err(IdError::ClimbsOut);
        }
    }
    Ok(())
}

/// The last segment of an id (`runtimes/python_runtime` -> `python_runtime`).
pub fn bare_name(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

/// The item id of a file below its type folder: the relative path without the extension.
pub fn id_from_relative(rel: &Path) -> Option<String> {
    let mut parts = Vec::new();
    let comps: Vec<_> = rel.components().collect();
    for (i, c) in comps.iter().enumerate() {
        let std::path::Component::Normal(s) = c else {
            return None;
        };
        let s = s.to_str()?;
        if i + 1 == comps.len() {
            let stem = Path::new(s).file_stem()?.to_str()?;
            parts.push(stem.to_string());
        } else {
            parts.push(s.to_string());
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

/// Check that `path`, after symlinks are resolved, lies inside `root` (also resolved).
/// Returns the canonical path.
pub fn confine(root: &Path, path: &Path) -> std::io::Result<PathBuf> {
    let root = root.canonicalize()?;
    let real = path.canonicalize()?;
    if real.starts_with(&root) {
        Ok(real)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} resolves outside its space ({})",
                path.display(),
                root.display()
            ),
        ))
    }
}

/// Whether `path` lies under `root` with no symlink and no `..` between them (the file
/// itself included): it is then certainly inside the space, which costs one `lstat` per
/// component below the root instead of resolving both paths ([`confine`]). `false` means
/// "resolve to know".
pub fn inside_without_links(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    if rel.as_os_str().is_empty()
        || !rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return false;
    }
    let mut p = root.to_path_buf();
    for c in rel.components() {
        p.push(c);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if !m.file_type().is_symlink() => {}
            _ => return false,
        }
    }
    true
}

/// What a file that is not a regular file is, for messages.
fn file_kind(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Read a whole file that must be a regular file. A named pipe, socket or device is refused
/// without waiting: its type is checked before it is opened, the file is opened without
/// blocking (`O_NONBLOCK`: opening a FIFO for reading otherwise waits for a writer) and its
/// type checked again on the open descriptor (it may have been swapped in between).
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    read_regular_at_most(path, u64::MAX)
}

/// [`read_regular`], reading no more than `max` bytes of the file.
pub fn read_regular_at_most(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let (file, len) = open_regular_sized(path)?;
    read_sized(file, len, max)
}

/// Open a file for reading that must be a regular file (see [`read_regular`]).
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    open_regular_sized(path).map(|(file, _)| file)
}

/// [`open_regular`], with the file's size as its descriptor said.
fn open_regular_sized(path: &Path) -> std::io::Result<(std::fs::File, u64)> {
    let refuse = |t| not_regular(path, t);
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(refuse(meta.file_type()));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse(meta.file_type()));
    }
    Ok((file, meta.len()))
}

/// The error for a file that is not a regular file.
fn not_regular(path: &Path, t: std::fs::FileType) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} is {}, not a regular file; an item is read from a regular file only",
            path.display(),
            file_kind(t)
        ),
    )
}

/// Read `path`, which lies below `root` through plain names, in one pass when no symbolic
/// link is on the way: the kernel resolves it beneath `root` and refuses any link (Linux's
/// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), so the file is inside the space
/// without an `lstat` per component ([`inside_without_links`]) nor resolving both paths
/// ([`confine`]). Opened without blocking, its type checked on the descriptor, as by
/// [`read_regular`]. `None`: not known this way (a link on the way, the file missing, a
/// system without `openat2`): resolve as before, which also says why.
pub fn read_beneath(root: &Path, path: &Path) -> Option<std::io::Result<Vec<u8>>> {
    read_beneath_at_most(root, path, u64::MAX)
}

/// [`read_beneath`], reading no more than `max` bytes of the file.
pub fn read_beneath_at_most(
    root: &Path,
    path: &Path,
    max: u64,
) -> Option<std::io::Result<Vec<u8>>> {
    let opened = open_beneath_sized(root, path)?;
    Some(opened.and_then(|(file, len)| read_sized(file, len, max)))
}

/// The whole of an open file whose descriptor said it holds `len` bytes: read into a buffer
/// of that size and one byte more (a file that grew since is read to its end all the same).
/// Through `Take`, which reads into the buffer it is given: `read_to_end` on a `File` asks
/// the descriptor its size and position again, two system calls more per file (24,000 in a
/// load of 12,000 items).
fn read_sized(file: std::fs::File, len: u64, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let len = len.min(max);
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Open `path`, which lies below `root` through plain names, as [`read_beneath`] does: in one
/// call, beneath `root`, no link on the way, a regular file (checked on the descriptor).
/// `None`: not known this way; resolve as before.
pub fn open_beneath_regular(root: &Path, path: &Path) -> Option<std::io::Result<std::fs::File>> {
    Some(open_beneath_sized(root, path)?.map(|(file, _)| file))
}

/// [`open_beneath_regular`], with the file's size as its descriptor said.
fn open_beneath_sized(root: &Path, path: &Path) -> Option<std::io::Result<(std::fs::File, u64)>> {
    let rel = path.strip_prefix(root).ok()?;
    if rel.as_os_str().is_empty()
        || !rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    let file = open_beneath(root, rel)?;
    Some(match file.metadata() {
        Ok(m) if m.is_file() => Ok((file, m.len())),
        Ok(m) => Err(not_regular(path, m.file_type())),
        Err(e) => Err(e),
    })
}

#[cfg(target_os = "linux")]
fn open_beneath(root: &Path, rel: &Path) -> Option<std::fs::File> {
    use std::ffi::CString;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let c_root = CString::new(root.as_os_str().as_bytes()).ok()?;
    let c_rel = CString::new(rel.as_os_str().as_bytes()).ok()?;
    // SAFETY: a NUL-terminated path; the descriptor returned is owned below.
    let dir = unsafe {
        libc::open(
            c_root.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return None;
    }
    // SAFETY: `dir` is a descriptor this function opened and nothing else owns.
    let dir = unsafe { OwnedFd::from_raw_fd(dir) };
    // SAFETY: `open_how` is plain integers; zero is "nothing asked" for each.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    use std::os::fd::AsRawFd;
    // SAFETY: valid descriptor, NUL-terminated path, `how` of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c_rel.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a descriptor the kernel just opened for this function.
    Some(std::fs::File::from(unsafe {
        OwnedFd::from_raw_fd(fd as std::os::fd::RawFd)
    }))
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(_root: &Path, _rel: &Path) -> Option<std::fs::File> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert!(validate_id("runtimes/python_runtime").is_ok());
        assert_eq!(validate_id("../etc/passwd"), Err(IdError::ClimbsOut));
        assert_eq!(validate_id("a/../../b"), Err(IdError::ClimbsOut));
        assert_eq!(validate_id("/etc/passwd"), Err(IdError::Absolute));
        assert_eq!(validate_id("C:/x"), Err(IdError::Absolute));
        assert_eq!(validate_id("a\\b"), Err(IdError::Backslash));
        assert_eq!(validate_id("a//b"), Err(IdError::EmptySegment));
        assert_eq!(validate_id("a/"), Err(IdError::EmptySegment));
        assert_eq!(validate_id("a\0"), Err(IdError::Nul));
        assert_eq!(validate_id(""), Err(IdError::Empty));
        assert_eq!(bare_name("runtimes/python_runtime"), "python_runtime");
        assert_eq!(
            id_from_relative(Path::new("runtimes/python_runtime.py")).as_deref(),
            Some("runtimes/python_runtime")
        );
    }

    /// A named pipe is refused at once (opening it would wait for a writer), a regular
    /// file is read.
    #[cfg(unix)]
    #[test]
    fn read_regular_refuses_a_fifo_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p.md");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
        std::fs::write(dir.path().join("f.md"), "x").unwrap();
        assert_eq!(read_regular(&dir.path().join("f.md")).unwrap(), b"x");
        assert!(read_regular(dir.path()).is_err());
    }

    /// One pass for a plain file below the root; a link on the way (even one that stays
    /// inside), a climb out or a file outside are left to the resolving path (`None`); a
    /// named pipe is refused at once, without waiting.
    #[cfg(target_os = "linux")]
    #[test]
    fn read_beneath_reads_plain_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let space = dir.path().join("space");
        std::fs::create_dir_all(space.join("tools/a")).unwrap();
        std::fs::write(space.join("tools/a/ok.py"), "x").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        assert_eq!(
            read_beneath(&space, &space.join("tools/a/ok.py"))
                .unwrap()
                .unwrap(),
            b"x"
        );
        std::os::unix::fs::symlink(space.join("tools/a"), space.join("tools/b")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), space.join("tools/s.py"))
            .unwrap();
        assert!(read_beneath(&space, &space.join("tools/b/ok.py")).is_none());
        assert!(read_beneath(&space, &space.join("tools/s.py")).is_none());
        assert!(read_beneath(&space, &space.join("../secret.txt")).is_none());
        assert!(read_beneath(&space, &dir.path().join("secret.txt")).is_none());
        assert!(read_beneath(&space, &space.join("tools/missing.py")).is_none());
        let fifo = space.join("tools/p.py");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_beneath(&space, &fifo).unwrap().unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
        assert!(read_beneath(&space, &space.join("tools")).unwrap().is_err());
    }

    #[test]
    fn confine_refuses_symlink_escape() {
        let dir = tempfile::tempdir().unwrap();
        let space = dir.path().join("space");
        std::fs::create_dir_all(&space).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "x").unwrap();
        std::fs::write(space.join("ok.txt"), "x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), space.join("link.txt")).unwrap();
        assert!(confine(&space, &space.join("ok.txt")).is_ok());
        assert!(inside_without_links(&space, &space.join("ok.txt")));
        assert!(!inside_without_links(&space, &space.join("../secret.txt")));
        assert!(!inside_without_links(
            &space,
            &dir.path().join("secret.txt")
        ));
        #[cfg(unix)]
        {
            assert!(!inside_without_links(&space, &space.join("link.txt")));
            std::os::unix::fs::symlink(dir.path(), space.join("dir")).unwrap();
            assert!(!inside_without_links(&space, &space.join("dir/secret.txt")));
        }
        #[cfg(unix)]
        assert!(confine(&space, &space.join("link.txt")).is_err());
    }
    /// A file read whole whatever its size did after it was opened: grown, shrunk, empty.
    #[test]
    fn a_file_is_read_to_its_end_not_to_the_size_first_seen() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.md");
        for (first, then) in [("abc", "abcdef"), ("abcdef", "ab"), ("", "x"), ("x", "")] {
            std::fs::write(&p, first).unwrap();
            let (file, len) = open_regular_sized(&p).unwrap();
            assert_eq!(len, first.len() as u64);
            let mut w = std::fs::File::create(&p).unwrap();
            w.write_all(then.as_bytes()).unwrap();
            assert_eq!(read_sized(file, len, u64::MAX).unwrap(), then.as_bytes());
        }
        let big = "y".repeat(100_000);
        std::fs::write(&p, &big).unwrap();
        assert_eq!(read_regular(&p).unwrap(), big.as_bytes());
    }
}
