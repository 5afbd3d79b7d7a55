#!/usr/bin/env python3
"""check_report.py PAGE CACHE [--where SQL] [--single] — checks a page written by
`softmax-tune report` against the cache it was made from (read here with Python's sqlite3, not
through softmax-tune): the HTML parses with every element closed in order; it holds no script,
no stylesheet link and no address to fetch; it names the cache file; for each run of the cache
matching WHERE (an SQL condition on the runs table; all runs by default) there is one
<svg class="run-chart" data-run=ID> with one mark (a circle of class "mark") per timed trial,
the winner's mark (its tooltip names the winner's config) and one finalist mark per other
finalist, and the run's section names the winner and every prune or failure reason; without
--single (a page of one run, --run), the problems table has one row per problem, and the
problems chart's bar labels are each a whole problem name ("1048576x128 f32") lying within the
chart's drawing (viewBox), at a generous 0.62 em a character of its 11px font. Prints what
it checked; exit 0 when all holds, 1 otherwise."""
import argparse
import html.parser
import math
import os
import re
import sqlite3
import sys

OPS = {"softmax": "", "log_softmax": " log", "softmax_backward": " bw", "log_softmax_backward": " log bw",
       "cross_entropy": " ce", "cross_entropy_loss": " ce loss"}
CHAR_PX = 0.62 * 11

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []
        self.charts = {}      # run id -> {"marks": n, "winner": [configs], "finalist": n}
        self.sections = {}    # run id -> its text
        self.problem_rows = 0
        self.problems_box, self.labels, self.label = None, [], None   # viewBox; (x, y, text) of each bar label
        self.cache_text = ""
        self.chart, self.title, self.title_for = None, None, None

    def classes(self, attrs):
        return (dict(attrs).get("class") or "").split()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.check_fetch(tag, a)
        if tag == "svg" and "run-chart" in self.classes(attrs):
            run = int(a["data-run"])
            if run in self.charts:
                self.errors.append(f"two charts of run {run}")
            self.chart = self.charts[run] = {"marks": 0, "winner": [], "finalist": 0}
        if tag == "circle" and self.chart is not None and "mark" in self.classes(attrs):
            self.chart["marks"] += 1
            self.chart["finalist"] += "finalist" in self.classes(attrs)
            self.title_for = "winner" if "winner" in self.classes(attrs) else None
        if tag == "title":
            self.title = ""
        if tag == "svg" and "problems-chart" in self.classes(attrs):
            self.problems_box = [float(v) for v in a["viewbox"].split()]
        if tag == "text" and "bar-label" in self.classes(attrs):
            m = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\) rotate\(-35\)", a.get("transform", ""))
            self.label = [float(m[1]), float(m[2]), ""] if m else [math.nan, math.nan, ""]
        if tag == "section" and a.get("id", "").startswith("run-"):
            self.sections[int(a["id"][4:])] = ""
        if tag == "tr" and any(t == "table" and "problems" in self.classes(at) for t, at in self.stack):
            self.problem_rows += 1
        if tag not in VOID:
            self.stack.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.check_fetch(tag, dict(attrs))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1][0] if self.stack else 'nothing'}> (line {self.getpos()[0]})")
            return
        self.stack.pop()
        if tag == "svg":
            self.chart = None
        if tag == "title" and self.title_for == "winner" and self.chart is not None:
            self.chart["winner"].append(self.title.split("\n")[0])
        if tag == "title":
            self.title, self.title_for = None, None
        if tag == "text" and self.label is not None:
            self.labels.append(tuple(self.label))
            self.label = None

    def handle_data(self, data):
        if self.title is not None:
            self.title += data
        if self.label is not None:
            self.label[2] += data
        for tag, attrs in self.stack:
            if tag == "section" and dict(attrs).get("id", "").startswith("run-"):
                self.sections[int(dict(attrs)["id"][4:])] += data
            if tag == "code" and "cache" in self.classes(attrs):
                self.cache_text += data

    def check_fetch(self, tag, a):
        if tag in ("script", "link", "iframe", "img", "object", "embed"):
            self.errors.append(f"a <{tag}> element (line {self.getpos()[0]})")
        for k, v in a.items():
            if k in ("src", "href", "xlink:href") and v and not v.startswith("#"):
                self.errors.append(f"{k}={v!r} fetches or leaves the page")
            if k.startswith("on"):
                self.errors.append(f"an event handler {k}")


