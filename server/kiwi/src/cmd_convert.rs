//! `kiwi convert SOURCE`: a kiwi directive, or a VS Code `.prompt.md`, as an Agent Skill in
//! the project's skills folder (`.agents/skills/<name>/`, read by Claude Code, VS Code,
//! Codex and the others). Never overwrites without `--force`, never writes anywhere else:
//! the files are written to a temporary folder beside the skill's and renamed into place.

use anyhow::{bail, Context, Result};
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::skill::convert::{self, Converted};
use kiwi_kernel::workspace::Workspace;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where converted skills go, below the project's root.
pub const SKILLS_FOLDER: &str = ".agents/skills";

pub fn run(
    source: &str,
    name: Option<&str>,
    project: Option<&Path>,
    force: bool,
    json: bool,
) -> Result<ExitCode> {
    if let Some(n) = name {
        let s = convert::sanitize_name(n);
        if s != n {
            bail!("--name `{n}` is not a skill name (lower-case letters, digits and single hyphens): `{s}` is");
        }
    }
    let path = Path::new(source);
    let project = match crate::cmd_env::project_for(project)? {
        Some(p) => p,
        // A prompt file of a repository's `.github/prompts/` (no `.ai/`, no skills folder
        // yet): the repository, as the quick fix of its S824 hint takes it.
        None if source.ends_with(".prompt.md") => path
            .canonicalize()
            .ok()
            .and_then(|p| kiwi_kernel::copilot::github_project(&p))
            .context("no project here (no .ai/ folder, skills folder or .github/ above the prompt file): pass --project DIR")?,
        None => bail!("no project here (no .ai/ folder or skills folder found): pass --project DIR"),
    };
    let converted: Converted = if source.ends_with(".prompt.md") {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let file_name = path.file_name().and_then(|f| f.to_str()).unwrap_or(source);
        convert::from_prompt(file_name, &text, name)
    } else {
        let ws = Workspace::load(Some(project.clone()), Host::from_process());
        crate::cmd_env::warn_spaces(&ws);
        let item = crate::cmd_sign::find_item(&ws, source)?;
        if item.item_type != ItemType::Directive {
            bail!(
                "{} `{}` is not a directive: kiwi convert takes a directive or a .prompt.md",
                item.item_type,
                item.id
            );
        }
        convert::from_directive(&ws, &item, name).map_err(anyhow::Error::msg)?
    };
    let skills = project.join(SKILLS_FOLDER);
    let dest = skills.join(&converted.name);
    write_skill(&project, &dest, &converted, force)?;
    let files: Vec<String> = converted.files.iter().map(|(r, _)| r.clone()).collect();
    if json {
        println!(
            "{}",
            json!({"skill": converted.name, "path": dest, "files": files, "dropped": converted.dropped})
        );
    } else {
        println!("wrote skill `{}` to {}", converted.name, dest.display());
        for f in &files {
            println!("  {f}");
        }
        for d in &converted.dropped {
            println!("  not kept: {d}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Write the skill's files into `dest` (below `project`, no symlink on the way): refused
/// when it exists unless `force` (then replaced whole); staged in a temporary folder beside
/// it, so that a failure leaves nothing half-written.
fn write_skill(project: &Path, dest: &Path, c: &Converted, force: bool) -> Result<()> {
    let parent = dest.parent().context("no skills folder")?;
    if dest.symlink_metadata().is_ok() && !force {
        bail!(
            "{} exists: kiwi convert --force replaces it (nothing was written)",
            dest.display()
        );
    }
    kiwi_kernel::fs::check_unlinked(project, dest)
        .map_err(|e| anyhow::anyhow!("refused: {e}; nothing was written"))?;
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let name = dest.file_name().and_then(|n| n.to_str()).unwrap_or("skill");
    let stage = parent.join(format!(".kiwi-convert-{name}-{}", std::process::id()));
    std::fs::create_dir(&stage).with_context(|| format!("cannot write in {}", parent.display()))?;
    let staged = (|| -> Result<()> {
        for (rel, bytes) in &c.files {
            let p: PathBuf = stage.join(rel);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d)?;
            }
            std::fs::write(&p, bytes).with_context(|| format!("cannot write {}", p.display()))?;
        }
        if dest.symlink_metadata().is_ok() {
            // --force: the old skill leaves only once the new one is complete.
            if dest.symlink_metadata()?.is_dir() {
                std::fs::remove_dir_all(dest)
            } else {
                std::fs::remove_file(dest)
            }
            .with_context(|| format!("cannot replace {}", dest.display()))?;
        }
        std::fs::rename(&stage, dest).with_context(|| format!("cannot write {}", dest.display()))
    })();
    if staged.is_err() {
        let _ = std::fs::remove_dir_all(&stage);
    }
    staged
}
