//! The per-run supervisor (Linux): the guarantee that no process of a run outlives it.
//!
//! [`process::run`](super::process::run) does not start the tool itself. The child it forks
//! becomes a tiny supervisor (no `exec`, no allocation: only system calls on stack buffers,
//! which is what is allowed after `fork` in a multi-threaded program):
//!
//! 1. it marks itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so that every process of
//!    the run that loses its parent — a double-forked daemon, a child of a `setsid` — is
//!    re-parented to it instead of to init, and stays findable;
//! 2. it forks the tool, which sets `PR_SET_PDEATHSIG(SIGKILL)` (it dies with the
//!    supervisor) and returns to the standard library, which `exec`s the command;
//! 3. it gives up the tool's pipes (its stdio becomes `/dev/null`), closes every other file
//!    descriptor but the read end of its control pipe, blocks every signal (a terminal's
//!    Ctrl-C or a `kill` of its process group cannot end it before it has cleaned up) and
//!    waits for the tool to end, or for kiwi to write on the control pipe (`T`: SIGTERM to
//!    the tree; `K`: kill the tree now), or for the control pipe to close — which is what
//!    happens when kiwi dies, even by SIGKILL (the write end is kiwi's alone, close-on-exec);
//! 4. then it kills every descendant (found through the `ppid` links of `/proc/*/stat`,
//!    SIGKILL, again until it has no child left), runs the environment's clean-up command
//!    when the run was stopped (a container's `rm --force`; `kill` of the marker process
//!    inside a running container), kills what that left, and exits with the tool's status
//!    (re-raising the tool's signal when a signal ended it).
//!
//! With [`Isolation::PidNamespace`] (the `local` environment) the supervisor also puts the
//! tool in a PID namespace of its own: it `unshare`s `CLONE_NEWPID` and forks a tiny init
//! (pid 1 of the namespace, [`become_init`]) which takes a mount namespace of its own (made
//! private first: nothing propagates to the host), mounts a fresh `/proc` there (so that `$$`
//! and `/proc/$$` agree), and forks the tool (pid 2). The init reaps every orphan of the
//! namespace, passes a SIGTERM from the supervisor on to every process in it, and exits
//! with the tool's status (sent to the supervisor on a pipe: an init cannot die of its own
//! signal). The kernel ignores a SIGKILL sent to an init from inside its namespace (`kill
//! -9 $PPID` from the tool), and when the init dies — the supervisor kills it, or the
//! supervisor dies and `PR_SET_PDEATHSIG` kills it — the kernel SIGKILLs every process of
//! the namespace. When the kernel refuses the namespace (no `CAP_SYS_ADMIN`: an
//! unprivileged kiwi; seccomp) the run goes on as above, without it.
//!
//! What it does not cover: without the namespace, a process that kills the supervisor
//! itself (`kill -9 $PPID` from the tool: the tool dies with it, but an orphan of the tool
//! is re-parented to init), and processes inside a container's PID namespace (the
//! container environment handles those).

use super::{Cleanup, Isolation};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

mod tree;
use tree::*;

/// How long the clean-up command may take.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the supervisor keeps killing a tree that does not go (a process stuck in the
/// kernel cannot be killed; the supervisor then exits anyway).
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// The clean-up command as the forked supervisor needs it: C strings and pointer arrays
/// built before `fork` (addresses kept as `usize` so that the closure is `Send + Sync`).
struct CCommand {
    _strings: Vec<CString>,
    argv: Vec<usize>,
    envp: Vec<usize>,
}

impl CCommand {
    fn new(c: &Cleanup) -> io::Result<CCommand> {
        let cs = |s: &str| {
            CString::new(s).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a NUL byte in a clean-up command",
                )
            })
        };
        let mut strings = Vec::new();
        strings.push(cs(&c.program.to_string_lossy())?);
        for a in &c.args {
            strings.push(cs(a)?);
        }
        let argc = strings.len();
        for (k, v) in &c.env {
            strings.push(cs(&format!("{k}={v}"))?);
        }
        let mut argv: Vec<usize> = strings[..argc]
            .iter()
            .map(|s| s.as_ptr() as usize)
            .collect();
        argv.push(0);
        let mut envp: Vec<usize> = strings[argc..]
            .iter()
            .map(|s| s.as_ptr() as usize)
            .collect();
        envp.push(0);
        Ok(CCommand {
            _strings: strings,
            argv,
            envp,
        })
    }
}

