//! Every input a fuzzer found a bug with (`fuzz/regressions/<target>/`), replayed through the
//! same harness as the fuzz target (`kiwi_kernel::fuzzing`), under plain `cargo test`.

use std::path::Path;

#[test]
fn fuzz_regressions_replay() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut n = 0;
    for target in kiwi_kernel::fuzzing::TARGETS {
        let dir = root.join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            if f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            let data = std::fs::read(&f).unwrap();
            let t = target.to_string();
            let r = std::panic::catch_unwind(move || kiwi_kernel::fuzzing::run(&t, &data));
            assert!(r.is_ok(), "{target}: {} fails again", f.display());
            n += 1;
        }
    }
    eprintln!("{n} fuzz regressions replayed");
}

#[test]
fn harnesses_accept_plain_inputs() {
    for target in kiwi_kernel::fuzzing::TARGETS {
        for input in [
            &b""[..],
            b"\xff\xfe",
            b"---\n---\n",
            b"```xml\n<directive>\n```\n",
        ] {
            kiwi_kernel::fuzzing::run(target, input);
        }
    }
}
