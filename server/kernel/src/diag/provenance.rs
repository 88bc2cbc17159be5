//! Why each code has its severity: the runtime behaviour it predicts, or kiwi's advice
//! (issue 23). One entry per code of [`super::CATALOGUE`]; `docs/diagnostics.md` shows them.
//!
//! The rule: a diagnostic is an **error** only where a runtime fails or refuses — rye-os's
//! (`shared/reference/rye-os/`, and the system space its corpus ships, whose parsers and
//! extractors rye's runtime loads), kiwi-mcp's (`shared/seeds/`), or kiwi's own run as the
//! specification prescribes it (`shared/spec/`); a **warning** where the runtime accepts
//! something very likely a mistake; **information** for what the runtime will do that the
//! author may not expect; kiwi's own advice is at most a **hint**. Paths below are relative
//! to `shared/reference/rye-os/` unless they name `spec/`, `seeds/` or the corpus
//! (`.ai/tools/rye/...`, rye's system space at the same commit).

use super::{Code, Severity};

/// What a code's severity rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ground {
    /// A runtime fails or refuses: any severity.
    Refuses,
    /// The runtime accepts it, and it is very likely a mistake: at most a warning.
    Accepts,
    /// What the runtime will do, made visible (no mistake): at most information.
    Informs,
    /// kiwi's advice: at most a hint.
    Advice,
}

impl Ground {
    /// The most severe a code with this ground may be.
    pub fn max_severity(self) -> Severity {
        match self {
            Ground::Refuses => Severity::Error,
            Ground::Accepts => Severity::Warning,
            Ground::Informs => Severity::Info,
            Ground::Advice => Severity::Hint,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Ground::Refuses => "the runtime refuses",
            Ground::Accepts => "the runtime accepts it; very likely a mistake",
            Ground::Informs => "what the runtime will do",
            Ground::Advice => "kiwi's advice",
        }
    }
}

/// One code's provenance.
#[derive(Debug)]
pub struct Provenance {
    pub code: Code,
    pub ground: Ground,
    /// The behaviour, with the file and function (or spec section) it is read in.
    pub why: &'static str,
}

use Ground::*;

const fn p(code: Code, ground: Ground, why: &'static str) -> Provenance {
    Provenance { code, ground, why }
}

