//! `kiwi doctor`: what kiwi finds on this machine, and what to do about each gap (the kernel's
//! `doctor::examine`, printed).

use anyhow::Result;
use kiwi_kernel::context::Host;
use kiwi_kernel::doctor::{self, Status};
use kiwi_kernel::workspace::Workspace;
use std::path::Path;
use std::process::ExitCode;

pub fn run(project: Option<&Path>, json: bool) -> Result<ExitCode> {
    let project = crate::cmd_env::project_for(project)?;
    let ws = Workspace::load(project, Host::from_process());
    let report = doctor::examine(&ws);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut area = "";
    for f in &report.findings {
        if f.area != area {
            area = f.area;
            println!("{area}");
        }
        let mark = match f.status {
            Status::Ok => "ok  ",
            Status::Gap => "GAP ",
            Status::Note => "note",
        };
        println!("  {mark} {}: {}", f.name, f.detail);
        if let Some(fix) = &f.fix {
            if f.status != Status::Ok {
                println!("       → {fix}");
            }
        }
    }
    let gaps = report.gaps();
    println!(
        "\n{}",
        match gaps {
            0 => "no gaps".to_string(),
            1 => "1 gap: what kiwi cannot do here until it is closed is said above".to_string(),
            n => format!("{n} gaps: what kiwi cannot do here until they are closed is said above"),
        }
    );
    Ok(ExitCode::SUCCESS)
}
