//! The environment rules: E401-E410, T307, T308.

use crate::chain;
use crate::diag::{self, Code, Diagnostic, Fix, Severity};
use crate::env::{self, LinkEnv, Origin};
use crate::ids::ItemType;
use crate::template::{self, Piece};
use crate::text::TextRange;
use crate::tool::Field;
use crate::value::Value;
use crate::workspace::{Item, Workspace};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// E401-E410, T307, T308: the environment

/// One link of a chain as the environment builder sees it (here and on an ssh host).
pub fn link_env(l: &Item) -> LinkEnv<'_> {
    let t = l.tool();
    LinkEnv {
        id: &l.id,
        env_config: t.and_then(|t| t.value(Field::EnvConfig)),
        config_env: t
            .and_then(|t| t.value(Field::Config))
            .and_then(|c| c.get("env")),
        ryeos_dir: t.filter(|t| t.is_ryeos()).and_then(|_| l.path.parent()),
    }
}

/// The environment a tool's chain would get, built from the workspace.
pub fn build_env(ws: &Workspace, links_tool_first: &[Arc<Item>]) -> env::BuiltEnv {
    let links: Vec<LinkEnv> = links_tool_first.iter().rev().map(|l| link_env(l)).collect();
    let mut built = env::build(
        &ws.host.vars,
        ws.host.home.as_deref(),
        ws.project.as_deref(),
        &ws.user,
        &ws.config.filter,
        &links,
    );
    // rye's `anchor:` (the tool's folder and the runtime's `lib` on `PYTHONPATH`).
    if let Some((at, vars)) = env::anchor::apply(ws, links_tool_first, &built.vars) {
        let link = links_tool_first.len() - 1 - at;
        for v in vars {
            built
                .origins
                .insert(v.name.clone(), Origin::Anchor { link });
            built.vars.insert(v.name, v.value);
        }
    }
    // Nothing kiwi runs writes into a space: Python writes no bytecode cache (`__pycache__`)
    // beside the modules a tool imports, which may lie in a read-only extra or builtin
    // space (issue 23, cause 14). PYTHONDONTWRITEBYTECODE rather than PYTHONPYCACHEPREFIX:
    // every Python honours it (the prefix needs 3.8 and a folder writable inside a
    // container or sandbox), and a recompile of a tool's few modules costs milliseconds.
    built
        .vars
        .insert("PYTHONDONTWRITEBYTECODE".into(), "1".into());
    built
        .origins
        .insert("PYTHONDONTWRITEBYTECODE".into(), Origin::Kiwi);
    built
}

