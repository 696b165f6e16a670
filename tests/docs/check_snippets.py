#!/usr/bin/python3
"""Every C++ and Python code block of README.md and docs/*.md is a region of
an example program CI builds and runs, so the docs cannot drift from the code.

A block is preceded by a marker line naming its source:

    <!-- snippet: examples/quickstart.cpp quickstart -->
    ```cpp
    ...
    ```

and the example file holds the same lines (dedented) between
`// [docs:quickstart]` and `// [docs:end]` (`# [docs:NAME]` and `# [docs:end]`
in a Python example, examples/python/*.py, for a ```python block). Usage:

    /usr/bin/python3 tests/docs/check_snippets.py SOURCE_DIR          # check
    /usr/bin/python3 tests/docs/check_snippets.py SOURCE_DIR --write  # copy regions into the docs
"""
import pathlib
import re
import sys

MARKER = re.compile(r"^<!-- snippet: (\S+) (\S+) -->$")


def region(root, path, name):
    f = root / path
    if not f.is_file():
        return None, f"{path} does not exist"
    lines = f.read_text().splitlines()
    c = "#" if path.endswith(".py") else "//"
    begin = [i for i, l in enumerate(lines) if l.strip() == f"{c} [docs:{name}]"]
    if len(begin) != 1:
        return None, f"{path} has {len(begin)} '{c} [docs:{name}]' markers (needs exactly 1)"
    end = next((i for i in range(begin[0] + 1, len(lines)) if lines[i].strip() == f"{c} [docs:end]"), None)
    if end is None:
        return None, f"{path}: '{c} [docs:{name}]' has no '{c} [docs:end]'"
    body = lines[begin[0] + 1:end]
    indent = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
    return [l[indent:] for l in body], None


def main():
    root = pathlib.Path(sys.argv[1])
    write = "--write" in sys.argv[2:]
    docs = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    problems, blocks = [], 0
    for doc in docs:
        lines = doc.read_text().splitlines()
        out, i, changed = [], 0, False
        while i < len(lines):
            line = lines[i]
            out.append(line)
            if not (line.startswith("```cpp") or line.startswith("```python")):
                i += 1
                continue
            blocks += 1
            end = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("```")), len(lines))
            block = lines[i + 1:end]
            rel = doc.relative_to(root)
            m = MARKER.match(lines[i - 1]) if i > 0 else None
            if not m:
                problems.append(f"{rel}:{i + 1}: a code block without a "
                                "'<!-- snippet: FILE NAME -->' line before it")
                out.extend(block)
            else:
                want, err = region(root, m.group(1), m.group(2))
                if err:
                    problems.append(f"{rel}:{i + 1}: {err}")
                    out.extend(block)
                elif block != want:
                    if write:
                        out.extend(want)
                        changed = True
                    else:
                        first = next((k for k in range(max(len(block), len(want)))
                                      if (block[k:k + 1] or [None]) != (want[k:k + 1] or [None])), 0)
                        problems.append(f"{rel}:{i + 2 + first}: differs from {m.group(1)} "
                                        f"[docs:{m.group(2)}] (run check_snippets.py --write)")
                        out.extend(block)
                else:
                    out.extend(block)
            if end < len(lines):
                out.append(lines[end])
            i = end + 1
        if changed:
            doc.write_text("\n".join(out) + "\n")
    for p in problems:
        print(p)
    print(f"{blocks} code blocks checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
