"""Bash runtime: runs a shell script with bash.

The interpreter is `bash` on PATH (the `system_binary` resolver), with `bash` itself as the
fallback. The path goes into KIWI_BASH, and the tool (the script beside its YAML metadata
file) is started as

    $KIWI_BASH <tool file> --params '<parameters as JSON>'

the same calling convention as the Python and Node runtimes: the JSON is in "$2" (`jq` takes
it apart). A script that prefers plain arguments sets its own `args` in its CONFIG, for
example `["{tool_path}", "{dir}"]`: a string that is exactly one parameter takes its value.
No shell ever sees the values: the script runs directly, not through `sh -c`.
"""

__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
__category__ = "runtimes"
__tool_description__ = "Run a shell script with bash from PATH"

ENV_CONFIG = {
    "interpreter": {
        "type": "system_binary",
        "binary": "bash",
        "var": "KIWI_BASH",
        "fallback": "bash",
    },
}

CONFIG = {
    "command": "${KIWI_BASH}",
    "args": ["{tool_path}", "--params", "{params_json}"],
    "timeout": 300,
}