/// Every code's provenance, in the catalogue's order.
pub const PROVENANCE: &[Provenance] = &[
    p(Code::K001, Refuses, "rye reads every item with `Path.read_text(encoding=\"utf-8\")` (`rye/utils/integrity.py` `verify_item`, `rye/tools/execute.py`), which raises on bytes that are not UTF-8"),
    p(Code::K002, Refuses, "rye's `sign` refuses an item whose name is not its file's stem (`match_filename` in the extractors' `validation_schema`, `rye/utils/validators.py` `validate_field`), and rye loads no unsigned item (`verify_item`: \"Unsigned item\")"),
    p(Code::K003, Refuses, "rye resolves an id to a file below `.ai/tools/` (`rye/executor/primitive_executor.py` `_resolve_tool_path`); none: `execute` returns \"Tool not found\""),
    p(Code::K004, Refuses, "rye resolves an id only as a path below its type's folder (`primitive_executor.py` `_resolve_tool_path`, `rye/tools/execute.py` `_find_item`): a bare name that several items end with is no such path, and the call finds nothing"),
    p(Code::K005, Advice, "rye takes the project's item before the user's before the system's (`_resolve_tool_path`); the shadowed one is never used, which is usually intended"),
    p(Code::K006, Refuses, "kiwi refuses an id or file that climbs out of its space before any file access (spec/01-items-and-formats.md; `exec::request` `refuse_outside`); rye refuses a dependency that escapes through a symlink (`primitive_executor.py` `_verify_tool_dependencies`: \"Symlink escape\"); a file kiwi cannot read (no permission: rye's `read_text` raises too; not a regular file; larger than 64 MiB, which kiwi's own run refuses) is not an item it can run"),
    p(Code::K007, Advice, "ryeos resolves an `@alias` executor through the `execution.aliases` of its tool kind schema (`.ai/node/engine/kinds/tool/tool.kind-schema.yaml` of its core bundle; ryeos's `engine/resolution` knowledge: \"If a tool uses `@subprocess`, that alias is declared on the kind execution block\"); without that file in a space no ryeos bundle is installed here, so kiwi cannot tell what the alias, or a `tool:` ref to an item of a bundle (`tool:ryeos/core/runtimes/python/function`), names, and says only how to let it follow"),
    p(Code::D101, Refuses, "rye's `markdown_xml` parser returns \"No XML code block found\" (`.ai/tools/rye/core/parsers/markdown_xml.py` `parse`); `rye/tools/execute.py` `_run_directive` returns that error and `rye/tools/sign.py` refuses to sign"),
    p(Code::D102, Refuses, "rye's `markdown_xml` parser returns \"Invalid XML\" on an ElementTree parse error (`markdown_xml.py` `parse`); `_run_directive` returns that error"),
    p(Code::D103, Accepts, "rye's `markdown_xml.py` `_extract_xml_block` reads the first directive block and ignores the rest"),
    p(Code::D104, Refuses, "`name` (snake_case, the file's stem) and `version` (semver) are required by the directive extractor's `validation_schema` (`.ai/tools/rye/core/extractors/directive/directive_extractor.yaml`, `rye/utils/validators.py`): rye's `sign` refuses, and rye loads no unsigned directive"),
    p(Code::D105, Accepts, "rye's `markdown_xml.py` `_extract_from_xml` reads the elements it knows and ignores the others"),
    p(Code::D106, Refuses, "`description` is required by the directive extractor's `validation_schema`: rye's `sign` refuses (`rye/tools/sign.py` `_sign_directive`)"),
    p(Code::D107, Refuses, "each input needs `name` and `type` (`item_required` in the directive extractor's `validation_schema`: rye's `sign` refuses); kiwi validates the caller's values against the declaration before a run (spec/05-mcp.md, `execute directive run`), which an invalid declaration makes impossible"),
    p(Code::D108, Refuses, "kiwi's run refuses the directive (spec/08-diagnostics.md: an error; `service::directive_run` `refuse_directive_errors`) rather than hand the agent an instruction with a hole; rye leaves the placeholder as literal text (`rye/tools/execute.py` `_interpolate_parsed`)"),
    p(Code::D109, Refuses, "kiwi's run refuses the directive (spec/08-diagnostics.md: an error; `service::directive_run` `refuse_directive_errors`) rather than fill a `{system.…}` field that does not exist with nothing; rye fills it with an empty or literal value"),
    p(Code::D110, Accepts, "rye runs every step whatever its name (`markdown_xml.py` `_extract_from_xml`); two steps of one name make the trail ambiguous"),
    p(Code::D111, Accepts, "rye accepts an input the body never uses (`_interpolate_parsed` fills only what is named): the caller's value goes nowhere"),
    p(Code::D112, Advice, "a `kiwi:validated` header is kiwi's own record; no runtime checks it (rye's check of `rye:signed` is R706)"),
    p(Code::D113, Accepts, "a JSON Schema allows properties it does not declare unless `additionalProperties` is false, so the tool gets a parameter it never reads"),
    p(Code::D114, Refuses, "kiwi validates a tool's parameters against its `CONFIG_SCHEMA` before anything runs and refuses a failure (spec/03-execution.md, Configuration step 2; kiwi-mcp: seeds/004 \"Invalid Parameters → Return validation error\")"),
    p(Code::D115, Refuses, "as D114: the parameter fails the called tool's `CONFIG_SCHEMA`, so the call is refused before it runs (spec/03-execution.md, step 2)"),
    p(Code::D120, Refuses, "ryeos's directive parser (`.ai/parsers/ryeos/core/markdown/directive.yaml` of its standard bundle: handler `yaml-header-document`, `require_header: true`, forms `frontmatter` delimited by `---` and `fenced_block` of language `yaml`, `output_schema.root_type: mapping`) refuses a directive whose header is missing, unclosed, not YAML or not a mapping"),
    p(Code::D121, Refuses, "ryeos's directive kind schema (`.ai/node/engine/kinds/directive/directive.kind-schema.yaml`, `composed_value_contract` and the composer's `expect_value_type`) requires `extends` to be a string or null, `context`, `model`, `limits` and `requires` mappings and `inputs` a sequence; the composed directive is refused otherwise"),
    p(Code::P201, Refuses, "an unknown permission spelling grants nothing, so every call it was meant to allow is refused at run time (spec/04-permissions.md)"),
    p(Code::P202, Refuses, "an action the item type does not have grants nothing: the call is refused at run time (spec/04-permissions.md)"),
    p(Code::P203, Refuses, "a pattern that does not compile matches nothing, and a path that climbs out of its space is refused (spec/04-permissions.md, spec/01-items-and-formats.md)"),
    p(Code::P204, Advice, "the runtime honours a broad grant as written; narrowing it is kiwi's advice"),
    p(Code::P205, Refuses, "a call no capability grants is refused when the agent makes it (spec/04-permissions.md: \"the agent will be refused at run time\")"),
    p(Code::P206, Advice, "a grant no step uses costs nothing at run time"),
    p(Code::P207, Accepts, "the runtime accepts a grant that can match no item; it grants nothing, usually a typo in the pattern"),
    p(Code::T301, Refuses, "rye reads metadata with `ast.literal_eval` per assignment and drops what it cannot read (`.ai/tools/rye/core/parsers/python_ast.py` `parse`): a dropped `__version__`, `__tool_type__` or `__executor_id__` makes `sign` refuse (tool extractor's `validation_schema`), and rye's executor reads a non-literal inside `CONFIG`/`ENV_CONFIG` as `None` (`primitive_executor.py` `_ast_to_value`), so the run is not the one written; kiwi refuses to run it (spec/08-diagnostics.md)"),
    p(Code::T302, Refuses, "`version` (semver) is required by the tool extractor's `validation_schema` (`.ai/tools/rye/core/extractors/tool/tool_extractor.yaml`): rye's `sign` refuses, and rye runs no unsigned tool (`verify_item`)"),
    p(Code::T303, Refuses, "`tool_type` is required by the tool extractor's `validation_schema`: rye's `sign` refuses, and rye runs no unsigned tool"),
    p(Code::T304, Refuses, "rye's `primitive_executor.py` `execute` fails when `_build_chain` finds no chain (\"Tool not found\") or `_validate_chain` rejects it (\"Chain validation failed\")"),
    p(Code::T305, Refuses, "kiwi validates parameters with a real JSON Schema library before anything runs (spec/03-execution.md, step 2): a schema that is not one cannot validate, and the run is refused"),
    p(Code::T306, Refuses, "the primitive uses the key as its type (`lilux/lilux/primitives/subprocess.py`: `timeout` as a number, `args` as a list); another type fails the run"),
    p(Code::T307, Refuses, "kiwi's templating stops the run on a `{NAME}` that is neither a parameter nor a name it provides (spec/03-execution.md, step 3; `exec/templating.rs`: \"nothing was run\")"),
    p(Code::T308, Refuses, "kiwi's templating stops the run on a `${VAR}` the tool's environment does not define and that has no default (`exec/templating.rs`: \"nothing was run\"); rye fills it with \"\" (`primitive_executor.py` `_template_config` `substitute_env`), an empty command or argument"),
    p(Code::T309, Refuses, "the file the command names is opened by the interpreter at run time; a missing one fails the run"),
    p(Code::T310, Refuses, "ryeos's tool kind schema (`.ai/node/engine/kinds/tool/tool.kind-schema.yaml` of its core bundle) declares `metadata.rules.category` with `required: true` and `match: path`; its engine's `validate_metadata_anchoring` refuses a tool whose category is missing (`MissingRequired`) or differs from its folder below `tools/` (`PathMismatch`). Only for files in ryeos's format (rye-os does not anchor `__category__`)"),
    p(Code::E401, Refuses, "rye's `lilux/lilux/runtime/env_resolver.py` `resolve` reads `ENV_CONFIG[\"interpreter\"]` and its keys with `.get`: another type raises and the run fails"),
    p(Code::E402, Refuses, "`env_resolver.py` `_resolve_interpreter` leaves the interpreter variable unset for a type it does not know; the command that names it is then empty (rye) or the run is refused for the unset `${VAR}` (kiwi, `exec/templating.rs`)"),
    p(Code::E403, Refuses, "`env_resolver.py` `_resolve_interpreter` returns at once without `var`: the interpreter is never set, and the command that names it fails as for E402"),
    p(Code::E404, Accepts, "a location that is not one of the resolver's (`project`, `kiwi`, `user`, `system`: seeds/000) is searched nowhere, and a repeated one adds nothing; the other locations still resolve"),
    p(Code::E405, Refuses, "without `binary` (or `manager`, `plugin`) the resolver finds nothing (`env_resolver.py` `_resolve_system_binary`: `if not binary`), so the interpreter stays unset and the run fails as for E402"),
    p(Code::E406, Accepts, "the resolver reads only its own keys (`env_resolver.py`) and ignores the others"),
    p(Code::E407, Refuses, "nothing found and no `fallback`: the interpreter variable stays unset (`env_resolver.py` `_resolve_interpreter`) and the command that names it fails; kiwi refuses the run (`exec/templating.rs`)"),
    p(Code::E408, Informs, "the resolver sets the fallback when it finds nothing (`env_resolver.py` `_resolve_interpreter`: `elif \"fallback\" in config`), which may be what the author meant"),
    p(Code::E409, Accepts, "rye expands an undefined `${VAR}` without default to \"\" (`env_resolver.py` `_expand_variables`), an empty value where one was meant"),
    p(Code::E410, Informs, "the chain passes a variable the filter blocks, on purpose; the runtime passes it (spec/02-environment.md), and the secret reaches the tool"),
    p(Code::E411, Accepts, "a `.env` value built from a variable the filter blocks is left unset by kiwi's environment (spec/02-environment.md), though its author meant it set"),
    p(Code::E412, Accepts, "the runtime uses the path as written; it exists only in one person's home, so the item fails everywhere else"),
    p(Code::E420, Accepts, "kiwi ignores a project setting that would widen the user's (`config::Config::merge_project`: a project narrows, never widens) and tells the user of one that changes how their own tools run"),
    p(Code::E421, Accepts, "kiwi's run leaves out a project `.env` variable that changes how programs start, or that the user's `env.block` blocks (`env::filter` `PROJECT_DOTENV_REFUSED`), unless the user's own `env.allow` names it: the project meant it set"),
    p(Code::X501, Refuses, "kiwi's run fails with a clear error on an unknown mode, or `specific` without `target` (spec/03-execution.md, execution environments; seeds/002)"),
    p(Code::X502, Refuses, "the preference cannot be met on this machine, so the run fails with a clear error and nothing runs (spec/03-execution.md, execution environments)"),
    p(Code::N601, Refuses, "rye's `markdown_frontmatter` parser returns an error (`.ai/tools/rye/core/parsers/markdown_frontmatter.py`), `rye/tools/sign.py` `_sign_knowledge` refuses (\"Invalid knowledge structure\"), and rye loads no unsigned entry (`verify_item`)"),
    p(Code::N602, Refuses, "`id`, `title` and `entry_type` are required by `rye/handlers/knowledge/handler.py` `validate` and the knowledge extractor's `validation_schema`: rye's `sign` refuses, and rye loads no unsigned entry"),
    p(Code::N603, Accepts, "rye checks only that `entry_type` is a string (`validate_field`, `type: string`) and reads `tags` as given"),
    p(Code::N604, Accepts, "rye never resolves `references`, `extends` or `used_by` (`rye/tools/execute.py` `_run_knowledge` returns the frontmatter as it is)"),
    p(Code::R701, Refuses, "kiwi refuses to run a pulled item whose files no longer match its lock (spec/10-registry.md; `exec::request` `refuse_drifted`); rye refuses a chain element whose hash differs from its lockfile (`primitive_executor.py` `execute`: \"Lockfile integrity mismatch\")"),
    p(Code::R702, Refuses, "rye's `verify_item` raises \"Ed25519 signature verification failed\" (`rye/utils/integrity.py`); a pull verifies the signature before writing anything (spec/10-registry.md)"),
    p(Code::R703, Refuses, "rye's `verify_item` raises \"Untrusted key\" for a signer not in its trust store (`rye/utils/integrity.py`); kiwi refuses it where `trust.require_signed` covers the registry (spec/10-registry.md)"),
    p(Code::R704, Refuses, "rye fails a run whose lockfile names a chain element it cannot find (`primitive_executor.py` `execute`: \"Lockfile chain element not found\")"),
    p(Code::R705, Refuses, "kiwi cannot tell which pulled items drifted, so a pull or a locked run fails (spec/10-registry.md)"),
    p(Code::R706, Refuses, "rye's `verify_item` raises \"Integrity failed\" when the content's hash (`rye/utils/metadata_manager.py` `MetadataManager.compute_hash`) differs from the `rye:signed` header's, for every link of a chain before it runs (`primitive_executor.py` `execute`, step 3) and for a directive or knowledge entry it runs or loads (`rye/tools/execute.py`, `rye/tools/load.py`); ryeos's engine (`trust::verify_item_signature`) returns `ContentHashMismatch` when the SHA-256 of the bytes after the `ryeos:signed` line (the envelope of the file type's kind schema) differs from the header's, and refuses the item at every load and at bundle install"),
    p(Code::R707, Accepts, "a registry keeps a yanked version for those who pinned it and `kiwi pull --locked` restores it (spec/10-registry.md), as cargo builds a yanked version its Cargo.lock pins and warns that it is yanked; the publisher yanked it for a reason"),
    p(Code::S801, Refuses, "skills-ref's `parse_frontmatter` (`skills-ref/src/skills_ref/parser.py`) raises `ParseError` when a SKILL.md does not start with `---`, the frontmatter is not closed, is not YAML or not a mapping, and `validate` fails with it"),
    p(Code::S802, Refuses, "skills-ref's `validate_metadata` and `_validate_name`/`_validate_description` (`validator.py`): \"Missing required field in frontmatter\", \"must be a non-empty string\"; the specification makes both required"),
    p(Code::S803, Refuses, "skills-ref's `_validate_name` (`validator.py`): at most 64 characters (`MAX_SKILL_NAME_LENGTH`), lowercase, no leading, trailing or consecutive hyphen, letters, digits and hyphens only"),
    p(Code::S804, Refuses, "skills-ref's `_validate_name` (`validator.py`): \"Directory name ... must match skill name\"; the specification: the name must match the parent directory"),
    p(Code::S805, Refuses, "skills-ref's `_validate_description` (`validator.py`): \"Description exceeds 1024 character limit\" (`MAX_DESCRIPTION_LENGTH`)"),
    p(Code::S806, Refuses, "skills-ref's `_validate_compatibility` (`validator.py`): a string of at most 500 characters (`MAX_COMPATIBILITY_LENGTH`)"),
    p(Code::S807, Accepts, "the specification makes `metadata` a map from string keys to string values; skills-ref's `parse_frontmatter` turns whatever it holds into strings and accepts it"),
    p(Code::S808, Accepts, "the specification makes `allowed-tools` a space-separated string of tools (`Bash(git:*) Read`); skills-ref does not read it and a client ignores a rule it cannot parse"),
    p(Code::S809, Advice, "skills-ref's `_validate_metadata_fields` refuses every key outside the specification's six, but Claude Code and VS Code read their own documented keys (`disable-model-invocation`, `argument-hint`, ...), which kiwi knows; any other key is ignored by every client"),
    p(Code::S810, Accepts, "clients load the body as it is (the specification's \"File references\"); an agent that follows the link finds no file"),
    p(Code::S811, Accepts, "clients load the body as it is; an agent told to run `scripts/...` runs a file the skill does not hold and the command fails"),
    p(Code::S820, Accepts, "VS Code reads the header of a prompt, instructions or agent file as YAML between `---` lines (`promptFileParser.ts`); a header that does not parse is reported by its own validator (`promptValidator.ts` `validate`: the header's errors) and its keys are not applied, but the file still loads (docs: code.visualstudio.com/docs/agent-customization/custom-agents, custom-instructions, prompt-files: the header is optional)"),
    p(Code::S821, Accepts, "VS Code's `promptValidator.ts` (`validateTools`: \"must be an array\", `validateHandoffs`: each handoff an object with `label` and `agent`, `validateTarget`: `vscode` or `github-copilot`, `validateInfer`: a boolean, `validateName`/`validateDescription`: a non-empty string) marks these and ignores the value, the file still loads; the documented types are in code.visualstudio.com/docs/agent-customization/custom-agents (`model`: a string or a list), prompt-files, custom-instructions, and docs.github.com/copilot/reference/custom-agents-configuration (`tools`: a list or a comma-separated string; `excludeAgent`: `code-review` or `coding-agent`, docs.github.com custom-instructions)"),
    p(Code::S822, Accepts, "VS Code splits `applyTo` at commas outside braces and parses each glob (`promptValidator.ts` `validateApplyTo`: \"must be a valid glob pattern\"); a pattern that does not parse matches no file, so the instructions are never applied automatically (custom-instructions: `applyTo`). kiwi parses each with the `globset` crate and shows its error"),
    p(Code::S823, Advice, "VS Code and GitHub Copilot ignore a header key they do not read (VS Code's validator lists the supported ones: `getValidAttributeNames`; with `target: github-copilot` only GitHub's keys, and GitHub's keys are \"ignored when running locally in VS Code\"); the file works without it, so it is advice: very likely a typo or another tool's key"),
    p(Code::S824, Advice, "VS Code's migration page (code.visualstudio.com/docs/agent-customization/migrate-customizations, \"Convert prompt files to skills\"): Copilot sessions do not load `*.prompt.md` files and use skills instead, prompt files remain supported in Local sessions; prompt-files: deprecated for Agent Host sessions. The file still works locally: advice, with `kiwi convert` as the fix (issue 28, item 8)"),
    p(Code::S825, Advice, "`infer` is deprecated for `user-invocable` and `disable-model-invocation` (custom-agents header table; docs.github.com custom-agents-configuration: retired); a prompt file's `mode` is renamed `agent` (`promptValidator.ts` `validateAgent`: \"The 'mode' attribute has been deprecated\"); chat modes are renamed agents (`validateFileName`: \"Chat modes have been renamed to agents\"). Each still works"),
];