/// The kiwi side of one supervised run: the control pipe's write end. Dropping it (or
/// kiwi's death) makes the supervisor kill the tree.
pub struct Control {
    write: Option<std::fs::File>,
}

impl Control {
    /// SIGTERM to every process of the run (the run counts as stopped: the clean-up runs).
    pub fn terminate(&mut self) {
        self.send(b'T');
    }
    /// Kill every process of the run now.
    pub fn kill(&mut self) {
        self.send(b'K');
        self.write = None;
    }
    fn send(&mut self, b: u8) {
        use std::io::Write;
        if let Some(w) = self.write.as_mut() {
            if w.write_all(&[b]).is_err() {
                self.write = None;
            }
        }
    }
}

/// Set up supervision of `cmd`: its child becomes the supervisor of the command. Call
/// [`Pending::spawned`] after the spawn (whether it worked or not).
pub fn install(
    cmd: &mut std::process::Command,
    cleanup: Option<&Cleanup>,
    isolation: Isolation,
) -> io::Result<Pending> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two descriptors, owned below.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let ctl = read.as_raw_fd();
    let cleanup = match cleanup {
        Some(c) => Some(Arc::new(CCommand::new(c)?)),
        None => None,
    };
    // SAFETY: the closure runs in the forked child before `exec`; it (and everything it
    // calls) uses only async-signal-safe system calls on stack memory and memory allocated
    // before the fork; it never returns in the supervisor.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, move || {
            become_supervisor(ctl, cleanup.as_deref(), isolation)
        });
    }
    Ok(Pending {
        read: Some(read),
        write: Some(std::fs::File::from(write)),
    })
}

/// Between `install` and the spawn.
pub struct Pending {
    read: Option<OwnedFd>,
    write: Option<std::fs::File>,
}

