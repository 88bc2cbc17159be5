"""A tmux pane captured with colours (`tmux capture-pane -e -p`) as one HTML page: SGR
colours (16, 256 and 24-bit), bold, italic, underline and reverse; a dark terminal.
Used by tests/nvim/screenshots.sh. Reads stdin, writes stdout."""

import html
import re
import sys

BG, FG = "#1e1e2e", "#d4d4d4"
BASE16 = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
          "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]


def color256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


def apply(state, params):
    ps = [int(p) if p else 0 for p in params.split(";")] if params else [0]
    i = 0
    while i < len(ps):
        p = ps[i]
        if p == 0:
            state.clear()
        elif p == 1:
            state["b"] = True
        elif p == 3:
            state["i"] = True
        elif p in (4, 21):
            state["u"] = True
        elif p == 7:
            state["r"] = True
        elif p == 22:
            state.pop("b", None)
        elif p == 23:
            state.pop("i", None)
        elif p == 24:
            state.pop("u", None)
        elif p == 27:
            state.pop("r", None)
        elif 30 <= p <= 37 or 90 <= p <= 97:
            state["fg"] = BASE16[p - 30 if p < 90 else p - 90 + 8]
        elif 40 <= p <= 47 or 100 <= p <= 107:
            state["bg"] = BASE16[p - 40 if p < 100 else p - 100 + 8]
        elif p == 39:
            state.pop("fg", None)
        elif p == 49:
            state.pop("bg", None)
        elif p in (38, 48) and i + 1 < len(ps):
            key = "fg" if p == 38 else "bg"
            if ps[i + 1] == 5 and i + 2 < len(ps):
                state[key] = color256(ps[i + 2])
                i += 2
            elif ps[i + 1] == 2 and i + 4 < len(ps):
                state[key] = "#%02x%02x%02x" % tuple(ps[i + 2:i + 5])
                i += 4
        i += 1


def style(state):
    fg, bg = state.get("fg", FG), state.get("bg", BG)
    if state.get("r"):
        fg, bg = bg, fg
    s = f"color:{fg};background:{bg}"
    if state.get("b"):
        s += ";font-weight:bold"
    if state.get("i"):
        s += ";font-style:italic"
    if state.get("u"):
        s += ";text-decoration:underline"
    return s


def main():
    out = []
    state = {}
    for line in sys.stdin.read().rstrip("\n").split("\n"):
        parts = re.split(r"\x1b\[([0-9;]*)m", line)
        row = []
        for k, part in enumerate(parts):
            if k % 2:
                apply(state, part)
            elif part:
                row.append(f'<span style="{style(state)}">{html.escape(part)}</span>')
        out.append("".join(row))
    print(f"""<!doctype html><meta charset="utf-8"><style>
body {{ margin: 0; background: {BG}; }}
pre {{ margin: 0; padding: 8px; font: 13px/1.3 'DejaVu Sans Mono', monospace; color: {FG}; }}
</style><pre>{chr(10).join(out)}</pre>""")


if __name__ == "__main__":
    main()