/// The top-level CONFIG keys of every link of the chain, and, when other tools run through
/// this one (a runtime), of those tools and the tools above them: rye merges the configs of a
/// chain (primitive first, the tool last) and templates `{NAME}` from the merged map.
fn chain_config_keys(ws: &Workspace, item: &Arc<Item>, links: &[Arc<Item>]) -> BTreeSet<String> {
    fn keys_of(i: &Item, out: &mut BTreeSet<String>) {
        if let Some(m) = i
            .tool()
            .and_then(|t| t.value(Field::Config))
            .and_then(|c| c.as_map())
        {
            out.extend(m.iter().map(|e| e.key.clone()));
        }
    }
    let mut keys = BTreeSet::new();
    for l in links {
        keys_of(l, &mut keys);
    }
    // The tools above: those whose executor is this item, then theirs (bounded).
    let callers = executor_callers(ws);
    let mut frontier = vec![item.clone()];
    let mut seen: BTreeSet<std::path::PathBuf> = BTreeSet::new();
    for _ in 0..8 {
        let mut next = Vec::new();
        for cur in &frontier {
            for i in callers.get(&cur.id).into_iter().flatten() {
                if !seen.insert(i.path.clone()) {
                    continue;
                }
                keys_of(i, &mut keys);
                next.push(i.clone());
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    keys
}

/// How many tools name this item as their executor.
fn direct_callers(ws: &Workspace, item: &Arc<Item>) -> usize {
    executor_callers(ws).get(&item.id).map_or(0, Vec::len)
}

/// Executor id -> the tools (of every space) that name it: one walk of the workspace per
/// generation, shared by every check (a walk per runtime checked was quadratic, issue 25).
fn executor_callers(ws: &Workspace) -> Arc<HashMap<String, Vec<Arc<Item>>>> {
    ws.derived("executor callers", ItemType::Tool, |items| {
        let mut callers: HashMap<String, Vec<Arc<Item>>> = HashMap::new();
        for i in items {
            if let Some(exec) = i.tool().and_then(|t| t.str(Field::ExecutorId)) {
                callers.entry(exec.to_string()).or_default().push(i.clone());
            }
        }
        callers
    })
}

/// Every `{NAME}` used in the config strings of the links.
pub(super) fn templated_names(links: &[Arc<Item>]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for l in links {
        let Some(c) = l.tool().and_then(|t| t.value(Field::Config)) else {
            continue;
        };
        c.walk(&mut |v| {
            if let Some(s) = v.as_str() {
                for p in template::scan(s) {
                    if let Piece::Param { name, .. } = p {
                        out.insert(name);
                    }
                }
            }
        });
    }
    out
}

/// rye drops a value of an HTTP `body` that is a single unresolved `{NAME}` (optional provider
/// fields), so such a value is no T307.
fn optional_body_value(config: &Value, v: &Value, s: &str) -> bool {
    let t = s.trim();
    let single = t.starts_with('{')
        && t.ends_with('}')
        && t[1..t.len() - 1]
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_');
    single
        && config
            .get("body")
            .is_some_and(|b| b.range.start <= v.range.start && v.range.end <= b.range.end)
}

pub(super) fn check_environment(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(tool) = item.tool() else { return };
    if let Some(ec) = tool.value(Field::EnvConfig) {
        out.extend(env::check_env_config_in(ec, item.text()));
    }
    if chain::is_primitive(item) {
        return;
    }
    let links = match chain::resolve(ws, item) {
        Ok(c) => c.links,
        Err(e) => e.links,
    };
    let built = build_env(ws, &links);
    let own = links.len() - 1; // build() numbers links from the primitive up.
    out.extend(
        built
            .diagnostics
            .iter()
            .filter(|(l, _)| *l == own)
            .map(|(_, d)| d.clone()),
    );

    let Some(config) = tool.value(Field::Config) else {
        return;
    };
    // Names the chain defines: every link's interpreter var (resolved or not), its env and
    // CONFIG.env keys, and what the dotenv files define.
    let mut chain_defined: BTreeSet<String> = BTreeSet::new();
    for l in &links {
        let Some(t) = l.tool() else { continue };
        if let Some(var) = t
            .value(Field::EnvConfig)
            .and_then(|e| e.get("interpreter"))
            .and_then(|i| i.get("var"))
        {
            chain_defined.extend(var.as_str().map(str::to_string));
            if t.is_ryeos() {
                // ryeos names what the interpreter resolved `${interpreter}`.
                chain_defined.insert("interpreter".into());
            }
        }
        if t.is_ryeos() && t.value(Field::EnvConfig).is_some() {
            chain_defined.insert("runtime_dir".into());
        }
        for v in [
            t.value(Field::EnvConfig).and_then(|e| e.get("env")),
            t.value(Field::Config).and_then(|c| c.get("env")),
        ]
        .into_iter()
        .flatten()
        {
            chain_defined.extend(v.as_map().unwrap_or_default().iter().map(|e| e.key.clone()));
        }
    }
    for (name, origin) in &built.origins {
        if !matches!(origin, Origin::Base) {
            chain_defined.insert(name.clone());
        }
    }
    let params: BTreeSet<String> = tool
        .value(Field::ConfigSchema)
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.as_map())
        .map(|m| m.iter().map(|e| e.key.clone()).collect())
        .unwrap_or_default();
    // rye templates `{NAME}` from the configs merged along the chain: every link's config
    // keys, and (for a runtime) the config keys of the tools that run through it.
    // Computed only when a name is otherwise unknown (it walks the workspace).
    let chain_keys: std::cell::OnceCell<BTreeSet<String>> = std::cell::OnceCell::new();
    // `CONFIG.env` values are environment entries: E409 reports their undefined references.
    let env_range = config.get("env").map(|v| v.range);
    let mut strings: Vec<&Value> = Vec::new();
    config.walk(&mut |v| {
        if v.as_str().is_some()
            && !env_range.is_some_and(|r| r.start <= v.range.start && v.range.end <= r.end)
        {
            strings.push(v);
        }
    });
    let filter = env::Filter::new(&ws.config.filter);
    for v in strings {
        let Some(s) = v.as_string() else { continue };
        for piece in template::scan(&s.value) {
            let range_of = |r: TextRange| {
                if s.verbatim {
                    r.shift(s.content.start)
                } else {
                    v.range
                }
            };
            match piece {
                Piece::Text(_) => {}
                Piece::Param { name, range } => {
                    if template::is_host_name(&name)
                        || params.contains(&name)
                        || optional_body_value(config, v, &s.value)
                        || chain_keys
                            .get_or_init(|| chain_config_keys(ws, item, &links))
                            .contains(&name)
                    {
                        continue;
                    }
                    // A runtime is templated with the merged config of the tool that runs
                    // through it: with no such tool here, the name is the callers' to give
                    // (rye's system-space runtimes); with some, none of them gives it.
                    let runtime_callers = (tool.str(Field::ToolType) == Some("runtime"))
                        .then(|| direct_callers(ws, item));
                    if runtime_callers == Some(0) {
                        continue;
                    }
                    let known: Vec<&str> = template::KERNEL_NAMES
                        .iter()
                        .copied()
                        .chain(params.iter().map(String::as_str))
                        .collect();
                    // Among a tool's few parameters a shared start is a good hint too
                    // (`{outfile}` for `output`).
                    let suggestion = diag::closest(&name, known).or_else(|| {
                        params
                            .iter()
                            .map(|p| {
                                let shared = p
                                    .chars()
                                    .zip(name.chars())
                                    .take_while(|(a, b)| a == b)
                                    .count();
                                (shared, p)
                            })
                            .filter(|(shared, _)| *shared >= 3)
                            .max_by_key(|(shared, _)| *shared)
                            .map(|(_, p)| p.as_str())
                    });
                    let r = range_of(range);
                    let declared = if params.is_empty() {
                        "CONFIG_SCHEMA declares no parameter".to_string()
                    } else {
                        format!(
                            "CONFIG_SCHEMA declares {}",
                            params
                                .iter()
                                .map(|p| format!("`{p}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    let mut d = Diagnostic::new(
                        Code::T307,
                        r,
                        format!(
                            "`{{{name}}}` is neither a parameter declared in CONFIG_SCHEMA, nor a config key of the chain, nor a name the host provides ({declared}; the host provides {}){}",
                            template::KERNEL_NAMES
                                .iter()
                                .copied()
                                .chain(template::HOST_NAMES.iter().map(|(n, _)| *n))
                                .collect::<Vec<_>>()
                                .join(", "),
                            diag::did_you_mean(suggestion)
                        ),
                    );
                    if let Some(n) = runtime_callers {
                        d = Diagnostic::new(
                            Code::T307,
                            r,
                            format!(
                                "`{{{name}}}` is given by {} that {} through this runtime (rye templates it from the caller's merged config), nor declared in CONFIG_SCHEMA, nor a name the host provides{}",
                                if n == 1 { "neither the tool".to_string() } else { format!("none of the {n} tools") },
                                if n == 1 { "runs" } else { "run" },
                                diag::did_you_mean(suggestion)
                            ),
                        )
                        .severity(Severity::Warning);
                    }
                    if let (Some(sug), true) = (suggestion, s.verbatim) {
                        d = d.fix(Fix::replace(
                            format!("Change to `{{{sug}}}`"),
                            r,
                            format!("{{{sug}}}"),
                        ));
                    }
                    out.push(d);
                }
                Piece::Env {
                    name,
                    default,
                    range,
                } => {
                    // ryeos spells the host's names `${params_json}`. An undefined `${VAR}`
                    // becomes "" in rye (`PrimitiveExecutor._template_config`:
                    // `env.get(var_expr, "")`), never a refusal: T308 is a warning.
                    if default.is_some()
                        || chain_defined.contains(&name)
                        || template::is_host_name(&name)
                        || template::is_runtime_env_name(&name)
                    {
                        continue;
                    }
                    let r = range_of(range);
                    if ws.host.vars.contains_key(&name) && filter.passes(&name) {
                        out.push(
                            Diagnostic::new(
                                Code::T308,
                                r,
                                format!(
                                    "`${{{name}}}` is defined only by the environment kiwi was started from; define it in the chain or a .env file, or give it a default with `${{{name}:-...}}`"
                                ),
                            )
                            .severity(Severity::Warning),
                        );
                    } else {
                        let why = if ws.host.vars.contains_key(&name) {
                            "the environment filter blocks it from the server's environment"
                        } else {
                            "it is not set anywhere"
                        };
                        out.push(Diagnostic::new(
                            Code::T308,
                            r,
                            format!(
                                "`${{{name}}}` is defined by no link of the chain and no .env file, and {why}; set it in ENV_CONFIG.env or CONFIG.env, or give a default with `${{{name}:-...}}`"
                            ),
                        ));
                    }
                }
            }
        }
    }
}