impl Pending {
    /// The spawn is done: kiwi's copy of the read end is closed, the control is kiwi's.
    pub fn spawned(mut self) -> Control {
        self.read = None;
        Control {
            write: self.write.take(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// In the forked child: async-signal-safe code only (no allocation, no locks, no std I/O).

/// `linux/capability.h`.
const CAP_SYS_PTRACE: libc::c_ulong = 19;

fn errno_error() -> io::Error {
    // `from_raw_os_error` does not allocate.
    io::Error::from_raw_os_error(unsafe { *libc::__errno_location() })
}

/// Runs in the child after `fork`: returns `Ok` in the tool's process (which then `exec`s);
/// the supervisor never returns.
fn become_supervisor(
    ctl: RawFd,
    cleanup: Option<&CCommand>,
    isolation: Isolation,
) -> io::Result<()> {
    // SAFETY: plain system calls.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(errno_error());
        }
        let me = libc::getpid();
        // The PID namespace, when asked for and the kernel allows it: the init's status pipe.
        let mut status = [-1 as RawFd; 2];
        if isolation != Isolation::Subreaper
            && libc::pipe2(status.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) == 0
        {
            // An exit-signal byte is not a valid `unshare` flag: the kernel says EINVAL.
            let refuse = if isolation == Isolation::PidNamespaceRefused {
                libc::SIGCHLD
            } else {
                0
            };
            if libc::unshare(libc::CLONE_NEWPID | refuse) != 0 {
                libc::close(status[0]);
                libc::close(status[1]);
                status = [-1, -1];
            }
        }
        let ns = status[0] >= 0;
        if ns {
            // The init starts with every signal blocked: a SIGTERM the supervisor sends it
            // before its signalfd exists is kept, not dropped (an init ignores what it has
            // no handler for).
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        }
        let tool = libc::fork();
        if tool < 0 {
            return Err(errno_error());
        }
        if tool == 0 {
            if ns {
                libc::close(status[0]);
                return become_init(status[1]);
            }
            return become_tool(me);
        }
        if ns {
            libc::close(status[1]);
        }
        supervise(me, tool, ctl, status[0], cleanup)
    }
}

/// The tool's process, just before `exec`: it dies with its parent (`parent`: the pid its
/// parent has in the tool's namespace).
unsafe fn become_tool(parent: i32) -> io::Result<()> {
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    // Without CAP_SYS_PTRACE, a tool run as root cannot read the memory of kiwi or of this
    // supervisor (neither is dumpable, `context::hide_initial_environment`), where kiwi's
    // environment lives. It fails harmlessly without CAP_SETPCAP (not root): such a tool
    // never had the capability.
    libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0);
    if libc::getppid() != parent {
        libc::_exit(137);
    }
    Ok(())
}

/// pid 1 of the run's PID namespace (every signal blocked, inherited from the supervisor):
/// a private mount namespace with the namespace's own `/proc`, then the tool (pid 2);
/// returns `Ok` in the tool. `status`: the pipe on which the tool's wait status goes to
/// the supervisor.
unsafe fn become_init(status: RawFd) -> io::Result<()> {
    // Dies with the supervisor: the kernel then kills the whole namespace. If the
    // supervisor is already gone, its end of the status pipe is closed.
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    let mut p = libc::pollfd {
        fd: status,
        events: libc::POLLOUT,
        revents: 0,
    };
    if libc::poll(&mut p, 1, 0) > 0 && p.revents & libc::POLLERR != 0 {
        libc::_exit(137);
    }
    // `$$` and `/proc/$$` agree: a `/proc` of this namespace, in a mount namespace whose
    // mounts are private first (a mount over `/proc` must not reach the host). Without
    // them the tool still runs in the namespace, with the host's `/proc`.
    if libc::unshare(libc::CLONE_NEWNS) == 0
        && libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == 0
    {
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        );
    }
    let tool = libc::fork();
    if tool < 0 {
        return Err(errno_error());
    }
    if tool == 0 {
        return become_tool(1);
    }
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    if null >= 0 {
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        if null > 2 {
            libc::close(null);
        }
    }
    close_fds_except(&[status]);
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigaddset(&mut set, libc::SIGCHLD);
    libc::sigaddset(&mut set, libc::SIGTERM);
    let sfd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
    let mut st: Option<i32> = None;
    loop {
        // Every orphan of the namespace comes here: reap them all.
        reap(tool, &mut st);
        if st.is_some() {
            break;
        }
        let mut fds = libc::pollfd {
            fd: sfd,
            events: libc::POLLIN,
            revents: 0,
        };
        if sfd < 0 {
            sleep_ms(50);
            continue;
        }
        if libc::poll(&mut fds, 1, -1) <= 0 {
            continue;
        }
        let mut info: libc::signalfd_siginfo = std::mem::zeroed();
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        while libc::read(sfd, (&mut info as *mut libc::signalfd_siginfo).cast(), size)
            == size as isize
        {
            // A SIGTERM from outside the namespace (the supervisor: its pid here is 0) goes
            // to every process of the namespace; one from inside (the tool's `kill $PPID`)
            // is ignored, as the supervisor ignores it without the namespace.
            if info.ssi_signo == libc::SIGTERM as u32 && info.ssi_pid == 0 {
                libc::kill(-1, libc::SIGTERM);
            }
        }
    }
    let st = st.unwrap_or(0);
    let bytes = st.to_ne_bytes();
    libc::write(status, bytes.as_ptr().cast(), bytes.len());
    if libc::WIFEXITED(st) {
        libc::_exit(libc::WEXITSTATUS(st));
    }
    libc::_exit(128 + libc::WTERMSIG(st))
}

