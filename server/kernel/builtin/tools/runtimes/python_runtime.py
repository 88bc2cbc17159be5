"""Python runtime: runs a Python tool with the project's interpreter.

The interpreter is found by the `venv_python` resolver, in this order: the project's
`.venv`, the `.ai/scripts/.venv` kept for Kiwi tools, the user space's `.venv`, then
`python3` (or `python`) on PATH; `python3` is the fallback when nothing is found. The path
goes into KIWI_PYTHON, and the tool is started as

    $KIWI_PYTHON <tool file> --params '<parameters as JSON>'

so a tool reads its parameters with `argparse` and `json.loads`. Output is unbuffered, so
it streams line by line as the tool prints it.
"""

__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
__category__ = "runtimes"
__tool_description__ = "Run a Python tool with the project's virtual environment, else python3"

ENV_CONFIG = {
    "interpreter": {
        "type": "venv_python",
        "search": ["project", "kiwi", "user", "system"],
        "var": "KIWI_PYTHON",
        "fallback": "python3",
    },
    "env": {"PYTHONUNBUFFERED": "1"},
}

CONFIG = {
    "command": "${KIWI_PYTHON}",
    "args": ["{tool_path}", "--params", "{params_json}"],
    "timeout": 300,
}
