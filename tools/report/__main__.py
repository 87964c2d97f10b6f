"""python3 -m tools.report run [--no-bochs] [--out DIR]
       python3 -m tools.report render DATA.json [--out DIR]

run: gather a run (collect.py) into DIR/data/run-DATE.json, then render it.
render: write DIR/index.html, DIR/compare.html and the plots from a run's
data (the test renders the recorded sample in tests/report/sample/)."""
import argparse
import json
import os
import sys

from . import collect, render

ROOT = collect.ROOT


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tools.report")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the benchmarks, then render")
    r.add_argument("--out", default=os.path.join(ROOT, "report"))
    r.add_argument("--no-bochs", action="store_true", help="leave out the Bochs (VMX) rows")
    d = sub.add_parser("render", help="render a recorded run")
    d.add_argument("data")
    d.add_argument("--out", default=os.path.join(ROOT, "report"))
    args = ap.parse_args(argv)

    if args.cmd == "run":
        data = collect.collect(bochs=not args.no_bochs)
        os.makedirs(os.path.join(args.out, "data"), exist_ok=True)
        name = "run-%s.json" % data["date"].replace(":", "").replace("+0000", "Z")
        path = os.path.join(args.out, "data", name)
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
        print("data: %s (%d @bench records)" % (os.path.relpath(path, ROOT),
                                                 len(data["records"])), flush=True)
    else:
        path = args.data
        with open(path) as f:
            data = json.load(f)
    verdicts = render.render(data, args.out, os.path.relpath(path, args.out))
    for v in verdicts:
        print("verdict: %s" % v["line"])
    print("report: %s" % os.path.join(os.path.relpath(args.out, ROOT), "index.html"))
    failed = [s for s in data["steps"] if not s["ok"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