unsafe fn supervise(
    me: i32,
    tool: i32,
    ctl: RawFd,
    ns_status: RawFd,
    cleanup: Option<&CCommand>,
) -> ! {
    let ns = ns_status >= 0;
    // The tool's pipes are the tool's: the supervisor keeps none of them open.
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    if null >= 0 {
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        if null > 2 {
            libc::close(null);
        }
    }
    close_fds_except(&[ctl, ns_status]);
    let mut all: libc::sigset_t = std::mem::zeroed();
    libc::sigfillset(&mut all);
    libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
    let mut chld: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut chld);
    libc::sigaddset(&mut chld, libc::SIGCHLD);
    let sfd = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);

    let mut status: Option<i32> = None;
    let mut stopped = false;
    loop {
        reap(tool, &mut status);
        if status.is_some() {
            break;
        }
        let mut fds = [
            libc::pollfd {
                fd: ctl,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Without a signalfd, poll in steps (a child's end is then seen within 50 ms).
        let timeout = if sfd >= 0 { -1 } else { 50 };
        let n = libc::poll(fds.as_mut_ptr(), if sfd >= 0 { 2 } else { 1 }, timeout);
        if n < 0 {
            continue;
        }
        if fds[1].revents != 0 {
            let mut b = [0u8; 256];
            while libc::read(sfd, b.as_mut_ptr().cast(), b.len()) > 0 {}
        }
        if fds[0].revents != 0 {
            let mut b = [0u8; 16];
            let r = libc::read(ctl, b.as_mut_ptr().cast(), b.len());
            if r < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if r <= 0 {
                // kiwi is gone (or dropped the run).
                stopped = true;
                break;
            }
            let mut kill_now = false;
            for &c in &b[..r as usize] {
                stopped = true;
                match c {
                    // With the namespace, its init passes SIGTERM on to every process in it.
                    b'T' if ns => {
                        libc::kill(tool, libc::SIGTERM);
                    }
                    b'T' => {
                        signal_tree(me, libc::SIGTERM);
                    }
                    _ => kill_now = true,
                }
            }
            if kill_now {
                break;
            }
        }
    }
    if ns && status.is_none() {
        // The namespace's init: its death kills every process in the namespace.
        libc::kill(tool, libc::SIGKILL);
    }
    kill_tree(me, tool, &mut status);
    if ns && status.is_some_and(|st| libc::WIFEXITED(st)) {
        // The init ended by itself: the tool's own status is on the pipe.
        let mut b = [0u8; 4];
        if libc::read(ns_status, b.as_mut_ptr().cast(), 4) == 4 {
            status = Some(i32::from_ne_bytes(b));
        }
    }
    if stopped {
        if let Some(c) = cleanup {
            run_cleanup(c, tool, &mut status);
            kill_tree(me, tool, &mut status);
        }
    }
    exit_like(status)
}

/// Close every descriptor except 0-2 and those of `keep` (negative ones: none).
unsafe fn close_fds_except(keep: &[RawFd]) {
    let mut lo: u32 = 3;
    loop {
        // The lowest kept descriptor at or above `lo`: close up to it.
        let next = keep
            .iter()
            .filter(|&&k| k >= 0 && k as u32 >= lo)
            .map(|&k| k as u32)
            .min();
        let hi = match next {
            Some(k) => k.saturating_sub(1),
            None => u32::MAX,
        };
        if lo <= hi && (next.is_none() || next != Some(lo)) {
            close_range(lo, hi);
        }
        match next {
            Some(k) if k < u32::MAX => lo = k + 1,
            _ => return,
        }
    }
}

/// Close `lo..=hi`.
unsafe fn close_range(lo: u32, hi: u32) {
    if libc::syscall(libc::SYS_close_range, lo, hi, 0) != 0 {
        // Before Linux 5.9: one by one, up to the limit.
        let mut lim: libc::rlimit = std::mem::zeroed();
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 20) as u32
        } else {
            1024
        };
        let mut fd = lo;
        while fd <= hi && fd < max {
            libc::close(fd as i32);
            fd += 1;
        }
    }
}

/// Reap every child that has ended; remember the tool's status.
unsafe fn reap(tool: i32, status: &mut Option<i32>) -> bool {
    loop {
        let mut st = 0;
        let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
        if r > 0 {
            if r == tool {
                *status = Some(st);
            }
            continue;
        }
        // true: no child at all is left.
        return r < 0 && *libc::__errno_location() == libc::ECHILD;
    }
}

fn now_ms() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: fills `t`.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t);
    }
    t.tv_sec as u64 * 1000 + t.tv_nsec as u64 / 1_000_000
}

