//! `kiwi`: the command line face of the kernel (and, later, the LSP and MCP servers).

// The CLI's output boundary (`term`): every print of this crate is escaped, and a closed
// pipe is no panic (`term::write`).
macro_rules! println {
    () => { $crate::term::write(false, "", true) };
    ($($arg:tt)*) => { $crate::term::write(false, &format!($($arg)*), true) };
}
macro_rules! eprintln {
    () => { $crate::term::write(true, "", true) };
    ($($arg:tt)*) => { $crate::term::write(true, &format!($($arg)*), true) };
}
#[allow(unused_macros)]
macro_rules! print {
    ($($arg:tt)*) => { $crate::term::write(false, &format!($($arg)*), false) };
}
#[allow(unused_macros)]
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::term::write(true, &format!($($arg)*), false) };
}

mod cmd_check;
mod cmd_convert;
mod cmd_doctor;
mod cmd_env;
mod cmd_keys;
mod cmd_mcp;
mod cmd_registry;
mod cmd_run;
mod cmd_sign;
mod cmd_verify;
mod report;
mod term;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc: the language server re-parses a directive's element tree on every keystroke,
/// and `check` allocates per item; glibc's allocator spent a third of that time in
/// malloc/free (measured with `perf` under `kiwi-bench lsp`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's options, set before any Rust allocation (an arena created earlier would keep
/// the old settings); an option given in the environment (`MIMALLOC_…`) still wins.
///
/// Arenas are committed on demand: eagerly committed, with transparent huge pages, resident
/// memory grew in 2 MB steps (MCP at 10,000 items: 70 MB instead of 48-54 MB; LSP: 164 MB
/// instead of 146 MB). The price is a little latency: over nine alternating pairs of
/// `kiwi-bench lsp` runs, eager commit was faster in seven, medians 3.56 against 3.77 ms.
/// Disabling THP with `allow_thp` works as well, but mimalloc does it with a prctl that
/// every tool kiwi runs would inherit.
#[used]
#[link_section = ".init_array"]
static MIMALLOC_OPTIONS: extern "C" fn() = {
    extern "C" fn set_options() {
        for (option, name, value) in MIMALLOC_SETTINGS {
            // SAFETY: getenv on a NUL-terminated name; mi_option_set only stores the value
            // (it neither allocates nor needs mimalloc initialized).
            unsafe {
                if libc::getenv(name.as_ptr()).is_null() {
                    libmimalloc_sys::mi_option_set(*option, *value);
                }
            }
        }
    }
    set_options
};

/// (option in mimalloc v3's `mi_option_t`, its environment variable, value).
const MIMALLOC_SETTINGS: &[(
    libmimalloc_sys::mi_option_t,
    &std::ffi::CStr,
    std::ffi::c_long,
)] = &[(4, c"MIMALLOC_ARENA_EAGER_COMMIT", 0)];

