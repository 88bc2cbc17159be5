# kiwi's launcher on an SSH host (issue 30). Run as `python3 -c CODE MODE`; every input
# comes on stdin (never on a command line). Modes:
#   hello  -> {"home", "path", "python"}
#   probe  <- {"paths", "dirs", "texts", "blobs"}  -> what each is, the missing blobs
#   ship   <- a JSON line [[digest, size], ...] then the bytes -> stored under the cache,
#             each verified by its sha256 here
#   run    <- a JSON line {argv, env, cwd, mkcwd, timeout, stdin, tree, files}, then stdin
#             stays open: its end (the connection gone, kiwi killed) ends the run's processes
# Nothing is written outside ~/.cache/kiwi and the run's working directory.
import hashlib, json, os, signal, stat, sys, threading, time

CACHE = os.path.join(os.path.expanduser("~"), ".cache", "kiwi")
BLOBS = os.path.join(CACHE, "blobs", "sha256")
TREES = os.path.join(CACHE, "trees")
STATUS = b"\x01kiwi-status "


def fail(msg, code=3):
    sys.stderr.write("kiwi launcher: %s\n" % msg)
    sys.stderr.flush()
    os._exit(code)


def hexok(d):
    return len(d) == 64 and all(c in "0123456789abcdef" for c in d)


def blob(d):
    return os.path.join(BLOBS, d)


def emit(obj):
    sys.stdout.write(json.dumps(obj))
    sys.stdout.flush()


def kind(p):
    try:
        m = os.stat(p).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(m):
        return "dir"
    if stat.S_ISREG(m):
        return "exec" if m & 0o111 else "file"
    return "other"


def readline0():
    # The header line, read byte by byte from fd 0 (no buffer reads past it).
    buf = bytearray()
    while True:
        b = os.read(0, 1)
        if not b:
            break
        if b == b"\n":
            break
        buf += b
        if len(buf) > 64 << 20:
            fail("header too long")
    return bytes(buf)


def hello():
    emit({"home": os.path.expanduser("~"), "path": os.environ.get("PATH", ""), "python": sys.executable})