def check_labels(p, db, where, problems):
    """The problems chart's labels: whole names of the problems, inside the drawing (anchored at
    their end, rotated 35 degrees up: they reach left and down from the anchor)."""
    want = {f"{r}x{c} {d}{OPS.get(op, ' ?')}" for d, op, r, c in
            db.execute(f"SELECT DISTINCT dtype, op, rows, cols FROM runs WHERE {where}")}
    if p.problems_box is None:
        return ["no problems chart"]
    x0, y0, w, h = p.problems_box
    errors = []
    if p.labels and len(p.labels) != problems:
        errors.append(f"{len(p.labels)} bar labels, {problems} problems")
    for x, y, text in p.labels:
        reach = len(text) * CHAR_PX
        if text not in want:
            errors.append(f"bar label {text!r} is no whole problem name ({sorted(want)[:4]}...)")
        if not (x - reach * math.cos(math.radians(35)) >= x0 and y + reach * math.sin(math.radians(35)) <= y0 + h):
            errors.append(f"bar label {text!r} at ({x}, {y}) reaches past the drawing {p.problems_box}")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("cache")
    ap.add_argument("--where", default="1")
    ap.add_argument("--single", action="store_true")
    o = ap.parse_args()
    text = open(o.page, encoding="utf-8").read()
    p = Page()
    p.feed(text)
    p.close()
    errors = list(p.errors)
    if p.stack:
        errors.append("unclosed: " + " ".join(t for t, _ in p.stack))
    if "url(" in text or "@import" in text:
        errors.append("the CSS fetches something (url( or @import)")
    if p.cache_text != os.path.realpath(o.cache):
        errors.append(f"the page names the cache {p.cache_text!r}, not {os.path.realpath(o.cache)!r}")

    db = sqlite3.connect(o.cache)
    runs = db.execute(f"SELECT id, winner FROM runs WHERE {o.where} ORDER BY id").fetchall()
    if not runs:
        errors.append(f"no runs in the cache where {o.where}: a wrong test")
    if set(p.charts) != {r for r, _ in runs}:
        errors.append(f"charts of runs {sorted(p.charts)}, want {[r for r, _ in runs]}")
    marks = reasons = 0
    for run, winner in runs:
        timed = db.execute("SELECT count(*) FROM trials WHERE run = ? AND status = 'ok'", (run,)).fetchone()[0]
        fin = db.execute("SELECT count(*) FROM trials WHERE run = ? AND status = 'ok' AND finalist AND config IS NOT ?",
                         (run, winner)).fetchone()[0]
        chart, section = p.charts.get(run), p.sections.get(run, "")
        if chart is None:
            continue
        marks += chart["marks"]
        if chart["marks"] != timed:
            errors.append(f"run {run}: {chart['marks']} marks, {timed} timed trials")
        if chart["finalist"] != fin:
            errors.append(f"run {run}: {chart['finalist']} finalist marks, {fin} other finalists")
        if chart["winner"] != ([winner] if winner else []):
            errors.append(f"run {run}: winner marks {chart['winner']}, want {winner!r}")
        if winner and ("winner" not in section or winner not in section):
            errors.append(f"run {run}: its section does not name the winner {winner}")
        for (reason,) in db.execute("SELECT reason FROM trials WHERE run = ? AND status != 'ok'", (run,)):
            reasons += 1
            if reason not in section:
                errors.append(f"run {run}: its section does not give the reason {reason!r}")
    if not o.single:
        problems = db.execute(f"SELECT count(*) FROM (SELECT DISTINCT gpu, dtype, op, rows, cols FROM runs WHERE {o.where})").fetchone()[0]
        if p.problem_rows != problems + 1:
            errors.append(f"the problems table has {p.problem_rows - 1} rows, want {problems}")
        errors += check_labels(p, db, o.where, problems)
    for e in errors[:30]:
        print("FAIL:", e)
    print(f"{o.page}: {len(runs)} runs, {marks} marks, {reasons} reasons checked; {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
