//! `kiwi`: the command line face of the kernel (and, later, the LSP and MCP servers).

mod cmd_check;
mod cmd_env;
mod report;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kiwi",
    version,
    about = "Language server, MCP server and CLI for Kiwi agent workspaces"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check the items of one or more projects and report every diagnostic (exit 1 on errors).
    Check {
        /// Files or folders; every `.ai/` folder found below a path is a project. Default: the current project.
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "human")]
        format: report::Format,
    },
    /// Show how a tool or runtime resolves: its chain, each link's interpreter trail, the environment.
    Env {
        /// A tool or runtime id (or its bare name).
        tool: String,
        /// The project (default: the nearest ancestor of the working directory holding `.ai/`).
        #[arg(long)]
        project: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { paths, format } => cmd_check::run(&paths, format),
        Command::Env {
            tool,
            project,
            json,
        } => cmd_env::run(&tool, project.as_deref(), json),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kiwi: {e:#}");
            ExitCode::from(2)
        }
    }
}
