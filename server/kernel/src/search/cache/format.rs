//! The cache file's encoding: the header, the listing and the index, written and read back
//! (every count and index checked: a file that is not one is refused, never a panic).

use super::{fingerprint, Cached, Dirs, Extras, Files, FORMAT, MAGIC};
use crate::ids::{ItemType, Space};
use crate::search::{Doc, Index, Meta, Postings};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

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
    fn u32s(&mut self, v: &[u32]) {
        self.len(v.len());
        for x in v {
            self.u32(*x);
        }
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

pub(super) struct R<'a>(pub(super) &'a [u8]);

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
    /// A counted array of `u32`, read in one piece.
    fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = self.len(4)?;
        let b = self.take(n * 4)?;
        Some(
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
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

pub(super) fn encode(
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
        w.len(d.name_terms.len());
        for t in d.name_terms.iter() {
            w.u32(*t);
        }
        w.f32(d.len);
    }
    w.u32s(&idx.postings.start);
    w.len(idx.postings.bytes.len());
    w.0.extend_from_slice(&idx.postings.bytes);
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

pub(super) fn decode(
    bytes: &[u8],
    user: &Path,
    project: Option<&Path>,
    extras: &Extras,
) -> Option<Cached> {
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
pub(super) fn decode_listing(
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
        files.insert(p.into(), (script, stamp));
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
pub(super) fn decode_index(r: &mut R, files: &Files, extras: &Extras) -> Option<Index> {
    let mut idx = Index {
        avg_len: r.f32()?,
        ..Index::default()
    };
    let n = r.len(4)?;
    idx.terms.reserve_exact(n);
    for _ in 0..n {
        idx.terms.push(r.string()?);
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
    let n = r.len(16)?;
    idx.docs.reserve_exact(n);
    for _ in 0..n {
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
            && !path
                .as_ref()
                .is_some_and(|p| files.contains_key(p.as_path()))
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
            name_terms: name_terms.into_boxed_slice(),
            len,
        });
    }
    idx.postings = read_postings(r, terms, idx.docs.len())?;
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
    // Each term once (a term is looked up among the sorted terms).
    let text = |t: u32| &idx.terms[t as usize];
    if idx
        .sorted_terms
        .windows(2)
        .any(|w| text(w[0]) == text(w[1]))
    {
        return None;
    }
    Some(idx)
}

/// The postings: a start per term and one past the last, then the bytes
/// ([`Postings::checked`]: every list whole, in order, naming documents of the index).
fn read_postings(r: &mut R, terms: u32, docs: usize) -> Option<Postings> {
    let start = r.u32s()?;
    let n = r.len(1)?;
    let bytes = r.take(n)?.to_vec();
    Postings::checked(start, bytes, terms as usize, docs)
}
