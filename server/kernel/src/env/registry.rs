//! The resolver-type registry, as data. A resolver type is one [`ResolverType`] entry in
//! [`RESOLVER_TYPES`]; the version managers of `version_manager` are [`Manager`] entries in
//! [`MANAGERS`]. The checker, the resolver and the editor's completion all read these tables,
//! so adding a resolver type (or a manager) touches one entry and nothing else.

/// Keys every interpreter accepts, whatever its type. `type` and `var` are required.
pub const COMMON_KEYS: &[&str] = &["type", "var", "fallback"];

/// The search locations a `search` list may name (for the types that search).
pub const SEARCH_LOCATIONS: &[&str] = &["project", "kiwi", "user", "system"];

/// One resolver type: its keys and how it finds candidates.
#[derive(Debug)]
pub struct ResolverType {
    pub name: &'static str,
    /// One line for hover and completion.
    pub summary: &'static str,
    /// Keys this type requires besides `type` and `var`.
    pub required: &'static [&'static str],
    /// Keys this type accepts besides the required ones and [`COMMON_KEYS`].
    pub optional: &'static [&'static str],
    pub strategy: Strategy,
    /// How the default variable name (`KIWI_<STEM>`) of a quick fix is derived.
    pub var_stem: VarStem,
}

/// How a resolver type finds its candidates.
#[derive(Debug)]
pub enum Strategy {
    /// Probe the named locations in the order of `search` (else `default_search`).
    /// A type that accepts `search` lists it in its optional keys.
    Search {
        locations: &'static [Location],
        default_search: &'static [&'static str],
    },
    /// The version manager named by `manager` ([`MANAGERS`]), then the plain binary on PATH.
    VersionManager,
}

/// A named search location and what is probed there.
#[derive(Debug)]
pub struct Location {
    pub name: &'static str,
    pub probe: Probe,
}

#[derive(Debug)]
pub enum Probe {
    /// A file under a base directory; paths are relative, written with `/`.
    File {
        base: Base,
        unix: &'static str,
        windows: &'static str,
    },
    /// These names on the PATH of the environment being built; the first found wins.
    OnPath(&'static [&'static str]),
    /// The name held by this key of the interpreter, on PATH.
    OnPathKey(&'static str),
    /// In each directory this key of the interpreter names (a string or a list of strings,
    /// relative to the project; `default` when the key is absent), the file `file`: rye's
    /// `venv_path` and `search_paths`, project search locations.
    KeyDirs {
        key: &'static str,
        default: &'static [&'static str],
        file: FileName,
    },
}

