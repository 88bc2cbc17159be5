//! `init` of the user space (07): plain `init` changes nothing once the user space exists.

use kiwi_kernel::context::Host;
use kiwi_kernel::init::init_userspace;

fn host(user: &std::path::Path) -> Host {
    Host::for_tests(&[
        ("KIWI_USERSPACE_DIR", user.to_str().unwrap()),
        ("SHELL", "/bin/bash"),
    ])
}

#[test]
fn plain_init_never_recreates_what_the_user_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("u");
    let host = host(&user);
    init_userspace(&host, false).unwrap();
    let deleted = user.join("directives/core/create_tool.md");
    std::fs::remove_file(&deleted).unwrap();
    std::fs::remove_dir_all(user.join("vectors")).unwrap();

    let again = init_userspace(&host, false).unwrap();
    assert!(again.existed);
    assert!(
        !deleted.exists(),
        "plain init re-created a file the user deleted"
    );
    assert!(
        !user.join("vectors").exists(),
        "plain init re-created a folder"
    );
    assert!(again.written.is_empty() && again.created_folders.is_empty());
    assert_eq!(
        again.missing,
        vec!["directives/core/create_tool.md".to_string()]
    );
    assert!(
        again.message.contains("nothing changed"),
        "{}",
        again.message
    );
    assert!(again.message.contains("--force"), "{}", again.message);

    // --force restores them (a deleted file is not a changed one).
    let forced = init_userspace(&host, true).unwrap();
    assert_eq!(
        forced.written,
        vec!["directives/core/create_tool.md".to_string()]
    );
    assert!(deleted.exists());
    assert!(user.join("vectors").is_dir());
    assert!(forced.missing.is_empty());
}

#[test]
fn a_user_space_holding_only_a_cache_is_initialised() {
    // The search index kept on disk creates `cache/` before any `init`: that is not an
    // initialised user space, and plain init creates everything.
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("u");
    std::fs::create_dir_all(user.join("cache")).unwrap();
    std::fs::write(user.join("cache/search-x.bin"), b"x").unwrap();
    let r = init_userspace(&host(&user), false).unwrap();
    assert!(r.written.contains(&"config.yaml".to_string()), "{r:?}");
    assert!(user.join("directives/core/init.md").exists());
}

#[test]
fn a_relative_user_space_is_recorded_absolute() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mut host = Host::for_tests(&[("KIWI_USERSPACE_DIR", "rel/u"), ("SHELL", "/bin/bash")]);
    host.cwd = Some(cwd.clone());
    assert_eq!(host.user_space(), cwd.join("rel/u"));
    let r = init_userspace(&host, false).unwrap();
    assert_eq!(r.userspace, cwd.join("rel/u"));
    let cfg = std::fs::read_to_string(cwd.join("rel/u/config.yaml")).unwrap();
    let want = format!("userspace: \"{}\"", cwd.join("rel/u").display());
    assert!(cfg.contains(&want), "{cfg}");
}
