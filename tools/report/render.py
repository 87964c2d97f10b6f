"""Render a run's data into a directory: the plots, index.html, compare.html."""
import os

from . import page, plots, verdicts as verdicts_mod


def render(data, outdir, data_href, targets=None):
    """Write the report; return its verdicts."""
    os.makedirs(outdir, exist_ok=True)
    recs = data["records"]
    vs = verdicts_mod.compute(recs, targets)
    figures = plots.all_figures(recs, outdir)
    with open(os.path.join(outdir, "index.html"), "w") as f:
        f.write(page.index(data, figures, vs, data_href))
    with open(os.path.join(outdir, "compare.html"), "w") as f:
        f.write(page.compare(data, vs))
    return vs