def probe():
    req = json.loads(sys.stdin.read())
    r = {"kinds": {}, "dirs": {}, "texts": {}, "missing": []}
    for p in req.get("paths", []):
        r["kinds"][p] = kind(p)
    for d in req.get("dirs", []):
        try:
            r["dirs"][d] = sorted(os.listdir(d))
        except OSError:
            r["dirs"][d] = None
    for t in req.get("texts", []):
        try:
            with open(t, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise OSError("not a regular file")
                r["texts"][t] = f.read(65536).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            r["texts"][t] = None
    for d in req.get("blobs", []):
        if not hexok(d) or not os.path.isfile(blob(d)):
            r["missing"].append(d)
    emit(r)


def mkdirs(p):
    os.makedirs(p, mode=0o700, exist_ok=True)


def ship():
    entries = json.loads(readline0().decode("utf-8"))
    mkdirs(BLOBS)
    stored = 0
    for d, size in entries:
        if not hexok(d):
            fail("bad digest")
        h = hashlib.sha256()
        tmp = os.path.join(BLOBS, ".tmp-%d-%s" % (os.getpid(), d))
        with open(tmp, "wb") as f:
            left = size
            while left > 0:
                chunk = os.read(0, min(left, 1 << 20))
                if not chunk:
                    os.unlink(tmp)
                    fail("input ended early")
                h.update(chunk)
                f.write(chunk)
                left -= len(chunk)
        if h.hexdigest() != d:
            os.unlink(tmp)
            fail("a file arrived with the sha256 %s, not %s: nothing stored" % (h.hexdigest(), d))
        os.chmod(tmp, 0o600)
        os.replace(tmp, blob(d))
        stored += 1
    emit({"stored": stored})


def verified(d):
    h = hashlib.sha256()
    with open(blob(d), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest() == d


def tree(name, files):
    # The chain's files at their places below trees/NAME, made once (a rename makes it whole).
    if not hexok(name):
        fail("bad tree name")
    root = os.path.join(TREES, name)
    if os.path.isdir(root):
        return root
    mkdirs(TREES)
    tmp = os.path.join(TREES, ".tmp-%d-%s" % (os.getpid(), name))
    for rel, (d, mode) in sorted(files.items()):
        parts = [x for x in rel.split("/") if x]
        if not parts or any(x in (".", "..") for x in parts):
            fail("bad path in the tree: %r" % rel)
        if not hexok(d) or not os.path.isfile(blob(d)) or not verified(d):
            fail("the cache lacks (or holds a changed copy of) %s; run again" % d)
        dest = os.path.join(tmp, *parts)
        mkdirs(os.path.dirname(dest))
        with open(blob(d), "rb") as src, open(dest, "wb") as out:
            out.write(src.read())
        os.chmod(dest, 0o755 if mode & 0o111 else 0o644)
    try:
        os.rename(tmp, root)
    except OSError:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.isdir(root):
            fail("cannot make %s" % root)
    return root


def descendants(pid):
    kids = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % e) as f:
                s = f.read()
            ppid = int(s[s.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(e))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out


KILLED = threading.Event()


def kill_all(pgid):
    # The run's process group, and anything below this launcher (it is a subreaper: a
    # process that left the group by setsid is still its descendant).
    for _ in range(20):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
        left = descendants(os.getpid())
        if os.path.isdir("/proc"):
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        # Reap what we can.
        while True:
            try:
                r, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                r = 0
            if r == 0:
                break
        if not os.path.isdir("/proc") or not descendants(os.getpid()):
            return
        time.sleep(0.05)


def subreaper():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def watchdog(pgid, parent):
    # Ends the run when the connection goes: stdin at EOF (kiwi or its ssh client gone),
    # stdout hung up, or the sshd that started us gone.
    import select
    p = select.poll()
    p.register(0, select.POLLIN | select.POLLHUP | select.POLLERR)
    p.register(1, select.POLLERR | select.POLLHUP)
    while not KILLED.is_set():
        ev = p.poll(500)
        gone = os.getppid() != parent
        for fd, e in ev:
            if fd == 0 and e & select.POLLIN:
                try:
                    if not os.read(0, 65536):
                        gone = True
                except OSError:
                    gone = True
            elif e & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                gone = True
        if gone:
            KILLED.set()
            kill_all(pgid)
            os._exit(255)


def run():
    req = json.loads(readline0().decode("utf-8"))
    parent = os.getppid()
    root = tree(req["tree"], req["files"]) if req.get("files") else None
    cwd = req["cwd"]
    if req.get("mkcwd") and not os.path.isdir(cwd):
        mkdirs(cwd)
    if not os.path.isdir(cwd):
        fail("the working directory %s does not exist on this host" % cwd, 4)
    subreaper()
    import subprocess
    env = req["env"]
    try:
        proc = subprocess.Popen(
            req["argv"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if req.get("stdin") is not None else subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as e:
        status = {"spawn_error": "cannot start `%s`: %s" % (req["argv"][0], e.strerror or e)}
        os.write(2, STATUS + json.dumps(status).encode() + b"\n")
        os._exit(127)
    threading.Thread(target=watchdog, args=(proc.pid, parent), daemon=True).start()
    if req.get("stdin") is not None:
        def feed():
            try:
                proc.stdin.write(req["stdin"].encode("utf-8"))
                proc.stdin.close()
            except OSError:
                pass
        threading.Thread(target=feed, daemon=True).start()
    timed_out = False
    try:
        code = proc.wait(timeout=req.get("timeout"))
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            code = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
    kill_all(proc.pid)
    status = {"code": code if code >= 0 else None, "signal": -code if code < 0 else None,
              "timed_out": timed_out, "pid": proc.pid}
    sys.stdout.flush()
    os.write(2, STATUS + json.dumps(status).encode() + b"\n")
    os._exit(code if code >= 0 else 128 - code)


MODES = {"hello": hello, "probe": probe, "ship": ship, "run": run}
if __name__ == "__main__":
    m = MODES.get(sys.argv[1] if len(sys.argv) > 1 else "")
    if m is None:
        fail("unknown mode")
    m()
