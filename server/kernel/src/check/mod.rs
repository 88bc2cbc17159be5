//! Checks: every diagnostic of an item, those of its own file (from the parsers) and those
//! that need the rest of the workspace (references, shadowing, chains, environments).
//!
//! The cross-item rules are a registry: each [`Rule`] is one function that appends the
//! diagnostics of one concern; adding a rule adds one entry to [`RULES`].

use crate::diag::{self, Code, Diagnostic};
use crate::text::TextRange;
use crate::workspace::{Item, Parsed, Workspace};
use rayon::prelude::*;
use std::sync::Arc;

mod environment;
pub use environment::link_env;
mod executor;
mod names;
mod paths;
mod references;
pub use environment::build_env;
use environment::{check_environment, templated_names};
use executor::{check_chain, check_config_types};
pub use executor::{deep_merge, merge_config};
use names::{check_declared_name, check_script_confined, check_shadowing};
pub use names::{ryeos_category_folder, script_refusal};
use paths::check_paths;
pub use paths::folder_of;
pub(crate) use paths::home_path as is_home_path;
use references::{
    check_directive_references, check_grants_match_something, check_knowledge_references,
};

/// One cross-item rule: which codes it may produce, and the function that checks.
pub struct Rule {
    pub name: &'static str,
    pub codes: &'static [Code],
    pub check: fn(&Workspace, &Arc<Item>, &mut Vec<Diagnostic>),
}

/// The cross-item rules, in the order they run.
pub const RULES: &[Rule] = &[
    Rule {
        name: "declared name matches the file",
        codes: &[Code::K002],
        check: check_declared_name,
    },
    Rule {
        name: "shadowing",
        codes: &[Code::K005],
        check: check_shadowing,
    },
    Rule {
        name: "directive references",
        codes: &[Code::K003, Code::K004, Code::K006],
        check: check_directive_references,
    },
    Rule {
        name: "grants that match nothing",
        codes: &[Code::P207],
        check: check_grants_match_something,
    },
    Rule {
        name: "step parameters against the called tool's schema",
        codes: &[Code::D113, Code::D114, Code::D115],
        check: crate::directive::params::check_step_params,
    },
    Rule {
        name: "knowledge references",
        codes: &[Code::N604],
        check: check_knowledge_references,
    },
    Rule {
        name: "files an item runs lie inside its space",
        codes: &[Code::K006],
        check: check_script_confined,
    },
    Rule {
        name: "a ryeos tool's category is its folder",
        codes: &[Code::T310],
        check: names::check_ryeos_category,
    },
    Rule {
        name: "executor chain",
        codes: &[Code::T304, Code::K007],
        check: check_chain,
    },
    Rule {
        name: "configuration against the primitive",
        codes: &[Code::T306],
        check: check_config_types,
    },
    Rule {
        name: "environment",
        codes: &[
            Code::E401,
            Code::E402,
            Code::E403,
            Code::E404,
            Code::E405,
            Code::E406,
            Code::E407,
            Code::E408,
            Code::E409,
            Code::E410,
            Code::T307,
            Code::T308,
        ],
        check: check_environment,
    },
    Rule {
        name: "paths in the configuration",
        codes: &[Code::T309, Code::E412],
        check: check_paths,
    },
    Rule {
        name: "execution environment preference",
        codes: &[Code::X501, Code::X502],
        check: crate::exec::preference::check_preference,
    },
    Rule {
        name: "agent skills",
        codes: &[
            Code::S802,
            Code::S803,
            Code::S804,
            Code::S805,
            Code::S806,
            Code::S807,
            Code::S808,
            Code::S809,
            Code::S810,
            Code::S811,
            Code::K005,
        ],
        check: crate::skill::check_skill,
    },
    Rule {
        name: "lockfile and signatures",
        codes: &[Code::R701, Code::R702, Code::R703, Code::R706],
        check: crate::trust::audit::check_item,
    },
];

/// Every diagnostic of one item, sorted by position.
pub fn check_item(ws: &Workspace, item: &Arc<Item>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = item.parse_diagnostics().to_vec();
    if !matches!(item.parsed, Parsed::Unreadable(_)) {
        for rule in RULES {
            let before = out.len();
            (rule.check)(ws, item, &mut out);
            debug_assert!(
                out[before..].iter().all(|d| rule.codes.contains(&d.code)),
                "the rule `{}` emitted {:?}, which it does not declare",
                rule.name,
                out[before..].iter().map(|d| d.code).collect::<Vec<_>>()
            );
        }
    }
    diag::normalize(&mut out);
    out
}

/// Check many items in parallel; results in the order given.
pub fn check_items(ws: &Workspace, items: &[Arc<Item>]) -> Vec<Vec<Diagnostic>> {
    let out = items.par_iter().map(|i| check_item(ws, i)).collect();
    if items.len() >= 1024 {
        // A server checks the whole workspace once after indexing, then keeps running.
        crate::workspace::release_free_memory();
    }
    out
}

/// Where to report what is missing from an item: its first line, or, in a signed file, the
/// first line after the signature comment.
pub fn first_line(item: &Item) -> TextRange {
    crate::text::first_line_after_header(item.text())
}
