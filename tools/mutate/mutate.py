#!/usr/bin/env python3
"""spindle's mutation runner: does the test suite catch each seeded concurrency bug?

Each mutant in tools/mutate/mutants.txt is one hand-made bug in one synchronisation protocol
(a relaxed publish, a dropped fence, a skipped wake, an off-by-one lap, ...): a file, a text
that must occur exactly once in it, its replacement, and what real bug it models. The runner
copies the working tree to a scratch directory, configures the `test` preset there, checks
that the unmutated suite passes, then applies the mutants one at a time:

  1. builds and runs the tests the mutant names as its likely killers;
  2. if they all pass, builds and runs every model, lin and stress test (label model|lin|
     stress) plus the named ones;
  3. reports the mutant `killed` with the first test that failed, or `survived`.

A test that hangs is stopped by ctest's timeout and counts as a kill (a hang is how a lost
wake-up shows outside the model checker). A mutant whose text is not found exactly once, or
that does not compile, is an error in the list, not a kill.

Not part of CI: a full run takes about an hour on two cores. Run it before a release, with
--record, which keeps the verdict of every mutant it ran in tools/mutate/verdicts.tsv (one line
per mutant: its latest verdict, the tests that killed it, the date, the commit and the kind of
run) and writes docs/mutation.md and the score in README.md ("Proof") from that file. Neither
is edited by hand: `--render` rewrites both from verdicts.tsv alone.

  tools/mutate/mutate.py --record         # every mutant
  tools/mutate/mutate.py --record --only idle-last-searcher,deque-pop-no-fence
  tools/mutate/mutate.py --check          # only check that every mutant applies
  tools/mutate/mutate.py --list
  tools/mutate/mutate.py --render         # docs/mutation.md and README's score from verdicts.tsv

Needs: python3, cmake, ninja and the test preset's dependencies (see README.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITE_LABELS = "^(model|lin|stress)$"


@dataclasses.dataclass
class Mutant:
    ident: str
    file: str
    bug: str
    tests: list[str]
    edits: list[tuple[str, str]]  # (find, replace), applied in order


def parse_mutants(path: Path) -> list[Mutant]:
    """Reads the block format of mutants.txt (documented at its top)."""
    mutants: list[Mutant] = []
    current: dict | None = None
    section: str | None = None
    lines = path.read_text().split("\n")

    def flush() -> None:
        if current is None:
            return
        for key in ("file", "bug"):
            if key not in current:
                sys.exit(f"mutants.txt: mutant {current['ident']} has no '{key}'")
        finds, replaces = current.get("find", []), current.get("replace", [])
        if not finds or len(finds) != len(replaces):
            sys.exit(f"mutants.txt: mutant {current['ident']} needs find/replace pairs")
        edits = [("\n".join(f).rstrip("\n"), "\n".join(r).rstrip("\n"))
                 for f, r in zip(finds, replaces)]
        mutants.append(
            Mutant(
                ident=current["ident"],
                file=current["file"],
                bug=current["bug"],
                tests=current.get("tests", "").split(),
                edits=edits,
            )
        )

    for line in lines:
        if line.startswith("=== "):
            flush()
            current = {"ident": line[4:].strip()}
            section = None
        elif current is None:
            continue  # the file's header comment
        elif line.startswith("--- "):
            section = line[4:].strip()
            if section not in ("find", "replace"):
                sys.exit(f"mutants.txt: unknown section '{section}' in {current['ident']}")
            current.setdefault(section, []).append([])
        elif section is not None:
            current[section][-1].append(line)
        elif ":" in line:
            key, value = line.split(":", 1)
            current[key.strip()] = value.strip()
    flush()
    idents = [m.ident for m in mutants]
    if len(set(idents)) != len(idents):
        sys.exit("mutants.txt: duplicate mutant names")
    return mutants


def run(cmd: list[str], cwd: Path, log: Path, timeout: float | None = None) -> int:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        try:
            return subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            out.write("(timed out)\n")
            return 124


def copy_tree(dest: Path) -> None:
    """Copies the files git knows (tracked and untracked, not ignored) into dest/src."""
    src = dest / "src"
    if src.exists():
        shutil.rmtree(src)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           check=True, capture_output=True).stdout.split(b"\0")
    for raw in files:
        if not raw:
            continue
        rel = raw.decode()
        target = src / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_file():
            shutil.copy2(ROOT / rel, target)


class Suite:
    def __init__(self, work: Path, jobs: int, timeout: int, skip: str | None) -> None:
        self.work = work
        self.src = work / "src"
        self.build = work / "build"
        self.log = work / "mutate.log"
        self.jobs = jobs
        self.timeout = timeout
        self.skip = re.compile(skip) if skip else None
        self._all: list[str] | None = None
        self._exe: dict[str, str] | None = None

    def configure(self) -> None:
        rc = run(["cmake", "--preset", "test", "-B", str(self.build)], self.src, self.log)
        if rc != 0:
            sys.exit(f"configure failed; see {self.log}")

    def suite_tests(self) -> list[str]:
        """The ctest names labelled model, lin or stress."""
        if self._all is None:
            out = subprocess.run(["ctest", "--test-dir", str(self.build), "-N", "-L",
                                  SUITE_LABELS], capture_output=True, text=True, check=True)
            names = re.findall(r"Test\s+#\d+: (\S+)", out.stdout)
            self._all = [n for n in names if not (self.skip and self.skip.search(n))]
        return self._all

    def executables(self) -> dict[str, str]:
        """Each test's executable, from ctest's JSON: most tests are an executable of the same
        name (tests/CMakeLists.txt), a few run a tool with arguments (coherence_smoke)."""
        if self._exe is None:
            out = subprocess.run(["ctest", "--test-dir", str(self.build), "--show-only=json-v1"],
                                 capture_output=True, text=True, check=True)
            self._exe = {}
            for t in json.loads(out.stdout).get("tests", []):
                command = t.get("command") or []
                # A test that runs a program from outside the build (cmake -P) builds nothing.
                if command and Path(command[0]).is_relative_to(self.build.resolve()):
                    self._exe[t["name"]] = Path(command[0]).name
                elif command:
                    self._exe[t["name"]] = ""
        return self._exe

    def build_targets(self, tests: list[str]) -> bool:
        exe = self.executables()
        targets = sorted({exe.get(t, t) for t in tests} - {""})
        if not targets:
            return True
        cmd = ["cmake", "--build", str(self.build), "-j", str(self.jobs), "--target", *targets]
        return run(cmd, self.src, self.log) == 0

    def run_tests(self, tests: list[str]) -> list[str]:
        """Runs `tests`; returns the names of those that failed (or timed out)."""
        pattern = "^(" + "|".join(re.escape(t) for t in tests) + ")$"
        cmd = ["ctest", "--test-dir", str(self.build), "-R", pattern, "-j", str(self.jobs),
               "--timeout", str(self.timeout), "--output-on-failure"]
        marker = self.log.stat().st_size if self.log.exists() else 0
        run(cmd, self.src, self.log, timeout=self.timeout * (len(tests) + 1))
        text = self.log.read_text(errors="replace")[marker:]
        failed = re.findall(r"^\s*\d+ - (\S+) \(", text, flags=re.M)
        if "(timed out)" in text and not failed:
            failed = ["(the ctest run itself timed out)"]
        return failed


def mutated(mutant: Mutant, text: str) -> str:
    """The file's text with the mutant's edits; ValueError unless each find occurs once."""
    for find, replace in mutant.edits:
        count = text.count(find)
        if count != 1:
            raise ValueError(f"{mutant.ident}: a text to replace occurs {count} times in "
                             f"{mutant.file} (must be exactly once)")
        text = text.replace(find, replace)
    return text


def apply(mutant: Mutant, src: Path) -> str:
    """Applies the mutant; returns the original text."""
    path = src / mutant.file
    text = path.read_text()
    path.write_text(mutated(mutant, text))
    return text


def restore(mutant: Mutant, src: Path, original: str) -> None:
    path = src / mutant.file
    path.write_text(original)
    # A fresh mtime, so that ninja rebuilds whatever the mutant's build left behind.
    now = time.time()
    os.utime(path, (now, now))


def check_all(mutants: list[Mutant]) -> int:
    bad = 0
    for m in mutants:
        try:
            mutated(m, (ROOT / m.file).read_text())
        except ValueError as e:
            print(e)
            bad += 1
    print(f"{len(mutants) - bad} of {len(mutants)} mutants apply")
    return 1 if bad else 0


VERDICTS = ROOT / "tools/mutate/verdicts.tsv"
DOC = ROOT / "docs/mutation.md"
README = ROOT / "README.md"
SCORE_BEGIN = "<!-- mutation score: written by tools/mutate/mutate.py -->"
SCORE_END = "<!-- end of mutation score -->"
VERDICT_FIELDS = ["mutant", "verdict", "killed_by", "seconds", "date", "commit", "run"]
RUN_KINDS = {
    "full": "a full run of the runner",
    "only": "a run of the runner on some mutants (--only)",
    "hand": "applied by hand, the named test built and run",
}


def read_verdicts() -> dict[str, dict[str, str]]:
    """verdicts.tsv: a header line, then one tab-separated line per mutant."""
    if not VERDICTS.exists():
        return {}
    rows: dict[str, dict[str, str]] = {}
    lines = [ln for ln in VERDICTS.read_text().split("\n") if ln and not ln.startswith("#")]
    header = lines[0].split("\t")
    if header != VERDICT_FIELDS:
        sys.exit(f"{VERDICTS}: the header must be {' '.join(VERDICT_FIELDS)}")
    for ln in lines[1:]:
        cells = ln.split("\t")
        if len(cells) != len(VERDICT_FIELDS):
            sys.exit(f"{VERDICTS}: a line without {len(VERDICT_FIELDS)} fields: {ln!r}")
        row = dict(zip(VERDICT_FIELDS, cells))
        rows[row["mutant"]] = row
    return rows


def write_verdicts(rows: dict[str, dict[str, str]], order: list[str]) -> None:
    """Writes the rows in the order of mutants.txt, then any mutant no longer in it."""
    known = [m for m in order if m in rows] + sorted(m for m in rows if m not in order)
    lines = ["# The latest verdict of each mutant, written by tools/mutate/mutate.py --record.",
             "\t".join(VERDICT_FIELDS)]
    lines += ["\t".join(rows[m][f] for f in VERDICT_FIELDS) for m in known]
    VERDICTS.write_text("\n".join(lines) + "\n")


def head_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    commit = out.stdout.strip() or "unknown"
    return commit + ("+changes" if dirty else "")


def render(mutants: list[Mutant]) -> None:
    """Writes docs/mutation.md and README's score from verdicts.tsv and mutants.txt."""
    rows = read_verdicts()
    survivors = parse_mutants(ROOT / "tools/mutate/survivors.txt")
    killed = [m for m in mutants if rows.get(m.ident, {}).get("verdict") == "killed"]
    unrun = [m for m in mutants if m.ident not in rows]
    other = [m for m in mutants if m.ident in rows and rows[m.ident]["verdict"] != "killed"]
    full_dates = sorted({r["date"] for r in rows.values() if r["run"] == "full"})
    by_kind = {k: sum(1 for m in killed if rows[m.ident]["run"] == k) for k in RUN_KINDS}

    summary = (f"{len(killed)} of the {len(mutants)} mutants of `tools/mutate/mutants.txt` are "
               f"killed in their latest recorded run")
    phrases = {"full": "in a full run", "only": "in runs of the runner on them alone",
               "hand": "by hand"}
    parts = [f"{by_kind[k]} {phrases[k]}" for k in RUN_KINDS if by_kind[k]]
    if parts:
        summary += " (" + "; ".join(parts) + ")"
    summary += "."
    if other:
        summary += (f" Not killed in their latest run: "
                    f"{', '.join('`' + m.ident + '`' for m in other)}.")
    if unrun:
        summary += f" Never run by the runner or by hand: {len(unrun)}."
    summary += (f" The last full run: {full_dates[-1]}." if full_dates
                else " No full run is recorded yet.")
    noun = "mutant" if len(survivors) == 1 else "mutants"
    summary += (f" `tools/mutate/survivors.txt` lists {len(survivors)} {noun} the suite does not "
                "kill yet, each with the reason.")

    doc = ["# Mutation runs", "",
           "Written by `tools/mutate/mutate.py` (`--record` after a run, `--render` alone) from "
           "`tools/mutate/verdicts.tsv`; do not edit by hand. Each mutant of "
           "`tools/mutate/mutants.txt` is one seeded concurrency bug, applied alone to the "
           "commit named; the runner builds the `test` preset, runs the mutant's likely "
           "killers, then (had they all passed) every model, lin and stress test. \"Killed by\" "
           "lists the tests of the first stage that failed; seconds include the build.", "",
           summary, "",
           "| mutant | bug it models | verdict | killed by | seconds | date | commit | run |",
           "|---|---|---|---|---|---|---|---|"]
    for m in mutants:
        r = rows.get(m.ident)
        if r is None:
            doc.append(f"| `{m.ident}` | {m.bug} | not run yet | | | | | |")
        else:
            doc.append(f"| `{m.ident}` | {m.bug} | {r['verdict']} | {r['killed_by']} | "
                       f"{r['seconds']} | {r['date']} | {r['commit']} | {r['run']} |")
    doc += ["", "Runs: " + "; ".join(f"`{k}`: {v}" for k, v in RUN_KINDS.items()) + ".", "",
            "## Survivors (`tools/mutate/survivors.txt`)", "",
            "| mutant | bug it models | why the suite does not kill it yet |", "|---|---|---|"]
    why = {}
    text = (ROOT / "tools/mutate/survivors.txt").read_text()
    for block in text.split("\n=== ")[1:]:
        ident = block.split("\n", 1)[0].strip()
        found = re.search(r"^why:\s*(.*)$", block, flags=re.M)
        why[ident] = found.group(1) if found else ""
    for m in survivors:
        doc.append(f"| `{m.ident}` | {m.bug} | {why.get(m.ident, '')} |")
    DOC.write_text("\n".join(doc) + "\n")

    readme = README.read_text()
    begin, end = readme.find(SCORE_BEGIN), readme.find(SCORE_END)
    if begin < 0 or end < begin:
        sys.exit(f"README.md: the markers {SCORE_BEGIN!r} and {SCORE_END!r} are missing")
    # The block sits in a list item of README's "Proof": indented as its continuation.
    block = (SCORE_BEGIN + "\n  " + summary + " Per mutant: `docs/mutation.md`.\n  " + SCORE_END)
    README.write_text(readme[:begin] + block + readme[end + len(SCORE_END):])
    print(f"wrote {DOC.relative_to(ROOT)} and the score in README.md: {summary}")