fn sleep_ms(ms: u64) {
    let t = libc::timespec {
        tv_sec: (ms / 1000) as libc::time_t,
        tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: sleeps.
    unsafe {
        libc::nanosleep(&t, std::ptr::null_mut());
    }
}

/// SIGKILL every descendant until no child is left (bounded by [`KILL_TIMEOUT`]).
unsafe fn kill_tree(me: i32, tool: i32, status: &mut Option<i32>) {
    // Every descendant is a child or below one (orphans come back to this subreaper): with
    // no child left there is nothing to look for, and the usual end costs no scan.
    if reap(tool, status) {
        return;
    }
    let start = now_ms();
    loop {
        signal_tree(me, libc::SIGKILL);
        if reap(tool, status) {
            return;
        }
        if now_ms().saturating_sub(start) > KILL_TIMEOUT.as_millis() as u64 {
            return;
        }
        sleep_ms(1);
    }
}

/// Run the clean-up command to its end (bounded), reaping whatever else ends meanwhile.
unsafe fn run_cleanup(c: &CCommand, tool: i32, status: &mut Option<i32>) {
    let pid = libc::fork();
    if pid < 0 {
        return;
    }
    if pid == 0 {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::chdir(c"/".as_ptr());
        libc::execve(
            c.argv[0] as *const libc::c_char,
            c.argv.as_ptr() as *const *const libc::c_char,
            c.envp.as_ptr() as *const *const libc::c_char,
        );
        libc::_exit(127);
    }
    let start = now_ms();
    loop {
        let mut st = 0;
        let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
        if r == pid {
            return;
        }
        if r > 0 {
            if r == tool {
                *status = Some(st);
            }
            continue;
        }
        if r < 0 && *libc::__errno_location() == libc::ECHILD {
            return;
        }
        if now_ms().saturating_sub(start) > CLEANUP_TIMEOUT.as_millis() as u64 {
            libc::kill(pid, libc::SIGKILL);
        }
        sleep_ms(5);
    }
}

/// Exit as the tool did: its exit code, or its signal re-raised.
unsafe fn exit_like(status: Option<i32>) -> ! {
    let Some(st) = status else {
        libc::_exit(128 + libc::SIGKILL);
    };
    if libc::WIFEXITED(st) {
        libc::_exit(libc::WEXITSTATUS(st));
    }
    if libc::WIFSIGNALED(st) {
        let sig = libc::WTERMSIG(st);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig);
    }
    libc::_exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(me: i32, table: &[(i32, i32)]) -> Vec<i32> {
        let pids: Vec<i32> = table.iter().map(|t| t.0).collect();
        let ppids: Vec<i32> = table.iter().map(|t| t.1).collect();
        let mut set = [0i32; SET];
        let mut inside = vec![false; table.len()];
        let n = descendants(me, &pids, &ppids, &mut set, &mut inside);
        let v: Vec<i32> = pids
            .iter()
            .zip(&inside)
            .filter(|(_, i)| **i)
            .map(|(p, _)| *p)
            .collect();
        assert_eq!(n, v.len());
        v
    }

    #[test]
    fn only_descendants_are_in_the_tree() {
        // init (ppid 0), kthreadd (ppid 0), a shell, the supervisor 100, its tree, a
        // grandchild listed before its parent, and strangers.
        let table = [
            (1, 0),
            (2, 0),
            (50, 1),
            (100, 50),
            (300, 200),
            (101, 100),
            (200, 101),
            (400, 1),
            (401, 400),
            (102, 100),
        ];
        let mut got = tree(100, &table);
        got.sort();
        assert_eq!(got, vec![101, 102, 200, 300]);
        // A table that claims pid 1 or 0 descends from the supervisor changes nothing.
        assert_eq!(tree(100, &[(1, 100), (0, 100), (5, 0)]), Vec::<i32>::new());
        // Nothing for a nonsense supervisor pid.
        assert!(tree(1, &table).is_empty());
        assert!(tree(0, &table).is_empty());
    }

    #[test]
    fn the_pid_set_never_holds_zero() {
        let mut set = [0i32; SET];
        assert!(!set_has(&set, 0));
        set_insert(&mut set, 0);
        assert!(!set_has(&set, 0));
        for p in 1..5000 {
            set_insert(&mut set, p);
        }
        assert!((1..5000).all(|p| set_has(&set, p)));
        assert!(!set_has(&set, 5001));
        assert!(!set_has(&set, 0));
    }

    #[test]
    fn the_proc_table_reads_real_parents() {
        let mut pids = [0i32; TABLE];
        let mut ppids = [0i32; TABLE];
        // SAFETY: reads /proc.
        let n = unsafe { scan_proc(&mut pids, &mut ppids, 0, 0) };
        let me = std::process::id() as i32;
        let i = pids[..n]
            .iter()
            .position(|p| *p == me)
            .expect("this process is listed");
        assert_eq!(ppids[i], std::os::unix::process::parent_id() as i32);
    }
}