/// Codes whose severity is still above what their provenance allows, each awaiting a
/// decision (none today); remove a code once it complies.
pub const PENDING: &[Code] = &[];

/// A code's provenance.
pub fn of(code: Code) -> &'static Provenance {
    PROVENANCE
        .iter()
        .find(|p| p.code == code)
        .expect("every code has a provenance (tested)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::CATALOGUE;

    #[test]
    fn every_code_has_exactly_one_provenance_in_catalogue_order() {
        let codes: Vec<Code> = CATALOGUE.iter().map(|c| c.code).collect();
        let have: Vec<Code> = PROVENANCE.iter().map(|p| p.code).collect();
        assert_eq!(have, codes);
        for p in PROVENANCE {
            assert!(p.why.len() > 40, "{}: say what the runtime does", p.code);
        }
    }

    #[test]
    fn severity_follows_provenance() {
        let mut too_strict = Vec::new();
        for c in CATALOGUE {
            let p = of(c.code);
            // Severity orders Error < Warning < Info < Hint: "at most" is "at least" here.
            if c.severity < p.ground.max_severity() {
                too_strict.push(c.code);
            }
            if c.severity == Severity::Error {
                assert_ne!(p.ground, Ground::Advice, "{}", c.name);
            }
        }
        // PENDING may shrink before this list is edited (the other change lands first).
        assert!(
            too_strict.iter().all(|c| PENDING.contains(c)),
            "codes whose default severity is above what their provenance allows: {too_strict:?}"
        );
    }
}