def record(mutants: list[Mutant], results: list[tuple[Mutant, str, str, float]],
           kind: str) -> None:
    rows = read_verdicts()
    today, commit = datetime.date.today().isoformat(), head_commit()
    for m, verdict, by, elapsed in results:
        rows[m.ident] = {"mutant": m.ident, "verdict": verdict, "killed_by": by,
                         "seconds": f"{elapsed:.0f}", "date": today, "commit": commit,
                         "run": kind}
    write_verdicts(rows, [m.ident for m in mutants])
    render(mutants)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mutants", type=Path, default=ROOT / "tools/mutate/mutants.txt")
    parser.add_argument("--work", type=Path, default=ROOT / "build/mutate",
                        help="scratch directory (default: build/mutate)")
    parser.add_argument("--only", help="comma-separated mutant names")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=int, default=240, help="seconds per test")
    parser.add_argument("--full", action="store_true",
                        help="run the whole suite for every mutant, even once one test failed")
    parser.add_argument("--skip", help="regular expression of test names to leave out")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the unmutated run (only right after a run that checked it)")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--record", action="store_true",
                        help="keep the verdicts in verdicts.tsv and rewrite docs/mutation.md "
                             "and README's score")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite docs/mutation.md and README's score")
    args = parser.parse_args()

    mutants = parse_mutants(args.mutants)
    all_mutants = mutants
    if args.render:
        render(all_mutants)
        return 0
    if args.record and args.mutants.resolve() != (ROOT / "tools/mutate/mutants.txt").resolve():
        sys.exit("--record keeps the verdicts of tools/mutate/mutants.txt only")
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {m.ident for m in mutants}
        if unknown:
            sys.exit(f"unknown mutants: {', '.join(sorted(unknown))}")
        mutants = [m for m in mutants if m.ident in wanted]
    if args.list:
        for m in mutants:
            print(f"{m.ident:32} {m.file}\n{'':32} {m.bug}")
        return 0
    if args.check:
        return check_all(mutants)

    args.work.mkdir(parents=True, exist_ok=True)
    suite = Suite(args.work, args.jobs, args.timeout, args.skip)
    if suite.log.exists():
        suite.log.unlink()
    print(f"copying the tree to {args.work / 'src'}; log: {suite.log}", flush=True)
    copy_tree(args.work)
    suite.configure()
    everything = sorted(set(suite.suite_tests()) | {t for m in mutants for t in m.tests})
    if not args.no_baseline:
        print(f"baseline: building and running {len(everything)} tests", flush=True)
        if not suite.build_targets(everything):
            sys.exit(f"the unmutated tree does not build; see {suite.log}")
        failed = suite.run_tests(everything)
        if failed:
            sys.exit(f"the unmutated suite fails ({', '.join(failed)}); see {suite.log}")

    results: list[tuple[Mutant, str, str, float]] = []
    for m in mutants:
        started = time.time()
        print(f"[{len(results) + 1}/{len(mutants)}] {m.ident}: ", end="", flush=True)
        try:
            original = apply(m, suite.src)
        except ValueError as e:
            results.append((m, "error", str(e), 0.0))
            print(f"error: {e}", flush=True)
            continue
        try:
            verdict, by = "survived", ""
            stages = [m.tests] if m.tests else []
            if args.full or not m.tests:
                stages = [sorted(set(m.tests) | set(suite.suite_tests()))]
            else:
                stages.append(sorted(set(suite.suite_tests()) - set(m.tests)))
            for tests in stages:
                if not suite.build_targets(tests):
                    verdict, by = "error", "does not compile"
                    break
                failed = suite.run_tests(tests)
                if failed:
                    verdict, by = "killed", ", ".join(failed)
                    break
        finally:
            restore(m, suite.src, original)
        elapsed = time.time() - started
        results.append((m, verdict, by, elapsed))
        print(f"{verdict} {('by ' + by) if verdict == 'killed' else by} ({elapsed:.0f} s)",
              flush=True)

    killed = sum(1 for r in results if r[1] == "killed")
    report = [f"# Mutation run, {datetime.date.today().isoformat()}", "",
              f"{killed} of {len(results)} mutants killed.", "",
              "| mutant | bug it models | verdict | killed by (the tests that failed) | seconds |",
              "|---|---|---|---|---|"]
    for m, verdict, by, elapsed in results:
        report.append(f"| `{m.ident}` | {m.bug} | {verdict} | {by} | {elapsed:.0f} |")
    out = args.work / "mutation-report.md"
    out.write_text("\n".join(report) + "\n")
    print(f"\n{killed} of {len(results)} mutants killed; report: {out}")
    if args.record:
        record(all_mutants, results, "only" if args.only else "full")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
