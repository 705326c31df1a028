"""attnscope.Summary: what a dataset run (attnscope.analyze) found, read from the folder it wrote."""

import csv
import json
import os

_INTEGER_COLUMNS = {"layer", "head", "n", "rank", "class", "image_index", "row", "col", "query"}


def _column(name, values):
    import numpy

    if name in _INTEGER_COLUMNS:
        try:
            return numpy.array([int(v) for v in values], dtype=numpy.int64)
        except ValueError:
            pass
    try:
        return numpy.array([float(v) for v in values], dtype=numpy.float64)
    except ValueError:
        return numpy.array(values, dtype=str)


def read_csv(path):
    """A CSV the CLI wrote, as a dict of numpy columns (numbers as int64 or float64, the rest as str)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    return {name: _column(name, [r[i] for r in body]) for i, name in enumerate(header)}


def _concatenate(parts):
    import numpy

    names = list(parts[0].keys())
    return {n: numpy.concatenate([p[n] for p in parts]) for n in names}


class Summary:
    """The tables of a dataset run: .tables maps each CSV's name (token_similarity, head_centres, attention_similarity,
    snr, snr_diagnostics, token_norms; snr_<perturbation> with several) to a dict of numpy columns, named as the CSV's
    header, with a first column "label" naming the run (the model, its variant, the compared model). .runs lists the
    labels, .predictions the top-5 of every image, .figures the data of every figure (figures/*.csv), .manifest the
    run's manifest.json, .outcome how many images were done and skipped. Numbers are the CSVs' (10 significant digits).
    """

    def __init__(self, tables, runs, predictions, figures, manifest, outcome, skipped, out):
        self.tables = tables
        self.runs = runs
        self.predictions = predictions
        self.figures = figures
        self.manifest = manifest
        self.outcome = outcome
        self.skipped = skipped
        self.out = out

    def __repr__(self):
        return "<attnscope.Summary of %d images, runs %s, tables %s>" % (
            self.outcome.get("done", 0), ", ".join(self.runs), ", ".join(sorted(self.tables)))

    @classmethod
    def read(cls, folder, outcome, skipped, out):
        run_folders = [folder]
        runs_dir = os.path.join(folder, "runs")
        if os.path.isdir(runs_dir):
            run_folders += [os.path.join(runs_dir, d) for d in sorted(os.listdir(runs_dir))
                            if os.path.isfile(os.path.join(runs_dir, d, "run.json"))]
        by_table, labels = {}, []
        for run in run_folders:
            with open(os.path.join(run, "run.json")) as f:
                label = json.load(f)["label"]
            labels.append(label)
            for name in sorted(os.listdir(run)):
                if not name.endswith(".csv") or name == "predictions.csv":
                    continue
                columns = read_csv(os.path.join(run, name))
                rows = len(next(iter(columns.values()))) if columns else 0
                import numpy

                table = {"label": numpy.array([label] * rows, dtype=str)}
                table.update(columns)
                by_table.setdefault(name[:-4], []).append(table)
        tables = {name: _concatenate(parts) for name, parts in by_table.items()}
        predictions_csv = os.path.join(folder, "predictions.csv")
        predictions = read_csv(predictions_csv) if os.path.isfile(predictions_csv) else {}
        figures = {}
        figures_dir = os.path.join(folder, "figures")
        if os.path.isdir(figures_dir):
            for name in sorted(os.listdir(figures_dir)):
                if name.endswith(".csv"):
                    figures[name[:-4]] = read_csv(os.path.join(figures_dir, name))
        manifest = {}
        manifest_json = os.path.join(folder, "manifest.json")
        if os.path.isfile(manifest_json):
            with open(manifest_json) as f:
                manifest = json.load(f)
        return cls(tables, labels, predictions, figures, manifest, dict(outcome), list(skipped), out)

    def run(self, label):
        """The tables of one run (a label of .runs), without the label column."""
        if label not in self.runs:
            from ._errors import Error

            raise Error("no run %r in this summary (its runs: %s)" % (label, ", ".join(self.runs)))
        out = {}
        for name, table in self.tables.items():
            keep = table["label"] == label
            out[name] = {k: v[keep] for k, v in table.items() if k != "label"}
        return out

    def to_pandas(self, table=None):
        """The tables as pandas DataFrames (a dict of them, or the one named `table`); pandas must be installed."""
        import pandas

        if table is not None:
            return pandas.DataFrame(self.tables[table])
        return {name: pandas.DataFrame(t) for name, t in self.tables.items()}
