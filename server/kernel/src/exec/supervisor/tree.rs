//! Finding a run's whole tree without allocating (after `fork`): every descendant of the
//! supervisor through the `ppid` links of `/proc/*/stat`, in fixed tables on the stack.

/// How many processes one scan of `/proc` looks at (more are seen by the next scan).
pub(super) const TABLE: usize = 4096;
/// Slots of the open-addressing set of the tree's pids (a power of two, twice TABLE).
pub(super) const SET: usize = 8192;

/// Send `sig` to every descendant of `me`; how many there were.
pub(super) unsafe fn signal_tree(me: i32, sig: i32) -> usize {
    let mut pids = [0i32; TABLE];
    let mut ppids = [0i32; TABLE];
    let n = scan_proc(&mut pids, &mut ppids, me, sig);
    let mut set = [0i32; SET];
    let mut inside = [false; TABLE];
    let count = descendants(me, &pids[..n], &ppids[..n], &mut set, &mut inside[..n]);
    for i in 0..n {
        if inside[i] {
            libc::kill(pids[i], sig);
        }
    }
    count
}

/// Mark in `inside` the entries of the table that descend from `me` (their `ppid` chain
/// reaches it); how many. Never `me` itself, never pid 0 or 1, whatever the table says.
pub(super) fn descendants(
    me: i32,
    pids: &[i32],
    ppids: &[i32],
    set: &mut [i32; SET],
    inside: &mut [bool],
) -> usize {
    if me <= 1 {
        return 0;
    }
    set_insert(set, me);
    let mut count = 0;
    loop {
        let mut changed = false;
        for i in 0..pids.len() {
            let (pid, ppid) = (pids[i], ppids[i]);
            if inside[i] || pid <= 1 || pid == me || ppid <= 0 {
                continue;
            }
            if set_has(set, ppid) {
                inside[i] = true;
                changed = true;
                set_insert(set, pid);
                count += 1;
            }
        }
        if !changed {
            return count;
        }
    }
}

pub(super) fn slot(pid: i32) -> usize {
    (pid as u32).wrapping_mul(2_654_435_761) as usize & (SET - 1)
}

/// The set's empty slot is 0: pids inserted are always positive.
pub(super) fn set_insert(set: &mut [i32; SET], pid: i32) {
    if pid <= 0 {
        return;
    }
    let mut i = slot(pid);
    for _ in 0..SET {
        if set[i] == pid {
            return;
        }
        if set[i] == 0 {
            set[i] = pid;
            return;
        }
        i = (i + 1) & (SET - 1);
    }
}

pub(super) fn set_has(set: &[i32; SET], pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    let mut i = slot(pid);
    for _ in 0..SET {
        if set[i] == pid {
            return true;
        }
        if set[i] == 0 {
            return false;
        }
        i = (i + 1) & (SET - 1);
    }
    false
}

/// (pid, ppid) of the processes in `/proc` (the first TABLE of them). Past that, the scan
/// goes on and sends `sig` to the children of `me` it finds (their own children come back
/// to `me` when they die, so repeated scans still reach the whole tree); `sig` 0 sends none.
pub(super) unsafe fn scan_proc(
    pids: &mut [i32; TABLE],
    ppids: &mut [i32; TABLE],
    me: i32,
    sig: i32,
) -> usize {
    let dir = libc::open(
        c"/proc".as_ptr(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if dir < 0 {
        return 0;
    }
    let mut n = 0;
    let mut buf = [0u8; 8192];
    loop {
        let got = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
        if got <= 0 {
            break;
        }
        let got = got as usize;
        let mut off = 0;
        while off + 19 < got {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            let name = &buf[off + 19..(off + reclen).min(got)];
            off += reclen;
            let mut pid: i64 = 0;
            let mut digits = 0;
            for &c in name {
                if c == 0 {
                    break;
                }
                if !c.is_ascii_digit() || digits > 9 {
                    digits = 0;
                    break;
                }
                pid = pid * 10 + (c - b'0') as i64;
                digits += 1;
            }
            if digits == 0 || pid <= 0 || pid > i32::MAX as i64 {
                continue;
            }
            if let Some(pp) = read_ppid(pid as i32) {
                if n < TABLE {
                    pids[n] = pid as i32;
                    ppids[n] = pp;
                    n += 1;
                } else if pp == me && me > 1 && sig != 0 && pid as i32 != me {
                    libc::kill(pid as i32, sig);
                }
            }
        }
    }
    libc::close(dir);
    n
}

/// The parent of `pid`, from `/proc/PID/stat` (`pid (comm) state ppid ...`).
pub(super) unsafe fn read_ppid(pid: i32) -> Option<i32> {
    let mut path = [0u8; 32];
    let prefix = b"/proc/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut k = prefix.len();
    let mut digits = [0u8; 10];
    let mut d = 0;
    let mut p = pid;
    while p > 0 {
        digits[d] = b'0' + (p % 10) as u8;
        p /= 10;
        d += 1;
    }
    while d > 0 {
        d -= 1;
        path[k] = digits[d];
        k += 1;
    }
    for &c in b"/stat" {
        path[k] = c;
        k += 1;
    }
    path[k] = 0;
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    let r = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    if r <= 0 {
        return None;
    }
    let s = &buf[..r as usize];
    let close = s.iter().rposition(|&c| c == b')')?;
    // ") S 123 ..."
    let rest = s.get(close + 2..)?;
    let mut it = rest.split(|&c| c == b' ');
    it.next()?;
    let mut ppid: i32 = 0;
    for &c in it.next()? {
        if !c.is_ascii_digit() {
            return None;
        }
        ppid = ppid.checked_mul(10)?.checked_add((c - b'0') as i32)?;
    }
    Some(ppid)
}
