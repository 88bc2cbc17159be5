"""Node.js runtime: runs a JavaScript tool with the project's Node.

The interpreter is found by the `node_modules` resolver, in this order: the project's
`node_modules/.bin/node`, the one under `.ai/scripts/node_modules`, the user space's, then
`node` on PATH; `node` is the fallback when nothing is found. The path goes into KIWI_NODE,
and the tool (the script beside its YAML metadata file) is started as

    $KIWI_NODE <tool file> --params '<parameters as JSON>'

so a tool finds its parameters after `--params` in `process.argv` and parses them with
`JSON.parse`.
"""

__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
__category__ = "runtimes"
__tool_description__ = "Run a JavaScript tool with the project's node_modules Node, else node"

ENV_CONFIG = {
    "interpreter": {
        "type": "node_modules",
        "search": ["project", "kiwi", "user", "system"],
        "var": "KIWI_NODE",
        "fallback": "node",
    },
}

CONFIG = {
    "command": "${KIWI_NODE}",
    "args": ["{tool_path}", "--params", "{params_json}"],
    "timeout": 300,
}