/// After indexing or checking many items, the servers give the freed pages back.
fn release_free_memory() {
    // SAFETY: mi_collect only frees and returns mimalloc's own unused memory.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// `kiwi --version`: the crate's version and the commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("KIWI_COMMIT"), ")");

#[derive(Parser)]
#[command(
    name = "kiwi",
    version = VERSION,
    about = "Language server, MCP server and CLI for Kiwi agent workspaces"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `--env`: local, sandbox, container, ssh:HOST (a host of your execution.hosts), or
/// kubernetes:CONTEXT (with --dry-run: the manifests a run would apply).
fn parse_env_arg(s: &str) -> std::result::Result<String, String> {
    let named = |p: &str| {
        s.strip_prefix(p).is_some_and(|n| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'))
        })
    };
    if matches!(s, "local" | "sandbox" | "container") || named("ssh:") || named("kubernetes:") {
        Ok(s.to_string())
    } else {
        Err("use local, sandbox, container, ssh:HOST (a host of execution.hosts in your config.yaml) or kubernetes:CONTEXT (with --dry-run)".to_string())
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the language server on stdin/stdout (logs go to stderr).
    Lsp,
    /// Check the items of one or more projects and report every diagnostic (exit 1 on errors).
    Check {
        /// Files or folders; every `.ai/` folder found below a path is a project. VS Code's customization files (`*.agent.md`, `*.instructions.md`, `*.prompt.md`) of a project's `.github/` folders, or named, are checked too. Default: the current project.
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "human")]
        format: report::Format,
        /// Fail (exit 1) when `.ai/kiwi.lock` does not match the files: an item changed since it
        /// was pulled or pinned (R701), or a locked item is missing (R704). For CI.
        #[arg(long)]
        locked: bool,
    },
    /// Show how a tool or runtime resolves: its chain, each link's interpreter trail, the environment.
    Env {
        /// A tool or runtime id (or its bare name), or the path of a script inside a skill.
        tool: String,
        /// The project (default: the nearest ancestor of the working directory holding `.ai/`).
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
        /// Plan it for an environment (`ssh:HOST` contacts the host, read-only: its paths, its
        /// interpreters' trails, which files it lacks).
        #[arg(long, value_parser = parse_env_arg)]
        env: Option<String>,
    },
    /// Run a tool: its output as it comes (stdout to stdout, stderr to stderr), then a one-line
    /// summary on stderr.
    #[command(after_help = "\
Exit status: the tool's own; 124 when it timed out, 130 when cancelled (Ctrl-C, SIGTERM, SIGHUP), \
141 when its stdout was closed (`kiwi run x | head -2`: the tool is stopped at once), 128+N when \
ended by signal N; for an HTTP tool 0 below status 400, 1 at 400 and above or when the request \
fails; 2 when nothing ran (broken chain, bad parameters, an environment that is not available \
here, a command that cannot be started).