/// The file a [`Probe::KeyDirs`] looks for in each directory.
#[derive(Debug)]
pub enum FileName {
    /// Paths relative to the directory, written with `/`.
    Fixed {
        unix: &'static str,
        windows: &'static str,
    },
    /// The name held by this key of the interpreter (`binary`).
    Key(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The project root (`<project>`).
    Project,
    /// The user space (`<user>`, `~/.ai` by default).
    User,
}

#[derive(Debug)]
pub enum VarStem {
    Fixed(&'static str),
    /// The upper-cased value of this key (`binary: deno` gives `KIWI_DENO`).
    Key(&'static str),
    /// The manager's stem (`pyenv` gives `KIWI_PYTHON`), or the binary/plugin for asdf.
    Manager,
}

pub static RESOLVER_TYPES: &[ResolverType] = &[
    ResolverType {
        name: "venv_python",
        summary:
            "Python from a virtual environment (project, kiwi, user), else python3/python on PATH",
        required: &[],
        optional: &["search", "venv_path"],
        strategy: Strategy::Search {
            locations: &[
                Location {
                    name: "venv_path",
                    probe: Probe::KeyDirs {
                        key: "venv_path",
                        default: &[],
                        file: FileName::Fixed {
                            unix: "bin/python",
                            windows: "Scripts/python.exe",
                        },
                    },
                },
                Location {
                    name: "project",
                    probe: Probe::File {
                        base: Base::Project,
                        unix: ".venv/bin/python",
                        windows: ".venv/Scripts/python.exe",
                    },
                },
                Location {
                    name: "kiwi",
                    probe: Probe::File {
                        base: Base::Project,
                        unix: ".ai/scripts/.venv/bin/python",
                        windows: ".ai/scripts/.venv/Scripts/python.exe",
                    },
                },
                Location {
                    name: "user",
                    probe: Probe::File {
                        base: Base::User,
                        unix: ".venv/bin/python",
                        windows: ".venv/Scripts/python.exe",
                    },
                },
                Location {
                    name: "system",
                    probe: Probe::OnPath(&["python3", "python"]),
                },
            ],
            default_search: &["kiwi", "user", "system"],
        },
        var_stem: VarStem::Fixed("PYTHON"),
    },
    ResolverType {
        name: "node_modules",
        summary: "Node from node_modules/.bin (project, kiwi, user), else node on PATH",
        required: &[],
        optional: &["search", "search_paths"],
        strategy: Strategy::Search {
            locations: &[
                Location {
                    name: "search_paths",
                    probe: Probe::KeyDirs {
                        key: "search_paths",
                        default: &[],
                        file: FileName::Fixed {
                            unix: "node",
                            windows: "node.exe",
                        },
                    },
                },
                Location {
                    name: "project",
                    probe: Probe::File {
                        base: Base::Project,
                        unix: "node_modules/.bin/node",
                        windows: "node_modules/.bin/node.exe",
                    },
                },
                Location {
                    name: "kiwi",
                    probe: Probe::File {
                        base: Base::Project,
                        unix: ".ai/scripts/node_modules/.bin/node",
                        windows: ".ai/scripts/node_modules/.bin/node.exe",
                    },
                },
                Location {
                    name: "user",
                    probe: Probe::File {
                        base: Base::User,
                        unix: "node_modules/.bin/node",
                        windows: "node_modules/.bin/node.exe",
                    },
                },
                Location {
                    name: "system",
                    probe: Probe::OnPath(&["node"]),
                },
            ],
            default_search: &["kiwi", "user", "system"],
        },
        var_stem: VarStem::Fixed("NODE"),
    },
    ResolverType {
        name: "system_binary",
        summary: "the program named by `binary`, on PATH",
        required: &["binary"],
        optional: &[],
        strategy: Strategy::Search {
            locations: &[Location {
                name: "system",
                probe: Probe::OnPathKey("binary"),
            }],
            default_search: &["system"],
        },
        var_stem: VarStem::Key("binary"),
    },
    ResolverType {
        name: "local_binary",
        summary: "the program named by `binary` in the project's `search_paths` (default bin, node_modules/.bin, .venv/bin), else on PATH",
        required: &["binary"],
        optional: &["search", "search_paths"],
        strategy: Strategy::Search {
            locations: &[
                Location {
                    name: "search_paths",
                    probe: Probe::KeyDirs {
                        key: "search_paths",
                        default: &["bin", "node_modules/.bin", ".venv/bin"],
                        file: FileName::Key("binary"),
                    },
                },
                Location {
                    name: "system",
                    probe: Probe::OnPathKey("binary"),
                },
            ],
            default_search: &["search_paths", "system"],
        },
        var_stem: VarStem::Key("binary"),
    },
    ResolverType {
        name: "version_manager",
        summary:
            "an interpreter installed by pyenv, rbenv, nvm or asdf, else the plain binary on PATH",
        required: &["manager"],
        optional: &["version", "plugin", "binary"],
        strategy: Strategy::VersionManager,
        var_stem: VarStem::Manager,
    },
];

/// One version manager of `version_manager`.
#[derive(Debug)]
pub struct Manager {
    pub name: &'static str,
    /// The variable that moves the manager's root (`PYENV_ROOT`).
    pub root_var: &'static str,
    /// The root when `root_var` is unset, relative to the home directory.
    pub default_root: &'static str,
    /// Directory of the installed versions, relative to the root (`{plugin}` substituted).
    pub versions_dir: &'static str,
    /// What precedes the version in a version's directory name (`v` for nvm).
    pub version_prefix: &'static str,
    /// The interpreter, relative to a version's directory (`{binary}` substituted).
    pub bin: &'static str,
    /// The interpreter's name; `None`: the plugin's name (asdf), unless `binary` is given.
    pub binary: Option<&'static str>,
    /// Names looked up on PATH when the manager has nothing; empty: the binary.
    pub path_names: &'static [&'static str],
    /// The variable that selects the version over every file (`PYENV_VERSION`; `{PLUGIN}`:
    /// the plugin's name upper-cased, asdf's `ASDF_PYTHON_VERSION`). `None`: the manager has
    /// no shims to resolve (nvm).
    pub version_var: Option<&'static str>,
    /// The project's version file.
    pub version_file: VersionFile,
    /// The manager's own default version, when the project names none.
    pub global_version: Option<GlobalVersion>,
    /// Whether the `plugin` key is required (asdf).
    pub needs_plugin: bool,
    /// The default variable stem (`PYTHON`); `None`: the binary upper-cased.
    pub var_stem: Option<&'static str>,
}

#[derive(Debug, Clone, Copy)]
pub struct VersionFile {
    pub name: &'static str,
    pub format: VersionFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionFormat {
    /// The first non-empty, non-comment line is the version.
    Plain,
    /// `.tool-versions`: the line that starts with the plugin's name; its first version.
    ToolVersions,
}

#[derive(Debug, Clone, Copy)]
pub struct GlobalVersion {
    pub base: GlobalBase,
    pub file: &'static str,
    pub format: VersionFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalBase {
    /// The manager's root.
    Root,
    /// The home directory.
    Home,
}

pub static MANAGERS: &[Manager] = &[
    Manager {
        name: "pyenv",
        root_var: "PYENV_ROOT",
        default_root: ".pyenv",
        versions_dir: "versions",
        version_prefix: "",
        bin: "bin/{binary}",
        binary: Some("python"),
        path_names: &["python3", "python"],
        version_var: Some("PYENV_VERSION"),
        version_file: VersionFile {
            name: ".python-version",
            format: VersionFormat::Plain,
        },
        global_version: Some(GlobalVersion {
            base: GlobalBase::Root,
            file: "version",
            format: VersionFormat::Plain,
        }),
        needs_plugin: false,
        var_stem: Some("PYTHON"),
    },
    Manager {
        name: "rbenv",
        root_var: "RBENV_ROOT",
        default_root: ".rbenv",
        versions_dir: "versions",
        version_prefix: "",
        bin: "bin/{binary}",
        binary: Some("ruby"),
        path_names: &["ruby"],
        version_var: Some("RBENV_VERSION"),
        version_file: VersionFile {
            name: ".ruby-version",
            format: VersionFormat::Plain,
        },
        global_version: Some(GlobalVersion {
            base: GlobalBase::Root,
            file: "version",
            format: VersionFormat::Plain,
        }),
        needs_plugin: false,
        var_stem: Some("RUBY"),
    },
    Manager {
        name: "nvm",
        root_var: "NVM_DIR",
        default_root: ".nvm",
        versions_dir: "versions/node",
        version_prefix: "v",
        bin: "bin/{binary}",
        binary: Some("node"),
        path_names: &["node"],
        version_var: None,
        version_file: VersionFile {
            name: ".nvmrc",
            format: VersionFormat::Plain,
        },
        global_version: Some(GlobalVersion {
            base: GlobalBase::Root,
            file: "alias/default",
            format: VersionFormat::Plain,
        }),
        needs_plugin: false,
        var_stem: Some("NODE"),
    },
    Manager {
        name: "asdf",
        root_var: "ASDF_DATA_DIR",
        default_root: ".asdf",
        versions_dir: "installs/{plugin}",
        version_prefix: "",
        bin: "bin/{binary}",
        binary: None,
        path_names: &[],
        version_var: Some("ASDF_{PLUGIN}_VERSION"),
        version_file: VersionFile {
            name: ".tool-versions",
            format: VersionFormat::ToolVersions,
        },
        global_version: Some(GlobalVersion {
            base: GlobalBase::Home,
            file: ".tool-versions",
            format: VersionFormat::ToolVersions,
        }),
        needs_plugin: true,
        var_stem: None,
    },
];

/// The resolver type of this name.
pub fn resolver_type(name: &str) -> Option<&'static ResolverType> {
    RESOLVER_TYPES.iter().find(|t| t.name == name)
}

/// The version manager of this name.
pub fn manager(name: &str) -> Option<&'static Manager> {
    MANAGERS.iter().find(|m| m.name == name)
}

impl ResolverType {
    /// Every key this type accepts: common, required and optional.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        COMMON_KEYS
            .iter()
            .chain(self.required)
            .chain(self.optional)
            .copied()
    }

    pub fn accepts(&self, key: &str) -> bool {
        self.keys().any(|k| k == key)
    }

    /// The names `search` may hold for this type (empty when it does not search).
    pub fn location_names(&self) -> Vec<&'static str> {
        match &self.strategy {
            Strategy::Search { locations, .. } => locations.iter().map(|l| l.name).collect(),
            Strategy::VersionManager => Vec::new(),
        }
    }
}
