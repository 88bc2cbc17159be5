//! `kiwi-bench ssh` (issue 30): a trivial tool run on an SSH host by `kiwi run --env ssh:box`
//! over an open (shared) connection, beside the same tool over plain `ssh host python3
//! tool.py` (a new connection each time, as a user would type it). The host is an sshd
//! started here on 127.0.0.1 with throw-away keys (Debian `openssh-server`), stopped at the
//! end with the master kiwi left.

use crate::{ms, percentile, Figure, Value as Fig};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TRIVIAL: &str = r#"__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__tool_description__ = "Print ok"

if __name__ == "__main__":
    print("ok")
"#;

struct Server {
    child: std::process::Child,
    dir: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(rd) = std::fs::read_dir(self.dir.join("run/kiwi/ssh")) {
            for e in rd.flatten() {
                let _ = Command::new("ssh")
                    .arg("-o")
                    .arg(format!("ControlPath={}", e.path().display()))
                    .args(["-O", "exit", "x"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sh(cmd: &mut Command) -> Result<()> {
    let s = cmd.status().context("spawning")?;
    if !s.success() {
        bail!("{cmd:?} failed ({s})");
    }
    Ok(())
}

fn timed(cmd: &mut Command) -> Result<Duration> {
    let t = Instant::now();
    let o = cmd.stdin(Stdio::null()).output().context("spawning")?;
    if !o.status.success() || !String::from_utf8_lossy(&o.stdout).contains("ok") {
        bail!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    Ok(t.elapsed())
}

pub fn run(kiwi: &Path, runs: usize) -> Result<Vec<Figure>> {
    if !Path::new("/usr/sbin/sshd").exists() {
        bail!("/usr/sbin/sshd is not installed (apt-get install openssh-server)");
    }
    let dir = Path::new("/var/tmp").join(format!("kiwi-bench-ssh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for d in [
        "sshd",
        "rhome",
        "work",
        "run",
        "user",
        "project/.ai/tools/bench",
    ] {
        std::fs::create_dir_all(dir.join(d))?;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o700))?;
    for k in ["hostkey", "clientkey"] {
        sh(Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(dir.join("sshd").join(k)))?;
    }
    std::fs::copy(
        dir.join("sshd/clientkey.pub"),
        dir.join("sshd/authorized_keys"),
    )?;
    let _ = std::fs::create_dir_all("/run/sshd");
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let d = dir.display();
    std::fs::write(
        dir.join("sshd/sshd_config"),
        format!("Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/sshd/hostkey\nPidFile {d}/sshd/pid\nAuthorizedKeysFile {d}/sshd/authorized_keys\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nSetEnv HOME={d}/rhome\n"),
    )?;
    let host_pub = std::fs::read_to_string(dir.join("sshd/hostkey.pub"))?;
    let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
    std::fs::write(
        dir.join("sshd/known_hosts"),
        format!("[127.0.0.1]:{port} {}\n", key.join(" ")),
    )?;
    let user = String::from_utf8(Command::new("id").arg("-un").output()?.stdout)?;
    std::fs::write(
        dir.join("sshd/ssh_config"),
        format!("Host box\n  HostName 127.0.0.1\n  Port {port}\n  User {}\n  IdentityFile {d}/sshd/clientkey\n  IdentitiesOnly yes\n  UserKnownHostsFile {d}/sshd/known_hosts\n  GlobalKnownHostsFile /dev/null\n", user.trim()),
    )?;
    std::fs::write(
        dir.join("user/config.yaml"),
        format!("execution:\n  hosts:\n    box:\n      ssh: box\n      workdir: {d}/work\n      ssh_config: {d}/sshd/ssh_config\n"),
    )?;
    let tool = dir.join("project/.ai/tools/bench/trivial.py");
    std::fs::write(&tool, TRIVIAL)?;
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(dir.join("sshd/sshd_config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting sshd")?;
    let server = Server {
        child,
        dir: dir.clone(),
    };
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if t.elapsed() > Duration::from_secs(10) {
            bail!("sshd did not listen");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let kiwi = std::fs::canonicalize(kiwi).context("the kiwi binary")?;
    let kiwi_cmd = || {
        let mut c = Command::new(&kiwi);
        c.args(["run", "bench/trivial", "--env", "ssh:box"])
            .current_dir(dir.join("project"))
            .env("KIWI_USERSPACE_DIR", dir.join("user"))
            .env("XDG_RUNTIME_DIR", dir.join("run"));
        c
    };
    let plain_cmd = || {
        let mut c = Command::new("ssh");
        c.arg("-F")
            .arg(dir.join("sshd/ssh_config"))
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "ControlPath=none",
                "box",
                "python3",
            ])
            .arg(&tool);
        c
    };
    // Warm up: the master opens, the file is shipped once.
    timed(&mut kiwi_cmd())?;
    timed(&mut plain_cmd())?;
    let (mut k, mut p) = (Vec::new(), Vec::new());
    for i in 0..runs {
        if i % 2 == 0 {
            k.push(timed(&mut kiwi_cmd())?);
            p.push(timed(&mut plain_cmd())?);
        } else {
            p.push(timed(&mut plain_cmd())?);
            k.push(timed(&mut kiwi_cmd())?);
        }
    }
    k.sort();
    p.sort();
    drop(server);
    let (km, pm) = (ms(percentile(&k, 0.5)), ms(percentile(&p, 0.5)));
    Ok(vec![
        Figure {
            name: "kiwi run --env ssh:box (open connection)".into(),
            workload: format!("trivial tool, {runs} runs"),
            median: Fig::Ms(km),
            p99: Some(Fig::Ms(ms(percentile(&k, 0.99)))),
            target: "beside plain ssh".into(),
            met: None,
        },
        Figure {
            name: "ssh box python3 tool.py (new connection)".into(),
            workload: format!("trivial tool, {runs} runs"),
            median: Fig::Ms(pm),
            p99: Some(Fig::Ms(ms(percentile(&p, 0.99)))),
            target: "-".into(),
            met: None,
        },
        Figure {
            name: "kiwi over ssh / plain ssh".into(),
            workload: "medians".into(),
            median: Fig::Ratio(km / pm),
            p99: None,
            target: "-".into(),
            met: None,
        },
    ])
}