With --json nothing is streamed: one JSON object is printed on stdout when the run ends, the \
result (tool, chain, execution, exit_code, stdout, stderr, json, duration_ms, timed_out, \
cancelled, truncated; or status, headers, body, json for HTTP) or {\"error\": {kind, message}}.

--dry-run prints the plan (chain, command, execution environment and why, variable names; \
values only for variables the chain itself defines) and runs nothing.")]
    Run {
        /// A tool id (or its bare name), or the path of a script inside a skill.
        tool: String,
        /// A skill script's arguments (after `--`); a tool takes --param instead.
        #[arg(last = true, value_name = "ARGS")]
        args: Vec<String>,
        /// A parameter; VALUE is taken as JSON when it parses (5, true, [1,2]), else as a string.
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// All parameters as one JSON object (`--param` values override its keys).
        #[arg(long = "params", value_name = "JSON")]
        params_json: Option<String>,
        /// Configuration overrides, deep-merged over the chain's CONFIG (e.g. '{"timeout": 10}').
        #[arg(long = "config", value_name = "JSON")]
        config_json: Option<String>,
        /// The project (default: the nearest ancestor of the working directory holding `.ai/`).
        #[arg(long)]
        project: Option<PathBuf>,
        /// Where to run it; it cannot weaken what the tool requires (mode required/specific/sandbox).
        #[arg(long, value_parser = parse_env_arg)]
        env: Option<String>,
        /// Show what would run, and run nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print one JSON object (the result, or the plan with --dry-run) instead of streaming.
        #[arg(long)]
        json: bool,
    },
    /// Serve MCP over stdio: the tools search, load, execute and help, directives as prompts,
    /// items as kiwi:// resources. Logs go to stderr (KIWI_LOG=debug for more).
    Mcp {
        /// The project (default: the working directory when it holds `.ai/`, else each call's project_path).
        #[arg(long)]
        project: Option<PathBuf>,
        /// Bridge stdio to the agent endpoint of the editor's language server (`kiwi lsp`) for
        /// the project (--project, else the working directory): the agent then sees the
        /// editor's unsaved buffers, the item under the cursor (kiwi://editor/active) and its
        /// runs show in the editor.
        #[arg(long)]
        attach: bool,
        /// The endpoint's socket (with --attach), as the editor package gives it.
        #[arg(long, requires = "attach")]
        socket: Option<PathBuf>,
    },
    /// Search items by relevance (BM25, typo tolerant) across the project, user, extra (KIWI_SPACES, `spaces:`) and builtin spaces.
    Search {
        query: String,
        /// directive, tool, knowledge, system or skill (default: every type).
        #[arg(long = "type")]
        item_type: Option<String>,
        /// project, user, builtin, an extra space's name, registry (every configured registry),
        /// registry:NAME, or all (the spaces and the registries).
        #[arg(long)]
        source: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Registries: create one, and configure the ones you use (`registries:` of the user's
    /// config.yaml; clones in the user space's cache/registries/).
    Registry {
        #[command(subcommand)]
        command: RegistryCommand,
    },
    /// Publish an item (its file, TYPE/ID or id) to a configured registry: refused when it has
    /// error diagnostics; its files and index line are committed and pushed.
    ///
    /// Several items (or a folder: every item below it) are published in one commit, all or
    /// nothing: if one is refused, nothing is published.
    Publish {
        /// Items: a file, TYPE/ID, an id, or a folder of items.
        #[arg(required = true, num_args = 1..)]
        items: Vec<String>,
        #[arg(long)]
        registry: String,
        /// The version (semver); default: the one the item declares.
        #[arg(long)]
        version: Option<String>,
        /// Publish without a signature (default: signed with the user's key, `kiwi keys new`).
        #[arg(long)]
        unsigned: bool,
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Pull TYPE/ID[@VERSION] (an exact version or a semver requirement such as ^1.2) from the
    /// registries: the digest is checked before anything is written, nothing is overwritten
    /// without --force, a tool's missing chain comes with it.
    ///
    /// kiwi.lock: with --locked, every item it pins is restored exactly (version and digest,
    /// a yanked version included); with --update, pinned items move to the newest version
    /// compatible with their pin (`^PINNED`; name a version to cross a major). A pin never
    /// moves down unless the version is named. A pinned item edited since it was pulled is
    /// replaced only with --overwrite-local.
    Pull {
        /// TYPE/ID[@VERSION]; with --locked or --update it may be left out (every pinned item).
        item: Option<String>,
        #[arg(long, value_enum, default_value = "project")]
        to: cmd_registry::To,
        /// Replace files that exist (never a local edit of a pinned item: --overwrite-local).
        #[arg(long)]
        force: bool,
        /// Restore every item kiwi.lock pins, exactly (refused when the registry's bytes differ
        /// from the lock's digest); items whose files match are left alone.
        #[arg(long, conflicts_with_all = ["item", "update"])]
        locked: bool,
        /// Move the item (or every pinned item) to the newest version compatible with its pin.
        #[arg(long)]
        update: bool,
        /// Replace a pinned item whose files you edited since it was pulled.
        #[arg(long)]
        overwrite_local: bool,
        /// Trust the key of a publisher seen for the first time (added to your trust store;
        /// the pull says so). Without it (or `trust.tofu: true` in your config.yaml) an item
        /// signed by a key you do not trust is refused.
        #[arg(long)]
        trust_on_first_use: bool,
        /// Only this registry (default: the first configured one that has the item).
        #[arg(long)]
        registry: Option<String>,
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// The items kiwi.lock pins (the project's and the user space's) against what their
    /// registries offer: pinned, latest compatible (`^PINNED`), latest, registry; a yanked
    /// pin is marked. The registries are fetched first (--offline: the local clones).
    Outdated {
        #[arg(long)]
        offline: bool,
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Yank TYPE/ID@VERSION: pulls no longer choose it (a line saying so is appended).
    Yank {
        item: String,
        #[arg(long)]
        registry: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Create the user space (folders, config.yaml, the core directives and tools). Idempotent;
    /// --force refreshes files init wrote, never a file you changed.
    Init {
        #[arg(long)]
        force: bool,
        #[arg(long)]
        json: bool,
    },
    /// Your Ed25519 key pair and the publisher keys you trust.
    Keys {
        #[command(subcommand)]
        cmd: cmd_keys::KeysCommand,
    },
    /// Sign an item's current files with your key and pin them in `.ai/kiwi.lock` (also how a
    /// pulled item you changed on purpose is re-pinned, so `kiwi run` accepts it again).
    Sign {
        /// TYPE/ID, an id or name, or the item's file.
        item: String,
        /// The version to record (default: the item's own, or the pulled version).
        #[arg(long)]
        version: Option<String>,
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Convert a kiwi directive (its steps as instructions, its tools as scripts) or a VS Code
    /// `.prompt.md` (name, description, argument-hint kept, as VS Code's migration does) into
    /// an Agent Skill in the project's `.agents/skills/<name>/`. Never overwrites without --force.
    Convert {
        /// A directive (TYPE/ID, id, or its file) or a `.prompt.md` file.
        source: String,
        /// The skill's name (default: from the source's name).
        #[arg(long)]
        name: Option<String>,
        /// Replace a skill of that name.
        #[arg(long)]
        force: bool,
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Verify items: signed by a key you trust, unchanged since (their kiwi.lock entry, their
    /// rye:signed header). Without ITEM: every locked or signed item. Exit 1 unless all verify.
    Verify {
        items: Vec<String>,
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// What kiwi finds on this machine — spaces, interpreters, execution environments, keys,
    /// registries, editors, agent configs — and what to do about each gap. Reads only.
    Doctor {
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print the completion script of a shell, generated from this CLI's own definition
    /// (bash: `kiwi completions bash > ~/.local/share/bash-completion/completions/kiwi`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page kiwi(1) (roff), generated from this CLI's own definition; with
    /// --dir, write it and one page per subcommand (kiwi-run.1, …) there.
    Man {
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum RegistryCommand {
    /// Create a registry: a git repository holding kiwi-registry.toml and the empty index.
    New {
        dir: PathBuf,
        /// A bare repository (to serve, or to push to).
        #[arg(long)]
        bare: bool,
        /// Its name (default: the folder's name).
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Configure a registry (URL: https://, ssh://, git@host:path, file://, or a path); it is
    /// fetched and checked first.
    Add {
        name: String,
        url: String,
        #[arg(long)]
        json: bool,
    },
    /// The configured registries.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Forget a registry (and its clone).
    Remove {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Fetch the registries (all, or those named), checking everything new.
    Update {
        names: Vec<String>,
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    // Before anything else (no thread runs yet): a tool must not read kiwi's environment
    // from /proc/<kiwi>/environ. The environment itself is kept (on the heap).
    kiwi_kernel::context::hide_initial_environment();
    kiwi_kernel::workspace::set_release_free_memory(release_free_memory);
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Lsp => kiwi_lsp::run_stdio()
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::from),
        Command::Check {
            paths,
            format,
            locked,
        } => cmd_check::run(&paths, format, locked),
        Command::Env {
            tool,
            project,
            json,
            env: Some(env),
        } => cmd_run::run(&cmd_run::Options {
            tool: &tool,
            args: &[],
            params: &[],
            params_json: None,
            config_json: None,
            project: project.as_deref(),
            env: Some(&env),
            dry_run: true,
            json,
        }),
        Command::Env {
            tool,
            project,
            json,
            env: None,
        } => cmd_env::run(&tool, project.as_deref(), json),
        Command::Run {
            tool,
            args,
            params,
            params_json,
            config_json,
            project,
            env,
            dry_run,
            json,
        } => cmd_run::run(&cmd_run::Options {
            tool: &tool,
            args: &args,
            params: &params,
            params_json: params_json.as_deref(),
            config_json: config_json.as_deref(),
            project: project.as_deref(),
            env: env.as_deref(),
            dry_run,
            json,
        }),
        Command::Mcp {
            project,
            attach: true,
            socket,
        } => cmd_mcp::attach(project, socket),
        Command::Mcp { project, .. } => cmd_mcp::mcp(project),
        Command::Search {
            query,
            item_type,
            source,
            limit,
            project,
            json,
        } => cmd_mcp::search(&cmd_mcp::SearchOptions {
            query: &query,
            item_type: item_type.as_deref(),
            source: source.as_deref(),
            limit,
            project: project.as_deref(),
            json,
        }),
        Command::Init { force, json } => cmd_mcp::init(force, json),
        Command::Registry { command } => match command {
            RegistryCommand::New {
                dir,
                bare,
                name,
                json,
            } => cmd_registry::new(&dir, bare, name.as_deref(), json),
            RegistryCommand::Add { name, url, json } => cmd_registry::add(&name, &url, json),
            RegistryCommand::List { json } => cmd_registry::list(json),
            RegistryCommand::Remove { name, json } => cmd_registry::remove(&name, json),
            RegistryCommand::Update { names, json } => cmd_registry::update(&names, json),
        },
        Command::Publish {
            items,
            registry,
            version,
            unsigned,
            project,
            json,
        } => cmd_registry::publish(&cmd_registry::PublishOptions {
            items: &items,
            registry: &registry,
            version: version.as_deref(),
            unsigned,
            project: project.as_deref(),
            json,
        }),
        Command::Pull {
            item,
            to,
            force,
            locked,
            update,
            overwrite_local,
            trust_on_first_use,
            registry,
            project,
            json,
        } => cmd_registry::pull(&cmd_registry::PullOptions {
            reference: item.as_deref(),
            to,
            force,
            locked,
            update,
            overwrite_local,
            trust_on_first_use,
            registry: registry.as_deref(),
            project: project.as_deref(),
            json,
        }),
        Command::Outdated {
            offline,
            project,
            json,
        } => cmd_registry::outdated(offline, project.as_deref(), json),
        Command::Yank {
            item,
            registry,
            json,
        } => cmd_registry::yank(&item, registry.as_deref(), json),
        Command::Keys { cmd } => cmd_keys::run(cmd),
        Command::Sign {
            item,
            version,
            project,
            json,
        } => cmd_sign::run(&item, project.as_deref(), version.as_deref(), json),
        Command::Convert {
            source,
            name,
            force,
            project,
            json,
        } => cmd_convert::run(&source, name.as_deref(), project.as_deref(), force, json),
        Command::Verify {
            items,
            project,
            json,
        } => cmd_verify::run(&items, project.as_deref(), json),
        Command::Doctor { project, json } => cmd_doctor::run(project.as_deref(), json),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "kiwi", &mut out);
            print_all(&out)
        }
        Command::Man { dir } => man(dir.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kiwi: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Write generated text to stdout; a reader that stopped early (`kiwi man | head`) is no error.
fn print_all(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// `kiwi man`: kiwi(1) on stdout, or every page into a folder.
fn man(dir: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    use anyhow::Context as _;
    let cmd = <Cli as clap::CommandFactory>::command();
    let Some(dir) = dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        return print_all(&out);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(cmd, dir).with_context(|| format!("writing {}", dir.display()))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod allocator_tests {
    /// The `.init_array` entry ran (this test binary has the same global allocator).
    #[test]
    fn mimalloc_options_are_set_before_main() {
        for (option, name, value) in super::MIMALLOC_SETTINGS {
            if std::env::var_os(name.to_str().unwrap()).is_none() {
                // SAFETY: reads an option.
                assert_eq!(
                    unsafe { libmimalloc_sys::mi_option_get(*option) },
                    *value,
                    "{name:?}"
                );
            }
        }
    }
}
