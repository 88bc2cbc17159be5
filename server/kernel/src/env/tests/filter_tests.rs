//! The base environment filter.

use super::lit::parse;
use crate::env::{is_blocked, passes_filter, FilterConfig};

const CANARIES: &[&str] = &["FAKE_API_KEY", "SOME_TOKEN", "DB_PASSWORD", "GITHUB_TOKEN"];

fn cfg(allow: &[&str], block: &[&str]) -> FilterConfig {
    FilterConfig {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        block: block.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[test]
fn canaries_are_blocked() {
    let none = FilterConfig::default();
    for c in CANARIES {
        assert!(is_blocked(c, &none), "{c}");
        assert!(!passes_filter(c, &none), "{c}");
    }
    // Case-insensitive, anywhere in the name for the `*X*` patterns.
    for c in [
        "github_token",
        "my_api_key",
        "Aws_Region",
        "OPENAI_BASE_URL",
        "SSH_AUTH_SOCK",
        "XDG_SESSION_ID",
        "NPM_CONFIG_PREFIX",
        "PRIVATE_THING",
        "GH_HOST",
        "DOCKER_HOST",
    ] {
        assert!(is_blocked(c, &none), "{c}");
    }
    for c in ["PATH", "HOME", "LANG", "LC_ALL", "EDITOR", "PYTHONPATH"] {
        assert!(!is_blocked(c, &none), "{c}");
    }
}

#[test]
fn default_allow_list() {
    let none = FilterConfig::default();
    for name in [
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
        "TERM", "TZ", "TMPDIR", "PWD",
    ] {
        assert!(passes_filter(name, &none), "{name}");
    }
    for name in ["EDITOR", "PYTHONPATH", "path", "LC", "XLC_ALL", "HOMEX"] {
        assert!(!passes_filter(name, &none), "{name}");
    }
}

#[test]
fn allow_exact_beats_block_but_patterns_do_not() {
    let exact = cfg(&["GITHUB_TOKEN"], &[]);
    assert!(
        is_blocked("GITHUB_TOKEN", &exact),
        "still blocked by the patterns"
    );
    assert!(
        passes_filter("GITHUB_TOKEN", &exact),
        "named exactly: passes"
    );
    assert!(!passes_filter("GITHUB_USER", &exact));

    let pattern = cfg(&["GITHUB_*", "MY_*"], &[]);
    assert!(!passes_filter("GITHUB_TOKEN", &pattern));
    assert!(passes_filter("MY_SETTING", &pattern));
    assert!(
        !passes_filter("MY_KEY", &pattern),
        "blocked even when allowed by a pattern"
    );
    assert!(passes_filter("EDITOR", &cfg(&["EDITOR"], &[])));
}

#[test]
fn block_patterns_from_config() {
    let c = cfg(&["EDITOR", "CORP_*"], &["corp_internal_*", "PWD", "[bad"]);
    assert!(is_blocked("CORP_INTERNAL_URL", &c));
    assert!(!passes_filter("CORP_INTERNAL_URL", &c));
    assert!(passes_filter("CORP_PUBLIC", &c));
    assert!(
        !passes_filter("PWD", &c),
        "block beats the default allow list"
    );
    // A pattern that does not compile blocks its text as a name (fail closed).
    assert!(is_blocked("[BAD", &c));
    // An exact allow still wins over a configured block.
    assert!(passes_filter("EDITOR", &cfg(&["EDITOR"], &["EDIT*"])));
}

#[test]
fn filter_config_from_a_config_value() {
    let v = parse(r#"{"env": {"allow": ["EDITOR", "MY_*", 3], "block": ["CORP_*"]}, "other": 1}"#);
    let c = FilterConfig::from_config(&v);
    assert_eq!(c, cfg(&["EDITOR", "MY_*"], &["CORP_*"]));
    let mut more = c.clone();
    more.extend_from_config(&parse(r#"{"env": {"allow": ["PAGER"]}}"#));
    assert_eq!(more.allow, vec!["EDITOR", "MY_*", "PAGER"]);
    assert_eq!(
        FilterConfig::from_config(&parse(r#"{"env": 1}"#)),
        FilterConfig::default()
    );
}
