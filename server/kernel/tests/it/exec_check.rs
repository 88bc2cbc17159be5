//! X501 (invalid execution environment preference) and X502 (cannot run on this machine),
//! as snapshots. The fixture's PATH holds neither bwrap nor podman nor docker, so X502 is
//! the same on every machine.

use crate::common;
use common::Fixture;

fn tool(pref: &str) -> String {
    format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\nEXECUTION_ENVIRONMENT = {pref}\n")
}

#[test]
fn x501_invalid_preferences() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/x/bad_mode.py\n{}//- project/.ai/tools/x/far_mode.py\n{}//- project/.ai/tools/x/not_dict.py\n{}//- project/.ai/tools/x/no_target.py\n{}//- project/.ai/tools/x/no_image.py\n{}//- project/.ai/tools/x/types.py\n{}//- project/.ai/tools/x/keys.yaml\n{}",
        tool("{\"mode\": \"requird\"}"),
        tool("{\"mode\": \"kubernetes\"}"),
        tool("\"required\""),
        tool("{\"mode\": \"specific\"}"),
        tool("{\"mode\": \"required\"}"),
        tool("{\"mode\": 3, \"network\": \"yes\", \"image\": \"\"}"),
        "version: \"1.0.0\"\ntool_type: python\nexecutor_id: runtimes/python_runtime\nexecution_environment:\n  mode: preferred\n  imgae: python:3.12\n",
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn x502_cannot_run_here() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/x/required.py\n{}//- project/.ai/tools/x/specific.py\n{}//- project/.ai/tools/x/sandboxed.py\n{}",
        tool("{\"mode\": \"required\", \"image\": \"python:3.12\"}"),
        tool("{\"mode\": \"specific\", \"target\": \"devbox\"}"),
        tool("{\"mode\": \"sandbox\"}"),
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn no_diagnostic_for_valid_preferences_that_can_run() {
    // `none` and `preferred` never warn; `required` takes the configured image.
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/x/plain.py\n{}//- project/.ai/tools/x/preferred.py\n{}//- project/.ai/tools/x/configured.py\n{}//- project/.ai/config.yaml\nexecution:\n  image: python:3.12\n",
        tool("{\"mode\": \"none\"}"),
        tool("{\"mode\": \"preferred\", \"network\": True}"),
        tool("{\"mode\": \"required\"}"),
    ));
    let out = f.check(&[]);
    assert!(!out.contains("X501"), "{out}");
    // `configured.py` has an image: only X502 (no container runtime on the fixture PATH).
    assert_eq!(out.matches("X502").count(), 1, "{out}");
}
